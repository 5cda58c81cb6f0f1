"""Binds parsed statements to catalog objects, enforces the dialect's rules (README: The dialect), and produces plans."""
from __future__ import annotations

import difflib

from ..catalog.store import Catalog
from ..errors import PlanError
from ..grammar import ast
from .alter import plan_alter, plan_drop
from .binder import Binder
from .create import (plan_create_connection, plan_create_load_generator, plan_create_materialized_view,
                     plan_create_postgres_source, plan_create_secret, plan_create_table,
                     plan_create_table_from_source, plan_create_type)
from .plans import CreatePlan, QueryPlan, SetVariablePlan, ValidatePlan
from .queries import plan_select, plan_show, plan_show_columns, plan_show_create
from .writes import plan_copy, plan_write
from .sinks import plan_create_sink

SETTINGS = {"enable_iceberg_sink": "true", "enable_default_connection_validation": "true",
            # Materialize's feature flags for what icesink always has: accepted, recorded and shown, so that its
            # scripts run unchanged; turning one off changes nothing
            "enable_connection_validation_syntax": "true", "enable_create_table_from_source": "true",
            "enable_load_generator_counter": "true", "enable_load_generator_key_value": "true",
            "enable_collection_partition_by": "true", "enable_alter_table_add_column": "true"}
_TRUE, _FALSE = ("true", "on", "1", "yes"), ("false", "off", "0", "no")


def _known(name: ast.Name) -> str:
    if name.value not in SETTINGS:
        raise PlanError(f"unknown configuration parameter \"{name.value}\"; known: {', '.join(SETTINGS)}", name.pos)
    return name.value


_SHOWN_OBJECTS = ("SECRETS", "CONNECTIONS", "SOURCES", "SUBSOURCES", "TABLES", "SINKS", "OBJECTS", "COLUMNS", "TYPES")


def _shown(name: ast.Name) -> str:
    """SHOW name: a setting's; a word close to an object kind is taken for a misspelt SHOW SINKS and the like."""
    close = difflib.get_close_matches(name.value.upper(), _SHOWN_OBJECTS, n=1, cutoff=0.7)
    if name.value not in SETTINGS and close:
        raise PlanError(f"unknown configuration parameter \"{name.value}\"; to list objects, SHOW {close[0]}",
                        name.pos)
    return _known(name)


def setting_value(stmt: ast.SetVariable) -> str | None:
    name = _known(stmt.name)
    value = stmt.value
    if isinstance(value, ast.DefaultValue):
        return None
    text = (str(value.value).lower() if isinstance(value, (ast.BoolValue, ast.StringValue))
            else str(getattr(value, "name", getattr(value, "text", ""))).lower())
    if text in _TRUE:
        return "true"
    if text in _FALSE:
        return "false"
    raise PlanError(f"parameter \"{name}\" takes true or false, not {text}", value.pos)


class Planner:
    def __init__(self, catalog: Catalog, settings):
        self.binder = Binder(catalog)
        self.settings = settings  # callable: name -> current value

    def plan(self, stmt: ast.Statement, text: str):
        plan = self._plan(stmt, text)
        if isinstance(plan, CreatePlan):  # the executor skips, too, when another process wins the race
            plan.if_not_exists = getattr(stmt, "if_not_exists", False)
        return plan

    def _plan(self, stmt: ast.Statement, text: str):
        b = self.binder
        match stmt:
            case ast.CreateSecret():
                return plan_create_secret(b, stmt)
            case ast.CreateConnection():
                default_validation = self.settings("enable_default_connection_validation") == "true"
                return plan_create_connection(b, stmt, text, default_validation)
            case ast.ValidateConnection():
                return ValidatePlan(b.lookup(stmt.name, ("connection",), "connection"))
            case ast.CreatePostgresSource():
                return plan_create_postgres_source(b, stmt)
            case ast.CreateLoadGeneratorSource():
                return plan_create_load_generator(b, stmt)
            case ast.CreateTable():
                return plan_create_table(b, stmt)
            case ast.CreateType():
                return plan_create_type(b, stmt)
            case ast.CreateTableFromSource():
                return plan_create_table_from_source(b, stmt)
            case ast.CreateMaterializedView():
                return plan_create_materialized_view(b, stmt)
            case ast.CreateSink():
                if self.settings("enable_iceberg_sink") != "true":
                    raise PlanError("Iceberg sinks are turned off: enable_iceberg_sink is false (ALTER SYSTEM SET "
                                    "enable_iceberg_sink = true turns them on)", stmt.name.pos)
                return plan_create_sink(b, stmt, text)
            case ast.Alter():
                return plan_alter(b, stmt, self.settings("enable_default_connection_validation") == "true")
            case ast.Drop():
                return plan_drop(b, stmt)
            case ast.ShowObjects():
                return plan_show(b, stmt)
            case ast.ShowCreate():
                return plan_show_create(b, stmt)
            case ast.ShowColumns():
                return plan_show_columns(b, stmt)
            case ast.ShowVariable():
                return QueryPlan(f"SELECT ? AS {_shown(stmt.name)}", (self.settings(stmt.name.value),))
            case ast.Insert() | ast.Update() | ast.Delete():
                return plan_write(b, stmt, text)
            case ast.Copy():
                return plan_copy(b, stmt)
            case ast.SetVariable():
                return SetVariablePlan(stmt.name.value, setting_value(stmt), stmt.system)
            case ast.Select():
                return plan_select(b, stmt, text)
        raise PlanError(f"{type(stmt).__name__} is not supported")

"""Planning of ALTER and DROP: renames that keep dependents working, RESTRICT and CASCADE."""
from __future__ import annotations

import dataclasses
import re

from ..catalog.store import CatalogObject
from ..errors import CatalogError, PlanError
from ..grammar import ast
from ..grammar.masking import redact
from ..grammar.parser import parse_statement
from .binder import KIND_WORDS, Binder
from .create import view_query_text
from .plans import DropPlan, NoticePlan, SetSecretPlan, UpdatePlan
from .query import walk
from .sinks import alter_sink_options

_KINDS_FOR = {"source": ("source", "subsource")}


def quote_name(name: str) -> str:
    return name if re.fullmatch(r"[a-z_][a-z0-9_$]*", name) else '"' + name.replace('"', '""') + '"'


def _apply_edits(sql: str, edits: list[tuple[int, int, str]]) -> str:
    for start, end, replacement in sorted(edits, reverse=True):
        sql = sql[:start] + replacement + sql[end:]
    return sql


def _reference_spans(statement, old: str) -> list[tuple[int, int]]:
    """Where `statement` refers to an object named `old` (not where it names itself)."""
    spans = []
    own = getattr(statement, "name", None)
    aliases = {n.alias.value for n in walk(statement) if isinstance(n, ast.TableRef) and n.alias}
    for node in walk(statement):
        if isinstance(node, ast.ObjectName) and node is not own and node.name == old:
            spans.append((node.parts[-1].pos, node.parts[-1].end))
        elif isinstance(node, ast.ColumnRef) and len(node.parts) > 1 and node.qualifier == old \
                and old not in aliases:
            qualifier = node.parts[-2]
            spans.append((qualifier.pos, qualifier.end))
    # ObjectName nodes are shared by WordValue/SecretValue/TableRef: count each place once
    return sorted(set(spans))


def _renamed(obj: CatalogObject, old: str, new: str, is_self: bool) -> CatalogObject:
    statement = parse_statement(obj.create_sql)
    if is_self:
        name = statement.name.parts[-1]
        spans = [(name.pos, name.end)]
    else:
        spans = _reference_spans(statement, old)
    sql = _apply_edits(obj.create_sql, [(s, e, quote_name(new)) for s, e in spans])
    descriptor = obj.descriptor
    if obj.kind == "materialized-view":
        descriptor = dataclasses.replace(descriptor, query_sql=view_query_text(sql, parse_statement(sql)))
    return dataclasses.replace(obj, name=new if is_self else obj.name, create_sql=sql,
                               redacted_create_sql=redact(sql), descriptor=descriptor)


def plan_alter(binder: Binder, stmt: ast.Alter):
    kinds = _KINDS_FOR.get(stmt.kind, (stmt.kind,))
    status = f"ALTER {KIND_WORDS[stmt.kind].upper()}"
    if binder.find(stmt.name) is None and stmt.if_exists:
        return NoticePlan(f"{KIND_WORDS[stmt.kind]} '{stmt.name}' does not exist, skipping", status)
    obj = binder.lookup(stmt.name, kinds, KIND_WORDS[stmt.kind])
    action = stmt.action
    if isinstance(action, ast.RenameTo):
        binder.new_name(action.new_name)
        changed = [_renamed(obj, obj.name, action.new_name.value, True)]
        for dependent in binder.catalog.dependents(obj.id):
            changed.append(_renamed(dependent, obj.name, action.new_name.value, False))
        return UpdatePlan(changed, status)
    if isinstance(action, ast.SetSecretValue):
        if obj.kind != "secret":
            raise PlanError(f"ALTER {stmt.kind.upper()} … AS applies only to secrets", stmt.action_pos)
        return SetSecretPlan(obj, action.value.value)
    if obj.kind != "sink":
        raise PlanError(f"ALTER {stmt.kind.upper()} … SET/RESET is not supported; drop and create the "
                        f"{KIND_WORDS[obj.kind]} again", stmt.action_pos)
    descriptor, edits = alter_sink_options(obj, action)
    sql = _apply_edits(obj.create_sql, edits)
    return UpdatePlan([dataclasses.replace(obj, descriptor=descriptor, create_sql=sql,
                                           redacted_create_sql=redact(sql))], status)


def plan_drop(binder: Binder, stmt: ast.Drop):
    kinds = _KINDS_FOR.get(stmt.kind, (stmt.kind,))
    what = KIND_WORDS[stmt.kind]
    plan = DropPlan([])
    chosen: dict[str, CatalogObject] = {}
    for name in stmt.names:
        obj = binder.find(name)
        if obj is None:
            if not stmt.if_exists:
                raise PlanError(f"unknown {what} '{name}'", name.pos)
            plan.notices.append(f"{what} '{name}' does not exist, skipping")
            continue
        obj = binder.lookup(name, kinds, what)
        plan.named.add(obj.id)
        _collect(binder, obj, stmt.cascade, chosen, name.pos)
    plan.objects = list(chosen.values())
    return plan


def _collect(binder: Binder, obj: CatalogObject, cascade: bool, chosen: dict, pos: int) -> None:
    """Adds `obj` and what must go with it to `chosen`, dependents first. Subsources go with their
    source; anything else that depends on a dropped object needs CASCADE."""
    if obj.id in chosen:
        return
    for dependent in binder.catalog.dependents(obj.id):
        owned = dependent.kind == "subsource" and obj.kind == "source"
        if not (owned or cascade):
            raise CatalogError(
                f"cannot drop {KIND_WORDS[obj.kind]} '{obj.name}': {KIND_WORDS[dependent.kind]} "
                f"'{dependent.name}' depends on it", pos,
                hint=f"use DROP {KIND_WORDS[obj.kind].upper()} {quote_name(obj.name)} CASCADE to drop the "
                     "dependents too")
        _collect(binder, dependent, cascade, chosen, pos)
    chosen[obj.id] = obj

"""Planning of ALTER and DROP: renames that keep dependents working, RESTRICT and CASCADE."""
from __future__ import annotations

import dataclasses

from ..catalog.store import CatalogObject
from ..engine.tables import is_engine_table
from ..errors import CatalogError, NotSupportedYet, PlanError
from ..grammar import ast
from ..grammar.parser import parse_statement
from ..grammar.render import name_sql, statement_sql, subsource_sql
from ..recursion import deep_recursion
from .binder import KIND_WORDS, Binder, describe
from .create import named_types, plan_alter_connection, view_descriptor
from .plans import AddColumnPlan, DropPlan, NoticePlan, SetSecretPlan, UpdatePlan
from .query import walk
from .sinks import alter_sink_input, alter_sink_options, misfit
from .types import Column, normalize

_KINDS_FOR = {"source": ("source", "subsource")}


def _rename(node, old: str, new: str, aliases: frozenset[str]):
    """`node` with every reference to the object named `old` naming `new` instead: object names, and columns
    qualified by it (unless a table alias of that name is what they mean)."""
    if isinstance(node, ast.ObjectName):
        if node.name != old:
            return node
        return ast.ObjectName(node.parts[:-1] + (ast.Name(new, quoted=node.parts[-1].quoted),))
    if isinstance(node, ast.ColumnRef):
        if len(node.parts) < 2 or node.qualifier != old or old in aliases:
            return node
        parts = list(node.parts)
        parts[-2] = ast.Name(new, quoted=parts[-2].quoted)
        return ast.ColumnRef(tuple(parts))
    if isinstance(node, tuple):
        renamed = tuple(_rename(item, old, new, aliases) for item in node)
        return renamed if any(a is not b for a, b in zip(renamed, node)) else node
    if dataclasses.is_dataclass(node) and not isinstance(node, type):
        changes = {}
        for f in dataclasses.fields(node):
            value = getattr(node, f.name)
            renamed = _rename(value, old, new, aliases)
            if renamed is not value:
                changes[f.name] = renamed
        return dataclasses.replace(node, **changes) if changes else node
    return node


def restated(obj: CatalogObject, statement) -> CatalogObject:
    """`obj` with its stored text regenerated from `statement`."""
    return dataclasses.replace(obj, create_sql=statement_sql(statement),
                               redacted_create_sql=statement_sql(statement, redacted=True))


def _renamed(binder: Binder, obj: CatalogObject, old: str, new: str, is_self: bool) -> CatalogObject:
    """`obj` after the object named `old` became `new` (`is_self`: `obj` is that object)."""
    if obj.kind == "subsource":  # no statement of its own: its text is made from what it comes from
        name = new if is_self else obj.name
        source = binder.catalog.get_by_id(obj.descriptor.source_id).name if is_self else new
        text = subsource_sql(name, source, obj.descriptor.upstream)
        return dataclasses.replace(obj, name=name, create_sql=text, redacted_create_sql=text)
    with deep_recursion():
        statement = parse_statement(obj.create_sql)
        if is_self:
            name = statement.name
            statement = dataclasses.replace(statement, name=ast.ObjectName(
                name.parts[:-1] + (ast.Name(new, quoted=name.parts[-1].quoted),)))
        else:
            own = statement.name
            aliases = frozenset(n.alias.value for n in walk(statement) if isinstance(n, ast.TableRef) and n.alias)
            statement = dataclasses.replace(_rename(statement, old, new, aliases), name=own)
            if obj.kind == "materialized-view":
                obj = dataclasses.replace(obj, descriptor=_view_renamed(binder, obj, statement.query, old, new))
        return dataclasses.replace(restated(obj, statement), name=new if is_self else obj.name)


def _view_renamed(binder: Binder, view: CatalogObject, renamed: ast.Query, old: str, new: str):
    """A view's descriptor for its query once the object it reads as `old` is named `new`: planned as CREATE plans
    it, so that its stored query is written with its operands' types as before."""
    def resolve(ref: ast.TableRef):
        if binder.item_name(ref.name) == new:
            return binder.relation(dataclasses.replace(ref.name, parts=ref.name.parts[:-1] + (ast.Name(old),)))[1]
        return binder.relation(ref.name)[1]
    try:
        return view_descriptor(renamed, resolve)[0]
    except (PlanError, NotSupportedYet) as error:  # a view an earlier release made, which this one refuses
        raise PlanError(f"materialized view '{view.name}' reads '{old}' and no longer plans ({error.message}): drop "
                        "or recreate it before the rename") from None


def plan_alter(binder: Binder, stmt: ast.Alter, default_validation: bool = True):
    kinds = _KINDS_FOR.get(stmt.kind, (stmt.kind,))
    status = f"ALTER {KIND_WORDS[stmt.kind].upper()}"
    if binder.find(stmt.name) is None and stmt.if_exists:
        return NoticePlan(f"{KIND_WORDS[stmt.kind]} '{stmt.name}' does not exist, skipping", status)
    obj = binder.lookup(stmt.name, kinds, KIND_WORDS[stmt.kind])
    action = stmt.action
    if obj.kind == "type":  # its tables hold its fields, not its name: a changed type would not reach them
        raise PlanError("ALTER TYPE is not supported; drop the type and create it again", stmt.action_pos)
    if stmt.with_options and not (obj.kind == "connection" and isinstance(action, (ast.SetOptions,
                                                                                  ast.ResetOptions))):
        raise PlanError("WITH (…) applies only to ALTER CONNECTION … SET/RESET", stmt.with_options[0].pos)
    if isinstance(action, ast.RenameTo):
        binder.new_name(action.new_name)
        changed = [_renamed(binder, obj, obj.name, action.new_name.value, True)]
        for dependent in binder.catalog.dependents(obj.id):
            changed.append(_renamed(binder, dependent, obj.name, action.new_name.value, False))
        return UpdatePlan(changed, status)
    if isinstance(action, ast.SetSecretValue):
        if obj.kind != "secret":
            raise PlanError(f"ALTER {stmt.kind.upper()} … AS applies only to secrets", stmt.action_pos)
        return SetSecretPlan(obj, action.value.value)
    if isinstance(action, ast.AddColumn):
        return _plan_add_column(binder, obj, stmt)
    if obj.kind == "connection":
        return plan_alter_connection(binder, obj, stmt, default_validation)
    if isinstance(action, ast.SetFrom) and obj.kind != "sink":
        raise PlanError(f"ALTER … SET FROM applies only to sinks; '{obj.name}' is {describe(obj)}", stmt.action_pos)
    if obj.kind != "sink":
        raise PlanError(f"ALTER {stmt.kind.upper()} … SET/RESET is not supported; drop and create the "
                        f"{KIND_WORDS[obj.kind]} again", stmt.action_pos)
    if isinstance(action, ast.SetFrom):
        descriptor, statement, depends = alter_sink_input(binder, obj, action)
        if descriptor.input_id == obj.descriptor.input_id:
            return UpdatePlan([], status)
        return UpdatePlan([restated(dataclasses.replace(obj, descriptor=descriptor), statement)], status,
                          {obj.id: depends})
    descriptor, statement = alter_sink_options(obj, action)
    return UpdatePlan([restated(dataclasses.replace(obj, descriptor=descriptor), statement)], status)


def _plan_add_column(binder: Binder, table: CatalogObject, stmt: ast.Alter):
    """As Materialize and Postgres: a nullable column without a default, which rows already written hold as null."""
    new = stmt.action.column
    if table.kind != "table":
        raise PlanError(f"ADD COLUMN applies only to tables; '{table.name}' is {describe(table)}", stmt.action_pos)
    if not is_engine_table(table):
        source = binder.catalog.get_by_id(table.descriptor.source_id)
        raise PlanError(f"table '{table.name}' takes its columns from source '{source.name}', following its "
                        "upstream table: it cannot add one of its own", stmt.action_pos)
    name = new.name.value
    if any(c.name == name for c in table.descriptor.columns):
        if stmt.action.if_not_exists:
            return NoticePlan(f"column \"{name}\" of table '{table.name}' already exists, skipping", "ALTER TABLE")
        raise PlanError(f"column \"{name}\" of table '{table.name}' already exists", new.name.pos)
    if new.primary_key or new.not_null:
        raise PlanError(f"an added column cannot be {'a PRIMARY KEY' if new.primary_key else 'NOT NULL'}: the rows "
                        f"already in table '{table.name}' hold null in it", new.name.pos)
    if new.default is not None:
        raise NotSupportedYet("column DEFAULT values are not supported yet", new.name.pos)
    used: list[str] = []
    columns = (*table.descriptor.columns, Column(name, normalize(new.type, named_types(binder, used))))
    sinks = [s for s in binder.catalog.dependents(table.id) if s.kind == "sink"]
    for sink in sinks:  # the rules CREATE SINK checked hold for the new column too
        problem = misfit(sink.descriptor.mode, sink.descriptor.partition_by, [c.name for c in columns], table.name)
        if problem is not None:
            raise PlanError(f"sink '{sink.name}': {problem[0]}", new.name.pos)
    with deep_recursion():
        statement = parse_statement(table.create_sql)
    statement = dataclasses.replace(statement, columns=(*statement.columns, new))
    altered = restated(dataclasses.replace(table, descriptor=dataclasses.replace(table.descriptor, columns=columns)),
                       statement)
    sinks = [dataclasses.replace(s, descriptor=dataclasses.replace(s.descriptor, columns=columns)) for s in sinks]
    return AddColumnPlan(altered, sinks, tuple(dict.fromkeys(used)))


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
                hint=f"use DROP {KIND_WORDS[obj.kind].upper()} {name_sql(ast.Name(obj.name))} CASCADE to drop the "
                     "dependents too")
        _collect(binder, dependent, cascade, chosen, pos)
    chosen[obj.id] = obj

"""Name resolution against the catalog, shared by every statement's planning."""
from __future__ import annotations

from typing import Optional

from ..catalog.schema import SCHEMA_OF_VIEW, VIEWS
from ..catalog.store import Catalog, CatalogObject
from ..catalog_connections import CONNECTION_KINDS
from ..errors import PlanError
from ..grammar import ast
from .query import Relation

KIND_WORDS = {
    "secret": "secret", "connection": "connection", "source": "source", "subsource": "subsource",
    "table": "table", "materialized-view": "materialized view", "sink": "sink", "type": "type",
}
RELATION_KINDS = ("source", "subsource", "table", "materialized-view")
_USER_SCHEMAS = ((), ("public",), ("materialize", "public"))


def describe(obj: CatalogObject) -> str:
    if obj.kind == "connection":
        return CONNECTION_KINDS[obj.type].a_what
    word = KIND_WORDS[obj.kind]
    return f"an {word}" if word[0] in "aeiou" else f"a {word}"


class Binder:
    def __init__(self, catalog: Catalog):
        self.catalog = catalog

    def item_name(self, name: ast.ObjectName) -> str:
        if name.qualifier not in _USER_SCHEMAS:
            raise PlanError(f"unknown schema '{'.'.join(name.qualifier)}': objects live in materialize.public",
                            name.pos)
        return name.name

    def new_name(self, name: ast.ObjectName | ast.Name, if_not_exists: bool = False) -> Optional[CatalogObject]:
        """Checks a name for a new object; returns the existing object when IF NOT EXISTS applies."""
        value = self.item_name(name) if isinstance(name, ast.ObjectName) else name.value
        if value in VIEWS:  # a name beginning with mz_ is the user's, as in Materialize, unless a system view has it
            raise PlanError(f"the name '{value}' is taken by the system view {SCHEMA_OF_VIEW[value]}.{value}",
                            name.pos)
        existing = self.catalog.get(value)
        if existing is not None and not if_not_exists:
            raise PlanError(f"{KIND_WORDS[existing.kind]} '{value}' already exists", name.pos)
        return existing

    def lookup(self, name: ast.ObjectName, kinds: tuple[str, ...], what: str) -> CatalogObject:
        obj = self.find(name)
        if obj is None:
            raise PlanError(f"unknown {what} '{name}'", name.pos)
        if obj.kind not in kinds:
            raise PlanError(f"'{name}' is {describe(obj)}, not {'an' if what[0] in 'aeiou' else 'a'} {what}",
                            name.pos)
        return obj

    def find(self, name: ast.ObjectName) -> Optional[CatalogObject]:
        return self.catalog.get(self.item_name(name))

    def secret(self, name: ast.ObjectName) -> CatalogObject:
        return self.lookup(name, ("secret",), "secret")

    def named_type(self, name: str) -> CatalogObject | None:
        """A type CREATE TYPE made, by the name a column's type gives (None: no such type)."""
        obj = self.catalog.get(name)
        return obj if obj is not None and obj.kind == "type" else None

    def connection(self, name: ast.ObjectName, connection_type: str) -> CatalogObject:
        obj = self.lookup(name, ("connection",), "connection")
        if obj.type != connection_type:
            raise PlanError(f"connection '{name}' is {CONNECTION_KINDS[obj.type].a_what}, not "
                            f"{CONNECTION_KINDS[connection_type].a_what}", name.pos)
        return obj

    def relation(self, name: ast.ObjectName) -> tuple[CatalogObject, Relation]:
        obj = self.lookup(name, RELATION_KINDS, "source, table or materialized view")
        return obj, relation_of(obj, declared_key=self.generator_source(obj) is None)

    def source_of(self, obj: CatalogObject | None) -> CatalogObject | None:
        """The source whose relation `obj` is (the source itself, or a subsource or table of it); else None."""
        if obj is None or obj.kind == "source":
            return obj
        source_id = getattr(obj.descriptor, "source_id", None)
        return self.catalog.get_by_id(source_id) if source_id else None

    def generator_source(self, obj: CatalogObject | None) -> CatalogObject | None:
        """The load generator source whose relation `obj` is; else None."""
        source = self.source_of(obj)
        return source if source is not None and source.type == "load-generator" else None


def relation_of(obj: CatalogObject, declared_key: bool = True) -> Relation:
    """Columns None: not known until the upstream system is asked (Postgres tables)."""
    return Relation(obj.id, obj.name, obj.descriptor.columns, tuple(obj.descriptor.primary_key),
                    tuple(getattr(obj.descriptor, "scales", ())), tuple(getattr(obj.descriptor, "computed", ())),
                    declared_key)

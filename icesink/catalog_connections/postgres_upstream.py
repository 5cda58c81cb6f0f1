"""What a Postgres source needs to know of its upstream before it is created: the publication, the tables it covers,
and each table's columns (with their Postgres types), primary key and replica identity. Read from Postgres's own
catalog in one transaction, so the answer is consistent."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class UpstreamColumn:
    name: str
    type_name: str  # pg_type.typname of the column's type, after domains ('int4', '_text' for text[], 'numeric')
    display: str  # format_type(): as a user wrote it ('numeric(10,2)', 'character varying(20)')
    kind: str  # pg_type.typtype: 'b' base, 'e' enum, 'c' composite, 'r' range, 'p' pseudo…
    element: Optional[str]  # for arrays, the element's typname after domains
    element_kind: Optional[str]
    type_modifier: int  # atttypmod (numeric precision and scale; -1 when unbounded)
    not_null: bool


@dataclass(frozen=True)
class UpstreamTable:
    schema: str
    name: str
    columns: tuple[UpstreamColumn, ...]
    primary_key: tuple[str, ...]
    replica_identity: str  # 'd' default (the primary key), 'f' full, 'i' an index, 'n' nothing
    identity_index: str = ""  # with 'i': the index's name
    identity_columns: tuple[str, ...] = ()  # with 'i': its columns

    @property
    def qualified(self) -> str:
        return f"{self.schema}.{self.name}"


_COLUMNS = """
WITH RECURSIVE base(oid, root) AS (          -- a domain's base type, through domains over domains
    SELECT oid, oid FROM pg_type
  UNION ALL
    SELECT b.oid, t.typbasetype FROM base b JOIN pg_type t ON t.oid = b.root WHERE t.typtype = 'd'
)
SELECT a.attname, rt.typname, format_type(a.atttypid, a.atttypmod), rt.typtype, et.typname, et.typtype,
       CASE WHEN t.typtype = 'd' THEN t.typtypmod ELSE a.atttypmod END, a.attnotnull
FROM pg_attribute a
JOIN pg_type t ON t.oid = a.atttypid
JOIN base b ON b.oid = a.atttypid AND NOT EXISTS (SELECT 1 FROM pg_type d WHERE d.oid = b.root AND d.typtype = 'd')
JOIN pg_type rt ON rt.oid = b.root
LEFT JOIN base eb ON eb.oid = rt.typelem AND rt.typcategory = 'A'
     AND NOT EXISTS (SELECT 1 FROM pg_type d WHERE d.oid = eb.root AND d.typtype = 'd')
LEFT JOIN pg_type et ON et.oid = eb.root
WHERE a.attrelid = %s::regclass AND a.attnum > 0 AND NOT a.attisdropped
ORDER BY a.attnum
"""
_INDEX_COLUMNS = """
SELECT a.attname FROM pg_index i
JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, n) ON true
JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
WHERE i.indrelid = %s::regclass AND i.{flag} ORDER BY k.n
"""
_PRIMARY_KEY, _IDENTITY_COLUMNS = (_INDEX_COLUMNS.format(flag=f) for f in ("indisprimary", "indisreplident"))


def identity_holds_key(identity: str, identity_columns, key) -> bool:
    """Whether updates and deletions name their rows by something that holds `key`, by which icesink matches them
    (with identity 'i', an index: the one case where they may not)."""
    return identity != "i" or bool(key) and set(key) <= set(identity_columns)


def publication_exists(connection, publication: str) -> bool:
    return connection.execute("SELECT 1 FROM pg_publication WHERE pubname = %s", (publication,)).fetchone() \
        is not None


def published_tables(connection, publication: str) -> list[tuple[str, str]]:
    return [tuple(row) for row in connection.execute(
        "SELECT schemaname, tablename FROM pg_publication_tables WHERE pubname = %s ORDER BY 1, 2",
        (publication,)).fetchall()]


def table_exists(connection, schema: str, name: str) -> bool:
    return connection.execute("SELECT 1 FROM pg_tables WHERE schemaname = %s AND tablename = %s",
                              (schema, name)).fetchone() is not None


def may_read(connection, schema: str, name: str) -> bool:
    """SELECT on the table (the initial snapshot reads it), and USAGE on its schema (to name it at all)."""
    return connection.execute("SELECT has_schema_privilege(%s, 'USAGE') AND has_table_privilege(%s, 'SELECT')",
                              (schema, _quoted(schema, name))).fetchone()[0]


def describe(connection, schema: str, name: str) -> UpstreamTable:
    relation = _quoted(schema, name)
    columns = tuple(UpstreamColumn(*row) for row in connection.execute(_COLUMNS, (relation,)).fetchall())
    primary_key = tuple(row[0] for row in connection.execute(_PRIMARY_KEY, (relation,)).fetchall())
    identity = connection.execute("SELECT relreplident FROM pg_class WHERE oid = %s::regclass",
                                  (relation,)).fetchone()[0]
    if identity != "i":
        return UpstreamTable(schema, name, columns, primary_key, identity)
    index = connection.execute("SELECT indexrelid::regclass::text FROM pg_index WHERE indrelid = %s::regclass "
                               "AND indisreplident", (relation,)).fetchone()[0]
    identity_columns = tuple(row[0] for row in connection.execute(_IDENTITY_COLUMNS, (relation,)).fetchall())
    return UpstreamTable(schema, name, columns, primary_key, identity, index, identity_columns)


def _quoted(schema: str, name: str) -> str:
    return ".".join('"' + part.replace('"', '""') + '"' for part in (schema, name))


_TYPE = "SELECT typname, typtype, typbasetype, typtypmod, typelem, typcategory FROM pg_type WHERE oid = %s"


def _through_domains(connection, oid: int, modifier: int) -> tuple[str, str, int, int, str]:
    """A type's root after domains (over domains): its name, kind, modifier, element oid and category."""
    name, kind, base, domain_modifier, element, category = connection.execute(_TYPE, (oid,)).fetchone()
    while kind == "d":
        modifier = modifier if modifier >= 0 else domain_modifier
        name, kind, base, domain_modifier, element, category = connection.execute(_TYPE, (base,)).fetchone()
    return name, kind, modifier, element, category


def describe_type(connection, oid: int, modifier: int) -> tuple[str, str, int, Optional[str], Optional[str]]:
    """What a column of type `oid` (as a pgoutput Relation message names it) is: the type's name, kind and modifier
    after domains, and an array's element name and kind after domains, as UpstreamColumn has them."""
    name, kind, modifier, element, category = _through_domains(connection, oid, modifier)
    if category == "A" and element:
        element_name, element_kind, _, _, _ = _through_domains(connection, element, -1)
        return name, kind, modifier, element_name, element_kind
    return name, kind, modifier, None, None


def missing_values(connection, schema: str, name: str) -> dict[str, str]:
    """What rows written before a column was added hold in it, in Postgres's text form, for each column added with
    a default: kept in pg_attribute, never written to those rows or to the WAL (a row's tuple in pgoutput ends
    before such columns)."""
    return dict(connection.execute("SELECT attname, (attmissingval::text::text[])[1] FROM pg_attribute WHERE "
                                   "attrelid = %s::regclass AND atthasmissing AND NOT attisdropped",
                                   (_quoted(schema, name),)).fetchall())

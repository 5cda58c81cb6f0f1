"""A load generator's relations kept as tables of icesink's store, for the views over them: a view's sink then
reads them as it reads engine tables (its batch recomputes the keys their changes touch) and may join them with
other tables.

The generator is deterministic, so its rows need no process of their own: whoever reads a relation (a view's
reader as each trigger asks how far the tables go, a SELECT that joins it with a table) first brings its table up
to the generator's current tick, applying each tick's changes (an insertion, a retraction by key, an upsert for
KEY VALUE) in one transaction with the tick reached, which `generated_ticks` records. Two readers catching up at
once are serialized by that transaction: the second finds the ticks applied. The tables' triggers log the changes
as an engine table's are logged."""
from __future__ import annotations

import json
from itertools import groupby

from ..model.types import Column
from .tables import TableStore, _affinity, quote, storage_name
from .values import input_function

# ticks applied in one transaction by a view's reader: a generator that ran ahead for long (a 1 ms tick while icesink
# was stopped) is caught up over several batches, each of a bounded size, rather than in one that holds the store
TICKS_PER_CATCH_UP = 10_000


def spec(catalog, relation) -> dict:
    """What catching `relation` (a load generator's, from its source) up takes, as JSON a Spark process reads."""
    from ..model.frontier import Offset
    from .sources.generators import GeneratorInput

    origin = catalog.get_by_id(getattr(relation.descriptor, "source_id", None) or relation.id)
    generator = GeneratorInput(catalog, relation, origin)
    return {"table_id": relation.id, "options": generator.options(Offset(0)),
            "columns": [c.as_dict() for c in relation.descriptor.columns],
            "primary_key": list(relation.descriptor.primary_key), "upsert": generator.upsert_stream}


def catch_up(data_dir, specs: list[dict], whole: bool = False) -> None:
    """Brings each relation's table up to its generator's tick now, TICKS_PER_CATCH_UP ticks at most unless
    `whole`; the relations of one generator to the same tick, so a join of them sees one moment of it."""
    from .sources.generators import GeneratorReader

    if not specs:
        return
    store = TableStore(data_dir, writer=True)
    try:
        by_source = {}
        for relation in specs:
            source = (relation["options"]["generator"], relation["options"]["start_ms"],
                      relation["options"]["settings"])
            by_source.setdefault(source, []).append(relation)
        for relations in by_source.values():
            clock = GeneratorReader(relations[0]["options"])
            now = clock.latestOffset()["offset"] >> clock.bits
            while not _apply(store, relations, now) and whole:
                pass
    finally:
        store.close()


def _apply(store: TableStore, relations: list[dict], now: int) -> bool:
    """Applies the next ticks up to `now` to each relation's table in one transaction; whether all reached it."""
    reached = True
    with store.transaction():
        for relation in relations:
            table_id = relation["table_id"]
            found = store.db.execute("SELECT tick FROM generated_ticks WHERE table_id = ?", (table_id,)).fetchone()
            if found is None:
                store.create(table_id, tuple(Column(c["name"], c["type"]) for c in relation["columns"]),
                             tuple(relation["primary_key"]), within=True)
            applied = found[0] if found else 0
            upto = min(now, applied + TICKS_PER_CATCH_UP)
            if upto <= applied:
                continue
            _changes(store, relation, applied, upto)
            store.db.execute("INSERT INTO generated_ticks VALUES (?, ?) ON CONFLICT (table_id) DO UPDATE SET "
                             "tick = excluded.tick", (table_id, upto))
            reached = reached and upto == now
    return reached


def _changes(store: TableStore, relation: dict, after: int, upto: int) -> None:
    """The relation's changes of ticks (after, upto], in their order: runs of insertions (upserts, for an upsert
    stream) and of retractions (by key), each one statement."""
    from .sources.generators import GeneratorReader

    columns = [Column(c["name"], c["type"]) for c in relation["columns"]]
    names, key = [c.name for c in columns], relation["primary_key"]
    positions = [names.index(k) for k in key]
    table = quote(storage_name(relation["table_id"]))
    insert = (f"INSERT INTO {table} ({', '.join(map(quote, names))}) VALUES ({', '.join('?' * len(names))})")
    if relation["upsert"]:
        insert += (f" ON CONFLICT ({', '.join(map(quote, key))}) DO UPDATE SET "
                   + ", ".join(f"{quote(n)} = excluded.{quote(n)}" for n in names if n not in key))
    delete = f"DELETE FROM {table} WHERE " + " AND ".join(f"{quote(k)} = ?" for k in key)
    reader = GeneratorReader({**relation["options"], "start": str(after << _bits(relation))})
    end = {"offset": (upto << _bits(relation)) | ((1 << _bits(relation)) - 1)}
    stored = [_stored(c.type) for c in columns]
    for part in reader.partitions(reader.initialOffset(), end):
        for diff, run in groupby(_rows(reader.read(part), len(columns), stored), key=lambda change: change[1]):
            if diff > 0:
                store.db.executemany(insert, [row for row, _ in run])
            else:
                store.db.executemany(delete, [tuple(row[i] for i in positions) for row, _ in run])


def _bits(relation: dict) -> int:
    from .sources.generators import tick_bits

    return tick_bits(relation["options"]["generator"])


def _rows(items, width: int, stored: list):
    """(values as the store keeps them, diff) of a generator partition's changes: tuples, or Arrow batches."""
    import pyarrow as pa

    for item in items:
        if isinstance(item, pa.RecordBatch):
            values = [_arrow_stored(item.column(i), convert) for i, convert in enumerate(stored)]
            yield from zip(zip(*values), item.column(width + 1).to_pylist())
        else:
            yield tuple(convert([v])[0] for convert, v in zip(stored, item[:width])), item[width + 1]


def _arrow_stored(values, convert) -> list:
    """An Arrow column's values as the store keeps them. Arrow's own text of a decimal (its scale's digits) and of a
    date (ISO) is the store's, made without a Python call per value: TPCH's snapshot is millions of them."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_decimal(values.type) or pa.types.is_date32(values.type):
        return pc.cast(values, pa.string()).to_pylist()
    return convert(values.to_pylist())


def _stored(type_name: str):
    """From a column's Python values (as the generator makes them) to the values the store keeps: through the type's
    input function, as an INSERT's literal would go, for the types the store keeps as text."""
    if _affinity(type_name) in ("INTEGER", "REAL") or type_name in ("text", "character varying"):
        return lambda values: values
    parse = input_function(type_name)
    return lambda values: [None if v is None else parse(str(v)) for v in values]


def catch_up_given(data_dir, given: str | None) -> None:
    """For a view's reader: catches up the load generators' tables its `generated` option names (JSON specs)."""
    if given:
        catch_up(data_dir, json.loads(given))

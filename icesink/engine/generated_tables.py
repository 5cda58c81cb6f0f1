"""A load generator's relations kept as tables of icesink's store, for the views over them: a view's sink then
reads them as it reads engine tables (its batch recomputes the keys their changes touch) and may join them with
other tables.

The generator is deterministic, so its rows need no process of their own: whoever reads a relation (a view's
reader as each trigger asks how far the tables go, a SELECT that joins it with a table) first brings its table up
to the generator's current tick, applying its changes (an insertion, a retraction by key, an upsert for KEY VALUE)
a partition of the generator's at a time, each in one transaction with the progress it makes, which
`generated_ticks` records. Two readers catching up at once are serialized by those transactions: the second finds
the partition applied and stops. The tables' triggers log the changes as an engine table's are logged."""
from __future__ import annotations

import json
from itertools import groupby

from ..model.types import Column
from .tables import TableStore, _affinity, quote, storage_name
from .values import input_function

# ticks a view's reader applies before a batch: a generator that ran ahead for long (a 1 ms tick while icesink was
# stopped) is caught up over several batches of a bounded size rather than in one
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


def catch_up(data_dir, specs: list[dict], whole: bool = False, create: bool = True) -> None:
    """Brings each relation's table up to its generator's tick now: TICKS_PER_CATCH_UP ticks at most unless
    `whole`. `create`: make a table that is not there (a caller that has just found the relation in the catalog); a
    view's reader, which may run after a DROP SOURCE, does not, and leaves a dropped relation alone."""
    from .sources.generators import GeneratorReader

    if not specs:
        return
    store = TableStore(data_dir, writer=True)
    try:
        for relation in specs:
            if create:
                _create(store, relation)
            generator = GeneratorReader(relation["options"])
            now = generator.latestOffset()["offset"] >> generator.bits
            _apply(store, relation, generator, now, None if whole else TICKS_PER_CATCH_UP)
    finally:
        store.close()


def _create(store: TableStore, relation: dict) -> None:
    """The relation's table, with no tick applied, unless it is there."""
    if _progress(store, relation["table_id"]) is not None:
        return  # no write lock taken to find it there
    with store.transaction():
        if _progress(store, relation["table_id"]) is None:
            store.create(relation["table_id"], tuple(Column(**c) for c in relation["columns"]),
                         tuple(relation["primary_key"]), within=True)
            store.db.execute("INSERT INTO generated_ticks VALUES (?, 0, 0)", (relation["table_id"],))


def _progress(store: TableStore, table_id: str) -> tuple[int, int] | None:
    """(the tick the table holds, the pieces of the next tick's snapshot it holds); None when it is not kept."""
    return store.db.execute("SELECT tick, pieces FROM generated_ticks WHERE table_id = ?", (table_id,)).fetchone()


def _apply(store: TableStore, relation: dict, generator, now: int, most: int | None) -> None:
    """Applies the relation's ticks after those its table holds up to `now` (`most` of them at most), a partition of
    the generator's (50 ticks, or a piece of TPCH's snapshot) a transaction, each with the progress it makes: other
    writers of the store never wait for a whole snapshot."""
    from .sources.generators import SnapshotPiece
    from .sources.tpch import SNAPSHOT_TICK

    table_id, bits = relation["table_id"], generator.bits
    found = _progress(store, table_id)
    if found is None or found[0] >= now:
        return
    applied, pieces = found
    upto = now if most is None else min(now, applied + most)
    parts = generator.partitions({"offset": applied << bits}, {"offset": (upto << bits) | ((1 << bits) - 1)})
    snapshot = sum(isinstance(p, SnapshotPiece) for p in parts)
    apply = _applier(store, relation)
    for index, part in enumerate(parts[pieces:], start=pieces):  # the pieces before were applied already
        with store.transaction():
            if _progress(store, table_id) != (applied, index if isinstance(part, SnapshotPiece) else 0):
                return  # another catch-up got here first (or the relation was dropped): it goes on from there
            apply(generator.read(part))
            if isinstance(part, SnapshotPiece) and index + 1 < snapshot:
                store.db.execute("UPDATE generated_ticks SET pieces = ? WHERE table_id = ?", (index + 1, table_id))
            else:
                applied = SNAPSHOT_TICK if isinstance(part, SnapshotPiece) else part.upto
                store.db.execute("UPDATE generated_ticks SET tick = ?, pieces = 0 WHERE table_id = ?",
                                 (applied, table_id))


def _applier(store: TableStore, relation: dict):
    """A function applying a generator partition's changes to the relation's table, in their order: runs of
    insertions (upserts, for an upsert stream) and of retractions (by key, each of a row that is there), each one
    statement."""
    columns = [Column(**c) for c in relation["columns"]]
    names, key = [c.name for c in columns], relation["primary_key"]
    positions = [names.index(k) for k in key]
    table = quote(storage_name(relation["table_id"]))
    insert = (f"INSERT INTO {table} ({', '.join(map(quote, names))}) VALUES ({', '.join('?' * len(names))})")
    if relation["upsert"]:
        insert += (f" ON CONFLICT ({', '.join(map(quote, key))}) DO UPDATE SET "
                   + ", ".join(f"{quote(n)} = excluded.{quote(n)}" for n in names if n not in key))
    delete = f"DELETE FROM {table} WHERE " + " AND ".join(f"{quote(k)} = ?" for k in key)
    stored = [_stored(c.type) for c in columns]

    def apply(items) -> None:
        for diff, run in groupby(_rows(items, len(columns), stored), key=lambda change: change[1]):
            if diff > 0:
                store.db.executemany(insert, [row for row, _ in run])
                continue
            keys = [tuple(row[i] for i in positions) for row, _ in run]
            deleted = store.db.executemany(delete, keys).rowcount
            if deleted != len(keys):  # the generator retracted a row it never made: say so, rather than drift
                raise ValueError(f"load generator relation {relation['table_id']}: {len(keys) - deleted} of "
                                 f"{len(keys)} retractions found no row of their key")
    return apply


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
    """An Arrow column's values as the store keeps them. Arrow's own text of a decimal of scale 6 at most (its scale's
    digits; a larger one may be written with an exponent) and of a date (ISO) is the store's, made without a Python
    call per value: TPCH's snapshot is millions of them."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if (pa.types.is_decimal(values.type) and values.type.scale <= 6) or pa.types.is_date32(values.type):
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
        catch_up(data_dir, json.loads(given), create=False)

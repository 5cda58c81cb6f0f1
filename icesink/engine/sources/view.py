"""Input kind 'materialized-view': a view over one table of icesink's store (an engine table, or a table a Postgres
source replicates), brought up to date from that table's changes. The sink reads the table's changes as it would
(the same offsets, acknowledgements and snapshots); each partition of them, on an executor, finds the view's keys
they touch and recomputes the view's rows for those keys alone from the table's current rows, in one SQLite
statement (the planner wrote it: control/view_inputs.py). A key with a row is an upsert; a key left without one
(its last input row deleted, or filtered out by WHERE or HAVING) is a deletion. The table is indexed on the view's
key (or the sink's own copy of it is, arrangement.py, which each partition brings up to date with its share of
the changes first), so a batch reads the rows of the keys its changes touch, not the whole table. A sink's first
batch computes the whole view in one pass over the table instead, each group once, rather than each group once per partition of the
table's log that touches it.

The rows are those of a state of the table at or after the batch's frontier: a later change is read again by the
next batch, which recomputes its keys again, so the Iceberg table converges on the view, and a restart from the
committed frontier recomputes whatever a lost batch touched."""
from __future__ import annotations

import json
import logging
import os
import re
import sqlite3
import time
from contextlib import contextmanager
from pathlib import Path
from decimal import ROUND_HALF_UP, Decimal

from pyspark.sql.datasource import DataSource, InputPartition

from ...catalog.sqlite import raised_in_function
from ...catalog.store import Catalog, CatalogObject
from ...model.descriptors import ViewInput
from ...model.types import Column, decoder
from ..segments import CAST
from ..sink.key_ranges import sample_cuts
from ..tables import _affinity, quote, storage_name
from . import arrangement
from .arrangement import ARRANGEMENT_DIR, Arranged, open_share, share_sql
from .base import Input
from .engine_table import (ROWS_PER_BATCH, ROWS_PER_PARTITION, BaseRange, EngineTableInput, EngineTableReader,
                           EngineTableSource, OffsetRange, SegmentRange, change_schema)
from .generated_table import generated_option

CHANGES, TOUCHED, WHOLE = "_icesink_changes", "_icesink_touched", "_icesink_whole"
log = logging.getLogger("icesink.sink")


@contextmanager
def query_errors():
    """A view's query failing over its inputs' rows (a division by zero, an integer out of range) fails the batch
    in Postgres's words, not SQLite's "user-defined function raised exception"; the sink retries it, and goes on
    once those rows change."""
    try:
        yield
    except sqlite3.Error as exc:
        raised = raised_in_function(exc)
        if raised is None:
            raise
        raise ValueError(f"computing the view's changes: {raised}") from None


class ViewChanges(DataSource):
    """A source of a view's changes: its schema is the view's columns (option `view_columns`), then OFFSET, DIFF
    and TS."""

    def schema(self):
        return change_schema(json.loads(self.options["view_columns"]))


class ViewSource(ViewChanges, EngineTableSource):
    """The options of EngineTableSource for the view's input, and `view` (ViewInput's JSON) and `view_columns`."""

    @classmethod
    def name(cls) -> str:
        return "icesink_view"

    def streamReader(self, schema) -> "ViewReader":
        return ViewReader(self.options)


class WholeView(InputPartition):
    """The whole view, computed at offset `upto` (a sink's first batch); with `bounds`, (lo, hi), its keys whose
    index's first expression is between them; with `share`, (part, parts), the keys of that share of an arranged
    view. The first such partition stands for an empty view (whole_view)."""

    def __init__(self, upto: int, ts: int, bounds: tuple | None = None, first: bool = True,
                 share: tuple[int, int] | None = None):
        super().__init__((upto, ts, bounds, share))
        self.upto, self.ts, self.bounds, self.first, self.share = upto, ts, bounds, first, share


# the distinct values of a key's first expression a first batch looks for to cut it into ranges, one index seek each
SPLIT_SEEKS = 4096


def whole_partitions(data_dir, view: ViewInput, upto: int, cores: int) -> list[WholeView]:
    """A first batch's partitions: the whole view, in one range of its key per core of Spark's where its index has
    the key's first expression. The ranges are cut between that expression's distinct values (as many of them each),
    or, when they are more than SPLIT_SEEKS integers, into equal spans of them (of values, not rows: skewed keys
    load one range more), and when they are more than SPLIT_SEEKS of anything else, at even offsets of its index.
    The values are read after `upto` was fixed: a row at `upto` whose value is gone by now was changed after it, and
    the next batch recomputes its key."""
    from ..tables import TableStore

    ts = int(time.time() * 1000)
    if not view.split_sql or cores < 2:
        return [WholeView(upto, ts)]
    store = TableStore(data_dir)
    try:
        bounds = _key_ranges(store.db, view, cores)
    finally:
        store.close()
    return [WholeView(upto, ts, b, i == 0) for i, b in enumerate(bounds)] if bounds else [WholeView(upto, ts)]


def _key_ranges(db, view: ViewInput, parts: int) -> list[tuple]:
    """(lo, hi) ranges of the first index expression that hold every key of the table, `parts` of them at most; none
    when no index is sought by it (a key indexed by its columns), or a key has it NULL (BETWEEN leaves it out)."""
    key, table = view.index_keys[0], quote(storage_name(view.input_id))
    seek = f"SELECT min({key}) FROM {table} WHERE {key} > ?"
    plan = " ".join(str(row[-1]) for row in db.execute(f"EXPLAIN QUERY PLAN {seek}", (0,)))
    if not re.search(r"^SEARCH .*\(.*>\?\)", plan):  # else each seek is a scan
        return []
    if db.execute(f"SELECT 1 FROM {table} WHERE {key} IS NULL LIMIT 1").fetchone():
        return []
    values = [db.execute(f"SELECT min({key}) FROM {table}").fetchone()[0]]
    while values[-1] is not None and len(values) <= SPLIT_SEEKS:
        values.append(db.execute(seek, (values[-1],)).fetchone()[0])
    if values[-1] is None:
        values.pop()
        if len(values) < 2:
            return []
        cuts = sample_cuts(values, parts)  # ascending and distinct: each range ends before the next one's cut
        return list(zip(cuts, [values[values.index(cut) - 1] for cut in cuts[1:]] + [values[-1]]))
    low, high = values[0], db.execute(f"SELECT max({key}) FROM {table}").fetchone()[0]
    if not (isinstance(low, int) and isinstance(high, int)):
        return _ranges_of_rows(db, key, table, parts, low, high)
    # every value is a number between them (SQLite orders text and blobs after numbers), not always an integer: the
    # spans share their ends, whose keys two partitions then compute alike, once each
    span = -(-(high - low) // parts)
    return [(low + i * span, min(high, low + (i + 1) * span)) for i in range(parts) if low + i * span < high]


def _ranges_of_rows(db, key: str, table: str, parts: int, low, high) -> list[tuple]:
    """(lo, hi) ranges of about as many rows each, cut at the values the index holds at even offsets: a walk of its
    entries up to each cut (0.07 s to 5M entries of a column's index, over 10M rows), where the index holds the
    values; an expression's index is walked computing it again for each row (10 s to 5M): one range then. SQLite
    compares the values, in the key's collation (text that holds numbers is ordered as numbers): each range ends at
    the greatest value below the next cut."""
    at_offset = f"SELECT {key} FROM {table} ORDER BY {key} LIMIT 1 OFFSET ?"
    if "COVERING INDEX" not in " ".join(str(row[-1]) for row in db.execute(f"EXPLAIN QUERY PLAN {at_offset}", (0,))):
        return []
    rows = db.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
    cuts = [low]
    for part in range(1, parts):
        found = db.execute(at_offset, (part * rows // parts,)).fetchone()
        if found is not None and found[0] != cuts[-1]:  # the offsets ascend, and so do the values at them
            cuts.append(found[0])
    ends = [db.execute(f"SELECT max({key}) FROM {table} WHERE {key} < ?", (cut,)).fetchone()[0] for cut in cuts[1:]]
    return list(zip(cuts, ends + [high])) if len(cuts) > 1 else []


class ViewReader(EngineTableReader):
    def __init__(self, options):
        super().__init__(options)
        self.view = ViewInput.from_json(json.loads(options["view"]))
        self.view_columns = json.loads(options["view_columns"])
        self.generated = options.get("generated")
        self.arranged = Arranged.from_json(options["arranged"]) if options.get("arranged") else None

    def latestOffset(self) -> dict:
        from ..generated_tables import catch_up_given
        from ..tables import TableStore

        catch_up_given(self.data_dir, self.generated)
        if self.planned > 0:
            return super().latestOffset()
        store = TableStore(self.data_dir)
        try:
            # a copy's offsets count as the table's from its start: a first batch over part of its rows would
            # never see the rest
            if store.loading(self.table_id):
                return {"offset": self.start}
            if self.view.whole_sql:  # the first batch reads the table's rows: no snapshot of them to export
                return {"offset": max(store.latest_offset(self.table_id, len(self.columns)), self.start)}
        finally:
            store.close()
        return super().latestOffset()

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        after, upto = start["offset"], end["offset"]
        if after == 0 and self.view.whole_sql:
            self.planned = max(self.planned, upto)
            if self.arranged is not None:
                ts = int(time.time() * 1000)
                return [WholeView(upto, ts, first=part == 0, share=(part, self.cores)) for part in range(self.cores)]
            return whole_partitions(self.data_dir, self.view, upto, self.cores)
        if self.arranged is not None:  # each share's copy takes its changes in their order: one partition each
            self.planned = max(self.planned, upto)
            return [SharedRange(after, upto, part, self.cores) for part in range(self.cores)]
        return super().partitions(start, end)

    def _log_ranges(self, after: int, upto: int) -> list[OffsetRange]:
        """With a column to share the view's keys by, each wave of the log's partitions becomes one partition per
        core over the whole wave, each taking the changes of its share of the keys: cut by offsets, a key a wave's
        changes touch in two of its partitions is recomputed by both (new events of one hour touch the same groups
        all through the wave, and grow them)."""
        ranges = super()._log_ranges(after, upto)
        if not self.view.share_column or len(ranges) < 2:
            return ranges
        waves = [ranges[i:i + self.cores] for i in range(0, len(ranges), self.cores)]
        return [SharedRange(wave[0].after, wave[-1].upto, part, len(wave))
                for wave in waves for part in range(len(wave))]

    def read(self, partition):
        if self.arranged is not None:
            with query_errors():
                if isinstance(partition, WholeView):
                    yield from whole_view(self.data_dir, self.view, partition, self.view_columns, self.arranged)
                    return
                for rows in arranged_changes(self.data_dir, self.view, self.arranged, partition):
                    yield from view_batches(rows, self.view_columns)
            return
        yield from view_partition(self.data_dir, self.view, partition, self.view_columns, lambda db: recompute(
            db, self.view, changes_of(self.table_id, self.columns, self.view.changed_columns, partition,
                                      self.view.share_column), self.view.touched_sql))


class SharedRange(OffsetRange):
    """The changes of a table's JSON log after `after` up to `upto` whose key falls to share `part` of `parts`."""

    def __init__(self, after: int, upto: int, part: int, parts: int):
        super().__init__(after, upto)
        self.value = (after, upto, part, parts)
        self.part, self.parts = part, parts


def view_partition(data_dir, view: ViewInput, partition, view_columns: list[dict], changed):
    """Arrow record batches of a partition of a view's changes: the whole view for a first batch's, else
    `changed(db)` over the store."""
    from ..tables import TableStore

    with query_errors():
        if isinstance(partition, WholeView):
            yield from whole_view(data_dir, view, partition, view_columns)
            return
        store = TableStore(data_dir)
        try:
            rows = changed(store.db)
        finally:
            store.close()
    yield from view_batches(rows, view_columns)


def whole_view(data_dir, view: ViewInput, partition: WholeView, view_columns: list[dict],
               arranged: Arranged | None = None):
    """Arrow record batches of every row of the view, computed in one pass over its tables as they are (at or
    after `partition.upto`), each an upsert at that offset; an arranged view's share, over its copy made again. An
    empty view gives the deletion (or row) of one key of its driving table instead (the first partition does), so
    that the commit records the offset; an empty driving table gives nothing (the next batch computes the whole view
    again)."""
    from ..tables import TableStore

    if arranged is not None:
        part, parts = partition.share
        db = open_share(data_dir, arranged, part, parts)
        close = db.close
        arrangement.make(db, arranged, part, parts, partition.upto, _indexer(view, arranged))
    else:
        store = TableStore(data_dir)
        db, close = store.db, store.close
    try:
        # into a temp table first: the store's tables are read in one statement, not for as long as Spark takes the
        # rows, for a reader holds back the checkpoint of every write made meanwhile
        if partition.bounds is None:
            db.execute(f"CREATE TEMP TABLE {WHOLE} AS {view.whole_sql}")
        else:
            lo, hi = partition.bounds
            db.execute(f"CREATE TEMP TABLE {WHOLE} AS {view.split_sql}", {"lo": lo, "hi": hi})
        cursor, found = db.execute(f"SELECT * FROM temp.{WHOLE}"), False
        while rows := cursor.fetchmany(ROWS_PER_BATCH):
            found = True
            yield from view_batches([(*row, partition.upto, 1, partition.ts) for row in rows], view_columns)
        if not found and view.any_key_sql and partition.first:
            if arranged is not None:  # the other shares may hold the rows
                close()
                store = TableStore(data_dir)
                db, close = store.db, store.close
            rows = recompute_keys(db, view, view.any_key_sql, (partition.upto, partition.ts))
            yield from view_batches(rows, view_columns)
    finally:
        close()


def _indexer(view: ViewInput, arranged: Arranged):
    return lambda db: create_indexes(db, view, arranged.view_name)


def arranged_changes(data_dir, view: ViewInput, arranged: Arranged, partition: "SharedRange"):
    """The view's changes for the keys its input's changes in `partition` touch (those of its share), recomputed
    from the share's copy once they are applied to it (a copy behind the partition's start is made again): a list
    of them per piece of about ROWS_PER_PARTITION changes of the share, what a piece touches being held in memory."""
    db = open_share(data_dir, arranged, partition.part, partition.parts)
    try:
        applied = arrangement.applied_upto(db, arranged)
        if applied is None or applied < partition.after:
            arrangement.make(db, arranged, partition.part, partition.parts, partition.after, _indexer(view, arranged))
        names = [c["name"] for c in arranged.columns]
        step = ROWS_PER_PARTITION * partition.parts
        for after in range(partition.after, partition.upto, step):
            piece = SharedRange(after, min(after + step, partition.upto), partition.part, partition.parts)
            select, parameters = _logged(arranged.table_id, list(arranged.columns), tuple(names), piece,
                                         arranged.share_column, diff=True)
            db.execute(f"DROP TABLE IF EXISTS temp.{CHANGES}")
            db.execute(f"CREATE TEMP TABLE {CHANGES} ({', '.join(quote(n) for n in names)}, _icesink_diff, "
                       "_icesink_offset, _icesink_ts)")
            db.execute(f"INSERT INTO temp.{CHANGES} {select}", parameters)
            arrangement.apply(db, arranged, CHANGES, piece.upto)
            yield recompute_keys(db, view, view.touched_sql)
    finally:
        db.close()


def view_batches(rows: list[tuple], view_columns: list[dict]):
    """Arrow record batches of the view's changes (rows of its columns, then offset, diff and time)."""
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_schema

    schema = to_arrow_schema(change_schema(view_columns), timezone="UTC")
    width = len(view_columns)
    for start in range(0, len(rows), ROWS_PER_BATCH):
        chunk = list(zip(*rows[start:start + ROWS_PER_BATCH]))
        arrays = [_array(chunk[i], column["type"], schema.field(i).type) for i, column in enumerate(view_columns)]
        arrays += [pa.array(chunk[width + i], type=schema.field(width + i).type) for i in range(3)]
        yield pa.RecordBatch.from_arrays(arrays, schema=schema)


def changes_of(table_id: str, columns: list[dict], names: tuple[str, ...], partition,
               share_column: str = "") -> list[tuple] | tuple[str, tuple]:
    """A partition of a table's changes as `recompute` takes them: the values of its columns `names`, offset and
    time; for the JSON log, the SELECT that reads them (and its parameters). A SharedRange's are those whose
    `share_column` falls to it."""
    return _logged(table_id, columns, names, partition, share_column) if isinstance(partition, OffsetRange) \
        else _stored_changes(columns, names, partition)


def _logged(table_id: str, columns: list[dict], names: tuple[str, ...], partition: OffsetRange,
            share_column: str = "", diff: bool = False) -> tuple[str, tuple]:
    """The SELECT (and its parameters) of an engine table's logged changes as `_stored_changes` gives them (with
    `diff`, each change's before its offset), for SQLite to read without a value passing through Python (a REAL is
    logged as text that reads back as the same double)."""
    all_names, types = [c["name"] for c in columns], {c["name"]: c["type"] for c in columns}
    share = ""
    if isinstance(partition, SharedRange):
        value = f"json_extract(row, '$[{all_names.index(share_column)}]')"
        share = f" AND {share_sql(types[share_column], value, partition.parts)} = {partition.part}"
    picked = []
    for name in names:
        value = f"json_extract(row, '$[{all_names.index(name)}]')"
        picked.append(f"CAST({value} AS REAL)" if _affinity(types[name]) == "REAL" else value)
    picked += ["diff"] if diff else []
    return (f"SELECT {', '.join(picked + ['offset', 'ts'])} FROM changes WHERE table_id = ? AND offset > ? "
            f"AND offset <= ?{share}", (table_id, partition.after, partition.upto))


def _stored_changes(columns: list[dict], names: tuple[str, ...], partition) -> list[tuple]:
    """Segments', a snapshot's or a base's changes as the store keeps values: the columns `names`, offset, time."""
    from ..ingest.copy import base_batches, stored_rows

    found = []
    types = {c["name"]: c["type"] for c in columns}
    pieces = partition.pieces if isinstance(partition, SegmentRange) else [partition]
    for piece in pieces:
        first = piece.first
        for batch in base_batches(piece.path, piece.skip, piece.take, ROWS_PER_BATCH):
            count = batch.num_rows
            if isinstance(partition, BaseRange):
                values = stored_rows(batch, [Column(n, types[n]) for n in names])
            else:  # a segment or snapshot holds stored values already
                picked = [batch.column(n).to_pylist() if batch.schema.get_field_index(n) >= 0 else [None] * count
                          for n in names]
                values = list(zip(*picked)) if picked else [()] * count
            found += [v + (first + i, piece.ts) for i, v in enumerate(values)]
            first += count
    return found


def _array(values, type_name: str, target):
    """A column of values SQLite computed as the Arrow array of its Spark type: cast by Arrow where it reads them
    as the store keeps them, else value by value."""
    import pyarrow as pa

    try:
        if type_name in CAST:
            return pa.array(values).cast(target, safe=not pa.types.is_floating(target))
        if type_name in ("timestamp", "date"):
            return pa.array(values, pa.string()).cast(target)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        pass
    convert = _converter(type_name, target)
    return pa.array([convert(v) for v in values], type=target)


def _converter(type_name: str, target):
    """From a value SQLite computed to the Python value Arrow takes for `target`: a numeric's sum or average
    (SQLite computes them as doubles) rounded to the column's scale, half away from zero as Postgres rounds."""
    import pyarrow as pa

    decode = decoder(type_name)
    if not pa.types.is_decimal(target):
        return decode
    step = Decimal(1).scaleb(-target.scale)
    return lambda v: None if v is None else decode(v).quantize(step, rounding=ROUND_HALF_UP)


def recompute(db, view: ViewInput, changes: list[tuple] | tuple[str, tuple], touched_sql: str,
              columns: tuple[str, ...] | None = None, fallback: str | None = None) -> list[tuple]:
    """The view's changes for the keys a relation's `changes` touch (rows of its `columns`, by default the view's
    changed_columns, then offset and time; or a SELECT of them and its parameters), found by `touched_sql`: each
    key's row (diff 1), or its deletion (diff -1: its key's columns, nulls elsewhere), with the newest offset and
    time of the changes that touched it. `fallback`: when changes touch no key, the statement that gives one (of
    whatever key: recomputing it changes nothing) to carry their offset."""
    names = [quote(n) for n in (view.changed_columns if columns is None else columns)]
    db.execute(f"DROP TABLE IF EXISTS temp.{CHANGES}")
    db.execute(f"CREATE TEMP TABLE {CHANGES} ({', '.join(names + ['_icesink_offset', '_icesink_ts'])})")
    if isinstance(changes, tuple):
        select, parameters = changes
        db.execute(f"INSERT INTO temp.{CHANGES} {select}", parameters)
    else:
        db.executemany(f"INSERT INTO temp.{CHANGES} VALUES ({', '.join('?' * (len(names) + 2))})", changes)
    try:
        found = recompute_keys(db, view, touched_sql)
        if not found and fallback is not None:
            newest = db.execute(f"SELECT max(_icesink_offset), max(_icesink_ts) FROM temp.{CHANGES}").fetchone()
            if newest[0] is not None:
                found = recompute_keys(db, view, fallback, newest)
        return found
    finally:
        db.execute(f"DROP TABLE temp.{CHANGES}")


def recompute_keys(db, view: ViewInput, touched_sql: str, parameters: tuple = ()) -> list[tuple]:
    """The view's rows (or deletions) for the keys `touched_sql` gives (each key's columns, offset and time)."""
    db.execute(f"DROP TABLE IF EXISTS temp.{TOUCHED}")
    # the query reads the touched keys in turn (its outer loop): they need no index
    db.execute(f"CREATE TEMP TABLE {TOUCHED} AS {touched_sql}", parameters)
    try:
        touched = db.execute(f"SELECT * FROM temp.{TOUCHED}").fetchall()
        width = len(view.key_outputs)
        found = {tuple(row[width:]): row[:width] for row in db.execute(view.query_sql)}
    finally:
        db.execute(f"DROP TABLE temp.{TOUCHED}")
    count = len({i for i in view.key_outputs if i is not None})  # the key's expressions (each is a column)
    out = []
    for row in touched:
        key, offset, ts = row[:count], row[count], row[count + 1]
        values = found.get(key)
        if values is not None:
            out.append((*values, offset, 1, ts))
        else:
            out.append((*(None if i is None else key[i] for i in view.key_outputs), offset, -1, ts))
    return out


def create_indexes(db, view: ViewInput, name: str) -> None:
    """The indexes a batch looks rows up by: the view's key on its input, and a joined relation's join columns.
    Building one takes a pass over its relation, once; a key SQLite cannot index (a function it does not know to be
    deterministic) is indexed by its columns. The build sorts on every core (SQLite's sorter threads): over 10M
    events in the store, seed 004's index took 10.3–12.4 s instead of 15.1–16.4 s (a script not kept)."""
    db.execute(f"PRAGMA threads = {os.cpu_count() or 1}")
    try:
        for table_id, index, keys in view.indexes:
            table = quote(storage_name(table_id))
            try:
                started = time.monotonic()
                db.execute(f"CREATE INDEX IF NOT EXISTS {quote(index)} ON {table} ({keys})")
                log.info("materialized view %s: index %s on its input ready in %.1fs", name, index,
                         time.monotonic() - started)
            except sqlite3.OperationalError as exc:
                columns = [k for k in keys.split(", ") if re.fullmatch(r'"(?:[^"]|"")*"|[A-Za-z_]\w*', k)]
                log.warning("materialized view %s: its key (%s) cannot be indexed (%s)%s", name, keys, exc,
                            "; indexed by its columns" if columns else
                            "; each key a batch touches reads the whole input")
                if columns:
                    db.execute(f"CREATE INDEX IF NOT EXISTS {quote(index)} ON {table} ({', '.join(columns)})")
    finally:
        db.execute("PRAGMA threads = 0")  # a batch's queries share the cores with the other tasks


class ViewInputs(Input):
    """A sink's view, whose changes come from the inputs of the relations it reads (`inputs`, in the order of
    ViewInput.table_ids): it has changes to read when one of them has, resumes where all of them can, and
    acknowledges a commit to each."""

    upsert_stream = True  # each change of the view replaces its key's row

    def __init__(self, catalog: Catalog, relation: CatalogObject, view: ViewInput, inputs: list[Input]):
        super().__init__(catalog, relation, relation)
        self.view, self.inputs = view, inputs
        self.frontier_kind = inputs[0].frontier_kind

    def _columns(self) -> str:
        return json.dumps([c.as_dict() for c in self.relation.descriptor.columns])

    def holds_changes_after(self, frontier) -> bool:
        return any(i.holds_changes_after(frontier) for i in self.inputs)

    def check_resume(self, frontier) -> None:
        for i in self.inputs:
            i.check_resume(frontier)

    def acknowledge(self, sink_id: str, frontier) -> None:
        for i in self.inputs:
            i.acknowledge(sink_id, frontier)

    def close(self) -> None:
        for i in self.inputs:
            i.close()


def _joins_itself(view: ViewInput) -> bool:
    """Whether the view joins its table with itself: a change then touches keys through other rows of the table,
    which may be another share's (its touched keys are found by reading the table, not the changes alone)."""
    return re.search(rf'\b"?{storage_name(view.input_id)}"?\b', view.touched_sql) is not None


class MaterializedViewInput(ViewInputs):
    """A sink's view over one table: that table's changes (its own input, `base`) as the view's upserts and
    deletions."""

    def __init__(self, catalog: Catalog, relation: CatalogObject, view: ViewInput, base: EngineTableInput,
                 state: Path | None = None):
        """`state`: the sink's directory, where it keeps its arrangement of an engine table with a primary key when
        the view's keys can be shared by a column of it (else the table's writes keep the view's index)."""
        super().__init__(catalog, relation, view, [base])
        table = base.relation.descriptor
        self.arranged = None
        if (state is not None and type(base) is EngineTableInput and view.share_column and table.primary_key
                and not _joins_itself(view)):
            self.arranged = Arranged(relation.name, str(state / ARRANGEMENT_DIR), base.relation.id,
                                     tuple(c.as_dict() for c in table.columns), table.primary_key, view.share_column)
        else:
            create_indexes(base.log.db, view, relation.name)

    def stream(self, spark, start):
        arranged = "" if self.arranged is None else self.arranged.to_json()
        return (self.inputs[0]._reader(spark, start).format(ViewSource.name())
                .option("view", json.dumps(self.view.to_json())).option("view_columns", self._columns())
                .option("generated", generated_option(self.inputs)).option("arranged", arranged).load())

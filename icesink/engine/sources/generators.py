"""Input kind 'load-generator': Materialize's load generators, deterministic given their options: the rows of tick t
are a function of (generator, options, t), so a restart that resumes at a committed tick produces exactly the rows
after it.

Offsets: tick << 20 | sequence within the tick (TPCH: << 32, for its snapshot is one tick of millions of rows); a
batch always holds whole ticks.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import json
import time

import numpy as np
from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, InputPartition

from ...model.frontier import Offset
from . import tpch
from .base import Input
from .engine_table import DIFF, OFFSET, TS, change_schema

TICK_BITS = 20
TPCH_TICK_BITS = 32
DEFAULT_TICK_MS = 1000  # Materialize's default TICK INTERVAL
TICKS_PER_PARTITION = 50
ORGANIZATIONS, USERS, BIDS_PER_TICK = 10, 100, 3
ITEMS = ("Signed Memorabilia", "City Bar Crawl", "Best Pizza in Town", "Gift Basket", "Custom Art")


def _hash(*parts) -> int:
    return int.from_bytes(hashlib.blake2b(repr(parts).encode(), digest_size=8).digest(), "big")


def _moment(start_ms: int, tick_ms: int, tick: int) -> dt.datetime:
    return dt.datetime.fromtimestamp((start_ms + tick * tick_ms) / 1000, dt.timezone.utc)


def _balance(seed: int, account: int, version: int) -> int:
    return 1000 + _hash(seed, "balance", account, version) % 9000


def tick_rows(generator: str, relation: str, options: dict, start_ms: int, tick: int):
    """(values, diff) pairs of `relation` at `tick` (ticks start at 1); KEY VALUE is key_value_batch's."""
    seed, tick_ms = options.get("seed", 0), options.get("tick_interval_ms", DEFAULT_TICK_MS)
    if generator == "counter":
        yield (tick,), 1
    elif generator == "auction":
        now = _moment(start_ms, tick_ms, tick)
        if tick == 1 and relation == "organizations":
            for org in range(1, ORGANIZATIONS + 1):
                yield (org, f"org{org}"), 1
        elif tick == 1 and relation == "users":
            for user in range(1, USERS + 1):
                yield (user, user % ORGANIZATIONS + 1, f"user{user}"), 1
        elif relation == "accounts":
            if tick == 1:
                for user in range(1, USERS + 1):
                    yield (user, user % ORGANIZATIONS + 1, _balance(seed, user, -1)), 1
            # the n-th change of an account (n from 0) retracts the balance of its (n - 1)-th, -1 being tick 1's
            account, version = tick % USERS + 1, (tick - 1) // USERS
            org = account % ORGANIZATIONS + 1
            yield (account, org, _balance(seed, account, version - 1)), -1
            yield (account, org, _balance(seed, account, version)), 1
        elif relation == "auctions":
            item = ITEMS[_hash(seed, "item", tick) % len(ITEMS)]
            yield (tick, _hash(seed, "seller", tick) % USERS + 1, item, now + dt.timedelta(seconds=10)), 1
        elif relation == "bids":
            for j in range(BIDS_PER_TICK):
                bid = (tick - 1) * BIDS_PER_TICK + j + 1
                yield (bid, _hash(seed, "buyer", bid) % USERS + 1, max(1, tick - j),
                       _hash(seed, "amount", bid) % 100 + 1, now), 1
    else:
        raise ValueError(f"the {generator.upper()} load generator does not run yet")


ARROW_ROWS = 131_072


def key_value_batch(options: dict, start_ms: int, first_tick: int, last_tick: int):
    """KEY VALUE's rows for ticks first..last, computed column-wise: an upsert stream, like Materialize's
    (each tick sets BATCH SIZE keys, cycling through KEYS, to a new value; no retractions)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    keys, batch = options.get("keys", 1000), options.get("batch_size", 1)
    seed, tick_ms = options.get("seed", 0), options.get("tick_interval_ms", DEFAULT_TICK_MS)
    n = np.arange((first_tick - 1) * batch, last_tick * batch, dtype=np.int64)
    key, round_ = n % keys, n // keys
    tick = n // batch + 1
    mixed = (key.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)) ^ (round_.astype(np.uint64) + np.uint64(seed))
    mixed ^= mixed >> np.uint64(29)
    schema = pa.schema([("key", pa.int64()), ("value", pa.string()), ("round", pa.int64()),
                        pa.field(OFFSET, pa.int64(), False), pa.field(DIFF, pa.int32(), False),
                        pa.field(TS, pa.int64(), False)])  # as change_schema() declares them
    return pa.table([key, pc.cast(pa.array(mixed), pa.string()), round_, (tick << TICK_BITS) | (n % batch),
                     np.ones(len(n), np.int32), start_ms + (tick - 1) * tick_ms], schema=schema)


def tick_bits(generator: str) -> int:
    return TPCH_TICK_BITS if generator == "tpch" else TICK_BITS


class TickRange(InputPartition):
    def __init__(self, after: int, upto: int):
        super().__init__((after, upto))
        self.after, self.upto = after, upto


class SnapshotPiece(InputPartition):
    """Part of TPCH's snapshot (tpch.snapshot_parts): units first..last, its first row at sequence `sequence`."""

    def __init__(self, first: int, last: int, sequence: int):
        super().__init__((first, last))
        self.first, self.last, self.sequence = first, last, sequence


class GeneratorSource(DataSource):
    """Options: generator, relation, settings (JSON), start_ms, columns (JSON), start (exclusive offset)."""

    @classmethod
    def name(cls) -> str:
        return "icesink_load_generator"

    def schema(self):
        return change_schema(json.loads(self.options["columns"]))

    def streamReader(self, schema):
        return GeneratorReader(self.options)

    def reader(self, schema):
        return GeneratorBatchReader(self.options)


class GeneratorBatchReader(DataSourceReader):
    """The generator's changes from its first tick up to now, read once (SELECT)."""

    def __init__(self, options):
        self.changes = GeneratorReader(options)

    def partitions(self):
        return self.changes.partitions(self.changes.initialOffset(), self.changes.latestOffset())

    def read(self, partition):
        yield from self.changes.read(partition)


class GeneratorReader(DataSourceStreamReader):
    def __init__(self, options):
        self.generator = options["generator"]
        self.relation = options.get("relation", "")
        self.settings = json.loads(options["settings"])
        self.start_ms = int(options["start_ms"])
        self.columns = json.loads(options["columns"])
        self.bits = tick_bits(self.generator)
        self.start_tick = int(options.get("start", "0")) >> self.bits

    def _offset(self, tick: int) -> dict:
        return {"offset": (tick << self.bits) | ((1 << self.bits) - 1) if tick else 0}

    def initialOffset(self) -> dict:
        return self._offset(self.start_tick)

    def latestOffset(self) -> dict:
        tick_ms = self.settings.get("tick_interval_ms", DEFAULT_TICK_MS)
        elapsed = int(time.time() * 1000) - self.start_ms
        tick = max(0, elapsed // tick_ms + 1)
        if "up_to" in self.settings:
            tick = min(tick, self.settings["up_to"])
        if self.generator == "tpch" and "tick_interval_ms" not in self.settings:
            tick = min(tick, tpch.SNAPSHOT_TICK)  # as Materialize's: without a TICK INTERVAL, the snapshot alone
        return self._offset(max(tick, self.start_tick))

    def partitions(self, start: dict, end: dict):
        after, upto = start["offset"] >> self.bits, end["offset"] >> self.bits
        parts = []
        if self.generator == "tpch" and after < tpch.SNAPSHOT_TICK <= upto:  # generated on every executor
            scale = self.settings.get("scale_factor", 0.01)
            parts = [SnapshotPiece(*piece) for piece in tpch.snapshot_parts(self.relation, scale)]
            after = tpch.SNAPSHOT_TICK
        bounds = list(range(after, upto, TICKS_PER_PARTITION)) + [upto]
        return parts + [TickRange(a, b) for a, b in zip(bounds, bounds[1:])]

    def read(self, partition: TickRange):
        tick_ms = self.settings.get("tick_interval_ms", DEFAULT_TICK_MS)
        if self.generator == "tpch":
            yield from self._tpch(partition, tick_ms)
            return
        if self.generator == "key value":  # large by design: Arrow batches, not Python rows
            for first in range(partition.after + 1, partition.upto + 1):
                yield from key_value_batch(self.settings, self.start_ms, first, first).to_batches(ARROW_ROWS)
            return
        for tick in range(partition.after + 1, partition.upto + 1):
            ts = self.start_ms + (tick - 1) * tick_ms  # when the tick became readable
            for sequence, (values, diff) in enumerate(tick_rows(self.generator, self.relation, self.settings,
                                                                 self.start_ms, tick)):
                yield (*values, (tick << TICK_BITS) | sequence, diff, ts)

    def _tpch(self, partition, tick_ms: int):
        import pyarrow as pa
        from pyspark.sql.pandas.types import to_arrow_schema

        schema = to_arrow_schema(change_schema(self.columns), timezone="UTC")
        scale = self.settings.get("scale_factor", 0.01)

        def batch(columns: dict, tick: int, sequence: int, diffs):
            count = len(diffs)
            arrays = [columns[c["name"]].cast(schema.field(i).type) for i, c in enumerate(self.columns)]
            arrays += [pa.array(np.arange(sequence, sequence + count, dtype=np.int64) | (tick << self.bits)),
                       pa.array(diffs, pa.int32()), pa.array(np.full(count, self.start_ms + (tick - 1) * tick_ms))]
            return pa.RecordBatch.from_arrays(arrays, schema=schema)
        if isinstance(partition, SnapshotPiece):
            columns = tpch.snapshot_rows(self.relation, scale, partition.first, partition.last)
            count = len(next(iter(columns.values())))
            yield batch(columns, tpch.SNAPSHOT_TICK, partition.sequence, np.ones(count, np.int32))
            return
        for tick in range(partition.after + 1, partition.upto + 1):
            found = tpch.update_rows(self.relation, scale, tick)
            if found is not None:
                yield batch(found[0], tick, 0, found[1])

    def commit(self, end: dict) -> None:
        """Nothing to forget: the rows of any tick can be generated again."""


class GeneratorInput(Input):
    def __init__(self, catalog, relation, origin):
        super().__init__(catalog, relation, origin)
        self.generator = origin.descriptor.generator
        # KEY VALUE sets each key to a new value: an upsert stream, like Materialize's
        self.upsert_stream = self.generator == "key value"

    @property
    def upsert_key(self) -> list[str] | None:
        """For an upsert stream, the columns of the key whose row each change replaces (KEY VALUE's `key`)."""
        if not self.upsert_stream:
            return None
        return list(getattr(self.relation.descriptor, "primary_key", ())) or [self.relation.descriptor.columns[0].name]

    def end(self) -> Offset | None:
        """The offset of the last change of the relation up to UP TO's tick (a relation may have none in a tick)."""
        settings = self.origin.descriptor.settings
        if self.generator == "tpch" and settings.tick_interval_ms is None:  # the snapshot alone
            settings = dataclasses.replace(settings, up_to=tpch.SNAPSHOT_TICK if settings.up_to is None
                                           else min(settings.up_to, tpch.SNAPSHOT_TICK))
        if settings.up_to is None:
            return None
        if self.generator == "key value":
            return Offset((settings.up_to << TICK_BITS) | ((settings.batch_size or 1) - 1)) if settings.up_to \
                else Offset(0)
        upstream = getattr(self.relation.descriptor, "upstream", None) if self.relation is not self.origin else ""
        bits = tick_bits(self.generator)
        for tick in range(settings.up_to, 0, -1):
            if self.generator == "tpch":
                count = tpch.rows_in_tick(upstream, settings.scale_factor or 0.01, tick)
            else:
                count = sum(1 for _ in tick_rows(self.generator, upstream or "", settings.to_json(), 0, tick))
            if count:
                return Offset((tick << bits) | (count - 1))
        return Offset(0)

    def stream(self, spark, start: Offset):
        return self._reader(spark.readStream, start).load()

    def options(self, start: Offset) -> dict[str, str]:
        """GeneratorSource's options for this relation's changes after `start`."""
        columns = self.relation.descriptor.columns
        settings = self.origin.descriptor.settings
        # AS OF n: the source starts with n ticks made, as if created n ticks earlier
        start_ms = (int(dt.datetime.fromisoformat(self.origin.created_at).timestamp() * 1000)
                    - (settings.as_of or 0) * (settings.tick_interval_ms or DEFAULT_TICK_MS))
        upstream = getattr(self.relation.descriptor, "upstream", None) if self.relation is not self.origin else ""
        return {"generator": self.generator, "relation": upstream or "", "settings": json.dumps(settings.to_json()),
                "start_ms": str(start_ms), "columns": json.dumps([c.as_dict() for c in columns]),
                "start": str(start.offset)}

    def _reader(self, reader, start: Offset):
        return reader.format(GeneratorSource.name()).options(**self.options(start))

    def current(self, spark):
        """The relation's rows now (a SELECT reads them): its changes up to this tick, generated on the executors
        and consolidated there: each row as many times as its insertions outnumber its retractions, or, for an
        upsert stream (KEY VALUE), each key's newest value."""
        from pyspark.sql import Window
        from pyspark.sql import functions as F

        frame = self._reader(spark.read, Offset(0)).load()
        columns = [c.name for c in self.relation.descriptor.columns]
        if self.upsert_stream:
            newest = Window.partitionBy(*self.upsert_key).orderBy(F.col(OFFSET).desc())
            return (frame.withColumn("_icesink_n", F.row_number().over(newest)).filter("_icesink_n = 1")
                    .filter(F.col(DIFF) > 0).select(*columns))
        counted = frame.groupBy(*columns).agg(F.sum(DIFF).alias("_icesink_n")).filter("_icesink_n > 0")
        return counted.withColumn("_icesink_r", F.explode(F.sequence(F.lit(1), F.col("_icesink_n")))).select(*columns)

"""Which files may hold a key: the table's files grouped into disjoint ranges of the first key column.

A file's range comes from its manifest bounds, which are exact or (truncated strings) wider, never narrower,
so a key's live row is always in a file of the one group whose range holds the key. Files whose ranges
overlap share a group. Without usable bounds everything is one group: correct, only slower.
"""
from __future__ import annotations

from dataclasses import dataclass

from pyiceberg.conversions import from_bytes
from pyiceberg.types import (BooleanType, DateType, DecimalType, IntegerType, LongType, StringType,
                             TimestampType, TimestamptzType)
from pyspark.sql import Column
from pyspark.sql import functions as F

_COMPARABLE = (BooleanType, DecimalType, IntegerType, LongType, StringType)  # bounds decode to Spark literals
_AS_NUMBER = {DateType: F.unix_date, TimestamptzType: F.unix_micros,
              TimestampType: lambda c: F.unix_micros(c.cast("timestamp"))}  # bounds decode to days / micros


def bounds_order(field_type) -> bool:
    """Whether a key column's manifest bounds decode to values group_index can compare the column with."""
    return isinstance(field_type, _COMPARABLE) or type(field_type) in _AS_NUMBER


@dataclass
class KeyGroup:
    tasks: list  # FileScanTasks
    ranges: list | None  # (low, high) of each task's file in key order, or None when unknown

    @property
    def low(self):
        return self.ranges[0][0] if self.ranges else None


def group_files(tasks: list, schema, column: str) -> list[KeyGroup]:
    """Groups of `tasks` (FileScanTasks) whose ranges of `column` are disjoint, in key order."""
    if not tasks:
        return []
    key_field = schema.find_field(column)
    kind = type(key_field.field_type)
    ranges = []
    for task in tasks:
        low = task.file.lower_bounds.get(key_field.field_id) if task.file.lower_bounds else None
        high = task.file.upper_bounds.get(key_field.field_id) if task.file.upper_bounds else None
        if low is None or high is None or not (kind in _COMPARABLE or kind in _AS_NUMBER):
            return [KeyGroup(list(tasks), None)]
        ranges.append((from_bytes(key_field.field_type, low), from_bytes(key_field.field_type, high), task))
    groups: list[KeyGroup] = []
    reach = None  # the highest key of the last group
    for low, high, task in sorted(ranges, key=lambda r: r[0]):
        if not groups or low > reach:
            groups.append(KeyGroup([], []))
            reach = high
        groups[-1].tasks.append(task)
        groups[-1].ranges.append((low, high))
        reach = max(reach, high)
    return groups


def spread_ids(groups: int, partitions: int) -> list[int]:
    """Distinct ids for `groups` ranges of keys, in key order, that Spark's `repartition(partitions, id)` sends to
    partition g * partitions // groups each: hashing the plain indexes leaves some partitions two ranges or three
    and others none (a task's memory and time grow with its share). Spark's hash partitioning of an integer is
    Murmur3 (x86, 32 bits, seed 42) modulo the partitions; `test_spread_ids_give_each_partition_its_ranges` checks
    this against Spark itself."""
    wanted = [g * partitions // groups for g in range(groups)]
    needed = {p: wanted.count(p) for p in set(wanted)}
    found: dict[int, list[int]] = {p: [] for p in needed}
    candidate = 0
    while any(len(found[p]) < needed[p] for p in needed):
        p = _murmur3_int(candidate) % partitions
        if p in found and len(found[p]) < needed[p]:
            found[p].append(candidate)
        candidate += 1
    return [found[p].pop() for p in wanted]


def _murmur3_int(value: int, seed: int = 42) -> int:
    """Spark's Murmur3_x86_32.hashInt, as a signed 32-bit int."""
    def rotl(x: int, r: int) -> int:
        return ((x << r) | (x >> (32 - r))) & 0xFFFFFFFF
    k1 = rotl((value * 0xCC9E2D51) & 0xFFFFFFFF, 15) * 0x1B873593 & 0xFFFFFFFF
    h1 = (rotl(seed ^ k1, 13) * 5 + 0xE6546B64) & 0xFFFFFFFF
    h1 ^= 4
    h1 ^= h1 >> 16
    h1 = (h1 * 0x85EBCA6B) & 0xFFFFFFFF
    h1 ^= h1 >> 13
    h1 = (h1 * 0xC2B2AE35) & 0xFFFFFFFF
    h1 ^= h1 >> 16
    return h1 - (1 << 32) if h1 >= 1 << 31 else h1


def sample_cuts(sample: list | None, parts: int) -> list | None:
    """Lower bounds of `parts` ranges holding about as many of `sample`'s keys each (None without a sample)."""
    if not sample:
        return None
    ordered = sorted(sample)
    cuts = [ordered[0]]
    for part in range(1, parts):
        low = ordered[part * len(ordered) // parts]
        if low > cuts[-1]:
            cuts.append(low)
    return cuts


@dataclass(frozen=True)
class KeyPartition:
    """A partition field computed from one key column alone: a key's row can only be in its key's partition."""
    position: int
    transform: object
    source_type: object
    column: str


def key_partitions(spec, schema, key: list[str]) -> list[KeyPartition]:
    """The partition fields computed from a key column whose values compare as plain numbers or strings."""
    fields = []
    for position, partition_field in enumerate(spec.fields):
        source = schema.find_field(partition_field.source_id)
        if source.name in key and isinstance(source.field_type, (IntegerType, LongType, StringType)):
            fields.append(KeyPartition(position, partition_field.transform, source.field_type, source.name))
    return fields


def files_holding(group: KeyGroup, changes, column: str, partitions: list[KeyPartition]) -> list[int]:
    """Indexes of the group's files that may hold a row of `changes` (an Arrow table of keys): by their key
    range, and by their partition where it follows from the key."""
    import pyarrow as pa
    import pyarrow.compute as pc

    chosen = list(range(len(group.tasks)))
    if group.ranges is not None:
        keys = changes[column]
        if pa.types.is_date(keys.type) or pa.types.is_timestamp(keys.type):  # as the bounds decode: days, micros
            keys = keys.cast(pa.int32() if pa.types.is_date(keys.type) else pa.int64())
        chosen = [i for i in chosen if pc.any(pc.and_(pc.greater_equal(keys, group.ranges[i][0]),
                                                      pc.less_equal(keys, group.ranges[i][1]))).as_py()]
    if partitions and chosen:
        values = [p.transform.pyarrow_transform(p.source_type)(changes[p.column]).to_pylist() for p in partitions]
        changed = set(zip(*values))
        chosen = [i for i in chosen
                  if tuple(group.tasks[i].file.partition[p.position] for p in partitions) in changed]
    return chosen


def by_range(frame, column: str, column_type, groups: list[KeyGroup], tasks: int, name: str):
    """`frame` with each row's group id in column `name`, repartitioned so that group g of G goes to task
    g * tasks // G (spread_ids); and the ids, one per group."""
    ids = spread_ids(len(groups), tasks)
    return frame.withColumn(name, group_index(F.col(column), column_type, groups, ids)).repartition(tasks, name), ids


def cut_groups(cuts: list) -> list[KeyGroup]:
    """Groups of no files, starting at `cuts`."""
    return [KeyGroup([], [(cut, cut)]) for cut in cuts]


def group_index(column: Column, column_type, groups: list[KeyGroup], ids: list[int]) -> Column:
    """The id (of `ids`) of the group a key belongs to: the last group starting at or below it (the first group
    for keys below all). Keys between or beyond the ranges join a neighbour, whose range grows."""
    value = _AS_NUMBER.get(type(column_type), lambda c: c)(column)
    starts = [g.low for g in groups]

    def search(first: int, last: int) -> Column:  # a balanced tree of comparisons: log2(groups) per row
        if first == last:
            return F.lit(ids[first])
        middle = (first + last + 1) // 2
        return F.when(value >= F.lit(starts[middle]), search(middle, last)).otherwise(search(first, middle - 1))
    return search(0, len(groups) - 1)

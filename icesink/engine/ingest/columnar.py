"""pgoutput's row messages decoded and folded a batch at a time, with numpy and Arrow, instead of a Python object per
change and per value (pgoutput.py, subsource.py `stage`), which cost 6-7 µs a change between them.

A batch's messages are grouped by table; each table's tuples are read a column at a time across all of its messages
(a column's kind, length and bytes at each message's position, which then moves past it), and each column becomes an
Arrow array. The changes are then folded per key as `Subsource.stage` folds them, one change at a time: a key ends
the batch with the row of its last insert or update, or deleted. Batches this cannot take whole (a truncate, an
unchanged TOASTed value, a table without a key, a table described anew, a value in binary form) raise
`NotColumnar`, and the replication decodes that batch a message at a time instead."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .copy import PLAIN_TYPES, base_schema, stored_columns, stored_rows
from .pgoutput import Decoder, Relation

_INSERT, _UPDATE, _DELETE, _RELATION, _NEW, _KEY, _OLD, _TEXT, _NULL = b"IUDRNKOtn"
_SKIPPED = b"BCOYM"  # begin, commit, origin, type, logical message: nothing to apply
# key columns whose printed form is the one value Postgres holds: a key is the same key exactly when its text is
_KEY_TYPES = PLAIN_TYPES | {"uuid", "date", "timestamp", "timestamp with time zone", "boolean"}


class NotColumnar(Exception):
    """This batch is decoded a message at a time (the reason is the message)."""


@dataclass
class Folded:
    """A table's changes in a batch, folded per key and sorted by it: the keys deleted, and the rows the others end
    with (a list of values per column), as the store keeps values."""
    deleted: list[tuple]
    columns: list[list]
    relation: Relation  # the description the batch was decoded by

    @property
    def rows(self) -> list[tuple]:
        return list(zip(*self.columns))


def relations_in(taken) -> dict[int, Relation]:
    """The tables the batch's Relation messages describe, by oid (the last description of each)."""
    probe = Decoder()
    kinds = np.frombuffer(taken.data, dtype=np.uint8)[taken.starts]
    for index in np.flatnonzero(kinds == _RELATION):
        probe.feed(taken.message(int(index)))
    return probe.relations


def fold(taken, decoder: Decoder, subsources: dict[str, object], after: int) -> dict[str, Folded]:
    """The row changes of the batch's transactions that end after LSN `after`, folded per key for each subsource
    (by qualified name) they belong to; changes to tables no subsource replicates are left out, and so are those a
    subsource's copy holds (transactions ending at or before its `copied_at`). Raises NotColumnar, having changed
    nothing, for a batch that must be decoded a message at a time."""
    for oid, fresh in relations_in(taken).items():
        if decoder.relations.get(oid) != fresh:  # new, renamed, or with other columns, types, key or identity
            raise NotColumnar(f"table {fresh.qualified} is described anew")
    buffer = np.frombuffer(taken.data, dtype=np.uint8)
    starts = taken.starts
    kinds = buffer[starts]
    unknown = ~np.isin(kinds, np.frombuffer(b"IUDR" + _SKIPPED, dtype=np.uint8))
    if unknown.any():
        raise NotColumnar(f"a message of kind {chr(kinds[np.flatnonzero(unknown)[0]])!r}")
    end_lsn = np.repeat(np.asarray(taken.end_lsns, dtype=np.int64),
                        np.diff(np.asarray(taken.ends, dtype=np.int64), prepend=0))
    rows = np.flatnonzero(np.isin(kinds, np.frombuffer(b"IUD", dtype=np.uint8)) & (end_lsn > after))
    oids = _be(buffer, starts[rows] + 1, 4)
    folded = {}
    for oid in np.unique(oids):
        relation = decoder.relations.get(int(oid))
        if relation is None:
            raise NotColumnar(f"a change to table oid {oid}, not described yet")
        sub = subsources.get(relation.qualified)
        if sub is None:
            continue
        if sub.relation is not relation or not sub.key or len(sub.key) == len(sub.columns):
            # a table of key columns alone writes an existing row again without a trigger's old row: the segment
            # would hold its new row twice
            raise NotColumnar(f"table {relation.qualified} is not bound yet, has no key, or has nothing but a key")
        if any(c.type not in _KEY_TYPES for c in sub.columns if c.name in sub.key):
            raise NotColumnar(f"table {relation.qualified} has a key whose values compare otherwise than their text")
        mine = rows[(oids == oid) & (end_lsn[rows] > sub.copied_at)]
        if len(mine):
            folded[relation.qualified] = _fold(buffer, starts[mine], kinds[mine], relation, sub)
    return folded


def _fold(buffer: np.ndarray, starts: np.ndarray, kinds: np.ndarray, relation: Relation, sub) -> Folded:
    """One table's changes: each message's tuples read a column at a time, then folded per key."""
    width = len(relation.columns)
    marker = buffer[starts + 5]
    has_old = (kinds != _INSERT) & ((marker == _KEY) | (marker == _OLD))
    carries_new = kinds != _DELETE
    if ((kinds == _DELETE) & ~has_old).any() or (carries_new & ~has_old & (marker != _NEW)).any():
        raise NotColumnar("a row message of an unknown form")
    old, old_end = _tuples(buffer, starts[has_old] + 6, width)
    old_msgs, new_msgs = np.flatnonzero(has_old), np.flatnonzero(carries_new)
    updates_old = carries_new[old_msgs]  # old tuples of updates (the rest are deletions')
    if (buffer[old_end[updates_old]] != _NEW).any():
        raise NotColumnar("an update without its new tuple")
    new_at = starts + 6
    new_at[old_msgs] = old_end + 1
    new, _ = _tuples(buffer, new_at[new_msgs], width)

    schema = base_schema(sub.columns)
    new_rows = pa.RecordBatch.from_arrays(
        [_array(buffer, new[p], schema.field(i).type) for i, p in enumerate(sub.positions)], schema=schema)
    local = [[c.name for c in sub.columns].index(k) for k in sub.key]
    new_keys = [new_rows.column(i) for i in local]
    old_keys = [_array(buffer, old[sub.positions[i]], schema.field(i).type) for i in local]

    # an update that moves a row to another key deletes the old key first: events are ordered by 2 × the message's
    # place, plus one for a row set (or a deletion)
    gone = ~updates_old
    if updates_old.any():
        updated = np.flatnonzero(updates_old)
        new_of = np.cumsum(carries_new) - 1  # a message's place among the new tuples
        same = np.ones(len(updated), dtype=bool)
        for old_key, new_key in zip(old_keys, new_keys):
            same &= pc.fill_null(pc.equal(old_key.take(updated), new_key.take(new_of[old_msgs[updated]])),
                                 False).to_numpy(zero_copy_only=False)
        gone[updated[~same]] = True
    gone_at = old_msgs[gone]
    events = pa.table({
        **{f"k{i}": pa.chunked_array([new_keys[i], old_keys[i].filter(pa.array(gone))], new_keys[i].type)
           for i in range(len(local))},
        "seq": np.concatenate([2 * new_msgs + 1, 2 * gone_at + (kinds[gone_at] == _DELETE)]),
        "ref": np.concatenate([np.arange(len(new_msgs), dtype=np.int64), np.full(len(gone_at), -1, np.int64)])})
    names = [f"k{i}" for i in range(len(local))]
    events = events.sort_by([(name, "ascending") for name in names] + [("seq", "ascending")])
    last = np.ones(events.num_rows, dtype=bool)  # a key's last event, in the batch's order
    if events.num_rows > 1:
        differs = np.zeros(events.num_rows - 1, dtype=bool)
        for name in names:
            keys = events.column(name)
            differs |= pc.not_equal(keys.slice(0, events.num_rows - 1), keys.slice(1)).to_numpy(
                zero_copy_only=False)
        last[:-1] = differs
    final = events.filter(pa.array(last))
    refs = final.column("ref").to_numpy()
    kept = refs >= 0
    key_columns = [sub.columns[i] for i in local]
    deleted = final.filter(pa.array(~kept))
    deleted_keys = pa.RecordBatch.from_arrays([deleted.column(name).combine_chunks() for name in names],
                                              names=[c.name for c in key_columns])
    return Folded(stored_rows(deleted_keys, key_columns),
                  stored_columns(new_rows.take(pa.array(refs[kept])), sub.columns), relation)


def _be(buffer: np.ndarray, at: np.ndarray, size: int) -> np.ndarray:
    """The big-endian unsigned integers of `size` bytes at each position."""
    value = np.zeros(len(at), dtype=np.int64)
    for offset in range(size):
        value = (value << 8) | buffer[at + offset]
    return value


def _tuples(buffer: np.ndarray, at: np.ndarray, width: int):
    """The TupleData at each position, a column at a time: for each column (is a value there, where its bytes
    start, how many); and where each tuple ends."""
    if (_be(buffer, at, 2) != width).any():
        raise NotColumnar("a tuple of another width than its table's")
    at = at + 2
    columns = []
    for _ in range(width):
        kind = buffer[at]
        text = kind == _TEXT
        if not (text | (kind == _NULL)).all():
            raise NotColumnar("an unchanged TOASTed value, or a value in binary form")
        length = np.zeros(len(at), dtype=np.int64)
        length[text] = _be(buffer, at[text] + 1, 4)
        columns.append((text, at + 5, length))
        at = at + 1 + np.where(text, 4 + length, 0)
    return columns, at


def _array(buffer: np.ndarray, column, target: pa.DataType) -> pa.Array:
    """A column's values as an Arrow string array (or int64 for the integer types, as a base holds them)."""
    valid, start, length = column
    length = np.where(valid, length, 0)
    offsets = np.zeros(len(length) + 1, dtype=np.int64)
    np.cumsum(length, out=offsets[1:])
    total = int(offsets[-1])
    if total >= 2 ** 31:
        raise NotColumnar("a column of over 2 GiB in one batch")
    data = buffer[np.repeat(start - offsets[:-1], length) + np.arange(total)] if total else np.zeros(0, np.uint8)
    array = pa.Array.from_buffers(pa.string(), len(length), [pa.py_buffer(np.packbits(valid, bitorder="little")),
                                                             pa.py_buffer(offsets.astype(np.int32)),
                                                             pa.py_buffer(data)], null_count=int((~valid).sum()))
    array.validate(full=True)  # UTF-8, as the message-at-a-time decoder checks it
    return array.cast(target) if target == pa.int64() else array

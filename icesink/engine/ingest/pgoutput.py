"""Postgres's built-in logical decoding output (`pgoutput`, protocol version 1), as the streaming replication
protocol carries it: one message per XLogData. Values arrive in Postgres's text output form, which is
also the form icesink's engine tables take in. Messages icesink has no use for (Origin, Type, logical messages)
are skipped."""
from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Optional

UNCHANGED = object()  # an unchanged TOASTed value: Postgres did not send it, the row keeps the one it has
BEGIN, COMMIT, _RELATION, _INSERT, _UPDATE, _DELETE, _TRUNCATE, _NEW = b"BCRIUDTN"  # message kinds
_TEXT, _NULL, _UNCHANGED = b"tnu"
_OID, _SHORT, _INT = (struct.Struct(form).unpack_from for form in (">I", ">h", ">i"))
COMMIT_FIELDS = struct.Struct(">bqqq")  # after the kind: flags, the commit's LSN, the end of the transaction, its time


@dataclass
class Relation:
    oid: int
    schema: str
    name: str
    replica_identity: str
    columns: list[str]
    key_columns: list[str]  # the columns of the replica identity
    types: list[tuple[int, int]]  # each column's type oid and type modifier

    @property
    def qualified(self) -> str:
        return f"{self.schema}.{self.name}"


@dataclass(slots=True)
class Change:
    kind: str  # 'insert', 'update', 'delete', 'truncate'
    # the table as described when the change was decoded (a later Relation message may describe it otherwise);
    # truncate: see `relations`
    relation: Optional[Relation]
    new: Optional[list] = None  # values by column position; None (NULL), str, or UNCHANGED
    old: Optional[list] = None  # the replica identity's old values ('K': key columns only, others None) or the row
    relations: tuple[Relation, ...] = ()


@dataclass
class Transaction:
    end_lsn: int  # where the commit ends: confirming it confirms the whole transaction
    commit_ts: int  # microseconds since 2000-01-01, Postgres's epoch
    changes: list[Change] = field(default_factory=list)


class Decoder:
    """Turns messages into whole transactions, remembering the relations described so far."""

    def __init__(self):
        self.relations: dict[int, Relation] = {}
        self._open: Optional[Transaction] = None

    @property
    def in_transaction(self) -> bool:
        return self._open is not None

    def feed(self, data: bytes) -> Optional[Transaction]:
        """One message; returns the transaction its Commit completes. Row messages, by far the most, come first."""
        kind = data[0]
        if kind == _UPDATE:
            relation = self.relations[_OID(data, 1)[0]]
            old = None
            if data[5] != _NEW:  # 'K' or 'O': the old values come first
                old, at = _tuple(data, 6)
                new, _ = _tuple(data, at + 1)
            else:
                new, _ = _tuple(data, 6)
            self._open.changes.append(Change("update", relation, new, old))
        elif kind == _INSERT:
            self._open.changes.append(Change("insert", self.relations[_OID(data, 1)[0]],
                                             _tuple(data, 6)[0]))  # after 'N'
        elif kind == _DELETE:
            self._open.changes.append(Change("delete", self.relations[_OID(data, 1)[0]], None,
                                             _tuple(data, 6)[0]))  # after 'K'/'O'
        elif kind == BEGIN:
            self._open = Transaction(0, struct.unpack_from(">q", data, 9)[0])
        elif kind == COMMIT:
            _flags, _commit_lsn, end_lsn, ts = COMMIT_FIELDS.unpack_from(data, 1)
            done, self._open = self._open, None
            done.end_lsn, done.commit_ts = end_lsn, ts
            return done
        elif kind == _RELATION:
            self._relation(data)
        elif kind == _TRUNCATE:
            count = _OID(data, 1)[0]
            oids = struct.unpack_from(f">{count}I", data, 6)
            self._open.changes.append(Change("truncate", None, relations=tuple(self.relations[o] for o in oids)))
        return None

    def _relation(self, data: bytes) -> None:
        oid = struct.unpack_from(">I", data, 1)[0]
        schema, at = _string(data, 5)
        name, at = _string(data, at)
        identity = chr(data[at])
        count = struct.unpack_from(">h", data, at + 1)[0]
        at += 3
        columns, keys, types = [], [], []
        for _ in range(count):
            flags = data[at]
            column, at = _string(data, at + 1)
            types.append(struct.unpack_from(">Ii", data, at))
            at += 8
            columns.append(column)
            if flags & 1:
                keys.append(column)
        self.relations[oid] = Relation(oid, schema, name, identity, columns, keys, types)


def _string(data: bytes, at: int) -> tuple[str, int]:
    end = data.index(b"\0", at)
    return data[at:end].decode(), end + 1


def _tuple(data: bytes, at: int) -> tuple[list, int]:
    count = _SHORT(data, at)[0]
    at += 2
    values = []
    append = values.append
    for _ in range(count):
        kind = data[at]
        if kind == _TEXT:
            length = _INT(data, at + 1)[0]
            at += 5 + length
            append(data[at - length:at].decode())
        elif kind == _NULL:
            append(None)
            at += 1
        elif kind == _UNCHANGED:
            append(UNCHANGED)
            at += 1
        else:  # 'b', binary, is only sent when asked for
            raise ValueError(f"pgoutput sent a value of kind {chr(kind)!r}, which icesink does not ask for")
    return values, at


def lsn_int(text: str) -> int:
    high, low = text.split("/")
    return (int(high, 16) << 32) | int(low, 16)


def lsn_text(value: int) -> str:
    return f"{value >> 32:X}/{value & 0xFFFFFFFF:X}"

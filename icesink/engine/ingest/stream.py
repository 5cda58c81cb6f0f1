"""A source's replication slot as a stream of whole transactions, read by a process of its own (slot_reader.py):
Postgres decodes its WAL, and the reader takes it off the socket, while the replication applies the batch before.
With pg_logical_slot_peek_binary_changes, which reads from the slot's confirmed position each time, the next batch
could only be read once this one was applied. A take hands over whole transactions as frames, undecoded: the
replication decodes them a batch at a time (columnar.py), or one message at a time where a batch needs it
(pgoutput.Decoder)."""
from __future__ import annotations

import collections
import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .pgoutput import BEGIN, COMMIT, COMMIT_FIELDS, Decoder, Transaction
from .slot_reader import LENGTH, LSN, CAUGHT_UP, FAILED

CHUNK = 1 << 20


class StreamFailed(Exception):
    """The reader stopped: `stage` ('connect', 'stream' or 'read'), Postgres's SQLSTATE `code` (None when the
    connection was the cause), its message, and whether the connection was lost."""

    def __init__(self, stage: str, code: str | None, text: str, lost: bool):
        super().__init__(text)
        self.stage, self.code, self.lost = stage, code, lost


_ROWS = frozenset(b"IUD")


@dataclass
class Taken:
    """Whole transactions as the slot sent them: message i is data[starts[i]:starts[i] + lengths[i]]; transaction
    k is messages ends[k - 1] (0 for the first) up to ends[k], and its commit ends at end_lsns[k]."""
    data: bytes
    starts: np.ndarray
    lengths: np.ndarray
    ends: list[int]
    end_lsns: list[int]

    @classmethod
    def of(cls, messages: list[bytes], ends: list[int], end_lsns: list[int]) -> Taken:
        """Messages held apart (a slot peeked with SQL, a benchmark's), as a take hands them over."""
        lengths = np.array([len(m) for m in messages], dtype=np.int64)
        starts = np.zeros(len(messages), dtype=np.int64)
        np.cumsum(lengths[:-1], out=starts[1:])
        return cls(b"".join(messages), starts, lengths, ends, end_lsns)

    @property
    def end_lsn(self) -> int | None:
        return self.end_lsns[-1] if self.end_lsns else None

    def message(self, index: int) -> bytes:
        start = int(self.starts[index])
        return self.data[start:start + int(self.lengths[index])]

    def decode(self, decoder: Decoder) -> list[Transaction]:
        """The transactions decoded a message at a time."""
        found = []
        for index in range(len(self.starts)):
            transaction = decoder.feed(self.message(index))
            if transaction is not None:
                found.append(transaction)
        return found


class SlotStream:
    """The slot's transactions, in commit order, from `start` on. About `bound` bytes of messages are held in this
    process and as many in the reader's, so memory stays flat however far behind the replication is."""

    def __init__(self, connector, slot: str, publication: str, start: int, stopping: threading.Event, bound: int):
        self.connector, self.stopping, self.bound = connector, stopping, bound
        self.request = {**connector.replication_parameters(), "slot": slot, "publication": publication,
                        "start": start, "bound": bound}
        self.decoder = Decoder()
        self._chunks: collections.deque[bytes] = collections.deque()
        self._held = 0  # bytes in `_chunks`
        # the open transaction's frames read so far, in parts (each read once however large the transaction), and
        # their starts and lengths as offsets into the parts joined; then what was not read: a part of a frame, or
        # frames past the last take's limit
        self._open_parts: list[bytes] = []
        self._open_size = 0
        self._open: tuple[list[int], list[int]] = ([], [])
        self._open_changes = 0
        self._tail = b""
        self._more = False  # `_tail` holds whole transactions
        self._ready = threading.Condition()
        self._ended = False
        self._failure: StreamFailed | None = None
        self._messages = self._bytes = 0  # taken since `received` was last called
        self._caught_up = 0
        self._process: subprocess.Popen | None = None
        self._receiver = threading.Thread(target=self._receive, name=f"slot {slot}", daemon=True)

    def __enter__(self) -> SlotStream:
        root = str(Path(__file__).resolve().parents[3])  # this icesink, whichever is installed
        path = os.pathsep.join(filter(None, (root, os.environ.get("PYTHONPATH"))))
        self._process = subprocess.Popen([sys.executable, "-m", "icesink.engine.ingest.slot_reader"],
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                         bufsize=0, env={**os.environ, "PYTHONPATH": path})
        request = json.dumps(self.request).encode()
        self.request = None  # the secrets are in the reader's hands only
        self._process.stdin.write(LENGTH.pack(len(request)) + request)
        self._receiver.start()
        return self

    def __exit__(self, *exc) -> None:
        try:
            self._process.stdin.close()  # the reader stops
        except OSError:
            pass
        try:  # it notices within a second, unless its output is full and nobody reads it any more
            self._process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        with self._ready:
            self._ended = True
            self._ready.notify_all()
        self._receiver.join(timeout=10)

    def confirm(self, lsn: int) -> None:
        """Everything up to `lsn` is held durably: the slot may let it go."""
        try:
            self._process.stdin.write(LSN.pack(lsn))
        except OSError:  # the reader has ended: its failure is what the next take raises
            pass

    def take(self, limit: int, wait: float) -> Taken:
        """Whole transactions of up to `limit` changes (one transaction may pass it), waiting up to `wait` seconds
        for the first message; raises what stopped the reader once what it read before is taken."""
        deadline = time.monotonic() + wait
        with self._ready:
            while not self._chunks and not self._more and not self._ended and not self.stopping.is_set():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._ready.wait(remaining)
            data = self._tail + b"".join(self._chunks)
            self._chunks.clear()
            self._held = 0
            self._ready.notify_all()
        base = self._open_size  # where `data` begins among the open transaction's bytes
        starts, lengths = self._open
        ends, end_lsns = [], []
        changes, pending, at, cut = 0, self._open_changes, 0, None
        unpack, size = LENGTH.unpack_from, len(data)
        while size - at >= 4 and changes < limit:
            length = unpack(data, at)[0]
            if length == CAUGHT_UP:
                if size - at < 12:
                    break
                self._caught_up = LSN.unpack_from(data, at + 4)[0]
                at += 12
                continue
            if length == FAILED:  # the last frame
                framed = LENGTH.unpack_from(data, at + 4)[0] if size - at >= 8 else size
                if size - at - 8 >= framed:
                    self._failure = StreamFailed(**json.loads(data[at + 8:at + 8 + framed]))
                    at = size
                break
            if size - at - 4 < length:
                break
            kind = data[at + 4]
            starts.append(base + at + 4)
            lengths.append(length)
            self._messages += 1
            self._bytes += length
            at += 4 + length
            if kind in _ROWS:
                pending += 1
            elif kind == COMMIT:
                ends.append(len(starts))
                end_lsns.append(COMMIT_FIELDS.unpack_from(data, at - length + 1)[2])
                changes, pending, cut = changes + pending, 0, at
            elif kind == BEGIN:
                pending = 0
        whole = ends[-1] if ends else 0
        taken = Taken(b"".join(self._open_parts + [data[:cut]]) if ends else b"",
                      np.array(starts[:whole], dtype=np.int64), np.array(lengths[:whole], dtype=np.int64),
                      ends, end_lsns)
        if not ends and base:  # the open transaction goes on: what was read waits with the rest of it
            self._open_parts.append(data[:at])
            self._open_size += at
        elif len(starts) > whole:  # a transaction began: its frames are kept from its first one on
            keep = starts[whole] - base - 4
            self._open_parts, self._open_size = [data[keep:at]], at - keep
            starts, lengths = [start - base - keep for start in starts[whole:]], lengths[whole:]
        else:
            self._open_parts, self._open_size, starts, lengths = [], 0, [], []
        self._open, self._open_changes = (starts, lengths), pending
        self._tail = data[at:]
        self._more = changes >= limit
        if not ends and self._failure is not None:  # what came before it was taken
            raise self._failure
        if not ends and self._ended and self._failure is None and not self.stopping.is_set():
            try:
                code = self._process.wait(timeout=1)
            except subprocess.TimeoutExpired:
                code = None
            ended = f"killed by signal {-code}" if code is not None and code < 0 else f"exit code {code}"
            raise StreamFailed("read", None, f"the slot's reader ended ({ended})", False)
        return taken

    def received(self) -> tuple[int, int, int]:
        """Messages and bytes taken since the last call, and a WAL end up to which every transaction is taken
        (0: unknown). Called by the thread that takes."""
        messages, size, self._messages, self._bytes = self._messages, self._bytes, 0, 0
        return messages, size, 0 if self._tail or self._open_size else self._caught_up

    def _receive(self) -> None:
        output = self._process.stdout
        while True:
            with self._ready:
                while self._held >= self.bound and not self._ended:
                    self._ready.wait()
                if self._ended:
                    return
            chunk = output.read(CHUNK)
            with self._ready:
                if not chunk:
                    self._ended = True
                else:
                    self._chunks.append(chunk)
                    self._held += len(chunk)
                self._ready.notify_all()
            if not chunk:
                return

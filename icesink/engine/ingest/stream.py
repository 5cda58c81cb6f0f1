"""A source's replication slot as a stream of whole transactions, read by a process of its own (slot_reader.py):
Postgres decodes its WAL, and the reader takes it off the socket, while the replication applies the batch before.
With pg_logical_slot_peek_binary_changes, which reads from the slot's confirmed position each time, the next batch
could only be read once this one was applied. Messages are decoded here, by the thread that applies them."""
from __future__ import annotations

import collections
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from .pgoutput import Decoder, Transaction
from .slot_reader import LENGTH, LSN, CAUGHT_UP, FAILED

CHUNK = 1 << 20


class StreamFailed(Exception):
    """The reader stopped: `stage` ('connect', 'stream' or 'read'), Postgres's SQLSTATE `code` (None when the
    connection was the cause), its message, and whether the connection was lost."""

    def __init__(self, stage: str, code: str | None, text: str, lost: bool):
        super().__init__(text)
        self.stage, self.code, self.lost = stage, code, lost


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
        self._rest = b""  # what the last take did not decode: part of a frame, or frames past its limit
        self._more = False  # `_rest` holds whole frames
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

    def take(self, limit: int, wait: float) -> list[Transaction]:
        """Whole transactions of up to `limit` changes (one transaction may pass it), waiting up to `wait` seconds
        for the first message; raises what stopped the reader once what it read before is taken."""
        deadline = time.monotonic() + wait
        with self._ready:
            while not self._chunks and not self._more and not self._ended and not self.stopping.is_set():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._ready.wait(remaining)
            data = self._rest + b"".join(self._chunks)
            self._chunks.clear()
            self._held = 0
            self._ready.notify_all()
        taken, changes, at = [], 0, 0
        feed, unpack = self.decoder.feed, LENGTH.unpack_from
        while len(data) - at >= 4 and changes < limit:
            length = unpack(data, at)[0]
            if length == CAUGHT_UP:
                if len(data) - at < 12:
                    break
                self._caught_up = LSN.unpack_from(data, at + 4)[0]
                at += 12
                continue
            if length == FAILED:  # the last frame
                size = LENGTH.unpack_from(data, at + 4)[0] if len(data) - at >= 8 else len(data)
                if len(data) - at - 8 >= size:
                    self._failure = StreamFailed(**json.loads(data[at + 8:at + 8 + size]))
                    at = len(data)
                break
            if len(data) - at - 4 < length:
                break
            transaction = feed(data[at + 4:at + 4 + length])
            self._messages += 1
            self._bytes += length
            at += 4 + length
            if transaction is not None:
                taken.append(transaction)
                changes += len(transaction.changes)
        self._rest, self._more = data[at:], changes >= limit
        if not taken and self._failure is not None and not self._rest:
            raise self._failure
        if not taken and self._ended and self._failure is None and not self.stopping.is_set():
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
        return messages, size, 0 if self._rest else self._caught_up

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

"""A process of its own that reads a source's replication slot with Postgres's streaming replication protocol
(START_REPLICATION, through psycopg2: psycopg 3 has no replication connection) and passes the pgoutput messages on,
undecoded, to the replication (stream.py). In a thread of the replication's process it would compete with the
store's writer for the interpreter's lock, which SQLite gives back at every row.

Its standard input carries the request (a length and JSON: connection parameters, secrets included, so that they
are never in arguments, files or the environment), then the positions the replication holds durably, 8 bytes each,
which it confirms to the slot in the protocol's status updates. Its standard output carries frames: a length and a
message, or a marker length and what it marks (CAUGHT_UP, FAILED). It stops when its standard input closes, as when
the replication's process ends however it ends.

psycopg2 moves the confirmed position on to a keepalive's WAL end once every message it received is confirmed. A
server sends a keepalive in the middle of a transaction only to a client silent for half of wal_sender_timeout, and
this process sends a status update every second, also while it waits for the replication to take what it holds."""
from __future__ import annotations

import json
import os
import select
import struct
import sys
import time

from icesink.engine.ingest.pgoutput import BEGIN, COMMIT

CAUGHT_UP = 0xFFFFFFFE  # then 8 bytes: a WAL end up to which every transaction was sent before this frame
FAILED = 0xFFFFFFFF  # then a length and JSON: {"stage", "code", "text", "lost"}; the last frame
STATUS_SECONDS = 1.0
LENGTH, LSN = struct.Struct(">I"), struct.Struct(">Q")


def _read_exactly(fd: int, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = os.read(fd, size - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return data


class _Reader:
    def __init__(self, request: dict):
        self.request = request
        self.outbox = bytearray()
        self.bound = request["bound"]  # bytes held here before reading stops
        self.confirmed = request["start"]
        self.pending = b""  # a part of an LSN on standard input
        self.in_transaction = False
        self.caught_up = 0

    def run(self) -> None:
        import psycopg2
        import psycopg2.extras

        from icesink.catalog_connections.postgres import in_memory_files

        request = self.request
        stage = "connect"
        try:
            with in_memory_files(request["files"]) as paths:
                connection = psycopg2.connect(connection_factory=psycopg2.extras.LogicalReplicationConnection,
                                              **request["params"], **paths)
            stage = "stream"
            cursor = connection.cursor()
            cursor.start_replication(
                slot_name=request["slot"], decode=False, start_lsn=request["start"], status_interval=STATUS_SECONDS,
                options={"proto_version": "1",
                         "publication_names": '"' + request["publication"].replace('"', '""') + '"'})
            self._stream(cursor)
        except psycopg2.Error as exc:
            lost = exc.pgcode is None or isinstance(exc, (psycopg2.OperationalError, psycopg2.InterfaceError))
            self._fail(stage, exc.pgcode, str(exc).strip(), lost)
        except (BrokenPipeError, EOFError):  # the replication has ended
            pass
        except Exception as exc:  # said to the replication, which stalls with it, as any failure is
            self._fail("read", None, f"{type(exc).__name__}: {exc}", False)

    def _fail(self, stage: str, code: str | None, text: str, lost: bool) -> None:
        """What was read before the failure, then the failure."""
        report = json.dumps({"stage": stage, "code": code, "text": text, "lost": lost}).encode()
        self.outbox += LENGTH.pack(FAILED) + LENGTH.pack(len(report)) + report
        os.set_blocking(1, True)
        while self.outbox:
            del self.outbox[:os.write(1, self.outbox)]

    def _stream(self, cursor) -> None:
        os.set_blocking(0, False)
        os.set_blocking(1, False)
        sent, status = self.confirmed, time.monotonic()
        while True:
            if not self._confirmations():
                return
            if self.confirmed > sent:
                sent, status = self.confirmed, time.monotonic()
                cursor.send_feedback(flush_lsn=sent, force=True)
            elif time.monotonic() - status >= STATUS_SECONDS:  # read_message may not be called while held
                status = time.monotonic()
                cursor.send_feedback(force=True)
            idle = len(self.outbox) < self.bound and self._read(cursor)
            if self.outbox:
                try:
                    written = os.write(1, self.outbox)
                    del self.outbox[:written]
                except BlockingIOError:
                    pass
            if idle or self.outbox:
                select.select([cursor.connection, 0] if idle else [0], [1] if self.outbox else [], [],
                              STATUS_SECONDS)

    def _read(self, cursor) -> bool:
        """Reads what the server has sent, up to the bound; True when nothing more is there now."""
        outbox, pack = self.outbox, LENGTH.pack
        while len(outbox) < self.bound:
            message = cursor.read_message()
            if message is None:
                if not self.in_transaction and cursor.wal_end > self.caught_up:
                    self.caught_up = cursor.wal_end
                    outbox += pack(CAUGHT_UP) + LSN.pack(self.caught_up)
                return True
            payload = message.payload
            kind = payload[0]
            if kind == BEGIN:
                self.in_transaction = True
            elif kind == COMMIT:
                self.in_transaction = False
            outbox += pack(len(payload))
            outbox += payload
        return False

    def _confirmations(self) -> bool:
        """Takes the confirmed positions sent so far; False when standard input has closed."""
        try:
            data = os.read(0, 1 << 16)
        except BlockingIOError:
            return True
        if not data:
            return False
        data = self.pending + data
        whole = len(data) - len(data) % 8
        for at in range(0, whole, 8):
            self.confirmed = max(self.confirmed, LSN.unpack_from(data, at)[0])
        self.pending = data[whole:]
        return True


def main() -> None:
    try:
        request = json.loads(_read_exactly(0, LENGTH.unpack(_read_exactly(0, 4))[0]))
        _Reader(request).run()
    except (BrokenPipeError, EOFError, KeyboardInterrupt):  # the replication has ended
        pass


if __name__ == "__main__":
    sys.exit(main())

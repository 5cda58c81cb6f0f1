"""How the replication takes the slot reader's output (engine/ingest/stream.py SlotStream.take): whatever the pieces
the pipe delivers it in (a frame cut anywhere, a transaction spread over many takes, CAUGHT_UP markers between
frames), every take hands over whole transactions only, in order, each message once, and says it is caught up
only when nothing it read is left over."""
from __future__ import annotations

import random
import struct
import threading
import types

import pytest

from icesink.engine.ingest.slot_reader import CAUGHT_UP, LENGTH, LSN
from icesink.engine.ingest.stream import SlotStream


def _stream() -> SlotStream:
    connector = types.SimpleNamespace(replication_parameters=lambda: {})
    return SlotStream(connector, "slot", "pub", 0, threading.Event(), 1 << 20)


def _transactions(rng: random.Random, count: int) -> list[list[bytes]]:
    found, lsn = [], 100
    for _ in range(count):
        lsn += rng.randrange(1, 50)
        rows = [bytes([rng.choice(b"IUD")]) + rng.randbytes(rng.randrange(5, 40)) for _ in range(rng.randrange(0, 60))]
        found.append([b"B" + bytes(20)] + rows + [b"C" + struct.pack(">bqqq", 0, lsn - 1, lsn, 0)])
    return found


@pytest.mark.parametrize("seed", range(6))
def test_takes_hand_over_whole_transactions_in_order_however_the_output_is_cut(seed):
    rng = random.Random(seed)
    transactions = _transactions(rng, 80 if seed else 3)
    output = b""
    for messages in transactions:
        for message in messages:
            output += LENGTH.pack(len(message)) + message
            if rng.random() < 0.02:
                output += LENGTH.pack(CAUGHT_UP) + LSN.pack(7)
    stream = _stream()
    taken_messages, taken_lsns, cuts = [], [], sorted(rng.sample(range(1, len(output)), 40 if seed else 2))
    pieces = [output[a:b] for a, b in zip([0] + cuts, cuts + [len(output)])]
    if seed == 0:  # one transaction arriving a few bytes at a time over many takes
        pieces = [output[i:i + 7] for i in range(0, len(output), 7)]
    while pieces or stream._tail:
        if pieces:
            stream._chunks.append(pieces.pop(0))
        taken = stream.take(rng.choice([1, 10, 1000]), 0)
        assert len(taken.ends) == len(taken.end_lsns)
        first = 0
        for end, lsn in zip(taken.ends, taken.end_lsns):
            messages = [taken.message(i) for i in range(first, end)]
            assert messages[0][:1] == b"B" and messages[-1][:1] == b"C"  # whole transactions only
            taken_messages.append(messages)
            taken_lsns.append(lsn)
            first = end
        _, _, caught_up = stream.received()
        assert caught_up in (0, 7) and (caught_up == 0 or not (stream._tail or stream._open_size))
        if not pieces and not taken.ends and not stream._more:
            break
    assert taken_messages == transactions
    assert taken_lsns == [struct.unpack_from(">q", t[-1], 10)[0] for t in transactions]
    assert not stream._open_size and not stream._tail

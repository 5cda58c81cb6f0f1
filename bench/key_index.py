"""The merge-on-read writer's key lookups (`engine/sink/key_index.py`) for a key of two columns, as seed 004's view
has (user, hour): the time to locate a batch's keys among a table's, by bisection of the index's ORDERED bytes
against a hash join with each file's keys (how such a key was located before):

    .venv/bin/python bench/key_index.py [--tables 1000000,2400000,7400000] [--keys 200000] [--files 12] [--rounds 5]

Each table's keys are spread over --files data files, each file's index built as a writer builds it; the keys
looked up are drawn from the table's. Prints the median time of --rounds lookups each way.
A figure, not a test.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from icesink.engine.sink.key_index import KeyIndex  # noqa: E402

HOUR_US = 3_600_000_000


def keys_of(count: int, rng) -> pa.Table:
    """`count` distinct (user, hour) keys: users of 0..count/24, each with some of a day's 24 hours."""
    codes = rng.choice(count * 2, size=count, replace=False)
    return pa.table({"user_id": pa.array(codes // 48, pa.int64()),
                     "hour": pa.array((1_793_491_200_000_000 + (codes % 48) * HOUR_US).astype("datetime64[us]"))})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tables", default="1000000,2400000,7400000")
    parser.add_argument("--keys", type=int, default=200_000)
    parser.add_argument("--files", type=int, default=12)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    rng = np.random.default_rng(4)
    for size in (int(n) for n in args.tables.split(",")):
        with tempfile.TemporaryDirectory() as directory:
            index = KeyIndex(directory, ["user_id", "hour"])
            table = keys_of(size, rng)
            files = []
            for n, part in enumerate(np.array_split(np.arange(size), args.files)):
                path = f"file:///data/{n}.parquet"
                index.add(path, table.take(pa.array(part)))
                files.append((path, n + 1))
            wanted = table.take(pa.array(rng.choice(size, size=args.keys, replace=False)))
            times = {"bisection": [], "hash join": []}
            for _ in range(args.rounds):
                start = time.perf_counter()
                bisected = index.locate(files, wanted, None)
                times["bisection"].append(time.perf_counter() - start)
                start = time.perf_counter()
                joined = index._locate_joined(sorted(files, key=lambda f: -f[1]), wanted, None)
                times["hash join"].append(time.perf_counter() - start)
            assert {p: list(v) for p, v in bisected.items()} == {p: list(v) for p, v in joined.items()}
            assert sum(len(v) for v in bisected.values()) == args.keys
            print(f"{size:>10,} keys in {args.files} files, {args.keys:,} located: " + ", ".join(
                f"{how} {statistics.median(t):.3f} s" for how, t in times.items()), flush=True)


if __name__ == "__main__":
    main()

"""How fast LOAD GENERATOR TPCH makes its snapshot, one core, without Spark (each piece is one Spark task):

    .venv/bin/python bench/tpch.py [--scale 0.1]

Prints, per table, the rows of the snapshot at --scale and the rows/s of generating them (engine/sources/tpch.py).
A figure, not a test.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from icesink.engine.sources import tpch  # noqa: E402

TABLES = ("region", "nation", "supplier", "customer", "part", "partsupp", "orders", "lineitem")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scale", type=float, default=0.1)
    args = parser.parse_args()
    for table in TABLES:
        began, rows = time.perf_counter(), 0
        for first, last, _ in tpch.snapshot_parts(table, args.scale):
            columns = tpch.snapshot_rows(table, args.scale, first, last)
            rows += len(next(iter(columns.values())))
        took = time.perf_counter() - began
        print(f"{table}: {rows:,} rows in {took:.2f}s, {rows / took:,.0f} rows/s", flush=True)


if __name__ == "__main__":
    main()

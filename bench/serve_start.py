"""How long `icesink serve` takes from its start to its sinks' first commits, and the CPU its processes took by then:

    .venv/bin/python bench/serve_start.py [--runs 3] [--other CHECKOUT]

Two load generator sinks (an append of a counter, an upsert of KEY VALUE; COMMIT INTERVAL 1 s) into the local
catalog, each run on a fresh data directory. With --other, runs alternate with the icesink of another checkout (a
git worktree of an earlier commit, say), put first on the path of serve and of the processes its Spark starts.
A figure, not a test.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.stats import cpu_seconds, process_tree  # noqa: E402

ICESINK = Path(sys.executable).with_name("icesink")
SETUP = """CREATE CONNECTION lake TO ICEBERG CATALOG (CATALOG TYPE 'local');
CREATE SOURCE c FROM LOAD GENERATOR COUNTER (TICK INTERVAL '1s');
CREATE SOURCE kv FROM LOAD GENERATOR KEY VALUE (KEYS 1000, BATCH SIZE 100, TICK INTERVAL '1s');
CREATE SINK c_lake FROM c INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'n', TABLE 'c') MODE APPEND
  WITH (COMMIT INTERVAL '1s');
CREATE SINK kv_lake FROM kv INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'n', TABLE 'kv') KEY (key) MODE UPSERT
  WITH (COMMIT INTERVAL '1s');"""


def run(pythonpath: str | None) -> tuple[float, float]:
    data_dir = Path(tempfile.mkdtemp(prefix="icesink-serve-start-"))
    env = {**os.environ, "ICESINK_LOG": "INFO", "ICESINK_SECRET_STORE": "file"}
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    try:
        subprocess.run([str(ICESINK), "--data-dir", str(data_dir), "-c", SETUP], env=env, check=True,
                       stdout=subprocess.DEVNULL)
        log = data_dir / "serve.log"
        started = time.time()
        with open(log, "w") as out:
            serve = subprocess.Popen([str(ICESINK), "--data-dir", str(data_dir), "serve"], env=env, stdout=out,
                                     stderr=subprocess.STDOUT)
        try:
            while {"c_lake", "kv_lake"} - {line.split("sink ", 1)[1].split(":")[0]
                                           for line in log.read_text().splitlines() if ": committed " in line}:
                if serve.poll() is not None:
                    raise RuntimeError(f"serve ended: {log.read_text()[-2000:]}")
                time.sleep(0.05)
            took = time.time() - started
            cpu = sum(cpu_seconds(process_tree(serve.pid), ended_children=True).values())
        finally:
            serve.terminate()
            serve.wait(60)
        return took, cpu
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--other", help="another checkout of icesink, run alternately")
    args = parser.parse_args()
    sides = {"this checkout": None, **({args.other: str(Path(args.other).resolve())} if args.other else {})}
    seen: dict[str, list[tuple[float, float]]] = {side: [] for side in sides}
    for _ in range(args.runs):
        for side, pythonpath in sides.items():
            seen[side].append(run(pythonpath))
            print(f"{side}: both sinks' first commits {seen[side][-1][0]:.1f}s after serve started, "
                  f"its processes' CPU by then {seen[side][-1][1]:.1f}s", flush=True)
    for side, runs in seen.items():
        print(f"{side}: median {statistics.median(t for t, _ in runs):.1f}s to the first commits, "
              f"{statistics.median(c for _, c in runs):.1f}s of CPU ({len(runs)} runs)")


if __name__ == "__main__":
    main()

"""Writes tests/corpus/catalog_v1.tar.gz: a data directory as icesink release d6589bd (the release before typed
descriptors, catalog schema version 1, no table sink_incarnations) left it, for
tests/test_descriptors.py::test_a_sink_written_by_the_release_before_descriptors_resumes.

Run from the repository's root, with its virtual environment:

    .venv/bin/python tests/corpus/make_catalog_v1.py

It checks d6589bd out in a temporary `git worktree`, runs itself again (--write) with PYTHONPATH=<worktree> so that
`import icesink` is the old release's code (it says so, and checks it in a Spark worker too), and through the old
Python API:

    CREATE CONNECTION lake TO ICEBERG CATALOG (CATALOG TYPE 'local');
    CREATE TABLE orders (id bigint NOT NULL, note text, PRIMARY KEY (id));
    INSERT INTO orders VALUES (1, 'a'), (2, 'b'), (3, 'c');
    CREATE SINK orders_lake FROM orders INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'shop', TABLE 'orders')
      KEY (id) MODE UPSERT WITH (COMMIT INTERVAL '1s');
    -- the old scheduler runs the sink until it committed those rows
    UPDATE orders SET note = 'b1' WHERE id = 2; DELETE FROM orders WHERE id = 3;
    -- ... until it committed these too (an overwrite of its data file), then stops cleanly
    INSERT INTO orders VALUES (5, 'e');  -- with no scheduler running: in the change log, not in Iceberg

so Iceberg holds (1, 'a'), (2, 'b1') and the engine table also (5, 'e'), which a resumed sink must add.

The local Iceberg catalog keeps absolute paths (its SQLite catalog's metadata_location, the metadata's location,
the manifest lists and manifests), so the data directory is written at the fixed path DATA_DIR, which the test
extracts the tarball to again. The tarball holds the data directory's files relative to it.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

RELEASE = "d6589bd"
DATA_DIR = Path("/tmp/icesink-catalog-v1")
TARBALL = Path(__file__).resolve().with_name("catalog_v1.tar.gz")
REPO = Path(__file__).resolve().parents[2]
SKIPPED = {"scheduler.lock"}  # holds the pid of the process that ran the sinks


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="icesink-d6589bd-") as tmp:
        worktree = Path(tmp) / "icesink"
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(worktree), RELEASE], check=True)
        try:
            shutil.rmtree(DATA_DIR, ignore_errors=True)
            env = dict(os.environ, PYTHONPATH=str(worktree), ICESINK_SECRET_STORE="file")
            subprocess.run([sys.executable, str(Path(__file__).resolve()), "--write", str(worktree)], env=env,
                           cwd=worktree, check=True)
        finally:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(worktree)], check=True)
    pack()
    shutil.rmtree(DATA_DIR)
    print(f"wrote {TARBALL} ({TARBALL.stat().st_size} bytes)")


def pack() -> None:
    def clean(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        return info

    leftovers = [p.name for p in DATA_DIR.rglob("*") if p.name.endswith(("-wal", "-shm", "-journal"))]
    assert not leftovers, f"SQLite files not checkpointed: {leftovers}"
    with tarfile.open(TARBALL, "w:gz") as tar:
        for entry in sorted(DATA_DIR.iterdir()):
            if entry.name not in SKIPPED:
                tar.add(entry, arcname=entry.name, filter=clean)


def write(worktree: Path) -> None:
    """Runs under the old release: PYTHONPATH is its worktree."""
    import icesink
    from icesink.catalog_connections import connector_for
    from icesink.engine.scheduler import Scheduler
    from icesink.engine.spark import get_spark

    print("icesink from", icesink.__file__)
    assert Path(icesink.__file__).resolve().is_relative_to(worktree.resolve()), icesink.__file__

    def iceberg_table(session):
        sink = session.catalog.get("orders_lake")
        connection = session.catalog.get_by_id(sink.definition["connection_id"])
        catalog = connector_for(connection, session.executor.secret_value, session.data_dir).load_catalog()
        return catalog.load_table((sink.definition["namespace"], sink.definition["table"]))

    def committed_offset(session):
        try:
            snapshot = iceberg_table(session).current_snapshot()
        except Exception:
            return 0
        if snapshot is None:
            return 0
        return json.loads(snapshot.summary.additional_properties.get("icesink.frontier", '{"offset": 0}'))["offset"]

    def wait_caught_up(session, what):
        target = session.tables.latest_offset(session.catalog.get("orders").id)
        deadline = time.time() + 180
        while committed_offset(session) < target:
            assert time.time() < deadline, f"timed out waiting for {what}"
            time.sleep(0.25)

    spark = get_spark("local[2]")
    worker = spark.sparkContext.parallelize([0], 1).map(lambda _: __import__("icesink").__file__).collect()[0]
    print("icesink in a Spark worker from", worker)
    assert Path(worker).resolve().is_relative_to(worktree.resolve()), worker
    with icesink.connect(DATA_DIR) as session:
        session.execute("""
            CREATE CONNECTION lake TO ICEBERG CATALOG (CATALOG TYPE 'local');
            CREATE TABLE orders (id bigint NOT NULL, note text, PRIMARY KEY (id));
            INSERT INTO orders VALUES (1, 'a'), (2, 'b'), (3, 'c');
            CREATE SINK orders_lake FROM orders INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'shop', TABLE 'orders')
              KEY (id) MODE UPSERT WITH (COMMIT INTERVAL '1s');""")
        scheduler = Scheduler(session.data_dir, session.executor.secret_value, lambda: spark)
        scheduler.start()
        try:
            wait_caught_up(session, "the first commit")
            session.execute("UPDATE orders SET note = 'b1' WHERE id = 2; DELETE FROM orders WHERE id = 3")
            wait_caught_up(session, "the second commit")
        finally:
            scheduler.stop()
        session.execute("INSERT INTO orders VALUES (5, 'e')")  # logged, not committed: the new release must add it
        table = iceberg_table(session)
        print("snapshots:", [(s.snapshot_id, s.summary.additional_properties.get("icesink.sink-version"),
                              s.summary.additional_properties.get("icesink.frontier")) for s in table.snapshots()])
        print("in Iceberg:", sorted(table.scan().to_arrow().to_pylist(), key=lambda r: r["id"]))
        print("engine table:", session.execute("SELECT id, note FROM orders ORDER BY id")[-1].rows)
    spark.stop()


if __name__ == "__main__":
    if sys.argv[1:2] == ["--write"]:
        write(Path(sys.argv[2]))
    else:
        main()

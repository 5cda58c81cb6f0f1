"""A large table's initial copy, on Spark's executors: the table is split in ctid ranges (a TID range scan reads
only its pages), and a task per core reads ranges as of the source's exported snapshot, on a connection of its own,
each into a Parquet file of the table's base. Only file names and row counts come back to the driver, which copies
ranges itself until Spark's tasks begin."""
from __future__ import annotations

import os
import threading
import uuid
from pathlib import Path

from psycopg import sql

from ...model.types import Column
from .copy import SESSION, CopyRefused, write_base

PAGES_PER_RANGE = 4096  # 32 MiB of heap: half a second; the last ranges keep every core busy
PARALLEL_PAGES = 16384  # a smaller table is copied by the replication's own connection, without a Spark job
COPIES_ON_DRIVER = True  # the replication's thread copies ranges until Spark's tasks begin


class Cancelled(Exception):
    """The copy's job was cancelled because its replication is stopping."""


def page_ranges(pages: int, tasks: int) -> list[tuple[int, int | None]]:
    """`tasks` ranges of pages covering the table, the last one open: pages the table gains meanwhile hold no
    row of the snapshot, but reading them costs nothing."""
    step = max(1, -(-pages // tasks))
    starts = list(range(0, max(pages, 1), step))
    return [(a, b) for a, b in zip(starts, starts[1:])] + [(starts[-1], None)]


def range_query(columns: list[Column], schema: str, name: str, pages: tuple[int, int | None] | None):
    """The COPY of the table's `columns`, of the pages in `pages` (None: all of them)."""
    select = sql.SQL("SELECT {} FROM {}").format(sql.SQL(", ").join(sql.Identifier(c.name) for c in columns),
                                                 sql.Identifier(schema, name))
    if pages is not None:
        first, end = pages
        condition = sql.SQL(" WHERE ctid >= {}::tid").format(sql.Literal(f"({first},0)"))
        if end is not None:
            condition += sql.SQL(" AND ctid < {}::tid").format(sql.Literal(f"({end},0)"))
        select += condition
    return sql.SQL("COPY ({}) TO STDOUT").format(select)  # text: faster to send and to parse than csv


def copy_on_executors(spark, data_dir: str, connection_id: str, snapshot: str, queries: list[str],
                      columns: list[Column], directory: str, stopping: threading.Event, on_progress) -> list:
    """Copies each query's range (COPY statements as text) into one file under `directory`; returns [(path, rows)]
    in the queries' order. One Spark task per core and this thread take ranges in turn, each claiming a range by
    creating its claim file: this thread copies while Spark starts (`spark` is the session's factory) and its
    Python workers start (2 s), and stops once a task has begun. `on_progress(done, ranges)` is called as ranges
    are copied; `stopping` cancels the job, which then raises Cancelled."""
    group = f"icesink-copy-{uuid.uuid4().hex}"
    outcome: dict = {}
    ranges = [(i, q, f"{directory}/part-{i:05d}.parquet") for i, q in enumerate(queries)]
    specs = [(c.name, c.type) for c in columns]
    contexts: list = []

    def run():
        try:
            context = spark().sparkContext
            contexts.append(context)
            context.setJobGroup(group, "icesink: initial copy", interruptOnCancel=True)
            slots = context.defaultParallelism
            outcome["files"] = context.parallelize(range(slots), slots).flatMap(
                lambda _: _claim_ranges(data_dir, connection_id, snapshot, specs, ranges, [])).collect()
        except BaseException as exc:
            outcome["error"] = exc

    worker = threading.Thread(target=run, name="icesink-copy-job", daemon=True)
    worker.start()
    here: list = []  # what this thread copied
    if COPIES_ON_DRIVER:
        def block(_rows: int) -> None:
            if stopping.is_set():
                raise Cancelled()
            on_progress(_copied(directory), len(ranges))

        def tasks_began() -> bool:  # a claim this thread did not make
            return _claimed(directory) > len(here)
        try:
            _claim_ranges(data_dir, connection_id, snapshot, specs, ranges, here, tasks_began, block)
        except Cancelled:
            _cancel(worker, contexts, group)
            raise
    while worker.is_alive():
        worker.join(0.25)
        if stopping.is_set():
            _cancel(worker, contexts, group)
            raise Cancelled()
        on_progress(_copied(directory), len(ranges))
    if "error" in outcome:
        raise outcome["error"]
    files = sorted(here + outcome["files"])
    for _, _, refused in files:
        if isinstance(refused, str):
            raise CopyRefused(refused)
    if [index for index, _, _ in files] != list(range(len(ranges))):  # a task that failed and was run again
        raise RuntimeError(f"the copy's ranges were not each copied once: {[index for index, _, _ in files]}")
    for marker in [*Path(directory).glob("*.claim"), *Path(directory).glob("*.done")]:
        marker.unlink()
    return [(path, rows) for _, path, rows in files if rows]


def _cancel(worker: threading.Thread, contexts: list, group: str) -> None:
    while worker.is_alive():  # until the job exists to be cancelled, and is
        if contexts:
            contexts[0].cancelJobGroup(group)
        worker.join(0.25)


def _claimed(directory: str) -> int:
    return sum(1 for _ in Path(directory).glob("*.claim"))


def _copied(directory: str) -> int:
    return sum(1 for _ in Path(directory).glob("*.done"))


def _claim_ranges(data_dir: str, connection_id: str, snapshot: str, specs, ranges, copied: list,
                  enough=lambda: False, on_block=lambda rows: None) -> list[tuple[int, str, int | str]]:
    """On an executor or the driver: copies the ranges nobody has claimed yet, as of `snapshot`, through one
    connection made from the catalog and secret store of `data_dir` (the secret never travels with a task), until
    none is left or `enough()`. Appends (index, file, rows or why a value was refused) to `copied` as each range
    ends, and returns it."""
    from ...catalog.secrets import open_secret_store, secret_value
    from ...catalog.store import Catalog
    from ...catalog_connections import connector_for

    columns = [Column(name, type_name) for name, type_name in specs]
    catalog = Catalog(data_dir)
    try:
        secrets = open_secret_store(catalog.data_dir, catalog.install_id, lambda notice: None)
        connector = connector_for(catalog.get_by_id(connection_id),
                                  lambda secret_id: secret_value(catalog, secrets, secret_id), catalog)
        with connector.connect(options=SESSION) as upstream, upstream.transaction():
            upstream.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            upstream.execute(sql.SQL("SET TRANSACTION SNAPSHOT {}").format(sql.Literal(snapshot)))
            for index, query, path in ranges:
                if enough():
                    break
                try:
                    os.close(os.open(f"{path}.claim", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
                except FileExistsError:
                    continue
                try:
                    with upstream.cursor().copy(query) as copy:
                        copied.append((index, path, write_base(copy, columns, path, on_block)))
                except CopyRefused as exc:  # the driver says so in these words, not in Spark's
                    copied.append((index, path, str(exc)))
                    break
                os.close(os.open(f"{path}.done", os.O_CREAT | os.O_WRONLY))
    finally:
        catalog.close()
    return copied

"""A large table's initial copy, on Spark's executors: the table is split in ctid ranges (a TID range scan reads
only its pages), and each task reads its range as of the source's exported snapshot, on a connection of its own,
into a Parquet file of the table's base. Only file names and row counts come back to the driver."""
from __future__ import annotations

import threading
import uuid

from psycopg import sql

from ...model.types import Column
from .copy import SESSION, CopyRefused, write_base

PAGES_PER_TASK = 8192  # 64 MiB of heap: a task of a few seconds
PARALLEL_PAGES = 16384  # a smaller table is copied by the replication's own connection, without a Spark job


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
    """Runs one Spark task per query (COPY statements as text), each writing one file under `directory`; returns
    [(path, rows)] in the queries' order. `on_progress(done, tasks)` is called as tasks finish; `stopping` cancels
    the job, which then raises Cancelled."""
    context = spark.sparkContext
    group = f"icesink-copy-{uuid.uuid4().hex}"
    outcome: dict = {}
    tasks = [(i, q, f"{directory}/part-{i:05d}.parquet") for i, q in enumerate(queries)]
    specs = [(c.name, c.type) for c in columns]

    def run():
        try:
            context.setJobGroup(group, "icesink: initial copy", interruptOnCancel=True)
            job = context.parallelize(tasks, len(tasks)).map(
                lambda task: _copy_task(data_dir, connection_id, snapshot, specs, task))
            outcome["files"] = job.collect()
        except BaseException as exc:
            outcome["error"] = exc

    worker = threading.Thread(target=run, name="icesink-copy-job", daemon=True)
    worker.start()
    tracker = context.statusTracker()
    while worker.is_alive():
        worker.join(0.25)
        if stopping.is_set():
            while worker.is_alive():  # until the job exists to be cancelled, and is
                context.cancelJobGroup(group)
                worker.join(0.25)
            raise Cancelled()
        done = 0
        for job_id in tracker.getJobIdsForGroup(group):
            info = tracker.getJobInfo(job_id)
            for stage_id in info.stageIds if info else ():
                stage = tracker.getStageInfo(stage_id)
                done += stage.numCompletedTasks if stage else 0
        on_progress(done, len(tasks))
    if "error" in outcome:
        raise outcome["error"]
    for _, _, refused in outcome["files"]:
        if isinstance(refused, str):
            raise CopyRefused(refused)
    return [(path, rows) for _, path, rows in sorted(outcome["files"]) if rows]


def _copy_task(data_dir: str, connection_id: str, snapshot: str, specs, task) -> tuple[int, str, int | str]:
    """On an executor: one range as of `snapshot`, through a connection made from the catalog and secret store of
    `data_dir` (the secret never travels with the task). Returns the file and its rows, or why a value was refused."""
    from ...catalog.secrets import open_secret_store, secret_value
    from ...catalog.store import Catalog
    from ...catalog_connections import connector_for

    index, query, path = task
    catalog = Catalog(data_dir)
    try:
        secrets = open_secret_store(catalog.data_dir, catalog.install_id, lambda notice: None)
        connector = connector_for(catalog.get_by_id(connection_id),
                                  lambda secret_id: secret_value(catalog, secrets, secret_id), catalog)
        with connector.connect(options=SESSION) as upstream, upstream.transaction():
            upstream.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            upstream.execute(sql.SQL("SET TRANSACTION SNAPSHOT {}").format(sql.Literal(snapshot)))
            with upstream.cursor().copy(query) as copy:
                rows = write_base(copy, [Column(name, type_name) for name, type_name in specs], path)
    except CopyRefused as exc:  # the driver says so in these words, not in Spark's
        return index, path, str(exc)
    finally:
        catalog.close()
    return index, path, rows

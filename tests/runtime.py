"""Helpers for tests that run sinks: waiting, and looking at the Iceberg tables they write."""
import time

from icesink.catalog_connections import connector_for


def wait_for(predicate, timeout=120, what="condition"):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.25)
    raise AssertionError(f"timed out waiting for {what}")


def iceberg_table(session, sink_name):
    sink = session.catalog.get(sink_name)
    connection = session.catalog.get_by_id(sink.descriptor.connection_id)
    catalog = connector_for(connection, session.executor.secret_value, session.catalog).load_catalog()
    return catalog.load_table(sink.descriptor.identifier)


def committed_offset(session, sink_name):
    """The offset the sink's newest progress in its table covers (a merge-on-read fold's snapshot after it holds
    none: the progress is looked up as a restart looks it up)."""
    from icesink.engine.sink.progress import latest_progress

    try:
        table = iceberg_table(session, sink_name)
    except Exception:
        return 0
    progress = latest_progress(table, session.catalog.get(sink_name).id)
    return progress.frontier.offset if progress is not None else 0


def caught_up(session, sink_name, table_name):
    table_id = session.catalog.get(table_name).id
    return lambda: committed_offset(session, sink_name) >= session.tables.latest_offset(table_id)

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


def committed_offset(session, sink_name, input_id=None):
    """The offset the sink's newest progress in its table covers (a merge-on-read fold's snapshot after it holds
    none: the progress is looked up as a restart looks it up); -1 when that progress counts another input than
    `input_id` (the sink switched since, ALTER SINK … SET FROM: nothing of this one is committed, not even its
    start)."""
    from icesink.engine.sink.progress import latest_progress

    try:
        table = iceberg_table(session, sink_name)
    except Exception:
        return 0
    progress = latest_progress(table, session.catalog.get(sink_name).id)
    if progress is None:
        return 0
    if input_id is not None and progress.input not in (None, input_id):
        return -1
    return progress.frontier.offset


def caught_up(session, sink_name, table_name):
    """Whether the sink has committed every change of `table_name`, the relation it reads."""
    table_id = session.catalog.get(table_name).id
    return lambda: committed_offset(session, sink_name, table_id) >= session.tables.latest_offset(table_id)


def sink_status(session, name):
    """The sink's (status, error) as mz_sink_statuses reports it; (None, None) for no such sink."""
    from tests.conftest import rows

    found = rows(session, "SELECT st.status, st.error FROM mz_sinks s JOIN mz_internal.mz_sink_statuses st "
                          f"ON s.id = st.id WHERE s.name = '{name}'")
    return found[0] if found else (None, None)

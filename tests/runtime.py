"""Helpers for tests that run sinks: waiting, and looking at the Iceberg tables they write."""
import json
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
    try:
        table = iceberg_table(session, sink_name)
    except Exception:
        return 0
    snapshot = table.current_snapshot()
    if snapshot is None:
        return 0
    return json.loads(snapshot.summary.additional_properties.get("icesink.frontier", '{"offset": 0}'))["offset"]


def caught_up(session, sink_name, table_name):
    table_id = session.catalog.get(table_name).id
    return lambda: committed_offset(session, sink_name) >= session.tables.latest_offset(table_id)

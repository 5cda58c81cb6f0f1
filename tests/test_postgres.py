"""Postgres connections against a real PostgreSQL 15 started on 127.0.0.1 by the tests: what VALIDATE (and CREATE)
says for each thing logical replication needs that is missing."""
from __future__ import annotations

import pytest

from tests.conftest import error_of, rows
from tests.servers import Postgres, free_port

REPL_PASSWORD = "repl-pw-7d1"


@pytest.fixture(scope="module")
def postgres():
    server = Postgres().start()
    with server.admin() as admin:
        admin.execute(f"CREATE ROLE repl LOGIN REPLICATION PASSWORD '{REPL_PASSWORD}'")
        admin.execute(f"CREATE ROLE plain LOGIN PASSWORD '{REPL_PASSWORD}'")
        admin.execute("CREATE DATABASE shop OWNER repl")
    yield server
    server.stop()


def connection(postgres, name="pg", user="repl", port=None, database="shop", secret="pg_pass",
               host="127.0.0.1") -> str:
    return (f"CREATE CONNECTION {name} TO POSTGRES (HOST '{host}', PORT {port or postgres.port}, "
            f"DATABASE '{database}', USER '{user}', PASSWORD SECRET {secret})")


def test_a_valid_connection_is_created_and_validates(session, postgres):
    session.execute(f"CREATE SECRET pg_pass AS '{REPL_PASSWORD}'")
    session.execute(connection(postgres))
    assert session.execute("VALIDATE CONNECTION pg")[0].status == "VALIDATE CONNECTION"
    assert rows(session, "SELECT name, type FROM mz_connections") == [("pg", "postgres")]


@pytest.mark.parametrize("change, message", [
    (dict(port="unreachable"), "Postgres connection 'pg': cannot reach 127.0.0.1:{port}: Connection refused"),
    (dict(host="nosuchhost.invalid"), "Postgres connection 'pg': cannot reach nosuchhost.invalid:{port}: unknown host "
                                      "'nosuchhost.invalid'"),
    (dict(secret="wrong"), "Postgres connection 'pg': the server refused the login of user 'repl': password "
                           "authentication failed for user \"repl\""),
    (dict(database="nosuch"), "Postgres connection 'pg': the database 'nosuch' does not exist"),
    (dict(user="plain"), "Postgres connection 'pg': user 'plain' may not replicate: ALTER ROLE \"plain\" WITH "
                         "REPLICATION (as a superuser), or use a user that may"),
])
def test_creation_says_what_is_wrong(session, postgres, change, message):
    session.execute(f"CREATE SECRET pg_pass AS '{REPL_PASSWORD}'; CREATE SECRET wrong AS 'not-the-password'")
    if change.get("port") == "unreachable":
        change["port"] = free_port()
    error = error_of(session, connection(postgres, **change))
    assert error.message.startswith(message.format(**{"port": postgres.port, **change})), error.message
    assert REPL_PASSWORD not in error.message and "not-the-password" not in error.message
    assert rows(session, "SELECT count(*) FROM mz_connections") == [(0,)]  # nothing stored


def test_validation_can_be_deferred_and_rotating_the_secret_fixes_it(session, postgres):
    session.execute("CREATE SECRET pg_pass AS 'stale'")
    session.execute(connection(postgres) + " WITH (VALIDATE = false)")
    assert "password authentication failed" in error_of(session, "VALIDATE CONNECTION pg").message
    session.execute(f"ALTER SECRET pg_pass AS '{REPL_PASSWORD}'")
    assert session.execute("VALIDATE CONNECTION pg")[0].status == "VALIDATE CONNECTION"


def test_no_free_replication_slot(session, postgres):
    session.execute(f"CREATE SECRET pg_pass AS '{REPL_PASSWORD}'")
    with postgres.admin() as admin:
        free = admin.execute("SELECT current_setting('max_replication_slots')::int - count(*) "
                             "FROM pg_replication_slots").fetchone()[0]
        names = [f"filler_{n}" for n in range(free)]
        for name in names:
            admin.execute("SELECT pg_create_physical_replication_slot(%s)", (name,))
        try:
            error = error_of(session, connection(postgres))
        finally:
            for name in names:
                admin.execute("SELECT pg_drop_replication_slot(%s)", (name,))
    assert error.message == ("Postgres connection 'pg': no free replication slot: all 10 of max_replication_slots "
                             "are in use; drop an unused slot (pg_drop_replication_slot) or raise "
                             "max_replication_slots")


def test_wal_level_must_be_logical(session):
    server = Postgres(wal_level="replica").start()
    try:
        with server.admin() as admin:
            admin.execute(f"CREATE ROLE repl LOGIN REPLICATION PASSWORD '{REPL_PASSWORD}'")
        session.execute(f"CREATE SECRET pg_pass AS '{REPL_PASSWORD}'")
        error = error_of(session, connection(server, database="postgres"))
    finally:
        server.stop()
    assert error.message == ("Postgres connection 'pg': wal_level is 'replica', and logical replication needs "
                             "'logical': set wal_level = logical in postgresql.conf (or ALTER SYSTEM) and restart "
                             "the server")

"""Secret values never reach the catalog, output, errors, logs, history or any file in the data directory."""
import base64
import os
import stat
import subprocess
from pathlib import Path

import pytest
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput

import icesink
from icesink.repl.render import make_console, render_error, render_result
from icesink.repl.shell import Repl
from tests.conftest import ICESINK, cli_env

VALUES = ["hunter2-PG-value", "s3cr3t-AWS-value", "oauth-CLIENT-value", "rotated-PG-value", "typo-SECRET-value",
          "literal-TOKEN-value", "decoded-B64-value"]
VALUES.append(base64.b64encode(VALUES[6].encode()).decode())  # as a script gives it: a value too


def _run_everything(session, console):
    script = f"""
    CREATE SECRET pg_pass AS '{VALUES[0]}';
    CREATE SECRET aws_key AS '{VALUES[1]}';
    CREATE SECRET oauth AS '{VALUES[2]}';
    CREATE CONNECTION pg TO POSTGRES (HOST 'db', USER 'repl', PASSWORD SECRET pg_pass) WITH (VALIDATE = false);
    CREATE CONNECTION aws TO AWS (ACCESS KEY ID = 'AKIDEXAMPLE', SECRET ACCESS KEY = SECRET aws_key);
    CREATE CONNECTION rest TO ICEBERG CATALOG (CATALOG TYPE 'rest', URL 'http://x', CREDENTIAL = 'client:' || SECRET oauth,
        AWS CONNECTION = aws) WITH (VALIDATE = false);
    ALTER SECRET pg_pass AS '{VALUES[3]}';
    CREATE SECRET b64 AS decode('{VALUES[7]}', 'base64');
    SHOW SECRETS;
    SHOW CREATE CONNECTION pg;
    SHOW REDACTED CREATE CONNECTION rest;
    SELECT * FROM mz_secrets;
    SELECT * FROM mz_connections;
    SELECT * FROM mz_internal.mz_aws_connections;
    """
    for result in session.execute_iter(script):
        render_result(console, result)
    failing = [
        f"CREATE SECRET broken AS '{VALUES[4]}",  # unterminated
        f"CREATE SECRET pg_pass AS '{VALUES[4]}'",  # already exists
        f"CREATE SECRET s '{VALUES[4]}'",  # missing AS
        f"CREATE CONNECTION bad TO ICEBERG CATALOG (CATALOG TYPE 'rest', URL 'u', TOKEN '{VALUES[5]}')",  # TOKEN must be SECRET
        f"ALTER SECRET nothing AS '{VALUES[4]}'",
        f"CREATE CONNECTION p TO POSTGRES (HOST 'db', USER 'u', PASSWORD '{VALUES[5]}', PORT 0)",
        f"CREATE SECRET swapped AS decode('base64', '{VALUES[7]}')",  # the format in the value's place
        f"CREATE SECRET mangled AS decode('{VALUES[7]}!', 'base64')",
        f"CREATE SECRET called AS encode('{VALUES[7]}', 'base64')",
    ]
    for sql in failing:
        with pytest.raises(icesink.IcesinkError) as info:
            session.execute("SELECT 1;\n" + sql)
        render_error(console, info.value)


def _files_containing(directory: Path, value: str) -> list[Path]:
    return [p for p in directory.rglob("*") if p.is_file() and value.encode() in p.read_bytes()]


def test_no_value_in_any_file_or_output(data_dir, tmp_path):
    out = tmp_path / "out.txt"
    with open(out, "w") as stream, icesink.connect(data_dir) as session:
        _run_everything(session, make_console(stream))
        assert session.secrets.get(session.catalog.get("pg_pass").id) == VALUES[3]  # rotated
        assert session.secrets.get(session.catalog.get("oauth").id) == VALUES[2]
    text = out.read_text()
    assert "pg_pass" in text and "<REDACTED>" in text and "PASSWORD = SECRET pg_pass" in text
    assert text.count("no secure keyring backend found") == 1
    for value in VALUES:
        assert value not in text
        assert _files_containing(data_dir, value) == []
    secret_files = list((data_dir / "secrets").iterdir())
    assert secret_files and all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in secret_files)
    assert stat.S_IMODE(data_dir.stat().st_mode) == 0o700


@pytest.mark.parametrize("given, value", [
    ("decode('c2VjcmV0LXZhbHVl', 'base64')", "secret-value"),
    ("decode('c2Vj\ncmV0', 'BASE64')", "secret"),  # Postgres skips white space in base64
    ("decode('736563726574', 'hex')", "secret"),
    ("decode('a\\\\b\\101', 'escape')", "a\\bA"),
    ("'plain'", "plain"),
])
def test_a_secret_is_given_as_a_string_or_decoded_once(session, given, value):
    """Materialize's scripts give secrets as decode(…) too: evaluated when the statement runs, the secret holds the
    decoded text."""
    session.execute(f"CREATE SECRET s AS {given}")
    assert session.executor.secret_value(session.catalog.get("s").id) == value
    session.execute(f"ALTER SECRET s AS {given.replace('plain', 'other')}")
    assert session.executor.secret_value(session.catalog.get("s").id) == value.replace("plain", "other")


@pytest.mark.parametrize("given, message", [
    ("decode('c2VjcmV0', 'rot13')", "decode() takes the format 'base64', 'escape' or 'hex' as its second argument"),
    ("decode('c2VjcmV0!', 'base64')", "decode(): the value is not valid base64"),
    ("decode('7g', 'hex')", "decode(): the value is not valid hex"),
    ("decode('/w==', 'base64')", "the decoded secret is not UTF-8 text, which is what icesink keeps secrets as"),
    ("md5('x', 'y')", "expected a string literal or decode('…', 'base64'), found a value that is not shown, as it may be secret"),
])
def test_a_secret_that_cannot_be_decoded_is_refused_without_its_value(session, given, message):
    with pytest.raises(icesink.IcesinkError) as info:
        session.execute(f"CREATE SECRET s AS {given}")
    assert info.value.message == message
    assert "c2Vj" not in info.value.format() and "7g" not in info.value.format()


def test_dropping_a_secret_removes_its_value(session):
    session.execute(f"CREATE SECRET x AS '{VALUES[0]}'")
    secret_id = session.catalog.get("x").id
    session.execute("DROP SECRET x")
    assert session.secrets.get(secret_id) is None


def test_cli_logs_and_repl_history_hold_no_value(data_dir):
    script = f"CREATE SECRET a AS '{VALUES[0]}';\nCREATE SECRET a AS '{VALUES[1]}';\n"
    done = subprocess.run(ICESINK + ["--data-dir", str(data_dir), "-c", script], capture_output=True, text=True,
                          env=cli_env(ICESINK_LOG="DEBUG"))
    assert done.returncode == 1 and "secret 'a' already exists" in done.stderr
    assert VALUES[0] not in done.stdout + done.stderr and VALUES[1] not in done.stdout + done.stderr
    with icesink.connect(data_dir) as session, create_pipe_input() as pipe:
        pipe.send_text(f"CREATE SECRET b AS '{VALUES[2]}';\r\\q\r")
        Repl(session, input=pipe, output=DummyOutput(), console=make_console(open(os.devnull, "w")),
             error_console=make_console(open(os.devnull, "w"))).run()
    history = (data_dir / "history").read_text()
    assert "CREATE SECRET b AS '<REDACTED>';" in history
    for value in VALUES[:3]:
        assert _files_containing(data_dir, value) == []


def test_os_keyring_is_used_when_available(data_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("ICESINK_SECRET_STORE", "keyring")
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyrings.alt.file.PlaintextKeyring")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    import keyring.core
    keyring.core.init_backend()
    try:
        with icesink.connect(data_dir) as session:
            session.execute(f"CREATE SECRET k AS '{VALUES[0]}'")
            service = f"icesink/{session.catalog.install_id}"
            assert keyring.get_password(service, session.catalog.get("k").id) == VALUES[0]
            assert not (data_dir / "secrets").exists()
        assert _files_containing(data_dir, VALUES[0]) == []
    finally:
        monkeypatch.undo()
        keyring.core.init_backend()


# ---------------------------------------------------------------- every output path, with the reported cases
MARK = "mArK"  # every marker holds it, so one search finds any of them


def _marker(n: int) -> str:
    return f"{MARK}{n:02d}xq"


LEAKY_INPUTS = [
    # an error echoes the whole line, and another statement on it holds a secret
    f"CREATE SECRET pg AS '{_marker(1)}'; SELEC 1",
    f"CREATE SECRET pg2 AS '{_marker(2)}'; CREATE SECRET pg2 AS 'x'",
    # the grammar and the masking disagreed on \' inside E'…'
    f"CREATE SECRET e1 AS E'abc\\''{_marker(4)}'",
    # typos
    f"CREATE SECERT t1 AS '{_marker(6)}'",
    f"CRAETE SECRET t2 AS '{_marker(7)}'",
    f"CREATE SECRET t3 AS {_marker(8)}",
    f"CREATE CONNECTION p1 TO POSTGRES (HOST 'h', USER 'u', PASWORD '{_marker(9)}')",
    f"CREATE CONNECTION p2 TO POSTGRES (HOST 'h', USER 'u', PASSWORD = {_marker(10)})",
    f"CREATE SOURCE s1 FROM POSTGRES CONNECTION pg (PUBLICATION 'p', PASSWROD '{_marker(11)}')",
    f"CREATE CONNECTION a1 TO AWS (ACCESS KEY ID 'AK', SECRET_ACCESS_KEY '{_marker(12)}')",
    f"CREATE CONNECTION r1 TO ICEBERG CATALOG (CATALOG TYPE 'rest', URL 'http://x', TOKEN '{_marker(13)}')",
    # a stray quote shifts where literals begin and end
    f"CREATE CONNECTION p3 TO POSTGRES (HOST 'h, USER 'u', PASSWORD '{_marker(14)}')",
    f"CREATE CONNECTION p4 TO POSTGRES (HOST 'h, PASSWORD '{_marker(15)} and more')",
    f"CREATE CONNECTION p5 TO POSTGRES (HOST 'h', PASSWORD '{_marker(16)}",
    f"ALTER SECRET nothing AS '{_marker(17)}'",
    f"ALTER SECRET pg AS E'{_marker(18)}\\u12'",
    f"CREATE SECRET \"q\" AS '{_marker(19)}'; CREATE SECRET \"q\" AS 'y'",
]
ACCEPTED = [
    f"CREATE SECRET kept AS '{_marker(40)}'",
    f"CREATE SECRET kept_e AS E'{_marker(41)}\\n'",
    f"ALTER SECRET kept AS '{_marker(42)}'",
    f"CREATE SECRET kept2 AS '{_marker(43)}'; CREATE SECRET kept3 AS '{_marker(44)}'",
    f"SELECT 1; CREATE SECRET x AS '{_marker(3)}';",  # masking decided from the input's first words
    f"CREATE SECRET e2 AS E'{_marker(5)}\\'' ",
]
VIEWS_TO_READ = ["mz_secrets", "mz_connections", "mz_sources", "mz_sinks", "mz_objects", "mz_internal.mz_aws_connections",
                 "mz_internal.mz_sink_statuses", "mz_internal.mz_source_statuses"]


def _secret_free(text: str) -> None:
    assert MARK not in text and MARK.lower() not in text.lower(), text


def test_no_output_path_shows_a_value(data_dir, tmp_path, caplog):
    import logging
    caplog.set_level(logging.DEBUG)
    out = tmp_path / "out.txt"
    with open(out, "w") as stream, icesink.connect(data_dir) as session:
        console = make_console(stream)
        session.execute("CREATE CONNECTION lake TO ICEBERG CATALOG (CATALOG TYPE 'local')")
        for sql in ACCEPTED:
            for result in session.execute_iter(sql):
                render_result(console, result)
        for sql in LEAKY_INPUTS:
            with pytest.raises(icesink.IcesinkError) as info:
                session.execute(sql)
            render_error(console, info.value)
        for sql in ["SHOW SECRETS", "SHOW CREATE SECRET kept", "SHOW CREATE SECRET kept_e", "SHOW OBJECTS"] + \
                [f"SELECT * FROM {view}" for view in VIEWS_TO_READ]:
            for result in session.execute_iter(sql):
                render_result(console, result)
        assert session.secrets.get(session.catalog.get("kept").id) == _marker(42)
        assert session.secrets.get(session.catalog.get("kept_e").id) == _marker(41) + "\n"
        assert session.secrets.get(session.catalog.get("e2").id) == _marker(5) + "'"
    _secret_free(out.read_text())
    _secret_free(caplog.text)
    assert [p for p in data_dir.rglob("*") if p.is_file() and MARK.encode() in p.read_bytes()] == []


def test_the_reported_cases_read_as_users_see_them(session):
    def shown(sql):
        with pytest.raises(icesink.IcesinkError) as info:
            session.execute(sql)
        return info.value.format()

    assert shown("CREATE SECRET pg AS 'hunter2'; SELEC 1").splitlines()[1:] == [
        "    CREATE SECRET pg AS '<REDACTED>'; SELEC 1", "                                      ^"]
    # E'…' ends where Postgres ends it: \' is a quote inside it, so 'tail' is not part of the value
    assert "found a value that is not shown" in shown("CREATE SECRET s AS E'abc\\''tail'")
    typo = shown("CREATE CONNECTION p TO POSTGRES (HOST 'db', PASWORD 'hunter2')").splitlines()
    assert typo[0].endswith("found 'PASWORD'") and typo[1] == "    CREATE CONNECTION p TO POSTGRES (HOST '<REDACTED>', PASWORD '<REDACTED>')"
    assert typo[2].index("^") == typo[1].index("PASWORD")
    assert session.catalog.get("s") is None and session.catalog.get("pg") is not None


@pytest.mark.parametrize("sql, kept", [
    ("SELECT 1; CREATE SECRET x AS 'v1';", "SELECT 1; CREATE SECRET x AS '<REDACTED>';"),
    ("CREATE SECERT x AS 'v1'", "CREATE SECERT x AS '<REDACTED>'"),
    ("SELECT name FROM mz_secrets WHERE name = 'kept'; SELEC 'v1'", "SELECT name FROM mz_secrets WHERE name = 'kept'; SELEC '<REDACTED>'"),
    ("CREATE CONNECTION p TO POSTGRES (HOST 'h, PASSWORD 'v1 v2')", "CREATE CONNECTION p TO POSTGRES (HOST '<REDACTED>'"),
    ("CREATE TABLE t (a text); INSERT INTO t VALUES ('visible')", "CREATE TABLE t (a text); INSERT INTO t VALUES ('visible')"),
])
def test_history_masks_each_statement_of_an_input(data_dir, sql, kept):
    with icesink.connect(data_dir) as session, create_pipe_input() as pipe:
        pipe.send_text(sql + "\x1b\r\\q\r")  # Esc Enter: run the input as it is
        Repl(session, input=pipe, output=DummyOutput(), console=make_console(open(os.devnull, "w")),
             error_console=make_console(open(os.devnull, "w"))).run()
    history = (data_dir / "history").read_text()
    assert "v1" not in history and "v2" not in history
    assert "+" + kept in history.splitlines()


def test_data_directory_files_are_owner_only(data_dir):
    with icesink.connect(data_dir) as session, create_pipe_input() as pipe:
        session.execute("CREATE TABLE t (a int); INSERT INTO t VALUES (1)")
        pipe.send_text("SHOW TABLES;\r\\q\r")
        Repl(session, input=pipe, output=DummyOutput(), console=make_console(open(os.devnull, "w")),
             error_console=make_console(open(os.devnull, "w"))).run()
    files = {p.name: stat.S_IMODE(p.stat().st_mode) for p in data_dir.iterdir() if p.is_file()}
    assert {"history", "catalog.db", "tables.db"} <= set(files)
    assert {name: mode for name, mode in files.items() if mode != 0o600} == {}


def test_files_left_readable_by_an_older_version_become_owner_only(data_dir):
    icesink.connect(data_dir).close()
    os.chmod(data_dir / "catalog.db", 0o644)
    icesink.connect(data_dir).close()
    assert stat.S_IMODE((data_dir / "catalog.db").stat().st_mode) == 0o600

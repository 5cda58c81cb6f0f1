"""Secret values never reach the catalog, output, errors, logs, history or any file in the data directory."""
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
          "literal-TOKEN-value"]


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
    assert "pg_pass" in text and "<REDACTED>" in text and "PASSWORD SECRET pg_pass" in text
    assert text.count("no secure keyring backend found") == 1
    for value in VALUES:
        assert value not in text
        assert _files_containing(data_dir, value) == []
    secret_files = list((data_dir / "secrets").iterdir())
    assert secret_files and all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in secret_files)
    assert stat.S_IMODE(data_dir.stat().st_mode) == 0o700


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

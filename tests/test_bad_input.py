"""Bad input of every kind gets a clear error naming the input, line and column, or the path and the cause: never a
traceback, and the session goes on."""
import os
import shutil
import sqlite3
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

import icesink
from tests.conftest import ICESINK, cli_env, error_of, rows


def run(*args, stdin=None, timeout=60, **popen):
    return subprocess.run(ICESINK + list(args), input=stdin, capture_output=True, env=cli_env(), timeout=timeout,
                          **popen)


def one_line_error(done, *words):
    """The command failed with exit status 1 and one line on standard error holding `words`."""
    err = done.stderr.decode() if isinstance(done.stderr, bytes) else done.stderr
    assert done.returncode == 1, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    for word in words:
        assert word in err, err
    return err


# ---------------------------------------------------------------- characters people paste
@pytest.mark.parametrize("space", ["\u00a0", "\u000b", "\u2028", "\u3000", "\t", "\u000c"])
def test_odd_white_space_separates_words(session, space):
    assert rows(session, f"SELECT{space}1{space}AS{space}one") == [(1,)]


@pytest.mark.parametrize("space", ["\u00a0", "\u000b", "\u2028"])
def test_odd_white_space_before_an_error_keeps_the_caret_in_place(session, space):
    error = error_of(session, f"SELECT 1,{space}nope FROM mz_sinks")
    assert (error.position.line, error.position.column) == (1, 11)
    shown, caret = error.format().splitlines()[1:3]
    assert shown[caret.index("^"):].startswith("nope")


@pytest.mark.parametrize("literal, value", [
    (r"E'\x'", "x"), (r"E'\x41\102\u0043\U00000044'", "ABCD"), (r"E'\303\251'", "é"), (r"E'it\'s'", "it's"),
    (r"E'tab\there'", "tab\there"), ("'a\\b'", "a\\b"), ("U&'x'", None),
])
def test_escapes_in_string_literals_read_as_postgres_reads_them(session, literal, value):
    if value is None:  # U&'…' is not part of the dialect: a positioned error, not a crash
        assert error_of(session, f"SELECT {literal}").position.column == 9
        return
    assert rows(session, f"SELECT {literal} AS v") == [(value,)]


@pytest.mark.parametrize("literal, column, words", [
    (r"E'\u12'", 10, "invalid Unicode escape"),
    (r"E'\uD800'", 10, "invalid Unicode escape value"),
    (r"E'\xff'", 10, "invalid byte sequence for encoding UTF8: 0xff"),
    (r"E'a\0b'", 8, "NUL character"),
    ("'a\x00b'", 8, "NUL character"),
])
def test_invalid_escapes_are_positioned_errors(session, literal, column, words):
    error = error_of(session, f"SELECT {literal}")
    assert isinstance(error, icesink.ParseError) and words in error.message
    assert error.position.column == column


def test_control_characters_are_named_by_code_point(session):
    error = error_of(session, "SELECT 1 \x07 FROM mz_sinks")
    assert "found U+0007" in error.message and error.position.column == 10


# ---------------------------------------------------------------- depth
def test_fifty_nested_parentheses_and_a_500_term_expression_run(session):
    assert rows(session, "SELECT " + "(" * 50 + "1" + ")" * 50 + " FROM mz_sinks") == []
    assert rows(session, "SELECT " + " + ".join(["1"] * 500) + " AS total") == [(500,)]
    assert rows(session, "SELECT count(*) FROM mz_sinks WHERE " + " OR ".join(f"name = 'n{i}'" for i in range(500))) == [(0,)]


def test_nesting_beyond_the_limits_is_refused_with_a_position(session):
    error = error_of(session, "SELECT " + "(SELECT " * 150 + "1" + ")" * 150)
    assert isinstance(error, icesink.ParseError) and "nests parentheses more than 100 deep" in error.message
    assert (error.position.line, error.position.column) == (1, 8 + 8 * 100)
    error = error_of(session, "SELECT " + "(SELECT " * 40 + "1" + ")" * 40)
    assert "nests subqueries too deeply for SQLite" in error.message and error.position.column == 1
    error = error_of(session, "SELECT " + " + ".join(["1"] * 1500))
    assert "too large for SQLite" in error.message and "1,000 terms" in error.message
    assert rows(session, "SELECT 1 AS still_working") == [(1,)]


# ---------------------------------------------------------------- environment
def test_invalid_utf8_in_a_file_names_line_and_column(tmp_path, data_dir):
    script = tmp_path / "latin1.sql"
    script.write_bytes("SELECT 1;\nSELECT 'caf\u00e9';\n".encode("latin-1"))
    for args in (["--data-dir", str(data_dir), "--no-run", "-f", str(script)], ["parse", str(script)]):
        one_line_error(run(*args), f"{script}:2:12: not valid UTF-8 (byte 0xe9)")


def test_a_latin1_byte_on_standard_input_stops_there(data_dir):
    done = run("--data-dir", str(data_dir), "--no-run", stdin=b"SELECT 1 AS a;\nSELECT '\xe9';\nSELECT 2;\n")
    assert done.stdout.decode().count("(1 row)") == 1
    one_line_error(done, "<stdin>:2:9: not valid UTF-8 (byte 0xe9)")


def test_closed_standard_input(data_dir):
    done = subprocess.run(ICESINK + ["--data-dir", str(data_dir), "--no-run"], stdin=subprocess.DEVNULL,
                          capture_output=True, env=cli_env(), timeout=60, pass_fds=(), close_fds=True,
                          preexec_fn=lambda: os.close(0))
    one_line_error(done, "standard input is closed")


def test_data_dir_that_is_a_file_or_under_one(tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("x")
    one_line_error(run("--data-dir", str(afile), "-c", "SELECT 1"), str(afile), "is a file, not a directory")
    one_line_error(run("--data-dir", str(afile / "sub"), "-c", "SELECT 1"), f"is under {afile}, which is a file")
    with pytest.raises(icesink.CatalogError, match="is a file, not a directory"):
        icesink.connect(afile)


def run_unprivileged(*args):
    """Runs icesink as an unprivileged user: root may write anywhere, whatever the modes say."""
    drop = ["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups"] if os.getuid() == 0 else []
    return subprocess.run(drop + ICESINK + list(args), capture_output=True, env=cli_env(), timeout=60)


@pytest.fixture
def shared_dir():
    """A directory any user can reach (pytest's own are the owner's only)."""
    path = Path(tempfile.mkdtemp(prefix="icesink-shared-"))
    os.chmod(path, 0o755)
    yield path
    for sub in path.rglob("*"):
        os.chmod(sub, 0o755 if sub.is_dir() else 0o644)
    shutil.rmtree(path)


def test_unwritable_and_read_only_data_directories(shared_dir):
    base = shared_dir
    empty, filled = base / "empty", base / "filled"
    empty.mkdir(mode=0o555)
    with icesink.connect(filled) as session:
        session.execute("CREATE TABLE t (a int)")
    os.chmod(filled, 0o555)
    for f in filled.iterdir():
        os.chmod(f, 0o444)
    one_line_error(run_unprivileged("--data-dir", str(empty), "-c", "SELECT 1"), f"{empty}/catalog.db",
                   "cannot write to the data directory")
    one_line_error(run_unprivileged("--data-dir", str(filled), "-c", "SELECT 1"), f"{filled}/catalog.db",
                   "read-only")
    one_line_error(run_unprivileged("--data-dir", str(base / "new"), "-c", "SELECT 1"), str(base / "new"),
                   "cannot be created: permission denied")


@pytest.mark.parametrize("damage, words", [
    (lambda d: (d / "catalog.db").write_bytes(b"not a database at all" * 100), "the file is damaged"),
    (lambda d: (d / "tables.db").write_bytes(b"\x00garbage" * 1000), "the file is damaged"),
    (lambda d: _sql(d, "PRAGMA user_version = 42"), "written by a newer icesink (schema version 42"),
    (lambda d: _sql(d, "PRAGMA user_version = 0"), "is damaged: its schema version (0) does not match"),
    (lambda d: _sql(d, "DELETE FROM meta WHERE key = 'next_id'"), "is damaged: its meta table lacks next_id"),
    (lambda d: _sql(d, "DROP TABLE meta"), "no such table: meta"),
])
def test_damaged_catalog_files(data_dir, damage, words):
    with icesink.connect(data_dir) as session:
        session.execute("CREATE TABLE t (a int)")
    damage(data_dir)
    err = one_line_error(run("--data-dir", str(data_dir), "-c", "SHOW TABLES"), words)
    assert str(data_dir) in err
    with pytest.raises(icesink.IcesinkError):
        icesink.connect(data_dir)


def _sql(data_dir, statement):
    db = sqlite3.connect(data_dir / "catalog.db")
    db.execute(statement)
    db.commit()
    db.close()


def test_damaged_secret_key_file(data_dir):
    with icesink.connect(data_dir) as session:
        session.execute("CREATE SECRET s AS 'v'")
    (data_dir / "secrets" / "key").write_bytes(b"short")
    with icesink.connect(data_dir) as session:
        error = error_of(session, "ALTER SECRET s AS 'w'")
        assert "the key file is damaged" in error.message and str(data_dir / "secrets" / "key") in error.message


# ---------------------------------------------------------------- names
def test_identifiers_fold_to_lower_case_in_writes_and_queries(session):
    session.execute("CREATE TABLE Orders (Id int PRIMARY KEY, Note text)")
    results = session.execute("INSERT INTO Orders (ID, NOTE) VALUES (1, 'a'); UPDATE ORDERS SET Note = 'b' WHERE id = 1;"
                              "INSERT INTO orders VALUES (2, 'c'); DELETE FROM OrDeRs WHERE ID = 2")
    assert [r.status for r in results] == ["INSERT 0 1", "UPDATE 1", "INSERT 0 1", "DELETE 1"]
    assert rows(session, "SELECT ORDERS.ID, Note FROM ORDERS") == [(1, "b")]
    assert rows(session, "SELECT NAME FROM MZ_TABLES") == [("orders",)]
    session.execute('CREATE TABLE "Mixed" (a int)')
    assert error_of(session, "INSERT INTO mixed VALUES (1)").message == "unknown table 'mixed'"
    session.execute('INSERT INTO "Mixed" VALUES (1)')
    assert rows(session, 'SELECT a FROM "Mixed"') == [(1,)]


# ---------------------------------------------------------------- standard input, processes, the command line
def test_standard_input_is_read_in_linear_time(tmp_path, data_dir):
    lines = ["CREATE TABLE big (id int, note text);", "INSERT INTO big VALUES"]
    lines += [f"  ({i}, 'row {i}; with a semicolon'){',' if i < 4999 else ';'}" for i in range(5000)]
    script = "\n".join(lines) + "\nSELECT count(*) FROM big;\n"
    started = time.monotonic()
    done = run("--data-dir", str(data_dir), "--no-run", stdin=script.encode(), timeout=120)
    took = time.monotonic() - started
    assert done.returncode == 0 and "5000" in done.stdout.decode(), done.stderr
    assert took < 20, f"{took:.1f}s"  # quadratic reading took 201 s


def test_create_if_not_exists_skips_when_another_process_wins_the_race(data_dir):
    from icesink.grammar.parser import parse_statement
    with icesink.connect(data_dir) as mine, icesink.connect(data_dir) as theirs:
        sql = "CREATE TABLE IF NOT EXISTS t (a int)"
        plan = mine.planner.plan(parse_statement(sql), sql)  # planned before the other process creates it
        theirs.execute(sql)
        result = mine.executor.run(plan)
        assert result.notices == ["table 't' already exists, skipping"]
    icesink.connect(data_dir).close()
    script = "".join(f"CREATE TABLE IF NOT EXISTS r{i} (a int);\n" for i in range(30))
    processes = [subprocess.Popen(ICESINK + ["--data-dir", str(data_dir), "--no-run", "-c", script],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=cli_env())
                 for _ in range(2)]
    for process in processes:
        assert process.wait(timeout=60) == 0, process.stderr.read()


def test_parse_help_and_global_options_on_either_side_of_a_subcommand(tmp_path, data_dir):
    done = run("parse", "--help")
    assert done.returncode == 0 and b"usage: icesink parse" in done.stdout
    script = tmp_path / "ok.sql"
    script.write_text("SELECT 1;")
    for args in (["--data-dir", str(data_dir), "parse", str(script)], ["parse", str(script), "--data-dir", str(data_dir)]):
        done = run(*args)
        assert done.returncode == 0 and done.stdout.decode() == f"{script}: 1 statement OK\n"


def test_a_second_serve_says_who_runs_the_sinks_and_exits(data_dir):
    icesink.connect(data_dir).close()
    first = subprocess.Popen(ICESINK + ["--data-dir", str(data_dir), "serve"], stderr=subprocess.PIPE, text=True,
                             env=cli_env())
    try:
        assert "running the sinks of" in first.stderr.readline()
        done = run("serve", "--data-dir", str(data_dir), timeout=30)
        one_line_error(done, f"another icesink process (pid {first.pid}) runs the sinks of {data_dir}")
        done = run("--data-dir", str(data_dir), "-c", "SELECT 1 AS a")
        assert done.returncode == 0 and f"pid {first.pid}" in done.stderr.decode()  # a shell only edits the catalog
    finally:
        first.terminate()
        assert first.wait(timeout=60) == 0

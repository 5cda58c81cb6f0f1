"""The interactive shell, driven through prompt_toolkit's pipe input."""
import io
import threading
import time

import pytest
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput

from icesink.repl.render import make_console
from icesink.repl.shell import Repl


@pytest.fixture
def drive(session):
    def run(*chunks: str):
        """Types each chunk after the shell has handled the previous one (completion runs asynchronously)."""
        out, err = io.StringIO(), io.StringIO()
        outcome = {}
        with create_pipe_input() as pipe:
            repl = Repl(session, input=pipe, output=DummyOutput(), console=make_console(out),
                        error_console=make_console(err))
            shell = threading.Thread(target=lambda: outcome.setdefault("code", repl.run()))
            shell.start()
            for chunk in chunks:
                pipe.send_text(chunk)
                time.sleep(0.3)
            shell.join(timeout=10)
        assert not shell.is_alive(), "the shell did not quit"
        return outcome["code"], out.getvalue(), err.getvalue()
    return run


def test_multi_line_statement_runs_at_the_semicolon(drive, session):
    code, out, err = drive("CREATE TABLE orders (\r  id bigint NOT NULL,\r  note text\r);\rSHOW TABLES;\r\\q\r")
    assert code == 0 and err == ""
    assert "CREATE TABLE" in out and "orders" in out and "(1 row)" in out
    assert session.catalog.get("orders").descriptor.columns[1].as_dict() == {"name": "note", "type": "text",
                                                                            "nullable": True}


def test_completion_of_an_object_name(drive, session):
    session.execute("CREATE TABLE customer_accounts (id int)")
    code, out, err = drive("SHOW COLUMNS FROM customer_a", "\t", ";\r\\q\r")
    assert err == "" and "id" in out and "integer" in out and "(1 row)" in out


def test_completion_of_a_keyword(drive):
    code, out, err = drive("SHOW SUBSOU", "\t", ";\r\\q\r")
    assert err == "" and "(0 rows)" in out


def test_error_does_not_end_the_session(drive):
    code, out, err = drive("CREATE SINK s FROM nothing INTO ICEBERG CATALOG CONNECTION c (NAMESPACE 'n', TABLE 't')\r"
                           "  MODE APPEND WITH (COMMIT INTERVAL '1s');\rCREATE TABLE t (id int);\r\\q\r")
    assert code == 0
    assert "<repl>:1:20: error in statement 1 (CREATE SINK): unknown source, table or materialized view 'nothing'" in err
    assert "CREATE TABLE" in out


def test_ctrl_c_cancels_the_input_and_ctrl_d_leaves(drive, session):
    code, out, err = drive("CREATE TABLE never (\r  id int\x03SHOW TABLES;\r\x04")
    assert code == 0 and "(0 rows)" in out and session.catalog.get("never") is None


def test_help_and_unknown_command(drive):
    code, out, err = drive("\\?\r\\x\r\\q\r")
    assert "\\q   quit" in out and "unknown command \\x" in err


def test_psql_meta_commands_in_the_shell(drive, session):
    session.execute("CREATE TABLE orders (id int NOT NULL, note text); CREATE MATERIALIZED VIEW per AS "
                    "SELECT note, count(*) FROM orders GROUP BY note")
    code, out, err = drive("\\d per\r\\dm\r\\timing on\rSHOW TABLES;\r\\q\r")
    assert code == 0 and err == ""
    lines = [line.split() for line in out.splitlines()]
    assert ["note", "t", "text"] in lines and ["per", "default"] in lines and ["orders"] in lines
    assert any(line[:1] == ["Time:"] and line[-1] == "ms" for line in lines)


def test_an_unforeseen_error_is_one_line_and_the_shell_goes_on(drive, session, monkeypatch):
    original = session.planner.plan

    def broken(stmt, text):  # stands for a bug, or an environment icesink did not foresee
        if "boom" in text:
            raise KeyError("PASSWORD 'hunter2'")
        return original(stmt, text)

    monkeypatch.setattr(session.planner, "plan", broken)
    code, out, err = drive("SELECT 1 AS boom;\rSHOW TABLES;\r\\q\r")
    assert code == 0 and "(0 rows)" in out
    assert err.strip().splitlines() == ["internal error: KeyError: '<REDACTED>' (ICESINK_LOG=DEBUG shows where it "
                                        "happened)"]


def test_a_sources_initial_copy_shows_a_progress_bar_below_the_prompt_while_it_runs(session):
    from tests.runtime import wait_for

    session.execute("CREATE SOURCE counter FROM LOAD GENERATOR COUNTER")
    source_id = session.catalog.get("counter").id
    session.catalog.add_statistics(source_id, snapshot_records_known=1_000_000, snapshot_records_staged=250_000)
    with create_pipe_input() as pipe:
        repl = Repl(session, input=pipe, output=DummyOutput(), console=make_console(io.StringIO()))
        shell = threading.Thread(target=repl.run)
        shell.start()
        try:
            assert wait_for(lambda: repl.prompt.bottom_toolbar, timeout=10, what="the bar") == (
                "source counter: copying [#######.......................] 250,000 of 1,000,000 rows (25%)")
            session.catalog.add_statistics(source_id, snapshot_records_staged=1_000_000)  # the copy is done
            wait_for(lambda: repl.prompt.bottom_toolbar is None, timeout=10, what="the bar to go")
        finally:
            pipe.send_text("\\q\r")
            shell.join(timeout=10)
    assert not shell.is_alive()

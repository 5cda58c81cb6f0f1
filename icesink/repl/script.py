"""Runs SQL from files, -c strings and standard input; stops at the first error."""
from __future__ import annotations

from typing import TextIO

from ..errors import IcesinkError
from ..grammar.lexical import is_complete, split_statements
from ..grammar.parser import parse_statement
from ..session import Session, position_of
from .render import make_console, render_error, render_result


def run_text(session: Session, text: str, source: str, console, error_console) -> bool:
    try:
        for result in session.execute_iter(text, source):
            render_result(console, result)
    except IcesinkError as error:
        render_error(error_console, error)
        return False
    return True


def run_stream(session: Session, stream: TextIO, source: str, console, error_console) -> bool:
    """Executes each statement as soon as its ';' arrives, so a program can converse over a pipe.
    Line numbers in errors count from the start of the stream."""
    pending, consumed_lines = "", 0
    for line in stream:
        pending += line
        if is_complete(pending):
            if not run_text(session, "\n" * consumed_lines + pending, source, console, error_console):
                return False
            consumed_lines += pending.count("\n")
            pending = ""
    if pending.strip():
        return run_text(session, "\n" * consumed_lines + pending, source, console, error_console)
    return True


def check_files(paths: list[str]) -> int:
    """`icesink parse`: parses without executing; exit 1 on the first error."""
    console, error_console = make_console(), make_console(stderr=True)
    for path in paths:
        try:
            text = open(path, encoding="utf-8").read()
        except OSError as exc:
            error_console.print(f"{path}: {exc.strerror}", markup=False)
            return 1
        statements = split_statements(text)
        for index, stmt in enumerate(statements, start=1):
            try:
                parse_statement(stmt.text)
            except IcesinkError as error:
                error.position = position_of(text, stmt, error.pos, index, path)
                render_error(error_console, error)
                return 1
        console.print(f"{path}: {len(statements)} statement{'s' if len(statements) != 1 else ''} OK", markup=False)
    return 0

"""Runs SQL from files, -c strings and standard input; stops at the first error.

Besides SQL, a line may hold a psql-style meta-command: `\\watch [SECONDS] [COUNT]` runs the previous
query again every SECONDS (default 2), COUNT times (default 5 in scripts).
"""
from __future__ import annotations

import re
import time

from ..errors import IcesinkError
from ..grammar.lexical import is_complete, split_statements
from ..grammar.parser import parse_statement
from ..session import Session, position_of
from .render import make_console, render_error, render_result

_META = re.compile(r"^\s*\\(\w+)\s*(.*)$")


class ScriptRunner:
    def __init__(self, session: Session, console, error_console):
        self.session = session
        self.console = console
        self.error_console = error_console
        self.last_sql: str | None = None

    def run_sql(self, text: str, source: str) -> bool:
        try:
            for stmt in split_statements(text):
                self.last_sql = stmt.text
            for result in self.session.execute_iter(text, source):
                render_result(self.console, result)
        except IcesinkError as error:
            render_error(self.error_console, error)
            return False
        return True

    def run_meta(self, command: str, argument: str, source: str, line: int) -> bool:
        if command != "watch":
            self.error_console.print(f"{source}:{line}: unknown meta-command \\{command}", markup=False)
            return False
        if self.last_sql is None:
            self.error_console.print(f"{source}:{line}: \\watch needs a query before it", markup=False)
            return False
        numbers = [float(n) for n in argument.split()[:2] if re.fullmatch(r"\d+(\.\d+)?", n)]
        seconds, count = (numbers + [2.0, 5.0][len(numbers):])[:2]
        for _ in range(int(count)):
            time.sleep(seconds)
            if not self.run_sql(self.last_sql, source):
                return False
        return True

    def run_text(self, text: str, source: str) -> bool:
        """Runs a whole script: SQL as it comes, meta-commands on lines of their own between statements."""
        pending, first_line = "", 0
        for number, line in enumerate(text.splitlines(keepends=True), start=1):
            meta = _META.match(line)
            if meta and (not pending.strip() or is_complete(pending)):
                if pending.strip() and not self.run_sql("\n" * first_line + pending, source):
                    return False
                pending, first_line = "", number
                if not self.run_meta(meta.group(1), meta.group(2), source, number):
                    return False
                continue
            pending += line
        return not pending.strip() or self.run_sql("\n" * first_line + pending, source)

    def run_stream(self, stream, source: str) -> bool:
        """Executes each statement as soon as its ';' arrives, so a program can converse over a pipe."""
        pending, first_line, number = "", 0, 0
        for number, line in enumerate(stream, start=1):
            meta = _META.match(line)
            if meta and not pending.strip():
                if not self.run_meta(meta.group(1), meta.group(2), source, number):
                    return False
                first_line = number
                continue
            pending += line
            if is_complete(pending):
                if not self.run_sql("\n" * first_line + pending, source):
                    return False
                first_line, pending = number, ""
        return not pending.strip() or self.run_sql("\n" * first_line + pending, source)


def check_files(paths: list[str]) -> int:
    """`icesink parse`: parses without executing; exit 1 on the first error."""
    console, error_console = make_console(), make_console(stderr=True)
    for path in paths:
        try:
            text = open(path, encoding="utf-8").read()
        except OSError as exc:
            error_console.print(f"{path}: {exc.strerror}", markup=False)
            return 1
        statements = split_statements("\n".join("" if _META.match(line) else line for line in text.split("\n")))
        for index, stmt in enumerate(statements, start=1):
            try:
                parse_statement(stmt.text)
            except IcesinkError as error:
                error.position = position_of(text, stmt, error.pos, index, path)
                render_error(error_console, error)
                return 1
        console.print(f"{path}: {len(statements)} statement{'s' if len(statements) != 1 else ''} OK", markup=False)
    return 0

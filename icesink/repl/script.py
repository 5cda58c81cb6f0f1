"""Runs SQL from files, -c strings and standard input; stops at the first error.

Besides SQL, a line may hold a psql-style meta-command: `\\watch [SECONDS] [COUNT]` runs the previous
query again every SECONDS (default 2), COUNT times (default 5 in scripts); `\\d [NAME]`, `\\dt` and `\\dm` list
objects, a relation's columns, tables or materialized views; `\\i FILE` runs a file; `\\timing [on|off]` says how
long each statement took.
"""
from __future__ import annotations

import logging
import re
import time
from typing import Iterable, Iterator

from ..errors import IcesinkError
from ..grammar.lexical import CompletionTracker, split_statements
from ..grammar.masking import REDACTED
from ..session import Session, parse_script
from .render import make_console, render_error, render_result

META_LINE = re.compile(r"^\s*\\(\w+)\s*(.*)$")
# psql's listing commands, as the statements that answer them
_LISTINGS = {"dt": "SHOW TABLES", "dm": "SHOW MATERIALIZED VIEWS"}
META_COMMANDS = ("d", *_LISTINGS, "i", "include", "timing", "watch")
_INCLUDE_DEPTH = 16
log = logging.getLogger("icesink")


def internal_error(exc: Exception) -> str:
    """An error icesink did not foresee, without a traceback (at DEBUG level the log has it)."""
    log.debug("unforeseen error", exc_info=exc)
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    message = re.sub(r"'[^']*'?|\"[^\"]*\"?", REDACTED, text)  # it may quote anything: a value, a statement
    return f"internal error: {type(exc).__name__}: {message} (ICESINK_LOG=DEBUG shows where it happened)"


class SourceError(IcesinkError):
    """An input that cannot be read as text. Its message starts with the path (and line and column)."""

    def format(self) -> str:
        return self.message


def lines_of(text: str) -> Iterator[str]:
    """Lines ending at '\\n' only, so line numbers agree with error positions (str.splitlines also cuts at
    U+2028, vertical tabs and more)."""
    start = 0
    while start < len(text):
        end = text.find("\n", start)
        end = len(text) if end < 0 else end + 1
        yield text[start:end]
        start = end


def _undecodable(source: str, line: int, data: bytes, exc: UnicodeDecodeError) -> SourceError:
    column = len(data[:exc.start].decode("utf-8", "replace")) + 1
    return SourceError(f"{source}:{line}:{column}: not valid UTF-8 (byte 0x{data[exc.start]:02x}); icesink reads "
                       "UTF-8 only: convert the file, e.g. with iconv -f latin1 -t utf-8")


def decode_lines(stream: Iterable[bytes], source: str) -> Iterator[str]:
    """Lines of a byte stream as text, each decoded as it arrives; raises SourceError at the first bad byte."""
    for number, data in enumerate(stream, start=1):
        try:
            yield data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _undecodable(source, number, data, exc) from None


def read_source(path: str) -> str:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise SourceError(f"{path}: {exc.strerror}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        line_start = data.rfind(b"\n", 0, exc.start) + 1
        raise _undecodable(path, line, data[line_start:exc.end + 1], UnicodeDecodeError(
            exc.encoding, exc.object, exc.start - line_start, exc.end - line_start, exc.reason)) from None


class ScriptRunner:
    def __init__(self, session: Session, console, error_console):
        self.session = session
        self.console = console
        self.error_console = error_console
        self.last_sql: str | None = None
        self.ran = 0  # statements in the text of the last run_sql
        self.timing = False  # \\timing: each statement's time is shown after its result
        self.including = 0  # files \\i is running, one within another

    def run_sql(self, text: str, source: str, first_line: int = 1, first_statement: int = 1) -> bool:
        statements = split_statements(text)
        if statements:
            self.last_sql = statements[-1].text
        self.ran = len(statements)
        try:
            started = time.perf_counter()
            for result in self.session.execute_iter(text, source, first_line=first_line,
                                                     first_statement=first_statement):
                render_result(self.console, result)
                if self.timing:
                    self.console.print(f"Time: {(time.perf_counter() - started) * 1000:.3f} ms", markup=False)
                started = time.perf_counter()
        except IcesinkError as error:
            render_error(self.error_console, error)
            return False
        except Exception as exc:  # a bug or a broken environment: said in one line, and the shell goes on
            self.error_console.print(internal_error(exc), markup=False)
            return False
        return True

    def run_meta(self, command: str, argument: str, source: str, line: int) -> bool:
        argument = argument.strip()
        if command == "d":  # psql's \\d: the objects, or a relation's columns
            if not argument:
                return self.run_sql("SHOW OBJECTS;", source, line)
            statement = f"SHOW COLUMNS FROM {argument.rstrip(';').rstrip()}"  # psql reads `\\d t;` as t
            if len(split_statements(statement)) != 1:  # only a name: `\\d t; DROP TABLE t` runs nothing
                self.error_console.print(f"{source}:{line}: \\d takes one name", markup=False)
                return False
            return self.run_sql(statement + ";", source, line)
        if command in _LISTINGS:
            return self.run_sql(f"{_LISTINGS[command]};", source, line)
        if command in ("i", "include"):
            if not argument:
                self.error_console.print(f"{source}:{line}: \\{command} needs a file", markup=False)
                return False
            if self.including >= _INCLUDE_DEPTH:  # a file that includes itself
                self.error_console.print(f"{source}:{line}: \\{command} nested more than {_INCLUDE_DEPTH} deep",
                                         markup=False)
                return False
            self.including += 1
            try:
                return self.run_text(read_source(argument), argument)
            except SourceError as error:
                render_error(self.error_console, error)
                return False
            finally:
                self.including -= 1
        if command == "timing":
            if argument not in ("", "on", "off"):
                self.error_console.print(f"{source}:{line}: \\timing takes on or off", markup=False)
                return False
            self.timing = not self.timing if not argument else argument == "on"
            self.console.print(f"Timing is {'on' if self.timing else 'off'}.", markup=False)
            return True
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

    def run_lines(self, lines: Iterable[str], source: str) -> bool:
        """Runs each statement as soon as a line completes it, so a program can converse over a pipe; meta-commands
        on lines of their own between statements. Linear in the input: only an open literal is read again."""
        pending: list[str] = []
        first_line, tracker, done = 1, CompletionTracker(), 0
        try:
            for number, line in enumerate(lines, start=1):
                if not pending:
                    meta = META_LINE.match(line)
                    if meta:
                        if not self.run_meta(meta.group(1), meta.group(2), source, number):
                            return False
                        continue
                    if not line.strip():
                        continue
                    first_line = number
                pending.append(line)
                if tracker.feed(line):
                    if not self.run_sql("".join(pending), source, first_line, done + 1):
                        return False
                    pending, tracker, done = [], CompletionTracker(), done + self.ran
        except SourceError as error:
            render_error(self.error_console, error)
            return False
        return not pending or self.run_sql("".join(pending), source, first_line, done + 1)

    def run_text(self, text: str, source: str) -> bool:
        return self.run_lines(lines_of(text), source)


def check_files(paths: list[str]) -> int:
    """`icesink parse`: parses without executing; exit 1 on the first error."""
    console, error_console = make_console(), make_console(stderr=True)
    for path in paths:
        try:
            text = read_source(path)
            sql = "".join("\n" if META_LINE.match(line) else line for line in lines_of(text))
            count = sum(1 for _ in parse_script(sql, path))
        except IcesinkError as error:
            render_error(error_console, error)
            return 1
        console.print(f"{path}: {count} statement{'s' if count != 1 else ''} OK", markup=False)
    return 0

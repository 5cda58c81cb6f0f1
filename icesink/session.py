"""The one Python API under the REPL, scripts and tests: `icesink.connect(data_dir).execute(sql)`. The composition
root of both planes (docs/architecture.md): it owns the catalog, the control plane and the runtime."""
from __future__ import annotations

import logging
import unicodedata
from itertools import takewhile
from pathlib import Path
from typing import Iterator, Optional

from .catalog.secrets import open_secret_store
from .catalog.store import Catalog, default_data_dir
from .config import spark_settings
from .control.executor import Executor, Result
from .control.planner import SETTINGS, Planner
from .engine.tables import TableStore
from .errors import IcesinkError, ParseError, PlanError, Position
from .grammar.lexical import StatementText, lex, split_statements
from .grammar.masking import REDACTED, iter_secret_spans, merged
from .grammar.parser import parse_statement, statement_kind
from .recursion import deep_recursion

log = logging.getLogger("icesink")


ECHO_WIDTH = 160  # characters of a long line shown around the fault


def _echo_spans(source_text: str, line: tuple[int, int], failing_start: int, parsed: bool) -> list[tuple[int, int]]:
    """What to mask on one line of the input around a failing statement: the statements before it ran, so they
    parsed; the failing one parsed unless its error is a syntax error; those after it were never read. Only the
    statements on the line are read, each once, holding a few lexemes at a time."""
    spans = []
    for stmt in split_statements(source_text):
        end = stmt.start + len(stmt.text)
        if end < line[0] or stmt.start > line[1]:
            continue
        ok = True if stmt.start < failing_start else parsed if stmt.start == failing_start else False
        lexemes = takewhile(lambda x, end=end: x.start < end, lex(source_text, stmt.start, comments=True))
        spans += [(a, b) for a, b in iter_secret_spans(lexemes, ok) if a < line[1] and b > line[0]]
    return merged(spans)


def _visible(text: str) -> str:
    """Tabs, odd spaces and control characters as one space each, so the caret below stays in its column."""
    return "".join(" " if c.isspace() or unicodedata.category(c)[0] == "C" else c for c in text)


def position_of(source_text: str, stmt: StatementText, offset: Optional[int], index: int, source: str,
                parsed: bool = True, first_line: int = 1) -> Position:
    """Line and column of `offset` (into the statement) in the whole input, with the line masked: no secret
    value of any statement on it, and no literal of a statement that did not parse (`parsed` false)."""
    offset = min(max(offset or 0, 0), len(stmt.text))
    absolute = stmt.start + offset
    line_start = source_text.rfind("\n", 0, absolute) + 1
    line_end = source_text.find("\n", absolute)
    line_end = len(source_text) if line_end < 0 else line_end
    line, column = source_text.count("\n", 0, absolute) + first_line, absolute - line_start + 1
    parts, caret, last = [], column, line_start
    for start, end in _echo_spans(source_text, (line_start, line_end), stmt.start, parsed):
        start, end = max(start, line_start), min(end, line_end)
        if start >= end:
            continue
        parts += [source_text[last:start], REDACTED]
        if start < absolute:
            caret -= min(end, absolute) - start - (len(REDACTED) if end <= absolute else 0)
        last = end
    shown = _visible("".join(parts) + source_text[last:line_end].rstrip("\r"))
    if len(shown) > ECHO_WIDTH:
        left = max(0, min(caret - 1 - ECHO_WIDTH // 2, len(shown) - ECHO_WIDTH))
        shown = ("…" if left else "") + shown[left:left + ECHO_WIDTH] + ("…" if left + ECHO_WIDTH < len(shown) else "")
        caret -= left - (1 if left else 0)
    return Position(source, line, column, index, statement_kind(stmt.text), shown, caret)


def parse_script(sql: str, source: str = "<input>", first_line: int = 1) -> Iterator[tuple[StatementText, object]]:
    """Each statement of `sql` with its syntax tree, without executing anything; a syntax error carries its
    position."""
    for index, stmt in enumerate(split_statements(sql), start=1):
        try:
            with deep_recursion():
                statement = parse_statement(stmt.text)
        except RecursionError:
            error = ParseError("the statement is nested too deeply to parse; split it into simpler statements")
            error.position = position_of(sql, stmt, 0, index, source, False, first_line)
            raise error from None
        except ParseError as exc:
            exc.position = position_of(sql, stmt, exc.pos, index, source, False, first_line)
            raise
        yield stmt, statement


class Session:
    """The composition root: the catalog, secrets, planner, executor and engine tables of a data directory, and its
    runtime (Spark, configured once from `spark_master`, `config`, the environment or DATA_DIR/icesink.toml, and the
    scheduler of its sinks). The shell, scripts, `serve` and the Python API all go through it."""

    def __init__(self, data_dir: Path | str | None = None, *, spark_master: str | None = None,
                 config: str | None = None):
        self.data_dir = Path(data_dir) if data_dir is not None else default_data_dir()
        self.catalog = Catalog(self.data_dir)
        self._pending_notices: list[str] = []
        self.secrets = open_secret_store(self.data_dir, self.catalog.install_id, self._pending_notices.append)
        self.settings: dict[str, str] = {}
        self.spark_settings = spark_settings(self.data_dir, config, spark_master)
        self.planner = Planner(self.catalog, self.setting)
        self.tables = TableStore(self.data_dir, writer=True)
        self.executor = Executor(self.catalog, self.secrets, self.tables, self.settings, self.spark)
        self.scheduler = None

    def spark(self):
        """The process's SparkSession, started with this session's settings on first use."""
        from .engine.spark import get_spark

        return get_spark(self.spark_settings.master, self.spark_settings.conf)

    def start_runtime(self):
        """Runs this data directory's sinks in this process, until `stop_runtime`. Raises AlreadyScheduled (with the
        other process's pid) when another process runs them."""
        from .engine.scheduler import Scheduler

        if self.scheduler is None:
            self.scheduler = Scheduler(self.data_dir, self.executor.secret_value, self.spark)
            self.scheduler.start()
        return self.scheduler

    def stop_runtime(self, reason: str = "the icesink session that ran it ended") -> None:
        if self.scheduler is not None:
            self.scheduler.stop(reason)
            self.scheduler = None

    def setting(self, name: str) -> str:
        return self.settings.get(name) or self.catalog.setting(name) or SETTINGS[name]

    def execute(self, sql: str, source: str = "<input>", *, first_line: int = 1,
                first_statement: int = 1) -> list[Result]:
        """Runs every statement in `sql`; stops at the first error, which carries its position. When `sql` is part
        of a longer input, `first_line` and `first_statement` say where in `source` it begins."""
        return list(self.execute_iter(sql, source, first_line=first_line, first_statement=first_statement))

    def execute_iter(self, sql: str, source: str = "<input>", *, first_line: int = 1,
                     first_statement: int = 1) -> Iterator[Result]:
        for index, stmt in enumerate(split_statements(sql), start=first_statement):
            yield self._execute_one(sql, stmt, index, source, first_line)

    def _execute_one(self, sql: str, stmt: StatementText, index: int, source: str, first_line: int) -> Result:
        parsed = False
        try:
            with deep_recursion():
                statement = parse_statement(stmt.text)
                parsed = True
                result = self.executor.run(self.planner.plan(statement, stmt.text))
        except RecursionError:
            error = PlanError(f"the statement is nested too deeply to {'plan' if parsed else 'parse'}; split it "
                              "into views or simpler statements")
            error.position = position_of(sql, stmt, 0, index, source, parsed, first_line)
            raise error from None
        except IcesinkError as exc:
            exc.position = position_of(sql, stmt, exc.pos, index, source, parsed, first_line)
            log.info("statement %d failed: %s", index, exc.message)
            raise
        if self._pending_notices:
            result.notices[:0] = self._pending_notices
            self._pending_notices.clear()
        return result

    def object_names(self) -> list[str]:
        return self.catalog.names()

    def close(self) -> None:
        self.stop_runtime()
        self.tables.close()
        self.catalog.close()

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def connect(data_dir: Path | str | None = None, *, spark_master: str | None = None,
            config: str | None = None) -> Session:
    return Session(data_dir, spark_master=spark_master, config=config)

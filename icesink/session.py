"""The one Python API under the REPL, scripts and tests: `icesink.connect(data_dir).execute(sql)`."""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Iterator, Optional

from .catalog.secrets import open_secret_store
from .catalog.store import Catalog, default_data_dir
from .engine.executor import Executor, Result
from .engine.planner import SETTINGS, Planner
from .engine.tables import TableStore
from .errors import IcesinkError, Position
from .grammar.lexical import REDACTED, StatementText, secret_spans, split_statements
from .grammar.parser import parse_statement, statement_kind

log = logging.getLogger("icesink")


def position_of(source_text: str, stmt: StatementText, offset: Optional[int], index: int,
                source: str) -> Position:
    """Line and column of `offset` (into the statement) in the whole input, with the line redacted."""
    offset = min(max(offset or 0, 0), len(stmt.text))
    absolute = stmt.start + offset
    line_start = source_text.rfind("\n", 0, absolute) + 1
    line_end = source_text.find("\n", absolute)
    line_end = len(source_text) if line_end < 0 else line_end
    line, column = source_text.count("\n", 0, absolute) + 1, absolute - line_start + 1
    shown = source_text[line_start:line_end]
    for start, end in reversed(secret_spans(stmt.text)):
        start, end = max(stmt.start + start, line_start), min(stmt.start + end, line_end)
        if start >= end:
            continue
        shown = shown[:start - line_start] + REDACTED + shown[end - line_start:]
        if end <= absolute:
            column += len(REDACTED) - (end - start)
    return Position(source, line, column, index, statement_kind(stmt.text), shown)


class Session:
    def __init__(self, data_dir: Path | str | None = None):
        self.data_dir = Path(data_dir) if data_dir is not None else default_data_dir()
        self.catalog = Catalog(self.data_dir)
        self._pending_notices: list[str] = []
        self.secrets = open_secret_store(self.data_dir, self.catalog.install_id, self._pending_notices.append)
        self.settings: dict[str, str] = {}
        self.planner = Planner(self.catalog, self.setting)
        self.tables = TableStore(self.data_dir)
        self.executor = Executor(self.catalog, self.secrets, self.tables, self.settings)

    def setting(self, name: str) -> str:
        return self.settings.get(name) or self.catalog.setting(name) or SETTINGS[name]

    def execute(self, sql: str, source: str = "<input>") -> list[Result]:
        """Runs every statement in `sql`; stops at the first error, which carries its position."""
        return list(self.execute_iter(sql, source))

    def execute_iter(self, sql: str, source: str = "<input>") -> Iterator[Result]:
        for index, stmt in enumerate(split_statements(sql), start=1):
            yield self._execute_one(sql, stmt, index, source)

    def _execute_one(self, sql: str, stmt: StatementText, index: int, source: str) -> Result:
        try:
            plan = self.planner.plan(parse_statement(stmt.text), stmt.text)
            result = self.executor.run(plan)
        except IcesinkError as exc:
            exc.position = position_of(sql, stmt, exc.pos, index, source)
            log.info("statement %d failed: %s", index, exc.message)
            raise
        if self._pending_notices:
            result.notices[:0] = self._pending_notices
            self._pending_notices.clear()
        return result

    def object_names(self) -> list[str]:
        return self.catalog.names()

    def close(self) -> None:
        self.tables.close()
        self.catalog.close()

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def connect(data_dir: Path | str | None = None) -> Session:
    return Session(data_dir)

"""Typed errors with a position that every front end (REPL, scripts, API) renders alike."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class Position:
    source: str  # file name, '<stdin>', '<command>' or '<input>'
    line: int  # 1-based
    column: int  # 1-based
    statement: int  # 1-based index of the statement in its input
    statement_kind: str  # e.g. 'CREATE SINK'
    line_text: str  # the offending line (or the part of it around the fault), redacted
    caret: int = 0  # 1-based column of the fault within line_text; 0: the same as `column`

    def location(self) -> str:
        return f"{self.source}:{self.line}:{self.column}"


class IcesinkError(Exception):
    """Base of every error a user can cause. `pos` is an offset into the statement's text."""

    kind = "error"

    def __init__(self, message: str, pos: Optional[int] = None, hint: Optional[str] = None):
        super().__init__(message)
        self.message = message
        self.pos = pos
        self.hint = hint
        self.position: Optional[Position] = None

    def format(self) -> str:
        if self.position is None:
            text = f"{self.kind}: {self.message}"
        else:
            p = self.position
            text = (f"{p.location()}: {self.kind} in statement {p.statement} ({p.statement_kind}): "
                    f"{self.message}\n    {p.line_text}\n    {' ' * ((p.caret or p.column) - 1)}^")
        if self.hint:
            text += f"\nhint: {self.hint}"
        return text

    def __str__(self) -> str:
        return self.format()


class ParseError(IcesinkError):
    kind = "syntax error"


class PlanError(IcesinkError):
    """The statement is well-formed but breaks a rule (unknown object, bad option, KEY rules, …)."""


class CatalogError(IcesinkError):
    """The catalog refuses the change (name taken, dependents exist, …)."""


class NotSupportedYet(IcesinkError):
    kind = "not supported yet"


def first_line(exc: BaseException) -> str:
    """An exception's first line of text (drivers add context and hints below it), else its type's name."""
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__

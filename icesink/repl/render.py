"""Renders results as aligned tables (rich) and errors with their position."""
from __future__ import annotations

import sys

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich import box

from ..session import Result
from ..errors import IcesinkError


def make_console(file=None, stderr: bool = False) -> Console:
    target = file if file is not None else (sys.stderr if stderr else sys.stdout)
    interactive = hasattr(target, "isatty") and target.isatty()
    # Off a terminal, never wrap: a script's output is read by programs and people grepping it.
    return Console(file=target, width=None if interactive else 100_000, highlight=False,
                   force_terminal=None if interactive else False, soft_wrap=not interactive)


def _cell(value) -> str:
    if value is None:
        return "[dim]NULL[/dim]"
    if isinstance(value, bool):  # as psql shows them
        return "t" if value else "f"
    return escape(str(value))


def render_result(console: Console, result: Result) -> None:
    for notice in result.notices:
        console.print(f"NOTICE: {escape(notice)}")
    if not result.columns:
        console.print(result.status)
        return
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    for column in result.columns:
        table.add_column(escape(column), overflow="fold")
    for row in result.rows:
        table.add_row(*(_cell(v) for v in row))
    console.print(table)
    count = len(result.rows)
    console.print(f"({count} row{'s' if count != 1 else ''})")
    console.file.flush()


def render_error(console: Console, error: IcesinkError) -> None:
    console.print(escape(error.format()), style="red" if console.is_terminal else None)
    console.file.flush()

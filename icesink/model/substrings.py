"""Postgres's substring: where it begins and how much it takes, for SQLite's function and Spark's rendering alike."""
from __future__ import annotations

from typing import Optional


def substring_span(start: int, count: Optional[int]) -> tuple[int, Optional[int]]:
    """Where Postgres's substring(text, start[, count]) begins (1 or later) and how many characters it takes (None:
    the rest): a start before 1 still ends at start + count. A negative count is an error, as in Postgres."""
    if count is not None and count < 0:
        raise ValueError("negative substring length not allowed")
    begin = max(start, 1)
    return begin, None if count is None else max(start + count - begin, 0)

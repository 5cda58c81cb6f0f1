"""Room for deep statements. Long expressions and nested queries recurse in sqlglot and in the binder; from Python
3.11 on, Python calls take no C stack, so a deeper limit is safe. Before it the limit stays, and a RecursionError
becomes a clear error where statements are run."""
from __future__ import annotations

import sys
from contextlib import contextmanager

RECURSION_LIMIT = 20_000 if sys.version_info >= (3, 11) else 0


@contextmanager
def deep_recursion():
    previous = sys.getrecursionlimit()
    if previous < RECURSION_LIMIT:
        sys.setrecursionlimit(RECURSION_LIMIT)
    try:
        yield
    finally:
        if previous < RECURSION_LIMIT:
            sys.setrecursionlimit(previous)

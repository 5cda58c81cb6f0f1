"""Opening the data directory and the SQLite files several icesink processes share."""
from __future__ import annotations

import datetime as dt
import errno
import math
import os
import re
import sqlite3
import threading
import time
import zlib
from decimal import Context, Decimal
from contextlib import contextmanager
from pathlib import Path

from ..errors import CatalogError
from ..model.intervals import interval_length, interval_parts, interval_text
from .private import private_file
from .ordered_aggregates import OrderedAggregate
from .sql_functions import AGGREGATES as POSTGRES_AGGREGATES, FUNCTIONS as POSTGRES_FUNCTIONS

BUSY_SECONDS = 30


_raised = threading.local()  # what a Python function called by SQLite raised: SQLite reports only that it failed


def sql_function(function):
    """A Python function for SQLite whose exception keeps its own message (see `sqlite_message`)."""
    def call(*args):
        try:
            return function(*args)
        except Exception as exc:
            _raised.error = exc
            raise
    return call


def _number(value):
    """A value as SQLite's arithmetic reads it, but refusing text that is no number, as Postgres does."""
    if isinstance(value, str):
        text = value.strip()
        try:
            return int(text)
        except ValueError:
            try:
                return float(text)
            except ValueError:
                raise ValueError(f'invalid input syntax for type numeric: "{value}"') from None
    return value


def _operands(a, b):
    """Both as numbers, or None when either is NULL. A zero divisor is an error, as in Postgres (SQLite answers
    NULL)."""
    if a is None or b is None:
        return None
    a, b = _number(a), _number(b)
    if b == 0:
        raise ZeroDivisionError("division by zero")
    return a, b


def divide(a, b):
    """Postgres's `/`: integers truncate toward zero."""
    operands = _operands(a, b)
    if operands is None:
        return None
    a, b = operands
    if isinstance(a, int) and isinstance(b, int):
        quotient = abs(a) // abs(b)
        return quotient if (a < 0) == (b < 0) else -quotient
    return a / b


def modulo(a, b):
    """Postgres's `%`: the sign of the dividend."""
    operands = _operands(a, b)
    if operands is None:
        return None
    a, b = operands
    if isinstance(a, int) and isinstance(b, int):
        return a - b * divide(a, b)
    if b == 0 or not (math.isfinite(a) and math.isfinite(b)):
        return math.fmod(a, b)
    # by the decimal digits a numeric has (Postgres has % of numerics, not of doubles): 1.25 % 0.01 is 0, where
    # the doubles' remainder is 0.00999…; past a double's 17 digits, with as many as the operands need
    dividend, divisor = Decimal(repr(float(a))), Decimal(repr(float(b)))
    digits = max(28, dividend.adjusted() - divisor.as_tuple().exponent + 2)
    return float(Context(prec=digits).remainder(dividend, divisor))


def share(value, parts):
    """Which of `parts` shares a text value falls to, the same in every process (Python's own hash of a str is
    salted per process); a null falls to the first."""
    return 0 if value is None else zlib.crc32(str(value).encode()) % parts


def subtract(a, b):
    """Postgres's `-` where SQLite holds a date or timestamp as text: two of them give the interval between them
    (two dates, the days), a date minus days is a date; numbers (a numeric is held as text) subtract."""
    if a is None or b is None:
        return None
    if _is_moment(a) and _is_moment(b):
        if len(a) == len(b) == 10:
            return (dt.date.fromisoformat(a) - dt.date.fromisoformat(b)).days
        micros = (_moment(a) - _moment(b)) // dt.timedelta(microseconds=1)
        days = int(micros / 86_400_000_000)  # toward zero, as Postgres keeps the sign on both parts
        return interval_text(0, days, micros - days * 86_400_000_000)
    if _is_moment(a) or _is_moment(b):
        return _date_moved(a, b, "-")
    return _number(a) - _number(b)


def add(a, b):
    """Postgres's `+` where SQLite holds a date or timestamp as text: a date plus days is a date; numbers (a numeric
    is held as text) add."""
    if a is None or b is None:
        return None
    if _is_moment(a) or _is_moment(b):
        return _date_moved(a, b, "+")
    return _number(a) + _number(b)


def _date_moved(a, b, op: str) -> str:
    """`date ± days` (or `days + date`); Postgres has no other operator of a moment and a number."""
    date, days = (b, a) if op == "+" and _is_moment(b) else (a, b)
    if _is_moment(date) and len(date) == 10 and isinstance(days, int):
        return (dt.date.fromisoformat(date) + dt.timedelta(days=days if op == "+" else -days)).isoformat()
    def kind(value) -> str:
        return ("date" if len(value) == 10 else "timestamp") if _is_moment(value) else type(value).__name__
    raise ValueError(f"operator does not exist: {kind(a)} {op} {kind(b)}")


def _is_moment(value) -> bool:
    return isinstance(value, str) and _MOMENT.match(value) is not None


_MOMENT = re.compile(r"\d{4}-\d{2}-\d{2}(?:[ T]\d{2}:\d{2}|$)")


def _moment(text: str) -> dt.datetime:
    value = dt.datetime.fromisoformat(text)
    return value.astimezone(dt.timezone.utc).replace(tzinfo=None) if value.tzinfo else value


FUNCTIONS = {"icesink_div": divide, "icesink_mod": modulo, "icesink_share": share, "icesink_sub": subtract,
             "icesink_add": add}


INTERVAL_COLLATION = "icesink_interval"


def compare_intervals(a: str, b: str) -> int:
    """Two intervals' order by their length, as Postgres compares them (a month is 30 days, a day 24 hours); text
    that is no interval compares as text."""
    if _is_moment(a) or _is_moment(b):  # a timestamp moved by an interval: no parse, no exception, per comparison
        return (a > b) - (a < b)
    try:
        length_a, length_b = interval_length(*interval_parts(a)), interval_length(*interval_parts(b))
    except ValueError:
        return (a > b) - (a < b)
    return (length_a > length_b) - (length_a < length_b)


def add_functions(db: sqlite3.Connection) -> None:
    """The functions a query of icesink's SQL calls in SQLite (Postgres's arithmetic and functions SQLite lacks)."""
    for name, function in FUNCTIONS.items():
        db.create_function(name, 2, sql_function(function), deterministic=True)
    for name, (arguments, function) in POSTGRES_FUNCTIONS.items():
        db.create_function(name, arguments, sql_function(function), deterministic=True)
    for name, aggregate in POSTGRES_AGGREGATES.items():
        db.create_aggregate(name, 1, aggregate)
    db.create_aggregate("icesink_ordered_agg", -1, OrderedAggregate)
    db.create_collation(INTERVAL_COLLATION, compare_intervals)
    db.execute("PRAGMA case_sensitive_like = ON")  # Postgres's LIKE; ILIKE is rendered as lower() LIKE lower()


def connect_wal(path: Path, journal_mode: str = "WAL") -> sqlite3.Connection:
    """A connection in WAL mode (or `journal_mode`), in autocommit (callers say BEGIN). Turning WAL on or off needs
    the file to itself for a moment, and SQLite answers "locked" at once instead of waiting when another process
    opens it too: retry."""
    for companion in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        if companion == path or companion.exists():
            private_file(companion)
    db = sqlite3.connect(path, isolation_level=None, timeout=BUSY_SECONDS, check_same_thread=False)
    add_functions(db)
    deadline = time.monotonic() + BUSY_SECONDS
    while True:
        try:
            db.execute(f"PRAGMA journal_mode = {journal_mode}")
            return db
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                db.close()
                raise
            time.sleep(0.05)


_LIMITS = {
    "parser stack overflow": "the statement nests subqueries too deeply for SQLite, which answers queries over system "
                             "views and engine tables (it takes about 14 levels)",
    "Expression tree is too large": "an expression of the statement is too large for SQLite, which answers queries "
                                    "over system views and engine tables (it takes at most 1,000 terms)",
}


def raised_in_function(exc: sqlite3.Error) -> Exception | None:
    """The exception of a Python function that made SQLite fail with `exc`, if one did."""
    raised = getattr(_raised, "error", None)
    _raised.error = None
    return raised if "user-defined function raised exception" in str(exc) else None


def sqlite_message(exc: sqlite3.Error) -> str:
    """SQLite's message in words a user of icesink can act on."""
    message = str(exc)
    raised = raised_in_function(exc)
    if raised is not None:
        return str(raised)
    for prefix, words in _LIMITS.items():
        if message.startswith(prefix):
            return words
    if message.startswith("no such column: "):
        return f"column \"{message[len('no such column: '):]}\" does not exist"
    return message


def _first_existing(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def prepare_data_dir(data_dir: Path) -> None:
    """Creates the data directory (owner-only) or says in one line why it cannot be used."""
    try:
        if data_dir.is_dir():
            return
        existing = _first_existing(data_dir.absolute())
        if existing.exists() and not existing.is_dir():
            where = "is a file" if existing == data_dir.absolute() else f"is under {existing}, which is a file"
            raise CatalogError(f"data directory {data_dir} {where}, not a directory")
        data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise CatalogError(f"data directory {data_dir} cannot be created: {exc.strerror.lower()}") from None


@contextmanager
def database_errors(path: Path, what: str):
    """SQLite's and the file system's complaints about a database file, as one line naming it and the cause."""
    try:
        yield
    except OSError as exc:
        cause = exc.strerror.lower()
        if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS) and not os.access(path.parent, os.W_OK):
            cause = f"cannot write to the data directory {path.parent} ({cause})"
        raise CatalogError(f"{what} {path}: {cause}") from None
    except sqlite3.DatabaseError as exc:
        raise CatalogError(f"{what} {path}: {_file_cause(path, exc)}") from None


def _file_cause(path: Path, exc: sqlite3.DatabaseError) -> str:
    message = str(exc)
    directory = path.parent
    if "not a database" in message or "malformed" in message:
        return "the file is damaged (not an SQLite database); restore it from a backup or move it away"
    if "readonly" in message or not os.access(directory, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        return (f"cannot write to it: the data directory {directory} or the file is read-only; icesink needs to "
                "write its data directory")
    if "unable to open" in message:
        return "cannot open it: " + ("permission denied" if path.exists() and not os.access(path, os.R_OK)
                                     else "the data directory is not readable and writable")
    return message

"""Postgres's intervals: their input ('1 day 2 hours', '1 year 2 mons', '01:02:03', '3 days ago'), their output form,
and a timestamp or date moved by one, as the store keeps them (ISO text)."""
from __future__ import annotations

import calendar
import datetime as dt
import re
from decimal import Decimal

_UNITS = {  # unit -> (months, microseconds)
    "microsecond": (0, 1), "us": (0, 1), "usec": (0, 1),
    "millisecond": (0, 1_000), "ms": (0, 1_000), "msec": (0, 1_000),
    "second": (0, 1_000_000), "s": (0, 1_000_000), "sec": (0, 1_000_000),
    "minute": (0, 60_000_000), "m": (0, 60_000_000), "min": (0, 60_000_000),
    "hour": (0, 3_600_000_000), "h": (0, 3_600_000_000), "hr": (0, 3_600_000_000),
    "day": (0, None), "d": (0, None), "week": (0, "week"), "w": (0, "week"),
    "month": (1, 0), "mon": (1, 0), "year": (12, 0), "y": (12, 0), "yr": (12, 0),
    "decade": (120, 0), "century": (1200, 0), "millennium": (12000, 0),
}
_PART = re.compile(r"([+-]?\d+(?:\.\d+)?)\s*([a-z]+)|([+-]?)(\d+):(\d{1,2})(?::(\d{1,2}(?:\.\d+)?))?")


def _unit(word: str):
    for candidate in (word, word.rstrip("s"), word[:-2] if word.endswith("es") else word):
        if candidate in _UNITS:
            return _UNITS[candidate]
    return None


def interval_length(months: int, days: int, micros: int) -> int:
    """An interval's length in microseconds as Postgres compares intervals: a month is 30 days, a day 24 hours."""
    return (months * 30 + days) * 86_400_000_000 + micros


def interval_parts(value: str) -> tuple[int, int, int]:
    """(months, days, microseconds) of an interval's text; ValueError when it is not one."""
    text = value.strip().lower()
    ago = text.endswith(" ago")
    body = text[:-4].strip() if ago else text
    months, days, micros, position = 0, 0, 0, 0
    for match in _PART.finditer(body):
        if body[position:match.start()].strip(" ,") or not match.group():
            raise ValueError(value)
        position = match.end()
        if match.group(2):
            unit = _unit(match.group(2))
            if unit is None:
                raise ValueError(value)
            amount = Decimal(match.group(1))
            unit_months, unit_micros = unit
            if unit_micros is None or unit_micros == "week":
                days_amount = amount * (7 if unit_micros == "week" else 1)
                days += int(days_amount)
                micros += int((days_amount - int(days_amount)) * 86_400_000_000)
            elif unit_months:
                months += int(amount * unit_months)
            else:
                micros += int(amount * unit_micros)
        else:
            sign = -1 if match.group(3) == "-" else 1
            seconds = Decimal(match.group(6) or 0)
            micros += sign * int((int(match.group(4)) * 3600 + int(match.group(5)) * 60 + seconds) * 1_000_000)
    if not body or body[position:].strip(" ,"):
        raise ValueError(value)
    return (-months, -days, -micros) if ago else (months, days, micros)


def interval_text(months: int, days: int, micros: int) -> str:
    """Postgres's output form of an interval: '1 year 2 mons 3 days 01:02:03'."""
    parts = []
    years, months = int(months / 12), months - int(months / 12) * 12
    for amount, word in ((years, "year"), (months, "mon"), (days, "day")):
        if amount:
            parts.append(f"{amount} {word}{'s' if amount != 1 else ''}")  # -1 days, as Postgres writes it
    if micros or not parts:
        sign, micros = ("-" if micros < 0 else ""), abs(micros)
        seconds, fraction = divmod(micros, 1_000_000)
        clock = f"{sign}{seconds // 3600:02d}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"
        parts.append(clock + (f".{fraction:06d}".rstrip("0") if fraction else ""))
    return " ".join(parts)


def plus_interval(moment, interval, sign):
    """`moment + interval` (sign 1) or `moment - interval` (sign -1) as Postgres computes it: months first (the day
    kept, or the month's last), then days, then the time. A date gives a timestamp; a zoned timestamp stays zoned.
    NULL in, NULL out."""
    if moment is None or interval is None:
        return None
    months, days, micros = (sign * part for part in interval_parts(str(interval)))
    value = dt.datetime.fromisoformat(str(moment))
    if months:
        month = value.year * 12 + value.month - 1 + months
        year, month = divmod(month, 12)
        day = min(value.day, calendar.monthrange(year, month + 1)[1])
        value = value.replace(year=year, month=month + 1, day=day)
    return (value + dt.timedelta(days=days, microseconds=micros)).isoformat(sep=" ")

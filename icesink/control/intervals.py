"""Interval literals as Materialize writes them: '500ms', '10s', '1min', '1m', '5 minutes', '1h30m'."""
from __future__ import annotations

import re

_UNITS_MS = {
    "ms": 1, "msec": 1, "msecs": 1, "millisecond": 1, "milliseconds": 1,
    "s": 1000, "sec": 1000, "secs": 1000, "second": 1000, "seconds": 1000,
    "m": 60_000, "min": 60_000, "mins": 60_000, "minute": 60_000, "minutes": 60_000,
    "h": 3_600_000, "hr": 3_600_000, "hrs": 3_600_000, "hour": 3_600_000, "hours": 3_600_000,
    "d": 86_400_000, "day": 86_400_000, "days": 86_400_000,
}
_PART = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([a-z]+)\s*")


def parse_interval_ms(text: str) -> int:
    """Milliseconds in `text`; ValueError with the reason when it is not an interval."""
    cleaned = text.strip().lower()
    if not cleaned:
        raise ValueError("an empty interval")
    total, position = 0.0, 0
    while position < len(cleaned):
        m = _PART.match(cleaned, position)
        if not m or m.group(2) not in _UNITS_MS:
            raise ValueError(f"'{text}' is not an interval such as '500ms', '10s', '1min', '5 minutes' or '1h'")
        total += float(m.group(1)) * _UNITS_MS[m.group(2)]
        position = m.end()
    return int(round(total))


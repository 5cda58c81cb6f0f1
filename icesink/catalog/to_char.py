"""Postgres's to_char(timestamp or date, template) for SQLite, the value in the store's text form: the template's
patterns (YYYY, MM, DD, HH24, MI, SS, Month, Dy, AM, …, with the FM prefix and the TH suffix) as Postgres writes
them, double-quoted text as it is, anything else copied."""
from __future__ import annotations

import datetime as dt
import re

_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December")
_DAYS = ("Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday")
_ROMAN = ("I", "II", "III", "IV", "V", "VI", "VII", "VIII", "IX", "X", "XI", "XII")


def _hour12(m: dt.datetime) -> int:
    return (m.hour + 11) % 12 + 1


def _week_of_year(m: dt.datetime) -> int:
    return (m.timetuple().tm_yday - 1) // 7 + 1


# numeric patterns, matched in any case: (value, width when padded)
_NUMBERS = {
    "HH24": lambda m: (m.hour, 2), "HH12": lambda m: (_hour12(m), 2), "HH": lambda m: (_hour12(m), 2),
    "MI": lambda m: (m.minute, 2), "SSSSS": lambda m: (m.hour * 3600 + m.minute * 60 + m.second, 1),
    "SSSS": lambda m: (m.hour * 3600 + m.minute * 60 + m.second, 1), "SS": lambda m: (m.second, 2),
    "MS": lambda m: (m.microsecond // 1000, 3), "US": lambda m: (m.microsecond, 6),
    "YYYY": lambda m: (m.year, 4), "YYY": lambda m: (m.year % 1000, 3), "YY": lambda m: (m.year % 100, 2),
    "Y": lambda m: (m.year % 10, 1), "IYYY": lambda m: (m.isocalendar()[0], 4),
    "IYY": lambda m: (m.isocalendar()[0] % 1000, 3), "IY": lambda m: (m.isocalendar()[0] % 100, 2),
    "MM": lambda m: (m.month, 2), "DDD": lambda m: (m.timetuple().tm_yday, 3), "DD": lambda m: (m.day, 2),
    "D": lambda m: (m.isoweekday() % 7 + 1, 1), "ID": lambda m: (m.isoweekday(), 1),
    "IDDD": lambda m: ((m.isocalendar()[1] - 1) * 7 + m.isoweekday(), 3),
    "WW": lambda m: (_week_of_year(m), 2), "W": lambda m: ((m.day - 1) // 7 + 1, 1),
    "IW": lambda m: (m.isocalendar()[1], 2), "CC": lambda m: ((m.year - 1) // 100 + 1, 2),
    "Q": lambda m: ((m.month - 1) // 3 + 1, 1), "J": lambda m: (m.toordinal() + 1721425, 1),
}
# text patterns, matched as written (Month, MONTH and month differ): (text, whether FM may drop its padding)
_WORDS = {
    "Month": lambda m: (_MONTHS[m.month - 1].ljust(9), True), "MONTH": lambda m: (_MONTHS[m.month - 1].upper().ljust(9), True),
    "month": lambda m: (_MONTHS[m.month - 1].lower().ljust(9), True), "Mon": lambda m: (_MONTHS[m.month - 1][:3], False),
    "MON": lambda m: (_MONTHS[m.month - 1][:3].upper(), False), "mon": lambda m: (_MONTHS[m.month - 1][:3].lower(), False),
    "Day": lambda m: (_DAYS[m.isoweekday() % 7].ljust(9), True), "DAY": lambda m: (_DAYS[m.isoweekday() % 7].upper().ljust(9), True),
    "day": lambda m: (_DAYS[m.isoweekday() % 7].lower().ljust(9), True), "Dy": lambda m: (_DAYS[m.isoweekday() % 7][:3], False),
    "DY": lambda m: (_DAYS[m.isoweekday() % 7][:3].upper(), False), "dy": lambda m: (_DAYS[m.isoweekday() % 7][:3].lower(), False),
    "AM": lambda m: ("AM" if m.hour < 12 else "PM", False), "PM": lambda m: ("AM" if m.hour < 12 else "PM", False),
    "am": lambda m: ("am" if m.hour < 12 else "pm", False), "pm": lambda m: ("am" if m.hour < 12 else "pm", False),
    "A.M.": lambda m: ("A.M." if m.hour < 12 else "P.M.", False), "P.M.": lambda m: ("A.M." if m.hour < 12 else "P.M.", False),
    "a.m.": lambda m: ("a.m." if m.hour < 12 else "p.m.", False), "p.m.": lambda m: ("a.m." if m.hour < 12 else "p.m.", False),
    "RM": lambda m: (_ROMAN[m.month - 1].ljust(4), True), "rm": lambda m: (_ROMAN[m.month - 1].lower().ljust(4), True),
}
_ZONES = ("TZH", "TZM", "TZ", "tz", "OF")
_PATTERN = re.compile("|".join(re.escape(p) for p in sorted([*_NUMBERS, *_WORDS, *_ZONES, "Y,YYY"], key=len,
                                                              reverse=True)))
_NUMBER_PATTERN = re.compile("|".join(re.escape(p) for p in sorted([*_NUMBERS, "Y,YYY"], key=len, reverse=True)),
                             re.IGNORECASE)


def _ordinal(number: int, upper: bool) -> str:
    suffix = "th" if 10 <= number % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(number % 10, "th")
    return suffix.upper() if upper else suffix


def _zone(pattern: str, zone: str) -> str:
    """The zone of a timestamptz (the store's `+00:00`; the session's zone is UTC); empty for a timestamp."""
    if not zone:
        return ""
    hours, minutes = zone[:3], zone[4:6] or "00"
    if pattern in ("TZ", "tz"):
        return ("UTC" if pattern == "TZ" else "utc") if zone in ("+00:00", "+00", "Z") else hours
    if pattern == "TZH":
        return hours
    if pattern == "TZM":
        return minutes
    return hours if minutes == "00" else f"{hours}:{minutes}"


def render(moment: dt.datetime, zone: str, template: str) -> str:
    out, i = [], 0
    while i < len(template):
        if template[i] == '"':  # text in double quotes, as it is (\" inside it)
            end = i + 1
            while end < len(template) and template[end] != '"':
                end += 2 if template[end] == "\\" else 1
            out.append(template[i + 1:end].replace('\\"', '"'))
            i = end + 1
            continue
        if template[i] == "\\" and i + 1 < len(template):
            out.append(template[i + 1])
            i += 2
            continue
        fill = template.startswith("FM", i) or template.startswith("fm", i)
        at = i + 2 if fill else i
        found = _PATTERN.match(template, at) or _NUMBER_PATTERN.match(template, at)
        if found is None:
            out.append(template[i])
            i += 1
            continue
        pattern, i = found.group(), found.end()
        ordinal = template[i:i + 2] if template[i:i + 2] in ("TH", "th") else ""
        i += len(ordinal)
        if pattern in _WORDS:
            text, padded = _WORDS[pattern](moment)
            out.append(text.rstrip() if fill and padded else text)
        elif pattern in _ZONES:
            out.append(_zone(pattern, zone))
        else:
            if pattern.upper() == "Y,YYY":
                value, width = moment.year, 0
                text = f"{value // 1000},{value % 1000:03d}"
            else:
                value, width = _NUMBERS[pattern.upper()](moment)
                text = str(value) if fill else str(value).zfill(width)
            out.append(text + (_ordinal(value, ordinal == "TH") if ordinal else ""))
    return "".join(out)

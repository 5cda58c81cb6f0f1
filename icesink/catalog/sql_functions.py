"""Postgres's scalar functions that SQLite lacks, as SQLite functions: queries over engine tables and system views,
and INSERT … SELECT, run on SQLite (control/sqlite_sql.py turns the calls into these names). Values arrive as SQLite
holds them: text in Postgres's output form for timestamps, numbers as numbers; NULL in gives NULL out, except for
concat, which skips NULLs as Postgres does."""
from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import re
import zoneinfo
from decimal import ROUND_DOWN, ROUND_HALF_UP, Context, Decimal
from functools import lru_cache

from ..model.intervals import interval_parts, plus_interval
from ..model.substrings import substring_span
from . import to_char as to_char_text


def repeat(text, count):
    if text is None or count is None:
        return None
    return str(text) * max(0, int(count))


def left(text, count):
    """The first `count` characters; all but the last -`count` when negative."""
    if text is None or count is None:
        return None
    return str(text)[:int(count)]


def right(text, count):
    """The last `count` characters; all but the first -`count` when negative."""
    if text is None or count is None:
        return None
    text, count = str(text), int(count)
    return (text[-count:] if count else "") if count >= 0 else text[-count:]


def md5(text):
    return None if text is None else hashlib.md5(_text(text).encode()).hexdigest()


def upper(text):
    """Each letter upper case, one character for one, as Postgres's upper (SQLite's changes ASCII letters alone;
    Python's writes ß as SS)."""
    return _case(text, str.upper)


def lower(text):
    return _case(text, str.lower)


def _case(text, change):
    if text is None:
        return None
    text = _text(text)
    changed = change(text)
    if len(changed) == len(text):  # no character became two
        return changed
    return "".join(c if len(change(c)) != 1 else change(c) for c in text)


def replace(text, old, new):
    """Each `old` in `text` replaced by `new`; NULL where any is NULL, as Postgres's (SQLite's keeps `text` when
    `old` is empty, even beside a NULL)."""
    if text is None or old is None or new is None:
        return None
    text = _text(text)
    return text.replace(_text(old), _text(new)) if old != "" else text


def concat(*values):
    return "".join(_text(v) for v in values if v is not None)


def lpad(text, length, fill=" "):
    return _pad(text, length, fill, left=True)


def rpad(text, length, fill=" "):
    return _pad(text, length, fill, left=False)


def _pad(text, length, fill, left: bool):
    if text is None or length is None or fill is None:
        return None
    text, length = str(text), int(length)
    if length <= len(text) or not fill:
        return text[:max(0, length)]
    padding = (fill * (length // len(fill) + 1))[:length - len(text)]
    return padding + text if left else text + padding


def split_part(text, delimiter, index):
    if text is None or delimiter is None or index is None:
        return None
    parts = str(text).split(str(delimiter)) if delimiter else [str(text)]
    index = int(index)
    if index == 0:
        raise ValueError("field position must not be zero")
    chosen = index - 1 if index > 0 else len(parts) + index
    return parts[chosen] if 0 <= chosen < len(parts) else ""


def substring(text, start, *count):
    """substring(text, start[, count]), counting as Postgres does where start < 1 (SQLite's substr counts a negative
    start from the end): the characters from `start` to `start + count`, of those the text has."""
    if text is None or start is None or None in count:
        return None
    begin, length = substring_span(int(start), int(count[0]) if count else None)
    text = _text(text)
    return text[begin - 1:] if length is None else text[begin - 1:begin - 1 + length]


def regex_match(text, pattern):
    """`text ~ pattern`: whether the pattern matches anywhere in the text."""
    return _matches(text, pattern, 0)


def regex_match_insensitive(text, pattern):
    """`text ~* pattern`."""
    return _matches(text, pattern, re.IGNORECASE)


def regex_options(flags, function: str) -> tuple[int, bool]:
    """(Python's flags, whether global) from Postgres's option letters: g (not in regexp_match), i and c (case again)
    are taken."""
    python, every = 0, False
    for letter in _text(flags or ""):
        if letter == "g" and function == "regexp_match":
            raise ValueError('regexp_match() does not support the "global" option')
        if letter == "g":
            every = True
        elif letter == "i":
            python |= re.IGNORECASE
        elif letter == "c":
            python &= ~re.IGNORECASE
        else:
            raise ValueError(f'invalid regular expression option: "{letter}" (in {function}, icesink takes g, i and c)')
    return python, every


_BACK_REFERENCE = re.compile(r"\\([1-9&\\])")


def regexp_replace(text, pattern, replacement, flags=None):
    """regexp_replace as Postgres computes it: the first match replaced (every one with the flag g); in the
    replacement, \\1 … \\9 are the groups' text, \\& the match's and \\\\ a backslash."""
    if text is None or pattern is None or replacement is None:
        return None
    python, every = regex_options(flags, "regexp_replace")
    compiled = postgres_regex(_text(pattern), python)
    parts = _replacement(_text(replacement), compiled.groups)

    def substitute(match: re.Match) -> str:
        return "".join(p if isinstance(p, str) else match.group(p) or "" for p in parts)
    return compiled.sub(substitute, _text(text), count=0 if every else 1)


@lru_cache(maxsize=64)
def _replacement(replacement: str, groups: int) -> tuple:
    """A replacement's parts, read once rather than at each match: text, or the number of the group whose text
    goes there (0, \\&, the whole match); a group the pattern does not have is empty."""
    parts, at = [], 0
    for ref in _BACK_REFERENCE.finditer(replacement):
        parts.append(replacement[at:ref.start()])
        name = ref.group(1)
        parts.append("\\" if name == "\\" else 0 if name == "&" else int(name) if int(name) <= groups else "")
        at = ref.end()
    parts.append(replacement[at:])
    return tuple(p for p in parts if p != "")


def regexp_match(text, pattern, flags=None):
    """regexp_match: the first match's groups (the whole match when the pattern has none) as a text array, held as
    JSON; NULL where nothing matches."""
    if text is None or pattern is None:
        return None
    python, _ = regex_options(flags, "regexp_match")
    match = postgres_regex(_text(pattern), python).search(_text(text))
    if match is None:
        return None
    return json.dumps(list(match.groups()) if match.re.groups else [match.group(0)])


def array_to_string(array, delimiter, null_text=None):
    """An array's elements as text, between `delimiter`: NULL elements left out, or written as `null_text`; a nested
    array's elements in order; true and false as t and f, as Postgres prints a boolean."""
    if array is None or delimiter is None:
        return None
    texts = []

    def add(element):
        if isinstance(element, list):
            for inner in element:
                add(inner)
        elif element is None:
            if null_text is not None:
                texts.append(_text(null_text))
        elif isinstance(element, bool):
            texts.append("t" if element else "f")
        elif isinstance(element, dict):
            texts.append(json.dumps(element))
        else:
            texts.append(_text(element))
    for element in _elements(array):
        add(element)
    return _text(delimiter).join(texts)


def array_length(array, dimension=1):
    """The length of an array's dimension (only the first is taken): NULL for an empty array, as in Postgres."""
    if array is None or dimension is None:
        return None
    elements = _elements(array)
    if int(dimension) != 1:
        return len(elements[0]) if int(dimension) == 2 and elements and isinstance(elements[0], list) else None
    return len(elements) or None


def cardinality(array):
    """The number of an array's elements, in all its dimensions; 0 for an empty one."""
    if array is None:
        return None

    def count(elements) -> int:
        return sum(count(e) if isinstance(e, list) else 1 for e in elements)
    return count(_elements(array))


def jsonb_array_length(document):
    if document is None:
        return None
    value = json.loads(document)
    if not isinstance(value, list):
        raise ValueError("cannot get array length of " + ("a non-array" if isinstance(value, dict) else "a scalar"))
    return len(value)


_JSON_TYPES = {dict: "object", list: "array", str: "string", bool: "boolean", int: "number", float: "number",
               type(None): "null"}


def jsonb_typeof(document):
    return None if document is None else _JSON_TYPES[type(json.loads(document))]


def _matches(text, pattern, flags: int):
    if text is None or pattern is None:
        return None
    return int(postgres_regex(_text(pattern), flags).search(_text(text)) is not None)


# Postgres's bracket classes ([[:digit:]]), which Python's re would read as a set of their letters, as Python's
_CLASSES = {"alpha": r"[^\W\d_]", "digit": r"\d", "alnum": r"[^\W_]", "upper": "[A-Z]", "lower": "[a-z]",
            "space": r"\s", "blank": r"[ \t]", "punct": r"[!-/:-@\[-`{-~]", "xdigit": "[0-9A-Fa-f]", "word": r"\w",
            "cntrl": r"[\x00-\x1f\x7f]", "print": r"[\x20-\x7e]", "graph": r"[\x21-\x7e]"}
# Postgres's escapes Python spells otherwise: word boundaries, and the end of the text (Python's `$` also matches
# before a final newline, Postgres's only at the end)
_ESCAPES = {r"\y": r"\b", r"\Y": r"\B", r"\m": r"\b(?=\w)", r"\M": r"\b(?<=\w)", "$": r"\Z"}
_REGEX_PART = re.compile(r"\\.|\[\^?\]?(?:\[:\w+:\]|[^\]])*\]|[^\\\[]|.", re.S)


@lru_cache(maxsize=256)
def postgres_regex(pattern: str, flags: int = 0) -> re.Pattern:
    """A Postgres regular expression compiled by Python's re, as Postgres reads it by default: `.` matches a
    newline, `$` only the end. Raises ValueError, in Postgres's words, for a pattern neither can read."""
    parts = [_ESCAPES.get(p) or (_bracket(p) if "[:" in p[1:] else p) for p in _REGEX_PART.findall(pattern)]
    try:
        return re.compile("".join(parts), flags | re.DOTALL)
    except re.error as exc:
        raise ValueError(f"invalid regular expression: {exc}") from None


def _bracket(part: str) -> str:
    """A bracket expression with classes as an alternation of the rest and the classes (`[^…]`: none of them)."""
    negated = part.startswith("[^")
    body = part[2 if negated else 1:-1]
    choices = []
    for name in re.findall(r"\[:(\w+):\]", body):
        if name not in _CLASSES:
            raise ValueError(f"invalid regular expression: invalid character class [:{name}:]")
        choices.append(_CLASSES[name])
    rest = re.sub(r"\[:\w+:\]", "", body)
    choices += [f"[{rest}]"] if rest else []
    either = "|".join(choices)
    return f"(?:(?!{either})[\\s\\S])" if negated else f"(?:{either})"


_TIMESTAMP = re.compile(r"^(\d{4,})-(\d{2})-(\d{2})(?:[ T](\d{2}):(\d{2}):(\d{2})(\.\d+)?)?(.*)$")
_UNITS = ("microseconds", "milliseconds", "second", "minute", "hour", "day", "week", "month", "quarter", "year",
          "decade", "century", "millennium")


# date_trunc to these units of a timestamp as the store keeps it ('2026-11-01 10:42:07', no fraction or zone): the
# text to keep, and what follows it (sqlite_sql.py cuts such values in SQLite's own terms the same way)
DATE_CUTS = {"day": (10, " 00:00:00"), "hour": (13, ":00:00"), "minute": (16, ":00")}


def date_trunc(unit, value):
    """date_trunc('hour', ts) on a timestamp or date in Postgres's text form; the result keeps its time zone (of a
    date, a timestamptz's)."""
    if unit is None or value is None:
        return None
    cut = DATE_CUTS.get(unit.lower() if isinstance(unit, str) else None)
    if cut is not None and isinstance(value, str) and len(value) == 19 and value[10] == " " and value[4] == "-":
        return value[:cut[0]] + cut[1]
    unit = str(unit).lower().rstrip("s") if str(unit).lower() not in _UNITS else str(unit).lower()
    unit = {"microsecond": "microseconds", "millisecond": "milliseconds"}.get(unit, unit)
    if unit not in _UNITS:
        raise ValueError(f"unit \"{unit}\" not recognized for date_trunc; one of {', '.join(_UNITS)}")
    parsed = _moment(value)
    if parsed is None:
        raise ValueError(f"date_trunc takes a timestamp or a date, not {value!r}")
    moment, zone = parsed
    if len(str(value)) == 10:  # of a date, a timestamptz (Postgres reads the date as one), at UTC, this session's zone
        zone = "+00:00"
    if unit in ("millennium", "century", "decade"):
        size = {"millennium": 1000, "century": 100, "decade": 10}[unit]
        first = (moment.year - 1) // size * size + 1 if unit != "decade" else moment.year // 10 * 10
        moment = dt.datetime(first, 1, 1)
    elif unit == "year":
        moment = dt.datetime(moment.year, 1, 1)
    elif unit == "quarter":
        moment = dt.datetime(moment.year, (moment.month - 1) // 3 * 3 + 1, 1)
    elif unit == "month":
        moment = dt.datetime(moment.year, moment.month, 1)
    elif unit == "week":
        moment = dt.datetime.combine(moment.date() - dt.timedelta(days=moment.weekday()), dt.time())
    else:
        keep = {"day": 3, "hour": 4, "minute": 5, "second": 6, "milliseconds": 7, "microseconds": 7}[unit]
        fields = [moment.year, moment.month, moment.day, moment.hour, moment.minute, moment.second,
                  moment.microsecond // 1000 * 1000 if unit == "milliseconds" else moment.microsecond][:keep]
        moment = dt.datetime(*fields)
    text = moment.strftime("%Y-%m-%d %H:%M:%S")
    if moment.microsecond:
        text += f".{moment.microsecond:06d}".rstrip("0")
    return text + zone


def _moment(value) -> tuple[dt.datetime, str] | None:
    """A timestamp or date in Postgres's text form, and its zone's text ('' without one); None for other text."""
    found = _TIMESTAMP.match(str(value))
    if found is None:
        return None
    year, month, day, hour, minute, second, fraction, zone = found.groups()
    return dt.datetime(int(year), int(month), int(day), int(hour or 0), int(minute or 0), int(second or 0),
                       int(round(float(fraction or 0) * 1_000_000))), zone


def date_bin(stride, source, origin):
    """date_bin(stride, source, origin): the start of the bin of `stride` (an interval of days and time, counted from
    `origin`) that holds `source`, of the source's type."""
    if stride is None or source is None or origin is None:
        return None
    months, days, micros = interval_parts(str(stride))
    if months:
        raise ValueError("timestamps cannot be binned into intervals containing months or years")
    width = days * 86_400_000_000 + micros
    if width <= 0:
        raise ValueError("stride must be greater than zero")
    parsed, start = _moment(source), _moment(origin)
    if parsed is None or start is None:
        raise ValueError(f"date_bin takes timestamps, not {source if parsed is None else origin!r}")
    (moment, zone), (first, _) = parsed, start
    offset = (moment - first) // dt.timedelta(microseconds=1)
    return (first + dt.timedelta(microseconds=offset - offset % width)).isoformat(sep=" ") + zone


def to_char(value, template):
    """to_char(timestamp or date, template), as Postgres writes it (catalog/to_char.py)."""
    if value is None or template is None:
        return None
    parsed = _moment(value)
    if parsed is None:
        raise ValueError("to_char of a number is not supported yet: to_char takes a timestamp or a date here")
    return to_char_text.render(*parsed, _text(template))


def date_part(field, value):
    """date_part('hour', ts), and EXTRACT(hour FROM ts), of a timestamp or date in Postgres's text form, or of an
    interval ('1 day 02:00:00', as `ts - ts` gives one): a whole number where the field is one, seconds with their
    fraction."""
    if field is None or value is None:
        return None
    parsed = _moment(value)
    parts = _interval_fields(str(value)) if parsed is None else _moment_fields(parsed[0])
    name = str(field).lower()
    key = {"years": "year", "months": "month", "days": "day", "hours": "hour", "minutes": "minute",
           "seconds": "second", "millisecond": "milliseconds", "microsecond": "microseconds"}.get(name, name)
    if key not in parts:
        what = "an interval" if parsed is None else "a timestamp"
        raise ValueError(f"unit \"{field}\" not recognized for date_part of {what}; one of {', '.join(parts)}")
    part = parts[key]
    return int(part) if float(part).is_integer() else part


def _moment_fields(moment: dt.datetime) -> dict:
    seconds = moment.second + moment.microsecond / 1_000_000
    return {
        "year": moment.year, "month": moment.month, "day": moment.day, "hour": moment.hour,
        "minute": moment.minute, "second": seconds, "milliseconds": seconds * 1000,
        "microseconds": moment.second * 1_000_000 + moment.microsecond, "quarter": (moment.month - 1) // 3 + 1,
        "dow": moment.isoweekday() % 7, "isodow": moment.isoweekday(), "doy": moment.timetuple().tm_yday,
        "week": moment.isocalendar()[1], "isoyear": moment.isocalendar()[0], "decade": moment.year // 10,
        "century": (moment.year - 1) // 100 + 1, "millennium": (moment.year - 1) // 1000 + 1,
        "epoch": moment.replace(tzinfo=dt.timezone.utc).timestamp(),
    }


def _interval_fields(value: str) -> dict:
    """An interval's fields as Postgres splits them, and its epoch with Postgres's 365.25-day years and 30-day
    months."""
    try:
        months, days, micros = interval_parts(value)
    except ValueError:
        raise ValueError(f"date_part takes a timestamp, a date or an interval, not {value!r}") from None
    years, months = int(months / 12), months - int(months / 12) * 12
    seconds = micros / 1_000_000
    minutes = int(abs(micros) / 60_000_000) % 60
    return {"year": years, "month": months, "day": days, "hour": int(micros / 3_600_000_000),
            "minute": minutes if micros >= 0 else -minutes, "second": math.fmod(seconds, 60),
            "epoch": years * 365.25 * 86_400 + months * 30 * 86_400 + days * 86_400 + seconds}


def row(*fields):
    """ROW(a, b, …): a record's fields as a JSON array, which a record column's input function takes (a nested
    ROW arrives as JSON text, and is read as such by its field's input function)."""
    return json.dumps([f if not isinstance(f, bytes) else f.decode() for f in fields])


def _elements(array) -> tuple:
    """An array's elements from the JSON it is held as; text that is none is not an array. A short one is parsed
    once: a constant array (`x = ANY (ARRAY[1, 2])`) is the same text on every row, and a long one (array_agg's)
    is not kept alive by the cache."""
    if isinstance(array, str) and len(array) <= _CACHED_TEXT:
        return _short_elements(array)
    return _parsed_elements(array)


_CACHED_TEXT = 4096


@lru_cache(maxsize=64)
def _short_elements(array: str) -> tuple:
    return _parsed_elements(array)


def _parsed_elements(array) -> tuple:
    try:
        elements = json.loads(array) if isinstance(array, str) else None
    except ValueError:
        elements = None
    if not isinstance(elements, list):
        raise ValueError(f"malformed array literal: \"{array}\"")
    return tuple(elements)


def array_has(array, value):
    """`value = ANY (array)` as Postgres answers it, the array held as JSON: NULL for a NULL array, and where
    nothing equals the value but an element or the value is NULL."""
    if array is None:
        return None
    elements = _elements(array)
    if value is not None and value in elements:
        return 1
    return None if elements and (value is None or None in elements) else 0


def subscript(array, index):
    """`array[index]` as Postgres answers it, the array held as JSON and counted from 1: NULL out of its bounds; an
    element that is itself an array or a record as JSON, a truth value as 1 or 0 (as SQLite holds one)."""
    if array is None or index is None:
        return None
    elements, at = _elements(array), int(index)
    if not 1 <= at <= len(elements):
        return None
    value = elements[at - 1]
    return json.dumps(value) if isinstance(value, (list, dict)) else int(value) if isinstance(value, bool) else value


_INTEGER_BITS = {"smallint": 16, "integer": 32, "bigint": 64}


def integer(value, type_name: str):
    """A cast to `type_name` (smallint, integer, bigint) as Postgres casts a numeric: rounded half away from zero,
    and out of the type's range an error (SQLite's CAST truncates, reads text to its first non-digit, and wraps). A
    numeric is held as text, or as a double where SQLite computed it (`7 / 2.0`, `avg(x)`); a double precision,
    which Postgres rounds half to even, comes rounded so already where the binder knew it for one (`rint`)."""
    if value is None or isinstance(value, int) and type_name == "bigint":
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{type_name} out of range")
        whole = int(Decimal(value).to_integral_value(ROUND_HALF_UP))
    elif isinstance(value, int):
        whole = value
    else:
        text = value.decode() if isinstance(value, bytes) else str(value)
        try:
            number = Decimal(text.strip())
        except ArithmeticError:
            raise ValueError(f'invalid input syntax for type {type_name}: "{text}"') from None
        if not number.is_finite():
            raise ValueError(f"{type_name} out of range")
        whole = int(number.to_integral_value(ROUND_HALF_UP))
    bits = _INTEGER_BITS[type_name]
    if not -(1 << (bits - 1)) <= whole < 1 << (bits - 1):
        raise ValueError(f"{type_name} out of range")
    return whole


_MOMENT_TEXT = re.compile(r"(\d{4,}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}|\d{2}:\d{2}:\d{2})(?:\.(\d*?)0*)?([+-]\d{2})?(:00)?")


def moment_text(value):
    """A timestamp, timestamptz or time as the store holds it ('… 10:00:00.500000+00:00') as Postgres prints it
    ('… 10:00:00.5+00'): a fraction without its trailing zeros, a zone of whole hours without its minutes; other
    values as they are."""
    if not isinstance(value, str):
        return value
    match = _MOMENT_TEXT.fullmatch(value)
    if match is None:
        return value
    whole, fraction, zone, minutes = match.groups()
    if minutes is not None and zone is None:
        return value
    return whole + (f".{fraction}" if fraction else "") + (zone or "")


def float_text(value, type_name: str):
    """A double precision's or real's text as Postgres writes it: its shortest digits, without `.0`, in exponent
    form from 1e15 (1e6 for a real) and below 1e-4 (SQLite writes 3.0, 1000000000000000.0, and a real's double)."""
    if value is None or isinstance(value, str):
        return value
    if type_name != "real":
        return _double_text(float(value))
    import numpy as np  # a real's shortest digits are a float32's, which Python's repr does not know

    number = np.float32(value)
    if np.isnan(number):
        return "NaN"
    if np.isinf(number):
        return "Infinity" if number > 0 else "-Infinity"
    scientific = np.format_float_scientific(number, unique=True, trim="-", exp_digits=2)
    exponent = int(scientific.rsplit("e", 1)[1])
    if number != 0 and (exponent < -4 or exponent >= (6 if type_name == "real" else 15)):
        return scientific
    return np.format_float_positional(number, unique=True, trim="-")


def numeric_text(value, scale: int):
    """A numeric's text with `scale` digits after the point, as Postgres writes one of that scale (SQLite computes
    a numeric as a double: 2.5 where Postgres has 2.50)."""
    if value is None:
        return None
    if (isinstance(value, str) and scale and value.find(".") == len(value) - int(scale) - 1 and value[-1].isdigit()
            and not value.startswith("-0")):
        return value  # a stored numeric's text, which has its column's scale
    if isinstance(value, float) and not math.isfinite(value):
        return float_text(value, "double precision")
    try:
        number = Decimal(repr(value) if isinstance(value, float) else str(value))
    except ArithmeticError:
        return value
    shown = number.quantize(Decimal(1).scaleb(-int(scale)), ROUND_HALF_UP, _digits_for(number, int(scale)))
    return str(shown.copy_abs() if shown.is_zero() else shown)  # a numeric has no -0 (a double's ceil(-0.25) has)


def _digits_for(number: Decimal, scale: int) -> Context:
    """A context that keeps every digit of `number` quantized to `scale` (the default one keeps 28; Postgres's
    scale goes to 16,383)."""
    return _context(max(28, number.adjusted() + scale + 2))


@lru_cache(maxsize=None)
def _context(digits: int) -> Context:  # one per precision: a value's text is written without making one
    return Context(prec=digits)


def trunc(value, digits):
    """trunc(x, digits): x cut toward zero to `digits` after the point (before it, where negative), as Postgres
    cuts a numeric; by its decimal digits, which x * 10^digits would miss (1.13 * 100 is 112.99…)."""
    return _to_digits(value, digits, ROUND_DOWN)


def round_digits(value, digits):
    """round(x, digits) where SQLite's would not (digits before the point: round(155.5, -1) is 160, SQLite's 156)."""
    return _to_digits(value, digits, ROUND_HALF_UP)


def _within(value, digits: int) -> bool:
    """Whether a number, or a number's plain text, has no more than `digits` after the point."""
    if isinstance(value, int) or isinstance(value, float) and value.is_integer():
        return True
    plain = _PLAIN_NUMBER.fullmatch(value) if isinstance(value, str) else None
    return plain is not None and len(plain.group(1) or ".") - 1 <= digits


_PLAIN_NUMBER = re.compile(r"\s*[-+]?\d+(\.\d*)?\s*")


def numeric_input(value):
    """`text::numeric`: the number the text writes, as a double (as SQLite's CAST computes it, its digits shown by
    the text's scale), refused as Postgres's input refuses text that is no number; NaN and the infinities, which an
    Iceberg decimal cannot hold, are not supported."""
    if value is None:
        return None
    try:
        number = Decimal(str(value).strip())
    except ArithmeticError:
        raise ValueError(f'invalid input syntax for type numeric: "{value}"') from None
    if not number.is_finite():
        raise ValueError(f"numeric {value} is not supported: icesink keeps a numeric as an Iceberg decimal, which is "
                         "finite")
    return float(number) + 0.0


def numeric_cast(value, precision, scale):
    """`value::numeric(precision, scale)`: rounded half away from zero to `scale`, and refused past `precision`'s
    digits, as Postgres casts."""
    cut = _to_digits(value, scale, ROUND_HALF_UP)
    if isinstance(cut, float) and math.isfinite(cut) and abs(cut) >= 10 ** (int(precision) - int(scale)):
        raise ValueError("numeric field overflow")
    return cut


def _to_digits(value, digits, rounding: str):
    """`value` cut or rounded to `digits`, a double (digits past a double's 17 change nothing), which divides as a
    numeric does (an integer would truncate: n::numeric(10) / 2); shown whole by its scale."""
    if value is None or digits is None:
        return None
    if int(digits) >= 0 and _within(value, int(digits)):  # as it is: no digit to cut (a stored numeric's text)
        return float(value) + 0.0
    try:
        number = Decimal(repr(value) if isinstance(value, float) else str(value).strip())
    except ArithmeticError:
        raise ValueError(f'invalid input syntax for type numeric: "{value}"') from None
    if not number.is_finite():
        return value
    digits = max(-400, min(400, int(digits)))
    cut = number.quantize(Decimal(1).scaleb(-digits), rounding, _digits_for(number, digits))
    return float(cut) + 0.0  # not -0.0


def _double_text(number: float) -> str:
    """A double's text by Python's repr, its shortest digits too, which takes the exponent form from 1e16 rather
    than Postgres's 1e15."""
    if not math.isfinite(number):
        return "NaN" if math.isnan(number) else "Infinity" if number > 0 else "-Infinity"
    text = repr(number)
    if 1e15 <= abs(number) < 1e16:  # 16 digits before the point
        whole, fraction = text.lstrip("-").split(".")
        digits = (whole + fraction.rstrip("0")).rstrip("0")
        return f"{'-' if number < 0 else ''}{digits[0]}{'.' + digits[1:] if digits[1:] else ''}e+15"
    return text[:-2] if text.endswith(".0") else text


def rint(value):
    """A double rounded half to even, as Postgres rounds one (its round and its casts to integers)."""
    if value is None or isinstance(value, int):
        return value
    return float(round(float(value)))


def _text(value) -> str:
    if isinstance(value, float) and value.is_integer():
        return repr(value)
    return str(value)


def concat_ws(separator, *values):
    """The values joined by `separator`, NULLs skipped; a NULL separator gives NULL."""
    if separator is None:
        return None
    return _text(separator).join(_text(v) for v in values if v is not None)


_WORD = re.compile(r"[^\W_]+")


def initcap(text):
    """Each word's first letter upper case and the rest lower, a word being a run of letters and digits."""
    if text is None:
        return None
    return _WORD.sub(lambda m: m.group(0)[0].upper() + m.group(0)[1:].lower(), str(text))


def starts_with(text, prefix):
    if text is None or prefix is None:
        return None
    return int(_text(text).startswith(_text(prefix)))


def octet_length(text):
    return None if text is None else len(_text(text).encode())


def reverse(text):
    return None if text is None else _text(text)[::-1]


def translate(text, source, target):
    """Each character of `source` in `text` replaced by the one at its place in `target`, or removed past its end."""
    if text is None or source is None or target is None:
        return None
    source, target = str(source), str(target)
    table = {}
    for i, char in enumerate(source):
        table.setdefault(ord(char), target[i] if i < len(target) else None)
    return str(text).translate(table)


def ascii_code(text):
    return None if text is None else (ord(str(text)[0]) if str(text) else 0)


def make_date(year, month, day):
    if None in (year, month, day):
        return None
    try:
        return dt.date(int(year), int(month), int(day)).isoformat()
    except ValueError:
        raise ValueError(f"date field value out of range: {int(year)}-{int(month):02d}-{int(day):02d}") from None


def gcd(a, b):
    return None if a is None or b is None else math.gcd(int(a), int(b))


def lcm(a, b):
    return None if a is None or b is None else math.lcm(int(a), int(b))


def cbrt(value):
    if value is None:
        return None
    value = float(value)
    root = math.copysign(abs(value) ** (1 / 3), value)
    return float(round(root)) if round(root) ** 3 == value else root  # 64 ** (1/3) is 3.9999999999999996


def timezone(zone, value):
    """`value AT TIME ZONE zone`: a timestamp read as the zone's local time is that moment (a timestamp with time
    zone, held in UTC); a timestamp with time zone (text with an offset) is the zone's local time then."""
    if zone is None or value is None:
        return None
    moment, where = dt.datetime.fromisoformat(str(value)), time_zone(str(zone))
    if len(str(value)) == 10:  # a date is taken as a timestamp with time zone, midnight in UTC (the session's zone)
        moment = moment.replace(tzinfo=dt.timezone.utc)
    if moment.tzinfo is None:
        return moment.replace(tzinfo=where).astimezone(dt.timezone.utc).isoformat(sep=" ")
    return moment.astimezone(where).replace(tzinfo=None).isoformat(sep=" ")


def to_timestamp(seconds):
    """Postgres's to_timestamp(seconds since the epoch): a timestamp with time zone, held in UTC, to the
    microsecond (sqlglot calls it UNIX_TO_TIME)."""
    if seconds is None:
        return None
    try:
        number = float(seconds)
    except ValueError:
        raise ValueError(f"invalid input syntax for type double precision: \"{seconds}\"") from None
    try:
        return (_EPOCH + dt.timedelta(microseconds=round(number * 1_000_000))).isoformat(sep=" ")
    except (ValueError, OverflowError):
        raise ValueError(f"timestamp out of range: \"{seconds}\"") from None


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


@lru_cache(maxsize=64)
def time_zone(name: str) -> dt.tzinfo:
    """A time zone by its name, in any case, as Postgres takes it ('UTC', 'Europe/Paris')."""
    if name.upper() in ("UTC", "GMT", "Z", "UCT", "ZULU"):
        return dt.timezone.utc
    found = _zone_names().get(name.lower())
    if found is None:
        raise ValueError(f'time zone "{name}" not recognized')
    return zoneinfo.ZoneInfo(found)


@lru_cache(maxsize=1)
def _zone_names() -> dict[str, str]:
    return {name.lower(): name for name in zoneinfo.available_timezones()}


class _Spread:
    """Postgres's variance and standard deviation aggregates (Welford's running mean: one pass, no cancellation);
    `population`: divide by n rather than n - 1; `root`: the standard deviation. Fewer rows than the divisor needs
    give NULL."""
    population = root = False

    def __init__(self):
        self.n, self.mean, self.m2 = 0, 0.0, 0.0

    def step(self, value):
        if value is not None:
            self.n += 1
            delta = float(value) - self.mean
            self.mean += delta / self.n
            self.m2 += delta * (float(value) - self.mean)

    def finalize(self):
        divisor = self.n if self.population else self.n - 1
        if divisor <= 0:
            return None
        variance = self.m2 / divisor
        return math.sqrt(variance) if self.root else variance


def _spread(population: bool, root: bool) -> type:
    return type("Spread", (_Spread,), {"population": population, "root": root})


# name in SQLite (as sqlglot writes Postgres's): the aggregate's class
AGGREGATES = {"stddev": _spread(False, True), "stddev_samp": _spread(False, True), "stddev_pop": _spread(True, True),
              "variance": _spread(False, False), "variance_pop": _spread(True, False)}


# name in SQLite: (number of arguments, -1 for any; the function)
FUNCTIONS = {
    "repeat": (2, repeat), "icesink_left": (2, left), "icesink_right": (2, right), "md5": (1, md5), "icesink_upper": (1, upper),
    "icesink_replace": (3, replace), "icesink_lower": (1, lower),
    "icesink_concat": (-1, concat), "lpad": (-1, lpad), "rpad": (-1, rpad), "split_part": (3, split_part),
    "icesink_date_trunc": (2, date_trunc), "icesink_row": (-1, row), "icesink_plus_interval": (3, plus_interval),
    "date_part": (2, date_part), "concat_ws": (-1, concat_ws), "initcap": (1, initcap),
    "starts_with": (2, starts_with), "octet_length": (1, octet_length), "reverse": (1, reverse),
    "translate": (3, translate), "ascii": (1, ascii_code), "make_date": (3, make_date), "gcd": (2, gcd),
    "lcm": (2, lcm), "cbrt": (1, cbrt), "timezone": (2, timezone), "unix_to_time": (1, to_timestamp),
    "icesink_substring": (-1, substring), "icesink_regex": (2, regex_match),
    "icesink_iregex": (2, regex_match_insensitive), "icesink_array_has": (2, array_has),
    "icesink_subscript": (2, subscript), "icesink_integer": (2, integer), "icesink_text": (1, moment_text), "regexp_replace": (-1, regexp_replace),
    "regexp_match": (-1, regexp_match), "array_to_string": (-1, array_to_string), "array_length": (-1, array_length),
    "cardinality": (1, cardinality), "date_bin": (3, date_bin), "to_char": (2, to_char),
    "rint": (1, rint), "icesink_float_text": (2, float_text), "icesink_numeric_text": (2, numeric_text), "icesink_trunc": (2, trunc), "icesink_round": (2, round_digits), "icesink_numeric": (3, numeric_cast), "icesink_numeric_input": (1, numeric_input), "jsonb_array_length": (1, jsonb_array_length), "jsonb_typeof": (1, jsonb_typeof),
}

"""Input functions of Materialize's maps (`map[text=>T]`), Postgres's ranges (`int4range`, …, `tstzrange`) and
records (CREATE TYPE … AS (…), ROW(…)), as values.py has them for the other types: what they accept, refuse, and
store (JSON text for a map or a record, a range's canonical text, which the sink writes as Materialize's struct of
bounds)."""
from __future__ import annotations

import json
import re
from typing import Callable

from ..model.types import RANGE_BOUNDS as _RANGE_BOUNDS
from ..model.types import decoder, held_as_json
from .values import InvalidValue, input_function

_DISCRETE = {"int4range", "int8range", "daterange"}  # canonical as [lower, upper), as Postgres makes them
_QUOTED = r'"(?:[^"\\]|\\.)*"'
_RANGE = re.compile(rf'\s*([\[(])\s*({_QUOTED}|[^,"]*?)\s*,\s*({_QUOTED}|[^,"]*?)\s*([\])])\s*')
_MAP_ENTRY = re.compile(rf'\s*({_QUOTED}|[^,=>{{}}"\s]+)\s*=>\s*({_QUOTED}|[^,{{}}"]*?)\s*(?:,|$)')


def _unquoted(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text[1:-1]) if text.startswith('"') else text


def range_input(type_name: str) -> Callable:
    """'[1,5)', '(1,5]', '[,5)' (unbounded), 'empty': stored as Postgres prints it, discrete ranges made canonical
    ('[2,6)' for '(1,5]'), a range with no values as 'empty'."""
    bound_type = _RANGE_BOUNDS[type_name]
    bound, value_of = input_function(bound_type), decoder(bound_type)
    discrete = type_name in _DISCRETE

    def step(stored):
        if bound_type == "date":
            import datetime as dt
            return bound(str(dt.date.fromisoformat(stored) + dt.timedelta(days=1)))
        return bound(int(stored) + 1)

    def convert(value):
        if not isinstance(value, str):
            raise InvalidValue(f'malformed range literal: "{value}"; write it as \'[1,10)\'')
        if value.strip().lower() == "empty":
            return "empty"
        match = _RANGE.fullmatch(value)
        if match is None:
            raise InvalidValue(f'malformed range literal: "{value}"; write it as \'[lower,upper)\', with [ or ( and '
                               '] or ), a bound left out for none')
        opening, lower, upper, closing = match.groups()
        lower = None if lower == "" else bound(_unquoted(lower))
        upper = None if upper == "" else bound(_unquoted(upper))
        lower_in, upper_in = opening == "[" and lower is not None, closing == "]" and upper is not None
        if discrete:
            if lower is not None and not lower_in:
                lower, lower_in = step(lower), True
            if upper is not None and upper_in:
                upper, upper_in = step(upper), False
        if lower is not None and upper is not None:
            low, high = value_of(lower), value_of(upper)
            if low > high:
                raise InvalidValue(f'range lower bound must be less than or equal to range upper bound: "{value}"')
            if low == high and not (lower_in and upper_in):
                return "empty"

        def shown(stored):
            text = str(stored)
            return f'"{text}"' if re.search(r'[\s,"()\[\]\\]', text) else text
        return (("[" if lower_in else "(") + ("" if lower is None else shown(lower)) + ","
                + ("" if upper is None else shown(upper)) + ("]" if upper_in else ")"))
    return convert


def map_input(value_type: str) -> Callable:
    """Materialize's '{a=>1, "b c"=>NULL}' or a JSON object, each value through its type's input function; stored as
    JSON text (an array or map value nested as JSON)."""
    element = input_function(value_type)
    nested = held_as_json(value_type)
    type_name = f"map[text=>{value_type}]"

    def entries(text: str) -> dict:
        body = text.strip()
        if not (body.startswith("{") and body.endswith("}")):
            raise InvalidValue(f'malformed map literal: "{text}"; write it as \'{{a=>1,b=>2}}\'')
        try:
            parsed = json.loads(body)
            if isinstance(parsed, dict):
                return parsed
        except ValueError:
            pass
        found, position, inner = {}, 0, body[1:-1]
        while position < len(inner.rstrip()):
            match = _MAP_ENTRY.match(inner, position)
            if match is None or match.end() == position:
                raise InvalidValue(f'malformed map literal for {type_name}: "{text}"')
            key, item = _unquoted(match.group(1)), match.group(2)
            if "=>" in item or (match.group().rstrip().endswith(",") and not inner[match.end():].strip()):
                raise InvalidValue(f'malformed map literal for {type_name}: "{text}"')
            found[key] = None if item.upper() == "NULL" else _unquoted(item)
            position = match.end()
        return found

    def convert(value):
        items = value if isinstance(value, dict) else entries(value) if isinstance(value, str) else None
        if items is None:
            raise InvalidValue(f'malformed map literal: "{value}"; write it as \'{{a=>1,b=>2}}\'')
        stored = {str(k): None if v is None else element(v) for k, v in items.items()}
        if nested:
            stored = {k: None if v is None else json.loads(v) for k, v in stored.items()}
        return json.dumps(stored)
    return convert


def _record_literal(text: str, type_name: str) -> list:
    """Postgres's '(a,"b c",,NULL)' as its fields (an empty field is NULL; quotes keep commas and spaces)."""
    body = text.strip()
    if not (body.startswith("(") and body.endswith(")")):
        raise InvalidValue(f'malformed record literal: "{text}"; write it as ROW(…) or \'(a,b)\'')
    fields, current, quoted, touched, index, body = [], [], False, False, 0, body[1:-1]
    while index <= len(body):
        char = body[index] if index < len(body) else ","
        if quoted:
            if char == '"' and body[index + 1:index + 2] == '"':
                current.append('"')
                index += 1
            elif char == '"':
                quoted = False
            elif char == "\\" and index + 1 < len(body):
                current.append(body[index + 1])
                index += 1
            else:
                current.append(char)
        elif char == '"':
            quoted = touched = True
        elif char == ",":
            fields.append("".join(current) if current or touched else None)
            current, touched = [], False
        else:
            current.append(char)
        index += 1
    if quoted:
        raise InvalidValue(f'malformed record literal for {type_name}: "{text}"')
    return fields


def record_input(type_name: str) -> Callable:
    """ROW(…) (a list of fields, or the JSON array ROW gives in SQL), a JSON object, or Postgres's '(a,b)'; each
    field through its type's input function; stored as a JSON object (nested values nested as JSON)."""
    from ..model.types import record_fields

    fields = [(name, input_function(kind), held_as_json(kind)) for name, kind in record_fields(type_name)]

    def convert(value):
        items = value
        if isinstance(value, str):
            text = value.strip()
            if text.startswith(("[", "{")):
                try:
                    items = json.loads(text)
                except ValueError:
                    raise InvalidValue(f'malformed record literal for {type_name}: "{value}"') from None
            else:
                items = _record_literal(text, type_name)
        if isinstance(items, dict):
            unknown = [k for k in items if k not in {name for name, _, _ in fields}]
            if unknown:
                raise InvalidValue(f"record has no field {', '.join(map(repr, unknown))}")
            items = [items.get(name) for name, _, _ in fields]
        if not isinstance(items, (list, tuple)):
            raise InvalidValue(f'malformed record literal: "{value}"; write it as ROW(…)')
        if len(items) != len(fields):
            raise InvalidValue(f"a record of {len(items)} fields where its type has {len(fields)}")
        stored = {}
        for (name, convert_field, nested), item in zip(fields, items):
            field = None if item is None else convert_field(item)
            stored[name] = json.loads(field) if nested and field is not None else field
        return json.dumps(stored)
    return convert

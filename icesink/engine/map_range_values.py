"""Input functions of Materialize's maps (`map[text=>T]`) and Postgres's ranges (`int4range`, …, `tstzrange`), as
values.py has them for the other types: what they accept, refuse, and store (JSON text for a map, a range's canonical
text, which is how Iceberg gets it)."""
from __future__ import annotations

import json
import re
from typing import Callable

from ..model.types import RANGE_BOUNDS as _RANGE_BOUNDS
from ..model.types import decoder
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
    nested = value_type.endswith("[]") or value_type.startswith("map[")
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

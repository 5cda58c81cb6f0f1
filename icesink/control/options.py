"""Which options each statement takes, what their values may be, and the combination rules."""
from __future__ import annotations

from typing import Callable

from ..errors import PlanError
from ..grammar import ast
from ..model.descriptors import SecretRef
from ..model.options import OptionSpec, text as _text


CONNECTION_WITH_OPTIONS = {"VALIDATE": OptionSpec(("bool",))}
SINK_WITH_OPTIONS = {"COMMIT INTERVAL": OptionSpec(("string",)),
                     "WRITE MODE": _text(choices=("copy-on-write", "merge-on-read")),
                     "FOLD THRESHOLD": OptionSpec(("number",)), "FOLD SMALL FILES": OptionSpec(("number",)),
                     "FOLD ROWS PER BATCH": OptionSpec(("number",))}
SINK_TARGET_OPTIONS = {"NAMESPACE": _text(), "TABLE": _text()}
POSTGRES_SOURCE_OPTIONS = {
    "PUBLICATION": _text(),
    "TEXT COLUMNS": OptionSpec(("list",)),
    "EXCLUDE COLUMNS": OptionSpec(("list",)),
}
LOAD_GENERATOR_OPTIONS = {
    "TICK INTERVAL": OptionSpec(("string",)),
    "SCALE FACTOR": OptionSpec(("number",)),
    "UP TO": OptionSpec(("number",)),
    "AS OF": OptionSpec(("number",)),
    "SEED": OptionSpec(("number",)),
    "MAX CARDINALITY": OptionSpec(("number",)),
    "KEYS": OptionSpec(("number",)),
    "BATCH SIZE": OptionSpec(("number",)),
}

_FORM_OF = {
    ast.StringValue: "string", ast.NumberValue: "number", ast.BoolValue: "bool", ast.WordValue: "word",
    ast.ListValue: "list",
}
_FORM_WORDS = {
    "string": "a string", "number": "a number", "bool": "true or false", "word": "a word",
    "secret": "SECRET name", "concat-secret": "'text' || SECRET name", "object": "an object name",
    "list": "a parenthesised list",
}


def value_form(value: ast.OptionValue) -> str:
    if isinstance(value, ast.SecretValue):
        return "concat-secret" if value.prefix is not None else "secret"
    return _FORM_OF.get(type(value), "missing")


def check_options(options: tuple[ast.Option, ...], specs: dict[str, OptionSpec], what: str) -> dict[str, ast.Option]:
    """Rejects unknown, repeated and ill-typed options; returns them by name."""
    seen: dict[str, ast.Option] = {}
    for option in options:
        spec = specs.get(option.name)
        if spec is None:
            raise PlanError(f"unknown {what} option {option.name}; the options are: {', '.join(specs)}", option.pos)
        if option.name in seen:
            raise PlanError(f"{what} option {option.name} given more than once", option.pos)
        form = value_form(option.value)
        if form == "missing":
            raise PlanError(f"{what} option {option.name} needs a value", option.pos)
        if form not in spec.values and not (form == "word" and "object" in spec.values):
            accepted = " or ".join(_FORM_WORDS[v] for v in spec.values if v != "word")
            raise PlanError(f"{what} option {option.name} takes {accepted}", option.value.pos)
        if spec.choices:
            choice = scalar(option).lower().replace("_", "-")
            if choice not in spec.choices:
                raise PlanError(f"{what} option {option.name} must be one of "
                                f"{', '.join(repr(c) for c in spec.choices)}, not '{scalar(option)}'",
                                option.value.pos)
        seen[option.name] = option
    return seen


def scalar(option: ast.Option) -> str:
    value = option.value
    if isinstance(value, ast.StringValue):
        return value.value
    if isinstance(value, ast.NumberValue):
        return value.text
    if isinstance(value, ast.BoolValue):
        return "true" if value.value else "false"
    if isinstance(value, ast.WordValue):
        return str(value.name)
    raise TypeError(value)


def stored_value(option: ast.Option, spec: OptionSpec, resolve_secret: Callable[[ast.ObjectName], str]):
    """The value kept in the catalog: plain text, a number, a tuple, or a reference to a secret."""
    value = option.value
    if isinstance(value, ast.SecretValue):
        return SecretRef(resolve_secret(value.secret), value.prefix)
    if isinstance(value, ast.NumberValue):
        number = float(value.text)
        return int(number) if number.is_integer() else number
    if isinstance(value, ast.BoolValue):
        return value.value
    if isinstance(value, ast.ListValue):
        return tuple(str(item) if isinstance(item, ast.ObjectName) else item.value for item in value.items)
    text = scalar(option)
    return text.lower().replace("_", "-") if spec.choices else text


def snake(name: str) -> str:
    return name.lower().replace(" ", "_")


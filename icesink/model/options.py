"""How a statement's options are described, with no I/O: what values each option takes, and one given option's
value and place, which a connection kind's rules check."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class OptionSpec:
    # accepted value forms: 'string', 'secret', 'concat-secret', 'number', 'bool', 'word', 'object', 'list'
    values: tuple[str, ...]
    choices: tuple[str, ...] = ()  # for choice options: canonical lower-case values


def text(*extra: str, choices: tuple[str, ...] = ()) -> OptionSpec:
    """An option written as a string, a word or a number (and the `extra` forms)."""
    return OptionSpec(("string", "word", "number") + extra, choices)


@dataclass(frozen=True)
class Given:
    """An option as a statement gave it: its value as the catalog keeps it, where its name and value stand."""

    value: object
    pos: int
    value_pos: Optional[int] = None

    def shown(self) -> str:
        return str(self.value)


class Rules:
    """Combination rules over the options of one statement, by their upper-case names."""

    def __init__(self, given: dict[str, Given], error):
        self.given, self.error = given, error  # error(message, pos) builds the exception to raise

    def needs(self, option: str, other: str, why: str = "") -> None:
        if option in self.given and other not in self.given:
            raise self.error(f"{option} requires {other}{why}", self.given[option].pos)

    def excludes(self, a: str, b: str) -> None:
        if a in self.given and b in self.given:
            raise self.error(f"{a} and {b} cannot be used together", self.given[b].pos)

    def required(self, option: str, message: str, pos: int) -> None:
        if option not in self.given:
            raise self.error(message, pos)

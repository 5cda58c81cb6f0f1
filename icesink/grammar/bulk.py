"""INSERT … VALUES whose values are all literals, read without the grammar: one pass checks the statement, and its
rows are read again, one at a time, when they are inserted. Time and memory stay linear in the text (the grammar's
tree of a 20 MB statement took minutes and gigabytes). Anything else, errors included, is left to the grammar."""
from __future__ import annotations

import re
from decimal import Decimal
from typing import Iterator, NamedTuple, Optional

from . import ast
from .lexical import TERMINALS, LiteralError, string_value

_NAME = rf"(?:{TERMINALS['IDENT']}|{TERMINALS['QUOTED_IDENT']})"
_HEAD = re.compile(rf"\s*INSERT\s+INTO\s+({_NAME}(?:\s*\.\s*{_NAME})*)\s*(?:\(\s*({_NAME}(?:\s*,\s*{_NAME})*)\s*\)\s*)?"
                   r"VALUES(?![\w$])", re.I)
_NAMES = re.compile(_NAME)
_OPEN = re.compile(r"\s*\(")
_ITEM = re.compile(rf"\s*(?:(?P<number>[+-]?\s*{TERMINALS['NUMBER']})|(?P<string>{TERMINALS['STRING']})|"
                   r"(?P<word>NULL|TRUE|FALSE)(?![\w$]))\s*(?P<end>[,)])", re.I)
_AFTER_ROW = re.compile(r"\s*(?:(,)|\Z)")
_WORDS = {"null": None, "true": True, "false": False}


def _names(text: str, offset: int) -> tuple[ast.Name, ...]:
    names = []
    for match in _NAMES.finditer(text):
        token, start = match.group(), offset + match.start()
        if token.startswith('"'):
            value = token[1:-1].replace('""', '"')
            if not value or "\0" in value:
                return ()  # the grammar says what is wrong
            names.append(ast.Name(value, True, start, start + len(token)))
        else:
            names.append(ast.Name(token.lower(), False, start, start + len(token)))
    return tuple(names)


def _value(number: str | None, string: str | None, word: str | None, at: int):
    if number is not None:
        text = number.replace(" ", "")
        digits = text.lstrip("+-")
        value = int(digits) if digits.isdigit() else Decimal(digits)
        return -value if text.startswith("-") else value
    if string is not None:
        return string_value(string, at)
    return _WORDS[word.lower()]


def _rows(text: str, start: int, check: bool = False) -> Iterator[tuple[tuple, tuple]]:
    """(values, positions) of each row; raises _NotLiteral where the text is not a plain list of literal rows."""
    position = start
    while True:
        opened = _OPEN.match(text, position)
        if not opened:
            raise _NotLiteral
        position, values, positions = opened.end(), [], []
        while True:
            item = _ITEM.match(text, position)
            if not item:
                raise _NotLiteral
            position = item.end()
            number, string, word, end = item.groups()
            at = item.start(1 if number is not None else 2 if string is not None else 3)
            if not check:
                values.append(_value(number, string, word, at))
            elif string is not None and (string[0] in "eE" or "\0" in string):  # may hold a bad escape or a NUL
                string_value(string, at)
            positions.append(at)
            if end == ")":
                break
        yield tuple(values), tuple(positions)
        after = _AFTER_ROW.match(text, position)
        if not after:
            raise _NotLiteral
        if not after.group(1):
            return
        position = after.end()


class _NotLiteral(Exception):
    pass


class LiteralRows:
    """The rows of a literal VALUES list, read from the statement's text each time they are iterated. `width` is
    the first row's; `uneven` the width and position of the first row that differs, if any."""

    def __init__(self, text: str, start: int, count: int, width: int, uneven: Optional[tuple[int, int]] = None):
        self.text, self.start, self.count, self.width, self.uneven = text, start, count, width, uneven

    def __len__(self) -> int:
        return self.count

    def __iter__(self) -> Iterator[tuple[tuple, tuple]]:
        return _rows(self.text, self.start)

    def __eq__(self, other) -> bool:
        return isinstance(other, LiteralRows) and list(self) == list(other)


class BulkScan(NamedTuple):
    insert: Optional[ast.Insert]  # the statement, when it is an INSERT of literal rows
    skippable: tuple[int, int]  # rows read as literals before the first that is not: the grammar may skip them


def scan_insert(text: str) -> BulkScan:
    """Reads the statement as an INSERT of literal rows. When it is not one (or has an error), says which leading
    rows are plain literals, so the grammar can find the fault without building a tree of all of them."""
    head = _HEAD.match(text)
    if head is None:
        return BulkScan(None, (0, 0))
    table = _names(head.group(1), head.start(1))
    columns = _names(head.group(2), head.start(2)) if head.group(2) else ()
    if not table or (head.group(2) and not columns):
        return BulkScan(None, (0, 0))
    count, width, uneven, last_row = 0, None, None, head.end()
    try:
        for _, positions in _rows(text, head.end(), check=True):
            if width is not None and len(positions) != width and uneven is None:
                uneven = (len(positions), positions[0])
            count, width, last_row = count + 1, width or len(positions), positions[0]
        rows = LiteralRows(text, head.end(), count, width, uneven)
        return BulkScan(ast.Insert(ast.ObjectName(table), columns, rows), (0, 0))
    except (_NotLiteral, LiteralError):
        pass
    # keep the last literal row: after it the grammar is in the state it would be in after all of them
    return BulkScan(None, (head.end(), text.rfind("(", head.end(), last_row + 1) if count > 1 else head.end()))

"""What the transformers share: names and strings read from tokens, and the error of a rule the grammar cannot
express."""
from __future__ import annotations

from lark import Token

from . import ast
from .lexical import LiteralError, string_value

DISTINCT = object()  # the marker `distinct` leaves for the query rules


class SyntaxRuleError(Exception):
    """A statement that parses but breaks a rule the grammar cannot express."""

    def __init__(self, message: str, pos: int):
        super().__init__(message)
        self.pos = pos


def make_name(tok: Token) -> ast.Name:
    if tok.type == "QUOTED_IDENT":
        value = tok[1:-1].replace('""', '"')
        if not value:
            raise SyntaxRuleError("a quoted identifier cannot be empty", tok.start_pos)
        if "\0" in value:
            raise SyntaxRuleError("a quoted identifier cannot contain the NUL character", tok.start_pos)
        return ast.Name(value, True, tok.start_pos, tok.end_pos)
    return ast.Name(str(tok).lower(), False, tok.start_pos, tok.end_pos)


def unquote_string(tok: Token) -> str:
    try:
        return string_value(str(tok), tok.start_pos)
    except LiteralError as exc:
        raise SyntaxRuleError(str(exc), exc.pos) from None


def keyword_text(tokens) -> str:
    return " ".join(str(t).upper() for t in tokens if isinstance(t, Token))

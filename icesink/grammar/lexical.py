"""The one lexer of the dialect, and what must work on malformed input too: splitting a script into statements and
telling whether input is complete (masking.py masks secret values with it).

The grammar's terminals for white space, comments, literals, names and numbers are made from `TERMINALS`
(parser.py adds them to icesink.lark), so the grammar, the splitting and the masking agree on where every literal
starts and ends.
"""
from __future__ import annotations

import base64
import binascii
import re
from functools import lru_cache
from importlib import resources
from typing import Iterator, NamedTuple

TERMINALS = {
    "WS": r"\s+",  # any Unicode white space: a pasted non-breaking space or U+2028 separates words
    "COMMENT": r"--[^\n]*",
    "BLOCK_COMMENT": r"/\*[\s\S]*?\*/",
    # E'…' takes backslash escapes (\' among them); '…' does not. Both double a quote to include it.
    "STRING": r"[Ee]'(?:[^'\\]|\\[\s\S]|'')*'|'(?:[^']|'')*'",
    "QUOTED_IDENT": r'"(?:[^"]|"")*"',
    "IDENT": r"[^\W\d][\w$]*",
    "NUMBER": r"(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?",
}
_MASTER = re.compile("|".join(f"(?P<{kind}>{pattern})" for kind, pattern in (
    ("skip", TERMINALS["WS"]),
    ("comment", "|".join(TERMINALS[t] for t in ("COMMENT", "BLOCK_COMMENT"))),
    ("string", TERMINALS["STRING"]),
    ("quoted", TERMINALS["QUOTED_IDENT"]),
    ("word", TERMINALS["IDENT"]),
    ("number", TERMINALS["NUMBER"]),
    ("unterminated", r"'[\s\S]*|\"[\s\S]*|/\*[\s\S]*"),  # a literal or comment that runs to the end
    ("punct", r"[\s\S]"),
)))


class Lexeme(NamedTuple):
    kind: str  # 'word', 'string', 'quoted', 'number', 'punct', 'unterminated' (and 'comment' when asked for)
    start: int
    end: int
    text: str


def lex(text: str, start: int = 0, comments: bool = False) -> Iterator[Lexeme]:
    """Lexemes from `start` on, skipping white space and (unless `comments`) comments; never raises."""
    skipped = ("skip",) if comments else ("skip", "comment")
    for match in _MASTER.finditer(text, start):
        kind = match.lastgroup
        if kind not in skipped:
            yield Lexeme(kind, match.start(), match.end(), match.group())


def _is_semicolon(lexeme: Lexeme) -> bool:
    return lexeme.kind == "punct" and lexeme.text == ";"


@lru_cache(maxsize=1)
def grammar_text() -> str:
    return resources.files(__package__).joinpath("icesink.lark").read_text()


@lru_cache(maxsize=1)
def keywords() -> frozenset[str]:
    """Upper-case terminals the grammar uses but does not define: its keywords."""
    body = re.sub(r'//[^\n]*|"(?:[^"\\]|\\.)*"i?|/(?:[^/\\\n]|\\.)+/', " ", grammar_text())
    defined = set(re.findall(r"^\s*([A-Z][A-Z0-9_]*)(?:\.\d+)?\s*:", body, re.M)) | set(TERMINALS)
    return frozenset(set(re.findall(r"\b[A-Z][A-Z0-9_]*\b", body)) - defined)


# ---------------------------------------------------------------- literals
class LiteralError(ValueError):
    def __init__(self, message: str, pos: int):
        super().__init__(message)
        self.pos = pos


# Postgres's escapes in E'…': octal and hex give bytes (which must form UTF-8), \u and \U code points.
_ESCAPE = re.compile(r"\\(?:([0-7]{1,3})|x([0-9A-Fa-f]{1,2})|u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8})|([uU])|([\s\S]))"
                     r"|('')|([^\\']+)")
_SIMPLE_ESCAPES = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


def _unescape(body: str, pos: int) -> str:
    out = bytearray()
    for m in _ESCAPE.finditer(body):
        octal, hexa, short, long, bad, other, quote, plain = m.groups()
        if octal or hexa:
            out.append(int(octal, 8) & 0xFF if octal else int(hexa, 16))
        elif short or long:
            code = int(short or long, 16)
            if not 0 < code <= 0x10FFFF or 0xD800 <= code <= 0xDFFF:
                raise LiteralError(f"invalid Unicode escape value {m.group()}", pos + m.start())
            out += chr(code).encode()
        elif bad:
            raise LiteralError("invalid Unicode escape: write \\uXXXX or \\UXXXXXXXX", pos + m.start())
        else:
            out += (_SIMPLE_ESCAPES.get(other, other) if other is not None else "'" if quote else plain).encode()
    try:
        return out.decode()
    except UnicodeDecodeError as exc:
        raise LiteralError(f"invalid byte sequence for encoding UTF8: 0x{out[exc.start]:02x}", pos) from None


def string_value(literal: str, pos: int = 0) -> str:
    """The value of a string literal as written ('…' or E'…'); `pos` is where it starts, for errors."""
    if literal[0] in "eE":
        value = _unescape(literal[2:-1], pos + 2)
    else:
        value = literal[1:-1].replace("''", "'")
    if "\0" in value:
        raise LiteralError("a string literal cannot contain the NUL character", pos)
    return value


# ---------------------------------------------------------------- statements
class StatementText(NamedTuple):
    start: int  # offset of the first character in the input
    text: str


def _statement(text: str, begin: int, end: int) -> StatementText:
    chunk = text[begin:end]
    lead = len(chunk) - len(chunk.lstrip())
    return StatementText(begin + lead, chunk.strip())


def statement_lexemes(text: str, comments: bool = False) -> Iterator[tuple[StatementText, list[Lexeme]]]:
    """Each statement of `text` (cut at top-level semicolons, empty ones dropped) with its lexemes (and, when asked
    for, its comments, but a statement of comments only is no statement)."""
    begin, lexemes, tokens = 0, [], 0
    for lexeme in lex(text, comments=comments):
        if _is_semicolon(lexeme):
            if tokens:
                yield _statement(text, begin, lexeme.start), lexemes
            begin, lexemes, tokens = lexeme.end, [], 0
        else:
            lexemes.append(lexeme)
            tokens += lexeme.kind != "comment"
    if tokens:
        yield _statement(text, begin, len(text)), lexemes


# Only what can hold a ';' that does not end a statement, or a word that could start an E'…' literal, is matched:
# the rest (numbers, punctuation, white space) the regular expression engine skips without a Python step.
_BOUNDARIES = re.compile("|".join((TERMINALS["IDENT"], TERMINALS["STRING"], TERMINALS["QUOTED_IDENT"],
                                   TERMINALS["COMMENT"], TERMINALS["BLOCK_COMMENT"], r"'[\s\S]*|\"[\s\S]*|/\*[\s\S]*",
                                   "(;)")))


def split_statements(text: str) -> list[StatementText]:
    """Cuts at top-level semicolons; keeps comments inside a statement, drops empty ones."""
    begin, out = 0, []
    for match in _BOUNDARIES.finditer(text):
        if match.group(1):
            _keep(text, begin, match.start(), out)
            begin = match.end()
    _keep(text, begin, len(text), out)
    return out


def _keep(text: str, begin: int, end: int, out: list[StatementText]) -> None:
    chunk = text[begin:end]
    stripped = chunk.lstrip()
    if stripped and (not stripped.startswith(("--", "/*")) or next(lex(chunk), None) is not None):
        out.append(_statement(text, begin, end))


def is_complete(text: str) -> bool:
    """True when the input ends with a statement terminator outside quotes and comments."""
    last = None
    for last in lex(text):
        pass
    return last is not None and _is_semicolon(last)


class CompletionTracker:
    """`is_complete` for input that arrives line by line, in time linear in its length: only the literal or
    comment still open at the end of the last line is read again."""

    def __init__(self):
        self._open = ""  # an unterminated literal or comment, to be read again with what follows
        self.complete = False

    def feed(self, text: str) -> bool:
        text, self._open = self._open + text, ""
        for lexeme in lex(text):
            if lexeme.kind == "unterminated":
                self._open, self.complete = text[lexeme.start:], False
                break
            self.complete = _is_semicolon(lexeme)
        return self.complete


DECODE_FORMATS = ("base64", "escape", "hex")


def decode_bytes(text: str, form: str) -> bytes:
    """Postgres's decode(text, form) (what CREATE SECRET … AS decode(…) evaluates). A ValueError says what is wrong
    without quoting either argument: swapped, the format would be the secret."""
    if form == "base64":
        try:
            return base64.b64decode(re.sub(r"\s", "", text), validate=True)
        except binascii.Error:
            raise ValueError("decode(): the value is not valid base64") from None
    if form == "hex":
        try:
            return bytes.fromhex(text)
        except ValueError:
            raise ValueError("decode(): the value is not valid hex") from None
    if form == "escape":
        out, i = bytearray(), 0
        while i < len(text):
            if text[i] != "\\":
                out += text[i].encode()
                i += 1
            elif text[i + 1:i + 2] == "\\":
                out.append(92)
                i += 2
            elif re.fullmatch(r"[0-3][0-7]{2}", text[i + 1:i + 4]):
                out.append(int(text[i + 1:i + 4], 8))
                i += 4
            else:
                raise ValueError("decode(): the value has a backslash that is neither \\\\ nor \\ and three "
                                 "octal digits")
        return bytes(out)
    raise ValueError("decode() takes the format 'base64', 'escape' or 'hex' as its second argument")

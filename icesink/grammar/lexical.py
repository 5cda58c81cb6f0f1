"""Lexical helpers that must work on malformed input too: splitting a script into
statements, telling whether input is complete, and masking secret values."""
from __future__ import annotations

import re
from dataclasses import dataclass

REDACTED = "'<REDACTED>'"

# Option names whose literal values are credentials (compared on the words before the value).
_SECRET_OPTION_TAILS = (("PASSWORD",), ("SECRET", "ACCESS", "KEY"), ("TOKEN",), ("CREDENTIAL",), ("SSL", "KEY"))


@dataclass(frozen=True)
class Lexeme:
    kind: str  # 'word', 'string', 'quoted', 'number', 'punct', 'unterminated'
    start: int
    end: int
    text: str


_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*")
_NUMBER = re.compile(r"(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


def lex(text: str):
    """Yields lexemes, skipping white space and comments; never raises."""
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch.isspace():
            i += 1
        elif text.startswith("--", i):
            j = text.find("\n", i)
            i = n if j < 0 else j + 1
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
        elif ch == "'" or (ch in "eE" and text.startswith("'", i + 1)):
            start = i
            backslash = ch in "eE"
            i += 2 if backslash else 1
            while i < n:
                if backslash and text[i] == "\\":
                    i += 2
                elif text[i] == "'":
                    if text.startswith("'", i + 1):
                        i += 2
                    else:
                        break
                else:
                    i += 1
            if i >= n:
                yield Lexeme("unterminated", start, n, text[start:])
                return
            yield Lexeme("string", start, i + 1, text[start:i + 1])
            i += 1
        elif ch == '"':
            j = text.find('"', i + 1)
            while j >= 0 and text.startswith('"', j + 1):
                j = text.find('"', j + 2)
            if j < 0:
                yield Lexeme("unterminated", i, n, text[i:])
                return
            yield Lexeme("quoted", i, j + 1, text[i:j + 1])
            i = j + 1
        elif m := _WORD.match(text, i):
            yield Lexeme("word", i, m.end(), m.group())
            i = m.end()
        elif m := _NUMBER.match(text, i):
            yield Lexeme("number", i, m.end(), m.group())
            i = m.end()
        else:
            yield Lexeme("punct", i, i + 1, ch)
            i += 1


@dataclass(frozen=True)
class StatementText:
    start: int  # offset of the first character in the input
    text: str


def split_statements(text: str) -> list[StatementText]:
    """Cuts at top-level semicolons; keeps comments inside a statement, drops empty ones."""
    out, begin = [], 0

    def add(end: int):
        chunk = text[begin:end]
        if any(True for _ in lex(chunk)):
            lead = len(chunk) - len(chunk.lstrip())
            out.append(StatementText(begin + lead, chunk.strip()))

    for lexeme in lex(text):
        if lexeme.kind == "punct" and lexeme.text == ";":
            add(lexeme.start)
            begin = lexeme.end
    add(len(text))
    return out


def is_complete(text: str) -> bool:
    """True when the input ends with a statement terminator outside quotes and comments."""
    lexemes = list(lex(text))
    if not lexemes:
        return False
    last = lexemes[-1]
    return last.kind == "punct" and last.text == ";"


def secret_spans(text: str) -> list[tuple[int, int]]:
    """Where `text` holds secret values (any literal of CREATE/ALTER SECRET) or literals of credential
    options. Works on malformed input: an unterminated literal in such a place runs to the end."""
    lexemes = list(lex(text))
    words = [x.text.upper() for x in lexemes[:2] if x.kind == "word"]
    secret_statement = words[:2] in (["CREATE", "SECRET"], ["ALTER", "SECRET"])
    spans = []
    for index, lexeme in enumerate(lexemes):
        if lexeme.kind not in ("string", "unterminated"):
            continue
        if secret_statement:  # its only literal is the value, wherever a typo put it
            spans.append((lexeme.start, lexeme.end))
            continue
        before = [x for x in lexemes[:index] if not (x.kind == "punct" and x.text == "=")]
        if not before or before[-1].kind != "word":
            continue
        tail = tuple(x.text.upper() for x in before[-3:] if x.kind == "word")
        if any(tail[-len(t):] == t for t in _SECRET_OPTION_TAILS):
            spans.append((lexeme.start, lexeme.end))
    return spans


def redact(text: str) -> str:
    for start, end in reversed(secret_spans(text)):
        text = text[:start] + REDACTED + text[end:]
    return text

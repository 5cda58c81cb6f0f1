"""The one lexer of the dialect, and what must work on malformed input too: splitting a script into statements,
telling whether input is complete, and masking secret values.

The grammar's terminals for white space, comments, literals, names and numbers are made from `TERMINALS`
(parser.py adds them to icesink.lark), so the grammar and the masking here agree on where every literal starts
and ends.
"""
from __future__ import annotations

import re
from collections import deque
from functools import lru_cache
from itertools import chain, islice
from importlib import resources
from typing import Iterable, Iterator, NamedTuple, Optional

REDACTED = "'<REDACTED>'"

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


def standard_literal(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def backslash_literal(value: str) -> str:
    """A literal for engines that read backslash escapes in '…' (Spark SQL)."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def rewrite_for_engine(text: str, literal=standard_literal) -> str:
    """A statement that parsed, as another SQL engine (SQLite through sqlglot, Spark) reads it alike: every string
    literal in that engine's form and white space it may not know as plain spaces."""
    out = []
    for match in _MASTER.finditer(text):
        kind, token = match.lastgroup, match.group()
        if kind == "string":
            token = literal(string_value(token))
        elif kind == "skip":
            token = "\n" if "\n" in token and not token.startswith("/*") else " "
        out.append(token)
    return "".join(out)


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


# ---------------------------------------------------------------- secret values
# Options whose values are credentials, and how far a misspelling of one may stray and still be masked.
_CREDENTIAL_OPTIONS = ("PASSWORD", "SECRET ACCESS KEY", "SESSION TOKEN", "TOKEN", "CREDENTIAL", "SSL KEY")
_VALUE_KINDS = ("string", "unterminated", "number", "quoted", "word")
_LITERAL_KINDS = ("string", "unterminated")


def _tolerance(word: str) -> int:
    return 1 if len(word) <= 6 else 2 if len(word) <= 12 else 3


def edit_distance(a: str, b: str, limit: int) -> int:
    """Levenshtein distance with transpositions (a swap of neighbours counts once); `limit + 1` once beyond it."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    previous, current = None, list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        before, previous, current = previous, current, [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = a[i - 1] != b[j - 1]
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                current[j] = min(current[j], before[j - 2] + 1)
        if min(current) > limit:
            return limit + 1
    return current[-1]


def _near(word: str, target: str) -> bool:
    return edit_distance(word, target, _tolerance(target)) <= _tolerance(target)


_CREDENTIAL_JOINED = tuple(name.replace(" ", "") for name in _CREDENTIAL_OPTIONS)


def _letters(word: str) -> str:
    return re.sub(r"[^A-Z0-9]", "", word.upper())


def _names_credential(words: list[str]) -> bool:
    """Whether the option words before a value (up to three, nearest last) name a credential, misspelt or not."""
    for count in range(1, len(words) + 1):
        joined = "".join(_letters(w) for w in words[-count:])
        if any(_near(joined, name) for name in _CREDENTIAL_JOINED):
            return True
    return False


def _credential_value(before: list[Lexeme], lexeme: Lexeme) -> bool:
    """Whether `lexeme` is the value of an option that names a credential; `before` holds the lexemes before it."""
    if lexeme.kind not in _VALUE_KINDS or (lexeme.kind == "word" and lexeme.text.upper() == "SECRET"):
        return False  # `PASSWORD SECRET name` names a secret; it holds no value
    j = len(before) - 1
    if j >= 0 and before[j].kind == "punct" and before[j].text == "=":
        j -= 1
    words = []
    while j >= 0 and before[j].kind == "word" and len(words) < 3:
        words.insert(0, before[j].text)
        j -= 1
    return bool(words) and _names_credential(words)


def _ends_with_secret(word: str) -> bool:
    """SECRET on its own, or run together with the verb before it (CREATESECRET)."""
    letters = _letters(word)
    return _near(letters, "SECRET") or (len(letters) > 6 and _near(letters[-6:], "SECRET"))


def _secret_value_start(head: list[Lexeme]) -> Optional[int]:
    """In CREATE/ALTER SECRET (misspelt or not), where what follows the name (after AS) begins."""
    i = 1 if _ends_with_secret(head[0].text) else 2
    while i < len(head) and head[i].kind == "word" and head[i].text.upper() in ("IF", "NOT", "EXISTS"):
        i += 1
    i += 1  # the secret's name
    while i + 1 < len(head) and head[i].text == "." and head[i + 1].kind in ("word", "quoted"):
        i += 2
    if i < len(head) and head[i].kind == "word" and head[i].text.upper() == "AS":
        i += 1
    if i < len(head) and not (head[i].kind == "word" and head[i].text.upper() == "RENAME"):
        return head[i].start
    return None


def _is_secret_statement(head: list[Lexeme]) -> bool:
    """CREATE or ALTER SECRET, or a misspelling of either, SECRET split in two included (but not DROP SECRET or
    SHOW SECRETS)."""
    if head[0].kind == "word" and _ends_with_secret(head[0].text):
        return True
    words = [x.text for x in head[:5] if x.kind == "word"]
    verb = head[0].text.upper()
    if head[0].kind != "word" or (verb in keywords() and verb not in ("CREATE", "ALTER")):
        return False
    candidates = words[1:3] + ["".join(pair) for pair in zip(words[1:3], words[2:4])]
    return any(_near(_letters(word), "SECRET") for word in candidates)


_HEAD_LEXEMES = 12  # enough to read CREATE SECRET IF NOT EXISTS schema.name AS
_KIND_LEXEMES = 5  # enough to tell a secret statement, SECRET split in two included


def iter_secret_spans(lexemes: Iterable[Lexeme], parsed: bool = True) -> Iterator[tuple[int, int]]:
    """Where one statement's lexemes hold secret values, in no particular order, reading them once with a few in
    memory: every value of CREATE/ALTER SECRET, and the value of an option whose name is, or nearly is, a
    credential's; in comments too. A statement that did not parse (`parsed` false) shows no literal at all; and
    when its literals look shifted (a stray or missing quote: one runs to the end, a bare word follows one, one
    begins with a comma or parenthesis, or a quoted name holds quotes, commas or lines), nothing from its first
    quote on, nor a bare word right before a literal that runs to the end (its opening quote missing)."""
    lexemes = iter(lexemes)
    read = list(islice((x for x in lexemes), _KIND_LEXEMES))
    while sum(x.kind != "comment" for x in read) < _KIND_LEXEMES and len(read) < 4 * _KIND_LEXEMES:
        more = next(lexemes, None)
        if more is None:
            break
        read.append(more)
    tokens = [x for x in read if x.kind != "comment"]
    secret = bool(tokens) and _is_secret_statement(tokens)
    window: deque[Lexeme] = deque(maxlen=4)
    head: list[Lexeme] = []
    first_literal, last, shifted = None, None, False
    words = keywords()
    for lexeme in chain(read, lexemes):
        if lexeme.kind == "comment":  # a statement commented out, or a value after a stray '--', is masked too
            yield from ((lexeme.start + 2 + a, lexeme.start + 2 + b)  # the text after '--' or '/*'
                        for a, b in iter_secret_spans(lex(lexeme.text[2:], comments=True), parsed=False))
            continue
        if len(head) < _HEAD_LEXEMES:
            head.append(lexeme)
        literal = lexeme.kind in _LITERAL_KINDS
        if (literal and (secret or not parsed)) or _credential_value(list(window), lexeme):
            yield lexeme.start, lexeme.end
        swallowed = lexeme.kind == "quoted" and any(c in lexeme.text for c in "'\n,=();")  # a stray '"'
        if not parsed and ((window and window[-1].kind == "string" and lexeme.kind in ("word", "number")
                            and lexeme.text.upper() not in words) or re.match(r"[Ee]?'\s*[,()]", lexeme.text)
                           or swallowed):
            shifted = True
        if (literal or swallowed) and first_literal is None:
            first_literal = lexeme.start
        window.append(lexeme)
        last = lexeme
    if last is None:
        return
    if secret:
        start = _secret_value_start(head)
        if start is not None:
            yield start, last.end
    if not parsed and (last.kind == "unterminated" or shifted) and first_literal is not None:
        yield first_literal, last.end
    if not parsed and last.kind == "unterminated":  # the value before it may have lost its opening quote
        before = next((x for x in reversed(list(window)[:-1]) if x.kind in ("word", "number")), None)
        if before is not None and before.text.upper() not in words:
            yield before.start, before.end


def statement_secret_spans(lexemes: Iterable[Lexeme], parsed: bool = True) -> list[tuple[int, int]]:
    """`iter_secret_spans`, sorted and merged."""
    return merged(iter_secret_spans(lexemes, parsed))


def merged(spans: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(end, out[-1][1]))
        else:
            out.append((start, end))
    return out


def secret_spans(text: str, parsed=True) -> list[tuple[int, int]]:
    """Where `text` (any number of statements) holds secret values. `parsed` says, for all statements or per
    statement (a function of its index from 1 and its text), whether it parsed."""
    spans = []
    for index, (statement, lexemes) in enumerate(statement_lexemes(text, comments=True), start=1):
        ok = parsed(index, statement.text) if callable(parsed) else parsed
        spans += statement_secret_spans(lexemes, ok)
    return merged(spans)


def mask(text: str, spans: list[tuple[int, int]]) -> str:
    parts, last = [], 0
    for start, end in spans:
        parts += [text[last:start], REDACTED]
        last = end
    parts.append(text[last:])
    return "".join(parts)


def redact(text: str, parsed=True) -> str:
    """`text` with every secret value replaced by '<REDACTED>' (see `secret_spans` for `parsed`)."""
    return mask(text, secret_spans(text, parsed))

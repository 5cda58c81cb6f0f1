"""Masking of secret values, on malformed input too, by the dialect's own lexer: what errors echo, what history keeps
and what SHOW REDACTED shows."""
from __future__ import annotations

import re
from collections import deque
from itertools import chain, islice
from typing import Iterable, Iterator, Optional

from .lexical import Lexeme, keywords, lex, statement_lexemes

REDACTED = "'<REDACTED>'"

# Options whose values are credentials, and how far a misspelling of one may stray and still be masked.
CREDENTIAL_OPTIONS = ("PASSWORD", "SECRET ACCESS KEY", "SESSION TOKEN", "TOKEN", "CREDENTIAL", "SSL KEY")
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


_CREDENTIAL_JOINED = tuple(name.replace(" ", "") for name in CREDENTIAL_OPTIONS)


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
        spans += iter_secret_spans(lexemes, ok)
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

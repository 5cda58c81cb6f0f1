"""Parses statements with the Lark grammar and turns Lark's errors into messages in words."""
from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from lark import Lark, Token, UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken
from lark.exceptions import VisitError
from lark.lexer import PatternStr

from ..errors import ParseError
from . import ast
from .bulk import scan_insert
from .lexical import TERMINALS, grammar_text, keywords, lex
from .masking import iter_secret_spans
from .tokens import SyntaxRuleError
from .transformer import AstBuilder

# Expected-token sets that are better said as one phrase: (phrase, tokens that trigger it, tokens it covers).
_CATEGORIES = (
    ("a statement such as CREATE, SELECT, SHOW, ALTER or DROP", {"CREATE", "SELECT", "DROP"},
     {"CREATE", "SELECT", "SHOW", "ALTER", "DROP", "INSERT", "UPDATE", "DELETE", "SET", "VALIDATE", "COPY", "WITH",
      "VALUES", "LPAR"}),  # a query may open with a parenthesized operand, which is not worth naming
    ("an object type such as SINK, SOURCE, CONNECTION, SECRET or TABLE", {"SINK", "SOURCE", "SECRET"},
     {"SINK", "SOURCE", "CONNECTION", "SECRET", "TABLE", "MATERIALIZED", "REDACTED", "SYSTEM", "TYPE"}),
    ("a connection type: AWS, ICEBERG CATALOG, POSTGRES or GCP", {"AWS", "ICEBERG", "POSTGRES"},
     {"AWS", "ICEBERG", "POSTGRES", "GCP"}),
    ("a connection option such as URL or WAREHOUSE", {"URL", "WAREHOUSE"},
     {"CATALOG", "URL", "WAREHOUSE", "CREDENTIAL", "TOKEN", "SCOPE", "OAUTH2", "ACCESS", "AWS", "STORAGE", "GCP"}),
    ("a connection option such as REGION or ACCESS KEY ID", {"REGION", "ASSUME"},
     {"REGION", "ENDPOINT", "ACCESS", "SECRET", "SESSION", "ASSUME", "EXTERNAL"}),
    ("a connection option such as HOST or DATABASE", {"HOST", "DATABASE"},
     {"HOST", "PORT", "DATABASE", "USER", "PASSWORD", "SSL", "AWS"}),
    ("a sink target option: NAMESPACE or TABLE", {"NAMESPACE", "TABLE"}, {"NAMESPACE", "TABLE"}),
    ("a sink mode: MODE UPSERT, ENVELOPE UPSERT or MODE APPEND", {"MODE", "ENVELOPE"}, {"MODE", "ENVELOPE"}),
    ("a string literal or decode('…', 'base64')", {"DECODE", "STRING"}, {"DECODE", "STRING"}),
    ("a value: a string, a number, TRUE, FALSE or SECRET name", {"STRING", "TRUE", "SECRET"},
     {"STRING", "NUMBER", "SIGN", "TRUE", "FALSE", "SECRET", "LPAR", "IDENT", "QUOTED_IDENT"}),
    ("an expression", {"CASE", "CAST", "EXISTS"},
     {"CASE", "CAST", "EXISTS", "NOT", "NUMBER", "STRING", "IDENT", "QUOTED_IDENT", "TRUE", "FALSE", "NULL",
      "INTERVAL", "SIGN", "LPAR", "STAR", "DISTINCT", "CHARACTER", "DOUBLE", "TIME", "TIMESTAMP", "ARRAY"}),
)
_TERMINAL_WORDS = {
    "IDENT": "a name", "QUOTED_IDENT": "a name", "STRING": "a string literal", "NUMBER": "a number",
    "COMPARISON": "a comparison operator", "SUM_OP": "an operator", "PRODUCT_OP": "an operator",
    "SIGN": "a sign", "REGEX_MATCH": "an operator", "$END": "the end of the statement",
}
_STATEMENT_KINDS = ("CREATE MATERIALIZED VIEW", "SHOW REDACTED CREATE", "ALTER SYSTEM SET")


MAX_NESTING = 100  # levels of parentheses in one statement
_LITERAL_PRIORITY = 3  # above keywords: E'…' is a string wherever one fits, not the name E


@lru_cache(maxsize=1)
def _parser() -> tuple[Lark, AstBuilder, dict[str, str]]:
    words = sorted(keywords())
    terminals = [f"{name}{'.%d' % _LITERAL_PRIORITY if name in ('STRING', 'QUOTED_IDENT') else ''}: "
                 f"/{pattern.replace('/', chr(92) + '/')}/" for name, pattern in TERMINALS.items()]
    # A keyword is a whole word: priority over names where both fit, and never the prefix of a longer
    # word where only keywords fit ('HOSTNAME' is not HOST followed by NAME).
    grammar = "\n".join([grammar_text(), *terminals, *(f"{w}.2: /{w.lower()}\\b/i" for w in words)]) + "\n"
    lark = Lark(grammar, parser="lalr", lexer="contextual", maybe_placeholders=False, cache=True)
    display = dict(_TERMINAL_WORDS)
    display.update((w, w) for w in words)
    for terminal in lark.terminals:
        if isinstance(terminal.pattern, PatternStr) and terminal.name not in display:
            display[terminal.name] = f"'{terminal.pattern.value}'"
    return lark, AstBuilder(frozenset(words)), display


def statement_kind(text: str) -> str:
    """A short label for messages: 'CREATE SINK', 'SELECT', …"""
    words = re.findall(r"[A-Za-z_]+", re.sub(r"--[^\n]*|/\*.*?\*/", " ", text, flags=re.S))[:4]
    upper = " ".join(w.upper() for w in words)
    for kind in _STATEMENT_KINDS:
        if upper.startswith(kind):
            return kind
    if words and words[0].upper() in ("CREATE", "DROP", "SHOW", "ALTER", "VALIDATE") and len(words) > 1:
        return f"{words[0].upper()} {words[1].upper()}"
    return words[0].upper() if words else "empty statement"


def describe_expected(expected) -> str:
    _, _, display = _parser()
    expected = set(expected)
    phrases = []
    for phrase, trigger, covered in _CATEGORIES:
        if trigger <= expected:
            phrases.append(phrase)
            expected -= covered
    rest = sorted({display.get(name, name) for name in expected})
    items = phrases + [r for r in rest if r not in phrases]
    if len(items) > 8:
        items = items[:8] + ["…"]
    if len(items) <= 1:
        return items[0] if items else "something else"
    return ", ".join(items[:-1]) + " or " + items[-1]


def shown_char(char: str) -> str:
    """A character as a message shows it: invisible and control characters by their code point."""
    if unicodedata.category(char)[0] in "CZ":
        return f"U+{ord(char):04X}"
    return f"'{char}'"


def _found(text: str, pos: int) -> str:
    if pos >= len(text.rstrip()):
        return "the end of the statement"
    lexeme = next(lex(text, pos), None)
    if lexeme is None:
        return "the end of the statement"
    if lexeme.kind in ("string", "unterminated") and lexeme.text[0] != "/":
        return "a string literal"  # never echo a literal: it may be a secret value
    if any(start <= pos < end for start, end in iter_secret_spans(lex(text, comments=True), parsed=False)):
        return "a value that is not shown, as it may be secret"
    if lexeme.kind == "punct":
        return shown_char(lexeme.text)
    return f"'{lexeme.text}'"


def _acceptable(exc: UnexpectedInput, fallback) -> set[str]:
    """What the parser really accepts at the failure: LALR's merged states make Lark's own
    expected-sets a union over unrelated contexts."""
    interactive = getattr(exc, "interactive_parser", None)
    return set(interactive.accepts()) if interactive is not None else set(fallback)


def _syntax_error(text: str, exc: UnexpectedInput) -> ParseError:
    if isinstance(exc, UnexpectedCharacters):
        pos, char = exc.pos_in_stream, text[exc.pos_in_stream]
        if char == "'":
            return ParseError("unterminated string literal", pos)
        if char == '"':
            return ParseError("unterminated quoted identifier", pos)
        if text.startswith("/*", pos):
            return ParseError("unterminated /* comment", pos)
        expected = describe_expected(_acceptable(exc, exc.allowed))
        return ParseError(f"expected {expected}, found {_found(text, pos)}", pos)
    if isinstance(exc, UnexpectedToken):
        token = exc.token
        pos = len(text.rstrip()) if token.type == "$END" else token.start_pos
        return ParseError(f"expected {describe_expected(_acceptable(exc, exc.expected))}, found {_found(text, pos)}",
                          pos)
    if isinstance(exc, UnexpectedEOF):
        return ParseError(f"expected {describe_expected(exc.expected)}, found the end of the statement",
                          len(text.rstrip()))
    return ParseError(str(exc).splitlines()[0], getattr(exc, "pos_in_stream", 0) or 0)


def _keyword_as_name(exc: UnexpectedInput) -> bool:
    """Keywords stay usable as names wherever a name fits: LALR's merged look-ahead sets can make
    the lexer see a keyword where the parser, one reduction later, only takes a name."""
    token = getattr(exc, "token", None)
    if isinstance(exc, UnexpectedToken) and token.type in _parser()[1].keywords and "IDENT" in exc.expected:
        exc.interactive_parser.feed_token(Token.new_borrow_pos("IDENT", str(token), token))
        return True
    return False


def _check_nesting(text: str) -> None:
    if text.count("(") <= MAX_NESTING:
        return
    depth = 0
    for lexeme in lex(text):
        if lexeme.kind != "punct":
            continue
        depth += {"(": 1, ")": -1}.get(lexeme.text, 0)
        if depth > MAX_NESTING:
            raise ParseError(f"the statement nests parentheses more than {MAX_NESTING} deep", lexeme.start)


def parse_statement(text: str) -> ast.Statement:
    """Parses one statement (no trailing semicolon). Raises ParseError with an offset into `text`."""
    if text[:8].upper().startswith("INSERT"):
        bulk = scan_insert(text)
        if bulk.insert is not None:
            return bulk.insert
        start, end = bulk.skippable
        if end - start > _WORTH_SKIPPING:  # an error among many literal rows: blank them out, offsets unchanged
            _parse_with_grammar(text[:start] + " " * (end - start) + text[end:])
    return _parse_with_grammar(text)


_WORTH_SKIPPING = 10_000  # characters


def _parse_with_grammar(text: str) -> ast.Statement:
    lark, builder, _ = _parser()
    _check_nesting(text)
    try:
        tree = lark.parse(text, on_error=_keyword_as_name)
    except UnexpectedInput as exc:
        raise _syntax_error(text, exc) from None
    try:
        result = builder.transform(tree)
    except VisitError as exc:
        if isinstance(exc.orig_exc, SyntaxRuleError):
            raise ParseError(str(exc.orig_exc), exc.orig_exc.pos) from None
        raise
    return ast.Select(result) if isinstance(result, ast.Query) else result



def parses(text: str) -> bool:
    try:
        parse_statement(text)
    except (ParseError, RecursionError):
        return False
    return True

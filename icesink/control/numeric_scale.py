"""A numeric value's scale as Postgres fixes it, where its rules do (`numeric(10,2)` has 2, `a * b` the sum of its
operands', `a % b` the larger, `round(x, 1)` 1): SQLite computes a numeric as a double, which forgets it, so that
its text is written with these digits (`2.50`, not `2.5`). None where the scale is the value's own (a numeric of no
declared scale, a division, an average)."""
from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from typing import Callable, Optional

from ..grammar import ast
from .types import base_type

_INTEGERS = ("smallint", "integer", "bigint")
_DECLARED = re.compile(r"numeric\(\s*\d+\s*,\s*(\d+)\s*\)")
_PRECISION_ONLY = re.compile(r"numeric\(\s*\d+\s*\)")
# a call whose value has its argument's scale, or none (0)
_SAME_SCALE = ("abs", "sum", "min", "max")
# a window function whose value is one of its first argument's
_ONE_OF = ("first_value", "last_value", "nth_value", "lag", "lead")
_WHOLE = ("ceil", "ceiling", "floor", "sign", "div")


def numeric_scale(expr, kind: str, scale_of: Callable[[object], Optional[int]]) -> Optional[int]:
    """The scale of `expr`, of type `kind`, given its operands' (`scale_of`, None where unknown)."""
    if base_type(kind) in _INTEGERS:
        return 0
    if base_type(kind) != "numeric":
        return None
    if isinstance(expr, (ast.ColumnRef, ast.Cast)):  # a column's or a cast's declared scale
        declared = declared_scale(kind)
        if declared is not None or isinstance(expr, ast.ColumnRef):
            return declared
        if isinstance(expr.expr, ast.Literal) and expr.expr.type == "text":  # '1.50'::numeric: the text's digits
            return _text_scale(str(expr.expr.value))
        return scale_of(expr.expr)
    if isinstance(expr, ast.Literal):
        text = str(expr.value)
        return None if "e" in text.lower() else len(text.partition(".")[2])
    if isinstance(expr, ast.UnaryOp) and expr.op == "-":
        return scale_of(expr.operand)
    if isinstance(expr, ast.Case):  # one of its results: their scale, if they share it
        return _shared({scale_of(result) for result in (*(then for _, then in expr.whens), expr.default)
                        if result is not None and not (isinstance(result, ast.Literal) and result.type == "null")})
    if isinstance(expr, ast.BinaryOp) and expr.op in ("+", "-", "*", "%"):
        left, right = scale_of(expr.left), scale_of(expr.right)
        if left is None or right is None:
            return None
        return left + right if expr.op == "*" else max(left, right)
    if isinstance(expr, ast.FunctionCall) and not expr.star:
        name, args = expr.name.value, expr.args
        if expr.over is not None:  # sum(n) OVER (…) keeps n's scale as sum(n) does
            same = name in _SAME_SCALE or name in _ONE_OF and (len(args) < 3 or name == "nth_value")
            return scale_of(args[0]) if same and args else None
        if name in ("round", "trunc") and len(args) == 1 or name in _WHOLE:
            return 0
        if name in ("round", "trunc") and len(args) == 2:
            digits = args[1]
            if isinstance(digits, ast.Literal) and str(digits.value).isdigit():
                return int(digits.value)
            negative = isinstance(digits, ast.UnaryOp) and digits.op == "-" and isinstance(digits.operand, ast.Literal)
            return 0 if negative else None  # digits before the point: a whole number
        if name == "mod" and len(args) == 2:  # as `%`
            left, right = scale_of(args[0]), scale_of(args[1])
            return None if left is None or right is None else max(left, right)
        if name in _SAME_SCALE and len(args) == 1 or name == "nullif" and len(args) == 2:
            return scale_of(args[0])
        if name in ("greatest", "least", "coalesce") and args:  # one of its arguments: their scale, if they share it
            return _shared({scale_of(a) for a in args})
    return None


def _text_scale(text: str) -> Optional[int]:
    """The scale numeric's input gives a text: its digits after the point (`' 3 '` 0, `'1.50'` 2, `'1e3'` 0)."""
    try:
        exponent = Decimal(text.strip()).as_tuple().exponent
    except InvalidOperation:
        return None  # refused by the cast itself
    return max(0, -exponent) if isinstance(exponent, int) else None  # NaN and infinities have none


def _shared(scales: set) -> Optional[int]:
    return scales.pop() if len(scales) == 1 else None


def declared_scale(kind: str) -> Optional[int]:
    """The scale a numeric type declares: `numeric(10,2)` 2, `numeric(10)` 0, `numeric` none."""
    declared = _DECLARED.fullmatch(kind)
    if declared:
        return int(declared.group(1))
    return 0 if _PRECISION_ONLY.fullmatch(kind) else None

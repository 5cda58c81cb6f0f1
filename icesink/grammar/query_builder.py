"""The query and expression rules of the transformer: SELECT, FROM, WITH, set operations, and expressions."""
from __future__ import annotations

import dataclasses

from lark import Token

from . import ast
from .output_names import named_as
from .tokens import DISTINCT, SyntaxRuleError, keyword_text, make_name, unquote_string

ORDERED_AGGREGATES = frozenset({"string_agg", "array_agg", "list_agg"})  # the aggregates that take ORDER BY
_ASSOCIATIVE = {"UNION", "UNION DISTINCT", "UNION ALL", "INTERSECT", "INTERSECT ALL"}  # (a op b) op c = a op (b op c)


def _inlined(node, named: dict):
    """`node` with each table reference to a name of `named` (WITH's) read as its query, a subquery under the
    reference's alias or name."""
    if not named:
        return node
    if isinstance(node, ast.TableRef):
        if not node.iceberg and len(node.name.parts) == 1 and node.name.name in named:
            return ast.SubqueryRef(named[node.name.name], node.alias or node.name.parts[0])
        return node
    if isinstance(node, tuple):
        rebuilt = tuple(_inlined(x, named) for x in node)
        return rebuilt if any(a is not b for a, b in zip(rebuilt, node)) else node
    if dataclasses.is_dataclass(node) and not isinstance(node, type):
        changed = {}
        for field in dataclasses.fields(node):
            value = getattr(node, field.name)
            if isinstance(value, (tuple, ast.TableRef)) or dataclasses.is_dataclass(value):
                rebuilt = _inlined(value, named)
                if rebuilt is not value:
                    changed[field.name] = rebuilt
        return dataclasses.replace(node, **changed) if changed else node
    return node


# what Postgres reads as calls without parentheses (its reserved words): the date and time now
CLOCK_FUNCTIONS = frozenset({"current_date", "current_time", "current_timestamp", "localtime", "localtimestamp"})


def _trimmed(function: ast.Name, side: str, characters, text) -> ast.FunctionCall:
    """TRIM's special form as the call Postgres computes it: btrim, ltrim or rtrim of the text (and the characters,
    a space unless given), named as Postgres names the column."""
    name = {"BOTH": "btrim", "LEADING": "ltrim", "TRAILING": "rtrim"}[side]
    called = "trim" if name == "btrim" else name
    args = (text,) if characters is None else (text, characters)
    return ast.FunctionCall(ast.Name(called, pos=function.pos), args, shown=name)


class QueryBuilder:
    """AstBuilder's rules for queries and expressions (its helpers, such as `_strip`, are AstBuilder's)."""

    # -------------------------------------------------------- queries
    def star_item(self, _):
        return ast.SelectItem(ast.Star())

    def qualified_star_item(self, c):
        names = tuple(make_name(t) for t in c)
        return ast.SelectItem(ast.Star(names[-1], c[0].start_pos, names[:-1]))

    def expr_item(self, c):
        return ast.SelectItem(c[0], c[1] if len(c) > 1 else None)

    def table_ref(self, c):
        return ast.TableRef(c[0], c[1] if len(c) > 1 else None)

    def iceberg_ref(self, c):
        rest = self._strip(c)
        return ast.TableRef(rest[0], rest[1] if len(rest) > 1 else None, iceberg=True)

    def subquery_ref(self, c):
        return ast.SubqueryRef(c[0], c[1])

    def values_list(self, c):
        """VALUES as the query Postgres reads it as: a SELECT of each row and their union, its columns named
        column1, column2, …"""
        rows = [x[1] for x in c if isinstance(x, tuple) and x[0] == "row"]
        for row in rows[1:]:
            if len(row) != len(rows[0]):
                raise SyntaxRuleError("VALUES lists must all be the same length", getattr(row[0], "pos", 0))
        first = tuple(ast.SelectItem(e, ast.Name(f"column{i + 1}")) for i, e in enumerate(rows[0]))
        cores = (ast.SelectCore(first), *(ast.SelectCore(tuple(ast.SelectItem(e) for e in row)) for row in rows[1:]))
        return ast.Query(cores, ("UNION ALL",) * (len(rows) - 1))

    def column_aliases(self, c):
        return ("column_aliases", self._names(c))

    def values_ref(self, c):
        names = next((x[1] for x in c if isinstance(x, tuple) and x[0] == "column_aliases"), ())
        alias = self._names(c)[0]
        width = len(c[0].cores[0].items)
        if len(names) > width:
            raise SyntaxRuleError(f'table "{alias.value}" has {width} columns available but {len(names)} columns '
                                  "specified", names[width].pos)
        return ast.SubqueryRef(named_as(c[0], names), alias)

    def function_ref(self, c):
        alias = c[-1] if len(c) > 1 and isinstance(c[-1], ast.Name) else None
        return ast.FunctionRef(self.function_call(c[:-1] if alias is not None else c), alias)

    def show_ref(self, c):
        return ast.ShowRef(c[0], c[1] if len(c) > 1 else None)

    def join_type(self, c):
        return ("join_type", str(c[0]).upper())

    def join_on(self, c):
        return ("on", c[-1])

    def join_using(self, c):
        return ("using", self._names(c))

    def join(self, c):
        kind = [x[1] for x in c if isinstance(x, tuple) and x[0] == "join_type"]
        on = [x[1] for x in c if isinstance(x, tuple) and x[0] == "on"]
        using = [x[1] for x in c if isinstance(x, tuple) and x[0] == "using"]
        right = [x for x in c if isinstance(x, (ast.TableRef, ast.SubqueryRef, ast.FunctionRef, ast.ShowRef))][0]
        return ast.Join(kind[0] if kind else "INNER", right, on[0] if on else None, using[0] if using else ())

    def from_item(self, c):
        return ast.FromItem(c[0], tuple(c[1:]))

    def from_clause(self, c):
        return ("from", tuple(self._of(c, ast.FromItem)))

    def group_by(self, c):
        return ("group", tuple(self._strip(c)))

    def having(self, c):
        return ("having", c[-1])

    def select_core(self, c):
        parts = {x[0]: x[1] for x in c if isinstance(x, tuple) and x and isinstance(x[0], str)}
        return ast.SelectCore(tuple(self._of(c, ast.SelectItem)), parts.get("from", ()), parts.get("where"),
                              parts.get("group", ()), parts.get("having"), self._has(c, DISTINCT),
                              parts.get("distinct_on", ()))

    def set_operator(self, c):
        return ("setop", keyword_text(c), c[0].start_pos)

    def ordering(self, c):
        return ("desc", str(c[0]).upper() == "DESC")

    def nulls_ordering(self, c):
        return ("nulls", str(c[-1]).lower())

    def order_item(self, c):
        parts = {x[0]: x[1] for x in c[1:]}
        return ast.OrderItem(c[0], parts.get("desc", False), parts.get("nulls"))

    def order_by(self, c):
        return ("order", tuple(self._of(c, ast.OrderItem)))

    def limit_clause(self, c):
        return ("limit", None if self._is_kw(c[-1], "ALL") else int(float(c[-1])))

    def offset_clause(self, c):
        number = [t for t in c if isinstance(t, Token) and t.type == "NUMBER"][0]
        return ("offset", int(float(number)))

    def with_clause(self, c):
        if any(isinstance(x, Token) and x.type == "RECURSIVE" for x in c):
            raise SyntaxRuleError("WITH RECURSIVE is not supported yet", c[1].start_pos)
        return ("with", tuple(x for x in c if isinstance(x, tuple)))

    def cte(self, c):
        names = [x for x in c if isinstance(x, Token) and x.type in ("IDENT", "QUOTED_IDENT")]
        if len(names) > 1:
            raise SyntaxRuleError(f"WITH {names[0]} (columns …) is not supported yet: name the columns in its SELECT",
                                  names[1].start_pos)
        return (make_name(names[0]), c[-1])

    def query(self, c):
        ctes = next((x[1] for x in c if isinstance(x, tuple) and x[0] == "with"), ())
        found = self._query([x for x in c if not (isinstance(x, tuple) and x[0] == "with")])
        # a common table expression is read as the subquery it names, wherever the query names it
        named: dict[str, ast.Query] = {}
        for name, body in ctes:
            if name.value in named:
                raise SyntaxRuleError(f'WITH query name "{name.value}" specified more than once', name.pos)
            named[name.value] = _inlined(body, named)
        return _inlined(found, named) if named else found

    def _query(self, c):
        parts = {x[0]: x[1] for x in c if isinstance(x, tuple) and x[0] in ("order", "limit", "offset")}
        ops = [x for x in c if isinstance(x, tuple) and x[0] == "setop"]
        operands = [x for x in c if isinstance(x, (ast.SelectCore, ast.Query))]
        cores, operators = [], []
        for i, operand in enumerate(operands):
            if i:
                operators.append(ops[i - 1][1])
            if isinstance(operand, ast.SelectCore):
                cores.append(operand)
                continue
            # a parenthesized operand, `(SELECT …) UNION ALL (SELECT …)`: its cores join the query's where that
            # keeps its meaning
            beside = ops[max(0, i - 1):i + 1]
            if operand.order_by or operand.limit is not None or operand.offset is not None:
                raise SyntaxRuleError("ORDER BY, LIMIT or OFFSET inside a parenthesized operand of a set operation "
                                      "is not supported yet", beside[0][2])
            if operand.set_operators and ({*operand.set_operators, *(op[1] for op in beside)} - _ASSOCIATIVE
                                          or len({*operand.set_operators, *(op[1] for op in beside)}) > 1):
                raise SyntaxRuleError("a parenthesized set operation beside a set operation of another kind is not "
                                      "supported yet", beside[0][2])
            cores.extend(operand.cores)
            operators.extend(operand.set_operators)
        return ast.Query(tuple(cores), tuple(operators), parts.get("order", ()), parts.get("limit"),
                         parts.get("offset"))

    def start(self, c):
        return c[0]

    # -------------------------------------------------------- expressions
    def _binary(self, c):
        return ast.BinaryOp(str(c[1]).upper(), c[0], c[2], c[1].start_pos)

    comparison = binary_op = _binary

    def or_expr(self, c):
        return self._fold(c, "OR")

    def and_expr(self, c):
        return self._fold(c, "AND")

    def _fold(self, c, op):
        operands = self._strip(c)
        result = operands[0]
        for right in operands[1:]:
            result = ast.BinaryOp(op, result, right)
        return result

    def not_op(self, c):
        return ast.UnaryOp("NOT", c[1], c[0].start_pos)

    def unary_op(self, c):
        return ast.UnaryOp(str(c[0]), c[1], c[0].start_pos)

    def _negated(self, c):
        return any(self._is_kw(x, "NOT") for x in c)

    @staticmethod
    def _keyword_pos(c) -> int:
        """Where a predicate's first keyword is written (`x NOT IN …`: NOT), where Postgres points at its operands'
        error."""
        return next((x.start_pos for x in c if isinstance(x, Token)), 0)

    def is_null(self, c):
        return ast.Predicate("is_null", (c[0],), self._negated(c))

    def is_distinct(self, c):
        operands = self._strip(c)
        return ast.Predicate("is_distinct", tuple(operands), self._negated(c), self._keyword_pos(c))

    def truth_value(self, c):
        value = {"TRUE": True, "FALSE": False}.get(str(c[0]).upper())  # UNKNOWN: the null boolean
        return ast.Literal(value, "null" if value is None else "boolean", c[0].start_pos)

    def is_truth(self, c):
        """IS [NOT] TRUE, FALSE or UNKNOWN: never NULL, unlike `= true`."""
        return ast.Predicate("is", (c[0], c[-1]), self._negated(c), c[1].start_pos)

    def regex_match(self, c):
        """`~`, `~*` (case-insensitive) and their negations `!~`, `!~*`."""
        op = str(c[1])
        return ast.Predicate("iregex" if op.endswith("*") else "regex", (c[0], c[2]), op.startswith("!"),
                             c[1].start_pos)

    def like_operator(self, c):
        return ("like_op", str(c[0]).lower())

    def like(self, c):
        op = [x[1] for x in c if isinstance(x, tuple)][0]
        operands = [x for x in self._strip(c) if not isinstance(x, tuple)]
        return ast.Predicate(op, tuple(operands), self._negated(c))

    def in_list(self, c):
        return ast.Predicate("in", tuple(self._strip(c)), self._negated(c), self._keyword_pos(c))

    def in_subquery(self, c):
        operands = self._strip(c)
        return ast.Predicate("in", (operands[0], ast.Subquery(operands[1])), self._negated(c), self._keyword_pos(c))

    def quantifier(self, c):
        return c[0]

    def _quantified(self, c) -> tuple[object, object, bool, int]:
        """(left operand, right one, negated, the quantifier's position) of `x = ANY (…)` (or SOME), which is `x IN …`, and of `x <> ALL (…)`,
        which is `x NOT IN …`: the comparisons with a quantifier icesink computes."""
        left, right = c[0], c[-1]
        op = next((str(x) for x in c[1:-1] if isinstance(x, Token) and x.type == "COMPARISON"), "=")
        quantifier = next(x for x in c[1:-1] if isinstance(x, Token) and x.type in ("ANY", "SOME", "ALL"))
        word = str(quantifier).upper()
        if op == "=" and word in ("ANY", "SOME"):
            return left, right, False, quantifier.start_pos
        if op in ("<>", "!=") and word == "ALL":
            return left, right, True, quantifier.start_pos
        raise SyntaxRuleError(f"{op} {word} (…) is not supported yet: = ANY (…) and <> ALL (…) are",
                              quantifier.start_pos)

    def quantified_subquery(self, c):
        left, query, negated, pos = self._quantified(c)
        return ast.Predicate("in", (left, ast.Subquery(query)), negated, pos)

    def quantified_array(self, c):
        """`x = ANY (array)`: whether the array holds x, NULL where it holds NULL and nothing equal to x."""
        left, array, negated, pos = self._quantified(c)
        if isinstance(array, ast.Subquery):  # `x = ANY ((SELECT …))` is over the subquery's rows, as Postgres reads it
            return ast.Predicate("in", (left, array), negated, pos)
        return ast.Predicate("any", (left, array), negated, pos)

    def array_constructor(self, c):
        """`ARRAY[a, b]`, held as a call of `array` (a keyword: no function of the user's has that name)."""
        return ast.FunctionCall(ast.Name("array", pos=c[0].start_pos), tuple(self._strip(c)))

    def between(self, c):
        return ast.Predicate("between", tuple(self._strip(c)), self._negated(c), self._keyword_pos(c))

    def exists(self, c):
        return ast.Predicate("exists", (ast.Subquery(c[-1]),), False, c[0].start_pos)

    def cast(self, c):
        return ast.Cast(c[0], c[1], c[1].pos)

    def cast_call(self, c):
        rest = self._strip(c)
        return ast.Cast(rest[0], rest[1], c[0].start_pos)

    def subscript(self, c):
        return ast.FunctionCall(ast.Name("[]"), (c[0], c[1]))

    def json_access(self, c):
        return ast.BinaryOp("->", c[0], c[1])

    def json_text_access(self, c):
        return ast.BinaryOp("->>", c[0], c[1])

    def number_literal(self, c):
        return ast.Literal(str(c[0]), "numeric", c[0].start_pos)

    def string_literal(self, c):
        return ast.Literal(unquote_string(c[0]), "text", c[0].start_pos)

    def true_literal(self, c):
        return ast.Literal(True, "boolean", c[0].start_pos)

    def false_literal(self, c):
        return ast.Literal(False, "boolean", c[0].start_pos)

    def null_literal(self, c):
        return ast.Literal(None, "null", c[0].start_pos)

    def typed_literal(self, c):
        """`TIMESTAMP '2026-01-01 10:00'`, `DATE '…'`: a string cast to the type written before it."""
        kind = self.data_type(c[:-1])
        return ast.Cast(ast.Literal(unquote_string(c[-1]), "text", c[-1].start_pos), kind, kind.pos)

    def keyword_call(self, c):
        """EXTRACT(field FROM value), which Postgres computes as date_part('field', value); SUBSTRING(text FROM start
        FOR count), either part left out or the two in either order, as substring(text, start, count)."""
        function, first = make_name(c[0]), c[1]
        parts = {str(c[i]).upper(): c[i + 1] for i in range(2, len(c) - 1, 2)}
        if function.value == "extract" and set(parts) == {"FROM"}:
            if isinstance(first, ast.ColumnRef) and len(first.parts) == 1:
                field = first.parts[0].value
            elif isinstance(first, ast.Literal) and first.type == "text":
                field = first.value
            else:
                raise SyntaxRuleError("EXTRACT takes a field name such as hour or epoch before FROM",
                                      getattr(first, "pos", function.pos))
            return ast.FunctionCall(ast.Name("date_part", pos=function.pos),
                                    (ast.Literal(field.lower(), "text", first.pos), parts["FROM"]), shown="extract")
        if function.value == "substring":
            start = parts.get("FROM", ast.Literal("1", "numeric"))
            return ast.FunctionCall(function, (first, start, *([parts["FOR"]] if "FOR" in parts else ())))
        if function.value == "trim" and set(parts) == {"FROM"}:
            return _trimmed(function, "BOTH", first, parts["FROM"])
        words = " … ".join(parts)
        raise SyntaxRuleError(f"only EXTRACT (field FROM value), SUBSTRING (text FROM start FOR count) and TRIM "
                              f"([BOTH | LEADING | TRAILING] characters FROM text) take (… {words} …), not {function}",
                              c[2].start_pos)

    def trim_side(self, c):
        return c[0]

    def trim_call(self, c):
        """TRIM(BOTH | LEADING | TRAILING [characters] FROM text)."""
        function, side, rest = make_name(c[0]), c[1], self._strip(c[2:])
        if function.value != "trim":
            raise SyntaxRuleError(f"only TRIM takes ({str(side).upper()} … FROM …), not {function}", side.start_pos)
        return _trimmed(function, str(side).upper(), rest[0] if len(rest) == 2 else None, rest[-1])

    def at_time_zone(self, c):
        """`value AT TIME ZONE zone`, which Postgres computes as timezone(zone, value)."""
        return ast.FunctionCall(ast.Name("timezone", pos=c[1].start_pos), (c[-1], c[0]))

    def in_call(self, c):
        """POSITION(substring IN text), which Postgres computes as strpos(text, substring)."""
        function = make_name(c[0])
        if function.value != "position":
            raise SyntaxRuleError(f"only POSITION takes (substring IN text), not {function}", c[2].start_pos)
        return ast.FunctionCall(ast.Name("strpos", pos=function.pos), (c[3], c[1]), shown="position")

    def interval_literal(self, c):
        return ast.Literal(unquote_string(c[1]), "interval", c[0].start_pos)

    def column_ref(self, c):
        names = tuple(make_name(t) for t in c)
        if len(names) == 1 and not names[0].quoted and names[0].value in CLOCK_FUNCTIONS:
            return ast.FunctionCall(names[0], ())  # SQL's functions written without parentheses: the clock's
        return ast.ColumnRef(names)

    def star_arg(self, _):
        return ("star",)

    def args(self, c):
        order = next((x[1] for x in c if isinstance(x, tuple) and x[0] == "order"), ())
        return ("args", tuple(x for x in c if x is not DISTINCT and not isinstance(x, tuple)), self._has(c, DISTINCT),
                order)

    def filter_clause(self, c):
        return ("filter", c[-1])

    def function_call(self, c):
        name = make_name(c[0])
        rest = c[1:]
        star = ("star",) in rest
        args = [x for x in rest if isinstance(x, tuple) and x[0] == "args"]
        filt = [x[1] for x in rest if isinstance(x, tuple) and x[0] == "filter"]
        over = next((x for x in rest if isinstance(x, ast.Window)), None)
        if name.value == "position" and not star and args and len(args[0][1]) == 1 and not (filt or over):
            found = args[0][1][0]  # `position(a IN (b))`: the grammar read an IN list of one (see `predicate`)
            if isinstance(found, ast.Predicate) and found.kind == "in" and not found.negated and len(
                    found.operands) == 2:
                return ast.FunctionCall(ast.Name("strpos", pos=name.pos), found.operands[::-1], shown="position")
        order = args[0][3] if args else ()
        if order and name.value not in ORDERED_AGGREGATES:
            raise SyntaxRuleError(f"ORDER BY in a call of {name.value}() is not supported yet; "
                                  f"{', '.join(sorted(ORDERED_AGGREGATES))} take it", name.pos)
        if order and over is not None:
            raise SyntaxRuleError("ORDER BY inside an aggregate is not implemented for window functions: order the "
                                  "window (OVER (ORDER BY …))", name.pos)
        return ast.FunctionCall(name, args[0][1] if args else (), bool(args) and args[0][2], star,
                                filt[0] if filt else None, over, order_by=order)

    def over_clause(self, c):
        parts = {x[0]: x[1] for x in c if isinstance(x, tuple)}
        frame = next((x for x in c if isinstance(x, ast.WindowFrame)), None)
        return ast.Window(parts.get("window_partition", ()), parts.get("order", ()), frame)

    def window_frame(self, c):
        bounds = [x for x in c if isinstance(x, ast.FrameBound)]
        return ast.WindowFrame(str(c[0]).upper(), bounds[0], bounds[1] if len(bounds) > 1 else None)

    def frame_unit(self, c):
        return str(c[0]).upper()

    def unbounded_preceding(self, c):
        return ast.FrameBound("PRECEDING")

    def unbounded_following(self, c):
        return ast.FrameBound("FOLLOWING")

    def current_row(self, c):
        return ast.FrameBound("CURRENT ROW")

    def preceding(self, c):
        return ast.FrameBound("PRECEDING", c[0])

    def following(self, c):
        return ast.FrameBound("FOLLOWING", c[0])

    def window_partition(self, c):
        return ("window_partition", tuple(self._strip(c)))

    def when_clause(self, c):
        rest = self._strip(c)
        return ("when", rest[0], rest[1], c[0].start_pos)

    def case_expr(self, c):
        whens = tuple((x[1], x[2]) for x in c if isinstance(x, tuple) and x[0] == "when")
        operand, default = None, None
        seen_when = False
        after_else = False
        for x in c:
            if isinstance(x, tuple) and x[0] == "when":
                seen_when = True
            elif self._is_kw(x, "ELSE"):
                after_else = True
            elif not self._is_kw(x):
                if after_else:
                    default = x
                elif not seen_when:
                    operand = x
        return ast.Case(operand, whens, default, c[0].start_pos,
                        tuple(x[3] for x in c if isinstance(x, tuple) and x[0] == "when"))

    def scalar_subquery(self, c):
        return ast.Subquery(c[0])

    def row_constructor(self, c):
        return ast.RowConstructor(tuple(c))

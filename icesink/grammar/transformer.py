"""Turns Lark parse trees into the frozen dataclasses of `ast.py`."""
from __future__ import annotations

import dataclasses

from lark import Token
from lark.visitors import Transformer_NonRecursive

from . import ast
from .lexical import DECODE_FORMATS, LiteralError, decode_bytes, string_value

_IF_NOT_EXISTS = object()
_ASSOCIATIVE = {"UNION", "UNION DISTINCT", "UNION ALL", "INTERSECT", "INTERSECT ALL"}  # (a op b) op c = a op (b op c)
_IF_EXISTS = object()
_DISTINCT = object()


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


def _words(tokens) -> str:
    return " ".join(str(t).upper() for t in tokens if isinstance(t, Token))


class AstBuilder(Transformer_NonRecursive):
    def __init__(self, keywords: frozenset[str]):
        super().__init__()
        self.keywords = keywords

    # -------------------------------------------------------- helpers
    def _is_kw(self, item, *words) -> bool:
        return isinstance(item, Token) and item.type in self.keywords and (not words or item.type in words)

    def _strip(self, children):
        return [c for c in children if not self._is_kw(c)]

    def _has(self, children, marker) -> bool:
        return any(c is marker for c in children)

    def _names(self, children):
        return tuple(make_name(c) for c in children if isinstance(c, Token) and c.type in ("IDENT", "QUOTED_IDENT"))

    def _of(self, children, cls):
        return [c for c in children if isinstance(c, cls)]

    def _one(self, children, cls):
        found = self._of(children, cls)
        return found[0] if found else None

    def _name(self, item) -> ast.Name:
        return make_name(item) if isinstance(item, Token) else item

    # -------------------------------------------------------- names, markers
    def object_name(self, children):
        return ast.ObjectName(tuple(make_name(c) for c in children))

    def if_not_exists(self, _):
        return _IF_NOT_EXISTS

    def if_exists(self, _):
        return _IF_EXISTS

    def distinct(self, _):
        return _DISTINCT

    def distinct_on(self, c):
        return ("distinct_on", tuple(self._strip(c)))

    def object_kind(self, children):
        words = _words(children)
        return {"MATERIALIZED VIEW": "materialized-view"}.get(words, words.lower())

    def object_kind_plural(self, children):
        return _words(children).lower()

    def drop_behavior(self, children):
        return _words(children)

    def in_cluster(self, children):
        return ("cluster", self._names(children)[0])

    # -------------------------------------------------------- option values
    def string_value(self, c):
        return ast.StringValue(unquote_string(c[0]), c[0].start_pos, c[0].end_pos)

    def signed_number(self, c):
        text = "".join(str(t) for t in c)
        return ast.NumberValue(text, c[0].start_pos, c[-1].end_pos)

    def number_value(self, c):
        return c[0]

    def true_value(self, c):
        return ast.BoolValue(True, c[0].start_pos, c[0].end_pos)

    def false_value(self, c):
        return ast.BoolValue(False, c[0].start_pos, c[0].end_pos)

    def default_value(self, c):
        return ast.DefaultValue(c[0].start_pos, c[0].end_pos)

    def word_value(self, c):
        name = make_name(c[0])
        return ast.WordValue(ast.ObjectName((name,)), name.pos, name.end)

    def bare_value(self, c):
        return ast.WordValue(c[0], c[0].pos, c[0].end)

    def secret_value(self, c):
        secret = c[-1]
        return ast.SecretValue(secret, None, c[0].start_pos, secret.end)

    def concat_secret_value(self, c):
        secret = c[-1]
        return ast.SecretValue(secret, unquote_string(c[0]), c[0].start_pos, secret.end)

    def list_value(self, c):
        items = tuple(c)
        first, last = items[0], items[-1]
        return ast.ListValue(items, first.pos, last.end)

    def option_words(self, c):
        return (_words(c), c[0].start_pos)

    def generic_option(self, c):
        (words, pos), value = c[0], (c[1] if len(c) > 1 else None)
        return ast.Option(words, value, pos)

    def generic_options(self, c):
        return tuple(c)

    def _named_option(self, c):
        name_tree, value = c[0], c[-1]
        return ast.Option(name_tree[0], value, name_tree[1])

    def _option_name(self, c):
        return (_words(c), c[0].start_pos)

    aws_option_name = iceberg_option_name = postgres_option_name = gcp_option_name = sink_target_name = _option_name
    aws_option = iceberg_option = postgres_option = gcp_option = sink_target_option = _named_option

    def with_options(self, c):
        return ("with", c[-1])

    with_sink_options = with_options

    # -------------------------------------------------------- secrets, alter, drop
    def create_secret(self, c):
        return ast.CreateSecret(self._one(c, ast.ObjectName), c[-1], self._has(c, _IF_NOT_EXISTS))

    def secret_text(self, c):
        return self.string_value(c)

    def decoded_secret(self, c):
        """`decode('…', 'base64' | 'hex' | 'escape')`, evaluated once, as Postgres and Materialize evaluate it; no
        message says anything of the value."""
        _, data, form = c
        form_text = unquote_string(form).lower()
        try:
            raw = decode_bytes(unquote_string(data), form_text)
        except ValueError as exc:
            raise SyntaxRuleError(str(exc), (form if form_text not in DECODE_FORMATS else data).start_pos) \
                from None
        try:
            value = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise SyntaxRuleError("the decoded secret is not UTF-8 text, which is what icesink keeps secrets as",
                                  data.start_pos) from None
        return ast.StringValue(value, data.start_pos, c[-1].end_pos)

    def rename_to(self, c):
        return (ast.RenameTo(self._names(c)[0]), c[0].start_pos)

    def set_secret_value(self, c):
        return (ast.SetSecretValue(c[-1]), c[0].start_pos)

    def set_from(self, c):
        return (ast.SetFrom(self._one(c, ast.ObjectName)), c[0].start_pos)

    def set_options(self, c):
        return (ast.SetOptions(c[-1]), c[0].start_pos)

    def reset_options(self, c):
        names = tuple(ast.Option(words, None, pos) for words, pos in c[1:])
        return (ast.ResetOptions(names), c[0].start_pos)

    def add_column(self, c):
        return (ast.AddColumn(self._one(c, ast.ColumnDef), self._has(c, _IF_NOT_EXISTS)), c[0].start_pos)

    def alter_system_set(self, c):
        return ast.SetVariable(self._names(c)[0], c[-1], system=True)

    def alter(self, c):
        with_opts = [x for x in c if isinstance(x, tuple) and x[0] == "with"]
        action = [x for x in c if isinstance(x, tuple) and x[0] != "with"][-1]
        kind, name, (action_node, action_pos) = c[1], self._one(c, ast.ObjectName), action
        return ast.Alter(kind, name, action_node, self._has(c, _IF_EXISTS), action_pos,
                         with_opts[0][1] if with_opts else ())

    def drop(self, c):
        behavior = [x for x in c if isinstance(x, str) and x in ("CASCADE", "RESTRICT")]
        return ast.Drop(c[1], tuple(self._of(c, ast.ObjectName)), self._has(c, _IF_EXISTS),
                        bool(behavior) and behavior[0] == "CASCADE")

    # -------------------------------------------------------- connections
    def aws_body(self, c):
        return ("aws", tuple(self._of(c, ast.Option)))

    def iceberg_body(self, c):
        return ("iceberg-catalog", tuple(self._of(c, ast.Option)))

    def postgres_body(self, c):
        return ("postgres", tuple(self._of(c, ast.Option)))

    def gcp_body(self, c):
        return ("gcp", tuple(self._of(c, ast.Option)))

    def create_connection(self, c):
        body = [x for x in c if isinstance(x, tuple) and x[0] in ("aws", "iceberg-catalog", "postgres", "gcp")][0]
        with_opts = [x for x in c if isinstance(x, tuple) and x[0] == "with"]
        return ast.CreateConnection(self._one(c, ast.ObjectName), body[0], body[1],
                                    with_opts[0][1] if with_opts else (), self._has(c, _IF_NOT_EXISTS))

    def validate_connection(self, c):
        return ast.ValidateConnection(self._one(c, ast.ObjectName))

    # -------------------------------------------------------- sources, tables, views
    def for_all_tables(self, _):
        return ("all", None)

    def for_schemas(self, c):
        return ("schemas", self._names(c))

    def table_reference(self, c):
        alias = self._names(c)
        return ast.TableReference(c[0], alias[0] if alias else None)

    def for_tables(self, c):
        return ("tables", tuple(self._of(c, ast.TableReference)))

    def postgres_source(self, c):
        tables = [x for x in c if isinstance(x, tuple) and x and x[0] in ("all", "schemas", "tables")]
        options = [x for x in c if isinstance(x, tuple) and x and isinstance(x[0], ast.Option)]
        kind, items = tables[0] if tables else (None, None)
        return ("postgres", self._one(c, ast.ObjectName), options[0] if options else (), kind, items)

    def generator_name(self, c):
        names = [make_name(t) if t.type in ("IDENT", "QUOTED_IDENT") else ast.Name(str(t).lower()) for t in c]
        return ast.Name(" ".join(n.value for n in names), pos=c[0].start_pos, end=c[-1].end_pos)

    def load_generator_source(self, c):
        options = [x for x in c if isinstance(x, tuple) and x and isinstance(x[0], ast.Option)]
        all_tables = any(isinstance(x, tuple) and x and x[0] == "all" for x in c)
        return ("load-generator", self._one(c, ast.Name), options[0] if options else (), all_tables)

    def create_source(self, c):
        name = self._one(c, ast.ObjectName)
        cluster = [x[1] for x in c if isinstance(x, tuple) and x[0] == "cluster"]
        cluster = cluster[0] if cluster else None
        body = c[-1]
        ine = self._has(c, _IF_NOT_EXISTS)
        if body[0] == "postgres":
            _, conn, options, kind, items = body
            return ast.CreatePostgresSource(name, conn, options, items, kind, cluster, ine)
        _, generator, options, all_tables = body
        return ast.CreateLoadGeneratorSource(name, generator, options, all_tables, cluster, ine)

    def type_params(self, c):
        return ("params", tuple(int(float(t)) for t in c))

    def array_suffix(self, _):
        return ("array",)

    def double_type(self, c):
        return ("double precision", c[0].start_pos)

    def character_type(self, c):
        return ("character varying" if len(c) > 1 else "character", c[0].start_pos)

    def timestamp_type(self, c):
        zone = _words(c[1:]) if len(c) > 1 else ""
        return ("timestamp with time zone" if zone.startswith("TIME ZONE") else "timestamp", c[0].start_pos)

    def time_zone(self, c):
        return Token("TIME_ZONE", "TIME ZONE" if c[0].type == "WITH" else "WITHOUT")

    def time_type(self, c):
        zone = len(c) > 1 and str(c[1]) == "TIME ZONE"
        return ("time with time zone" if zone else "time", c[0].start_pos)

    def bare_map_type(self, c):
        """`map` alone: an earlier icesink kept such a column as text, and its catalog may still say so."""
        return ast.DataType("map", (), sum(1 for x in c if x == ("array",)), c[0].start_pos)

    def map_type(self, c):
        key, value = [x for x in c if isinstance(x, ast.DataType)]
        depth = sum(1 for x in c if x == ("array",))
        return ast.DataType("map", (), depth, c[0].start_pos, key, value)

    def data_type(self, c):
        head = c[0]
        if isinstance(head, Token):
            name, pos = make_name(head).value, head.start_pos
        else:
            name, pos = head
        params = [x[1] for x in c if isinstance(x, tuple) and x[0] == "params"]
        depth = sum(1 for x in c if x == ("array",))
        return ast.DataType(name, params[0] if params else (), depth, pos)

    def not_null(self, _):
        return ("not_null",)

    def nullable(self, _):
        return ("nullable",)

    def column_primary_key(self, _):
        return ("primary_key",)

    def column_default(self, c):
        return ("default", c[-1])

    def column_def(self, c):
        name, dtype, constraints = make_name(c[0]), c[1], c[2:]
        default = [x[1] for x in constraints if x[0] == "default"]
        return ast.ColumnDef(name, dtype, ("not_null",) in constraints or ("primary_key",) in constraints,
                             ("primary_key",) in constraints, default[0] if default else None)

    def table_primary_key(self, c):
        return ("pk", self._names(c))

    def create_type(self, c):
        category = next((str(t).lower() for t in c if isinstance(t, Token) and t.type in ("LIST", "MAP")), "record")
        options = next((x for x in c if isinstance(x, tuple) and x and isinstance(x[0], ast.Option)), ())
        return ast.CreateType(self._one(c, ast.ObjectName), tuple(self._of(c, ast.ColumnDef)), category, options)

    def create_table(self, c):
        columns = tuple(self._of(c, ast.ColumnDef))
        pk = [x[1] for x in c if isinstance(x, tuple) and x and x[0] == "pk"]
        inline_pk = tuple(col.name for col in columns if col.primary_key)
        if pk and inline_pk or len(pk) > 1 or len(inline_pk) > 1:
            where = pk[-1][0].pos if pk else inline_pk[-1].pos
            raise SyntaxRuleError("multiple primary keys for the table are not allowed", where)
        return ast.CreateTable(self._one(c, ast.ObjectName), columns, pk[0] if pk else inline_pk,
                               self._has(c, _IF_NOT_EXISTS))

    def create_table_from_source(self, c):
        names = self._of(c, ast.ObjectName)
        return ast.CreateTableFromSource(names[0], names[1], names[2] if len(names) > 2 else None,
                                         self._has(c, _IF_NOT_EXISTS))

    def create_mv(self, c):
        cluster = [x[1] for x in c if isinstance(x, tuple) and x[0] == "cluster"]
        return ast.CreateMaterializedView(self._one(c, ast.ObjectName), c[-1], cluster[0] if cluster else None,
                                          self._has(c, _IF_NOT_EXISTS))

    # -------------------------------------------------------- sinks
    def using_aws(self, c):
        return ("aws", c[-1])

    def key_enforcement(self, c):
        return ("enforced", len(c) == 1)

    def sink_key(self, c):
        enforced = [x[1] for x in c if isinstance(x, tuple) and x[0] == "enforced"]
        return ("key", self._names(c), enforced[0] if enforced else True)

    def partition_number(self, c):
        return ("number", int(float(c[0])), c[0].start_pos)

    def partition_field(self, c):
        head = make_name(c[0])
        args = c[1:]
        if not args:
            return ast.PartitionField(None, head)
        columns = [make_name(a) for a in args if isinstance(a, Token)]
        numbers = [a[1] for a in args if isinstance(a, tuple)]
        if len(columns) != 1 or len(numbers) > 1:
            raise SyntaxRuleError(f"partition transform {head.value}() takes one column and at most one number",
                                  head.pos)
        return ast.PartitionField(head, columns[0], numbers[0] if numbers else None)

    def partition_by(self, c):
        return ("partition", tuple(self._of(c, ast.PartitionField)))

    def sink_mode(self, c):
        words = [str(t).lower() for t in c]
        return ("mode", words[-1], c[0].start_pos)

    def create_sink(self, c):
        names = self._of(c, ast.ObjectName)
        tagged = {}
        partitions = []
        for x in c:
            if isinstance(x, tuple) and x and isinstance(x[0], str):
                if x[0] == "partition":
                    partitions.append(x[1])
                else:
                    tagged[x[0]] = x
        key = tagged.get("key", ("key", (), True))
        mode = tagged.get("mode")
        return ast.CreateSink(
            name=names[0], input=names[1], connection=names[2],
            target=tuple(self._of(c, ast.Option)),
            mode=mode[1] if mode else None, mode_pos=mode[2] if mode else 0,
            key=key[1], key_enforced=key[2],
            partition_by=tuple(f for p in partitions for f in p), partition_by_clauses=len(partitions),
            with_options=tagged["with"][1] if "with" in tagged else None,
            aws_connection=tagged["aws"][1] if "aws" in tagged else None,
            cluster=tagged["cluster"][1] if "cluster" in tagged else None,
            if_not_exists=self._has(c, _IF_NOT_EXISTS))

    # -------------------------------------------------------- show, writes, settings
    def show_objects(self, c):
        like = [t for t in c if isinstance(t, Token) and t.type == "STRING"]
        on = [x for x in c if isinstance(x, ast.ObjectName)]
        return ast.ShowObjects(c[1], unquote_string(like[0]) if like else None, on[0] if on else None)

    def show_create(self, c):
        kind = [x for x in c if isinstance(x, str) and not isinstance(x, Token)][0]
        return ast.ShowCreate(kind, self._one(c, ast.ObjectName), any(self._is_kw(x, "REDACTED") for x in c))

    def show_columns(self, c):
        return ast.ShowColumns(c[-1])

    def show_variable(self, c):
        return ast.ShowVariable(make_name(c[-1]))

    def column_list(self, c):
        return ("columns", self._names(c))

    def values_row(self, c):
        return ("row", tuple(c))

    def insert(self, c):
        columns = [x[1] for x in c if isinstance(x, tuple) and x[0] == "columns"]
        rows = tuple(x[1] for x in c if isinstance(x, tuple) and x[0] == "row")
        return ast.Insert(self._one(c, ast.ObjectName), columns[0] if columns else (), rows,
                          self._one(c, ast.Query))

    def copy_from(self, c):
        columns = [x[1] for x in c if isinstance(x, tuple) and x[0] == "columns"]
        path = [t for t in c if isinstance(t, Token) and t.type == "STRING"][0]
        options = [x for x in c if isinstance(x, tuple) and x and isinstance(x[0], ast.Option)]
        return ast.Copy(self._one(c, ast.ObjectName), columns[0] if columns else (), self.string_value([path]),
                        options[0] if options else ())

    def alias(self, c):
        return self._names(c)[0]

    def assignment(self, c):
        return ("assign", make_name(c[0]), c[1])

    def where_clause(self, c):
        return ("where", c[-1])

    def _where(self, c):
        found = [x[1] for x in c if isinstance(x, tuple) and x and x[0] == "where"]
        return found[0] if found else None

    def update(self, c):
        assignments = tuple((x[1], x[2]) for x in c if isinstance(x, tuple) and x[0] == "assign")
        return ast.Update(self._one(c, ast.ObjectName), assignments, self._where(c), self._one(c, ast.Name))

    def delete(self, c):
        return ast.Delete(self._one(c, ast.ObjectName), self._where(c), self._one(c, ast.Name))

    def set_variable(self, c):
        return ast.SetVariable(make_name(c[1]), c[-1])

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
                              parts.get("group", ()), parts.get("having"), self._has(c, _DISTINCT),
                              parts.get("distinct_on", ()))

    def set_operator(self, c):
        return ("setop", _words(c), c[0].start_pos)

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

    def equals(self, c):
        return ast.BinaryOp("=", c[0], c[1])

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

    def is_null(self, c):
        return ast.Predicate("is_null", (c[0],), self._negated(c))

    def is_distinct(self, c):
        operands = self._strip(c)
        return ast.Predicate("is_distinct", tuple(operands), self._negated(c))

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
        return ast.Predicate("in", tuple(self._strip(c)), self._negated(c))

    def in_subquery(self, c):
        operands = self._strip(c)
        return ast.Predicate("in", (operands[0], ast.Subquery(operands[1])), self._negated(c))

    def between(self, c):
        return ast.Predicate("between", tuple(self._strip(c)), self._negated(c))

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
        words = " … ".join(parts)
        raise SyntaxRuleError(f"only EXTRACT (field FROM value) and SUBSTRING (text FROM start FOR count) take "
                              f"(… {words} …), not {function}", c[2].start_pos)

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
        return ast.ColumnRef(tuple(make_name(t) for t in c))

    def star_arg(self, _):
        return ("star",)

    def args(self, c):
        return ("args", tuple(x for x in c if x is not _DISTINCT), self._has(c, _DISTINCT))

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
        return ast.FunctionCall(name, args[0][1] if args else (), bool(args) and args[0][2], star,
                                filt[0] if filt else None, over)

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
        return ("when", rest[0], rest[1])

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
        return ast.Case(operand, whens, default, c[0].start_pos)

    def scalar_subquery(self, c):
        return ast.Subquery(c[0])

    def row_constructor(self, c):
        return ast.RowConstructor(tuple(c))

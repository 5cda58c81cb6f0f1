"""Turns Lark parse trees into the frozen dataclasses of `ast.py`: statements here, queries and expressions in
query_builder.py."""
from __future__ import annotations

from lark import Token
from lark.visitors import Transformer_NonRecursive

from . import ast
from .lexical import DECODE_FORMATS, decode_bytes
from .query_builder import QueryBuilder
from .tokens import DISTINCT, SyntaxRuleError, keyword_text, make_name, unquote_string

_IF_NOT_EXISTS = object()
_IF_EXISTS = object()


class AstBuilder(QueryBuilder, Transformer_NonRecursive):
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
        return DISTINCT

    def distinct_on(self, c):
        return ("distinct_on", tuple(self._strip(c)))

    def object_kind(self, children):
        words = keyword_text(children)
        return {"MATERIALIZED VIEW": "materialized-view"}.get(words, words.lower())

    def object_kind_plural(self, children):
        return keyword_text(children).lower()

    def drop_behavior(self, children):
        return keyword_text(children)

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
        return (keyword_text(c), c[0].start_pos)

    def generic_option(self, c):
        (words, pos), value = c[0], (c[1] if len(c) > 1 else None)
        return ast.Option(words, value, pos)

    def generic_options(self, c):
        return tuple(c)

    def _named_option(self, c):
        name_tree, value = c[0], c[-1]
        return ast.Option(name_tree[0], value, name_tree[1])

    def _option_name(self, c):
        return (keyword_text(c), c[0].start_pos)

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
        zone = keyword_text(c[1:]) if len(c) > 1 else ""
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

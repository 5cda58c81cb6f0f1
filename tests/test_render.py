"""One AST, rendered per target: what a query renders to runs on SQLite with the results sqlglot's own reading of the
text gives (the oracle), reads back through the grammar unchanged, and runs on Spark for Iceberg tables."""
import sqlglot
import pytest

from icesink.grammar import render
from icesink.grammar.parser import parse_statement
from tests.conftest import rows

SETUP = """
CREATE SECRET pw AS 'v';
CREATE CONNECTION lake TO ICEBERG CATALOG (CATALOG TYPE 'local');
CREATE CONNECTION aws TO AWS (ASSUME ROLE ARN = 'arn:aws:iam::1:role/x', REGION 'eu-west-1');
CREATE TABLE orders (id bigint NOT NULL, customer text, amount numeric(10,2), note text, PRIMARY KEY (id));
INSERT INTO orders VALUES (1, 'ada', 10.5, NULL), (2, 'grace', 3, 'x'), (3, 'ada', 7.25, 'y'), (4, NULL, 0, 'z');
CREATE SINK s1 FROM orders INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'shop', TABLE 'o') KEY (id) MODE UPSERT
  WITH (COMMIT INTERVAL '1s');
CREATE SINK s2 FROM orders INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'shop', TABLE 'o2') MODE APPEND
  WITH (COMMIT INTERVAL '2s');
"""
CATALOG_QUERIES = [
    "SELECT name, type FROM mz_objects ORDER BY name",
    "SELECT s.name, st.status, st.error FROM mz_sinks s JOIN mz_internal.mz_sink_statuses st ON s.id = st.id ORDER BY 1",
    "SELECT type, count(*) AS n FROM mz_objects GROUP BY type HAVING count(*) >= 1 ORDER BY n DESC, type",
    "SELECT name FROM mz_objects WHERE name LIKE 's%' AND type <> 'secret' OR name ILIKE 'LAKE' ORDER BY name",
    "SELECT name FROM mz_objects WHERE id IN (SELECT connection_id FROM mz_sinks) ORDER BY 1",
    "SELECT name FROM mz_objects o WHERE NOT EXISTS (SELECT 1 FROM mz_sinks s WHERE s.id = o.id) ORDER BY 1 LIMIT 3 OFFSET 1",
    "SELECT CASE WHEN type = 'sink' THEN 'S' WHEN type = 'table' THEN 'T' ELSE 'other' END AS k, count(*) FROM mz_objects GROUP BY 1 ORDER BY 1",
    "SELECT id::text || '-' || name AS label, length(name) * 2 + 1 AS n FROM mz_objects WHERE oid BETWEEN 20001 AND 20004 ORDER BY 1",
    "SELECT name FROM mz_sinks UNION SELECT name FROM mz_tables ORDER BY 1",
    "SELECT name FROM mz_sinks UNION ALL SELECT name FROM mz_sinks EXCEPT SELECT 's1' ORDER BY 1",
    "SELECT (SELECT count(*) FROM mz_sinks) AS sinks, coalesce(NULL, 'x') AS c, 7 / 2 AS d, -7 % 3 AS m, 2 * (3 + 4) AS p",
    "SELECT count(DISTINCT type) AS kinds, max(name) FILTER (WHERE type = 'sink') AS last_sink FROM mz_objects",
    "SELECT name FROM mz_objects WHERE name NOT IN ('pw', 'lake') AND id IS NOT NULL AND name IS DISTINCT FROM 'aws' ORDER BY 1",
    "SELECT DISTINCT type FROM mz_objects ORDER BY type DESC NULLS LAST",
    "SELECT x.n FROM (SELECT count(*) AS n FROM mz_sinks) x",
    "SELECT i.id, i.\"table\" FROM mz_catalog.mz_iceberg_sinks i ORDER BY i.id",
    "SELECT mz_sinks.name FROM mz_sinks WHERE mz_sinks.name = 's1'",
    "SELECT name, upper(name), lower('ABC'), replace(name, 's', 'S'), substr(name, 1, 2) FROM mz_sinks ORDER BY 1",
]
TABLE_QUERIES = [
    "SELECT customer, sum(amount) AS total, count(*) AS n FROM orders GROUP BY customer ORDER BY customer NULLS FIRST",
    "SELECT o.id, o.note FROM orders o WHERE o.note IS NULL OR o.id > 3 ORDER BY o.id",
    "SELECT orders.id FROM orders WHERE orders.customer = 'ada' AND NOT (id < 2) ORDER BY 1",
    "SELECT a.id, b.id FROM orders a JOIN orders b ON a.customer = b.customer AND a.id < b.id ORDER BY 1, 2",
    "SELECT a.id FROM orders a LEFT JOIN orders b ON b.id = a.id + 10 WHERE b.id IS NULL ORDER BY 1",
    "SELECT id FROM orders WHERE customer IS DISTINCT FROM 'ada' ORDER BY id DESC",
    "SELECT id, position('a' IN customer), substring(customer FROM 2 FOR 2), substring(customer FOR 1), "
    "(amount > 5) IS TRUE, (note > 'x') IS NOT FALSE, (note > 'x') IS UNKNOWN FROM orders ORDER BY id",
    "SELECT id, sum(amount) OVER (PARTITION BY customer ORDER BY id ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) AS s, "
    "count(*) OVER (ORDER BY customer RANGE UNBOUNDED PRECEDING) AS c, max(id) OVER (ORDER BY id ROWS BETWEEN "
    "CURRENT ROW AND 2 FOLLOWING) AS m FROM orders ORDER BY id",
]


def _oracle(session, text: str, target: str):
    """The query as sqlglot reads the text itself, with the relations named as render names them."""
    tree = sqlglot.parse_one(text, read="postgres")
    for table in tree.find_all(sqlglot.exp.Table):
        table.set("db", None)
        if target == "tables":
            table.set("alias", sqlglot.exp.TableAlias(this=sqlglot.exp.to_identifier(table.alias or table.name)))
            table.set("this", sqlglot.exp.to_identifier(f"t_{session.catalog.get(table.name).id}"))
    for column in tree.find_all(sqlglot.exp.Column):
        column.set("db", None)
    run = session.tables.query if target == "tables" else session.catalog.query
    return run(tree.sql(dialect="sqlite"))[1]


@pytest.fixture
def filled(session):
    session.execute(SETUP)
    return session


@pytest.mark.parametrize("text", CATALOG_QUERIES + TABLE_QUERIES)
def test_rendered_queries_answer_as_sqlglots_own_reading_does(filled, text):
    target = "tables" if text in TABLE_QUERIES else "catalog"
    expected = _oracle(filled, text, target)
    # a numeric of a known scale is shown with its digits ('3.00'), where SQLite alone gives the double
    got = [tuple(float(v) if isinstance(v, str) and isinstance(e, float) else v for v, e in zip(row, want))
           for row, want in zip(rows(filled, text), expected)]
    assert got == expected and len(rows(filled, text)) == len(expected) and got, text


@pytest.mark.parametrize("text", CATALOG_QUERIES + TABLE_QUERIES)
def test_rendered_postgres_text_reads_back_to_the_same_tree(text):
    once = render.stored_sql(render.query(parse_statement(text).query))
    again = render.stored_sql(render.query(parse_statement(once).query))
    assert once == again


def test_regular_expressions_and_negations_read_back_and_render_for_spark():
    """`~*` is RLIKE with Java's (?i); substring's literal bounds are worked out for Spark, which reads a start of 0
    as 1; a negated predicate keeps its parentheses inside a comparison."""
    text = ("SELECT a ~ 'x', a !~* 'y', (a !~ b) < c, substring(a FROM 0 FOR 3), substring(a FROM n FOR 2), "
            "b ~* c FROM t")
    once = render.stored_sql(render.query(parse_statement(text).query))
    assert once == ("SELECT a ~ 'x', NOT a ~* 'y', (NOT a ~ b) < c, SUBSTRING(a, 0, 3), SUBSTRING(a, n, 2), b ~* c "
                    "FROM t")
    assert render.stored_sql(render.query(parse_statement(once).query)) == once
    assert render.spark_sql(render.query(parse_statement(text).query)) == (
        "SELECT a RLIKE 'x', NOT a RLIKE '(?i)y', (NOT a RLIKE b) < c, SUBSTRING(a, 1, 2), "
        "CASE WHEN (n) < 1 THEN SUBSTRING(a, 1, (n) + (2) - 1) ELSE SUBSTRING(a, n, 2) END, "
        "b RLIKE CONCAT('(?i)', c) FROM t")


def test_a_long_chain_renders_without_needless_parentheses():
    """SQLite refuses more than about 90 nested parentheses: a left-deep chain must not turn into them."""
    from icesink.recursion import deep_recursion
    text = "SELECT " + " + ".join(["1"] * 900) + " AS total, 2 * (3 + 4) - (5 - 1) AS p"
    with deep_recursion():
        rendered = render.query(parse_statement(text).query).sql(dialect="sqlite")
    assert rendered.count("(") == 2 and rendered.endswith("2 * (3 + 4) - (5 - 1) AS p")


def _meaning(node):
    """A statement as the binder reads it: quoting, positions and IF NOT EXISTS (which the catalog does not keep)
    aside; a column's inline PRIMARY KEY counts through the table's key; date_trunc's unit is case-insensitive."""
    import dataclasses
    from icesink.grammar import ast
    if isinstance(node, ast.Name):
        return node.value
    if isinstance(node, ast.FunctionCall) and node.name.value == "date_trunc" and isinstance(node.args[0], ast.Literal):
        node = dataclasses.replace(node, args=(dataclasses.replace(node.args[0], value=node.args[0].value.lower()),
                                               *node.args[1:]))
    if dataclasses.is_dataclass(node):
        skip = {"if_not_exists"} | ({"primary_key"} if isinstance(node, ast.ColumnDef) else set())
        return (type(node).__name__, tuple((f.name, _meaning(getattr(node, f.name))) for f in dataclasses.fields(node)
                                           if f.compare and not f.name.endswith("pos") and f.name not in skip))
    if isinstance(node, (tuple, list)):
        return tuple(_meaning(n) for n in node)
    return node


def _creates():
    from icesink.grammar.lexical import split_statements
    from tests.conftest import CORPUS
    texts = [s.text for f in ("dialect.sql", "seed_004.sql") for s in split_statements((CORPUS / f).read_text())]
    return [t for t in texts if t.lstrip().upper().startswith("CREATE") and "SECRET" not in t.split()[1].upper()]


@pytest.mark.parametrize("text", _creates())
def test_stored_create_text_reads_back_to_the_same_statement(text):
    """What SHOW CREATE shows (and renames rewrite) is generated from the AST: it must mean what the user wrote."""
    statement = parse_statement(text)
    stored = render.statement_sql(statement)
    assert _meaning(parse_statement(stored)) == _meaning(statement), stored
    assert render.statement_sql(parse_statement(stored)) == stored

"""The grammar: every documented statement parses; malformed input gets a positioned error in words."""
import re

import pytest

import icesink
from icesink.grammar import ast
from icesink.grammar.lexical import lex, split_statements
from icesink.grammar.parser import parse_statement
from icesink.session import position_of
from tests.conftest import CORPUS


def corpus_statements(name):
    text = (CORPUS / name).read_text()
    return [s.text for s in split_statements(text)]


@pytest.mark.parametrize("name, at_least", [("dialect.sql", 85), ("seed_004.sql", 15)])
def test_corpus_parses(name, at_least):
    statements = corpus_statements(name)
    assert len(statements) >= at_least
    for text in statements:
        assert isinstance(parse_statement(text), ast.Statement), text


def test_both_materialize_spellings_parse_alike():
    base = "CREATE SINK s FROM t INTO ICEBERG CATALOG CONNECTION c (NAMESPACE {eq} 'n', TABLE {eq} 't') KEY (id) {mode} WITH (COMMIT INTERVAL {eq} '1s')"
    forms = {parse_statement(base.format(eq=eq, mode=mode)) for eq in ("=", "") for mode in ("MODE UPSERT", "ENVELOPE UPSERT", "mode upsert")}
    assert len(forms) == 1
    assert next(iter(forms)).mode == "upsert"


def test_identifiers_fold_unless_quoted_and_keywords_stay_names():
    stmt = parse_statement('CREATE TABLE "MyTable" (Key text, "Type" int, value int, table_ int, day date, status text)')
    assert stmt.name.name == "MyTable"
    assert [c.name.value for c in stmt.columns] == ["key", "Type", "value", "table_", "day", "status"]
    select = parse_statement("SELECT key, table, hour, value, name FROM t")
    assert [i.expr.column for i in select.query.cores[0].items] == ["key", "table", "hour", "value", "name"]
    assert parse_statement("CREATE SOURCE g FROM LOAD GENERATOR COUNTER (UP TO 10)").options[0].name == "UP TO"


def test_postgres_special_forms_read_as_the_calls_and_predicates_they_mean():
    items = [i.expr for i in parse_statement(
        "SELECT position('b' IN v), position('b' IN (v)), substring(v FROM 2 FOR 3), substring(v FOR 3 FROM 2), "
        "substring(v FOR 3), x IS NOT TRUE, x IS UNKNOWN, v !~* 'a', EXTRACT(hour FROM ts), bool_or(v IN ('a'))"
    ).query.cores[0].items]
    calls = [(i.name.value, len(i.args)) for i in items if isinstance(i, ast.FunctionCall)]
    assert calls == [("strpos", 2), ("strpos", 2), ("substring", 3), ("substring", 3), ("substring", 3),
                     ("date_part", 2), ("bool_or", 1)]
    assert items[0] == items[1] and items[2] == items[3] and items[0].args[1].value == "b"
    assert items[4].args[1] == ast.Literal("1", "numeric")
    predicates = [(i.kind, i.negated, getattr(i.operands[1], "value", None)) for i in items[5:8]]
    assert predicates == [("is", True, True), ("is", False, None), ("iregex", True, "a")]


def test_partition_by_before_or_after_mode_and_casts():
    before = parse_statement("CREATE SINK s FROM t INTO ICEBERG CATALOG CONNECTION c (NAMESPACE 'n', TABLE 't') KEY (id) PARTITION BY (day(ts)) MODE UPSERT WITH (COMMIT INTERVAL '1s')")
    after = parse_statement("CREATE SINK s FROM t INTO ICEBERG CATALOG CONNECTION c (NAMESPACE 'n', TABLE 't') KEY (id) MODE UPSERT PARTITION BY (day(ts)) WITH (COMMIT INTERVAL '1s')")
    assert before == after and before.partition_by[0].transform.value == "day"
    where = parse_statement("SELECT 1 FROM t WHERE x::text = '1'").query.cores[0].where
    assert isinstance(where.left, ast.Cast) and where.left.type.name == "text"


# (statement, line, column, words the message must contain); line and column are 1-based.
HAND_WRITTEN = [
    ("CREATE CONNECTION lake TO ICEBERG CATALOG (URI = 'x')", 1, 44, "expected a connection option such as URL or WAREHOUSE, found 'URI'"),
    ("CREATE CONNECTION a TO AWS (REGON 'x')", 1, 29, "expected a connection option such as REGION or ACCESS KEY ID, found 'REGON'"),
    ("CREATE CONNECTION p TO POSTGRES (HOSTNAME 'x')", 1, 34, "expected a connection option such as HOST or DATABASE, found 'HOSTNAME'"),
    ("CREAT SINK s", 1, 1, "expected a statement such as CREATE, SELECT, SHOW, ALTER or DROP, found 'CREAT'"),
    ("CREATE FOO x", 1, 8, "expected an object type such as SINK, SOURCE, CONNECTION, SECRET or TABLE, found 'FOO'"),
    ("CREATE CONNECTION x TO KAFKA (BROKER 'b')", 1, 24, "expected a connection type: AWS, ICEBERG CATALOG, POSTGRES or GCP, found 'KAFKA'"),
    ("CREATE SINK s FROM t INTO ICEBERG CATALOG CONNECTION c (NAMESPACE 'a', TABL 'b')", 1, 72, "expected a sink target option: NAMESPACE or TABLE, found 'TABL'"),
    ("SELECT 1 +", 1, 11, "expected an expression, found the end of the statement"),
    ("CREATE SECRET x AS 'abc", 1, 20, "unterminated string literal"),
    ('SELECT "abc FROM t', 1, 8, "unterminated quoted identifier"),
    ("DROP SINK", 1, 10, "expected IF or a name, found the end of the statement"),
    ("CREATE SINK s FROM t INTO ICEBERG CATALOG CONNECTION c (NAMESPACE 'a', TABLE 'b') KEY (id) MODE UPSERT WITH (COMMIT INTERVAL '1s'", 1, 130, "expected ')', ',' or '||', found the end of the statement"),
    ("CREATE SINK s FROM t INTO ICEBERG CONNECTION c (NAMESPACE 'a')", 1, 35, "expected CATALOG, found 'CONNECTION'"),
    ("CREATE SINK s FROM t INTO ICEBERG CATALOG CONNECTION c (NAMESPACE 'a', TABLE 'b') KEY id MODE UPSERT", 1, 87, "expected '(', found 'id'"),
    ("CREATE SINK s FROM t INTO ICEBERG CATALOG CONNECTION c (NAMESPACE 'a', TABLE 'b') MODE MERGE", 1, 88, "expected APPEND or UPSERT, found 'MERGE'"),
    ("CREATE SECRET s 'v'", 1, 17, "expected '.' or AS, found a string literal"),
    ("CREATE SECRET s AS v", 1, 20, "expected a string literal or decode('…', 'base64'), found a value that is not shown"),
    ("ALTER SECRET s TO 'v'", 1, 16, "found a value that is not shown"),  # what follows a secret's name
    ("SHOW CREATE SINKZ s", 1, 13, "found 'SINKZ'"),
    ("SELECT a FROM t WHERE", 1, 22, "expected an expression, found the end of the statement"),
    ("SELECT a FROM t ORDER a", 1, 23, "expected BY, found 'a'"),
    ("SELECT (1 + 2 FROM t", 1, 15, "found 'FROM'"),
    ("INSERT INTO t VALUES 1, 2", 1, 22, "found '1'"),
    ("UPDATE t name = 1", 1, 15, "expected SET, found '='"),
    ("DELETE t", 1, 8, "expected FROM, found 't'"),
    ("CREATE TABLE t (id bigint,)", 1, 27, "found ')'"),
    ("CREATE TABLE t id bigint", 1, 16, "found 'id'"),
    ("CREATE TABLE t (id bigint, PRIMARY KEY (id), PRIMARY KEY (id))", 1, 59, "multiple primary keys"),
    ("CREATE SOURCE s FROM MYSQL CONNECTION c", 1, 22, "expected LOAD or POSTGRES, found 'MYSQL'"),
    ("CREATE SOURCE s FROM POSTGRES CONNECTION pg (PUBLICATION 'p') FOR TABLE (t)", 1, 67, "found 'TABLE'"),
    ("CREATE MATERIALIZED VIEW v SELECT 1", 1, 28, "expected AS or IN, found 'SELECT'"),
    ("CREATE CONNECTION c TO ICEBERG CATALOG (CATALOG TYPE = 'rest', URL = )", 1, 70, "expected a value: a string, a number, TRUE, FALSE or SECRET name, found ')'"),
    ("CREATE CONNECTION c TO ICEBERG CATALOG (CATALOG TYPE = 'rest' URL = 'x')", 1, 63, "expected ')', ',' or '||', found 'URL'"),
    ("VALIDATE c", 1, 10, "expected CONNECTION, found 'c'"),
    ("SHOW CREATE SINK", 1, 17, "found the end of the statement"),
    ("ALTER SINK s SET COMMIT INTERVAL = '1s'", 1, 18, "expected '(' or FROM, found 'COMMIT'"),
    ("SET = 1", 1, 5, "found '='"),
    ("SELECT 1;\nSELECT\n  FROM_x FROM t WHERE x @ 1", 3, 25, "found '@'"),
    ("CREATE SECRET a AS 'x';\n\nCREATE CONNECTION c TO ICEBERG CATALOG (\n    CATALOG TYPE = 'rest',\n    URI = 'http://x'\n);", 5, 5, "expected a connection option such as URL or WAREHOUSE, found 'URI'"),
    ("CREATE SINK s FROM t INTO ICEBERG CATALOG CONNECTION c (NAMESPACE 'a', TABLE 'b') KEY (id) ENFORCED NOT MODE UPSERT", 1, 101, "found 'NOT'"),
    ("CREATE SINK s FROM t INTO ICEBERG CATALOG CONNECTION c (NAMESPACE 'a', TABLE 'b') PARTITION BY (bucket(16, a, b)) MODE APPEND", 1, 97, "takes one column and at most one number"),
    ("SELECT foo(a IN b)", 1, 14, "only POSITION takes (substring IN text), not foo"),
    ("SELECT upper('x' FROM b)", 1, 18, "and TRIM ([BOTH | LEADING | TRAILING] characters FROM text) take (… FROM …), not upper"),
    ("SELECT upper(LEADING 'x' FROM b)", 1, 14, "only TRIM takes (LEADING … FROM …), not upper"),
    ("SELECT extract(1 FROM ts)", 1, 16, "EXTRACT takes a field name such as hour or epoch before FROM"),
    ("SELECT a IS NOT MAYBE", 1, 17, "expected DISTINCT, FALSE, NULL, TRUE or UNKNOWN, found 'MAYBE'"),
]


def _error(sql):
    """Parses `sql` as a script does, without a session, and returns the first error."""
    with pytest.raises(icesink.ParseError) as info:
        for index, stmt in enumerate(split_statements(sql), start=1):
            try:
                parse_statement(stmt.text)
            except icesink.ParseError as error:
                error.position = position_of(sql, stmt, error.pos, index, "<test>", parsed=False)
                raise
    return info.value


@pytest.mark.parametrize("sql, line, column, words", HAND_WRITTEN)
def test_hand_written_errors(sql, line, column, words):
    error = _error(sql)
    assert (error.position.line, error.position.column) == (line, column), error.format()
    assert words in error.message, error.format()
    text = error.format()
    assert f"<test>:{line}:{column}:" in text and "Traceback" not in text and "Token(" not in text
    assert text.splitlines()[-1].strip() == "^" or "hint:" in text


def _mutations():
    """Junk inserted before a token of every corpus statement, on a later line of a script: the error
    must point exactly there."""
    cases = []
    for name in ("dialect.sql", "seed_004.sql"):
        for text in corpus_statements(name):
            lexemes = list(lex(text))
            for pick in sorted({1, len(lexemes) // 2, len(lexemes) - 1}):
                if pick < len(lexemes):
                    at = lexemes[pick].start
                    cases.append((f"SELECT 1;\n-- setup\n{text[:at]}§ {text[at:]}", "§"))
    return cases


MUTATIONS = _mutations()


def test_enough_malformed_statements():
    assert len(HAND_WRITTEN) + len(MUTATIONS) >= 150


@pytest.mark.parametrize("sql, junk", MUTATIONS, ids=range(len(MUTATIONS)))
def test_malformed_statement_points_at_the_fault(sql, junk):
    error = _error(sql)
    offset = sql.index(junk)
    line = sql.count("\n", 0, offset) + 1
    column = offset - (sql.rfind("\n", 0, offset) + 1) + 1
    assert (error.position.line, error.position.column, error.position.statement) == (line, column, 2)
    found = re.search(r"expected .+, found ('§'|a value that is not shown)", error.message)
    assert found, error.message
    if found.group(1) != "'§'":  # only where a secret's value would be: after the name in CREATE/ALTER SECRET
        assert error.position.statement_kind in ("CREATE SECRET", "ALTER SECRET"), error.message
    assert "Traceback" not in error.format()

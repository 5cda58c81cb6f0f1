"""Bulk loading into engine tables: COPY … FROM a CSV, text or Parquet file, and large INSERT … VALUES lists read in
time and memory linear in their size, all through the same value checks, and on to Iceberg."""
import datetime as dt
import json
import subprocess
import sys
import textwrap
from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icesink.grammar.bulk import scan_insert
from icesink.grammar.parser import _parse_with_grammar
from tests.conftest import error_of, rows
from tests.readers import duckdb_rows
from tests.runtime import caught_up, iceberg_table, wait_for


@pytest.fixture
def people(session):
    session.execute("CREATE TABLE people (id int PRIMARY KEY, name text, born date, score numeric(5,1))")
    return session


def test_copy_from_csv_reads_postgres_csv(people, tmp_path):
    path = tmp_path / "people.csv"
    path.write_text('id,name,born,score\n1,"Lovelace, Ada",1815-12-10,99.5\n2,"",,\n3,"line\nbreak",epoch,1\n')
    result = people.execute(f"COPY people FROM '{path}' WITH (FORMAT CSV, HEADER)")[0]
    assert result.status == "COPY 3"
    assert rows(people, "SELECT * FROM people ORDER BY id") == [
        (1, "Lovelace, Ada", "1815-12-10", "99.5"), (2, "", None, None), (3, "line\nbreak", "1970-01-01", "1.0")]


def test_copy_options_and_column_lists(people, tmp_path):
    path = tmp_path / "people.txt"
    path.write_text('7;NA;"say \\"hi\\"; twice"\n8;1999-01-02;plain\n')
    people.execute(f"COPY people (id, born, name) FROM '{path}' (FORMAT csv, DELIMITER ';', NULL 'NA', ESCAPE '\\')")
    assert rows(people, "SELECT id, name, born FROM people ORDER BY id") == [(7, 'say "hi"; twice', None),
                                                                            (8, "plain", "1999-01-02")]


def test_copy_from_postgres_text_format(people, tmp_path):
    path = tmp_path / "people.tsv"
    path.write_text("1\ttab\\there\t\\N\t\\N\n2\tback\\\\slash\t2000-02-29\t5\n\\.\nignored after the end marker\n")
    assert people.execute(f"COPY people FROM '{path}'")[0].status == "COPY 2"  # text is Postgres's default format
    assert rows(people, "SELECT id, name, born FROM people ORDER BY id") == [(1, "tab\there", None),
                                                                            (2, "back\\slash", "2000-02-29")]


def test_copy_from_parquet_matches_columns_by_name(people, tmp_path):
    path = tmp_path / "people.parquet"
    pq.write_table(pa.table({"SCORE": pa.array([Decimal("1.5"), None], pa.decimal128(5, 1)), "ID": [1, 2],
                             "name": ["a", "b"], "born": [dt.date(2001, 1, 1), None], "extra": [0, 0]}), path)
    assert people.execute(f"COPY people FROM '{path}'")[0].status == "COPY 2"
    assert rows(people, "SELECT * FROM people ORDER BY id") == [(1, "a", "2001-01-01", "1.5"), (2, "b", None, None)]
    pq.write_table(pa.table({"id": [3]}), path)
    error = error_of(people, f"COPY people FROM '{path}'")
    assert "the Parquet file has no column 'name', 'born', 'score'; its columns are: id" in error.message


@pytest.mark.parametrize("content, options, message", [
    ("1,a,2000-01-01,1\n2,b\n", "(FORMAT csv)", ', line 2: missing data for column "born"'),
    ("1,a,2000-01-01,1,extra\n", "(FORMAT csv)", ", line 1: extra data after last expected column"),
    ("1,a,2000-01-01,1\nx,b,2000-01-01,1\n", "(FORMAT csv)", ', line 2, column "id": invalid input syntax for type integer: "x"'),
    ("id\n1,a,2000-13-01,1\n", "(FORMAT csv, HEADER)", ', line 2, column "born": invalid input syntax for type date'),
    ("1,a,2000-01-01,1\n1,b,2000-01-01,1\n", "(FORMAT csv)", ", line 2: duplicate key value violates the primary key"),
    ("1\ta\t\\N\n", "", ', line 1: missing data for column "score"'),
])
def test_copy_errors_name_the_line_and_leave_the_table_unchanged(people, tmp_path, content, options, message):
    path = tmp_path / "bad.data"
    path.write_text(content)
    error = error_of(people, f"COPY people FROM '{path}' {options}")
    assert error.message == f"COPY into table 'people' from {path}{message}" or message in error.message, error.message
    assert error.position.column == len("COPY people FROM '")
    assert rows(people, "SELECT count(*) FROM people") == [(0,)]


@pytest.mark.parametrize("sql, message", [
    ("COPY people FROM '{dir}/missing.csv'", "from {dir}/missing.csv: no such file"),
    ("COPY people FROM '{dir}' (FORMAT csv)", "it is a directory, not a file"),
    ("COPY people FROM 'x.csv' (FORMAT json)", "COPY FORMAT must be one of text, csv, parquet, not json"),
    ("COPY people FROM 'x.csv' (DELIMITER ';;')", "COPY DELIMITER must be a single character, not ';;'"),
    ("COPY people FROM 'x.parquet' (HEADER)", "COPY HEADER does not apply to FORMAT parquet"),
    ("COPY people FROM 'x.csv' (COMPRESSION 'gzip')", "unknown COPY option COMPRESSION"),
    ("COPY people (nope) FROM 'x.csv'", "column \"nope\" of table 'people' does not exist"),
    ("COPY mz_sinks FROM 'x.csv'", "unknown table 'mz_sinks'"),
])
def test_copy_statement_errors(people, tmp_path, sql, message):
    error = error_of(people, sql.format(dir=tmp_path))
    assert message.format(dir=tmp_path) in error.message


def test_a_literal_values_list_is_read_without_the_grammar_and_alike():
    for sql in ["INSERT INTO t VALUES (1, 'a', NULL, -2.5, TRUE, E'x\\ty', +3)",
                "insert into S.T (A, \"B\") values (1,2),(3,4)", "INSERT INTO t VALUES (1), (2, 3)"]:
        fast = scan_insert(sql).insert
        slow = _parse_with_grammar(sql)
        assert fast is not None and (fast.table, fast.columns) == (slow.table, slow.columns)
        literal = [tuple(row) for row, _ in fast.rows]
        assert len(literal) == len(slow.rows)
    for sql in ["INSERT INTO t VALUES (1, now())", "INSERT INTO t SELECT 1", "INSERT INTO t VALUES (1) -- c",
                "INSERT INTO t VALUES (E'\\u12')"]:
        assert scan_insert(sql).insert is None, sql


def test_rows_of_uneven_width_are_refused_at_the_row(people):
    sql = "INSERT INTO people VALUES (1, 'a', '2000-01-01', 1), (2, 'b')"
    error = error_of(people, sql)
    assert error.message == "INSERT has 2 values where 4 are expected" and error.position.column == sql.index("2, 'b'") + 1


MEASURE = textwrap.dedent("""
    import json, resource, sys, time
    import icesink
    session = icesink.connect(sys.argv[1])
    session.execute("CREATE TABLE IF NOT EXISTS t (id int PRIMARY KEY, note text, at timestamptz)")
    sql = open(sys.argv[2]).read()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.perf_counter()
    try:
        session.execute(sql)
        outcome = session.execute("SELECT count(*) FROM t")[0].rows[0][0]
    except icesink.IcesinkError as error:
        outcome = [error.position.line, error.position.column, error.message]
    print(json.dumps([outcome, time.perf_counter() - started,
                      (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024]))
""")


def _measure(tmp_path, sql):
    path = tmp_path / "insert.sql"
    path.write_text(sql)
    done = subprocess.run([sys.executable, "-c", MEASURE, str(tmp_path / "data"), str(path)], capture_output=True,
                          text=True, timeout=300, env={"ICESINK_SECRET_STORE": "file", "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_large_insert_takes_time_and_memory_in_proportion(tmp_path):
    """60,000 rows, about 5 MB: the grammar's tree of it took about 1 GB; the literal path keeps a row at a time."""
    values = ",\n".join(f"({i}, 'note number {i} with a little text', '2024-01-01 10:00:00+00')" for i in range(60_000))
    count, seconds, growth = _measure(tmp_path, f"INSERT INTO t VALUES\n{values};")
    assert count == 60_000 and growth < 100, (seconds, growth)
    broken = f"{values[:-1]} §)"
    (line, column, message), seconds, growth = _measure(tmp_path, f"INSERT INTO t VALUES\n{broken};")
    assert (line, column) == (60_001, broken.rsplit("\n", 1)[1].index("§") + 1) and "found '§'" in message
    assert growth < 100, (seconds, growth)


def test_copied_rows_reach_iceberg(session, scheduler, tmp_path):
    path = tmp_path / "orders.csv"
    path.write_text("".join(f"{i},customer {i % 7},{i * 1.25:.2f}\n" for i in range(1, 2001)))
    session.execute("CREATE CONNECTION lake TO ICEBERG CATALOG (CATALOG TYPE 'local');"
                    "CREATE TABLE orders (id bigint PRIMARY KEY, customer text, amount numeric(10,2));"
                    "CREATE SINK orders_lake FROM orders INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'shop', "
                    "TABLE 'orders') KEY (id) MODE UPSERT WITH (COMMIT INTERVAL '1s');"
                    f"COPY orders FROM '{path}' (FORMAT csv)")
    wait_for(caught_up(session, "orders_lake", "orders"), what="the copied rows")
    got = duckdb_rows(iceberg_table(session, "orders_lake").metadata_location, "id, customer, amount", "id")
    assert got == [(i, f"customer {i % 7}", Decimal(f"{i * 1.25:.2f}")) for i in range(1, 2001)]

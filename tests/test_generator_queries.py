"""SELECT from load generators, and views over them: Spark generates each relation's rows up to now on its executors,
consolidates them (retractions cancel insertions; KEY VALUE keeps each key's newest value), and runs the query."""
import time

import pytest

from tests.conftest import error_of, rows

pytestmark = pytest.mark.timeout(300)

SOURCES = """
CREATE SOURCE counter FROM LOAD GENERATOR COUNTER (TICK INTERVAL '10ms', UP TO 50);
CREATE SOURCE kv FROM LOAD GENERATOR KEY VALUE (KEYS 16, BATCH SIZE 4, TICK INTERVAL '10ms', UP TO 20);
CREATE SOURCE tpch FROM LOAD GENERATOR TPCH (SCALE FACTOR 0.01) FOR ALL TABLES;
CREATE MATERIALIZED VIEW evens AS SELECT counter FROM counter WHERE counter % 2 = 0;
CREATE TABLE notes (body text);
"""


def test_select_reads_load_generators_and_views_over_them(session, spark):
    session.execute(SOURCES)
    time.sleep(1)  # UP TO's last tick is past
    assert rows(session, "SELECT count(*), max(counter) FROM counter") == [(50, 50)]
    assert rows(session, "SELECT counter FROM counter ORDER BY counter DESC LIMIT 3") == [(50,), (49,), (48,)]
    assert rows(session, "SELECT count(*), sum(counter) FROM evens") == [(25, sum(range(2, 51, 2)))]
    # 80 upserts over 16 keys: each key once, at its newest round
    assert rows(session, "SELECT count(*), count(DISTINCT key), max(round), min(round) FROM kv") == [(16, 16, 4, 4)]
    assert rows(session, "SELECT count(*) FROM customer") == [(1500,)]
    assert rows(session, "SELECT r_name, count(*) FROM nation JOIN region ON n_regionkey = r_regionkey "
                         "GROUP BY r_name ORDER BY r_name") == [
        ("AFRICA", 5), ("AMERICA", 5), ("ASIA", 5), ("EUROPE", 5), ("MIDDLE EAST", 5)]
    result = session.execute("SELECT count(*), max(counter) AS top FROM counter")[-1]
    assert result.columns == ["COUNT(*)", "top"]


def test_a_query_joining_a_load_generator_with_other_relations_is_refused(session):
    session.execute(SOURCES)
    error = error_of(session, "SELECT * FROM counter JOIN notes ON true")
    assert error.message == 'a query that reads load generators and "notes" (not one) is not supported yet'

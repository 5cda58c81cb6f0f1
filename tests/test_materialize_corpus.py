"""Scripts written for Materialize run unchanged: tests/corpus/materialize.sql, statements drawn from Materialize's
documentation and its Iceberg sink tests (each group names its source), executed in order in a fresh data directory;
every statement runs, except those marked `-- refused:`, which are refused with that message and change nothing."""
from pathlib import Path

import pytest

from icesink.errors import IcesinkError
from tests.conftest import rows

CORPUS = Path(__file__).parent / "corpus" / "materialize.sql"


def corpus() -> list[tuple[str, str, str | None]]:
    """(source, statement, message it is refused with or None), in the file's order."""
    found, source, refused, lines = [], "", None, []
    for line in CORPUS.read_text().splitlines():
        if not lines and line.startswith("-- source:"):
            source = line.removeprefix("-- source:").strip()
        elif not lines and line.startswith("-- refused:"):
            refused = line.removeprefix("-- refused:").strip()
        elif lines or (line.strip() and not line.startswith("--")):
            lines.append(line)
            if line.rstrip().endswith(";"):
                found.append((source, "\n".join(lines), refused))
                lines, refused = [], None
    assert not lines, "the corpus ends inside a statement"
    return found


def test_the_corpus_covers_every_class_of_issue_13():
    sources = " ".join(source for source, _, _ in corpus())
    assert all(f"class {n}" in sources for n in (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12))
    assert "classes 13 to 16" in sources
    assert sum(1 for _, _, refused in corpus() if refused) >= 14


def test_materializes_statements_run_unchanged(session):
    for source, statement, refused in corpus():
        if refused is None:
            try:
                session.execute(statement)
            except IcesinkError as exc:
                pytest.fail(f"{source}: {exc.format()}")
            continue
        before = rows(session, "SELECT count(*) FROM mz_objects")
        with pytest.raises(IcesinkError) as error:
            session.execute(statement)
        assert error.value.message == refused, f"{source}: {error.value.format()}"
        assert rows(session, "SELECT count(*) FROM mz_objects") == before
    # what the statements made, as Materialize's own tests read it back
    assert rows(session, "SELECT count(*) FROM big") == [(1012,)]
    assert rows(session, "SELECT count(*) FROM evolve_src") == [(2,)]
    assert rows(session, "SELECT create_sql FROM mz_sinks WHERE name = 'demo'")[0][0].startswith(
        "CREATE SINK demo FROM foo2 INTO")
    assert rows(session, "SELECT name, category FROM mz_types ORDER BY name") == [
        ("address", "record"), ("inner_record", "record"), ("int4_list", "list"), ("int4_map", "map"),
        ("nullable_record", "record"), ("outer_record", "record")]
    assert rows(session, "SELECT addr FROM users_with_address WHERE id = 1") == [
        ('{"street": "999 New St", "city": "New Town", "zip": 99999}',)]
    assert rows(session, "SHOW enable_alter_table_add_column") == [("true",)]

"""Seeded fuzzing of the front end: thousands of mutants of the corpus through the public API. Each one either runs
or raises icesink's own error with a line and a column inside the input; none raises anything else, hangs, or shows a
secret's value in its error or in the history line the shell would keep."""
import random
import re
import time

import pytest

import icesink
from icesink.grammar.lexical import split_statements, statement_lexemes
from icesink.grammar.masking import redact
from icesink.grammar.parser import parses
from tests.conftest import CORPUS

MUTANTS = 5000
SEED = 20261122
MARK = "zQxMark"  # in every secret value of the corpus below

EXTRA = f"""
CREATE SECRET fz_secret AS '{MARK}1';
CREATE SECRET fz_e AS E'{MARK}2\\n';
ALTER SECRET fz_secret AS '{MARK}3';
CREATE CONNECTION fz_pg TO POSTGRES (HOST 'db', USER 'u', PASSWORD SECRET fz_secret) WITH (VALIDATE = false);
CREATE CONNECTION fz_rest TO ICEBERG CATALOG (CATALOG TYPE 'rest', URL 'http://x', CREDENTIAL = 'id:{MARK}4')
  WITH (VALIDATE = false);
CREATE TABLE fz_t (id int PRIMARY KEY, note text, at timestamptz, n numeric(8,2), tags text[], doc jsonb);
INSERT INTO fz_t VALUES (1, 'a', '2024-01-01', 1.5, '{{a,b}}', '{{"k": 1}}'), (2, E'b\\tc', 'epoch', -2, NULL, NULL);
INSERT INTO fz_t (id, note) SELECT id + 10, upper(note) || '!' FROM fz_t WHERE id < 5;
UPDATE fz_t SET n = n * 2, note = note || '?' WHERE id % 2 = 1;
DELETE FROM fz_t WHERE id > 10;
SELECT id, note, n / 2 AS half FROM fz_t WHERE at > '2000-01-01' ORDER BY id LIMIT 5;
SELECT s.name, st.status FROM mz_sinks s JOIN mz_internal.mz_sink_statuses st ON s.id = st.id WHERE s.name LIKE 'o%';
SELECT count(*), max(name) FROM mz_objects GROUP BY type HAVING count(*) > 0;
COPY fz_t (id, note) FROM 'fuzz.csv' (FORMAT csv, HEADER);
"""
POOL = list("'\"();,.=*/-+\\§ $\t\n") + ["\u00a0", "\u2028", "\x00", "\x0b", "E'", "--", "/*", "*/", "''", "😀",
                                         "SELECT", "FROM", "SECRET", "(", ")", "1e", "::"]
UNSAFE = re.compile(r"\bFROM\s+ICEBERG\b|WAREHOUSE\s*=?\s*'\s*/", re.I)  # Spark, or directories outside tmp


def _corpus() -> list[str]:
    texts = [(CORPUS / name).read_text() for name in ("dialect.sql", "seed_004.sql")] + [EXTRA]
    return [s.text for text in texts for s in split_statements(text)]


def _mutate(rng: random.Random, text: str) -> str:
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        at = rng.randrange(len(text) + 1)
        choice = rng.random()
        if choice < 0.35:
            text = text[:at] + rng.choice(POOL) + text[at:]
        elif choice < 0.6 and text:
            text = text[:at] + text[at + rng.randint(1, 3):]
        elif choice < 0.75:
            lexemes = [x for _, lexemes in statement_lexemes(text) for x in lexemes]
            if lexemes:
                x = rng.choice(lexemes)
                text = text[:x.start] + x.text + " " + text[x.start:]  # a token twice
        elif choice < 0.85:
            text = text[:at]  # cut short
        elif choice < 0.95 and text:
            text = text[:at] + chr(rng.randint(0x20, 0x2FFF)) + text[at:]
        else:
            text = text + ";" + text
    return text


@pytest.mark.timeout(300)
def test_mutants_raise_only_positioned_icesink_errors(session, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "fuzz.csv").write_text("id,note\n100,x\n101,y\n")
    session.execute("ALTER SYSTEM SET enable_default_connection_validation = false")
    corpus = [s for s in _corpus() if not UNSAFE.search(s)]
    for statement in corpus:  # the objects the mutants refer to
        try:
            session.execute(statement)
        except icesink.IcesinkError:
            pass
    rng = random.Random(SEED)
    outcomes = {"ran": 0, "refused": 0}
    slowest = (0.0, "")
    for _ in range(MUTANTS):
        mutant = _mutate(rng, rng.choice(corpus))
        if UNSAFE.search(mutant):
            continue
        # the statement splitter and the lexer agree on where statements begin
        assert [s.start for s in split_statements(mutant)] == [s.start for s, _ in statement_lexemes(mutant)], mutant
        started = time.perf_counter()
        try:
            session.execute(mutant, "<fuzz>")
            outcomes["ran"] += 1
        except icesink.IcesinkError as error:
            outcomes["refused"] += 1
            shown = error.format()
            assert MARK not in shown, (mutant, shown)
            if isinstance(error, icesink.ParseError) and len(split_statements(mutant)) == 1:  # as the shell's history keeps it
                assert MARK not in redact(mutant, parsed=lambda _, text: parses(text)), mutant
            if error.position is not None:
                lines = mutant.split("\n")
                assert 1 <= error.position.line <= len(lines), (mutant, shown)
                assert 1 <= error.position.column <= len(lines[error.position.line - 1]) + 1, (mutant, shown)
                assert shown.startswith(f"<fuzz>:{error.position.line}:{error.position.column}: "), shown
            else:  # only errors about a thing other than the input (a file, a store) come without a position
                assert not isinstance(error, icesink.ParseError), (mutant, shown)
        except BaseException as exc:  # noqa: BLE001 - what the test looks for
            pytest.fail(f"{type(exc).__name__}: {exc} for mutant {mutant!r}")
        took = time.perf_counter() - started
        slowest = max(slowest, (took, mutant))
    assert slowest[0] < 5, slowest
    assert outcomes["ran"] > 100 and outcomes["refused"] > 1500, outcomes  # both paths are exercised

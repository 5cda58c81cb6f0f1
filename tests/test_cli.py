"""The icesink command: parse, -f, -c, standard input, the quickstart, and how its Spark starts."""
import signal
import subprocess
from decimal import Decimal
from pathlib import Path

import icesink
from icesink.engine import class_archive
from icesink.engine.spark import LOG4J_OPTION
from tests.conftest import CORPUS, ICESINK, cli_env, rows, serve
from tests.runtime import wait_for

ROOT = Path(__file__).resolve().parent.parent


def run(*args, stdin=None, timeout=60):
    return subprocess.run(ICESINK + list(args), input=stdin, capture_output=True, text=True, env=cli_env(),
                          timeout=timeout)


def test_parse_checks_files_without_executing(tmp_path):
    done = run("parse", str(CORPUS / "dialect.sql"), str(CORPUS / "seed_004.sql"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [f"{CORPUS / 'dialect.sql'}: 85 statements OK",
                                        f"{CORPUS / 'seed_004.sql'}: 15 statements OK"]
    bad = tmp_path / "bad.sql"
    bad.write_text("CREATE SECRET a AS 'x';\n\nCREATE CONNECTION c TO ICEBERG CATALOG (\n  URI = 'http://x'\n);\nSELECT;\n")
    done = run("parse", str(bad), str(CORPUS / "dialect.sql"))
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.splitlines()[0] == (f"{bad}:4:3: syntax error in statement 2 (CREATE CONNECTION): expected a "
                                           "connection option such as URL or WAREHOUSE, found 'URI'")
    assert done.stderr.splitlines()[1:] == ["      URI = '<REDACTED>'", "      ^"]  # it did not parse: no literal shown


def test_script_stops_at_the_first_error(tmp_path, data_dir):
    script = tmp_path / "setup.sql"
    script.write_text("CREATE TABLE a (id int);\nCREATE TABLE b (id int, PRIMARY KEY (nope));\nCREATE TABLE c (id int);\n")
    done = run("--data-dir", str(data_dir), "-f", str(script))
    assert done.returncode == 1
    assert done.stdout == "CREATE TABLE\n"
    assert done.stderr.startswith(f"{script}:2:38: error in statement 2 (CREATE TABLE): PRIMARY KEY column \"nope\" does not exist")
    with icesink.connect(data_dir) as session:
        assert rows(session, "SHOW TABLES") == [("a",)]


def test_psql_meta_commands_describe_include_and_time(tmp_path, data_dir):
    """\\d NAME shows a relation's columns, \\dt the tables, \\i runs a file (stopping there at its error, and at
    a file that includes itself), \\timing shows each statement's time."""
    included = tmp_path / "orders.sql"
    included.write_text("CREATE TABLE orders (id int NOT NULL, amount numeric(10,2));\nINSERT INTO orders VALUES (1, 2.5);\n")
    script = tmp_path / "main.sql"
    script.write_text(f"\\i {included}\n\\d orders\n\\dt\n\\timing\nSELECT amount FROM orders;\n\\timing off\n"
                      "SELECT 1 AS one;\n\\i nowhere.sql\nSELECT 2;\n")
    done = run("--data-dir", str(data_dir), "-f", str(script))
    assert done.returncode == 1 and done.stderr == "nowhere.sql: No such file or directory\n"
    lines = [line.split() for line in done.stdout.splitlines()]
    assert lines[:2] == [["CREATE", "TABLE"], ["INSERT", "0", "1"]]
    assert ["id", "f", "integer"] in lines and ["amount", "t", "numeric(10,2)"] in lines and ["orders"] in lines
    assert ["2.50"] in lines and ["Timing", "is", "on."] in lines and ["Timing", "is", "off."] in lines
    assert sum(1 for line in lines if line[:1] == ["Time:"]) == 1 and ["2"] not in lines
    itself = tmp_path / "itself.sql"
    itself.write_text(f"\\i {itself}\n")
    done = run("--data-dir", str(data_dir), "-f", str(itself))
    assert done.returncode == 1 and "nested more than 16 deep" in done.stderr


def test_describe_takes_one_name_and_runs_nothing_after_it(data_dir):
    done = run("--data-dir", str(data_dir), stdin="CREATE TABLE a (id int);\n\\d a; DROP TABLE a\n\\d a;\n")
    assert done.returncode == 1 and done.stderr == "<stdin>:2: \\d takes one name\n"
    with icesink.connect(data_dir) as session:
        assert rows(session, "SHOW TABLES") == [("a",)]
    done = run("--data-dir", str(data_dir), "-c", "\\d a;")
    assert done.returncode == 0 and ["id", "t", "integer"] in [line.split() for line in done.stdout.splitlines()]


def test_command_and_standard_input(data_dir):
    done = run("--data-dir", str(data_dir), "-c", "CREATE TABLE a (id int); SHOW TABLES")
    assert done.returncode == 0 and done.stdout.splitlines()[0] == "CREATE TABLE" and "(1 row)" in done.stdout
    done = run("--data-dir", str(data_dir), stdin="SHOW\n  TABLES;\nSELECT nope FROM mz_tables;\nSHOW TABLES;\n")
    assert done.returncode == 1 and done.stdout.count("(1 row)") == 1
    assert done.stderr.startswith("<stdin>:3:8: error in statement 2 (SELECT): column \"nope\" does not exist")


def test_a_query_shows_its_columns_names_and_truth_values_as_psql_does(data_dir):
    done = run("--data-dir", str(data_dir), "-c", "CREATE TABLE a (id int, ok boolean); "
               "INSERT INTO a VALUES (1, true), (2, false); SELECT id, ok, count(*), id > 1 FROM a GROUP BY id, ok "
               "ORDER BY id")
    assert done.returncode == 0, done.stderr
    assert [line.split() for line in done.stdout.splitlines()[2:]] == [
        ["id", "ok", "count", "?column?"], ["─" * 26], ["1", "t", "1", "f"], ["2", "f", "1", "t"], ["(2", "rows)"]]


def test_data_dir_from_the_environment(tmp_path):
    env = cli_env(ICESINK_DATA_DIR=str(tmp_path / "env-dir"))
    subprocess.run(ICESINK + ["-c", "CREATE TABLE a (id int)"], env=env, check=True, capture_output=True)
    assert (tmp_path / "env-dir" / "catalog.db").exists()


def test_store_cache_from_the_environment(data_dir, monkeypatch):
    """ICESINK_STORE_CACHE_MIB sizes the page cache of icesink's store; anything but a whole number of MiB is
    refused in one line, with no traceback."""
    monkeypatch.setenv("ICESINK_STORE_CACHE_MIB", "64")
    with icesink.connect(data_dir) as session:  # the writing connection SQLite was given, in KiB
        assert session.tables.db.execute("PRAGMA cache_size").fetchone() == (-64 * 1024,)
    monkeypatch.delenv("ICESINK_STORE_CACHE_MIB")
    with icesink.connect(data_dir) as session:
        assert session.tables.db.execute("PRAGMA cache_size").fetchone() == (-128 * 1024,)
    env = cli_env(ICESINK_STORE_CACHE_MIB="64")
    done = subprocess.run(ICESINK + ["--data-dir", str(data_dir), "-c", "CREATE TABLE a (id int); INSERT INTO a "
                                     "VALUES (1); SELECT count(*) FROM a"], env=env, capture_output=True, text=True)
    assert done.returncode == 0 and "(1 row)" in done.stdout, done.stderr
    env = cli_env(ICESINK_STORE_CACHE_MIB="1GB")
    done = subprocess.run(ICESINK + ["--data-dir", str(data_dir), "-c", "SELECT count(*) FROM a"], env=env,
                          capture_output=True, text=True)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == ("error: ICESINK_STORE_CACHE_MIB is the page cache of icesink's store in MiB, a whole number "
                           "above 0, not '1GB'\n")


def test_quickstart_runs_and_fills_the_iceberg_tables(data_dir):
    done = run("--data-dir", str(data_dir), "-f", str(ROOT / "examples" / "quickstart.sql"), timeout=300)
    assert done.returncode == 0, done.stderr
    lines = [line.split() for line in done.stdout.splitlines()]
    assert ["bids_lake", "running", "NULL"] in lines and ["orders_lake", "running", "NULL"] in lines
    assert ["1", "ada", "25.00"] in lines and ["2", "grace", "7.25"] in lines
    header = lines.index(["bids_in_iceberg", "newest_bid"])
    counts = [int(line[0]) for line in lines[header:] if len(line) == 2 and line[0].isdigit()]
    assert counts[-1] > 0 and counts == sorted(counts)  # the table fills as the generator ticks
    # the view's Iceberg table, read last: Ada's one order was deleted, so her row is too
    totals = lines[len(lines) - lines[::-1].index(["customer", "orders", "total"]):]
    customers = [line for line in totals if len(line) == 3 and line[0] in ("ada", "grace", "edsger")]
    assert [(c, int(n), Decimal(t)) for c, n, t in customers] == [("grace", 2, Decimal("37.25"))]


def test_spark_settings_apply_to_an_early_select_from_iceberg(tmp_path, data_dir):
    """Spark starts once per process: whatever starts it first (here a SELECT … FROM ICEBERG before any sink runs)
    must start it with the settings of the command line or of icesink.toml."""
    sql = ("CREATE CONNECTION lake TO ICEBERG CATALOG (CATALOG TYPE 'local');"
           "SELECT count(*) FROM ICEBERG lake.shop.missing")
    done = subprocess.run(ICESINK + ["--data-dir", str(data_dir), "--no-run", "--spark-master", "local[1]", "-c", sql],
                          capture_output=True, text=True, env=cli_env(ICESINK_LOG="INFO"), timeout=180)
    assert "Iceberg table shop.missing does not exist in catalog 'lake'" in done.stderr
    assert "Spark started: master local[1]" in done.stderr, done.stderr[-2000:]
    other = tmp_path / "other"
    other.mkdir()
    (other / "icesink.toml").write_text('[spark]\nmaster = "local[2]"\n')
    done = subprocess.run(ICESINK + ["--data-dir", str(other), "-c", sql], capture_output=True, text=True,
                          env=cli_env(ICESINK_LOG="INFO"), timeout=180)
    assert "Spark started: master local[2]" in done.stderr, done.stderr[-2000:]


def java_children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) == pid and b"java" in (stat.parent / "cmdline").read_bytes():
                found.append(int(stat.parent.name))
        except (OSError, IndexError):  # ended meanwhile
            pass
    return found


def test_a_later_process_maps_the_class_archive_of_spark_an_earlier_one_built(session):
    """The first Spark of a machine (here, the test session's) starts a builder of Spark's class archive; once it
    is built, every later process's JVM maps it, and says nothing about it; a user's own JVM options (icesink.toml)
    come after icesink's, which stay."""
    archive = class_archive._archive_path()
    class_archive.java_options()  # starts the builder if no process has yet
    wait_for(archive.exists, timeout=300, what="Spark's class archive to be built")
    assert not [p.name for p in archive.parent.glob(f"{archive.name}.*")]  # no partial archive, no claim left
    session.execute("""
        CREATE CONNECTION lake TO ICEBERG CATALOG (CATALOG TYPE 'local');
        CREATE TABLE t (id bigint NOT NULL, PRIMARY KEY (id));
        CREATE SINK t_lake FROM t INTO ICEBERG CATALOG CONNECTION lake (NAMESPACE 'n', TABLE 't') KEY (id) MODE UPSERT WITH (COMMIT INTERVAL '1s')""")
    (Path(session.data_dir) / "icesink.toml").write_text(
        '[spark]\n"spark.driver.extraJavaOptions" = "-Dicesink.probe=yes"\n')
    process = serve(session.data_dir, stdout=subprocess.PIPE)  # where the JVM would warn of an unusable archive
    try:
        def mapped():
            return any(str(archive) in Path(f"/proc/{jvm}/maps").read_text() for jvm in java_children(process.pid))
        wait_for(mapped, timeout=120, what="serve's JVM to map the class archive")
        options = [Path(f"/proc/{jvm}/cmdline").read_bytes().split(b"\0") for jvm in java_children(process.pid)]
        assert any(b"-Dicesink.probe=yes" in o and LOG4J_OPTION.encode() in o for o in options), options
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=120) == 0
    output, errors = process.communicate()
    assert "cds" not in output and "cds" not in errors

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import icesink

CORPUS = Path(__file__).parent / "corpus"
# Every JVM the tests start (this session's Spark, `serve`'s, the Spark 3.5 reader's) lives seconds to minutes on
# little data: compiling hot code only with the quick compiler (C1) takes a ninth off the crash test (measured:
# 159 s -> 142 s), and changes nothing a test checks. Users' JVMs keep the default.
os.environ.setdefault("JAVA_TOOL_OPTIONS", "-XX:TieredStopAtLevel=1")


@pytest.fixture(autouse=True)
def _isolated_secrets(monkeypatch):
    # Tests never touch a developer's real keyring; test_secrets opts into a keyring explicitly.
    monkeypatch.setenv("ICESINK_SECRET_STORE", "file")


@pytest.fixture
def data_dir(tmp_path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def session(data_dir):
    with icesink.connect(data_dir) as s:
        yield s


@pytest.fixture(scope="session")
def spark():
    """One SparkSession for the whole test session: Spark takes seconds to start."""
    from icesink.engine.spark import get_spark

    return get_spark("local[2]")


@pytest.fixture
def scheduler(session, spark):
    """Runs the session's sinks in this process while the test lasts."""
    from icesink.engine.scheduler import Scheduler

    running = Scheduler(session.data_dir, session.executor.secret_value, lambda: spark)
    running.start()
    yield running
    running.stop()


def rows(session, sql):
    return session.execute(sql)[-1].rows


def error_of(session, sql) -> icesink.IcesinkError:
    with pytest.raises(icesink.IcesinkError) as info:
        session.execute(sql)
    return info.value


ICESINK = [sys.executable, "-m", "icesink.repl.cli"]


def cli_env(**extra):
    env = dict(os.environ, ICESINK_SECRET_STORE="file", **extra)
    return env


def serve(data_dir, crash_at=None, stdout=subprocess.DEVNULL):
    """`icesink serve` on a data directory, in a process of its own (to be killed)."""
    env = cli_env(ICESINK_SPARK_MASTER="local[2]", **({"ICESINK_CRASH_AT": crash_at} if crash_at else {}))
    return subprocess.Popen(ICESINK + ["serve", "--data-dir", str(data_dir)], env=env,
                            stdout=stdout, stderr=subprocess.PIPE, text=True)


def kill_serve_repeatedly(data_dir, crash_points, rng, seconds=(4, 14)) -> int:
    """Runs `icesink serve` once per entry of `crash_points`: killed (SIGKILL) at that crash point of the commit
    protocol, or, for None, after a random number of `seconds`. Returns how many runs reached their crash point."""
    seams = 0
    for crash_at in crash_points:
        ended = serve_until_killed(data_dir, None if crash_at else rng.uniform(*seconds), crash_at)
        if ended is not None:
            assert ended.returncode == -signal.SIGKILL, ended.stderr.read()
            seams += 1
    return seams


def serve_until_killed(data_dir, seconds=None, crash_at=None):
    """Runs `icesink serve` until `seconds` have passed, then kills it with SIGKILL and returns None; or returns
    the process if it ended first (at a crash point, or by failing)."""
    process = serve(data_dir, crash_at)
    try:
        process.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGKILL)
        process.wait()
        return None
    return process

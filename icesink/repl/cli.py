"""The `icesink` command."""
from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading

from ..config import spark_settings
from ..session import Session
from .render import make_console
from .script import ScriptRunner, check_files

DESCRIPTION = "icesink: keep Apache Iceberg tables in sync with operational data, defined in SQL."


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-dir", help="catalog directory (default: $ICESINK_DATA_DIR, else the user data "
                                           "directory)")
    parser.add_argument("--spark-master", help="Spark master URL (default: $ICESINK_SPARK_MASTER, the config "
                                               "file's [spark] master, else local[*])")
    parser.add_argument("--config", help="TOML file with a [spark] section (default: DATA_DIR/icesink.toml)")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="icesink", description=DESCRIPTION,
                                     epilog="icesink serve runs the sinks headless; icesink parse FILE… checks "
                                            "files without executing them.")
    _common(parser)
    parser.add_argument("-f", "--file", action="append", default=[], help="run the SQL in FILE, stop at the "
                                                                         "first error")
    parser.add_argument("-c", "--command", action="append", default=[], help="run SQL given on the command line")
    parser.add_argument("--no-run", action="store_true", help="only edit the catalog: do not run sinks here")
    return parser


def _start_runtime(session: Session, args, error_console):
    """The in-process scheduler, unless another process already runs this data directory's sinks."""
    from ..engine.scheduler import AlreadyScheduled, Scheduler
    from ..engine.spark import get_spark

    settings = spark_settings(session.data_dir, args.config, args.spark_master)
    try:
        scheduler = Scheduler(session.data_dir, session.executor.secret_value,
                              lambda: get_spark(settings.master, settings.conf))
    except AlreadyScheduled as exc:
        error_console.print(f"NOTICE: {exc}; this session only edits the catalog", markup=False)
        return None
    scheduler.start()
    return scheduler


def serve(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="icesink serve", description="Run every sink of a data directory "
                                                                       "until stopped (SIGTERM or Ctrl-C).")
    _common(parser)
    args = parser.parse_args(argv)
    error_console = make_console(stderr=True)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    with Session(args.data_dir) as session:
        scheduler = _start_runtime(session, args, error_console)
        if scheduler is None:
            return 1
        error_console.print(f"icesink: running the sinks of {session.data_dir}", markup=False)
        stop.wait()
        error_console.print("icesink: stopping (in-flight batches finish or are abandoned unwritten)",
                            markup=False)
        scheduler.stop()
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    logging.basicConfig(level=os.environ.get("ICESINK_LOG", "WARNING").upper(),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for noisy in ("py4j", "pyiceberg"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, logging.getLogger().level))
    if argv[:1] == ["parse"]:
        if len(argv) < 2:
            print("usage: icesink parse FILE…", file=sys.stderr)
            return 2
        return check_files(argv[1:])
    if argv[:1] == ["serve"]:
        return serve(argv[1:])
    args = _parser().parse_args(argv)
    console, error_console = make_console(), make_console(stderr=True)
    with Session(args.data_dir) as session:
        runtime = None if args.no_run else _start_runtime(session, args, error_console)
        try:
            return _run(session, args, console, error_console)
        finally:
            if runtime is not None:
                runtime.stop()


def _run(session: Session, args, console, error_console) -> int:
    runner = ScriptRunner(session, console, error_console)
    if args.file or args.command:
        for path in args.file:
            try:
                text = open(path, encoding="utf-8").read()
            except OSError as exc:
                error_console.print(f"{path}: {exc.strerror}", markup=False)
                return 1
            if not runner.run_text(text, path):
                return 1
        for command in args.command:
            if not runner.run_text(command, "<command>"):
                return 1
        return 0
    if not sys.stdin.isatty():
        return 0 if runner.run_stream(sys.stdin, "<stdin>") else 1
    from .shell import Repl
    return Repl(session, console=console, error_console=error_console).run()


if __name__ == "__main__":
    sys.exit(main())

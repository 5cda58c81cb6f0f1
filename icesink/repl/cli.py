"""The `icesink` command."""
from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading

from ..errors import IcesinkError
from ..session import Session
from .render import make_console, render_error
from .script import ScriptRunner, SourceError, check_files, decode_lines, internal_error, read_source

DESCRIPTION = "icesink: keep Apache Iceberg tables in sync with operational data, defined in SQL."
EPILOG = ("icesink serve runs the sinks headless; icesink parse FILE… checks files without executing them. "
          "--data-dir, --spark-master and --config go before or after the subcommand.")


def _common(parser: argparse.ArgumentParser, default) -> None:
    """The options every form takes. Subcommands repeat them with `default` SUPPRESS, so a value given before the
    subcommand is not overwritten by the subcommand's own default."""
    parser.add_argument("--data-dir", default=default, help="catalog directory (default: $ICESINK_DATA_DIR, "
                                                            "else the user data directory)")
    parser.add_argument("--spark-master", default=default, help="Spark master URL (default: $ICESINK_SPARK_MASTER, "
                                                                "the config file's [spark] master, else local[*])")
    parser.add_argument("--config", default=default, help="TOML file with a [spark] section (default: "
                                                          "DATA_DIR/icesink.toml)")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="icesink", description=DESCRIPTION, epilog=EPILOG)
    _common(parser, None)
    parser.add_argument("-f", "--file", action="append", default=[], help="run the SQL in FILE, stop at the "
                                                                         "first error")
    parser.add_argument("-c", "--command", action="append", default=[], help="run SQL given on the command line")
    parser.add_argument("--no-run", action="store_true", help="only edit the catalog: do not run sinks here")
    commands = parser.add_subparsers(dest="subcommand", metavar="{serve,parse}")
    serve_parser = commands.add_parser("serve", description="Run every sink of a data directory until stopped "
                                                            "(SIGTERM or Ctrl-C).", help="run the sinks headless")
    _common(serve_parser, argparse.SUPPRESS)
    parse_parser = commands.add_parser("parse", description="Check SQL files without executing them; exit 1 at "
                                                            "the first error.", help="check files without running them")
    parse_parser.add_argument("files", nargs="+", metavar="FILE")
    _common(parse_parser, argparse.SUPPRESS)
    return parser


def _session(args) -> Session:
    return Session(args.data_dir, spark_master=args.spark_master, config=args.config)


def _start_runtime(session: Session, error_console) -> None:
    """Runs the sinks in this process, unless another process already runs this data directory's."""
    from ..engine.scheduler import AlreadyScheduled

    try:
        session.start_runtime()
    except AlreadyScheduled as exc:
        error_console.print(f"NOTICE: {exc}; this session only edits the catalog", markup=False)


def serve(args, error_console) -> int:
    from ..engine.scheduler import AlreadyScheduled

    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    with _session(args) as session:
        try:
            session.start_runtime()
        except AlreadyScheduled as exc:
            error_console.print(f"icesink serve: {exc}; not starting a second one", markup=False)
            return 1
        error_console.print(f"icesink: running the sinks of {session.data_dir}", markup=False)
        stop.wait()
        error_console.print("icesink: stopping (in-flight batches finish or are abandoned unwritten)",
                            markup=False)
        session.stop_runtime("icesink serve stopped")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(level=os.environ.get("ICESINK_LOG", "WARNING").upper(),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for noisy in ("py4j", "pyiceberg"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, logging.getLogger().level))
    error_console = make_console(stderr=True)
    try:
        if args.subcommand == "parse":
            return check_files(args.files)
        if args.subcommand == "serve":
            return serve(args, error_console)
        if not (args.file or args.command) and sys.stdin is None:
            raise SourceError("standard input is closed: give SQL with -f FILE or -c SQL, or run icesink in a "
                              "terminal")
        with _session(args) as session:
            if not args.no_run:
                _start_runtime(session, error_console)
            return _run(session, args, make_console(), error_console)
    except IcesinkError as error:  # a data directory or file that cannot be used: one line, no traceback
        render_error(error_console, error)
        return 1
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        error_console.print(internal_error(exc), markup=False)
        return 1


def _run(session: Session, args, console, error_console) -> int:
    runner = ScriptRunner(session, console, error_console)
    if args.file or args.command:
        for path in args.file:
            if not runner.run_text(read_source(path), path):
                return 1
        for command in args.command:
            if not runner.run_text(command, "<command>"):
                return 1
        return 0
    if not sys.stdin.isatty():
        return 0 if runner.run_lines(decode_lines(sys.stdin.buffer, "<stdin>"), "<stdin>") else 1
    from .shell import Repl
    return Repl(session, console=console, error_console=error_console).run()


if __name__ == "__main__":
    sys.exit(main())

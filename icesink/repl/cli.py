"""The `icesink` command."""
from __future__ import annotations

import argparse
import logging
import os
import sys

from ..session import Session
from .render import make_console
from .script import check_files, run_stream, run_text

DESCRIPTION = "icesink: keep Apache Iceberg tables in sync with operational data, defined in SQL."


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="icesink", description=DESCRIPTION,
                                     epilog="icesink parse FILE… checks files without executing them.")
    parser.add_argument("--data-dir", help="catalog directory (default: $ICESINK_DATA_DIR, else the user data "
                                           "directory)")
    parser.add_argument("-f", "--file", action="append", default=[], help="run the SQL in FILE, stop at the "
                                                                         "first error")
    parser.add_argument("-c", "--command", action="append", default=[], help="run SQL given on the command line")
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    logging.basicConfig(level=os.environ.get("ICESINK_LOG", "WARNING").upper(),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if argv and argv[0] == "parse":
        if len(argv) < 2:
            print("usage: icesink parse FILE…", file=sys.stderr)
            return 2
        return check_files(argv[1:])
    args = _parser().parse_args(argv)
    console, error_console = make_console(), make_console(stderr=True)
    with Session(args.data_dir) as session:
        if args.file or args.command:
            for path in args.file:
                try:
                    text = open(path, encoding="utf-8").read()
                except OSError as exc:
                    error_console.print(f"{path}: {exc.strerror}", markup=False)
                    return 1
                if not run_text(session, text, path, console, error_console):
                    return 1
            for command in args.command:
                if not run_text(session, command, "<command>", console, error_console):
                    return 1
            return 0
        if not sys.stdin.isatty():
            return 0 if run_stream(session, sys.stdin, "<stdin>", console, error_console) else 1
        from .shell import Repl
        return Repl(session, console=console, error_console=error_console).run()


if __name__ == "__main__":
    sys.exit(main())

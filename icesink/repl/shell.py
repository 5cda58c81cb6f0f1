"""The interactive shell: multi-line input until ';', history, completion, highlighting."""
from __future__ import annotations

import threading
from pathlib import Path

from prompt_toolkit import PromptSession
from prompt_toolkit.completion import Completer, Completion
from prompt_toolkit.history import FileHistory
from prompt_toolkit.key_binding import KeyBindings
from prompt_toolkit.lexers import PygmentsLexer
from pygments.lexers.sql import PostgresLexer

from ..catalog.schema import VIEWS
from ..catalog.store import Catalog
from ..catalog.private import private_file
from ..grammar.lexical import is_complete, keywords
from ..grammar.masking import redact
from ..grammar.parser import parses
from ..session import Session
from .progress import copy_progress
from .render import make_console
from .script import META_LINE, META_COMMANDS, ScriptRunner

PROGRESS_SECONDS = 0.5
HELP = """\
Type SQL statements ending with ';' (Enter inside a statement starts a new line).
  \\d [NAME]  list objects, or a relation's columns     \\q   quit
  \\dt, \\dm  list tables, materialized views           \\?   this help
  \\i FILE    run the statements of a file              Ctrl-C  cancel the current input
  \\timing [on|off]   show how long each statement takes
  \\watch [SECONDS]   run the previous query again every SECONDS (default 2) until Ctrl-C
Status:   SELECT s.name, st.status, st.error FROM mz_sinks s
          JOIN mz_internal.mz_sink_statuses st ON s.id = st.id;
Reference: docs in the README; statements follow Materialize's dialect."""


class RedactingHistory(FileHistory):
    """Never keeps a secret value, in memory or in the file (owner-only). Each statement of an input is masked on
    its own; one that does not parse keeps no literal at all."""

    def __init__(self, filename: Path):
        super().__init__(str(private_file(filename)))

    def append_string(self, string: str) -> None:
        super().append_string(redact(string, parsed=lambda _, statement: parses(statement)))


class SqlCompleter(Completer):
    def __init__(self, session: Session):
        self.session = session
        self.keywords = sorted(keywords())

    def get_completions(self, document, complete_event):
        word = document.get_word_before_cursor(WORD=False)
        if not word:
            return
        lowered = word.lower()
        names = self.session.object_names() + list(VIEWS)
        for name in sorted(set(names)):
            if name.startswith(lowered):
                yield Completion(name, -len(word), display_meta="object")
        for keyword in self.keywords:
            if keyword.lower().startswith(lowered):
                yield Completion(keyword if word[0].isupper() else keyword.lower(), -len(word))


def _key_bindings() -> KeyBindings:
    bindings = KeyBindings()

    @bindings.add("enter")
    def _(event):
        buffer = event.current_buffer
        text = buffer.text.strip()
        if not text or text.startswith("\\") or is_complete(buffer.text):
            buffer.validate_and_handle()
        else:
            buffer.insert_text("\n")

    @bindings.add("escape", "enter")
    def _(event):
        event.current_buffer.validate_and_handle()

    return bindings


class Repl:
    def __init__(self, session: Session, input=None, output=None, console=None, error_console=None,
                 history_path: Path | None = None):
        self.session = session
        self.console = console or make_console()
        self.error_console = error_console or make_console(stderr=True)
        self.runner = ScriptRunner(session, self.console, self.error_console)
        history = RedactingHistory(history_path or session.data_dir / "history")
        self.prompt = PromptSession(
            message=self._message, multiline=True, key_bindings=_key_bindings(), history=history,
            completer=SqlCompleter(session), lexer=PygmentsLexer(PostgresLexer), complete_while_typing=False,
            prompt_continuation=lambda width, line_number, wrap_count: "." * (width - 2) + "> ",
            input=input, output=output)
        self._watching = threading.Event()

    def _watch_copies(self) -> None:
        """Keeps the bottom toolbar on a source's initial copy while one runs (shown only then), from a catalog
        connection of its own: the prompt's thread owns the session's."""
        catalog = Catalog(self.session.data_dir)
        try:
            while not self._watching.wait(PROGRESS_SECONDS):
                shown = copy_progress(catalog)
                if shown != self.prompt.bottom_toolbar:
                    self.prompt.bottom_toolbar = shown
                    if self.prompt.app.is_running:
                        self.prompt.app.invalidate()
        finally:
            catalog.close()

    @staticmethod
    def _message():
        return "icesink> "

    def run(self) -> int:
        self.console.print("icesink: type \\? for help, \\q to quit.")
        threading.Thread(target=self._watch_copies, name="icesink-copy-progress", daemon=True).start()
        try:
            return self._loop()
        finally:
            self._watching.set()

    def _loop(self) -> int:
        while True:
            try:
                text = self.prompt.prompt()
            except KeyboardInterrupt:
                continue
            except EOFError:
                return 0
            command = text.strip()
            if command in ("\\q", "\\quit", "quit", "exit"):
                return 0
            meta = META_LINE.match(command)
            if command == "\\?":
                self.console.print(HELP, markup=False)
            elif meta and meta.group(1) == "watch":
                try:
                    seconds = (command.split()[1:2] or ["2"])[0]
                    self.runner.run_meta("watch", f"{seconds} 1000000", "<repl>", 1)  # until Ctrl-C
                except KeyboardInterrupt:
                    pass
            elif meta and meta.group(1) in META_COMMANDS:
                self.runner.run_meta(meta.group(1), meta.group(2), "<repl>", 1)
            elif command.startswith("\\"):
                self.error_console.print(f"unknown command {command}; type \\? for help", markup=False)
            elif command:
                self.runner.run_sql(text, "<repl>")

"""Why a sink stopped, sorted once: errors that need a user's action (the sink becomes `failed` and is not retried)
derive from NeedsAction; anything else is retried with backoff (the sink is `stalled`). `cause_of` says a failure in
the words of the exception that caused it: Spark wraps a Python worker's error in "An exception was thrown from the
Python worker" and a JVM's in call sites and `Caused by:` chains."""
from __future__ import annotations

import re

from ..errors import NotSupportedYet

MAX_LENGTH = 500
_PYTHON_TRACEBACK = "Traceback (most recent call last):"
_WRAPPERS = re.compile(r"^(?:\[[A-Z_]+\] )?(?:Query \[.*?\] terminated with exception: |An error occurred while "
                       r"calling [^\n]*\n: )")


class NeedsAction(Exception):
    """A failure retrying cannot mend: a newer incarnation writes the table, the table does not fit, the input broke
    its KEY or no longer holds the changes after the sink's progress."""


class Unsupported(NeedsAction, NotSupportedYet):
    """What this release cannot run (a sink from an input kind it has no reader for): retrying cannot mend it."""


def needs_action(failure: BaseException) -> bool:
    """What this release cannot run (NotSupportedYet) needs the user's action too: retrying cannot mend it."""
    return isinstance(failure, (NeedsAction, NotSupportedYet))


_EXTERNAL_MODULES = ("requests", "urllib3", "botocore", "boto3", "pyiceberg.exceptions")


def is_external(failure: BaseException) -> bool:
    """Raised by a catalog's or an object store's client (pyarrow's S3 errors are OSErrors): its connection can say
    it in the user's terms."""
    return isinstance(failure, OSError) or type(failure).__module__.startswith(_EXTERNAL_MODULES)


def cause_of(failure) -> str:
    """The innermost message of an exception (or of its text): the Python error a worker raised, else the last
    `Caused by:` of a Java one, else its own first line."""
    text = str(getattr(failure, "desc", None) or failure or "stopped").strip()
    if _PYTHON_TRACEBACK in text:
        tail = text.rsplit(_PYTHON_TRACEBACK, 1)[1]
        raised = [line for line in tail.splitlines() if line.strip() and not line[0].isspace()]
        if raised:
            return raised[-1][:MAX_LENGTH]
    causes = re.findall(r"^Caused by: (.+)$", text, re.M)
    if causes:
        return causes[-1].strip()[:MAX_LENGTH]
    text = _WRAPPERS.sub("", text)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    first = lines[0] if lines else text
    if type(failure).__name__ not in ("str", "CapturedException") and isinstance(failure, Exception) \
            and not type(failure).__module__.startswith(("icesink", "pyspark")):
        first = f"{type(failure).__name__}: {first}"
    return first[:MAX_LENGTH]

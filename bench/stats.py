"""Small helpers the benchmark scripts share."""
import logging
import os
import re
import time
from pathlib import Path
from typing import NamedTuple

_COMMITTED = re.compile(r"committed (\d+) changes up to \D*(\d+)\D* in ([\d.]+)s")


class Commit(NamedTuple):
    at: float  # when it was logged
    changes: int
    offset: int  # the first number of the frontier it covers
    seconds: float  # the batch's time


class Commits(logging.Handler):
    """A sink's commits as icesink.sink logs them, in `batches`."""

    def __init__(self):
        super().__init__(logging.INFO)
        self.batches: list[Commit] = []

    def emit(self, record):
        found = _COMMITTED.search(record.getMessage())
        if found is not None:
            self.batches.append(Commit(time.time(), int(found[1]), int(found[2]), float(found[3])))


def percentile(samples, q: float):
    """The q-quantile (0..1) of `samples`, nearest rank."""
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def process_tree(pid: int) -> list[int]:
    """`pid` and every process it started that still runs, and theirs, from /proc."""
    found = [pid]
    for child in Path(f"/proc/{pid}/task").glob("*/children"):
        try:
            tokens = child.read_text().split()
        except OSError:  # the thread ended meanwhile
            continue
        for token in tokens:
            found += process_tree(int(token))
    return found


def cpu_seconds(pids, ended_children: bool = False) -> dict[int, float]:
    """User and system CPU seconds of each process, as /proc counts them; with `ended_children`, those of the
    children each has waited for too."""
    found = {}
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        found[pid] = sum(int(f) for f in fields[11:15 if ended_children else 13]) / os.sysconf("SC_CLK_TCK")
    return found

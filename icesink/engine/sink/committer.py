"""One batch, one snapshot: the commit protocol of docs/commit-protocol.md.

Data files are written before the commit; an attempt that does not land has its files deleted, and so do files
that only expired snapshots referenced. Old snapshots expire in the commits themselves, so no second writer of
the table (a housekeeping thread) ever races a batch. The commit itself re-reads the table,
recognises a batch that already landed, refuses to write behind a newer sink version or over a range
someone else wrote, and commits with a requirement on the snapshot it planned against: on conflict it
plans again rather than letting a library replay the write.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Callable, Optional

from pyiceberg.exceptions import CommitFailedException
from pyiceberg.table.snapshots import Operation

from ...model.frontier import Frontier
from .. import housekeeping
from ..failures import NeedsAction
from ..faults import crash_point
from ..pyiceberg_internals import commit_files, every_file, replace_files
from .progress import SEALED, Progress, latest_progress, summary_properties
from .writers import BatchFiles

log = logging.getLogger("icesink.sink")
MAX_ATTEMPTS = 5
KEEP_SNAPSHOTS = 10  # each commit expires all but this many newest snapshots, this sink's newest always kept
FOLDED_BY = "icesink.folded-by"  # in a fold's summary: the sink whose files it rewrote


class Fenced(NeedsAction):
    """A newer version of this sink writes the table: this process must stop (status failed)."""


class FrontierConflict(NeedsAction):
    """The table already holds progress past this batch's start: writing would duplicate rows."""


class CommitConflict(Exception):
    """Concurrent commits kept winning; the batch is retried later (status stalled)."""


@dataclass(frozen=True)
class Outcome:
    snapshot_id: Optional[int]
    already_committed: bool
    frontier: Frontier  # what the table now holds of this sink's input: where the next batch starts
    files: BatchFiles  # what the batch wrote and read


# planner(table, after) -> the files to remove and add for the batch's changes beyond the frontier `after`,
# planned against that table state
FilePlanner = Callable[[object, Frontier], BatchFiles]


class Committer:
    def __init__(self, load_table: Callable[[], object], sink_id: str, version: int, input_id: str,
                 unnamed_input_id: Optional[str] = None):
        """`input_id`: the relation the sink reads. When the table's progress counts another's changes (ALTER SINK
        … SET FROM), the next commit replaces every row of the table with what it writes of this one.
        `unnamed_input_id`: the relation a progress that names none counts (SinkDescriptor.unnamed_input_id)."""
        self.load_table = load_table
        self.sink_id = sink_id
        self.version = version
        self.input_id = input_id
        self.unnamed_input_id = unnamed_input_id or input_id
        # (snapshot, files it removed): once no older snapshot is kept, nothing references those files
        self._retired: list[tuple[int, list[str]]] = []

    def counts(self, progress: Progress) -> bool:
        """Whether `progress` counts this sink's input (else the sink switched since: the next commit replaces)."""
        return progress.counts(self.input_id, self.unnamed_input_id)

    def resume_point(self, table=None) -> Optional[Progress]:
        """This sink's newest progress in `table` (loaded when not given); Fenced if a newer version wrote it."""
        progress = latest_progress(table if table is not None else self.load_table(), self.sink_id)
        if progress is not None:
            self._check_version(progress)
        return progress

    def _standing(self, table) -> tuple[Optional[Progress], bool]:
        """This sink's newest progress in `table` (Fenced if a newer version wrote it), and whether the next commit
        replaces every row of the table: the progress counts another input (ALTER SINK … SET FROM since)."""
        progress = self.resume_point(table)
        return progress, progress is not None and not self.counts(progress)

    def _check_version(self, progress: Progress) -> None:
        if progress.version > self.version:
            raise Fenced(f"fenced by newer sink version {progress.version} (this process runs version "
                         f"{self.version}); another engine writes this sink")

    def commit(self, lower: Frontier, plan_files: FilePlanner) -> Optional[Outcome]:
        """Commits the batch starting after `lower`; None if it held nothing the table lacks."""
        planned: Optional[BatchFiles] = None  # from an earlier attempt: its upper bound tells whether it landed
        upper: Optional[Frontier] = None
        for attempt in range(1, MAX_ATTEMPTS + 1):
            table = self.load_table()
            progress, replacing = self._standing(table)
            after = lower
            if progress is not None and not replacing:
                committed = progress.frontier
                if planned is not None and progress.version == self.version and committed == upper:
                    return Outcome(progress.snapshot_id, True, committed, planned)  # it landed after all
                if committed.past(after) and progress.version == self.version:
                    raise FrontierConflict(f"the table already holds this sink's changes up to "
                                           f"{committed}, past this batch's start {lower}")
                # An older version of this sink got further: skip what it wrote, and commit anyway, for this
                # snapshot's newer version fences it.
                after = after.joined(committed)
                if progress.foreign_writes:
                    log.warning("sink %s: %d snapshots by other writers since its last commit", self.sink_id,
                                len(progress.foreign_writes))
            if planned is not None:  # the earlier attempt did not land: nothing will ever reference its files
                _delete(table.io, [f.file_path for f in planned.added + planned.deletes], self.sink_id)
            planned = plan_files(_Emptied(table) if replacing else table, after)
            if not planned.rows and after == lower and not replacing:
                return None
            crash_point("files-written")
            upper = after.advanced(planned.reaches)
            properties = summary_properties(self.sink_id, self.version, upper,
                                            {"lower": after.to_json(), "upper": upper.to_json(),
                                             "rows": planned.rows}, self.input_id)
            try:
                snapshot_id = self._progress_snapshot(table, properties, planned.removed, planned.added,
                                                      planned.deletes, replacing)
            except CommitFailedException as exc:
                log.info("sink %s: commit attempt %d lost a race (%s); planning again", self.sink_id, attempt, exc)
                continue
            return Outcome(snapshot_id, False, upper, planned)
        raise CommitConflict(f"{MAX_ATTEMPTS} commit attempts in a row lost to concurrent commits")

    def mark(self, frontier: Frontier, sealed: bool = False) -> Optional[int]:
        """An empty snapshot that records this sink's progress at `frontier`: a new sink's first (so that an input
        holding nothing yet still gives its table one snapshot), or the seal of a finite input the table now holds
        all of (`sealed`). Recorded once: None when the table already says as much."""
        for attempt in range(1, MAX_ATTEMPTS + 1):
            table = self.load_table()
            progress, replacing = self._standing(table)
            if progress is not None and not replacing:
                if progress.frontier.past(frontier) or (progress.frontier == frontier
                                                        and (progress.sealed or not sealed)):
                    return None
            properties = summary_properties(self.sink_id, self.version, frontier,
                                            {"lower": frontier.to_json(), "upper": frontier.to_json(), "rows": 0},
                                            self.input_id)
            if sealed:
                properties[SEALED] = "true"
            try:
                return self._progress_snapshot(table, properties, replacing=replacing)
            except CommitFailedException as exc:
                log.info("sink %s: marking attempt %d lost a race (%s)", self.sink_id, attempt, exc)
        raise CommitConflict(f"{MAX_ATTEMPTS} commit attempts in a row lost to concurrent commits")

    def _progress_snapshot(self, table, properties: dict, removed: list = (), added: list = (),
                           deletes: list = (), replacing: bool = False) -> int:
        """Commits one snapshot holding this sink's progress (it expires what is past KEEP_SNAPSHOTS); raises
        CommitFailedException when another commit came first. `replacing`: every file the table holds goes."""
        expired = _expirable(table, None)  # the new snapshot holds this sink's progress
        if replacing:
            removed = every_file(table)
            snapshot_id = replace_files(table, removed, list(added), properties, list(deletes), expired,
                                        Operation.OVERWRITE)
            log.info("sink %s: switched its input: %d files of the table replaced", self.sink_id, len(removed))
        else:
            snapshot_id = commit_files(table, list(removed), list(added), properties, list(deletes), expired)
        self._retire(table, snapshot_id, list(removed), expired)
        return snapshot_id

    def fold(self, plan_fold: Callable[[object], Optional[tuple[list, list, list]]]) -> Optional[int]:
        """Commits a rewrite of files (the merge-on-read writer's folding) as a 'replace' snapshot, which holds the
        same rows and no progress: latest_progress passes over it. A fenced sink folds nothing; a rewrite that
        loses a race is dropped (its files deleted) and planned again after the next batch."""
        table = self.load_table()
        progress = self.resume_point(table)
        planned = plan_fold(table)
        if planned is None:
            return None
        removed, added, deletes = planned
        expired = _expirable(table, progress.snapshot_id if progress else None)
        try:
            snapshot_id = replace_files(table, removed, added, {FOLDED_BY: self.sink_id}, deletes, expired)
        except CommitFailedException as exc:
            log.info("sink %s: a fold lost a race (%s); it waits for the next batch", self.sink_id, exc)
            _delete(table.io, [f.file_path for f in added + deletes], self.sink_id)
            return None
        self._retire(table, snapshot_id, removed, expired)
        log.info("sink %s: folded %d files into %d", self.sink_id, len(removed), len(added) + len(deletes))
        return snapshot_id

    def _retire(self, table, snapshot_id: int, removed: list, expired: list[int]) -> None:
        """Notes the files the commit of `snapshot_id` to `table` removed, and hands to the housekeeping thread the
        deletion of those that only the snapshots it expired referenced: the files a commit removed, once the
        commit's snapshot is the oldest kept (or is gone itself). A store's deletes take time that follows their
        number, and no batch waits for them."""
        if removed:
            self._retired.append((snapshot_id, [f.file_path for f in removed]))
        if not expired:
            return
        listed = [s.snapshot_id for s in sorted(table.metadata.snapshots, key=lambda s: s.timestamp_ms)]
        newer_kept = [s for s in listed if s not in expired][1:]
        doomed = [r for r in self._retired if r[0] in listed and r[0] not in newer_kept]
        self._retired = [r for r in self._retired if r not in doomed]
        paths = [path for _, files in doomed for path in files]
        if paths:
            io, sink_id = table.io, self.sink_id
            housekeeping.later(("delete", sink_id, self.version, snapshot_id), lambda: _delete(io, paths, sink_id))


class _Emptied:
    """The table as a batch that replaces all of it plans against it: its schema, spec and properties, no rows."""

    def __init__(self, table):
        self._table = table

    def current_snapshot(self):
        return None

    def __getattr__(self, name):
        return getattr(self._table, name)


def _expirable(table, keep: Optional[int]) -> list[int]:
    """The snapshots of `table` that a commit to it expires, so that KEEP_SNAPSHOTS are left with its own: the
    oldest, never a branch's or a tag's head, nor `keep`."""
    snapshots = sorted(table.metadata.snapshots, key=lambda s: s.timestamp_ms)
    protected = {ref.snapshot_id for ref in table.metadata.refs.values()} | {keep}
    return [s.snapshot_id for s in snapshots[:max(0, len(snapshots) + 1 - KEEP_SNAPSHOTS)]
            if s.snapshot_id not in protected]


def _delete(io, paths: list[str], sink_id: str) -> None:
    """Best effort: a file left behind costs storage, never correctness."""
    for path in paths:
        try:
            io.delete(path)
        except Exception as exc:
            log.info("sink %s: could not delete %s (%s)", sink_id, path, exc)

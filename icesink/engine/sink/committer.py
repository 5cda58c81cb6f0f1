"""One batch, one snapshot: the commit protocol of commit-protocol.md.

Data files are written before the commit (orphans if it fails). The commit itself re-reads the table,
recognises a batch that already landed, refuses to write behind a newer sink version or over a range
someone else wrote, and commits with a requirement on the snapshot it planned against: on conflict it
plans again rather than letting a library replay the write.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Callable, Optional

from pyiceberg.exceptions import CommitFailedException

from ..faults import crash_point
from .progress import Progress, latest_progress, summary_properties

log = logging.getLogger("icesink.sink")
MAX_ATTEMPTS = 5
KEEP_SNAPSHOTS = 10  # expiry keeps this many newest snapshots, the newest icesink one always among them


class Fenced(Exception):
    """A newer version of this sink writes the table: this process must stop (status failed)."""


class FrontierConflict(Exception):
    """The table already holds progress past this batch's start: writing would duplicate rows."""


class CommitConflict(Exception):
    """Concurrent commits kept winning; the batch is retried later (status stalled)."""


@dataclass(frozen=True)
class Outcome:
    snapshot_id: Optional[int]
    already_committed: bool
    files_added: int
    files_removed: int
    frontier: dict  # what the table now holds of this sink's input: where the next batch starts
    bytes_added: int = 0


# planner(table, after) -> (data files to remove, data files to add), planned against that table state for
# the batch's changes with offsets above `after`
FilePlanner = Callable[[object, int], tuple[list, list]]


class Committer:
    def __init__(self, load_table: Callable[[], object], sink_id: str, version: int):
        self.load_table = load_table
        self.sink_id = sink_id
        self.version = version
        self.commits = 0

    def resume_point(self) -> Optional[Progress]:
        progress = latest_progress(self.load_table(), self.sink_id)
        if progress is not None:
            self._check_version(progress)
        return progress

    def _check_version(self, progress: Progress) -> None:
        if progress.version > self.version:
            raise Fenced(f"fenced by newer sink version {progress.version} (this process runs version "
                         f"{self.version}); another engine writes this sink")

    def commit(self, lower: dict, upper: dict, rows: int, plan_files: FilePlanner) -> Outcome:
        for attempt in range(1, MAX_ATTEMPTS + 1):
            table = self.load_table()
            progress = latest_progress(table, self.sink_id)
            after, frontier = _offset(lower), upper
            if progress is not None:
                self._check_version(progress)
                committed = _offset(progress.frontier)
                if progress.version == self.version and progress.frontier == upper:
                    return Outcome(progress.snapshot_id, True, 0, 0, upper)  # an earlier attempt landed
                if committed > after and progress.version == self.version:
                    raise FrontierConflict(f"the table already holds this sink's changes up to "
                                           f"{progress.frontier}, past this batch's start {lower}")
                if committed > after:
                    # An older version of this sink got further. Skip what it wrote, and commit anyway:
                    # this snapshot's newer version fences it.
                    after = committed
                    frontier = progress.frontier if committed >= _offset(upper) else upper
                if progress.foreign_writes:
                    log.warning("sink %s: %d snapshots by other writers since its last commit", self.sink_id,
                                len(progress.foreign_writes))
            removed, added = plan_files(table, after) if after < _offset(upper) else ([], [])
            crash_point("files-written")
            properties = summary_properties(self.sink_id, self.version, frontier,
                                            {"lower": {"offset": after}, "upper": frontier, "rows": rows})
            try:
                snapshot_id = _commit_files(table, removed, added, properties)
            except CommitFailedException as exc:
                log.info("sink %s: commit attempt %d lost a race (%s); planning again", self.sink_id, attempt, exc)
                continue
            self.commits += 1
            self._expire(snapshot_id)
            return Outcome(snapshot_id, False, len(added), len(removed), frontier,
                           sum(f.file_size_in_bytes for f in added))
        raise CommitConflict(f"{MAX_ATTEMPTS} commit attempts in a row lost to concurrent commits")

    def _expire(self, newest: int) -> None:
        """Expires all but the newest snapshots every few commits; never the one holding our progress."""
        if self.commits % KEEP_SNAPSHOTS:
            return
        table = self.load_table()
        snapshots = sorted(table.metadata.snapshots, key=lambda s: s.timestamp_ms)
        old = [s.snapshot_id for s in snapshots[:-KEEP_SNAPSHOTS] if s.snapshot_id != newest]
        if old:
            try:
                table.maintenance.expire_snapshots().by_ids(old).commit()
            except CommitFailedException:
                pass  # maintenance waits for the next round


def _offset(frontier: dict) -> int:
    return int(frontier.get("offset", 0))


def _commit_files(table, removed: list, added: list, properties: dict[str, str]) -> int:
    with table.transaction() as tx:
        update = tx.update_snapshot(snapshot_properties=properties)
        producer = update.overwrite() if removed else update.fast_append()
        with producer:
            for data_file in removed:
                producer.delete_data_file(data_file)
            for data_file in added:
                producer.append_data_file(data_file)
    return table.current_snapshot().snapshot_id

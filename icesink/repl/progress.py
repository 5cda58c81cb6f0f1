"""What the shell shows below its prompt while a source makes its initial copy, from mz_source_statistics."""
from __future__ import annotations

COPYING = """SELECT o.name, s.snapshot_records_staged, s.snapshot_records_known FROM statistics s
             JOIN objects o ON o.id = s.object_id
             WHERE o.kind = 'source' AND s.snapshot_records_known > s.snapshot_records_staged ORDER BY o.name"""
WIDTH = 30


def copy_progress(catalog) -> str | None:
    """One bar per source still copying its tables, or None when none is."""
    _, copying = catalog.query(COPYING)
    if not copying:
        return None
    bars = []
    for name, staged, known in copying:
        done = int(WIDTH * staged / known)
        bars.append(f"source {name}: copying [{'#' * done}{'.' * (WIDTH - done)}] {staged:,} of {known:,} rows "
                    f"({100 * staged // known}%)")
    return "  ".join(bars)

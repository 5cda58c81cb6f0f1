"""The Iceberg sink: table setup, the writers, and the exactly-once committer."""
from pathlib import Path

SINKS_DIR = "sinks"


def state_dir(data_dir, sink_id: str) -> Path:
    """What a sink keeps on this machine between batches (the merge-on-read writer's key index): a cache of what
    its Iceberg table holds, rebuilt from the table when missing, removed with the sink."""
    return Path(data_dir).resolve() / SINKS_DIR / sink_id

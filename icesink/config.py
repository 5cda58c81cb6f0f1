"""Process settings: the Spark master and Spark configuration, from flags, the environment or a TOML file.

    [spark]
    master = "spark://host:7077"          # or local[*] (the default)
    "spark.executor.memory" = "4g"        # any other key is passed to Spark as is
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

CONFIG_FILE = "icesink.toml"


@dataclass
class SparkSettings:
    master: str = "local[*]"
    conf: dict[str, str] = field(default_factory=dict)


def spark_settings(data_dir: Path, config_path: str | None = None, master_flag: str | None = None) -> SparkSettings:
    """Flag over ICESINK_SPARK_MASTER over the config file (--config, else DATA_DIR/icesink.toml) over local[*]."""
    settings = SparkSettings()
    path = Path(config_path) if config_path else Path(data_dir) / CONFIG_FILE
    if config_path or path.exists():
        with open(path, "rb") as f:
            section = dict(tomllib.load(f).get("spark", {}))
        settings.master = str(section.pop("master", settings.master))
        settings.conf = {str(k): str(v) for k, v in section.items()}
    settings.master = master_flag or os.environ.get("ICESINK_SPARK_MASTER") or settings.master
    return settings

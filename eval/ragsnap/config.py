"""The optional project configuration file, ``ragsnap.yaml``.

Looked up in the current folder unless ``--config`` names another file; a
missing default file means built-in defaults, a missing named file is an
error. Strictly validated against ``schemas/config.schema.json``::

    diff:
      tolerances:          # how much worse a value may get before it regresses
        passRate: 0.0      # absolute drop allowed, 0..1
        recallAtK: 0.0
        strongHitRate: 0.0
        missCount: 0       # extra misses allowed
        firstExpectedRank: 0  # rank positions a found document may move down
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .diff import Tolerances
from .errors import InputError
from .jsonio import read_bytes
from .schema import validate

__all__ = ["DEFAULT_CONFIG", "Config", "load_config"]

DEFAULT_CONFIG = Path("ragsnap.yaml")


@dataclass(frozen=True, slots=True)
class Config:
    """Validated settings; every field has a default."""

    tolerances: Tolerances = field(default_factory=Tolerances)


def load_config(path: Path | None) -> Config:
    """Read ``path`` (or ``ragsnap.yaml`` when it exists) into a ``Config``."""
    if path is None:
        if not DEFAULT_CONFIG.is_file():
            return Config()
        path = DEFAULT_CONFIG
    import yaml

    raw = read_bytes(path, "pass --config with an existing file, or leave it out")
    try:
        data: Any = yaml.safe_load(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise InputError(path, "is not UTF-8", "re-save the file with UTF-8 encoding") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark is not None else None
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise InputError(
            path, f"is not valid YAML ({problem})", "fix the YAML syntax", where
        ) from None
    if data is None:
        return Config()
    validate(data, "config", path, "configuration")
    return Config(tolerances=Tolerances.from_json(data.get("diff", {}).get("tolerances", {})))

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
        metrics: 0.0       # drop allowed in any graded metric's mean (ndcg@10 ...)
    measures: [recall@5, recall@10, mrr@10, ndcg@10, map, coverage@10]  # judged cases
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .diff import Tolerances
from .errors import InputError, UsageError
from .jsonio import read_bytes
from .metrics import parse_measures
from .schema import validate

__all__ = ["DEFAULT_CONFIG", "Config", "load_config"]

DEFAULT_CONFIG = Path("ragsnap.yaml")
#: Graded measures the score report computes for judged cases.
DEFAULT_CASE_MEASURES = ("recall@5", "recall@10", "mrr@10", "ndcg@10", "map", "coverage@10")


@dataclass(frozen=True, slots=True)
class Config:
    """Validated settings; every field has a default."""

    tolerances: Tolerances = field(default_factory=Tolerances)
    measures: tuple[str, ...] = DEFAULT_CASE_MEASURES


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
    measures = tuple(data.get("measures", DEFAULT_CASE_MEASURES))
    try:
        parse_measures(measures)
    except UsageError as exc:
        raise InputError(
            path, str(exc).split(";")[0], "use measures such as ndcg@10", "/measures"
        ) from None
    return Config(
        tolerances=Tolerances.from_json(data.get("diff", {}).get("tolerances", {})),
        measures=measures,
    )

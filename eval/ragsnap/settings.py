"""Chunking and lookup pipeline settings: plain dataclasses with no heavy imports.

They live apart from ``ragsnap.kb.pipeline`` so that reading ``ragsnap.yaml``
(every command does) does not import numpy, the embedders and the backends.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .errors import UsageError

__all__ = [
    "METHODS",
    "PIPELINE_VERSION",
    "SNAPSHOT_TOLERANCE",
    "ChunkSettings",
    "FusionProfile",
    "LookupSettings",
]

PIPELINE_VERSION = "ragsnap-lookup/2"  # 2: scores on the 1e-6 grid, exact cosines
METHODS = ("lexical", "vector", "hybrid", "hybrid+rerank")
#: how far a fixture's numbers may move and the fixture is the same (``snapshot.tolerance``)
SNAPSHOT_TOLERANCE = 1e-4


@dataclass(frozen=True, slots=True)
class FusionProfile:
    """A fixed, versioned weighted-RRF profile; requests cannot change it."""

    name: str = "wrrf-v1"
    k: int = 60
    lexical_weight: float = 1.0
    vector_weight: float = 1.0

    def to_json(self) -> dict[str, Any]:
        return {
            "profile": self.name,
            "k": self.k,
            "weights": {"lexical": self.lexical_weight, "vector": self.vector_weight},
        }


@dataclass(frozen=True, slots=True)
class LookupSettings:
    """Pipeline knobs (``lookup:`` in ragsnap.yaml)."""

    method: str = "hybrid+rerank"
    top_k: int = 5
    candidates: int = 50
    rerank_depth: int = 20
    min_score: float = 0.22
    relative_score: float = 0.5
    weak_score: float = 0.35
    sufficient_score: float = 0.45
    context_budget_chars: int = 2000
    hints: bool = True
    fusion: FusionProfile = field(default_factory=FusionProfile)

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise UsageError(f"unknown method {self.method!r}; use one of {', '.join(METHODS)}")


@dataclass(frozen=True, slots=True)
class ChunkSettings:
    """How bodies are cut: by headings, then by size with overlap."""

    max_chars: int = 1200
    overlap_chars: int = 150
    heading_level: int = 2

    def fingerprint(self) -> str:
        """Identity of these settings, part of every document's index hash."""
        return f"md-headings-v1:h{self.heading_level}:max{self.max_chars}:ov{self.overlap_chars}"

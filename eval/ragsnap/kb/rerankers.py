"""The rerankers a method may name (``reranker:``), registered by name: how the
head of a ranked list (its first ``lookup.rerankDepth`` candidates) is reordered.

A reranker is a pure function of each candidate's ``RerankFeatures`` (what the
lookup pipeline measures on the candidate's chunk) to a rerank score; the
pipeline sorts the head by the score on the 1e-6 grid, ties by chunk id, and
never filters (the floors read confidences). Names are versions: a profile's
formula and weights never change under its name; a new formula is a new name.

``heuristic-v1`` (``lookup.rerankWeights``; the default of ``hybrid+rerank``
until heuristic-v2)::

    0.45 confidence + 0.20 phrase + 0.15 identifiers + 0.10 title + 0.10 coverage

It replaces the fused order with a mix of lexical features, and loses to the
fused list it reorders: -0.018 MAP / -0.037 nDCG@10 on Cranfield's dev split
with the hashing embedder (benchmarks/README.md, quality_cranfield).

``heuristic-v2`` (the default of ``hybrid+rerank``; its weights are fixed,
``HEURISTIC_V2``)::

    fused share + 0.1 title + 0.1 codes

keeps the fused order and moves a candidate only on evidence the fused value
does not hold:

- *fused share*: the candidate's ranking value (the fused value, or the one
  list's score for a single-list method) divided by the head's best, in [0, 1]
  for every fusion profile; with nothing else, the head keeps its order;
- *title*: the unweighted share of the query's distinct terms in the chunk's
  title, breadcrumb and heading (the index tokens of the three). A document's
  title is written to name what it is about; the fused value counts it only as
  words of the body. A tenth of the fused share: larger weights helped the
  hashing embedder more on Cranfield's dev split (0.4: +0.0115 MAP) but cost
  MiniLM's (0.4: -0.0021); 0.1 is the weight whose worse embedder gains most;
- *codes*: the share of the query's code words (``code_words``: a digit, an
  inner capital, ``_``, or a ``.`` / ``:`` joining two parts of 2+ characters:
  ``ERR-4031``, ``maxPoolSize``, ``max.poll.records``; not hyphenated prose
  such as ``re-entry``) found verbatim in the chunk text, case-insensitive; 0
  when the query has none. A tenth of the fused share: it settles close
  candidates; letting it override the fused order (weight 1.0) scored lower.

The weights were chosen on development data only (Cranfield's 71 dev queries
with the hashing and MiniLM embedders, the example set's dev cases):
phrase, coverage, confidence and IDF-weighted coverage added nothing on dev
at any weight (benchmarks/README.md, quality_cranfield, "what was tried").
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..settings import HEURISTIC_V2_WEIGHTS, RERANKERS, RerankWeights
from .numeric import quantize, ticks

__all__ = [
    "HEURISTIC_V2",
    "SCORERS",
    "HeuristicV2Weights",
    "RerankFeatures",
    "code_words",
    "rerank_order",
    "rerank_score",
]


@dataclass(frozen=True, slots=True)
class RerankFeatures:
    """What the pipeline measures on one candidate of the head (each in [0, 1])."""

    #: the candidate's ranking value over the head's best (0 when the best is not positive)
    fused_share: float
    #: the candidate's confidence, before the grid
    confidence: float
    #: share of the query's adjacent term pairs adjacent in the chunk
    phrase: float
    #: heuristic-v1's identifier share (coverage when the query has no code-like word)
    identifiers: float
    #: share of the query's distinct terms in the title, breadcrumb and heading
    title: float
    #: unweighted share of the query's distinct terms in the chunk
    coverage: float
    #: share of the query's ``code_words`` found verbatim (0 when it has none)
    codes: float


@dataclass(frozen=True, slots=True)
class HeuristicV2Weights:
    """heuristic-v2's weights: fixed for the name (a change is a new profile)."""

    fused: float = 1.0
    title: float = 0.1
    codes: float = 0.1

    def to_json(self) -> dict[str, float]:
        return {"fused": self.fused, "title": self.title, "codes": self.codes}


HEURISTIC_V2 = HeuristicV2Weights()


def _heuristic_v1(f: RerankFeatures, w: RerankWeights) -> float:
    return (
        w.confidence * f.confidence
        + w.phrase * f.phrase
        + w.identifiers * f.identifiers
        + w.title * f.title
        + w.coverage * f.coverage
    )


def _heuristic_v2(f: RerankFeatures, _w: RerankWeights) -> float:
    w = HEURISTIC_V2
    return w.fused * f.fused_share + w.title * f.title + w.codes * f.codes


#: every reranker by name: (features, ``lookup.rerankWeights``) -> rerank score
SCORERS: dict[str, Callable[[RerankFeatures, RerankWeights], float]] = {
    "heuristic-v1": _heuristic_v1,
    "heuristic-v2": _heuristic_v2,
}
# the settings name them (and record heuristic-v2's weights) without importing this module
if tuple(SCORERS) != RERANKERS or HEURISTIC_V2.to_json() != HEURISTIC_V2_WEIGHTS:
    raise AssertionError("ragsnap.settings and the registered rerankers differ")


def rerank_score(name: str, features: RerankFeatures, weights: RerankWeights) -> float:
    """The rerank score of a candidate with ``features`` under reranker ``name``,
    on the 1e-6 grid."""
    return quantize(SCORERS[name](features, weights))


def rerank_order(
    name: str, head: Sequence[tuple[str, RerankFeatures]], weights: RerankWeights
) -> list[tuple[int, float]]:
    """The head's ``(chunk id, features)`` in reranked order, as (place in ``head``,
    rerank score): scores on the grid, highest first, equal ones by chunk id."""
    scores = [rerank_score(name, features, weights) for _, features in head]
    order = sorted(range(len(head)), key=lambda i: (-ticks(scores[i]), head[i][0]))
    return [(i, scores[i]) for i in order]


_INNER_CAPITAL = re.compile(r".[A-Z]")
_JOINED = re.compile(r"[A-Za-z0-9]{2,}[.:][A-Za-z0-9]{2,}")


def code_words(identifiers: list[str]) -> list[str]:
    """The words of ``identifiers`` (``is_identifier``'s code-like query words) that
    are code, not prose: a digit, a capital after the first character, ``_``, or
    a ``.`` / ``:`` between two runs of 2+ letters or digits. Hyphenated prose
    (``re-entry``, ``non-linear``) and abbreviations (``i.e``) are left out."""
    return [
        w
        for w in identifiers
        if any(ch.isdigit() for ch in w)
        or "_" in w
        or _INNER_CAPITAL.search(w) is not None
        or _JOINED.search(w) is not None
    ]

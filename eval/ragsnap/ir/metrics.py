"""Graded IR measures as pure, vectorised numpy kernels, with trec_eval semantics.

A measure is named by a string parsed once, ``ndcg@10`` or ``map``; the
parsed ``Measure`` (its ``str`` is the canonical name) is the key of every
result. Kernels take a ``Rankings`` batch (one row per evaluated query) and
return one value per row.

Semantics, matching trec_eval (checked per query against pytrec_eval):

* Grades are integers 0-3 (any integer is accepted); a document is relevant
  when its grade is >= 1. Unjudged documents have grade 0.
* A run's results for a query are de-duplicated by document id (first
  occurrence wins), then ordered by score descending, ties broken by document
  id descending (byte order), as trec_eval does. Ranks are 1-based below.
* The ideal ranking for nDCG uses every judged document with grade > 0 for the
  query, retrieved or not, sorted by grade descending.
* Queries whose judgments hold no relevant document are excluded from the
  batch and counted separately; a judged query absent from the run is in the
  batch with nothing retrieved and scores 0 on every measure.

With ``R`` the number of relevant documents, ``rel_i`` 1 when the document at
rank i is relevant, ``g_i`` its grade and ``k`` the cutoff:

=================  ===========================================================
measure            formula (trec_eval name)
=================  ===========================================================
``precision@k``    sum(rel_1..k) / k (``P_k``; divides by k even when fewer
                   results were retrieved)
``recall@k``       sum(rel_1..k) / R (``recall_k``)
``hit@k``          1 if any rel_1..k else 0 (``success_k``)
``mrr@k``          1 / first relevant rank <= k, else 0 (``recip_rank`` on the
                   run cut at k; ``mrr`` has no cutoff)
``ndcg@k``         sum(g_i / log2(i + 1), i <= k) / the same over the ideal
                   ranking (``ndcg_cut_k``; linear gain; ``ndcg`` = no cutoff)
``ndcg_exp@k``     as ndcg@k with gain 2^g - 1 (the GoodBuddy / Burges form;
                   no trec_eval counterpart)
``map``            sum(P@i * rel_i) / R over all ranks (``map``; ``map@k``
                   stops at k, ``map_cut_k``)
``rprec``          sum(rel_1..R) / R (``Rprec``)
``coverage@k``     judged results in the top k / min(k, retrieved); 1 when
                   nothing was retrieved. Not a quality score: it says how far
                   the other scores can be trusted when judgments are
                   incomplete (unjudged results count as grade 0).
=================  ===========================================================
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import UsageError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    FloatArray = npt.NDArray[np.float64]

__all__ = [
    "DEFAULT_MEASURES",
    "MEASURES",
    "Measure",
    "Rankings",
    "evaluate",
    "parse_measure",
    "parse_measures",
    "rankings_from_dicts",
]


@dataclass(frozen=True, slots=True)
class Measure:
    """A parsed measure: a registered name and an optional cutoff. Measures sort
    by name, then cutoff, the uncut one first (``ndcg``, ``ndcg@5``, ``ndcg@10``)."""

    name: str
    cutoff: int | None = None

    def __str__(self) -> str:
        return self.name if self.cutoff is None else f"{self.name}@{self.cutoff}"

    def __lt__(self, other: Measure) -> bool:
        return (self.name, self.cutoff or 0) < (other.name, other.cutoff or 0)


@dataclass(frozen=True, slots=True)
class _Spec:
    kernel: Callable[[Rankings, int | None], FloatArray]
    cutoff: str  # "required", "optional" or "none"
    summary: str


#: Registered measures: canonical name -> kernel and cutoff rule.
MEASURES: dict[str, _Spec] = {}
_ALIASES = {
    "p": "precision",
    "success": "hit",
    "recip_rank": "mrr",
    "ndcg_cut": "ndcg",
    "map_cut": "map",
    "r-precision": "rprec",
    "judged": "coverage",
}
DEFAULT_MEASURES = (
    "map",
    "rprec",
    "mrr@10",
    "ndcg@10",
    "recall@5",
    "recall@10",
    "precision@5",
    "precision@10",
    "hit@10",
    "coverage@10",
)

_MEASURE_RE = re.compile(r"^([a-z_-]+)(?:[@_.](\d+))?$")


def register(
    name: str, cutoff: str, summary: str
) -> Callable[[Callable[[Rankings, int | None], FloatArray]], Callable[..., FloatArray]]:
    """Register a kernel under ``name`` (decorator)."""

    def decorate(
        kernel: Callable[[Rankings, int | None], FloatArray],
    ) -> Callable[[Rankings, int | None], FloatArray]:
        MEASURES[name] = _Spec(kernel, cutoff, summary)
        return kernel

    return decorate


def parse_measure(text: str) -> Measure:
    """Parse ``ndcg@10``, ``P_5``, ``recall.10``, ``map`` ... into a ``Measure``."""
    match = _MEASURE_RE.match(text.strip().lower())
    name = match.group(1) if match else ""
    name = _ALIASES.get(name, name)
    spec = MEASURES.get(name)
    if match is None or spec is None:
        known = ", ".join(sorted(MEASURES))
        raise UsageError(f"unknown measure {text!r}; use one of {known}, e.g. ndcg@10")
    cutoff = int(match.group(2)) if match.group(2) else None
    if cutoff is not None and cutoff < 1:
        raise UsageError(f"measure {text!r}: the cutoff must be at least 1")
    if spec.cutoff == "required" and cutoff is None:
        raise UsageError(f"measure {name!r} needs a cutoff, e.g. {name}@10")
    if spec.cutoff == "none" and cutoff is not None:
        raise UsageError(f"measure {name!r} takes no cutoff; write {name}")
    return Measure(name, cutoff)


def parse_measures(texts: Iterable[str]) -> tuple[Measure, ...]:
    """Parse several measures, keeping their order and dropping repeats."""
    return tuple(dict.fromkeys(parse_measure(t) for t in texts))


@dataclass(frozen=True, slots=True)
class Rankings:
    """One row per evaluated query.

    ``grades[q, i]`` is the grade of the result at rank i + 1 (0 when unjudged
    or past the end of the run), ``judged[q, i]`` whether it has a judgment,
    ``retrieved[q]`` how many results the run has, ``num_rel[q]`` how many
    relevant documents are judged and ``ideal[q]`` the positive grades sorted
    descending (zero-padded). ``excluded`` lists the judged queries with no
    relevant document, which no measure averages over.
    """

    query_ids: tuple[str, ...]
    grades: npt.NDArray[np.int64]
    judged: npt.NDArray[np.bool_]
    retrieved: npt.NDArray[np.int64]
    num_rel: npt.NDArray[np.int64]
    ideal: npt.NDArray[np.int64]
    excluded: tuple[str, ...] = ()

    def top(self, k: int | None) -> npt.NDArray[np.int64]:
        """Grades of the first ``k`` ranks (all ranks when ``k`` is None)."""
        return self.grades if k is None else self.grades[:, :k]


def _discounts(width: int) -> FloatArray:
    import numpy as np

    discount: FloatArray = 1.0 / np.log2(np.arange(2, width + 2, dtype=np.float64))
    return discount


def _safe_divide(numerator: FloatArray, denominator: FloatArray) -> FloatArray:
    import numpy as np

    out = np.zeros(numerator.shape, dtype=np.float64)
    np.divide(numerator, denominator, out=out, where=denominator > 0)
    return out


@register("precision", "required", "relevant results in the top k / k")
def precision(r: Rankings, k: int | None) -> FloatArray:
    """P@k = sum(rel_1..k) / k; trec_eval ``P_k``."""
    assert k is not None
    result: FloatArray = (r.top(k) >= 1).sum(axis=1) / k
    return result


@register("recall", "optional", "relevant results in the top k / relevant documents")
def recall(r: Rankings, k: int | None) -> FloatArray:
    """Recall@k = sum(rel_1..k) / R; trec_eval ``recall_k``."""
    return _safe_divide((r.top(k) >= 1).sum(axis=1).astype(float), r.num_rel.astype(float))


@register("hit", "required", "1 if a relevant result is in the top k")
def hit(r: Rankings, k: int | None) -> FloatArray:
    """Hit@k (success): 1 if any relevant result ranks <= k; trec_eval ``success_k``."""
    result: FloatArray = (r.top(k) >= 1).any(axis=1).astype(float)
    return result


@register("mrr", "optional", "1 / rank of the first relevant result within k")
def mrr(r: Rankings, k: int | None) -> FloatArray:
    """MRR@k = 1 / (first relevant rank) when it is <= k, else 0; ``recip_rank``."""
    import numpy as np

    relevant = r.top(k) >= 1
    first = relevant.argmax(axis=1)
    result: FloatArray = np.where(relevant.any(axis=1), 1.0 / (first + 1.0), 0.0)
    return result


def _ndcg(
    r: Rankings, k: int | None, gain: Callable[[npt.NDArray[np.int64]], FloatArray]
) -> FloatArray:
    top = r.top(k)
    ideal = r.ideal if k is None else r.ideal[:, :k]
    dcg = gain(top) @ _discounts(top.shape[1])
    idcg = gain(ideal) @ _discounts(ideal.shape[1])
    return _safe_divide(dcg, idcg)


def _linear(grades: npt.NDArray[np.int64]) -> FloatArray:
    import numpy as np

    clipped: FloatArray = np.maximum(grades, 0).astype(np.float64)
    return clipped


def _exponential(grades: npt.NDArray[np.int64]) -> FloatArray:
    import numpy as np

    gains: FloatArray = np.exp2(np.maximum(grades, 0).astype(np.float64)) - 1.0
    return gains


@register("ndcg", "optional", "nDCG with linear gain (trec_eval ndcg_cut)")
def ndcg(r: Rankings, k: int | None) -> FloatArray:
    """nDCG@k, gain g_i, discount log2(i + 1); trec_eval ``ndcg_cut_k`` / ``ndcg``."""
    return _ndcg(r, k, _linear)


@register("ndcg_exp", "optional", "nDCG with exponential gain 2^g - 1")
def ndcg_exp(r: Rankings, k: int | None) -> FloatArray:
    """nDCG@k with gain 2^g_i - 1 and discount log2(i + 1)."""
    return _ndcg(r, k, _exponential)


@register("map", "optional", "mean average precision")
def average_precision(r: Rankings, k: int | None) -> FloatArray:
    """AP = sum(P@i * rel_i) / R over ranks <= k; trec_eval ``map`` / ``map_cut_k``."""
    import numpy as np

    relevant = (r.top(k) >= 1).astype(np.float64)
    ranks = np.arange(1, relevant.shape[1] + 1, dtype=np.float64)
    precision_at = relevant.cumsum(axis=1) / ranks
    return _safe_divide((precision_at * relevant).sum(axis=1), r.num_rel.astype(np.float64))


@register("rprec", "none", "precision at rank R")
def r_precision(r: Rankings, k: int | None) -> FloatArray:
    """R-precision = sum(rel_1..R) / R; trec_eval ``Rprec``."""
    import numpy as np

    cumulative = np.concatenate(
        [np.zeros((len(r.num_rel), 1)), (r.grades >= 1).cumsum(axis=1)], axis=1
    )
    at = np.minimum(r.num_rel, r.grades.shape[1])
    found = cumulative[np.arange(len(at)), at]
    return _safe_divide(found, r.num_rel.astype(np.float64))


@register("coverage", "required", "judged share of the top k")
def coverage(r: Rankings, k: int | None) -> FloatArray:
    """Coverage@k = judged results in the top k / min(k, retrieved); 1 if none retrieved."""
    import numpy as np

    assert k is not None
    judged = r.judged[:, :k].sum(axis=1).astype(np.float64)
    shown = np.minimum(k, r.retrieved).astype(np.float64)
    result: FloatArray = np.where(shown > 0, judged / np.maximum(shown, 1.0), 1.0)
    return result


def evaluate(rankings: Rankings, measures: Sequence[Measure]) -> dict[Measure, FloatArray]:
    """Per-query values of each measure, rows in ``rankings.query_ids`` order."""
    return {m: MEASURES[m.name].kernel(rankings, m.cutoff) for m in measures}


def rankings_from_dicts(
    qrels: Mapping[str, Mapping[str, int]],
    run: Mapping[str, Sequence[str] | Mapping[str, float]],
) -> Rankings:
    """Build ``Rankings`` from plain dicts (for golden cases, tests and small runs).

    ``qrels`` maps query -> document -> grade. ``run`` maps query -> either a
    ranked sequence of document ids (duplicates after the first are dropped)
    or document -> score (ordered by score descending, then id descending).
    Queries are evaluated in sorted order.
    """
    import numpy as np

    evaluated = sorted(q for q, judged in qrels.items() if any(g >= 1 for g in judged.values()))
    evaluated_set = set(evaluated)
    excluded = tuple(sorted(q for q in qrels if q not in evaluated_set))
    ranked: list[list[str]] = []
    for query in evaluated:
        result = run.get(query, ())
        if isinstance(result, Mapping):
            docs = sorted(result, key=lambda d: (-result[d], _Desc(d)))
        else:
            docs = list(dict.fromkeys(result))
        ranked.append(docs)
    width = max([len(docs) for docs in ranked] + [1])
    ideal_width = max([sum(g > 0 for g in qrels[q].values()) for q in evaluated] + [1])
    n = len(evaluated)
    grades = np.zeros((n, width), dtype=np.int64)
    judged = np.zeros((n, width), dtype=bool)
    ideal = np.zeros((n, ideal_width), dtype=np.int64)
    for row, (query, docs) in enumerate(zip(evaluated, ranked, strict=True)):
        judgments = qrels[query]
        for col, doc in enumerate(docs):
            if doc in judgments:
                grades[row, col] = judgments[doc]
                judged[row, col] = True
        positive = sorted((g for g in judgments.values() if g > 0), reverse=True)
        ideal[row, : len(positive)] = positive
    return Rankings(
        query_ids=tuple(evaluated),
        grades=grades,
        judged=judged,
        retrieved=np.array([len(d) for d in ranked], dtype=np.int64),
        num_rel=np.array(
            [sum(g >= 1 for g in qrels[q].values()) for q in evaluated], dtype=np.int64
        ),
        ideal=ideal,
        excluded=excluded,
    )


class _Desc:
    """Sort key that orders strings by UTF-8 bytes, descending."""

    __slots__ = ("key",)

    def __init__(self, text: str):
        self.key = text.encode("utf-8")

    def __lt__(self, other: _Desc) -> bool:
        return self.key > other.key

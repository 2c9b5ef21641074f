"""Graded IR measures as pure, vectorised numpy kernels, with trec_eval semantics.

A measure is named by a string parsed once, ``ndcg@10`` or ``map``; the
parsed ``Measure`` (its ``str`` is the canonical name) is the key of every
result. Kernels take a ``Rankings`` batch (one row per evaluated query) and
return one value per row; ``aggregate`` turns a column into its ``all`` value.

Semantics, matching trec_eval (checked per query against pytrec_eval):

* Grades are integers 0-3 (any integer is accepted); a document is relevant
  when its grade is >= 1. Unjudged documents have grade 0.
* A run's results for a query are de-duplicated by document id (first
  occurrence wins), then ordered by score descending, ties broken by document
  id descending (byte order), as trec_eval does. Ranks are 1-based below.
* The ideal ranking for nDCG uses every judged document with grade > 0 for the
  query, retrieved or not, sorted by grade descending.

Which queries are rows is the query-set rule (``QUERY_SETS``), chosen when the
``Rankings`` are built. A query is *judged* when the qrels hold a judgment for
it, and *in the run* when the run has a result for it; a query that is only in
the run is never a row:

=============  ================================================================
query set      rows
=============  ================================================================
``trec``       the judged queries in the run, with or without a relevant
               document (trec_eval's default; ``ragsnap metrics``' default)
``complete``   every judged query; one missing from the run has nothing
               retrieved (trec_eval ``-c``)
``ragsnap``    the judged queries with a relevant document, in the run or not
               (the default of this Python API and of golden-case scoring)
=============  ================================================================

``Rankings.excluded`` lists the queries of the qrels that are not rows. A row
with no relevant document scores 0 on every measure but ``coverage`` and the
counts; a row with nothing retrieved scores 0 on every measure but
``coverage`` (1) and ``num_rel``.

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
``map``            AP = sum(P@i * rel_i) / R over all ranks (``map``;
                   ``map@k`` stops at k, ``map_cut_k``)
``gm_map``         AP per query, averaged geometrically: its ``all`` value is
                   exp(mean(log(max(AP, 0.00001)))) (``gm_map``; trec_eval
                   prints no per-query value)
``rprec``          sum(rel_1..R) / R (``Rprec``)
``bpref``          sum over the relevant results d of 1 - min(n_d, R) /
                   min(N, R), divided by R; n_d counts the judged
                   non-relevant (grade 0) results ranked above d, N the
                   judged non-relevant documents; unjudged results and
                   negative grades are skipped (``bpref``)
``iprec@L``        interpolated precision at recall level L: max(P@i for i at
                   or below the rank of the n-th relevant result), n =
                   max(1, floor(L * R + 0.9)); 0 when fewer than n relevant
                   results were retrieved (``iprec_at_recall_L``; L from 0
                   to 1 in steps of 0.01, trec_eval's are 0.00, 0.10 ... 1.00)
``num_ret``        results retrieved (``num_ret``)
``num_rel``        R (``num_rel``)
``num_rel_ret``    sum(rel_i) over all ranks (``num_rel_ret``)
``coverage@k``     judged results in the top k / min(k, retrieved); 1 when
                   nothing was retrieved. Not a quality score: it says how far
                   the other scores can be trusted when judgments are
                   incomplete (unjudged results count as grade 0).
=================  ===========================================================

The ``all`` value (``aggregate``) is trec_eval's: the arithmetic mean over the
rows, except the counts ``num_ret``, ``num_rel`` and ``num_rel_ret``, which are
summed, and ``gm_map``'s geometric mean; over no rows it is 0. ``iprec``'s n
is trec_eval 9.0.7's and pytrec_eval's; trec_eval's later sources round L * R
to the nearest integer instead, which differs when its fraction is in [0.1,
0.5).

Names are case-insensitive and take the cutoff after ``@``, ``_`` or ``.``.
Besides ragsnap's own, trec_eval's names (``P_5``, ``success_10``,
``recip_rank``, ``ndcg_cut_10``, ``map_cut_10``, ``Rprec``,
``iprec_at_recall_0.10``) and ir_measures' (``P@5``, ``R@5``, ``nDCG@10``,
``AP``, ``AP@10``, ``RR``, ``RR@10``, ``Success@10``, ``Bpref``,
``IPrec@0.1``, ``NumRet``, ``NumRel``, ``NumRelRet``, ``Judged@10``) parse to
the same measures; the canonical name is ragsnap's.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import UsageError, did_you_mean

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    FloatArray = npt.NDArray[np.float64]
    BoolArray = npt.NDArray[np.bool_]

__all__ = [
    "DEFAULT_MEASURES",
    "GM_FLOOR",
    "MEASURES",
    "QUERY_SETS",
    "Measure",
    "QuerySet",
    "Rankings",
    "aggregate",
    "evaluate",
    "parse_measure",
    "parse_measures",
    "query_set_rule",
    "rankings_from_dicts",
]


@dataclass(frozen=True, slots=True)
class Measure:
    """A parsed measure: a registered name and an optional cutoff. Measures sort
    by name, then cutoff, the uncut one first (``ndcg``, ``ndcg@5``, ``ndcg@10``).

    For a measure whose parameter is a recall level (``iprec``) the cutoff is
    that level in hundredths: ``iprec@0.10`` is ``Measure("iprec", 10)``."""

    name: str
    cutoff: int | None = None

    def __str__(self) -> str:
        if self.cutoff is None:
            return self.name
        spec = MEASURES.get(self.name)
        if spec is not None and spec.cutoff == "level":
            return f"{self.name}@{self.cutoff // 100}.{self.cutoff % 100:02d}"
        return f"{self.name}@{self.cutoff}"

    def __lt__(self, other: Measure) -> bool:
        return (self.name, self.cutoff or 0) < (other.name, other.cutoff or 0)


@dataclass(frozen=True, slots=True)
class _Spec:
    kernel: Callable[[Rankings, int | None], FloatArray]
    cutoff: str  # "required", "optional", "none" or "level" (a recall level, required)
    summary: str
    aggregate: str  # a key of _AGGREGATES


#: Registered measures: canonical name -> kernel, cutoff rule and ``all`` rule.
MEASURES: dict[str, _Spec] = {}
_ALIASES = {
    # trec_eval
    "p": "precision",
    "success": "hit",
    "recip_rank": "mrr",
    "ndcg_cut": "ndcg",
    "map_cut": "map",
    "r-precision": "rprec",
    "iprec_at_recall": "iprec",
    # ir_measures (lower-cased; P, nDCG, Rprec, Success and Bpref already are)
    "ap": "map",
    "rr": "mrr",
    "r": "recall",
    "judged": "coverage",
    "numret": "num_ret",
    "numrel": "num_rel",
    "numrelret": "num_rel_ret",
}

#: trec_eval's floor for AP in ``gm_map``'s geometric mean (its ``MIN_GEO_MEAN``).
GM_FLOOR = 0.00001
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

_MEASURE_RE = re.compile(r"^([a-z_-]+)(?:[@_.](\d+(?:\.\d+)?))?$")


def register(
    name: str, cutoff: str, summary: str, aggregate: str = "mean"
) -> Callable[[Callable[[Rankings, int | None], FloatArray]], Callable[..., FloatArray]]:
    """Register a kernel under ``name`` (decorator); ``aggregate`` names its ``all`` rule."""

    def decorate(
        kernel: Callable[[Rankings, int | None], FloatArray],
    ) -> Callable[[Rankings, int | None], FloatArray]:
        MEASURES[name] = _Spec(kernel, cutoff, summary, aggregate)
        return kernel

    return decorate


def _recall_level(text: str, name: str, param: str | None) -> int:
    """A recall level from 0 to 1 in steps of 0.01, in hundredths."""
    from decimal import Decimal

    example = f"e.g. {name}@0.10 (trec_eval's levels are 0.00, 0.10 ... 1.00)"
    if param is None:
        raise UsageError(f"measure {name!r} needs a recall level from 0 to 1, {example}")
    hundredths = Decimal(param) * 100
    if hundredths > 100 or hundredths != hundredths.to_integral_value():
        raise UsageError(
            f"measure {text!r}: the recall level must be from 0 to 1 in steps of 0.01, {example}"
        )
    return int(hundredths)


def parse_measure(text: str) -> Measure:
    """Parse ``ndcg@10``, ``P_5``, ``recall.10``, ``map``, ``iprec@0.1`` ... into a ``Measure``."""
    match = _MEASURE_RE.match(text.strip().lower())
    name = match.group(1) if match else ""
    name = _ALIASES.get(name, name)
    spec = MEASURES.get(name)
    if match is None or spec is None:
        known = ", ".join(sorted(MEASURES))
        meant = did_you_mean(name, [*MEASURES, *_ALIASES]) if name else None
        hint = f" (did you mean {meant + text.strip()[len(name) :]!r}?)" if meant else ""
        raise UsageError(f"unknown measure {text!r}{hint}; use one of {known}, e.g. ndcg@10")
    param = match.group(2)
    if spec.cutoff == "level":
        return Measure(name, _recall_level(text, name, param))
    if param is not None and not param.isdigit():
        raise UsageError(f"measure {text!r}: the cutoff must be a whole number, e.g. {name}@10")
    cutoff = int(param) if param else None
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
    relevant documents are judged, ``num_nonrel[q]`` how many are judged with
    grade 0 and ``ideal[q]`` the positive grades sorted descending
    (zero-padded). ``excluded`` lists the queries of the qrels that the
    query-set rule left out, which no measure averages over.
    """

    query_ids: tuple[str, ...]
    grades: npt.NDArray[np.int64]
    judged: npt.NDArray[np.bool_]
    retrieved: npt.NDArray[np.int64]
    num_rel: npt.NDArray[np.int64]
    num_nonrel: npt.NDArray[np.int64]
    ideal: npt.NDArray[np.int64]
    excluded: tuple[str, ...] = ()

    def top(self, k: int | None) -> npt.NDArray[np.int64]:
        """Grades of the first ``k`` ranks (all ranks when ``k`` is None)."""
        return self.grades if k is None else self.grades[:, :k]


@dataclass(frozen=True, slots=True)
class QuerySet:
    """A query-set rule: a judged query is a row when it is in the run (if
    ``in_run``) and has a relevant document (if ``relevant``)."""

    in_run: bool
    relevant: bool
    summary: str

    def rows(self, judged: BoolArray, in_run: BoolArray, relevant: BoolArray) -> BoolArray:
        """Which queries are rows, from per-query flags."""
        keep = judged
        if self.in_run:
            keep = keep & in_run
        if self.relevant:
            keep = keep & relevant
        return keep


#: Query-set rules by name (see the module docstring).
QUERY_SETS: dict[str, QuerySet] = {
    "trec": QuerySet(True, False, "judged queries in the run (trec_eval)"),
    "complete": QuerySet(False, False, "every judged query (trec_eval -c)"),
    "ragsnap": QuerySet(False, True, "judged queries with a relevant document"),
}


def query_set_rule(name: str) -> QuerySet:
    """The rule registered as ``name``."""
    rule = QUERY_SETS.get(name)
    if rule is None:
        raise UsageError(f"unknown query set {name!r}; use one of {', '.join(QUERY_SETS)}")
    return rule


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


@register("gm_map", "none", "AP, averaged geometrically (floor 0.00001)", "geometric")
def gm_map(r: Rankings, k: int | None) -> FloatArray:
    """AP per query; ``aggregate`` takes exp(mean(log(max(AP, 0.00001)))); ``gm_map``."""
    return average_precision(r, None)


@register("bpref", "none", "binary preference of relevant over judged non-relevant results")
def bpref(r: Rankings, k: int | None) -> FloatArray:
    """bpref = sum over relevant results d of 1 - min(n_d, R) / min(N, R), over R;
    n_d judged grade-0 results above d, N judged grade-0 documents; ``bpref``."""
    import numpy as np

    nonrel_above = (r.judged & (r.grades == 0)).cumsum(axis=1).astype(np.float64)
    num_rel = r.num_rel.astype(np.float64)[:, None]
    scale = np.minimum(r.num_nonrel, r.num_rel).astype(np.float64)[:, None]
    penalty = _safe_divide(np.minimum(nonrel_above, num_rel), scale)
    credit: FloatArray = np.where(r.grades >= 1, 1.0 - penalty, 0.0).sum(axis=1)
    return _safe_divide(credit, r.num_rel.astype(np.float64))


@register("iprec", "level", "interpolated precision at a recall level")
def interpolated_precision(r: Rankings, k: int | None) -> FloatArray:
    """iprec@L = max(P@i, i >= rank of the n-th relevant result), n = max(1,
    floor(L * R + 0.9)), 0 if fewer were retrieved; ``iprec_at_recall_L``."""
    import numpy as np

    assert k is not None
    found = (r.grades >= 1).cumsum(axis=1)
    precision_at = found / np.arange(1, found.shape[1] + 1, dtype=np.float64)
    best_below = np.maximum.accumulate(precision_at[:, ::-1], axis=1)[:, ::-1]
    needed = np.maximum(np.floor(k / 100 * r.num_rel + 0.9), 1.0).astype(np.int64)
    reached = found[:, -1] >= needed
    at = (found >= needed[:, None]).argmax(axis=1)
    result: FloatArray = np.where(reached, best_below[np.arange(len(at)), at], 0.0)
    return result


@register("num_ret", "none", "results retrieved (summed)", "sum")
def num_ret(r: Rankings, k: int | None) -> FloatArray:
    """Results retrieved, after de-duplication; ``num_ret``."""
    import numpy as np

    return r.retrieved.astype(np.float64)


@register("num_rel", "none", "relevant documents judged (summed)", "sum")
def num_rel(r: Rankings, k: int | None) -> FloatArray:
    """R, retrieved or not; ``num_rel``."""
    import numpy as np

    return r.num_rel.astype(np.float64)


@register("num_rel_ret", "none", "relevant results retrieved (summed)", "sum")
def num_rel_ret(r: Rankings, k: int | None) -> FloatArray:
    """sum(rel_i) over all ranks; ``num_rel_ret``."""
    import numpy as np

    result: FloatArray = (r.grades >= 1).sum(axis=1).astype(np.float64)
    return result


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


def _mean(values: FloatArray) -> float:
    return float(values.mean())


def _sum(values: FloatArray) -> float:
    return float(values.sum())


def _geometric(values: FloatArray) -> float:
    import numpy as np

    return float(np.exp(np.log(np.maximum(values, GM_FLOOR)).mean()))


#: ``all`` rules by name: trec_eval's mean, sum (counts) and floored geometric mean.
_AGGREGATES: dict[str, Callable[[FloatArray], float]] = {
    "mean": _mean,
    "sum": _sum,
    "geometric": _geometric,
}


def aggregate(measure: Measure, values: FloatArray) -> float:
    """The ``all`` value of ``measure`` from its per-query ``values`` (one per
    row): the mean, the sum for counts, the floored geometric mean for
    ``gm_map``; 0 when there are no rows."""
    if values.size == 0:
        return 0.0
    return _AGGREGATES[MEASURES[measure.name].aggregate](values)


def rankings_from_dicts(
    qrels: Mapping[str, Mapping[str, int]],
    run: Mapping[str, Sequence[str] | Mapping[str, float]],
    query_set: str = "ragsnap",
) -> Rankings:
    """Build ``Rankings`` from plain dicts (for golden cases, tests and small runs).

    ``qrels`` maps query -> document -> grade. ``run`` maps query -> either a
    ranked sequence of document ids (duplicates after the first are dropped)
    or document -> score (ordered by score descending, then id descending).
    ``query_set`` names the rule choosing the rows (``QUERY_SETS``); a query
    is judged when it has a judgment and in the run when it has a result.
    Queries are evaluated in sorted order.
    """
    import numpy as np

    rule = query_set_rule(query_set)
    names = sorted(qrels)
    keep = rule.rows(
        np.array([len(qrels[q]) > 0 for q in names], dtype=bool),
        np.array([len(run.get(q, ())) > 0 for q in names], dtype=bool),
        np.array([any(g >= 1 for g in qrels[q].values()) for q in names], dtype=bool),
    )
    evaluated = [q for q, row in zip(names, keep.tolist(), strict=True) if row]
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
        num_nonrel=np.array(
            [sum(g == 0 for g in qrels[q].values()) for q in evaluated], dtype=np.int64
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

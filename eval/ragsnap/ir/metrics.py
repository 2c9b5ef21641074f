"""Graded IR measures as pure, vectorised numpy kernels, with trec_eval semantics.

A measure is named by a string parsed once, ``ndcg@10`` or ``map``; the
parsed ``Measure`` (its ``str`` is the canonical name) is the key of every
result. Kernels take a ``Rankings`` batch (one row per evaluated query) and
return one value per row; ``aggregate`` turns a column into its ``all`` value.

Semantics, matching trec_eval (checked per query against pytrec_eval):

* Grades are integers 0-3 (any integer is accepted); a document is relevant
  when its grade is >= 1, or >= the relevance level the ``Rankings`` were
  built with (trec_eval ``-l``). Unjudged documents have grade 0; a judged
  one with a grade below the level and not negative is judged non-relevant,
  and a negative grade is trec_eval's "in the pool, not judged".
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
                   non-relevant (grade 0 to level - 1) results above d, N the
                   judged non-relevant documents; unjudged results and
                   negative grades are skipped (``bpref``)
``iprec@L``        interpolated precision at recall level L: max(P@i for i at
                   or below the rank of the n-th relevant result), n =
                   max(1, floor(L * R + 0.9)) by default (the trec_eval
                   rule, below); 0 when fewer than n relevant
                   results were retrieved (``iprec_at_recall_L``; L from 0
                   to 1 in steps of 0.01, trec_eval's are 0.00, 0.10 ... 1.00)
``11pt_avg``       the mean of iprec@0.00, 0.10 ... 1.00 (``11pt_avg``)
``rprec_mult@x``   P@n, n = floor(x * R + 0.9) (``Rprec_mult_x``; x > 0 in
                   steps of 0.01, trec_eval's are 0.20, 0.40 ... 2.00)
relative_          ``relative_precision@k`` = sum(rel_1..k) / min(k, R)
precision@k        (``relative_P_k``)
``set_*``          over the whole ranking: ``set_precision`` num_rel_ret /
                   num_ret, ``set_recall`` / R, ``set_relative_precision``
                   / min(num_ret, R); ``set_map`` num_rel_ret^2 / (num_ret *
                   R); ``set_f`` 2PR / (P + R) of the first two (``set_P``,
                   ``set_recall``, ``set_relative_P``, ``set_map``,
                   ``set_F``)
``utility``        num_rel_ret - (num_ret - num_rel_ret) (``utility``, its
                   default coefficients)
``gm_bpref``       bpref, averaged geometrically like ``gm_map``
``infap``          inferred AP over a sampled pool (``infAP``; AP when every
                   result is judged; see ``inferred_ap``)
``bing``, ``g``    trec_eval's experimental gain measures ``binG`` and ``G``
``ndcg_rel``,      nDCG averaged over the relevant documents, and over the
``rndcg``          ranks where the ideal gain drops (``ndcg_rel``, ``Rndcg``)
``relstring@n``    text: each of the first n (default 10) results' grade
                   (``relstring``; ``texts`` gives it; no ``all`` value)
num_nonrel_        judged non-relevant results retrieved
judged_ret         (``num_nonrel_judged_ret``)
``num_ret``        results retrieved (``num_ret``)
``num_rel``        R (``num_rel``)
``num_rel_ret``    sum(rel_i) over all ranks (``num_rel_ret``)
``coverage@k``     judged results in the top k / min(k, retrieved); 1 when
                   nothing was retrieved. Not a quality score: it says how far
                   the other scores can be trusted when judgments are
                   incomplete (unjudged results count as grade 0).
=================  ===========================================================

The ``all`` value (``aggregate``) is trec_eval's: the arithmetic mean over the
rows, except the counts ``num_ret``, ``num_rel``, ``num_rel_ret`` and
``num_nonrel_judged_ret``, which are summed, and the geometric means of
``gm_map`` and ``gm_bpref``; over no rows it is 0. ``iprec``'s and
``11pt_avg``'s n follows a trec_eval release (``evaluate(..., trec_eval=)``,
``TREC_EVAL_RULES``): ``"9"`` (the default: trec_eval 9.0.8, the current
release, and pytrec_eval) takes floor(L * R + 0.9); ``"10"`` (trec_eval
10.0-rc2) rounds L * R half away from zero (C's ``lround``). They differ when
the fraction of L * R is in [0.1, 0.5), computed in double precision as
trec_eval does (0.7 * 3 is 2.0999999999999996). ``Rankings.cut(n)`` keeps
each query's first n results (trec_eval ``-M``). ``TREC_SETS`` lists
trec_eval's ``official`` and ``all_trec`` sets as ragsnap measures.

Names are case-insensitive and take the cutoff after ``@``, ``_`` or ``.``.
Besides ragsnap's own, trec_eval's names (``P_5``, ``success_10``,
``recip_rank``, ``ndcg_cut_10``, ``map_cut_10``, ``Rprec``,
``iprec_at_recall_0.10``, ``relative_P_5``, ``Rprec_mult_0.20``, ``set_P``,
``set_relative_P``, ``set_F``, ``infAP``, ``binG``, ``G``, ``Rndcg``) and
ir_measures' (``P@5``, ``R@5``, ``nDCG@10``, ``AP``, ``AP@10``, ``RR``,
``RR@10``, ``Success@10``, ``Bpref``, ``IPrec@0.1``, ``NumRet``, ``NumRel``,
``NumRelRet``, ``Judged@10``) parse to the same measures; the canonical name
is ragsnap's.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from ..errors import UsageError, did_you_mean

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    FloatArray = npt.NDArray[np.float64]
    BoolArray = npt.NDArray[np.bool_]

__all__ = [
    "DEFAULT_MEASURES",
    "DEFAULT_TREC_EVAL",
    "GM_FLOOR",
    "MEASURES",
    "QUERY_SETS",
    "TREC_EVAL_RULES",
    "TREC_SETS",
    "TREC_SETS_MISSING",
    "Measure",
    "QuerySet",
    "Rankings",
    "aggregate",
    "evaluate",
    "parse_measure",
    "parse_measures",
    "query_set_rule",
    "rankings_from_dicts",
    "texts",
]


@dataclass(frozen=True, slots=True)
class Measure:
    """A parsed measure: a registered name and an optional cutoff. Measures sort
    by name, then cutoff, the uncut one first (``ndcg``, ``ndcg@5``, ``ndcg@10``).

    For a measure whose parameter is a fraction (a recall level of ``iprec``,
    a multiple of R of ``rprec_mult``) the cutoff is that fraction in
    hundredths: ``iprec@0.10`` is ``Measure("iprec", 10)``."""

    name: str
    cutoff: int | None = None

    def __str__(self) -> str:
        if self.cutoff is None:
            return self.name
        spec = MEASURES.get(self.name)
        if spec is not None and spec.cutoff in _FRACTIONS:
            return f"{self.name}@{self.cutoff // 100}.{self.cutoff % 100:02d}"
        return f"{self.name}@{self.cutoff}"

    def __lt__(self, other: Measure) -> bool:
        return (self.name, self.cutoff or 0) < (other.name, other.cutoff or 0)


@dataclass(frozen=True, slots=True)
class _Spec:
    kernel: Callable[..., FloatArray]  # (rankings, cutoff) or, if versioned, (..., rule)
    cutoff: str  # "required", "optional", "none", or a fraction: "level" (0-1), "multiple"
    summary: str
    aggregate: str  # a key of _AGGREGATES, or "text" (per-query strings, no ``all`` line)
    versioned: bool = False  # the kernel also takes a trec_eval rule (TREC_EVAL_RULES)
    default: int | None = None  # the cutoff when none is given (text measures)


#: cutoff kinds whose parameter is a fraction, kept in hundredths
_FRACTIONS = ("level", "multiple")


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
    "relative_p": "relative_precision",
    "set_p": "set_precision",
    "set_relative_p": "set_relative_precision",
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

#: trec_eval releases whose rules differ, by major version: ``"9"`` (9.0.8, the
#: current release) and ``"10"`` (10.0-rc2). Only the recall levels of ``iprec``
#: and ``11pt_avg`` differ (see the module docstring).
TREC_EVAL_RULES = ("9", "10")
DEFAULT_TREC_EVAL = "9"

_CUTS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
_OFFICIAL = (
    "num_ret",
    "num_rel",
    "num_rel_ret",
    "map",
    "gm_map",
    "rprec",
    "bpref",
    "mrr",
    *(f"iprec@{level / 100:.2f}" for level in range(0, 101, 10)),
    *(f"precision@{k}" for k in _CUTS),
)
#: trec_eval's measure sets (``-m official``, ``-m all_trec``) in its print order,
#: as ragsnap measures with trec_eval's default parameters; trec_eval also prints
#: ``runid`` and ``num_q``, which ``ragsnap metrics`` prints itself.
TREC_SETS: dict[str, tuple[str, ...]] = {
    "official": _OFFICIAL,
    "all_trec": (
        *_OFFICIAL,
        "relstring",
        *(f"recall@{k}" for k in _CUTS),
        "infap",
        "gm_bpref",
        *(f"rprec_mult@{m / 100:.2f}" for m in range(20, 201, 20)),
        "utility",
        "11pt_avg",
        "bing",
        "g",
        "ndcg",
        "ndcg_rel",
        "rndcg",
        *(f"ndcg@{k}" for k in _CUTS),
        *(f"map@{k}" for k in _CUTS),
        *(f"relative_precision@{k}" for k in _CUTS),
        "hit@1",
        "hit@5",
        "hit@10",
        "set_precision",
        "set_relative_precision",
        "set_recall",
        "set_map",
        "set_f",
        "num_nonrel_judged_ret",
    ),
}
#: measures of a trec_eval release's ``all_trec`` that ragsnap does not compute
TREC_SETS_MISSING: dict[str, tuple[str, ...]] = {
    "9": (),
    "10": ("rbp", "rbp_resid", "unj_5", "unj_10", "unj_20"),
}

_MEASURE_RE = re.compile(r"^(11pt_avg|[a-z_-]+)(?:[@_.](\d+(?:\.\d+)?))?$")


def register(
    name: str,
    cutoff: str,
    summary: str,
    aggregate: str = "mean",
    *,
    versioned: bool = False,
    default: int | None = None,
) -> Callable[[Callable[..., FloatArray]], Callable[..., FloatArray]]:
    """Register a kernel under ``name`` (decorator); ``aggregate`` names its ``all``
    rule; a ``versioned`` kernel takes the trec_eval rule as a third argument."""

    def decorate(kernel: Callable[..., FloatArray]) -> Callable[..., FloatArray]:
        MEASURES[name] = _Spec(kernel, cutoff, summary, aggregate, versioned, default)
        return kernel

    return decorate


def _fraction(text: str, name: str, param: str | None, kind: str) -> int:
    """A fraction in steps of 0.01, in hundredths: a recall level from 0 to 1
    (``level``) or a positive multiple (``multiple``)."""
    from decimal import Decimal

    if kind == "level":
        what, example = "a recall level from 0 to 1", "0.10 (trec_eval's: 0.00, 0.10 ... 1.00)"
    else:
        what, example = "a multiple of R above 0", "0.20 (trec_eval's: 0.20, 0.40 ... 2.00)"
    example = f"e.g. {name}@{example}"
    if param is None:
        raise UsageError(f"measure {name!r} needs {what}, {example}")
    hundredths = Decimal(param) * 100
    out_of_range = hundredths > 100 if kind == "level" else hundredths == 0
    if out_of_range or hundredths != hundredths.to_integral_value():
        raise UsageError(f"measure {text!r}: give {what} in steps of 0.01, {example}")
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
    if spec.cutoff in _FRACTIONS:
        return Measure(name, _fraction(text, name, param, spec.cutoff))
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
    query-set rule left out, which no measure averages over. A document is
    relevant when its grade is at least ``relevance_level`` (trec_eval ``-l``;
    ``num_rel`` and ``num_nonrel`` were counted with it).
    """

    query_ids: tuple[str, ...]
    grades: npt.NDArray[np.int64]
    judged: npt.NDArray[np.bool_]
    retrieved: npt.NDArray[np.int64]
    num_rel: npt.NDArray[np.int64]
    num_nonrel: npt.NDArray[np.int64]
    ideal: npt.NDArray[np.int64]
    excluded: tuple[str, ...] = ()
    relevance_level: int = 1

    def top(self, k: int | None) -> npt.NDArray[np.int64]:
        """Grades of the first ``k`` ranks (all ranks when ``k`` is None)."""
        return self.grades if k is None else self.grades[:, :k]

    def relevant(self, k: int | None = None) -> BoolArray:
        """Whether the result at each of the first ``k`` ranks is relevant."""
        relevant: BoolArray = self.top(k) >= self.relevance_level
        return relevant

    def judged_nonrelevant(self) -> BoolArray:
        """Whether each result is judged and not relevant (0 <= grade < level)."""
        nonrel: BoolArray = self.judged & (self.grades >= 0) & (self.grades < self.relevance_level)
        return nonrel

    def cut(self, depth: int) -> Rankings:
        """The rankings with each query's results cut to the first ``depth``
        (trec_eval ``-M``: results past it are not retrieved)."""
        import numpy as np

        if depth < 1:
            raise UsageError(f"-M {depth}: give at least 1 result per query")
        return replace(
            self,
            grades=self.grades[:, :depth],
            judged=self.judged[:, :depth],
            retrieved=np.minimum(self.retrieved, depth),
        )


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
    result: FloatArray = r.relevant(k).sum(axis=1) / k
    return result


@register("recall", "optional", "relevant results in the top k / relevant documents")
def recall(r: Rankings, k: int | None) -> FloatArray:
    """Recall@k = sum(rel_1..k) / R; trec_eval ``recall_k``."""
    return _safe_divide(r.relevant(k).sum(axis=1).astype(float), r.num_rel.astype(float))


@register("hit", "required", "1 if a relevant result is in the top k")
def hit(r: Rankings, k: int | None) -> FloatArray:
    """Hit@k (success): 1 if any relevant result ranks <= k; trec_eval ``success_k``."""
    result: FloatArray = r.relevant(k).any(axis=1).astype(float)
    return result


@register("mrr", "optional", "1 / rank of the first relevant result within k")
def mrr(r: Rankings, k: int | None) -> FloatArray:
    """MRR@k = 1 / (first relevant rank) when it is <= k, else 0; ``recip_rank``."""
    import numpy as np

    relevant = r.relevant(k)
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

    relevant = r.relevant(k).astype(np.float64)
    ranks = np.arange(1, relevant.shape[1] + 1, dtype=np.float64)
    precision_at = relevant.cumsum(axis=1) / ranks
    return _safe_divide((precision_at * relevant).sum(axis=1), r.num_rel.astype(np.float64))


@register("rprec", "none", "precision at rank R")
def r_precision(r: Rankings, k: int | None) -> FloatArray:
    """R-precision = sum(rel_1..R) / R; trec_eval ``Rprec``."""
    import numpy as np

    cumulative = np.concatenate(
        [np.zeros((len(r.num_rel), 1)), r.relevant().cumsum(axis=1)], axis=1
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

    nonrel_above = r.judged_nonrelevant().cumsum(axis=1).astype(np.float64)
    num_rel = r.num_rel.astype(np.float64)[:, None]
    scale = np.minimum(r.num_nonrel, r.num_rel).astype(np.float64)[:, None]
    penalty = _safe_divide(np.minimum(nonrel_above, num_rel), scale)
    credit: FloatArray = np.where(r.relevant(), 1.0 - penalty, 0.0).sum(axis=1)
    return _safe_divide(credit, r.num_rel.astype(np.float64))


def _relevant_needed(
    level: float, num_rel: npt.NDArray[np.int64], rule: str
) -> npt.NDArray[np.int64]:
    """How many relevant results reach recall ``level``: trec_eval 9 takes
    floor(L * R + 0.9), trec_eval 10 rounds L * R half away from zero (C's
    ``lround``); at least 1 either way (0 and 1 give the same value)."""
    import numpy as np

    if rule not in TREC_EVAL_RULES:
        raise UsageError(
            f"unknown trec_eval rule {rule!r}; use one of {', '.join(TREC_EVAL_RULES)}"
        )
    product = level * num_rel.astype(np.float64)
    if rule == "9":
        needed = np.floor(product + 0.9)
    else:
        whole = np.floor(product)
        needed = np.where(product - whole >= 0.5, whole + 1.0, whole)
    result: npt.NDArray[np.int64] = np.maximum(needed, 1.0).astype(np.int64)
    return result


def _iprec(r: Rankings, level: float, rule: str) -> FloatArray:
    import numpy as np

    found = r.relevant().cumsum(axis=1)
    precision_at = found / np.arange(1, found.shape[1] + 1, dtype=np.float64)
    best_below = np.maximum.accumulate(precision_at[:, ::-1], axis=1)[:, ::-1]
    needed = _relevant_needed(level, r.num_rel, rule)
    reached = found[:, -1] >= needed
    at = (found >= needed[:, None]).argmax(axis=1)
    result: FloatArray = np.where(reached, best_below[np.arange(len(at)), at], 0.0)
    return result


@register("iprec", "level", "interpolated precision at a recall level", versioned=True)
def interpolated_precision(r: Rankings, k: int | None, rule: str = DEFAULT_TREC_EVAL) -> FloatArray:
    """iprec@L = max(P@i, i >= rank of the n-th relevant result), n by ``rule``
    (``_relevant_needed``), 0 if fewer were retrieved; ``iprec_at_recall_L``."""
    assert k is not None
    return _iprec(r, k / 100, rule)


#: trec_eval's eleven recall levels (``11pt_avg``, and ``iprec`` in ``all_trec``)
ELEVEN_LEVELS = tuple(range(0, 101, 10))


@register("11pt_avg", "none", "iprec averaged over recall 0.0, 0.1 ... 1.0", versioned=True)
def eleven_point_average(r: Rankings, k: int | None, rule: str = DEFAULT_TREC_EVAL) -> FloatArray:
    """The mean of iprec@0.00, 0.10 ... 1.00 (``rule`` as iprec's); ``11pt_avg``."""
    import numpy as np

    total = np.zeros(r.num_rel.shape, dtype=np.float64)
    for level in ELEVEN_LEVELS:
        total += _iprec(r, level / 100, rule)
    result: FloatArray = total / len(ELEVEN_LEVELS)
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

    result: FloatArray = r.relevant().sum(axis=1).astype(np.float64)
    return result


@register("relative_precision", "required", "relevant results in the top k / min(k, R)")
def relative_precision(r: Rankings, k: int | None) -> FloatArray:
    """sum(rel_1..k) / min(k, R); trec_eval ``relative_P_k``."""
    import numpy as np

    assert k is not None
    found = r.relevant(k).sum(axis=1).astype(np.float64)
    return _safe_divide(found, np.minimum(r.num_rel, k).astype(np.float64))


@register("rprec_mult", "multiple", "precision at rank x * R")
def rprec_mult(r: Rankings, k: int | None) -> FloatArray:
    """P@n with n = floor(x * R + 0.9), 0 when n is 0; trec_eval ``Rprec_mult_x``."""
    import numpy as np

    assert k is not None
    depth = np.floor(k / 100 * r.num_rel.astype(np.float64) + 0.9).astype(np.int64)
    found = np.concatenate([np.zeros((len(depth), 1)), r.relevant().cumsum(axis=1)], axis=1)
    at = found[np.arange(len(depth)), np.minimum(depth, found.shape[1] - 1)]
    return _safe_divide(at, depth.astype(np.float64))


def _set_counts(r: Rankings) -> tuple[FloatArray, FloatArray, FloatArray]:
    """(results retrieved, relevant results retrieved, R), as floats."""
    import numpy as np

    found: FloatArray = r.relevant().sum(axis=1).astype(np.float64)
    return r.retrieved.astype(np.float64), found, r.num_rel.astype(np.float64)


@register("set_precision", "none", "relevant results / results retrieved")
def set_precision(r: Rankings, k: int | None) -> FloatArray:
    """num_rel_ret / num_ret; trec_eval ``set_P``."""
    retrieved, found, _ = _set_counts(r)
    return _safe_divide(found, retrieved)


@register("set_recall", "none", "relevant results / relevant documents")
def set_recall(r: Rankings, k: int | None) -> FloatArray:
    """num_rel_ret / R; trec_eval ``set_recall``."""
    _, found, relevant = _set_counts(r)
    return _safe_divide(found, relevant)


@register("set_relative_precision", "none", "relevant results / min(retrieved, R)")
def set_relative_precision(r: Rankings, k: int | None) -> FloatArray:
    """num_rel_ret / min(num_ret, R); trec_eval ``set_relative_P``."""
    import numpy as np

    retrieved, found, relevant = _set_counts(r)
    return _safe_divide(found, np.minimum(retrieved, relevant))


@register("set_map", "none", "set precision times set recall")
def set_map(r: Rankings, k: int | None) -> FloatArray:
    """num_rel_ret^2 / (num_ret * R); trec_eval ``set_map``."""
    retrieved, found, relevant = _set_counts(r)
    return _safe_divide(found * found, retrieved * relevant)


@register("set_f", "none", "harmonic mean of set precision and set recall")
def set_f(r: Rankings, k: int | None) -> FloatArray:
    """2 * P * R / (P + R) of set precision and recall, 0 when both are 0;
    trec_eval ``set_F`` (its default beta 1)."""
    precision, recall_ = set_precision(r, None), set_recall(r, None)
    return _safe_divide(2.0 * precision * recall_, precision + recall_)


@register("num_nonrel_judged_ret", "none", "judged non-relevant results (summed)", "sum")
def num_nonrel_judged_ret(r: Rankings, k: int | None) -> FloatArray:
    """Results judged with 0 <= grade < relevance level; ``num_nonrel_judged_ret``."""
    import numpy as np

    result: FloatArray = r.judged_nonrelevant().sum(axis=1).astype(np.float64)
    return result


@register("utility", "none", "relevant results retrieved - others retrieved")
def utility(r: Rankings, k: int | None) -> FloatArray:
    """num_rel_ret - (num_ret - num_rel_ret): trec_eval ``utility`` with its
    default coefficients 1, -1, 0, 0."""
    retrieved, found, _ = _set_counts(r)
    result: FloatArray = found - (retrieved - found)
    return result


@register("gm_bpref", "none", "bpref, averaged geometrically (floor 0.00001)", "geometric")
def gm_bpref(r: Rankings, k: int | None) -> FloatArray:
    """bpref per query; ``aggregate`` takes its floored geometric mean; ``gm_bpref``."""
    return bpref(r, None)


#: trec_eval's INFAP_EPSILON
_INFAP_EPSILON = 0.00001


@register("infap", "none", "inferred AP over a sampled judgment pool")
def inferred_ap(r: Rankings, k: int | None) -> FloatArray:
    """infAP (Yilmaz and Aslam): at each relevant result at rank i (1-based),
    1 when i = 1, else 1/i + ((i-1)/i) * (p/(i-1)) * (rel + eps) / (rel + nonrel
    + 2 eps), where above it p results are in the pool (judged, a negative
    grade included), rel are relevant and nonrel judged non-relevant; eps
    0.00001; the sum over R; trec_eval ``infAP`` (equal to AP when every
    result is judged)."""
    import numpy as np

    relevant = r.relevant()
    nonrel = r.judged_nonrelevant()
    rel_above = relevant.cumsum(axis=1) - relevant
    nonrel_above = nonrel.cumsum(axis=1) - nonrel
    pooled_above = r.judged.cumsum(axis=1) - r.judged
    rank = np.arange(1, relevant.shape[1] + 1, dtype=np.float64)
    before = rank - 1.0
    term = 1.0 / rank + (before / rank) * _safe_divide(
        pooled_above.astype(np.float64), np.broadcast_to(before, pooled_above.shape).copy()
    ) * ((rel_above + _INFAP_EPSILON) / (rel_above + nonrel_above + 2 * _INFAP_EPSILON))
    term[:, 0] = 1.0
    total: FloatArray = np.where(relevant, term, 0.0).sum(axis=1)
    return _safe_divide(total, r.num_rel.astype(np.float64))


def _gains(r: Rankings) -> FloatArray:
    """Each result's gain: its grade, 0 when unjudged or negative."""
    import numpy as np

    gains: FloatArray = np.maximum(r.grades, 0).astype(np.float64)
    return gains


def _padded(values: FloatArray, width: int) -> FloatArray:
    import numpy as np

    if values.shape[1] >= width:
        return values
    return np.pad(values, ((0, 0), (0, width - values.shape[1])))


@register("bing", "none", "binary G: 1 / log2(2 + non-relevant above), over R")
def binary_g(r: Rankings, k: int | None) -> FloatArray:
    """sum over relevant results of 1 / log2(2 + n), n the results above it that
    are not relevant, divided by R; trec_eval ``binG``."""
    import numpy as np

    relevant = r.relevant()
    above = np.arange(relevant.shape[1]) - (relevant.cumsum(axis=1) - relevant)
    credit = np.where(relevant, 1.0 / np.log2(2.0 + above), 0.0).sum(axis=1)
    return _safe_divide(credit, r.num_rel.astype(np.float64))


@register("g", "none", "normalised gain G (trec_eval's experimental G)")
def normalised_g(r: Rankings, k: int | None) -> FloatArray:
    """G = sum over results of g_i / log2(2 + C_i - S_i), over the sum of the
    ideal gains; S_i sums the gains through rank i, C_i sums max(ideal_j, 1)
    through rank i (ideal_j the j-th largest positive grade, 0 past them);
    trec_eval ``G`` (gains are grades)."""
    import numpy as np

    width = max(r.grades.shape[1], r.ideal.shape[1])
    gains = _padded(_gains(r), width)
    ideal = _padded(r.ideal.astype(np.float64), width)
    cost = np.maximum(ideal, 1.0).cumsum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        shares = np.where(gains != 0, gains / np.log2(2.0 + cost - gains.cumsum(axis=1)), 0.0)
    return _safe_divide(shares.sum(axis=1), r.ideal.sum(axis=1).astype(np.float64))


def _dcg_curves(r: Rankings, width: int) -> tuple[FloatArray, FloatArray, FloatArray]:
    """(gains, DCG through each rank, ideal DCG through each rank), ``width`` ranks."""
    import numpy as np

    gains = _padded(_gains(r), width)
    ideal = _padded(r.ideal.astype(np.float64), width)
    discount = _discounts(width)
    return gains, (gains * discount).cumsum(axis=1), (ideal * discount).cumsum(axis=1)


@register("ndcg_rel", "none", "nDCG averaged over the relevant documents")
def ndcg_rel(r: Rankings, k: int | None) -> FloatArray:
    """The mean over the n positive-grade documents of nDCG at each one's rank;
    one not retrieved counts nDCG at the end of the ranking; trec_eval
    ``ndcg_rel``."""
    import numpy as np

    width = max(r.grades.shape[1], r.ideal.shape[1], 1)
    gains, dcg, idcg = _dcg_curves(r, width)
    positive = (r.ideal > 0).sum(axis=1).astype(np.float64)
    ndcg_at = _safe_divide(dcg, idcg)
    at_found = np.where(gains > 0, ndcg_at, 0.0).sum(axis=1)
    missed = positive - (gains > 0).sum(axis=1)
    final = _safe_divide(dcg[:, -1], idcg[:, -1])
    return _safe_divide(at_found + missed * final, positive)


@register("rndcg", "none", "nDCG averaged where the ideal gain changes")
def r_ndcg(r: Rankings, k: int | None) -> FloatArray:
    """The mean of nDCG@n over the ranks n where the ideal ranking's gain
    drops (the last positive one included), plus nDCG at the end of the ranking
    when it is longer than the positive documents + 1; 0 when R is 0;
    trec_eval ``Rndcg``."""
    import numpy as np

    width = max(r.grades.shape[1], r.ideal.shape[1] + 1)
    _, dcg, idcg = _dcg_curves(r, width)
    ideal = _padded(r.ideal.astype(np.float64), width)
    drops = np.zeros(ideal.shape, dtype=bool)  # drops[:, n]: gain at rank n + 1 < at rank n
    drops[:, :-1] = ideal[:, 1:] != ideal[:, :-1]
    ndcg_at = _safe_divide(dcg, idcg)
    total = np.where(drops, ndcg_at, 0.0).sum(axis=1)
    count = drops.sum(axis=1).astype(np.float64)
    positive = (r.ideal > 0).sum(axis=1)
    longer = r.retrieved > positive + 1
    total += np.where(longer, _safe_divide(dcg[:, -1], idcg[:, -1]), 0.0)
    count += longer
    result: FloatArray = np.where(r.num_rel > 0, _safe_divide(total, count), 0.0)
    return result


@register("relstring", "optional", "relevance of the first n results, as text", "text", default=10)
def relstring(r: Rankings, k: int | None) -> FloatArray:
    """No number: ``texts`` gives its per-query strings; trec_eval ``relstring``."""
    import numpy as np

    return np.zeros(len(r.query_ids), dtype=np.float64)


def texts(r: Rankings, measure: Measure) -> list[str]:
    """The per-query strings of a text measure: ``relstring@n`` is one
    character per result of the first n (default 10): its grade 0-9, ``>``
    above 9, ``-`` unjudged, ``.`` judged with a negative grade (trec_eval's
    "in the pool, not judged"), quoted as trec_eval prints it."""
    spec = MEASURES[measure.name]
    if spec.aggregate != "text":
        raise UsageError(f"measure {measure} is a number, not text")
    depth = measure.cutoff or spec.default or 0
    out = []
    for row in range(len(r.query_ids)):
        chars = []
        for grade, judged in zip(
            r.grades[row, : min(depth, int(r.retrieved[row]))].tolist(),
            r.judged[row, :depth].tolist(),
            strict=False,
        ):
            if not judged:
                chars.append("-")
            elif grade < 0:
                chars.append(".")
            else:
                chars.append(">" if grade > 9 else str(grade))
        out.append("'" + "".join(chars) + "'")
    return out


@register("coverage", "required", "judged share of the top k")
def coverage(r: Rankings, k: int | None) -> FloatArray:
    """Coverage@k = judged results in the top k / min(k, retrieved); 1 if none retrieved."""
    import numpy as np

    assert k is not None
    judged = r.judged[:, :k].sum(axis=1).astype(np.float64)
    shown = np.minimum(k, r.retrieved).astype(np.float64)
    result: FloatArray = np.where(shown > 0, judged / np.maximum(shown, 1.0), 1.0)
    return result


def evaluate(
    rankings: Rankings, measures: Sequence[Measure], trec_eval: str = DEFAULT_TREC_EVAL
) -> dict[Measure, FloatArray]:
    """Per-query values of each measure, rows in ``rankings.query_ids`` order;
    ``trec_eval`` picks the release whose recall-level rule ``iprec`` and
    ``11pt_avg`` follow (``TREC_EVAL_RULES``)."""
    if trec_eval not in TREC_EVAL_RULES:
        raise UsageError(
            f"unknown trec_eval rule {trec_eval!r}; use one of {', '.join(TREC_EVAL_RULES)}"
        )
    values = {}
    for m in measures:
        spec = MEASURES[m.name]
        cutoff = spec.default if m.cutoff is None and spec.aggregate == "text" else m.cutoff
        if spec.versioned:
            values[m] = spec.kernel(rankings, cutoff, trec_eval)
        else:
            values[m] = spec.kernel(rankings, cutoff)
    return values


def _sum(values: FloatArray) -> float:
    """The sum in row order, one addition after another, as trec_eval adds its
    queries (numpy's own sum adds pairwise, which can round differently and
    move a printed digit)."""
    import numpy as np

    return float(np.cumsum(values)[-1])


def _mean(values: FloatArray) -> float:
    return _sum(values) / values.size


def _geometric(values: FloatArray) -> float:
    import numpy as np

    return float(np.exp(_mean(np.log(np.maximum(values, GM_FLOOR)))))


#: ``all`` rules by name: trec_eval's mean, sum (counts) and floored geometric mean.
_AGGREGATES: dict[str, Callable[[FloatArray], float]] = {
    "mean": _mean,
    "sum": _sum,
    "geometric": _geometric,
}


def aggregate(measure: Measure, values: FloatArray) -> float:
    """The ``all`` value of ``measure`` from its per-query ``values`` (one per
    row): the mean, the sum for counts, the floored geometric mean for
    ``gm_map`` and ``gm_bpref``; 0 when there are no rows. Sums are taken in
    row order (queries sorted by id), one addition at a time, as trec_eval
    takes them, so a value on a rounding boundary prints as trec_eval prints it."""
    rule = MEASURES[measure.name].aggregate
    if rule == "text":
        raise UsageError(
            f"measure {measure} is text, printed per query only; it has no `all` value"
        )
    if values.size == 0:
        return 0.0
    return _AGGREGATES[rule](values)


def rankings_from_dicts(
    qrels: Mapping[str, Mapping[str, int]],
    run: Mapping[str, Sequence[str] | Mapping[str, float]],
    query_set: str = "ragsnap",
    relevance_level: int = 1,
) -> Rankings:
    """Build ``Rankings`` from plain dicts (for golden cases, tests and small runs).

    ``qrels`` maps query -> document -> grade. ``run`` maps query -> either a
    ranked sequence of document ids (duplicates after the first are dropped)
    or document -> score (ordered by score descending, then id descending).
    ``query_set`` names the rule choosing the rows (``QUERY_SETS``); a query
    is judged when it has a judgment and in the run when it has a result.
    Queries are evaluated in sorted order. A grade of at least
    ``relevance_level`` is relevant (trec_eval ``-l``).
    """
    import numpy as np

    level = relevance_level
    rule = query_set_rule(query_set)
    names = sorted(qrels)
    keep = rule.rows(
        np.array([len(qrels[q]) > 0 for q in names], dtype=bool),
        np.array([len(run.get(q, ())) > 0 for q in names], dtype=bool),
        np.array([any(g >= level for g in qrels[q].values()) for q in names], dtype=bool),
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
            [sum(g >= level for g in qrels[q].values()) for q in evaluated], dtype=np.int64
        ),
        num_nonrel=np.array(
            [sum(0 <= g < level for g in qrels[q].values()) for q in evaluated], dtype=np.int64
        ),
        ideal=ideal,
        excluded=excluded,
        relevance_level=level,
    )


class _Desc:
    """Sort key that orders strings by UTF-8 bytes, descending."""

    __slots__ = ("key",)

    def __init__(self, text: str):
        self.key = text.encode("utf-8")

    def __lt__(self, other: _Desc) -> bool:
        return self.key > other.key

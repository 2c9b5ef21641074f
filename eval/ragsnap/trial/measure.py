"""A method's lookups as measurements: the score report's rules, applied per method.

Pure functions. Each lookup is scored as ``ragsnap score`` scores a fixture
(hit level, pipeline expectations, pass state, span context precision and
recall over the top-K evidence, no-answer false positives), and the graded IR
measures read either the evidence or, with ``--depth``, the method's raw
ranking (no score floor, no top K), de-duplicated by the case's judgment
target. Each column says which of the two it read (``MethodMeasurement.views``):
``ranking`` (the raw ranking to the trial's depth) or ``evidence`` (the top-K
evidence after the score floors); hit@K, pass, context precision and recall
and no-answer false positives always read the evidence. Aggregates follow
``ragsnap.scoring.aggregates``: rates over zero cases are ``null``, never 0.

Groups: overall (the cases that ran), per split (``dev`` and ``test`` are
always present; a split that did not run has 0 cases and null measurements),
per language, and per category within the test split. Unanswerable
(no-answer) cases never enter a graded mean; they are counted apart, with
their false-positive rate.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..ir.metrics import parse_measures
from ..models import JUDGMENT_TARGETS, Fixture, GoldenCase, LookupResult
from ..scoring.aggregates import aggregate
from ..scoring.casemetrics import CONTEXT_PRECISION, CONTEXT_RECALL
from ..scoring.hits import CaseResult, score_case

__all__ = [
    "EVIDENCE",
    "RANKING",
    "TRIAL_MEASURES",
    "MethodMeasurement",
    "failure_codes",
    "measure_method",
    "measure_views",
    "trial_measures",
]

#: graded measures every trial reports (``ndcg_exp`` is GoodBuddy's 2^g - 1 gain)
TRIAL_MEASURES = (
    "recall@5",
    "recall@10",
    "mrr@10",
    "ndcg@10",
    "ndcg_exp@10",
    "map",
    "coverage@10",
)

#: the two views a column reads: the raw ranking to the depth, or the floored top-K evidence
RANKING = "ranking"
EVIDENCE = "evidence"
#: the aggregate rates that read the evidence whatever the depth
_EVIDENCE_RATES = ("passRate", "recallAtK", "noAnswerFalsePositiveRate")

_FAILURES = (
    ("no-answer case returned", "no-answer-false-positive"),
    ("hit level", "hit-level-below-minimum"),
    ("selected attempt", "selected-attempt"),
    ("fallback reasons", "fallback-reasons"),
    ("fallback reason", "fallback-reason"),
    ("evidence status", "evidence-status"),
    ("context pack lacks", "context-sources"),
    ("rerank top source", "rerank-top-source"),
)


def trial_measures(depth: int | None) -> tuple[str, ...]:
    """The trial's measures; with a ranking depth above 10, recall at that depth too."""
    if depth is not None and depth > 10:
        return (*TRIAL_MEASURES, f"recall@{depth}")
    return TRIAL_MEASURES


def measure_views(measures: Sequence[str], ranked: bool) -> dict[str, str]:
    """Which view each reported column reads: the graded ``measures`` the ranking when
    the trial has one (``ranked``), else the evidence; spans and rates the evidence."""
    graded = dict.fromkeys(measures, RANKING if ranked else EVIDENCE)
    fixed = dict.fromkeys((CONTEXT_PRECISION, CONTEXT_RECALL, *_EVIDENCE_RATES), EVIDENCE)
    return dict(sorted((graded | fixed).items()))


def failure_codes(reasons: Sequence[str]) -> list[str]:
    """A failing case's reasons as codes: no source, query or text leaves the run."""
    codes: list[str] = []
    for reason in reasons:
        code = next((c for prefix, c in _FAILURES if reason.startswith(prefix)), "other")
        if code not in codes:
            codes.append(code)
    return codes


@dataclass(frozen=True, slots=True)
class MethodMeasurement:
    """One method's scored cases and its aggregates, ready for the report."""

    results: tuple[CaseResult, ...]
    measures: tuple[str, ...]
    #: the graded measures read the raw ranking (a trial with a depth), not the evidence
    ranked: bool = False

    def views(self) -> dict[str, str]:
        """Each column's view: ``ranking`` or ``evidence`` (``measure_views``)."""
        return measure_views(self.measures, self.ranked)

    def summary(self) -> dict[str, Any]:
        return self._json(self.results)

    def groups(self) -> dict[str, dict[str, Any]]:
        """``split`` (dev and test always), ``language``, ``categoryTest``."""
        by_split = {"dev": [], "test": [], **_buckets(self.results, "split")}
        test = by_split["test"]
        return {
            "split": {k: self._json(rs) for k, rs in sorted(by_split.items())},
            "language": {k: self._json(rs) for k, rs in _buckets(self.results, "language").items()},
            "categoryTest": {k: self._json(rs) for k, rs in _buckets(test, "category").items()},
        }

    def block(self, results: Sequence[CaseResult]) -> dict[str, Any]:
        """The aggregate of some of this method's ``results``, as ``summary`` has it
        (what a gate with a ``where`` selection reads)."""
        return self._json(results)

    def _json(self, results: Sequence[CaseResult]) -> dict[str, Any]:
        data = aggregate(results).to_json()
        return data | self._null_metrics(data)

    def _null_metrics(self, data: Mapping[str, Any]) -> dict[str, Any]:
        """Every measure present in ``metrics``: a mean over 0 cases is null."""
        have = dict(data["metrics"])
        for name in (*self.measures, CONTEXT_PRECISION, CONTEXT_RECALL):
            have.setdefault(name, {"mean": None, "cases": 0})
        return {"metrics": dict(sorted(have.items()))}


def _buckets(results: Sequence[CaseResult], key: str) -> dict[str, list[CaseResult]]:
    out: dict[str, list[CaseResult]] = {}
    for r in results:
        out.setdefault(getattr(r.case, key), []).append(r)
    return dict(sorted(out.items()))


def measure_method(
    cases: Sequence[GoldenCase],
    lookups: Mapping[str, Mapping[str, Any]],
    rankings: Mapping[str, Sequence[Any]] | None,
    measures: Sequence[str],
) -> MethodMeasurement:
    """Score a method's ``lookups`` (case id -> lookupResult) and, when given, its
    deep ``rankings`` (case id -> ``ChunkRef``s, best first) against ``cases``."""
    from ..scoring.casemetrics import case_metrics

    fixtures = {
        case.id: Fixture(
            case_id=case.id,
            query=case.query,
            retrieved_at="",
            backend="trial",
            lookup=LookupResult.from_json(dict(lookups[case.id])),
        )
        for case in cases
    }
    targets: dict[str, list[str]] | None = None
    if rankings is not None:
        targets = {}
        for case in cases:
            field = JUDGMENT_TARGETS[case.judgment_kind or "chunkId"]
            targets[case.id] = [
                t for ref in rankings.get(case.id, ()) if (t := getattr(ref, field)) is not None
            ]
    graded = case_metrics(cases, fixtures, parse_measures(measures), targets)
    results = tuple(score_case(c, fixtures[c.id], graded.get(c.id)) for c in cases)
    return MethodMeasurement(results, tuple(measures), ranked=rankings is not None)

"""Compare a current score report with a baseline: regressions first.

Pure functions over two validated report dicts. Values are compared after
rounding both to the writer's precision, so a baseline read back from disk
and a report still in memory compare exactly.

Aggregate metrics, overall and per category / language / split (every row is
kept, unchanged ones too, so a reader sees the whole table):

* pass rate, Recall@K, strong hit rate: a drop larger than the tolerance is a
  regression, a rise an improvement;
* miss count, no-answer false-positive rate: a rise larger than the tolerance
  (``missCount``; ``metrics`` for the rate) is a regression;
* graded metrics (nDCG@k, Recall@k, MRR, context precision / recall ...):
  a drop of the mean larger than the ``metrics`` tolerance is a regression;
  judgment coverage is reported as a change, never a regression (it says how
  complete the judgments are, not how good retrieval is);
* a move smaller than the metric's **noise floor** is "changed", never a
  regression or an improvement (``NoiseFloor``: 0.001 by default, 0 for the
  miss count);
* a regression or improvement of a mean or a rate gets a **paired test** over
  the cases both reports share (``ragsnap.scoring.significance``): the
  permutation ``p`` and the bootstrap interval of the mean difference. With
  ``require`` set, a drop that is not significant is "changed", not a
  regression. Case-level regressions always fail.

Case-level changes, for every case present in both reports:

* pass state: pass -> fail is a regression, fail -> pass an improvement;
* hit level (strong > medium > weak > miss): down is a regression;
* first expected rank: moving down by more than the rank tolerance, or
  dropping out of the top K, is a regression; moving up an improvement;
* selected attempt, fallback reasons, evidence status, rerank top source:
  reported as changes; they fail the run only through the pass state, when
  the case states an expectation about them.

A changed case carries what a reviewer needs beside it: the query, the current
failing reasons, and the top sources before and after. Cases only in the
current report are ``added``, only in the baseline ``removed``; neither fails
the run. The hit-level transition matrix counts every shared case. Only
regressions fail.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..io.jsonio import FLOAT_DIGITS
from ..models import HIT_LEVELS, hit_level_rank
from .aggregates import HIGHER_IS_BETTER, LOWER_IS_BETTER
from .report import percent
from .significance import SignificanceSettings, paired_test

__all__ = [
    "CHANGED",
    "DIFF_KIND",
    "DIFF_SCHEMA_VERSION",
    "IMPROVEMENT",
    "REGRESSION",
    "UNCHANGED",
    "NoiseFloor",
    "Tolerances",
    "delta_text",
    "diff_reports",
    "level_status",
    "metric_status",
    "metric_value",
    "verdict",
]

DIFF_SCHEMA_VERSION = 1
DIFF_KIND = "ragsnap-diff-report"

REGRESSION, IMPROVEMENT, CHANGED, UNCHANGED = "regression", "improvement", "changed", "unchanged"
_SEVERITY = {REGRESSION: 3, IMPROVEMENT: 2, CHANGED: 1, UNCHANGED: 0}
#: Case fields that are reported when they change but never fail by themselves.
_NEUTRAL_FIELDS = ("selectedAttempt", "fallbackReasons", "evidenceStatus", "rerankTopSource")
_EPSILON = 1e-12


@dataclass(frozen=True, slots=True)
class Tolerances:
    """How much worse a value may get before it counts as a regression."""

    pass_rate: float = 0.0
    recall_at_k: float = 0.0
    strong_hit_rate: float = 0.0
    miss_count: int = 0
    first_expected_rank: int = 0
    metrics: float = 0.0

    def for_metric(self, metric: str) -> float:
        """The tolerance of a report metric: an aggregate in camelCase, or a graded
        metric (``ndcg@10``, ``contextRecall`` ...), which share ``metrics``."""
        field = _TOLERANCE_FIELDS.get(metric, "metrics")
        value: float = getattr(self, field)
        return value

    def to_json(self) -> dict[str, float]:
        """camelCase form for the diff report."""
        return {key: getattr(self, field) for key, field in _TOLERANCE_FIELDS.items()}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Tolerances:
        """Build from a validated ``tolerances`` mapping (camelCase keys)."""
        return cls(**{_TOLERANCE_FIELDS[k]: v for k, v in data.items()})


#: camelCase key (config, reports) -> Tolerances field.
_TOLERANCE_FIELDS = {
    "passRate": "pass_rate",
    "recallAtK": "recall_at_k",
    "strongHitRate": "strong_hit_rate",
    "missCount": "miss_count",
    "firstExpectedRank": "first_expected_rank",
    "metrics": "metrics",
}

#: the noise floor of every mean and rate unless ``diff.noiseFloor`` says otherwise
DEFAULT_NOISE_FLOOR = 0.001


@dataclass(frozen=True, slots=True)
class NoiseFloor:
    """Moves smaller than this are "changed", never a regression or an improvement.

    ``default`` covers every rate and graded mean; ``metrics`` overrides single
    metrics by name (``ndcg@10``, ``passRate`` ...). The miss count, a count of
    cases, has no floor unless named.
    """

    default: float = DEFAULT_NOISE_FLOOR
    metrics: Mapping[str, float] = field(default_factory=dict)

    def for_metric(self, metric: str) -> float:
        """The floor of one metric."""
        if metric in self.metrics:
            return self.metrics[metric]
        return 0.0 if metric == "missCount" else self.default

    def to_json(self) -> dict[str, float]:
        """The config's form: ``default`` and one key per overridden metric."""
        return {"default": self.default, **self.metrics}

    @classmethod
    def from_json(cls, data: Mapping[str, float]) -> NoiseFloor:
        """Build from a validated ``noiseFloor`` mapping."""
        rest = {k: v for k, v in data.items() if k != "default"}
        return cls(default=data.get("default", DEFAULT_NOISE_FLOOR), metrics=rest)


def _round(value: Any) -> Any:
    return round(value, FLOAT_DIGITS) if isinstance(value, float) else value


def metric_status(
    metric: str, before: Any, after: Any, tolerance: float, noise_floor: float = 0.0
) -> str:
    """regression / improvement / changed / unchanged of one aggregate or graded metric
    (a lower-is-better one counts the other way; coverage only ever "changes"; a move
    below ``noise_floor`` only "changes")."""
    if before is None or after is None or metric.startswith("coverage"):
        return UNCHANGED if before == after else CHANGED
    delta = after - before
    if delta == 0:
        return UNCHANGED
    if metric in LOWER_IS_BETTER:
        delta = -delta
    if abs(delta) < noise_floor - _EPSILON:
        return CHANGED
    if delta < -tolerance - _EPSILON:
        return REGRESSION
    return IMPROVEMENT if delta > _EPSILON else CHANGED


# --- paired tests: one value per case behind each aggregate ---------------------------


def _case_value(case: Mapping[str, Any], metric: str) -> float | None:
    """The case's contribution to ``metric``'s mean or rate; None when it has none."""
    if metric == "passRate":
        return float(case["passed"])
    if metric in ("recallAtK", "strongHitRate"):
        if case["noAnswer"] or case["hitLevel"] is None:
            return None
        wanted = ("strong",) if metric == "strongHitRate" else ("strong", "medium")
        return float(case["hitLevel"] in wanted)
    if metric == "noAnswerFalsePositiveRate":
        if not case["noAnswer"] or case["fixture"] != "present":
            return None
        return float(case["evidenceCount"] > 0)
    value = (case["metrics"] or {}).get(metric)
    return None if value is None else float(value)


def _testable(metric: str) -> bool:
    return metric != "missCount" and not metric.startswith("coverage")


class _PairedValues:
    """Per-case values of the cases both reports share, read once per metric and
    once per scope however many rows ask (NaN where a case has no value)."""

    def __init__(self, pairs: Sequence[tuple[Mapping[str, Any], Mapping[str, Any]]]) -> None:
        self.pairs = pairs
        self._metrics: dict[str, Any] = {}
        self._scopes: dict[str, Any] = {}

    def _columns(self, metric: str) -> Any:
        if metric not in self._metrics:
            import numpy as np

            nan = float("nan")
            self._metrics[metric] = np.array(
                [
                    [
                        nan if v is None else v
                        for v in (_case_value(old, metric) for old, _ in self.pairs)
                    ],
                    [
                        nan if v is None else v
                        for v in (_case_value(new, metric) for _, new in self.pairs)
                    ],
                ],
                dtype=np.float64,
            ).reshape(2, len(self.pairs))
        return self._metrics[metric]

    def _members(self, scope: str) -> Any:
        if scope not in self._scopes:
            import numpy as np

            name, _, value = scope.partition("=")
            self._scopes[scope] = np.array(
                [scope == "all" or new[name] == value for _, new in self.pairs], dtype=bool
            )
        return self._scopes[scope]

    def test(
        self, scope: str, metric: str, settings: SignificanceSettings
    ) -> dict[str, Any] | None:
        """The paired test of ``metric`` over the scope's cases that have it in both."""
        import numpy as np

        columns = self._columns(metric)
        keep = self._members(scope) & ~np.isnan(columns).any(axis=0)
        if not keep.any():
            return None
        result = paired_test(columns[0, keep], columns[1, keep], settings, f"{scope}\0{metric}")
        return {**result.to_json(), "significant": result.significant(settings.alpha)}


# --- aggregate rows -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Rules:
    tolerances: Tolerances
    noise_floor: NoiseFloor
    significance: SignificanceSettings | None
    paired: _PairedValues


def _aggregate_rows(
    scope: str, before: Mapping[str, Any], after: Mapping[str, Any], rules: _Rules
) -> Iterator[dict[str, Any]]:
    graded = [name for name in before["metrics"] if name in after["metrics"]]
    values = {
        **{m: (before[m], after[m]) for m in (*HIGHER_IS_BETTER, *LOWER_IS_BETTER)},
        **{m: (before["metrics"][m]["mean"], after["metrics"][m]["mean"]) for m in graded},
    }
    for metric, (raw_old, raw_new) in values.items():
        old, new = _round(raw_old), _round(raw_new)
        tolerance = rules.tolerances.for_metric(metric)
        floor = rules.noise_floor.for_metric(metric)
        status = metric_status(metric, old, new, tolerance, floor)
        test = None
        if (
            rules.significance is not None
            and status in (REGRESSION, IMPROVEMENT)
            and _testable(metric)
        ):
            test = rules.paired.test(scope, metric, rules.significance)
        if (
            status == REGRESSION
            and rules.significance is not None
            and rules.significance.require
            and test is not None
            and not test["significant"]
        ):
            status = CHANGED
        yield {
            "scope": scope,
            "metric": metric,
            "baseline": old,
            "current": new,
            "delta": None if old is None or new is None else _round(new - old),
            "tolerance": tolerance,
            "noiseFloor": floor,
            "significance": test,
            "status": status,
        }


# --- cases ----------------------------------------------------------------------------


def _rank_status(before: int | None, after: int | None, tolerance: int) -> str:
    if before == after:
        return UNCHANGED
    if after is None:
        return REGRESSION
    if before is None:
        return IMPROVEMENT
    if after > before + tolerance:
        return REGRESSION
    return IMPROVEMENT if after < before else CHANGED


def level_status(before: str | None, after: str | None) -> str:
    """A hit level's move: down is a regression, up an improvement."""
    if before == after:
        return UNCHANGED
    if before is None or after is None:
        return CHANGED
    return REGRESSION if hit_level_rank(after) < hit_level_rank(before) else IMPROVEMENT


def _case_changes(
    before: Mapping[str, Any], after: Mapping[str, Any], tol: Tolerances
) -> list[dict[str, Any]]:
    statuses = {
        "passed": (
            UNCHANGED
            if before["passed"] == after["passed"]
            else (IMPROVEMENT if after["passed"] else REGRESSION)
        ),
        "hitLevel": level_status(before["hitLevel"], after["hitLevel"]),
        "firstExpectedRank": _rank_status(
            before["firstExpectedRank"], after["firstExpectedRank"], tol.first_expected_rank
        ),
    }
    for name in _NEUTRAL_FIELDS:
        if name in before and name in after:  # a private report leaves them out
            statuses[name] = UNCHANGED if before[name] == after[name] else CHANGED
    return [
        {"field": name, "baseline": before[name], "current": after[name], "status": status}
        for name, status in statuses.items()
        if status != UNCHANGED
    ]


def _worst(statuses: Sequence[str]) -> str:
    return max(statuses, key=_SEVERITY.__getitem__, default=UNCHANGED)


def _case_row(
    case_id: str,
    status: str,
    changes: list[dict[str, Any]],
    before: Mapping[str, Any] | None,
    after: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """A changed case with what a reviewer reads beside it."""
    shown = after if after is not None else before
    assert shown is not None  # a case is in at least one report
    return {
        "id": case_id,
        "status": status,
        "query": shown.get("query"),  # none in a private report
        "category": shown["category"],
        "language": shown["language"],
        "changes": changes,
        "reasons": [] if after is None else list(after["reasons"]),
        "baselineReasons": [] if before is None else list(before["reasons"]),
        "topSources": {
            "baseline": None if before is None else before.get("topSources"),
            "current": None if after is None else after.get("topSources"),
        },
    }


def _transitions(
    pairs: Sequence[tuple[Mapping[str, Any], Mapping[str, Any]]],
) -> dict[str, dict[str, int]]:
    """baseline hit level -> current hit level -> cases (answerable cases in both)."""
    matrix: dict[str, dict[str, int]] = {old: dict.fromkeys(HIT_LEVELS, 0) for old in HIT_LEVELS}
    for old, new in pairs:
        if old["hitLevel"] is not None and new["hitLevel"] is not None:
            matrix[old["hitLevel"]][new["hitLevel"]] += 1
    return matrix


def diff_reports(
    baseline: Mapping[str, Any],
    current: Mapping[str, Any],
    tolerances: Tolerances,
    baseline_label: str,
    *,
    noise_floor: NoiseFloor | None = None,
    significance: SignificanceSettings | None = None,
) -> dict[str, Any]:
    """Diff two score reports; the result is the diff report's JSON form.

    Without ``noise_floor`` every move counts (a floor of 0); without
    ``significance`` no paired tests run.
    """
    old_cases = {c["id"]: c for c in baseline["cases"]}
    new_cases = {c["id"]: c for c in current["cases"]}
    pairs = [(old_cases[i], case) for i, case in new_cases.items() if i in old_cases]
    rules = _Rules(
        tolerances, noise_floor or NoiseFloor(default=0.0), significance, _PairedValues(pairs)
    )

    aggregates = list(_aggregate_rows("all", baseline["summary"], current["summary"], rules))
    for name in ("category", "language", "split"):
        old_groups, new_groups = baseline["groups"][name], current["groups"][name]
        for value in sorted(set(old_groups) & set(new_groups)):
            aggregates += _aggregate_rows(
                f"{name}={value}", old_groups[value], new_groups[value], rules
            )

    cases = []
    for case_id, entry in new_cases.items():
        old = old_cases.get(case_id)
        if old is None:
            cases.append(_case_row(case_id, "added", [], None, entry))
            continue
        changes = _case_changes(old, entry, tolerances)
        if changes:
            status = _worst([c["status"] for c in changes])
            cases.append(_case_row(case_id, status, changes, old, entry))
    cases += [
        _case_row(case_id, "removed", [], old, None)
        for case_id, old in old_cases.items()
        if case_id not in new_cases
    ]

    notes = []
    if baseline["inputs"]["casesSha256"] != current["inputs"]["casesSha256"]:
        notes.append("the golden cases changed since the baseline was written")
    if baseline["scoringVersion"] != current["scoringVersion"]:
        notes.append(
            f"scoring rules changed ({baseline['scoringVersion']} -> "
            f"{current['scoringVersion']}); some changes may come from the rules"
        )
    case_statuses = [c["status"] for c in cases]
    metric_statuses = [row["status"] for row in aggregates]
    counts = {
        "regressedCases": case_statuses.count(REGRESSION),
        "improvedCases": case_statuses.count(IMPROVEMENT),
        "changedCases": case_statuses.count(CHANGED),
        "addedCases": case_statuses.count("added"),
        "removedCases": case_statuses.count("removed"),
        "aggregateRegressions": metric_statuses.count(REGRESSION),
        "aggregateImprovements": metric_statuses.count(IMPROVEMENT),
        "aggregateChanges": metric_statuses.count(CHANGED),
    }
    return {
        "schemaVersion": DIFF_SCHEMA_VERSION,
        "kind": DIFF_KIND,
        "baseline": baseline_label,
        "baselineInputs": dict(baseline["inputs"]),
        "currentInputs": dict(current["inputs"]),
        "tolerances": tolerances.to_json(),
        "noiseFloor": rules.noise_floor.to_json(),
        "significance": None if significance is None else significance.to_json(),
        "regressed": REGRESSION in case_statuses or REGRESSION in metric_statuses,
        "counts": counts,
        "aggregates": aggregates,
        "hitLevelTransitions": _transitions(pairs),
        "cases": cases,
        "notes": notes,
    }


# --- text -----------------------------------------------------------------------------


def metric_value(metric: str, value: Any) -> str:
    """A rate as a percentage, a count as it is, a graded metric with three
    decimals, ``None`` as ``n/a``."""
    if value is None:
        return "n/a"
    if metric == "missCount":
        return str(value)
    if metric in HIGHER_IS_BETTER or metric in LOWER_IS_BETTER:
        return percent(value)
    return f"{value:.3f}"


def delta_text(metric: str, delta: Any) -> str:
    """A signed change: percentage points for rates, three decimals for means (four
    when smaller than 0.001, so a move is never shown as +0.000), a count as it is."""
    if delta is None:
        return "n/a"
    if delta == 0:
        return "0"
    if metric == "missCount":
        return f"{delta:+d}"
    if metric in HIGHER_IS_BETTER or metric in LOWER_IS_BETTER:
        return f"{delta * 100:+.1f} pp" if abs(delta) >= 0.0005 else f"{delta * 100:+.2f} pp"
    return f"{delta:+.3f}" if abs(delta) >= 0.0005 else f"{delta:+.4f}"


def verdict(diff: Mapping[str, Any]) -> str:
    """One sentence: regressions first, then everything else that moved."""
    counts = diff["counts"]
    head = "Regressed" if diff["regressed"] else "No regressions"
    return (
        f"{head} against {diff['baseline']}: {counts['regressedCases']} case(s) regressed, "
        f"{counts['improvedCases']} improved, {counts['changedCases']} changed, "
        f"{counts['addedCases']} added, {counts['removedCases']} removed; "
        f"{counts['aggregateRegressions']} aggregate metric regression(s), "
        f"{counts['aggregateImprovements']} improvement(s)"
    )

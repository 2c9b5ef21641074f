"""Compare a current score report with a baseline: regressions first.

Pure functions over two validated report dicts. Values are compared after
rounding both to the writer's precision, so a baseline read back from disk
and a report still in memory compare exactly.

Aggregate metrics, overall and per category / language / split:

* pass rate, Recall@K, strong hit rate: a drop larger than the tolerance is a
  regression, a rise an improvement;
* miss count, no-answer false-positive rate: a rise larger than the tolerance
  (``missCount``; ``metrics`` for the rate) is a regression;
* graded metrics (nDCG@k, Recall@k, MRR, context precision / recall ...):
  a drop of the mean larger than the ``metrics`` tolerance is a regression;
  judgment coverage is reported as a change, never a regression (it says how
  complete the judgments are, not how good retrieval is).

Case-level changes, for every case present in both reports:

* pass state: pass -> fail is a regression, fail -> pass an improvement;
* hit level (strong > medium > weak > miss): down is a regression;
* first expected rank: moving down by more than the rank tolerance, or
  dropping out of the top K, is a regression; moving up an improvement;
* selected attempt, fallback reasons, evidence status, rerank top source:
  reported as changes; they fail the run only through the pass state, when
  the case states an expectation about them.

Cases only in the current report are ``added``, only in the baseline
``removed``; neither fails the run. Only regressions fail.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..io.jsonio import FLOAT_DIGITS
from ..io.markdown import cell, markdown_table
from ..models import hit_level_rank
from .aggregates import HIGHER_IS_BETTER, LOWER_IS_BETTER
from .report import percent

__all__ = [
    "DIFF_KIND",
    "DIFF_SCHEMA_VERSION",
    "Tolerances",
    "diff_reports",
    "level_status",
    "metric_status",
    "metric_value",
    "render_diff_markdown",
    "verdict",
]

DIFF_SCHEMA_VERSION = 1
DIFF_KIND = "ragsnap-diff-report"

REGRESSION, IMPROVEMENT, CHANGED, UNCHANGED = "regression", "improvement", "changed", "unchanged"
_SEVERITY = {REGRESSION: 3, IMPROVEMENT: 2, CHANGED: 1, UNCHANGED: 0}
#: Case fields that are reported when they change but never fail by themselves.
_NEUTRAL_FIELDS = ("selectedAttempt", "fallbackReasons", "evidenceStatus", "rerankTopSource")


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


def _round(value: Any) -> Any:
    return round(value, FLOAT_DIGITS) if isinstance(value, float) else value


def metric_status(metric: str, before: Any, after: Any, tolerance: float) -> str:
    """regression / improvement / changed / unchanged of one aggregate or graded metric
    (a lower-is-better one counts the other way; coverage only ever "changes")."""
    if before is None or after is None or metric.startswith("coverage"):
        return UNCHANGED if before == after else CHANGED
    delta = after - before
    if metric in LOWER_IS_BETTER:
        delta = -delta
    if delta < -tolerance - 1e-12:
        return REGRESSION
    if delta > 1e-12:
        return IMPROVEMENT
    return UNCHANGED if delta == 0 else CHANGED


def _aggregate_rows(
    scope: str, before: Mapping[str, Any], after: Mapping[str, Any], tol: Tolerances
) -> list[dict[str, Any]]:
    graded = [name for name in before["metrics"] if name in after["metrics"]]
    values = {
        **{m: (before[m], after[m]) for m in (*HIGHER_IS_BETTER, *LOWER_IS_BETTER)},
        **{m: (before["metrics"][m]["mean"], after["metrics"][m]["mean"]) for m in graded},
    }
    rows = []
    for metric, (old, new) in values.items():
        old, new = _round(old), _round(new)
        delta = None if old is None or new is None else _round(new - old)
        rows.append(
            {
                "scope": scope,
                "metric": metric,
                "baseline": old,
                "current": new,
                "delta": delta,
                "tolerance": tol.for_metric(metric),
                "status": metric_status(metric, old, new, tol.for_metric(metric)),
            }
        )
    return rows


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
    for field in _NEUTRAL_FIELDS:
        statuses[field] = UNCHANGED if before[field] == after[field] else CHANGED
    return [
        {"field": field, "baseline": before[field], "current": after[field], "status": status}
        for field, status in statuses.items()
        if status != UNCHANGED
    ]


def _worst(statuses: Sequence[str]) -> str:
    return max(statuses, key=_SEVERITY.__getitem__, default=UNCHANGED)


def diff_reports(
    baseline: Mapping[str, Any],
    current: Mapping[str, Any],
    tolerances: Tolerances,
    baseline_label: str,
) -> dict[str, Any]:
    """Diff two score reports; the result is the diff report's JSON form."""
    aggregates = _aggregate_rows("all", baseline["summary"], current["summary"], tolerances)
    for name in ("category", "language", "split"):
        old_groups, new_groups = baseline["groups"][name], current["groups"][name]
        for value in sorted(set(old_groups) & set(new_groups)):
            aggregates += _aggregate_rows(
                f"{name}={value}", old_groups[value], new_groups[value], tolerances
            )
    aggregates = [row for row in aggregates if row["status"] != UNCHANGED]

    old_cases = {c["id"]: c for c in baseline["cases"]}
    new_cases = {c["id"]: c for c in current["cases"]}
    cases = []
    for case_id, entry in new_cases.items():
        if case_id not in old_cases:
            cases.append({"id": case_id, "status": "added", "changes": []})
            continue
        changes = _case_changes(old_cases[case_id], entry, tolerances)
        if changes:
            status = _worst([c["status"] for c in changes])
            cases.append({"id": case_id, "status": status, "changes": changes})
    cases += [
        {"id": case_id, "status": "removed", "changes": []}
        for case_id in old_cases
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
    }
    return {
        "schemaVersion": DIFF_SCHEMA_VERSION,
        "kind": DIFF_KIND,
        "baseline": baseline_label,
        "baselineInputs": dict(baseline["inputs"]),
        "currentInputs": dict(current["inputs"]),
        "tolerances": tolerances.to_json(),
        "regressed": REGRESSION in case_statuses or REGRESSION in metric_statuses,
        "counts": counts,
        "aggregates": aggregates,
        "cases": cases,
        "notes": notes,
    }


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


def _change_text(change: Mapping[str, Any]) -> str:
    return f"{change['field']}: {cell(change['baseline'])} → {cell(change['current'])}"


def render_diff_markdown(diff: Mapping[str, Any]) -> str:
    """Render a diff report dict as Markdown."""
    lines = ["# ragsnap baseline diff", "", f"**{verdict(diff)}.**"]
    if diff["notes"]:
        lines += ["", *[f"> Note: {note}." for note in diff["notes"]]]
    lines += ["", "## Aggregate changes", ""]
    if diff["aggregates"]:
        lines.append(
            markdown_table(
                ["scope", "metric", "baseline", "current", "status"],
                [
                    [
                        row["scope"],
                        row["metric"],
                        metric_value(row["metric"], row["baseline"]),
                        metric_value(row["metric"], row["current"]),
                        row["status"],
                    ]
                    for row in diff["aggregates"]
                ],
            )
        )
    else:
        lines.append("None.")
    for title, status in (
        ("Case regressions", REGRESSION),
        ("Case improvements", IMPROVEMENT),
        ("Other case changes", CHANGED),
    ):
        rows = [c for c in diff["cases"] if c["status"] == status]
        if not rows:
            continue
        lines += ["", f"## {title} ({len(rows)})", ""]
        lines.append(
            markdown_table(
                ["case", "changes"],
                [[c["id"], "; ".join(_change_text(ch) for ch in c["changes"])] for c in rows],
            )
        )
    for title, status in (("Added cases", "added"), ("Removed cases", "removed")):
        ids = [c["id"] for c in diff["cases"] if c["status"] == status]
        if ids:
            lines += ["", f"## {title} ({len(ids)})", "", *[f"- `{i}`" for i in ids]]
    tol = diff["tolerances"]
    lines += [
        "",
        "---",
        "",
        "Tolerances: " + ", ".join(f"{k} {v}" for k, v in tol.items()) + ".",
    ]
    return "\n".join(lines) + "\n"

"""Two trial reports compared per method: did a method get worse, and where?

Pure functions. For every method in both reports each summary value is
compared with the score diff's rules (``ragsnap.scoring.diff.metric_status``
and the ``diff.tolerances`` of ragsnap.yaml): pass rate, Recall@K, strong hit
rate, miss count, the no-answer false-positive rate, and every graded measure
the two reports share. A method's gate status (``ragsnap.trial.gates``) that
went from admitted to experimental is a regression, the other way an
improvement; per case, a hit level that fell or a case that stopped passing
is one. A method only in one report is listed as added or removed.

Reports of different plans can be compared (that is how a change is
measured); the diff says which input digests differ, so a reader knows
whether the corpus, the cases or the vectors moved too. Timing is never
compared.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tabulate import tabulate

from ..scoring.diff import (
    IMPROVEMENT,
    REGRESSION,
    UNCHANGED,
    Tolerances,
    level_status,
    metric_status,
    metric_value,
)
from .gates import ADMITTED, EXPERIMENTAL

__all__ = ["TRIAL_DIFF_KIND", "diff_trials", "render_trial_diff_markdown", "trial_diff_lines"]

TRIAL_DIFF_KIND = "ragsnap-trial-diff"
_SUMMARY = ("passRate", "recallAtK", "strongHitRate", "missCount", "noAnswerFalsePositiveRate")


def _order(report: Mapping[str, Any]) -> list[str]:
    return [m["name"] for m in report["plan"]["methods"]]


def _rows(before: Mapping[str, Any], after: Mapping[str, Any], tol: Tolerances) -> list[Any]:
    rows = []
    names = [*_SUMMARY, *sorted(set(before["metrics"]) & set(after["metrics"]))]
    for name in names:
        if name in _SUMMARY:
            old, new = before[name], after[name]
        else:
            old, new = before["metrics"][name]["mean"], after["metrics"][name]["mean"]
        rows.append(
            {
                "metric": name,
                "baseline": old,
                "current": new,
                "status": metric_status(name, old, new, tol.for_metric(name)),
            }
        )
    return rows


def _cases(baseline: Mapping[str, Any], current: Mapping[str, Any], method: str) -> list[Any]:
    before = {c["id"]: c["methods"].get(method) for c in baseline["caseResults"]}
    changes = []
    for case in current["caseResults"]:
        old, new = before.get(case["id"]), case["methods"].get(method)
        if old is None or new is None:
            continue
        level = level_status(old["hitLevel"], new["hitLevel"])
        passing = (
            REGRESSION
            if old["passed"] and not new["passed"]
            else IMPROVEMENT
            if new["passed"] and not old["passed"]
            else UNCHANGED
        )
        if REGRESSION in (level, passing) or IMPROVEMENT in (level, passing):
            changes.append(
                {
                    "id": case["id"],
                    "hitLevel": [old["hitLevel"], new["hitLevel"]],
                    "passed": [old["passed"], new["passed"]],
                    "status": REGRESSION if REGRESSION in (level, passing) else IMPROVEMENT,
                }
            )
    return changes


def diff_trials(
    baseline: Mapping[str, Any],
    current: Mapping[str, Any],
    tolerances: Tolerances,
    baseline_name: str,
) -> dict[str, Any]:
    """The per-method diff of two trial reports (JSON-ready)."""
    methods: dict[str, Any] = {}
    old_names, new_names = _order(baseline), _order(current)
    for name in [*new_names, *(n for n in old_names if n not in new_names)]:
        if name not in old_names or name not in new_names:
            methods[name] = {
                "status": "added" if name in new_names else "removed",
                "rows": [],
                "gateStatus": None,
                "cases": [],
            }
            continue
        old, new = baseline["methods"][name], current["methods"][name]
        was, now = old["status"], new["status"]
        change = (
            REGRESSION
            if was == ADMITTED and now == EXPERIMENTAL
            else IMPROVEMENT
            if was == EXPERIMENTAL and now == ADMITTED
            else UNCHANGED
        )
        methods[name] = {
            "status": "compared",
            "rows": _rows(old["summary"], new["summary"], tolerances),
            "gateStatus": {"baseline": was, "current": now, "status": change},
            "cases": _cases(baseline, current, name),
        }
    regressions = sum(
        sum(r["status"] == REGRESSION for r in m["rows"])
        + sum(c["status"] == REGRESSION for c in m["cases"])
        + (m["gateStatus"] is not None and m["gateStatus"]["status"] == REGRESSION)
        for m in methods.values()
    )
    improvements = sum(
        sum(r["status"] == IMPROVEMENT for r in m["rows"])
        + sum(c["status"] == IMPROVEMENT for c in m["cases"])
        + (m["gateStatus"] is not None and m["gateStatus"]["status"] == IMPROVEMENT)
        for m in methods.values()
    )
    inputs_before, inputs_after = baseline["plan"]["inputs"], current["plan"]["inputs"]
    return {
        "schemaVersion": 1,
        "kind": TRIAL_DIFF_KIND,
        "baseline": baseline_name,
        "samePlan": baseline["planSha256"] == current["planSha256"],
        "inputsChanged": sorted(
            k
            for k in set(inputs_before) | set(inputs_after)
            if inputs_before.get(k) != inputs_after.get(k)
        ),
        "tolerances": tolerances.to_json(),
        "regressed": regressions > 0,
        "counts": {"regressions": regressions, "improvements": improvements},
        "methods": methods,
    }


def trial_diff_lines(diff: Mapping[str, Any], listed: int) -> list[str]:
    """Terminal lines: the verdict, then each regression (at most ``listed``)."""
    counts = diff["counts"]
    head = "Regressed" if diff["regressed"] else "No regressions"
    lines = [
        f"{head} against {diff['baseline']}: {counts['regressions']} regression(s), "
        f"{counts['improvements']} improvement(s) across {len(diff['methods'])} method(s)"
        + (f"; inputs changed: {', '.join(diff['inputsChanged'])}" if diff["inputsChanged"] else "")
    ]
    found = []
    for name, m in diff["methods"].items():
        if m["status"] != "compared":
            found.append(f"  {name}: {m['status']}")
            continue
        if m["gateStatus"]["status"] == REGRESSION:
            found.append(f"  {name}: admitted -> experimental (its gates no longer all pass)")
        for r in m["rows"]:
            if r["status"] == REGRESSION:
                found.append(
                    f"  {name}: {r['metric']} {metric_value(r['metric'], r['baseline'])} -> "
                    f"{metric_value(r['metric'], r['current'])}"
                )
        for c in m["cases"]:
            if c["status"] == REGRESSION:
                found.append(
                    f"  {name}: case {c['id']}: {c['hitLevel'][0]} -> {c['hitLevel'][1]}"
                    + (" (now failing)" if c["passed"] == [True, False] else "")
                )
    lines += found[:listed]
    if len(found) > listed:
        lines.append(f"  ... and {len(found) - listed} more (see the Markdown diff)")
    return lines


def render_trial_diff_markdown(diff: Mapping[str, Any]) -> str:
    """The trial diff as Markdown: verdict, then one table per method."""
    lines = ["# ragsnap trial diff", "", f"**{trial_diff_lines(diff, 0)[0]}.**", ""]
    for name, m in diff["methods"].items():
        lines += [f"## {name}", ""]
        if m["status"] != "compared":
            lines += [
                f"Only in the {'current' if m['status'] == 'added' else 'baseline'} report.",
                "",
            ]
            continue
        rows = [
            [
                r["metric"],
                metric_value(r["metric"], r["baseline"]),
                metric_value(r["metric"], r["current"]),
                r["status"],
            ]
            for r in m["rows"]
        ]
        gate = m["gateStatus"]
        rows.append(
            [
                "gate status",
                gate["baseline"] or "n/a",
                gate["current"] or "n/a",
                gate["status"],
            ]
        )
        lines.append(
            tabulate(
                rows,
                headers=["measure", "baseline", "current", "status"],
                tablefmt="github",
                disable_numparse=True,
            )
        )
        if m["cases"]:
            lines += ["", "Cases that moved:", ""]
            lines += [
                f"- `{c['id']}`: {c['hitLevel'][0]} → {c['hitLevel'][1]}, "
                f"passed {c['passed'][0]} → {c['passed'][1]} ({c['status']})"
                for c in m["cases"]
            ]
        lines.append("")
    return "\n".join(lines)

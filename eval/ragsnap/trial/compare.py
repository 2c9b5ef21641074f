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

With ``significance`` (``diff.significance`` of ragsnap.yaml), every row also
gets the score diff's paired test over the cases both reports ran (its
``significance``: p, the p corrected over every tested row of the diff, the
interval of ``mean(current - baseline)``; ``ragsnap.trial.significance``);
it is reported beside the status and changes none.
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
from ..scoring.significance import SignificanceSettings
from .gates import ADMITTED, EXPERIMENTAL
from .significance import interval_text, p_name, settings_json, trial_tests

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
                "significance": None,
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


def _gate_status(method: Mapping[str, Any]) -> str | None:
    """A method's gate status; a report written before statuses existed has only
    ``admitted`` (true, false or null)."""
    if "status" in method:
        return method["status"]  # type: ignore[no-any-return]
    admitted = method.get("admitted")
    return None if admitted is None else ADMITTED if admitted else EXPERIMENTAL


def diff_trials(
    baseline: Mapping[str, Any],
    current: Mapping[str, Any],
    tolerances: Tolerances,
    baseline_name: str,
    significance: SignificanceSettings | None = None,
) -> dict[str, Any]:
    """The per-method diff of two trial reports (JSON-ready); with ``significance``
    each row's paired test too (module docstring)."""
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
        was, now = _gate_status(old), _gate_status(new)
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
    tests = None
    if significance is not None:
        compared = {n: m["rows"] for n, m in methods.items() if m["status"] == "compared"}
        tested = trial_tests(baseline, current, compared, significance)
        shared = {c["id"] for c in baseline["caseResults"]} & {
            c["id"] for c in current["caseResults"]
        }
        tests = {**settings_json(significance), "tested": tested, "sharedCases": len(shared)}
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
        "significance": tests,
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
    tests = diff.get("significance")
    if tests is not None:
        significant = sum(
            1
            for m in diff["methods"].values()
            for r in m["rows"]
            if r.get("significance") is not None and r["significance"]["significant"]
        )
        lines.append(
            f"Paired tests over {tests['sharedCases']} shared case(s): {significant} of "
            f"{tests['tested']} tested row(s) significant ({p_name(tests)} < {tests['alpha']:g})"
        )
    found = []
    for name, m in diff["methods"].items():
        if m["status"] != "compared":
            found.append(f"  {name}: {m['status']}")
            continue
        if m["gateStatus"]["status"] == REGRESSION:
            found.append(f"  {name}: admitted -> experimental (its gates no longer all pass)")
        for r in m["rows"]:
            if r["status"] == REGRESSION:
                test = r.get("significance")
                found.append(
                    f"  {name}: {r['metric']} {metric_value(r['metric'], r['baseline'])} -> "
                    f"{metric_value(r['metric'], r['current'])}"
                    + (
                        ""
                        if test is None or tests is None
                        else f" ({p_name(tests)} {test['pAdjusted']:.3f})"
                    )
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


def _test_cells(row: Mapping[str, Any]) -> list[str]:
    """A row's paired interval and adjusted p; dashes when not tested."""
    test = row.get("significance")
    if test is None:
        return ["—", "—"]
    return [
        interval_text(row["metric"], test),
        f"{test['pAdjusted']:.3f}" + (" *" if test["significant"] else ""),
    ]


def _tests_line(diff: Mapping[str, Any]) -> list[str]:
    tests = diff.get("significance")
    if tests is None:
        return []
    alpha = tests["alpha"]
    return [
        f"Paired tests per method over the {tests['sharedCases']} case(s) both trials ran: "
        f"the {round((1 - alpha) * 100, 2):g}% bootstrap interval of the per-case change and "
        f"the randomization test's p, corrected over the {tests['tested']} tested row(s) "
        f"({p_name(tests)}; * below {alpha:g}). A row where no case moved is not tested.",
        "",
    ]


def render_trial_diff_markdown(diff: Mapping[str, Any]) -> str:
    """The trial diff as Markdown: verdict, then one table per method."""
    lines = ["# ragsnap trial diff", "", f"**{trial_diff_lines(diff, 0)[0]}.**", ""]
    lines += _tests_line(diff)
    for name, m in diff["methods"].items():
        lines += [f"## {name}", ""]
        if m["status"] != "compared":
            lines += [
                f"Only in the {'current' if m['status'] == 'added' else 'baseline'} report.",
                "",
            ]
            continue
        tests = diff.get("significance")
        rows = [
            [
                r["metric"],
                metric_value(r["metric"], r["baseline"]),
                metric_value(r["metric"], r["current"]),
                r["status"],
                *([] if tests is None else _test_cells(r)),
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
                *([] if tests is None else ["—", "—"]),
            ]
        )
        headers = ["measure", "baseline", "current", "status"]
        if tests is not None:
            headers += ["paired Δ interval", p_name(tests)]
        lines.append(tabulate(rows, headers=headers, tablefmt="github", disable_numparse=True))
        if m["cases"]:
            lines += ["", "Cases that moved:", ""]
            lines += [
                f"- `{c['id']}`: {c['hitLevel'][0]} → {c['hitLevel'][1]}, "
                f"passed {c['passed'][0]} → {c['passed'][1]} ({c['status']})"
                for c in m["cases"]
            ]
        lines.append("")
    return "\n".join(lines)

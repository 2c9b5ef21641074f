"""The trial report as one self-contained HTML page (``trial --html-report FILE``).

A pure function of the trial report dict, built from the shared pieces of
``ragsnap.scoring.html`` (same safety, same determinism) and rendered through
the template ``templates/html/trial.html.j2``. The page shows the
verdict (gates, determinism, the diff against a baseline trial when there is
one, and its rows that moved); each method's gate status (admitted or
experimental, and why); per-method bars of every table measure, each
marked with the view it read (``[R]`` ranking, ``[E]`` evidence); hit
levels per method; latency (median and p95 bars, then the full summary); and
the case table, one row per case with each method's hit level, unfolded to
each method's first expected rank, failure codes and metrics. A trial report
names no query, text or source, so its privacy view renders the same way.
When the report has paired tests between methods (``significance``), a table
of them follows the measures; a diff with paired tests adds each moved row's
interval and corrected p.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..models import HIT_LEVELS
from ..scoring.aggregates import LOWER_IS_BETTER
from ..scoring.diff import delta_text, metric_value
from ..scoring.html import LEVEL_COLORS, CaseTable, bar_chart, markup, render, stacked_bars
from ..scoring.report import percent
from .gates import gates_line, status_reason
from .measure import RANKING
from .report import TABLE_MEASURES, VIEW_MARKS
from .significance import interval_text, p_name

__all__ = ["render_trial_html"]

_RATES = ("passRate", "recallAtK", "strongHitRate")


def _methods(report: Mapping[str, Any]) -> list[str]:
    return [m["name"] for m in report["plan"]["methods"]]


def _verdict(report: Mapping[str, Any], diff: Mapping[str, Any] | None) -> tuple[bool, str]:
    gates = report["gates"]
    determinism = report["determinism"]
    parts = []
    bad = False
    if gates is not None:
        bad = bad or any(g["ran"] and not g["passed"] for g in gates)
        parts.append(f"gates: {gates_line(gates)}")
    if determinism.get("checked"):
        same = determinism["identical"] is not False
        bad = bad or not same
        parts.append(
            f"determinism: {determinism['passes']} passes " + ("identical" if same else "DIFFER")
        )
    if diff is not None:
        bad = bad or bool(diff["regressed"])
        parts.append(
            ("regressed" if diff["regressed"] else "no regressions")
            + f" against {diff.get('baseline', 'the baseline')}"
        )
    cases = report["cases"]
    head = f"{cases['run']} of {cases['total']} case(s), {len(report['methods'])} method(s)"
    return bad, head + ("; " + "; ".join(parts) if parts else "")


def _measure_value(summary: Mapping[str, Any], measure: str) -> float | None:
    if measure in _RATES:
        value = summary[measure]
    else:
        value = summary["metrics"].get(measure, {}).get("mean")
    return None if value is None else float(value)


def _views_note(views: Mapping[str, str], depth: int | None) -> str:
    """Which columns read the raw ranking and which the evidence (chart labels may be
    cut short, so every column is named here)."""
    if not views:
        return ""
    ranked = [k for k, v in views.items() if v == RANKING]
    floored = [k for k, v in views.items() if v != RANKING]
    parts = []
    if ranked:
        parts.append(
            f"[R] the raw ranking to depth {depth} (no score floor, no top K): " + ", ".join(ranked)
        )
    parts.append("[E] the evidence (the top K after the score floors): " + ", ".join(floored))
    return "Columns: " + "; ".join(parts) + "."


def _table(report: Mapping[str, Any], names: list[str]) -> CaseTable:
    table = CaseTable(
        [("case", "minmax(160px,2fr)"), ("category", "1fr"), ("lang", "50px")]
        + [(name, "minmax(70px,1fr)") for name in names]
    )
    for case in report["caseResults"]:
        per = case["methods"]
        levels = ["no answer" if case["noAnswer"] else per[n]["hitLevel"] for n in names]
        passed = [per[n]["passed"] for n in names]
        tags = ["passes in every method" if all(passed) else "fails in some method"]
        if len({per[n]["hitLevel"] for n in names}) > 1:
            tags.append("methods differ")
        detail: list[tuple[str, str | list[str]]] = [("split", case["split"])]
        for n in names:
            m = per[n]
            metrics = ", ".join(
                f"{k} {v:.3f}" for k, v in sorted((m["metrics"] or {}).items()) if v is not None
            )
            detail.append(
                (
                    n,
                    [
                        f"{'pass' if m['passed'] else 'fail'}"
                        + (" (known failure)" if m["knownFailure"] else "")
                        + f", hit level {m['hitLevel']}, first expected rank "
                        f"{m['firstExpectedRank'] or 'none'}, "
                        f"{m['evidenceCount']} evidence block(s)",
                        *(["failures: " + ", ".join(m["failures"])] if m["failures"] else []),
                        *([metrics] if metrics else []),
                    ],
                )
            )
        table.add([case["id"], case["category"], case["language"], *levels], tags, detail)
    return table


def _latency(report: Mapping[str, Any], names: list[str]) -> dict[str, Any] | None:
    latency = report["timing"].get("latency") or {}
    if not latency:
        return None
    keys = ("count", "minMs", "medianMs", "meanMs", "p95Ms", "maxMs")
    rows = [
        [(n, ""), *((latency[n].get(k, ""), "num") for k in keys)] for n in names if n in latency
    ]
    series = [
        (label, [latency.get(n, {}).get(key) for n in names])
        for label, key in (("median", "medianMs"), ("p95", "p95Ms"))
    ]
    timing = report["timing"]
    note = ", ".join(
        f"{k} {timing[k]}" for k in ("wallSeconds", "cpuSeconds", "peakRssMiB") if k in timing
    )
    return {
        "chart": markup(bar_chart("latency", names, series, unit=" ms")),
        "head": ["method", *keys],
        "rows": rows,
        "note": note,
        **_resources(timing.get("resources") or {}, names),
    }


def _resources(resources: Mapping[str, Any], names: list[str]) -> dict[str, Any]:
    """The resource pass per method (``ragsnap.trial.resources``), when it ran."""
    if not resources:
        return {"resources_head": [], "resources": []}
    keys = ("lookups", "wallSeconds", "cpuSeconds", "rssDeltaMiB", "peakRssDeltaMiB")
    cgroup = ("cpuUsageUsec", "memoryCurrentBytes", "memoryPeakBytes")
    rows = [
        [
            (n, ""),
            *((resources[n][k], "num") for k in keys),
            *(((resources[n]["cgroup"] or {}).get(k, ""), "num") for k in cgroup),
        ]
        for n in names
        if n in resources
    ]
    return {
        "resources_head": ["method", *keys, *(f"cgroup {k}" for k in cgroup)],
        "resources": rows,
    }


def _shown(metric: str, value: Any) -> str:
    """A measure's value, or a gate status as it is."""
    return value if isinstance(value, str) else metric_value(metric, value)


def _tested(row: Mapping[str, Any], delta: float | None) -> list[tuple[Any, str]]:
    """A row's paired interval, corrected p and verdict cells ("—" when not tested);
    a significant row is coloured by whether it is better or worse."""
    test = row.get("significance")
    measure = row.get("measure", row.get("metric", ""))
    if test is None:
        return [("—", "num"), ("—", "num"), ("not tested", "")]
    better = delta is not None and (delta < 0 if measure in LOWER_IS_BETTER else delta > 0)
    status = ("improvement" if better else "regression") if test["significant"] else ""
    return [
        (interval_text(measure, test), "num"),
        (f"{test['pAdjusted']:.3f}", "num"),
        ("significant" if test["significant"] else "not significant", status),
    ]


def _significance(report: Mapping[str, Any]) -> dict[str, Any] | None:
    """The paired tests between methods: one row per pair and measure."""
    section = report.get("significance")
    if section is None:
        return None
    settings = section["settings"]
    rows = [
        [
            (row["method"], ""),
            (row["reference"], ""),
            (row["measure"], ""),
            (row["cases"], "num"),
            (delta_text(row["measure"], row["delta"]), "num"),
            *_tested(row, row["delta"]),
        ]
        for row in section["rows"]
    ]
    return {
        "head": ["method", "reference", "measure", "cases", "Δ", "interval", p_name(settings), ""],
        "rows": rows,
        "note": f"Paired over the cases that ran; {section['tested']} row(s) tested, corrected "
        f"as one family ({settings['correction']}), alpha {settings['alpha']}.",
    }


def _diff_rows(diff: Mapping[str, Any]) -> list[list[tuple[Any, str]]]:
    """The rows of the trial diff that moved, per method, regressions first (with their
    paired tests when the diff has them)."""
    tested = diff.get("significance") is not None
    moved = [
        (name, row)
        for name, entry in sorted(diff["methods"].items())
        for row in entry.get("rows", [])
        if row["status"] != "unchanged"
    ]
    # a gate status that changed (admitted -> experimental is a regression) reads as a row
    moved += [
        (name, {"metric": "gate status", **entry["gateStatus"]})
        for name, entry in sorted(diff["methods"].items())
        if entry.get("gateStatus") and entry["gateStatus"]["status"] != "unchanged"
    ]
    moved.sort(key=lambda item: (item[1]["status"] != "regression", item[0]))
    return [
        [
            (name, ""),
            (row["metric"], ""),
            (_shown(row["metric"], row["baseline"]), "num"),
            (_shown(row["metric"], row["current"]), "num"),
            (row["status"], row["status"]),
            *(_tested(row, _delta(row))[:2] if tested else []),
        ]
        for name, row in moved
    ]


def _delta(row: Mapping[str, Any]) -> float | None:
    """A measure row's change; None for a gate status row or a missing value."""
    if not all(isinstance(row[k], int | float) for k in ("baseline", "current")):
        return None
    return float(row["current"] - row["baseline"])


def _diff_head(diff: Mapping[str, Any]) -> list[str]:
    head = ["method", "metric", "baseline", "current", "status"]
    tests = diff.get("significance")
    return head if tests is None else [*head, "paired interval", p_name(tests)]


def render_trial_html(report: Mapping[str, Any], diff: Mapping[str, Any] | None = None) -> str:
    """The HTML page of a trial report and, when given, its diff against a baseline."""
    names = _methods(report)
    methods = report["methods"]
    bad, head = _verdict(report, diff)
    measures = list(TABLE_MEASURES)
    series = [(n, [_measure_value(methods[n]["summary"], m) for m in measures]) for n in names]
    views = methods[names[0]].get("views") or {}
    labels = [f"{m} {VIEW_MARKS[views[m]]}" if m in views else m for m in measures]
    segments = [(level, LEVEL_COLORS[level]) for level in LEVEL_COLORS]
    level_rows = []
    for n in names:
        summary = methods[n]["summary"]
        counts = [summary["hitLevels"][level] for level in reversed(HIT_LEVELS)]
        level_rows.append((n, [*counts, summary["cases"] - sum(counts)]))
    gates = [
        [
            (g["method"], ""),
            (g["gate"], ""),
            ("n/a" if g["value"] is None else g["value"], "num"),
            (
                ("passed", "improvement")
                if g["passed"]
                else ("failed", "regression")
                if g["ran"]
                else ("not run", "")
            ),
            (g["message"], ""),
        ]
        for g in report["gates"] or []
    ]
    # admitted or experimental (QilbeeDB's rule), with why; none without a gates file
    statuses = [
        [
            (n, ""),
            (methods[n]["status"], "improvement" if methods[n]["status"] == "admitted" else ""),
            (status_reason(methods[n]["gateCounts"]), ""),
        ]
        for n in names
        if methods[n].get("status") is not None
    ]
    return render(
        "trial.html.j2",
        title="ragsnap trial",
        bad=bad,
        verdict=head,
        card_items=[(f"{n} pass rate", percent(methods[n]["summary"]["passRate"])) for n in names],
        statuses=statuses,
        measures_chart=markup(bar_chart("measures", labels, series, maximum=1.0)),
        measures_views=_views_note(views, report["plan"]["depth"]),
        levels_chart=markup(stacked_bars("hit-levels-method", level_rows, segments)),
        latency=_latency(report, names),
        diff_rows=_diff_rows(diff) if diff is not None else None,
        diff_head=_diff_head(diff) if diff is not None else None,
        significance=_significance(report),
        gates=gates,
        cases=len(report["caseResults"]),
        case_rows=_table(report, names).context(
            ["fails in some method", "methods differ", "passes in every method"]
        ),
        plan=report["planSha256"][:16],
    )

"""The trial report as one self-contained HTML page (``trial --html-report FILE``).

A pure function of the trial report dict, built from the shared pieces of
``ragsnap.scoring.html`` (same safety, same determinism). The page shows the
verdict (gates, determinism, the diff against a baseline trial when there is
one, and its rows that moved); per-method bars of every table measure; hit
levels per method; latency (median and p95 bars, then the full summary); and
the case table, one row per case with each method's hit level, unfolded to
each method's first expected rank, failure codes and metrics. A trial report
names no query, text or source, so its privacy view renders the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..models import HIT_LEVELS
from ..scoring.diff import metric_value
from ..scoring.html import LEVEL_COLORS, CaseTable, bar_chart, esc, page, stacked_bars
from ..scoring.report import percent
from .report import TABLE_MEASURES

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
        ran = [g for g in gates if g["ran"]]
        failed = [g for g in ran if not g["passed"]]
        bad = bad or bool(failed)
        parts.append(f"gates: {len(ran) - len(failed)} of {len(ran)} passed")
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


def _latency(report: Mapping[str, Any], names: list[str]) -> list[str]:
    latency = report["timing"].get("latency") or {}
    if not latency:
        return []
    keys = ("count", "minMs", "medianMs", "meanMs", "p95Ms", "maxMs")
    rows = "".join(
        f"<tr><td>{esc(n)}</td>"
        + "".join(
            f'<td class="num">{esc(latency[n].get(k, ""))}</td>' for k in keys if n in latency
        )
        + "</tr>"
        for n in names
        if n in latency
    )
    head = "".join(f"<th>{k}</th>" for k in ("method", *keys))
    series = [
        (label, [latency.get(n, {}).get(key) for n in names])
        for label, key in (("median", "medianMs"), ("p95", "p95Ms"))
    ]
    timing = report["timing"]
    note = ", ".join(
        f"{k} {timing[k]}" for k in ("wallSeconds", "cpuSeconds", "peakRssMiB") if k in timing
    )
    return [
        "<h2>Latency per lookup</h2>",
        bar_chart("latency", names, series, unit=" ms"),
        f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>",
        f'<p class="muted">{esc(note)}</p>' if note else "",
    ]


def _diff_rows(diff: Mapping[str, Any]) -> list[str]:
    """The rows of the trial diff that moved, per method, regressions first."""
    moved = [
        (name, row)
        for name, entry in sorted(diff["methods"].items())
        for row in entry.get("rows", [])
        if row["status"] != "unchanged"
    ]
    moved.sort(key=lambda item: (item[1]["status"] != "regression", item[0]))
    rows = "".join(
        f"<tr><td>{esc(name)}</td><td>{esc(row['metric'])}</td>"
        f'<td class="num">{esc(metric_value(row["metric"], row["baseline"]))}</td>'
        f'<td class="num">{esc(metric_value(row["metric"], row["current"]))}</td>'
        f'<td class="{esc(row["status"])}">{esc(row["status"])}</td></tr>'
        for name, row in moved
    )
    head = "".join(f"<th>{h}</th>" for h in ("method", "metric", "baseline", "current", "status"))
    return [
        f"<h2>Against the baseline trial ({len(moved)} row(s) moved)</h2>",
        f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"
        if moved
        else '<p class="muted">No measure moved.</p>',
    ]


def render_trial_html(report: Mapping[str, Any], diff: Mapping[str, Any] | None = None) -> str:
    """The HTML page of a trial report and, when given, its diff against a baseline."""
    names = _methods(report)
    methods = report["methods"]
    bad, head = _verdict(report, diff)
    measures = list(TABLE_MEASURES)
    series = [(n, [_measure_value(methods[n]["summary"], m) for m in measures]) for n in names]
    segments = [(level, LEVEL_COLORS[level]) for level in LEVEL_COLORS]
    level_rows = []
    for n in names:
        summary = methods[n]["summary"]
        counts = [summary["hitLevels"][level] for level in reversed(HIT_LEVELS)]
        level_rows.append((n, [*counts, summary["cases"] - sum(counts)]))
    cards = "".join(
        f"<div class=card><b>{esc(percent(methods[n]['summary']['passRate']))}</b>"
        f"<span>{esc(n)} pass rate</span></div>"
        for n in names
    )
    body = [
        "<h1>ragsnap trial</h1>",
        f'<div class="verdict {"bad" if bad else "good"}" id="verdict">{esc(head)}</div>',
        f'<div class="cards">{cards}</div>',
        "<h2>Measures per method</h2>",
        bar_chart("measures", measures, series, maximum=1.0),
        "<h2>Hit levels per method</h2>",
        stacked_bars("hit-levels-method", level_rows, segments),
        *_latency(report, names),
    ]
    if diff is not None:
        body += _diff_rows(diff)
    gates = report["gates"] or []
    if gates:
        rows = "".join(
            f"<tr><td>{esc(g['method'])}</td><td>{esc(g['gate'])}</td>"
            f'<td class="num">{esc(g["value"])}</td>'
            f'<td class="{"improvement" if g["passed"] else "regression"}">'
            f"{'passed' if g['passed'] else ('failed' if g['ran'] else 'not run')}</td></tr>"
            for g in gates
        )
        body.append(
            f"<details><summary>Gates ({len(gates)})</summary><table><thead><tr><th>method"
            "</th><th>gate</th><th>value</th><th>result</th></tr></thead>"
            f"<tbody>{rows}</tbody></table></details>"
        )
    body.append(f"<h2>Cases ({len(report['caseResults'])})</h2>")
    table = _table(report, names).html(
        ["fails in some method", "methods differ", "passes in every method"]
    )
    footer = f"<footer>Plan {esc(report['planSha256'][:16])}.</footer>"
    return page("ragsnap trial", body, table + "\n" + footer)

"""History: score reports over time as one metric-over-time table and chart.

Pure functions behind ``ragsnap trend``. Input: (name, score report) pairs,
one per report file. Order: by the date in each file name (``YYYY-MM-DD``,
optionally followed by a time ``HH:MM[:SS]`` or ``HHMM[SS]``, the first such
date in the name) when every name holds one, ties kept in the order given;
otherwise the order given. A report is labelled by its date and time when it
has one, else by its file name.

The series, one value per report: the pass rate, Recall@K, the strong hit
rate, the no-answer false-positive rate, the miss count and every graded
mean any report has (``ndcg@10``, ``contextRecall`` ...; ``None`` where a
report has none). A report whose golden cases differ from the previous
one's (``casesSha256``) is marked: a move there may come from the cases, not
from retrieval.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..io.markdown import markdown_table
from .diff import delta_text, metric_value
from .html import esc, line_chart, page

__all__ = [
    "RATES",
    "Trend",
    "build_trend",
    "name_date",
    "render_trend_html",
    "render_trend_markdown",
]

#: the summary rates of every report, in this order, then the graded means
RATES = ("passRate", "recallAtK", "strongHitRate", "noAnswerFalsePositiveRate")
_DATE = re.compile(
    r"(?<!\d)(\d{4})-(\d{2})-(\d{2})(?:[T_ ]?(\d{2})[:\-]?(\d{2})(?:[:\-]?(\d{2}))?)?(?!\d)"
)


def name_date(name: str) -> str | None:
    """The first date (and time) in a file name as ``YYYY-MM-DD[ HH:MM[:SS]]``, or None."""
    match = _DATE.search(name)
    if match is None:
        return None
    year, month, day, hour, minute, second = match.groups()
    text = f"{year}-{month}-{day}"
    if hour is not None:
        text += f" {hour}:{minute}" + (f":{second}" if second else "")
    return text


@dataclass(frozen=True, slots=True)
class Trend:
    """Reports in time order: labels, whether the cases changed, and one series per metric."""

    labels: tuple[str, ...]
    names: tuple[str, ...]
    cases: tuple[int, ...]
    cases_changed: tuple[bool, ...]
    series: tuple[tuple[str, tuple[float | None, ...]], ...]
    dated: bool


def build_trend(reports: Sequence[tuple[str, Mapping[str, Any]]]) -> Trend:
    """The trend of ``(file name, score report)`` pairs (see the module docstring)."""
    dates = [name_date(name) for name, _ in reports]
    dated = bool(reports) and all(d is not None for d in dates)
    order = list(range(len(reports)))
    if dated:
        order.sort(key=lambda i: dates[i] or "")
    ordered = [reports[i] for i in order]
    labels = tuple((dates[i] or "") if dated else reports[i][0] for i in order)
    graded = sorted({m for _, r in ordered for m in r["summary"]["metrics"]})
    series: list[tuple[str, tuple[float | None, ...]]] = []
    for metric in (*RATES, "missCount"):
        series.append((metric, tuple(r["summary"][metric] for _, r in ordered)))
    for metric in graded:
        values = tuple((r["summary"]["metrics"].get(metric) or {}).get("mean") for _, r in ordered)
        series.append((metric, values))
    shas = [r["inputs"].get("casesSha256") for _, r in ordered]
    changed = tuple(i > 0 and shas[i] != shas[i - 1] for i in range(len(shas)))
    return Trend(
        labels=labels,
        names=tuple(name for name, _ in ordered),
        cases=tuple(r["summary"]["cases"] for _, r in ordered),
        cases_changed=changed,
        series=tuple(series),
        dated=dated,
    )


def _change(metric: str, values: Sequence[float | None]) -> str:
    known = [v for v in values if v is not None]
    if len(known) < 2:
        return "n/a"
    return delta_text(metric, round(known[-1] - known[0], 6))


def render_trend_markdown(trend: Trend) -> str:
    """A metric-over-time table (one row per report), then the first-to-last change."""
    metrics = [name for name, _ in trend.series]
    rows = []
    for i, label in enumerate(trend.labels):
        cells = [metric_value(name, values[i]) for name, values in trend.series]
        mark = " (cases changed)" if trend.cases_changed[i] else ""
        rows.append([label + mark, trend.cases[i], *cells])
    first_last = [[name, _change(name, values)] for name, values in trend.series]
    order = "by the date in their file names" if trend.dated else "in the order given"
    lines = [
        "# ragsnap trend",
        "",
        f"{len(trend.labels)} score report(s), {order}.",
        "",
        markdown_table(["report", "cases", *metrics], rows),
        "",
        "## First to last",
        "",
        markdown_table(["metric", "change"], first_last),
    ]
    if any(trend.cases_changed):
        lines += [
            "",
            "Reports marked *cases changed* scored other golden cases than the report "
            "before them: a move there may come from the cases, not from retrieval.",
        ]
    if trend.dated:
        lines += ["", "Files: " + ", ".join(f"`{name}`" for name in trend.names)]
    return "\n".join(lines) + "\n"


def render_trend_html(trend: Trend) -> str:
    """The trend as a page: rates and means over time, the miss count, then the table."""
    shares = [(n, v) for n, v in trend.series if n != "missCount"]
    misses = [(n, v) for n, v in trend.series if n == "missCount"]
    metrics = [name for name, _ in trend.series]
    head = "".join(f"<th>{esc(h)}</th>" for h in ("report", "cases", *metrics))
    body = "".join(
        f"<tr><td>{esc(label)}{' (cases changed)' if trend.cases_changed[i] else ''}</td>"
        f'<td class="num">{trend.cases[i]}</td>'
        + "".join(
            f'<td class="num">{esc(metric_value(name, values[i]))}</td>'
            for name, values in trend.series
        )
        + "</tr>"
        for i, label in enumerate(trend.labels)
    )
    count = len(trend.labels)
    first, last = (trend.labels[0], trend.labels[-1]) if count else ("", "")
    blocks = [
        "<h1>ragsnap trend</h1>",
        f'<div class="verdict good" id="verdict">{count} score report(s)'
        + (f", {esc(first)} to {esc(last)}" if count > 1 else "")
        + "</div>",
        "<h2>Rates and means</h2>",
        line_chart("trend", trend.labels, [(n, list(v)) for n, v in shares]),
        "<h2>Misses</h2>",
        line_chart("trend-misses", trend.labels, [(n, list(v)) for n, v in misses], maximum=None),
        "<h2>Table</h2>",
        f'<div class="wide"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody>'
        "</table></div>",
    ]
    if any(trend.cases_changed):
        blocks.append(
            '<p class="muted">Reports marked "cases changed" scored other golden cases than '
            "the report before them.</p>"
        )
    return page("ragsnap trend", blocks)

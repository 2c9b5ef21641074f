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
report has none); ``select`` keeps the chosen ones (``--metrics``). A report
whose golden cases differ from the previous one's (``casesSha256``) is marked: a
move there may come from the cases, not from retrieval.

**The latest change** (``latest_change``), the banner of both renderings: the
last report against the one before it, metric by metric. A metric *dropped* when
it got worse by more than ``EPSILON`` (lower for the rates and means, higher for
the miss count and the no-answer false-positive rate), *improved* when it got
better by as much; a metric missing from either report is left out. The banner
is red ("dropped: ...") when any shown metric dropped, green only when none did,
neutral with a single report. The first-to-last change is shown after it.

The HTML page (``templates/html/trend.html.j2``) draws one small chart per
metric (rates and means on a 0..1 scale, the miss count on its own), each titled
with its latest value and move.

``history_name`` names a report in the history folder that ``ragsnap accept``
and ``ragsnap score --history`` write and ``ragsnap trend`` reads by default.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from ..io.jsonio import dump_json
from ..io.markdown import markdown_table
from .aggregates import LOWER_IS_BETTER
from .diff import delta_text, metric_value
from .html import line_chart, markup, render

__all__ = [
    "EPSILON",
    "RATES",
    "LatestChange",
    "Trend",
    "build_trend",
    "history_name",
    "latest_change",
    "name_date",
    "render_trend_html",
    "render_trend_markdown",
    "select",
]

#: a move smaller than this is no move (reports round their numbers to 6 decimals)
EPSILON = 1e-9
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


def history_name(report: Mapping[str, Any], now: datetime) -> str:
    """The file name of ``report`` in the history folder: the UTC date and time
    ``now`` to the millisecond, then the first 8 hex digits of the SHA-256 of the
    report's bytes (as the one writer writes them), so names sort by time and two
    reports written at once get two names: ``2026-12-04T221533.042Z-1a2b3c4d.json``.
    ``name_date`` reads its date and time to the second; reports of the same second
    keep their names' order."""
    utc = now.astimezone(timezone.utc)
    stamp = utc.strftime("%Y-%m-%dT%H%M%S") + f".{utc.microsecond // 1000:03d}Z"
    return f"{stamp}-{hashlib.sha256(dump_json(report)).hexdigest()[:8]}.json"


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


def select(trend: Trend, metrics: Sequence[str]) -> Trend:
    """``trend`` with only the series named in ``metrics``, in that order; an unknown
    name is a ``ValueError`` listing the known ones."""
    have = dict(trend.series)
    unknown = [name for name in metrics if name not in have]
    if unknown:
        raise ValueError(
            f"no metric {', '.join(unknown)} in these reports; use some of: {', '.join(have)}"
        )
    return Trend(
        labels=trend.labels,
        names=trend.names,
        cases=trend.cases,
        cases_changed=trend.cases_changed,
        series=tuple((name, have[name]) for name in dict.fromkeys(metrics)),
        dated=trend.dated,
    )


@dataclass(frozen=True, slots=True)
class LatestChange:
    """The last report against the one before it (``None`` labels: a single report)."""

    before: str | None
    after: str | None
    #: (metric, before, after) of each metric that got worse / better / stayed
    dropped: tuple[tuple[str, float, float], ...]
    improved: tuple[tuple[str, float, float], ...]
    unchanged: tuple[str, ...]
    cases_changed: bool

    def text(self) -> str:
        """The banner: what dropped, else that nothing did."""
        if self.before is None:
            return f"1 score report ({self.after}): no change yet; trend needs two"
        head = f"Latest change, {self.before} -> {self.after}: "
        if self.dropped:
            body = "dropped: " + ", ".join(_move(*row) for row in self.dropped)
            if self.improved:
                body += "; improved: " + ", ".join(_move(*row) for row in self.improved)
        elif self.improved:
            body = "nothing dropped; improved: " + ", ".join(_move(*row) for row in self.improved)
        else:
            body = "nothing dropped, nothing moved"
        if self.cases_changed:
            body += " (the golden cases changed: a move may come from the cases)"
        return head + body


def _move(metric: str, before: float, after: float) -> str:
    return (
        f"{metric} {metric_value(metric, before)} -> {metric_value(metric, after)} "
        f"({delta_text(metric, round(after - before, 6))})"
    )


def latest_change(trend: Trend) -> LatestChange:
    """The latest change of ``trend`` (see the module docstring)."""
    if len(trend.labels) < 2:
        return LatestChange(None, trend.labels[-1] if trend.labels else None, (), (), (), False)
    dropped: list[tuple[str, float, float]] = []
    improved: list[tuple[str, float, float]] = []
    unchanged: list[str] = []
    for name, values in trend.series:
        before, after = values[-2], values[-1]
        if before is None or after is None:
            continue
        gain = (before - after) if name in LOWER_IS_BETTER else (after - before)
        if gain < -EPSILON:
            dropped.append((name, before, after))
        elif gain > EPSILON:
            improved.append((name, before, after))
        else:
            unchanged.append(name)
    return LatestChange(
        trend.labels[-2],
        trend.labels[-1],
        tuple(dropped),
        tuple(improved),
        tuple(unchanged),
        trend.cases_changed[-1],
    )


def _change(metric: str, values: Sequence[float | None]) -> str:
    known = [v for v in values if v is not None]
    if len(known) < 2:
        return "n/a"
    return delta_text(metric, round(known[-1] - known[0], 6))


def render_trend_markdown(trend: Trend) -> str:
    """The latest change, a metric-over-time table (one row per report), then the
    first-to-last change."""
    metrics = [name for name, _ in trend.series]
    rows = []
    for i, label in enumerate(trend.labels):
        cells = [metric_value(name, values[i]) for name, values in trend.series]
        mark = " (cases changed)" if trend.cases_changed[i] else ""
        rows.append([label + mark, trend.cases[i], *cells])
    first_last = [[name, _change(name, values)] for name, values in trend.series]
    order = "by the date in their file names" if trend.dated else "in the order given"
    latest = latest_change(trend)
    lines = [
        "# ragsnap trend",
        "",
        f"**{latest.text()}**",
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


def _small_chart(trend: Trend, name: str, values: Sequence[float | None]) -> dict[str, Any]:
    """One metric's chart, titled with its latest value and its latest move."""
    known = [v for v in values if v is not None]
    title = name
    if known:
        title += f": {metric_value(name, known[-1])}"
    if len(values) > 1 and values[-1] is not None and values[-2] is not None:
        title += f" ({delta_text(name, round(values[-1] - values[-2], 6))} latest)"
    chart = line_chart(
        f"trend-{name}",
        trend.labels,
        [(name, list(values))],
        maximum=None if name == "missCount" else 1.0,
        width=380,
        ticks=2,  # a small chart: the first, a middle and the last report's labels
    )
    return {"name": name, "title": title, "svg": markup(chart)}


def render_trend_html(trend: Trend) -> str:
    """The trend as a page: the latest change, one small chart per metric, the table."""
    metrics = [name for name, _ in trend.series]
    rows = [
        [
            (label + (" (cases changed)" if trend.cases_changed[i] else ""), ""),
            (trend.cases[i], "num"),
            *((metric_value(name, values[i]), "num") for name, values in trend.series),
        ]
        for i, label in enumerate(trend.labels)
    ]
    count = len(trend.labels)
    latest = latest_change(trend)
    return render(
        "trend.html.j2",
        title="ragsnap trend",
        state="bad" if latest.dropped else ("good" if latest.before is not None else ""),
        verdict=latest.text(),
        count=count,
        span=f", {trend.labels[0]} to {trend.labels[-1]}" if count > 1 else "",
        charts=[_small_chart(trend, name, values) for name, values in trend.series],
        head=["report", "cases", *metrics],
        rows=rows,
        cases_changed=any(trend.cases_changed),
    )

"""Self-contained HTML reports: one file, inline SVG charts, nothing fetched.

Pure functions from report dicts to the text of one HTML file
(``--html-report FILE``, or ``--report html=FILE`` for ``score`` and ``diff``).
The same inputs give the same bytes: no timestamp, no random id, JSON with
sorted keys, numbers formatted to fixed decimals.

What a page holds, summaries first:

* the verdict (regressed or not against the baseline; failing cases), then the
  expectations that were not checked, when any were (``report.unchecked_lines``:
  not applicable to the fixtures, skipped by ``scoring.skip``; a case's own in its
  row's "not checked");
* hit-level distribution per category and per language: one stacked bar per
  group (strong, medium, weak, miss, and no-answer cases);
* without a baseline, the overall rates and graded means as bars;
* with a baseline diff: baseline vs current per metric (paired bars, then a
  table with the delta, the status and the paired test's ``p`` and 95%
  interval where the diff has them), and the rank movement of every case
  whose first expected rank moved (baseline -> current, "none" below the
  last rank);
* the case table: a text filter, a status select, pages of ``PAGE_SIZE``
  rows; each row is a ``<details>`` folded by default, opened to the case's
  evidence (top sources with their ranks, the reasons, the pipeline fields,
  the metrics, what changed against the baseline, what it lost);
* with a baseline diff whose cases carry causes (``attribution``): "What the
  cases lost, and where", baseline and current side by side for each such case
  (``ragsnap.scoring.sidebyside``: the target's evidence text before and after
  with the changed words marked, its ranks per stage with the attributed stage
  marked, the cause and the losses); the case's row links to it.

Templates: the markup lives in Jinja2 templates shipped as package data
(``ragsnap/templates/html/``: ``page.html.j2`` the document every page
extends, ``_macros.html.j2`` the shared tables, cards and case table, one
template per page kind, and the page's ``page.css`` and ``page.js``); the
Python here computes what they show. Charts stay generated data: the chart
functions build the inline SVG (escaping their labels) and hand it to the
templates as ``Markup``. Jinja2 is imported only when a page is rendered.

Safety and size: the templates autoescape every value (entities spelled as
``html.escape`` spells them, so the pages keep their bytes); the case table's
rows travel as JSON in a ``<script type="application/json">`` block with
``<``, ``>`` and ``&`` escaped, and are drawn with ``textContent`` only, so a
query holding ``<script>`` stays text (a row's link to its side-by-side view is an
anchor id generated here). The Content-Security-Policy allows no
network at all and only the page's own script (by its SHA-256). Only one page
of rows is ever in the document, so a 10,000-case report opens at once.

A privacy report (``"privacy": true``) holds no text to show: its page shows
ids, hit levels, ranks, metrics and id-based reasons only, and hashes for
inputs; its side-by-side view shows ranks only.

The building blocks (``render``, ``CaseTable``, the charts) are shared by the
trial, live-check and trend pages.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import html
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..models import HIT_LEVELS
from .diff import REGRESSION, delta_text, lost_text, metric_value, verdict
from .report import outcome_text, percent, report_outcome, unchecked_lines, unchecked_text
from .sidebyside import why_context

if TYPE_CHECKING:  # imported when a page is rendered
    import jinja2
    from markupsafe import Markup

__all__ = [
    "LEVEL_COLORS",
    "PAGE_SIZE",
    "CaseTable",
    "bar_chart",
    "esc",
    "line_chart",
    "markup",
    "paired_bars",
    "rank_movement",
    "render",
    "render_score_html",
    "stacked_bars",
]

#: case-table rows per page
PAGE_SIZE = 50
#: hit level (and "no answer") -> colour, best first
LEVEL_COLORS = {
    "strong": "#1a7f37",
    "medium": "#8cc265",
    "weak": "#d4a72c",
    "miss": "#cf222e",
    "no answer": "#8c959f",
}
_SERIES_COLORS = (
    "#0969da",
    "#bf3989",
    "#1a7f37",
    "#bc4c00",
    "#8250df",
    "#57606a",
    "#d4a72c",
    "#1b7c83",
    "#cf222e",
    "#6e7781",
)
_RATES = ("passRate", "recallAtK", "strongHitRate", "noAnswerFalsePositiveRate")
_STATUS_ORDER = ("regression", "improvement", "changed", "added", "removed")
#: the case rows shown in the rank-movement plot, worst moves first
_MAX_MOVES = 200


def esc(value: Any) -> str:
    """Text for SVG content or a quoted attribute in a chart (the charts are
    generated here; everything the templates write is escaped by Jinja2)."""
    return html.escape(str(value), quote=True)


def _script_json(data: Any) -> str:
    """JSON that cannot end its ``<script>`` block or open a comment."""
    text = json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    for raw, safe in (("&", "\\u0026"), ("<", "\\u003c"), (">", "\\u003e")):
        text = text.replace(raw, safe)
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def _num(value: float) -> str:
    """A coordinate with at most two decimals, the same on every machine."""
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


# --- the case table ---------------------------------------------------------------------


@dataclass
class CaseTable:
    """The rows of a page's case table.

    ``columns``: header and CSS grid width of each summary cell; each row has one
    text per column (``cells``), the status tags the select filters on, and its
    evidence as (label, text or list of texts) pairs, shown when unfolded.

    In the page's data a row is ``{"c": cells, "t": tags, "d": [[label index,
    value], ...]}`` and the labels are listed once (``labels``): a 10,000-case
    table repeats no label text. A row with a ``link`` (an anchor id in the page)
    also has ``"w"``: its unfolded evidence links there.
    """

    columns: Sequence[tuple[str, str]]
    rows: list[dict[str, Any]] = field(default_factory=list)
    labels: dict[str, int] = field(default_factory=dict)

    def add(
        self,
        cells: Sequence[Any],
        tags: Sequence[str],
        detail: Sequence[tuple[str, str | Sequence[str]]],
        link: str | None = None,
    ) -> None:
        """Add a row; ``None`` cells show as ``-``."""
        self.rows.append(
            {
                **({} if link is None else {"w": link}),
                "c": ["-" if c is None else str(c) for c in cells],
                "t": list(tags),
                "d": [
                    [
                        self.labels.setdefault(label, len(self.labels)),
                        value if isinstance(value, str) else [str(v) for v in value],
                    ]
                    for label, value in detail
                    if value not in ("", [], ())
                ],
            }
        )

    def context(self, statuses: Sequence[str]) -> dict[str, Any]:
        """What the ``case_table`` macro draws: the ``statuses`` some row has (the
        select's options), the columns, and the rows as a JSON data block."""
        present = {tag for row in self.rows for tag in row["t"]}
        data = {"labels": list(self.labels), "pageSize": PAGE_SIZE, "rows": self.rows}
        return {
            "statuses": [s for s in statuses if s in present],
            "cols": " ".join(width for _, width in self.columns),
            "head": [name for name, _ in self.columns],
            "data": markup(_script_json(data)),
        }


# --- the page ---------------------------------------------------------------------------


def render(template: str, **context: Any) -> str:
    """One self-contained HTML document from ``templates/html/<template>``.

    Every page template extends ``page.html.j2``, which holds the
    Content-Security-Policy: it refuses every fetch (no network, no external
    script, font or style) and every script but the page's own (``page.js``,
    allowed by its SHA-256, computed here from the very text the page holds).
    """
    script = _asset("page.js")
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    policy = (
        "default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
        f"script-src 'sha256-{digest}'"
    )
    return (
        _environment()
        .get_template(template)
        .render(
            policy=policy,
            style=markup(_asset("page.css")),
            script=markup(script),
            **context,
        )
    )


@functools.cache
def _environment() -> jinja2.Environment:
    """The Jinja2 environment (imported here: only an HTML page needs it).

    Autoescaping is on for every ``{{ value }}``; ``finalize`` spells the
    entities as ``html.escape`` does (``&quot;``, ``&#x27;`` where MarkupSafe
    writes ``&#34;``, ``&#39;``), so the pages keep the bytes they had before the
    templates. Charts and the case data arrive as ``Markup`` (built and escaped by
    the chart functions and ``_script_json``). An undefined name is an error.
    """
    import jinja2

    def finalize(value: Any) -> Any:
        if hasattr(value, "__html__"):
            return value
        return markup(html.escape(str(value), quote=True))

    return jinja2.Environment(
        loader=jinja2.PackageLoader("ragsnap", "templates/html"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        finalize=finalize,
    )


@functools.cache
def _asset(name: str) -> str:
    """A static file beside the templates (the page's style and script), as is."""
    env = _environment()
    assert env.loader is not None
    return env.loader.get_source(env, name)[0]


def markup(text: str) -> Markup:
    """``text`` (generated, already-escaped HTML such as a chart) marked safe."""
    from markupsafe import Markup

    return Markup(text)


def _legend(items: Sequence[tuple[str, str]]) -> str:
    return (
        '<div class="legend">'
        + "".join(f'<span><i style="background:{c}"></i>{esc(n)}</span>' for n, c in items)
        + "</div>"
    )


# --- charts -----------------------------------------------------------------------------


def stacked_bars(
    name: str,
    rows: Sequence[tuple[str, Sequence[int]]],
    segments: Sequence[tuple[str, str]],
    width: int = 500,
) -> str:
    """Horizontal stacked bars of counts, one per row, scaled to the row's total
    (each bar shows shares); labels left, totals right."""
    label_w, bar_w, row_h = 130, width - 190, 22
    height = row_h * len(rows) + 8
    parts = [
        f'<svg class="chart" data-chart="{esc(name)}" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{esc(name)}">'
    ]
    for i, (label, counts) in enumerate(rows):
        y = 4 + i * row_h
        total = sum(counts)
        parts.append(
            f'<text x="{label_w - 6}" y="{y + 15}" text-anchor="end">{esc(_cut(label, 18))}</text>'
        )
        x = float(label_w)
        for (segment, color), count in zip(segments, counts, strict=True):
            if count <= 0 or total == 0:
                continue
            w = bar_w * count / total
            parts.append(
                f'<rect class="bar" x="{_num(x)}" y="{y + 2}" width="{_num(w)}" '
                f'height="{row_h - 6}" fill="{color}"><title>{esc(label)}: {count} '
                f"{esc(segment)}</title></rect>"
            )
            x += w
        parts.append(f'<text x="{label_w + bar_w + 6}" y="{y + 15}">{total}</text>')
    parts.append("</svg>")
    return "".join(parts) + _legend(segments)


def paired_bars(
    name: str,
    rows: Sequence[tuple[str, float | None, float | None]],
    labels: tuple[str, str] = ("baseline", "current"),
    width: int = 600,
) -> str:
    """Two horizontal bars per row (values in [0, 1]): the first grey, the second
    blue, the value written after each."""
    label_w, bar_w, row_h = 200, width - 260, 30
    height = row_h * len(rows) + 8
    colors = ("#afb8c1", "#0969da")
    parts = [
        f'<svg class="chart" data-chart="{esc(name)}" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{esc(name)}">'
    ]
    for i, (label, *values) in enumerate(rows):
        y = 4 + i * row_h
        parts.append(
            f'<text x="{label_w - 6}" y="{y + 17}" text-anchor="end">{esc(_cut(label, 28))}</text>'
        )
        for j, value in enumerate(values):
            if value is None:
                continue
            w = bar_w * min(max(value, 0.0), 1.0)
            by = y + 2 + j * 12
            parts.append(
                f'<rect class="bar" x="{label_w}" y="{by}" width="{_num(max(w, 1.0))}" '
                f'height="10" fill="{colors[j]}"><title>{esc(label)} {labels[j]}: '
                f"{value:.3f}</title></rect>"
                f'<text x="{_num(label_w + max(w, 1.0) + 4)}" y="{by + 9}" '
                f'style="font-size:10px">{value:.3f}</text>'
            )
    parts.append("</svg>")
    shown = [j for j in (0, 1) if any(values[j] is not None for _, *values in rows)]
    return "".join(parts) + _legend([(labels[j], colors[j]) for j in shown])


def bar_chart(
    name: str,
    groups: Sequence[str],
    series: Sequence[tuple[str, Sequence[float | None]]],
    maximum: float | None = None,
    unit: str = "",
    width: int = 760,
) -> str:
    """Vertical grouped bars: one group per ``groups`` entry, one bar per series
    (a method, say); ``maximum`` fixes the scale (1 for rates), else the largest
    value does."""
    values = [v for _, vs in series for v in vs if v is not None]
    top = maximum if maximum is not None else max(values, default=1.0) or 1.0
    plot_h, base, left = 160, 190, 64
    group_w = (width - left - 10) / max(len(groups), 1)
    bar_w = max(min((group_w - 12) / max(len(series), 1), 28), 2)
    height = base + 48
    parts = [
        f'<svg class="chart" data-chart="{esc(name)}" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{esc(name)}">',
        f'<line x1="{left}" y1="{base}" x2="{width - 10}" y2="{base}" stroke="#8c959f"/>',
        f'<text x="{left - 4}" y="{base - plot_h + 4}" text-anchor="end">'
        f"{_short_number(top)}{esc(unit)}</text>",
        f'<text x="{left - 4}" y="{base + 4}" text-anchor="end">0</text>',
    ]
    for g, group in enumerate(groups):
        gx = left + g * group_w + 6
        for s, (label, vs) in enumerate(series):
            value = vs[g]
            if value is None:
                continue
            h = plot_h * min(max(value / top, 0.0), 1.0)
            parts.append(
                f'<rect class="bar" x="{_num(gx + s * bar_w)}" y="{_num(base - max(h, 1.0))}" '
                f'width="{_num(bar_w - 2)}" height="{_num(max(h, 1.0))}" '
                f'fill="{_SERIES_COLORS[s % len(_SERIES_COLORS)]}"><title>{esc(group)}, '
                f"{esc(label)}: {_short_number(value)}{esc(unit)}</title></rect>"
            )
        parts.append(
            f'<text x="{_num(gx + (group_w - 12) / 2)}" y="{base + 16}" text-anchor="middle" '
            f'style="font-size:11px">{esc(_cut(group, 14))}</text>'
        )
    parts.append("</svg>")
    return "".join(parts) + _legend(_series_legend(series))


def rank_movement(
    name: str, moves: Sequence[tuple[str, int | None, int | None]], width: int = 420
) -> str:
    """A slope chart of first expected ranks, baseline (left) -> current (right):
    one line per case, red when it got worse, green when better; "none" (not in
    the top K) is the bottom row."""
    deepest = max([r for _, a, b in moves for r in (a, b) if r is not None] + [1])
    step, top, left, right = 26, 30, 120, width - 120
    height = top + step * (deepest + 1) + 10

    def y(rank: int | None) -> int:
        return top + step * ((deepest + 1 if rank is None else rank) - 1)

    parts = [
        f'<svg class="chart" data-chart="{esc(name)}" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{esc(name)}">',
        f'<text x="{left}" y="16" text-anchor="middle">baseline</text>',
        f'<text x="{right}" y="16" text-anchor="middle">current</text>',
    ]
    for rank in [*range(1, deepest + 1), None]:
        label = "none" if rank is None else f"rank {rank}"
        parts.append(
            f'<text x="{left - 14}" y="{y(rank) + 4}" text-anchor="end">{label}</text>'
            f'<line x1="{left}" y1="{y(rank)}" x2="{right}" y2="{y(rank)}" stroke="#eaeef2"/>'
        )
    for case_id, before, after in moves:
        worse = _rank_key(after) > _rank_key(before)
        color = "#cf222e" if worse else "#1a7f37"
        title = f"<title>{esc(case_id)}: {before or 'none'} → {after or 'none'}</title>"
        parts.append(
            f'<path class="move" d="M{left} {y(before)} L{right} {y(after)}" stroke="{color}" '
            f'stroke-width="2" fill="none" opacity="0.7">{title}</path>'
            f'<circle class="dot" cx="{left}" cy="{y(before)}" r="4" fill="{color}">{title}'
            "</circle>"
            f'<circle class="dot" cx="{right}" cy="{y(after)}" r="4" fill="{color}">{title}'
            "</circle>"
        )
    parts.append("</svg>")
    return "".join(parts) + _legend([("worse", "#cf222e"), ("better", "#1a7f37")])


def line_chart(
    name: str,
    labels: Sequence[str],
    series: Sequence[tuple[str, Sequence[float | None]]],
    maximum: float | None = 1.0,
    width: int = 760,
    ticks: int = 12,
) -> str:
    """One line per series over the ``labels`` (x, in order), with a dot per value;
    ``maximum`` fixes the scale (1 for rates and means), else the largest value;
    about ``ticks`` labels are written under the x axis (the last always)."""
    values = [v for _, vs in series for v in vs if v is not None]
    top = maximum if maximum is not None else max(values, default=1.0) or 1.0
    left, plot_h, base = 44, 200, 220
    span = max(len(labels) - 1, 1)
    plot_w = width - left - 60
    height = base + 60

    def xy(i: int, v: float) -> tuple[str, str]:
        x = left + (plot_w * i / span if len(labels) > 1 else plot_w / 2)
        return _num(x), _num(base - plot_h * min(max(v / top, 0.0), 1.0))

    parts = [
        f'<svg class="chart" data-chart="{esc(name)}" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{esc(name)}">'
    ]
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        ty = _num(base - plot_h * tick)
        parts.append(
            f'<line x1="{left}" y1="{ty}" x2="{width - 20}" y2="{ty}" stroke="#eaeef2"/>'
            f'<text x="{left - 4}" y="{ty}" text-anchor="end" style="font-size:10px">'
            f"{_short_number(top * tick)}</text>"
        )
    every = max(1, len(labels) // ticks)
    for i, label in enumerate(labels):
        if i % every == 0 or i == len(labels) - 1:
            x, _ = xy(i, 0.0)
            parts.append(
                f'<text x="{x}" y="{base + 16}" text-anchor="middle" style="font-size:10px">'
                f"{esc(_cut(label, 16))}</text>"
            )
    for s, (label, vs) in enumerate(series):
        color = _SERIES_COLORS[s % len(_SERIES_COLORS)]
        dash = ' stroke-dasharray="6 3"' if s >= len(_SERIES_COLORS) else ""
        points = [(i, v) for i, v in enumerate(vs) if v is not None]
        if len(points) > 1:
            d = " ".join(
                f"{'M' if k == 0 else 'L'}{' '.join(xy(i, v))}" for k, (i, v) in enumerate(points)
            )
            parts.append(
                f'<path class="line" d="{d}" stroke="{color}" stroke-width="2" fill="none"{dash}>'
                f"<title>{esc(label)}</title></path>"
            )
        for i, v in points:
            x, py = xy(i, v)
            parts.append(
                f'<circle class="dot" cx="{x}" cy="{py}" r="3.5" fill="{color}"><title>'
                f"{esc(label)} {esc(labels[i])}: {_short_number(v)}</title></circle>"
            )
    parts.append("</svg>")
    return "".join(parts) + _legend(_series_legend(series, dashed=True))


def _series_legend(
    series: Sequence[tuple[str, Any]], dashed: bool = False
) -> list[tuple[str, str]]:
    """(label, colour) per series; past the palette a line chart's lines are dashed,
    and the legend says so."""
    n = len(_SERIES_COLORS)
    return [
        (label + (" (dashed)" if dashed and s >= n else ""), _SERIES_COLORS[s % n])
        for s, (label, _) in enumerate(series)
    ]


def _rank_key(rank: int | None) -> float:
    return float("inf") if rank is None else float(rank)


def _short_number(value: float) -> str:
    return f"{value:.3f}".rstrip("0").rstrip(".") if value < 10 else f"{value:.1f}"


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --- the score page ---------------------------------------------------------------------


def _level_rows(groups: Mapping[str, Mapping[str, Any]]) -> list[tuple[str, list[int]]]:
    rows = []
    for value, agg in groups.items():
        levels = agg["hitLevels"]
        counts = [levels[level] for level in reversed(HIT_LEVELS)]
        rows.append((value, [*counts, agg["cases"] - sum(counts)]))
    return rows


def _cards(summary: Mapping[str, Any]) -> list[tuple[str, Any]]:
    return [
        ("cases", summary["cases"]),
        ("passed", summary["passed"]),
        ("failed", f"{summary['failed']} ({summary['knownFailures']} known)"),
        ("pass rate", percent(summary["passRate"])),
        ("Recall@K", percent(summary["recallAtK"])),
        ("strong hits", percent(summary["strongHitRate"])),
        ("misses", summary["missCount"]),
        ("no-answer FP", percent(summary["noAnswerFalsePositiveRate"])),
    ]


def _significance(row: Mapping[str, Any]) -> tuple[str, str]:
    test = row.get("significance")
    if not test:
        return "", ""
    low, high = test["ci"]
    metric = row["metric"]
    p = test.get("pAdjusted", test["p"])  # corrected for the rows the diff tested
    return f"{p:.3f}", f"[{delta_text(metric, low)}, {delta_text(metric, high)}]"


#: the aggregate tables' header
_AGGREGATE_HEAD = (
    "scope",
    "metric",
    "baseline",
    "current",
    "delta",
    "status",
    "adjusted p",
    "95% CI",
)


def _aggregate_rows(rows: Sequence[Mapping[str, Any]]) -> list[list[tuple[Any, str]]]:
    """Table rows as (text, CSS class) cells, the ``table`` macro's input."""
    out = []
    for row in rows:
        metric = row["metric"]
        p, ci = _significance(row)
        out.append(
            [
                (row["scope"], ""),
                (metric, ""),
                (metric_value(metric, row["baseline"]), "num"),
                (metric_value(metric, row["current"]), "num"),
                (delta_text(metric, row["delta"]), "num"),
                (row["status"], row["status"]),
                (p, "num"),
                (ci, "num"),
            ]
        )
    return out


def _diff_context(diff: Mapping[str, Any]) -> dict[str, Any]:
    overall = [row for row in diff["aggregates"] if row["scope"] == "all"]
    bars = [
        (row["metric"], row["baseline"], row["current"])
        for row in overall
        if row["metric"] != "missCount"
    ]
    moved = [r for r in diff["aggregates"] if r["scope"] != "all" and r["status"] != "unchanged"]
    moved.sort(
        key=lambda r: _STATUS_ORDER.index(r["status"]) if r["status"] in _STATUS_ORDER else 9
    )
    moves = []
    for case in diff["cases"]:
        for change in case["changes"]:
            if change["field"] == "firstExpectedRank":
                moves.append((case["id"], change["baseline"], change["current"]))
    moves.sort(key=lambda m: (-(_rank_key(m[2]) - _rank_key(m[1])), m[0]))
    shown = moves[:_MAX_MOVES]
    matrix = diff["hitLevelTransitions"]
    levels = list(reversed(HIT_LEVELS))
    return {
        "metrics_chart": markup(paired_bars("metrics", bars)),
        "overall": _aggregate_rows(overall),
        "moved": _aggregate_rows(moved),
        "moves": len(moves),
        "moves_shown": len(shown),
        "moves_chart": markup(rank_movement("rank-movement", shown)) if shown else "",
        "levels": levels,
        "transitions": [(before, [matrix[before][after] for after in levels]) for before in levels],
    }


def _sources(sources: Sequence[str] | None, matched: Sequence[str]) -> list[str]:
    if sources is None:
        return []
    return [f"{i}. {s}{'  (expected)' if s in matched else ''}" for i, s in enumerate(sources, 1)]


def _metrics_text(metrics: Mapping[str, Any] | None) -> str:
    if not metrics:
        return ""
    return ", ".join(f"{k} {v:.3f}" for k, v in sorted(metrics.items()) if v is not None)


def _value_text(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ", ".join(str(v) for v in value) or "[]"
    return str(value)


def _change_text(change: Mapping[str, Any]) -> str:
    if change["baseline"] is None and change["current"] is None:
        return f"{change['field']} changed ({change['status']})"
    before, after = _value_text(change["baseline"]), _value_text(change["current"])
    return f"{change['field']}: {before} → {after} ({change['status']})"


def _score_table(
    report: Mapping[str, Any], diff: Mapping[str, Any] | None, links: Mapping[str, str]
) -> CaseTable:
    """The score page's case table; ``links``: case id -> the anchor of its
    side-by-side view."""
    private = report.get("privacy") is True
    columns = [("case", "minmax(160px,2fr)")]
    if not private:
        columns.append(("query", "minmax(160px,3fr)"))
    columns += [
        ("category", "1fr"),
        ("lang", "50px"),
        ("hit level", "80px"),
        ("rank", "44px"),
        ("result", "110px"),
    ]
    if diff is not None:
        columns.append(("vs baseline", "100px"))
    table = CaseTable(columns)
    changed = {c["id"]: c for c in diff["cases"]} if diff is not None else {}
    for case in report["cases"]:
        known = bool(case.get("knownFailure"))
        result = "pass" if case["passed"] else ("known failure" if known else "fail")
        tags = [result]
        row = changed.get(case["id"])
        if row is not None:
            tags.append(row["status"])
        cells: list[Any] = [case["id"]]
        if not private:
            cells.append(case.get("query"))
        cells += [
            case["category"],
            case["language"],
            "no answer" if case["noAnswer"] else case["hitLevel"],
            case["firstExpectedRank"],
            result,
        ]
        if diff is not None:
            cells.append("" if row is None else row["status"])
        matched = case.get("matchedSources", [])
        detail: list[tuple[str, str | Sequence[str]]] = [
            ("split", case["split"]),
            ("hit level", f"{case['hitLevel']} (minimum {case['minHitLevel']})"),
            ("first expected rank", str(case["firstExpectedRank"] or "none")),
            ("evidence blocks", str(case["evidenceCount"])),
            ("reasons", case["reasons"] or ["passes every expectation"]),
        ]
        unchecked = unchecked_text(case)
        if unchecked is not None:
            detail.append(("not checked", unchecked))
        if not private:
            detail += [
                ("known failure", case.get("knownFailure") or ""),
                ("top sources", _sources(case.get("topSources"), matched)),
                ("selected attempt", str(case.get("selectedAttempt") or "")),
                ("fallback reasons", ", ".join(case.get("fallbackReasons") or [])),
                ("evidence status", str(case.get("evidenceStatus") or "")),
                ("rerank top source", str(case.get("rerankTopSource") or "")),
            ]
        else:
            detail.append(("expected targets found", str(case.get("matchedTargets", 0))))
        detail += [
            ("breadcrumbs", f"{case['breadcrumbsCovered']}/{case['breadcrumbsExpected']}"),
            ("keywords", f"{case['keywordsCovered']}/{case['keywordsExpected']}"),
            ("metrics", _metrics_text(case["metrics"])),
        ]
        if row is not None:
            detail.append(("against the baseline", [_change_text(c) for c in row["changes"]]))
            if not private and row.get("topSources"):
                before = row["topSources"].get("baseline")
                detail.append(("baseline top sources", _sources(before, matched)))
            lost = row.get("lost") or []
            if lost:
                detail.append(("what it lost", lost_text(row, len(lost)) or ""))
        table.add(cells, tags, detail, links.get(case["id"]))
    for row in changed.values():
        if row["status"] != "removed":
            continue
        cells = [row["id"], *([] if private else [row.get("query")])]
        cells += [row["category"], row["language"], "", None, "removed", "removed"]
        table.add(cells, ["removed"], [("baseline reasons", row["baselineReasons"])])
    return table


def _footer(report: Mapping[str, Any], diff: Mapping[str, Any] | None) -> str:
    inputs = report["inputs"]
    if report.get("privacy") is True:
        text = "Privacy view: ids, hashes and measurements only. " + ", ".join(
            f"{name} {value[:12]}" for name, value in sorted(inputs.items())
        )
    else:
        text = (
            f"Cases {inputs['cases']} (sha256 {inputs['casesSha256'][:12]}), fixtures "
            f"{inputs['fixtures']} (sha256 {inputs['fixturesSha256'][:12]})"
        )
        if diff is not None:
            text += f", baseline {diff['baseline']}"
    return f"{text}; scoring {report['scoringVersion']}."


def render_score_html(
    report: Mapping[str, Any], diff: Mapping[str, Any] | None = None, full_report: str = ""
) -> str:
    """The HTML page of a score report and, when given, its baseline diff
    (``templates/html/score.html.j2``)."""
    summary = report["summary"]
    failing = report_outcome(report)["casesFailingRun"] > 0  # by the knownFailures mode
    if diff is not None:
        bad = diff["regressed"] or failing
        head = verdict(diff)
    else:
        bad = failing
        head = outcome_text(report)
    segments = [(level, LEVEL_COLORS[level]) for level in LEVEL_COLORS]
    regressed = ""
    if diff is not None:
        ids = [c["id"] for c in diff["cases"] if c["status"] == REGRESSION]
        if ids:
            regressed = ", ".join(ids[:20]) + (" …" if len(ids) > 20 else "")
    groups = report["groups"]
    why = None if diff is None else why_context(diff, report.get("privacy") is True)
    links = {} if why is None else {c["id"]: c["anchor"] for c in why["cases"]}
    context: dict[str, Any] = {
        "title": "ragsnap retrieval report",
        "bad": bad,
        "verdict": head,
        "card_items": _cards(summary),
        "aggregate_head": _AGGREGATE_HEAD,
        "regressed": regressed,
        "unchecked": list(unchecked_lines(report).values()),
        "by_category": markup(
            stacked_bars("hit-levels-category", _level_rows(groups["category"]), segments)
        ),
        "by_language": markup(
            stacked_bars("hit-levels-language", _level_rows(groups["language"]), segments)
        ),
        "diff": _diff_context(diff) if diff is not None else None,
        "cases": len(report["cases"]),
        "why": why if why is not None and why["cases"] else None,
        "case_rows": _score_table(report, diff, links).context(
            ["fail", "known failure", "pass", *_STATUS_ORDER]
        ),
        "footer": _footer(report, diff),
    }
    if diff is None:
        means = [
            (name, None, entry["mean"])
            for name, entry in summary["metrics"].items()
            if entry["mean"] is not None
        ]
        rates = [(name, None, summary[name]) for name in _RATES if summary[name] is not None]
        context["metrics_chart"] = markup(paired_bars("metrics", rates + means))
    return render("score.html.j2", **context)

"""``ragsnap trend REPORT... | DIR``: score reports over time, as a table and a chart.

Reads score reports (``ragsnap score --json-report``), or every score report in
a folder (other JSON files there, such as diff or trial reports, are skipped
and counted), orders them (``ragsnap.scoring.trend``: by the date in each file
name when every name has one, else in the order given; a folder's files by
name) and writes the metric-over-time table as Markdown and, with
``--html-report``, a page with the chart. Every report is read and checked
before anything is written. Exit 0, or 2 on bad input.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..io.inputs import load_report, report_kind
from ..io.jsonio import check_outputs, write_outputs
from ..models import REPORT_KIND
from ..scoring.diff import delta_text, metric_value
from ..scoring.trend import build_trend, render_trend_html, render_trend_markdown


def _files(paths: list[Path]) -> tuple[list[Path], int]:
    """The report files named, a folder's score reports by name; and how many of a
    folder's JSON files were skipped as other kinds of report."""
    files: list[Path] = []
    skipped = 0
    for path in paths:
        if not path.is_dir():
            files.append(path)
            continue
        for candidate in sorted(path.glob("*.json")):
            if candidate.is_file() and report_kind(candidate) == REPORT_KIND:
                files.append(candidate)
            else:
                skipped += 1
    return files, skipped


def run(args: argparse.Namespace) -> int:
    files, skipped = _files(list(args.reports))
    if not files:
        raise UsageError(
            f"no score report in {', '.join(p.as_posix() for p in args.reports)}; pass the "
            "JSON reports written by `ragsnap score --json-report FILE` (or a folder of them)"
        )
    reports: list[tuple[str, dict[str, Any]]] = [
        (path.name, load_report(path, "trend")) for path in files
    ]
    trend = build_trend(reports)
    outputs: dict[Path, Any] = {args.markdown_report: render_trend_markdown(trend)}
    if args.html_report is not None:
        outputs[args.html_report] = render_trend_html(trend)
    check_outputs(list(outputs), inputs=files, allow_outside=args.allow_outside)
    write_outputs(outputs)

    order = "by the dates in their names" if trend.dated else "in the order given"
    lines = [
        f"trend: {len(files)} score report(s), {order}"
        + (f"; {skipped} other JSON file(s) skipped" if skipped else "")
        + (f": {trend.labels[0]} to {trend.labels[-1]}" if len(files) > 1 else "")
    ]
    for name, values in trend.series:
        first, last = values[0], values[-1]
        if first is None or last is None:
            continue
        lines.append(
            f"  {name}: {metric_value(name, first)} -> {metric_value(name, last)} "
            f"({delta_text(name, round(last - first, 6))})"
        )
    if any(trend.cases_changed):
        lines.append("  (the golden cases changed along the way; see the report)")
    lines.append("Reports: " + ", ".join(path.as_posix() for path in outputs))
    print("\n".join(lines))
    return 0

"""``ragsnap trend [REPORT... | DIR]``: score reports over time, as a table and charts.

Reads score reports (``ragsnap score --json-report``), or every score report in
a folder (other JSON files there, such as diff or trial reports, are skipped
and counted); with none named, the history folder (``history`` in ragsnap.yaml,
else ``reports/history``) that ``ragsnap accept`` and ``ragsnap score
--history`` write. Orders them (``ragsnap.scoring.trend``: by the date in each
file name when every name has one, else in the order given; a folder's files by
name), keeps the ``--metrics`` chosen (all by default), and writes the
metric-over-time table as Markdown and, with ``--html-report``, a page with one
small chart per metric; both, and the terminal, open with the latest change
(what dropped between the last two reports). Every report is read and checked
before anything is written. Exit 0, or 2 on bad input.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..config import load_config
from ..errors import UsageError
from ..io.inputs import load_report, report_kind
from ..io.jsonio import check_outputs, write_outputs
from ..io.reads import labelled, reads_of
from ..models import REPORT_KIND
from ..scoring.diff import delta_text, metric_value
from ..scoring.trend import (
    build_trend,
    latest_change,
    render_trend_html,
    render_trend_markdown,
    select,
)


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
    named = list(args.reports)
    config = load_config(getattr(args, "config", None))
    paths = named or [config.history]
    files, skipped = _files([p for p in paths if named or p.is_dir()])
    if not files:
        raise UsageError(
            f"no score report in {', '.join(p.as_posix() for p in paths)}; "
            + (
                "pass the JSON reports written by `ragsnap score --json-report FILE` (or a "
                "folder of them)"
                if named
                else "`ragsnap accept` writes one there (so does `ragsnap score --history "
                f"{paths[0].as_posix()}`), or pass score reports"
            )
        )
    reports: list[tuple[str, dict[str, Any]]] = [
        (path.name, load_report(path, "trend")) for path in files
    ]
    trend = build_trend(reports)
    if getattr(args, "metrics", None):
        try:
            trend = select(trend, [m.strip() for m in args.metrics.split(",") if m.strip()])
        except ValueError as exc:
            raise UsageError(f"--metrics {args.metrics}: {exc}") from None
    outputs: dict[Path, Any] = {args.markdown_report: render_trend_markdown(trend)}
    if args.html_report is not None:
        outputs[args.html_report] = render_trend_html(trend)
    check_outputs(
        labelled(args, list(outputs)),
        inputs=[*reads_of(args, config, history=not named), *files],
        allow_outside=args.allow_outside,
    )
    write_outputs(outputs)

    order = "by the dates in their names" if trend.dated else "in the order given"
    lines = [
        f"trend: {len(files)} score report(s), {order}"
        + (f"; {skipped} other JSON file(s) skipped" if skipped else "")
        + (f": {trend.labels[0]} to {trend.labels[-1]}" if len(files) > 1 else ""),
        latest_change(trend).text(),
    ]
    if len(files) > 1:
        lines.append("First to last:")
    for name, values in trend.series if len(files) > 1 else ():
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

"""``ragsnap diff BASELINE CURRENT``: diff two existing score reports, or two trial
reports (per method)."""

from __future__ import annotations

import argparse

from ..config import Config, load_config
from ..io.inputs import load_report, load_trial_report, report_kind
from ..io.jsonio import check_outputs, write_outputs
from ..models import TRIAL_REPORT_KIND
from ..scoring.diff import diff_reports, render_diff_markdown
from ..scoring.summary import diff_lines
from . import gc_paused


def run(args: argparse.Namespace) -> int:
    """Write the diff reports; return 1 when a regression was found."""
    with gc_paused():
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    config = load_config(args.config)
    if report_kind(args.baseline) == TRIAL_REPORT_KIND:
        return _run_trials(args, config)
    baseline = load_report(args.baseline, "baseline")
    current = load_report(args.current, "current report")
    diff = diff_reports(baseline, current, config.tolerances, args.baseline.as_posix())
    outputs = {
        args.diff_json_report: diff,
        args.diff_markdown_report: render_diff_markdown(diff),
    }
    check_outputs(
        [*outputs],
        inputs=[args.baseline, args.current, args.config],
        allow_outside=args.allow_outside,
    )
    write_outputs(outputs)
    lines = diff_lines(diff, args.max_listed, args.diff_markdown_report)
    lines.append("Reports: " + ", ".join(p.as_posix() for p in outputs))
    print("\n".join(lines))
    return 1 if diff["regressed"] else 0


def _run_trials(args: argparse.Namespace, config: Config) -> int:
    from ..trial.compare import diff_trials, render_trial_diff_markdown, trial_diff_lines

    baseline = load_trial_report(args.baseline, "baseline")
    current = load_trial_report(args.current, "current report")
    diff = diff_trials(baseline, current, config.tolerances, args.baseline.as_posix())
    outputs = {
        args.diff_json_report: diff,
        args.diff_markdown_report: render_trial_diff_markdown(diff),
    }
    check_outputs(
        [*outputs],
        inputs=[args.baseline, args.current, args.config],
        allow_outside=args.allow_outside,
    )
    write_outputs(outputs)
    lines = trial_diff_lines(diff, args.max_listed)
    lines.append("Reports: " + ", ".join(p.as_posix() for p in outputs))
    print("\n".join(lines))
    return 1 if diff["regressed"] else 0

"""``ragsnap diff BASELINE CURRENT``: diff two existing score reports, or two trial
reports (per method). The baseline's ``kind`` picks the differ from ``DIFFERS``.
``--html-report`` writes the current report's HTML page with the diff in it (a score
report's through ``--report html=FILE``, a trial report's ``ragsnap.trial.html``).

With ``--privacy``, or when either report is a privacy report, every output is a
privacy view (``ragsnap.scoring.privacy``, ``ragsnap.trial.privacy``)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..config import load_config
from ..errors import UsageError
from ..io.inputs import load_report, load_trial_report, report_kind
from ..io.jsonio import check_outputs, write_outputs
from ..io.reads import labelled, reads_of
from ..models import TRIAL_REPORT_KIND
from . import gc_paused


@dataclass(frozen=True, slots=True)
class Differ:
    """How one kind of report is read, diffed, rendered and summarised."""

    load: Callable[[Any, str], dict[str, Any]]
    #: (baseline, current, config, args, label) -> the diff report
    diff: Callable[..., dict[str, Any]]
    markdown: Callable[[dict[str, Any]], str]
    lines: Callable[[dict[str, Any], argparse.Namespace], list[str]]
    #: (diff, baseline, current) -> the diff's privacy view
    private: Callable[[dict[str, Any], dict[str, Any], dict[str, Any]], dict[str, Any]]
    #: the current report's privacy view (for --report / --junit-xml / --html-report)
    private_report: Callable[[dict[str, Any]], dict[str, Any]]
    #: whether --report / --junit-xml formats apply (score reports only)
    extras: bool = True

    @staticmethod
    def is_private(baseline: dict[str, Any], current: dict[str, Any]) -> bool:
        """A diff involving a privacy report is private too."""
        return baseline.get("privacy") is True or current.get("privacy") is True


def _score_differ() -> Differ:
    from ..scoring.privacy import private_diff, private_report
    from ..scoring.review import render_diff_markdown
    from ..scoring.summary import diff_lines
    from ._review import diff_with_config

    return Differ(
        load_report,
        diff_with_config,
        render_diff_markdown,
        lambda diff, args: diff_lines(diff, args.max_listed, args.diff_markdown_report),
        private_diff,
        private_report,
    )


def _trial_differ() -> Differ:
    from ..trial.compare import diff_trials, render_trial_diff_markdown, trial_diff_lines
    from ..trial.privacy import private_trial, private_trial_diff

    return Differ(
        load_trial_report,
        lambda baseline, current, config, args, label: diff_trials(
            baseline, current, config.tolerances, label, config.significance
        ),
        render_trial_diff_markdown,
        lambda diff, args: trial_diff_lines(diff, args.max_listed),
        lambda diff, baseline, current: private_trial_diff(diff),
        private_trial,
        extras=False,
    )


#: report kind -> its differ (imported when used); any other kind is a score report
DIFFERS: dict[str, Callable[[], Differ]] = {TRIAL_REPORT_KIND: _trial_differ}


def run(args: argparse.Namespace) -> int:
    """Write the diff reports; return 1 when a regression was found."""
    with gc_paused():
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    config = load_config(args.config)
    differ = DIFFERS.get(report_kind(args.baseline) or "", _score_differ)()
    if not differ.extras and (args.extra_reports or args.junit_xml or args.require_significance):
        raise UsageError(
            "--report, --junit-xml and --require-significance work on score reports; "
            f"{args.baseline} is a trial report: drop them"
        )
    baseline = differ.load(args.baseline, "baseline")
    current = differ.load(args.current, "current report")
    diff = differ.diff(baseline, current, config, args, args.baseline.as_posix())
    if getattr(args, "privacy", False) or differ.is_private(baseline, current):
        # computed on whatever the reports hold, then made private
        diff = differ.private(diff, baseline, current)
        current = differ.private_report(current)
    outputs: dict[Path, Any] = {
        args.diff_json_report: diff,
        args.diff_markdown_report: differ.markdown(diff),
    }
    if differ.extras:
        from ._review import extra_outputs

        outputs.update(extra_outputs(args, current, diff, args.diff_markdown_report))
    elif args.html_report is not None:  # a trial diff: the current trial's page with it
        from ..trial.html import render_trial_html

        outputs[args.html_report] = render_trial_html(current, diff)
    check_outputs(
        labelled(args, [*outputs]),
        inputs=reads_of(args, config),
        allow_outside=args.allow_outside,
    )
    write_outputs(outputs)
    lines = differ.lines(diff, args)
    lines.append("Reports: " + ", ".join(p.as_posix() for p in outputs))
    print("\n".join(lines))
    return 1 if diff["regressed"] else 0

"""What ``score`` and ``diff`` share for the PR check: diff rules from the config and
the flags, and the extra report formats (``--report``, ``--junit-xml``, ``--html-report``)."""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..config import Config
from ..errors import UsageError
from ..scoring.diff import diff_reports
from ..scoring.formats import render_format
from ._forensics import attribute


def diff_with_config(
    baseline: Mapping[str, Any],
    current: Mapping[str, Any],
    config: Config,
    args: argparse.Namespace,
    label: str,
) -> dict[str, Any]:
    """The score diff under the config's tolerances, noise floor and significance
    settings; ``--require-significance`` (on commands that have it) turns ``require``
    on. Each case's losses are attributed to pipeline stages from the baseline's
    fixtures (``--baseline-ref`` / ``--baseline-fixtures``, ``ragsnap.commands._forensics``)."""
    significance = config.significance
    if getattr(args, "require_significance", False):
        significance = dataclasses.replace(significance, require=True)
    diff = diff_reports(
        baseline,
        current,
        config.tolerances,
        label,
        noise_floor=config.noise_floor,
        significance=significance,
    )
    if current.get("privacy") is not True:  # where each loss happened, from the fixtures
        fixtures = getattr(args, "fixtures", None) or Path(current["inputs"]["fixtures"])
        attribute(
            diff,
            fixtures,
            baseline,
            getattr(args, "baseline_ref", None),
            getattr(args, "baseline_fixtures", None),
        )
    return diff


def extra_outputs(
    args: argparse.Namespace,
    report: Mapping[str, Any],
    diff: Mapping[str, Any] | None,
    full_report: Path,
) -> list[tuple[Path, str]]:
    """(path, text) of every ``--report FORMAT=FILE``, ``--junit-xml FILE`` and
    ``--html-report FILE`` (``--report html=FILE``)."""
    wanted: list[tuple[str, Path]] = list(args.extra_reports)
    if args.junit_xml is not None:
        wanted.append(("junit", args.junit_xml))
    if getattr(args, "html_report", None) is not None:
        wanted.append(("html", args.html_report))
    seen: dict[Path, str] = {}
    for name, path in wanted:
        if path in seen:
            raise UsageError(
                f"{path} is named twice ({seen[path]} and {name}); give each report its own file"
            )
        seen[path] = name
    return [
        (path, render_format(name, report, diff, full_report.as_posix())) for name, path in wanted
    ]

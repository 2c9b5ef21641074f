"""Extra report formats of ``score`` and ``diff``, as registered plug-ins.

``--report NAME=FILE`` writes format ``NAME`` to ``FILE`` (``--junit-xml FILE`` is
``--report junit=FILE``). A format is a name, what it is for, and a renderer
from the score report, the baseline diff (``None`` without ``--compare-to``) and
the path of the full Markdown report (for "see the full report" notices) to the
file's text. Renderers import their module when they run; register another
with ``register_format``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["REPORT_FORMATS", "ReportFormat", "register_format", "render_format"]

Renderer = Callable[[Mapping[str, Any], "Mapping[str, Any] | None", str], str]


@dataclass(frozen=True, slots=True)
class ReportFormat:
    """A named report format and its renderer."""

    name: str
    help: str
    render: Renderer


def _github(report: Mapping[str, Any], diff: Mapping[str, Any] | None, full: str) -> str:
    from .review import render_pr_comment

    return render_pr_comment(report, diff, full)


def _junit(report: Mapping[str, Any], diff: Mapping[str, Any] | None, full: str) -> str:
    from .junit import render_junit_xml

    return render_junit_xml(report, diff)


def _html(report: Mapping[str, Any], diff: Mapping[str, Any] | None, full: str) -> str:
    from .html import render_score_html

    return render_score_html(report, diff, full)


REPORT_FORMATS: dict[str, ReportFormat] = {
    "github": ReportFormat(
        "github",
        "pull-request comment Markdown, always under 60,000 characters",
        _github,
    ),
    "junit": ReportFormat("junit", "JUnit XML: one test case per golden case", _junit),
    "html": ReportFormat(
        "html",
        "one self-contained HTML page: verdict, charts, the case table (no network)",
        _html,
    ),
}


def register_format(fmt: ReportFormat) -> None:
    """Add (or replace) a report format by name."""
    REPORT_FORMATS[fmt.name] = fmt


def render_format(
    name: str, report: Mapping[str, Any], diff: Mapping[str, Any] | None, full_report: str
) -> str:
    """Render the registered format ``name``."""
    return REPORT_FORMATS[name].render(report, diff, full_report)

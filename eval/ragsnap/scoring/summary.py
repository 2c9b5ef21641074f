"""The terminal summary: counts first, then what failed or regressed, then where
the reports are. Pure: returns lines, prints nothing."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..io.markdown import cell
from .diff import cause_lines, lost_text, verdict
from .report import outcome_text, percent, report_outcome, unchecked_lines

__all__ = ["diff_lines", "score_lines"]


def _listed(items: Sequence[str], limit: int, where: str) -> list[str]:
    shown = [f"  {item}" for item in items[:limit]]
    if len(items) > limit:
        shown.append(f"  ... and {len(items) - limit} more; see {where}")
    return shown


def score_lines(report: Mapping[str, Any], limit: int, where: Path) -> list[str]:
    """Summary and failing cases of a score report: first what passed, what is expected
    to fail and what failed (``outcome_text``), then the known failures that now pass
    (their fix, and whether they fail the run), the failing cases, the expected ones,
    then the expectations not checked (``unchecked_lines``: not applicable, skipped)."""
    s = report["summary"]
    outcome = report_outcome(report)
    mode = outcome["knownFailures"]
    lines = [
        outcome_text(report) + " "
        f"(pass rate {percent(s['passRate'])}); Recall@K {percent(s['recallAtK'])}, "
        f"strong {percent(s['strongHitRate'])}, {s['missCount']} miss(es), "
        f"{s['noAnswerFalsePositives']} no-answer false positive(s)"
    ]
    graded = {k: v for k, v in s["metrics"].items() if v["mean"] is not None}
    if graded:
        judged = max(v["cases"] for v in graded.values())
        lines.append(
            f"Graded ({judged} judged case(s)): "
            + ", ".join(f"{name} {v['mean']:.3f}" for name, v in graded.items())
        )
    fixed = [c["id"] for c in report["cases"] if c["passed"] and c.get("knownFailure")]
    if fixed:
        lines.append(
            (
                "Known failures that now pass, failing the run (knownFailures: strict); "
                if mode == "strict"
                else "Known failures that now pass; "
            )
            + "remove their knownFailure:"
        )
        lines += _listed(fixed, limit, str(where))
    failing = [c for c in report["cases"] if not c["passed"] and not c.get("knownFailure")]
    if failing:
        lines.append("Failed cases:")
        lines += _listed(
            [f"{c['id']}: {'; '.join(c['reasons'])}" for c in failing], limit, str(where)
        )
    known = [c for c in report["cases"] if not c["passed"] and c.get("knownFailure")]
    if known and mode == "fail":
        lines.append("Known failures, failing the run (knownFailures: fail):")
        lines += _listed(
            [f"{c['id']}: {'; '.join(c['reasons'])}" for c in known], limit, str(where)
        )
    elif known:
        lines.append(
            f"Expected failures: {len(known)} case(s) fail as their knownFailure says, "
            f"not failing the run; see {where}"
        )
    lines += unchecked_lines(report).values()
    orphans = report["orphanedFixtures"]
    if orphans:
        lines.append(
            f"Orphaned fixtures (no golden case): {', '.join(orphans[:limit])}"
            + (" ..." if len(orphans) > limit else "")
            + "; delete them or add their cases"
        )
    return lines


def diff_lines(diff: Mapping[str, Any], limit: int, where: Path) -> list[str]:
    """Verdict, then the regressions of a diff report: the cases that regressed, then
    the aggregate rows that regressed grouped by cause (one line per set of cases,
    with the category / language / split rows that only repeat an overall row
    counted, not listed); then what the regressed and changed cases lost, one line per
    case (``lost_text``)."""
    lines = [verdict(diff)]
    cases = [
        f"{case['id']}: "
        + "; ".join(
            f"{ch['field']} {cell(ch['baseline'])} -> {cell(ch['current'])}"
            for ch in case["changes"]
            if ch["status"] == "regression"
        )
        for case in diff["cases"]
        if case["status"] == "regression"
    ]
    causes = [
        line
        for cause in diff.get("causes", ())
        for line in cause_lines(diff, cause, statuses=("regression",))
    ]
    regressed = cases + causes
    if regressed:
        lines.append("Regressions:")
        lines += _listed(regressed, limit, str(where))
    lost = [
        f"{case['id']}: {text}" for case in diff["cases"] if (text := lost_text(case)) is not None
    ]
    if lost:
        lines.append("What the cases lost:")
        lines += _listed(lost, limit, str(where))
    lines += [f"Note: {note}" for note in diff["notes"]]
    return lines

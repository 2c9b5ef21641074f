"""The live-check report as one self-contained HTML page (``live-check --html-report``).

A pure function of the live-check report dict, built from the shared pieces of
``ragsnap.scoring.html`` and rendered through ``templates/html/live.html.j2``:
the verdict, one stacked bar of passed / failed / known failures / skipped
cases, and the case table, each row unfolded to the service's top results
(rank, source, title, breadcrumb, score) and the reason. A privacy report
(``"privacy": true``) shows ids, counts, ranks and id-based reasons only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..scoring.html import CaseTable, markup, render, stacked_bars
from .livecheck import is_known_failure

__all__ = ["render_live_html"]

_SEGMENTS = (
    ("passed", "#1a7f37"),
    ("failed", "#cf222e"),
    ("known failure", "#d4a72c"),
    ("skipped", "#8c959f"),
)


def _status(case: Mapping[str, Any]) -> str:
    if is_known_failure(case):
        return "known failure"
    status: str = case["status"]
    return {"pass": "passed", "fail": "failed"}.get(status, status)


def _result(item: Mapping[str, Any]) -> str:
    parts = [f"{item['rank']}. {item.get('source') or '-'}"]
    for key in ("title", "breadcrumb"):
        if item.get(key):
            parts.append(str(item[key]))
    if item.get("score") is not None:
        parts.append(f"score {item['score']}")
    return " · ".join(parts)


def render_live_html(report: Mapping[str, Any]) -> str:
    """The HTML page of a live-check report."""
    s = report["summary"]
    private = report.get("privacy") is True
    checked = s["passed"] + s["failed"]
    head = (
        f"{s['verdict'].upper()}: {s['passed']} of {checked} checked case(s) passed; "
        f"{s['skipped']} skipped, {s['knownFailures']} known failure(s), {s['empty']} of "
        f"{s['cases']} returned no results"
        + ("; every case returned no results: the index looks empty" if s["allEmpty"] else "")
    )
    counts = [s["passed"], s["failed"] - s["knownFailures"], s["knownFailures"], s["skipped"]]
    columns = [("case", "minmax(160px,2fr)")]
    if not private:
        columns.append(("query", "minmax(160px,3fr)"))
    columns += [("status", "100px"), ("results", "60px"), ("rank", "44px")]
    table = CaseTable(columns)
    for case in report["cases"]:
        status = _status(case)
        cells = [case["caseId"], *([] if private else [case["query"]])]
        cells += [status, case["resultCount"], case["firstExpectedRank"]]
        detail: list[tuple[str, str | list[str]]] = [
            ("reason", case["reason"]),
            ("top K", str(case["topK"])),
        ]
        if private:
            detail.append(("matched", f"{case['matchedTargets']}/{case['expectedTargets']}"))
        else:
            detail += [
                ("expected", [*case["expectedSources"], *case["expectedDocIds"]]),
                ("top results", [_result(item) for item in case["topResults"]]),
                ("known failure", case["knownFailure"] or ""),
            ]
        table.add(cells, [status], detail)
    return render(
        "live.html.j2",
        title="ragsnap live check",
        good=s["verdict"] == "pass",
        verdict=head,
        where="" if private else f" against {report['baseUrl']} ({report['endpoint']})",
        checked_at=report["checkedAt"],
        chart=markup(stacked_bars("live-status", [("cases", counts)], _SEGMENTS)),
        cases=len(report["cases"]),
        case_rows=table.context([name for name, _ in _SEGMENTS]),
    )

"""The baseline diff as a reviewer reads it: Markdown, and a PR comment within budget.

Pure functions over a diff report dict (``ragsnap.scoring.diff``). The order is
the order of a review: the verdict; each regressed case with its query, what
changed, why it fails now and its top sources before and after; the aggregate
rows that moved, **grouped by cause** (the diff's ``causes``): one line per set
of cases and status, such as ``passRate -3.4 pp, recallAtK -4.0 pp <- 1 case:
obs-log-retention: beyond tolerance, not significant (1 case), Holm p 1.000``,
with the category / language / split rows that only repeat an overall row
counted, not listed; the hit-level transitions; then improvements, other
changes, added and removed cases. A regressed case says what it lost (the
diff's ``lost``, one line: ``lost_text``); an improved or changed case adds it to its
changes. The Markdown report adds every moved row as a
table (baseline, current, delta, tolerance, cases, raw and adjusted p, interval)
and the unchanged rows, both folded into ``<details>`` blocks.

``render_pr_comment`` writes the review for a pull-request comment: the grouped
lines only (no row table, no unchanged rows: a count), the hit-level moves as one
line, and it stays under ``COMMENT_LIMIT`` characters (GitHub refuses comments
over 65,536): every block is bounded, blocks are added in review order while they
fit, and what did not fit is counted in a notice that says where the full report
is. Its score summary ends with the expectations that were not checked
(``report.unchecked_lines``: not applicable to the fixtures, skipped by
``scoring.skip``), when there are any.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..io.markdown import cell, markdown_table
from ..models import HIT_LEVELS
from .diff import (
    CHANGED,
    IMPROVEMENT,
    REGRESSION,
    UNCHANGED,
    cause_lines,
    delta_text,
    lost_text,
    metric_value,
    p_label,
    row_label,
    verdict,
)
from .report import percent, provenance_lines, unchecked_lines

__all__ = ["COMMENT_LIMIT", "render_diff_markdown", "render_pr_comment"]

#: the PR comment's hard ceiling in characters (GitHub's own is 65,536)
COMMENT_LIMIT = 60_000
#: longest query or reason shown inline; longer text is cut with an ellipsis
_TEXT_LIMIT = 300
#: top sources shown per case, before and after
_TOP_SHOWN = 5
_STATUS_ORDER = {REGRESSION: 0, IMPROVEMENT: 1, CHANGED: 2, UNCHANGED: 3}
#: grouped lines per block, so the comment's budget can stop between blocks
_CAUSES_PER_BLOCK = 20


def _short(text: str, limit: int = _TEXT_LIMIT) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _change(change: Mapping[str, Any]) -> str:
    if change["baseline"] is None and change["current"] is None:  # values left out (private)
        return f"{change['field']} changed"
    return f"{change['field']} {cell(change['baseline'])} → {cell(change['current'])}"


def _sources(sources: Sequence[str] | None) -> str:
    if sources is None:
        return "(not recorded)"
    if not sources:
        return "(nothing)"
    shown = ", ".join(f"`{_short(s, 80)}`" for s in sources[:_TOP_SHOWN])
    return shown + (f" … (+{len(sources) - _TOP_SHOWN})" if len(sources) > _TOP_SHOWN else "")


def _case_block(case: Mapping[str, Any], level: int) -> str:
    """One changed case: heading, query, changes, reasons, top sources."""
    levels = next((c for c in case["changes"] if c["field"] == "hitLevel"), None)
    move = f": {levels['baseline']} → {levels['current']}" if levels else ""
    lines = [
        f"{'#' * level} `{case['id']}` ({case['category']}, {case['language']}){move}",
        "",
        *([] if case.get("query") is None else [f"> {_short(case['query'])}", ""]),
        "- Changed: " + ("; ".join(_change(c) for c in case["changes"]) or "-"),
    ]
    lost = lost_text(case)
    if lost is not None:
        lines.append("- " + _short(lost, 2 * _TEXT_LIMIT))
    if case["reasons"]:
        lines.append("- Fails now: " + _short("; ".join(case["reasons"]), 2 * _TEXT_LIMIT))
    top = case.get("topSources")  # none in a private diff
    if top is not None:
        lines.append(
            f"- Top sources: baseline {_sources(top['baseline'])} → "
            f"current {_sources(top['current'])}"
        )
    return "\n".join(lines)


def _case_list_row(case: Mapping[str, Any]) -> list[str]:
    lost = lost_text(case)
    changes = "; ".join(_change(c) for c in case["changes"])
    row = [f"`{case['id']}`", changes if lost is None else f"{changes}; {_short(lost)}"]
    return row if case.get("query") is None else [*row, _short(case["query"], 120)]


def _rows_sorted(rows: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    indexed = list(enumerate(rows))
    indexed.sort(key=lambda item: (_STATUS_ORDER[item[1]["status"]], item[0]))
    return [row for _, row in indexed]


def _test_cells(row: Mapping[str, Any], tested: bool) -> list[str]:
    test = row["significance"]
    if not tested:
        return []
    if test is None:
        return ["-", "-", "-"]
    low, high = test["ci"]
    return [
        f"{test['p']:.3f}",
        f"{test['pAdjusted']:.3f}",
        f"[{delta_text(row['metric'], low)}, {delta_text(row['metric'], high)}]",
    ]


def _aggregate_line(row: Mapping[str, Any], tested: bool) -> list[str]:
    metric = row["metric"]
    tolerance = row["tolerance"]
    return [
        row["scope"],
        metric,
        metric_value(metric, row["baseline"]),
        metric_value(metric, row["current"]),
        delta_text(metric, row["delta"]),
        str(tolerance) if metric == "missCount" else f"{tolerance:g}",
        str(row["movedCases"]),
        *_test_cells(row, tested),
        row_label(row),
    ]


def _aggregate_table(diff: Mapping[str, Any], rows: Sequence[Mapping[str, Any]]) -> str:
    headers = ["scope", "metric", "baseline", "current", "delta", "tolerance", "cases"]
    tested = diff["significance"] is not None
    if tested:
        headers += ["raw p", p_label(diff), "95% CI"]
    return markdown_table([*headers, "status"], [_aggregate_line(r, tested) for r in rows])


def _cause_blocks(diff: Mapping[str, Any]) -> list[str]:
    lines = [
        f"- {line}"
        for cause in diff["causes"]
        for line in cause_lines(diff, cause, arrow="←", quote="`")
    ]
    return [
        "\n".join(lines[i : i + _CAUSES_PER_BLOCK]) for i in range(0, len(lines), _CAUSES_PER_BLOCK)
    ]


def _moves_line(matrix: Mapping[str, Mapping[str, int]]) -> str | None:
    """The off-diagonal hit-level transitions in one line; None when no case moved."""
    order = list(reversed(HIT_LEVELS))  # strong first
    moves = [
        f"{old} → {new} {matrix[old][new]}"
        for old in order
        for new in order
        if old != new and matrix[old][new]
    ]
    return "Hit-level moves (cases): " + ", ".join(moves) + "." if moves else None


def _transition_table(matrix: Mapping[str, Mapping[str, int]]) -> str:
    order = list(reversed(HIT_LEVELS))  # strong first
    return markdown_table(
        ["baseline ↓ / current →", *order],
        [[old, *(str(matrix[old][new]) for new in order)] for old in order],
    )


def _folded(summary: str, body: str) -> str:
    return f"<details><summary>{summary}</summary>\n\n{body}\n\n</details>"


def _correction_text(diff: Mapping[str, Any]) -> str:
    tested = sum(1 for row in diff["aggregates"] if row["significance"] is not None)
    correction = diff["significance"].get("correction", "none")
    if not tested:
        return "; no row moved enough to be tested"
    if correction == "none":
        return f"; p not corrected for the {tested} row(s) tested"
    return f"; {p_label(diff)}: {correction.capitalize()}-adjusted over the {tested} row(s) tested"


def _footer(diff: Mapping[str, Any]) -> str:
    tol = ", ".join(f"{k} {v}" for k, v in diff["tolerances"].items())
    floor = diff["noiseFloor"]
    floors = ", ".join(f"{k} {v}" for k, v in floor.items())
    sig = diff["significance"]
    tests = (
        "no paired tests"
        if sig is None
        else f"paired permutation test ({sig['permutations']} sign flips) and bootstrap "
        f"interval ({sig['bootstrap']} resamples, seed {sig['seed']}), alpha {sig['alpha']}"
        + _correction_text(diff)
        + ("; an aggregate drop fails only when significant" if sig["require"] else "")
    )
    return f"Tolerances: {tol}. Noise floor: {floors}. Significance: {tests}."


def _sections(
    diff: Mapping[str, Any], level: int, *, full: bool = True
) -> list[tuple[str, list[str], str]]:
    """(heading, blocks, what a block is) in review order, headings at ``level``; the
    budgeted comment drops trailing blocks of a section rather than whole sections.
    ``full`` (the Markdown report) adds the row tables and the hit-level matrix; the
    comment keeps the grouped lines and counts."""
    h = "#" * level
    cases = diff["cases"]
    regressed = [c for c in cases if c["status"] == REGRESSION]
    moved = _rows_sorted(r for r in diff["aggregates"] if r["status"] != UNCHANGED)
    still = [r for r in diff["aggregates"] if r["status"] == UNCHANGED]
    sections: list[tuple[str, list[str], str]] = []
    if regressed:
        sections.append(
            (
                f"{h} Regressed cases ({len(regressed)})",
                [_case_block(c, level + 1) for c in regressed],
                "case",
            )
        )
    if moved:
        aggregate_blocks = _cause_blocks(diff)
        if full:
            aggregate_blocks += [
                _folded(
                    f"moved rows {i + 1}-{min(i + 25, len(moved))} of {len(moved)}, "
                    "folded ones included",
                    _aggregate_table(diff, moved[i : i + 25]),
                )
                for i in range(0, len(moved), 25)
            ]
        if still and not full:
            aggregate_blocks.append(f"{len(still)} row(s) unchanged.")
    else:
        aggregate_blocks = [f"No aggregate metric moved ({len(still)} row(s) unchanged)."]
    if full and still:
        aggregate_blocks.append(
            _folded(f"{len(still)} unchanged row(s)", _aggregate_table(diff, still))
        )
    sections.append((f"{h} Aggregate metrics", aggregate_blocks, "aggregate block"))
    shared = sum(sum(row.values()) for row in diff["hitLevelTransitions"].values())
    moves = _moves_line(diff["hitLevelTransitions"])
    if not full and moves:
        sections.append((f"{h} Hit-level transitions", [moves], "line"))
    elif full and shared:
        sections.append(
            (
                f"{h} Hit-level transitions ({shared} answerable case(s) in both)",
                [_transition_table(diff["hitLevelTransitions"])],
                "table",
            )
        )
    for title, status in (("Improved cases", IMPROVEMENT), ("Other changed cases", CHANGED)):
        rows = [c for c in cases if c["status"] == status]
        if rows:
            headers = ["case", "changes"] + ([] if diff.get("privacy") else ["query"])
            tables = [
                markdown_table(headers, [_case_list_row(c) for c in chunk])
                for chunk in (rows[i : i + 50] for i in range(0, len(rows), 50))
            ]
            sections.append((f"{h} {title} ({len(rows)})", tables, "case table"))
    for title, status in (("Added cases", "added"), ("Removed cases", "removed")):
        ids = [c["id"] for c in cases if c["status"] == status]
        if ids:
            chunks = [ids[i : i + 100] for i in range(0, len(ids), 100)]
            sections.append(
                (
                    f"{h} {title} ({len(ids)})",
                    [", ".join(f"`{i}`" for i in chunk) for chunk in chunks],
                    "id list",
                )
            )
    return sections


def _head(diff: Mapping[str, Any], title: str) -> list[str]:
    lines = [title, "", f"**{verdict(diff)}.**"]
    if diff.get("privacy"):
        lines += ["", "Privacy view: ids, hashes and measurements only."]
    if diff["notes"]:
        lines += ["", *[f"> Note: {note}." for note in diff["notes"]]]
    return lines


def render_diff_markdown(diff: Mapping[str, Any]) -> str:
    """The whole diff as Markdown, in review order."""
    lines = _head(diff, "# ragsnap baseline diff")
    for heading, blocks, _ in _sections(diff, 2):
        lines += ["", heading]
        for block in blocks:
            lines += ["", block]
    lines += ["", "---", "", _footer(diff)]
    return "\n".join(lines) + "\n"


def _score_head(report: Mapping[str, Any]) -> list[str]:
    s = report["summary"]
    stale = provenance_lines(report, limit=5)
    unchecked = list(unchecked_lines(report).values())
    return [
        f"{s['cases']} cases: {s['passed']} passed ({percent(s['passRate'])}), "
        f"Recall@K {percent(s['recallAtK'])}, strong {percent(s['strongHitRate'])}, "
        f"{s['missCount']} miss(es).",
        *([""] if stale else []),
        *(_short(line, 2 * _TEXT_LIMIT) for line in stale),
        *([""] if unchecked else []),
        *(f"- {_short(line, 2 * _TEXT_LIMIT)}" for line in unchecked),
    ]


def _failing_sections(report: Mapping[str, Any], level: int) -> list[tuple[str, list[str], str]]:
    failing = [c for c in report["cases"] if not c["passed"] and not c.get("knownFailure")]
    if not failing:
        return []
    rows = [
        [f"`{c['id']}`", cell(c["hitLevel"]), _short("; ".join(c["reasons"]), 200)] for c in failing
    ]
    tables = [
        markdown_table(["case", "hit level", "reasons"], rows[i : i + 50])
        for i in range(0, len(rows), 50)
    ]
    return [(f"{'#' * level} Failing cases ({len(failing)})", tables, "case table")]


def render_pr_comment(
    report: Mapping[str, Any],
    diff: Mapping[str, Any] | None,
    full_report: str,
    limit: int = COMMENT_LIMIT,
) -> str:
    """A pull-request comment under ``limit`` characters: the diff when there is one
    (else the score summary and failing cases), cut in review order, with a notice
    naming ``full_report`` when anything was left out."""
    if diff is None:
        head = ["## ragsnap retrieval check", "", *_score_head(report)]
        sections = _failing_sections(report, 3)
    else:
        head = [*_head(diff, "## ragsnap retrieval check"), "", *_score_head(report)]
        sections = _sections(diff, 3, full=False)
    footer = "" if diff is None else _footer(diff)
    notice_room = 600  # the truncation notice, with its counts and the report's path
    budget = limit - notice_room - len(footer) - 16
    out = "\n".join(head)
    omitted: list[str] = []
    for heading, blocks, what in sections:
        if len(out) + len(heading) + 2 > budget:
            omitted.append(heading.lstrip("# "))
            continue
        out += "\n\n" + heading
        for index, block in enumerate(blocks):
            if len(out) + len(block) + 2 > budget:
                omitted.append(f"{len(blocks) - index} {what}(s) of {heading.lstrip('# ')}")
                break
            out += "\n\n" + block
    if omitted:
        notice = (
            "> **Truncated to fit a comment**: not shown: "
            + _short("; ".join(omitted), 400)
            + f". The full report is `{_short(full_report, 120)}` (in the CI artifacts)."
        )
        out += "\n\n" + notice
    if footer:
        out += "\n\n---\n\n" + footer
    return out + "\n"

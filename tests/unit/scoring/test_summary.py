"""The terminal summary (ragsnap.scoring.summary)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conftest import block, make_case, make_fixture
from ragsnap.models import Fixture, GoldenCase
from ragsnap.scoring.diff import Tolerances, diff_reports
from ragsnap.scoring.hits import score_case
from ragsnap.scoring.report import build_report
from ragsnap.scoring.summary import diff_lines

INPUTS = {"cases": "c.json", "casesSha256": "0" * 64, "fixtures": "f", "fixturesSha256": "1" * 64}


def report(blocks_by_case: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    results = []
    for case_id, blocks in blocks_by_case.items():
        case = GoldenCase.from_json(make_case(case_id, expectedKeywords=["14 days"]), {})
        fixture = Fixture.from_json(make_fixture(case_id, blocks, query=case.query))
        results.append(score_case(case, fixture))
    return build_report(results, [], INPUTS)


def test_diff_lines_say_what_each_case_lost_in_one_line_within_the_limit() -> None:
    kept = [block(1, "mysql-pool", text="kept for 14 days")]
    gone = [block(1, "mysql-pool", text="kept for two weeks")]
    before = report({"a": kept, "b": kept, "c": kept})
    after = report({"a": gone, "b": gone, "c": kept})
    lines = diff_lines(diff_reports(before, after, Tolerances(), "base.json"), 1, Path("d.md"))
    at = lines.index("What the cases lost:")
    assert lines[at + 1 :] == [
        "  a: lost keyword '14 days' (was in mysql-pool#1)",
        "  ... and 1 more; see d.md",
    ]

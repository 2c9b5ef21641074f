"""The score report's Markdown (ragsnap.scoring.report)."""

from __future__ import annotations

import copy

import pytest

from conftest import block, make_case, make_fixture
from ragsnap.models import Fixture, GoldenCase
from ragsnap.scoring.hits import score_case
from ragsnap.scoring.report import ALL_CASES_LISTED, build_report, render_markdown

INPUTS = {"cases": "c.json", "casesSha256": "0" * 64, "fixtures": "f", "fixturesSha256": "1" * 64}


def test_every_case_is_listed_up_to_the_limit_and_counted_beyond_it() -> None:
    case = GoldenCase.from_json(make_case("c-0", query="q"), {})
    fixture = Fixture.from_json(make_fixture("c-0", [block(1, "mysql-pool")], query="q"))
    report = build_report([score_case(case, fixture)], [], INPUTS)
    entry = report["cases"][0]
    report["cases"] = [{**copy.deepcopy(entry), "id": f"c-{i}"} for i in range(ALL_CASES_LISTED)]
    listed = render_markdown(report)
    assert f"| c-{ALL_CASES_LISTED - 1} " in listed.split("## All cases")[1]
    report["cases"].append({**copy.deepcopy(entry), "id": "one-more"})
    counted = render_markdown(report).split("## All cases")[1]
    assert "one-more" not in counted and "| c-0 " not in counted
    assert f"{ALL_CASES_LISTED + 1:,} cases, more than this report lists one by one" in counted


def test_the_outcome_and_its_line_under_each_known_failure_mode() -> None:
    from ragsnap.scoring.hits import case_outcome, fails_run
    from ragsnap.scoring.report import outcome, outcome_text

    cases = [
        {"id": "a", "passed": True, "knownFailure": None},
        {"id": "b", "passed": False, "knownFailure": None},
        {"id": "c", "passed": False, "knownFailure": "why"},
        {"id": "d", "passed": False, "knownFailure": "why"},
        {"id": "e", "passed": True, "knownFailure": "why"},
    ]
    kinds = [case_outcome(c["passed"], c["knownFailure"]) for c in cases]
    assert kinds == ["passed", "failed", "expected failure", "expected failure", "now passes"]
    failing = {mode: [fails_run(k, mode) for k in kinds] for mode in ("expected", "strict", "fail")}
    assert failing == {
        "expected": [False, True, False, False, False],
        "strict": [False, True, False, False, True],
        "fail": [False, True, True, True, False],
    }
    with pytest.raises(ValueError, match="unknown knownFailures mode 'loose'"):
        fails_run("failed", "loose")

    def line(mode: str) -> str:
        return outcome_text({"summary": {"cases": 5}, "outcome": outcome(cases, mode)})

    assert outcome(cases, "strict") == {
        "knownFailures": "strict",
        "passed": 1,
        "nowPassing": 1,
        "expectedFailures": 2,
        "failed": 1,
        "casesFailingRun": 2,
    }
    assert line("expected") == (
        "5 cases: 1 passed, 1 known failure now passes, 2 expected failures (knownFailure), "
        "1 failed"
    )
    assert line("strict") == (
        "5 cases: 1 passed, 1 known failure now passes (failing the run: knownFailures: "
        "strict), 2 expected failures (knownFailure), 1 failed"
    )
    assert line("fail") == (
        "5 cases: 1 passed, 1 known failure now passes, 3 failed (2 marked knownFailure; "
        "knownFailures: fail)"
    )
    # a report written before `outcome` existed reads with the default mode
    assert outcome_text({"summary": {"cases": 5}, "cases": cases}) == line("expected")

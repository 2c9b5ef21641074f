"""The score report's Markdown (ragsnap.scoring.report)."""

from __future__ import annotations

import copy
from typing import Any

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


def _traceless_report() -> dict[str, Any]:
    """Three cases: one whose fixture has no traces, one whose skip setting turns an
    expectation off, one checked in full."""
    bare = make_fixture("bare", [block(1, "mysql-pool")], query="q")
    for part in ("retrievalTrace", "rerankTrace", "contextPack"):
        del bare["lookupResult"][part]
    expects = {"expectedRerankTopSource": "mysql-pool", "expectedEvidenceStatus": "sufficient"}
    results = [
        score_case(
            GoldenCase.from_json(make_case("bare", query="q", **expects), {}),
            Fixture.from_json(bare),
        ),
        score_case(
            GoldenCase.from_json(make_case("skip", query="q", **expects), {}),
            Fixture.from_json(make_fixture("skip", [block(1, "mysql-pool")], query="q")),
            skip=["rerankTopSource"],
        ),
        score_case(
            GoldenCase.from_json(make_case("full", query="q"), {}),
            Fixture.from_json(make_fixture("full", [block(1, "mysql-pool")], query="q")),
        ),
    ]
    return build_report(results, [], INPUTS)


def test_not_applicable_expectations_are_counted_per_case_and_in_the_report() -> None:
    from ragsnap.io.schema import validate
    from ragsnap.scoring.privacy import private_report

    report = _traceless_report()
    validate(report, "report", "r.json", "report")
    bare, skipped, full = report["cases"]
    assert bare["passed"] and bare["notApplicable"] == [
        {"expectation": "evidenceStatus", "missing": "retrievalTrace"},
        {"expectation": "rerankTopSource", "missing": "rerankTrace"},
    ]
    assert (bare["fallbackReasons"], bare["evidenceStatus"], bare["contextSources"]) == (
        None,
        None,
        None,
    )
    assert "notApplicable" not in skipped and skipped["skippedExpectations"] == ["rerankTopSource"]
    assert "notApplicable" not in full and "skippedExpectations" not in full
    assert report["notApplicable"] == {
        "cases": 1,
        "expectations": {"evidenceStatus": 1, "rerankTopSource": 1},
    }
    private = private_report(report)
    validate(private, "private-report", "p.json", "report")
    assert private["notApplicable"] == report["notApplicable"]
    assert private["cases"][0]["notApplicable"] == bare["notApplicable"]
    for view in (report, private):
        section = render_markdown(view).split("## Expectations not checked (2 case(s))")[1]
        assert (
            "- Not applicable in 1 case(s) (the fixture lacks what they read, neither passed nor "
            "failed): evidenceStatus in 1 case(s) (no retrievalTrace), rerankTopSource in 1 "
            "case(s) (no rerankTrace)"
        ) in section
        assert "- Not checked (scoring.skip): rerankTopSource in 1 case(s)" in section
        assert (
            "| bare   | evidenceStatus not applicable (fixture has no retrievalTrace); "
            "rerankTopSource not applicable (fixture has no rerankTrace) |"
        ) in section
        assert "| skip   | rerankTopSource skipped (scoring.skip)" in section


def test_a_report_whose_expectations_were_all_checked_says_nothing_of_them() -> None:
    report = _traceless_report()
    report["cases"] = report["cases"][2:]
    del report["notApplicable"]
    assert "not checked" not in render_markdown(report).lower()


def _floats(value: Any, pointer: str = "") -> list[str]:
    if type(value) is float:
        return [pointer]
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in _floats(v, f"{pointer}/{k}")]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in _floats(v, f"{pointer}/{i}")]
    return []


def test_case_rows_hold_floats_only_where_they_say() -> None:
    """The writer rounds only a case row's ``CASE_FLOAT_KEYS`` (``FloatsUnder``): every
    float of every kind of row is there, and the bytes are those of a full walk."""
    from ragsnap.io.jsonio import FloatsUnder, FrozenRow, dump_json
    from ragsnap.scoring.report import CASE_FLOAT_KEYS

    judged = make_case(
        "j",
        query="q",
        expectedKeywords=["pool"],
        expectedBreadcrumbs=["Database"],
        expectedContextSources=["mysql-pool"],
        judgments=[{"chunkId": "mysql-pool#c0", "grade": 2, "spans": ["pool"]}],
    )
    bare = make_fixture("j", [block(1, "mysql-pool")], query="q")
    for part in ("contextPack", "retrievalTrace", "rerankTrace"):
        del bare["lookupResult"][part]
    cases = [
        (
            GoldenCase.from_json(judged, {}),
            Fixture.from_json(make_fixture("j", [block(1, "mysql-pool")], query="q")),
            {"ndcg@10": 1 / 3, "contextRecall": None},
        ),
        (
            GoldenCase.from_json(
                {**make_case("b", query="q"), "expectedSelectedAttempt": "filtered"}, {}
            ),
            Fixture.from_json({**bare, "caseId": "b"}),
            None,
        ),
        (GoldenCase.from_json(make_case("m", query="q"), {}), None, {"ndcg@10": 0.0}),
        (
            GoldenCase.from_json(make_case("n", query="q", noAnswer=True, expectedSources=[]), {}),
            None,
            None,
        ),
    ]
    results = [
        score_case(case, fixture, metrics, skip=("contextSources",) if case.id == "j" else ())
        for case, fixture, metrics in cases
    ]
    report = build_report(results, [], INPUTS)
    for row in report["cases"]:
        assert type(row) is FloatsUnder and row.float_keys == CASE_FLOAT_KEYS
        assert all(p.split("/")[1] in CASE_FLOAT_KEYS for p in _floats(row)), row["id"]
    assert _floats(report["cases"][0]) == ["/metrics/ndcg@10"]
    plain = copy.deepcopy({**report, "cases": [dict(row) for row in report["cases"]]})
    assert dump_json(report) == dump_json(plain)
    # ``frozen`` (what ``ragsnap score`` holds): the same report, read and written alike
    frozen = build_report(results, [], INPUTS, frozen=True)
    assert all(type(row) is FrozenRow for row in frozen["cases"])
    assert frozen == report and dump_json(frozen) == dump_json(report)
    assert render_markdown(frozen) == render_markdown(report)

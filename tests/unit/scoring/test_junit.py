"""JUnit XML of a score report and its diff (ragsnap.scoring.junit)."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from conftest import block, make_case, make_fixture
from ragsnap.models import Fixture, GoldenCase
from ragsnap.scoring.diff import Tolerances, diff_reports
from ragsnap.scoring.hits import score_case
from ragsnap.scoring.junit import render_junit_xml
from ragsnap.scoring.report import build_report

INPUTS = {"cases": "c.json", "casesSha256": "0" * 64, "fixtures": "f", "fixturesSha256": "1" * 64}


def report(top: dict[str, str], known: str | None = None) -> dict:  # type: ignore[type-arg]
    results = []
    for case_id, source in top.items():
        extra = {"knownFailure": known} if known and case_id == "known" else {}
        case = GoldenCase.from_json(make_case(case_id, query=f"q {case_id}", **extra), {})
        fixture = Fixture.from_json(make_fixture(case_id, [block(1, source)], query=case.query))
        results.append(score_case(case, fixture))
    return build_report(results, [], INPUTS)


def test_one_testcase_per_case_failures_and_known_failures() -> None:
    current = report({"ok": "mysql-pool", "bad": "x", "known": "y"}, known="tracked in #12")
    root = ET.fromstring(render_junit_xml(current, None))
    (suite,) = root.findall("testsuite")
    cases = {c.get("name"): c for c in suite.findall("testcase")}
    assert list(cases) == ["ok", "bad", "known"]
    assert cases["ok"].find("failure") is None and cases["ok"].find("skipped") is None
    failure = cases["bad"].find("failure")
    assert failure is not None
    assert failure.get("message", "").startswith("hit level miss: hit level miss is below")
    assert "q bad" in (failure.text or "")
    skipped = cases["known"].find("skipped")
    assert skipped is not None and skipped.get("type") == "xfail"
    assert skipped.get("message") == "expected failure (knownFailure: tracked in #12)"
    assert (root.get("tests"), root.get("failures"), root.get("skipped")) == ("3", "1", "1")


def test_regressions_fail_and_aggregates_get_their_suite() -> None:
    before = report({"a": "mysql-pool", "b": "mysql-pool"})
    after = report({"a": "mysql-pool", "b": "x"})
    text = render_junit_xml(after, diff_reports(before, after, Tolerances(), "base.json"))
    assert text == render_junit_xml(after, diff_reports(before, after, Tolerances(), "base.json"))
    root = ET.fromstring(text)
    cases_suite, aggregates = root.findall("testsuite")
    failure = cases_suite.find("testcase[@name='b']/failure")
    assert failure is not None and "regressed against the baseline: passed" in failure.get(
        "message", ""
    )
    # and what the case lost, one line
    assert failure.get("message", "").endswith(
        "firstExpectedRank 1 -> None; lost source mysql-pool (rank 1 -> below the cut)"
    )
    rows = {c.get("name"): c.find("failure") for c in aggregates.findall("testcase")}
    assert rows["passRate"] is not None and rows["noAnswerFalsePositiveRate"] is None
    assert "passRate 100.0% -> 50.0% (-50.0 pp" in (rows["passRate"].get("message") or "")


def _known_report(mode: str) -> dict:  # type: ignore[type-arg]
    """One unmarked passing case, one expected failure, one marked case that now passes."""
    results = []
    for case_id, source, known in (
        ("ok", "mysql-pool", None),
        ("xfail", "x", "tracked in #12"),
        ("xpass", "mysql-pool", "tracked in #13"),
    ):
        extra = {"knownFailure": known} if known else {}
        case = GoldenCase.from_json(make_case(case_id, query=f"q {case_id}", **extra), {})
        fixture = Fixture.from_json(make_fixture(case_id, [block(1, source)], query=case.query))
        results.append(score_case(case, fixture))
    return build_report(results, [], INPUTS, mode)


def test_known_failures_follow_the_mode() -> None:
    def cases(mode: str) -> dict[str, ET.Element]:
        root = ET.fromstring(render_junit_xml(_known_report(mode), None))
        return {c.get("name", ""): c for c in root.iter("testcase")}

    expected = cases("expected")
    assert expected["xfail"].find("skipped") is not None
    out = expected["xpass"].find("system-out")
    assert expected["xpass"].find("failure") is None and out is not None
    assert out.text == (
        "known failure now passes: remove its knownFailure (knownFailure: tracked in #13)"
    )
    strict = cases("strict")
    assert strict["xfail"].find("skipped") is not None
    failure = strict["xpass"].find("failure")
    assert failure is not None and failure.get("type") == "XPASS(strict)"
    assert failure.get("message", "").startswith("[XPASS(strict)] known failure now passes")
    fail = cases("fail")
    failure = fail["xfail"].find("failure")
    assert failure is not None and fail["xfail"].find("skipped") is None
    assert failure.get("message", "").endswith(
        "(knownFailure: tracked in #12; knownFailures: fail)"
    )
    assert fail["xpass"].find("failure") is None and fail["ok"].find("failure") is None


def test_stale_fixtures_fail_their_own_suite_and_notes_are_output() -> None:
    current = report({"ok": "mysql-pool"})
    assert [s.get("name") for s in ET.fromstring(render_junit_xml(current, None))] == [
        "ragsnap.cases"
    ]  # no provenance in the report: no suite
    cause = "seed-docs/a.md changed after fixtures/ok.json (citing it) was captured"
    current["provenance"] = {"stale": [cause], "notes": ["n1"], "fix": "run it"}
    root = ET.fromstring(render_junit_xml(current, None))
    suite = root.findall("testsuite")[-1]
    assert suite.get("name") == "ragsnap.fixtures"
    (item,) = suite.findall("testcase")
    failure = item.find("failure")
    assert failure is not None and failure.get("message") == "stale fixtures: 1 cause(s)"
    assert failure.text == f"{cause}\nrun it"
    assert item.findtext("system-out") == "n1"
    assert (root.get("tests"), root.get("failures")) == ("2", "1")
    current["provenance"] = {"staleCauses": 2, "notes": 0}  # a private report: counts
    private = ET.fromstring(render_junit_xml(current, None)).findall("testsuite")[-1]
    failure = private.find("testcase/failure")
    assert failure is not None and failure.get("message") == "stale fixtures: 2 cause(s)"
    assert failure.text is None


@pytest.mark.parametrize("code", range(32))
def test_every_c0_control_character_leaves_the_xml_well_formed(code: int) -> None:
    """XML 1.0 forbids most C0 controls even as character references: a knownFailure,
    query, reason, category or case id holding one used to make the file unreadable."""
    char = chr(code)
    current = report({"bad": "x", "known": "y"}, known=f"tracked{char}in #12")
    for case in current["cases"]:
        case["id"] = f"{case['id']}{char}id"
        case["query"] = f"query{char}text"
        case["category"] = f"cat{char}egory"
        case["reasons"] = [f"reason{char}one", *case["reasons"]]
    text = render_junit_xml(current, None)
    root = ET.fromstring(text)  # well-formed
    shown = char if char in "\t\n\r" else f"\\x{code:02x}"
    names = [c.get("name") for c in root.iter("testcase")]
    assert names == [f"bad{shown}id", f"known{shown}id"]
    failure = root.find("testsuite/testcase/failure")
    assert failure is not None
    assert f"reason{shown}one" in (failure.get("message") or "")
    # (an XML parser reads a carriage return in text as a newline)
    assert f"query{shown.replace(chr(13), chr(10))}text" in (failure.text or "")
    skipped = root.find("testsuite/testcase/skipped")
    assert skipped is not None
    if char not in "\t\n\r":  # attribute values normalise whitespace; the rest is kept
        assert skipped.get("message") == f"expected failure (knownFailure: tracked{shown}in #12)"


def test_non_characters_and_lone_surrogates_are_escaped_too() -> None:
    current = report({"bad": "x"})
    current["cases"][0]["query"] = "a\ufffeb\uffffc\ud800d\x7fe"
    failure = ET.fromstring(render_junit_xml(current, None)).find("testsuite/testcase/failure")
    assert failure is not None
    assert "query: a\\ufffeb\\uffffc\\ud800d\x7fe" in (failure.text or "")

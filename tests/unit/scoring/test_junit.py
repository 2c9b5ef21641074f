"""JUnit XML of a score report and its diff (ragsnap.scoring.junit)."""

from __future__ import annotations

import xml.etree.ElementTree as ET

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
    assert skipped is not None and skipped.get("message") == "known failure: tracked in #12"
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
    rows = {c.get("name"): c.find("failure") for c in aggregates.findall("testcase")}
    assert rows["passRate"] is not None and rows["noAnswerFalsePositiveRate"] is None
    assert "passRate 100.0% -> 50.0% (-50.0 pp" in (rows["passRate"].get("message") or "")

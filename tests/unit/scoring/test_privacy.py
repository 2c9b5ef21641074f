"""Privacy views of the score report and the diff (ragsnap.scoring.privacy)."""

from __future__ import annotations

import json
from typing import Any

from conftest import block, make_case, make_fixture
from ragsnap.io.schema import validate
from ragsnap.models import Fixture, GoldenCase
from ragsnap.scoring.diff import Tolerances, diff_reports
from ragsnap.scoring.hits import score_case
from ragsnap.scoring.junit import render_junit_xml
from ragsnap.scoring.privacy import (
    evaluation_definition,
    private_diff,
    private_id,
    private_reasons,
    private_report,
)
from ragsnap.scoring.report import build_report, render_markdown
from ragsnap.scoring.review import render_diff_markdown, render_pr_comment

INPUTS = {
    "cases": "private/cases.json",
    "casesSha256": "0" * 64,
    "fixtures": "private/fixtures",
    "fixturesSha256": "1" * 64,
}
QUERY = "a secret question about the payroll database"
SOURCE = "payroll-db-secrets"


def report(blocks: list[dict[str, Any]], **case_fields: Any) -> dict[str, Any]:
    fields = {
        "query": QUERY,
        "expectedSources": [SOURCE],
        "expectedKeywords": ["salary table"],
        "expectedRerankTopSource": SOURCE,
        "expectedContextSources": [SOURCE],
        "expectedSelectedAttempt": "filtered",
        "knownFailure": None,
        **case_fields,
    }
    case = GoldenCase.from_json(make_case("c1", **fields), {"kbScope": "secret-scope"})
    fixture = Fixture.from_json(make_fixture("c1", blocks, query=QUERY, selected="unfiltered"))
    return json.loads(json.dumps(build_report([score_case(case, fixture)], [], INPUTS)))


def leaks(text: str) -> list[str]:
    needles = (QUERY, SOURCE, "private/", "secret-scope", "salary table", "unfiltered")
    return [n for n in needles if n in text]


def test_private_report_keeps_ids_and_measurements_only() -> None:
    full = report([block(1, "other-doc", text="salary table is here")])
    assert leaks(json.dumps(full))  # the full report names them
    private = private_report(full, {"providersSha256": "2" * 64})
    validate(private, "private-report", "r.json", "report")
    assert private["privacy"] is True
    assert private["inputs"] == {
        "casesSha256": "0" * 64,
        "fixturesSha256": "1" * 64,
        "providersSha256": "2" * 64,
    }
    (case,) = private["cases"]
    assert case["hitLevel"] == "weak" and case["matchedTargets"] == 0
    assert case["reasons"] == [
        "hit level weak is below the minimum medium; 0 expected target(s) found in the top 5, "
        "breadcrumbs 0/0, keywords 1/1",
        "selected attempt differs from the expected one",
        "context pack lacks expected source(s)",
        "rerank top source differs from the expected one",
    ]
    for text in (
        json.dumps(private),
        render_markdown(private),
        render_pr_comment(private, None, "r.md"),
        render_junit_xml(private, None),
    ):
        assert leaks(text) == []
    assert private_report(private) == private  # a private report stays as it is
    # coverage keeps ranks and what covered what, every text a stable hash
    assert case["coverage"]["sources"] == [{"target": private_id(SOURCE), "rank": None}]
    assert case["coverage"]["keywords"] == [
        {"target": private_id("salary table"), "chunk": private_id("other-doc#1")}
    ]


def test_unknown_reasons_are_never_passed_through() -> None:
    case = {"reasons": ["something quoting 'a secret'"], "matchedSources": []}
    assert private_reasons(case) == ["other failure"]


def test_known_failure_text_becomes_a_flag() -> None:
    full = report([block(1, "other-doc")], knownFailure=f"fails because {QUERY}")
    private = private_report(full)
    assert private["cases"][0]["knownFailure"] is True
    assert leaks(render_markdown(private) + render_junit_xml(private, None)) == []


def test_private_diff_is_computed_on_the_full_data_and_diffs_of_private_reports_work() -> None:
    before = report([block(1, SOURCE, text="salary table")])
    after = report([block(1, "other-doc")])
    full = diff_reports(before, after, Tolerances(), "private/baseline.json")
    diff = private_diff(full, before, after)
    validate(diff, "private-diff-report", "d.json", "diff")
    assert diff["baseline"] == "baseline" and diff["regressed"] is True
    (case,) = diff["cases"]
    assert {c["field"]: (c["baseline"], c["current"]) for c in case["changes"]} == {
        "hitLevel": ("strong", "miss"),  # both fail their selected attempt
        "firstExpectedRank": (1, None),
        "rerankTopSource": (None, None),
    }
    assert case["reasons"][0].startswith("hit level miss is below the minimum medium; 0 ")
    for text in (
        json.dumps(diff),
        render_diff_markdown(diff),
        render_pr_comment(private_report(after), diff, "d.md"),
        render_junit_xml(private_report(after), diff),
    ):
        assert leaks(text) == []
    # what the case lost: ranks and kinds kept, targets and chunks hashed
    assert [(e["kind"], e["target"], e["before"]) for e in case["lost"]] == [
        ("keyword", private_id("salary table"), private_id(f"{SOURCE}#1")),
        ("source", private_id(SOURCE), 1),
        ("expectation", "contextSources", "held"),
        ("expectation", "rerankTopSource", "held"),
    ]
    # the causes name cases by id only, as the rest of the private diff does
    assert diff["causes"] == full["causes"] and diff["causes"][0]["cases"] == ["c1"]
    # two private reports diff to the same verdict, and the result is private
    again = diff_reports(private_report(before), private_report(after), Tolerances(), "b")
    assert again["counts"] == full["counts"] and again["causes"] == full["causes"]
    private_again = private_diff(again, private_report(before), private_report(after))
    assert private_again["cases"][0]["reasons"] == case["reasons"]
    # the same losses by the same hashes (a private report has no pipeline values to
    # point an expectation's change at)
    assert [{k: e[k] for k in ("kind", "target", "before", "after")} for e in case["lost"]] == [
        {k: e[k] for k in ("kind", "target", "before", "after")}
        for e in private_again["cases"][0]["lost"]
    ]
    # a full current report against a private baseline compares hashed coverage
    mixed = diff_reports(private_report(before), after, Tolerances(), "b")
    assert mixed["cases"][0]["lost"][:2] == private_again["cases"][0]["lost"][:2]
    assert (
        private_diff(mixed, private_report(before), after)["cases"][0]["lost"][:2]
        == (case["lost"][:2])
    )


def test_evaluation_definition_covers_generators_and_measures() -> None:
    full = report([block(1, SOURCE)])
    one = evaluation_definition(full, [{"embedder": {"model": "m1"}, "settings": {"a": 1}}])
    two = evaluation_definition(full, [{"embedder": {"model": "m1"}, "settings": {"a": 2}}])
    three = evaluation_definition(full, [{"embedder": {"model": "m2"}, "settings": {"a": 1}}])
    assert one["providersSha256"] == two["providersSha256"] != three["providersSha256"]
    assert len({one["evaluationDefinitionSha256"], two["evaluationDefinitionSha256"]}) == 2


def test_reasons_of_an_edited_report_are_not_trusted() -> None:
    reasons = [
        "hit level miss is below the minimum medium; 0 expected target(s) found in the top 5, "
        "breadcrumbs 0/0, keywords 0/1",
        "hit level miss is below the minimum medium; but the query was a secret",
        "selected attempt 'secret', expected 'filtered'",
    ]
    assert private_reasons({"reasons": reasons}) == [
        reasons[0],
        "other failure",
        "selected attempt differs from the expected one",
    ]

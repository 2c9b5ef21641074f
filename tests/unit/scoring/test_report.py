"""The score report's Markdown (ragsnap.scoring.report)."""

from __future__ import annotations

import copy

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

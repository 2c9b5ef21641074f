"""The self-contained HTML report (ragsnap.scoring.html)."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from typing import Any

from conftest import block, make_case, make_fixture
from ragsnap.models import Fixture, GoldenCase
from ragsnap.scoring.diff import Tolerances, diff_reports
from ragsnap.scoring.formats import render_format
from ragsnap.scoring.hits import score_case
from ragsnap.scoring.html import (
    PAGE_SIZE,
    line_chart,
    rank_movement,
    render_score_html,
    stacked_bars,
)
from ragsnap.scoring.privacy import private_diff, private_report
from ragsnap.scoring.report import build_report

INPUTS = {"cases": "c.json", "casesSha256": "0" * 64, "fixtures": "f", "fixturesSha256": "1" * 64}
EVIL = '</script><script>alert(1)</script><img src=x onerror=alert(2)> & "quoted"'


def report(sources: dict[str, str], query: str = "") -> dict[str, Any]:
    results = []
    for case_id, source in sources.items():
        case = GoldenCase.from_json(make_case(case_id, query=query or f"query for {case_id}"), {})
        fixture = Fixture.from_json(make_fixture(case_id, [block(1, source)], query=case.query))
        results.append(score_case(case, fixture))
    return build_report(results, [], INPUTS)


def case_data(page: str) -> dict[str, Any]:
    found = re.search(r'<script type="application/json" id="case-data">(.*?)</script>', page)
    assert found is not None
    data: dict[str, Any] = json.loads(found.group(1))
    return data


def test_markup_in_a_query_stays_text() -> None:
    before = report({"a": "mysql-pool", "b": "mysql-pool"}, query=EVIL)
    after = report({"a": "mysql-pool", "b": "elsewhere"}, query=EVIL)
    page = render_score_html(after, diff_reports(before, after, Tolerances(), "base.json"))
    # exactly two script elements: the case data and the page's own script
    assert page.count("<script") == 2
    assert "<img" not in page and "</script><script>alert" not in page
    rows = case_data(page)["rows"]
    assert [row["c"][1] for row in rows] == [EVIL, EVIL]  # the text, intact, as data


def test_the_policy_allows_only_the_page_script_and_no_network() -> None:
    page = render_score_html(report({"a": "mysql-pool"}))
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page)
    assert policy is not None
    assert "default-src &#x27;none&#x27;" in policy.group(1)
    script = page.rsplit("<script>", 1)[1].split("</script>", 1)[0]
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    assert f"sha256-{digest}" in policy.group(1)
    assert "http://" not in page and "https://" not in page and "src=" not in page


def test_same_inputs_same_bytes_and_the_registered_format() -> None:
    before = report({"a": "mysql-pool", "b": "mysql-pool"})
    after = report({"a": "mysql-pool", "b": "elsewhere"})
    diff = diff_reports(before, after, Tolerances(), "base.json")
    page = render_score_html(after, diff)
    assert page == render_score_html(after, diff)
    assert render_format("html", after, diff, "r.md") == page
    assert page.startswith("<!DOCTYPE html>") and page.endswith("</html>\n")
    assert "Regressed against base.json" in page
    assert page.count('class="move"') == 1  # b: rank 1 -> none


def test_every_case_is_a_row_and_pages_are_small() -> None:
    many = report({f"c{i:04d}": "mysql-pool" if i % 3 else "x" for i in range(PAGE_SIZE * 3)})
    page = render_score_html(many)
    assert 'data-chart="metrics"' in page and "baseline" not in page  # current values only
    data = case_data(page)
    assert data["pageSize"] == PAGE_SIZE
    assert len(data["rows"]) == PAGE_SIZE * 3
    assert {tag for row in data["rows"] for tag in row["t"]} == {"pass", "fail"}
    first = {data["labels"][i]: value for i, value in data["rows"][0]["d"]}
    assert first["top sources"] == ["1. x"]
    assert first["reasons"] == ["hit level miss is below the minimum medium"]


def test_a_private_report_renders_ids_only() -> None:
    secret = "where is the secret payroll runbook"
    before = report({"a": "mysql-pool", "b": "mysql-pool"}, query=secret)
    after = report({"a": "mysql-pool", "b": "payroll-db"}, query=secret)
    diff = private_diff(
        diff_reports(before, after, Tolerances(), "secret/base.json"), before, after
    )
    page = render_score_html(private_report(after), diff)
    for text in (secret, "payroll-db", "mysql-pool", "secret/base.json", "c.json"):
        assert text not in page, text
    assert '"b"' in page and "miss" in page


def test_charts_draw_one_element_per_value() -> None:
    bars = stacked_bars("x", [("a", [1, 0, 2]), ("b", [0, 0, 0])], [("s", "#000")] * 3)
    assert bars.count('class="bar"') == 2
    moves = rank_movement("m", [("a", 1, None), ("b", 3, 1)])
    assert moves.count('class="move"') == 2 and "none" in moves
    lines = line_chart("t", ["r1", "r2", "r3"], [("ndcg@10", [0.5, None, 0.7])])
    assert lines.count('class="dot"') == 2 and lines.count('class="line"') == 1

"""The diff as a reviewer reads it (ragsnap.scoring.review)."""

from __future__ import annotations

from typing import Any

from conftest import block, make_case, make_fixture
from ragsnap.models import Fixture, GoldenCase
from ragsnap.scoring.diff import NoiseFloor, Tolerances, diff_reports
from ragsnap.scoring.hits import score_case
from ragsnap.scoring.report import build_report
from ragsnap.scoring.review import COMMENT_LIMIT, render_diff_markdown, render_pr_comment
from ragsnap.scoring.significance import SignificanceSettings

INPUTS = {"cases": "c.json", "casesSha256": "0" * 64, "fixtures": "f", "fixturesSha256": "1" * 64}


def report(blocks_by_case: dict[str, list[dict[str, Any]]], query: str = "") -> dict[str, Any]:
    results = []
    for case_id, blocks in blocks_by_case.items():
        case = GoldenCase.from_json(make_case(case_id, query=query or f"query for {case_id}"), {})
        fixture = Fixture.from_json(make_fixture(case_id, blocks, query=case.query))
        results.append(score_case(case, fixture))
    return build_report(results, [], INPUTS)


def test_markdown_is_in_review_order_grouped_by_cause_with_tables_folded() -> None:
    before = report({"a": [block(1, "mysql-pool")], "b": [block(1, "mysql-pool")]})
    after = report({"a": [block(1, "mysql-pool")], "b": [block(1, "x")]})
    md = render_diff_markdown(diff_reports(before, after, Tolerances(), "base.json"))
    order = [
        "**Regressed against base.json",
        "## Regressed cases (1)",
        "### `b` (database, en): strong → miss",
        "> query for b",
        "- Fails now: hit level miss is below the minimum medium",
        "- Top sources: baseline `mysql-pool` → current `x`",
        "## Aggregate metrics",
        # one line for the rows one case moved, the scope rows that repeat them counted
        "- passRate -50.0 pp, recallAtK -50.0 pp, strongHitRate -50.0 pp, missCount +1 "
        "← 1 case: `b`: regression; +12 category/language/split row(s) alike",
        "<details><summary>moved rows 1-16 of 16, folded ones included</summary>",
        "| -50.0 pp |",
        "## Hit-level transitions (2 answerable case(s) in both)",
        "Tolerances: passRate 0.0",
    ]
    positions = [md.index(text) for text in order]
    assert positions == sorted(positions), md
    head = md.split("<details>")[0]
    assert "unchanged" not in head.split("## Aggregate metrics")[1]


def test_pr_comment_stays_under_the_limit_and_says_where_the_rest_is() -> None:
    n = 1500
    long_query = "why does the pool " * 400  # 7,200 characters
    before = report({f"case-{i:04d}": [block(1, "mysql-pool")] for i in range(n)}, long_query)
    after = report({f"case-{i:04d}": [block(1, f"other-{i}")] for i in range(n)}, long_query)
    diff = diff_reports(before, after, Tolerances(), "base.json", noise_floor=NoiseFloor())
    full = render_diff_markdown(diff)
    assert len(full) > 2 * COMMENT_LIMIT
    comment = render_pr_comment(after, diff, "reports/baseline-diff.md")
    assert len(comment) < COMMENT_LIMIT
    assert "**Regressed against base.json: 1500 case(s) regressed" in comment
    assert "### Regressed cases (1500)" in comment and "#### `case-0000`" in comment
    assert "> **Truncated to fit a comment**: not shown: " in comment
    assert "The full report is `reports/baseline-diff.md`" in comment
    assert "Significance: no paired tests." in comment  # the diff ran without them
    assert "Noise floor: default 0.001." in comment


def test_small_pr_comment_is_whole() -> None:
    before = report({"a": [block(1, "mysql-pool")]})
    after = report({"a": [block(1, "x")]})
    diff = diff_reports(before, after, Tolerances(), "base.json")
    comment = render_pr_comment(after, diff, "reports/baseline-diff.md")
    assert "Truncated" not in comment
    assert comment.startswith("## ragsnap retrieval check\n\n**Regressed against base.json")
    without_diff = render_pr_comment(after, None, "reports/current.md")
    assert "### Failing cases (1)" in without_diff and "`a`" in without_diff


def test_a_10000_case_regression_comment_stays_under_the_limit() -> None:
    results = {"before": [], "after": []}
    for i in range(10_000):
        case = GoldenCase.from_json(make_case(f"case-{i:05d}", category=f"cat-{i % 10}"), {})
        for name, source in (("before", "mysql-pool"), ("after", "x" if i % 3 else "mysql-pool")):
            fixture = Fixture.from_json(make_fixture(case.id, [block(1, source)], query=case.query))
            results[name].append(score_case(case, fixture))
    before, after = (build_report(results[n], [], INPUTS) for n in ("before", "after"))
    settings = SignificanceSettings(permutations=200, bootstrap=200)
    diff = diff_reports(before, after, Tolerances(), "base.json", significance=settings)
    comment = render_pr_comment(after, diff, "reports/baseline-diff.md")
    assert len(comment) < 60_000
    assert "### Regressed cases (6666)" in comment and "> **Truncated to fit a comment**" in comment
    # every row moved with the same 6,666 cases: one cause, the scope rows folded
    (cause,) = diff["causes"]
    assert len(cause["cases"]) == 6666 and len(cause["folded"]) == 48


def test_a_regressed_case_says_what_it_lost_and_a_changed_one_beside_its_changes() -> None:
    before = report({"a": [block(1, "mysql-pool")], "b": [block(1, "mysql-pool")]})
    after = report({"a": [block(1, "x"), block(2, "mysql-pool")], "b": [block(1, "x")]})
    diff = diff_reports(before, after, Tolerances(first_expected_rank=1), "base.json")
    assert [c["status"] for c in diff["cases"]] == ["changed", "regression"]
    for text in (render_diff_markdown(diff), render_pr_comment(after, diff, "d.md")):
        assert "\n- lost source mysql-pool (rank 1 -> below the cut)\n" in text
        assert (
            "| firstExpectedRank 1 → 2; rerankTopSource mysql-pool → x; "
            "lost source mysql-pool (rank 1 -> rank 2) |"
        ) in text

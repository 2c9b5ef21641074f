"""Aggregate counts and rates (ragsnap.scoring.aggregates)."""

from __future__ import annotations

from conftest import block, make_case, make_fixture
from ragsnap.models import Fixture, GoldenCase
from ragsnap.scoring.aggregates import aggregate, group
from ragsnap.scoring.hits import CaseResult, score_case


def scored(case_fields: dict, blocks: list | None) -> CaseResult:
    c = GoldenCase.from_json(make_case(**case_fields), {})
    f = None if blocks is None else Fixture.from_json(make_fixture(c.id, blocks, query=c.query))
    return score_case(c, f)


def test_rates_over_answerable_cases_only() -> None:
    results = [
        scored({"case_id": "a", "expectedKeywords": ["k"]}, [block(1, "mysql-pool", text="k")]),
        scored({"case_id": "b", "expectedKeywords": ["k"]}, [block(1, "mysql-pool", text="x")]),
        scored({"case_id": "c", "expectedKeywords": ["k"]}, [block(1, "other", text="k")]),
        scored({"case_id": "d"}, None),
        scored({"case_id": "e", "noAnswer": True, "expectedSources": None}, []),
        scored({"case_id": "f", "noAnswer": True, "expectedSources": None}, [block(1, "x")]),
    ]
    agg = aggregate(results)
    assert (agg.cases, agg.passed, agg.failed, agg.answerable, agg.no_answer) == (6, 3, 3, 4, 2)
    assert (agg.strong, agg.medium, agg.weak, agg.miss) == (1, 1, 1, 1)
    assert agg.recall_at_k == 0.5
    assert agg.strong_hit_rate == 0.25
    assert agg.pass_rate == 0.5
    assert agg.fixture_missing == 1
    assert (agg.no_answer_false_positives, agg.no_answer_false_positive_rate) == (1, 0.5)
    assert agg.to_json()["missCount"] == 1


def test_empty_denominators_are_none_not_zero() -> None:
    only_no_answer = [scored({"noAnswer": True, "expectedSources": None}, [])]
    agg = aggregate(only_no_answer)
    assert agg.recall_at_k is None and agg.strong_hit_rate is None
    assert aggregate([]).pass_rate is None
    assert aggregate([scored({}, [block(1, "mysql-pool")])]).no_answer_false_positive_rate is None


def test_groups_are_sorted_and_partition_the_cases() -> None:
    results = [
        scored({"case_id": "a", "category": "cache", "split": "test"}, [block(1, "mysql-pool")]),
        scored({"case_id": "b", "category": "database"}, [block(1, "x")]),
        scored({"case_id": "c", "category": "cache"}, None),
    ]
    by_category = group(results, lambda r: r.case.category)
    assert list(by_category) == ["cache", "database"]
    assert by_category["cache"].cases == 2 and by_category["cache"].passed == 1
    assert sum(a.cases for a in group(results, lambda r: r.case.split).values()) == 3

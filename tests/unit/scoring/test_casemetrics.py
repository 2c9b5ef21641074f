"""Graded metrics of golden cases and the span rules (ragsnap.scoring.casemetrics)."""

from __future__ import annotations

import math
from typing import Any

import pytest

from conftest import block, make_case, make_fixture
from ragsnap.ir.metrics import parse_measures
from ragsnap.models import Fixture, GoldenCase
from ragsnap.scoring.casemetrics import case_metrics, context_precision_recall


def test_precision_and_recall_by_hand() -> None:
    texts = ["The pool size is 20 per pod.", "Unrelated text here."]  # 28 + 20 chars
    precision, recall = context_precision_recall(texts, ["pool size is 20", "missing span"])
    assert precision == pytest.approx(15 / 48)
    assert recall == pytest.approx(15 / (15 + 12))


def test_nested_and_repeated_spans_are_unioned() -> None:
    texts = ["abcdefghij"]
    # "cde" lies inside "bcdef": dropped; the repeat counts once
    assert context_precision_recall(texts, ["bcdef", "cde", "bcdef"]) == (0.5, 1.0)


def test_overlapping_spans_are_unioned_as_goodbuddy_unions_them() -> None:
    # abcd and cdef quote "abcdef": 6 annotated characters, 4 of them returned
    precision, recall = context_precision_recall(["zzabcdzz"], ["abcd", "cdef"])
    assert recall == pytest.approx(4 / 6)
    assert round(recall or 0, 3) == 0.667
    assert precision == pytest.approx(4 / 8)
    # both returned: everything annotated is covered
    assert context_precision_recall(["abcdef"], ["cdef", "abcd"])[1] == 1.0


def test_the_judged_chunk_places_spans_where_it_knows_them() -> None:
    # in the chunk the two spans are apart: nothing to union, 4 of 8
    source = "abcd then cdef"
    assert context_precision_recall(["zzabcdzz"], ["abcd", "cdef"], [source])[1] == 0.5
    # in this chunk they overlap by three characters, though their ends share only two
    source = "xx abcdbcd-z"
    spans = ["abcdbc", "bcd-z"]
    assert context_precision_recall(["abcdbc"], spans, [source])[1] == pytest.approx(6 / 9)


def test_one_shared_letter_is_not_an_overlap() -> None:
    # "sizes" ends and "settings" starts with an s: chance, not one stretch of text
    assert context_precision_recall(["pool sizes"], ["pool sizes", "settings"])[1] == (
        pytest.approx(10 / 18)
    )


def test_case_metrics_place_spans_in_the_judged_chunk_the_fixture_returned() -> None:
    judgments = [{"chunkId": "gold#1", "grade": 3, "spans": ["abcd", "cdef"]}]
    case = _case("a", judgments, topK=1)
    near = {**block(1, "near", text="zzabcdzz"), "chunkId": "near#1"}
    gold = {**block(2, "gold", text="abcd then cdef"), "rank": 2, "chunkId": "gold#1"}
    measures = parse_measures(["recall@10"])

    def recall(blocks: list[dict[str, Any]]) -> Any:
        fixtures = {"a": Fixture.from_json(make_fixture("a", blocks))}
        return case_metrics([case], fixtures, measures)["a"]["contextRecall"]

    # the judged chunk (returned below the top K) shows the spans apart: 4 of 8
    assert recall([near, gold]) == 0.5
    # without it, the spans are taken to overlap as their ends do: 4 of 6
    assert recall([near]) == pytest.approx(4 / 6)


def test_overlapping_occurrences_are_unioned_in_the_context() -> None:
    # "aba" occurs at 0 and 2 in "ababa": the union covers all 5 characters once
    assert context_precision_recall(["ababa", "zzzzz"], ["aba"]) == (0.5, 1.0)


def test_a_repeated_chunk_counts_once() -> None:
    case = _case("a", [{"chunkId": "gold#1", "grade": 3, "spans": ["gold"]}])
    gold = {**block(1, "gold", text="the gold line"), "chunkId": "gold#1"}
    other = {**block(2, "other", text="filler text"), "chunkId": "other#1"}
    repeated = {**gold, "rank": 3}
    measures = parse_measures(["recall@10"])

    def spans(blocks: list[dict[str, Any]]) -> tuple[Any, Any]:
        fixtures = {"a": Fixture.from_json(make_fixture("a", blocks))}
        values = case_metrics([case], fixtures, measures)["a"]
        return values["contextPrecision"], values["contextRecall"]

    # the same chunk returned twice cannot add covered (or returned) characters
    assert spans([gold, other, repeated]) == spans([gold, other])
    assert spans([gold, other]) == (pytest.approx(4 / (13 + 11)), 1.0)


def test_no_spans_and_nothing_returned() -> None:
    assert context_precision_recall(["x"], []) == (None, None)
    assert context_precision_recall([], ["span"]) == (0.0, 0.0)


def _case(case_id: str, judgments: list[dict[str, Any]], **kw: Any) -> GoldenCase:
    return GoldenCase.from_json(make_case(case_id, judgments=judgments, **kw), {})


def test_case_metrics_rank_by_judgment_target_and_dedupe() -> None:
    cases = [
        _case("a", [{"source": "s2", "grade": 3, "spans": ["gold"]}, {"source": "s1", "grade": 0}]),
        _case("b", [{"chunkId": "x#1", "grade": 2}]),
        _case("c", [{"source": "s1", "grade": 0}]),  # nothing relevant: excluded
        _case("n", [], noAnswer=True, expectedSources=None),
    ]
    fixtures = {
        "a": Fixture.from_json(
            make_fixture(
                "a", [block(1, "s1"), block(2, "s2", text="the gold line"), block(3, "s2")]
            )
        ),
    }
    values = case_metrics(cases, fixtures, parse_measures(["mrr@10", "ndcg@10", "recall@1"]))
    assert set(values) == {"a", "b"}
    a = values["a"]
    assert a["mrr@10"] == 0.5
    assert a["ndcg@10"] == pytest.approx((3 / math.log2(3)) / 3)
    assert a["recall@1"] == 0.0
    # top-K texts: "some text", "the gold line", "some text" is chunk s2#3, a different chunk
    assert a["contextRecall"] == 1.0
    assert a["contextPrecision"] == pytest.approx(4 / (9 + 13 + 9))
    assert values["b"] == {  # judged, but no fixture: scores 0, no span metrics
        "mrr@10": 0.0,
        "ndcg@10": 0.0,
        "recall@1": 0.0,
        "contextPrecision": None,
        "contextRecall": None,
    }

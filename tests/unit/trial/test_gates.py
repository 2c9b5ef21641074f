"""Gates over a trial's measurements: thresholds, relative drops, case selections
(category, tags, any case field), gates that could not run, and the admitted /
experimental status they give a method."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ragsnap.errors import InputError
from ragsnap.io.schema import validate
from ragsnap.models import GoldenCase
from ragsnap.scoring.hits import CaseResult
from ragsnap.trial.gates import (
    Gate,
    GateResult,
    evaluate_gates,
    gates_from_json,
    gates_line,
    method_status,
)
from ragsnap.trial.measure import MethodMeasurement

PATH = Path("gates.yaml")
LATENCY = {"p95Ms": 12.5}


def case(
    case_id: str,
    *,
    category: str = "db",
    language: str = "en",
    split: str = "test",
    tags: tuple[str, ...] = (),
    no_answer: bool = False,
    known_failure: str | None = None,
    top_k: int = 5,
    kb_scope: str | None = None,
) -> GoldenCase:
    return GoldenCase(
        id=case_id,
        query="q",
        language=language,
        category=category,
        split=split,
        kb_scope=kb_scope,
        top_k=top_k,
        no_answer=no_answer,
        min_hit_level="medium",
        tags=tags,
        known_failure=known_failure,
    )


def result(c: GoldenCase, mrr: float | None = None, evidence: int = 1) -> CaseResult:
    """A scored case: an answerable one with its MRR@10, a no-answer one with evidence
    (a false positive) or none."""
    return CaseResult(
        case=c,
        fixture_present=True,
        passed=not c.no_answer or evidence == 0,
        reasons=(),
        hit_level=None if c.no_answer else "strong",
        first_expected_rank=None if c.no_answer else 1,
        evidence_count=evidence,
        matched_sources=(),
        breadcrumbs_covered=0,
        keywords_covered=0,
        selected_attempt=None,
        fallback_reasons=None,
        evidence_status=None,
        rerank_top_source=None,
        context_sources=None,
        metrics=None if c.no_answer else {"mrr@10": mrr},
    )


def method(*results: CaseResult) -> MethodMeasurement:
    return MethodMeasurement(tuple(results), ("mrr@10",))


def gates(*items: dict[str, Any]) -> list[Gate]:
    return gates_from_json({"gates": list(items)}, PATH)


def evaluate(items: list[dict[str, Any]], **methods: MethodMeasurement) -> list[GateResult]:
    return evaluate_gates(gates(*items), methods, dict.fromkeys(methods, LATENCY), PATH)


#: six cases: three exact-identifier queries (one of them an error code), two
#: paraphrases in Chinese on the dev split, one no-answer case
CASES = (
    case("id-1", tags=("exact-identifier",)),
    case("id-2", tags=("exact-identifier", "error-code"), category="cache"),
    case("id-3", tags=("exact-identifier",), known_failure="flaky upstream", top_k=10),
    case("para-1", tags=("paraphrase",), language="zh", split="dev"),
    case("para-2", tags=("paraphrase",), language="zh", split="dev", category="cache"),
    case("none-1", no_answer=True, kb_scope="tenant-secret"),
)


def scored(*mrr: float, false_positive: bool = False) -> MethodMeasurement:
    answerable = [result(c, m) for c, m in zip(CASES[:5], mrr, strict=True)]
    return method(*answerable, result(CASES[5], evidence=int(false_positive)))


def test_thresholds_and_relative_drops() -> None:
    hybrid = scored(1.0, 1.0, 0.5, 0.5, 0.5)  # mean 0.7
    rerank = scored(1.0, 0.5, 0.5, 0.5, 0.5, false_positive=True)  # mean 0.6
    results = evaluate(
        [
            {"method": "hybrid+rerank", "measure": "mrr@10", "min": 0.65},
            {"method": "*", "measure": "noAnswerFalsePositiveRate", "max": 0.34},
            {
                "method": "hybrid+rerank",
                "measure": "mrr@10",
                "notBelow": {"method": "hybrid", "by": 0.15},
            },
            {
                "method": "hybrid+rerank",
                "measure": "mrr@10",
                "notBelow": {"method": "hybrid", "by": 0.05},
            },
            {"method": "hybrid", "measure": "latencyP95Ms", "max": 10},
        ],
        hybrid=hybrid,
        **{"hybrid+rerank": rerank},
    )
    assert [(r.method, r.passed) for r in results] == [
        ("hybrid+rerank", False),
        ("hybrid", True),
        ("hybrid+rerank", False),
        ("hybrid+rerank", True),
        ("hybrid+rerank", False),
        ("hybrid", False),
    ]
    assert results[0].message == "0.6000 < 0.65" and results[0].value == pytest.approx(0.6)
    assert results[0].cases == 6  # no where: every case that ran
    assert "below hybrid's 0.7000 (at most 0.05)" in results[4].message
    assert results[5].gate == "latencyP95Ms <= 10" and results[5].value == 12.5
    assert results[5].cases is None  # latency is per method, not per case


def test_where_selects_by_category_tags_and_any_case_field() -> None:
    lexical = scored(1.0, 1.0, 1.0, 0.5, 0.5)
    hybrid = scored(0.5, 1.0, 0.5, 1.0, 1.0)  # better overall, worse on exact identifiers
    results = evaluate(
        [
            # "exact-identifier queries must not regress" against lexical
            {
                "method": "hybrid",
                "where": {"tags": "exact-identifier"},
                "measure": "mrr@10",
                "notBelow": {"method": "lexical"},
            },
            {"method": "hybrid", "measure": "mrr@10", "notBelow": {"method": "lexical"}},
            {"method": "hybrid", "where": {"category": "cache"}, "measure": "mrr@10", "min": 1},
            # a list is any of its values; conditions all hold
            {
                "method": "lexical",
                "where": {"tags": ["error-code", "paraphrase"], "split": "dev"},
                "measure": "mrr@10",
                "min": 0.5,
            },
            {"method": "lexical", "language": "zh", "measure": "mrr@10", "max": 0.5},
            {
                "method": "lexical",
                "split": "test",
                "where": {"knownFailure": False, "noAnswer": False, "topK": [5, 20]},
                "measure": "passRate",
                "min": 1,
            },
            {
                "method": "lexical",
                "where": {"id": ["id-3", "para-1"]},
                "measure": "mrr@10",
                "min": 0,
            },
            {
                "method": "lexical",
                "where": {"noAnswer": True},
                "measure": "noAnswerFalsePositiveRate",
                "max": 0,
            },
        ],
        lexical=lexical,
        hybrid=hybrid,
    )
    assert [(r.passed, r.cases, r.value) for r in results] == [
        (False, 3, pytest.approx(2 / 3)),
        (True, 6, 0.8),
        (True, 2, 1.0),
        (True, 2, 0.5),  # para-1 and para-2 (dev, paraphrase); id-2 is on the test split
        (True, 2, 0.5),
        (True, 2, 1.0),  # id-1 and id-2: id-3 has a known failure, top k 10
        (True, 2, 0.75),
        (True, 1, 0.0),
    ]
    assert results[0].gate == "mrr@10 [tags exact-identifier] >= lexical"
    assert "0.6667 is 0.3333 below lexical's 1.0000" in results[0].message
    assert results[3].gate == "mrr@10 [split dev] [tags error-code|paraphrase] >= 0.5"
    assert results[4].gate == "mrr@10 [language zh] <= 0.5"
    assert results[5].gate == (
        "passRate [split test] [topK 5|20] [noAnswer false] [knownFailure false] >= 1"
    )


def test_a_gate_with_nothing_to_read_did_not_run_and_never_passes() -> None:
    lexical = scored(1.0, 1.0, 1.0, 1.0, 1.0)
    results = evaluate(
        [
            {
                "method": "lexical",
                "where": {"tags": "exact-identifer"},
                "measure": "mrr@10",
                "min": 0,
            },
            {"method": "lexical", "language": "fr", "measure": "mrr@10", "min": 0},
            {
                "method": "lexical",
                "where": {"split": "dev", "tags": "exact-identifier"},
                "measure": "mrr@10",
                "min": 0,
            },
            {
                "method": "lexical",
                "where": {"split": "dev"},
                "measure": "noAnswerFalsePositiveRate",
                "max": 1,
            },
            {"method": "lexical", "where": {"noAnswer": True}, "measure": "mrr@10", "min": 0},
            {"method": "alias", "measure": "mrr@10", "min": 0.5},
            {"method": "lexical", "measure": "mrr@10", "notBelow": {"method": "hybrid"}},
            {
                "method": "lexical",
                "where": {"kbScope": "tenant-x"},
                "measure": "passRate",
                "min": 0,
            },
        ],
        lexical=lexical,
    )
    assert [(r.ran, r.passed, r.not_run, r.cases) for r in results] == [
        (False, None, "no-case-selected", 0),
        (False, None, "no-case-selected", 0),
        (False, None, "no-case-selected", 0),
        (False, None, "nothing-to-measure", 2),
        (False, None, "nothing-to-measure", 1),
        (False, None, "method-not-in-trial", None),
        (False, None, "compared-method-not-in-trial", None),
        (False, None, "no-case-selected", 0),
    ]
    messages = [r.message for r in results]
    assert messages[0] == (
        "no case of the 6 that ran: no case has tags exact-identifer "
        "(present: error-code, exact-identifier, paraphrase)"
    )
    assert messages[1].endswith("no case has language fr (present: en, zh)")
    assert messages[2].endswith("no case meets every condition at once")
    assert messages[3] == "no no-answer case among the 2 selected"
    assert messages[4] == "no judged answerable case among the 1 selected"
    assert messages[5:7] == ["not in this trial", "hybrid is not in this trial"]
    # a knowledge-base scope the report does not name is not listed
    assert messages[7] == "no case of the 6 that ran: no case has kbScope tenant-x"
    assert all(r.to_json()["passed"] is None for r in results)


def test_a_method_is_admitted_only_when_every_gate_that_applies_ran_and_passed() -> None:
    good = scored(1.0, 1.0, 1.0, 1.0, 1.0)
    rows = [
        r.to_json()
        for r in evaluate(
            [
                {"method": "*", "measure": "mrr@10", "min": 0.5},
                {"method": "hybrid", "language": "fr", "measure": "mrr@10", "min": 0.5},
                {"method": "rerank", "measure": "mrr@10", "min": 0.99},
            ],
            lexical=good,
            hybrid=good,
            rerank=scored(1.0, 1.0, 1.0, 1.0, 0.5),
            vector=good,
        )
        if r.method != "vector"  # as if no gate named vector
    ]
    statuses = {name: method_status(rows, name) for name in ("lexical", "hybrid", "rerank")}
    assert statuses["lexical"] == {
        "status": "admitted",
        "gateCounts": {"applied": 1, "ran": 1, "passed": 1, "failed": 0, "notRun": 0},
    }
    assert statuses["hybrid"]["status"] == "experimental"  # a gate did not run
    assert statuses["hybrid"]["gateCounts"]["notRun"] == 1
    assert statuses["rerank"]["status"] == "experimental"  # a gate failed
    assert method_status(rows, "vector")["status"] == "experimental"  # no gate applies
    assert method_status(rows, "vector")["gateCounts"]["applied"] == 0


def test_the_gate_count_counts_only_gates_that_ran() -> None:
    """The issue's one-method trial: 6 gates, 5 of which never ran, is not "6 of 6"."""
    rows = [
        r.to_json()
        for r in evaluate(
            [
                {"method": "hybrid+rerank", "measure": "mrr@10", "min": 0.5},
                {"method": "hybrid+rerank", "measure": "mrr@10", "notBelow": {"method": "hybrid"}},
                {"method": "hybrid+rerank", "language": "fr", "measure": "mrr@10", "min": 0},
                {"method": "alias", "measure": "mrr@10", "min": 0.5},
                {"method": "alias-hybrid", "measure": "mrr@10", "min": 0.5},
                {
                    "method": "hybrid+rerank",
                    "split": "dev",
                    "measure": "noAnswerFalsePositiveRate",
                    "max": 1,
                },
            ],
            **{"hybrid+rerank": scored(1.0, 1.0, 1.0, 1.0, 1.0)},
        )
    ]
    assert gates_line(rows) == (
        "1 of 1 ran and passed; 5 not run (1 compared method not in the trial, "
        "1 no case selected, 2 method not in the trial, 1 nothing to measure)"
    )
    assert method_status(rows, "hybrid+rerank")["status"] == "experimental"
    failed = [{**rows[0], "passed": False}, *rows[1:]]
    assert gates_line(failed).startswith("0 of 1 ran and passed, 1 FAILED; 5 not run")
    assert gates_line(rows[3:5]) == "none ran; 2 not run (2 method not in the trial)"


def test_a_measure_the_trial_does_not_compute_is_an_input_error() -> None:
    with pytest.raises(InputError) as info:
        evaluate(
            [
                {"method": "x", "measure": "mrr@10", "min": 0},
                {"method": "x", "measure": "p@3", "min": 1},
            ],
            x=scored(1.0, 1.0, 1.0, 1.0, 1.0),
        )
    assert info.value.pointer == "/gates/1/measure" and "'p@3'" in str(info.value)


@pytest.mark.parametrize(
    ("gate", "words"),
    [
        (
            {"language": "zh", "where": {"language": "en"}},
            "sets language twice, as 'language' and in 'where'",
        ),
        ({"measure": "latencyP95Ms", "split": "dev"}, "latencyP95Ms is measured per method"),
    ],
)
def test_contradictory_gates_are_input_errors(gate: dict[str, Any], words: str) -> None:
    with pytest.raises(InputError) as info:
        gates(
            {"method": "x", "measure": "mrr@10", "min": 0, **gate},
            {"method": "x", "max": 1, "measure": "map"},
        )
    assert words in str(info.value) and info.value.pointer == "/gates/0"


@pytest.mark.parametrize(
    ("where", "pointer", "words"),
    [
        ({"tag": "exact-identifier"}, "/gates/0/where", "did you mean 'tags'"),
        ({}, "/gates/0/where", "should be non-empty"),
        ({"split": "holdout"}, "/gates/0/where/split", "holdout"),
        ({"tags": []}, "/gates/0/where/tags", ""),
        ({"noAnswer": "yes"}, "/gates/0/where/noAnswer", "expected boolean"),
    ],
)
def test_the_gates_schema_checks_the_selection(
    where: dict[str, Any], pointer: str, words: str
) -> None:
    document = {
        "version": 1,
        "gates": [{"method": "x", "measure": "map", "min": 0, "where": where}],
    }
    with pytest.raises(InputError) as info:
        validate(document, "gates", PATH, "gates file")
    assert info.value.pointer == pointer and words in str(info.value), str(info.value)
    good = {"tags": ["a", "b"], "category": "db", "split": ["dev", "test"], "knownFailure": True}
    validate(
        {"gates": [{"method": "x", "measure": "map", "min": 0, "where": good}]},
        "gates",
        PATH,
        "gates file",
    )

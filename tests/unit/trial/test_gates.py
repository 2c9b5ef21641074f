"""Gates over report entries: min, max, relative drops, groups, wildcards, nulls."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ragsnap.errors import InputError
from ragsnap.trial.gates import Gate, evaluate_gates, gates_from_json

PATH = Path("gates.yaml")


def entry(mrr: float | None, fp: float | None = 0.0, zh: float | None = None) -> dict[str, Any]:
    def block(value: float | None) -> dict[str, Any]:
        return {
            "passRate": 1.0,
            "recallAtK": 1.0,
            "strongHitRate": 1.0,
            "noAnswerFalsePositiveRate": fp,
            "missCount": 0,
            "metrics": {"mrr@10": {"mean": value, "cases": 0 if value is None else 3}},
        }

    return {
        "summary": block(mrr),
        "groups": {"language": {"zh": block(zh)}, "split": {"dev": block(None)}},
        "latency": {"p95Ms": 12.5},
    }


def gates(*items: dict[str, Any]) -> list[Gate]:
    return gates_from_json({"gates": list(items)})


def test_thresholds_and_relative_drops() -> None:
    methods = {"hybrid": entry(0.80), "hybrid+rerank": entry(0.76, fp=0.5)}
    results = evaluate_gates(
        gates(
            {"method": "hybrid+rerank", "measure": "mrr@10", "min": 0.78},
            {"method": "*", "measure": "noAnswerFalsePositiveRate", "max": 0.34},
            {
                "method": "hybrid+rerank",
                "measure": "mrr@10",
                "notBelow": {"method": "hybrid", "by": 0.05},
            },
            {
                "method": "hybrid+rerank",
                "measure": "mrr@10",
                "notBelow": {"method": "hybrid", "by": 0.01},
            },
            {"method": "hybrid", "measure": "latencyP95Ms", "max": 10},
        ),
        methods,
        PATH,
    )
    verdicts = [(r.method, r.passed) for r in results]
    assert verdicts == [
        ("hybrid+rerank", False),
        ("hybrid", True),
        ("hybrid+rerank", False),
        ("hybrid+rerank", True),
        ("hybrid+rerank", False),
        ("hybrid", False),
    ]
    assert results[0].message == "0.7600 < 0.78" and results[0].value == 0.76
    assert "below hybrid's 0.8000 (at most 0.01)" in results[4].message
    assert results[5].gate == "latencyP95Ms <= 10" and results[5].value == 12.5


def test_groups_nulls_and_methods_not_run() -> None:
    methods = {"lexical": entry(0.9, zh=0.4)}
    results = evaluate_gates(
        gates(
            {"method": "lexical", "language": "zh", "measure": "mrr@10", "min": 0.5},
            {"method": "lexical", "split": "dev", "measure": "mrr@10", "min": 0.5},
            {"method": "lexical", "language": "fr", "measure": "mrr@10", "min": 0.5},
            {"method": "alias", "measure": "mrr@10", "min": 0.5},
            {"method": "lexical", "measure": "mrr@10", "notBelow": {"method": "hybrid"}},
        ),
        methods,
        PATH,
    )
    assert [(r.passed, r.ran, r.message) for r in results] == [
        (False, True, "0.4000 < 0.5"),
        (False, True, "no measurement"),  # the split did not run: null is not a pass
        (False, True, "no measurement"),
        (True, False, "not in this trial"),
        (True, False, "hybrid is not in this trial"),
    ]
    assert results[0].gate == "mrr@10 [language zh] >= 0.5"


def test_a_measure_the_trial_does_not_compute_is_an_input_error() -> None:
    with pytest.raises(InputError) as info:
        evaluate_gates(
            gates(
                {"method": "x", "measure": "mrr@10", "min": 0},
                {"method": "x", "measure": "p@3", "min": 1},
            ),
            {"x": entry(0.5)},
            PATH,
        )
    assert info.value.pointer == "/gates/1/measure" and "'p@3'" in str(info.value)

"""The registered rerankers: their ordering rules on a tiny head, pure functions."""

from __future__ import annotations

import dataclasses

import pytest

from ragsnap.kb.rerankers import (
    HEURISTIC_V2,
    SCORERS,
    RerankFeatures,
    code_words,
    rerank_order,
    rerank_score,
)
from ragsnap.settings import (
    BUILTIN_METHODS,
    HEURISTIC_V2_WEIGHTS,
    RERANKERS,
    LookupSettings,
    RerankWeights,
    method_settings,
)

WEIGHTS = RerankWeights()


def feats(fused: float, **shares: float) -> RerankFeatures:
    """A candidate with fused share ``fused`` and no lexical evidence but ``shares``."""
    values = {"confidence": 0.5, "phrase": 0.0, "identifiers": 0.0, "title": 0.0}
    values |= {"coverage": 0.5, "codes": 0.0, **shares}
    return RerankFeatures(fused_share=fused, **values)


def order(name: str, head: list[tuple[str, RerankFeatures]]) -> list[str]:
    return [head[i][0] for i, _ in rerank_order(name, head, WEIGHTS)]


def test_registry_matches_the_settings() -> None:
    assert tuple(SCORERS) == RERANKERS == ("heuristic-v1", "heuristic-v2")
    assert HEURISTIC_V2.to_json() == HEURISTIC_V2_WEIGHTS


def test_hybrid_rerank_uses_v2_and_records_its_fixed_weights() -> None:
    spec = next(m for m in BUILTIN_METHODS if m.name == "hybrid+rerank")
    assert spec.reranker == "heuristic-v2"
    recorded = method_settings(LookupSettings(), spec)
    assert recorded["reranker"] == "heuristic-v2"
    assert recorded["rerankWeights"] == {"fused": 1.0, "title": 0.1, "codes": 0.1}
    v1 = dataclasses.replace(spec, reranker="heuristic-v1")
    assert method_settings(LookupSettings(), v1)["rerankWeights"] == WEIGHTS.to_json()


def test_v2_keeps_the_fused_order_without_evidence() -> None:
    # v1 puts the most confident first; v2 keeps the fused order
    head = [
        ("c", feats(1.0, confidence=0.2)),
        ("a", feats(0.9, confidence=0.9, coverage=1.0, phrase=1.0)),
        ("b", feats(0.5, confidence=0.6)),
    ]
    assert order("heuristic-v2", head) == ["c", "a", "b"]
    assert order("heuristic-v1", head) == ["a", "b", "c"]


def test_v2_title_moves_a_close_candidate_not_a_far_one() -> None:
    close = [("first", feats(1.0)), ("titled", feats(0.95, title=1.0))]
    assert order("heuristic-v2", close) == ["titled", "first"]
    far = [("first", feats(1.0)), ("titled", feats(0.8, title=1.0))]
    assert order("heuristic-v2", far) == ["first", "titled"]


def test_v2_codes_settle_near_ties_only() -> None:
    near = [("first", feats(1.0)), ("holds-code", feats(0.95, codes=1.0))]
    assert order("heuristic-v2", near) == ["holds-code", "first"]
    apart = [("first", feats(1.0)), ("holds-code", feats(0.8, codes=1.0))]
    assert order("heuristic-v2", apart) == ["first", "holds-code"]


def test_equal_scores_break_by_chunk_id_and_scores_are_on_the_grid() -> None:
    head = [("b", feats(0.5)), ("a", feats(0.5))]
    ranked = rerank_order("heuristic-v2", head, WEIGHTS)
    assert [head[i][0] for i, _ in ranked] == ["a", "b"]
    score = rerank_score("heuristic-v2", feats(1 / 3, title=1 / 3), WEIGHTS)
    assert score == round((1 / 3 + 0.1 / 3) * 1e6) / 1e6


def test_v1_score_is_its_weighted_sum() -> None:
    f = RerankFeatures(
        fused_share=1.0,
        confidence=1.0,
        phrase=0.5,
        identifiers=0.0,
        title=1.0,
        coverage=0.5,
        codes=1.0,
    )
    assert rerank_score("heuristic-v1", f, WEIGHTS) == pytest.approx(0.45 + 0.1 + 0.1 + 0.05)


@pytest.mark.parametrize(
    ("word", "code"),
    [
        ("ERR-4031", True),
        ("maxPoolSize", True),
        ("max.poll.records", True),
        ("runbook_url", True),
        ("OOMKilled", True),
        ("137", True),
        ("re-entry", False),
        ("non-linear", False),
        ("i.e", False),
        ("order-service", False),
    ],
)
def test_code_words_leave_out_hyphenated_prose(word: str, code: bool) -> None:
    assert code_words([word]) == ([word] if code else [])

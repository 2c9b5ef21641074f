"""Stage attribution from two fixtures (ragsnap.scoring.attribution): each stage on a
small pair of fixtures that differ in exactly that stage's record."""

from __future__ import annotations

import copy
from typing import Any

from conftest import block, make_fixture
from ragsnap.scoring.attribution import (
    STAGES,
    Side,
    attribute_case,
    attribute_diff,
    cause_text,
    trail,
    word_changes,
)
from ragsnap.scoring.privacy import private_diff

TEXT = "Application logs are kept for 14 days in the hot tier."


def _item(
    chunk: str, score: float, conf: float, lex: int | None, vec: int | None
) -> dict[str, Any]:
    return {
        "chunkId": chunk,
        "source": chunk.split("#")[0],
        "score": score,
        "confidence": conf,
        "lexicalRank": lex,
        "vectorRank": vec,
    }


def _fixture() -> dict[str, Any]:
    """A hybrid+rerank lookup: a#1 first, b#0 second, c#0 third (below the floor)."""
    fx = make_fixture("c1", [block(1, "a", text=TEXT), block(2, "b", text="Other text about b.")])
    fx["lookupResult"]["evidenceBlocks"][0]["chunkId"] = "a#1"
    for b, (conf, lex, vec) in zip(
        fx["lookupResult"]["evidenceBlocks"], ((0.6, 1, 2), (0.5, 2, 1)), strict=True
    ):
        b["metadata"] = {
            "confidence": conf,
            "lexicalRank": lex,
            "vectorRank": vec,
            "category": "ops",
        }
    fx["generator"]["topK"] = 5
    fx["generator"]["method"] = "hybrid+rerank"
    fx["generator"]["settings"] = {"minScore": 0.22, "relativeScore": 0.5, "weakScore": 0.35}
    fx["lookupResult"]["contextPack"]["sources"] = ["a", "b"]
    trace = fx["lookupResult"]["retrievalTrace"]
    trace.update(
        l0Hints={"category": "ops"},
        selectedAttempt="filtered",
        fallbackReasons=[],
        attempts=[
            {
                "name": "filtered",
                "filter": {"category": "ops"},
                "method": "hybrid",
                "hitCount": 3,
                "topScore": 0.6,
                "latencyMs": None,
            }
        ],
    )
    fused = [
        _item("a#1", 0.9, 0.6, 1, 2),
        _item("b#0", 0.8, 0.5, 2, 1),
        _item("c#0", 0.1, 0.1, 3, 3),
    ]
    fx["lookupResult"]["rerankTrace"] = {
        "applied": True,
        "reranker": "heuristic-v1",
        "before": fused,
        "after": copy.deepcopy(fused),
    }
    return fx


LOST_KEYWORD = [{"kind": "keyword", "target": "14 days", "before": "a#1", "after": None}]
LOST_SOURCE = [{"kind": "source", "target": "a", "before": 1, "after": None}]
DOCS = {"a": "1" * 64, "b": "2" * 64, "c": "3" * 64}


def _one(
    lost: list[dict[str, Any]],
    old: dict[str, Any],
    new: dict[str, Any],
    docs_new: dict[str, str] | None = None,
) -> dict[str, Any]:
    (cause,) = attribute_case(
        lost, Side(old, DOCS), Side(new, DOCS if docs_new is None else docs_new)
    )
    return cause


def _drop_a(fx: dict[str, Any]) -> None:
    """a#1 leaves the evidence (and the context pack); b#0 is first."""
    result = fx["lookupResult"]
    result["evidenceBlocks"] = result["evidenceBlocks"][1:]
    result["evidenceBlocks"][0]["rank"] = 1
    result["contextPack"]["sources"] = ["b"]


def test_word_changes_names_the_runs_of_words_that_went_and_came() -> None:
    assert word_changes(TEXT, TEXT.replace("14 days", "two weeks")) == (["14 days"], ["two weeks"])
    assert word_changes("缓存雪崩的预防", "缓存的预防") == (["雪崩"], [])
    assert word_changes("a b c", "a b c") == ([], [])


def test_a_trail_holds_what_the_fixture_records_and_leaves_out_the_rest() -> None:
    fx = _fixture()
    t = trail(Side(fx, DOCS), "a#1", "a")
    assert t == {
        "present": True,
        "lexicalRank": 1,
        "vectorRank": 2,
        "confidence": 0.6,
        "category": "ops",
        "fusedRank": 1,
        "listed": 3,
        "rerankRank": 1,
        "evidenceRank": 1,
        "text": TEXT,
        "inContext": True,
    }
    # a service with no rerank trace and no manifest: neither list place nor presence
    fx["lookupResult"]["rerankTrace"] = {
        "applied": False,
        "reranker": None,
        "before": [],
        "after": [],
    }
    bare = trail(Side(fx), "a#1", "a")
    assert "fusedRank" not in bare and "present" not in bare and "rerankRank" not in bare


def test_corpus_absent_document() -> None:
    new = _fixture()
    _drop_a(new)
    cause = _one(LOST_SOURCE, _fixture(), new, {"b": DOCS["b"]})
    assert (cause["stage"], cause["target"]) == ("corpus", "a#1")
    assert cause["evidence"] == {"document": "a", "absent": True}
    assert cause_text(cause) == "a#1: document a absent from the knowledge base"


def test_corpus_text_lost_the_keyword() -> None:
    new = _fixture()
    new["lookupResult"]["evidenceBlocks"][0]["text"] = TEXT.replace("14 days", "two weeks")
    cause = _one(LOST_KEYWORD, _fixture(), new, {**DOCS, "a": "9" * 64})
    assert cause["stage"] == "corpus"
    assert cause["evidence"] == {
        "textChanged": True,
        "removed": ["14 days"],
        "added": ["two weeks"],
    }
    assert cause_text(cause) == "a#1 text changed: removed '14 days'"


def test_a_text_change_that_kept_the_keyword_is_evidence_where_it_moved_the_chunk() -> None:
    new = _fixture()
    blocks = new["lookupResult"]["evidenceBlocks"]
    blocks[0]["text"] = TEXT.replace("Application ", "")
    blocks[0]["metadata"]["lexicalRank"] = 4
    cause = _one(LOST_SOURCE, _fixture(), new)
    assert cause["stage"] == "retrieval"
    assert cause["evidence"]["lexicalRank"] == [1, 4]
    assert cause["evidence"]["removed"] == ["Application"]
    assert cause_text(cause) == "a#1 lexical rank 1 -> 4; its text changed: removed 'Application'"


def test_settings_a_global_setting() -> None:
    new = _fixture()
    new["generator"]["method"] = "lexical"
    _drop_a(new)
    cause = _one(LOST_SOURCE, _fixture(), new)
    assert cause["stage"] == "settings"
    assert cause["evidence"] == {"settings": {"method": ["hybrid+rerank", "lexical"]}}


def test_l0_hint_and_attempt() -> None:
    new = _fixture()
    new["lookupResult"]["retrievalTrace"]["l0Hints"] = {"category": "db"}
    _drop_a(new)
    assert _one(LOST_SOURCE, _fixture(), new)["stage"] == "l0Hint"

    new = _fixture()
    trace = new["lookupResult"]["retrievalTrace"]
    trace["selectedAttempt"], trace["fallbackReasons"] = "unfiltered", ["filtered-weak"]
    new["generator"]["settings"]["weakScore"] = 0.7
    _drop_a(new)
    cause = _one(LOST_SOURCE, _fixture(), new)
    assert cause["stage"] == "attempt"
    assert cause["evidence"]["settings"] == {"weakScore": [0.35, 0.7]}

    new = _fixture()  # the selected filtered attempt searches another category
    new["lookupResult"]["retrievalTrace"]["attempts"][0]["filter"] = {"category": "db"}
    _drop_a(new)
    cause = _one(LOST_SOURCE, _fixture(), new)
    assert (cause["stage"], cause["evidence"]["filteredOut"]) == ("attempt", True)


def test_fusion_rerank_floor_cut_and_context() -> None:
    def moved(edit: Any) -> dict[str, Any]:
        new = _fixture()
        edit(new)
        return _one(LOST_SOURCE, _fixture(), new)

    def fused_second(fx: dict[str, Any]) -> None:
        rt = fx["lookupResult"]["rerankTrace"]
        rt["before"][0], rt["before"][1] = rt["before"][1], rt["before"][0]
        rt["after"][0], rt["after"][1] = rt["after"][1], rt["after"][0]
        _drop_a(fx)

    assert moved(fused_second)["stage"] == "fusion"

    def reranked_second(fx: dict[str, Any]) -> None:
        rt = fx["lookupResult"]["rerankTrace"]
        rt["after"][0], rt["after"][1] = rt["after"][1], rt["after"][0]
        _drop_a(fx)

    assert moved(reranked_second)["stage"] == "rerank"

    def below_floor(fx: dict[str, Any]) -> None:
        fx["generator"]["settings"]["minScore"] = 0.7
        fx["lookupResult"]["retrievalTrace"]["attempts"][0]["topScore"] = 0.6
        _drop_a(fx)

    floor = moved(below_floor)
    assert floor["stage"] == "floor"
    assert floor["evidence"]["floor"] == [0.3, 0.7]
    assert cause_text(floor) == "a#1 confidence 0.6 below the floor 0.7 (minScore 0.22 -> 0.7)"

    def cut(fx: dict[str, Any]) -> None:
        fx["generator"]["topK"] = 1
        rt = fx["lookupResult"]["rerankTrace"]
        rt["before"][0], rt["before"][1] = rt["before"][1], rt["before"][0]
        rt["after"][0], rt["after"][1] = rt["after"][1], rt["after"][0]
        rt["before"][0], rt["before"][1] = rt["before"][1], rt["before"][0]  # fused agrees
        _drop_a(fx)

    # the reranked place moved first: the cut is not reached
    assert moved(cut)["stage"] == "rerank"

    def only_cut(fx: dict[str, Any]) -> None:
        fx["generator"]["topK"] = 1
        _drop_a(fx)

    assert moved(only_cut)["stage"] == "cut"

    lost_context = [
        {"kind": "expectation", "target": "contextSources", "before": "held", "after": "failed"}
    ]

    def budget(fx: dict[str, Any]) -> None:
        fx["lookupResult"]["contextPack"]["sources"] = ["a"]
        fx["generator"]["settings"]["contextBudgetChars"] = 100

    new = _fixture()
    budget(new)
    (cause,) = attribute_case(lost_context, Side(_fixture(), DOCS), Side(new, DOCS))
    assert cause["stage"] == "context"
    assert cause["evidence"]["contextSources"] == [["a", "b"], ["a"]]


def test_a_trail_gone_cold_is_unreported_not_guessed() -> None:
    new = _fixture()
    rt = new["lookupResult"]["rerankTrace"]
    rt["before"] = [i for i in rt["before"] if i["chunkId"] != "a#1"]
    rt["after"] = [i for i in rt["after"] if i["chunkId"] != "a#1"]
    _drop_a(new)
    cause = _one(LOST_SOURCE, _fixture(), new)
    assert cause["stage"] == "retrieval"
    assert cause["unreported"] == ["retrieval", "fusion"]
    assert "not reported" in cause_text(cause)
    # the same with its document changed: the corpus, as the last resort
    cause = _one(LOST_SOURCE, _fixture(), new, {**DOCS, "a": "9" * 64})
    assert (cause["stage"], cause["evidence"]) == ("corpus", {"documentChanged": "a"})


def test_no_difference_and_no_fixture() -> None:
    cause = _one(LOST_SOURCE, _fixture(), _fixture())
    assert cause["stage"] is None
    assert attribute_case(LOST_SOURCE, Side(None), Side(_fixture())) == []


def test_every_stage_is_reachable_and_the_vocabulary_is_fixed() -> None:
    assert STAGES == (
        "corpus",
        "settings",
        "l0Hint",
        "attempt",
        "retrieval",
        "fusion",
        "rerank",
        "floor",
        "cut",
        "context",
    )


def test_losses_of_one_chunk_share_a_cause() -> None:
    lost = LOST_KEYWORD + LOST_SOURCE
    new = _fixture()
    new["lookupResult"]["evidenceBlocks"][0]["text"] = TEXT.replace("14 days", "two weeks")
    (cause,) = attribute_case(lost, Side(_fixture(), DOCS), Side(new, DOCS))
    assert cause["losses"] == [0, 1]


def test_the_privacy_view_keeps_stages_and_ranks_and_drops_words() -> None:
    new = _fixture()
    new["lookupResult"]["evidenceBlocks"][0]["text"] = TEXT.replace("14 days", "two weeks")
    case = {
        "id": "c1",
        "status": "regression",
        "category": "x",
        "language": "en",
        "changes": [],
        "reasons": [],
        "baselineReasons": [],
        "lost": LOST_KEYWORD,
    }
    diff: dict[str, Any] = {
        "cases": [case],
        "baselineInputs": {},
        "currentInputs": {},
        "notes": [],
    }
    attribute_diff(diff, {"c1": (Side(_fixture(), DOCS), Side(new, DOCS))}, "HEAD:fixtures")
    assert diff["attribution"] == {"baselineFixtures": "HEAD:fixtures", "attributedCases": 1}
    private = private_diff(diff)
    (cause,) = private["cases"][0]["attribution"]
    assert cause["stage"] == "corpus"
    assert cause["evidence"] == {"textChanged": True, "removedCount": 1, "addedCount": 1}
    assert "text" not in cause["before"] and "category" not in cause["after"]
    assert cause["target"] != "a#1" and len(cause["target"]) == 16
    assert private["attribution"]["baselineFixtures"] == "baseline"
    assert "14 days" not in repr(private)


def test_a_place_past_the_listed_head_is_said_so() -> None:
    """Without a reranker the trace lists the top K of the ranked list; an evidence block
    can sit past it (the candidates above it failed the floor)."""
    new = _fixture()
    rt = new["lookupResult"]["rerankTrace"]
    rt["before"] = [i for i in rt["before"] if i["chunkId"] != "a#1"]
    rt["after"] = [i for i in rt["after"] if i["chunkId"] != "a#1"]
    blocks = new["lookupResult"]["evidenceBlocks"]
    blocks[0], blocks[1] = blocks[1], blocks[0]
    blocks[0]["rank"], blocks[1]["rank"] = 1, 2
    cause = _one(LOST_SOURCE, _fixture(), new)
    assert (cause["stage"], cause["evidence"]["fusedRank"]) == ("fusion", [1, None])
    assert cause_text(cause) == "a#1 fused rank 1 -> below the top 2 listed"


def _bare(fx: dict[str, Any]) -> dict[str, Any]:
    """``fx`` as a retriever without ragsnap's traces records it: evidence blocks only."""
    fx["lookupResult"] = {"evidenceBlocks": fx["lookupResult"]["evidenceBlocks"]}
    return fx


def test_a_side_without_traces_is_attributed_from_what_it_records() -> None:
    bare = _bare(_fixture())
    t = trail(Side(bare, DOCS), "a#1", "a")
    # the evidence block's own record only: no fused or reranked place, no context
    assert t == {
        "present": True,
        "lexicalRank": 1,
        "vectorRank": 2,
        "confidence": 0.6,
        "category": "ops",
        "evidenceRank": 1,
        "text": TEXT,
    }
    bare = _fixture()
    _drop_a(bare)
    _bare(bare)
    # the current fixture has no traces: the trail goes cold, said as not reported
    cause = _one(LOST_SOURCE, _fixture(), bare)
    assert (cause["stage"], cause["unreported"]) == ("retrieval", ["retrieval", "fusion"])
    assert "not reported" in cause_text(cause)
    # the baseline has none: the attempt is not compared (nothing to compare with)
    new = _fixture()
    _drop_a(new)
    cause = _one(LOST_SOURCE, _bare(_fixture()), new)
    assert cause["stage"] not in ("l0Hint", "attempt") and cause_text(cause)
    # a lost expectation over a side without the trace it reads
    for old, cur in ((_bare(_fixture()), _fixture()), (_fixture(), _bare(_fixture()))):
        for name in ("rerankTopSource", "evidenceStatus", "contextSources", "selectedAttempt"):
            lost = [{"kind": "expectation", "target": name, "before": "held", "after": "failed"}]
            assert cause_text(_one(lost, old, cur))

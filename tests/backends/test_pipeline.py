"""The lookup pipeline over a real SQLite knowledge base (no mocks).

Scores and thresholds may be re-tuned, so these tests check structure and
behaviour (which documents, which attempts, which order properties), never
exact score values. Settings are passed explicitly where a test depends on them.
"""

from __future__ import annotations

import dataclasses
import gc
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import require_numba
from ragsnap.errors import UsageError
from ragsnap.io.schema import validate
from ragsnap.kb.backends import WriteBatch
from ragsnap.kb.backends.sqlite import SqliteKnowledgeBase
from ragsnap.kb.corpus import ChunkSettings, load_seed_docs
from ragsnap.kb.embedders import HashingEmbedder
from ragsnap.kb.pipeline import METHODS, LookupSettings, Pipeline
from ragsnap.kb.seeding import seed
from ragsnap.kb.text import get_tokenizer
from ragsnap.settings import BUILTIN_METHODS, FUSION_NAMES, FusionProfile, Method

from .conftest import write_doc

SETTINGS = LookupSettings(
    method="hybrid+rerank",
    top_k=5,
    candidates=50,
    rerank_depth=20,
    min_score=0.25,
    weak_score=0.4,
    sufficient_score=0.5,
    context_budget_chars=2000,
)

POOL_QUERY = "hikari pool maximum size twenty connections"


def filler(topic: str, n: int) -> str:
    """A long paragraph of ordinary words about ``topic`` (for budget tests)."""
    return " ".join(
        f"The {topic} runbook step {k} is reviewed weekly by operators." for k in range(n)
    )


def write_corpus(folder: Path) -> Path:
    write_doc(
        folder,
        "pool-eval",
        "Pool sizing for order-service.\n\n"
        f"## Pool size\n\nThe hikari pool maximum size is twenty connections per pod. "
        f"{filler('pool', 12)}\n\n"
        f"## Leak detection\n\nHikari logs a leak warning after sixty seconds. {filler('leak', 12)}",
        title="Connection pool sizing",
        breadcrumb="Database > MySQL > Pool",
        category="database",
        kb_scope="eval",
        keywords="[hikari, pool]",
    )
    write_doc(
        folder,
        "pool-other",
        f"Another team's copy: {POOL_QUERY}. quokka\n\n## Pool size\n\n{POOL_QUERY} quokka.",
        title="Connection pool sizing",
        breadcrumb="Database > MySQL > Pool",
        category="database",
        kb_scope="other",
        keywords="[hikari, pool, quokka]",
    )
    write_doc(
        folder,
        "cache-zh",
        "缓存雪崩是指大量缓存同时过期，请求全部落到数据库。\n\n"
        "## 处理方法\n\n给过期时间加上随机抖动，并使用互斥锁重建缓存。",
        title="缓存雪崩",
        breadcrumb="缓存 > Redis",
        category="cache",
        kb_scope="eval",
    )
    write_doc(
        folder,
        "net-hint",
        "DNS resolvers are configured through resolv conf files on every host.\n\n"
        "## Search domains\n\nSearch domains are appended to short host names by the resolver.",
        title="Network basics",
        breadcrumb="Network > DNS",
        category="network",
        kb_scope="eval",
        keywords="[latency, timeout, jitter]",
    )
    write_doc(
        folder,
        "disk-answer",
        "Volumes are attached by the storage driver.\n\n"
        "## Slow writes\n\nWhen write latency spikes on a volume, raise the driver timeout "
        "to thirty seconds and check the queue depth.",
        title="Disk volumes",
        breadcrumb="Storage > Disks",
        category="storage",
        kb_scope="eval",
        keywords="[disk, volume]",
    )
    write_doc(
        folder,
        "kafka-lag",
        f"Consumer lag grows when consumers are slow. {filler('kafka', 10)}\n\n"
        f"## Rebalance\n\nA rebalance pauses every consumer of the group. {filler('rebalance', 10)}",
        title="Kafka consumer lag",
        breadcrumb="Messaging > Kafka",
        category="messaging",
        kb_scope="eval",
    )
    return folder


@pytest.fixture
def kb(tmp_path: Path) -> Iterator[SqliteKnowledgeBase]:
    docs = load_seed_docs(write_corpus(tmp_path / "docs"))
    with SqliteKnowledgeBase(tmp_path / "kb.sqlite") as store:
        seed(store, docs, HashingEmbedder(), get_tokenizer(), ChunkSettings())
        yield store


def pipeline(kb: SqliteKnowledgeBase, **overrides: Any) -> Pipeline:
    settings = LookupSettings(**{**_fields(SETTINGS), **overrides})
    return Pipeline(kb, HashingEmbedder(), get_tokenizer(), settings)


def _fields(settings: LookupSettings) -> dict[str, Any]:
    return {name: getattr(settings, name) for name in settings.__dataclass_fields__}


def as_fixture(result: dict[str, Any], query: str, kb_scope: str | None) -> dict[str, Any]:
    return {
        "schemaVersion": 1,
        "caseId": "pipeline-test",
        "query": query,
        "retrievedAt": "2026-01-01T00:00:00Z",
        "generator": {
            "backend": "embedded",
            "embedder": HashingEmbedder().fingerprint.to_json(),
            "pipelineVersion": "test",
            "kbScope": kb_scope,
            "topK": 5,
        },
        "lookupResult": result,
    }


def all_sources(result: dict[str, Any]) -> set[str]:
    """Every source a result mentions anywhere: evidence, context, rerank trace."""
    rerank = result["rerankTrace"]
    return (
        {b["source"] for b in result["evidenceBlocks"]}
        | set(result["contextPack"]["sources"])
        | {i["source"] for i in rerank["before"]}
        | {i["source"] for i in rerank["after"]}
    )


def evidence_sources(result: dict[str, Any]) -> list[str]:
    return [b["source"] for b in result["evidenceBlocks"]]


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize(
    "query",
    [POOL_QUERY, "缓存雪崩处理方法", "latency timeout", "xylophqz vwkjrtq", '"AND* NEAR(-'],
)
def test_result_validates_against_the_fixture_schema(
    kb: SqliteKnowledgeBase, method: str, query: str
) -> None:
    for scope in ("eval", None):
        result = pipeline(kb).lookup(query, kb_scope=scope, method=method)
        validate(as_fixture(result, query, scope), "fixture", "<lookup>", "fixture")
        assert result["retrievalTrace"]["attempts"][-1]["method"] == (
            "hybrid" if method == "hybrid+rerank" else method
        )


@pytest.mark.parametrize("method", METHODS)
def test_other_scope_is_never_returned(kb: SqliteKnowledgeBase, method: str) -> None:
    p = pipeline(kb)
    for query in (POOL_QUERY, f"{POOL_QUERY} quokka", "quokka"):
        result = p.lookup(query, kb_scope="eval", method=method, top_k=50)
        assert "pool-other" not in all_sources(result), (query, method)
        assert all(b["metadata"]["kbScope"] == "eval" for b in result["evidenceBlocks"])
        for attempt in result["retrievalTrace"]["attempts"]:
            assert attempt["filter"]["kbScope"] == "eval"
    # the test can fail: in its own scope (or unscoped) the copy is found
    assert evidence_sources(p.lookup("quokka", kb_scope="other", method=method))[0] == (
        "pool-other"
    )
    unscoped = p.lookup(f"{POOL_QUERY} quokka", kb_scope=None, method=method, top_k=50)
    assert "pool-other" in evidence_sources(unscoped)
    assert set(evidence_sources(p.lookup(POOL_QUERY, kb_scope="other", method=method))) == {
        "pool-other"
    }


def test_chinese_query_finds_the_chinese_doc(kb: SqliteKnowledgeBase) -> None:
    result = pipeline(kb).lookup("缓存雪崩处理方法", kb_scope="eval", method="lexical")
    sources = evidence_sources(result)
    assert sources and sources[0] == "cache-zh"
    assert set(sources) == {"cache-zh"}
    assert result["retrievalTrace"]["evidenceStatus"] != "none"
    assert "cache-zh" in result["contextPack"]["sources"]
    assert "缓存" in result["contextPack"]["text"]


def test_wrong_l0_hint_falls_back_to_unfiltered(kb: SqliteKnowledgeBase) -> None:
    # net-hint's keywords point L0 at "network"; the answer is in "storage"
    result = pipeline(kb).lookup("latency timeout", kb_scope="eval")
    trace = result["retrievalTrace"]
    assert trace["l0Hints"]["category"] == "network"
    first, second = trace["attempts"]
    assert first["name"] == "filtered"
    assert first["filter"] == {"kbScope": "eval", "category": "network"}
    assert not first.get("skipped", False)
    assert second["name"] == "unfiltered"
    assert second["filter"] == {"kbScope": "eval"}
    assert trace["selectedAttempt"] == "unfiltered"
    assert set(trace["fallbackReasons"]) & {"filtered-empty", "filtered-weak"}
    assert "no-l0-hint" not in trace["fallbackReasons"]
    assert evidence_sources(result)[0] == "disk-answer"
    assert "net-hint" not in evidence_sources(result)


def test_a_good_hint_keeps_the_filtered_attempt(kb: SqliteKnowledgeBase) -> None:
    result = pipeline(kb).lookup("hikari pool maximum size", kb_scope="eval")
    trace = result["retrievalTrace"]
    assert trace["l0Hints"]["category"] == "database"
    assert [a["name"] for a in trace["attempts"]] == ["filtered"]
    assert trace["attempts"][0]["filter"] == {"kbScope": "eval", "category": "database"}
    assert (trace["selectedAttempt"], trace["fallbackReasons"]) == ("filtered", [])
    assert evidence_sources(result)[0] == "pool-eval"


def test_no_metadata_match_skips_the_filtered_attempt(kb: SqliteKnowledgeBase) -> None:
    # words of net-hint's body, none of them in any document's metadata
    result = pipeline(kb).lookup("resolvers configured resolv conf", kb_scope="eval")
    trace = result["retrievalTrace"]
    assert trace["l0Hints"] == {}
    first, second = trace["attempts"]
    assert first["name"] == "filtered" and first["skipped"] is True
    assert first["hitCount"] == 0 and first["filter"] == {"kbScope": "eval"}
    assert second["name"] == "unfiltered" and not second.get("skipped", False)
    assert trace["fallbackReasons"] == ["no-l0-hint"]
    assert trace["selectedAttempt"] == "unfiltered"
    assert evidence_sources(result)[0] == "net-hint"


def test_hints_disabled_also_goes_unfiltered(kb: SqliteKnowledgeBase) -> None:
    result = pipeline(kb, hints=False).lookup("latency timeout", kb_scope="eval")
    trace = result["retrievalTrace"]
    assert trace["l0Hints"] == {}
    assert trace["attempts"][0]["skipped"] is True
    assert trace["fallbackReasons"] == ["no-l0-hint"]
    assert evidence_sources(result)[0] == "disk-answer"


@pytest.mark.parametrize("method", METHODS)
def test_query_without_answer_gives_no_evidence(kb: SqliteKnowledgeBase, method: str) -> None:
    result = pipeline(kb).lookup("xylophqz vwkjrtq", kb_scope="eval", method=method)
    assert result["retrievalTrace"]["evidenceStatus"] == "none"
    assert result["evidenceBlocks"] == []
    pack = result["contextPack"]
    assert (pack["sources"], pack["text"], pack["charCount"], pack["truncated"]) == (
        [],
        "",
        0,
        False,
    )


@pytest.mark.parametrize("method", ["lexical", "vector", "hybrid"])
def test_methods_without_rerank(kb: SqliteKnowledgeBase, method: str) -> None:
    result = pipeline(kb).lookup(POOL_QUERY, kb_scope="eval", method=method)
    rerank = result["rerankTrace"]
    assert rerank["applied"] is False
    assert rerank["reranker"] is None
    assert rerank["before"] == rerank["after"]
    assert [i["chunkId"] for i in rerank["after"]][:1] == [
        b["chunkId"] for b in result["evidenceBlocks"]
    ][:1]
    assert ("fusion" in result["retrievalTrace"]) == (method == "hybrid")
    assert evidence_sources(result)[0] == "pool-eval"


def test_hybrid_rerank_reorders_a_prefix_of_the_fused_list(kb: SqliteKnowledgeBase) -> None:
    result = pipeline(kb, rerank_depth=6, hints=False).lookup(
        "pool runbook step reviewed by operators", kb_scope="eval", top_k=3
    )
    rerank = result["rerankTrace"]
    assert rerank["applied"] is True
    assert rerank["reranker"] == "heuristic-v2"
    before = [i["chunkId"] for i in rerank["before"]]
    after = [i["chunkId"] for i in rerank["after"]]
    assert len(before) == 6 and 1 <= len(after) <= 6
    assert sorted(after) == sorted(before[: len(after)])
    assert [i["score"] for i in rerank["after"]] == sorted(
        (i["score"] for i in rerank["after"]), reverse=True
    )
    # evidence follows the reranked order
    ids = [b["chunkId"] for b in result["evidenceBlocks"]]
    assert ids == [c for c in after if c in ids]
    assert "fusion" in result["retrievalTrace"]


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("top_k", [1, 2, 4])
def test_evidence_blocks_are_ranked_unique_and_capped(
    kb: SqliteKnowledgeBase, method: str, top_k: int
) -> None:
    result = pipeline(kb, min_score=0.0, relative_score=0.0).lookup(
        "runbook step reviewed weekly operators", kb_scope="eval", method=method, top_k=top_k
    )
    blocks = result["evidenceBlocks"]
    assert 1 <= len(blocks) <= top_k
    assert [b["rank"] for b in blocks] == list(range(1, len(blocks) + 1))
    assert len({b["chunkId"] for b in blocks}) == len(blocks)
    assert all(b["source"] != "pool-other" for b in blocks)


@pytest.mark.parametrize("reranker", ["heuristic-v1", "heuristic-v2"])
def test_reranking_reorders_but_never_filters(kb: SqliteKnowledgeBase, reranker: str) -> None:
    """The floors compare retrieval confidences, whatever scale the reranker uses."""
    query = "pool runbook step reviewed by operators"
    reranked_method = Method("reranked", ("lexical", "vector"), reranker=reranker)

    def evidence(method: str | Method, floor: float) -> list[dict[str, Any]]:
        return pipeline(
            kb, min_score=floor, relative_score=0.0, rerank_depth=50, candidates=50
        ).lookup(query, kb_scope="eval", method=method, top_k=50)["evidenceBlocks"]

    # a block whose rerank score is on the other side of its confidence from the
    # others' (v1: below; v2, a fused share of at most 1 plus bonuses: above), and a
    # floor between the two
    block = next(
        b
        for b in evidence(reranked_method, 0.0)
        if (b["score"] < b["metadata"]["confidence"]) == (reranker == "heuristic-v1")
    )
    floor = (block["score"] + block["metadata"]["confidence"]) / 2
    reranked = evidence(reranked_method, floor)
    # its confidence decides, not its score: kept under v1 (score below the floor),
    # dropped under v2 (score above it)
    kept = block["chunkId"] in {b["chunkId"] for b in reranked}
    assert kept == (reranker == "heuristic-v1")
    assert all(b["metadata"]["confidence"] >= floor for b in reranked)
    assert {b["chunkId"] for b in reranked} == {b["chunkId"] for b in evidence("hybrid", floor)}


def test_rerank_depth_does_not_cap_the_evidence(kb: SqliteKnowledgeBase) -> None:
    """Candidates past rerank_depth follow in fused order; top_k is the only cap."""
    query = "pool runbook step reviewed by operators latency"
    counts = {}
    for method in ("hybrid", "hybrid+rerank"):
        result = pipeline(kb, min_score=0.0, relative_score=0.0, rerank_depth=2).lookup(
            query, kb_scope="eval", method=method, top_k=5
        )
        counts[method] = len(result["evidenceBlocks"])
        if method == "hybrid+rerank":
            assert len(result["rerankTrace"]["after"]) == 2
    assert counts["hybrid+rerank"] == counts["hybrid"] > 2


def test_min_score_drops_weak_evidence(kb: SqliteKnowledgeBase) -> None:
    result = pipeline(kb, min_score=0.9, sufficient_score=0.95).lookup(
        "latency", kb_scope="eval", method="vector"
    )
    assert all(b["score"] >= 0.9 for b in result["evidenceBlocks"])


@pytest.mark.parametrize("budget", [0, 50, 250, 700])
def test_context_pack_respects_the_budget(kb: SqliteKnowledgeBase, budget: int) -> None:
    result = pipeline(kb, context_budget_chars=budget, relative_score=0.0).lookup(
        "runbook step reviewed weekly operators", kb_scope="eval", top_k=5
    )
    blocks = result["evidenceBlocks"]
    assert blocks and sum(len(b["text"]) for b in blocks) > budget
    pack = result["contextPack"]
    assert pack["budgetChars"] == budget
    assert pack["truncated"] is True
    assert pack["charCount"] == len(pack["text"]) <= budget
    assert set(pack["sources"]) <= {b["source"] for b in blocks}


def test_context_pack_holds_all_evidence_when_it_fits(kb: SqliteKnowledgeBase) -> None:
    result = pipeline(kb, context_budget_chars=100_000, relative_score=0.0).lookup(
        "runbook step reviewed weekly operators", kb_scope="eval", top_k=5
    )
    blocks = result["evidenceBlocks"]
    pack = result["contextPack"]
    assert pack["truncated"] is False
    assert pack["text"] == "\n\n".join(b["text"] for b in blocks)
    assert pack["charCount"] == len(pack["text"])
    assert pack["sources"] == list(dict.fromkeys(b["source"] for b in blocks))


@pytest.mark.parametrize("method", METHODS)
def test_without_latency_two_lookups_are_identical(kb: SqliteKnowledgeBase, method: str) -> None:
    p = pipeline(kb)
    outputs = [
        json.dumps(
            q.lookup("latency timeout", kb_scope="eval", method=method, record_latency=False),
            sort_keys=True,
        )
        for q in (p, p, pipeline(kb))
    ]
    assert outputs[0] == outputs[1] == outputs[2]
    attempts = json.loads(outputs[0])["retrievalTrace"]["attempts"]
    assert attempts and all(a["latencyMs"] is None for a in attempts)
    measured = p.lookup("latency timeout", kb_scope="eval", method=method)
    ran = [a for a in measured["retrievalTrace"]["attempts"] if not a.get("skipped")]
    assert ran and all(a["latencyMs"] is not None for a in ran)


def test_a_pipeline_outliving_a_reseed_sees_the_new_documents(tmp_path: Path) -> None:
    """Row ids of removed chunks are reused by the next import; nothing cached by row may
    survive it (the L0 hint cache already follows the knowledge base's generation)."""
    docs = tmp_path / "docs"
    write_doc(docs, "a-doc", "Alpha document about apples.", kb_scope="eval")
    write_doc(docs, "zz-doc", "Zulu document about zebras.", kb_scope="eval")
    with SqliteKnowledgeBase(tmp_path / "kb.sqlite") as store:

        def reseed() -> None:
            seed(store, load_seed_docs(docs), HashingEmbedder(), get_tokenizer(), ChunkSettings())

        reseed()
        long_lived = pipeline(store)
        for method in METHODS:
            result = long_lived.lookup("zebras", kb_scope="eval", method=method)
            assert evidence_sources(result) == ["zz-doc"]
        (docs / "zz-doc.md").unlink()
        write_doc(docs, "new-doc", "Fresh document about kiwis.", kb_scope="eval")
        reseed()
        for method in METHODS:
            fresh = pipeline(store).lookup("kiwis", kb_scope="eval", method=method)
            assert evidence_sources(fresh) == ["new-doc"]
            result = long_lived.lookup("kiwis", kb_scope="eval", method=method)
            assert evidence_sources(result) == ["new-doc"], method
            assert evidence_sources(long_lived.lookup("zebras", kb_scope="eval")) == []


def test_unknown_method_raises_usage_error(kb: SqliteKnowledgeBase) -> None:
    with pytest.raises(UsageError, match="unknown method 'bm25'"):
        pipeline(kb).lookup(POOL_QUERY, method="bm25")
    with pytest.raises(UsageError, match="unknown method"):
        LookupSettings(method="semantic")


def test_a_method_is_a_composition_of_stages(kb: SqliteKnowledgeBase) -> None:
    """A method defined as data runs through the same pipeline: its fusion weights,
    reranker and floors take effect, and ``describe`` records them."""
    lexical_only_fusion = Method(
        "lexical-fused",
        ("lexical", "vector"),
        fusion=FusionProfile(lexical_weight=1.0, vector_weight=0.0),
        reranker=None,
        min_score=0.0,
        relative_score=0.0,
    )
    methods = (*BUILTIN_METHODS, lexical_only_fusion)
    p = pipeline(kb, methods=methods, top_k=10)
    query = "hikari leak warning"
    custom = p.lookup(query, kb_scope="eval", method="lexical-fused", record_latency=False)
    lexical = p.lookup(query, kb_scope="eval", method="lexical", record_latency=False)
    # vector weight 0: the fused order is the lexical order (ties aside, none here)
    custom_ids = [b["chunkId"] for b in custom["evidenceBlocks"]]
    lexical_ids = [b["chunkId"] for b in lexical["evidenceBlocks"]]
    assert custom_ids[: len(lexical_ids)] == lexical_ids
    assert custom["retrievalTrace"]["fusion"]["weights"] == {"lexical": 1.0, "vector": 0.0}
    assert {a["method"] for a in custom["retrievalTrace"]["attempts"]} <= {"hybrid"}
    assert custom["rerankTrace"]["applied"] is False
    # no floors: at least as much evidence as the floored built-in hybrid
    hybrid = p.lookup(query, kb_scope="eval", method="hybrid", record_latency=False)
    assert len(custom["evidenceBlocks"]) >= len(hybrid["evidenceBlocks"])
    described = p.describe("lexical-fused")
    assert (described["minScore"], described["relativeScore"]) == (0.0, 0.0)
    assert described["fusion"]["weights"]["vector"] == 0.0 and described["reranker"] is None
    assert p.describe("hybrid")["minScore"] == SETTINGS.min_score


def test_builtin_methods_as_data_match_their_names(kb: SqliteKnowledgeBase) -> None:
    """A method's behaviour comes from its definition, never from its name: each
    built-in definition registered under another name gives the same bytes."""
    renamed = tuple(dataclasses.replace(m, name=f"copy-of-{m.name}") for m in BUILTIN_METHODS)
    p = pipeline(kb, methods=(*BUILTIN_METHODS, *renamed))
    for spec, copy in zip(BUILTIN_METHODS, renamed, strict=True):
        by_name = p.lookup(POOL_QUERY, kb_scope="eval", method=spec.name, record_latency=False)
        by_copy = p.lookup(POOL_QUERY, kb_scope="eval", method=copy.name, record_latency=False)
        assert json.dumps(by_name) == json.dumps(by_copy), spec.name
        assert p.describe(spec.name) == p.describe(copy.name)


@pytest.mark.parametrize("kernel", ["numpy", "numba"])
def test_a_single_list_s_result_is_the_bytes_its_candidates_give(
    tmp_path: Path, kernel: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An unreranked single-list lookup builds its trace items and evidence from the
    list itself (``Pipeline._single_result``); without that path (the candidates made
    one by one, as a fused or reranked lookup makes them) every result is the same
    bytes: both lists, both fusion kinds, floors that drop some places, top K below and
    above the list, a filtered attempt, a retry and a lookup with a deep ranking."""
    if kernel == "numba":
        require_numba()
    docs = load_seed_docs(write_corpus(tmp_path / "docs"))
    store = SqliteKnowledgeBase(tmp_path / "kb.sqlite", kernel=kernel)
    with store:
        seed(store, docs, HashingEmbedder(), get_tokenizer(), ChunkSettings())
        methods = (
            *BUILTIN_METHODS,
            Method(
                "lexical-rrf",
                ("lexical",),
                fusion=FusionProfile(FUSION_NAMES["rrf"], "rrf"),
                min_score=0.0,
            ),
            Method("vector-floor", ("vector",), min_score=0.3, relative_score=0.9),
            Method("lexical-best", ("lexical",), min_score=0.0, relative_score=1.0),
        )
        queries = [POOL_QUERY, "hikari leak warning", "latency timeout", "缓存雪崩", "xylophqz"]

        def results() -> list[str]:
            out = []
            for top_k in (1, 3, 12):
                p = pipeline(store, methods=methods, top_k=top_k)
                for method in ("lexical", "vector", "lexical-rrf", "vector-floor", "lexical-best"):
                    for query in queries:
                        for scope in ("eval", None):
                            got = p.lookup_ranked(
                                query,
                                kb_scope=scope,
                                method=method,
                                record_latency=False,
                                depth=4 if top_k == 3 else None,
                            )
                            refs = None if got[1] is None else [r.chunk_id for r in got[1]]
                            out.append(json.dumps([got[0], refs]))
            return out

        made = Pipeline._single_result
        taken: list[int] = []

        def counted(self: Pipeline, *args: Any) -> Any:
            got = made(self, *args)
            taken.append(got is not None)
            return got

        monkeypatch.setattr(Pipeline, "_single_result", counted)
        fast = results()
        monkeypatch.setattr(Pipeline, "_single_result", lambda *args: None)
        general = results()
    assert fast == general
    assert len(taken) == len(fast) and all(taken)  # every lookup took the single path
    assert any('"evidenceBlocks": []' in r for r in fast)  # the floors dropped some


@pytest.mark.parametrize("method", METHODS)
def test_the_deep_ranking_extends_the_evidence_order(kb: SqliteKnowledgeBase, method: str) -> None:
    """Without floors and with the candidate depth at least the ranking depth, the
    evidence is the head of the deep ranking; the deep ranking goes past top K and
    the floors, and never repeats a chunk. A single list read 2 deep is the head of
    the same list read 50 deep; a fused ranking is not (a chunk that one short list
    misses loses that list's share)."""
    p = pipeline(kb, min_score=0.0, relative_score=0.0, candidates=50, top_k=2)
    result, deep = p.lookup_ranked(
        "pool leak warning", kb_scope="eval", method=method, depth=50, record_latency=False
    )
    assert deep is not None
    ids = [ref.chunk_id for ref in deep]
    assert len(ids) == len(set(ids)) > 2
    assert [b["chunkId"] for b in result["evidenceBlocks"]] == ids[:2]
    plain = p.lookup("pool leak warning", kb_scope="eval", method=method, record_latency=False)
    assert plain == result  # asking for the ranking does not change the lookup
    assert all(ref.source != "pool-other" for ref in deep)  # kb_scope still holds
    _, shallow = p.lookup_ranked("pool leak warning", kb_scope="eval", method=method, depth=2)
    assert shallow is not None and len(shallow) >= 2
    if not p.method(method).fused:
        assert [ref.chunk_id for ref in shallow] == ids[:2]


@pytest.mark.parametrize("kernel", ["numpy", "compiled"])
@pytest.mark.parametrize("method", ["lexical", "hybrid+rerank"])
def test_a_lookup_sums_the_postings_once(tmp_path: Path, kernel: str, method: str) -> None:
    """The filtered attempt, the unfiltered retry and the deep ranking of one lookup
    read one BM25 pass over the postings (the next query sums its own)."""
    if kernel == "compiled":
        require_numba()
    docs = load_seed_docs(write_corpus(tmp_path / "docs"))
    with SqliteKnowledgeBase(tmp_path / "kb.sqlite", kernel=kernel) as store:
        seed(store, docs, HashingEmbedder(), get_tokenizer(), ChunkSettings())
        p = pipeline(store, weak_score=1.5)  # every filtered attempt is retried unfiltered
        passes = []
        for query in (POOL_QUERY, "pool leak warning", POOL_QUERY):
            result, deep = p.lookup_ranked(query, kb_scope="eval", method=method, depth=20)
            assert deep and result["retrievalTrace"]["fallbackReasons"]
            assert len(result["retrievalTrace"]["attempts"]) == 2
            bm25 = store._index().bm25
            assert bm25 is not None
            passes.append(bm25.kernel.passes)
        assert passes == [1, 2, 3]


def test_a_lookup_without_depth_has_no_ranking(kb: SqliteKnowledgeBase) -> None:
    _, deep = pipeline(kb).lookup_ranked(POOL_QUERY, kb_scope="eval")
    assert deep is None
    with pytest.raises(UsageError, match="depth must be at least 1"):
        pipeline(kb).lookup_ranked(POOL_QUERY, depth=0)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("query", [POOL_QUERY, "缓存雪崩处理方法", "pool leak warning timeout"])
def test_evidence_scores_are_the_ranking_values(
    kb: SqliteKnowledgeBase, method: str, query: str
) -> None:
    """A block's score is what its list is ranked by, so it never rises down the list;
    the label reads the confidence; the rerank trace's lists are monotone too."""
    p = pipeline(kb, min_score=0.0, relative_score=0.0, top_k=10)
    result = p.lookup(query, method=method, record_latency=False)
    blocks = result["evidenceBlocks"]
    assert blocks, method
    scores = [b["score"] for b in blocks]
    assert scores == sorted(scores, reverse=True), (method, scores)
    for b in blocks:
        meta = b["metadata"]
        expected = {
            "lexical": meta.get("bm25"),
            "vector": meta.get("cosine"),
            "hybrid": meta["fused"],
        }.get(method)
        if expected is not None:
            assert b["score"] == pytest.approx(expected, abs=1e-6), (method, b)
        confidence = meta["confidence"]
        label = "high" if confidence >= 0.6 else "medium" if confidence >= 0.4 else "low"
        assert b["scoreLabel"] == label
    trace = result["rerankTrace"]
    for side in ("before", "after"):
        values = [item["score"] for item in trace[side]]
        assert values == sorted(values, reverse=True), (method, side, values)


@pytest.mark.parametrize("method", METHODS)
def test_the_deep_ranking_counts_distinct_targets(kb: SqliteKnowledgeBase, method: str) -> None:
    """``distinct="source"``: the ranking runs down to its ``depth``-th distinct
    source, reading the lists deeper while chunks of one document crowd it; the
    chunk order is the chunk ranking's."""
    p = pipeline(kb, min_score=0.0, relative_score=0.0, candidates=50, hints=False)
    weekly = "pool rebalance runbook step reviewed weekly"
    _, chunks = p.lookup_ranked(weekly, kb_scope="eval", method=method, depth=50)
    assert chunks is not None
    sources = list(dict.fromkeys(ref.source for ref in chunks))
    assert len(sources) >= 2 and len(chunks) > len(sources)  # documents of several chunks
    _, two = p.lookup_ranked(weekly, kb_scope="eval", method=method, depth=2, distinct="source")
    assert two is not None
    assert list(dict.fromkeys(ref.source for ref in two)) == sources[:2]
    if not p.method(method).fused:  # a single list: a prefix of the deeper ranking
        assert [r.chunk_id for r in two] == [r.chunk_id for r in chunks[: len(two)]]
    assert len(two) > 2 or len({r.source for r in chunks[:2]}) == 2
    _, every = p.lookup_ranked(weekly, kb_scope="eval", method=method, depth=500, distinct="source")
    assert every is not None and len({r.source for r in every}) == len(sources)
    with pytest.raises(UsageError, match="distinct"):
        p.lookup_ranked(weekly, kb_scope="eval", depth=2, distinct="title")


def test_a_ranking_makes_each_candidate_once_and_reads_like_a_list() -> None:
    """An attempt's ranking makes a candidate when it is first read and never again;
    indexing and slicing behave as on a list, a reordered head keeps the rest, and a
    confidence is known without making the candidate."""
    from ragsnap.kb.backends import ChunkRef
    from ragsnap.kb.pipeline import _Candidate, _Ranked

    rows = [7, 3, 9, 1, 4]
    made: list[int] = []
    calls: list[list[int]] = []

    def make(places: list[int]) -> list[_Candidate]:
        calls.append(places)
        made.extend(rows[i] for i in places)
        return [
            _Candidate(rows[i], ChunkRef(f"c{rows[i]}", None, "s"), confidence=rows[i] / 10)
            for i in places
        ]

    ranked = _Ranked(rows, [r / 10 for r in rows], make)
    assert [ranked.confidence(i) for i in range(5)] == [0.7, 0.3, 0.9, 0.1, 0.4]
    assert made == []
    assert [c.row for c in ranked[1:3]] == [3, 9] and made == [3, 9]
    assert calls == [[1, 2]]  # a slice's candidates are made together
    # ``at`` makes only the missing ones, once each, together, and keeps the order
    assert [c.row for c in ranked.at([3, 1, 3, 0])] == [1, 3, 1, 7]
    assert calls[-1] == [3, 0] and made == [3, 9, 1, 7]
    assert ranked[-1].row == 4 and ranked[1] is ranked[1:2][0]
    assert [c.row for c in ranked[::-2]] == rows[::-2]
    with pytest.raises(IndexError):
        ranked[5]
    head = [ranked[1], ranked[0]]
    reordered = ranked.with_head(head)
    assert [c.row for c in reordered] == [3, 7, 9, 1, 4] and len(reordered) == 5
    assert reordered[2] is ranked[2] and reordered.confidence(0) == 0.3
    assert sorted(made) == sorted(rows)  # each made once, whichever list read it
    # the places whose confidence reaches a floor, the reordered head's included
    assert ranked.reaching(0.35) == [0, 2, 4] and ranked.reaching(0.0) == [0, 1, 2, 3, 4]
    assert reordered.reaching(0.35) == [1, 2, 4] and reordered.reaching(0.95) == []
    assert [reordered.confidence(i) >= 0.3 for i in range(5)] == [
        i in reordered.reaching(0.3) for i in range(5)
    ]


def test_coverage_of_a_bit_code_is_the_coverage_of_its_terms() -> None:
    """A candidate's coverage read from its bit code equals, bit for bit, the coverage
    of the set of terms the code names (the same weights added in the same order),
    for short queries and for one longer than an int64 code."""
    import random

    from ragsnap.kb.pipeline import _Query

    rng = random.Random(5)
    for size in (1, 3, 9, 70):
        tokens = [f"t{i}" for i in range(size)]
        df = {t: rng.randint(0, 500) for t in tokens}
        query = _Query(" ".join(tokens), tokens, None, df, 1000)
        for _ in range(200):
            held = [t for t in tokens if rng.random() < 0.4]
            code = sum(1 << tokens.index(t) for t in held)
            assert query.coverage_of_code(code) == query.coverage(frozenset(held))
            assert query.coverage_of_code(code) == query.coverage(frozenset(held))  # cached


@pytest.mark.parametrize("compiled", [False, True])
def test_coverages_asked_together_equal_each_code_s(
    compiled: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An attempt asks the coverage of its distinct codes together: summed by the
    compiled kernel when the compiled kernels are loaded, else in Python. Either
    way each equals, bit for bit, the code's coverage asked alone (the same additions
    in the same order), with weights of every size and codes up to and past 63 bits."""
    import random

    from ragsnap.kb import kernels
    from ragsnap.kb.numeric import quantize
    from ragsnap.kb.pipeline import _Query

    if compiled:
        from conftest import require_numba

        require_numba()
        kernels._numba_kernels()  # loaded, as a store searching with them loads them
    else:
        monkeypatch.setattr(kernels, "_compiled", {})
    rng = random.Random(7)
    total = 10**9
    for size in (1, 3, 9, 40, 63, 70):
        tokens = [f"t{i}" for i in range(size)]
        df = {t: int(total ** rng.random()) for t in tokens}  # idf from 0 to about 20
        query = _Query(" ".join(tokens), tokens, None, df, total)
        codes = list({rng.getrandbits(size) for _ in range(300)} | {0, (1 << size) - 1})
        alone = _Query(" ".join(tokens), tokens, None, df, total)
        assert query.coverage_of_codes(codes) == {c: alone.coverage_of_code(c) for c in codes}
        ran = kernels.compiled_code_sums(codes, [w for _, w in query.idf_items]) is not None
        assert ran == (compiled and size <= 63 and len(codes) >= 8)
        # a lexical attempt's confidences: each row's code (repeats too), on the grid
        rows_codes = codes + codes[:5]
        both = kernels.compiled_coverage_grid(rows_codes, query.weights, query.idf_total)
        assert (both is not None) == ran
        if both is not None:
            exact = [alone.coverage_of_code(c) for c in rows_codes]
            assert both == (exact, [quantize(x) for x in exact])
            assert all(type(x) is float for x in both[0] + both[1])
        beyond = [1 << size, *codes[:8]]  # a bit without a weight: never read by numba
        assert kernels.compiled_code_sums(beyond, [w for _, w in query.idf_items]) is None
        few = codes[:7]  # fewer than the compiled kernel takes: Python's
        assert kernels.compiled_code_sums(few, [w for _, w in query.idf_items]) is None
        assert query.coverage_of_codes(few) == {c: alone.coverage_of_code(c) for c in few}


def test_common_prefix_of_breadcrumbs_is_every_one_s_prefix() -> None:
    """The hints' breadcrumb prefix (read from the first and last breadcrumb in tuple
    order) is the longest prefix every breadcrumb shares, whatever their order:
    checked against segment-by-segment comparison of all of them."""
    import random

    from ragsnap.kb.pipeline import _common_prefix

    def reference(split: list[tuple[str, ...]]) -> str | None:
        prefix: list[str] = []
        for parts in zip(*split, strict=False):
            if len(set(parts)) > 1:
                break
            prefix.append(parts[0])
        return " > ".join(prefix) or None

    rng = random.Random(11)
    words = ["Ops", "DB", "Pool", "Cache", "Ops Guide"]
    for _ in range(500):
        split = [
            tuple(rng.choice(words[: rng.randint(1, 5)]) for _ in range(rng.randint(0, 4)))
            for _ in range(rng.randint(1, 6))
        ]
        assert _common_prefix(split) == reference(split), split
    assert _common_prefix([]) is None
    assert _common_prefix([("A", "B"), ("A", "B", "C")]) == "A > B"
    assert _common_prefix([("A", "B", "C")]) == "A > B > C"


def test_hints_name_the_common_prefix_of_the_best_documents(tmp_path: Path) -> None:
    """The hints' breadcrumb prefix, read from the least and the greatest document
    number (documents are numbered in breadcrumb order), equals the prefix of every
    best-tallied document's breadcrumb computed from the documents themselves, for
    breadcrumbs written in no particular order."""
    import random

    from ragsnap.kb.backends import breadcrumb_segments
    from ragsnap.kb.pipeline import _HintIndex

    rng = random.Random(5)
    segments = ["Ops", "DB", "Pool", "Cache", "Zeta", "Alpha"]
    words = ["hikari", "pool", "leak", "redis", "evict", "replica", "kafka", "lag"]
    folder = tmp_path / "docs"
    for n in range(60):
        category = rng.choice(["database", "cache", "messaging"])
        # a category's documents share their first segment, some their second too
        crumb = " > ".join(
            [category.title()] + [rng.choice(segments) for _ in range(rng.randint(0, 3))]
        )
        write_doc(
            folder,
            f"doc-{n}",
            f"Body of document {n}.",
            title=f"Doc {n}",
            breadcrumb=crumb if n % 7 else None,  # some without a breadcrumb
            category=category,
            kb_scope="eval",
            # "orphan" only where there is no breadcrumb: a category it names has no
            # document that holds it, so its hint's prefix is all of its documents'
            keywords="["
            + ", ".join(rng.sample(words, rng.randint(1, 3)) + ([] if n % 7 else ["orphan"]))
            + "]",
        )
    tokenizer = get_tokenizer()
    with SqliteKnowledgeBase(tmp_path / "kb.sqlite") as store:
        seed(store, load_seed_docs(folder), HashingEmbedder(), tokenizer, ChunkSettings())
        index = _HintIndex.build(store, tokenizer, "eval")
        infos = [i for i in store.documents().values() if i.category is not None]

        def reference(query: str) -> dict[str, str]:
            terms = set(tokenizer.tokens(query))
            vocab = {
                i.source: set(
                    tokenizer.tokens(
                        " ".join(
                            [i.category or "", i.breadcrumb or "", i.title or ""]
                            + [str(k) for k in i.metadata.get("keywords", [])]
                        )
                    )
                )
                for i in infos
            }
            scores: dict[str, float] = {}
            for term in sorted(terms):
                holders = [i for i in infos if term in vocab[i.source]]
                for i in holders:
                    scores[i.category or ""] = scores.get(i.category or "", 0.0)
                for category in dict.fromkeys(i.category or "" for i in holders):
                    share = sum(i.category == category for i in holders) / len(holders)
                    scores[category] += share
            if not scores:
                return {}
            best = max(scores.values())
            if sum(v == best for v in scores.values()) > 1:
                return {}
            category = next(c for c, v in scores.items() if v == best)
            docs = [i for i in infos if i.category == category and i.breadcrumb]
            tally = {i.source: len(terms & vocab[i.source]) for i in docs}
            if any(tally.values()):
                most = max(tally.values())
                docs = [i for i in docs if tally[i.source] == most]
            split = [breadcrumb_segments(i.breadcrumb or "") for i in docs]
            prefix: list[str] = []
            for parts in zip(*split, strict=False):
                if len(set(parts)) > 1:
                    break
                prefix.append(parts[0])
            hint = {"category": category}
            if prefix:
                hint["breadcrumbPrefix"] = " > ".join(prefix)
            return hint

        named = 0
        for _ in range(300):
            query = " ".join(rng.sample([*words, "nothing", "orphan"], rng.randint(1, 4)))
            got = index.hints(tokenizer.tokens(query))
            assert got == reference(query), query
            named += "breadcrumbPrefix" in got
        assert named > 50  # the prefixes were exercised, not just the empty hints


@pytest.mark.slow
def test_a_long_query_s_lexical_confidences_are_the_same_compiled_or_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the compiled kernels loaded, a lexical attempt puts each row's coverage on
    the grid in one compiled step, for a long query whose rows hold many distinct term
    codes and for a short one's few: each lookup equals, byte for byte, the one a store
    searching with the numpy kernels gives, whose confidences are computed once per
    code in Python."""
    import random

    from conftest import require_numba
    from ragsnap.kb import kernels
    from ragsnap.kb import pipeline as pipeline_module

    require_numba()
    words = [f"term{chr(97 + i)}word" for i in range(14)]
    rng = random.Random(5)
    docs = tmp_path / "docs"
    for d in range(60):
        held = rng.sample(words, rng.randint(1, len(words)))
        write_doc(docs, f"doc-{d:02d}", f"Runbook {d}: {' '.join(held)} steps.", category="ops")
    row_paths: list[int] = []
    compiled_coverage_grid = pipeline_module.compiled_coverage_grid

    def spy(codes: list[int], weights: list[float], total: float) -> Any:
        both = compiled_coverage_grid(codes, weights, total)
        if both is not None:
            row_paths.append(len(set(codes)))
        return both

    monkeypatch.setattr(pipeline_module, "compiled_coverage_grid", spy)
    results = []
    for kernel in ("numba", "numpy"):
        if kernel == "numpy":  # as in a process where no store loaded the compiled ones
            monkeypatch.setattr(kernels, "_compiled", {})
        store = SqliteKnowledgeBase(tmp_path / f"{kernel}.sqlite", kernel=kernel)
        seed(store, load_seed_docs(docs), HashingEmbedder(), get_tokenizer(), ChunkSettings())
        pipe = Pipeline(store, HashingEmbedder(), get_tokenizer(), SETTINGS)
        for query in (" ".join(words), " ".join(words[:3])):
            results.append(pipe.lookup(query, method="lexical", top_k=10, record_latency=False))
        store.close()
        if kernel == "numba":
            assert len(row_paths) == 2 and row_paths[0] > 12 >= row_paths[1] > 1, row_paths
    assert len(row_paths) == 2  # in Python the second time
    assert json.dumps(results[:2]) == json.dumps(results[2:])
    assert len(results[0]["evidenceBlocks"]) == 10


@pytest.mark.parametrize("kind", ["convex", "rrf", "adaptive"])
def test_a_list_s_fusion_shares_equal_each_entry_s_share(kind: str) -> None:
    """A list's shares of the fused value are computed on arrays (a deep ranking's
    lists are thousands long): each equals, sign of zero included, the share of its
    entry alone, for lists with negative, zero and tiny values and no positive one."""
    import random

    from ragsnap.kb.pipeline import _share, _shares

    rng = random.Random(17)
    for _ in range(2000):
        f = FusionProfile(
            kind=kind,
            k=rng.choice([1, 7, 60]),
            lexical_weight=rng.random(),
            vector_weight=rng.random(),
        )
        pool = [rng.uniform(-1, 1), 0.0, -0.0, rng.uniform(0, 40), 1e-300]
        values = sorted((rng.choice(pool) for _ in range(rng.randint(0, 60))), reverse=True)
        weight = rng.random()
        top = max(values, default=0.0)
        alone = [_share(f, weight, top, rank, v) for rank, v in enumerate(values, 1)]
        assert [repr(x) for x in _shares(f, values, weight)] == [repr(x) for x in alone]


@pytest.mark.parametrize("method", METHODS)
def test_a_lookup_leaves_no_reference_cycles(kb: SqliteKnowledgeBase, method: str) -> None:
    """``ragsnap trial`` pauses the cyclic collector through its passes: that holds
    memory only while lookups make no garbage that reference counting cannot free."""
    p = pipeline(kb)
    queries = [POOL_QUERY, f"{POOL_QUERY} quokka", "quokka", "zzz nothing matches", "连接池"]
    for query in queries:  # first lookups build what the pipeline and the store keep
        p.lookup_ranked(query, kb_scope="eval", method=method, depth=50)
    gc.collect()
    gc.disable()
    try:
        for query in queries:
            for scope in ("eval", None):
                for distinct in ("chunk_id", "source"):
                    result, ranking = p.lookup_ranked(
                        query, kb_scope=scope, method=method, depth=50, distinct=distinct
                    )
                    assert ranking is not None
                    list(ranking)  # a deep ranking's refs, gathered as a trial reads them
                    del result, ranking
        assert gc.collect() == 0
        cycle: list[Any] = []
        cycle.append(cycle)  # the check sees a cycle when there is one
        del cycle
        assert gc.collect() == 1
    finally:
        gc.enable()


def test_a_lookup_ends_while_another_process_writes_during_every_read(
    kb: SqliteKnowledgeBase, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reindex under a live service: another connection to the file commits during
    every read. The first reads see the generation move and read again; the third
    holds one state of the file (``SnapshotStore``), so a write that deletes the
    very chunks it is about to fetch is not seen, and the lookup ends with the
    answer of the state it started from."""
    p = pipeline(kb)
    expected = p.lookup(POOL_QUERY, kb_scope="eval", method="lexical", record_latency=False)
    top = expected["evidenceBlocks"][0]["source"]
    with SqliteKnowledgeBase(kb.path, create=False) as writer:
        writes: list[str] = []
        generation, chunks = kb.generation, kb.chunks

        def moved() -> str:  # a write lands between each read and its check
            writer.write(WriteBatch(meta={"touched": str(len(writes))}))
            writes.append("meta")
            return generation()

        def fetched(rows: Any, *, tokens: bool = True) -> Any:
            if writes == ["meta", "meta"]:  # the third read, which holds one state
                writer.write(WriteBatch(deletes=[top]))
                writes.append("delete")
            return chunks(rows, tokens=tokens)

        monkeypatch.setattr(kb, "generation", moved)
        monkeypatch.setattr(kb, "chunks", fetched)
        got = p.lookup(POOL_QUERY, kb_scope="eval", method="lexical", record_latency=False)
        assert writes == ["meta", "meta", "delete"]  # two reads checked, then one held
        assert got == expected
        monkeypatch.undo()
        after = p.lookup(POOL_QUERY, kb_scope="eval", method="lexical", record_latency=False)
        assert top not in evidence_sources(after)  # the delete landed, and is seen now


def test_an_adaptive_profile_fuses_as_convex_with_the_query_s_weights(tmp_path: Path) -> None:
    """cc-adaptive-v1: a lookup's fused values are those of a convex profile with the
    weights ``query_weights`` gives that query's lists (read as the lookup reads
    them), and its deep ranking's head is the lookup's order."""
    from ragsnap.kb.backends import Filter
    from ragsnap.kb.fusion import query_weights
    from ragsnap.kb.pipeline import _Query
    from ragsnap.settings import FUSION_KIND_DEFAULTS

    words = ["pool", "cache", "queue", "lag", "leak", "timeout", "replica", "index"]
    for i in range(16):  # more than 10 chunks share the query's words, unevenly
        body = " ".join(words[: 1 + i % len(words)]) + f" note {i} " + filler("ops", 1 + i % 3)
        write_doc(tmp_path / "docs", f"doc-{i:02d}", body, kb_scope="eval")
    adaptive = FUSION_KIND_DEFAULTS["adaptive"]
    no_floor: dict[str, Any] = {"reranker": None, "min_score": 0.0, "relative_score": 0.0}
    fused = Method("fused", ("lexical", "vector"), fusion=adaptive, **no_floor)
    query = "pool cache queue lag"
    with SqliteKnowledgeBase(tmp_path / "kb.sqlite") as kb:
        docs = load_seed_docs(tmp_path / "docs")
        seed(kb, docs, HashingEmbedder(), get_tokenizer(), ChunkSettings())
        p = pipeline(kb, methods=(*BUILTIN_METHODS, fused), top_k=10, hints=False)
        tokens = p.tokenizer.tokens(query)
        df, total = kb.doc_frequencies(tokens)
        q = _Query(query, tokens, p.embedder.embed_query(query), df, total)
        lexical, vector, _ = p._search(fused, q, Filter(kb_scope="eval"), 50)
        a, b = query_weights(adaptive, [v for _, v in lexical], [v for _, v in vector])
        assert (a, b) != (0.5, 0.5)  # the confidences moved the equal priors
        convex = Method(
            "convex",
            ("lexical", "vector"),
            fusion=FusionProfile(kind="convex", lexical_weight=a, vector_weight=b),
            **no_floor,
        )
        p = pipeline(kb, methods=(*BUILTIN_METHODS, fused, convex), top_k=10, hints=False)
        got, deep = p.lookup_ranked(
            query, kb_scope="eval", method="fused", record_latency=False, depth=50
        )
        want = p.lookup(query, kb_scope="eval", method="convex", record_latency=False)
    pairs = [[(x["chunkId"], x["score"]) for x in r["evidenceBlocks"]] for r in (got, want)]
    assert len(pairs[0]) == 10 and pairs[0] == pairs[1]
    assert deep is not None
    assert [r.chunk_id for r in deep][:10] == [c for c, _ in pairs[0]]

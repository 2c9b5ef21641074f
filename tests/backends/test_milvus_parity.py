"""The embedded SQLite store and Milvus Lite, seeded alike, through the same pipeline.

The example corpus (seed-docs/) goes into both stores with the default hashing
embedder; every golden case runs through ``Pipeline`` with each method, for two
Milvus analyzers. Vector search must rank exactly alike (Milvus's hits are scored
again with the embedded store's exact arithmetic). With ``analyzer: ragsnap`` (the
default) Milvus's BM25 reads ragsnap's own stemmed tokens with the embedded store's
k1, b and idf, so lexical search must agree too: every method returns the same
evidence. With ``jieba`` Milvus analyses the raw chunk text itself (see
docs/milvus.md): how often the top source still agrees is counted,
printed as a table, and pinned.

Without pymilvus, milvus-lite or jieba the module is skipped on a workstation and
fails under ``CI=true``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from conftest import REPO
from ragsnap.io.inputs import load_cases
from ragsnap.kb.backends import Filter, KnowledgeBase
from ragsnap.kb.backends.milvus import MilvusKnowledgeBase
from ragsnap.kb.backends.sqlite import SqliteKnowledgeBase
from ragsnap.kb.corpus import ChunkSettings, load_seed_docs
from ragsnap.kb.embedders import HashingEmbedder
from ragsnap.kb.pipeline import METHODS, LookupSettings, Pipeline
from ragsnap.kb.seeding import seed
from ragsnap.kb.text import Tokenizer, get_tokenizer
from ragsnap.models import GoldenCase

from .conftest import require_milvus

# not in the fast suite: Milvus Lite against the embedded store, every method
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module", autouse=True)
def _milvus_installed() -> None:
    require_milvus()


CASES = load_cases(REPO / "cases" / "golden-cases.json").cases
EMBEDDER = HashingEmbedder()
#: Milvus analyzer -> ragsnap's tokenizer beside it: the default (stemmed) for
#: ``ragsnap``, unstemmed for Milvus's own ``jieba`` (Milvus Lite cannot stem)
TOKENIZERS = {"ragsnap": get_tokenizer("bigram", "english"), "jieba": get_tokenizer()}
ANALYZERS = tuple(TOKENIZERS)

# Measured on seed-docs/ and the 30 golden cases, Milvus Lite 3.2 with each analyzer
# (jieba is what `analyzer: auto` picks for this corpus); the same numbers go into
# docs/milvus.md. They are exact on purpose, so any change in either backend's ranking shows
# up here. To update them after a deliberate change: run
#     pytest tests/backends/test_milvus_parity.py
# read the table it prints (also in the failure message, and in
# <pytest basetemp>/milvus-parity.md), check that every listed case differs for the
# reasons docs/milvus.md gives, and copy the new counts here and into that page.
ALL = {"lexical": 30, "vector": 30, "hybrid": 30, "hybrid+rerank": 30}
#: analyzer -> method -> cases whose first evidence block has the same source in both stores
TOP_SOURCE_AGREES = {"ragsnap": ALL, "jieba": ALL}
#: analyzer -> method -> cases whose evidence blocks are the same chunks in the same order
SAME_EVIDENCE = {
    "ragsnap": ALL,
    "jieba": {"lexical": 29, "vector": 30, "hybrid": 29, "hybrid+rerank": 28},
}
#: below the pipeline: cases whose best lexical_search chunk (inside the case's kb_scope) is
#: the same in both stores
RAW_LEXICAL_TOP_CHUNK_AGREES = {"ragsnap": 30, "jieba": 30}


@pytest.fixture(scope="module", params=ANALYZERS)
def analyzer(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


@pytest.fixture(scope="module")
def stores(
    tmp_path_factory: pytest.TempPathFactory, analyzer: str
) -> Iterator[tuple[SqliteKnowledgeBase, MilvusKnowledgeBase]]:
    root = tmp_path_factory.mktemp(f"milvus-parity-{analyzer}")
    docs = load_seed_docs(REPO / "seed-docs")
    with (
        SqliteKnowledgeBase(root / "kb.sqlite") as embedded,
        MilvusKnowledgeBase(str(root / "milvus.db"), analyzer=analyzer) as milvus,
    ):
        for kb in (embedded, milvus):
            seed(kb, docs, EMBEDDER, TOKENIZERS[analyzer], ChunkSettings())
        yield embedded, milvus


def lookup(
    kb: KnowledgeBase, case: GoldenCase, method: str, tokenizer: Tokenizer
) -> dict[str, Any]:
    pipeline = Pipeline(kb, EMBEDDER, tokenizer, LookupSettings())
    return pipeline.lookup(
        case.query, kb_scope=case.kb_scope, top_k=case.top_k, method=method, record_latency=False
    )


@pytest.fixture(scope="module")
def results(
    stores: tuple[SqliteKnowledgeBase, MilvusKnowledgeBase], analyzer: str
) -> dict[tuple[str, str], tuple[dict[str, Any], dict[str, Any]]]:
    """(method, case id) -> (embedded lookupResult, milvus lookupResult)."""
    embedded, milvus = stores
    tokenizer = TOKENIZERS[analyzer]
    return {
        (method, case.id): (
            lookup(embedded, case, method, tokenizer),
            lookup(milvus, case, method, tokenizer),
        )
        for method in METHODS
        for case in CASES
    }


def chunk_ids(items: list[dict[str, Any]]) -> list[str]:
    return [item["chunkId"] for item in items]


def sources(result: dict[str, Any]) -> list[str]:
    return [block["source"] for block in result["evidenceBlocks"]]


def test_every_case_and_method_ran(
    results: dict[tuple[str, str], tuple[dict[str, Any], dict[str, Any]]],
) -> None:
    assert len(CASES) == 30
    assert len(results) == len(CASES) * len(METHODS)
    # the comparison is not vacuous: most lookups find evidence
    found = sum(bool(m["evidenceBlocks"]) for _, m in results.values())
    assert found > len(results) // 2


def test_vector_rankings_agree_exactly(
    results: dict[tuple[str, str], tuple[dict[str, Any], dict[str, Any]]],
) -> None:
    for case in CASES:
        embedded, milvus = results[("vector", case.id)]
        where = f"vector / {case.id}"
        assert chunk_ids(milvus["evidenceBlocks"]) == chunk_ids(embedded["evidenceBlocks"]), where
        for side in ("before", "after"):
            got, want = milvus["rerankTrace"][side], embedded["rerankTrace"][side]
            assert chunk_ids(got) == chunk_ids(want), f"{where}: rerankTrace.{side}"
            assert [x["score"] for x in got] == pytest.approx([x["score"] for x in want], abs=1e-6)
        assert milvus["retrievalTrace"] == embedded["retrievalTrace"], where


def hit_ids(kb: KnowledgeBase, hits: list[tuple[int, float]]) -> list[str]:
    chunks = kb.chunks([row for row, _ in hits])
    return [chunks[row].chunk_id for row, _ in hits]


def test_raw_vector_search_agrees_exactly(
    stores: tuple[SqliteKnowledgeBase, MilvusKnowledgeBase],
) -> None:
    """Below the pipeline: every chunk of each scope, in the same order, same cosine."""
    embedded, milvus = stores
    for case in CASES:
        query = EMBEDDER.embed_query(case.query)
        for flt in (Filter(), Filter(kb_scope=case.kb_scope)):
            want = embedded.vector_search(query, flt, 1000)
            got = milvus.vector_search(query, flt, 1000)
            assert hit_ids(milvus, got) == hit_ids(embedded, want), case.id
            assert [s for _, s in got] == pytest.approx([s for _, s in want], abs=1e-6)


def agreement_table(
    results: dict[tuple[str, str], tuple[dict[str, Any], dict[str, Any]]], analyzer: str
) -> tuple[dict[str, int], dict[str, int], str]:
    """Per method: top-source agreements, identical evidence lists, and a Markdown report."""
    top: dict[str, int] = {}
    same: dict[str, int] = {}
    lines = [
        f"embedded (SQLite FTS5) vs milvus (Milvus Lite, {analyzer}): {len(CASES)} golden cases",
        "",
        "| method | top source agrees | same evidence chunks, same order | both empty |",
        "| --- | --- | --- | --- |",
    ]
    differ: list[str] = []
    reordered: list[str] = []
    for method in METHODS:
        top[method] = same[method] = empty = 0
        for case in CASES:
            embedded, milvus = results[(method, case.id)]
            a, b = sources(embedded), sources(milvus)
            if a[:1] == b[:1]:
                top[method] += 1
            else:
                differ.append(f"- {method} / {case.id}: embedded {a[:3]}, milvus {b[:3]}")
            if chunk_ids(embedded["evidenceBlocks"]) == chunk_ids(milvus["evidenceBlocks"]):
                same[method] += 1
            else:
                reordered.append(
                    f"- {method} / {case.id}: embedded {chunk_ids(embedded['evidenceBlocks'])}, "
                    f"milvus {chunk_ids(milvus['evidenceBlocks'])}"
                )
            empty += not a and not b
        n = len(CASES)
        lines.append(f"| {method} | {top[method]}/{n} | {same[method]}/{n} | {empty} |")
    lines += ["", "Top source differs (top-3 sources of each):", *(differ or ["- none"])]
    lines += ["", "Same top source, other evidence (chunk ids):", *(reordered or ["- none"])]
    return top, same, "\n".join(lines) + "\n"


def raw_lexical(
    stores: tuple[SqliteKnowledgeBase, MilvusKnowledgeBase], tokenizer: Tokenizer
) -> tuple[int, str]:
    """``lexical_search`` itself, top 10 inside each case's kb_scope: how often the best
    chunk agrees, and the mean overlap (Jaccard) of the two top-10 sets."""
    embedded, milvus = stores
    agree = 0
    overlap = 0.0
    for case in CASES:
        tokens, flt = tokenizer.tokens(case.query), Filter(kb_scope=case.kb_scope)
        a = hit_ids(embedded, embedded.lexical_search(tokens, flt, 10, case.query))
        b = hit_ids(milvus, milvus.lexical_search(tokens, flt, 10, case.query))
        agree += a[:1] == b[:1]
        overlap += len(set(a) & set(b)) / max(1, len(set(a) | set(b)))
    return agree, (
        f"lexical_search, top 10 in scope: best chunk agrees {agree}/{len(CASES)}, "
        f"mean Jaccard of the top-10 sets {overlap / len(CASES):.3f}\n"
    )


def test_top_source_agreement_per_method(
    stores: tuple[SqliteKnowledgeBase, MilvusKnowledgeBase],
    results: dict[tuple[str, str], tuple[dict[str, Any], dict[str, Any]]],
    tmp_path_factory: pytest.TempPathFactory,
    capsys: pytest.CaptureFixture[str],
    analyzer: str,
) -> None:
    top, same, table = agreement_table(results, analyzer)
    raw, line = raw_lexical(stores, TOKENIZERS[analyzer])
    report = f"{table}\n{line}"
    path = tmp_path_factory.getbasetemp() / f"milvus-parity-{analyzer}.md"
    path.write_text(report, encoding="utf-8")
    with capsys.disabled():
        print(f"\n{report}(written to {path})")
    assert top == TOP_SOURCE_AGREES[analyzer], report
    assert same == SAME_EVIDENCE[analyzer], report
    assert raw == RAW_LEXICAL_TOP_CHUNK_AGREES[analyzer], report

"""The pipeline faults (ragsnap.audit.faults): a wrong L0 hint, a reversed reranker."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tiny_project import write_project

from ragsnap.audit.faults import PIPELINE_FAULTS
from ragsnap.audit.runner import CachedEmbedder, _pipeline, _seed_store
from ragsnap.config import Config, load_config
from ragsnap.kb.backends.sqlite import SqliteKnowledgeBase
from ragsnap.kb.corpus import load_seed_docs
from ragsnap.kb.embedders import make_embedder


@pytest.fixture
def store(tmp_path: Path) -> Iterator[tuple[SqliteKnowledgeBase, Config, CachedEmbedder]]:
    root = write_project(tmp_path / "p")
    config = load_config(root / "ragsnap.yaml")
    embedder = CachedEmbedder(make_embedder(config.kb.embedder))
    kb = _seed_store(
        tmp_path / "kb.sqlite", config, load_seed_docs(root / "seed-docs"), None, embedder
    )
    yield kb, config, embedder
    kb.close()


def test_the_wrong_hint_names_the_next_category(
    store: tuple[SqliteKnowledgeBase, Config, CachedEmbedder],
) -> None:
    kb, config, embedder = store
    query = "Which keys does the cache evict when memory is full?"
    right = _pipeline(kb, config, embedder, None).lookup(query, kb_scope="team")
    wrong = _pipeline(kb, config, embedder, "wrong-category-hint").lookup(query, kb_scope="team")
    assert right["retrievalTrace"]["l0Hints"]["category"] == "cache"
    # the categories of scope team, sorted: cache, database, messaging
    assert wrong["retrievalTrace"]["l0Hints"] == {
        "category": "database",
        "breadcrumbPrefix": "Database > MySQL",
    }
    # a query with no hint keeps none
    none = _pipeline(kb, config, embedder, "wrong-category-hint").lookup(
        "What counts as replica delay?", kb_scope="team"
    )
    assert none["retrievalTrace"]["l0Hints"] == {}


def test_the_reversed_reranker_reverses_the_head(
    store: tuple[SqliteKnowledgeBase, Config, CachedEmbedder],
) -> None:
    kb, config, embedder = store
    query = "What should max.poll.records be when a handler writes to the database?"
    right = _pipeline(kb, config, embedder, None).lookup(query, kb_scope="team")
    wrong = _pipeline(kb, config, embedder, "rerank-reversed").lookup(query, kb_scope="team")
    after = [item["chunkId"] for item in right["rerankTrace"]["after"]]
    assert [item["chunkId"] for item in wrong["rerankTrace"]["after"]] == after[::-1]
    scores = [item["score"] for item in wrong["rerankTrace"]["after"]]
    assert scores == sorted(scores, reverse=True)  # a broken sort: the scores still fall
    assert wrong["rerankTrace"]["before"] == right["rerankTrace"]["before"]
    assert set(PIPELINE_FAULTS) == {"wrong-category-hint", "rerank-reversed"}

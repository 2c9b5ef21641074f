"""The milvus backend over real Milvus Lite files and a real Milvus gRPC server:
``MilvusKnowledgeBase`` and the CLI.

No mocks. The store fixtures (``seeded``, ``default_stores``) run every test that
uses them twice: on a Milvus Lite file (``kb.milvus.uri: store/milvus.db``) and on
``milvus-lite server`` running as its own process on a loopback port (``kb.milvus.uri:
http://127.0.0.1:PORT``, the server path: collections with a prefix of their own, a
client per process, what the server takes asked, not assumed). A Milvus Lite "file"
is a folder that one process at a time may open, and every open costs about a
second, so the repository's seed documents are seeded once per module and mode
(through the CLI) and shared: read-only tests in this process use a copy of that
store (``kb``; on the server the collections themselves), CLI tests read the
original, and tests that write work on their own copy (``clone``: on the server, a
seed into another prefix).

Without pymilvus, milvus-lite or jieba the module is skipped on a workstation
and fails under ``CI=true``, so CI never passes without running it.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import re
import shutil
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import requests

from conftest import REPO, Run, Served, run_cli
from ragsnap.config import load_config
from ragsnap.errors import BackendError
from ragsnap.io.inputs import load_cases
from ragsnap.kb.backends import Filter, StoredChunk, WriteBatch, cut_ranking
from ragsnap.kb.backends import milvus as milvus_backend
from ragsnap.kb.backends.milvus import MilvusKnowledgeBase, analyzer_params
from ragsnap.kb.backends.sqlite import SqliteKnowledgeBase
from ragsnap.kb.corpus import ChunkSettings, chunk_document, load_seed_docs
from ragsnap.kb.embedders import Fingerprint, HashingEmbedder
from ragsnap.kb.pipeline import Pipeline
from ragsnap.kb.seeding import seed
from ragsnap.kb.text import STOP_WORDS, get_tokenizer

from .conftest import (
    DOCS,
    MilvusLiteServer,
    exact_cosines,
    require_milvus,
    unique_word,
    write_doc,
)

# not in the fast suite: Milvus Lite starts a server process per knowledge base
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module", autouse=True)
def _milvus_installed() -> None:
    require_milvus()


SEED_DOCS = REPO / "seed-docs"
CASES = REPO / "cases" / "golden-cases.json"
REPO_SOURCES = 18
REPO_CHUNKS = 88
OTHER_TEAM = "billing-db-pool-tuning"  # the one document of kb_scope other-team
PINNED = "2026-11-30T00:00:00Z"
TOKENIZER = get_tokenizer()
#: what ragsnap.yaml gives by default: the English stemmer
DEFAULT_TOKENIZER = get_tokenizer("bigram", "english")
SETTINGS = ChunkSettings()
#: where the store fixtures' stores live: a Milvus Lite file, a loopback Milvus server
MODES = ("file", "server")
#: file-only tests: what a Milvus Lite file does and a server does not (one process)
FILE_ONLY = pytest.mark.parametrize("seeded", ["file"], indirect=True)
_prefixes = itertools.count()


# -- helpers -------------------------------------------------------------------------------


def write_config(folder: Path, *, own: bool = True, **kb: Any) -> Path:
    """``folder/ragsnap.yaml`` with ``kb.backend: milvus`` and ``kb.milvus.uri:
    store/milvus.db`` (relative to the file), plus ``kb`` (``milvus`` keys merged).

    ``own``: Milvus analyses the text itself (``analyzer: auto``, no stemmer), what
    most tests here are about; otherwise the defaults (ragsnap's stemmed tokens)."""
    mine = {"analyzer": "auto"} if own else {}
    if own:
        kb.setdefault("analyzer", {"stemmer": "none"})
    milvus = {"uri": "store/milvus.db", **mine, **kb.pop("milvus", {})}
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "ragsnap.yaml"
    path.write_text(json.dumps({"kb": {"backend": "milvus", "milvus": milvus, **kb}}) + "\n")
    return path


def seed_cli(cwd: Path, config: Path, *args: str, docs: Path = SEED_DOCS) -> Run:
    return run_cli(
        "seed", "--backend", "milvus", "--config", str(config), "--seed-docs", str(docs),
        *args, cwd=cwd,
    )  # fmt: skip


def summary(run: Run) -> str:
    """The counts part of seed's summary line."""
    match = re.search(
        r"^seed: (\d+ added, \d+ updated, \d+ unchanged, \d+ removed); ", run.out, re.M
    )
    assert match, run.out + run.err
    return match.group(1)


def rebuilt(run: Run) -> int:
    """How many documents a ``--reindex`` run rebuilt: like the embedded store, every
    stored document counts as updated (the milvus seed drops and recreates the
    collections, and says so the same way); nothing is left unchanged or removed."""
    match = re.fullmatch(r"0 added, (\d+) updated, 0 unchanged, 0 removed", summary(run))
    assert match, run.out
    return int(match.group(1))


def lookup_cli(cwd: Path, config: Path, query: str, *args: str) -> Run:
    return run_cli(
        "lookup", query, "--backend", "milvus", "--config", str(config), "--no-latency", *args,
        cwd=cwd,
    )  # fmt: skip


def lookup_result(run: Run) -> dict[str, Any]:
    assert run.code == 0, run.out + run.err
    result: dict[str, Any] = json.loads(run.out)["lookupResult"]
    return result


def assert_exit_2(run: Run, *phrases: str) -> None:
    """A refusal: exit 2, ``Kind: message`` naming the fix, no traceback, no output."""
    assert run.code == 2, run.out + run.err
    assert "Traceback" not in run.err, run.err
    for phrase in phrases:
        assert phrase in run.err
    assert run.out == ""


def sources_of(kb: MilvusKnowledgeBase, hits: Sequence[tuple[int, float]]) -> set[str]:
    chunks = kb.chunks([row for row, _ in hits])
    return {chunks[row].source for row, _ in hits}


def lexical(kb: MilvusKnowledgeBase, text: str, flt: Filter | None = None) -> set[str]:
    return sources_of(kb, kb.lexical_search(TOKENIZER.tokens(text), flt or Filter(), 1000, text))


def vector(kb: MilvusKnowledgeBase, text: str, flt: Filter | None = None) -> set[str]:
    query = HashingEmbedder().embed_query(text)
    return sources_of(kb, kb.vector_search(query, flt or Filter(), 1000))


def rows_by_chunk(kb: MilvusKnowledgeBase) -> dict[str, int]:
    """Chunk id -> row of every stored chunk (an unfiltered vector search returns all)."""
    hits = kb.vector_search(HashingEmbedder().embed_query("anything"), Filter(), 100_000)
    chunks = kb.chunks([row for row, _ in hits])
    return {chunks[row].chunk_id: row for row, _ in hits}


@dataclass
class Store:
    """A seeded store: ``root`` is the working directory, ``config`` the ragsnap.yaml in
    ``root/conf`` whose ``kb.milvus.uri`` is ``store/milvus.db`` (``uri`` the folder)
    or a loopback server's ``http://127.0.0.1:PORT`` (its collections: ``collection``)."""

    root: Path
    config: Path
    uri: Path | str
    first_seed: Run | None = None
    collection: str = "ragsnap"

    @property
    def server(self) -> bool:
        return isinstance(self.uri, str)

    def milvus(self, **settings: str) -> dict[str, str]:
        """``kb.milvus`` of a config for this store, plus ``settings``."""
        return {"uri": str(self.uri), "collection": self.collection, **settings}

    def open(self, **options: Any) -> MilvusKnowledgeBase:
        """The store, open in this process (a file: one process at a time)."""
        return MilvusKnowledgeBase(
            str(self.uri), collection=self.collection, create=False, **options
        )


def server_uri(request: pytest.FixtureRequest, mode: str) -> str | None:
    """The loopback Milvus server's URI in mode ``server``, None for a file."""
    if mode == "file":
        return None
    server: MilvusLiteServer = request.getfixturevalue("milvus_server")
    return server.uri


def seed_store(root: Path, server: str | None, *, own: bool = True, **kb: Any) -> Store:
    """seed-docs/ seeded through the CLI into a Milvus Lite file below ``root/conf``, or
    on ``server`` into collections of a prefix of their own."""
    if server is None:
        config = write_config(root / "conf", own=own, **kb)
        store = Store(root, config, root / "conf" / "store" / "milvus.db")
    else:
        collection = f"t{next(_prefixes)}"
        milvus = {"uri": server, "collection": collection, **kb.pop("milvus", {})}
        config = write_config(root / "conf", own=own, milvus=milvus, **kb)
        store = Store(root, config, server, collection=collection)
    store.first_seed = run = seed_cli(root, config)
    assert run.code == 0, run.out + run.err
    return store


def clone(store: Store, root: Path) -> Store:
    """A copy of ``store`` under ``root``: its config and Milvus Lite folder; on a
    server, its config seeded into collections of another prefix."""
    shutil.copytree(store.config.parent, root / "conf")
    config = root / "conf" / "ragsnap.yaml"
    if not store.server:
        return Store(root, config, root / "conf" / "store" / "milvus.db")
    data = json.loads(config.read_text(encoding="utf-8"))
    data["kb"]["milvus"]["collection"] = collection = f"t{next(_prefixes)}"
    config.write_text(json.dumps(data) + "\n", encoding="utf-8")
    run = seed_cli(root, config)
    assert run.code == 0, run.out + run.err
    return Store(root, config, store.uri, run, collection)


@pytest.fixture(scope="module", params=MODES)
def seeded(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Store:
    """The repository's seed-docs/ seeded through the CLI (``own``: Milvus's own
    analyzers), on a Milvus Lite file or the loopback server; never opened in this
    process."""
    root = tmp_path_factory.mktemp(f"milvus-seeded-{request.param}")
    return seed_store(root, server_uri(request, request.param))


@pytest.fixture(scope="module")
def kb(seeded: Store, tmp_path_factory: pytest.TempPathFactory) -> Iterator[MilvusKnowledgeBase]:
    """The seeded store, read-only and open in this process: a copy of the Milvus Lite
    file (one process at a time), the server's collections themselves."""
    store = seeded if seeded.server else clone(seeded, tmp_path_factory.mktemp("milvus-kb"))
    with store.open() as opened:
        yield opened


# -- seeding the repository's documents through the CLI ---------------------------------------


def test_cli_seeds_the_repo_docs_into_the_configured_uri(seeded: Store) -> None:
    run = seeded.first_seed
    assert run is not None
    assert run.code == 0, run.out + run.err
    assert summary(run) == f"{REPO_SOURCES} added, 0 updated, 0 unchanged, 0 removed"
    assert f"; {REPO_SOURCES} documents, {REPO_CHUNKS} chunks in " in run.out
    assert "Traceback" not in run.err
    assert f" chunks in {seeded.uri} (" in run.out
    if seeded.server:  # nothing local, and the prefix's collections on the server
        assert not (seeded.config.parent / "store").exists()
        with seeded.open() as kb:
            names = set(kb._client.list_collections())
        assert {f"{seeded.collection}_{r}" for r in ("chunks", "documents", "meta")} <= names
        assert f"{seeded.collection}_probe" not in names  # what the server takes: dropped
    else:  # kb.milvus.uri is relative to the config file's folder, not to the working folder
        assert isinstance(seeded.uri, Path) and seeded.uri.is_dir()
    assert not (seeded.root / "store").exists()
    assert not (seeded.root / ".ragsnap").exists()


def test_cli_reseed_of_unchanged_docs_writes_nothing(seeded: Store) -> None:
    run = seed_cli(seeded.root, seeded.config)
    assert run.code == 0, run.err
    assert summary(run) == f"0 added, 0 updated, {REPO_SOURCES} unchanged, 0 removed"
    assert "  added:" not in run.out and "  updated:" not in run.out


def test_store_holds_documents_chunks_and_settings(kb: MilvusKnowledgeBase) -> None:
    docs = load_seed_docs(SEED_DOCS)
    stored = kb.documents()
    assert set(stored) == {d.source for d in docs}
    assert {s: i.chunk_count for s, i in stored.items()} == {
        d.source: len(chunk_document(d, SETTINGS)) for d in docs
    }
    assert kb.count() == REPO_CHUNKS == len(rows_by_chunk(kb))
    billing = stored[OTHER_TEAM]
    assert (billing.kb_scope, billing.category, billing.breadcrumb, billing.doc_id) == (
        "other-team",
        "database",
        "Database > MySQL > Connection Pool > Billing",
        "doc-billing-db-pool-tuning",
    )
    assert billing.metadata["keywords"] == [
        "connection pool",
        "leak detection",
        "ERR-4031",
        "Druid",
    ]
    assert {i.kb_scope for s, i in stored.items() if s != OTHER_TEAM} == {"rag-eval"}
    meta = kb.read_meta()
    assert Fingerprint.from_json(json.loads(meta["embedder"])) == HashingEmbedder().fingerprint
    assert meta["tokenizer"] == TOKENIZER.name
    assert meta["chunking"] == SETTINGS.fingerprint()
    # analyzer: auto picks jieba, because the corpus holds Chinese
    assert meta["analyzer"] == kb.analyzer == "jieba"
    assert meta["milvusTokenizer"] == kb.tokenizer == "jieba"
    assert (meta["stemmer"], meta["stopWords"]) == ("none", "english")
    assert (kb.stemmer, kb.stop_words) == (None, True)
    chunk = kb.chunks([rows_by_chunk(kb)["mysql-connection-pool#2"]])
    (stored_chunk,) = chunk.values()
    assert stored_chunk.heading is not None and "ERR-4031" in stored_chunk.heading
    assert stored_chunk.tokens == tuple(TOKENIZER.tokens(stored_chunk.text))
    (lean,) = kb.chunks([stored_chunk.row], tokens=False).values()  # tokens not read
    assert lean.tokens is None and lean == dataclasses.replace(stored_chunk, tokens=None)


# -- searches --------------------------------------------------------------------------------


def test_rankings_are_the_search_lists_cut_at_a_depth_of_targets(
    kb: MilvusKnowledgeBase,
) -> None:
    """The deep-ranking reads give ``cut_ranking`` of the same search's refs."""
    text = "connection pool timeout"
    tokens = TOKENIZER.tokens(text)
    vector = HashingEmbedder().embed_query(text)
    lexical = [r for r, _ in kb.lexical_search(tokens, Filter(), 1000, text)]
    vectors = [r for r, _ in kb.vector_search(vector, Filter(), 1000)]
    for distinct in ("chunk_id", "doc_id", "source"):
        for depth in (1, 3, 1000):
            for rows, got in (
                (lexical, kb.lexical_ranking(tokens, Filter(), 1000, distinct, depth, text)),
                (vectors, kb.vector_ranking(vector, Filter(), 1000, distinct, depth)),
            ):
                refs = kb.refs(rows)
                assert got == cut_ranking([refs[r] for r in rows], distinct, depth)
                assert len(got.refs) >= min(depth, 1)


def test_lexical_search_orders_by_bm25_and_ties_by_chunk_id(kb: MilvusKnowledgeBase) -> None:
    query = "What does ERR-4031 from OrderRepository mean?"
    hits = kb.lexical_search(TOKENIZER.tokens(query), Filter(kb_scope="rag-eval"), 50, query)
    chunks = kb.chunks([r for r, _ in hits])
    assert chunks[hits[0][0]].chunk_id == "mysql-connection-pool#2"
    assert all(score > 0 for _, score in hits)
    keys = [(-score, chunks[row].chunk_id) for row, score in hits]
    assert keys == sorted(keys)
    assert kb.lexical_search(["nowhereword"], Filter(), 10, "nowhereword") == []
    assert kb.lexical_search(["mysql"], Filter(), 0, "mysql") == []
    assert kb.lexical_search([], Filter(), 10, "   ") == []
    # without the query text the tokens are joined and analysed
    assert kb.lexical_search(["orderrepository"], Filter(), 10)[0][0] == hits[0][0]


def test_vector_search_is_the_embedded_stores_cosine(kb: MilvusKnowledgeBase) -> None:
    embedder = HashingEmbedder()
    query = embedder.embed_query("hikari maximum pool size per pod")
    hits = kb.vector_search(query, Filter(), 1000)
    assert len(hits) == REPO_CHUNKS
    chunks = kb.chunks([r for r, _ in hits])
    texts = [chunks[r].text for r, _ in hits]
    expected = exact_cosines(embedder.embed_documents(texts, []), query)
    scores = [s for _, s in hits]
    assert scores == expected  # exact on any CPU: the encoded vectors' integer arithmetic
    float_cosines = embedder.embed_documents(texts, []) @ query
    np.testing.assert_allclose(scores, float_cosines, atol=1e-3)  # encoding costs < 1e-3
    keys = [(-score, chunks[row].chunk_id) for row, score in hits]
    assert keys == sorted(keys)
    assert kb.vector_search(query, Filter(), 3) == hits[:3]
    assert kb.vector_search(query, Filter(), 0) == []
    rows = [r for r, _ in hits[:5]]
    assert kb.similarities(query, rows) == pytest.approx(scores[:5], abs=5e-7)


@pytest.mark.parametrize(
    "query",
    [
        "Druid removeAbandoned removeAbandonedTimeout billing batch",
        "What does ERR-4031 from OrderRepository mean?",
        "leak-detection-threshold 300000 ms",
        "HikariCP maximum-pool-size 40 partitions",
    ],
)
def test_rag_eval_scope_never_returns_the_other_teams_document(
    kb: MilvusKnowledgeBase, query: str
) -> None:
    rag_eval = Filter(kb_scope="rag-eval")
    assert OTHER_TEAM not in lexical(kb, query, rag_eval)
    assert OTHER_TEAM not in vector(kb, query, rag_eval)
    # the store does hold it, and the query finds it where the scope admits it
    other = Filter(kb_scope="other-team")
    assert lexical(kb, query, other) == vector(kb, query, other) == {OTHER_TEAM}
    assert OTHER_TEAM in lexical(kb, query) | vector(kb, query)


POOLS = {"mysql-connection-pool", "mysql-connection-pool-payment", OTHER_TEAM}
MYSQL = POOLS | {"mysql-replication-lag", "mysql-slow-query-log"}
FILTER_CASES = [
    (Filter(breadcrumb_prefix="Database > MySQL"), MYSQL),
    (Filter(kb_scope="rag-eval", breadcrumb_prefix="Database > MySQL"), MYSQL - {OTHER_TEAM}),
    (Filter(breadcrumb_prefix="Database > MySQL > Connection Pool"), POOLS),
    (Filter(breadcrumb_prefix=" Database>MySQL >  Connection Pool "), POOLS),
    (Filter(breadcrumb_prefix="Database > My"), set()),
    (Filter(breadcrumb_prefix="Database > MySQL > Connection"), set()),
    (Filter(breadcrumb_prefix="Data"), set()),
    (
        Filter(breadcrumb_prefix="Database > MySQL > Connection Pool > Payment Service"),
        {"mysql-connection-pool-payment"},
    ),
    (Filter(breadcrumb_prefix="缓存 > Redis"), {"redis-cache-avalanche-zh"}),
    (Filter(breadcrumb_prefix="Messaging > Kafka"), {"kafka-consumer-lag", "kafka-topic-naming"}),
    (
        Filter(category="messaging"),
        {
            "kafka-consumer-lag",
            "kafka-topic-naming",
            "kafka-consumer-rebalance-zh",
            "rocketmq-retry-dlq",
        },
    ),
    (Filter(category="messag"), set()),
    (Filter(kb_scope="other-team", category="database"), {OTHER_TEAM}),
    (Filter(kb_scope="other-team", category="cache"), set()),
    (
        Filter(kb_scope="rag-eval", category="database", breadcrumb_prefix="Database > MySQL"),
        MYSQL - {OTHER_TEAM},
    ),
]


def filter_id(flt: Filter) -> str:
    return json.dumps(flt.to_json(), ensure_ascii=False)


@pytest.mark.parametrize(
    ("flt", "expected"), FILTER_CASES, ids=[filter_id(f) for f, _ in FILTER_CASES]
)
def test_category_and_breadcrumb_filters_are_segment_wise(
    kb: MilvusKnowledgeBase, flt: Filter, expected: set[str]
) -> None:
    # vector search ranks every admitted chunk: exactly the expected documents
    hits = kb.vector_search(HashingEmbedder().embed_query("connection pool"), flt, 1000)
    assert sources_of(kb, hits) == expected
    stored = kb.documents()
    assert len(hits) == sum(stored[s].chunk_count for s in expected)
    # lexical search of words from every corpus document stays inside the same set
    words = "mysql connection pool kafka redis consumer 缓存 消费者 lag retry"
    found = lexical(kb, words, flt)
    assert found <= expected
    assert bool(found) == bool(expected)


def test_chinese_query_finds_the_chinese_document_lexically(kb: MilvusKnowledgeBase) -> None:
    for query, source in [
        ("缓存雪崩怎么预防", "redis-cache-avalanche-zh"),
        ("消费者重平衡", "kafka-consumer-rebalance-zh"),
    ]:
        hits = kb.lexical_search(TOKENIZER.tokens(query), Filter(kb_scope="rag-eval"), 5, query)
        assert hits, query
        chunks = kb.chunks([r for r, _ in hits])
        assert chunks[hits[0][0]].source == source
        assert {chunks[r].source for r, _ in hits} == {source}  # no other document has the words


def test_punctuation_matches_nothing(kb: MilvusKnowledgeBase) -> None:
    """Neither FTS5 over ragsnap's tokens nor Milvus's analyzers index punctuation: a
    question mark must not find every chunk with a `?` (SQL placeholders, questions)."""
    for text in ["?", "？", "-", ". , ; :", "。，、"]:
        assert kb.lexical_search(TOKENIZER.tokens(text), Filter(), 10, text) == [], text
    # the golden no-answer case k8s-noanswer-ingress-tls: one chunk mentions TLS, and the
    # slow query log's `WHERE id = ?` must not be found through the question mark
    query = "How do I renew the TLS certificate on the ingress controller?"
    assert lexical(kb, query, Filter(kb_scope="rag-eval")) == {"log-retention-policy"}


def test_doc_frequencies_count_ragsnap_tokens(kb: MilvusKnowledgeBase) -> None:
    chunks = kb.chunks(list(rows_by_chunk(kb).values()))
    words = ["hikari", "4031", "雪崩", "nowhereword", "hikari"]
    df, total = kb.doc_frequencies(words)
    assert total == REPO_CHUNKS
    assert df == {w: sum(w in c.tokens for c in chunks.values()) for w in dict.fromkeys(words)}
    assert df["nowhereword"] == 0 and df["雪崩"] > 0


# -- the pipeline on top: L0 hints and the unfiltered fallback ------------------------------


@pytest.fixture(scope="module", params=MODES)
def default_stores(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Store:
    """seed-docs/ seeded through the CLI with the default settings into Milvus (a Milvus
    Lite file or the loopback server; analyzer ragsnap: Milvus's BM25 over ragsnap's
    stemmed tokens) and into an embedded store, ``ROOT/kb.sqlite``."""
    root = tmp_path_factory.mktemp(f"milvus-default-{request.param}")
    store = seed_store(root, server_uri(request, request.param), own=False)
    run = run_cli("seed", "--kb", "kb.sqlite", "--seed-docs", str(SEED_DOCS), cwd=root)
    assert run.code == 0, run.out + run.err
    return store


@pytest.fixture(scope="module")
def default_kb(
    default_stores: Store, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[MilvusKnowledgeBase]:
    """The default store, open in this process: a copy of a Milvus Lite file (one
    process at a time: the CLI tests keep using the original), the server's own."""
    store = default_stores
    if not store.server:
        store = clone(store, tmp_path_factory.mktemp("milvus-default-copy"))
    with store.open() as kb:
        yield kb


def test_the_default_analyzer_indexes_ragsnaps_tokens(
    default_kb: MilvusKnowledgeBase, default_stores: Store
) -> None:
    """analyzer ragsnap: the meta says so, Milvus Lite stems (through ragsnap's tokens),
    and its BM25 scores are the embedded store's (k1 1.5, b 0.75, the same idf). The
    tokens are split by the first tokenizer Milvus takes: Milvus Lite, file and server,
    refuses ``whitespace`` and takes ``standard`` (a Milvus 2.5 server takes both)."""
    meta = default_kb.read_meta()
    assert (meta["analyzer"], meta["tokenizer"]) == ("ragsnap", DEFAULT_TOKENIZER.name)
    assert default_kb.analyzer == "ragsnap"
    assert meta["milvusTokenizer"] == default_kb.tokenizer == "standard"
    fields = default_kb._client.describe_collection(f"{default_stores.collection}_chunks")
    (tokens,) = [f for f in fields["fields"] if f["name"] == "tokens"]
    assert json.loads(tokens["params"]["analyzer_params"]) == {"tokenizer": "standard"}
    # the index types (Milvus Lite does not report BM25's k1 and b, and its defaults are
    # the embedded backend's: the scores below cannot tell whether a server applies them)
    indexes = {
        name: default_kb._client.describe_index(f"{default_stores.collection}_chunks", name)
        for name in ("vector", "sparse")
    }
    assert (indexes["vector"]["index_type"], indexes["vector"]["metric_type"]) == (
        "FLAT",
        "COSINE",
    )
    assert (indexes["sparse"]["index_type"], indexes["sparse"]["metric_type"]) == (
        "SPARSE_INVERTED_INDEX",
        "BM25",
    )
    query = "connections leaking from pools"  # stems: connect, leak, pool
    hits = default_kb.lexical_search(DEFAULT_TOKENIZER.tokens(query), Filter(), 20, query)
    assert "mysql-connection-pool" in sources_of(default_kb, hits)
    with SqliteKnowledgeBase(default_stores.root / "kb.sqlite", create=False) as embedded:
        for case in load_cases(CASES).cases:
            tokens = DEFAULT_TOKENIZER.tokens(case.query)
            flt = Filter(kb_scope=case.kb_scope)
            mine = default_kb.lexical_search(tokens, flt, 30, case.query)
            theirs = embedded.lexical_search(tokens, flt, 30)
            got = [(c.chunk_id, s) for c, s in with_chunks(default_kb, mine)]
            want = [(c.chunk_id, s) for c, s in with_chunks(embedded, theirs)]
            assert [c for c, _ in got] == [c for c, _ in want], case.id
            assert [s for _, s in got] == pytest.approx([s for _, s in want], rel=1e-5)


def with_chunks(
    kb: MilvusKnowledgeBase | SqliteKnowledgeBase, hits: Sequence[tuple[int, float]]
) -> list[tuple[StoredChunk, float]]:
    chunks = kb.chunks([row for row, _ in hits])
    return [(chunks[row], score) for row, score in hits]


def test_pipeline_results_match_the_committed_fixtures(default_kb: MilvusKnowledgeBase) -> None:
    """With the default analyzer every golden case takes the path its committed fixture
    shows (hints, attempts, fallback reasons) and returns the same evidence chunks in
    the same order: the fixtures are a snapshot of the embedded store, and Milvus
    ranks ragsnap's tokens with the same BM25."""
    pipeline = Pipeline(default_kb, HashingEmbedder(), DEFAULT_TOKENIZER, load_config(None).lookup)
    differ = []
    fallbacks = 0
    for case in load_cases(CASES).cases:
        fixture = json.loads((REPO / "fixtures" / f"{case.id}.json").read_text(encoding="utf-8"))
        want = fixture["lookupResult"]
        got = pipeline.lookup(
            case.query, kb_scope=case.kb_scope, top_k=case.top_k, record_latency=False
        )
        keys = ("l0Hints", "selectedAttempt", "fallbackReasons", "evidenceStatus")
        trace, expected = got["retrievalTrace"], want["retrievalTrace"]
        if any(trace[k] != expected[k] for k in keys):
            differ.append((case.id, {k: trace[k] for k in keys}, {k: expected[k] for k in keys}))
        blocks = [b["chunkId"] for b in got["evidenceBlocks"]]
        if blocks != [b["chunkId"] for b in want["evidenceBlocks"]]:
            differ.append((case.id, blocks, [b["chunkId"] for b in want["evidenceBlocks"]]))
        fallbacks += "filtered-weak" in expected["fallbackReasons"]
    assert differ == []
    assert fallbacks >= 3  # the comparison covers real fallbacks, not only filtered hits


def test_cli_lookup_falls_back_like_the_committed_fixture(seeded: Store) -> None:
    (case,) = [c for c in load_cases(CASES).cases if c.id == "db-decoy-pool-exhausted-fallback"]
    fixture = json.loads((REPO / "fixtures" / f"{case.id}.json").read_text(encoding="utf-8"))
    want = fixture["lookupResult"]["retrievalTrace"]
    assert want["selectedAttempt"] == "unfiltered" and want["fallbackReasons"] == ["filtered-weak"]
    result = lookup_result(
        lookup_cli(seeded.root, seeded.config, case.query, "--kb-scope", str(case.kb_scope))
    )
    trace = result["retrievalTrace"]
    assert trace["selectedAttempt"] == "unfiltered"
    assert trace["fallbackReasons"] == ["filtered-weak"]
    assert trace["l0Hints"] == want["l0Hints"]
    assert [a["name"] for a in trace["attempts"]] == ["filtered", "unfiltered"]
    assert trace["attempts"][1]["filter"] == {"kbScope": "rag-eval"}  # kb_scope is kept
    assert result["evidenceBlocks"][0]["source"] == case.expected_sources[0]


def test_cli_lookup_in_rag_eval_never_shows_the_other_teams_document(seeded: Store) -> None:
    query = "Druid removeAbandoned leak detection threshold billing"
    inside = lookup_cli(seeded.root, seeded.config, query, "--kb-scope", "rag-eval")
    result = lookup_result(inside)
    assert result["evidenceBlocks"]
    assert OTHER_TEAM not in inside.out  # not in evidence, context, hints or traces
    other = lookup_result(lookup_cli(seeded.root, seeded.config, query, "--kb-scope", "other-team"))
    assert {b["source"] for b in other["evidenceBlocks"]} == {OTHER_TEAM}


def test_cli_snapshot_writes_fixtures_that_score(default_stores: Store) -> None:
    """With the default analyzer Milvus's fixtures score as the committed ones do, and
    record the tokenizer Milvus splits ragsnap's tokens with: a fixture captured
    through another one would change."""
    root = default_stores.root
    out = root / "milvus-fixtures"
    config = default_stores.config
    base = ("--backend", "milvus", "--config", str(config), "--cases", str(CASES))
    run = run_cli("snapshot", *base, "--fixtures", str(out), "--retrieved-at", PINNED, cwd=root)
    assert run.code == 0, run.out + run.err  # every failing case is a knownFailure
    assert "30 new" in run.out and "wrote 30 fixture(s)" in run.out
    first = r"^30 cases: \d+ passed, \d+ expected failures \(knownFailure\), 0 failed"
    assert re.search(first, run.out, re.M), run.out
    report = json.loads((root / "reports" / "current.json").read_text(encoding="utf-8"))
    assert report["summary"]["cases"] == 30
    baseline = json.loads((REPO / "reports" / "baseline.json").read_text(encoding="utf-8"))
    assert report["summary"] == baseline["summary"]
    fixture = json.loads((out / "db-err-4031-order-repository.json").read_text(encoding="utf-8"))
    assert fixture["generator"]["backend"] == "milvus"
    assert fixture["generator"]["embedder"]["kind"] == "hashing"
    assert fixture["lookupResult"]["evidenceBlocks"][0]["source"] == "mysql-connection-pool"
    # lookups are deterministic: a second snapshot would change nothing
    check = run_cli("snapshot", *base, "--fixtures", str(out), "--check", "--skip-eval", cwd=root)
    assert check.code == 0, check.out + check.err
    assert "0 would change, 0 new, 30 unchanged" in check.out
    assert fixture["generator"]["settings"]["milvusTokenizer"] == "standard"
    fixture["generator"]["settings"]["milvusTokenizer"] = "whitespace"
    path = out / "db-err-4031-order-repository.json"
    path.write_text(json.dumps(fixture), encoding="utf-8")
    check = run_cli("snapshot", *base, "--fixtures", str(out), "--check", "--skip-eval", cwd=root)
    assert check.code != 0, check.out + check.err
    assert "1 would change, 0 new, 29 unchanged" in check.out, check.out


# -- refusals --------------------------------------------------------------------------------


def test_lookup_of_a_missing_store_exits_2(tmp_path: Path) -> None:
    config = write_config(tmp_path / "conf", milvus={"uri": "nowhere/milvus.db"})
    for command in (
        ("lookup", "pool"),
        ("snapshot", "--cases", str(CASES), "--fixtures", "fx"),
    ):
        run = run_cli(*command, "--backend", "milvus", "--config", str(config), cwd=tmp_path)
        assert_exit_2(run, "BackendError: ", "run `ragsnap seed --backend milvus` first")
        assert "nowhere/milvus.db" in run.err
    assert not (tmp_path / "conf" / "nowhere").exists()
    assert not (tmp_path / "fx").exists()


def test_lookup_of_a_store_without_the_collections_exits_2(seeded: Store, tmp_path: Path) -> None:
    uri = str(seeded.uri)
    config = write_config(tmp_path, milvus={"uri": uri, "collection": "elsewhere"})
    run = lookup_cli(tmp_path, config, "pool")
    assert_exit_2(
        run, "holds no ragsnap knowledge base", "elsewhere_meta", "ragsnap seed --backend milvus"
    )


@pytest.mark.parametrize(
    "command",
    [
        ("lookup", "pool"),
        ("seed", "--seed-docs", str(SEED_DOCS)),
        ("snapshot", "--cases", str(CASES), "--fixtures", "fx"),
    ],
    ids=["lookup", "seed", "snapshot"],
)
def test_kb_with_backend_milvus_exits_2(seeded: Store, command: tuple[str, ...]) -> None:
    run = run_cli(
        *command, "--backend", "milvus", "--config", str(seeded.config), "--kb", "kb.sqlite",
        cwd=seeded.root,
    )  # fmt: skip
    assert_exit_2(run, "UsageError: --kb names an embedded SQLite file", "drop --kb")
    assert not (seeded.root / "kb.sqlite").exists()
    assert not (seeded.root / "fx").exists()


def test_a_uri_that_is_not_a_lite_file_name_is_refused(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    write_doc(docs, "one", "Some words about pools.")
    config = write_config(tmp_path / "conf", milvus={"uri": "store/milvus"})
    run = seed_cli(tmp_path, config, docs=docs)
    assert_exit_2(run, "store/milvus", ".db")
    assert "one process" not in run.err  # not the locked-file advice


# -- one process at a time, and serving ------------------------------------------------------


@FILE_ONLY
def test_serve_answers_lookups_and_a_second_process_is_refused(
    seeded: Store, tmp_path: Path, serve: Callable[..., Served]
) -> None:
    store = clone(seeded, tmp_path)
    server = serve("--backend", "milvus", "--config", str(store.config), cwd=store.root)
    assert f"({REPO_CHUNKS} chunks)" in server.banner
    health = requests.get(server.base_url + "/api/health", timeout=30).json()
    assert (health["backend"], health["documents"], health["chunks"]) == (
        "milvus",
        REPO_SOURCES,
        REPO_CHUNKS,
    )
    answer = requests.post(
        server.base_url + "/api/knowledge/lookup",
        json={"query": "What does ERR-4031 from OrderRepository mean?", "kbScope": "rag-eval"},
        timeout=60,
    )
    assert answer.status_code == 200, answer.text
    blocks = answer.json()["lookupResult"]["evidenceBlocks"]
    assert blocks[0]["source"] == "mysql-connection-pool"
    assert OTHER_TEAM not in answer.text

    # while serve holds the Milvus Lite file, a second process cannot open it
    for run in (
        lookup_cli(store.root, store.config, "pool"),
        seed_cli(store.root, store.config),
    ):
        assert_exit_2(
            run,
            f"BackendError: {store.uri}",
            "cannot open the Milvus Lite file",
            "Milvus Lite lets one process use a file at a time",
            "`ragsnap serve`",
        )
    _, err = server.stop()
    assert "Traceback" not in err
    # stopped, it lets go of the file
    assert lookup_result(lookup_cli(store.root, store.config, "pool"))["evidenceBlocks"]


@FILE_ONLY
def test_close_lets_another_process_open_the_file(seeded: Store, tmp_path: Path) -> None:
    store = clone(seeded, tmp_path)
    kb = MilvusKnowledgeBase(str(store.uri), create=False)
    assert kb.count() == REPO_CHUNKS
    assert lookup_cli(store.root, store.config, "pool").code == 2  # held by this process
    kb.close()
    assert lookup_result(lookup_cli(store.root, store.config, "pool"))["evidenceBlocks"]


# -- writes through the CLI --------------------------------------------------------------------


def test_editing_and_deleting_docs_touch_only_those(
    seeded: Store, kb: MilvusKnowledgeBase, tmp_path: Path
) -> None:
    store = clone(seeded, tmp_path)
    docs = tmp_path / "docs"
    shutil.copytree(SEED_DOCS, docs)
    edited = docs / "kafka-topic-naming.md"
    edited.write_text(
        edited.read_text(encoding="utf-8") + "\nThe zanzibarword prefix is reserved.\n",
        encoding="utf-8",
    )
    run = seed_cli(store.root, store.config, docs=docs)
    assert run.code == 0, run.err
    assert summary(run) == f"0 added, 1 updated, {REPO_SOURCES - 1} unchanged, 0 removed"
    assert "  updated: kafka-topic-naming\n" in run.out

    (docs / "log-retention-policy.md").unlink()
    run = seed_cli(store.root, store.config, docs=docs)
    assert run.code == 0, run.err
    assert summary(run) == f"0 added, 0 updated, {REPO_SOURCES - 1} unchanged, 1 removed"
    assert "  removed: log-retention-policy\n" in run.out

    before = kb.documents()
    before_rows = rows_by_chunk(kb)
    with store.open() as after:
        stored = after.documents()
        assert set(stored) == set(before) - {"log-retention-policy"}
        changed = {s for s in stored if stored[s].index_hash != before[s].index_hash}
        assert changed == {"kafka-topic-naming"}
        rows = rows_by_chunk(after)
        untouched = {"kafka-topic-naming", "log-retention-policy"}
        keep = {c: r for c, r in before_rows.items() if c.split("#")[0] not in untouched}
        assert {c: r for c, r in rows.items() if c in keep} == keep  # same rows, same keys
        assert not any(c.startswith("log-retention-policy#") for c in rows)
        expected = sum(i.chunk_count for i in stored.values())
        assert after.count() == len(rows) == expected
        assert expected == REPO_CHUNKS - before["log-retention-policy"].chunk_count + (
            stored["kafka-topic-naming"].chunk_count - before["kafka-topic-naming"].chunk_count
        )
        assert lexical(after, "zanzibarword") == {"kafka-topic-naming"}
        query = "How many days are application logs retained?"
        assert "log-retention-policy" in lexical(kb, query)
        assert "log-retention-policy" not in lexical(after, query) | vector(after, query)
        assert after.doc_frequencies(["zanzibarword"]) == ({"zanzibarword": 1}, expected)


@pytest.mark.slow
def test_reindex_rebuilds_and_an_explicit_analyzer_must_match(
    seeded: Store, tmp_path: Path
) -> None:
    store = clone(seeded, tmp_path)
    standard = write_config(tmp_path / "standard", milvus=store.milvus(analyzer="standard"))
    jieba = write_config(tmp_path / "jieba", milvus=store.milvus(analyzer="jieba"))

    run = seed_cli(store.root, standard)
    assert_exit_2(run, "built with the jieba analyzer, not standard", "--reindex")
    assert summary(seed_cli(store.root, store.config)).endswith(
        f"{REPO_SOURCES} unchanged, 0 removed"
    )

    run = seed_cli(store.root, standard, "--reindex")
    assert run.code == 0, run.err
    assert rebuilt(run) == REPO_SOURCES
    assert f"{REPO_CHUNKS} chunks" in run.out
    with store.open() as kb:
        assert kb.read_meta()["analyzer"] == kb.analyzer == "standard"
        assert kb.read_meta()["milvusTokenizer"] == "standard"
        assert kb.count() == REPO_CHUNKS and len(kb.documents()) == REPO_SOURCES

    assert_exit_2(seed_cli(store.root, jieba), "built with the standard analyzer, not jieba")
    # analyzer: auto keeps what the store was built with
    run = seed_cli(store.root, store.config)
    assert summary(run) == f"0 added, 0 updated, {REPO_SOURCES} unchanged, 0 removed"
    run = seed_cli(store.root, jieba, "--reindex")
    assert rebuilt(run) == REPO_SOURCES
    with store.open() as kb:
        assert kb.read_meta()["analyzer"] == "jieba"


@pytest.mark.slow
@FILE_ONLY  # the store's own check: ~10 s a run; the server re-seeds in the test above
def test_other_embedder_dimension_needs_reindex(seeded: Store, tmp_path: Path) -> None:
    store = clone(seeded, tmp_path)
    small = write_config(
        tmp_path / "small",
        milvus=store.milvus(),
        embedder={"kind": "hashing", "dimension": 64},
    )
    run = seed_cli(store.root, small)
    assert_exit_2(run, "dimension 256", "dimension 64", "--reindex")
    assert_exit_2(lookup_cli(store.root, small, "pool"), "dimension 256", "--reindex")
    run = seed_cli(store.root, store.config)
    assert summary(run) == f"0 added, 0 updated, {REPO_SOURCES} unchanged, 0 removed"

    run = seed_cli(store.root, small, "--reindex")
    assert run.code == 0, run.err
    assert rebuilt(run) == REPO_SOURCES
    result = lookup_result(lookup_cli(store.root, small, "hikari maximum pool size"))
    assert result["evidenceBlocks"][0]["source"].startswith("mysql-connection-pool")
    assert_exit_2(lookup_cli(store.root, store.config, "pool"), "dimension 64", "--reindex")


# -- the analyzer for an English-only corpus, and writes through MilvusKnowledgeBase -----------


def write_corpus(folder: Path, version: str = "one") -> Path:
    for source, (scope, category, crumb) in DOCS.items():
        word = unique_word(source)
        write_doc(
            folder,
            source,
            f"What is {word}? The quartzshared overview of {source}, version {version}.\n\n"
            f"## Settings\n\nThe settings of {source} mention {word} and the tuning knobs.\n\n"
            f"## Errors\n\nThe errors of {source} list alarms, quartzshared and retries.",
            title=f"Title of {source}",
            category=category,
            kb_scope=scope,
            breadcrumb=crumb,
        )
    return folder


def test_auto_analyzer_is_standard_for_an_english_corpus(tmp_path: Path) -> None:
    """kb.milvus.uri defaults to .ragsnap/milvus.db in the working directory."""
    write_corpus(tmp_path / "docs")
    (tmp_path / "ragsnap.yaml").write_text(
        "kb: {analyzer: {stemmer: none}, milvus: {analyzer: auto}}\n", encoding="utf-8"
    )
    run = run_cli("seed", "--backend", "milvus", "--seed-docs", "docs", cwd=tmp_path)
    assert run.code == 0, run.err
    assert summary(run) == f"{len(DOCS)} added, 0 updated, 0 unchanged, 0 removed"
    uri = tmp_path / ".ragsnap" / "milvus.db"
    assert uri.is_dir()
    with MilvusKnowledgeBase(str(uri), create=False) as kb:
        assert kb.read_meta()["analyzer"] == kb.analyzer == "standard"
        assert kb.count() == 3 * len(DOCS)
        # stop words are not indexed: "what is the" matches nothing, as in FTS5
        assert kb.lexical_search([], Filter(), 10, "What is the") == []
        found = lexical(kb, "What is the quartzshared?")
        assert found == set(DOCS)
        hits = kb.lexical_search(["quartzshared"], Filter(), 100, "What is the quartzshared?")
        assert all("quartzshared" in c.tokens for c in kb.chunks([r for r, _ in hits]).values())


def seed_english(folder: Path) -> tuple[MilvusKnowledgeBase, Path]:
    """An English corpus seeded in this process with the standard analyzer."""
    docs = write_corpus(folder / "docs")
    store = MilvusKnowledgeBase(str(folder / "milvus.db"), analyzer="standard")
    seed(store, load_seed_docs(docs), HashingEmbedder(), TOKENIZER, SETTINGS)
    return store, docs


@pytest.fixture
def english(tmp_path: Path) -> Iterator[tuple[MilvusKnowledgeBase, Path]]:
    """A store of its own, to write to."""
    store, docs = seed_english(tmp_path)
    with store:
        yield store, docs


@pytest.fixture(scope="module")
def english_kb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MilvusKnowledgeBase]:
    """One store shared by the read-only tests."""
    store, _ = seed_english(tmp_path_factory.mktemp("milvus-english"))
    with store:
        yield store


def test_write_through_the_knowledge_base(english: tuple[MilvusKnowledgeBase, Path]) -> None:
    kb, docs = english
    stored = kb.documents()
    assert set(stored) == set(DOCS)
    assert stored["unscoped"].kb_scope is None
    assert stored["unscoped"].breadcrumb == "Database > MySQL > Pool"
    assert stored["mysql-pool"].title == "Title of mysql-pool"
    assert kb.count() == 3 * len(DOCS)
    generation = kb.read_meta()["generation"]
    rows = rows_by_chunk(kb)

    # unchanged: nothing written
    plan = seed(kb, load_seed_docs(docs), HashingEmbedder(), TOKENIZER, SETTINGS)
    assert plan.summary() == f"0 added, 0 updated, {len(DOCS)} unchanged, 0 removed"
    assert kb.read_meta()["generation"] == generation
    assert rows_by_chunk(kb) == rows

    # one edited document: only its rows change
    write_doc(docs, "kafka-lag", "Rewritten with brandnewword.\n\n## Only\n\nLag, quartzshared.",
              kb_scope="eval", category="messaging", breadcrumb="Messaging > Kafka")  # fmt: skip
    plan = seed(kb, load_seed_docs(docs), HashingEmbedder(), TOKENIZER, SETTINGS)
    assert (plan.added, plan.updated, plan.removed) == ((), ("kafka-lag",), ())
    assert kb.read_meta()["generation"] != generation
    after = rows_by_chunk(kb)
    assert {c: r for c, r in after.items() if not c.startswith("kafka-lag#")} == {
        c: r for c, r in rows.items() if not c.startswith("kafka-lag#")
    }
    assert sorted(c for c in after if c.startswith("kafka-lag#")) == ["kafka-lag#0", "kafka-lag#1"]
    assert lexical(kb, "brandnewword") == {"kafka-lag"}
    assert lexical(kb, unique_word("kafka-lag")) == set()
    assert kb.count() == 3 * len(DOCS) - 1

    # one deleted document: gone from documents, count and both searches
    word = unique_word("mysql-replica")
    assert lexical(kb, word) == {"mysql-replica"}
    (docs / "mysql-replica.md").unlink()
    plan = seed(kb, load_seed_docs(docs), HashingEmbedder(), TOKENIZER, SETTINGS)
    assert plan.removed == ("mysql-replica",)
    assert "mysql-replica" not in kb.documents()
    assert kb.count() == 3 * (len(DOCS) - 1) - 1
    assert lexical(kb, word) == set()
    assert "mysql-replica" not in vector(kb, f"{word} quartzshared")
    assert kb.doc_frequencies([word]) == ({word: 0}, kb.count())


def test_other_dimension_is_refused_until_reindex(
    english: tuple[MilvusKnowledgeBase, Path],
) -> None:
    kb, docs = english
    small = HashingEmbedder(dimension=64)
    with pytest.raises(BackendError, match="--reindex"):
        seed(kb, load_seed_docs(docs), small, TOKENIZER, SETTINGS)
    assert kb.count() == 3 * len(DOCS)
    kb.drop()  # what `seed --reindex` does before it writes
    assert kb.count() == 0 and kb.documents() == {} and kb.read_meta() == {}
    plan = seed(kb, load_seed_docs(docs), small, TOKENIZER, SETTINGS, reindex=True)
    assert sorted(plan.added) == sorted(DOCS)
    assert len(kb.vector_search(small.embed_query("quartzshared"), Filter(kb_scope="eval"), 5)) == 5
    with pytest.raises(BackendError, match="dimension 64"):
        kb.vector_search(HashingEmbedder().embed_query("quartzshared"), Filter(), 5)


@pytest.mark.parametrize(
    ("flt", "expected"),
    [
        (Filter(), set(DOCS)),
        (Filter(kb_scope="eval"), {"mysql-pool", "mysql-root", "mysql-replica", "kafka-lag"}),
        (Filter(kb_scope="nope"), set()),
        (
            Filter(breadcrumb_prefix="Database > MySQL"),
            {"mysql-pool", "mysql-root", "other-pool", "unscoped"},
        ),
        (Filter(kb_scope="eval", breadcrumb_prefix="Database>MySQL"), {"mysql-pool", "mysql-root"}),
        (Filter(breadcrumb_prefix="Database > MySQLReplica"), {"mysql-replica"}),
        (Filter(breadcrumb_prefix="Database > My"), set()),
        (Filter(breadcrumb_prefix="Database > MySQL > Po"), set()),
        (Filter(kb_scope="other", category="messaging"), set()),
    ],
)
def test_english_filters_agree_in_both_searches(
    english_kb: MilvusKnowledgeBase, flt: Filter, expected: set[str]
) -> None:
    kb = english_kb
    assert lexical(kb, "quartzshared", flt) == expected
    assert vector(kb, "quartzshared", flt) == expected
    for source in DOCS:
        assert lexical(kb, unique_word(source), flt) == ({source} & expected)


def test_refs_are_the_identities_of_chunks(kb: MilvusKnowledgeBase) -> None:
    rows = list(rows_by_chunk(kb).values())
    chunks = kb.chunks(rows)
    refs = kb.refs(rows[:7])
    assert set(refs) == set(rows[:7])
    for row, ref in refs.items():
        chunk = chunks[row]
        assert (ref.chunk_id, ref.doc_id, ref.source) == (
            chunk.chunk_id,
            chunk.doc_id,
            chunk.source,
        )


# -- kb.analyzer: stop words and the stemmer -------------------------------------------------


def test_analyzer_params_put_the_stemmer_after_lowercase_and_stop_words() -> None:
    plain = analyzer_params("standard")
    assert plain["tokenizer"] == "standard"
    kinds = [f if isinstance(f, str) else f["type"] for f in plain["filter"]]
    assert kinds == ["lowercase", "stop"]
    stop = set(plain["filter"][1]["stop_words"])
    assert stop >= STOP_WORDS and {"?", "？", "。"} <= stop
    stemmed = analyzer_params("jieba", "english")
    assert stemmed == {
        "tokenizer": "jieba",
        "filter": [*plain["filter"], {"type": "stemmer", "language": "english"}],
    }
    kept = set(analyzer_params("standard", stop_words=False)["filter"][1]["stop_words"])
    assert not kept & STOP_WORDS and "?" in kept  # punctuation is never indexed


@FILE_ONLY
def test_a_stemmer_with_a_milvus_lite_file_is_refused(seeded: Store, tmp_path: Path) -> None:
    """Milvus Lite 3.2 takes Milvus's stemmer filter in a schema and ignores it: a
    stemmer there is refused before anything is created, not left to silently not stem."""
    why = ("Milvus Lite", "does not apply Milvus's stemmer filter", "Milvus server", "ragsnap")
    config = write_config(tmp_path / "new", analyzer={"stemmer": "english"})
    assert_exit_2(seed_cli(tmp_path, config), *why)
    assert not (tmp_path / "new" / "store" / "milvus.db").exists()  # only seed's lock file
    existing = write_config(
        tmp_path / "existing", milvus={"uri": str(seeded.uri)}, analyzer={"stemmer": "english"}
    )
    assert_exit_2(lookup_cli(tmp_path, existing, "connections"), *why)
    basque = write_config(tmp_path / "basque", analyzer={"stemmer": "basque"})
    assert_exit_2(seed_cli(tmp_path, basque), "no 'basque' stemmer", "english, finnish")


def test_the_default_analyzer_takes_any_snowball_stemmer(tmp_path: Path) -> None:
    """With ``analyzer: ragsnap`` ragsnap stems the tokens Milvus indexes, so a language
    Milvus's own stemmer filter lacks (basque) works, on a Milvus Lite file too."""
    docs = tmp_path / "docs"
    write_doc(docs, "etxe", "Etxeak eta etxeetan dago liburua.")
    config = write_config(tmp_path / "conf", own=False, analyzer={"stemmer": "basque"})
    run = seed_cli(tmp_path, config, docs=docs)
    assert run.code == 0, run.out + run.err
    with MilvusKnowledgeBase(str(tmp_path / "conf" / "store" / "milvus.db"), create=False) as kb:
        meta = kb.read_meta()
        assert (meta["analyzer"], meta["tokenizer"]) == ("ragsnap", "bigram-v1+snowball-basque")
        stemmed = get_tokenizer("bigram", "basque")
        hits = kb.lexical_search(stemmed.tokens("etxe"), Filter(), 5)
        assert sources_of(kb, hits) == {"etxe"}


@pytest.fixture
def pretend_lite_stems(monkeypatch: pytest.MonkeyPatch) -> None:
    """Let Milvus Lite build collections with the stemmer filter, which it ignores: for
    how the analyzer is recorded and checked, never for what stemming finds."""
    monkeypatch.setattr(milvus_backend, "_lite_stems", lambda: True)


@pytest.mark.usefixtures("pretend_lite_stems")
def test_milvus_lite_ignores_the_stemmer_filter(tmp_path: Path) -> None:
    """Why the stemmer is refused with Milvus Lite: the filter is in the collection's
    analyzer and recorded in the meta collection, and still "connections" does not find
    "connection". When this fails, Milvus Lite stems: the refusal (``_lite_stems``) then
    lifts by itself, and this test should assert stemmed matching instead."""
    stemmed = get_tokenizer(stemmer="english")
    docs = tmp_path / "docs"
    write_doc(docs, "pool", "The connection pool hands out one connection per request.")
    write_doc(docs, "other", "Nothing about quartzshared here.")
    with MilvusKnowledgeBase(str(tmp_path / "milvus.db"), stemmer="english") as kb:
        seed(kb, load_seed_docs(docs), HashingEmbedder(), stemmed, SETTINGS)
        fields = kb._client.describe_collection("ragsnap_chunks")["fields"]
        (text,) = [f for f in fields if f["name"] == "text"]
        assert json.loads(text["params"]["analyzer_params"]) == analyzer_params(
            "standard", "english"
        )
        meta = kb.read_meta()
        assert (meta["analyzer"], meta["stemmer"], meta["tokenizer"]) == (
            "standard",
            "english",
            "bigram-v1+snowball-english",
        )
        assert kb.stemmer == "english"
        assert sources_of(kb, kb.lexical_search(["connect"], Filter(), 10, "connection")) == {
            "pool"
        }
        assert kb.lexical_search(["connect"], Filter(), 10, "connections") == []


@pytest.mark.usefixtures("pretend_lite_stems")
def test_a_store_built_without_the_stemmer_refuses_a_stemmed_one(tmp_path: Path) -> None:
    store, docs = seed_english(tmp_path)
    store.close()
    uri = str(tmp_path / "milvus.db")
    stemmed = get_tokenizer(stemmer="english")
    with MilvusKnowledgeBase(uri, stemmer="english", create=False) as kb:
        assert (kb.stemmer, kb.read_meta()["stemmer"]) == (None, "none")  # as it was built
        # seeding compares the tokenizer fingerprints, as the embedded store does
        with pytest.raises(BackendError, match=r"bigram-v1 tokenizer, not bigram-v1\+snowball"):
            seed(kb, load_seed_docs(docs), HashingEmbedder(), stemmed, SETTINGS)
        # and the store itself refuses to write under another analyzer
        with pytest.raises(BackendError) as refused:
            kb.write(WriteBatch(deletes=["kafka-lag"]))
        assert (
            "built with the standard analyzer with stemmer none and stopWords english, not "
            "the standard analyzer with stemmer english and stopWords english; run `ragsnap "
            "seed --backend milvus --reindex`"
        ) in str(refused.value)
        assert "kafka-lag" in kb.documents()
        kb.drop()  # what `seed --reindex` does before it writes
        seed(kb, load_seed_docs(docs), HashingEmbedder(), stemmed, SETTINGS, reindex=True)
        assert (kb.stemmer, kb.read_meta()["stemmer"]) == ("english", "english")
    with MilvusKnowledgeBase(uri, create=False) as plain:  # no stemmer configured
        assert plain.stemmer == "english"  # an existing collection keeps its analyzer
        with pytest.raises(BackendError, match=r"snowball-english tokenizer, not bigram-v1;"):
            seed(plain, load_seed_docs(docs), HashingEmbedder(), TOKENIZER, SETTINGS)
        with pytest.raises(BackendError, match=r"with stemmer english .* not .* stemmer none"):
            plain.write(WriteBatch(deletes=["kafka-lag"]))


def test_stop_words_none_indexes_them_in_milvus_too(tmp_path: Path) -> None:
    keep = get_tokenizer(stop_words=False)
    docs = write_corpus(tmp_path / "docs")
    with MilvusKnowledgeBase(str(tmp_path / "milvus.db"), stop_words=False) as kb:
        seed(kb, load_seed_docs(docs), HashingEmbedder(), keep, SETTINGS)
        assert (kb.read_meta()["stopWords"], kb.stop_words) == ("none", False)
        # every document begins "What is <word>?"; with stop words dropped this matches nothing
        hits = kb.lexical_search(keep.tokens("What is"), Filter(), 100, "What is")
        assert sources_of(kb, hits) == set(DOCS)
        assert kb.lexical_search([], Filter(), 10, "?") == []


def test_a_pinned_read_fetches_each_candidate_once(
    kb: MilvusKnowledgeBase, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every Milvus query is a round trip: inside ``pinned`` the identities and tokens
    of a lookup's candidates come in one query (refs, then term codes, then the shown
    chunks ask for each row once), with the same answers as outside."""
    tokens = ["connection", "pool", "kafka", "no-such-token", "lag"]
    rows = [r for r, _ in kb.lexical_search(tokens, Filter(), 20)]
    assert len(rows) > 3
    expected = (kb.refs(rows), kb.matched_terms(tokens, rows), kb.chunks(rows[:3]))
    queries: list[str] = []
    real = kb._client.query

    def counted(collection: str, **kw: Any) -> Any:
        queries.append(collection)
        return real(collection, **kw)

    monkeypatch.setattr(kb._client, "query", counted)
    with kb.pinned() as generation:
        assert generation == kb.read_meta().get("generation", "0")
        queries.clear()
        got = (kb.refs(rows), kb.matched_terms(tokens, rows), kb.chunks(rows[:3]))
        chunk_queries = [q for q in queries if q.endswith("chunks")]
        assert len(chunk_queries) == 2  # identities + tokens once, the shown texts once
        again = (kb.refs(rows), kb.matched_terms(tokens, rows), kb.chunks(rows[:3]))
    assert got == again == expected
    queries.clear()
    assert (kb.refs(rows), kb.matched_terms(tokens, rows)) == expected[:2]
    assert len([q for q in queries if q.endswith("chunks")]) == 2  # unpinned: one each


# -- what a Milvus server takes: asked, and its refusals with the fix --------------------------


def test_a_servers_refusals_are_backend_errors_naming_it_and_the_fix(
    milvus_server: MilvusLiteServer, tmp_path: Path
) -> None:
    """What the server takes is asked with a throwaway collection: Milvus Lite's server
    refuses the whitespace tokenizer and names the ones it has; an RPC it lacks
    (``run_analyzer``) is a BackendError naming the server and the call, not a crash."""
    with MilvusKnowledgeBase(milvus_server.uri, collection="probing") as kb:
        refusal, _ = kb._probe({"tokenizer": "whitespace"})
        # Milvus Lite 3.2: "unknown tokenizer type: 'whitespace' (supported: 'standard', 'jieba')"
        assert refusal is not None and "whitespace" in refusal and "'standard'" in refusal
        assert kb._probe({"tokenizer": "standard"}) == (None, "unknown")
        # it takes the stemmer filter in a schema, and does not stem
        assert kb._probe(analyzer_params("standard", "english"), "english") == (None, "ignores")
        assert "probing_probe" not in kb._client.list_collections()
        with pytest.raises(BackendError) as refused:
            kb._client.run_analyzer("connections", analyzer_params={"tokenizer": "standard"})
    message = str(refused.value)
    assert message.startswith(f"{milvus_server.uri}: the Milvus server refused run_analyzer (")
    assert "Milvus 2.5 or later" in message


def test_a_stemmer_the_server_ignores_is_refused_before_anything_is_written(
    milvus_server: MilvusLiteServer, tmp_path: Path
) -> None:
    """analyzer standard with kb.analyzer.stemmer on a server whose stemmer filter does
    nothing (Milvus Lite's): exit 2 with the fix, not an index that silently does not
    stem; the default analyzer (ragsnap stems) on the same server seeds."""
    docs = tmp_path / "docs"
    write_doc(docs, "pool", "The connection pool hands out one connection per request.")
    milvus = {"uri": milvus_server.uri, "collection": "stemmed", "analyzer": "standard"}
    config = write_config(tmp_path / "conf", milvus=milvus, analyzer={"stemmer": "english"})
    run = seed_cli(tmp_path, config, docs=docs)
    assert_exit_2(
        run,
        f"BackendError: {milvus_server.uri}: the Milvus server takes Milvus's stemmer filter "
        "and does not apply it",
        "kb.milvus.analyzer: ragsnap",
        "kb.analyzer.stemmer: none",
    )
    with MilvusKnowledgeBase(milvus_server.uri, collection="stemmed") as kb:
        names = set(kb._client.list_collections())
        assert {"stemmed_chunks", "stemmed_probe"}.isdisjoint(names)
        assert kb.documents() == {}
    ours = write_config(
        tmp_path / "ours",
        own=False,
        milvus={"uri": milvus_server.uri, "collection": "ours"},
        analyzer={"stemmer": "english"},
    )
    run = seed_cli(tmp_path, ours, docs=docs)
    assert run.code == 0, run.out + run.err
    result = lookup_result(lookup_cli(tmp_path, ours, "connections"))
    assert [b["source"] for b in result["evidenceBlocks"]] == ["pool"]

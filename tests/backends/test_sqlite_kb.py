"""The embedded SQLite knowledge base, filled through ``ragsnap.kb.seeding.seed``.

Real SQLite files in tmp_path, no mocks. Every corpus is written here as
Markdown files with a frontmatter header.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import sqlite3
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conftest import require_numba
from ragsnap.errors import BackendError
from ragsnap.kb.backends import (
    CodedStore,
    Filter,
    GatheredRefs,
    Upload,
    WriteBatch,
    cut_ranking,
)
from ragsnap.kb.backends import sqlite as sqlite_backend
from ragsnap.kb.backends.sqlite import SqliteKnowledgeBase
from ragsnap.kb.corpus import ChunkSettings, chunk_document, load_seed_docs
from ragsnap.kb.embedders import Fingerprint, HashingEmbedder
from ragsnap.kb.seeding import index_hash, seed
from ragsnap.kb.text import get_tokenizer

from .conftest import DOCS, exact_cosines, unique_word, write_doc

SETTINGS = ChunkSettings()
TOKENIZER = get_tokenizer()


def body_of(source: str, version: str = "one") -> str:
    word = unique_word(source)
    return (
        f"Intro of {source}: {word} quartzshared overview, version {version}.\n\n"
        f"## Settings\n\nThe settings section of {source} mentions {word} and tuning knobs.\n\n"
        f"## Errors\n\nThe errors section of {source} lists alarms, quartzshared and retries."
    )


def write_corpus(folder: Path) -> Path:
    for source, (scope, category, crumb) in DOCS.items():
        write_doc(
            folder,
            source,
            body_of(source),
            title=f"Title of {source}",
            category=category,
            kb_scope=scope,
            breadcrumb=crumb,
            keywords=f"[{source}, extra]",
        )
    return folder


def seed_folder(kb: SqliteKnowledgeBase, folder: Path, embedder: Any = None, **kw: Any) -> Any:
    docs = load_seed_docs(folder)
    return seed(kb, docs, embedder or HashingEmbedder(), TOKENIZER, SETTINGS, **kw)


@pytest.fixture
def docs_dir(tmp_path: Path) -> Path:
    return write_corpus(tmp_path / "docs")


@pytest.fixture
def kb(tmp_path: Path, docs_dir: Path) -> Iterator[SqliteKnowledgeBase]:
    with SqliteKnowledgeBase(tmp_path / "kb.sqlite") as store:
        seed_folder(store, docs_dir)
        yield store


def raw_rows(path: Path, sql: str) -> list[tuple[Any, ...]]:
    """Rows of ``sql`` through a separate connection (committed state only)."""
    with contextlib.closing(sqlite3.connect(path)) as db:
        return db.execute(sql).fetchall()


def snapshot(kb: SqliteKnowledgeBase) -> dict[str, Any]:
    """Everything a write could change, as the store and a second connection see it."""
    return {
        "documents": kb.documents(),
        "count": kb.count(),
        "meta": kb.read_meta(),
        "chunks": raw_rows(kb.path, "SELECT id, chunk_id, source, text, vector FROM chunks"),
        "fts": raw_rows(kb.path, "SELECT rowid, body FROM chunks_fts ORDER BY rowid"),
        "docs": raw_rows(kb.path, "SELECT * FROM documents ORDER BY source"),
        "rawMeta": raw_rows(kb.path, "SELECT key, value FROM meta ORDER BY key"),
    }


def sources_of(kb: SqliteKnowledgeBase, hits: Sequence[tuple[int, float]]) -> set[str]:
    chunks = kb.chunks([row for row, _ in hits])
    return {chunks[row].source for row, _ in hits}


def lexical(kb: SqliteKnowledgeBase, text: str, flt: Filter | None = None) -> set[str]:
    return sources_of(kb, kb.lexical_search(TOKENIZER.tokens(text), flt or Filter(), 100))


# -- what a seed stores --------------------------------------------------------------


def rewrite_kafka_lag(docs_dir: Path) -> None:
    """Edit one document: another intro (with ``brandnewword``) and one section."""
    write_doc(
        docs_dir,
        "kafka-lag",
        "Rewritten intro with brandnewword.\n\n## Only section\n\nConsumers lag, quartzshared.",
        category="messaging",
        kb_scope="eval",
        breadcrumb="Messaging > Kafka",
    )


def test_seed_stores_documents_chunks_and_settings(kb: SqliteKnowledgeBase, docs_dir: Path) -> None:
    docs = load_seed_docs(docs_dir)
    stored = kb.documents()
    assert set(stored) == set(DOCS)
    expected_chunks = {d.source: len(chunk_document(d, SETTINGS)) for d in docs}
    assert {s: info.chunk_count for s, info in stored.items()} == expected_chunks
    assert kb.count() == sum(expected_chunks.values()) == 3 * len(DOCS)
    pool = stored["mysql-pool"]
    assert (pool.kb_scope, pool.category, pool.breadcrumb, pool.title) == (
        "eval",
        "database",
        "Database > MySQL > Pool",
        "Title of mysql-pool",
    )
    assert pool.metadata == {"keywords": ["mysql-pool", "extra"]}
    assert stored["unscoped"].kb_scope is None
    assert stored["unscoped"].breadcrumb == "Database > MySQL > Pool"
    meta = kb.read_meta()
    assert Fingerprint.from_json(json.loads(meta["embedder"])) == (HashingEmbedder().fingerprint)
    assert meta["tokenizer"] == TOKENIZER.name
    assert meta["chunking"] == SETTINGS.fingerprint()
    assert "generation" in meta
    chunk_ids = [r[0] for r in raw_rows(kb.path, "SELECT chunk_id FROM chunks ORDER BY id")]
    assert "mysql-pool#0" in chunk_ids and len(set(chunk_ids)) == len(chunk_ids)
    # the frontmatter is metadata only: its words are not indexed
    assert lexical(kb, "Title") == set()


def test_reseed_unchanged_writes_nothing(kb: SqliteKnowledgeBase, docs_dir: Path) -> None:
    before = snapshot(kb)
    plan = seed_folder(kb, docs_dir)
    assert not plan.changes
    assert sorted(plan.unchanged) == sorted(DOCS)
    assert plan.summary() == f"0 added, 0 updated, {len(DOCS)} unchanged, 0 removed"
    assert kb.read_meta()["generation"] == before["meta"]["generation"]
    assert snapshot(kb) == before


def test_editing_one_file_updates_only_that_source(kb: SqliteKnowledgeBase, docs_dir: Path) -> None:
    others_sql = "SELECT id, chunk_id, text, vector FROM chunks WHERE source != 'kafka-lag'"
    others = raw_rows(kb.path, others_sql)
    old_hashes = {s: info.index_hash for s, info in kb.documents().items()}
    generation = kb.read_meta()["generation"]
    rewrite_kafka_lag(docs_dir)
    plan = seed_folder(kb, docs_dir)
    assert (plan.added, plan.updated, plan.removed) == ((), ("kafka-lag",), ())
    assert kb.read_meta()["generation"] != generation
    assert raw_rows(kb.path, others_sql) == others  # same rows, ids, chunk ids, vectors
    stored = kb.documents()
    assert stored["kafka-lag"].chunk_count == 2
    assert stored["kafka-lag"].index_hash != old_hashes["kafka-lag"]
    assert {s: i.index_hash for s, i in stored.items() if s != "kafka-lag"} == {
        s: h for s, h in old_hashes.items() if s != "kafka-lag"
    }
    assert kb.count() == 3 * len(DOCS) - 1
    assert lexical(kb, "brandnewword") == {"kafka-lag"}
    assert lexical(kb, unique_word("kafka-lag")) == set()
    assert raw_rows(kb.path, "SELECT chunk_id FROM chunks WHERE source = 'kafka-lag'") == [
        ("kafka-lag#0",),
        ("kafka-lag#1",),
    ]


def test_deleting_a_file_removes_document_chunks_and_fts_rows(
    kb: SqliteKnowledgeBase, docs_dir: Path
) -> None:
    word = unique_word("mysql-replica")
    assert lexical(kb, word) == {"mysql-replica"}
    (docs_dir / "mysql-replica.md").unlink()
    plan = seed_folder(kb, docs_dir)
    assert (plan.added, plan.updated, plan.removed) == ((), (), ("mysql-replica",))
    assert "mysql-replica" not in kb.documents()
    assert raw_rows(kb.path, "SELECT count(*) FROM chunks WHERE source = 'mysql-replica'") == [(0,)]
    assert kb.count() == 3 * (len(DOCS) - 1)
    assert raw_rows(kb.path, "SELECT count(*) FROM chunks_fts") == [(kb.count(),)]
    orphans = "SELECT count(*) FROM chunks_fts WHERE rowid NOT IN (SELECT id FROM chunks)"
    assert raw_rows(kb.path, orphans) == [(0,)]
    assert lexical(kb, word) == set()
    assert kb.doc_frequencies([word]) == ({word: 0}, kb.count())
    vec = HashingEmbedder().embed_query(f"{word} quartzshared")
    assert "mysql-replica" not in sources_of(kb, kb.vector_search(vec, Filter(), 100))


# -- atomic writes ----------------------------------------------------------------------


class FailingEmbedder:
    """The hashing embedder, except that its ``fail_on``-th document call raises."""

    def __init__(self, fail_on: int):
        self.inner = HashingEmbedder()
        self.fail_on = fail_on
        self.calls = 0

    @property
    def fingerprint(self) -> Fingerprint:
        return self.inner.fingerprint

    def embed_documents(self, texts: Sequence[str], ids: Sequence[str]) -> Any:
        self.calls += 1
        if self.calls == self.fail_on:
            raise RuntimeError("embedding service went away")
        return self.inner.embed_documents(texts, ids)

    def embed_query(self, text: str) -> Any:
        return self.inner.embed_query(text)


def test_embedder_failing_on_third_document_leaves_previous_kb(
    kb: SqliteKnowledgeBase, docs_dir: Path
) -> None:
    before = snapshot(kb)
    # a batch with a delete, an update and three additions
    (docs_dir / "mysql-root.md").unlink()
    write_doc(docs_dir, "kafka-lag", "Changed body with changedword.", kb_scope="eval")
    for n in range(3):
        write_doc(docs_dir, f"new-{n}", f"New doc {n} with freshword{n} text.", kb_scope="eval")
    staged: list[str] = []
    embedder = FailingEmbedder(fail_on=3)
    with pytest.raises(RuntimeError, match="went away"):
        seed_folder(kb, docs_dir, embedder, on_upload=lambda up: staged.append(up.document.source))
    assert len(staged) == 2  # two documents were written inside the transaction
    assert snapshot(kb) == before
    assert lexical(kb, "freshword0 freshword1 changedword") == set()
    assert lexical(kb, unique_word("mysql-root")) == {"mysql-root"}
    # the store is still usable: the same import with a working embedder goes through
    plan = seed_folder(kb, docs_dir)
    assert sorted(plan.added) == ["new-0", "new-1", "new-2"]
    assert (plan.updated, plan.removed) == (("kafka-lag",), ("mysql-root",))
    assert lexical(kb, "freshword1") == {"new-1"}


def make_upload(folder: Path, source: str, body: str) -> Upload:
    path = write_doc(folder, source, body, kb_scope="eval")
    (doc,) = [d for d in load_seed_docs(folder) if d.path == str(path)]
    chunks = chunk_document(doc, SETTINGS)
    vectors = HashingEmbedder().embed_documents([c.text for c in chunks], [])
    tokens = [" ".join(TOKENIZER.tokens(c.text)) for c in chunks]
    return Upload(doc, index_hash(doc, SETTINGS), chunks, tokens, vectors)


def test_uploads_iterable_raising_midway_rolls_everything_back(
    kb: SqliteKnowledgeBase, tmp_path: Path
) -> None:
    before = snapshot(kb)
    extra = tmp_path / "extra"
    first = make_upload(extra, "staged-one", "Staged document with stagedword.")
    replacing = make_upload(extra, "mysql-pool", "Replacement body with replacedword.")

    def uploads() -> Iterator[Upload]:
        yield first
        yield replacing
        raise OSError("disk went away")

    batch = WriteBatch(deletes=["kafka-lag"], uploads=uploads(), meta={"embedder": "changed"})
    with pytest.raises(OSError, match="disk went away"):
        kb.write(batch)
    assert snapshot(kb) == before
    assert lexical(kb, "stagedword replacedword") == set()
    assert lexical(kb, unique_word("kafka-lag")) == {"kafka-lag"}
    # and a good batch afterwards commits
    kb.write(WriteBatch(deletes=["kafka-lag"], uploads=[first], meta={}))
    assert lexical(kb, "stagedword") == {"staged-one"}
    assert "kafka-lag" not in kb.documents()


# -- lexical search ---------------------------------------------------------------------


def test_lexical_search_finds_a_unique_word(kb: SqliteKnowledgeBase) -> None:
    word = unique_word("mysql-pool")
    hits = kb.lexical_search([word], Filter(), 10)
    chunks = kb.chunks([r for r, _ in hits])
    assert {chunks[r].chunk_id for r, _ in hits} == {"mysql-pool#0", "mysql-pool#1"}
    assert all(score > 0 for _, score in hits)
    assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)
    assert kb.lexical_search(["nowhereword"], Filter(), 10) == []
    assert kb.lexical_search([word], Filter(), 0) == []
    assert kb.lexical_search([], Filter(), 10) == []
    assert len(kb.lexical_search(["quartzshared"], Filter(), 3)) == 3


FILTER_CASES = [
    (Filter(), set(DOCS)),
    (Filter(kb_scope="eval"), {"mysql-pool", "mysql-root", "mysql-replica", "kafka-lag"}),
    (Filter(kb_scope="other"), {"other-pool"}),
    (Filter(kb_scope="nope"), set()),
    (Filter(category="messaging"), {"kafka-lag"}),
    (Filter(kb_scope="eval", category="database"), {"mysql-pool", "mysql-root", "mysql-replica"}),
    (Filter(kb_scope="other", category="messaging"), set()),
    (
        Filter(breadcrumb_prefix="Database > MySQL"),
        {"mysql-pool", "mysql-root", "other-pool", "unscoped"},
    ),
    (Filter(kb_scope="eval", breadcrumb_prefix="Database>MySQL"), {"mysql-pool", "mysql-root"}),
    (Filter(kb_scope="eval", breadcrumb_prefix="Database > MySQL > Pool"), {"mysql-pool"}),
    (Filter(breadcrumb_prefix="Database > MySQLReplica"), {"mysql-replica"}),
    (Filter(breadcrumb_prefix="Database > My"), set()),
    (Filter(breadcrumb_prefix="Database > MySQL > Po"), set()),
    (Filter(breadcrumb_prefix="Database"), set(DOCS) - {"kafka-lag"}),
    (Filter(breadcrumb_prefix="Data"), set()),
    (
        Filter(kb_scope="eval", category="database", breadcrumb_prefix="Database > MySQL"),
        {"mysql-pool", "mysql-root"},
    ),
]


@pytest.mark.parametrize(("flt", "expected"), FILTER_CASES)
def test_lexical_search_respects_filters(
    kb: SqliteKnowledgeBase, flt: Filter, expected: set[str]
) -> None:
    assert lexical(kb, "quartzshared", flt) == expected
    # a document's own unique word is found only when the filter admits it
    for source in DOCS:
        assert lexical(kb, unique_word(source), flt) == ({source} & expected)


@pytest.mark.parametrize(
    ("prefix", "expected"),
    [
        ("Database > MySQL >", {"mysql-pool", "mysql-root"}),
        ("Database >  > MySQL", {"mysql-pool", "mysql-root"}),
        ("> Database > MySQL", {"mysql-pool", "mysql-root"}),
        (" Database>MySQL ", {"mysql-pool", "mysql-root"}),
        ("", {"mysql-pool", "mysql-root", "mysql-replica", "kafka-lag"}),
    ],
)
def test_lexical_and_vector_search_agree_on_prefix_spelling(
    kb: SqliteKnowledgeBase, prefix: str, expected: set[str]
) -> None:
    """Stored breadcrumbs are normalised (empty segments dropped, ``""`` is no breadcrumb);
    one Filter must admit the same documents in both searches."""
    flt = Filter(kb_scope="eval", breadcrumb_prefix=prefix)
    vector = HashingEmbedder().embed_query("quartzshared")
    assert lexical(kb, "quartzshared", flt) == expected
    assert sources_of(kb, kb.vector_search(vector, flt, 1000)) == expected


@pytest.mark.parametrize(
    "query",
    [
        '"',
        '""',
        '"quartzshared',
        "quartzshared AND",
        "AND",
        "OR NOT",
        "*",
        "quartzshared*",
        "NEAR(",
        "NEAR(quartzshared, 2)",
        "-",
        "-quartzshared",
        "^quartzshared",
        "body:quartzshared",
        "{body}: x",
        "(",
        ")",
        "'",
        "a'b\"c",
    ],
)
def test_fts_syntax_in_queries_does_not_crash(kb: SqliteKnowledgeBase, query: str) -> None:
    # raw strings straight to the store, as one token and as whitespace-split tokens
    for tokens in ([query], query.split(), TOKENIZER.tokens(query)):
        hits = kb.lexical_search(tokens, Filter(kb_scope="eval"), 10)
        assert all(isinstance(r, int) for r, _ in hits)
    if "quartzshared" in TOKENIZER.tokens(query):
        assert lexical(kb, query, Filter(kb_scope="eval")) == {
            "mysql-pool",
            "mysql-root",
            "mysql-replica",
            "kafka-lag",
        }


# -- vector search ----------------------------------------------------------------------


def test_vector_search_is_cosine_ordered(kb: SqliteKnowledgeBase) -> None:
    embedder = HashingEmbedder()
    query = embedder.embed_query(f"{unique_word('kafka-lag')} settings tuning knobs")
    hits = kb.vector_search(query, Filter(), 1000)
    assert len(hits) == kb.count()
    scores = [s for _, s in hits]
    assert scores == sorted(scores, reverse=True)
    chunks = kb.chunks([r for r, _ in hits])
    texts = [chunks[r].text for r, _ in hits]
    expected = exact_cosines(embedder.embed_documents(texts, []), query)
    assert scores == expected  # exact on any CPU: the encoded vectors' integer arithmetic
    float_cosines = embedder.embed_documents(texts, []) @ query
    np.testing.assert_allclose(scores, float_cosines, atol=1e-3)  # encoding costs < 1e-3
    assert chunks[hits[0][0]].chunk_id == "kafka-lag#1"
    assert kb.similarities(query, [r for r, _ in hits[:5]]) == pytest.approx(scores[:5], abs=5e-7)
    top3 = kb.vector_search(query, Filter(), 3)
    assert top3 == hits[:3]
    assert kb.vector_search(query, Filter(), 0) == []


@pytest.mark.parametrize(("flt", "expected"), FILTER_CASES)
def test_vector_search_respects_filters(
    kb: SqliteKnowledgeBase, flt: Filter, expected: set[str]
) -> None:
    query = HashingEmbedder().embed_query("quartzshared overview")
    hits = kb.vector_search(query, flt, 1000)
    assert sources_of(kb, hits) == expected
    assert len(hits) == 3 * len(expected)
    scores = [s for _, s in hits]
    assert scores == sorted(scores, reverse=True)
    # a limit below the admitted count keeps the best admitted rows
    if expected:
        assert kb.vector_search(query, flt, 2) == hits[:2]


# -- doc frequencies, dimension, opening ------------------------------------------------


def test_doc_frequencies(kb: SqliteKnowledgeBase) -> None:
    words = ["quartzshared", unique_word("mysql-pool"), "settings", "nowhereword", "quartzshared"]
    df, total = kb.doc_frequencies(words)
    assert total == kb.count()
    # quartzshared: every intro and every errors section; the unique word: intro and settings
    assert df == {
        "quartzshared": 2 * len(DOCS),
        unique_word("mysql-pool"): 2,
        "settings": len(DOCS),
        "nowhereword": 0,
    }
    assert kb.doc_frequencies([]) == ({}, kb.count())


def test_doc_frequencies_count_accented_words(tmp_path: Path) -> None:
    """Tokens keep their accents; FTS5's unicode61 folds them in its vocabulary."""
    folder = tmp_path / "docs"
    write_doc(folder, "fr", "Le café est prêt.\n\n## Zwei\n\nDie Größe der Tabelle, café.")
    write_doc(folder, "en", "Plain english text.")
    with SqliteKnowledgeBase(tmp_path / "kb.sqlite") as store:
        seed_folder(store, folder)
        tokens = TOKENIZER.tokens("café prêt größe")
        assert lexical(store, "café") == {"fr"}  # lexical search finds the word ...
        df, total = store.doc_frequencies(tokens)
        assert total == 3
        assert df == {"café": 2, "prêt": 1, "größe": 1}  # ... so its frequency is not 0


def test_other_embedder_dimension_needs_reindex(kb: SqliteKnowledgeBase, docs_dir: Path) -> None:
    before = snapshot(kb)
    small = HashingEmbedder(dimension=128)
    with pytest.raises(BackendError, match="--reindex") as info:
        seed_folder(kb, docs_dir, small)
    assert "dimension 256" in str(info.value) and "dimension 128" in str(info.value)
    assert snapshot(kb) == before
    plan = seed_folder(kb, docs_dir, small, reindex=True)
    assert sorted(plan.updated) == sorted(DOCS)
    assert (plan.added, plan.removed) == ((), ())
    assert '"dimension": 128' in kb.read_meta()["embedder"]
    assert kb.count() == before["count"]
    hits = kb.vector_search(small.embed_query("quartzshared"), Filter(kb_scope="eval"), 5)
    assert len(hits) == 5
    # after the reindex the old dimension is the one refused
    with pytest.raises(BackendError, match="--reindex"):
        seed_folder(kb, docs_dir)
    assert not seed_folder(kb, docs_dir, small).changes


def test_missing_file_without_create_raises(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "absent.sqlite"
    with pytest.raises(BackendError, match="run `ragsnap seed` first"):
        SqliteKnowledgeBase(path, create=False)
    assert not path.exists()


@pytest.mark.parametrize(
    "content",
    [b"this is not a database\n" * 300, b"SQLite format 3\x00" + b"\xff" * 8000],
    ids=["text", "bad-header"],
)
@pytest.mark.parametrize("create", [True, False])
def test_garbage_file_raises_delete_and_reseed(
    tmp_path: Path, content: bytes, create: bool
) -> None:
    path = tmp_path / "kb.sqlite"
    path.write_bytes(content)
    with pytest.raises(BackendError, match=r"delete it and run `ragsnap seed`"):
        SqliteKnowledgeBase(path, create=create)
    assert path.read_bytes() == content


def test_refs_are_the_identities_of_chunks(kb: SqliteKnowledgeBase) -> None:
    hits = kb.lexical_search(["the"], Filter(), 1000) or kb.vector_search(
        HashingEmbedder().embed_query("pool"), Filter(), 1000
    )
    rows = [r for r, _ in hits]
    chunks = kb.chunks(rows)
    refs = kb.refs([*reversed(rows), 10**9])  # any order; an unknown row is left out
    assert set(refs) == set(rows)
    for row, ref in refs.items():
        chunk = chunks[row]
        assert (ref.chunk_id, ref.doc_id, ref.source) == (
            chunk.chunk_id,
            chunk.doc_id,
            chunk.source,
        )


@pytest.mark.parametrize("kernel", ["numpy", "compiled"])
def test_rankings_are_the_search_lists_cut_at_a_depth_of_targets(
    tmp_path: Path, docs_dir: Path, kernel: str
) -> None:
    """``lexical_ranking`` / ``vector_ranking`` give what ``cut_ranking`` makes of the
    refs of the same search's rows (counted on numbers, not objects, by either
    kernel), for every kind of target, depths below, at and above the targets found,
    and under a filter."""
    if kernel == "compiled":
        require_numba()
    kb = SqliteKnowledgeBase(tmp_path / f"{kernel}.sqlite", kernel=kernel)
    seed_folder(kb, docs_dir)
    vector = HashingEmbedder().embed_query("connection pool timeout")
    tokens = TOKENIZER.tokens("quartzshared settings errors retries")
    for flt in (Filter(), Filter(kb_scope="eval")):
        for limit in (3, 10, 10_000):
            lexical = [r for r, _ in kb.lexical_search(tokens, flt, limit)]
            vectors = [r for r, _ in kb.vector_search(vector, flt, limit)]
            assert lexical and vectors
            for distinct in ("chunk_id", "doc_id", "source"):
                for depth in (1, 2, 3, 5, 1000):
                    for rows, got in (
                        (lexical, kb.lexical_ranking(tokens, flt, limit, distinct, depth)),
                        (vectors, kb.vector_ranking(vector, flt, limit, distinct, depth)),
                    ):
                        refs = kb.refs(rows)
                        assert got == cut_ranking([refs[r] for r in rows], distinct, depth)
                        assert got.found == len(rows)
    every = kb.lexical_ranking(tokens, Filter(), 10_000, "source", 10_000)
    assert every.targets == len({ref.source for ref in every.refs}) > 1
    assert kb.lexical_ranking(["nosuchtokenanywhere"], Filter(), 10, "source", 5) == (
        [],
        0,
        0,
    )
    with pytest.raises(ValueError, match="distinct must be"):
        kb.lexical_ranking(tokens, Filter(), 10, "title", 5)
    kb.close()


def test_a_ranking_s_refs_are_gathered_when_read_and_keep_their_state(
    kb: SqliteKnowledgeBase,
) -> None:
    """A deep ranking's refs are positions until read (``GatheredRefs``); read after a
    write that removed some of them, they are still the ranking's state (a generation's
    table is never changed), and they compare as the list of the same refs."""
    tokens = TOKENIZER.tokens("quartzshared")
    ranking = kb.lexical_ranking(tokens, Filter(), 100, "source", 100)
    assert isinstance(ranking.refs, GatheredRefs)
    count = len(ranking.refs)  # no gathering needed
    assert ranking.refs._refs is None
    expected = [kb.refs([r])[r] for r, _ in kb.lexical_search(tokens, Filter(), 100)]
    assert "kafka-lag" in {ref.source for ref in expected}
    kb.write(WriteBatch(deletes=["kafka-lag"]))
    assert "kafka-lag" not in {
        ref.source for ref in kb.lexical_ranking(tokens, Filter(), 100, "source", 100).refs
    }
    assert ranking.refs == expected and expected == ranking.refs
    assert list(ranking.refs) == expected and len(ranking.refs) == count
    assert ranking.refs[0] == expected[0] and ranking.refs[-2:] == expected[-2:]
    assert ranking.refs != tuple(expected) and ranking.refs != expected[1:]
    assert repr(ranking.refs) == f"GatheredRefs({expected!r})"


def test_chunks_without_tokens_leave_them_unread(kb: SqliteKnowledgeBase) -> None:
    """``tokens=False`` skips the index tokens (showing a chunk needs none); a chunk
    kept in memory without them is read again when they are asked for, the rest equal."""
    every = kb.vector_search(HashingEmbedder().embed_query("anything"), Filter(), 10_000)
    rows = [r for r, _ in every]
    lean = kb.chunks(rows, tokens=False)
    assert len(lean) == kb.count()
    assert all(c.tokens is None and c.token_set is None for c in lean.values())
    full = kb.chunks(rows)  # from the file again, with the tokens
    for row, chunk in full.items():
        assert chunk.tokens is not None and chunk.token_set == frozenset(chunk.tokens)
        assert dataclasses.replace(chunk, tokens=None) == lean[row]
    # kept with their tokens now: a read without asking for them returns them too
    assert kb.chunks(rows, tokens=False) == full


@pytest.mark.parametrize("tokens", [True, False])
def test_chunks_read_from_memory_follow_a_write(
    kb: SqliteKnowledgeBase, docs_dir: Path, tokens: bool
) -> None:
    """Chunks are kept in memory per generation: a write by another process makes the
    next read see the new text, and a removed chunk is gone; a read pinned to the
    generation before the write still shows that generation's chunks."""
    every = kb.vector_search(HashingEmbedder().embed_query("anything"), Filter(), 10_000)
    rows = [r for r, _ in every]
    before = kb.chunks(rows, tokens=tokens)
    assert len(before) == kb.count()
    assert kb.chunks(rows, tokens=tokens) == before  # the second read: from memory
    with kb.pinned():
        rewrite_kafka_lag(docs_dir)
        with SqliteKnowledgeBase(kb.path) as other:  # another writer of the same file
            seed_folder(other, docs_dir)
        if not tokens:  # made from the pinned generation's memory, the file unread
            assert kb.chunks(rows, tokens=False) == before
    after = kb.chunks(rows, tokens=tokens)
    assert set(after) < set(rows)  # the old kafka-lag rows were deleted
    new_rows = [r for r, _ in kb.lexical_search(["brandnewword"], Filter(), 10)]
    assert "brandnewword" in kb.chunks(new_rows, tokens=tokens)[new_rows[0]].text


def test_chunks_shown_are_made_without_reading_the_file(kb: SqliteKnowledgeBase) -> None:
    """A chunk shown (no tokens) is made from the index's memory: once the index of
    the generation is loaded, reading every chunk runs no statement on the file's
    chunks, and gives what the file holds; asking for the tokens reads them."""
    rows = [r for (r,) in raw_rows(kb.path, "SELECT id FROM chunks ORDER BY id DESC")]
    expected = join_read(kb.path, rows)
    kb.lexical_search(["quartzshared"], Filter(), 5)  # loads the index of this generation
    ran = count_queries(kb)
    with kb.pinned():
        assert chunk_fields(kb.chunks(rows, tokens=False)) == expected
    assert not [sql for sql in ran if "chunks" in sql]
    assert chunk_fields(kb.chunks(rows[:3])) == {r: expected[r] for r in rows[:3]}
    assert [sql for sql in ran if "chunks" in sql]


def test_receipts_are_kept_beside_the_documents_not_in_meta(
    kb: SqliteKnowledgeBase, tmp_path: Path
) -> None:
    assert kb.read_receipts(["receipt:a"]) == {}  # an older file: no table yet, none stored
    generation = kb.read_meta()["generation"]
    kb.write_receipts({"receipt:a": "1", "record:s": "2"})
    assert kb.read_meta()["generation"] == generation  # receipts alone: no new generation
    assert kb.read_receipts(["receipt:a", "record:s", "record:t"]) == {
        "receipt:a": "1",
        "record:s": "2",
    }
    assert not [k for k in kb.read_meta() if ":" in k]
    kb.write(WriteBatch(("kafka-lag",), receipts={"record:kafka-lag": ""}))
    assert kb.read_receipts(["record:kafka-lag"]) == {"record:kafka-lag": ""}
    many = {f"k{i}": str(i) for i in range(1200)}  # more keys than one query takes
    kb.write_receipts(many)
    assert kb.read_receipts(sorted(many)) == many


@pytest.mark.parametrize("kernel", ["numpy", "compiled"])
def test_matched_terms_are_the_query_terms_each_chunk_holds(
    tmp_path: Path, docs_dir: Path, kernel: str
) -> None:
    """The bit codes read from the postings equal the ones read from the stored chunks'
    tokens (what lexical coverage read before), for found rows and others alike."""
    if kernel == "compiled":
        require_numba()
    kb = SqliteKnowledgeBase(tmp_path / f"{kernel}.sqlite", kernel=kernel)
    seed_folder(kb, docs_dir)
    tokens = ["pool", "connection", "no-such-term", "kafka", "pool", "lag", "maximum"]
    rows = [r for r, _ in kb.lexical_search(tokens, Filter(), 50)] + [1, 2, 3]
    codes = kb.matched_terms(tokens, rows)
    distinct = list(dict.fromkeys(tokens))
    chunks = kb.chunks(rows)
    for row in rows:
        expected = sum(1 << i for i, t in enumerate(distinct) if t in chunks[row].token_set)
        assert codes[row] == expected, row
    assert len(set(codes.values())) > 1  # rows hold different subsets
    kb.close()


@pytest.mark.parametrize("kernel", ["numpy", "compiled"])
def test_matched_terms_of_a_query_longer_than_a_code(tmp_path: Path, kernel: str) -> None:
    """A pasted paragraph has more distinct tokens than an int64 code has bits: every
    term still gets its bit, inside a pinned read and outside."""
    if kernel == "compiled":
        require_numba()
    words = [f"word{i:03d}" for i in range(150)]
    docs = tmp_path / "docs"
    for d in range(6):
        write_doc(docs, f"doc-{d}", " ".join(words[d * 20 : d * 20 + 50]), kb_scope="eval")
    kb = SqliteKnowledgeBase(tmp_path / f"{kernel}.sqlite", kernel=kernel)
    seed_folder(kb, docs)
    tokens = ["missing-1", *reversed(words[:140]), "missing-2", *words[:10]]
    distinct = list(dict.fromkeys(tokens))
    assert len(distinct) == 142
    rows = [r for r, _ in kb.lexical_search(tokens, Filter(), 50)]
    chunks = kb.chunks(rows)
    expected = {
        row: sum(1 << i for i, t in enumerate(distinct) if t in chunks[row].token_set)
        for row in rows
    }
    assert kb.matched_terms(tokens, rows) == expected
    with kb.pinned():
        assert [r for r, _ in kb.lexical_search(tokens, Filter(), 50)] == rows
        assert kb.matched_terms(tokens, rows) == expected
    assert max(code.bit_length() for code in expected.values()) > 64  # bits beyond 63
    kb.close()


@pytest.mark.parametrize("kernel", ["numpy", "compiled"])
def test_a_pinned_read_answers_as_the_whole_index_does(
    tmp_path: Path, docs_dir: Path, kernel: str
) -> None:
    """Inside ``pinned`` the term codes of the rows a search found come from what the
    search kept: the same answers as outside, for the list, a part of it and others,
    with tokens the index lacks shifting the bits, and a deep list kept nowhere."""
    if kernel == "compiled":
        require_numba()
    kb = SqliteKnowledgeBase(tmp_path / f"{kernel}.sqlite", kernel=kernel)
    seed_folder(kb, docs_dir)
    queries = [
        ["pool", "connection", "kafka", "lag"],
        ["no-such-term", "pool", "maximum", "other-missing", "lag", "pool"],
        ["the", "consumer"],
    ]
    for tokens in queries:
        for limit in (5, 300):
            outside = kb.lexical_search(tokens, Filter(), limit)
            rows = [r for r, _ in outside]
            others = [*rows, 1, 2, 3]
            expected = (kb.refs(rows), kb.matched_terms(tokens, rows))
            expected_others = kb.matched_terms(tokens, others)
            backwards = list(reversed(tokens))
            expected_backwards = kb.matched_terms(backwards, rows)
            distinct = list(dict.fromkeys(tokens))  # as a lookup asks
            assert kb.matched_terms(distinct, rows) == expected[1]
            with kb.pinned() as generation:
                assert generation == kb.generation() == kb.read_meta()["generation"]
                assert kb.lexical_search(tokens, Filter(), limit) == outside
                assert kb.matched_terms(distinct, rows) == expected[1]
                assert kb.matched_terms(distinct, rows[::-1][:3]) == {
                    r: expected[1][r] for r in rows[::-1][:3]
                }
                assert (kb.refs(rows), kb.matched_terms(tokens, rows)) == expected
                assert kb.matched_terms(tokens, others) == expected_others
                assert kb.matched_terms(tokens, rows[::-1][:3]) == {
                    r: expected[1][r] for r in rows[::-1][:3]
                }  # a part of the list, in another order (a reranked head)
                assert kb.matched_terms(backwards, rows) == expected_backwards
                # the list's codes as one array (``CodedStore``): only for that list
                kept = kb.found_term_codes(distinct, rows)
                assert kept is not None or not rows or len(rows) > sqlite_backend._PINNED_FOUND
                if kept is not None:
                    assert kept.tolist() == [expected[1][r] for r in rows]
                if len(rows) > 1:
                    assert kb.found_term_codes(distinct, rows[::-1]) is None
                assert kb.found_term_codes(backwards, rows) is None
            assert kb.found_term_codes(distinct, rows) is None  # outside the pinned read
    assert isinstance(kb, CodedStore)
    kb.close()


def test_a_lookup_pinned_while_another_store_writes_reads_again(
    kb: SqliteKnowledgeBase, docs_dir: Path
) -> None:
    """A write by another process lands while a lookup holds its pinned index: the
    generation check afterwards sees it, and the lookup runs again on the new state,
    giving what a fresh pipeline gives."""
    from ragsnap.kb.pipeline import LookupSettings, Pipeline

    def pipeline() -> Pipeline:
        return Pipeline(kb, HashingEmbedder(), get_tokenizer(), LookupSettings())

    pipe = pipeline()
    before = pipe.lookup("brandnewword consumer lag", method="lexical", record_latency=False)
    real = pipe._lookup
    calls: list[str] = []

    def write_during_the_first(*args: Any) -> Any:
        calls.append(args[5])  # the pinned generation
        result = real(*args)
        if len(calls) == 1:
            rewrite_kafka_lag(docs_dir)
            with SqliteKnowledgeBase(kb.path) as other:
                seed_folder(other, docs_dir)
        return result

    pipe._lookup = write_during_the_first  # type: ignore[method-assign]
    after = pipe.lookup("brandnewword consumer lag", method="lexical", record_latency=False)
    assert len(calls) == 2 and calls[0] != calls[1] == kb.generation()
    fresh = pipeline().lookup("brandnewword consumer lag", method="lexical", record_latency=False)
    assert after == fresh != before
    assert "brandnewword" in after["evidenceBlocks"][0]["text"]


def test_a_lookup_after_another_store_wrote_reads_the_new_state(
    kb: SqliteKnowledgeBase, docs_dir: Path
) -> None:
    """A pinned read does not ask the file for its generation on the way in while its
    index is of the generation the file gave last. A write by another process since
    the previous lookup is seen by the lookup's own check afterwards: it reads again
    (one read wasted) and gives what a fresh pipeline gives; the next one reads once."""
    from ragsnap.kb.pipeline import LookupSettings, Pipeline

    def pipeline() -> Pipeline:
        return Pipeline(kb, HashingEmbedder(), get_tokenizer(), LookupSettings())

    query = "brandnewword consumer lag"
    pipe = pipeline()
    before = pipe.lookup(query, method="lexical", record_latency=False)
    old = kb.generation()
    real = pipe._lookup
    pinned: list[str] = []

    def record(*args: Any) -> Any:
        pinned.append(args[5])  # the pinned generation
        return real(*args)

    pipe._lookup = record  # type: ignore[method-assign]
    rewrite_kafka_lag(docs_dir)
    with SqliteKnowledgeBase(kb.path) as other:
        seed_folder(other, docs_dir)
        new = other.generation()
    after = pipe.lookup(query, method="lexical", record_latency=False)
    assert new != old and pinned == [old, new]
    fresh = pipeline().lookup(query, method="lexical", record_latency=False)
    assert after == fresh != before
    assert "brandnewword" in after["evidenceBlocks"][0]["text"]
    pinned.clear()
    assert pipe.lookup(query, method="lexical", record_latency=False) == after
    assert pinned == [new]


def join_read(path: Path, rows: Sequence[int]) -> dict[int, tuple[Any, ...]]:
    """Each row's chunk and document fields as one join through another connection
    (the reference the store's reads are compared with)."""
    marks = ",".join("?" * len(rows))
    with contextlib.closing(sqlite3.connect(path)) as db:
        got = db.execute(
            "SELECT c.id, c.chunk_id, c.source, c.ordinal, c.text, c.heading, d.doc_id, "
            "d.title, d.breadcrumb, d.category, d.kb_scope FROM chunks c JOIN documents d "
            f"ON d.source = c.source WHERE c.id IN ({marks})",
            list(rows),
        ).fetchall()
    return {r[0]: tuple(r) for r in got}


def chunk_fields(chunks: dict[int, Any]) -> dict[int, tuple[Any, ...]]:
    names = ("row", "chunk_id", "source", "ordinal", "text", "heading", "doc_id", "title")
    names += ("breadcrumb", "category", "kb_scope")
    return {row: tuple(getattr(c, n) for n in names) for row, c in chunks.items()}


@pytest.mark.parametrize("batch", [None, 4])
def test_chunks_carry_their_document_fields_as_the_file_joins_them(
    kb: SqliteKnowledgeBase, monkeypatch: pytest.MonkeyPatch, batch: int | None
) -> None:
    """Every chunk's fields are those a join of the file gives, with and without
    tokens, read cold and from the cache, in one statement or in several (``batch``
    rows each, the last one shorter)."""
    if batch is not None:
        monkeypatch.setattr(sqlite_backend, "_READ_BATCH", batch)
    rows = [r for (r,) in raw_rows(kb.path, "SELECT id FROM chunks ORDER BY id DESC")]
    expected = join_read(kb.path, rows)
    assert len(expected) == len(rows) > 10
    assert len(rows) % 4 != 0
    assert len({e[7] for e in expected.values()}) > 2  # titles, read from the file
    for tokens in (False, True, False):
        assert chunk_fields(kb.chunks(rows + rows[:2], tokens=tokens)) == expected


def test_a_chunk_of_a_document_written_since_the_index_is_left_out(
    kb: SqliteKnowledgeBase, docs_dir: Path
) -> None:
    """A document's fields come from the index the store reads under: when a write
    gave a row to a document the index does not know, the row is left out as gone
    (the lookup then reads again), never shown with another document's fields."""
    ((last,),) = raw_rows(kb.path, "SELECT source FROM chunks ORDER BY id DESC LIMIT 1")
    rows = [r for (r,) in raw_rows(kb.path, f"SELECT id FROM chunks WHERE source = '{last}'")]
    with kb.pinned():
        kb.lexical_search(["quartzshared"], Filter(), 5)  # the index of this generation
        (docs_dir / f"{last}.md").unlink()
        write_doc(docs_dir, "zz-newcomer", body_of("zz-newcomer"), category="ops")
        with SqliteKnowledgeBase(kb.path) as other:  # another writer of the same file
            seed_folder(other, docs_dir)
        now = dict(raw_rows(kb.path, "SELECT id, source FROM chunks"))
        reused = [r for r in rows if now.get(r) == "zz-newcomer"]
        assert reused  # the new document's chunks took the rows of the removed one
        assert set(kb.chunks(rows)).isdisjoint(reused)
    fresh = kb.chunks(rows)  # the index of the new generation knows the newcomer
    assert {fresh[r].source for r in reused} == {"zz-newcomer"}


@pytest.mark.parametrize("kernel", ["numpy", "compiled"])
def test_a_retry_under_a_wider_filter_finds_what_a_fresh_search_finds(
    tmp_path: Path, docs_dir: Path, kernel: str
) -> None:
    """A lookup searches its terms under the hinted category, then under the scope
    alone: the second selection starts from the first's limit-th score. Whatever came
    before, each search gives what a store that ran only it gives; filters are known
    to widen others only when their masks say so."""
    if kernel == "compiled":
        require_numba()
    kb = SqliteKnowledgeBase(tmp_path / f"{kernel}.sqlite", kernel=kernel)
    seed_folder(kb, docs_dir)
    fresh = SqliteKnowledgeBase(tmp_path / f"{kernel}.sqlite", kernel=kernel)
    tokens = TOKENIZER.tokens("quartzshared settings errors retries pool")
    narrow, scope, everything = (
        Filter(kb_scope="eval", category="database"),
        Filter(kb_scope="eval"),
        Filter(),
    )
    other = Filter(kb_scope="eval", category="messaging")
    for limit in (1, 2, 3, 5, 50):
        for sequence in ((narrow, scope), (narrow, everything), (narrow, other), (scope, narrow)):
            for flt in sequence:
                got = kb.lexical_search(tokens, flt, limit)
                assert got == fresh.lexical_search(tokens, flt, limit), (limit, sequence)
                with SqliteKnowledgeBase(kb.path, kernel=kernel) as alone:
                    assert got == alone.lexical_search(tokens, flt, limit)
    index = kb._index()
    assert index.covers(scope, narrow) and index.covers(everything, narrow)
    assert index.covers(everything, scope) and index.covers(narrow, narrow)
    assert not index.covers(other, narrow) and not index.covers(narrow, scope)
    kb.close()
    fresh.close()


def test_the_generation_follows_every_write_by_this_store_or_another(
    kb: SqliteKnowledgeBase, docs_dir: Path
) -> None:
    """``generation()`` asks the file again only when it changed (another connection
    committed, or this store wrote): each answer is the generation the file holds."""
    first = kb.generation()
    assert first == kb.read_meta()["generation"] == kb.generation()
    rewrite_kafka_lag(docs_dir)
    seed_folder(kb, docs_dir)  # this store writes: its own connection's data_version stays
    second = kb.generation()
    assert second != first
    assert second == kb.read_meta()["generation"]
    kb.write_receipts({"receipt:x": "1"})  # receipts alone: no new generation
    assert kb.generation() == second
    write_doc(docs_dir, "zz-late", body_of("zz-late"), category="ops")
    with SqliteKnowledgeBase(kb.path) as other:  # another connection writes
        seed_folder(other, docs_dir)
        third = other.generation()
    assert third not in (first, second)
    assert kb.generation() == third == kb.read_meta()["generation"]


def count_queries(kb: SqliteKnowledgeBase) -> list[str]:
    """Every statement ``kb``'s connection runs from now on."""
    ran: list[str] = []
    kb._db.set_trace_callback(ran.append)
    return ran


def test_a_generation_check_asks_the_file_only_after_a_commit(
    kb: SqliteKnowledgeBase, docs_dir: Path
) -> None:
    """While the wal-index header is the one taken before the last query, nothing was
    committed, and ``generation()`` answers without a query; every commit (by another
    connection, by this store, receipts alone) rewrites the header, and the next check
    asks the file: it never answers a generation the file no longer holds."""
    first = kb.generation()
    kb.generation()  # the header now stands beside the answer
    ran = count_queries(kb)
    for _ in range(5):
        assert kb.generation() == first
    assert ran == []
    write_doc(docs_dir, "zz-late", body_of("zz-late"), category="ops")
    with SqliteKnowledgeBase(kb.path) as other:
        seed_folder(other, docs_dir)
        second = other.generation()
    assert second != first
    assert kb.generation() == second  # asked: another connection committed
    assert len(ran) == 1
    assert kb.generation() == second and len(ran) == 1
    with sqlite3.connect(kb.path) as raw:  # a bare connection's commit, no ragsnap code
        raw.execute("UPDATE meta SET value = '999' WHERE key = 'generation'")
    assert kb.generation() == "999"
    kb.write_receipts({"receipt:y": "1"})  # this store's own commit, the same generation
    asked = len(ran)
    assert kb.generation() == "999" and len(ran) > asked
    asked = len(ran)
    assert kb.generation() == "999" and len(ran) == asked


def test_a_store_that_cannot_read_the_wal_index_asks_the_file_each_time(
    kb: SqliteKnowledgeBase, tmp_path: Path, docs_dir: Path
) -> None:
    """Without a wal-index to look at (another VFS, an exclusive lock: here a watch of
    a file that does not exist) every check is a query, and sees every commit."""
    kb.generation()
    kb._watch = sqlite_backend._WalWatch(tmp_path / "no-such-file.sqlite")
    ran = count_queries(kb)
    first = kb.generation()
    assert kb.generation() == first and len(ran) == 2
    with sqlite3.connect(kb.path) as raw:
        raw.execute("UPDATE meta SET value = '777' WHERE key = 'generation'")
    assert kb.generation() == "777"


def test_the_wal_index_header_is_told_only_when_whole_and_known() -> None:
    """Two equal, initialised copies of the known format give the header; a copy being
    rewritten, an uninitialised index, another format or a short read give nothing."""
    header = bytearray(48)
    header[:4] = (3007000).to_bytes(4, sys.byteorder)
    header[12] = 1
    header[16:20] = (42).to_bytes(4, sys.byteorder)  # frames in the log
    whole = bytes(header) * 2
    assert sqlite_backend.wal_header(whole) == bytes(header)
    moved = bytearray(header)
    moved[16] = 43
    assert sqlite_backend.wal_header(bytes(moved) + bytes(header)) is None
    blank = bytearray(header)
    blank[12] = 0
    assert sqlite_backend.wal_header(bytes(blank) * 2) is None
    other = bytearray(header)
    other[:4] = (3007001).to_bytes(4, sys.byteorder)
    assert sqlite_backend.wal_header(bytes(other) * 2) is None
    assert sqlite_backend.wal_header(whole[:60]) is None


def test_a_store_opened_through_a_symbolic_link_watches_the_file_itself(
    kb: SqliteKnowledgeBase, tmp_path: Path
) -> None:
    """SQLite keeps the wal-index beside the file a link points to: the watch reads that
    one, so a commit through the file's own name is seen through the link."""
    link = tmp_path / "linked.sqlite"
    link.symlink_to(kb.path)
    with SqliteKnowledgeBase(link, create=False) as linked:
        first = linked.generation()
        assert linked._watch is not None and linked._watch.header() is not None
        ran = count_queries(linked)
        linked.generation()
        linked.generation()
        assert len(ran) == 1  # the header stands beside the answer after one more query
        with sqlite3.connect(kb.path) as raw:
            raw.execute("UPDATE meta SET value = '555' WHERE key = 'generation'")
        assert first != "555" and linked.generation() == "555" and len(ran) == 2


def test_the_lookups_a_process_expects_choose_its_kernel(tmp_path: Path, docs_dir: Path) -> None:
    # a service (unbounded) compiles at any size, one lookup never: the same results
    require_numba()
    results = {}
    for count, kernel in ((math.inf, "numba"), (1, "numpy"), (None, "numpy")):
        store = SqliteKnowledgeBase(tmp_path / "kb.sqlite")
        try:
            if count is not None:
                store.expect_lookups(count)
            seed_folder(store, docs_dir)
            results[count] = store.lexical_search(["pool", "size"], Filter(), 5)
            assert store._index().kernel == kernel
        finally:
            store.close()
    assert results[math.inf] == results[1] == results[None] and results[1]

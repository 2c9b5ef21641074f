"""The in-memory BM25 scorer returns what SQLite FTS5's own ``bm25()`` returns.

``SqliteKnowledgeBase.lexical_search`` sums precomputed per-posting weights in
numpy; ``lexical_search_fts5`` runs the same OR query through FTS5 with SQL
filters. On a random corpus (Zipf-distributed words, repeated terms, Chinese
runs, near-duplicate chunks, three scopes, four categories) every query must
give the same rows in the same order and the same scores.
"""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest

from ragsnap.kb.backends import Filter
from ragsnap.kb.backends.sqlite import SqliteKnowledgeBase
from ragsnap.kb.corpus import ChunkSettings, load_seed_docs
from ragsnap.kb.embedders import HashingEmbedder
from ragsnap.kb.seeding import seed
from ragsnap.kb.text import get_tokenizer

WORDS = [f"w{i}" for i in range(400)]
CJK = "缓存雪崩数据库连接池消息队列重平衡"
SCOPES = ["eval", "eval", "other", None]
CATEGORIES = ["database", "cache", "messaging", "kubernetes"]


def zipf_word(rng: random.Random) -> str:
    return WORDS[min(int(rng.paretovariate(1.1)) - 1, len(WORDS) - 1)]


def sentence(rng: random.Random, n: int) -> str:
    words = [zipf_word(rng) for _ in range(n)]
    if rng.random() < 0.2:
        start = rng.randrange(len(CJK) - 4)
        words.append(CJK[start : start + rng.randint(2, 5)])
    return " ".join(words)


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory) -> SqliteKnowledgeBase:
    rng = random.Random(20261130)
    folder = tmp_path_factory.mktemp("docs")
    for i in range(160):
        scope = rng.choice(SCOPES)
        category = rng.choice(CATEGORIES)
        crumb = f"{category.title()} > Area{i % 3}"
        sections = [sentence(rng, rng.randint(5, 60)) for _ in range(rng.randint(1, 4))]
        if i % 20 == 0 and i:  # a near duplicate of an earlier document's body
            sections = ["dup " + sentence(random.Random(i - 1), 30)]
        body = sections[0] + "".join(f"\n\n## Part {n}\n\n{s}" for n, s in enumerate(sections[1:]))
        header = [f"source: doc-{i:03d}", f"category: {category}", f"breadcrumb: {crumb}"]
        if scope is not None:
            header.append(f"kb_scope: {scope}")
        (folder / f"doc-{i:03d}.md").write_text(
            "---\n" + "\n".join(header) + "\n---\n" + body + "\n", encoding="utf-8"
        )
    store = SqliteKnowledgeBase(tmp_path_factory.mktemp("kb") / "kb.sqlite")
    store.fts5_scores = True  # FTS5's own k1 and idf: the scores must be FTS5's exactly
    seed(store, load_seed_docs(folder), HashingEmbedder(), get_tokenizer(), ChunkSettings())
    return store


def queries() -> list[list[str]]:
    rng = random.Random(7)
    tokenizer = get_tokenizer()
    out = [tokenizer.tokens(sentence(rng, rng.randint(1, 8))) for _ in range(150)]
    out.append(["w0", "w0", "w1"])  # a repeated term counts once on both sides
    out.append(["nosuchword"])
    return out


FILTERS = [
    Filter(),
    Filter(kb_scope="eval"),
    Filter(kb_scope="other", category="cache"),
    Filter(kb_scope="eval", breadcrumb_prefix="Database"),
    Filter(category="messaging", breadcrumb_prefix="Messaging > Area1"),
]


@pytest.mark.parametrize("flt", FILTERS, ids=lambda f: repr(f.to_json()))
def test_in_memory_bm25_equals_fts5(kb: SqliteKnowledgeBase, flt: Filter) -> None:
    compared = 0
    for tokens in queries():
        for limit in (5, 50):
            mine = kb.lexical_search(tokens, flt, limit)
            fts5 = kb.lexical_search_fts5(tokens, flt, limit)
            assert [r for r, _ in mine] == [r for r, _ in fts5], tokens
            for (_, a), (_, b) in zip(mine, fts5, strict=True):
                assert a == pytest.approx(b, rel=1e-9, abs=1e-12)
            compared += len(mine)
    assert compared > 500  # the queries really match something


def test_document_frequencies_match_fts5_vocabulary(kb: SqliteKnowledgeBase) -> None:
    tokens = sorted({t for q in queries() for t in q})
    mine, total = kb.doc_frequencies(tokens)
    assert total == kb.count()
    db = kb._db
    for token in tokens:
        row = db.execute("SELECT doc FROM chunks_vocab WHERE term = ?", (token,)).fetchone()
        assert mine[token] == (row[0] if row else 0), token


def test_index_follows_a_reseed(kb: SqliteKnowledgeBase, tmp_path: Path) -> None:
    """After a write the in-memory postings are rebuilt, not served stale."""
    path = tmp_path / "kb.sqlite"
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.md").write_text("---\nsource: a\n---\nalpha beta\n", encoding="utf-8")
    with SqliteKnowledgeBase(path) as store:
        store.fts5_scores = True
        seed(store, load_seed_docs(folder), HashingEmbedder(), get_tokenizer(), ChunkSettings())
        assert [r for r, _ in store.lexical_search(["alpha"], Filter(), 5)]
        (folder / "a.md").write_text("---\nsource: a\n---\ngamma delta\n", encoding="utf-8")
        seed(store, load_seed_docs(folder), HashingEmbedder(), get_tokenizer(), ChunkSettings())
        assert store.lexical_search(["alpha"], Filter(), 5) == []
        assert store.lexical_search(["gamma"], Filter(), 5) == store.lexical_search_fts5(
            ["gamma"], Filter(), 5
        )


def test_ragsnaps_bm25_is_lucenes(kb: SqliteKnowledgeBase) -> None:
    """ragsnap ranks with Lucene's BM25 (k1 = 1.5, idf ln(1 + (N - n + 0.5) / (n +
    0.5))), not FTS5's: the same matches, and each score is that formula's."""
    tokens = get_tokenizer().tokens("w0 w1 w2 w3")
    with SqliteKnowledgeBase(kb.path, create=False) as own:
        assert not own.fts5_scores
        mine = dict(own.lexical_search(tokens, Filter(), 500))
        df, n = own.doc_frequencies(tokens)
        rows = own.chunks(list(mine))
    fts5 = dict(kb.lexical_search_fts5(tokens, Filter(), 500))
    assert set(mine) == set(fts5) and len(mine) > 10 and mine != fts5
    lengths = {r: len(c.tokens) for r, c in rows.items()}
    avgdl = sum(len(b.split()) for (b,) in own_bodies(kb)) / n
    for row, score in mine.items():
        expected = 0.0
        for t in dict.fromkeys(tokens):
            tf = rows[row].tokens.count(t)
            if tf:
                idf = math.log(1.0 + (n - df[t] + 0.5) / (df[t] + 0.5))
                norm = 1.5 * (1.0 - 0.75 + 0.75 * lengths[row] / avgdl)
                expected += idf * tf * 2.5 / (tf + norm)
        assert score == pytest.approx(expected, rel=1e-12)


def own_bodies(kb: SqliteKnowledgeBase) -> list[tuple[str]]:
    return list(kb._db.execute("SELECT body FROM chunks_fts"))

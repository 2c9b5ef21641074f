"""The cache of seeded trial stores (ragsnap.kb.store_cache): keys, reuse, and stores
that are complete or absent, on real SQLite stores seeded from a real document."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from ragsnap.kb.backends.sqlite import SqliteKnowledgeBase
from ragsnap.kb.corpus import parse_seed_doc
from ragsnap.kb.embedders import HashingEmbedder
from ragsnap.kb.seeding import seed
from ragsnap.kb.store_cache import open_cached_store, store_key
from ragsnap.kb.text import get_tokenizer
from ragsnap.settings import ChunkSettings

DOC = b"---\nsource: pool\ntitle: Pool\nkb_scope: s\n---\n\nThe pool holds ten connections.\n"
VECTORS = {"fingerprint": {"kind": "hashing"}, "files": []}
TOKENIZER = {"name": "bigram-v1"}


def seeder(calls: list[str]) -> object:
    def seed_into(store: SqliteKnowledgeBase) -> None:
        calls.append("seed")
        doc = parse_seed_doc(Path("pool.md"), DOC)
        seed(store, [doc], HashingEmbedder(32), get_tokenizer("bigram"), ChunkSettings())

    return seed_into


def usable(store: SqliteKnowledgeBase) -> bool:
    return set(store.documents()) == {"pool"}


def test_the_key_moves_with_every_part() -> None:
    key = store_key("c" * 64, VECTORS, TOKENIZER, "1.0")
    assert key == store_key("c" * 64, dict(VECTORS), dict(TOKENIZER), "1.0")
    assert (
        len(
            {
                key,
                store_key("d" * 64, VECTORS, TOKENIZER, "1.0"),
                store_key("c" * 64, {**VECTORS, "files": ["a" * 64]}, TOKENIZER, "1.0"),
                store_key("c" * 64, VECTORS, {"name": "bigram-v1+stop-none"}, "1.0"),
                store_key("c" * 64, VECTORS, TOKENIZER, "1.1"),
            }
        )
        == 5
    )


def test_a_store_is_seeded_once_then_reused(tmp_path: Path) -> None:
    calls: list[str] = []
    store, reused = open_cached_store(tmp_path, "k", seeder(calls), usable)  # type: ignore[arg-type]
    with store:
        assert not reused and store.count() == 1
    again, reused = open_cached_store(tmp_path, "k", seeder(calls), usable)  # type: ignore[arg-type]
    with again:
        assert reused and again.count() == 1
    assert calls == ["seed"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [".k.lock", "k"]  # nothing half-made


def test_a_failed_seeding_leaves_nothing_and_a_crashed_ones_folder_is_removed(
    tmp_path: Path,
) -> None:
    def failing(store: SqliteKnowledgeBase) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        open_cached_store(tmp_path, "k", failing, usable)
    assert not (tmp_path / "k").exists() and not list(tmp_path.glob(".tmp-*"))
    crashed = tmp_path / ".tmp-k-99999"  # a seeding killed before its rename
    crashed.mkdir()
    (crashed / "kb.sqlite").write_bytes(b"half")
    calls: list[str] = []
    store, reused = open_cached_store(tmp_path, "k", seeder(calls), usable)  # type: ignore[arg-type]
    store.close()
    assert not reused and calls == ["seed"] and not crashed.exists()


def test_a_store_that_fails_its_check_or_is_damaged_is_seeded_again(tmp_path: Path) -> None:
    calls: list[str] = []
    open_cached_store(tmp_path, "k", seeder(calls), usable)[0].close()  # type: ignore[arg-type]
    store, reused = open_cached_store(tmp_path, "k", seeder(calls), lambda s: False)  # type: ignore[arg-type]
    store.close()
    assert not reused and calls == ["seed", "seed"]
    (tmp_path / "k" / "kb.sqlite").write_bytes(b"not a database")
    for extra in (tmp_path / "k").glob("kb.sqlite-*"):
        extra.unlink()
    store, reused = open_cached_store(tmp_path, "k", seeder(calls), usable)  # type: ignore[arg-type]
    with store:
        assert not reused and store.count() == 1 and len(calls) == 3


def test_two_trials_needing_one_store_seed_it_once(tmp_path: Path) -> None:
    calls: list[str] = []
    inside = threading.Event()
    release = threading.Event()
    seed_into = seeder(calls)

    def slow(store: SqliteKnowledgeBase) -> None:
        inside.set()
        release.wait(10)
        seed_into(store)  # type: ignore[operator]

    results: list[bool] = []

    def trial() -> None:
        store, reused = open_cached_store(tmp_path, "k", slow, usable)
        store.close()
        results.append(reused)

    first = threading.Thread(target=trial)
    first.start()
    assert inside.wait(10)  # the first holds the lock, seeding
    second = threading.Thread(target=trial)
    second.start()
    release.set()
    first.join(10)
    second.join(10)
    assert calls == ["seed"] and sorted(results) == [False, True]

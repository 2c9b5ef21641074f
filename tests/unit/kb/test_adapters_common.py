"""What both adapters share (``ragsnap.kb.backends.adapters._common``): a hit from a
document's metadata under configurable keys, and the scope kept after retrieval. The
stores themselves are exercised in tests/backends/test_adapters.py."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest

from ragsnap.errors import BackendError
from ragsnap.kb.backends.adapters import Adapter, MetadataKeys
from ragsnap.kb.backends.adapters._common import Found

DOCS: list[Found] = [
    ({"url": "a", "id": "a#0", "scope": "x", "title": "A", "tags": ["t"], "n": 3}, "ta", 0.9),
    ({"url": "b", "id": "b#0", "scope": "y"}, "tb", 0.8),
    ({"url": "c", "id": "c#0", "scope": "x", "doc_id": 7}, "tc", None),
]
KEYS = MetadataKeys(source="url", chunk_id="id", kb_scope="scope")


def adapter(docs: list[Found], *, in_store: bool = False, fetch_k: int | None = None) -> Any:
    asked: list[tuple[int, str | None]] = []

    def fetch(query: str, k: int, scope: str | None) -> Iterable[Found]:
        asked.append((k, scope))
        return docs[:k]

    made = Adapter(fetch, how="test.adapter", keys=KEYS, filters_in_store=in_store, fetch_k=fetch_k)
    made.asked = asked
    return made


def test_a_hit_reads_the_configured_keys_and_keeps_the_other_scalars() -> None:
    hits = adapter(DOCS).search("q", top_k=5, filters={"kbScope": None})
    assert hits[0] == {
        "source": "a",
        "chunk_id": "a#0",
        "text": "ta",
        "score": 0.9,
        "title": "A",
        "metadata": {"n": 3, "scope": "x"},  # the list is not a scalar: left out
    }
    assert hits[2]["score"] is None and "doc_id" not in hits[2]  # 7 is not a string


def test_the_scope_is_kept_after_retrieval_with_fetch_k_candidates() -> None:
    made = adapter(DOCS)
    assert [h["chunk_id"] for h in made.search("q", top_k=1, filters={"kbScope": "x"})] == ["a#0"]
    assert [h["chunk_id"] for h in made.search("q", top_k=2, filters={"kbScope": "x"})] == [
        "a#0",
        "c#0",
    ]
    assert made.asked == [(4, "x"), (8, "x")]  # 4 x top_k
    short = adapter(DOCS, fetch_k=2)
    assert [h["chunk_id"] for h in short.search("q", top_k=2, filters={"kbScope": "x"})] == ["a#0"]
    # a store that filters is asked for top_k; a hit it lets through from another scope is
    # still dropped
    in_store = adapter(DOCS, in_store=True)
    assert [h["chunk_id"] for h in in_store.search("q", top_k=3, filters={"kbScope": "y"})] == [
        "b#0"
    ]
    assert in_store.asked == [(3, "y")]


@pytest.mark.parametrize(
    ("metadata", "said"),
    [
        ({"id": "a#0"}, "result 1 has no metadata 'url' (the document's source"),
        ({"url": "a"}, "keys=MetadataKeys(chunk_id='...')"),
        ({"url": "a", "id": ""}, "result 1 has '' as its metadata 'id'"),
    ],
)
def test_a_hit_without_a_source_or_chunk_id_names_the_key(
    metadata: dict[str, Any], said: str
) -> None:
    with pytest.raises(BackendError, match=r"^test\.adapter: ") as raised:
        adapter([(metadata, "t", 1.0)]).search("q", top_k=5, filters={})
    assert said in str(raised.value)


def test_fetch_k_below_one_is_refused() -> None:
    with pytest.raises(BackendError, match="fetch_k must be 1 or more"):
        adapter(DOCS, fetch_k=0)

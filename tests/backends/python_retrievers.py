"""Retrievers for the ``python`` backend's tests, named ``backends.python_retrievers:NAME``
(``tests/`` on ``PYTHONPATH``).

``keyword`` is a small deterministic BM25 over the chunks of the project's
``seed-docs/`` (read with ragsnap's own corpus loader and chunker, so chunk ids are
the golden cases' ``source#n``), inside the case's kbScope; ``titled`` is the same
BM25 with a bonus per query word in the document's title, so the two rank
differently (two ``python.methods`` to compare). The others break one rule of the
retriever protocol each (``ragsnap.kb.backends.python``).
"""

from __future__ import annotations

import hashlib
import math
import re
import threading
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragsnap.kb.corpus import SeedDocument, chunk_document, load_seed_docs
from ragsnap.settings import ChunkSettings

#: set when a test ends, so a hanging search's abandoned thread finishes
RELEASE = threading.Event()

_TOKEN = re.compile(r"[a-z0-9]+(?:[-_.][a-z0-9]+)*|[\u3400-\u9fff]")


def tokens(text: str) -> list[str]:
    """Lower-cased words (``ERR-4031`` stays one) and single CJK characters."""
    return _TOKEN.findall(text.lower())


@dataclass(frozen=True)
class Hit:
    """A hit as an object (the protocol also takes mappings)."""

    source: str
    chunk_id: str
    text: str
    score: float
    metadata: dict[str, Any] = field(default_factory=dict)
    breadcrumb: str | None = None


class KeywordRetriever:
    """BM25 (k1 1.5, b 0.75) over seed-document chunks; ties by chunk id."""

    k1 = 1.5
    b = 0.75
    #: added per query word in the document's title to a chunk that matched (0: none)
    title_bonus = 0.0

    def __init__(self, folder: Path = Path("seed-docs")) -> None:
        self.chunks: list[tuple[SeedDocument, str, str, Counter[str]]] = []
        self.add_documents(load_seed_docs(folder))

    def add_documents(self, docs: Iterable[SeedDocument]) -> None:
        for doc in docs:
            for chunk in chunk_document(doc, ChunkSettings()):
                self.chunks.append((doc, chunk.chunk_id, chunk.text, Counter(tokens(chunk.text))))

    def fingerprint(self) -> str:
        digest = hashlib.sha256()
        for _doc, chunk_id, text, _terms in self.chunks:
            digest.update(f"{chunk_id}\0{text}\0".encode())
        return f"bm25:{digest.hexdigest()[:12]}"  # the corpus, not the scoring

    def search(self, query: str, *, top_k: int, filters: Mapping[str, Any]) -> list[Hit]:
        scope = filters.get("kbScope")
        inside = [c for c in self.chunks if scope is None or c[0].kb_scope == scope]
        if not inside:
            return []
        average = sum(sum(c[3].values()) for c in inside) / len(inside)
        frequency = Counter(term for c in inside for term in c[3])
        scored = []
        for doc, chunk_id, text, terms in inside:
            length = sum(terms.values())
            score = 0.0
            for term in set(tokens(query)):
                if term not in terms:
                    continue
                idf = math.log(1 + (len(inside) - frequency[term] + 0.5) / (frequency[term] + 0.5))
                tf = terms[term]
                score += (
                    idf
                    * tf
                    * (self.k1 + 1)
                    / (tf + self.k1 * (1 - self.b + self.b * length / average))
                )
            if score > 0 and self.title_bonus:
                title = set(tokens(doc.title or ""))
                score += self.title_bonus * len(title & set(tokens(query)))
            if score > 0:
                scored.append((-round(score, 6), chunk_id, doc, text))
        scored.sort(key=lambda item: (item[0], item[1]))
        return [
            Hit(
                doc.source,
                chunk_id,
                text,
                -negative,
                {"category": doc.category} if doc.category else {},
                doc.breadcrumb,
            )
            for negative, chunk_id, doc, text in scored[:top_k]
        ]


def keyword() -> KeywordRetriever:
    return KeywordRetriever()


class TitledRetriever(KeywordRetriever):
    """BM25 plus 4 per query word in the document's title."""

    title_bonus = 4.0


def titled() -> TitledRetriever:
    return TitledRetriever()


class _Unversioned:
    """The keyword retriever's answers as dicts with explicit ranks, and no fingerprint."""

    def __init__(self) -> None:
        self.inner = KeywordRetriever()

    def search(self, query: str, *, top_k: int, filters: Mapping[str, Any]) -> list[Any]:
        hits = self.inner.search(query, top_k=top_k, filters=filters)
        return [
            {"source": h.source, "chunkId": h.chunk_id, "text": h.text, "score": h.score, "rank": i}
            for i, h in reversed(list(enumerate(hits, 1)))  # ranks, not order, decide
        ]


def unversioned() -> _Unversioned:
    return _Unversioned()


class _Raising:
    def search(self, query: str, *, top_k: int, filters: Mapping[str, Any]) -> list[Any]:
        raise RuntimeError("the index is not loaded")


def raising() -> _Raising:
    return _Raising()


class _Hanging:
    def search(self, query: str, *, top_k: int, filters: Mapping[str, Any]) -> list[Any]:
        RELEASE.wait(60)
        return []


def hanging() -> _Hanging:
    return _Hanging()


class _Malformed:
    def search(self, query: str, *, top_k: int, filters: Mapping[str, Any]) -> list[Any]:
        return [{"source": "mysql-connection-pool", "text": "no chunk id", "score": 1.0}]


def malformed() -> _Malformed:
    return _Malformed()


def failing_factory() -> Any:
    raise OSError("index file missing")


not_callable = 42


def no_search() -> object:
    return object()


class _Flaky(KeywordRetriever):
    """Answers two searches, then fails: a retriever that breaks half-way."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def search(self, query: str, *, top_k: int, filters: Mapping[str, Any]) -> list[Hit]:
        self.calls += 1
        if self.calls > 2:
            raise ConnectionError("the index server went away")
        return super().search(query, top_k=top_k, filters=filters)


def flaky() -> _Flaky:
    return _Flaky()

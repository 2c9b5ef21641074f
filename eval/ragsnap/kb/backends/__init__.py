"""Knowledge base backends: one small interface, one module per store.

A store holds documents (frontmatter metadata plus an index hash) and their
chunks (text, index tokens, a vector). It answers lexical and vector searches
under a metadata ``Filter`` and applies a ``WriteBatch`` (deletes by source,
then uploads) as one unit: either all of it is visible afterwards or none.

=============  =========================================================
``embedded``   ``ragsnap.kb.backends.sqlite``: one SQLite file, BM25 over its
               FTS5 tokens, exact cosines (numpy, or numba kernels; the default)
``milvus``     ``ragsnap.kb.backends.milvus``: Milvus Lite or a Milvus
               server through pymilvus (extra ``milvus``)
``http``       ``ragsnap.kb.backends.http``: a retrieval service; it answers
               whole lookups, so it is not a ``KnowledgeBase``
``python``     ``ragsnap.kb.backends.python``: a retriever written in Python
               (``python.retriever``); whole lookups too
=============  =========================================================

The lookup pipeline (``ragsnap.kb.pipeline``) runs on top of any store. The
backends are registered by name in ``ragsnap.kb.backends.registry``, with what each
can do; commands ask it and never compare a backend's name.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from operator import attrgetter
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, overload, runtime_checkable

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from ..corpus import Chunk, SeedDocument

__all__ = [
    "BM25_B",
    "BM25_K1",
    "ChunkRef",
    "CodedStore",
    "DocumentInfo",
    "Filter",
    "GatheredRefs",
    "KnowledgeBase",
    "PlannedStore",
    "Ranking",
    "ReceiptStore",
    "SnapshotStore",
    "StoredChunk",
    "Upload",
    "WriteBatch",
    "breadcrumb_has_prefix",
    "breadcrumb_segments",
    "cut_ranking",
    "normalize_breadcrumb",
]

#: BM25's parameters in every backend (Lucene's, bm25s's and Milvus Lite's k1; a
#: Milvus server's default is 1.2, so the milvus backend sets both on its index)
BM25_K1 = 1.5
BM25_B = 0.75


@dataclass(frozen=True, slots=True)
class Filter:
    """Metadata restrictions of one search; ``None`` means unrestricted.

    ``kb_scope`` is a hard boundary (documents of other scopes, and documents
    without a scope, are never returned when it is set); ``category`` and
    ``breadcrumb_prefix`` are the droppable L0 restrictions.
    """

    kb_scope: str | None = None
    category: str | None = None
    breadcrumb_prefix: str | None = None

    def to_json(self) -> dict[str, str]:
        """The trace form: camelCase keys, unset restrictions left out."""
        out = {
            "kbScope": self.kb_scope,
            "category": self.category,
            "breadcrumbPrefix": self.breadcrumb_prefix,
        }
        return {k: v for k, v in out.items() if v is not None}

    def admits(self, kb_scope: str | None, category: str | None, breadcrumb: str | None) -> bool:
        """Whether a document with this metadata passes the filter."""
        if self.kb_scope is not None and kb_scope != self.kb_scope:
            return False
        if self.category is not None and category != self.category:
            return False
        if self.breadcrumb_prefix is not None:
            return breadcrumb_has_prefix(breadcrumb, self.breadcrumb_prefix)
        return True


def breadcrumb_has_prefix(breadcrumb: str | None, prefix: str) -> bool:
    """Segment-wise prefix test: ``A > B`` is a prefix of ``A > B > C``, not of ``A > BC``."""
    want = breadcrumb_segments(prefix)
    if not want:
        return True
    if breadcrumb is None:
        return False
    return breadcrumb_segments(breadcrumb)[: len(want)] == want


def breadcrumb_segments(breadcrumb: str | None) -> list[str]:
    """``A>B >  C`` -> ``["A", "B", "C"]``; None -> ``[]``."""
    if breadcrumb is None:
        return []
    return [s for s in (part.strip() for part in breadcrumb.split(">")) if s]


def normalize_breadcrumb(value: str | None) -> str | None:
    """``A>B >  C`` becomes ``A > B > C``; empty becomes None (how every store keeps it)."""
    return " > ".join(breadcrumb_segments(value)) or None


@dataclass(frozen=True, slots=True)
class DocumentInfo:
    """A stored document's metadata and the hash it was indexed from."""

    source: str
    index_hash: str
    chunk_count: int
    doc_id: str | None = None
    title: str | None = None
    breadcrumb: str | None = None
    category: str | None = None
    kb_scope: str | None = None
    path: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class StoredChunk:
    """A stored chunk with its document's metadata, as search results return it."""

    row: int
    chunk_id: str
    source: str
    ordinal: int
    text: str
    heading: str | None
    doc_id: str | None
    title: str | None
    breadcrumb: str | None
    category: str | None
    kb_scope: str | None
    #: the index tokens, as lexical search saw them; None when not read
    #: (``chunks(rows, tokens=False)``: showing a chunk needs none, reranking it does)
    tokens: tuple[str, ...] | None = ()
    #: the distinct index tokens (made once: stores cache chunks, lookups test membership)
    token_set: frozenset[str] | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        distinct = None if self.tokens is None else frozenset(self.tokens)
        object.__setattr__(self, "token_set", distinct)


@dataclass(frozen=True, slots=True)
class ChunkRef:
    """A stored chunk's identities, all a ranking needs (no text, no tokens)."""

    chunk_id: str
    doc_id: str | None
    source: str


class GatheredRefs(Sequence[ChunkRef]):
    """A ranking's identities as positions in a store's table of them (one ``ChunkRef``
    per position, never changed), gathered into a list when first read: a lookup
    that also returns a deep ranking touches none of the thousand objects it does not
    read itself (a trial digests them after its pass). Equal to a list of the same
    refs."""

    __slots__ = ("_positions", "_refs", "_table")

    def __init__(self, table: NDArray[np.object_], positions: NDArray[np.int64]):
        self._table: NDArray[np.object_] | None = table
        self._positions = positions
        self._refs: list[ChunkRef] | None = None

    def _list(self) -> list[ChunkRef]:
        if self._refs is None:
            assert self._table is not None
            self._refs = self._table[self._positions].tolist()
            self._table = None  # the table may be a generation's: let it go
        return self._refs

    def __len__(self) -> int:
        return len(self._positions)

    @overload
    def __getitem__(self, i: int) -> ChunkRef: ...

    @overload
    def __getitem__(self, i: slice) -> list[ChunkRef]: ...

    def __getitem__(self, i: int | slice) -> ChunkRef | list[ChunkRef]:
        return self._list()[i]

    def __iter__(self) -> Iterator[ChunkRef]:
        return iter(self._list())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, GatheredRefs):
            return self._list() == other._list()
        return isinstance(other, list) and self._list() == other

    __hash__ = None  # type: ignore[assignment]  # a list's equality, unhashable as one

    def __repr__(self) -> str:
        return f"GatheredRefs({self._list()!r})"


class Ranking(NamedTuple):
    """A search's list as identities, cut for a deep ranking (``cut_ranking``)."""

    #: in rank order, cut before the depth + 1-th distinct target
    refs: list[ChunkRef] | GatheredRefs
    targets: int  # distinct targets (chunk ids, doc ids or sources) in the whole list
    found: int  # chunks the search returned (fewer than its limit: the store has no more)


def cut_ranking(refs: Sequence[ChunkRef], distinct: str, depth: int) -> Ranking:
    """``refs`` (a ranking) down to its ``depth``-th distinct ``distinct`` (``chunk_id``,
    ``doc_id`` or ``source``): cut before the first chunk of the ``depth + 1``-th
    target, with the number of targets all of ``refs`` name (documents without a
    ``doc_id`` count as one) and their number."""
    if distinct == "chunk_id":  # a ranking's chunks are distinct
        return Ranking(list(refs[:depth]), len(refs), len(refs))
    keys = list(map(attrgetter(distinct), refs))
    targets = list(dict.fromkeys(keys))  # in rank order
    if len(targets) > depth:
        return Ranking(list(refs[: keys.index(targets[depth])]), len(targets), len(refs))
    return Ranking(list(refs), len(targets), len(refs))


@dataclass(frozen=True, slots=True)
class Upload:
    """One document to (re)index: its chunks, their index tokens and vectors."""

    document: SeedDocument
    index_hash: str
    chunks: Sequence[Chunk]
    tokens: Sequence[str]  # space-joined index tokens, one string per chunk
    vectors: NDArray[np.float32]
    replaces: bool = True  # False when the store is known not to hold the source


@dataclass
class WriteBatch:
    """Deletes by source, then uploads, then metadata: applied all or nothing.

    ``uploads`` may be a lazy iterable (embedding happens while it is
    consumed); ``on_upload`` is called after each upload is staged.
    ``receipts`` are a service's entries (``ReceiptStore``), written in the
    same transaction by a store that keeps them and ignored by any other.
    """

    deletes: Sequence[str] = ()
    uploads: Iterable[Upload] = ()
    meta: Mapping[str, str] = field(default_factory=dict)
    on_upload: Callable[[Upload], None] | None = None
    receipts: Mapping[str, str] = field(default_factory=dict)


@runtime_checkable
class CodedStore(Protocol):
    """A store that keeps, for its last lexical search, which query terms each chunk it
    found holds (the embedded one, inside ``pinned``): an attempt reads its list's
    codes as one array, without a ``matched_terms`` mapping."""

    def found_term_codes(
        self, tokens: Sequence[str], rows: Sequence[int]
    ) -> NDArray[np.int64] | None:
        """``matched_terms(tokens, rows)``'s codes in the order of ``rows``, when ``rows``
        is the list this thread's last lexical search found (of the same distinct
        ``tokens``); None otherwise (the caller asks ``matched_terms``)."""
        ...


@runtime_checkable
class ReceiptStore(Protocol):
    """A store that keeps ``ragsnap serve``'s receipts (answered idempotency keys,
    server ids) beside its documents: key -> value, apart from ``read_meta`` so
    lookups never read them."""

    def read_receipts(self, keys: Sequence[str]) -> dict[str, str]:
        """The stored entries of ``keys`` (a key without one is left out)."""
        ...

    def write_receipts(self, entries: Mapping[str, str]) -> None:
        """Store ``entries`` alone (no document, no new generation)."""
        ...


@runtime_checkable
class SnapshotStore(Protocol):
    """A store that can read one state of itself for as long as a lookup takes."""

    def snapshot(self) -> AbstractContextManager[str]:
        """Like ``pinned``, but every read of this thread inside sees the state of the
        store at its start (the generation it yields), whatever is written meanwhile:
        a reader needs no ``generation()`` check afterwards. It may make other
        threads' reads of the same store object wait: a reader's fallback when its
        ``pinned`` reads keep meeting writes."""
        ...


@runtime_checkable
class PlannedStore(Protocol):
    """A store whose search kernels depend on how many lookups the process will run
    (the embedded one: compiled kernels pay for their loading only over many)."""

    def expect_lookups(self, count: float | None) -> None:
        """Say, before the first lookup, how many this process will run (``math.inf``:
        a service; None: not known)."""
        ...


class KnowledgeBase(Protocol):
    """What the seeder and the lookup pipeline need from a store."""

    backend: str

    def read_meta(self) -> dict[str, str]:
        """Stored settings: embedder and tokenizer fingerprints, chunking, version."""
        ...

    def generation(self) -> str:
        """The stored generation (``read_meta()["generation"]``, ``"0"`` before the
        first write): it changes with every write."""
        ...

    def pinned(self) -> AbstractContextManager[str]:
        """A read of one generation, which it yields: the searches and fetches of this
        thread inside it may skip their own checks that the store is unchanged. A
        reader compares ``generation()`` afterwards (a write by another process may
        land in between) and reads again when it moved."""
        ...

    def documents(self) -> dict[str, DocumentInfo]:
        """Every stored document by source."""
        ...

    def write(self, batch: WriteBatch) -> None:
        """Apply ``batch`` atomically."""
        ...

    def count(self) -> int:
        """Number of stored chunks."""
        ...

    def lexical_search(
        self, tokens: Sequence[str], flt: Filter, limit: int, text: str | None = None
    ) -> list[tuple[int, float]]:
        """Best ``limit`` chunks by BM25 for OR-ed ``tokens``: ``(row, score)``,
        higher is better, ties by chunk id. ``text`` is the query as typed, for
        stores that analyse text themselves (Milvus); others use ``tokens``."""
        ...

    def vector_search(
        self, vector: NDArray[np.float32], flt: Filter, limit: int
    ) -> list[tuple[int, float]]:
        """Best ``limit`` chunks by cosine similarity: ``(row, cosine)``."""
        ...

    def similarities(self, vector: NDArray[np.float32], rows: Sequence[int]) -> list[float]:
        """Cosine similarity of ``vector`` with each chunk in ``rows``."""
        ...

    def lexical_ranking(
        self,
        tokens: Sequence[str],
        flt: Filter,
        limit: int,
        distinct: str,
        depth: int,
        text: str | None = None,
    ) -> Ranking:
        """``lexical_search``'s list as identities, cut by ``cut_ranking``: a deep
        ranking (recall@1000, MAP) needs no scores, and the store may cut it without
        an object per row."""
        ...

    def vector_ranking(
        self, vector: NDArray[np.float32], flt: Filter, limit: int, distinct: str, depth: int
    ) -> Ranking:
        """``vector_search``'s list as identities, cut by ``cut_ranking``."""
        ...

    def doc_frequencies(self, tokens: Sequence[str]) -> tuple[dict[str, int], int]:
        """Chunks containing each token, and the number of chunks."""
        ...

    def chunks(self, rows: Sequence[int], *, tokens: bool = True) -> dict[int, StoredChunk]:
        """Stored chunks by row; with ``tokens=False`` their index tokens may be left
        unread (``StoredChunk.tokens`` None), which is cheaper."""
        ...

    def refs(self, rows: Sequence[int]) -> dict[int, ChunkRef]:
        """Stored chunks' identities by row: cheaper than ``chunks`` for deep rankings."""
        ...

    def matched_terms(self, tokens: Sequence[str], rows: Sequence[int]) -> dict[int, int]:
        """For each row, which of the distinct ``tokens`` (in first-seen order) its index
        tokens hold, as a bit code (bit i: the i-th distinct token): what lexical
        coverage reads; a store with postings answers without reading chunks."""
        ...

    def close(self) -> None:
        """Release the store."""
        ...

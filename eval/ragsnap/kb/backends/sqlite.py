"""The embedded knowledge base: one SQLite file, no server, no extensions.

Tables::

    meta(key, value)              settings the index was built with, a generation counter
    documents(source, ...)        frontmatter metadata and the hash each document was indexed from
    chunks(id, chunk_id, source, ordinal, heading, text, vector)   vector: float32 bytes
    chunks_fts(body)              FTS5 over the pre-tokenised chunk text, rowid = chunks.id
    receipts(key, value)          ``ragsnap serve``'s idempotency receipts and server ids
                                  (made by the first write that stores one)

Lexical search is BM25 as Lucene, bm25s and Milvus compute it (k1 = 1.5, b =
0.75, idf = ln(1 + (N - n + 0.5) / (n + 0.5))) over FTS5's index: FTS5's own
``bm25()`` (k1 = 1.2, an idf that is almost 0 for a word in half the chunks)
ranked Cranfield's dev split lower (``benchmarks/README.md``). Tokens come from
``ragsnap.kb.text`` (stored space-separated, so FTS5's ``unicode61`` tokeniser, with
diacritics kept, only splits at the spaces and every normalisation and the
Chinese segmentation happen in Python). Vector search is exact cosine over
every vector of the file, loaded once into memory and reloaded when the file's
generation changes. Both searches run in ``ragsnap.kb.kernels``: numba when it
is installed and the file is large, numpy otherwise, with identical results;
vectors are stored encoded (``ragsnap.kb.numeric``), so every dot product is
exact on any CPU. Both searches rank by scores on the
``ragsnap.kb.numeric`` grid, equal grid scores by chunk id, and return the exact
scores. Filters are row masks, made once per filter and generation (the filter
tested once per distinct metadata label); FTS5's own search, kept as the
reference the scorer is tested against, takes them as SQL conditions. A lookup
pins one generation of the in-memory side (``pinned``): its searches and
fetches skip the per-call generation query, and the term codes of its last
lexical search (which query terms each row holds, found by the kernel) are kept
for the attempt that reads them next. Every chunk's text is read with the
in-memory side, so a chunk shown is never read from the file. A lookup whose
pinned reads keep meeting writes reads a ``snapshot``: one read transaction, the
store's lock held, so everything it reads is of one state of the file however
busy the writers.

Every write is one ``BEGIN IMMEDIATE`` transaction in WAL mode with
``synchronous=FULL``: a process killed in the middle of an import leaves the
previous knowledge base exactly as it was.
"""

from __future__ import annotations

import functools
import json
import math
import mmap
import os
import sqlite3
import sys
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, cast

import numpy as np

from ...errors import BackendError
from ..kernels import (
    CODE_BITS,
    Bm25Kernel,
    VectorKernel,
    VectorScores,
    chunk_id_ranks,
    first_appearances,
    resolve_kernel,
)
from ..numeric import (
    VECTOR_ENCODING,
    encode_vectors,
    inverse_norms,
    ranked,
    squared_norms,
    ticks,
)
from . import (
    BM25_B,
    BM25_K1,
    ChunkRef,
    DocumentInfo,
    Filter,
    GatheredRefs,
    Ranking,
    StoredChunk,
    WriteBatch,
    normalize_breadcrumb,
)

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = ["FTS5_K1", "SCHEMA_VERSION", "SqliteKnowledgeBase", "normalize_breadcrumb"]

SCHEMA_VERSION = "1"
#: chunks kept once made, per generation (a few hundred MB at most: long chunks read with
#: their index tokens, for the reranker, keep them twice, as a tuple and a set)
CHUNK_CACHE = 50_000
#: chunks read by one statement (``_chunk_reads``)
_READ_BATCH = 32


@functools.cache
def _chunk_reads(count: int) -> str:
    """One statement reading ``count`` chunks by row with their index tokens: point
    reads joined by ``UNION ALL``, half the time of ``IN (...)``, which sorts the
    list into a temporary index first. A document's fields come from the index."""
    one = (
        "SELECT c.id, c.chunk_id, c.source, c.ordinal, c.text, c.heading, f.body "
        "FROM chunks c JOIN chunks_fts f ON f.rowid = c.id WHERE c.id = ?"
    )
    return " UNION ALL ".join([one] * count)


def _idf(df: NDArray[np.int64], n: int, fts5: bool) -> NDArray[np.float64]:
    """BM25's idf: ln(1 + (N - n + 0.5) / (n + 0.5)) (Lucene's, bm25s's, Milvus's),
    or with ``fts5`` FTS5's, ln((N - n + 0.5) / (n + 0.5)) and at least 1e-6; with
    the C library's ``log`` once per distinct document frequency (numpy's SIMD
    ``log`` differs between CPUs in the last bit)."""
    values, inverse = np.unique(df, return_inverse=True)
    one = 0.0 if fts5 else 1.0
    logs = np.array([math.log(one + (n - int(v) + 0.5) / (int(v) + 0.5)) for v in values])
    idf = logs[inverse.reshape(-1)] if len(values) else np.zeros(0)
    if fts5:
        idf[idf <= 0.0] = 1e-6
    return idf


_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS documents (
    source TEXT PRIMARY KEY,
    doc_id TEXT, title TEXT, breadcrumb TEXT, category TEXT, kb_scope TEXT,
    path TEXT, metadata TEXT NOT NULL, index_hash TEXT NOT NULL,
    chunk_count INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY,
    chunk_id TEXT NOT NULL UNIQUE,
    source TEXT NOT NULL REFERENCES documents(source),
    ordinal INTEGER NOT NULL,
    heading TEXT,
    text TEXT NOT NULL,
    vector BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS chunks_by_source ON chunks(source);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(
    body, tokenize = 'unicode61 remove_diacritics 0'
);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_vocab USING fts5vocab(chunks_fts, 'row');
"""
#: made by the first write that stores a receipt (so opening an older file to read it
#: never writes)
_RECEIPTS_TABLE = "CREATE TABLE IF NOT EXISTS receipts (key TEXT PRIMARY KEY, value TEXT NOT NULL)"
#: how many keys one ``read_receipts`` query asks for (SQLite's bound-parameter limit)
_RECEIPT_STEP = 500
_PUT_RECEIPT = (
    "INSERT INTO receipts (key, value) VALUES (?, ?) "
    "ON CONFLICT(key) DO UPDATE SET value = excluded.value"
)


def _match_expression(tokens: Sequence[str]) -> str:
    unique = dict.fromkeys(t for t in tokens if t)
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in unique)


#: FTS5's k1, fixed in its C code: what ``lexical_search_fts5`` computes
FTS5_K1 = 1.2


class _Bm25:
    """In-memory BM25 postings over the stored FTS5 token text.

    Scores are BM25 (k1 = 1.5, b = 0.75, Lucene's idf; document length = tokens
    in the row), computed over the whole file as FTS5 does; ``fts5=True`` gives
    FTS5's ``bm25()`` exactly (k1 = 1.2, its idf), which a test checks. FTS5 itself
    scores and sorts every matching row in SQL, about 20 times slower than
    summing these precomputed per-posting weights in numpy.
    """

    def __init__(
        self,
        vocab: dict[str, int],
        df: NDArray[np.int64],
        kernel: Bm25Kernel,
    ):
        self.vocab = vocab
        self.df = df
        self.kernel = kernel  # the search (``ragsnap.kb.kernels``) over the postings
        self._df_list: list[int] | None = None  # ``df`` as Python ints, made on first use

    def doc_frequencies(self, tokens: Sequence[str]) -> dict[str, int]:
        """Chunks holding each distinct token (0 for one the index lacks)."""
        df = self._df_list
        if df is None:
            df = self._df_list = self.df.tolist()
        vocab = self.vocab
        return {t: 0 if (i := vocab.get(t)) is None else df[i] for t in dict.fromkeys(tokens)}

    @classmethod
    def build(
        cls, bodies: Sequence[str], ranks: NDArray[np.int64], kernel: str, fts5: bool = False
    ) -> _Bm25:
        """Postings of ``bodies`` (one per position) searched by ``kernel``, ties
        broken by ``ranks`` (the positions' chunk-id order)."""
        k1 = FTS5_K1 if fts5 else BM25_K1
        n = len(bodies)
        vocab: dict[str, int] = {}
        lengths = np.zeros(n, dtype=np.int64)
        term_ids: list[int] = []
        for i, body in enumerate(bodies):
            tokens = body.split()
            lengths[i] = len(tokens)
            term_ids.extend([vocab.setdefault(t, len(vocab)) for t in tokens])
        if not term_ids:
            empty = np.zeros(0, dtype=np.int64)
            postings = Bm25Kernel(
                np.zeros(1, dtype=np.int64),
                empty.astype(np.int32),
                empty.astype(np.float64),
                ranks,
                kernel,
            )
            return cls(vocab, empty, postings)
        terms = np.asarray(term_ids, dtype=np.int64)
        docs = np.repeat(np.arange(n, dtype=np.int64), lengths)
        keys, tf = np.unique(terms * n + docs, return_counts=True)
        posting_terms, posting_docs = keys // n, keys % n
        df = np.bincount(posting_terms, minlength=len(vocab)).astype(np.int64)
        indptr = np.concatenate(([0], np.cumsum(df))).astype(np.int64)
        idf = _idf(df, n, fts5)
        tf_f = tf.astype(np.float64)
        length = lengths[posting_docs].astype(np.float64)
        avgdl = float(lengths.sum()) / n
        weights = (idf[posting_terms] * tf_f * (k1 + 1.0)) / (
            tf_f + k1 * (1.0 - BM25_B + BM25_B * length / avgdl)
        )
        postings = Bm25Kernel(indptr, posting_docs.astype(np.int32), weights, ranks, kernel)
        return cls(vocab, df, postings)

    def terms(self, tokens: Sequence[str]) -> NDArray[np.int64]:
        """The ids of ``tokens``' distinct indexed terms, in the query's order (the
        order BM25 sums in)."""
        vocab = self.vocab
        ids = [vocab[t] for t in dict.fromkeys(tokens) if t in vocab]
        return np.array(ids, dtype=np.int64)


#: a chunk's (kb_scope, category, breadcrumb): what filters read
_Label = tuple[str | None, str | None, str | None]
#: a document's (doc_id, title, breadcrumb, category, kb_scope): what a chunk read shows
_Document = tuple[str | None, str | None, str | None, str | None, str | None]


class _FullTop(NamedTuple):
    """A lexical selection that found its ``limit`` (``_Index.last_top``)."""

    terms: bytes  # the term ids searched
    flt: Filter
    limit: int
    ticks: int  # the grid ticks of the limit-th


@dataclass
class _Index:
    """What searches keep in memory for one generation of the file."""

    generation: str
    rows: NDArray[np.int64]
    chunk_ids: NDArray[np.str_]
    scope: list[str | None]
    category: list[str | None]
    breadcrumb: list[str | None]
    sources: list[str]
    doc_ids: list[str | None]
    #: each document's (doc_id, title, breadcrumb, category, kb_scope) by source,
    #: read with the rows: a chunk read later takes them from here (``chunks``)
    documents: dict[str, _Document]
    #: every position's ordinal, heading and text, read with the rows: a chunk shown
    #: (``chunks(rows, tokens=False)``) is made from memory, never read from the file
    #: (a cold read of a lookup's few chunks cost more than its search)
    ordinals: list[int]
    headings: list[str | None]
    texts: list[str]
    kernel: str  # the store's kernel for this many rows (``resolve_kernel``): numba or numpy
    vectors: VectorKernel | None = None  # encoded vectors, 1 / their norms, the kernel
    bm25: _Bm25 | None = None
    ranks: NDArray[np.int64] | None = None  # each position's place in chunk-id order
    masks: dict[Filter, tuple[NDArray[np.int64], NDArray[np.bool_]] | None] = field(
        default_factory=dict
    )
    all_positions: NDArray[np.int64] | None = None
    #: the last lexical selection that filled its limit, which a search of the same
    #: terms under a wider filter starts from (``Bm25Kernel.top``'s ``at_least``)
    last_top: _FullTop | None = None
    widens: dict[tuple[Filter, Filter], bool] = field(default_factory=dict)  # ``covers``
    last_query: bytes = b""
    last_scores: VectorScores | None = None
    #: chunks already made in this generation (at most ``CHUNK_CACHE`` of them)
    chunk_cache: dict[int, StoredChunk] = field(default_factory=dict)
    ref_list: list[ChunkRef] | None = None  # every position's identities, made once
    ref_objects: NDArray[np.object_] | None = None  # the same as an array (``ranking``)
    ref_by_row: dict[int, ChunkRef] | None = None  # the same by row
    position_by_row: dict[int, int] | None = None  # each row's position (``stored``)
    #: distinct metadata labels and each position's (``labels``), with and without
    #: breadcrumbs
    label_codes: dict[bool, tuple[list[_Label], NDArray[np.int64]]] = field(default_factory=dict)
    #: each position's source or doc_id as a number (``keys``)
    key_codes: dict[str, NDArray[np.int64]] = field(default_factory=dict)
    #: ``first_appearances``'s scratch for those numbers (calls hold the store's lock)
    key_seen: dict[str, NDArray[np.bool_]] = field(default_factory=dict)

    def positional_refs(self) -> list[ChunkRef]:
        """Every position's ``ChunkRef`` (built on first use in this generation)."""
        if self.ref_list is None:
            self.ref_list = [
                ChunkRef(chunk_id, doc_id, source)
                for chunk_id, doc_id, source in zip(
                    self.chunk_ids.tolist(), self.doc_ids, self.sources, strict=True
                )
            ]
        return self.ref_list

    def refs_by_row(self) -> dict[int, ChunkRef]:
        """Every row's ``ChunkRef`` (built on first use in this generation)."""
        if self.ref_by_row is None:
            self.ref_by_row = dict(zip(self.rows.tolist(), self.positional_refs(), strict=True))
        return self.ref_by_row

    def stored(self, rows: Iterable[int]) -> dict[int, StoredChunk]:
        """The chunks at ``rows`` without their index tokens, made from memory; a row
        this generation does not hold is left out."""
        if self.position_by_row is None:
            self.position_by_row = {row: i for i, row in enumerate(self.rows.tolist())}
        at, refs, documents = self.position_by_row, self.positional_refs(), self.documents
        ordinals, headings, texts = self.ordinals, self.headings, self.texts
        out: dict[int, StoredChunk] = {}
        for row in rows:
            i = at.get(row)
            if i is not None:
                ref = refs[i]
                out[row] = StoredChunk(
                    row,
                    ref.chunk_id,
                    ref.source,
                    ordinals[i],
                    texts[i],
                    headings[i],
                    *documents[ref.source],
                    None,
                )
        return out

    def admitted(self, flt: Filter) -> tuple[NDArray[np.int64], NDArray[np.bool_]] | None:
        """Positions admitted by ``flt`` and the same as a mask; None means all."""
        if flt not in self.masks:
            if flt == Filter():
                self.masks[flt] = None
            else:
                # the filter is tested once per distinct label, not once per chunk:
                # (scope, category) pairs are few; breadcrumbs only when it has a prefix
                labels, codes = self.labels(with_breadcrumb=flt.breadcrumb_prefix is not None)
                admits = np.array([flt.admits(*label) for label in labels], dtype=bool)
                mask = admits[codes]
                self.masks[flt] = (np.flatnonzero(mask).astype(np.int64), mask)
        return self.masks[flt]

    def covers(self, wide: Filter, narrow: Filter) -> bool:
        """Whether ``wide`` admits every chunk ``narrow`` admits (once per pair)."""
        key = (wide, narrow)
        if key not in self.widens:
            w, n = self.admitted(wide), self.admitted(narrow)
            if w is None:
                self.widens[key] = True
            elif n is None:
                self.widens[key] = bool(w[1].all())
            else:
                self.widens[key] = not bool((n[1] & ~w[1]).any())
        return self.widens[key]

    def labels(self, with_breadcrumb: bool) -> tuple[list[_Label], NDArray[np.int64]]:
        """The distinct (scope, category, breadcrumb or None) labels and each position's
        label number (made once per kind per generation)."""
        made = self.label_codes.get(with_breadcrumb)
        if made is None:
            numbers: dict[_Label, int] = {}
            crumbs = self.breadcrumb if with_breadcrumb else [None] * len(self.rows)
            codes = np.fromiter(
                (
                    numbers.setdefault(label, len(numbers))
                    for label in zip(self.scope, self.category, crumbs, strict=True)
                ),
                dtype=np.int64,
                count=len(self.rows),
            )
            made = self.label_codes[with_breadcrumb] = (list(numbers), codes)
        return made

    def keys(self, distinct: str) -> NDArray[np.int64]:
        """Each position's ``source`` or ``doc_id`` as a number, the same for the same
        value (None, documents without a ``doc_id``, is one value); made once per kind."""
        codes = self.key_codes.get(distinct)
        if codes is None:
            values = self.sources if distinct == "source" else self.doc_ids
            numbers: dict[str | None, int] = {}
            codes = np.fromiter(
                (numbers.setdefault(v, len(numbers)) for v in values),
                dtype=np.int64,
                count=len(values),
            )
            self.key_codes[distinct] = codes
            self.key_seen[distinct] = np.zeros(len(numbers), dtype=np.bool_)
        return codes

    def ranking(self, positions: NDArray[np.int64], distinct: str, depth: int) -> Ranking:
        """``cut_ranking`` of the chunks at ``positions`` (a search's list), with the
        targets counted on numbers (``keys``, by the index's kernel): a Python object
        only for what is kept."""
        count = len(positions)
        if distinct == "chunk_id":  # a ranking's chunks are distinct
            cut, targets = min(depth, count), count
        elif distinct in ("doc_id", "source"):
            # the first chunk of target depth + 1 ends the ranking
            codes = self.keys(distinct)  # read at ``positions`` (compiled: no gather)
            seen = self.key_seen[distinct]
            targets, cut = first_appearances(codes, depth, self.kernel, seen, positions)
        else:
            raise ValueError(f"distinct must be chunk_id, doc_id or source, not {distinct!r}")
        if self.ref_objects is None:  # a thousand refs gathered in C, when read
            self.ref_objects = np.empty(len(self.rows), dtype=np.object_)
            self.ref_objects[:] = self.positional_refs()
        # a copy: the kernel may hand out views of a selection it keeps
        return Ranking(GatheredRefs(self.ref_objects, positions[:cut].copy()), targets, count)

    def tie_ranks(self) -> NDArray[np.int64]:
        """Each position's place in chunk-id order (made once per generation)."""
        if self.ranks is None:
            self.ranks = chunk_id_ranks(self.chunk_ids)
        return self.ranks

    def found(
        self, positions: NDArray[np.int64], scores: NDArray[np.float64]
    ) -> tuple[list[int], list[tuple[int, float]]]:
        """A kernel's ``(positions, exact scores)`` as rows, and as ``(row, score)``
        pairs."""
        rows: list[int] = self.rows[positions].tolist()
        return rows, list(zip(rows, scores.tolist(), strict=True))


#: an empty list of positions (a search that found nothing)
_NO_POSITIONS: NDArray[np.int64] = np.zeros(0, dtype=np.int64)

#: a pinned read keeps the term codes of lexical searches of at most this many rows
#: (a lookup's candidate lists); deep rankings' long lists are not kept
_PINNED_FOUND = 256


#: SQLite's wal-index header (the ``-shm`` file every connection to a WAL-mode file maps;
#: its format is fixed since 3.7.0, as connections of different versions share it):
#: two copies of 48 bytes, the first field the format's version, the fourth whether it
#: was initialised. Every commit rewrites both (the log's frame count, a counter of
#: transactions, the salts when the log restarts), the second copy first.
_WAL_HEADER = 48
_WAL_VERSION = 3007000


def wal_header(raw: bytes) -> bytes | None:
    """The header of a wal-index's first ``2 * _WAL_HEADER`` bytes, or None when it
    cannot be told: the copies differ (a commit is writing them), it is not
    initialised, or its format is another."""
    first = raw[:_WAL_HEADER]
    if len(raw) < 2 * _WAL_HEADER or first != raw[_WAL_HEADER : 2 * _WAL_HEADER]:
        return None
    if not first[12] or int.from_bytes(first[:4], sys.byteorder) != _WAL_VERSION:
        return None
    return first


class _WalWatch:
    """Whether a transaction committed to the file since a header was taken, told by
    the wal-index SQLite shares between connections, mapped read-only, without a query:
    a query costs 10-20 µs after a lookup's search has pushed SQLite's pages out of the
    caches (a tenth of a lookup), a look at 96 bytes well under 1. Where there is no
    such file (another VFS, an exclusive lock) it tells nothing, and the query decides.
    """

    def __init__(self, path: Path):
        self._map: mmap.mmap | None = None
        try:
            with Path(f"{path}-shm").open("rb") as f:
                self._map = mmap.mmap(f.fileno(), 2 * _WAL_HEADER, access=mmap.ACCESS_READ)
        except (OSError, ValueError):  # none, or shorter than a header
            pass

    def header(self) -> bytes | None:
        """The header now (``wal_header``); None when it cannot be told."""
        return None if self._map is None else wal_header(self._map[: 2 * _WAL_HEADER])

    def close(self) -> None:
        if self._map is not None:
            self._map.close()
            self._map = None


@dataclass(slots=True)
class _Pin:
    """One thread's pinned read (``SqliteKnowledgeBase.pinned``): the index, and the
    term codes of its last lexical search, so that ``matched_terms`` of that list
    (an attempt asks right after its search) needs no search in the postings."""

    index: _Index
    tokens: list[str] | None = None  # the distinct tokens the codes are of
    rows: list[int] = field(default_factory=list)  # what the search found, in order
    codes: list[int] = field(default_factory=list)  # each row's: bit i for tokens[i]
    code_array: NDArray[np.int64] | None = None  # the same as the kernel gave them
    by_row: dict[int, int] | None = None  # the same by row, made when a subset is asked


class SqliteKnowledgeBase:
    """A knowledge base in one SQLite file (see the module docstring)."""

    backend = "embedded"
    #: score ``lexical_search`` with FTS5's own k1 and idf (set before the first
    #: search, as the parity tests do); ragsnap's BM25 is the Lucene variant
    fts5_scores: bool = False

    def __init__(
        self,
        path: Path,
        *,
        create: bool = True,
        kernel: str = "auto",
        lookups: float | None = None,
    ):
        resolve_kernel(kernel, 0)  # an unknown name fails here, not at the first search
        self.path = path
        #: search kernels (``ragsnap.kb.kernels``): auto, compiled, numba or numpy; same
        #: results
        self.kernel = kernel
        #: the lookups this process expects (``expect_lookups``), for ``auto``
        self.lookups = lookups
        if not create and not path.is_file():
            raise BackendError(
                f"{path}: no knowledge base here; run `ragsnap seed` first "
                "(or pass --kb with the right file)"
            )
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(
                str(path), isolation_level=None, check_same_thread=False, timeout=30.0
            )
            if not create:  # a reader never turns another file into a knowledge base
                self._check_is_knowledge_base()
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.execute("PRAGMA foreign_keys=ON")
            self._db.executescript(_SCHEMA)
        except sqlite3.DatabaseError as exc:
            raise BackendError(
                f"{path}: not a usable SQLite knowledge base ({exc}); "
                "delete it and run `ragsnap seed` to rebuild it"
            ) from None
        except OSError as exc:
            raise BackendError(
                f"{path}: cannot open ({exc.strerror}); choose a writable path"
            ) from None
        self._lock = threading.RLock()
        self._memory: _Index | None = None
        self._seen: str | None = None  # the generation the file gave last (``pinned``)
        #: the wal-index header taken right before the query that gave ``_seen``
        #: (``_current_generation``), and what reads it (made after the first query)
        self._seen_header: bytes | None = None
        self._watch: _WalWatch | None = None
        self._real_path = Path(os.path.realpath(path))  # as opened (the watch's file)
        self._pins = threading.local()  # ``pinned``: this thread's ``_Pin``, if any

    def _check_is_knowledge_base(self) -> None:
        tables = {r[0] for r in self._db.execute("SELECT name FROM sqlite_master")}
        if not {"meta", "documents", "chunks", "chunks_fts"} <= tables:
            self._db.close()
            raise BackendError(
                f"{self.path}: not a ragsnap knowledge base (an empty file, or another "
                "SQLite database); pass --kb with a file `ragsnap seed` built, or run "
                f"`ragsnap seed --kb {self.path}` to build one there"
            )

    def expect_lookups(self, count: float | None) -> None:
        """Say how many lookups this process will run (``math.inf``: a service; None:
        not known), before the first: the ``auto`` kernel compiles only when they repay
        loading numba (``ragsnap.kb.kernels.resolve_kernel``)."""
        with self._lock:
            self.lookups = count

    # -- metadata -------------------------------------------------------------

    def read_meta(self) -> dict[str, str]:
        with self._lock:
            return dict(self._db.execute("SELECT key, value FROM meta").fetchall())

    def generation(self) -> str:
        with self._lock:
            return self._current_generation()

    @contextmanager
    def pinned(self) -> Iterator[str]:
        """This thread's searches and fetches inside use the in-memory index of one
        generation without asking the file for its generation each time (one query
        each, several a lookup). Rows read from the file inside may be newer: the
        reader's ``generation()`` check afterwards sees that and reads again.

        Nor is the file asked on the way in while the index is of the generation the
        file gave last (a reader's check after its previous read): a write since is
        seen by this read's own check, and the read again asks the file."""
        with self._lock:
            memory = self._memory
            index = memory if memory is not None and memory.generation == self._seen else None
            if index is None:
                index = self._index()
        outer = getattr(self._pins, "pin", None)
        self._pins.pin = _Pin(index)
        try:
            yield index.generation
        finally:
            self._pins.pin = outer

    @contextmanager
    def snapshot(self) -> Iterator[str]:
        """``pinned`` inside one read transaction, this store's lock held throughout
        (``SnapshotStore``): the generation, the in-memory side (rebuilt from the same
        transaction when it is of another generation) and every row read inside are
        of one state of the file, as WAL keeps it for a reader while other processes
        write. Other threads' calls on this store wait until it ends."""
        with self._lock:
            self._db.execute("BEGIN")
            try:
                # the transaction's first read fixes its state, and ``pinned`` reuses the
                # memory of the generation read here (or rebuilds it inside): memory read
                # outside a transaction can hold rows newer than its generation, but
                # generations only grow, so the file never gives that one again
                self._generation()
                with self.pinned() as generation:
                    yield generation
            finally:
                self._db.execute("COMMIT")

    def _pin(self) -> _Pin | None:
        pin: _Pin | None = getattr(self._pins, "pin", None)
        return pin

    def documents(self) -> dict[str, DocumentInfo]:
        with self._lock:
            rows = self._db.execute(
                "SELECT source, index_hash, chunk_count, doc_id, title, breadcrumb, category, "
                "kb_scope, path, metadata FROM documents ORDER BY source"
            ).fetchall()
        return {
            r[0]: DocumentInfo(
                source=r[0],
                index_hash=r[1],
                chunk_count=r[2],
                doc_id=r[3],
                title=r[4],
                breadcrumb=r[5],
                category=r[6],
                kb_scope=r[7],
                path=r[8],
                metadata=json.loads(r[9]),
            )
            for r in rows
        }

    def count(self) -> int:
        with self._lock:
            (n,) = self._db.execute("SELECT count(*) FROM chunks").fetchone()
        return int(n)

    def read_receipts(self, keys: Sequence[str]) -> dict[str, str]:
        """The service's receipts of ``keys`` (``ReceiptStore``)."""
        out: dict[str, str] = {}
        with self._lock:
            for start in range(0, len(keys), _RECEIPT_STEP):
                part = list(keys[start : start + _RECEIPT_STEP])
                marks = ", ".join("?" * len(part))
                try:
                    rows = self._db.execute(
                        f"SELECT key, value FROM receipts WHERE key IN ({marks})",
                        part,
                    ).fetchall()
                except sqlite3.OperationalError:  # no receipts table: none stored yet
                    return {}
                out.update(rows)
        return out

    def write_receipts(self, entries: Mapping[str, str]) -> None:
        """Store receipts alone: one transaction, no new generation (``ReceiptStore``)."""
        with self._lock:
            db = self._db
            db.execute("BEGIN IMMEDIATE")
            try:
                db.execute(_RECEIPTS_TABLE)
                db.executemany(_PUT_RECEIPT, sorted(entries.items()))
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise

    # -- writing --------------------------------------------------------------

    def _delete(self, source: str) -> None:
        self._db.execute(
            "DELETE FROM chunks_fts WHERE rowid IN (SELECT id FROM chunks WHERE source = ?)",
            (source,),
        )
        self._db.execute("DELETE FROM chunks WHERE source = ?", (source,))
        self._db.execute("DELETE FROM documents WHERE source = ?", (source,))

    def write(self, batch: WriteBatch) -> None:
        """Apply deletes, uploads and meta in one transaction (see ``WriteBatch``)."""
        with self._lock:
            db = self._db
            db.execute("BEGIN IMMEDIATE")
            try:
                for source in batch.deletes:
                    self._delete(source)
                (next_id,) = db.execute("SELECT coalesce(max(id), 0) + 1 FROM chunks").fetchone()
                for up in batch.uploads:
                    doc = up.document
                    if up.replaces:
                        self._delete(doc.source)
                    db.execute(
                        "INSERT INTO documents (source, doc_id, title, breadcrumb, category, "
                        "kb_scope, path, metadata, index_hash, chunk_count) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (
                            doc.source,
                            doc.doc_id,
                            doc.title,
                            normalize_breadcrumb(doc.breadcrumb),
                            doc.category,
                            doc.kb_scope,
                            doc.path,
                            json.dumps(doc.metadata, sort_keys=True, ensure_ascii=False),
                            up.index_hash,
                            len(up.chunks),
                        ),
                    )
                    ids = range(next_id, next_id + len(up.chunks))
                    next_id += len(up.chunks)
                    vectors = encode_vectors(up.vectors)
                    db.executemany(
                        "INSERT INTO chunks (id, chunk_id, source, ordinal, heading, text, vector) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?)",
                        [
                            (i, c.chunk_id, c.source, c.ordinal, c.heading, c.text, v.tobytes())
                            for i, c, v in zip(ids, up.chunks, vectors, strict=True)
                        ],
                    )
                    db.executemany(
                        "INSERT INTO chunks_fts (rowid, body) VALUES (?, ?)",
                        list(zip(ids, up.tokens, strict=True)),
                    )
                    if batch.on_upload is not None:
                        batch.on_upload(up)
                meta = dict(batch.meta)
                meta["schemaVersion"] = SCHEMA_VERSION
                meta["vectorEncoding"] = VECTOR_ENCODING
                (generation,) = db.execute(
                    "SELECT coalesce(max(CAST(value AS INTEGER)), 0) + 1 FROM meta "
                    "WHERE key = 'generation'"
                ).fetchone()
                meta["generation"] = str(generation)
                db.executemany(
                    "INSERT INTO meta (key, value) VALUES (?, ?) "
                    "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                    sorted(meta.items()),
                )
                if batch.receipts:
                    db.execute(_RECEIPTS_TABLE)
                    db.executemany(_PUT_RECEIPT, sorted(batch.receipts.items()))
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
            self._memory = None

    # -- reading --------------------------------------------------------------

    def _filter_sql(self, flt: Filter) -> tuple[str, list[Any]]:
        sql: list[str] = []
        args: list[Any] = []
        if flt.kb_scope is not None:
            sql.append("d.kb_scope = ?")
            args.append(flt.kb_scope)
        if flt.category is not None:
            sql.append("d.category = ?")
            args.append(flt.category)
        prefix = normalize_breadcrumb(flt.breadcrumb_prefix)
        if prefix is not None:
            sql.append("(d.breadcrumb = ? OR substr(d.breadcrumb, 1, ?) = ?)")
            args += [prefix, len(prefix) + 3, prefix + " > "]
        return "".join(f" AND {s}" for s in sql), args

    def _generation(self) -> str:
        """The file's generation, asked (in a transaction, its first read)."""
        row = self._db.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
        self._seen = row[0] if row else "0"
        self._seen_header = None
        return self._seen

    def _current_generation(self) -> str:
        """``_generation``, not asked again while the wal-index header is the one taken
        right before the query that gave ``_seen``: nothing committed since, so the
        file's generation is that one (a commit by any connection, this one included,
        rewrites the header before its rows can be read). Under the lock."""
        watch = self._watch
        if watch is None:
            generation = self._generation()
            # beside the file as opened (symbolic links resolved, as SQLite does), which
            # exists once the file was read
            self._watch = _WalWatch(self._real_path)
            return generation
        header = watch.header()
        if header is not None and header == self._seen_header:
            return cast("str", self._seen)
        generation = self._generation()
        self._seen_header = header
        return generation

    def _index(self) -> _Index:
        """The in-memory side of the current generation (rebuilt after any write), or
        the one this thread pinned."""
        pin: _Pin | None = getattr(self._pins, "pin", None)
        if pin is not None:
            return pin.index
        generation = self._current_generation()
        if self._memory is None or self._memory.generation != generation:
            rows = self._db.execute(
                "SELECT c.id, c.chunk_id, d.kb_scope, d.category, d.breadcrumb, c.source, "
                "d.doc_id, d.title, c.ordinal, c.heading, c.text FROM chunks c "
                "JOIN documents d ON d.source = c.source ORDER BY c.id"
            ).fetchall()
            self._memory = _Index(
                generation=generation,
                rows=np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows)),
                chunk_ids=np.array([r[1] for r in rows], dtype=np.str_),
                scope=[r[2] for r in rows],
                category=[r[3] for r in rows],
                breadcrumb=[r[4] for r in rows],
                sources=[r[5] for r in rows],
                doc_ids=[r[6] for r in rows],
                documents={r[5]: (r[6], r[7], r[4], r[3], r[2]) for r in rows},
                ordinals=[r[8] for r in rows],
                headings=[r[9] for r in rows],
                texts=[r[10] for r in rows],
                kernel=resolve_kernel(self.kernel, len(rows), self.lookups),
            )
        return self._memory

    def _vectors(self, index: _Index) -> VectorKernel:
        """The encoded vectors of every row, their inverse norms, and the kernel."""
        if index.vectors is None:
            blobs = [b for (b,) in self._db.execute("SELECT vector FROM chunks ORDER BY id")]
            if blobs:
                dim = len(blobs[0]) // 4
                matrix = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(-1, dim)
            else:
                matrix = np.zeros((0, 1), dtype=np.float32)
            index.vectors = VectorKernel(
                matrix, inverse_norms(squared_norms(matrix)), index.tie_ranks(), index.kernel
            )
        return index.vectors

    def _postings(self, index: _Index) -> _Bm25:
        if index.bm25 is None:
            bodies = [b for (b,) in self._db.execute("SELECT body FROM chunks_fts ORDER BY rowid")]
            index.bm25 = _Bm25.build(bodies, index.tie_ranks(), index.kernel, self.fts5_scores)
        return index.bm25

    def lexical_search(
        self, tokens: Sequence[str], flt: Filter, limit: int, text: str | None = None
    ) -> list[tuple[int, float]]:
        del text  # FTS5 searches ragsnap's own tokens
        with self._lock:
            index = self._index()
            got = self._lexical_top(index, tokens, flt, limit)
            if got is None:
                return []
            terms, positions, scores = got
            rows, found = index.found(positions, scores)
            pin = self._pin()
            if pin is not None and len(found) <= _PINNED_FOUND:  # the terms each row holds
                bm25 = self._postings(index)
                distinct = list(dict.fromkeys(tokens))
                bits = None  # bit i for distinct[i], as ``matched_terms`` gives them
                if len(terms) != len(distinct):  # a token the index lacks: bits skip it
                    vocab = bm25.vocab
                    where = [i for i, t in enumerate(distinct) if t in vocab]
                    bits = np.array(where, dtype=np.int64)
                codes = bm25.kernel.kept_codes(terms, positions, bits)
                if codes is not None:
                    pin.tokens, pin.rows, pin.codes = distinct, rows, codes.tolist()
                    pin.code_array, pin.by_row = codes, None
            return found

    def lexical_ranking(
        self,
        tokens: Sequence[str],
        flt: Filter,
        limit: int,
        distinct: str,
        depth: int,
        text: str | None = None,
    ) -> Ranking:
        del text  # as lexical_search
        with self._lock:
            index = self._index()
            got = self._lexical_top(index, tokens, flt, limit)
            return index.ranking(_NO_POSITIONS if got is None else got[1], distinct, depth)

    def _lexical_top(
        self, index: _Index, tokens: Sequence[str], flt: Filter, limit: int
    ) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float64]] | None:
        """The term ids of ``tokens``, and the positions and exact BM25 of the best
        ``limit`` chunks ``flt`` admits (the kernel's order); None when nothing can
        match. Under the lock."""
        if limit <= 0 or len(index.rows) == 0:
            return None
        bm25 = self._postings(index)
        terms = bm25.terms(tokens)
        if len(terms) == 0:
            return None
        admitted = index.admitted(flt)
        key, at_least, last = terms.tobytes(), None, index.last_top
        # the same terms under a filter that admits more (a lookup's unfiltered retry):
        # the limit-th of the narrower selection bounds this one's from below
        if (
            last is not None
            and last.terms == key
            and limit <= last.limit
            and index.covers(flt, last.flt)
        ):
            at_least = last.ticks
        mask = None if admitted is None else admitted[1]
        positions, scores = bm25.kernel.top(terms, mask, limit, at_least)
        if len(scores) == limit:
            index.last_top = _FullTop(key, flt, limit, ticks(float(scores[-1])))
        return terms, positions, scores

    def lexical_search_fts5(
        self, tokens: Sequence[str], flt: Filter, limit: int
    ) -> list[tuple[int, float]]:
        """The same search run by FTS5 itself (``bm25()``, with SQL filters), ranked
        by the same rule (grid score, then chunk id).

        The reference the in-memory scorer is tested against (with
        ``fts5_scores`` set); about 20 times slower at 10^5 chunks, because FTS5
        scores every match.
        """
        expression = _match_expression(tokens)
        if not expression or limit <= 0:
            return []
        where, args = self._filter_sql(flt)
        join = " JOIN documents d ON d.source = c.source" if where else ""
        sql = (
            "SELECT f.rowid, -bm25(chunks_fts) AS s, c.chunk_id FROM chunks_fts f "
            f"JOIN chunks c ON c.id = f.rowid{join} WHERE chunks_fts MATCH ?{where}"
        )
        with self._lock:
            rows = self._db.execute(sql, [expression, *args]).fetchall()
        return ranked(((int(r), float(s), cid) for r, s, cid in rows), limit)

    def doc_frequencies(self, tokens: Sequence[str]) -> tuple[dict[str, int], int]:
        with self._lock:
            index = self._index()
            bm25 = self._postings(index)
        return bm25.doc_frequencies(tokens), len(index.rows)

    def vector_search(
        self, vector: NDArray[np.float32], flt: Filter, limit: int
    ) -> list[tuple[int, float]]:
        with self._lock:
            index = self._index()
            got = self._vector_top(index, vector, flt, limit)
            return [] if got is None else index.found(*got)[1]

    def vector_ranking(
        self, vector: NDArray[np.float32], flt: Filter, limit: int, distinct: str, depth: int
    ) -> Ranking:
        with self._lock:
            index = self._index()
            got = self._vector_top(index, vector, flt, limit)
            return index.ranking(_NO_POSITIONS if got is None else got[0], distinct, depth)

    def _vector_top(
        self, index: _Index, vector: NDArray[np.float32], flt: Filter, limit: int
    ) -> tuple[NDArray[np.int64], NDArray[np.float64]] | None:
        """Positions and exact cosines of the best ``limit`` chunks ``flt`` admits (the
        kernel's order); None when there is nothing to search. Under the lock."""
        if limit <= 0 or len(index.rows) == 0:
            return None
        vectors = self._vectors(index)
        if vectors.dim != vector.shape[0]:
            raise BackendError(
                f"{self.path}: stored vectors have dimension {vectors.dim}, the "
                f"query vector {vector.shape[0]}; run `ragsnap seed --reindex`"
            )
        key = vector.tobytes()
        if index.last_query != key or index.last_scores is None:
            query = encode_vectors(vector)
            query_inverse = float(inverse_norms(squared_norms(query))[0])
            index.last_scores = vectors.scores(query, query_inverse)
            index.last_query = key
        scores = index.last_scores
        admitted = index.admitted(flt)
        if admitted is None:
            if index.all_positions is None:
                index.all_positions = np.arange(len(index.rows), dtype=np.int64)
            positions = index.all_positions
        else:
            positions = admitted[0]
        return vectors.top(scores, positions, limit)

    def similarities(self, vector: NDArray[np.float32], rows: Sequence[int]) -> list[float]:
        """Cosine similarity of ``vector`` with each stored chunk in ``rows``
        (exact, not yet on the grid: the caller quantises what it keeps)."""
        with self._lock:
            index = self._index()
            vectors = self._vectors(index)
            positions = np.searchsorted(index.rows, np.asarray(rows, dtype=np.int64))
            query = encode_vectors(vector)
            query_inverse = float(inverse_norms(squared_norms(query))[0])
            found: list[float] = vectors.rows_cosines(positions, query, query_inverse).tolist()
            return found

    def refs(self, rows: Sequence[int]) -> dict[int, ChunkRef]:
        with self._lock:
            index = self._index()
            if not rows or len(index.rows) == 0:
                return {}
            by_row = index.refs_by_row()
        got = list(map(by_row.get, rows))
        if all(got):  # C-level truth tests (``None in got`` would call ``__eq__``)
            return dict(zip(rows, cast("list[ChunkRef]", got), strict=True))
        return {row: ref for row, ref in zip(rows, got, strict=True) if ref is not None}

    def found_term_codes(
        self, tokens: Sequence[str], rows: Sequence[int]
    ) -> NDArray[np.int64] | None:
        """The codes ``matched_terms`` gives ``rows``, in their order, when they are the
        list this thread's pinned read last found (``CodedStore``); else None."""
        pin = self._pin()
        if pin is None or pin.code_array is None or tokens != pin.tokens or rows != pin.rows:
            return None
        return pin.code_array

    def matched_terms(self, tokens: Sequence[str], rows: Sequence[int]) -> dict[int, int]:
        """Which distinct ``tokens`` each row's index tokens hold, as bit codes, from the
        postings (no chunk is read)."""
        with self._lock:
            pin = self._pin()
            if pin is not None and tokens == pin.tokens:  # this read's last search's terms
                if rows == pin.rows:  # its list (an attempt's confidences)
                    return dict(zip(rows, pin.codes, strict=True))
                if pin.by_row is None:  # some of it (a reranked head)
                    pin.by_row = dict(zip(pin.rows, pin.codes, strict=True))
                if all(map(pin.by_row.__contains__, rows)):
                    return {r: pin.by_row[r] for r in rows}
            index = self._index()
            bm25 = self._postings(index)
            vocab = bm25.vocab
            held = [(i, vocab[t]) for i, t in enumerate(dict.fromkeys(tokens)) if t in vocab]
            if not held or not rows:
                return dict.fromkeys(rows, 0)
            terms = np.array([term for _, term in held], dtype=np.int64)
            positions = np.searchsorted(index.rows, np.asarray(rows, dtype=np.int64))
            bits = np.array([i for i, _ in held], dtype=np.int64)
            codes = [0] * len(rows)
            # kernels fill int64 codes: a long query's bits go 63 at a time
            for base in range(0, int(bits[-1]) + 1, CODE_BITS):
                part = (bits >= base) & (bits < base + CODE_BITS)
                if part.any():
                    found = bm25.kernel.term_codes(terms[part], bits[part] - base, positions)
                    codes = [c | (f << base) for c, f in zip(codes, found.tolist(), strict=True)]
        return dict(zip(rows, codes, strict=True))

    def chunks(self, rows: Sequence[int], *, tokens: bool = True) -> dict[int, StoredChunk]:
        """Stored chunks by row, of the generation searched; chunks made before in
        this generation are kept (repeated lookups, a trial's passes). Without
        ``tokens`` a chunk is made from the index's memory (``_Index.stored``): showing
        it reads nothing. With them (the reranker's few) it is read from the file with
        its FTS5 body; a chunk kept with its tokens is returned with them either way."""
        out: dict[int, StoredChunk] = {}
        with self._lock:
            index = self._index()
            cache, documents = index.chunk_cache, index.documents
            unique = []
            for row in dict.fromkeys(rows):
                hit = cache.get(row)
                if hit is None or (tokens and hit.tokens is None):
                    unique.append(row)
                else:
                    out[row] = hit
            if not tokens:
                made = index.stored(unique)
                for row, chunk in made.items():
                    if len(cache) < CHUNK_CACHE:
                        cache[row] = chunk
                out.update(made)
                return out
            for start in range(0, len(unique), _READ_BATCH):
                part = unique[start : start + _READ_BATCH]
                found = self._db.execute(_chunk_reads(len(part)), part).fetchall()
                for r in found:
                    doc = documents.get(r[2])
                    if doc is None:  # a document written since: left out, as gone
                        continue
                    out[r[0]] = chunk = StoredChunk(
                        r[0],
                        r[1],
                        r[2],
                        r[3],
                        r[4],
                        r[5],
                        *doc,
                        tuple(r[6].split()),
                    )
                    if len(cache) < CHUNK_CACHE or r[0] in cache:
                        cache[r[0]] = chunk
        return out

    def close(self) -> None:
        with self._lock:
            if self._watch is not None:
                self._watch.close()
            self._db.close()

    def __enter__(self) -> SqliteKnowledgeBase:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

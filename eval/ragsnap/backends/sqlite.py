"""The embedded knowledge base: one SQLite file, no server, no extensions.

Tables::

    meta(key, value)              settings the index was built with, a generation counter
    documents(source, ...)        frontmatter metadata and the hash each document was indexed from
    chunks(id, chunk_id, source, ordinal, heading, text, vector)   vector: float32 bytes
    chunks_fts(body)              FTS5 over the pre-tokenised chunk text, rowid = chunks.id

Lexical search is FTS5's BM25 (k1 = 1.2, b = 0.75) over tokens produced by
``ragsnap.text`` (stored space-separated, so FTS5's ``unicode61`` tokeniser, with
diacritics kept, only splits at the spaces and every normalisation and the
Chinese segmentation happen in Python). Vector search
is exact cosine in numpy over every vector of the file, loaded once into memory
and reloaded when the file's generation changes. Filters are SQL conditions for
lexical search and precomputed row masks for vector search.

Every write is one ``BEGIN IMMEDIATE`` transaction in WAL mode with
``synchronous=FULL``: a process killed in the middle of an import leaves the
previous knowledge base exactly as it was.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import BackendError
from . import DocumentInfo, Filter, StoredChunk, WriteBatch

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = ["SCHEMA_VERSION", "SqliteKnowledgeBase", "normalize_breadcrumb"]

SCHEMA_VERSION = "1"

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


def normalize_breadcrumb(value: str | None) -> str | None:
    """``A>B >  C`` becomes ``A > B > C``; empty becomes None."""
    if value is None:
        return None
    parts = [p.strip() for p in value.split(">")]
    joined = " > ".join(p for p in parts if p)
    return joined or None


def _match_expression(tokens: Sequence[str]) -> str:
    unique = dict.fromkeys(t for t in tokens if t)
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in unique)


@dataclass
class _VectorIndex:
    generation: str
    rows: NDArray[np.int64]
    chunk_ids: NDArray[np.str_]
    matrix: NDArray[np.float32]
    scope: list[str | None]
    category: list[str | None]
    breadcrumb: list[str | None]
    masks: dict[Filter, NDArray[np.intp] | None]
    last_query: bytes = b""
    last_scores: NDArray[np.float32] | None = None


class SqliteKnowledgeBase:
    """A knowledge base in one SQLite file (see the module docstring)."""

    backend = "embedded"

    def __init__(self, path: Path, *, create: bool = True):
        self.path = path
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
        self._vectors: _VectorIndex | None = None

    # -- metadata -------------------------------------------------------------

    def read_meta(self) -> dict[str, str]:
        with self._lock:
            return dict(self._db.execute("SELECT key, value FROM meta").fetchall())

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
                    vectors = np.ascontiguousarray(up.vectors, dtype=np.float32)
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
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
            self._vectors = None

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

    def lexical_search(
        self, tokens: Sequence[str], flt: Filter, limit: int
    ) -> list[tuple[int, float]]:
        expression = _match_expression(tokens)
        if not expression or limit <= 0:
            return []
        where, args = self._filter_sql(flt)
        join = " JOIN documents d ON d.source = c.source" if where else ""
        sql = (
            "SELECT f.rowid, -bm25(chunks_fts) AS s FROM chunks_fts f "
            f"JOIN chunks c ON c.id = f.rowid{join} "
            f"WHERE chunks_fts MATCH ?{where} ORDER BY s DESC, c.chunk_id LIMIT ?"
        )
        with self._lock:
            rows = self._db.execute(sql, [expression, *args, limit]).fetchall()
        return [(int(r), float(s)) for r, s in rows]

    def doc_frequencies(self, tokens: Sequence[str]) -> tuple[dict[str, int], int]:
        unique = list(dict.fromkeys(tokens))
        with self._lock:
            (total,) = self._db.execute("SELECT count(*) FROM chunks").fetchone()
            found: dict[str, int] = {}
            for start in range(0, len(unique), 500):
                part = unique[start : start + 500]
                marks = ",".join("?" * len(part))
                found.update(
                    self._db.execute(
                        f"SELECT term, doc FROM chunks_vocab WHERE term IN ({marks})", part
                    ).fetchall()
                )
        return {t: int(found.get(t, 0)) for t in unique}, int(total)

    def _generation(self) -> str:
        row = self._db.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
        return row[0] if row else "0"

    def _vector_index(self) -> _VectorIndex:
        generation = self._generation()
        if self._vectors is not None and self._vectors.generation == generation:
            return self._vectors
        rows = self._db.execute(
            "SELECT c.id, c.chunk_id, c.vector, d.kb_scope, d.category, d.breadcrumb "
            "FROM chunks c JOIN documents d ON d.source = c.source ORDER BY c.id"
        ).fetchall()
        if rows:
            dim = len(rows[0][2]) // 4
            matrix = np.frombuffer(b"".join(r[2] for r in rows), dtype=np.float32).reshape(
                len(rows), dim
            )
        else:
            matrix = np.zeros((0, 1), dtype=np.float32)
        self._vectors = _VectorIndex(
            generation=generation,
            rows=np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows)),
            chunk_ids=np.array([r[1] for r in rows], dtype=np.str_),
            matrix=matrix,
            scope=[r[3] for r in rows],
            category=[r[4] for r in rows],
            breadcrumb=[r[5] for r in rows],
            masks={},
        )
        return self._vectors

    def _mask(self, index: _VectorIndex, flt: Filter) -> NDArray[np.intp] | None:
        """Positions admitted by ``flt``; None means all of them."""
        if flt not in index.masks:
            if flt == Filter():
                index.masks[flt] = None
            else:
                keep = [
                    i
                    for i, (s, c, b) in enumerate(
                        zip(index.scope, index.category, index.breadcrumb, strict=True)
                    )
                    if flt.admits(s, c, b)
                ]
                index.masks[flt] = np.asarray(keep, dtype=np.intp)
        return index.masks[flt]

    def vector_search(
        self, vector: NDArray[np.float32], flt: Filter, limit: int
    ) -> list[tuple[int, float]]:
        with self._lock:
            index = self._vector_index()
            if limit <= 0 or len(index.rows) == 0:
                return []
            if index.matrix.shape[1] != vector.shape[0]:
                raise BackendError(
                    f"{self.path}: stored vectors have dimension {index.matrix.shape[1]}, the "
                    f"query vector {vector.shape[0]}; run `ragsnap seed --reindex`"
                )
            key = vector.tobytes()
            if index.last_query != key or index.last_scores is None:
                index.last_scores = index.matrix @ vector
                index.last_query = key
            scores = index.last_scores
            positions = self._mask(index, flt)
        if positions is None:
            candidates = scores
        else:
            if len(positions) == 0:
                return []
            candidates = scores[positions]
        k = min(limit, len(candidates))
        top = np.argpartition(-candidates, k - 1)[:k] if k < len(candidates) else np.arange(k)
        picked = top if positions is None else positions[top]
        order = np.lexsort((index.chunk_ids[picked], -scores[picked]))
        picked = picked[order]
        return [(int(index.rows[p]), float(scores[p])) for p in picked]

    def similarities(self, vector: NDArray[np.float32], rows: Sequence[int]) -> list[float]:
        """Cosine similarity of ``vector`` with each stored chunk in ``rows``."""
        with self._lock:
            index = self._vector_index()
            positions = np.searchsorted(index.rows, np.asarray(rows, dtype=np.int64))
            return [float(x) for x in index.matrix[positions] @ vector]

    def chunks(self, rows: Sequence[int]) -> dict[int, StoredChunk]:
        out: dict[int, StoredChunk] = {}
        unique = list(dict.fromkeys(rows))
        with self._lock:
            for start in range(0, len(unique), 500):
                part = unique[start : start + 500]
                marks = ",".join("?" * len(part))
                for r in self._db.execute(
                    "SELECT c.id, c.chunk_id, c.source, c.ordinal, c.text, c.heading, d.doc_id, "
                    "d.title, d.breadcrumb, d.category, d.kb_scope FROM chunks c "
                    f"JOIN documents d ON d.source = c.source WHERE c.id IN ({marks})",
                    part,
                ):
                    out[r[0]] = StoredChunk(*r)
        return out

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> SqliteKnowledgeBase:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

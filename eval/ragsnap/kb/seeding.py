"""Seed import: make a knowledge base hold exactly the seed documents.

Delete-then-upload by ``source``. Each stored document keeps the hash it was
indexed from (the file's bytes plus the chunk settings), which is the
manifest: a re-run with nothing changed writes nothing, a changed file is
re-chunked and re-embedded alone, a document whose file is gone is removed,
and ``reindex`` rebuilds everything. All of it is one ``WriteBatch``, so the
knowledge base moves from the old state to the new one in one step.

A knowledge base remembers the embedder and tokenizer it was built with;
seeding with different ones is refused unless ``reindex`` rebuilds it all,
because old and new vectors (or tokens) would not be comparable.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass

from ..errors import BackendError
from .backends import DocumentInfo, KnowledgeBase, ReceiptStore, Upload, WriteBatch
from .corpus import ChunkSettings, SeedDocument, chunk_document
from .embedders import Embedder, Fingerprint
from .numeric import VECTOR_ENCODING
from .text import Tokenizer

__all__ = [
    "SeedPlan",
    "check_compatible",
    "corpus_revision",
    "delete_document",
    "document_digest",
    "index_hash",
    "index_hashes",
    "plan_from_hashes",
    "plan_seed",
    "seed",
    "upsert_document",
]


def index_hash(doc: SeedDocument, settings: ChunkSettings) -> str:
    """What a document was indexed from: its file and the chunk settings."""
    return hashlib.sha256(f"{doc.content_hash}\n{settings.fingerprint()}".encode()).hexdigest()


def document_digest(doc: SeedDocument, settings: ChunkSettings) -> str:
    """A document as its lookups see it, on any machine: SHA-256 over its parsed
    metadata, its body (line endings already folded to LF) and the chunk settings.

    Unlike ``index_hash`` (the file's bytes), a checkout's line endings or a
    reformatted frontmatter with the same values do not move it; the fixture
    manifest records it (``ragsnap.snapshot.provenance``).
    """
    fields = {
        "source": doc.source,
        "title": doc.title,
        "breadcrumb": doc.breadcrumb,
        "category": doc.category,
        "kbScope": doc.kb_scope,
        "docId": doc.doc_id,
        "metadata": doc.metadata,
        "body": doc.body,
        "chunking": settings.fingerprint(),
    }
    text = json.dumps(fields, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def corpus_revision(hashes: Mapping[str, str]) -> str:
    """One digest of a whole corpus: SHA-256 over its sources' index hashes, in source
    order (what ``ragsnap serve`` reports as ``corpusRevision``)."""
    digest = hashlib.sha256()
    for source in sorted(hashes):
        digest.update(f"{source}\0{hashes[source]}\n".encode())
    return digest.hexdigest()


@dataclass(frozen=True, slots=True)
class SeedPlan:
    """Which sources an import adds, updates, leaves alone and removes."""

    added: tuple[str, ...]
    updated: tuple[str, ...]
    unchanged: tuple[str, ...]
    removed: tuple[str, ...]

    @property
    def total(self) -> int:
        """Seed documents (removed ones not counted)."""
        return len(self.added) + len(self.updated) + len(self.unchanged)

    @property
    def changes(self) -> bool:
        return bool(self.added or self.updated or self.removed)

    def summary(self) -> str:
        return (
            f"{len(self.added)} added, {len(self.updated)} updated, "
            f"{len(self.unchanged)} unchanged, {len(self.removed)} removed"
        )


def index_hashes(docs: Iterable[SeedDocument], settings: ChunkSettings) -> dict[str, str]:
    """Source -> index hash of every document, in order: one pass that parses and
    checks the whole corpus (a streamed corpus is read once here)."""
    return {doc.source: index_hash(doc, settings) for doc in docs}


def plan_from_hashes(
    hashes: Mapping[str, str], stored: Mapping[str, DocumentInfo], reindex: bool = False
) -> SeedPlan:
    """Compare the seed documents' index hashes with what the store holds (pure)."""
    added: list[str] = []
    updated: list[str] = []
    unchanged: list[str] = []
    for source, digest in hashes.items():
        have = stored.get(source)
        if have is None:
            added.append(source)
        elif reindex or have.index_hash != digest:
            updated.append(source)
        else:
            unchanged.append(source)
    removed = sorted(s for s in stored if s not in hashes)
    return SeedPlan(tuple(added), tuple(updated), tuple(unchanged), tuple(removed))


def plan_seed(
    docs: Iterable[SeedDocument],
    stored: Mapping[str, DocumentInfo],
    settings: ChunkSettings,
    reindex: bool = False,
) -> SeedPlan:
    """Compare seed documents with what the store holds (pure)."""
    return plan_from_hashes(index_hashes(docs, settings), stored, reindex)


def check_compatible(
    meta: dict[str, str], embedder: Fingerprint, tokenizer: str, where: str, *, fix: str
) -> None:
    """Refuse an embedder, tokenizer or vector encoding other than the store's."""
    if "embedder" in meta:
        built = Fingerprint.from_json(json.loads(meta["embedder"]))
        if built != embedder:
            raise BackendError(
                f"{where} was built with the embedder {built}, not {embedder}; {fix}"
            )
        encoding = meta.get("vectorEncoding", "raw float32 (an older ragsnap)")
        if encoding != VECTOR_ENCODING:
            raise BackendError(
                f"{where} holds vectors encoded as {encoding}, not {VECTOR_ENCODING} "
                "(exact scores on every machine); rebuild it with `ragsnap seed --reindex` "
                "(with the same --backend)"
            )
    built_tokens = meta.get("tokenizer")
    if built_tokens is not None and built_tokens != tokenizer:
        raise BackendError(
            f"{where} was built with the {built_tokens} tokenizer, not {tokenizer}; {fix}"
        )


def seed(
    kb: KnowledgeBase,
    docs: Iterable[SeedDocument],
    embedder: Embedder,
    tokenizer: Tokenizer,
    settings: ChunkSettings,
    *,
    reindex: bool = False,
    hashes: Mapping[str, str] | None = None,
    where: str = "the knowledge base",
    on_upload: Callable[[Upload], None] | None = None,
    before_write: Callable[[SeedPlan], None] | None = None,
) -> SeedPlan:
    """Bring ``kb`` in line with ``docs``; return what was done.

    ``docs`` is read twice (a list, or a ``SeedCorpus`` that re-reads its
    files): once to plan, then for the documents to upload, so only one body
    at a time is in memory. Every document is parsed and checked in the first
    pass, before anything is written; pass ``hashes`` (``index_hashes``) when
    that pass already ran, e.g. before the store was opened.
    """
    fingerprint = embedder.fingerprint
    stored = kb.documents()
    if stored and not reindex:
        check_compatible(
            kb.read_meta(),
            fingerprint,
            tokenizer.name,
            where,
            fix="run `ragsnap seed --reindex` (with the same --backend) to rebuild every "
            "document with the new one, or configure the old one again",
        )
    if hashes is None:
        hashes = index_hashes(docs, settings)
    plan = plan_from_hashes(hashes, stored, reindex)
    meta = {
        "embedder": json.dumps(fingerprint.to_json(), sort_keys=True),
        "tokenizer": tokenizer.name,
        "chunking": settings.fingerprint(),
    }
    if not plan.changes:  # the compatibility check above ran: nothing to record either
        return plan
    if before_write is not None:
        before_write(plan)
    wanted = {*plan.added, *plan.updated}

    def uploads() -> Iterator[Upload]:
        for doc in docs:
            if doc.source not in wanted:
                continue
            chunks = chunk_document(doc, settings)
            vectors = embedder.embed_documents(
                [c.text for c in chunks], [c.chunk_id for c in chunks]
            )
            tokens = [" ".join(tokenizer.tokens(c.text)) for c in chunks]
            replaces = reindex or doc.source in stored
            yield Upload(doc, index_hash(doc, settings), chunks, tokens, vectors, replaces)

    kb.write(WriteBatch(plan.removed, uploads(), meta, on_upload))
    return plan


def upsert_document(
    kb: KnowledgeBase,
    doc: SeedDocument,
    embedder: Embedder,
    tokenizer: Tokenizer,
    settings: ChunkSettings,
    *,
    where: str = "the knowledge base",
    receipt: Callable[[str, int], Mapping[str, str]] | None = None,
) -> tuple[str, int]:
    """Delete-then-upload one document by source, leaving every other document alone.

    Returns ``(status, chunks)``: ``added``, ``updated`` or ``unchanged`` (the
    stored document was indexed from the same bytes and chunk settings, so
    no document is written). ``receipt(status, chunks)`` gives the service's
    receipts (``ReceiptStore``), stored in the same write (for an unchanged
    document, a write of them alone, when there are any). This
    is the service's upload endpoint; ``seed`` is the whole-corpus import.
    """
    fingerprint = embedder.fingerprint
    stored = kb.documents()
    if stored:
        check_compatible(
            kb.read_meta(),
            fingerprint,
            tokenizer.name,
            where,
            fix="rebuild it with `ragsnap seed --reindex` using the service's embedder",
        )
    digest = index_hash(doc, settings)
    have = stored.get(doc.source)
    if have is not None and have.index_hash == digest:
        entries = receipt("unchanged", have.chunk_count) if receipt is not None else {}
        if entries:
            if not isinstance(kb, ReceiptStore):
                raise BackendError(f"{where} keeps no receipts; this is a bug in the caller")
            kb.write_receipts(entries)
        return "unchanged", have.chunk_count
    chunks = chunk_document(doc, settings)
    vectors = embedder.embed_documents([c.text for c in chunks], [c.chunk_id for c in chunks])
    tokens = [" ".join(tokenizer.tokens(c.text)) for c in chunks]
    status = "added" if have is None else "updated"
    receipts = receipt(status, len(chunks)) if receipt is not None else {}
    meta = {
        "embedder": json.dumps(fingerprint.to_json(), sort_keys=True),
        "tokenizer": tokenizer.name,
        "chunking": settings.fingerprint(),
    }
    upload = Upload(doc, digest, chunks, tokens, vectors, replaces=have is not None)
    kb.write(WriteBatch((), [upload], meta, receipts=receipts))
    return status, len(chunks)


def delete_document(
    kb: KnowledgeBase, source: str, receipts: Mapping[str, str] | None = None
) -> int:
    """Remove ``source`` and its chunks; return how many chunks it had (0: not stored).
    ``receipts`` are stored in the same write (``ReceiptStore``)."""
    have = kb.documents().get(source)
    if have is None:
        return 0
    kb.write(WriteBatch((source,), receipts=dict(receipts or {})))
    return have.chunk_count

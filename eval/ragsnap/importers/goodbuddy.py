"""GoodBuddy-style retrieval fixtures: documents with chunks, chunk-graded queries.

    ragsnap import goodbuddy fixture.json --out DIR

The format (one JSON object; unknown keys such as ``id`` or ``provenance``
are ignored)::

    {"version": 1,
     "documents": [{"id": "doc-secrets", "title": "Credential storage",
                    "chunks": [{"id": "chunk-secrets-main", "content": "API tokens ..."}]}],
     "queries": [{"id": "query-secrets-en", "language": "en",
                  "query": "Where should API tokens be stored?", "noAnswer": false,
                  "judgments": [{"chunkId": "chunk-secrets-main", "relevance": 3,
                                 "spans": [{"text": "API tokens and service keys ..."}]}]}]}

Every *chunk* becomes one seed document whose ``source`` is the chunk id, so
a judgment stays chunk-exact (its ragsnap chunk is ``<chunkId>#0``); the
parent document's id becomes ``doc_id`` and its title the title. Relevance
(1-3) becomes the grade, spans are kept verbatim and must occur in their
chunk's text. A ``noAnswer`` query judges nothing. The format has no splits
or categories: ``--split`` (default ``test``) and ``--category`` (default
``imported``) apply, unless a query carries its own ``split`` / ``category``.
A query without ``language`` gets ``--language`` (default ``en``).
"""

from __future__ import annotations

from collections.abc import Iterator
from collections.abc import Set as AbstractSet
from pathlib import Path
from typing import Any

from . import ImportOptions, SourceDoc, SourceJudgment, SourceQuery, VectorSpace
from ._json import (
    CATEGORY,
    CATEGORY_RULE,
    LANGUAGE,
    LANGUAGE_RULE,
    JsonChecks,
    check_options,
    describe,
)

__all__ = ["GoodBuddyImporter"]

#: document / chunk keys that are read as fields, not kept as metadata
_DOC_FIELDS = frozenset({"id", "title", "chunks", "source", "text", "doc_id", "kb_scope"})
_CHUNK_FIELDS = frozenset({"id", "content", "text", "title", "source", "doc_id", "kb_scope"})


class GoodBuddyImporter:
    """Reads one GoodBuddy-style JSON fixture (see the module docstring)."""

    format = "goodbuddy"
    space: VectorSpace | None = None

    def __init__(self, source: Path, options: ImportOptions):
        check_options(options, "en, de or zh-CN")
        self.path = source
        self.options = options
        self.skipped: list[str] = []
        self._texts: dict[str, str] | None = None  # chunk id -> text, once documents() ran
        self._json = checks = JsonChecks(source)
        data = checks.load(
            "pass the GoodBuddy fixture (a .json file) as SOURCE",
            "write one object with `documents` and `queries`",
        )
        version = data.get("version")
        if version is not None and (type(version) is not int or version != 1):
            raise checks.error(
                f"has version {version!r}; this importer reads version 1",
                "convert the fixture to version 1 or remove `version`",
                "/version",
            )
        checks.arrays(data, "documents", "queries")
        self._data: dict[str, Any] = data

    # -- documents -------------------------------------------------------------

    def documents(self) -> Iterator[SourceDoc]:
        """One ``SourceDoc`` per chunk, in the file's order."""
        checks = self._json
        texts: dict[str, str] = {}
        chunk_at: dict[str, str] = {}  # chunk ids are unique across documents
        for at, doc_id, doc in checks.entries(
            self._data["documents"], "/documents", "document", seen={}
        ):
            title = checks.optional_text(doc, "title", at, "make `title` text or remove it")
            category = checks.optional_text(
                doc, "category", at, "make `category` text or remove it"
            )
            chunks = checks.array(
                doc, "chunks", at, "list the document's chunks as [{id, content}]", required=True
            )
            if not chunks:
                self.skipped.append(f"document {doc_id!r} has no chunks ({at})")
            doc_meta = {k: v for k, v in doc.items() if k not in _DOC_FIELDS and k != "category"}
            for cat, chunk_id, chunk in checks.entries(
                chunks, f"{at}/chunks", "chunk", seen=chunk_at
            ):
                key = "content" if "content" in chunk or "text" not in chunk else "text"
                text = texts[chunk_id] = checks.text(
                    chunk, key, cat, "put the chunk's text in `content`"
                )
                metadata = {
                    **doc_meta,
                    **{k: v for k, v in chunk.items() if k not in _CHUNK_FIELDS},
                }
                yield SourceDoc(
                    source=chunk_id,
                    text=text,
                    title=title,
                    doc_id=doc_id,
                    category=category,
                    metadata=metadata,
                    origin=f"{self.path} at {cat}",
                )
        self._texts = texts

    # -- queries ---------------------------------------------------------------

    def queries(self, sources: AbstractSet[str]) -> list[SourceQuery]:
        """Every query with its chunk judgments, in the file's order."""
        if self._texts is None:  # documents() was not consumed: read the chunks now
            for _ in self.documents():
                pass
        texts = self._texts or {}
        checks = self._json
        queries: list[SourceQuery] = []
        for at, query_id, item in checks.entries(
            self._data["queries"], "/queries", "query", seen={}
        ):
            key = "query" if "query" in item or "text" not in item else "text"
            text = checks.limit(
                checks.text(item, key, at, "put the question in `query`"),
                "the query",
                "shorten it",
                f"{at}/{key}",
            )
            language = checks.choice(
                item, "language", at, LANGUAGE, f"use {LANGUAGE_RULE}, or remove it"
            )
            category = checks.choice(
                item, "category", at, CATEGORY, f"use {CATEGORY_RULE}, or remove it"
            )
            split = checks.split(item, at, "use dev or test")
            no_answer = checks.flag(item, "noAnswer", at, "write true or false")
            judgments = self._judgments(item, at, sources, texts)
            if no_answer and judgments:
                raise checks.error(
                    "a noAnswer query cannot judge chunks relevant",
                    "remove its judgments or set noAnswer to false",
                    f"{at}/judgments",
                )
            if not no_answer and not judgments:
                raise checks.error(
                    "the query judges no chunk, so it cannot be scored",
                    "add judgments [{chunkId, relevance, spans}] or set noAnswer to true",
                    f"{at}/judgments",
                )
            queries.append(
                SourceQuery(
                    id=query_id,
                    text=text,
                    language=language or self.options.language or "en",
                    category=category or self.options.category or "imported",
                    split=split or self.options.split or "test",
                    judgments=tuple(judgments),
                    no_answer=no_answer,
                )
            )
        return queries

    def _judgments(
        self, item: dict[str, Any], at: str, sources: AbstractSet[str], texts: dict[str, str]
    ) -> list[SourceJudgment]:
        checks = self._json
        raw = checks.array(
            item, "judgments", at, "list the judgments as [{chunkId, relevance, spans}]"
        )
        judgments: list[SourceJudgment] = []
        judged: dict[str, str] = {}
        for j, raw_judgment in enumerate(raw):
            jat = f"{at}/judgments/{j}"
            judgment = checks.object(raw_judgment, jat, "a judgment")
            chunk_id = judgment.get("chunkId")
            if not isinstance(chunk_id, str):
                raise checks.error(
                    "`chunkId` is missing"
                    if chunk_id is None
                    else f"`chunkId` must be text, not {describe(chunk_id)}",
                    "name the judged chunk's id in `chunkId`",
                    f"{jat}/chunkId",
                )
            if chunk_id not in sources:
                raise checks.error(
                    f"judges chunk {chunk_id!r}, which no document has",
                    "use the id of a chunk under /documents/*/chunks, or remove the judgment",
                    f"{jat}/chunkId",
                )
            if chunk_id in judged:
                raise checks.error(
                    f"chunk {chunk_id!r} is judged twice (first at {judged[chunk_id]})",
                    "keep one judgment per chunk",
                    f"{jat}/chunkId",
                )
            judged[chunk_id] = jat
            relevance = checks.whole(
                judgment,
                "relevance",
                jat,
                "grade 1 (partly), 2 (relevant) or 3 (answers it)",
                rule="a whole number from 1 to 3",
                low=1,
                high=3,
            )
            spans = self._spans(judgment, jat, texts.get(chunk_id, ""), chunk_id)
            judgments.append(SourceJudgment(target=chunk_id, grade=relevance, spans=spans))
        return judgments

    def _spans(
        self, judgment: dict[str, Any], jat: str, chunk_text: str, chunk_id: str
    ) -> tuple[str, ...]:
        checks = self._json
        raw = checks.array(judgment, "spans", jat, 'list the spans as [{"text": "..."}]')
        spans: list[str] = []
        for k, raw_span in enumerate(raw):
            sat = f"{jat}/spans/{k}"
            span = checks.object(raw_span, sat, "a span")
            text = span.get("text")
            if not isinstance(text, str) or not text:
                raise checks.error(
                    "`text` is missing" if text is None else "`text` must be non-empty text",
                    "quote the answer's exact words in `text`",
                    f"{sat}/text",
                )
            checks.limit(text, "the span", "quote a shorter exact span", f"{sat}/text")
            if text not in chunk_text:
                raise checks.error(
                    f"span {_excerpt(text)!r} does not occur verbatim in chunk {chunk_id!r}",
                    "copy the span exactly from the chunk's content (spans are exact)",
                    f"{sat}/text",
                )
            if text not in spans:  # a repeated span counts once anyway
                spans.append(text)
        return tuple(spans)


def _excerpt(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."

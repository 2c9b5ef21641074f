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

import re
from collections.abc import Iterator
from collections.abc import Set as AbstractSet
from pathlib import Path
from typing import Any

from ..errors import InputError, UsageError
from ..jsonio import read_json
from . import ImportOptions, SourceDoc, SourceJudgment, SourceQuery, VectorSpace

__all__ = ["GoodBuddyImporter"]

_SOURCE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/:-]{0,199}$")
_CASE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_LANGUAGE = re.compile(r"^[a-z]{2,3}(-[A-Za-z0-9]{1,8})*$")
_CATEGORY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,63}$")
_SPLITS = ("dev", "test")
_MAX_TEXT = 10_000  # golden-cases.json's limit for a query or a span
#: document / chunk keys that are read as fields, not kept as metadata
_DOC_FIELDS = frozenset({"id", "title", "chunks", "source", "text", "doc_id", "kb_scope"})
_CHUNK_FIELDS = frozenset({"id", "content", "text", "title", "source", "doc_id", "kb_scope"})


def _pointer(*parts: str | int) -> str:
    """An RFC 6901 JSON pointer from its reference tokens."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def _check_options(options: ImportOptions) -> None:
    """Refuse command-line defaults that golden-cases.json could not hold."""
    if options.split is not None and options.split not in _SPLITS:
        raise UsageError(f"--split {options.split!r} is not a ragsnap split; use dev or test")
    if options.category is not None and not _CATEGORY.match(options.category):
        raise UsageError(
            f"--category {options.category!r} is not a usable category; use letters, digits "
            "and . _ / - (at most 64), e.g. `imported`"
        )
    if options.language is not None and not _LANGUAGE.match(options.language):
        raise UsageError(
            f"--language {options.language!r} is not a language tag; use e.g. en, de or zh-CN"
        )


class GoodBuddyImporter:
    """Reads one GoodBuddy-style JSON fixture (see the module docstring)."""

    format = "goodbuddy"
    space: VectorSpace | None = None

    def __init__(self, source: Path, options: ImportOptions):
        _check_options(options)
        self.path = source
        self.options = options
        self.skipped: list[str] = []
        self._texts: dict[str, str] | None = None  # chunk id -> text, once documents() ran
        data = read_json(source, "pass the GoodBuddy fixture (a .json file) as SOURCE")
        if not isinstance(data, dict):
            raise self._error(
                "is not a JSON object", "write one object with `documents` and `queries`"
            )
        version = data.get("version")
        if version is not None and (type(version) is not int or version != 1):
            raise self._error(
                f"has version {version!r}; this importer reads version 1",
                "convert the fixture to version 1 or remove `version`",
                "/version",
            )
        for key in ("documents", "queries"):
            if key not in data:
                raise self._error(f"has no `{key}`", f"add the `{key}` array", f"/{key}")
            if not isinstance(data[key], list):
                raise self._error(f"`{key}` must be an array", f"make `{key}` an array", f"/{key}")
        self._data: dict[str, Any] = data

    # -- helpers ---------------------------------------------------------------

    def _error(self, problem: str, fix: str, pointer: str | None = None) -> InputError:
        return InputError(self.path, problem, fix, pointer)

    def _object(self, value: Any, pointer: str, what: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self._error(
                f"{what} must be a JSON object", f"write {what} as an object", pointer
            )
        return value

    def _string(
        self, item: dict[str, Any], key: str, pointer: str, fix: str, *, required: bool = True
    ) -> str | None:
        value = item.get(key)
        if value is None:
            if required:
                raise self._error(f"`{key}` is missing", fix, _pointer_join(pointer, key))
            return None
        if not isinstance(value, str) or not value.strip():
            raise self._error(
                f"`{key}` must be non-empty text, not {_describe(value)}",
                fix,
                _pointer_join(pointer, key),
            )
        return value

    def _id(self, item: dict[str, Any], pointer: str, pattern: re.Pattern[str], rule: str) -> str:
        value = self._string(item, "id", pointer, f"give it an `id` of {rule}")
        assert value is not None
        if not pattern.match(value):
            raise self._error(
                f"id {value!r} is not usable in ragsnap",
                f"use an id of {rule}",
                _pointer_join(pointer, "id"),
            )
        return value

    # -- documents -------------------------------------------------------------

    def documents(self) -> Iterator[SourceDoc]:
        """One ``SourceDoc`` per chunk, in the file's order."""
        texts: dict[str, str] = {}
        chunk_at: dict[str, str] = {}
        doc_at: dict[str, str] = {}
        source_rule = "letters, digits and . _ / : - (at most 200 characters)"
        for i, raw in enumerate(self._data["documents"]):
            at = _pointer("documents", i)
            doc = self._object(raw, at, "a document")
            doc_id = self._id(doc, at, _SOURCE, source_rule)
            if doc_id in doc_at:
                raise self._error(
                    f"document id {doc_id!r} appears twice (first at {doc_at[doc_id]})",
                    "give every document its own id",
                    f"{at}/id",
                )
            doc_at[doc_id] = at
            title = self._string(doc, "title", at, "make `title` text or remove it", required=False)
            category = self._string(
                doc, "category", at, "make `category` text or remove it", required=False
            )
            chunks = doc.get("chunks")
            if not isinstance(chunks, list):
                raise self._error(
                    "`chunks` is missing or not an array"
                    if chunks is None
                    else f"`chunks` must be an array, not {_describe(chunks)}",
                    "list the document's chunks as [{id, content}]",
                    f"{at}/chunks",
                )
            if not chunks:
                self.skipped.append(f"document {doc_id!r} has no chunks ({at})")
            doc_meta = {k: v for k, v in doc.items() if k not in _DOC_FIELDS and k != "category"}
            for j, raw_chunk in enumerate(chunks):
                cat = f"{at}/chunks/{j}"
                chunk = self._object(raw_chunk, cat, "a chunk")
                chunk_id = self._id(chunk, cat, _SOURCE, source_rule)
                if chunk_id in chunk_at:
                    raise self._error(
                        f"chunk id {chunk_id!r} appears twice (first at {chunk_at[chunk_id]})",
                        "give every chunk its own id",
                        f"{cat}/id",
                    )
                chunk_at[chunk_id] = cat
                key = "content" if "content" in chunk or "text" not in chunk else "text"
                text = self._string(chunk, key, cat, "put the chunk's text in `content`")
                assert text is not None
                texts[chunk_id] = text
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
        queries: list[SourceQuery] = []
        query_at: dict[str, str] = {}
        for i, raw in enumerate(self._data["queries"]):
            at = _pointer("queries", i)
            item = self._object(raw, at, "a query")
            query_id = self._id(
                item, at, _CASE_ID, "letters, digits and . _ - (at most 128 characters)"
            )
            if query_id in query_at:
                raise self._error(
                    f"query id {query_id!r} appears twice (first at {query_at[query_id]})",
                    "give every query its own id",
                    f"{at}/id",
                )
            query_at[query_id] = at
            key = "query" if "query" in item or "text" not in item else "text"
            text = self._string(item, key, at, "put the question in `query`")
            assert text is not None
            if len(text) > _MAX_TEXT:
                raise self._error(
                    f"the query is {len(text):,} characters long (at most {_MAX_TEXT:,})",
                    "shorten it",
                    f"{at}/{key}",
                )
            language = self._choice(item, "language", at, _LANGUAGE, "a language tag like en")
            category = self._choice(item, "category", at, _CATEGORY, "letters, digits, . _ / -")
            split = item.get("split")
            if split is not None and split not in _SPLITS:
                raise self._error(
                    f"split {split!r} is not a ragsnap split", "use dev or test", f"{at}/split"
                )
            no_answer = item.get("noAnswer", False)
            if not isinstance(no_answer, bool):
                raise self._error(
                    f"`noAnswer` must be true or false, not {_describe(no_answer)}",
                    "write true or false",
                    f"{at}/noAnswer",
                )
            judgments = self._judgments(item, at, sources, texts)
            if no_answer and judgments:
                raise self._error(
                    "a noAnswer query cannot judge chunks relevant",
                    "remove its judgments or set noAnswer to false",
                    f"{at}/judgments",
                )
            if not no_answer and not judgments:
                raise self._error(
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

    def _choice(
        self, item: dict[str, Any], key: str, at: str, pattern: re.Pattern[str], rule: str
    ) -> str | None:
        value = item.get(key)
        if value is None:
            return None
        if not isinstance(value, str) or not pattern.match(value):
            raise self._error(
                f"`{key}` {value!r} is not usable in ragsnap",
                f"use {rule}, or remove it",
                f"{at}/{key}",
            )
        return value

    def _judgments(
        self, item: dict[str, Any], at: str, sources: AbstractSet[str], texts: dict[str, str]
    ) -> list[SourceJudgment]:
        raw = item.get("judgments", [])
        if not isinstance(raw, list):
            raise self._error(
                f"`judgments` must be an array, not {_describe(raw)}",
                "list the judgments as [{chunkId, relevance, spans}]",
                f"{at}/judgments",
            )
        judgments: list[SourceJudgment] = []
        judged: dict[str, str] = {}
        for j, raw_judgment in enumerate(raw):
            jat = f"{at}/judgments/{j}"
            judgment = self._object(raw_judgment, jat, "a judgment")
            chunk_id = judgment.get("chunkId")
            if not isinstance(chunk_id, str):
                raise self._error(
                    "`chunkId` is missing"
                    if chunk_id is None
                    else f"`chunkId` must be text, not {_describe(chunk_id)}",
                    "name the judged chunk's id in `chunkId`",
                    f"{jat}/chunkId",
                )
            if chunk_id not in sources:
                raise self._error(
                    f"judges chunk {chunk_id!r}, which no document has",
                    "use the id of a chunk under /documents/*/chunks, or remove the judgment",
                    f"{jat}/chunkId",
                )
            if chunk_id in judged:
                raise self._error(
                    f"chunk {chunk_id!r} is judged twice (first at {judged[chunk_id]})",
                    "keep one judgment per chunk",
                    f"{jat}/chunkId",
                )
            judged[chunk_id] = jat
            relevance = judgment.get("relevance")
            if type(relevance) is not int or not 1 <= relevance <= 3:
                raise self._error(
                    "`relevance` is missing"
                    if relevance is None
                    else f"`relevance` must be a whole number from 1 to 3, not {relevance!r}",
                    "grade 1 (partly), 2 (relevant) or 3 (answers it)",
                    f"{jat}/relevance",
                )
            spans = self._spans(judgment, jat, texts.get(chunk_id, ""), chunk_id)
            judgments.append(SourceJudgment(target=chunk_id, grade=relevance, spans=spans))
        return judgments

    def _spans(
        self, judgment: dict[str, Any], jat: str, chunk_text: str, chunk_id: str
    ) -> tuple[str, ...]:
        raw = judgment.get("spans", [])
        if not isinstance(raw, list):
            raise self._error(
                f"`spans` must be an array, not {_describe(raw)}",
                'list the spans as [{"text": "..."}]',
                f"{jat}/spans",
            )
        spans: list[str] = []
        for k, raw_span in enumerate(raw):
            sat = f"{jat}/spans/{k}"
            span = self._object(raw_span, sat, "a span")
            text = span.get("text")
            if not isinstance(text, str) or not text:
                raise self._error(
                    "`text` is missing" if text is None else "`text` must be non-empty text",
                    "quote the answer's exact words in `text`",
                    f"{sat}/text",
                )
            if len(text) > _MAX_TEXT:
                raise self._error(
                    f"the span is {len(text):,} characters long (at most {_MAX_TEXT:,})",
                    "quote a shorter exact span",
                    f"{sat}/text",
                )
            if text not in chunk_text:
                raise self._error(
                    f"span {_excerpt(text)!r} does not occur verbatim in chunk {chunk_id!r}",
                    "copy the span exactly from the chunk's content (spans are exact)",
                    f"{sat}/text",
                )
            if text not in spans:  # a repeated span counts once anyway
                spans.append(text)
        return tuple(spans)


def _pointer_join(pointer: str, key: str) -> str:
    return pointer + _pointer(key)


def _describe(value: Any) -> str:
    """A value's JSON type, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "empty text" if not value.strip() else "text"
    if isinstance(value, list):
        return "an array"
    return "an object"


def _excerpt(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."

"""Qilbee-style contract fixtures: documents and queries with their vectors.

    ragsnap import qilbee contract.json --out DIR

The format (one JSON object; unknown keys are ignored)::

    {"space": {"provider": "acme", "model": "embed-small", "revision": "2026-01",
               "dimensions": 4},
     "documents": [{"id": "pool", "text": "The pool holds ...", "vector": [0.9, 0.1, 0, 0]}],
     "queries": [{"id": "q1", "split": "dev", "category": "database",
                  "text": "How big is the pool?", "vector": [0.8, 0.2, 0, 0],
                  "judgments_complete": true, "judgments": {"pool": 3, "tls": 0}}]}

Documents become seed documents (``source`` = id). Grades (0-3) are kept in
the judgments' order; a query that judges nothing above 0 is a no-answer
query. ``judgments_complete: true`` means every unjudged document is known
non-relevant: it is written as a grade-0 judgment, so coverage is complete.
The vectors become a frozen embedder (``vectors.json``) whose fingerprint is
``frozen``, ``<provider>/<model>``, the revision and the dimension; each
vector must hold exactly ``dimensions`` numbers that are finite in float32.
A query without ``split`` / ``category`` / ``language`` gets ``--split``
(default ``test``), ``--category`` (default ``imported``) and ``--language``
(default ``en``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from collections.abc import Set as AbstractSet
from pathlib import Path
from typing import Any

from ..errors import InputError, UsageError
from ..jsonio import read_json
from . import ImportOptions, SourceDoc, SourceJudgment, SourceQuery, VectorSpace

__all__ = ["QilbeeImporter"]

_SOURCE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/:-]{0,199}$")
_CASE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_LANGUAGE = re.compile(r"^[a-z]{2,3}(-[A-Za-z0-9]{1,8})*$")
_CATEGORY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,63}$")
_SPLITS = ("dev", "test")
_MAX_TEXT = 10_000  # golden-cases.json's limit for a query
_FLOAT32_MAX = 3.4028234663852886e38
_SOURCE_RULE = "letters, digits and . _ / : - (at most 200 characters)"
_CASE_RULE = "letters, digits and . _ - (at most 128 characters)"


def _pointer(*parts: str | int) -> str:
    """An RFC 6901 JSON pointer from its reference tokens."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


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


class QilbeeImporter:
    """Reads one Qilbee-style JSON contract fixture (see the module docstring)."""

    format = "qilbee"

    def __init__(self, source: Path, options: ImportOptions):
        if options.split is not None and options.split not in _SPLITS:
            raise UsageError(f"--split {options.split!r} is not a ragsnap split; use dev or test")
        if options.category is not None and not _CATEGORY.match(options.category):
            raise UsageError(
                f"--category {options.category!r} is not a usable category; use letters, "
                "digits and . _ / - (at most 64), e.g. `imported`"
            )
        if options.language is not None and not _LANGUAGE.match(options.language):
            raise UsageError(
                f"--language {options.language!r} is not a language tag; use e.g. en or zh-CN"
            )
        self.path = source
        self.options = options
        self.skipped: list[str] = []
        data = read_json(source, "pass the Qilbee contract fixture (a .json file) as SOURCE")
        if not isinstance(data, dict):
            raise self._error(
                "is not a JSON object", "write one object with `space`, `documents` and `queries`"
            )
        for key in ("documents", "queries"):
            if key not in data:
                raise self._error(f"has no `{key}`", f"add the `{key}` array", f"/{key}")
            if not isinstance(data[key], list):
                raise self._error(f"`{key}` must be an array", f"make `{key}` an array", f"/{key}")
        self._data: dict[str, Any] = data
        self.space: VectorSpace | None = self._space(data.get("space"))

    # -- helpers ---------------------------------------------------------------

    def _error(self, problem: str, fix: str, pointer: str | None = None) -> InputError:
        return InputError(self.path, problem, fix, pointer)

    def _object(self, value: Any, pointer: str, what: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self._error(
                f"{what} must be a JSON object", f"write {what} as an object", pointer
            )
        return value

    def _text(self, item: dict[str, Any], key: str, at: str, fix: str) -> str:
        value = item.get(key)
        if not isinstance(value, str) or not value.strip():
            raise self._error(
                f"`{key}` is missing"
                if value is None
                else f"`{key}` must be non-empty text, not {_describe(value)}",
                fix,
                at + _pointer(key),
            )
        return value

    def _optional(
        self, item: dict[str, Any], key: str, at: str, pattern: re.Pattern[str], rule: str
    ) -> str | None:
        value = item.get(key)
        if value is None:
            return None
        if not isinstance(value, str) or not pattern.match(value):
            raise self._error(
                f"`{key}` {value!r} is not usable in ragsnap", f"use {rule}", at + _pointer(key)
            )
        return value

    def _id(self, item: dict[str, Any], at: str, pattern: re.Pattern[str], rule: str) -> str:
        value = self._text(item, "id", at, f"give it an `id` of {rule}")
        if not pattern.match(value):
            raise self._error(f"id {value!r} is not usable in ragsnap", f"use {rule}", f"{at}/id")
        return value

    def _space(self, raw: Any) -> VectorSpace:
        fix = "describe the vectors as {provider, model, revision, dimensions}"
        if raw is None:
            raise self._error("has no `space`", fix, "/space")
        space = self._object(raw, "/space", "`space`")
        provider = self._text(space, "provider", "/space", fix)
        model = self._text(space, "model", "/space", fix)
        revision = space.get("revision")
        if isinstance(revision, int) and not isinstance(revision, bool):
            revision = str(revision)
        if not isinstance(revision, str) or not revision.strip():
            raise self._error(
                "`revision` is missing"
                if revision is None
                else f"`revision` must be non-empty text, not {_describe(revision)}",
                "name the model's revision (a version, date or hash) so the vectors are "
                "comparable only with their own",
                "/space/revision",
            )
        key = "dimensions" if "dimensions" in space or "dimension" not in space else "dimension"
        dimension = space.get(key)
        if type(dimension) is not int or dimension < 1:
            raise self._error(
                f"`{key}` is missing"
                if dimension is None
                else f"`{key}` must be a positive whole number, not {dimension!r}",
                "give the vectors' length",
                f"/space/{key}",
            )
        return VectorSpace(provider, model, revision, dimension)

    def _vector(self, item: dict[str, Any], at: str) -> list[float]:
        assert self.space is not None
        dimension = self.space.dimension
        value = item.get("vector")
        where = f"{at}/vector"
        fix = f"give {dimension} numbers, as /space/dimensions says"
        if not isinstance(value, list):
            raise self._error(
                "`vector` is missing"
                if value is None
                else f"`vector` must be an array of numbers, not {_describe(value)}",
                fix,
                where,
            )
        if len(value) != dimension:
            raise self._error(f"the vector has {len(value)} numbers, not {dimension}", fix, where)
        for k, x in enumerate(value):
            if type(x) not in (int, float) or not math.isfinite(x) or abs(x) > _FLOAT32_MAX:
                raise self._error(
                    f"{x!r} is not a number that is finite in float32",
                    "replace it with a finite number",
                    f"{where}/{k}",
                )
        return [float(x) for x in value]

    # -- documents -------------------------------------------------------------

    def documents(self) -> Iterator[SourceDoc]:
        """One ``SourceDoc`` per document, with its vector, in the file's order."""
        seen: dict[str, str] = {}
        for i, raw in enumerate(self._data["documents"]):
            at = _pointer("documents", i)
            doc = self._object(raw, at, "a document")
            doc_id = self._id(doc, at, _SOURCE, _SOURCE_RULE)
            if doc_id in seen:
                raise self._error(
                    f"document id {doc_id!r} appears twice (first at {seen[doc_id]})",
                    "give every document its own id",
                    f"{at}/id",
                )
            seen[doc_id] = at
            text = self._text(doc, "text", at, "put the document's text in `text`")
            title = doc.get("title")
            if title is not None and (not isinstance(title, str) or not title.strip()):
                raise self._error(
                    "`title` must be non-empty text", "fix or remove it", f"{at}/title"
                )
            category = self._optional(doc, "category", at, _CATEGORY, "letters, digits, . _ / -")
            metadata = doc.get("metadata", {})
            if not isinstance(metadata, dict):
                raise self._error(
                    f"`metadata` must be an object, not {_describe(metadata)}",
                    "write metadata as an object or remove it",
                    f"{at}/metadata",
                )
            yield SourceDoc(
                source=doc_id,
                text=text,
                title=title,
                category=category,
                metadata=dict(metadata),
                vector=self._vector(doc, at),
                origin=f"{self.path} at {at}",
            )

    # -- queries ---------------------------------------------------------------

    def queries(self, sources: AbstractSet[str]) -> list[SourceQuery]:
        """Every query with its graded judgments and vector, in the file's order."""
        queries: list[SourceQuery] = []
        seen: dict[str, str] = {}
        vector_of: dict[str, tuple[list[float], str]] = {}  # text -> (vector, pointer)
        for i, raw in enumerate(self._data["queries"]):
            at = _pointer("queries", i)
            item = self._object(raw, at, "a query")
            query_id = self._id(item, at, _CASE_ID, _CASE_RULE)
            if query_id in seen:
                raise self._error(
                    f"query id {query_id!r} appears twice (first at {seen[query_id]})",
                    "give every query its own id",
                    f"{at}/id",
                )
            seen[query_id] = at
            text = self._text(item, "text", at, "put the question in `text`")
            if len(text) > _MAX_TEXT:
                raise self._error(
                    f"the query is {len(text):,} characters long (at most {_MAX_TEXT:,})",
                    "shorten it",
                    f"{at}/text",
                )
            split = item.get("split")
            if split is not None and split not in _SPLITS:
                raise self._error(
                    f"split {split!r} is not a ragsnap split",
                    "use dev or test (ragsnap keeps no training split)",
                    f"{at}/split",
                )
            category = self._optional(item, "category", at, _CATEGORY, "letters, digits, . _ / -")
            language = self._optional(item, "language", at, _LANGUAGE, "a language tag like en")
            complete = item.get("judgments_complete", False)
            if not isinstance(complete, bool):
                raise self._error(
                    f"`judgments_complete` must be true or false, not {_describe(complete)}",
                    "write true when every unjudged document is known non-relevant",
                    f"{at}/judgments_complete",
                )
            vector = self._vector(item, at)
            if text in vector_of and vector_of[text][0] != vector:
                raise self._error(
                    f"has the same text as {vector_of[text][1]} but another vector "
                    "(frozen query vectors are looked up by text)",
                    "give the two queries the same vector or different texts",
                    f"{at}/vector",
                )
            vector_of.setdefault(text, (vector, at))
            judgments = self._judgments(item, at, sources)
            queries.append(
                SourceQuery(
                    id=query_id,
                    text=text,
                    language=language or self.options.language or "en",
                    category=category or self.options.category or "imported",
                    split=split or self.options.split or "test",
                    judgments=tuple(judgments),
                    no_answer=not any(j.grade > 0 for j in judgments),
                    judgments_complete=complete,
                    vector=vector,
                )
            )
        return queries

    def _judgments(
        self, item: dict[str, Any], at: str, sources: AbstractSet[str]
    ) -> list[SourceJudgment]:
        raw = item.get("judgments", {})
        if not isinstance(raw, dict):
            raise self._error(
                f"`judgments` must be an object of document id to grade, not {_describe(raw)}",
                'write {"doc-id": 3, ...}',
                f"{at}/judgments",
            )
        judgments: list[SourceJudgment] = []
        for doc_id, grade in raw.items():
            where = f"{at}/judgments" + _pointer(doc_id)
            if doc_id not in sources:
                raise self._error(
                    f"judges document {doc_id!r}, which /documents does not hold",
                    "use the id of a document in /documents, or remove the judgment",
                    where,
                )
            if type(grade) is not int or not 0 <= grade <= 3:
                raise self._error(
                    f"grade {grade!r} is not a whole number from 0 to 3",
                    "grade 0 (not relevant) to 3 (answers it)",
                    where,
                )
            judgments.append(SourceJudgment(target=doc_id, grade=grade))
        return judgments

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
    pointer,
)

__all__ = ["QilbeeImporter"]

_FLOAT32_MAX = 3.4028234663852886e38


class QilbeeImporter:
    """Reads one Qilbee-style JSON contract fixture (see the module docstring)."""

    format = "qilbee"

    def __init__(self, source: Path, options: ImportOptions):
        check_options(options, "en or zh-CN")
        self.path = source
        self.options = options
        self.skipped: list[str] = []
        self._json = checks = JsonChecks(source)
        data = checks.load(
            "pass the Qilbee contract fixture (a .json file) as SOURCE",
            "write one object with `space`, `documents` and `queries`",
        )
        checks.arrays(data, "documents", "queries")
        self._data: dict[str, Any] = data
        self.space: VectorSpace | None = self._space(data.get("space"))

    # -- helpers ---------------------------------------------------------------

    def _space(self, raw: Any) -> VectorSpace:
        checks = self._json
        fix = "describe the vectors as {provider, model, revision, dimensions}"
        if raw is None:
            raise checks.error("has no `space`", fix, "/space")
        space = checks.object(raw, "/space", "`space`")
        provider = checks.text(space, "provider", "/space", fix)
        model = checks.text(space, "model", "/space", fix)
        revision = space.get("revision")
        if isinstance(revision, int) and not isinstance(revision, bool):
            revision = str(revision)
        if not isinstance(revision, str) or not revision.strip():
            raise checks.error(
                "`revision` is missing"
                if revision is None
                else f"`revision` must be non-empty text, not {describe(revision)}",
                "name the model's revision (a version, date or hash) so the vectors are "
                "comparable only with their own",
                "/space/revision",
            )
        key = "dimensions" if "dimensions" in space or "dimension" not in space else "dimension"
        dimension = checks.whole(
            space, key, "/space", "give the vectors' length", rule="a positive whole number", low=1
        )
        return VectorSpace(provider, model, revision, dimension)

    def _vector(self, item: dict[str, Any], at: str) -> list[float]:
        assert self.space is not None
        dimension = self.space.dimension
        value = item.get("vector")
        where = f"{at}/vector"
        fix = f"give {dimension} numbers, as /space/dimensions says"
        if not isinstance(value, list):
            raise self._json.error(
                "`vector` is missing"
                if value is None
                else f"`vector` must be an array of numbers, not {describe(value)}",
                fix,
                where,
            )
        if len(value) != dimension:
            raise self._json.error(
                f"the vector has {len(value)} numbers, not {dimension}", fix, where
            )
        for k, x in enumerate(value):
            if type(x) not in (int, float) or not math.isfinite(x) or abs(x) > _FLOAT32_MAX:
                raise self._json.error(
                    f"{x!r} is not a number that is finite in float32",
                    "replace it with a finite number",
                    f"{where}/{k}",
                )
        return [float(x) for x in value]

    # -- documents -------------------------------------------------------------

    def documents(self) -> Iterator[SourceDoc]:
        """One ``SourceDoc`` per document, with its vector, in the file's order."""
        checks = self._json
        for at, doc_id, doc in checks.entries(
            self._data["documents"], "/documents", "document", seen={}
        ):
            text = checks.text(doc, "text", at, "put the document's text in `text`")
            title = doc.get("title")
            if title is not None and (not isinstance(title, str) or not title.strip()):
                raise checks.error(
                    "`title` must be non-empty text", "fix or remove it", f"{at}/title"
                )
            category = checks.choice(doc, "category", at, CATEGORY, f"use {CATEGORY_RULE}")
            metadata = doc.get("metadata", {})
            if not isinstance(metadata, dict):
                raise checks.error(
                    f"`metadata` must be an object, not {describe(metadata)}",
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
        checks = self._json
        queries: list[SourceQuery] = []
        vector_of: dict[str, tuple[list[float], str]] = {}  # text -> (vector, pointer)
        for at, query_id, item in checks.entries(
            self._data["queries"], "/queries", "query", seen={}
        ):
            text = checks.limit(
                checks.text(item, "text", at, "put the question in `text`"),
                "the query",
                "shorten it",
                f"{at}/text",
            )
            split = checks.split(item, at, "use dev or test (ragsnap keeps no training split)")
            category = checks.choice(item, "category", at, CATEGORY, f"use {CATEGORY_RULE}")
            language = checks.choice(item, "language", at, LANGUAGE, f"use {LANGUAGE_RULE}")
            complete = checks.flag(
                item,
                "judgments_complete",
                at,
                "write true when every unjudged document is known non-relevant",
            )
            vector = self._vector(item, at)
            if text in vector_of and vector_of[text][0] != vector:
                raise checks.error(
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
            raise self._json.error(
                f"`judgments` must be an object of document id to grade, not {describe(raw)}",
                'write {"doc-id": 3, ...}',
                f"{at}/judgments",
            )
        judgments: list[SourceJudgment] = []
        for doc_id, grade in raw.items():
            where = f"{at}/judgments" + pointer(doc_id)
            if doc_id not in sources:
                raise self._json.error(
                    f"judges document {doc_id!r}, which /documents does not hold",
                    "use the id of a document in /documents, or remove the judgment",
                    where,
                )
            if type(grade) is not int or not 0 <= grade <= 3:
                raise self._json.error(
                    f"grade {grade!r} is not a whole number from 0 to 3",
                    "grade 0 (not relevant) to 3 (answers it)",
                    where,
                )
            judgments.append(SourceJudgment(target=doc_id, grade=grade))
        return judgments

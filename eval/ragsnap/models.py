"""Frozen dataclasses for validated input: golden cases and fixtures.

These are built only from documents that already passed their JSON Schema
(see ``ragsnap.io.schema``), so nothing downstream re-checks them. Field names
are snake_case here and camelCase in the files; ``from_json`` maps one to
the other.

``EvidenceBlock`` is a frozen ``msgspec.Struct`` rather than a dataclass: a fixture's
blocks are decoded straight from its bytes into it (``ragsnap.io.decode``, the
fixture reader's typed path), so its annotations carry the fixture schema's rules for
a block (required fields, types, ``minimum``, ``minLength``, no unknown fields).
Building one by hand (``from_json``, tests) checks nothing, like a dataclass.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

import msgspec

__all__ = [
    "DEFAULT_MIN_HIT_LEVEL",
    "DEFAULT_TOP_K",
    "HIT_LEVELS",
    "INT64_MAX",
    "JUDGMENT_TARGETS",
    "LOOKUP_PARTS",
    "REPORT_KIND",
    "REPORT_SCHEMA_VERSION",
    "TRIAL_REPORT_KIND",
    "TRIAL_REPORT_SCHEMA_VERSION",
    "EvidenceBlock",
    "Fixture",
    "GoldenCase",
    "HitLevel",
    "Judgment",
    "LookupResult",
    "hit_level_rank",
]

HitLevel = Literal["strong", "medium", "weak", "miss"]
#: Hit levels from worst to best; the index is the level's rank.
HIT_LEVELS: tuple[HitLevel, ...] = ("miss", "weak", "medium", "strong")
DEFAULT_TOP_K = 5
DEFAULT_MIN_HIT_LEVEL: HitLevel = "medium"
#: The score report's ``kind`` and ``schemaVersion``: written by ``scoring.report``,
#: checked when a report (a baseline) is read back by ``io.inputs``.
REPORT_SCHEMA_VERSION = 1
REPORT_KIND = "ragsnap-score-report"
#: The trial report's ``kind`` and ``schemaVersion`` (``trial.report``, ``io.inputs``).
TRIAL_REPORT_SCHEMA_VERSION = 1
TRIAL_REPORT_KIND = "ragsnap-trial-report"


def hit_level_rank(level: str) -> int:
    """0 for miss up to 3 for strong."""
    return HIT_LEVELS.index(level)  # type: ignore[arg-type,unused-ignore]


def _strings(value: Any) -> tuple[str, ...]:
    return tuple(value) if value else ()


#: Judgment target kinds, and the evidence block field each one names.
JUDGMENT_TARGETS = {"chunkId": "chunk_id", "docId": "doc_id", "source": "source"}


@dataclass(frozen=True, slots=True)
class Judgment:
    """A graded judgment of one chunk, document or source, with exact answer spans."""

    kind: str  # "chunkId", "docId" or "source"
    target: str
    grade: int
    spans: tuple[str, ...] = ()


def _judgment(data: dict[str, Any]) -> Judgment:
    kind = next(k for k in JUDGMENT_TARGETS if k in data)  # the schema allows exactly one
    return Judgment(kind, data[kind], data["grade"], _strings(data.get("spans")))


@dataclass(frozen=True, slots=True)
class GoldenCase:
    """One fixed retrieval query and what a correct lookup must return."""

    id: str
    query: str
    language: str
    category: str
    split: str
    kb_scope: str | None
    top_k: int
    no_answer: bool
    min_hit_level: HitLevel
    expected_sources: tuple[str, ...] = ()
    expected_doc_ids: tuple[str, ...] = ()
    expected_breadcrumbs: tuple[str, ...] = ()
    expected_keywords: tuple[str, ...] = ()
    expected_selected_attempt: str | None = None
    expected_fallback_reason: str | None = None
    expected_fallback_reasons: tuple[str, ...] | None = None
    expected_evidence_status: str | None = None
    expected_context_sources: tuple[str, ...] = ()
    expected_rerank_top_source: str | None = None
    judgments: tuple[Judgment, ...] = ()
    tags: tuple[str, ...] = ()
    #: why the case is expected to fail for now (its failure does not fail the run)
    known_failure: str | None = None

    @property
    def judgment_kind(self) -> str | None:
        """What this case judges (``chunkId``, ``docId`` or ``source``); None if nothing."""
        return self.judgments[0].kind if self.judgments else None

    @classmethod
    def from_json(cls, data: dict[str, Any], defaults: dict[str, Any]) -> GoldenCase:
        """Build from one validated case object and the file's ``defaults``."""
        reasons = data.get("expectedFallbackReasons")
        return cls(
            id=data["id"],
            query=data["query"],
            language=data["language"],
            category=data["category"],
            split=data["split"],
            kb_scope=data.get("kbScope", defaults.get("kbScope")),
            top_k=data.get("topK", defaults.get("topK", DEFAULT_TOP_K)),
            no_answer=data.get("noAnswer", False),
            min_hit_level=data.get(
                "minHitLevel", defaults.get("minHitLevel", DEFAULT_MIN_HIT_LEVEL)
            ),
            expected_sources=_strings(data.get("expectedSources")),
            expected_doc_ids=_strings(data.get("expectedDocIds")),
            expected_breadcrumbs=_strings(data.get("expectedBreadcrumbs")),
            expected_keywords=_strings(data.get("expectedKeywords")),
            expected_selected_attempt=data.get("expectedSelectedAttempt"),
            expected_fallback_reason=data.get("expectedFallbackReason"),
            expected_fallback_reasons=None if reasons is None else tuple(reasons),
            expected_evidence_status=data.get("expectedEvidenceStatus"),
            expected_context_sources=_strings(data.get("expectedContextSources")),
            expected_rerank_top_source=data.get("expectedRerankTopSource"),
            judgments=tuple(_judgment(j) for j in data.get("judgments", [])),
            known_failure=data.get("knownFailure"),
            tags=_strings(data.get("tags")),
        )


#: the largest integer the typed fixture decoder takes (``msgspec`` bounds are int64):
#: a larger one goes the JSON Schema's way (``ragsnap.io.decode``)
INT64_MAX = 2**63 - 1
_NonEmpty = Annotated[str, msgspec.Meta(min_length=1)]
_Int64 = Annotated[int, msgspec.Meta(ge=-INT64_MAX - 1, le=INT64_MAX)]


class EvidenceBlock(
    msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, rename="camel"
):
    """One ranked evidence block of a lookupResult, as the fixture holds it.

    The annotations are ``fixture.schema.json``'s ``evidenceBlock`` (``rank`` an
    integer >= 1, ``chunkId`` and ``source`` non-empty, ``score`` a number or null,
    ``metadata`` any object, no other field); ``score`` keeps an integer an integer,
    as the JSON parser does. Scoring reads ``rank`` to ``score``; ``title``,
    ``score_label`` and ``metadata`` are there because the fixture has them.
    """

    rank: Annotated[int, msgspec.Meta(ge=1, le=INT64_MAX)]
    chunk_id: _NonEmpty
    doc_id: str | None = None
    source: _NonEmpty
    breadcrumb: str | None = None
    text: str
    score: _Int64 | float | None
    title: str | None = None
    score_label: str | None = None
    #: the block's free-form ``metadata`` object (UNSET when the fixture has none; an
    #: integer in it beyond 64 bits is exact here, a float from the schema's path)
    metadata: dict[str, Any] | msgspec.UnsetType = msgspec.UNSET


#: The optional parts of a lookupResult, in the order they are named: a fixture from
#: a retriever that does not report one leaves it out (``LookupResult.absent``).
LOOKUP_PARTS = ("retrievalTrace", "rerankTrace", "contextPack")


@dataclass(frozen=True, slots=True)
class LookupResult:
    """The parts of a lookupResult that scoring and the diff read.

    Only the evidence blocks are always there. A part the fixture leaves out
    (``LOOKUP_PARTS``) is named in ``absent`` and its fields are None, never a
    default: no retrieval trace leaves ``selected_attempt``, ``fallback_reasons``
    and ``evidence_status`` None; no rerank trace ``rerank_applied`` and
    ``rerank_top_source``; no context pack ``context_sources`` and
    ``context_chars``. (A present retrieval trace may still select no attempt:
    ``selected_attempt`` None with ``retrievalTrace`` not in ``absent``.)
    """

    evidence_blocks: tuple[EvidenceBlock, ...]
    context_sources: tuple[str, ...] | None
    context_chars: int | None
    selected_attempt: str | None
    fallback_reasons: tuple[str, ...] | None
    evidence_status: str | None
    rerank_applied: bool | None
    rerank_top_source: str | None
    #: the ``LOOKUP_PARTS`` the fixture does not record, in that order
    absent: tuple[str, ...] = ()

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> LookupResult:
        """Build from a validated ``lookupResult`` object."""
        trace = data.get("retrievalTrace")
        rerank = data.get("rerankTrace")
        pack = data.get("contextPack")
        top = rerank["after"][:1] if rerank is not None and rerank["applied"] else ()
        block = EvidenceBlock
        return cls(
            evidence_blocks=tuple(
                [
                    block(
                        rank=b["rank"],
                        chunk_id=b["chunkId"],
                        doc_id=b.get("docId"),
                        source=b["source"],
                        breadcrumb=b.get("breadcrumb"),
                        text=b["text"],
                        score=b["score"],
                        title=b.get("title"),
                        score_label=b.get("scoreLabel"),
                        metadata=b.get("metadata", msgspec.UNSET),
                    )
                    for b in data["evidenceBlocks"]
                ]
            ),
            context_sources=None if pack is None else tuple(pack["sources"]),
            context_chars=None if pack is None else len(pack["text"]),
            selected_attempt=None if trace is None else trace["selectedAttempt"],
            fallback_reasons=None if trace is None else tuple(trace["fallbackReasons"]),
            evidence_status=None if trace is None else trace["evidenceStatus"],
            rerank_applied=None if rerank is None else rerank["applied"],
            rerank_top_source=top[0]["source"] if top else None,
            absent=tuple(name for name in LOOKUP_PARTS if data.get(name) is None),
        )


@dataclass(frozen=True, slots=True)
class Fixture:
    """One saved lookup for one golden case."""

    case_id: str
    query: str
    retrieved_at: str
    backend: str
    lookup: LookupResult
    #: the fixture's ``generator`` block (backend, method, settings, embedder ...)
    generator: dict[str, Any] | None = field(default=None, compare=False)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Fixture:
        """Build from a validated fixture document."""
        return cls(
            case_id=data["caseId"],
            query=data["query"],
            retrieved_at=data["retrievedAt"],
            backend=data["generator"]["backend"],
            lookup=LookupResult.from_json(data["lookupResult"]),
            generator=data["generator"],
        )

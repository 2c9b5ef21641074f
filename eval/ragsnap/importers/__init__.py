"""Importers: corpora and judgments in other tools' formats, as ragsnap files.

    ragsnap import beir|trec|goodbuddy|qilbee SOURCE --out DIR

An importer reads one format and yields ``SourceDoc`` and ``SourceQuery``
objects; ``ragsnap.importers.writer`` turns them into ragsnap's own files in
``DIR`` (a JSONL seed corpus, ``golden-cases.json``, frozen vectors when the
format carries them, and a ``ragsnap.yaml`` that points at them). Every
imported document becomes one seed document whose ``source`` is the format's
document (or chunk) id, so judgments are kept as graded ``source`` judgments
with their exact spans. Each format lives in its own module and registers
itself in ``FORMATS``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

__all__ = [
    "FORMATS",
    "Importer",
    "SourceDoc",
    "SourceJudgment",
    "SourceQuery",
    "VectorSpace",
]


@dataclass(frozen=True, slots=True)
class SourceDoc:
    """One document to import; ``source`` is its id in the format."""

    source: str
    text: str
    title: str | None = None
    doc_id: str | None = None
    category: str | None = None
    breadcrumb: str | None = None
    kb_scope: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    vector: list[float] | None = None


@dataclass(frozen=True, slots=True)
class SourceJudgment:
    """A graded judgment of one imported document, with exact answer spans."""

    target: str  # a SourceDoc.source
    grade: int  # 0..3 (formats with larger scales are clipped, and say so)
    spans: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class SourceQuery:
    """One query with its judgments."""

    id: str
    text: str
    language: str = "en"
    category: str = "imported"
    split: str = "test"
    judgments: tuple[SourceJudgment, ...] = ()
    no_answer: bool = False
    judgments_complete: bool = False  # unjudged documents are known non-relevant
    vector: list[float] | None = None
    tags: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class VectorSpace:
    """Who made a format's vectors; becomes the frozen embedder's fingerprint."""

    provider: str
    model: str
    revision: str
    dimension: int


class Importer(Protocol):
    """Reads one format. ``documents()`` is consumed first, then ``queries()``."""

    #: the format's name on the command line
    format: str
    #: where the vectors come from, when the format carries them
    space: VectorSpace | None
    #: what was left out and why, for the summary ("3 qrels lines for unknown queries")
    skipped: list[str]

    def documents(self) -> Iterator[SourceDoc]:
        """Every document, streamed in the format's order."""
        ...

    def queries(self) -> list[SourceQuery]:
        """Every query with its judgments, in the format's order."""
        ...


#: format name -> "module:Class" of its importer (imported when used)
FORMATS = {
    "beir": "ragsnap.importers.beir:BeirImporter",
    "trec": "ragsnap.importers.trec:TrecImporter",
    "goodbuddy": "ragsnap.importers.goodbuddy:GoodBuddyImporter",
    "qilbee": "ragsnap.importers.qilbee:QilbeeImporter",
}

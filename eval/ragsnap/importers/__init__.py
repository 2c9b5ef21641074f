"""Importers: corpora and judgments in other tools' formats, as ragsnap files.

    ragsnap import beir|trec|smart|goodbuddy|qilbee SOURCE --out DIR

An importer reads one format and yields ``SourceDoc`` and ``SourceQuery``
objects; ``ragsnap.importers.writer`` turns them into ragsnap's own files in
``DIR`` (a JSONL seed corpus, ``golden-cases.json``, frozen vectors when the
format carries them, and a ``ragsnap.yaml`` that points at them). Every
imported document becomes one seed document whose ``source`` is the format's
document (or chunk) id, so judgments are kept as graded ``source`` judgments
with their exact spans. Importers yield ids as the format gives them; the
writer keeps every id ragsnap can use as it is and writes any other (spaces,
other characters, too long) in its stable ragsnap form, keeping the original
(``ragsnap.importers.ids``). Each format lives in its own module and
registers itself in ``FORMATS``.

Formats without splits (SMART, TREC) give every case ``--split`` (default
``test``), or with ``--dev-fraction F`` split the cases by ``hashed_split``:
a case is ``dev`` when the first 8 bytes of the SHA-256 of its id (as the
format gives it), read as a big-endian integer and divided by 2**64, fall
below F, else ``test``. The same id lands in the same split on every
machine, whatever the other cases.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ..errors import UsageError

__all__ = [
    "FORMATS",
    "ImportOptions",
    "Importer",
    "SourceDoc",
    "SourceJudgment",
    "SourceQuery",
    "VectorSpace",
    "hashed_split",
    "make_importer",
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
    origin: str = ""  # where it was read, for messages: "corpus.jsonl line 12"


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
    origin: str = ""  # where it was read, for messages


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

    def queries(self, sources: AbstractSet[str]) -> list[SourceQuery]:
        """Every query with its judgments, in the format's order.

        ``sources`` are the imported documents' ids, as the format gives
        them: a judgment of any other
        id is a dangling reference and raises ``InputError`` naming the file,
        the line or JSON pointer, and the fix.
        """
        ...


@dataclass(frozen=True, slots=True)
class ImportOptions:
    """Command-line choices an importer may use (None: the format's own or a default)."""

    split: str | None = None  # BEIR: which qrels/<split>.tsv; others: the cases' split
    language: str | None = None  # for formats that do not say
    category: str | None = None  # for formats that do not say
    topics: Path | None = None  # TREC topic file (or one "id text" query a line); SMART queries
    qrels: Path | None = None  # TREC or SMART qrels
    dev_fraction: float | None = None  # SMART, TREC: about this share of cases in dev

    def __post_init__(self) -> None:
        fraction = self.dev_fraction
        if fraction is not None and not 0 < fraction < 1:
            raise UsageError(
                f"--dev-fraction {fraction}: give a fraction between 0 and 1, both excluded "
                "(0.3 puts about 30% of the cases in dev)"
            )


def hashed_split(case_id: str, dev_fraction: float) -> str:
    """``dev`` when ``case_id`` hashes below ``dev_fraction``, else ``test``.

    The hash is ``int.from_bytes(sha256(case_id)[:8], "big") / 2**64``, a
    number in [0, 1) that depends on the id alone, so the split is the same
    on every machine and does not move when other cases come or go.
    """
    digest = hashlib.sha256(case_id.encode("utf-8")).digest()
    return "dev" if int.from_bytes(digest[:8], "big") / 2**64 < dev_fraction else "test"


#: format name -> "module:Class" of its importer (imported when used)
FORMATS = {
    "beir": "ragsnap.importers.beir:BeirImporter",
    "trec": "ragsnap.importers.trec:TrecImporter",
    "smart": "ragsnap.importers.smart:SmartImporter",
    "goodbuddy": "ragsnap.importers.goodbuddy:GoodBuddyImporter",
    "qilbee": "ragsnap.importers.qilbee:QilbeeImporter",
}


def make_importer(name: str, source: Path, options: ImportOptions) -> Importer:
    """The importer of format ``name`` reading ``source``: ``Class(source, options)``."""
    import importlib

    if name not in FORMATS:
        raise UsageError(f"unknown format {name!r}; use one of {', '.join(FORMATS)}")
    module, cls = FORMATS[name].split(":")
    importer: Importer = getattr(importlib.import_module(module), cls)(source, options)
    return importer

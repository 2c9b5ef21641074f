"""Write what an importer reads as ragsnap's own files.

In the output folder::

    corpus.jsonl          one seed document a line: {"source", "text", "title", ...}
    golden-cases.json     one case per query, graded ``source`` judgments with spans
    vectors.json          frozen vectors (only when the format carries them)
    ragsnap.yaml          kb.seedDocs -> corpus.jsonl (and the frozen embedder), so
                          `ragsnap seed --config DIR/ragsnap.yaml` just works

Documents are streamed to a temporary file as they are read (memory holds
their ids, not their text); every output is committed only after the whole
input was read and checked, so a bad input replaces none of the files of an
earlier import. Output is deterministic: the format's order, sorted keys.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import orjson

from ..errors import InputError, OutputError, UsageError
from ..io.jsonio import AtomicFile, dump_json
from ..io.progress import Progress
from ..kb.corpus import ChunkSettings, SeedDocument, chunk_document
from . import Importer, SourceDoc, SourceQuery
from ._json import CASE_IDS
from .idset import IdSet

__all__ = ["IMPORT_FILES", "ImportSummary", "write_import"]

#: the files an import writes into its output folder
IMPORT_FILES = ("corpus.jsonl", "golden-cases.json", "vectors.json", "ragsnap.yaml")


_RESERVED = frozenset({"source", "text", "title", "breadcrumb", "category", "kb_scope", "doc_id"})


@dataclass
class ImportSummary:
    """What an import wrote and what it left out."""

    documents: int = 0
    chunks: int = 0
    queries: int = 0
    judgments: int = 0
    no_answer: int = 0
    vectors: int = 0
    skipped: list[str] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)

    def lines(self) -> list[str]:
        counts = [
            _count(self.documents, "document") + f" ({_count(self.chunks, 'chunk')})",
            _count(self.queries, "query", "queries"),
            _count(self.judgments, "judgment"),
            _count(self.no_answer, "no-answer query", "no-answer queries"),
        ]
        if self.vectors:
            counts.append(_count(self.vectors, "vector"))
        out = ["import: " + ", ".join(counts)]
        if self.skipped:
            out.append(f"skipped ({len(self.skipped)}):")
            out += [f"  {reason}" for reason in self.skipped[:20]]
            if len(self.skipped) > 20:
                out.append(f"  ... and {len(self.skipped) - 20} more")
        out.append("wrote: " + ", ".join(str(p) for p in self.files))
        return out


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n:,} {one if n == 1 else many or one + 's'}"


def _doc_line(doc: SourceDoc, kb_scope: str | None) -> bytes:
    line: dict[str, Any] = {
        k: v for k, v in doc.metadata.items() if k not in _RESERVED and v is not None
    }
    line.update(source=doc.source, text=doc.text)
    for key, value in (
        ("title", doc.title),
        ("doc_id", doc.doc_id),
        ("category", doc.category),
        ("breadcrumb", doc.breadcrumb),
        ("kb_scope", doc.kb_scope if doc.kb_scope is not None else kb_scope),
    ):
        if value is not None:
            line[key] = value
    return orjson.dumps(line, option=orjson.OPT_SORT_KEYS) + b"\n"


def _case(query: SourceQuery, sources: Iterable[str], summary: ImportSummary) -> dict[str, Any]:
    judged = {j.target for j in query.judgments}
    judgments = [
        {"source": j.target, "grade": j.grade, **({"spans": list(j.spans)} if j.spans else {})}
        for j in query.judgments
    ]
    if query.judgments_complete:  # every other document is known non-relevant
        judgments += [{"source": s, "grade": 0} for s in sources if s not in judged]
    case: dict[str, Any] = {
        "id": query.id,
        "query": query.text,
        "language": query.language,
        "category": query.category,
        "split": query.split,
    }
    relevant = [j for j in query.judgments if j.grade > 0]
    if query.no_answer:
        case["noAnswer"] = True
        summary.no_answer += 1
    elif not relevant:
        raise InputError(
            query.origin or "the input",
            f"query {query.id!r} judges nothing relevant and is not a no-answer query",
            "add a relevant judgment, mark it no-answer, or leave the query out",
        )
    else:
        best = max(j.grade for j in relevant)
        case["expectedSources"] = [j.target for j in relevant if j.grade == best]
    if judgments:
        case["judgments"] = judgments
    if query.tags:
        case["tags"] = list(query.tags)
    summary.judgments += len(judgments)
    return case


def write_import(
    importer: Importer,
    out: Path,
    *,
    kb_scope: str | None = None,
    settings: ChunkSettings | None = None,
    stream: TextIO | None = None,
    source: Path | None = None,
) -> ImportSummary:
    """Read everything ``importer`` yields and write ragsnap's files into ``out``.

    ``source`` (what was imported) names the input in messages about it as a whole.
    """
    where = str(source) if source is not None else importer.format
    settings = settings or ChunkSettings()
    summary = ImportSummary()
    summary.skipped = importer.skipped
    corpus_path, cases_path = out / "corpus.jsonl", out / "golden-cases.json"
    vectors_path, config_path = out / "vectors.json", out / "ragsnap.yaml"
    progress = Progress(None, "import", "documents", stream if stream is not None else sys.stderr)
    sources = IdSet()  # every document id, on disk: memory does not grow with the corpus
    chunk_vectors: list[tuple[str, list[float]]] = []
    with AtomicFile(corpus_path) as corpus:
        for doc in importer.documents():
            first = sources.add(doc.source, doc.origin or "?")
            if first is not None:
                raise InputError(
                    doc.origin or where,
                    f"document id {doc.source!r} appears twice (first at {first})",
                    "give every document its own id",
                )
            corpus.handle.write(_doc_line(doc, kb_scope))
            chunks = chunk_document(_as_seed(doc), settings)
            summary.documents += 1
            summary.chunks += len(chunks)
            if doc.vector is not None:
                chunk_vectors += [(c.chunk_id, doc.vector) for c in chunks]
            progress.advance()
        progress.close()
        if not sources:
            raise InputError(where, "holds no documents", "check the corpus path and its format")
        queries = importer.queries(sources)
        if not queries:
            reasons = "; ".join(importer.skipped) or "no query was read"
            raise InputError(
                where, f"holds no usable queries ({reasons})", "check the queries and judgments"
            )
        cases = []
        ids: set[str] = set()
        for query in queries:
            if not CASE_IDS.pattern.match(query.id):
                raise UsageError(
                    f"query id {query.id!r} cannot be a case id (letters, digits and . _ -, "
                    "starting with a letter or digit, at most 128); rename it in the source"
                )
            if query.id in ids:
                raise InputError(
                    query.origin or where, f"query id {query.id!r} appears twice", "make ids unique"
                )
            ids.add(query.id)
            cases.append(_case(query, sources, summary))
        summary.queries = len(cases)
        description = f"Imported from the {importer.format} format by `ragsnap import`."
        golden: dict[str, Any] = {"schemaVersion": 1, "description": description, "cases": cases}
        defaults = {"topK": 10, **({"kbScope": kb_scope} if kb_scope else {})}
        golden["defaults"] = defaults
        from ..io.schema import validate

        validate(golden, "golden-cases", cases_path, "imported golden cases")
        outputs: dict[Path, bytes] = {cases_path: dump_json(golden)}
        embedder = ""
        query_vectors = {q.text: q.vector for q in queries if q.vector is not None}
        if chunk_vectors or query_vectors:
            space = importer.space
            if space is None:
                raise InputError(
                    where,
                    "carries vectors but no vector space (provider, model, dimension)",
                    "describe the space the vectors come from",
                )
            outputs[vectors_path] = _vectors_json(space, chunk_vectors, query_vectors)
            summary.vectors = len(chunk_vectors) + len(query_vectors)
            embedder = "  embedder: {kind: frozen, path: vectors.json}\n"
        chunking = (
            f"  chunking: {{maxChars: {settings.max_chars}, overlapChars: "
            f"{settings.overlap_chars}, headingLevel: {settings.heading_level}}}\n"
        )
        outputs[config_path] = (
            f"# written by `ragsnap import {importer.format}`\n"
            "kb:\n  path: kb.sqlite\n  seedDocs: corpus.jsonl\n" + chunking + embedder
        ).encode()
        for path in (corpus_path, *outputs):  # refuse before the first rename, not midway
            if path.exists() and not path.is_file():
                raise OutputError(
                    f"{path}: exists and is not a file; move it away or choose another --out"
                )
        files: list[AtomicFile] = []
        try:
            for path, data in outputs.items():
                files.append(AtomicFile(path))
                files[-1].handle.write(data)
            corpus.commit()
            for handle in files:
                handle.commit()
        finally:
            for handle in files:
                handle.discard()
    summary.files = [corpus_path, *outputs]
    return summary


def _vectors_json(
    space: Any,
    chunks: list[tuple[str, list[float]]],
    queries: Mapping[str, list[float] | None],
) -> bytes:
    data = {
        "model": f"{space.provider}/{space.model}",
        "revision": space.revision,
        "dimension": space.dimension,
        "chunks": dict(chunks),  # as given: rounding would flatten tiny vectors
        "queries": dict(queries),
    }
    return orjson.dumps(data, option=orjson.OPT_SORT_KEYS) + b"\n"


def _as_seed(doc: SourceDoc) -> SeedDocument:
    return SeedDocument(path=doc.origin, source=doc.source, body=doc.text, content_hash="")

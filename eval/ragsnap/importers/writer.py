"""Write what an importer reads as ragsnap's own files.

In the output folder::

    corpus.jsonl          one seed document a line: {"source", "text", "title", ...}
    golden-cases.json     one case per query, graded ``source`` judgments with spans
    vectors.json          frozen vectors (only when the format carries them)
    ids.tsv               kind<TAB>ragsnap id<TAB>original id of every id that got
                          its ragsnap form (only when one did: ``ragsnap.importers.ids``)
    ragsnap.yaml          kb.seedDocs -> corpus.jsonl (and the frozen embedder), so
                          `ragsnap seed --config DIR/ragsnap.yaml` just works; its
                          first line, "# written by `ragsnap import FORMAT`", marks
                          the folder as an import of that format

The output folder must be new, empty, or an earlier import of the same format
(its ``ragsnap.yaml`` starts with that mark; whatever else it holds, e.g. the
``kb.sqlite`` seeded from it, stays): never the working folder (the project
root), nor a folder of anything else, whose files an import would replace or
mix with its own (``check_out_folder``).

Ids that ragsnap can use are written as the format gives them; any other
importable id is written in its ragsnap form (``ragsnap.importers.ids``)
everywhere (``source``, ``doc_id``, case ids, judgments, frozen vector
keys), and the original is kept: ``original_source`` / ``original_doc_id``
in the seed document, the tag ``original-id:<id>`` on the case, and a line
of ``ids.tsv``. An import in which two ids would share a ragsnap id fails.

A document whose corpus line would be over the seed document cap
(``kb.corpus.MAX_DOCUMENT_BYTES``, 16 MiB) stops the import, naming it: ``ragsnap
seed`` would refuse it. Documents are streamed to a temporary file as they are read (memory holds
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
from ..kb.corpus import (
    MAX_DOCUMENT_BYTES,
    ChunkSettings,
    SeedDocument,
    chunk_document,
    too_large,
)
from . import Importer, SourceDoc, SourceQuery
from .ids import SOURCE, IdMap, id_problem, ragsnap_id
from .idset import IdSet

__all__ = [
    "IMPORT_FILES",
    "IMPORT_MARK",
    "ORIGINAL_ID_TAG",
    "ImportSummary",
    "check_out_folder",
    "write_import",
]

#: the files an import writes into its output folder
IMPORT_FILES = ("corpus.jsonl", "golden-cases.json", "vectors.json", "ids.tsv", "ragsnap.yaml")

#: the first line of an import's ragsnap.yaml, which marks its folder as an import
IMPORT_MARK = "# written by `ragsnap import {format}`"


def check_out_folder(out: Path, format: str) -> None:
    """Refuse ``--out`` unless it is a new or empty folder, or an earlier import of
    ``format`` (see the module docstring), before anything is read or written."""
    flag = f"--out {out}"
    fix = "pass a new or empty folder, e.g. --out imported/" + format
    if out.resolve() == Path.cwd().resolve():
        raise UsageError(
            f"{flag}: is the working folder, the project root; an import writes its own "
            f"ragsnap.yaml and golden-cases.json and would replace the project's; {fix}"
        )
    if not out.exists():
        return
    if not out.is_dir() or out.is_symlink():
        raise UsageError(f"{flag}: is not a folder; {fix}")
    names = sorted(entry.name for entry in out.iterdir())
    if not names:
        return
    mark = IMPORT_MARK.format(format=format)
    config = out / "ragsnap.yaml"
    first = b""
    if config.is_file() and not config.is_symlink():
        with config.open("rb") as handle:
            first = handle.readline(len(mark) + 2).rstrip(b"\r\n")
    if first == mark.encode():
        return
    held = ", ".join(names[:5]) + (" ..." if len(names) > 5 else "")
    if first.startswith(b"# written by `ragsnap import "):
        what = f"an import of another format ({first.decode(errors='replace')[2:]})"
    elif config.is_file():
        what = "not an earlier import (its ragsnap.yaml does not start with the import's mark)"
    else:
        what = "not an earlier import (it has no ragsnap.yaml)"
    raise UsageError(
        f"{flag}: holds {held}, {what}; an import replaces its files only in an empty "
        f"folder or an earlier `ragsnap import {format}`; {fix}"
    )


_RESERVED = frozenset({"source", "text", "title", "breadcrumb", "category", "kb_scope", "doc_id"})
#: the tag that keeps a mapped query id on its case
ORIGINAL_ID_TAG = "original-id:"


@dataclass
class ImportSummary:
    """What an import wrote and what it left out."""

    documents: int = 0
    chunks: int = 0
    queries: int = 0
    judgments: int = 0
    no_answer: int = 0
    vectors: int = 0
    mapped: int = 0  # ids written in their ragsnap form
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
        if self.mapped:
            out.append(
                f"ids: {self.mapped:,} in their ragsnap form (they hold spaces or other "
                "characters ragsnap ids cannot, or are too long); the originals are in ids.tsv"
            )
        if self.skipped:
            out.append(f"skipped ({len(self.skipped)}):")
            out += [f"  {reason}" for reason in self.skipped[:20]]
            if len(self.skipped) > 20:
                out.append(f"  ... and {len(self.skipped) - 20} more")
        out.append("wrote: " + ", ".join(str(p) for p in self.files))
        return out


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n:,} {one if n == 1 else many or one + 's'}"


def _doc_line(doc: SourceDoc, kb_scope: str | None, source: str, doc_id: str | None) -> bytes:
    """``doc`` as a corpus line, with ``source`` and ``doc_id`` its ragsnap ids."""
    line: dict[str, Any] = {
        k: v for k, v in doc.metadata.items() if k not in _RESERVED and v is not None
    }
    if source != doc.source:
        line["original_source"] = doc.source
    if doc_id != doc.doc_id:
        line["original_doc_id"] = doc.doc_id
    line.update(source=source, text=doc.text)
    for key, value in (
        ("title", doc.title),
        ("doc_id", doc_id),
        ("category", doc.category),
        ("breadcrumb", doc.breadcrumb),
        ("kb_scope", doc.kb_scope if doc.kb_scope is not None else kb_scope),
    ):
        if value is not None:
            line[key] = value
    return orjson.dumps(line, option=orjson.OPT_SORT_KEYS) + b"\n"


def _case(
    query: SourceQuery,
    case_id: str,
    sources: Iterable[str],
    summary: ImportSummary,
) -> dict[str, Any]:
    """``query`` as a golden case whose id is ``case_id`` and whose judgments name
    ragsnap ids (``sources``: every imported document id, as the format gives it)."""
    judged = {j.target for j in query.judgments}
    judgments = [
        {
            "source": ragsnap_id(j.target, SOURCE),
            "grade": j.grade,
            **({"spans": list(j.spans)} if j.spans else {}),
        }
        for j in query.judgments
    ]
    if query.judgments_complete:  # every other document is known non-relevant
        judgments += [
            {"source": ragsnap_id(s, SOURCE), "grade": 0} for s in sources if s not in judged
        ]
    case: dict[str, Any] = {
        "id": case_id,
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
        case["expectedSources"] = [
            ragsnap_id(j.target, SOURCE) for j in relevant if j.grade == best
        ]
    if judgments:
        case["judgments"] = judgments
    tags = list(query.tags)
    if case_id != query.id:
        tags.append(ORIGINAL_ID_TAG + query.id)
    if tags:
        case["tags"] = tags
    summary.judgments += len(judgments)
    return case


def _check_id(value: str, what: str, origin: str) -> None:
    """Refuse an id no ragsnap file could hold (importers check this with a line number)."""
    found = id_problem(value)
    if found is not None:
        problem, fix = found
        raise InputError(origin, f"{what} {value!r} {problem}", fix)


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
    ids_path = out / "ids.tsv"
    progress = Progress(None, "import", "documents", stream if stream is not None else sys.stderr)
    sources = IdSet()  # every document id, on disk: memory does not grow with the corpus
    chunk_vectors: list[tuple[str, list[float]]] = []
    with AtomicFile(corpus_path) as corpus, IdMap(ids_path, sources) as id_map:
        for doc in importer.documents():
            origin = doc.origin or where
            _check_id(doc.source, "document id", origin)
            first = sources.add(doc.source, doc.origin or "?")
            if first is not None:
                raise InputError(
                    origin,
                    f"document id {doc.source!r} appears twice (first at {first})",
                    "give every document its own id",
                )
            source_id = id_map.source(doc.source, origin)
            doc_id = None
            if doc.doc_id is not None:
                _check_id(doc.doc_id, "parent document id", origin)
                doc_id = id_map.doc_id(doc.doc_id, origin)
            line = _doc_line(doc, kb_scope, source_id, doc_id)
            if len(line) - 1 > MAX_DOCUMENT_BYTES:  # `ragsnap seed` would refuse it
                raise too_large(origin, len(line) - 1)
            corpus.handle.write(line)
            chunks = chunk_document(_as_seed(doc, source_id), settings)
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
            origin = query.origin or where
            _check_id(query.id, "query id", origin)
            if query.id in ids:
                raise InputError(origin, f"query id {query.id!r} appears twice", "make ids unique")
            ids.add(query.id)
            cases.append(_case(query, id_map.case(query.id, origin), sources, summary))
        summary.queries = len(cases)
        summary.mapped = id_map.mapped
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
            IMPORT_MARK.format(format=importer.format) + "\n"
            "kb:\n  path: kb.sqlite\n  seedDocs: corpus.jsonl\n"
            + chunking
            + embedder
            + _no_answer_opt_out(cases)
        ).encode()
        written = [corpus_path, *outputs]
        if id_map.written:
            written.insert(-1, ids_path)  # before ragsnap.yaml, as IMPORT_FILES
        for path in written:  # refuse before the first rename, not midway
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
            id_map.commit()
            for handle in files:
                handle.commit()
        finally:
            for handle in files:
                handle.discard()
    summary.files = written
    return summary


def _no_answer_opt_out(cases: list[dict[str, Any]]) -> str:
    """The ``scoring.noAnswerCoverage: warning`` lines of an imported set that has
    no-answer queries in some languages and not in others: the set is imported as it is,
    so the label check warns about the languages without one instead of refusing it."""
    with_none = {c["language"] for c in cases if c.get("noAnswer")}
    answerable = {c["language"] for c in cases if not c.get("noAnswer")}
    if not with_none or answerable <= with_none:
        return ""
    missing = ", ".join(sorted(answerable - with_none))
    return (
        f"scoring:\n  # imported as it is: no no-answer query in {missing}\n"
        "  noAnswerCoverage: warning\n"
    )


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


def _as_seed(doc: SourceDoc, source: str) -> SeedDocument:
    return SeedDocument(path=doc.origin, source=source, body=doc.text, content_hash="")

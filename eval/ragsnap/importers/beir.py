"""BEIR datasets: ``corpus.jsonl``, ``queries.jsonl`` and ``qrels/<split>.tsv``.

    ragsnap import beir DATASET_FOLDER --out DIR [--split test]

A BEIR folder holds::

    corpus.jsonl        {"_id": "d1", "title": "...", "text": "...", "metadata": {...}}
    queries.jsonl       {"_id": "q1", "text": "...", "metadata": {...}}
    qrels/test.tsv      query-id<TAB>corpus-id<TAB>score   (a header line, then rows)

``corpus.jsonl`` and ``queries.jsonl`` may be gzipped (``.jsonl.gz``). The
corpus is streamed line by line; only document ids are remembered. Each
document keeps its ``_id`` as its ``source`` (in its ragsnap form when
ragsnap cannot use it as it is, say with spaces: ``ragsnap.importers.ids``),
its title as ``title`` and its text as the body.

``--split`` picks one qrels file; by default every ``qrels/dev.tsv`` and
``qrels/test.tsv`` is read and each query takes the split of the file that
judges it (other files, such as ``train.tsv``, are left out and the summary
says so: ragsnap cases are ``dev`` or ``test``). Scores above 3 are clipped
to 3 and negative ones read as 0 (the summary counts both); score-0 rows are
kept as grade-0 judgments. Queries without a judgment, or whose judgments
are all 0, are left out and counted (none left is an error that says
why). A qrels row naming a document or a query that does not exist is an
error, as is any id used twice.

The helpers below (line readers, id checks, grade scales, turning judged
queries into ``SourceQuery`` objects) are shared with the TREC importer.
"""

from __future__ import annotations

import gzip
import io
import re
import zlib
from collections.abc import Iterable, Iterator, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from ..errors import InputError, UsageError
from ..kb.corpus import MAX_DOCUMENT_BYTES
from . import ImportOptions, SourceDoc, SourceJudgment, SourceQuery, VectorSpace
from .ids import id_problem
from .idset import IdSet

__all__ = ["BeirImporter"]

#: the splits a golden case may have
SPLITS = ("dev", "test")
_INTEGER = re.compile(r"^[+-]?[0-9]+$")
_BOM = b"\xef\xbb\xbf"


def open_binary(path: Path) -> io.BufferedIOBase:
    """``path`` opened for reading bytes, gunzipped when it ends in ``.gz``."""
    try:
        if path.name.endswith(".gz"):
            return gzip.open(path, "rb")
        return path.open("rb")
    except OSError as exc:
        raise InputError(path, f"cannot be read ({exc.strerror})", "check the path") from None


#: the longest line read from a corpus, queries or qrels file: a document's line holds
#: its text (at most ``kb.corpus.MAX_DOCUMENT_BYTES``, 16 MiB, once imported), which
#: JSON escapes may make longer; no more of a longer line is read
MAX_LINE_BYTES = 64 << 20


def read_lines(path: Path, limit: int = MAX_LINE_BYTES) -> Iterator[tuple[int, bytes]]:
    """``(line number, raw line)`` of ``path``, gunzipped when it ends in ``.gz``.

    The file is read as a stream, one line at a time, each of at most ``limit``
    bytes; a longer line, a file that cannot be opened or a broken gzip stream is
    an ``InputError``.
    """
    line_no = 0
    try:
        with open_binary(path) as handle:
            for line_no, raw in enumerate(iter(lambda: handle.readline(limit + 1), b""), 1):
                if len(raw) > limit and len(raw.rstrip(b"\r\n")) > limit:
                    raise InputError(
                        path,
                        f"line {line_no} is more than {limit:,} bytes long (a document may "
                        f"have at most {MAX_DOCUMENT_BYTES:,} bytes once imported)",
                        "split the document into several, or check that this is the file you meant",
                    )
                yield line_no, raw[3:] if line_no == 1 and raw.startswith(_BOM) else raw
    except (OSError, EOFError, zlib.error) as exc:
        raise InputError(
            path,
            f"cannot be read after line {line_no} ({exc})",
            "check that the file is complete (gzip -t FILE for a .gz file)",
        ) from None


def check_id(value: str, path: Path, line_no: int, what: str, where: str) -> None:
    """Refuse an id that no ragsnap file could hold (``ids.id_problem``): ``what`` names it
    ("document id"), ``where`` says where to fix it ("in the corpus and in the qrels").

    Any other id is imported: as it is, or in its ragsnap form (``ragsnap.importers.ids``).
    """
    found = id_problem(value)
    if found is not None:
        problem, fix = found
        raise InputError(path, f"{what} {value!r} {problem}", f"{fix}, {where}", f"line {line_no}")


def check_split(split: str) -> str:
    """Refuse a ``--split`` that golden cases cannot have."""
    if split not in SPLITS:
        raise UsageError(
            f"--split {split}: ragsnap cases are split {' or '.join(SPLITS)}; "
            f"import the {' or '.join(SPLITS)} judgments"
        )
    return split


def case_split(options: ImportOptions, fmt: str) -> str:
    """The cases' split for a format without splits: ``--split``, else ``test``.

    Refuses ``--split`` together with ``--dev-fraction``, which picks each
    case's split instead (``ragsnap.importers.hashed_split``).
    """
    if options.split is not None and options.dev_fraction is not None:
        raise UsageError(
            f"{fmt}: --split {options.split} and --dev-fraction both choose the cases' split; "
            "pass one of them"
        )
    return check_split(options.split or "test")


def count(n: int, one: str, many: str) -> str:
    """``n`` with the word in the right number: ``1 query``, ``2 queries``."""
    return f"{n:,} {one if n == 1 else many}"


def parse_int(text: str) -> int | None:
    """``text`` as an integer (digits with an optional sign), else None."""
    return int(text) if _INTEGER.match(text) else None


@dataclass
class Judged:
    """The judgments of one qrels file set, with the grade adjustments counted."""

    #: query id -> its judgments in file order
    judgments: dict[str, list[SourceJudgment]] = field(default_factory=dict)
    #: (query id, document id) -> "file line N" of its row
    rows: dict[tuple[str, str], str] = field(default_factory=dict)
    clipped: int = 0
    negative: int = 0

    def add(self, query: str, target: str, score: int, path: Path, line_no: int) -> None:
        """Record one row, refusing a second row for the same query and document."""
        key = (query, target)
        if key in self.rows:
            raise InputError(
                path,
                f"query {query!r} judges document {target!r} twice (first at {self.rows[key]})",
                "keep one row per query and document",
                f"line {line_no}",
            )
        self.rows[key] = f"{path} line {line_no}"
        if score > 3:
            self.clipped += 1
        elif score < 0:
            self.negative += 1
        grade = min(max(score, 0), 3)
        self.judgments.setdefault(query, []).append(SourceJudgment(target=target, grade=grade))

    def notes(self) -> list[str]:
        """Summary lines for the adjusted grades."""
        out = []
        if self.clipped:
            out.append(count(self.clipped, "qrels grade", "qrels grades") + " above 3 clipped to 3")
        if self.negative:
            out.append(
                count(self.negative, "negative qrels grade", "negative qrels grades") + " read as 0"
            )
        return out


def judged_queries(
    queries: Iterable[tuple[str, str, str, str]],
    judged: Mapping[str, list[SourceJudgment]],
    options: ImportOptions,
    skipped: list[str],
    where: str,
    unjudged: int = 0,
    *,
    judgments_file: Path,
) -> list[SourceQuery]:
    """``SourceQuery`` objects for ``(id, text, split, origin)`` in order, minus the unusable.

    A query without judgments (``unjudged`` more were already left out by the
    caller), or whose judgments are all grade 0, is left out; one line per
    reason goes to ``skipped`` with the count. When no query is left, the
    error names ``judgments_file`` and says why.
    """
    out: list[SourceQuery] = []
    irrelevant = 0
    for query_id, text, split, origin in queries:
        judgments = judged.get(query_id)
        if not judgments:
            unjudged += 1
        elif not any(j.grade > 0 for j in judgments):
            irrelevant += 1
        else:
            out.append(
                SourceQuery(
                    id=query_id,
                    text=text,
                    language=options.language or "en",
                    category=options.category or "imported",
                    split=split,
                    judgments=tuple(judgments),
                    origin=origin,
                )
            )
    reasons = []
    if unjudged:
        reasons.append(count(unjudged, "query", "queries") + f" with no judgment in {where}")
    if irrelevant:
        reasons.append(
            count(irrelevant, "query", "queries")
            + " with no relevant document: every judgment is grade 0"
        )
    skipped += [f"{reason} (not imported)" for reason in reasons]
    if not out:
        raise InputError(
            judgments_file,
            f"leaves no query with a relevant document ({'; '.join(reasons) or 'no query'})",
            "judge at least one query's document with a grade above 0",
        )
    return out


def _json_line(path: Path, line_no: int, raw: bytes, fix: str) -> dict[str, Any]:
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise InputError(path, f"is not valid JSON ({exc.msg})", fix, f"line {line_no}") from None
    if not isinstance(data, dict):
        raise InputError(path, "is not a JSON object", fix, f"line {line_no}")
    return data


def _id_of(data: dict[str, Any], path: Path, line_no: int, fix: str) -> str:
    value = data.get("_id")
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str) or not value:
        raise InputError(path, "`_id` is missing or not a string", fix, f"line {line_no}")
    return value


def _string(data: dict[str, Any], key: str, path: Path, line_no: int, required: bool) -> str:
    value = data.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str):
        problem = f"`{key}` is {'missing' if value is None else type(value).__name__}"
        raise InputError(
            path, problem + ", not a string", f"give every line a string `{key}`", f"line {line_no}"
        )
    return value


class BeirImporter:
    """Reads one BEIR dataset folder (see the module docstring)."""

    format = "beir"
    space: VectorSpace | None = None

    def __init__(self, source: Path, options: ImportOptions):
        self.source = source
        self.options = options
        self.skipped: list[str] = []
        if not source.is_dir():
            raise InputError(
                source,
                "not found" if not source.exists() else "is not a folder",
                "pass the BEIR dataset folder (corpus.jsonl, queries.jsonl, qrels/<split>.tsv)",
            )
        self.corpus = self._jsonl("corpus")
        self.queries_path = self._jsonl("queries")
        self.qrels = self._qrels_files()

    def _jsonl(self, name: str) -> Path:
        names = (f"{name}.jsonl", f"{name}.jsonl.gz")
        found = [self.source / n for n in names if (self.source / n).is_file()]
        if not found:
            raise InputError(
                self.source,
                f"has no {name}.jsonl",
                f"put the dataset's {name}.jsonl (or {name}.jsonl.gz) in the folder",
            )
        if len(found) > 1:
            raise InputError(
                self.source,
                f"has both {name}.jsonl and {name}.jsonl.gz",
                "keep one of them",
            )
        return found[0]

    def _qrels_files(self) -> list[tuple[Path, str]]:
        folder = self.source / "qrels"
        files = sorted(p for p in folder.glob("*.tsv") if p.is_file()) if folder.is_dir() else []
        if not files:
            raise InputError(
                folder, "holds no <split>.tsv qrels", "put the dataset's qrels/test.tsv there"
            )
        stems = ", ".join(p.stem for p in files)
        if self.options.split is not None:
            split = check_split(self.options.split)
            path = folder / f"{split}.tsv"
            if not path.is_file():
                raise InputError(
                    folder, f"has no {split}.tsv", f"pass --split with one of: {stems}"
                )
            return [(path, split)]
        used = [(p, p.stem) for p in files if p.stem in SPLITS]
        if not used:
            raise InputError(
                folder,
                f"has no dev.tsv or test.tsv (found: {stems})",
                "ragsnap cases are split dev or test; add the dev or test qrels",
            )
        left = [p.name for p in files if p.stem not in SPLITS]
        if left:
            self.skipped.append(
                f"qrels/{', qrels/'.join(left)} not read: ragsnap cases are split dev or test"
            )
        return used

    # -- documents --------------------------------------------------------------------

    def documents(self) -> Iterator[SourceDoc]:
        """The corpus, one line at a time."""
        path = self.corpus
        fix = 'write one JSON object a line: {"_id": ..., "title": ..., "text": ...}'
        seen = IdSet()  # id -> origin, on disk: memory does not grow with the corpus
        titled = empty = 0
        for line_no, raw in read_lines(path):
            if not raw.strip():
                continue
            data = _json_line(path, line_no, raw, fix)
            doc_id = _id_of(data, path, line_no, fix)
            check_id(doc_id, path, line_no, "document id", "in the corpus and in the qrels")
            origin = f"{path} line {line_no}"
            first = seen.add(doc_id, origin)
            if first is not None:
                raise InputError(
                    path,
                    f"document id {doc_id!r} appears twice (first at {first})",
                    "give every document its own `_id`",
                    f"line {line_no}",
                )
            text = _string(data, "text", path, line_no, required=True)
            title = _string(data, "title", path, line_no, required=False).strip() or None
            metadata = data.get("metadata")
            if metadata is not None and not isinstance(metadata, dict):
                raise InputError(
                    path,
                    f"`metadata` is {type(metadata).__name__}, not an object",
                    "write metadata as a JSON object, or leave it out",
                    f"line {line_no}",
                )
            if not text.strip():
                if title:  # a title-only document is still found by its title
                    text, titled = title, titled + 1
                else:
                    empty += 1
            yield SourceDoc(
                source=doc_id,
                text=text,
                title=title,
                metadata=dict(metadata or {}),
                origin=origin,
            )
        if not seen:
            raise InputError(
                path, "holds no documents", 'write one JSON object a line: {"_id", "title", "text"}'
            )
        if titled:
            self.skipped.append(
                count(titled, "document", "documents") + " with no text: the title is the text"
            )
        if empty:
            self.skipped.append(
                count(empty, "document", "documents")
                + " with neither text nor title (kept, never retrieved)"
            )

    # -- queries ----------------------------------------------------------------------

    def _read_qrels(
        self, sources: AbstractSet[str]
    ) -> tuple[Judged, dict[str, tuple[str, Path, int]]]:
        """The judgments, and each judged query's split and first row (file, line)."""
        judged = Judged()
        first: dict[str, tuple[str, Path, int]] = {}
        fix = "write rows as query-id<TAB>corpus-id<TAB>score (an integer)"
        for path, split in self.qrels:
            for line_no, raw in read_lines(path):
                try:
                    line = raw.decode("utf-8").rstrip("\r\n")
                except UnicodeDecodeError:
                    raise InputError(
                        path, "is not UTF-8", "re-save the file as UTF-8", f"line {line_no}"
                    ) from None
                if not line.strip():
                    continue
                cells = line.split("\t")
                if line_no == 1 and [c.strip().lower() for c in cells] == [
                    "query-id",
                    "corpus-id",
                    "score",
                ]:
                    continue
                if len(cells) != 3:
                    raise InputError(
                        path,
                        f"has {len(cells)} tab-separated column(s), not 3",
                        fix,
                        f"line {line_no}",
                    )
                query, target, text = (c.strip() for c in cells)
                score = parse_int(text)
                if score is None:
                    raise InputError(
                        path, f"score {text!r} is not an integer", fix, f"line {line_no}"
                    )
                if target not in sources:
                    raise InputError(
                        path,
                        f"the qrels name a document that is not in {self.corpus.name}: {target!r}",
                        f"add the document to {self.corpus.name} or remove the row",
                        f"line {line_no}",
                    )
                if query in first and first[query][0] != split:
                    other, file, row = first[query]
                    raise InputError(
                        path,
                        f"query {query!r} is judged in two splits: {other} ({file} line {row}) "
                        f"and {split}",
                        "judge each query in one split only, or pass --split",
                        f"line {line_no}",
                    )
                first.setdefault(query, (split, path, line_no))
                judged.add(query, target, score, path, line_no)
        return judged, first

    def queries(self, sources: AbstractSet[str]) -> list[SourceQuery]:
        """queries.jsonl in order, each with its judgments from the chosen qrels."""
        judged, first = self._read_qrels(sources)
        path = self.queries_path
        fix = 'write one JSON object a line: {"_id": ..., "text": ...}'
        seen: dict[str, int] = {}
        found: list[tuple[str, str, str, str]] = []
        unjudged = 0
        for line_no, raw in read_lines(path):
            if not raw.strip():
                continue
            data = _json_line(path, line_no, raw, fix)
            query_id = _id_of(data, path, line_no, fix)
            if query_id in seen:
                raise InputError(
                    path,
                    f"query id {query_id!r} appears twice (first at line {seen[query_id]})",
                    "give every query its own `_id`",
                    f"line {line_no}",
                )
            seen[query_id] = line_no
            text = _string(data, "text", path, line_no, required=True).strip()
            if query_id not in first:
                unjudged += 1
                continue
            check_id(query_id, path, line_no, "query id", f"in {path.name} and in the qrels")
            if not text:
                raise InputError(
                    path, "`text` is empty", "give the query its text", f"line {line_no}"
                )
            found.append((query_id, text, first[query_id][0], f"{path} line {line_no}"))
        for query, (_, file, line) in first.items():
            if query not in seen:
                raise InputError(
                    file,
                    f"the qrels name a query that is not in {path.name}: {query!r}",
                    f"add the query to {path.name} or remove its rows",
                    f"line {line}",
                )
        self.skipped += judged.notes()
        where = " and ".join(f"qrels/{p.name}" for p, _ in self.qrels)
        return judged_queries(
            found,
            judged.judgments,
            self.options,
            self.skipped,
            where,
            unjudged,
            judgments_file=self.qrels[0][0] if len(self.qrels) == 1 else self.source / "qrels",
        )

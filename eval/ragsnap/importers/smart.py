"""SMART collections (Cranfield 1400 and its kin): documents, queries and qrels.

    ragsnap import smart FOLDER --out DIR [--dev-fraction 0.3]
    ragsnap import smart DOCS --topics QUERIES --qrels QRELS --out DIR

``FOLDER`` holds the three files under their Cranfield names:
``cran.all.1400`` (documents), ``cran.qry`` (queries) and ``cranqrel``
(judgments); ``--topics`` and ``--qrels`` replace the last two. ``DOCS`` is
the documents file itself, and then both flags are needed. Any file may be
gzipped when its name ends in ``.gz``.

Documents and queries are records of field markers, each alone on its line
except ``.I``, which carries the record's number::

    .I 1
    .T
    experimental investigation of the aerodynamics of a
    wing in a slipstream .
    .A
    brenckman,m.
    .B
    j. ae. scs. 25, 1958, 324.
    .W
    experimental investigation of the aerodynamics of a
    wing in a slipstream .
      an experimental study of a wing in a propeller slipstream ...

A field's lines are joined with single spaces; a blank line starts a new
paragraph. A document's ``.I`` number (leading zeros dropped) is its
``source``, ``.T`` its title, ``.W`` its text, ``.A`` and ``.B`` become the
``authors`` and ``bibliography`` metadata of its seed document. A document
whose ``.W`` is empty uses its title as its text; one with neither is not
imported (the summary lists it, and drops the qrels lines that judge it). A
second record with an ``.I`` already read is not imported either: the first
is kept and the summary lists the others. A marker that repeats a field the
record already has is a stray (Cranfield documents 240, 576 and 578 carry
``.A``, ``.B`` or a second ``.W`` inside their abstracts): the marker line
is dropped and the lines under it continue the field being read. Other
markers (``.N``, ``.X``, ``.K`` of other SMART collections) are not read
and counted. Files are read as a stream, one record at a time; lines that
are not UTF-8 are read as Latin-1 and counted; CRLF line ends are fine.

Queries are numbered by their **position** in the queries file, not by their
``.I``: Cranfield's ``cran.qry`` numbers its 225 queries 001, 002, 004, 008
..., and ``cranqrel`` calls them 1, 2, 3, 4 ... The third query becomes the
case ``q003`` (three digits, more when there are over 999 queries), with
the tag ``smart-I:004`` to map it back to its record. Its text is ``.W``
(``.T`` when it has no ``.W``).

``cranqrel`` lines are ``query document grade``, whitespace-separated.
SMART grades run the other way round from ragsnap's: Cleverdon's 1 is "a
complete answer", 2 "a high degree of relevance", 3 "useful as background",
4 "minimum interest", 5 "no interest", and -1 marks a judged non-relevant
document (one per Cranfield query). They become ragsnap grades (0..3, a
higher grade is more relevant) by ``GRADES``::

    SMART   1  2  3  4  5  -1
    ragsnap 3  2  1  1  0   0

3 and 4 both become 1: a reference of minimal interest is still relevant
for binary measures (recall, MAP), as every Cranfield evaluation counts it,
and ragsnap has no grade below 1 that is still relevant. -1 and 5 become
grade-0 judgments (judged, not relevant) and are counted. Pass
``SmartImporter(..., grades={...})`` for another mapping; a grade outside
it is an error. A qrels line naming a query beyond the last one or a
document that is not in the documents file, a line that is not three
integers (the document may be any id), and one document judged twice for a
query are errors naming the file, the line and the fix. SMART has no
splits: each case gets ``--split`` (default ``test``), or with
``--dev-fraction F`` a stable hash of its id puts about F of them in
``dev`` (``ragsnap.importers.hashed_split``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType

from ..errors import InputError, UsageError
from . import ImportOptions, SourceDoc, SourceQuery, VectorSpace, hashed_split
from .beir import (
    Judged,
    case_split,
    check_id,
    count,
    judged_queries,
    parse_int,
    read_lines,
)
from .idset import IdSet

__all__ = ["GRADES", "SmartImporter"]

#: SMART grade -> ragsnap grade (see the module docstring for why)
GRADES: Mapping[int, int] = MappingProxyType({1: 3, 2: 2, 3: 1, 4: 1, 5: 0, -1: 0})

#: the Cranfield names looked up in a SOURCE folder
DOCS_NAME, QUERIES_NAME, QRELS_NAME = "cran.all.1400", "cran.qry", "cranqrel"

_RECORD = re.compile(r"^\.I(?:[ \t]+(.*?))?[ \t]*$")
_MARKER = re.compile(r"^\.([A-Z])[ \t]*$")
_NUMBER = re.compile(r"^[0-9]+$")
_READ = ("T", "A", "B", "W")  # the fields a document's seed line keeps
_LISTED = 10  # ids named in one summary line


@dataclass
class _Record:
    """One ``.I`` record: its number as written, its line, its fields' lines."""

    key: str
    line: int
    fields: dict[str, list[str]] = field(default_factory=dict)
    strays: list[str] = field(default_factory=list)  # repeated markers, e.g. ".A"

    def text(self, letter: str) -> str:
        """Field ``letter``'s paragraphs, each with its words joined by single spaces."""
        paragraphs: list[str] = []
        words: list[str] = []
        for line in self.fields.get(letter, ()):
            found = line.split()
            if found:
                words += found
            elif words:
                paragraphs.append(" ".join(words))
                words = []
        if words:
            paragraphs.append(" ".join(words))
        return "\n\n".join(paragraphs)


def _id(key: str) -> str:
    """A record number as an id: digits without leading zeros, anything else as written."""
    return str(int(key)) if _NUMBER.match(key) else key


def _listed(items: list[str]) -> str:
    """The first few of ``items``, comma-separated, and how many more."""
    more = len(items) - _LISTED
    return ", ".join(items[:_LISTED]) + (f" and {more} more" if more > 0 else "")


class SmartImporter:
    """Reads a SMART collection (see the module docstring)."""

    format = "smart"
    space: VectorSpace | None = None

    def __init__(
        self, source: Path, options: ImportOptions, *, grades: Mapping[int, int] | None = None
    ):
        self.source = source
        self.options = options
        self.skipped: list[str] = []
        self.grades = GRADES if grades is None else grades
        if not all(0 <= grade <= 3 for grade in self.grades.values()):
            raise UsageError("smart grades map onto ragsnap grades 0..3; fix the mapping")
        self.split = case_split(options, "smart")
        self._latin1 = 0
        self._left_out: set[str] = set()  # documents with neither title nor text
        if source.is_dir():
            self.docs = self._in_folder(DOCS_NAME, None, "")
            self.topics = self._in_folder(QUERIES_NAME, options.topics, "--topics")
            self.qrels = self._in_folder(QRELS_NAME, options.qrels, "--qrels")
        elif source.is_file():
            for value, flag, what in (
                (options.topics, "--topics", "the queries file, e.g. cran.qry"),
                (options.qrels, "--qrels", "the `query document grade` file, e.g. cranqrel"),
            ):
                if value is None:
                    raise UsageError(
                        f"smart needs {flag} FILE ({what}) when SOURCE is the documents file; "
                        f"or pass the folder holding {DOCS_NAME}, {QUERIES_NAME} and {QRELS_NAME}"
                    )
            assert options.topics is not None and options.qrels is not None
            self.docs, self.topics, self.qrels = source, options.topics, options.qrels
        else:
            raise InputError(
                source,
                "not found",
                f"pass the folder holding {DOCS_NAME}, {QUERIES_NAME} and {QRELS_NAME}, or the "
                "documents file with --topics and --qrels",
            )
        for path, flag in ((self.topics, "--topics"), (self.qrels, "--qrels")):
            if not path.is_file():
                raise InputError(path, "not found", f"pass {flag} with an existing file")

    def _in_folder(self, name: str, given: Path | None, flag: str) -> Path:
        if given is not None:
            return given
        path = self.source / name
        if not path.is_file():
            instead = f", or pass {flag} FILE" if flag else ""
            raise InputError(
                self.source,
                f"has no {name}",
                f"put the collection's {name} there{instead} (or pass the documents file as "
                "SOURCE with --topics and --qrels)",
            )
        return path

    # -- reading ------------------------------------------------------------------------

    def _lines(self, path: Path) -> Iterator[tuple[int, str]]:
        """Decoded lines of ``path`` without their line ends; non-UTF-8 lines as Latin-1."""
        for line_no, raw in read_lines(path):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                self._latin1 += 1
                line = raw.decode("latin-1")
            yield line_no, line.rstrip("\r\n")

    def _records(self, path: Path) -> Iterator[_Record]:
        """Every ``.I`` record of ``path``, each yielded when the next one starts."""
        fix = "start every record with `.I number`, then field markers (.T, .W ...) alone on a line"
        record: _Record | None = None
        current: str | None = None
        for line_no, line in self._lines(path):
            opened = _RECORD.match(line)
            if opened:
                if record is not None:
                    yield record
                key = opened.group(1) or ""
                if not key or len(key.split()) > 1:
                    problem = "has no number" if not key else f"has more than a number: {key!r}"
                    raise InputError(path, f"this .I line {problem}", fix, f"line {line_no}")
                record, current = _Record(key, line_no), None
                continue
            marker = _MARKER.match(line)
            if record is None:
                if marker or line.strip():
                    raise InputError(
                        path, "text comes before the first .I line", fix, f"line {line_no}"
                    )
                continue
            if marker:
                letter = marker.group(1)
                if letter in record.fields:
                    record.strays.append(f".{letter}")
                else:
                    record.fields[letter], current = [], letter
                continue
            if current is None:
                if line.strip():
                    raise InputError(
                        path,
                        f"record .I {record.key} has text before its first field marker",
                        "put the text under a field marker such as .W",
                        f"line {line_no}",
                    )
                continue
            record.fields[current].append(line)
        if record is not None:
            yield record

    def _latin1_note(self, what: str) -> None:
        if self._latin1:
            self.skipped.append(
                count(self._latin1, "line", "lines") + f" of {what} not UTF-8, read as Latin-1"
            )
            self._latin1 = 0

    # -- documents --------------------------------------------------------------------

    def documents(self) -> Iterator[SourceDoc]:
        """Every record of the documents file, in order (see the module docstring)."""
        path = self.docs
        seen = IdSet()  # on disk: memory does not grow with the corpus
        titled = 0
        empty: list[str] = []
        repeated: list[str] = []
        strays: list[str] = []
        unread: dict[str, int] = {}  # marker -> documents that have it
        for record in self._records(path):
            doc_id = _id(record.key)
            check_id(doc_id, path, record.line, "document .I", "in the documents and in the qrels")
            origin = f"{path} line {record.line}"
            first = seen.add(doc_id, origin)
            if first is not None:
                repeated.append(f"{doc_id} at line {record.line}")
                continue
            if record.strays:
                strays.append(f"{doc_id} ({', '.join(record.strays)})")
            for letter in record.fields:
                if letter not in _READ:
                    unread[f".{letter}"] = unread.get(f".{letter}", 0) + 1
            title, text = " ".join(record.text("T").split()), record.text("W")
            if not text:
                if not title:
                    empty.append(doc_id)
                    self._left_out.add(doc_id)
                    continue
                text, titled = title, titled + 1
            metadata = {
                name: value
                for name, letter in (("authors", "A"), ("bibliography", "B"))
                if (value := " ".join(record.text(letter).split()))
            }
            yield SourceDoc(
                source=doc_id, text=text, title=title or None, metadata=metadata, origin=origin
            )
        if not len(seen):
            raise InputError(
                path, "holds no .I records", "pass a SMART documents file (.I, .T, .W records)"
            )
        self._latin1_note("the documents")
        if titled:
            self.skipped.append(
                count(titled, "document", "documents") + " with no .W text: the title is the text"
            )
        if empty:
            self.skipped.append(
                count(len(empty), "document", "documents")
                + f" with neither .T nor .W text, not imported: {_listed(empty)}"
            )
        if repeated:
            self.skipped.append(
                count(len(repeated), "record", "records")
                + f" repeating an earlier .I, not imported (the first is kept): {_listed(repeated)}"
            )
        if strays:
            self.skipped.append(
                count(len(strays), "document", "documents")
                + " with a field marker repeated inside a field, read as part of that field: "
                + _listed(strays)
            )
        if unread:
            self.skipped.append(
                "fields ragsnap does not read, dropped: "
                + ", ".join(
                    f"{marker} in {count(n, 'document', 'documents')}"
                    for marker, n in sorted(unread.items())
                )
            )

    # -- queries ----------------------------------------------------------------------

    def _queries(self) -> list[tuple[_Record, str]]:
        """Every query record with its text, in file order."""
        path = self.topics
        found = []
        for record in self._records(path):
            text = " ".join((record.text("W") or record.text("T")).split())
            if not text:
                raise InputError(
                    path,
                    f"query .I {record.key} has no text",
                    "give it a .W field (queries are numbered by position: keep the record)",
                    f"line {record.line}",
                )
            found.append((record, text))
        if not found:
            raise InputError(path, "holds no .I records", "pass a SMART queries file (.I, .W)")
        return found

    def queries(self, sources: AbstractSet[str]) -> list[SourceQuery]:
        """The queries in file order, numbered by position, with their judgments."""
        records = self._queries()
        width = max(3, len(str(len(records))))
        numbered = [
            (f"q{n:0{width}d}", record, text) for n, (record, text) in enumerate(records, 1)
        ]
        ids = [case_id for case_id, _, _ in numbered]
        path = self.qrels
        judged = Judged()
        unjudgeable: list[str] = []  # judgments of documents that were not imported
        not_relevant: dict[int, int] = {}  # SMART grade -> lines mapped to grade 0
        fix = "write lines of `query document grade` (query and grade integers)"
        scale = ", ".join(str(g) for g in sorted(self.grades, key=lambda g: (g < 0, g)))
        for line_no, line in self._lines(path):
            cells = line.split()
            if not cells:
                continue
            if len(cells) != 3:
                raise InputError(path, f"has {len(cells)} column(s), not 3", fix, f"line {line_no}")
            number, grade = parse_int(cells[0]), parse_int(cells[2])
            if number is None:
                raise InputError(
                    path, f"query {cells[0]!r} is not an integer", fix, f"line {line_no}"
                )
            if grade is None:
                raise InputError(
                    path, f"grade {cells[2]!r} is not an integer", fix, f"line {line_no}"
                )
            if grade not in self.grades:
                raise InputError(
                    path,
                    f"grade {grade} is not on the SMART scale ({scale})",
                    f"use one of {scale}"
                    + (
                        " (1 a complete answer .. 4 minimal interest; 5 and -1 not relevant)"
                        if self.grades is GRADES
                        else ""
                    ),
                    f"line {line_no}",
                )
            if not 1 <= number <= len(records):
                raise InputError(
                    path,
                    f"the qrels name query {number}, but {self.topics} holds "
                    f"{count(len(records), 'query', 'queries')} (numbered by position, from 1)",
                    "add the query, or remove its lines from the qrels",
                    f"line {line_no}",
                )
            target = _id(cells[1])
            if target in self._left_out:
                unjudgeable.append(f"{ids[number - 1]} -> {target}")
                continue
            if target not in sources:
                raise InputError(
                    path,
                    f"the qrels name a document that is not in {self.docs}: {cells[1]!r}",
                    "import the documents the qrels name, or remove the line",
                    f"line {line_no}",
                )
            if self.grades[grade] == 0:
                not_relevant[grade] = not_relevant.get(grade, 0) + 1
            judged.add(ids[number - 1], target, self.grades[grade], path, line_no)
        self._latin1_note("the queries or qrels")
        for grade, n in sorted(not_relevant.items(), key=lambda item: (item[0] < 0, item[0])):
            self.skipped.append(
                count(n, "qrels line", "qrels lines")
                + f" of SMART grade {grade} (not relevant) kept as grade 0"
            )
        if unjudgeable:
            self.skipped.append(
                count(len(unjudgeable), "qrels line", "qrels lines")
                + f" judging a document that was not imported, dropped: {_listed(unjudgeable)}"
            )
        fraction = self.options.dev_fraction
        keys = {case_id: record.key for case_id, record, _ in numbered}
        return [
            replace(query, tags=(f"smart-I:{keys[query.id]}",))
            for query in judged_queries(
                (
                    (
                        case_id,
                        text,
                        self.split if fraction is None else hashed_split(case_id, fraction),
                        f"{self.topics} line {record.line}",
                    )
                    for case_id, record, text in numbered
                ),
                judged.judgments,
                self.options,
                self.skipped,
                str(path),
                judgments_file=path,
            )
        ]

"""TREC collections: SGML documents, a topics file and 4-column qrels.

    ragsnap import trec DOCS --topics TOPICS --qrels QRELS --out DIR [--split test]
                       [--dev-fraction F]

``DOCS`` is one document file or a folder of them (read recursively in
sorted path order; hidden files are ignored, ``.gz`` files are gunzipped).
A file holds any number of documents::

    <DOC>
    <DOCNO> FT911-3 </DOCNO>
    <HEADLINE> Jubilee of a jet </HEADLINE>
    <TEXT> It did what it was designed to do ... </TEXT>
    </DOC>

``DOCNO`` is the document's ``source`` (in its ragsnap form when ragsnap
cannot use it as it is: ``ragsnap.importers.ids``). Its text is the text content of
every other field, in order, with the tags removed (one paragraph per
field or ``<P>``, blank-line paragraphs kept, inline markup such as
``<B>`` read as a space, whitespace collapsed, HTML entities decoded);
the first HEADLINE, TITLE, HEAD, HL or TI field is also its ``title``.
Files are parsed as a stream, in blocks of whole lines: a document is
yielded when its ``</DOC>`` arrives, so memory holds one block (1 MiB) and
one document. Lines that are not UTF-8 are read
as Latin-1 (the summary counts them).

``--topics`` is either classic TREC topics (``<top> <num> Number: 301
<title> ... <desc> ... <narr> ... </top>``: the title is the query, the
number its id) or one ``id<space or tab>query text`` a line; the content
decides which. ``--qrels`` lines are ``query iteration document grade``;
grades above 3 are clipped to 3 and negative ones read as 0 (both counted);
grade-0 rows are kept. Queries without a judgment, or whose judgments are
all 0, are left out and counted. A qrels line naming an unknown document
or query, a document or topic without its id, an unclosed ``<DOC>`` or
``<top>``, and any id used twice are errors naming the file and the line.
Every case gets ``--split`` (default ``test``), or with ``--dev-fraction F``
the split ``ragsnap.importers.hashed_split`` gives its topic number.
"""

from __future__ import annotations

import html
import re
import zlib
from collections.abc import Iterator
from collections.abc import Set as AbstractSet
from pathlib import Path

from ..errors import InputError, UsageError
from . import ImportOptions, SourceDoc, SourceQuery, VectorSpace, hashed_split
from .beir import (
    Judged,
    case_split,
    check_id,
    count,
    judged_queries,
    open_binary,
    parse_int,
    read_lines,
)
from .idset import IdSet

__all__ = ["TrecImporter"]

_BLOCK = 1 << 20  # bytes of whole lines scanned at once

_DOC_OPEN = re.compile(r"<DOC(?:\s[^<>]*)?>", re.I)
_DOC_CLOSE = re.compile(r"</DOC\s*>", re.I)
_DOCNO = re.compile(r"<DOCNO(?:\s[^<>]*)?>(.*?)</DOCNO\s*>", re.I | re.S)
_TITLE = re.compile(
    r"<(HEADLINE|TITLE|HEAD|HL|TI)(?:\s[^<>]*)?>(.*?)</\1\s*>",
    re.I | re.S,
)
_COMMENT = re.compile(r"<!--.*?-->", re.S)
_TAG = re.compile(r"</?[A-Za-z][^<>]*>")
_PARAGRAPH = re.compile(r"\n[ \t\r\f\v]*\n")
_SPACE = re.compile(r"\s+")
_TOP = re.compile(r"^\s*<top>", re.I | re.M)
_TOP_BLOCK = re.compile(r"<top>(.*?)(?:</top>|(?=<top>)|\Z)", re.I | re.S)
_FIELD = re.compile(r"<(num|title)>([^<]*)", re.I)
_LABEL = re.compile(r"^(?:Number|Topic)\s*:\s*", re.I)


def _clean(text: str) -> str:
    """``text`` without tags or entities, one space between words."""
    return _SPACE.sub(" ", html.unescape(_TAG.sub(" ", text))).strip()


def _inline(text: str, start: int, end: int) -> bool:
    """Whether the tag at ``text[start:end]`` has text right before and after it on its line."""
    left = start - 1
    while left >= 0 and text[left] in " \t":
        left -= 1
    right = end
    while right < len(text) and text[right] in " \t":
        right += 1
    return (
        left >= 0
        and right < len(text)
        and not text[left].isspace()
        and text[left] != ">"
        and not text[right].isspace()
        and text[right] != "<"
    )


def _body(text: str) -> str:
    """The text content of a document's fields: one paragraph per field, tags removed.

    A tag with text right before and after it on its line is inline markup
    and becomes a space; every other tag ends a paragraph.
    """
    if "<!--" in text:
        text = _COMMENT.sub("", text)
    runs: list[str] = []
    current: list[str] = []
    last = 0
    for tag in _TAG.finditer(text):
        current.append(text[last : tag.start()])
        if _inline(text, tag.start(), tag.end()):
            current.append(" ")
        else:
            runs.append("".join(current))
            current = []
        last = tag.end()
    current.append(text[last:])
    runs.append("".join(current))
    paragraphs = []
    for run in runs:
        for paragraph in _PARAGRAPH.split(run) if "\n" in run else (run,):
            if "&" in paragraph:
                paragraph = html.unescape(paragraph)
            words = paragraph.split()
            if words:
                paragraphs.append(" ".join(words))
    return "\n\n".join(paragraphs)


class _LineCounter:
    """The line numbers of increasing positions in a block, counted forward once."""

    def __init__(self, block: str, first: int):
        self.block = block
        self.line = first  # the line of block[self.pos]
        self.pos = 0

    def __call__(self, pos: int) -> int:
        self.line += self.block.count("\n", self.pos, pos)
        self.pos = pos
        return self.line


class TrecImporter:
    """Reads TREC SGML documents, topics and qrels (see the module docstring)."""

    format = "trec"
    space: VectorSpace | None = None

    def __init__(self, source: Path, options: ImportOptions):
        self.source = source
        self.options = options
        self.skipped: list[str] = []
        self._latin1 = 0
        if options.topics is None:
            raise UsageError(
                "trec needs --topics FILE (TREC topics, or one `id text` query a line) "
                "and --qrels FILE"
            )
        if options.qrels is None:
            raise UsageError("trec needs --qrels FILE (lines of `query iteration document grade`)")
        self.split = case_split(options, "trec")
        if not source.exists():
            raise InputError(source, "not found", "pass a TREC document file or a folder of them")
        for path, flag in ((options.topics, "--topics"), (options.qrels, "--qrels")):
            if not path.is_file():
                raise InputError(path, "not found", f"pass {flag} with an existing file")

    # -- reading ------------------------------------------------------------------------

    def _lines(self, path: Path) -> Iterator[tuple[int, str]]:
        """Decoded lines of ``path``; a line that is not UTF-8 is read as Latin-1."""
        for line_no, raw in read_lines(path):
            try:
                yield line_no, raw.decode("utf-8")
            except UnicodeDecodeError:
                self._latin1 += 1
                yield line_no, raw.decode("latin-1")

    def _decode(self, raw: bytes) -> str:
        """``raw`` (whole lines) as text; a line that is not UTF-8 is read as Latin-1."""
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            lines = []
            for line in raw.splitlines(keepends=True):
                try:
                    lines.append(line.decode("utf-8"))
                except UnicodeDecodeError:
                    self._latin1 += 1
                    lines.append(line.decode("latin-1"))
            return "".join(lines)

    def _blocks(self, path: Path) -> Iterator[tuple[int, str]]:
        """``(number of its first line, text)`` of blocks of whole lines of ``path``."""
        line_no, rest = 1, b""
        try:
            with open_binary(path) as handle:
                while chunk := handle.read(_BLOCK):
                    cut = chunk.rfind(b"\n") + 1
                    if not cut:
                        rest += chunk
                        continue
                    raw, rest = rest + chunk[:cut], chunk[cut:]
                    yield line_no, self._decode(raw)
                    line_no += raw.count(b"\n")
        except (OSError, EOFError, zlib.error) as exc:
            raise InputError(
                path,
                f"cannot be read after line {line_no - 1} ({exc})",
                "check that the file is complete (gzip -t FILE for a .gz file)",
            ) from None
        if rest:
            yield line_no, self._decode(rest)

    def _files(self) -> list[Path]:
        if self.source.is_file():
            return [self.source]
        files = sorted(
            (
                p
                for p in self.source.rglob("*")
                if p.is_file()
                and not any(part.startswith(".") for part in p.relative_to(self.source).parts)
            ),
            key=lambda p: p.relative_to(self.source).as_posix(),
        )
        if not files:
            raise InputError(self.source, "holds no files", "pass a folder of TREC document files")
        return files

    # -- documents --------------------------------------------------------------------

    def documents(self) -> Iterator[SourceDoc]:
        """Every ``<DOC>`` of every file, in order, each yielded when it closes."""
        seen = IdSet()  # on disk: memory does not grow with the corpus
        empty: list[str] = []
        for path in self._files():
            if path.suffix in (".Z", ".z"):
                raise InputError(
                    path,
                    "is compressed with `compress`, which ragsnap cannot read",
                    "decompress it first (gzip -d FILE reads .Z files) or recompress it with gzip",
                )
            found = 0
            for line_no, text in self._docs(path):
                doc = self._doc(path, line_no, text)
                first = seen.add(doc.source, doc.origin)
                if first is not None:
                    raise InputError(
                        path,
                        f"DOCNO {doc.source!r} appears twice (first at {first})",
                        "give every document its own DOCNO",
                        f"line {line_no}",
                    )
                found += 1
                yield doc
            if not found:
                empty.append(str(path))
        if not seen:
            raise InputError(
                self.source,
                "holds no <DOC> documents",
                "pass TREC SGML files: <DOC><DOCNO>id</DOCNO> ... </DOC>",
            )
        if self._latin1:
            self.skipped.append(
                count(self._latin1, "document line", "document lines")
                + " not UTF-8, read as Latin-1"
            )
            self._latin1 = 0
        if empty:
            names = ", ".join(empty[:3]) + (f" and {len(empty) - 3} more" if len(empty) > 3 else "")
            self.skipped.append(count(len(empty), "file", "files") + f" without <DOC>: {names}")

    def _docs(self, path: Path) -> Iterator[tuple[int, str]]:
        """``(line where it opens, text between <DOC> and </DOC>)`` of each document.

        The file is scanned in blocks of whole lines; a document that spans
        blocks is put together from its pieces, so memory holds one block
        and one document.
        """
        parts: list[str] = []
        start = 0  # line of the open <DOC>; 0 outside a document
        for first, block in self._blocks(path):
            line_at = _LineCounter(block, first)
            pos = 0
            while True:
                if not start:
                    opened = _DOC_OPEN.search(block, pos)
                    end = opened.start() if opened else len(block)
                    stray = _DOC_CLOSE.search(block, pos, end)
                    if stray:
                        raise InputError(
                            path,
                            "</DOC> closes a document that was never opened",
                            "start every document with <DOC>",
                            f"line {line_at(stray.start())}",
                        )
                    if not opened:
                        break
                    start, parts, pos = line_at(opened.start()), [], opened.end()
                    continue
                closed = _DOC_CLOSE.search(block, pos)
                end = closed.start() if closed else len(block)
                reopened = _DOC_OPEN.search(block, pos, end)
                if reopened:
                    raise InputError(
                        path,
                        f"the <DOC> of line {start} is never closed (another <DOC> opens here)",
                        "end every document with </DOC>",
                        f"line {line_at(reopened.start())}",
                    )
                parts.append(block[pos:end])
                if not closed:
                    break
                yield start, "".join(parts)
                start, parts, pos = 0, [], closed.end()
        if start:
            raise InputError(
                path,
                "this <DOC> is never closed (the file ends first)",
                "end every document with </DOC>",
                f"line {start}",
            )

    def _doc(self, path: Path, line_no: int, text: str) -> SourceDoc:
        numbers = _DOCNO.findall(text)
        if len(numbers) != 1:
            problem = "has no <DOCNO>" if not numbers else "has more than one <DOCNO>"
            raise InputError(
                path,
                f"the document opening here {problem}",
                "give every document one <DOCNO>...</DOCNO>",
                f"line {line_no}",
            )
        docno = _clean(numbers[0])
        if not docno:
            raise InputError(
                path,
                "the document opening here has an empty <DOCNO>",
                "give every document one <DOCNO>...</DOCNO>",
                f"line {line_no}",
            )
        check_id(docno, path, line_no, "DOCNO", "in the documents and in the qrels")
        rest = _DOCNO.sub("", text, count=1)
        heading = _TITLE.search(rest)
        title = _clean(heading.group(2)) if heading else ""
        return SourceDoc(
            source=docno,
            text=_body(rest),
            title=title or None,
            origin=f"{path} line {line_no}",
        )

    # -- queries ----------------------------------------------------------------------

    def _topics(self) -> list[tuple[str, str, int]]:
        """``(id, query text, line)`` of every topic, in file order."""
        path = self.options.topics
        assert path is not None  # checked in __init__
        lines = list(self._lines(path))
        text = "".join(line for _, line in lines)
        topics = self._classic(path, text) if _TOP.search(text) else self._plain(path, lines)
        if not topics:
            raise InputError(
                path,
                "holds no topics",
                "write TREC topics (<top> <num> <title> ... </top>) or one `id text` query a line",
            )
        seen: dict[str, int] = {}
        for query_id, _, line_no in topics:
            if query_id in seen:
                raise InputError(
                    path,
                    f"query id {query_id!r} appears twice (first at line {seen[query_id]})",
                    "give every topic its own id",
                    f"line {line_no}",
                )
            seen[query_id] = line_no
            check_id(query_id, path, line_no, "query id", "in the topics and in the qrels")
        return topics

    @staticmethod
    def _classic(path: Path, text: str) -> list[tuple[str, str, int]]:
        topics = []
        for block in _TOP_BLOCK.finditer(text):
            line_no = text.count("\n", 0, block.start()) + 1
            if not block.group(0).lower().endswith("</top>"):
                raise InputError(
                    path,
                    "this <top> is never closed",
                    "end every topic with </top>",
                    f"line {line_no}",
                )
            fields: dict[str, str] = {}
            for match in _FIELD.finditer(block.group(1)):
                fields.setdefault(match.group(1).lower(), _LABEL.sub("", _clean(match.group(2))))
            for name in ("num", "title"):
                if not fields.get(name):
                    raise InputError(
                        path,
                        f"the topic opening here has no <{name}>",
                        "give every topic a <num> and a <title>",
                        f"line {line_no}",
                    )
            topics.append((fields["num"], fields["title"], line_no))
        return topics

    @staticmethod
    def _plain(path: Path, lines: list[tuple[int, str]]) -> list[tuple[str, str, int]]:
        topics = []
        for line_no, line in lines:
            if not line.strip():
                continue
            cells = line.strip().split(None, 1)
            if cells[0].startswith("<"):
                raise InputError(
                    path,
                    "is markup without classic <top> topics, and not `id text` lines",
                    "write topics as <top> <num> ... <title> ... </top>, or one `id text` "
                    "query a line",
                    f"line {line_no}",
                )
            if len(cells) < 2:
                raise InputError(
                    path,
                    f"query {cells[0]!r} has no text",
                    "write one `id text` query a line (or TREC <top> topics)",
                    f"line {line_no}",
                )
            topics.append((cells[0], _SPACE.sub(" ", cells[1]).strip(), line_no))
        return topics

    def queries(self, sources: AbstractSet[str]) -> list[SourceQuery]:
        """The topics in file order, each with its judgments from the qrels."""
        topics = self._topics()
        topic_ids = {query_id for query_id, _, _ in topics}
        path = self.options.qrels
        assert path is not None and self.options.topics is not None  # checked in __init__
        judged = Judged()
        fix = "write lines of `query iteration document grade` (grade an integer)"
        for line_no, line in self._lines(path):
            cells = line.split()
            if not cells:
                continue
            if len(cells) != 4:
                raise InputError(path, f"has {len(cells)} column(s), not 4", fix, f"line {line_no}")
            query, _, target, text = cells
            grade = parse_int(text)
            if grade is None:
                raise InputError(path, f"grade {text!r} is not an integer", fix, f"line {line_no}")
            if target not in sources:
                raise InputError(
                    path,
                    f"the qrels name a document that is not in {self.source}: {target!r}",
                    "import the documents the qrels name, or remove the line",
                    f"line {line_no}",
                )
            if query not in topic_ids:
                raise InputError(
                    path,
                    f"the qrels name a query that is not in {self.options.topics}: {query!r}",
                    "add the topic, or remove its lines from the qrels",
                    f"line {line_no}",
                )
            judged.add(query, target, grade, path, line_no)
        if self._latin1:  # lines of the topics or qrels (the documents' were counted)
            self.skipped.append(
                count(self._latin1, "line", "lines") + " of the topics or qrels not UTF-8, "
                "read as Latin-1"
            )
        self.skipped += judged.notes()
        fraction = self.options.dev_fraction
        return judged_queries(
            (
                (
                    query_id,
                    text,
                    self.split if fraction is None else hashed_split(query_id, fraction),
                    f"{self.options.topics} line {line_no}",
                )
                for query_id, text, line_no in topics
            ),
            judged.judgments,
            self.options,
            self.skipped,
            str(path),
            judgments_file=path,
        )

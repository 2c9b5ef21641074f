"""Seed documents: Markdown files with a YAML frontmatter header, and their chunks.

A seed document looks like::

    ---
    source: mysql-connection-pool          # required, unique: the delete-then-upload key
    title: MySQL Connection Pool
    breadcrumb: Database > MySQL > Connection Pool
    category: database
    kb_scope: rag-eval                     # isolates eval data from everything else
    doc_id: doc-mysql-connection-pool
    keywords: [hikari, pool]               # any other key is kept as metadata
    ---
    Body in Markdown ...

python-frontmatter's YAML handler finds the header and splits it from the
body; its boundary is narrowed to a whole ``---`` line (or YAML's ``...``
document end, to close the header), so the header's line numbers are the
file's. ragsnap parses the header itself, strictly (``io.jsonio.parse_yaml``:
no aliases, no NaN), and every problem names the file, the field or line, and
the fix.

The frontmatter feeds metadata (filters, L0 hints, the reranker's title and
breadcrumb) and is never chunked, embedded or indexed as text: only the body
is. Chunking is pure: chunk 0 is the text before the first heading of
``heading_level`` (or the whole body when there is none), then one chunk per
heading section, the heading line included; a section longer than
``max_chars`` is cut at paragraph, line or word boundaries into pieces of at
most ``max_chars`` that overlap by about ``overlap_chars``. Chunk ids are
``<source>#<n>``, numbered in document order. Chunking is linear in the body's
size: each cut is searched for inside its window only.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..io.jsonio import MAX_INPUT_BYTES, parse_yaml, read_bytes
from ..settings import ChunkSettings

__all__ = [
    "MAX_DOCUMENT_BYTES",
    "Chunk",
    "ChunkSettings",
    "SeedCorpus",
    "SeedDocument",
    "chunk_document",
    "load_seed_docs",
    "markdown_of",
    "open_seed_docs",
    "parse_jsonl_doc",
    "parse_seed_doc",
]

#: the largest seed document, whatever reads it: a Markdown file, a line of a JSONL
#: corpus (``ragsnap seed``, ``check``, ``prepare``) or a document ``ragsnap import``
#: writes into one (``io.jsonio.MAX_INPUT_BYTES["seed document"]``: 16 MiB)
MAX_DOCUMENT_BYTES = MAX_INPUT_BYTES["seed document"]
#: the fix of a document over ``MAX_DOCUMENT_BYTES``
TOO_LARGE_FIX = (
    "split it into several documents (each is chunked anyway), or check that this is the "
    "document you meant"
)


def too_large(where: Path | str, size: int, pointer: str | None = None) -> InputError:
    """The error of a seed document of ``size`` bytes, over ``MAX_DOCUMENT_BYTES``."""
    return InputError(
        where,
        f"is a seed document of {size:,} bytes, more than the {MAX_DOCUMENT_BYTES:,} "
        "(16 MiB) one may have",
        TOO_LARGE_FIX,
        pointer,
    )


_SOURCE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/:-]{0,199}$")
_STRING_FIELDS = ("title", "breadcrumb", "category", "kb_scope", "doc_id")


@dataclass(frozen=True, slots=True)
class SeedDocument:
    """One parsed seed document; ``content_hash`` covers the whole file."""

    path: str
    source: str
    body: str
    content_hash: str
    title: str | None = None
    breadcrumb: str | None = None
    category: str | None = None
    kb_scope: str | None = None
    doc_id: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Chunk:
    """One indexed piece of a document body."""

    chunk_id: str
    source: str
    ordinal: int
    text: str
    heading: str | None = None


def _problem(path: Path, problem: str, fix: str, pointer: str | None = None) -> InputError:
    return InputError(path, problem, fix, pointer)


@functools.cache
def _header_handler() -> Any:
    """python-frontmatter's YAML handler, its boundary a whole ``---`` or ``...`` line
    (imported on first use: it imports PyYAML)."""
    from frontmatter.default_handlers import YAMLHandler

    return YAMLHandler(fm_boundary=re.compile(r"^(?:---|\.\.\.)[^\S\n]*$", re.MULTILINE))


def _split_header(text: str, path: Path) -> tuple[str, str]:
    """Return (header YAML, body); the header's first line is the file's line 2."""
    handler = _header_handler()
    if not text.startswith("---") or not handler.detect(text):
        raise _problem(
            path,
            "has no frontmatter header",
            "start the file with a '---' line, then at least `source: <unique-id>`, then '---'",
        )
    try:
        header, body = handler.split(text)
    except ValueError:  # one boundary: the header never ends
        raise _problem(
            path, "frontmatter header is never closed", "end the header with a '---' line"
        ) from None
    # each part starts with the newline that ended its boundary line
    return header.removeprefix("\n"), body.removeprefix("\n")


def parse_seed_doc(path: Path, raw: bytes) -> SeedDocument:
    """Parse one seed document's bytes; every problem is an ``InputError``."""
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise _problem(path, "is not UTF-8", "re-save the file with UTF-8 encoding") from None
    text = text.replace("\r\n", "\n")
    header, body = _split_header(text, path)
    meta: Any = parse_yaml(
        header, path, "fix the header's YAML", subject="frontmatter ", first_line=2
    )
    if not isinstance(meta, dict):
        raise _problem(
            path,
            "frontmatter is not a mapping of keys to values",
            "write the header as `key: value` lines, with at least `source: <unique-id>`",
        )
    source = meta.get("source")
    if source is None:
        raise _problem(
            path,
            "frontmatter has no `source`",
            "add `source: <unique-id>` (the key ragsnap deletes and re-uploads by)",
            "source",
        )
    if not isinstance(source, str) or not _SOURCE.match(source):
        raise _problem(
            path,
            f"`source` {source!r} is not a usable id",
            "use letters, digits and . _ / : - (at most 200 characters), e.g. `mysql-pool`",
            "source",
        )
    strings = _check_meta_values(path, meta, "")
    extra = {str(k): _plain(v) for k, v in meta.items() if k not in ("source", *_STRING_FIELDS)}
    return SeedDocument(
        path=str(path),
        source=source,
        body=body.strip("\n"),
        content_hash=hashlib.sha256(raw).hexdigest(),
        metadata=extra,
        **strings,
    )


def _plain(value: Any) -> Any:
    """YAML values as JSON-able data (dates become ISO strings)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def _check_meta_values(path: Path, meta: dict[str, Any], where: str) -> dict[str, str | None]:
    """The frontmatter string fields of ``meta``, stripped (empty becomes None)."""
    strings: dict[str, str | None] = {}
    for key in _STRING_FIELDS:
        value = meta.get(key)
        if value is not None and not isinstance(value, str):
            raise _problem(
                path,
                f"`{key}` must be text, not {type(value).__name__}",
                "quote the value",
                f"{where}{key}",
            )
        strings[key] = value.strip() if isinstance(value, str) and value.strip() else None
    return strings


def parse_jsonl_doc(path: Path, line_no: int, raw: bytes) -> SeedDocument:
    """Parse one line of a JSONL seed corpus::

        {"source": "mysql-pool", "text": "Body ...", "title": "...", "kb_scope": "...", ...}

    ``source`` and ``text`` are required; ``title``, ``breadcrumb``,
    ``category``, ``kb_scope`` and ``doc_id`` are the frontmatter fields; any
    other key is kept as metadata. The content hash covers the line's bytes.
    """
    import orjson

    where = f"line {line_no}"
    fix = "write one JSON object a line with at least `source` and `text`"
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise _problem(path, f"is not valid JSON ({exc.msg})", fix, where) from None
    if not isinstance(data, dict):
        raise _problem(path, "is not a JSON object", fix, where)
    source = data.get("source")
    if not isinstance(source, str) or not _SOURCE.match(source):
        raise _problem(
            path,
            f"`source` {source!r} is missing or not a usable id",
            "give each line a `source` of letters, digits and . _ / : - (at most 200)",
            where,
        )
    text = data.get("text")
    if not isinstance(text, str):
        raise _problem(path, "`text` is missing or not a string", "put the body in `text`", where)
    strings = _check_meta_values(path, data, f"{where}, field ")
    extra = {k: v for k, v in data.items() if k not in ("source", "text", *_STRING_FIELDS)}
    return SeedDocument(
        path=f"{path}:{line_no}",
        source=source,
        body=text.replace("\r\n", "\n").strip("\n"),
        content_hash=hashlib.sha256(raw.rstrip(b"\r\n")).hexdigest(),
        metadata=extra,
        **strings,
    )


class SeedCorpus:
    """The seed documents of a folder of ``*.md`` files or of one ``.jsonl`` file.

    Iterating reads and parses them afresh, one at a time, so a corpus of any
    size can be planned in one pass and uploaded in a second without holding
    every body in memory. Each pass checks that sources are unique. A document
    (a Markdown file, a line of the JSONL corpus) over ``MAX_DOCUMENT_BYTES`` is an
    ``InputError`` naming it, its size, the cap and the fix; no more of it is read
    than the cap.
    """

    def __init__(self, path: Path):
        self.path = path
        self._paths: list[Path] = []
        if path.is_file() and path.suffix == ".jsonl":
            self.kind = "jsonl"
        elif path.is_dir():
            self.kind = "markdown"
            self._paths = sorted(path.glob("*.md"))  # a folder named x.md is an error
            if not self._paths:
                raise InputError(
                    path,
                    "holds no *.md seed documents",
                    "add Markdown files with a frontmatter header",
                )
        elif not path.exists():
            raise InputError(
                path,
                "not found",
                "pass --seed-docs with a folder of *.md seed documents or a .jsonl corpus",
            )
        else:
            raise InputError(
                path,
                "is neither a folder of *.md seed documents nor a .jsonl corpus",
                "pass --seed-docs with one of those",
            )

    def _markdown(self) -> Iterator[SeedDocument]:
        for path in self._paths:
            with contextlib.suppress(OSError):  # read_bytes says what is wrong
                if (size := path.stat().st_size) > MAX_DOCUMENT_BYTES and path.is_file():
                    raise too_large(path, size)
            yield parse_seed_doc(
                path,
                read_bytes(
                    path,
                    "a seed document is a readable *.md file: fix or rename it",
                    kind="seed document",
                ),
            )

    def _jsonl(self) -> Iterator[SeedDocument]:
        try:
            handle = self.path.open("rb")
        except OSError as exc:
            raise InputError(
                self.path, f"cannot be read ({exc.strerror})", "check its permissions"
            ) from None
        empty = True
        with handle:
            for line_no, raw in enumerate(iter(lambda: _line(handle), b""), 1):
                body = len(raw.rstrip(b"\r\n"))
                if body > MAX_DOCUMENT_BYTES:
                    whole = raw.endswith(b"\n")  # else only its start was read
                    size = body if whole else len(raw) + _rest_of_line(handle)
                    raise too_large(self.path, size, f"line {line_no}")
                if raw.strip():
                    empty = False
                    yield parse_jsonl_doc(self.path, line_no, raw)
        if empty:
            raise InputError(
                self.path, "holds no documents", "write one JSON object a line (source, text)"
            )

    def __iter__(self) -> Iterator[SeedDocument]:
        seen: dict[str, str] = {}
        for doc in self._jsonl() if self.kind == "jsonl" else self._markdown():
            if doc.source in seen:
                raise InputError(
                    doc.path,
                    f"`source` {doc.source!r} is already used by {seen[doc.source]}",
                    "give every seed document its own source",
                    "source",
                )
            seen[doc.source] = doc.path
            yield doc


def _line(handle: Any) -> bytes:
    """The next line of ``handle``, or its first ``MAX_DOCUMENT_BYTES + 3`` bytes: no
    more of a line is read than a seed document may have."""
    line: bytes = handle.readline(MAX_DOCUMENT_BYTES + 3)
    return line


def _rest_of_line(handle: Any) -> int:
    """How many bytes the current line has left before its line break, read in steps."""
    rest = 0
    while True:
        step: bytes = handle.readline(1 << 20)
        if not step or step.endswith(b"\n"):
            return rest + len(step.rstrip(b"\r\n"))
        rest += len(step)


def open_seed_docs(path: Path) -> SeedCorpus:
    """The seed corpus at ``path`` (a folder of ``*.md`` or a ``.jsonl`` file)."""
    return SeedCorpus(path)


def markdown_of(doc: SeedDocument) -> tuple[str, str]:
    """``doc`` as ``(file name, Markdown text)`` for a service's upload endpoint.

    A Markdown seed document is sent as the file's exact text (so the service
    indexes the same bytes a local seed does); a JSONL document as its
    metadata written as frontmatter plus its body.
    """
    path = Path(doc.path)
    if path.suffix == ".md" and path.is_file():
        raw = read_bytes(path, "check that it still exists and is readable", kind="seed document")
        if hashlib.sha256(raw).hexdigest() != doc.content_hash:
            raise InputError(path, "changed while it was being seeded", "run the seed again")
        return path.name, raw.decode("utf-8")
    import yaml

    meta: dict[str, Any] = {"source": doc.source}
    for key in _STRING_FIELDS:
        value = getattr(doc, key)
        if value is not None:
            meta[key] = value
    meta.update(doc.metadata)
    header = yaml.safe_dump(meta, allow_unicode=True, sort_keys=True)
    name = re.sub(r"[^A-Za-z0-9._-]", "_", doc.source) + ".md"
    return name, f"---\n{header}---\n{doc.body}\n"


def load_seed_docs(folder: Path) -> list[SeedDocument]:
    """Parse every seed document of ``folder`` (or a ``.jsonl`` corpus) into a list.

    All of them are parsed before anything is returned, so one bad file stops
    an import before it touches the knowledge base.
    """
    return list(SeedCorpus(folder))


_FENCE = re.compile(r"^(```|~~~)")


def _sections(body: str, level: int) -> list[tuple[str | None, str]]:
    """Split ``body`` at headings of exactly ``level`` (outside code fences)."""
    marker = "#" * level + " "
    sections: list[tuple[str | None, list[str]]] = [(None, [])]
    fenced = False
    for line in body.split("\n"):
        if _FENCE.match(line):
            fenced = not fenced
        if not fenced and line.startswith(marker):
            sections.append((line[len(marker) :].strip(), [line]))
        else:
            sections[-1][1].append(line)
    return [(heading, "\n".join(lines).strip()) for heading, lines in sections]


def _cut_point(text: str, start: int, limit: int) -> int:
    """Where to end the piece of ``text`` that starts at ``start`` and is at most
    ``limit`` characters long, as an offset from ``start``: the last paragraph break,
    else line break, else space, past half of the window.

    Only the window ``text[start + limit // 2 : start + limit]`` is searched, in
    place: copying the rest of the text for every piece made chunking quadratic in
    the section's length."""
    for sep in ("\n\n", "\n", " "):
        at = text.rfind(sep, start + limit // 2, start + limit)
        if at > start:
            return at - start
    return limit


def _split_long(text: str, settings: ChunkSettings) -> list[str]:
    """``text`` cut into pieces of at most ``max_chars`` that overlap by about
    ``overlap_chars`` (module docstring); the work is linear in ``len(text)``."""
    if len(text) <= settings.max_chars:
        return [text]
    pieces: list[str] = []
    start = 0
    while start < len(text):
        if len(text) - start <= settings.max_chars:
            pieces.append(text[start:].strip())
            break
        end = start + _cut_point(text, start, settings.max_chars)
        pieces.append(text[start:end].strip())
        # next piece starts about overlap_chars earlier, at a word boundary
        back = max(end - settings.overlap_chars, start + 1)
        space = text.find(" ", back, end)
        start = space + 1 if settings.overlap_chars and space != -1 else end
    return [p for p in pieces if p]


def chunk_document(doc: SeedDocument, settings: ChunkSettings) -> list[Chunk]:
    """Cut ``doc.body`` into chunks (see the module docstring)."""
    chunks: list[Chunk] = []
    for heading, text in _sections(doc.body, settings.heading_level):
        if not text:
            continue
        for piece in _split_long(text, settings):
            n = len(chunks)
            chunks.append(Chunk(f"{doc.source}#{n}", doc.source, n, piece, heading))
    return chunks

"""A format's ids as ragsnap ids: kept when usable, else a stable, readable form.

Imported document (or chunk) ids become seed ``source``s, and query ids
become golden case ids, which also name fixture files and fill TREC runs and
qrels. These need ids of letters, digits and ``. _ -`` (and ``/ :`` in a
source) that start with a letter or digit (at most 200 characters for a
source, 128 for a case id), while real ids often look like ``Attention Is
All You Need.pdf_chunk_25``. So every id an importer reads is:

* **kept as it is, byte for byte**, when ragsnap can use it (``SOURCE_ID``
  for documents, ``CASE_ID`` for queries);
* **refused** when no file ragsnap reads or writes could hold it: empty,
  white space at either end (line formats such as qrels trim it), a control
  character (Unicode Cc: NUL, tab, line feed, DEL ...), a line or paragraph
  separator (Zl, Zp), a lone surrogate (Cs), or more than ``MAX_ID``
  characters (``id_problem`` says which, and the fix);
* otherwise **given its ragsnap form** ``SLUG--HASH`` (``ragsnap_id``):

  - ``HASH`` is the first 12 hex digits of the SHA-256 of the id's UTF-8
    bytes, so the form depends on the id alone: the same on every machine and
    in every import, whatever else the corpus holds;
  - ``SLUG`` is the id made readable: NFKD-normalised with combining marks
    dropped (``é`` -> ``e``), each run of characters the kind does not allow
    replaced by ``_``, everything before the first letter or digit and every
    ``_`` at the end removed, cut to leave room for ``--HASH`` within the
    kind's length, and ``id`` when nothing is left.

  ``Attention Is All You Need.pdf_chunk_25`` becomes
  ``Attention_Is_All_You_Need.pdf_chunk_25--654b7f6fbffb``; that form is the
  document's ``source`` in the seed corpus and the knowledge base, its chunk
  ids are ``<form>#<n>``, and it is what fixtures, reports and TREC files
  hold (a TREC id cannot hold a space).

The form is reversible through what the import keeps: the seed document
carries the original in ``original_source`` (``original_doc_id`` for a
parent document id), the case in the tag ``original-id:<id>``, and
``ids.tsv`` beside the imported files lists every mapped id as
``kind<TAB>ragsnap id<TAB>original id`` (``read_id_map`` reads it back).
Two different ids never share a ragsnap id: two forms differ unless their
hashes agree (one chance in 2**48 for a pair), and ``IdMap`` refuses any
import in which a form equals another id of the import, or another form.
"""

from __future__ import annotations

import hashlib
import os
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError
from ..io.jsonio import AtomicFile
from .idset import IdSet

__all__ = [
    "CASE",
    "CASE_ID",
    "DOC_ID",
    "MAX_ID",
    "SOURCE",
    "SOURCE_ID",
    "IdKind",
    "IdMap",
    "id_problem",
    "ragsnap_id",
    "read_id_map",
]

#: a usable seed ``source`` (as ``ragsnap.kb.corpus``)
SOURCE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/:-]{0,199}$")
#: a usable case id (as the golden-cases schema)
CASE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
#: the longest id an importer accepts, in characters
MAX_ID = 1000
#: how many hex digits of the SHA-256 a ragsnap form ends with
HASH_DIGITS = 12

#: the Unicode categories no id may hold, as messages name them
_REFUSED = {
    "Cc": "a control character",
    "Cs": "a lone surrogate",
    "Zl": "a line separator",
    "Zp": "a paragraph separator",
}
_LEAD = re.compile(r"^[^A-Za-z0-9]+")
#: printable ASCII with no space at either end, short enough: importable, checked fast
_PLAIN_ASCII = re.compile(rf"[!-~](?:[ -~]{{0,{MAX_ID - 2}}}[!-~])?")


@dataclass(frozen=True, slots=True)
class IdKind:
    """What ragsnap can use as one kind of id: ``usable`` ids are kept as they are."""

    name: str  # the first column of ids.tsv
    usable: re.Pattern[str]
    other: re.Pattern[str]  # a run of characters a slug of this kind cannot hold
    limit: int  # the longest usable id


#: a document's (or chunk's) id: a seed ``source``
SOURCE = IdKind("source", SOURCE_ID, re.compile(r"[^A-Za-z0-9._/:-]+"), 200)
#: a parent document's id (``doc_id`` of a seed document): as a source
DOC_ID = IdKind("doc_id", SOURCE_ID, SOURCE.other, 200)
#: a query's id: a golden case id (also a fixture's file name)
CASE = IdKind("case", CASE_ID, re.compile(r"[^A-Za-z0-9._-]+"), 128)


def id_problem(value: str) -> tuple[str, str] | None:
    """Why ``value`` cannot be imported at all, as ``(problem, fix)``; None when it can."""
    if _PLAIN_ASCII.fullmatch(value):
        return None
    if not value:
        return "is empty", "give it an id"
    if value[0].isspace() or value[-1].isspace():
        return "begins or ends with white space", "remove the white space around it"
    for position, char in enumerate(value, 1):
        name = _REFUSED.get(unicodedata.category(char))
        if name is not None:
            return f"holds U+{ord(char):04X}, {name}, at position {position}", "remove it"
    if len(value) > MAX_ID:
        return f"is {len(value):,} characters long (at most {MAX_ID:,})", "shorten it"
    return None


def ragsnap_id(value: str, kind: IdKind) -> str:
    """``value`` itself when ``kind`` can use it, else its ragsnap form (see the docstring).

    ``value`` must be importable (``id_problem`` gives None).
    """
    if kind.usable.match(value):
        return value
    digest = hashlib.sha256(value.encode("utf-8")).hexdigest()[:HASH_DIGITS]
    plain = value
    if not value.isascii():  # ASCII is its own NFKD, with no combining marks
        decomposed = unicodedata.normalize("NFKD", value)
        plain = "".join(c for c in decomposed if not unicodedata.combining(c))
    slug = _LEAD.sub("", kind.other.sub("_", plain)).rstrip("_")
    slug = slug[: kind.limit - HASH_DIGITS - 2].rstrip("_") or "id"
    return f"{slug}--{digest}"


class IdMap:
    """The ids of one import and their ragsnap ids; refuses two ids with one ragsnap id.

    ``sources`` is the import's set of document ids as the format gives them
    (with where each was read). Every mapped id is written to ``path``
    (``ids.tsv``), created only when the first id is mapped; ``commit()``
    puts it in place, leaving the ``with`` block without it discards it.
    """

    HEADER = b"kind\tragsnap id\toriginal id\n"

    def __init__(self, path: Path, sources: IdSet):
        self.path = path
        self._sources = sources
        self._forms = IdSet()  # ragsnap ids of mapped sources, with what they map
        self._doc_ids: dict[str, tuple[str, str]] = {}  # ragsnap id -> (original, origin)
        self._cases: dict[str, tuple[str, str]] = {}  # ragsnap id -> (original, origin)
        self._file: AtomicFile | None = None
        self.mapped = 0

    def source(self, value: str, origin: str) -> str:
        """The ragsnap id of the document ``value`` read at ``origin`` (already in ``sources``)."""
        form = ragsnap_id(value, SOURCE)
        if form == value:
            if self._forms and value in self._forms:
                raise _clash("document", value, form, origin, self._forms.where(value))
            return value
        if form in self._sources:
            raise _clash("document", value, form, origin, self._sources.where(form))
        first = self._forms.add(form, f"{origin} ({value!r})")
        if first is not None:
            raise _clash("document", value, form, origin, first)
        self._write(SOURCE, form, value)
        return form

    def doc_id(self, value: str, origin: str) -> str:
        """The ragsnap id of the parent document id ``value`` (many chunks share one)."""
        form = ragsnap_id(value, DOC_ID)
        first = self._doc_ids.get(form)
        if first is None:
            self._doc_ids[form] = (value, origin)
            if form != value:
                self._write(DOC_ID, form, value)
        elif first[0] != value:
            raise _clash("parent document", value, form, origin, f"{first[1]} ({first[0]!r})")
        return form

    def case(self, value: str, origin: str) -> str:
        """The ragsnap case id of the query ``value`` read at ``origin`` (each query once)."""
        form = ragsnap_id(value, CASE)
        first = self._cases.setdefault(form, (value, origin))
        if first[0] != value:
            raise _clash("query", value, form, origin, f"{first[1]} ({first[0]!r})")
        if form != value:
            self._write(CASE, form, value)
        return form

    def _write(self, kind: IdKind, form: str, value: str) -> None:
        if self._file is None:
            self._file = AtomicFile(self.path)
            self._file.handle.write(self.HEADER)
        self._file.handle.write(f"{kind.name}\t{form}\t{value}\n".encode())
        self.mapped += 1

    @property
    def written(self) -> bool:
        """Whether any id was mapped, so ``ids.tsv`` is to be written."""
        return self._file is not None

    def commit(self) -> None:
        if self._file is not None:
            self._file.commit()

    def close(self) -> None:
        """Discard an uncommitted ``ids.tsv`` and the temporary set."""
        if self._file is not None:
            self._file.discard()
        self._forms.close()

    def __enter__(self) -> IdMap:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _clash(what: str, value: str, form: str, origin: str, first: str | None) -> InputError:
    return InputError(
        origin or "the input",
        f"{what} id {value!r} and the one at {first or '?'} would both be {form!r} in ragsnap",
        "rename one of them, in every file that names it",
    )


def read_id_map(path: str | os.PathLike[str]) -> dict[str, dict[str, str]]:
    """``ids.tsv`` as ``{kind: {ragsnap id: original id}}`` (kinds ``source``, ``doc_id``,
    ``case``): to show imported ids, and the ids of TREC runs and qrels, as the format
    had them. ``path`` is a ``str`` or any path-like object."""
    path = Path(path)
    fix = "pass the ids.tsv that `ragsnap import` wrote"
    found: dict[str, dict[str, str]] = {SOURCE.name: {}, DOC_ID.name: {}, CASE.name: {}}
    try:
        with path.open("rb") as handle:
            for line_no, raw in enumerate(handle, 1):
                if line_no == 1:
                    if raw != IdMap.HEADER:
                        raise InputError(path, "does not start with the ids.tsv header", fix)
                    continue
                cells = raw.rstrip(b"\n").decode("utf-8").split("\t")
                if len(cells) != 3 or cells[0] not in found:
                    raise InputError(
                        path, "is not `kind<TAB>ragsnap id<TAB>original id`", fix, f"line {line_no}"
                    )
                found[cells[0]][cells[1]] = cells[2]
    except UnicodeDecodeError:
        raise InputError(path, "is not UTF-8", fix) from None
    except OSError as exc:
        raise InputError(path, f"cannot be read ({exc.strerror})", fix) from None
    return found

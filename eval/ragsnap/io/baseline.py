"""Read a baseline score report for the diff, one case row at a time.

``ragsnap score --compare-to`` diffs against a baseline report of the same size as
the one it writes (23 MB of JSON at 10,000 cases). ``load_report`` parses it whole:
its Python objects, and ``orjson``'s parse on top of them, were the largest
allocation of a run. ``load_baseline`` reads it row by row instead:

1. the file's bytes are split, without building anything, into its top-level
   fields and the ``cases`` array's rows (``msgspec.Raw``: slices of the bytes);
2. the top-level fields are parsed (``orjson``, as ``load_report`` does) and
   checked: the report ``kind``, its ``schemaVersion``, and the report schema
   (``private-report`` when ``privacy`` is true) with an empty ``cases`` array;
3. each row is parsed, validated against the schema's case definition
   (``#/definitions/case``, what the schema's ``cases`` items refer to, so the
   document is valid exactly when its top level and every row are), checked for a
   duplicate ``id``, and kept as a ``BaselineRow`` of only ``DIFF_CASE_FIELDS`` (what
   the diff and its privacy view read), each string shared with the rows before it (a
   source name is one object however many rows list it); the parsed row is dropped.

A ``BaselineRow`` is a read-only mapping over one tuple of the fields' values (a
missing field is absent from it, as from the row): it reads, compares and iterates as
the dict of those fields does, at about a quarter of a 25-key dict's memory. Its
``coverage`` entries (``{"target", "rank"}`` or ``{"target", "chunk"}``) are kept the
same way (``_Pair``: equal to the entry's dict, a third of its memory), and its empty
lists (coverage, sources, reasons) are one list (read, never changed: the diff is pure).

The bytes are the only copy of the whole report held at once; a report laid out
as ragsnap's writer lays it out (``write_json``: sorted keys, two-space indents, one
case row per four-space ``{`` ... ``}``) is not even held whole: ``_read_chunked``
reads it 1 MiB at a time and cuts the rows at the writer's ``},`` lines (what
``_read`` does, at a bounded memory: no 23 MB of bytes on top of the rows). A cut
is taken only as what JSON's grammar makes it: every piece must parse as one value
on its own, so the pieces joined by commas are the array, and the rest of the file
with ``[]`` and then ``[null]`` in the array's place must parse with ``cases`` being
``[]`` and ``[None]``, so the array is the top level's ``cases``. A file laid out
otherwise is read whole (``_read``). Anything the fast path does not accept (a
file that is missing, is not JSON, not a report, of another version, fails the
schema, has a duplicate case) is read again by
``load_report``, which raises its error: the messages are the ones
``load_report`` gives, and nothing it rejects is accepted here.
"""

from __future__ import annotations

import functools
import os
import stat
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from ..models import REPORT_KIND, REPORT_SCHEMA_VERSION
from .inputs import load_report
from .jsonio import MAX_INPUT_BYTES, read_bytes
from .schema import load_schema

__all__ = ["DIFF_CASE_FIELDS", "BaselineRow", "load_baseline"]

#: the fields of a baseline's case row that the diff (``ragsnap.scoring.diff``) and
#: its privacy view (``ragsnap.scoring.privacy.private_diff``) read; the rest of a row
#: (context sources, kbScope, the minimum hit level ...) is not kept
DIFF_CASE_FIELDS = (
    "id",
    "query",
    "category",
    "language",
    "split",
    "topK",
    "noAnswer",
    "fixture",
    "passed",
    "reasons",
    "hitLevel",
    "firstExpectedRank",
    "evidenceCount",
    "matchedSources",
    "topSources",
    "breadcrumbsCovered",
    "breadcrumbsExpected",
    "keywordsCovered",
    "keywordsExpected",
    "selectedAttempt",
    "fallbackReasons",
    "evidenceStatus",
    "rerankTopSource",
    "metrics",
    "coverage",
)

#: each field's place in a ``BaselineRow``'s values
_INDEX = {name: at for at, name in enumerate(DIFF_CASE_FIELDS)}


class _Missing:
    """A ``BaselineRow``'s value for a field its row does not have: one object, also
    through a copy or a pickle."""

    __slots__ = ()

    def __reduce__(self) -> str:
        return "_MISSING"


_MISSING: Any = _Missing()


class BaselineRow(Mapping[str, Any]):
    """A kept baseline case row: a read-only mapping of the ``DIFF_CASE_FIELDS`` the row
    has, held as one tuple in ``DIFF_CASE_FIELDS``' order (``_MISSING`` for a field it
    does not have) instead of a dict (module docstring). It equals the dict of those
    fields."""

    __slots__ = ("_values",)

    def __init__(self, values: tuple[Any, ...]) -> None:
        self._values = values

    def __getitem__(self, key: str) -> Any:
        value = self._values[_INDEX[key]]
        if value is _MISSING:
            raise KeyError(key)
        return value

    def get(self, key: str, default: Any = None) -> Any:
        at = _INDEX.get(key)
        if at is None:
            return default
        value = self._values[at]
        return default if value is _MISSING else value

    def __contains__(self, key: object) -> bool:
        at = _INDEX.get(key) if type(key) is str else None
        return at is not None and self._values[at] is not _MISSING

    def __iter__(self) -> Iterator[str]:
        return (k for k, v in zip(DIFF_CASE_FIELDS, self._values, strict=True) if v is not _MISSING)

    def __len__(self) -> int:
        return sum(v is not _MISSING for v in self._values)

    def __repr__(self) -> str:
        return f"BaselineRow({dict(self)!r})"

    def __reduce__(self) -> Any:  # copy and pickle as what it is
        return (BaselineRow, (self._values,))


class _Pair(Mapping[str, Any]):
    """A kept coverage entry, ``{"target": ..., key: value}`` (``key``: ``rank`` or
    ``chunk``), as a read-only mapping that equals that dict."""

    __slots__ = ("_key", "_target", "_value")

    def __init__(self, target: Any, key: str, value: Any) -> None:
        self._target, self._key, self._value = target, key, value

    def __getitem__(self, key: str) -> Any:
        if key == "target":
            return self._target
        if key == self._key:
            return self._value
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter((self._key, "target"))  # sorted, as the writer lays the entry out

    def __len__(self) -> int:
        return 2

    def __eq__(self, other: object) -> bool:
        if type(other) is _Pair:
            return (self._key, self._target, self._value) == (
                other._key,
                other._target,
                other._value,
            )
        if type(other) is dict:
            return (
                len(other) == 2
                and other.get("target", _MISSING) == self._target
                and other.get(self._key, _MISSING) == self._value
            )
        return super().__eq__(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr(dict(self))

    def __reduce__(self) -> Any:  # copy and pickle as what it is
        return (_Pair, (self._target, self._key, self._value))


#: the one empty list of every kept row (its coverage, sources, reasons)
_EMPTY: list[Any] = []


#: what a report schema's ``cases`` must say for rows to be validated one at a time
_CASES_SCHEMA = {"type": "array", "items": {"$ref": "#/definitions/case"}}


class _Rejected(Exception):
    """The fast path does not accept the file; ``load_report`` explains why."""


class _NotCut(Exception):
    """The file is not laid out as ``_read_chunked`` cuts it; ``_read`` reads it."""


#: the writer's layout (``ragsnap.io.jsonio.write_json``): where the rows begin, the
#: line between two rows, and the end of the last row and of the array
_HEAD = b'  "cases": [\n'
_BETWEEN = b"\n    },\n    {\n"
_LAST = b"\n    }\n  ]"
_CHUNK = 1 << 20
#: how far into the file the rows must begin (else the file is read whole)
_HEAD_LIMIT = 1 << 20


def _read_chunked(path: Path) -> dict[str, Any]:
    """``_read``'s result, the file read ``_CHUNK`` bytes at a time and its rows cut at
    the writer's lines (module docstring); ``_NotCut`` when it is laid out otherwise,
    ``_Rejected`` (or any error) when the fast path does not accept it."""
    import orjson

    name = os.fspath(path)
    info = os.stat(name)  # noqa: PTH116 - never blocks, unlike opening a FIFO
    limit = MAX_INPUT_BYTES["file"]
    if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
        raise _NotCut
    loads = orjson.loads
    validators: dict[bool, Callable[[Any], bool]] = {
        False: _validators("report")[1],
        True: _validators("private-report")[1],
    }
    private: bool | None = None  # which kind of rows: the first row's, checked at the end
    shared: dict[str, str] = {}
    cases: list[BaselineRow] = []
    seen: set[str] = set()
    with open(name, "rb") as file:  # noqa: PTH123 - os-level, as read_bytes
        read = file.read
        buffer = read(_CHUNK)
        total = len(buffer)
        if buffer.startswith(b"\xef\xbb\xbf"):
            buffer = buffer[3:]
        at = buffer.find(_HEAD)
        while at == -1:  # the fields before ``cases`` (none, with the writer's sorted keys)
            more = read(_CHUNK)
            if not more or len(buffer) > _HEAD_LIMIT:
                raise _NotCut
            total += len(more)
            buffer += more
            at = buffer.find(_HEAD, max(0, len(buffer) - len(more) - len(_HEAD)))
        head = buffer[: at + len(_HEAD) - 2]  # up to ``"cases": ``, without the ``[``
        start = at + len(_HEAD) - 1  # the newline before the first row's ``{``
        while True:
            cut = buffer.find(_BETWEEN, start)
            # the writer has no ``_LAST`` before the last row, and a row cut elsewhere
            # does not parse alone: so only the rows' end is looked for, not each row's
            last = -1 if cut != -1 else buffer.find(_LAST, start)
            if last == -1 and cut == -1:  # the row goes on in the next chunk
                more = read(_CHUNK)
                total += len(more)
                if not more or total > limit:
                    raise _NotCut
                buffer = buffer[start:] + more
                start = 0
                continue
            end = (cut if last == -1 else last) + 6  # just after the row's ``}``
            row = loads(buffer[start:end])
            if private is None:
                private = not validators[False](row)
            if not validators[private](row) or row["id"] in seen:
                raise _Rejected
            seen.add(row["id"])
            cases.append(_cut(row, shared))
            if last != -1:
                rest = [buffer[last + len(_LAST) :]]
                while more := read(_CHUNK):  # the report's closing fields: a few KB
                    total += len(more)
                    if total > limit:
                        raise _NotCut
                    rest.append(more)
                tail = b"".join(rest)
                break
            start = end + 1  # after the comma: the next row's newline
    top = loads(head + b"[]" + tail)
    if type(top) is not dict or top.get("cases") != []:
        raise _NotCut
    if loads(head + b"[null]" + tail).get("cases") != [None]:
        raise _NotCut  # the array cut out is not the top level's ``cases``
    if top.get("kind") != REPORT_KIND or top.get("schemaVersion") != REPORT_SCHEMA_VERSION:
        raise _Rejected
    if (top.get("privacy") is True) != bool(private):
        raise _NotCut  # the rows were checked against the other kind's schema
    top_valid = _validators("private-report" if private else "report")[0]
    del top["cases"]
    top["cases"] = []  # last, as ``_read`` puts it
    if not top_valid(top):
        raise _Rejected
    top["cases"] = cases
    return top


def load_baseline(path: Path, role: str = "baseline") -> dict[str, Any]:
    """``load_report(path, role)`` as the diff reads it: every top-level field, and
    each case row with only ``DIFF_CASE_FIELDS`` (module docstring). Raises
    ``load_report``'s ``InputError`` for a file it rejects."""
    try:
        try:
            return _read_chunked(path)
        except _NotCut:  # not the writer's layout: its bytes whole
            return _read(path)
    except Exception:  # any failure: the full reader names it, or reads the file
        return _kept(load_report(path, role))


def _read(path: Path) -> dict[str, Any]:
    import msgspec
    import orjson

    raw = read_bytes(path, "")
    view = memoryview(raw)[3:] if raw.startswith(b"\xef\xbb\xbf") else memoryview(raw)
    fields = msgspec.json.decode(view, type=dict[str, msgspec.Raw])
    rows = msgspec.json.decode(fields.pop("cases", b"null"), type=list[msgspec.Raw])
    top = {key: orjson.loads(memoryview(value)) for key, value in fields.items()}
    del fields
    if top.get("kind") != REPORT_KIND or top.get("schemaVersion") != REPORT_SCHEMA_VERSION:
        raise _Rejected
    top_valid, row_valid = _validators("private-report" if top.get("privacy") is True else "report")
    top["cases"] = []
    if not top_valid(top):
        raise _Rejected
    shared: dict[str, str] = {}
    cases = []
    seen: set[str] = set()
    loads = orjson.loads
    for index in range(len(rows)):
        row = loads(memoryview(rows[index]))
        rows[index] = None  # type: ignore[call-overload]
        if not row_valid(row) or row["id"] in seen:
            raise _Rejected
        seen.add(row["id"])
        cases.append(_cut(row, shared))
    top["cases"] = cases
    return top


@functools.cache
def _validators(name: str) -> tuple[Callable[[Any], bool], Callable[[Any], bool]]:
    """The compiled validators of report schema ``name``: the whole document, and one
    case row (its ``#/definitions/case``)."""
    import jsonschema_rs

    schema = load_schema(name)
    if schema["properties"]["cases"] != _CASES_SCHEMA:  # pragma: no cover - a new schema
        raise _Rejected
    validators = jsonschema_rs.validator_map_for(schema)
    whole, row = validators.get("#"), validators.get("#/definitions/case")
    if whole is None or row is None:  # pragma: no cover - a new schema
        raise _Rejected
    return whole.is_valid, row.is_valid


#: a kept row's string fields, and its lists of strings, whose values repeat across rows
_STRINGS = (
    "category",
    "language",
    "split",
    "fixture",
    "hitLevel",
    "selectedAttempt",
    "evidenceStatus",
    "rerankTopSource",
)
_STRING_LISTS = ("topSources", "matchedSources", "reasons", "fallbackReasons")


def _cut(row: dict[str, Any], shared: dict[str, str]) -> BaselineRow:
    """A parsed case row with only ``DIFF_CASE_FIELDS``, each string that repeats across
    rows (a source name, a category, a coverage target or chunk id) replaced by the equal
    one seen first, so it is one object however many rows hold it."""
    keep = shared.setdefault
    out = {key: row[key] for key in DIFF_CASE_FIELDS if key in row}
    for key in _STRINGS:
        value = out.get(key)
        if type(value) is str:
            out[key] = keep(value, value)
    for key in _STRING_LISTS:
        value = out.get(key)
        if value:
            out[key] = [keep(item, item) if type(item) is str else item for item in value]
        elif type(value) is list:
            out[key] = _EMPTY
    coverage = out.get("coverage")
    if type(coverage) is dict:
        for name, items in coverage.items():
            if type(items) is list:
                coverage[name] = [_pair(item, keep) for item in items] if items else _EMPTY
    return BaselineRow(tuple([out.get(key, _MISSING) for key in DIFF_CASE_FIELDS]))


def _pair(item: Any, keep: Callable[[str, str], str]) -> Any:
    """A coverage entry (``{"target", "rank"}`` or ``{"target", "chunk"}``, the schema's)
    as a ``_Pair``, its strings shared (``keep``); anything else as it is."""
    if type(item) is not dict or len(item) != 2 or "target" not in item:
        return item
    key = "rank" if "rank" in item else "chunk" if "chunk" in item else None
    if key is None:
        return item
    target, value = item["target"], item[key]
    if type(target) is str:
        target = keep(target, target)
    if type(value) is str:
        value = keep(value, value)
    return _Pair(target, key, value)


def _kept(report: dict[str, Any]) -> dict[str, Any]:
    """A report ``load_report`` read, its rows cut to ``DIFF_CASE_FIELDS``."""
    shared: dict[str, str] = {}
    report["cases"] = [_cut(row, shared) for row in report["cases"]]
    return report

"""Checks shared by the importers of one-object JSON formats (GoodBuddy, Qilbee).

Every check reads one value of an already parsed JSON object and either
returns it, typed, or raises ``InputError`` naming the file, the RFC 6901
JSON pointer of the value and the fix::

    checks = JsonChecks(path)
    data = checks.load("pass the fixture (a .json file) as SOURCE", "write one object ...")
    checks.arrays(data, "documents", "queries")
    for at, doc_id, doc in checks.entries(data["documents"], "/documents", "document", seen={}):
        text = checks.text(doc, "text", at, "put the document's text in `text`")

``at`` is always the pointer of the object that holds the key, so a problem
with ``key`` is reported at ``at + pointer(key)``. Ids follow
``ragsnap.importers.ids`` and the splits are the BEIR importer's
(``SPLITS``), so every importer accepts the same ids.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import InputError, UsageError
from ..io.jsonio import read_json
from . import ImportOptions
from .beir import SPLITS
from .ids import id_problem

__all__ = [
    "CATEGORY",
    "CATEGORY_RULE",
    "LANGUAGE",
    "LANGUAGE_RULE",
    "MAX_TEXT",
    "JsonChecks",
    "check_options",
    "describe",
    "pointer",
]

#: a usable language tag (as the golden-cases schema)
LANGUAGE = re.compile(r"^[a-z]{2,3}(-[A-Za-z0-9]{1,8})*$")
#: a usable case category (as the golden-cases schema)
CATEGORY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,63}$")
#: golden-cases.json's limit for a query or a span, in characters
MAX_TEXT = 10_000
#: ``CATEGORY`` and ``LANGUAGE`` in words, for fixes
CATEGORY_RULE = "letters, digits, . _ / -"
LANGUAGE_RULE = "a language tag like en"


def pointer(*parts: str | int) -> str:
    """An RFC 6901 JSON pointer from its reference tokens."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def describe(value: Any) -> str:
    """A value's JSON type, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "empty text" if not value.strip() else "text"
    if isinstance(value, list):
        return "an array"
    return "an object"


def check_options(options: ImportOptions, languages: str) -> None:
    """Refuse command-line defaults that golden-cases.json could not hold.

    ``languages`` are the examples the ``--language`` error suggests (``en or zh-CN``).
    """
    if options.split is not None and options.split not in SPLITS:
        raise UsageError(f"--split {options.split!r} is not a ragsnap split; use dev or test")
    if options.category is not None and not CATEGORY.match(options.category):
        raise UsageError(
            f"--category {options.category!r} is not a usable category; use letters, digits "
            "and . _ / - (at most 64), e.g. `imported`"
        )
    if options.language is not None and not LANGUAGE.match(options.language):
        raise UsageError(
            f"--language {options.language!r} is not a language tag; use e.g. {languages}"
        )


class JsonChecks:
    """Typed reads of one JSON file's values; each failure is an ``InputError`` for ``path``."""

    def __init__(self, path: Path):
        self.path = path

    def error(self, problem: str, fix: str, at: str | None = None) -> InputError:
        """The ``InputError`` for ``problem`` at pointer ``at`` (None: the whole file)."""
        return InputError(self.path, problem, fix, at)

    # -- the file ----------------------------------------------------------------------

    def load(self, read_fix: str, object_fix: str) -> dict[str, Any]:
        """The file's JSON object (``read_fix``: when it cannot be read or parsed)."""
        data = read_json(self.path, read_fix)
        if not isinstance(data, dict):
            raise self.error("is not a JSON object", object_fix)
        return data

    def arrays(self, data: dict[str, Any], *keys: str) -> None:
        """Require each of ``keys`` at the top of ``data``, holding an array."""
        for key in keys:
            if key not in data:
                raise self.error(f"has no `{key}`", f"add the `{key}` array", f"/{key}")
            if not isinstance(data[key], list):
                raise self.error(f"`{key}` must be an array", f"make `{key}` an array", f"/{key}")

    # -- containers --------------------------------------------------------------------

    def object(self, value: Any, at: str, what: str) -> dict[str, Any]:
        """``value`` (found at ``at``, described as ``what``: "a query") as an object."""
        if not isinstance(value, dict):
            raise self.error(f"{what} must be a JSON object", f"write {what} as an object", at)
        return value

    def array(
        self, item: dict[str, Any], key: str, at: str, fix: str, *, required: bool = False
    ) -> list[Any]:
        """``item[key]`` as an array; a missing optional one is empty, but null is refused."""
        value = item.get(key) if required else item.get(key, [])
        if not isinstance(value, list):
            raise self.error(
                f"`{key}` is missing or not an array"
                if required and value is None
                else f"`{key}` must be an array, not {describe(value)}",
                fix,
                at + pointer(key),
            )
        return value

    def entries(
        self, values: list[Any], at: str, what: str, seen: dict[str, str]
    ) -> Iterator[tuple[str, str, dict[str, Any]]]:
        """``(pointer, id, object)`` of each of ``values`` (the array at ``at``), in order.

        Each must be an object (``what``: "query") with an importable ``id``
        (``ragsnap.importers.ids``) that is unique: ``seen`` maps the ids
        already read to their pointers, and is updated, so it can span several
        arrays.
        """
        for i, raw in enumerate(values):
            where = f"{at}/{i}"
            item = self.object(raw, where, f"a {what}")
            value = self.id(item, where, what)
            if value in seen:
                raise self.error(
                    f"{what} id {value!r} appears twice (first at {seen[value]})",
                    f"give every {what} its own id",
                    f"{where}/id",
                )
            seen[value] = where
            yield where, value, item

    # -- scalars -----------------------------------------------------------------------

    def text(self, item: dict[str, Any], key: str, at: str, fix: str) -> str:
        """``item[key]``: required, non-blank text."""
        value = self.optional_text(item, key, at, fix)
        if value is None:
            raise self.error(f"`{key}` is missing", fix, at + pointer(key))
        return value

    def optional_text(self, item: dict[str, Any], key: str, at: str, fix: str) -> str | None:
        """``item[key]``: non-blank text, or None when it is missing or null."""
        value = item.get(key)
        if value is None:
            return None
        if not isinstance(value, str) or not value.strip():
            raise self.error(
                f"`{key}` must be non-empty text, not {describe(value)}", fix, at + pointer(key)
            )
        return value

    def id(self, item: dict[str, Any], at: str, what: str) -> str:
        """``item["id"]``: text that can be imported as an id (``ids.id_problem``);
        ``what`` names the item ("document") in messages."""
        value = self.text(item, "id", at, f"give the {what} an `id`")
        found = id_problem(value)
        if found is not None:
            problem, fix = found
            raise self.error(f"{what} id {value!r} {problem}", fix, f"{at}/id")
        return value

    def choice(
        self, item: dict[str, Any], key: str, at: str, pattern: re.Pattern[str], fix: str
    ) -> str | None:
        """``item[key]`` matching ``pattern``, or None when it is missing or null."""
        value = item.get(key)
        if value is None:
            return None
        if not isinstance(value, str) or not pattern.match(value):
            raise self.error(f"`{key}` {value!r} is not usable in ragsnap", fix, at + pointer(key))
        return value

    def split(self, item: dict[str, Any], at: str, fix: str) -> str | None:
        """``item["split"]``, one of ``SPLITS``, or None when it is missing or null."""
        split = item.get("split")
        if split is None:
            return None
        if split not in SPLITS:
            raise self.error(f"split {split!r} is not a ragsnap split", fix, f"{at}/split")
        return str(split)

    def flag(self, item: dict[str, Any], key: str, at: str, fix: str) -> bool:
        """``item[key]``: true or false, false when it is missing."""
        value = item.get(key, False)
        if not isinstance(value, bool):
            raise self.error(
                f"`{key}` must be true or false, not {describe(value)}", fix, at + pointer(key)
            )
        return value

    def whole(
        self,
        item: dict[str, Any],
        key: str,
        at: str,
        fix: str,
        *,
        rule: str,
        low: int,
        high: int | None = None,
    ) -> int:
        """``item[key]``: a whole number (not a boolean) from ``low`` to ``high``, as ``rule``
        says ("a positive whole number")."""
        value = item.get(key)
        if type(value) is not int or value < low or (high is not None and value > high):
            raise self.error(
                f"`{key}` is missing"
                if value is None
                else f"`{key}` must be {rule}, not {value!r}",
                fix,
                at + pointer(key),
            )
        return value

    def limit(self, text: str, what: str, fix: str, at: str) -> str:
        """``text`` (``what``: "the query"), refused when longer than ``MAX_TEXT``."""
        if len(text) > MAX_TEXT:
            raise self.error(
                f"{what} is {len(text):,} characters long (at most {MAX_TEXT:,})", fix, at
            )
        return text

"""Strict JSON Schemas at the boundary, shipped as package data.

Each schema (``ragsnap/io/schemas/<name>.schema.json``, draft-07) is compiled
once with ``jsonschema_rs`` (a compiled validator, about 15x faster than
generated Python code on fixtures) for the yes/no check every file goes
through; only a file that fails is validated again with ``jsonschema``, whose
``best_match`` picks the most relevant error with its JSON pointer and failing
keyword, so the message can name the field and the fix. Both read the same
schema file, so there is one definition of every format.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

import orjson

from ..errors import InputError, did_you_mean

__all__ = ["SCHEMA_NAMES", "load_schema", "validate"]

SCHEMA_NAMES = (
    "golden-cases",
    "fixture",
    "fixture-manifest",
    "report",
    "diff-report",
    "config",
    "gates",
    "trial-plan",
    "trial-report",
    "trial-diff",
    "check-report",
    "audit-report",
    "private-report",
    "private-diff-report",
    "private-trial-report",
    "private-live-report",
)


@functools.cache
def load_schema(name: str) -> dict[str, Any]:
    """Return the parsed schema ``name`` (one of ``SCHEMA_NAMES``)."""
    folder = resources.files("ragsnap.io").joinpath("schemas")
    text = folder.joinpath(f"{name}.schema.json").read_bytes()
    schema: dict[str, Any] = orjson.loads(text)
    return schema


@functools.cache
def _fast_validator(name: str) -> Callable[[Any], bool]:
    import jsonschema_rs

    is_valid: Callable[[Any], bool] = jsonschema_rs.Draft7Validator(load_schema(name)).is_valid
    return is_valid


def validate(instance: Any, name: str, path: Path | str, what: str) -> None:
    """Raise ``InputError`` unless ``instance`` satisfies schema ``name``.

    ``what`` names the kind of file in the fix, e.g. ``"golden cases file"``.
    """
    if not _fast_validator(name)(instance):
        raise _explain(instance, name, path, what)


def _pointer(parts: Any) -> str:
    return "/" + "/".join(str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def _explain(instance: Any, name: str, path: Path | str, what: str) -> InputError:
    from jsonschema import Draft7Validator
    from jsonschema.exceptions import best_match

    validator = Draft7Validator(load_schema(name))
    error = best_match(validator.iter_errors(instance))
    if error is None:  # the validators disagree (NaN is a number to one of them)
        return InputError(
            path,
            f"does not satisfy the {what} contract",
            f"check the {what} against its format in the README (a value such as NaN or "
            "an infinity is never valid)",
        )
    pointer = _pointer(error.absolute_path)
    keyword = error.validator
    parent = error.absolute_path[-1] if error.absolute_path else None
    if keyword == "additionalProperties":
        allowed = sorted(error.schema.get("properties", {}))
        extra = sorted(set(error.instance) - set(allowed))
        problem = f"unknown field{'s' if len(extra) > 1 else ''} {', '.join(map(repr, extra))}"
        meant = {name: did_you_mean(name, allowed) for name in extra}
        hints = [f"{m!r} for {n!r}" if len(extra) > 1 else repr(m) for n, m in meant.items() if m]
        fix = f"remove it or correct its spelling (allowed: {', '.join(allowed)})"
        if hints:  # a mistyped field: name the one meant first
            fix = f"did you mean {', '.join(hints)}? Else {fix}"
    elif keyword == "required":
        problem = error.message
        fix = f"add the field (see the {what} format in the README)"
    elif keyword in ("enum", "const"):
        options = error.validator_value if keyword == "enum" else [error.validator_value]
        problem = f"{error.instance!r} is not allowed"
        fix = f"use one of: {', '.join(map(repr, options))}"
    elif keyword == "type":
        expected = error.validator_value
        expected = " or ".join(expected) if isinstance(expected, list) else expected
        problem = f"{error.instance!r} is {type(error.instance).__name__}, expected {expected}"
        fix = f"change {parent!r} to a {expected}" if parent is not None else "fix the type"
    elif keyword == "pattern":
        problem = f"{error.instance!r} does not match {error.validator_value}"
        fix = "use letters, digits, '.', '_' and '-' only (see the README)"
    elif keyword == "uniqueItems":
        problem = "the list has duplicate entries"
        fix = "remove the duplicates"
    elif keyword in ("minimum", "maximum", "minLength", "maxLength", "minItems"):
        problem = error.message
        fix = f"change the value to satisfy {keyword} {error.validator_value}"
    else:
        problem = error.message
        fix = f"correct the value (see the {what} format in the README)"
    return InputError(path, problem, fix, pointer=pointer if pointer != "/" else None)

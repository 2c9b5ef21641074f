"""The fast validator and the explaining validator agree (ragsnap.io.schema).

ragsnap checks every file with jsonschema_rs and explains failures with
jsonschema; if they ever disagreed, a valid file would be rejected without an
explanation (or an invalid one accepted). This mutates valid documents at every
position and compares the two verdicts.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import jsonschema
import jsonschema_rs
import pytest

from conftest import block, make_case, make_fixture
from ragsnap.errors import InputError
from ragsnap.io.schema import SCHEMA_NAMES, load_schema, validate

REPLACEMENTS: list[Any] = [None, "x", "", 0, 1, 1.0, 2.5, -1, True, [], ["x", "x"], {}, {"k": 1}]


def mutations(doc: Any) -> Iterator[Any]:
    """Every variant of ``doc`` with one value replaced, one key dropped or added."""

    def walk(node: Any, path: tuple[Any, ...]) -> Iterator[tuple[Any, ...]]:
        yield path
        if isinstance(node, dict):
            for key, value in node.items():
                yield from walk(value, (*path, key))
        elif isinstance(node, list):
            for index, value in enumerate(node):
                yield from walk(value, (*path, index))

    def at(root: Any, path: tuple[Any, ...]) -> Any:
        for part in path:
            root = root[part]
        return root

    for path in walk(doc, ()):
        if path:
            for replacement in REPLACEMENTS:
                variant = copy.deepcopy(doc)
                at(variant, path[:-1])[path[-1]] = replacement
                yield variant
            if isinstance(at(doc, path[:-1]), dict):
                variant = copy.deepcopy(doc)
                del at(variant, path[:-1])[path[-1]]
                yield variant
        if isinstance(at(doc, path), dict):
            variant = copy.deepcopy(doc)
            at(variant, path)["unexpected"] = 1
            yield variant


DOCUMENTS = {
    "fixture": make_fixture("c1", [block(1, "a"), block(2, "b")], rerank_top="a"),
    "golden-cases": {
        "schemaVersion": 1,
        "defaults": {"kbScope": "rag-eval", "topK": 5},
        "cases": [make_case("c1", expectedKeywords=["k"], expectedFallbackReasons=["x"])],
    },
}


@pytest.mark.parametrize("name", sorted(DOCUMENTS))
def test_validators_agree_on_every_mutation(name: str) -> None:
    schema = load_schema(name)
    fast = jsonschema_rs.Draft7Validator(schema)
    slow = jsonschema.Draft7Validator(schema)
    assert fast.is_valid(DOCUMENTS[name])
    count = 0
    for variant in mutations(DOCUMENTS[name]):
        count += 1
        assert fast.is_valid(variant) == slow.is_valid(variant), variant
    assert count > 200


def test_schemas_are_valid_draft7() -> None:
    for name in SCHEMA_NAMES:
        jsonschema.Draft7Validator.check_schema(load_schema(name))


def test_validate_explains_with_pointer() -> None:
    doc = copy.deepcopy(DOCUMENTS["fixture"])
    doc["lookupResult"]["retrievalTrace"]["attempts"][0]["hitCount"] = -1
    with pytest.raises(InputError) as info:
        validate(doc, "fixture", "f.json", "fixture")
    assert info.value.pointer == "/lookupResult/retrievalTrace/attempts/0/hitCount"
    assert "minimum" in str(info.value)


@pytest.mark.parametrize(
    ("extra", "valid"),
    [
        ({}, True),
        ({"confidence": 0.0, "lexicalRank": 1, "vectorRank": 12}, True),
        ({"confidence": 1.0, "lexicalRank": None, "vectorRank": None}, True),
        ({"confidence": None}, True),
        ({"confidence": 1.2}, False),
        ({"confidence": -0.1}, False),
        ({"lexicalRank": 0}, False),
        ({"vectorRank": 1.5}, False),
        ({"vectorRank": "3"}, False),
    ],
)
def test_ranked_item_confidence_and_ranks_are_optional(extra: dict[str, Any], valid: bool) -> None:
    """A rerank trace item's ``confidence`` (0..1), ``lexicalRank`` and ``vectorRank``
    (>= 1) are optional, and null when not known."""
    doc = make_fixture("c1", [block(1, "a")], rerank_top="b")
    doc["lookupResult"]["rerankTrace"]["after"][0].update(extra)
    if valid:
        validate(doc, "fixture", "f.json", "fixture")
    else:
        with pytest.raises(InputError) as info:
            validate(doc, "fixture", "f.json", "fixture")
        (name,) = extra
        pointer = info.value.pointer or ""
        assert pointer.startswith("/lookupResult/rerankTrace/") and pointer.endswith(f"/0/{name}")

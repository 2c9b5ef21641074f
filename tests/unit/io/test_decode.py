"""The typed fixture decoder against the fixture schema (ragsnap.io.decode).

The typed decoder may accept a fixture only if the JSON Schema accepts it, and the
reader (typed, or the schema's way when the typed decoder refuses) must give what the
schema's way alone gives: the same models, or the same error (file, JSON pointer,
fix). The invalid fixtures are generated from ``fixture.schema.json`` itself: every
rule it states (required, additionalProperties, type, const, pattern, minLength,
minimum, maximum, oneOf, items), at every place it applies, broken in turn.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import orjson
import pytest
from jsonschema import Draft7Validator

from conftest import REPO, block, make_case, make_fixture, run_cli, write_json
from ragsnap.errors import InputError
from ragsnap.io.decode import decode_fixture, decode_typed
from ragsnap.io.jsonio import parse_json
from ragsnap.io.schema import load_schema, validate
from ragsnap.models import Fixture

SCHEMA = load_schema("fixture")
#: the pure-Python validator, a second opinion on the valid fixtures (on a pattern's
#: final newline it differs from jsonschema-rs, which decides: Python's ``$`` matches
#: before it, so ``jsonschema`` accepts ``"c1\n"`` as a caseId; the reader refuses it)
REFERENCE = Draft7Validator(SCHEMA)
PATH = "fixtures/c1.json"

#: a value of each JSON type, to put where another type is required
SAMPLES: dict[str, Any] = {
    "string": "x",
    "integer": 7,
    "number": 2.5,
    "boolean": True,
    "null": None,
    "array": [],
    "object": {},
}


def full_fixture() -> dict[str, Any]:
    """A valid fixture with every field the schema names, optional ones included."""
    data = make_fixture("c1", [block(1, "mysql-pool"), block(2, "redis", breadcrumb=None, score=1)])
    data["lookupResult"]["evidenceBlocks"][0]["metadata"] = {"lang": "en", "tokens": 12}
    generator = data["generator"]
    generator["method"] = "hybrid"
    generator["settings"] = {"candidates": 50, "floor": 0.25, "nested": {"a": [1, None]}}
    generator["embedder"] = {"kind": "hashing", "model": "", "revision": "", "dimension": 256}
    trace = data["lookupResult"]["retrievalTrace"]
    trace["attempts"][0].update(
        filter={"kbScope": "rag-eval"},
        method="hybrid",
        topScore=0.9,
        latencyMs=1.5,
        skipped=False,
        reason=None,
    )
    trace["l0Hints"] = {"category": "Database"}
    trace["fusion"] = {"profile": "rrf"}
    trace["selectedAttempt"] = "filtered"
    trace["fallbackReasons"] = ["weak"]
    for item in data["lookupResult"]["rerankTrace"]["after"]:
        item.update(confidence=0.5, lexicalRank=1, vectorRank=None)
    return data


def minimal_fixture() -> dict[str, Any]:
    """A valid fixture with only the required fields."""
    return {
        "schemaVersion": 1,
        "caseId": "c1",
        "query": "q",
        "retrievedAt": "2026-11-29T00:00:00.5+08:00",
        "generator": {"backend": "b", "pipelineVersion": "p", "kbScope": None, "topK": 1000},
        "lookupResult": {
            "evidenceBlocks": [
                {"rank": 1, "chunkId": "c", "source": "s", "text": "", "score": None}
            ]
        },
    }


def resolve(schema: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    if ref is None:
        return schema
    node: Any = SCHEMA
    for part in ref.removeprefix("#/").split("/"):
        node = node[part]
    return resolve(node)


def allowed_types(schema: dict[str, Any]) -> set[str] | None:
    """The JSON types ``schema`` allows (None: it states none)."""
    if "oneOf" in schema:
        types: set[str] = set()
        for branch in schema["oneOf"]:
            types |= allowed_types(resolve(branch)) or set()
        return types
    stated = schema.get("type")
    if stated is None:
        return None
    types = {stated} if isinstance(stated, str) else set(stated)
    return types | {"integer"} if "number" in types else types


def mutations(
    schema: dict[str, Any], value: Any, where: tuple[Any, ...]
) -> Iterator[tuple[str, tuple[Any, ...], Any]]:
    """(rule broken, place, new value) for every rule ``schema`` states about ``value``
    and, recursively, about what ``value`` holds; ``new value`` replaces the value at
    ``place``. A few are still valid (boundaries, integers written as floats)."""
    schema = resolve(schema)
    types = allowed_types(schema)
    if types is not None:
        for name, sample in SAMPLES.items():
            if name not in types:
                yield f"type {name}", where, sample
        if "integer" in types and "number" not in types:
            yield "integer written as a float (valid)", where, 7.0
    if "const" in schema:
        yield "const", where, 2
        yield "const as a float (valid)", where, float(schema["const"])
    if "enum" in schema:
        yield "enum", where, "not-in-the-enum"
    for branch in schema.get("oneOf", ()):
        branch = resolve(branch)
        if isinstance(value, dict) and branch.get("type") == "object":
            for mutation in mutations(branch, value, where):  # not the branch's own type
                if mutation[1] != where or not mutation[0].startswith("type"):
                    yield mutation
    if isinstance(value, str):
        if "minLength" in schema:
            yield "minLength", where, "x" * (schema["minLength"] - 1)
        if "pattern" in schema:
            yield "pattern (first character)", where, "!" + value
            yield "pattern (a final newline)", where, value + "\n"
            yield "pattern (a leading newline)", where, "\n" + value
    if isinstance(value, int | float) and not isinstance(value, bool):
        if "minimum" in schema:
            low = schema["minimum"]
            yield "minimum", where, low - (1 if isinstance(value, int) else 0.5)
            yield "minimum itself (valid)", where, low
        if "maximum" in schema:
            high = schema["maximum"]
            yield "maximum", where, high + (1 if isinstance(value, int) else 0.5)
            yield "maximum itself (valid)", where, high
    if isinstance(value, dict):
        properties = schema.get("properties", {})
        for name in schema.get("required", ()):
            yield f"required {name}", where, {k: v for k, v in value.items() if k != name}
        if schema.get("additionalProperties") is False:
            yield "additionalProperties", where, {**value, "unexpectedField": 1}
        elif not properties and schema.get("type") == "object":
            yield "free-form object (valid)", where, {"a": [1, {"b": None}], "é": "ü"}
        for name, sub in properties.items():
            if name in value:
                yield from mutations(sub, value[name], (*where, name))
            else:  # an optional field left out: each wrong value put there
                place = (*where, name)
                for mutation in mutations(sub, SAMPLES.get(_first_type(sub), 1), place):
                    if mutation[1] == place:
                        yield mutation
    if isinstance(value, list) and "items" in schema and value:
        yield from mutations(schema["items"], value[0], (*where, 0))


def _first_type(schema: dict[str, Any]) -> str:
    types = allowed_types(resolve(schema)) or {"object"}
    return sorted(types)[0]


def replaced(data: Any, where: tuple[Any, ...], value: Any) -> Any:
    copied = copy.deepcopy(data)
    if not where:
        return value
    node = copied
    for part in where[:-1]:
        node = node[part]
    node[where[-1]] = value
    return copied


def schema_way(raw: bytes) -> Fixture | str:
    """What the reader gave before typed decoding: the model, or the error's text."""
    try:
        data = parse_json(raw, PATH)
        validate(data, "fixture", PATH, "fixture")
    except InputError as exc:
        return f"{exc.path}|{exc.pointer}|{exc}"
    return Fixture.from_json(data)


def reader(raw: bytes) -> Fixture | str:
    try:
        return decode_fixture(raw, PATH)
    except InputError as exc:
        return f"{exc.path}|{exc.pointer}|{exc}"


def same(a: Fixture | str, b: Fixture | str) -> bool:
    if isinstance(a, str) or isinstance(b, str):
        return a == b
    return a == b and a.generator == b.generator


def check(raw: bytes, *, stricter: bool = False) -> tuple[bool, bool]:
    """Check ``raw`` read typed against the schema's way; (schema accepts, typed did)."""
    expected = schema_way(raw)
    assert same(reader(raw), expected), raw[:200]
    typed = decode_typed(raw)
    accepted = not isinstance(expected, str)
    if not accepted:
        assert typed is None, f"the typed decoder accepts what the schema rejects: {expected}"
    elif typed is not None:
        assert same(typed, expected)
    elif not stricter:
        pytest.fail(f"the typed decoder refuses a valid fixture: {raw[:200]!r}")
    return accepted, typed is not None


VALID = [full_fixture(), minimal_fixture()]


@pytest.mark.parametrize("data", VALID, ids=["full", "minimal"])
def test_valid_fixtures_decode_typed_to_the_schema_ways_models(data: dict[str, Any]) -> None:
    assert REFERENCE.is_valid(data)
    assert check(orjson.dumps(data)) == (True, True)


def test_the_example_projects_fixtures_decode_typed_to_the_same_models() -> None:
    paths = sorted((REPO / "fixtures").glob("*.json"))
    paths = [p for p in paths if p.name != "_manifest.json"]
    assert len(paths) > 20
    for path in paths:
        assert check(path.read_bytes()) == (True, True), path


CASES = [
    (rule, where, value, data)
    for data in VALID
    for rule, where, value in mutations(SCHEMA, data, ())
]


def test_every_rule_of_the_schema_is_broken_somewhere() -> None:
    rules = {rule.split(" ")[0] for rule, _, _, _ in CASES}
    assert rules >= {
        "type",
        "const",
        "required",
        "additionalProperties",
        "pattern",
        "minLength",
        "minimum",
        "maximum",
        "free-form",
    }
    assert len(CASES) > 400


@pytest.mark.parametrize(
    ("rule", "where", "value", "data"),
    CASES,
    ids=[f"{'/'.join(map(str, w))}: {r}" for r, w, _, _ in CASES],
)
def test_a_mutated_fixture_is_read_as_the_schema_reads_it(
    rule: str, where: tuple[Any, ...], value: Any, data: dict[str, Any]
) -> None:
    mutated = replaced(data, where, value)
    accepted, typed = check(orjson.dumps(mutated), stricter="as a float" in rule)
    assert accepted == ("(valid)" in rule or rule.startswith("free-form")), rule
    if "as a float" in rule:  # the one place the typed decoder is stricter than draft-07
        assert not typed


FULL = orjson.dumps(full_fixture())
TEXT = b'"text": "some text"'
BIG = str(2**64 + 1).encode()  # orjson: a float, 2**64; exact, it is not


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param(b"\xef\xbb\xbf" + FULL, id="a byte order mark"),
        pytest.param(FULL.replace(b'"some text"', b'"some \xff text"', 1), id="not UTF-8"),
        pytest.param(FULL.replace(b'"en"', b'"\xff"', 1), id="not UTF-8 in metadata"),
        pytest.param(FULL.replace(b'"en"', b'"\\ud800"', 1), id="a lone surrogate"),
        pytest.param(FULL.replace(b'"score":1,', b'"score":1e400,', 1), id="an infinity"),
        pytest.param(FULL.replace(b'"tokens":12', b'"tokens":1e400', 1), id="infinity inside"),
        pytest.param(FULL.replace(b'"score":1,', b'"score":' + BIG + b",", 1), id="big score"),
        pytest.param(FULL.replace(b'"rank":1,', b'"rank":' + BIG + b",", 1), id="big rank"),
        pytest.param(FULL.replace(b'"candidates":50', b'"candidates":' + BIG, 1), id="big int"),
        pytest.param(FULL.replace(b'"rank":1,', b'"rank":"x","rank":1,', 1), id="a repeated key"),
        pytest.param(FULL.replace(b'"rank":1,', b'"rank":1,"rank":"x",', 1), id="repeated, bad"),
        pytest.param(FULL + b" x", id="trailing characters"),
        pytest.param(FULL[:-1], id="truncated"),
        pytest.param(b"[]", id="an array"),
        pytest.param(b"", id="empty"),
        pytest.param(
            FULL.replace(b'{"lang"', b'{"d":' + b"[" * 900 + b"]" * 900 + b',"lang"', 1),
            id="nested 900 deep",
        ),
        pytest.param(
            FULL.replace(b'{"lang"', b'{"d":' + b"[" * 1100 + b"]" * 1100 + b',"lang"', 1),
            id="nested 1100 deep",
        ),
    ],
)
def test_files_the_parser_refuses_or_reads_oddly_are_read_as_before(raw: bytes) -> None:
    assert raw != FULL or raw == b""
    check(raw, stricter=True)  # big integers and deep nesting go the schema's way


def test_a_bad_fixture_fails_score_with_file_pointer_and_fix(tmp_path: Path) -> None:
    """At the command line: exit 2, the file, the JSON pointer and the fix, as the
    schema's way words it (the typed decoder only decides which way a file goes)."""
    write_json(
        tmp_path / "cases" / "golden-cases.json", {"schemaVersion": 1, "cases": [make_case("c1")]}
    )
    bad = full_fixture()
    bad["lookupResult"]["evidenceBlocks"][0]["chunkId"] = ""
    write_json(tmp_path / "fixtures" / "c1.json", bad)
    run = run_cli(
        "score",
        "--cases",
        "cases/golden-cases.json",
        "--fixtures",
        "fixtures",
        "--no-label-check",
        cwd=tmp_path,
    )
    assert run.code == 2, run.out + run.err
    message = str(decode_error(orjson.dumps(bad)))
    assert "fixtures/c1.json" in run.err
    assert "/lookupResult/evidenceBlocks/0/chunkId" in run.err
    assert message.split(": ", 1)[1] in run.err


def decode_error(raw: bytes) -> InputError:
    with pytest.raises(InputError) as info:
        decode_fixture(raw, PATH)
    return info.value


def test_a_huge_integer_in_metadata_is_the_one_value_read_differently() -> None:
    """Beyond 64 bits orjson makes an integer a float; inside a free-form object the
    typed decoder keeps it exact. Only ``EvidenceBlock.metadata`` keeps such an object,
    and nothing reads it: everything else is the same."""
    raw = FULL.replace(b'"tokens":12', b'"tokens":' + BIG, 1)
    typed, expected = decode_typed(raw), schema_way(raw)
    assert typed is not None and isinstance(expected, Fixture)
    assert typed.lookup.evidence_blocks[0].metadata == {"lang": "en", "tokens": 2**64 + 1}
    assert expected.lookup.evidence_blocks[0].metadata == {"lang": "en", "tokens": 2.0**64}
    strip = {"metadata": msgspec.UNSET}
    assert [msgspec.structs.replace(b, **strip) for b in typed.lookup.evidence_blocks] == [
        msgspec.structs.replace(b, **strip) for b in expected.lookup.evidence_blocks
    ]


def test_the_full_fixture_names_every_field_of_the_schema() -> None:
    """So a field added to the schema but not to the typed decoder fails a test (the
    file would still be read, the schema's way, only slower)."""

    def missing(schema: dict[str, Any], value: Any, where: str) -> Iterator[str]:
        schema = resolve(schema)
        for branch in schema.get("oneOf", ()):
            if isinstance(value, dict) and resolve(branch).get("type") == "object":
                yield from missing(resolve(branch), value, where)
        if isinstance(value, dict):
            for name, sub in schema.get("properties", {}).items():
                if name not in value:
                    yield f"{where}/{name}"
                else:
                    yield from missing(sub, value[name], f"{where}/{name}")
        if isinstance(value, list) and "items" in schema:
            for index, item in enumerate(value):
                yield from missing(schema["items"], item, f"{where}/{index}")

    blocks = full_fixture()["lookupResult"]["evidenceBlocks"]
    assert list(missing(SCHEMA, full_fixture(), "")) == [
        f"/lookupResult/evidenceBlocks/1/{name}" for name in ("metadata",)
    ], "add the field to full_fixture() (and to ragsnap.io.decode)"
    assert "metadata" in blocks[0]

"""Typed decoding of fixtures: their bytes straight into the models, in one pass.

``decode_fixture`` is what the fixture reader (``ragsnap.io.inputs.FixtureStream``,
so ``load_fixtures`` and ``ragsnap score``) does with each file's bytes. It decodes
them with ``msgspec`` into ``msgspec.Struct`` types whose annotations are the rules of
``fixture.schema.json`` (the evidence blocks straight into ``models.EvidenceBlock``),
then builds the ``Fixture``. That one pass replaces parsing (``orjson``), validating
(jsonschema-rs) and building the models from the parsed dicts; it accepts no fixture
the schema rejects. The schema stays the one definition of the format:

- **Any file the typed decoder refuses** (a ``msgspec`` decode or validation error,
  or nesting deeper than it recurses) is read the schema's way: ``parse_json``,
  ``validate`` against the fixture schema, ``Fixture.from_json``. So a bad fixture
  gets exactly the message it got before (the file, the JSON pointer, the fix; exit 2
  at the command line), and a fixture the schema accepts but the typed decoder does
  not is still read, to the same models.
- **Where the typed decoder is stricter than the schema** (so those files take the
  schema's way): an integer written as a float (``1.0``, which draft-07 counts as an
  integer: ``rank``, ``topK``, ``schemaVersion`` ...); an integer beyond int64
  (``msgspec`` bounds are int64); objects nested deeper than ``msgspec`` recurses
  (about 1,000 levels; orjson allows 1,024). One value is read differently, and
  nothing reads it: an integer beyond 64 bits inside a block's free-form ``metadata``
  (``EvidenceBlock.metadata``) is exact here, a float the schema's way.
- **How each rule is expressed.** ``required``: a field without a default;
  ``additionalProperties: false``: ``forbid_unknown_fields``; an optional field that
  may not be null defaults to ``msgspec.UNSET`` (an explicit ``null`` is an error);
  ``type``: the annotation (``number`` is ``int | float``, so an integer stays an
  int as orjson leaves it; ``object`` with any content is ``dict[str, Any]``, decoded
  in full so its strings must be UTF-8 and its numbers finite, as orjson requires);
  ``const``: ``Literal``; ``minimum`` / ``maximum`` / ``minLength``: ``msgspec.Meta``;
  ``pattern``: ``msgspec.Meta(pattern=...)``, the schema's pattern with its final
  ``$`` written ``\\Z`` (Python's ``$`` also matches before a final newline, the
  schema's ECMA-262 ``$`` does not); ``oneOf`` null / object: an optional union.
  ``tests/unit/io/test_decode.py`` breaks each of the schema's rules in turn,
  generated from the schema, and checks the decoder agrees with it.
- **The generator block** is kept as the parser leaves it (``Fixture.generator``,
  which the privacy view hashes): its bytes are decoded once typed (the rules) and
  once by ``orjson`` (the dict), so it is the same dict as before, numbers and all.

Beyond the schema, the reader checks what a schema cannot say (``caseId`` against
the file name, ranks 1..n), on the ``Fixture`` either way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec
import orjson

from ..models import INT64_MAX, EvidenceBlock, Fixture, LookupResult
from .jsonio import parse_json
from .schema import validate

__all__ = ["decode_fixture", "decode_typed"]

_UNSET = msgspec.UNSET
_BOM = b"\xef\xbb\xbf"

_NonEmpty = Annotated[str, msgspec.Meta(min_length=1)]
_Count = Annotated[int, msgspec.Meta(ge=0, le=INT64_MAX)]
_Rank = Annotated[int, msgspec.Meta(ge=1, le=INT64_MAX)]
_Number = Annotated[int, msgspec.Meta(ge=-INT64_MAX - 1, le=INT64_MAX)] | float
_Object = dict[str, Any]
#: a number in [0, 1] (``confidence``)
_Unit = Annotated[int, msgspec.Meta(ge=0, le=1)] | Annotated[float, msgspec.Meta(ge=0, le=1)]
#: ``retrievedAt`` and ``caseId``: the schema's patterns, ``$`` written ``\Z``
_CASE_ID = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}\Z"
_RETRIEVED_AT = (
    r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?"
    r"(Z|[+-][0-9]{2}:[0-9]{2})\Z"
)


class _Wire(msgspec.Struct, forbid_unknown_fields=True, rename="camel"):
    """A schema object: camelCase names in the file, no unknown field."""


class _ContextPack(_Wire):
    sources: list[_NonEmpty]
    text: str
    char_count: _Count | msgspec.UnsetType = _UNSET
    budget_chars: _Count | msgspec.UnsetType | None = _UNSET
    truncated: bool | msgspec.UnsetType = _UNSET


class _Attempt(_Wire):
    name: _NonEmpty
    hit_count: _Count
    filter: _Object | msgspec.UnsetType = _UNSET
    method: str | msgspec.UnsetType = _UNSET
    top_score: _Number | msgspec.UnsetType | None = _UNSET
    latency_ms: _Count | Annotated[float, msgspec.Meta(ge=0)] | msgspec.UnsetType | None = _UNSET
    skipped: bool | msgspec.UnsetType = _UNSET
    reason: str | msgspec.UnsetType | None = _UNSET


class _RetrievalTrace(_Wire):
    attempts: list[_Attempt]
    selected_attempt: str | None
    fallback_reasons: list[_NonEmpty]
    evidence_status: _NonEmpty
    l0_hints: _Object | msgspec.UnsetType = _UNSET
    fusion: _Object | msgspec.UnsetType = _UNSET


class _RankedItem(_Wire):
    chunk_id: _NonEmpty
    source: _NonEmpty
    score: _Number | msgspec.UnsetType | None = _UNSET
    confidence: (
        Annotated[int, msgspec.Meta(ge=0, le=1)]
        | Annotated[float, msgspec.Meta(ge=0, le=1)]
        | msgspec.UnsetType
        | None
    ) = _UNSET
    lexical_rank: _Rank | msgspec.UnsetType | None = _UNSET
    vector_rank: _Rank | msgspec.UnsetType | None = _UNSET


class _RerankTrace(_Wire):
    applied: bool
    before: list[_RankedItem]
    after: list[_RankedItem]
    reranker: str | msgspec.UnsetType | None = _UNSET


class _LookupResult(_Wire):
    evidence_blocks: list[EvidenceBlock]
    context_pack: _ContextPack | msgspec.UnsetType = _UNSET
    retrieval_trace: _RetrievalTrace | msgspec.UnsetType = _UNSET
    rerank_trace: _RerankTrace | msgspec.UnsetType = _UNSET


class _Embedder(_Wire):
    kind: _NonEmpty
    model: str
    revision: str
    dimension: _Rank


class _Generator(_Wire):
    backend: _NonEmpty
    pipeline_version: _NonEmpty
    kb_scope: str | None
    top_k: Annotated[int, msgspec.Meta(ge=1, le=1000)]
    method: _NonEmpty | msgspec.UnsetType = _UNSET
    settings: _Object | msgspec.UnsetType = _UNSET
    embedder: _Embedder | msgspec.UnsetType | None = _UNSET


class _Fixture(_Wire):
    schema_version: Literal[1]
    case_id: Annotated[str, msgspec.Meta(pattern=_CASE_ID)]
    query: _NonEmpty
    retrieved_at: Annotated[str, msgspec.Meta(pattern=_RETRIEVED_AT)]
    #: checked by ``_GENERATOR`` and parsed by orjson (``Fixture.generator``)
    generator: msgspec.Raw
    lookup_result: _LookupResult


_FIXTURE = msgspec.json.Decoder(_Fixture)
_GENERATOR = msgspec.json.Decoder(_Generator)


def decode_typed(raw: bytes) -> Fixture | None:
    """The fixture in ``raw`` by the typed decoder alone, or None when it refuses it
    (the file then goes the schema's way: ``decode_fixture``)."""
    if raw.startswith(_BOM):
        raw = raw[len(_BOM) :]
    try:
        data = _FIXTURE.decode(raw)
        _GENERATOR.decode(data.generator)
    except (msgspec.DecodeError, RecursionError):  # ValidationError is a DecodeError
        return None
    generator: dict[str, Any] = orjson.loads(memoryview(data.generator))
    found = data.lookup_result
    blocks = tuple(found.evidence_blocks)
    pack, trace, rerank = found.context_pack, found.retrieval_trace, found.rerank_trace
    top = rerank.after[:1] if rerank is not _UNSET and rerank.applied else ()
    lookup = LookupResult(
        blocks,
        None if pack is _UNSET else tuple(pack.sources),
        None if pack is _UNSET else len(pack.text),
        None if trace is _UNSET else trace.selected_attempt,
        None if trace is _UNSET else tuple(trace.fallback_reasons),
        None if trace is _UNSET else trace.evidence_status,
        None if rerank is _UNSET else rerank.applied,
        top[0].source if top else None,
        _absent(trace is _UNSET, rerank is _UNSET, pack is _UNSET),
    )
    return Fixture(
        data.case_id,
        data.query,
        data.retrieved_at,
        generator["backend"],
        lookup,
        generator,
    )


def _absent(trace: bool, rerank: bool, pack: bool) -> tuple[str, ...]:
    """``LookupResult.absent``: the parts left out, in ``LOOKUP_PARTS`` order."""
    if not (trace or rerank or pack):
        return ()
    parts = (("retrievalTrace", trace), ("rerankTrace", rerank), ("contextPack", pack))
    return tuple(name for name, missing in parts if missing)


def decode_fixture(raw: bytes, path: Path | str) -> Fixture:
    """The fixture in ``raw`` (the bytes of file ``path``), valid against the fixture
    schema: decoded typed, or, when the typed decoder refuses it, the schema's way
    (which raises the ``InputError`` of a bad fixture)."""
    fixture = decode_typed(raw)
    if fixture is not None:
        return fixture
    data: Any = parse_json(raw, path)
    validate(data, "fixture", path, "fixture")
    return Fixture.from_json(data)

"""Snapshots: one golden case's live lookup as a fixture (``fixtures/{caseId}.json``).

``snapshot_case`` asks a ``LookupSource`` (the in-process pipeline over an
embedded store, or a service over HTTP) for a case's ``lookupResult`` and
wraps it with the case id, the query, ``retrievedAt`` and the generator block
(backend, embedder fingerprint, pipeline version, kbScope, topK). With a
pinned ``retrieved_at`` and latencies left out (the default), the same
knowledge base gives byte-identical fixtures.

``fixture_changes`` says, for a reviewer, why a fixture moved: sources gained
or lost, rank moves, the selected attempt, fallback reasons, evidence status,
the rerank top source, and how many other values changed (via deepdiff).
``same_result`` is the equality the snapshot check uses: everything but
``retrievedAt`` and measured latencies.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from .models import GoldenCase

if TYPE_CHECKING:
    from .pipeline import Pipeline

__all__ = [
    "LookupSource",
    "PipelineSource",
    "fixture_changes",
    "same_result",
    "snapshot_case",
    "without_latencies",
    "without_volatile",
]


class LookupSource(Protocol):
    """Where snapshots come from: anything that answers a lookup with a lookupResult."""

    def generator(self) -> dict[str, Any]:
        """``backend``, ``embedder`` (fingerprint or None) and ``pipelineVersion``."""
        ...

    def lookup(self, query: str, *, kb_scope: str | None, top_k: int) -> dict[str, Any]:
        """The ``lookupResult`` of ``query`` inside ``kb_scope``, at most ``top_k`` blocks."""
        ...


class PipelineSource:
    """The in-process lookup pipeline as a ``LookupSource``."""

    def __init__(
        self, pipeline: Pipeline, *, method: str | None = None, record_latency: bool = False
    ):
        self.pipeline = pipeline
        self.method = method
        self.record_latency = record_latency

    def generator(self) -> dict[str, Any]:
        from .pipeline import PIPELINE_VERSION

        return {
            "backend": self.pipeline.kb.backend,
            "embedder": self.pipeline.embedder.fingerprint.to_json(),
            "pipelineVersion": PIPELINE_VERSION,
        }

    def lookup(self, query: str, *, kb_scope: str | None, top_k: int) -> dict[str, Any]:
        return self.pipeline.lookup(
            query,
            kb_scope=kb_scope,
            top_k=top_k,
            method=self.method,
            record_latency=self.record_latency,
        )


def snapshot_case(
    source: LookupSource | Pipeline,
    case: GoldenCase,
    *,
    retrieved_at: str,
    method: str | None = None,
    record_latency: bool = False,
    kb_scope: str | None = None,
    generator: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The fixture of ``case``: its lookup through ``source``, with the generator block.

    ``kb_scope`` overrides the case's scope; ``generator`` saves asking the
    source for its generator fields once per case. ``method`` and
    ``record_latency`` apply when ``source`` is a bare ``Pipeline``.
    """
    if not hasattr(source, "generator"):
        source = PipelineSource(source, method=method, record_latency=record_latency)
    scope = case.kb_scope if kb_scope is None else kb_scope
    result = source.lookup(case.query, kb_scope=scope, top_k=case.top_k)
    fields = dict(generator) if generator is not None else source.generator()
    return {
        "schemaVersion": 1,
        "caseId": case.id,
        "query": case.query,
        "retrievedAt": retrieved_at,
        "generator": {**fields, "kbScope": scope, "topK": case.top_k},
        "lookupResult": result,
    }


def without_volatile(fixture: Mapping[str, Any]) -> dict[str, Any]:
    """``fixture`` without ``retrievedAt`` and with every ``latencyMs`` set to None."""
    return without_latencies({k: v for k, v in fixture.items() if k != "retrievedAt"})


def without_latencies(fixture: Mapping[str, Any]) -> dict[str, Any]:
    """``fixture`` with every attempt's ``latencyMs`` set to None (a copy)."""
    out = dict(fixture)
    result = out.get("lookupResult")
    trace = result.get("retrievalTrace") if isinstance(result, dict) else None
    attempts = trace.get("attempts") if isinstance(trace, dict) else None
    if isinstance(attempts, list):
        result = dict(result)  # type: ignore[arg-type]
        result["retrievalTrace"] = {
            **trace,  # type: ignore[dict-item]
            "attempts": [
                {**a, "latencyMs": None} if isinstance(a, dict) and "latencyMs" in a else a
                for a in attempts
            ],
        }
        out["lookupResult"] = result
    return out


def same_result(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Whether two fixtures record the same retrieval (timestamps and latencies aside)."""
    return without_volatile(old) == without_volatile(new)


def _lookup(fixture: Mapping[str, Any]) -> dict[str, Any]:
    result = fixture.get("lookupResult")
    return result if isinstance(result, dict) else {}


def _first_ranks(fixture: Mapping[str, Any]) -> dict[str, int]:
    ranks: dict[str, int] = {}
    blocks = _lookup(fixture).get("evidenceBlocks")
    for position, block in enumerate(blocks if isinstance(blocks, list) else [], 1):
        if isinstance(block, dict) and isinstance(block.get("source"), str):
            rank = block.get("rank")
            ranks.setdefault(block["source"], rank if isinstance(rank, int) else position)
    return ranks


def _trace(fixture: Mapping[str, Any], key: str) -> Any:
    trace = _lookup(fixture).get("retrievalTrace")
    return trace.get(key) if isinstance(trace, dict) else None


def _rerank_top(fixture: Mapping[str, Any]) -> str | None:
    rerank = _lookup(fixture).get("rerankTrace")
    after = rerank.get("after") if isinstance(rerank, dict) else None
    if isinstance(after, list) and after and isinstance(after[0], dict):
        top = after[0].get("source")
        return top if isinstance(top, str) else None
    return None


#: deepdiff paths (inside a lookupResult) that ``fixture_changes`` names itself.
_NAMED = (
    r"\['latencyMs'\]",
    r"root\['retrievalTrace'\]\['(selectedAttempt|fallbackReasons|evidenceStatus)'\]",
)


def fixture_changes(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> list[str]:
    """Why ``new`` differs from ``old``, one short phrase per kind of change.

    An empty list means the retrieval is the same (``same_result``). ``None``
    for ``old`` is a new fixture.
    """
    if old is None:
        return ["new fixture"]
    if same_result(old, new):
        return []
    out: list[str] = []
    before, after = _first_ranks(old), _first_ranks(new)
    gained = [s for s in after if s not in before]
    lost = [s for s in before if s not in after]
    if gained:
        out.append("gained " + ", ".join(gained))
    if lost:
        out.append("lost " + ", ".join(lost))
    moves = [f"{s} {before[s]}->{after[s]}" for s in after if s in before and before[s] != after[s]]
    if moves:
        out.append("moved " + ", ".join(moves))
    for key, label in (
        ("selectedAttempt", "selected attempt"),
        ("fallbackReasons", "fallback reasons"),
        ("evidenceStatus", "evidence status"),
    ):
        a, b = _trace(old, key), _trace(new, key)
        if a != b:
            out.append(f"{label} {_show(a)} -> {_show(b)}")
    top_a, top_b = _rerank_top(old), _rerank_top(new)
    if top_a != top_b:
        out.append(f"rerank top {top_a} -> {top_b}")
    if old.get("generator") != new.get("generator"):
        out.append("generator changed")
    other = _other_changes(old, new)
    if other:
        out.append(other)
    return out or ["changed"]


def _show(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(map(str, value)) + "]"
    return str(value)


def _other_changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> str | None:
    """``N other values changed (rerank trace 40, ...)`` from a deepdiff of the lookupResults."""
    from deepdiff import DeepDiff

    diff = DeepDiff(
        _lookup(old),
        _lookup(new),
        exclude_regex_paths=list(_NAMED),
        significant_digits=6,
        number_format_notation="f",
        view="tree",
    )
    kinds: dict[str, int] = {}
    total = 0
    for items in diff.values():
        for item in items:
            total += 1
            path = item.path(output_format="list")
            kinds[_kind(path)] = kinds.get(_kind(path), 0) + 1
    if total == 0:
        return None
    named = ", ".join(f"{k} {kinds[k]}" for k in sorted(kinds, key=lambda k: (-kinds[k], k)))
    return f"{total} other value{'s' if total != 1 else ''} changed ({named})"


_SECTIONS = {
    "evidenceBlocks": "evidence blocks",
    "contextPack": "context pack",
    "retrievalTrace": "retrieval trace",
    "rerankTrace": "rerank trace",
}


def _kind(path: list[Any]) -> str:
    """Which part of the lookupResult a deepdiff path is in."""
    first = path[0] if path else None
    return _SECTIONS.get(first, str(first)) if isinstance(first, str) else "lookupResult"

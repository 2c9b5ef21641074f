"""Snapshots: one golden case's live lookup as a fixture (``fixtures/{caseId}.json``).

``snapshot_case`` asks a ``LookupSource`` (the in-process pipeline over an
embedded store, or a service over HTTP) for a case's ``lookupResult`` and
wraps it with the case id, the query, ``retrievedAt`` and the generator block
(backend, embedder fingerprint, pipeline version, kbScope, topK). With a
pinned ``retrieved_at`` and latencies left out (the default), the same
knowledge base gives byte-identical fixtures.

The generator block also records the method and ``settings``: every setting
that can change the lookupResult (candidate depth, score floors, fusion
profile, reranker, segmenter, analyzer, the score grid and vector encoding), so
``snapshot --check`` can say which setting a fixture was written with.
Comparing fixtures is ``ragsnap.snapshot.fixturediff``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from ..models import GoldenCase

if TYPE_CHECKING:
    from ..kb.pipeline import Pipeline

__all__ = [
    "LookupSource",
    "PipelineSource",
    "snapshot_case",
    "without_latencies",
]


class LookupSource(Protocol):
    """Where snapshots come from: anything that answers a lookup with a lookupResult."""

    def generator(self) -> dict[str, Any]:
        """``backend``, ``embedder`` (fingerprint or None), ``pipelineVersion``, and
        where known ``method`` and ``settings`` (see ``Pipeline.describe``)."""
        ...

    def lookup(self, query: str, *, kb_scope: str | None, top_k: int) -> dict[str, Any]:
        """The ``lookupResult`` of ``query`` inside ``kb_scope``, at most ``top_k`` blocks."""
        ...

    def corpus(self) -> tuple[dict[str, tuple[str, str | None]] | None, str | None]:
        """What the lookups searched, for the fixture manifest: source -> (index hash,
        the file it was seeded from) of every stored document (None for a service), and
        a service's corpus revision."""
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
        from ..kb.pipeline import PIPELINE_VERSION

        method = self.method or self.pipeline.settings.method
        return {
            "backend": self.pipeline.kb.backend,
            "method": method,
            "embedder": self.pipeline.embedder.fingerprint.to_json(),
            "pipelineVersion": PIPELINE_VERSION,
            "settings": self.pipeline.describe(method),
        }

    def lookup(self, query: str, *, kb_scope: str | None, top_k: int) -> dict[str, Any]:
        return self.pipeline.lookup(
            query,
            kb_scope=kb_scope,
            top_k=top_k,
            method=self.method,
            record_latency=self.record_latency,
        )

    def corpus(self) -> tuple[dict[str, tuple[str, str | None]] | None, str | None]:
        documents = self.pipeline.kb.documents()
        return {s: (info.index_hash, info.path) for s, info in sorted(documents.items())}, None


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

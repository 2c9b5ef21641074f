"""Snapshots: one golden case's live lookup as a fixture (``fixtures/{caseId}.json``).

``snapshot_case`` runs the lookup pipeline for a case and wraps its
``lookupResult`` with the case id, the query, ``retrievedAt`` and the
generator block (backend, embedder fingerprint, pipeline version, kbScope,
topK). With a pinned ``retrieved_at`` and latencies left out (the default),
the same knowledge base gives byte-identical fixtures.
"""

from __future__ import annotations

from typing import Any

from .models import GoldenCase
from .pipeline import PIPELINE_VERSION, Pipeline

__all__ = ["snapshot_case"]


def snapshot_case(
    pipeline: Pipeline,
    case: GoldenCase,
    *,
    retrieved_at: str,
    method: str | None = None,
    record_latency: bool = False,
) -> dict[str, Any]:
    """The fixture of ``case``: its lookup through ``pipeline``, with the generator block."""
    result = pipeline.lookup(
        case.query,
        kb_scope=case.kb_scope,
        top_k=case.top_k,
        method=method,
        record_latency=record_latency,
    )
    return {
        "schemaVersion": 1,
        "caseId": case.id,
        "query": case.query,
        "retrievedAt": retrieved_at,
        "generator": {
            "backend": pipeline.kb.backend,
            "embedder": pipeline.embedder.fingerprint.to_json(),
            "pipelineVersion": PIPELINE_VERSION,
            "kbScope": case.kb_scope,
            "topK": case.top_k,
        },
        "lookupResult": result,
    }

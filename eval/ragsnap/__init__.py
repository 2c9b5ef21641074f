"""ragsnap: a retrieval regression harness for RAG knowledge bases.

Snapshots of a retrieval service's lookups, scored offline against golden
cases, diffed against a committed baseline: did retrieval get worse, where,
and why? No LLM, no API key.

The public API is what ``__all__`` lists; the command line (``ragsnap``) is
built on exactly these pieces.
"""

from __future__ import annotations

__version__ = "0.1.0"

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .aggregates import Aggregate, aggregate, group
    from .backends import Filter, KnowledgeBase, WriteBatch
    from .backends.http import HttpMapping, HttpService
    from .backends.milvus import MilvusKnowledgeBase
    from .backends.sqlite import SqliteKnowledgeBase
    from .capture import LookupSource, PipelineSource, snapshot_case
    from .casemetrics import case_metrics, context_precision_recall
    from .corpus import Chunk, SeedDocument, chunk_document, load_seed_docs
    from .diff import Tolerances, diff_reports, render_diff_markdown
    from .embedders import (
        Embedder,
        Fingerprint,
        FrozenEmbedder,
        HashingEmbedder,
        OpenAIEmbedder,
        SentenceTransformerEmbedder,
        make_embedder,
    )
    from .errors import (
        BackendError,
        EmbedderError,
        InputError,
        MissingDependency,
        OutputError,
        RagsnapError,
        ServiceUnreachable,
        UsageError,
    )
    from .fixturediff import compare_fixtures, fixture_changes
    from .inputs import CaseSet, FixtureSet, load_cases, load_fixtures, load_report
    from .metrics import (
        Measure,
        Rankings,
        evaluate,
        parse_measure,
        parse_measures,
        rankings_from_dicts,
    )
    from .models import EvidenceBlock, Fixture, GoldenCase, Judgment, LookupResult
    from .pipeline import Pipeline
    from .report import build_report, render_markdown
    from .scoring import CaseResult, score_case
    from .seeding import SeedPlan, plan_seed, seed
    from .settings import ChunkSettings, FusionProfile, LookupSettings
    from .text import Tokenizer, get_tokenizer
    from .trec import rankings_from_trec, read_qrels, read_run, write_qrels, write_run

#: Public name -> the module that defines it. Imported on first use (PEP 562),
#: so ``import ragsnap`` and ``ragsnap --help`` stay cheap.
_EXPORTS = {
    "Aggregate": "aggregates",
    "aggregate": "aggregates",
    "group": "aggregates",
    "case_metrics": "casemetrics",
    "context_precision_recall": "casemetrics",
    "Measure": "metrics",
    "Rankings": "metrics",
    "evaluate": "metrics",
    "parse_measure": "metrics",
    "parse_measures": "metrics",
    "rankings_from_dicts": "metrics",
    "Judgment": "models",
    "read_qrels": "trec",
    "read_run": "trec",
    "rankings_from_trec": "trec",
    "write_qrels": "trec",
    "write_run": "trec",
    "Tolerances": "diff",
    "diff_reports": "diff",
    "render_diff_markdown": "diff",
    "InputError": "errors",
    "MissingDependency": "errors",
    "OutputError": "errors",
    "RagsnapError": "errors",
    "UsageError": "errors",
    "CaseSet": "inputs",
    "FixtureSet": "inputs",
    "load_cases": "inputs",
    "load_fixtures": "inputs",
    "load_report": "inputs",
    "EvidenceBlock": "models",
    "Fixture": "models",
    "GoldenCase": "models",
    "LookupResult": "models",
    "build_report": "report",
    "render_markdown": "report",
    "CaseResult": "scoring",
    "score_case": "scoring",
    "BackendError": "errors",
    "EmbedderError": "errors",
    "Chunk": "corpus",
    "ChunkSettings": "settings",
    "SeedDocument": "corpus",
    "chunk_document": "corpus",
    "load_seed_docs": "corpus",
    "Filter": "backends",
    "KnowledgeBase": "backends",
    "WriteBatch": "backends",
    "SqliteKnowledgeBase": "backends.sqlite",
    "Embedder": "embedders",
    "Fingerprint": "embedders",
    "HashingEmbedder": "embedders",
    "FrozenEmbedder": "embedders",
    "OpenAIEmbedder": "embedders",
    "SentenceTransformerEmbedder": "embedders",
    "make_embedder": "embedders",
    "SeedPlan": "seeding",
    "plan_seed": "seeding",
    "seed": "seeding",
    "LookupSettings": "settings",
    "Pipeline": "pipeline",
    "FusionProfile": "settings",
    "Tokenizer": "text",
    "get_tokenizer": "text",
    "LookupSource": "capture",
    "PipelineSource": "capture",
    "snapshot_case": "capture",
    "fixture_changes": "fixturediff",
    "compare_fixtures": "fixturediff",
    "HttpService": "backends.http",
    "HttpMapping": "backends.http",
    "MilvusKnowledgeBase": "backends.milvus",
    "ServiceUnreachable": "errors",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'ragsnap' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


__all__ = [
    "Aggregate",
    "BackendError",
    "CaseResult",
    "CaseSet",
    "Chunk",
    "ChunkSettings",
    "Embedder",
    "EmbedderError",
    "EvidenceBlock",
    "Filter",
    "Fingerprint",
    "Fixture",
    "FixtureSet",
    "FrozenEmbedder",
    "FusionProfile",
    "GoldenCase",
    "HashingEmbedder",
    "HttpMapping",
    "HttpService",
    "InputError",
    "Judgment",
    "KnowledgeBase",
    "LookupResult",
    "LookupSettings",
    "LookupSource",
    "Measure",
    "MilvusKnowledgeBase",
    "MissingDependency",
    "OpenAIEmbedder",
    "OutputError",
    "Pipeline",
    "PipelineSource",
    "RagsnapError",
    "Rankings",
    "SeedDocument",
    "SeedPlan",
    "SentenceTransformerEmbedder",
    "ServiceUnreachable",
    "SqliteKnowledgeBase",
    "Tokenizer",
    "Tolerances",
    "UsageError",
    "WriteBatch",
    "__version__",
    "aggregate",
    "build_report",
    "case_metrics",
    "chunk_document",
    "compare_fixtures",
    "context_precision_recall",
    "diff_reports",
    "evaluate",
    "fixture_changes",
    "get_tokenizer",
    "group",
    "load_cases",
    "load_fixtures",
    "load_report",
    "load_seed_docs",
    "make_embedder",
    "parse_measure",
    "parse_measures",
    "plan_seed",
    "rankings_from_dicts",
    "rankings_from_trec",
    "read_qrels",
    "read_run",
    "render_diff_markdown",
    "render_markdown",
    "score_case",
    "seed",
    "snapshot_case",
    "write_qrels",
    "write_run",
]

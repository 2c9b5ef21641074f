"""ragsnap: a retrieval regression harness for RAG knowledge bases.

Snapshots of a retrieval service's lookups, scored offline against golden
cases, diffed against a committed baseline: did retrieval get worse, where,
and why? No LLM, no API key.

The public API is what ``__all__`` lists; the command line (``ragsnap``) is
built on exactly these pieces. The subpackages follow the flow, lowest layer
first, and a module imports only from its own layer or a lower one::

    errors, models, settings   the error hierarchy, frozen dataclasses, pipeline settings
    io                         reading, schemas, the atomic writer, tables, locks, HTTP client
    ir, kb                     IR measures and TREC files; the knowledge base and its lookup
    snapshot, scoring          lookups captured as fixtures; fixtures scored, reports diffed
    importers, live            other tools' data as ragsnap files; the HTTP service, live-check
    config                     ragsnap.yaml
    commands, cli              the command line
    pytest_plugin              `pytest --ragsnap`: the golden cases as pytest tests
"""

from __future__ import annotations

__version__ = "0.1.0"

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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
    from .io.inputs import CaseSet, FixtureSet, load_cases, load_fixtures, load_report
    from .ir.metrics import (
        Measure,
        Rankings,
        evaluate,
        parse_measure,
        parse_measures,
        rankings_from_dicts,
    )
    from .ir.trec import rankings_from_trec, read_qrels, read_run, write_qrels, write_run
    from .kb.backends import Filter, KnowledgeBase, WriteBatch
    from .kb.backends.http import HttpMapping, HttpService
    from .kb.backends.milvus import MilvusKnowledgeBase
    from .kb.backends.sqlite import SqliteKnowledgeBase
    from .kb.corpus import Chunk, SeedDocument, chunk_document, load_seed_docs
    from .kb.embedders import (
        AliasEmbedder,
        Embedder,
        Fingerprint,
        FrozenEmbedder,
        HashingEmbedder,
        OpenAIEmbedder,
        SentenceTransformerEmbedder,
        make_embedder,
    )
    from .kb.pipeline import Pipeline
    from .kb.seeding import SeedPlan, plan_seed, seed
    from .kb.text import Tokenizer, get_tokenizer
    from .models import EvidenceBlock, Fixture, GoldenCase, Judgment, LookupResult
    from .scoring.aggregates import Aggregate, aggregate, group
    from .scoring.casemetrics import case_metrics, context_precision_recall
    from .scoring.diff import Tolerances, diff_reports
    from .scoring.hits import CaseResult, score_case
    from .scoring.report import build_report, render_markdown
    from .scoring.review import render_diff_markdown
    from .settings import ChunkSettings, FusionProfile, LookupSettings, Method
    from .snapshot.capture import LookupSource, PipelineSource, snapshot_case
    from .snapshot.fixturediff import compare_fixtures, fixture_changes

#: Public name -> the module that defines it. Imported on first use (PEP 562),
#: so ``import ragsnap`` and ``ragsnap --help`` stay cheap.
_EXPORTS = {
    "Aggregate": "scoring.aggregates",
    "aggregate": "scoring.aggregates",
    "group": "scoring.aggregates",
    "case_metrics": "scoring.casemetrics",
    "context_precision_recall": "scoring.casemetrics",
    "Measure": "ir.metrics",
    "Rankings": "ir.metrics",
    "evaluate": "ir.metrics",
    "parse_measure": "ir.metrics",
    "parse_measures": "ir.metrics",
    "rankings_from_dicts": "ir.metrics",
    "Judgment": "models",
    "read_qrels": "ir.trec",
    "read_run": "ir.trec",
    "rankings_from_trec": "ir.trec",
    "write_qrels": "ir.trec",
    "write_run": "ir.trec",
    "Tolerances": "scoring.diff",
    "diff_reports": "scoring.diff",
    "render_diff_markdown": "scoring.review",
    "InputError": "errors",
    "MissingDependency": "errors",
    "OutputError": "errors",
    "RagsnapError": "errors",
    "UsageError": "errors",
    "CaseSet": "io.inputs",
    "FixtureSet": "io.inputs",
    "load_cases": "io.inputs",
    "load_fixtures": "io.inputs",
    "load_report": "io.inputs",
    "EvidenceBlock": "models",
    "Fixture": "models",
    "GoldenCase": "models",
    "LookupResult": "models",
    "build_report": "scoring.report",
    "render_markdown": "scoring.report",
    "CaseResult": "scoring.hits",
    "score_case": "scoring.hits",
    "BackendError": "errors",
    "EmbedderError": "errors",
    "Chunk": "kb.corpus",
    "ChunkSettings": "settings",
    "SeedDocument": "kb.corpus",
    "chunk_document": "kb.corpus",
    "load_seed_docs": "kb.corpus",
    "Filter": "kb.backends",
    "KnowledgeBase": "kb.backends",
    "WriteBatch": "kb.backends",
    "SqliteKnowledgeBase": "kb.backends.sqlite",
    "Embedder": "kb.embedders",
    "Fingerprint": "kb.embedders",
    "HashingEmbedder": "kb.embedders",
    "FrozenEmbedder": "kb.embedders",
    "OpenAIEmbedder": "kb.embedders",
    "SentenceTransformerEmbedder": "kb.embedders",
    "make_embedder": "kb.embedders",
    "SeedPlan": "kb.seeding",
    "plan_seed": "kb.seeding",
    "seed": "kb.seeding",
    "LookupSettings": "settings",
    "Method": "settings",
    "AliasEmbedder": "kb.embedders",
    "Pipeline": "kb.pipeline",
    "FusionProfile": "settings",
    "Tokenizer": "kb.text",
    "get_tokenizer": "kb.text",
    "LookupSource": "snapshot.capture",
    "PipelineSource": "snapshot.capture",
    "snapshot_case": "snapshot.capture",
    "fixture_changes": "snapshot.fixturediff",
    "compare_fixtures": "snapshot.fixturediff",
    "HttpService": "kb.backends.http",
    "HttpMapping": "kb.backends.http",
    "MilvusKnowledgeBase": "kb.backends.milvus",
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
    "AliasEmbedder",
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
    "Method",
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

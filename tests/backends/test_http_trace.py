"""``http.lookup.trace``: a service's own trace field names, mapped into the fixture's.

A scripted service on loopback (``Service`` of test_http_backend) answers its traces
under Spring-style names; the mapping comes from a real ragsnap.yaml read by
``load_config``.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import make_fixture
from ragsnap.config import load_config
from ragsnap.errors import BackendError
from ragsnap.io.schema import validate
from ragsnap.kb.backends.http import HttpService

from .test_http_backend import Service, fixture_of

CONFIG = """\
http:
  baseUrl: {url}
  retries: 0
  health: null
  pipelineVersion: spring-rag/3
  envelope: {{}}
  lookup:
    path: /rag/lookup
    result: ""
    evidenceBlocks: evidence
    block: {{chunkId: id, source: docSource, text: content}}
    contextPack: null
    retrievalTrace: diagnostics.retrieval
    rerankTrace: diagnostics.rerank
    trace:
{trace}
"""

TRACE = """\
      retrievalTrace:
        selectedAttempt: strategy
        fallbackReasons: fallbacks
        evidenceStatus: evidenceState
        l0Hints: hints
        attempts: strategies
        fusion: fusionInfo
      l0Hints: {category: cat, breadcrumbPrefix: path.prefix}
      attempt: {name: label, filter: criteria, method: engine, hitCount: hits,
                topScore: bestScore, latencyMs: tookMs}
      rerankTrace: {applied: enabled, reranker: model, before: candidates, after: ranked}
      rankedItem: {chunkId: id, source: docSource, score: similarity, confidence: conf,
                   lexicalRank: bm25Rank, vectorRank: null}
"""


def own_traces() -> dict[str, Any]:
    """The service's traces under its own names (and a few fields of its own)."""
    first = {"id": "pool#1", "docSource": "mysql-pool", "similarity": 0.61, "conf": 0.4}
    second = {"id": "redis#0", "docSource": "redis-pool", "similarity": 0.58, "conf": None}
    for item, lexical, vector in ((first, 2, 1), (second, 1, None)):
        item.update(bm25Rank=lexical, annRank=vector)
    return {
        "retrieval": {
            "strategy": "unfiltered",
            "fallbacks": ["filtered-weak"],
            "evidenceState": "partial",
            "hints": {"cat": "database", "path": {"prefix": "Database > MySQL"}, "x": 1},
            "strategies": [
                {
                    "label": "filtered",
                    "criteria": {"kbScope": "rag-eval", "category": "database"},
                    "engine": "bm25",
                    "hits": 1,
                    "bestScore": 0.12,
                    "tookMs": 3.5,
                },
                {
                    "label": "unfiltered",
                    "criteria": {"kbScope": "rag-eval"},
                    "engine": "bm25",
                    "hits": 2,
                    "bestScore": 0.61,
                    "tookMs": None,
                    "shard": 3,  # the service's own: not recorded
                },
            ],
            "fusionInfo": {"kind": "rrf", "k": 60},
            "requestId": "r-1",  # the service's own: not recorded
        },
        "rerank": {
            "enabled": True,
            "model": "bge-reranker-v2",
            "candidates": [copy.deepcopy(first), copy.deepcopy(second)],
            "ranked": [copy.deepcopy(second), copy.deepcopy(first)],
        },
    }


def answer(traces: dict[str, Any] | None = None) -> dict[str, Any]:
    evidence = [{"id": "pool#1", "docSource": "mysql-pool", "content": "maximumPoolSize 20"}]
    data = {"evidence": evidence, "diagnostics": own_traces() if traces is None else traces}
    return {"code": 0, "message": "ok", "data": data}


@pytest.fixture
def service() -> Iterator[Service]:
    with Service() as srv:
        yield srv


def mapped(service: Service, tmp_path: Path, trace: str = TRACE) -> HttpService:
    path = tmp_path / "ragsnap.yaml"
    path.write_text(CONFIG.format(url=service.url, trace=trace), encoding="utf-8")
    return HttpService(load_config(path).http)


def lookup(service: Service, tmp_path: Path, reply: Any, trace: str = TRACE) -> dict[str, Any]:
    service.on("POST", "/rag/lookup", (200, reply))
    with mapped(service, tmp_path, trace) as http:
        return http.lookup("pool size", kb_scope="rag-eval", top_k=5)


def test_own_trace_names_are_recorded_under_the_fixtures(service: Service, tmp_path: Path) -> None:
    result = lookup(service, tmp_path, answer())
    assert result["retrievalTrace"] == {
        "selectedAttempt": "unfiltered",
        "fallbackReasons": ["filtered-weak"],
        "evidenceStatus": "partial",
        "l0Hints": {"category": "database", "breadcrumbPrefix": "Database > MySQL"},
        "attempts": [
            {
                "name": "filtered",
                "filter": {"kbScope": "rag-eval", "category": "database"},
                "method": "bm25",
                "hitCount": 1,
                "topScore": 0.12,
                "latencyMs": 3.5,
            },
            {
                "name": "unfiltered",
                "filter": {"kbScope": "rag-eval"},
                "method": "bm25",
                "hitCount": 2,
                "topScore": 0.61,
                "latencyMs": None,  # null: recorded as null
            },
        ],
        "fusion": {"kind": "rrf", "k": 60},  # values as they are
    }
    first = {
        "chunkId": "pool#1",
        "source": "mysql-pool",
        "score": 0.61,
        "confidence": 0.4,
        "lexicalRank": 2,
    }  # vectorRank mapped to null: not reported, left out although the service sends annRank
    second = {
        "chunkId": "redis#0",
        "source": "redis-pool",
        "score": 0.58,
        "confidence": None,
        "lexicalRank": 1,
    }
    assert result["rerankTrace"] == {
        "applied": True,
        "reranker": "bge-reranker-v2",
        "before": [first, second],
        "after": [second, first],
    }
    generator = {"backend": "http", "embedder": None, "pipelineVersion": "spring-rag/3"}
    validate(fixture_of(result, generator, 5), "fixture", "x", "fixture")


def test_fields_mapped_to_null_are_left_out(service: Service, tmp_path: Path) -> None:
    trace = """\
      retrievalTrace: {selectedAttempt: strategy, fallbackReasons: fallbacks,
                       evidenceStatus: evidenceState, attempts: strategies,
                       l0Hints: null, fusion: null}
      attempt: {name: label, hitCount: hits, filter: null, method: null, topScore: null,
                latencyMs: null}
      rerankTrace: {applied: enabled, reranker: null, before: candidates, after: ranked}
      rankedItem: {chunkId: id, source: docSource, score: null}
"""
    result = lookup(service, tmp_path, answer(), trace)
    retrieval = result["retrievalTrace"]
    assert set(retrieval) == {"selectedAttempt", "fallbackReasons", "evidenceStatus", "attempts"}
    assert retrieval["attempts"] == [
        {"name": "filtered", "hitCount": 1},
        {"name": "unfiltered", "hitCount": 2},
    ]
    assert set(result["rerankTrace"]) == {"applied", "before", "after"}
    assert result["rerankTrace"]["before"] == [
        {"chunkId": "pool#1", "source": "mysql-pool"},
        {"chunkId": "redis#0", "source": "redis-pool"},
    ]


def test_nulls_the_fixture_refuses_are_left_out(service: Service, tmp_path: Path) -> None:
    traces = own_traces()
    traces["retrieval"].update(hints=None, fusionInfo=None)
    traces["retrieval"]["strategies"][0].update(criteria=None, engine=None)
    traces["rerank"]["model"] = None
    result = lookup(service, tmp_path, answer(traces))
    retrieval = result["retrievalTrace"]
    assert "l0Hints" not in retrieval and "fusion" not in retrieval
    assert "filter" not in retrieval["attempts"][0] and "method" not in retrieval["attempts"][0]
    assert result["rerankTrace"]["reranker"] is None  # a null the fixture takes: kept
    generator = {"backend": "http", "embedder": None, "pipelineVersion": "spring-rag/3"}
    validate(fixture_of(result, generator, 5), "fixture", "x", "fixture")


def test_a_partial_mapping_keeps_ragsnaps_names_for_the_rest(
    service: Service, tmp_path: Path
) -> None:
    """Only ``selectedAttempt`` and an attempt's ``hitCount`` are renamed; the other
    fields are read under ragsnap's names, optional ones copied when present."""
    traces = {
        "retrieval": {
            "strategy": "filtered",
            "attempts": [{"name": "filtered", "hits": 3, "skipped": False, "extra": 1}],
            "fallbackReasons": [],
            "evidenceStatus": "sufficient",
        },
        "rerank": {"applied": False, "before": [], "after": []},
    }
    trace = "      retrievalTrace: {selectedAttempt: strategy}\n      attempt: {hitCount: hits}\n"
    result = lookup(service, tmp_path, answer(traces), trace)
    assert result["retrievalTrace"] == {
        "selectedAttempt": "filtered",
        "attempts": [{"name": "filtered", "hitCount": 3, "skipped": False}],
        "fallbackReasons": [],
        "evidenceStatus": "sufficient",
    }
    assert result["rerankTrace"] == {"applied": False, "before": [], "after": []}


def test_an_identity_mapping_records_ragsnaps_own_traces_unchanged(
    service: Service, tmp_path: Path
) -> None:
    """``trace: {}`` over an answer in ragsnap's names gives what no mapping gives."""
    result = make_fixture(
        "c1",
        [{"rank": 1, "chunkId": "a#0", "source": "a", "text": "x", "score": 0.5}],
        fallback=["filtered-weak"],
        rerank_top="b",
    )["lookupResult"]
    result["retrievalTrace"]["l0Hints"] = {"category": "db", "breadcrumbPrefix": "Database"}
    result["retrievalTrace"]["fusion"] = {"kind": "rrf", "weights": [1, 1]}
    result["retrievalTrace"]["attempts"] = [
        {
            "name": "filtered",
            "hitCount": 0,
            "skipped": True,
            "reason": "no L0 hint",
            "topScore": None,
        }
    ]
    result["rerankTrace"]["after"][0].update(confidence=0.9, lexicalRank=4, vectorRank=None)
    path = tmp_path / "ragsnap.yaml"
    service.on("POST", "/api/knowledge/lookup", (200, {"lookupResult": result}))
    results = []
    for trace in ("", "  lookup: {trace: {}}\n"):
        path.write_text(f"http:\n  baseUrl: {service.url}\n  health: null\n{trace}", "utf-8")
        mapping = load_config(path).http
        assert (mapping.trace is None) == (trace == "")
        with HttpService(mapping) as http:
            got = http.lookup("q", kb_scope=None, top_k=5)
        results.append(got)
        assert got["retrievalTrace"] == result["retrievalTrace"]
        assert got["rerankTrace"] == result["rerankTrace"]
    assert json.dumps(results[0], sort_keys=True) == json.dumps(results[1], sort_keys=True)


def _drop(path: tuple[Any, ...]) -> dict[str, Any]:
    reply = answer()
    target: Any = reply["data"]["diagnostics"]
    for step in path[:-1]:
        target = target[step]
    del target[path[-1]]
    return reply


@pytest.mark.parametrize(
    ("path", "dotted", "key"),
    [
        (
            ("retrieval", "strategy"),
            "diagnostics.retrieval.strategy",
            "http.lookup.trace.retrievalTrace.selectedAttempt",
        ),
        (
            ("retrieval", "strategies", 1, "hits"),
            "diagnostics.retrieval.strategies[1].hits",
            "http.lookup.trace.attempt.hitCount",
        ),
        (  # optional, but named by the config: must be answered
            ("retrieval", "strategies", 0, "tookMs"),
            "diagnostics.retrieval.strategies[0].tookMs",
            "http.lookup.trace.attempt.latencyMs",
        ),
        (
            ("retrieval", "hints", "path"),
            "diagnostics.retrieval.hints.path.prefix",
            "http.lookup.trace.l0Hints.breadcrumbPrefix",
        ),
        (
            ("rerank", "ranked", 0, "docSource"),
            "diagnostics.rerank.ranked[0].docSource",
            "http.lookup.trace.rankedItem.source",
        ),
        (
            ("rerank", "enabled"),
            "diagnostics.rerank.enabled",
            "http.lookup.trace.rerankTrace.applied",
        ),
    ],
)
def test_a_mapped_field_the_answer_lacks_names_endpoint_field_and_key(
    service: Service, tmp_path: Path, path: tuple[Any, ...], dotted: str, key: str
) -> None:
    with pytest.raises(BackendError) as info:
        lookup(service, tmp_path, _drop(path))
    message = str(info.value)
    assert message.startswith(f"POST {service.url}/rag/lookup: `data.{dotted}` is missing (")
    assert f"mapped by {key} in {tmp_path / 'ragsnap.yaml'}" in message
    assert message.endswith("map it to the service's field") or message.endswith(
        "or to null when the service does not report it"
    )


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            lambda t: t["retrieval"].update(strategies={"label": "x"}),
            "`data.diagnostics.retrieval.strategies` is an object, not a list; point "
            "http.lookup.trace.retrievalTrace.attempts",
        ),
        (
            lambda t: t["retrieval"]["strategies"].append("unfiltered"),
            "`data.diagnostics.retrieval.strategies[2]` is str, not an object (an attempt); "
            "check http.lookup.trace.retrievalTrace.attempts",
        ),
        (
            lambda t: t.update(rerank=[]),
            "`data.diagnostics.rerank` is a list, not an object (the rerank trace); check "
            "http.lookup.rerankTrace",
        ),
        (
            lambda t: t["retrieval"].update(hints="database"),
            "`data.diagnostics.retrieval.hints` is str, not an object (the L0 hint); check "
            "http.lookup.trace.retrievalTrace.l0Hints",
        ),
    ],
)
def test_a_trace_of_the_wrong_shape_is_a_clear_error(
    service: Service, tmp_path: Path, change: Any, expected: str
) -> None:
    traces = own_traces()
    change(traces)
    with pytest.raises(BackendError) as info:
        lookup(service, tmp_path, answer(traces))
    assert expected in str(info.value)

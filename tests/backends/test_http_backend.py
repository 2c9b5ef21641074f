"""The ``http`` backend (``HttpService`` read through an ``HttpMapping``) against real servers.

Scripted services run on loopback (``LoopbackServer``); the default mapping is
also checked against a real ``ragsnap serve``. Mappings come from real
ragsnap.yaml files read by ``load_config``.
"""

from __future__ import annotations

import json
import threading
import traceback
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import requests

from conftest import REPO, Served, make_fixture, run_cli
from ragsnap.config import load_config
from ragsnap.errors import BackendError, InputError, UsageError
from ragsnap.io.httpclient import HttpClient
from ragsnap.io.schema import validate
from ragsnap.kb.backends.http import HttpMapping, HttpService
from ragsnap.models import Fixture, GoldenCase
from ragsnap.scoring.hits import score_case

from .conftest import LoopbackServer, send

TOKEN = "sk-http-backend-91c2e0aa-SECRET"
TOKEN_ENV = "RAGSNAP_TEST_SPRING_TOKEN"


@dataclass
class Seen:
    """One request the service received."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any


#: an answer: (status, body) or (status, body, headers); a dict or list body is sent as JSON
Answer = tuple[Any, ...]
Reply = Answer | Callable[[Seen], Answer]


class Service(LoopbackServer):
    """A loopback service the test scripts per (method, path).

    ``on(method, path, *replies)`` serves the replies in turn, the last one
    repeated; a reply may be a function of the request. Unknown routes are 404.
    """

    methods = ("GET", "POST", "DELETE")

    def __init__(self) -> None:
        self.routes: dict[tuple[str, str], list[Reply]] = {}
        self.seen: list[Seen] = []
        super().__init__()

    def on(self, method: str, path: str, *replies: Reply) -> None:
        self.routes[(method, path)] = list(replies)

    def handle(self, request: BaseHTTPRequestHandler) -> None:
        length = int(request.headers.get("Content-Length") or 0)
        raw = request.rfile.read(length) if length else b""
        parts = urlsplit(request.path)
        seen = Seen(
            request.command,
            parts.path,
            parse_qs(parts.query),
            dict(request.headers),
            json.loads(raw) if raw else None,
        )
        with self._lock:
            self.seen.append(seen)
            queue = self.routes.get((request.command, parts.path))
            reply = (queue.pop(0) if len(queue) > 1 else queue[0]) if queue else (404, {})
        answer = reply(seen) if callable(reply) else reply
        status, body, headers = (*answer, {}) if len(answer) == 2 else answer
        data = json.dumps(body).encode() if isinstance(body, (dict, list)) else body.encode()
        send(request, status, data, headers)

    def hits(self, method: str, path: str) -> list[Seen]:
        with self._lock:
            return [s for s in self.seen if (s.method, s.path) == (method, path)]


@pytest.fixture
def service() -> Iterator[Service]:
    with Service() as srv:
        yield srv


def fixture_of(result: dict[str, Any], generator: dict[str, Any], top_k: int) -> dict[str, Any]:
    """``result`` wrapped as a fixture, to validate it against the fixture schema."""
    return {
        "schemaVersion": 1,
        "caseId": "x",
        "query": "q",
        "retrievedAt": "2026-01-01T00:00:00Z",
        "generator": {**generator, "kbScope": None, "topK": top_k},
        "lookupResult": result,
    }


def without_latency(data: Any) -> Any:
    if isinstance(data, dict):
        return {k: None if k == "latencyMs" else without_latency(v) for k, v in data.items()}
    if isinstance(data, list):
        return [without_latency(v) for v in data]
    return data


# --- the default mapping: ragsnap serve's contract ----------------------------------------


def test_default_mapping_round_trip_against_a_scripted_service(service: Service) -> None:
    result = make_fixture(
        "c1",
        [
            {
                "rank": 1,
                "chunkId": "mysql-connection-pool#0",
                "docId": "doc-mysql",
                "source": "mysql-connection-pool",
                "title": "MySQL pool",
                "breadcrumb": "Database > MySQL",
                "text": "maximumPoolSize is 20",
                "score": 0.81,
                "scoreLabel": "high",
                "metadata": {"kbScope": "rag-eval", "bm25": 3.2},
            }
        ],
    )["lookupResult"]
    health = {
        "status": "ok",
        "pipelineVersion": "svc/7",
        "embedder": {"kind": "hashing", "model": "m", "revision": "1", "dimension": 8},
    }
    service.on("GET", "/api/health", (200, health))
    service.on("POST", "/api/knowledge/lookup", (200, {"lookupResult": result}))
    with HttpService(HttpMapping(), base_url=service.url) as http:
        assert http.generator() == {
            "backend": "http",
            "embedder": health["embedder"],
            "pipelineVersion": "svc/7",
        }
        assert http.lookup("pool size", kb_scope="rag-eval", top_k=3) == result
        assert http.lookup("pool size", kb_scope=None, top_k=5) == result
    first, second = service.hits("POST", "/api/knowledge/lookup")
    assert first.body == {"query": "pool size", "topK": 3, "kbScope": "rag-eval"}
    assert second.body == {"query": "pool size", "topK": 5}  # no scope: not sent
    assert len(service.hits("GET", "/api/health")) == 1  # fetched once


@pytest.fixture
def served(serve: Callable[..., Served], tmp_path: Path) -> Served:
    """``ragsnap serve`` over the repo's seed-docs/, in a knowledge base of this test."""
    kb = tmp_path / "kb.sqlite"
    run = run_cli("seed", "--kb", str(kb), "--seed-docs", str(REPO / "seed-docs"), cwd=tmp_path)
    assert run.code == 0, run.out + run.err
    return serve("--kb", str(kb), cwd=tmp_path)


@pytest.mark.slow
def test_default_mapping_against_ragsnap_serve(served: Served) -> None:
    url = served.base_url
    with HttpService(HttpMapping(), base_url=url + "/") as http:
        assert http.base_url == url
        generator = http.generator()
        health = requests.get(url + "/api/health", timeout=30).json()
        assert generator == {
            "backend": "http",
            "method": health["method"],
            "embedder": health["embedder"],
            "pipelineVersion": health["pipelineVersion"],
            "settings": health["settings"],
        }
        assert generator["settings"]["reranker"] == "heuristic-v2"

        query = "hikari maximum pool size"
        result = http.lookup(query, kb_scope="rag-eval", top_k=3)
        direct = requests.post(
            url + "/api/knowledge/lookup",
            json={"query": query, "kbScope": "rag-eval", "topK": 3},
            timeout=30,
        ).json()["lookupResult"]
        assert without_latency(result) == without_latency(direct)
        assert 1 <= len(result["evidenceBlocks"]) <= 3
        validate(fixture_of(result, generator, 3), "fixture", "x", "fixture")

        answer, items = http.similar("redis client pool", top_k=4, kb_scope=None)
        assert [i["rank"] for i in items] == [1, 2, 3, 4]
        assert [i["source"] for i in items] == [r["source"] for r in answer["results"]]
        assert items[0]["source"] == "redis-client-pooling"

        doc = "---\nsource: http-probe\nkb_scope: rag-eval\n---\nThe wombat ledger rotates hourly."
        assert http.upload("probe.md", doc)["status"] == "added"
        assert http.upload("probe.md", doc)["status"] == "unchanged"
        docs = http.documents()
        assert docs is not None and "http-probe" in {d["source"] for d in docs}
        found = http.lookup("wombat ledger rotates", kb_scope="rag-eval", top_k=5)
        assert found["evidenceBlocks"][0]["source"] == "http-probe"
        assert http.delete("http-probe")["removed"] is True
        assert http.delete("http-probe")["removed"] is False


# --- a Spring-shaped service, mapped by ragsnap.yaml ------------------------------------

SPRING_YAML = """\
http:
  baseUrl: {url}
  tokenEnv: {token_env}
  retries: 0
  pipelineVersion: spring-rag/2.3
  health: null
  lookup:
    path: /rag/v1/search
    request: {{query: question, topK: limit, kbScope: null}}
    result: data
    evidenceBlocks: evidence
    block:
      chunkId: id
      source: docSource
      text: content
      score: relevance
      title: meta.title
    contextPack: null
    retrievalTrace: null
    rerankTrace: null
  similar:
    path: /rag/v1/similar
    params: {{query: q, topK: size, kbScope: null}}
    results: data.hits
    item: {{source: docSource, text: content}}
  documents: {{list: null, upload: /rag/v1/docs, delete: /rag/v1/docs}}
"""


def spring_evidence() -> list[dict[str, Any]]:
    return [
        {
            "id": "e-17",
            "docSource": "mysql-connection-pool",
            "content": "HikariCP maximumPoolSize is 20 per pod.",
            "relevance": 0.83,
            "meta": {"title": "MySQL connection pool"},
        },
        {"id": "e-4", "docSource": "redis-client-pooling", "content": "Lettuce shares one."},
    ]


def spring(evidence: Any) -> dict[str, Any]:
    return {"code": 0, "message": "OK", "data": {"total": 2, "evidence": evidence}}


@pytest.fixture
def spring_config(service: Service, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A real ragsnap.yaml mapping the Spring-shaped ``service``."""
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    path = tmp_path / "ragsnap.yaml"
    path.write_text(SPRING_YAML.format(url=service.url, token_env=TOKEN_ENV), encoding="utf-8")
    return path


def spring_service(config: Path) -> HttpService:
    return HttpService(load_config(config).http)


def test_spring_service_mapped_by_ragsnap_yaml(service: Service, spring_config: Path) -> None:
    service.on("POST", "/rag/v1/search", (200, spring(spring_evidence())))
    with spring_service(spring_config) as http:
        assert http.mapping.source == str(spring_config)
        generator = http.generator()
        assert generator == {
            "backend": "http",
            "embedder": None,
            "pipelineVersion": "spring-rag/2.3",
        }
        result = http.lookup("hikari pool size", kb_scope="rag-eval", top_k=5)
    assert result["evidenceBlocks"] == [
        {
            "rank": 1,
            "chunkId": "e-17",
            "source": "mysql-connection-pool",
            "text": "HikariCP maximumPoolSize is 20 per pod.",
            "score": 0.83,
            "title": "MySQL connection pool",
        },
        {
            "rank": 2,  # no rank in the answer: its position
            "chunkId": "e-4",
            "source": "redis-client-pooling",
            "text": "Lettuce shares one.",
            "score": None,  # no relevance: null
        },
    ]
    assert list(result) == ["evidenceBlocks"]  # the traces mapped to null: not reported
    validate(fixture_of(result, generator, 5), "fixture", "x", "fixture")
    (seen,) = service.hits("POST", "/rag/v1/search")
    assert seen.body == {"question": "hikari pool size", "limit": 5}  # kbScope mapped to null
    assert seen.headers["Authorization"] == f"Bearer {TOKEN}"
    assert service.hits("GET", "/api/health") == []  # health: null


def test_a_trace_mapped_to_null_is_absent_and_its_expectations_not_applicable(
    service: Service, spring_config: Path
) -> None:
    service.on("POST", "/rag/v1/search", (200, spring(spring_evidence())))
    with spring_service(spring_config) as http:
        result = http.lookup("q", kb_scope=None, top_k=5)
        fixture = Fixture.from_json(fixture_of(result, http.generator(), 5))
    assert fixture.lookup.absent == ("retrievalTrace", "rerankTrace", "contextPack")
    case = GoldenCase.from_json(
        {
            "id": "c1",
            "query": "q",
            "language": "en",
            "category": "database",
            "split": "dev",
            "expectedSources": ["mysql-connection-pool"],
            "expectedEvidenceStatus": "sufficient",
            "expectedRerankTopSource": "mysql-connection-pool",
            "expectedContextSources": ["mysql-connection-pool"],
        },
        {},
    )
    scored = score_case(case, fixture)
    assert scored.passed and scored.hit_level == "strong"
    assert scored.not_applicable == (
        ("evidenceStatus", "retrievalTrace"),
        ("contextSources", "contextPack"),
        ("rerankTopSource", "rerankTrace"),
    )


def test_spring_similar_search_and_documents(service: Service, spring_config: Path) -> None:
    hits = [
        {"docSource": "kafka-consumer-lag", "content": "lag"},
        {"docSource": "b", "content": ""},
    ]
    service.on("GET", "/rag/v1/similar", (200, {"data": {"hits": hits}}))
    service.on("POST", "/rag/v1/docs", (200, {"source": "n", "status": "added", "chunks": 1}))
    service.on("DELETE", "/rag/v1/docs", (200, {"source": "n", "removed": True}))
    with spring_service(spring_config) as http:
        _, items = http.similar("consumer lag", top_k=2, kb_scope="rag-eval")
        assert items == [
            {"rank": 1, "source": "kafka-consumer-lag", "text": "lag"},
            {"rank": 2, "source": "b", "text": ""},
        ]
        assert http.documents() is None  # documents.list: null
        assert http.upload("n.md", "---\nsource: n\n---\nx")["status"] == "added"
        assert http.delete("n")["removed"] is True
    (get,) = service.hits("GET", "/rag/v1/similar")
    assert get.query == {"q": ["consumer lag"], "size": ["2"]}
    (post,) = service.hits("POST", "/rag/v1/docs")
    assert post.body == {"name": "n.md", "content": "---\nsource: n\n---\nx"}
    (delete,) = service.hits("DELETE", "/rag/v1/docs")
    assert delete.query == {"source": ["n"]}
    assert {s.headers["Authorization"] for s in service.seen} == {f"Bearer {TOKEN}"}


# --- answers that do not fit the mapping ------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "path", "key"),
    [
        (
            spring([spring_evidence()[0], {"id": "e-4", "content": "x"}]),
            "data.evidence[1].docSource",
            "http.lookup.block.source",
        ),
        (
            spring([{"docSource": "s", "content": "x"}]),
            "data.evidence[0].id",
            "http.lookup.block.chunkId",
        ),
        (
            spring([{"id": "e", "docSource": "s"}]),
            "data.evidence[0].content",
            "http.lookup.block.text",
        ),
        ({"code": 0, "result": {"evidence": []}}, "data", "http.lookup.result"),
        ({"data": {"hits": []}}, "data.evidence", "http.lookup.evidenceBlocks"),
    ],
)
def test_missing_mapped_field_names_path_key_and_config(
    service: Service, spring_config: Path, answer: dict[str, Any], path: str, key: str
) -> None:
    service.on("POST", "/rag/v1/search", (200, answer))
    with spring_service(spring_config) as http, pytest.raises(BackendError) as info:
        http.lookup("q", kb_scope=None, top_k=5)
    message = str(info.value)
    assert f"`{path}`" in message
    assert key in message
    assert str(spring_config) in message
    assert f"POST {service.url}/rag/v1/search" in message


@pytest.mark.parametrize(
    ("evidence", "what"),
    [
        ({"id": "e", "docSource": "s", "content": "x"}, "dict"),
        ("e-17, e-4", "str"),
        (None, "NoneType"),
    ],
)
def test_evidence_blocks_not_a_list_is_a_clear_error(
    service: Service, spring_config: Path, evidence: Any, what: str
) -> None:
    service.on("POST", "/rag/v1/search", (200, spring(evidence)))
    with spring_service(spring_config) as http, pytest.raises(BackendError) as info:
        http.lookup("q", kb_scope=None, top_k=5)
    message = str(info.value)
    assert f"`data.evidence` is {what}, not a list of evidence blocks" in message
    assert "http.lookup.evidenceBlocks" in message and str(spring_config) in message


def test_evidence_block_not_an_object_is_a_clear_error(
    service: Service, spring_config: Path
) -> None:
    service.on("POST", "/rag/v1/search", (200, spring([spring_evidence()[0], "e-4"])))
    with spring_service(spring_config) as http, pytest.raises(BackendError) as info:
        http.lookup("q", kb_scope=None, top_k=5)
    assert "`data.evidence[1]` is str, not an object" in str(info.value)


# --- an envelope: {code, message, data} with HTTP 200 -------------------------------------

ENVELOPE_YAML = """\
http:
  baseUrl: {url}
  retries: 0
  envelope: {envelope}
  lookup: {{path: /rag/lookup, result: "", evidenceBlocks: evidence,
           block: {{chunkId: id, source: docSource, text: content}},
           contextPack: null, retrievalTrace: null, rerankTrace: null}}
  similar: {{path: /rag/similar, results: hits, item: {{source: docSource}}}}
  documents:
    fields: {{source: docSource, id: id, revision: revision, kbScope: scope}}
"""


def envelope_service(service: Service, tmp_path: Path, envelope: str = "{}") -> HttpService:
    """An ``HttpService`` whose ragsnap.yaml maps an enveloped service."""
    path = tmp_path / "ragsnap.yaml"
    path.write_text(ENVELOPE_YAML.format(url=service.url, envelope=envelope), encoding="utf-8")
    return HttpService(load_config(path).http)


def wrapped(data: Any, code: Any = 0, message: str = "ok") -> dict[str, Any]:
    return {"code": code, "message": message, "data": data}


def test_envelope_is_opened_on_every_endpoint(service: Service, tmp_path: Path) -> None:
    doc = {"id": "u-1", "docSource": "pool", "revision": "r1", "scope": "rag-eval"}
    evidence = [{"id": "pool#0", "docSource": "pool", "content": "20 connections"}]
    service.on("GET", "/api/health", (200, wrapped({"pipelineVersion": "spring/9"})))
    service.on("POST", "/rag/lookup", (200, wrapped({"evidence": evidence})))
    service.on("GET", "/rag/similar", (200, wrapped({"hits": [{"docSource": "pool"}]})))
    service.on("GET", "/api/documents", (200, wrapped({"complete": True, "documents": [doc]})))
    service.on("POST", "/api/documents", (200, wrapped({**doc, "status": "added"})))
    service.on("DELETE", "/api/documents", (200, wrapped({"deleted": True})))
    with envelope_service(service, tmp_path) as http:
        assert http.generator()["pipelineVersion"] == "spring/9"
        result = http.lookup("pool", kb_scope=None, top_k=5)
        raw, items = http.similar("pool", top_k=5, kb_scope=None)
        listed = http.documents()
        listing = http.listing()
        uploaded = http.upload("pool.md", "---\nsource: pool\n---\nx", key="k1")
        deleted = http.delete("pool")
    assert result["evidenceBlocks"] == [
        {"rank": 1, "chunkId": "pool#0", "source": "pool", "text": "20 connections", "score": None}
    ]
    assert raw == {"hits": [{"docSource": "pool"}]} and items == [{"rank": 1, "source": "pool"}]
    record = {"source": "pool", "id": "u-1", "revision": "r1", "embedding": None}
    assert listed == [{**record, "kbScope": "rag-eval"}]  # in ragsnap's names
    assert listing == ([{**record, "kbScope": "rag-eval"}], True)
    assert uploaded["status"] == "added" and http.stored(uploaded)["id"] == "u-1"
    assert deleted == {"deleted": True}


@pytest.mark.parametrize(
    ("envelope", "answer", "said"),
    [
        (
            "{}",
            wrapped(None, 40001, "k must be between 1 and 50"),
            "the service answered code 40001: k must be between 1 and 50 (an error inside an "
            "HTTP 200 answer: success is code 0, read through http.envelope in ",
        ),
        ("{}", {"code": "E42", "data": None}, 'answered code "E42" (no message)'),
        (
            "{code: status.code, message: status.text, data: payload, ok: ['0000']}",
            {"status": {"code": "0001", "text": "throttled"}, "payload": {}},
            'answered code "0001": throttled (an error inside an HTTP 200 answer: success is '
            'code "0000"',
        ),
        ("{ok: [0, 200]}", wrapped(None, 500, "busy"), "success is code 0 or 200"),
        ("{}", {"data": {"evidence": []}}, "no envelope field `code` (the status code"),
        ("{}", wrapped({"evidence": []}, True), "answered code true"),
        ("{}", {"code": 0, "message": "ok"}, "`data` (mapped by http.envelope.data"),
    ],
)
def test_envelope_code_not_ok_is_an_error_naming_code_and_message(
    service: Service, tmp_path: Path, envelope: str, answer: dict[str, Any], said: str
) -> None:
    service.on("POST", "/rag/lookup", (200, answer))
    with envelope_service(service, tmp_path, envelope) as http, pytest.raises(BackendError) as info:
        http.lookup("pool", kb_scope=None, top_k=5)
    message = str(info.value)
    assert message.startswith(f"POST {service.url}/rag/lookup: ")
    assert said in message
    assert str(tmp_path / "ragsnap.yaml") in message
    assert len(service.hits("POST", "/rag/lookup")) == 1  # an answered error: not retried


@pytest.mark.parametrize(
    ("envelope", "ok"),
    [("{ok: [0, 200]}", 200), ("{ok: '0'}", 0), ("{ok: 0}", "0")],
)
def test_envelope_success_codes(service: Service, tmp_path: Path, envelope: str, ok: Any) -> None:
    service.on("POST", "/rag/lookup", (200, wrapped({"evidence": []}, ok)))
    with envelope_service(service, tmp_path, envelope) as http:
        assert http.lookup("pool", kb_scope=None, top_k=5)["evidenceBlocks"] == []


def test_fields_missing_inside_an_envelope_are_named_from_its_root(
    service: Service, tmp_path: Path
) -> None:
    service.on("POST", "/rag/lookup", (200, wrapped({"evidence": [{"id": "c", "content": "x"}]})))
    service.on("GET", "/rag/similar", (200, wrapped({"hits": {"docSource": "pool"}})))
    with envelope_service(service, tmp_path) as http:
        with pytest.raises(BackendError, match=r"`data\.evidence\[0\]\.docSource` is missing"):
            http.lookup("pool", kb_scope=None, top_k=5)
        with pytest.raises(BackendError, match=r"`data\.hits` is dict, not a list"):
            http.similar("pool", top_k=5, kb_scope=None)


# --- the security rules, through the http backend ----------------------------------------


@pytest.mark.parametrize("url", ["http://example.com", "http://10.0.0.7:9900", "ftp://127.0.0.1"])
def test_plain_http_to_another_host_is_refused_before_any_request(url: str, tmp_path: Path) -> None:
    with pytest.raises(UsageError):
        HttpService(HttpMapping(), base_url=url)
    config = tmp_path / "ragsnap.yaml"
    config.write_text(f"http: {{baseUrl: '{url}'}}\n", encoding="utf-8")
    if url.startswith("http"):  # the schema takes any http(s) URL; the service refuses it
        mapping = load_config(config).http
        with pytest.raises(UsageError, match="plain http:// is allowed only to loopback"):
            HttpService(mapping)


def test_https_to_another_host_may_be_constructed() -> None:
    http = HttpService(HttpMapping(base_url="https://rag.example.com/v1/"))
    assert http.base_url == "https://rag.example.com/v1"
    http.close()


@pytest.mark.parametrize(
    "location",
    [
        "{url}/login?token={token}",
        "https://sso.example.com/auth?token={token}&next=/rag",
        "/login/{token}",
    ],
)
def test_redirect_is_refused_without_the_token_or_query(service: Service, location: str) -> None:
    target = location.format(url=service.url, token=TOKEN)
    service.on("POST", "/api/knowledge/lookup", (302, "", {"Location": target}))
    http = HttpService(HttpMapping(retries=0), base_url=service.url, token=TOKEN)
    with http, pytest.raises(BackendError) as info:
        http.lookup("q", kb_scope=None, top_k=5)
    message = str(info.value)
    assert "redirect (302)" in message and "never followed" in message
    assert TOKEN not in message and "token=" not in message and "?" not in message
    assert TOKEN not in "".join(traceback.format_exception(info.value))
    assert [s.path for s in service.seen] == ["/api/knowledge/lookup"]  # not followed


def test_5xx_is_retried_then_succeeds(service: Service) -> None:
    ok = (200, {"lookupResult": make_fixture("c", [])["lookupResult"]})
    service.on("POST", "/api/knowledge/lookup", (503, "busy"), (502, "gateway"), ok)
    with HttpService(HttpMapping(retries=2), base_url=service.url) as http:
        assert http.lookup("q", kb_scope=None, top_k=5)["evidenceBlocks"] == []
    assert len(service.hits("POST", "/api/knowledge/lookup")) == 3


def test_5xx_gives_up_after_the_configured_retries(service: Service) -> None:
    service.on("POST", "/api/knowledge/lookup", (500, {"error": "db down"}))
    http = HttpService(HttpMapping(retries=1), base_url=service.url)
    with http, pytest.raises(BackendError, match="HTTP 500"):
        http.lookup("q", kb_scope=None, top_k=5)
    assert len(service.hits("POST", "/api/knowledge/lookup")) == 2


@pytest.mark.parametrize("status", [400, 401, 404, 422])
def test_4xx_is_not_retried(service: Service, status: int) -> None:
    service.on("POST", "/api/knowledge/lookup", (status, {"error": "bad request"}))
    http = HttpService(HttpMapping(retries=3), base_url=service.url)
    with http, pytest.raises(BackendError, match=f"HTTP {status}"):
        http.lookup("q", kb_scope=None, top_k=5)
    assert len(service.hits("POST", "/api/knowledge/lookup")) == 1


def echo(status: int, where: str = "body") -> Callable[[Seen], Answer]:
    """A reply that echoes the request's Authorization header back."""

    def reply(seen: Seen) -> Answer:
        given = seen.headers.get("Authorization", "")
        if where == "body":
            return (status, {"error": f"rejected credentials {given}", "data": {"who": given}})
        return (status, {"unexpected": given}, {"X-Echo": given})

    return reply


@pytest.mark.parametrize(
    "reply",
    [
        echo(401),
        echo(403),
        echo(500),
        echo(422),
        echo(200, "header"),  # a 200 whose answer lacks the mapped result field
        lambda seen: (200, spring(seen.headers["Authorization"])),  # evidence not a list
        lambda seen: (200, spring([{"id": seen.headers["Authorization"], "content": "x"}])),
    ],
)
def test_token_is_sent_as_bearer_and_never_in_a_message(
    service: Service, spring_config: Path, reply: Reply
) -> None:
    service.on("POST", "/rag/v1/search", reply)
    with spring_service(spring_config) as http, pytest.raises(BackendError) as info:
        http.lookup("q", kb_scope=None, top_k=5)
    assert service.hits("POST", "/rag/v1/search")[0].headers["Authorization"] == f"Bearer {TOKEN}"
    assert TOKEN not in str(info.value) and TOKEN not in repr(info.value)
    assert TOKEN not in "".join(traceback.format_exception(info.value))


# --- concurrency ------------------------------------------------------------------------


def test_client_used_from_8_threads_at_once(service: Service) -> None:
    """Eight threads share one HttpClient; each has its own session (its own cookies).

    The service answers /together only once all eight requests are in flight,
    and sets a per-thread cookie that a shared session would mix up.
    """
    threads = 8
    together = threading.Barrier(threads, timeout=30)

    def login(seen: Seen) -> Answer:
        who = seen.query["who"][0]
        return (200, {"who": who}, {"Set-Cookie": f"who={who}; Path=/"})

    def wait_for_all(seen: Seen) -> Answer:
        try:
            together.wait()
        except threading.BrokenBarrierError:
            return (500, {"error": "not all eight requests were in flight at once"})
        return (200, {"ok": True})

    def check(seen: Seen) -> Answer:
        return (200, {"cookie": seen.headers.get("Cookie")})

    service.on("GET", "/login", login)
    service.on("GET", "/together", wait_for_all)
    service.on("GET", "/check", check)
    client = HttpClient(service.url, token=TOKEN, retries=0, timeout=60)

    def work(who: int) -> Any:
        assert client.get_json("/login", {"who": who}) == {"who": str(who)}
        client.get_json("/together")
        return client.get_json("/check", {"who": who})

    with ThreadPoolExecutor(max_workers=threads) as pool:
        answers = list(pool.map(work, range(threads)))
    client.close()
    assert answers == [{"cookie": f"who={who}"} for who in range(threads)]
    assert len(service.hits("GET", "/together")) == threads
    assert {s.headers["Authorization"] for s in service.seen if s.method == "GET"} == {
        f"Bearer {TOKEN}"
    }


# --- the http section of ragsnap.yaml ---------------------------------------------------


@pytest.mark.parametrize(
    ("http", "pointer", "problem"),
    [
        ({"lookup": {"path": "api/knowledge/lookup"}}, "/http/lookup/path", "does not match"),
        (
            {"lookup": {"block": {"source": "docSource", "sourse": "x"}}},
            "/http/lookup/block",
            "'sourse'",
        ),
        ({"similar": {"item": {"url": "x"}}}, "/http/similar/item", "'url'"),
        ({"lookup": {"evidenceBlocks": "data..evidence"}}, "/http/lookup/evidenceBlocks", ""),
        ({"health": "health"}, "/http/health", ""),
        ({"envelope": {"status": "code"}}, "/http/envelope", ""),
        ({"envelope": {"code": "a..b"}}, "/http/envelope/code", ""),
        ({"envelope": {"ok": []}}, "/http/envelope/ok", ""),
        ({"envelope": "data"}, "/http/envelope", ""),
        ({"baseUrl": "127.0.0.1:9900"}, "/http/baseUrl", ""),
        (
            {"lookup": {"trace": {"attempt": {"hitcount": "hits"}}}},
            "/http/lookup/trace/attempt",
            "unknown field 'hitcount'",
        ),
        ({"lookup": {"trace": {"rerank": {}}}}, "/http/lookup/trace", "unknown field 'rerank'"),
        (  # a required trace field cannot be "not reported"
            {"lookup": {"trace": {"retrievalTrace": {"selectedAttempt": None}}}},
            "/http/lookup/trace/retrievalTrace/selectedAttempt",
            "None is NoneType, expected string",
        ),
        (
            {"lookup": {"trace": {"rankedItem": {"lexicalRank": "ranks..bm25"}}}},
            "/http/lookup/trace/rankedItem/lexicalRank",
            "",
        ),
    ],
)
def test_bad_http_section_is_input_error_naming_the_pointer(
    tmp_path: Path, http: dict[str, Any], pointer: str, problem: str
) -> None:
    config = tmp_path / "ragsnap.yaml"
    config.write_text(json.dumps({"http": http}), encoding="utf-8")  # JSON is YAML
    with pytest.raises(InputError) as info:
        load_config(config)
    assert info.value.path == str(config)
    assert info.value.pointer == pointer
    assert problem in info.value.problem

    run = run_cli("snapshot", "--config", str(config), "--backend", "http", cwd=tmp_path)
    assert run.code == 2
    assert run.err.startswith(f"InputError: {config} at {pointer}: ")
    assert run.out == ""

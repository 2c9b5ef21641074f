"""``ragsnap serve`` as a real process over the repo's seed documents, spoken to with requests.

Read-only checks share one server over one seeded knowledge base; tests that
upload, delete, need a token or a body limit start their own server over a
copy of it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import urllib.parse
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from conftest import REPO, Served, run_cli
from ragsnap.cli import main
from ragsnap.config import Config
from ragsnap.io.schema import validate
from ragsnap.kb.backends.sqlite import SqliteKnowledgeBase
from ragsnap.kb.corpus import parse_seed_doc
from ragsnap.kb.embedders import make_embedder
from ragsnap.kb.pipeline import PIPELINE_VERSION, score_label
from ragsnap.kb.seeding import corpus_revision

TOKEN = "srv-token-4b1d9e77-SECRET"
SEED_DOCS = REPO / "seed-docs"
LOOKUP = "/api/knowledge/lookup"
SIMILAR = "/api/search/similar"
DOCUMENTS = "/api/documents"
NEW_DOC = """---
source: quokka-capacitor
title: Quokka flux capacitor
category: database
kb_scope: rag-eval
---
The quokka flux capacitor needs exactly 1.21 gigawatts before the zanzibar relay engages.
"""


def scopes() -> dict[str, str | None]:
    """Every seed document's source and kb_scope, read from its frontmatter."""
    docs = [parse_seed_doc(p, p.read_bytes()) for p in sorted(SEED_DOCS.glob("*.md"))]
    return {doc.source: doc.kb_scope for doc in docs}


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The repo's seed-docs/ imported into a fresh knowledge base (never written after)."""
    folder = tmp_path_factory.mktemp("seeded")
    path = folder / "kb.sqlite"
    run = run_cli("seed", "--kb", str(path), "--seed-docs", str(SEED_DOCS), cwd=folder)
    assert run.code == 0, run.out + run.err
    return path


@pytest.fixture(scope="module")
def url(kb: Path) -> Iterator[str]:
    """One read-only ``ragsnap serve`` over ``kb`` for the whole module."""
    server = Served("--kb", str(kb), cwd=kb.parent)
    yield server.base_url
    server.stop()


@pytest.fixture
def kb_copy(kb: Path, tmp_path: Path) -> Path:
    """A private copy of the seeded knowledge base, for tests that write to it."""
    copy = tmp_path / "kb.sqlite"
    shutil.copyfile(kb, copy)
    return copy


def lookup(url: str, body: Any, **kwargs: Any) -> requests.Response:
    return requests.post(url + LOOKUP, json=body, timeout=60, **kwargs)


def without_latency(data: Any) -> Any:
    """``data`` with every ``latencyMs`` set to None (the one field that varies per run)."""
    if isinstance(data, dict):
        return {k: None if k == "latencyMs" else without_latency(v) for k, v in data.items()}
    if isinstance(data, list):
        return [without_latency(v) for v in data]
    return data


# --- health, lookup, similar ------------------------------------------------------------


def test_health_names_backend_embedder_and_counts(url: str, kb: Path) -> None:
    answer = requests.get(url + "/api/health", timeout=30)
    assert answer.status_code == 200
    health = answer.json()
    with SqliteKnowledgeBase(kb, create=False) as store:
        chunks = store.count()
        hashes = {source: info.index_hash for source, info in store.documents().items()}
    assert health.pop("corpusRevision") == corpus_revision(hashes)
    assert health == {
        "status": "ok",
        "backend": "embedded",
        "pipelineVersion": PIPELINE_VERSION,
        "embedder": make_embedder(Config().kb.embedder).fingerprint.to_json(),
        "method": Config().lookup.method,
        "settings": health["settings"],
        "documents": len(list(SEED_DOCS.glob("*.md"))),
        "chunks": chunks,
    }
    assert chunks > health["documents"]
    committed = json.loads((REPO / "fixtures" / "obs-log-retention-days.json").read_text())
    assert health["settings"] == committed["generator"]["settings"]  # what fixtures record


@pytest.mark.parametrize(
    ("query", "scope", "top_k", "method"),
    [
        ("Druid connection pool billing", None, None, None),
        ("connection pool exhausted", "rag-eval", 3, None),
        ("Kafka 消费者频繁重平衡 session.timeout.ms", "rag-eval", None, None),
        ("redis maxmemory eviction policy", None, 2, "lexical"),
        ("rolling update maxSurge", "rag-eval", 8, "vector"),
    ],
)
def test_lookup_is_the_fixture_contract_and_equals_the_cli(
    url: str,
    kb: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    query: str,
    scope: str | None,
    top_k: int | None,
    method: str | None,
) -> None:
    body: dict[str, Any] = {"query": query}
    for key, value in (("kbScope", scope), ("topK", top_k), ("method", method)):
        if value is not None:
            body[key] = value
    answer = lookup(url, body)
    assert answer.status_code == 200, answer.text
    data = answer.json()
    assert list(data) == ["lookupResult"]
    result = data["lookupResult"]
    assert result["evidenceBlocks"], "the query should find something in seed-docs"
    assert len(result["evidenceBlocks"]) <= (top_k or 5)
    # the service measures latencies (record_latency=True)
    assert any(a["latencyMs"] is not None for a in result["retrievalTrace"]["attempts"])

    health = requests.get(url + "/api/health", timeout=30).json()
    fixture = {
        "schemaVersion": 1,
        "caseId": "x",
        "query": query,
        "retrievedAt": "2026-01-01T00:00:00Z",
        "generator": {
            "backend": health["backend"],
            "embedder": health["embedder"],
            "pipelineVersion": health["pipelineVersion"],
            "kbScope": scope,
            "topK": top_k or 5,
        },
        "lookupResult": result,
    }
    validate(fixture, "fixture", "x", "fixture")

    monkeypatch.chdir(tmp_path)  # no ragsnap.yaml: the built-in defaults, as the server
    argv = ["lookup", query, "--kb", str(kb), "--no-latency"]
    for flag, value in (("--kb-scope", scope), ("--top-k", top_k), ("--method", method)):
        if value is not None:
            argv += [flag, str(value)]
    capsys.readouterr()
    assert main(argv) == 0
    expected = json.loads(capsys.readouterr().out)
    assert without_latency(data) == expected


def test_kb_scope_isolates_other_teams_documents(url: str) -> None:
    other = {source for source, scope in scopes().items() if scope != "rag-eval"}
    assert "billing-db-pool-tuning" in other
    query = "Druid connection pool billing batch HikariCP"
    # without a scope, the other team's page is the best answer: the query does reach it
    unscoped = lookup(url, {"query": query, "topK": 10}).json()["lookupResult"]
    assert unscoped["evidenceBlocks"][0]["source"] == "billing-db-pool-tuning"

    scoped = lookup(url, {"query": query, "topK": 10, "kbScope": "rag-eval"}).json()
    result = scoped["lookupResult"]
    seen = {b["source"] for b in result["evidenceBlocks"]}
    seen |= set(result["contextPack"]["sources"])
    seen |= {i["source"] for i in result["rerankTrace"]["before"] + result["rerankTrace"]["after"]}
    assert seen, "the scoped lookup should still find rag-eval documents"
    assert not seen & other
    assert {b["metadata"]["kbScope"] for b in result["evidenceBlocks"]} == {"rag-eval"}

    def similar(scope: str) -> set[str]:
        params: dict[str, str | int] = {"query": query, "topK": 50, "kbScope": scope}
        results = requests.get(url + SIMILAR, params=params, timeout=30).json()["results"]
        return {r["source"] for r in results}

    ours = similar("rag-eval")
    assert ours and not ours & other
    assert similar("other-team") == {"billing-db-pool-tuning"}


@pytest.mark.parametrize("top_k", [1, 3, 7])
def test_similar_search_shape_top_k_and_labels(url: str, top_k: int) -> None:
    params: dict[str, str | int] = {"query": "redis client pool", "topK": top_k}
    answer = requests.get(url + SIMILAR, params=params, timeout=30)
    assert answer.status_code == 200, answer.text
    data = answer.json()
    assert {k: data[k] for k in ("query", "topK", "kbScope")} == {
        "query": "redis client pool",
        "topK": top_k,
        "kbScope": None,
    }
    results = data["results"]
    assert [r["rank"] for r in results] == list(range(1, top_k + 1))
    for item in results:
        assert set(item) == {
            "rank",
            "chunkId",
            "source",
            "docId",
            "title",
            "breadcrumb",
            "text",
            "score",
            "scoreLabel",
        }
        assert item["chunkId"].startswith(item["source"] + "#")
        assert item["scoreLabel"] == score_label(item["score"])
    scores = [r["score"] for r in results]
    assert scores == sorted(scores, reverse=True)
    assert results[0]["source"] == "redis-client-pooling"


def test_similar_search_default_top_k_is_five(url: str) -> None:
    data = requests.get(url + SIMILAR, params={"query": "kafka lag"}, timeout=30).json()
    assert data["topK"] == 5 and len(data["results"]) == 5


def test_documents_lists_every_seed_document(url: str) -> None:
    answer = requests.get(url + DOCUMENTS, timeout=30)
    assert answer.status_code == 200
    docs = answer.json()["documents"]
    assert {d["source"]: d["kbScope"] for d in docs} == scopes()
    assert all(d["chunks"] >= 1 and d["indexHash"] for d in docs)


def test_openapi_lists_every_endpoint(url: str) -> None:
    answer = requests.get(url + "/openapi.json", timeout=30)
    assert answer.status_code == 200
    paths = answer.json()["paths"]
    assert {path: set(ops) for path, ops in paths.items()} == {
        "/api/health": {"get"},
        LOOKUP: {"post"},
        SIMILAR: {"get"},
        DOCUMENTS: {"get", "post", "delete"},
    }


# --- validation -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"query": "pool", "bogus": 1}, "bogus"),
        ({"query": "pool", "top_k": 3}, "top_k"),
        ({"query": ""}, "query"),
        ({}, "query"),
        ({"query": 42}, "query"),
        ({"query": "x" * 4001}, "query"),
        ({"query": "pool", "topK": 0}, "topK"),
        ({"query": "pool", "topK": 1001}, "topK"),
        ({"query": "pool", "topK": "x"}, "topK"),
        ({"query": "pool", "kbScope": ""}, "kbScope"),
        ({"query": "pool", "method": "bm25"}, "method"),
    ],
)
def test_invalid_lookup_is_422_naming_the_field(url: str, body: Any, field: str) -> None:
    answer = lookup(url, body)
    assert answer.status_code == 422, answer.text
    data = answer.json()
    assert data["error"].startswith("invalid request: ")
    assert f"{field}: " in data["error"]
    assert any(problem.startswith(f"{field}: ") for problem in data["detail"])


def _answer_bytes(answer: requests.Response) -> tuple[bytes, list[tuple[str, str]]]:
    """An answer's body with every ``latencyMs`` value written as null (the one field
    that varies per request), and its headers but ``date`` and ``content-length``."""
    body = re.sub(rb'"latencyMs":[0-9.eE+-]+', b'"latencyMs":null', answer.content)
    raw = answer.raw._original_response.msg  # as sent: names, values and order
    headers = [(k.lower(), v) for k, v in raw.items() if k.lower() not in ("date",)]
    assert ("content-length", str(len(answer.content))) in headers
    return body, [h for h in headers if h[0] != "content-length"]


@pytest.mark.parametrize(
    "body",
    [
        {"query": "Druid connection pool billing"},
        {"query": "Kafka 消费者频繁重平衡 session.timeout.ms", "kbScope": "rag-eval", "topK": 8},
        {"query": "redis maxmemory eviction policy", "topK": 2, "method": "lexical"},
        {"query": "no such words zzqx", "kbScope": "nobody"},
    ],
)
def test_a_lookup_answers_the_same_bytes_on_either_path(url: str, body: dict[str, Any]) -> None:
    # application/json takes the service's own lookup path (_FastLookup); another JSON
    # media type (FastAPI reads application/*+json as JSON too) takes FastAPI's route:
    # the answers are the same bytes and headers, but for latencies and the date
    data = json.dumps(body).encode()
    fast, routed = (
        requests.post(url + LOOKUP, data=data, headers={"Content-Type": kind}, timeout=60)
        for kind in ("application/json", "application/vnd.ragsnap+json")
    )
    assert fast.status_code == routed.status_code == 200, (fast.text, routed.text)
    assert _answer_bytes(fast) == _answer_bytes(routed)
    assert fast.headers["content-type"] == "application/json"


def test_lookup_body_that_is_not_an_object_is_422(url: str) -> None:
    answer = lookup(url, ["pool"])
    assert answer.status_code == 422
    assert answer.json()["error"].startswith("invalid request: ")


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"query": "pool", "topK": 0}, "topK"),
        ({"query": "pool", "topK": 1001}, "topK"),
        ({"query": "pool", "topK": "x"}, "topK"),
        ({"query": ""}, "query"),
        ({"topK": 3}, "query"),
        ({"query": "pool", "kbScope": ""}, "kbScope"),
    ],
)
def test_invalid_similar_search_is_422_naming_the_parameter(
    url: str, params: dict[str, Any], field: str
) -> None:
    answer = requests.get(url + SIMILAR, params=params, timeout=30)
    assert answer.status_code == 422, answer.text
    assert f"{field}: " in answer.json()["error"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"name": "a/b.md", "content": NEW_DOC}, "name"),
        ({"name": "..\\b.md", "content": NEW_DOC}, "name"),
        ({"name": "", "content": NEW_DOC}, "name"),
        ({"name": "b.md", "content": ""}, "content"),
        ({"name": "b.md"}, "content"),
        ({"name": "b.md", "content": NEW_DOC, "kbScope": "x"}, "kbScope"),
    ],
)
def test_invalid_upload_is_422_naming_the_field(url: str, body: Any, field: str) -> None:
    answer = requests.post(url + DOCUMENTS, json=body, timeout=30)
    assert answer.status_code == 422, answer.text
    assert f"{field}: " in answer.json()["error"]


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("---\ntitle: no source\n---\nbody", "frontmatter has no `source`"),
        ("---\nsource: [a, b]\n---\nbody", "is not a usable id"),
    ],
)
def test_upload_with_bad_frontmatter_is_400_naming_the_problem(
    url: str, content: str, problem: str
) -> None:
    answer = requests.post(url + DOCUMENTS, json={"name": "bad.md", "content": content}, timeout=30)
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert error.startswith("bad.md") and problem in error
    # nothing was stored
    sources = {d["source"] for d in requests.get(url + DOCUMENTS, timeout=30).json()["documents"]}
    assert sources == set(scopes())


# --- writes: upload, update, delete -----------------------------------------------------


def sources_found(url: str, query: str) -> list[str]:
    result = lookup(url, {"query": query, "kbScope": "rag-eval"}).json()["lookupResult"]
    return [b["source"] for b in result["evidenceBlocks"]]


def test_upload_then_unchanged_updated_found_and_deleted(
    serve: Callable[..., Served], kb_copy: Path
) -> None:
    url = serve("--kb", str(kb_copy), cwd=kb_copy.parent).base_url
    query = "quokka flux capacitor zanzibar relay"
    assert "quokka-capacitor" not in sources_found(url, query)
    before = requests.get(url + "/api/health", timeout=30).json()

    def upload(content: str) -> dict[str, Any]:
        answer = requests.post(
            url + DOCUMENTS, json={"name": "quokka.md", "content": content}, timeout=60
        )
        assert answer.status_code == 200, answer.text
        data: dict[str, Any] = answer.json()
        return data

    added = upload(NEW_DOC)
    assert added["source"] == "quokka-capacitor" and added["status"] == "added"
    assert added["chunks"] >= 1
    assert upload(NEW_DOC) == {**added, "status": "unchanged"}
    edited = NEW_DOC.replace("1.21 gigawatts", "2.42 gigawatts and a banana peel")
    assert upload(edited)["status"] == "updated"

    found = lookup(url, {"query": query, "kbScope": "rag-eval"}).json()["lookupResult"]
    assert found["evidenceBlocks"][0]["source"] == "quokka-capacitor"
    assert "banana peel" in found["evidenceBlocks"][0]["text"]
    after = requests.get(url + "/api/health", timeout=30).json()
    assert after["documents"] == before["documents"] + 1
    listed = {d["source"]: d for d in requests.get(url + DOCUMENTS, timeout=30).json()["documents"]}
    assert listed["quokka-capacitor"]["kbScope"] == "rag-eval"

    gone = requests.delete(url + DOCUMENTS, params={"source": "quokka-capacitor"}, timeout=30)
    assert gone.status_code == 200
    assert gone.json() == {"source": "quokka-capacitor", "removed": True, "chunks": added["chunks"]}
    again = requests.delete(url + DOCUMENTS, params={"source": "quokka-capacitor"}, timeout=30)
    assert again.json() == {"source": "quokka-capacitor", "removed": False, "chunks": 0}
    assert "quokka-capacitor" not in sources_found(url, query)
    assert requests.get(url + "/api/health", timeout=30).json() == before


def test_delete_needs_a_source(url: str) -> None:
    answer = requests.delete(url + DOCUMENTS, timeout=30)
    assert answer.status_code == 422 and "source: " in answer.json()["error"]


# --- request body limit -----------------------------------------------------------------


@pytest.mark.slow
def test_oversized_body_is_413_declared_or_chunked(
    serve: Callable[..., Served], kb_copy: Path
) -> None:
    url = serve("--kb", str(kb_copy), "--max-body", "2000", cwd=kb_copy.parent).base_url
    big = json.dumps({"query": "pool " * 500}).encode()
    assert len(big) > 2000

    declared = requests.post(
        url + LOOKUP, data=big, headers={"Content-Type": "application/json"}, timeout=30
    )
    assert declared.request.headers["Content-Length"] == str(len(big))
    assert declared.status_code == 413, declared.text
    assert "2000 bytes" in declared.json()["error"]

    def pieces() -> Iterator[bytes]:
        for start in range(0, len(big), 300):
            yield big[start : start + 300]

    chunked = requests.post(
        url + LOOKUP, data=pieces(), headers={"Content-Type": "application/json"}, timeout=30
    )
    assert "Content-Length" not in chunked.request.headers
    assert chunked.request.headers["Transfer-Encoding"] == "chunked"
    assert chunked.status_code == 413, chunked.text
    assert "2000 bytes" in chunked.json()["error"]

    upload = requests.post(
        url + DOCUMENTS, json={"name": "big.md", "content": NEW_DOC * 20}, timeout=30
    )
    assert upload.status_code == 413
    sources = {d["source"] for d in requests.get(url + DOCUMENTS, timeout=30).json()["documents"]}
    assert "quokka-capacitor" not in sources

    # bodies under the limit, declared or chunked, still work
    small = json.dumps({"query": "redis pool", "topK": 2}).encode()
    ok = requests.post(
        url + LOOKUP,
        data=iter([small[:10], small[10:]]),
        headers={"Content-Type": "application/json"},
        timeout=30,
    )
    assert ok.status_code == 200, ok.text
    assert len(ok.json()["lookupResult"]["evidenceBlocks"]) == 2


# --- the token --------------------------------------------------------------------------


@pytest.mark.slow
def test_token_is_required_except_for_health_and_never_printed(
    serve: Callable[..., Served], kb_copy: Path
) -> None:
    server = serve(
        "--kb",
        str(kb_copy),
        "--token-env",
        "RAGSNAP_SERVE_TOKEN",
        "--access-log",
        "--log-level",
        "debug",
        cwd=kb_copy.parent,
        env={"RAGSNAP_SERVE_TOKEN": TOKEN},
    )
    url = server.base_url
    body = {"query": "redis pool"}
    answers: list[requests.Response] = []
    for headers in (
        {},
        {"Authorization": "Bearer wrong-token"},
        {"Authorization": f"Basic {TOKEN}"},
        {"Authorization": TOKEN},
        {"Authorization": f"Bearer {TOKEN}x"},
    ):
        for answer in (
            lookup(url, body, headers=headers),
            requests.get(url + SIMILAR, params={"query": "pool"}, headers=headers, timeout=30),
            requests.get(url + DOCUMENTS, headers=headers, timeout=30),
            requests.post(
                url + DOCUMENTS,
                json={"name": "q.md", "content": NEW_DOC},
                headers=headers,
                timeout=30,
            ),
            requests.delete(
                url + DOCUMENTS, params={"source": "mysql-connection-pool"}, headers=headers
            ),
        ):
            assert answer.status_code == 401, (headers, answer.request.url, answer.text)
            assert answer.headers["WWW-Authenticate"] == "Bearer"
            assert "bearer token" in answer.json()["error"]
            answers.append(answer)
    # nothing was written by the refused requests
    sources = {
        d["source"]
        for d in requests.get(
            url + DOCUMENTS, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30
        ).json()["documents"]
    }
    assert sources == set(scopes())

    good = {"Authorization": f"Bearer {TOKEN}"}
    assert lookup(url, body, headers=good).status_code == 200
    assert lookup(url, body, headers={"Authorization": f"bearer {TOKEN}"}).status_code == 200
    similar = requests.get(url + SIMILAR, params={"query": "pool"}, headers=good, timeout=30)
    assert similar.status_code == 200
    assert requests.get(url + "/api/health", timeout=30).status_code == 200
    answers += [similar, requests.get(url + "/api/health", timeout=30)]

    out, err = server.stop()
    assert server.proc.returncode == 0
    assert "401" in out + err  # the access log did record the refused requests
    assert TOKEN not in out and TOKEN not in err
    assert all(TOKEN not in a.text for a in answers)


@pytest.mark.slow
def test_a_token_in_the_query_string_is_redacted_from_the_access_log(
    serve: Callable[..., Served], kb_copy: Path
) -> None:
    # the token belongs in the Authorization header; clients that put it in the query
    # string are refused, and their request line must not print it in the access log
    server = serve(
        "--kb",
        str(kb_copy),
        "--token-env",
        "RAGSNAP_SERVE_TOKEN",
        "--access-log",
        "--log-level",
        "info",  # uvicorn logs each request at info: below it, --access-log prints nothing
        cwd=kb_copy.parent,
        env={"RAGSNAP_SERVE_TOKEN": TOKEN},
    )
    url = server.base_url
    other_key = "k-5e2a-ANOTHER-KEY"  # not the token, but under a parameter named like a key
    fully = "".join(f"%{b:02x}" for b in TOKEN.encode())
    for query in (
        f"query=pool&token={TOKEN}",
        f"access_token={TOKEN}&query=pool",
        f"Api_Key={other_key}&query=pool",
        f"query={TOKEN}",  # under any name, the token itself
        f"query=pool&q={urllib.parse.quote(TOKEN + '/x', safe='')}",  # percent-encoded
        f"query=pool&q={fully}",  # every byte percent-encoded
        f"query=pool&{fully}",
        "authorization=Bearer%20abc-123&sig=sig-456&session=ses-789&pwd=pw-012&query=pool",
    ):
        answer = requests.get(f"{url}{SIMILAR}?{query}", timeout=30)
        assert answer.status_code == 401, (query, answer.text)
    assert requests.get(f"{url}/api/documents/{TOKEN}", timeout=30).status_code in (401, 404)
    assert requests.get(f"{url}/api/documents/{fully}", timeout=30).status_code in (401, 404)
    good = {"Authorization": f"Bearer {TOKEN}"}
    answer = requests.get(url + SIMILAR, params={"query": "pool"}, headers=good, timeout=30)
    assert answer.status_code == 200

    out, err = server.stop()
    log = out + err
    assert server.proc.returncode == 0
    assert TOKEN not in log and other_key not in log
    assert urllib.parse.quote(TOKEN, safe="") not in log
    assert f"{SIMILAR}?query=pool&token=*** HTTP/1.1" in log, log
    assert "access_token=***&query=pool" in log and "Api_Key=***&query=pool" in log
    assert f"{SIMILAR}?query=*** HTTP/1.1" in log and "/api/documents/*** HTTP/1.1" in log
    assert "query=pool&q=*** HTTP/1.1" in log
    assert fully not in log and fully.upper() not in log
    assert log.count("query=pool&q=*** HTTP/1.1") == 2 and "query=pool&*** HTTP/1.1" in log
    assert "authorization=***&sig=***&session=***&pwd=***&query=pool HTTP/1.1" in log
    assert f"{SIMILAR}?query=pool HTTP/1.1" in log  # nothing else is redacted


# --- process life -----------------------------------------------------------------------


@pytest.mark.slow
def test_sigterm_stops_the_server_with_exit_code_0(
    serve: Callable[..., Served], kb_copy: Path
) -> None:
    server = serve("--kb", str(kb_copy), cwd=kb_copy.parent)
    assert server.banner.startswith("serve: http://127.0.0.1:")
    assert requests.get(server.base_url + "/api/health", timeout=30).status_code == 200
    out, err = server.stop()  # SIGTERM
    assert server.proc.returncode == 0, err
    assert out.rstrip().endswith("serve: stopped")
    assert "Traceback" not in err
    with pytest.raises(requests.ConnectionError):
        requests.get(server.base_url + "/api/health", timeout=5)


def _workers(server: Served) -> list[int]:
    """The worker processes of a serve process: its spawned children, from /proc (not
    multiprocessing's resource tracker)."""
    tasks = Path(f"/proc/{server.proc.pid}/task")
    children = [
        int(pid) for task in tasks.iterdir() for pid in (task / "children").read_text().split()
    ]
    return [pid for pid in children if b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes()]


needs_proc = pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs /proc")


@pytest.mark.slow
@needs_proc
def test_workers_answer_together_and_sigterm_stops_them_all(
    serve: Callable[..., Served], kb_copy: Path
) -> None:
    server = serve("--kb", str(kb_copy), "--workers", "3", cwd=kb_copy.parent)
    assert "chunks); 3 workers; OpenAPI" in server.banner
    workers = _workers(server)
    assert len(workers) == 3
    # an upload through one worker is seen by the lookups of every other
    sessions = [requests.Session() for _ in range(6)]  # one connection each
    body = {"query": "quokka flux capacitor gigawatts", "kbScope": "rag-eval", "topK": 1}
    uploaded = sessions[0].post(
        server.base_url + DOCUMENTS, json={"name": "q.md", "content": NEW_DOC}, timeout=30
    )
    assert uploaded.status_code == 200, uploaded.text
    for session in sessions:
        answer = session.post(server.base_url + LOOKUP, json=body, timeout=30)
        assert answer.status_code == 200, answer.text
        assert answer.json()["lookupResult"]["evidenceBlocks"][0]["source"] == "quokka-capacitor"
    out, err = server.stop()  # SIGTERM to the serve process only
    assert server.proc.returncode == 0, err
    assert out.rstrip().endswith("serve: stopped")
    assert "Traceback" not in err
    assert not any(Path(f"/proc/{pid}").exists() for pid in workers)


@needs_proc
def test_a_worker_that_dies_stops_the_service_with_exit_code_2(
    serve: Callable[..., Served], kb_copy: Path
) -> None:
    server = serve("--kb", str(kb_copy), "--workers", "2", cwd=kb_copy.parent)
    first, second = _workers(server)
    os.kill(first, signal.SIGKILL)
    server.proc.wait(timeout=60)
    out, err = server.stop()
    assert server.proc.returncode == 2, out + err
    assert f"BackendError: serve: worker process {first} ended (exit code -9)" in err
    assert not Path(f"/proc/{second}").exists()


def test_workers_above_1_need_the_embedded_store(tmp_path: Path) -> None:
    run = run_cli("serve", "--backend", "milvus", "--workers", "2", "--port", "0", cwd=tmp_path)
    assert run.code == 2, run.out + run.err
    assert run.err.startswith("UsageError: --workers 2: several worker processes need the ")
    assert "drop --workers" in run.err


def test_port_in_use_exits_2_with_a_clear_message(kb: Path, tmp_path: Path) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        run = run_cli("serve", "--kb", str(kb), "--port", str(port), cwd=tmp_path)
    assert run.code == 2, run.out + run.err
    assert run.out == ""
    assert run.err.startswith(f"UsageError: cannot listen on 127.0.0.1:{port}")
    assert "--port" in run.err and "Traceback" not in run.err


def test_kb_built_with_another_embedder_is_refused_at_start(tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    config = other / "ragsnap.yaml"
    config.write_text("kb:\n  embedder: {kind: hashing, dimension: 64}\n", encoding="utf-8")
    kb = tmp_path / "kb64.sqlite"
    seeded = run_cli(
        "seed",
        "--kb",
        str(kb),
        "--seed-docs",
        str(SEED_DOCS),
        "--config",
        str(config),
        cwd=tmp_path,
    )
    assert seeded.code == 0, seeded.out + seeded.err
    run = run_cli("serve", "--kb", str(kb), "--port", "0", cwd=tmp_path)  # default embedder
    assert run.code == 2, run.out + run.err
    assert "http://" not in run.out  # it never listened
    assert run.err.startswith("BackendError: ")
    assert "dimension 64" in run.err and "dimension 256" in run.err
    assert "ragsnap seed --reindex" in run.err


def test_the_listening_socket_is_tcp_so_answers_are_not_delayed() -> None:
    """asyncio sets TCP_NODELAY only on sockets whose proto is TCP; with proto 0 every
    keep-alive answer waited ~40 ms for the client's delayed ACK (Nagle)."""
    from ragsnap.commands.serve import _bind

    sock = _bind("127.0.0.1", 0)
    try:
        assert sock.proto == socket.IPPROTO_TCP
    finally:
        sock.close()

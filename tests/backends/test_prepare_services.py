"""``ragsnap prepare`` and ``ragsnap live-check --state`` against services that behave as
real ones do: integer revisions, a byte order mark before the JSON, answers nested
thousands of levels deep, malformed document records, documents lost behind ragsnap's
back; and ``--max-requests 1`` on a saved state, a tampered state's ``counters``.

The services are real processes (``ragsnap serve``) or ``Keyed``, a loopback server
with ``ragsnap serve``'s document contract (idempotency keys honoured, delete by
source) whose answers a test can shape.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from conftest import (
    REPO,
    Run,
    Served,
    listed_documents,
    lose_document,
    make_case,
    write_json,
    write_seed_docs,
)
from ragsnap.live.preparation import idempotency_key

from .conftest import LoopbackServer, send

SCOPE = "svc-eval"
DOCS = {
    "doc-kafka": "Kafka consumer lag grows when the partition rebalance storm repeats.",
    "doc-redis": "Redis eviction policy allkeys-lru drops the least recently used keys.",
    "doc-tls": "TLS certificate renewal runs ninety days before the certificate expires.",
    "doc-nginx": "Nginx upstream timeout answers 504 after proxy_read_timeout seconds.",
}
STATE = "st/s.json"
BOM = "\ufeff".encode()


def write_project(folder: Path) -> Path:
    """Seed documents, one golden case per document, a private state folder."""
    write_seed_docs(folder / "seed-docs", DOCS, SCOPE)
    cases = [
        make_case(source, query=text, expectedSources=[source], kbScope=SCOPE, topK=len(DOCS))
        for source, text in DOCS.items()
    ]
    write_json(folder / "cases" / "golden-cases.json", {"schemaVersion": 1, "cases": cases})
    (folder / "st").mkdir(mode=0o700)
    return folder


def ragsnap(cwd: Path, *args: str) -> Run:
    import subprocess

    env = {**os.environ, "PYTHONPATH": str(REPO / "eval"), "PYTHONIOENCODING": "utf-8"}
    env.pop("RAGSNAP_TEST_PREPARE_EXIT_AFTER", None)
    command = [sys.executable, "-m", "ragsnap", *args]
    proc = subprocess.run(command, cwd=cwd, capture_output=True, text=True, env=env, timeout=300)
    return Run(proc.returncode, proc.stdout, proc.stderr)


def prepare(cwd: Path, url: str, *extra: str) -> Run:
    return ragsnap(
        cwd, "prepare", "--state", STATE, "--seed-docs", "seed-docs", "--base-url", url, *extra
    )


def live_check(cwd: Path, url: str, *extra: str) -> Run:
    return ragsnap(cwd, "live-check", "--base-url", url, "--state", STATE, *extra)


def read_state(cwd: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((cwd / STATE).read_text(encoding="utf-8"))
    return data


class Keyed(LoopbackServer):
    """``ragsnap serve``'s document contract on loopback: uploads keyed by source (an
    update keeps the id), idempotency keys answered again, delete by source, a health
    and a similarity search listing every document.

    ``integers``: ids and revisions are JSON integers. ``bom``: every answer starts
    with a UTF-8 byte order mark. ``shape(method, path, answer)`` may replace an
    answer's bytes (a test's malformed answer)."""

    methods = ("GET", "POST", "DELETE")

    def __init__(self, *, integers: bool = False, bom: bool = False) -> None:
        self.integers = integers
        self.bom = bom
        self.records: dict[str, dict[str, Any]] = {}
        self.receipts: dict[str, dict[str, Any]] = {}
        self.shape: Callable[[str, str, bytes], bytes] | None = None
        self.uploads = 0
        self._next = 1940
        self._state = threading.Lock()
        super().__init__()

    def answer(self, request: BaseHTTPRequestHandler, path: str) -> Any:
        query = parse_qs(urlsplit(request.path).query)
        if request.command == "GET" and path == "/api/documents":
            return {"complete": True, "documents": list(self.records.values())}
        if request.command == "GET" and path == "/api/health":
            return {"status": "ok"}
        if request.command == "GET":  # the similarity search: every document
            top = int(query.get("topK", ["5"])[0])
            return {
                "results": [
                    {"rank": rank, "chunkId": f"{s}#0", "source": s, "text": s}
                    for rank, s in enumerate(sorted(self.records)[:top], 1)
                ]
            }
        if request.command == "DELETE":
            gone = self.records.pop(query["source"][0], None)
            return {"removed": gone is not None}
        body = json.loads(request.rfile.read(int(request.headers["Content-Length"])))
        key = request.headers.get("Idempotency-Key")
        if key is not None and key in self.receipts:
            return {**self.receipts[key], "replayed": True}
        self.uploads += 1
        match = re.search(r"^source: (\S+)$", body["content"], re.MULTILINE)
        assert match is not None
        source = match.group(1)
        digest = hashlib.sha256(body["content"].encode()).hexdigest()
        known = self.records.get(source)
        if known is not None:
            server_id = known["id"]
        else:
            self._next += 1
            server_id = self._next if self.integers else f"id-{self._next}"
        record = {
            "source": source,
            "id": server_id,
            "revision": int(digest[:8], 16) if self.integers else digest,
            "embedding": {"kind": "fake"},
            "kbScope": SCOPE,
        }
        self.records[source] = record
        answer = {**record, "replayed": False}
        if key is not None:
            self.receipts[key] = answer
        return answer

    def handle(self, request: BaseHTTPRequestHandler) -> None:
        path = urlsplit(request.path).path
        with self._state:
            data = json.dumps(self.answer(request, path)).encode()
        if self.bom:
            data = BOM + data
        if self.shape is not None:
            data = self.shape(request.command, path, data)
        send(request, 200, data)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return write_project(tmp_path)


@pytest.fixture
def keyed() -> Iterator[Keyed]:
    with Keyed() as service:
        yield service


# --- revisions that are integers ----------------------------------------------------------


def test_a_service_with_integer_revisions_is_prepared_resumed_and_live_checked(
    project: Path,
) -> None:
    with Keyed(integers=True) as service:
        first = prepare(project, service.url)
        assert first.code == 0, first.out + first.err
        assert f"verified; {len(DOCS)} documents" in first.out
        state = read_state(project)
        record = state["documents"]["doc-tls"]
        assert record["revision"] == str(service.records["doc-tls"]["revision"])
        again = prepare(project, service.url)
        assert again.code == 0, again.out + again.err  # was: "changed revision ... 1944"
        assert f"0 uploaded, {len(DOCS)} skipped, {len(DOCS)} verified" in again.out
        checked = live_check(project, service.url)
    assert checked.code == 0, checked.out + checked.err
    report = json.loads((project / "reports" / "live-post-reindex.json").read_text("utf-8"))
    assert report["service"]["verdict"] == "valid"
    assert report["service"]["before"]["documents"] == len(DOCS)


# --- answers as real services send them ---------------------------------------------------


def test_a_byte_order_mark_before_every_answer_is_accepted(project: Path) -> None:
    with Keyed(bom=True) as service:
        run = prepare(project, service.url)
        checked = live_check(project, service.url)
    assert run.code == 0, run.out + run.err
    assert checked.code == 0, checked.out + checked.err


def nested(depth: int) -> bytes:
    return b'{"documents": ' + b"[" * depth + b"]" * depth + b"}"


@pytest.mark.parametrize("command", ["prepare", "live-check"])
def test_an_answer_nested_thousands_deep_is_exit_2_naming_the_endpoint(
    project: Path, keyed: Keyed, command: str
) -> None:
    assert prepare(project, keyed.url).code == 0

    def shape(method: str, path: str, data: bytes) -> bytes:
        return nested(100_000) if (method, path) == ("GET", "/api/documents") else data

    keyed.shape = shape
    run = prepare(project, keyed.url) if command == "prepare" else live_check(project, keyed.url)
    assert run.code == 2, run.out + run.err  # was 3: RecursionError
    assert "BackendError" in run.err and "Traceback" not in run.err
    assert f"GET {keyed.url}/api/documents" in run.err
    assert "nests JSON 100001 levels deep" in run.err


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("kbScope", ["a", "b"], "a list, not a string"),
        ("revision", {"n": 1}, "an object, not a string or an integer"),
        ("id", True, "a boolean, not a string or an integer"),
        ("source", 7, "a number, not a string"),
    ],
)
@pytest.mark.parametrize("command", ["prepare", "live-check"])
def test_a_malformed_listed_record_is_exit_2_naming_the_endpoint_and_field(
    project: Path, keyed: Keyed, command: str, field: str, value: Any, expected: str
) -> None:
    assert prepare(project, keyed.url).code == 0

    def shape(method: str, path: str, data: bytes) -> bytes:
        if (method, path) != ("GET", "/api/documents"):
            return data
        answer = json.loads(data)
        answer["documents"][1][field] = value
        return json.dumps(answer).encode()

    keyed.shape = shape
    run = prepare(project, keyed.url) if command == "prepare" else live_check(project, keyed.url)
    assert run.code == 2, run.out + run.err  # a kbScope list was exit 3 (unhashable)
    assert "Traceback" not in run.err
    assert f"GET {keyed.url}/api/documents: `documents[1].{field}` is {expected}" in run.err
    assert f"http.documents.fields.{field}" in run.err


def test_a_malformed_upload_answer_is_exit_2_naming_the_endpoint(
    project: Path, keyed: Keyed
) -> None:
    def shape(method: str, path: str, data: bytes) -> bytes:
        answer = json.loads(data)
        if method == "POST":
            answer["revision"] = [1, 2]
        return json.dumps(answer).encode()

    keyed.shape = shape
    run = prepare(project, keyed.url)
    assert run.code == 2, run.out + run.err
    assert f"POST {keyed.url}/api/documents: `revision` is a list" in run.err


# --- the state ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("counters", "pointer"),
    [
        ("tampered", "/counters"),
        ({"total": []}, "/counters/total"),
        ({"total": {"requests": "12"}}, "/counters/total/requests"),
        ({"lastRun": {"uploads": -3}}, "/counters/lastRun/uploads"),
    ],
)
def test_a_tampered_counters_field_is_exit_2_naming_the_state_and_field(
    project: Path, keyed: Keyed, counters: Any, pointer: str
) -> None:
    assert prepare(project, keyed.url).code == 0
    state = read_state(project)
    state["counters"] = counters
    (project / STATE).write_text(json.dumps(state), encoding="utf-8")
    run = prepare(project, keyed.url)
    assert run.code == 2, run.out + run.err  # was 3: AttributeError / TypeError
    assert f"InputError: {STATE} at {pointer}:" in run.err
    assert "--reset-state" in run.err


def test_max_requests_1_on_a_saved_state_makes_progress(project: Path, keyed: Keyed) -> None:
    assert prepare(project, keyed.url, "--max-requests", "1").code == 2
    assert len(read_state(project)["documents"]) == 1
    for n in range(2, len(DOCS) + 1):  # each run: the resume check, then one upload
        run = prepare(project, keyed.url, "--max-requests", "1")
        assert run.code == 2 and "BudgetExhausted" in run.err, run.out + run.err
        state = read_state(project)
        assert len(state["documents"]) == n  # was: stuck at 1
        assert state["counters"]["lastRun"] == {
            "requests": 2,
            "uploads": 1,
            "skipped": n - 1,
            "verified": 0,
        }
    done = prepare(project, keyed.url, "--max-requests", "1")
    assert done.code == 0, done.out + done.err
    assert f"0 uploaded, {len(DOCS)} skipped, {len(DOCS)} verified; 2 requests" in done.out


# --- a document the service lost ----------------------------------------------------------


@pytest.fixture
def served(serve: Callable[..., Served], project: Path) -> Served:
    """``ragsnap serve`` over a fresh knowledge base, prepared with the corpus."""
    server = serve("--kb", str(project / "kb.sqlite"), "--workers", "1", cwd=project)
    run = prepare(project, server.base_url)
    assert run.code == 0, run.out + run.err
    return server


def test_a_lost_document_is_recreated_under_a_new_key(served: Served, project: Path) -> None:
    before = read_state(project)["documents"]["doc-redis"]
    lose_document(served.base_url, "doc-redis")
    run = prepare(project, served.base_url)
    assert run.code == 0, run.out + run.err  # was: exit 2, "the service was reset or changed"
    assert "the service had lost 1 document(s)" in run.out and "doc-redis" in run.out
    assert f"1 uploaded, {len(DOCS) - 1} skipped, {len(DOCS)} verified" in run.out
    state = read_state(project)
    after = state["documents"]["doc-redis"]
    on_service = listed_documents(served.base_url)["doc-redis"]
    assert after["id"] == on_service["id"] != before["id"]
    assert after["attempt"] == 2 and state["attempts"] == {}
    assert (
        after["idempotencyKey"]
        == idempotency_key("doc-redis", before["contentSha256"], 2)
        != before["idempotencyKey"]
    )
    assert state["verification"]["passed"] is True
    checked = live_check(project, served.base_url)
    assert checked.code == 0, checked.out + checked.err


def test_reset_state_starts_over_without_replaying_old_answers(
    served: Served, project: Path
) -> None:
    lose_document(served.base_url, "doc-kafka")
    run = prepare(project, served.base_url, "--reset-state")
    assert run.code == 0, run.out + run.err  # was exit 1: the old receipt, a missing id
    state = read_state(project)
    assert isinstance(state["epoch"], str) and state["epoch"]
    assert state["verification"] == {"passed": True, "documents": len(DOCS), "failures": []}
    on_service = listed_documents(served.base_url)
    assert {s: r["id"] for s, r in state["documents"].items()} == {
        s: d["id"] for s, d in on_service.items()
    }


def test_a_service_that_lost_everything_is_still_refused(served: Served, project: Path) -> None:
    for source in DOCS:
        lose_document(served.base_url, source)
    run = prepare(project, served.base_url)
    assert run.code == 2 and "was reset or changed" in run.err, run.out + run.err
    assert listed_documents(served.base_url) == {}  # nothing rebuilt silently

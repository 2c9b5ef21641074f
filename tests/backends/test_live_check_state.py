"""``ragsnap live-check --state STATE`` against real ``ragsnap serve`` processes on
loopback with real state files from ``ragsnap prepare``: verification before and after
the lookups, the state's lock, the request budget; and the repeat check against a
loopback service whose ranking is unstable."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
import requests

from conftest import REPO, Run, Served, make_case, write_json, write_seed_docs
from ragsnap.cli import main
from ragsnap.io.locks import writer_lock
from ragsnap.io.schema import validate
from ragsnap.live import verification

from .conftest import LoopbackServer, send_json

SCOPE = "lc-eval"
TOPICS = {
    "doc-kafka": "Kafka consumer lag grows when the partition rebalance storm repeats.",
    "doc-redis": "Redis eviction policy allkeys-lru drops the least recently used keys.",
    "doc-nginx": "Nginx upstream timeout answers 504 after proxy_read_timeout seconds.",
    "doc-vacuum": "Postgres vacuum freeze prevents transaction id wraparound shutdowns.",
    "doc-budget": "Kubernetes pod disruption budget keeps minAvailable replicas running.",
    "doc-tls": "TLS certificate renewal runs ninety days before the certificate expires.",
}
CASES = {
    "kafka-lag": ("kafka consumer lag partition rebalance", "doc-kafka"),
    "redis-evict": ("redis eviction policy allkeys-lru keys", "doc-redis"),
    "tls-renew": ("tls certificate renewal ninety days", "doc-tls"),
}
STATE = "st/s.json"


def write_project(folder: Path) -> None:
    """Seed documents, golden cases and a private state folder in ``folder``."""
    write_seed_docs(folder / "seed-docs", TOPICS, SCOPE)
    cases = [
        make_case(case_id, query=query, expectedSources=[source], kbScope=SCOPE, topK=3)
        for case_id, (query, source) in CASES.items()
    ]
    write_json(folder / "cases" / "golden-cases.json", {"schemaVersion": 1, "cases": cases})
    (folder / "st").mkdir(mode=0o700)


def ragsnap(cwd: Path, *args: str) -> Run:
    env = {**os.environ, "PYTHONPATH": str(REPO / "eval"), "PYTHONIOENCODING": "utf-8"}
    command = [sys.executable, "-m", "ragsnap", *args]
    proc = subprocess.run(command, cwd=cwd, capture_output=True, text=True, env=env, timeout=300)
    return Run(proc.returncode, proc.stdout, proc.stderr)


def prepare(cwd: Path, url: str, *extra: str) -> Run:
    args = ("--state", STATE, "--seed-docs", "seed-docs", "--base-url", url)
    return ragsnap(cwd, "prepare", *args, *extra)


def live_check(cwd: Path, url: str, *extra: str) -> Run:
    return ragsnap(cwd, "live-check", "--base-url", url, *extra)


def reports(cwd: Path) -> tuple[dict[str, Any], str]:
    folder = cwd / "reports"
    data = json.loads((folder / "live-post-reindex.json").read_text(encoding="utf-8"))
    return data, (folder / "live-post-reindex.md").read_text(encoding="utf-8")


def closed_port_url() -> str:
    """A loopback URL nothing listens on: a request there would fail, not hang."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def upload(url: str, source: str, text: str) -> None:
    """A document uploaded straight to the service, past ``ragsnap prepare``."""
    content = f"---\nsource: {source}\ntitle: {source}\nkb_scope: {SCOPE}\n---\n{text}\n"
    requests.post(
        url + "/api/documents", json={"name": f"{source}.md", "content": content}, timeout=30
    ).raise_for_status()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    write_project(tmp_path)
    return tmp_path


@pytest.fixture
def served(serve: Callable[..., Served], project: Path) -> Served:
    server = serve("--kb", str(project / "kb.sqlite"), "--workers", "1", cwd=project)
    run = prepare(project, server.base_url)
    assert run.code == 0, run.out + run.err
    return server


@pytest.mark.slow
def test_prepared_service_verified_before_and_after(served: Served, project: Path) -> None:
    budget = 2 + 2 * len(CASES)  # two lists, each case searched twice: exactly enough
    run = live_check(
        project, served.base_url, "--state", STATE, "--repeat-check", "--max-requests", str(budget)
    )
    assert run.code == 0, run.out + run.err
    assert "service verification valid: before passed, after passed, repeat check 0 " in run.out
    assert f"{budget} request(s) (2 verification, {2 * len(CASES)} lookup(s))" in run.out
    report, markdown = reports(project)
    assert report["summary"]["verdict"] == "pass"
    assert report["summary"]["passed"] == len(CASES)
    service = report["service"]
    assert service["verdict"] == "valid" and service["failures"] == []
    n = len(TOPICS)
    assert service["before"] == service["after"] == {"passed": True, "documents": n, "failures": 0}
    assert service["repeatCheck"] == {"cases": len(CASES), "unstable": 0}
    assert service["counters"] == {
        "requests": budget,
        "verificationRequests": 2,
        "lookups": 2 * len(CASES),
        "maxRequests": budget,
    }
    assert service["state"]["path"] == STATE and service["state"]["documents"] == n
    assert "## Service verification (valid)" in markdown
    assert markdown.index("checked case(s) passed") < markdown.index("## Service verification")
    # the state is only read; its lock is free again
    assert (project / STATE).stat().st_mode & 0o777 == 0o600
    with writer_lock(project / STATE):
        pass

    # without --state (or the other new options) there is no service section at all
    plain = live_check(project, served.base_url)
    assert plain.code == 0, plain.out + plain.err
    report, markdown = reports(project)
    assert "service" not in report and "Service verification" not in markdown
    assert "service verification" not in plain.out

    # the privacy view keeps the section id-only and valid against its schema
    private = live_check(project, served.base_url, "--state", STATE, "--privacy")
    assert private.code == 0, private.out + private.err
    report, markdown = reports(project)
    validate(report, "private-live-report", "live-post-reindex.json", "live-check report")
    assert report["service"]["state"] == {
        "documents": n,
        "manifestSha256": service["state"]["manifestSha256"],
    }
    text = json.dumps(report) + markdown
    for secret in (*TOPICS, SCOPE, STATE, served.base_url):
        assert secret not in text, secret


def test_a_document_changed_before_the_check_invalidates_it(served: Served, project: Path) -> None:
    upload(served.base_url, "doc-redis", TOPICS["doc-redis"] + " Edited on the service.")
    run = live_check(project, served.base_url, "--state", STATE)
    assert run.code == 1, run.out + run.err
    assert "service verification INVALID: before FAILED, after FAILED" in run.out
    assert "  before changed-revision: changed revision: doc-redis is at " in run.out
    report, markdown = reports(project)
    service = report["service"]
    assert service["verdict"] == "invalid"
    assert service["failuresByKind"] == {"changed-revision": 2}
    assert [(f["phase"], f["kind"], f["source"]) for f in service["failures"]] == [
        ("before", "changed-revision", "doc-redis"),
        ("after", "changed-revision", "doc-redis"),
    ]
    state = json.loads((project / STATE).read_text(encoding="utf-8"))
    assert service["failures"][0]["documentId"] == state["documents"]["doc-redis"]["id"]
    assert service["before"] == {"passed": False, "documents": len(TOPICS) - 1, "failures": 1}
    # never averaged into the metrics: the cases keep their own counts
    assert report["summary"]["verdict"] == "invalid"
    assert report["summary"]["passed"] == len(CASES) and report["summary"]["failed"] == 0
    assert markdown.index("**INVALID: 2 verification failure(s)**") < markdown.index(
        "checked case(s) passed"
    )
    assert "changed revision: doc-redis" in markdown

    private = live_check(project, served.base_url, "--state", STATE, "--privacy")
    assert private.code == 1
    report, markdown = reports(project)
    validate(report, "private-live-report", "live-post-reindex.json", "live-check report")
    first = report["service"]["failures"][0]
    assert (
        first["kind"] == "changed-revision"
        and first["documentId"] == state["documents"]["doc-redis"]["id"]
    )
    assert "doc-redis" not in json.dumps(report) + markdown


def test_a_record_added_during_the_run_is_caught_after_and_the_lock_is_held(
    served: Served,
    project: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Between the lookups and the final verification a stray record appears on the
    service, and a ``prepare`` on the same state is refused, naming this process."""
    real = verification.ServiceVerifier.verify
    refused: list[Run] = []

    def verify(self: verification.ServiceVerifier, service: Any, phase: str) -> None:
        if phase == "after":
            upload(served.base_url, "stranger", "Not a seed document at all.")
            refused.append(prepare(project, served.base_url))
        real(self, service, phase)

    monkeypatch.setattr(verification.ServiceVerifier, "verify", verify)
    monkeypatch.chdir(project)
    code = main(["live-check", "--base-url", served.base_url, "--state", STATE])
    out = capsys.readouterr().out
    assert code == 1, out
    (other,) = refused
    assert other.code == 2 and "KnowledgeBaseBusy" in other.err
    assert f"pid {os.getpid()} (ragsnap live-check" in other.err
    report, _ = reports(project)
    service = report["service"]
    assert service["before"]["passed"] is True
    assert service["after"] == {"passed": False, "documents": len(TOPICS), "failures": 1}
    (failure,) = service["failures"]
    assert (failure["phase"], failure["kind"], failure["source"]) == (
        "after",
        "unexpected",
        "stranger",
    )
    assert failure["documentId"]  # the stray record's server id
    assert "after unexpected: unexpected: stranger is in kb_scope" in out


def test_a_second_process_on_the_same_state_is_refused_before_any_request(
    served: Served, project: Path
) -> None:
    nowhere = closed_port_url()  # a request would be a ServiceUnreachable, not a busy lock
    with writer_lock(project / STATE, "ragsnap prepare (the test)"):
        run = live_check(project, nowhere, "--state", STATE)
    assert run.code == 2, run.out + run.err
    assert "KnowledgeBaseBusy" in run.err and f"pid {os.getpid()}" in run.err
    assert not (project / "reports").exists()


def test_max_requests_too_small_exits_2_before_sending(served: Served, project: Path) -> None:
    nowhere = closed_port_url()
    run = live_check(project, nowhere, "--state", STATE, "--max-requests", str(1 + len(CASES)))
    assert run.code == 2, run.out + run.err
    assert "BudgetExhausted" in run.err and "nothing was sent" in run.err
    assert f"needs {2 + len(CASES)} requests" in run.err
    assert f"--max-requests {2 + len(CASES)} or more" in run.err
    assert "Traceback" not in run.err
    assert not (project / "reports").exists()
    with writer_lock(project / STATE):  # released
        pass


def test_an_unfinished_preparation_is_a_failure(
    serve: Callable[..., Served], project: Path
) -> None:
    server = serve("--kb", str(project / "kb.sqlite"), "--workers", "1", cwd=project)
    assert prepare(project, server.base_url, "--max-requests", "2").code == 2
    run = live_check(project, server.base_url, "--state", STATE)
    assert run.code == 1, run.out + run.err
    service = reports(project)[0]["service"]
    assert service["failuresByKind"] == {"incomplete-state": 1}
    assert service["before"]["documents"] == 2 and service["after"]["passed"] is True


class Wobbly(LoopbackServer):
    """A loopback service whose similarity search swaps its first two results on every
    other call (the document list never changes)."""

    methods = ("GET",)

    def __init__(self) -> None:
        self.calls = 0
        super().__init__()

    def handle(self, request: BaseHTTPRequestHandler) -> None:
        if request.path.startswith("/api/documents"):
            send_json(request, 200, {"complete": True, "documents": []})
            return
        self.calls += 1
        sources = ["doc-kafka", "doc-redis", "doc-tls"]
        if self.calls % 2 == 0:
            sources[:2] = sources[1::-1]
        results = [
            {"rank": rank, "chunkId": f"{s}#0", "source": s} for rank, s in enumerate(sources, 1)
        ]
        send_json(request, 200, {"results": results})


def test_repeat_check_fails_an_unstable_ranking(project: Path) -> None:
    wobbly = Wobbly()
    try:
        run = live_check(project, wobbly.url, "--case", "kafka-lag", "--repeat-check")
    finally:
        wobbly.close()
    assert run.code == 1, run.out + run.err
    assert wobbly.calls == 2
    assert "  lookups unstable-ranking: case kafka-lag: the repeated search differs" in run.out
    report, markdown = reports(project)
    assert report["summary"]["passed"] == 1 and report["summary"]["verdict"] == "invalid"
    service = report["service"]
    assert (service["state"], service["before"], service["after"]) == (None, None, None)
    assert service["repeatCheck"] == {"cases": 1, "unstable": 1}
    (failure,) = service["failures"]
    assert (failure["phase"], failure["kind"], failure["caseId"]) == (
        "lookups",
        "unstable-ranking",
        "kafka-lag",
    )
    assert "doc-kafka#0, doc-redis#0, doc-tls#0 then doc-redis#0, doc-kafka#0" in failure["message"]
    assert "**INVALID: 1 verification failure(s)**" in markdown

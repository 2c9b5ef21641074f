"""Budgets per request over HTTP (``http.budgets``, ``--max-records``, ``--max-bytes``):
QilbeeDB's "up to 10000 source records and up to 67108864 serialized bytes" per request.

A request over a budget is refused before it is sent (the services below count what
they receive); an answer over one is a ``BackendError``; a trial's plan records the
budgets and pins them. The services are real loopback servers; the trials run as real
processes.
"""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from conftest import run_cli
from ragsnap.errors import BackendError, UsageError
from ragsnap.io.httpclient import HttpClient
from ragsnap.kb.backends.http import HttpMapping, HttpService

from .conftest import LoopbackServer, send_json
from .test_http_methods import MethodService, project, service, trial

__all__ = ["project", "service"]  # the fixtures, shared with test_http_methods


class Similar(LoopbackServer):
    """A similarity search answering ``answered`` results whatever topK asks; it
    records every request it receives (path and body size)."""

    def __init__(self, answered: int = 3) -> None:
        self.answered = answered
        self.received: list[tuple[str, int]] = []
        super().__init__()

    def handle(self, request: BaseHTTPRequestHandler) -> None:
        length = int(request.headers.get("Content-Length") or 0)
        request.rfile.read(length)
        self.received.append((request.path, length))
        results = [{"source": f"doc-{i}", "rank": i} for i in range(1, self.answered + 1)]
        send_json(request, 200, {"results": results})


# --- the trial over a service -------------------------------------------------------------


def test_the_plan_records_the_budgets_and_pins_them(service: MethodService, project: Path) -> None:
    wrote, _ = trial(
        service, project, "--max-records", "50", "--max-bytes", "100000",
        "--write-plan", "plan.json",
    )  # fmt: skip
    assert wrote.code == 0, wrote.out + wrote.err
    plan = json.loads((project / "plan.json").read_text(encoding="utf-8"))
    assert plan["plan"]["backend"]["budgets"] == {"records": 50, "bytes": 100000}
    same, report = trial(
        service, project, "--max-records", "50", "--max-bytes", "100000", "--plan", "plan.json"
    )
    assert same.code == 0, same.out + same.err
    assert report["plan"]["backend"]["budgets"] == {"records": 50, "bytes": 100000}
    markdown = (project / "reports" / "trial.md").read_text(encoding="utf-8")
    assert "Budgets per request: 50 records, 100000 bytes." in markdown
    planned, report = trial(service, project, "--plan", "plan.json")  # the plan's budgets
    assert planned.code == 0, planned.out + planned.err
    assert report["plan"]["backend"]["budgets"] == {"records": 50, "bytes": 100000}
    other, _ = trial(service, project, "--plan", "plan.json", "--max-records", "60")
    assert other.code == 2
    assert "does not match this run: /backend/budgets: " in other.err, other.err


def test_a_depth_over_the_record_budget_is_refused_before_any_lookup(
    service: MethodService, project: Path
) -> None:
    run, report = trial(service, project, "--depth", "3", "--max-records", "2")
    assert run.code == 2, run.out + run.err
    assert (
        "UsageError: --depth 3 asks the service for 3 records per lookup, more than its "
        "budget per request (2 records); lower --depth" in run.err
    ), run.err
    assert "--max-records" in run.err
    assert service.bodies == [] and report == {}  # nothing sent, nothing written


def test_a_case_top_k_over_the_configured_record_budget_is_refused(
    service: MethodService, project: Path
) -> None:
    config = project / "ragsnap.yaml"
    config.write_text(
        config.read_text(encoding="utf-8").replace("http:\n", "http:\n  budgets: {records: 1}\n"),
        encoding="utf-8",
    )
    run, _ = trial(service, project, "--write-plan", "plan.json")
    assert run.code == 2, run.out + run.err
    assert "case pool-size asks the service for topK 2 records" in run.err, run.err
    assert "(1 records); lower the case's topK" in run.err
    assert service.bodies == [] and not (project / "plan.json").exists()


def test_an_answer_with_more_records_than_the_budget_is_a_service_error(
    service: MethodService, project: Path
) -> None:
    service.ignore_top_k = True  # 3 blocks for topK 2
    run, _ = trial(service, project, "--max-records", "2", "--methods", "keyword")
    assert run.code == 2, run.out + run.err
    assert "BackendError: case " in run.err
    assert "the service answered 3 evidence blocks, more than the budget per request " in run.err
    assert "(2 records, http.budgets.records in " in run.err and "honours topK" in run.err
    ok, _ = trial(service, project, "--max-records", "3", "--methods", "keyword")
    assert ok.code == 0, ok.out + ok.err


def test_an_answer_over_the_byte_budget_is_a_service_error(
    service: MethodService, project: Path
) -> None:
    service.padding = 8000
    run, _ = trial(service, project, "--max-bytes", "4096", "--methods", "keyword")
    assert run.code == 2, run.out + run.err
    assert "BackendError: case " in run.err
    assert "the answer is larger than 4 KiB (4,096 bytes), the byte budget per request " in (
        run.err
    )
    assert "--max-bytes); reading stopped there" in run.err
    ok, _ = trial(service, project, "--max-bytes", "20000", "--methods", "keyword")
    assert ok.code == 0, ok.out + ok.err


def test_the_budget_flags_are_refused_for_the_embedded_trial(project: Path) -> None:
    run = run_cli("trial", "--cases", "cases.json", "--max-records", "5", cwd=project)
    assert run.code == 2
    assert "--max-records is for --backend http" in run.err, run.err


# --- the service and the client -------------------------------------------------------------


def test_a_search_over_the_record_budget_is_not_sent() -> None:
    with Similar() as srv, HttpService(HttpMapping(max_records=5), base_url=srv.url) as svc:
        with pytest.raises(UsageError) as refused:
            svc.similar("q", top_k=6, kb_scope=None)
        assert srv.received == []
        message = str(refused.value)
        assert f"GET {srv.url}/api/search/similar: topK 6 asks for more records" in message
        assert "(5 records, http.budgets.records in ragsnap.yaml, or --max-records)" in message
        _, items = svc.similar("q", top_k=5, kb_scope=None)
        assert len(items) == 3 and len(srv.received) == 1


def test_a_search_answering_more_records_than_the_budget_is_a_backend_error() -> None:
    with (
        Similar(answered=4) as srv,
        HttpService(HttpMapping(max_records=3), base_url=srv.url) as svc,
        pytest.raises(BackendError, match="answered 4 results, more than the budget"),
    ):
        svc.similar("q", top_k=2, kb_scope=None)


def test_a_request_body_over_the_byte_budget_is_not_sent() -> None:
    body: dict[str, Any] = {"content": "x" * 2000}
    with Similar() as srv:
        client = HttpClient(srv.url, max_bytes=2000, retries=0)
        with pytest.raises(UsageError) as refused:
            client.post_json("/api/documents", body)
        assert srv.received == []
        assert "the request body is 2,015 bytes, more than the byte budget per request " in str(
            refused.value
        )
        body["content"] = "x" * 1985  # exactly 2000 bytes: sent
        client.post_json("/api/documents", body)
        assert srv.received == [("/api/documents", 2000)]
        client.close()

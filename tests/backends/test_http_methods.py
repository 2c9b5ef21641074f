"""Methods on a live service: ``http.methods``, ``snapshot --method`` and ``trial --backend http``.

A small Python service on loopback ranks three chunks two ways, chosen by the
``mode`` field of the lookup body: ``keyword`` puts the expected chunk first,
``fuzzy`` puts it last. The commands run as real processes, as a user runs them.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from conftest import Run, run_cli
from ragsnap.io.schema import validate

from .conftest import LoopbackServer, send_json

CHUNKS = [
    {"chunkId": "pool#1", "source": "pool", "text": "maximumPoolSize is 20"},
    {"chunkId": "cache#1", "source": "cache", "text": "TTL jitter avoids an avalanche"},
    {"chunkId": "queue#1", "source": "queue", "text": "reconsume later retries"},
]
MAPPING = """\
http:
  corpusRevision: revision
  lookup: {contextPack: null, rerankTrace: null}
  methods:
    keyword: {mode: keyword}
    fuzzy: {mode: fuzzy, alpha: 0.5}
"""


class MethodService(LoopbackServer):
    """``ragsnap serve``'s contract, the ranking chosen by the body's ``mode``."""

    def __init__(self, revision: str = "rev-7") -> None:
        self.revision = revision
        #: answer every chunk whatever topK asks (a service that ignores it)
        self.ignore_top_k = False
        #: bytes of padding beside each lookup answer's lookupResult
        self.padding = 0
        self.bodies: list[dict[str, Any]] = []
        self.guard = threading.Lock()
        super().__init__()

    def handle(self, request: BaseHTTPRequestHandler) -> None:
        if request.path == "/api/health":
            send_json(request, 200, {"status": "ok", "revision": self.revision})
            return
        length = int(request.headers.get("Content-Length") or 0)
        body = json.loads(request.rfile.read(length))
        with self.guard:
            self.bodies.append(body)
        mode = body.get("mode", "keyword")
        order = CHUNKS if mode == "keyword" else list(reversed(CHUNKS))
        blocks = [
            {**chunk, "rank": rank, "score": round(1 - rank / 10, 2)}
            for rank, chunk in enumerate(order if self.ignore_top_k else order[: body["topK"]], 1)
        ]
        attempt = {"name": "filtered", "hitCount": len(blocks), "latencyMs": 1.5}
        result = {
            "evidenceBlocks": blocks,
            "retrievalTrace": {
                "attempts": [attempt],
                "selectedAttempt": "filtered",
                "fallbackReasons": [],
                "evidenceStatus": "sufficient",
            },
        }
        send_json(request, 200, {"lookupResult": result, "padding": "x" * self.padding})


@pytest.fixture
def service() -> Any:
    with MethodService() as srv:
        yield srv


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project: the mapping, and two cases whose expected chunk is pool#1 (no no-answer
    case: a fake service's method fields are under test, so it opts out of the coverage
    rule)."""
    (tmp_path / "ragsnap.yaml").write_text(
        "scoring:\n  noAnswerCoverage: warning\n" + MAPPING, encoding="utf-8"
    )
    case = {
        "expectedSources": ["pool"],
        "expectedKeywords": ["maximumPoolSize"],
        "minHitLevel": "strong",
        "language": "en",
        "category": "database",
        "judgments": [{"chunkId": "pool#1", "grade": 3}, {"chunkId": "cache#1", "grade": 0}],
    }
    cases = {
        "schemaVersion": 1,
        "defaults": {"kbScope": "ops", "topK": 2},
        "cases": [
            {"id": "pool-size", "query": "pool size", "split": "dev", **case},
            {"id": "pool-max", "query": "maximum pool", "split": "test", **case},
        ],
    }
    (tmp_path / "cases.json").write_text(json.dumps(cases), encoding="utf-8")
    return tmp_path


def trial(service: MethodService, project: Path, *args: str) -> tuple[Run, dict[str, Any]]:
    run = run_cli(
        "trial", "--backend", "http", "--base-url", service.url, "--cases", "cases.json",
        *args, cwd=project,
    )  # fmt: skip
    path = project / "reports" / "trial.json"
    return run, json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


def test_a_trial_compares_the_mapped_methods_on_the_service(
    service: MethodService, project: Path
) -> None:
    run, report = trial(service, project, "--depth", "3", "--repetitions", "2")
    assert run.code == 0, run.out + run.err
    validate(report, "trial-report", "trial.json", "trial report")
    assert f"Service: http at {service.url}, corpus revision rev-7" in run.out
    assert "Determinism: 3 passes identical" in run.out  # the traces' latencyMs left out
    assert report["service"] == {
        "backend": "http",
        "baseUrl": service.url,
        "corpusRevision": "rev-7",
    }
    assert report["plan"]["backend"] == {
        "name": "http",
        "corpusRevision": "rev-7",
        "budgets": {"records": 10000, "bytes": 67108864},  # QilbeeDB's trial budgets
    }
    assert set(report["plan"]["inputs"]) == {"cases", "judgments"}  # no corpus: the service's
    assert report["plan"]["inputs"]["cases"] == report["cases"]["sha256"]
    assert report["plan"]["methods"] == [
        {"name": "keyword", "request": {"mode": "keyword"}},
        {"name": "fuzzy", "request": {"mode": "fuzzy", "alpha": 0.5}},
    ]
    assert report["corpus"] == {"documents": None, "chunks": None, "sha256": None}
    # the two methods rank differently, and the report says so
    mrr = {n: m["summary"]["metrics"]["mrr@10"]["mean"] for n, m in report["methods"].items()}
    assert mrr == {"keyword": 1.0, "fuzzy": pytest.approx(1 / 3)}
    hits = {n: r["hitLevel"] for n, r in report["caseResults"][0]["methods"].items()}
    assert hits["keyword"] == "strong" and hits["fuzzy"] != "strong"
    # every request carried its method's fields, asked for topK = depth
    modes = {(b["mode"], b.get("alpha")) for b in service.bodies}
    assert modes == {("keyword", None), ("fuzzy", 0.5)}
    # (warm-up + 2 measured + the resource pass) x 2 methods x 2 cases
    assert len(service.bodies) == 4 * 2 * 2
    resources = report["timing"]["resources"]
    assert {n: r["lookups"] for n, r in resources.items()} == {"keyword": 2, "fuzzy": 2}
    assert {b["topK"] for b in service.bodies} == {3}
    latency = report["timing"]["latency"]
    assert latency["keyword"]["count"] == 4 and latency["fuzzy"]["p95Ms"] is not None
    markdown = (project / "reports" / "trial.md").read_text(encoding="utf-8")
    assert f"Service: http at {service.url}, corpus revision `rev-7`" in markdown


def test_the_privacy_view_leaves_the_base_url_out(service: MethodService, project: Path) -> None:
    run, report = trial(service, project, "--privacy", "--methods", "fuzzy")
    assert run.code == 0, run.out + run.err
    validate(report, "private-trial-report", "trial.json", "trial report")
    assert report["service"] == {"backend": "http", "corpusRevision": "rev-7"}
    assert service.url not in json.dumps(report)


def test_a_pinned_plan_holds_the_corpus_revision_and_its_backend(
    service: MethodService, project: Path
) -> None:
    wrote, _ = trial(service, project, "--write-plan", "plan.json")
    assert wrote.code == 0, wrote.out + wrote.err
    again, report = trial(service, project, "--plan", "plan.json")
    assert again.code == 0, again.out + again.err
    assert sorted(report["methods"]) == ["fuzzy", "keyword"]
    service.revision = "rev-8"  # the service was re-indexed
    moved, _ = trial(service, project, "--plan", "plan.json")
    assert moved.code == 2
    assert "plan.json at /plan: does not match this run: /backend/corpusRevision: " in moved.err
    assert "rev-7 -> rev-8" in moved.err
    embedded = run_cli("trial", "--cases", "cases.json", "--plan", "plan.json", cwd=project)
    assert embedded.code == 2
    assert "plan.json at /plan/backend: was written for a trial over the http backend" in (
        embedded.err
    )
    assert "run it with --backend http" in embedded.err


def test_methods_the_mapping_does_not_name_are_refused(
    service: MethodService, project: Path
) -> None:
    given, _ = trial(service, project, "--methods", "keyword,bm25")
    assert given.code == 2
    assert "--methods names bm25, which http.methods in ragsnap.yaml does not map" in given.err
    assert "use one of keyword, fuzzy" in given.err
    with (project / "ragsnap.yaml").open("a", encoding="utf-8") as config:
        config.write("trial: {methods: [keyword, hybrid]}\n")
    configured, _ = trial(service, project)
    assert configured.code == 2
    assert "ragsnap.yaml at /trial/methods/1: trial.methods names hybrid" in configured.err
    assert not service.bodies  # refused before any lookup


def test_a_method_field_the_request_already_sends_is_refused(
    service: MethodService, project: Path
) -> None:
    (project / "ragsnap.yaml").write_text(MAPPING + "    broken: {topK: 50}\n", encoding="utf-8")
    run, _ = trial(service, project)
    assert run.code == 2
    assert "ragsnap.yaml at /http/methods/broken/topK" in run.err
    assert "http.lookup.request.topK" in run.err


def test_snapshot_method_sends_its_fields_and_records_them(
    service: MethodService, project: Path
) -> None:
    args = ("snapshot", "--backend", "http", "--base-url", service.url, "--cases", "cases.json")
    run = run_cli(*args, "--method", "keyword", cwd=project)
    assert run.code == 0, run.out + run.err
    assert {(b["mode"], b["topK"]) for b in service.bodies} == {("keyword", 2)}
    fixture = json.loads((project / "fixtures" / "pool-size.json").read_text("utf-8"))
    assert fixture["generator"]["method"] == "keyword"
    assert fixture["generator"]["settings"] == {"request": {"mode": "keyword"}}
    manifest = json.loads((project / "fixtures" / "_manifest.json").read_text("utf-8"))
    (capture,) = manifest["captures"].values()
    assert capture["settings"] == {
        "backend": "http",
        "method": "keyword",
        "method.request": {"mode": "keyword"},
    }
    same = run_cli(*args, "--method", "keyword", "--check", cwd=project)
    assert same.code == 0, same.out + same.err
    other = run_cli(*args, "--method", "fuzzy", "--check", cwd=project)
    assert other.code == 1  # captured under another method: the fixtures would change
    assert "2 would change" in other.out
    assert service.bodies[-1]["alpha"] == 0.5
    plain = run_cli(*args, "--fixtures", "plain", cwd=project)
    assert plain.code == 0, plain.out + plain.err
    assert "mode" not in service.bodies[-1]  # no --method: the service's own default
    unknown = run_cli(*args, "--method", "bm25", cwd=project)
    assert unknown.code == 2
    assert "method 'bm25' is not in http.methods of ragsnap.yaml" in unknown.err
    assert "use one of keyword, fuzzy" in unknown.err

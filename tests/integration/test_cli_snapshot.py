"""``ragsnap snapshot`` driven as a user would: real KB files, real ``ragsnap serve`` processes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
import requests

from backends.conftest import LoopbackServer, send_json
from conftest import REPO, Run, Served, make_fixture, run_cli

PINNED = "2026-11-30T00:00:00Z"  # the committed fixtures were taken with this pin
CASES = REPO / "cases" / "golden-cases.json"
SEED_DOCS = REPO / "seed-docs"


def seed_kb(root: Path, docs: Path = SEED_DOCS) -> Path:
    kb = root / "kb.sqlite"
    run = run_cli("seed", "--kb", str(kb), "--seed-docs", str(docs), cwd=root)
    assert run.code == 0, run.err
    return kb


def snapshot(root: Path, *args: str) -> Run:
    return run_cli("snapshot", "--cases", str(CASES), *args, cwd=root)


def fixture_paths(folder: Path) -> list[Path]:
    """The fixture files of ``folder``: every ``*.json`` but the manifest."""
    return [p for p in sorted(folder.glob("*.json")) if p.name != "_manifest.json"]


def files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in fixture_paths(folder)}


def without_generator(folder: Path) -> dict[str, Any]:
    out = {}
    for path in fixture_paths(folder):
        data = json.loads(path.read_text(encoding="utf-8"))
        del data["generator"], data["retrievedAt"]
        for attempt in data["lookupResult"]["retrievalTrace"]["attempts"]:
            attempt["latencyMs"] = None
        out[path.name] = data
    return out


def test_committed_fixtures_are_what_the_embedded_kb_returns(tmp_path: Path) -> None:
    """The repo's fixtures are a real snapshot: a change to the pipeline that moves any
    of them fails here until `ragsnap seed && ragsnap snapshot` is rerun and committed."""
    kb = seed_kb(tmp_path)
    run = snapshot(tmp_path, "--kb", str(kb), "--fixtures", str(REPO / "fixtures"), "--check")
    assert run.code == 0, run.out + run.err
    assert "0 would change, 0 new, 30 unchanged" in run.out
    assert "fixtures are up to date" in run.out
    for path in fixture_paths(REPO / "fixtures"):
        data = json.loads(path.read_text(encoding="utf-8"))
        assert data["generator"]["backend"] == "embedded"
        assert data["generator"]["embedder"]["kind"] == "hashing"


@pytest.mark.slow
def test_snapshot_writes_fixtures_then_scores_and_reruns_write_nothing(tmp_path: Path) -> None:
    kb = seed_kb(tmp_path)
    out = tmp_path / "fx"
    run = snapshot(tmp_path, "--kb", str(kb), "--fixtures", str(out), "--retrieved-at", PINNED)
    assert run.code == 0, run.out + run.err  # the repo's failures are all knownFailure
    assert "30 new" in run.out and "wrote 30 fixture(s)" in run.out
    assert (
        "30 cases: 19 passed, 11 expected failures (knownFailure), 0 failed" in run.out
    )  # the scorer ran
    assert (tmp_path / "reports" / "current.json").is_file()
    first = files(out)
    assert len(first) == 30
    assert json.loads(first["db-err-4031-order-repository.json"])["retrievedAt"] == PINNED
    assert first == files(REPO / "fixtures")  # same KB, same pinned time: the committed bytes

    mtimes = {p.name: p.stat().st_mtime_ns for p in out.iterdir()}
    again = snapshot(tmp_path, "--kb", str(kb), "--fixtures", str(out), "--skip-eval")
    assert again.code == 0
    assert "0 changed, 0 new, 30 unchanged" in again.out
    assert "wrote 0 fixture(s)" in again.out
    assert files(out) == first  # unchanged fixtures keep their retrievedAt: no diff
    assert {p.name: p.stat().st_mtime_ns for p in out.iterdir()} == mtimes


@pytest.mark.slow
def test_changes_are_summarised_per_case_and_check_writes_nothing(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    shutil.copytree(SEED_DOCS, docs)
    kb = seed_kb(tmp_path, docs)
    out = tmp_path / "fx"
    base = ("--kb", str(kb), "--fixtures", str(out), "--skip-eval")
    assert snapshot(tmp_path, *base, "--retrieved-at", PINNED).code == 0
    before = files(out)

    (docs / "mysql-connection-pool.md").unlink()  # the ERR-4031 answer leaves the KB
    assert run_cli("seed", "--kb", str(kb), "--seed-docs", str(docs), cwd=tmp_path).code == 0
    check = snapshot(tmp_path, *base, "--check", "--case", "db-err-4031-order-repository")
    assert check.code == 1, check.out + check.err
    assert "1 would change" in check.out
    line = next(x for x in check.out.splitlines() if "db-err-4031-order-repository:" in x)
    assert "lost mysql-connection-pool" in line
    assert "fixtures are out of date" in check.out
    assert files(out) == before  # --check wrote nothing

    run = snapshot(tmp_path, *base, "--case", "db-err-4031-order-repository")
    assert run.code == 0
    assert "1 changed, 0 new, 0 unchanged" in run.out
    after = files(out)
    changed = [name for name in after if after[name] != before[name]]
    assert changed == ["db-err-4031-order-repository.json"]  # --case touched only its file


def test_orphans_are_listed_and_pruned(tmp_path: Path) -> None:
    kb = seed_kb(tmp_path)
    out = tmp_path / "fx"
    out.mkdir()
    (out / "retired-case.json").write_text(json.dumps(make_fixture("retired-case")), "utf-8")
    (out / "notes.json").write_text("{}", encoding="utf-8")  # not a fixture: never deleted
    base = (
        "--kb",
        str(kb),
        "--fixtures",
        str(out),
        "--skip-eval",
        "--case",
        "obs-log-retention-days",
    )
    run = snapshot(tmp_path, *base)
    assert run.code == 0
    assert "orphaned fixtures (no case; --prune deletes them): retired-case.json" in run.out
    assert f"not a fixture, left alone (in {out}, named by no case): notes.json" in run.out
    assert (out / "retired-case.json").exists()
    both = snapshot(tmp_path, *base, "--check", "--prune")
    assert both.code == 2 and "pick one" in both.err
    pruned = snapshot(tmp_path, *base, "--prune")
    assert pruned.code == 0 and "(deleted): retired-case.json" in pruned.out
    assert sorted(p.name for p in out.iterdir()) == [
        "_manifest.json",
        "notes.json",
        "obs-log-retention-days.json",
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--case", "no-such-case"), "--case no-such-case: no such case"),
        (("--retrieved-at", "yesterday"), "is not an ISO 8601 time"),
        (("--retrieved-at", "2026-07-06"), "needs a date, a time and a zone"),
        (("--base-url", "http://127.0.0.1:1"), "--base-url is for --backend http"),
        (("--token-env", "RAG_TOKEN"), "--token-file and --token-env are for --backend http"),
        (("--backend", "http"), "--kb is for a local knowledge base"),
    ],
)
def test_bad_usage_exits_2_and_writes_nothing(
    tmp_path: Path, args: tuple[str, ...], message: str
) -> None:
    kb = seed_kb(tmp_path)
    run = snapshot(tmp_path, "--kb", str(kb), "--fixtures", str(tmp_path / "fx"), *args)
    assert run.code == 2
    assert message in run.err
    assert not (tmp_path / "fx").exists()


def test_no_knowledge_base_exits_2_with_the_next_step(tmp_path: Path) -> None:
    run = snapshot(tmp_path, "--kb", str(tmp_path / "none.sqlite"), "--fixtures", "fx")
    assert run.code == 2
    assert "run `ragsnap seed` first" in run.err
    assert not (tmp_path / "fx").exists()


@pytest.mark.slow
def test_http_fixtures_are_the_same_bytes_at_any_concurrency_and_worker_count(
    tmp_path: Path, serve: Callable[..., Served]
) -> None:
    """Concurrency and serve's worker processes change how fast, never what is written."""
    kb = seed_kb(tmp_path)
    two = serve("--kb", str(kb), "--workers", "2", cwd=tmp_path)
    one = serve("--kb", str(kb), "--workers", "1", cwd=tmp_path)
    assert "chunks); 2 workers;" in two.banner and "chunks); 1 worker;" in one.banner
    written = {}
    for server, concurrency in ((two, "1"), (two, "8"), (one, "8")):
        out = tmp_path / f"fx-{server.base_url.rsplit(':', 1)[1]}-c{concurrency}"
        run = snapshot(
            tmp_path, "--backend", "http", "--base-url", server.base_url, "--fixtures",
            str(out), "--retrieved-at", PINNED, "--concurrency", concurrency, "--skip-eval",
        )  # fmt: skip
        assert run.code == 0, run.out + run.err
        assert "30 new" in run.out
        written[out.name] = files(out)
    first, *others = written.values()
    assert len(first) == 30
    assert all(other == first for other in others)


@pytest.mark.slow
def test_http_snapshot_equals_the_embedded_one(
    tmp_path: Path, serve: Callable[..., Served]
) -> None:
    """The issue's acceptance loop: `ragsnap serve` as a real process, seeded through its
    upload endpoint, snapshotted through the http backend, gives the in-process fixtures
    (apart from the generator block); live-check passes, and fails once the index is empty."""
    server = serve("--kb", str(tmp_path / "served.sqlite"), cwd=tmp_path)
    seeded = run_cli(
        "seed", "--backend", "http", "--base-url", server.base_url, "--seed-docs",
        str(SEED_DOCS), cwd=tmp_path,
    )  # fmt: skip
    assert seeded.code == 0, seeded.err
    assert "18 added, 0 updated, 0 unchanged, 0 removed" in seeded.out
    reseeded = run_cli(
        "seed", "--backend", "http", "--base-url", server.base_url, "--seed-docs",
        str(SEED_DOCS), cwd=tmp_path,
    )  # fmt: skip
    assert "0 added, 0 updated, 18 unchanged, 0 removed" in reseeded.out

    over_http = tmp_path / "http"
    run = snapshot(
        tmp_path, "--backend", "http", "--base-url", server.base_url, "--fixtures",
        str(over_http), "--retrieved-at", PINNED, "--concurrency", "4", "--skip-eval",
    )  # fmt: skip
    assert run.code == 0, run.out + run.err
    assert "30 new" in run.out
    first = files(over_http)
    again = snapshot(
        tmp_path, "--backend", "http", "--base-url", server.base_url, "--fixtures",
        str(over_http), "--retrieved-at", PINNED, "--skip-eval",
    )  # fmt: skip
    assert "0 changed, 0 new, 30 unchanged" in again.out
    assert "wrote 0 fixture(s)" in again.out  # the service's latencies are not recorded
    assert files(over_http) == first
    generator = json.loads((over_http / "obs-log-retention-days.json").read_text())["generator"]
    assert generator["backend"] == "http"
    assert generator["pipelineVersion"] == "ragsnap-lookup/6"
    assert generator["embedder"]["kind"] == "hashing"
    # the service vouches for the settings it ran with: the same as the in-process pipeline
    committed = json.loads((REPO / "fixtures" / "obs-log-retention-days.json").read_text())
    assert generator["method"] == committed["generator"]["method"] == "hybrid+rerank"
    assert generator["settings"] == committed["generator"]["settings"]

    local = tmp_path / "local"
    kb = seed_kb(tmp_path)
    assert snapshot(tmp_path, "--kb", str(kb), "--fixtures", str(local), "--skip-eval").code == 0
    assert without_generator(over_http) == without_generator(local)
    assert without_generator(local) == without_generator(REPO / "fixtures")

    live = (
        "--base-url",
        server.base_url,
        "--cases",
        str(CASES),
        "--case",
        "obs-log-retention-days",
    )
    ok = run_cli("live-check", *live, cwd=tmp_path)
    assert ok.code == 0, ok.out + ok.err

    listing = requests.get(f"{server.base_url}/api/documents", timeout=30).json()["documents"]
    for doc in listing:
        gone = requests.delete(
            f"{server.base_url}/api/documents", params={"source": doc["source"]}, timeout=30
        )
        assert gone.json()["removed"] is True
    empty = run_cli("live-check", *live, cwd=tmp_path)
    assert empty.code == 1, empty.out + empty.err
    report = json.loads((tmp_path / "reports" / "live-post-reindex.json").read_text())
    assert report["summary"]["allEmpty"] is True


@pytest.mark.slow
def test_seed_over_http_removes_only_documents_of_the_seeded_scopes(
    tmp_path: Path, serve: Callable[..., Served]
) -> None:
    server = serve("--kb", str(tmp_path / "served.sqlite"), cwd=tmp_path)
    docs = tmp_path / "docs"
    shutil.copytree(SEED_DOCS, docs)
    up = ("seed", "--backend", "http", "--base-url", server.base_url, "--seed-docs", str(docs))
    assert run_cli(*up, cwd=tmp_path).code == 0
    legacy = "---\nsource: legacy-no-scope\n---\nA document without kb_scope.\n"
    requests.post(
        f"{server.base_url}/api/documents",
        json={"name": "legacy.md", "content": legacy},
        timeout=30,
    ).raise_for_status()
    (docs / "kafka-topic-naming.md").unlink()  # a rag-eval document
    (docs / "billing-db-pool-tuning.md").unlink()  # the only other-team document
    run = run_cli(*up, cwd=tmp_path)
    assert run.code == 0, run.err
    assert "removed: kafka-topic-naming" in run.out
    stored = {
        d["source"]
        for d in requests.get(f"{server.base_url}/api/documents", timeout=30).json()["documents"]
    }
    assert "kafka-topic-naming" not in stored
    # other-team is no longer a seeded scope and legacy has none: both are left alone
    assert {"billing-db-pool-tuning", "legacy-no-scope"} <= stored


def test_a_service_that_fails_half_way_leaves_the_fixtures_alone(
    tmp_path: Path, serve: Callable[..., Served]
) -> None:
    kb = seed_kb(tmp_path)
    out = tmp_path / "fx"
    assert snapshot(tmp_path, "--kb", str(kb), "--fixtures", str(out), "--skip-eval").code == 0
    before = files(out)

    class Flaky(LoopbackServer):
        """Forwards to a real ragsnap serve, then refuses (4xx) after five lookups."""

        def __init__(self, upstream: str) -> None:
            self.upstream = upstream
            self.lookups = 0
            super().__init__()

        def handle(self, request: BaseHTTPRequestHandler) -> None:
            length = int(request.headers.get("Content-Length") or 0)
            body = request.rfile.read(length) if length else None
            if request.command == "POST":
                self.lookups += 1
                if self.lookups > 5:
                    send_json(request, 400, {"error": "index is being rebuilt"})
                    return
            answer = requests.request(
                request.command, self.upstream + request.path, data=body, timeout=30,
                headers={"Content-Type": "application/json"},
            )  # fmt: skip
            send_json(request, answer.status_code, answer.json())

    server = serve("--kb", str(kb), cwd=tmp_path)
    with Flaky(server.base_url) as flaky:
        run = snapshot(
            tmp_path, "--backend", "http", "--base-url", flaky.url, "--fixtures", str(out),
            "--concurrency", "1", "--skip-eval",
        )  # fmt: skip
    assert run.code == 2, run.out + run.err
    assert "HTTP 400" in run.err and "index is being rebuilt" in run.err
    assert files(out) == before  # nothing written: every lookup must succeed first


SPRING_CONFIG = """\
http:
  lookup:
    path: /rag/lookup
    request: {query: question, topK: k, kbScope: scope}
    result: data
    evidenceBlocks: evidence
    block: {chunkId: id, source: docSource, text: content, breadcrumb: meta.breadcrumb}
    contextPack: null
    retrievalTrace: trace
    rerankTrace: null
  health: null
  pipelineVersion: spring-lookup-7
"""


class SpringService(LoopbackServer):
    """A service with its own JSON shape, as a Java/Spring lookup tool might answer."""

    methods = ("POST",)

    def __init__(self, missing_source: bool = False) -> None:
        self.missing_source = missing_source
        self.bodies: list[dict[str, Any]] = []
        super().__init__()

    def handle(self, request: BaseHTTPRequestHandler) -> None:
        body = json.loads(request.rfile.read(int(request.headers["Content-Length"])))
        self.bodies.append(body)
        block: dict[str, Any] = {
            "id": "kafka-consumer-lag#2",
            "content": "KafkaConsumerLagHigh fires when the lag stays above 10,000.",
            "meta": {"breadcrumb": "Messaging > Kafka > Consumer Lag"},
        }
        if not self.missing_source:
            block["docSource"] = "kafka-consumer-lag"
        trace = {
            "attempts": [{"name": "filtered", "hitCount": 1}],
            "selectedAttempt": "filtered",
            "fallbackReasons": [],
            "evidenceStatus": "sufficient",
        }
        send_json(request, 200, {"code": 0, "data": {"evidence": [block], "trace": trace}})


def test_a_spring_shaped_service_is_read_through_the_mapping(tmp_path: Path) -> None:
    config = tmp_path / "ragsnap.yaml"
    config.write_text(SPRING_CONFIG, encoding="utf-8")
    out = tmp_path / "fx"
    args = ("--backend", "http", "--fixtures", str(out), "--case", "mq-kafka-lag-alert-decoy")
    with SpringService() as service:
        run = snapshot(tmp_path, *args, "--base-url", service.url, "--skip-eval")
        assert run.code == 0, run.out + run.err
        cases = json.loads(CASES.read_text(encoding="utf-8"))["cases"]
        query = next(c["query"] for c in cases if c["id"] == "mq-kafka-lag-alert-decoy")
        assert service.bodies == [{"question": query, "k": 5, "scope": "rag-eval"}]
    fixture = json.loads((out / "mq-kafka-lag-alert-decoy.json").read_text(encoding="utf-8"))
    assert fixture["generator"] == {
        "backend": "http",
        "embedder": None,
        "pipelineVersion": "spring-lookup-7",
        "kbScope": "rag-eval",
        "topK": 5,
    }
    (block,) = fixture["lookupResult"]["evidenceBlocks"]
    assert block["source"] == "kafka-consumer-lag" and block["rank"] == 1
    assert block["breadcrumb"] == "Messaging > Kafka > Consumer Lag"
    # the parts mapped to null are not reported: left out of the fixture
    assert set(fixture["lookupResult"]) == {"evidenceBlocks", "retrievalTrace"}
    assert fixture["lookupResult"]["retrievalTrace"]["selectedAttempt"] == "filtered"

    with SpringService(missing_source=True) as broken:
        bad = snapshot(tmp_path, *args, "--base-url", broken.url, "--skip-eval")
    assert bad.code == 2
    assert "data.evidence[0].docSource" in bad.err
    assert "mapped by http.lookup.block.source in ragsnap.yaml" in bad.err


OWN_TRACE_CONFIG = SPRING_CONFIG.replace(
    "    retrievalTrace: trace\n",
    """\
    retrievalTrace: trace
    trace:
      retrievalTrace: {selectedAttempt: strategy, fallbackReasons: fallbacks,
                       evidenceStatus: evidenceState, attempts: strategies, l0Hints: hints}
      l0Hints: {category: category, breadcrumbPrefix: pathPrefix}
      attempt: {name: label, hitCount: hits, topScore: bestScore, latencyMs: null}
""",
)


class OwnTraceService(SpringService):
    """The Spring-shaped service, its retrieval trace under its own names."""

    def __init__(self, hits: str = "hits") -> None:
        self.hits = hits
        super().__init__()

    def handle(self, request: BaseHTTPRequestHandler) -> None:
        self.bodies.append(json.loads(request.rfile.read(int(request.headers["Content-Length"]))))
        block = {"id": "kafka-consumer-lag#2", "docSource": "kafka-consumer-lag", "content": "lag"}
        trace = {
            "strategy": "filtered",
            "fallbacks": [],
            "evidenceState": "sufficient",
            "hints": {"category": "messaging", "pathPrefix": "Messaging > Kafka"},
            "strategies": [{"label": "filtered", self.hits: 1, "bestScore": 0.8, "tookMs": 4}],
        }
        send_json(request, 200, {"code": 0, "data": {"evidence": [block], "trace": trace}})


def test_a_service_keeps_its_own_trace_names_through_the_mapping(tmp_path: Path) -> None:
    config = tmp_path / "ragsnap.yaml"
    config.write_text(OWN_TRACE_CONFIG, encoding="utf-8")
    out = tmp_path / "fx"
    args = ("--backend", "http", "--fixtures", str(out), "--case", "mq-kafka-lag-alert-decoy")
    with OwnTraceService() as service:
        run = snapshot(tmp_path, *args, "--base-url", service.url, "--skip-eval", "--latency")
    assert run.code == 0, run.out + run.err
    fixture = json.loads((out / "mq-kafka-lag-alert-decoy.json").read_text(encoding="utf-8"))
    assert fixture["lookupResult"]["retrievalTrace"] == {
        "selectedAttempt": "filtered",
        "fallbackReasons": [],
        "evidenceStatus": "sufficient",
        "l0Hints": {"category": "messaging", "breadcrumbPrefix": "Messaging > Kafka"},
        "attempts": [{"name": "filtered", "hitCount": 1, "topScore": 0.8}],  # no latencyMs
    }

    with OwnTraceService(hits="hitTotal") as other:
        bad = snapshot(tmp_path, *args, "--base-url", other.url, "--skip-eval")
    assert bad.code == 2 and "Traceback" not in bad.err
    assert "`data.trace.strategies[0].hits` is missing" in bad.err
    assert "mapped by http.lookup.trace.attempt.hitCount in ragsnap.yaml" in bad.err


@pytest.mark.slow
def test_a_token_guarded_service_is_seeded_and_snapshotted_and_the_token_is_nowhere(
    tmp_path: Path, serve: Callable[..., Served]
) -> None:
    token = "rgs-3f9c1e7a-token-that-must-not-leak"
    env = {"RAGSNAP_TEST_SERVICE_TOKEN": token}
    server = serve(
        "--kb", str(tmp_path / "served.sqlite"), "--token-env", "RAGSNAP_TEST_SERVICE_TOKEN",
        cwd=tmp_path, env=env,
    )  # fmt: skip
    base = ("--backend", "http", "--base-url", server.base_url)
    refused = run_cli("seed", *base, "--seed-docs", str(SEED_DOCS), cwd=tmp_path)
    assert refused.code == 2 and "HTTP 401" in refused.err and "check the token" in refused.err

    def run_with_token(*args: str) -> Run:
        proc = subprocess.run(
            [sys.executable, "-m", "ragsnap", *args],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            env={**server.env, **env},
            timeout=300,
        )
        return Run(proc.returncode, proc.stdout, proc.stderr)

    guarded = ("--token-env", "RAGSNAP_TEST_SERVICE_TOKEN")
    seeded = run_with_token("seed", *base, *guarded, "--seed-docs", str(SEED_DOCS))
    assert seeded.code == 0, seeded.err
    snap = run_with_token(
        "snapshot", "--cases", str(CASES), *base, *guarded, "--fixtures", "fx",
        "--retrieved-at", PINNED,
    )  # fmt: skip
    assert snap.code == 0, snap.out + snap.err
    assert without_generator(tmp_path / "fx") == without_generator(REPO / "fixtures")
    out, err = server.stop()
    written = [p for p in tmp_path.rglob("*") if p.is_file() and p.suffix in (".json", ".md")]
    assert len(written) >= 31  # 30 fixtures and the two score reports
    for text in (seeded.out, seeded.err, snap.out, snap.err, out, err):
        assert token not in text
    for path in written:
        assert token not in path.read_text(encoding="utf-8"), path


def test_a_snapshot_of_a_few_cases_never_loads_the_compiled_kernels(tmp_path: Path) -> None:
    # 29 lookups save a few ms with numba; loading it costs 0.45 s or more. The size from
    # which a store told nothing compiles is lowered to 0: every store counts as large.
    pytest.importorskip("numba")
    kb = seed_kb(tmp_path)
    argv = ["snapshot", "--cases", str(CASES), "--kb", str(kb)]
    argv += ["--fixtures", str(REPO / "fixtures"), "--check"]
    code = (
        "import sys\n"
        "import ragsnap.kb.kernels as kernels\n"
        "kernels.COMPILED_MIN_ROWS = 0\n"
        "from ragsnap.cli import main\n"
        f"assert main({argv!r}) == 0\n"
        "print('numba' in sys.modules)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "eval"), *sys.path])}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip().splitlines()[-1] == "False"

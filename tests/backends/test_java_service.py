"""ragsnap against a real JVM: the reference Java service of ``tests/java-service/``.

The service (``RefService.java``: the JDK's ``com.sun.net.httpserver`` and
Debian's Jackson jars, no Maven) is compiled into a temporary folder once per
module and started per test on a free loopback port. It answers as a Spring
service does (a ``{code, message, data}`` envelope with HTTP 200, Jackson's
doubles, ``null`` and absent fields, chunked answers) and is read through ONE
mapping file, ``tests/java-service/ragsnap.yaml``, which docs/java.md (the Spring
page) shows verbatim. The commands run as real processes: ``seed``,
``snapshot``, ``score``, ``live-check`` and ``prepare`` with ``--backend http``.

Without ``javac``/``java`` or the Jackson jars (``RAGSNAP_JACKSON_JARS`` names
their folder; default ``/usr/share/java``) the tests skip on a workstation and
fail under ``CI=true``, where ``.ci/run`` installs ``openjdk-17-jdk-headless``
and ``libjackson2-databind-java``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import http.client
import json
import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

import pytest

from conftest import REPO, Run, run_cli
from ragsnap.config import load_config
from ragsnap.errors import BackendError, ServiceUnreachable
from ragsnap.io.schema import validate
from ragsnap.kb.backends.http import Envelope, HttpService
from ragsnap.live.preparation import idempotency_key

from .conftest import write_doc

# not in the fast suite: compiles and starts the reference Java service (a JDK)
pytestmark = pytest.mark.slow

JAVA_SERVICE = REPO / "tests" / "java-service"
SOURCE = JAVA_SERVICE / "src" / "RefService.java"
MAPPING = JAVA_SERVICE / "ragsnap.yaml"
SEED_DOCS = REPO / "seed-docs"
JARS = ("jackson-databind.jar", "jackson-core.jar", "jackson-annotations.jar")
TOKEN = "ref-service-token-5d1c9e"
TOKEN_ENV = "RAG_TOKEN"  # the mapping file's tokenEnv
#: golden cases of the repository that the service's term overlap answers: trace
#: expectations (filtered, a filtered-weak fallback, evidence status), doc ids,
#: breadcrumbs, Chinese queries, and expectations it cannot meet: context sources (no
#: context pack: not applicable) and a rerank top source (its rerank trace says
#: applied: false), skipped by the mapping file's scoring.skip
CASES = (
    "db-err-4031-order-repository",
    "db-payment-pool-near-duplicate",
    "cache-avalanche-prevention-zh",
    "cache-avalanche-db-hint-fallback-zh",
    "mq-reconsume-later-exact",
    "k8s-exit-137-oomkilled-rerank",
    "k8s-rolling-update-maxsurge",
)


def require_java() -> tuple[str, str, str]:
    """``javac``, ``java`` and the Jackson classpath; skip on a workstation without
    them, fail under ``CI=true`` (a skip there would hide that the JVM went untested)."""
    javac, java = shutil.which("javac"), shutil.which("java")
    folder = Path(os.environ.get("RAGSNAP_JACKSON_JARS", "/usr/share/java"))
    missing = [name for name in JARS if not (folder / name).is_file()]
    if javac is None or java is None or missing:
        what = "javac/java" if javac is None or java is None else ", ".join(missing)
        message = (
            f"{what} not found (jars looked up in {folder}, RAGSNAP_JACKSON_JARS); "
            "apt-get install openjdk-17-jdk-headless libjackson2-databind-java"
        )
        if os.environ.get("CI") == "true":
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    return javac, java, os.pathsep.join(str(folder / name) for name in JARS)


@dataclasses.dataclass(frozen=True)
class Build:
    java: str
    classpath: str


@pytest.fixture(scope="module")
def build(tmp_path_factory: pytest.TempPathFactory) -> Build:
    """RefService.java compiled into a temporary folder (once per module)."""
    javac, java, jars = require_java()
    out = tmp_path_factory.mktemp("java-service")
    done = subprocess.run(
        [javac, "-Xlint:all", "-Werror", "-cp", jars, "-d", str(out), str(SOURCE)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return Build(java, os.pathsep.join([str(out), jars]))


class JavaService:
    """The reference service running as a JVM on a free loopback port."""

    def __init__(self, build: Build, log: Path, **env: str):
        self.log = log  # stderr goes to a file: never a pipe nobody drains
        with log.open("wb") as stderr:  # the JVM keeps its own descriptor
            self.proc = self._start(build, stderr, env)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()  # printed once the socket listens
        match = re.search(r"http://127\.0\.0\.1:\d+", line)
        if match is None:
            self.proc.kill()
            self.proc.wait(timeout=30)
            raise AssertionError(f"the Java service did not start: {line!r} {self.errors()}")
        self.base_url = match.group(0)
        self.ready()

    @staticmethod
    def _start(build: Build, stderr: Any, env: dict[str, str]) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [
                build.java,
                "-XX:TieredStopAtLevel=1",  # starts faster; the service does little
                "-XX:+UseSerialGC",
                "-cp",
                build.classpath,
                "RefService",
            ],
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            env={**os.environ, "REF_PORT": "0", **env},
        )

    def ready(self) -> None:
        """Wait for the health endpoint (the socket listens already; this proves the
        handler answers)."""
        deadline = time.monotonic() + 30
        while True:
            try:
                status, _, _ = self.raw("GET", "/api/health")
                if status == 200:
                    return
            except OSError:
                pass
            if time.monotonic() > deadline:  # pragma: no cover - a hung JVM
                raise AssertionError("the Java service never answered /api/health")
            time.sleep(0.05)

    def errors(self) -> str:
        """What the JVM wrote to stderr."""
        return self.log.read_text(encoding="utf-8", errors="replace")

    def raw(
        self,
        method: str,
        path: str,
        body: Any = None,
        token: str | None = TOKEN,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, dict[str, str], bytes]:
        """One request as bytes on the wire: status, headers (lower-case names), body.
        ``token`` goes as a bearer token; ``headers`` are added as they are."""
        parts = urlsplit(self.base_url)
        conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=30)
        headers = {"Content-Type": "application/json", **(headers or {})}
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        try:
            data = None if body is None else json.dumps(body).encode()
            conn.request(method, path, body=data, headers=headers)
            answer = conn.getresponse()
            return answer.status, {k.lower(): v for k, v in answer.getheaders()}, answer.read()
        finally:
            conn.close()

    def fault(self, path: str, kind: str, **more: Any) -> None:
        """Arm a test fault on ``path`` (``html500``, ``code``, ``slow`` with ``ms``)."""
        status, _, _ = self.raw("PUT", "/__test__/fault", {"path": path, "kind": kind, **more})
        assert status == 200

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            self.proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:  # pragma: no cover - a hung JVM
            self.proc.kill()
            self.proc.communicate()


@pytest.fixture
def java(build: Build, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[JavaService]:
    """A fresh service (empty knowledge base, the token required, faults allowed);
    ``$RAG_TOKEN`` holds the token, as the mapping file's tokenEnv says."""
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    service = JavaService(build, tmp_path / "java.log", REF_TOKEN=TOKEN, REF_TEST_FAULTS="1")
    yield service
    service.stop()


def http_service(java: JavaService, **changes: Any) -> HttpService:
    """The mapping file's ``HttpService`` on ``java`` (``changes``: mapping fields)."""
    mapping = dataclasses.replace(load_config(MAPPING).http, **changes)
    return HttpService(mapping, base_url=java.base_url)


def cli(java: JavaService, command: str, *args: str, cwd: Path) -> Run:
    """``ragsnap COMMAND --config <the mapping file> --base-url <java> ARGS`` in ``cwd``."""
    return run_cli(command, "--config", str(MAPPING), "--base-url", java.base_url, *args, cwd=cwd)


def cases_file(folder: Path, ids: tuple[str, ...] = CASES) -> Path:
    """The repository's golden cases ``ids``, as a cases file in ``folder``."""
    data = json.loads((REPO / "cases" / "golden-cases.json").read_text(encoding="utf-8"))
    data["cases"] = [c for c in data["cases"] if c["id"] in ids]
    assert len(data["cases"]) == len(ids)
    path = folder / "golden-cases.json"
    path.write_text(json.dumps(data, ensure_ascii=False, indent=2), encoding="utf-8")
    return path


def seed(java: JavaService, cwd: Path, docs: Path = SEED_DOCS) -> Run:
    run = cli(java, "seed", "--backend", "http", "--seed-docs", str(docs), cwd=cwd)
    assert run.code == 0, run.out + run.err
    return run


# -- the mapping file and docs/java.md --------------------------------------------------


def readme_spring_block() -> str:
    """The YAML block of the docs' "Spring / Java services" page (docs/java.md)."""
    section = (REPO / "docs/java.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```yaml\n(.*?)```", section, re.DOTALL)
    assert blocks, "docs/java.md has no ```yaml block"
    block: str = blocks[0]
    return block


def test_readme_spring_section_is_the_mapping_file() -> None:
    assert readme_spring_block() == MAPPING.read_text(encoding="utf-8")


def test_mapping_file_reads_as_a_config() -> None:
    config = load_config(MAPPING)
    mapping = config.http
    assert mapping.envelope == Envelope(code="code", message="message", data="data", ok=(0,))
    assert mapping.lookup_result == "" and mapping.traces["rerankTrace"] == "rerank"
    assert mapping.trace is not None  # the service's own trace names
    assert mapping.trace.fields["retrievalTrace"]["selectedAttempt"] == "strategy"
    assert mapping.trace.fields["retrievalTrace"]["l0Hints"] is None
    assert mapping.trace.fields["rankedItem"]["lexicalRank"] == "keywordRank"
    assert mapping.document["source"] == "docSource"
    assert config.skip_expectations == ("rerankTopSource",)


# -- the commands, as a user runs them ----------------------------------------------------


def test_seed_snapshot_score_and_live_check(java: JavaService, tmp_path: Path) -> None:
    docs = tmp_path / "seed-docs"
    shutil.copytree(SEED_DOCS, docs)
    total = len(list(docs.glob("*.md")))
    first = seed(java, tmp_path, docs)
    assert first.out.startswith(f"seed: {total} added, 0 updated, 0 unchanged, 0 removed; ")
    again = seed(java, tmp_path, docs)
    assert again.out.startswith(f"seed: 0 added, 0 updated, {total} unchanged, 0 removed; ")
    (docs / "k8s-rolling-update.md").unlink()  # listed through the envelope, deleted
    gone = seed(java, tmp_path, docs)
    assert gone.out.startswith(f"seed: 0 added, 0 updated, {total - 1} unchanged, 1 removed; ")
    assert "  removed: k8s-rolling-update" in gone.out
    seed(java, tmp_path, docs=SEED_DOCS)  # back to the whole corpus
    shutil.copy(SEED_DOCS / "k8s-rolling-update.md", docs)  # the label check reads it

    cases = cases_file(tmp_path)
    snap = cli(
        java,
        "snapshot",
        "--backend",
        "http",
        "--cases",
        str(cases),
        "--fixtures",
        "fixtures",
        "--retrieved-at",
        "2026-12-01T00:00:00Z",
        cwd=tmp_path,
    )
    assert snap.code == 0, snap.out + snap.err
    assert f"{len(CASES)} new" in snap.out
    for case_id in CASES:
        fixture = json.loads((tmp_path / "fixtures" / f"{case_id}.json").read_text("utf-8"))
        validate(fixture, "fixture", case_id, "fixture")
        assert fixture["generator"]["backend"] == "http"
        assert fixture["generator"]["pipelineVersion"] == "java-ref/1"  # health, in its envelope
        result = fixture["lookupResult"]
        assert "contextPack" not in result  # mapped to null: not reported
        rerank = result["rerankTrace"]  # its own names, mapped by http.lookup.trace
        assert rerank["applied"] is False and rerank["reranker"] is None
        assert rerank["before"] == rerank["after"]
        assert [item["lexicalRank"] for item in rerank["after"]] == list(
            range(1, len(result["evidenceBlocks"]) + 1)
        )
        assert [item["chunkId"] for item in rerank["after"]] == [
            block["chunkId"] for block in result["evidenceBlocks"]
        ]
        trace = result["retrievalTrace"]
        assert set(trace) == {"selectedAttempt", "fallbackReasons", "evidenceStatus", "attempts"}
        for attempt in trace["attempts"]:
            assert set(attempt) == {"name", "filter", "hitCount", "topScore", "latencyMs"}
            assert attempt["filter"]["minScore"] == 0.0001  # Jackson wrote 1.0E-4
            assert attempt["latencyMs"] is None
    err_4031 = json.loads((tmp_path / "fixtures" / f"{CASES[0]}.json").read_text("utf-8"))
    top = err_4031["lookupResult"]["evidenceBlocks"][0]
    assert top["chunkId"] == "mysql-connection-pool#2"
    assert top["source"] == "mysql-connection-pool"
    assert top["docId"] == "doc-mysql-connection-pool"
    assert top["breadcrumb"] == "Database > MySQL > Connection Pool"
    assert top["metadata"]["kbScope"] == "rag-eval"
    assert top["rank"] == 1 and top["score"] == 0.75
    assert "ERR-4031" in top["text"]

    check = cli(
        java, "snapshot", "--backend", "http", "--cases", str(cases), "--check", cwd=tmp_path
    )
    assert check.code == 0, check.out + check.err
    assert f"{len(CASES)} unchanged" in check.out

    score = run_cli(
        "score",
        "--config",
        str(MAPPING),
        "--cases",
        str(cases),
        "--fixtures",
        "fixtures",
        "--json-report",
        "score.json",
        "--markdown-report",
        "score.md",
        cwd=tmp_path,
    )
    assert score.code == 0, score.out + score.err
    assert f"{len(CASES)} cases: {len(CASES)} passed, 0 failed" in score.out
    assert (
        "Not applicable in 2 case(s) (the fixture lacks what they read, neither passed nor "
        "failed): contextSources in 2 case(s) (no contextPack)" in score.out
    )
    assert "Not checked (scoring.skip): rerankTopSource in 3 case(s)" in score.out
    report = json.loads((tmp_path / "score.json").read_text(encoding="utf-8"))
    fallback = next(c for c in report["cases"] if c["id"] == "cache-avalanche-db-hint-fallback-zh")
    assert fallback["selectedAttempt"] == "unfiltered"
    assert fallback["fallbackReasons"] == ["filtered-weak"]

    live = cli(java, "live-check", "--cases", str(cases), cwd=tmp_path)
    assert live.code == 0, live.out + live.err
    assert f"{len(CASES)} passed, 0 failed (0 known), 0 skipped; 0 returned no results" in live.out
    live_report = json.loads(
        (tmp_path / "reports" / "live-post-reindex.json").read_text(encoding="utf-8")
    )
    reconsume = next(c for c in live_report["cases"] if c["caseId"] == "mq-reconsume-later-exact")
    assert reconsume["topResults"][0]["docId"] == "doc-rocketmq-retry-dlq"
    assert TOKEN not in json.dumps(live_report)


def test_prepare_with_idempotency_keys_resumes_and_verifies(
    java: JavaService, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state_dir = tmp_path / "state"
    state_dir.mkdir(mode=0o700)
    state = state_dir / "java.json"
    args = ("--backend", "http", "--seed-docs", str(SEED_DOCS), "--state", str(state))
    total = len(list(SEED_DOCS.glob("*.md")))

    with monkeypatch.context() as patch:
        patch.setenv("RAGSNAP_TEST_PREPARE_EXIT_AFTER", "5")
        crashed = cli(java, "prepare", *args, cwd=tmp_path)
    assert crashed.code == 137  # killed after 5 uploads, before any checkpoint
    assert not state.exists()
    with http_service(java) as service:
        before, _ = service.listing()
    assert len(before) == 5
    first_ids = {d["source"]: d["id"] for d in before}

    done = cli(java, "prepare", *args, cwd=tmp_path)
    assert done.code == 0, done.out + done.err
    assert done.out.startswith(f"prepare: verified; {total} documents on {java.base_url}: ")
    assert f"{total} uploaded, 0 skipped, {total} verified" in done.out
    saved = json.loads(state.read_text(encoding="utf-8"))
    assert saved["complete"] is True and saved["verification"]["passed"] is True
    with http_service(java) as service:
        listed, complete = service.listing()
    assert complete is True
    assert len(listed) == total  # the 5 resent with their keys were replayed, not doubled
    by_source = {d["source"]: d for d in listed}
    for source, record in saved["documents"].items():
        content = (SEED_DOCS / f"{source}.md").read_bytes()
        assert record["idempotencyKey"] == idempotency_key(
            source, hashlib.sha256(content).hexdigest()
        )
        assert record["id"] == by_source[source]["id"]
        assert record["revision"] == by_source[source]["revision"]
        assert record["embedding"] == "term-overlap/1"
        assert record["kbScope"] == by_source[source]["kbScope"]
    for source, first_id in first_ids.items():
        assert saved["documents"][source]["id"] == first_id

    again = cli(java, "prepare", *args, cwd=tmp_path)
    assert again.code == 0, again.out + again.err
    assert f"0 uploaded, {total} skipped, {total} verified; 2 requests" in again.out
    assert json.loads(state.read_text(encoding="utf-8"))["documents"] == saved["documents"]


def test_idempotency_key_replays_the_first_answer_and_refuses_another_document(
    java: JavaService, tmp_path: Path
) -> None:
    doc = write_doc(tmp_path, "kafka-keys", "## Keys\n\nPartition keys keep order.")
    other = write_doc(tmp_path / "o", "kafka-keys", "## Keys\n\nSomething else.")
    with http_service(java) as service:
        first = service.upload(doc.name, doc.read_text("utf-8"), "key-1")
        replay = service.upload(doc.name, doc.read_text("utf-8"), "key-1")
        with pytest.raises(BackendError) as info:
            service.upload(other.name, other.read_text("utf-8"), "key-1")
        listed, _ = service.listing()
    assert first["status"] == "added" and first["replayed"] is False
    assert replay["replayed"] is True
    assert service.stored(replay) == service.stored(first)
    assert [d["source"] for d in listed] == ["kafka-keys"]
    message = str(info.value)
    assert "code 40901" in message and "was used for another document" in message
    assert "POST " + java.base_url + "/api/documents" in message


# -- the wire format ---------------------------------------------------------------------


def test_answers_are_jackson_json_in_an_envelope_and_large_ones_chunked(
    java: JavaService, tmp_path: Path
) -> None:
    seed(java, tmp_path)
    body = {"question": "HikariCP pool size ERR-4031", "k": 10, "scope": "rag-eval"}
    status, headers, raw = java.raw("POST", "/rag/lookup", body)
    assert status == 200
    assert headers["content-type"] == "application/json;charset=UTF-8"
    assert headers.get("transfer-encoding") == "chunked" and "content-length" not in headers
    assert b'"minScore":1.0E-4' in raw  # Jackson's double
    answer = json.loads(raw)
    assert (answer["code"], answer["message"]) == (0, "ok")
    assert set(answer["data"]) == {"evidence", "trace", "rerank"}  # no context pack

    with http_service(java) as service:
        result = service.lookup(body["question"], kb_scope="rag-eval", top_k=10)
    blocks = result["evidenceBlocks"]
    assert len(blocks) == len(answer["data"]["evidence"]) > 5  # the whole chunked answer
    assert [b["chunkId"] for b in blocks] == [e["id"] for e in answer["data"]["evidence"]]
    trace = answer["data"]["trace"]  # under the service's own names
    assert result["retrievalTrace"]["selectedAttempt"] == trace["strategy"]
    assert result["retrievalTrace"]["fallbackReasons"] == trace["fallbacks"]
    assert result["retrievalTrace"]["evidenceStatus"] == trace["evidenceState"]
    attempts = result["retrievalTrace"]["attempts"]
    assert len(attempts) == len(trace["strategies"]) >= 1
    for attempt, strategy in zip(attempts, trace["strategies"], strict=True):
        assert strategy["elapsedMs"] >= 0  # a double of its own for each request
        assert attempt.pop("latencyMs") >= 0
        assert attempt == {
            "name": strategy["name"],
            "filter": strategy["criteria"],
            "hitCount": strategy["hits"],
            "topScore": strategy["bestScore"],
        }
    ranked = answer["data"]["rerank"]["ranked"]
    assert result["rerankTrace"]["after"] == [
        {
            "chunkId": item["id"],
            "source": item["docSource"],
            "score": item["similarity"],
            "lexicalRank": item["keywordRank"],
        }
        for item in ranked
    ]

    status, headers, raw = java.raw("GET", "/api/search/similar?query=kafka&topK=1")
    assert status == 200 and headers["content-length"] == str(len(raw))  # small: not chunked

    query = "kafka consumer lag alert threshold partitions rebalance retention policy"
    status, _, raw = java.raw(
        "GET", "/api/search/similar?" + urlencode({"query": query, "topK": 50})
    )
    printed = re.findall(rb'"score":([0-9.]+E-[0-9]+)', raw)
    assert status == 200 and printed  # weak hits: doubles in Jackson's E notation
    with http_service(java) as service:
        _, items = service.similar(query, top_k=50, kb_scope=None)
    scores = [item["score"] for item in items]
    assert [float(p) for p in printed] == [s for s in scores if s < 1e-3]


def test_null_and_absent_fields_are_read_as_such(java: JavaService, tmp_path: Path) -> None:
    bare = write_doc(tmp_path, "bare-notes", "## Zanzibar\n\nQuokka zanzibar notes.")
    with http_service(java) as service:
        service.upload(bare.name, bare.read_text("utf-8"))
        result = service.lookup("quokka zanzibar", kb_scope=None, top_k=5)
        _, items = service.similar("quokka zanzibar", top_k=5, kb_scope=None)
        generator = service.generator()
    _, _, raw = java.raw("POST", "/rag/lookup", {"question": "quokka zanzibar"})
    evidence = json.loads(raw)["data"]["evidence"][0]
    assert evidence["meta"]["breadcrumb"] is None and "docId" not in evidence  # on the wire
    (block,) = result["evidenceBlocks"]
    assert block["breadcrumb"] is None  # null: recorded as null
    assert "docId" not in block  # absent: left out
    assert block["title"] is None and block["metadata"]["kbScope"] is None
    assert result["retrievalTrace"]["selectedAttempt"] == "unfiltered"
    assert items == [
        {
            "rank": 1,
            "chunkId": "bare-notes#0",
            "source": "bare-notes",
            "breadcrumb": None,
            "score": 1.0,
        }
    ]
    fixture = {
        "schemaVersion": 1,
        "caseId": "bare",
        "query": "quokka zanzibar",
        "retrievedAt": "2026-12-01T00:00:00Z",
        "generator": {**generator, "kbScope": None, "topK": 5},
        "lookupResult": result,
    }
    validate(fixture, "fixture", "bare", "fixture")


# -- the failure shapes of a Java service -------------------------------------------------


def test_http_200_with_a_nonzero_code_is_an_error_naming_code_and_message(
    java: JavaService, tmp_path: Path
) -> None:
    with http_service(java) as service, pytest.raises(BackendError) as info:
        service.lookup("pool size", kb_scope=None, top_k=100)
    message = str(info.value)
    assert message.startswith(f"POST {java.base_url}/rag/lookup: the service answered code 40001")
    assert "k must be between 1 and 50, not 100" in message
    assert "an error inside an HTTP 200 answer" in message and str(MAPPING) in message

    java.fault("/api/search/similar", "code")
    live = cli(java, "live-check", "--cases", str(cases_file(tmp_path)), cwd=tmp_path)
    assert live.code == 2, live.out + live.err
    assert "code 50001: knowledge base is reindexing, try again later" in live.err
    assert "Traceback" not in live.err


def test_500_html_page_is_an_error_naming_the_status_and_not_json(
    java: JavaService, tmp_path: Path
) -> None:
    java.fault("/rag/lookup", "html500")
    with http_service(java, retries=0) as service, pytest.raises(BackendError) as info:
        service.lookup("pool size", kb_scope=None, top_k=5)
    message = str(info.value)
    assert message.startswith(f"POST {java.base_url}/rag/lookup: HTTP 500, an HTML page, not JSON")
    assert "Whitelabel Error Page" in message and "<" not in message
    assert "check the request and the service's logs" in message

    snap = cli(
        java, "snapshot", "--backend", "http", "--cases", str(cases_file(tmp_path)), cwd=tmp_path
    )
    assert snap.code == 2, snap.out + snap.err
    assert "HTTP 500, an HTML page, not JSON" in snap.err and "Traceback" not in snap.err


def test_401_json_body_is_an_error_naming_the_status_and_its_message(
    java: JavaService, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    status, headers, raw = java.raw("GET", "/api/documents", token="wrong-token")
    assert status == 401 and headers["content-type"] == "application/json;charset=UTF-8"
    assert json.loads(raw)["message"] == "invalid or missing API token"
    assert java.raw("GET", "/api/documents", token=None)[0] == 401
    assert java.raw("GET", "/api/documents", token=None, headers={"X-Api-Token": TOKEN})[0] == 200
    assert java.raw("GET", "/api/documents")[0] == 200  # Authorization: Bearer

    monkeypatch.setenv(TOKEN_ENV, "wrong-token")
    run = cli(java, "seed", "--backend", "http", "--seed-docs", str(SEED_DOCS), cwd=tmp_path)
    assert run.code == 2, run.out + run.err
    assert "HTTP 401 (code 40100): invalid or missing API token; check the token" in run.err
    assert "wrong-token" not in run.err


def test_slow_first_byte_within_the_timeout(java: JavaService, tmp_path: Path) -> None:
    seed(java, tmp_path)
    java.fault("/rag/lookup", "slow", ms=1500)
    started = time.monotonic()
    with http_service(java) as service:  # timeoutSeconds: 10
        result = service.lookup("HikariCP pool size", kb_scope="rag-eval", top_k=5)
    assert time.monotonic() - started >= 1.5
    assert result["evidenceBlocks"][0]["source"] == "mysql-connection-pool"

    # past the timeout: nothing arrived within it, so the service "cannot" answer
    # (httpclient's rule for a silent service), after one attempt (retries: 0)
    hasty = http_service(java, timeout=0.5, retries=0)
    with hasty, pytest.raises(ServiceUnreachable) as info:
        hasty.lookup("HikariCP pool size", kb_scope="rag-eval", top_k=5)
    assert "(ReadTimeout) after 1 attempt(s)" in str(info.value)


# -- methods on the service: snapshot --method and trial --backend http ---------------------


def test_a_two_method_trial_runs_on_the_service(java: JavaService, tmp_path: Path) -> None:
    seed(java, tmp_path)
    cases = cases_file(tmp_path)
    (tmp_path / "gates.yaml").write_text(
        "version: 1\ngates:\n"
        "  - {method: '*', measure: passRate, min: 0.1}\n"
        "  - {method: '*', measure: latencyP95Ms, max: 60000}\n",
        encoding="utf-8",
    )
    run = cli(
        java,
        "trial",
        "--backend",
        "http",
        "--cases",
        str(cases),
        "--repetitions",
        "2",
        "--depth",
        "20",
        "--gates",
        "gates.yaml",
        cwd=tmp_path,
    )
    assert run.code == 0, run.out + run.err
    assert f"Service: http at {java.base_url}, corpus revision not recorded" in run.out
    assert "Determinism: 3 passes identical" in run.out
    assert "Gates: 4 of 4 ran and passed" in run.out
    report = json.loads((tmp_path / "reports" / "trial.json").read_text(encoding="utf-8"))
    validate(report, "trial-report", "trial.json", "trial report")
    assert report["service"] == {
        "backend": "http",
        "baseUrl": java.base_url,
        "corpusRevision": None,  # the service's health reports none
    }
    assert report["plan"]["backend"] == {
        "name": "http",
        "corpusRevision": None,
        "budgets": {"records": 10000, "bytes": 67108864},
    }
    assert [m["name"] for m in report["plan"]["methods"]] == ["overlap", "body"]
    assert report["plan"]["methods"][1]["request"] == {"mode": "body"}
    assert sorted(report["methods"]) == ["body", "overlap"]
    for name in ("overlap", "body"):
        latency = report["timing"]["latency"][name]
        assert latency["count"] == 2 * len(CASES) and latency["p95Ms"] is not None
        assert report["methods"][name]["admitted"] is True
    assert report["determinism"] == {**report["determinism"], "checked": True, "identical": True}
    assert {g["method"] for g in report["gates"]} == {"overlap", "body"}
    assert all(g["ran"] and g["passed"] for g in report["gates"])
    assert TOKEN not in json.dumps(report)
    markdown = (tmp_path / "reports" / "trial.md").read_text(encoding="utf-8")
    assert f"Service: http at {java.base_url}, corpus revision not recorded" in markdown


def test_snapshot_method_sends_its_mode_and_records_it(java: JavaService, tmp_path: Path) -> None:
    seed(java, tmp_path)
    cases = cases_file(tmp_path, CASES[:2])
    args = ("snapshot", "--backend", "http", "--cases", str(cases), "--fixtures", "fixtures")
    body = cli(java, *args, "--method", "body", cwd=tmp_path)
    assert body.code == 0, body.out + body.err
    fixture = json.loads((tmp_path / "fixtures" / f"{CASES[0]}.json").read_text("utf-8"))
    assert fixture["generator"]["method"] == "body"
    assert fixture["generator"]["settings"] == {"request": {"mode": "body"}}
    manifest = (tmp_path / "fixtures" / "_manifest.json").read_text("utf-8")
    assert '"method.request": {\n' in manifest and '"mode": "body"' in manifest
    other = cli(java, *args, "--method", "overlap", "--check", cwd=tmp_path)
    assert other.code == 1, other.out + other.err  # captured under another method: stale
    unknown = cli(java, *args, "--method", "bm25", cwd=tmp_path)
    assert unknown.code == 2
    assert "method 'bm25' is not in http.methods" in unknown.err
    assert "use one of overlap, body" in unknown.err

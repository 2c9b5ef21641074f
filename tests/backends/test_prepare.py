"""``ragsnap prepare --backend http --state STATE`` against real ``ragsnap serve`` processes
on loopback, with real state files: locks, checkpoints, resume, verification, budgets;
and the service's idempotency keys, server ids and revisions it relies on."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import random
import re
import signal
import stat
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
import requests

from conftest import REPO, Run, Served
from ragsnap.cli import main
from ragsnap.io.locks import writer_lock
from ragsnap.kb.backends.sqlite import SqliteKnowledgeBase
from ragsnap.live.preparation import CHECKPOINT_EVERY, idempotency_key

from .conftest import LoopbackServer, send_json

DOCS = 70  # more than CHECKPOINT_EVERY: a mid-run checkpoint happens
SCOPE = "prep-eval"
EXIT_AFTER = "RAGSNAP_TEST_PREPARE_EXIT_AFTER"


def write_corpus(folder: Path, n: int = DOCS) -> Path:
    """``n`` small Markdown seed documents in ``folder``/seed-docs."""
    docs = folder / "seed-docs"
    docs.mkdir()
    for i in range(n):
        (docs / f"doc-{i:03d}.md").write_text(
            f"---\nsource: doc-{i:03d}\ntitle: Document {i}\nkb_scope: {SCOPE}\n---\n"
            f"# Document {i}\n\nThe zanzibar relay number {i} needs {i * 7} gigawatts.\n",
            encoding="utf-8",
        )
    return docs


def prepare(
    tmp: Path, url: str, *extra: str, env: dict[str, str] | None = None, state: str = "st/s.json"
) -> Run:
    """``ragsnap prepare`` as a real process in ``tmp``."""
    command = [
        sys.executable,
        "-m",
        "ragsnap",
        "prepare",
        "--backend",
        "http",
        "--state",
        state,
        "--seed-docs",
        "seed-docs",
        "--base-url",
        url,
        *extra,
    ]
    full = {k: v for k, v in os.environ.items() if k != EXIT_AFTER}
    full.update(PYTHONPATH=str(REPO / "eval"), PYTHONIOENCODING="utf-8", **(env or {}))
    proc = subprocess.run(command, cwd=tmp, capture_output=True, text=True, env=full, timeout=300)
    return Run(proc.returncode, proc.stdout, proc.stderr)


def listed(url: str) -> list[dict[str, Any]]:
    answer = requests.get(url + "/api/documents", timeout=30)
    answer.raise_for_status()
    docs: list[dict[str, Any]] = answer.json()["documents"]
    return docs


def read_state(tmp: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((tmp / "st" / "s.json").read_text(encoding="utf-8"))
    return data


@pytest.fixture
def project(tmp_path: Path) -> Path:
    write_corpus(tmp_path)
    (tmp_path / "st").mkdir(mode=0o700)
    return tmp_path


@pytest.fixture
def served(serve: Callable[..., Served], project: Path) -> Served:
    """``ragsnap serve`` over a fresh knowledge base of this test."""
    return serve("--kb", str(project / "kb.sqlite"), "--workers", "1", cwd=project)


def assert_complete(project: Path, url: str) -> dict[str, Any]:
    """The state holds every document, as the service does, once each."""
    state = read_state(project)
    docs = listed(url)
    sources = [d["source"] for d in docs]
    assert len(sources) == len(set(sources)) == DOCS
    ids = [d["id"] for d in docs]
    assert len(set(ids)) == DOCS and None not in ids
    assert state["complete"] is True
    assert state["verification"] == {"passed": True, "documents": DOCS, "failures": []}
    assert {s: r["id"] for s, r in state["documents"].items()} == {
        d["source"]: d["id"] for d in docs
    }
    assert {s: r["revision"] for s, r in state["documents"].items()} == {
        d["source"]: d["revision"] for d in docs
    }
    return state


# --- the service: idempotency keys, server ids, revisions --------------------------------


def test_idempotency_key_replays_the_first_answer_even_after_a_restart(
    serve: Callable[..., Served], project: Path
) -> None:
    kb = project / "kb.sqlite"
    server = serve("--kb", str(kb), "--workers", "1", cwd=project)
    url = server.base_url + "/api/documents"
    doc = (project / "seed-docs" / "doc-001.md").read_text(encoding="utf-8")
    body = {"name": "doc-001.md", "content": doc}
    first = requests.post(url, json=body, headers={"Idempotency-Key": "k-1"}, timeout=30).json()
    assert first["status"] == "added" and first["replayed"] is False
    assert first["id"] and first["revision"] and first["embedding"]["kind"]
    again = requests.post(url, json=body, headers={"Idempotency-Key": "k-1"}, timeout=30).json()
    assert again == {**first, "replayed": True}
    other = {"name": "doc-002.md", "content": doc.replace("doc-001", "doc-002")}
    reused = requests.post(url, json=other, headers={"Idempotency-Key": "k-1"}, timeout=30)
    assert reused.status_code == 409 and "another document" in reused.json()["error"]
    # without a key: the same document keeps its id (an update would too)
    plain = requests.post(url, json=body, timeout=30).json()
    assert plain["id"] == first["id"] and plain["status"] == "unchanged"
    server.stop()
    with SqliteKnowledgeBase(kb, create=False) as store:  # beside the documents, not in meta
        assert not [k for k in store.read_meta() if ":" in k]
        generation = store.read_meta()["generation"]
        receipt = json.loads(store.read_receipts(["receipt:k-1"])["receipt:k-1"])
        assert receipt["id"] == first["id"]
    restarted = serve("--kb", str(kb), "--workers", "1", cwd=project)
    url2 = restarted.base_url + "/api/documents"
    after = requests.post(url2, json=body, headers={"Idempotency-Key": "k-1"}, timeout=30).json()
    assert after == {**first, "replayed": True}
    unchanged = {"name": "doc-001.md", "content": doc}
    keyed = requests.post(url2, json=unchanged, headers={"Idempotency-Key": "k-2"}, timeout=30)
    assert keyed.json()["status"] == "unchanged" and keyed.json()["id"] == first["id"]
    with SqliteKnowledgeBase(kb, create=False) as store:  # a receipt alone: no new generation
        assert store.read_meta()["generation"] == generation
    (one,) = listed(restarted.base_url)
    assert one["id"] == first["id"] and one["revision"] == first["revision"]
    assert one["embedding"] == first["embedding"]
    gone = requests.delete(url2, params={"source": "doc-001"}, timeout=30).json()
    assert gone["removed"] is True
    fresh = requests.post(url2, json=body, timeout=30).json()
    assert fresh["id"] != first["id"]  # a delete ends an id


def test_bad_idempotency_key_is_a_422(served: Served, project: Path) -> None:
    doc = (project / "seed-docs" / "doc-001.md").read_text(encoding="utf-8")
    answer = requests.post(
        served.base_url + "/api/documents",
        json={"name": "doc-001.md", "content": doc},
        headers={"Idempotency-Key": "x" * 201},
        timeout=30,
    )
    assert answer.status_code == 422 and "Idempotency-Key" in answer.text


# --- prepare ------------------------------------------------------------------------------


@pytest.mark.slow
def test_prepare_then_resume_is_a_no_op(served: Served, project: Path) -> None:
    run = prepare(project, served.base_url)
    assert run.code == 0, run.out + run.err
    assert f"verified; {DOCS} documents" in run.out
    assert f"{DOCS} uploaded, 0 skipped, {DOCS} verified; {DOCS + 1} requests" in run.out
    assert "2 checkpoint(s)" in run.out  # one at 64 documents, one at the end
    state_file = project / "st" / "s.json"
    assert stat.S_IMODE(state_file.stat().st_mode) == 0o600
    assert (project / "st" / ".s.json.lock").exists()
    state = assert_complete(project, served.base_url)
    record = state["documents"]["doc-007"]
    content = (project / "seed-docs" / "doc-007.md").read_bytes()
    digest = hashlib.sha256(content).hexdigest()
    assert record["contentSha256"] == digest
    assert record["idempotencyKey"] == idempotency_key("doc-007", digest)
    assert record["kbScope"] == SCOPE and record["embedding"]["kind"]
    assert state["counters"]["lastRun"] == {
        "requests": DOCS + 1,
        "uploads": DOCS,
        "skipped": 0,
        "verified": DOCS,
    }
    again = prepare(project, served.base_url)
    assert again.code == 0, again.out + again.err
    assert f"0 uploaded, {DOCS} skipped, {DOCS} verified; 2 requests" in again.out
    after = assert_complete(project, served.base_url)
    assert after["documents"] == state["documents"]
    assert after["counters"]["total"]["uploads"] == DOCS
    assert after["counters"]["total"]["requests"] == DOCS + 3
    assert stat.S_IMODE(state_file.stat().st_mode) == 0o600


@pytest.mark.slow
def test_checkpoint_at_64_then_killed_then_resumed(served: Served, project: Path) -> None:
    run = prepare(project, served.base_url, env={EXIT_AFTER: str(CHECKPOINT_EVERY + 3)})
    assert run.code == 137, run.out + run.err
    state = read_state(project)
    assert len(state["documents"]) == CHECKPOINT_EVERY  # the 3 after it were not saved
    assert state["complete"] is False
    on_service = {d["source"]: d["id"] for d in listed(served.base_url)}
    assert len(on_service) == CHECKPOINT_EVERY + 3
    resumed = prepare(project, served.base_url)
    assert resumed.code == 0, resumed.out + resumed.err
    assert f"{DOCS - CHECKPOINT_EVERY} uploaded, {CHECKPOINT_EVERY} skipped" in resumed.out
    final = assert_complete(project, served.base_url)
    for source, server_id in on_service.items():  # the unsaved ones came back, not anew
        assert final["documents"][source]["id"] == server_id


@pytest.mark.slow
def test_killed_at_seeded_random_points_then_resumed(served: Served, project: Path) -> None:
    """Four hook exits after seeded random numbers of uploads, one real SIGKILL after a
    seeded random delay, then a plain run: one record per document, a complete state,
    and every id the service gave out before a crash kept."""
    rng = random.Random(19)
    first_ids: dict[str, str] = {}
    for n in sorted(rng.sample(range(1, 40), 4)):
        run = prepare(project, served.base_url, env={EXIT_AFTER: str(n)})
        assert run.code == 137, run.out + run.err
        for doc in listed(served.base_url):
            first_ids.setdefault(doc["source"], doc["id"])
    env = {**os.environ, "PYTHONPATH": str(REPO / "eval")}
    env.pop(EXIT_AFTER, None)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ragsnap",
            "prepare",
            "--state",
            "st/s.json",
            "--seed-docs",
            "seed-docs",
            "--base-url",
            served.base_url,
        ],
        cwd=project,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    time.sleep(0.5 + rng.random() * 1.5)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    for doc in listed(served.base_url):
        first_ids.setdefault(doc["source"], doc["id"])
    final_run = prepare(project, served.base_url)
    assert final_run.code == 0, final_run.out + final_run.err
    final = assert_complete(project, served.base_url)
    for source, server_id in first_ids.items():
        assert final["documents"][source]["id"] == server_id


def test_second_process_is_refused_by_the_lock_naming_the_holder(
    served: Served, project: Path
) -> None:
    with writer_lock(project / "st" / "s.json", "ragsnap prepare (the test)"):
        run = prepare(project, served.base_url)
    assert run.code == 2
    assert f"pid {os.getpid()}" in run.err and "KnowledgeBaseBusy" in run.err
    assert listed(served.base_url) == []  # before any request
    assert not (project / "st" / "s.json").exists()
    assert (project / "st" / ".s.json.lock").exists()  # never deleted


@pytest.mark.slow
@pytest.mark.parametrize("link", ["s.json", ".s.json.lock"])
def test_symlinked_state_or_lock_is_refused(served: Served, project: Path, link: str) -> None:
    target = project / "elsewhere"
    target.write_text("{}", encoding="utf-8")
    (project / "st" / link).symlink_to(target)
    run = prepare(project, served.base_url)
    assert run.code == 2 and "symbolic link" in run.err, run.err
    assert target.read_text(encoding="utf-8") == "{}"
    assert listed(served.base_url) == []


def test_world_writable_or_missing_folder_is_refused(served: Served, project: Path) -> None:
    (project / "st").chmod(0o777)
    run = prepare(project, served.base_url)
    assert run.code == 2 and "world-writable" in run.err and "chmod o-w" in run.err
    missing = prepare(project, served.base_url, state="nowhere/s.json")
    assert missing.code == 2 and "does not exist" in missing.err and "mkdir" in missing.err
    assert listed(served.base_url) == []


def test_failed_folder_fsync_is_reported(
    served: Served,
    project: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    real = os.fsync

    def fsync(fd: int) -> None:
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            raise OSError(errno.EIO, "Input/output error")
        real(fd)

    monkeypatch.chdir(project)
    monkeypatch.delenv(EXIT_AFTER, raising=False)
    monkeypatch.setattr(os, "fsync", fsync)
    argv = ["prepare", "--state", "st/s.json", "--seed-docs", "seed-docs"]
    code = main([*argv, "--base-url", served.base_url])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "retry with the same state" in err.lower() and "could not be synced" in err
    monkeypatch.setattr(os, "fsync", real)
    again = main([*argv, "--base-url", served.base_url])
    assert again == 0, capsys.readouterr().err
    assert_complete(project, served.base_url)


@pytest.mark.slow
def test_reset_service_refuses_the_old_state(
    serve: Callable[..., Served], served: Served, project: Path
) -> None:
    assert prepare(project, served.base_url).code == 0
    served.stop()
    fresh = serve("--kb", str(project / "kb2.sqlite"), "--workers", "1", cwd=project)
    run = prepare(project, fresh.base_url)
    assert run.code == 2
    assert "was reset or changed" in run.err and "--reset-state" in run.err
    assert listed(fresh.base_url) == []  # nothing rebuilt silently
    over = prepare(project, fresh.base_url, "--reset-state")
    assert over.code == 0, over.out + over.err
    assert_complete(project, fresh.base_url)


def test_verification_lists_unexpected_and_changed_records(served: Served, project: Path) -> None:
    assert prepare(project, served.base_url).code == 0
    extra = f"---\nsource: stranger\nkb_scope: {SCOPE}\n---\nNot a seed document.\n"
    requests.post(
        served.base_url + "/api/documents",
        json={"name": "stranger.md", "content": extra},
        timeout=30,
    ).raise_for_status()
    run = prepare(project, served.base_url)
    assert run.code == 1, run.out + run.err
    assert "1 failure(s)" in run.out and "unexpected: stranger" in run.out
    state = read_state(project)
    assert state["verification"]["passed"] is False
    assert state["verification"]["failures"] == [f"unexpected: stranger is in kb_scope {SCOPE}"]
    # a document changed on the service: its revision no longer matches the state
    doc = (project / "seed-docs" / "doc-003.md").read_text(encoding="utf-8")
    requests.post(
        served.base_url + "/api/documents",
        json={"name": "doc-003.md", "content": doc + "\nEdited.\n"},
        timeout=30,
    ).raise_for_status()
    changed = prepare(project, served.base_url)
    assert changed.code == 2 and "was reset or changed" in changed.err


def test_request_budget_stops_with_a_checkpoint(served: Served, project: Path) -> None:
    run = prepare(project, served.base_url, "--max-requests", "5")
    assert run.code == 2 and "BudgetExhausted" in run.err
    assert "run the same command again" in run.err
    state = read_state(project)
    assert len(state["documents"]) == 5
    assert state["counters"]["lastRun"]["requests"] == 5
    rest = prepare(project, served.base_url)
    assert rest.code == 0, rest.out + rest.err
    assert f"{DOCS - 5} uploaded, 5 skipped" in rest.out
    assert_complete(project, served.base_url)


@pytest.mark.slow
def test_changed_corpus_is_refused(served: Served, project: Path) -> None:
    assert prepare(project, served.base_url, "--max-requests", "3").code == 2
    (project / "seed-docs" / "doc-001.md").write_text(
        f"---\nsource: doc-001\nkb_scope: {SCOPE}\n---\nChanged.\n", encoding="utf-8"
    )
    run = prepare(project, served.base_url)
    assert run.code == 2 and "another corpus: doc-001 changed" in run.err


# --- a service that does not honour idempotency keys --------------------------------------


class Forgetful(LoopbackServer):
    """A loopback service with ragsnap serve's document contract that ignores
    ``Idempotency-Key``: every upload is a new record (with a new id)."""

    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []
        self.complete = True
        self.refuse_after: int | None = None  # uploads answered 400 from then on
        super().__init__()

    def handle(self, request: BaseHTTPRequestHandler) -> None:
        if request.command == "GET":
            send_json(request, 200, {"complete": self.complete, "documents": self.records})
            return
        body = json.loads(request.rfile.read(int(request.headers["Content-Length"])))
        if self.refuse_after is not None and len(self.records) >= self.refuse_after:
            send_json(request, 400, {})
            return
        match = re.search(r"^source: (\S+)$", body["content"], re.MULTILINE)
        assert match is not None
        record = {
            "source": match.group(1),
            "id": str(uuid.uuid4()),
            "revision": hashlib.sha256(body["content"].encode()).hexdigest(),
            "embedding": "fake",
            "kbScope": SCOPE,
        }
        self.records.append(record)
        send_json(request, 200, {**record, "status": "added"})


@pytest.fixture
def forgetful() -> Iterator[Forgetful]:
    service = Forgetful()
    yield service
    service.close()


def test_duplicates_of_a_service_that_ignores_keys_fail_verification(
    forgetful: Forgetful, project: Path
) -> None:
    crashed = prepare(project, forgetful.url, env={EXIT_AFTER: "5"})
    assert crashed.code == 137
    run = prepare(project, forgetful.url)
    assert run.code == 1, run.out + run.err
    assert "5 failure(s)" in run.out
    assert "duplicate: 2 records for source doc-000" in run.out
    assert "does not honour idempotency keys" in run.out
    state = read_state(project)
    assert len(state["verification"]["failures"]) == 5


def test_resume_refuses_a_service_that_ignores_keys(forgetful: Forgetful, project: Path) -> None:
    assert prepare(project, forgetful.url, "--max-requests", "3").code == 2
    doc = (project / "seed-docs" / "doc-001.md").read_text(encoding="utf-8")
    requests.post(
        forgetful.url + "/api/documents", json={"name": "doc-001.md", "content": doc}, timeout=30
    ).raise_for_status()
    run = prepare(project, forgetful.url)
    assert run.code == 2
    assert "2 records for doc-001" in run.err and "does not honour idempotency keys" in run.err
    assert len(forgetful.records) == 4  # nothing more was sent


def test_partial_list_fails_verification(forgetful: Forgetful, project: Path) -> None:
    forgetful.complete = False
    run = prepare(project, forgetful.url)
    assert run.code == 1, run.out + run.err
    assert "partial list" in run.out


@pytest.mark.slow
def test_verify_only_checks_and_records_without_uploading(served: Served, project: Path) -> None:
    nothing = prepare(project, served.base_url, "--verify-only")
    assert nothing.code == 2 and "no state to verify" in nothing.err
    assert prepare(project, served.base_url, "--max-requests", "4").code == 2
    partial = prepare(project, served.base_url, "--verify-only")
    assert partial.code == 1, partial.out + partial.err
    assert "incomplete: the state holds 4 of 70 documents" in partial.out
    assert len(listed(served.base_url)) == 4  # nothing uploaded
    assert prepare(project, served.base_url).code == 0
    again = prepare(project, served.base_url, "--verify-only")
    assert again.code == 0, again.out + again.err
    assert f"0 uploaded, {DOCS} skipped, {DOCS} verified; 1 requests" in again.out
    assert read_state(project)["counters"]["lastRun"]["requests"] == 1


def test_a_failed_request_keeps_what_was_uploaded(forgetful: Forgetful, project: Path) -> None:
    forgetful.refuse_after = 10
    run = prepare(project, forgetful.url)
    assert run.code == 2 and "HTTP 400" in run.err
    assert len(read_state(project)["documents"]) == 10  # checkpointed on the way out
    forgetful.refuse_after = None
    rest = prepare(project, forgetful.url)
    assert rest.code == 0, rest.out + rest.err
    assert f"{DOCS - 10} uploaded, 10 skipped, {DOCS} verified" in rest.out
    assert len(forgetful.records) == DOCS  # nothing sent twice


@pytest.mark.slow
def test_one_key_sent_to_two_workers_at_once_makes_one_record(
    serve: Callable[..., Served], project: Path
) -> None:
    server = serve("--kb", str(project / "kb.sqlite"), "--workers", "2", cwd=project)
    doc = (project / "seed-docs" / "doc-005.md").read_text(encoding="utf-8")

    def send(_: int) -> dict[str, Any]:
        answer = requests.post(
            server.base_url + "/api/documents",
            json={"name": "doc-005.md", "content": doc},
            headers={"Idempotency-Key": "same"},
            timeout=60,
        )
        if answer.status_code == 409:  # the store's writer lock was held by the other
            return {}
        answer.raise_for_status()
        result: dict[str, Any] = answer.json()
        return result

    with ThreadPoolExecutor(4) as pool:
        answers = [a for a in pool.map(send, range(8)) if a]
    assert answers
    assert len({a["id"] for a in answers}) == 1
    assert sum(not a["replayed"] for a in answers) <= 1
    (one,) = listed(server.base_url)
    assert one["id"] == answers[0]["id"]

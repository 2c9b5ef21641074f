"""``ragsnap serve`` under concurrent writes: every lookup reads one consistent state.

A real ``ragsnap serve`` process over a real knowledge base; lookups from several
threads while documents are re-uploaded through the service and the store is
re-seeded by another process. No request may fail with 500 (a lookup used to fetch
chunks that a re-upload had just deleted), and every answer must be a valid lookup.
"""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import requests

from conftest import REPO, Served, run_cli
from ragsnap.io.httpclient import HttpClient
from ragsnap.io.schema import validate
from ragsnap.kb.backends.sqlite import SqliteKnowledgeBase

SEED_DOCS = REPO / "seed-docs"
QUERIES = [
    "What does ERR-4031 from OrderRepository mean?",
    "hikari maximum pool size per pod",
    "kafka consumer lag alert",
    "How do I roll back a deployment?",
]


@pytest.mark.slow
def test_lookups_during_uploads_and_reseeds_never_fail(
    tmp_path: Path, serve: Callable[..., Served]
) -> None:
    docs = tmp_path / "docs"
    shutil.copytree(SEED_DOCS, docs)
    kb = tmp_path / "kb.sqlite"
    assert run_cli("seed", "--kb", str(kb), "--seed-docs", str(docs), cwd=tmp_path).code == 0
    server = serve("--kb", str(kb), cwd=tmp_path)
    pool = docs / "mysql-connection-pool.md"
    text = pool.read_text(encoding="utf-8")
    variants = [text, text.replace("is set to 20 per pod", "is set to 24 per pod")]
    stop = threading.Event()
    failures: list[str] = []
    answers = [0]
    lock = threading.Lock()

    def look(n: int) -> None:
        session = requests.Session()
        i = n
        while not stop.is_set():
            query = QUERIES[i % len(QUERIES)]
            i += 1
            answer = session.post(
                server.base_url + "/api/knowledge/lookup",
                json={"query": query, "kbScope": "rag-eval", "topK": 5},
                timeout=60,
            )
            if answer.status_code != 200:
                failures.append(f"{answer.status_code}: {answer.text[:300]}")
                continue
            body = answer.json()["lookupResult"]
            fixture = {
                "schemaVersion": 1,
                "caseId": "c",
                "query": query,
                "retrievedAt": "2026-12-01T00:00:00Z",
                "generator": {
                    "backend": "http",
                    "pipelineVersion": "x",
                    "kbScope": None,
                    "topK": 5,
                },
                "lookupResult": body,
            }
            validate(fixture, "fixture", "answer", "fixture")
            with lock:
                answers[0] += 1

    def upload() -> None:
        session = requests.Session()
        k = 0
        while not stop.is_set():
            k += 1
            answer = session.post(
                server.base_url + "/api/documents",
                json={"name": pool.name, "content": variants[k % 2]},
                timeout=60,
            )
            if answer.status_code not in (200, 409):  # 409: the other writer holds the lock
                failures.append(f"upload {answer.status_code}: {answer.text[:300]}")

    threads = [threading.Thread(target=look, args=(n,)) for n in range(6)]
    threads.append(threading.Thread(target=upload))
    for thread in threads:
        thread.start()
    try:
        deadline = time.monotonic() + 8
        reseeds = 0
        while time.monotonic() < deadline:  # another process writes the same file too
            pool.write_text(variants[reseeds % 2], encoding="utf-8")
            run = run_cli("seed", "--kb", str(kb), "--seed-docs", str(docs), cwd=tmp_path)
            assert run.code in (0, 2), run.err  # 2: the service held the writer lock
            if run.code == 2:
                assert "KnowledgeBaseBusy" in run.err, run.err
            reseeds += 1
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=120)
    assert not failures, failures[:5]
    assert answers[0] > 50  # the lookups really ran alongside the writes
    assert reseeds >= 2


@pytest.mark.slow
def test_an_upload_while_a_seed_holds_the_lock_is_409_naming_it(
    tmp_path: Path, serve: Callable[..., Served]
) -> None:
    import fcntl
    import os

    kb = tmp_path / "kb.sqlite"
    assert run_cli("seed", "--kb", str(kb), "--seed-docs", str(SEED_DOCS), cwd=tmp_path).code == 0
    server = serve("--kb", str(kb), "--write-wait", "0.3", cwd=tmp_path)
    doc = "---\nsource: lock-test\nkb_scope: rag-eval\n---\nA body.\n"
    fd = os.open(tmp_path / ".kb.sqlite.lock", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        # the record names this (live) process: a record naming an exited one is said
        # to be so (tests/unit/io/test_locks.py)
        record = f"pid {os.getpid()} (ragsnap seed, since 2026-12-01T10:00:00Z)\n"
        os.pwrite(fd, record.encode(), 0)
        busy = requests.post(
            server.base_url + "/api/documents", json={"name": "a.md", "content": doc}, timeout=60
        )
        gone = requests.delete(
            server.base_url + "/api/documents", params={"source": "lock-test"}, timeout=60
        )
    finally:
        os.close(fd)
    assert busy.status_code == gone.status_code == 409  # held beyond --write-wait
    assert busy.headers["Retry-After"] == gone.headers["Retry-After"] == "1"
    assert f"is being written by pid {os.getpid()} (ragsnap seed" in busy.json()["error"]
    done = requests.post(
        server.base_url + "/api/documents", json={"name": "a.md", "content": doc}, timeout=60
    )
    assert done.status_code == 200 and done.json()["status"] == "added"


@pytest.mark.slow
def test_a_yaml_alias_bomb_upload_is_refused_and_stores_nothing(
    tmp_path: Path, serve: Callable[..., Served]
) -> None:
    kb = tmp_path / "kb.sqlite"
    assert run_cli("seed", "--kb", str(kb), "--seed-docs", str(SEED_DOCS), cwd=tmp_path).code == 0
    size = kb.stat().st_size
    server = serve("--kb", str(kb), cwd=tmp_path)
    levels = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i, name in enumerate("bcdefghi"):
        previous = "abcdefghi"[i]
        levels.append(f"{name}: &{name} [" + ",".join([f"*{previous}"] * 9) + "]")
    doc = "---\nsource: bomb\nkb_scope: rag-eval\n" + "\n".join(levels) + "\ntags: *i\n---\nx\n"
    assert len(doc) < 1000
    answer = requests.post(
        server.base_url + "/api/documents", json={"name": "bomb.md", "content": doc}, timeout=60
    )
    assert answer.status_code == 400, answer.text
    assert "uses a YAML alias (*a)" in answer.json()["error"]
    listed = requests.get(server.base_url + "/api/documents", timeout=60).json()
    assert "bomb" not in {doc["source"] for doc in listed["documents"]}
    assert len(listed["documents"]) == len(list(SEED_DOCS.glob("*.md")))
    assert kb.stat().st_size <= size + 4096  # it used to grow by 39 MB


UPLOADS = 640


@pytest.mark.slow
@pytest.mark.parametrize("workers", [2, 4])
def test_concurrent_uploads_of_different_documents_all_succeed(
    tmp_path: Path, serve: Callable[..., Served], workers: int
) -> None:
    """640 different documents sent at once to N workers: every upload succeeds on its
    first attempt (the workers wait for the store's writer lock in turn instead of
    answering 409) and the store holds all 640 afterwards."""
    kb = tmp_path / "kb.sqlite"
    server = serve("--kb", str(kb), "--workers", str(workers), cwd=tmp_path)

    def upload(n: int) -> tuple[int, str]:
        content = (
            f"---\nsource: load-{n:04d}\nkb_scope: load\n---\n# Load {n}\n\n"
            f"Document number {n} of the concurrent upload test, word w{n}x.\n"
        )
        # a connection of its own (the workers share the listening socket, so connections
        # spread over them) and no retries: a 409 is counted as it is
        answer = requests.post(
            server.base_url + "/api/documents",
            json={"name": f"load-{n:04d}.md", "content": content},
            timeout=120,
        )
        return answer.status_code, answer.text[:200]

    with ThreadPoolExecutor(128) as pool:
        answers = list(pool.map(upload, range(UPLOADS)))
    failed = [a for a in answers if a[0] != 200]
    assert not failed, f"{len(failed)} of {UPLOADS} failed, first: {failed[:3]}"
    listed = HttpClient(server.base_url).get_json("/api/documents")["documents"]
    assert len({d["source"] for d in listed}) == UPLOADS
    server.stop()
    with SqliteKnowledgeBase(kb, create=False) as store:
        assert len(store.documents()) == UPLOADS

"""``ragsnap prepare`` as a user runs it against a real ``ragsnap serve`` on loopback: a
document the service lost is re-created under a new key, also when the lost record's
receipt is replayed (an upload no checkpoint saved, then deleted), and ``--reset-state``
starts over with new keys; the per-request budgets refuse an upload over the byte budget
before it is sent."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conftest import REPO, Run, Served, listed_documents, lose_document, write_seed_docs
from ragsnap.live.preparation import idempotency_key

SCOPE = "prep-cli"
DOCS = {
    "doc-kafka": "Kafka consumer lag grows when the partition rebalance storm repeats.",
    "doc-redis": "Redis eviction policy allkeys-lru drops the least recently used keys.",
    "doc-tls": "TLS certificate renewal runs ninety days before the certificate expires.",
    "doc-nginx": "Nginx upstream timeout answers 504 after proxy_read_timeout seconds.",
}
STATE = "st/s.json"
EXIT_AFTER = "RAGSNAP_TEST_PREPARE_EXIT_AFTER"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    write_seed_docs(tmp_path / "seed-docs", DOCS, SCOPE)
    (tmp_path / "st").mkdir(mode=0o700)
    return tmp_path


@pytest.fixture
def served(serve: Callable[..., Served], project: Path) -> Served:
    return serve("--kb", str(project / "kb.sqlite"), "--workers", "1", cwd=project)


def prepare(cwd: Path, url: str, *extra: str, env: dict[str, str] | None = None) -> Run:
    """``ragsnap prepare`` as a real process in ``cwd``."""
    command = [sys.executable, "-m", "ragsnap", "prepare", "--state", STATE]
    command += ["--seed-docs", "seed-docs", "--base-url", url, *extra]
    full = {k: v for k, v in os.environ.items() if k != EXIT_AFTER}
    full.update(PYTHONPATH=str(REPO / "eval"), PYTHONIOENCODING="utf-8", **(env or {}))
    proc = subprocess.run(command, cwd=cwd, capture_output=True, text=True, env=full, timeout=300)
    return Run(proc.returncode, proc.stdout, proc.stderr)


def read_state(cwd: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((cwd / STATE).read_text(encoding="utf-8"))
    return data


def content_sha(project: Path, source: str) -> str:
    from ragsnap.kb.corpus import open_seed_docs

    (doc,) = [d for d in open_seed_docs(project / "seed-docs") if d.source == source]
    return doc.content_hash


def test_a_lost_document_whose_old_receipt_is_replayed_is_recreated(
    served: Served, project: Path
) -> None:
    """Uploaded by a run killed before any checkpoint, then deleted on the service: the
    next run's first-attempt key gets the old receipt ("added", the old id) replayed;
    verification finds it missing, and it is uploaded again under attempt 2's key."""
    crashed = prepare(project, served.base_url, env={EXIT_AFTER: "2"})
    assert crashed.code == 137, crashed.out + crashed.err
    assert not (project / STATE).exists()  # nothing checkpointed: the state never saw them
    on_service = listed_documents(served.base_url)
    assert len(on_service) == 2
    source = sorted(on_service)[0]
    old_id = on_service[source]["id"]
    lose_document(served.base_url, source)

    run = prepare(project, served.base_url)
    assert run.code == 0, run.out + run.err  # was exit 1: "missing: ... is not on the service"
    assert "the service had lost 1 document(s)" in run.out and source in run.out
    assert "verified" in run.out and f"{len(DOCS)} verified" in run.out
    state = read_state(project)
    record = state["documents"][source]
    now = listed_documents(served.base_url)
    assert record["id"] == now[source]["id"] != old_id
    assert record["attempt"] == 2 and state["attempts"] == {}
    sha = content_sha(project, source)
    assert record["idempotencyKey"] == idempotency_key(source, sha, 2)
    assert record["idempotencyKey"] != idempotency_key(source, sha)
    assert state["verification"] == {"passed": True, "documents": len(DOCS), "failures": []}
    again = prepare(project, served.base_url)  # and it stays prepared
    assert again.code == 0 and f"0 uploaded, {len(DOCS)} skipped" in again.out, again.out


def test_a_document_deleted_through_the_api_is_recreated_and_verified(
    served: Served, project: Path
) -> None:
    first = prepare(project, served.base_url)
    assert first.code == 0, first.out + first.err
    before = read_state(project)["documents"]["doc-tls"]
    lose_document(served.base_url, "doc-tls")
    run = prepare(project, served.base_url)
    assert run.code == 0, run.out + run.err
    assert f"1 uploaded, {len(DOCS) - 1} skipped, {len(DOCS)} verified" in run.out
    after = read_state(project)["documents"]["doc-tls"]
    assert after["id"] == listed_documents(served.base_url)["doc-tls"]["id"] != before["id"]
    assert after["idempotencyKey"] != before["idempotencyKey"] and after["attempt"] == 2


def test_reset_state_starts_over_with_new_keys(served: Served, project: Path) -> None:
    crashed = prepare(project, served.base_url, env={EXIT_AFTER: "3"})
    assert crashed.code == 137, crashed.out + crashed.err
    lose_document(served.base_url, sorted(listed_documents(served.base_url))[-1])
    first = prepare(project, served.base_url)
    assert first.code == 0, first.out + first.err
    keys = {s: r["idempotencyKey"] for s, r in read_state(project)["documents"].items()}
    lose_document(served.base_url, "doc-redis")
    run = prepare(project, served.base_url, "--reset-state")
    assert run.code == 0, run.out + run.err
    state = read_state(project)
    assert isinstance(state["epoch"], str) and state["epoch"]
    assert state["verification"] == {"passed": True, "documents": len(DOCS), "failures": []}
    assert not set(keys.values()) & {r["idempotencyKey"] for r in state["documents"].values()}
    assert {s: r["id"] for s, r in state["documents"].items()} == {
        s: d["id"] for s, d in listed_documents(served.base_url).items()
    }


def test_an_upload_over_the_byte_budget_is_refused_before_any_request(
    served: Served, project: Path
) -> None:
    (project / "seed-docs" / "doc-big.md").write_text(
        f"---\nsource: doc-big\ntitle: doc-big\nkb_scope: {SCOPE}\n---\n# big\n\n"
        + "A long runbook line. " * 60
        + "\n",
        encoding="utf-8",
    )
    run = prepare(project, served.base_url, "--max-bytes", "1000")
    assert run.code == 2, run.out + run.err
    assert (
        f"UsageError: POST {served.base_url}/api/documents (doc-big.md): the request body is "
        in run.err
    ), run.err
    assert "more than the byte budget per request (1,000 bytes, http.budgets.bytes in " in run.err
    assert "--max-bytes); it was not sent" in run.err, run.err
    assert (
        listed_documents(served.base_url) == {} and not (project / STATE).exists()
    )  # nothing sent
    done = prepare(project, served.base_url, "--max-bytes", "4000")
    assert done.code == 0, done.out + done.err
    assert f"{len(DOCS) + 1} verified" in done.out

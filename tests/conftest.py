"""Shared test helpers: build golden cases and fixtures, run the real CLI."""

from __future__ import annotations

import copy
import importlib.util
import itertools
import json
import os
import random
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent


def shared_data(name: str) -> Path:
    """A file of the project's shared external data (``../shared/data/``).

    Looked up in ``$RAGSNAP_SHARED_DATA``, then beside the checkout, then at
    ``/work/shared/data``. Absent, the test is skipped on a workstation and fails
    under ``CI=true``, so CI never passes without the real data.
    """
    places = [REPO.parent / "shared" / "data", Path("/work/shared/data")]
    if os.environ.get("RAGSNAP_SHARED_DATA"):
        places.insert(0, Path(os.environ["RAGSNAP_SHARED_DATA"]))
    for place in places:
        if (place / name).is_file():
            return place / name
    where = ", ".join(str(p) for p in places)
    if os.environ.get("CI") == "true":
        pytest.fail(f"shared data file {name} not found in {where}; set RAGSNAP_SHARED_DATA")
    pytest.skip(f"shared data file {name} not found in {where}")


def require_numba() -> None:
    """Skip on a workstation without numba (the ``fast`` extra); fail under
    ``CI=true``, where `.ci/run` installs it and a skip would hide that the compiled
    kernels went untested."""
    if importlib.util.find_spec("numba") is None:
        message = "numba not installed; pip install -e '.[fast]' to test the compiled kernels"
        if os.environ.get("CI") == "true":
            pytest.fail(message, pytrace=False)
        pytest.skip(message)


def make_case(case_id: str = "c1", **fields: Any) -> dict[str, Any]:
    """A golden case dict with sensible defaults; ``fields`` override them."""
    case: dict[str, Any] = {
        "id": case_id,
        "query": f"query for {case_id}",
        "language": "en",
        "category": "database",
        "split": "dev",
        "expectedSources": ["mysql-pool"],
    }
    case.update(fields)
    return {k: v for k, v in case.items() if v is not None}


def block(
    rank: int,
    source: str,
    text: str = "some text",
    breadcrumb: str | None = "Database > MySQL > Connection Pool",
    score: float = 0.8,
    doc_id: str | None = None,
) -> dict[str, Any]:
    """One evidence block dict."""
    return {
        "rank": rank,
        "chunkId": f"{source}#{rank}",
        "docId": doc_id or f"doc-{source}",
        "source": source,
        "title": source,
        "breadcrumb": breadcrumb,
        "text": text,
        "score": score,
        "scoreLabel": "high",
    }


def make_fixture(
    case_id: str = "c1",
    blocks: Iterable[dict[str, Any]] = (),
    *,
    query: str | None = None,
    selected: str | None = "filtered",
    fallback: Iterable[str] = (),
    status: str | None = None,
    rerank_top: str | None = None,
    context_sources: Iterable[str] | None = None,
) -> dict[str, Any]:
    """A fixture dict around ``blocks``; the traces are derived from them."""
    blocks = list(blocks)
    sources = list(dict.fromkeys(b["source"] for b in blocks))
    ranked = [{"chunkId": b["chunkId"], "source": b["source"], "score": b["score"]} for b in blocks]
    if rerank_top is not None:
        ranked.insert(0, {"chunkId": f"{rerank_top}#0", "source": rerank_top, "score": 1.0})
    text = "\n\n".join(b["text"] for b in blocks)
    return {
        "schemaVersion": 1,
        "caseId": case_id,
        "query": query if query is not None else f"query for {case_id}",
        "retrievedAt": "2026-11-29T00:00:00Z",
        "generator": {
            "backend": "hand-authored",
            "embedder": None,
            "pipelineVersion": "test/1",
            "kbScope": "rag-eval",
            "topK": 5,
        },
        "lookupResult": {
            "evidenceBlocks": blocks,
            "contextPack": {
                "sources": list(context_sources) if context_sources is not None else sources,
                "text": text,
                "charCount": len(text),
                "budgetChars": 2000,
                "truncated": False,
            },
            "retrievalTrace": {
                "attempts": [{"name": "filtered", "hitCount": len(blocks)}],
                "selectedAttempt": selected,
                "fallbackReasons": list(fallback),
                "evidenceStatus": status or ("sufficient" if blocks else "none"),
            },
            "rerankTrace": {
                "applied": bool(ranked),
                "reranker": "heuristic-v1",
                "before": ranked,
                "after": ranked,
            },
        },
    }


def write_json(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def goodbuddy_fixture() -> dict[str, Any]:
    """A small, valid GoodBuddy-style fixture: two documents, three chunks, three queries."""
    return {
        "version": 1,
        "id": "unit-v1",
        "provenance": {"kind": "synthetic", "license": "CC0-1.0"},
        "documents": [
            {
                "id": "doc-pool",
                "title": "Connection pool",
                "language": "en",
                "chunks": [
                    {"id": "chunk-pool-size", "content": "The pool holds at most 20 connections."},
                    {
                        "id": "chunk-pool-idle",
                        "content": "Idle connections close after 10 minutes.",
                    },
                ],
            },
            {
                "id": "doc-tls",
                "chunks": [{"id": "chunk-tls", "content": "证书每九十天自动续期。"}],
            },
        ],
        "queries": [
            {
                "id": "q-pool",
                "language": "en",
                "query": "How big is the pool?",
                "noAnswer": False,
                "judgments": [
                    {
                        "chunkId": "chunk-pool-size",
                        "relevance": 3,
                        "spans": [{"text": "at most 20 connections"}],
                    },
                    {"chunkId": "chunk-pool-idle", "relevance": 1, "spans": []},
                ],
            },
            {
                "id": "q-tls",
                "language": "zh-CN",
                "query": "证书多久续期",
                "noAnswer": False,
                "judgments": [
                    {"chunkId": "chunk-tls", "relevance": 2, "spans": [{"text": "每九十天"}]}
                ],
            },
            {
                "id": "q-none",
                "language": "en",
                "query": "What is the weather?",
                "noAnswer": True,
                "judgments": [],
            },
        ],
    }


def lay_out_cgroup(root: Path, usage: int, current: int | None, peak: int | None) -> Path:
    """A cgroup v2 directory as the kernel shows one: cpu.stat lines, memory files."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "cgroup.procs").write_text("", encoding="ascii")
    (root / "cpu.stat").write_text(
        f"usage_usec {usage}\nuser_usec {usage // 2}\nsystem_usec {usage // 2}\n",
        encoding="ascii",
    )
    if current is not None:
        (root / "memory.current").write_text(f"{current}\n", encoding="ascii")
    if peak is not None:
        (root / "memory.peak").write_text(f"{peak}\n", encoding="ascii")
    return root


@dataclass
class Project:
    """A scratch eval project: cases file, fixtures folder, reports folder."""

    root: Path

    @property
    def cases(self) -> Path:
        return self.root / "cases" / "golden-cases.json"

    @property
    def fixtures(self) -> Path:
        return self.root / "fixtures"

    def write_cases(self, cases: list[dict[str, Any]], **top: Any) -> Path:
        return write_json(self.cases, {"schemaVersion": 1, "cases": cases, **top})

    def write_fixture(self, fixture: dict[str, Any], name: str | None = None) -> Path:
        return write_json(self.fixtures / f"{name or fixture['caseId']}.json", fixture)


@pytest.fixture
def project(tmp_path: Path) -> Project:
    return Project(tmp_path)


@dataclass
class Run:
    code: int
    out: str
    err: str


def copy_example(root: Path, *names: str) -> Path:
    """Copy the repository's example project's ``names`` (folders, or ``ragsnap.yaml``)
    into ``root``; return ``root``."""
    for name in names:
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, root / name)
        else:
            shutil.copy(REPO / name, root / name)
    return root


def run_cli(
    *args: str, cwd: Path, script: str | None = None, tests_importable: bool = False
) -> Run:
    """Run ``ragsnap`` (or a script under scripts/) as a real process in ``cwd``; with
    ``tests_importable`` the modules under tests/ import too (a test's retriever)."""
    command = (
        [sys.executable, str(REPO / "scripts" / script), *args]
        if script
        else [sys.executable, "-m", "ragsnap", *args]
    )
    path = [str(REPO / "eval"), *([str(REPO / "tests")] if tests_importable else [])]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path), "PYTHONIOENCODING": "utf-8"}
    proc = subprocess.run(command, cwd=cwd, capture_output=True, text=True, env=env, timeout=300)
    return Run(proc.returncode, proc.stdout, proc.stderr)


def run_score(
    cases: Path, fixtures: Path, reports: Path, *, cwd: Path, config: Path | None = None
) -> tuple[Run, dict[str, Any]]:
    """``ragsnap score`` of ``cases`` against ``fixtures`` (with ``config``, e.g. an
    import's ragsnap.yaml), writing ``report.json`` and ``report.md`` into ``reports``:
    the run (exit code 0 or 1) and the JSON report."""
    run = run_cli(
        "score",
        *(["--config", str(config)] if config is not None else []),
        "--cases",
        str(cases),
        "--fixtures",
        str(fixtures),
        "--json-report",
        str(reports / "report.json"),
        "--markdown-report",
        str(reports / "report.md"),
        cwd=cwd,
    )
    assert run.code in (0, 1), run.out + run.err
    report: dict[str, Any] = json.loads((reports / "report.json").read_text(encoding="utf-8"))
    return run, report


def set_at(path: str, value: Any) -> Any:
    """A change to a JSON document that sets the value at a /-separated path
    (``None`` deletes it), for tests that break valid input one field at a time."""

    def change(data: Any) -> None:
        *parents, last = path.strip("/").split("/")
        node = data
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        key: Any = int(last) if isinstance(node, list) else last
        if value is None:
            del node[key]
        else:
            node[key] = value

    return change


class Served:
    """``ragsnap serve`` running as a real process on a free loopback port."""

    def __init__(self, *args: str, cwd: Path, env: dict[str, str] | None = None):
        command = [sys.executable, "-m", "ragsnap", "serve", "--port", "0", *args]
        self.env = {
            **os.environ,
            "PYTHONPATH": str(REPO / "eval"),
            "PYTHONIOENCODING": "utf-8",
            **(env or {}),
        }
        self.proc = subprocess.Popen(
            command,
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=self.env,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()  # printed once the socket listens
        match = re.search(r"http://[^\s]+:\d+", line)
        if match is None:
            self.proc.kill()
            _, err = self.proc.communicate(timeout=30)
            raise AssertionError(f"ragsnap serve did not start: {line!r} {err}")
        self.base_url = match.group(0)
        self.banner = line

    def stop(self) -> tuple[str, str]:
        """Stop the server (SIGTERM, as a user's Ctrl-C); return its remaining output."""
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            out, err = self.proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:  # pragma: no cover - a hung server
            self.proc.kill()
            out, err = self.proc.communicate()
        return self.banner + out, err


@pytest.fixture
def serve() -> Iterator[Callable[..., Served]]:
    """Start ``ragsnap serve ARGS`` processes (``serve(*args, cwd=...)``); all stopped after."""
    started: list[Served] = []

    def start(*args: str, cwd: Path, env: dict[str, str] | None = None) -> Served:
        server = Served(*args, cwd=cwd, env=env)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


def mutate_json(data: Any, rng: random.Random, odd_values: Sequence[Any]) -> Any:
    """One structural change somewhere in ``data`` (in place, and returned): a value
    deleted, replaced by one of ``odd_values``, duplicated in its list, a string reversed
    or repeated, or a value wrapped in a list. The fuzz tests' one mutator."""
    holders: list[tuple[Any, Any]] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                holders.append((node, key))
                walk(value)
        elif isinstance(node, list):
            for i, value in enumerate(node):
                holders.append((node, i))
                walk(value)

    walk(data)
    if not holders:
        return copy.deepcopy(rng.choice(odd_values))
    parent, key = rng.choice(holders)
    op = rng.randrange(4)
    if op == 0:
        del parent[key]
    elif op == 1:
        parent[key] = copy.deepcopy(rng.choice(odd_values))
    elif op == 2 and isinstance(parent, list):
        parent.insert(key, copy.deepcopy(parent[key]))  # a duplicate (ids, records, cases)
    elif op == 3 and isinstance(parent[key], str):
        parent[key] = parent[key][::-1] if rng.random() < 0.5 else parent[key] * 3
    else:
        parent[key] = [parent[key]]
    return data


def import_skipped(run: Run) -> list[str]:
    """The lines an ``ragsnap import`` run lists under ``skipped (...)``: the indented
    block that follows it."""
    lines = run.out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("skipped ("))
    block = itertools.takewhile(lambda line: line.startswith("  "), lines[start + 1 :])
    return [line.strip() for line in block]


def listed_documents(url: str) -> dict[str, dict[str, Any]]:
    """A document service's listing (``GET /api/documents``), by source."""
    import requests

    answer = requests.get(url + "/api/documents", timeout=30)
    answer.raise_for_status()
    return {d["source"]: d for d in answer.json()["documents"]}


def lose_document(url: str, source: str) -> None:
    """Delete ``source`` through a document service's API, behind ragsnap's back."""
    import requests

    gone = requests.delete(url + "/api/documents", params={"source": source}, timeout=30)
    assert gone.json()["removed"] is True


def write_seed_docs(folder: Path, docs: Mapping[str, str], scope: str) -> None:
    """One Markdown seed document per ``docs`` entry (source -> body) in ``folder``,
    titled by its source, in the kb scope ``scope``."""
    folder.mkdir()
    for source, text in docs.items():
        (folder / f"{source}.md").write_text(
            f"---\nsource: {source}\ntitle: {source}\nkb_scope: {scope}\n---\n# {source}\n\n"
            f"{text}\n",
            encoding="utf-8",
        )

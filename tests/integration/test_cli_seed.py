"""``ragsnap seed`` driven as a user would: real processes, real SQLite files, exit codes."""

from __future__ import annotations

import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
from contextlib import closing
from pathlib import Path

import pytest

from conftest import REPO, Run, run_cli
from ragsnap.kb.backends import Filter
from ragsnap.kb.backends.sqlite import SqliteKnowledgeBase
from ragsnap.kb.text import get_tokenizer

REPO_DOCS = REPO / "seed-docs"
REPO_SOURCES = 18


def write_doc(folder: Path, name: str, source: str | None, body: str, **meta: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    header = ([f"source: {source}"] if source is not None else []) + [
        f"{k}: {v}" for k, v in meta.items()
    ]
    path = folder / name
    path.write_text("---\n" + "\n".join(header) + "\n---\n" + body + "\n", encoding="utf-8")
    return path


def good_corpus(folder: Path, n: int = 3, word: str = "goodword") -> Path:
    for i in range(n):
        write_doc(
            folder,
            f"good-{i}.md",
            f"good-{i}",
            f"Intro {i} with {word}.\n\n## Part\n\nSection text {i} about {word} things.",
            kb_scope="eval",
            category="misc",
        )
    return folder


def seed_cli(cwd: Path, *args: str) -> Run:
    return run_cli("seed", *args, cwd=cwd)


def summary(run: Run) -> str:
    """The counts part of the summary line."""
    match = re.search(
        r"^seed: (\d+ added, \d+ updated, \d+ unchanged, \d+ removed); ", run.out, re.M
    )
    assert match, run.out + run.err
    return match.group(1)


def listed(run: Run) -> dict[str, list[str]]:
    """The ``  added: a, b`` lines of the output."""
    out: dict[str, list[str]] = {}
    for line in run.out.splitlines():
        m = re.match(r"^  (added|updated|removed): (.*)$", line)
        if m:
            out[m.group(1)] = m.group(2).split(", ")
    return out


def stored(kb_file: Path) -> dict[str, str]:
    """Source -> index hash of every stored document."""
    with SqliteKnowledgeBase(kb_file, create=False) as kb:
        return {s: info.index_hash for s, info in kb.documents().items()}


def lexical_sources(kb: SqliteKnowledgeBase, text: str) -> set[str]:
    """What a store seeded with the default analyzer (the English stemmer) finds."""
    hits = kb.lexical_search(get_tokenizer("bigram", "english").tokens(text), Filter(), 10_000)
    chunks = kb.chunks([r for r, _ in hits])
    return {chunks[r].source for r, _ in hits}


# -- the repository's seed documents -----------------------------------------------------


def test_repo_seed_docs_import_then_incremental_runs(tmp_path: Path) -> None:
    run = seed_cli(tmp_path, "--seed-docs", str(REPO_DOCS), "--kb", "kb.sqlite")
    assert run.code == 0, run.err
    assert summary(run) == f"{REPO_SOURCES} added, 0 updated, 0 unchanged, 0 removed"
    assert f"; {REPO_SOURCES} documents, " in run.out
    assert "Traceback" not in run.err
    docs = stored(tmp_path / "kb.sqlite")
    assert len(docs) == REPO_SOURCES
    with SqliteKnowledgeBase(tmp_path / "kb.sqlite", create=False) as kb:
        scopes = sorted(info.kb_scope or "" for info in kb.documents().values())
        assert scopes.count("other-team") == 1
        assert set(scopes) == {"rag-eval", "other-team"}

    run = seed_cli(tmp_path, "--seed-docs", str(REPO_DOCS), "--kb", "kb.sqlite")
    assert run.code == 0, run.err
    assert summary(run) == f"0 added, 0 updated, {REPO_SOURCES} unchanged, 0 removed"
    assert listed(run) == {}

    # the same files in another folder are the same documents
    copy = tmp_path / "docs"
    shutil.copytree(REPO_DOCS, copy)
    run = seed_cli(tmp_path, "--seed-docs", "docs", "--kb", "kb.sqlite")
    assert summary(run) == f"0 added, 0 updated, {REPO_SOURCES} unchanged, 0 removed"

    edited = copy / "kafka-topic-naming.md"
    edited.write_text(edited.read_text(encoding="utf-8") + "\nOne more line.\n", encoding="utf-8")
    run = seed_cli(tmp_path, "--seed-docs", "docs", "--kb", "kb.sqlite")
    assert run.code == 0, run.err
    assert summary(run) == f"0 added, 1 updated, {REPO_SOURCES - 1} unchanged, 0 removed"
    assert listed(run) == {"updated": ["kafka-topic-naming"]}
    after = stored(tmp_path / "kb.sqlite")
    assert {s for s in docs if docs[s] != after[s]} == {"kafka-topic-naming"}

    (copy / "log-retention-policy.md").unlink()
    run = seed_cli(tmp_path, "--seed-docs", "docs", "--kb", "kb.sqlite")
    assert run.code == 0, run.err
    assert summary(run) == f"0 added, 0 updated, {REPO_SOURCES - 1} unchanged, 1 removed"
    assert listed(run) == {"removed": ["log-retention-policy"]}
    assert set(stored(tmp_path / "kb.sqlite")) == set(docs) - {"log-retention-policy"}


def test_defaults_seed_docs_folder_and_kb_path(tmp_path: Path) -> None:
    good_corpus(tmp_path / "seed-docs")
    run = seed_cli(tmp_path)
    assert run.code == 0, run.err
    assert summary(run) == "3 added, 0 updated, 0 unchanged, 0 removed"
    assert listed(run) == {"added": ["good-0", "good-1", "good-2"]}
    assert set(stored(tmp_path / ".ragsnap" / "kb.sqlite")) == {"good-0", "good-1", "good-2"}


# -- bad seed documents ------------------------------------------------------------------

BAD_DOCS = {
    # kind: (file name, file text, what stderr must say besides the file name)
    "no-source": (
        "bad.md",
        "---\ntitle: Nobody set a source\n---\nBody.\n",
        ["has no `source`", "add `source: <unique-id>`"],
    ),
    "duplicate-source": (
        "zz-duplicate.md",
        "---\nsource: good-1\n---\nA second document claiming good-1.\n",
        ["'good-1' is already used by", "good-1.md", "give every seed document its own source"],
    ),
    "malformed-yaml": (
        "bad.md",
        "---\nsource: broken\ntitle: [unclosed, list\nkeywords: x\n---\nBody.\n",
        ["not valid YAML", "fix the header's YAML"],
    ),
}


@pytest.mark.parametrize("kind", sorted(BAD_DOCS))
def test_a_bad_doc_stops_the_import_before_the_kb_is_touched(tmp_path: Path, kind: str) -> None:
    name, text, says = BAD_DOCS[kind]
    docs = good_corpus(tmp_path / "docs")
    (docs / name).write_text(text, encoding="utf-8")
    kb_file = tmp_path / "store" / "kb.sqlite"

    run = seed_cli(tmp_path, "--seed-docs", "docs", "--kb", "store/kb.sqlite")
    assert run.code == 2, run.out + run.err
    assert "Traceback" not in run.err
    assert run.out == ""
    assert name in run.err
    for phrase in says:
        assert phrase in run.err
    assert not kb_file.exists()
    assert not kb_file.parent.exists()

    # with a knowledge base already there, it is left exactly as it was
    (docs / name).unlink()
    assert seed_cli(tmp_path, "--seed-docs", "docs", "--kb", "store/kb.sqlite").code == 0
    before = {p.name: p.read_bytes() for p in kb_file.parent.iterdir()}
    hashes = stored(kb_file)
    (docs / name).write_text(text, encoding="utf-8")
    good_corpus(docs, n=5, word="changedword")  # two new documents, three changed ones
    run = seed_cli(tmp_path, "--seed-docs", "docs", "--kb", "store/kb.sqlite")
    assert run.code == 2, run.out + run.err
    assert name in run.err
    assert {p.name: p.read_bytes() for p in kb_file.parent.iterdir()} == before
    assert stored(kb_file) == hashes


def test_missing_seed_docs_folder_exits_2(tmp_path: Path) -> None:
    run = seed_cli(tmp_path, "--seed-docs", "nowhere", "--kb", "kb.sqlite")
    assert run.code == 2
    assert "nowhere: not found; pass --seed-docs" in run.err
    assert not (tmp_path / "kb.sqlite").exists()


# -- settings ----------------------------------------------------------------------------


def test_other_embedder_dimension_needs_reindex(tmp_path: Path) -> None:
    good_corpus(tmp_path / "docs")
    (tmp_path / "small.yaml").write_text("kb:\n  embedder: {kind: hashing, dimension: 128}\n")
    base = ("--seed-docs", "docs", "--kb", "kb.sqlite")
    assert seed_cli(tmp_path, *base).code == 0
    hashes = stored(tmp_path / "kb.sqlite")

    run = seed_cli(tmp_path, *base, "--config", "small.yaml")
    assert run.code == 2, run.out + run.err
    assert "BackendError" in run.err and "--reindex" in run.err
    assert "dimension 256" in run.err and "dimension 128" in run.err
    assert "Traceback" not in run.err
    assert stored(tmp_path / "kb.sqlite") == hashes

    run = seed_cli(tmp_path, *base, "--config", "small.yaml", "--reindex")
    assert run.code == 0, run.err
    assert summary(run) == "0 added, 3 updated, 0 unchanged, 0 removed"
    with SqliteKnowledgeBase(tmp_path / "kb.sqlite", create=False) as kb:
        assert '"dimension": 128' in kb.read_meta()["embedder"]

    # lookups follow the knowledge base's embedder too
    lookup = ("lookup", "goodword", "--kb", "kb.sqlite")
    assert run_cli(*lookup, "--config", "small.yaml", cwd=tmp_path).code == 0
    run = run_cli(*lookup, cwd=tmp_path)
    assert run.code == 2 and "--reindex" in run.err and "Traceback" not in run.err


def test_other_chunking_reindexes_every_document(tmp_path: Path) -> None:
    good_corpus(tmp_path / "docs")
    (tmp_path / "ragsnap.yaml").write_text("kb:\n  chunking: {maxChars: 500, overlapChars: 50}\n")
    base = ("--seed-docs", "docs", "--kb", "kb.sqlite")
    assert summary(seed_cli(tmp_path, *base)) == "3 added, 0 updated, 0 unchanged, 0 removed"
    (tmp_path / "ragsnap.yaml").write_text("kb:\n  chunking: {maxChars: 600, overlapChars: 50}\n")
    assert summary(seed_cli(tmp_path, *base)) == "0 added, 3 updated, 0 unchanged, 0 removed"
    assert summary(seed_cli(tmp_path, *base)) == "0 added, 0 updated, 3 unchanged, 0 removed"


def test_prepare_script_help(tmp_path: Path) -> None:
    run = run_cli("--help", cwd=tmp_path, script="prepare_rag_eval_seed.py")
    assert run.code == 0, run.err
    assert "--seed-docs" in run.out and "--reindex" in run.out and "--kb" in run.out
    assert not any(tmp_path.iterdir())


# -- a killed import -----------------------------------------------------------------------


def bulk_corpus(folder: Path, n: int, sections: int = 5) -> Path:
    folder.mkdir(parents=True)
    for i in range(n):
        parts = [f"Bulk document {i} about zorblaxbulk telemetry, batch {i % 17}."]
        for s in range(sections):
            words = " ".join(f"term{(i * 7 + s * 13 + k) % 997} filler{k}" for k in range(60))
            parts.append(f"## Section {s}\n\n{words}")
        (folder / f"bulk-{i:05d}.md").write_text(
            f"---\nsource: bulk-{i:05d}\ncategory: bulk\nkb_scope: eval\n---\n"
            + "\n\n".join(parts)
            + "\n",
            encoding="utf-8",
        )
    return folder


@pytest.mark.slow
def test_killed_import_leaves_the_previous_kb(tmp_path: Path) -> None:
    small = good_corpus(tmp_path / "A", n=5, word="alphaonly")
    kb_file = tmp_path / "same.sqlite"
    run = seed_cli(tmp_path, "--seed-docs", str(small), "--kb", str(kb_file))
    assert run.code == 0, run.err
    with SqliteKnowledgeBase(kb_file, create=False) as kb:
        a_sources = set(kb.documents())
        a_chunks = kb.count()
    assert len(a_sources) == 5

    big = bulk_corpus(tmp_path / "B", 3000)
    env = {**os.environ, "PYTHONPATH": str(REPO / "eval"), "PYTHONIOENCODING": "utf-8"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "ragsnap", "seed", "--seed-docs", str(big), "--kb", str(kb_file)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    watchdog = threading.Timer(300, proc.kill)
    watchdog.start()
    try:
        assert proc.stderr is not None
        progress = None
        seen: list[str] = []
        for line in proc.stderr:
            seen.append(line)
            if re.fullmatch(r"seed: \d+/3000 documents \(.+/s, ETA .+\)\n", line):
                progress = line
                break
        assert progress is not None, "no progress line before the import ended: " + "".join(seen)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
    finally:
        watchdog.cancel()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stderr is not None:
            proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL, "the import finished before it was killed"

    with closing(sqlite3.connect(kb_file)) as db:
        assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    with SqliteKnowledgeBase(kb_file, create=False) as kb:
        assert set(kb.documents()) == a_sources
        assert kb.count() == a_chunks
        assert lexical_sources(kb, "zorblaxbulk") == set()
        assert lexical_sources(kb, "alphaonly") == a_sources
        (fts_rows,) = kb._db.execute("SELECT count(*) FROM chunks_fts").fetchone()
        assert fts_rows == a_chunks

    run = seed_cli(tmp_path, "--seed-docs", str(big), "--kb", str(kb_file))
    assert run.code == 0, run.err
    assert summary(run) == "3000 added, 0 updated, 0 unchanged, 5 removed"
    with SqliteKnowledgeBase(kb_file, create=False) as kb:
        assert len(kb.documents()) == 3000
        assert kb.count() == 3000 * 6
        assert lexical_sources(kb, "alphaonly") == set()


def test_a_fifo_as_the_writer_lock_is_exit_2(tmp_path: Path) -> None:
    """It used to end in "Illegal seek", exit 3 (an internal error)."""
    good_corpus(tmp_path / "seed-docs")
    (tmp_path / ".ragsnap").mkdir()
    lock = tmp_path / ".ragsnap" / ".kb.sqlite.lock"
    os.mkfifo(lock)
    run = seed_cli(tmp_path)
    assert run.code == 2, run.out + run.err
    assert run.err.splitlines()[-1] == (
        "OutputError: .ragsnap/.kb.sqlite.lock: the writer lock is not a regular file (a "
        "pipe, a device or a folder?); remove it (`rm .ragsnap/.kb.sqlite.lock`: ragsnap "
        "creates it again) and run this again"
    )
    lock.unlink()
    assert seed_cli(tmp_path).code == 0

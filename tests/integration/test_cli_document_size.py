"""One size cap for a seed document on every path that reads one: a Markdown file and
a line of a JSONL corpus (``ragsnap seed``), and a document ``ragsnap import`` writes
into its corpus. Over it: exit 2 naming the document, its size, the cap and the fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import run_cli
from ragsnap.kb.corpus import MAX_DOCUMENT_BYTES

CAP = f"more than the {MAX_DOCUMENT_BYTES:,} (16 MiB) one may have; split it into several"
BIG = MAX_DOCUMENT_BYTES + 1


def _jsonl_line(source: str, size: int) -> bytes:
    """A JSONL seed document whose line (without its newline) is ``size`` bytes."""
    head = json.dumps({"source": source, "text": ""})
    return head[:-2].encode() + b"x" * (size - len(head)) + b'"}'


@pytest.mark.parametrize("ending", [b"\n", b"\r\n", b""])
def test_a_jsonl_line_over_the_cap_is_exit_2(tmp_path: Path, ending: bytes) -> None:
    corpus = tmp_path / "corpus.jsonl"
    small = _jsonl_line("small", 100)
    corpus.write_bytes(small + b"\n" + _jsonl_line("big", BIG) + ending)
    run = run_cli("seed", "--seed-docs", "corpus.jsonl", cwd=tmp_path)
    assert run.code == 2, run.out + run.err
    assert run.err.splitlines()[-1].startswith(
        f"InputError: corpus.jsonl at line 2: is a seed document of {BIG:,} bytes, {CAP}"
    ), run.err
    assert not (tmp_path / ".ragsnap" / "kb.sqlite").exists()


@pytest.mark.slow
def test_a_jsonl_line_at_the_cap_is_seeded(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_bytes(_jsonl_line("at-cap", MAX_DOCUMENT_BYTES) + b"\n")
    run = run_cli("seed", "--seed-docs", "corpus.jsonl", cwd=tmp_path)
    assert run.code == 0, run.out + run.err


def test_a_markdown_document_over_the_cap_is_exit_2(tmp_path: Path) -> None:
    docs = tmp_path / "seed-docs"
    docs.mkdir()
    (docs / "big.md").write_bytes(b"---\nsource: big\n---\n" + b"word " * (BIG // 5 + 1))
    size = (docs / "big.md").stat().st_size
    run = run_cli("seed", cwd=tmp_path)
    assert run.code == 2, run.out + run.err
    assert run.err.splitlines()[-1].startswith(
        f"InputError: seed-docs/big.md: is a seed document of {size:,} bytes, {CAP}"
    ), run.err


def test_an_imported_document_over_the_cap_stops_the_import(tmp_path: Path) -> None:
    data = tmp_path / "ds"
    (data / "qrels").mkdir(parents=True)
    docs = [{"_id": "small", "text": "a small document"}, {"_id": "big", "text": "y" * BIG}]
    (data / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (data / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "small"}) + "\n")
    (data / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\tsmall\t1\n")
    run = run_cli("import", "beir", "ds", "--out", "out", cwd=tmp_path)
    assert run.code == 2, run.out + run.err
    last = run.err.splitlines()[-1]
    assert last.startswith("InputError: ds/corpus.jsonl line 2: is a seed document of "), last
    assert CAP in last
    assert not (tmp_path / "out" / "corpus.jsonl").exists()

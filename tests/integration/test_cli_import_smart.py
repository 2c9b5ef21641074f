"""``ragsnap import smart`` on the real Cranfield collection, driven as a user would.

The shared data's ``cranfield/`` folder (1,400 abstracts, 225 queries, graded
qrels) is imported through the CLI, its counts and quirks checked against
the files, imported again for byte identity, and run through the whole loop:
``ragsnap seed`` from the written ``ragsnap.yaml``, ``ragsnap snapshot`` of
every case and ``ragsnap score`` with graded metrics per split.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from conftest import Run, import_skipped, run_cli, run_score, shared_data

OUTPUTS = ("corpus.jsonl", "golden-cases.json", "ragsnap.yaml")

#: what importing Cranfield leaves out or adjusts, in the summary's order
SKIPPED = [
    "2 documents with neither .T nor .W text, not imported: 471, 995",
    "3 documents with a field marker repeated inside a field, read as part of that field: "
    "240 (.A, .B), 576 (.W), 578 (.W)",
    "225 qrels lines of SMART grade -1 (not relevant) kept as grade 0",
    "1 qrels line judging a document that was not imported, dropped: q125 -> 995",
]


def cranfield() -> Path:
    return shared_data("cranfield/cran.all.1400").parent


def import_cli(cwd: Path, *args: str) -> Run:
    return run_cli("import", "smart", *args, cwd=cwd)


def summary(run: Run) -> str:
    lines = [line for line in run.out.splitlines() if line.startswith("import: ")]
    assert lines, run.out + run.err
    return lines[0].removeprefix("import: ")


def cases(out: Path) -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads((out / "golden-cases.json").read_text())["cases"]
    return data


def corpus(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "corpus.jsonl").read_text().splitlines()]


def test_cranfield_import_counts_and_quirks(tmp_path: Path) -> None:
    run = import_cli(tmp_path, str(cranfield()), "--out", "out")
    assert run.code == 0, run.out + run.err
    assert summary(run).startswith("1,398 documents (")
    assert summary(run).endswith("), 225 queries, 1,836 judgments, 0 no-answer queries")
    assert import_skipped(run) == SKIPPED
    assert "wrote: out/corpus.jsonl, out/golden-cases.json, out/ragsnap.yaml" in run.out

    out = tmp_path / "out"
    docs = corpus(out)
    sources = [d["source"] for d in docs]
    assert len(docs) == 1400 - 2
    assert sources[:3] == ["1", "2", "3"]
    assert "471" not in sources and "995" not in sources
    assert docs[0] == {
        "source": "1",
        "title": "experimental investigation of the aerodynamics of a wing in a slipstream .",
        "text": docs[0]["text"],
        "authors": "brenckman,m.",
        "bibliography": "j. ae. scs. 25, 1958, 324.",
    }
    assert docs[0]["text"].startswith(
        "experimental investigation of the aerodynamics of a wing in a slipstream . an "
        "experimental study of a wing in a propeller slipstream was made"
    )
    stray = next(d for d in docs if d["source"] == "240")
    assert "region . application to turbulent separations" in stray["text"]
    assert stray["authors"] == "dean r. chapman"

    found = cases(out)
    assert len(found) == 225
    assert [c["id"] for c in found[:4]] == ["q001", "q002", "q003", "q004"]
    assert [c["tags"] for c in found[:4]] == [
        ["smart-I:001"],
        ["smart-I:002"],
        ["smart-I:004"],  # positions, not .I numbers: cranqrel's query 3
        ["smart-I:008"],
    ]
    assert found[2]["query"] == (
        "what problems of heat conduction in composite slabs have been solved so far ."
    )
    assert {c["split"] for c in found} == {"test"}
    grades = Counter(j["grade"] for c in found for j in c["judgments"])
    assert grades == {3: 128, 2: 387, 1: 734 + 363 - 1, 0: 225}  # SMART 1, 2, 3 + 4, -1
    assert all(any(j["grade"] > 0 for j in c["judgments"]) for c in found)
    assert (
        (out / "ragsnap.yaml")
        .read_text()
        .startswith(
            "# written by `ragsnap import smart`\nkb:\n  path: kb.sqlite\n  seedDocs: corpus.jsonl\n"
        )
    )

    again = import_cli(tmp_path, str(cranfield()), "--out", "again")
    assert again.code == 0, again.err
    for name in OUTPUTS:
        assert (out / name).read_bytes() == (tmp_path / "again" / name).read_bytes(), name


@pytest.mark.slow
def test_dev_fraction_then_seed_snapshot_score(tmp_path: Path) -> None:
    run = import_cli(tmp_path, str(cranfield()), "--out", "cran", "--dev-fraction", "0.3")
    assert run.code == 0, run.out + run.err
    out = tmp_path / "cran"
    splits = Counter(c["split"] for c in cases(out))
    assert splits == {"dev": 71, "test": 154}

    run = run_cli("seed", "--config", "cran/ragsnap.yaml", cwd=tmp_path)
    assert run.code == 0, run.out + run.err
    assert "1398 documents" in run.out
    run = run_cli(
        "snapshot",
        "--config",
        "cran/ragsnap.yaml",
        "--cases",
        "cran/golden-cases.json",
        "--fixtures",
        "cran/fixtures",
        "--retrieved-at",
        "2026-01-01T00:00:00Z",
        "--skip-eval",
        cwd=tmp_path,
    )
    assert run.code == 0, run.out + run.err
    assert len(list((out / "fixtures").glob("q*.json"))) == 225

    run, report = run_score(
        out / "golden-cases.json",
        out / "fixtures",
        tmp_path / "reports",
        cwd=tmp_path,
        config=out / "ragsnap.yaml",
    )
    assert "Graded (225 judged case(s)): " in run.out
    assert {split: group["cases"] for split, group in report["groups"]["split"].items()} == {
        "dev": 71,
        "test": 154,
    }
    for name in ("ndcg@10", "mrr@10", "recall@10", "map"):
        metric = report["summary"]["metrics"][name]
        assert metric["cases"] == 225
        assert 0 < metric["mean"] <= 1, name


def test_a_missing_file_exits_2_and_says_what_to_do(tmp_path: Path) -> None:
    partial = tmp_path / "partial"
    partial.mkdir()
    for name in ("cran.all.1400", "cran.qry"):
        shutil.copy(cranfield() / name, partial / name)
    run = import_cli(tmp_path, "partial", "--out", "out")
    assert run.code == 2, run.out + run.err
    assert run.err.strip() == (
        "InputError: partial: has no cranqrel; put the collection's cranqrel there, or pass "
        "--qrels FILE (or pass the documents file as SOURCE with --topics and --qrels)"
    )
    assert not (tmp_path / "out").exists()

    run = import_cli(
        tmp_path, "partial/cran.all.1400", "--topics", "partial/cran.qry", "--out", "o"
    )
    assert run.code == 2
    assert "UsageError: smart needs --qrels FILE" in run.err

    run = import_cli(tmp_path, str(cranfield()), "--qrels", "nope", "--out", "out")
    assert run.code == 2
    assert "InputError: nope: not found; pass --qrels with an existing file" in run.err
    assert "Traceback" not in run.err


def test_bad_dev_fraction_exits_2(tmp_path: Path) -> None:
    for value in ("0", "1", "1.5", "-0.2", "nan"):
        run = import_cli(tmp_path, str(cranfield()), "--out", "out", "--dev-fraction", value)
        assert run.code == 2, value
        assert "UsageError: --dev-fraction" in run.err
        assert "give a fraction between 0 and 1, both excluded" in run.err
    run = import_cli(tmp_path, str(cranfield()), "--out", "out", "--dev-fraction", "a third")
    assert run.code == 2
    assert "argument --dev-fraction: invalid float value: 'a third'" in run.err
    run = import_cli(
        tmp_path, str(cranfield()), "--out", "out", "--dev-fraction", "0.3", "--split", "dev"
    )
    assert run.code == 2
    assert "UsageError: smart: --split dev and --dev-fraction both choose" in run.err
    assert not (tmp_path / "out").exists()

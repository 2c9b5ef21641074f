"""``ragsnap trial --plan``: a pinned plan refuses every input whose content changed.

A tiny project (two documents, two cases, frozen vectors, an alias file and
gates) as real files; every refusal happens before anything is seeded, so
only the first test runs a trial.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import Run, run_cli
from ragsnap.trial.plan import canonical_sha256

CASES = {
    "schemaVersion": 1,
    "defaults": {"kbScope": "s", "topK": 3},
    "cases": [
        {
            "id": "pool",
            "query": "How big is the pool?",
            "language": "en",
            "category": "database",
            "split": "dev",
            "expectedSources": ["pool"],
            "judgments": [{"chunkId": "pool#0", "grade": 3}],
        },
        {
            "id": "cache",
            "query": "When do cache keys expire?",
            "language": "en",
            "category": "cache",
            "split": "test",
            "expectedSources": ["cache"],
            "judgments": [{"chunkId": "cache#0", "grade": 3}],
        },
    ],
}
VECTORS = {
    "model": "m",
    "revision": "1",
    "dimension": 2,
    "chunks": {"pool#0": [1, 0], "cache#0": [0, 1]},
    "queries": {"How big is the pool?": [1, 0.1], "When do cache keys expire?": [0.1, 1]},
}
DOC = """---
source: {source}
title: {source}
breadcrumb: KB > {source}
category: {category}
kb_scope: s
---

{body}
"""


def write_tiny_project(root: Path) -> Path:
    """Two documents, two cases, frozen vectors, aliases and gates in ``root``."""
    (root / "seed-docs").mkdir(parents=True)
    (root / "cases").mkdir()
    for source, category, body in (
        ("pool", "database", "The connection pool holds ten connections. ERR-4031: exhausted."),
        ("cache", "cache", "Redis cache keys expire after one hour; a stampede follows."),
    ):
        text = DOC.format(source=source, category=category, body=body)
        (root / "seed-docs" / f"{source}.md").write_text(text, encoding="utf-8")
    (root / "cases" / "golden-cases.json").write_text(json.dumps(CASES), encoding="utf-8")
    (root / "vectors.json").write_text(json.dumps(VECTORS), encoding="utf-8")
    (root / "aliases.yaml").write_text(
        "groups:\n  pool: [pool, connections]\n  cache: [cache, redis]\n", encoding="utf-8"
    )
    (root / "gates.yaml").write_text(
        "version: 1\ngates:\n  - {method: lexical, measure: mrr@10, min: 0.1}\n", encoding="utf-8"
    )
    (root / "ragsnap.yaml").write_text(
        "kb:\n  embedder: {kind: frozen, path: vectors.json}\n"
        "trial:\n  aliases: aliases.yaml\n  gates: gates.yaml\n",
        encoding="utf-8",
    )
    return root


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    root = write_tiny_project(tmp_path / "tiny")
    wrote = run_cli(
        "trial", "--methods", "lexical,vector,alias", "--write-plan", "plan.json", cwd=root
    )
    assert wrote.code == 0, wrote.err
    return root


def refused(root: Path) -> Run:
    run = run_cli("trial", "--plan", "plan.json", cwd=root)
    assert run.code == 2, run.out + run.err
    assert "plan.json" in run.err and "--write-plan" in run.err, run.err
    assert not (root / "reports" / "trial.json").exists()  # refused before it ran
    return run


def test_an_edited_frozen_vectors_file_is_refused_naming_the_file(tiny: Path) -> None:
    first = run_cli("trial", "--plan", "plan.json", cwd=tiny)
    assert first.code == 0, first.out + first.err  # the same inputs run
    (tiny / "reports" / "trial.json").unlink()
    vectors = json.loads((tiny / "vectors.json").read_text(encoding="utf-8"))
    vectors["queries"]["How big is the pool?"] = [0.1, 1]  # the model and revision stay
    (tiny / "vectors.json").write_text(json.dumps(vectors), encoding="utf-8")
    run = refused(tiny)
    assert "/inputs/vectors" in run.err and "vectors.json" in run.err, run.err
    assert "/inputs/corpus" not in run.err and "/inputs/gates" not in run.err


def test_an_edited_alias_file_is_refused_naming_it(tiny: Path) -> None:
    aliases = tiny / "aliases.yaml"
    aliases.write_text(aliases.read_text(encoding="utf-8") + "  ttl: [expire]\n", "utf-8")
    run = refused(tiny)
    assert "/inputs/aliases: the alias file" in run.err and "aliases.yaml" in run.err, run.err


def test_an_edited_gates_file_is_refused_naming_it(tiny: Path) -> None:
    (tiny / "gates.yaml").write_text(
        "version: 1\ngates:\n  - {method: lexical, measure: mrr@10, min: 0.9}\n", encoding="utf-8"
    )
    run = refused(tiny)
    assert "/inputs/gates: the gates file gates.yaml" in run.err, run.err


def test_a_plan_without_gates_refuses_a_run_with_gates(tmp_path: Path) -> None:
    root = write_tiny_project(tmp_path / "tiny")
    config = root / "ragsnap.yaml"
    config.write_text(config.read_text(encoding="utf-8").replace("  gates: gates.yaml\n", ""))
    assert run_cli("trial", "--methods", "lexical", "--write-plan", "plan.json", cwd=root).code == 0
    run = run_cli("trial", "--plan", "plan.json", "--gates", "gates.yaml", cwd=root)
    assert run.code == 2 and "the plan has no gates" in run.err and "gates.yaml" in run.err


def test_changed_judgments_are_refused_naming_the_cases_file(tiny: Path) -> None:
    cases = json.loads((tiny / "cases" / "golden-cases.json").read_text(encoding="utf-8"))
    cases["cases"][0]["judgments"][0]["grade"] = 2
    (tiny / "cases" / "golden-cases.json").write_text(json.dumps(cases), encoding="utf-8")
    run = refused(tiny)
    assert "/inputs/judgments: the judgments in cases/golden-cases.json" in run.err, run.err
    assert "/inputs/cases: the cases file cases/golden-cases.json" in run.err


def test_a_changed_query_is_refused_as_changed_cases(tiny: Path) -> None:
    path = tiny / "cases" / "golden-cases.json"
    path.write_text(path.read_text(encoding="utf-8").replace("big", "large"), encoding="utf-8")
    run = refused(tiny)
    assert "/inputs/cases" in run.err and "/inputs/judgments" not in run.err, run.err


def test_a_changed_document_is_refused_as_a_changed_corpus(tiny: Path) -> None:
    doc = tiny / "seed-docs" / "cache.md"
    doc.write_text(doc.read_text(encoding="utf-8") + "\nOne more line.\n", encoding="utf-8")
    run = refused(tiny)
    assert "/inputs/corpus: the corpus of" in run.err and "seed-docs" in run.err, run.err


def test_a_version_1_plan_is_refused_with_the_fix(tiny: Path) -> None:
    plan = json.loads((tiny / "plan.json").read_text(encoding="utf-8"))
    plan["schemaVersion"] = 1
    plan["plan"]["inputs"] = {k: plan["plan"]["inputs"][k] for k in ("corpus", "cases")}
    plan["planSha256"] = canonical_sha256(plan["plan"])  # as an older ragsnap wrote it
    (tiny / "plan.json").write_text(json.dumps(plan), encoding="utf-8")
    run = refused(tiny)
    assert "version 1 plan" in run.err and "/schemaVersion" in run.err, run.err
    assert "Traceback" not in run.err


# -- --embedder NAME ---------------------------------------------------------------------


def test_a_plan_written_with_embedder_runs_with_it_and_refuses_the_flag(tmp_path: Path) -> None:
    root = write_tiny_project(tmp_path / "tiny")
    wrote = run_cli(
        "trial", "--methods", "vector", "--embedder", "hashing", "--write-plan", "p.json", cwd=root
    )
    assert wrote.code == 0, wrote.err
    plan = json.loads((root / "p.json").read_text(encoding="utf-8"))["plan"]
    assert plan["embedder"] == "hashing"
    assert plan["methods"][0]["embedder"]["kind"] == "hashing"  # not ragsnap.yaml's frozen
    again = run_cli("trial", "--plan", "p.json", "--embedder", "hashing", cwd=root)
    assert again.code == 2 and "--embedder would change the pinned plan" in again.err
    ran = run_cli("trial", "--plan", "p.json", cwd=root)  # the plan's embedder, no flag
    assert ran.code == 0, ran.out + ran.err
    report = json.loads((root / "reports" / "trial.json").read_text(encoding="utf-8"))
    assert report["plan"]["embedder"] == "hashing"
    assert report["methods"]["vector"]["definition"]["embedder"]["kind"] == "hashing"
    private = run_cli("trial", "--plan", "p.json", "--privacy", cwd=root)
    assert private.code == 0, private.err
    shared = json.loads((root / "reports" / "trial.json").read_text(encoding="utf-8"))
    assert "embedder" not in shared["plan"] and shared["planSha256"] == report["planSha256"]

"""``--embedder NAME`` in every command that chooses an embedder, as a user runs them.

The tiny project of ``test_cli_trial_plan`` configures frozen vectors; ``--embedder
hashing`` replaces them in seed, lookup, snapshot, score and check without editing
ragsnap.yaml, and a command without the flag still reads ragsnap.yaml's.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from test_cli_trial_plan import write_tiny_project

from conftest import run_cli
from ragsnap.settings import EMBEDDER_FUSION

QUERY = "How big is the pool?"


def test_one_flag_chooses_the_embedder_of_every_command(tmp_path: Path) -> None:
    root = write_tiny_project(tmp_path / "tiny")
    seeded = run_cli("seed", "--embedder", "hashing", cwd=root)
    assert seeded.code == 0, seeded.err
    found = run_cli("lookup", QUERY, "--embedder", "hashing", cwd=root)
    assert found.code == 0, found.err
    assert json.loads(found.out)["lookupResult"]["evidenceBlocks"][0]["source"] == "pool"
    configured = run_cli("lookup", QUERY, cwd=root)  # ragsnap.yaml's frozen vectors
    assert configured.code == 2 and "built with the embedder hashing" in configured.err
    snap = run_cli("snapshot", "--embedder", "hashing", cwd=root)
    assert snap.code == 0, snap.out + snap.err
    fixture = json.loads((root / "fixtures" / "pool.json").read_text(encoding="utf-8"))
    assert fixture["generator"]["embedder"]["kind"] == "hashing"
    scored = run_cli("score", "--embedder", "hashing", cwd=root)
    assert scored.code == 0 and "Stale fixtures" not in scored.out, scored.out
    stale = run_cli("score", cwd=root)  # the fixtures were not captured with kb.embedder
    assert "Stale fixtures" in stale.out and "kb.embedder changed" in stale.out
    checked = run_cli("check", "--embedder", "hashing", cwd=root)
    assert checked.code == 0 and "Stale" not in checked.out, checked.out


@pytest.mark.parametrize("command", ["seed", "snapshot", "lookup", "score", "trial", "serve"])
def test_an_unknown_name_is_a_usage_error_naming_the_choices(tmp_path: Path, command: str) -> None:
    root = write_tiny_project(tmp_path / "tiny")
    args = [QUERY] if command == "lookup" else []
    run = run_cli(command, *args, "--embedder", "minilim", cwd=root)
    assert run.code == 2, run.out + run.err
    assert "did you mean 'minilm'" in run.err and "hashing, minilm" in run.err, run.err


@pytest.mark.slow
def test_trial_embedder_minilm_needs_no_yaml(tmp_path: Path) -> None:
    """MiniLM by name: the real model, its fusion weights, no ragsnap.yaml edit."""
    root = write_tiny_project(tmp_path / "tiny")
    run = run_cli("trial", "--methods", "vector,hybrid", "--embedder", "minilm", cwd=root)
    assert run.code == 0, run.out + run.err
    report = json.loads((root / "reports" / "trial.json").read_text(encoding="utf-8"))
    definition = report["methods"]["hybrid"]["definition"]
    assert definition["embedder"]["model"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert report["plan"]["embedder"] == "minilm"
    assert "seeding the store of sentence-transformer" in run.err


@pytest.mark.skipif(
    importlib.util.find_spec("wordllama") is None, reason="needs the wordllama extra"
)
def test_wordllama_by_name_seeds_looks_up_and_trials(tmp_path: Path) -> None:
    """The torch-free static embedder by name: its fingerprint in the report and the
    knowledge base, its own fusion weights, the same ranking twice."""
    root = write_tiny_project(tmp_path / "tiny")
    seeded = run_cli("seed", "--embedder", "wordllama", cwd=root)
    assert seeded.code == 0, seeded.err
    found = run_cli("lookup", QUERY, "--embedder", "wordllama", "--method", "vector", cwd=root)
    assert found.code == 0, found.err
    assert json.loads(found.out)["lookupResult"]["evidenceBlocks"][0]["source"] == "pool"
    hashing = run_cli("lookup", QUERY, "--embedder", "hashing", cwd=root)
    assert hashing.code == 2 and "wordllama" in hashing.err, hashing.err
    run = run_cli("trial", "--methods", "vector,hybrid", "--embedder", "wordllama", cwd=root)
    assert run.code == 0, run.out + run.err
    report = json.loads((root / "reports" / "trial.json").read_text(encoding="utf-8"))
    definition = report["methods"]["hybrid"]["definition"]
    assert definition["embedder"]["kind"] == "wordllama"
    assert definition["embedder"]["revision"].startswith("wordllama==0.4")
    weights = EMBEDDER_FUSION["wordllama"]
    assert definition["settings"]["fusion"]["weights"] == {
        "lexical": weights.lexical_weight,
        "vector": weights.vector_weight,
    }
    assert report["determinism"]["identical"] is True

"""``ragsnap trial``'s store cache as a user meets it: seeded once, reused while the
corpus and embedder stay the same, the same report either way (outside timing).

The tiny project of ``test_cli_trial_plan`` (two documents, frozen vectors): real
trials, real SQLite stores under the project's .ragsnap/trial-stores.
"""

from __future__ import annotations

import json
from pathlib import Path

from test_cli_trial_plan import write_tiny_project

from conftest import Run, run_cli

METHODS = ("--methods", "lexical,vector,hybrid", "--depth", "5")


def trial(root: Path, *args: str) -> tuple[Run, str, str]:
    """The run, the JSON report without timing (as text) and the Markdown before it."""
    run = run_cli("trial", *METHODS, *args, cwd=root)
    assert run.code == 0, run.out + run.err
    report = json.loads((root / "reports" / "trial.json").read_text(encoding="utf-8"))
    assert report["timing"]  # present, and left out of the comparison
    del report["timing"]
    markdown = (root / "reports" / "trial.md").read_text(encoding="utf-8")
    return run, json.dumps(report, sort_keys=True), markdown.split("## Timing")[0]


def test_a_reused_store_gives_the_report_a_seeded_one_gives(tmp_path: Path) -> None:
    root = write_tiny_project(tmp_path / "tiny")
    seeded, report, markdown = trial(root)
    assert "trial: seeding the store of frozen:m@1" in seeded.err, seeded.err
    stores = root / ".ragsnap" / "trial-stores"
    [folder] = [p for p in stores.iterdir() if not p.name.startswith(".")]
    assert folder.as_posix().split("tiny/")[1] in seeded.err  # where it is, to clear it
    reused, again, again_md = trial(root)
    assert "trial: reused the store of frozen:m@1" in reused.err, reused.err
    assert "seeding" not in reused.err
    assert again == report and again_md == markdown
    temporary, fresh, fresh_md = trial(root, "--no-store-cache")
    assert "seeding a temporary store" in temporary.err and "--kb" in temporary.err
    assert fresh == report and fresh_md == markdown
    assert [p for p in stores.iterdir() if not p.name.startswith(".")] == [folder]


def test_a_changed_corpus_or_vectors_file_seeds_a_new_store(tmp_path: Path) -> None:
    root = write_tiny_project(tmp_path / "tiny")
    assert "seeding the store" in trial(root)[0].err
    doc = root / "seed-docs" / "cache.md"
    doc.write_text(doc.read_text(encoding="utf-8") + "\nOne more line.\n", encoding="utf-8")
    assert "seeding the store" in trial(root)[0].err  # another corpus
    vectors = json.loads((root / "vectors.json").read_text(encoding="utf-8"))
    vectors["chunks"]["cache#0"] = [0.2, 1]  # the same model and revision
    (root / "vectors.json").write_text(json.dumps(vectors), encoding="utf-8")
    assert "seeding the store" in trial(root)[0].err  # other vectors
    assert "reused the store" in trial(root)[0].err
    stores = root / ".ragsnap" / "trial-stores"
    assert len([p for p in stores.iterdir() if not p.name.startswith(".")]) == 3


def test_the_cache_folder_is_configurable_and_can_be_off(tmp_path: Path) -> None:
    root = write_tiny_project(tmp_path / "tiny")
    config = root / "ragsnap.yaml"
    config.write_text(config.read_text(encoding="utf-8") + "  storeCache: cache/stores\n")
    assert "seeding the store" in trial(root)[0].err
    assert (root / "cache" / "stores").is_dir() and not (root / ".ragsnap").exists()
    config.write_text(config.read_text(encoding="utf-8").replace("cache/stores", "false"))
    assert "seeding a temporary store" in trial(root)[0].err

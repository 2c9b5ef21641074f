"""``ragsnap init`` driven as a user would: a new project that works end to end."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import jsonschema
import pytest

from conftest import REPO, run_cli
from ragsnap import __version__
from ragsnap.io.schema import load_schema

PACKAGE = REPO / "eval" / "ragsnap"
TEMPLATE = PACKAGE / "templates" / "project"

WRITTEN = [
    ".github/workflows/ragsnap.yml",
    ".ragsnap/.gitignore",
    "cases/golden-cases.json",
    "ragsnap.yaml",
    "reports/.gitignore",
    "seed-docs/connection-pool.md",
    "seed-docs/log-retention.md",
]


def _tree(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def test_init_makes_a_project_that_seeds_snapshots_accepts_and_passes(tmp_path: Path) -> None:
    run = run_cli("init", "proj", cwd=tmp_path)
    assert run.code == 0, run.err
    root = tmp_path / "proj"
    assert _tree(root) == WRITTEN
    lines = run.out.splitlines()
    assert lines[0] == "init: wrote 7 files to proj:"
    assert lines[1 : 1 + len(WRITTEN)] == [f"  {name}" for name in WRITTEN]
    assert "  cd proj" in lines
    assert "  ragsnap seed && ragsnap snapshot && ragsnap accept" in lines
    assert '  git add . && git commit -m "ragsnap: golden cases, fixtures and baseline"' in lines
    assert lines[-1].startswith(
        f"Before the first pull request, point RAGSNAP_REQUIREMENT (default ragsnap=={__version__}) "
    )
    workflow = (root / ".github/workflows/ragsnap.yml").read_text()
    assert f"      RAGSNAP_REQUIREMENT: ragsnap=={__version__}\n" in workflow
    cases = json.loads((root / "cases/golden-cases.json").read_text())
    jsonschema.validate(cases, load_schema("golden-cases"))

    # seed from a sub-folder: the knowledge base still lands in the root's .ragsnap/
    seed = run_cli("seed", cwd=root / "seed-docs")
    assert seed.code == 0, seed.err
    assert (root / ".ragsnap/kb.sqlite").is_file()
    snapshot = run_cli("snapshot", cwd=root)
    assert snapshot.code == 0, snapshot.out + snapshot.err
    assert "3 cases: 3 passed, 0 failed" in snapshot.out
    accept = run_cli("accept", cwd=root / "reports")
    assert accept.code == 0, accept.out + accept.err
    assert (root / "reports/baseline.json").is_file()
    assert (root / "reports/baseline.md").is_file()
    check = run_cli("score", "--compare-to", "reports/baseline.json", cwd=root)
    assert check.code == 0, check.out + check.err
    assert "No regressions against reports/baseline.json" in check.out


def test_init_in_the_current_folder_beside_other_files(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("my service\n")
    run = run_cli("init", cwd=tmp_path)
    assert run.code == 0, run.err
    assert "init: wrote 7 files to .:" in run.out
    assert "cd " not in run.out
    assert _tree(tmp_path) == sorted([*WRITTEN, "README.md"])


def test_init_never_overwrites_and_then_writes_nothing(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    (root / "cases").mkdir(parents=True)
    (root / "cases/golden-cases.json").write_text("{}\n")
    (root / "seed-docs").write_text("a file where a folder belongs\n")
    run = run_cli("init", "proj", cwd=tmp_path)
    assert run.code == 2
    assert run.out == ""
    assert run.err.startswith(
        "OutputError: ragsnap init writes nothing, since it would overwrite or cannot create: "
        "proj/cases/golden-cases.json, proj/seed-docs/connection-pool.md, "
        "proj/seed-docs/log-retention.md. Move them aside, or run `ragsnap init NEW-FOLDER`"
    )
    assert _tree(root) == ["cases/golden-cases.json", "seed-docs"]
    assert (root / "cases/golden-cases.json").read_text() == "{}\n"


def test_every_template_file_is_package_data() -> None:
    """The wheel ships what init writes: pyproject's package-data globs match every file."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    patterns = pyproject["tool"]["setuptools"]["package-data"]["ragsnap"]
    files = [p.relative_to(PACKAGE).as_posix() for p in TEMPLATE.rglob("*") if p.is_file()]
    assert len(files) == len(WRITTEN)
    shipped = {
        p.relative_to(PACKAGE).as_posix()
        for pattern in patterns
        for p in PACKAGE.glob(pattern)
        if p.is_file()
    }
    assert set(files) <= shipped


def _git(*args: str, cwd: Path) -> str:
    env = {
        **os.environ,
        "GIT_CONFIG_GLOBAL": os.devnull,  # no user's settings, no global excludes
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
    }
    run = subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )
    assert run.returncode in (0, 1), run.stderr  # check-ignore: 1 = not ignored
    return run.stdout


def test_a_clone_of_an_inited_project_stays_clean_after_seed_and_snapshot(
    tmp_path: Path,
) -> None:
    """The ignore files `init` writes keep themselves, so `git add .` (what init
    suggests) commits them and not the knowledge base, and a clone is clean after
    `seed` and `snapshot`; reports/history/ is committed, generated reports are not."""
    root = tmp_path / "proj"
    root.mkdir()
    _git("init", "-q", cwd=root)
    assert run_cli("init", cwd=root).code == 0
    for argv in (["seed"], ["snapshot"], ["accept"]):
        run = run_cli(*argv, cwd=root)
        assert run.code == 0, run.out + run.err
    _git("add", ".", cwd=root)
    committed = _git("ls-files", cwd=root).split()
    assert ".ragsnap/.gitignore" in committed
    assert "reports/.gitignore" in committed
    assert "reports/baseline.json" in committed
    assert not [name for name in committed if name.startswith(".ragsnap/") and "kb" in name]
    assert not [name for name in committed if name.startswith("reports/current")]
    _git("commit", "-q", "-m", "baseline", cwd=root)

    _git("clone", "-q", str(root), "clone", cwd=tmp_path)
    clone = tmp_path / "clone"
    assert (clone / ".ragsnap/.gitignore").is_file()
    for argv in (["seed"], ["snapshot", "--skip-eval"], ["score"]):
        run = run_cli(*argv, cwd=clone)
        assert run.code == 0, run.out + run.err
    assert (clone / ".ragsnap/kb.sqlite").is_file()
    assert (clone / "reports/current.json").is_file()
    assert _git("status", "--porcelain", "--untracked-files=all", cwd=clone) == ""

    assert any((clone / "reports/history").glob("*.json"))  # accept's, committed
    (clone / "reports/history/2026-12-01.json").write_text("{}\n")
    ignored = _git(
        "check-ignore",
        "--no-index",
        "reports/history/2026-12-01.json",
        "reports/history/",
        "reports/current.json",
        "reports/pr-comment.md",
        "reports/junit.xml",
        "reports/baseline.json",
        "reports/.gitignore",
        ".ragsnap/kb.sqlite",
        ".ragsnap/.gitignore",
        cwd=clone,
    ).split()
    assert ignored == [
        "reports/current.json",
        "reports/pr-comment.md",
        "reports/junit.xml",
        ".ragsnap/kb.sqlite",
    ]
    assert _git("status", "--porcelain", cwd=clone) == "?? reports/history/2026-12-01.json\n"

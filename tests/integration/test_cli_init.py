"""``ragsnap init`` driven as a user would: a new project that works end to end."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from conftest import REPO, run_cli
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
    # the ignore files keep the knowledge base and generated reports out of git
    assert (root / ".ragsnap/.gitignore").read_text().splitlines()[-1] == "*"
    assert "!baseline.json" in (root / "reports/.gitignore").read_text().splitlines()


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

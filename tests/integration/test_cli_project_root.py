"""Every command finds the project root (the nearest folder with ragsnap.yaml) from a
sub-folder: defaults are the root's, typed paths stay relative to the current folder.
The walk stops at a repository root or the home folder, and skips, with a warning, a
ragsnap.yaml that another user could have planted (world-writable or foreign-owned)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, Project, block, make_case, make_fixture, run_cli


def _project(project: Project, *, config: bool = True) -> Path:
    project.write_cases(
        [
            make_case("pool", expectedKeywords=["pool size"]),
            make_case("none", noAnswer=True, expectedSources=None),  # en's no-answer case
        ]
    )
    project.write_fixture(make_fixture("pool", [block(1, "mysql-pool", text="The pool size.")]))
    project.write_fixture(make_fixture("none", []))
    if config:
        (project.root / "ragsnap.yaml").write_text("diff:\n  tolerances: {passRate: 0.0}\n")
    (project.root / "reports").mkdir()
    baseline = run_cli(
        "score",
        "--json-report",
        "reports/baseline.json",
        "--markdown-report",
        "reports/baseline.md",
        cwd=project.root,
    )
    assert baseline.code == 0, baseline.err
    return project.root


def test_score_from_a_sub_folder_uses_the_root(project: Project) -> None:
    root = _project(project)
    at_root = run_cli("score", "--compare-to", "reports/baseline.json", cwd=root)
    assert at_root.code == 0, at_root.err
    expected = {p: (root / p).read_bytes() for p in ("reports/current.json", "reports/current.md")}
    (root / "reports/current.json").unlink()

    run = run_cli("score", "--compare-to", "../reports/baseline.json", cwd=root / "cases")
    assert run.code == 0, run.out + run.err
    assert run.out == at_root.out
    assert run.err.splitlines()[0] == (
        f"ragsnap: using {root / 'ragsnap.yaml'} (found in a parent folder); working in the "
        "project root .., the paths below are relative to it"
    )  # then the note that these hand-written fixtures have no manifest
    assert not (root / "cases/reports").exists()
    # the same reports, byte for byte, as from the root: the paths they record are the root's
    assert {p: (root / p).read_bytes() for p in expected} == expected

    absolute = run_cli(
        "score", "--compare-to", str(root / "reports/baseline.json"), cwd=root / "reports"
    )
    assert absolute.code == 0, absolute.out + absolute.err
    assert "No regressions against reports/baseline.json" not in absolute.out  # typed absolute
    assert f"No regressions against {root / 'reports/baseline.json'}" in absolute.out


def test_typed_paths_stay_relative_to_the_current_folder(project: Project) -> None:
    root = _project(project)
    run = run_cli(
        "score",
        "--cases",
        "golden-cases.json",
        "--json-report",
        "mine.json",
        "--markdown-report",
        "mine.md",
        cwd=root / "cases",
    )
    assert run.code == 0, run.out + run.err
    assert "Reports: cases/mine.json, cases/mine.md" in run.out.splitlines()
    assert (root / "cases/mine.json").is_file()
    missing = run_cli("score", "--compare-to", "baseline.json", cwd=root / "cases")
    assert missing.code == 2
    assert missing.err.splitlines()[-1].startswith("InputError: cases/baseline.json: file not")


def test_the_nearest_ragsnap_yaml_wins(project: Project) -> None:
    root = _project(project)
    inner = root / "cases"
    (inner / "ragsnap.yaml").write_text("measures: [ndcg@10]\n")
    run = run_cli("score", cwd=inner)  # cases/ is a project of its own, without cases
    assert run.code == 2
    assert (
        run.err
        == "InputError: cases/golden-cases.json: file not found; " + run.err.split("; ", 1)[1]
    )
    assert "working in the project root" not in run.err


def test_without_ragsnap_yaml_the_current_folder_is_used(project: Project) -> None:
    root = _project(project, config=False)
    run = run_cli("score", "--compare-to", "../reports/baseline.json", cwd=root / "cases")
    assert run.code == 2
    assert run.err.startswith("InputError: cases/golden-cases.json: file not found")
    assert "working in the project root" not in run.err


def _planted(shared: Path, mode: int, owner: int | None = None, *, file_owner: int | None = None):
    """A project in ``shared/work`` without ragsnap.yaml, under a ``shared`` folder of
    ``mode`` (and ``owner``) holding a ragsnap.yaml; returns the working folder."""
    work = shared / "work"
    Project(work).write_cases([make_case("pool", expectedKeywords=["pool size"])])
    planted = shared / "ragsnap.yaml"
    planted.write_text("measures: [ndcg@10]\n")
    if file_owner is not None:
        os.chown(planted, file_owner, file_owner)
    shared.chmod(mode)
    if owner is not None:
        os.chown(shared, owner, owner)
    return work


@pytest.mark.parametrize(
    ("mode", "owner", "file_owner", "why"),
    [
        (0o777, None, None, "the folder is world-writable"),
        (0o1777, None, None, "the folder is world-writable (sticky, like /tmp"),
        (0o755, 4242, None, "the folder is owned by another user (uid 4242)"),
        (0o755, None, 4242, "the file is owned by another user (uid 4242)"),
    ],
    ids=["world-writable", "sticky-tmp", "folder-of-another-user", "file-of-another-user"],
)
def test_a_ragsnap_yaml_another_user_could_plant_is_ignored(
    tmp_path: Path, mode: int, owner: int | None, file_owner: int | None, why: str
) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    work = _planted(shared, mode, owner, file_owner=file_owner)
    try:
        run = run_cli("score", cwd=work)
    finally:
        shared.chmod(0o755)
        os.chown(shared, os.getuid(), os.getgid())
    # the planted settings are not read: the project is the current folder (no fixtures)
    assert run.code == 2
    warning, error = run.err.splitlines()
    assert warning.startswith(f"ragsnap: ignoring {shared / 'ragsnap.yaml'}: {why}")
    assert warning.endswith(
        ", so another user could have put it there; move your project to a folder of your "
        "own (or pass --config)"
    )
    assert "using" not in run.err and "project root" not in run.err
    assert error.startswith("InputError: fixtures")


def test_a_group_writable_folder_of_your_own_group_is_trusted(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    work = _planted(shared, 0o775)
    os.chown(shared, os.getuid(), os.getgid())
    run = run_cli("score", cwd=work)
    assert run.err.startswith(f"ragsnap: using {shared / 'ragsnap.yaml'} (found in a parent")
    assert "ignoring" not in run.err


@pytest.mark.parametrize("kind", ["folder", "file"])
def test_a_repository_root_stops_the_walk(tmp_path: Path, kind: str) -> None:
    (tmp_path / "ragsnap.yaml").write_text("measures: [ndcg@10]\n")
    repo = tmp_path / "repo"
    repo.mkdir()
    if kind == "folder":
        (repo / ".git").mkdir()
    else:  # a worktree or a submodule: .git is a file
        (repo / ".git").write_text("gitdir: /elsewhere\n")
    (repo / "sub").mkdir()
    run = run_cli("score", cwd=repo / "sub")
    assert run.code == 2
    assert run.err.startswith("InputError: cases/golden-cases.json: file not found")
    assert "using" not in run.err
    # the repository root itself is still a project root
    (repo / "ragsnap.yaml").write_text("measures: [ndcg@10]\n")
    inside = run_cli("score", cwd=repo / "sub")
    assert inside.err.startswith(f"ragsnap: using {repo / 'ragsnap.yaml'} (found in a parent")


def test_the_home_folder_stops_the_walk(tmp_path: Path) -> None:
    (tmp_path / "ragsnap.yaml").write_text("measures: [ndcg@10]\n")
    home = tmp_path / "home"
    (home / "sub").mkdir(parents=True)
    proc = subprocess.run(
        [sys.executable, "-m", "ragsnap", "score"],
        cwd=home / "sub",
        capture_output=True,
        text=True,
        env={**os.environ, "HOME": str(home), "PYTHONPATH": str(REPO / "eval")},
        timeout=300,
    )
    assert proc.returncode == 2
    assert proc.stderr.startswith("InputError: cases/golden-cases.json: file not found")


def test_with_config_the_found_file_only_marks_the_root(project: Project) -> None:
    root = _project(project)
    (root / "other.yaml").write_text("diff:\n  tolerances: {passRate: 0.0}\n")
    run = run_cli("score", "--config", "../other.yaml", cwd=root / "cases")
    assert run.code == 0, run.out + run.err
    assert run.err.splitlines()[0] == (
        f"ragsnap: {root / 'ragsnap.yaml'} marks the root (found in a parent folder); "
        "working in the project root .., the paths below are relative to it"
    )

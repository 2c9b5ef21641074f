"""Every command finds the project root (the nearest folder with ragsnap.yaml) from a
sub-folder: defaults are the root's, typed paths stay relative to the current folder."""

from __future__ import annotations

from pathlib import Path

from conftest import Project, block, make_case, make_fixture, run_cli


def _project(project: Project, *, config: bool = True) -> Path:
    project.write_cases([make_case("pool", expectedKeywords=["pool size"])])
    project.write_fixture(make_fixture("pool", [block(1, "mysql-pool", text="The pool size.")]))
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
        "ragsnap: working in the project root .. (the nearest folder with ragsnap.yaml); "
        "the paths below are relative to it"
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
    assert run.out.splitlines()[-1] == "Reports: cases/mine.json, cases/mine.md"
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

"""``ragsnap explain CASE``: one case stage by stage, against a git ref or a folder."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import run_cli
from ragsnap.scoring.attribution import STAGES

CASE = "obs-log-retention"


def _git(*args: str, cwd: Path) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    ).stdout


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The issue's scenario in a git repository: an accepted project committed and
    tagged ``base``, its baseline fixtures also copied to ``base-fixtures``; then the
    log-retention document no longer says "14 days" and the fixtures are re-snapshotted
    (not committed). The tests only read it."""
    tmp = tmp_path_factory.mktemp("explain")
    assert run_cli("init", "proj", cwd=tmp).code == 0
    root = tmp / "proj"
    for step in (("seed",), ("snapshot",), ("accept",)):
        run = run_cli(*step, cwd=root)
        assert run.code == 0, run.out + run.err
    _git("init", "-q", cwd=root)
    _git("add", "-A", cwd=root)
    _git("commit", "-qm", "base", cwd=root)
    _git("tag", "base", cwd=root)
    shutil.copytree(root / "fixtures", tmp / "base-fixtures")
    doc = root / "seed-docs/log-retention.md"
    doc.write_text(
        doc.read_text(encoding="utf-8").replace("kept for 14 days", "kept for two weeks"),
        encoding="utf-8",
    )
    for step in (("seed",), ("snapshot", "--skip-eval")):
        run = run_cli(*step, cwd=root)
        assert run.code == 0, run.out + run.err
    _git("commit", "-qam", "two weeks", cwd=root)  # HEAD no longer holds the baseline's
    return root


def _table(out: str, head: str) -> list[str]:
    """The lines of the table under the line ``head``."""
    lines = out.splitlines()
    start = lines.index(head) + 3
    return lines[start : start + len(STAGES)]


def test_explain_against_a_git_ref(project: Path) -> None:
    before = _git("status", "--porcelain", "--ignored", cwd=project)
    run = run_cli("explain", CASE, "--baseline-ref", "base", cwd=project)
    assert run.code == 0, run.out + run.err
    assert run.out.startswith(f"{CASE}: How long are application logs kept?\n")
    assert "baseline fixture: base:fixtures\n" in run.out
    lost = "lost keyword '14 days' (corpus: log-retention#1 text changed: removed '14 days')"
    assert f"\n{lost}\n" in run.out
    assert "keyword '14 days' via chunk log-retention#1: LOST (corpus)" in run.out
    rows = _table(run.out, "keyword '14 days' via chunk log-retention#1: LOST (corpus)")
    assert [row.split("  ")[0] for row in rows] == [
        "corpus",
        "settings",
        "L0 hint",
        "attempt",
        "retrieval",
        "fusion",
        "rerank",
        "floor",
        "cut",
        "context",
    ]
    assert rows[0].endswith("<- lost here")
    assert "text changed: removed '14 days'; added 'two weeks'" in rows[0]
    assert not any(row.endswith("<- lost here") for row in rows[1:])
    # the case's expected source is followed too, lost nowhere
    assert "source 'log-retention' via chunk log-retention#0" in run.out
    assert run.out.count("<- lost here") == 1
    assert _git("status", "--porcelain", "--ignored", cwd=project) == before  # writes nothing


def test_explain_finds_the_baseline_fixtures_in_git_by_the_baseline_digest(project: Path) -> None:
    # HEAD holds the new fixtures; HEAD^1 the ones reports/baseline.json was scored from
    run = run_cli("explain", CASE, cwd=project)
    assert run.code == 0, run.out + run.err
    assert "baseline fixture: HEAD^1:fixtures\n" in run.out
    assert "LOST (corpus)" in run.out


def test_explain_without_a_baseline_report_compares_with_git_head(
    project: Path, tmp_path: Path
) -> None:
    copy = tmp_path / "proj"
    shutil.copytree(project, copy, symlinks=True)
    (copy / "reports/baseline.json").unlink()
    run = run_cli("explain", CASE, cwd=copy)
    assert run.code == 0, run.out + run.err
    assert "baseline fixture: HEAD:fixtures\n" in run.out
    assert "note: no baseline report (reports/baseline.json): compared with git HEAD" in run.out
    assert "lost nothing" in run.out  # HEAD holds the current fixtures


def test_explain_against_a_folder_of_baseline_fixtures(project: Path) -> None:
    folder = project.parent / "base-fixtures"
    run = run_cli("explain", CASE, "--baseline-fixtures", str(folder), cwd=project)
    assert run.code == 0, run.out + run.err
    assert f"baseline fixture: {folder.as_posix()}\n" in run.out
    assert "keyword '14 days' via chunk log-retention#1: LOST (corpus)" in run.out
    same = run_cli("explain", "db-pool-max-size", "--baseline-fixtures", str(folder), cwd=project)
    assert same.code == 0, same.out + same.err
    assert "lost nothing" in same.out and "<- lost here" not in same.out


def test_explain_json(project: Path) -> None:
    run = run_cli("explain", CASE, "--baseline-ref", "base", "--json", cwd=project)
    assert run.code == 0, run.err
    data = json.loads(run.out)
    assert data["case"]["id"] == CASE and data["baselineFixtures"] == "base:fixtures"
    assert data["hitLevel"] == ["strong", "medium"]
    assert data["lost"] == [
        {"kind": "keyword", "target": "14 days", "before": "log-retention#1", "after": None}
    ]
    (cause,) = data["causes"]
    assert cause["stage"] == "corpus" and cause["evidence"]["removed"] == ["14 days"]
    keyword, *others = data["targets"]
    assert (keyword["kind"], keyword["target"], keyword["lost"]) == ("keyword", "14 days", True)
    assert keyword["stage"] == "corpus" and keyword["chunk"] == "log-retention#1"
    assert [row["stage"] for row in keyword["rows"]] == list(STAGES)
    assert [row["stage"] for row in keyword["rows"] if row["lostHere"]] == ["corpus"]
    assert keyword["trails"]["baseline"]["present"] is True
    assert others and not any(t["lost"] for t in others)


def test_explain_refuses_bad_input(project: Path) -> None:
    typo = run_cli("explain", "obs-log-retentio", cwd=project)
    assert typo.code == 2 and "did you mean 'obs-log-retention'?" in typo.err
    ref = run_cli("explain", CASE, "--baseline-ref", "no-such-ref", cwd=project)
    assert ref.code == 2 and "git cannot resolve 'no-such-ref'" in ref.err
    empty = project.parent / "empty-fixtures"
    empty.mkdir(exist_ok=True)
    now = run_cli("explain", CASE, "--fixtures", str(empty), "--baseline-ref", "base", cwd=project)
    assert now.code == 2 and f"run `ragsnap snapshot --case {CASE}`" in now.err
    then = run_cli("explain", CASE, "--baseline-fixtures", str(empty), cwd=project)
    assert then.code == 2
    assert f"case '{CASE}' has no baseline fixture in {empty.as_posix()}" in then.err
    assert "Traceback" not in typo.err + ref.err + now.err + then.err

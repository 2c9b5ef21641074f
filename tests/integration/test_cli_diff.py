"""``ragsnap diff`` and the command line's start-up cost."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import REPO, Project, block, copy_example, make_case, make_fixture, run_cli


def test_diff_two_reports(project: Project) -> None:
    # with a no-answer case: a language without one is a label error
    project.write_cases(
        [make_case("a"), make_case("b"), make_case("none", noAnswer=True, expectedSources=None)]
    )
    project.write_fixture(make_fixture("a", [block(1, "mysql-pool")]))
    project.write_fixture(make_fixture("b", [block(1, "mysql-pool")]))
    project.write_fixture(make_fixture("none", []))
    assert (
        run_cli(
            "score", "--json-report", "base.json", "--markdown-report", "base.md", cwd=project.root
        ).code
        == 0
    )
    project.write_fixture(make_fixture("b", [block(1, "x"), block(2, "y"), block(3, "mysql-pool")]))
    assert run_cli("score", cwd=project.root).code == 0  # still passes: found at rank 3

    run = run_cli("diff", "base.json", "reports/current.json", cwd=project.root)
    assert run.code == 1
    assert "  b: firstExpectedRank 1 -> 3" in run.out
    diff = json.loads((project.root / "reports/baseline-diff.json").read_text())
    assert diff["counts"]["regressedCases"] == 1

    same = run_cli(
        "diff",
        "base.json",
        "base.json",
        "--diff-json-report",
        "same.json",
        "--diff-markdown-report",
        "same.md",
        cwd=project.root,
    )
    assert same.code == 0 and same.out.startswith("No regressions against base.json")

    clobber = run_cli(
        "diff",
        "base.json",
        "reports/current.json",
        "--diff-json-report",
        "base.json",
        cwd=project.root,
    )
    assert clobber.code == 2 and "base.json: base.json is the baseline report" in clobber.err


def test_a_cases_file_or_a_fixture_is_named_with_the_command_that_makes_the_report(
    tmp_path: Path,
) -> None:
    """Not "regenerate with `ragsnap score --json-report cases/golden-cases.json`", which
    would write a report over the cases."""
    copy_example(tmp_path, "cases", "fixtures", "reports")
    cases = "cases/golden-cases.json"
    for args, role in (
        ((cases, "reports/baseline.json"), "baseline"),
        (("reports/baseline.json", cases), "current report"),
    ):
        run = run_cli("diff", *args, cwd=tmp_path)
        assert run.code == 2, run.out + run.err
        assert run.err == (
            f"InputError: {cases}: is a golden cases file, not a report: the {role} "
            f"must be a JSON report `ragsnap score` wrote; run `ragsnap score --cases {cases}` first (it writes "
            "reports/current.json), then diff two reports (`ragsnap diff reports/baseline.json "
            f"reports/current.json`), or both at once: `ragsnap score --cases {cases} "
            "--compare-to reports/baseline.json`\n"
        )
        assert "--json-report" not in run.err

    fixture = "fixtures/db-err-4031-order-repository.json"
    run = run_cli("diff", "reports/baseline.json", fixture, cwd=tmp_path)
    assert run.code == 2
    assert run.err.startswith(f"InputError: {fixture}: is a fixture, not a report")
    assert "`ragsnap score --fixtures fixtures`" in run.err

    trial = run_cli("trial", "--compare-to", cases, "--methods", "lexical", cwd=tmp_path)
    assert trial.code == 2
    assert f"run `ragsnap trial --cases {cases}` first (it writes reports/trial.json)" in trial.err


def test_help_does_not_import_heavy_modules() -> None:
    code = (
        "import sys, contextlib, io\n"
        "from ragsnap.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try: main(['--help'])\n"
        "    except SystemExit: pass\n"
        "heavy = {'numpy', 'jsonschema', 'yaml', 'tabulate', 'deepdiff', 'requests', 'torch',"
        " 'pymilvus', 'fastapi', 'jsonschema_rs', 'orjson', 'jinja2', 'markupsafe', 'tqdm'}\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": str(REPO / "eval")},
    ).stdout
    assert out.strip() == "[]"


def _git(root: Path, *argv: str) -> None:
    subprocess.run(
        ["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *argv],
        cwd=root,
        check=True,
        capture_output=True,
    )


def _log_retention_lost(tmp_path: Path, *, committed: bool = True) -> Path:
    """The issue's scenario: an initialised, accepted project (committed to git, where
    the baseline's fixtures are found) whose log-retention document no longer says
    "14 days" (the keyword its case expects), re-snapshotted."""
    assert run_cli("init", "proj", cwd=tmp_path).code == 0
    root = tmp_path / "proj"
    for step in (("seed",), ("snapshot",), ("accept",)):
        run = run_cli(*step, cwd=root)
        assert run.code == 0, run.out + run.err
    if committed:
        _git(root, "init", "-q")
        _git(root, "add", "-A")
        _git(root, "commit", "-qm", "accepted")
    doc = root / "seed-docs/log-retention.md"
    text = doc.read_text(encoding="utf-8")
    assert "kept for 14 days" in text
    doc.write_text(text.replace("kept for 14 days", "kept for two weeks"), encoding="utf-8")
    for step in (("seed",), ("snapshot", "--skip-eval")):
        run = run_cli(*step, cwd=root)
        assert run.code == 0, run.out + run.err
    return root


def test_a_lost_keyword_is_named_with_its_baseline_chunk_in_every_output(tmp_path: Path) -> None:
    root = _log_retention_lost(tmp_path)
    run = run_cli(
        "score",
        "--compare-to",
        "reports/baseline.json",
        "--report",
        "github=reports/pr.md",
        "--junit-xml",
        "reports/junit.xml",
        cwd=root,
    )
    assert run.code == 1, run.out + run.err
    # the stage: the chunk that held the keyword no longer says it (found in git: HEAD)
    lost = "lost keyword '14 days' (corpus: log-retention#1 text changed: removed '14 days')"
    assert f"What the cases lost:\n  obs-log-retention: {lost}\n" in run.out
    for name in ("reports/baseline-diff.md", "reports/pr.md"):
        assert f"- {lost}" in (root / name).read_text(encoding="utf-8"), name
    junit = (root / "reports/junit.xml").read_text(encoding="utf-8")
    assert f"hitLevel 'strong' -&gt; 'medium'; {lost}" in junit
    diff = json.loads((root / "reports/baseline-diff.json").read_text(encoding="utf-8"))
    (case,) = diff["cases"]
    assert case["id"] == "obs-log-retention"
    assert case["lost"] == [
        {"kind": "keyword", "target": "14 days", "before": "log-retention#1", "after": None}
    ]
    assert not any("coverage" in note for note in diff["notes"])
    assert diff["attribution"] == {"baselineFixtures": "HEAD:fixtures", "attributedCases": 1}
    (cause,) = case["attribution"]
    assert (cause["stage"], cause["target"], cause["losses"]) == ("corpus", "log-retention#1", [0])
    assert cause["evidence"] == {
        "textChanged": True,
        "removed": ["14 days"],
        "added": ["two weeks"],
    }


def test_without_the_baseline_fixtures_the_loss_is_listed_and_the_note_says_how(
    tmp_path: Path,
) -> None:
    root = _log_retention_lost(tmp_path, committed=False)
    run = run_cli("score", "--compare-to", "reports/baseline.json", cwd=root)
    assert run.code == 1, run.out + run.err
    assert "obs-log-retention: lost keyword '14 days' (was in log-retention#1)\n" in run.out
    assert "Note: stages were not attributed: the baseline's fixtures were not found; " in run.out
    named = run_cli(
        "score", "--compare-to", "reports/baseline.json", "--baseline-ref", "main", cwd=root
    )
    assert named.code == 2  # not a git repository: a named ref is bad input
    assert "git cannot resolve 'main'" in named.err


def test_a_baseline_without_coverage_names_no_lost_keyword(tmp_path: Path) -> None:
    """A baseline written before reports recorded coverage: the diff says so once and
    lists nothing it cannot know."""
    root = _log_retention_lost(tmp_path, committed=False)
    baseline = json.loads((root / "reports/baseline.json").read_text(encoding="utf-8"))
    for case in baseline["cases"]:
        case.pop("coverage", None)
    (root / "old.json").write_text(json.dumps(baseline), encoding="utf-8")
    assert run_cli("score", cwd=root).code == 0
    run = run_cli("diff", "old.json", "reports/current.json", cwd=root)
    assert run.code == 1, run.out + run.err
    assert "lost keyword" not in run.out
    assert run.out.count("not recorded in the baseline") == 1
    diff = json.loads((root / "reports/baseline-diff.json").read_text(encoding="utf-8"))
    assert [c["lost"] for c in diff["cases"]] == [[]]

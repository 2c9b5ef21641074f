"""The PR check as CI runs it: PR comment, JUnit XML, noise and significance (CLI)."""

from __future__ import annotations

import copy
import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from conftest import copy_example, run_cli


def example(tmp_path: Path) -> Path:
    return copy_example(tmp_path, "cases", "fixtures", "reports")


def test_pr_comment_and_junit_from_the_pr_check(tmp_path: Path) -> None:
    root = example(tmp_path)
    (root / "fixtures/db-err-4031-order-repository.json").write_text(
        (root / "fixtures/db-err-4031-order-repository.json")
        .read_text()
        .replace('"mysql-connection-pool"', '"unrelated-doc"')
    )
    run = run_cli(
        "score",
        "--compare-to",
        "reports/baseline.json",
        "--report",
        "github=reports/pr-comment.md",
        "--junit-xml",
        "reports/junit.xml",
        cwd=root,
    )
    assert run.code == 1, run.out + run.err
    assert "reports/pr-comment.md, reports/junit.xml" in run.out.splitlines()[-1]
    comment = (root / "reports/pr-comment.md").read_text()
    assert len(comment) < 60_000
    assert comment.startswith("## ragsnap retrieval check\n\n**Regressed against")
    assert "#### `db-err-4031-order-repository`" in comment
    # the report scored in memory and the baseline read from disk: every aggregate row
    # that moved is explained by the one case whose fixture changed
    diff = json.loads((root / "reports/baseline-diff.json").read_text())
    assert diff["causes"] and {tuple(c["cases"]) for c in diff["causes"]} == {
        ("db-err-4031-order-repository",)
    }
    assert "← 1 case: `db-err-4031-order-repository`: " in comment
    junit = ET.parse(root / "reports/junit.xml").getroot()
    cases = junit.find("testsuite[@name='ragsnap.cases']")
    assert cases is not None
    golden = json.loads((root / "cases/golden-cases.json").read_text())
    assert len(cases.findall("testcase")) == len(golden["cases"])
    failed = cases.find("testcase[@name='db-err-4031-order-repository']/failure")
    assert failed is not None and "regressed against the baseline" in failed.get("message", "")


def test_unknown_format_and_trial_reports_are_usage_errors(tmp_path: Path) -> None:
    root = example(tmp_path)
    run = run_cli("score", "--report", "pdf=x.pdf", cwd=root)
    assert run.code == 2 and "no report format 'pdf'; use one of github, html, junit" in run.err
    run = run_cli("score", "--report", "github", cwd=root)
    assert run.code == 2 and "is not NAME=FILE" in run.err
    run = run_cli("score", "--report", "github=a.md", "--junit-xml", "a.md", cwd=root)
    assert run.code == 2 and "a.md is named twice" in run.err
    # refused by its kind, before the file is read in full
    (root / "trial.json").write_text('{"kind": "ragsnap-trial-report"}')
    run = run_cli("diff", "trial.json", "trial.json", "--junit-xml", "j.xml", cwd=root)
    assert run.code == 2 and "work on score reports" in run.err, run.err


def _nudge(report: dict[str, Any], case_id: str, metric: str, by: float) -> dict[str, Any]:
    """The report with one case's graded metric moved by ``by``, means kept consistent."""
    out = copy.deepcopy(report)
    case = next(c for c in out["cases"] if c["id"] == case_id)
    case["metrics"][metric] = round(case["metrics"][metric] + by, 6)
    scopes = [out["summary"]] + [
        out["groups"][name][case[name]] for name in ("category", "language", "split")
    ]
    for agg in scopes:
        entry = agg["metrics"][metric]
        entry["mean"] = round(entry["mean"] + by / entry["cases"], 6)
    return out


def test_noise_floor_and_require_significance(tmp_path: Path) -> None:
    root = example(tmp_path)
    baseline = json.loads((root / "reports/baseline.json").read_text())
    case_id = "db-err-4031-order-repository"
    # a move of every mean that contains the case below the 0.001 noise floor
    case = next(c for c in baseline["cases"] if c["id"] == case_id)
    smallest = min(
        baseline["groups"][name][case[name]]["metrics"]["contextPrecision"]["cases"]
        for name in ("category", "language", "split")
    )
    tiny = _nudge(baseline, case_id, "contextPrecision", -0.0009 * smallest)
    (root / "tiny.json").write_text(json.dumps(tiny))
    run = run_cli("diff", "reports/baseline.json", "tiny.json", cwd=root)
    assert run.code == 0, run.out + run.err
    diff = json.loads((root / "reports/baseline-diff.json").read_text())
    rows = [r for r in diff["aggregates"] if r["metric"] == "contextPrecision"]
    assert {r["status"] for r in rows} == {"changed", "unchanged"}
    assert rows[0]["delta"] < 0 and rows[0]["status"] == "changed"

    drop = _nudge(baseline, case_id, "contextPrecision", -0.1)  # mean -0.004, one case
    (root / "drop.json").write_text(json.dumps(drop))
    run = run_cli("diff", "reports/baseline.json", "drop.json", cwd=root)
    assert (
        run.code == 1
        and (
            "contextPrecision -0.004 <- 1 case: db-err-4031-order-repository: beyond tolerance, "
            "not significant (1 case), Holm p 1.000; +3 category/language/split row(s) alike"
        )
        in run.out
    )
    run = run_cli("diff", "reports/baseline.json", "drop.json", "--require-significance", cwd=root)
    assert run.code == 0, run.out + run.err
    md = (root / "reports/baseline-diff.md").read_text()
    assert "an aggregate drop fails only when significant" in md
    (root / "ragsnap.yaml").write_text("diff:\n  significance: {require: true}\n")
    assert run_cli("diff", "reports/baseline.json", "drop.json", cwd=root).code == 0
    (root / "ragsnap.yaml").write_text("diff:\n  significance: {require: yes please}\n")
    run = run_cli("diff", "reports/baseline.json", "drop.json", cwd=root)
    assert run.code == 2 and "ragsnap.yaml" in run.err and "/diff/significance/require" in run.err


@pytest.mark.slow
def test_one_moved_case_reads_as_one_line_and_the_comments_stay_small(tmp_path: Path) -> None:
    """The project `ragsnap init` writes: a clean run's comment <= 1 KB; one case moved
    strong -> medium gives a comment <= 3 KB whose aggregate rows sit under that case."""
    assert run_cli("init", "proj", cwd=tmp_path).code == 0
    root = tmp_path / "proj"
    for step in (("seed",), ("accept",)):
        run = run_cli(*step, cwd=root)
        assert run.code == 0, run.out + run.err
    check = ("score", "--compare-to", "reports/baseline.json", "--report", "github=reports/pr.md")
    run = run_cli(*check, cwd=root)
    assert run.code == 0, run.out + run.err
    clean = (root / "reports/pr.md").read_text(encoding="utf-8")
    assert len(clean.encode()) <= 1000, clean
    assert "No aggregate metric moved (67 row(s) unchanged)." in clean
    assert "| unchanged |" not in clean

    doc = root / "seed-docs/log-retention.md"
    doc.write_text(doc.read_text(encoding="utf-8").replace("14 days", "two weeks"), "utf-8")
    for step in (("seed",), ("snapshot",)):
        run = run_cli(*step, cwd=root)
        assert run.code == 0, run.out + run.err
    run = run_cli(*check, cwd=root)
    assert run.code == 1, run.out + run.err  # the case regressed: the exit code is unchanged
    line = (
        "strongHitRate -50.0 pp <- 1 case: obs-log-retention: beyond tolerance, not significant "
        "(1 case), Holm p 1.000; +3 category/language/split row(s) alike"
    )
    lost = "obs-log-retention: lost keyword '14 days' (was in log-retention#1)"
    assert (
        f"  obs-log-retention: hitLevel strong -> medium\n  {line}\n"
        f"What the cases lost:\n  {lost}\nNote: stages were not attributed"
    ) in run.out  # not a git repository: the stage needs the baseline's fixtures
    comment = (root / "reports/pr.md").read_text(encoding="utf-8")
    assert len(comment.encode()) <= 3000, comment
    assert "- " + line.replace("<-", "←").replace("obs-log-retention:", "`obs-log-retention`:") in (
        comment
    )
    assert "63 row(s) unchanged." in comment and "| unchanged |" not in comment
    assert "Holm p: Holm-adjusted over the 4 row(s) tested" in comment
    written = [(root / f).read_bytes() for f in ("reports/pr.md", "reports/baseline-diff.json")]
    assert run_cli(*check, cwd=root).code == 1
    again = [(root / f).read_bytes() for f in ("reports/pr.md", "reports/baseline-diff.json")]
    assert again == written  # the same bytes twice
    diff = json.loads((root / "reports/baseline-diff.json").read_text())
    (cause,) = diff["causes"]
    assert cause["cases"] == ["obs-log-retention"] and len(cause["folded"]) == 3
    md = (root / "reports/baseline-diff.md").read_text(encoding="utf-8")
    assert "| category=observability | strongHitRate" in md  # the full report keeps every row


def test_the_correction_is_chosen_in_ragsnap_yaml(tmp_path: Path) -> None:
    root = example(tmp_path)
    baseline = json.loads((root / "reports/baseline.json").read_text())
    drop = _nudge(baseline, "db-err-4031-order-repository", "contextPrecision", -0.1)
    (root / "drop.json").write_text(json.dumps(drop))
    (root / "ragsnap.yaml").write_text("diff:\n  significance: {correction: bonferroni}\n")
    run = run_cli("diff", "reports/baseline.json", "drop.json", cwd=root)
    assert run.code == 1 and "not significant (1 case), Bonferroni p 1.000" in run.out
    diff = json.loads((root / "reports/baseline-diff.json").read_text())
    assert diff["significance"]["correction"] == "bonferroni"
    (root / "ragsnap.yaml").write_text("diff:\n  significance: {correction: sidak}\n")
    run = run_cli("diff", "reports/baseline.json", "drop.json", cwd=root)
    assert run.code == 2, run.out + run.err
    assert "ragsnap.yaml at /diff/significance/correction: 'sidak' is not allowed" in run.err
    assert "'holm', 'bonferroni', 'none'" in run.err

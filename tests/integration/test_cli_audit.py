"""``ragsnap audit`` on a copy of the example project, as a user runs it.

The audit reads the committed baseline, seeds scratch stores of its own and writes
``reports/audit.{json,md}`` (and the HTML page on request): the checks here read
those files and the exit codes, the way a team's CI would.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from conftest import REPO, copy_example, run_cli
from ragsnap.io.schema import validate
from ragsnap.scoring import diff


def _example(tmp_path: Path) -> Path:
    """The example project with its committed baseline (and no other report)."""
    root = copy_example(tmp_path, "ragsnap.yaml", "seed-docs", "cases", "fixtures")
    (root / "reports").mkdir()
    shutil.copy(REPO / "reports/baseline.json", root / "reports/baseline.json")
    return root


def _report(root: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((root / "reports/audit.json").read_text(encoding="utf-8"))
    return data


@pytest.fixture(scope="module")
def audited(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    """The whole audit of the example project, once: every mutation, the HTML page."""
    root = _example(tmp_path_factory.mktemp("audit"))
    run = run_cli("audit", "--html-report", "reports/audit.html", cwd=root)
    return root, run


def test_the_example_projects_audit_reports_every_part(audited: tuple[Path, Any]) -> None:
    root, run = audited
    assert run.code == 0, run.out + run.err
    report = _report(root)
    validate(report, "audit-report", "reports/audit.json", "audit report")
    baseline = json.loads((root / "reports/baseline.json").read_text(encoding="utf-8"))

    # 1. an MDE row for every metric the diff tests, overall
    overall = {row["metric"]: row for row in report["power"]["rows"] if row["scope"] == "all"}
    metrics = ["passRate", "recallAtK", "strongHitRate", *baseline["summary"]["metrics"]]
    assert set(overall) == {m for m in metrics if diff.testable(m)} | {"noAnswerFalsePositiveRate"}
    assert overall["recallAtK"]["cases"] == 25
    assert 0.2 < overall["recallAtK"]["mde"] < 0.4  # 25 cases see only a large drop
    assert overall["recallAtK"]["casesNeeded"] > 300  # ~8 / 0.02 for a 0/1 metric

    # 3. at least 12 mutations that apply, each caught one naming what caught it, each
    # uncaught one with advice
    section = report["mutations"]
    results = {r["name"]: r for r in section["results"]}
    assert section["applicable"] >= 12
    assert section["score"] == round(section["caught"] / section["applicable"], 6)
    for result in results.values():
        if not result["applicable"]:
            assert result["reason"] and result["caught"] is None
        elif result["caught"]:
            assert result["caughtBy"] or result["aggregateRegressions"], result["name"]
        else:
            assert result["advice"], result["name"]
    # faults that break a case outright are caught by that case
    assert results["stale-document"]["caught"] and results["stale-document"]["caughtBy"]
    assert results["hints-off"]["caughtBy"] == results["wrong-category-hint"]["caughtBy"]
    uncaught = [r["name"] for r in results.values() if r["applicable"] and not r["caught"]]
    advice = [a["subject"] for a in report["advice"] if a["part"] == "mutations"]
    assert advice == uncaught

    # the terminal: the verdict and one line per uncaught mutation
    assert f"catches {section['caught']} of {section['applicable']}" in run.out
    for name in uncaught:
        assert f"not caught: {name}:" in run.out
    markdown = (root / "reports/audit.md").read_text(encoding="utf-8")
    assert "## Minimum detectable effect" in markdown and "## Mutations" in markdown
    page = (root / "reports/audit.html").read_text(encoding="utf-8")
    assert "Content-Security-Policy" in page and "stale-document" in page


def test_two_runs_write_the_same_report_but_for_its_timings(
    audited: tuple[Path, Any], tmp_path: Path
) -> None:
    root, _ = audited
    again = _example(tmp_path)
    run = run_cli("audit", cwd=again)
    assert run.code == 0, run.err
    first, second = _report(root), _report(again)
    first.pop("timing"), second.pop("timing")
    assert first == second


def test_a_trial_report_adds_discriminative_power(tmp_path: Path) -> None:
    root = _example(tmp_path)
    trial = run_cli(
        "trial",
        "--split",
        "all",
        "--methods",
        "lexical,vector,hybrid",
        "--no-store-cache",
        "--json-report",
        "reports/trial.json",
        "--markdown-report",
        "reports/trial.md",
        cwd=root,
    )
    assert trial.code == 0, trial.out + trial.err
    run = run_cli("audit", "--trial", "reports/trial.json", "--mutations", "none", cwd=root)
    assert run.code == 0, run.err
    report = _report(root)
    section = report["discrimination"]
    assert section["methods"] == ["lexical", "vector", "hybrid"]
    assert section["pairs"] == 3 and section["cases"] == {"dev": 14, "test": 16}
    assert all(row["pairs"] == 3 for row in section["measures"])
    assert report["mutations"] is None and report["notes"] == []
    assert "## Discriminative power" in (root / "reports/audit.md").read_text(encoding="utf-8")


def test_a_current_report_brings_its_churn(tmp_path: Path) -> None:
    root = _example(tmp_path)
    score = run_cli("score", cwd=root)
    assert score.code == 0, score.out + score.err
    run = run_cli("audit", "--current", "reports/current.json", "--mutations", "none", cwd=root)
    assert run.code == 0, run.err
    power = _report(root)["power"]
    assert power["baselineCases"] == 30
    assert all(row["churnCases"] is not None for row in power["rows"])


def test_fail_under_exits_1_with_the_reports_written(tmp_path: Path) -> None:
    root = _example(tmp_path)
    run = run_cli(
        "audit", "--mutations", "context-halved,stale-document", "--fail-under", "0.9", cwd=root
    )
    assert run.code == 1, run.out + run.err
    assert "below --fail-under 0.9" in run.err
    section = _report(root)["mutations"]
    assert [r["name"] for r in section["results"]] == ["context-halved", "stale-document"]
    assert section["score"] == 0.5


def test_an_unknown_mutation_is_bad_input_and_writes_nothing(tmp_path: Path) -> None:
    root = _example(tmp_path)
    run = run_cli("audit", "--mutations", "stemming-of", cwd=root)
    assert run.code == 2
    assert "--mutations: unknown mutation 'stemming-of'" in run.err
    assert "stemming-off" in run.err
    assert not (root / "reports/audit.json").exists()


def test_without_a_baseline_only_the_parts_that_need_none_run(tmp_path: Path) -> None:
    root = _example(tmp_path)
    (root / "reports/baseline.json").unlink()
    run = run_cli("audit", cwd=root)
    assert run.code == 2
    assert "reports/baseline.json does not exist" in run.err and "ragsnap accept" in run.err
    assert "--mutations none" in run.err
    run = run_cli("audit", "--mutations", "none", "--html-report", "reports/a.html", cwd=root)
    assert run.code == 0, run.err
    report = _report(root)
    assert report["power"] is None and report["inputs"]["baseline"] is None
    assert "ragsnap accept" in report["notes"][0]
    # an explicit baseline that is not there is a mistake, not a choice
    run = run_cli("audit", "--mutations", "none", "--baseline", "reports/old.json", cwd=root)
    assert run.code == 2 and "reports/old.json" in run.err


def test_a_baseline_the_pipeline_no_longer_gives_is_bad_input(tmp_path: Path) -> None:
    root = _example(tmp_path)
    config = root / "ragsnap.yaml"
    config.write_text(
        config.read_text(encoding="utf-8") + "lookup:\n  method: lexical\n", encoding="utf-8"
    )
    run = run_cli("audit", "--mutations", "top-k-cut", cwd=root)
    assert run.code == 2, run.out + run.err
    assert "reports/baseline.json" in run.err
    assert "ragsnap snapshot" in run.err and "ragsnap accept" in run.err
    assert not (root / "reports/audit.json").exists()


def test_another_method_than_the_baselines_says_so(tmp_path: Path) -> None:
    root = _example(tmp_path)
    run = run_cli("audit", "--method", "lexical", "--mutations", "top-k-cut", cwd=root)
    assert run.code == 2, run.out + run.err
    assert "the baseline comes from lookup.method hybrid+rerank" in run.err
    assert "drop --method" in run.err


def test_the_mutation_audit_needs_the_embedded_pipeline(tmp_path: Path) -> None:
    root = _example(tmp_path)
    config = root / "ragsnap.yaml"
    config.write_text(
        config.read_text(encoding="utf-8") + "kb:\n  backend: http\n", encoding="utf-8"
    )
    run = run_cli("audit", cwd=root)
    assert run.code == 2, run.out + run.err
    assert "kb.backend" in run.err and "embedded" in run.err
    # without mutations the other parts run for any backend
    assert run_cli("audit", "--mutations", "none", cwd=root).code == 0


def test_the_docs_list_every_mutation() -> None:
    from ragsnap.audit.mutations import MUTATIONS

    page = (REPO / "docs/audit.md").read_text(encoding="utf-8")
    missing = [name for name in MUTATIONS if f"| `{name}` |" not in page]
    assert not missing, f"add {missing} to the catalogue table of docs/audit.md"


@pytest.mark.slow  # a real browser
def test_the_audit_page_draws_in_chromium(audited: tuple[Path, Any]) -> None:
    from browser import Chromium, chromium_or_skip

    executable = chromium_or_skip()
    root, _ = audited
    report = _report(root)
    with Chromium(executable) as browser:
        browser.load(root / "reports/audit.html")
        rows = browser.evaluate("document.querySelectorAll('table')[1].rows.length")
        bars = browser.evaluate("document.querySelectorAll('svg[data-chart=\"mde\"] rect').length")
        verdict = browser.evaluate("document.getElementById('verdict').textContent")
        assert browser.errors() == [], browser.errors()
    assert rows == 1 + len(report["mutations"]["results"])  # the header, one per mutation
    assert bars > 0
    assert verdict.startswith("Mutation score")

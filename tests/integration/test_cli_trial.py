"""``ragsnap trial`` as a user runs it: the example set, plans, gates, splits, runs.

Every test runs the real command in a copy of the example project (its
ragsnap.yaml, cases and seed documents), seeding real temporary SQLite
knowledge bases.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from conftest import REPO, Run, run_cli, shared_data

METHODS = ["lexical", "vector", "hybrid", "hybrid+rerank", "alias"]


@pytest.fixture
def example(tmp_path: Path) -> Path:
    """A copy of the example project: ragsnap.yaml, cases/ and seed-docs/."""
    root = tmp_path / "example"
    root.mkdir()
    shutil.copy(REPO / "ragsnap.yaml", root)
    shutil.copytree(REPO / "cases", root / "cases")
    shutil.copytree(REPO / "seed-docs", root / "seed-docs")
    return root


def trial(root: Path, *args: str) -> tuple[Run, dict[str, Any]]:
    run = run_cli("trial", *args, cwd=root)
    report_path = root / "reports" / "trial.json"
    report = json.loads(report_path.read_text(encoding="utf-8")) if report_path.exists() else {}
    return run, report


def without_timing(report: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in report.items() if k != "timing"}


def test_the_example_set_compares_five_methods_and_writes_runs(example: Path) -> None:
    run, report = trial(example, "--runs-dir", "reports/runs")
    assert run.code == 0, run.out + run.err
    header = run.out.splitlines()[1]
    assert "method" in header and "ndcg@10" in header and "no-answer FP" in header
    for method in METHODS:
        assert re.search(rf"^{re.escape(method)}\s+30\s", run.out, re.M), run.out
    assert "Determinism: 2 passes identical" in run.out
    assert [m["name"] for m in report["plan"]["methods"]] == METHODS
    assert sorted(report["methods"]) == sorted(METHODS)
    assert report["plan"]["depth"] == 100  # trial.depth of the example's ragsnap.yaml
    alias = report["methods"]["alias"]["definition"]
    assert alias["embedder"]["kind"] == "alias" and "not an embedding model" in alias["note"]
    # the runs: one per method, read by `ragsnap metrics`, the same MAP as the report
    runs = example / "reports" / "runs"
    assert sorted(p.name for p in runs.iterdir()) == sorted(
        [f"{m}.trec" for m in METHODS] + ["qrels.txt"]
    )
    for method in METHODS:
        metrics = run_cli(
            "metrics",
            "--qrels",
            str(runs / "qrels.txt"),
            "--run",
            str(runs / f"{method}.trec"),
            "-m",
            "map",
            "-m",
            "recall@100",
            cwd=example,
        )
        assert metrics.code == 0, metrics.err
        values = dict(line.split("\t")[0::2] for line in metrics.out.splitlines())
        summary = report["methods"][method]["summary"]["metrics"]
        assert float(values["map         "]) == pytest.approx(summary["map"]["mean"], abs=1e-4)
        assert float(values["recall@100  "]) == pytest.approx(
            summary["recall@100"]["mean"], abs=1e-4
        )
    markdown = (example / "reports" / "trial.md").read_text(encoding="utf-8")
    assert "## Methods" in markdown and "| hybrid+rerank |" in markdown
    assert markdown.index("## Gates") < markdown.index("## Timing")


def test_the_report_is_privacy_safe(example: Path) -> None:
    run, report = trial(example, "--methods", "lexical,alias")
    assert run.code == 0, run.err
    text = json.dumps(report, ensure_ascii=False) + (example / "reports" / "trial.md").read_text(
        encoding="utf-8"
    )
    cases = json.loads((example / "cases" / "golden-cases.json").read_text(encoding="utf-8"))
    for case in cases["cases"]:
        assert case["query"] not in text
        for source in case.get("expectedSources", []):  # as a value (case ids share words)
            assert json.dumps(source) not in text, source
    for doc in (example / "seed-docs").glob("*.md"):
        body = doc.read_text(encoding="utf-8").split("---", 2)[2]
        for line in body.splitlines():
            if len(line) > 30:
                assert line.strip() not in text
    assert str(example) not in text  # no path of this machine


def test_two_runs_of_one_plan_give_the_same_bytes(example: Path) -> None:
    wrote = run_cli(
        "trial", "--write-plan", "plan.json", "--methods", "lexical,hybrid", cwd=example
    )
    assert wrote.code == 0 and "plan.json" in wrote.out, wrote.err
    assert not (example / "reports" / "trial.json").exists()  # a plan is written, not run
    first, report = trial(example, "--plan", "plan.json", "--repetitions", "2")
    assert first.code == 2 and "--repetitions would change the pinned plan" in first.err
    first, report = trial(example, "--plan", "plan.json")
    assert first.code == 0, first.err
    saved = without_timing(report)
    markdown = (example / "reports" / "trial.md").read_text(encoding="utf-8")
    second, again = trial(example, "--plan", "plan.json")
    assert second.code == 0
    assert json.dumps(without_timing(again), sort_keys=True) == json.dumps(saved, sort_keys=True)
    again_md = (example / "reports" / "trial.md").read_text(encoding="utf-8")
    assert again_md.split("## Timing")[0] == markdown.split("## Timing")[0]
    plan = json.loads((example / "plan.json").read_text(encoding="utf-8"))
    assert report["planSha256"] == plan["planSha256"] and report["plan"] == plan["plan"]


def test_a_plan_refuses_a_changed_corpus_and_an_edited_plan(example: Path) -> None:
    assert run_cli("trial", "--write-plan", "plan.json", cwd=example).code == 0
    doc = example / "seed-docs" / "kafka-topic-naming.md"
    doc.write_text(doc.read_text(encoding="utf-8") + "\nOne more line.\n", encoding="utf-8")
    run, _ = trial(example, "--plan", "plan.json")
    assert run.code == 2 and "/inputs/corpus" in run.err and "plan.json" in run.err, run.err
    plan = json.loads((example / "plan.json").read_text(encoding="utf-8"))
    plan["plan"]["seed"] += 1
    (example / "plan.json").write_text(json.dumps(plan), encoding="utf-8")
    run, _ = trial(example, "--plan", "plan.json")
    assert run.code == 2 and "planSha256" in run.err and "edited" in run.err


def test_a_split_that_did_not_run_has_no_measurements(example: Path) -> None:
    (example / "no-gates.yaml").write_text("trial: {depth: 100}\n", encoding="utf-8")
    run, report = trial(
        example, "--config", "no-gates.yaml", "--split", "dev", "--methods", "lexical"
    )
    assert run.code == 0, run.err
    cases = json.loads((example / "cases" / "golden-cases.json").read_text(encoding="utf-8"))
    dev = [c for c in cases["cases"] if c.get("split", cases["defaults"].get("split")) == "dev"]
    assert report["cases"]["run"] == len(dev) < report["cases"]["total"]
    test = report["methods"]["lexical"]["groups"]["split"]["test"]
    assert test["cases"] == 0 and test["passRate"] is None
    assert all(m["mean"] is None for m in test["metrics"].values())
    assert report["methods"]["lexical"]["groups"]["split"]["dev"]["cases"] == len(dev)
    assert report["methods"]["lexical"]["groups"]["categoryTest"] == {}


def test_failing_gates_exit_1_and_keep_every_method(example: Path) -> None:
    (example / "strict.yaml").write_text(
        "version: 1\ngates:\n"
        "  - {method: lexical, measure: ndcg@10, min: 0.99}\n"
        "  - {method: '*', measure: noAnswerFalsePositiveRate, max: 1.0}\n",
        encoding="utf-8",
    )
    run, report = trial(example, "--methods", "lexical,hybrid", "--gates", "strict.yaml")
    assert run.code == 1, run.err
    assert re.search(r"lexical: ndcg@10 >= 0\.99: 0\.\d{4} < 0\.99", run.out), run.out
    assert report["methods"]["lexical"]["admitted"] is False
    assert report["methods"]["hybrid"]["admitted"] is True
    assert report["methods"]["lexical"]["summary"]["metrics"]["ndcg@10"]["mean"] is not None


def test_the_example_gates_admit_the_default_method(example: Path) -> None:
    run, report = trial(example, "--methods", "hybrid,hybrid+rerank")
    assert run.code == 0, run.out + run.err
    assert report["methods"]["hybrid+rerank"]["admitted"] is True


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--methods", "lexical,bm25"], "unknown method 'bm25'"),
        (["--methods", "lexical,lexical"], "twice"),
        (["--split", "dev", "--plan", "nope.json"], "--split would change the pinned plan"),
        (["--kb", "kb.sqlite", "--methods", "lexical,alias"], "--kb holds one vector space"),
        (["--kb", "missing.sqlite", "--methods", "lexical"], "no knowledge base here"),
        (["--gates", "cases/golden-cases.json"], "gates"),
        (["--cases", "missing.json"], "missing.json"),
        (["--base-url", "http://127.0.0.1:1"], "--base-url is for --backend http"),
        (["--backend", "http", "--kb", "kb.sqlite"], "--kb is for the embedded trial"),
        # the example maps no http.methods: nothing to compare on a service
        (["--backend", "http"], "ragsnap.yaml at /http/methods: maps no http.methods"),
    ],
)
def test_bad_input_exits_2(example: Path, args: list[str], words: str) -> None:
    run, _ = trial(example, *args)
    assert run.code == 2 and words in run.err and "Traceback" not in run.err, run.err
    assert not (example / "reports" / "trial.json").exists()


def test_the_trial_script_is_the_command(example: Path) -> None:
    run = run_cli(
        "--methods",
        "lexical",
        "--json-report",
        "t.json",
        "--markdown-report",
        "t.md",
        cwd=example,
        script="eval_rag_trial.py",
    )
    assert run.code == 0, run.err
    assert json.loads((example / "t.json").read_text(encoding="utf-8"))["kind"] == (
        "ragsnap-trial-report"
    )


def _readme_outcome() -> dict[str, list[str]]:
    readme = (REPO / "docs/trials.md").read_text(encoding="utf-8")
    table = readme.split("<!-- goodbuddy-gates -->")[1].split("<!-- /goodbuddy-gates -->")[0]
    rows = [line.strip("|").split("|") for line in table.strip().splitlines()[2:]]
    return {cells[0].strip().strip("`"): [c.strip() for c in cells[1:]] for cells in rows}


def test_goodbuddys_gates_outcome_is_the_one_the_readme_states(tmp_path: Path) -> None:
    """The shipped GoodBuddy trial runs with GoodBuddy's own gates; docs/trials.md says which
    methods are admitted, and this keeps it true whatever the outcome is."""
    data = shared_data("goodbuddy-synthetic-bilingual-v1.json")
    imported = tmp_path / "import"
    run = run_cli(
        "import", "goodbuddy", str(data), "--out", str(imported), "--allow-outside", cwd=tmp_path
    )
    assert run.code == 0, run.err
    shipped = REPO / "cases" / "goodbuddy"
    for name in ("corpus.jsonl", "golden-cases.json"):  # the shipped copy is a fresh import
        assert (imported / name).read_bytes() == (shipped / name).read_bytes(), name
    run = run_cli(
        "trial",
        "--config",
        str(shipped / "ragsnap.yaml"),
        "--cases",
        str(shipped / "golden-cases.json"),
        "--json-report",
        str(tmp_path / "gb.json"),
        "--markdown-report",
        str(tmp_path / "gb.md"),
        "--allow-outside",
        cwd=tmp_path,
    )
    report = json.loads((tmp_path / "gb.json").read_text(encoding="utf-8"))
    outcome = {
        name: [
            f"{entry['summary']['metrics']['mrr@10']['mean']:.3f}",
            f"{entry['summary']['metrics']['ndcg_exp@10']['mean']:.3f}",
            f"{entry['summary']['noAnswerFalsePositiveRate']:.2f}",
            "admitted" if entry["admitted"] else "not admitted",
        ]
        for name, entry in report["methods"].items()
    }
    assert outcome == _readme_outcome()
    assert run.code == (0 if all(entry["admitted"] for entry in report["methods"].values()) else 1)


@pytest.mark.slow
def test_two_trial_reports_diff_per_method(example: Path) -> None:
    run, _ = trial(example, "--methods", "lexical,hybrid", "--json-report", "base.json")
    assert run.code == 0, run.err
    # the same trial compared with itself: nothing moved
    same, _ = trial(example, "--methods", "lexical,hybrid", "--compare-to", "base.json")
    assert same.code == 0, same.out + same.err
    assert "No regressions against base.json: 0 regression(s)" in same.out
    # stricter floors for every method: evidence is lost, the diff says where
    (example / "strict.yaml").write_text(
        "trial: {depth: 100, aliases: cases/aliases.yaml}\nlookup: {minScore: 0.6, sufficientScore: 0.7}\n",
        encoding="utf-8",
    )
    worse, _ = trial(
        example,
        "--config",
        "strict.yaml",
        "--methods",
        "lexical,hybrid,alias",
        "--json-report",
        "worse.json",
    )
    assert worse.code == 0, worse.err
    diff = run_cli("diff", "base.json", "worse.json", "--max-listed", "200", cwd=example)
    assert diff.code == 1, diff.out + diff.err
    assert "Regressed against base.json" in diff.out
    assert "inputs changed: providers, vectors" in diff.out  # alias brought its vectors
    assert re.search(r"^  lexical: contextRecall 0\.\d+ -> 0\.\d+$", diff.out, re.M), diff.out
    assert re.search(r"^  hybrid: case \S+: \w+ -> \w+", diff.out, re.M), diff.out
    written = json.loads((example / "reports" / "baseline-diff.json").read_text(encoding="utf-8"))
    assert written["kind"] == "ragsnap-trial-diff" and written["regressed"] is True
    assert written["methods"]["alias"]["status"] == "added"
    markdown = (example / "reports" / "baseline-diff.md").read_text(encoding="utf-8")
    assert "# ragsnap trial diff" in markdown and "## lexical" in markdown
    # a trial report and a score report are not comparable
    mixed = run_cli("diff", "base.json", str(REPO / "reports" / "baseline.json"), cwd=example)
    assert mixed.code == 2 and "is not a ragsnap trial report" in mixed.err

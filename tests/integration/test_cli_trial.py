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
    assert report["methods"]["lexical"]["status"] == "experimental"
    assert report["methods"]["lexical"]["admitted"] is False
    assert report["methods"]["hybrid"]["status"] == "admitted"
    assert report["methods"]["hybrid"]["admitted"] is True
    assert report["methods"]["lexical"]["summary"]["metrics"]["ndcg@10"]["mean"] is not None
    assert "Gates: 2 of 3 ran and passed, 1 FAILED" in run.out, run.out


def test_the_example_gates_admit_the_default_method(example: Path) -> None:
    # the tag gate compares exact-identifier queries with lexical: it runs beside it
    run, report = trial(example, "--methods", "lexical,hybrid,hybrid+rerank")
    assert run.code == 0, run.out + run.err
    assert report["methods"]["hybrid+rerank"]["status"] == "admitted"
    exact = [g for g in report["gates"] if "[tags exact-identifier]" in g["gate"]]
    assert len(exact) == 2 and all(g["ran"] and g["passed"] and g["cases"] == 9 for g in exact)


def test_gates_by_tag_and_category_and_gates_that_could_not_run(example: Path) -> None:
    """A one-method trial: gates that never ran are counted apart, not as passed; they
    leave the method experimental without failing the run; a failing tag gate exits 1;
    admitted -> experimental against a baseline trial is a regression."""
    (example / "gates.yaml").write_text(
        "version: 1\ngates:\n"
        "  - {method: lexical, where: {tags: exact-identifier}, measure: mrr@10, min: 0.5}\n"
        "  - {method: lexical, where: {category: [database, cache], noAnswer: false},"
        " measure: recallAtK, min: 0.5}\n",
        encoding="utf-8",
    )
    args = ("--methods", "lexical", "--gates", "gates.yaml", "--html-report", "t.html")
    run, report = trial(example, *args, "--json-report", "base.json")
    assert run.code == 0, run.out + run.err
    assert "Gates: 2 of 2 ran and passed\n" in run.out, run.out
    base = json.loads((example / "base.json").read_text(encoding="utf-8"))
    assert base["methods"]["lexical"]["status"] == "admitted"
    cases = json.loads((example / "cases" / "golden-cases.json").read_text(encoding="utf-8"))
    selected = [
        sum("exact-identifier" in c.get("tags", ()) for c in cases["cases"]),
        sum(
            c["category"] in ("database", "cache") and not c.get("noAnswer") for c in cases["cases"]
        ),
    ]
    assert [g["cases"] for g in base["gates"]] == selected and min(selected) > 0
    # add gates that cannot run in this trial: a method not in it, a language not in
    # the cases, a tag misspelt; the method is experimental, the run does not fail
    with (example / "gates.yaml").open("a", encoding="utf-8") as gates:
        gates.write(
            "  - {method: lexical, measure: mrr@10, notBelow: {method: hybrid}}\n"
            "  - {method: lexical, language: fr, measure: mrr@10, min: 0.5}\n"
            "  - {method: lexical, where: {tags: exact-identifer}, measure: mrr@10, min: 0.5}\n"
        )
    run, report = trial(example, *args, "--compare-to", "base.json")
    assert run.code == 1, run.out + run.err  # only the diff's regression fails it
    assert (
        "Gates: 2 of 2 ran and passed; 3 not run (1 compared method not in the trial, "
        "2 no case selected)" in run.out
    ), run.out
    assert "not run: lexical: mrr@10 [language fr] >= 0.5: no case of the 30 that ran: " in run.out
    assert "no case has tags exact-identifer (present: " in run.out
    assert "lexical: admitted -> experimental" in run.out
    assert re.search(r"^lexical\s.*\sexperimental$", run.out, re.M), run.out
    entry = report["methods"]["lexical"]
    assert entry["status"] == "experimental" and entry["admitted"] is False
    assert entry["gateCounts"] == {"applied": 5, "ran": 2, "passed": 2, "failed": 0, "notRun": 3}
    assert [g["passed"] for g in report["gates"]] == [True, True, None, None, None]
    markdown = (example / "reports" / "trial.md").read_text(encoding="utf-8")
    assert "- **lexical**: experimental (2 of 2 gate(s) that ran passed, 3 gate(s) did not" in (
        markdown
    )
    page = (example / "t.html").read_text(encoding="utf-8")
    assert "gates: 2 of 2 ran and passed; 3 not run" in page and ">experimental<" in page
    # without a baseline, gates that could not run fail nothing
    run, _ = trial(example, *args)
    assert run.code == 0, run.out + run.err
    # a tag gate that runs and fails is a failing gate: exit 1
    (example / "gates.yaml").write_text(
        "version: 1\ngates:\n"
        "  - {method: lexical, where: {tags: paraphrase}, measure: mrr@10, min: 0.99}\n",
        encoding="utf-8",
    )
    run, report = trial(example, *args)
    assert run.code == 1, run.out + run.err
    assert re.search(
        r"^  lexical: mrr@10 \[tags paraphrase\] >= 0\.99: 0\.\d{4} < 0\.99$", run.out, re.M
    ), run.out


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
        (["--methods", "lexical,hybrid", "--reference", "alias"], "--reference alias is not a"),
        (["--all-pairs", "--reference", "lexical"], "--all-pairs tests every pair"),
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
            entry["status"],
        ]
        for name, entry in report["methods"].items()
    }
    assert outcome == _readme_outcome()
    failed = any(g["ran"] and not g["passed"] for g in report["gates"])
    assert run.code == (1 if failed else 0)


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
    # alias brought its vectors and its alias file; strict.yaml has no gates
    assert "inputs changed: aliases, gates, providers, vectors" in diff.out
    assert re.search(r"^  lexical: contextRecall 0\.\d+ -> 0\.\d+ \(Holm p", diff.out, re.M), (
        diff.out
    )
    assert re.search(r"^  hybrid: case \S+: \w+ -> \w+", diff.out, re.M), diff.out
    written = json.loads((example / "reports" / "baseline-diff.json").read_text(encoding="utf-8"))
    assert written["kind"] == "ragsnap-trial-diff" and written["regressed"] is True
    assert written["methods"]["alias"]["status"] == "added"
    markdown = (example / "reports" / "baseline-diff.md").read_text(encoding="utf-8")
    assert "# ragsnap trial diff" in markdown and "## lexical" in markdown
    # a trial report and a score report are not comparable
    mixed = run_cli("diff", "base.json", str(REPO / "reports" / "baseline.json"), cwd=example)
    assert mixed.code == 2 and "is not a ragsnap trial report" in mixed.err


def test_paired_tests_between_methods_and_between_trials(example: Path) -> None:
    """Two methods: per measure, the difference's interval and corrected p in the JSON,
    the Markdown and the terminal; a trial diff: the same per method, over the cases
    both trials ran."""
    run, report = trial(
        example, "--methods", "lexical,alias", "--reference", "alias", "--json-report", "base.json"
    )
    assert run.code == 0, run.err
    base = json.loads((example / "base.json").read_text(encoding="utf-8"))
    section = base["significance"]
    assert section["reference"] == "alias" and section["settings"]["correction"] == "holm"
    measures = {r["measure"] for r in section["rows"]}
    assert {"passRate", "recallAtK", "ndcg@10", "mrr@10", "recall@100"} <= measures
    assert {r["method"] for r in section["rows"]} == {"lexical"}
    tested = [r for r in section["rows"] if r["significance"] is not None]
    assert section["tested"] == len(tested) > 0
    for row in tested:
        low, high = row["significance"]["ci"]
        assert low <= row["delta"] <= high and row["significance"]["cases"] == row["cases"]
    assert re.search(
        r"^Paired tests vs alias \(Holm p < 0\.05, \d+ row\(s\) tested\):$", run.out, re.M
    )
    assert re.search(r"^  lexical: ", run.out, re.M), run.out
    markdown = (example / "reports" / "trial.md").read_text(encoding="utf-8")
    assert "## Significance between methods" in markdown and "| ndcg@10 " in markdown
    # another trial (stricter floors) compared with it: every method's rows are tested
    (example / "strict.yaml").write_text(
        "trial: {depth: 100, aliases: cases/aliases.yaml}\n"
        "lookup: {minScore: 0.6, sufficientScore: 0.7}\n",
        encoding="utf-8",
    )
    worse, report = trial(
        example,
        "--config",
        "strict.yaml",
        "--methods",
        "lexical,alias",
        "--compare-to",
        "base.json",
    )
    assert worse.code == 1, worse.out + worse.err
    assert report["significance"]["reference"] == "lexical"  # the first method by default
    diff = json.loads((example / "reports" / "trial-diff.json").read_text(encoding="utf-8"))
    assert diff["significance"]["sharedCases"] == 30
    recall = {r["metric"]: r for r in diff["methods"]["lexical"]["rows"]}["recallAtK"]
    test = recall["significance"]
    assert recall["status"] == "regression" and test["ci"][0] < 0 < test["pAdjusted"] <= 1
    for method in ("lexical", "alias"):
        for row in diff["methods"][method]["rows"]:
            # the same 30 cases: a mean that moved has a case that moved, so a test
            moved = row["baseline"] != row["current"] and row["metric"] != "missCount"
            if moved and not row["metric"].startswith("coverage"):
                assert row["significance"] is not None, (method, row)
    assert re.search(r"^Paired tests over 30 shared case\(s\): \d+ of \d+ tested", worse.out, re.M)
    assert "| paired Δ interval " in (example / "reports" / "trial-diff.md").read_text(
        encoding="utf-8"
    )
    from ragsnap.io.schema import validate

    validate(diff, "trial-diff", "trial-diff.json", "trial diff")

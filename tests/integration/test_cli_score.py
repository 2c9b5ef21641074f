"""``ragsnap score`` driven as a user would: real processes, real files, exit codes."""

from __future__ import annotations

import html
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest

from conftest import (
    REPO,
    Project,
    block,
    copy_example,
    make_case,
    make_fixture,
    run_cli,
    write_json,
)
from ragsnap.io.schema import load_schema

#: the tiny project's opt-out: its zh case is there for the language group, and a
#: three-case scoring fixture needs no zh no-answer case (``scoring.noAnswerCoverage``)
OPT_OUT = "scoring:\n  noAnswerCoverage: warning\n"


def seed_project(project: Project) -> None:
    """Three passing cases: two answerable, one no-answer; no seed corpus (the label
    check runs in part) and the no-answer coverage opt-out."""
    (project.root / "ragsnap.yaml").write_text(OPT_OUT)
    project.write_cases(
        [
            make_case(
                "pool-size",
                expectedBreadcrumbs=["Database > MySQL"],
                expectedKeywords=["maximum-pool-size"],
                expectedRerankTopSource="mysql-pool",
            ),
            make_case("slow-log", category="observability", split="test", language="zh"),
            make_case("no-answer", noAnswer=True, expectedSources=None),
        ],
        defaults={"kbScope": "rag-eval", "topK": 5},
    )
    project.write_fixture(
        make_fixture(
            "pool-size",
            [block(1, "mysql-pool", text="Set maximum-pool-size to 20."), block(2, "decoy")],
        )
    )
    project.write_fixture(make_fixture("slow-log", [block(1, "other"), block(2, "mysql-pool")]))
    project.write_fixture(make_fixture("no-answer", [], selected="unfiltered"))


def score(project: Project, *extra: str):  # type: ignore[no-untyped-def]
    return run_cli("score", *extra, cwd=project.root)


def test_clean_run_writes_reports_and_exits_0(project: Project) -> None:
    seed_project(project)
    run = score(project)
    assert run.code == 0, run.err
    lines = run.out.splitlines()
    assert lines[0].startswith("3 cases: 3 passed, 0 failed (pass rate 100.0%)")
    assert lines[-1] == "Reports: reports/current.json, reports/current.md"
    report = json.loads((project.root / "reports/current.json").read_text())
    jsonschema.validate(report, load_schema("report"))
    assert report["summary"]["recallAtK"] == 1.0
    assert report["groups"]["language"]["zh"]["cases"] == 1
    md = (project.root / "reports/current.md").read_text()
    assert md.startswith("# ragsnap retrieval report\n\n**3 cases: 3 passed, 0 failed**")


def test_two_runs_are_byte_identical(project: Project) -> None:
    seed_project(project)
    outputs = []
    for n in range(2):
        run = score(
            project,
            "--json-report",
            f"out{n}/r.json",
            "--markdown-report",
            f"out{n}/r.md",
        )
        assert run.code == 0, run.err
        outputs.append(
            (
                (project.root / f"out{n}/r.json").read_bytes(),
                (project.root / f"out{n}/r.md").read_bytes(),
            )
        )
    assert outputs[0] == outputs[1]


def test_degraded_fixture_fails_and_the_diff_names_case_and_change(project: Project) -> None:
    seed_project(project)
    assert (
        score(
            project,
            "--json-report",
            "reports/baseline.json",
            "--markdown-report",
            "reports/baseline.md",
        ).code
        == 0
    )
    project.write_fixture(make_fixture("pool-size", [block(1, "decoy", text="no match")]))
    run = score(project, "--compare-to", "reports/baseline.json")
    assert run.code == 1
    assert "Failed cases:\n  pool-size: hit level miss is below the minimum medium; " in run.out
    assert "rerank top source 'decoy', expected 'mysql-pool'" in run.out
    assert (
        "Regressed against reports/baseline.json: 1 case(s) regressed, 0 improved, 0 changed, "
        "0 added, 0 removed; 16 aggregate metric regression(s) from 1 cause(s), "
        "0 improvement(s)\n"
        "Regressions:\n"
        "  pool-size: passed yes -> no; hitLevel strong -> miss; firstExpectedRank 1 -> -\n"
        # the 16 rows one case moved, grouped under it: the 12 category / language /
        # split rows repeat the overall ones; one case cannot be significant (Holm p)
        "  missCount +1 <- 1 case: pool-size: regression; "
        "+3 category/language/split row(s) alike\n"
        "  passRate -33.3 pp, recallAtK -50.0 pp, strongHitRate -50.0 pp <- 1 case: pool-size: "
        "beyond tolerance, not significant (1 case), Holm p 1.000; "
        "+9 category/language/split row(s) alike\n"
        # what the case lost, from the two reports' coverage, one line
        "What the cases lost:\n"
        "  pool-size: lost keyword 'maximum-pool-size' (was in mysql-pool#1); lost source "
        "mysql-pool (rank 1 -> below the cut); lost expectation rerankTopSource "
        "(held -> failed)\n"
        # not a git repository, no --baseline-ref: the losses are listed, not staged
        "Note: stages were not attributed: the baseline's fixtures were not found; pass "
        "--baseline-ref REF (the branch the baseline was accepted on, e.g. origin/main) or "
        "--baseline-fixtures DIR\n"
        "Reports: "
    ) in run.out
    diff = json.loads((project.root / "reports/baseline-diff.json").read_text())
    jsonschema.validate(diff, load_schema("diff-report"))
    (case,) = [c for c in diff["cases"] if c["status"] == "regression"]
    assert case["id"] == "pool-size"
    assert {
        "field": "hitLevel",
        "baseline": "strong",
        "current": "miss",
        "status": "regression",
    } in case["changes"]
    md = (project.root / "reports/baseline-diff.md").read_text()
    # the review order: verdict, the regressed case with its query, why it fails and
    # its top sources before and after, then the aggregates
    assert md.index("**Regressed against") < md.index("## Regressed cases (1)")
    assert md.index("## Regressed cases (1)") < md.index("## Aggregate metrics")
    assert "### `pool-size` (database, en): strong → miss" in md
    assert "> query for pool-size" in md
    assert "- Fails now: hit level miss is below the minimum medium" in md
    assert "- Top sources: baseline `mysql-pool`, `decoy` → current `decoy`" in md


def test_clean_diff_exits_0(project: Project) -> None:
    seed_project(project)
    score(project, "--json-report", "base.json", "--markdown-report", "base.md")
    run = score(
        project,
        "--compare-to",
        "base.json",
        "--diff-json-report",
        "d.json",
        "--diff-markdown-report",
        "d.md",
    )
    assert run.code == 0, run.out + run.err
    assert "No regressions against base.json: 0 case(s) regressed" in run.out
    assert run.out.splitlines()[-1] == (
        "Reports: reports/current.json, reports/current.md, d.json, d.md"
    )


def test_tolerances_from_config(project: Project) -> None:
    seed_project(project)
    score(project, "--json-report", "base.json", "--markdown-report", "base.md")
    project.write_fixture(
        make_fixture("slow-log", [block(1, "a"), block(2, "b"), block(3, "mysql-pool")])
    )
    assert score(project, "--compare-to", "base.json").code == 1
    (project.root / "ragsnap.yaml").write_text(
        OPT_OUT + "diff:\n  tolerances:\n    firstExpectedRank: 1\n"
    )
    run = score(project, "--compare-to", "base.json")
    assert run.code == 0, run.out


def test_scoring_skip_turns_off_an_expectation_the_service_cannot_meet(project: Project) -> None:
    # a service with no rerank trace: its fixtures record no rerank top source
    seed_project(project)
    fixture = make_fixture(
        "pool-size",
        [block(1, "mysql-pool", text="Set maximum-pool-size to 20."), block(2, "decoy")],
    )
    fixture["lookupResult"]["rerankTrace"] = {
        "applied": False,
        "reranker": None,
        "before": [],
        "after": [],
    }
    project.write_fixture(fixture)
    failing = score(project)
    assert failing.code == 1, failing.err
    assert "rerank top source None, expected 'mysql-pool'" in failing.out

    (project.root / "ragsnap.yaml").write_text(OPT_OUT + "  skip: [rerankTopSource]\n")
    run = score(project)
    assert run.code == 0, run.out + run.err
    assert run.out.startswith("3 cases: 3 passed, 0 failed")
    assert "Not checked (scoring.skip): rerankTopSource in 1 case(s)" in run.out
    report = json.loads((project.root / "reports/current.json").read_text())
    jsonschema.validate(report, load_schema("report"))
    entries = {entry["id"]: entry for entry in report["cases"]}
    assert entries["pool-size"]["skippedExpectations"] == ["rerankTopSource"]
    assert "skippedExpectations" not in entries["slow-log"]  # it expects no rerank source

    (project.root / "ragsnap.yaml").write_text(OPT_OUT + "  skip: [rerankSource]\n")
    bad = score(project)
    assert bad.code == 2
    assert "ragsnap.yaml" in bad.err and "/scoring/skip/0" in bad.err
    assert "rerankTopSource" in bad.err


def test_a_fixture_without_traces_scores_and_every_format_says_not_applicable(
    project: Project,
) -> None:
    # a hand-written fixture from another retriever: evidence blocks only
    seed_project(project)
    fixture = make_fixture(
        "pool-size",
        [block(1, "mysql-pool", text="Set maximum-pool-size to 20."), block(2, "decoy")],
    )
    fixture["lookupResult"] = {"evidenceBlocks": fixture["lookupResult"]["evidenceBlocks"]}
    project.write_fixture(fixture)
    (project.root / "ragsnap.yaml").write_text(OPT_OUT + "  skip: [evidenceStatus]\n")
    project.write_cases(
        [
            make_case(
                "pool-size",
                expectedBreadcrumbs=["Database > MySQL"],
                expectedKeywords=["maximum-pool-size"],
                expectedRerankTopSource="nowhere",  # would fail, were it checked
                expectedSelectedAttempt="nowhere",
                expectedEvidenceStatus="nowhere",
            ),
            make_case("slow-log", category="observability", split="test", language="zh"),
            make_case("no-answer", noAnswer=True, expectedSources=None),
        ],
        defaults={"kbScope": "rag-eval", "topK": 5},
    )
    run = score(
        project,
        *("--report", "github=comment.md", "--junit-xml", "junit.xml"),
        *("--html-report", "page.html"),
    )
    assert run.code == 0, run.out + run.err
    assert run.out.startswith("3 cases: 3 passed, 0 failed")
    counted = (
        "Not applicable in 1 case(s) (the fixture lacks what they read, neither passed nor "
        "failed): selectedAttempt in 1 case(s) (no retrievalTrace), rerankTopSource in 1 "
        "case(s) (no rerankTrace)"
    )
    skipped = "Not checked (scoring.skip): evidenceStatus in 1 case(s)"
    assert counted in run.out and skipped in run.out

    report = json.loads((project.root / "reports/current.json").read_text())
    jsonschema.validate(report, load_schema("report"))
    entry = next(c for c in report["cases"] if c["id"] == "pool-size")
    assert entry["passed"] and entry["hitLevel"] == "strong"
    assert entry["notApplicable"] == [
        {"expectation": "selectedAttempt", "missing": "retrievalTrace"},
        {"expectation": "rerankTopSource", "missing": "rerankTrace"},
    ]
    assert entry["skippedExpectations"] == ["evidenceStatus"]
    assert report["notApplicable"] == {
        "cases": 1,
        "expectations": {"rerankTopSource": 1, "selectedAttempt": 1},
    }
    markdown = (project.root / "reports/current.md").read_text()
    assert "## Expectations not checked (1 case(s))" in markdown
    assert f"- {counted}" in markdown and f"- {skipped}" in markdown
    assert "rerankTopSource not applicable (fixture has no rerankTrace)" in markdown
    comment = (project.root / "comment.md").read_text()
    assert f"- {counted}" in comment and f"- {skipped}" in comment

    junit = ET.parse(project.root / "junit.xml").getroot()
    assert junit.get("failures") == "0"
    case = junit.find("testsuite/testcase[@name='pool-size']")
    assert case is not None and case.find("failure") is None
    properties = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert properties == {
        "notApplicable": "selectedAttempt (fixture has no retrievalTrace), "
        "rerankTopSource (fixture has no rerankTrace)",
        "skippedExpectations": "evidenceStatus",
    }
    suite = {p.get("name"): p.get("value") for p in junit.findall("testsuite/properties/property")}
    assert suite == {"notApplicable": counted, "skippedExpectations": skipped}

    page = (project.root / "page.html").read_text()
    assert html.escape(counted, quote=True) in page and html.escape(skipped) in page
    assert (
        "selectedAttempt not applicable (fixture has no retrievalTrace); rerankTopSource not "
        "applicable (fixture has no rerankTrace); evidenceStatus skipped (scoring.skip)"
    ) in page  # the case's row, in the table's JSON


def test_invalid_case_file_exits_2_naming_file_and_field(project: Project) -> None:
    seed_project(project)
    cases = json.loads(project.cases.read_text())
    cases["cases"][1]["expectedSorces"] = ["typo"]
    write_json(project.cases, cases)
    run = score(project)
    assert run.code == 2
    assert run.out == ""
    assert run.err.strip() == (
        "InputError: cases/golden-cases.json at /cases/1: unknown field 'expectedSorces'; "
        "did you mean 'expectedSources'? Else "
        "remove it or correct its spelling (allowed: category, expectedBreadcrumbs, "
        "expectedContextSources, expectedDocIds, expectedEvidenceStatus, expectedFallbackReason, "
        "expectedFallbackReasons, expectedKeywords, expectedRerankTopSource, "
        "expectedSelectedAttempt, expectedSources, id, judgments, kbScope, knownFailure, language, minHitLevel, noAnswer, "
        "notes, query, split, tags, topK)"
    )
    assert "Traceback" not in run.err
    assert not (project.root / "reports").exists()


def test_bad_inputs_never_traceback(project: Project) -> None:
    seed_project(project)
    (project.fixtures / "slow-log.json").write_bytes(b"\xff\xfe not json")
    run = score(project)
    assert (run.code, "Traceback" in run.err) == (2, False)
    assert "fixtures/slow-log.json: is not UTF-8" in run.err
    (project.fixtures / "slow-log.json").write_text('{"caseId": ')
    run = score(project)
    assert run.code == 2 and "is not valid JSON" in run.err
    run = score(project, "--cases", "nope.json")
    assert run.code == 2 and "nope.json: file not found; pass --cases" in run.err
    run = score(project, "--diff-json-report", "x.json")
    assert (
        run.code == 2
        and "UsageError: --diff-json-report, --diff-markdown-report and "
        "--require-significance need --compare-to BASELINE"
        in run.err
    )
    run = score(project, "--no-such-flag")
    assert run.code == 2 and "unrecognized arguments" in run.err


def test_bad_baseline_leaves_existing_reports_untouched(project: Project) -> None:
    seed_project(project)
    assert score(project).code == 0
    before = (project.root / "reports/current.json").read_bytes()
    write_json(project.root / "old.json", {"schemaVersion": 0, "kind": "ragsnap-score-report"})
    project.write_fixture(make_fixture("slow-log", [block(1, "x")]))  # would change the report
    run = score(project, "--compare-to", "old.json")
    assert run.code == 2
    assert "old.json at /schemaVersion: was written with report schema version 0" in run.err
    assert (project.root / "reports/current.json").read_bytes() == before


def test_missing_fixture_and_orphan(project: Project) -> None:
    seed_project(project)
    (project.fixtures / "slow-log.json").unlink()
    project.write_fixture(make_fixture("leftover", [block(1, "x")]))
    run = score(project)
    assert run.code == 1
    assert "  slow-log: fixture missing" in run.out
    assert "Orphaned fixtures (no golden case): leftover; delete them or add their cases" in run.out
    report = json.loads((project.root / "reports/current.json").read_text())
    assert report["orphanedFixtures"] == ["leftover"]
    assert report["summary"]["fixtureMissing"] == 1


def test_symlinked_report_destination_is_refused(project: Project) -> None:
    seed_project(project)
    (project.root / "reports").mkdir()
    target = project.root / "elsewhere.json"
    target.write_text("precious")
    (project.root / "reports/current.json").symlink_to(target)
    run = score(project)
    assert run.code == 2 and "is a symbolic link" in run.err
    assert target.read_text() == "precious"
    assert not (project.root / "reports/current.md").exists()


def test_main_job_on_the_committed_example(tmp_path: Path) -> None:
    """The README's main command, on a copy of the repository's own eval set (its seed
    documents too: the labels are checked against them, as the baseline's were)."""
    copy_example(tmp_path, "cases", "fixtures", "reports", "seed-docs")
    run = run_cli(
        "--compare-to", "reports/baseline.json", cwd=tmp_path, script="eval_rag_retrieval.py"
    )
    assert run.code == 0, run.out + run.err
    first = run.out.splitlines()[0]
    assert re.match(
        r"30 cases: \d+ passed, \d+ expected failures \(knownFailure\), 0 failed ", first
    )
    assert "No regressions against reports/baseline.json" in run.out
    committed = json.loads((REPO / "reports/baseline.json").read_text())
    current = json.loads((tmp_path / "reports/current.json").read_text())
    assert current == committed, (
        "reports/baseline.json is stale: regenerate it (see docs/reports.md)"
    )


def test_streamed_score_reports_what_the_batch_functions_compute(tmp_path: Path) -> None:
    """``score`` scores each fixture as it reads it and drops it; its report holds what
    ``load_fixtures`` + ``case_metrics`` + ``score_case`` + ``build_report`` give for
    the same files (graded metrics, a case without a fixture, an orphaned fixture),
    byte for byte once written."""
    from ragsnap.config import load_config
    from ragsnap.io.inputs import load_cases, load_fixtures
    from ragsnap.io.jsonio import dump_json
    from ragsnap.ir.metrics import parse_measures
    from ragsnap.scoring.casemetrics import case_metrics
    from ragsnap.scoring.hits import score_case
    from ragsnap.scoring.report import build_report

    copy_example(tmp_path, "cases", "fixtures", "seed-docs", "ragsnap.yaml")
    fixtures = tmp_path / "fixtures"
    names = sorted(p.name for p in fixtures.glob("*.json") if not p.name.startswith("_"))
    (fixtures / names[0]).unlink()  # a case without its fixture
    orphan = json.loads((fixtures / names[1]).read_text(encoding="utf-8"))
    orphan["caseId"] = "zz-orphan"
    (fixtures / "zz-orphan.json").write_text(json.dumps(orphan), encoding="utf-8")
    run = run_cli(
        "--json-report", "reports/current.json", cwd=tmp_path, script="eval_rag_retrieval.py"
    )
    assert run.code in (0, 1), run.out + run.err

    config = load_config(tmp_path / "ragsnap.yaml")
    cases = load_cases(tmp_path / "cases/golden-cases.json")
    loaded = load_fixtures(fixtures)
    graded = case_metrics(cases.cases, loaded.fixtures, parse_measures(config.measures))
    assert graded, "the example's judged cases have graded metrics"
    results = [
        score_case(c, loaded.fixtures.get(c.id), graded.get(c.id), skip=config.skip_expectations)
        for c in cases.cases
    ]
    ids = {c.id for c in cases.cases}
    batch = build_report(
        results,
        [name for name in loaded.fixtures if name not in ids],
        {"fixturesSha256": loaded.sha256},
        config.known_failures,
    )
    written = json.loads((tmp_path / "reports/current.json").read_text(encoding="utf-8"))
    assert written["orphanedFixtures"] == ["zz-orphan"]
    assert written["inputs"]["fixturesSha256"] == loaded.sha256
    for key in ("cases", "summary", "groups", "outcome", "orphanedFixtures"):
        assert dump_json(written[key]) == dump_json(batch[key]), key


PASSING = "db-err-4031-order-repository"  # passes on the example set, unmarked


def _known_failures(root: Path, mode: str, mark_passing: bool = False) -> Path:
    """The example set with ``knownFailures: mode``; ``mark_passing``: a passing case
    marked knownFailure too (a known failure that now passes)."""
    if not (root / "cases").exists():
        copy_example(root, "cases", "fixtures")
    text = (REPO / "ragsnap.yaml").read_text(encoding="utf-8")
    (root / "ragsnap.yaml").write_text(f"{text}knownFailures: {mode}\n", encoding="utf-8")
    path = root / "cases/golden-cases.json"
    cases = json.loads((REPO / "cases/golden-cases.json").read_text(encoding="utf-8"))
    if mark_passing:
        (case,) = [c for c in cases["cases"] if c["id"] == PASSING]
        case["knownFailure"] = "tracked in #1"
    path.write_text(json.dumps(cases, ensure_ascii=False), encoding="utf-8")
    return root


GREEN = "30 cases: 19 passed, 11 expected failures (knownFailure), 0 failed (pass rate 63.3%)"
NOW_PASSES = "30 cases: 18 passed, 1 known failure now passes"


@pytest.mark.slow
def test_known_failure_modes_exit_codes_and_first_lines(tmp_path: Path) -> None:
    """Each knownFailures mode on the example set (11 known failures), as it is and with
    a passing case marked knownFailure; the first line, the Markdown headline, the JSON
    outcome and the JUnit file say the same."""
    expected = {
        ("expected", False): (0, GREEN),
        ("strict", False): (0, GREEN),
        ("fail", False): (
            1,
            "30 cases: 19 passed, 11 failed (11 marked knownFailure; knownFailures: fail)",
        ),
        ("expected", True): (
            0,
            f"{NOW_PASSES}, 11 expected failures (knownFailure), 0 failed (pass rate",
        ),
        ("strict", True): (
            1,
            f"{NOW_PASSES} (failing the run: knownFailures: strict), 11 expected failures "
            "(knownFailure), 0 failed (pass rate",
        ),
        ("fail", True): (1, f"{NOW_PASSES}, 11 failed (11 marked knownFailure; knownFailures"),
    }
    for (mode, mark), (code, first) in expected.items():
        root = _known_failures(tmp_path, mode, mark)
        run = run_cli(
            "score", "--junit-xml", "reports/junit.xml", "--html-report", "r.html", cwd=root
        )
        assert run.code == code, (mode, mark, run.out + run.err)
        lines = run.out.splitlines()
        assert lines[0].startswith(first), (mode, mark, lines[0])
        headline = first.split(" (pass rate")[0]
        markdown = (root / "reports/current.md").read_text(encoding="utf-8")
        assert markdown.splitlines()[2].startswith(f"**{headline}"), markdown.splitlines()[2]
        page = (root / "r.html").read_text(encoding="utf-8")
        assert f'<div class="verdict {"bad" if code else "good"}" id="verdict">30 cases' in page
        report = json.loads((root / "reports/current.json").read_text(encoding="utf-8"))
        jsonschema.validate(report, load_schema("report"))
        assert report["outcome"]["knownFailures"] == mode
        assert (report["outcome"]["casesFailingRun"] > 0) == (code == 1)
        junit = (root / "reports/junit.xml").read_text(encoding="utf-8")
        failures = re.search(r'<testsuites [^>]*failures="(\d+)"', junit)
        assert failures is not None
        assert int(failures.group(1)) == report["outcome"]["casesFailingRun"]
        if mark:
            at = lines.index(
                "Known failures that now pass, failing the run (knownFailures: strict); "
                "remove their knownFailure:"
                if mode == "strict"
                else "Known failures that now pass; remove their knownFailure:"
            )
            assert lines[at + 1] == f"  {PASSING}"
        if mode != "fail":
            assert 'type="xfail"' in junit
    (tmp_path / "ragsnap.yaml").write_text("knownFailures: xfail\n", encoding="utf-8")
    run = run_cli("score", cwd=tmp_path)
    assert run.code == 2, run.out + run.err
    assert run.err.strip().startswith("InputError: ragsnap.yaml")
    assert "/knownFailures" in run.err and "use one of: 'expected', 'strict', 'fail'" in run.err


def test_history_keeps_a_dated_copy_of_each_report(tmp_path: Path) -> None:
    copy_example(tmp_path, "cases", "fixtures", "ragsnap.yaml")
    name = re.compile(r"^\d{4}-\d\d-\d\dT\d{6}\.\d{3}Z-[0-9a-f]{8}\.json$")
    run = run_cli("score", "--history", "ci/history", cwd=tmp_path)
    assert run.code == 0, run.err
    (first,) = sorted((tmp_path / "ci/history").iterdir())
    assert name.match(first.name), first.name
    assert first.read_bytes() == (tmp_path / "reports/current.json").read_bytes()
    assert f"ci/history/{first.name}" in run.out.splitlines()[-1]  # listed with the reports
    fixture = tmp_path / f"fixtures/{PASSING}.json"
    data = json.loads(fixture.read_text(encoding="utf-8"))
    data["lookupResult"]["evidenceBlocks"] = []
    fixture.write_text(json.dumps(data), encoding="utf-8")
    assert run_cli("score", "--history", "ci/history", cwd=tmp_path).code == 1
    entries = sorted((tmp_path / "ci/history").iterdir())
    assert len(entries) == 2 and entries[0] == first and name.match(entries[1].name)
    trend = run_cli("trend", "ci/history", cwd=tmp_path)
    assert trend.code == 0, trend.err
    assert trend.out.splitlines()[1].startswith("Latest change, ")
    assert ": dropped: passRate 63.3% -> 60.0% (-3.3 pp)" in trend.out.splitlines()[1]

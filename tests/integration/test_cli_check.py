"""``ragsnap check`` driven as a user would, on a copy of the example project."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from conftest import REPO, copy_example, run_cli, write_json
from ragsnap.io.schema import load_schema

CASES = "cases/golden-cases.json"
SECRET = "sk-live-9fQ2xLr7Vt4Nm1Kd9Hs3"


@pytest.fixture
def example(tmp_path: Path) -> Path:
    """The repository's own cases, seed documents and ragsnap.yaml."""
    return copy_example(tmp_path, "cases", "seed-docs", "ragsnap.yaml")


def edit_cases(root: Path, change: Any) -> None:
    path = root / CASES
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data["cases"])
    write_json(path, data)


def test_the_committed_example_passes_clean(example: Path) -> None:
    """Its zh no-answer case (db-noanswer-mongodb-arbiter-zh) covers the last language."""
    run = run_cli("check", cwd=example)
    assert run.code == 0, run.out + run.err
    assert run.out.splitlines() == [
        "check: 30 cases against seed-docs (18 documents, 88 chunks): 0 errors, 0 warnings; "
        "labels OK"
    ]


def test_the_repository_itself_passes() -> None:
    """The committed cases and seed documents, in place (the CI check)."""
    assert run_cli("check", cwd=REPO).code == 0


def inject_defects(cases: list[dict[str, Any]]) -> None:
    cases[0]["judgments"][0]["chunkId"] = "mysql-connection-pool#42"
    cases[1]["judgments"][0]["spans"][1] = "With 8 replicas that is at most 160 connections"
    cases[1]["expectedBreadcrumbs"] = ["Database > Postgres"]
    cases[1]["expectedDocIds"] = ["doc-mysql-connection-pol"]
    cases[2]["query"] += f" (api key {SECRET})"
    cases[3]["notes"] = "Written from /home/alice/notes.md"
    cases[4]["notes"] = "Reproduced against http://10.2.3.4/api/knowledge/lookup"
    cases[5]["expectedContextSources"] = ["no-such-source"]
    cases[8]["expectedSources"] = ["billing-db-pool-tuning"]  # kb_scope other-team


def test_each_kind_of_defect_is_named_with_its_pointer_and_exits_2(example: Path) -> None:
    edit_cases(example, inject_defects)
    run = run_cli("check", "--json-report", "reports/check.json", cwd=example)
    assert run.code == 2, run.out + run.err
    lines = run.out.splitlines()
    assert lines[0].startswith("check: 30 cases against seed-docs") and lines[0].endswith(
        ": 9 errors, 0 warnings; fix the errors below"
    )
    prefix = f"error: {CASES} at "
    expected = [
        "/cases/0/judgments/0/chunkId: chunk 'mysql-connection-pool#42' does not exist: "
        "'mysql-connection-pool' is cut into 5 chunk(s), #0..#4 (maxChars 1200, overlapChars 150, headingLevel 2)",
        "/cases/1/expectedDocIds/0: document id 'doc-mysql-connection-pol' is not in the seed "
        "corpus; did you mean 'doc-mysql-connection-pool'?",
        "/cases/1/expectedBreadcrumbs/0: breadcrumb 'Database > Postgres' is not a prefix of "
        "any seed document's breadcrumb",
        "/cases/1/judgments/0/spans/1: span 'With 8 replicas that is at most 160 connections' "
        "does not occur verbatim in chunk 'mysql-connection-pool#1'",
        "/cases/2/query: holds an API key (sk-...) at character",
        "/cases/3/notes: holds an absolute path (/home/..., /Users/...) at character 13",
        "/cases/4/notes: holds a URL (scheme://...) at character 19",
        "/cases/5/expectedContextSources/0: source 'no-such-source' is not in the seed corpus",
        "/cases/8/expectedSources/0: source 'billing-db-pool-tuning' is in kb_scope "
        "'other-team', and the case looks up inside kb_scope 'rag-eval' only",
    ]
    errors = [line for line in lines if line.startswith("error: ")]
    assert len(errors) == len(expected)
    for want in expected:
        assert any(line.startswith(prefix + want) for line in errors), want
    assert lines[-1] == "Report: reports/check.json"
    assert SECRET not in run.out + run.err

    report = json.loads((example / "reports/check.json").read_text(encoding="utf-8"))
    jsonschema.validate(report, load_schema("check-report"))
    assert report["summary"] == {
        "cases": 30,
        "documents": 18,
        "chunks": 88,
        "errors": 9,
        "warnings": 0,
    }
    assert [f["pointer"] for f in report["findings"]][:2] == [
        "/cases/0/judgments/0/chunkId",
        "/cases/1/expectedBreadcrumbs/0",
    ]
    assert {f["file"] for f in report["findings"]} == {CASES}
    assert SECRET not in json.dumps(report)


def test_the_report_is_byte_identical_across_runs(example: Path) -> None:
    edit_cases(example, inject_defects)
    for name in ("a.json", "b.json"):
        assert run_cli("check", "--json-report", f"reports/{name}", cwd=example).code == 2
    assert (example / "reports/a.json").read_bytes() == (example / "reports/b.json").read_bytes()


def test_a_language_without_a_no_answer_case_is_an_error_unless_the_project_opts_out(
    example: Path,
) -> None:
    def drop_zh_no_answer(cases: list[dict[str, Any]]) -> None:
        cases[:] = [c for c in cases if not (c["language"] == "zh" and c.get("noAnswer"))]

    edit_cases(example, drop_zh_no_answer)
    finding = (
        f"{CASES} at /cases: language 'zh' has 3 answerable case(s) and no no-answer case, so "
        "no-answer false positives are not measured in it; add a case with "
        '"language": "zh", "noAnswer": true and a question the seed corpus does not answer'
    )
    run = run_cli("check", cwd=example)
    assert run.code == 2, run.out + run.err
    assert run.out.splitlines() == [
        "check: 29 cases against seed-docs (18 documents, 88 chunks): 1 error, 0 warnings; "
        "fix the errors below",
        f"error: {finding} (or set `scoring.noAnswerCoverage: warning` in ragsnap.yaml when "
        "the set cannot have one)",
    ]

    config = example / "ragsnap.yaml"  # the opt-out: a warning, which alone exits 0
    config.write_text(config.read_text() + "scoring:\n  noAnswerCoverage: warning\n")
    run = run_cli("check", cwd=example)
    assert run.code == 0, run.out + run.err
    assert run.out.splitlines() == [
        "check: 29 cases against seed-docs (18 documents, 88 chunks): 0 errors, 1 warning; "
        "labels OK",
        f"warning: {finding}",
    ]


def test_chunk_ids_follow_the_configured_chunking(example: Path) -> None:
    """With smaller chunks the example's judged chunk ids name other text."""
    config = example / "ragsnap.yaml"
    config.write_text(config.read_text() + "kb:\n  chunking: {maxChars: 300, overlapChars: 50}\n")
    run = run_cli("check", cwd=example)
    assert run.code == 2, run.out
    lines = run.out.splitlines()
    assert lines[0].startswith("check: 30 cases against seed-docs (18 documents, 145 chunks): ")
    assert lines[1] == (
        f"error: {CASES} at /cases/0/judgments/0/spans/0: span 'When a thread waits longer "
        "than `connection-timeout`, Hik...' is in 'mysql-connection-pool' but not in the "
        "judged chunk 'mysql-connection-pool#2' (it is in 'mysql-connection-pool#5'); judge "
        "the chunk that holds the span, or quote a shorter span from the judged chunk"
    )
    assert "(it crosses a chunk boundary)" in lines[2]


def test_seed_docs_option_and_config_default(example: Path) -> None:
    other = example / "other-docs"
    other.mkdir()
    for name in ("mysql-connection-pool.md", "redis-eviction-policy.md"):
        shutil.copy(example / "seed-docs" / name, other / name)
    run = run_cli("check", "--seed-docs", "other-docs", cwd=example)
    assert run.code == 2
    assert run.out.startswith("check: 30 cases against other-docs (2 documents, ")
    assert "source 'kafka-consumer-lag' is not in the seed corpus" in run.out

    config = example / "ragsnap.yaml"
    config.write_text(config.read_text() + "kb:\n  seedDocs: other-docs\n")
    assert run_cli("check", cwd=example).out.startswith("check: 30 cases against other-docs")


def test_bad_input_exits_2_before_anything_is_written(example: Path) -> None:
    run = run_cli("check", "--seed-docs", "nowhere", "--json-report", "r.json", cwd=example)
    assert run.code == 2
    assert run.err.startswith("InputError: nowhere: not found; pass --seed-docs")
    assert not (example / "r.json").exists()

    run = run_cli("check", "--json-report", CASES, cwd=example)
    assert run.code == 2
    assert run.err.startswith("UsageError: --json-report ")
    assert "is the golden cases file, which ragsnap reads and never overwrites" in run.err

    edit_cases(example, lambda cases: cases[0].update(expectedSorces=["x"]))
    run = run_cli("check", cwd=example)
    assert run.code == 2
    assert "unknown field 'expectedSorces'" in run.err


def test_the_other_shipped_sets_pass(tmp_path: Path) -> None:
    """GoodBuddy's imported set (a JSONL corpus) and the project `ragsnap init` writes."""
    run = run_cli(
        "check",
        "--cases",
        "cases/goodbuddy/golden-cases.json",
        "--config",
        "cases/goodbuddy/ragsnap.yaml",
        cwd=REPO,
    )
    assert run.code == 0, run.out + run.err
    assert run.out.endswith(": 0 errors, 0 warnings; labels OK\n")
    assert run_cli("init", "fresh", cwd=tmp_path).code == 0
    run = run_cli("check", cwd=tmp_path / "fresh")
    assert run.code == 0, run.out + run.err
    assert run.out.endswith(": 0 errors, 0 warnings; labels OK\n")

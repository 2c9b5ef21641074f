"""``pytest --ragsnap`` driven as a user would: a copy of the example project, pytest run
in it (``pytester``), outcomes compared with ``ragsnap score`` on the same files."""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest

from conftest import REPO, block, make_case, make_fixture, run_cli, run_score
from ragsnap import pytest_plugin
from ragsnap.cli import build_parser
from ragsnap.commands import DEFAULT_BASELINE, DEFAULT_CASES, DEFAULT_FIXTURES
from ragsnap.config import DEFAULT_CONFIG
from ragsnap.models import Fixture, GoldenCase
from ragsnap.scoring.hits import score_case

pytest_plugins = ["pytester"]

FAILING = "db-hikari-max-pool-size-key"  # passes on the example set, not a known failure
KNOWN = "db-slow-sql-paraphrase"  # a knownFailure of the example set
ORDER = "db-err-4031-order-repository"


def _installed() -> bool:
    """Whether pytest loads the plugin by itself (its ``pytest11`` entry point)."""
    if os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD"):
        return False
    return any(ep.name == "ragsnap" for ep in importlib.metadata.entry_points(group="pytest11"))


#: ``-p`` only while the entry point is not installed: both would register it twice
PLUGIN = () if _installed() else ("-p", "ragsnap.pytest_plugin")


@pytest.fixture
def example(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The example project, with ``testpaths = tests`` (not cases/) and one ordinary test.

    pytest runs in its own process (``runpytest_subprocess``) with this checkout's
    ragsnap: an in-process run forgets the modules it imported, and PyYAML's and numpy's
    C extensions cannot be imported twice in one process."""
    paths = [str(REPO / "eval"), os.environ.get("PYTHONPATH", "")]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in paths if p))
    root = pytester.path
    shutil.copytree(REPO / "cases", root / "cases")
    shutil.copytree(REPO / "fixtures", root / "fixtures")
    shutil.copytree(REPO / "seed-docs", root / "seed-docs")
    shutil.copy(REPO / "ragsnap.yaml", root / "ragsnap.yaml")
    pytester.makeini("[pytest]\ntestpaths = tests\n")
    (root / "tests").mkdir()
    (root / "tests" / "test_other.py").write_text("def test_other():\n    pass\n")
    return root


def ragsnap(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess(*PLUGIN, "--ragsnap", "-p", "no:cacheprovider", *args)


def edit_fixture(root: Path, case_id: str, change: Any) -> dict[str, Any]:
    """Apply ``change`` to a fixture; return the fixture as it was."""
    path = root / "fixtures" / f"{case_id}.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    before = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    return before


def no_evidence(data: dict[str, Any]) -> None:
    data["lookupResult"]["evidenceBlocks"] = []


def add_orphan(root: Path) -> Path:
    orphan = json.loads((root / "fixtures" / f"{ORDER}.json").read_text(encoding="utf-8"))
    orphan["caseId"] = "retired-case"
    path = root / "fixtures" / "retired-case.json"
    path.write_text(json.dumps(orphan), encoding="utf-8")
    return path


def test_cases_run_as_tests_with_the_outcomes_of_ragsnap_score(
    pytester: pytest.Pytester, example: Path
) -> None:
    edit_fixture(example, FAILING, no_evidence)
    _, report = run_score(
        example / "cases" / "golden-cases.json",
        example / "fixtures",
        example / "reports",
        cwd=example,
    )
    cases = report["cases"]
    expected = {
        "passed": sum(c["passed"] and not c.get("knownFailure") for c in cases),
        "failed": sum(not c["passed"] and not c.get("knownFailure") for c in cases),
        "xfailed": sum(not c["passed"] and bool(c.get("knownFailure")) for c in cases),
        "xpassed": sum(c["passed"] and bool(c.get("knownFailure")) for c in cases),
    }
    assert expected == {"passed": 18, "failed": 1, "xfailed": 11, "xpassed": 0}

    result = ragsnap(pytester, "-rxf", "--junitxml=junit.xml")
    expected["passed"] += 1  # tests/test_other.py
    result.assert_outcomes(**expected)
    (failing,) = [c for c in cases if c["id"] == FAILING]
    message = f"hit level {failing['hitLevel']}: {'; '.join(failing['reasons'])}"
    assert message == "hit level miss: hit level miss is below the minimum medium"
    result.stdout.fnmatch_lines(
        [
            f"*_ ragsnap case {FAILING} _*",
            message,
            f"FAILED cases/golden-cases.json::{FAILING} - hit level miss*",
        ]
    )
    (known,) = [c for c in cases if c["id"] == KNOWN]
    result.stdout.fnmatch_lines(
        [f"XFAIL cases/golden-cases.json::{KNOWN} - {known['knownFailure'][:40]}*"]
    )
    assert "Traceback" not in result.stdout.str()
    junit = (example / "junit.xml").read_text(encoding="utf-8")
    assert '<property name="ragsnap.hitLevel" value="miss" />' in junit
    assert '<property name="ragsnap.ndcg@10" value=' in junit


def test_a_fixture_without_traces_passes_with_its_expectations_not_applicable(
    pytester: pytest.Pytester, example: Path
) -> None:
    def bare(data: dict[str, Any]) -> None:  # another retriever's fixture: blocks only
        data["lookupResult"] = {"evidenceBlocks": data["lookupResult"]["evidenceBlocks"]}

    edit_fixture(example, ORDER, bare)
    result = ragsnap(pytester, "-k", ORDER, "--junitxml=junit.xml")
    result.assert_outcomes(passed=1)
    junit = (example / "junit.xml").read_text(encoding="utf-8")
    assert (
        '<property name="ragsnap.notApplicable" value="selectedAttempt (fixture has no '
        "retrievalTrace), fallbackReasons (fixture has no retrievalTrace), evidenceStatus "
        '(fixture has no retrievalTrace)" />'
    ) in junit


def test_a_no_answer_case_fails_without_a_hit_level() -> None:
    case = GoldenCase.from_json(make_case("none", noAnswer=True, expectedSources=None), {})
    fixture = Fixture.from_json(make_fixture("none", [block(1, "mysql-pool")]))
    result = score_case(case, fixture)
    assert pytest_plugin.failure_message(result) == (
        "hit level none (no-answer case): no-answer case returned 1 evidence block(s)"
    )


def test_k_selects_one_case_by_id(pytester: pytest.Pytester, example: Path) -> None:
    result = ragsnap(pytester, "-k", ORDER, "-v")
    result.assert_outcomes(passed=1, deselected=30)
    result.stdout.fnmatch_lines([f"cases/golden-cases.json::{ORDER} PASSED*"])


def test_a_missing_fixture_fails_saying_how_to_create_it(
    pytester: pytest.Pytester, example: Path
) -> None:
    (example / "fixtures" / f"{ORDER}.json").unlink()
    (example / "fixtures" / f"{KNOWN}.json").unlink()  # missing fails a known failure too
    result = ragsnap(pytester, "-k", f"{ORDER} or {KNOWN}")
    result.assert_outcomes(failed=2, deselected=29)
    result.stdout.fnmatch_lines(
        [
            f"fixtures/{ORDER}.json: missing; run `pytest --ragsnap --ragsnap-update -k {ORDER}`"
            f" or `ragsnap snapshot --case {ORDER}` to create it*",
        ]
    )


@pytest.mark.slow
def test_update_rewrites_a_tampered_fixture_and_deletes_unused_ones(
    pytester: pytest.Pytester, example: Path
) -> None:
    seeded = run_cli("seed", cwd=example)  # the real CLI, in its own process
    assert seeded.code == 0, seeded.err
    before = edit_fixture(example, FAILING, no_evidence)
    orphan = add_orphan(example)

    plain = ragsnap(pytester)
    plain.assert_outcomes(passed=19, failed=1, xfailed=11)
    plain.stdout.fnmatch_lines(
        [
            "*- ragsnap -*",
            "1 ragsnap fixture unused: retired-case.json; run with --ragsnap-update to delete them",
        ]
    )

    # a selection updates only what it selects, and leaves unused fixtures alone
    some = ragsnap(pytester, "--ragsnap-update", "-k", FAILING)
    some.assert_outcomes(passed=1, deselected=30)
    some.stdout.fnmatch_lines(
        [
            "snapshot: 1 case(s) from embedded (.ragsnap/kb.sqlite)*: 1 changed, 0 new, 0 unchanged",
            f"  {FAILING}: gained *",
            "1 ragsnap fixture unused: retired-case.json; run with --ragsnap-update and every "
            "case selected to delete them",
        ]
    )
    after = json.loads((example / "fixtures" / f"{FAILING}.json").read_text(encoding="utf-8"))
    assert after["lookupResult"] == before["lookupResult"]
    assert orphan.exists()

    every = ragsnap(pytester, "--ragsnap-update")
    every.assert_outcomes(passed=20, xfailed=11)
    every.stdout.fnmatch_lines(
        [
            "snapshot: 30 case(s) from embedded*: 0 changed, 0 new, 30 unchanged",
            "1 ragsnap fixture unused, deleted: retired-case.json",
        ]
    )
    assert not orphan.exists()
    assert "unused:" not in every.stdout.str()


def test_update_without_a_knowledge_base_is_a_usage_error(
    pytester: pytest.Pytester, example: Path
) -> None:
    result = ragsnap(pytester, "--ragsnap-update")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: ragsnap (--ragsnap-update): BackendError: .ragsnap/kb.sqlite: no knowledge "
            "base here; run `ragsnap seed` first*"
        ]
    )


@pytest.mark.parametrize(
    ("broken", "says"),
    [
        (
            "cases/golden-cases.json",
            "ERROR: ragsnap (reading the inputs): InputError: cases/golden-cases.json: "
            "is not valid JSON*",
        ),
        (
            "ragsnap.yaml",
            "ERROR: ragsnap (reading the inputs): InputError: ragsnap.yaml*",
        ),
        (
            f"fixtures/{ORDER}.json",
            f"ERROR: ragsnap (reading the fixtures): InputError: fixtures/{ORDER}.json: "
            "is not valid JSON*",
        ),
    ],
)
def test_bad_input_is_a_usage_error_naming_the_file(
    pytester: pytest.Pytester, example: Path, broken: str, says: str
) -> None:
    (example / broken).write_text("{\n", encoding="utf-8")
    result = ragsnap(pytester)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([says])
    assert "Traceback" not in result.stdout.str() + result.stderr.str()


def test_a_broken_label_stops_the_run_as_score_refuses_it(
    pytester: pytest.Pytester, example: Path
) -> None:
    """The label checks of ``ragsnap check`` run at collection, as in ``ragsnap score``:
    a target chunk that does not exist is a usage error naming file, pointer and case;
    ``--ragsnap-no-label-check`` scores anyway."""
    path = example / "cases" / "golden-cases.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["cases"][0]["judgments"][0]["chunkId"] = "mysql-connection-pool#42"
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    result = ragsnap(pytester)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "*ragsnap (checking the golden cases' labels): InputError: cases/golden-cases.json "
            f"at /cases/0/judgments/0/chunkId: chunk 'mysql-connection-pool#42' does not exist*"
            f"(case '{ORDER}')*--no-label-check*"
        ]
    )
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
    skipped = ragsnap(pytester, "--ragsnap-no-label-check", "-k", "db-hikari")
    assert skipped.ret == pytest.ExitCode.OK
    skipped.stdout.fnmatch_lines(["*--no-label-check*not checked*"])


def test_a_label_warning_is_in_the_summary_once(pytester: pytest.Pytester, example: Path) -> None:
    path = example / "cases" / "golden-cases.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["cases"] = [c for c in data["cases"] if not (c["language"] == "zh" and c.get("noAnswer"))]
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    config = example / "ragsnap.yaml"
    config.write_text(config.read_text() + "scoring:\n  noAnswerCoverage: warning\n")
    result = ragsnap(pytester, "-k", "db-hikari")
    assert result.ret == pytest.ExitCode.OK
    out = result.stdout.str()
    assert out.count("language 'zh' has 3 answerable case(s) and no no-answer case") == 1


def test_options_and_ini_name_other_files(pytester: pytest.Pytester, example: Path) -> None:
    (example / "cases").rename(example / "golden")
    (example / "fixtures").rename(example / "snapshots")
    missing = ragsnap(pytester)
    assert missing.ret == pytest.ExitCode.USAGE_ERROR
    missing.stderr.fnmatch_lines(
        [
            "ERROR: ragsnap: cases/golden-cases.json: no such golden cases file under the "
            "rootdir *; create it, or set ragsnap_cases in the pytest configuration (or pass "
            "--ragsnap-cases)"
        ]
    )
    pytester.makeini(
        "[pytest]\ntestpaths = tests\nragsnap_cases = golden/golden-cases.json\n"
        "ragsnap_fixtures = snapshots\n"
    )
    ragsnap(pytester, "-k", ORDER).assert_outcomes(passed=1, deselected=30)
    by_option = ragsnap(pytester, "-k", ORDER, "--ragsnap-fixtures", "nowhere")
    by_option.assert_outcomes(failed=1, deselected=30)
    by_option.stdout.fnmatch_lines([f"nowhere/{ORDER}.json: missing; *"])


def test_update_needs_ragsnap(pytester: pytest.Pytester, example: Path) -> None:
    result = pytester.runpytest_subprocess(*PLUGIN, "--ragsnap-update")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --ragsnap-update needs --ragsnap; run `pytest*"])


def test_without_ragsnap_the_plugin_collects_and_imports_nothing(
    pytester: pytest.Pytester, example: Path
) -> None:
    """Installed, the plugin loads in every pytest run: without --ragsnap it adds no item
    and imports no ragsnap module but itself."""
    pytester.makeconftest(
        "import sys\n"
        "def pytest_terminal_summary(terminalreporter):\n"
        "    loaded = sorted(m for m in sys.modules if m.startswith('ragsnap'))\n"
        "    terminalreporter.write_line(f'ragsnap modules: {loaded}')\n"
    )
    result = pytester.runpytest_subprocess(*PLUGIN)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["collected 1 item"])
    assert "ragsnap modules: ['ragsnap', 'ragsnap.pytest_plugin']" in result.stdout.lines


def test_the_plugin_defaults_are_those_of_ragsnap_score() -> None:
    assert Path(pytest_plugin.DEFAULT_CASES) == DEFAULT_CASES
    assert Path(pytest_plugin.DEFAULT_FIXTURES) == DEFAULT_FIXTURES
    assert Path(pytest_plugin.DEFAULT_CONFIG) == DEFAULT_CONFIG
    assert Path(pytest_plugin.DEFAULT_BASELINE) == DEFAULT_BASELINE


def test_update_runs_snapshot_with_the_command_lines_defaults() -> None:
    """The arguments the plugin passes ``ragsnap snapshot`` are the command line's, so an
    option added there is not missing here."""
    cli = vars(build_parser().parse_args(["snapshot"]))
    for name in ("command", "handler", "debug"):
        cli.pop(name, None)
    ours = vars(
        pytest_plugin.snapshot_args(DEFAULT_CASES, DEFAULT_FIXTURES, None, None, prune=False)
    )
    assert ours.keys() == cli.keys()
    assert {k: v for k, v in ours.items() if k != "skip_eval"} == {
        k: v for k, v in cli.items() if k != "skip_eval"
    }
    assert ours["skip_eval"] is True


def _mark_known(root: Path, case_id: str) -> None:
    """Mark a passing case ``knownFailure``: a known failure that now passes."""
    path = root / "cases" / "golden-cases.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    (case,) = [c for c in data["cases"] if c["id"] == case_id]
    case["knownFailure"] = "tracked in #1"
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")


def _known_failures(root: Path, mode: str) -> None:
    with (root / "ragsnap.yaml").open("a", encoding="utf-8") as config:
        config.write(f"knownFailures: {mode}\n")


@pytest.mark.slow
def test_known_failures_are_xfail_strict_as_configured(
    pytester: pytest.Pytester, example: Path
) -> None:
    """knownFailures: expected -> xfail (XPASS when one passes); strict -> the passing
    one fails as XPASS(strict); fail -> no mark, every failing case fails."""
    _mark_known(example, ORDER)
    result = ragsnap(pytester, "-rX")
    result.assert_outcomes(passed=18 + 1, xfailed=11, xpassed=1)  # + tests/test_other.py
    assert result.ret == 0
    result.stdout.fnmatch_lines([f"XPASS cases/golden-cases.json::{ORDER}*"])

    _known_failures(example, "strict")
    result = ragsnap(pytester, "-rf")
    result.assert_outcomes(passed=18 + 1, xfailed=11, failed=1)
    assert result.ret == 1
    result.stdout.fnmatch_lines([f"FAILED cases/golden-cases.json::{ORDER}*XPASS(strict)*"])

    (example / "ragsnap.yaml").write_text(
        (REPO / "ragsnap.yaml").read_text(encoding="utf-8") + "knownFailures: fail\n",
        encoding="utf-8",
    )
    result = ragsnap(pytester)
    result.assert_outcomes(passed=19 + 1, failed=11)  # ORDER passes, marked or not
    assert result.ret == 1


def test_an_edited_seed_document_fails_every_case_captured_before_it(
    pytester: pytest.Pytester, example: Path
) -> None:
    """Stale fixtures fail as they fail `ragsnap score`: each case captured from the old
    corpus fails with the cause, a known failure too (staleness is not what it expects)."""
    doc = example / "seed-docs" / "mysql-slow-query-log.md"
    doc.write_text(doc.read_text().replace("kept for 14 days", "kept for 15 days"))
    result = ragsnap(pytester, "-k", f"{ORDER} or {KNOWN}", "-rf")
    result.assert_outcomes(failed=2, deselected=29)
    cause = (  # the one fixture whose lookup cites the document (since heuristic-v2)
        "seed-docs/mysql-slow-query-log.md changed after "
        "fixtures/obs-log-retention-days.json (citing it) was captured"
    )
    result.stdout.fnmatch_lines(
        [f"stale fixture: {cause}; run `ragsnap seed && ragsnap snapshot`*", f"  {cause}"]
    )
    doc.write_text(doc.read_text().replace("kept for 15 days", "kept for 14 days"))
    fresh = ragsnap(pytester, "-k", ORDER)
    fresh.assert_outcomes(passed=1, deselected=30)


RETENTION = "obs-log-retention"  # a case of `ragsnap init`'s example project
LOST = "lost keyword '14 days' (corpus: log-retention#1 text changed: removed '14 days')"


def _ok(*args: str, cwd: Path) -> str:
    run = run_cli(*args, cwd=cwd)
    assert run.code == 0, run.out + run.err
    return run.out


@pytest.fixture
def retention(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    """`ragsnap init`'s project in git with an accepted baseline, in which the log-retention
    case asks for a strong hit; then its seed document loses "14 days" and is
    re-snapshotted: the case falls to medium and fails."""
    paths = [str(REPO / "eval"), os.environ.get("PYTHONPATH", "")]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in paths if p))
    root = pytester.path
    _ok("init", ".", cwd=root)
    cases = root / "cases" / "golden-cases.json"
    data = json.loads(cases.read_text(encoding="utf-8"))
    (case,) = [c for c in data["cases"] if c["id"] == RETENTION]
    case["minHitLevel"] = "strong"
    cases.write_text(json.dumps(data, indent=2), encoding="utf-8")
    for step in (["seed"], ["snapshot"], ["accept"]):
        _ok(*step, cwd=root)
    pytester.makeini("[pytest]\n")
    git = ["git", "-c", "user.email=a@b", "-c", "user.name=a"]
    for argv in (["git", "init", "-q"], ["git", "add", "-A"], [*git, "commit", "-qm", "base"]):
        subprocess.run(argv, cwd=root, check=True, capture_output=True)
    doc = root / "seed-docs" / "log-retention.md"
    text = doc.read_text(encoding="utf-8")
    assert "kept for 14 days" in text
    doc.write_text(text.replace("kept for 14 days", "kept for two weeks"), encoding="utf-8")
    _ok("seed", cwd=root)
    _ok("snapshot", "--skip-eval", cwd=root)
    return root


def test_a_failing_case_says_what_it_lost_and_at_which_stage(
    pytester: pytest.Pytester, retention: Path
) -> None:
    """Against reports/baseline.json, found by default, with the baseline's fixtures found
    in git as `ragsnap score --compare-to` finds them: the same loss line as score's."""
    score = run_cli("score", "--compare-to", "reports/baseline.json", cwd=retention)
    assert score.code == 1, score.err  # the case fails, and regressed
    assert f"  {RETENTION}: {LOST}" in score.out.splitlines()

    reasons = "hit level medium: hit level medium is below the minimum strong"
    result = ragsnap(pytester, "-rf", "--junitxml=junit.xml")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines([f"*_ ragsnap case {RETENTION} _*", f"{reasons}; {LOST}"])
    (failure,) = ElementTree.parse(retention / "junit.xml").iter("failure")
    assert failure.get("message") == f"{reasons}; {LOST}"

    # baseline fixtures named where git cannot find them stop the run
    bad_ref = ragsnap(pytester, "--ragsnap-baseline-ref", "no-such-ref")
    assert bad_ref.ret == pytest.ExitCode.USAGE_ERROR
    assert "git cannot resolve 'no-such-ref'" in bad_ref.stdout.str() + bad_ref.stderr.str()

    # without a baseline report: the message is the reasons alone, as before
    (retention / "reports" / "baseline.json").unlink()
    plain = ragsnap(pytester, "-rf")
    plain.assert_outcomes(passed=2, failed=1)
    plain.stdout.fnmatch_lines([f"*_ ragsnap case {RETENTION} _*", reasons])
    assert "lost keyword" not in plain.stdout.str()


def test_a_bad_baseline_report_is_a_usage_error(pytester: pytest.Pytester, example: Path) -> None:
    (example / "reports").mkdir()
    (example / "reports" / "baseline.json").write_text("{\n", encoding="utf-8")
    broken = ragsnap(pytester)
    assert broken.ret == pytest.ExitCode.USAGE_ERROR
    broken.stderr.fnmatch_lines(
        [
            "ERROR: ragsnap (reading the baseline, --ragsnap-baseline): InputError: "
            "reports/baseline.json: is not valid JSON*"
        ]
    )
    missing = ragsnap(pytester, "--ragsnap-baseline", "reports/nowhere.json")
    assert missing.ret == pytest.ExitCode.USAGE_ERROR
    missing.stderr.fnmatch_lines(
        [
            "ERROR: ragsnap: reports/nowhere.json: no such baseline score report under the "
            "rootdir *; create it, or set ragsnap_baseline in the pytest configuration (or "
            "pass --ragsnap-baseline)"
        ]
    )

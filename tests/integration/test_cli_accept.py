"""``ragsnap accept`` driven as a user would: init, seed, then accept and check files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import run_cli

PINNED = ("--retrieved-at", "2026-12-01T00:00:00Z")
FIXTURE = "fixtures/db-pool-max-size.json"


def _tamper(root: Path) -> None:
    """Make the pool case's fixture name another source: the case then fails."""
    fixture = root / FIXTURE
    fixture.write_text(fixture.read_text().replace('"connection-pool"', '"pool-elsewhere"'))


@pytest.fixture
def accepted(tmp_path: Path) -> Path:
    """An initialised, seeded project whose fixtures and baseline were accepted."""
    assert run_cli("init", "proj", cwd=tmp_path).code == 0
    root = tmp_path / "proj"
    for step in (("seed",), ("accept", *PINNED)):
        run = run_cli(*step, cwd=root)
        assert run.code == 0, run.out + run.err
    return root


def _files(root: Path) -> dict[str, bytes]:
    paths = sorted(root.glob("fixtures/*.json")) + sorted(root.glob("reports/baseline.*"))
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in paths}


def test_first_accept_writes_fixtures_and_baseline(accepted: Path) -> None:
    files = _files(accepted)
    assert set(files) == {
        "fixtures/_manifest.json",
        "fixtures/db-pool-max-size.json",
        "fixtures/no-answer-tls-renewal.json",
        "fixtures/obs-log-retention.json",
        "reports/baseline.json",
        "reports/baseline.md",
    }
    report = json.loads(files["reports/baseline.json"])
    assert report["summary"]["passed"] == 3
    again = run_cli("accept", *PINNED, cwd=accepted)
    assert again.code == 0, again.err
    assert "0 changed, 0 new, 3 unchanged" in again.out
    assert "Baseline unchanged: reports/baseline.json is what it was" in again.out
    assert _files(accepted) == files


def test_accept_restores_a_tampered_fixture_and_rewrites_the_baseline(accepted: Path) -> None:
    good = _files(accepted)
    _tamper(accepted)
    tampered = run_cli(
        "score",
        "--json-report",
        "reports/baseline.json",
        "--markdown-report",
        "reports/baseline.md",
        cwd=accepted,
    )
    assert tampered.code == 1  # the case fails, and that is the baseline now
    assert _files(accepted)["reports/baseline.json"] != good["reports/baseline.json"]

    run = run_cli("accept", *PINNED, cwd=accepted)
    assert run.code == 0, run.err
    assert _files(accepted) == good
    lines = run.out.splitlines()
    assert lines[0].startswith("snapshot: 3 case(s) from embedded")
    assert "1 changed, 0 new, 2 unchanged" in lines[0]
    assert lines[1].startswith("  db-pool-max-size: ")
    assert "Reports: reports/baseline.json, reports/baseline.md" in lines
    verdict = next(line for line in lines if "against the previous" in line)
    assert verdict.startswith("No regressions against the previous reports/baseline.json: ")
    assert "1 improved" in verdict


@pytest.mark.parametrize(
    "source",
    [("--kb", "missing.sqlite"), ("--backend", "http", "--base-url", "http://127.0.0.1:9")],
    ids=["missing-kb", "unreachable-service"],
)
def test_accept_without_a_knowledge_base_changes_nothing(
    accepted: Path, source: tuple[str, ...]
) -> None:
    _tamper(accepted)
    before = _files(accepted)
    run = run_cli("accept", *source, cwd=accepted)
    assert run.code == 2, run.out + run.err
    assert run.err.startswith(("BackendError: missing.sqlite", "ServiceUnreachable: "))
    assert _files(accepted) == before
    assert not (accepted / "missing.sqlite").exists()


def test_accept_exits_0_with_failing_cases(accepted: Path) -> None:
    cases = accepted / "cases/golden-cases.json"
    # a valid label (an existing document, so the label check passes) that retrieval misses
    cases.write_text(cases.read_text().replace('["log-retention"]', '["connection-pool"]'))
    run = run_cli("accept", *PINNED, cwd=accepted)
    assert run.code == 0, run.err
    assert "Failed cases:\n  obs-log-retention: hit level" in run.out
    report = json.loads((accepted / "reports/baseline.json").read_text())
    failing = [c["id"] for c in report["cases"] if not c["passed"]]
    assert failing == ["obs-log-retention"]
    assert "Regressed against the previous reports/baseline.json: 1 case(s) regressed" in run.out


@pytest.mark.slow
def test_accept_refuses_a_baseline_path_that_is_not_a_report(accepted: Path) -> None:
    before = _files(accepted)
    (accepted / "notes.json").write_text('{"owner": "search team"}\n')
    run = run_cli("accept", "--baseline", "notes.json", cwd=accepted)
    assert run.code == 2
    assert run.err.startswith("UsageError: --baseline notes.json is not a ragsnap score report")
    assert (accepted / "notes.json").read_text() == '{"owner": "search team"}\n'

    run = run_cli("accept", "--baseline", "reports/baseline.md", cwd=accepted)
    assert run.code == 2
    assert "pass the JSON file" in run.err
    assert _files(accepted) == before


def test_accept_replaces_a_baseline_with_merge_conflict_markers(accepted: Path) -> None:
    good = _files(accepted)
    baseline = accepted / "reports/baseline.json"
    baseline.write_text("<<<<<<< HEAD\n{}\n=======\n{}\n>>>>>>> topic\n")
    run = run_cli("accept", *PINNED, cwd=accepted)
    assert run.code == 0, run.err
    assert "the previous reports/baseline.json is not valid JSON; replacing it" in run.out
    assert _files(accepted) == good


@pytest.mark.slow
def test_accept_keeps_the_history_that_trend_draws(accepted: Path) -> None:
    """Each accepted change adds a dated copy of the baseline to reports/history (an
    unchanged baseline adds none); `ragsnap trend` reads that folder by default and
    opens with the latest change."""
    history = accepted / "reports/history"
    (first,) = sorted(history.iterdir())
    assert first.read_bytes() == (accepted / "reports/baseline.json").read_bytes()
    assert run_cli("accept", *PINNED, cwd=accepted).code == 0  # unchanged: no entry
    assert sorted(history.iterdir()) == [first]
    one = run_cli("trend", cwd=accepted)
    assert one.code == 0, one.err
    assert one.out.splitlines()[1].startswith("1 score report (")
    cases = accepted / "cases/golden-cases.json"
    # a valid label (an existing document, so the label check passes) that retrieval misses
    cases.write_text(cases.read_text().replace('["log-retention"]', '["connection-pool"]'))
    run = run_cli("accept", *PINNED, cwd=accepted)
    assert run.code == 0, run.err
    entries = sorted(history.iterdir())
    assert len(entries) == 2 and entries[0] == first
    assert f"History: reports/history/{entries[1].name}" in run.out
    trend = run_cli("trend", "--html-report", "reports/trend.html", cwd=accepted)
    assert trend.code == 0, trend.err
    assert trend.out.splitlines()[0].startswith("trend: 2 score report(s), by the dates")
    assert ": dropped: passRate 100.0% -> 66.7% (-33.3 pp)" in trend.out.splitlines()[1]
    page = (accepted / "reports/trend.html").read_text(encoding="utf-8")
    assert '<div class="verdict bad" id="verdict">' in page

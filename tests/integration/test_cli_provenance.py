"""Stale fixtures are caught before they are scored: the issue's scenario, driven as a user.

A project from ``ragsnap init`` is seeded, snapshotted and accepted; then a seed
document (or a lookup setting) is edited and the fixtures are not re-captured.
``score --compare-to``, ``check`` and ``snapshot --check`` must fail naming the
document; re-seeding and re-snapshotting makes them pass again.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import Run, Served, run_cli

DOC = "seed-docs/log-retention.md"
FIXTURE = "fixtures/obs-log-retention.json"
PINNED = ("--retrieved-at", "2026-12-01T00:00:00Z")


@pytest.fixture(scope="module")
def accepted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("proj")
    assert run_cli("init", ".", cwd=root).code == 0
    assert run_cli("seed", cwd=root).code == 0
    run = run_cli("accept", *PINNED, cwd=root)
    assert run.code == 0, run.out + run.err
    return root


@pytest.fixture
def project(accepted: Path, tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    shutil.copytree(accepted, root)
    return root


def score(root: Path, *args: str) -> Run:
    return run_cli("score", "--compare-to", "reports/baseline.json", *args, cwd=root)


def reword(root: Path, old: str, new: str) -> None:
    path = root / DOC
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new), encoding="utf-8")


def test_fresh_fixtures_pass_every_check(project: Path) -> None:
    assert json.loads((project / "fixtures" / "_manifest.json").read_text())["fixtures"]
    for run in (score(project), run_cli("check", cwd=project)):
        assert run.code == 0, run.out + run.err
        assert "Stale" not in run.out and "note:" not in run.out + run.err
    check = run_cli("snapshot", "--check", cwd=project)
    assert check.code == 0 and "fixtures are up to date" in check.out


@pytest.mark.slow
def test_an_edited_seed_document_makes_the_fixtures_stale_until_recaptured(
    project: Path,
) -> None:
    reword(project, "in the hot tier", "in the hot storage tier")
    named = f"{DOC} changed after {FIXTURE} (citing it) was captured"
    for run in (score(project), run_cli("check", cwd=project)):
        assert run.code == 1, run.out + run.err
        assert named in run.out
        assert "run `ragsnap seed && ragsnap snapshot`" in run.out
    reports = score(project, "--report", "github=reports/pr.md", "--json-report", "r.json")
    comment = (project / "reports" / "pr.md").read_text(encoding="utf-8")
    assert "**Stale fixtures**" in comment and named in comment
    assert named in (project / "reports" / "current.md").read_text(encoding="utf-8")
    assert json.loads((project / "r.json").read_text())["provenance"]["stale"] == [named]
    assert reports.code == 1
    private = score(project, "--privacy", "--json-report", "p.json")
    assert private.code == 1
    assert json.loads((project / "p.json").read_text())["provenance"] == {
        "staleCauses": 1,
        "notes": 0,
    }
    before = run_cli("snapshot", "--check", cwd=project)  # the store is older than the file
    assert before.code == 1
    assert "the knowledge base does not hold seed-docs as it is now" in before.out
    assert DOC in before.out

    assert run_cli("seed", cwd=project).code == 0
    assert run_cli("snapshot", "--skip-eval", cwd=project).code == 0
    after = score(project)
    assert after.code == 0, after.out + after.err
    assert "Stale" not in after.out
    assert run_cli("check", cwd=project).code == 0
    assert run_cli("snapshot", "--check", cwd=project).code == 0


def test_a_changed_setting_is_named_and_the_manifest_tracks_a_partial_snapshot(
    project: Path,
) -> None:
    config = project / "ragsnap.yaml"
    config.write_text(
        config.read_text(encoding="utf-8") + "lookup:\n  contextBudgetChars: 1500\n",
        encoding="utf-8",
    )
    run = score(project)
    assert run.code == 1
    assert (
        "ragsnap.yaml: lookup.contextBudgetChars changed (2000 -> 1500) after the 3 fixtures"
        not in run.out
    )  # three fixtures are named, not counted
    assert "lookup.contextBudgetChars changed (2000 -> 1500) after fixtures/" in run.out

    one = run_cli("snapshot", "--skip-eval", "--case", "obs-log-retention", cwd=project)
    assert one.code == 0, one.out + one.err
    partial = score(project)
    assert partial.code == 1  # the other two fixtures still come from the old settings
    line = next(x for x in partial.out.splitlines() if "contextBudgetChars" in x)
    assert FIXTURE not in line
    assert "fixtures/db-pool-max-size.json" in line


def test_a_hand_edited_fixture_is_a_note_and_snapshot_check_judges_it(project: Path) -> None:
    path = project / FIXTURE
    data = json.loads(path.read_text(encoding="utf-8"))
    data["lookupResult"]["evidenceBlocks"][0]["text"] += " edited"
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    run = score(project)
    assert run.code == 0, run.out + run.err
    assert f"note: {FIXTURE} was edited after capture" in run.err
    check = run_cli("snapshot", "--check", cwd=project)
    assert check.code == 1 and "obs-log-retention:" in check.out


def test_an_invalid_fixture_is_refused_by_snapshot_check(project: Path) -> None:
    """A fixture score refuses (ranks out of array order) is never "up to date"."""
    path = project / FIXTURE
    data = json.loads(path.read_text(encoding="utf-8"))
    data["lookupResult"]["evidenceBlocks"].reverse()
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    refused = score(project)
    assert refused.code == 2 and "ranks must run 1..n" in refused.err
    check = run_cli("snapshot", "--check", cwd=project)
    assert check.code == 2, check.out + check.err
    assert "ranks must run 1..n" in check.err and FIXTURE in check.err
    assert "up to date" not in check.out


def test_a_project_without_a_manifest_gets_a_note_not_a_failure(project: Path) -> None:
    (project / "fixtures" / "_manifest.json").unlink()
    run = score(project)
    assert run.code == 0, run.out + run.err
    assert "note: fixtures/_manifest.json is missing" in run.err
    check = run_cli("snapshot", "--check", cwd=project)
    assert check.code == 1 and "_manifest.json is missing" in check.out


@pytest.mark.slow
def test_a_service_corpus_is_its_revision(
    project: Path, serve: Callable[..., Served], tmp_path: Path
) -> None:
    """Fixtures from a service record the corpus revision its health answer reports;
    offline checks say they cannot check it, `snapshot --check` against the service
    fails once the service's corpus moved."""
    served_kb = tmp_path / "served.sqlite"
    assert run_cli("seed", "--kb", str(served_kb), cwd=project).code == 0
    server = serve("--kb", str(served_kb), cwd=project)
    via = ("--backend", "http", "--base-url", server.base_url)
    run = run_cli("snapshot", *via, "--skip-eval", cwd=project)
    assert run.code == 0, run.out + run.err
    manifest = json.loads((project / "fixtures" / "_manifest.json").read_text())
    (capture,) = manifest["captures"].values()
    revision = capture["corpus"]["revision"]
    assert capture["settings"] == {"backend": "http"} and len(revision) == 64
    offline = score(project)
    assert offline.code == 0, offline.out + offline.err
    assert f"came from a service (corpus revision {revision})" in offline.err
    assert run_cli("snapshot", *via, "--check", cwd=project).code == 0

    # fixtures recorded at another revision of the service's corpus, lookups unchanged
    path = project / "fixtures" / "_manifest.json"
    path.write_text(path.read_text().replace(revision, "0" * 64), encoding="utf-8")
    check = run_cli("snapshot", *via, "--check", cwd=project)
    assert check.code == 1, check.out + check.err
    assert "0 would change, 0 new, 3 unchanged" in check.out
    assert "_manifest.json records another corpus or settings" in check.out
    assert f"the service's corpus revision changed ({'0' * 64} -> {revision})" in check.out

"""``ragsnap trial`` reports as a user reads them: which view each column read (GoodBuddy's
shipped trial ranks to a depth), the resource pass per method with a service's cgroup,
the previous run's reports kept, and what a missing aliases file asks for.

Every test runs the real command on a copy of ``cases/goodbuddy`` (15 documents, 16
cases), seeding real temporary SQLite knowledge bases.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from conftest import REPO, Run, lay_out_cgroup, run_cli
from ragsnap.trial.resources import read_cgroup


@pytest.fixture
def goodbuddy(tmp_path: Path) -> Path:
    """A copy of GoodBuddy's shipped trial: ragsnap.yaml, corpus, cases, aliases, gates."""
    root = tmp_path / "goodbuddy"
    shutil.copytree(REPO / "cases" / "goodbuddy", root)
    return root


def trial(root: Path, *args: str) -> tuple[Run, dict[str, Any]]:
    run = run_cli("trial", "--cases", "golden-cases.json", *args, cwd=root)
    path = root / "reports" / "trial.json"
    return run, json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


def _trec(path: Path) -> dict[str, list[str]]:
    ranked: dict[str, list[tuple[int, str]]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        query, _, doc, rank, *_ = line.split()
        ranked.setdefault(query, []).append((int(rank), doc))
    return {q: [d for _, d in sorted(pairs)] for q, pairs in ranked.items()}


def test_goodbuddys_shipped_trial_reports_recall_at_5_and_10_apart_where_rankings_differ(
    goodbuddy: Path,
) -> None:
    """Issue 43's done-when: with the shipped trial.depth the @5/@10 measures read the raw
    ranking, so Recall@5 and Recall@10 differ exactly for the methods whose rankings hold a
    relevant document at ranks 6 to 10; every report says which view a column read."""
    run, report = trial(goodbuddy, "--runs-dir", "runs")
    assert run.code in (0, 1), run.err  # 1: a GoodBuddy gate fails (docs/trials.md)
    assert report["plan"]["depth"] == 100  # trial.depth of cases/goodbuddy/ragsnap.yaml
    relevant: dict[str, set[str]] = {}
    for line in (goodbuddy / "runs" / "qrels.txt").read_text(encoding="utf-8").splitlines():
        query, _, doc, grade = line.split()
        if int(grade) >= 1:
            relevant.setdefault(query, set()).add(doc)
    apart = []
    for name, entry in report["methods"].items():
        ranking = _trec(goodbuddy / "runs" / f"{name}.trec")
        deeper = any(set(ranking.get(q, [])[5:10]) & docs for q, docs in relevant.items())
        metrics = entry["summary"]["metrics"]
        at5, at10 = metrics["recall@5"]["mean"], metrics["recall@10"]["mean"]
        assert (at5 != at10) == deeper, (name, at5, at10)
        if deeper:
            apart.append(name)
        views = entry["views"]
        assert {views[m] for m in ("recall@5", "recall@10", "mrr@10", "ndcg_exp@10", "map")} == {
            "ranking"
        }
        assert views["contextRecall"] == views["recallAtK"] == "evidence"
    assert apart, "no method's ranking holds a relevant document at ranks 6-10"
    header = run.out.splitlines()[1]
    assert "recall@5 [R]" in header and "contextRecall [E]" in header, run.out
    assert "Columns: [R] reads the raw ranking to depth 100" in run.out
    markdown = (goodbuddy / "reports" / "trial.md").read_text(encoding="utf-8")
    assert "| recall@10 [R]" in markdown and "[E] reads the evidence" in markdown


def test_without_a_depth_every_column_says_it_read_the_evidence(goodbuddy: Path) -> None:
    config = goodbuddy / "ragsnap.yaml"
    config.write_text(
        config.read_text(encoding="utf-8").replace("  depth: 100", "  # no depth"),
        encoding="utf-8",
    )
    run, report = trial(goodbuddy, "--methods", "lexical")
    assert run.code == 0, run.err
    assert set(report["methods"]["lexical"]["views"].values()) == {"evidence"}
    assert "recall@5 [E]" in run.out and "run with --depth N (or trial.depth)" in run.out


def test_the_resource_pass_reads_a_given_cgroup_per_method(goodbuddy: Path) -> None:
    service = lay_out_cgroup(goodbuddy / "svc.scope", 123_456, 64 << 20, 96 << 20)
    run, report = trial(
        goodbuddy, "--methods", "lexical,alias", "--cgroup", str(service), "--privacy"
    )
    assert run.code == 0, run.err
    resources = report["timing"]["resources"]
    assert list(resources) == ["alias", "lexical"]  # a JSON object's keys, sorted
    for figures in resources.values():
        assert figures["lookups"] == 16
        assert figures["cpuSeconds"] >= 0 and figures["wallSeconds"] >= 0
        assert figures["cgroup"] == {
            "scope": "given",
            "cpuUsageUsec": 0,  # nothing ran in the laid-out cgroup
            "memoryCurrentBytes": 64 << 20,
            "memoryCurrentDeltaBytes": 0,
            "memoryPeakBytes": 96 << 20,
        }
    assert str(service) not in json.dumps(report)  # no path in the report
    markdown = (goodbuddy / "reports" / "trial.md").read_text(encoding="utf-8")
    assert "### Resource pass (each method alone, warm, nothing seeded)" in markdown
    assert re.search(r"^\| lexical +\| 16 +\|.*\| 64\.0 +\| 96\.0 +\|$", markdown, re.M)


@pytest.mark.parametrize("layout", ["missing", "not-v2"])
def test_a_cgroup_that_is_not_one_is_refused_before_anything_runs(
    goodbuddy: Path, layout: str
) -> None:
    path = goodbuddy / "nope"
    if layout == "not-v2":
        path.mkdir()
        (path / "cpuacct.usage").write_text("1\n", encoding="ascii")
    run, _ = trial(goodbuddy, "--methods", "lexical", "--cgroup", str(path))
    assert run.code == 2 and "Traceback" not in run.err, run.err
    assert str(path) in run.err and "not a cgroup" in run.err and "--cgroup" in run.err
    assert not (goodbuddy / "reports" / "trial.json").exists()


REAL = next(
    (p for p in (Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/unified")) if read_cgroup(p)),
    None,
)


@pytest.mark.skipif(REAL is None, reason="this machine mounts no cgroup v2 hierarchy")
def test_the_resource_pass_reads_a_real_cgroup(goodbuddy: Path) -> None:
    run, report = trial(goodbuddy, "--methods", "lexical", "--cgroup", str(REAL))
    assert run.code == 0, run.err
    cgroup = report["timing"]["resources"]["lexical"]["cgroup"]
    assert cgroup["scope"] == "given" and cgroup["cpuUsageUsec"] >= 0


def test_each_run_keeps_the_previous_runs_reports(goodbuddy: Path) -> None:
    first, _ = trial(goodbuddy, "--methods", "lexical")
    assert first.code == 0 and "Previous report" not in first.out, first.out
    kept_json = (goodbuddy / "reports" / "trial.json").read_bytes()
    kept_md = (goodbuddy / "reports" / "trial.md").read_bytes()
    plan = json.loads(kept_json)["planSha256"][:16]
    second, _ = trial(goodbuddy, "--methods", "lexical,vector")
    assert second.code == 0, second.err
    found = re.search(
        r"^Previous report: (reports/trial-history/(\S+)-trial\.json) ", second.out, re.M
    )
    assert found is not None, second.out
    assert found.group(2).endswith(f"Z-{plan}")
    history = goodbuddy / "reports" / "trial-history"
    assert (goodbuddy / found.group(1)).read_bytes() == kept_json
    assert (history / f"{found.group(2)}-trial.md").read_bytes() == kept_md
    # --keep 1: only the newest previous run stays; --keep 0 overwrites
    third, _ = trial(goodbuddy, "--methods", "vector", "--keep", "1")
    assert third.code == 0, third.err
    names = sorted(p.name for p in history.iterdir())
    assert len(names) == 2 and all(n.endswith(("-trial.json", "-trial.md")) for n in names)
    assert found.group(2) not in names[0]
    fourth, _ = trial(goodbuddy, "--methods", "lexical", "--keep", "0")
    assert fourth.code == 0 and "Previous report" not in fourth.out
    assert sorted(p.name for p in history.iterdir()) == names


def test_the_alias_method_without_an_aliases_file_names_where_to_give_one(
    goodbuddy: Path,
) -> None:
    (goodbuddy / "bare.yaml").write_text("kb: {seedDocs: corpus.jsonl}\n", encoding="utf-8")
    run, _ = trial(goodbuddy, "--config", "bare.yaml", "--methods", "lexical,alias")
    assert run.code == 2 and "Traceback" not in run.err, run.err
    assert "--aliases FILE" in run.err and "trial.aliases" in run.err, run.err

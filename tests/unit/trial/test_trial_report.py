"""The trial report's tables say which view each column read, and show the resource pass."""

from __future__ import annotations

import re
from typing import Any

from test_trial_privacy import trial_report

from ragsnap.io.schema import validate
from ragsnap.trial.measure import TRIAL_MEASURES, measure_views
from ragsnap.trial.privacy import private_trial
from ragsnap.trial.report import method_table, render_trial_markdown, views_legend


def _with_views(depth: int | None) -> dict[str, Any]:
    report = trial_report()
    report["plan"]["depth"] = depth
    views = measure_views(TRIAL_MEASURES, ranked=depth is not None)
    report["methods"]["lexical"]["views"] = views
    return report


def test_a_ranked_trial_marks_its_graded_columns_ranking_and_the_rest_evidence() -> None:
    report = _with_views(100)
    validate(report, "trial-report", "t.json", "trial report")
    validate(private_trial(report), "private-trial-report", "t.json", "trial report")
    header = method_table(report, fmt="simple").splitlines()[0]
    for measure in ("recall@5", "recall@10", "mrr@10", "ndcg@10", "map"):
        assert re.search(rf"\b{re.escape(measure)} \[R\]", header), header
    for column in ("pass", "hit@K", "contextPrecision", "contextRecall", "no-answer FP"):
        assert f"{column} [E]" in header, header
    assert views_legend(report).startswith("Columns: [R] reads the raw ranking to depth 100")
    markdown = render_trial_markdown(report)
    assert "| recall@5 [R]" in markdown and "contextRecall [E]" in markdown
    assert views_legend(report) in markdown


def test_an_evidence_trial_marks_every_column_evidence_and_says_how_to_rank() -> None:
    report = _with_views(None)
    header = method_table(report).splitlines()[0]
    assert "recall@5 [E]" in header and "[R]" not in header
    legend = views_legend(report)
    assert "[R]" not in legend and "--depth N (or trial.depth)" in legend


def test_the_resource_pass_is_a_table_of_its_own() -> None:
    report = _with_views(None)
    report["timing"]["resources"] = {
        "lexical": {
            "lookups": 16,
            "wallSeconds": 0.5,
            "cpuSeconds": 0.25,
            "rssDeltaMiB": 0.0,
            "peakRssDeltaMiB": 1.5,
            "cgroup": {
                "scope": "given",
                "cpuUsageUsec": 2500,
                "memoryCurrentBytes": 3 * 1048576,
                "memoryCurrentDeltaBytes": 0,
                "memoryPeakBytes": 5 * 1048576,
            },
        }
    }
    validate(report, "trial-report", "t.json", "trial report")
    validate(private_trial(report), "private-trial-report", "t.json", "trial report")
    markdown = render_trial_markdown(report)
    assert "### Resource pass (each method alone, warm, nothing seeded)" in markdown
    row = next(
        line
        for line in markdown.splitlines()
        if line.startswith("| lexical ") and "16" in line and "2.5" in line
    )
    assert re.search(r"\| 0\.500 +\| 0\.250 +\| 0\.0 +\| 1\.5 +\| 2\.5 +\| 3\.0 +\| 5\.0 ", row), (
        row
    )
    assert "the cgroup given with --cgroup" in markdown

"""The trial report's HTML page (ragsnap.trial.html)."""

from __future__ import annotations

import copy

from test_trial_privacy import trial_report

from ragsnap.trial.html import render_trial_html
from ragsnap.trial.measure import TRIAL_MEASURES, measure_views
from ragsnap.trial.privacy import private_trial


def test_trial_page_has_method_bars_latency_and_case_rows() -> None:
    report = trial_report()
    report["caseResults"] = [
        {
            "id": "c1",
            "split": "dev",
            "language": "en",
            "category": "db",
            "noAnswer": False,
            "methods": {
                "lexical": {
                    "hitLevel": "strong",
                    "passed": True,
                    "knownFailure": False,
                    "firstExpectedRank": 1,
                    "evidenceCount": 2,
                    "metrics": {"ndcg@10": 1.0},
                    "failures": [],
                }
            },
        }
    ]
    page = render_trial_html(report)
    assert page == render_trial_html(copy.deepcopy(report))
    assert 'data-chart="measures"' in page and 'data-chart="latency"' in page
    assert "determinism: 2 passes identical" in page
    assert '"c1"' in page and "first expected rank 1" in page


def test_private_trial_page_names_no_model() -> None:
    page = render_trial_html(private_trial(trial_report()))
    for secret in ("secret-model-v9", "secret-analyzer", "secret corpus"):
        assert secret not in page


def test_trial_page_marks_each_measure_with_the_view_it_read() -> None:
    report = trial_report()
    report["plan"]["depth"] = 100
    report["methods"]["lexical"]["views"] = measure_views(TRIAL_MEASURES, ranked=True)
    page = render_trial_html(report)
    assert "recall@5 [R]" in page and "map [R]" in page  # the chart's labels
    note = page.split('id="measure-views">')[1].split("</p>")[0]
    ranked, floored = note.split("; [E] ")
    assert ranked.startswith("Columns: [R] the raw ranking to depth 100")
    assert "recall@10" in ranked and "contextRecall" not in ranked
    assert "contextRecall" in floored and "recallAtK" in floored and "recall@10" not in floored


def test_trial_page_shows_the_resource_pass_per_method() -> None:
    report = trial_report()
    assert "Resource pass" not in render_trial_html(report)
    report["timing"]["resources"] = {
        "lexical": {
            "lookups": 16,
            "wallSeconds": 0.5,
            "cpuSeconds": 0.25,
            "rssDeltaMiB": 0.0,
            "peakRssDeltaMiB": 1.5,
            "cgroup": None,
        }
    }
    page = render_trial_html(report)
    table = page.split("<h3>Resource pass (each method alone, warm, nothing seeded)</h3>")[1]
    assert table.startswith("\n<table><thead><tr><th>method</th><th>lookups</th>")
    assert '<td>lexical</td><td class="num">16</td><td class="num">0.5</td>' in table

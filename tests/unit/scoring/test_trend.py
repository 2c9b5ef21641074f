"""Score reports over time (ragsnap.scoring.trend)."""

from __future__ import annotations

from typing import Any

import pytest

from ragsnap.scoring.trend import build_trend, name_date, render_trend_markdown


@pytest.mark.parametrize(
    ("name", "date"),
    [
        ("current-2026-11-30.json", "2026-11-30"),
        ("2026-11-30T08:15:02-report.json", "2026-11-30 08:15:02"),
        ("r_2026-11-30_0815.json", "2026-11-30 08:15"),
        ("current.json", None),
        ("build-12026-11-30.json", None),
    ],
)
def test_name_date(name: str, date: str | None) -> None:
    assert name_date(name) == date


def _report(rate: float, sha: str = "a", metrics: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "inputs": {"casesSha256": sha},
        "summary": {
            "cases": 2,
            "passRate": rate,
            "recallAtK": rate,
            "strongHitRate": rate,
            "noAnswerFalsePositiveRate": None,
            "missCount": 1,
            "metrics": metrics or {},
        },
    }


def test_undated_names_keep_their_order_and_missing_means_are_none() -> None:
    trend = build_trend(
        [
            ("b.json", _report(0.5)),
            ("a.json", _report(0.75, "b", {"ndcg@10": {"mean": 0.4, "cases": 2}})),
        ]
    )
    assert trend.labels == ("b.json", "a.json") and not trend.dated
    assert trend.cases_changed == (False, True)
    assert dict(trend.series)["ndcg@10"] == (None, 0.4)
    markdown = render_trend_markdown(trend)
    rows = {line.split("|")[1].strip(): line for line in markdown.splitlines() if "|" in line}
    assert "a.json (cases changed)" in rows
    assert rows["passRate"].split("|")[2].strip() == "+25.0 pp"

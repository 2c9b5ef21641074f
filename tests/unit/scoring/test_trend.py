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


def test_history_names_sort_by_time_and_read_back_as_dates() -> None:
    from datetime import datetime, timedelta, timezone

    from ragsnap.scoring.trend import history_name

    at = datetime(2026, 12, 4, 23, 15, 33, 42_000, tzinfo=timezone(timedelta(hours=1)))
    name = history_name(_report(0.5), at)
    assert name.startswith("2026-12-04T221533.042Z-") and name.endswith(".json")
    assert name_date(name) == "2026-12-04 22:15:33"  # UTC
    assert history_name(_report(0.5), at) == name  # the same report, the same name
    assert history_name(_report(0.6), at) != name  # another report, another name
    later = history_name(_report(0.4), at + timedelta(milliseconds=1))
    assert sorted([later, name]) == [name, later]


def _dated(*rates: float) -> list[tuple[str, dict[str, Any]]]:
    return [(f"2026-12-0{i + 1}.json", _report(rate)) for i, rate in enumerate(rates)]


def test_the_latest_change_is_the_last_report_against_the_one_before() -> None:
    from ragsnap.scoring.trend import latest_change

    # better first to last, worse in the latest step: red
    latest = latest_change(build_trend(_dated(0.5, 0.9, 0.8)))
    assert [name for name, _, _ in latest.dropped] == ["passRate", "recallAtK", "strongHitRate"]
    assert latest.text().startswith(
        "Latest change, 2026-12-02 -> 2026-12-03: dropped: passRate 90.0% -> 80.0% (-10.0 pp)"
    )
    # worse first to last, better in the latest step: green
    latest = latest_change(build_trend(_dated(0.9, 0.5, 0.6)))
    assert latest.dropped == () and len(latest.improved) == 3
    assert latest.unchanged == ("missCount",)  # the rate that is None in both is left out
    assert latest.text().startswith("Latest change, 2026-12-02 -> 2026-12-03: nothing dropped;")
    # a higher miss count is a drop
    worse = _report(0.6)
    worse["summary"]["missCount"] = 2
    latest = latest_change(
        build_trend([("2026-12-01.json", _report(0.6)), ("2026-12-02.json", worse)])
    )
    assert [name for name, _, _ in latest.dropped] == ["missCount"]
    assert latest_change(build_trend(_dated(0.5))).text() == (
        "1 score report (2026-12-01): no change yet; trend needs two"
    )


def test_markdown_and_html_banners_follow_the_latest_change_of_the_shown_metrics() -> None:
    from ragsnap.scoring.trend import render_trend_html, select

    trend = build_trend(_dated(0.5, 0.9, 0.8))
    markdown = render_trend_markdown(trend)
    assert markdown.splitlines()[2].startswith(
        "**Latest change, 2026-12-02 -> 2026-12-03: dropped:"
    )
    page = render_trend_html(trend)
    assert '<div class="verdict bad" id="verdict">Latest change' in page
    assert page.count("<figure") == 5 and 'data-chart="trend-passRate"' in page
    # only the miss count shown: it did not move, so nothing shown dropped
    misses = select(trend, ["missCount"])
    assert '<div class="verdict good" id="verdict">' in render_trend_html(misses)
    assert render_trend_html(misses).count("<figure") == 1
    assert "nothing dropped, nothing moved" in render_trend_markdown(misses)
    with pytest.raises(ValueError, match=r"no metric ndcg@10 in these reports; use some of: pass"):
        select(trend, ["ndcg@10"])

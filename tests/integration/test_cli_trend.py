"""``ragsnap trend``: score reports over time, through the CLI."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from browser import Chromium, chromium_path
from conftest import REPO, run_cli


def _history(root: Path) -> Path:
    """Three dated score reports written out of order, and a diff report beside them."""
    history = root / "history"
    history.mkdir()
    baseline = json.loads((REPO / "reports/baseline.json").read_text(encoding="utf-8"))
    for name, rate in (
        ("current-2026-11-15.json", 0.5),
        ("current-2026-09-01.json", 0.7),
        ("current-2026-10-01T0930.json", 0.6),
    ):
        report = json.loads(json.dumps(baseline))
        report["summary"]["passRate"] = rate
        (history / name).write_text(json.dumps(report), encoding="utf-8")
    (history / "baseline-diff.json").write_text('{"kind": "ragsnap-diff-report"}')
    return history


def test_trend_of_a_folder_orders_by_the_dates_in_the_names(tmp_path: Path) -> None:
    shutil.copy(REPO / "ragsnap.yaml", tmp_path / "ragsnap.yaml")
    _history(tmp_path)
    run = run_cli("trend", "history", "--html-report", "reports/trend.html", cwd=tmp_path)
    assert run.code == 0, run.err
    assert run.out.splitlines()[0] == (
        "trend: 3 score report(s), by the dates in their names; 1 other JSON file(s) "
        "skipped: 2026-09-01 to 2026-11-15"
    )
    assert run.out.splitlines()[1].startswith(  # the latest step drops: said first
        "Latest change, 2026-10-01 09:30 -> 2026-11-15: dropped: passRate 60.0% -> 50.0% (-10.0 pp)"
    )
    assert "  passRate: 70.0% -> 50.0% (-20.0 pp)" in run.out
    markdown = (tmp_path / "reports/trend.md").read_text(encoding="utf-8")
    rows = [line for line in markdown.splitlines() if line.startswith("| 2026-")]
    assert [row.split("|")[1].strip() for row in rows] == [
        "2026-09-01",
        "2026-10-01 09:30",
        "2026-11-15",
    ]
    assert [row.split("|")[3].strip() for row in rows] == ["70.0%", "60.0%", "50.0%"]
    assert markdown.splitlines()[2].startswith("**Latest change, 2026-10-01 09:30 -> 2026-11-15")
    page = (tmp_path / "reports/trend.html").read_text(encoding="utf-8")
    assert '<div class="verdict bad" id="verdict">Latest change' in page
    assert "dropped: passRate 60.0% -&gt; 50.0%" in page and "2026-10-01 09:30" in page
    series = len(json.loads((REPO / "reports/baseline.json").read_text())["summary"]["metrics"])
    # one small chart per metric (rates, graded means, misses), one line each
    assert page.count("<figure") == page.count('class="line"') == 4 + series + 1
    assert 'data-chart="trend-passRate"' in page and 'data-chart="trend-missCount"' in page
    executable = chromium_path()
    if executable is not None:  # drawn in a real browser, without a console error
        with Chromium(executable) as browser:
            browser.load(tmp_path / "reports/trend.html")
            drawn = browser.evaluate(
                "[...document.querySelectorAll('path.line')]"
                ".filter((p) => p.getBBox().width > 0).length"
            )
            assert browser.errors() == [], browser.errors()
        assert drawn == 4 + series + 1


def test_trend_keeps_the_order_given_without_dates_and_refuses_other_files(
    tmp_path: Path,
) -> None:
    history = _history(tmp_path)
    shutil.copy(history / "current-2026-09-01.json", tmp_path / "b.json")
    shutil.copy(history / "current-2026-11-15.json", tmp_path / "a.json")
    run = run_cli("trend", "b.json", "a.json", "--markdown-report", "t.md", cwd=tmp_path)
    assert run.code == 0, run.err
    assert "in the order given" in run.out and "passRate: 70.0% -> 50.0%" in run.out
    run = run_cli("trend", "history/baseline-diff.json", cwd=tmp_path)
    assert run.code == 2 and "is not a ragsnap score report" in run.err
    (tmp_path / "empty").mkdir()
    run = run_cli("trend", "empty", cwd=tmp_path)
    assert run.code == 2 and "no score report in empty" in run.err


def test_trend_reads_the_history_folder_and_shows_the_chosen_metrics(tmp_path: Path) -> None:
    """No report named: the `history` folder of ragsnap.yaml; --metrics picks the charts
    and the banner; a latest step that only improves is green."""
    (tmp_path / "ragsnap.yaml").write_text("history: kept\n", encoding="utf-8")
    run = run_cli("trend", cwd=tmp_path)
    assert run.code == 2
    assert run.err.startswith("UsageError: no score report in kept; `ragsnap accept` writes")
    history = _history(tmp_path)
    history.rename(tmp_path / "kept")
    report = json.loads((tmp_path / "kept/current-2026-11-15.json").read_text(encoding="utf-8"))
    report["summary"]["passRate"] = 0.65  # 60 % -> 65 %: the latest step improves
    report["summary"]["recallAtK"] -= 0.1  # ...and Recall@K drops
    (tmp_path / "kept/current-2026-11-15.json").write_text(json.dumps(report), encoding="utf-8")
    run = run_cli(
        "trend", "--metrics", "passRate,missCount", "--html-report", "t.html", cwd=tmp_path
    )
    assert run.code == 0, run.err
    assert run.out.splitlines()[0].startswith("trend: 3 score report(s), by the dates")
    assert run.out.splitlines()[1] == (
        "Latest change, 2026-10-01 09:30 -> 2026-11-15: nothing dropped; improved: passRate "
        "60.0% -> 65.0% (+5.0 pp)"
    )
    page = (tmp_path / "t.html").read_text(encoding="utf-8")
    assert '<div class="verdict good" id="verdict">' in page
    assert page.count("<figure") == 2 and 'data-chart="trend-recallAtK"' not in page
    markdown = (tmp_path / "reports/trend.md").read_text(encoding="utf-8")
    assert "| report" in markdown and "recallAtK" not in markdown
    run = run_cli("trend", "--metrics", "passRate,recallAtK", cwd=tmp_path)
    assert run.code == 0 and "dropped: recallAtK" in run.out.splitlines()[1]
    run = run_cli("trend", "--metrics", "pasRate", cwd=tmp_path)
    assert run.code == 2 and "--metrics pasRate: no metric pasRate" in run.err

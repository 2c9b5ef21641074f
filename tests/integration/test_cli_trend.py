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
    assert "  passRate: 70.0% -> 50.0% (-20.0 pp)" in run.out
    markdown = (tmp_path / "reports/trend.md").read_text(encoding="utf-8")
    rows = [line for line in markdown.splitlines() if line.startswith("| 2026-")]
    assert [row.split("|")[1].strip() for row in rows] == [
        "2026-09-01",
        "2026-10-01 09:30",
        "2026-11-15",
    ]
    assert [row.split("|")[3].strip() for row in rows] == ["70.0%", "60.0%", "50.0%"]
    page = (tmp_path / "reports/trend.html").read_text(encoding="utf-8")
    assert 'data-chart="trend"' in page and "2026-10-01 09:30" in page
    series = len(json.loads((REPO / "reports/baseline.json").read_text())["summary"]["metrics"])
    assert page.count('class="line"') == 4 + series + 1  # rates, graded means, misses
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

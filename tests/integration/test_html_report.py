"""The HTML report through the CLI, opened in a real headless Chromium.

The example project with one fixture degraded (so there is a regression) and one
query holding markup, scored with ``--compare-to`` and ``--html-report``: the page
loads without a console error, every chart drew the elements the report implies,
the injected markup stays text, the case table filters and unfolds, and a
screenshot is taken (Playwright driving the system Chromium, ``tests/browser.py``).
Skipped without chromium or Playwright, failed under ``CI=true``.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from browser import Chromium, chromium_or_skip, chromium_path
from conftest import REPO, Served, run_cli

Serve = Callable[..., Served]

DEGRADED = "db-err-4031-order-repository"
INJECTED = "k8s-rolling-update-maxsurge"
MARKUP = '<img src=x onerror="window.pwned=1"><script>window.pwned=2</script>'

COUNTS = """(() => {
  const drawn = (selector) => [...document.querySelectorAll(selector)].filter((node) => {
    const box = node.getBBox();
    return box.width > 0 && box.height > 0;
  }).length;
  return {
    charts: document.querySelectorAll("svg.chart").length,
    category: drawn('svg[data-chart="hit-levels-category"] rect.bar'),
    language: drawn('svg[data-chart="hit-levels-language"] rect.bar'),
    metrics: drawn('svg[data-chart="metrics"] rect.bar'),
    moves: drawn('svg[data-chart="rank-movement"] path.move'),
    rows: document.querySelectorAll("#case-rows details").length,
    ready: document.body.getAttribute("data-ready"),
    pwned: window.pwned === undefined ? null : window.pwned,
    images: document.querySelectorAll("#case-rows img, #case-rows script").length,
  };
})()"""


def _example(tmp_path: Path) -> Path:
    for name in ("cases", "fixtures", "reports"):
        shutil.copytree(REPO / name, tmp_path / name)
    fixture = tmp_path / "fixtures" / f"{DEGRADED}.json"
    fixture.write_text(
        fixture.read_text().replace('"mysql-connection-pool"', '"unrelated-doc"'),
        encoding="utf-8",
    )
    cases_path = tmp_path / "cases/golden-cases.json"
    cases = json.loads(cases_path.read_text(encoding="utf-8"))
    case = next(c for c in cases["cases"] if c["id"] == INJECTED)
    old = case["query"]
    case["query"] = old + " " + MARKUP
    cases_path.write_text(json.dumps(cases, ensure_ascii=False, indent=2), encoding="utf-8")
    baseline = json.loads((tmp_path / "reports/baseline.json").read_text(encoding="utf-8"))
    next(c for c in baseline["cases"] if c["id"] == INJECTED)["query"] = case["query"]
    (tmp_path / "reports/baseline.json").write_text(json.dumps(baseline), encoding="utf-8")
    fixture = tmp_path / "fixtures" / f"{INJECTED}.json"
    data = json.loads(fixture.read_text(encoding="utf-8"))
    data["query"] = case["query"]
    fixture.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return tmp_path


def _segments(groups: dict[str, Any]) -> int:
    count = 0
    for agg in groups.values():
        levels = list(agg["hitLevels"].values())
        count += sum(1 for n in levels if n > 0) + (agg["cases"] > sum(levels))
    return count


@pytest.mark.slow  # a real browser
def test_the_html_report_draws_in_chromium(tmp_path: Path) -> None:
    executable = chromium_or_skip()
    root = _example(tmp_path)
    run = run_cli(
        "score",
        "--compare-to",
        "reports/baseline.json",
        "--html-report",
        "reports/r.html",
        cwd=root,
    )
    assert run.code == 1, run.out + run.err
    assert "reports/r.html" in run.out.splitlines()[-1]
    page = root / "reports/r.html"
    text = page.read_text(encoding="utf-8")
    assert MARKUP not in text and "<img" not in text
    report = json.loads((root / "reports/current.json").read_text(encoding="utf-8"))
    diff = json.loads((root / "reports/baseline-diff.json").read_text(encoding="utf-8"))

    with Chromium(executable) as browser:
        browser.load(page)
        counts = browser.evaluate(COUNTS)
        shot = browser.screenshot(tmp_path / "report.png")
        assert browser.errors() == [], browser.errors()
        assert counts["ready"] == "1"
        assert counts["pwned"] is None and counts["images"] == 0
        assert counts["charts"] == 4
        assert counts["category"] == _segments(report["groups"]["category"])
        assert counts["language"] == _segments(report["groups"]["language"])
        overall = [r for r in diff["aggregates"] if r["scope"] == "all"]
        assert counts["metrics"] == 2 * sum(1 for r in overall if r["metric"] != "missCount")
        assert counts["moves"] == 1
        assert counts["rows"] == len(report["cases"])
        # the injected markup is shown as text in its row
        shown = browser.evaluate(
            "[...document.querySelectorAll('#case-rows summary')]"
            ".map((s) => s.textContent).filter((t) => t.includes('onerror')).length"
        )
        assert shown == 1

        # filter by text, then by status; unfold a row to its evidence
        browser.evaluate(
            "(() => { const f = document.getElementById('case-filter');"
            f" f.value = '{DEGRADED}'; f.dispatchEvent(new Event('input')); }})()"
        )
        assert browser.evaluate("document.querySelectorAll('#case-rows details').length") == 1
        evidence = browser.evaluate(
            "(() => { const d = document.querySelector('#case-rows details');"
            " if (d.open) { return 'open by default'; }"
            " d.open = true; return new Promise((done) => setTimeout("
            "() => done(d.querySelector('dl').textContent), 50)); })()"
        )
        assert (
            "unrelated-doc" in evidence and "firstExpectedRank: 1 → none (regression)" in evidence
        )
        assert "mysql-connection-pool" in evidence  # the baseline's top sources
        browser.evaluate(
            "(() => { const f = document.getElementById('case-filter'); f.value = '';"
            " f.dispatchEvent(new Event('input'));"
            " const s = document.getElementById('case-status'); s.value = 'regression';"
            " s.dispatchEvent(new Event('change')); })()"
        )
        assert browser.evaluate("document.querySelectorAll('#case-rows details').length") == 1
        assert browser.errors() == [], browser.errors()
    assert shot.startswith(b"\x89PNG") and len(shot) > 20_000


SIDE_BY_SIDE = """(() => {
  const view = document.querySelector("section.why");
  const link = [...document.querySelectorAll("#case-rows a")].map((a) => a.getAttribute("href"));
  const words = (selector) => [...view.querySelectorAll(selector)].map((n) => n.textContent);
  return {
    case: view.querySelector("h3").textContent,
    removed: words(".side .baseline del.removed"),
    added: words(".side .current ins.added"),
    currentRemoved: words(".side .current del"),
    baselineAdded: words(".side .baseline ins"),
    marked: words("tr.attributed .lost-here"),
    stage: view.querySelector("tr.attributed th").firstChild.textContent.trim(),
    link: link,
    target: view.id,
  };
})()"""


@pytest.mark.slow  # a real browser and a project seeded twice
def test_a_lost_keyword_is_shown_side_by_side_in_chromium(tmp_path: Path) -> None:
    """The issue's scenario: the log-retention document no longer says "14 days"; the
    page shows the chunk's text before and after, the words marked, the stage named."""
    executable = chromium_or_skip()
    assert run_cli("init", "proj", cwd=tmp_path).code == 0
    root = tmp_path / "proj"
    for step in (("seed",), ("snapshot",), ("accept",)):
        run = run_cli(*step, cwd=root)
        assert run.code == 0, run.out + run.err
    shutil.copytree(root / "fixtures", tmp_path / "base-fixtures")
    doc = root / "seed-docs/log-retention.md"
    doc.write_text(
        doc.read_text(encoding="utf-8").replace("kept for 14 days", "kept for two weeks"), "utf-8"
    )
    for step in (("seed",), ("snapshot", "--skip-eval")):
        run = run_cli(*step, cwd=root)
        assert run.code == 0, run.out + run.err
    run = run_cli(
        "score",
        "--compare-to",
        "reports/baseline.json",
        "--baseline-fixtures",
        str(tmp_path / "base-fixtures"),
        "--html-report",
        "reports/r.html",
        cwd=root,
    )
    assert run.code == 1, run.out + run.err
    with Chromium(executable) as browser:
        browser.load(root / "reports/r.html")
        browser.evaluate(
            "(() => { const f = document.getElementById('case-filter');"
            " f.value = 'obs-log-retention'; f.dispatchEvent(new Event('input'));"
            " document.querySelector('#case-rows details').open = true; })()"
        )
        shown = browser.evaluate(SIDE_BY_SIDE)
        assert browser.errors() == [], browser.errors()
    assert shown["case"] == "obs-log-retention (regression)"
    assert shown["removed"] == ["14 days"] and shown["added"] == ["two weeks"]
    assert shown["currentRemoved"] == [] and shown["baselineAdded"] == []
    assert shown["marked"] == ["lost here"] and shown["stage"] == "corpus"
    assert shown["link"] == [f"#{shown['target']}"]  # the case's row links to its view


def test_a_script_the_policy_does_not_allow_is_blocked_and_reported(tmp_path: Path) -> None:
    executable = chromium_or_skip()
    root = _example(tmp_path)
    run = run_cli("score", "--html-report", "reports/r.html", cwd=root)
    assert run.code == 1, run.out + run.err
    page = root / "reports/r.html"
    text = page.read_text(encoding="utf-8")
    # one character more in the page's script: its hash no longer matches the policy
    tampered = root / "reports/tampered.html"
    tampered.write_text(text.replace("(function () {", "(function () { ", 1), encoding="utf-8")
    with Chromium(executable) as browser:
        browser.load(page)
        assert browser.errors() == []
        assert browser.evaluate("document.body.getAttribute('data-ready')") == "1"
        browser.load(tampered)
        assert browser.evaluate("document.body.getAttribute('data-ready')") is None
        assert any("Content Security Policy" in e for e in browser.errors()), browser.errors()


def test_score_without_a_page_imports_no_template_engine(tmp_path: Path) -> None:
    # ``ragsnap score`` writing JSON and Markdown only stays light: Jinja2 is imported
    # when a page is rendered, and only then
    root = _example(tmp_path)
    code = (
        "import sys\n"
        "from ragsnap.cli import main\n"
        "try: main(sys.argv[1:])\n"
        "except SystemExit: pass\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in {'jinja2', 'markupsafe'}))\n"
    )
    env = {"PYTHONPATH": str(REPO / "eval"), "PATH": "/usr/bin:/bin"}
    for argv, loaded in ((["score"], "[]"), (["score", "--html-report", "r.html"], "'jinja2'")):
        out = subprocess.run(
            [sys.executable, "-c", code, *argv],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
            env=env,
        ).stdout
        assert loaded in out.splitlines()[-1], out


def test_the_privacy_report_shows_no_text(tmp_path: Path) -> None:
    root = _example(tmp_path)
    run = run_cli(
        "score",
        "--privacy",
        "--compare-to",
        "reports/baseline.json",
        "--report",
        "html=reports/private.html",
        cwd=root,
    )
    assert run.code == 1, run.out + run.err
    text = (root / "reports/private.html").read_text(encoding="utf-8")
    cases = json.loads((root / "cases/golden-cases.json").read_text(encoding="utf-8"))["cases"]
    for case in cases:
        assert case["id"] in text
        assert case["query"] not in text
        assert json.dumps(case["query"], ensure_ascii=False)[1:-1] not in text
    assert "mysql-connection-pool" not in text  # no source name
    assert "golden-cases.json" not in text  # no path


def test_the_same_inputs_give_the_same_bytes(tmp_path: Path) -> None:
    root = _example(tmp_path)
    for name in ("a", "b"):
        run = run_cli("score", "--html-report", f"reports/{name}.html", cwd=root)
        assert run.code == 1, run.err
    first = (root / "reports/a.html").read_bytes()
    assert first == (root / "reports/b.html").read_bytes()


@pytest.mark.slow  # a real browser
def test_live_check_writes_its_page(tmp_path: Path, serve: Serve) -> None:
    run = run_cli("seed", "--kb", "kb.sqlite", "--seed-docs", str(REPO / "seed-docs"), cwd=tmp_path)
    assert run.code == 0, run.out + run.err
    server = serve("--kb", "kb.sqlite", cwd=tmp_path)
    cases = str(REPO / "cases/golden-cases.json")
    args = ("--base-url", server.base_url, "--cases", cases, "--allow-outside")
    run = run_cli("live-check", *args, "--html-report", "reports/live.html", cwd=tmp_path)
    assert run.code in (0, 1), run.out + run.err
    assert run.out.splitlines()[-1].endswith(", reports/live-post-reindex.md and reports/live.html")
    text = (tmp_path / "reports/live.html").read_text(encoding="utf-8")
    report = json.loads((tmp_path / "reports/live-post-reindex.json").read_text(encoding="utf-8"))
    assert all(f'"{case["caseId"]}"' in text for case in report["cases"])
    executable = chromium_path()
    if executable is None:
        return
    with Chromium(executable) as browser:
        browser.load(tmp_path / "reports/live.html")
        rows = browser.evaluate("document.querySelectorAll('#case-rows details').length")
        bars = browser.evaluate("document.querySelectorAll('rect.bar').length")
        assert browser.errors() == [], browser.errors()
    assert rows == len(report["cases"])
    s = report["summary"]
    parts = [s["passed"], s["failed"] - s["knownFailures"], s["knownFailures"], s["skipped"]]
    assert bars == sum(1 for n in parts if n > 0)


def test_a_trial_diff_writes_the_trial_page(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location(
        "trial_privacy", REPO / "tests/unit/trial/test_trial_privacy.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    (tmp_path / "t.json").write_text(json.dumps(module.trial_report()), encoding="utf-8")
    run = run_cli("diff", "t.json", "t.json", "--html-report", "t.html", cwd=tmp_path)
    assert run.code == 0, run.out + run.err
    text = (tmp_path / "t.html").read_text(encoding="utf-8")
    assert "no regressions against t.json" in text and 'data-chart="latency"' in text
    assert "Against the baseline trial (0 row(s) moved)" in text

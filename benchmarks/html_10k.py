#!/usr/bin/env python3
"""Benchmark the HTML report of a 10,000-case ``ragsnap score --compare-to``.

Targets: the page stays under ``SIZE_LIMIT`` bytes, and it opens without
freezing: in headless Chromium the load event fires, and the first page of
the case table is drawn, within ``LOAD_LIMIT`` seconds, and a filter over every
case answers within ``FILTER_LIMIT`` seconds.

Steps:

1. Generate score_10k's eval set (the same generator, seed and perturbation,
   so about 2% of the cases regress or improve), write its baseline, then
   score it with the diff (``ragsnap score --compare-to``, in-process).
2. Render the HTML page from the current report and the diff
   (``render_score_html``) ``--repeat`` times; print the median render time
   and the page's size (also gzipped, as a CI artifact would travel).
3. When chromium is installed: open the page in headless Chromium
   (``tests/browser.py``: Playwright, the machine's flags) ``--repeat``
   times, each in a fresh browser, and time the load event, the first rows of
   the case table, a text filter over all rows, a status filter, and the
   next page; count the console errors (must be 0).

Usage::

    python benchmarks/html_10k.py [--cases 10000] [--repeat 3] [--workdir DIR] [--keep]

Exit 0 when every target is met, 1 when one is not.
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import score_10k
from _common import add_folder_options, cpu_model, version, work_folder
from ragsnap.scoring.html import render_score_html

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from browser import Chromium, chromium_path

SIZE_LIMIT = 10 * 1024 * 1024
LOAD_LIMIT = 3.0
FILTER_LIMIT = 0.5

_TIMINGS = """(async () => {
  const rows = () => document.querySelectorAll("#case-rows details").length;
  const frame = () => new Promise((done) => requestAnimationFrame(() => setTimeout(done, 0)));
  const out = {ready: document.body.getAttribute("data-ready"), first: rows()};
  const filter = document.getElementById("case-filter");
  let t = performance.now();
  filter.value = "zh"; filter.dispatchEvent(new Event("input")); await frame();
  out.filterMs = performance.now() - t;
  out.filterInfo = document.getElementById("case-info").textContent;
  filter.value = ""; filter.dispatchEvent(new Event("input"));
  const status = document.getElementById("case-status");
  t = performance.now();
  status.value = "regression"; status.dispatchEvent(new Event("change")); await frame();
  out.statusMs = performance.now() - t;
  out.statusInfo = document.getElementById("case-info").textContent;
  status.value = ""; status.dispatchEvent(new Event("change"));
  t = performance.now();
  document.getElementById("case-next").click(); await frame();
  out.nextMs = performance.now() - t;
  out.nodes = document.getElementsByTagName("*").length;
  return out;
})()"""


def render(report: dict[str, Any], diff: dict[str, Any], repeat: int) -> tuple[str, list[float]]:
    """The page and each render's seconds."""
    times = []
    page = ""
    for _ in range(repeat):
        started = time.perf_counter()
        page = render_score_html(report, diff)
        times.append(time.perf_counter() - started)
    return page, times


def browse(path: Path, repeat: int) -> list[dict[str, Any]] | None:
    """Per round: load seconds, the in-page timings and the console errors; None
    without chromium."""
    executable = chromium_path()
    if executable is None:
        return None
    rounds = []
    for _ in range(repeat):
        with Chromium(executable) as browser:
            load = browser.load(path)
            timings = browser.evaluate(_TIMINGS)
            rounds.append({"load": load, **timings, "errors": browser.errors()})
    return rounds


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; 0 when every target is met, else 1."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=10_000, help="cases (default: 10000)")
    parser.add_argument("--repeat", type=int, default=3, help="timed rounds (default: 3)")
    add_folder_options(
        parser,
        score_10k.DEFAULT_SEED,
        "generate (or reuse) the eval set here and keep it (default: a temporary folder)",
    )
    args = parser.parse_args(argv)
    settings = score_10k.Settings(score_10k.GENERATOR_VERSION, args.cases, 10, args.seed)
    with work_folder(args.workdir, "ragsnap-html-10k-", args.keep, "Eval set", enter=True):
        score_10k.prepare(settings)
        code, _, err = score_10k.call_ragsnap(score_10k.ragsnap_argv())
        if code not in (0, 1):
            raise SystemExit(f"ragsnap score failed (exit {code}):\n{err}")
        reports = score_10k.REPORTS_DIR
        report = json.loads((reports / "current.json").read_text(encoding="utf-8"))
        diff = json.loads((reports / "baseline-diff.json").read_text(encoding="utf-8"))
        page, times = render(report, diff, args.repeat)
        path = reports / "report.html"
        path.write_text(page, encoding="utf-8")
        size = len(page.encode("utf-8"))
        packed = len(gzip.compress(page.encode("utf-8")))
        rounds = browse(path.resolve(), args.repeat)

    print(f"\nCPU: {cpu_model()}; Python {sys.version.split()[0]}; ragsnap {version('ragsnap')}")
    print(f"{len(report['cases'])} cases, {len(diff['cases'])} changed against the baseline")
    print(f"render_score_html: median {statistics.median(times):.3f} s (min {min(times):.3f} s)")
    print(f"page size: {size / 1e6:.2f} MB ({packed / 1e6:.2f} MB gzipped); limit 10 MiB")
    ok = size < SIZE_LIMIT
    if rounds is None:
        print("chromium: not installed; load not measured")
    else:
        load = statistics.median(r["load"] for r in rounds)
        filtered = statistics.median(r["filterMs"] for r in rounds) / 1000
        status = statistics.median(r["statusMs"] for r in rounds) / 1000
        step = statistics.median(r["nextMs"] for r in rounds) / 1000
        errors = sum(len(r["errors"]) for r in rounds)
        first = rounds[0]
        print(f"chromium: load event, first {first['first']} rows drawn: median {load:.3f} s")
        print(f"  text filter over every case: {filtered:.3f} s ({first['filterInfo']})")
        print(f"  status filter 'regression': {status:.3f} s ({first['statusInfo']})")
        print(
            f"  next page: {step:.3f} s; {first['nodes']} DOM elements; {errors} console error(s)"
        )
        ok = ok and load < LOAD_LIMIT and max(filtered, status, step) < FILTER_LIMIT
        ok = ok and errors == 0 and first["ready"] == "1"
    print(f"targets (size < 10 MiB, load < {LOAD_LIMIT} s, filters < {FILTER_LIMIT} s): ", end="")
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""Every HTML page kind, byte for byte (ragsnap.scoring.html and the pages built on it).

The golden files under ``golden_html/`` were written by the string-built renderers
that came before the Jinja2 templates; the templates must give the same bytes for
the same reports: the score page with and without a baseline diff (one case's
loss attributed: baseline and current side by side), its privacy view, the trend page, the trial page (with gates, latency and a baseline trial),
its privacy view, and the live-check page and its privacy view. The inputs hold
markup in every text a user controls, so the escaping is pinned too.

``RAGSNAP_WRITE_GOLDEN=1 python -m pytest tests/unit/scoring/test_html_golden.py``
rewrites the files after an intended change to a page (review the diff).
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conftest import block, make_case, make_fixture
from ragsnap.live.html import render_live_html
from ragsnap.live.livecheck import LiveAnswer, build_live_report
from ragsnap.live.privacy import private_live
from ragsnap.models import Fixture, GoldenCase
from ragsnap.scoring.attribution import Side, attribute_diff
from ragsnap.scoring.diff import Tolerances, diff_reports
from ragsnap.scoring.hits import score_case
from ragsnap.scoring.html import render_score_html
from ragsnap.scoring.privacy import private_diff, private_report
from ragsnap.scoring.report import build_report
from ragsnap.scoring.trend import build_trend, render_trend_html
from ragsnap.trial.compare import diff_trials
from ragsnap.trial.gates import method_status
from ragsnap.trial.html import render_trial_html
from ragsnap.trial.privacy import private_trial, private_trial_diff

GOLDEN = Path(__file__).parent / "golden_html"
EVIL = '</script><script>alert(1)</script><img src=x onerror=alert(2)> & "quoted" \u2028'
INPUTS = {
    "cases": "c<1>.json",
    "casesSha256": "0" * 64,
    "fixtures": "f&x",
    "fixturesSha256": "1" * 64,
}


def _report(sources: dict[str, str], fixtures: dict[str, Side] | None = None) -> dict[str, Any]:
    """The report of one fixture per case (first block from ``sources``, its text
    holding markup); ``fixtures`` collects them for the attribution."""
    results = []
    for n, (case_id, source) in enumerate(sources.items()):
        fields: dict[str, Any] = {"query": f"{EVIL} {case_id}", "category": f"db<{n % 2}>"}
        if n == 2:
            fields["language"] = "zh"
        case = GoldenCase.from_json(make_case(case_id, **fields), {})
        blocks = [block(1, source, text=f"kept for 14 days {EVIL}"), block(2, "other & more")]
        data = make_fixture(case_id, blocks, query=case.query)
        if fixtures is not None:
            fixtures[case_id] = Side(data)
        results.append(score_case(case, Fixture.from_json(data)))
    return build_report(results, [], INPUTS)


def _score_pages() -> dict[str, str]:
    old: dict[str, Side] = {}
    new: dict[str, Side] = {}
    before = _report({"a<1>": "mysql-pool", "b": "mysql-pool", "c": "x", "gone": "mysql-pool"}, old)
    after = _report({"a<1>": "mysql-pool", "b": "elsewhere", "c": "mysql-pool"}, new)
    diff = diff_reports(before, after, Tolerances(), "base<&>.json")
    # b lost mysql-pool: its chunk left every list the current fixture records
    attribute_diff(diff, {k: (old[k], new[k]) for k in new if k in old}, "HEAD:fixtures")
    private = private_diff(diff, before, after)
    return {
        "score": render_score_html(after),
        "score-diff": render_score_html(after, diff),
        "score-private": render_score_html(private_report(after), private),
    }


def _trend_page() -> str:
    def summary(rate: float, sha: str, ndcg: float | None) -> dict[str, Any]:
        metrics = {} if ndcg is None else {"ndcg@10": {"mean": ndcg, "cases": 2}}
        return {
            "inputs": {"casesSha256": sha},
            "summary": {
                "cases": 2,
                "passRate": rate,
                "recallAtK": rate,
                "strongHitRate": rate,
                "noAnswerFalsePositiveRate": None,
                "missCount": 1 if rate < 0.8 else 0,
                "metrics": metrics,
            },
        }

    trend = build_trend(
        [
            ("2026-12-01.json", summary(0.5, "a", None)),
            ("2026-12-02T1015.json", summary(0.9, "a", 0.6)),
            ("2026-12-03 <x>.json", summary(0.8, "b", 0.7)),
        ]
    )
    return render_trend_html(trend)


_SHA = "a" * 64
_AGGREGATE = {
    "cases": 2,
    "passed": 1,
    "failed": 1,
    "passRate": 0.5,
    "answerable": 2,
    "noAnswer": 0,
    "hitLevels": {"strong": 1, "medium": 0, "weak": 0, "miss": 1},
    "recallAtK": 0.5,
    "strongHitRate": 0.5,
    "missCount": 1,
    "noAnswerFalsePositives": 0,
    "noAnswerFalsePositiveRate": None,
    "metrics": {"ndcg@10": {"mean": 0.5, "cases": 2}},
}


def _method(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "retrievers": ["lexical"],
        "embedder": {"kind": "openai", "model": "model<v9>", "revision": "r", "dimension": 8},
        "settings": {"minScore": 0.22},
        "note": "a note & more",
    }


def _trial_report(rate: float) -> dict[str, Any]:
    names = ("lexical", "hy<b>rid")
    latency = {"count": 2, "minMs": 1.0, "medianMs": 1.5, "p95Ms": 2.0, "maxMs": 2.0, "meanMs": 1.5}
    summary = {**_AGGREGATE, "passRate": rate}
    gates = [
        {
            "method": names[1],
            "gate": "passRate>=0.6",
            "value": rate,
            "ran": True,
            "passed": rate >= 0.6,
            "notRun": None,
            "cases": 2,
            "message": "" if rate >= 0.6 else f"{rate} < 0.6",
        },
        {
            "method": "lexical",
            "gate": "p95<&>",
            "value": None,
            "ran": False,
            "passed": None,
            "notRun": "nothing-to-measure",
            "cases": None,
            "message": "no timed <lookup>",
        },
    ]

    def case(case_id: str, passed: bool) -> dict[str, Any]:
        result = {
            "hitLevel": "strong" if passed else "miss",
            "passed": passed,
            "knownFailure": False,
            "firstExpectedRank": 1 if passed else None,
            "evidenceCount": 2,
            "metrics": {"ndcg@10": 1.0 if passed else 0.0},
            "failures": [] if passed else ["hit-level<miss>"],
        }
        methods = {
            n: {**result, "knownFailure": not passed and i == 1} for i, n in enumerate(names)
        }
        methods[names[1]]["hitLevel"] = "weak" if not passed else "strong"
        return {
            "id": case_id,
            "split": "dev",
            "language": "en",
            "category": "db<x>",
            "noAnswer": False,
            "methods": methods,
        }

    return {
        "schemaVersion": 1,
        "kind": "ragsnap-trial-report",
        "plan": {
            "inputs": {"corpus": _SHA, "cases": _SHA, "vectors": _SHA, "providers": _SHA},
            "methods": [_method(n) for n in names],
            "depth": None,
            "split": "all",
            "repetitions": 1,
            "seed": 1,
        },
        "planSha256": _SHA,
        "corpus": {"documents": 1, "chunks": 2, "sha256": _SHA},
        "cases": {"total": 2, "run": 2, "answerable": 2, "noAnswer": 0, "sha256": _SHA},
        "methods": {
            n: {
                "definition": _method(n),
                "summary": summary,
                "groups": {"split": {"dev": summary}, "language": {}, "categoryTest": {}},
                **method_status(gates, n),
                "admitted": method_status(gates, n)["status"] == "admitted",
            }
            for n in names
        },
        "gates": gates,
        "determinism": {
            "checked": True,
            "passes": 2,
            "identical": True,
            "firstDifference": None,
            "projectionSha256": _SHA,
        },
        "runs": None,
        "caseResults": [case("c<1>", True), case("c2", False)],
        "timing": {
            "warmup": True,
            "repetitions": 1,
            "latency": dict.fromkeys(names, latency),
            "wallSeconds": 1.0,
            "cpuSeconds": 1.0,
            "peakRssMiB": 1.0,
            "cgroup": None,
        },
    }


def _trial_pages() -> dict[str, str]:
    before, after = _trial_report(0.75), _trial_report(0.5)
    diff = diff_trials(before, after, Tolerances(), "base<trial>.json")
    return {
        "trial": render_trial_html(after),
        "trial-diff": render_trial_html(after, diff),
        "trial-private": render_trial_html(
            private_trial(after), private_trial_diff(copy.deepcopy(diff))
        ),
    }


def _live_pages() -> dict[str, str]:
    query = "where is the <b>secret</b> & payroll runbook"
    cases = [
        GoldenCase.from_json(make_case("c1", query=query, expectedSources=["payroll-db"]), {}),
        GoldenCase.from_json(make_case("c<2>", query=EVIL, expectedSources=["nowhere"]), {}),
    ]
    items = ({**block(1, "payroll-db", text="secret chunk"), "title": "Payroll <secrets>"},)
    report = build_live_report(
        cases,
        [
            LiveAnswer("scope", 5, items, {"answer": ["results"], "item": ["text"]}),
            LiveAnswer("scope", 5, items, {"answer": ["results"], "item": ["text"]}),
        ],
        base_url="https://rag.example.com/base?a=1&b=<2>",
        endpoint="GET /api/similar",
        cases_file="cases.json",
        cases_sha256="0" * 64,
        checked_at="2026-12-01T00:00:00Z",
        overrides={"kbScope": None, "topK": None},
    )
    return {
        "live": render_live_html(report),
        "live-private": render_live_html(private_live(report)),
    }


PAGES: dict[str, Callable[[], dict[str, str]]] = {
    "score": _score_pages,
    "trend": lambda: {"trend": _trend_page()},
    "trial": _trial_pages,
    "live": _live_pages,
}


@pytest.mark.parametrize("kind", sorted(PAGES))
def test_pages_are_byte_identical_to_the_golden_files(kind: str) -> None:
    for name, page in PAGES[kind]().items():
        path = GOLDEN / f"{name}.html"
        if os.environ.get("RAGSNAP_WRITE_GOLDEN") == "1":
            GOLDEN.mkdir(exist_ok=True)
            path.write_bytes(page.encode("utf-8"))
        assert page.encode("utf-8") == path.read_bytes(), name

"""Paired tests between a trial's methods and between two trials (ragsnap.trial.significance)."""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest

from conftest import block, make_case, make_fixture
from ragsnap.io.jsonio import round_floats
from ragsnap.io.schema import validate
from ragsnap.models import GoldenCase
from ragsnap.scoring.diff import Tolerances
from ragsnap.scoring.significance import SignificanceSettings, adjust_p, paired_test
from ragsnap.trial.compare import diff_trials, render_trial_diff_markdown, trial_diff_lines
from ragsnap.trial.measure import measure_method
from ragsnap.trial.privacy import private_trial, private_trial_diff
from ragsnap.trial.report import build_trial_report, render_trial_markdown
from ragsnap.trial.significance import (
    measures_to_test,
    method_pairs,
    method_tests,
    significance_lines,
)

SETTINGS = SignificanceSettings(permutations=400, bootstrap=400, seed=7)
GRADED = ("ndcg@10", "mrr@10", "coverage@10")


def _entry(ndcg: float, mrr: float, passed: bool, level: str | None = "strong") -> dict[str, Any]:
    return {
        "hitLevel": level,
        "passed": passed,
        "knownFailure": False,
        "firstExpectedRank": 1,
        "evidenceCount": 2,
        "metrics": {"ndcg@10": ndcg, "mrr@10": mrr, "coverage@10": 0.5},
        "failures": [],
    }


def _cases(n: int, shifts: dict[str, float], seed: int = 1) -> list[dict[str, Any]]:
    """``n`` answerable cases; each method's ndcg@10 is the base value plus its shift
    (and noise), its mrr@10 the same for every method, and it passes when ndcg > 0.5."""
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        base = rng.random() * 0.6
        methods = {}
        for name, shift in shifts.items():
            ndcg = round(min(1.0, max(0.0, base + shift + rng.gauss(0, 0.03))), 6)
            methods[name] = _entry(ndcg, 0.5, ndcg > 0.5)
        rows.append(
            {
                "id": f"c{i}",
                "split": "test",
                "language": "en",
                "category": "db",
                "noAnswer": False,
                "methods": methods,
            }
        )
    return rows


def _row(section: dict[str, Any], method: str, measure: str) -> dict[str, Any]:
    (row,) = [r for r in section["rows"] if r["method"] == method and r["measure"] == measure]
    return row


def test_measures_tested_are_the_rates_and_graded_means_not_counts_or_coverage() -> None:
    assert measures_to_test(["ndcg@10", "coverage@10", "map", "contextRecall"]) == [
        "passRate",
        "recallAtK",
        "strongHitRate",
        "noAnswerFalsePositiveRate",
        "contextRecall",
        "map",
        "ndcg@10",
    ]


def test_pairs_against_a_reference_or_every_pair() -> None:
    assert method_pairs(["a", "b", "c"], "b") == [("b", "a"), ("b", "c")]
    assert method_pairs(["a", "b", "c"], None) == [("a", "b"), ("a", "c"), ("b", "c")]


def test_two_methods_get_a_p_and_interval_per_measure_from_the_score_diffs_test() -> None:
    cases = _cases(120, {"lexical": 0.0, "hybrid": 0.15})
    section = method_tests(cases, ["lexical", "hybrid"], GRADED, SETTINGS, "lexical")
    assert section is not None
    assert [r["measure"] for r in section["rows"]] == measures_to_test(GRADED)
    ndcg = _row(section, "hybrid", "ndcg@10")
    before = [c["methods"]["lexical"]["metrics"]["ndcg@10"] for c in cases]
    after = [c["methods"]["hybrid"]["metrics"]["ndcg@10"] for c in cases]
    # the score diff's own test, on the stream named by the pair and the measure
    same = paired_test(before, after, SETTINGS, "lexical\0hybrid\0ndcg@10")
    test = ndcg["significance"]
    assert (test["p"], test["ci"], test["cases"]) == (same.p, [same.low, same.high], 120)
    assert test["significant"] and same.low > 0.1
    assert ndcg["delta"] == pytest.approx(sum(after) / 120 - sum(before) / 120, abs=1e-6)
    assert ndcg["referenceMean"] == pytest.approx(sum(before) / 120, abs=1e-6)
    # mrr@10 is the same in every case: nothing to test, outside the family
    assert _row(section, "hybrid", "mrr@10")["significance"] is None
    # no case is no-answer: the false-positive rate has no paired case
    fp = _row(section, "hybrid", "noAnswerFalsePositiveRate")
    assert fp["cases"] == 0 and fp["significance"] is None
    # the tested rows are corrected as one family, with the score diff's rule (Holm)
    tested = [r["significance"] for r in section["rows"] if r["significance"] is not None]
    assert section["tested"] == len(tested) == 2  # ndcg@10 and passRate
    assert [t["pAdjusted"] for t in tested] == adjust_p([t["p"] for t in tested], "holm")
    assert section["settings"] == {
        "permutations": 400,
        "bootstrap": 400,
        "seed": 7,
        "alpha": 0.05,
        "correction": "holm",
    }


def test_no_shift_is_not_significant_and_the_correction_is_configurable() -> None:
    cases = _cases(60, {"a": 0.0, "b": 0.0})
    holm = method_tests(cases, ["a", "b"], GRADED, SETTINGS, "a")
    bonferroni = method_tests(
        cases, ["a", "b"], GRADED, SignificanceSettings(400, 400, 7, correction="bonferroni"), "a"
    )
    assert holm is not None and bonferroni is not None
    ndcg = _row(holm, "b", "ndcg@10")["significance"]
    assert not ndcg["significant"]
    m = holm["tested"]
    assert _row(bonferroni, "b", "ndcg@10")["significance"]["pAdjusted"] == min(1.0, m * ndcg["p"])


def test_all_pairs_and_one_method() -> None:
    cases = _cases(30, {"a": 0.0, "b": 0.1, "c": 0.2})
    section = method_tests(cases, ["a", "b", "c"], GRADED, SETTINGS, None)
    assert section is not None and section["reference"] is None
    pairs = {(r["reference"], r["method"]) for r in section["rows"]}
    assert pairs == {("a", "b"), ("a", "c"), ("b", "c")}
    assert method_tests(cases, ["a"], GRADED, SETTINGS, None) is None


def test_a_change_below_the_reports_rounding_moves_no_p_mean_or_interval() -> None:
    """Per-case values perturbed by far less than the six written decimals (as another
    machine's last float bits would) give the same section, byte for byte."""
    cases = _cases(80, {"lexical": 0.0, "hybrid": 0.05, "alias": -0.02}, seed=4)
    expected = method_tests(cases, ["lexical", "hybrid", "alias"], GRADED, SETTINGS, "lexical")
    rng = random.Random(11)
    nudged = copy.deepcopy(cases)
    for case in nudged:
        for entry in case["methods"].values():
            for name in entry["metrics"]:
                entry["metrics"][name] += rng.choice((-1, 1)) * rng.uniform(1e-10, 4e-8)
    assert nudged != cases
    got = method_tests(nudged, ["lexical", "hybrid", "alias"], GRADED, SETTINGS, "lexical")
    assert got == expected
    assert any(r["significance"] is not None for r in expected["rows"])  # type: ignore[index]


def test_terminal_and_markdown_show_the_tests() -> None:
    cases = _cases(120, {"lexical": 0.0, "hybrid": 0.15})
    section = method_tests(cases, ["lexical", "hybrid"], GRADED, SETTINGS, "lexical")
    lines = significance_lines(section)
    assert lines[0] == "Paired tests vs lexical (Holm p < 0.05, 2 row(s) tested):"
    assert lines[1].startswith("  hybrid: passRate +") or lines[1].startswith("  hybrid: ndcg@10")
    assert "ndcg@10 +0.1" in lines[1] and "Holm p 0.0" in lines[1]
    assert significance_lines(None) == []


# --- through the trial report and the trial diff -----------------------------------------


def _measured(tops: dict[str, list[str]]) -> dict[str, Any]:
    """Two cases, each method's first evidence block from ``tops`` (case order)."""
    cases = [
        GoldenCase.from_json(
            make_case(f"c{i}", judgments=[{"source": "mysql-pool", "grade": 3}]), {}
        )
        for i in range(len(next(iter(tops.values()))))
    ]
    out = {}
    for name, sources in tops.items():
        lookups = {
            case.id: make_fixture(case.id, [block(1, source), block(2, "other")])["lookupResult"]
            for case, source in zip(cases, sources, strict=True)
        }
        out[name] = measure_method(cases, lookups, None, ["mrr@10", "ndcg@10"])
    return out


def _report(tops: dict[str, list[str]], **kwargs: Any) -> dict[str, Any]:
    sha = "a" * 64
    measurements = _measured(tops)
    embedder = {"kind": "hashing", "model": "char-ngram", "revision": "2", "dimension": 8}
    definitions = {
        n: {
            "name": n,
            "retrievers": ["lexical"],
            "embedder": embedder,
            "settings": {},
            "note": None,
        }
        for n in tops
    }
    report = build_trial_report(
        plan={
            "inputs": {"corpus": sha, "cases": sha, "vectors": sha, "providers": sha},
            "methods": list(definitions.values()),
            "depth": None,
            "split": "all",
            "repetitions": 1,
            "seed": 1,
        },
        plan_sha256=sha,
        corpus={"documents": 1, "chunks": 2, "sha256": sha},
        cases={"total": 8, "run": 8, "answerable": 8, "noAnswer": 0, "sha256": sha},
        definitions=definitions,
        measurements=measurements,
        gates=None,
        determinism={
            "checked": False,
            "passes": 2,
            "identical": None,
            "firstDifference": None,
            "projectionSha256": sha,
        },
        runs=None,
        timing={
            "warmup": True,
            "repetitions": 1,
            "latency": {},
            "wallSeconds": 1.0,
            "cpuSeconds": 1.0,
            "peakRssMiB": 1.0,
            "cgroup": None,
        },
        **kwargs,
    )
    result: dict[str, Any] = round_floats(report)
    return result


HIT, MISS = "mysql-pool", "elsewhere"


def test_the_trial_report_carries_the_tests_in_its_schemas_and_markdown() -> None:
    tops = {"lexical": [MISS] * 8, "hybrid": [HIT] * 7 + [MISS], "vector": [HIT, *[MISS] * 7]}
    report = _report(tops, significance=SETTINGS, reference="hybrid")
    section = report["significance"]
    assert section["reference"] == "hybrid"
    assert {r["method"] for r in section["rows"]} == {"lexical", "vector"}
    mrr = _row(section, "lexical", "mrr@10")
    assert (mrr["referenceMean"], mrr["methodMean"], mrr["cases"]) == (0.875, 0.0, 8)
    assert mrr["significance"]["ci"][1] < 0
    validate(report, "trial-report", "trial.json", "trial report")
    validate(private_trial(report), "private-trial-report", "trial.json", "trial report")
    markdown = render_trial_markdown(report)
    assert "## Significance between methods" in markdown
    assert "each method against `hybrid`" in markdown
    assert markdown.index("## Significance") < markdown.index("## Per split")
    # the first method is the default reference; without settings there is no section
    assert _report(tops, significance=SETTINGS)["significance"]["reference"] == "lexical"
    assert "significance" not in _report(tops)
    assert _report({"lexical": [HIT, MISS]}, significance=SETTINGS)["significance"] is None


def test_a_trial_diff_tests_each_method_over_the_shared_cases() -> None:
    before = _report({"lexical": [HIT] * 8, "hybrid": [HIT] * 8}, significance=SETTINGS)
    after = _report(
        {"lexical": [MISS] * 7 + [HIT], "hybrid": [HIT] * 8, "vector": [HIT] * 8},
        significance=SETTINGS,
    )
    diff = diff_trials(before, after, Tolerances(), "base.json", SETTINGS)
    validate(diff, "trial-diff", "trial-diff.json", "trial diff")
    validate(private_trial_diff(diff), "trial-diff", "trial-diff.json", "trial diff")
    rows = {r["metric"]: r for r in diff["methods"]["lexical"]["rows"]}
    mrr = rows["mrr@10"]
    values = [1.0] * 8, [0.0] * 7 + [1.0]
    assert mrr["significance"]["p"] == paired_test(*values, SETTINGS, "lexical\0mrr@10").p
    assert mrr["significance"]["ci"][1] < 0 and mrr["status"] == "regression"
    assert rows["missCount"]["significance"] is None  # a count is not tested
    # hybrid did not move: nothing to test; vector is new: no rows
    assert all(r["significance"] is None for r in diff["methods"]["hybrid"]["rows"])
    assert diff["methods"]["vector"]["rows"] == []
    tested = [r["significance"] for m in diff["methods"].values() for r in m["rows"]]
    tested = [t for t in tested if t is not None]
    assert diff["significance"]["tested"] == len(tested) > 2
    assert diff["significance"]["sharedCases"] == 8
    assert [t["pAdjusted"] for t in tested] == adjust_p([t["p"] for t in tested], "holm")
    lines = trial_diff_lines(diff, 50)
    assert lines[1].startswith("Paired tests over 8 shared case(s): ")
    assert any(line.startswith("  lexical: mrr@10 1.000 -> 0.125 (Holm p ") for line in lines)
    markdown = render_trial_diff_markdown(diff)
    assert "| paired Δ interval " in markdown and "| Holm p " in markdown
    # without settings: no tests, and the old rendering
    plain = diff_trials(before, after, Tolerances(), "base.json")
    assert plain["significance"] is None
    assert "paired" not in render_trial_diff_markdown(plain)
    validate(plain, "trial-diff", "trial-diff.json", "trial diff")


def test_the_html_page_shows_the_tests_between_methods_and_in_the_diff() -> None:
    from ragsnap.trial.html import render_trial_html

    tops = {"lexical": [MISS] * 8, "hybrid": [HIT] * 8}
    report = _report(tops, significance=SETTINGS)
    page = render_trial_html(report)
    assert "<h2>Paired tests between methods</h2>" in page
    mrr = _row(report["significance"], "hybrid", "mrr@10")["significance"]
    assert f'<td class="num">{mrr["pAdjusted"]:.3f}</td>' in page
    assert "significant</td>" in page and "not tested" in page
    before = _report({"lexical": [HIT] * 8, "hybrid": [HIT] * 8}, significance=SETTINGS)
    diff = diff_trials(before, report, Tolerances(), "base.json", SETTINGS)
    with_diff = render_trial_html(report, diff)
    assert "<th>paired interval</th><th>Holm p</th>" in with_diff
    assert "Paired tests between methods" not in render_trial_html(_report(tops))

"""Baseline diff classification (ragsnap.scoring.diff)."""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

import pytest

from conftest import block, make_case, make_fixture
from ragsnap.io.jsonio import round_floats
from ragsnap.io.schema import validate
from ragsnap.ir.metrics import parse_measures
from ragsnap.models import Fixture, GoldenCase
from ragsnap.scoring.casemetrics import case_metrics
from ragsnap.scoring.diff import NoiseFloor, Tolerances, case_diff, diff_reports, lost_text
from ragsnap.scoring.hits import score_case
from ragsnap.scoring.report import build_report
from ragsnap.scoring.significance import SignificanceSettings

INPUTS = {"cases": "c.json", "casesSha256": "0" * 64, "fixtures": "f", "fixturesSha256": "1" * 64}


def report(fixtures: dict[str, list[dict[str, Any]] | None], **case_fields: Any) -> dict[str, Any]:
    results = []
    for case_id, blocks in fixtures.items():
        c = GoldenCase.from_json(make_case(case_id, **case_fields), {})
        f = (
            None
            if blocks is None
            else Fixture.from_json(make_fixture(case_id, blocks, query=c.query))
        )
        results.append(score_case(c, f))
    return build_report(results, [], INPUTS)


def diff(before: dict[str, Any], after: dict[str, Any], **tol: Any) -> dict[str, Any]:
    d = diff_reports(before, after, Tolerances(**tol), "baseline.json")
    # every aggregate row is kept; these tests look at the ones that moved
    d["aggregates"] = [row for row in d["aggregates"] if row["status"] != "unchanged"]
    return d


def test_identical_reports_have_no_changes() -> None:
    r = report({"a": [block(1, "mysql-pool")], "b": [block(1, "x"), block(2, "mysql-pool")]})
    d = diff(r, copy.deepcopy(r))
    assert d["regressed"] is False
    assert d["aggregates"] == [] and d["cases"] == []


def test_rounded_baseline_equals_unrounded_current() -> None:
    r = report({"a": [block(1, "mysql-pool")], "b": [block(1, "x")], "c": [block(1, "y")]})
    assert r["summary"]["passRate"] == pytest.approx(1 / 3)
    assert diff(round_floats(r), r)["aggregates"] == []


def test_lost_document_is_a_case_and_aggregate_regression() -> None:
    before = report({"a": [block(1, "mysql-pool")], "b": [block(1, "mysql-pool")]})
    after = report({"a": [block(1, "mysql-pool")], "b": [block(1, "other")]})
    d = diff(before, after)
    assert d["regressed"] is True
    (case,) = d["cases"]
    assert case["id"] == "b" and case["status"] == "regression"
    fields = {c["field"]: (c["baseline"], c["current"], c["status"]) for c in case["changes"]}
    assert fields["passed"] == (True, False, "regression")
    assert fields["hitLevel"] == ("strong", "miss", "regression")
    assert fields["firstExpectedRank"] == (1, None, "regression")
    overall = {row["metric"]: row for row in d["aggregates"] if row["scope"] == "all"}
    assert overall["passRate"]["delta"] == -0.5
    assert overall["missCount"]["status"] == "regression"
    assert {row["scope"] for row in d["aggregates"]} >= {"category=database", "split=dev"}


def test_case_diff_is_one_case_of_the_diff() -> None:
    """What ``pytest --ragsnap`` computes for one failing case is the diff's row."""
    before = report({"a": [block(1, "mysql-pool")], "b": [block(1, "mysql-pool")]})
    after = report({"a": [block(1, "mysql-pool")], "b": [block(1, "other")]})
    (row,) = diff(before, after)["cases"]
    assert case_diff(before["cases"][1], after["cases"][1], Tolerances()) == row
    assert row["lost"] == [{"kind": "source", "target": "mysql-pool", "before": 1, "after": None}]
    assert case_diff(before["cases"][0], after["cases"][0], Tolerances()) is None


def test_improvement_does_not_fail() -> None:
    before = report({"a": [block(1, "x"), block(2, "mysql-pool")]})
    after = report({"a": [block(1, "mysql-pool")]})
    d = diff(before, after)
    assert d["regressed"] is False
    assert d["cases"][0]["status"] == "improvement"
    assert d["cases"][0]["changes"] == [
        {"field": "firstExpectedRank", "baseline": 2, "current": 1, "status": "improvement"},
        {"field": "rerankTopSource", "baseline": "x", "current": "mysql-pool", "status": "changed"},
    ]


def test_rank_tolerance() -> None:
    before = report({"a": [block(1, "mysql-pool")]})
    after = report({"a": [block(1, "x"), block(2, "mysql-pool")]})
    assert diff(before, after)["regressed"] is True
    tolerant = diff(before, after, first_expected_rank=1)
    assert tolerant["regressed"] is False
    assert tolerant["cases"][0]["changes"][0]["status"] == "changed"


def test_aggregate_tolerance() -> None:
    cases = {f"c{i}": [block(1, "mysql-pool")] for i in range(10)}
    before = report(cases)
    after = report({**cases, "c9": [block(1, "x"), block(2, "mysql-pool")]}, expectedKeywords=None)
    after["summary"]["strongHitRate"] = 0.95
    rows = diff(before, after, strong_hit_rate=0.1)["aggregates"]
    assert [r["status"] for r in rows if r["metric"] == "strongHitRate"] == ["changed"]
    rows = diff(before, after)["aggregates"]
    assert [r["status"] for r in rows if r["metric"] == "strongHitRate"] == ["regression"]


def test_neutral_fields_change_without_regressing() -> None:
    base = make_fixture("a", [block(1, "mysql-pool")])
    moved = make_fixture(
        "a", [block(1, "mysql-pool")], selected="unfiltered", fallback=["filtered-weak"]
    )
    c = GoldenCase.from_json(make_case("a", query="query for a"), {})
    before = build_report([score_case(c, Fixture.from_json(base))], [], INPUTS)
    after = build_report([score_case(c, Fixture.from_json(moved))], [], INPUTS)
    d = diff(before, after)
    assert d["regressed"] is False
    assert d["cases"][0]["status"] == "changed"
    assert [ch["field"] for ch in d["cases"][0]["changes"]] == [
        "selectedAttempt",
        "fallbackReasons",
    ]


def test_added_and_removed_cases_and_notes() -> None:
    before = report({"a": [block(1, "mysql-pool")], "gone": [block(1, "mysql-pool")]})
    after = report({"a": [block(1, "mysql-pool")], "new": [block(1, "mysql-pool")]})
    after["inputs"] = {**INPUTS, "casesSha256": "2" * 64}
    d = diff(before, after)
    assert [(c["id"], c["status"]) for c in d["cases"]] == [("new", "added"), ("gone", "removed")]
    assert d["counts"]["addedCases"] == 1 and d["counts"]["removedCases"] == 1
    assert d["regressed"] is False
    assert d["notes"] == ["the golden cases changed since the baseline was written"]


def judged_report(blocks: list[dict[str, Any]], measure: str) -> dict[str, Any]:
    """A one-case report whose case judges source mysql-pool grade 3."""
    c = GoldenCase.from_json(
        make_case("a", query="query for a", judgments=[{"source": "mysql-pool", "grade": 3}]), {}
    )
    f = Fixture.from_json(make_fixture("a", blocks))
    metrics = case_metrics([c], {"a": f}, parse_measures([measure]))
    return build_report([score_case(c, f, metrics.get("a"))], [], INPUTS)


def test_graded_metric_drop_is_a_regression_within_tolerance_not() -> None:
    before = judged_report([block(1, "mysql-pool")], "ndcg@10")
    after = judged_report([block(1, "x"), block(2, "mysql-pool")], "ndcg@10")
    rows = [r for r in diff(before, after)["aggregates"] if r["metric"] == "ndcg@10"]
    assert rows and all(r["status"] == "regression" for r in rows)
    assert rows[0]["baseline"] == 1.0 and rows[0]["current"] == pytest.approx(0.63093, abs=1e-5)
    loose = [r for r in diff(before, after, metrics=0.5)["aggregates"] if r["metric"] == "ndcg@10"]
    assert all(r["status"] == "changed" for r in loose)


def test_coverage_change_is_reported_but_never_a_regression() -> None:
    before = judged_report([block(1, "mysql-pool")], "coverage@10")
    after = judged_report([block(1, "mysql-pool"), block(2, "unjudged")], "coverage@10")
    rows = [r for r in diff(before, after)["aggregates"] if r["metric"] == "coverage@10"]
    assert rows and {r["status"] for r in rows} == {"changed"}
    assert (rows[0]["baseline"], rows[0]["current"]) == (1.0, 0.5)


def graded(values: dict[str, float], metric: str = "contextPrecision") -> dict[str, Any]:
    """A report of passing cases whose graded ``metric`` takes ``values`` per case."""
    r = report({case_id: [block(1, "mysql-pool")] for case_id in values})
    for case in r["cases"]:
        case["metrics"] = {metric: values[case["id"]]}
    mean = round(sum(values.values()) / len(values), 6)
    for agg in [r["summary"], *(a for g in r["groups"].values() for a in g.values())]:
        agg["metrics"] = {metric: {"mean": mean, "cases": len(values)}}
    return r


def rows_of(d: dict[str, Any], metric: str) -> list[dict[str, Any]]:
    return [row for row in d["aggregates"] if row["metric"] == metric and row["scope"] == "all"]


def test_a_move_below_the_noise_floor_is_changed_never_a_regression() -> None:
    before = graded({"a": 0.181, "b": 0.181})
    after = graded({"a": 0.180, "b": 0.181})  # mean -0.0005
    (row,) = rows_of(diff_reports(before, after, Tolerances(), "b.json"), "contextPrecision")
    assert row["status"] == "regression"  # no floor: every move counts
    d = diff_reports(before, after, Tolerances(), "b.json", noise_floor=NoiseFloor())
    (row,) = rows_of(d, "contextPrecision")
    assert (row["status"], row["delta"], row["noiseFloor"]) == ("changed", -0.0005, 0.001)
    assert d["regressed"] is False and d["noiseFloor"] == {"default": 0.001}
    strict = NoiseFloor.from_json({"default": 0.001, "contextPrecision": 0.0})
    (row,) = rows_of(
        diff_reports(before, after, Tolerances(), "b", noise_floor=strict), "contextPrecision"
    )
    assert row["status"] == "regression"


def test_significance_and_require_significance() -> None:
    ids = [f"c{i:02d}" for i in range(12)]
    before = graded(dict.fromkeys(ids, 0.5))
    one_case = graded({**dict.fromkeys(ids, 0.5), "c00": 0.3})
    every_case = graded(dict.fromkeys(ids, 0.4))
    settings = SignificanceSettings(permutations=999, bootstrap=999)
    (noise,) = rows_of(
        diff_reports(before, one_case, Tolerances(), "b", significance=settings), "contextPrecision"
    )
    assert noise["status"] == "regression" and noise["significance"]["significant"] is False
    assert noise["significance"]["cases"] == 12 and noise["significance"]["p"] == 1.0
    required = replace(settings, require=True)
    d = diff_reports(before, one_case, Tolerances(), "b", significance=required)
    (noise,) = rows_of(d, "contextPrecision")
    assert noise["status"] == "changed" and d["regressed"] is False
    d = diff_reports(before, every_case, Tolerances(), "b", significance=required)
    (shift,) = rows_of(d, "contextPrecision")
    assert shift["status"] == "regression" and shift["significance"]["significant"] is True
    assert shift["significance"]["p"] < 0.01 and shift["significance"]["ci"] == [-0.1, -0.1]
    assert d["regressed"] is True and d["significance"]["require"] is True


def test_case_regressions_fail_even_when_aggregates_are_not_significant() -> None:
    cases = {f"c{i}": [block(1, "mysql-pool")] for i in range(20)}
    before = report(cases)
    after = report({**cases, "c0": [block(1, "other")]})
    required = SignificanceSettings(permutations=200, bootstrap=200, require=True)
    d = diff_reports(before, after, Tolerances(), "b", significance=required)
    assert d["regressed"] is True and d["counts"]["regressedCases"] == 1
    (row,) = rows_of(d, "passRate")
    assert row["status"] == "changed" and row["significance"]["significant"] is False


def test_transitions_and_review_fields() -> None:
    before = report({"a": [block(1, "mysql-pool")], "b": [block(1, "mysql-pool")]})
    after = report({"a": [block(1, "mysql-pool")], "b": [block(1, "x"), block(2, "y")]})
    d = diff_reports(before, after, Tolerances(), "b")
    assert d["hitLevelTransitions"]["strong"] == {"miss": 1, "weak": 0, "medium": 0, "strong": 1}
    (case,) = d["cases"]
    assert case["query"] == "query for b" and case["reasons"] and case["baselineReasons"] == []
    assert case["topSources"] == {"baseline": ["mysql-pool"], "current": ["x", "y"]}
    old = copy.deepcopy(before)
    for entry in old["cases"]:
        del entry["topSources"]  # a baseline written before topSources existed
    case = diff_reports(old, after, Tolerances(), "b")["cases"][0]
    assert case["topSources"] == {"baseline": None, "current": ["x", "y"]}


def spread(fixtures: dict[str, tuple[str, list[dict[str, Any]]]]) -> dict[str, Any]:
    """A report whose cases sit in the categories given: id -> (category, blocks)."""
    results = []
    for case_id, (category, blocks) in fixtures.items():
        c = GoldenCase.from_json(make_case(case_id, category=category), {})
        results.append(score_case(c, Fixture.from_json(make_fixture(case_id, blocks))))
    return build_report(results, [], INPUTS)


def test_rows_one_case_moved_are_one_cause_with_the_scope_repeats_folded() -> None:
    hit, lost = [block(1, "mysql-pool")], [block(1, "other")]
    before = spread({"a": ("db", hit), "b": ("db", hit), "c": ("mq", hit)})
    after = spread({"a": ("db", hit), "b": ("db", lost), "c": ("mq", hit)})
    d = diff_reports(before, after, Tolerances(), "b.json")
    (cause,) = d["causes"]
    assert cause["cases"] == ["b"] and cause["status"] == "regression"
    assert [(r["scope"], r["metric"]) for r in cause["rows"]] == [
        ("all", m) for m in ("passRate", "recallAtK", "strongHitRate", "missCount")
    ]
    # category=db, language=en, split=dev repeat each of the four overall rows
    assert len(cause["folded"]) == 12
    assert {r["scope"] for r in cause["folded"]} == {"category=db", "language=en", "split=dev"}
    moved = [r for r in d["aggregates"] if r["status"] != "unchanged"]
    assert {r["movedCases"] for r in moved} == {1}
    assert d["counts"]["aggregateRegressions"] == 16  # the rows are all still there


def test_a_scope_row_the_overall_row_does_not_explain_stays_visible() -> None:
    hit, lost = [block(1, "mysql-pool")], [block(1, "other")]
    # one case lost in db, one found in mq: overall unchanged, each category moved
    before = spread({"a": ("db", hit), "b": ("mq", lost)})
    after = spread({"a": ("db", lost), "b": ("mq", hit)})
    d = diff_reports(before, after, Tolerances(), "b.json")
    assert d["counts"]["regressedCases"] == 1 and d["counts"]["improvedCases"] == 1
    by_cases = {tuple(c["cases"]): c for c in d["causes"]}
    assert list(by_cases) == [("a",), ("b",)]  # the regression first
    lost_rows = {(r["scope"], r["metric"]) for r in by_cases[("a",)]["rows"]}
    assert ("category=db", "passRate") in lost_rows and by_cases[("a",)]["folded"] == []
    assert by_cases[("b",)]["status"] == "improvement"
    assert not any(r["scope"] == "all" for c in d["causes"] for r in c["rows"])


def test_a_scope_row_moved_by_other_cases_is_not_folded() -> None:
    hit, lost = [block(1, "mysql-pool")], [block(1, "other")]
    # a is lost (overall: {a}); d moves from db to mq unchanged, so category=db moved
    # with {a, d}: not only the overall row's cases, so listed apart
    before = spread({"a": ("db", hit), "b": ("db", hit), "d": ("db", lost), "c": ("mq", hit)})
    after = spread({"a": ("db", lost), "b": ("db", hit), "d": ("mq", lost), "c": ("mq", hit)})
    d = diff_reports(before, after, Tolerances(), "b.json")
    first = d["causes"][0]
    assert first["cases"] == ["a"] and ("all", "passRate") in {
        (r["scope"], r["metric"]) for r in first["rows"]
    }
    assert ("split=dev", "passRate") in {(r["scope"], r["metric"]) for r in first["folded"]}
    shown = {(tuple(c["cases"]), r["scope"], r["metric"]) for c in d["causes"] for r in c["rows"]}
    assert (("a", "d"), "category=db", "passRate") in shown


def test_p_values_are_corrected_and_require_reads_the_adjusted_p() -> None:
    ids = [f"c{i:02d}" for i in range(12)]
    before = graded(dict.fromkeys(ids, 0.5))
    after = graded({**dict.fromkeys(ids, 0.5), **dict.fromkeys(ids[:6], 0.1)})
    settings = SignificanceSettings(permutations=999, bootstrap=999, require=True)
    raw = diff_reports(
        before, after, Tolerances(), "b", significance=replace(settings, correction="none")
    )
    (row,) = rows_of(raw, "contextPrecision")
    tests = [r["significance"] for r in raw["aggregates"] if r["significance"] is not None]
    assert len(tests) == 4  # the overall row and its category, language and split rows
    p = row["significance"]["p"]
    assert p < 0.05 and row["significance"]["pAdjusted"] == p and row["status"] == "regression"
    assert 4 * p >= 0.05  # significant alone, not as one of four
    holm = diff_reports(before, after, Tolerances(), "b", significance=settings)
    (row,) = rows_of(holm, "contextPrecision")
    # Holm over the four tested rows, by hand: step i of m multiplies by m - i + 1,
    # then a running maximum
    raws = [r["significance"]["p"] for r in holm["aggregates"] if r["significance"]]
    rank = sorted(raws).index(p)
    expected = max(min(1.0, (4 - i) * q) for i, q in enumerate(sorted(raws)[: rank + 1]))
    assert row["significance"]["p"] == p
    assert row["significance"]["pAdjusted"] == round(expected, 6) >= 0.05
    assert row["significance"]["significant"] is False
    assert row["status"] == "changed" and holm["regressed"] is False
    assert holm["significance"]["correction"] == "holm"
    bonferroni = diff_reports(
        before, after, Tolerances(), "b", significance=replace(settings, correction="bonferroni")
    )
    (row,) = rows_of(bonferroni, "contextPrecision")
    assert row["significance"]["pAdjusted"] == min(1.0, round(4 * p, 6))


def test_a_cause_compares_case_values_as_written() -> None:
    third = 1 / 3  # 0.333333 once written
    before = round_floats(graded({"a": third, "b": third, "c": third}))
    after = graded({"a": third, "b": third, "c": 0.1})  # still in memory, unrounded
    (cause,) = diff_reports(before, after, Tolerances(), "b")["causes"]
    assert cause["cases"] == ["c"]


# --- what a case lost -------------------------------------------------------------------

JUDGED = [{"chunkId": "mysql-pool#1", "grade": 2, "spans": ["pool holds 20"]}]


def lost_of(
    before: list[dict[str, Any]], after: list[dict[str, Any]], **fields: Any
) -> list[dict[str, Any]]:
    d = diff(report({"a": before}, **fields), report({"a": after}, **fields))
    (case,) = d["cases"]
    return list(case["lost"])


def test_a_source_doc_id_or_judged_chunk_below_the_cut_or_lower_is_lost() -> None:
    fields = {"expectedDocIds": ["doc-mysql-pool"], "judgments": JUDGED, "topK": 2}
    kept = [block(1, "mysql-pool", text="pool holds 20")]
    assert lost_of(kept, [block(1, "x"), block(2, "y"), block(3, "mysql-pool")], **fields) == [
        {"kind": "source", "target": "mysql-pool", "before": 1, "after": None},
        {"kind": "docId", "target": "doc-mysql-pool", "before": 1, "after": None},
        {"kind": "chunk", "target": "mysql-pool#1", "before": 1, "after": None},
        {"kind": "span", "target": "pool holds 20", "before": "mysql-pool#1", "after": None},
    ]
    moved = lost_of(kept, [block(1, "x"), block(2, "mysql-pool")], expectedKeywords=None)
    assert moved == [{"kind": "source", "target": "mysql-pool", "before": 1, "after": 2}]


def test_a_keyword_or_breadcrumb_no_longer_covered_names_the_chunk_that_covered_it() -> None:
    before = [block(1, "mysql-pool", text="kept for 14 days"), block(2, "x", breadcrumb="Ops")]
    after = [block(1, "mysql-pool", text="kept for two weeks", breadcrumb="Other")]
    lost = lost_of(before, after, expectedKeywords=["14 days"], expectedBreadcrumbs=["Ops"])
    assert lost == [
        {"kind": "keyword", "target": "14 days", "before": "mysql-pool#1", "after": None},
        {"kind": "breadcrumb", "target": "Ops", "before": "x#2", "after": None},
    ]


def test_an_expectation_that_flipped_refers_to_its_change() -> None:
    before, after = report({"a": [block(1, "mysql-pool")]}), report({"a": [block(1, "mysql-pool")]})
    after["cases"][0]["reasons"] = [
        "selected attempt 'unfiltered', expected 'filtered'",
        "context pack lacks expected source(s) ['mysql-pool']",
    ]
    after["cases"][0]["passed"] = False
    after["cases"][0]["selectedAttempt"] = "unfiltered"
    (case,) = diff(before, after)["cases"]
    assert case["lost"] == [
        {
            "kind": "expectation",
            "target": "selectedAttempt",
            "before": "held",
            "after": "failed",
            "change": "selectedAttempt",
        },
        {
            "kind": "expectation",
            "target": "contextSources",
            "before": "held",
            "after": "failed",
            "change": None,
        },
    ]
    assert lost_text(case) == (
        "lost expectation selectedAttempt (held -> failed); "
        "lost expectation contextSources (held -> failed)"
    )


def test_a_target_the_case_no_longer_expects_is_not_lost_and_improvements_list_nothing() -> None:
    before = report({"a": [block(1, "mysql-pool", text="14 days")]}, expectedKeywords=["14 days"])
    after = report({"a": [block(1, "other")]}, expectedSources=["other"], expectedKeywords=["x"])
    (case,) = diff(before, after)["cases"]
    assert case["status"] == "changed" and case["lost"] == []
    better = diff(report({"a": [block(1, "x"), block(2, "mysql-pool")]}), before)
    assert "lost" not in better["cases"][0]  # improved: nothing to name


def test_a_baseline_without_coverage_loses_nothing_it_cannot_know_and_says_so_once() -> None:
    before = report({"a": [block(1, "mysql-pool")], "b": [block(1, "mysql-pool")]})
    for entry in before["cases"]:
        del entry["coverage"]
    validate(before, "report", "baseline.json", "report")  # older baselines still load
    d = diff(before, report({"a": [block(1, "x")], "b": [block(1, "x")]}))
    assert [c["lost"] for c in d["cases"]] == [[], []]
    assert sum("not recorded in the baseline" in note for note in d["notes"]) == 1
    assert diff(report({"a": [block(1, "mysql-pool")]}), report({"a": []}))["notes"] == []


def test_lost_text_shows_three_losses_then_a_count_and_the_diff_is_valid() -> None:
    fields = {"expectedKeywords": ["k1", "k2", "k3", "k4"], "expectedBreadcrumbs": ["Database"]}
    d = diff(
        report({"a": [block(1, "mysql-pool", text="k1 k2 k3 k4")]}, **fields),
        report({"a": []}, **fields),
    )
    validate(d, "diff-report", "diff.json", "diff")
    (case,) = d["cases"]
    assert lost_text(case) == (
        "lost keyword 'k1' (was in mysql-pool#1); lost keyword 'k2' (was in mysql-pool#1); "
        "lost keyword 'k3' (was in mysql-pool#1) +3 more"
    )
    assert lost_text({"lost": []}) is None


def test_a_side_without_traces_diffs_with_its_pipeline_fields_changed() -> None:
    """A fixture from another retriever (evidence blocks only) against one with every
    trace: the absent parts are changes, never regressions, and nothing crashes."""
    c = GoldenCase.from_json(
        make_case("a", query="query for a", expectedRerankTopSource="mysql-pool"), {}
    )
    full = make_fixture("a", [block(1, "mysql-pool")])
    bare = make_fixture("a", [block(1, "other")])
    bare["lookupResult"] = {"evidenceBlocks": bare["lookupResult"]["evidenceBlocks"]}
    before = build_report([score_case(c, Fixture.from_json(full))], [], INPUTS)
    after = build_report([score_case(c, Fixture.from_json(bare))], [], INPUTS)
    for old, new in ((before, after), (after, before)):
        d = diff(old, new)
        validate(d, "diff-report", "diff.json", "diff")
        (case,) = d["cases"]
        changed = {ch["field"]: ch for ch in case["changes"]}
        assert changed["fallbackReasons"]["status"] == "changed"
        assert {changed["evidenceStatus"]["baseline"], changed["evidenceStatus"]["current"]} == {
            "sufficient",
            None,
        }
    # the source lost is a regression either way; the not applicable expectation is not lost
    lost = diff(before, after)["cases"][0]["lost"]
    assert [entry["kind"] for entry in lost] == ["source"]

"""A method's measurements: failure codes that carry no text, measures per depth."""

from __future__ import annotations

from conftest import make_case, make_fixture
from ragsnap.kb.backends import ChunkRef
from ragsnap.models import GoldenCase
from ragsnap.trial.measure import (
    EVIDENCE,
    RANKING,
    TRIAL_MEASURES,
    failure_codes,
    measure_method,
    measure_views,
    trial_measures,
)


def test_failure_codes_leave_sources_and_queries_out() -> None:
    reasons = [
        "hit level weak is below the minimum medium",
        "selected attempt 'unfiltered', expected 'filtered'",
        "fallback reason 'filtered-weak' not among ['no-l0-hint']",
        "fallback reasons ['a'], expected ['b']",
        "context pack lacks expected source(s) ['secret-runbook']",
        "rerank top source 'secret-runbook', expected 'other'",
        "evidence status 'partial', expected 'sufficient'",
        "no-answer case returned 2 evidence block(s)",
        "hit level miss is below the minimum medium",
        "something new",
    ]
    codes = failure_codes(reasons)
    assert codes == [
        "hit-level-below-minimum",
        "selected-attempt",
        "fallback-reason",
        "fallback-reasons",
        "context-sources",
        "rerank-top-source",
        "evidence-status",
        "no-answer-false-positive",
        "other",
    ]
    assert not any("secret" in code for code in codes)


def test_a_deep_ranking_adds_recall_at_its_depth() -> None:
    assert trial_measures(None) == TRIAL_MEASURES == trial_measures(10)
    assert trial_measures(1000) == (*TRIAL_MEASURES, "recall@1000")


def test_each_column_says_which_view_it_read() -> None:
    """With a depth the graded measures read the ranking; spans and rates never do."""
    ranked = measure_views(trial_measures(100), ranked=True)
    assert {m: ranked[m] for m in trial_measures(100)} == dict.fromkeys(
        trial_measures(100), RANKING
    )
    for fixed in ("contextPrecision", "contextRecall", "passRate", "recallAtK"):
        assert ranked[fixed] == EVIDENCE
    assert ranked["noAnswerFalsePositiveRate"] == EVIDENCE
    floored = measure_views(TRIAL_MEASURES, ranked=False)
    assert set(floored.values()) == {EVIDENCE} and "recall@10" in floored


def test_a_measurement_with_rankings_reads_the_ranking_view() -> None:
    case = GoldenCase.from_json(
        make_case(expectedSources=["mysql-pool"], judgments=[{"source": "mysql-pool", "grade": 2}]),
        {},
    )
    lookup = make_fixture("c1")["lookupResult"]
    evidence = measure_method([case], {"c1": lookup}, None, TRIAL_MEASURES)
    ranking = [ChunkRef("mysql-pool#0", "mysql-pool", "mysql-pool")]
    ranked = measure_method([case], {"c1": lookup}, {"c1": ranking}, TRIAL_MEASURES)
    assert evidence.views()["recall@5"] == EVIDENCE
    assert ranked.views()["recall@5"] == RANKING
    # the view is what the number read: the evidence is empty, the ranking holds the answer
    assert evidence.summary()["metrics"]["recall@5"]["mean"] == 0.0
    assert ranked.summary()["metrics"]["recall@5"]["mean"] == 1.0

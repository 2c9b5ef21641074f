"""A method's measurements: failure codes that carry no text, measures per depth."""

from __future__ import annotations

from ragsnap.trial.measure import TRIAL_MEASURES, failure_codes, trial_measures


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

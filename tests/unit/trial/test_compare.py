"""Two trial reports compared: a method's gate status is compared like a measure."""

from __future__ import annotations

import re
from typing import Any

import pytest

from ragsnap.scoring.diff import Tolerances
from ragsnap.trial.compare import diff_trials, render_trial_diff_markdown, trial_diff_lines

SUMMARY = {
    "passRate": 1.0,
    "recallAtK": 1.0,
    "strongHitRate": 1.0,
    "missCount": 0,
    "noAnswerFalsePositiveRate": None,
    "metrics": {"mrr@10": {"mean": 1.0, "cases": 1}},
}


def report(status: str | None) -> dict[str, Any]:
    return {
        "planSha256": "a" * 64,
        "plan": {"methods": [{"name": "hybrid"}], "inputs": {"cases": "x"}},
        "methods": {"hybrid": {"summary": SUMMARY, "status": status}},
        "caseResults": [],
    }


@pytest.mark.parametrize(
    ("before", "after", "change", "regressed"),
    [
        ("admitted", "experimental", "regression", True),
        ("experimental", "admitted", "improvement", False),
        ("experimental", "experimental", "unchanged", False),
        (None, "experimental", "unchanged", False),  # no gates file before: nothing to lose
    ],
)
def test_a_method_that_is_no_longer_admitted_is_a_regression(
    before: str | None, after: str, change: str, regressed: bool
) -> None:
    diff = diff_trials(report(before), report(after), Tolerances(), "base.json")
    assert diff["methods"]["hybrid"]["gateStatus"] == {
        "baseline": before,
        "current": after,
        "status": change,
    }
    assert diff["regressed"] is regressed
    assert diff["counts"]["improvements"] == (change == "improvement")
    lines = trial_diff_lines(diff, 10)
    assert ("  hybrid: admitted -> experimental (its gates no longer all pass)" in lines) is (
        regressed
    )
    row = f"| gate status | {before or 'n/a'} | {after} | {change} |"
    assert row in re.sub(r" +", " ", render_trial_diff_markdown(diff))


@pytest.mark.parametrize(("admitted", "status"), [(True, "admitted"), (False, "experimental")])
def test_a_baseline_written_before_gate_statuses_reads_its_admitted_flag(
    admitted: bool, status: str
) -> None:
    old = report(None)
    del old["methods"]["hybrid"]["status"]
    old["methods"]["hybrid"]["admitted"] = admitted
    diff = diff_trials(old, report("experimental"), Tolerances(), "base.json")
    assert diff["methods"]["hybrid"]["gateStatus"]["baseline"] == status
    assert diff["regressed"] is admitted

"""Discriminative power and swap rates of a trial's measures (ragsnap.audit.discrimination).

A tiny trial report is built here with known answers: three methods A, B, C
over 21 cases (11 dev, 10 test). On ``ndcg@10`` B is A + 0.2 everywhere, C is
A + 0.01 on dev and A - 0.01 on test: A-B and B-C separate and keep their
sign, A-C does not separate and swaps. On ``mrr@10`` A and B are equal and C is
higher on test cases only: A-B is not tested, A-C and B-C separate but tie on
dev, so no pair counts for the swap rate. The rates (every case passes with a
strong hit for every method) never differ.
"""

from __future__ import annotations

import copy
import json
import random
from typing import Any

import pytest

from ragsnap.audit.discrimination import discrimination_markdown, discrimination_section
from ragsnap.scoring.significance import SignificanceSettings, paired_test
from ragsnap.trial.significance import method_tests

SETTINGS = SignificanceSettings(permutations=400, bootstrap=200, seed=3)
METHODS = ("A", "B", "C")


def _entry(metrics: dict[str, float] | None) -> dict[str, Any]:
    return {
        "hitLevel": "strong",
        "passed": True,
        "knownFailure": False,
        "firstExpectedRank": 1,
        "evidenceCount": 3,
        "metrics": metrics,
        "failures": [],
    }


def _trial(methods: tuple[str, ...] = METHODS, splits: tuple[str, ...] = ("dev", "test")) -> Any:
    rng = random.Random(5)
    cases = []
    for i in range(21):
        split = splits[0] if i < 10 or i == 20 else splits[-1]
        base = round(rng.random() * 0.5, 6)
        mrr = round(rng.random() * 0.4, 6)
        on_dev = split == "dev"
        values = {
            "A": {"ndcg@10": base, "mrr@10": mrr},
            "B": {"ndcg@10": round(base + 0.2, 6), "mrr@10": mrr},
            "C": {
                "ndcg@10": round(base + (0.01 if on_dev else -0.01), 6),
                "mrr@10": round(mrr + (0.0 if on_dev else 0.5), 6),
            },
        }
        entries = {m: _entry(values[m]) for m in methods}
        if i == 20 and "C" in entries:  # C has no graded value for this case
            entries["C"] = _entry(None)
        cases.append(
            {
                "id": f"c{i:02d}",
                "split": split,
                "language": "en",
                "category": "db",
                "noAnswer": False,
                "methods": entries,
            }
        )
    summary: dict[str, Any] = {"metrics": {"ndcg@10": {}, "mrr@10": {}, "coverage@10": {}}}
    return {
        "plan": {"methods": [{"name": m} for m in methods]},
        "methods": {m: {"summary": summary} for m in sorted(methods)},
        "caseResults": cases,
    }


def _measure(section: dict[str, Any], name: str) -> dict[str, Any]:
    rows: list[dict[str, Any]] = [m for m in section["measures"] if m["measure"] == name]
    (row,) = rows
    return row


def _pair(measure: dict[str, Any], a: str, b: str) -> dict[str, Any]:
    rows: list[dict[str, Any]] = [r for r in measure["rows"] if (r["a"], r["b"]) == (a, b)]
    (row,) = rows
    return row


def test_pairs_that_separate_and_one_that_swaps() -> None:
    section = discrimination_section(_trial(), SETTINGS)
    ndcg = _measure(section, "ndcg@10")
    assert (ndcg["pairs"], ndcg["tested"], ndcg["separated"]) == (3, 3, 2)
    assert ndcg["discriminativePower"] == 0.666667
    ab, ac, bc = _pair(ndcg, "A", "B"), _pair(ndcg, "A", "C"), _pair(ndcg, "B", "C")
    assert (ab["separated"], ac["separated"], bc["separated"]) == (True, False, True)
    assert ab["cases"] == 21 and ac["cases"] == 20 and bc["cases"] == 20
    assert ab["delta"] == 0.2 and ab["dev"] == {"cases": 11, "delta": 0.2}
    assert ab["test"] == {"cases": 10, "delta": 0.2}
    assert ac["dev"] == {"cases": 10, "delta": 0.01}
    assert ac["test"] == {"cases": 10, "delta": -0.01}
    assert ac["delta"] == 0.0 and ac["p"] == 1.0  # half up, half down: nothing to see
    assert (ab["swapped"], ac["swapped"], bc["swapped"]) == (False, True, False)
    assert (ndcg["comparable"], ndcg["swapped"], ndcg["swapRate"]) == (3, 1, 0.333333)
    assert ndcg["swapReason"] is None


def test_a_pair_that_ties_on_a_split_is_not_counted_for_the_swap_rate() -> None:
    section = discrimination_section(_trial(), SETTINGS)
    mrr = _measure(section, "mrr@10")
    ab, ac = _pair(mrr, "A", "B"), _pair(mrr, "A", "C")
    assert ab["p"] is None and ab["pAdjusted"] is None and ab["separated"] is False
    assert ab["swapped"] is None
    assert ac["separated"] and ac["dev"]["delta"] == 0.0 and ac["test"]["delta"] == 0.5
    assert ac["swapped"] is None
    assert (mrr["tested"], mrr["separated"], mrr["comparable"]) == (2, 2, 0)
    assert mrr["swapRate"] is None
    assert mrr["swapReason"] == "no pair of methods differs on both splits"


def test_rates_that_never_differ_separate_no_pair() -> None:
    section = discrimination_section(_trial(), SETTINGS)
    rate = _measure(section, "passRate")
    assert (rate["tested"], rate["separated"], rate["discriminativePower"]) == (0, 0, 0.0)
    assert all(r["p"] is None and r["swapped"] is None for r in rate["rows"])


def test_p_is_the_trial_reports_own_p_for_the_same_pair() -> None:
    trial = _trial()
    section = discrimination_section(trial, SETTINGS)
    own = method_tests(trial["caseResults"], METHODS, {"ndcg@10", "mrr@10"}, SETTINGS, None)
    assert own is not None
    for row in own["rows"]:
        if row["cases"] == 0:  # no-answer rate: no case has it, skipped by the audit
            continue
        pair = _pair(_measure(section, row["measure"]), row["reference"], row["method"])
        test = row["significance"]
        assert pair["p"] == (None if test is None else test["p"])
        assert pair["delta"] == row["delta"]
    ndcg = _pair(_measure(section, "ndcg@10"), "A", "B")
    values = [
        (c["methods"]["A"]["metrics"]["ndcg@10"], c["methods"]["B"]["metrics"]["ndcg@10"])
        for c in trial["caseResults"]
    ]
    direct = paired_test([a for a, _ in values], [b for _, b in values], SETTINGS, "A\0B\0ndcg@10")
    assert ndcg["p"] == direct.p


def test_correction_is_over_one_measures_pairs() -> None:
    strict = SignificanceSettings(permutations=400, bootstrap=200, seed=3, alpha=0.004)
    ndcg = _measure(discrimination_section(_trial(), strict), "ndcg@10")
    ab = _pair(ndcg, "A", "B")
    assert ab["p"] == round(1 / 401, 6) and ab["separated"]
    # Holm over the 3 tested pairs: the smallest p times 3 is above 0.004
    assert ab["pAdjusted"] == round(3 * ab["p"], 6) and not ab["separatedAdjusted"]
    assert (ndcg["separated"], ndcg["separatedAdjusted"]) == (2, 0)
    assert ndcg["discriminativePowerAdjusted"] == 0.0


def test_order_skipped_measures_and_recommendation() -> None:
    section = discrimination_section(_trial(), SETTINGS)
    names = [m["measure"] for m in section["measures"]]
    # by separated pairs (mrr 2, ndcg 2, rates 0), ties by name
    assert names == ["mrr@10", "ndcg@10", "passRate", "recallAtK", "strongHitRate"]
    assert section["skipped"] == [
        {"measure": "noAnswerFalsePositiveRate", "reason": "no case of the trial has a value of it"}
    ]
    # ndcg swaps once, mrr's swap rate is unknown: neither is recommended
    assert section["recommended"] == []
    assert section["cases"] == {"dev": 11, "test": 10}
    assert section["methods"] == ["A", "B", "C"] and section["pairs"] == 3


def test_recommends_a_measure_that_separates_and_never_swaps() -> None:
    section = discrimination_section(_trial(methods=("A", "B")), SETTINGS)
    assert section["recommended"] == ["ndcg@10"]
    lines = discrimination_markdown(section)
    assert lines[-2] == ("Gate on the measures that separate methods and do not swap: `ndcg@10`.")


def test_json_shape() -> None:
    section = discrimination_section(_trial(), SETTINGS)
    assert set(section) == {
        "settings",
        "methods",
        "pairs",
        "cases",
        "reason",
        "measures",
        "skipped",
        "recommended",
    }
    assert section["settings"] == {
        "permutations": 400,
        "bootstrap": 200,
        "seed": 3,
        "alpha": 0.05,
        "correction": "holm",
    }
    measure = _measure(section, "ndcg@10")
    assert set(measure) == {
        "measure",
        "pairs",
        "tested",
        "separated",
        "discriminativePower",
        "separatedAdjusted",
        "discriminativePowerAdjusted",
        "comparable",
        "swapped",
        "swapRate",
        "swapReason",
        "rows",
    }
    assert set(measure["rows"][0]) == {
        "a",
        "b",
        "cases",
        "delta",
        "p",
        "pAdjusted",
        "separated",
        "separatedAdjusted",
        "dev",
        "test",
        "swapped",
    }
    assert json.loads(json.dumps(section)) == section


def test_one_method_is_not_measured() -> None:
    section = discrimination_section(_trial(methods=("A",)), SETTINGS)
    assert section["measures"] == [] and section["pairs"] == 0
    assert section["reason"].startswith("the trial compared 1 method(s)")
    assert discrimination_markdown(section)[2].startswith("Not measured: the trial compared 1")


def test_no_dev_split_leaves_the_swap_rate_unknown() -> None:
    section = discrimination_section(_trial(splits=("test",)), SETTINGS)
    ndcg = _measure(section, "ndcg@10")
    # every case is a test case, so C is A - 0.01 everywhere: all three pairs separate
    assert ndcg["separated"] == 3
    assert ndcg["swapRate"] is None and ndcg["comparable"] == 0
    assert ndcg["swapReason"].startswith("the trial ran no dev case")
    assert section["cases"] == {"dev": 0, "test": 21}
    assert section["recommended"] == []
    assert discrimination_markdown(section)[-2].startswith("No measure both separates")


def test_measures_filter() -> None:
    section = discrimination_section(_trial(), SETTINGS, measures=["ndcg@10"])
    assert [m["measure"] for m in section["measures"]] == ["ndcg@10"]
    assert section["skipped"] == []
    with pytest.raises(ValueError, match=r"coverage@10 not tested in this trial; use one of"):
        discrimination_section(_trial(), SETTINGS, measures=["coverage@10"])


def test_markdown_table() -> None:
    lines = discrimination_markdown(discrimination_section(_trial(), SETTINGS))
    text = "\n".join(lines)
    assert lines[0] == "## Discriminative power"
    assert "| measure " in text and "| discriminative power " in text
    assert "| ndcg@10 " in text and "66.7%" in text and "33.3%" in text
    assert "- `noAnswerFalsePositiveRate` not audited" in text


def test_same_bytes_twice_and_under_tiny_perturbations() -> None:
    trial = _trial()
    first = json.dumps(discrimination_section(trial, SETTINGS), sort_keys=True)
    assert json.dumps(discrimination_section(trial, SETTINGS), sort_keys=True) == first
    moved = copy.deepcopy(trial)
    rng = random.Random(11)
    for case in moved["caseResults"]:
        for entry in case["methods"].values():
            for name, value in (entry["metrics"] or {}).items():
                entry["metrics"][name] = value + rng.uniform(-9e-8, 9e-8)
    assert moved != trial
    assert json.dumps(discrimination_section(moved, SETTINGS), sort_keys=True) == first
    moved_order = copy.deepcopy(trial)
    moved_order["methods"] = dict(reversed(list(trial["methods"].items())))
    assert json.dumps(discrimination_section(moved_order, SETTINGS), sort_keys=True) == first

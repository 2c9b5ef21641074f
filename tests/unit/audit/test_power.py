"""The minimum detectable effect: checked against simulated regressions run through
the diff's real paired test, and on the example project's baseline report."""

from __future__ import annotations

import copy
import json
import math
from typing import Any

import numpy as np
import pytest

from conftest import REPO
from ragsnap.audit.power import (
    MODEL,
    cases_needed,
    detection_power,
    loss_share,
    minimum_detectable_effect,
    population,
    power_markdown,
    power_section,
)
from ragsnap.scoring import diff
from ragsnap.scoring.significance import SignificanceSettings, paired_test

SETTINGS = SignificanceSettings()
BASELINE = REPO / "reports" / "baseline.json"
#: simulated regressions per check, and the tolerance of the detection rate around 0.8
SIMULATIONS = 500
TOLERANCE = 0.065


def values_for(kind: str, n: int, seed: int) -> np.ndarray[Any, Any]:
    """Per-case values of a metric: a hit rate (0/1, 80% hits), a graded mean (beta(2, 2)
    with 15% zeros, six decimals), or a lower-is-better rate (20% false positives)."""
    rng = np.random.default_rng(seed)
    if kind == "binary":
        return (rng.random(n) < 0.8).astype(np.float64)
    if kind == "graded":
        graded = rng.beta(2.0, 2.0, n) * (rng.random(n) < 0.85)
        return np.asarray(np.round(graded, 6), dtype=np.float64)
    return (rng.random(n) < 0.2).astype(np.float64)


def detection_rate(
    values: np.ndarray[Any, Any],
    q: float,
    *,
    lower: bool = False,
    churn: np.ndarray[Any, Any] | None = None,
    seed: int = 0,
    settings: SignificanceSettings = SETTINGS,
) -> float:
    """The share of ``SIMULATIONS`` regressions the real ``paired_test`` calls
    significant: each case loses its room with probability ``q`` (drops to the worst
    value); with ``churn``, every other case moves by a churn draw with a random sign."""
    rng = np.random.default_rng(seed)
    worst = 1.0 if lower else 0.0
    detected = 0
    for run in range(SIMULATIONS):
        lost = rng.random(len(values)) < q
        current = values
        if churn is not None:
            moves = rng.choice(churn, len(values)) * rng.choice([-1.0, 1.0], len(values))
            current = values + moves
        current = np.where(lost, worst, current)
        # a new random stream per regression (as a diff of another row would use)
        result = paired_test(values, current, settings, f"simulated\0{run}")
        detected += result.significant(settings.alpha)
    return detected / SIMULATIONS


@pytest.mark.parametrize("cases", [30, 200, 1000])
@pytest.mark.parametrize("kind", ["binary", "graded", "lower"])
def test_detection_rate_at_the_reported_mde_is_the_target_power(kind: str, cases: int) -> None:
    """THE SIMULATION CHECK: inject regressions of the reported MDE's size (each case
    loses its value with the MDE's loss share) and run each through the real
    ``paired_test``: the share detected is 0.8 +- 0.065.

    The tolerance: the model is exact for this regression (the rejection
    probability of k same-sign changes is computed, not approximated), so the only
    error is the simulation's own: a proportion near 0.8 over 500 regressions has a
    standard error of sqrt(0.8 * 0.2 / 500) = 0.018, and 0.065 is 3.6 of them (a
    correct formula fails this by chance in < 0.05% of seeds; the seeds are fixed).
    A normal approximation of the sign-flip test (which takes 4 changed cases as
    enough at alpha 0.05 where the test needs 6) fails all nine checks.
    Measured with these seeds: 0.778 to 0.834 (0.787 over 5000 regressions, binary, 30).
    """
    lower = kind == "lower"
    values = values_for(kind, cases, seed=cases)
    pop = population(values.tolist(), lower_is_better=lower)
    q = loss_share(pop, SETTINGS)
    mde = minimum_detectable_effect(pop, SETTINGS)
    assert q is not None and mde is not None
    assert mde == pytest.approx(q * pop.room_mean)
    rate = detection_rate(values, q, lower=lower, seed=cases + 1)
    assert abs(rate - 0.8) <= TOLERANCE, (kind, cases, q, rate)


@pytest.mark.parametrize(
    "settings",
    [SignificanceSettings(alpha=0.01, permutations=2000), SignificanceSettings(permutations=20)],
)
def test_the_simulation_agrees_at_other_settings(settings: SignificanceSettings) -> None:
    """The same check at alpha 0.01 (the test needs 8 changes) and with only 20 sign
    flips (where the reported p itself is noisy), binary, 200 cases."""
    values = values_for("binary", 200, seed=8)
    q = loss_share(population(values.tolist()), settings)
    assert q is not None
    rate = detection_rate(values, q, seed=9, settings=settings)
    assert abs(rate - 0.8) <= TOLERANCE, (settings, q, rate)


@pytest.mark.parametrize("cases", [30, 200, 1000])
@pytest.mark.parametrize("kind", ["binary", "graded"])
def test_with_churn_the_detection_rate_is_near_the_target(kind: str, cases: int) -> None:
    """With churn the power is approximated (normal approximation with the delta method,
    capped by the exact no-churn power; module docstring). At the reported MDE the real
    test detects 0.8 - 0.065 to 0.8 + 0.12 of the regressions: the same lower tolerance
    as above (the approximation must not over-promise), a wider upper one because the
    cap is conservative by design where few cases change. Measured: binary (20% of
    cases churn by 1) 0.78 / 0.83 / 0.77, graded (30% churn, sd 0.1) 0.90 / 0.77 / 0.81
    at 30 / 200 / 1000 cases."""
    values = values_for(kind, cases, seed=cases)
    rng = np.random.default_rng(cases + 7)
    if kind == "binary":
        churn = np.where(rng.random(cases) < 0.2, 1.0, 0.0)
    else:
        churn = np.round(np.where(rng.random(cases) < 0.3, rng.normal(0.0, 0.1, cases), 0.0), 6)
    pop = population(values.tolist(), churn=churn.tolist())
    assert pop.churn[0] > 0
    q = loss_share(pop, SETTINGS)
    assert q is not None
    # churn makes a drop harder to see than without it
    assert q >= (loss_share(population(values.tolist()), SETTINGS) or 0.0)
    rate = detection_rate(values, q, churn=churn, seed=cases + 8)
    assert 0.8 - TOLERANCE <= rate <= 0.92, (cases, q, rate)


def test_the_exact_power_steps_at_six_changed_cases() -> None:
    """At alpha 0.05 and 1000 sign flips the test needs 6 same-sign changes (p = 2/2**k):
    30 cases of which exactly 5 or 6 can lose their value."""
    five = population([1.0] * 5 + [0.0] * 25)
    six = population([1.0] * 6 + [0.0] * 24)
    assert detection_power(five, 1.0, SETTINGS) < 0.05
    assert detection_power(six, 1.0, SETTINGS) > 0.99
    assert minimum_detectable_effect(five, SETTINGS) is None
    mde = minimum_detectable_effect(six, SETTINGS)
    assert mde is not None and 0.9 * 6 / 30 < mde <= 6 / 30
    # the real test agrees: 6 lost hits are significant, 5 are not
    for lost, significant in ((5, False), (6, True)):
        before = [1.0] * 6 + [0.0] * 24
        after = [0.0] * lost + [1.0] * (6 - lost) + [0.0] * 24
        assert paired_test(before, after, SETTINGS, "all\0recallAtK").significant(0.05) is (
            significant
        )


@pytest.mark.parametrize("kind", ["binary", "graded"])
@pytest.mark.parametrize("drop", [0.02, 0.05])
def test_cases_needed_agrees_with_the_mde(kind: str, drop: float) -> None:
    """MDE(n_needed) <= drop < MDE(n_needed - 1), for the population scaled as
    ``cases_needed`` scales it (the same room distribution)."""
    pop = population(values_for(kind, 60, seed=3).tolist())
    needed = cases_needed(pop, drop, SETTINGS)
    assert needed is not None and needed > 60
    at = minimum_detectable_effect(pop.scaled(needed), SETTINGS)
    below = minimum_detectable_effect(pop.scaled(needed - 1), SETTINGS)
    assert at is not None and at <= drop + 1e-12
    assert below is None or below > drop


def test_cases_needed_with_churn_agrees_with_the_mde() -> None:
    values = values_for("graded", 60, seed=4)
    churn = [0.0, 0.05, -0.1, 0.0, 0.2, 0.0]
    pop = population(values.tolist(), churn=churn)
    needed = cases_needed(pop, 0.02, SETTINGS)
    assert needed is not None
    at = minimum_detectable_effect(pop.scaled(needed), SETTINGS)
    below = minimum_detectable_effect(pop.scaled(needed - 1), SETTINGS)
    assert at is not None and at <= 0.02 + 1e-12
    assert below is None or below > 0.02
    assert needed > (cases_needed(population(values.tolist()), 0.02, SETTINGS) or 0)


def load_baseline() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(BASELINE.read_text(encoding="utf-8"))
    return data


def test_the_example_projects_report_has_a_row_per_testable_metric() -> None:
    report = load_baseline()
    section = power_section(report, SETTINGS, baseline=report)
    assert section["model"] == MODEL
    assert section["settings"] == {"alpha": 0.05, "permutations": 1000, "power": 0.8, "drop": 0.02}
    assert section["baselineCases"] == len(report["cases"])
    summary = report["summary"]
    expected = [
        m
        for m in (
            "passRate",
            "recallAtK",
            "strongHitRate",
            "missCount",
            "noAnswerFalsePositiveRate",
            *summary["metrics"],
        )
        if diff.testable(m)
    ]
    overall = [row for row in section["rows"] if row["scope"] == "all"]
    assert [row["metric"] for row in overall] == expected
    assert "missCount" not in expected and "coverage@10" not in expected
    splits = sorted(report["groups"]["split"])
    assert {row["scope"] for row in section["rows"]} == {"all", *(f"split={s}" for s in splits)}
    for row in overall:
        metric = row["metric"]
        mean = summary[metric] if metric in summary else summary["metrics"][metric]["mean"]
        assert row["mean"] == pytest.approx(mean, abs=1e-6)
        cases = summary["metrics"][metric]["cases"] if metric in summary["metrics"] else None
        if cases is not None:
            assert row["cases"] == cases
        # baseline == current: no churn, the exact formula
        assert row["churn"] == 0.0 and row["method"] == "exact"
        if row["mde"] is not None:
            room = 1 - row["mean"] if row["direction"] == "lower" else row["mean"]
            assert 0.02 < row["mde"] <= room + 1e-6  # 25-30 cases cannot see 2 pp
            assert row["casesNeeded"] > row["cases"]
    recall = next(row for row in overall if row["metric"] == "recallAtK")
    assert recall["cases"] == summary["answerable"] == 25
    assert 0.2 < recall["mde"] < 0.4
    fp = next(row for row in overall if row["metric"] == "noAnswerFalsePositiveRate")
    assert fp["cases"] == 5 and fp["mde"] is None and "4 case(s)" in fp["mdeReason"]
    json.dumps(section, allow_nan=False)  # JSON-ready


def test_markdown_explains_and_advises() -> None:
    report = load_baseline()
    lines = power_markdown(power_section(report, SETTINGS))
    text = "\n".join(lines)
    assert lines[0] == "## Minimum detectable effect"
    assert "smallest drop" in text and "add cases" in text
    assert "| all" in text and "| split=dev" in text
    assert "- recallAtK: MDE" in text and "add " in text and "to detect 2.0 pp" in text


def test_section_is_deterministic_and_ignores_perturbations_below_a_millionth() -> None:
    """Byte-identical JSON across calls and when every per-case value moves by < 1e-7
    (values are read as whole millionths, as the diff reads them)."""
    report = load_baseline()
    first = json.dumps(power_section(report, SETTINGS, baseline=report), sort_keys=True)
    assert json.dumps(power_section(report, SETTINGS, baseline=report), sort_keys=True) == first
    nudged = copy.deepcopy(report)
    rng = np.random.default_rng(5)
    for case in nudged["cases"]:
        for name, value in (case["metrics"] or {}).items():
            if value is not None:
                case["metrics"][name] = value + float(rng.uniform(-9e-8, 9e-8))
    again = json.dumps(power_section(nudged, SETTINGS, baseline=report), sort_keys=True)
    assert again == first


def case(case_id: str, *, hit: str | None = "strong", no_answer: bool = False) -> dict[str, Any]:
    return {
        "id": case_id,
        "split": "test",
        "passed": hit != "miss",
        "noAnswer": no_answer,
        "hitLevel": None if no_answer else hit,
        "fixture": "present",
        "evidenceCount": 0 if no_answer else 1,
        "metrics": None if no_answer else {"ndcg@10": 0.0 if hit == "miss" else 0.5},
    }


def report_of(cases: list[dict[str, Any]]) -> dict[str, Any]:
    return {"cases": cases, "summary": {"metrics": {"ndcg@10": {}}}, "groups": {}}


def rows(section: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The overall rows by metric."""
    return {row["metric"]: row for row in section["rows"] if row["scope"] == "all"}


def test_edge_cases_are_null_with_a_reason() -> None:
    # every case at the worst value: nothing to lose
    worst = rows(power_section(report_of([case(f"c{i}", hit="miss") for i in range(40)]), SETTINGS))
    for metric in ("recallAtK", "ndcg@10", "passRate"):
        assert worst[metric]["mde"] is None and worst[metric]["casesNeeded"] is None
        assert "worst value" in worst[metric]["mdeReason"]
        assert "worst value" in worst[metric]["casesNeededReason"]
    # no no-answer cases: the false-positive rate has no value
    fp = worst["noAnswerFalsePositiveRate"]
    assert fp["cases"] == 0 and fp["mean"] is None and fp["mde"] is None
    assert fp["mdeReason"] == "no case has a value"
    # one case: too few to detect anything, but cases needed is finite
    one = rows(power_section(report_of([case("c1")]), SETTINGS))["recallAtK"]
    assert one["cases"] == 1 and one["mde"] is None and "1 case(s)" in one["mdeReason"]
    assert one["casesNeeded"] is not None and one["casesNeededReason"] is None
    # a drop larger than the metric can show
    big = rows(power_section(report_of([case("c1")]), SETTINGS, drop=0.6))["ndcg@10"]
    assert big["casesNeeded"] is None and "at most 0.5" in big["casesNeededReason"]
    # too few permutations for any p below alpha
    few = rows(
        power_section(
            report_of([case(f"c{i}") for i in range(40)]), SignificanceSettings(permutations=19)
        )
    )["recallAtK"]
    assert few["mde"] is None and "permutations" in few["mdeReason"]


def test_more_cases_detect_smaller_drops() -> None:
    small = population(values_for("binary", 50, seed=1).tolist())
    mdes = [minimum_detectable_effect(small.scaled(n), SETTINGS) for n in (50, 200, 1000, 10_000)]
    assert all(m is not None for m in mdes)
    assert mdes == sorted(mdes, reverse=True)  # type: ignore[type-var]


def test_bad_settings_are_refused() -> None:
    report = load_baseline()
    with pytest.raises(ValueError, match="power"):
        power_section(report, SETTINGS, power=1.0)
    with pytest.raises(ValueError, match="drop"):
        power_section(report, SETTINGS, drop=0.0)


def test_churn_from_a_baseline_widens_the_mde() -> None:
    """A baseline whose cases differ from the report's: the differences are churn, the
    power is approximated (``normal``), and more cases are needed than without churn
    (at 25 cases the exact cap binds, so the MDE itself is no smaller)."""
    report = load_baseline()
    older = copy.deepcopy(report)
    for index, row in enumerate(older["cases"]):
        if index % 3 == 0 and row["metrics"] is not None:
            row["metrics"]["ndcg@10"] = max(0.0, row["metrics"]["ndcg@10"] - 0.2)
    plain = rows(power_section(report, SETTINGS))["ndcg@10"]
    churned = rows(power_section(report, SETTINGS, baseline=older))["ndcg@10"]
    assert plain["method"] == "exact" and plain["churn"] is None and plain["churnCases"] is None
    assert churned["method"] == "normal" and churned["churnCases"] == 25
    assert churned["churn"] > 0.05
    assert churned["mde"] >= plain["mde"]
    assert churned["casesNeeded"] > plain["casesNeeded"]


def test_the_normal_cdf_needs_no_libm() -> None:
    """The series CDF (basic IEEE arithmetic only) agrees with ``math.erf``."""
    from ragsnap.audit.power import _normal_cdf, _normal_quantile

    for step in range(-900, 901, 7):
        x = step / 100
        assert _normal_cdf(x) == pytest.approx(0.5 * (1 + math.erf(x / math.sqrt(2))), abs=1e-12)
    assert _normal_quantile(0.975) == pytest.approx(1.959964, abs=1e-6)

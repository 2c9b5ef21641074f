"""Paired permutation test and bootstrap interval (ragsnap.scoring.significance)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from ragsnap.scoring import significance
from ragsnap.scoring.significance import SignificanceSettings, paired_test

SETTINGS = SignificanceSettings(permutations=500, bootstrap=500)


def _values(n: int, shift: float, seed: int) -> tuple[list[float], list[float]]:
    rng = random.Random(seed)
    before = [round(rng.random(), 6) for _ in range(n)]
    after = [round(min(1.0, max(0.0, b + shift + rng.gauss(0, 0.05))), 6) for b in before]
    return before, after


def _reference(
    before: list[float], after: list[float], settings: SignificanceSettings, name: str
) -> tuple[float, float, float]:
    """The same test with Python integers only (no BLAS, no float sums), for a set
    where most cases changed (the bootstrap's dense path)."""
    diffs = [
        round(a * 1_000_000) - round(b * 1_000_000) for b, a in zip(before, after, strict=True)
    ]
    nonzero = [d for d in diffs if d]
    n, k, total = len(diffs), len(nonzero), sum(nonzero)
    assert 8 * k > n
    key = significance._stream_key(settings.seed, name)
    hits = 0
    for row in range(settings.permutations):
        raw = significance._words(key, row, 1, -(-k // 64))[0]
        bits = [(int(raw[i // 64]) >> (i % 64)) & 1 for i in range(k)]
        flipped = sum(d for d, bit in zip(nonzero, bits, strict=True) if bit)
        hits += abs(total - 2 * flipped) >= abs(total)
    boot_key = significance._stream_key(settings.seed, "bootstrap\0" + name)
    sums = []
    for row in range(settings.bootstrap):
        raw = significance._words(boot_key, row, 1, -(-n // 2))[0]
        draws = [(int(raw[i // 2]) >> (32 * (i % 2))) & 0xFFFFFFFF for i in range(n)]
        sums.append(sum(diffs[(d * n) >> 32] for d in draws))
    sums.sort()
    tail = int(settings.alpha / 2 * settings.bootstrap)
    p = (hits + 1) / (settings.permutations + 1)
    low = sums[tail] / n / 1_000_000
    high = sums[settings.bootstrap - 1 - tail] / n / 1_000_000
    return round(p, 6), round(low, 6), round(high, 6)


def test_matches_an_integer_only_reference() -> None:
    """Matrix products and sums cannot change a result: they are exact on integers."""
    before, after = _values(150, -0.01, seed=3)
    got = paired_test(before, after, SETTINGS, "all\0ndcg@10")
    assert (got.p, got.low, got.high) == _reference(before, after, SETTINGS, "all\0ndcg@10")


def test_independent_of_summation_order(monkeypatch: pytest.MonkeyPatch) -> None:
    """Sum in another order, as another BLAS build or thread split would: the result
    does not move, because every partial sum is an exact integer."""
    before, after = _values(300, -0.02, seed=5)
    expected = paired_test(before, after, SETTINGS, "x")

    def reversed_dot(matrix: np.ndarray, vector: np.ndarray) -> np.ndarray:  # type: ignore[type-arg]
        half = matrix.shape[1] // 2
        tail = matrix[:, half:][:, ::-1] @ vector[half:][::-1]
        return tail + np.einsum("ij,j->i", matrix[:, :half], vector[:half])

    def reversed_rows(matrix: np.ndarray) -> np.ndarray:  # type: ignore[type-arg]
        out = np.zeros(matrix.shape[0])
        for column in range(matrix.shape[1] - 1, -1, -1):
            out += matrix[:, column]
        return out

    monkeypatch.setattr(significance, "_dot", reversed_dot)
    monkeypatch.setattr(significance, "_row_sums", reversed_rows)
    assert paired_test(before, after, SETTINGS, "x") == expected


def test_few_changed_cases_resample_like_the_full_bootstrap() -> None:
    """With few changed cases a resample draws only where it lands on them: the
    interval matches the full resampling's (another stream, so within noise)."""
    rng = random.Random(9)
    n = 3000
    before = [0.5] * n
    after = list(before)
    for i in rng.sample(range(n), 120):
        after[i] = round(0.5 + rng.gauss(-0.2, 0.2), 6)
    settings = SignificanceSettings(permutations=10, bootstrap=4000)
    sparse = paired_test(before, after, settings, "s")
    diffs = np.rint((np.asarray(after) - np.asarray(before)) * 1_000_000)
    dense = significance._bootstrap_sums(diffs, np.ones(n), settings, 77) / n / 1_000_000
    assert sparse.low == pytest.approx(dense[100], abs=4e-4)
    assert sparse.high == pytest.approx(dense[3899], abs=4e-4)


def test_same_numbers_every_run_and_per_name_streams() -> None:
    before, after = _values(200, 0.0, seed=1)
    a = paired_test(before, after, SETTINGS, "all\0mrr@10")
    assert paired_test(before, after, SETTINGS, "all\0mrr@10") == a
    assert paired_test(before, after, SETTINGS, "split=dev\0mrr@10") != a


def test_clear_shift_is_significant_and_interval_covers_it() -> None:
    before, after = _values(400, -0.03, seed=2)
    result = paired_test(before, after, SETTINGS, "n")
    assert result.significant(0.05) and result.p == round(1 / 501, 6)
    assert result.low < -0.03 + 0.01 and result.high < 0 and result.low < result.high


def test_no_shift_is_not_significant() -> None:
    before, after = _values(400, 0.0, seed=4)
    result = paired_test(before, after, SETTINGS, "n")
    assert not result.significant(0.05)
    assert result.low < 0 < result.high
    same = paired_test(before, before, SETTINGS, "n")
    assert (same.p, same.low, same.high) == (1.0, 0.0, 0.0)


def test_one_case_cannot_be_significant() -> None:
    result = paired_test([1.0], [0.0], SETTINGS, "n")
    assert result.p == 1.0 and result.cases == 1


def test_rejects_unpaired_values() -> None:
    with pytest.raises(ValueError, match="equally long"):
        paired_test([0.1, 0.2], [0.1], SETTINGS, "n")


def test_holm_bonferroni_and_none_adjust_one_family() -> None:
    ps = [0.01, 0.04, 0.03, 0.005]
    # sorted 0.005, 0.01, 0.03, 0.04: x4, x3, x2, x1, then a running maximum
    assert significance.adjust_p(ps, "holm") == [0.03, 0.06, 0.06, 0.02]
    assert significance.adjust_p(ps, "bonferroni") == [0.04, 0.16, 0.12, 0.02]
    assert significance.adjust_p(ps, "none") == ps
    assert significance.adjust_p([0.5, 0.5, 0.5], "holm") == [1.0, 1.0, 1.0]  # capped at 1
    assert significance.adjust_p([], "holm") == []
    # ties keep one value whatever their order
    assert significance.adjust_p([0.02, 0.01, 0.02], "holm") == [0.04, 0.03, 0.04]


def test_an_unknown_correction_is_refused() -> None:
    assert SignificanceSettings().correction == "holm"
    assert SignificanceSettings().to_json()["correction"] == "holm"
    with pytest.raises(ValueError, match="unknown correction 'sidak'; use one of holm"):
        SignificanceSettings(correction="sidak")

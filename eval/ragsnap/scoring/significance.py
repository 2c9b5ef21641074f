"""Is an aggregate change more than noise? Paired tests over per-case values.

Pure functions. An aggregate the diff compares (a graded metric's mean, a rate)
is the mean of one value per case, so a baseline and a current report that
share cases give one paired difference per case. Two tests read them, as
ranx's ``compare`` does for runs:

* a **paired randomization (permutation) test**: under "no difference" each
  case's sign is arbitrary, so the observed mean difference is compared with
  the mean differences of ``permutations`` random sign flips; ``p`` is the
  two-sided share at least as extreme, ``(hits + 1) / (permutations + 1)``;
* a **paired bootstrap** confidence interval of the mean difference: the cases
  are resampled with replacement ``bootstrap`` times and the interval is the
  ``alpha / 2`` and ``1 - alpha / 2`` percentiles of the resampled means.

Machine independence: report values carry six decimals, so every difference is
taken as an integer number of millionths and every sum is exact (float64
matrix products of integers below 2**53, which no summation order or BLAS build
can change). The random numbers come from SplitMix64 over a counter, computed
with numpy's wrapping uint64 arithmetic, seeded by the configured seed and the
row's name: the same bits on every machine and numpy version.

**Multiple testing.** One diff tests every aggregate row that moved beyond its
noise floor (each metric, overall and per category, language and split), so
some rows would pass ``p < alpha`` by chance alone. ``adjust_p`` corrects the
``m`` p-values of the rows one diff actually tested, as one family
(``diff.significance.correction`` in ragsnap.yaml):

* ``holm`` (the default): Holm's step-down rule. Sort the p-values ascending,
  ``p(1) <= ... <= p(m)`` (ties in row order); the adjusted value of the
  ``i``-th is ``max over j <= i of min(1, (m - j + 1) * p(j))``. It controls the
  family-wise error rate like Bonferroni and is never less powerful;
* ``bonferroni``: ``min(1, m * p)``;
* ``none``: ``p`` as it is.

A row is significant when its *adjusted* p is below ``alpha``; the diff report
keeps both (``p`` and ``pAdjusted``). The adjusted values are rounded to six
decimals like every reported number, and are the same on every machine (a
product and a running maximum of the already rounded ``p``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = [
    "CORRECTIONS",
    "SignificanceSettings",
    "TestResult",
    "adjust_p",
    "binomial_weights",
    "paired_test",
]

#: report values are rounded to six decimals; differences are counted in millionths
_SCALE = 1_000_000
#: random rows drawn per block, so memory stays near ``_BLOCK x cases`` numbers
_BLOCK = 128
_GOLDEN = 0x9E3779B97F4A7C15


@dataclass(frozen=True, slots=True)
class SignificanceSettings:
    """How the diff tests aggregate changes (``diff.significance`` in ragsnap.yaml)."""

    permutations: int = 1000
    bootstrap: int = 1000
    seed: int = 0
    alpha: float = 0.05
    #: an aggregate drop fails the run only when significant (case regressions always fail)
    require: bool = False
    #: the multiple-testing correction over the rows one diff tests (``CORRECTIONS``)
    correction: str = "holm"

    def __post_init__(self) -> None:
        if self.correction not in CORRECTIONS:
            raise ValueError(
                f"unknown correction {self.correction!r}; use one of {', '.join(CORRECTIONS)}"
            )

    def to_json(self) -> dict[str, object]:
        """camelCase form for the diff report."""
        return {
            "permutations": self.permutations,
            "bootstrap": self.bootstrap,
            "seed": self.seed,
            "alpha": self.alpha,
            "require": self.require,
            "correction": self.correction,
        }


@dataclass(frozen=True, slots=True)
class TestResult:
    """One paired comparison: how many cases, the two-sided p, the interval."""

    cases: int
    p: float
    low: float
    high: float

    def significant(self, alpha: float) -> bool:
        """Whether ``p`` is below ``alpha``."""
        return self.p < alpha

    def to_json(self) -> dict[str, object]:
        """The diff report's form (the interval as ``[low, high]``)."""
        return {"cases": self.cases, "p": self.p, "ci": [self.low, self.high]}


def _holm(ps: Sequence[float]) -> list[float]:
    m = len(ps)
    order = sorted(range(m), key=lambda i: (ps[i], i))
    out = [0.0] * m
    running = 0.0
    for step, i in enumerate(order):
        running = max(running, min(1.0, (m - step) * ps[i]))
        out[i] = running
    return out


def _bonferroni(ps: Sequence[float]) -> list[float]:
    return [min(1.0, len(ps) * p) for p in ps]


def _uncorrected(ps: Sequence[float]) -> list[float]:
    return list(ps)


#: the multiple-testing corrections by name (``diff.significance.correction``)
CORRECTIONS: dict[str, Callable[[Sequence[float]], list[float]]] = {
    "holm": _holm,
    "bonferroni": _bonferroni,
    "none": _uncorrected,
}


def adjust_p(ps: Sequence[float], correction: str) -> list[float]:
    """The p-values of one family of tests, adjusted by ``correction`` (``holm``,
    ``bonferroni`` or ``none``; see the module docstring), rounded to six decimals,
    in the order given."""
    return [round(p, 6) for p in CORRECTIONS[correction](ps)]


def _mix(counter: NDArray[np.uint64]) -> NDArray[np.uint64]:
    """SplitMix64's output function, elementwise (wrapping uint64 arithmetic)."""
    import numpy as np

    z = counter * np.uint64(_GOLDEN)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    out: NDArray[np.uint64] = z ^ (z >> np.uint64(31))
    return out


def _stream_key(seed: int, name: str) -> int:
    digest = hashlib.sha256(f"{seed}\0{name}".encode()).digest()
    return int.from_bytes(digest[:8], "little")


def _words(key: int, start: int, rows: int, width: int) -> NDArray[np.uint64]:
    """``rows x width`` random words: row ``start + i``, column ``j`` of stream ``key``."""
    import numpy as np

    with np.errstate(over="ignore"):
        counter = np.uint64((key + start * width) % 2**64) + np.arange(
            rows * width, dtype=np.uint64
        )
        return _mix(counter).reshape(rows, width)


def _dot(matrix: NDArray[np.float64], vector: NDArray[np.float64]) -> NDArray[np.float64]:
    """Matrix-vector product (BLAS: any order gives the same exact integers)."""
    return matrix @ vector


def _row_sums(matrix: NDArray[np.float64]) -> NDArray[np.float64]:
    """Sum of each row (pairwise or not: exact on integers)."""
    sums: NDArray[np.float64] = matrix.sum(axis=1)
    return sums


def binomial_weights(n: int, q: float) -> tuple[int, list[float], float]:
    """(lowest value, relative weights, their sum) of Binomial(n, q) where it is not
    negligible (a weight below 1e-18 of the mode's): built from the mode with
    multiplications and divisions only (IEEE arithmetic, the same bits everywhere; no
    libm ``exp`` or ``lgamma``). ``0 < q < 1``; the probability of value ``low + i`` is
    ``weights[i] / total``."""
    mode = min(n, int((n + 1) * q))
    odds = q / (1.0 - q)
    up, weight = [], 1.0
    for j in range(mode, n):
        weight = weight * (n - j) / (j + 1) * odds
        if weight < 1e-18:
            break
        up.append(weight)
    down, weight = [], 1.0
    for j in range(mode, 0, -1):
        weight = weight * j / (n - j + 1) / odds
        if weight < 1e-18:
            break
        down.append(weight)
    weights = [*reversed(down), 1.0, *up]
    total = 0.0
    for w in weights:
        total += w
    return mode - len(down), weights, total


def _binomial_cdf(n: int, q: float) -> tuple[int, list[float]]:
    """(lowest value, cumulative probabilities) of Binomial(n, q) where it is not
    negligible (``binomial_weights``)."""
    low, weights, total = binomial_weights(n, q)
    cdf, running = [], 0.0
    for w in weights:
        running += w
        cdf.append(running / total)
    return low, cdf


def _uniforms(words: NDArray[np.uint64]) -> NDArray[np.float64]:
    """Doubles in [0, 1) from the top 53 bits of each word (exact)."""
    import numpy as np

    out: NDArray[np.float64] = (words >> np.uint64(11)).astype(np.float64) * 2.0**-53
    return out


def _picks(key: int, start: int, count: int, among: int) -> NDArray[np.intp]:
    """``count`` indices in ``0..among-1``, two 32-bit draws per word, mapped by
    multiply-shift (no division)."""
    import numpy as np

    draws = _words(key, start, 1, -(-count // 2)).astype("<u8").view("<u4")[0, :count]
    picks: NDArray[np.intp] = (
        (draws.astype(np.uint64) * np.uint64(among)) >> np.uint64(32)
    ).astype(np.intp)
    return picks


def _permutation_p(nonzero: NDArray[np.float64], settings: SignificanceSettings, key: int) -> float:
    """Two-sided share of sign flips at least as extreme (cases with no change cannot
    move a flipped sum, so only the ``nonzero`` differences are flipped)."""
    import numpy as np

    k = len(nonzero)
    if k == 0:
        return 1.0
    total = float(nonzero.sum())
    observed = abs(total)
    words = -(-k // 64)  # 64 sign bits per random word
    hits = 0
    for start in range(0, settings.permutations, _BLOCK):
        rows = min(_BLOCK, settings.permutations - start)
        raw = _words(key, start, rows, words).astype("<u8").view(np.uint8)
        bits = np.unpackbits(raw, axis=1, count=k, bitorder="little").astype(np.float64)
        # a flipped case contributes -d instead of +d: sum = total - 2 * flipped part
        sums = total - 2.0 * _dot(bits, nonzero)
        hits += int(np.count_nonzero(np.abs(sums) >= observed))
    return (hits + 1) / (settings.permutations + 1)


def _bootstrap_sums(
    diffs: NDArray[np.float64],
    nonzero: NDArray[np.float64],
    settings: SignificanceSettings,
    key: int,
) -> NDArray[np.float64]:
    """The sums of ``settings.bootstrap`` resamples of ``diffs`` (n draws with
    replacement each), sorted.

    When few cases changed, a resample is drawn as "how many of its n draws land on a
    changed case" (Binomial(n, k/n), by inverse CDF) and then which changed cases:
    the same distribution at a cost of k draws per resample instead of n.
    """
    import numpy as np

    n, k, resamples = len(diffs), len(nonzero), settings.bootstrap
    sums = np.zeros(resamples, dtype=np.float64)
    if k == 0:
        return sums
    if 8 * k > n:  # dense: draw every resample in full
        for start in range(0, resamples, _BLOCK):
            rows = min(_BLOCK, resamples - start)
            half = -(-n // 2)
            draws = _words(key, start, rows, half).astype("<u8").view("<u4")[:, :n]
            picks = ((draws.astype(np.uint64) * np.uint64(n)) >> np.uint64(32)).astype(np.intp)
            sums[start : start + rows] = _row_sums(diffs[picks])
        sums.sort()
        return sums
    low, cdf = _binomial_cdf(n, k / n)
    landed = np.searchsorted(
        np.asarray(cdf), _uniforms(_words(key, 0, 1, resamples)[0]), side="right"
    )
    landed = np.minimum(landed, len(cdf) - 1) + low
    ends = np.cumsum(landed)
    values = nonzero[_picks(key ^ _GOLDEN, 0, int(ends[-1]), k)]
    running = np.concatenate(([0.0], np.cumsum(values)))  # exact: integers below 2**53
    sparse: NDArray[np.float64] = running[ends] - running[ends - landed]
    sparse.sort()
    return sparse


def paired_test(
    baseline: Sequence[float] | Any,
    current: Sequence[float] | Any,
    settings: SignificanceSettings,
    name: str,
) -> TestResult:
    """Permutation ``p`` and bootstrap interval of ``mean(current - baseline)`` (value
    sequences or float arrays).

    ``name`` (scope and metric) picks the random stream, so each row of a diff
    has its own, and the same row gets the same numbers on every run.
    """
    import numpy as np

    n = len(baseline)
    if n == 0 or n != len(current):
        raise ValueError("paired_test needs two equally long, non-empty value lists")
    before = np.rint(np.asarray(baseline, dtype=np.float64) * _SCALE)
    after = np.rint(np.asarray(current, dtype=np.float64) * _SCALE)
    diffs = after - before  # whole millionths, exactly
    nonzero = diffs[diffs != 0]
    p = _permutation_p(nonzero, settings, _stream_key(settings.seed, name))
    sums = _bootstrap_sums(
        diffs, nonzero, settings, _stream_key(settings.seed, "bootstrap\0" + name)
    )
    tail = int(settings.alpha / 2 * settings.bootstrap)
    low = float(sums[tail]) / n / _SCALE
    high = float(sums[settings.bootstrap - 1 - tail]) / n / _SCALE
    return TestResult(cases=n, p=round(p, 6), low=round(low, 6), high=round(high, 6))

"""The minimum detectable effect of a golden set: how large a drop would the diff see?

Pure functions: a score report's per-case values in, numbers out. For every
aggregate the diff tests (``ragsnap.scoring.diff.testable``: the rates and the
graded means, overall and per split), ``power_section`` reports the **minimum
detectable effect** (MDE: the smallest expected drop of the mean that the diff's
paired randomization test, ``ragsnap.scoring.significance.paired_test``, would
call significant at ``alpha`` with probability ``power``, 0.8 by default) and
the **cases needed** to detect a drop of ``drop`` (0.02: 2 pp of Recall@K) with
that power.

**The regression model** (``MODEL``, ``per-case-loss/1``). A case's *room* is
how far its value is from the metric's worst value (``x`` for a
higher-is-better rate or a graded metric, whose worst is 0; ``1 - x`` for the
no-answer false-positive rate, whose worst is 1). A regression of strength
``q`` makes each case independently lose all its room with probability ``q``
(a hit becomes a miss, a graded value drops to 0, a clean no-answer case
returns evidence). Its expected drop of the mean is ``delta = q * mean room``,
so the largest drop a metric can show is its mean room (``q = 1``). Real
regressions are often partial; a partial loss of many cases has a larger
sign-consistent signal than the same drop concentrated in a few, so this model
is the harder (conservative) case for the test.

**The test's power, exactly** (no churn). Under this model every changed case
moves the same way, so the randomization test's exact p is ``2 / 2**k`` for
``k`` changed cases whatever their sizes (only the all-same sign flips reach
the observed ``|sum|``), and with ``P`` random sign flips the reported
``p = (hits + 1) / (P + 1)`` has ``hits ~ Binomial(P, 2 / 2**k)``. The test
rejects when that p (rounded to six decimals, as ``paired_test`` does) is
below ``alpha``, so

    reject(k) = P(Binomial(P, 2**(1-k)) <= h),  h = max{h : (h+1)/(P+1) < alpha}
    power(q)  = sum_k P(Binomial(m, q) = k) * reject(k)

with ``m`` the cases that have room. (At alpha 0.05 and 1000 flips the test
needs 6 changed cases: ``reject(5)`` is 0.04, ``reject(6)`` 0.9995.) The MDE is
``q* x mean room`` where ``power(q*) = power``, by bisection over ``q`` (48
halvings); null when even ``q = 1`` falls short (fewer cases with room than the
test needs), with the reason.

**Churn** (a ``baseline`` report that shares cases with the report). The
per-case differences ``c`` between the two reports (current minus baseline,
cases that have the metric in both) are run-to-run churn: changes the next PR
brings whatever it does. The model adds it as noise: every case that does not
lose its room moves by a churn draw (from the observed ``c``, with a random
sign: the null is symmetric). The changed cases then move both ways, so the
power comes from the normal approximation of the sign-flip test: it rejects
when ``W = S - z sqrt(V) > 0``, ``S`` the summed drop, ``V = sum d**2`` the
null variance of the flipped sums, ``z`` the two-sided ``alpha`` quantile.
Per case the drop ``X`` is its room ``r`` with probability ``q``, else a churn
draw, so with ``r1..r4`` the means of ``r**1..4`` over the ``n`` cases and
``s2``, ``s4`` the churn's second and fourth moments (``p = 1 - q``):

    E[S] = n q r1              Var[S] = n (q p r2 + p s2)
    E[V] = n (q r2 + p s2)     Var[V] = n (q r4 + p s4 - (q r2 + p s2)**2)
    Cov[S, V] = n q p (r3 - s2 r1)

and ``sqrt(V)`` is linearised around ``E[V]`` (delta method, with its
second-order mean term), so ``W`` is normal with

    E[W] = E[S] - g - z (sqrt(E[V]) - Var[V] / (8 E[V]**1.5))
    Var[W] = Var[S] + z**2 Var[V] / (4 E[V]) - z Cov[S, V] / sqrt(E[V])
    power(q) = min(exact power above, Phi(E[W] / sqrt(Var[W])))

where ``g`` (``lattice``, the gcd of the rooms and churn moves: 1 for a 0/1
metric, ~0 for a graded one) is the continuity correction of sums that move in
steps of ``2 g``. The exact no-churn power caps it (the normal approximation
is too optimistic when few cases change). Without churn, or when every shared
case is equal, the exact formula is used alone (``method`` ``exact``; with
churn ``normal``). Checked by simulation (tests): at the reported MDE the real
test detects 0.77 to 0.90 of regressions with churn (conservative where the
cap binds), against 0.78 to 0.83 without.

**Cases needed** for a drop ``drop``: ``q = drop / mean room`` (null when
``q > 1``: the metric cannot drop that far), and the smallest ``N`` such that
``N`` cases like the report's (the same room distribution and churn, so
``floor(N m / n)`` cases with room) detect it with the target power; found by
doubling and bisection over ``N`` (power grows with ``N``), up to
``MAX_CASES`` (else null).

**Scope of the number.** ``alpha`` is per row: the diff corrects the p-values
of all rows one diff tests (Holm by default), so when a regression moves many
rows the effective threshold of the weakest is lower and its MDE larger. The
MDE is the test's alone: the diff also leaves a move below its noise floor
(``diff.noiseFloor``, 0.001 by default) untested, and fails a run on any case
regression whatever the test says. The model averages over the test's random
sign flips (the diff's are fixed per row name), so ``seed`` plays no part.

**Machine independence.** Values are taken as whole millionths (as the diff
does), sums are exact integers, the loops run in a fixed order, and the
arithmetic is IEEE ``+ - * /`` and ``sqrt`` only: the normal CDF and ``exp`` are
computed here by series (no libm ``exp``, ``erf`` or ``lgamma``), so the section's
bytes are the same on every machine. Nothing is simulated; the tests check the
formula against simulated regressions run through the real ``paired_test``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

from ..io.markdown import markdown_table
from ..scoring.aggregates import HIGHER_IS_BETTER, LOWER_IS_BETTER
from ..scoring.diff import case_value, testable
from ..scoring.significance import SignificanceSettings, binomial_weights

__all__ = [
    "MAX_CASES",
    "MODEL",
    "Population",
    "cases_needed",
    "detection_power",
    "loss_share",
    "minimum_detectable_effect",
    "population",
    "power_advice",
    "power_markdown",
    "power_section",
]

#: the regression model's name and version (a change of the formula bumps it)
MODEL = "per-case-loss/1"
#: ``cases_needed`` gives up beyond this many cases
MAX_CASES = 10_000_000
_SCALE = 1_000_000
_BISECTIONS = 48
#: ``reject(k)`` this close to 1 is taken as 1 (and holds for every larger ``k``)
_CERTAIN = 1e-15


@dataclass(frozen=True, slots=True)
class Population:
    """What the power of one aggregate depends on (values in metric units).

    ``cases``: cases with a value; ``losable``: those with room (not at the
    worst value); ``rooms``: the means over ``cases`` of the room ``r`` and of
    ``r**2``, ``r**3``, ``r**4``; ``churn``: the churn's second and fourth
    moments ``s2``, ``s4`` (zeros without churn).
    """

    cases: int
    losable: int
    rooms: tuple[float, float, float, float]
    churn: tuple[float, float] = (0.0, 0.0)
    #: the greatest common divisor of the rooms and churn moves (a case's difference
    #: is a multiple of it, the test's sums one of twice it): 1 for a 0/1 metric
    lattice: float = 0.0

    @property
    def room_mean(self) -> float:
        """The mean room: the largest drop of the mean."""
        return self.rooms[0]

    def scaled(self, cases: int) -> Population:
        """``cases`` cases like these: the same room distribution and churn,
        ``floor(cases * losable / self.cases)`` of them with room."""
        return replace(self, cases=cases, losable=cases * self.losable // self.cases)


def _moments(values: Sequence[int], powers: Sequence[int]) -> list[float]:
    """Means of ``values**p`` (whole millionths) in metric units: exact integer sums,
    one division each."""
    return [sum(v**p for v in values) / len(values) / _SCALE**p for p in powers]


def population(
    values: Sequence[float], *, lower_is_better: bool = False, churn: Sequence[float] = ()
) -> Population:
    """The population of per-case ``values`` (in [0, 1]; the worst value is 0, or 1
    when ``lower_is_better``) and the per-case ``churn`` differences (any sign)."""
    worst = _SCALE if lower_is_better else 0
    rooms = [abs(round(v * _SCALE) - worst) for v in values]
    if not rooms:
        return Population(0, 0, (0.0, 0.0, 0.0, 0.0))
    moves = [round(c * _SCALE) for c in churn]
    r1, r2, r3, r4 = _moments(rooms, (1, 2, 3, 4))
    s2, s4 = _moments(moves, (2, 4)) if moves else (0.0, 0.0)
    return Population(
        cases=len(rooms),
        losable=sum(1 for r in rooms if r > 0),
        rooms=(r1, r2, r3, r4),
        churn=(s2, s4),
        lattice=math.gcd(*rooms, *moves) / _SCALE,
    )


# --- arithmetic that is the same on every machine ---------------------------------------


def _binomial(n: int, q: float) -> tuple[int, list[float]]:
    """(lowest k, probabilities of k, k+1, ...) of Binomial(n, q) where not negligible
    (the diff's own ``binomial_weights``, normalised)."""
    if q <= 0.0 or n == 0:
        return 0, [1.0]
    if q >= 1.0:
        return n, [1.0]
    low, weights, total = binomial_weights(n, q)
    return low, [w / total for w in weights]


def _exp(y: float) -> float:
    """``e**y`` for ``y <= 0`` by a Taylor series of ``y / 1024`` squared ten times."""
    if y < -700.0:
        return 0.0
    x = y / 1024.0
    term, total = 1.0, 1.0
    for i in range(1, 16):
        term = term * x / i
        total += term
    for _ in range(10):
        total *= total
    return total


def _normal_cdf(x: float) -> float:
    """Phi(x) = 1/2 + phi(x) * sum x**(2k+1) / (2k+1)!!  (all terms positive)."""
    if x < -9.0:
        return 0.0
    if x > 9.0:
        return 1.0
    term = x
    total = x
    square = x * x
    k = 1
    while abs(term) > 1e-17 * abs(total):
        term = term * square / (2 * k + 1)
        total += term
        k += 1
    density = _exp(-square / 2.0) / math.sqrt(2.0 * math.pi)
    return min(1.0, max(0.0, 0.5 + density * total))


@lru_cache(maxsize=64)
def _normal_quantile(p: float) -> float:
    """Phi^-1(p) by bisection of ``_normal_cdf``."""
    low, high = -9.0, 9.0
    for _ in range(64):
        mid = (low + high) / 2.0
        if _normal_cdf(mid) < p:
            low = mid
        else:
            high = mid
    return (low + high) / 2.0


@lru_cache(maxsize=64)
def _rejections(permutations: int, alpha: float) -> tuple[float, ...]:
    """``reject(k)`` for k = 0, 1, ...: the probability that ``k`` same-sign changes
    are significant (see the module docstring); the last entry holds for every
    larger ``k``. Empty when no p the test can report is below ``alpha``."""
    limit = -1
    for hits in range(permutations + 1):
        if round((hits + 1) / (permutations + 1), 6) < alpha:
            limit = hits
        else:
            break
    if limit < 0:
        return ()
    out = [0.0, 0.0]  # no change, or one (whose flips always tie it)
    k = 2
    while out[-1] < 1.0:
        low, probs = _binomial(permutations, math.ldexp(1.0, 1 - k))
        total = 0.0
        for offset, prob in enumerate(probs):
            if low + offset <= limit:
                total += prob
        # p = 2**(1-k) underflows long before k = 1100: certain by then
        out.append(1.0 if 1.0 - total <= _CERTAIN or k >= 1100 else total)
        k += 1
    return tuple(out)


def _exact_power(losable: int, q: float, settings: SignificanceSettings) -> float:
    reject = _rejections(settings.permutations, settings.alpha)
    if not reject:
        return 0.0
    low, probs = _binomial(losable, q)
    total = 0.0
    for offset, prob in enumerate(probs):
        k = low + offset
        total += prob * reject[min(k, len(reject) - 1)]
    return min(1.0, total)


def _churned_power(pop: Population, q: float, z: float) -> float:
    """The normal approximation of the sign-flip test's power with churn (module
    docstring): ``W = S - z sqrt(V)`` linearised around ``E[V]``."""
    n = pop.cases
    r1, r2, r3, r4 = pop.rooms
    s2, s4 = pop.churn
    p = 1.0 - q
    shift = n * q * r1
    var_s = n * (q * p * r2 + p * s2)
    second = q * r2 + p * s2
    mean_v = n * second
    var_v = n * (q * r4 + p * s4 - second * second)
    cov_sv = n * q * p * (r3 - s2 * r1)
    if mean_v <= 0.0:
        return 0.0
    root = math.sqrt(mean_v)
    # continuity correction: the flipped sums move in steps of 2 * lattice
    mean_w = shift - pop.lattice - z * (root - var_v / (8.0 * mean_v * root))
    var_w = var_s + z * z * var_v / (4.0 * mean_v) - z * cov_sv / root
    if var_w <= 0.0:
        return 1.0 if mean_w > 0.0 else 0.0
    return _normal_cdf(mean_w / math.sqrt(var_w))


def detection_power(pop: Population, q: float, settings: SignificanceSettings) -> float:
    """The probability that the diff's paired test detects a regression of strength
    ``q`` (each case losing its room with probability ``q``) on ``pop``."""
    exact = _exact_power(pop.losable, q, settings)
    if pop.churn[0] <= 0.0 or exact <= 0.0:
        return exact
    z = _normal_quantile(1.0 - settings.alpha / 2.0)
    return min(exact, _churned_power(pop, q, z))


def _unreachable(pop: Population, settings: SignificanceSettings, power: float) -> str | None:
    """Why no drop of ``pop``'s metric is detectable with ``power``, or None."""
    if pop.cases == 0:
        return "no case has a value"
    if pop.losable == 0:
        return "every case is at the metric's worst value: nothing left to lose"
    if not _rejections(settings.permutations, settings.alpha):
        return (
            f"with {settings.permutations} permutations no p can fall below alpha "
            f"{settings.alpha}; raise diff.significance.permutations"
        )
    best = detection_power(pop, 1.0, settings)
    if best < power:
        return (
            f"even if all {pop.losable} case(s) with room lost it, the test would detect "
            f"the drop with probability {best:.2f} < {power}"
        )
    return None


def loss_share(pop: Population, settings: SignificanceSettings, power: float = 0.8) -> float | None:
    """The strength ``q`` at which the test's power is ``power`` (None: none)."""
    if _unreachable(pop, settings, power) is not None:
        return None
    low, high = 0.0, 1.0
    for _ in range(_BISECTIONS):
        mid = (low + high) / 2.0
        if detection_power(pop, mid, settings) < power:
            low = mid
        else:
            high = mid
    return high


def minimum_detectable_effect(
    pop: Population, settings: SignificanceSettings, power: float = 0.8
) -> float | None:
    """The MDE of ``pop``'s mean (unrounded; None when no drop is detectable)."""
    q = loss_share(pop, settings, power)
    return None if q is None else q * pop.room_mean


def _needed(
    pop: Population, drop: float, settings: SignificanceSettings, power: float
) -> tuple[int | None, str | None]:
    if pop.cases == 0:
        return None, "no case has a value"
    if pop.losable == 0:
        return None, "every case is at the metric's worst value: nothing left to lose"
    if not _rejections(settings.permutations, settings.alpha):
        return None, f"with {settings.permutations} permutations no p can fall below alpha"
    q = drop / pop.room_mean
    if q > 1.0:
        return None, f"the mean can drop by at most {pop.room_mean:.6f}, less than {drop}"

    def enough(cases: int) -> bool:
        return detection_power(pop.scaled(cases), q, settings) >= power

    high = 1
    while not enough(high):
        if high >= MAX_CASES:
            return None, f"more than {MAX_CASES} cases"
        high = min(MAX_CASES, high * 2)
    low = high // 2  # not enough (or 0)
    while high - low > 1:
        mid = (low + high) // 2
        if enough(mid):
            high = mid
        else:
            low = mid
    return high, None


def cases_needed(
    pop: Population, drop: float, settings: SignificanceSettings, power: float = 0.8
) -> int | None:
    """The fewest cases like ``pop``'s that detect a drop of ``drop`` with ``power``."""
    return _needed(pop, drop, settings, power)[0]


# --- the report section --------------------------------------------------------------


def _metrics(summary: Mapping[str, Any]) -> list[str]:
    names = [*HIGHER_IS_BETTER, *LOWER_IS_BETTER, *(summary.get("metrics") or {})]
    return [name for name in names if testable(name)]


def _row(
    scope: str,
    metric: str,
    cases: Sequence[Mapping[str, Any]],
    before: Mapping[str, Mapping[str, Any]] | None,
    settings: SignificanceSettings,
    power: float,
    drop: float,
) -> dict[str, Any]:
    values: list[float] = []
    churn: list[float] = []
    for case in cases:
        value = case_value(case, metric)
        if value is None:
            continue
        values.append(value)
        old = None if before is None else before.get(case["id"])
        old_value = None if old is None else case_value(old, metric)
        if old_value is not None:
            churn.append(value - old_value)
    lower = metric in LOWER_IS_BETTER
    pop = population(values, lower_is_better=lower, churn=churn)
    reason = _unreachable(pop, settings, power)
    q = None if reason is not None else loss_share(pop, settings, power)
    needed, needed_reason = _needed(pop, drop, settings, power)
    mean = sum(round(v * _SCALE) for v in values) / len(values) / _SCALE if values else None
    return {
        "scope": scope,
        "metric": metric,
        "direction": "lower" if lower else "higher",
        "cases": pop.cases,
        "losable": pop.losable,
        "mean": None if mean is None else round(mean, 6),
        "mde": None if q is None else round(q * pop.room_mean, 6),
        "lossShare": None if q is None else round(q, 6),
        "mdeReason": reason,
        "casesNeeded": needed,
        "casesNeededReason": needed_reason,
        "churnCases": len(churn) if before is not None else None,
        "churn": (round(math.sqrt(pop.churn[0]), 6) if before is not None and churn else None),
        "method": "normal" if pop.churn[0] > 0.0 else "exact",
    }


def power_section(
    report: Mapping[str, Any],
    significance: SignificanceSettings,
    *,
    baseline: Mapping[str, Any] | None = None,
    power: float = 0.8,
    drop: float = 0.02,
) -> dict[str, Any]:
    """The MDE and cases needed of every testable aggregate of ``report`` (a score
    report), overall (scope ``all``) and per split (``split=<name>``), with the
    churn of ``baseline`` (a score report sharing cases) as noise. JSON-ready."""
    if not 0.0 < power < 1.0:
        raise ValueError(f"power must be between 0 and 1, not {power}")
    if not drop > 0.0:
        raise ValueError(f"drop must be positive, not {drop}")
    cases = list(report["cases"])
    before = None if baseline is None else {case["id"]: case for case in baseline["cases"]}
    splits = sorted(report.get("groups", {}).get("split", {}))
    scopes: list[tuple[str, list[Mapping[str, Any]]]] = [("all", cases)]
    if len(splits) > 1:
        for split in splits:
            scopes.append((f"split={split}", [c for c in cases if c["split"] == split]))
    metrics = _metrics(report["summary"])
    rows = [
        _row(scope, metric, members, before, significance, power, drop)
        for scope, members in scopes
        for metric in metrics
    ]
    shared = None if before is None else sum(1 for case in cases if case["id"] in before)
    return {
        "model": MODEL,
        "settings": {
            "alpha": significance.alpha,
            "permutations": significance.permutations,
            "power": power,
            "drop": drop,
        },
        "baselineCases": shared,
        "rows": rows,
    }


def _size(metric: str, value: float) -> str:
    """A drop: percentage points for a rate, three decimals for a mean (one more
    digit below 1 pp or 0.01, so a small MDE is never shown as 0)."""
    if metric in HIGHER_IS_BETTER or metric in LOWER_IS_BETTER:
        return f"{value * 100:.1f} pp" if value >= 0.01 else f"{value * 100:.2f} pp"
    return f"{value:.3f}" if value >= 0.01 else f"{value:.4f}"


def power_advice(section: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(metric, advice) for each overall row whose MDE is above ``drop`` or null: the
    MDE and how many cases like these a drop of ``drop`` needs."""
    drop = section["settings"]["drop"]
    advice = []
    for row in section["rows"]:
        if row["scope"] != "all" or (row["mde"] is not None and row["mde"] <= drop):
            continue
        metric, needed = row["metric"], row["casesNeeded"]
        if row["mde"] is not None:
            what = f"MDE {_size(metric, row['mde'])}"
        else:
            what = f"no drop detectable ({row['mdeReason']})"
        target = _size(metric, drop)
        if needed is None:
            todo = f"a drop of {target} is not detectable ({row['casesNeededReason']})"
        else:
            todo = f"add {max(0, needed - row['cases'])} cases like these to detect {target}"
        advice.append((metric, f"{what}; {todo}"))
    return advice


def power_markdown(section: Mapping[str, Any]) -> list[str]:
    """The section as Markdown lines: what MDE means, a table of the overall rows
    and the per-split rows, and advice where a metric's MDE exceeds ``drop``."""
    settings = section["settings"]
    drop, power = settings["drop"], settings["power"]
    lines = [
        "## Minimum detectable effect",
        "",
        f"The MDE is the smallest drop of a metric that the diff's paired test "
        f"(alpha {settings['alpha']}, {settings['permutations']} sign flips) would call "
        f"significant in {power:.0%} of regressions, when cases lose their value one by "
        f"one ({section['model']}); a smaller drop usually passes the PR check unnoticed "
        f"unless a case fails. Where the MDE is above {drop:g}, add cases.",
        "",
    ]
    table = [
        [
            row["scope"],
            row["metric"],
            row["cases"],
            "n/a" if row["mean"] is None else f"{row['mean']:.3f}",
            "n/a" if row["mde"] is None else _size(row["metric"], row["mde"]),
            "n/a" if row["casesNeeded"] is None else row["casesNeeded"],
            "-" if row["churn"] is None else f"{row['churn']:.3f}",
        ]
        for row in section["rows"]
    ]
    advice = [f"- {metric}: {text}." for metric, text in power_advice(section)]
    lines.append(
        markdown_table(
            ["scope", "metric", "cases", "mean", "MDE", f"cases for {drop:g}", "churn"], table
        )
    )
    if advice:
        lines += ["", *advice]
    lines.append("")
    return lines

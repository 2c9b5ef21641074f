"""Which measures can tell a trial's methods apart, and do they agree across splits?

Pure functions over a trial report (``trial-report.schema.json``): its plan's
methods, the measures its methods report and its ``caseResults`` (each case's
split and per-method values). Nothing is re-run.

**Discriminative power** (Sakai, "Evaluating evaluation metrics based on the
bootstrap", SIGIR 2006; "On the reliability of information retrieval metrics
based on graded relevance", IP&M 2007). For each measure a trial's paired tests
cover (``ragsnap.trial.significance.measures_to_test``: the per-case rates and
every graded measure, not the miss count nor judgment coverage), every pair
``(a, b)`` of the plan's methods, in the plan's order
(``itertools.combinations``), gets the trial's own paired test over the cases
where both methods have a value of the measure: the score diff's
machine-independent randomization test (``ragsnap.scoring.significance.
paired_test``) on the per-case differences ``b - a`` read at six decimals, with
the random stream ``"<a>\\0<b>\\0<measure>"``, the name the trial report's
between-method rows use, so a pair's ``p`` here is the ``p`` of the same row of
``ragsnap trial --all-pairs`` (and of ``--reference a``). A pair where no case
differs is not tested (``p`` null) and is not separated. Then::

    discriminative power = separated pairs / pairs       (pairs = n (n - 1) / 2)

where a pair is *separated* when its raw ``p < alpha``, as in Sakai's method
(which takes each pair's own achieved significance level). Beside it,
``separatedAdjusted`` and ``discriminativePowerAdjusted`` count the pairs whose
``p`` adjusted over the measure's pairs as one family (``diff.significance.
correction``: Holm by default) stays below ``alpha``; the family is one
measure's pairs, so the correction does not depend on how many other measures
are audited.

**Swap rate** (Voorhees and Buckley's swap method, as Sakai uses it between two
disjoint topic sets): a pair's ``delta`` is ``mean(b - a)`` over the cases of
one split (exact sums of whole millionths); the pair *swaps* when the sign of its
delta on the ``dev`` cases differs from its sign on the ``test`` cases. **Tie
rule**: a pair whose delta is exactly zero on either split, or that has no paired
case on a split, is neither swapped nor counted (``swapped`` null); ::

    swap rate = swapped pairs / pairs with a nonzero delta on both splits

null, with ``swapReason``, when the trial ran no dev case or no test case of
the measure (``ragsnap trial --split all`` of cases with both splits), or when
no pair differs on both splits.

**Order and advice.** Measures are listed by separated pairs, most first (every
measure has the same number of pairs), ties by name; a measure no case has a
value of (no-answer rates without no-answer cases, context precision without
spans) is listed under ``skipped`` with the reason. ``recommended`` names the
measures that separate at least one pair and swap none (a known, zero swap
rate), in that order: the measures a team's gates can rely on.

**Determinism.** Values are read at six decimals, means and signs are exact
integer sums, every float written is rounded to six decimals: the same trial
report gives the same bytes on every machine, and per-case moves below the
report's rounding change nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import combinations
from typing import Any

from tabulate import tabulate

from ..scoring.significance import SignificanceSettings, adjust_p, paired_test
from ..trial.significance import measures_to_test, method_value, settings_json

__all__ = ["SPLITS", "discrimination_markdown", "discrimination_section"]

#: the two splits the swap rate compares, in the order reported
SPLITS = ("dev", "test")

_SCALE = 1_000_000


def _millionths(value: float) -> int:
    return round(value * _SCALE)


def _sign(total: int) -> int:
    return (total > 0) - (total < 0)


def _split_delta(diffs: Sequence[tuple[str, int]], split: str) -> dict[str, Any]:
    """Cases and ``mean(b - a)`` over one split's paired differences (millionths)."""
    mine = [d for s, d in diffs if s == split]
    if not mine:
        return {"cases": 0, "delta": None, "sign": 0}
    total = sum(mine)
    return {
        "cases": len(mine),
        "delta": round(total / len(mine) / _SCALE, 6),
        "sign": _sign(total),
    }


def _pair(
    case_results: Sequence[Mapping[str, Any]],
    a: str,
    b: str,
    measure: str,
    settings: SignificanceSettings,
) -> dict[str, Any]:
    """One pair's row: paired cases, delta, raw p, and the delta on each split."""
    before: list[int] = []
    after: list[int] = []
    diffs: list[tuple[str, int]] = []
    for case in case_results:
        x, y = method_value(case, a, measure), method_value(case, b, measure)
        if x is None or y is None:
            continue
        before.append(_millionths(x))
        after.append(_millionths(y))
        diffs.append((case["split"], after[-1] - before[-1]))
    p = None
    if before != after:
        p = paired_test(
            [v / _SCALE for v in before],
            [v / _SCALE for v in after],
            settings,
            f"{a}\0{b}\0{measure}",
        ).p
    splits = {split: _split_delta(diffs, split) for split in SPLITS}
    delta = None if not before else round((sum(after) - sum(before)) / len(before) / _SCALE, 6)
    signs = [splits[s]["sign"] for s in SPLITS]
    return {
        "a": a,
        "b": b,
        "cases": len(before),
        "delta": delta,
        "p": p,
        "pAdjusted": None,
        "separated": p is not None and p < settings.alpha,
        "separatedAdjusted": False,
        **{
            split: {"cases": splits[split]["cases"], "delta": splits[split]["delta"]}
            for split in SPLITS
        },
        "swapped": None if 0 in signs else signs[0] != signs[1],
    }


def _swap_reason(rows: Sequence[Mapping[str, Any]]) -> str | None:
    if any(row["swapped"] is not None for row in rows):
        return None
    for split in SPLITS:
        if all(row[split]["cases"] == 0 for row in rows):
            return (
                f"the trial ran no {split} case with a value of this measure; run "
                "`ragsnap trial --split all` on cases with both splits"
            )
    return "no pair of methods differs on both splits"


def _measure(
    case_results: Sequence[Mapping[str, Any]],
    methods: Sequence[str],
    measure: str,
    settings: SignificanceSettings,
) -> dict[str, Any]:
    rows = [_pair(case_results, a, b, measure, settings) for a, b in combinations(methods, 2)]
    tested = [row for row in rows if row["p"] is not None]
    for row, p in zip(tested, adjust_p([r["p"] for r in tested], settings.correction), strict=True):
        row["pAdjusted"] = p
        row["separatedAdjusted"] = p < settings.alpha
    separated = sum(row["separated"] for row in rows)
    adjusted = sum(row["separatedAdjusted"] for row in rows)
    comparable = [row for row in rows if row["swapped"] is not None]
    swapped = sum(row["swapped"] for row in comparable)
    reason = _swap_reason(rows)
    return {
        "measure": measure,
        "pairs": len(rows),
        "tested": len(tested),
        "separated": separated,
        "discriminativePower": round(separated / len(rows), 6),
        "separatedAdjusted": adjusted,
        "discriminativePowerAdjusted": round(adjusted / len(rows), 6),
        "comparable": len(comparable),
        "swapped": swapped,
        "swapRate": None if reason is not None else round(swapped / len(comparable), 6),
        "swapReason": reason,
        "rows": rows,
    }


def _reported(trial: Mapping[str, Any]) -> set[str]:
    return {m for entry in trial["methods"].values() for m in entry["summary"]["metrics"]}


def discrimination_section(
    trial: Mapping[str, Any],
    significance: SignificanceSettings,
    *,
    measures: Sequence[str] | None = None,
) -> dict[str, Any]:
    """The audit's discriminative power and swap rates of ``trial`` (a trial report),
    JSON-ready; ``measures`` keeps only these (each one the trial tests, else
    ``ValueError``). See the module docstring for every rule."""
    methods = [m["name"] for m in trial["plan"]["methods"]]
    case_results = trial["caseResults"]
    testable = measures_to_test(_reported(trial))
    if measures is not None:
        unknown = [m for m in measures if m not in testable]
        if unknown:
            raise ValueError(
                f"measure(s) {', '.join(unknown)} not tested in this trial; "
                f"use one of {', '.join(testable)}"
            )
        testable = [m for m in testable if m in measures]
    section: dict[str, Any] = {
        "settings": settings_json(significance),
        "methods": methods,
        "pairs": len(methods) * (len(methods) - 1) // 2,
        "cases": {split: sum(c["split"] == split for c in case_results) for split in SPLITS},
        "reason": None,
        "measures": [],
        "skipped": [],
        "recommended": [],
    }
    if len(methods) < 2:
        section["reason"] = (
            f"the trial compared {len(methods)} method(s); discriminative power needs at "
            "least two (`ragsnap trial --methods A,B,...`)"
        )
        return section
    rows = []
    for measure in testable:
        if not any(method_value(c, m, measure) is not None for c in case_results for m in methods):
            section["skipped"].append(
                {"measure": measure, "reason": "no case of the trial has a value of it"}
            )
            continue
        rows.append(_measure(case_results, methods, measure, significance))
    rows.sort(key=lambda row: (-row["separated"], row["measure"]))
    section["measures"] = rows
    section["recommended"] = [
        row["measure"] for row in rows if row["separated"] > 0 and row["swapRate"] == 0
    ]
    return section


# --- text -----------------------------------------------------------------------------


def _rate(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1%}"


def discrimination_markdown(section: Mapping[str, Any]) -> list[str]:
    """The section as Markdown lines: one row per measure, then one line of advice."""
    settings = section["settings"]
    lines = ["## Discriminative power", ""]
    if section["reason"] is not None:
        return [*lines, f"Not measured: {section['reason']}.", ""]
    cases = section["cases"]
    lines += [
        f"Every pair of the trial's {len(section['methods'])} methods "
        f"({section['pairs']} pairs) gets the trial's paired randomization test "
        f"({settings['permutations']} sign flips, seed {settings['seed']}); a pair is "
        f"separated when its raw p < {settings['alpha']:g} (Sakai's method), or, in the "
        f"corrected column, when its p adjusted over the measure's pairs "
        f"({settings['correction']}) is. A pair swaps when the sign of its mean "
        f"difference on the {cases['dev']} dev cases differs from the sign on the "
        f"{cases['test']} test cases; pairs with no difference on a split are not counted.",
        "",
    ]
    table = [
        [
            row["measure"],
            _rate(row["discriminativePower"]),
            f"{row['separated']}/{row['pairs']}",
            f"{row['separatedAdjusted']}/{row['pairs']}",
            _rate(row["swapRate"]),
            f"{row['swapped']}/{row['comparable']}",
        ]
        for row in section["measures"]
    ]
    lines.append(
        tabulate(
            table,
            headers=[
                "measure",
                "discriminative power",
                "pairs separated",
                f"separated ({settings['correction']})",
                "swap rate",
                "pairs swapped",
            ],
            tablefmt="github",
            disable_numparse=True,
        )
    )
    lines.append("")
    for skipped in section["skipped"]:
        lines.append(f"- `{skipped['measure']}` not audited: {skipped['reason']}.")
    if section["skipped"]:
        lines.append("")
    if section["recommended"]:
        names = ", ".join(f"`{m}`" for m in section["recommended"])
        lines.append(f"Gate on the measures that separate methods and do not swap: {names}.")
    else:
        lines.append(
            "No measure both separates a pair of methods and keeps every sign between dev "
            "and test: gate on none of them alone; add cases, or run the trial with both splits."
        )
    lines.append("")
    return lines

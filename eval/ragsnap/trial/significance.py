"""Is one method better than another, or a method better than in a baseline trial?

Pure functions over the per-case values a trial report already holds
(``caseResults``: each case's hit level, pass state, evidence count and graded
measures per method, the values ``ragsnap.trial.measure`` scored). They run the
score diff's paired tests, unchanged (``ragsnap.scoring.significance``: the
machine-independent randomization test and bootstrap interval, the same
SplitMix64 streams, the settings of ``diff.significance`` in ragsnap.yaml), and
read a case's value of a measure with the score diff's own rule
(``ragsnap.scoring.diff.case_value``).

**Measures.** The per-case rates (``passRate``, ``recallAtK``,
``strongHitRate``, ``noAnswerFalsePositiveRate``) and every graded measure
(nDCG, MRR, recall, MAP, context precision and recall ...), but not the miss
count nor judgment coverage (``ragsnap.scoring.diff.testable``). A row pairs the
cases that have a value in both columns (a no-answer case has no Recall@K, an
answerable case no false-positive rate, an unjudged case no graded measure).

**Between methods** (``method_tests``, the trial report's ``significance``):
over the cases the trial ran (its plan's split), each method against a
reference (``--reference METHOD``; the plan's first method by default), or
every pair of methods in the plan's order (``--all-pairs``). ``delta`` and the
interval are ``mean(method - reference)``; the random stream of a row is named
``"<reference>\\0<method>\\0<measure>"``.

**Between trials** (``trial_tests``, each row of the trial diff): per method in
both reports, over the cases both reports ran, ``mean(current - baseline)``;
the stream is ``"<method>\\0<measure>"``.

**Which rows are tested, one family.** A row is tested when at least one of its
paired cases differs (at the reports' six decimals); a row whose cases are all
equal, or that has no paired case, has ``significance: null`` (nothing to
test). The ``p`` of every tested row of one report (every pair and measure), or
of one trial diff (every method and measure), are corrected as one family with
the score diff's rule (``adjust_p``, ``diff.significance.correction``: Holm by
default); a row is ``significant`` when its adjusted p is below ``alpha``.
Significance is reported beside the numbers: it changes no gate, status or
exit code.

**Determinism.** Values are read at six decimals, like the score diff's (whole
millionths, exact integer sums), and the means beside them are exact integer
sums too, so two machines write the same bytes, and a per-case value that moves
by less than the reports' rounding moves no p-value, mean or interval.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from itertools import combinations
from typing import Any

from tabulate import tabulate

from ..scoring.aggregates import HIGHER_IS_BETTER, LOWER_IS_BETTER
from ..scoring.diff import case_value, delta_text, metric_value, p_label, testable
from ..scoring.significance import SignificanceSettings, adjust_p, paired_test

__all__ = [
    "interval_text",
    "measures_to_test",
    "method_pairs",
    "method_tests",
    "method_value",
    "p_name",
    "settings_json",
    "significance_lines",
    "significance_markdown",
    "trial_tests",
]

_SCALE = 1_000_000


def measures_to_test(measures: Iterable[str]) -> list[str]:
    """The measures that get a paired test, in the reports' order: the rates first,
    then the graded measures by name."""
    rates = [m for m in (*HIGHER_IS_BETTER, *LOWER_IS_BETTER) if testable(m)]
    graded = sorted({m for m in measures if testable(m) and m not in rates})
    return [*rates, *graded]


def settings_json(settings: SignificanceSettings) -> dict[str, object]:
    """The settings a trial's tests ran with (``require`` is the score diff's alone)."""
    return {k: v for k, v in settings.to_json().items() if k != "require"}


def method_pairs(methods: Sequence[str], reference: str | None) -> list[tuple[str, str]]:
    """(reference, method) pairs: each method against ``reference``, or every pair in
    the methods' order when ``reference`` is None."""
    if reference is None:
        return list(combinations(methods, 2))
    return [(reference, m) for m in methods if m != reference]


def method_value(case: Mapping[str, Any], method: str, measure: str) -> float | None:
    """A trial case's value of ``measure`` for ``method`` (None: the method did not run
    the case, or the measure has no value there), by the score diff's rule."""
    entry = case["methods"].get(method)
    if entry is None:
        return None
    # a trial always has its lookup: the score report's "fixture present"
    return case_value({**entry, "noAnswer": case["noAnswer"], "fixture": "present"}, measure)


def _millionths(value: float) -> int:
    return round(value * _SCALE)


def _mean(values: Sequence[int]) -> float:
    """The mean of whole millionths, exactly summed."""
    return round(sum(values) / len(values) / _SCALE, 6)


def _row(
    before: Sequence[float | None],
    after: Sequence[float | None],
    settings: SignificanceSettings,
    name: str,
) -> dict[str, Any]:
    """Paired means, delta and (when a case differs) the raw paired test."""
    kept = [(a, b) for a, b in zip(before, after, strict=True) if a is not None and b is not None]
    if not kept:
        return {"cases": 0, "before": None, "after": None, "delta": None, "significance": None}
    old = [_millionths(a) for a, _ in kept]
    new = [_millionths(b) for _, b in kept]
    test = None
    if old != new:
        result = paired_test([o / _SCALE for o in old], [n / _SCALE for n in new], settings, name)
        test = result.to_json()
    return {
        "cases": len(kept),
        "before": _mean(old),
        "after": _mean(new),
        "delta": round((sum(new) - sum(old)) / len(kept) / _SCALE, 6),
        "significance": test,
    }


def _correct(rows: Sequence[Mapping[str, Any]], settings: SignificanceSettings) -> int:
    """Adjust every tested row's p as one family; return how many were tested."""
    tested = [row["significance"] for row in rows if row["significance"] is not None]
    for test, p in zip(
        tested, adjust_p([t["p"] for t in tested], settings.correction), strict=True
    ):
        test["pAdjusted"] = p
        test["significant"] = p < settings.alpha
    return len(tested)


def method_tests(
    case_results: Sequence[Mapping[str, Any]],
    methods: Sequence[str],
    measures: Iterable[str],
    settings: SignificanceSettings,
    reference: str | None,
) -> dict[str, Any] | None:
    """The trial report's ``significance`` section: every (reference, method) pair of
    ``method_pairs`` and measure of ``measures_to_test`` over ``case_results`` (the
    report's ``caseResults``); None with fewer than two methods."""
    if len(methods) < 2:
        return None
    if reference is not None and reference not in methods:
        raise ValueError(f"reference {reference!r} is not one of the methods {list(methods)}")
    rows = []
    for ref, method in method_pairs(methods, reference):
        for measure in measures_to_test(measures):
            row = _row(
                [method_value(c, ref, measure) for c in case_results],
                [method_value(c, method, measure) for c in case_results],
                settings,
                f"{ref}\0{method}\0{measure}",
            )
            rows.append(
                {
                    "reference": ref,
                    "method": method,
                    "measure": measure,
                    "cases": row["cases"],
                    "referenceMean": row["before"],
                    "methodMean": row["after"],
                    "delta": row["delta"],
                    "significance": row["significance"],
                }
            )
    tested = _correct(rows, settings)
    return {
        "settings": settings_json(settings),
        "reference": reference,
        "tested": tested,
        "rows": rows,
    }


def trial_tests(
    baseline: Mapping[str, Any],
    current: Mapping[str, Any],
    methods: Mapping[str, Sequence[dict[str, Any]]],
    settings: SignificanceSettings,
) -> int:
    """Give each row of a trial diff (``methods``: method -> its rows, each with a
    ``metric``) its paired test over the cases both reports ran, ``significance`` (and
    ``cases``, the paired cases), corrected as one family; return how many rows were
    tested."""
    before = {c["id"]: c for c in baseline["caseResults"]}
    shared = [(before[c["id"]], c) for c in current["caseResults"] if c["id"] in before]
    every = []
    for method, rows in methods.items():
        for row in rows:
            measure = row["metric"]
            if not testable(measure):
                row["significance"] = None
                continue
            paired = _row(
                [method_value(old, method, measure) for old, _ in shared],
                [method_value(new, method, measure) for _, new in shared],
                settings,
                f"{method}\0{measure}",
            )
            row["significance"] = paired["significance"]
            every.append(row)
    return _correct(every, settings)


# --- text -----------------------------------------------------------------------------


def p_name(settings: Mapping[str, Any]) -> str:
    """``Holm p``, ``Bonferroni p`` or ``p``: the score diff's label of ``settings``'
    correction."""
    return p_label({"significance": settings})


def interval_text(measure: str, test: Mapping[str, Any]) -> str:
    """The interval of a mean difference, in the delta's units."""
    low, high = test["ci"]
    return f"[{delta_text(measure, low)}, {delta_text(measure, high)}]"


def _level(settings: Mapping[str, Any]) -> str:
    return f"{round((1 - float(settings['alpha'])) * 100, 2):g}%"


def significance_markdown(section: Mapping[str, Any] | None) -> list[str]:
    """The trial report's "Significance" section as Markdown lines (none without it)."""
    if section is None:
        return []
    settings = section["settings"]
    against = (
        f"each method against `{section['reference']}`"
        if section["reference"] is not None
        else "every pair of methods"
    )
    name = p_name(settings)
    lines = [
        "## Significance between methods",
        "",
        f"Paired tests over the cases that ran, {against}: the difference of the per-case "
        f"values (method - reference), its {_level(settings)} bootstrap interval "
        f"({settings['bootstrap']} resamples) and the randomization test's p "
        f"({settings['permutations']} sign flips, seed {settings['seed']}), corrected over "
        f"the {section['tested']} tested row(s) ({name}). A row where no case differs is "
        "not tested.",
        "",
    ]
    pairs = section["reference"] is None  # a reference column only when it varies
    rows = []
    for row in section["rows"]:
        test = row["significance"]
        measure = row["measure"]
        rows.append(
            [
                row["method"],
                *([row["reference"]] if pairs else []),
                measure,
                str(row["cases"]),
                metric_value(measure, row["referenceMean"]),
                metric_value(measure, row["methodMean"]),
                delta_text(measure, row["delta"]),
                "—" if test is None else interval_text(measure, test),
                "—" if test is None else f"{test['pAdjusted']:.3f}",
                "—" if test is None else "yes" if test["significant"] else "no",
            ]
        )
    lines.append(
        tabulate(
            rows,
            headers=[
                "method",
                *(["reference"] if pairs else []),
                "measure",
                "cases",
                "reference mean",
                "method mean",
                "Δ",
                "interval",
                name,
                "significant",
            ],
            tablefmt="github",
            disable_numparse=True,
        )
    )
    lines.append("")
    return lines


def significance_lines(section: Mapping[str, Any] | None) -> list[str]:
    """Terminal lines: per pair, the measures that differ significantly, then a count
    of the rest."""
    if section is None:
        return []
    settings = section["settings"]
    name = p_name(settings)
    against = f"vs {section['reference']}" if section["reference"] is not None else "of every pair"
    lines = [
        f"Paired tests {against} ({name} < {settings['alpha']:g}, "
        f"{section['tested']} row(s) tested):"
    ]
    pairs: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for row in section["rows"]:
        pairs.setdefault((row["reference"], row["method"]), []).append(row)
    for (ref, method), rows in pairs.items():
        hits = [
            r for r in rows if r["significance"] is not None and r["significance"]["significant"]
        ]
        label = method if section["reference"] is not None else f"{method} vs {ref}"
        shown = "; ".join(
            f"{r['measure']} {delta_text(r['measure'], r['delta'])} "
            f"{interval_text(r['measure'], r['significance'])} "
            f"{name} {r['significance']['pAdjusted']:.3f}"
            for r in hits
        )
        rest = len(rows) - len(hits)
        if hits:
            lines.append(f"  {label}: {shown}; {rest} other measure(s) not significant")
        else:
            lines.append(f"  {label}: no significant difference ({len(rows)} measures)")
    return lines

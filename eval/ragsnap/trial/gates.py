"""Gates: thresholds a trial's methods must meet to be admitted.

A gates file (YAML, ``gates.schema.json``)::

    version: 1
    gates:
      - method: hybrid+rerank     # a method of the trial, or "*" for each of them
        measure: mrr@10           # see below
        min: 0.78                 # min and/or max, inclusive
      - method: "*"
        measure: noAnswerFalsePositiveRate
        max: 0.34
      - method: hybrid+rerank     # exact-identifier queries may not lose to lexical
        where: {tags: exact-identifier}
        measure: mrr@10
        notBelow: {method: lexical}
      - method: hybrid+rerank
        where: {category: [database, cache], split: test}
        measure: recallAtK
        min: 0.9
      - method: lexical
        language: zh              # short for where: {language: zh} (split: too)
        measure: recall@10
        min: 0.5
      - method: hybrid+rerank     # reranking may not lower hybrid's nDCG@10 by more
        measure: ndcg_exp@10      # than 0.05
        notBelow: {method: hybrid, by: 0.05}
      - method: lexical
        measure: latencyP95Ms     # latency ceilings are optional and machine-bound
        max: 50

**Which cases.** Without ``where`` a gate reads every case that ran. ``where``
selects by the case fields of the golden-cases file (``CASE_FIELDS``): ``id``,
``language``, ``category``, ``split``, ``kbScope``, ``topK``,
``minHitLevel``, ``tags``, ``noAnswer`` and ``knownFailure`` (true: the case
has one). Every condition must hold; a list is any of its values, so
``tags: [error-code, class-name]`` selects a case carrying either tag. The
top-level ``language:`` and ``split:`` are short for the same conditions and
may not repeat one ``where`` sets. The measure is then aggregated over the
selected cases with the report's rules (``MethodMeasurement.block``). Latency
is measured per method, not per case: a latency gate takes no selection.

Measures: the aggregate rates (``passRate``, ``recallAtK``, ``strongHitRate``,
``noAnswerFalsePositiveRate``, ``missCount``), any graded measure the trial
computes (``ndcg@10``, ``ndcg_exp@10``, ``map``, ``contextPrecision`` ...) and
the latency summary (``latencyMinMs``, ``latencyMedianMs``, ``latencyP95Ms``,
``latencyMaxMs``, ``latencyMeanMs``). A measure the trial does not compute is
bad input.

**Ran, passed, failed, not run.** A gate that measured a value *ran*: it
passed or it failed. A gate that could not be measured did *not run*, and
says why (``NOT_RUN``): the method is not in the trial, the method it is
compared with is not, no case that ran matches its selection (a split or a
language the trial did not run, a tag no case carries: the message lists the
values present), or the selected cases give the measure nothing to average
(no no-answer case for ``noAnswerFalsePositiveRate``, no judged answerable
case for a graded measure). A gate that did not run is never counted as
passed; its ``passed`` is null.

**Admitted or experimental** (QilbeeDB: a method stays experimental until its
gates pass). A method is *admitted* when at least one gate applies to it and
every gate that applies to it ran and passed; otherwise it is *experimental*:
a gate failed, a gate did not run, or no gate names it. Without a gates file
no method has a status (null). The trial exits 1 only when a gate that ran
failed (a regression); a gate that could not run is not a failure, but it
keeps its method experimental, and ``--compare-to`` reports a method that
went from admitted to experimental as a regression.

Gates are baselines of one fixture, not service level objectives: change them
with a reviewed fixture or a justified retrieval change.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InputError

if TYPE_CHECKING:
    from ..models import GoldenCase
    from .measure import MethodMeasurement

__all__ = [
    "ADMITTED",
    "AGGREGATE_MEASURES",
    "CASE_FIELDS",
    "EXPERIMENTAL",
    "LATENCY_MEASURES",
    "NOT_RUN",
    "Gate",
    "GateResult",
    "Selector",
    "evaluate_gates",
    "gates_from_json",
    "gates_line",
    "method_status",
    "status_reason",
]

AGGREGATE_MEASURES = (
    "passRate",
    "recallAtK",
    "strongHitRate",
    "noAnswerFalsePositiveRate",
    "missCount",
)
LATENCY_MEASURES = {
    "latencyMinMs": "minMs",
    "latencyMedianMs": "medianMs",
    "latencyP95Ms": "p95Ms",
    "latencyMaxMs": "maxMs",
    "latencyMeanMs": "meanMs",
}

_NAMED = {*AGGREGATE_MEASURES, *LATENCY_MEASURES}

#: a gate's ``where`` key (as in the golden-cases file) -> the GoldenCase attribute
CASE_FIELDS = {
    "id": "id",
    "language": "language",
    "category": "category",
    "split": "split",
    "kbScope": "kb_scope",
    "topK": "top_k",
    "minHitLevel": "min_hit_level",
    "tags": "tags",
    "noAnswer": "no_answer",
    "knownFailure": "known_failure",
}

#: why a gate did not run (``GateResult.not_run``) -> how the summary line says it
NOT_RUN = {
    "method-not-in-trial": "method not in the trial",
    "compared-method-not-in-trial": "compared method not in the trial",
    "no-case-selected": "no case selected",
    "nothing-to-measure": "nothing to measure",
}

ADMITTED = "admitted"
EXPERIMENTAL = "experimental"


def _field(case: GoldenCase, key: str) -> tuple[Any, ...]:
    """A case's values of a ``where`` field (a tuple: ``tags`` has several)."""
    value = getattr(case, CASE_FIELDS[key])
    if key == "knownFailure":
        return (value is not None,)
    return tuple(value) if key == "tags" else (value,)


@dataclass(frozen=True, slots=True)
class Selector:
    """Which cases a gate reads: (field, values) conditions, all of which must hold;
    a case meets one when any of its values of the field is among ``values``."""

    conditions: tuple[tuple[str, tuple[Any, ...]], ...] = ()

    @classmethod
    def from_json(cls, where: Mapping[str, Any]) -> Selector:
        """From a validated ``where`` object, in ``CASE_FIELDS`` order."""
        return cls(
            tuple(
                (key, tuple(v) if isinstance(v, list) else (v,))
                for key in CASE_FIELDS
                if (v := where.get(key)) is not None
            )
        )

    def matches(self, case: GoldenCase) -> bool:
        return all(
            any(value in values for value in _field(case, key)) for key, values in self.conditions
        )

    def describe(self) -> str:
        """`` [category database] [tags a|b]``; empty for every case."""
        return "".join(
            f" [{key} {'|'.join(_text(v) for v in values)}]" for key, values in self.conditions
        )

    def unmatched(self, cases: Sequence[GoldenCase]) -> str:
        """Why no case of ``cases`` matches: the conditions no case meets, each with the
        values the cases have (a tag misspelt, a language the trial did not run; not
        for ``id`` and ``kbScope``)."""
        parts = []
        for key, values in self.conditions:
            if any(v in values for case in cases for v in _field(case, key)):
                continue
            part = f"no case has {key} {'|'.join(map(_text, values))}"
            # the values present, but not the ids (noise) nor the scopes (the report
            # names no knowledge-base scope)
            if key not in ("id", "kbScope"):
                present = sorted({_text(v) for case in cases for v in _field(case, key)})
                shown = ", ".join(present[:8]) + (", ..." if len(present) > 8 else "")
                part += f" (present: {shown})"
            parts.append(part)
        return "; ".join(parts) or "no case meets every condition at once"


def _text(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


@dataclass(frozen=True, slots=True)
class Gate:
    """One threshold; ``pointer`` is where it sits in its file."""

    method: str
    measure: str
    pointer: str
    minimum: float | None = None
    maximum: float | None = None
    where: Selector = Selector()
    relative_to: str | None = None
    by: float = 0.0

    @classmethod
    def from_json(cls, data: Mapping[str, Any], pointer: str, path: Path) -> Gate:
        """From one validated gate; the short ``language``/``split`` join ``where``."""
        relative = data.get("notBelow")
        where = dict(data.get("where") or {})
        for key in ("language", "split"):
            if key in data:
                if key in where:
                    raise InputError(
                        path,
                        f"sets {key} twice, as {key!r} and in 'where'",
                        f"keep one: where: {{{key}: ...}} or the short {key}: ...",
                        pointer,
                    )
                where[key] = data[key]
        if where and data["measure"] in LATENCY_MEASURES:
            raise InputError(
                path,
                f"{data['measure']} is measured per method, not per case, so it takes no selection",
                "remove 'where' (and 'language' / 'split') from this gate",
                pointer,
            )
        return cls(
            method=data["method"],
            measure=data["measure"],
            pointer=pointer,
            minimum=data.get("min"),
            maximum=data.get("max"),
            where=Selector.from_json(where),
            relative_to=None if relative is None else relative["method"],
            by=0.0 if relative is None else float(relative.get("by", 0.0)),
        )

    def describe(self) -> str:
        parts = []
        if self.minimum is not None:
            parts.append(f">= {self.minimum:g}")
        if self.maximum is not None:
            parts.append(f"<= {self.maximum:g}")
        if self.relative_to is not None:
            parts.append(f">= {self.relative_to}" + (f" - {self.by:g}" if self.by else ""))
        return f"{self.measure}{self.where.describe()} {' and '.join(parts)}"


@dataclass(frozen=True, slots=True)
class GateResult:
    """A gate applied to one method: ``passed`` is None when it did not run, and
    ``not_run`` says why (a ``NOT_RUN`` code)."""

    method: str
    gate: str
    value: float | None
    passed: bool | None
    not_run: str | None = None
    message: str = ""
    #: how many of the trial's cases the gate read (None: not per case, or not run)
    cases: int | None = None

    @property
    def ran(self) -> bool:
        return self.not_run is None

    def to_json(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "gate": self.gate,
            "value": self.value,
            "passed": self.passed,
            "ran": self.ran,
            "notRun": self.not_run,
            "cases": self.cases,
            "message": self.message,
        }


def _value(block: Mapping[str, Any], measure: str) -> float | None:
    value = block[measure] if measure in AGGREGATE_MEASURES else block["metrics"][measure]["mean"]
    return None if value is None else float(value)


def _nothing_to_measure(measure: str, selected: int) -> str:
    if measure == "noAnswerFalsePositiveRate":
        what = "no no-answer case"
    elif measure in AGGREGATE_MEASURES:
        what = "no answerable case"
    else:
        what = "no judged answerable case"
    return f"{what} among the {selected} selected"


def evaluate_gates(
    gates: Sequence[Gate],
    methods: Mapping[str, MethodMeasurement],
    latency: Mapping[str, Mapping[str, Any]],
    path: Path,
) -> list[GateResult]:
    """Apply ``gates`` to the trial's ``methods`` (name -> measurement, ``latency`` name
    -> ``latency_summary``), in file order.

    A measure the trial does not compute is an ``InputError`` naming the gate.
    """
    results: list[GateResult] = []
    first = next(iter(methods.values()), None)
    known = set() if first is None else set(first.summary()["metrics"])
    for gate in gates:
        if first is not None and gate.measure not in _NAMED and gate.measure not in known:
            raise InputError(
                path,
                f"the trial does not measure {gate.measure!r}",
                f"use one of {', '.join([*AGGREGATE_MEASURES, *sorted(known)])}, or a latency "
                "measure such as latencyP95Ms",
                f"{gate.pointer}/measure",
            )
        names = list(methods) if gate.method == "*" else [gate.method]
        for name in names:
            results.append(_apply(gate, name, methods, latency))
    return results


def _apply(
    gate: Gate,
    name: str,
    methods: Mapping[str, MethodMeasurement],
    latency: Mapping[str, Mapping[str, Any]],
) -> GateResult:
    text = gate.describe()

    def not_run(code: str, message: str, cases: int | None = None) -> GateResult:
        return GateResult(name, text, None, None, code, message, cases)

    if name not in methods:
        return not_run("method-not-in-trial", "not in this trial")
    if gate.relative_to is not None and gate.relative_to not in methods:
        return not_run("compared-method-not-in-trial", f"{gate.relative_to} is not in this trial")
    compared = [name] if gate.relative_to is None else [name, gate.relative_to]
    values: list[float | None] = []
    selected: int | None = None
    for method in compared:
        if gate.measure in LATENCY_MEASURES:
            raw = latency.get(method, {}).get(LATENCY_MEASURES[gate.measure])
            values.append(None if raw is None else float(raw))
            continue
        measurement = methods[method]
        chosen = [r for r in measurement.results if gate.where.matches(r.case)]
        if not chosen:
            cases = [r.case for r in measurement.results]
            why = gate.where.unmatched(cases)
            return not_run("no-case-selected", f"no case of the {len(cases)} that ran: {why}", 0)
        selected = len(chosen)
        values.append(_value(measurement.block(chosen), gate.measure))
    value, base = values[0], values[-1]  # base: the compared method's, when there is one
    if value is None or base is None:
        who = "" if value is None else f"{gate.relative_to}: "
        why = (
            "no timed lookup"
            if gate.measure in LATENCY_MEASURES
            else _nothing_to_measure(gate.measure, selected or 0)
        )
        return not_run("nothing-to-measure", who + why, selected)
    failures = []
    if gate.minimum is not None and value < gate.minimum:
        failures.append(f"{value:.4f} < {gate.minimum:g}")
    if gate.maximum is not None and value > gate.maximum:
        failures.append(f"{value:.4f} > {gate.maximum:g}")
    if gate.relative_to is not None and value < base - gate.by:
        failures.append(
            f"{value:.4f} is {base - value:.4f} below {gate.relative_to}'s "
            f"{base:.4f} (at most {gate.by:g})"
        )
    return GateResult(name, text, value, not failures, None, "; ".join(failures), selected)


def gates_from_json(data: Mapping[str, Any], path: Path) -> list[Gate]:
    """Gates from a schema-validated gates document read from ``path``."""
    return [Gate.from_json(g, f"/gates/{i}", path) for i, g in enumerate(data["gates"])]


def method_status(rows: Sequence[Mapping[str, Any]], method: str) -> dict[str, Any]:
    """A method's ``status`` (admitted or experimental) and ``gateCounts`` from the
    report's gate rows (``GateResult.to_json``)."""
    own = [r for r in rows if r["method"] == method]
    ran = [r for r in own if r["ran"]]
    passed = sum(r["passed"] is True for r in ran)
    counts = {
        "applied": len(own),
        "ran": len(ran),
        "passed": passed,
        "failed": len(ran) - passed,
        "notRun": len(own) - len(ran),
    }
    admitted = bool(own) and passed == len(own)
    return {"status": ADMITTED if admitted else EXPERIMENTAL, "gateCounts": counts}


def status_reason(counts: Mapping[str, int]) -> str:
    """Why a method has its status, from its ``gateCounts``."""
    if counts["applied"] == 0:
        return "no gate applies to it"
    parts = []
    if counts["ran"]:
        parts.append(f"{counts['passed']} of {counts['ran']} gate(s) that ran passed")
    if counts["notRun"]:
        parts.append(f"{counts['notRun']} gate(s) did not run")
    return ", ".join(parts)


def gates_line(rows: Sequence[Mapping[str, Any]]) -> str:
    """The gate count for a summary, counting only gates that ran, e.g.
    ``1 of 1 ran and passed; 5 not run (3 method not in the trial, 2 no case selected)``."""
    ran = [r for r in rows if r["ran"]]
    failed = sum(r["passed"] is not True for r in ran)
    head = f"{len(ran) - failed} of {len(ran)} ran and passed" if ran else "none ran"
    if failed:
        head += f", {failed} FAILED"
    skipped: dict[str, int] = {}
    for r in rows:
        if not r["ran"]:
            code = r.get("notRun") or "nothing-to-measure"
            skipped[code] = skipped.get(code, 0) + 1
    if skipped:
        why = ", ".join(f"{n} {NOT_RUN.get(code, code)}" for code, n in skipped.items())
        head += f"; {sum(skipped.values())} not run ({why})"
    return head

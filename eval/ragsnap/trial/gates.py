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
      - method: lexical
        language: zh              # the measure in one language's group (or split: dev)
        measure: recall@10
        min: 0.5
      - method: hybrid+rerank     # reranking may not lower hybrid's nDCG@10 by more
        measure: ndcg_exp@10      # than 0.05
        notBelow: {method: hybrid, by: 0.05}
      - method: lexical
        measure: latencyP95Ms     # latency ceilings are optional and machine-bound
        max: 50

Measures: the aggregate rates (``passRate``, ``recallAtK``, ``strongHitRate``,
``noAnswerFalsePositiveRate``, ``missCount``), any graded measure the trial
computes (``ndcg@10``, ``ndcg_exp@10``, ``map``, ``contextPrecision`` ...) and
the latency summary (``latencyMinMs``, ``latencyMedianMs``, ``latencyP95Ms``,
``latencyMaxMs``, ``latencyMeanMs``). A gate whose value is null (no case in
its group) fails: an unmeasured method is not admitted. A gate naming a
method the trial did not run (or comparing with one) is listed as not run and fails
nothing.

A method that fails any gate is *not admitted*; its numbers stay in the
report beside the others. Gates are baselines of one fixture, not service
level objectives: change them with a reviewed fixture or a justified
retrieval change.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InputError

__all__ = [
    "AGGREGATE_MEASURES",
    "LATENCY_MEASURES",
    "Gate",
    "GateResult",
    "evaluate_gates",
    "gates_from_json",
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


@dataclass(frozen=True, slots=True)
class Gate:
    """One threshold; ``pointer`` is where it sits in its file."""

    method: str
    measure: str
    pointer: str
    minimum: float | None = None
    maximum: float | None = None
    language: str | None = None
    split: str | None = None
    relative_to: str | None = None
    by: float = 0.0

    @classmethod
    def from_json(cls, data: Mapping[str, Any], pointer: str) -> Gate:
        relative = data.get("notBelow")
        return cls(
            method=data["method"],
            measure=data["measure"],
            pointer=pointer,
            minimum=data.get("min"),
            maximum=data.get("max"),
            language=data.get("language"),
            split=data.get("split"),
            relative_to=None if relative is None else relative["method"],
            by=0.0 if relative is None else float(relative.get("by", 0.0)),
        )

    def describe(self) -> str:
        where = "".join(
            f" [{k} {v}]" for k, v in (("language", self.language), ("split", self.split)) if v
        )
        parts = []
        if self.minimum is not None:
            parts.append(f">= {self.minimum:g}")
        if self.maximum is not None:
            parts.append(f"<= {self.maximum:g}")
        if self.relative_to is not None:
            parts.append(f">= {self.relative_to} - {self.by:g}")
        return f"{self.measure}{where} {' and '.join(parts)}"


@dataclass(frozen=True, slots=True)
class GateResult:
    """A gate applied to one method."""

    method: str
    gate: str
    value: float | None
    passed: bool
    ran: bool = True
    message: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "gate": self.gate,
            "value": self.value,
            "passed": self.passed,
            "ran": self.ran,
            "message": self.message,
        }


def _value(entry: Mapping[str, Any], gate: Gate) -> float | None:
    """The gate's measure in a method's report entry (``summary``, ``groups``, ``latency``)."""
    if gate.measure in LATENCY_MEASURES:
        latency = entry.get("latency") or {}
        value = latency.get(LATENCY_MEASURES[gate.measure])
        return None if value is None else float(value)
    block: Mapping[str, Any] | None = entry["summary"]
    if gate.language is not None:
        block = entry["groups"]["language"].get(gate.language)
    if gate.split is not None:
        block = entry["groups"]["split"].get(gate.split)
    if block is None:
        return None
    if gate.measure in AGGREGATE_MEASURES:
        value = block[gate.measure]
    else:
        value = block["metrics"][gate.measure]["mean"]
    return None if value is None else float(value)


def evaluate_gates(
    gates: Sequence[Gate], methods: Mapping[str, Mapping[str, Any]], path: Path
) -> list[GateResult]:
    """Apply ``gates`` to the trial's ``methods`` (name -> report entry), in file order.

    A measure the trial does not compute is an ``InputError`` naming the gate.
    """
    results: list[GateResult] = []
    known = next(iter(methods.values()), None)
    for gate in gates:
        if (
            known is not None
            and gate.measure not in _NAMED
            and gate.measure not in known["summary"]["metrics"]
        ):
            measured = sorted(known["summary"]["metrics"])
            raise InputError(
                path,
                f"the trial does not measure {gate.measure!r}",
                f"use one of {', '.join([*AGGREGATE_MEASURES, *measured])}, or a latency "
                "measure such as latencyP95Ms",
                f"{gate.pointer}/measure",
            )
        names = list(methods) if gate.method == "*" else [gate.method]
        for name in names:
            text = gate.describe()
            if name not in methods:
                results.append(
                    GateResult(name, text, None, True, ran=False, message="not in this trial")
                )
                continue
            if gate.relative_to is not None and gate.relative_to not in methods:
                message = f"{gate.relative_to} is not in this trial"
                results.append(GateResult(name, text, None, True, ran=False, message=message))
                continue
            value = _value(methods[name], gate)
            if value is None:
                results.append(GateResult(name, text, None, False, message="no measurement"))
                continue
            failures = []
            if gate.minimum is not None and value < gate.minimum:
                failures.append(f"{value:.4f} < {gate.minimum:g}")
            if gate.maximum is not None and value > gate.maximum:
                failures.append(f"{value:.4f} > {gate.maximum:g}")
            if gate.relative_to is not None:
                other = methods.get(gate.relative_to)
                base = None if other is None else _value(other, gate)
                if base is None:
                    failures.append(f"{gate.relative_to} has no {gate.measure} in this trial")
                elif value < base - gate.by:
                    failures.append(
                        f"{value:.4f} is {base - value:.4f} below {gate.relative_to}'s "
                        f"{base:.4f} (at most {gate.by:g})"
                    )
            results.append(GateResult(name, text, value, not failures, message="; ".join(failures)))
    return results


def gates_from_json(data: Mapping[str, Any]) -> list[Gate]:
    """Gates from a schema-validated gates document."""
    return [Gate.from_json(g, f"/gates/{i}") for i, g in enumerate(data["gates"])]

"""Verification of a prepared service around a live check: ``live-check --state``.

A live check measures a service only while the service holds what it was
prepared with. ``ragsnap live-check --state STATE`` (the state file of
``ragsnap prepare``, ``ragsnap.live.preparation``) therefore brackets its
lookups with two verifications, under the state's lock:

1. **Plan.** The requests the run will send are counted first: one list
   request before, one lookup per case (two with ``--repeat-check``), one list
   request after. ``--max-requests N`` below that total stops the run with
   ``BudgetExhausted`` (exit 2) before the lock is taken or anything is sent;
   every request is counted again as it goes (``RequestBudget``).
2. **Lock.** The state's lock (``ragsnap.io.locks``, as ``prepare`` takes it) is
   held from before the first request until the reports are written: a
   ``prepare`` or another ``live-check`` on the same state fails at once,
   naming this process's pid, and this one fails the same way when another
   holds it. The state file is only read, never written.
3. **Before.** One list request, checked by
   ``ragsnap.live.preparation.verify_records`` exactly as ``prepare
   --verify-only`` checks it: every state document listed with the same server
   id, revision and embedding identity; no source or id twice; no record in the
   state's kb_scopes the state does not know; a list the service marks
   incomplete fails. A state that ``prepare`` did not finish (``complete``
   false) is a failure of kind ``incomplete-state`` too.
4. **Lookups.** The live check itself (``ragsnap.live.livecheck``). With
   ``--repeat-check`` each case's search is sent twice and the two answers'
   evidence ids (``chunkId``, else ``docId``, else ``source``, in rank order)
   compared: any difference is a failure of kind ``unstable-ranking``.
5. **After.** The same verification as before, catching what changed during
   the run.

Any failure makes the run **invalid**: the report's ``service`` section
(``service_section``) records the before and after results, every failure with
its phase and kind, the failures by kind and the work counters; the case
summary keeps its counts (a verification failure is never averaged into them)
but its ``verdict`` becomes ``invalid``, the Markdown report shows the failures
first, and the command exits 1. The privacy view (``private_service``) keeps
counts, kinds, phases, server document ids, case ids and SHA-256 hashes of
source names; no message, source, path or URL.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import BudgetExhausted
from ..io.markdown import markdown_table
from ..kb.backends.http import HttpService
from ..scoring.privacy import sha256_json
from .preparation import FINDING_KINDS, verify_records

__all__ = [
    "PHASES",
    "SERVICE_FAILURE_KINDS",
    "RequestBudget",
    "ServiceFailure",
    "ServiceVerifier",
    "check_budget",
    "evidence_ids",
    "private_service",
    "render_service_markdown",
    "repeat_failures",
    "service_section",
]

#: the phases of a run, in order
PHASES = ("before", "lookups", "after")
#: every kind a service failure can have
SERVICE_FAILURE_KINDS = ("incomplete-state", *FINDING_KINDS, "unstable-ranking")


@dataclass(frozen=True, slots=True)
class ServiceFailure:
    """One failure of a run's service verification (module docstring)."""

    phase: str
    kind: str
    message: str
    source: str | None = None
    document_id: str | None = None
    case_id: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "phase": self.phase,
            "kind": self.kind,
            "message": self.message,
            "source": self.source,
            "documentId": self.document_id,
            "caseId": self.case_id,
        }


class RequestBudget:
    """Requests sent, by what they were for, under an optional ceiling (thread-safe)."""

    def __init__(self, max_requests: int | None):
        self.max_requests = max_requests
        self.verification = 0
        self.lookups = 0
        self._lock = threading.Lock()

    @property
    def requests(self) -> int:
        return self.verification + self.lookups

    def spend(self, what: str) -> None:
        """Count one request (``verification`` or ``lookup``), or raise at the ceiling."""
        with self._lock:
            if self.max_requests is not None and self.requests >= self.max_requests:
                raise BudgetExhausted(
                    f"live-check: stopped at --max-requests {self.max_requests} after "
                    f"{self.verification} verification and {self.lookups} lookup request(s); "
                    "no report was written. Raise --max-requests and run it again"
                )
            if what == "verification":
                self.verification += 1
            else:
                self.lookups += 1

    def to_json(self) -> dict[str, int | None]:
        return {
            "requests": self.requests,
            "verificationRequests": self.verification,
            "lookups": self.lookups,
            "maxRequests": self.max_requests,
        }


def check_budget(max_requests: int | None, cases: int, repeat: bool, verify: bool) -> int:
    """The requests a run will send (step 1); ``BudgetExhausted`` when over the ceiling."""
    lookups = cases * (2 if repeat else 1)
    planned = lookups + (2 if verify else 0)
    if max_requests is not None and planned > max_requests:
        parts = [f"{lookups} lookup(s) of {cases} case(s)"]
        if verify:
            parts.insert(0, "2 verification list requests")
        raise BudgetExhausted(
            f"live-check: needs {planned} requests ({' and '.join(parts)}) but --max-requests "
            f"is {max_requests}; nothing was sent. Pass --max-requests {planned} or more, or "
            "fewer cases (--case)"
        )
    return planned


def evidence_ids(items: Sequence[Mapping[str, Any]]) -> list[str]:
    """The ids of a search's results in rank order: ``chunkId``, else ``docId``, else
    ``source``."""
    out = []
    for item in items:
        value = item.get("chunkId") or item.get("docId") or item.get("source")
        out.append(str(value))
    return out


def repeat_failures(
    case_ids: Sequence[str],
    first: Sequence[Sequence[Mapping[str, Any]]],
    second: Sequence[Sequence[Mapping[str, Any]]],
) -> list[ServiceFailure]:
    """An ``unstable-ranking`` failure for every case whose two searches returned other
    evidence ids (pure; the three sequences are in the same order)."""
    out = []
    for case_id, a, b in zip(case_ids, first, second, strict=True):
        ids_a, ids_b = evidence_ids(a), evidence_ids(b)
        if ids_a != ids_b:
            at = next(
                (i for i, (x, y) in enumerate(zip(ids_a, ids_b, strict=False)) if x != y),
                min(len(ids_a), len(ids_b)),
            )
            out.append(
                ServiceFailure(
                    "lookups",
                    "unstable-ranking",
                    f"case {case_id}: the repeated search differs from rank {at + 1} "
                    f"({len(ids_a)} then {len(ids_b)} result(s); "
                    f"{', '.join(ids_a[at : at + 3]) or '-'} then "
                    f"{', '.join(ids_b[at : at + 3]) or '-'})",
                    case_id=case_id,
                )
            )
    return out


class ServiceVerifier:
    """The before and after verifications of one run over a loaded state."""

    def __init__(self, path: Path, state: Mapping[str, Any], budget: RequestBudget):
        self.path = path
        self.state = state
        self.budget = budget
        self.documents: dict[str, dict[str, Any]] = dict(state["documents"])
        self.scopes = {
            r["kbScope"] for r in self.documents.values() if isinstance(r.get("kbScope"), str)
        }
        self.phases: dict[str, dict[str, Any]] = {}
        self.failures: list[ServiceFailure] = []

    def verify(self, service: HttpService, phase: str) -> None:
        """One verification (step 3 or 5): a list request, checked against the state."""
        self.budget.spend("verification")
        listed, complete = service.listing()
        findings, verified = verify_records(self.documents, listed, complete, self.scopes)
        failures = [
            ServiceFailure(phase, f.kind, f.message, f.source, f.document_id) for f in findings
        ]
        if phase == "before" and self.state.get("complete") is not True:
            failures.insert(
                0,
                ServiceFailure(
                    phase,
                    "incomplete-state",
                    f"incomplete: {self.path} holds {len(self.documents)} document(s) of an "
                    "unfinished preparation; run `ragsnap prepare` with this state to finish it",
                ),
            )
        self.phases[phase] = {
            "passed": not failures,
            "documents": verified,
            "failures": len(failures),
        }
        self.failures += failures

    def section(
        self, repeat: Sequence[ServiceFailure] | None, repeated_cases: int
    ) -> dict[str, Any]:
        """The report's ``service`` section (``repeat`` None: no ``--repeat-check``)."""
        return service_section(
            state={
                "path": str(self.path),
                "documents": len(self.documents),
                "manifestSha256": sha256_json(self.documents),
            },
            before=self.phases.get("before"),
            after=self.phases.get("after"),
            failures=[*self.failures, *(repeat or ())],
            repeat=None if repeat is None else (repeated_cases, len(repeat)),
            budget=self.budget,
        )


def service_section(
    *,
    state: Mapping[str, Any] | None,
    before: Mapping[str, Any] | None,
    after: Mapping[str, Any] | None,
    failures: Sequence[ServiceFailure],
    repeat: tuple[int, int] | None,
    budget: RequestBudget,
) -> dict[str, Any]:
    """The ``service`` section of a live-check report (pure): failures in phase order."""
    ordered = sorted(failures, key=lambda f: PHASES.index(f.phase))
    by_kind: dict[str, int] = {}
    for failure in ordered:
        by_kind[failure.kind] = by_kind.get(failure.kind, 0) + 1
    return {
        "verdict": "invalid" if ordered else "valid",
        "state": dict(state) if state is not None else None,
        "before": dict(before) if before is not None else None,
        "after": dict(after) if after is not None else None,
        "repeatCheck": (None if repeat is None else {"cases": repeat[0], "unstable": repeat[1]}),
        "failuresByKind": by_kind,
        "failures": [f.to_json() for f in ordered],
        "counters": budget.to_json(),
    }


def _sha256(text: str | None) -> str | None:
    return None if text is None else hashlib.sha256(text.encode("utf-8")).hexdigest()


def private_service(section: Mapping[str, Any]) -> dict[str, Any]:
    """The privacy view of a ``service`` section: no message, source, path or URL."""
    state = section["state"]
    return {
        **{k: v for k, v in section.items() if k not in ("state", "failures")},
        "state": (
            None
            if state is None
            else {"documents": state["documents"], "manifestSha256": state["manifestSha256"]}
        ),
        "failures": [
            {
                "phase": f["phase"],
                "kind": f["kind"],
                "documentId": f["documentId"],
                "sourceSha256": _sha256(f["source"]),
                "caseId": f["caseId"],
            }
            for f in section["failures"]
        ],
    }


def _phase(result: Mapping[str, Any] | None) -> str:
    if result is None:
        return "not run"
    if result["passed"]:
        return f"passed ({result['documents']} document(s) as recorded)"
    return f"{result['failures']} failure(s) ({result['documents']} document(s) as recorded)"


def render_service_markdown(section: Mapping[str, Any], private: bool) -> list[str]:
    """The Markdown lines of a ``service`` section: verdict, failures, phases, counters."""
    failures = section["failures"]
    c = section["counters"]
    ceiling = f" of at most {c['maxRequests']}" if c["maxRequests"] is not None else ""
    lines = [f"## Service verification ({section['verdict']})", ""]
    if failures:
        by_kind = ", ".join(f"{k} {n}" for k, n in sorted(section["failuresByKind"].items()))
        lines += [
            f"**INVALID: {len(failures)} verification failure(s)** ({by_kind}); the service "
            "did not hold what the state records, so the case results below do not count.",
            "",
        ]
        if private:
            rows = [
                [f["phase"], f["kind"], f["documentId"], f["caseId"], f["sourceSha256"]]
                for f in failures
            ]
            header = ("phase", "kind", "document id", "case", "source sha256")
            lines.append(markdown_table(header, rows))
        else:
            rows = [[f["phase"], f["kind"], f["message"]] for f in failures]
            lines.append(markdown_table(("phase", "kind", "failure"), rows))
        lines.append("")
    state = section["state"]
    if state is not None:
        lines.append(
            f"State: {state['documents']} document(s), manifest sha256 "
            f"`{state['manifestSha256'][:12]}`"
            + (f" (`{state['path']}`)" if "path" in state else "")
            + "."
        )
        lines += [f"- before: {_phase(section['before'])}", f"- after: {_phase(section['after'])}"]
    repeat = section["repeatCheck"]
    if repeat is not None:
        lines.append(f"- repeat check: {repeat['cases']} case(s), {repeat['unstable']} unstable")
    lines.append(
        f"- requests: {c['requests']}{ceiling} ({c['verificationRequests']} verification, "
        f"{c['lookups']} lookup(s))"
    )
    return lines

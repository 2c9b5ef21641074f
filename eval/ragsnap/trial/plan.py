"""A trial plan: what a trial compares, pinned by digests so it can be run again exactly.

A plan holds the *input digests*, each over an input's content:

==============  ==============================================================
``corpus``      the corpus's sources and index hashes (content and chunking)
``cases``       the golden cases file's bytes (queries, splits, judgments)
``judgments``   every case's judgments (targets, grades, spans), by case id
``vectors``     every vector provider's fingerprint (model identity, revision,
                dimension) and the SHA-256 of each file it reads (a frozen
                vectors file, an alias file), streamed in chunks
``providers``   the providers' fingerprints alone
``aliases``     the alias files' bytes (``--aliases``, ``trial.aliases``)
``gates``       the gates file's bytes (``--gates``, ``trial.gates``)
==============  ==============================================================

(``aliases`` and ``gates`` only when the trial has one; a trial over a
service has ``cases``, ``judgments`` and ``gates``), the methods with every
setting that can change their results (retrievers, fusion profile and
weights, reranker and depth, score floors, candidates, the lookup settings),
the ranking depth, the split, the number of measured repetitions and the
shuffle seed. Its identity is the SHA-256 of its canonical JSON (sorted keys,
no spaces), recorded in the plan file and in every report.

``ragsnap trial --write-plan plan.json`` writes one without running;
``--plan plan.json`` runs exactly that plan: a flag that would change it is a
usage error, and inputs whose digest differs from the plan's are refused,
naming the input that differs, its file, and the fix (QilbeeDB's "pinned
plan"). A matching hash shows the inputs are the same; it is not proof of
preregistration. A plan of version 1 (before the digests covered the
vectors' files, the aliases and the gates) is refused with the same fix:
write a new plan.

A trial over a service (``--backend http``) has no corpus to digest and no
pipeline settings: its plan holds ``backend: {name: http, corpusRevision}``
(the revision the service's health answer reports, null when it reports
none: the corpus is then not pinned), the cases' digests as its inputs, and
per method the request fields ``http.methods`` sends (``request``), and a
service's budgets per request (``backend.budgets: {records, bytes}``, pinned
like the rest: a plan run with other budgets is refused). The
service's base URL is not part of the plan (the same plan runs against
another deployment of the same corpus). An embedded plan has no ``backend``;
a plan of one backend is refused by a trial of the other.

``embedder`` is there only when ``--embedder NAME`` chose one in place of
``kb.embedder``: a run of the plan embeds with it, as it runs with the plan's
depth and split (``--embedder`` with ``--plan`` is a usage error).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import InputError

__all__ = [
    "PLAN_KIND",
    "PLAN_SCHEMA_VERSION",
    "SPLITS",
    "Plan",
    "canonical_sha256",
    "check_plan_version",
    "corpus_digest",
    "judgments_digest",
]

#: 2: the input digests cover the vectors' files, the judgments, aliases and gates
PLAN_SCHEMA_VERSION = 2
PLAN_KIND = "ragsnap-trial-plan"
SPLITS = ("dev", "test", "all")


def canonical_sha256(value: Any) -> str:
    """SHA-256 of ``value`` as canonical JSON (sorted keys, compact, UTF-8)."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def corpus_digest(index_hashes: Mapping[str, str]) -> str:
    """One digest of a corpus: its sources and their index hashes (content and chunking)."""
    return canonical_sha256(sorted(index_hashes.items()))


def judgments_digest(judgments: Mapping[str, Sequence[Any]]) -> str:
    """One digest of the cases' judgments: case id -> its judgments (dataclasses with
    kind, target, grade and spans), in the cases' order."""
    return canonical_sha256(
        [
            [case_id, [[j.kind, j.target, j.grade, list(j.spans)] for j in listed]]
            for case_id, listed in judgments.items()
        ]
    )


def check_plan_version(data: Any, path: Any) -> None:
    """Refuse a plan file of another version (before its schema is checked), with the
    fix: an older plan does not pin what this one does."""
    if not isinstance(data, dict) or data.get("kind") != PLAN_KIND:
        return  # the schema names what is wrong
    version = data.get("schemaVersion")
    if version == PLAN_SCHEMA_VERSION:
        return
    if isinstance(version, int) and not isinstance(version, bool) and version < PLAN_SCHEMA_VERSION:
        raise InputError(
            path,
            f"is a version {version} plan, written by an older ragsnap: it does not pin the "
            "content of the frozen vectors, alias and gates files, so it cannot show that "
            "this run's inputs are the plan's",
            "write a new plan with `ragsnap trial --write-plan FILE` (with the same flags)",
            "/schemaVersion",
        )
    raise InputError(
        path,
        f"has schemaVersion {version!r}; this ragsnap reads version {PLAN_SCHEMA_VERSION}",
        "write the plan with this ragsnap (`ragsnap trial --write-plan FILE`)",
        "/schemaVersion",
    )


@dataclass(frozen=True, slots=True)
class Plan:
    """What a trial runs; ``inputs`` are digests, ``methods`` full definitions."""

    inputs: Mapping[str, Any]
    methods: Sequence[Mapping[str, Any]]
    depth: int | None
    split: str
    repetitions: int
    seed: int
    #: a service's trial: ``{"name": "http", "corpusRevision": ...}``; None: embedded
    backend: Mapping[str, Any] | None = None
    #: ``--embedder NAME`` in place of kb.embedder (a run of the plan uses it); None: none
    embedder: str | None = None

    def to_json(self) -> dict[str, Any]:
        out = {
            "inputs": dict(self.inputs),
            "methods": [dict(m) for m in self.methods],
            "depth": self.depth,
            "split": self.split,
            "repetitions": self.repetitions,
            "seed": self.seed,
        }
        if self.backend is not None:
            out["backend"] = dict(self.backend)
        if self.embedder is not None:
            out["embedder"] = self.embedder
        return out

    @property
    def backend_name(self) -> str:
        return "embedded" if self.backend is None else str(self.backend["name"])

    @property
    def sha256(self) -> str:
        return canonical_sha256(self.to_json())

    @property
    def method_names(self) -> list[str]:
        return [str(m["name"]) for m in self.methods]

    def file_json(self) -> dict[str, Any]:
        """The plan file: the plan, its kind, version and hash."""
        return {
            "schemaVersion": PLAN_SCHEMA_VERSION,
            "kind": PLAN_KIND,
            "plan": self.to_json(),
            "planSha256": self.sha256,
        }

    @classmethod
    def from_file_json(cls, data: Any, path: Any) -> Plan:
        """Read a (schema-validated) plan file; its hash must match its contents."""
        plan = data["plan"]
        made = cls(
            inputs=plan["inputs"],
            methods=plan["methods"],
            depth=plan["depth"],
            split=plan["split"],
            repetitions=plan["repetitions"],
            seed=plan["seed"],
            backend=plan.get("backend"),
            embedder=plan.get("embedder"),
        )
        if made.sha256 != data["planSha256"]:
            raise InputError(
                path,
                "its planSha256 does not match the plan it holds (the plan was edited)",
                "write a new plan with `ragsnap trial --write-plan`, or restore this one",
                "/planSha256",
            )
        return made

    def differences(self, other: Plan) -> list[str]:
        """What differs from ``other`` (inputs first), as ``/pointer: this -> other``."""
        out: list[str] = []
        mine_backend, their_backend = dict(self.backend or {}), dict(other.backend or {})
        for key in sorted(set(mine_backend) | set(their_backend)):
            if mine_backend.get(key) != their_backend.get(key):
                out.append(f"/backend/{key}: {mine_backend.get(key)} -> {their_backend.get(key)}")
        for key in sorted(set(self.inputs) | set(other.inputs)):
            mine, theirs = self.inputs.get(key), other.inputs.get(key)
            if mine != theirs:
                out.append(f"/inputs/{key}: {mine} -> {theirs}")
        mine_methods = {str(m["name"]): m for m in self.methods}
        their_methods = {str(m["name"]): m for m in other.methods}
        if list(mine_methods) != list(their_methods):
            out.append(f"/methods: {list(mine_methods)} -> {list(their_methods)}")
        else:
            for name, definition in mine_methods.items():
                if dict(definition) != dict(their_methods[name]):
                    out.append(f"/methods/{name}: its settings changed")
        for key in ("depth", "split", "repetitions", "seed", "embedder"):
            if getattr(self, key) != getattr(other, key):
                out.append(f"/{key}: {getattr(self, key)} -> {getattr(other, key)}")
        return out

"""Privacy views of the score report and the baseline diff (``--privacy``).

Pure functions from a full report dict to a report that can leave the team
(GoodBuddy's rule): case, category, language and split ids, SHA-256 hashes of
the inputs, aggregate and per-case metrics, hit levels, ranks, counts and
id-based failure reasons. Never a query, title, chunk text, context, source
name, file path, endpoint, model name, fingerprint, token, metadata or vector.
The views are computed from the full report, so a diff is computed on the full
data first and made private after (``score --privacy --compare-to``).

A private score report (``private-report.schema.json``) is marked
``"privacy": true`` and differs from the full one in:

* ``inputs``: only hashes: ``casesSha256`` (cases, queries, judgments),
  ``fixturesSha256`` (the saved lookups, with their generator: backend,
  method, retrieval settings, embedder), and, when ``score`` computed them,
  ``providersSha256`` (the distinct embedder fingerprints of the fixtures) and
  ``evaluationDefinitionSha256`` (``evaluation_definition``: the cases hash,
  the distinct fixture generators, the scoring version and the measures);
* each case keeps ``id``, ``category``, ``language``, ``split``, ``topK``,
  ``noAnswer``, ``fixture``, ``passed``, ``hitLevel``, ``minHitLevel``,
  ``firstExpectedRank``, ``evidenceCount``, the coverage counts, ``metrics``
  ``skippedExpectations`` and ``notApplicable`` (expectation and part names);
  ``matchedSources`` becomes the count
  ``matchedTargets``, ``knownFailure`` a boolean, and ``reasons``
  ``private_reasons`` of them. Dropped: ``query``, ``kbScope``,
  ``topSources``, ``selectedAttempt``, ``fallbackReasons``,
  ``evidenceStatus``, ``rerankTopSource``, ``contextSources``; its ``coverage``
  keeps its ranks and whether each target was covered, each target and chunk id
  (sources, doc ids, keywords, breadcrumbs, spans: corpus text) replaced by
  ``private_id`` of it, a stable hash, so two private reports still diff;
* ``outcome`` (counts and the knownFailures mode), ``notApplicable`` (counts) and
  ``labelCheck`` (a status and a count) are kept as they are.

A private diff (``private-diff-report.schema.json``) names its baseline
``"baseline"`` (not its path), keeps only the hashes of both reports' inputs,
drops each case's query and top sources, makes its reasons private and keeps
the changes of the pipeline fields without their values, and each ``lost`` entry
with its target and chunk id as ``private_id`` (an expectation's target is a
field name, kept); its ``causes`` (case
ids and the names of the aggregate rows they moved) are kept as they are. The diff of two
private reports is private by itself: it compares pass states, hit levels,
first ranks and every aggregate, as the full diff does.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

__all__ = [
    "PRIVATE_CASE_FIELDS",
    "REDACTED_CHANGE_FIELDS",
    "evaluation_definition",
    "is_private",
    "private_coverage",
    "private_diff",
    "private_id",
    "private_inputs",
    "private_reasons",
    "private_report",
    "sha256_json",
]

#: the case fields a private score report keeps as they are
PRIVATE_CASE_FIELDS = (
    "id",
    "category",
    "language",
    "split",
    "topK",
    "noAnswer",
    "fixture",
    "passed",
    "hitLevel",
    "minHitLevel",
    "firstExpectedRank",
    "evidenceCount",
    "breadcrumbsCovered",
    "breadcrumbsExpected",
    "keywordsCovered",
    "keywordsExpected",
    "metrics",
    "skippedExpectations",
    "notApplicable",
)
#: diff change fields whose values may name sources or service codes: kept as a
#: change, values dropped
REDACTED_CHANGE_FIELDS = ("selectedAttempt", "fallbackReasons", "evidenceStatus", "rerankTopSource")


def sha256_json(value: Any) -> str:
    """SHA-256 of ``value`` as canonical JSON (sorted keys, compact, UTF-8)."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def private_id(text: str) -> str:
    """A stable stand-in for a target, keyword, span or chunk id in a private view: the
    first 16 hex digits of its UTF-8 SHA-256."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _hashed(value: Any) -> Any:
    return private_id(value) if isinstance(value, str) else value


def is_private(report: Mapping[str, Any]) -> bool:
    """Whether a report (of any kind) is a privacy view."""
    return report.get("privacy") is True


def evaluation_definition(
    report: Mapping[str, Any], generators: Iterable[Mapping[str, Any]]
) -> dict[str, str]:
    """``providersSha256`` and ``evaluationDefinitionSha256`` of a score run.

    ``generators`` are the fixtures' ``generator`` blocks (backend, method,
    retrieval settings, embedder fingerprint, pipeline version, kbScope, topK).
    """
    distinct = sorted({sha256_json(dict(g)): dict(g) for g in generators}.items())
    embedders = sorted({sha256_json(g.get("embedder")) for _, g in distinct})
    return {
        "providersSha256": sha256_json(embedders),
        "evaluationDefinitionSha256": sha256_json(
            {
                "cases": report["inputs"]["casesSha256"],
                "generators": [key for key, _ in distinct],
                "scoringVersion": report["scoringVersion"],
                "measures": sorted(report["summary"]["metrics"]),
            }
        ),
    }


def private_inputs(inputs: Mapping[str, Any]) -> dict[str, Any]:
    """Only the hashes of a report's ``inputs`` (never the file paths)."""
    return {key: value for key, value in inputs.items() if key.endswith("Sha256")}


# --- failure reasons --------------------------------------------------------------------

_LEVEL = re.compile(
    r"hit level (strong|medium|weak|miss) is below the minimum (strong|medium|weak)"
)
_PRIVATE_LEVEL = re.compile(
    _LEVEL.pattern + r"; [0-9]+ expected target\(s\) found in the top [0-9]+, "
    r"breadcrumbs [0-9]+/[0-9]+, keywords [0-9]+/[0-9]+"
)
_NO_ANSWER = re.compile(r"no-answer case returned [0-9]+ evidence block\(s\)")
#: verbatim reasons that quote nothing of the case
_VERBATIM = ("fixture missing", "stale fixture: its query differs from the case's query")
#: reason prefix -> its private form (the value it quotes is left out)
_REWORDED = (
    ("selected attempt ", "selected attempt differs from the expected one"),
    ("fallback reasons ", "fallback reasons differ from the expected ones"),
    ("fallback reason ", "expected fallback reason not among the fallback reasons"),
    ("evidence status ", "evidence status differs from the expected one"),
    ("context pack lacks ", "context pack lacks expected source(s)"),
    ("rerank top source ", "rerank top source differs from the expected one"),
)


def _private_reason(reason: str, case: Mapping[str, Any] | None) -> str:
    if reason in _VERBATIM or _NO_ANSWER.fullmatch(reason):
        return reason
    if _LEVEL.fullmatch(reason):
        if case is None or "matchedSources" not in case:
            return reason
        return (
            f"{reason}; {len(case['matchedSources'])} expected target(s) found in the top "
            f"{case['topK']}, breadcrumbs {case['breadcrumbsCovered']}/"
            f"{case['breadcrumbsExpected']}, keywords {case['keywordsCovered']}/"
            f"{case['keywordsExpected']}"
        )
    if _PRIVATE_LEVEL.fullmatch(reason):
        return reason  # already private, with its counts
    return next((p for s, p in _REWORDED if reason.startswith(s)), "other failure")


def private_reasons(case: Mapping[str, Any]) -> list[str]:
    """A full case entry's reasons with nothing quoted: ``hit level miss is below the
    minimum medium; 0 expected target(s) found in the top 5, breadcrumbs 0/1, keywords
    0/2``. A reason of an unknown form becomes ``other failure``."""
    return [_private_reason(r, case) for r in case["reasons"]]


# --- the score report -------------------------------------------------------------------


def _private_case(case: Mapping[str, Any]) -> dict[str, Any]:
    entry = {name: case[name] for name in PRIVATE_CASE_FIELDS if name in case}
    entry["matchedTargets"] = len(case["matchedSources"])
    entry["knownFailure"] = bool(case.get("knownFailure"))
    entry["reasons"] = private_reasons(case)
    if "coverage" in case:
        entry["coverage"] = private_coverage(case["coverage"])
    return entry


def private_coverage(coverage: Mapping[str, Any]) -> dict[str, Any]:
    """A case's ``coverage`` with each target and chunk id replaced by its ``private_id``."""
    return {
        key: [{k: _hashed(v) for k, v in item.items()} for item in items]
        for key, items in coverage.items()
    }


def private_report(
    report: Mapping[str, Any], hashes: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """The privacy view of a score report; ``hashes`` (``evaluation_definition``) are
    added to its ``inputs``. A private report is returned as it is."""
    if is_private(report):
        return dict(report)
    out = {
        "schemaVersion": report["schemaVersion"],
        "kind": report["kind"],
        "privacy": True,
        "scoringVersion": report["scoringVersion"],
        "inputs": {**private_inputs(report["inputs"]), **(hashes or {})},
        "summary": report["summary"],
        "groups": report["groups"],
        "cases": [_private_case(c) for c in report["cases"]],
        "orphanedFixtures": list(report["orphanedFixtures"]),
        # counts and the knownFailures mode only; absent from reports that predate it
        **({"outcome": dict(report["outcome"])} if "outcome" in report else {}),
        **({"notApplicable": report["notApplicable"]} if "notApplicable" in report else {}),
        **({"labelCheck": dict(report["labelCheck"])} if "labelCheck" in report else {}),
    }
    provenance = report.get("provenance")
    if provenance is not None:  # its lines name seed files and settings: counts only
        out["provenance"] = {
            "staleCauses": len(provenance["stale"]),
            "notes": len(provenance["notes"]),
        }
    return out


# --- the diff ---------------------------------------------------------------------------


def _private_change(change: Mapping[str, Any]) -> dict[str, Any]:
    if change["field"] not in REDACTED_CHANGE_FIELDS:
        return dict(change)
    return {**change, "baseline": None, "current": None}


def _private_lost(entry: Mapping[str, Any]) -> dict[str, Any]:
    if entry["kind"] == "expectation":
        return dict(entry)
    return {**entry, "target": private_id(entry["target"]), "before": _hashed(entry["before"])}


#: attribution evidence kept as it is in a privacy view (positions, scores, settings,
#: fixed vocabularies); document names are hashed, changed words counted, the rest dropped
_PLAIN_EVIDENCE = frozenset(
    {
        "absent",
        "budgetChars",
        "charCount",
        "confidence",
        "evidenceRank",
        "evidenceStatus",
        "fallbackReasons",
        "filteredOut",
        "floor",
        "fusedRank",
        "lexicalRank",
        "listed",
        "rerankRank",
        "selectedAttempt",
        "settings",
        "textChanged",
        "topK",
        "vectorRank",
    }
)


#: a target's trail fields that name or quote the corpus
_NAMED_TRAIL = frozenset({"category", "text"})


def _private_cause(cause: Mapping[str, Any], lost: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    ev = cause["evidence"]
    out = {k: v for k, v in ev.items() if k in _PLAIN_EVIDENCE}
    for key in ("document", "documentChanged"):
        if ev.get(key) is not None:
            out[key] = private_id(ev[key])
    for key in ("removed", "added"):
        if key in ev:
            out[f"{key}Count"] = len(ev[key])
    first = cause["losses"][0]
    expectation = first < len(lost) and lost[first]["kind"] == "expectation"
    return {
        **cause,
        "target": cause["target"] if expectation else private_id(cause["target"]),
        "before": {k: v for k, v in cause["before"].items() if k not in _NAMED_TRAIL},
        "after": {k: v for k, v in cause["after"].items() if k not in _NAMED_TRAIL},
        "evidence": out,
    }


def _private_diff_case(
    case: Mapping[str, Any], redo: Callable[[list[str]], list[str]], hashed: bool = False
) -> Any:
    lost = case.get("lost")
    causes = case.get("attribution")
    return {
        **(
            {}
            if lost is None
            else {"lost": [dict(e) if hashed else _private_lost(e) for e in lost]}
        ),
        **(
            {}
            if causes is None
            else {"attribution": [_private_cause(c, lost or ()) for c in causes]}
        ),
        "id": case["id"],
        "status": case["status"],
        "category": case["category"],
        "language": case["language"],
        "changes": [_private_change(c) for c in case["changes"]],
        "reasons": redo(case["reasons"]),
        "baselineReasons": redo(case["baselineReasons"]),
    }


def private_diff(
    diff: Mapping[str, Any],
    baseline: Mapping[str, Any] | None = None,
    current: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The privacy view of a score diff. Its cases' reasons are made private from the
    full case entries of ``baseline`` and ``current`` when given (the counts of the
    hit-level reason come from them); otherwise each reason is reworded alone."""
    if is_private(diff):
        return dict(diff)
    # a diff with a private report compared hashed coverage: its losses are hashed already
    hashed = any(r is not None and is_private(r) for r in (baseline, current))
    entries = {
        role: {c["id"]: c for c in report["cases"]} if report is not None else {}
        for role, report in (("baseline", baseline), ("current", current))
    }

    def reasons_of(role: str, case_id: str) -> Callable[[list[str]], list[str]]:
        def redo(reasons: list[str]) -> list[str]:
            entry = entries[role].get(case_id)
            if entry is not None and (
                list(entry["reasons"]) != list(reasons) or "matchedSources" not in entry
            ):
                entry = None
            return [_private_reason(r, entry) for r in reasons]

        return redo

    cases = []
    for case in diff["cases"]:
        row = _private_diff_case(case, reasons_of("current", case["id"]), hashed)
        row["baselineReasons"] = reasons_of("baseline", case["id"])(case["baselineReasons"])
        cases.append(row)
    return {
        **{k: v for k, v in diff.items() if k not in ("cases",)},
        "privacy": True,
        "baseline": "baseline",
        "baselineInputs": private_inputs(diff["baselineInputs"]),
        "currentInputs": private_inputs(diff["currentInputs"]),
        "cases": cases,
        **(
            {}
            if "attribution" not in diff
            else {
                "attribution": {
                    **diff["attribution"],
                    "baselineFixtures": None
                    if diff["attribution"]["baselineFixtures"] is None
                    else "baseline",
                }
            }
        ),
    }

"""The privacy view of a live-check report (``live-check --privacy``).

A pure function of the full report (``ragsnap.live.livecheck``). The view
(``private-live-report.schema.json``, marked ``"privacy": true``) keeps case
ids, statuses, counts, ranks, the summary and the check's time, and replaces:

* ``baseUrl`` and ``endpoint`` by ``inputs.providersSha256``, the SHA-256 of
  the service's public URL and similarity endpoint;
* the cases file path and the overrides (``--kb-scope``, ``--top-k``) by
  ``inputs.evaluationDefinitionSha256``: the cases' SHA-256 (queries and
  expectations), the ids of the cases checked, the overrides, the endpoint and
  the report version; ``casesSha256`` stays;
* per case, the query, kbScope, expected sources and doc ids, matched names,
  top results (sources, titles, breadcrumbs, scores) and raw field names by
  the counts ``expectedTargets`` and ``matchedTargets``, ``knownFailure`` by a
  boolean and ``reason`` by an id-based one (``no expected target in the top
  5 (5 result(s))``);
* the ``service`` section (``live-check --state``), when there is one, by
  ``ragsnap.live.verification.private_service``: counts, phases, kinds, server
  document ids, case ids and source-name hashes; no message, source or path.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..scoring.privacy import is_private, sha256_json
from .verification import private_service

__all__ = ["private_live", "private_reason"]


def private_reason(case: Mapping[str, Any]) -> str:
    """Why a case passed, failed or was skipped, without naming a source."""
    status, k, count = case["status"], case["topK"], case["resultCount"]
    if status == "skipped":
        return "noAnswer case: nothing is expected" if case["noAnswer"] else "expects no target"
    if status == "pass":
        return f"an expected target at rank {case['firstExpectedRank']} of the top {k}"
    if count == 0:
        return "no results"
    return f"no expected target in the top {k} ({count} result(s))"


def _case(case: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "caseId": case["caseId"],
        "topK": case["topK"],
        "noAnswer": case["noAnswer"],
        "expectedTargets": len(case["expectedSources"]) + len(case["expectedDocIds"]),
        "matchedTargets": len(case["matched"]),
        "resultCount": case["resultCount"],
        "firstExpectedRank": case["firstExpectedRank"],
        "status": case["status"],
        "reason": private_reason(case),
        "knownFailure": bool(case["knownFailure"]),
    }


def private_live(report: Mapping[str, Any]) -> dict[str, Any]:
    """The privacy view of a live-check report (a private one is returned as it is)."""
    if is_private(report):
        return dict(report)
    cases_sha256 = report["inputs"]["casesSha256"]
    view = {
        "schemaVersion": report["schemaVersion"],
        "kind": report["kind"],
        "privacy": True,
        "checkedAt": report["checkedAt"],
        "inputs": {
            "casesSha256": cases_sha256,
            "evaluationDefinitionSha256": sha256_json(
                {
                    "cases": cases_sha256,
                    "checked": [c["caseId"] for c in report["cases"]],
                    "overrides": report["overrides"],
                    "endpoint": report["endpoint"],
                    "version": report["schemaVersion"],
                }
            ),
            "providersSha256": sha256_json(
                {"baseUrl": report["baseUrl"], "endpoint": report["endpoint"]}
            ),
        },
        "summary": report["summary"],
        "cases": [_case(c) for c in report["cases"]],
    }
    if "service" in report:
        view["service"] = private_service(report["service"])
    return view

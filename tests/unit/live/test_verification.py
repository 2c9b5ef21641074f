"""``ragsnap.live.verification``'s pure parts: kinds of failures, the repeat check, the
budget, the report section and its privacy view."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from ragsnap.errors import BudgetExhausted
from ragsnap.io.schema import validate
from ragsnap.live.livecheck import build_live_report, render_live_markdown
from ragsnap.live.preparation import verify_records
from ragsnap.live.privacy import private_live
from ragsnap.live.verification import (
    RequestBudget,
    ServiceFailure,
    check_budget,
    evidence_ids,
    private_service,
    repeat_failures,
    service_section,
)


def test_each_finding_has_a_kind_and_its_document() -> None:
    docs = {"a": {"id": "1", "revision": "r1", "embedding": "e"}}
    listed = [
        {"source": "a", "id": "1", "revision": "r2", "embedding": "e"},
        {"source": "x", "id": "7", "revision": "r1", "kbScope": "s"},
    ]
    findings, verified = verify_records(docs, listed, False, {"s"})
    assert verified == 0
    assert [(f.kind, f.source, f.document_id) for f in findings] == [
        ("partial-list", None, None),
        ("changed-revision", "a", "1"),
        ("unexpected", "x", "7"),
    ]


def item(chunk: str) -> dict[str, Any]:
    return {"chunkId": chunk, "source": chunk.split("#")[0]}


def test_repeat_check_compares_evidence_ids_in_rank_order() -> None:
    first = [[item("a#1"), item("b#1")], [item("c#1")]]
    again = [[item("b#1"), item("a#1")], [item("c#1")]]
    (failure,) = repeat_failures(["one", "two"], first, again)
    assert (failure.phase, failure.kind, failure.case_id) == ("lookups", "unstable-ranking", "one")
    assert "differs from rank 1" in failure.message and "a#1, b#1 then b#1, a#1" in failure.message
    assert repeat_failures(["one"], [[item("a#1")]], [[item("a#1"), item("b#1")]])[0].message
    assert repeat_failures(["two"], first[1:], again[1:]) == []
    assert evidence_ids([{"docId": "d"}, {"source": "s"}]) == ["d", "s"]


def test_budget_is_planned_then_counted() -> None:
    assert check_budget(8, 3, True, True) == 8
    assert check_budget(None, 3, False, True) == 5
    with pytest.raises(BudgetExhausted, match=r"needs 5 requests .* --max-requests 5 or more"):
        check_budget(4, 3, False, True)
    budget = RequestBudget(2)
    budget.spend("verification")
    budget.spend("lookup")
    with pytest.raises(BudgetExhausted, match="Raise --max-requests"):
        budget.spend("lookup")
    assert budget.to_json() == {
        "requests": 2,
        "verificationRequests": 1,
        "lookups": 1,
        "maxRequests": 2,
    }


def section(*failures: ServiceFailure) -> dict[str, Any]:
    budget = RequestBudget(None)
    budget.spend("verification")
    return service_section(
        state={"path": "/secret/st/s.json", "documents": 2, "manifestSha256": "0" * 64},
        before={"passed": not failures, "documents": 2, "failures": len(failures)},
        after={"passed": True, "documents": 2, "failures": 0},
        failures=list(failures),
        repeat=(1, 0),
        budget=budget,
    )


def test_failures_are_ordered_by_phase_and_counted_by_kind() -> None:
    out = section(
        ServiceFailure("after", "unexpected", "unexpected: x", "x", "7"),
        ServiceFailure("before", "changed-revision", "changed revision: a", "a", "1"),
    )
    assert out["verdict"] == "invalid"
    assert [f["phase"] for f in out["failures"]] == ["before", "after"]
    assert out["failuresByKind"] == {"changed-revision": 1, "unexpected": 1}
    assert section()["verdict"] == "valid"


def test_an_invalid_run_fails_its_verdict_and_its_private_view_names_nothing() -> None:
    service = section(ServiceFailure("before", "missing", "missing: secret-doc", "secret-doc", "1"))
    report = build_live_report(
        [],
        [],
        base_url="http://127.0.0.1:9900",
        endpoint="GET /api/search/similar",
        cases_file="cases/golden-cases.json",
        cases_sha256="a" * 64,
        checked_at="2026-12-01T00:00:00Z",
        overrides={"kbScope": None, "topK": None},
        service=service,
    )
    assert report["summary"]["verdict"] == "invalid"
    markdown = render_live_markdown(report)
    assert markdown.index("**INVALID: 1 verification failure(s)**") < markdown.index("0 of 0")
    private = private_live(report)
    validate(private, "private-live-report", "live.json", "live-check report")
    (failure,) = private["service"]["failures"]
    assert failure == {
        "phase": "before",
        "kind": "missing",
        "documentId": "1",
        "sourceSha256": hashlib.sha256(b"secret-doc").hexdigest(),
        "caseId": None,
    }
    text = json.dumps(private) + render_live_markdown(private)
    assert "secret-doc" not in text and "/secret/" not in text
    assert private_live(private) == private  # a privacy view stays as it is
    assert private_service(service | {"state": None})["state"] is None

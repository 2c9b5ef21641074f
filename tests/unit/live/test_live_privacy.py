"""The privacy view of a live-check report (ragsnap.live.privacy)."""

from __future__ import annotations

import json

from conftest import block, make_case
from ragsnap.io.schema import validate
from ragsnap.live.livecheck import LiveAnswer, build_live_report, render_live_markdown
from ragsnap.live.privacy import private_live
from ragsnap.models import GoldenCase

QUERY = "where is the secret payroll runbook"


def test_private_live_report_holds_ids_counts_and_hashes() -> None:
    cases = [
        GoldenCase.from_json(make_case("c1", query=QUERY, knownFailure="secret reason"), {}),
        GoldenCase.from_json(make_case("c2", query=QUERY, expectedSources=["payroll-db"]), {}),
    ]
    items = ({**block(1, "payroll-db", text="secret chunk"), "title": "Payroll secrets"},)
    answers = [LiveAnswer("secret-scope", 5, items, {"answer": ["results"], "item": ["text"]})] * 2
    full = build_live_report(
        cases,
        answers,
        base_url="https://rag.secret.example.com/base?token=x",
        endpoint="GET /api/secret/similar",
        cases_file="secret/cases.json",
        cases_sha256="0" * 64,
        checked_at="2026-12-01T00:00:00Z",
        overrides={"kbScope": "secret-scope", "topK": None},
    )
    private = private_live(full)
    validate(private, "private-live-report", "l.json", "live-check report")
    text = json.dumps(private) + render_live_markdown(private)
    for secret in (QUERY, "payroll-db", "Payroll", "secret", "mysql-pool", "/api/", "rag."):
        assert secret not in text, secret
    first, second = private["cases"]
    assert (first["status"], first["knownFailure"], first["reason"]) == (
        "fail",
        True,
        "no expected target in the top 5 (1 result(s))",
    )
    assert (second["status"], second["matchedTargets"], second["expectedTargets"]) == (
        "pass",
        1,
        1,
    )
    assert private["summary"] == full["summary"]
    assert private_live(private) == private

"""The live-check report's HTML page (ragsnap.live.html)."""

from __future__ import annotations

from conftest import block, make_case
from ragsnap.live.html import render_live_html
from ragsnap.live.livecheck import LiveAnswer, build_live_report
from ragsnap.live.privacy import private_live
from ragsnap.models import GoldenCase

QUERY = "where is the <b>secret</b> payroll runbook"


def live_report() -> dict[str, object]:
    cases = [GoldenCase.from_json(make_case("c1", query=QUERY, expectedSources=["payroll-db"]), {})]
    items = ({**block(1, "payroll-db", text="secret chunk"), "title": "Payroll secrets"},)
    return build_live_report(
        cases,
        [LiveAnswer("scope", 5, items, {"answer": ["results"], "item": ["text"]})],
        base_url="https://rag.secret.example.com/base",
        endpoint="GET /api/secret/similar",
        cases_file="cases.json",
        cases_sha256="0" * 64,
        checked_at="2026-12-01T00:00:00Z",
        overrides={"kbScope": None, "topK": None},
    )


def test_live_page_shows_the_verdict_and_each_case_evidence() -> None:
    page = render_live_html(live_report())
    assert "PASS: 1 of 1 checked case(s) passed" in page
    assert "<b>secret" not in page and "\\u003cb\\u003esecret" in page
    assert "1. payroll-db · Payroll secrets" in page
    assert 'data-chart="live-status"' in page


def test_private_live_page_holds_ids_only() -> None:
    page = render_live_html(private_live(live_report()))
    for secret in ("secret", "payroll", "Payroll", "rag."):
        assert secret not in page, secret
    assert '"c1"' in page

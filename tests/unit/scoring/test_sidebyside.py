"""Baseline and current side by side (ragsnap.scoring.sidebyside) and its place on
the HTML page (ragsnap.scoring.html)."""

from __future__ import annotations

import re
from typing import Any

from conftest import block, make_case, make_fixture
from ragsnap.models import Fixture, GoldenCase
from ragsnap.scoring.attribution import Side, attribute_diff, word_diff
from ragsnap.scoring.diff import Tolerances, diff_reports
from ragsnap.scoring.hits import score_case
from ragsnap.scoring.html import render_score_html
from ragsnap.scoring.privacy import private_diff, private_report
from ragsnap.scoring.report import build_report
from ragsnap.scoring.sidebyside import NOT_REPORTED, why_context

INPUTS = {"cases": "c.json", "casesSha256": "0" * 64, "fixtures": "f", "fixturesSha256": "1" * 64}
SCRIPT = "<script>alert(1)</script>"
BEFORE = f"## Retention\n\nLogs are kept for 14 days in the hot tier. {SCRIPT}"
AFTER = f"## Retention\n\nLogs are kept for two weeks in the hot tier. {SCRIPT}"


def _side(text: str) -> tuple[dict[str, Any], Side]:
    case = GoldenCase.from_json(make_case("logs", expectedKeywords=["14 days"]), {})
    data = make_fixture("logs", [block(1, "mysql-pool", text=text), block(2, "other")])
    report = build_report([score_case(case, Fixture.from_json(data))], [], INPUTS)
    return report, Side(data)


def _scenario() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """The issue's scenario in small: the chunk that held the case's keyword
    '14 days' now says 'two weeks' (and holds markup)."""
    before, old = _side(BEFORE)
    after, new = _side(AFTER)
    diff = diff_reports(before, after, Tolerances(), "base.json")
    attribute_diff(diff, {"logs": (old, new)}, "HEAD:fixtures")
    return before, after, diff


def _why(page: str) -> str:
    found = re.search(r'<h2 id="why">.*?</section>', page, re.S)
    assert found is not None
    return found.group(0)


def test_the_changed_words_are_marked_on_each_side() -> None:
    _, _, diff = _scenario()
    (case,) = why_context(diff, private=False)["cases"]
    assert case["lost"].startswith("lost keyword '14 days'")
    (cause,) = case["causes"]
    assert cause["stage"] == "corpus"
    assert cause["line"] == "mysql-pool#1 text changed: removed '14 days'"
    texts = cause["texts"]
    assert [t for t, changed in texts["baseline"] if changed] == ["14 days"]
    assert [t for t, changed in texts["current"] if changed] == ["two weeks"]
    assert "".join(t for t, _ in texts["baseline"]) == BEFORE  # whitespace kept
    assert "".join(t for t, _ in texts["current"]) == AFTER
    marked = [row for row in cause["rows"] if row["marked"]]
    assert [r["measure"] for r in marked] == ["changed words"]
    assert (marked[0]["baseline"], marked[0]["current"]) == ("'14 days'", "'two weeks'")


def test_word_diff_marks_every_run_and_keeps_the_text() -> None:
    before, after = word_diff("a b c d", "a x c d e")
    assert before == [("a ", False), ("b", True), (" c d", False)]
    assert after == [("a ", False), ("x", True), (" c d ", False), ("e", True)]
    assert word_diff("", "") == ([], [])


def test_a_script_in_a_chunk_text_stays_text_on_the_page() -> None:
    _, after, diff = _scenario()
    page = render_score_html(after, diff)
    why = _why(page)
    assert "<script" not in why
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in why
    assert '<del class="removed" title="removed">14 days</del>' in why
    assert '<ins class="added" title="added">two weeks</ins>' in why
    assert page.count("<script") == 2  # the case data and the page's own script
    assert '<tr class="attributed"><th>corpus <span class="lost-here">lost here</span>' in why
    assert '"w":"why-1"' in page  # the case's row links to its view


def test_a_key_the_trail_leaves_out_is_not_reported() -> None:
    _, _, diff = _scenario()
    (cause,) = diff["cases"][0]["attribution"]
    cause["before"].pop("confidence", None)
    cause["after"] = {"evidenceRank": None, "fusedRank": None, "listed": 2}
    (case,) = why_context(diff, private=False)["cases"]
    rows = {r["measure"]: (r["baseline"], r["current"]) for r in case["causes"][0]["rows"]}
    assert rows["confidence"] == (NOT_REPORTED, NOT_REPORTED)  # the fixtures record none
    assert rows["lexical rank"][1] == NOT_REPORTED
    assert rows["in context"] == ("yes", NOT_REPORTED)
    assert rows["fused rank"] == ("1 of 2", "not in the 2 listed")
    assert rows["evidence rank"] == ("1", "not evidence")
    texts = case["causes"][0]["texts"]
    assert texts["baseline"] == [(BEFORE, False)] and texts["current"] is None
    assert "not reported</p>" in _why(render_score_html(_scenario()[1], diff))


def test_a_private_diff_shows_ranks_only() -> None:
    before, after, diff = _scenario()
    private = private_diff(diff, before, after)
    (case,) = why_context(private, private=True)["cases"]
    (cause,) = case["causes"]
    assert cause["texts"] is None
    assert cause["line"].endswith("text changed: 1 word run(s) removed, 1 added")
    measures = [r["measure"] for r in cause["rows"]]
    assert "category" not in measures and "evidence rank" in measures
    page = render_score_html(private_report(after), private)
    why = _why(page)
    for text in ("14 days", "two weeks", "Logs are kept", "mysql-pool", "alert"):
        assert text not in page, text
    assert 'class="evidence-text' not in why
    assert "1 run(s) removed" in why


def test_a_case_without_attribution_renders_as_before() -> None:
    _, after, diff = _scenario()
    for case in diff["cases"]:
        case.pop("attribution")
    page = render_score_html(after, diff)
    assert 'id="why"' not in page and '"w":' not in page
    assert why_context(diff, private=False)["cases"] == []

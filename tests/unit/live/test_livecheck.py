"""The live post-reindex check's rules and reports (ragsnap.live.livecheck)."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

import pytest

from conftest import block, make_case
from ragsnap.live.livecheck import (
    MAX_CHARS,
    LiveAnswer,
    build_live_report,
    check_case,
    public_url,
    raw_fields,
    render_live_markdown,
)
from ragsnap.models import GoldenCase

TOKEN = "s3cr3t-token-value"
SECRET_TEXT = "the chunk body nobody outside should read"


def case(case_id: str = "c1", **fields: Any) -> GoldenCase:
    return GoldenCase.from_json(make_case(case_id, **fields), {"kbScope": "rag-eval"})


def item(rank: int, source: str, **extra: Any) -> dict[str, Any]:
    """One similarity result in ragsnap's names, with the text the report must drop."""
    data = block(rank, source, text=SECRET_TEXT)
    data.update(extra)
    return data


def answer(items: Sequence[dict[str, Any]], top_k: int = 5) -> LiveAnswer:
    raw = {"query": "q", "results": list(items), "topK": top_k}
    return LiveAnswer("rag-eval", top_k, tuple(items), raw_fields(raw, "results"))


def report(cases: Sequence[GoldenCase], answers: Sequence[LiveAnswer]) -> dict[str, Any]:
    return build_live_report(
        cases,
        answers,
        base_url="http://127.0.0.1:9900/?key=abc",
        endpoint="GET /api/search/similar",
        cases_file="cases/golden-cases.json",
        cases_sha256="ab" * 32,
        checked_at="2026-07-06T00:00:00Z",
        overrides={"kbScope": None, "topK": None},
    )


# -- one case ---------------------------------------------------------------------------


def test_pass_when_an_expected_source_is_in_the_top_k() -> None:
    entry = check_case(
        case(expectedSources=["mysql-pool", "other"]),
        answer([item(1, "redis"), item(2, "mysql-pool"), item(3, "mysql-pool")]),
    )
    assert entry["status"] == "pass"
    assert entry["firstExpectedRank"] == 2
    assert entry["matched"] == ["mysql-pool"]
    assert entry["reason"] == "mysql-pool at rank 2 of the top 5"
    assert entry["resultCount"] == 3
    assert [r["source"] for r in entry["topResults"]] == ["redis", "mysql-pool", "mysql-pool"]


def test_expected_doc_ids_match_the_doc_id_not_the_source() -> None:
    c = case(expectedSources=None, expectedDocIds=["doc-7"])
    hit = check_case(c, answer([item(1, "a"), item(2, "b", docId="doc-7")]))
    assert (hit["status"], hit["firstExpectedRank"], hit["matched"]) == ("pass", 2, ["doc-7"])
    # a source that happens to equal the expected doc id is not a match
    miss = check_case(c, answer([item(1, "doc-7", docId="doc-a")]))
    assert miss["status"] == "fail"


def test_a_hit_below_the_top_k_fails() -> None:
    items = [item(r, f"other-{r}") for r in range(1, 4)] + [item(4, "mysql-pool")]
    entry = check_case(case(), answer(items, top_k=3))
    assert entry["status"] == "fail"
    assert entry["firstExpectedRank"] is None
    assert entry["resultCount"] == 4  # everything the service sent is counted...
    assert len(entry["topResults"]) == 3  # ...but only the top K is kept and checked
    assert entry["reason"] == "no expected source in the top 3 (top: other-1, other-2, other-3)"


def test_no_results_fails_with_its_own_reason() -> None:
    entry = check_case(case(), answer([]))
    assert (entry["status"], entry["reason"], entry["resultCount"]) == ("fail", "no results", 0)
    assert entry["rawFields"] == {"answer": ["query", "results", "topK"], "item": None}


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ({"noAnswer": True, "expectedSources": None}, "noAnswer case: nothing is expected"),
        (
            {"expectedSources": None, "expectedKeywords": ["pool"]},
            "expects only keywords; live-check matches sources and doc ids",
        ),
    ],
)
def test_cases_without_expected_sources_are_skipped(fields: dict[str, Any], reason: str) -> None:
    entry = check_case(case(**fields), answer([item(1, "anything")]))
    assert (entry["status"], entry["reason"]) == ("skipped", reason)
    assert entry["firstExpectedRank"] is None


def test_long_strings_are_cut_and_odd_values_stringified() -> None:
    long_crumb = "A > " * 200
    result = item(1, "mysql-pool", breadcrumb=long_crumb, score={"x": 1})
    del result["rank"]
    entry = check_case(case(), answer([result]))
    top = entry["topResults"][0]
    assert len(top["breadcrumb"]) == MAX_CHARS and top["breadcrumb"].endswith("…")
    assert top["score"] == "{'x': 1}"
    assert top["rank"] == 1  # no rank from the service: its position
    assert top["textChars"] == len(SECRET_TEXT)
    assert "text" not in top


# -- raw fields and URLs ----------------------------------------------------------------


def test_raw_fields_follow_the_dotted_results_path() -> None:
    raw = {"data": {"items": [{"b": 1, "a": 2}], "total": 1}, "code": 0}
    assert raw_fields(raw, "data.items") == {"answer": ["code", "data"], "item": ["a", "b"]}
    assert raw_fields([{"z": 1}], "") == {"answer": None, "item": ["z"]}
    assert raw_fields({"data": None}, "data.items") == {"answer": ["data"], "item": None}


def test_public_url_drops_the_query_string_and_fragment() -> None:
    assert public_url("https://h.example/api/?key=x#frag") == "https://h.example/api"
    assert public_url("http://127.0.0.1:9900") == "http://127.0.0.1:9900"


# -- the whole report -------------------------------------------------------------------


def test_summary_counts_and_verdict() -> None:
    cases = [
        case("ok"),
        case("bad"),
        case("none", noAnswer=True, expectedSources=None),
        case("empty"),
    ]
    answers = [
        answer([item(1, "mysql-pool")]),
        answer([item(1, "redis")]),
        answer([item(1, "redis")]),
        answer([]),
    ]
    r = report(cases, answers)
    assert r["summary"] == {
        "cases": 4,
        "passed": 1,
        "failed": 2,
        "knownFailures": 0,
        "skipped": 1,
        "empty": 1,
        "allEmpty": False,
        "verdict": "fail",
    }
    assert [c["caseId"] for c in r["cases"]] == ["ok", "bad", "none", "empty"]
    assert r["baseUrl"] == "http://127.0.0.1:9900"
    assert r["checkedAt"] == "2026-07-06T00:00:00Z"
    assert r["inputs"] == {"cases": "cases/golden-cases.json", "casesSha256": "ab" * 32}


def test_known_failures_are_reported_but_do_not_fail_the_check() -> None:
    cases = [case("ok"), case("known", knownFailure="paraphrase miss: no shared words")]
    r = report(cases, [answer([item(1, "mysql-pool")]), answer([item(1, "redis")])])
    s = r["summary"]
    assert (s["passed"], s["failed"], s["knownFailures"], s["verdict"]) == (1, 1, 1, "pass")
    known = r["cases"][1]
    assert known["status"] == "fail"
    assert known["knownFailure"] == "paraphrase miss: no shared words"
    assert r["cases"][0]["knownFailure"] is None
    md = render_live_markdown(r)
    assert "**PASS: 1 of 2 checked case(s) passed**" in md
    assert "## Failed cases (0)\n\nNone." in md
    assert "## Known failures (1)" in md and "paraphrase miss: no shared words" in md
    assert re.search(r"^\| known +\| known failure +\|", md, re.M)

    # a new failure beside a known one fails; a known case that passes is just a pass
    cases = [case("new"), case("known", knownFailure="x")]
    r = report(cases, [answer([item(1, "redis")]), answer([item(1, "mysql-pool")])])
    s = r["summary"]
    assert (s["passed"], s["failed"], s["knownFailures"], s["verdict"]) == (1, 1, 0, "fail")


def test_an_empty_index_fails_even_when_every_failure_is_known() -> None:
    cases = [case("a", knownFailure="x"), case("b", knownFailure="y")]
    r = report(cases, [answer([]), answer([])])
    assert r["summary"]["knownFailures"] == 2
    assert (r["summary"]["allEmpty"], r["summary"]["verdict"]) == (True, "fail")


def test_all_passing_and_skipped_is_a_pass() -> None:
    cases = [case("ok"), case("none", noAnswer=True, expectedSources=None)]
    r = report(cases, [answer([item(1, "mysql-pool")]), answer([item(1, "x")])])
    assert r["summary"]["verdict"] == "pass"
    assert r["summary"]["allEmpty"] is False


def test_all_empty_fails_even_without_checkable_cases() -> None:
    cases = [
        case("a", noAnswer=True, expectedSources=None),
        case("b", noAnswer=True, expectedSources=None),
    ]
    r = report(cases, [answer([]), answer([])])
    s = r["summary"]
    assert (s["failed"], s["skipped"], s["empty"]) == (0, 2, 2)
    assert s["allEmpty"] is True
    assert s["verdict"] == "fail"
    assert "the index looks empty" in render_live_markdown(r)


def test_one_answered_case_is_enough_to_not_be_all_empty() -> None:
    r = report([case("a"), case("b")], [answer([]), answer([item(1, "mysql-pool")])])
    assert r["summary"]["allEmpty"] is False
    assert r["summary"]["empty"] == 1


def test_no_cases_is_not_all_empty() -> None:
    r = report([], [])
    assert r["summary"]["allEmpty"] is False
    assert r["summary"]["verdict"] == "pass"
    assert "No cases." in render_live_markdown(r)


def test_answers_must_match_the_cases() -> None:
    with pytest.raises(ValueError, match="2 cases but 1 answers"):
        report([case("a"), case("b")], [answer([])])


def test_reports_hold_neither_texts_nor_secrets() -> None:
    r = report([case("a"), case("b")], [answer([item(1, "mysql-pool")]), answer([])])
    rendered = json.dumps(r) + render_live_markdown(r)
    assert SECRET_TEXT not in rendered
    assert TOKEN not in rendered
    assert "key=abc" not in rendered
    assert '"text"' in json.dumps(r["cases"][0]["rawFields"])  # the field's name, only


def test_markdown_lists_summary_failures_and_every_case() -> None:
    cases = [case("ok"), case("bad-case", query="why | is it\nslow")]
    r = report(cases, [answer([item(1, "mysql-pool", score=0.87654)]), answer([item(1, "x")])])
    md = render_live_markdown(r)
    assert md.startswith("# ragsnap live check\n\n**FAIL: 1 of 2 checked case(s) passed**")
    assert "against `http://127.0.0.1:9900` (GET /api/search/similar)" in md
    failed = md.split("## Failed cases (1)")[1].split("## All cases")[0]
    assert "bad-case" in failed and "| ok " not in failed
    assert "### ok (pass)" in md and "### bad-case (fail)" in md
    assert "> why | is it slow" in md
    assert "| 0.877 " in md
    assert "| query, results, topK | breadcrumb, chunkId, docId" in md
    assert "sha256 `abababababab`" in md
    assert md.endswith("\n")
    assert render_live_markdown(r) == md  # deterministic


def test_markdown_of_a_passing_run_with_overrides() -> None:
    r = build_live_report(
        [case("ok")],
        [answer([item(1, "mysql-pool")], top_k=3)],
        base_url="http://127.0.0.1:9900",
        endpoint="GET /search",
        cases_file="c.json",
        cases_sha256="0" * 64,
        checked_at="2026-07-06T00:00:00Z",
        overrides={"kbScope": "other", "topK": 3},
    )
    md = render_live_markdown(r)
    assert "**PASS: 1 of 1 checked case(s) passed**" in md
    assert "## Failed cases (0)\n\nNone." in md
    assert "Overrides: kbScope=other, topK=3" in md

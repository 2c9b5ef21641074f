"""Hit levels, coverage rules and pipeline expectations (ragsnap.scoring.hits)."""

from __future__ import annotations

import unicodedata
from typing import Any

import pytest

from conftest import block, make_case, make_fixture
from ragsnap.models import Fixture, GoldenCase
from ragsnap.scoring.hits import (
    EXPECTATIONS,
    FIXTURE_MISSING,
    Coverage,
    breadcrumb_covers,
    hit_level,
    normalize,
    score_case,
)


def case(**fields: Any) -> GoldenCase:
    return GoldenCase.from_json(make_case(**fields), {})


def fixture(blocks: list[dict[str, Any]], **kw: Any) -> Fixture:
    return Fixture.from_json(make_fixture("c1", blocks, **kw))


@pytest.mark.parametrize(
    ("found", "crumbs", "keywords", "any_kw", "level"),
    [
        (True, True, None, True, "strong"),
        (True, None, True, True, "strong"),
        (True, False, True, True, "strong"),  # either coverage suffices
        (True, True, False, True, "strong"),
        (True, False, False, True, "medium"),
        (True, None, False, True, "medium"),
        (True, None, None, False, "strong"),  # nothing to cover: finding is enough
        (False, True, True, True, "weak"),
        (False, None, False, True, "weak"),
        (False, None, None, False, "miss"),
        (False, False, False, False, "miss"),
    ],
)
def test_hit_level_table(
    found: bool, crumbs: bool | None, keywords: bool | None, any_kw: bool, level: str
) -> None:
    assert hit_level(found, crumbs, keywords, any_kw) == level


@pytest.mark.parametrize(
    ("expected", "actual", "covers"),
    [
        ("Database > MySQL", "Database > MySQL > Connection Pool", True),
        ("database>mysql>connection pool", "Database > MySQL > Connection Pool", True),
        ("Database > MySQL", "Database > MySQLX > Pool", False),
        ("Database > MySQL > Connection Pool > Extra", "Database > MySQL > Connection Pool", False),
        ("MySQL", "Database > MySQL", False),  # a prefix, not a substring
        ("Ｄａｔａｂａｓｅ", "Database > MySQL", True),  # NFKC: full-width letters
        ("Database", None, False),
    ],
)
def test_breadcrumb_segment_prefix(expected: str, actual: str | None, covers: bool) -> None:
    assert breadcrumb_covers(expected, actual) is covers


def test_strong_by_breadcrumb_even_when_keywords_incomplete() -> None:
    c = case(expectedBreadcrumbs=["Database > MySQL"], expectedKeywords=["maximum-pool-size"])
    r = score_case(c, fixture([block(1, "mysql-pool", text="nothing relevant")]))
    assert (r.hit_level, r.breadcrumbs_covered, r.keywords_covered) == ("strong", 1, 0)
    assert r.passed


def test_medium_when_document_found_but_coverage_incomplete() -> None:
    c = case(expectedBreadcrumbs=["Cache > Redis"], expectedKeywords=["eviction", "LRU"])
    r = score_case(c, fixture([block(1, "mysql-pool", text="eviction policy")]))
    assert (r.hit_level, r.keywords_covered) == ("medium", 1)
    assert r.passed  # default minimum is medium


def test_keywords_are_case_and_width_insensitive_across_blocks() -> None:
    c = case(expectedKeywords=["HikariCP", "ERR-4031"])
    blocks = [
        block(1, "other", text="uses hikaricp"),
        block(2, "mysql-pool", text="ＥＲＲ－４０３１"),
    ]
    r = score_case(c, fixture(blocks))
    assert (r.hit_level, r.first_expected_rank, r.keywords_covered) == ("strong", 2, 2)


def test_weak_when_only_keywords_found() -> None:
    c = case(expectedKeywords=["maximum-pool-size"])
    r = score_case(c, fixture([block(1, "decoy", text="set maximum-pool-size to 20")]))
    assert r.hit_level == "weak"
    assert not r.passed
    assert r.reasons == ("hit level weak is below the minimum medium",)


def test_miss_and_doc_id_matching() -> None:
    c = case(expectedSources=None, expectedDocIds=["doc-42"])
    assert score_case(c, fixture([block(1, "x")])).hit_level == "miss"
    found = score_case(c, fixture([block(1, "x"), block(2, "y", doc_id="doc-42")]))
    assert (found.hit_level, found.first_expected_rank, found.matched_sources) == (
        "strong",
        2,
        ("y",),
    )


def test_only_top_k_blocks_count() -> None:
    c = case(topK=2, expectedKeywords=["needle"])
    blocks = [block(1, "a"), block(2, "b"), block(3, "mysql-pool", text="needle")]
    r = score_case(c, fixture(blocks))
    assert (r.hit_level, r.first_expected_rank) == ("miss", None)
    assert r.evidence_count == 3


def test_min_hit_level_strong_fails_medium() -> None:
    c = case(minHitLevel="strong", expectedKeywords=["absent"])
    r = score_case(c, fixture([block(1, "mysql-pool")]))
    assert r.hit_level == "medium"
    assert r.reasons == ("hit level medium is below the minimum strong",)


def test_no_answer_passes_only_when_nothing_returned() -> None:
    c = case(noAnswer=True, expectedSources=None)
    empty = score_case(c, fixture([], selected="unfiltered", status="none"))
    assert empty.passed and empty.hit_level is None
    returned = score_case(c, fixture([block(1, "x"), block(2, "y")]))
    assert returned.reasons == ("no-answer case returned 2 evidence block(s)",)


def test_every_failing_expectation_is_listed_in_order() -> None:
    c = case(
        minHitLevel="strong",
        expectedKeywords=["absent"],
        expectedSelectedAttempt="filtered",
        expectedFallbackReason="filtered-empty",
        expectedFallbackReasons=["filtered-empty"],
        expectedEvidenceStatus="sufficient",
        expectedContextSources=["mysql-pool", "mysql-slow-log"],
        expectedRerankTopSource="mysql-slow-log",
    )
    f = fixture(
        [block(1, "mysql-pool")],
        query="a different query",
        selected="unfiltered",
        fallback=["filtered-weak"],
        status="partial",
    )
    assert score_case(c, f).reasons == (
        "stale fixture: its query differs from the case's query",
        "hit level medium is below the minimum strong",
        "selected attempt 'unfiltered', expected 'filtered'",
        "fallback reason 'filtered-empty' not among ['filtered-weak']",
        "fallback reasons ['filtered-weak'], expected ['filtered-empty']",
        "evidence status 'partial', expected 'sufficient'",
        "context pack lacks expected source(s) ['mysql-slow-log']",
        "rerank top source 'mysql-pool', expected 'mysql-slow-log'",
    )


def test_skipped_expectations_are_not_checked_and_are_listed() -> None:
    c = case(
        expectedSelectedAttempt="filtered",
        expectedContextSources=["mysql-slow-log"],
        expectedRerankTopSource="mysql-slow-log",
    )
    f = fixture([block(1, "mysql-pool")], selected="unfiltered")
    assert score_case(c, f).reasons == (
        "selected attempt 'unfiltered', expected 'filtered'",
        "context pack lacks expected source(s) ['mysql-slow-log']",
        "rerank top source 'mysql-pool', expected 'mysql-slow-log'",
    )
    assert score_case(c, f).skipped_expectations == ()  # the default skips nothing
    r = score_case(c, f, skip={"rerankTopSource", "contextSources", "evidenceStatus"})
    assert r.reasons == ("selected attempt 'unfiltered', expected 'filtered'",)
    # only what the case expects is listed as skipped, in EXPECTATIONS order
    assert r.skipped_expectations == ("contextSources", "rerankTopSource")
    everything = score_case(c, f, skip=list(EXPECTATIONS))
    assert everything.passed and everything.skipped_expectations == (
        "selectedAttempt",
        "contextSources",
        "rerankTopSource",
    )
    missing = score_case(c, None, skip=["rerankTopSource"])  # a missing fixture still fails
    assert missing.reasons == (FIXTURE_MISSING,)
    assert missing.skipped_expectations == ("rerankTopSource",)


def traceless(blocks: list[dict[str, Any]], *parts: str, **kw: Any) -> Fixture:
    """A fixture without the lookupResult ``parts`` (all three by default)."""
    data = make_fixture("c1", blocks, **kw)
    for part in parts or ("retrievalTrace", "rerankTrace", "contextPack"):
        del data["lookupResult"][part]
    return Fixture.from_json(data)


EVERY_EXPECTATION = {
    "expectedSelectedAttempt": "filtered",
    "expectedFallbackReason": "filtered-empty",
    "expectedFallbackReasons": [],
    "expectedEvidenceStatus": "sufficient",
    "expectedContextSources": ["mysql-slow-log"],
    "expectedRerankTopSource": "mysql-slow-log",
}


def test_an_expectation_the_fixture_cannot_show_is_not_applicable() -> None:
    c = case(**EVERY_EXPECTATION, expectedKeywords=["text"])
    r = score_case(c, traceless([block(1, "mysql-pool")]))
    # neither failed (every expectation would fail on these values) nor silently passed
    assert r.passed and r.reasons == ()
    assert r.not_applicable == (
        ("selectedAttempt", "retrievalTrace"),
        ("fallbackReason", "retrievalTrace"),
        ("fallbackReasons", "retrievalTrace"),
        ("evidenceStatus", "retrievalTrace"),
        ("contextSources", "contextPack"),
        ("rerankTopSource", "rerankTrace"),
    )
    assert r.skipped_expectations == ()
    # absent parts are recorded as absent, not as invented defaults
    assert (r.fallback_reasons, r.evidence_status, r.context_sources) == (None, None, None)
    # the hit level needs only the evidence blocks
    assert (r.hit_level, r.first_expected_rank, r.top_sources) == ("strong", 1, ("mysql-pool",))


def test_only_the_missing_part_makes_its_expectations_not_applicable() -> None:
    c = case(**EVERY_EXPECTATION)
    r = score_case(c, traceless([block(1, "mysql-pool")], "rerankTrace"))
    assert r.not_applicable == (("rerankTopSource", "rerankTrace"),)
    assert r.reasons == (
        "fallback reason 'filtered-empty' not among []",
        "context pack lacks expected source(s) ['mysql-slow-log']",
    )
    # a case that does not set an expectation has nothing not applicable
    assert score_case(case(), traceless([block(1, "mysql-pool")])).not_applicable == ()


def test_a_present_rerank_trace_that_did_not_run_is_checked() -> None:
    data = make_fixture("c1", [block(1, "mysql-pool")])
    data["lookupResult"]["rerankTrace"]["applied"] = False
    r = score_case(case(expectedRerankTopSource="mysql-pool"), Fixture.from_json(data))
    assert r.not_applicable == ()
    assert r.reasons == ("rerank top source None, expected 'mysql-pool'",)


def test_skipped_wins_over_not_applicable() -> None:
    c = case(expectedRerankTopSource="x", expectedContextSources=["y"])
    r = score_case(c, traceless([block(1, "mysql-pool")]), skip=["rerankTopSource"])
    assert r.passed
    assert r.skipped_expectations == ("rerankTopSource",)
    assert r.not_applicable == (("contextSources", "contextPack"),)
    missing = score_case(c, None)  # a missing fixture fails; nothing is not applicable
    assert missing.reasons == (FIXTURE_MISSING,) and missing.not_applicable == ()


def test_skipping_an_unknown_expectation_is_a_bug() -> None:
    with pytest.raises(ValueError, match="rerankTop"):
        score_case(case(), None, skip=["rerankTop"])


def test_pipeline_expectations_that_hold() -> None:
    c = case(
        expectedSelectedAttempt="unfiltered",
        expectedFallbackReason="filtered-empty",
        expectedFallbackReasons=["filtered-empty"],
        expectedEvidenceStatus="sufficient",
        expectedContextSources=["mysql-pool"],
        expectedRerankTopSource="mysql-pool",
    )
    f = fixture([block(1, "mysql-pool")], selected="unfiltered", fallback=["filtered-empty"])
    assert score_case(c, f).passed


def test_empty_expected_fallback_reasons_asserts_no_fallback() -> None:
    c = case(expectedFallbackReasons=[])
    assert score_case(c, fixture([block(1, "mysql-pool")])).passed
    r = score_case(c, fixture([block(1, "mysql-pool")], fallback=["filtered-weak"]))
    assert r.reasons == ("fallback reasons ['filtered-weak'], expected []",)


def test_missing_fixture_is_a_failing_miss() -> None:
    r = score_case(case(), None)
    assert (r.passed, r.hit_level, r.reasons) == (False, "miss", (FIXTURE_MISSING,))
    na = score_case(case(noAnswer=True, expectedSources=None), None)
    assert (na.passed, na.hit_level) == (False, None)


@pytest.mark.parametrize(
    "text",
    [
        "Ｄａｔａｂａｓｅ > MySQL",
        "连接池耗尽，先检查 maximum-pool-size（当前取值：20 ms）。",
        "Ａ\u0301 and ｅ\u0308\u0323: a combining mark right after a full-width letter",
        "\u3000全角空格\u3000ＫＥＬＶＩＮ \u212a, ﬁ ligature, ①, ㎒, Straße",
        "ｶﾀｶﾅ ﾞ half-width kana beside ＡＢＣ",
        "no full-width forms but é composed and e\u0301 decomposed",
    ],
)
def test_normalize_is_nfkc_then_casefold(text: str) -> None:
    assert normalize(text) == unicodedata.normalize("NFKC", text).casefold()


def test_normalize_matches_nfkc_on_every_full_width_form_beside_combining_marks() -> None:
    wide = [chr(c) for c in (0x3000, *range(0xFF01, 0xFF5F))]
    marks = ["", "\u0301", "\u0308\u0323", "\u3099"]
    texts = [f"中{w}{m}x{m}" for w in wide for m in marks]
    assert [normalize(t) for t in texts] == [
        unicodedata.normalize("NFKC", t).casefold() for t in texts
    ]


def test_coverage_names_the_rank_or_chunk_of_each_expected_target() -> None:
    c = case(
        expectedSources=["mysql-pool", "absent"],
        expectedDocIds=["doc-other"],
        expectedKeywords=["HikariCP", "ERR-4031", "nowhere"],
        expectedBreadcrumbs=["Database > MySQL", "Network"],
        judgments=[
            {"chunkId": "other#1", "grade": 2, "spans": ["uses hikaricp", "hikaricp"]},
            {"chunkId": "late#4", "grade": 1, "spans": ["never returned"]},
            {"chunkId": "mysql-pool#2", "grade": 0},
        ],
        topK=3,
    )
    blocks = [
        block(1, "other", text="uses hikaricp", breadcrumb="Network > DNS"),
        block(2, "mysql-pool", text="ＥＲＲ－４０３１, HikariCP"),
        block(3, "x", text="more"),
        block(4, "late", text="never returned"),  # below the cut
    ]
    r = score_case(c, fixture(blocks))
    assert r.coverage == Coverage(
        sources=(("mysql-pool", 2), ("absent", None)),
        doc_ids=(("doc-other", 1),),
        chunks=(("other#1", 1), ("late#4", None)),  # grade 0 is not judged relevant
        keywords=(("HikariCP", "other#1"), ("ERR-4031", "mysql-pool#2"), ("nowhere", None)),
        breadcrumbs=(("Database > MySQL", "mysql-pool#2"), ("Network", "other#1")),
        spans=(("uses hikaricp", "other#1"), ("never returned", None)),  # nested span dropped
    )
    # the counts are counted from it
    assert (r.keywords_covered, r.breadcrumbs_covered) == (2, 2)


def test_coverage_of_a_missing_fixture_covers_nothing_and_no_answer_has_none() -> None:
    missing = score_case(case(expectedKeywords=["pool"]), None)
    assert missing.coverage == Coverage(sources=(("mysql-pool", None),), keywords=(("pool", None),))
    no_answer = score_case(case(noAnswer=True, expectedSources=None), fixture([]))
    assert no_answer.coverage is None

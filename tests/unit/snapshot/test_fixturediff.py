"""Semantic fixture comparison (ragsnap.snapshot.fixturediff), on a real committed fixture."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ragsnap.snapshot.fixturediff import (
    DEFAULT_TOLERANCE,
    Change,
    compare_fixtures,
    fixture_changes,
)

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures"
_ORIGINAL: dict[str, Any] = json.loads(
    (FIXTURES / "db-err-4031-order-repository.json").read_text(encoding="utf-8")
)
#: the committed evidence scores (they move whenever the pipeline's ranking values do)
COMMITTED_SCORES = [b["score"] for b in _ORIGINAL["lookupResult"]["evidenceBlocks"]]
# the tests below move the two blocks' scores from these values (on the 1e-6 grid)
_PINNED = (0.662239, 0.407034)
for _block, _score in zip(_ORIGINAL["lookupResult"]["evidenceBlocks"], _PINNED, strict=True):
    _block["score"] = _score

TOP = "mysql-connection-pool#2"  # evidence block 1, rerank position 1
SECOND = "mysql-connection-pool-payment#2"  # evidence block 2, rerank position 2
BLOCKS = "lookupResult.evidenceBlocks"
AFTER = "lookupResult.rerankTrace.after"


def fixture() -> dict[str, Any]:
    """A fresh deep copy of the committed fixture."""
    return copy.deepcopy(_ORIGINAL)


def blocks(f: dict[str, Any]) -> list[dict[str, Any]]:
    result: list[dict[str, Any]] = f["lookupResult"]["evidenceBlocks"]
    return result


def trace(f: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = f["lookupResult"]["retrievalTrace"]
    return result


def rerank(f: dict[str, Any], side: str = "after") -> list[dict[str, Any]]:
    result: list[dict[str, Any]] = f["lookupResult"]["rerankTrace"][side]
    return result


def described(changes: tuple[Change, ...] | list[Change]) -> list[str]:
    return [c.describe() for c in changes]


def test_the_committed_fixture_has_the_shape_these_tests_rely_on() -> None:
    f = fixture()
    assert f["generator"]["topK"] == 5
    assert f["generator"]["settings"]["minScore"] == 0.22
    assert [b["chunkId"] for b in blocks(f)] == [TOP, SECOND]
    assert [b["rank"] for b in blocks(f)] == [1, 2]
    assert len(COMMITTED_SCORES) == 2
    assert all(abs(x * 1e6 - round(x * 1e6)) < 1e-3 for x in COMMITTED_SCORES)  # the grid
    assert len(rerank(f)) == len(rerank(f, "before")) == 20
    assert [a["name"] for a in trace(f)["attempts"]] == ["filtered"]
    assert trace(f)["evidenceStatus"] == "sufficient"
    assert DEFAULT_TOLERANCE == 1e-4


# -- unchanged and volatile -----------------------------------------------------------


def test_identical_fixtures_are_not_changed() -> None:
    c = compare_fixtures(fixture(), fixture())
    assert c.changed is False
    assert c.changes == ()
    assert c.within_tolerance == 0 and c.diagnostics == 0
    assert c.tolerance == DEFAULT_TOLERANCE


def test_retrieved_at_and_latencies_are_never_compared() -> None:
    old, new = fixture(), fixture()
    new["retrievedAt"] = "2031-01-01T12:34:56Z"
    for attempt in trace(new)["attempts"]:
        attempt["latencyMs"] = 1234.5
    new["lookupResult"]["latencyMs"] = 88  # a latency only one side has
    trace(old)["latencyMs"] = 3
    del old["retrievedAt"]
    c = compare_fixtures(old, new)
    assert not c.changed
    assert c.within_tolerance == 0 and c.diagnostics == 0
    assert fixture_changes(old, new) == []
    # the same kind of edit to a compared field is a change
    new["query"] = "something else"
    assert compare_fixtures(old, new).changed


# -- numbers and the tolerance -----------------------------------------------------------


def test_score_moved_within_the_tolerance_is_counted_but_not_a_change() -> None:
    old, new = fixture(), fixture()
    blocks(new)[0]["score"] = 0.662289  # 5e-5
    blocks(new)[1]["metadata"]["cosine"] = 0.354691  # -5e-5
    c = compare_fixtures(old, new)
    assert not c.changed
    assert c.within_tolerance == 2
    assert c.diagnostics == 0
    assert fixture_changes(old, new) == []


def test_score_moved_beyond_the_tolerance_is_a_number_change() -> None:
    old, new = fixture(), fixture()
    blocks(new)[0]["score"] = 0.662739  # 5e-4
    c = compare_fixtures(old, new)
    assert c.changed
    assert c.within_tolerance == 0
    (change,) = c.changes
    assert change == Change("number", f"{BLOCKS}[{TOP}].score", 0.662239, 0.662739)
    assert change.describe() == f"{BLOCKS}[{TOP}].score 0.662239 -> 0.662739"
    assert c.of_kind("number") == [change] and c.of_kind("identity") == []


def test_a_custom_tolerance_changes_the_verdict() -> None:
    old, near, far = fixture(), fixture(), fixture()
    blocks(near)[0]["score"] = 0.662289  # 5e-5
    blocks(far)[0]["score"] = 0.662739  # 5e-4
    assert not compare_fixtures(old, far, tolerance=1e-3).changed
    assert compare_fixtures(old, far, tolerance=1e-3).within_tolerance == 1
    assert compare_fixtures(old, far, tolerance=1e-3).tolerance == 1e-3
    assert fixture_changes(old, far, tolerance=1e-3) == []
    # a move of exactly the tolerance (as the same float subtraction computes it) is within
    exact = abs(0.662739 - 0.662239)
    assert compare_fixtures(old, far, tolerance=exact).within_tolerance == 1
    assert compare_fixtures(old, far, tolerance=exact - 1e-9).changed
    strict = compare_fixtures(old, near, tolerance=0.0)
    assert strict.changed and strict.within_tolerance == 0
    assert described(strict.changes) == [f"{BLOCKS}[{TOP}].score 0.662239 -> 0.662289"]
    assert fixture_changes(old, near, tolerance=0.0) == [
        f"{BLOCKS}[{TOP}].score 0.662239 -> 0.662289"
    ]


def test_a_grid_score_moved_by_less_than_the_tolerance_is_within_it_anywhere() -> None:
    """99 ticks is within 1e-4 wherever the score sits on the grid."""
    old, new = fixture(), fixture()
    for ticks in range(0, 999_000, 4_999):
        blocks(old)[1]["score"] = ticks / 1e6
        blocks(new)[1]["score"] = (ticks + 99) / 1e6
        assert not compare_fixtures(old, new).changed, ticks


@pytest.mark.parametrize(("before", "after"), [(0.00997, 0.01007), (0.004985, 0.005085)])
def test_a_grid_score_moved_by_exactly_the_tolerance_is_within_it(
    before: float, after: float
) -> None:
    old, new = fixture(), fixture()
    blocks(old)[1]["score"] = before
    blocks(new)[1]["score"] = after
    c = compare_fixtures(old, new)
    assert (c.changed, c.within_tolerance) == (False, 1)


def test_the_same_exact_tolerance_move_elsewhere_is_within_it() -> None:
    """100 ticks at 0.662239 is not a change either."""
    old, new = fixture(), fixture()
    blocks(new)[0]["score"] = 0.662339
    c = compare_fixtures(old, new)
    assert (c.changed, c.within_tolerance) == (False, 1)


def test_integers_are_identities_whatever_the_tolerance() -> None:
    old, new = fixture(), fixture()
    new["lookupResult"]["contextPack"]["charCount"] = 970
    c = compare_fixtures(old, new, tolerance=5.0)
    assert described(c.changes) == ["lookupResult.contextPack.charCount 969 -> 970"]
    assert c.changes[0].kind == "identity"
    assert c.within_tolerance == 0


def test_bool_against_int_is_an_identity_change() -> None:
    old, new = fixture(), fixture()
    new["lookupResult"]["rerankTrace"]["applied"] = 1  # was True
    new["lookupResult"]["contextPack"]["truncated"] = 0  # was False
    c = compare_fixtures(old, new, tolerance=10.0)
    assert [(x.kind, x.path) for x in c.changes] == [
        ("identity", "lookupResult.contextPack.truncated"),
        ("identity", "lookupResult.rerankTrace.applied"),
    ]
    assert described(c.changes)[1] == "lookupResult.rerankTrace.applied True -> 1"


def test_int_against_an_equal_float_is_not_a_change() -> None:
    old, new = fixture(), fixture()
    new["lookupResult"]["contextPack"]["charCount"] = 969.0
    new["lookupResult"]["contextPack"]["budgetChars"] = 2000.0
    trace(old)["fusion"]["weights"]["lexical"] = 1  # 1 against 1.0, the other way round
    trace(new)["fusion"]["weights"]["lexical"] = 1.0
    c = compare_fixtures(old, new)
    assert not c.changed
    assert c.within_tolerance == 0
    # but a float that is not the integer is a number (within the tolerance here)
    new["lookupResult"]["contextPack"]["charCount"] = 969.00005
    c = compare_fixtures(old, new)
    assert (c.changed, c.within_tolerance) == (False, 1)


# -- ranks and identities ------------------------------------------------------------------


def reversed_blocks(f: dict[str, Any]) -> dict[str, Any]:
    """``f`` with its evidence blocks in the other order, renumbered as the pipeline
    would, and the context pack's sources following them."""
    out = copy.deepcopy(f)
    blocks(out).reverse()
    for rank, block in enumerate(blocks(out), 1):
        block["rank"] = rank
    out["lookupResult"]["contextPack"]["sources"].reverse()
    return out


def test_reversed_evidence_blocks_are_rank_changes_listed_first() -> None:
    old = fixture()
    new = reversed_blocks(old)
    c = compare_fixtures(old, new)
    # the context pack is walked before the blocks, yet rank moves come first
    assert [x.kind for x in c.changes] == ["rank", "rank", "identity", "identity"]
    assert described(c.of_kind("rank")) == [
        f"{BLOCKS}[{TOP}].rank 1 -> 2",
        f"{BLOCKS}[{SECOND}].rank 2 -> 1",
    ]
    assert [x.path for x in c.of_kind("identity")] == [
        "lookupResult.contextPack.sources[0]",
        "lookupResult.contextPack.sources[1]",
    ]
    # aligned by chunkId: the blocks' own fields did not "change"
    assert not any(".text" in x.path or ".score" in x.path for x in c.changes)


def test_a_changed_chunk_id_is_one_item_lost_and_one_gained() -> None:
    old, new = fixture(), fixture()
    blocks(new)[1]["chunkId"] = "mysql-connection-pool-payment#7"
    c = compare_fixtures(old, new)
    assert [x.kind for x in c.changes] == ["identity", "identity"]
    assert described(c.changes) == [
        f"{BLOCKS}[{SECOND}] position 2 -> absent",
        f"{BLOCKS}[mysql-connection-pool-payment#7] absent -> position 2",
    ]


def test_a_changed_text_is_described_from_just_before_the_difference() -> None:
    old, new = fixture(), fixture()
    text = blocks(old)[0]["text"]
    assert len(text) > 200 and text.count("3000ms") == 1
    blocks(new)[0]["text"] = text.replace("3000ms", "5000ms")
    c = compare_fixtures(old, new)
    (change,) = c.changes
    assert change.kind == "identity"
    assert change.path == f"{BLOCKS}[{TOP}].text"
    assert (change.old, change.new) == (text, blocks(new)[0]["text"])
    at = text.index("3000ms")
    shown_old = "…" + text[at - 12 : at - 12 + 46] + "…"
    shown_new = "…" + blocks(new)[0]["text"][at - 12 : at - 12 + 46] + "…"
    assert shown_old == '…d out after 3000ms". `OrderRepository` catches…'
    assert change.describe() == f"{change.path} {shown_old!r} -> {shown_new!r}"


def test_a_short_changed_string_is_shown_whole() -> None:
    old, new = fixture(), fixture()
    blocks(new)[0]["breadcrumb"] = "Database > MySQL > Pools"
    (change,) = compare_fixtures(old, new).changes
    assert change.describe() == (
        f"{BLOCKS}[{TOP}].breadcrumb 'Database > MySQL > Connection Pool' -> "
        "'Database > MySQL > Pools'"
    )


# -- diagnostics ---------------------------------------------------------------------------


def set_metadata(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def mutate(f: dict[str, Any]) -> None:
        blocks(f)[0]["metadata"][key] = value

    return mutate


def set_hit_count(f: dict[str, Any]) -> None:
    trace(f)["attempts"][0]["hitCount"] = 17


def set_rerank_after_score(f: dict[str, Any]) -> None:
    rerank(f)[0]["score"] = 0.9


def set_rerank_before_score(f: dict[str, Any]) -> None:
    rerank(f, "before")[2]["score"] = 0.5


def swap_rerank_after_tail(f: dict[str, Any]) -> None:
    items = rerank(f)
    items[10], items[12] = items[12], items[10]


def swap_rerank_before_tail(f: dict[str, Any]) -> None:
    items = rerank(f, "before")
    items[5], items[19] = items[19], items[5]


def drop_rerank_tail_item(f: dict[str, Any]) -> None:
    del rerank(f)[-1]


DIAGNOSTICS: dict[str, Callable[[dict[str, Any]], None]] = {
    "bm25": set_metadata("bm25", 99.5),
    "fused": set_metadata("fused", 0.9),
    "lexicalRank": set_metadata("lexicalRank", 7),
    "vectorRank": set_metadata("vectorRank", 9),
    "hitCount": set_hit_count,
    "rerank-after-score": set_rerank_after_score,
    "rerank-before-score": set_rerank_before_score,
    "rerank-after-below-topK": swap_rerank_after_tail,
    "rerank-before-below-topK": swap_rerank_before_tail,
    "rerank-after-shorter-tail": drop_rerank_tail_item,
}


@pytest.mark.parametrize("name", list(DIAGNOSTICS))
def test_a_diagnostic_field_is_counted_but_never_a_change(name: str) -> None:
    old, new = fixture(), fixture()
    DIAGNOSTICS[name](new)
    assert new != old
    c = compare_fixtures(old, new, tolerance=0.0)
    assert not c.changed, described(c.changes)
    assert c.diagnostics == 1
    assert c.within_tolerance == 0
    assert fixture_changes(old, new, tolerance=0.0) == []


def test_diagnostics_add_up() -> None:
    old, new = fixture(), fixture()
    for mutate in DIAGNOSTICS.values():
        mutate(new)
    c = compare_fixtures(old, new)
    assert not c.changed
    # 7 fields, plus one per rerank list whose tail below topK moved (after: swapped and
    # shortened, counted once; before: swapped)
    assert c.diagnostics == 7 + 2


def test_non_diagnostic_neighbours_of_diagnostics_are_compared() -> None:
    old, new = fixture(), fixture()
    blocks(new)[0]["metadata"]["confidence"] = 0.6  # beside bm25 and fused
    blocks(new)[0]["metadata"]["category"] = "cache"
    trace(new)["attempts"][0]["topScore"] = 0.6  # beside hitCount
    rerank(new)[0]["source"] = "renamed"  # beside a rerank score, within topK
    c = compare_fixtures(old, new)
    assert c.diagnostics == 0
    assert [(x.kind, x.path) for x in c.changes] == [
        ("identity", f"{BLOCKS}[{TOP}].metadata.category"),
        ("identity", f"{AFTER}[{TOP}].source"),
        ("number", f"{BLOCKS}[{TOP}].metadata.confidence"),
        ("number", "lookupResult.retrievalTrace.attempts[filtered].topScore"),
    ]


# -- the rerank trace ------------------------------------------------------------------------


def test_rerank_reorder_within_top_k_is_a_rank_move() -> None:
    old, new = fixture(), fixture()
    items = rerank(new)
    items[0], items[1] = items[1], items[0]
    c = compare_fixtures(old, new)
    assert c.diagnostics == 0
    assert [x.kind for x in c.changes] == ["rank", "rank"]
    assert described(c.changes) == [
        f"{AFTER}[{TOP}] position 1 -> 2",
        f"{AFTER}[{SECOND}] position 2 -> 1",
    ]
    assert (c.changes[0].old, c.changes[0].new) == (1, 2)


def test_rerank_item_rising_from_below_top_k() -> None:
    old, new = fixture(), fixture()
    items = rerank(new)
    risen = items.pop(7)  # mysql-slow-query-log#2, position 8
    items.insert(0, risen)
    c = compare_fixtures(old, new)
    text = described(c.changes)
    assert f"{AFTER}[mysql-slow-query-log#2] below top 5 -> position 1" in text
    assert f"{AFTER}[mysql-connection-pool-payment#0] position 5 -> below top 5" in text
    assert f"{AFTER}[{TOP}] position 1 -> 2" in text
    assert [x.kind for x in c.changes] == ["rank"] * 4 + ["identity"] * 2
    assert c.diagnostics == 1  # the tail moved too


def test_rerank_depth_follows_the_new_fixtures_top_k() -> None:
    old, new = fixture(), fixture()
    swap_rerank_after_tail(new)  # positions 11 and 13
    new["generator"]["topK"] = 20
    c = compare_fixtures(old, new)
    assert [x.kind for x in c.changes] == ["setting", "rank", "rank"]
    assert c.changes[1].describe().endswith("position 11 -> 13")


# -- settings and ordering ---------------------------------------------------------------


def test_generator_changes_are_settings_and_come_first() -> None:
    old = fixture()
    new = fixture()
    # walk the generator last, so only the ordering can put it first
    generator = new.pop("generator")
    new["generator"] = generator
    generator["settings"]["minScore"] = 0.3
    generator["embedder"]["revision"] = "3"
    blocks(new)[0]["score"] = 0.6
    trace(new)["evidenceStatus"] = "partial"
    c = compare_fixtures(old, new)
    assert [x.kind for x in c.changes] == ["setting", "setting", "identity", "number"]
    assert described(c.of_kind("setting")) == [
        "generator.embedder.revision '2' -> '3'",
        "generator.settings.minScore 0.22 -> 0.3",
    ]


def test_generator_numbers_ignore_the_tolerance() -> None:
    old, new = fixture(), fixture()
    new["generator"]["settings"]["scoreGrid"] = 1.00000001e-6
    c = compare_fixtures(old, new, tolerance=1.0)
    assert [x.kind for x in c.changes] == ["setting"]
    assert c.within_tolerance == 0


def test_fixture_changes_lists_other_settings_first() -> None:
    old, new = fixture(), fixture()
    new["generator"]["settings"]["minScore"] = 0.3
    assert fixture_changes(old, new) == [
        "written with other settings: generator.settings.minScore 0.22 -> 0.3"
    ]
    trace(new)["evidenceStatus"] = "partial"
    out = fixture_changes(old, new)
    assert out[0] == "written with other settings: generator.settings.minScore 0.22 -> 0.3"
    assert out[1:] == [
        "evidence status sufficient -> partial",
        "lookupResult.retrievalTrace.evidenceStatus 'sufficient' -> 'partial'",
    ]


def test_fixture_changes_counts_settings_beyond_listed() -> None:
    old, new = fixture(), fixture()
    settings = new["generator"]["settings"]
    settings["minScore"], settings["weakScore"] = 0.3, 0.4
    settings["candidates"], settings["hints"] = 80, False
    (line,) = fixture_changes(old, new)
    assert line.startswith("written with other settings: generator.settings.candidates 50 -> 80")
    assert line.endswith(" (and 1 more)")
    assert line.count(" -> ") == 3
    (line,) = fixture_changes(old, new, listed=4)
    assert "(and" not in line and line.count(" -> ") == 4


def test_fixture_changes_new_unchanged_and_diagnostic_only() -> None:
    f = fixture()
    assert fixture_changes(None, f) == ["new fixture"]
    assert fixture_changes(f, f) == []
    assert fixture_changes(f, fixture()) == []
    new = fixture()
    set_hit_count(new)
    assert fixture_changes(f, new) == []


def test_fixture_changes_headline_lost_and_gained_sources() -> None:
    old, new = fixture(), fixture()
    blocks(new)[1].update(chunkId="redis-eviction-policy#1", source="redis-eviction-policy")
    out = fixture_changes(old, new)
    assert out[:2] == ["gained redis-eviction-policy", "lost mysql-connection-pool-payment"]
    assert out[2].startswith(f"{BLOCKS}[{SECOND}] position 2 -> absent")


def test_fixture_changes_headline_moved_sources() -> None:
    old = fixture()
    out = fixture_changes(old, reversed_blocks(old))
    assert out[0] == "moved mysql-connection-pool-payment 2->1, mysql-connection-pool 1->2"
    assert out[1].startswith(f"{BLOCKS}[{TOP}].rank 1 -> 2, ")
    assert out[1].endswith(" (and 1 more)")  # 4 changes, 3 listed


def test_fixture_changes_headline_pipeline_fields() -> None:
    old, new = fixture(), fixture()
    trace(new)["selectedAttempt"] = "unfiltered"
    trace(new)["fallbackReasons"] = ["weak-evidence", "filtered-empty"]
    trace(new)["evidenceStatus"] = "partial"
    items = rerank(new)
    items[0], items[1] = items[1], items[0]
    out = fixture_changes(old, new)
    assert out[:4] == [
        "selected attempt filtered -> unfiltered",
        "fallback reasons [] -> [weak-evidence, filtered-empty]",
        "evidence status sufficient -> partial",
        "rerank top mysql-connection-pool -> mysql-connection-pool-payment",
    ]
    assert len(out) == 5 and out[4].endswith("(and 3 more)")  # 2 rank + 4 identity - 3


def test_fixture_changes_path_list_is_cut_at_listed() -> None:
    old, new = fixture(), fixture()
    blocks(new)[0]["score"] = 0.7
    blocks(new)[1]["score"] = 0.5
    blocks(new)[0]["metadata"]["cosine"] = 0.5
    blocks(new)[1]["metadata"]["cosine"] = 0.5
    blocks(new)[1]["metadata"]["confidence"] = 0.5
    (line,) = fixture_changes(old, new)
    assert line.count(" -> ") == 3
    assert line.endswith(" (and 2 more)")
    (line,) = fixture_changes(old, new, listed=5)
    assert line.count(" -> ") == 5 and "(and" not in line
    (line,) = fixture_changes(old, new, listed=1)
    assert line == f"{BLOCKS}[{TOP}].metadata.cosine 0.313654 -> 0.5 (and 4 more)"


# -- list alignment ----------------------------------------------------------------------


def test_lists_without_unique_keys_are_compared_by_position() -> None:
    old, new = fixture(), fixture()
    for f in (old, new):  # a repeated chunkId: no key names every block uniquely
        blocks(f)[1]["chunkId"] = TOP
    blocks(new)[1]["score"] = 0.5
    blocks(new)[1]["metadata"]["bm25"] = 1.0  # still a diagnostic by position
    c = compare_fixtures(old, new)
    assert described(c.changes) == [f"{BLOCKS}[1].score 0.407034 -> 0.5"]
    assert c.diagnostics == 1


def test_keyed_old_and_unkeyed_new_fall_back_to_positions() -> None:
    old, new = fixture(), fixture()
    blocks(new)[1]["chunkId"] = TOP
    c = compare_fixtures(old, new)
    assert described(c.changes) == [f"{BLOCKS}[1].chunkId {SECOND!r} -> {TOP!r}"]


def test_attempts_are_aligned_by_name_and_by_position_when_names_repeat() -> None:
    old = fixture()
    second = copy.deepcopy(trace(old)["attempts"][0]) | {"name": "unfiltered", "filter": {}}
    trace(old)["attempts"].append(second)
    new = copy.deepcopy(old)
    trace(new)["attempts"].reverse()
    c = compare_fixtures(old, new)
    attempts = "lookupResult.retrievalTrace.attempts"
    assert described(c.changes) == [
        f"{attempts}[filtered] position 1 -> 2",
        f"{attempts}[unfiltered] position 2 -> 1",
    ]
    # the same names twice: by position
    for f in (old, new):
        for attempt in trace(f)["attempts"]:
            attempt["name"] = "hybrid"
    c = compare_fixtures(old, new)
    assert sorted(x.path for x in c.changes) == [
        f"{attempts}[{i}].filter.{key}" for i in (0, 1) for key in ("category", "kbScope")
    ]
    assert f"{attempts}[0].filter.category 'database' -> absent" in described(c.changes)
    assert all(x.kind == "identity" for x in c.changes)


def test_unkeyed_lists_of_different_lengths_show_absent_items() -> None:
    old, new = fixture(), fixture()
    trace(new)["fallbackReasons"] = ["weak-evidence"]
    (change,) = compare_fixtures(old, new).changes
    assert change.describe() == (
        "lookupResult.retrievalTrace.fallbackReasons[0] absent -> 'weak-evidence'"
    )
    trace(old)["fallbackReasons"] = ["weak-evidence", "filtered-empty"]
    (change,) = compare_fixtures(old, new).changes
    assert change.path.endswith("fallbackReasons[1]")
    assert change.describe().endswith("'filtered-empty' -> absent")

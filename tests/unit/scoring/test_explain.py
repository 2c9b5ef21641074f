"""One case explained stage by stage (ragsnap.scoring.explain)."""

from __future__ import annotations

import copy
from typing import Any

from conftest import block, make_case, make_fixture
from ragsnap.models import Fixture, GoldenCase
from ragsnap.scoring.attribution import STAGES, Side
from ragsnap.scoring.explain import NOT_REPORTED, explain_case, render_explanation
from ragsnap.scoring.hits import score_case
from ragsnap.scoring.report import case_entry

CASE = make_case("c1", expectedSources=["mysql-pool"], expectedKeywords=["14 days"])
KEPT = "Application logs are kept for 14 days in the hot tier."


def _fixture(text: str = KEPT, **generator: Any) -> dict[str, Any]:
    fixture = make_fixture("c1", [block(1, "mysql-pool", text=text), block(2, "other")])
    fixture["generator"].update(generator)
    return fixture


def _explain(
    old: dict[str, Any], new: dict[str, Any], case: dict[str, Any] = CASE
) -> dict[str, Any]:
    golden = GoldenCase.from_json(case, {})
    entries = [case_entry(score_case(golden, Fixture.from_json(f))) for f in (old, new)]
    return explain_case(entries[0], entries[1], Side(old), Side(new), "HEAD:fixtures")


def _rows(target: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {row["stage"]: row for row in target["rows"]}


def test_every_target_gets_one_row_per_stage_and_the_lost_one_is_marked_at_its_stage() -> None:
    explained = _explain(_fixture(), _fixture(KEPT.replace("14 days", "two weeks")))
    assert explained["case"] == {"id": "c1", "query": "query for c1"}
    assert explained["hitLevel"] == ["strong", "medium"]
    assert [e["kind"] for e in explained["lost"]] == ["keyword"]
    assert explained["lostText"].startswith("lost keyword '14 days' (corpus: mysql-pool#1")
    keyword, source = explained["targets"]
    assert (keyword["kind"], keyword["target"], keyword["chunk"]) == (
        "keyword",
        "14 days",
        "mysql-pool#1",
    )
    assert keyword["lost"] and keyword["stage"] == "corpus"
    assert [row["stage"] for row in keyword["rows"]] == list(STAGES)
    assert [row["stage"] for row in keyword["rows"] if row["lostHere"]] == ["corpus"]
    corpus = _rows(keyword)["corpus"]
    assert "removed '14 days'" in corpus["current"] and "added 'two weeks'" in corpus["current"]
    # the source is still first: followed through the same stages, lost nowhere
    assert (source["kind"], source["lost"], source["stage"]) == ("source", False, None)
    assert not any(row["lostHere"] for row in source["rows"])
    assert _rows(source)["corpus"]["current"].endswith(
        "text changed: removed '14 days'; added 'two weeks'"
    )


def test_what_a_fixture_does_not_record_reads_not_reported() -> None:
    explained = _explain(_fixture(), _fixture())
    rows = _rows(explained["targets"][1])
    # make_fixture records no ranks, confidences, hints nor manifest documents
    for stage in ("retrieval", "l0Hint", "floor"):
        assert rows[stage]["baseline"] == NOT_REPORTED == rows[stage]["current"], stage
    assert rows["corpus"]["baseline"] == "document not reported"
    assert rows["fusion"]["current"] == "1 of 2"
    assert rows["cut"]["current"] == "evidence rank 1 (topK 5)"
    assert rows["context"]["current"] == "in the context pack"
    assert explained["lost"] == [] and explained["causes"] == []


def test_a_fixture_without_traces_reads_not_reported_at_their_stages() -> None:
    bare = _fixture()
    bare["lookupResult"] = {"evidenceBlocks": bare["lookupResult"]["evidenceBlocks"]}
    for old, new in ((_fixture(), bare), (bare, _fixture())):
        explained = _explain(old, new)
        rows = _rows(explained["targets"][1])
        side = "current" if new is bare else "baseline"
        for stage in ("l0Hint", "attempt", "fusion", "rerank", "context"):
            assert rows[stage][side] == NOT_REPORTED, stage
        assert rows["cut"][side] == "evidence rank 1 (topK 5)"


def test_ranks_confidence_floor_and_hints_recorded_by_the_fixture_are_shown() -> None:
    old = _fixture(settings={"minScore": 0.2, "relativeScore": 0.5})
    trace = old["lookupResult"]["retrievalTrace"]
    trace["attempts"][0].update(topScore=0.8, filter={"category": "database"})
    trace["l0Hints"] = {"category": "database", "breadcrumbPrefix": "Database > MySQL"}
    old["lookupResult"]["evidenceBlocks"][0]["metadata"] = {
        "lexicalRank": 2,
        "confidence": 0.8,
        "category": "database",
    }
    new = copy.deepcopy(old)
    new["generator"]["settings"]["minScore"] = 0.9
    rows = _rows(_explain(old, new)["targets"][1])
    assert rows["retrieval"]["baseline"] == "lexical 2, vector none"
    assert rows["l0Hint"]["current"] == "category database, breadcrumb Database > MySQL"
    assert rows["attempt"]["current"] == (
        "filtered (category database), no fallback; target in database"
    )
    # a setting owned by a later stage shows in that stage's row; global ones are the same
    assert rows["settings"] == {**rows["settings"], "baseline": "same", "current": "same"}
    assert rows["floor"]["baseline"] == "confidence 0.8, floor 0.4 (passes); minScore 0.2"
    assert rows["floor"]["current"] == "confidence 0.8, floor 0.9 (below); minScore 0.9"


def test_a_global_setting_that_moved_is_the_settings_row_and_can_be_where_it_was_lost() -> None:
    old = _fixture()
    new = make_fixture("c1", [block(1, "other"), block(2, "else")])
    new["generator"]["method"] = "lexical"
    explained = _explain(old, new)
    source = explained["targets"][1]
    assert source["lost"] and source["stage"] == "settings"
    settings = _rows(source)["settings"]
    assert (settings["baseline"], settings["current"]) == ("method none", "method lexical")
    assert settings["lostHere"]
    cut = _rows(source)["cut"]
    assert (cut["baseline"], cut["current"]) == (
        "evidence rank 1 (topK 5)",
        "not evidence (topK 5)",
    )


def test_the_text_is_one_table_per_target_with_the_stage_marked() -> None:
    text = render_explanation(_explain(_fixture(), _fixture(KEPT.replace("14 days", "two weeks"))))
    lines = text.splitlines()
    assert lines[:4] == [
        "c1: query for c1",
        "baseline fixture: HEAD:fixtures",
        "hit level strong -> medium; passed yes -> yes",
        "lost keyword '14 days' (corpus: mysql-pool#1 text changed: removed '14 days')",
    ]
    assert "keyword '14 days' via chunk mysql-pool#1: LOST (corpus)" in lines
    assert "source 'mysql-pool' via chunk mysql-pool#1" in lines
    marked = [line for line in lines if line.endswith("<- lost here")]
    assert len(marked) == 1 and marked[0].startswith("corpus ")
    assert text == render_explanation(
        _explain(_fixture(), _fixture(KEPT.replace("14 days", "two weeks")))
    )


def test_a_no_answer_case_has_no_target_to_follow() -> None:
    case = make_case("c1", expectedSources=None, noAnswer=True)
    explained = _explain(make_fixture("c1"), make_fixture("c1"), case)
    assert explained["targets"] == [] and explained["lost"] == []
    assert "no expected targets (a no-answer case)" in render_explanation(explained)

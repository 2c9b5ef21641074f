"""The score command's fixture stream (ragsnap.scoring.stream.score_stream)."""

from __future__ import annotations

from conftest import Project, block, make_case, make_fixture
from ragsnap.io.inputs import FixtureStream, load_cases, load_fixtures
from ragsnap.scoring.hits import score_case
from ragsnap.scoring.stream import score_stream


def test_the_stream_keeps_one_string_per_source_and_the_same_results(project: Project) -> None:
    project.write_cases([make_case("a"), make_case("b"), make_case("c")])
    for case_id in ("a", "b"):
        blocks = [block(1, "mysql-pool"), block(2, "redis-pool")]
        project.write_fixture(make_fixture(case_id, blocks, fallback=["too few hits"]))
    cases = load_cases(project.cases).cases
    scored = score_stream(cases, FixtureStream(project.fixtures), ())
    fixtures = load_fixtures(project.fixtures).fixtures
    for case in cases:  # what score_case gives, a case without a fixture too
        assert scored.results[case.id] == score_case(case, fixtures.get(case.id), None)
    a, b = scored.results["a"], scored.results["b"]
    # the strings two fixtures share are one object, not one per fixture
    assert a.top_sources[1] is b.top_sources[1] is scored.cited["b"][1]
    assert a.matched_sources[0] is b.matched_sources[0] is scored.cited["a"][0]
    assert a.fallback_reasons is not None and b.fallback_reasons is not None
    assert a.fallback_reasons[0] is b.fallback_reasons[0]
    assert a.selected_attempt is b.selected_attempt

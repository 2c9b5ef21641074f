"""Schema validation and input checks (ragsnap.io.inputs, ragsnap.io.schema)."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import Project, block, make_case, make_fixture, write_json
from ragsnap.errors import InputError
from ragsnap.io.inputs import FixtureStream, load_cases, load_fixtures, load_report


def error(call, *args) -> InputError:  # type: ignore[no-untyped-def]
    with pytest.raises(InputError) as info:
        call(*args)
    return info.value


def test_defaults_apply_unless_overridden(project: Project) -> None:
    project.write_cases(
        [make_case("a"), make_case("b", topK=3, kbScope="x", minHitLevel="strong")],
        defaults={"kbScope": "rag-eval", "topK": 7},
    )
    a, b = load_cases(project.cases).cases
    assert (a.kb_scope, a.top_k, a.min_hit_level) == ("rag-eval", 7, "medium")
    assert (b.kb_scope, b.top_k, b.min_hit_level) == ("x", 3, "strong")


@pytest.mark.parametrize(
    ("case", "pointer", "text"),
    [
        (make_case("a", expectedSource=["x"]), "/cases/0", "unknown field 'expectedSource'"),
        (make_case("a", split="train"), "/cases/0/split", "'train' is not allowed; use one of"),
        (make_case("a", topK="5"), "/cases/0/topK", "expected integer"),
        (make_case("a", topK=0), "/cases/0/topK", "minimum"),
        (make_case("a", language=None), "/cases/0", "'language' is a required property"),
        (make_case("a", expectedSources=["x", "x"]), "/cases/0/expectedSources", "duplicate"),
        (make_case("a b"), "/cases/0/id", "does not match"),
    ],
)
def test_schema_errors_name_file_pointer_and_fix(
    project: Project, case: dict, pointer: str, text: str
) -> None:
    project.write_cases([case])
    err = error(load_cases, project.cases)
    assert err.path == str(project.cases)
    assert err.pointer == pointer
    assert text in str(err)


def test_duplicate_ids_and_unscorable_cases(project: Project) -> None:
    project.write_cases([make_case("a"), make_case("b"), make_case("a")])
    err = error(load_cases, project.cases)
    assert (err.pointer, err.problem) == (
        "/cases/2/id",
        "duplicate case id 'a' (first at /cases/0)",
    )
    project.write_cases([make_case("a", expectedSources=None)])
    assert "cannot be scored" in str(error(load_cases, project.cases))
    project.write_cases([make_case("a", noAnswer=True)])
    err = error(load_cases, project.cases)
    assert err.pointer == "/cases/0/expectedSources" and "noAnswer" in err.fix


def test_fixture_checks(project: Project) -> None:
    project.write_fixture(make_fixture("a", [block(1, "s")]), name="b")
    err = error(load_fixtures, project.fixtures)
    assert err.pointer == "/caseId" and "rename the file to a.json" in err.fix
    (project.fixtures / "b.json").unlink()

    project.write_fixture(make_fixture("a", [block(1, "s"), block(3, "t")]))
    err = error(load_fixtures, project.fixtures)
    assert err.pointer == "/lookupResult/evidenceBlocks/1/rank"

    fixture = make_fixture("a", [block(1, "s")])
    fixture["lookupResult"]["evidenceBlocks"][0]["extra"] = 1
    project.write_fixture(fixture)
    err = error(load_fixtures, project.fixtures)
    assert err.pointer == "/lookupResult/evidenceBlocks/0" and "'extra'" in err.problem

    fixture = make_fixture("a", [block(1, "s")])
    del fixture["lookupResult"]["evidenceBlocks"]
    project.write_fixture(fixture)
    assert "'evidenceBlocks' is a required property" in str(error(load_fixtures, project.fixtures))


def test_a_fixture_needs_only_its_evidence_blocks(project: Project) -> None:
    """A retriever without ragsnap's traces: the parts it leaves out are absent (None)
    in the model, never defaults; an unknown part is still refused."""
    fixture = make_fixture("a", [block(1, "s")])
    for part in ("contextPack", "retrievalTrace", "rerankTrace"):
        del fixture["lookupResult"][part]
    project.write_fixture(fixture)
    lookup = load_fixtures(project.fixtures).fixtures["a"].lookup
    assert lookup.absent == ("retrievalTrace", "rerankTrace", "contextPack")
    assert [b.source for b in lookup.evidence_blocks] == ["s"]
    assert (lookup.selected_attempt, lookup.fallback_reasons, lookup.evidence_status) == (
        None,
        None,
        None,
    )
    assert (lookup.rerank_applied, lookup.rerank_top_source) == (None, None)
    assert (lookup.context_sources, lookup.context_chars) == (None, None)

    fixture["lookupResult"]["rerankTrace"] = {"applied": False, "before": [], "after": []}
    project.write_fixture(fixture)
    lookup = load_fixtures(project.fixtures).fixtures["a"].lookup
    assert lookup.absent == ("retrievalTrace", "contextPack")
    assert (lookup.rerank_applied, lookup.rerank_top_source) == (False, None)

    fixture["lookupResult"]["answer"] = "text"
    project.write_fixture(fixture)
    err = error(load_fixtures, project.fixtures)
    assert err.pointer == "/lookupResult" and "'answer'" in err.problem


def test_fixture_set_hash_changes_with_content(project: Project) -> None:
    project.write_fixture(make_fixture("a", [block(1, "s")]))
    first = load_fixtures(project.fixtures)
    assert set(first.fixtures) == {"a"}
    project.write_fixture(make_fixture("a", [block(1, "t")]))
    assert load_fixtures(project.fixtures).sha256 != first.sha256
    assert "fixtures folder not found" in str(error(load_fixtures, project.root / "nope"))


def test_report_version_and_kind_are_checked(tmp_path: Path) -> None:
    old = write_json(tmp_path / "old.json", {"schemaVersion": 0, "kind": "ragsnap-score-report"})
    err = error(load_report, old, "baseline")
    assert err.pointer == "/schemaVersion"
    assert "version 0" in err.problem and "regenerate the baseline" in err.fix
    other = write_json(tmp_path / "other.json", {"schemaVersion": 1, "kind": "ragsnap-diff-report"})
    assert "not a ragsnap score report" in str(error(load_report, other, "baseline"))
    listed = write_json(tmp_path / "list.json", [1])
    assert "not a JSON object" in str(error(load_report, listed, "baseline"))


@pytest.mark.parametrize(
    ("judgments", "pointer", "text"),
    [
        ([{"chunkId": "a#1", "grade": 4}], "/cases/0/judgments/0/grade", "maximum"),
        ([{"grade": 1}], "/cases/0/judgments/0", ""),
        ([{"chunkId": "a#1", "source": "a", "grade": 1}], "/cases/0/judgments/0", ""),
        (
            [{"chunkId": "a#1", "grade": 1}, {"source": "a", "grade": 0}],
            "/cases/0/judgments",
            "mixes judgment targets",
        ),
        (
            [{"chunkId": "a#1", "grade": 1}, {"chunkId": "a#1", "grade": 2}],
            "/cases/0/judgments/1",
            "'a#1' is judged twice",
        ),
    ],
)
def test_judgment_errors(project: Project, judgments: list, pointer: str, text: str) -> None:
    project.write_cases([make_case("a", judgments=judgments)])
    err = error(load_cases, project.cases)
    assert err.pointer == pointer
    assert text in str(err)


def test_no_answer_case_may_only_judge_irrelevant(project: Project) -> None:
    project.write_cases(
        [
            make_case(
                "a", noAnswer=True, expectedSources=None, judgments=[{"source": "x", "grade": 0}]
            )
        ]
    )
    assert load_cases(project.cases).cases[0].judgments[0].grade == 0
    project.write_cases(
        [
            make_case(
                "a", noAnswer=True, expectedSources=None, judgments=[{"source": "x", "grade": 2}]
            )
        ]
    )
    assert "cannot judge anything relevant" in str(error(load_cases, project.cases))


def test_fixture_stream_reads_what_load_fixtures_reads(project: Project) -> None:
    """``ragsnap score`` streams: the same fixtures in file name order, the same digests
    and folder SHA-256 (known only at the end), a bad fixture refused when reached."""
    for name, source in (("b", "t"), ("a", "s"), ("c", "u")):
        project.write_fixture(make_fixture(name, [block(1, source)]))
    stream = FixtureStream(project.fixtures)
    with pytest.raises(RuntimeError, match="after the iteration"):
        stream.sha256  # noqa: B018
    streamed = [(f.case_id, f) for f in stream]
    loaded = load_fixtures(project.fixtures)
    assert [case_id for case_id, _ in streamed] == ["a", "b", "c"]
    assert dict(streamed) == loaded.fixtures
    assert (stream.sha256, stream.digests) == (loaded.sha256, loaded.digests)

    project.write_fixture(make_fixture("b", [block(1, "t"), block(3, "v")]))
    seen: list[str] = []
    with pytest.raises(InputError) as caught:
        seen.extend(f.case_id for f in FixtureStream(project.fixtures))
    assert seen == ["a"] and caught.value.pointer == "/lookupResult/evidenceBlocks/1/rank"

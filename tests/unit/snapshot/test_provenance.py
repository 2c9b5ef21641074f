"""ragsnap.snapshot.provenance: what a fixture was captured from, and when it is stale."""

from __future__ import annotations

from ragsnap.commands._provenance import settings_of
from ragsnap.config import Config
from ragsnap.settings import LookupSettings
from ragsnap.snapshot.provenance import Capture, Manifest, check_provenance

SETTINGS = {"backend": "embedded", "method": "hybrid+rerank", "lookup.minScore": 0.22}
DOCS = {"a": "1" * 64, "b": "2" * 64}
PATHS = {"a": "seed-docs/a.md", "b": "seed-docs/b.md", "c": "seed-docs/c.md"}


def captured(documents: dict[str, str] | None = None, **settings: object) -> Capture:
    return Capture({**SETTINGS, **settings}, dict(DOCS if documents is None else documents))


def manifest_of(capture: Capture, digests: dict[str, str]) -> Manifest:
    return Manifest().updated(capture, digests, digests)


DIGESTS = {"c1": "a" * 64, "c2": "b" * 64}


def check(current: Capture, manifest: Manifest | None = None, **kw: object) -> list[str]:
    """The problems of ``current`` against ``manifest``; a removed document has no file."""
    manifest = manifest_of(captured(), DIGESTS) if manifest is None else manifest
    paths = {s: p for s, p in PATHS.items() if s in (current.documents or {})}
    result = check_provenance(
        manifest, kw.pop("digests", DIGESTS), current, folder="fixtures", paths=paths, **kw
    )
    return list(result.problems)


def test_the_same_capture_is_fresh() -> None:
    assert check(captured()) == []


def test_a_changed_document_is_named_with_the_fixtures_that_cite_it() -> None:
    problems = check(captured({"a": "9" * 64, "b": "2" * 64}), cited={"c1": {"a"}, "c2": {"b"}})
    assert problems == ["seed-docs/a.md changed after fixtures/c1.json (citing it) was captured"]


def test_an_uncited_change_names_every_fixture_of_the_capture() -> None:
    problems = check(captured({"a": "9" * 64, "b": "2" * 64}))
    assert problems == [
        "seed-docs/a.md changed after fixtures/c1.json, fixtures/c2.json were captured"
    ]


def test_added_and_removed_documents() -> None:
    problems = check(captured({"b": "2" * 64, "c": "3" * 64}))
    assert problems == [
        "source 'a' was removed from the corpus after fixtures/c1.json, fixtures/c2.json "
        "were captured",
        "seed-docs/c.md was added after fixtures/c1.json, fixtures/c2.json were captured",
    ]


def test_a_changed_setting_is_named_with_both_values() -> None:
    problems = check(captured(**{"lookup.minScore": 0.3}))
    assert problems == [
        "ragsnap.yaml: lookup.minScore changed (0.22 -> 0.3) after fixtures/c1.json, "
        "fixtures/c2.json were captured"
    ]


def test_a_chunking_change_is_said_once_not_per_document() -> None:
    old = captured(**{"kb.chunking": "x"})
    current = captured({"a": "8" * 64, "b": "9" * 64}, **{"kb.chunking": "y"})
    problems = check(current, manifest_of(old, DIGESTS))
    assert len(problems) == 1
    assert "kb.chunking" in problems[0]


def test_a_fixture_edited_after_capture_is_a_note() -> None:
    digests = {"c1": "a" * 64, "c2": "f" * 64}
    result = check_provenance(manifest_of(captured(), DIGESTS), digests, captured(), folder="fx")
    assert not result.stale and not result.cases
    assert result.notes[0].startswith(
        "fx/c2.json was edited after capture (the bytes differ from fx/_manifest.json)"
    )


def test_only_the_fixtures_of_an_older_capture_are_stale() -> None:
    old = manifest_of(captured(), DIGESTS)
    newer = captured({"a": "9" * 64, "b": "2" * 64})
    manifest = old.updated(newer, {"c2": DIGESTS["c2"]}, DIGESTS)
    assert len(manifest.to_json()["captures"]) == 2
    problems = check(newer, manifest)
    assert problems == ["seed-docs/a.md changed after fixtures/c1.json was captured"]
    result = check_provenance(manifest, DIGESTS, newer, folder="fixtures", paths=PATHS)
    assert dict(result.cases) == {"c1": tuple(problems)}  # c2 is current


def test_unrecorded_fixtures_and_a_missing_manifest_are_notes_not_failures() -> None:
    result = check_provenance(None, DIGESTS, captured(), folder="fixtures")
    assert not result.stale
    assert "fixtures/_manifest.json is missing" in result.notes[0]
    partial = manifest_of(captured(), {"c1": DIGESTS["c1"]})
    result = check_provenance(partial, DIGESTS, captured(), folder="fixtures")
    assert not result.stale
    assert "fixtures/c2.json has no record" in result.notes[0]


def test_a_service_capture_is_not_checked_offline() -> None:
    service = Capture({"backend": "http"}, None, "r-7")
    result = check_provenance(
        manifest_of(service, DIGESTS), DIGESTS, captured({"z": "0" * 64}), folder="fixtures"
    )
    assert not result.stale
    assert "corpus revision r-7" in result.notes[0]


def test_the_manifest_round_trips_and_drops_unused_captures() -> None:
    first = manifest_of(captured(), DIGESTS)
    second = first.updated(captured({"a": "9" * 64}), DIGESTS, DIGESTS)
    data = second.to_json()
    assert list(data["captures"]) == [captured({"a": "9" * 64}).key]
    assert Manifest.from_json(data).to_json() == data
    gone = second.updated(captured(), {}, ["c1"])
    assert list(gone.to_json()["fixtures"]) == ["c1"]


def test_settings_of_follows_the_method_and_its_overrides() -> None:
    config = Config()
    full = settings_of(config, "embedded")
    assert full["method"] == "hybrid+rerank"
    assert full["lookup.reranker"] == "heuristic-v2"
    lexical = settings_of(config, "embedded", "lexical")
    assert lexical["lookup.fusion"] is None and lexical["lookup.rerankDepth"] is None
    stricter = Config(lookup=LookupSettings(min_score=0.5))
    assert settings_of(stricter, "embedded")["lookup.minScore"] == 0.5
    assert settings_of(config, "http") == {"backend": "http"}


def test_settings_of_a_service_method_records_its_request_fields() -> None:
    config = Config(http_section={"methods": {"hybrid": {"mode": "hybrid", "alpha": 0.5}}})
    assert settings_of(config, "http", "hybrid") == {
        "backend": "http",
        "method": "hybrid",
        "method.request": {"mode": "hybrid", "alpha": 0.5},
    }
    assert settings_of(config, "http") == {"backend": "http"}

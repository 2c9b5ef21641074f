"""``HttpMapping`` read from ragsnap.yaml (ragsnap.kb.backends.http): the ``http.lookup.trace``
section, its defaults and what it names."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragsnap.config import load_config
from ragsnap.errors import InputError, UsageError
from ragsnap.kb.backends.http import TRACE_FIELDS, HttpMapping, TraceMapping


def mapping(tmp_path: Path, text: str) -> HttpMapping:
    path = tmp_path / "ragsnap.yaml"
    path.write_text(text, encoding="utf-8")
    return load_config(path).http


def test_without_a_trace_section_the_traces_are_copied_as_they_are(tmp_path: Path) -> None:
    assert HttpMapping().trace is None
    assert mapping(tmp_path, "http:\n  lookup: {retrievalTrace: trace}\n").trace is None


def test_an_empty_trace_section_is_ragsnaps_own_names(tmp_path: Path) -> None:
    trace = mapping(tmp_path, "http:\n  lookup: {trace: {}}\n").trace
    assert trace == TraceMapping()
    assert set(trace.fields) == set(TRACE_FIELDS)
    for kind, (required, optional) in TRACE_FIELDS.items():
        assert trace.fields[kind] == {name: name for name in (*required, *optional)}
    assert trace.named == frozenset()


def test_named_fields_replace_the_defaults_and_are_remembered(tmp_path: Path) -> None:
    trace = mapping(
        tmp_path,
        "http:\n  lookup:\n    trace:\n"
        "      retrievalTrace: {selectedAttempt: strategy, fusion: null}\n"
        "      attempt: {hitCount: stats.hits}\n"
        "      rankedItem: {vectorRank: null, confidence: conf}\n",
    ).trace
    assert trace is not None
    assert trace.fields["retrievalTrace"]["selectedAttempt"] == "strategy"
    assert trace.fields["retrievalTrace"]["fusion"] is None
    assert trace.fields["retrievalTrace"]["attempts"] == "attempts"  # not named: ours
    assert trace.fields["attempt"]["hitCount"] == "stats.hits"
    assert trace.fields["rankedItem"]["confidence"] == "conf"
    assert trace.named == {
        ("retrievalTrace", "selectedAttempt"),
        ("retrievalTrace", "fusion"),
        ("attempt", "hitCount"),
        ("rankedItem", "vectorRank"),
        ("rankedItem", "confidence"),
    }


def test_the_config_schema_lists_exactly_the_mapped_fields() -> None:
    """Every field ``TRACE_FIELDS`` maps is a key of the config schema, and only the
    optional ones may be null."""
    from ragsnap.io.schema import load_schema

    lookup = load_schema("config")["properties"]["http"]["properties"]["lookup"]
    sections = lookup["properties"]["trace"]["properties"]
    assert set(sections) == set(TRACE_FIELDS)
    for kind, (required, optional) in TRACE_FIELDS.items():
        fields = sections[kind]["properties"]
        assert set(fields) == {*required, *optional}
        assert {name for name, node in fields.items() if "oneOf" in node} == set(optional)


# -- http.methods ------------------------------------------------------------------------


def test_methods_are_read_with_their_request_fields(tmp_path: Path) -> None:
    read = mapping(
        tmp_path,
        "http:\n  methods:\n    lexical: {mode: bm25}\n    hybrid: {mode: hybrid, alpha: 0.5}\n"
        "    default: {}\n",
    )
    assert list(read.methods) == ["lexical", "hybrid", "default"]
    assert read.method_request("hybrid") == {"mode": "hybrid", "alpha": 0.5}
    assert read.method_request("default") == {}
    assert HttpMapping().methods == {}


def test_an_unknown_method_lists_the_mapped_ones(tmp_path: Path) -> None:
    read = mapping(tmp_path, "http:\n  methods: {lexical: {mode: bm25}, hybrid: {}}\n")
    with pytest.raises(UsageError, match=r"'rrf' is not in http.methods .* lexical, hybrid"):
        read.method_request("rrf")
    with pytest.raises(UsageError, match=r"names no methods; add `http.methods: \{rrf"):
        HttpMapping().method_request("rrf")


@pytest.mark.parametrize(
    ("text", "pointer"),
    [
        ("http:\n  methods: {Hybrid: {}}\n", "/http/methods"),
        ("http:\n  methods: {hybrid: bm25}\n", "/http/methods/hybrid"),
        # the body's own fields, under the service's names
        ("http:\n  methods: {hybrid: {topK: 9}}\n", "/http/methods/hybrid/topK"),
        (
            "http:\n  lookup: {request: {query: question}}\n  methods: {hybrid: {question: x}}\n",
            "/http/methods/hybrid/question",
        ),
    ],
)
def test_bad_methods_are_refused_with_their_pointer(
    tmp_path: Path, text: str, pointer: str
) -> None:
    with pytest.raises(InputError) as caught:
        mapping(tmp_path, text)
    assert caught.value.pointer == pointer


def test_a_renamed_request_field_frees_ragsnaps_name(tmp_path: Path) -> None:
    text = "http:\n  lookup: {request: {query: question}}\n  methods: {hybrid: {query: x}}\n"
    assert mapping(tmp_path, text).method_request("hybrid") == {"query": "x"}


def test_budgets_default_to_qilbeedbs_and_are_read_and_overridden(tmp_path: Path) -> None:
    default = HttpMapping()
    assert (default.max_records, default.max_bytes) == (10000, 67108864)
    read = mapping(tmp_path, "http:\n  budgets: {records: 50}\n")
    assert (read.max_records, read.max_bytes) == (50, 67108864)
    flagged = read.with_budgets(None, 4096)  # --max-bytes 4096, no --max-records
    assert (flagged.max_records, flagged.max_bytes) == (50, 4096)
    assert read.with_budgets(7, None).max_records == 7


@pytest.mark.parametrize("budgets", ["{records: 0}", "{bytes: -1}", "{rows: 5}"])
def test_bad_budgets_are_refused_with_their_pointer(tmp_path: Path, budgets: str) -> None:
    with pytest.raises(InputError, match="/http/budgets"):
        mapping(tmp_path, f"http:\n  budgets: {budgets}\n")

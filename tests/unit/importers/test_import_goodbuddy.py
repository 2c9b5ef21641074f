"""The GoodBuddy importer: chunks as seed documents, graded chunk judgments, exact spans."""

from __future__ import annotations

import copy
import io
import json
from pathlib import Path
from typing import Any

import pytest

from conftest import goodbuddy_fixture, set_at, shared_data
from ragsnap.errors import InputError, UsageError
from ragsnap.importers import ImportOptions, SourceDoc, SourceQuery, make_importer
from ragsnap.importers.goodbuddy import GoodBuddyImporter
from ragsnap.importers.writer import write_import
from ragsnap.io.inputs import load_cases


def write(tmp_path: Path, data: Any, name: str = "fixture.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path


def read_all(
    path: Path, options: ImportOptions | None = None
) -> tuple[list[SourceDoc], list[SourceQuery]]:
    importer = GoodBuddyImporter(path, options or ImportOptions())
    docs = list(importer.documents())
    return docs, importer.queries(frozenset(d.source for d in docs))


def error(tmp_path: Path, data: Any, options: ImportOptions | None = None) -> InputError:
    path = write(tmp_path, data)
    with pytest.raises(InputError) as caught:
        read_all(path, options)
    assert caught.value.path == str(path)
    assert caught.value.fix
    return caught.value


# -- what it reads -------------------------------------------------------------


def test_every_chunk_becomes_one_document(tmp_path: Path) -> None:
    path = write(tmp_path, goodbuddy_fixture())
    docs, _ = read_all(path)
    assert [d.source for d in docs] == ["chunk-pool-size", "chunk-pool-idle", "chunk-tls"]
    first = docs[0]
    assert first.doc_id == "doc-pool"
    assert first.title == "Connection pool"
    assert first.text == "The pool holds at most 20 connections."
    assert first.metadata == {"language": "en"}
    assert first.vector is None
    assert first.origin == f"{path} at /documents/0/chunks/0"
    assert docs[2].title is None and docs[2].doc_id == "doc-tls"
    assert docs[2].origin.endswith("/documents/1/chunks/0")


def test_queries_keep_grades_spans_languages_and_no_answer(tmp_path: Path) -> None:
    _, queries = read_all(write(tmp_path, goodbuddy_fixture()))
    pool, tls, none = queries
    assert (pool.id, pool.text, pool.language) == ("q-pool", "How big is the pool?", "en")
    assert [(j.target, j.grade, j.spans) for j in pool.judgments] == [
        ("chunk-pool-size", 3, ("at most 20 connections",)),
        ("chunk-pool-idle", 1, ()),
    ]
    assert tls.language == "zh-CN"
    assert tls.judgments[0].spans == ("每九十天",)
    assert none.no_answer and none.judgments == ()
    assert not pool.no_answer and not pool.judgments_complete
    assert all(q.vector is None for q in queries)


def test_split_and_category_default_then_options_then_the_query_own(tmp_path: Path) -> None:
    data = goodbuddy_fixture()
    _, queries = read_all(write(tmp_path, data))
    assert {(q.split, q.category) for q in queries} == {("test", "imported")}
    options = ImportOptions(split="dev", category="goodbuddy", language="de")
    data["queries"][0]["split"] = "test"
    data["queries"][0]["category"] = "pool"
    del data["queries"][1]["language"]
    _, queries = read_all(write(tmp_path, data), options)
    assert (queries[0].split, queries[0].category) == ("test", "pool")
    assert (queries[1].split, queries[1].category, queries[1].language) == (
        "dev",
        "goodbuddy",
        "de",
    )


def test_repeated_span_is_kept_once_and_text_alias_is_read(tmp_path: Path) -> None:
    data = goodbuddy_fixture()
    judgment = data["queries"][0]["judgments"][0]
    judgment["spans"] = [{"text": "20 connections"}, {"text": "20 connections"}]
    chunk = data["documents"][0]["chunks"][0]
    chunk["text"] = chunk.pop("content")
    query = data["queries"][0]
    query["text"] = query.pop("query")
    _, queries = read_all(write(tmp_path, data))
    assert queries[0].judgments[0].spans == ("20 connections",)
    assert queries[0].text == "How big is the pool?"


def test_document_without_chunks_is_reported_as_skipped(tmp_path: Path) -> None:
    data = goodbuddy_fixture()
    data["documents"].append({"id": "doc-empty", "chunks": []})
    importer = GoodBuddyImporter(write(tmp_path, data), ImportOptions())
    assert len(list(importer.documents())) == 3
    assert importer.skipped == ["document 'doc-empty' has no chunks (/documents/2)"]


def test_queries_before_documents_still_check_spans(tmp_path: Path) -> None:
    data = goodbuddy_fixture()
    data["queries"][0]["judgments"][0]["spans"] = [{"text": "not in the chunk"}]
    importer = GoodBuddyImporter(write(tmp_path, data), ImportOptions())
    sources = frozenset({"chunk-pool-size", "chunk-pool-idle", "chunk-tls"})
    with pytest.raises(InputError) as caught:
        importer.queries(sources)
    assert caught.value.pointer == "/queries/0/judgments/0/spans/0/text"


def test_registered_as_goodbuddy(tmp_path: Path) -> None:
    importer = make_importer("goodbuddy", write(tmp_path, goodbuddy_fixture()), ImportOptions())
    assert isinstance(importer, GoodBuddyImporter)
    assert importer.format == "goodbuddy" and importer.space is None


# -- through the writer ----------------------------------------------------------


def test_written_cases_load_with_source_judgments_and_spans(tmp_path: Path) -> None:
    out = tmp_path / "out"
    importer = GoodBuddyImporter(write(tmp_path, goodbuddy_fixture()), ImportOptions())
    summary = write_import(importer, out, stream=io.StringIO())
    assert (summary.documents, summary.chunks, summary.queries) == (3, 3, 3)
    assert (summary.judgments, summary.no_answer, summary.vectors) == (3, 1, 0)
    assert not (out / "vectors.json").exists()
    cases = {c.id: c for c in load_cases(out / "golden-cases.json").cases}
    pool = cases["q-pool"]
    assert pool.expected_sources == ("chunk-pool-size",)
    assert [(j.kind, j.target, j.grade, j.spans) for j in pool.judgments] == [
        ("source", "chunk-pool-size", 3, ("at most 20 connections",)),
        ("source", "chunk-pool-idle", 1, ()),
    ]
    assert cases["q-none"].no_answer and cases["q-none"].judgments == ()
    assert cases["q-tls"].language == "zh-CN"
    lines = [json.loads(line) for line in (out / "corpus.jsonl").read_text().splitlines()]
    assert lines[0] == {
        "source": "chunk-pool-size",
        "doc_id": "doc-pool",
        "title": "Connection pool",
        "language": "en",
        "text": "The pool holds at most 20 connections.",
    }


def test_the_real_fixture_reads_completely() -> None:
    docs, queries = read_all(shared_data("goodbuddy-synthetic-bilingual-v1.json"))
    assert len(docs) == 15 and len({d.doc_id for d in docs}) == 15
    assert len(queries) == 16
    assert sum(q.no_answer for q in queries) == 3
    assert {q.language for q in queries} == {"en", "zh-CN"}
    texts = {d.source: d.text for d in docs}
    spans = [(j.target, s) for q in queries for j in q.judgments for s in j.spans]
    assert spans and all(s in texts[t] for t, s in spans)
    assert sorted({j.grade for q in queries for j in q.judgments}) == [1, 2, 3]


# -- what it refuses -------------------------------------------------------------


def mutate(change: Any) -> dict[str, Any]:
    data = copy.deepcopy(goodbuddy_fixture())
    change(data)
    return data


BAD = [
    # (name, change, pointer, words in the problem)
    ("version", set_at("version", 2), "/version", "version 2"),
    ("no documents", set_at("documents", None), "/documents", "no `documents`"),
    ("documents object", set_at("documents", {}), "/documents", "must be an array"),
    ("queries string", set_at("queries", "q"), "/queries", "must be an array"),
    ("document not object", set_at("documents/1", "doc"), "/documents/1", "JSON object"),
    ("document id missing", set_at("documents/0/id", None), "/documents/0/id", "missing"),
    ("document id number", set_at("documents/0/id", 7), "/documents/0/id", "a number"),
    ("document id NUL", set_at("documents/0/id", "doc\x00pool"), "/documents/0/id", "U+0000"),
    ("document id padded", set_at("documents/0/id", "doc "), "/documents/0/id", "white space"),
    ("duplicate document", set_at("documents/1/id", "doc-pool"), "/documents/1/id", "twice"),
    ("title number", set_at("documents/0/title", 3), "/documents/0/title", "non-empty text"),
    ("chunks missing", set_at("documents/1/chunks", None), "/documents/1/chunks", "missing"),
    ("chunks object", set_at("documents/1/chunks", {}), "/documents/1/chunks", "an array"),
    ("chunk not object", set_at("documents/1/chunks/0", "c"), "/documents/1/chunks/0", "object"),
    (
        "chunk id missing",
        set_at("documents/0/chunks/1/id", None),
        "/documents/0/chunks/1/id",
        "missing",
    ),
    (
        "duplicate chunk",
        set_at("documents/1/chunks/0/id", "chunk-pool-size"),
        "/documents/1/chunks/0/id",
        "first at /documents/0/chunks/0",
    ),
    (
        "content missing",
        set_at("documents/0/chunks/0/content", None),
        "/documents/0/chunks/0/content",
        "missing",
    ),
    (
        "content empty",
        set_at("documents/0/chunks/0/content", "  "),
        "/documents/0/chunks/0/content",
        "empty text",
    ),
    ("query not object", set_at("queries/2", []), "/queries/2", "JSON object"),
    ("query id missing", set_at("queries/0/id", None), "/queries/0/id", "missing"),
    ("query id newline", set_at("queries/0/id", "q\npool"), "/queries/0/id", "U+000A"),
    ("duplicate query", set_at("queries/1/id", "q-pool"), "/queries/1/id", "first at /queries/0"),
    ("query text missing", set_at("queries/0/query", None), "/queries/0/query", "missing"),
    ("query text long", set_at("queries/0/query", "x" * 10_001), "/queries/0/query", "10,001"),
    ("language", set_at("queries/0/language", "English"), "/queries/0/language", "English"),
    ("category", set_at("queries/0/category", "a b"), "/queries/0/category", "not usable"),
    ("split", set_at("queries/0/split", "train"), "/queries/0/split", "train"),
    ("noAnswer string", set_at("queries/0/noAnswer", "no"), "/queries/0/noAnswer", "true or false"),
    (
        "noAnswer with judgments",
        set_at("queries/0/noAnswer", True),
        "/queries/0/judgments",
        "noAnswer query",
    ),
    (
        "answerable judges nothing",
        set_at("queries/1/judgments", []),
        "/queries/1/judgments",
        "judges no chunk",
    ),
    ("judgments object", set_at("queries/0/judgments", {}), "/queries/0/judgments", "an array"),
    ("judgment not object", set_at("queries/0/judgments/1", 3), "/queries/0/judgments/1", "object"),
    (
        "chunkId missing",
        set_at("queries/0/judgments/1/chunkId", None),
        "/queries/0/judgments/1/chunkId",
        "missing",
    ),
    (
        "chunkId number",
        set_at("queries/0/judgments/1/chunkId", 5),
        "/queries/0/judgments/1/chunkId",
        "a number",
    ),
    (
        "dangling chunkId",
        set_at("queries/1/judgments/0/chunkId", "chunk-gone"),
        "/queries/1/judgments/0/chunkId",
        "'chunk-gone'",
    ),
    (
        "document id is not a chunk id",
        set_at("queries/1/judgments/0/chunkId", "doc-tls"),
        "/queries/1/judgments/0/chunkId",
        "no document has",
    ),
    (
        "judged twice",
        set_at("queries/0/judgments/1/chunkId", "chunk-pool-size"),
        "/queries/0/judgments/1/chunkId",
        "twice",
    ),
    (
        "relevance 0",
        set_at("queries/0/judgments/1/relevance", 0),
        "/queries/0/judgments/1/relevance",
        "1 to 3",
    ),
    (
        "relevance 4",
        set_at("queries/0/judgments/0/relevance", 4),
        "/queries/0/judgments/0/relevance",
        "not 4",
    ),
    (
        "relevance string",
        set_at("queries/0/judgments/0/relevance", "3"),
        "/queries/0/judgments/0/relevance",
        "'3'",
    ),
    (
        "relevance float",
        set_at("queries/0/judgments/0/relevance", 2.5),
        "/queries/0/judgments/0/relevance",
        "2.5",
    ),
    (
        "relevance boolean",
        set_at("queries/0/judgments/0/relevance", True),
        "/queries/0/judgments/0/relevance",
        "True",
    ),
    (
        "relevance missing",
        set_at("queries/0/judgments/0/relevance", None),
        "/queries/0/judgments/0/relevance",
        "missing",
    ),
    (
        "spans object",
        set_at("queries/0/judgments/0/spans", {"text": "x"}),
        "/queries/0/judgments/0/spans",
        "an array",
    ),
    (
        "span string",
        set_at("queries/0/judgments/0/spans/0", "at most 20"),
        "/queries/0/judgments/0/spans/0",
        "object",
    ),
    (
        "span text missing",
        set_at("queries/0/judgments/0/spans/0", {"start": 0}),
        "/queries/0/judgments/0/spans/0/text",
        "missing",
    ),
    (
        "span text empty",
        set_at("queries/0/judgments/0/spans/0/text", ""),
        "/queries/0/judgments/0/spans/0/text",
        "non-empty",
    ),
    (
        "span not verbatim",
        set_at("queries/0/judgments/0/spans/0/text", "at most 20 Connections"),
        "/queries/0/judgments/0/spans/0/text",
        "does not occur verbatim in chunk 'chunk-pool-size'",
    ),
    (
        "span of another chunk",
        set_at("queries/0/judgments/1/spans", [{"text": "at most 20"}]),
        "/queries/0/judgments/1/spans/0/text",
        "chunk-pool-idle",
    ),
]


@pytest.mark.parametrize(
    ("change", "pointer", "words"), [b[1:] for b in BAD], ids=[b[0] for b in BAD]
)
def test_malformed_input_names_the_pointer_and_the_fix(
    tmp_path: Path, change: Any, pointer: str, words: str
) -> None:
    err = error(tmp_path, mutate(change))
    assert err.pointer == pointer
    assert words in err.problem
    assert str(err).startswith(f"{tmp_path / 'fixture.json'} at {pointer}: ")


def test_not_json_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "fixture.json"
    path.write_text('{"documents": [\n  {"id": "a",}\n]}\n', encoding="utf-8")
    with pytest.raises(InputError) as caught:
        GoodBuddyImporter(path, ImportOptions())
    assert "line 2" in caught.value.problem


@pytest.mark.parametrize("data", [[], "text", 3])
def test_top_level_must_be_an_object(tmp_path: Path, data: Any) -> None:
    with pytest.raises(InputError) as caught:
        GoodBuddyImporter(write(tmp_path, data), ImportOptions())
    assert "not a JSON object" in caught.value.problem


def test_missing_file_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError) as caught:
        GoodBuddyImporter(tmp_path / "nope.json", ImportOptions())
    assert caught.value.problem == "file not found"


@pytest.mark.parametrize(
    ("options", "flag"),
    [
        (ImportOptions(split="train"), "--split"),
        (ImportOptions(category="has space"), "--category"),
        (ImportOptions(language="English"), "--language"),
    ],
)
def test_options_golden_cases_cannot_hold_are_usage_errors(
    tmp_path: Path, options: ImportOptions, flag: str
) -> None:
    with pytest.raises(UsageError, match=flag):
        GoodBuddyImporter(write(tmp_path, goodbuddy_fixture()), options)

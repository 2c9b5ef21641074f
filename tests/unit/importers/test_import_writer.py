"""ragsnap.importers.writer: what any importer's documents and queries become."""

from __future__ import annotations

import json
from collections.abc import Iterator
from collections.abc import Set as AbstractSet
from pathlib import Path

import pytest

from ragsnap.config import load_config
from ragsnap.errors import InputError, OutputError
from ragsnap.importers import SourceDoc, SourceJudgment, SourceQuery, VectorSpace
from ragsnap.importers.writer import write_import
from ragsnap.io.inputs import load_cases
from ragsnap.kb.corpus import ChunkSettings, SeedCorpus
from ragsnap.kb.embedders import FrozenEmbedder


class ListImporter:
    """An importer over in-memory lists: the smallest real implementation."""

    format = "list"

    def __init__(
        self,
        docs: list[SourceDoc],
        queries: list[SourceQuery],
        space: VectorSpace | None = None,
    ):
        self._docs = docs
        self._queries = queries
        self.space = space
        self.skipped: list[str] = []

    def documents(self) -> Iterator[SourceDoc]:
        yield from self._docs

    def queries(self, sources: AbstractSet[str]) -> list[SourceQuery]:
        return self._queries


DOCS = [
    SourceDoc("pool", "HikariCP pool size is 20.", title="Pool", metadata={"lang": "en"}),
    SourceDoc("lag", "Kafka consumer lag alert fires at 10000.", kb_scope="mq"),
]


def test_files_and_cases(tmp_path: Path) -> None:
    queries = [
        SourceQuery(
            "q1",
            "pool size?",
            judgments=(SourceJudgment("pool", 3, ("pool size is 20",)), SourceJudgment("lag", 1)),
        ),
        SourceQuery("q2", "postgres vacuum?", no_answer=True),
    ]
    summary = write_import(ListImporter(DOCS, queries), tmp_path, kb_scope="eval")
    assert (summary.documents, summary.queries, summary.judgments, summary.no_answer) == (
        2,
        2,
        2,
        1,
    )
    lines = [json.loads(x) for x in (tmp_path / "corpus.jsonl").read_text().splitlines()]
    assert lines[0] == {
        "kb_scope": "eval",
        "lang": "en",
        "source": "pool",
        "text": "HikariCP pool size is 20.",
        "title": "Pool",
    }
    assert lines[1]["kb_scope"] == "mq"  # the document's own scope wins
    cases = load_cases(tmp_path / "golden-cases.json").cases
    assert cases[0].expected_sources == ("pool",)  # the best grade only
    assert [(j.target, j.grade) for j in cases[0].judgments] == [("pool", 3), ("lag", 1)]
    assert cases[1].no_answer
    assert [d.source for d in SeedCorpus(tmp_path / "corpus.jsonl")] == ["pool", "lag"]
    assert not (tmp_path / "vectors.json").exists()
    assert "seedDocs: corpus.jsonl" in (tmp_path / "ragsnap.yaml").read_text()


def test_complete_judgments_grade_every_other_document_zero(tmp_path: Path) -> None:
    query = SourceQuery(
        "q1", "pool", judgments=(SourceJudgment("pool", 2),), judgments_complete=True
    )
    write_import(ListImporter(DOCS, [query]), tmp_path)
    (case,) = load_cases(tmp_path / "golden-cases.json").cases
    assert [(j.target, j.grade) for j in case.judgments] == [("pool", 2), ("lag", 0)]


def test_a_query_with_nothing_relevant_is_an_input_error(tmp_path: Path) -> None:
    query = SourceQuery("q", "hello", judgments=(SourceJudgment("pool", 0),), origin="x.json")
    with pytest.raises(InputError, match="judges nothing relevant"):
        write_import(ListImporter(DOCS, [query]), tmp_path)
    assert list(tmp_path.iterdir()) == []  # nothing written, no temporary file left


def test_duplicate_document_ids_are_an_input_error(tmp_path: Path) -> None:
    docs = [*DOCS, SourceDoc("pool", "again", origin="c.jsonl line 3")]
    with pytest.raises(InputError, match="'pool' appears twice"):
        write_import(ListImporter(docs, []), tmp_path)


def test_tiny_vectors_are_kept_as_given(tmp_path: Path) -> None:
    space = VectorSpace("acme", "tiny", "1", 2)
    docs = [
        SourceDoc("pool", "pool text", vector=[3e-10, 1e-10]),
        SourceDoc("lag", "lag text", vector=[-1e-10, 2e-10]),
    ]
    query = SourceQuery("q", "pool", judgments=(SourceJudgment("pool", 1),), vector=[3e-10, 0.0])
    write_import(ListImporter(docs, [query], space), tmp_path)
    embedder = FrozenEmbedder(tmp_path / "vectors.json")
    assert embedder.fingerprint.model == "acme/tiny"
    rows = embedder.embed_documents(["pool text"], ["pool#0"])
    assert rows[0] @ embedder.embed_query("pool") > 0.9  # direction survived the file


def test_same_input_same_bytes(tmp_path: Path) -> None:
    query = SourceQuery("q1", "pool", judgments=(SourceJudgment("pool", 2),))
    for out in ("a", "b"):
        write_import(ListImporter(DOCS, [query]), tmp_path / out)
    for name in ("corpus.jsonl", "golden-cases.json", "ragsnap.yaml"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def test_the_config_keeps_the_chunk_settings_the_vectors_are_keyed_by(tmp_path: Path) -> None:
    settings = ChunkSettings(max_chars=4000, overlap_chars=0, heading_level=3)
    query = SourceQuery("q1", "pool", judgments=(SourceJudgment("pool", 2),))
    write_import(ListImporter(DOCS, [query]), tmp_path, settings=settings)
    assert load_config(tmp_path / "ragsnap.yaml").kb.chunking == settings


def test_an_output_that_is_a_folder_stops_before_anything_is_replaced(tmp_path: Path) -> None:
    query = SourceQuery("q1", "pool", judgments=(SourceJudgment("pool", 2),))
    write_import(ListImporter(DOCS, [query]), tmp_path)
    before = (tmp_path / "corpus.jsonl").read_bytes()
    (tmp_path / "golden-cases.json").unlink()
    (tmp_path / "golden-cases.json").mkdir()
    docs = [*DOCS, SourceDoc("new", "a new document")]
    with pytest.raises(OutputError, match="not a file"):
        write_import(ListImporter(docs, [query]), tmp_path)
    assert (tmp_path / "corpus.jsonl").read_bytes() == before
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]

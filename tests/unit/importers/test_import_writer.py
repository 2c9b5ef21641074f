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
from ragsnap.importers.ids import SOURCE, ragsnap_id, read_id_map
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


# -- ids ragsnap cannot use as given -------------------------------------------------------

PAPER = "Attention Is All You Need.pdf_chunk_25"
PAPER_ID = "Attention_Is_All_You_Need.pdf_chunk_25--654b7f6fbffb"
QUESTION = "what is attention?"
QUESTION_ID = "what_is_attention--e02ec70a6f92"


def test_ids_with_spaces_are_written_in_their_ragsnap_form_the_original_kept(
    tmp_path: Path,
) -> None:
    space = VectorSpace("acme", "tiny", "1", 2)
    docs = [
        SourceDoc(
            PAPER, "Self-attention only.", doc_id="Attention Is All You Need.pdf", vector=[1, 0]
        ),
        SourceDoc("pool", "HikariCP pool size is 20.", doc_id="doc-pool", vector=[0, 1]),
    ]
    queries = [
        SourceQuery(
            QUESTION,
            "what does the transformer rely on",
            judgments=(SourceJudgment(PAPER, 3, ("Self-attention",)),),
            judgments_complete=True,
            vector=[1, 0],
        ),
        SourceQuery("q2", "pool size?", judgments=(SourceJudgment("pool", 2),), vector=[0, 1]),
    ]
    summary = write_import(ListImporter(docs, queries, space), tmp_path)
    doc_form = (
        "Attention_Is_All_You_Need.pdf--"
        + ragsnap_id("Attention Is All You Need.pdf", SOURCE)[-12:]
    )
    lines = [json.loads(x) for x in (tmp_path / "corpus.jsonl").read_text().splitlines()]
    assert lines[0] == {
        "source": PAPER_ID,
        "original_source": PAPER,
        "doc_id": doc_form,
        "original_doc_id": "Attention Is All You Need.pdf",
        "text": "Self-attention only.",
    }
    assert lines[1] == {"source": "pool", "doc_id": "doc-pool", "text": "HikariCP pool size is 20."}
    seeded = list(SeedCorpus(tmp_path / "corpus.jsonl"))  # what `ragsnap seed` reads
    assert [(d.source, d.metadata) for d in seeded] == [
        (PAPER_ID, {"original_source": PAPER, "original_doc_id": "Attention Is All You Need.pdf"}),
        ("pool", {}),
    ]
    first, second = load_cases(tmp_path / "golden-cases.json").cases
    assert (first.id, first.expected_sources, first.tags) == (
        QUESTION_ID,
        (PAPER_ID,),
        (f"original-id:{QUESTION}",),
    )
    assert [(j.target, j.grade, j.spans) for j in first.judgments] == [
        (PAPER_ID, 3, ("Self-attention",)),
        ("pool", 0, ()),  # judgments_complete: the other document, by its ragsnap id
    ]
    assert (second.id, second.tags) == ("q2", ())
    vectors = json.loads((tmp_path / "vectors.json").read_text())
    assert sorted(vectors["chunks"]) == [f"{PAPER_ID}#0", "pool#0"]
    assert read_id_map(tmp_path / "ids.tsv") == {
        "source": {PAPER_ID: PAPER},
        "doc_id": {doc_form: "Attention Is All You Need.pdf"},
        "case": {QUESTION_ID: QUESTION},
    }
    assert summary.mapped == 3
    assert summary.files == [
        tmp_path / name
        for name in ("corpus.jsonl", "golden-cases.json", "vectors.json", "ids.tsv", "ragsnap.yaml")
    ]
    assert "ids: 3 in their ragsnap form" in "\n".join(summary.lines())


def test_usable_ids_write_no_map_and_no_original(tmp_path: Path) -> None:
    query = SourceQuery("q1", "pool", judgments=(SourceJudgment("pool", 2),))
    summary = write_import(ListImporter(DOCS, [query]), tmp_path)
    assert not (tmp_path / "ids.tsv").exists()
    assert "original" not in (tmp_path / "corpus.jsonl").read_text()
    assert "original" not in (tmp_path / "golden-cases.json").read_text()
    assert summary.mapped == 0 and not any(line.startswith("ids:") for line in summary.lines())


@pytest.mark.parametrize("clash_first", [False, True])
def test_two_ids_with_one_ragsnap_id_stop_the_import_and_write_nothing(
    tmp_path: Path, clash_first: bool
) -> None:
    docs = [
        SourceDoc(PAPER, "a", origin="c.jsonl line 1"),
        SourceDoc(PAPER_ID, "b", origin="c.jsonl line 2"),
    ]
    if clash_first:
        docs.reverse()
    query = SourceQuery("q1", "x", judgments=(SourceJudgment(PAPER, 1),))
    with pytest.raises(InputError, match=f"would both be '{PAPER_ID}' in ragsnap"):
        write_import(ListImporter(docs, [query]), tmp_path)
    assert list(tmp_path.iterdir()) == []  # nothing written, no temporary file left


def test_two_queries_with_one_case_id_stop_the_import(tmp_path: Path) -> None:
    queries = [
        SourceQuery(QUESTION, "x", judgments=(SourceJudgment("pool", 1),), origin="q line 1"),
        SourceQuery(QUESTION_ID, "y", judgments=(SourceJudgment("pool", 1),), origin="q line 2"),
    ]
    with pytest.raises(InputError) as info:
        write_import(ListImporter(DOCS, queries), tmp_path)
    assert str(info.value).startswith(
        f"q line 2: query id '{QUESTION_ID}' and the one at q line 1 ('{QUESTION}') would both be"
    )
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("docs", "queries", "problem"),
    [
        (
            [SourceDoc("a\x00b", "x", origin="c line 1")],
            [],
            "c line 1: document id 'a\\x00b' holds U+0000, a control character",
        ),
        (
            [SourceDoc("a", "x", doc_id=" a", origin="c line 1")],
            [],
            "c line 1: parent document id ' a' begins or ends with white space",
        ),
        (DOCS, [SourceQuery("", "x", origin="q line 1")], "q line 1: query id '' is empty"),
    ],
)
def test_an_id_no_file_could_hold_is_refused(
    tmp_path: Path, docs: list[SourceDoc], queries: list[SourceQuery], problem: str
) -> None:
    with pytest.raises(InputError) as info:
        write_import(ListImporter(docs, queries), tmp_path)
    assert str(info.value).startswith(problem)

"""The BEIR importer (ragsnap.importers.beir): documents, queries, grades, splits, errors."""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path
from typing import Any

import pytest

from ragsnap.errors import InputError, UsageError
from ragsnap.importers import ImportOptions, SourceJudgment, SourceQuery, make_importer
from ragsnap.importers.beir import BeirImporter, read_lines
from ragsnap.importers.writer import write_import

CORPUS = [
    {"_id": "d1", "title": "Connection pools", "text": "HikariCP sizes the pool.", "metadata": {}},
    {"_id": "d2", "title": "Kafka lag", "text": "Consumer lag grows.", "metadata": {"url": "u"}},
    {"_id": "d3", "title": "", "text": "Pods restart in CrashLoopBackOff."},
    {"_id": "doc/4:x", "title": "Retention", "text": "Logs are kept for 30 days."},
]
QUERIES = [
    {"_id": "q1", "text": "how big is the pool", "metadata": {}},
    {"_id": "q2", "text": "why does lag grow"},
    {"_id": "q3", "text": "never judged"},
    {"_id": "q4", "text": "only grade zero"},
    {"_id": "q5", "text": "  restart loops  "},
]
TEST_QRELS = [("q1", "d1", 2), ("q1", "d2", 0), ("q2", "d2", 1), ("q4", "d3", 0)]
DEV_QRELS = [("q5", "d3", 1), ("q5", "doc/4:x", 2)]


def jsonl(items: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(item) + "\n" for item in items)


def qrels(rows: list[tuple[str, str, Any]]) -> str:
    return "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{s}\n" for q, d, s in rows)


def dataset(
    root: Path,
    corpus: str | None = None,
    queries: str | None = None,
    splits: dict[str, str] | None = None,
    gz: bool = False,
) -> Path:
    """A BEIR folder under ``root`` (the defaults above unless given)."""
    root.mkdir(parents=True, exist_ok=True)
    for name, text in (
        ("corpus", jsonl(CORPUS) if corpus is None else corpus),
        ("queries", jsonl(QUERIES) if queries is None else queries),
    ):
        if gz:
            (root / f"{name}.jsonl.gz").write_bytes(gzip.compress(text.encode(), mtime=0))
        else:
            (root / f"{name}.jsonl").write_text(text, encoding="utf-8")
    splits = {"test": qrels(TEST_QRELS), "dev": qrels(DEV_QRELS)} if splits is None else splits
    (root / "qrels").mkdir(exist_ok=True)
    for split, text in splits.items():
        (root / "qrels" / f"{split}.tsv").write_text(text, encoding="utf-8")
    return root


def importer(root: Path, **options: Any) -> BeirImporter:
    return BeirImporter(root, ImportOptions(**options))


def read_all(imp: BeirImporter) -> tuple[list[Any], list[SourceQuery]]:
    docs = list(imp.documents())
    return docs, imp.queries(frozenset(d.source for d in docs))


def fails(imp: BeirImporter) -> InputError:
    with pytest.raises(InputError) as info:
        read_all(imp)
    return info.value


# -- documents ----------------------------------------------------------------------------


def test_documents_keep_ids_titles_text_metadata_and_origin(tmp_path: Path) -> None:
    root = dataset(tmp_path / "ds")
    docs = list(importer(root).documents())
    assert [d.source for d in docs] == ["d1", "d2", "d3", "doc/4:x"]
    assert docs[0].title == "Connection pools"
    assert docs[0].text == "HikariCP sizes the pool."
    assert docs[1].metadata == {"url": "u"}
    assert docs[2].title is None  # an empty title is no title
    assert docs[3].origin == f"{root / 'corpus.jsonl'} line 4"
    assert all(d.vector is None for d in docs)


def test_registered_under_its_format_name(tmp_path: Path) -> None:
    imp = make_importer("beir", dataset(tmp_path / "ds"), ImportOptions())
    assert isinstance(imp, BeirImporter)
    assert (imp.format, imp.space, imp.skipped) == ("beir", None, [])


def test_documents_are_streamed(tmp_path: Path) -> None:
    """The first documents arrive before a broken line further down is even read."""
    corpus = jsonl(CORPUS[:2]) + "{broken\n"
    docs = importer(dataset(tmp_path / "ds", corpus=corpus)).documents()
    assert next(docs).source == "d1"
    assert next(docs).source == "d2"
    with pytest.raises(InputError, match="line 3"):
        next(docs)


def test_title_only_and_empty_documents(tmp_path: Path) -> None:
    corpus = jsonl(
        [
            {"_id": "a", "title": "Only a title", "text": ""},
            {"_id": "b", "text": "   "},
            {"_id": "c", "title": None, "text": "Body"},
        ]
    )
    imp = importer(dataset(tmp_path / "ds", corpus=corpus, splits={"test": qrels([])}))
    docs = list(imp.documents())
    assert [(d.text, d.title) for d in docs] == [
        ("Only a title", "Only a title"),
        ("   ", None),
        ("Body", None),
    ]
    assert imp.skipped == [
        "1 document with no text: the title is the text",
        "1 document with neither text nor title (kept, never retrieved)",
    ]


def test_gzipped_corpus_and_queries(tmp_path: Path) -> None:
    plain = read_all(importer(dataset(tmp_path / "plain")))
    gz = importer(dataset(tmp_path / "gz", gz=True))
    docs, queries = read_all(gz)
    assert gz.corpus.name == "corpus.jsonl.gz"
    assert [d.source for d in docs] == [d.source for d in plain[0]]
    assert [d.text for d in docs] == [d.text for d in plain[0]]
    assert [(q.id, q.text, q.judgments) for q in queries] == [
        (q.id, q.text, q.judgments) for q in plain[1]
    ]
    assert queries[0].origin == f"{tmp_path / 'gz' / 'queries.jsonl.gz'} line 1"
    assert docs[0].origin == f"{tmp_path / 'gz' / 'corpus.jsonl.gz'} line 1"


def test_numeric_ids_and_a_byte_order_mark_are_read(tmp_path: Path) -> None:
    corpus = "\ufeff" + jsonl([{"_id": 7, "title": "T", "text": "seven"}])
    queries = jsonl([{"_id": 1, "text": "the seventh"}])
    root = dataset(tmp_path / "ds", corpus, queries, {"test": qrels([("1", "7", 1)])})
    docs, found = read_all(importer(root))
    assert [d.source for d in docs] == ["7"]
    assert [(q.id, q.judgments) for q in found] == [("1", (SourceJudgment("7", 1),))]


# -- queries ------------------------------------------------------------------------------


def test_every_split_by_default_each_query_in_its_file_split(tmp_path: Path) -> None:
    root = dataset(tmp_path / "ds")
    imp = importer(root)
    _, found = read_all(imp)
    where = f"{root / 'queries.jsonl'} line"
    assert found == [
        SourceQuery(
            id="q1",
            text="how big is the pool",
            split="test",
            judgments=(SourceJudgment("d1", 2), SourceJudgment("d2", 0)),
            origin=f"{where} 1",
        ),
        SourceQuery(
            id="q2",
            text="why does lag grow",
            split="test",
            judgments=(SourceJudgment("d2", 1),),
            origin=f"{where} 2",
        ),
        SourceQuery(
            id="q5",
            text="restart loops",
            split="dev",
            judgments=(SourceJudgment("d3", 1), SourceJudgment("doc/4:x", 2)),
            origin=f"{where} 5",
        ),
    ]
    assert imp.skipped == [
        "1 query with no judgment in qrels/dev.tsv and qrels/test.tsv (not imported)",
        "1 query with no relevant document: every judgment is grade 0 (not imported)",
    ]


def test_split_option_reads_one_qrels_file(tmp_path: Path) -> None:
    imp = importer(dataset(tmp_path / "ds"), split="dev", language="de", category="faq")
    _, found = read_all(imp)
    assert [(q.id, q.split, q.language, q.category) for q in found] == [("q5", "dev", "de", "faq")]
    assert imp.skipped == ["4 queries with no judgment in qrels/dev.tsv (not imported)"]


def test_defaults_language_en_category_imported(tmp_path: Path) -> None:
    _, found = read_all(importer(dataset(tmp_path / "ds"), split="test"))
    assert {(q.language, q.category, q.split) for q in found} == {("en", "imported", "test")}
    assert not any(q.no_answer or q.judgments_complete for q in found)


def test_grades_clipped_negative_zero_and_counted(tmp_path: Path) -> None:
    rows = [("q1", "d1", 5), ("q1", "d2", 0), ("q1", "d3", -2), ("q2", "d2", 4), ("q2", "d1", 3)]
    imp = importer(dataset(tmp_path / "ds", splits={"test": qrels(rows)}))
    _, found = read_all(imp)
    assert [[(j.target, j.grade) for j in q.judgments] for q in found] == [
        [("d1", 3), ("d2", 0), ("d3", 0)],
        [("d2", 3), ("d1", 3)],
    ]
    assert imp.skipped[:2] == [
        "2 qrels grades above 3 clipped to 3",
        "1 negative qrels grade read as 0",
    ]


def test_other_splits_are_left_out_and_said(tmp_path: Path) -> None:
    splits = {"train": qrels([("q3", "d1", 1)]), "test": qrels(TEST_QRELS)}
    imp = importer(dataset(tmp_path / "ds", splits=splits))
    _, found = read_all(imp)
    assert [q.id for q in found] == ["q1", "q2"]
    assert imp.skipped[0] == "qrels/train.tsv not read: ragsnap cases are split dev or test"


def test_qrels_without_header_and_with_blank_lines(tmp_path: Path) -> None:
    text = "q1\td1\t1\n\n q2 \t d2 \t 2 \r\n"
    _, found = read_all(importer(dataset(tmp_path / "ds", splits={"test": text})))
    assert [(q.id, q.judgments) for q in found] == [
        ("q1", (SourceJudgment("d1", 1),)),
        ("q2", (SourceJudgment("d2", 2),)),
    ]


def test_write_import_counts_and_files(tmp_path: Path) -> None:
    out = tmp_path / "out"
    summary = write_import(importer(dataset(tmp_path / "ds")), out, stream=io.StringIO())
    assert (summary.documents, summary.queries, summary.judgments, summary.no_answer) == (
        4,
        3,
        5,
        0,
    )
    cases = json.loads((out / "golden-cases.json").read_text())["cases"]
    assert [(c["id"], c["split"], c["expectedSources"]) for c in cases] == [
        ("q1", "test", ["d1"]),
        ("q2", "test", ["d2"]),
        ("q5", "dev", ["doc/4:x"]),
    ]
    lines = (out / "corpus.jsonl").read_text().splitlines()
    assert json.loads(lines[1]) == {
        "source": "d2",
        "title": "Kafka lag",
        "text": "Consumer lag grows.",
        "url": "u",
    }


# -- errors -------------------------------------------------------------------------------


def test_folder_problems(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not found"):
        importer(tmp_path / "missing")
    root = dataset(tmp_path / "ds")
    (root / "queries.jsonl").unlink()
    with pytest.raises(InputError, match=r"has no queries\.jsonl"):
        importer(root)
    root = dataset(tmp_path / "both")
    (root / "corpus.jsonl.gz").write_bytes(gzip.compress(b"{}\n"))
    with pytest.raises(InputError, match=r"has both corpus.jsonl and corpus.jsonl.gz"):
        importer(root)
    root = dataset(tmp_path / "noqrels", splits={})
    with pytest.raises(InputError, match=r"qrels: holds no <split>.tsv"):
        importer(root)
    root = dataset(tmp_path / "train", splits={"train": qrels([])})
    with pytest.raises(InputError, match=r"has no dev.tsv or test.tsv \(found: train\)"):
        importer(root)


def test_empty_corpus(tmp_path: Path) -> None:
    root = dataset(tmp_path / "ds", corpus="\n\n")
    assert str(fails(importer(root))).startswith(f"{root / 'corpus.jsonl'}: holds no documents; ")


def test_split_option_problems(tmp_path: Path) -> None:
    root = dataset(tmp_path / "ds", splits={"test": qrels(TEST_QRELS)})
    with pytest.raises(InputError, match=r"has no dev.tsv; pass --split with one of: test"):
        importer(root, split="dev")
    with pytest.raises(UsageError, match="--split train: ragsnap cases are split dev or test"):
        importer(root, split="train")


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("{not json", "is not valid JSON"),
        ("[1, 2]", "is not a JSON object"),
        ('{"title": "t", "text": "x"}', "`_id` is missing or not a string"),
        ('{"_id": "", "text": "x"}', "`_id` is missing or not a string"),
        ('{"_id": "d9"}', "`text` is missing, not a string"),
        ('{"_id": "d9", "text": 5}', "`text` is int, not a string"),
        ('{"_id": "d9", "text": "x", "title": ["t"]}', "`title` is list, not a string"),
        ('{"_id": "d9", "text": "x", "metadata": [1]}', "`metadata` is list, not an object"),
        (
            '{"_id": "bad\\u0000id", "text": "x"}',
            "document id 'bad\\x00id' holds U+0000, a control character, at position 4",
        ),
        ('{"_id": " lead", "text": "x"}', "document id ' lead' begins or ends with white space"),
        ('{"_id": "d2", "text": "again"}', "document id 'd2' appears twice (first at {} line 2)"),
    ],
)
def test_bad_corpus_lines(tmp_path: Path, line: str, problem: str) -> None:
    root = dataset(tmp_path / "ds", corpus=jsonl(CORPUS[:3]) + line + "\n")
    error = fails(importer(root))
    problem = problem.format(root / "corpus.jsonl")
    assert str(error).startswith(f"{root / 'corpus.jsonl'} at line 4: {problem}")
    assert error.fix  # every message ends with what to do


def test_ids_with_spaces_and_other_characters_are_read_as_they_are(tmp_path: Path) -> None:
    """The importer yields the format's ids; the writer gives them their ragsnap form."""
    corpus = jsonl(
        [
            {"_id": "Attention Is All You Need.pdf_chunk_25", "text": "Self-attention only."},
            {"_id": "-lead", "text": "x"},
            {"_id": "Ärzte #2", "text": "y"},
        ]
    )
    queries = jsonl([{"_id": "what is attention?", "text": "what does it rely on"}])
    judged = qrels([("what is attention?", "Attention Is All You Need.pdf_chunk_25", 2)])
    root = dataset(tmp_path / "ds", corpus=corpus, queries=queries, splits={"test": judged})
    docs, found = read_all(importer(root))
    assert [d.source for d in docs] == [
        "Attention Is All You Need.pdf_chunk_25",
        "-lead",
        "Ärzte #2",
    ]
    assert [(q.id, [j.target for j in q.judgments]) for q in found] == [
        ("what is attention?", ["Attention Is All You Need.pdf_chunk_25"])
    ]


def test_a_refused_id_says_where_to_fix_it(tmp_path: Path) -> None:
    root = dataset(tmp_path / "ds", corpus=jsonl([{"_id": "a\x7fb", "text": "x"}]))
    error = fails(importer(root))
    assert error.problem == "document id 'a\\x7fb' holds U+007F, a control character, at position 2"
    assert error.fix == "remove it, in the corpus and in the qrels"


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("{oops", "is not valid JSON"),
        ('{"text": "q"}', "`_id` is missing or not a string"),
        ('{"_id": "q9", "text": null}', "`text` is missing, not a string"),
        ('{"_id": "q2", "text": "twice"}', "query id 'q2' appears twice (first at line 2)"),
    ],
)
def test_bad_query_lines(tmp_path: Path, line: str, problem: str) -> None:
    root = dataset(tmp_path / "ds", queries=jsonl(QUERIES[:5]) + line + "\n")
    error = fails(importer(root))
    assert str(error).startswith(f"{root / 'queries.jsonl'} at line 6: {problem}")


def test_judged_query_with_unusable_id_or_empty_text(tmp_path: Path) -> None:
    queries = jsonl([{"_id": "q\x001", "text": "a NUL"}])
    root = dataset(tmp_path / "a", queries=queries, splits={"test": qrels([("q\x001", "d1", 1)])})
    error = fails(importer(root))
    assert str(error).startswith(
        f"{root / 'queries.jsonl'} at line 1: query id 'q\\x001' holds U+0000, a control "
        "character, at position 2; remove it, in queries.jsonl and in the qrels"
    )
    queries = jsonl([{"_id": "q1", "text": "  "}])
    root = dataset(tmp_path / "b", queries=queries, splits={"test": qrels([("q1", "d1", 1)])})
    assert str(fails(importer(root))).startswith(
        f"{root / 'queries.jsonl'} at line 1: `text` is empty"
    )
    # an unjudged query is not imported, so its id and text do not matter
    queries = jsonl([{"_id": "q1", "text": "ok"}, {"_id": "q\x002", "text": ""}])
    root = dataset(tmp_path / "c", queries=queries, splits={"test": qrels([("q1", "d1", 1)])})
    assert [q.id for q in read_all(importer(root))[1]] == ["q1"]


@pytest.mark.parametrize(
    ("row", "problem"),
    [
        ("q1\td1", "has 2 tab-separated column(s), not 3"),
        ("q1\td1\t1\textra", "has 4 tab-separated column(s), not 3"),
        ("q1 d1 1", "has 1 tab-separated column(s), not 3"),
        ("q1\td1\t1.5", "score '1.5' is not an integer"),
        ("q1\td1\thigh", "score 'high' is not an integer"),
        (
            "q1\tnope\t1",
            "the qrels name a document that is not in corpus.jsonl: 'nope'",
        ),
        ("q1\td1\t1", "query 'q1' judges document 'd1' twice (first at "),
    ],
)
def test_bad_qrels_rows(tmp_path: Path, row: str, problem: str) -> None:
    root = dataset(tmp_path / "ds", splits={"test": qrels(TEST_QRELS) + row + "\n"})
    error = fails(importer(root))
    assert str(error).startswith(f"{root / 'qrels' / 'test.tsv'} at line 6: {problem}")


def test_dangling_query_names_the_qrels_line(tmp_path: Path) -> None:
    root = dataset(tmp_path / "ds", splits={"test": qrels([*TEST_QRELS, ("q99", "d1", 1)])})
    error = fails(importer(root))
    assert str(error).startswith(
        f"{root / 'qrels' / 'test.tsv'} at line 6: the qrels name a query that is not in "
        "queries.jsonl: 'q99'"
    )


def test_query_judged_in_two_splits(tmp_path: Path) -> None:
    root = dataset(
        tmp_path / "ds", splits={"dev": qrels([("q1", "d1", 1)]), "test": qrels(TEST_QRELS)}
    )
    message = str(fails(importer(root)))
    assert message.startswith(
        f"{root / 'qrels' / 'test.tsv'} at line 2: query 'q1' is judged in two splits: dev "
        f"({root / 'qrels' / 'dev.tsv'} line 2) and test"
    )
    # one split at a time is fine
    assert [q.id for q in read_all(importer(root, split="test"))[1]] == ["q1", "q2"]


def test_truncated_gzip(tmp_path: Path) -> None:
    root = dataset(tmp_path / "ds", gz=True)
    data = (root / "corpus.jsonl.gz").read_bytes()
    (root / "corpus.jsonl.gz").write_bytes(data[: len(data) // 2])
    error = fails(importer(root))
    assert str(error).startswith(f"{root / 'corpus.jsonl.gz'}: cannot be read after line")
    assert "gzip -t" in error.fix


def test_no_usable_query_says_why(tmp_path: Path) -> None:
    root = dataset(tmp_path / "ds", splits={"test": qrels([("q1", "d1", 0)])})
    assert str(fails(importer(root))) == (
        f"{root / 'qrels' / 'test.tsv'}: leaves no query with a relevant document "
        "(4 queries with no judgment in qrels/test.tsv; 1 query with no relevant document: "
        "every judgment is grade 0); judge at least one query's document with a grade above 0"
    )


@pytest.mark.parametrize("name", ["corpus.jsonl", "corpus.jsonl.gz"])
def test_read_lines_reads_no_line_longer_than_its_limit(tmp_path: Path, name: str) -> None:
    data = b"0123456789\n" + b"x" * 11 + b"\n" + b"y" * 5
    path = tmp_path / name
    path.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    lines = read_lines(path, limit=10)
    assert next(lines) == (1, b"0123456789\n")  # ten bytes and the line break: read
    with pytest.raises(InputError, match="line 2 is more than 10 bytes long") as info:
        next(lines)
    assert info.value.path == str(path)

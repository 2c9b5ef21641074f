"""The SMART importer (ragsnap.importers.smart): records, positions, grades, splits, errors."""

from __future__ import annotations

import gzip
import math
from pathlib import Path
from typing import Any

import pytest

from ragsnap.errors import InputError, UsageError
from ragsnap.importers import (
    ImportOptions,
    SourceDoc,
    SourceJudgment,
    SourceQuery,
    hashed_split,
    make_importer,
)
from ragsnap.importers.smart import GRADES, SmartImporter
from ragsnap.importers.trec import TrecImporter

DOCS = """\
.I 1
.T
wing in a
slipstream .
.A
brenckman,m.
.B
j. ae. scs. 25, 1958, 324.
.W
wing in a slipstream .
  an experimental study of a wing
was made .

a second   paragraph .
.I 2
.T
title only .
.A
.B
.W
.I 3
.T
.A
.B
.W
.I 004
.T
shear flow .
.A
ting-yili
.B
.W
simple shear flow past a flat plate .
.A
application to turbulent separations
.W
is made .
.X
1 2 3
.I 2
.T
a second record 2 .
.W
never imported .
"""
# .I numbers with gaps: the qrels call these queries 1, 2, 3 (their positions)
QUERIES = """\
.I 001
.W
what about
wings .
.I 002
.W
shear   flow
.I 004
.W
anything with only a title
"""
QRELS = "1 1 1\r\n1 2 4\r\n1 4 -1\r\n2 4 2\r\n2 1 5\r\n\r\n3 2 3\r\n3 3 1"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def collection(
    root: Path, docs: str = DOCS, queries: str = QUERIES, qrels: str = QRELS
) -> tuple[Path, Path, Path]:
    """A SMART folder under the Cranfield names: documents, queries, qrels."""
    return (
        write(root / "cran.all.1400", docs),
        write(root / "cran.qry", queries),
        write(root / "cranqrel", qrels),
    )


def importer(source: Path, **options: Any) -> SmartImporter:
    return SmartImporter(source, ImportOptions(**options))


def read_all(imp: SmartImporter) -> tuple[list[SourceDoc], list[SourceQuery]]:
    docs = list(imp.documents())
    return docs, imp.queries(frozenset(d.source for d in docs))


def fails(imp: SmartImporter) -> InputError:
    with pytest.raises(InputError) as info:
        read_all(imp)
    return info.value


# -- documents ----------------------------------------------------------------------------


def test_fields_paragraphs_and_metadata(tmp_path: Path) -> None:
    docs_path, _, _ = collection(tmp_path)
    docs = list(importer(tmp_path).documents())
    assert [d.source for d in docs] == ["1", "2", "4"]  # .I 004 -> 4, as the qrels write it
    first = docs[0]
    assert first.title == "wing in a slipstream ."
    assert first.text == (
        "wing in a slipstream . an experimental study of a wing was made .\n\na second paragraph ."
    )
    assert first.metadata == {
        "authors": "brenckman,m.",
        "bibliography": "j. ae. scs. 25, 1958, 324.",
    }
    assert first.origin == f"{docs_path} line 1"
    assert docs[2].origin == f"{docs_path} line 26"


def test_empty_body_uses_the_title_and_an_empty_record_is_left_out(tmp_path: Path) -> None:
    collection(tmp_path)
    imp = importer(tmp_path)
    docs = {d.source: d for d in imp.documents()}
    assert (docs["2"].text, docs["2"].title, docs["2"].metadata) == (
        "title only .",
        "title only .",
        {},
    )
    assert "3" not in docs
    assert "with neither .T nor .W text, not imported: 3" in imp.skipped[1]


def test_stray_markers_continue_the_field_and_unknown_fields_are_dropped(tmp_path: Path) -> None:
    """Cranfield's document 240 has .A and .B inside its abstract; 576 and 578 a second .W."""
    collection(tmp_path)
    imp = importer(tmp_path)
    doc = next(d for d in imp.documents() if d.source == "4")
    assert doc.text == (
        "simple shear flow past a flat plate . application to turbulent separations is made ."
    )
    assert doc.metadata == {"authors": "ting-yili"}  # the stray .A did not replace it
    assert "1 2 3" not in doc.text


def test_duplicate_records_keep_the_first_and_everything_is_summarised(tmp_path: Path) -> None:
    collection(tmp_path)
    imp = importer(tmp_path)
    docs = {d.source: d for d in imp.documents()}
    assert docs["2"].text == "title only ."  # the first record 2, not "never imported ."
    assert imp.skipped == [
        "1 document with no .W text: the title is the text",
        "1 document with neither .T nor .W text, not imported: 3",
        "1 record repeating an earlier .I, not imported (the first is kept): 2 at line 40",
        "1 document with a field marker repeated inside a field, read as part of that field: "
        "4 (.A, .W)",
        "fields ragsnap does not read, dropped: .X in 1 document",
    ]


def test_documents_are_streamed_record_by_record(tmp_path: Path) -> None:
    """A record is yielded when the next .I arrives, before the rest of the file is read."""
    write(tmp_path / "docs", ".I 1\n.W\none\n.I 2\n.W\ntwo\n.I 3\nbroken\n")
    others = write(tmp_path / "q", "")
    docs = importer(tmp_path / "docs", topics=others, qrels=others).documents()
    assert [next(docs).source for _ in range(2)] == ["1", "2"]
    with pytest.raises(InputError, match=r"line 8: record \.I 3 has text before its first field"):
        next(docs)


def test_gzip_crlf_and_latin1_lines(tmp_path: Path) -> None:
    raw = b".I 1\r\n.T\r\nCaf\xe9\r\n.W\r\ncr\xe8me br\xfbl\xe9e\r\n"
    (tmp_path / "docs.gz").write_bytes(gzip.compress(raw, mtime=0))
    queries, qrels = write(tmp_path / "q", ".I 1\n.W\nq\n"), write(tmp_path / "r", "1 1 1\n")
    imp = importer(tmp_path / "docs.gz", topics=queries, qrels=qrels)
    (doc,) = imp.documents()
    assert (doc.title, doc.text) == ("Café", "crème brûlée")
    assert imp.skipped == ["2 lines of the documents not UTF-8, read as Latin-1"]


@pytest.mark.parametrize(
    ("text", "line", "problem"),
    [
        ("\n.T\ntitle\n.I 1\n.W\nx\n", 2, "text comes before the first .I line"),
        ("stray\n.I 1\n.W\nx\n", 1, "text comes before the first .I line"),
        (".I\n.W\nx\n", 1, "this .I line has no number"),
        (".I 1 2\n.W\nx\n", 1, "this .I line has more than a number: '1 2'"),
        (".I 1\n.W\nx\n.I 2\nno marker\n", 5, "record .I 2 has text before its first field marker"),
        (".I 1\n.W\nx\n.I a\x01b\n.W\ny\n", 4, "document .I 'a\\x01b' holds U+0001, a control"),
    ],
)
def test_bad_documents(tmp_path: Path, text: str, line: int, problem: str) -> None:
    docs, _, _ = collection(tmp_path, docs=text)
    with pytest.raises(InputError) as info:
        list(importer(tmp_path).documents())
    assert str(info.value).startswith(f"{docs} at line {line}: {problem}")
    assert info.value.fix


def test_no_records(tmp_path: Path) -> None:
    collection(tmp_path, docs="\n\n")
    with pytest.raises(InputError, match=r"cran\.all\.1400: holds no \.I records"):
        list(importer(tmp_path).documents())


# -- finding the files --------------------------------------------------------------------


def test_registered_under_its_format_name(tmp_path: Path) -> None:
    collection(tmp_path)
    imp = make_importer("smart", tmp_path, ImportOptions())
    assert isinstance(imp, SmartImporter)
    assert (imp.format, imp.space, imp.skipped) == ("smart", None, [])


def test_a_folder_or_the_documents_file_with_flags(tmp_path: Path) -> None:
    docs, queries, qrels = collection(tmp_path / "cran")
    other_qrels = write(tmp_path / "elsewhere.rel", "1 1 2\n")
    folder = importer(tmp_path / "cran", qrels=other_qrels)
    assert (folder.docs, folder.topics, folder.qrels) == (docs, queries, other_qrels)
    single = importer(docs, topics=queries, qrels=qrels)
    assert (single.docs, single.topics, single.qrels) == (docs, queries, qrels)
    assert read_all(single)[1] == read_all(importer(tmp_path / "cran"))[1]


def test_missing_files_and_flags(tmp_path: Path) -> None:
    docs, queries, qrels = collection(tmp_path / "cran")
    with pytest.raises(InputError, match="missing: not found; pass the folder holding"):
        importer(tmp_path / "missing")
    with pytest.raises(UsageError, match="smart needs --topics FILE"):
        importer(docs, qrels=qrels)
    with pytest.raises(UsageError, match="smart needs --qrels FILE"):
        importer(docs, topics=queries)
    with pytest.raises(InputError, match=r"nope: not found; pass --qrels with an existing file"):
        importer(tmp_path / "cran", qrels=tmp_path / "nope")
    qrels.unlink()
    with pytest.raises(InputError) as info:
        importer(tmp_path / "cran")
    assert str(info.value) == (
        f"{tmp_path / 'cran'}: has no cranqrel; put the collection's cranqrel there, or pass "
        "--qrels FILE (or pass the documents file as SOURCE with --topics and --qrels)"
    )


# -- queries and judgments ----------------------------------------------------------------


def test_queries_by_position_with_mapped_grades(tmp_path: Path) -> None:
    _, queries, _ = collection(tmp_path)
    imp = importer(tmp_path)
    _, found = read_all(imp)
    assert found == [
        SourceQuery(
            id="q001",
            text="what about wings .",
            judgments=(SourceJudgment("1", 3), SourceJudgment("2", 1), SourceJudgment("4", 0)),
            tags=("smart-I:001",),
            origin=f"{queries} line 1",
        ),
        SourceQuery(
            id="q002",
            text="shear flow",
            judgments=(SourceJudgment("4", 2), SourceJudgment("1", 0)),
            tags=("smart-I:002",),
            origin=f"{queries} line 5",
        ),
        SourceQuery(  # the third record, .I 004: the qrels' query 3
            id="q003",
            text="anything with only a title",
            judgments=(SourceJudgment("2", 1),),
            tags=("smart-I:004",),
            origin=f"{queries} line 8",
        ),
    ]
    assert imp.skipped[-3:] == [
        "1 qrels line of SMART grade 5 (not relevant) kept as grade 0",
        "1 qrels line of SMART grade -1 (not relevant) kept as grade 0",
        "1 qrels line judging a document that was not imported, dropped: q003 -> 3",
    ]


def test_grade_mapping_is_the_documented_default_and_configurable(tmp_path: Path) -> None:
    assert dict(GRADES) == {1: 3, 2: 2, 3: 1, 4: 1, 5: 0, -1: 0}
    collection(tmp_path, qrels="1 1 1\n1 2 2\n1 4 3\n2 4 4\n2 1 5\n3 2 -1\n")
    _, found = read_all(importer(tmp_path))
    assert [[(j.target, j.grade) for j in q.judgments] for q in found] == [
        [("1", 3), ("2", 2), ("4", 1)],
        [("4", 1), ("1", 0)],
    ]  # q003's only judgment is -1: not imported
    binary = SmartImporter(tmp_path, ImportOptions(), grades={1: 1, 2: 1, 3: 0, 4: 0, 5: 0, -1: 0})
    _, found = read_all(binary)
    assert [[(j.target, j.grade) for j in q.judgments] for q in found] == [
        [("1", 1), ("2", 1), ("4", 0)]
    ]
    with pytest.raises(UsageError, match=r"grades 0\.\.3"):
        SmartImporter(tmp_path, ImportOptions(), grades={1: 4})


def test_many_queries_widen_the_case_id(tmp_path: Path) -> None:
    queries = "".join(f".I {n}\n.W\nquery {n}\n" for n in range(1, 1001))
    collection(tmp_path, queries=queries, qrels="1000 1 1\n")
    _, found = read_all(importer(tmp_path))
    assert [(q.id, q.tags) for q in found] == [("q1000", ("smart-I:1000",))]


@pytest.mark.parametrize(
    ("row", "problem"),
    [
        ("1 1", "has 2 column(s), not 3"),
        ("1 0 1 1", "has 4 column(s), not 3"),
        ("one 1 1", "query 'one' is not an integer"),
        ("1 1 high", "grade 'high' is not an integer"),
        ("1 1 7", "grade 7 is not on the SMART scale (1, 2, 3, 4, 5, -1)"),
        ("1 1 0", "grade 0 is not on the SMART scale (1, 2, 3, 4, 5, -1)"),
        ("4 1 1", "the qrels name query 4, but "),
        ("0 1 1", "the qrels name query 0, but "),
        ("1 99 1", "the qrels name a document that is not in "),
        ("1 001 2", "query 'q001' judges document '1' twice (first at "),
    ],
)
def test_bad_qrels_lines(tmp_path: Path, row: str, problem: str) -> None:
    docs, queries, qrels = collection(tmp_path, qrels=QRELS + "\n" + row + "\n")
    error = fails(importer(tmp_path))
    assert str(error).startswith(f"{qrels} at line 9: {problem}")
    assert error.fix
    if "query 4" in problem:
        assert f"{queries} holds 3 queries (numbered by position, from 1)" in str(error)
        assert error.fix == "add the query, or remove its lines from the qrels"
    if "document that" in problem:
        assert str(error) == (
            f"{qrels} at line 9: the qrels name a document that is not in {docs}: '99'; "
            "import the documents the qrels name, or remove the line"
        )


@pytest.mark.parametrize(
    ("queries", "line", "problem"),
    [
        (".I 1\n.W\nq\n.I 2\n.W\n\n", 4, "query .I 2 has no text"),
        ("q\n", 1, "text comes before the first .I line"),
    ],
)
def test_bad_queries(tmp_path: Path, queries: str, line: int, problem: str) -> None:
    _, queries_path, _ = collection(tmp_path, queries=queries)
    assert str(fails(importer(tmp_path))).startswith(f"{queries_path} at line {line}: {problem}")


def test_a_title_is_the_query_when_there_is_no_w(tmp_path: Path) -> None:
    collection(tmp_path, queries=".I 1\n.T\nwing\nlift\n", qrels="1 1 1\n")
    assert [q.text for q in read_all(importer(tmp_path))[1]] == ["wing lift"]


def test_no_usable_query_says_why(tmp_path: Path) -> None:
    _, _, qrels = collection(tmp_path, qrels="1 1 -1\n")
    assert str(fails(importer(tmp_path))) == (
        f"{qrels}: leaves no query with a relevant document (2 queries with no judgment in "
        f"{qrels}; 1 query with no relevant document: every judgment is grade 0); "
        "judge at least one query's document with a grade above 0"
    )


# -- splits -------------------------------------------------------------------------------


def test_every_case_gets_split_or_test(tmp_path: Path) -> None:
    collection(tmp_path)
    assert {q.split for q in read_all(importer(tmp_path))[1]} == {"test"}
    assert {q.split for q in read_all(importer(tmp_path, split="dev"))[1]} == {"dev"}


def test_dev_fraction_is_a_stable_hash_of_the_case_id() -> None:
    # sha256("q001")[:8] / 2**64 = 0.6565, q005 0.2698, q006 0.1796 ...: pinned
    assert [hashed_split(f"q{n:03d}", 0.3) for n in range(1, 11)] == [
        "test",
        "test",
        "test",
        "test",
        "dev",
        "dev",
        "dev",
        "test",
        "dev",
        "dev",
    ]
    ids = [f"case-{n}" for n in range(4000)]
    for fraction in (0.1, 0.3, 0.5):
        dev = [i for i in ids if hashed_split(i, fraction) == "dev"]
        assert abs(len(dev) / len(ids) - fraction) < 0.03
    low = {i for i in ids if hashed_split(i, 0.2) == "dev"}
    high = {i for i in ids if hashed_split(i, 0.6) == "dev"}
    assert low < high  # a larger fraction only adds dev cases


def test_dev_fraction_in_smart_and_trec(tmp_path: Path) -> None:
    collection(tmp_path / "smart")
    found = read_all(importer(tmp_path / "smart", dev_fraction=0.3))[1]
    assert [(q.id, q.split) for q in found] == [
        ("q001", "test"),
        ("q002", "test"),
        ("q003", "test"),
    ]
    found = read_all(importer(tmp_path / "smart", dev_fraction=0.95))[1]
    assert [q.split for q in found] == [hashed_split(q.id, 0.95) for q in found] == ["dev"] * 3
    docs = write(tmp_path / "trec" / "d.sgml", "<DOC><DOCNO>d1</DOCNO><TEXT>t</TEXT></DOC>\n")
    topics = write(tmp_path / "trec" / "t.txt", "q005 one\nq001 two\n")
    qrels = write(tmp_path / "trec" / "r.txt", "q005 0 d1 1\nq001 0 d1 1\n")
    trec = TrecImporter(docs, ImportOptions(topics=topics, qrels=qrels, dev_fraction=0.3))
    docs_read = list(trec.documents())
    found = trec.queries(frozenset(d.source for d in docs_read))
    assert [(q.id, q.split) for q in found] == [("q005", "dev"), ("q001", "test")]


@pytest.mark.parametrize("fraction", [0.0, 1.0, -0.1, 1.5, math.nan, math.inf])
def test_dev_fraction_bounds(fraction: float) -> None:
    with pytest.raises(UsageError, match=r"--dev-fraction .*: give a fraction between 0 and 1"):
        ImportOptions(dev_fraction=fraction)


def test_dev_fraction_and_split_are_one_choice(tmp_path: Path) -> None:
    collection(tmp_path)
    with pytest.raises(UsageError, match="smart: --split dev and --dev-fraction both choose"):
        importer(tmp_path, split="dev", dev_fraction=0.3)
    with pytest.raises(UsageError, match="--split train: ragsnap cases are split dev or test"):
        importer(tmp_path, split="train")

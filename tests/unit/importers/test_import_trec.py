"""The TREC importer (ragsnap.importers.trec): SGML documents, topics, qrels, errors."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import pytest

from ragsnap.errors import InputError, UsageError
from ragsnap.importers import ImportOptions, SourceDoc, SourceJudgment, SourceQuery, make_importer
from ragsnap.importers.trec import TrecImporter

FT = """\
<DOC>
<DOCNO> FT911-1 </DOCNO>
<PROFILE>_AN-BEOA7AAIFT</PROFILE>
<HEADLINE>
FT  14 MAY 91 / Jubilee of a jet
</HEADLINE>
<TEXT>
The Comet jet airliner first
flew fifty years ago.

It was &amp; is famous.
</TEXT>
</DOC>
<DOC><DOCNO>FT911-2</DOCNO><TEXT>Interest rates rose again.</TEXT></DOC>
<DOC>
<DOCNO>FT911-3</DOCNO>
<!-- a comment -->
<TEXT>
Bond markets x < y and AT&T.
</TEXT>
</DOC>
"""
WSJ = """\
<DOC>
<DOCNO> WSJ870324-0001 </DOCNO>
<HL> Markets: Stocks Fall </HL>
<LP> Stocks fell sharply. </LP>
<TEXT> Bond yields rose. </TEXT>
</DOC>
"""
TOPICS = """\
<top>
<num> Number: 301
<title> Comet jet airliner

<desc> Description:
Find documents about the Comet.

<narr> Narrative:
A relevant document mentions the Comet.
</top>

<top>
<num> Number: 302
<title> Topic: interest
rates

<desc> Description:
Rates.
</top>
<top>
<num> Number: 303
<title> unjudged topic
</top>
<top>
<num> Number: 304
<title> only grade zero
</top>
"""
QRELS = """\
301 0 FT911-1 2
301 0 FT911-2 0
302 0 FT911-2 1
302 0 WSJ870324-0001 2
304 0 FT911-3 0
"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def collection(root: Path, topics: str = TOPICS, qrels: str = QRELS) -> tuple[Path, Path, Path]:
    """Documents folder (FT plain, WSJ gzipped in a subfolder), topics and qrels files."""
    docs = root / "docs"
    write(docs / "ft" / "ft911.sgml", FT)
    (docs / "wsj").mkdir(parents=True)
    (docs / "wsj" / "wsj87.gz").write_bytes(gzip.compress(WSJ.encode(), mtime=0))
    return docs, write(root / "topics.txt", topics), write(root / "qrels.txt", qrels)


def importer(docs: Path, topics: Path | None, qrels: Path | None, **options: Any) -> TrecImporter:
    return TrecImporter(docs, ImportOptions(topics=topics, qrels=qrels, **options))


def read_all(imp: TrecImporter) -> tuple[list[SourceDoc], list[SourceQuery]]:
    docs = list(imp.documents())
    return docs, imp.queries(frozenset(d.source for d in docs))


def fails(imp: TrecImporter) -> InputError:
    with pytest.raises(InputError) as info:
        read_all(imp)
    return info.value


def only_docs(tmp_path: Path, text: str, name: str = "docs.sgml") -> TrecImporter:
    """An importer of one document file (topics and qrels that are never read)."""
    path = write(tmp_path / name, text)
    return importer(path, write(tmp_path / "t.txt", "1 q\n"), write(tmp_path / "q.txt", ""))


# -- documents ----------------------------------------------------------------------------


def test_several_documents_per_file_fields_in_order(tmp_path: Path) -> None:
    docs, _ = read_all(importer(*collection(tmp_path)))
    assert [d.source for d in docs] == ["FT911-1", "FT911-2", "FT911-3", "WSJ870324-0001"]
    first = docs[0]
    assert first.title == "FT 14 MAY 91 / Jubilee of a jet"
    assert first.text == (
        "_AN-BEOA7AAIFT\n\nFT 14 MAY 91 / Jubilee of a jet\n\n"
        "The Comet jet airliner first flew fifty years ago.\n\nIt was & is famous."
    )
    assert first.origin == f"{tmp_path / 'docs' / 'ft' / 'ft911.sgml'} line 1"
    assert (docs[1].text, docs[1].title) == ("Interest rates rose again.", None)
    assert docs[1].origin.endswith("ft911.sgml line 14")
    assert docs[2].text == "Bond markets x < y and AT&T."  # comments dropped, stray < kept
    wsj = docs[3]
    assert wsj.title == "Markets: Stocks Fall"  # the HL field
    assert wsj.text == "Markets: Stocks Fall\n\nStocks fell sharply.\n\nBond yields rose."
    assert wsj.origin == f"{tmp_path / 'docs' / 'wsj' / 'wsj87.gz'} line 1"


def test_registered_under_its_format_name(tmp_path: Path) -> None:
    docs, topics, qrels = collection(tmp_path)
    imp = make_importer("trec", docs, ImportOptions(topics=topics, qrels=qrels))
    assert isinstance(imp, TrecImporter)
    assert (imp.format, imp.space, imp.skipped) == ("trec", None, [])


@pytest.mark.parametrize("tag", ["HEADLINE", "TITLE", "HEAD", "headline"])
def test_title_fields(tmp_path: Path, tag: str) -> None:
    text = f"<DOC>\n<DOCNO>d1</DOCNO>\n<{tag}> The <B>bold</B> title </{tag}>\n<TEXT>t</TEXT></DOC>"
    (doc,) = only_docs(tmp_path, text).documents()
    assert doc.title == "The bold title"
    assert doc.text == "The bold title\n\nt"


def test_paragraph_tags_and_inline_markup(tmp_path: Path) -> None:
    text = (
        "<DOC>\n<DOCNO>LA010189-0001</DOCNO>\n<HEADLINE>\n<P>\nHead <I>line</I>\n</P>\n"
        "</HEADLINE>\n<TEXT>\n<P>\nFirst paragraph,\nwrapped.\n</P>\n<P>\nSecond one "
        "with <F P=105>inline</F> markup.\n</P>\n</TEXT>\n</DOC>\n"
    )
    (doc,) = only_docs(tmp_path, text).documents()
    assert doc.title == "Head line"
    assert doc.text == ("Head line\n\nFirst paragraph, wrapped.\n\nSecond one with inline markup.")


def test_one_file_and_a_sorted_recursive_folder(tmp_path: Path) -> None:
    docs, topics, qrels = collection(tmp_path)
    write(docs / "a-first.txt", "<DOC><DOCNO>A1</DOCNO><TEXT>a</TEXT></DOC>\n")
    write(docs / ".hidden", "<DOC><DOCNO>H1</DOCNO></DOC>\n")
    write(docs / ".git" / "x", "<DOC><DOCNO>H2</DOCNO></DOC>\n")
    write(docs / "README", "No documents here.\n")
    imp = importer(docs, topics, qrels)
    found = [d.source for d in imp.documents()]
    assert found == ["A1", "FT911-1", "FT911-2", "FT911-3", "WSJ870324-0001"]
    assert imp.skipped == [f"1 file without <DOC>: {docs / 'README'}"]
    single = importer(docs / "wsj" / "wsj87.gz", topics, qrels)
    assert [d.source for d in single.documents()] == ["WSJ870324-0001"]


def test_documents_are_streamed(tmp_path: Path) -> None:
    """Each document is yielded when its </DOC> arrives, before the rest is read."""
    docs = only_docs(tmp_path, FT + "<DOC>\n<TEXT>no number</TEXT>\n</DOC>\n").documents()
    assert [next(docs).source for _ in range(3)] == ["FT911-1", "FT911-2", "FT911-3"]
    with pytest.raises(InputError, match="line 22: the document opening here has no <DOCNO>"):
        next(docs)


def test_documents_larger_than_a_block_and_line_numbers_after_them(tmp_path: Path) -> None:
    """A file is scanned in 1 MiB blocks: documents span them, line numbers stay exact."""
    body = "".join(
        f"line {i} of a long document text, padded to be long enough\n" for i in range(40_000)
    )
    path = tmp_path / "big.sgml"
    path.write_bytes(
        b"<DOC>\n<DOCNO>BIG-1</DOCNO>\n<TEXT>\n"
        + body.encode()
        + b"</TEXT>\n</DOC>\n<DOC><DOCNO>SMALL-2</DOCNO><TEXT>Caf\xe9</TEXT></DOC>\n"
        + b"<DOC>\n<TEXT>no number</TEXT>\n</DOC>\n"
    )
    assert len(body) > 2 * 1024 * 1024
    imp = importer(path, write(tmp_path / "t.txt", "1 q\n"), write(tmp_path / "q.txt", ""))
    docs = imp.documents()
    big = next(docs)
    assert big.source == "BIG-1"
    assert big.text == " ".join(body.split())
    small = next(docs)
    assert (small.source, small.text, small.origin) == ("SMALL-2", "Café", f"{path} line 40006")
    with pytest.raises(InputError, match="at line 40007: the document opening here has no <DOCNO>"):
        next(docs)


def test_latin1_lines_are_read_and_counted(tmp_path: Path) -> None:
    path = tmp_path / "latin.sgml"
    path.write_bytes(b"<DOC>\n<DOCNO>L1</DOCNO>\n<TEXT>Caf\xe9 cr\xe8me</TEXT>\n</DOC>\n")
    imp = importer(path, write(tmp_path / "t.txt", "1 q\n"), write(tmp_path / "q.txt", ""))
    (doc,) = imp.documents()
    assert doc.text == "Café crème"
    assert imp.skipped == ["1 document line not UTF-8, read as Latin-1"]


@pytest.mark.parametrize(
    ("text", "line", "problem"),
    [
        ("<DOC>\n<TEXT>x</TEXT>\n</DOC>\n", 1, "the document opening here has no <DOCNO>"),
        (
            "<DOC><DOCNO>a</DOCNO><DOCNO>b</DOCNO></DOC>\n",
            1,
            "the document opening here has more than one <DOCNO>",
        ),
        ("\n<DOC><DOCNO>  </DOCNO></DOC>\n", 2, "the document opening here has an empty <DOCNO>"),
        ("<DOC>\n<DOCNO>a</DOCNO>\n<TEXT>x</TEXT>\n", 1, "this <DOC> is never closed"),
        (
            "<DOC>\n<DOCNO>a</DOCNO>\n<DOC>\n<DOCNO>b</DOCNO>\n</DOC>\n",
            3,
            "the <DOC> of line 1 is never closed",
        ),
        ("<DOC><DOCNO>a</DOCNO></DOC>\n</DOC>\n", 2, "</DOC> closes a document that was never"),
        ("<DOC><DOCNO>a\x00b</DOCNO></DOC>\n", 1, "DOCNO 'a\\x00b' holds U+0000, a control"),
        (
            "<DOC><DOCNO>a</DOCNO></DOC>\n\n<DOC>\n<DOCNO> a </DOCNO></DOC>\n",
            3,
            "DOCNO 'a' appears twice (first at ",
        ),
    ],
)
def test_bad_documents(tmp_path: Path, text: str, line: int, problem: str) -> None:
    with pytest.raises(InputError) as info:
        list(only_docs(tmp_path, text).documents())
    assert str(info.value).startswith(f"{tmp_path / 'docs.sgml'} at line {line}: {problem}")
    assert info.value.fix


def test_duplicate_docno_across_files_names_both(tmp_path: Path) -> None:
    docs, topics, qrels = collection(tmp_path)
    write(docs / "zz.sgml", "<DOC>\n<DOCNO>FT911-2</DOCNO>\n</DOC>\n")
    with pytest.raises(InputError) as info:
        list(importer(docs, topics, qrels).documents())
    assert str(info.value) == (
        f"{docs / 'zz.sgml'} at line 1: DOCNO 'FT911-2' appears twice (first at "
        f"{docs / 'ft' / 'ft911.sgml'} line 14); give every document its own DOCNO"
    )


def test_collection_problems(tmp_path: Path) -> None:
    topics, qrels = write(tmp_path / "t.txt", "1 q\n"), write(tmp_path / "q.txt", "")
    with pytest.raises(InputError, match="missing: not found"):
        importer(tmp_path / "missing", topics, qrels)
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="empty: holds no files"):
        list(importer(tmp_path / "empty", topics, qrels).documents())
    write(tmp_path / "nodocs" / "a.txt", "plain text\n")
    with pytest.raises(InputError, match="nodocs: holds no <DOC> documents"):
        list(importer(tmp_path / "nodocs", topics, qrels).documents())
    write(tmp_path / "z" / "fr88.Z", "compressed")
    with pytest.raises(InputError, match=r"fr88\.Z: is compressed with `compress`"):
        list(importer(tmp_path / "z", topics, qrels).documents())
    (tmp_path / "bad.gz").write_bytes(b"not gzip at all")
    with pytest.raises(InputError, match=r"bad.gz: cannot be read after line 0"):
        list(importer(tmp_path / "bad.gz", topics, qrels).documents())


def test_options_are_checked_first(tmp_path: Path) -> None:
    docs, topics, qrels = collection(tmp_path)
    with pytest.raises(UsageError, match="trec needs --topics FILE"):
        importer(docs, None, qrels)
    with pytest.raises(UsageError, match="trec needs --qrels FILE"):
        importer(docs, topics, None)
    with pytest.raises(UsageError, match="--split train: ragsnap cases are split dev or test"):
        importer(docs, topics, qrels, split="train")
    with pytest.raises(InputError, match=r"nope\.txt: not found; pass --topics"):
        importer(docs, tmp_path / "nope.txt", qrels)
    with pytest.raises(InputError, match=r"nope\.txt: not found; pass --qrels"):
        importer(docs, topics, tmp_path / "nope.txt")


# -- queries ------------------------------------------------------------------------------


def test_classic_topics_with_graded_qrels(tmp_path: Path) -> None:
    docs, topics, qrels = collection(tmp_path)
    imp = importer(docs, topics, qrels)
    _, queries = read_all(imp)
    assert queries == [
        SourceQuery(
            id="301",
            text="Comet jet airliner",
            judgments=(SourceJudgment("FT911-1", 2), SourceJudgment("FT911-2", 0)),
            origin=f"{topics} line 1",
        ),
        SourceQuery(
            id="302",
            text="interest rates",
            judgments=(SourceJudgment("FT911-2", 1), SourceJudgment("WSJ870324-0001", 2)),
            origin=f"{topics} line 12",
        ),
    ]
    assert all((q.split, q.language, q.category) == ("test", "en", "imported") for q in queries)
    assert imp.skipped == [
        f"1 query with no judgment in {tmp_path / 'qrels.txt'} (not imported)",
        "1 query with no relevant document: every judgment is grade 0 (not imported)",
    ]


def test_plain_topics_one_query_a_line(tmp_path: Path) -> None:
    topics = "301 comet  jet airliner\n\n302\tinterest rates\t\n"
    docs, topics_path, qrels = collection(tmp_path, topics, QRELS.replace("304 0 FT911-3 0\n", ""))
    imp = importer(docs, topics_path, qrels, split="dev", language="fr", category="news")
    _, queries = read_all(imp)
    assert [(q.id, q.text, q.split, q.language, q.category) for q in queries] == [
        ("301", "comet jet airliner", "dev", "fr", "news"),
        ("302", "interest rates", "dev", "fr", "news"),
    ]
    assert imp.skipped == []


def test_topics_with_closing_tags(tmp_path: Path) -> None:
    topics = "<top><num>301</num><title>comet</title><desc>x</desc></top>\n"
    docs, topics_path, qrels = collection(tmp_path, topics, "301 0 FT911-1 1\n")
    assert [(q.id, q.text) for q in read_all(importer(docs, topics_path, qrels))[1]] == [
        ("301", "comet")
    ]


def test_grades_clipped_negative_and_counted(tmp_path: Path) -> None:
    qrels = "301 0 FT911-1 4\n301 Q0 FT911-2 -1\n302 0 FT911-2 +2\n302 0 FT911-3 9\n"
    imp = importer(*collection(tmp_path, qrels=qrels))
    _, queries = read_all(imp)
    assert [[(j.target, j.grade) for j in q.judgments] for q in queries] == [
        [("FT911-1", 3), ("FT911-2", 0)],
        [("FT911-2", 2), ("FT911-3", 3)],
    ]
    assert imp.skipped == [
        "2 qrels grades above 3 clipped to 3",
        "1 negative qrels grade read as 0",
        f"2 queries with no judgment in {tmp_path / 'qrels.txt'} (not imported)",
    ]


@pytest.mark.parametrize(
    ("row", "problem"),
    [
        ("301 0 FT911-1", "has 3 column(s), not 4"),
        ("301 0 FT911-1 1 extra", "has 5 column(s), not 4"),
        ("301 0 FT911-1 high", "grade 'high' is not an integer"),
        ("301 0 FT911-1 1.0", "grade '1.0' is not an integer"),
        ("301 0 FT999-9 1", "the qrels name a document that is not in "),
        ("399 0 FT911-1 1", "the qrels name a query that is not in "),
        ("301 0 FT911-1 1", "query '301' judges document 'FT911-1' twice (first at "),
    ],
)
def test_bad_qrels_lines(tmp_path: Path, row: str, problem: str) -> None:
    docs, topics, qrels = collection(tmp_path, qrels=QRELS + "\n" + row + "\n")
    error = fails(importer(docs, topics, qrels))
    assert str(error).startswith(f"{qrels} at line 7: {problem}")
    if "document that" in problem:
        assert "'FT999-9'" in str(error)
    if "query that" in problem:
        assert f"{topics}: '399'" in str(error)


@pytest.mark.parametrize(
    ("topics", "line", "problem"),
    [
        ("<top>\n<num> Number: 1\n</top>\n", 1, "the topic opening here has no <title>"),
        ("\n<top>\n<title> t\n</top>\n", 2, "the topic opening here has no <num>"),
        ("<top>\n<num> 1\n<title> a\n", 1, "this <top> is never closed"),
        ("<top><num>1<title>a</top>\n<top>\n<num>2<title>b\n<top><num>3<title>c</top>", 2, "this"),
        (
            "<top><num>1<title>a</top>\n<top><num>1<title>b</top>\n",
            2,
            "query id '1' appears twice (first at line 1)",
        ),
        ("1 a\n2 b\n1 c\n", 3, "query id '1' appears twice (first at line 1)"),
        ("1 a\n2\n", 2, "query '2' has no text"),
        ("q\x7f1 a\n", 1, "query id 'q\\x7f1' holds U+007F, a control character"),
        (
            '<topics>\n<topic number="1"><query>a</query></topic>\n</topics>\n',
            1,
            "is markup without classic <top> topics",
        ),
    ],
)
def test_bad_topics(tmp_path: Path, topics: str, line: int, problem: str) -> None:
    docs, topics_path, qrels = collection(tmp_path, topics, qrels="")
    error = fails(importer(docs, topics_path, qrels))
    assert str(error).startswith(f"{topics_path} at line {line}: {problem}")


def test_empty_topics(tmp_path: Path) -> None:
    docs, topics, qrels = collection(tmp_path, "\n\n", qrels="")
    assert str(fails(importer(docs, topics, qrels))).startswith(f"{topics}: holds no topics")


def test_no_usable_query_says_why(tmp_path: Path) -> None:
    docs, topics, qrels = collection(tmp_path, qrels="301 0 FT911-1 0\n")
    assert str(fails(importer(docs, topics, qrels))) == (
        f"{qrels}: leaves no query with a relevant document (3 queries with no judgment in "
        f"{qrels}; 1 query with no relevant document: every judgment is grade 0); "
        "judge at least one query's document with a grade above 0"
    )

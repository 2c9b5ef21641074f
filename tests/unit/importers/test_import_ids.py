"""ragsnap.importers.ids: which ids are kept, refused or mapped, and that no two share one."""

from __future__ import annotations

import random
from pathlib import Path

import orjson
import pytest

from ragsnap.errors import InputError
from ragsnap.importers import ids
from ragsnap.importers.ids import (
    CASE,
    DOC_ID,
    MAX_ID,
    SOURCE,
    IdMap,
    id_problem,
    ragsnap_id,
    read_id_map,
)
from ragsnap.importers.idset import IdSet
from ragsnap.io.schema import validate
from ragsnap.ir.trec import format_qrels, format_run
from ragsnap.kb.corpus import parse_jsonl_doc

#: characters of real ids: ASCII, spaces of several kinds, accents (composed and not),
#: other scripts, emoji with a zero-width joiner, punctuation ragsnap ids cannot hold
CHARACTERS = [chr(c) for c in range(32, 127)] + list(
    "\u00a0\u3000\u2009éÉøß\u0301\u0308论文報告Приветمرحبا😀\u200d#?*%&()[]{}<>|\\"
)


def importable_ids(
    count: int, seed: int, alphabet: list[str] = CHARACTERS, longest: int = 260
) -> list[str]:
    """``count`` random importable ids (no refused character, no space at either end)."""
    rng = random.Random(seed)
    found = []
    while len(found) < count:
        value = "".join(rng.choices(alphabet, k=rng.randint(1, longest)))
        if id_problem(value) is None:
            found.append(value)
    return found


def usable_downstream(source: str, case_id: str) -> None:
    """``source`` is a seed source and ``case_id`` a case id: the rules that use them agree."""
    parse_jsonl_doc(Path("corpus.jsonl"), 1, orjson.dumps({"source": source, "text": "t"}))
    case = {"id": case_id, "query": "q", "language": "en", "category": "c", "split": "test"}
    validate({"schemaVersion": 1, "cases": [case]}, "golden-cases", Path("g.json"), "cases")
    format_run({case_id: [source]})
    format_qrels({case_id: {source: 1}})


# -- the rule ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        ("d1", SOURCE),
        ("doc/4:x", SOURCE),
        ("FT911-3", SOURCE),
        ("s" * 200, SOURCE),
        ("q-1.a_b", CASE),
        ("c" * 128, CASE),
        ("doc-pool", DOC_ID),
    ],
)
def test_usable_ids_are_kept_byte_for_byte(value: str, kind: ids.IdKind) -> None:
    assert id_problem(value) is None
    assert ragsnap_id(value, kind) is value


@pytest.mark.parametrize(
    ("value", "problem", "fix"),
    [
        ("", "is empty", "give it an id"),
        (" d1", "begins or ends with white space", "remove the white space around it"),
        ("d1\u3000", "begins or ends with white space", "remove the white space around it"),
        ("a\x00b", "holds U+0000, a control character, at position 2", "remove it"),
        ("ab\tc", "holds U+0009, a control character, at position 3", "remove it"),
        ("a\nb", "holds U+000A, a control character, at position 2", "remove it"),
        ("a\x7fb", "holds U+007F, a control character, at position 2", "remove it"),
        ("a\x85b", "holds U+0085, a control character, at position 2", "remove it"),
        ("é\u2028b", "holds U+2028, a line separator, at position 2", "remove it"),
        ("a\u2029b", "holds U+2029, a paragraph separator, at position 2", "remove it"),
        ("a\ud800b", "holds U+D800, a lone surrogate, at position 2", "remove it"),
        ("x" * (MAX_ID + 1), "is 1,001 characters long (at most 1,000)", "shorten it"),
    ],
)
def test_ids_no_file_could_hold_are_refused_with_the_fix(
    value: str, problem: str, fix: str
) -> None:
    assert id_problem(value) == (problem, fix)


@pytest.mark.parametrize(
    "value", ["a b", "Attention Is All You Need.pdf_chunk_25", "Ärzte #2", "论文", "-x", "x" * 1000]
)
def test_printable_ids_are_importable(value: str) -> None:
    assert id_problem(value) is None


# -- the ragsnap form ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "kind", "form"),
    [
        (
            "Attention Is All You Need.pdf_chunk_25",
            SOURCE,
            "Attention_Is_All_You_Need.pdf_chunk_25--654b7f6fbffb",
        ),
        ("what is attention?", CASE, "what_is_attention--e02ec70a6f92"),
        ("Ärzte Handbuch", SOURCE, "Arzte_Handbuch--7a863f40fa0d"),  # accents dropped
        ("论文 1.pdf", SOURCE, "1.pdf--3944d2811614"),  # other scripts: the hash tells them apart
        ("论文", SOURCE, "id--" + ragsnap_id("论文", SOURCE)[-12:]),
        ("_intro", SOURCE, "intro--6343c320fcdf"),  # starts with a letter or digit
        ("a/b c", SOURCE, "a/b_c--0af99a609169"),  # / is kept in a source ...
        ("a/b c", CASE, "a_b_c--0af99a609169"),  # ... not in a case id
    ],
)
def test_other_ids_get_a_readable_form_that_ends_in_their_hash(
    value: str, kind: ids.IdKind, form: str
) -> None:
    """The hashes are pinned: a form must be the same on every machine and in every release."""
    assert ragsnap_id(value, kind) == form


def test_a_long_id_is_cut_to_the_kinds_length_and_keeps_its_hash() -> None:
    long = "word " * 100
    source, case = ragsnap_id(long.strip(), SOURCE), ragsnap_id(long.strip(), CASE)
    assert len(source) == 200 and source.startswith("word_word_") and source[-14:-12] == "--"
    assert len(case) <= 128 and case[-12:] == source[-12:]
    assert ragsnap_id("y" * 201, SOURCE) == "y" * 186 + "--" + source_hash("y" * 201)


def source_hash(value: str) -> str:
    import hashlib

    return hashlib.sha256(value.encode()).hexdigest()[:12]


def test_every_importable_id_becomes_an_id_every_later_step_accepts() -> None:
    for value in importable_ids(500, seed=1):
        source, case_id = ragsnap_id(value, SOURCE), ragsnap_id(value, CASE)
        usable_downstream(source, case_id)
        assert ragsnap_id(source, SOURCE) == source  # a form is kept as it is: stable
        assert ragsnap_id(case_id, CASE) == case_id


@pytest.mark.parametrize("kind", [SOURCE, CASE])
def test_two_different_ids_never_get_one_form(kind: ids.IdKind) -> None:
    """Ids from a tiny alphabet share their slugs all the time; the hash keeps them apart
    (é and e + U+0301 are one letter to NFKD, two ids to ragsnap)."""
    alike = importable_ids(
        10_000, seed=2, alphabet=["a", "b", " ", "_", "é", "e\u0301", "?"], longest=12
    )
    mixed = importable_ids(1_000, seed=3)
    values = sorted(set(alike + mixed))
    forms = {ragsnap_id(value, kind) for value in values}
    assert len(forms) == len(values)


def test_ids_that_read_alike_keep_different_forms() -> None:
    alike = ["a b", "a  b", "a\u00a0b", "a\u3000b", "a?b", "a#b", "a b#", "a/b", "a:b", "a_b"]
    for kind in (SOURCE, CASE):
        forms = [ragsnap_id(value, kind) for value in alike]
        assert len(set(forms)) == len(alike), forms
        assert all(f.startswith("a_b--") for f in forms[:6])


# -- IdMap: one import's ids ---------------------------------------------------------------


def mapping(tmp_path: Path, *sources: str) -> tuple[IdMap, IdSet]:
    """An IdMap over ``sources`` already read (each at ``f line N``)."""
    read = IdSet()
    for n, value in enumerate(sources, 1):
        read.add(value, f"f line {n}")
    return IdMap(tmp_path / "ids.tsv", read), read


def add(id_map: IdMap, read: IdSet, value: str, origin: str) -> str:
    """Read one more document, as the writer does: into the set, then mapped."""
    read.add(value, origin)
    return id_map.source(value, origin)


def test_a_form_equal_to_an_id_read_before_is_refused(tmp_path: Path) -> None:
    form = ragsnap_id("a b", SOURCE)
    id_map, read = mapping(tmp_path, form)
    with id_map, pytest.raises(InputError) as info:
        add(id_map, read, "a b", "f line 2")
    assert str(info.value) == (
        f"f line 2: document id 'a b' and the one at f line 1 would both be {form!r} in "
        "ragsnap; rename one of them, in every file that names it"
    )


def test_an_id_equal_to_a_form_read_before_is_refused(tmp_path: Path) -> None:
    form = ragsnap_id("a b", SOURCE)
    id_map, read = mapping(tmp_path)
    with id_map, pytest.raises(InputError) as info:
        assert add(id_map, read, "a b", "f line 1") == form
        add(id_map, read, form, "f line 2")
    assert str(info.value).startswith(
        f"f line 2: document id {form!r} and the one at f line 1 ('a b') would both be"
    )


def test_two_ids_whose_forms_agree_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hash collision cannot be found to test with: with no hash digits, slugs collide."""
    monkeypatch.setattr(ids, "HASH_DIGITS", 0)
    assert ragsnap_id("a b", SOURCE) == ragsnap_id("a  b", SOURCE) == "a_b--"
    id_map, read = mapping(tmp_path)
    with id_map, pytest.raises(InputError, match="'a  b' and the one at f line 1 \\('a b'\\)"):
        add(id_map, read, "a b", "f line 1")
        add(id_map, read, "a  b", "f line 2")
    id_map, _ = mapping(tmp_path)
    with id_map, pytest.raises(InputError, match="query id 'q  1' and the one at f line 1"):
        id_map.case("q 1", "f line 1")
        id_map.case("q  1", "f line 2")
    id_map, _ = mapping(tmp_path)
    with (
        id_map,
        pytest.raises(
            InputError, match="parent document id 'd  1' and the one at f line 1 \\('d 1'\\)"
        ),
    ):
        id_map.doc_id("d 1", "f line 1")
        id_map.doc_id("d 1", "f line 2")  # many chunks share one parent: fine
        id_map.doc_id("d  1", "f line 3")


def test_the_map_file_lists_each_mapped_id_once_and_reads_back(tmp_path: Path) -> None:
    id_map, read = mapping(tmp_path)
    with id_map:
        for n, value in enumerate(["d1", "a b", "c d"], 1):
            add(id_map, read, value, f"f line {n}")
        assert [id_map.doc_id(d, "x") for d in ("doc 1", "doc 1", "doc-2")][1:] == [
            ragsnap_id("doc 1", DOC_ID),
            "doc-2",
        ]
        assert id_map.case("q1", "x") == "q1"
        assert id_map.case("what is it?", "x") == "what_is_it--" + source_hash("what is it?")
        assert id_map.written and id_map.mapped == 4
        id_map.commit()
    lines = (tmp_path / "ids.tsv").read_text(encoding="utf-8").splitlines()
    assert lines == [
        "kind\tragsnap id\toriginal id",
        f"source\t{ragsnap_id('a b', SOURCE)}\ta b",
        f"source\t{ragsnap_id('c d', SOURCE)}\tc d",
        f"doc_id\t{ragsnap_id('doc 1', DOC_ID)}\tdoc 1",
        f"case\t{ragsnap_id('what is it?', CASE)}\twhat is it?",
    ]
    assert read_id_map(tmp_path / "ids.tsv") == {
        "source": {ragsnap_id("a b", SOURCE): "a b", ragsnap_id("c d", SOURCE): "c d"},
        "doc_id": {ragsnap_id("doc 1", DOC_ID): "doc 1"},
        "case": {ragsnap_id("what is it?", CASE): "what is it?"},
    }


def test_no_map_file_when_nothing_is_mapped_and_none_left_on_failure(tmp_path: Path) -> None:
    id_map, read = mapping(tmp_path)
    with id_map:
        add(id_map, read, "d1", "f line 1")
        assert not id_map.written
        id_map.commit()
    assert list(tmp_path.iterdir()) == []
    id_map, read = mapping(tmp_path)
    with pytest.raises(RuntimeError), id_map:
        add(id_map, read, "a b", "f line 1")
        raise RuntimeError("the import failed later")
    assert list(tmp_path.iterdir()) == []  # the temporary ids.tsv is gone too


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("source\tx\ty\n", "does not start with the ids.tsv header"),
        ("kind\tragsnap id\toriginal id\nsource\tx\n", "is not `kind<TAB>ragsnap id"),
        ("kind\tragsnap id\toriginal id\nother\tx\ty\n", "is not `kind<TAB>ragsnap id"),
    ],
)
def test_a_broken_map_file_is_an_input_error(tmp_path: Path, text: str, problem: str) -> None:
    path = tmp_path / "ids.tsv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match=problem):
        read_id_map(path)
    with pytest.raises(InputError, match="cannot be read"):
        read_id_map(tmp_path / "missing.tsv")


def test_read_id_map_takes_a_str_or_any_path_like(tmp_path: Path) -> None:
    path = tmp_path / "ids.tsv"
    path.write_text("kind\tragsnap id\toriginal id\ncase\ta_b--1\ta b\n", encoding="utf-8")
    expected = {"source": {}, "doc_id": {}, "case": {"a_b--1": "a b"}}

    class Named:  # a PathLike that is not a pathlib.Path
        def __fspath__(self) -> str:
            return str(path)

    assert read_id_map(str(path)) == expected
    assert read_id_map(Named()) == expected
    with pytest.raises(InputError, match="cannot be read"):
        read_id_map(str(tmp_path / "missing.tsv"))

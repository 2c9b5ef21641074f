"""TREC qrels and run files (ragsnap.ir.trec): the block reader, its errors, the writers.

Each test runs on both of the module's code paths (``code_path``): numpy, and
the compiled kernels of ``trec_kernels`` when numba is installed."""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import require_numba
from ragsnap.errors import InputError, RagsnapError
from ragsnap.ir import trec
from ragsnap.ir.trec import (
    TrecQrels,
    TrecRun,
    rankings_from_trec,
    read_qrels,
    read_run,
    read_run_tag,
    write_qrels,
    write_run,
)


@pytest.fixture(autouse=True, params=["numpy", "compiled"])
def code_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test here runs twice: on the numpy code, and on the compiled
    kernels (numba, an optional dependency: skipped when it is missing, a failure under CI)."""
    if request.param == "compiled":
        require_numba()
        monkeypatch.setattr(trec, "COMPILED_FROM", 0)
        assert trec._kernels(1) is not None
    else:
        monkeypatch.setattr(trec, "COMPILED_FROM", None)
        assert trec._kernels(1 << 40) is None
    return str(request.param)


def write(path: Path, text: str | bytes) -> Path:
    path.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
    return path


def qrels_rows(q: TrecQrels) -> list[tuple[str, str, int]]:
    return [
        (a.decode(), b.decode(), int(g))
        for a, b, g in zip(q.query.tolist(), q.doc.tolist(), q.grade.tolist(), strict=True)
    ]


def run_rows(r: TrecRun) -> list[tuple[str, str, float]]:
    return [
        (a.decode(), b.decode(), float(s))
        for a, b, s in zip(r.query.tolist(), r.doc.tolist(), r.score.tolist(), strict=True)
    ]


def read_error(reader: Callable[[Path], object], path: Path) -> InputError:
    with pytest.raises(InputError) as info:
        reader(path)
    return info.value


QRELS = [("q1", "d1", 2), ("q1", "d10", 0), ("q2", "é-doc", 3), ("q10", "d100", 1)]
RUN = [("q1", "d1", 1.5), ("q1", "d10", -0.25), ("q2", "é-doc", 3.0), ("q10", "d100", 0.0)]


# ---------------------------------------------------------------- layout


@pytest.mark.parametrize(
    "text",
    [
        "q1 0 d1 2\nq1 0 d10 0\nq2 0 é-doc 3\nq10 0 d100 1\n",
        "\n\nq1 0 d1 2\n\n   \nq1 0 d10 0\n\t\nq2 0 é-doc 3\nq10 0 d100 1\n\n",  # blank lines
        "q1\t0\td1\t2\nq1 \t 0  d10\t\t0\n  q2   0 é-doc 3   \nq10 0\td100 1\n",  # tabs, runs of spaces
        "q1 0 d1 2\r\nq1 0 d10 0\r\nq2 0 é-doc 3\r\nq10 0 d100 1\r\n",  # CRLF
        "q1 0 d1 2\nq1 0 d10 0\nq2 0 é-doc 3\nq10 0 d100 1",  # no trailing newline
        "q1 0 d1 2\r\nq1 0 d10 0\r\n\r\nq2 0 é-doc 3\r\nq10 0 d100 1",  # CRLF, no final newline
    ],
    ids=["plain", "blank-lines", "tabs-and-spaces", "crlf", "no-final-newline", "crlf-no-newline"],
)
def test_qrels_layouts_read_the_same(text: str, tmp_path: Path) -> None:
    assert qrels_rows(read_qrels(write(tmp_path / "q", text))) == QRELS


@pytest.mark.parametrize(
    "text",
    [
        "q1 Q0 d1 1 1.5 t\nq1 Q0 d10 2 -0.25 t\nq2 Q0 é-doc 1 3 t\nq10 Q0 d100 1 0 t\n",
        "\nq1 Q0 d1 1 1.5 t\n\n\nq1 Q0 d10 2 -0.25 t\nq2 Q0 é-doc 1 3 t\n \nq10 Q0 d100 1 0 t",
        "q1\tQ0\td1\t1\t1.5\tt\r\nq1  Q0  d10 2 -.25 t\r\nq2 Q0 é-doc 1 3.000 t\r\nq10 Q0 d100 1 -0 t\r\n",
    ],
    ids=["plain", "blank-lines-no-final-newline", "tabs-crlf-number-spellings"],
)
def test_run_layouts_read_the_same(text: str, tmp_path: Path) -> None:
    assert run_rows(read_run(write(tmp_path / "r", text))) == RUN


def test_empty_and_blank_files_have_no_rows(tmp_path: Path) -> None:
    for text in ("", "\n\n", " \t\r\n"):
        assert qrels_rows(read_qrels(write(tmp_path / "q", text))) == []
        assert run_rows(read_run(write(tmp_path / "r", text))) == []
    rankings = rankings_from_trec(read_qrels(tmp_path / "q"), read_run(tmp_path / "r"))
    assert rankings.query_ids == ()
    assert rankings.excluded == ()


@pytest.mark.parametrize(
    "score",
    [
        "0.1",
        "-1.25",
        "1e-05",
        "2.5E+20",
        "12345678901234567",  # more digits than the fast decimal path takes
        "0.30000000000000004",
        "123456789012345",
        "0.000000000000001",
        ".5",
        "7.",
        "007",
        "-0.0",
        "inf",
    ],
)
def test_scores_parse_exactly_like_python_float(score: str, tmp_path: Path) -> None:
    path = write(tmp_path / "r", f"q1 Q0 a 1 {score} t\nq1 Q0 b 2 0.5 t\n")
    assert read_run(path).score.tolist() == [float(score), 0.5]


def test_random_decimal_scores_parse_exactly(tmp_path: Path) -> None:
    rng = random.Random(7)
    scores = []
    for _ in range(2000):
        digits = "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 15)))
        dot = rng.randint(0, len(digits))
        scores.append(rng.choice(("", "-")) + digits[:dot] + "." + digits[dot:])
    text = "".join(f"q Q0 d{i} {i} {s} t\n" for i, s in enumerate(scores))
    assert read_run(write(tmp_path / "r", text)).score.tolist() == [float(s) for s in scores]


# ---------------------------------------------------------------- blocks


def big_files(tmp_path: Path) -> tuple[Path, Path]:
    """Qrels and run of a few hundred lines, ids of every length, some lines
    longer than a small block, CRLF and blank lines mixed in."""
    rng = random.Random(3)
    docs = [f"d{i}" for i in range(60)] + ["x" * 90, "é" * 40, "d1" + "0" * 20]
    qrels, run = [], []
    for q in range(12):
        query = f"q{q}" if q % 3 else f"query-{q}-with-a-long-name"
        for d in rng.sample(docs, 15):
            qrels.append(f"{query} 0 {d} {rng.randint(0, 3)}")
        for rank, d in enumerate(rng.sample(docs, 25), 1):
            run.append(f"{query}\tQ0\t{d}\t{rank}\t{rng.choice(('1', '0.5', '2.25', '1e-3'))}\ttag")
    rng.shuffle(run)
    ends = ("\n", "\r\n", "\n\n")
    qrels_text = "".join(line + rng.choice(ends) for line in qrels)
    run_text = "".join(line + rng.choice(ends) for line in run)
    return write(tmp_path / "qrels", qrels_text), write(tmp_path / "run", run_text.rstrip("\n"))


@pytest.mark.parametrize("block", [1, 7, 64, 200])
def test_small_blocks_read_the_same_as_one_block(
    block: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    qrels_path, run_path = big_files(tmp_path)
    qrels, run = read_qrels(qrels_path), read_run(run_path)
    whole = rankings_from_trec(qrels, run)
    monkeypatch.setattr(trec, "_BLOCK", block)
    small_qrels, small_run = read_qrels(qrels_path), read_run(run_path)
    assert qrels_rows(small_qrels) == qrels_rows(qrels)
    assert run_rows(small_run) == run_rows(run)
    assert len(run_rows(run)) == 12 * 25
    again = rankings_from_trec(small_qrels, small_run)
    assert again.query_ids == whole.query_ids
    assert again.grades.tolist() == whole.grades.tolist()
    assert again.judged.tolist() == whole.judged.tolist()


@pytest.mark.parametrize("block", [trec._BLOCK, 64], ids=["one-block", "64-byte-blocks"])
def test_run_fields_after_the_tag_are_ignored_as_trec_eval_ignores_them(
    block: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """trec_eval (get_trec_results.c) reads query, iteration, document, rank,
    score and tag, and skips the rest of the line; only fewer fields are refused."""
    monkeypatch.setattr(trec, "_BLOCK", block)
    rng = random.Random(7)
    plain, trailing = [], []
    for i in range(40):
        fields = [f"q{i % 3}", "Q0", f"d{i}", str(i), f"{rng.random():.4f}", "run-a"]
        plain.append(" ".join(fields))
        more = rng.choice(([], ["x"], ["extra", "1.5", "#note"], ["a-much-longer-trailing-field"]))
        trailing.append(rng.choice((" ", "\t")).join(fields + more))
    expected = read_run(write(tmp_path / "plain", numbered(plain)))
    got = read_run(write(tmp_path / "trailing", numbered(trailing)))
    assert run_rows(got) == run_rows(expected)
    assert len(run_rows(got)) == 40
    qrels = read_qrels(write(tmp_path / "qrels", "q0 0 d3 1\nq1 0 d4 2\nq2 0 d5 0\n"))
    a, b = rankings_from_trec(qrels, expected, "trec"), rankings_from_trec(qrels, got, "trec")
    assert (a.query_ids, a.grades.tolist()) == (b.query_ids, b.grades.tolist())


def test_the_run_tag_is_the_sixth_field_of_the_last_line_with_fields(tmp_path: Path) -> None:
    """trec_eval's runid: the tag of the last content line, whatever follows it."""
    lines = [f"q{i} Q0 d{i} 1 1.0 early" for i in range(3000)] + ["q Q0 d 1 1.0 last x y"]
    path = write(tmp_path / "run", numbered(lines) + "\n  \n\n")
    assert read_run_tag(path) == "last"
    assert read_run_tag(write(tmp_path / "empty", "")) == ""
    assert read_run_tag(write(tmp_path / "blank", "\n \n")) == ""
    long_last = "q Q0 d 1 1.0 " + "t" * 200_000  # a last line longer than a block read
    assert read_run_tag(write(tmp_path / "long", "q Q0 d 1 1.0 a\n" + long_last)) == "t" * 200_000


# ---------------------------------------------------------------- errors


def numbered(lines: list[str]) -> str:
    return "".join(line + "\n" for line in lines)


@pytest.mark.parametrize("block", [trec._BLOCK, 64], ids=["one-block", "64-byte-blocks"])
@pytest.mark.parametrize(
    ("reader", "bad", "problem"),
    [
        (read_qrels, "q1 0 d1", "has 3 fields, expected 4"),
        (read_qrels, "q1 0 d1 2 extra", "has 5 fields, expected 4"),
        (read_qrels, "q1 0 d1 1.5", "grade '1.5' is not an integer"),
        (read_qrels, "q1 0 d1 high", "grade 'high' is not an integer"),
        (read_run, "q1 Q0 d1 1 0.5", "has 5 fields, expected at least 6"),
        (read_run, "q1 Q0 d1", "has 3 fields, expected at least 6"),
        (read_run, "q1 Q0 d1 1 high tag", "score 'high' is not a number"),
        (read_run, "q1 Q0 d1 1 1.2.3 tag", "score '1.2.3' is not a number"),
    ],
)
def test_bad_line_is_named_by_file_and_line(
    reader: Callable[[Path], object],
    bad: str,
    problem: str,
    block: int,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(trec, "_BLOCK", block)
    good = "q1 0 d1 1" if reader is read_qrels else "q1 Q0 d1 1 0.5 tag"
    # 35 good lines, 4 blank ones, one more good line, then the bad line 41
    lines = [good] * 20 + [""] * 2 + [good] * 15 + ["", "  "] + [good, bad] + [good] * 30
    path = write(tmp_path / "in.txt", numbered(lines).replace("\n", "\r\n", 5))
    error = read_error(reader, path)
    assert error.path == str(path)
    assert str(path) in str(error)
    assert re.search(r"\bline 41\b", str(error)), error
    assert problem in str(error)


def test_the_first_bad_line_is_reported_when_blocks_hold_several(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(trec, "_BLOCK", 32)
    lines = ["q 0 d 1"] * 50
    lines[29], lines[44] = "q 0 d", "q 0 d x"
    error = read_error(read_qrels, write(tmp_path / "q", numbered(lines)))
    assert re.search(r"\bline 30\b", str(error)), error


def test_grade_too_large_for_an_integer_is_an_input_error(tmp_path: Path) -> None:
    path = write(tmp_path / "q", "q1 0 d1 1\nq1 0 d2 99999999999999999999\n")
    error = read_error(read_qrels, path)
    assert re.search(r"\bline 2\b", str(error)), error
    assert "not an integer" in str(error)


@pytest.mark.parametrize("reader", [read_qrels, read_run])
def test_missing_file_is_an_input_error(reader: Callable[[Path], object], tmp_path: Path) -> None:
    path = tmp_path / "nowhere.txt"
    error = read_error(reader, path)
    assert error.path == str(path)
    assert "not found" in str(error)


# ---------------------------------------------------------------- rankings


def grades_of(qrels_text: str, run_text: str, tmp_path: Path) -> dict[str, list[int]]:
    rankings = rankings_from_trec(
        read_qrels(write(tmp_path / "q", qrels_text)), read_run(write(tmp_path / "r", run_text))
    )
    return {
        q: row[: int(n)]
        for q, row, n in zip(
            rankings.query_ids, rankings.grades.tolist(), rankings.retrieved.tolist(), strict=True
        )
    }


def test_ties_are_broken_by_document_id_descending_bytes(tmp_path: Path) -> None:
    # the grade of each document is its place in trec_eval's order
    qrels = "q 0 é 1\nq 0 z 2\nq 0 d2 3\nq 0 d10 4\nq 0 d1 5\nq 0 top 9\n"
    run = "q Q0 d10 1 1 t\nq Q0 é 2 1 t\nq Q0 d1 3 1 t\nq Q0 top 4 2 t\nq Q0 z 5 1 t\n"
    run += "q Q0 d2 6 1 t\n"
    assert grades_of(qrels, run, tmp_path) == {"q": [9, 1, 2, 3, 4, 5]}


@pytest.mark.parametrize(
    ("run", "expected"),
    [
        ("q Q0 a 1 1 t\nq Q0 b 2 3 t\nq Q0 a 3 5 t\n", [2, 1]),  # later, higher score ignored
        ("q Q0 a 1 5 t\nq Q0 b 2 3 t\nq Q0 a 3 1 t\n", [1, 2]),  # grouped and sorted
        ("q Q0 b 1 3 t\nr Q0 a 2 9 t\nq Q0 a 1 2 t\nq Q0 a 3 9 t\n", [2, 1]),
        ("q Q0 a 1 2 t\nq Q0 b 2 2 t\nq Q0 a 3 2 t\n", [2, 1]),  # equal scores: b > a
    ],
    ids=["first-lower", "first-higher", "shuffled", "tied"],
)
def test_duplicate_documents_in_a_run_keep_the_first_line(
    run: str, expected: list[int], tmp_path: Path
) -> None:
    qrels = "q 0 a 1\nq 0 b 2\nr 0 a 1\n"
    assert grades_of(qrels, run, tmp_path)["q"] == expected


def test_duplicate_judgments_keep_the_first_line(tmp_path: Path) -> None:
    qrels = "q 0 a 0\nq 0 b 2\nq 0 a 3\nq 0 b 0\n"
    rankings = rankings_from_trec(
        read_qrels(write(tmp_path / "q", qrels)), read_run(write(tmp_path / "r", "q Q0 a 1 1 t\n"))
    )
    assert rankings.grades.tolist() == [[0]]
    assert rankings.judged.tolist() == [[True]]
    assert rankings.num_rel.tolist() == [1]
    assert rankings.ideal.tolist() == [[2]]


@pytest.mark.parametrize(
    ("judged", "retrieved"),
    [
        (["short", "a-judged-document-with-a-long-id"], ["short", "other"]),
        (["short", "d1"], ["short", "a-retrieved-document-with-a-long-id"]),
        (["short", "nine-byte"], ["short", "d2"]),
        (["short", "x" * 17], ["short", "y" * 9]),
    ],
    ids=["long-judged-only", "long-retrieved-only", "nine-vs-eight", "three-words-vs-two"],
)
def test_judged_documents_are_found_whatever_the_id_lengths(
    judged: list[str], retrieved: list[str], tmp_path: Path
) -> None:
    """The two files' longest ids may differ in length; a judged document must
    still be found in the run."""
    qrels = "".join(f"q 0 {d} {g}\n" for d, g in zip(judged, (2, 1), strict=True))
    run = "".join(f"q Q0 {d} {i} {9 - i} t\n" for i, d in enumerate(retrieved))
    assert grades_of(qrels, run, tmp_path) == {"q": [2, 0]}
    rankings = rankings_from_trec(read_qrels(tmp_path / "q"), read_run(tmp_path / "r"))
    assert rankings.judged.tolist() == [[True, False]]


def test_query_ids_that_are_not_utf8_never_raise_a_decode_error(tmp_path: Path) -> None:
    """A Latin-1 file is read, or refused with an InputError naming it; never a
    UnicodeDecodeError (a traceback on the command line)."""
    qrels = write(tmp_path / "q", b"caf\xe9 0 a 1\n")
    run = write(tmp_path / "r", b"caf\xe9 Q0 a 1 1 t\n")
    try:
        rankings = rankings_from_trec(read_qrels(qrels), read_run(run))
    except InputError as error:
        assert error.path == str(qrels)
    else:
        assert len(rankings.query_ids) == 1
        assert rankings.grades.tolist() == [[1]]


def test_queries_are_sorted_and_split_into_evaluated_and_excluded(tmp_path: Path) -> None:
    qrels = "q2 0 a 1\nq10 0 a 0\nq1 0 a 2\nq3 0 b 0\nq3 0 c 0\nq9 0 a -1\n"
    run = "q1 Q0 a 1 1 t\nq10 Q0 a 1 1 t\nonly-run Q0 a 1 1 t\n"
    rankings = rankings_from_trec(
        read_qrels(write(tmp_path / "q", qrels)), read_run(write(tmp_path / "r", run))
    )
    assert rankings.query_ids == ("q1", "q2")
    assert rankings.excluded == ("q10", "q3", "q9")
    assert rankings.retrieved.tolist() == [1, 0]


@pytest.mark.parametrize(
    ("query_set", "rows", "excluded"),
    [
        # in both files: q1 (relevant), q10 (grade 0 only); q2, q3, q9 are not in the run
        ("trec", ("q1", "q10"), ("q2", "q3", "q9")),
        # every query of the qrels, whatever its grades
        ("complete", ("q1", "q10", "q2", "q3", "q9"), ()),
        # judged with a relevant document, in the run or not
        ("ragsnap", ("q1", "q2"), ("q10", "q3", "q9")),
    ],
)
def test_the_query_set_rule_chooses_the_rows(
    query_set: str, rows: tuple[str, ...], excluded: tuple[str, ...], tmp_path: Path
) -> None:
    qrels = "q2 0 a 1\nq10 0 a 0\nq1 0 a 2\nq1 0 b 0\nq3 0 b 0\nq3 0 c 0\nq9 0 a -1\n"
    run = "q1 Q0 a 1 1 t\nq10 Q0 a 1 2 t\nq10 Q0 z 2 1 t\nonly-run Q0 a 1 1 t\n"
    rankings = rankings_from_trec(
        read_qrels(write(tmp_path / "q", qrels)), read_run(write(tmp_path / "r", run)), query_set
    )
    assert rankings.query_ids == rows
    assert rankings.excluded == excluded
    retrieved = {"q1": 1, "q10": 2}
    num_rel = {"q1": 1, "q2": 1}
    num_nonrel = {"q1": 1, "q10": 1, "q3": 2}  # judged with grade 0; -1 is not counted
    assert rankings.retrieved.tolist() == [retrieved.get(q, 0) for q in rows]
    assert rankings.num_rel.tolist() == [num_rel.get(q, 0) for q in rows]
    assert rankings.num_nonrel.tolist() == [num_nonrel.get(q, 0) for q in rows]


def test_an_unknown_query_set_names_the_known_ones(tmp_path: Path) -> None:
    qrels, run = read_qrels(write(tmp_path / "q", "q 0 a 1\n")), read_run(write(tmp_path / "r", ""))
    with pytest.raises(RagsnapError, match="unknown query set 'all'; use one of trec, complete"):
        rankings_from_trec(qrels, run, "all")


# ---------------------------------------------------------------- writers


def test_write_run_then_read_run_reproduces_each_ranking(tmp_path: Path) -> None:
    ranked = {
        "q2": ["d10", "d1", "d100", "é", "z", "x" * 20, "d2"],
        "q1": ["b", "a", "b", "c"],  # a repeat is written once
        "q3": [],
        "问题": ["only"],
    }
    path = tmp_path / "run.txt"
    write_run(path, ranked, tag="mine")
    run = read_run(path)
    got: dict[str, list[tuple[float, bytes]]] = {}
    for q, d, s in zip(run.query.tolist(), run.doc.tolist(), run.score.tolist(), strict=True):
        got.setdefault(q.decode(), []).append((s, d))
    # trec_eval's order, worked out here: score descending, then id descending
    order = {q: [d.decode() for _, d in sorted(v, reverse=True)] for q, v in got.items()}
    assert order == {"q1": ["b", "a", "c"], "q2": ranked["q2"], "问题": ["only"]}
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[0] == "q1 Q0 b 1 3 mine"
    assert [line.split()[0] for line in lines] == sorted(line.split()[0] for line in lines)
    # and ragsnap's own ranking agrees
    qrels = {q: {d: i for i, d in enumerate(dict.fromkeys(docs), 1)} for q, docs in ranked.items()}
    write_qrels(tmp_path / "qrels.txt", qrels)
    qrels_text = (tmp_path / "qrels.txt").read_text("utf-8")
    assert grades_of(qrels_text, path.read_text("utf-8"), tmp_path) == {
        "q1": [1, 2, 3],
        "q2": [1, 2, 3, 4, 5, 6, 7],
        "问题": [1],
    }


def test_write_qrels_then_read_qrels_round_trips(tmp_path: Path) -> None:
    judgments = {"q2": {"d10": 0, "é": 3, "d1": 1}, "q1": {"x" * 30: 2}, "q3": {}}
    path = tmp_path / "qrels.txt"
    write_qrels(path, judgments)
    back: dict[str, dict[str, int]] = {}
    for q, d, g in qrels_rows(read_qrels(path)):
        back.setdefault(q, {})[d] = g
    assert back == {q: j for q, j in judgments.items() if j}
    assert path.read_text(encoding="utf-8").splitlines()[:2] == [f"q1 0 {'x' * 30} 2", "q2 0 d1 1"]


@pytest.mark.parametrize(
    "ranked",
    [
        {"q": ["a doc"]},
        {"a query": ["d"]},
        {"q": ["tab\there"]},
        {"q": ["line\nbreak"]},
        {"q": [""]},
    ],
    ids=["space-in-doc", "space-in-query", "tab", "newline", "empty-id"],
)
def test_write_run_never_writes_a_run_it_cannot_read_back(
    ranked: dict[str, list[str]], tmp_path: Path
) -> None:
    """TREC fields are split on whitespace: an id holding some (a chunk id or
    source with a space) must be refused with a RagsnapError when the run is
    written, or written so that it reads back; never left to fail on reading."""
    path = tmp_path / "run.txt"
    try:
        write_run(path, ranked)
    except RagsnapError:
        return
    assert [(q, d) for q, d, _ in run_rows(read_run(path))] == [
        (q, d) for q, docs in ranked.items() for d in docs
    ]


@pytest.mark.parametrize("tag", ["my tag", "", "tab\ttag"], ids=["space", "empty", "tab"])
def test_write_run_never_writes_a_tag_it_cannot_read_back(tag: str, tmp_path: Path) -> None:
    path = tmp_path / "run.txt"
    try:
        write_run(path, {"q": ["d1", "d2"]}, tag=tag)
    except RagsnapError:
        return
    assert [(q, d) for q, d, _ in run_rows(read_run(path))] == [("q", "d1"), ("q", "d2")]


@pytest.mark.parametrize(
    "judgments",
    [{"q": {"a doc": 1}}, {"a query": {"d": 1}}, {"q": {"": 1}}],
    ids=["space-in-doc", "space-in-query", "empty-id"],
)
def test_write_qrels_never_writes_qrels_it_cannot_read_back(
    judgments: dict[str, dict[str, int]], tmp_path: Path
) -> None:
    path = tmp_path / "qrels.txt"
    try:
        write_qrels(path, judgments)
    except RagsnapError:
        return
    assert qrels_rows(read_qrels(path)) == [
        (q, d, g) for q, j in judgments.items() for d, g in j.items()
    ]


def test_writers_write_nothing_for_nothing(tmp_path: Path) -> None:
    write_run(tmp_path / "r", {})
    write_qrels(tmp_path / "q", {})
    assert run_rows(read_run(tmp_path / "r")) == []
    assert qrels_rows(read_qrels(tmp_path / "q")) == []


def test_a_pipe_is_read_once_in_blocks(tmp_path: Path) -> None:
    """A named pipe (``<(command)`` on the command line) is opened once and read
    in blocks, never mapped, on either path."""
    import os
    import threading

    fifo = tmp_path / "run.fifo"
    os.mkfifo(fifo)
    text = "".join(f"q1 Q0 d{i} {i} {100 - i} t\n" for i in range(50))

    def feed() -> None:
        with fifo.open("w") as handle:
            handle.write(text)

    writer = threading.Thread(target=feed)
    writer.start()
    run = read_run(fifo)
    writer.join(timeout=10)
    assert not writer.is_alive()
    assert run.score.tolist() == [float(100 - i) for i in range(50)]


def test_run_and_qrels_ids_refuse_every_white_space_and_control_character() -> None:
    """A TREC line splits on white space: an id holding any character ``str.isspace``
    calls white space, or a control character, is refused wherever it stands (tag,
    query, document), and an empty one too; every other character passes."""
    refused = [c for c in map(chr, range(0x110000)) if c.isspace() or ord(c) < 32]
    assert "\u3000" in refused and "\x00" in refused and "\x85" in refused
    for c in refused:
        for run in ({f"q{c}": ["d"]}, {"q": ["d", f"x{c}y"]}):
            with pytest.raises(RagsnapError, match="TREC ids"):
                trec.format_run(run)
        with pytest.raises(RagsnapError, match="TREC ids"):
            trec.format_run({"q": ["d"]}, tag=f"t{c}")
        with pytest.raises(RagsnapError, match="TREC ids"):
            trec.format_qrels({"q": {f"{c}d": 1}})
    for run in ({"": ["d"]}, {"q": ["d", ""]}):
        with pytest.raises(RagsnapError, match="TREC ids"):
            trec.format_run(run)
    kept = "".join(c for c in map(chr, range(32, 0x3000)) if not c.isspace())
    assert trec.format_run({"q": [kept]}) == f"q Q0 {kept} 1 1 ragsnap\n"

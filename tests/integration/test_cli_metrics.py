"""``ragsnap metrics --qrels Q --run R`` driven as a process: output, options, errors."""

from __future__ import annotations

import re
from math import log2
from pathlib import Path

import pytest

from conftest import Run, run_cli
from ragsnap.ir.metrics import DEFAULT_MEASURES, MEASURES

# q1: a=3, b=1, c=0, e=2; ranked c, a, x (unjudged), b; e never retrieved.
# q10: a=1; ranked z, a. q2: judged, not in the run. q3: only grade 0
# (excluded). q4: only in the run (ignored).
QRELS = """\
q1 0 a 3
q1 0 b 1
q1 0 c 0
q1 0 e 2
q2 0 f 1
q3 0 g 0
q10 0 a 1
"""
RUN = """\
q1 Q0 c 1 4 t
q1 Q0 a 2 3 t
q1 Q0 x 3 2 t
q1 Q0 b 4 1 t
q3 Q0 g 1 1 t
q4 Q0 a 1 1 t
q10 Q0 z 1 2 t
q10 Q0 a 2 1 t
"""

NDCG_Q1 = (3 / log2(3) + 1 / log2(5)) / (3 + 2 / log2(3) + 1 / 2)
# per-query values, queries in the order q1, q10, q2
PER_QUERY = {
    "map": [(1 / 2 + 2 / 4) / 3, 1 / 2, 0.0],
    "rprec": [1 / 3, 0.0, 0.0],
    "mrr@10": [1 / 2, 1 / 2, 0.0],
    "ndcg@10": [NDCG_Q1, 1 / log2(3), 0.0],
    "recall@5": [2 / 3, 1.0, 0.0],
    "recall@10": [2 / 3, 1.0, 0.0],
    "precision@5": [2 / 5, 1 / 5, 0.0],
    "precision@10": [2 / 10, 1 / 10, 0.0],
    "hit@10": [1.0, 1.0, 0.0],
    # judged share of the results shown; 1 when nothing was retrieved
    "coverage@10": [3 / 4, 1 / 2, 1.0],
}


@pytest.fixture
def files(tmp_path: Path) -> Path:
    (tmp_path / "qrels.txt").write_text(QRELS, encoding="utf-8")
    (tmp_path / "run.txt").write_text(RUN, encoding="utf-8")
    return tmp_path


def metrics(cwd: Path, *extra: str, qrels: str = "qrels.txt", run: str = "run.txt") -> Run:
    return run_cli("metrics", "--qrels", qrels, "--run", run, *extra, cwd=cwd)


def rows(run: Run) -> list[tuple[str, str, str]]:
    """``measure<TAB>query<TAB>value`` lines (the measure column may be padded)."""
    assert run.code == 0, run.err
    assert run.err == ""
    out = []
    for line in run.out.splitlines():
        fields = line.split("\t")
        assert len(fields) == 3, line
        out.append((fields[0].rstrip(), fields[1], fields[2]))
    return out


def mean(values: list[float]) -> float:
    return sum(values) / len(values)


def test_default_measures_then_counts(files: Path) -> None:
    lines = rows(metrics(files))
    assert [name for name, _, _ in lines] == [*DEFAULT_MEASURES, "num_q", "num_excluded"]
    assert {query for _, query, _ in lines} == {"all"}
    for name, _, value in lines[:-2]:
        assert re.fullmatch(r"\d\.\d{4}", value), value
        assert value == f"{mean(PER_QUERY[name]):.4f}", name
    assert lines[-2:] == [("num_q", "all", "3"), ("num_excluded", "all", "1")]
    # two of the worked values, spelled out
    values = {name: value for name, _, value in lines}
    assert [values[m] for m in ("map", "precision@5", "hit@10")] == ["0.2778", "0.2000", "0.6667"]


def test_per_query_lines_come_first_sorted_by_query_id(files: Path) -> None:
    lines = rows(metrics(files, "-q", "-m", "map", "-m", "mrr@10"))
    per_query, summary = lines[:-4], lines[-4:]
    assert [(n, q) for n, q, _ in per_query] == [
        ("map", "q1"),
        ("mrr@10", "q1"),
        ("map", "q10"),
        ("mrr@10", "q10"),
        ("map", "q2"),
        ("mrr@10", "q2"),
    ]
    by_query = {(n, q): v for n, q, v in per_query}
    for name in ("map", "mrr@10"):
        for query, value in zip(("q1", "q10", "q2"), PER_QUERY[name], strict=True):
            assert by_query[name, query] == f"{value:.4f}"
    assert [(n, q) for n, q, _ in summary] == [
        ("map", "all"),
        ("mrr@10", "all"),
        ("num_q", "all"),
        ("num_excluded", "all"),
    ]
    assert "q3" not in {q for _, q, _ in lines}  # excluded
    assert "q4" not in {q for _, q, _ in lines}  # not judged


@pytest.mark.parametrize(("digits", "expected"), [("2", "0.28"), ("6", "0.277778"), ("0", "0")])
def test_digits_sets_the_decimal_places(files: Path, digits: str, expected: str) -> None:
    lines = rows(metrics(files, "-m", "map", "--digits", digits))
    assert lines[0] == ("map", "all", expected)


def test_measures_are_repeatable_aliased_and_deduplicated(files: Path) -> None:
    lines = rows(metrics(files, "-m", "P_5", "-m", "success_10", "-m", "recip_rank", "-m", "P_5"))
    assert lines == [
        ("precision@5", "all", f"{mean(PER_QUERY['precision@5']):.4f}"),
        ("hit@10", "all", f"{mean(PER_QUERY['hit@10']):.4f}"),
        ("mrr", "all", f"{mean([1 / 2, 1 / 2, 0.0]):.4f}"),
        ("num_q", "all", "3"),
        ("num_excluded", "all", "1"),
    ]


def test_coverage_and_exponential_ndcg(files: Path) -> None:
    lines = rows(metrics(files, "-q", "-m", "coverage@3", "-m", "ndcg_exp@2"))
    values = {(n, q): v for n, q, v in lines}
    # q1: c, a judged, x not; q10: z not, a judged; q2: nothing retrieved
    assert [values["coverage@3", q] for q in ("q1", "q10", "q2")] == ["0.6667", "0.5000", "1.0000"]
    assert values["ndcg_exp@2", "q1"] == f"{(7 / log2(3)) / (7 + 3 / log2(3)):.4f}"


def test_empty_files_evaluate_nothing(tmp_path: Path) -> None:
    (tmp_path / "qrels.txt").write_text("", encoding="utf-8")
    (tmp_path / "run.txt").write_text("", encoding="utf-8")
    lines = rows(metrics(tmp_path, "-m", "map"))
    assert lines == [("map", "all", "0.0000"), ("num_q", "all", "0"), ("num_excluded", "all", "0")]


# ---------------------------------------------------------------- errors


def assert_clean_failure(run: Run, kind: str) -> None:
    assert run.code == 2, (run.out, run.err)
    assert "Traceback" not in run.err
    assert run.out == ""
    assert run.err.startswith(f"{kind}: "), run.err


def test_unknown_measure_lists_the_known_ones(files: Path) -> None:
    run = metrics(files, "-m", "map", "-m", "bogus@10")
    assert_clean_failure(run, "UsageError")
    assert "unknown measure 'bogus@10'" in run.err
    for name in MEASURES:
        assert name in run.err


@pytest.mark.parametrize(
    ("measure", "message"),
    [
        ("precision", "needs a cutoff"),
        ("rprec@10", "takes no cutoff"),
        ("ndcg@0", "at least 1"),
    ],
)
def test_bad_cutoff_is_a_usage_error(files: Path, measure: str, message: str) -> None:
    run = metrics(files, "-m", measure)
    assert_clean_failure(run, "UsageError")
    assert message in run.err


@pytest.mark.parametrize(
    ("which", "text", "where"),
    [
        ("run.txt", RUN.replace("q1 Q0 x 3 2 t", "q1 Q0 x 3 2"), "line 3"),
        ("run.txt", RUN.replace("q1 Q0 x 3 2 t", "q1 Q0 x 3 two t"), "line 3"),
        ("qrels.txt", QRELS.replace("q1 0 b 1", "q1 0 b 1.0"), "line 2"),
        ("qrels.txt", "\n\n" + QRELS.replace("q2 0 f 1", "q2 f 1"), "line 7"),
    ],
    ids=["run-fields", "run-score", "qrels-grade", "qrels-fields-after-blank-lines"],
)
def test_malformed_file_names_the_file_and_line(
    files: Path, which: str, text: str, where: str
) -> None:
    (files / which).write_text(text, encoding="utf-8")
    run = metrics(files)
    assert_clean_failure(run, "InputError")
    assert which in run.err
    assert re.search(rf"\b{where}\b", run.err), run.err


@pytest.mark.parametrize("which", ["qrels", "run"])
def test_missing_file_is_an_input_error(files: Path, which: str) -> None:
    run = metrics(files, **{which: "absent.txt"})
    assert_clean_failure(run, "InputError")
    assert "absent.txt" in run.err


@pytest.mark.parametrize(
    ("which", "data"),
    [
        ("qrels.txt", b"caf\xe9 0 a 1\n"),  # Latin-1, not UTF-8, query id
        ("run.txt", b"q1 Q0 \xff\xfe 1 1 t\n"),  # not UTF-8 document id
        ("qrels.txt", b"q1 0 a 99999999999999999999\n"),  # grade beyond 64 bits
        ("run.txt", b"q1 Q0 a 1 1e999 t\n"),  # overflows to inf
        ("run.txt", b"q1 Q0 a 1 nan t\n"),
        ("qrels.txt", b"\x00\x00\x00\n"),
    ],
    ids=["latin1-query", "binary-doc", "huge-grade", "huge-score", "nan-score", "nul-bytes"],
)
def test_odd_input_never_shows_a_traceback(files: Path, which: str, data: bytes) -> None:
    (files / which).write_bytes(data)
    run = metrics(files)
    assert "Traceback" not in run.err, run.err
    assert run.code in (0, 2), run.err
    if run.code == 2:
        assert run.err.startswith("InputError: ")
        assert which in run.err


@pytest.mark.parametrize(
    "args",
    [
        ["--qrels", "qrels.txt"],
        ["--qrels", "qrels.txt", "--run", "run.txt", "--digits", "x"],
        ["--qrels", "qrels.txt", "--run", "run.txt", "--digits", "-1"],
    ],
    ids=["no-run", "digits-not-a-number", "negative-digits"],
)
def test_argument_errors_exit_2_without_a_traceback(files: Path, args: list[str]) -> None:
    run = run_cli("metrics", *args, cwd=files)
    assert run.code == 2, run.err
    assert "Traceback" not in run.err
    assert run.out == ""

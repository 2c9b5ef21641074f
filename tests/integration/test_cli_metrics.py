"""``ragsnap metrics --qrels Q --run R`` driven as a process: output, options, errors."""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
from math import log2
from pathlib import Path
from types import ModuleType

import pytest

from conftest import REPO, Run, require_numba, run_cli
from ragsnap.ir.metrics import DEFAULT_MEASURES, MEASURES, QUERY_SETS, TREC_SETS

# q1: a=3, b=1, c=0, d=0, e=2, h=0; ranked c, a, x (unjudged), b; e, d, h never
# retrieved. q10: a=1; ranked z, a. q2: judged, not in the run. q3 and q5: only
# grade 0 (q3 ranks g, judged; q5 ranks k, judged, then m, unjudged). q4: only in
# the run, never judged.
QRELS = """\
q1 0 a 3
q1 0 b 1
q1 0 c 0
q1 0 e 2
q2 0 f 1
q3 0 g 0
q10 0 a 1
q1 0 d 0
q1 0 h 0
q5 0 k 0
"""
RUN = """\
q1 Q0 c 1 4 t
q1 Q0 a 2 3 t
q1 Q0 x 3 2 t
q1 Q0 b 4 1 t
q3 Q0 g 1 1 t
q4 Q0 a 1 1 t
q5 Q0 k 1 2 t
q5 Q0 m 2 1 t
q10 Q0 z 1 2 t
q10 Q0 a 2 1 t
"""

# The queries each query set averages over (the rows), sorted by id:
ROWS = {
    # trec_eval: the queries in both files (q2 is ignored, q4 has no judgments)
    "trec": ["q1", "q10", "q3", "q5"],
    # trec_eval -c: every query in the qrels, q2 with nothing retrieved
    "complete": ["q1", "q10", "q2", "q3", "q5"],
    # golden-case scoring: the queries with a relevant judgment, q2 scoring 0
    "ragsnap": ["q1", "q10", "q2"],
}

NDCG_Q1 = (3 / log2(3) + 1 / log2(5)) / (3 + 2 / log2(3) + 1 / 2)
# per-query values where they are not 0 (q2 retrieved nothing; q3 and q5 have no
# relevant document, so they score 0 on everything but coverage and the counts)
PER_QUERY: dict[str, dict[str, float]] = {
    "map": {"q1": (1 / 2 + 2 / 4) / 3, "q10": 1 / 2},
    "rprec": {"q1": 1 / 3},
    "mrr@10": {"q1": 1 / 2, "q10": 1 / 2},
    "ndcg@10": {"q1": NDCG_Q1, "q10": 1 / log2(3)},
    "recall@5": {"q1": 2 / 3, "q10": 1.0},
    "recall@10": {"q1": 2 / 3, "q10": 1.0},
    "precision@5": {"q1": 2 / 5, "q10": 1 / 5},
    "precision@10": {"q1": 2 / 10, "q10": 1 / 10},
    "hit@10": {"q1": 1.0, "q10": 1.0},
    # judged share of the results shown; 1 when nothing was retrieved
    "coverage@10": {"q1": 3 / 4, "q10": 1 / 2, "q2": 1.0, "q3": 1.0, "q5": 1 / 2},
    # q1: c (grade 0) above a and b, N = 3 judged non-relevant, R = 3
    "bpref": {"q1": ((1 - 1 / 3) + (1 - 1 / 3)) / 3, "q10": 1.0},
    "gm_map": {"q1": (1 / 2 + 2 / 4) / 3, "q10": 1 / 2},  # AP, averaged geometrically
    "iprec@0.00": {"q1": 1 / 2, "q10": 1 / 2},
    "iprec@1.00": {"q10": 1 / 2},  # q1 retrieved 2 of its 3 relevant documents
    "num_ret": {"q1": 4, "q10": 2, "q3": 1, "q5": 2},
    "num_rel": {"q1": 3, "q10": 1, "q2": 1},
    "num_rel_ret": {"q1": 2, "q10": 1},
}
COUNTS = {"num_ret", "num_rel", "num_rel_ret"}


def expected_all(measure: str, query_set: str) -> str:
    """The ``all`` line's value: trec_eval's averaging rule over the query set's rows."""
    values = [PER_QUERY[measure].get(q, 0.0) for q in ROWS[query_set]]
    if measure in COUNTS:  # summed, printed as an integer
        return str(int(sum(values)))
    if measure == "gm_map":  # geometric mean, AP floored at 0.00001
        return f"{math.exp(sum(math.log(max(v, 0.00001)) for v in values) / len(values)):.4f}"
    return f"{sum(values) / len(values):.4f}"


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


def measure_args(names: list[str] | tuple[str, ...]) -> list[str]:
    return [arg for name in names for arg in ("-m", name)]


def test_default_measures_then_counts(files: Path) -> None:
    lines = rows(metrics(files))
    assert [name for name, _, _ in lines] == [*DEFAULT_MEASURES, "num_q", "num_excluded"]
    assert {query for _, query, _ in lines} == {"all"}
    for name, _, value in lines[:-2]:
        assert re.fullmatch(r"\d\.\d{4}", value), value
        assert value == expected_all(name, "trec"), name
    # trec_eval's rule: q1, q10, q3, q5 averaged over; q2 (judged, not in the run) left out
    assert lines[-2:] == [("num_q", "all", "4"), ("num_excluded", "all", "1")]
    # three of the worked values, spelled out: over 4 queries, the grade-0-only ones scoring 0
    values = {name: value for name, _, value in lines}
    assert [values[m] for m in ("map", "precision@5", "hit@10")] == ["0.2083", "0.1500", "0.5000"]


@pytest.mark.parametrize(
    ("options", "query_set", "num_q", "num_excluded"),
    [
        ([], "trec", 4, 1),
        (["--query-set", "trec"], "trec", 4, 1),
        (["-c"], "complete", 5, 0),
        (["--complete"], "complete", 5, 0),
        (["--query-set", "complete"], "complete", 5, 0),
        (["-c", "--query-set", "complete"], "complete", 5, 0),
        (["--query-set", "ragsnap"], "ragsnap", 3, 2),  # q3 and q5 left out
    ],
    ids=["default", "trec", "c", "complete", "query-set-complete", "both", "ragsnap"],
)
def test_each_query_set_averages_over_its_rows(
    files: Path, options: list[str], query_set: str, num_q: int, num_excluded: int
) -> None:
    names = list(PER_QUERY)
    lines = rows(metrics(files, *measure_args(names), *options))
    assert lines == [
        *[(name, "all", expected_all(name, query_set)) for name in names],
        ("num_q", "all", str(num_q)),
        ("num_excluded", "all", str(num_excluded)),
    ]


def test_per_query_lines_come_first_sorted_by_query_id(files: Path) -> None:
    lines = rows(metrics(files, "-q", "-m", "map", "-m", "mrr@10"))
    per_query, summary = lines[:-4], lines[-4:]
    assert [(n, q) for n, q, _ in per_query] == [
        (name, query) for query in ("q1", "q10", "q3", "q5") for name in ("map", "mrr@10")
    ]
    for name, query, value in per_query:
        assert value == f"{PER_QUERY[name].get(query, 0.0):.4f}"
    assert [(n, q) for n, q, _ in summary] == [
        ("map", "all"),
        ("mrr@10", "all"),
        ("num_q", "all"),
        ("num_excluded", "all"),
    ]
    assert "q2" not in {q for _, q, _ in lines}  # not in the run
    assert "q4" not in {q for _, q, _ in lines}  # not judged


def test_per_query_lines_follow_the_query_set(files: Path) -> None:
    queries = {q for _, q, _ in rows(metrics(files, "-q", "-m", "map", "--query-set", "ragsnap"))}
    assert queries == {"q1", "q10", "q2", "all"}
    queries = {q for _, q, _ in rows(metrics(files, "-q", "-m", "map", "-c"))}
    assert queries == {"q1", "q10", "q2", "q3", "q5", "all"}


def test_counts_print_as_integers_and_gm_map_only_in_the_mean(files: Path) -> None:
    lines = rows(metrics(files, "-q", "-m", "num_ret", "-m", "gm_map", "--digits", "2"))
    assert [line for line in lines if line[1] == "q5"] == [("num_ret", "q5", "2")]
    assert not [line for line in lines if line[0] == "gm_map" and line[1] != "all"]
    assert lines[-4:] == [
        ("num_ret", "all", "9"),
        ("gm_map", "all", f"{float(expected_all('gm_map', 'trec')):.2f}"),
        ("num_q", "all", "4"),
        ("num_excluded", "all", "1"),
    ]


@pytest.mark.parametrize(("digits", "expected"), [("2", "0.21"), ("6", "0.208333"), ("0", "0")])
def test_digits_sets_the_decimal_places(files: Path, digits: str, expected: str) -> None:
    lines = rows(metrics(files, "-m", "map", "--digits", digits))
    assert lines[0] == ("map", "all", expected)


def test_measures_are_repeatable_aliased_and_deduplicated(files: Path) -> None:
    lines = rows(metrics(files, "-m", "P_5", "-m", "success_10", "-m", "recip_rank", "-m", "P_5"))
    assert lines == [
        ("precision@5", "all", expected_all("precision@5", "trec")),
        ("hit@10", "all", expected_all("hit@10", "trec")),
        ("mrr", "all", expected_all("mrr@10", "trec")),  # no result below rank 10
        ("num_q", "all", "4"),
        ("num_excluded", "all", "1"),
    ]


def test_ir_measures_names_print_as_ragsnap_names(files: Path) -> None:
    names = ["AP", "RR", "R@5", "nDCG@10", "P@5", "AP@10", "RR@10", "Judged@10", "IPrec@0.0"]
    lines = rows(metrics(files, *measure_args(names)))
    assert [name for name, _, _ in lines[:-2]] == [
        "map",
        "mrr",
        "recall@5",
        "ndcg@10",
        "precision@5",
        "map@10",
        "mrr@10",
        "coverage@10",
        "iprec@0.00",
    ]
    values = {name: value for name, _, value in lines}
    assert values["map"] == values["map@10"] == expected_all("map", "trec")
    assert values["coverage@10"] == expected_all("coverage@10", "trec")


def test_coverage_and_exponential_ndcg(files: Path) -> None:
    lines = rows(metrics(files, "-c", "-q", "-m", "coverage@3", "-m", "ndcg_exp@2"))
    values = {(n, q): v for n, q, v in lines}
    # q1: c, a judged, x not; q10: z not, a judged; q2: nothing retrieved; q5: k judged, m not
    assert [values["coverage@3", q] for q in ("q1", "q10", "q2", "q3", "q5")] == [
        "0.6667",
        "0.5000",
        "1.0000",
        "1.0000",
        "0.5000",
    ]
    assert values["ndcg_exp@2", "q1"] == f"{(7 / log2(3)) / (7 + 3 / log2(3)):.4f}"


def test_empty_files_evaluate_nothing(tmp_path: Path) -> None:
    (tmp_path / "qrels.txt").write_text("", encoding="utf-8")
    (tmp_path / "run.txt").write_text("", encoding="utf-8")
    for options in ([], ["-c"], ["--query-set", "ragsnap"]):
        lines = rows(metrics(tmp_path, "-m", "map", "-m", "gm_map", "-m", "num_rel", *options))
        assert lines == [
            ("map", "all", "0.0000"),
            ("gm_map", "all", "0.0000"),
            ("num_rel", "all", "0"),
            ("num_q", "all", "0"),
            ("num_excluded", "all", "0"),
        ]


def test_help_describes_the_query_sets(tmp_path: Path) -> None:
    run = run_cli("metrics", "--help", cwd=tmp_path)
    assert run.code == 0, run.err
    text = " ".join(run.out.split())
    for fragment in ["-c, --complete", "trec_eval -c", "gm_map", "num_rel_ret", "iprec@0.10"]:
        assert fragment in text
    assert f"--query-set {{{','.join(QUERY_SETS)}}}" in text
    assert "(default: trec)" in text


# ---------------------------------------------------------------- trec_eval's all line

# trec_eval's `all` line for QRELS and RUN, to 4 decimals: ragsnap measure ->
# (trec_eval measure, without -c, with -c). Without -c trec_eval averages over
# the queries in both files (q1, q10, q3, q5: num_q 4); with -c over every query
# of the qrels (q1, q10, q2, q3, q5: num_q 5), q2 scoring 0 but for its num_rel.
TREC_EVAL_ALL = {
    "map": ("map", "0.2083", "0.1667"),
    "gm_map": ("gm_map", "0.0020", "0.0007"),
    "bpref": ("bpref", "0.3611", "0.2889"),
    "mrr": ("recip_rank", "0.2500", "0.2000"),
    "rprec": ("Rprec", "0.0833", "0.0667"),
    "precision@5": ("P_5", "0.1500", "0.1200"),
    "ndcg@10": ("ndcg_cut_10", "0.2797", "0.2238"),
    "recall@10": ("recall_10", "0.4167", "0.3333"),
    "iprec@0.00": ("iprec_at_recall_0.00", "0.2500", "0.2000"),
    "iprec@0.50": ("iprec_at_recall_0.50", "0.2500", "0.2000"),
    "iprec@1.00": ("iprec_at_recall_1.00", "0.1250", "0.1000"),
    "num_ret": ("num_ret", "9", "9"),
    "num_rel": ("num_rel", "4", "5"),
    "num_rel_ret": ("num_rel_ret", "3", "3"),
}
TREC_EVAL_NUM_Q = ("4", "5")


@pytest.mark.parametrize("complete", [False, True], ids=["default", "c"])
def test_the_all_line_is_trec_evals(files: Path, complete: bool) -> None:
    trec_names = [trec for trec, _, _ in TREC_EVAL_ALL.values()]
    lines = rows(metrics(files, *measure_args(trec_names), *(["-c"] if complete else [])))
    column = 2 if complete else 1
    assert lines[:-1] == [
        *[(name, "all", pinned[column]) for name, pinned in TREC_EVAL_ALL.items()],
        ("num_q", "all", TREC_EVAL_NUM_Q[complete]),
    ]


def require_pytrec_eval() -> ModuleType:
    """pytrec_eval (trec_eval); skipped on a workstation without it, failed under CI=true."""
    try:
        import pytrec_eval
    except ImportError:
        message = "pytrec_eval is not installed; pip install -e '.[test]' to check against it"
        if os.environ.get("CI") == "true":
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    return pytrec_eval


def parse_trec(text: str, value: int) -> dict[str, dict[str, float]]:
    """query -> document -> the ``value`` column of a qrels or run text."""
    out: dict[str, dict[str, float]] = {}
    for line in text.splitlines():
        fields = line.split()
        out.setdefault(fields[0], {})[fields[2]] = float(fields[value])
    return out


def test_the_pinned_all_line_is_pytrec_evals_per_query_values_averaged_as_trec_eval() -> None:
    pytrec_eval = require_pytrec_eval()
    qrels = {q: {d: int(g) for d, g in j.items()} for q, j in parse_trec(QRELS, 3).items()}
    run = parse_trec(RUN, 4)
    names = [trec for trec, _, _ in TREC_EVAL_ALL.values()]
    per_query = pytrec_eval.RelevanceEvaluator(qrels, set(names)).evaluate(run)
    # pytrec_eval evaluates the queries in both files: q3 and q5 (grade 0 only) too
    assert sorted(per_query) == ["q1", "q10", "q3", "q5"]

    # trec_eval -c evaluates a judged query missing from the run (q2) against one
    # unjudged placeholder document and sets its num_ret to 0: every value is 0 but
    # num_rel (its R) and gm_map's log(max(0, 0.00001))
    missing = {"num_rel": 1.0, "gm_map": math.log(0.00001)}
    placeholder = pytrec_eval.RelevanceEvaluator(qrels, set(names)).evaluate(
        {"q2": {"placeholder": 1.0}}
    )["q2"]
    assert {m: v for m, v in placeholder.items() if m != "num_ret"} == {
        m: missing.get(m, 0.0) for m in names if m != "num_ret"
    }

    def all_value(name: str, values: list[float], num_q: int) -> str:
        """trec_eval's rule: num_* summed, gm_map exp(sum of logs / num_q), the rest sum / num_q
        (pytrec_eval gives gm_map per query as log(max(AP, 0.00001)))."""
        if name.startswith("num_"):
            return str(int(sum(values)))
        if name == "gm_map":
            return f"{math.exp(sum(values) / num_q):.4f}"
        return f"{sum(values) / num_q:.4f}"

    for trec, pinned_default, pinned_complete in TREC_EVAL_ALL.values():
        values = [row[trec] for row in per_query.values()]
        assert all_value(trec, values, len(per_query)) == pinned_default, trec
        with_missing = [*values, missing.get(trec, 0.0)]
        assert all_value(trec, with_missing, len(qrels)) == pinned_complete, trec
    assert (str(len(per_query)), str(len(qrels))) == TREC_EVAL_NUM_Q


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
        ("ndcg@2.5", "whole number"),
        ("iprec", "needs a recall level from 0 to 1, e.g. iprec@0.10"),
        ("iprec_at_recall_1.5", "from 0 to 1 in steps of 0.01"),
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


def test_c_and_another_query_set_is_a_usage_error(files: Path) -> None:
    run = metrics(files, "-c", "--query-set", "ragsnap")
    assert_clean_failure(run, "UsageError")
    assert "-c and --query-set ragsnap ask for different query sets; pass only one" in run.err


@pytest.mark.parametrize(
    "args",
    [
        ["--qrels", "qrels.txt"],
        ["--qrels", "qrels.txt", "--run", "run.txt", "--digits", "x"],
        ["--qrels", "qrels.txt", "--run", "run.txt", "--digits", "-1"],
        ["--qrels", "qrels.txt", "--run", "run.txt", "--query-set", "all"],
    ],
    ids=["no-run", "digits-not-a-number", "negative-digits", "unknown-query-set"],
)
def test_argument_errors_exit_2_without_a_traceback(files: Path, args: list[str]) -> None:
    run = run_cli("metrics", *args, cwd=files)
    assert run.code == 2, run.err
    assert "Traceback" not in run.err
    assert run.out == ""


# ---------------------------------------------------------------- trec_eval's options and sets


def trec_name(measure: str) -> str:
    """trec_eval's name of a ragsnap measure of ``TREC_SETS`` (default parameters)."""
    simple = {
        "mrr": "recip_rank",
        "rprec": "Rprec",
        "infap": "infAP",
        "bing": "binG",
        "g": "G",
        "rndcg": "Rndcg",
        "set_precision": "set_P",
        "set_relative_precision": "set_relative_P",
        "set_f": "set_F",
    }
    name, _, param = measure.partition("@")
    prefix = {
        "precision": "P",
        "recall": "recall",
        "ndcg": "ndcg_cut",
        "map": "map_cut",
        "relative_precision": "relative_P",
        "hit": "success",
        "iprec": "iprec_at_recall",
        "rprec_mult": "Rprec_mult",
    }
    return f"{prefix[name]}_{param}" if param else simple.get(name, name)


def trec_eval_all(qrels_text: str, run_text: str, names: list[str], **options: int) -> list[str]:
    """trec_eval's ``all`` values of ``names`` (ragsnap measures), 4 decimals, from
    pytrec_eval's per-query values averaged by trec_eval's rules: added one after
    another in query id order, then divided by the number of queries (``gm_*``:
    pytrec_eval's per-query values are logarithms, whose mean is exponentiated)."""
    pytrec_eval = require_pytrec_eval()
    qrels = {q: {d: int(g) for d, g in j.items()} for q, j in parse_trec(qrels_text, 3).items()}
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {trec_name(n) for n in names}, **options)
    per_query = evaluator.evaluate(parse_trec(run_text, 4))
    out = []
    for name in names:
        trec = trec_name(name)
        total = 0.0
        for query in sorted(per_query, key=str.encode):
            total += per_query[query][trec]
        if trec.startswith("num_"):
            out.append(str(int(total)))
        elif trec.startswith("gm_"):
            out.append(f"{math.exp(total / len(per_query)):.4f}")
        else:
            out.append(f"{total / len(per_query):.4f}")
    return out


def test_m_all_trec_prints_trec_evals_all_trec_in_its_order(files: Path) -> None:
    lines = rows(metrics(files, "-m", "all_trec"))
    numeric = [n for n in TREC_SETS["all_trec"] if MEASURES[n.split("@")[0]].aggregate != "text"]
    assert lines[0] == ("runid", "all", "t")  # the tag of the run's last line
    assert [name for name, _, _ in lines[1:-2]] == numeric  # relstring is per query only
    assert [value for _, _, value in lines[1:-2]] == trec_eval_all(QRELS, RUN, numeric)
    assert lines[-2:] == [("num_q", "all", "4"), ("num_excluded", "all", "1")]
    # trec_eval 9.0.8's all_trec prints 94 lines: runid, num_q and 92 measures
    # (num_excluded is ragsnap's own)
    assert len(lines) - 1 == 94


def test_m_official_and_relstring_per_query(files: Path) -> None:
    lines = rows(metrics(files, "-m", "official", "-m", "relstring", "-q"))
    relstrings = [(query, value) for name, query, value in lines if name == "relstring"]
    # q1 ranks c (0), a (3), x (unjudged), b (1); q5 ranks k (0), m (unjudged)
    assert relstrings == [("q1", "'03-1'"), ("q10", "'-1'"), ("q3", "'0'"), ("q5", "'0-'")]
    alls = [name for name, query, _ in lines if query == "all"]
    assert alls == ["runid", *TREC_SETS["official"], "num_q", "num_excluded"]


def test_run_lines_with_fields_after_the_tag_are_read_as_trec_eval_reads_them(
    files: Path,
) -> None:
    """trec_eval reads six fields and skips the rest of the line (get_trec_results.c)."""
    plain = rows(metrics(files, "-m", "all_trec", "-q"))
    extended = RUN.replace("q1 Q0 a 2 3 t", "q1 Q0 a 2 3 t 0.93 extra\t#note")
    extended = extended.replace("q10 Q0 a 2 1 t", "q10 Q0 a 2 1 t more")
    (files / "run.txt").write_text(extended, encoding="utf-8")
    assert rows(metrics(files, "-m", "all_trec", "-q")) == plain
    (files / "run.txt").write_text(RUN.replace("q3 Q0 g 1 1 t", "q3 Q0 g 1 1"), encoding="utf-8")
    run = metrics(files)
    assert_clean_failure(run, "InputError")
    assert "line 5 has 5 fields, expected at least 6" in run.err


@pytest.mark.parametrize("level", [2, 3])
def test_l_sets_the_relevance_level_as_trec_eval_l(files: Path, level: int) -> None:
    names = [n for n in TREC_SETS["all_trec"] if n != "relstring"]
    lines = rows(metrics(files, "-m", "all_trec", "-l", str(level)))
    assert [value for _, _, value in lines[1:-2]] == trec_eval_all(
        QRELS, RUN, names, relevance_level=level
    )
    assert {n: v for n, _, v in lines}["num_rel"] == {2: "2", 3: "1"}[level]


def test_m_cuts_each_ranking_as_trec_eval_m(files: Path) -> None:
    names = [n for n in TREC_SETS["all_trec"] if n != "relstring"]
    lines = rows(metrics(files, "-m", "all_trec", "-M", "1"))
    first = "".join(  # each query's top result in trec_eval order: the first line here
        line + "\n"
        for i, line in enumerate(RUN.splitlines())
        if i == 0 or line.split()[0] != RUN.splitlines()[i - 1].split()[0]
    )
    assert [value for _, _, value in lines[1:-2]] == trec_eval_all(QRELS, first, names)
    assert {n: v for n, _, v in lines}["num_ret"] == "4"


IPREC_QRELS = "q 0 a 1\nq 0 c 1\nq 0 e 1\nq 0 g 1\nq 0 b 0\nq 0 d 0\nq 0 f 0\n"
IPREC_RUN = "".join(f"q Q0 {d} {i} {7 - i} t\n" for i, d in enumerate("abcdefg"))


def test_trec_eval_10_rounds_the_recall_levels_of_iprec_and_11pt_avg(tmp_path: Path) -> None:
    """R = 4, relevant at ranks 1, 3, 5, 7: at L = 0.3 trec_eval 9 needs floor(1.2 +
    0.9) = 2 relevant results (iprec 2/3), trec_eval 10 lround(1.2) = 1 (iprec 1)."""
    (tmp_path / "qrels.txt").write_text(IPREC_QRELS, encoding="utf-8")
    (tmp_path / "run.txt").write_text(IPREC_RUN, encoding="utf-8")
    asked = ["-m", "iprec_at_recall_0.30", "-m", "11pt_avg"]
    default = rows(metrics(tmp_path, *asked))
    # the best precision once 1, 2, 3 or 4 relevant results are in: 1, 2/3, 3/5, 4/7;
    # 9 needs 1, 1, 1, 2, 2, 2, 3, 3, 4, 4, 4 of them at L = 0.0 ... 1.0
    eleven = (3 * 1 + 3 * 2 / 3 + 2 * 3 / 5 + 3 * 4 / 7) / 11
    assert default[:2] == [("iprec@0.30", "all", "0.6667"), ("11pt_avg", "all", f"{eleven:.4f}")]
    assert rows(metrics(tmp_path, *asked, "--trec-eval", "9")) == default
    assert [v for _, _, v in default[:2]] == trec_eval_all(
        IPREC_QRELS, IPREC_RUN, ["iprec@0.30", "11pt_avg"]
    )
    ten = rows(metrics(tmp_path, *asked, "--trec-eval", "10"))
    # 10 needs 1, 1, 1, 1, 2, 2, 2, 3, 3, 4, 4 (lround of 0.0, 0.4, 0.8, 1.2 ... 4.0)
    eleven = (4 * 1 + 3 * 2 / 3 + 2 * 3 / 5 + 2 * 4 / 7) / 11
    assert ten[:2] == [("iprec@0.30", "all", "1.0000"), ("11pt_avg", "all", f"{eleven:.4f}")]


def test_all_trec_of_trec_eval_10_names_what_ragsnap_leaves_out(files: Path) -> None:
    run = metrics(files, "-m", "all_trec", "--trec-eval", "10")
    assert run.code == 0, run.err
    assert "rbp, rbp_resid, unj_5, unj_10, unj_20" in run.err
    assert "rbp" not in run.out
    assert metrics(files, "-m", "all_trec").err == ""


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-M", "0"], "-M 0: give at least 1 result per query"),
        (["-l", "two"], "invalid int value"),
        (["--trec-eval", "8"], "invalid choice"),
    ],
)
def test_trec_eval_option_errors_exit_2(files: Path, args: list[str], message: str) -> None:
    run = metrics(files, *args)
    assert run.code == 2, run.err
    assert "Traceback" not in run.err
    assert message in run.err


def _metrics_process(cwd: Path, setup: str) -> tuple[str, str]:
    """``ragsnap metrics`` on cwd's files in a fresh interpreter after ``setup``:
    its output, and whether numba was imported (last line of stderr)."""
    code = (
        f"import sys; import ragsnap.ir.trec as trec; {setup}; from ragsnap.cli import main; "
        "code = main(sys.argv[1:]); print('numba' in sys.modules, file=sys.stderr); "
        "sys.exit(code)"
    )
    argv = ["metrics", "--qrels", "qrels.txt", "--run", "run.txt", "-q", "-m", "all_trec"]
    env = {**os.environ, "PYTHONPATH": str(REPO / "eval")}
    done = subprocess.run(
        [sys.executable, "-c", code, *argv], cwd=cwd, capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr
    return done.stdout, done.stderr.splitlines()[-1]


def test_numba_loads_only_for_inputs_large_enough_to_repay_it(tmp_path: Path) -> None:
    """A 2 MB run (once above the compiled path's threshold) is evaluated without
    loading numba; told to take the kernels, a process prints the same bytes."""
    require_numba()
    lines = [
        f"q{q} Q0 d{(q * 7919 + r * 104729) % 50000} {r} {round(50 - r * 0.37, 2)} tag"
        for q in range(800)
        for r in range(1, 101)
    ]
    (tmp_path / "run.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    judged = [
        f"q{q} 0 d{(q * 7919 + r * 104729) % 50000} {r % 3}"
        for q in range(500)
        for r in (1, 4, 9, 30)
    ]
    (tmp_path / "qrels.txt").write_text("\n".join(judged) + "\n", encoding="utf-8")
    assert (tmp_path / "run.txt").stat().st_size > 2 << 20  # 2.2 MB
    out, numba = _metrics_process(tmp_path, "pass")
    assert numba == "False"
    compiled, numba = _metrics_process(tmp_path, "trec.COMPILED_FROM = 1 << 20")
    assert numba == "True"
    assert compiled == out
    assert out.count("\n") > 500

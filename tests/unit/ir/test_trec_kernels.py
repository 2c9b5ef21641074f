"""The compiled kernels (ragsnap.ir.trec_kernels) give exactly the numpy code's results.

numba is optional: without it these tests are skipped (they fail under CI=true), and ``ragsnap.ir.trec``
runs its numpy code (``tests/unit/ir/test_trec.py`` runs on both paths).
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conftest import require_numba
from ragsnap.cli import main
from ragsnap.ir import trec
from ragsnap.ir.metrics import TREC_SETS, Rankings, evaluate, parse_measures


@pytest.fixture(autouse=True)
def _numba() -> None:
    require_numba()  # skipped on a workstation without numba, a failure under CI=true


MEASURES = parse_measures(
    ["map", "ndcg@10", "recall@10", "precision@10", "mrr", "rprec", "bpref", "num_ret"]
    + [m for m in TREC_SETS["all_trec"] if m != "relstring"]
)


def messy_files(tmp_path: Path, seed: int, scores: str = "plain") -> tuple[Path, Path]:
    """A run and qrels with everything the readers and the ranking must get right.

    Ids of 1-40 bytes (across 8-byte words), non-ASCII ids; queries whose
    lines are split into several blocks apart in the file; duplicate
    documents (the first line wins); tie groups of 2, of a few and of
    hundreds (beyond the insertion sort's budget); lines in reverse score
    order; blank lines, tabs and CRLF; fields after the tag (trec_eval
    ignores them); duplicate judgments, negative grades and judged queries
    missing from the run. ``scores`` "mixed" adds spellings the fast parser
    leaves to numpy (``1e-3``, ``+2``, 17 digits).
    """
    rng = random.Random(seed)
    docs = (
        [f"d{i}" for i in range(300)]
        + ["x" * n for n in (7, 8, 9, 15, 16, 17, 24, 25, 40)]
        + ["é" * 5, "doc-é-ü", "日本語"]
    )
    queries = [f"q{i}" for i in range(40)] + ["query-with-a-long-name-" + "z" * 20, "é"]
    run_lines: list[str] = []
    qrels_lines: list[str] = []
    for n, query in enumerate(queries):
        chosen = rng.sample(docs, rng.randint(1, 250))
        kind = n % 5
        if kind == 0:  # one big tie group
            values = [1.0] * len(chosen)
        elif kind == 1:  # reverse order
            values = sorted(rng.uniform(0, 5) for _ in chosen)
        elif kind == 2:  # few distinct values, shuffled: many tie groups
            values = [float(rng.randint(0, 3)) for _ in chosen]
        else:  # descending, rounded: some ties
            values = sorted((round(rng.uniform(0, 20), 1) for _ in chosen), reverse=True)
        lines = [
            f"{query} Q0 {d} {i + 1} {v} tag" + (" more fields-after-the-tag" if i % 9 == 4 else "")
            for i, (d, v) in enumerate(zip(chosen, values, strict=True))
        ]
        lines += [f"{query} Q0 {d} 99 {rng.choice(values)} tag" for d in rng.choices(chosen, k=3)]
        if scores == "mixed" and n % 7 == 3:
            lines += [f"{query} Q0 mixed{n} 1 1e-3 t", f"{query} Q0 plus{n} 1 +2 t"]
            lines += [f"{query} Q0 long{n} 1 12345678901234567 t"]
        cut = rng.randint(0, len(lines))
        run_lines.append("\n".join(lines[:cut]))
        run_lines.append("\n".join(lines[cut:]))
        judged = rng.sample(chosen, min(len(chosen), rng.randint(1, 30)))
        judged += rng.sample(docs, 5)  # some never retrieved, some judged twice
        qrels_lines += [f"{query} 0 {d} {rng.choice((0, 0, 1, 2, 3, -1))}" for d in judged]
    qrels_lines += [f"absent-{i} 0 d{i} 1" for i in range(5)]
    rng.shuffle(run_lines)  # a query's blocks end up apart
    rng.shuffle(qrels_lines)
    run_text = "\n\n".join(part for part in run_lines if part).replace("Q0 d1 ", "Q0\td1\t")
    run_path = tmp_path / f"run-{seed}"
    qrels_path = tmp_path / f"qrels-{seed}"
    run_path.write_bytes((run_text + "\r\n").encode("utf-8"))
    qrels_path.write_bytes(("\n".join(qrels_lines)).encode("utf-8"))  # no final newline
    return qrels_path, run_path


def both(monkeypatch: pytest.MonkeyPatch, call: Any) -> tuple[Any, Any]:
    monkeypatch.setattr(trec, "COMPILED_FROM", None)
    slow = call()
    monkeypatch.setattr(trec, "COMPILED_FROM", 0)
    fast = call()
    return slow, fast


def assert_same_arrays(left: Any, right: Any) -> None:
    for name in left.__dataclass_fields__:
        a, b = getattr(left, name), getattr(right, name)
        if isinstance(a, np.ndarray):
            assert a.dtype == b.dtype, name
            assert a.shape == b.shape, name
            assert np.array_equal(a, b), name
        else:
            assert a == b, name


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("scores", ["plain", "mixed"])
@pytest.mark.parametrize("query_set", ["ragsnap", "trec", "complete"])
@pytest.mark.parametrize("level", [1, 2])
def test_compiled_and_numpy_paths_give_identical_results(
    seed: int,
    scores: str,
    query_set: str,
    level: int,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    qrels_path, run_path = messy_files(tmp_path, seed, scores)
    qrels = both(monkeypatch, lambda: trec.read_qrels(qrels_path))
    run = both(monkeypatch, lambda: trec.read_run(run_path))
    assert_same_arrays(*qrels)
    assert_same_arrays(*run)
    assert run[0].score.size > 1000
    slow, fast = both(
        monkeypatch, lambda: trec.rankings_from_trec(qrels[0], run[0], query_set, level)
    )
    assert isinstance(fast, Rankings)
    assert_same_arrays(slow, fast)
    assert int(fast.judged.sum()) > 100
    for rule in ("9", "10"):
        slow_values, fast_values = evaluate(slow, MEASURES, rule), evaluate(fast, MEASURES, rule)
        for measure in MEASURES:
            assert np.array_equal(slow_values[measure], fast_values[measure]), measure
    cut_slow, cut_fast = evaluate(slow.cut(7), MEASURES), evaluate(fast.cut(7), MEASURES)
    for measure in MEASURES:
        assert np.array_equal(cut_slow[measure], cut_fast[measure]), measure


def test_duplicates_can_shorten_every_ranking(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When every query's longest run of lines holds duplicates, the matrices
    are as wide as the longest de-duplicated ranking, on both paths."""
    run = tmp_path / "r"
    run.write_text("q Q0 a 1 3 t\nq Q0 b 2 2 t\nq Q0 a 3 1 t\nr Q0 c 1 1 t\n")
    qrels = tmp_path / "q"
    qrels.write_text("q 0 b 1\nr 0 c 2\n")
    slow, fast = both(
        monkeypatch, lambda: trec.rankings_from_trec(trec.read_qrels(qrels), trec.read_run(run))
    )
    assert_same_arrays(slow, fast)
    assert fast.grades.tolist() == [[0, 1], [2, 0]]
    assert fast.grades.flags.c_contiguous


def test_small_inputs_use_numpy_unless_told_otherwise() -> None:
    assert trec.COMPILED_FROM is not None
    assert trec._kernels(trec.COMPILED_FROM - 1) is None
    assert trec._kernels(trec.COMPILED_FROM) is not None


@pytest.mark.parametrize(
    "options",
    [[], ["-q", "-m", "all_trec", "-l", "2", "-M", "7", "--trec-eval", "10", "-c"]],
    ids=["default", "all_trec"],
)
def test_either_side_of_the_size_threshold_prints_the_same_bytes(
    options: list[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``ragsnap metrics`` takes the numpy code below ``COMPILED_FROM`` bytes of
    input and the kernels from it; its output is the same, byte for byte."""
    qrels_path, run_path = messy_files(tmp_path, 4, "mixed")
    total = qrels_path.stat().st_size + run_path.stat().st_size
    printed = []
    for threshold, compiled in ((total + 1, False), (total, True)):
        monkeypatch.setattr(trec, "COMPILED_FROM", threshold)
        assert trec.compiled_for(qrels_path, run_path) is compiled
        argv = ["metrics", "--qrels", str(qrels_path), "--run", str(run_path), *options]
        assert main([*argv, "--digits", "17"]) == 0
        printed.append(capsys.readouterr())
    assert printed[0].out == printed[1].out
    assert printed[0].err == printed[1].err
    assert printed[0].out.count("\n") > 10


def test_small_files_take_numpy_and_a_pipe_leaves_the_choice_to_each_step(
    tmp_path: Path,
) -> None:
    qrels_path, run_path = messy_files(tmp_path, 5, "plain")
    assert trec.compiled_for(qrels_path, run_path) is False  # a few hundred kB
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    assert trec.compiled_for(qrels_path, pipe) is None


def test_loading_the_kernels_skips_scipy_and_leaves_it_importable(tmp_path: Path) -> None:
    """In a fresh single-threaded process the kernels load without importing
    scipy.linalg; afterwards scipy.linalg imports, and numba's np.dot works."""
    pytest.importorskip("scipy.linalg")  # numba's BLAS comes from scipy
    code = """
import sys
import numba
import numpy as np
from ragsnap.ir import trec
assert trec._load_kernels() is not None
print("scipy.linalg" in sys.modules, "scipy.linalg.cython_blas" in sys.modules)
import scipy.linalg
dot = numba.njit(lambda a, b: np.dot(a, b))
print(dot(np.ones(3), np.ones(3)), scipy.linalg.norm(np.ones(4)))
"""
    env = {**os.environ, "PYTHONPATH": str(Path(trec.__file__).parents[2])}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["False False", "3.0 2.0"]

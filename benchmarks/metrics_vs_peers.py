#!/usr/bin/env python3
"""Benchmark ragsnap's TREC evaluation against pytrec_eval (and ranx), from 10k to 300k queries.

Since issue 44 the verdict is on whole processes: ``python -m ragsnap metrics``
against a pytrec_eval script (``PEER_SCRIPT``: its own readers, or a lean
reader, whichever takes less CPU), each size's sides run as separate processes
after one untimed warm-up run each, ``--repeat`` rounds in a new random order
each, CPU time (user + system, ``os.wait4``) beside wall time and peak RSS, the
load average before and after. The targets (``PROCESS_TARGETS``): ragsnap's CPU
at most 0.8 x the peer's at 10,000 queries and 0.35 x at 100,000. ``--before
DIR`` times another checkout's ``ragsnap metrics`` in the same rounds;
``--paths`` times it forced onto each code path (numpy, compiled).

With ``--in-process``, the measurement of issue 17 below runs as well, for
information:

All tools read the same qrels and run files and compute the same six
measures per query and their means: map, ndcg@10 (``ndcg_cut_10``),
recall@10, precision@10 (``P_10``), mrr (``recip_rank``) and rprec
(``Rprec``). The targets, at 100,000 and at 300,000 queries (``TARGET_SIZES``,
100 results each): ragsnap, end to end from the files, takes at most
``TARGET_RATIO`` times pytrec_eval's end-to-end time, with identical values;
and ragsnap's time grows linearly with the run (from 100k to 300k queries at
most ``LINEAR_SLACK`` times the growth of the data).

pytrec_eval is the peer in its fastest usual configuration: it is timed with
its own readers (``parse_qrel`` + ``parse_run``) and with a lean plain-Python
reader (the loop a user writes, without ``parse_run``'s per-line ``strip``,
``assert`` and ``defaultdict``), each followed by ``RelevanceEvaluator`` +
``evaluate`` + the means, and the faster of the two medians is the reference.
Its C evaluation step alone (``evaluate(run)``) is reported for information.
If pytrec_eval cannot run, the benchmark stops with exit status 2 rather than
compare with a weaker peer.

For each size in ``--sizes``:

1. Generate, deterministically from ``--seed``, a run of that many queries
   x ``--docs`` results as a retrieval system writes it (each query's lines
   together, ranks 1..n, scores non-increasing and rounded to 2 decimals so
   that many are tied, doc ids of varied length) and qrels with ~10 graded
   judgments per query, some judged relevant documents never retrieved, ~2%
   of queries judged with grade 0 only and ~1% judged queries absent from
   the run.
2. Run each tool once in its own subprocess (``--one TOOL``) for its peak
   RSS (``VmHWM``); ranx a second time with an empty numba cache for its
   cold start.
3. In this process: one first call of each tool (ranx's includes loading its
   numba kernels, ragsnap's loading its own), the value checks on those
   results, then ``--repeat`` timed rounds with the order of the sides
   rotating and a ``gc.collect()`` before each run.
4. Print the table (medians, ratios to the pytrec_eval reference, peak RSS)
   and the value checks; with ``--profile``, a cProfile of one more ragsnap
   run.

ranx runs only at sizes up to ``RANX_MAX_QUERIES`` (its memory grows ~75 MB
per 1,000 queries: 300k would not fit in 24 GB), and not at all with
``--no-ranx``. At the end: the curve (every size's times, ratios and
ragsnap's time per million lines), the CPU model, and PASS/FAIL. For the
single-core figure run the whole script under ``taskset -c 0``; the output
says how many cores were usable.

Usage::

    python benchmarks/metrics_vs_peers.py [--sizes 10000,30000,100000,300000] [--docs 100]
                                          [--repeat 3] [--before DIR] [--paths]
                                          [--in-process] [--no-ranx] [--workdir DIR]
                                          [--seed N] [--keep] [--profile]

With ``--workdir`` the files are generated in ``DIR/q<size>`` (or reused
when they were generated there with the same settings) and never deleted;
otherwise they go to a fresh temporary folder that is deleted at the end
unless ``--keep``.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import importlib
import importlib.util
import json
import os
import platform
import pstats
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from _common import (
    add_folder_options,
    cpu_model,
    parse_sizes,
    peak_rss_mb,
    version,
    work_folder,
)

TARGET_RATIO = 0.5
#: The sizes (queries) at which the targets are checked; both must be measured.
TARGET_SIZES = (100_000, 300_000)
#: Linear time: ragsnap's time at the largest target size over its time at the
#: smallest may exceed the ratio of their sizes by at most this factor.
LINEAR_SLACK = 1.25
#: ranx is run at sizes up to this many queries (its peak RSS is ~7.5 GB at 100k).
RANX_MAX_QUERIES = 100_000
DEFAULT_SIZES = (10_000, 30_000, 100_000, 300_000)
TOLERANCE = 1e-9
DEFAULT_SEED = 20261129
#: Bump when the generated data changes, so a reused --workdir is regenerated.
GENERATOR_VERSION = 1

RUN_FILE = Path("run.trec")
QRELS_FILE = Path("qrels.trec")
MANIFEST = Path("benchmark.json")

#: The same six measures in each tool's spelling: (ragsnap, pytrec_eval, ranx).
MEASURES = (
    ("map", "map", "map"),
    ("ndcg@10", "ndcg_cut_10", "ndcg@10"),
    ("recall@10", "recall_10", "recall@10"),
    ("precision@10", "P_10", "precision@10"),
    ("mrr", "recip_rank", "mrr"),
    ("rprec", "Rprec", "r-precision"),
)
RAGSNAP_NAMES = tuple(m[0] for m in MEASURES)
PYTREC_NAMES = tuple(m[1] for m in MEASURES)
RANX_NAMES = tuple(m[2] for m in MEASURES)

TOOLS = ("pytrec_eval", "ragsnap", "ranx")
MODULES = {"pytrec_eval": "pytrec_eval", "ragsnap": "ragsnap.ir.trec", "ranx": "ranx"}

# --------------------------------------------------------------------------- generator

#: Unretrieved candidates drawn per query (judged but never retrieved documents).
EXTRA = 16
VOCABULARY_DOC = 1_700_000  # doc0 .. doc9999999, 1-7 digits
VOCABULARY_MSMARCO = 300_000  # msmarco_passage_SS_OFFSET, 24-34 characters
TAG = b"bm25-rm3"
QUERIES_PER_CHUNK = 10_000
ZERO_ONLY_SHARE = 0.02
ABSENT_SHARE = 0.01
GRADE_WEIGHTS = (0.5, 0.3, 0.2)  # grades 1, 2, 3 among relevant judgments


def _doc_vocabulary(rng: np.random.Generator) -> npt.NDArray[np.bytes_]:
    """Distinct document ids: ``doc`` + 1-7 digits, and MS MARCO v2 passage ids."""
    short = np.arange(100_000)  # every 1-5 digit number, so short ids occur too
    long = 100_000 + rng.permutation(9_900_000)[: VOCABULARY_DOC - short.size]
    doc = np.char.add(np.array([b"doc"]), np.concatenate([short, long]).astype("S7"))
    codes = np.unique(rng.integers(0, 70 * 10**9, VOCABULARY_MSMARCO + 1000))
    codes = rng.permutation(codes)[:VOCABULARY_MSMARCO]
    shard = np.char.zfill((codes // 10**9).astype("S2"), 2)
    offset = (codes % 10**9).astype("S9")
    msmarco = np.char.add(np.char.add(np.array([b"msmarco_passage_"]), shard), b"_")
    msmarco = np.char.add(msmarco, offset)
    width = max(doc.dtype.itemsize, msmarco.dtype.itemsize)
    return np.concatenate([doc.astype(f"S{width}"), msmarco.astype(f"S{width}")])


def _distinct_rows(
    rng: np.random.Generator, rows: int, width: int, high: int
) -> npt.NDArray[np.int64]:
    """``rows`` x ``width`` random ints below ``high``, distinct within each row."""
    picks = rng.integers(0, high, size=(rows, width))
    while True:
        ordered = np.sort(picks, axis=1)
        bad = np.flatnonzero((ordered[:, 1:] == ordered[:, :-1]).any(axis=1))
        if bad.size == 0:
            return picks
        picks[bad] = rng.integers(0, high, size=(bad.size, width))


def _graded(rng: np.random.Generator, p_relevant: npt.NDArray[np.float64]) -> npt.NDArray[np.int64]:
    """Grades 0-3: relevant with probability ``p_relevant``, then 1/2/3 by GRADE_WEIGHTS."""
    relevant = rng.random(p_relevant.shape) < p_relevant
    level = rng.choice(np.array([1, 2, 3]), size=p_relevant.shape, p=GRADE_WEIGHTS)
    return np.where(relevant, level, 0).astype(np.int64)


def _matrix(values: npt.NDArray[np.bytes_]) -> npt.NDArray[np.uint8]:
    """A byte-string array as one row of bytes per value (NUL-padded)."""
    values = np.ascontiguousarray(values)
    return values.view(np.uint8).reshape(values.size, values.dtype.itemsize)


def _lines(columns: Sequence[npt.NDArray[np.bytes_] | bytes], rows: int) -> bytes:
    """Join columns (arrays of ``rows`` values, or constant separators) into lines.

    The columns are laid side by side as one byte matrix and the NUL padding
    is dropped, so a chunk of a million lines costs a few numpy operations.
    """
    parts = [
        np.broadcast_to(np.frombuffer(c, dtype=np.uint8), (rows, len(c)))
        if isinstance(c, bytes)
        else _matrix(c)
        for c in columns
    ]
    flat = np.concatenate(parts, axis=1).ravel()
    return flat[flat != 0].tobytes()


def generate(queries: int, docs: int, seed: int) -> dict[str, Any]:
    """Write RUN_FILE and QRELS_FILE in the current folder; return facts about them."""
    rng = np.random.default_rng(seed)
    vocabulary = _doc_vocabulary(rng)
    absent = round(ABSENT_SHARE * queries)
    total = queries + absent

    # query ids q1..q999999, listed in numeric order; `absent` of them are judged only
    numbers = np.sort(rng.permutation(np.arange(1, max(1_000_000, 10 * total)))[:total])
    query_ids = np.char.add(np.array([b"q"]), numbers.astype("S7"))
    in_run = np.ones(total, dtype=bool)
    in_run[rng.choice(total, absent, replace=False)] = False
    run_rows = np.flatnonzero(in_run)

    # documents: `docs` retrieved + EXTRA never-retrieved candidates, distinct per query
    picks = _distinct_rows(rng, total, docs + EXTRA, vocabulary.size)

    # scores: gaps shrink with depth, rounded to cents, so ties grow deeper in the list
    gap_mean = 0.02 + 0.12 * np.exp(-np.arange(docs - 1) / 20.0)
    gaps = rng.exponential(1.0, size=(queries, docs - 1)) * gap_mean
    raw = rng.uniform(12.0, 40.0, size=(queries, 1)) - np.concatenate(
        [np.zeros((queries, 1)), np.cumsum(gaps, axis=1)], axis=1
    )
    cents = np.maximum(np.rint(raw * 100.0).astype(np.int64), 0)  # monotone: stays sorted
    score_text = (np.arange(int(cents.max()) + 1) / 100.0).astype("S8")

    # judgments: ~10 per query, retrieved ones drawn towards the top, 20% never retrieved
    judged = np.zeros((total, docs + EXTRA), dtype=bool)
    grades = np.zeros((total, docs + EXTRA), dtype=np.int64)
    count = rng.integers(6, 15, size=total)
    outside = np.minimum(rng.binomial(count, 0.2), EXTRA)
    outside[~in_run] = count[~in_run]
    inside = count - outside
    position = np.arange(docs)
    weight = np.log(1.0 / (position + 1.0) ** 0.6)
    by_pool = np.argsort(-(weight + rng.gumbel(size=(total, docs))), axis=1)
    pooled = np.zeros((total, docs), dtype=bool)
    np.put_along_axis(pooled, by_pool, np.arange(docs) < inside[:, None], axis=1)
    judged[:, :docs] = pooled & in_run[:, None]
    judged[:, docs:] = np.arange(EXTRA) < outside[:, None]
    p_relevant = np.concatenate(
        [
            np.broadcast_to(0.08 + 0.6 * np.exp(-position / 12.0), (total, docs)),
            np.full((total, EXTRA), 0.3),
        ],
        axis=1,
    )
    grades[judged] = _graded(rng, p_relevant[judged])
    zero_only = rng.choice(run_rows, round(ZERO_ONLY_SHARE * queries), replace=False)
    grades[zero_only] = 0
    needs_one = np.ones(total, dtype=bool)
    needs_one[zero_only] = False
    needs_one &= ~((grades >= 1) & judged).any(axis=1)
    first_judged = judged.argmax(axis=1)
    grades[np.flatnonzero(needs_one), first_judged[needs_one]] = 1

    # qrels: each query's judgments together, in an arbitrary (vocabulary) order
    row, col = np.nonzero(judged)
    order = np.lexsort((picks[row, col], row))
    row, col = row[order], col[order]
    grade_text = np.array([b"0", b"1", b"2", b"3"])
    qrels_bytes = _lines(
        [
            query_ids[row],
            b" 0 ",
            vocabulary[picks[row, col]],
            b" ",
            grade_text[grades[row, col]],
            b"\n",
        ],
        row.size,
    )
    QRELS_FILE.write_bytes(qrels_bytes)

    # the run, in chunks of queries; lines in rank order, tied documents in system order
    rank_text = np.arange(1, docs + 1).astype(f"S{len(str(docs))}")
    run_size = 0
    with RUN_FILE.open("wb") as handle:
        for start in range(0, queries, QUERIES_PER_CHUNK):
            rows = run_rows[start : start + QUERIES_PER_CHUNK]
            lines = rows.size * docs
            chunk = _lines(
                [
                    np.repeat(query_ids[rows], docs),
                    b" Q0 ",
                    vocabulary[picks[rows, :docs]].ravel(),
                    b" ",
                    np.tile(rank_text, rows.size),
                    b" ",
                    score_text[cents[start : start + rows.size]].ravel(),
                    b" " + TAG + b"\n",
                ],
                lines,
            )
            handle.write(chunk)
            run_size += len(chunk)

    relevant = (grades >= 1) & judged
    tied = cents[:, 1:] == cents[:, :-1]
    doc_lengths = np.char.str_len(vocabulary[picks[run_rows, :docs]])
    return {
        "run_lines": queries * docs,
        "run_mb": round(run_size / 1e6, 1),
        "qrels_lines": int(judged.sum()),
        "qrels_mb": round(len(qrels_bytes) / 1e6, 1),
        "judged_queries": total,
        "judged_per_query": round(float(count.mean()), 2),
        "relevant_judgments": int(relevant.sum()),
        "relevant_never_retrieved": int(relevant[:, docs:].sum()),
        "zero_only_queries": int(zero_only.size),
        "absent_from_run": absent,
        "tied_adjacent_pairs": round(float(tied.mean()), 3),
        "queries_with_tie_in_top_10": int(tied[:, :9].any(axis=1).sum()),
        "doc_id_length": [int(doc_lengths.min()), int(doc_lengths.max())],
    }


# --------------------------------------------------------------------------- the sides


@dataclass
class Outcome:
    """One end-to-end run of a side: timings, means, and what it built (kept so
    that freeing it happens after the clock stops, for every tool alike)."""

    total: float
    phases: dict[str, float]
    means: dict[str, float]
    kept: tuple[Any, ...] = field(default=(), repr=False)


def _pytrec_evaluate(
    start: float, parsed: float, qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]]
) -> Outcome:
    """pytrec_eval's evaluation of parsed dicts, each step timed (``start`` and
    ``parsed`` are the clock before and after reading)."""
    import pytrec_eval

    evaluator = pytrec_eval.RelevanceEvaluator(qrels, PYTREC_NAMES)
    built = time.perf_counter()
    per_query = evaluator.evaluate(run)
    evaluated = time.perf_counter()
    means = {
        m: pytrec_eval.compute_aggregated_measure(m, [v[m] for v in per_query.values()])
        for m in PYTREC_NAMES
    }
    end = time.perf_counter()
    phases = {
        "parse": parsed - start,
        "evaluator": built - parsed,
        "evaluate": evaluated - built,
        "means": end - evaluated,
    }
    return Outcome(end - start, phases, means, (qrels, run, evaluator, per_query))


def run_pytrec_eval(qrels_path: Path, run_path: Path) -> Outcome:
    """pytrec_eval: ``parse_qrel`` + ``parse_run``, then ``RelevanceEvaluator`` +
    ``evaluate`` + means."""
    import pytrec_eval

    start = time.perf_counter()
    with qrels_path.open() as handle:
        qrels = pytrec_eval.parse_qrel(handle)
    with run_path.open() as handle:
        run = pytrec_eval.parse_run(handle)
    return _pytrec_evaluate(start, time.perf_counter(), qrels, run)


def run_pytrec_lean(qrels_path: Path, run_path: Path) -> Outcome:
    """pytrec_eval with a lean plain-Python reader (one ``split`` per line, no
    ``strip``, ``assert`` or ``defaultdict``), then the same evaluation."""
    start = time.perf_counter()
    qrels: dict[str, dict[str, int]] = {}
    with qrels_path.open() as handle:
        for line in handle:
            query, _, doc, grade = line.split()
            judged = qrels.get(query)
            if judged is None:
                judged = qrels[query] = {}
            judged[doc] = int(grade)
    run: dict[str, dict[str, float]] = {}
    with run_path.open() as handle:
        for line in handle:
            query, _, doc, _, score, _ = line.split()
            ranked = run.get(query)
            if ranked is None:
                ranked = run[query] = {}
            ranked[doc] = float(score)
    return _pytrec_evaluate(start, time.perf_counter(), qrels, run)


def check_pytrec_eval() -> str:
    """pytrec_eval's version after one tiny evaluation; exit 2 if it cannot run."""
    try:
        import pytrec_eval

        evaluator = pytrec_eval.RelevanceEvaluator({"q": {"d": 1}}, {"map"})
        value = evaluator.evaluate({"q": {"d": 1.0, "e": 0.5}})["q"]["map"]
    except Exception as exc:  # any failure means the peer is missing or broken
        problem = f"cannot run ({type(exc).__name__}: {exc})"
    else:
        if value == 1.0:
            return version("pytrec-eval-terrier")
        problem = f"gave map {value} for a perfect run"
    print(
        f"metrics_vs_peers: FAIL: the peer pytrec_eval {problem}; install a working "
        "pytrec-eval-terrier (pip install pytrec-eval-terrier): this benchmark does not "
        "compare with a weaker peer",
        file=sys.stderr,
    )
    raise SystemExit(2)


def run_ragsnap(qrels_path: Path, run_path: Path) -> Outcome:
    """ragsnap: ``evaluate_files`` + the means."""
    from ragsnap.ir.metrics import parse_measures
    from ragsnap.ir.trec import evaluate_files

    start = time.perf_counter()
    rankings, values = evaluate_files(qrels_path, run_path, parse_measures(RAGSNAP_NAMES))
    means = {str(m): float(v.mean()) if v.size else 0.0 for m, v in values.items()}
    end = time.perf_counter()
    return Outcome(end - start, {}, means, (rankings, values))


def run_ragsnap_phases(qrels_path: Path, run_path: Path) -> Outcome:
    """ragsnap again, the same calls ``evaluate_files`` makes, with each phase timed."""
    from ragsnap.ir.metrics import evaluate, parse_measures
    from ragsnap.ir.trec import rankings_from_trec, read_qrels, read_run

    start = time.perf_counter()
    qrels, run = read_qrels(qrels_path), read_run(run_path)
    read = time.perf_counter()
    rankings = rankings_from_trec(qrels, run)
    ranked = time.perf_counter()
    values = evaluate(rankings, parse_measures(RAGSNAP_NAMES))
    means = {str(m): float(v.mean()) if v.size else 0.0 for m, v in values.items()}
    end = time.perf_counter()
    phases = {"read": read - start, "rankings": ranked - read, "evaluate": end - ranked}
    return Outcome(end - start, phases, means, (qrels, run, rankings, values))


def run_ranx(qrels_path: Path, run_path: Path) -> Outcome:
    """ranx: ``Qrels.from_file`` + ``Run.from_file``, then ``evaluate(make_comparable=True)``.

    ``make_comparable`` is needed because ~1% of the judged queries are absent
    from the run (ranx refuses differing query sets otherwise); ranx then
    scores those queries 0 and, like its default, stores per-query scores in
    the run.
    """
    from ranx import Qrels, Run, evaluate

    start = time.perf_counter()
    qrels = Qrels.from_file(str(qrels_path), kind="trec")
    run = Run.from_file(str(run_path), kind="trec")
    loaded = time.perf_counter()
    with warnings.catch_warnings():  # numba: "unsafe cast from uint64 to int64", per call
        warnings.simplefilter("ignore")
        means = evaluate(qrels, run, list(RANX_NAMES), make_comparable=True)
    end = time.perf_counter()
    phases = {"load": loaded - start, "evaluate": end - loaded}
    return Outcome(end - start, phases, {m: float(v) for m, v in means.items()}, (qrels, run))


SIDES: dict[str, Callable[[Path, Path], Outcome]] = {
    "pytrec_eval": run_pytrec_eval,
    "pytrec_eval lean": run_pytrec_lean,
    "ragsnap": run_ragsnap,
    "ragsnap phases": run_ragsnap_phases,
    "ranx": run_ranx,
}


def measured(side: str) -> Outcome:
    """Run a side after a full garbage collection."""
    gc.collect()
    return SIDES[side](QRELS_FILE, RUN_FILE)


# --------------------------------------------------------------------------- peak memory


def one(tool: str) -> None:
    """``--one TOOL``: run one tool once in this fresh process and print a JSON line.

    Peak memory is the process's peak RSS (``peak_rss_mb``; tracemalloc would
    miss the C/C++ allocations of pytrec_eval and numba), read at the start,
    after the imports and at the end.
    """
    before = peak_rss_mb()
    start = time.perf_counter()
    importlib.import_module(MODULES[tool])
    imported = time.perf_counter()
    after_imports = peak_rss_mb()
    outcome = measured(tool)
    result = {
        "tool": tool,
        "import_s": imported - start,
        "seconds": outcome.total,
        "phases": outcome.phases,
        "rss_start_mb": before,
        "rss_imports_mb": after_imports,
        "peak_rss_mb": peak_rss_mb(),
    }
    print(json.dumps(result))


def in_subprocess(tool: str, workdir: Path, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run ``--one TOOL`` in a new interpreter and return its JSON line."""
    argv = [sys.executable, str(Path(__file__).resolve()), "--one", tool, "--workdir", str(workdir)]
    done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise SystemExit(f"--one {tool} failed (exit {done.returncode}):\n{done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


# --------------------------------------------------------------------------- value checks


@dataclass
class Check:
    """Lines to print and whether ragsnap agrees with pytrec_eval."""

    ragsnap_identical: bool
    lines: list[str]


def _zero_only(qrels: dict[str, dict[str, int]]) -> set[str]:
    return {q for q, judged in qrels.items() if not any(g >= 1 for g in judged.values())}


def check_values(pytrec: Outcome, ragsnap: Outcome, ranx: Outcome | None) -> Check:
    """Compare per query and measure; account for each tool's query set."""
    qrels, run, _, per_query = pytrec.kept
    rankings, values = ragsnap.kept
    lines: list[str] = []
    ok = True

    # which queries each tool evaluates
    evaluated_p = set(per_query)  # pytrec_eval: queries in the run and in the qrels
    evaluated_r = set(rankings.query_ids)  # ragsnap: judged queries with a relevant document
    zero_only = _zero_only(qrels)
    absent = set(qrels) - set(run)
    only_p, only_r = evaluated_p - evaluated_r, evaluated_r - evaluated_p
    zeros_p = all(per_query[q][m] == 0.0 for q in only_p for m in PYTREC_NAMES)
    row = {q: i for i, q in enumerate(rankings.query_ids)}
    only_r_rows = np.array(sorted(row[q] for q in only_r), dtype=np.int64)
    zeros_r = all(not np.any(values[m][only_r_rows]) for m in values)
    sets_ok = (
        only_p == zero_only & set(run)
        and only_r == absent - zero_only
        and set(rankings.excluded) == zero_only
        and zeros_p
        and zeros_r
    )
    ok &= sets_ok
    lines.append(
        f"Query sets: pytrec_eval {len(evaluated_p):,}, ragsnap {len(evaluated_r):,} "
        f"(+{len(rankings.excluded):,} excluded); in common {len(evaluated_p & evaluated_r):,}."
    )
    lines.append(
        f"  pytrec_eval only: {len(only_p):,} = the queries judged with grade 0 only "
        f"(ragsnap excludes them), all 0 in pytrec_eval: {zeros_p}"
    )
    lines.append(
        f"  ragsnap only: {len(only_r):,} = the judged queries absent from the run "
        f"(pytrec_eval skips them), all 0 in ragsnap: {zeros_r}"
    )
    lines.append(f"  as expected: {'yes' if sets_ok else 'NO'}")

    # per query, on the common queries
    common = sorted(evaluated_p & evaluated_r)
    common_rows = np.array([row[q] for q in common], dtype=np.int64)
    lines.append(f"ragsnap vs pytrec_eval, {len(common):,} common queries, |diff| <= {TOLERANCE}:")
    for ours, theirs, _ in MEASURES:
        mine = values[_measure(values, ours)][common_rows]
        ref = np.array([per_query[q][theirs] for q in common])
        bad = int((np.abs(mine - ref) > TOLERANCE).sum())
        ok &= bad == 0
        # means: ragsnap over its queries; pytrec_eval's sum over ragsnap's count
        ref_sum = sum(per_query[q][theirs] for q in evaluated_p)
        mean_r = ragsnap.means[ours]
        reconciled = abs(ref_sum / len(evaluated_r) - mean_r) <= TOLERANCE
        ok &= reconciled
        lines.append(
            f"  {ours:<13} differing {bad:>6,}  max |diff| {np.abs(mine - ref).max():.1e}  "
            f"mean: ragsnap {mean_r:.6f}, pytrec_eval {pytrec.means[theirs]:.6f} over its "
            f"{len(evaluated_p):,}, = {ref_sum / len(evaluated_r):.6f} over ragsnap's "
            f"{len(evaluated_r):,} ({'ok' if reconciled else 'MISMATCH'})"
        )

    if ranx is not None:
        lines.extend(_check_ranx(ranx, qrels, run, per_query, pytrec))
    return Check(ok, lines)


def _check_ranx(
    ranx: Outcome,
    qrels: dict[str, dict[str, int]],
    run: dict[str, dict[str, float]],
    per_query: dict[str, dict[str, float]],
    pytrec: Outcome,
) -> list[str]:
    """ranx against pytrec_eval, on pytrec_eval's queries (for information)."""
    ranx_qrels, ranx_run = ranx.kept
    evaluated_p = set(per_query)
    lines: list[str] = []
    ranx_scores = ranx_run.scores
    queries = sorted(evaluated_p)
    differing: set[str] = set()
    lines.append(f"ranx vs pytrec_eval, {len(queries):,} queries pytrec_eval evaluates:")
    for _, theirs, name in MEASURES:
        mine = np.array([ranx_scores[name][q] for q in queries])
        ref = np.array([per_query[q][theirs] for q in queries])
        bad = np.abs(mine - ref) > TOLERANCE
        differing |= {q for q, b in zip(queries, bad, strict=True) if b}
        lines.append(
            f"  {name:<13} differing {int(bad.sum()):>6,}  max |diff| "
            f"{np.abs(mine - ref).max():.1e}  mean: ranx {ranx.means[name]:.6f} over its "
            f"{len(ranx_qrels):,}, pytrec_eval {pytrec.means[theirs]:.6f}"
        )
    extra = set(ranx_qrels.keys()) - evaluated_p
    zeros_x = all(ranx_scores[n][q] == 0.0 for q in extra for n in RANX_NAMES)
    lines.append(
        f"  ranx also scores the {len(extra):,} judged queries absent from the run, "
        f"all 0: {zeros_x}"
    )
    lines.extend(_explain_ranx(differing, qrels, run, ranx_run, ranx_scores))
    return lines


def _measure(values: dict[Any, Any], name: str) -> Any:
    return next(m for m in values if str(m) == name)


def _explain_ranx(
    differing: set[str],
    qrels: dict[str, dict[str, int]],
    run: dict[str, dict[str, float]],
    ranx_run: Any,
    ranx_scores: dict[str, dict[str, float]],
) -> list[str]:
    """Show that ranx differs only by the order of tied documents.

    trec_eval orders tied scores by document id descending; ranx sorts by
    score only (numba's unstable quicksort of ``-score``), so tied documents
    end up in an arbitrary order. Each differing query is re-evaluated by
    pytrec_eval with ranx's own order made explicit (strictly decreasing
    scores); if that reproduces ranx's values, the tie order is the only cause.
    """
    import pytrec_eval

    def mixed_tie(query: str) -> bool:
        judged = qrels.get(query, {})
        seen: dict[float, int] = {}
        for doc, score in run[query].items():
            grade = judged.get(doc, 0)
            if seen.setdefault(score, grade) != grade:
                return True
        return False

    mixed = {q for q in run if q in qrels and mixed_tie(q)}
    if not differing:
        return [f"  ranx agrees on every query ({len(mixed):,} queries have mixed-grade ties)."]
    explicit = {}
    for query in differing:
        docs = list(ranx_run.run[query].keys())
        explicit[query] = {doc: float(len(docs) - i) for i, doc in enumerate(docs)}
    replay = pytrec_eval.RelevanceEvaluator({q: qrels[q] for q in differing}, PYTREC_NAMES)
    replayed = replay.evaluate(explicit)
    reproduced: int = sum(
        all(
            abs(replayed[q][theirs] - ranx_scores[name][q]) <= TOLERANCE
            for _, theirs, name in MEASURES
        )
        for q in differing
    )
    only = "only " if reproduced == len(differing) else "NOT only "
    return [
        f"  {len(differing):,} queries differ on some measure; all of them have tied scores "
        f"between documents of different grades: {differing <= mixed} "
        f"({len(mixed):,} queries have such ties).",
        f"  pytrec_eval given ranx's tie order reproduces ranx on {reproduced:,} of the "
        f"{len(differing):,}: the differences are {only}the order of tied documents "
        "(trec_eval: document id descending; ranx: unspecified).",
    ]


# --------------------------------------------------------------------------- whole processes

#: Process targets (issue 44): ragsnap's CPU time over the pytrec_eval reference's,
#: both as whole processes, at these sizes (queries).
PROCESS_TARGETS = {10_000: 0.8, 100_000: 0.35}

#: The peer as a whole process: the least a pytrec_eval user's script does, with no
#: import beyond pytrec_eval (argv: reader, qrels, run). ``own``: pytrec_eval's
#: ``parse_qrel`` + ``parse_run``; ``lean``: one ``split`` per line into dicts.
PEER_SCRIPT = """\
import sys

import pytrec_eval

MEASURES = {measures!r}
reader, qrels_path, run_path = sys.argv[1:4]
if reader == "own":
    with open(qrels_path) as handle:
        qrels = pytrec_eval.parse_qrel(handle)
    with open(run_path) as handle:
        run = pytrec_eval.parse_run(handle)
else:
    qrels = {{}}
    with open(qrels_path) as handle:
        for line in handle:
            query, _, doc, grade = line.split()
            judged = qrels.get(query)
            if judged is None:
                judged = qrels[query] = {{}}
            judged[doc] = int(grade)
    run = {{}}
    with open(run_path) as handle:
        for line in handle:
            query, _, doc, _, score, _ = line.split()
            ranked = run.get(query)
            if ranked is None:
                ranked = run[query] = {{}}
            ranked[doc] = float(score)
per_query = pytrec_eval.RelevanceEvaluator(qrels, MEASURES).evaluate(run)
for measure in MEASURES:
    values = [v[measure] for v in per_query.values()]
    print(measure, "all", repr(pytrec_eval.compute_aggregated_measure(measure, values)), sep="\\t")
print("num_q", "all", len(per_query), sep="\\t")
"""


@dataclass(frozen=True, slots=True)
class Timed:
    """One whole process: wall and CPU seconds (user + system, from ``os.wait4``),
    its peak RSS (``ru_maxrss``) and its standard output."""

    wall: float
    cpu: float
    rss_mb: float
    out: str


def _spawn(argv: Sequence[str], env: dict[str, str] | None) -> Timed:
    """Run ``argv`` as its own process, reaped with ``os.wait4`` for its own
    rusage (its output goes to a temporary file, read afterwards)."""
    gc.collect()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        child = subprocess.Popen(list(argv), stdout=out, stderr=err, env=env)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if child.returncode != 0:
            tail = err.read().decode("utf-8", "replace")[-2000:]
            raise SystemExit(f"{list(argv)[:4]} failed (exit {child.returncode}):\n{tail}")
        text = out.read().decode("utf-8", "replace")
    return Timed(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, text)


#: ``ragsnap metrics`` with ``trec.COMPILED_FROM`` set first (``--paths``): 0 forces the
#: compiled kernels, None the numpy code, whatever the size.
FORCED_PATH = (
    "import sys; import ragsnap.ir.trec as trec; trec.COMPILED_FROM = {}; "
    "from ragsnap.cli import main; sys.exit(main(sys.argv[1:]))"
)


def process_sides(
    folder: Path, before: Path | None, paths: bool = False
) -> dict[str, tuple[list[str], dict[str, str]]]:
    """Each side's command line and environment, in ``folder``'s files."""
    qrels, run = str(folder / QRELS_FILE), str(folder / RUN_FILE)
    peer = folder / "pytrec_eval_peer.py"
    peer.write_text(PEER_SCRIPT.format(measures=PYTREC_NAMES), encoding="utf-8")
    env = dict(os.environ)
    measures = [arg for name in RAGSNAP_NAMES for arg in ("-m", name)]
    ragsnap = [sys.executable, "-m", "ragsnap", "metrics", "--qrels", qrels, "--run", run]
    ragsnap += [*measures, "--digits", "17"]
    sides = {
        "pytrec_eval": ([sys.executable, str(peer), "own", qrels, run], env),
        "pytrec_eval lean": ([sys.executable, str(peer), "lean", qrels, run], env),
        "ragsnap": (ragsnap, env),
    }
    if before is not None:
        old = {**env, "PYTHONPATH": str(before / "eval")}
        sides["ragsnap before"] = (ragsnap, old)
    if paths:
        for side, value in (("ragsnap numpy", "None"), ("ragsnap compiled", "0")):
            sides[side] = ([sys.executable, "-c", FORCED_PATH.format(value), *ragsnap[3:]], env)
    return sides


def _all_lines(out: str) -> dict[str, float]:
    """``measure<TAB>all<TAB>value`` lines of an output, by measure."""
    values = {}
    for line in out.splitlines():
        fields = line.split("\t")
        if len(fields) == 3 and fields[1] == "all" and fields[0].strip() != "runid":
            values[fields[0].strip()] = float(fields[2])
    return values


def check_process_values(outs: dict[str, str]) -> tuple[bool, list[str]]:
    """ragsnap's ``all`` lines against pytrec_eval's means (the same query set:
    ``ragsnap metrics`` follows trec_eval's by default); every ragsnap side alike."""
    peer = _all_lines(outs["pytrec_eval"])
    ok = True
    lines = []
    for side in (s for s in outs if s.startswith("ragsnap")):
        mine = _all_lines(outs[side])
        worst = 0.0
        for ours, theirs, _ in MEASURES:
            worst = max(worst, abs(mine[ours] - peer[theirs]))
        same_count = int(mine["num_q"]) == int(peer["num_q"])
        good = worst <= TOLERANCE and same_count
        ok &= good
        lines.append(
            f"  {side}: {int(mine['num_q']):,} queries (pytrec_eval {int(peer['num_q']):,}), "
            f"largest |mean difference| {worst:.1e} over the six measures: "
            f"{'identical' if good else 'DIFFER'}"
        )
    return ok, lines


@dataclass(frozen=True, slots=True)
class ProcessResult:
    """One size measured as whole processes (medians)."""

    queries: int
    lines: int
    reader: str
    wall: dict[str, float]
    cpu: dict[str, float]
    rss: dict[str, float]
    identical: bool

    @property
    def ratio(self) -> float:
        """ragsnap's CPU time over the reference's: the verdict's figure."""
        return self.cpu["ragsnap"] / self.cpu[self.reader]


def benchmark_processes(
    folder: Path,
    queries: int,
    lines: int,
    repeat: int,
    seed: int,
    before: Path | None,
    paths: bool = False,
) -> ProcessResult:
    """Whole processes, interleaved: one untimed warm-up run of each side (page
    cache, numba cache), then ``repeat`` rounds, each in a new random order."""
    sides = process_sides(folder, before, paths)
    from ragsnap.ir import trec

    compiled = trec.compiled_for(folder / QRELS_FILE, folder / RUN_FILE)
    print(
        f"ragsnap metrics takes the {'compiled' if compiled else 'numpy'} path here "
        f"(trec.COMPILED_FROM = {trec.COMPILED_FROM} bytes of qrels + run)"
    )
    outs = {side: _spawn(*command).out for side, command in sides.items()}
    identical, check = check_process_values(outs)
    rng = np.random.default_rng(seed + queries)
    runs: dict[str, list[Timed]] = {side: [] for side in sides}
    load_before = os.getloadavg()
    for _ in range(repeat):
        for index in rng.permutation(len(sides)):
            side = list(sides)[index]
            runs[side].append(_spawn(*sides[side]))
    load_after = os.getloadavg()
    wall = {side: statistics.median(t.wall for t in ts) for side, ts in runs.items()}
    cpu = {side: statistics.median(t.cpu for t in ts) for side, ts in runs.items()}
    rss = {side: statistics.median(t.rss_mb for t in ts) for side, ts in runs.items()}
    reader = min(("pytrec_eval", "pytrec_eval lean"), key=lambda side: cpu[side])
    result = ProcessResult(queries, lines, reader, wall, cpu, rss, identical)
    target = PROCESS_TARGETS.get(queries)
    print()
    print(
        f"metrics_vs_peers at {queries:,} queries, whole processes: {repeat} rounds in "
        f"random order after a warm-up run of each; reference = {reader} (the lower CPU "
        f"median); ratio = median / the reference's"
    )
    print(
        f"Load average (1, 5, 15 min) before {', '.join(f'{x:.2f}' for x in load_before)}; "
        f"after {', '.join(f'{x:.2f}' for x in load_after)}."
    )
    print("| side | CPU median | CPU ratio | wall median | wall ratio | peak RSS |")
    print("|---|--:|--:|--:|--:|--:|")
    for side in sides:
        print(
            f"| {side} | {cpu[side]:.3f} s | {cpu[side] / cpu[reader]:.3f} | "
            f"{wall[side]:.3f} s | {wall[side] / wall[reader]:.3f} | {rss[side]:,.0f} MB |"
        )
    for side, ts in runs.items():
        print(f"{side} CPU: {', '.join(f'{t.cpu:.2f}' for t in ts)}")
    print("Values (the all lines, --digits 17):")
    for line in check:
        print(line)
    if target is not None:
        ok = result.ratio <= target and identical
        print(
            f"Target: ragsnap <= {target} x pytrec_eval by CPU at {queries:,} queries: "
            f"{'PASS' if ok else 'FAIL'} ({result.ratio:.3f}; by wall "
            f"{wall['ragsnap'] / wall[reader]:.3f})"
        )
    return result


def process_verdict(results: Sequence[ProcessResult]) -> bool:
    """Print the whole-process curve and the targets; True when every target is met."""
    print()
    print("The curve, whole processes (CPU medians; reference = the faster pytrec_eval):")
    before = any("ragsnap before" in r.cpu for r in results)
    head = "| queries | lines | pytrec_eval CPU | ragsnap CPU | ratio | ragsnap wall ratio "
    head += "| ragsnap before CPU | before ratio |" if before else "|"
    print(head + " ragsnap CPU s per M lines | values |")
    print("|--:|--:|--:|--:|--:|--:|" + ("--:|--:|" if before else "") + "--:|---|")
    for r in results:
        ref = r.cpu[r.reader]
        cells = [
            f"{r.queries:,}",
            f"{r.lines:,}",
            f"{ref:.3f} s ({r.reader})",
            f"{r.cpu['ragsnap']:.3f} s",
            f"{r.ratio:.3f}",
            f"{r.wall['ragsnap'] / r.wall[r.reader]:.3f}",
        ]
        if before:
            old = r.cpu.get("ragsnap before", float("nan"))
            cells += [f"{old:.3f} s", f"{old / ref:.3f}"]
        cells += [
            f"{r.cpu['ragsnap'] / r.lines * 1e6:.3f} s",
            "identical" if r.identical else "DIFFER",
        ]
        print("| " + " | ".join(cells) + " |")
    by_size = {r.queries: r for r in results}
    passed = True
    print()
    print(f"Targets ({cpu_model()}), by CPU time:")
    for size, target in PROCESS_TARGETS.items():
        r = by_size.get(size)
        if r is None:
            passed = False
            print(f"  {size:,} queries: not measured (add it to --sizes): FAIL")
            continue
        ok = r.ratio <= target and r.identical
        passed &= ok
        print(
            f"  {size:,} queries: ragsnap <= {target} x pytrec_eval as whole processes: "
            f"{'PASS' if ok else 'FAIL'} ({r.ratio:.3f})"
        )
    print(
        f"Python {platform.python_version()}, numpy {version('numpy')}, "
        f"pytrec-eval-terrier {version('pytrec-eval-terrier')}, numba {version('numba')}"
    )
    print(f"Overall: {'PASS' if passed else 'FAIL'}")
    return passed


# --------------------------------------------------------------------------- driver


@dataclass(frozen=True, slots=True)
class Settings:
    """What determines the generated files; stored in the manifest."""

    generator: int
    queries: int
    docs: int
    seed: int


def prepare(settings: Settings) -> dict[str, Any]:
    """Generate the files (unless the folder has them for the same settings)."""
    if MANIFEST.is_file():
        manifest = json.loads(MANIFEST.read_text("utf-8"))
        if manifest.get("settings") == asdict(settings):
            print(f"Reusing the files in {Path.cwd()} (same settings).")
            facts: dict[str, Any] = manifest["facts"]
            return facts
    MANIFEST.unlink(missing_ok=True)
    started = time.perf_counter()
    facts = generate(settings.queries, settings.docs, settings.seed)
    print(f"Generated the run and the qrels in {time.perf_counter() - started:.1f} s.")
    manifest = {"settings": asdict(settings), "facts": facts}
    MANIFEST.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return facts


def numba_cache_files() -> int:
    """Index files in ranx's in-tree numba cache (0 means its first use compiles)."""
    spec = importlib.util.find_spec("ranx")
    if spec is None or spec.origin is None:
        return 0
    return sum(1 for _ in Path(spec.origin).parent.rglob("*.nbi"))


@dataclass(frozen=True, slots=True)
class SizeResult:
    """The figures of one size that the curve and the verdict use (medians, s)."""

    queries: int
    lines: int
    pytrec_total: float  # the reference: the faster of pytrec_eval's two readers
    pytrec_reader: str
    pytrec_evaluate: float  # its C evaluation step alone, ``evaluate(run)``
    ragsnap_total: float
    identical: bool

    @property
    def ratio(self) -> float:
        return self.ragsnap_total / self.pytrec_total


def _facts_line(facts: dict[str, Any]) -> str:
    return (
        f"Run: {facts['run_lines']:,} lines, {facts['run_mb']} MB; qrels: "
        f"{facts['qrels_lines']:,} lines, {facts['qrels_mb']} MB; {facts['judged_queries']:,} "
        f"judged queries ({facts['judged_per_query']} judgments each on average, "
        f"{facts['zero_only_queries']:,} with grade 0 only, {facts['absent_from_run']:,} "
        f"absent from the run); {facts['relevant_judgments']:,} relevant judgments, "
        f"{facts['relevant_never_retrieved']:,} of them never retrieved; "
        f"{facts['tied_adjacent_pairs']:.1%} of adjacent results tied, "
        f"{facts['queries_with_tie_in_top_10']:,} queries with a tie in the top 10; doc ids "
        f"{facts['doc_id_length'][0]}-{facts['doc_id_length'][1]} characters."
    )


def ragsnap_path() -> str:
    """Which code ragsnap's reader and ranking take on these files."""
    from ragsnap.ir import trec

    if not trec.compiled_for(QRELS_FILE, RUN_FILE) or trec._load_kernels() is None:
        return "numpy (numba not installed, or the files are below trec.COMPILED_FROM)"
    return f"compiled kernels (ragsnap.ir.trec_kernels, numba {version('numba')})"


def benchmark(
    workdir: Path, queries: int, repeat: int, profile: bool, with_ranx: bool, facts: dict[str, Any]
) -> SizeResult:
    """Measure memory, check the values, time the rounds and print, for one size."""
    print(f"ragsnap path: {ragsnap_path()}. CPU: {cpu_model()}.")
    tools = [t for t in TOOLS if with_ranx or t != "ranx"]
    sides = [s for s in SIDES if with_ranx or s != "ranx"]

    # peak memory: each tool alone in a fresh interpreter
    cached = numba_cache_files()
    cold: dict[str, Any] | None = None
    if with_ranx:
        cold_dir = Path(tempfile.mkdtemp(prefix="numba-cold-", dir=workdir))
        try:
            env = {**os.environ, "NUMBA_CACHE_DIR": str(cold_dir)}
            cold = in_subprocess("ranx", workdir, env)
        finally:
            shutil.rmtree(cold_dir, ignore_errors=True)
    alone = {tool: in_subprocess(tool, workdir) for tool in tools}

    # imports, then the first call of each side in this process (checked below)
    import_seconds = {}
    for tool in tools:
        start = time.perf_counter()
        importlib.import_module(MODULES[tool])
        import_seconds[tool] = time.perf_counter() - start
    firsts = {side: measured(side) for side in ("pytrec_eval", "ragsnap", "ranx") if side in sides}
    check = check_values(firsts["pytrec_eval"], firsts["ragsnap"], firsts.get("ranx"))
    first_seconds = {side: outcome.total for side, outcome in firsts.items()}
    del firsts
    gc.collect()

    times: dict[str, list[float]] = {side: [] for side in sides}
    phases: dict[str, dict[str, list[float]]] = {side: {} for side in sides}
    for round_no in range(repeat):
        shift = round_no % len(sides)
        for side in sides[shift:] + sides[:shift]:
            outcome = measured(side)
            times[side].append(outcome.total)
            for phase, seconds in outcome.phases.items():
                phases[side].setdefault(phase, []).append(seconds)
            del outcome

    med = {side: statistics.median(values) for side, values in times.items()}
    med_phase = {
        side: {phase: statistics.median(v) for phase, v in by_phase.items()}
        for side, by_phase in phases.items()
    }
    reader = min(("pytrec_eval", "pytrec_eval lean"), key=lambda side: med[side])
    reference = med[reader]
    result = SizeResult(
        queries,
        int(facts["run_lines"]),
        reference,
        reader,
        med_phase[reader]["evaluate"],
        med["ragsnap"],
        check.ragsnap_identical,
    )

    def row(label: str, seconds: float, memory: str = "") -> str:
        return f"| {label:<58} | {seconds:>8.2f} s | {seconds / reference:>6.2f} | {memory:>9} |"

    def mem(tool: str) -> str:
        return f"{alone[tool]['peak_rss_mb']:,.0f} MB"

    labelled: list[tuple[str, float, str]] = []
    for side, how in (("pytrec_eval", "parse_qrel + parse_run"), ("pytrec_eval lean", "lean")):
        p = med_phase[side]
        labelled += [
            (f"{side}: {how} reader", p["parse"], ""),
            (f"{side}: RelevanceEvaluator(qrels)", p["evaluator"], ""),
            (f"{side}: evaluate(run) (the C evaluation step)", p["evaluate"], ""),
            (f"{side}: means", p["means"], ""),
            (f"{side} total", med[side], mem("pytrec_eval") if side == "pytrec_eval" else ""),
        ]
    labelled += [
        ("ragsnap: read_qrels + read_run", med_phase["ragsnap phases"]["read"], ""),
        ("ragsnap: rankings_from_trec", med_phase["ragsnap phases"]["rankings"], ""),
        ("ragsnap: evaluate + means", med_phase["ragsnap phases"]["evaluate"], ""),
        ("ragsnap total (evaluate_files + means)", med["ragsnap"], mem("ragsnap")),
    ]
    if with_ranx and cold is not None:
        labelled += [
            ("ranx: Qrels.from_file + Run.from_file", med_phase["ranx"]["load"], ""),
            ("ranx: evaluate(make_comparable=True)", med_phase["ranx"]["evaluate"], ""),
            ("ranx total, warm", med["ranx"], mem("ranx")),
            ("ranx first call in this process (numba cache on disk)", first_seconds["ranx"], ""),
            ("ranx first call, empty numba cache (compiles; own process)", cold["seconds"], ""),
        ]
    print()
    print(
        f"metrics_vs_peers at {queries:,} queries: {repeat} rounds in rotating order; "
        f"ratio = median / the pytrec_eval reference ({reader}, {reference:.2f} s)"
    )
    print(f"| {'':<58} | {'median':>10} | {'ratio':>6} | {'peak RSS':>9} |")
    print(f"|{'-' * 60}|{'-' * 12}|{'-' * 8}|{'-' * 11}|")
    for label, seconds, memory in labelled:
        print(row(label, seconds, memory))
    print()
    values_word = "identical" if check.ragsnap_identical else "DIFFER"
    print(
        f"ragsnap / pytrec_eval end to end: {result.ratio:.3f} (target <= {TARGET_RATIO}); "
        f"ragsnap / pytrec_eval's evaluate(run) alone: "
        f"{result.ragsnap_total / result.pytrec_evaluate:.2f}; values {values_word}"
    )
    print()
    print("Value checks (first call of each tool):")
    for line in check.lines:
        print(line)
    print()
    print("Peak RSS (VmHWM) of a fresh interpreter running one tool once (--one TOOL):")
    for tool in tools:
        a = alone[tool]
        print(
            f"  {tool:<12} start {a['rss_start_mb']:.0f} MB, after imports "
            f"{a['rss_imports_mb']:.0f} MB, peak {a['peak_rss_mb']:,.0f} MB; that run took "
            f"{a['seconds']:.2f} s (import {a['import_s']:.2f} s)"
        )
    if cold is not None:
        print(
            f"  ranx, empty numba cache: peak {cold['peak_rss_mb']:,.0f} MB, "
            f"{cold['seconds']:.2f} s (phases "
            f"{', '.join(f'{k} {v:.2f} s' for k, v in cold['phases'].items())}); "
            f"ranx's own numba cache had {cached} index files before this run"
        )
    print(
        "First calls in this process (after the imports): "
        + ", ".join(f"{side} {seconds:.2f} s" for side, seconds in first_seconds.items())
        + "; imports: "
        + ", ".join(f"{tool} {seconds:.2f} s" for tool, seconds in import_seconds.items())
    )
    for side, values in times.items():
        print(f"{side} times: {', '.join(f'{v:.2f}' for v in values)}")

    if profile:
        profiler = cProfile.Profile()
        gc.collect()
        profiler.runcall(run_ragsnap, QRELS_FILE, RUN_FILE)
        print("\nProfile of one ragsnap run (top 25 by cumulative time):")
        stats = pstats.Stats(profiler, stream=sys.stdout)
        stats.sort_stats("cumulative").print_stats(25)
        print("Top 15 by own time:")
        stats.sort_stats("tottime").print_stats(15)
    return result


def verdict(results: Sequence[SizeResult]) -> bool:
    """Print the curve and the targets; True when every target is met."""
    print()
    print("The curve (medians; reference = the faster pytrec_eval reader, end to end):")
    print(
        "| queries | lines | pytrec_eval total | its evaluate(run) | ragsnap total "
        "| ragsnap / total | ragsnap / evaluate | ragsnap s per M lines | values |"
    )
    print("|--:|--:|--:|--:|--:|--:|--:|--:|---|")
    for r in results:
        print(
            f"| {r.queries:,} | {r.lines:,} | {r.pytrec_total:.2f} s ({r.pytrec_reader}) "
            f"| {r.pytrec_evaluate:.2f} s | {r.ragsnap_total:.2f} s | {r.ratio:.3f} "
            f"| {r.ragsnap_total / r.pytrec_evaluate:.2f} "
            f"| {r.ragsnap_total / r.lines * 1e6:.3f} s | "
            f"{'identical' if r.identical else 'DIFFER'} |"
        )
    by_size = {r.queries: r for r in results}
    passed = True
    lines = []
    for size in TARGET_SIZES:
        r = by_size.get(size)
        if r is None:
            passed = False
            lines.append(f"  {size:,} queries: not measured (add it to --sizes): FAIL")
            continue
        ok = r.ratio <= TARGET_RATIO and r.identical
        passed &= ok
        lines.append(
            f"  {size:,} queries: ragsnap <= {TARGET_RATIO} x pytrec_eval, identical values: "
            f"{'PASS' if ok else 'FAIL'} (ratio {r.ratio:.3f}, values "
            f"{'identical' if r.identical else 'DIFFER'})"
        )
    small, large = by_size.get(TARGET_SIZES[0]), by_size.get(TARGET_SIZES[-1])
    if small is not None and large is not None:
        growth = large.ragsnap_total / small.ragsnap_total
        data = large.lines / small.lines
        ok = growth <= LINEAR_SLACK * data
        passed &= ok
        lines.append(
            f"  linear time: ragsnap {growth:.2f}x the time for {data:.2f}x the lines "
            f"(at most {LINEAR_SLACK} x {data:.2f} = {LINEAR_SLACK * data:.2f}x): "
            f"{'PASS' if ok else 'FAIL'}"
        )
    print()
    print(f"Targets ({cpu_model()}):")
    for line in lines:
        print(line)
    print(
        f"Python {platform.python_version()}, numpy {version('numpy')}, "
        f"pytrec-eval-terrier {version('pytrec-eval-terrier')}, ranx {version('ranx')}, "
        f"numba {version('numba')}, ragsnap {version('ragsnap')}"
    )
    print(f"Overall: {'PASS' if passed else 'FAIL'}")
    return passed


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Command-line options; every help states its default."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sizes",
        type=lambda text: sorted(parse_sizes(text, "queries")),
        default=list(DEFAULT_SIZES),
        help="run sizes in queries, comma-separated "
        f"(default: {','.join(str(n) for n in DEFAULT_SIZES)})",
    )
    parser.add_argument("--docs", type=int, default=100, help="results per query (default: 100)")
    parser.add_argument("--repeat", type=int, default=3, help="timed rounds (default: 3)")
    parser.add_argument(
        "--no-ranx",
        action="store_true",
        help=f"leave ranx out (default: run it at sizes up to {RANX_MAX_QUERIES:,} queries)",
    )
    add_folder_options(
        parser,
        DEFAULT_SEED,
        "generate (or reuse) the files in DIR/q<size> and keep them (default: a temporary folder)",
    )
    parser.add_argument(
        "--in-process",
        action="store_true",
        help="also time the tools inside this process, phase by phase, with ranx and the "
        "per-query value checks (default: whole processes only)",
    )
    parser.add_argument(
        "--paths",
        action="store_true",
        help="also time `ragsnap metrics` forced onto the numpy code and onto the compiled "
        "kernels, for the size where one overtakes the other (default: no)",
    )
    parser.add_argument(
        "--before",
        type=Path,
        help="a checkout of ragsnap (e.g. a git worktree of an older commit): its "
        "`ragsnap metrics` is timed as one more side (default: none)",
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="print a cProfile of one more ragsnap run at each size (default: no)",
    )
    parser.add_argument(
        "--one",
        choices=TOOLS,
        help="internal: run one tool once on the files in --workdir and print a JSON line",
    )
    args = parser.parse_args(argv)
    if args.docs < 2 or args.repeat < 1:
        parser.error("--docs must be at least 2, --repeat at least 1")
    if args.one and args.workdir is None:
        parser.error("--one needs --workdir")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; 0 when every target is met, 1 when one is missed, 2 when
    pytrec_eval cannot run."""
    args = parse_args(argv)
    if args.one:
        os.chdir(args.workdir)
        one(args.one)
        return 0
    check_pytrec_eval()
    has_ranx = importlib.util.find_spec("ranx") is not None
    if args.in_process and not has_ranx and not args.no_ranx:
        print("ranx is not installed: it is left out (it is reported for information only).")
    print(f"CPU: {cpu_model()}; sizes {', '.join(f'{n:,}' for n in args.sizes)} queries")
    before = args.before.resolve() if args.before is not None else None
    if before is not None and not (before / "eval" / "ragsnap").is_dir():
        raise SystemExit(f"--before {before}: no eval/ragsnap there; pass a ragsnap checkout")
    results: list[SizeResult] = []
    processes: list[ProcessResult] = []
    with work_folder(
        args.workdir, "ragsnap-metrics-vs-peers-", args.keep, "Files", enter=True
    ) as workdir:
        for queries in args.sizes:
            folder = workdir / f"q{queries}"
            folder.mkdir(exist_ok=True)
            os.chdir(folder)
            print(f"\n=== {queries:,} queries x {args.docs} results ({folder})")
            facts = prepare(Settings(GENERATOR_VERSION, queries, args.docs, args.seed))
            print(_facts_line(facts))
            processes.append(
                benchmark_processes(
                    folder,
                    queries,
                    int(facts["run_lines"]),
                    args.repeat,
                    args.seed,
                    before,
                    args.paths,
                )
            )
            if args.in_process:
                with_ranx = not args.no_ranx and queries <= RANX_MAX_QUERIES and has_ranx
                results.append(
                    benchmark(folder, queries, args.repeat, args.profile, with_ranx, facts)
                )
            os.chdir(workdir)
    passed = process_verdict(processes)
    if results:
        print("\nIn process (issue 17's targets, for information; not the exit status):")
        verdict(results)
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())

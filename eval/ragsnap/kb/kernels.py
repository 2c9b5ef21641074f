"""The embedded store's search kernels: compiled with numba when it is installed,
numpy otherwise, with the same results bit for bit.

Two kernels do the per-query work over every chunk of a large knowledge base:

``Bm25Kernel.top``
    BM25 of every chunk that holds a query term (precomputed per-posting
    weights summed term by term, in the query's term order), then the best
    ``limit`` of the admitted ones by grid ticks (``ragsnap.kb.numeric``), equal
    ticks by chunk id.
``VectorKernel.scores`` / ``VectorKernel.top``
    exact dot products of encoded vectors (integers, ``ragsnap.kb.numeric``),
    their cosines ``dot * (1/|a|) * (1/|b|)`` left to right, and the same top
    selection. numpy computes every cosine; so does the compiled kernel, except for
    a small selection on a large store: it reads each row's int8 high part (half the
    bytes of the row: the scan is bound by memory bandwidth), bounds every cosine from
    it, and computes exactly only the cosines that can reach the top
    (``_numba_kernels.shortlist_top``).

Why the results cannot differ between the two implementations: a chunk's BM25 is
the float64 sum of its postings' weights taken in the same order (the query's
distinct terms) by both; a dot product of encoded vectors is an integer below
2^24 whatever the order or width of the arithmetic (BLAS's float32, numba's
reassociated float32 lanes);
a row the compiled kernel does not score exactly has a cosine more than a tick below
the ``limit``-th best; the cosine is the same two IEEE products; ticks are
``rint(x * 10^6)`` (round half to even) in both; and the selection keeps every
candidate tied with the ``limit``-th tick before sorting by (ticks, chunk-id rank),
a total order.
``tests/kb/test_kernels.py`` runs both on the same data and compares the bytes.

numba is optional (the ``fast`` extra). It makes a lexical lookup 1.7-2.2 x faster
(Cranfield's 1,878 chunks to 100,000), but loading it and its cached kernels costs a
process 0.45-0.9 s of CPU first (``compiled_pays``: measured, ``benchmarks/README.md``),
so it pays only for a process that looks up many times. The store's default kernel,
``auto``, weighs the two by the lookups the process expects (``resolve_kernel``):
``ragsnap lookup`` (one) and a snapshot of a few thousand cases run numpy at any size,
``ragsnap serve`` (unbounded) compiles at any size; a store told nothing compiles
from ``COMPILED_MIN_ROWS`` chunks. ``compiled``, which ``trial`` uses (its latencies
are a service's), takes numba at any size. Compiled kernels are cached on disk, next
to this module or in the user's cache folder, by numba. On large stores the compiled
scan splits the rows over up to ``_MAX_THREADS`` threads (the kernel releases the GIL);
every row is still one exact integer dot product, so the thread count changes no bit.
"""

from __future__ import annotations

import importlib.util
import itertools
import math
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from .numeric import TICKS_PER_UNIT, VECTOR_SPLIT, cosines, dot_rows, squared_norms

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = [
    "COMPILED_MIN_ROWS",
    "KERNELS",
    "Bm25Kernel",
    "VectorKernel",
    "VectorScores",
    "chunk_id_ranks",
    "compiled_code_sums",
    "compiled_coverage_grid",
    "compiled_pays",
    "first_appearances",
    "numba_available",
    "resolve_kernel",
    "split_encoded",
]

KernelName = Literal["auto", "numba", "numpy"]
KERNELS: tuple[str, ...] = ("auto", "compiled", "numba", "numpy")
#: ``auto`` compiles for indexes this large when the lookups to come are not known;
#: smaller ones run numpy
COMPILED_MIN_ROWS = 20_000
#: what loading the compiled kernels costs a process, in CPU seconds: a fixed part
#: (importing numba, loading the cached kernels) and a part per chunk (the compiled
#: index's extra arrays); measured at 1,878 chunks (0.47 s) and 100,000 (0.8-0.95 s)
COMPILED_LOAD_S = (0.45, 5e-6)
#: what they save a lexical lookup, in CPU seconds, fixed and per chunk: 0.08 ms at
#: 1,878 chunks, 0.25 ms at 100,000 (at the median; a vector lookup saves more)
COMPILED_SAVES_S = (7.5e-5, 1.75e-9)
#: a search records which of its first this many terms each chunk holds (int64 bits)
CODE_BITS = 63
#: ``compiled_code_sums`` sums at least this many codes (fewer: Python is faster)
_COMPILED_SUMS = 8


def numba_available() -> bool:
    """Whether numba can be imported (without importing it)."""
    return importlib.util.find_spec("numba") is not None


def compiled_pays(rows: int, lookups: float) -> bool:
    """Whether ``lookups`` lexical lookups of an index of ``rows`` chunks save more CPU
    with the compiled kernels than loading them costs (``COMPILED_LOAD_S``,
    ``COMPILED_SAVES_S``): a few thousand lookups at any size, never one."""
    load = COMPILED_LOAD_S[0] + COMPILED_LOAD_S[1] * rows
    saved = COMPILED_SAVES_S[0] + COMPILED_SAVES_S[1] * rows
    return lookups * saved > load


def resolve_kernel(kernel: str, rows: int, lookups: float | None = None) -> str:
    """The implementation ``kernel`` means for an index of ``rows`` chunks that a process
    expects to look up ``lookups`` times (``math.inf``: a service; None: not known):
    ``auto`` compiles when numba is installed and the lookups repay loading it
    (``compiled_pays``), or, not knowing them, for an index of ``COMPILED_MIN_ROWS``;
    ``compiled`` whenever numba is installed; ``numba`` and ``numpy`` name one."""
    if kernel not in KERNELS:
        raise ValueError(f"kernel must be one of {', '.join(KERNELS)}, not {kernel!r}")
    if kernel == "auto":
        wins = rows >= COMPILED_MIN_ROWS if lookups is None else compiled_pays(rows, lookups)
        return "numba" if wins and numba_available() else "numpy"
    if kernel == "compiled":
        return "numba" if numba_available() else "numpy"
    if kernel == "numba" and not numba_available():
        raise ImportError("the numba kernel needs numba: pip install 'ragsnap[fast]'")
    return kernel


def chunk_id_ranks(chunk_ids: NDArray[np.str_]) -> NDArray[np.int64]:
    """Each position's place in chunk-id order (code points, as ``sorted`` and
    ``np.lexsort`` compare strings): ties on the grid are broken by it."""
    order = np.argsort(chunk_ids, kind="stable")
    ranks = np.empty(len(chunk_ids), dtype=np.int64)
    ranks[order] = np.arange(len(chunk_ids), dtype=np.int64)
    return ranks


def _compiled_codes(
    codes: list[int] | NDArray[np.int64], weights: list[float]
) -> NDArray[np.int64] | None:
    """``codes`` (a list, or an int64 array as a store kept them) as an array for a
    compiled kernel, or None when it does not run (see ``compiled_code_sums``)."""
    if not _compiled or len(codes) < _COMPILED_SUMS:
        return None
    if isinstance(codes, np.ndarray):  # one pass for both ends (not two reductions)
        low, high = _compiled["code_range"](codes)
    else:
        low, high = min(codes), max(codes)
    if low < 0 or high >= 1 << min(CODE_BITS, len(weights)):
        return None  # (a bit without a weight: Python's sum raises the IndexError)
    return np.asarray(codes, dtype=np.int64)


def compiled_coverage_grid(
    codes: list[int] | NDArray[np.int64], weights: list[float], total: float
) -> tuple[list[float], list[float]] | None:
    """For each code, its coverage (``compiled_code_sums``'s sum over ``total``, 0.0
    when ``total`` is not above 0) and that on the grid, in one compiled pass; None
    when ``compiled_code_sums`` would not run. The same floats as Python's
    ``found / total`` and ``round(x * TICKS_PER_UNIT) / TICKS_PER_UNIT``."""
    found = _compiled_codes(codes, weights)
    if found is None:
        return None
    exact = np.empty(len(codes), dtype=np.float64)
    grid = np.empty(len(codes), dtype=np.float64)
    _compiled["coverage_grid"](found, np.array(weights, dtype=np.float64), total, exact, grid)
    return exact.tolist(), grid.tolist()


def compiled_code_sums(codes: list[int], weights: list[float]) -> NDArray[np.float64] | None:
    """For each code, the ``weights`` of the bits it sets added from its lowest set bit
    up, from 0.0 (a lookup's term coverage), by the compiled kernel; None when the
    compiled kernels are not loaded (no store of this process searches with them:
    this never imports numba), a code does not fit 63 bits, or the codes are fewer
    than ``_COMPILED_SUMS`` (Python adds a few faster than arrays are made). The
    caller then adds them in Python, the same additions in the same order."""
    found = _compiled_codes(codes, weights)
    if found is None:
        return None
    out = np.empty(len(codes), dtype=np.float64)
    _compiled["code_sums"](found, np.array(weights, dtype=np.float64), out)
    return out


def finish_selection(
    selected: tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.int64]],
    values: NDArray[np.float64],
    by_rank: NDArray[np.int64],
    limit: int,
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """The positions and values of a compiled selection (``_numba_kernels.select``):
    as it gave them, or, when it left the sort to the caller, from its keys (the ticks
    below the highest, shifted up past the rank's bits, or'ed with the rank; distinct):
    sorted (``_numba_kernels.sort_keys``, a radix sort), cut at ``limit``, and each
    read back as its rank's position (``by_rank``: ``positions_by_rank``) and that
    position's value in ``values``, in one compiled call (``finish_keys``). Distinct
    integers have one ascending order, on every machine."""
    positions, found, keys = selected
    if len(keys) == 0:
        return positions, found
    mask = (1 << (len(by_rank) - 1).bit_length()) - 1  # the rank's bits (``rank_bits``)
    got: tuple[NDArray[np.int64], NDArray[np.float64]]
    got = _numba_kernels()["finish_keys"](keys, mask, by_rank, values, limit)
    return got


def positions_by_rank(ranks: NDArray[np.int64]) -> NDArray[np.int64]:
    """The position of each rank (``ranks``: a permutation of ``0..n-1``)."""
    inverse = np.empty(len(ranks), dtype=np.int64)
    inverse[ranks] = np.arange(len(ranks), dtype=np.int64)
    return inverse


def first_appearances(
    keys: NDArray[np.int64],
    depth: int,
    kernel: str,
    seen: NDArray[np.bool_] | None = None,
    positions: NDArray[np.int64] | None = None,
) -> tuple[int, int]:
    """How many distinct values ``keys`` (small non-negative integers) holds, and the
    index where the ``depth + 1``-th of them first appears (``len(keys)`` when there
    are not that many): where a ranking of ``depth`` distinct documents ends. One pass
    compiled; numpy sorts (``np.unique``). Both give the same two integers.

    ``seen``: the compiled pass's scratch, one False per possible value, False again
    on return (a caller keeps one for many calls); made here when not given.
    ``positions``: the values are ``keys[positions]`` (the compiled pass reads them
    where they lie; numpy gathers them)."""
    if positions is not None:
        if kernel == "numba" and len(positions) > 0:
            if seen is None:
                seen = np.zeros(int(keys.max()) + 1, dtype=np.bool_)
            found = _numba_kernels()["first_appearances_at"](keys, positions, depth, seen)
            return int(found[0]), int(found[1])
        keys = keys[positions]
    if len(keys) == 0:
        return 0, 0
    if kernel == "numba":
        if seen is None:
            seen = np.zeros(int(keys.max()) + 1, dtype=np.bool_)
        targets, cut = _numba_kernels()["first_appearances"](keys, depth, seen)
        return int(targets), int(cut)
    found, first = np.unique(keys, return_index=True)
    targets = len(found)
    # the (depth + 1)-th first appearance is the (depth + 1)-th smallest first index
    return targets, int(np.partition(first, depth)[depth]) if targets > depth else len(keys)


# --------------------------------------------------------------------------- numpy


def _ticks(x: NDArray[np.float64]) -> NDArray[np.int64]:
    return np.rint(x * TICKS_PER_UNIT).astype(np.int64)


def _order(
    positions: NDArray[np.int64],
    values: NDArray[np.float64],
    ranks: NDArray[np.int64],
    limit: int,
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """The best ``limit`` of ``positions`` by ticks of ``values``, ties by rank."""
    if len(positions) == 0 or limit <= 0:
        return positions[:0], values[:0]
    negative = -_ticks(values)
    if limit < len(positions):  # keep everything tied with the limit-th, then sort exactly
        kth = np.partition(negative, limit - 1)[limit - 1]
        keep = np.flatnonzero(negative <= kth)
        positions, values, negative = positions[keep], values[keep], negative[keep]
    order = np.lexsort((ranks[positions], negative))[:limit]
    return positions[order], values[order]


def _accumulate_numpy(
    indptr: NDArray[np.int64],
    docs: NDArray[np.int32],
    weights: NDArray[np.float64],
    terms: NDArray[np.int64],
    n: int,
) -> tuple[NDArray[np.float64], NDArray[np.int64], NDArray[np.int64]]:
    """BM25 of every chunk (summed term by term), which terms each holds (bit i:
    ``terms[i]``, for the first ``CODE_BITS``) and the positions holding a term."""
    scores = np.zeros(n, dtype=np.float64)
    codes = np.zeros(n, dtype=np.int64)
    hit = np.zeros(n, dtype=bool)
    for i, term in enumerate(terms.tolist()):
        start, end = int(indptr[term]), int(indptr[term + 1])
        rows = docs[start:end]
        scores[rows] += weights[start:end]
        hit[rows] = True
        if i < CODE_BITS:
            codes[rows] |= 1 << i
    return scores, codes, np.flatnonzero(hit).astype(np.int64)


def _cosines_numpy(
    matrix: NDArray[Any], query: NDArray[np.float32], inverse: NDArray[np.float64], q_inv: float
) -> NDArray[np.float64]:
    return cosines(dot_rows(matrix, query), inverse, q_inv)


# --------------------------------------------------------------------------- numba

#: rows from which the compiled scan is split over threads (each part an exact
#: integer dot product per row: the thread count changes no bit)
PARALLEL_MIN_ROWS = 40_000
_MAX_THREADS = 4
_pools: dict[int, ThreadPoolExecutor] = {}


def _threads(rows: int) -> int:
    if rows < PARALLEL_MIN_ROWS:
        return 1
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(_MAX_THREADS, usable or 1))


def _pool(size: int) -> ThreadPoolExecutor:
    with _compile_lock:
        if size not in _pools:
            _pools[size] = ThreadPoolExecutor(size, thread_name_prefix="ragsnap-cosines")
        return _pools[size]


def _split_rows(work: Callable[[int, int], None], rows: int) -> None:
    """``work(start, end)`` over ``rows`` rows, split over threads on large stores (each
    part its own rows: the split changes no bit)."""
    parts = _threads(rows)
    if parts == 1:
        work(0, rows)
        return
    bounds = np.linspace(0, rows, parts + 1).astype(np.int64).tolist()
    list(_pool(parts).map(lambda a_b: work(*a_b), itertools.pairwise(bounds)))


#: the compiled vector search scans the rows' high parts first and scores a shortlist
#: exactly on stores this large (on smaller ones the rows fit in the CPU's caches and
#: one exact scan is faster) ...
SHORTLIST_MIN_ROWS = 20_000
#: ... for a selection of at most one row in this many of the store (a larger one
#: shortlists so many rows that one exact pass over every row is faster)
SHORTLIST_SHARE = 128


_compiled: dict[str, Callable[..., Any]] = {}
_compile_lock = threading.Lock()


def _numba_kernels() -> dict[str, Callable[..., Any]]:
    """Compile (or load from numba's cache) the kernels, once per process."""
    with _compile_lock:
        if not _compiled:
            from . import _numba_kernels as compiled  # optional: the ``fast`` extra

            _compiled.update(
                code_sums=compiled.code_sums,
                code_range=compiled.code_range,
                coverage_grid=compiled.coverage_grid,
                first_appearances=compiled.first_appearances,
                first_appearances_at=compiled.first_appearances_at,
                finish_keys=compiled.finish_keys,
                accumulate=compiled.accumulate,
                term_codes=compiled.term_codes,
                term_bitsets=compiled.term_bitsets,
                select_touched=compiled.select_touched,
                select_kept=compiled.select_kept,
                select_touched_running=compiled.select_touched_running,
                select_kept_running=compiled.select_kept_running,
                sort_keys=compiled.sort_keys,
                coarse_dots=compiled.coarse_dots,
                full_dots=compiled.full_dots,
                shortlist_top=compiled.shortlist_top,
                top=compiled.top,
            )
    return _compiled


#: a term in at least 1 / BITSET_SHARE of the chunks gets a bit per chunk for the
#: compiled ``term_codes``: its bitset then takes no more bytes than its postings' chunk
#: numbers (int32: 32 bits each)
BITSET_SHARE = 32


def _numba_running_limit() -> int:
    """``_numba_kernels.RUNNING_LIMIT`` (the compiled selections' switch)."""
    from . import _numba_kernels as compiled

    return int(compiled.RUNNING_LIMIT)


# --------------------------------------------------------------------------- the kernels


class Bm25Kernel:
    """BM25 top-k over CSR postings (term -> chunks) with per-posting weights.

    The scores of the last query are kept: a lookup asks for the same terms under
    two filters (the hinted category, then the scope) and, in a trial, once more
    deeper; only the selection runs again, and (compiled) it reads the scores the
    first selection gathered from the scattered positions, in order
    (``_numba_kernels.select_kept``). Callers serialise calls (the store's lock).
    Every weight is positive (BM25's are, with either idf): the compiled sum knows a
    chunk it has not met by its score of 0.0.
    """

    def __init__(
        self,
        indptr: NDArray[np.int64],
        docs: NDArray[np.int32],
        weights: NDArray[np.float64],
        ranks: NDArray[np.int64],
        kernel: str = "auto",
    ):
        if len(weights) and not float(weights.min()) > 0.0:  # NaN fails too
            raise ValueError("every BM25 posting weight must be positive")
        self.indptr, self.docs, self.weights, self.ranks = indptr, docs, weights, ranks
        self.kernel = resolve_kernel(kernel, len(ranks))
        n = len(ranks)
        self._last: bytes | None = None  # the terms the kept scores are for
        #: how many times the postings were summed: once per lookup, whatever its
        #: attempts (filtered, unfiltered) and its deep ranking ask for
        self.passes = 0
        # the kept scores: numba adds into a zeroed buffer, numpy makes a new array
        self._scores = np.zeros(n if self.kernel == "numba" else 0, dtype=np.float64)
        self._codes = np.zeros(0, dtype=np.int64)  # numpy's: which terms each holds
        self._touched = np.zeros(0, dtype=np.int64)  # positions holding a term, as found
        if self.kernel == "numba":
            fns = _numba_kernels()
            self._accumulate, self._select = fns["accumulate"], fns["select_touched"]
            self._select_kept = fns["select_kept"]
            self._term_codes = fns["term_codes"]
            self._running_limit = _numba_running_limit()
            self._select_running = fns["select_touched_running"]
            self._select_kept_running = fns["select_kept_running"]
            self._by_rank = positions_by_rank(ranks)  # a long selection's sort keys, read back
            self._no_filter = np.zeros(1, dtype=np.bool_)  # ``allowed`` when none is given
            # one spare entry: accumulate writes touched[m] before it knows m moves on
            self._buffer = np.zeros(n + 1, dtype=np.int64)
            self._count = 0
            #: the scores of the touched positions in their order, kept by the first
            #: selection of the last terms (``_kept`` says it ran) for the next ones
            self._every = np.zeros(n + 1, dtype=np.float64)
            self._kept = False
        #: each term's row of the common terms' bitsets, and the bitsets (``term_codes``)
        self._bitsets: tuple[NDArray[np.int32], NDArray[np.uint8]] | None = None
        #: compiled selections that read those kept scores (no gather of their own)
        self.kept_reads = 0
        #: a compiled selection of the last terms that held every chunk its filter (the
        #: mask object, or None) admits, sorted: any later one of them under that filter
        #: is a cut of it (a lookup's list after its deep ranking)
        self._ordered: tuple[NDArray[np.bool_] | None, NDArray[Any], NDArray[Any]] | None = None

    def _scored(self, terms: NDArray[np.int64]) -> None:
        key = terms.tobytes()
        if key == self._last:
            return
        if self.kernel == "numpy":
            self._scores, self._codes, self._touched = _accumulate_numpy(
                self.indptr, self.docs, self.weights, terms, len(self.ranks)
            )
        else:  # the kernel first clears the previous query's entries
            self._count = self._accumulate(
                self.indptr,
                self.docs,
                self.weights,
                terms,
                self._scores,
                self._buffer,
                self._count,
            )
        self._last = key
        self._ordered = None
        self._kept = False
        self.passes += 1

    def top(
        self,
        terms: NDArray[np.int64],
        allowed: NDArray[np.bool_] | None,
        limit: int,
        at_least: int | None = None,
    ) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
        """Positions and exact BM25 of the best ``limit`` chunks holding any of
        ``terms`` (distinct term ids, in the query's order) that ``allowed``
        admits (None: all), best grid score first, ties by chunk id.

        ``at_least``: grid ticks that ``limit`` of them are known to reach (the
        ``limit``-th of a search of the same terms under a filter this one admits
        more than); the compiled selection skips the rest. The result is the same.

        A compiled selection that held every admitted chunk is kept (read-only) until
        other terms are searched; a later selection under the same filter cuts it.
        A compiled selection of at most ``RUNNING_LIMIT`` (a lookup's candidates) keeps
        a running bound and ranks only what can reach it
        (``_numba_kernels.select_touched_running``); the result is the same."""
        self._scored(terms)
        if self.kernel == "numpy":
            positions = self._touched
            if allowed is not None:
                positions = positions[allowed[positions]]
            return _order(positions, self._scores[positions], self.ranks, limit)
        ordered = self._ordered
        if ordered is not None and ordered[0] is allowed:  # all of this filter's, sorted
            return ordered[1][:limit], ordered[2][:limit]
        # a value more than a tick below ``at_least`` cannot reach it on the grid
        floor = -np.inf if at_least is None else (at_least - 1) / TICKS_PER_UNIT
        mask = allowed if allowed is not None else self._no_filter
        running = limit <= self._running_limit  # a lookup's list: a running bound
        if self._kept:  # the scores in touched order: read in order, not gathered again
            out = (self._select_kept_running if running else self._select_kept)(
                self._every,
                self._buffer,
                self._count,
                mask,
                allowed is not None,
                self.ranks,
                limit,
                floor,
            )
            self.kept_reads += 1
        else:
            out = (self._select_running if running else self._select)(
                self._scores,
                self._buffer,
                self._count,
                mask,
                allowed is not None,
                self.ranks,
                limit,
                floor,
                self._every,
            )
            self._kept = True
        positions, values = finish_selection(out, self._scores, self._by_rank, limit)
        if at_least is None and len(positions) < limit:  # every one the filter admits
            positions.flags.writeable = values.flags.writeable = False  # handed out in cuts
            self._ordered = (allowed, positions, values)
        return positions, values

    def kept_codes(
        self,
        terms: NDArray[np.int64],
        positions: NDArray[np.int64],
        bits: NDArray[np.int64] | None = None,
    ) -> NDArray[np.int64] | None:
        """Which of ``terms`` each of ``positions`` holds (bit ``bits[i]``, by default
        bit i, for ``terms[i]``; ``bits`` increasing), as the last search recorded it
        (numpy) or found again in the postings (compiled: ``term_codes``, one forward
        walk of each term's postings for a lookup's list); None unless that search was
        of ``terms`` (and every bit is below ``CODE_BITS``)."""
        if terms.tobytes() != self._last:
            return None
        if bits is None:
            if len(terms) > CODE_BITS:
                return None
            bits = np.arange(len(terms), dtype=np.int64)
        elif len(bits) and int(bits[-1]) >= CODE_BITS:
            return None
        if self.kernel == "numba":
            return self.term_codes(terms, bits, positions)
        kept: NDArray[np.int64] = self._codes[positions]
        if len(bits) and int(bits[-1]) != len(bits) - 1:  # bit i moves to bits[i]
            moved = np.zeros(len(kept), dtype=np.int64)
            for i, bit in enumerate(bits.tolist()):
                moved |= ((kept >> i) & 1) << bit
            kept = moved
        return kept

    def _common_bitsets(self) -> tuple[NDArray[np.int32], NDArray[np.uint8]]:
        """Each term's row in the bitsets (-1: none), and a bit per chunk for every term
        in at least ``1 / BITSET_SHARE`` of them (``_numba_kernels.term_bitsets``): no more
        bytes than those terms' postings take, made on the first compiled ``term_codes``.
        A lookup's few candidates then cost a byte read each for a common term, where its
        long postings cost a galloping search each (a 100,000-chunk lookup's slowest
        kernel step after the sum and the selection)."""
        df = np.diff(self.indptr)
        n = len(self.ranks)
        common = np.flatnonzero(df * BITSET_SHARE >= max(n, 1)).astype(np.int64)
        row = np.full(len(df), -1, dtype=np.int32)
        row[common] = np.arange(len(common), dtype=np.int32)
        bitsets = _numba_kernels()["term_bitsets"](self.indptr, self.docs, common, n)
        return row, bitsets

    def term_codes(
        self, terms: NDArray[np.int64], bits: NDArray[np.int64], positions: NDArray[np.int64]
    ) -> NDArray[np.int64]:
        """For each of ``positions``, the bits ``bits[i]`` of the terms ``terms[i]`` its
        chunk holds, found in each term's postings (in position order: numba walks them
        forward, numpy searches them), so a lookup learns which query terms a candidate
        holds without reading it (``kept_codes`` has them for what the last search
        found). The compiled path reads a common term (in at least ``1 / BITSET_SHARE`` of
        the chunks) from a bit per chunk instead (``_common_bitsets``). Both paths give
        the same integers."""
        out = np.zeros(len(positions), dtype=np.int64)
        if self.kernel == "numba":
            if not positions.flags.writeable:  # a kept selection's (``top``): numba would
                positions = positions.copy()  # load a read-only variant, ms the first time
            if self._bitsets is None:
                self._bitsets = self._common_bitsets()
            row, bitsets = self._bitsets
            fn = self._term_codes
            fn(self.indptr, self.docs, terms, bits, positions, out, row, bitsets)
            return out
        for term, bit in zip(terms.tolist(), bits.tolist(), strict=True):
            docs = self.docs[self.indptr[term] : self.indptr[term + 1]]
            if len(docs) == 0:
                continue
            at = np.minimum(np.searchsorted(docs, positions), len(docs) - 1)
            out[docs[at] == positions] |= 1 << bit
        return out


@dataclass(slots=True)
class VectorScores:
    """One query's scores against every stored vector, each made by the first
    ``VectorKernel.top`` that needs it and kept for the next (a lookup's attempts and
    its deep ranking select for the same query): the exact cosines, or on a large store
    with the compiled kernel, the coarse dot products of the rows' high parts
    (``split_encoded``), from which a small selection scores a shortlist exactly."""

    query: NDArray[np.float32]
    query_inverse: float
    cosines: NDArray[np.float64] | None = None
    coarse: NDArray[np.float32] | None = None


def split_encoded(
    encoded: NDArray[Any],
) -> tuple[NDArray[np.int8], NDArray[np.int8], NDArray[np.float64]]:
    """Encoded rows as ``VECTOR_SPLIT * high + low``, both int8, and the Euclidean norm of each
    ``low`` row: ``high = floor((e + 8) / 16)`` (at most 127: 2048, the largest component
    an encoded vector has, keeps a low part of 16) and ``low = e - 16 * high``, in [-8, 7].
    Together they take the memory of int16 rows; a search reads every row's ``high``
    only. Made a block of rows at a time, so the copies stay small."""
    rows = len(encoded)
    high = np.empty(encoded.shape, dtype=np.int8)
    low = np.empty(encoded.shape, dtype=np.int8)
    norms = np.empty(rows, dtype=np.float64)
    for start in range(0, rows, _SPLIT_BLOCK):
        part = np.asarray(encoded[start : start + _SPLIT_BLOCK]).astype(np.int32)
        upper = np.clip((part + VECTOR_SPLIT // 2) // VECTOR_SPLIT, -128, 127)
        lower = part - VECTOR_SPLIT * upper
        high[start : start + _SPLIT_BLOCK] = upper
        low[start : start + _SPLIT_BLOCK] = lower
        norms[start : start + _SPLIT_BLOCK] = np.sqrt((lower * lower).sum(axis=1))
    return high, low, norms


#: rows ``split_encoded`` converts at once
_SPLIT_BLOCK = 8_192


class VectorKernel:
    """Exact cosines of a query with the stored encoded vectors, and their top k.

    numpy scores every row exactly (float32 BLAS on exact integers, ``numeric``). The
    compiled kernel holds each row split (``split_encoded``). A small selection on a
    large store (``top``) reads the int8 high parts of every row, half the bytes of
    int16 rows (the scan is bound by memory bandwidth), then scores exactly only the
    rows whose cosine can reach the top (``_numba_kernels.shortlist_top``); any other
    scores every row exactly in one pass over both parts. Both kernels give the same
    positions and bytes."""

    def __init__(
        self,
        encoded: NDArray[np.float32],
        inverse: NDArray[np.float64],
        ranks: NDArray[np.int64],
        kernel: str = "auto",
    ):
        self.kernel = resolve_kernel(kernel, len(ranks))
        self.inverse, self.ranks = inverse, ranks
        self.dim = encoded.shape[1]
        self.matrix: NDArray[Any] = encoded
        if self.kernel == "numba":
            self.high, self.low, self.low_norms = split_encoded(encoded)
            self.matrix = self.high  # the float32 rows are not kept
            # a row's coarse d / |row| is ``VECTOR_SPLIT / |row| * coarse``; its slack is
            # ``|low| / |row|`` times the query's norm (``_numba_kernels.shortlist_top``)
            self._scaled_inverse = inverse * VECTOR_SPLIT
            self._scaled_low_norms = self.low_norms * inverse
            fns = _numba_kernels()
            self._coarse_dots, self._full_dots = fns["coarse_dots"], fns["full_dots"]
            self._shortlist_top, self._top = fns["shortlist_top"], fns["top"]
            self._by_rank = positions_by_rank(ranks)

    def scores(self, query: NDArray[np.float32], query_inverse: float) -> VectorScores:
        """The encoded ``query``'s scores, for ``top`` (each made when first needed)."""
        return VectorScores(query, query_inverse)

    def cosines(self, query: NDArray[np.float32], query_inverse: float) -> NDArray[np.float64]:
        """Exact cosine of the encoded ``query`` with every stored vector."""
        if self.kernel == "numpy":
            return _cosines_numpy(self.matrix, query, self.inverse, query_inverse)
        dots = np.empty(len(self.inverse), dtype=np.float64)
        _split_rows(
            lambda a, b: self._full_dots(self.high[a:b], self.low[a:b], query, dots[a:b]),
            len(dots),
        )
        return cosines(dots, self.inverse, query_inverse)

    def _coarse(self, query: NDArray[np.float32]) -> NDArray[np.float32]:
        """``high . query`` of every row (exact integers)."""
        coarse = np.empty(len(self.inverse), dtype=np.float32)
        _split_rows(lambda a, b: self._coarse_dots(self.high[a:b], query, coarse[a:b]), len(coarse))
        return coarse

    def rows_cosines(
        self, positions: NDArray[np.intp], query: NDArray[np.float32], query_inverse: float
    ) -> NDArray[np.float64]:
        """Cosines with the vectors at ``positions`` only."""
        if self.kernel == "numpy":
            rows = self.matrix[positions].astype(np.float32, copy=False)
        else:  # e = 16 high + low: exact in float32 (integers below 2^12)
            rows = self.high[positions].astype(np.float32) * np.float32(VECTOR_SPLIT)
            rows += self.low[positions].astype(np.float32)
        return cosines(dot_rows(rows, query), self.inverse[positions], query_inverse)

    def top(
        self, scores: VectorScores, positions: NDArray[np.int64], limit: int
    ) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
        """The best ``limit`` of ``positions`` by grid ticks of their exact cosines (equal
        ticks by chunk id), and those cosines.

        The compiled kernel scans the high parts and scores a shortlist when the store
        is large (``SHORTLIST_MIN_ROWS``) and the selection small against it
        (``SHORTLIST_SHARE``), unless this query's exact cosines are at hand; otherwise,
        as numpy does, it scores every row (whatever share of them ``positions`` is: a
        filter does not make the scan shorter)."""
        rows = len(self.inverse)
        shortlist = (
            self.kernel == "numba"
            and scores.cosines is None
            and rows >= SHORTLIST_MIN_ROWS
            and rows >= SHORTLIST_SHARE * limit
        )
        if not shortlist:
            if scores.cosines is None:
                scores.cosines = self.cosines(scores.query, scores.query_inverse)
            if self.kernel == "numpy":
                return _order(positions, scores.cosines[positions], self.ranks, limit)
            got = self._top(scores.cosines, positions, self.ranks, limit)
            return finish_selection(got, scores.cosines, self._by_rank, limit)
        if scores.coarse is None:
            scores.coarse = self._coarse(scores.query)
        kept, values, keys, found, exact = self._shortlist_top(
            scores.coarse,
            self.low,
            self._scaled_inverse,
            self._scaled_low_norms,
            scores.query,
            math.sqrt(float(squared_norms(scores.query)[0])),
            self.inverse,
            scores.query_inverse,
            positions,
            self.ranks,
            limit,
        )
        if len(keys) == 0:  # selected as they stand: no sort left to numpy
            return kept, values
        by_position = np.zeros(len(self.inverse), dtype=np.float64)
        by_position[found] = exact  # many tied with the limit-th: numpy sorts their keys
        return finish_selection((kept, values, keys), by_position, self._by_rank, limit)

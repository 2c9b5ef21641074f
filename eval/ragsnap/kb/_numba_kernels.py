"""The numba side of ``ragsnap.kb.kernels`` (imported only when numba is installed
and a large index is searched; see that module for why the results equal numpy's).

No ``fastmath``: every float operation is the IEEE one numpy performs, in the same
order; the one exception, ``_reassoc``, sums the products of integers, which are exact
in any order. Compiled functions are cached on disk by numba.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

from .numeric import TICKS_PER_UNIT, VECTOR_SPLIT

_jit = numba.njit(cache=True, nogil=True, fastmath=False, error_model="numpy")


@_jit
def kth_largest(values: Any, count: int, k: int) -> Any:
    """The ``k``-th largest of the first ``count`` values, ticks or scores
    (``count > k >= 1``): a min-heap of the ``k`` largest seen, so most values cost
    one comparison."""
    heap = np.empty(k, dtype=values.dtype)
    for i in range(k):  # heapify the first k
        heap[i] = values[i]
    for start in range(k // 2 - 1, -1, -1):
        _sift_down(heap, start, k)
    for i in range(k, count):
        v = values[i]
        if v > heap[0]:
            heap[0] = v
            _sift_down(heap, 0, k)
    return heap[0]


@_jit
def _sift_down(heap: Any, at: int, size: int) -> None:
    value = heap[at]
    while True:
        child = 2 * at + 1
        if child >= size:
            break
        if child + 1 < size and heap[child + 1] < heap[child]:
            child += 1
        if heap[child] >= value:
            break
        heap[at] = heap[child]
        at = child
    heap[at] = value


#: a selection of more candidates than this leaves its sort to ``sort_keys`` (``select``)
NUMPY_SORT = 256


@_jit
def sort_keys(keys: Any) -> None:
    """Sort ``keys`` (non-negative int64, each distinct: ``select``'s sort keys) in
    place, ascending: a least-significant-digit radix sort in as few passes of at most
    11 bits as the largest key needs, the bits shared evenly (a Cranfield ranking's
    37-bit keys: four passes of 10). Distinct integers have one ascending order, so
    the result is numpy's ``sort``'s, made about 2 x faster for a depth-1000
    ranking's 1,000-1,700 keys (measured: ``benchmarks/README.md``, trial_cranfield)."""
    n = keys.shape[0]
    if n < 2:
        return
    high = keys.max()
    bits = 0
    while bits < 63 and (high >> bits) > 0:
        bits += 1
    passes = max(1, (bits + 10) // 11)
    width = (bits + passes - 1) // passes
    mask = (np.int64(1) << width) - 1
    src = keys
    dst = np.empty(n, dtype=np.int64)
    counts = np.empty((1 << width) + 1, dtype=np.int64)
    moved = False  # the sorted keys are in the scratch array
    for p in range(passes):
        shift = p * width
        counts[:] = 0
        for i in range(n):
            counts[((src[i] >> shift) & mask) + 1] += 1
        for b in range(1 << width):
            counts[b + 1] += counts[b]
        for i in range(n):
            v = src[i]
            d = (v >> shift) & mask
            dst[counts[d]] = v
            counts[d] += 1
        src, dst = dst, src
        moved = not moved
    if moved:
        keys[:] = src


@_jit
def finish_keys(keys: Any, mask: int, by_rank: Any, values: Any, limit: int) -> tuple[Any, Any]:
    """``select``'s sort keys sorted (``sort_keys``, in place), cut at ``limit`` and
    read back in the same pass: each key's rank (its low bits, ``mask``), that rank's
    position (``by_rank``) and the position's value in ``values``, best first. The
    lists numpy's ``by_rank[keys[:limit] & mask]`` and ``values[positions]`` give,
    without their temporary arrays (``kernels.finish_selection``)."""
    sort_keys(keys)
    m = min(limit, keys.shape[0])
    positions = np.empty(m, dtype=np.int64)
    found = np.empty(m, dtype=values.dtype)
    for i in range(m):
        p = by_rank[keys[i] & mask]
        positions[i] = p
        found[i] = values[p]
    return positions, found


@_jit
def rank_bits(n: int) -> int:
    """How many low bits a sort key gives the rank (of ``n``): a key is the ticks below
    the highest shifted up by this many, or'ed with the rank, so a mask reads the rank
    back (a modulo would be an integer division per candidate)."""
    bits = 0
    while (1 << bits) < n:
        bits += 1
    return bits


@_jit
def select(
    cand: Any, values: Any, ticks: Any, count: int, ranks: Any, limit: int
) -> tuple[Any, Any, Any]:
    """The best ``limit`` of the first ``count`` candidates by ticks, ties by rank:
    ``(positions, values, no keys)``; or, when more than ``NUMPY_SORT`` remain to be
    sorted, ``(none, none, keys)``: their sort keys (see ``rank_bits``; each distinct),
    which the caller sorts (``sort_keys``: several times faster than an argsort here)
    and decodes (``kernels.finish_selection``)."""
    if count > limit:  # keep everything tied with the limit-th, then sort exactly
        kth = kth_largest(ticks, count, limit)
        kept = 0
        for i in range(count):
            if ticks[i] >= kth:
                cand[kept], values[kept], ticks[kept] = cand[i], values[i], ticks[i]
                kept += 1
        count = kept
    cand, values, ticks = cand[:count], values[:count], ticks[:count]
    if count == 0:
        return cand, values, cand
    # one sort of the key (ticks, highest first; then rank), each key distinct (ranks
    # are), when it fits in 63 bits; else by rank, then stably by ticks
    shift = rank_bits(ranks.shape[0])
    high = ticks.max()
    if high - ticks.min() < np.int64(1) << (62 - shift):
        keys = ((high - ticks) << shift) | ranks[cand]
        if count > NUMPY_SORT:
            return cand[:0], values[:0], keys
        order = np.argsort(keys)[:limit]
        return cand[order], values[order], cand[:0]
    by_rank = np.argsort(ranks[cand], kind="mergesort")
    cand, values, ticks = cand[by_rank], values[by_rank], ticks[by_rank]
    by_tick = np.argsort(-ticks, kind="mergesort")[:limit]
    return cand[by_tick], values[by_tick], cand[:0]


@_jit
def term_bitsets(indptr: Any, docs: Any, common: Any, n: int) -> Any:
    """One bit per position for each of the terms ``common``: row ``k``'s bit ``p`` (byte
    ``p >> 3``, bit ``p & 7``) set when ``common[k]``'s postings hold position ``p``."""
    out = np.zeros((common.shape[0], (n + 7) >> 3), dtype=np.uint8)
    for k in range(common.shape[0]):
        t = common[k]
        for p in range(indptr[t], indptr[t + 1]):
            d = docs[p]
            out[k, d >> 3] |= np.uint8(1) << np.uint8(d & 7)
    return out


@_jit
def term_codes(
    indptr: Any,
    docs: Any,
    terms: Any,
    bits: Any,
    positions: Any,
    out: Any,
    bitset_row: Any,
    bitsets: Any,
) -> None:
    """``out[j]``: bit ``bits[i]`` set for every term ``terms[i]`` whose postings (in
    position order) hold ``positions[j]``. A common term (``bitset_row[term]`` not -1)
    is read from its row of ``bitsets`` (``term_bitsets``): one byte a position. Any
    other term's postings are walked once, forward,
    through the positions in sorted order, galloping (an exponential, then a binary
    search) from where the last one was found (the few a lookup asks for land in
    far-apart stretches of a common term's postings; a walk forward reads them in the
    order the memory is laid out)."""
    order = np.argsort(positions)
    for j in range(positions.shape[0]):
        out[j] = 0
    for i in range(terms.shape[0]):
        lo, end = indptr[terms[i]], indptr[terms[i] + 1]
        flag = np.int64(1) << bits[i]
        row = bitset_row[terms[i]]
        if row >= 0:
            for j in range(positions.shape[0]):
                p = positions[j]
                if (bitsets[row, p >> 3] >> (p & 7)) & 1:
                    out[j] |= flag
            continue
        for k in range(order.shape[0]):
            if lo >= end:
                break
            j = order[k]
            target = positions[j]
            if docs[lo] < target:  # docs[lo] < target <= docs[hi], or hi is the end
                step = 1
                hi = lo + 1
                while hi < end and docs[hi] < target:
                    lo = hi
                    step *= 2
                    hi = lo + step
                hi = min(hi, end)
                lo += 1
                while lo < hi:
                    mid = (lo + hi) >> 1
                    if docs[mid] < target:
                        lo = mid + 1
                    else:
                        hi = mid
            if lo < end and docs[lo] == target:
                out[j] |= flag


@_jit
def accumulate(
    indptr: Any,
    docs: Any,
    weights: Any,
    terms: Any,
    scores: Any,
    touched: Any,
    previous: int,
) -> int:
    """BM25 of the chunks holding ``terms``, summed term by term into ``scores``; the
    positions found go to ``touched`` (their count is returned). Every weight is
    positive (``Bm25Kernel`` checks), so a position is new while its score is 0.0:
    the one array each posting reads and writes (a second one of which terms each
    holds, read and written at random too, took 40% of a common query's time; the
    few selected positions' terms are found in the postings afterwards, ``term_codes``). The
    previous query's ``previous`` entries are cleared first (all of them at once when
    they are many: a sequential fill beats scattered stores).

    Every posting writes ``touched[m]`` and moves ``m`` on only when its position is
    new: no branch to mispredict, where a common term's postings are new or not at
    random (a quarter of the time of a long query). ``touched`` holds one more entry
    than there are positions."""
    if previous > scores.shape[0] // 8:
        scores[:] = 0.0
    else:
        for i in range(previous):
            scores[touched[i]] = 0.0
    m = 0
    for i in range(terms.shape[0]):
        t = terms[i]
        for p in range(indptr[t], indptr[t + 1]):
            d = docs[p]
            score = scores[d]
            touched[m] = d  # kept only when m moves on
            m += score == 0.0
            scores[d] = score + weights[p]
    return m


@_jit
def _best(values: Any, ids: Any, count: int, ranks: Any, limit: int) -> tuple[Any, Any, Any]:
    """The best ``limit`` of the first ``count`` (``ids[i]``, ``values[i]``) pairs by grid
    ticks of the values, ties by ``ranks[id]``.

    Only the few that can be kept are put on the grid: one pass finds the
    ``limit``-th largest value (a min-heap of the best ``limit``; ticks are monotonic
    in the value, so its ticks are the ``limit``-th largest ticks); the next keeps
    every value whose ticks reach them (a value more than one tick below cannot,
    whatever the rounding of ``v * TICKS_PER_UNIT``), and ``select`` sorts those
    exactly."""
    bound = -np.inf
    kth = np.iinfo(np.int64).min
    if count > limit:
        kth = np.int64(np.rint(kth_largest(values, count, limit) * TICKS_PER_UNIT))
        bound = (kth - 1) / TICKS_PER_UNIT
    cand = np.empty(count, dtype=np.int64)
    kept_values = np.empty(count, dtype=np.float64)
    ticks = np.empty(count, dtype=np.int64)
    kept = 0
    for i in range(count):
        v = values[i]
        if v >= bound:
            t = np.int64(np.rint(v * TICKS_PER_UNIT))
            if t >= kth:
                cand[kept], kept_values[kept], ticks[kept] = ids[i], v, t
                kept += 1
    return select(cand, kept_values, ticks, kept, ranks, limit)


@_jit
def select_touched(
    scores: Any,
    touched: Any,
    m: int,
    allowed: Any,
    use_allowed: bool,
    ranks: Any,
    limit: int,
    floor: float,
    every: Any,
) -> tuple[Any, Any, Any]:
    """The best ``limit`` of the ``m`` touched positions that ``allowed`` admits, of
    those scoring at least ``floor`` (the caller knows ``limit`` of them reach it),
    as ``select`` gives them; ``every[i]`` is set to the score of ``touched[i]``, each
    of them, so that a later selection of the same scores reads them in order
    (``select_kept``) rather than at the scattered positions again.

    One pass over the scattered positions gathers them, then contiguous ones are
    ranked. Each is written and kept only when admitted (``count`` moves on by the
    mask's value and the floor's test): a filter admits positions at random, and a
    branch on it was mispredicted often enough to double the pass."""
    positions = np.empty(m, dtype=np.int64)
    values = np.empty(m, dtype=np.float64)
    count = 0
    if use_allowed:
        for i in range(m):
            d = touched[i]
            v = scores[d]
            every[i] = v
            positions[count] = d  # count <= i: always inside
            values[count] = v
            count += allowed[d] & (v >= floor)
    else:
        for i in range(m):
            d = touched[i]
            v = scores[d]
            every[i] = v
            positions[count] = d
            values[count] = v
            count += v >= floor
    if count == 0 or limit <= 0:
        return positions[:0], values[:0], positions[:0]
    return _best(values, positions, count, ranks, limit)


@_jit
def select_kept(
    every: Any,
    touched: Any,
    m: int,
    allowed: Any,
    use_allowed: bool,
    ranks: Any,
    limit: int,
    floor: float,
) -> tuple[Any, Any, Any]:
    """``select_touched``'s result, with the scores a first selection of the same
    scores kept (``every[i]``: the score of ``touched[i]``): the same positions in the
    same order go to ``_best``, but read in order, the mask and the position only of
    a score reaching ``floor`` (a lookup's unfiltered retry, after its filtered
    attempt; a trial's deep ranking, after the lookup's list). A pass in memory order
    instead of one at scattered positions: about a third of its time at 100,000
    chunks (``benchmarks/README.md``, kb_embedded)."""
    positions = np.empty(m, dtype=np.int64)
    values = np.empty(m, dtype=np.float64)
    count = 0
    if use_allowed:
        for i in range(m):
            v = every[i]
            if v >= floor:
                d = touched[i]
                if allowed[d]:
                    positions[count] = d
                    values[count] = v
                    count += 1
    else:
        for i in range(m):
            v = every[i]
            if v >= floor:
                positions[count] = touched[i]
                values[count] = v
                count += 1
    if count == 0 or limit <= 0:
        return positions[:0], values[:0], positions[:0]
    return _best(values, positions, count, ranks, limit)


#: a selection of at most this many keeps a running bound (``select_touched_running``);
#: a longer one (a deep ranking's) compacts every admitted score first: measured at
#: 100,000 chunks, the bound's heap costs more than it saves from about 100 on
RUNNING_LIMIT = 100

#: how far (in score) under the ``limit``-th best seen so far a score may lie and still
#: be kept by a running bound: three grid ticks, where ``_best`` keeps nothing more than
#: a tick (and a float's rounding) under the ``limit``-th best of all
RUNNING_MARGIN = 3.0 / TICKS_PER_UNIT


@_jit
def select_touched_running(
    scores: Any,
    touched: Any,
    m: int,
    allowed: Any,
    use_allowed: bool,
    ranks: Any,
    limit: int,
    floor: float,
    every: Any,
) -> tuple[Any, Any, Any]:
    """``select_touched`` for a short selection (``limit`` at most ``RUNNING_LIMIT``):
    the same result, keeping only the scores that can still reach it.

    A min-heap holds the best ``limit`` admitted scores seen so far; a score under its
    least less ``RUNNING_MARGIN`` is passed over (one comparison, and the mask is read
    only for a score that passes it). The heap's least only grows, to the ``limit``-th
    best of all, so what is kept holds the ``limit`` best and every score ``_best``
    over all of them keeps (nothing more than a tick under that): ``_best`` of the kept
    ones is theirs, on a few hundred scores instead of every admitted one."""
    positions = np.empty(m, dtype=np.int64)
    values = np.empty(m, dtype=np.float64)
    size = max(limit, 1)
    heap = np.full(size, -np.inf)
    reach = floor
    count = 0
    if use_allowed:
        for i in range(m):
            d = touched[i]
            v = scores[d]
            every[i] = v
            if v >= reach and allowed[d]:
                positions[count] = d
                values[count] = v
                count += 1
                if v > heap[0]:
                    heap[0] = v
                    _sift_down(heap, 0, size)
                    reach = max(floor, heap[0] - RUNNING_MARGIN)
    else:
        for i in range(m):
            d = touched[i]
            v = scores[d]
            every[i] = v
            if v >= reach:
                positions[count] = d
                values[count] = v
                count += 1
                if v > heap[0]:
                    heap[0] = v
                    _sift_down(heap, 0, size)
                    reach = max(floor, heap[0] - RUNNING_MARGIN)
    if count == 0 or limit <= 0:
        return positions[:0], values[:0], positions[:0]
    return _best(values, positions, count, ranks, limit)


@_jit
def select_kept_running(
    every: Any,
    touched: Any,
    m: int,
    allowed: Any,
    use_allowed: bool,
    ranks: Any,
    limit: int,
    floor: float,
) -> tuple[Any, Any, Any]:
    """``select_kept`` for a short selection, with ``select_touched_running``'s
    running bound: the same result."""
    positions = np.empty(m, dtype=np.int64)
    values = np.empty(m, dtype=np.float64)
    size = max(limit, 1)
    heap = np.full(size, -np.inf)
    reach = floor
    count = 0
    if use_allowed:
        for i in range(m):
            v = every[i]
            if v >= reach:
                d = touched[i]
                if allowed[d]:
                    positions[count] = d
                    values[count] = v
                    count += 1
                    if v > heap[0]:
                        heap[0] = v
                        _sift_down(heap, 0, size)
                        reach = max(floor, heap[0] - RUNNING_MARGIN)
    else:
        for i in range(m):
            v = every[i]
            if v >= reach:
                positions[count] = touched[i]
                values[count] = v
                count += 1
                if v > heap[0]:
                    heap[0] = v
                    _sift_down(heap, 0, size)
                    reach = max(floor, heap[0] - RUNNING_MARGIN)
    if count == 0 or limit <= 0:
        return positions[:0], values[:0], positions[:0]
    return _best(values, positions, count, ranks, limit)


@_jit
def _code_sum(code: int, weights: Any) -> float:
    """The weights of the bits ``code`` sets, added from its lowest set bit up,
    starting from 0.0 (the order ``pipeline._Query`` adds them in)."""
    total = 0.0
    bit = 0
    while code != 0:
        if code & 1:
            total += weights[bit]
        code >>= 1
        bit += 1
    return total


@_jit
def code_sums(codes: Any, weights: Any, out: Any) -> None:
    """``out[j]``: ``_code_sum`` of ``codes[j]``."""
    for j in range(codes.shape[0]):
        out[j] = _code_sum(codes[j], weights)


@_jit
def code_range(codes: Any) -> tuple[int, int]:
    """The least and the greatest of ``codes`` (at least one)."""
    low = high = codes[0]
    for j in range(1, codes.shape[0]):
        c = codes[j]
        low = min(low, c)
        high = max(high, c)
    return low, high


@_jit
def coverage_grid(codes: Any, weights: Any, total: float, exact: Any, grid: Any) -> None:
    """``exact[j]``: ``_code_sum`` of ``codes[j]`` divided by ``total`` (0.0 when
    ``total`` is not above 0), a lookup's coverage; ``grid[j]``: that on the score
    grid, ``rint(x * TICKS_PER_UNIT) / TICKS_PER_UNIT``: the operations Python's
    ``round`` and numpy's perform, in the same order."""
    for j in range(codes.shape[0]):
        x = _code_sum(codes[j], weights) / total if total > 0 else 0.0
        exact[j] = x
        grid[j] = np.rint(x * TICKS_PER_UNIT) / TICKS_PER_UNIT + 0.0


@_jit
def first_appearances(keys: Any, depth: int, seen: Any) -> tuple[int, int]:
    """How many distinct values ``keys`` holds, and the index where the
    ``depth + 1``-th of them first appears (``len(keys)`` when there are not that
    many). ``seen``: one False per possible value, False again on return."""
    targets = 0
    cut = keys.shape[0]
    for i in range(keys.shape[0]):
        k = keys[i]
        if not seen[k]:
            seen[k] = True
            if targets == depth:
                cut = i
            targets += 1
    for i in range(keys.shape[0]):
        seen[keys[i]] = False
    return targets, cut


@_jit
def first_appearances_at(codes: Any, positions: Any, depth: int, seen: Any) -> tuple[int, int]:
    """``first_appearances`` of ``codes[positions]``, read where they lie (no gathered
    copy of the ranking's codes)."""
    targets = 0
    cut = positions.shape[0]
    for i in range(positions.shape[0]):
        k = codes[positions[i]]
        if not seen[k]:
            seen[k] = True
            if targets == depth:
                cut = i
            targets += 1
    for i in range(positions.shape[0]):
        seen[codes[positions[i]]] = False
    return targets, cut


@_jit
def top(values_all: Any, positions: Any, ranks: Any, limit: int) -> tuple[Any, Any, Any]:
    """The best ``limit`` of ``positions`` by ticks of ``values_all[positions]``, as
    ``select`` gives them."""
    m = positions.shape[0]
    if m == 0 or limit <= 0:
        return positions[:0], values_all[:0], positions[:0]
    values = np.empty(m, dtype=np.float64)
    for i in range(m):
        values[i] = values_all[positions[i]]
    return _best(values, positions, m, ranks, limit)


#: how far (in cosine) under the ``limit``-th lower bound a row's upper bound may lie and
#: still be scored exactly: three grid ticks (a cosine less than a tick below another
#: may share its ticks), far above the bounds' float64 rounding (about 1e-15)
SHORTLIST_MARGIN = 3.0 / TICKS_PER_UNIT


#: the one flag set that lets the compiler reorder sums: only for sums of integers that
#: are exact in float32 in any order
_reassoc = numba.njit(cache=True, nogil=True, fastmath={"reassoc", "contract"}, error_model="numpy")


@_reassoc
def _row_dot(rows: Any, i: int, query: Any) -> Any:
    """``rows[i] . query`` of int8 rows and the float32 encoded query, summed in float32
    in whatever order the compiler vectorizes: every product is an integer of at most
    ``128 * 2048 = 2^18`` and every partial sum, of any subset of the terms, one of at
    most ``|row| |query|`` (Cauchy-Schwarz), below 2^24 for a high part (``|high| <=
    (2048 + 8 sqrt(dim)) / 16``) or a low part (``|low| <= 16 sqrt(dim)``) at any dimension
    up to 250,000: each is exact, so the sum is the exact integer in any order."""
    acc = np.float32(0.0)
    for j in range(rows.shape[1]):
        acc += np.float32(rows[i, j]) * query[j]
    return acc


@_reassoc
def coarse_dots(high: Any, query: Any, out: Any) -> None:
    """``out[i] = high[i] . query`` for every row (float32: exact integers, ``_row_dot``).
    Releases the GIL: callers split the rows over threads."""
    for i in range(high.shape[0]):
        out[i] = _row_dot(high, i, query)


@_reassoc
def full_dots(high: Any, low: Any, query: Any, out: Any) -> None:
    """``out[i] = (VECTOR_SPLIT * high[i] + low[i]) . query``: the exact integer dot products of
    the encoded rows in one pass over both parts, summed in float32 in any order (each
    term is ``e_j q_j``, at most 2048^2 = 2^22, every partial sum at most ``|e| |q| =
    2048^2``: exact), as float64, a zero +0.0. Releases the GIL."""
    split = np.float32(VECTOR_SPLIT)
    for i in range(high.shape[0]):
        acc = np.float32(0.0)
        for j in range(high.shape[1]):
            acc += (split * np.float32(high[i, j]) + np.float32(low[i, j])) * query[j]
        out[i] = np.float64(acc) + 0.0


@_jit
def shortlist_top(
    coarse: Any,
    low: Any,
    scaled_inverse: Any,
    scaled_low_norms: Any,
    query: Any,
    query_norm: float,
    inverse: Any,
    query_inverse: float,
    positions: Any,
    ranks: Any,
    limit: int,
) -> tuple[Any, Any, Any, Any, Any]:
    """The best ``limit`` of ``positions`` by ticks of their exact cosines, as ``select``
    gives them, with the shortlist they were chosen from (positions, exact cosines).

    A row's exact dot product is ``d = VECTOR_SPLIT * coarse + low . query``, and
    ``|low . query| <= |low| |query|`` (Cauchy-Schwarz), so ``d / |row|`` lies within
    ``est -/+ slack``, ``est = VECTOR_SPLIT / |row| * coarse`` and ``slack = |query| |low| /
    |row|`` (``scaled_inverse`` and ``scaled_low_norms``), and the cosine is that times
    ``1 / |query|``. At least ``limit`` rows reach the ``limit``-th largest lower bound,
    so the ``limit``-th best cosine does; a row whose upper bound lies more than
    ``SHORTLIST_MARGIN`` under it has ticks below the ``limit``-th best ticks and
    cannot be kept. One pass keeps a min-heap of the largest lower bounds and every
    row whose upper bound reaches the heap's least (which only grows) less the margin;
    of those, the rows that still reach the final bound (a few hundred of 100,000 with
    the hashing embedder) are scored exactly, each read once more (its ``low`` row),
    and ``_best`` selects among them what it would among all."""
    m = positions.shape[0]
    found = np.empty(m, dtype=np.int64)
    values = np.empty(m, dtype=np.float64)
    if m == 0 or limit <= 0:
        return found[:0], values[:0], found[:0], found[:0], values[:0]
    margin = SHORTLIST_MARGIN * query_norm  # in units of d / |row|: the cosine's |query| times
    heap = np.full(limit, -np.inf)
    uppers = np.empty(m, dtype=np.float64)
    count = 0
    for i in range(m):
        p = positions[i]
        est = scaled_inverse[p] * coarse[p]
        slack = query_norm * scaled_low_norms[p]
        if est - slack > heap[0]:
            heap[0] = est - slack
            _sift_down(heap, 0, limit)
        if est + slack >= heap[0] - margin:
            found[count] = p
            uppers[count] = est + slack
            count += 1
    bound = heap[0] - margin  # -inf when there are no more than ``limit`` rows
    kept = 0
    for i in range(count):
        if uppers[i] < bound:
            continue
        p = found[i]
        dot = VECTOR_SPLIT * np.float64(coarse[p]) + np.float64(_row_dot(low, p, query)) + 0.0
        found[kept] = p
        # numpy's ``cosines``: the exact dot as float64 (+0.0 for 0), times 1/|row|,
        # times 1/|query|, left to right
        values[kept] = dot * inverse[p] * query_inverse
        kept += 1
    found, values = found[:kept], values[:kept]
    got = _best(values, found, kept, ranks, limit)
    return got[0], got[1], got[2], found, values

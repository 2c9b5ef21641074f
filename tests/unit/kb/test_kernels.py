"""The compiled (numba) and numpy search kernels give the same bytes (ragsnap.kb.kernels).

Seeded random postings and vectors with many exact ties, filters, limits from 1 to
past the candidate count; each case runs both implementations and compares the
positions and the scores bit for bit.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from conftest import require_numba
from ragsnap.kb.kernels import (
    COMPILED_MIN_ROWS,
    Bm25Kernel,
    VectorKernel,
    chunk_id_ranks,
    compiled_pays,
    numba_available,
    resolve_kernel,
    split_encoded,
)
from ragsnap.kb.numeric import (
    VECTOR_SPLIT,
    encode_vectors,
    exact_dots,
    inverse_norms,
    squared_norms,
    ticks_array,
)

N = 3_000
VOCAB = 400


def postings(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """CSR postings: a few very common terms, weights on a coarse grid (many ties)."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 60, VOCAB)
    lengths[:5] = N // 2
    indptr = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
    docs = np.concatenate([np.sort(rng.choice(N, n, replace=False)) for n in lengths])
    weights = rng.integers(1, 40, len(docs)) / 8.0 + rng.choice([0.0, 1e-7], len(docs))
    return indptr, docs.astype(np.int32), weights


def chunk_ids(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.array([f"doc-{rng.integers(50):02d}#{i:05d}" for i in range(N)], dtype=np.str_)


def reference_top(scores: np.ndarray, positions: np.ndarray, ids: np.ndarray, limit: int) -> list:
    """The contract, written the slow way: best grid ticks first, then chunk id."""
    ticks = ticks_array(scores[positions]).tolist()
    keyed = sorted(
        zip((-t for t in ticks), ids[positions].tolist(), positions.tolist(), strict=True)
    )
    return [p for _, _, p in keyed[:limit]]


@pytest.mark.parametrize("seed", range(4))
def test_bm25_numba_equals_numpy_and_the_contract(seed: int) -> None:
    """Under no filter, one that admits most chunks and one that admits few, at limits
    from 1 to past the candidate count, with queries of over 63 terms."""
    require_numba()
    indptr, docs, weights = postings(seed)
    ids = chunk_ids(seed)
    ranks = chunk_id_ranks(ids)
    compiled = Bm25Kernel(indptr, docs, weights, ranks, "numba")
    plain = Bm25Kernel(indptr, docs, weights, ranks, "numpy")
    rng = np.random.default_rng(100 + seed)
    allowed = rng.random(N) < 0.7
    few = rng.random(N) < 0.15  # a category's
    for trial in range(60):
        # up to 8 terms; every tenth query more than a code has bits (63), as a pasted
        # paragraph gives
        size = rng.integers(64, 90) if trial % 10 == 9 else rng.integers(1, 9)
        terms = rng.choice(VOCAB, size, replace=False).astype(np.int64)
        if trial % 2:
            terms[0] = trial % 5  # a very common term: thousands of candidates
        limit = int(rng.choice([1, 5, 50, 1000, 5000]))
        mask = (None, allowed, few)[trial % 3]
        got = compiled.top(terms, mask, limit)
        want = plain.top(terms, mask, limit)
        assert got[0].tobytes() == want[0].tobytes(), (seed, trial)
        assert got[1].tobytes() == want[1].tobytes(), (seed, trial)
        # and both follow the contract, summed in the query's term order
        scores = np.zeros(N)
        for t in terms.tolist():
            scores[docs[indptr[t] : indptr[t + 1]]] += weights[indptr[t] : indptr[t + 1]]
        hit = np.zeros(N, dtype=bool)
        for t in terms.tolist():
            hit[docs[indptr[t] : indptr[t + 1]]] = True
        if mask is not None:
            hit &= mask
        expected = reference_top(scores, np.flatnonzero(hit), ids, limit)
        assert got[0].tolist() == expected
        assert got[1].tobytes() == scores[expected].tobytes()


@pytest.mark.parametrize("seed", range(3))
def test_term_codes_say_which_terms_each_position_holds(seed: int) -> None:
    """Both paths give the bits of exactly the terms whose postings hold the position:
    first and last postings, absent positions, empty terms and every bit up to 62,
    whatever was searched before; and the codes a search records (``kept_codes``) are
    the same bits for its own terms (or at the bits asked for), never another query's."""
    require_numba()
    indptr, docs, weights = postings(seed)
    ranks = chunk_id_ranks(chunk_ids(seed))
    rng = np.random.default_rng(seed + 10)
    terms = rng.choice(VOCAB, 20, replace=False).astype(np.int64)
    terms[:2] = [0, VOCAB - 1]
    bits = np.sort(rng.choice(63, 20, replace=False)).astype(np.int64)
    positions = np.concatenate(
        [rng.integers(0, N, 200), docs[indptr[terms[0]] : indptr[terms[0]] + 3], [0, N - 1]]
    ).astype(np.int64)
    expected = np.zeros(len(positions), dtype=np.int64)
    for term, bit in zip(terms.tolist(), bits.tolist(), strict=True):
        held = set(docs[indptr[term] : indptr[term + 1]].tolist())
        expected |= np.array([p in held for p in positions.tolist()], dtype=np.int64) << bit
    in_order = np.zeros(len(positions), dtype=np.int64)  # the same with bit i for terms[i]
    for i in range(len(terms)):
        in_order |= ((expected >> bits[i]) & 1) << i
    others = np.array([5, 6, 7], dtype=np.int64)
    for kernel in ("numba", "numpy"):
        bm25 = Bm25Kernel(indptr, docs, weights, ranks, kernel)
        got = bm25.term_codes(terms, bits, positions)  # no search yet: binary searches
        assert got.tolist() == expected.tolist(), kernel
        # a search of the same terms records the codes; another search's never leak
        for searched in ([terms], [others, terms], [terms, others, terms]):
            for t in searched:
                bm25.top(t, None, 10)
            assert bm25.term_codes(terms, bits, positions).tolist() == expected.tolist()
            same_bits = np.arange(len(terms), dtype=np.int64)
            assert bm25.term_codes(terms, same_bits, positions).tolist() == in_order.tolist()
            kept = bm25.kept_codes(terms, positions)
            assert kept is not None and kept.tolist() == in_order.tolist(), kernel
            # with the query's bits (tokens the index lacks skipped): the same as asked
            kept = bm25.kept_codes(terms, positions, bits)
            assert kept is not None and kept.tolist() == expected.tolist(), kernel
            frozen = positions.copy()  # a kept selection's positions are read-only
            frozen.flags.writeable = False
            kept = bm25.kept_codes(terms, frozen, bits)
            assert kept is not None and kept.tolist() == expected.tolist(), kernel
            if kernel == "numba":  # copied: numba loads no read-only variant (ms)
                from ragsnap.kb._numba_kernels import term_codes as walk

                assert all(getattr(a, "mutable", True) for sig in walk.signatures for a in sig)
            beyond = bits.copy()
            beyond[-1] = 63  # a bit the codes cannot hold: asked again later instead
            assert bm25.kept_codes(terms, positions, beyond) is None
        bm25.top(others, None, 10)  # now the kept codes are another query's
        assert bm25.term_codes(terms, bits, positions).tolist() == expected.tolist(), kernel
        assert bm25.kept_codes(terms, positions) is None
    assert expected.any() and not expected.all()


@pytest.mark.parametrize("kernel", ["numba", "numpy"])
def test_bm25_kept_scores_serve_the_same_terms_and_never_leak(kernel: str) -> None:
    """The kept scores of the last query answer it again under another filter or
    limit, and a new query after another gives what it gives alone."""
    if kernel == "numba":
        require_numba()
    indptr, docs, weights = postings(7)
    ranks = chunk_id_ranks(chunk_ids(7))
    mask = np.random.default_rng(8).random(N) < 0.5
    terms = np.array([3, 17, 250], dtype=np.int64)

    def alone(allowed: np.ndarray | None, limit: int) -> tuple[bytes, bytes]:
        got = Bm25Kernel(indptr, docs, weights, ranks, kernel).top(terms, allowed, limit)
        return got[0].tobytes(), got[1].tobytes()

    used = Bm25Kernel(indptr, docs, weights, ranks, kernel)
    used.top(np.array([0, 1, 2, 17], dtype=np.int64), None, 10)
    for allowed, limit in ((None, 100), (mask, 7), (None, 5000), (mask, 5000)):
        got = used.top(terms, allowed, limit)
        assert (got[0].tobytes(), got[1].tobytes()) == alone(allowed, limit)


@pytest.fixture(params=["by size", "always shortlist", "never shortlist", "mixed"])
def vector_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The compiled vector search as it chooses by the store's size and the selection's
    share; forced to scan the high parts and score a shortlist for every selection;
    forced to score every row exactly; or shortlisting the small selections of a query
    until a large one scores every row (the later ones then select from those)."""
    import ragsnap.kb.kernels as kernels

    if request.param == "always shortlist":
        monkeypatch.setattr(kernels, "SHORTLIST_MIN_ROWS", 0)
        monkeypatch.setattr(kernels, "SHORTLIST_SHARE", 0)
    elif request.param == "never shortlist":
        monkeypatch.setattr(kernels, "SHORTLIST_MIN_ROWS", 10**12)
    elif request.param == "mixed":
        monkeypatch.setattr(kernels, "SHORTLIST_MIN_ROWS", 0)
        monkeypatch.setattr(kernels, "SHORTLIST_SHARE", 2)
    return str(request.param)


@pytest.mark.parametrize("dim", [8, 256, 384])
def test_vector_numba_equals_numpy(dim: int, vector_path: str) -> None:
    require_numba()
    rng = np.random.default_rng(dim)
    base = rng.standard_normal((40, dim))
    # near-duplicates and exact duplicates give equal cosines: ties broken by chunk id
    matrix = encode_vectors(np.repeat(base, N // 40, axis=0) + rng.normal(0, 1e-3, (N, dim)))
    matrix[::7] = matrix[0]
    matrix[5] = 0.0  # a zero vector: cosine 0
    inverse = inverse_norms(squared_norms(matrix))
    ids = chunk_ids(dim)
    ranks = chunk_id_ranks(ids)
    compiled = VectorKernel(matrix, inverse, ranks, "numba")
    plain = VectorKernel(matrix, inverse, ranks, "numpy")
    assert compiled.high.dtype == compiled.low.dtype == np.int8
    admitted = np.flatnonzero(rng.random(N) < 0.8).astype(np.int64)
    for trial in range(10):
        query = encode_vectors(rng.standard_normal(dim))
        q_inv = float(inverse_norms(squared_norms(query))[0])
        want = plain.cosines(query, q_inv)
        assert compiled.cosines(query, q_inv).tobytes() == want.tobytes()
        got_scores, want_scores = compiled.scores(query, q_inv), plain.scores(query, q_inv)
        positions = admitted if trial % 2 else np.arange(N, dtype=np.int64)
        for limit in (1, 50, 5000):
            a = compiled.top(got_scores, positions, limit)
            b = plain.top(want_scores, positions, limit)
            assert a[0].tobytes() == b[0].tobytes() and a[1].tobytes() == b[1].tobytes()
            assert a[0].tolist() == reference_top(want, positions, ids, limit)
        rows = rng.choice(N, 30, replace=False)
        assert (
            compiled.rows_cosines(rows, query, q_inv).tobytes()
            == plain.rows_cosines(rows, query, q_inv).tobytes()
            == want[rows].tobytes()
        )


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_vector_shortlist_keeps_every_row_the_coarse_scan_cannot_tell_apart(
    seed: int, vector_path: str
) -> None:
    """The compiled search reads only each row's high parts, then scores exactly the
    rows whose cosine can reach the top. Half the rows here are near the query, built
    so that their coarse dot products rank them differently from their exact ones and
    sit close to the bound the shortlist is cut by; some are duplicates (chunk id
    decides): every limit and filter gives numpy's positions and bytes, and each row's
    exact dot product lies within the bound."""
    require_numba()
    from ragsnap.kb import _numba_kernels

    rng = np.random.default_rng(seed)
    dim, n = 64, 4_000
    query = encode_vectors(rng.standard_normal(dim))
    high, _, _ = split_encoded(query[None, :])
    # low parts along the query or against it (exact dots above or below the coarse
    # ones by 99 % of the bound), high parts lowered by 1 in some components (coarse
    # dots that rank the rows the other way round): a bound 5 % tighter would drop
    # rows that belong in the top
    aligned = np.rint(7 * query / np.abs(query).max()).astype(np.int64)
    side = rng.choice([-1, 1], (n // 2, 1))
    lowered = rng.random((n // 2, dim)) < rng.random((n // 2, 1)) * 0.3
    signs = np.sign(query).astype(np.int64)
    twins = (high.astype(np.int64) - lowered * signs) * VECTOR_SPLIT + side * aligned
    matrix = np.vstack([encode_vectors(rng.standard_normal((n // 2, dim))), twins])
    matrix = matrix[rng.permutation(n)].astype(np.float32)
    matrix[::97] = matrix[3]  # exact duplicates
    inverse = inverse_norms(squared_norms(matrix))
    ids = np.array([f"doc-{rng.integers(50):02d}#{i:05d}" for i in range(n)], dtype=np.str_)
    ranks = chunk_id_ranks(ids)
    compiled = VectorKernel(matrix, inverse, ranks, "numba")
    plain = VectorKernel(matrix, inverse, ranks, "numpy")
    q_inv = float(inverse_norms(squared_norms(query))[0])
    want = plain.cosines(query, q_inv)
    got_scores, want_scores = compiled.scores(query, q_inv), plain.scores(query, q_inv)
    admitted = np.flatnonzero(rng.random(n) < 0.5).astype(np.int64)
    for positions in (np.arange(n, dtype=np.int64), admitted, admitted[:3]):
        for limit in (1, 10, 50, 300, 2_500):
            a = compiled.top(got_scores, positions, limit)
            b = plain.top(want_scores, positions, limit)
            assert a[0].tobytes() == b[0].tobytes() and a[1].tobytes() == b[1].tobytes()
            assert a[0].tolist() == reference_top(want, positions, ids, limit)
    # the bound the shortlist is cut by: |exact dot - 16 coarse| <= |low| |query|
    exact = matrix.astype(np.int64) @ query.astype(np.int64)
    coarse = compiled._coarse(query).astype(np.int64)
    query_norm = math.sqrt(int(query.astype(np.int64) @ query.astype(np.int64)))
    assert (np.abs(exact - VECTOR_SPLIT * coarse) <= query_norm * compiled.low_norms).all()
    # fewer than all rows are scored exactly, and exactly
    *_, found, values = _numba_kernels.shortlist_top(
        compiled._coarse(query),
        compiled.low,
        inverse * VECTOR_SPLIT,
        compiled.low_norms * inverse,
        query,
        query_norm,
        inverse,
        q_inv,
        np.arange(n, dtype=np.int64),
        ranks,
        10,
    )
    assert 10 <= len(found) < n
    assert values.tobytes() == want[found].tobytes()


def test_vector_shortlist_keeps_a_row_whose_bound_equals_the_limit_th(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Rows A and C have the same cosine (the same dot product with the query and the
    same norm), and the bound is exact for both: A's low part points against the
    query (its cosine is its lower bound), C's along it (its cosine is its upper bound).
    The best one is whichever has the smaller chunk id, C: its upper bound equals the
    limit-th lower bound, A's, and the shortlist's margin keeps it."""
    require_numba()
    import ragsnap.kb.kernels as kernels

    monkeypatch.setattr(kernels, "SHORTLIST_MIN_ROWS", 0)
    monkeypatch.setattr(kernels, "SHORTLIST_SHARE", 0)
    rng = np.random.default_rng(5)
    u = rng.choice([-1, 1], 64)
    a = np.full(64, 3)
    a[:8] = [3, 3, 3, 3, 2, 2, 2, 2]
    row_a = (16 * a - 7) * u  # high a u, low -7 u
    row_c = np.where(np.arange(64) < 8, 16 * a + 7, 16 * a - 9) * u  # high (a or a-1) u, low 7 u
    query = (100 * u).astype(np.float32)
    assert int(row_a @ query) == int(row_c @ query) and int(row_a @ row_a) == int(row_c @ row_c)
    _, low, _ = split_encoded(np.array([row_a, row_c], dtype=np.float32))
    assert (low[0] == -7 * u).all() and (low[1] == 7 * u).all()
    matrix = np.vstack([encode_vectors(rng.standard_normal((60, 64))), [row_a], [row_c]])
    matrix = matrix.astype(np.float32)
    inverse = inverse_norms(squared_norms(matrix))
    ids = np.array([f"doc#{i:03d}" for i in range(60)] + ["z-a", "c"], dtype=np.str_)
    ranks = chunk_id_ranks(ids)
    compiled = VectorKernel(matrix, inverse, ranks, "numba")
    plain = VectorKernel(matrix, inverse, ranks, "numpy")
    q_inv = float(inverse_norms(squared_norms(query))[0])
    everything = np.arange(62, dtype=np.int64)
    for limit in (1, 2):
        got = compiled.top(compiled.scores(query, q_inv), everything, limit)
        want = plain.top(plain.scores(query, q_inv), everything, limit)
        assert got[0].tolist() == want[0].tolist() == [61, 60][:limit]
        assert got[1].tobytes() == want[1].tobytes()


def test_auto_compiles_only_large_indexes_and_bad_names_fail() -> None:
    assert resolve_kernel("auto", COMPILED_MIN_ROWS - 1) == "numpy"
    assert resolve_kernel("numpy", 10**9) == "numpy"
    assert resolve_kernel("compiled", 1) == ("numba" if numba_available() else "numpy")
    with pytest.raises(ValueError, match="kernel must be one of auto, compiled, numba, numpy"):
        resolve_kernel("simd", 10)


@pytest.mark.parametrize("threads", [1, 2, 3, 4])
def test_compiled_scan_split_over_threads_gives_the_same_bytes(
    monkeypatch: pytest.MonkeyPatch, threads: int, vector_path: str
) -> None:
    """Large stores split the compiled scan over threads; every split (uneven parts
    included) gives numpy's cosines and top: each row is an exact integer dot product."""
    require_numba()
    import ragsnap.kb.kernels as kernels

    monkeypatch.setattr(kernels, "PARALLEL_MIN_ROWS", 1)
    monkeypatch.setattr(kernels, "_threads", lambda rows: threads)
    rng = np.random.default_rng(threads)
    matrix = encode_vectors(rng.standard_normal((1001, 64)))
    inverse = inverse_norms(squared_norms(matrix))
    ranks = np.arange(1001, dtype=np.int64)
    compiled = VectorKernel(matrix, inverse, ranks, "numba")
    plain = VectorKernel(matrix, inverse, ranks, "numpy")
    for _ in range(5):
        query = encode_vectors(rng.standard_normal(64))
        q_inv = float(inverse_norms(squared_norms(query))[0])
        assert compiled.cosines(query, q_inv).tobytes() == plain.cosines(query, q_inv).tobytes()
        everything = np.arange(1001, dtype=np.int64)
        a = compiled.top(compiled.scores(query, q_inv), everything, 20)
        b = plain.top(plain.scores(query, q_inv), everything, 20)
        assert a[0].tobytes() == b[0].tobytes() and a[1].tobytes() == b[1].tobytes()


@pytest.mark.parametrize("dim", [3, 64, 256, 384])
def test_compiled_dots_are_the_exact_integers_in_any_order(dim: int) -> None:
    """The compiled dot products sum float32 in whatever order the compiler picks:
    they equal Python's exact integer dot products, also for the largest ones (a
    vector with itself, 2048^2), for columns taken in reverse (another summation
    order), and a zero dot is +0.0 even when its terms are negative zeros."""
    require_numba()
    from ragsnap.kb import _numba_kernels

    rng = np.random.default_rng(dim)
    matrix = encode_vectors(rng.standard_normal((300, dim)))
    query = matrix[7].copy()  # the largest dot: a vector with itself
    matrix[11] = 0.0  # every term 0 * q: -0.0 where q < 0
    matrix[12][query != 0] = 0.0  # the same, where the query is not 0
    exact = [sum(int(a) * int(b) for a, b in zip(row, query, strict=True)) for row in matrix]
    high, low, _ = split_encoded(matrix)
    assert ((high.astype(np.int32) * VECTOR_SPLIT + low) == matrix).all()
    assert low.min() >= -8 and low.max() <= 16 and high.max() <= 127
    wide = np.array([[2048, -2048, 7, 8, -8, -9, 0]], dtype=np.float32)
    split = split_encoded(wide)
    assert split[0].tolist() == [[127, -128, 0, 1, 0, -1, 0]]
    assert split[1].tolist() == [[16, 0, 7, -8, -8, 7, 0]]
    assert split[2].tolist() == [math.sqrt(16**2 + 7**2 + 8**2 + 8**2 + 7**2)]
    for columns in (slice(None), slice(None, None, -1)):
        q32 = np.ascontiguousarray(query[columns])
        coarse = np.empty(len(matrix), dtype=np.float32)
        _numba_kernels.coarse_dots(np.ascontiguousarray(high[:, columns]), q32, coarse)
        assert coarse.tolist() == [
            sum(int(a) * int(b) for a, b in zip(row, query, strict=True)) for row in high
        ]
        got = np.empty(len(matrix), dtype=np.float64)
        parts = [np.ascontiguousarray(part[:, columns]) for part in (high, low)]
        _numba_kernels.full_dots(*parts, q32, got)
        assert got.tolist() == [float(x) for x in exact]
        assert all(math.copysign(1.0, x) == 1.0 for x in got[[11, 12]].tolist())
    assert max(exact) == exact[7] > 2048**2 * 0.99
    # whichever order gave it, a negative zero is printed as 0.0
    assert math.copysign(1.0, exact_dots(np.array([-0.0], dtype=np.float32))[0]) == 1.0


@pytest.mark.parametrize("kernel", ["numba", "numpy"])
def test_bm25_terms_in_every_position(kernel: str) -> None:
    """Terms whose postings hold every position (each posting after the first term's is
    an old position): both paths give the contract's ranking, under a filter and not,
    again after a smaller query (the kept entries cleared one by one) and a larger one
    (all at once)."""
    if kernel == "numba":
        require_numba()
    n = 500
    every = np.arange(n, dtype=np.int32)
    rng = np.random.default_rng(11)
    docs = np.concatenate([every, every, np.sort(rng.choice(n, 40, replace=False)), every])
    docs = docs.astype(np.int32)
    indptr = np.array([0, n, 2 * n, 2 * n + 40, 3 * n + 40], dtype=np.int64)
    weights = rng.integers(1, 6, len(docs)) / 4.0
    ids = np.array([f"c{i:04d}" for i in range(n)], dtype=np.str_)
    bm25 = Bm25Kernel(indptr, docs, weights, chunk_id_ranks(ids), kernel)
    allowed = rng.random(n) < 0.5
    for terms in ([0, 1], [2], [0, 1, 3], [3, 2]):
        query = np.array(terms, dtype=np.int64)
        scores = np.zeros(n)
        hit = np.zeros(n, dtype=bool)
        for t in terms:
            scores[docs[indptr[t] : indptr[t + 1]]] += weights[indptr[t] : indptr[t + 1]]
            hit[docs[indptr[t] : indptr[t + 1]]] = True
        for mask in (None, allowed):
            admitted = hit if mask is None else hit & mask
            got = bm25.top(query, mask, 60)
            expected = reference_top(scores, np.flatnonzero(admitted), ids, 60)
            assert got[0].tolist() == expected, (terms, mask is None)
            assert got[1].tobytes() == scores[expected].tobytes()


def test_compiled_select_orders_by_ticks_then_rank_with_either_sort() -> None:
    """The compiled selection sorts one key (ticks below the highest, shifted past the
    rank's bits, or'ed with the rank) when that fits in 63 bits, and by rank then stably by ticks
    when the ticks span too far: both give the order a plain sort of (-ticks, rank)
    gives, ties in ticks and all, for counts below and above the limit. Over
    ``NUMPY_SORT`` candidates the keys are sorted by the compiled radix sort
    (``sort_keys``) and read back as positions and values (``finish_selection``): the
    same lists."""
    require_numba()
    from ragsnap.kb._numba_kernels import NUMPY_SORT, select
    from ragsnap.kb.kernels import finish_selection, positions_by_rank

    rng = np.random.default_rng(41)
    n = 5_000
    ranks = rng.permutation(n).astype(np.int64)
    by_rank = positions_by_rank(ranks)
    assert by_rank[ranks].tolist() == list(range(n))
    paths = set()
    for span in (50, 10**6, 2**62 // n + 1, 2**61):  # the last two overflow the key
        for count, limit in ((1, 1), (40, 50), (2_000, 2_000), (3_000, 1_000), (3_000, 7)):
            cand = rng.choice(n, count, replace=False).astype(np.int64)
            ticks = rng.integers(-span // 2, span // 2 + 1, count).astype(np.int64)
            ticks[: count // 3] = ticks[0]  # a third tied
            values = ticks / 1e6
            dense = np.full(n, np.nan)  # each candidate's value at its position
            dense[cand] = values
            selected = select(cand.copy(), values.copy(), ticks.copy(), count, ranks, limit)
            paths.add((span < 2**62 // n, len(selected[2]) > 0))
            got_cand, got_values = finish_selection(selected, dense, by_rank, limit)
            want = sorted(range(count), key=lambda i: (-ticks[i], ranks[cand[i]]))[:limit]
            assert got_cand.tolist() == cand[want].tolist(), (span, count, limit)
            assert got_values.tobytes() == values[want].tobytes()
    # numpy sorted long ones whose keys fit, numba short ones and those that did not fit
    # (a wide span can still fit once the limit-th has cut the list)
    assert {(True, True), (True, False), (False, False)} <= paths
    assert NUMPY_SORT < 1_000
    empty = np.zeros(0, dtype=np.int64)
    got = select(empty, empty.astype(np.float64), empty, 0, ranks, 5)
    assert len(got[0]) == len(got[1]) == len(got[2]) == 0


def test_the_compiled_radix_sort_gives_numpy_s_order_of_distinct_keys() -> None:
    """``sort_keys`` (a selection's sort keys: non-negative, distinct) sorts in place
    to numpy's order whatever the keys' width (one to eight bytes: an odd and an even
    number of passes), including keys that differ only in their highest byte or their
    lowest, and tied ticks told apart by the rank in the low bits."""
    require_numba()
    from ragsnap.kb._numba_kernels import sort_keys

    rng = np.random.default_rng(7)
    for count in (0, 1, 2, 3, 257, 1_000, 4_000):
        for high in (2, 256, 2**16 + 1, 2**40, 2**63 - 1):
            keys = rng.choice(min(high, 10**9), min(count, high), replace=False).astype(np.int64)
            keys = keys * (high // min(high, 10**9))  # spread over the top bytes too
            want = np.sort(keys)
            sort_keys(keys)
            assert keys.tobytes() == want.tobytes(), (count, high)
    ticks = np.array([5, 5, 5, 0, 0, 9], dtype=np.int64)  # ticks below the highest
    ranks = np.array([4, 2, 9, 1, 3, 0], dtype=np.int64)
    keys = (ticks << 4) | ranks
    sort_keys(keys)
    assert (keys & 15).tolist() == [1, 3, 2, 4, 9, 0]  # ties by rank
    keys = np.array([2**62 + 1, 1, 2**62, 0], dtype=np.int64)
    sort_keys(keys)
    assert keys.tolist() == [0, 1, 2**62, 2**62 + 1]


@pytest.mark.parametrize("kernel", ["numba", "numpy"])
def test_first_appearances_count_targets_and_find_where_a_ranking_ends(kernel: str) -> None:
    """How many distinct documents a ranking names, and where the (depth + 1)-th first
    appears (the end of a ranking of ``depth`` documents): both kernels give what a
    walk over the list gives, at depths below, at and past the count, and the scratch
    the compiled one uses is clean for the next call."""
    if kernel == "numba":
        require_numba()
    from ragsnap.kb.kernels import first_appearances

    def reference(keys: list[int], depth: int) -> tuple[int, int]:
        seen: list[int] = []
        cut = len(keys)
        for i, k in enumerate(keys):
            if k not in seen:
                if len(seen) == depth:
                    cut = i
                seen.append(k)
        return len(seen), cut

    rng = np.random.default_rng(43)
    scratch = np.zeros(120, dtype=np.bool_)  # a caller's, kept for every call
    for trial in range(200):
        size = int(rng.integers(1, 300))
        keys = rng.integers(0, int(rng.integers(1, 120)), size).astype(np.int64)
        for depth in (1, 2, 7, 50, 119, 500):
            got = first_appearances(keys, depth, kernel)
            assert got == reference(keys.tolist(), depth), (trial, depth)
            assert all(isinstance(x, int) for x in got)
            assert first_appearances(keys, depth, kernel, scratch) == got
            assert not scratch.any()
    assert first_appearances(np.zeros(0, dtype=np.int64), 3, kernel) == (0, 0)


def test_the_compiled_cut_to_documents_is_the_numpy_path_s_with_ties_at_the_cut() -> None:
    """A deep ranking's compiled end (``finish_keys``: the sort keys sorted, cut and
    read back as positions and values in one call; ``first_appearances_at``: the cut
    to distinct documents read at the positions, no gathered codes) gives the numpy
    path's lists and integers, and a walk's, when many candidates tie in ticks across
    the depth's cut and their documents alternate there."""
    require_numba()
    from ragsnap.kb._numba_kernels import select
    from ragsnap.kb.kernels import _order, finish_selection, first_appearances, positions_by_rank

    rng = np.random.default_rng(44)
    n = 6_000
    ranks = rng.permutation(n).astype(np.int64)
    by_rank = positions_by_rank(ranks)
    checked = 0
    for count, limit in ((300, 1_000), (1_700, 1_000), (3_000, 1_000), (2_000, 257)):
        cand = rng.choice(n, count, replace=False).astype(np.int64)
        ticks = rng.integers(0, 40, count).astype(np.int64)  # few values: ties everywhere
        ticks[rng.choice(count, count // 3, replace=False)] = 20  # a third tied at 20
        values = ticks / 1e6
        dense = np.zeros(n)
        dense[cand] = values
        selected = select(cand.copy(), values.copy(), ticks.copy(), count, ranks, limit)
        assert len(selected[2]) > 0  # left to the compiled sort and read-back
        got_pos, got_values = finish_selection(selected, dense, by_rank, limit)
        want_pos, want_values = _order(cand, values, ranks, limit)
        assert got_pos.tolist() == want_pos.tolist(), (count, limit)
        assert got_values.tobytes() == want_values.tobytes()
        # documents: few, so the cut falls inside runs of tied chunks of one document
        codes = rng.integers(0, 60, n).astype(np.int64)
        seen = np.zeros(60, dtype=np.bool_)
        for depth in (1, 5, 30, 59, 60, 500):
            walk: list[int] = []
            cut = len(got_pos)
            for i, code in enumerate(codes[got_pos].tolist()):
                if code not in walk:
                    if len(walk) == depth:
                        cut = i
                    walk.append(code)
            want = (len(walk), cut)
            assert first_appearances(codes, depth, "numba", seen, got_pos) == want
            assert first_appearances(codes, depth, "numba", None, got_pos) == want
            assert first_appearances(codes, depth, "numpy", None, got_pos) == want
            assert first_appearances(codes[got_pos], depth, "numba", seen) == want
            assert not seen.any()
            checked += cut < len(got_pos)
    assert checked > 4  # cuts inside the list, not only at its end
    empty = np.zeros(0, dtype=np.int64)
    assert first_appearances(empty, 3, "numba", None, empty) == (0, 0)
    assert first_appearances(np.arange(4), 3, "numpy", None, empty) == (0, 0)


@pytest.mark.parametrize("seed", range(3))
def test_a_selection_from_a_narrower_one_s_limit_gives_the_same_top(seed: int) -> None:
    """A lookup retries the same terms under a filter that admits more: the compiled
    selection then skips what scores more than a tick below the narrower selection's
    limit-th (``at_least``). Its top equals the full selection's and numpy's, for
    limits up to the narrower one's, with scores a hair either side of grid ticks."""
    require_numba()
    rng = np.random.default_rng(200 + seed)
    lengths = rng.integers(1, 60, VOCAB)
    lengths[:5] = N // 2
    indptr = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
    docs = np.concatenate([np.sort(rng.choice(N, n, replace=False)) for n in lengths])
    # coarse weights, many nudged to just below or above a grid tick
    jitter = rng.choice([0.0, 3e-7, -3e-7, 6e-7, -6e-7], len(docs))
    weights = rng.integers(1, 40, len(docs)) / 8.0 + jitter
    ranks = chunk_id_ranks(chunk_ids(seed))
    compiled = Bm25Kernel(indptr, docs.astype(np.int32), weights, ranks, "numba")
    plain = Bm25Kernel(indptr, docs.astype(np.int32), weights, ranks, "numpy")
    wide = rng.random(N) < (0.8 if seed % 2 else 0.35)  # most chunks, or few
    narrow = wide & (rng.random(N) < 0.3)
    pruned = 0
    for trial in range(40):
        terms = rng.choice(VOCAB, int(rng.integers(1, 6)), replace=False).astype(np.int64)
        terms[0] = trial % 5  # a common term: thousands of candidates
        limit = int(rng.choice([1, 5, 50, 300]))
        first = compiled.top(terms, narrow, limit)
        if len(first[0]) < limit:
            continue
        kth = int(ticks_array(first[1][-1:])[0])
        for mask in (wide, None):
            for smaller in (limit, max(1, limit // 2)):
                got = compiled.top(terms, mask, smaller, at_least=kth)
                want = compiled.top(terms, mask, smaller)
                assert got[0].tobytes() == want[0].tobytes(), (seed, trial, smaller)
                assert got[1].tobytes() == want[1].tobytes()
                assert plain.top(terms, mask, smaller, at_least=kth)[0].tolist() == got[0].tolist()
                pruned += 1
    assert pruned > 20


@pytest.mark.parametrize("seed", range(3))
def test_later_selections_of_the_same_terms_read_the_kept_scores_and_select_the_same(
    seed: int,
) -> None:
    """The first compiled selection of a query keeps the scores it gathered, in the
    order the sum touched them; every later selection of the same terms (a lookup's
    unfiltered retry, a trial's deep ranking) reads them in order instead: under a
    narrower, a wider or no filter, at any limit, with or without ``at_least``, its
    positions and scores are a fresh kernel's bytes and numpy's, with scores a hair
    either side of grid ticks; new terms gather again."""
    require_numba()
    rng = np.random.default_rng(400 + seed)
    lengths = rng.integers(1, 60, VOCAB)
    lengths[:5] = N // 2
    indptr = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
    docs = np.concatenate([np.sort(rng.choice(N, n, replace=False)) for n in lengths])
    jitter = rng.choice([0.0, 3e-7, -3e-7, 6e-7, -6e-7], len(docs))
    weights = rng.integers(1, 40, len(docs)) / 8.0 + jitter
    args = (indptr, docs.astype(np.int32), weights, chunk_id_ranks(chunk_ids(seed)))
    kept = Bm25Kernel(*args, "numba")
    plain = Bm25Kernel(*args, "numpy")
    wide = rng.random(N) < 0.9
    narrow = wide & (rng.random(N) < 0.2)
    reads = 0
    for trial in range(25):
        terms = rng.choice(VOCAB, int(rng.integers(1, 7)), replace=False).astype(np.int64)
        terms[0] = trial % 5  # a common term: thousands of candidates
        before = kept.kept_reads
        for i in range(6):
            flt = (narrow, wide, None)[int(rng.integers(3))]
            limit = int(rng.choice([1, 5, 50, 1000]))
            at_least = None
            if i and rng.random() < 0.5:  # a bound a narrower selection's limit-th gives
                first = Bm25Kernel(*args, "numba").top(terms, narrow, limit)
                if len(first[0]) == limit:
                    at_least = int(ticks_array(first[1][-1:])[0])
                    flt = (wide, None)[i % 2]
            got = kept.top(terms, flt, limit, at_least)
            fresh = Bm25Kernel(*args, "numba").top(terms, flt, limit)
            assert got[0].tobytes() == fresh[0].tobytes(), (seed, trial, i)
            assert got[1].tobytes() == fresh[1].tobytes(), (seed, trial, i)
            assert plain.top(terms, flt, limit)[0].tolist() == got[0].tolist()
        # the first selection of new terms gathers; the later ones read what it kept
        # (but for a cut of a selection that held every chunk its filter admits)
        assert 0 < kept.kept_reads - before <= 5
        reads += kept.kept_reads - before
    assert reads > 60


@pytest.mark.parametrize("seed", range(4))
def test_a_short_selection_s_running_bound_keeps_what_the_full_selection_keeps(
    seed: int,
) -> None:
    """A selection of at most ``RUNNING_LIMIT`` passes over scores more than a margin
    under the best ``limit`` seen so far; a score less than a tick under the
    ``limit``-th best can share its grid ticks, and then its chunk id decides: the
    running selections (gathering, or reading kept scores) give the full selection's
    arrays exactly, with scores crowded a hair either side of a few grid ticks, in
    ascending order (the bound rises at every score) and at random, under a mask, none
    and a floor."""
    require_numba()
    from ragsnap.kb._numba_kernels import (
        RUNNING_LIMIT,
        select_kept,
        select_kept_running,
        select_touched,
        select_touched_running,
    )

    rng = np.random.default_rng(500 + seed)
    n = 4_000
    ranks = rng.permutation(n).astype(np.int64)
    ticks = rng.integers(1_000, 1_004, n)  # four grid ticks, each crowded
    scores = ticks / 1e6 + rng.choice([0.0, 4.9e-7, -4.9e-7, 2e-7, -2e-7, 9e-7], n)
    touched = rng.permutation(n).astype(np.int64)
    rising = touched[np.argsort(scores[touched], kind="stable")]  # the bound rises each time
    allowed = rng.random(n) < 0.6
    no_filter = np.zeros(1, dtype=np.bool_)
    checked = 0
    for order in (touched, rising):
        for limit in (1, 2, 7, 50, RUNNING_LIMIT):
            for mask, use in ((allowed, True), (no_filter, False)):
                for floor in (-np.inf, 1_002 / 1e6 - 1e-6):
                    m = len(order)
                    every, again = np.empty(n + 1), np.empty(n + 1)
                    want = select_touched(scores, order, m, mask, use, ranks, limit, floor, every)
                    got = select_touched_running(
                        scores, order, m, mask, use, ranks, limit, floor, again
                    )
                    kept = select_kept(every, order, m, mask, use, ranks, limit, floor)
                    kept_running = select_kept_running(
                        every, order, m, mask, use, ranks, limit, floor
                    )
                    assert every[:m].tobytes() == again[:m].tobytes()
                    for other in (got, kept, kept_running):
                        for a, b in zip(want, other, strict=True):
                            assert a.tobytes() == b.tobytes(), (seed, limit, use, floor)
                    checked += 1
    assert checked == 40


@pytest.mark.parametrize("seed", range(3))
def test_a_selection_that_held_every_admitted_chunk_gives_every_later_cut(seed: int) -> None:
    """A compiled selection that found fewer than its limit held every chunk its
    filter admits: it is kept, and the next selection of the same terms under the
    same filter (a lookup's list after its deep ranking) is a cut of it. Every
    selection equals a fresh kernel's and numpy's; another filter (even an equal mask
    in another array) or other terms select again; the kept arrays are read-only."""
    require_numba()
    rng = np.random.default_rng(300 + seed)
    lengths = rng.integers(1, 40, VOCAB)
    lengths[:3] = 600  # common terms: hundreds of candidates
    indptr = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
    docs = np.concatenate([np.sort(rng.choice(N, n, replace=False)) for n in lengths])
    weights = rng.integers(1, 40, len(docs)) / 8.0  # coarse: many ties, by chunk id
    ranks = chunk_id_ranks(chunk_ids(seed))
    args = (indptr, docs.astype(np.int32), weights, ranks)
    kept = Bm25Kernel(*args, "numba")
    plain = Bm25Kernel(*args, "numpy")
    mask = rng.random(N) < 0.6
    cuts = 0
    for trial in range(30):
        terms = rng.choice(VOCAB, int(rng.integers(1, 5)), replace=False).astype(np.int64)
        terms[0] = trial % 3
        new_terms = True
        for flt in (mask, None, mask.copy(), mask):  # new terms under the last filter
            for limit in (50, N, 1, 7, N, 50):
                before = None if new_terms else kept._ordered
                new_terms = False
                got = kept.top(terms, flt, limit)
                fresh = Bm25Kernel(*args, "numba").top(terms, flt, limit)
                assert got[0].tobytes() == fresh[0].tobytes(), (seed, trial, limit)
                assert got[1].tobytes() == fresh[1].tobytes()
                assert plain.top(terms, flt, limit)[0].tolist() == got[0].tolist()
                if before is not None and before[0] is flt:
                    cuts += 1
                    assert kept._ordered is before  # a cut of what was kept
        with pytest.raises(ValueError, match="read-only"):
            kept.top(terms, mask, 5)[0][0] = 1
    assert cuts > 150


def test_compiled_coverages_on_the_grid_round_halves_to_even_as_python_does() -> None:
    """The compiled coverage kernel puts each coverage on the grid as Python's
    ``round`` does: sums landing on exactly half a tick go to the even tick (a kernel
    that rounds halves up would differ), and every float equals Python's."""
    require_numba()
    from ragsnap.kb import kernels
    from ragsnap.kb.numeric import TICKS_PER_UNIT, quantize

    kernels._numba_kernels()
    halves = [(k + 0.5) / TICKS_PER_UNIT for k in range(2000)]
    halves = [x for x in halves if x * TICKS_PER_UNIT == int(x * TICKS_PER_UNIT) + 0.5]
    assert len(halves) > 100
    weights = halves[:40]  # one bit each: the coverage is the weight itself (total 1.0)
    codes = [1 << i for i in range(len(weights))]
    exact, grid = kernels.compiled_coverage_grid(codes, weights, 1.0) or ([], [])
    assert exact == [w / 1.0 for w in weights]
    assert grid == [quantize(w) for w in weights]
    # among them halves whose even tick is the one below (rounding halves up would not)
    assert any(int(w * TICKS_PER_UNIT) % 2 == 0 for w in weights)
    assert kernels.compiled_coverage_grid(codes[:7], weights, 1.0) is None  # too few


@pytest.mark.parametrize("bad", [0.0, -0.5, math.nan])
def test_a_posting_weight_that_is_not_positive_is_refused(bad: float) -> None:
    """The compiled sum knows a chunk it has not met by its score of 0.0: a weight of
    0 (or below, or NaN) would break that, so no kernel takes one."""
    indptr, docs, weights = postings(0)
    weights = weights.copy()
    weights[17] = bad
    ranks = chunk_id_ranks(chunk_ids(0))
    for kernel in ("numpy", "numba") if numba_available() else ("numpy",):
        with pytest.raises(ValueError, match="positive"):
            Bm25Kernel(indptr, docs, weights, ranks, kernel)


def test_auto_compiles_when_the_lookups_to_come_repay_loading_numba() -> None:
    # measured crossovers: about 5,900 lexical lookups at Cranfield's 1,878 chunks,
    # about 3,800 at 100,000; one lookup never repays it, however large the store
    assert not compiled_pays(1_878, 1_000)
    assert compiled_pays(1_878, 10_000)
    assert not compiled_pays(100_000, 2_000)
    assert compiled_pays(100_000, 5_000)
    assert not compiled_pays(10**7, 1)
    assert resolve_kernel("auto", 10**7, lookups=1) == "numpy"
    assert resolve_kernel("auto", 100_000, lookups=200) == "numpy"
    compiled = "numba" if numba_available() else "numpy"
    assert resolve_kernel("auto", 1, lookups=math.inf) == compiled  # a service
    assert resolve_kernel("auto", 1_878, lookups=10_000) == compiled
    # not told: by size, as before
    assert resolve_kernel("auto", COMPILED_MIN_ROWS, lookups=None) == compiled
    assert resolve_kernel("compiled", 1, lookups=1) == compiled  # a trial's, whatever

"""Machine-independent scores and exact vector arithmetic (ragsnap.kb.numeric).

Property-style tests over seeded random inputs (``numpy.random.default_rng``).
"""

from __future__ import annotations

import math
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Any

import numpy as np
import pytest

from ragsnap.kb.numeric import (
    GRID,
    SCORE_DIGITS,
    VECTOR_SCALE,
    cosines,
    dot_rows,
    encode_vectors,
    inverse_norms,
    quantize,
    quantize_array,
    ranked,
    squared_norms,
    ticks,
    ticks_array,
    unit_rows,
)

DIMS = (8, 256, 384, 1536)
ROWS = 300


def rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def reference_ticks(x: float) -> int:
    """``rint(x * 10^6)`` half to even, computed with exact decimal arithmetic on the
    (exactly rounded) float product, independently of ``round`` and ``np.rint``."""
    return int(Decimal(x * 1e6).to_integral_value(rounding=ROUND_HALF_EVEN))


def random_scores(seed: int, n: int = 4000) -> np.ndarray[Any, np.dtype[np.float64]]:
    """Scores of every kind: uniform in [-2, 2], BM25-sized, tiny, exact half-ticks and
    values a hair either side of a half-tick, each with both signs."""
    g = rng(seed)
    k = g.integers(-(10**7), 10**7, n // 4)
    half = (k + 0.5) / 1e6
    near = (k + 0.5 + g.choice([-1e-7, -1e-9, 1e-9, 1e-7], n // 4)) / 1e6
    parts = [
        g.uniform(-2.0, 2.0, n // 4),
        g.uniform(0.0, 40.0, n // 8),
        g.uniform(-1e-5, 1e-5, n // 8),
        half,
        near,
    ]
    return np.concatenate(parts)


# -- the score grid -------------------------------------------------------------------


def test_grid_constants_agree() -> None:
    assert GRID == 10.0**-SCORE_DIGITS == 1e-6
    assert VECTOR_SCALE == 2048


@pytest.mark.parametrize(
    ("x", "expected"),
    [
        (0.5e-6, 0),
        (1.5e-6, 2),
        (2.5e-6, 2),
        (3.5e-6, 4),
        (-2.5e-6, -2),
        (-3.5e-6, -4),
        (12.5e-6, 12),
        (0.1234565, 123456),
        (0.1234575, 123458),
    ],
)
def test_ticks_round_exact_half_ticks_to_even(x: float, expected: int) -> None:
    assert x * 1e6 % 1 == 0.5  # the product really is a half-tick
    assert ticks(x) == expected
    assert quantize(x) == expected / 1e6
    assert int(ticks_array(np.array([x]))[0]) == expected
    assert float(quantize_array(np.array([x]))[0]) == expected / 1e6


def test_ticks_half_to_even_on_many_exact_half_ticks() -> None:
    g = rng(11)
    k = g.integers(-(10**8), 10**8, 5000)
    x = (k + 0.5) / 1e6
    exact = x * 1e6 == k + 0.5  # keep those whose product is exactly the half-tick
    assert exact.sum() > 1000
    expected = np.where(k % 2 == 0, k, k + 1)[exact]
    assert [ticks(float(v)) for v in x[exact]] == expected.tolist()
    assert np.array_equal(ticks_array(x[exact]), expected)


def test_ticks_match_an_exact_decimal_reference() -> None:
    xs = random_scores(12)
    assert [ticks(float(x)) for x in xs] == [reference_ticks(float(x)) for x in xs]


def test_array_versions_agree_with_scalar_versions_element_for_element() -> None:
    xs = random_scores(13)
    assert (xs < 0).sum() > 1000 and (xs > 0).sum() > 1000
    t = ticks_array(xs)
    q = quantize_array(xs)
    assert t.dtype == np.int64 and q.dtype == np.float64
    assert t.tolist() == [ticks(float(x)) for x in xs]
    scalar = np.array([quantize(float(x)) for x in xs], dtype=np.float64)
    assert q.tolist() == scalar.tolist()
    # bit for bit wherever the result is not zero (for zero see the test below)
    nonzero = scalar != 0
    assert nonzero.sum() > 3000
    assert np.array_equal(q[nonzero].view(np.int64), scalar[nonzero].view(np.int64))


def test_quantize_array_of_a_small_negative_is_positive_zero_like_quantize() -> None:
    xs = np.array([-1e-7, -4.9e-7, -0.0])
    assert [quantize(float(x)) for x in xs] == [0.0, 0.0, 0.0]
    assert [math.copysign(1.0, quantize(float(x))) for x in xs] == [1.0, 1.0, 1.0]
    assert [math.copysign(1.0, v) for v in quantize_array(xs).tolist()] == [1.0, 1.0, 1.0]


def test_array_versions_accept_float32_and_lists() -> None:
    xs = random_scores(14, 400).astype(np.float32)
    assert ticks_array(xs).tolist() == [ticks(float(x)) for x in xs]
    assert quantize_array(xs.tolist()).tolist() == [quantize(float(x)) for x in xs]


def test_quantize_lands_on_the_nearest_grid_point() -> None:
    for x in random_scores(15):
        q = quantize(float(x))
        assert abs(q - x) <= 0.5e-6 + 1e-15 * max(1.0, abs(x))
        assert q == ticks(float(x)) / 1e6


def test_quantize_is_idempotent() -> None:
    for x in random_scores(16):
        q = quantize(float(x))
        assert quantize(q) == q
        assert ticks(q) == ticks(float(x))
    q = quantize_array(random_scores(16))
    assert np.array_equal(quantize_array(q), q)


def test_a_grid_value_is_its_own_rounding_to_the_written_digits() -> None:
    """The pipeline writes grid values (scores, confidences) without rounding them
    again: each is its own ``round(x, SCORE_DIGITS)``, up to scores of 10^7, and so
    is every quantized random score."""
    assert SCORE_DIGITS == 6
    k = rng(18).integers(-(10**13), 10**13, 20000)  # grid values up to +-10^7
    for g in [*(k / 1e6).tolist(), *(k[:2000] % 10**6 / 1e6).tolist(), 0.0, 1.0, 0.5]:
        assert round(g, SCORE_DIGITS) == g
    for x in random_scores(19):
        q = quantize(float(x))
        assert round(q, SCORE_DIGITS) == q


def test_grid_value_nudged_by_a_few_ulps_quantizes_back_to_itself() -> None:
    k = rng(17).integers(-(10**9), 10**9, 3000)  # grid values up to +-1000
    for g in (k / 1e6).tolist():
        for direction in (math.inf, -math.inf):
            nudged = g
            for _ in range(4):
                nudged = math.nextafter(nudged, direction)
                assert nudged != g
                assert quantize(nudged) == g
        assert quantize(g * (1 + 1e-12)) == g


def test_grid_value_below_one_survives_float32_and_a_relative_1e7() -> None:
    k = rng(18).integers(0, 10**6, 5000)
    grid = k / 1e6  # scores in [0, 1)
    for g in grid.tolist():
        assert quantize(g * (1 + 1e-7)) == g
        assert quantize(g * (1 - 1e-7)) == g
        f = np.float32(g)
        assert quantize(float(f)) == g
        up, down = f, f
        for _ in range(3):
            up = np.nextafter(up, np.float32(2))
            down = np.nextafter(down, np.float32(-2))
            assert quantize(float(up)) == g
            assert quantize(float(down)) == g
    as32 = grid.astype(np.float32)
    assert np.array_equal(quantize_array(as32), grid)


# -- ranking ----------------------------------------------------------------------------


def test_ranked_orders_by_grid_score_then_chunk_id() -> None:
    items = [(0, 0.5, "b#0"), (1, 0.5 + 2e-7, "a#0"), (2, 0.7, "z#0"), (3, 0.4999996, "c#0")]
    # 0.5, 0.5000002 and 0.4999996 are one grid value: chunk ids decide;
    # the scores come back as they came, not put on the grid
    assert ranked(items) == [(2, 0.7), (1, 0.5 + 2e-7), (0, 0.5), (3, 0.4999996)]
    # a higher raw score below the grid's resolution does not win
    assert ranked([(0, 0.5 + 4e-7, "y"), (1, 0.5, "x")]) == [(1, 0.5), (0, 0.5 + 4e-7)]
    # one tick apart is a real difference
    assert ranked([(0, 0.500001, "y"), (1, 0.5, "x")]) == [(0, 0.500001), (1, 0.5)]
    # 0.5000015 * 1e6 is exactly 500001.5: half to even makes it 500002 ticks, a tie
    # with 0.500002 that the chunk id breaks
    assert 0.5000015 * 1e6 == 500001.5
    assert ranked([(0, 0.500002, "b"), (1, 0.5000015, "a")]) == [(1, 0.5000015), (0, 0.500002)]


def test_ranked_limit_keeps_the_best() -> None:
    items = [(i, s, f"c#{i}") for i, s in enumerate([0.1, 0.9, 0.3, 0.9, 0.5])]
    assert ranked(items, limit=2) == [(1, 0.9), (3, 0.9)]
    assert ranked(items, limit=0) == []
    assert ranked(items, limit=99) == ranked(items)
    assert [row for row, _ in ranked(items)] == [1, 3, 4, 2, 0]
    assert ranked(iter(items), limit=1) == [(1, 0.9)]  # any iterable


def test_ranked_matches_a_reference_sort_on_random_ties() -> None:
    g = rng(21)
    n = 2000
    # few distinct grid values plus sub-tick noise: many ties, including negative scores
    base = g.integers(-50, 50, n) / 1e3
    scores = (base + g.uniform(-4.9e-7, 4.9e-7, n)).tolist()
    ids = [f"doc-{g.integers(0, 400)}#{i}" for i in range(n)]
    items = list(zip(range(n), scores, ids, strict=True))
    order = sorted(range(n), key=lambda i: (-reference_ticks(scores[i]), ids[i]))
    result = ranked(items, limit=500)
    assert [row for row, _ in result] == order[:500]
    assert all(score == scores[row] for row, score in result)  # returned as they came
    grid = [ticks(s) for _, s in result]
    assert grid == sorted(grid, reverse=True)
    # the sub-tick noise is ignored: the raw scores are not in descending order
    raw = [s for _, s in result]
    assert raw != sorted(raw, reverse=True)
    # the order does not depend on the input order
    shuffled = [items[i] for i in g.permutation(n)]
    assert ranked(shuffled, limit=500) == result


# -- encoding ----------------------------------------------------------------------------


def test_encoding_is_integer_float32_within_the_scale() -> None:
    g = rng(31)
    for d in DIMS:
        raw = g.standard_normal((ROWS, d)).astype(np.float32)
        enc = encode_vectors(raw)
        assert enc.dtype == np.float32 and enc.shape == raw.shape
        assert np.array_equal(enc, np.rint(enc))
        assert np.abs(enc).max() <= VECTOR_SCALE
        assert np.array_equal(np.sign(enc[enc != 0]), np.sign(raw[enc != 0]))
        # |encoded| is the scale up to the rounding: at most sqrt(d)/2 off
        norms = np.sqrt(squared_norms(enc))
        assert np.all(np.abs(norms - VECTOR_SCALE) <= math.sqrt(d) / 2)


def test_encoding_matches_the_documented_formula() -> None:
    raw = rng(32).standard_normal((50, 384)).astype(np.float32)
    enc = encode_vectors(raw)
    for row, out in zip(raw, enc, strict=True):
        norm = math.sqrt(math.fsum(float(v) * float(v) for v in row))
        assert out.tolist() == [float(round(VECTOR_SCALE * float(v) / norm)) for v in row]


def test_encoding_of_axis_vectors_and_zero_rows() -> None:
    assert encode_vectors(np.array([0.0, 0.0, -5.0, 0.0])).tolist() == [0, 0, -2048, 0]
    assert encode_vectors(np.array([3.0, 4.0])).tolist() == [1229, 1638]  # 2048*0.6, 2048*0.8
    m = rng(33).standard_normal((4, 16)).astype(np.float32)
    m[2] = 0.0
    enc = encode_vectors(m)
    assert np.array_equal(enc[2], np.zeros(16, np.float32))
    assert np.all(np.abs(enc[[0, 1, 3]]).sum(axis=1) > 0)
    assert not np.isnan(enc).any()
    assert encode_vectors(np.zeros(5)).tolist() == [0.0] * 5


def test_encoding_one_dimensional_in_one_dimensional_out() -> None:
    raw = rng(34).standard_normal((3, 256)).astype(np.float32)
    one = encode_vectors(raw[1])
    assert one.ndim == 1 and one.shape == (256,) and one.dtype == np.float32
    assert np.array_equal(one, encode_vectors(raw)[1])


@pytest.mark.parametrize("factor", [3.0, 1e-3, 0.1, 7.25, 1e6, 2.0**-20])
def test_encoding_ignores_a_positive_scale(factor: float) -> None:
    raw = rng(35).standard_normal((400, 384)).astype(np.float32)
    enc = encode_vectors(raw)
    assert np.array_equal(encode_vectors(raw.astype(np.float64) * factor), enc)


def test_encoding_ignores_power_of_two_scaling_in_float32() -> None:
    raw = rng(36).standard_normal((400, 384)).astype(np.float32)
    enc = encode_vectors(raw)
    for factor in (np.float32(2.0), np.float32(0.25), np.float32(1024.0)):
        assert np.array_equal(encode_vectors(raw * factor), enc)


def test_encoding_does_not_depend_on_the_batch() -> None:
    g = rng(37)
    raw = g.standard_normal((200, 384)).astype(np.float32)
    enc = encode_vectors(raw)
    one_by_one = np.stack([encode_vectors(row) for row in raw])
    assert np.array_equal(one_by_one, enc)
    perm = g.permutation(len(raw))
    assert np.array_equal(encode_vectors(raw[perm]), enc[perm])
    assert np.array_equal(encode_vectors(raw[:7]), enc[:7])
    assert np.array_equal(encode_vectors(raw), enc)  # same bits on repeat


def test_squared_norms_are_exact_integer_sums() -> None:
    enc = encode_vectors(rng(38).standard_normal((100, 1536)).astype(np.float32))
    sq = squared_norms(enc)
    assert sq.dtype == np.float64
    assert sq.tolist() == [float(sum(int(v) ** 2 for v in row)) for row in enc]
    bound = (VECTOR_SCALE + math.sqrt(1536) / 2) ** 2
    assert sq.max() <= bound < 2**24
    assert squared_norms(enc[0]).tolist() == [sq[0]]  # 1-D in: one norm


# -- exact dot products ---------------------------------------------------------------------


def encoded_pair(
    seed: int, d: int, rows: int = ROWS
) -> tuple[np.ndarray[Any, np.dtype[np.float32]], np.ndarray[Any, np.dtype[np.float32]]]:
    g = rng(seed)
    raw = g.standard_normal((rows, d)).astype(np.float32)
    # some rows correlated with the query, so dots span the whole range
    query = g.standard_normal(d).astype(np.float32)
    raw[: rows // 3] += np.float32(2.0) * query
    return encode_vectors(raw), encode_vectors(query)


@pytest.mark.parametrize("d", DIMS)
def test_encoded_dot_products_are_identical_in_every_summation_order(d: int) -> None:
    m, q = encoded_pair(40 + d, d)
    dots = dot_rows(m, q)
    assert dots.dtype == np.float64
    assert np.array_equal(dots, np.rint(dots))  # integers

    exact = np.array([math.fsum(row) for row in m.astype(np.float64) * q.astype(np.float64)])
    assert np.array_equal(dots, exact)
    python_ints = [sum(int(a) * int(b) for a, b in zip(row, q, strict=True)) for row in m[:20]]
    assert dots[:20].tolist() == [float(v) for v in python_ints]

    einsum = np.einsum("ij,j->i", m, q)
    assert einsum.dtype == np.float32
    assert np.array_equal(einsum.astype(np.float64), dots)

    forward = np.cumsum(m * q, axis=1, dtype=np.float32)[:, -1]
    reverse = np.cumsum(m[:, ::-1] * q[::-1], axis=1, dtype=np.float32)[:, -1]
    assert np.array_equal(forward.astype(np.float64), dots)
    assert np.array_equal(reverse.astype(np.float64), dots)

    perm = rng(d).permutation(d)  # another order for the BLAS kernel itself
    assert np.array_equal((m[:, perm] @ q[perm]).astype(np.float64), dots)
    assert np.array_equal((q @ m.T).astype(np.float64), dots)
    assert np.array_equal(np.array([float(np.dot(row, q)) for row in m]), dots)

    for k in (1, 2, 3, 7, 16, 64, 101, ROWS - 1):
        assert np.array_equal((m[:k] @ q).astype(np.float64), dots[:k])
        assert np.array_equal(dot_rows(m[k:], q), dots[k:])
    assert np.array_equal(dot_rows(np.ascontiguousarray(m[::-1]), q), dots[::-1])
    assert np.array_equal(dot_rows(np.asfortranarray(m), q), dots)


@pytest.mark.parametrize("d", DIMS)
def test_unencoded_unit_vectors_depend_on_the_summation_order(d: int) -> None:
    """The contrast: without the encoding, float32 dot products of unit vectors
    differ in their last bits between summation orders, which is what the encoding
    removes."""
    g = rng(40 + d)
    raw = g.standard_normal((ROWS, d)).astype(np.float32)
    query = g.standard_normal(d).astype(np.float32)
    u, uq = unit_rows(raw), unit_rows(query)[0]
    forward = np.cumsum(u * uq, axis=1, dtype=np.float32)[:, -1]
    reverse = np.cumsum(u[:, ::-1] * uq[::-1], axis=1, dtype=np.float32)[:, -1]
    blas = u @ uq
    # BLAS-independent: two sequential orders disagree on many rows
    assert (forward != reverse).sum() > ROWS // 4
    assert (blas != reverse).sum() > 0
    # ... while the same rows, encoded, agree in every order
    m, q = encode_vectors(raw), encode_vectors(query)
    assert np.array_equal(
        np.cumsum(m * q, axis=1, dtype=np.float32)[:, -1],
        np.cumsum(m[:, ::-1] * q[::-1], axis=1, dtype=np.float32)[:, -1],
    )
    # and the disagreement is in the last bits only
    assert np.allclose(forward, reverse, rtol=0, atol=1e-5)


# -- cosines ------------------------------------------------------------------------------


@pytest.mark.parametrize("d", DIMS)
def test_cosines_follow_the_documented_formula_in_python_floats(d: int) -> None:
    m, q = encoded_pair(60 + d, d)
    dots, sq = dot_rows(m, q), squared_norms(m)
    q_sq = float(squared_norms(q)[0])
    cos = cosines(dots, inverse_norms(sq), float(inverse_norms(np.array([q_sq]))[0]))
    assert cos.dtype == np.float64
    expected = [
        dot * (1 / math.sqrt(a)) * (1 / math.sqrt(q_sq))
        for dot, a in zip(dots.tolist(), sq.tolist(), strict=True)
    ]
    assert cos.tolist() == expected
    assert np.all(cos >= -1.0 - 1e-15) and np.all(cos <= 1.0 + 1e-15)
    assert cos[: ROWS // 3].mean() > 0.6 > abs(cos[ROWS // 3 :].mean())  # correlated rows


def test_inverse_norms_are_zero_for_zero_vectors_and_cosines_then_zero() -> None:
    assert inverse_norms(np.array([0.0, 25.0, 4.0])).tolist() == [0.0, 0.2, 0.5]
    dots = np.array([0.0, 0.0, 10.0])
    rows = inverse_norms(np.array([0.0, 25.0, 25.0]))
    assert cosines(dots, rows, 0.0).tolist() == [0.0, 0.0, 0.0]
    assert cosines(dots, rows, 0.5).tolist() == [0.0, 0.0, 1.0]
    zero = encode_vectors(np.zeros((2, 8)))
    q = encode_vectors(np.ones(8))
    q_inverse = float(inverse_norms(squared_norms(q))[0])
    out = cosines(dot_rows(zero, q), inverse_norms(squared_norms(zero)), q_inverse)
    assert out.tolist() == [0.0, 0.0]
    assert not np.isnan(out).any()


def test_cosine_of_an_encoded_vector_with_itself_is_one_on_the_grid() -> None:
    g = rng(70)
    for d in DIMS:
        m = encode_vectors(g.standard_normal((ROWS, d)).astype(np.float32))
        sq = squared_norms(m)
        inverse = inverse_norms(sq)
        self_dots = np.einsum("ij,ij->i", m, m).astype(np.float64)
        assert np.array_equal(self_dots, sq)
        for i in range(0, ROWS, 7):
            (c,) = cosines(dot_rows(m, m[i])[i : i + 1], inverse[i : i + 1], float(inverse[i]))
            assert abs(c - 1.0) <= 4e-16 and quantize(c) == 1.0
        # a positively scaled copy encodes identically: cosine 1 too
        raw = g.standard_normal(d).astype(np.float32)
        a, b = encode_vectors(raw), encode_vectors(raw.astype(np.float64) * 3.0)
        assert np.array_equal(a, b)


def test_encoded_cosines_are_close_to_the_exact_cosines() -> None:
    g = rng(71)
    for d in DIMS:
        raw = g.standard_normal((ROWS, d))
        query = g.standard_normal(d)
        m, q = encode_vectors(raw), encode_vectors(query)
        q_inverse = float(inverse_norms(squared_norms(q))[0])
        cos = cosines(dot_rows(m, q), inverse_norms(squared_norms(m)), q_inverse)
        exact = (raw @ query) / np.linalg.norm(raw, axis=1) / np.linalg.norm(query)
        err = np.abs(cos - exact)
        assert err.mean() < 3e-4  # "about 1e-4 in a cosine"
        assert err.max() < 2e-3


# -- unit rows --------------------------------------------------------------------------------


def test_unit_rows_have_unit_length_and_keep_zero_rows() -> None:
    g = rng(80)
    for d in DIMS:
        raw = g.standard_normal((ROWS, d)).astype(np.float32) * g.uniform(1e-3, 1e3, (ROWS, 1))
        raw[5] = 0.0
        u = unit_rows(raw)
        assert u.dtype == np.float32 and u.shape == raw.shape
        lengths = np.sqrt((u.astype(np.float64) ** 2).sum(axis=1))
        nonzero = np.ones(ROWS, bool)
        nonzero[5] = False
        assert np.all(np.abs(lengths[nonzero] - 1.0) <= 1e-6)
        assert np.array_equal(u[5], np.zeros(d, np.float32))
        assert np.array_equal(np.sign(u), np.sign(raw))


def test_unit_rows_are_deterministic_and_batch_independent() -> None:
    g = rng(81)
    raw = g.standard_normal((ROWS, 384)).astype(np.float32)
    u = unit_rows(raw)
    again = unit_rows(raw.copy())
    assert np.array_equal(u.view(np.int32), again.view(np.int32))  # same bits
    perm = g.permutation(ROWS)
    assert np.array_equal(unit_rows(raw[perm]), u[perm])
    assert np.array_equal(np.vstack([unit_rows(row) for row in raw]), u)
    # the direction is kept: re-normalising a unit row changes nothing beyond rounding
    assert np.allclose(unit_rows(u), u, rtol=0, atol=1e-7)

"""Numbers that come out the same on every machine.

A fixture, a ranking or a report must not depend on the CPU's SIMD kernels,
the BLAS build, the thread count or the numpy version. Two rules make that
true by construction.

**Scores live on a grid.** Every score that is ranked, compared with a floor
or written (BM25, cosine, confidence, fused, rerank) is first put on the grid
of ``GRID = 1e-6``::

    q(x) = rint(x * 10^6) / 10^6        (round half to even)

computed with one IEEE multiplication, an exact rounding to an integer and one
IEEE division, each exactly rounded on every CPU. Rankings compare the grid's
integer ticks, ``rint(x * 10^6)``, and break equal ticks by chunk id; floors
compare grid values; the JSON writer's 6 decimals print grid values exactly.
Float64 sums and ``log`` differ between machines by about 1e-15 relative, so
two machines put a score on different grid points only when its exact value
lies that close to a half-tick (about one score in 10^9); a re-quantised grid
value that moved by less than half a tick (a few ulps, or 1e-7 relative of a
score below 1) does not move at all.

**Vector arithmetic is exact.** A vector is stored and searched *encoded*: its
unit-length direction scaled by ``VECTOR_SCALE = 2048`` and rounded to
integers, held as float32::

    encode(v) = rint(2048 * v / |v|),   |v| = sqrt(fsum(v_i^2)) in float64

(``math.fsum`` is correctly rounded, so the norm, and with it every integer,
is the same everywhere). Every partial sum of a dot product of two encoded
vectors is an integer of magnitude at most |a| |b| <= (2048 + sqrt(d)/2)^2 <
2^24 (Cauchy-Schwarz on any subset of the terms), so float32 arithmetic
computes it exactly in any order, with or without FMA, on any BLAS kernel and
any number of threads. The cosine of two encoded vectors is then

    cos(a, b) = dot(a, b) * (1 / |a|) * (1 / |b|)     in float64, left to right

where |a| = sqrt(|a|^2) of an exact integer, and every square root, division
and product is exactly rounded (the inverse norms of stored vectors are
computed once, when they are loaded). Encoding costs at most 1 / 4096 per component
(about 1e-4 in a cosine); it changes no ranking that was not a near-tie.

What stays machine-dependent: an embedder's own floats (a transformer's
output differs in its last bits from CPU to CPU; the hashing embedder's does
not) and a remote service's scores. Snapshot comparison absorbs those with its
tolerance (``snapshot.tolerance``, see ``ragsnap.snapshot.fixturediff``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = [
    "GRID",
    "SCORE_DIGITS",
    "TICKS_PER_UNIT",
    "VECTOR_ENCODING",
    "VECTOR_SCALE",
    "VECTOR_SPLIT",
    "cosines",
    "dot_rows",
    "encode_vectors",
    "exact_dots",
    "inverse_norms",
    "quantize",
    "quantize_array",
    "ranked",
    "squared_norms",
    "ticks",
    "ticks_array",
    "unit_rows",
]

SCORE_DIGITS = 6
GRID = 1e-6
#: grid ticks per unit score; exactly representable: x * 10^6 is one exactly rounded product
TICKS_PER_UNIT = 1e6

VECTOR_SCALE = 2048
#: the compiled vector search holds an encoded component ``e`` as ``VECTOR_SPLIT * high
#: + low``, both int8 (``kernels.split_encoded``)
VECTOR_SPLIT = 16
#: recorded in every store's meta: vectors written with another encoding are refused
VECTOR_ENCODING = "unit-int11-v1"


def ticks(x: float) -> int:
    """``x`` in grid ticks: ``rint(x * 10^6)``, half to even (Python's ``round``)."""
    return round(x * TICKS_PER_UNIT)


def quantize(x: float) -> float:
    """``x`` on the score grid (see the module docstring)."""
    return round(x * TICKS_PER_UNIT) / TICKS_PER_UNIT


def ticks_array(x: NDArray[Any]) -> NDArray[np.int64]:
    """``ticks`` of every element (``np.rint`` rounds half to even, like ``round``)."""
    return np.rint(np.asarray(x, dtype=np.float64) * TICKS_PER_UNIT).astype(np.int64)


def quantize_array(x: NDArray[Any]) -> NDArray[np.float64]:
    """``quantize`` of every element, as float64."""
    out: NDArray[np.float64] = (
        np.rint(np.asarray(x, dtype=np.float64) * TICKS_PER_UNIT) / TICKS_PER_UNIT
    )
    return out + 0.0  # -0.0 becomes 0.0, as ``quantize`` gives


def ranked(
    items: Iterable[tuple[int, float, str]], limit: int | None = None
) -> list[tuple[int, float]]:
    """``(row, score, chunk_id)`` items as ``(row, score)``, best grid score first.

    Ties on the grid are broken by chunk id; ``limit`` keeps the first ones.
    Scores are returned as they came: whoever derives another score from them
    does it with the exact value and puts the result on the grid once.
    """
    keyed = sorted((-ticks(s), cid, row, s) for row, s, cid in items)
    if limit is not None:
        keyed = keyed[:limit]
    return [(row, score) for _, _, row, score in keyed]


def _row_norms(matrix: NDArray[np.float64]) -> NDArray[np.float64]:
    """Correctly rounded Euclidean norm of every row (``math.fsum`` of the squares)."""
    squares = (matrix * matrix).tolist()  # float32 values squared are exact in float64
    return np.sqrt(np.array([math.fsum(row) for row in squares], dtype=np.float64))


def unit_rows(matrix: NDArray[Any]) -> NDArray[np.float32]:
    """Rows scaled to unit length with a correctly rounded norm; zero rows stay zero."""
    m = np.atleast_2d(np.asarray(matrix, dtype=np.float64))
    norms = _row_norms(m)
    norms[norms == 0] = 1.0
    out: NDArray[np.float32] = (m / norms[:, None]).astype(np.float32)
    return out


def encode_vectors(matrix: NDArray[Any]) -> NDArray[np.float32]:
    """The encoded form of every row (1-D in, 1-D out): integers in float32.

    ``rint(VECTOR_SCALE * v / |v|)`` with the correctly rounded norm; a zero
    row stays zero. The result is exact in float32 (integers up to 2048).
    """
    m = np.asarray(matrix, dtype=np.float64)
    flat = m.ndim == 1
    m = np.atleast_2d(m)
    norms = _row_norms(m)
    norms[norms == 0] = 1.0
    encoded = np.rint(m / norms[:, None] * VECTOR_SCALE).astype(np.float32)
    return encoded[0] if flat else encoded


def squared_norms(encoded: NDArray[np.float32]) -> NDArray[np.float64]:
    """Squared norms of encoded rows: sums of integer squares, exact in float64."""
    m = np.atleast_2d(np.asarray(encoded, dtype=np.float64))
    out: NDArray[np.float64] = (m * m).sum(axis=1)
    return out


def dot_rows(matrix: NDArray[np.float32], vector: NDArray[np.float32]) -> NDArray[np.float64]:
    """``matrix @ vector`` for encoded operands: exact in float32 whatever the
    summation order (with the compiled ``dots`` kernel, the places stores compute dot
    products)."""
    return exact_dots(matrix @ vector)


def exact_dots(dots: NDArray[np.float32]) -> NDArray[np.float64]:
    """Exact float32 dot products as float64, a zero always ``+0.0``: a reordered sum
    of a zero and negative zeros may be ``-0.0``, which would print as such."""
    out: NDArray[np.float64] = dots.astype(np.float64) + 0.0
    return out


def inverse_norms(squares: NDArray[np.float64]) -> NDArray[np.float64]:
    """``1 / sqrt(s)`` of exact squared norms; 0 for a zero vector (its cosines are 0)."""
    out = np.zeros(len(squares), dtype=np.float64)
    nonzero = squares > 0
    out[nonzero] = 1.0 / np.sqrt(squares[nonzero])
    return out


def cosines(
    dots: NDArray[np.float64], row_inverse_norms: NDArray[np.float64], query_inverse_norm: float
) -> NDArray[np.float64]:
    """Cosines from exact dots and inverse norms: ``dot * (1/|a|) * (1/|b|)``, left to
    right; 0 where either vector is zero."""
    out: NDArray[np.float64] = dots * row_inverse_norms * query_inverse_norm
    return out

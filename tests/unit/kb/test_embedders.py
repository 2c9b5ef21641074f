"""Embedders that need no service (ragsnap.kb.embedders): hashing, frozen, make_embedder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conftest import REPO, write_json
from ragsnap.errors import EmbedderError, InputError, UsageError
from ragsnap.kb.embedders import (
    EMBEDDER_KINDS,
    AliasEmbedder,
    Fingerprint,
    FrozenEmbedder,
    HashingEmbedder,
    OpenAIEmbedder,
    make_embedder,
)


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b)


# --- hashing ----------------------------------------------------------------------------


def test_hashing_rows_are_unit_length_float32_or_zero_for_empty_text() -> None:
    embedder = HashingEmbedder()
    texts = ["connection pool exhausted", "缓存雪崩", "HikariCP maxPoolSize=10", "", "the of and"]
    matrix = embedder.embed_documents(texts, [f"c{i}" for i in range(len(texts))])
    assert matrix.shape == (5, 256) and matrix.dtype == np.float32
    norms = np.linalg.norm(matrix, axis=1)
    np.testing.assert_allclose(norms[:3], 1.0, atol=1e-6)
    # no features (empty text, only stop words): a zero vector, never NaN
    assert not matrix[3:].any()
    query = embedder.embed_query("connection pool exhausted")
    assert query.dtype == np.float32
    np.testing.assert_array_equal(query, matrix[0])
    assert embedder.embed_documents([], []).shape == (0, 256)


_VECTOR_SCRIPT = """
import sys
from ragsnap.kb.embedders import HashingEmbedder
sys.stdout.write(HashingEmbedder(64).embed_query(sys.argv[1]).tobytes().hex())
"""


@pytest.mark.parametrize("seed", ["0", "4242"])
def test_hashing_is_deterministic_across_processes(seed: str) -> None:
    text = "Connection pool exhausted: 连接池耗尽 after 30s (HikariCP)"
    env = {**os.environ, "PYTHONPATH": str(REPO / "eval"), "PYTHONHASHSEED": seed}
    proc = subprocess.run(
        [sys.executable, "-c", _VECTOR_SCRIPT, text],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=True,
    )
    assert proc.stdout == HashingEmbedder(64).embed_query(text).tobytes().hex()


def test_hashing_related_texts_are_closer_than_unrelated() -> None:
    embedder = HashingEmbedder()
    query = embedder.embed_query("connection pool exhausted")
    related = embedder.embed_query("the pool of connections is exhausted")
    unrelated = embedder.embed_query("kubernetes pod restarts after OOMKilled")
    assert cosine(query, related) > cosine(query, unrelated)


def test_hashing_works_for_chinese() -> None:
    embedder = HashingEmbedder()
    query = embedder.embed_query("缓存雪崩")
    related = embedder.embed_query("缓存 key 雪崩")
    unrelated = embedder.embed_query("数据库主从延迟")
    assert np.linalg.norm(query) == pytest.approx(1.0, abs=1e-6)
    assert cosine(query, related) > cosine(query, unrelated)


@pytest.mark.parametrize("dimension", [0, 15, 8193, -1])
def test_hashing_dimension_out_of_range(dimension: int) -> None:
    with pytest.raises(UsageError, match="16 to 8192"):
        HashingEmbedder(dimension)


@pytest.mark.parametrize("dimension", [16, 8192])
def test_hashing_dimension_bounds_are_allowed(dimension: int) -> None:
    assert HashingEmbedder(dimension).embed_query("pool").shape == (dimension,)


def test_hashing_fingerprint() -> None:
    fingerprint = HashingEmbedder(128).fingerprint
    assert fingerprint == Fingerprint("hashing", "char-ngram", HashingEmbedder.VERSION, 128)
    assert fingerprint.to_json() == {
        "kind": "hashing",
        "model": "char-ngram",
        "revision": "2",
        "dimension": 128,
    }
    assert Fingerprint.from_json(fingerprint.to_json()) == fingerprint
    assert str(fingerprint) == "hashing:char-ngram@2 (dimension 128)"
    assert HashingEmbedder(256).fingerprint != fingerprint


# --- frozen -----------------------------------------------------------------------------


def frozen_file(tmp_path: Path, **override: Any) -> Path:
    data: dict[str, Any] = {
        "model": "my-model",
        "revision": "2026-11",
        "dimension": 3,
        "chunks": {"mysql-pool#0": [3, 4, 0], "k8s#1": [0, 0, 2.5]},
        "queries": {"How big is the pool?": [1, 1, 0], "缓存雪崩": [0, 1, 0]},
    }
    data.update(override)
    return write_json(tmp_path / "vectors.json", {k: v for k, v in data.items() if v is not None})


def test_frozen_embeds_chunks_by_id_and_queries_by_text(tmp_path: Path) -> None:
    embedder = FrozenEmbedder(frozen_file(tmp_path))
    matrix = embedder.embed_documents(["text is ignored", "so is this"], ["k8s#1", "mysql-pool#0"])
    assert matrix.dtype == np.float32
    np.testing.assert_allclose(matrix, [[0, 0, 1], [0.6, 0.8, 0]], atol=1e-6)
    np.testing.assert_allclose(
        embedder.embed_query("How big is the pool?"), [2**-0.5, 2**-0.5, 0], atol=1e-6
    )
    np.testing.assert_allclose(embedder.embed_query("缓存雪崩"), [0, 1, 0])
    assert embedder.embed_documents([], []).shape == (0, 3)
    assert embedder.fingerprint == Fingerprint("frozen", "my-model", "2026-11", 3)


def test_frozen_revision_is_optional(tmp_path: Path) -> None:
    embedder = FrozenEmbedder(frozen_file(tmp_path, revision=None))
    assert embedder.fingerprint == Fingerprint("frozen", "my-model", "", 3)


def test_frozen_missing_vector_is_an_error_naming_it_and_the_file(tmp_path: Path) -> None:
    path = frozen_file(tmp_path)
    embedder = FrozenEmbedder(path)
    with pytest.raises(EmbedderError) as info:
        embedder.embed_documents(["a", "b"], ["mysql-pool#0", "redis#7"])
    message = str(info.value)
    assert str(path) in message and "'redis#7'" in message and "`chunks`" in message
    with pytest.raises(EmbedderError) as info:
        # queries match by exact text: a trailing space is another query
        embedder.embed_query("How big is the pool? ")
    message = str(info.value)
    assert str(path) in message and "'How big is the pool? '" in message


def test_frozen_missing_query_fix_names_the_queries_key(tmp_path: Path) -> None:
    embedder = FrozenEmbedder(frozen_file(tmp_path))
    with pytest.raises(EmbedderError, match="add it under `queries`"):
        embedder.embed_query("not there")


@pytest.mark.parametrize(
    ("override", "pointer", "text"),
    [
        ({"chunks": {"a": [1, 2]}}, "/chunks/a", "not 3 numbers that are finite in float32"),
        ({"chunks": {"a": [1, 2, 3, 4]}}, "/chunks/a", "not 3 numbers that are finite in float32"),
        ({"queries": {"q": [1, "2", 3]}}, "/queries/q", "not 3 numbers that are finite in float32"),
        ({"queries": {"q": None}}, "/queries/q", "not 3 numbers that are finite in float32"),
        ({"model": None}, "/model", "has no `model`"),
        ({"dimension": None}, "/dimension", "has no `dimension`"),
        ({"chunks": None}, "/chunks", "has no `chunks`"),
        ({"queries": None}, "/queries", "has no `queries`"),
        ({"dimension": 0}, "/dimension", "positive integer"),
        ({"dimension": "3"}, "/dimension", "positive integer"),
    ],
)
def test_frozen_bad_file_is_input_error_with_pointer(
    tmp_path: Path, override: dict[str, Any], pointer: str, text: str
) -> None:
    path = frozen_file(tmp_path, **override)
    with pytest.raises(InputError) as info:
        FrozenEmbedder(path)
    assert info.value.path == str(path)
    assert info.value.pointer == pointer
    assert text in str(info.value)


def test_frozen_non_finite_number_is_input_error(tmp_path: Path) -> None:
    # strict JSON has no NaN or Infinity; an overflowing literal is refused when parsed
    path = tmp_path / "vectors.json"
    path.write_text(
        '{"model": "m", "dimension": 2, "chunks": {"a": [1e999, 0]}, "queries": {}}',
        encoding="utf-8",
    )
    with pytest.raises(InputError) as info:
        FrozenEmbedder(path)
    assert info.value.path == str(path) and "line 1" in str(info.value)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_frozen_vector_that_overflows_float32_is_input_error(tmp_path: Path) -> None:
    path = frozen_file(tmp_path, chunks={"a": [1e39, 0, 0]})
    with pytest.raises(InputError) as info:
        FrozenEmbedder(path)
    assert info.value.pointer == "/chunks/a"


def test_frozen_boolean_components_are_input_error(tmp_path: Path) -> None:
    path = frozen_file(tmp_path, chunks={"a": [True, False, 0]})
    with pytest.raises(InputError) as info:
        FrozenEmbedder(path)
    assert info.value.pointer == "/chunks/a"


@pytest.mark.parametrize(
    ("content", "text"),
    [
        (None, "file not found"),
        ("[1, 2, 3]", "is not a JSON object"),
        ('{"model": "m", ', "is not valid JSON"),
    ],
)
def test_frozen_unreadable_file(tmp_path: Path, content: str | None, text: str) -> None:
    path = tmp_path / "vectors.json"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    with pytest.raises(InputError, match=text):
        FrozenEmbedder(path)


def test_frozen_tables_must_be_objects(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="`chunks` must be an object"):
        FrozenEmbedder(frozen_file(tmp_path, chunks=[[1, 2, 3]]))


# --- make_embedder ----------------------------------------------------------------------


def test_make_embedder_hashing_is_the_default() -> None:
    default = make_embedder({})
    assert isinstance(default, HashingEmbedder) and default.fingerprint.dimension == 256
    sized = make_embedder({"kind": "hashing", "dimension": 64})
    assert isinstance(sized, HashingEmbedder) and sized.fingerprint.dimension == 64
    with pytest.raises(UsageError):
        make_embedder({"kind": "hashing", "dimension": 8})


def test_make_embedder_frozen_resolves_relative_path_against_base(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = frozen_file(tmp_path)
    monkeypatch.chdir(tmp_path.parent)  # the working folder must not matter
    embedder = make_embedder({"kind": "frozen", "path": "vectors.json"}, base=tmp_path)
    assert isinstance(embedder, FrozenEmbedder)
    assert embedder.fingerprint.model == "my-model"
    # an absolute path ignores base
    other = make_embedder({"kind": "frozen", "path": str(path)}, base=tmp_path / "elsewhere")
    assert other.fingerprint == embedder.fingerprint
    # without base a relative path is relative to the working folder
    monkeypatch.chdir(tmp_path)
    assert make_embedder({"kind": "frozen", "path": "vectors.json"}).fingerprint.dimension == 3


def test_make_embedder_frozen_needs_path(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="`path`"):
        make_embedder({"kind": "frozen"}, base=tmp_path)
    with pytest.raises(InputError, match="file not found"):
        make_embedder({"kind": "frozen", "path": "missing.json"}, base=tmp_path)


def test_make_embedder_openai(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # building the client contacts nothing; the port need not be open
    (tmp_path / "token.txt").write_text("secret-token\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path.parent)
    spec = {
        "kind": "openai",
        "baseUrl": "http://127.0.0.1:9/v1/",
        "model": "text-embedding-3-small",
        "dimension": 8,
        "tokenFile": "token.txt",
    }
    embedder = make_embedder(spec, base=tmp_path)
    assert isinstance(embedder, OpenAIEmbedder)
    assert embedder.fingerprint == Fingerprint(
        "openai", "text-embedding-3-small", "http://127.0.0.1:9/v1", 8
    )
    # the token file is resolved against base too
    with pytest.raises(InputError, match="cannot be read"):
        make_embedder(spec, base=tmp_path / "elsewhere")


@pytest.mark.parametrize(
    "spec",
    [
        {"kind": "openai", "model": "m"},
        {"kind": "openai", "baseUrl": "", "model": "m"},
        {"kind": "openai", "baseUrl": "http://127.0.0.1:9"},
    ],
)
def test_make_embedder_openai_needs_base_url_and_model(spec: dict[str, Any]) -> None:
    with pytest.raises(UsageError, match="`baseUrl` and `model`"):
        make_embedder(spec)


def test_make_embedder_openai_refuses_plain_http_to_a_remote_host() -> None:
    with pytest.raises(UsageError, match="plain http://"):
        make_embedder({"kind": "openai", "baseUrl": "http://example.com/v1", "model": "m"})


@pytest.mark.parametrize("kind", ["bm25", "Hashing", "sentence_transformer", ""])
def test_make_embedder_unknown_kind(kind: str) -> None:
    with pytest.raises(UsageError) as info:
        make_embedder({"kind": kind})
    assert repr(kind) in str(info.value)
    for known in EMBEDDER_KINDS:
        assert known in str(info.value)


def test_fingerprint_round_trips_through_json() -> None:
    fingerprint = Fingerprint("frozen", "模型", "r1", 7)
    assert Fingerprint.from_json(json.loads(json.dumps(fingerprint.to_json()))) == fingerprint
    assert Fingerprint.from_json({**fingerprint.to_json(), "dimension": "7"}) == fingerprint


ALIASES = """\
note: regression plumbing for the pool fixture
groups:
  connection-pool: [connection pool, 连接池, maximumPoolSize]
  timeout: [timeout, 超时]
  pod: [pod]
"""


def alias_embedder(tmp_path: Path, text: str = ALIASES) -> AliasEmbedder:
    path = tmp_path / "aliases.yaml"
    path.write_text(text, encoding="utf-8")
    return AliasEmbedder(path)


def test_alias_vectors_match_across_languages(tmp_path: Path) -> None:
    embedder = alias_embedder(tmp_path)
    assert embedder.fingerprint.kind == "alias" and embedder.fingerprint.dimension == 3
    docs = embedder.embed_documents(
        ["连接池最大为二十，超时三十秒", "Set maximumPoolSize per POD", "nothing relevant"],
        ["a", "b", "c"],
    )
    query = embedder.embed_query("What is the Connection Pool timeout?")
    cosines = docs @ query
    assert cosines[0] == pytest.approx(1.0)  # the same two groups, in Chinese
    assert cosines[1] == pytest.approx(0.5)  # one shared group of two each
    assert cosines[2] == 0.0 and not docs[2].any()  # no group: the zero vector


def test_alias_terms_match_whole_words(tmp_path: Path) -> None:
    embedder = alias_embedder(tmp_path)
    assert not embedder.embed_query("spods and timeouts").any()
    assert embedder.embed_query("a pod's timeout").any()


def test_alias_fingerprint_follows_the_groups(tmp_path: Path) -> None:
    first = alias_embedder(tmp_path).fingerprint
    assert alias_embedder(tmp_path).fingerprint == first
    changed = alias_embedder(tmp_path, ALIASES.replace("[pod]", "[pod, node]")).fingerprint
    assert changed.model != first.model and changed.dimension == first.dimension
    assert make_embedder({"kind": "alias", "path": "aliases.yaml"}, tmp_path).fingerprint == (
        changed
    )


@pytest.mark.parametrize(
    ("text", "pointer"),
    [
        ("groups: {}\n", "/groups"),
        ("groups: {pool: pool}\n", "/groups/pool"),
        ("groups: {pool: [pool, '']}\n", "/groups/pool/1"),
        ("groups: {pool: [pool]}\ncolour: blue\n", "/colour"),
        ("[pool]\n", "/groups"),
    ],
)
def test_bad_alias_files(tmp_path: Path, text: str, pointer: str) -> None:
    with pytest.raises(InputError) as info:
        alias_embedder(tmp_path, text)
    assert info.value.pointer == pointer and "aliases.yaml" in str(info.value)


def test_alias_embedder_needs_a_path() -> None:
    with pytest.raises(UsageError, match="needs `path`"):
        make_embedder({"kind": "alias"})


# --- what makes vectors differ: fingerprints and their files' content -------------------


def test_file_sha256_reads_in_chunks_and_matches_the_whole_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import hashlib

    from ragsnap.kb import embedders

    path = tmp_path / "big.bin"
    data = os.urandom(10_000)
    path.write_bytes(data)
    reads: list[int] = []
    real_open = Path.open

    def counting_open(self: Path, *args: Any, **kwargs: Any) -> Any:
        stream = real_open(self, *args, **kwargs)
        read = stream.read
        stream.read = lambda n=-1: reads.append(n) or read(n)  # type: ignore[method-assign]
        return stream

    monkeypatch.setattr(embedders, "HASH_CHUNK_BYTES", 4096)
    monkeypatch.setattr(Path, "open", counting_open)
    assert embedders.file_sha256(path) == hashlib.sha256(data).hexdigest()
    assert reads == [4096, 4096, 4096, 4096]  # three chunks and the end, never the whole


def test_vectors_identity_follows_the_files_content_not_their_path(tmp_path: Path) -> None:
    from ragsnap.kb.embedders import embedder_files, vectors_identity

    path = frozen_file(tmp_path)
    frozen = FrozenEmbedder(path)
    identity = vectors_identity(frozen)
    assert embedder_files(frozen) == (path,)
    assert identity["fingerprint"] == frozen.fingerprint.to_json()
    moved = tmp_path / "moved"
    moved.mkdir()
    assert vectors_identity(FrozenEmbedder(frozen_file(moved))) == identity
    frozen_file(tmp_path, queries={"How big is the pool?": [0, 1, 1]})  # same model, revision
    assert vectors_identity(FrozenEmbedder(path))["files"] != identity["files"]
    hashing = HashingEmbedder(64)
    assert embedder_files(hashing) == ()
    assert vectors_identity(hashing) == {"fingerprint": hashing.fingerprint.to_json(), "files": []}

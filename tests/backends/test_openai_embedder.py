"""The OpenAI-compatible embedder against a real /v1/embeddings server on 127.0.0.1."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ragsnap.errors import BackendError, EmbedderError, UsageError
from ragsnap.kb.embedders import Fingerprint, OpenAIEmbedder, make_embedder

from .conftest import LoopbackServer, send_json

TOKEN = "sk-openai-test-51d0-SECRET"
MODEL = "text-embedding-3-small"


def raw_vector(text: str, dimension: int) -> list[float]:
    """The server's deterministic, deliberately not unit-length vector for ``text``."""
    seed = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")
    return (np.random.default_rng(seed).standard_normal(dimension) * 3.0).tolist()


def unit(text: str, dimension: int) -> np.ndarray:
    vec = np.asarray(raw_vector(text, dimension), dtype=np.float64)
    return vec / np.linalg.norm(vec)


class EmbeddingServer(LoopbackServer):
    """``POST /v1/embeddings`` in OpenAI's shape; ``mutate`` can spoil an answer."""

    methods = ("POST",)

    def __init__(self, dimension: int = 8) -> None:
        self.dimension = dimension
        self.status = 200
        self.shuffle = False
        self.mutate: Callable[[dict[str, Any]], Any] | None = None
        self.requests: list[tuple[dict[str, str], Any]] = []
        self.answers: list[Any] = []
        super().__init__()
        self.base_url = self.url + "/v1"

    def handle(self, request: BaseHTTPRequestHandler) -> None:
        body = json.loads(request.rfile.read(int(request.headers["Content-Length"])))
        with self._lock:
            self.requests.append((dict(request.headers), body))
        if request.path != "/v1/embeddings":
            send_json(request, 404, {"error": {"message": "not found"}})
            return
        if self.status != 200:
            send_json(request, self.status, {"error": {"message": "refused"}})
            return
        data = [
            {"object": "embedding", "index": i, "embedding": raw_vector(t, self.dimension)}
            for i, t in enumerate(body["input"])
        ]
        if self.shuffle:
            data = data[1::2][::-1] + data[0::2]
        answer: Any = {
            "object": "list",
            "data": data,
            "model": body["model"],
            "usage": {"prompt_tokens": 1, "total_tokens": 1},
        }
        if self.mutate is not None:
            answer = self.mutate(answer)
        with self._lock:
            self.answers.append(answer)
        send_json(request, 200, answer)

    @property
    def inputs(self) -> list[list[str]]:
        with self._lock:
            return [body["input"] for _, body in self.requests]


@pytest.fixture
def server() -> Iterator[EmbeddingServer]:
    with EmbeddingServer() as srv:
        yield srv


def embedder(server: EmbeddingServer, **kwargs: Any) -> OpenAIEmbedder:
    kwargs.setdefault("retries", 0)
    return OpenAIEmbedder(server.base_url, MODEL, **kwargs)


TEXTS = ["connection pool exhausted", "缓存雪崩", "HikariCP maxPoolSize", "kubernetes pod", "e"]


def test_embed_documents_batches_and_keeps_input_order(server: EmbeddingServer) -> None:
    matrix = embedder(server, dimension=8, batch_size=2).embed_documents(
        TEXTS, [f"c{i}" for i in range(5)]
    )
    assert server.inputs == [TEXTS[0:2], TEXTS[2:4], TEXTS[4:5]]
    assert all(body["model"] == MODEL for _, body in server.requests)
    assert matrix.shape == (5, 8) and matrix.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(matrix, axis=1), 1.0, atol=1e-6)
    np.testing.assert_allclose(matrix, [unit(t, 8) for t in TEXTS], atol=1e-6)


def test_shuffled_answer_is_put_back_in_input_order(server: EmbeddingServer) -> None:
    server.shuffle = True
    matrix = embedder(server, batch_size=64).embed_documents(TEXTS, ["x"] * 5)
    assert len(server.requests) == 1
    sent = [item["index"] for item in server.answers[0]["data"]]
    assert sent == [3, 1, 0, 2, 4]
    np.testing.assert_allclose(matrix, [unit(t, 8) for t in TEXTS], atol=1e-6)


def test_items_without_index_are_taken_in_order(server: EmbeddingServer) -> None:
    def drop_index(answer: dict[str, Any]) -> dict[str, Any]:
        for item in answer["data"]:
            del item["index"]
        return answer

    server.mutate = drop_index
    matrix = embedder(server, dimension=8).embed_documents(TEXTS[:3], ["a", "b", "c"])
    np.testing.assert_allclose(matrix, [unit(t, 8) for t in TEXTS[:3]], atol=1e-6)


def test_embed_query(server: EmbeddingServer) -> None:
    vector = embedder(server, dimension=8).embed_query("How do I fix an exhausted pool?")
    assert vector.shape == (8,) and vector.dtype == np.float32
    np.testing.assert_allclose(vector, unit("How do I fix an exhausted pool?", 8), atol=1e-6)
    assert server.inputs == [["How do I fix an exhausted pool?"]]


def test_no_texts_no_request(server: EmbeddingServer) -> None:
    assert embedder(server, dimension=8).embed_documents([], []).shape == (0, 8)
    assert server.requests == []


def test_fingerprint_with_given_dimension_asks_nothing(server: EmbeddingServer) -> None:
    fingerprint = embedder(server, dimension=8).fingerprint
    assert fingerprint == Fingerprint("openai", MODEL, server.base_url, 8)
    assert server.requests == []


def test_fingerprint_probes_the_dimension_once(server: EmbeddingServer) -> None:
    server.dimension = 12
    emb = embedder(server)
    assert emb.fingerprint == Fingerprint("openai", MODEL, server.base_url, 12)
    assert emb.fingerprint.dimension == 12
    assert len(server.requests) == 1
    # once known, the dimension is enforced
    server.dimension = 8
    with pytest.raises(EmbedderError, match="dimension 8, expected 12"):
        emb.embed_query("q")


def test_dimension_mismatch(server: EmbeddingServer) -> None:
    with pytest.raises(EmbedderError) as info:
        embedder(server, dimension=4).embed_documents(["a", "b"], ["a", "b"])
    message = str(info.value)
    assert "dimension 8, expected 4" in message and "set the embedder's dimension" in message
    assert server.base_url in message


@pytest.mark.parametrize(
    "mutate",
    [
        lambda a: {**a, "data": a["data"][:-1]},  # one embedding short
        lambda a: {**a, "data": [*a["data"], a["data"][0]]},  # one too many
        lambda a: {k: v for k, v in a.items() if k != "data"},  # no data
        lambda a: {**a, "data": {"0": a["data"][0]}},  # data not a list
        lambda a: a["data"],  # a bare list
    ],
    ids=["short", "long", "no-data", "data-object", "bare-list"],
)
def test_wrong_count_is_embedder_error(
    server: EmbeddingServer, mutate: Callable[[dict[str, Any]], Any]
) -> None:
    server.mutate = mutate
    with pytest.raises(EmbedderError) as info:
        embedder(server, dimension=8).embed_documents(["a", "b"], ["a", "b"])
    assert "a `data` list of 2 embeddings" in str(info.value)
    assert "OpenAI-compatible" in str(info.value)


def _spoil_first(**changes: Any) -> Callable[[dict[str, Any]], dict[str, Any]]:
    def mutate(answer: dict[str, Any]) -> dict[str, Any]:
        item = answer["data"][0]
        for key, value in changes.items():
            if value is None:
                item.pop(key, None)
            else:
                item[key] = value
        return answer

    return mutate


@pytest.mark.parametrize(
    "mutate",
    [
        _spoil_first(embedding=None),
        _spoil_first(embedding=[]),
        _spoil_first(index=2),
        _spoil_first(index=-1),
        _spoil_first(index="0"),
        lambda a: {**a, "data": ["not an object", a["data"][1]]},
    ],
    ids=["no-embedding", "empty-embedding", "index-too-big", "negative-index", "str-index", "str"],
)
def test_unusable_item_is_embedder_error(
    server: EmbeddingServer, mutate: Callable[[dict[str, Any]], Any]
) -> None:
    server.mutate = mutate
    with pytest.raises(EmbedderError) as info:
        embedder(server, dimension=8).embed_documents(["a", "b"], ["a", "b"])
    assert "data[0]" in str(info.value)
    assert "data[0]" in str(info.value)


def test_duplicate_index_is_embedder_error(server: EmbeddingServer) -> None:
    server.mutate = _spoil_first(index=1)
    with pytest.raises(EmbedderError):
        embedder(server, dimension=8).embed_documents(["a", "b"], ["a", "b"])


def test_ragged_embeddings_are_embedder_error(server: EmbeddingServer) -> None:
    server.mutate = _spoil_first(embedding=[1.0, 2.0])
    with pytest.raises(EmbedderError):
        embedder(server).embed_documents(["a", "b"], ["a", "b"])


def test_string_embedding_is_embedder_error(server: EmbeddingServer) -> None:
    server.mutate = _spoil_first(embedding="AAAAAAAAgD8=")
    with pytest.raises(EmbedderError):
        embedder(server).embed_documents(["a", "b"], ["a", "b"])


def test_nan_embedding_is_embedder_error(server: EmbeddingServer) -> None:
    server.mutate = _spoil_first(embedding=[float("nan")] * 8)
    with pytest.raises(EmbedderError):
        embedder(server, dimension=8).embed_documents(["a", "b"], ["a", "b"])


def test_batches_of_different_dimension_are_embedder_error(server: EmbeddingServer) -> None:
    calls = []

    def shrink_second_batch(answer: dict[str, Any]) -> dict[str, Any]:
        calls.append(1)
        if len(calls) == 2:
            for item in answer["data"]:
                item["embedding"] = item["embedding"][:4]
        return answer

    server.mutate = shrink_second_batch
    with pytest.raises(EmbedderError):
        embedder(server, batch_size=2).embed_documents(TEXTS[:4], ["a", "b", "c", "d"])


def test_http_errors_are_backend_errors(server: EmbeddingServer) -> None:
    server.status = 401
    with pytest.raises(BackendError, match="HTTP 401"):
        embedder(server, dimension=8).embed_query("q")
    assert len(server.requests) == 1
    server.status = 200
    wrong_path = OpenAIEmbedder(server.base_url + "/nope", MODEL, dimension=8, retries=0)
    with pytest.raises(BackendError, match="HTTP 404"):
        wrong_path.embed_query("q")


def test_token_from_token_env_is_sent(
    server: EmbeddingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAGSNAP_TEST_OPENAI_TOKEN", TOKEN)
    spec = {
        "kind": "openai",
        "baseUrl": server.base_url + "/",
        "model": MODEL,
        "tokenEnv": "RAGSNAP_TEST_OPENAI_TOKEN",
        "batchSize": 2,
    }
    emb = make_embedder(spec)
    assert isinstance(emb, OpenAIEmbedder)
    emb.embed_documents(TEXTS[:3], ["a", "b", "c"])
    assert emb.fingerprint.dimension == 8  # learnt from the answers, no extra probe
    assert len(server.requests) == 2
    for headers, _ in server.requests:
        assert headers["Authorization"] == f"Bearer {TOKEN}"


def test_token_from_token_file_is_sent(server: EmbeddingServer, tmp_path: Path) -> None:
    (tmp_path / "openai.token").write_text(TOKEN + "\n", encoding="utf-8")
    spec = {
        "kind": "openai",
        "baseUrl": server.base_url,
        "model": MODEL,
        "dimension": 8,
        "tokenFile": "openai.token",
    }
    make_embedder(spec, base=tmp_path).embed_query("q")
    assert server.requests[0][0]["Authorization"] == f"Bearer {TOKEN}"


def test_no_token_no_authorization_header(server: EmbeddingServer) -> None:
    embedder(server, dimension=8).embed_query("q")
    assert "Authorization" not in server.requests[0][0]


def test_unset_token_env_is_usage_error(
    server: EmbeddingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RAGSNAP_TEST_OPENAI_TOKEN", raising=False)
    spec = {
        "kind": "openai",
        "baseUrl": server.base_url,
        "model": MODEL,
        "tokenEnv": "RAGSNAP_TEST_OPENAI_TOKEN",
    }
    with pytest.raises(UsageError, match="RAGSNAP_TEST_OPENAI_TOKEN"):
        make_embedder(spec)
    assert server.requests == []

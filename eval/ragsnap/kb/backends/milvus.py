"""The ``milvus`` backend: the seeds' production vector store, through pymilvus.

``uri`` is a Milvus Lite file (``.ragsnap/milvus.db``, the default: one process
at a time, no server) or ``http(s)://host:19530`` for a standalone or
distributed Milvus (or Zilliz Cloud) with a token. Three collections share a
prefix (``kb.milvus.collection``, default ``ragsnap``)::

    <prefix>_chunks     row (INT64 key), chunk id, source, kb_scope, category,
                        breadcrumb (+ its prefixes, for segment-wise filters),
                        doc id, title, heading, JSON metadata, the chunk text
                        with a BM25 function (its sparse vector is the lexical
                        index), ragsnap's index tokens, the dense vector
    <prefix>_documents  one row per source: metadata and the index hash
    <prefix>_meta       embedder / tokenizer fingerprints, generation counter

Lexical search is Milvus's own BM25 (k1 1.5, b 0.75, as the embedded backend's;
a server's default k1 is 1.2, so the index sets both). With ``kb.milvus.analyzer:
ragsnap`` (the default) it reads ragsnap's own tokens, the embedded backend's
analyzer (stop words, stemmer, Chinese segmenter) stored space-separated, so the
two backends see the same terms and Milvus Lite stems too. With ``standard`` or
``jieba`` (``auto``: jieba where the corpus holds Chinese) Milvus analyses the
chunk text itself, then lowercases it, drops ragsnap's stop words
(``kb.analyzer.stopWords``) and, with ``kb.analyzer.stemmer``, applies Milvus's
Snowball ``stemmer`` filter, which Milvus Lite (3.2) accepts in a schema and
ignores: that combination is refused on a Milvus Lite file.

What a Milvus takes is asked, not assumed, when the chunks collection is about to
be created: a throwaway collection ``<prefix>_probe`` with the analyzer and a BM25
function is created and dropped (``run_analyzer`` is missing from older Milvus
servers and from Milvus Lite's). Analyzer ``ragsnap`` splits ragsnap's tokens
with the first tokenizer the server takes of ``whitespace`` (a Milvus server) and
``standard`` (Milvus Lite, file or ``milvus-lite server``: ragsnap's tokens hold no
character it splits at); Milvus's own analyzers must be taken as configured, and on a
server with ``kb.analyzer.stemmer`` a word is indexed and looked up by its stem: a
server that takes the filter and does not stem is refused, before anything is
written. A refusal of the server, here or in any later call, is a ``BackendError``
naming the server, the call, the server's reason and the fix (exit 2).

The analyzer is fixed when the chunks collection is created and recorded in the meta
collection (``analyzer``, ``stemmer``, ``stopWords``, and ``milvusTokenizer``, the
tokenizer chosen, which fixtures record in ``generator.settings``: a fixture
captured through another tokenizer differs); writing with another one is refused
until ``seed --reindex``. Its
scores are not comparable with FTS5's (and negative in Milvus Lite), so only
the order is used: a score is the absolute distance, ranked on the
``ragsnap.kb.numeric`` grid with ties broken by chunk id. Vectors are stored
encoded (``ragsnap.kb.numeric``);
vector search asks Milvus for the nearest chunks (exact ``FLAT`` cosine) and
scores them again with the embedded backend's exact arithmetic, so vector
scores and rankings agree across backends and do not depend on the search
limit. Fusion, reranking and everything else
stay in ragsnap's pipeline.

Milvus has no transactions: a write deletes a document's chunks, inserts the
new ones and then its document row (with the index hash), so an interrupted
seed leaves documents without a current hash, which the next seed re-uploads.
"""

from __future__ import annotations

import json
import logging
import os
import string
import threading
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from ...errors import BackendError, MissingDependency
from ..numeric import (
    VECTOR_ENCODING,
    cosines,
    dot_rows,
    encode_vectors,
    inverse_norms,
    ranked,
    squared_norms,
)
from . import (
    BM25_B,
    BM25_K1,
    ChunkRef,
    DocumentInfo,
    Filter,
    Ranking,
    StoredChunk,
    WriteBatch,
    breadcrumb_segments,
    cut_ranking,
    normalize_breadcrumb,
)

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = [
    "ANALYZERS",
    "DEFAULT_COLLECTION",
    "STEMMER_LANGUAGES",
    "MilvusKnowledgeBase",
    "analyzer_params",
]

DEFAULT_COLLECTION = "ragsnap"
#: ``ragsnap``: Milvus's BM25 reads ragsnap's own tokens (the embedded backend's
#: analyzer, stemmer and Chinese segmenter); ``standard``, ``jieba``: Milvus analyses
#: the chunk text itself
ANALYZERS = ("ragsnap", "standard", "jieba")
#: Milvus's BM25 with the embedded backend's parameters (a server's k1 is 1.2 by default)
BM25_PARAMS = {"bm25_k1": BM25_K1, "bm25_b": BM25_B}
#: the languages of Milvus's ``stemmer`` filter (Snowball, through tantivy): the
#: ``kb.analyzer.stemmer`` values the milvus backend takes
STEMMER_LANGUAGES = (
    "arabic", "danish", "dutch", "english", "finnish", "french", "german", "greek",
    "hungarian", "italian", "norwegian", "portuguese", "romanian", "russian", "spanish",
    "swedish", "tamil", "turkish",
)  # fmt: skip
#: the Milvus tokenizers that split ragsnap's space-separated tokens (analyzer ``ragsnap``),
#: in order of preference: ``whitespace`` keeps every token whole; ``standard`` splits
#: at non-word characters, which ragsnap's tokens hold none of (Milvus Lite's standard
#: tokenizer keeps a run of Chinese characters whole; a Milvus server's follows Unicode
#: word rules, which need not: there ``whitespace`` is the one that keeps ragsnap's terms)
SPLIT_TOKENIZERS = ("whitespace", "standard")
#: words that a Snowball stemmer shortens, for asking a server whether it stems
_STEM_PROBES = ("connections", "organizaciones", "nationalités", "verbindungen", "running")
SCHEMA_VERSION = "1"
_MAX_VARCHAR = 65535
_BATCH = 500
#: the small fields a pinned read fetches with any other: what ``refs`` and
#: ``matched_terms`` of a lookup's candidates read
_LOOKUP_FIELDS = ("chunk_id", "source", "doc_id", "tokens")
_DUMMY = [0.0, 1.0]  # collections without vectors of their own need one
#: jieba emits every punctuation mark as a token of its own; ragsnap's tokenizer drops them
_PUNCTUATION = string.punctuation + "".join(
    [chr(ord(c) + 0xFEE0) for c in string.punctuation]  # full-width forms
    + [chr(c) for c in range(0x2010, 0x2028)]  # dashes, quotation marks, ellipsis
    + [chr(c) for c in (0xB7, 0x3001, 0x3002, *range(0x3008, 0x3012), *range(0x3014, 0x3020))]
)


def _prefixes(breadcrumb: str | None) -> list[str]:
    """``A > B > C`` -> ``["A", "A > B", "A > B > C"]``: segment-wise prefix filters."""
    parts = breadcrumb_segments(breadcrumb)
    return [" > ".join(parts[: i + 1]) for i in range(len(parts))]


def _literal(value: str) -> str:
    """A Milvus expression string literal."""
    return json.dumps(value, ensure_ascii=False)


def _expression(flt: Filter) -> str:
    parts = []
    if flt.kb_scope is not None:
        parts.append(f"kb_scope == {_literal(flt.kb_scope)}")
    if flt.category is not None:
        parts.append(f"category == {_literal(flt.category)}")
    prefix = breadcrumb_segments(flt.breadcrumb_prefix)
    if prefix:
        parts.append(f"ARRAY_CONTAINS(crumbs, {_literal(' > '.join(prefix))})")
    return " and ".join(parts)


def _quiet_jieba() -> None:
    """Milvus Lite's jieba analyzer runs in this process: no "Building prefix dict..."."""
    try:
        import jieba
    except ImportError:  # Milvus Lite says which package is missing when it needs it
        return
    jieba.setLogLevel(60)


def _or_none(value: Any) -> Any:
    return None if value == "" else value


def analyzer_params(
    analyzer: str = "standard", stemmer: str | None = None, stop_words: bool = True
) -> dict[str, Any]:
    """The Milvus analyzer of the chunk text: the ``analyzer`` tokenizer, lowercase, a
    stop filter with what ragsnap's tokenizer drops (its stop words unless
    ``stop_words`` is false, and punctuation), then the ``stemmer`` filter."""
    from ..text import STOP_WORDS

    # a "stop" filter, which Milvus Lite honours (it ignores the standard analyzer's own
    # "stop_words" parameter)
    stop = (sorted(STOP_WORDS) if stop_words else []) + list(_PUNCTUATION)
    filters: list[Any] = ["lowercase", {"type": "stop", "stop_words": stop}]
    if stemmer is not None:
        filters.append({"type": "stemmer", "language": stemmer})
    return {"tokenizer": analyzer, "filter": filters}


def _describe(analyzer: str, stemmer: str | None, stop_words: bool) -> str:
    """An analyzer in ragsnap.yaml's words, for messages."""
    return (
        f"{analyzer} analyzer with stemmer {stemmer or 'none'} and stopWords "
        f"{'english' if stop_words else 'none'}"
    )


def _lite_stems() -> bool:
    """Whether this process's Milvus Lite applies Milvus's stemmer filter: its analyzer
    (what it runs on inserted and query text) asked for ``connections``. Milvus Lite 3.2
    takes the filter in a schema and ignores it."""
    try:
        from milvus_lite.analyzer import factory  # type: ignore[import-untyped]
    except ImportError:  # pymilvus reports a missing milvus-lite when it opens the file
        return True
    try:
        analyzer = factory.create_analyzer(analyzer_params("standard", "english", False))
        return bool(analyzer.tokenize("connections") == ["connect"])
    except Exception:  # another Milvus Lite: what it does cannot be told
        return False


def _lite_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("milvus-lite")
    except PackageNotFoundError:
        return "(version unknown)"


def _is_refusal(exc: BaseException) -> bool:
    """A Milvus server's (or Milvus Lite's) answer that it will not do what was asked:
    pymilvus's exceptions, and gRPC errors (an RPC the server does not implement)."""
    from grpc import RpcError  # type: ignore[import-untyped]  # pymilvus's transport
    from pymilvus.exceptions import MilvusException

    return isinstance(exc, (MilvusException, RpcError))


def _reason(exc: BaseException) -> str:
    """What a refusal says, without pymilvus's or gRPC's wrapping."""
    message = getattr(exc, "message", None)
    if isinstance(message, str) and message:
        return message
    details = getattr(exc, "details", None)
    if callable(details):
        text = details()
        if isinstance(text, str) and text:
            return text
    return str(exc) or type(exc).__name__


class _Guarded:
    """The pymilvus client, each of whose calls turns a refusal of the server into a
    ``BackendError`` naming the server, the call, the server's reason and the fix."""

    def __init__(self, client: Any, where: str, server: str) -> None:
        self._client = client
        self._where = where
        self._server = server

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._client, name)
        if not callable(attribute):
            return attribute

        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                return attribute(*args, **kwargs)
            except Exception as exc:
                if not _is_refusal(exc):
                    raise
                raise BackendError(
                    f"{self._where}: {self._server} refused {name} ({_reason(exc)}); ragsnap "
                    "needs Milvus 2.5 or later (BM25 functions, sparse vectors): check the "
                    "server's version and log, or rebuild the collections with `ragsnap seed "
                    "--backend milvus --reindex`"
                ) from None

        return call


class _Pin(NamedTuple):
    """One thread's pinned read: its generation, and the fields read of each row."""

    generation: str
    rows: dict[int, dict[str, Any]]


class MilvusKnowledgeBase:
    """A knowledge base in Milvus (Lite file or server), behind the ``KnowledgeBase`` interface."""

    backend = "milvus"

    def __init__(
        self,
        uri: str,
        *,
        token: str | None = None,
        collection: str = DEFAULT_COLLECTION,
        analyzer: str = "standard",
        stemmer: str | None = None,
        stop_words: bool = True,
        create: bool = True,
    ):
        """``analyzer``, ``stemmer`` and ``stop_words`` are the text analyzer of a chunks
        collection created now; an existing one keeps the analyzer it was built with,
        and writing to it with another ``stemmer`` or ``stop_words`` is refused."""
        try:
            from pymilvus import MilvusClient
        except ImportError:
            raise MissingDependency("the milvus backend (pymilvus)", "milvus") from None
        if analyzer not in ANALYZERS:
            raise BackendError(f"unknown analyzer {analyzer!r}; use one of {', '.join(ANALYZERS)}")
        # analyzer ragsnap stems with ragsnap's own stemmer: any Snowball language works
        if stemmer is not None and analyzer != "ragsnap" and stemmer not in STEMMER_LANGUAGES:
            raise BackendError(
                f"Milvus's stemmer filter has no {stemmer!r} stemmer; set kb.analyzer.stemmer "
                f"to none or one of {', '.join(STEMMER_LANGUAGES)}, or use kb.milvus.analyzer "
                "ragsnap (ragsnap stems) or the embedded backend"
            )
        # pymilvus logs (and Milvus Lite warns about client-side timestamps) on stderr;
        # every failure reaches the caller as an exception with its own message
        logging.getLogger("pymilvus").setLevel(logging.CRITICAL)
        logging.getLogger("milvus_lite").setLevel(logging.CRITICAL)
        self.uri = uri
        self.where = uri if "://" in uri else str(Path(uri))
        self._lite = "://" not in uri
        # the key of this process's Milvus Lite server for the file, as milvus_lite computes it
        self._lite_path = os.path.abspath(uri)  # noqa: PTH100
        if self._lite:
            path = Path(uri)
            if path.suffix != ".db":
                raise BackendError(
                    f"{path}: a Milvus Lite file name ends in .db (pymilvus reads any other "
                    "URI as a server address); set kb.milvus.uri to e.g. .ragsnap/milvus.db"
                )
            if stemmer is not None and analyzer != "ragsnap" and not _lite_stems():
                raise BackendError(
                    f"{path}: Milvus Lite {_lite_version()} does not apply Milvus's stemmer "
                    "filter (it accepts one in a collection's analyzer and ignores it), so "
                    f"kb.analyzer.stemmer {stemmer} cannot work with Milvus's {analyzer} "
                    "analyzer on a Milvus Lite file; use kb.milvus.analyzer ragsnap (the "
                    "default: Milvus indexes ragsnap's own stemmed tokens), a Milvus server "
                    "(kb.milvus.uri: http(s)://host:19530), or stemmer none"
                )
            if not create and not path.exists():
                raise BackendError(
                    f"{path}: no Milvus Lite knowledge base here; run `ragsnap seed --backend "
                    "milvus` first (or point kb.milvus.uri at the right file)"
                )
            path.parent.mkdir(parents=True, exist_ok=True)
        self._analyzer = analyzer
        self._wanted: tuple[str | None, bool] = (stemmer, stop_words)
        self._stemmer, self._stop_words = self._wanted
        self._names = {
            "chunks": f"{collection}_chunks",
            "documents": f"{collection}_documents",
            "meta": f"{collection}_meta",
            "probe": f"{collection}_probe",  # ``_probe``: created and dropped at once
        }
        self._lock = threading.RLock()
        self._pins = threading.local()  # ``pinned``: this thread's generation and rows read
        #: the Milvus tokenizer of the chunk text's BM25 field (``SPLIT_TOKENIZERS``,
        #: or the analyzer's own), chosen from what the server takes when the chunks
        #: collection is created; None for a store of an older ragsnap
        self._tokenizer: str | None = None
        self._raw = self._connect(MilvusClient, token)
        self._client = _Guarded(self._raw, self.where, self._server())
        self._vocab: tuple[str, Counter[str], int] | None = None
        self._chunks_exist = False
        self._dimension: int | None = None  # of the chunks' vectors, read when first needed
        existing = set(self._client.list_collections())
        if not create and self._names["meta"] not in existing:
            self.close()
            raise BackendError(
                f"{self.where}: holds no ragsnap knowledge base (collection "
                f"{self._names['meta']}); run `ragsnap seed --backend milvus` first"
            )
        for role in ("documents", "meta"):
            if self._names[role] not in existing:
                self._create_plain(role)
        for role in ("chunks", "documents", "meta"):
            if self._names[role] in existing:
                self._client.load_collection(self._names[role])
        if self._has_chunks():  # an existing collection keeps the analyzer it was built with
            meta = self.read_meta()
            if "analyzer" in meta:  # stores of older ragsnaps record no stemmer: none
                self._analyzer = meta["analyzer"]
                stem = meta.get("stemmer", "none")
                self._stemmer = None if stem == "none" else stem
                self._stop_words = meta.get("stopWords", "english") == "english"
                self._tokenizer = meta.get("milvusTokenizer")
        if self._analyzer == "jieba":
            _quiet_jieba()

    @property
    def analyzer(self) -> str:
        """The text analyzer of the chunks collection (``ragsnap``, ``standard`` or
        ``jieba``)."""
        return self._analyzer

    @property
    def tokenizer(self) -> str | None:
        """The Milvus tokenizer of the chunk text's BM25 field (``whitespace`` or
        ``standard`` for analyzer ``ragsnap``, else the analyzer's own), once chosen."""
        return self._tokenizer

    @property
    def stemmer(self) -> str | None:
        """The Snowball language of the chunks collection's stemmer filter, if any."""
        return self._stemmer

    @property
    def stop_words(self) -> bool:
        """Whether the chunks collection's analyzer drops ragsnap's stop words."""
        return self._stop_words

    def set_analyzer(self, analyzer: str) -> None:
        """The analyzer for a chunks collection not created yet (after ``drop``)."""
        if analyzer not in ANALYZERS:
            raise BackendError(f"unknown analyzer {analyzer!r}; use one of {', '.join(ANALYZERS)}")
        if self._has_chunks():
            raise BackendError(f"{self.where}: the chunks collection exists; drop it first")
        self._analyzer = analyzer
        self._stemmer, self._stop_words = self._wanted
        self._tokenizer = None
        if analyzer == "jieba":
            _quiet_jieba()

    def _connect(self, client_class: Any, token: str | None) -> Any:
        # a server: a TCP connection of this store's own, which ``close`` closes. pymilvus
        # shares a client per URI and gRPC a connection per address (its global subchannel
        # pool, even for a "dedicated" client); a server that refuses pymilvus's keepalive
        # pings on an idle connection (Milvus Lite's: GOAWAY "too_many_pings") would fail
        # a new store's first call on another store's idle connection
        options: dict[str, Any] = {}
        if not self._lite:
            options = {"dedicated": True, "grpc_options": {"grpc.use_local_subchannel_pool": 1}}
        try:
            return client_class(uri=self.uri, token=token or "", **options)
        except Exception as exc:  # pymilvus raises its own exception types
            if self._lite:
                raise BackendError(
                    f"{self.where}: cannot open the Milvus Lite file ({exc}); Milvus Lite lets "
                    "one process use a file at a time: stop the other one (a `ragsnap serve`?) "
                    "or use a Milvus server"
                ) from None
            raise BackendError(
                f"{self.uri}: cannot connect to Milvus ({type(exc).__name__}: {_reason(exc)}); "
                "check that the server runs, the URI and the token"
            ) from None

    def _server(self) -> str:
        """This Milvus, for messages."""
        return f"Milvus Lite {_lite_version()}" if self._lite else "the Milvus server"

    # -- what the server takes ------------------------------------------------

    def _probe(self, params: dict[str, Any], stem: str | None = None) -> tuple[str | None, str]:
        """Whether this Milvus takes a BM25 field analysed with ``params``: its refusal
        (None when it takes it); with ``stem`` (a Snowball language), also whether it
        applies the stemmer: ``"stems"``, ``"ignores"`` (a word indexed is not found by
        its stem) or ``"unknown"`` (no probe word stems in that language).

        Asked with a throwaway collection ``<prefix>_probe``, created and dropped:
        every Milvus that runs BM25 takes a collection, while ``run_analyzer`` is
        missing from older Milvus servers and from Milvus Lite's gRPC server."""
        from pymilvus import DataType, Function, FunctionType

        from ..text import get_tokenizer

        c = self._client
        name = self._names["probe"]
        if c.has_collection(name):
            c.drop_collection(name)
        schema = c.create_schema(auto_id=False, enable_dynamic_field=False)
        schema.add_field("id", DataType.INT64, is_primary=True)
        schema.add_field(
            "text", DataType.VARCHAR, max_length=1024, enable_analyzer=True, analyzer_params=params
        )
        schema.add_field("sparse", DataType.SPARSE_FLOAT_VECTOR)
        schema.add_function(
            Function(
                name="probe_bm25",
                function_type=FunctionType.BM25,
                input_field_names=["text"],
                output_field_names=["sparse"],
            )
        )
        index = c.prepare_index_params()
        index.add_index(
            "sparse", index_type="SPARSE_INVERTED_INDEX", metric_type="BM25", params=BM25_PARAMS
        )
        try:
            self._raw.create_collection(
                name, schema=schema, index_params=index, consistency_level="Strong"
            )
        except Exception as exc:
            if not _is_refusal(exc):
                raise
            return _reason(exc), "unknown"
        try:
            if stem is None:
                return None, "unknown"
            stems = get_tokenizer("bigram", stem)
            pairs = [(w, stems.tokens(w)) for w in _STEM_PROBES]
            pair = next(((w, t[0]) for w, t in pairs if len(t) == 1 and t[0] != w), None)
            if pair is None:
                return None, "unknown"
            c.insert(name, [{"id": 1, "text": pair[0]}])
            c.flush(name)
            hits = c.search(
                name,
                data=[pair[1]],
                anns_field="sparse",
                limit=1,
                search_params={"metric_type": "BM25"},
            )[0]
            return None, "stems" if hits else "ignores"
        finally:
            c.drop_collection(name)

    def _choose_tokenizer(self) -> None:
        """The analysis of a chunks collection about to be created, from what this Milvus
        takes (``_probe``): for analyzer ``ragsnap`` the first of ``SPLIT_TOKENIZERS``
        it takes; for Milvus's own analyzers, the analyzer as configured, refused with the
        fix when the server refuses it or ignores its stemmer filter."""
        if self._analyzer == "ragsnap":
            refusals = []
            for name in SPLIT_TOKENIZERS:
                refusal, _ = self._probe({"tokenizer": name})
                if refusal is None:
                    self._tokenizer = name
                    return
                refusals.append(f"{name}: {refusal}")
            raise BackendError(
                f"{self.where}: {self._server()} takes no tokenizer that splits ragsnap's "
                f"tokens ({'; '.join(refusals)}); ragsnap needs Milvus 2.5 or later (BM25 "
                "full-text search): upgrade the server, or use the embedded backend"
            )
        params = analyzer_params(self._analyzer, self._stemmer, self._stop_words)
        # a Milvus Lite file's stemming is asked in this process (``_lite_stems``)
        stem = None if self._lite else self._stemmer
        refusal, stems = self._probe(params, stem)
        if refusal is not None:
            raise BackendError(
                f"{self.where}: {self._server()} refused Milvus's {self._analyzer} analyzer "
                f"({refusal}); set kb.milvus.analyzer: ragsnap (Milvus indexes ragsnap's own "
                "tokens, split by a tokenizer the server has) or an analyzer the server names, "
                "then run `ragsnap seed --backend milvus --reindex`"
            )
        if stems == "ignores":
            raise BackendError(
                f"{self.where}: {self._server()} takes Milvus's stemmer filter and does not "
                f"apply it (a word it indexed is not found by its stem), so kb.analyzer.stemmer "
                f"{stem} cannot work with Milvus's {self._analyzer} analyzer on it; use "
                "kb.milvus.analyzer: ragsnap (the default: Milvus indexes ragsnap's own stemmed "
                "tokens), a Milvus server that stems, or kb.analyzer.stemmer: none"
            )
        self._tokenizer = self._analyzer

    # -- collections ----------------------------------------------------------

    def _create_plain(self, role: str) -> None:
        from pymilvus import DataType

        c = self._client
        schema = c.create_schema(auto_id=False, enable_dynamic_field=False)
        if role == "meta":
            schema.add_field("key", DataType.VARCHAR, is_primary=True, max_length=256)
            schema.add_field("value", DataType.VARCHAR, max_length=_MAX_VARCHAR)
        else:
            schema.add_field("source", DataType.VARCHAR, is_primary=True, max_length=256)
            schema.add_field("record", DataType.JSON)
        schema.add_field("dummy", DataType.FLOAT_VECTOR, dim=len(_DUMMY))
        index = c.prepare_index_params()
        index.add_index("dummy", index_type="FLAT", metric_type="L2")
        c.create_collection(self._names[role], schema=schema, index_params=index)

    def _create_chunks(self, dimension: int) -> None:
        from pymilvus import DataType, Function, FunctionType

        c = self._client
        schema = c.create_schema(auto_id=False, enable_dynamic_field=False)
        schema.add_field("row", DataType.INT64, is_primary=True)
        schema.add_field("chunk_id", DataType.VARCHAR, max_length=1024)
        schema.add_field("source", DataType.VARCHAR, max_length=256)
        schema.add_field("ordinal", DataType.INT64)
        schema.add_field("kb_scope", DataType.VARCHAR, max_length=256)
        schema.add_field("category", DataType.VARCHAR, max_length=256)
        schema.add_field("breadcrumb", DataType.VARCHAR, max_length=2048)
        schema.add_field(
            "crumbs",
            DataType.ARRAY,
            element_type=DataType.VARCHAR,
            max_capacity=64,
            max_length=2048,
        )
        schema.add_field("doc_id", DataType.VARCHAR, max_length=256)
        schema.add_field("title", DataType.VARCHAR, max_length=2048)
        schema.add_field("heading", DataType.VARCHAR, max_length=2048)
        schema.add_field("metadata", DataType.JSON)
        self._choose_tokenizer()
        if self._analyzer == "ragsnap":  # BM25 over ragsnap's tokens, split at spaces
            bm25_input = "tokens"
            split = {"tokenizer": self._tokenizer}
            schema.add_field("text", DataType.VARCHAR, max_length=_MAX_VARCHAR)
            schema.add_field(
                "tokens",
                DataType.VARCHAR,
                max_length=_MAX_VARCHAR,
                enable_analyzer=True,
                analyzer_params=split,
            )
        else:
            bm25_input = "text"
            analyzer = analyzer_params(self._analyzer, self._stemmer, self._stop_words)
            schema.add_field(
                "text",
                DataType.VARCHAR,
                max_length=_MAX_VARCHAR,
                enable_analyzer=True,
                analyzer_params=analyzer,
            )
            schema.add_field("tokens", DataType.VARCHAR, max_length=_MAX_VARCHAR)
        schema.add_field("sparse", DataType.SPARSE_FLOAT_VECTOR)
        schema.add_field("vector", DataType.FLOAT_VECTOR, dim=dimension)
        schema.add_function(
            Function(
                name="text_bm25",
                function_type=FunctionType.BM25,
                input_field_names=[bm25_input],
                output_field_names=["sparse"],
            )
        )
        index = c.prepare_index_params()
        index.add_index("vector", index_type="FLAT", metric_type="COSINE")
        index.add_index(
            "sparse", index_type="SPARSE_INVERTED_INDEX", metric_type="BM25", params=BM25_PARAMS
        )
        c.create_collection(self._names["chunks"], schema=schema, index_params=index)

    def _has_chunks(self) -> bool:
        """Whether the chunks collection exists (asked once: it stays until ``drop``)."""
        if not self._chunks_exist:
            self._chunks_exist = bool(self._client.has_collection(self._names["chunks"]))
        return self._chunks_exist

    def _scan(self, role: str, fields: list[str], expr: str = "") -> Iterator[dict[str, Any]]:
        """Every row of a collection (``expr`` filters), in batches."""
        key = {"chunks": "row", "documents": "source", "meta": "key"}[role]
        everything = f"{key} >= 0" if role == "chunks" else f'{key} != ""'
        iterator = self._client.query_iterator(
            self._names[role],
            batch_size=1000,
            filter=expr or everything,
            output_fields=fields,
        )
        try:
            while True:
                batch = iterator.next()
                if not batch:
                    return
                yield from batch
        finally:
            iterator.close()

    # -- metadata -------------------------------------------------------------

    def read_meta(self) -> dict[str, str]:
        with self._lock:  # a handful of rows: one query, not an iterator's several calls
            rows = self._client.query(
                self._names["meta"], filter='key != ""', output_fields=["key", "value"], limit=1000
            )
        return {r["key"]: r["value"] for r in rows}

    def generation(self) -> str:
        return self.read_meta().get("generation", "0")

    @contextmanager
    def pinned(self) -> Iterator[str]:
        """One lookup's read: the generation is read once, and each chunk's identities
        and tokens are fetched once, in the first query that asks for any of its
        fields (every query is a round trip to the server), so that ``refs`` and
        ``matched_terms`` of the same candidates make one query, not two."""
        generation = self.generation()
        outer = getattr(self._pins, "pin", None)
        self._pins.pin = _Pin(generation, {})
        try:
            yield generation
        finally:
            self._pins.pin = outer

    def documents(self) -> dict[str, DocumentInfo]:
        with self._lock:
            rows = list(self._scan("documents", ["source", "record"]))
        out: dict[str, DocumentInfo] = {}
        for row in sorted(rows, key=lambda r: str(r["source"])):
            r = row["record"]
            out[row["source"]] = DocumentInfo(
                source=row["source"],
                index_hash=r["indexHash"],
                chunk_count=int(r["chunkCount"]),
                doc_id=r.get("docId"),
                title=r.get("title"),
                breadcrumb=r.get("breadcrumb"),
                category=r.get("category"),
                kb_scope=r.get("kbScope"),
                path=r.get("path"),
                metadata=r.get("metadata") or {},
            )
        return out

    def count(self) -> int:
        with self._lock:
            if not self._has_chunks():
                return 0
            rows = self._client.query(self._names["chunks"], output_fields=["count(*)"])
        return int(rows[0]["count(*)"])

    # -- writing --------------------------------------------------------------

    def _delete(self, source: str) -> None:
        expr = f"source == {_literal(source)}"
        if self._has_chunks():
            self._client.delete(self._names["chunks"], filter=expr)
        self._client.delete(self._names["documents"], filter=expr)

    def _next_row(self) -> int:
        if not self._has_chunks():
            return 1
        last = 0
        for row in self._scan("chunks", ["row"]):
            last = max(last, int(row["row"]))
        return last + 1

    def write(self, batch: WriteBatch) -> None:
        """Deletes, then uploads (each document's chunks before its row), then meta."""
        c = self._client
        with self._lock:
            if self._has_chunks() and (self._stemmer, self._stop_words) != self._wanted:
                built = _describe(self._analyzer, self._stemmer, self._stop_words)
                wanted = _describe(self._analyzer, *self._wanted)
                raise BackendError(
                    f"{self.where} was built with the {built}, not the {wanted}; run `ragsnap "
                    "seed --backend milvus --reindex` to rebuild it, or configure the old one "
                    "again"
                )
            for source in batch.deletes:
                self._delete(source)
            next_row = self._next_row()
            pending_rows: list[dict[str, Any]] = []
            pending_docs: list[tuple[dict[str, Any], Any]] = []

            def flush_pending() -> None:
                # a document's row only after its chunks: an interrupted seed re-uploads it
                for start in range(0, len(pending_rows), _BATCH):
                    c.insert(self._names["chunks"], pending_rows[start : start + _BATCH])
                if pending_docs:
                    c.upsert(self._names["documents"], [row for row, _ in pending_docs])
                for _, up in pending_docs:
                    if batch.on_upload is not None:
                        batch.on_upload(up)
                pending_rows.clear()
                pending_docs.clear()

            for up in batch.uploads:
                doc = up.document
                if up.replaces:
                    flush_pending()  # deletes see every earlier insert
                    self._delete(doc.source)
                vectors = encode_vectors(up.vectors)
                if not self._has_chunks() and len(up.chunks):
                    self._create_chunks(int(vectors.shape[1]))
                breadcrumb = normalize_breadcrumb(doc.breadcrumb)
                rows = pending_rows
                for chunk, tokens, vector in zip(up.chunks, up.tokens, vectors, strict=True):
                    for name, value in (("text", chunk.text), ("tokens", tokens)):
                        if len(value.encode("utf-8")) > _MAX_VARCHAR:
                            raise BackendError(
                                f"{doc.path}: chunk {chunk.chunk_id} has {len(value)} characters "
                                f"of {name}, more than a Milvus VARCHAR holds; lower "
                                "kb.chunking.maxChars"
                            )
                    rows.append(
                        {
                            "row": next_row,
                            "chunk_id": chunk.chunk_id,
                            "source": chunk.source,
                            "ordinal": chunk.ordinal,
                            "kb_scope": doc.kb_scope or "",
                            "category": doc.category or "",
                            "breadcrumb": breadcrumb or "",
                            "crumbs": _prefixes(breadcrumb),
                            "doc_id": doc.doc_id or "",
                            "title": doc.title or "",
                            "heading": chunk.heading or "",
                            "metadata": doc.metadata,
                            "text": chunk.text,
                            "tokens": tokens,
                            "vector": vector.tolist(),
                        }
                    )
                    next_row += 1
                record = {
                    "indexHash": up.index_hash,
                    "chunkCount": len(up.chunks),
                    "docId": doc.doc_id,
                    "title": doc.title,
                    "breadcrumb": breadcrumb,
                    "category": doc.category,
                    "kbScope": doc.kb_scope,
                    "path": doc.path,
                    "metadata": doc.metadata,
                }
                pending_docs.append(({"source": doc.source, "record": record, "dummy": _DUMMY}, up))
                if len(pending_rows) >= _BATCH:
                    flush_pending()
            flush_pending()
            meta = dict(batch.meta)
            meta["schemaVersion"] = SCHEMA_VERSION
            meta["vectorEncoding"] = VECTOR_ENCODING
            meta["analyzer"] = self._analyzer
            meta["stemmer"] = self._stemmer or "none"
            meta["stopWords"] = "english" if self._stop_words else "none"
            if self._tokenizer is not None:
                meta["milvusTokenizer"] = self._tokenizer
            previous = self.read_meta().get("generation", "0")
            meta["generation"] = str(int(previous) + 1)
            c.upsert(
                self._names["meta"],
                [{"key": k, "value": v, "dummy": _DUMMY} for k, v in sorted(meta.items())],
            )
            for role in ("chunks", "documents", "meta"):
                if self._names[role] == self._names["chunks"] and not self._has_chunks():
                    continue
                c.flush(self._names[role])
            self._vocab = None

    # -- reading --------------------------------------------------------------

    def lexical_search(
        self, tokens: Sequence[str], flt: Filter, limit: int, text: str | None = None
    ) -> list[tuple[int, float]]:
        """Milvus BM25 for the query: ragsnap's ``tokens`` (analyzer ``ragsnap``), or
        ``text`` as typed for Milvus's own analyzers (the tokens joined when absent).
        Scores are |distance|: only the order counts."""
        own = self._analyzer != "ragsnap"
        query = text if own and text is not None else " ".join(dict.fromkeys(tokens))
        if limit <= 0 or not query.strip():
            return []
        with self._lock:
            if not self._has_chunks():
                return []
            hits = self._client.search(
                self._names["chunks"],
                data=[query],
                anns_field="sparse",
                limit=limit,
                filter=_expression(flt),
                output_fields=["chunk_id"],
                search_params={"metric_type": "BM25"},
            )[0]
        return ranked(
            (int(h["row"]), abs(float(h["distance"])), h["entity"]["chunk_id"]) for h in hits
        )

    def vector_search(
        self, vector: NDArray[np.float32], flt: Filter, limit: int
    ) -> list[tuple[int, float]]:
        if limit <= 0:
            return []
        query = encode_vectors(vector)
        with self._lock:
            if not self._has_chunks():
                return []
            if self._dimension is None:
                fields = self._client.describe_collection(self._names["chunks"])["fields"]
                (dim,) = [f["params"]["dim"] for f in fields if f["name"] == "vector"]
                self._dimension = int(dim)
            if self._dimension != query.shape[0]:  # Milvus would fail with its own message
                raise BackendError(
                    f"{self.where}: stored vectors have dimension {self._dimension}, the query "
                    f"vector {query.shape[0]}; run `ragsnap seed --backend milvus --reindex`"
                )
            hits = self._client.search(
                self._names["chunks"],
                data=[query.tolist()],
                anns_field="vector",
                limit=limit,
                filter=_expression(flt),
                output_fields=["chunk_id", "vector"],
                search_params={"metric_type": "COSINE"},
            )[0]
        if not hits:
            return []
        matrix = np.asarray([h["entity"]["vector"] for h in hits], dtype=np.float32)
        scores = _cosines(matrix, query)  # the embedded backend's exact arithmetic
        return ranked(
            (int(h["row"]), float(s), h["entity"]["chunk_id"])
            for h, s in zip(hits, scores, strict=True)
        )

    def similarities(self, vector: NDArray[np.float32], rows: Sequence[int]) -> list[float]:
        if not rows:
            return []
        vectors = self._fetch(rows, ["vector"])
        matrix = np.asarray([vectors[r]["vector"] for r in rows], dtype=np.float32)
        return [float(x) for x in _cosines(matrix, encode_vectors(vector))]

    def doc_frequencies(self, tokens: Sequence[str]) -> tuple[dict[str, int], int]:
        """From ragsnap's index tokens, loaded once per generation."""
        with self._lock:
            pin = getattr(self._pins, "pin", None)
            generation = self.generation() if pin is None else pin.generation
            if self._vocab is None or self._vocab[0] != generation:
                counts: Counter[str] = Counter()
                total = 0
                if self._has_chunks():
                    for row in self._scan("chunks", ["tokens"]):
                        counts.update(set(row["tokens"].split()))
                        total += 1
                self._vocab = (generation, counts, total)
            _, counts, total = self._vocab
        return {t: counts.get(t, 0) for t in dict.fromkeys(tokens)}, total

    def _fetch(self, rows: Sequence[int], fields: list[str]) -> dict[int, dict[str, Any]]:
        unique = list(dict.fromkeys(int(r) for r in rows))
        out: dict[int, dict[str, Any]] = {}
        pin: _Pin | None = getattr(self._pins, "pin", None)
        if pin is not None:  # a pinned read: rows read before, and the small fields at once
            seen = pin.rows
            out = {r: seen[r] for r in unique if r in seen and all(f in seen[r] for f in fields)}
            unique = [r for r in unique if r not in out]
            fields = list(dict.fromkeys([*fields, *_LOOKUP_FIELDS]))
        with self._lock:
            for start in range(0, len(unique), _BATCH):
                part = unique[start : start + _BATCH]
                for r in self._client.query(
                    self._names["chunks"],
                    filter=f"row in {part}",
                    output_fields=["row", *fields],
                ):
                    out[int(r["row"])] = r
        missing = [r for r in unique if r not in out]
        if missing:
            raise BackendError(
                f"{self.where}: chunks {missing[:5]} vanished during a lookup (a concurrent "
                "seed?); run the lookup again"
            )
        if pin is not None:
            for r in unique:
                pin.rows.setdefault(r, {}).update(out[r])
        return out

    def chunks(self, rows: Sequence[int], *, tokens: bool = True) -> dict[int, StoredChunk]:
        fields = [
            "chunk_id",
            "source",
            "ordinal",
            "text",
            "heading",
            "doc_id",
            "title",
            "breadcrumb",
            "category",
            "kb_scope",
        ]
        if tokens:
            fields.append("tokens")
        found = self._fetch(rows, fields)
        return {
            row: StoredChunk(
                row=row,
                chunk_id=r["chunk_id"],
                source=r["source"],
                ordinal=int(r["ordinal"]),
                text=r["text"],
                heading=_or_none(r["heading"]),
                doc_id=_or_none(r["doc_id"]),
                title=_or_none(r["title"]),
                breadcrumb=_or_none(r["breadcrumb"]),
                category=_or_none(r["category"]),
                kb_scope=_or_none(r["kb_scope"]),
                tokens=tuple(r["tokens"].split()) if tokens else None,
            )
            for row, r in found.items()
        }

    def matched_terms(self, tokens: Sequence[str], rows: Sequence[int]) -> dict[int, int]:
        """Which distinct ``tokens`` each row's stored index tokens hold, as bit codes
        (read from the chunks: Milvus keeps no postings ragsnap can read)."""
        bit = {t: 1 << i for i, t in enumerate(dict.fromkeys(tokens))}
        found = self._fetch(rows, ["tokens"])
        codes = {}
        for row, r in found.items():
            code = 0
            for t in set(r["tokens"].split()).intersection(bit):
                code |= bit[t]
            codes[row] = code
        return codes

    def lexical_ranking(
        self,
        tokens: Sequence[str],
        flt: Filter,
        limit: int,
        distinct: str,
        depth: int,
        text: str | None = None,
    ) -> Ranking:
        return self._ranking(self.lexical_search(tokens, flt, limit, text), distinct, depth)

    def vector_ranking(
        self, vector: NDArray[np.float32], flt: Filter, limit: int, distinct: str, depth: int
    ) -> Ranking:
        return self._ranking(self.vector_search(vector, flt, limit), distinct, depth)

    def _ranking(self, found: list[tuple[int, float]], distinct: str, depth: int) -> Ranking:
        rows = [r for r, _ in found]
        refs = self.refs(rows)  # a row gone since the search raises BackendError
        return cut_ranking([refs[r] for r in rows], distinct, depth)

    def refs(self, rows: Sequence[int]) -> dict[int, ChunkRef]:
        found = self._fetch(rows, ["chunk_id", "source", "doc_id"])
        return {
            row: ChunkRef(r["chunk_id"], _or_none(r["doc_id"]), r["source"])
            for row, r in found.items()
        }

    def drop(self) -> None:
        """Delete the three collections (``seed --reindex`` starts from nothing)."""
        with self._lock:
            self._tokenizer = None
            for name in self._names.values():
                if self._client.has_collection(name):
                    self._client.drop_collection(name)
            self._create_plain("documents")
            self._create_plain("meta")
            self._vocab = None
            self._dimension = None
            self._chunks_exist = False
            self._stemmer, self._stop_words = self._wanted  # for the collection created next

    def close(self) -> None:
        """Close the client; for Milvus Lite also stop this process's server of the file,
        so that another process (or a later ``MilvusKnowledgeBase``) can open it."""
        with self._lock:
            self._client.close()
            if self._lite:
                from milvus_lite.server_manager import (  # type: ignore[import-untyped]
                    server_manager_instance,
                )

                server_manager_instance.release_server(self._lite_path)

    def __enter__(self) -> MilvusKnowledgeBase:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _cosines(matrix: NDArray[np.float32], query: NDArray[np.float32]) -> NDArray[np.float64]:
    """Exact cosines of encoded rows with an encoded query (``ragsnap.kb.numeric``)."""
    query_inverse = float(inverse_norms(squared_norms(query))[0])
    return cosines(dot_rows(matrix, query), inverse_norms(squared_norms(matrix)), query_inverse)

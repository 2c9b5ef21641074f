"""Opening the configured knowledge base, embedder and pipeline for a command."""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from ..config import Config
from ..errors import UsageError
from ..kb.embedders import Embedder, make_embedder
from ..kb.text import Tokenizer, get_tokenizer

if TYPE_CHECKING:
    from ..kb.backends import KnowledgeBase
    from ..kb.pipeline import Pipeline
    from ..settings import LookupSettings

__all__ = [
    "backend_of",
    "kb_path",
    "open_embedder",
    "open_pipeline",
    "open_store",
    "open_tokenizer",
    "store_lock",
    "store_name",
]

STORES = ("embedded", "milvus")


def backend_of(args: argparse.Namespace, config: Config) -> str:
    """``--backend`` when given, else ``kb.backend`` of the configuration."""
    given: str | None = getattr(args, "backend", None)
    return given if given is not None else config.kb.backend


def kb_path(args: argparse.Namespace, config: Config) -> Path:
    """``--kb`` when given, else the configured path."""
    given: Path | None = getattr(args, "kb", None)
    return given if given is not None else config.kb.path


def store_name(backend: str, args: argparse.Namespace, config: Config) -> str:
    """Where the store of ``backend`` lives, for messages: a file or a URI."""
    if backend == "milvus":
        return config.kb.milvus.uri
    return str(kb_path(args, config))


def store_lock(
    backend: str, args: argparse.Namespace, config: Config
) -> contextlib.AbstractContextManager[None]:
    """The writer lock of the store of ``backend``: a file beside an embedded store or a
    Milvus Lite file; nothing for a Milvus server (one writer is the user's to ensure)."""
    from ..io.locks import writer_lock

    if backend == "embedded":
        return writer_lock(kb_path(args, config))
    if backend == "milvus" and "://" not in config.kb.milvus.uri:
        return writer_lock(Path(config.kb.milvus.uri))
    return contextlib.nullcontext()


def open_store(
    backend: str,
    args: argparse.Namespace,
    config: Config,
    *,
    create: bool,
    analyzer: str = "standard",
) -> KnowledgeBase:
    """The knowledge base of ``backend`` (``embedded`` or ``milvus``).

    ``analyzer`` is the Milvus text analyzer for a collection created now, with the
    configured stemmer and stop words; an existing one keeps the analyzer it was
    built with.
    """
    if backend == "embedded":
        from ..kb.backends.sqlite import SqliteKnowledgeBase

        return SqliteKnowledgeBase(kb_path(args, config), create=create)
    if backend == "milvus":
        if getattr(args, "kb", None) is not None:
            raise UsageError(
                "--kb names an embedded SQLite file; the milvus backend uses kb.milvus.uri "
                "in ragsnap.yaml: drop --kb"
            )
        from ..io.httpclient import read_token
        from ..kb.backends.milvus import MilvusKnowledgeBase

        milvus = config.kb.milvus
        token = read_token(milvus.token_file, milvus.token_env)
        return MilvusKnowledgeBase(
            milvus.uri,
            token=token,
            collection=milvus.collection,
            analyzer=analyzer,
            stemmer=config.kb.stemmer,
            stop_words=config.kb.stop_words,
            create=create,
        )
    raise UsageError(
        f"the {backend} backend has no local knowledge base here; use --backend embedded or milvus"
    )


@contextlib.contextmanager
def open_pipeline(
    backend: str,
    args: argparse.Namespace,
    config: Config,
    *,
    settings: LookupSettings | None = None,
    create: bool = False,
) -> Iterator[Pipeline]:
    """The lookup pipeline over the store of ``backend``, checked to have been built
    with the configured embedder (the method's, when it brings its own vectors) and
    segmenter; the store is closed afterwards."""
    from ..kb.pipeline import Pipeline
    from ..kb.seeding import check_compatible

    settings = settings or config.lookup
    method = settings.method_spec(settings.method)
    embedder = (
        open_embedder(config)
        if method.embedder is None
        else make_embedder(method.embedder, config.kb.base)
    )
    tokenizer = open_tokenizer(config)
    analyzer = config.kb.milvus.analyzer  # for a collection created now (serve)
    kb = open_store(
        backend,
        args,
        config,
        create=create,
        analyzer="standard" if analyzer == "auto" else analyzer,
    )
    try:
        check_compatible(
            kb.read_meta(),
            embedder.fingerprint,
            tokenizer.name,
            store_name(backend, args, config),
            fix="configure the embedder and segmenter it was built with, or rebuild it with "
            f"`ragsnap seed{'' if backend == 'embedded' else f' --backend {backend}'} --reindex`",
        )
        yield Pipeline(kb, embedder, tokenizer, settings)
    finally:
        kb.close()


def open_embedder(config: Config) -> Embedder:
    """The configured embedder (imports its heavy dependencies only now)."""
    return make_embedder(config.kb.embedder, config.kb.base)


def open_tokenizer(config: Config) -> Tokenizer:
    """The configured tokenizer (segmenter and analyzer)."""
    kb = config.kb
    return get_tokenizer(kb.segmenter, kb.stemmer, kb.stop_words)

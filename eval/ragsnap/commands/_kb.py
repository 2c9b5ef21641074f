"""Opening the configured knowledge base, embedder and pipeline for a command."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from ..config import Config
from ..errors import UsageError
from ..kb.backends.registry import BACKENDS, Backend, BackendOptions, get_backend
from ..kb.embedders import Embedder, make_embedder
from ..kb.text import Tokenizer, get_tokenizer

if TYPE_CHECKING:
    from ..kb.backends import KnowledgeBase
    from ..kb.corpus import SeedDocument
    from ..kb.pipeline import Pipeline
    from ..settings import LookupSettings

__all__ = [
    "backend_of",
    "entry_of",
    "kb_path",
    "open_embedder",
    "open_pipeline",
    "open_store",
    "open_tokenizer",
    "options_of",
    "store_lock",
    "store_name",
    "with_options",
]


def backend_of(args: argparse.Namespace, config: Config) -> str:
    """``--backend`` when given, else ``kb.backend`` of the configuration."""
    given: str | None = getattr(args, "backend", None)
    return given if given is not None else config.kb.backend


def entry_of(args: argparse.Namespace, config: Config) -> Backend:
    """The registered backend ``backend_of`` names (an unknown name: exit 2, the closest
    one suggested)."""
    return get_backend(backend_of(args, config))


def options_of(args: argparse.Namespace) -> BackendOptions:
    """The backend flags of ``args`` (a command without one has it None)."""
    return BackendOptions(
        base_url=getattr(args, "base_url", None),
        token_file=getattr(args, "token_file", None),
        token_env=getattr(args, "token_env", None),
        retriever=getattr(args, "retriever", None),
        max_records=getattr(args, "max_records", None),
        max_bytes=getattr(args, "max_bytes", None),
    )


def with_options(args: argparse.Namespace, config: Config) -> Config:
    """``config`` with what the command line overrides of a backend's settings
    (``--retriever``: ``python.retriever``), so the manifest records what ran."""
    retriever: str | None = getattr(args, "retriever", None)
    if retriever is None:
        return config
    return dataclasses.replace(
        config, python=dataclasses.replace(config.python, retriever=retriever)
    )


def kb_path(args: argparse.Namespace, config: Config) -> Path:
    """``--kb`` when given, else the configured path."""
    given: Path | None = getattr(args, "kb", None)
    return given if given is not None else config.kb.path


def store_name(backend: str, args: argparse.Namespace, config: Config) -> str:
    """Where the store of ``backend`` lives, for messages: a file or a URI."""
    return get_backend(backend).where(config, kb_path(args, config))


def store_lock(
    backend: str, args: argparse.Namespace, config: Config
) -> contextlib.AbstractContextManager[None]:
    """The writer lock of the store of ``backend``: a file beside a local store (the
    embedded SQLite file, a Milvus Lite file); nothing for a server (one writer is the
    user's to ensure)."""
    from ..io.locks import writer_lock

    path = get_backend(backend).lock_file(config, kb_path(args, config))
    return contextlib.nullcontext() if path is None else writer_lock(path)


def open_store(
    backend: str,
    args: argparse.Namespace,
    config: Config,
    *,
    create: bool,
    docs: Iterable[SeedDocument] = (),
) -> KnowledgeBase:
    """The knowledge base of ``backend`` (one the registry says has a store).

    ``docs`` are the documents a seed is about to write: a store may choose settings
    of a collection created now from them (milvus: ``analyzer: auto``).
    """
    entry = get_backend(backend)
    if entry.open_store is None:
        stores = " or ".join(name for name, b in BACKENDS.items() if b.open_store is not None)
        raise UsageError(
            f"the {backend} backend has no local knowledge base here; use --backend {stores}"
        )
    if entry.location is not None and getattr(args, "kb", None) is not None:
        raise UsageError(
            f"--kb names an embedded SQLite file; the {backend} backend uses {entry.location} "
            "in ragsnap.yaml: drop --kb"
        )
    return entry.open_store(config, kb_path(args, config), create=create, docs=docs)


@contextlib.contextmanager
def open_pipeline(
    backend: str,
    args: argparse.Namespace,
    config: Config,
    *,
    settings: LookupSettings | None = None,
    create: bool = False,
    lookups: float | None = None,
) -> Iterator[Pipeline]:
    """The lookup pipeline over the store of ``backend``, checked to have been built
    with the configured embedder (the method's, when it brings its own vectors) and
    segmenter; the store is closed afterwards. ``lookups``: how many the command will
    run (``math.inf``: a service), told to a store whose kernels depend on it."""
    from ..kb.backends import PlannedStore
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
    kb = open_store(backend, args, config, create=create)
    if isinstance(kb, PlannedStore):
        kb.expect_lookups(lookups)
    try:
        check_compatible(
            kb.read_meta(),
            embedder.fingerprint,
            tokenizer.name,
            store_name(backend, args, config),
            fix="configure the embedder and segmenter it was built with, or rebuild it with "
            f"`ragsnap seed{get_backend(backend).flag} --reindex`",
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

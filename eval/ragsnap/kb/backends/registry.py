"""Knowledge base backends, registered by name: what each can do, and how to open it.

Commands never compare a backend's name: they look its entry up (``get_backend``)
and ask it. An entry says what the backend can do:

=============  ==========================================================
``seeds``      ``store``: ``ragsnap seed`` writes the backend's own store;
               ``service``: documents go through a service's upload endpoint;
               ``none``: the backend holds its own documents (``hand_over`` may
               still pass them to it)
``looks_up``   ``pipeline``: ragsnap's lookup pipeline runs over its store;
               ``whole``: whole lookupResults come from something else (a service,
               a Python retriever) through ``open_source``
``serves``     ``ragsnap serve`` and ``ragsnap lookup`` run over it
``workers``    several processes may share its store (``serve --workers``)
``local``      its lookups read a local file and wait on nothing (``ragsnap serve``
               answers them on its event loop)
``records``    the lookupResult parts it records; the others are absent from its
               fixtures (expectations on them are "not applicable")
``options``    the command-line flags that belong to it (``--base-url`` ...)
``location``   the ragsnap.yaml key naming its store, when that is not ``--kb``
=============  ==========================================================

and how: ``where`` (the store or service, for messages), ``lock_file`` (a local
store's writer-lock file, None when one writer is the user's to ensure), the
openers, ``before_seed`` (a store's own checks once it is open), ``settings``
(what the backend adds to the fixture manifest's settings: milvus its analyzer,
python its retriever) and ``concurrency`` (snapshot lookups in flight).

A backend that answers whole lookups and runs methods of its own (``methods``:
``http.methods``, ``python.methods``) also says where they are configured
(``methods_key``, ``methods_example``), lists them (``method_names``) and describes
one for a trial's plan (``definition``: a service method's request fields, a
Python method's factory); ``ragsnap trial --backend NAME`` runs over any such
backend without knowing its name.

The hooks take the validated ``ragsnap.config.Config`` as ``config``; it is typed
``Any`` here because the config layer sits above ``kb``. A backend's module is
imported only when one of its hooks runs, so listing the backends (``--backend``'s
choices, ``ragsnap --help``) imports nothing. ``register_backend`` adds another;
``get_backend`` refuses an unknown name with the closest one.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ...errors import BackendError, UsageError, did_you_mean

if TYPE_CHECKING:
    from ..corpus import SeedDocument
    from . import KnowledgeBase

__all__ = [
    "BACKENDS",
    "DEFAULT_BACKEND",
    "LOOKUP_PARTS",
    "Backend",
    "BackendOptions",
    "Search",
    "backend_names",
    "get_backend",
    "register_backend",
]

#: the backend of a project that names none (``kb.backend``)
DEFAULT_BACKEND = "embedded"

#: the parts of a lookupResult, in the fixture's order
LOOKUP_PARTS = ("evidenceBlocks", "contextPack", "retrievalTrace", "rerankTrace")


@dataclass(frozen=True, slots=True)
class BackendOptions:
    """The backend flags of a command line (None: not given)."""

    base_url: str | None = None
    token_file: Path | None = None
    token_env: str | None = None
    retriever: str | None = None
    #: ``--method``: for a backend that answers whole lookups, one of its own methods
    #: (``http.methods``, ``python.methods``); a pipeline backend reads it from the
    #: lookup settings
    method: str | None = None
    #: ``--max-records`` and ``--max-bytes``: a service's budgets per request
    max_records: int | None = None
    max_bytes: int | None = None

    def given(self) -> list[str]:
        """The flags given, as the command line spells them."""
        flags = {
            "--base-url": self.base_url,
            "--token-file": self.token_file,
            "--token-env": self.token_env,
            "--retriever": self.retriever,
            "--max-records": self.max_records,
            "--max-bytes": self.max_bytes,
        }
        return [flag for flag, value in flags.items() if value is not None]


@dataclass(frozen=True, slots=True)
class Search:
    """A backend's similarity search, for ``live-check``: ``search(query, top_k,
    kb_scope)`` is (the raw answer, its results in ragsnap's field names); ``where`` and
    ``endpoint`` name it in reports; ``results_path`` is where the results sit in the raw
    answer; ``service`` is the ``HttpService`` a ``--state`` verification talks to (None:
    nothing to verify)."""

    where: str
    endpoint: str
    results_path: str
    retries: int
    search: Callable[[str, int, str | None], tuple[Any, list[Any]]]
    service: Any = None


def _kb_where(config: Any, kb_path: Path) -> str:
    return str(kb_path)


def _no_lock(config: Any, kb_path: Path) -> Path | None:
    return None


def _no_settings(config: Any, method: str | None) -> dict[str, Any]:
    return {}


def _one(config: Any) -> int:
    return 1


def _no_methods(config: Any) -> tuple[str, ...]:
    return ()


def _named(config: Any, method: str) -> dict[str, Any]:
    return {"name": method}


def _nothing_dropped(
    kb: KnowledgeBase, config: Any, docs: Iterable[SeedDocument], *, reindex: bool, where: str
) -> set[str]:
    return set()


@dataclass(frozen=True, slots=True)
class Backend:
    """A registered backend: what it can do (module docstring) and its hooks."""

    name: str
    #: one line for ``--backend``'s help
    help: str
    seeds: Literal["store", "service", "none"]
    looks_up: Literal["pipeline", "whole"]
    serves: bool = False
    workers: bool = False
    local: bool = False
    records: tuple[str, ...] = LOOKUP_PARTS
    options: tuple[str, ...] = ()
    location: str | None = None
    where: Callable[[Any, Path], str] = _kb_where
    lock_file: Callable[[Any, Path], Path | None] = _no_lock
    #: (config, kb path, create=, docs=) -> the store; ``docs`` are the documents a
    #: seed is about to write (a store may pick settings from them), else empty
    open_store: Callable[..., KnowledgeBase] | None = None
    #: (kb, config, docs, reindex=, where=) -> the sources a rebuild dropped
    before_seed: Callable[..., set[str]] = _nothing_dropped
    #: (config, options) -> a context manager of (a ``LookupSource``, its description)
    open_source: Callable[[Any, BackendOptions], contextlib.AbstractContextManager[Any]] | None = (
        None
    )
    #: (config, options, docs) -> where the documents went; raises when it takes none
    hand_over: Callable[[Any, BackendOptions, Iterable[SeedDocument]], str] | None = None
    #: (config, options) -> a context manager of the service documents are uploaded to
    open_service: Callable[[Any, BackendOptions], contextlib.AbstractContextManager[Any]] | None = (
        None
    )
    #: (config, options) -> a context manager of its ``Search`` (``ragsnap live-check``)
    open_search: (
        Callable[[Any, BackendOptions], contextlib.AbstractContextManager[Search]] | None
    ) = None
    #: (config, method or None) -> what the backend adds to the manifest's settings
    settings: Callable[[Any, str | None], dict[str, Any]] = _no_settings
    #: where its methods are configured ("http.methods"; "": it runs none of its own),
    #: and one entry as an example
    methods_key: str = ""
    methods_example: str = ""
    #: (config) -> the names of its configured methods, in their order
    method_names: Callable[[Any], tuple[str, ...]] = _no_methods
    #: (config, method) -> the method's definition in a trial plan (``name`` and more)
    definition: Callable[[Any, str], dict[str, Any]] = _named
    concurrency: Callable[[Any], int] = _one
    #: who answers a whole lookup, for messages ("the service")
    answered_by: str = "ragsnap's pipeline"
    #: the fix of an answer that does not fit the fixture contract
    fix: str = "fix the service or its mapping (the http section of ragsnap.yaml)"

    @property
    def methods(self) -> bool:
        """It answers whole lookups and runs ``--method`` itself (``http.methods``,
        ``python.methods``): it says where its methods are configured."""
        return bool(self.methods_key)

    @property
    def uses_kb(self) -> bool:
        """Its store is the ``--kb`` file (``kb.path``)."""
        return self.open_store is not None and self.location is None

    @property
    def flag(self) -> str:
        """`` --backend NAME`` as a command in a message needs it (empty for the default)."""
        return "" if self.name == DEFAULT_BACKEND else f" --backend {self.name}"

    def check_options(self, options: BackendOptions, flags: Sequence[str]) -> None:
        """Refuse the ``flags`` of ``options`` that are given but belong to other
        backends (``--base-url is for --backend http; drop it or add --backend http``)."""
        given = [flag for flag in options.given() if flag in flags and flag not in self.options]
        tokens = [flag for flag in given if flag.startswith("--token-")]
        for flag in given:
            owners = [b.name for b in BACKENDS.values() if flag in b.options]
            if flag in tokens:
                continue
            raise UsageError(
                f"{flag} is for --backend {' or '.join(owners)}; drop it or add --backend "
                f"{owners[0]}"
            )
        if tokens:
            owners = [b.name for b in BACKENDS.values() if "--token-file" in b.options]
            raise UsageError(
                f"--token-file and --token-env are for --backend {' or '.join(owners)}; drop them"
            )


# --- embedded -------------------------------------------------------------------


def _embedded_lock(config: Any, kb_path: Path) -> Path | None:
    return kb_path


def _embedded_store(
    config: Any, kb_path: Path, *, create: bool, docs: Iterable[SeedDocument] = ()
) -> KnowledgeBase:
    from .sqlite import SqliteKnowledgeBase

    return SqliteKnowledgeBase(kb_path, create=create)


# --- milvus ---------------------------------------------------------------------


def _milvus_where(config: Any, kb_path: Path) -> str:
    return str(config.kb.milvus.uri)


def _milvus_lock(config: Any, kb_path: Path) -> Path | None:
    uri: str = config.kb.milvus.uri
    return None if "://" in uri else Path(uri)  # a Milvus Lite file; a server: none


def _milvus_analyzer(config: Any, docs: Iterable[SeedDocument]) -> str:
    """The analyzer of a collection created now: the configured one; ``auto`` is
    jieba when a seed document holds Chinese, Japanese or Korean, else standard
    (``docs`` is read once more for it; none: standard, as ``serve`` creates one)."""
    from ..text import has_cjk

    analyzer: str = config.kb.milvus.analyzer
    if analyzer == "auto":
        return "jieba" if any(has_cjk(doc.body) for doc in docs) else "standard"
    return analyzer


def _milvus_store(
    config: Any, kb_path: Path, *, create: bool, docs: Iterable[SeedDocument] = ()
) -> KnowledgeBase:
    from ...io.httpclient import read_token
    from .milvus import MilvusKnowledgeBase

    milvus = config.kb.milvus
    token = read_token(milvus.token_file, milvus.token_env)
    return MilvusKnowledgeBase(
        milvus.uri,
        token=token,
        collection=milvus.collection,
        analyzer=_milvus_analyzer(config, docs),
        stemmer=config.kb.stemmer,
        stop_words=config.kb.stop_words,
        create=create,
    )


def _milvus_before_seed(
    kb: KnowledgeBase, config: Any, docs: Iterable[SeedDocument], *, reindex: bool, where: str
) -> set[str]:
    """An existing collection keeps its analyzer; switching needs ``--reindex``,
    which drops the collections and rebuilds them (Milvus Lite keeps deleted rows in its
    BM25 statistics, so rebuilding in place would not give a fresh index). Returns the
    sources stored before a drop, for the summary."""
    from .milvus import MilvusKnowledgeBase

    assert isinstance(kb, MilvusKnowledgeBase)
    analyzer = _milvus_analyzer(config, docs)
    configured = config.kb.milvus.analyzer
    built = kb.read_meta().get("analyzer")
    if reindex:
        before = set(kb.documents())
        kb.drop()
        kb.set_analyzer(analyzer)
        return before
    if built is not None and built != analyzer and configured != "auto":
        raise BackendError(
            f"{where} was built with the {built} analyzer, not {analyzer}; run `ragsnap seed "
            "--backend milvus --reindex` to rebuild it, or configure the old one again"
        )
    return set()


def _milvus_settings(config: Any, method: str | None) -> dict[str, Any]:
    return {"kb.milvus.analyzer": config.kb.milvus.analyzer}


# --- http -----------------------------------------------------------------------


@contextlib.contextmanager
def _http_service(config: Any, options: BackendOptions) -> Iterator[Any]:
    from ...io.httpclient import read_token
    from .http import HttpService

    token = read_token(options.token_file, options.token_env)
    # --method: one of http.methods, whose fields every lookup request carries
    with HttpService(
        config.http.with_budgets(options.max_records, options.max_bytes),
        base_url=options.base_url,
        token=token,
        method=options.method,
    ) as service:
        yield service


@contextlib.contextmanager
def _http_source(config: Any, options: BackendOptions) -> Iterator[tuple[Any, str]]:
    with _http_service(config, options) as service:
        yield service, f"http ({service.base_url})"


@contextlib.contextmanager
def _http_search(config: Any, options: BackendOptions) -> Iterator[Search]:
    with _http_service(config, options) as service:

        def search(query: str, top_k: int, kb_scope: str | None) -> tuple[Any, list[Any]]:
            answer, items = service.similar(query, top_k=top_k, kb_scope=kb_scope)
            return answer, list(items)

        yield Search(
            service.base_url,
            f"GET {service.mapping.similar_path}",
            service.mapping.similar_results,
            service.mapping.retries,
            search,
            service,
        )


def _http_settings(config: Any, method: str | None) -> dict[str, Any]:
    """The method asked for, with the fields its requests add (``http.methods``)."""
    if method is None:
        return {}
    return {"method": method, "method.request": config.http.method_request(method)}


def _http_method_names(config: Any) -> tuple[str, ...]:
    return tuple(config.http.methods)


def _http_definition(config: Any, method: str) -> dict[str, Any]:
    return {"name": method, "request": config.http.method_request(method)}


def _http_concurrency(config: Any) -> int:
    concurrency: int = config.http.concurrency
    return concurrency


# --- python ---------------------------------------------------------------------


@contextlib.contextmanager
def _python_source(config: Any, options: BackendOptions) -> Iterator[tuple[Any, str]]:
    from .python import open_retriever

    source = open_retriever(config.python, options.retriever, options.method)
    yield source, f"python ({source.name})"


@contextlib.contextmanager
def _python_search(config: Any, options: BackendOptions) -> Iterator[Search]:
    """The retriever's hits as similarity results: its evidence blocks, checked as a
    snapshot checks them."""
    from .python import open_retriever

    source = open_retriever(config.python, options.retriever, options.method)

    def search(query: str, top_k: int, kb_scope: str | None) -> tuple[Any, list[Any]]:
        blocks = source.lookup(query, kb_scope=kb_scope, top_k=top_k)["evidenceBlocks"]
        return blocks, list(blocks)

    yield Search(f"python:{source.name}", "search", "", 0, search)


def _python_hand_over(config: Any, options: BackendOptions, docs: Iterable[SeedDocument]) -> str:
    from .python import hand_over

    return hand_over(config.python, options.retriever, docs)


def _python_settings(config: Any, method: str | None) -> dict[str, Any]:
    """The retriever; with a method, the method and its factory (``python.methods``)."""
    if method is None:
        return {"python.retriever": config.python.retriever}
    return {"method": method, "method.retriever": config.python.method_retriever(method)}


def _python_method_names(config: Any) -> tuple[str, ...]:
    return tuple(config.python.methods)


def _python_definition(config: Any, method: str) -> dict[str, Any]:
    return {"name": method, "retriever": config.python.method_retriever(method)}


BACKENDS: dict[str, Backend] = {
    "embedded": Backend(
        "embedded",
        "the SQLite file (--kb)",
        seeds="store",
        looks_up="pipeline",
        serves=True,
        workers=True,
        local=True,
        lock_file=_embedded_lock,
        open_store=_embedded_store,
    ),
    "milvus": Backend(
        "milvus",
        "kb.milvus.uri (extra `milvus`)",
        seeds="store",
        looks_up="pipeline",
        serves=True,
        location="kb.milvus.uri",
        where=_milvus_where,
        lock_file=_milvus_lock,
        open_store=_milvus_store,
        before_seed=_milvus_before_seed,
        settings=_milvus_settings,
    ),
    "http": Backend(
        "http",
        "a retrieval service (http.baseUrl, --base-url)",
        seeds="service",
        looks_up="whole",
        options=("--base-url", "--token-file", "--token-env", "--max-records", "--max-bytes"),
        open_source=_http_source,
        open_service=_http_service,
        open_search=_http_search,
        settings=_http_settings,
        methods_key="http.methods",
        methods_example="{NAME: {<lookup body fields>}}`, one entry per method the service runs",
        method_names=_http_method_names,
        definition=_http_definition,
        concurrency=_http_concurrency,
        answered_by="the service",
    ),
    "python": Backend(
        "python",
        "a Python retriever (python.retriever, --retriever MODULE:FACTORY)",
        seeds="none",
        looks_up="whole",
        records=("evidenceBlocks",),
        options=("--retriever",),
        open_source=_python_source,
        open_search=_python_search,
        hand_over=_python_hand_over,
        settings=_python_settings,
        methods_key="python.methods",
        methods_example="{NAME: MODULE:FACTORY}`, one entry per retriever to compare",
        method_names=_python_method_names,
        definition=_python_definition,
        answered_by="the retriever",
        fix="fix the retriever's hits (docs/python.md lists what a hit holds)",
    ),
}


def register_backend(backend: Backend) -> None:
    """Add (or replace) a backend by name."""
    BACKENDS[backend.name] = backend


def backend_names(**wanted: Any) -> tuple[str, ...]:
    """The names of the backends whose fields equal ``wanted`` (every one without),
    in registration order: ``backend_names(serves=True)``."""
    return tuple(
        name
        for name, backend in BACKENDS.items()
        if all(getattr(backend, key) == value for key, value in wanted.items())
    )


def get_backend(name: str, where: str = "--backend") -> Backend:
    """The backend registered as ``name``; an unknown name is a ``UsageError`` naming
    the closest one (``where`` says where the name came from)."""
    found = BACKENDS.get(name)
    if found is not None:
        return found
    meant = did_you_mean(name, BACKENDS)
    hint = f"did you mean {meant!r}? " if meant else ""
    raise UsageError(f"{where}: no backend {name!r}; {hint}use one of {', '.join(BACKENDS)}")

"""The ``python`` backend: lookups answered by a retriever written in Python.

::

    kb:
      backend: python
    python:
      retriever: my_rag.search:make_retriever   # MODULE:FACTORY, or --retriever
      methods:                                  # optional: a method name -> MODULE:FACTORY
        bm25: my_rag.search:make_bm25
        dense: my_rag.search:make_dense
      timeoutSeconds: 30

**The factory** (``MODULE:FACTORY``, ``FACTORY`` may be dotted: ``mod:Class.create``)
is imported from ``PYTHONPATH`` or the folder of ``ragsnap.yaml`` and called once,
with no arguments; it returns the retriever. An import that fails (no module, no such
attribute, not callable, the factory raising) is a ``BackendError`` (exit 2) naming
``python.retriever`` and the fix.

**Methods** (``python.methods``). Each entry names a retrieval method and the
factory of its retriever. ``--method NAME`` (``snapshot``, ``live-check``-style
lookups) uses that factory instead of ``python.retriever``, and the fixtures'
generator and the manifest record the method and its factory, so fixtures captured
under another method are stale; ``ragsnap trial --backend python`` compares one
method per entry (or those ``--methods`` names). A name ``python.methods`` does not
map is a ``UsageError`` (exit 2) listing the names it has; ``--method`` with
``--retriever`` is refused (pick one).

**The retriever** (``Retriever``) is any object with::

    def search(self, query: str, *, top_k: int, filters: Mapping[str, Any]) -> Iterable[hit]

``filters`` holds ``kbScope``: the case's scope (documents of other scopes must not
be returned), or None (unrestricted). It returns hits, best first; each hit is a
mapping or an object with these attributes (``Hit``):

===============================  ====================================================
``source``                       the document (the golden cases' expectedSources)
``chunk_id`` (or ``chunkId``)    the chunk (the cases' judgments)
``text``                         the chunk's text (keywords and spans are found in it)
``score``                        a finite number, or None
``rank`` (optional)              1-based; given on every hit or on none (then the
                                 position); distinct
``metadata`` (optional)          a mapping of JSON values
``title``, ``breadcrumb``,       optional strings, copied into the evidence block
``doc_id`` (or ``docId``)
===============================  ====================================================

More than ``top_k`` hits are cut to the first ``top_k`` by rank. A hit that breaks
these rules (a missing field, a wrong type, a repeated chunk or rank) is a
``BackendError`` naming the query, the hit and the field.

Each search runs in a worker thread; one that takes longer than
``python.timeoutSeconds`` fails the lookup (the thread is abandoned: a daemon, it
does not hold the process). An exception from ``search`` fails the lookup with its
type and message. ``ragsnap snapshot`` runs every lookup before it writes a file, so
a failing retriever never leaves a half-written fixture set.

**LangChain and LlamaIndex.** ``ragsnap.kb.backends.adapters`` makes such a retriever of a
LangChain vector store or retriever, or a LlamaIndex index or retriever (its docstring).

**What the fixture records** (``lookup_result``): the evidence blocks. A retriever
has no retrieval trace, rerank trace or context pack; they are absent from the
fixture, so the cases' pipeline expectations (selected attempt, fallback reasons,
evidence status, context sources, rerank top source) are "not applicable (fixture
has no retrievalTrace)": counted in every report, never passed and never failed.

**Staleness.** ragsnap cannot digest a retriever's corpus. A retriever may report
what it is with ``fingerprint()`` (a string) or a ``version`` attribute; it is
recorded as the fixtures' corpus revision. Either way ``score`` notes that the
fixtures' corpus cannot be checked offline; ``ragsnap snapshot --check --backend
python`` re-runs the lookups and compares.

**Seeding.** The retriever holds its own documents: ``ragsnap seed --backend python``
is refused, unless the retriever has an ``add_documents(docs)`` (or ``index(docs)``)
method, which is then called once with every parsed seed document
(``ragsnap.kb.corpus.SeedDocument``: ``source``, ``body``, ``title``,
``breadcrumb``, ``category``, ``kb_scope``, ``doc_id``, ``metadata``). Keeping them
beyond the process is the retriever's business.
"""

from __future__ import annotations

import importlib
import math
import sys
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ...errors import BackendError, UsageError

if TYPE_CHECKING:
    from ..corpus import SeedDocument

__all__ = [
    "Hit",
    "PythonConfig",
    "PythonSource",
    "Retriever",
    "evidence_blocks",
    "hand_over",
    "load_retriever",
    "lookup_result",
    "open_retriever",
]

#: what a fix of ``python.retriever`` says
_CONFIGURE = (
    "set python.retriever in ragsnap.yaml (or pass --retriever) to MODULE:FACTORY, a "
    "callable that returns an object with search(query, *, top_k, filters)"
)


@dataclass(frozen=True, slots=True)
class PythonConfig:
    """``python:`` of ragsnap.yaml: the retriever factory and the search timeout."""

    retriever: str | None = None
    #: ``python.methods``: a method name -> the MODULE:FACTORY of its retriever
    methods: Mapping[str, str] = field(default_factory=dict)
    timeout_seconds: float = 30.0
    #: the folder of ragsnap.yaml, where the retriever's module is also looked for
    base: Path | None = None

    def method_retriever(self, name: str) -> str:
        """The MODULE:FACTORY ``python.methods`` maps ``name`` to; an unknown name is a
        ``UsageError`` listing the names it has."""
        if name in self.methods:
            return self.methods[name]
        if not self.methods:
            raise UsageError(
                f"method {name!r}: python.methods names no methods; add `python.methods: "
                f"{{{name}: MODULE:FACTORY}}` to ragsnap.yaml, or drop the method"
            )
        raise UsageError(
            f"method {name!r} is not in python.methods; use one of {', '.join(self.methods)}, "
            "or add it there"
        )


@runtime_checkable
class Retriever(Protocol):
    """What the factory returns (module docstring)."""

    def search(self, query: str, *, top_k: int, filters: Mapping[str, Any]) -> Iterable[Any]:
        """Hits for ``query``, best first: at most ``top_k``, inside ``filters["kbScope"]``."""
        ...


class Hit(Protocol):
    """One hit as an object (a mapping with these keys will do as well)."""

    source: str
    chunk_id: str
    text: str
    score: float | None


def _factory_error(spec: str, problem: str) -> BackendError:
    return BackendError(f"python.retriever {spec!r}: {problem}; {_CONFIGURE}")


def load_retriever(spec: str, base: Path | None = None) -> Any:
    """Import ``MODULE:FACTORY``, call the factory and return the retriever it makes."""
    module_name, colon, attribute = spec.partition(":")
    if not colon or not module_name or not attribute:
        raise _factory_error(spec, "is not MODULE:FACTORY")
    if base is not None and str(base) not in sys.path:
        sys.path.append(str(base))
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise _factory_error(
            spec,
            f"no module named {exc.name!r} (add its folder to PYTHONPATH, or install it)",
        ) from None
    except Exception as exc:  # the user's module failed while it was imported
        raise _factory_error(
            spec, f"importing {module_name} raised {type(exc).__name__}: {exc}"
        ) from None
    target: Any = module
    for part in attribute.split("."):
        if not hasattr(target, part):
            raise _factory_error(spec, f"{module_name} has no attribute {attribute!r}")
        target = getattr(target, part)
    if not callable(target):
        raise _factory_error(spec, f"{attribute} is {type(target).__name__}, not callable")
    try:
        retriever = target()
    except Exception as exc:
        raise _factory_error(
            spec, f"calling {attribute}() raised {type(exc).__name__}: {exc}"
        ) from None
    if not callable(getattr(retriever, "search", None)):
        raise _factory_error(
            spec, f"{attribute}() returned {type(retriever).__name__}, which has no search method"
        )
    return retriever


def _spec(settings: PythonConfig, given: str | None, method: str | None = None) -> str:
    if method is not None:
        if given is not None:
            raise UsageError(
                f"--method {method} picks python.methods.{method}'s retriever and --retriever "
                "names another; pass only one of them"
            )
        return settings.method_retriever(method)
    spec = given if given is not None else settings.retriever
    if spec is None:
        raise UsageError(f"the python backend needs a retriever: {_CONFIGURE}")
    return spec


def open_retriever(
    settings: PythonConfig, given: str | None = None, method: str | None = None
) -> PythonSource:
    """The retriever of ``--retriever`` (``given``), of ``method`` (``python.methods``)
    or ``python.retriever``, as a lookup source."""
    spec = _spec(settings, given, method)
    return PythonSource(spec, load_retriever(spec, settings.base), settings.timeout_seconds, method)


def hand_over(settings: PythonConfig, given: str | None, docs: Iterable[SeedDocument]) -> str:
    """``ragsnap seed --backend python``: pass ``docs`` to the retriever's
    ``add_documents`` (or ``index``) hook; the name of what took them."""
    spec = _spec(settings, given)
    retriever = load_retriever(spec, settings.base)
    for name in ("add_documents", "index"):
        hook = getattr(retriever, name, None)
        if callable(hook):
            try:
                hook(list(docs))
            except Exception as exc:
                raise BackendError(
                    f"retriever {spec}: {name}() raised {type(exc).__name__}: {exc}; fix the "
                    "retriever"
                ) from None
            return f"retriever {spec} ({name})"
    raise UsageError(
        f"the python backend's retriever {spec} holds its own documents (it has no "
        "add_documents(docs) or index(docs) method): index them with your own code, then "
        "run `ragsnap snapshot --backend python`"
    )


_NAMES: dict[str, tuple[str, ...]] = {
    "source": ("source",),
    "chunkId": ("chunk_id", "chunkId"),
    "text": ("text",),
    "score": ("score",),
    "rank": ("rank",),
    "metadata": ("metadata",),
    "title": ("title",),
    "breadcrumb": ("breadcrumb",),
    "docId": ("doc_id", "docId"),
}
_REQUIRED = ("source", "chunkId", "text", "score")
_MISSING = object()


def _field(hit: Any, key: str) -> Any:
    for name in _NAMES[key]:
        if isinstance(hit, Mapping):
            if name in hit:
                return hit[name]
        elif hasattr(hit, name):
            return getattr(hit, name)
    return _MISSING


def _block(hit: Any, where: str) -> dict[str, Any]:
    """The evidence block of one hit (no rank yet), or a ``BackendError``."""
    out: dict[str, Any] = {}
    for key in _NAMES:
        value = _field(hit, key)
        if value is _MISSING or (value is None and key not in _REQUIRED):
            if key in _REQUIRED and key != "score":
                raise BackendError(f"{where} has no {' or '.join(_NAMES[key])}")
            if key == "score":
                raise BackendError(f"{where} has no score (a number, or None)")
            continue
        out[key] = value
    for key in ("source", "chunkId"):
        if not isinstance(out[key], str) or not out[key]:
            raise BackendError(f"{where}: {_NAMES[key][0]} is {out[key]!r}, not a non-empty string")
    for key in ("text", "title", "breadcrumb", "docId"):
        if key in out and not isinstance(out[key], str):
            raise BackendError(
                f"{where}: {_NAMES[key][0]} is {type(out[key]).__name__}, not a string"
            )
    score = out["score"]
    if score is not None:
        if isinstance(score, bool) or not isinstance(score, int | float):
            raise BackendError(f"{where}: score is {score!r}, not a number or None")
        if not math.isfinite(score):
            raise BackendError(f"{where}: score is {score}, not a finite number")
        out["score"] = float(score)
    rank = out.get("rank")
    if rank is not None and (isinstance(rank, bool) or not isinstance(rank, int) or rank < 1):
        raise BackendError(f"{where}: rank is {rank!r}, not an integer from 1")
    if "metadata" in out:
        import orjson

        metadata = out["metadata"]
        if not isinstance(metadata, Mapping):
            raise BackendError(f"{where}: metadata is {type(metadata).__name__}, not a mapping")
        try:
            out["metadata"] = orjson.loads(orjson.dumps(dict(metadata)))
        except (TypeError, orjson.JSONEncodeError) as exc:
            raise BackendError(f"{where}: metadata is not JSON ({exc})") from None
    return out


def evidence_blocks(hits: Any, *, top_k: int, where: str) -> list[dict[str, Any]]:
    """The evidence blocks of a retriever's ``hits``, ranked and cut to ``top_k``
    (module docstring); ``where`` names the search in errors."""
    if isinstance(hits, str | bytes | Mapping) or not isinstance(hits, Iterable):
        raise BackendError(f"{where} returned {type(hits).__name__}, not a list of hits")
    blocks = [_block(hit, f"{where}: hit {index}") for index, hit in enumerate(hits, 1)]
    ranked = [block for block in blocks if "rank" in block]
    if ranked and len(ranked) != len(blocks):
        raise BackendError(f"{where}: some hits have a rank and some do not; rank all or none")
    if not ranked:
        for position, block in enumerate(blocks, 1):
            block["rank"] = position
    blocks.sort(key=lambda block: int(block["rank"]))
    for key in ("rank", "chunkId"):
        seen: set[Any] = set()
        for block in blocks:
            if block[key] in seen:
                name = _NAMES[key][0]
                raise BackendError(f"{where}: two hits have {name} {block[key]!r}")
            seen.add(block[key])
    return [{**block, "rank": rank} for rank, block in enumerate(blocks[:top_k], 1)]


def lookup_result(blocks: list[dict[str, Any]]) -> dict[str, Any]:
    """The lookupResult of evidence blocks alone, as every lookup that is not ragsnap's
    pipeline records it: the parts it cannot know (context pack, retrieval trace,
    rerank trace) are absent, so an expectation on them is "not applicable"."""
    return {"evidenceBlocks": blocks}


def _describe(retriever: Any) -> str | None:
    """What the retriever says it is: ``fingerprint()`` or ``version`` (None: neither)."""
    fingerprint = getattr(retriever, "fingerprint", None)
    if callable(fingerprint):
        value = fingerprint()
        return None if value is None else str(value)
    version = getattr(retriever, "version", None)
    return None if version is None else str(version)


class PythonSource:
    """A retriever as a ``LookupSource`` (``ragsnap.snapshot.capture``)."""

    def __init__(self, name: str, retriever: Any, timeout: float, method: str | None = None):
        self.name = name
        self.retriever = retriever
        self.timeout = timeout
        #: the ``python.methods`` entry it was opened for (None: ``python.retriever``)
        self.method = method
        self.revision = _describe(retriever)

    def generator(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "backend": "python",
            "embedder": None,
            "pipelineVersion": f"python:{self.name}",
            "settings": {"retriever": self.name, "revision": self.revision},
        }
        if self.method is not None:
            out["method"] = self.method
        return out

    def search(self, query: str, *, kb_scope: str | None, top_k: int) -> list[Any]:
        """The retriever's hits for ``query``, in a worker thread with the timeout."""
        where = f"retriever {self.name}: search({query!r})"
        outcome: list[tuple[bool, Any]] = []

        def call() -> None:
            try:
                hits = self.retriever.search(query, top_k=top_k, filters={"kbScope": kb_scope})
                if isinstance(hits, Iterable) and not isinstance(hits, str | bytes | Mapping):
                    hits = list(hits)  # a generator runs inside the timeout too
                outcome.append((True, hits))
            except BaseException as exc:  # handed to the caller
                outcome.append((False, exc))

        worker = threading.Thread(target=call, name="ragsnap-retriever", daemon=True)
        worker.start()
        worker.join(self.timeout)
        if worker.is_alive():
            raise BackendError(
                f"{where} did not answer within {self.timeout:g} s; make it faster, or raise "
                "python.timeoutSeconds in ragsnap.yaml"
            )
        done, value = outcome[0]
        if not done:
            raise BackendError(
                f"{where} raised {type(value).__name__}: {value}; fix the retriever "
                "(run the search in Python to see the traceback)"
            )
        return value  # type: ignore[no-any-return]

    def lookup(self, query: str, *, kb_scope: str | None, top_k: int) -> dict[str, Any]:
        hits = self.search(query, kb_scope=kb_scope, top_k=top_k)
        where = f"retriever {self.name}: search({query!r})"
        try:
            blocks = evidence_blocks(hits, top_k=top_k, where=where)
        except BackendError as exc:
            raise BackendError(
                f"{exc}; fix the retriever: each hit needs source, chunk_id (or chunkId), text "
                "and score, optionally rank and metadata (docs/python.md)"
            ) from None
        return lookup_result(blocks)

    def corpus(self) -> tuple[dict[str, tuple[str, str | None]] | None, str | None]:
        """A retriever's corpus is its own: no document digests; its fingerprint or
        version as the revision (None: it reports neither)."""
        return None, self.revision

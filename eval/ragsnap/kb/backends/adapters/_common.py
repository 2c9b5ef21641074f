"""What the LangChain and LlamaIndex adapters share: the metadata keys, a hit from a
document's metadata, the scope check, and seed documents as chunk records (the
package docstring is the spec)."""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ....errors import BackendError, UsageError

if TYPE_CHECKING:
    from ....settings import ChunkSettings
    from ...corpus import SeedDocument

__all__ = [
    "DEFAULT_KEYS",
    "Adapter",
    "Found",
    "IndexingAdapter",
    "MetadataKeys",
    "chunk_records",
    "require",
]


@dataclass(frozen=True, slots=True)
class MetadataKeys:
    """Where an adapter reads each part of a hit in a document's metadata."""

    source: str = "source"
    chunk_id: str = "chunk_id"
    title: str = "title"
    breadcrumb: str = "breadcrumb"
    doc_id: str = "doc_id"
    kb_scope: str = "kb_scope"


#: the keys of ``MetadataKeys()``, every adapter's default
DEFAULT_KEYS = MetadataKeys()

#: one document a store returned: (its metadata, its text, its score or None)
Found = tuple[Mapping[str, Any], str, "float | None"]


def require(module: str, library: str, extra: str) -> None:
    """Import ``module`` or say which extra installs ``library`` (exit 2)."""
    import importlib

    try:
        importlib.import_module(module)
    except ImportError:
        raise UsageError(
            f"the {extra} adapter needs {library}, which is not installed; to install: "
            f"pip install 'ragsnap[{extra.lower()}]'"
        ) from None


def _scalar(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    return isinstance(value, str | int | bool)


def to_hit(
    metadata: Mapping[str, Any], text: str, score: Any, keys: MetadataKeys, where: str, how: str
) -> dict[str, Any]:
    """The python backend's hit for one document; ``how`` names the adapter call."""
    if isinstance(score, numbers.Real) and not isinstance(score, bool):
        score = float(score)  # a numpy float too; anything else is the python backend's error
    hit: dict[str, Any] = {"text": text, "score": score}
    for field, key, what in (
        ("source", keys.source, "the document's source, as the golden cases name it"),
        ("chunk_id", keys.chunk_id, "the chunk's id, as the golden cases' judgments name it"),
    ):
        value = metadata.get(key)
        if not isinstance(value, str) or not value:
            found = "has no" if value is None else f"has {value!r} as its"
            raise BackendError(
                f"{where} {found} metadata {key!r} ({what}); store it in the metadata of every "
                f"document you index (langchain.documents and llamaindex.nodes set it for "
                f"ragsnap's seed documents), or name the key that holds it: "
                f"{how}(..., keys=MetadataKeys({field}='...'))"
            )
        hit[field] = value
    for field, key in (
        ("title", keys.title),
        ("breadcrumb", keys.breadcrumb),
        ("doc_id", keys.doc_id),
    ):
        value = metadata.get(key)
        if isinstance(value, str) and value:
            hit[field] = value
    mapped = {keys.source, keys.chunk_id, keys.title, keys.breadcrumb, keys.doc_id}
    rest = {k: v for k, v in metadata.items() if k not in mapped and _scalar(v)}
    if rest:
        hit["metadata"] = dict(sorted(rest.items()))
    return hit


class Adapter:
    """A store's search as the python backend's retriever (the package docstring).

    ``fetch(query, k, scope)`` returns what the store found for ``query``, at most
    ``k``, best first; ``scope`` is the case's kbScope. ``k`` is ``top_k`` when there is
    no scope or the store filters by it (``filters_in_store``), else ``fetch_k`` (4 x
    top_k by default); the adapter keeps the documents inside the scope either way.
    """

    def __init__(
        self,
        fetch: Callable[[str, int, str | None], Iterable[Found]],
        *,
        how: str,
        keys: MetadataKeys,
        filters_in_store: bool,
        fetch_k: int | None = None,
        version: str | None = None,
    ):
        if fetch_k is not None and fetch_k < 1:
            raise BackendError(f"{how}(fetch_k={fetch_k}): fetch_k must be 1 or more")
        self._fetch = fetch
        self.how = how
        self.keys = keys
        self.filters_in_store = filters_in_store
        self.fetch_k = fetch_k
        self._version = version

    def fingerprint(self) -> str | None:
        """The ``version`` the adapter was given (None: the corpus is not identified)."""
        return self._version

    def search(self, query: str, *, top_k: int, filters: Mapping[str, Any]) -> list[dict[str, Any]]:
        scope = filters.get("kbScope")
        if scope is None or self.filters_in_store:
            k = top_k
        else:
            k = self.fetch_k if self.fetch_k is not None else 4 * top_k
        hits: list[dict[str, Any]] = []
        for position, (metadata, text, score) in enumerate(self._fetch(query, k, scope), 1):
            if scope is not None and metadata.get(self.keys.kb_scope) != scope:
                continue
            where = f"{self.how}: result {position}"
            hits.append(to_hit(metadata, text, score, self.keys, where, self.how))
            if len(hits) == top_k:
                break
        return hits


class IndexingAdapter(Adapter):
    """An adapter over a store that takes documents: ``ragsnap seed`` adds to it."""

    def __init__(self, fetch: Any, add: Callable[[list[SeedDocument]], None], **kwargs: Any):
        super().__init__(fetch, **kwargs)
        self._add = add

    def add_documents(self, docs: Iterable[SeedDocument]) -> None:
        """Chunk ``docs`` as ragsnap does and add the chunks to the store."""
        self._add(list(docs))


def chunk_records(
    docs: Iterable[SeedDocument],
    keys: MetadataKeys = DEFAULT_KEYS,
    settings: ChunkSettings | None = None,
) -> list[tuple[str, str, dict[str, Any]]]:
    """Seed documents chunked as ragsnap chunks them: ``(chunk id, text, metadata)``, the
    metadata under ``keys`` (and ``category`` when the document has one)."""
    from ....settings import ChunkSettings
    from ...corpus import chunk_document

    chunking = settings if settings is not None else ChunkSettings()
    records: list[tuple[str, str, dict[str, Any]]] = []
    for doc in docs:
        common = {
            keys.title: doc.title,
            keys.breadcrumb: doc.breadcrumb,
            keys.doc_id: doc.doc_id,
            keys.kb_scope: doc.kb_scope,
            "category": doc.category,
        }
        for chunk in chunk_document(doc, chunking):
            metadata = {keys.source: doc.source, keys.chunk_id: chunk.chunk_id}
            metadata.update({k: v for k, v in common.items() if v is not None})
            records.append((chunk.chunk_id, chunk.text, metadata))
    return records

"""LangChain adapters (``pip install 'ragsnap[langchain]'``: ``langchain-core``).

``from_vector_store(store)`` searches with ``store.similarity_search_with_score(query,
k=..., filter=...)``: the scores are the store's (a distance or a similarity, as the store
defines it; ragsnap only records them). The case's kbScope is passed as ``filter`` when
the store is LangChain's ``InMemoryVectorStore`` (a predicate over the document) or when
``scope_filter`` says how the store spells it, e.g. ``scope_filter=lambda scope:
{"kb_scope": scope}`` for Chroma, PGVector or FAISS; otherwise the adapter filters after
retrieval (the package docstring).

``from_retriever(retriever)`` calls ``retriever.invoke(query, **invoke_kwargs(k,
scope))``: a retriever returns what it is configured to return, so pass
``invoke_kwargs=lambda k, scope: {"k": k}`` to a vector store's retriever (its own
default is 4); ``k`` is the case's topK, or ``fetch_k`` when the case has a kbScope,
which the adapter filters after retrieval. LangChain documents carry no
score, so it is None unless ``score_key`` names the metadata that holds one.

``documents(docs)``: ragsnap's seed documents as LangChain ``Document`` s (ids: chunk
ids), for ``store.add_documents``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ....errors import UsageError
from ._common import (
    DEFAULT_KEYS,
    Adapter,
    Found,
    IndexingAdapter,
    MetadataKeys,
    chunk_records,
    require,
)

if TYPE_CHECKING:
    from ....settings import ChunkSettings
    from ...corpus import SeedDocument

__all__ = ["documents", "from_retriever", "from_vector_store"]


def _require() -> None:
    require("langchain_core", "langchain-core", "LangChain")


def documents(
    docs: Iterable[SeedDocument],
    keys: MetadataKeys = DEFAULT_KEYS,
    settings: ChunkSettings | None = None,
) -> list[Any]:
    """Seed documents as LangChain ``Document`` s, chunked as ragsnap chunks them."""
    _require()
    from langchain_core.documents import Document

    return [
        Document(page_content=text, metadata=metadata, id=chunk_id)
        for chunk_id, text, metadata in chunk_records(docs, keys, settings)
    ]


def _in_memory(store: Any) -> bool:
    from langchain_core.vectorstores import InMemoryVectorStore

    return isinstance(store, InMemoryVectorStore)


def from_vector_store(
    store: Any,
    *,
    keys: MetadataKeys = DEFAULT_KEYS,
    scope_filter: Callable[[str], Any] | None = None,
    fetch_k: int | None = None,
    version: str | None = None,
) -> Adapter:
    """A LangChain ``VectorStore`` as a ragsnap retriever (the module docstring)."""
    _require()
    how = "langchain.from_vector_store"
    if not callable(getattr(store, "similarity_search_with_score", None)):
        raise UsageError(
            f"{how}: {type(store).__name__} has no similarity_search_with_score; pass a "
            "LangChain VectorStore, or use langchain.from_retriever for a retriever"
        )
    to_filter = scope_filter
    if to_filter is None and _in_memory(store):
        key = keys.kb_scope

        def to_filter(scope: str) -> Any:
            return lambda document: document.metadata.get(key) == scope

    def fetch(query: str, k: int, scope: str | None) -> Iterable[Found]:
        kwargs: dict[str, Any] = {}
        if scope is not None and to_filter is not None:
            kwargs["filter"] = to_filter(scope)
        for document, score in store.similarity_search_with_score(query, k=k, **kwargs):
            yield document.metadata, document.page_content, score

    def add(docs: list[SeedDocument]) -> None:
        store.add_documents(documents(docs, keys))

    return IndexingAdapter(
        fetch,
        add,
        how=how,
        keys=keys,
        filters_in_store=to_filter is not None,
        fetch_k=fetch_k,
        version=version,
    )


def from_retriever(
    retriever: Any,
    *,
    keys: MetadataKeys = DEFAULT_KEYS,
    invoke_kwargs: Callable[[int, str | None], Mapping[str, Any]] | None = None,
    score_key: str | None = None,
    fetch_k: int | None = None,
    version: str | None = None,
) -> Adapter:
    """A LangChain ``BaseRetriever`` (anything with ``invoke(query)`` returning
    ``Document`` s) as a ragsnap retriever (the module docstring)."""
    _require()
    how = "langchain.from_retriever"
    if not callable(getattr(retriever, "invoke", None)):
        raise UsageError(
            f"{how}: {type(retriever).__name__} has no invoke method; pass a LangChain "
            "retriever, or use langchain.from_vector_store for a vector store"
        )

    def fetch(query: str, k: int, scope: str | None) -> Iterable[Found]:
        kwargs = dict(invoke_kwargs(k, scope)) if invoke_kwargs is not None else {}
        for document in retriever.invoke(query, **kwargs):
            score = document.metadata.get(score_key) if score_key is not None else None
            yield document.metadata, document.page_content, score

    return Adapter(
        fetch, how=how, keys=keys, filters_in_store=False, fetch_k=fetch_k, version=version
    )

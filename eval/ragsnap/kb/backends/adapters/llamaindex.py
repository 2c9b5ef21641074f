"""LlamaIndex adapters (``pip install 'ragsnap[llamaindex]'``: ``llama-index-core``).

``from_index(index)`` searches with ``index.as_retriever(similarity_top_k=k,
filters=...).retrieve(query)`` (a ``VectorStoreIndex``, over any vector store): the
case's kbScope is passed as ``MetadataFilters([ExactMatchFilter(kb_scope, scope)])``;
``scope_in_store=False`` filters after retrieval instead, for a store without metadata
filters. ``retriever_kwargs`` are passed to ``as_retriever`` as well (e.g.
``{"vector_store_query_mode": "hybrid"}``).

``from_retriever(retriever)`` calls ``retriever.retrieve(query)`` on any LlamaIndex
``BaseRetriever`` (fusion, auto-merging, a router ...): it returns what it is configured
to return (set its top k to the cases' topK or more); the kbScope is filtered after
retrieval.

Each ``NodeWithScore`` is a hit: the node's metadata (the package docstring), its content
without metadata (``MetadataMode.NONE``), its score as given (None when the retriever
gives none).

``nodes(docs)``: ragsnap's seed documents as LlamaIndex ``TextNode`` s (ids: chunk ids),
for ``VectorStoreIndex(nodes, embed_model=...)`` or ``index.insert_nodes``. Their
metadata is excluded from what is embedded and what an LLM is shown, so a node's vector
is its chunk text's, as ragsnap's embedders see it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
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

__all__ = ["from_index", "from_retriever", "nodes"]


def _require() -> None:
    require("llama_index.core", "llama-index-core", "LlamaIndex")


def nodes(
    docs: Iterable[SeedDocument],
    keys: MetadataKeys = DEFAULT_KEYS,
    settings: ChunkSettings | None = None,
) -> list[Any]:
    """Seed documents as LlamaIndex ``TextNode`` s, chunked as ragsnap chunks them."""
    _require()
    from llama_index.core.schema import TextNode

    return [
        TextNode(
            id_=chunk_id,
            text=text,
            metadata=metadata,
            excluded_embed_metadata_keys=sorted(metadata),
            excluded_llm_metadata_keys=sorted(metadata),
        )
        for chunk_id, text, metadata in chunk_records(docs, keys, settings)
    ]


def _found(results: Iterable[Any]) -> Iterable[Found]:
    from llama_index.core.schema import MetadataMode

    for result in results:
        node = result.node
        yield node.metadata, node.get_content(metadata_mode=MetadataMode.NONE), result.score


def from_index(
    index: Any,
    *,
    keys: MetadataKeys = DEFAULT_KEYS,
    scope_in_store: bool = True,
    retriever_kwargs: Mapping[str, Any] | None = None,
    fetch_k: int | None = None,
    version: str | None = None,
) -> Adapter:
    """A LlamaIndex index (``as_retriever``) as a ragsnap retriever (the module
    docstring)."""
    _require()
    how = "llamaindex.from_index"
    if not callable(getattr(index, "as_retriever", None)):
        raise UsageError(
            f"{how}: {type(index).__name__} has no as_retriever; pass a LlamaIndex index "
            "(VectorStoreIndex), or use llamaindex.from_retriever for a retriever"
        )
    from llama_index.core.vector_stores import ExactMatchFilter, MetadataFilters

    extra = dict(retriever_kwargs or {})

    def fetch(query: str, k: int, scope: str | None) -> Iterable[Found]:
        kwargs: dict[str, Any] = {**extra, "similarity_top_k": k}
        if scope is not None and scope_in_store:
            kwargs["filters"] = MetadataFilters(
                filters=[ExactMatchFilter(key=keys.kb_scope, value=scope)]
            )
        return _found(index.as_retriever(**kwargs).retrieve(query))

    def add(docs: list[SeedDocument]) -> None:
        index.insert_nodes(nodes(docs, keys))

    return IndexingAdapter(
        fetch,
        add,
        how=how,
        keys=keys,
        filters_in_store=scope_in_store,
        fetch_k=fetch_k,
        version=version,
    )


def from_retriever(
    retriever: Any,
    *,
    keys: MetadataKeys = DEFAULT_KEYS,
    version: str | None = None,
) -> Adapter:
    """A LlamaIndex ``BaseRetriever`` (``retrieve(query)`` -> ``NodeWithScore`` s) as a
    ragsnap retriever (the module docstring)."""
    _require()
    how = "llamaindex.from_retriever"
    if not callable(getattr(retriever, "retrieve", None)):
        raise UsageError(
            f"{how}: {type(retriever).__name__} has no retrieve method; pass a LlamaIndex "
            "retriever, or use llamaindex.from_index for an index"
        )

    def fetch(query: str, k: int, scope: str | None) -> Iterable[Found]:
        return _found(retriever.retrieve(query))

    return Adapter(fetch, how=how, keys=keys, filters_in_store=False, version=version)

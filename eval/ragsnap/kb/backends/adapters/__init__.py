"""Adapters: a LangChain or LlamaIndex retriever as the ``python`` backend's retriever.

A team's factory (``python.retriever: my_rag.ragsnap:make_retriever``) builds its own
store and returns it through an adapter::

    from ragsnap.kb.backends.adapters import langchain

    def make_retriever():
        return langchain.from_vector_store(build_my_store())

=========================================  =================================================
``langchain.from_vector_store(store)``     ``VectorStore.similarity_search_with_score``
``langchain.from_retriever(retriever)``    ``BaseRetriever.invoke`` (no scores, unless
                                           ``score_key`` names the metadata that holds one)
``llamaindex.from_index(index)``           ``VectorStoreIndex.as_retriever(...).retrieve``
``llamaindex.from_retriever(retriever)``   ``BaseRetriever.retrieve`` -> ``NodeWithScore``
=========================================  =================================================

Each returns an ``Adapter``: ``search(query, *, top_k, filters)`` as the ``python``
backend asks (``ragsnap.kb.backends.python``). What each hit becomes is read from the
document's (node's) metadata, under the keys of ``MetadataKeys`` (``source``,
``chunk_id``, ``title``, ``breadcrumb``, ``doc_id``, ``kb_scope`` by default; name
others with ``keys=MetadataKeys(source="url", ...)``); the text is the document's
``page_content`` (the node's content without its metadata); the score is the store's,
as given (None where the store gives none). The metadata's other scalar values (strings,
numbers, booleans) are the evidence block's ``metadata``. A hit whose metadata has no
source or chunk id is a ``BackendError`` naming the key to set.

**kbScope.** A case's scope is passed to the store as a metadata filter where the
adapter knows the store's filter (LangChain's ``InMemoryVectorStore``, any LlamaIndex
index, or the ``scope_filter`` a team passes); otherwise the adapter asks for
``fetch_k`` candidates (default 4 x top_k) and keeps those whose ``kb_scope`` metadata
is the case's scope. Every hit is checked against the scope after retrieval either way,
so a store that ignores a filter cannot leak another scope's documents (a document
without the ``kb_scope`` key is outside every scope).

**Seeding.** ``langchain.documents(docs)`` and ``llamaindex.nodes(docs)`` turn parsed seed
documents (``ragsnap.kb.corpus.load_seed_docs``) into the ecosystem's documents, chunked
as ragsnap chunks them (so chunk ids are the golden cases' ``source#n``) with the
metadata the adapters read. The vector store and index adapters have ``add_documents``,
so ``ragsnap seed --backend python`` adds the seed documents to the store.

**Staleness.** ``version="..."`` is what the adapter reports as ``fingerprint()``, the
fixtures' corpus revision (the python backend's docstring).

Nothing here imports LangChain or LlamaIndex until an adapter is made.
"""

from __future__ import annotations

from ._common import Adapter, MetadataKeys, chunk_records

__all__ = ["Adapter", "MetadataKeys", "chunk_records"]

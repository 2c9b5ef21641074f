"""Factories for the adapter tests, named ``backends.adapter_retrievers:NAME`` (``tests/``
on ``PYTHONPATH``): each builds its ecosystem's own in-memory store over the project's
``seed-docs/`` (ragsnap's loader and chunker, through ``langchain.documents`` /
``llamaindex.nodes``, so chunk ids are the golden cases' ``source#n``), embedded by
ragsnap's hashing embedder wrapped as the ecosystem's embedding class (deterministic, no
network, no model), and returns it through an adapter, as a team's factory would.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ragsnap.kb.backends.adapters import Adapter, MetadataKeys, langchain, llamaindex
from ragsnap.kb.corpus import load_seed_docs
from ragsnap.kb.embedders import HashingEmbedder

SEED = Path("seed-docs")
_HASHING = HashingEmbedder()


def _vector(text: str) -> list[float]:
    return [float(x) for x in _HASHING.embed_query(text)]


def hashing_embeddings() -> Any:
    """ragsnap's hashing embedder as LangChain ``Embeddings``."""
    from langchain_core.embeddings import Embeddings

    class HashingEmbeddings(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return [_vector(text) for text in texts]

        def embed_query(self, text: str) -> list[float]:
            return _vector(text)

    return HashingEmbeddings()


def hashing_embedding() -> Any:
    """ragsnap's hashing embedder as a LlamaIndex ``BaseEmbedding``."""
    from llama_index.core.embeddings import BaseEmbedding

    class HashingEmbedding(BaseEmbedding):
        def _get_query_embedding(self, query: str) -> list[float]:
            return _vector(query)

        def _get_text_embedding(self, text: str) -> list[float]:
            return _vector(text)

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return _vector(query)

    return HashingEmbedding(model_name="ragsnap-hashing")


def in_memory_store(keys: MetadataKeys | None = None) -> Any:
    from langchain_core.vectorstores import InMemoryVectorStore

    store = InMemoryVectorStore(hashing_embeddings())
    store.add_documents(langchain.documents(load_seed_docs(SEED), keys or MetadataKeys()))
    return store


def vector_store_index(keys: MetadataKeys | None = None) -> Any:
    from llama_index.core import VectorStoreIndex

    nodes = llamaindex.nodes(load_seed_docs(SEED), keys or MetadataKeys())
    return VectorStoreIndex(nodes, embed_model=hashing_embedding())


def langchain_store() -> Adapter:
    return langchain.from_vector_store(in_memory_store(), version="langchain-in-memory")


def langchain_retriever() -> Adapter:
    """Asks for ``fetch_k`` (100: every chunk) when the case has a scope, which it filters
    after retrieval."""
    return langchain.from_retriever(
        in_memory_store().as_retriever(), invoke_kwargs=lambda k, scope: {"k": k}, fetch_k=100
    )


def llamaindex_index() -> Adapter:
    return llamaindex.from_index(vector_store_index(), version="llamaindex-simple")


def llamaindex_retriever() -> Adapter:
    """Returns 100 nodes (every chunk), filtered to the scope and cut to top_k."""
    return llamaindex.from_retriever(vector_store_index().as_retriever(similarity_top_k=100))


def langchain_unkeyed() -> Adapter:
    """Documents whose chunk id is under ``id``, read with the default keys: an error."""
    return langchain.from_vector_store(in_memory_store(MetadataKeys(chunk_id="id")))


def langchain_empty() -> Adapter:
    """An empty store, for ``ragsnap seed`` to fill (``add_documents``)."""
    from langchain_core.vectorstores import InMemoryVectorStore

    return langchain.from_vector_store(InMemoryVectorStore(hashing_embeddings()))

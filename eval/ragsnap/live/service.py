"""The reference HTTP contract, served by ``ragsnap serve`` (FastAPI).

Endpoints (all JSON; the OpenAPI document is at ``/openapi.json``)::

    GET    /api/health                      status, backend, embedder, counts, corpusRevision
                                            (no token)
    POST   /api/knowledge/lookup            {query, topK?, kbScope?, method?} -> {lookupResult}
    GET    /api/search/similar?query=&topK=&kbScope=
                                            vector similarity search -> {results: [...]}
    GET    /api/documents                   stored documents with their index hashes,
                                            server ids, revisions and embedding identity
    POST   /api/documents                   {name, content}: a Markdown seed document with
                                            frontmatter; delete-then-upload by its source;
                                            header ``Idempotency-Key`` makes it replayable
    DELETE /api/documents?source=           remove one document and its chunks

It is what the ``http`` backend and ``ragsnap live-check`` speak by default,
and what a Java/Spring service can be compared with. Request bodies are
validated (unknown fields, wrong types and sizes are 4xx answers saying what
is wrong) and bounded in size; with a token configured, every endpoint but
health needs ``Authorization: Bearer <token>``. A document whose frontmatter is
bad (YAML aliases included) is a 400. An upload or delete holds the store's
writer lock (``ragsnap.io.locks``), one SQLite file's one writer at a time.
Writes queue for it: inside a process one at a time (a mutex), and across
processes (the other workers of ``serve --workers N``, ``ragsnap seed``) by
trying the lock again every few milliseconds for up to ``writer_wait`` seconds
(``serve --write-wait``, default ``WRITER_WAIT``), so concurrent uploads of
different documents all succeed, whatever the number of workers. Only a
writer that holds the lock beyond the wait (a long ``ragsnap seed``) makes it a
409 naming that writer, with ``Retry-After: 1`` (``ragsnap``'s HTTP client
retries such a 409 within its retries; a 409 without it, an idempotency key
used for another document, is a conflict to fix). Inside the process, lookups
and searches share a read lock and uploads and deletes take it exclusively
(once they hold the writer lock, so a waiting write never holds lookups back),
so a lookup never sees a half-applied upload; a write by another process is
caught by the lookup itself, which reads one state of the store
(``Pipeline.lookup``).

Server ids, revisions and idempotency keys. Every document uploaded through
the service gets a server id (a uuid4) that stays while the source is stored:
an update keeps it, a delete ends it and a later upload of the source gets a
new one. Its ``revision`` is the hash it was indexed from (the file's bytes,
frontmatter included, and the chunk settings), and its ``embedding`` the
embedder's fingerprint. Upload answers carry ``id``, ``revision``,
``embedding``, ``idempotencyKey`` and ``replayed``; list answers carry ``id``
(null for a document written by ``ragsnap seed`` directly, until it is
uploaded through the service), ``revision``, ``embedding``, and the list
says ``complete: true`` (it is never paged). An upload carrying an
``Idempotency-Key`` header (1-200 printable ASCII characters) that the
service has answered before gets that first answer again (same id and
revision, ``replayed: true``) and changes nothing, whatever happened to the
document since; the same key with another document is a 409. The receipts
and ids are stored in the knowledge base's ``receipts`` table in the same
transaction as the document (embedded store; never read by lookups): a
restarted service honours them, a fresh knowledge base has none. Over
Milvus they are kept in memory and forgotten when the service stops.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import secrets
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

import orjson
from fastapi import Depends, FastAPI, Header, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .. import __version__
from ..errors import BackendError, KnowledgeBaseBusy, RagsnapError
from ..kb.backends import Filter, KnowledgeBase, ReceiptStore
from ..kb.corpus import parse_seed_doc
from ..kb.embedders import Embedder
from ..kb.numeric import quantize
from ..kb.pipeline import PIPELINE_VERSION, Pipeline, score_label
from ..kb.seeding import corpus_revision, delete_document, index_hash, upsert_document
from ..settings import METHODS, ChunkSettings

__all__ = ["DEFAULT_MAX_BODY", "WRITER_WAIT", "Receipts", "ServiceState", "create_app"]

#: Largest request body accepted (bytes); larger ones get 413.
DEFAULT_MAX_BODY = 8 * 1024 * 1024
MAX_QUERY = 4000
MAX_TOP_K = 1000
#: how long a write waits for the store's writer lock before answering 409 (seconds)
WRITER_WAIT = 10.0
#: the longest pause between two tries of a busy writer lock (seconds)
_POLL = 0.002
#: a process with writes queued pauses ``_HAND_OVER`` seconds after this many in a row
_HAND_OVER_EVERY = 4
_HAND_OVER = 0.005
Method = Literal["lexical", "vector", "hybrid", "hybrid+rerank"]
assert set(METHODS) == {"lexical", "vector", "hybrid", "hybrid+rerank"}


@dataclass
class ServiceState:
    """What the endpoints share: the store, the pipeline and their locks."""

    kb: KnowledgeBase
    pipeline: Pipeline
    embedder: Embedder
    chunking: ChunkSettings
    where: str
    token: str | None = None
    access: ReadWriteLock = field(default_factory=lambda: ReadWriteLock())
    #: the store's writer lock across processes (``ragsnap.io.locks``), held per write
    store_lock: Callable[[], AbstractContextManager[None]] = contextlib.nullcontext
    #: how long a write waits for ``store_lock`` before its 409 (module docstring)
    writer_wait: float = WRITER_WAIT
    #: lookups read a local store and wait on nothing: answer them on the event loop
    #: (``_FastLookup``), not in the thread pool
    lookups_on_loop: bool = False
    receipts: Receipts = field(init=False)
    writers: threading.Lock = field(init=False, default_factory=threading.Lock)
    _queued: int = field(init=False, default=0)  # writes waiting for ``writers``
    _streak: int = field(init=False, default=0)  # writes in a row with others queued
    _count: threading.Lock = field(init=False, default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.receipts = Receipts(self.kb)

    @contextlib.contextmanager
    def writing(self) -> Iterator[None]:
        """Hold what a write needs: this process's turn, the store's writer lock (tried
        again until ``writer_wait`` has passed; then its ``KnowledgeBaseBusy``), and the
        exclusive side of ``access``."""
        deadline = time.monotonic() + self.writer_wait
        with contextlib.ExitStack() as stack:
            with self._count:
                self._queued += 1
            try:
                turn = self.writers.acquire(timeout=max(self.writer_wait, 0.001))
            finally:
                with self._count:
                    self._queued -= 1
            if not turn:
                raise KnowledgeBaseBusy(
                    f"{self.where}: {self.writer_wait:g} s were not enough for the uploads and "
                    "deletes queued before this one in this process; send fewer at once"
                )
            stack.callback(self.writers.release)
            stack.callback(self._hand_over)  # after the store's lock is released
            pause = 0.0005
            while True:
                try:
                    stack.enter_context(self.store_lock())
                    break
                except KnowledgeBaseBusy:
                    if time.monotonic() + pause > deadline:
                        raise
                    time.sleep(pause)
                    pause = min(pause * 2, _POLL)
            stack.enter_context(self.access.write())
            yield

    def _hand_over(self) -> None:
        """After every ``_HAND_OVER_EVERY`` writes in a row with more queued here, pause
        before the next: a worker process polling for the store's lock gets its turn,
        so a busy worker cannot starve another beyond its wait."""
        with self._count:
            self._streak = self._streak + 1 if self._queued else 0
            due = self._streak >= _HAND_OVER_EVERY
            if due:
                self._streak = 0
        if due:
            time.sleep(_HAND_OVER)


#: receipt keys: an answered idempotency key, a source's server id
_RECEIPT = "receipt:"
_RECORD = "record:"
_KEY_PATTERN = r"^[\x21-\x7e]{1,200}$"


class Receipts:
    """Answered idempotency keys and the server ids of sources (module docstring).

    In the store's receipts (``ReceiptStore``: the embedded store's ``receipts``
    table, written in the document's transaction and read by every worker
    process), in memory for any other store. Read and written only under the
    store's writer lock, but for the list endpoint's server ids.
    """

    def __init__(self, kb: KnowledgeBase):
        self._store = kb if isinstance(kb, ReceiptStore) else None
        self._memory: dict[str, str] = {}

    @property
    def persistent(self) -> bool:
        return self._store is not None

    def _read(self, keys: list[str]) -> dict[str, str]:
        if self._store is not None:
            return self._store.read_receipts(keys)
        return {k: self._memory[k] for k in keys if k in self._memory}

    def answer(self, key: str) -> dict[str, Any] | None:
        """The first answer to idempotency key ``key`` (with its ``request`` hash)."""
        raw = self._read([_RECEIPT + key]).get(_RECEIPT + key)
        return None if not raw else dict(json.loads(raw))

    def server_ids(self, sources: list[str]) -> dict[str, str]:
        """The server ids of those of ``sources`` that have one."""
        raw = self._read([_RECORD + s for s in sources])
        return {k[len(_RECORD) :]: str(json.loads(v)["id"]) for k, v in raw.items() if v}

    def stage(self, entries: dict[str, str]) -> dict[str, str]:
        """What to write with the document: the entries, or nothing when kept in memory."""
        return entries if self.persistent else {}

    def committed(self, entries: dict[str, str]) -> None:
        if not self.persistent:
            self._memory.update(entries)


class ReadWriteLock:
    """Many readers at a time, or one writer; a waiting writer holds back new readers
    (so a stream of lookups cannot starve an upload)."""

    def __init__(self) -> None:
        self._state = threading.Condition()
        self._readers = 0
        self._writing = False
        self._waiting = 0

    @contextlib.contextmanager
    def read(self) -> Iterator[None]:
        with self._state:
            while self._writing or self._waiting:
                self._state.wait()
            self._readers += 1
        try:
            yield
        finally:
            self.release_read()

    def try_read(self) -> bool:
        """Take the read side at once if no writer holds it or waits for it (then
        ``release_read`` it); False, holding nothing, otherwise."""
        with self._state:
            if self._writing or self._waiting:
                return False
            self._readers += 1
            return True

    def release_read(self) -> None:
        with self._state:
            self._readers -= 1
            if not self._readers:
                self._state.notify_all()

    @contextlib.contextmanager
    def write(self) -> Iterator[None]:
        with self._state:
            self._waiting += 1
            while self._writing or self._readers:
                self._state.wait()
            self._waiting -= 1
            self._writing = True
        try:
            yield
        finally:
            with self._state:
                self._writing = False
                self._state.notify_all()


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class LookupRequest(_Strict):
    """A lookup: the query, and optionally topK, kbScope and the retrieval method."""

    query: str = Field(min_length=1, max_length=MAX_QUERY)
    topK: int | None = Field(default=None, ge=1, le=MAX_TOP_K)
    kbScope: str | None = Field(default=None, min_length=1, max_length=200)
    method: Method | None = None


class UploadRequest(_Strict):
    """A Markdown seed document: its file name and its text, frontmatter included."""

    name: str = Field(min_length=1, max_length=500, pattern=r"^[^\x00/\\]+$")
    content: str = Field(min_length=1)


def _replaying(first: Message, receive: Receive) -> Receive:
    """A ``receive`` that gives ``first`` (a message already read) once, then reads on."""
    replayed = False

    async def replay() -> Message:
        nonlocal replayed
        if replayed:
            return await receive()
        replayed = True
        return first

    return replay


class _BodyLimit:
    """ASGI middleware: 413 for a request body over ``limit`` bytes, declared or streamed."""

    def __init__(self, app: ASGIApp, limit: int):
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", []):
            if name == b"content-length" and value.isdigit() and int(value) > self.limit:
                await self._too_large(send)
                return
        # read the body here, up to the limit: an exception raised from inside the app's
        # receive() would be turned into FastAPI's 400 "error parsing the body"
        body = bytearray()
        more = True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away
            body += message.get("body", b"")
            if len(body) > self.limit:
                await self._too_large(send)
                return
            more = message.get("more_body", False)
        whole: Message = {"type": "http.request", "body": bytes(body), "more_body": False}
        await self.app(scope, _replaying(whole, receive), send)

    async def _too_large(self, send: Send) -> None:
        response = JSONResponse(
            {"error": f"request body larger than {self.limit} bytes; send a smaller document"},
            status_code=413,
        )
        await response({"type": "http"}, _no_receive, send)


async def _no_receive() -> Message:  # pragma: no cover - a JSONResponse never reads
    return {"type": "http.disconnect"}


def _field(loc: Any) -> str:
    """``("body", "topK")`` -> ``topK``; ``("query", "topK")`` -> ``topK`` (query parameter)."""
    parts = [str(p) for p in loc]
    if parts and parts[0] in ("body", "query", "path", "header"):
        parts = parts[1:]
    return ".".join(parts) or "body"


def create_app(state: ServiceState, *, max_body: int = DEFAULT_MAX_BODY) -> FastAPI:
    """The FastAPI application over ``state``."""
    app = FastAPI(
        title="ragsnap knowledge service",
        version=__version__,
        description="The reference retrieval HTTP contract of ragsnap: lookups, similarity "
        "search, document upload and delete-by-source over a local knowledge base.",
    )

    @app.exception_handler(RequestValidationError)
    async def _invalid(_request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = [f"{_field(e['loc'])}: {e['msg']}" for e in exc.errors()]
        return JSONResponse(
            {"error": "invalid request: " + "; ".join(problems), "detail": problems},
            status_code=422,
        )

    @app.exception_handler(RagsnapError)
    async def _refused(_request: Request, exc: RagsnapError) -> JSONResponse:
        return _error_answer(exc)

    async def authorized(request: Request) -> None:
        # async: it never blocks, and FastAPI runs a plain def dependency in a worker
        # thread, one more hop to the thread pool and back for every request
        if state.token is None:
            return
        given = request.headers.get("authorization", "")
        scheme, _, value = given.partition(" ")
        if scheme.lower() != "bearer" or not secrets.compare_digest(
            value.strip().encode(), state.token.encode()
        ):
            raise _Unauthorized

    @app.exception_handler(_Unauthorized)
    async def _unauthorized(_request: Request, _exc: _Unauthorized) -> JSONResponse:
        return JSONResponse(
            {"error": "missing or wrong bearer token; send Authorization: Bearer <token>"},
            status_code=401,
            headers={"WWW-Authenticate": "Bearer"},
        )

    guarded = [Depends(authorized)]

    @app.get("/api/health", summary="Liveness, the backend and what the index holds")
    def health() -> dict[str, Any]:
        docs = state.kb.documents()
        return {
            "status": "ok",
            "backend": state.kb.backend,
            "pipelineVersion": PIPELINE_VERSION,
            "embedder": state.embedder.fingerprint.to_json(),
            "method": state.pipeline.settings.method,
            "settings": state.pipeline.describe(),
            "documents": len(docs),
            "chunks": state.kb.count(),
            "corpusRevision": corpus_revision({s: d.index_hash for s, d in docs.items()}),
        }

    @app.post(
        "/api/knowledge/lookup",
        dependencies=guarded,
        summary="Run the lookup pipeline; answer {lookupResult} (the fixture contract)",
        response_class=_Json,
        responses={200: {"content": {"application/json": {"schema": {"type": "object"}}}}},
    )
    def lookup(body: LookupRequest) -> _Json:
        # answered by _FastLookup when valid and authorised; here the rest reaches it
        with state.access.read():
            return _Json({"lookupResult": _run_lookup(state, body)})

    @app.get(
        "/api/search/similar",
        dependencies=guarded,
        summary="Vector similarity search inside kbScope (no hints, fusion or reranking)",
    )
    def similar(
        query: Annotated[str, Query(min_length=1, max_length=MAX_QUERY)],
        topK: Annotated[int, Query(ge=1, le=MAX_TOP_K)] = 5,
        kbScope: Annotated[str | None, Query(min_length=1, max_length=200)] = None,
    ) -> dict[str, Any]:
        vector = state.embedder.embed_query(query)
        with state.access.read():  # the search and the chunks from one state of the store
            for _ in range(5):  # another process may write between the two: search again
                hits = state.kb.vector_search(vector, Filter(kb_scope=kbScope), topK)
                chunks = state.kb.chunks([row for row, _ in hits], tokens=False)
                if len(chunks) == len(hits):
                    break
            else:
                raise BackendError(
                    "the knowledge base changed under 5 searches in a row; let the seed "
                    "finish, then search again"
                )
        results = []
        for rank, (row, score) in enumerate(hits, 1):
            chunk = chunks[row]
            results.append(
                {
                    "rank": rank,
                    "chunkId": chunk.chunk_id,
                    "source": chunk.source,
                    "docId": chunk.doc_id,
                    "title": chunk.title,
                    "breadcrumb": chunk.breadcrumb,
                    "text": chunk.text,
                    "score": quantize(score),
                    "scoreLabel": score_label(quantize(score)),
                }
            )
        return {"query": query, "topK": topK, "kbScope": kbScope, "results": results}

    @app.get("/api/documents", dependencies=guarded, summary="Stored documents by source")
    def documents() -> dict[str, Any]:
        docs = state.kb.documents()
        ids = state.receipts.server_ids(list(docs))
        embedding = state.embedder.fingerprint.to_json()
        return {
            "complete": True,
            "documents": [
                {
                    "source": info.source,
                    "docId": info.doc_id,
                    "title": info.title,
                    "breadcrumb": info.breadcrumb,
                    "category": info.category,
                    "kbScope": info.kb_scope,
                    "chunks": info.chunk_count,
                    "indexHash": info.index_hash,
                    "id": ids.get(info.source),
                    "revision": info.index_hash,
                    "embedding": embedding,
                }
                for info in docs.values()
            ],
        }

    @app.post(
        "/api/documents",
        dependencies=guarded,
        summary="Upload a Markdown seed document (delete-then-upload by its source)",
        response_model=None,
    )
    def upload(
        body: UploadRequest,
        idempotency_key: Annotated[
            str | None, Header(alias="Idempotency-Key", pattern=_KEY_PATTERN)
        ] = None,
    ) -> JSONResponse | dict[str, Any]:
        raw = body.content.encode("utf-8")
        doc = parse_seed_doc(Path(body.name), raw)
        request = hashlib.sha256(body.name.encode("utf-8") + b"\0" + raw).hexdigest()
        revision = index_hash(doc, state.chunking)
        with state.writing():
            if idempotency_key is not None:
                seen = state.receipts.answer(idempotency_key)
                if seen is not None:
                    if seen.pop("request") != request:
                        return JSONResponse(
                            {
                                "error": f"Idempotency-Key {idempotency_key} was used for "
                                "another document; send this one with its own key"
                            },
                            status_code=409,
                        )
                    return {**seen, "replayed": True}
            stored = doc.source in state.kb.documents()
            known = state.receipts.server_ids([doc.source]).get(doc.source) if stored else None
            server_id = known or str(uuid.uuid4())
            answer: dict[str, Any] = {
                "source": doc.source,
                "id": server_id,
                "revision": revision,
                "embedding": state.embedder.fingerprint.to_json(),
                "idempotencyKey": idempotency_key,
            }
            written: dict[str, str] = {}

            def receipt(status: str, chunks: int) -> dict[str, str]:
                answer.update(status=status, chunks=chunks)
                if known is None:
                    written[_RECORD + doc.source] = json.dumps({"id": server_id})
                if idempotency_key is not None:
                    kept = {**answer, "request": request}
                    written[_RECEIPT + idempotency_key] = json.dumps(kept, sort_keys=True)
                return state.receipts.stage(written)

            upsert_document(
                state.kb,
                doc,
                state.embedder,
                state.pipeline.tokenizer,
                state.chunking,
                where=state.where,
                receipt=receipt,
            )
            state.receipts.committed(written)
            answer["replayed"] = False
        return answer

    @app.delete("/api/documents", dependencies=guarded, summary="Delete a document by source")
    def delete(source: Annotated[str, Query(min_length=1, max_length=200)]) -> dict[str, Any]:
        tombstone = {_RECORD + source: ""}
        with state.writing():
            chunks = delete_document(state.kb, source, state.receipts.stage(tombstone))
            if chunks:
                state.receipts.committed(tombstone)
        return {"source": source, "removed": chunks > 0, "chunks": chunks}

    app.add_middleware(_FastLookup, state=state)  # inside _BodyLimit: bodies arrive bounded
    app.add_middleware(_BodyLimit, limit=max_body)
    return app


def _error_answer(exc: RagsnapError) -> JSONResponse:
    """The answer to a ``RagsnapError``: 400 with its message, or for ``KnowledgeBaseBusy``
    (a writer held the lock beyond the wait) 409 with ``Retry-After: 1``, which the http
    client retries."""
    if isinstance(exc, KnowledgeBaseBusy):
        return JSONResponse({"error": str(exc)}, status_code=409, headers={"Retry-After": "1"})
    return JSONResponse({"error": str(exc)}, status_code=400)


#: the route ``_FastLookup`` answers itself
_LOOKUP_PATH = "/api/knowledge/lookup"


class _FastLookup:
    """ASGI middleware: a valid, authorised ``POST /api/knowledge/lookup`` answered
    without FastAPI's routing, dependency solving and response layers.

    Those cost about as much CPU a request as the HTTP server itself (the
    snapshot_http benchmark); a snapshot sends nothing else. The request passes
    only when FastAPI would answer it 200 from the same model: a JSON content type
    (``application/json``, parameters allowed), a body ``json.loads`` reads (as
    Starlette's ``Request.json``) into a valid ``LookupRequest``, and the bearer
    token when one is set. Its answer is the endpoint's: the same lookup under the
    same read lock, the same ``_Json`` bytes and headers, and a ``RagsnapError``
    answered by the same ``_error_answer``. Anything else (another route, a bad body
    or token) goes to the application, body included, and gets FastAPI's own
    answer, 422s and 401s alike.

    Where the lookup runs. A lookup over a local store (``lookups_on_loop``: the
    embedded SQLite file) is CPU work that waits on nothing, and a process answers
    one at a time whatever its threads, as they share one interpreter lock; so it
    runs on the event loop, saving the hop to the thread pool and back (about as
    much CPU as parsing the request). When the read lock is not free at once (an
    upload or delete holds it or waits for it), the lookup waits in the thread
    pool instead, so the event loop never blocks on a write. A lookup over a store
    reached through the network (Milvus) always runs in the thread pool, so one
    process overlaps the waits of several.
    """

    def __init__(self, app: ASGIApp, state: ServiceState):
        self.app = app
        self.state = state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] != "http"
            or scope["path"] != _LOOKUP_PATH
            or scope["method"] != "POST"
            or not self._accepted(scope["headers"])
        ):
            await self.app(scope, receive, send)
            return
        message = await receive()  # _BodyLimit replays the whole body in one message
        body: bytes = message.get("body", b"")
        replay = _replaying(message, receive)
        request = self._parse(body) if message["type"] == "http.request" else None
        if request is None or message.get("more_body", False):
            await self.app(scope, replay, send)
            return
        response: Response
        try:
            if self.state.lookups_on_loop and self.state.access.try_read():
                try:
                    response = _Json({"lookupResult": _run_lookup(self.state, request)})
                finally:
                    self.state.access.release_read()
            else:
                response = await run_in_threadpool(self._answer, request)
        except RagsnapError as exc:
            response = _error_answer(exc)
        await response(scope, replay, send)

    def _accepted(self, headers: list[tuple[bytes, bytes]]) -> bool:
        """A JSON content type, and the bearer token when one is set."""
        found: dict[bytes, bytes] = {}
        for name, value in headers:  # the first of each, as Starlette's headers.get
            if name in (b"content-type", b"authorization"):
                found.setdefault(name, value)
        content_type = found.get(b"content-type", b"")
        authorization = found.get(b"authorization", b"")
        kind = content_type.partition(b";")[0].strip().lower()
        if kind != b"application/json":
            return False
        token = self.state.token
        if token is None:
            return True
        scheme, _, given = authorization.decode("latin-1").partition(" ")
        return scheme.lower() == "bearer" and secrets.compare_digest(
            given.strip().encode(), token.encode()
        )

    @staticmethod
    def _parse(body: bytes) -> LookupRequest | None:
        """The request FastAPI would validate from ``body``, or None when it would not."""
        try:
            return LookupRequest.model_validate(json.loads(body))
        except (ValueError, ValidationError):  # JSONDecodeError, UnicodeDecodeError
            return None

    def _answer(self, body: LookupRequest) -> _Json:
        with self.state.access.read():
            return _Json({"lookupResult": _run_lookup(self.state, body)})


def _run_lookup(state: ServiceState, body: LookupRequest) -> dict[str, Any]:
    """The lookup of ``body`` (the endpoint's, and ``_FastLookup``'s)."""
    return state.pipeline.lookup(
        body.query,
        kb_scope=body.kbScope,
        top_k=body.topK,
        method=body.method,
        record_latency=True,
    )


class _Unauthorized(Exception):
    pass


class _Json(Response):
    """A JSON answer encoded with orjson, returned as is by the endpoint.

    FastAPI would otherwise validate a returned dict against the endpoint's return
    type (for a sync endpoint, in a second hop to the thread pool) and encode it
    again; the lookup's answer is built by the pipeline, so neither is needed, and
    they cost about as much CPU as a small lookup. orjson writes the same values
    (floats as their shortest repr) as Starlette's ``json.dumps``.
    """

    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content)

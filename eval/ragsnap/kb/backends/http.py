"""The ``http`` backend: a retrieval service over HTTP (the Java/Spring service case).

Snapshots call the service's lookup endpoint and seeding its upload and
delete endpoints; ``live-check`` calls its similarity search. Endpoint paths
and the answers' field names are mapped by the ``http`` section of
``ragsnap.yaml``; the defaults are ``ragsnap serve``'s contract, so a
service that speaks it needs no mapping at all::

    http:
      baseUrl: http://127.0.0.1:9900
      tokenEnv: RAG_TOKEN          # or tokenFile: path (first line); never logged
      timeoutSeconds: 30
      retries: 3                   # connection errors and 5xx only, with backoff
      concurrency: 4               # snapshot requests in flight
      budgets: {records: 10000, bytes: 67108864}  # per request (below)
      health: /api/health          # null: the service has none
      corpusRevision: corpusRevision  # where health reports the corpus revision (or null)
      envelope: null               # or {code: code, message: message, data: data, ok: 0}
      methods:                     # optional: a method name -> extra lookup body fields
        lexical: {mode: bm25}
        hybrid: {mode: hybrid, alpha: 0.5}
      lookup:
        path: /api/knowledge/lookup
        request: {query: query, topK: topK, kbScope: kbScope}  # JSON body names
        result: data               # where the lookupResult sits ("" = the whole answer)
        evidenceBlocks: evidence   # inside the result
        block: {source: docSource, text: content}  # fixture field: service field
        contextPack: contextPack   # null when the service has none
        retrievalTrace: trace
        rerankTrace: null
        trace:                     # the traces' own field names (below); default: ragsnap's
          retrievalTrace: {selectedAttempt: strategy, attempts: strategies, l0Hints: hints}
          attempt: {hitCount: hits, topScore: bestScore, method: null}
      similar:
        path: /api/search/similar
        params: {query: query, topK: topK, kbScope: kbScope}
        results: results
        item: {source: docSource}
      documents: {list: /api/documents, upload: /api/documents, delete: /api/documents}

Paths inside answers are dotted (``data.items``). A service that wraps every
answer in an envelope (Spring's ``{"code": 0, "message": "ok", "data": ...}``,
errors sent with HTTP 200 and another code) is read through ``envelope``:
every answer (health, lookup, similar, list, upload, delete) must carry the
``code`` field with one of the ``ok`` values (0 by default; a list allows
several), else the request fails with a ``BackendError`` naming the endpoint,
the code and the envelope's ``message``; the mapping's other paths are then
read inside the envelope's ``data`` (``""``: the answer itself). The fields'
defaults are ``code``, ``message`` and ``data``, so ``envelope: {}`` reads
that shape. A field the mapping names
but the answer lacks is an error naming the endpoint, the field and the
mapping key to fix. Evidence blocks need ``chunkId``, ``source`` and
``text``; ``rank`` defaults to the position, ``score`` to null, and
``docId``, ``title``, ``breadcrumb``, ``scoreLabel`` and ``metadata`` are
copied when present. A part mapped to null (``contextPack``,
``retrievalTrace``, ``rerankTrace``: the service does not expose it) is left out
of the fixture, never recorded empty: it is *not reported*, and a golden case's
expectation that reads it is "not applicable (fixture has no rerankTrace)",
counted in every report, never passed or failed (``ragsnap.scoring.hits``);
``scoring.skip`` is not needed for it.

**Methods** (``http.methods``). A service that can run several retrieval
methods is told which one through the lookup request: each entry names a
method (``lexical``, ``hybrid``: the names trial reports and fixtures use,
the pattern of a method name) and the JSON fields added to every lookup body
of that method, sent as they are (any JSON value; ``{}`` sends nothing
extra: the service's default). A field the body already sends (the
``lookup.request`` names: ``query``, ``topK``, ``kbScope`` by default) is
refused (``InputError`` at ``/http/methods/<name>/<field>``). ``ragsnap
snapshot --backend http --method NAME`` sends that method's fields and
records ``method: NAME`` and ``settings.request`` (the fields) in each
fixture's generator and the method and its fields in the manifest's capture
(``method``, ``method.request``), so fixtures captured under another method
are stale; ``ragsnap trial --backend http`` compares the mapped methods on the
service (``ragsnap.commands.trial``). A name the mapping lacks is a
``UsageError`` listing the names it has. Without ``--method`` nothing is
added: the service's own default method runs, as before.

**Budgets per request** (``http.budgets``, QilbeeDB's trial budgets; the
flags ``--max-records`` and ``--max-bytes`` of ``trial``, ``prepare`` and
``live-check`` override them). ``records`` (default 10000) bounds the
records one retrieval request may ask for and be answered with: a lookup or
similarity search whose ``topK`` is over it is refused before it is sent
(``UsageError``: lower the depth or the case's topK, or raise the budget), and
an answer with more evidence blocks or results than the budget is a
``BackendError`` (the service sent more than it may). ``bytes`` (default
67108864, 64 MiB) bounds every request's serialized JSON body, refused before
it is sent (``UsageError``), and every answer's body, read only up to the
budget and then refused (``BackendError``; ``ragsnap.io.httpclient``). A
document list (prepare, live-check ``--state``) is the service's inventory,
not a retrieval: only its bytes are budgeted. ``HttpService.budgets`` is the
pair as trial plans record it (``plan.backend.budgets``).

**Trace field names** (``http.lookup.trace``). Without it the objects found at
``retrievalTrace`` and ``rerankTrace`` are copied as they are, so they must
already use the fixture's names. With it, a service keeps its own names: each
trace object is rebuilt from its fields, read under the service's names
(``fixture field: service field``, dotted, like ``block``), one section per
object of the fixture (``TRACE_FIELDS``):

* ``retrievalTrace``: ``attempts``, ``selectedAttempt``, ``fallbackReasons``,
  ``evidenceStatus`` (required); ``l0Hints``, ``fusion``;
* ``l0Hints`` (inside the retrieval trace's ``l0Hints``): ``category``,
  ``breadcrumbPrefix``;
* ``attempt`` (each item of ``attempts``): ``name``, ``hitCount`` (required);
  ``filter``, ``method``, ``topScore``, ``latencyMs``, ``skipped``, ``reason``;
* ``rerankTrace``: ``applied``, ``before``, ``after`` (required); ``reranker``;
* ``rankedItem`` (each item of ``before`` and ``after``): ``chunkId``, ``source``
  (required); ``score``, ``confidence``, ``lexicalRank``, ``vectorRank``.

A field the section does not name keeps ragsnap's name. Values are copied as
they are (no value translation; ``fusion`` and an attempt's ``filter`` whole).
Only these fields are recorded: the service's other fields are left out. A
field mapped to null is not reported: it is left out of the fixture (never
invented), so whatever reads it finds it absent. Only optional fields may be
null (the config schema refuses null for a required one: map the whole trace
to null instead). A field the answer lacks is an error naming the endpoint,
the dotted field (``data.trace.strategies[1].hits``) and the mapping key
(``http.lookup.trace.attempt.hitCount``) when the field is required or the
config names it; an optional field under its default name is copied when
present. A null the fixture refuses (``l0Hints``, ``fusion``, an attempt's
``filter``, ``method`` or ``skipped``: Jackson's null for "none") is left out
too. ``attempts``, ``before`` and ``after`` must be lists of objects,
``l0Hints`` an object.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...errors import BackendError, InputError, UsageError
from ...io.httpclient import MAX_BYTES, HttpClient, read_token

__all__ = [
    "DEFAULT_BASE_URL",
    "MAX_RECORDS",
    "TRACE_FIELDS",
    "Envelope",
    "HttpMapping",
    "HttpService",
    "TraceMapping",
    "load_mapping",
]

DEFAULT_BASE_URL = "http://127.0.0.1:9900"
#: the default record budget per request (QilbeeDB's: "up to 10000 source records")
MAX_RECORDS = 10000
#: a similarity result's fields, in ragsnap's names
_ITEM_FIELDS = (
    "rank",
    "chunkId",
    "docId",
    "source",
    "title",
    "breadcrumb",
    "text",
    "score",
    "scoreLabel",
)
#: an evidence block's fields: a result's, and its metadata
_BLOCK_FIELDS = (*_ITEM_FIELDS, "metadata")
_REQUIRED_BLOCK = ("chunkId", "source", "text")
#: a stored document's fields (upload and list answers), in ragsnap's names
_DOCUMENT_FIELDS = ("source", "id", "revision", "embedding", "kbScope")
_TRACES = ("contextPack", "retrievalTrace", "rerankTrace")
#: the trace objects ``http.lookup.trace`` maps, each with its fields in ragsnap's names:
#: (required, optional); a required field cannot be mapped to null (the fixture needs it)
TRACE_FIELDS: Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "retrievalTrace": (
        ("attempts", "selectedAttempt", "fallbackReasons", "evidenceStatus"),
        ("l0Hints", "fusion"),
    ),
    "l0Hints": ((), ("category", "breadcrumbPrefix")),
    "attempt": (
        ("name", "hitCount"),
        ("filter", "method", "topScore", "latencyMs", "skipped", "reason"),
    ),
    "rerankTrace": (("applied", "before", "after"), ("reranker",)),
    "rankedItem": (
        ("chunkId", "source"),
        ("score", "confidence", "lexicalRank", "vectorRank"),
    ),
}
#: what each mapped object is, for messages
_TRACE_OBJECTS = {
    "retrievalTrace": "the retrieval trace",
    "l0Hints": "the L0 hint",
    "attempt": "an attempt",
    "rerankTrace": "the rerank trace",
    "rankedItem": "a reranked item",
}
#: optional fields whose null the fixture refuses (Jackson's null for "none"): left out
_NULL_IS_ABSENT = {("retrievalTrace", "l0Hints"), ("retrievalTrace", "fusion")} | {
    ("attempt", "filter"),
    ("attempt", "method"),
    ("attempt", "skipped"),
}


def _identity(names: tuple[str, ...]) -> dict[str, str]:
    return {name: name for name in names}


@dataclass(frozen=True)
class Envelope:
    """How a service wraps its answers (``http.envelope``): where the status code,
    the message and the payload sit (dotted), and the codes that mean success."""

    code: str = "code"
    message: str | None = "message"
    data: str = "data"
    ok: tuple[int | str, ...] = (0,)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Envelope:
        d = cls()
        ok = data.get("ok", list(d.ok))
        return cls(
            code=data.get("code", d.code),
            message=data.get("message", d.message),
            data=data.get("data", d.data),
            ok=tuple(ok) if isinstance(ok, list) else (ok,),
        )

    def succeeded(self, code: Any) -> bool:
        """Whether ``code`` is one of the success codes (``0`` and ``"0"`` alike)."""
        if isinstance(code, bool) or not isinstance(code, (int, str)):
            return False
        return str(code) in {str(ok) for ok in self.ok}


@dataclass(frozen=True)
class TraceMapping:
    """``http.lookup.trace``: the service's names of the trace fields, per object
    (``TRACE_FIELDS``; fixture field: service field, dotted; None: not reported), ragsnap's
    own names by default, and which fields the config names (those must be answered)."""

    fields: Mapping[str, Mapping[str, str | None]] = field(
        default_factory=lambda: {
            name: _identity((*required, *optional))
            for name, (required, optional) in TRACE_FIELDS.items()
        }
    )
    named: frozenset[tuple[str, str]] = frozenset()

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TraceMapping:
        d = cls()
        return cls(
            fields={name: {**names, **data.get(name, {})} for name, names in d.fields.items()},
            named=frozenset((name, key) for name, given in data.items() for key in given),
        )


@dataclass(frozen=True)
class HttpMapping:
    """The ``http`` section of ragsnap.yaml, defaults filled in."""

    base_url: str = DEFAULT_BASE_URL
    token_file: Path | None = None
    token_env: str | None = None
    timeout: float = 30.0
    retries: int = 3
    concurrency: int = 4
    #: ``http.budgets``: records and serialized bytes per request (module docstring)
    max_records: int = MAX_RECORDS
    max_bytes: int = MAX_BYTES
    pipeline_version: str | None = None
    health: str | None = "/api/health"
    corpus_revision: str | None = "corpusRevision"
    envelope: Envelope | None = None
    lookup_path: str = "/api/knowledge/lookup"
    lookup_request: Mapping[str, str | None] = field(
        default_factory=lambda: _identity(("query", "topK", "kbScope"))
    )
    lookup_result: str = "lookupResult"
    evidence_blocks: str = "evidenceBlocks"
    block: Mapping[str, str] = field(default_factory=lambda: _identity(_BLOCK_FIELDS))
    traces: Mapping[str, str | None] = field(default_factory=lambda: _identity(_TRACES))
    trace: TraceMapping | None = None  # None: the traces are copied as they are
    similar_path: str = "/api/search/similar"
    similar_params: Mapping[str, str | None] = field(
        default_factory=lambda: _identity(("query", "topK", "kbScope"))
    )
    similar_results: str = "results"
    item: Mapping[str, str] = field(default_factory=lambda: _identity(_ITEM_FIELDS))
    list_path: str | None = "/api/documents"
    list_field: str = "documents"
    upload_path: str | None = "/api/documents"
    delete_path: str | None = "/api/documents"
    idempotency_header: str | None = "Idempotency-Key"
    list_complete: str | None = "complete"
    document: Mapping[str, str] = field(default_factory=lambda: _identity(_DOCUMENT_FIELDS))
    #: ``http.methods``: a method name -> the JSON fields its lookups add to the body
    methods: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    source: str = "ragsnap.yaml"  # where the mapping came from, for messages

    @classmethod
    def from_json(cls, data: Mapping[str, Any], base: Path, source: str) -> HttpMapping:
        """The mapping from the validated ``http`` section (paths relative to ``base``)."""
        lookup = data.get("lookup", {})
        similar = data.get("similar", {})
        docs = data.get("documents", {})
        d = cls()
        token_file = data.get("tokenFile")
        envelope = data.get("envelope")
        trace = lookup.get("trace")
        request = {**d.lookup_request, **lookup.get("request", {})}
        methods = data.get("methods", {})
        _check_methods(methods, request, source)
        return cls(
            base_url=data.get("baseUrl", d.base_url),
            token_file=None if token_file is None else base / token_file,
            token_env=data.get("tokenEnv"),
            timeout=float(data.get("timeoutSeconds", d.timeout)),
            retries=int(data.get("retries", d.retries)),
            concurrency=int(data.get("concurrency", d.concurrency)),
            max_records=int(data.get("budgets", {}).get("records", d.max_records)),
            max_bytes=int(data.get("budgets", {}).get("bytes", d.max_bytes)),
            pipeline_version=data.get("pipelineVersion"),
            health=data.get("health", d.health),
            corpus_revision=data.get("corpusRevision", d.corpus_revision),
            envelope=None if envelope is None else Envelope.from_json(envelope),
            lookup_path=lookup.get("path", d.lookup_path),
            lookup_request=request,
            lookup_result=lookup.get("result", d.lookup_result),
            evidence_blocks=lookup.get("evidenceBlocks", d.evidence_blocks),
            block={**d.block, **lookup.get("block", {})},
            traces={name: lookup.get(name, name) for name in _TRACES},
            trace=None if trace is None else TraceMapping.from_json(trace),
            similar_path=similar.get("path", d.similar_path),
            similar_params={**d.similar_params, **similar.get("params", {})},
            similar_results=similar.get("results", d.similar_results),
            item={**d.item, **similar.get("item", {})},
            list_path=docs.get("list", d.list_path),
            list_field=docs.get("listField", d.list_field),
            upload_path=docs.get("upload", d.upload_path),
            delete_path=docs.get("delete", d.delete_path),
            idempotency_header=docs.get("idempotencyHeader", d.idempotency_header),
            list_complete=docs.get("complete", d.list_complete),
            document={**d.document, **docs.get("fields", {})},
            methods={name: dict(fields) for name, fields in methods.items()},
            source=source,
        )

    def with_budgets(self, records: int | None, size: int | None) -> HttpMapping:
        """This mapping with the budgets ``--max-records`` and ``--max-bytes`` give
        (None: the configured one)."""
        return dataclasses.replace(
            self,
            max_records=self.max_records if records is None else records,
            max_bytes=self.max_bytes if size is None else size,
        )

    def method_request(self, name: str) -> dict[str, Any]:
        """The fields ``http.methods.<name>`` adds to a lookup body; a name the mapping
        lacks is a ``UsageError`` listing the names it has."""
        if name in self.methods:
            return dict(self.methods[name])
        if not self.methods:
            raise UsageError(
                f"method {name!r}: the http mapping in {self.source} names no methods; add "
                f"`http.methods: {{{name}: {{<lookup body fields>}}}}`, or drop the method"
            )
        raise UsageError(
            f"method {name!r} is not in http.methods of {self.source}; use one of "
            f"{', '.join(self.methods)}, or add it there"
        )


def _check_methods(
    methods: Mapping[str, Mapping[str, Any]], request: Mapping[str, str | None], source: str
) -> None:
    """A method's fields must not overwrite a field the lookup body already sends."""
    sent = {theirs: ours for ours, theirs in request.items() if theirs is not None}
    for name, fields in methods.items():
        for key in fields:
            if key in sent:
                raise InputError(
                    source,
                    f"http.methods.{name}.{key} is the lookup body's {sent[key]} field "
                    f"(http.lookup.request.{sent[key]})",
                    "give the method's parameter another name, or map the request's field "
                    "elsewhere",
                    f"/http/methods/{name}/{key}",
                )


def load_mapping(data: Mapping[str, Any] | None, base: Path | None, source: str) -> HttpMapping:
    """``HttpMapping.from_json`` of a config's ``http`` section, or the defaults."""
    if not data:
        return HttpMapping(source=source)
    return HttpMapping.from_json(data, base or Path(), source)


def _kind(value: Any) -> str:
    """A JSON value's type for a message: ``a list``, ``an object``, ``a boolean``..."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


class _Missing(Exception):
    def __init__(self, path: str):
        self.path = path


def _get(obj: Any, dotted: str, prefix: str = "") -> Any:
    """``obj["a"]["b"]`` for ``"a.b"`` (``""`` is ``obj``); ``_Missing`` names the full path."""
    if not dotted:
        return obj
    current = obj
    walked = prefix
    for part in dotted.split("."):
        walked = f"{walked}.{part}" if walked else part
        if not isinstance(current, dict) or part not in current:
            raise _Missing(walked)
        current = current[part]
    return current


def _named(names: Mapping[str, str | None], **values: Any) -> dict[str, Any]:
    """``values`` under the service's names (``names``: ours -> theirs); a name mapped to
    None, or a value that is None, is left out."""
    return {
        name: values[key]
        for key, name in names.items()
        if name is not None and values.get(key) is not None
    }


class HttpService:
    """A retrieval service reached over HTTP, read through an ``HttpMapping``."""

    backend = "http"

    def __init__(
        self,
        mapping: HttpMapping,
        *,
        base_url: str | None = None,
        token: str | None = None,
        method: str | None = None,
    ):
        self.mapping = mapping
        #: the method its lookups run (``http.methods``; None: the service's default)
        self.method = method
        self.request = {} if method is None else mapping.method_request(method)
        if token is None:
            token = read_token(mapping.token_file, mapping.token_env)
        self.client = HttpClient(
            base_url or mapping.base_url,
            token=token,
            timeout=mapping.timeout,
            retries=mapping.retries,
            max_bytes=mapping.max_bytes,
            budget_hint=f"http.budgets.bytes in {mapping.source}, or --max-bytes",
        )
        self.base_url = self.client.base_url
        self._health: dict[str, Any] | None = None

    @property
    def budgets(self) -> dict[str, int]:
        """The budgets per request, as a trial plan records them."""
        return {"records": self.mapping.max_records, "bytes": self.mapping.max_bytes}

    def check_records(self, top_k: int, endpoint: str, asked: str = "topK") -> None:
        """Refuse, before it is sent, a request for more records than the budget
        (``asked``: what set the number, for the message)."""
        budget = self.mapping.max_records
        if top_k > budget:
            raise UsageError(
                f"{endpoint}: {asked} {top_k} asks for more records than the budget per "
                f"request ({budget} records, http.budgets.records in {self.mapping.source}, "
                "or --max-records); it was not sent. Ask for fewer, or raise the budget"
            )

    def _check_answered(self, count: int, endpoint: str, what: str) -> None:
        """An answer with more records than the budget is the service's error."""
        budget = self.mapping.max_records
        if count > budget:
            raise BackendError(
                f"{endpoint}: the service answered {count} {what}, more than the budget per "
                f"request ({budget} records, http.budgets.records in {self.mapping.source}, "
                "or --max-records); check that it honours topK, or raise the budget"
            )

    # -- reading answers ------------------------------------------------------

    def _field(self, answer: Any, dotted: str, endpoint: str, key: str, prefix: str = "") -> Any:
        try:
            return _get(answer, dotted, prefix)
        except _Missing as missing:
            raise BackendError(
                f"{endpoint}: the answer has no field `{missing.path}` (mapped by "
                f"http.{key} in {self.mapping.source}); set http.{key} to where the service "
                "puts it"
            ) from None

    def _inside(self, *dotted: str) -> str:
        """``dotted`` joined, inside the envelope's data when there is one: a path from
        the answer's root, for messages."""
        root = self.mapping.envelope.data if self.mapping.envelope is not None else ""
        return ".".join(part for part in (root, *dotted) if part)

    def _open(self, answer: Any, endpoint: str) -> Any:
        """The payload of ``answer``: itself, or inside its envelope once the envelope's
        code says success (``http.envelope``; module docstring)."""
        envelope = self.mapping.envelope
        if envelope is None:
            return answer
        where = f"http.envelope in {self.mapping.source}"
        try:
            code = _get(answer, envelope.code)
        except _Missing as missing:
            raise BackendError(
                f"{endpoint}: the answer has no envelope field `{missing.path}` (the status "
                f"code, mapped by http.envelope.code in {self.mapping.source}); check that "
                "the path names the service's endpoint, or fix http.envelope"
            ) from None
        if not envelope.succeeded(code):
            message: Any = None
            if envelope.message is not None:
                with contextlib.suppress(_Missing):
                    message = _get(answer, envelope.message)
            said = f": {message}" if message not in (None, "") else " (no message)"
            oks = " or ".join(json.dumps(ok) for ok in envelope.ok)
            raise BackendError(
                f"{endpoint}: the service answered code {json.dumps(code)}{said} (an error "
                f"inside an HTTP 200 answer: success is code {oks}, read through {where}); "
                "check the request and the service's logs"
            )
        return self._field(answer, envelope.data, endpoint, "envelope.data")

    def health(self) -> dict[str, Any] | None:
        """The health answer (fetched once), or None when the mapping has no health path."""
        if self.mapping.health is None:
            return None
        if self._health is None:
            endpoint = f"GET {self.base_url}{self.mapping.health}"
            answer = self._open(self.client.get_json(self.mapping.health), endpoint)
            self._health = answer if isinstance(answer, dict) else {}
        return self._health

    def generator(self) -> dict[str, Any]:
        """The fixture's generator fields this service can vouch for."""
        health = self.health() or {}
        embedder = health.get("embedder")
        version = health.get("pipelineVersion") or self.mapping.pipeline_version or "unknown"
        out: dict[str, Any] = {
            "backend": "http",
            "embedder": embedder if isinstance(embedder, dict) else None,
            "pipelineVersion": str(version),
        }
        method, settings = health.get("method"), health.get("settings")
        if isinstance(method, str) and method:
            out["method"] = method
        if isinstance(settings, dict):
            out["settings"] = settings
        if self.method is not None:  # the method this capture asked for, and how
            out["method"] = self.method
            out["settings"] = {**out.get("settings", {}), "request": dict(self.request)}
        return out

    def corpus(self) -> tuple[dict[str, tuple[str, str | None]] | None, str | None]:
        """A service's corpus is its own: no document digests, and the revision its health
        answer reports where ``corpusRevision`` of the mapping says (None when the mapping
        names none or the answer has none)."""
        path = self.mapping.corpus_revision
        if path is None:
            return None, None
        try:
            revision = _get(self.health() or {}, path)
        except _Missing:
            return None, None
        if isinstance(revision, bool) or not isinstance(revision, str | int):
            return None, None
        return None, str(revision)

    def lookup(self, query: str, *, kb_scope: str | None, top_k: int) -> dict[str, Any]:
        """The service's lookupResult for ``query``, in the fixture's shape."""
        m = self.mapping
        body = {
            **self.request,
            **_named(m.lookup_request, query=query, topK=top_k, kbScope=kb_scope),
        }
        endpoint = f"POST {self.base_url}{m.lookup_path}"
        self.check_records(top_k, endpoint)
        answer = self._open(self.client.post_json(m.lookup_path, body), endpoint)
        inside = self._inside(m.lookup_result)  # the result's path from the answer's root
        result = self._field(answer, m.lookup_result, endpoint, "lookup.result", self._inside())
        raw_blocks = self._field(
            result, m.evidence_blocks, endpoint, "lookup.evidenceBlocks", inside
        )
        where = self._inside(m.lookup_result, m.evidence_blocks)
        if not isinstance(raw_blocks, list):
            raise BackendError(
                f"{endpoint}: `{where}` is {type(raw_blocks).__name__}, not a list of evidence "
                f"blocks; point http.lookup.evidenceBlocks in {m.source} at the list"
            )
        self._check_answered(len(raw_blocks), endpoint, "evidence blocks")
        blocks = [
            self._block(raw, position, endpoint, f"{where}[{position - 1}]")
            for position, raw in enumerate(raw_blocks, 1)
        ]
        out: dict[str, Any] = {"evidenceBlocks": blocks}
        for name in _TRACES:
            dotted = m.traces.get(name)
            if dotted is None:  # not reported: left out of the fixture, never invented
                continue
            raw = self._field(result, dotted, endpoint, f"lookup.{name}", inside)
            if m.trace is not None and name != "contextPack":
                at = self._inside(m.lookup_result, dotted)
                raw = self._translate(name, raw, endpoint, at, f"http.lookup.{name}")
            out[name] = raw
        return out

    def _translate(
        self, kind: str, raw: Any, endpoint: str, where: str, located: str
    ) -> dict[str, Any]:
        """The trace object ``raw`` (a ``TRACE_FIELDS`` kind, at ``where`` in the answer,
        found through the mapping key ``located``) in the fixture's names, read through
        ``http.lookup.trace`` (module docstring)."""
        trace = self.mapping.trace
        assert trace is not None
        source = self.mapping.source
        if not isinstance(raw, dict):
            raise BackendError(
                f"{endpoint}: `{where}` is {_kind(raw)}, not an object ({_TRACE_OBJECTS[kind]}); "
                f"check {located} in {source}"
            )
        required, _ = TRACE_FIELDS[kind]
        out: dict[str, Any] = {}
        for name, dotted in trace.fields[kind].items():
            if dotted is None:  # not reported: left out, never invented
                continue
            key = f"http.lookup.trace.{kind}.{name}"
            at = ".".join(part for part in (where, dotted) if part)
            try:
                value = _get(raw, dotted)
            except _Missing:
                if name not in required and (kind, name) not in trace.named:
                    continue  # an optional field under its default name: copied when present
                also = (
                    "" if name in required else ", or to null when the service does not report it"
                )
                raise BackendError(
                    f"{endpoint}: `{at}` is missing ({_TRACE_OBJECTS[kind]}'s {name}, mapped "
                    f"by {key} in {source}); map it to the service's field{also}"
                ) from None
            if value is None and (kind, name) in _NULL_IS_ABSENT:
                continue
            if (kind, name) == ("retrievalTrace", "l0Hints"):
                value = self._translate("l0Hints", value, endpoint, at, key)
            elif (kind, name) == ("retrievalTrace", "attempts"):
                value = self._translate_all("attempt", value, endpoint, at, key)
            elif kind == "rerankTrace" and name in ("before", "after"):
                value = self._translate_all("rankedItem", value, endpoint, at, key)
            out[name] = value
        return out

    def _translate_all(
        self, kind: str, raw: Any, endpoint: str, where: str, key: str
    ) -> list[dict[str, Any]]:
        if not isinstance(raw, list):
            raise BackendError(
                f"{endpoint}: `{where}` is {_kind(raw)}, not a list; point {key} in "
                f"{self.mapping.source} at the service's list"
            )
        return [
            self._translate(kind, item, endpoint, f"{where}[{i}]", key)
            for i, item in enumerate(raw)
        ]

    def _block(self, raw: Any, position: int, endpoint: str, where: str) -> dict[str, Any]:
        if not isinstance(raw, dict):
            raise BackendError(
                f"{endpoint}: `{where}` is {type(raw).__name__}, not an object; check "
                f"http.lookup.evidenceBlocks in {self.mapping.source}"
            )
        block: dict[str, Any] = {}
        for name, dotted in self.mapping.block.items():
            try:
                block[name] = _get(raw, dotted)
            except _Missing:
                if name in _REQUIRED_BLOCK:
                    raise BackendError(
                        f"{endpoint}: `{where}.{dotted}` is missing (the evidence block's "
                        f"{name}, mapped by http.lookup.block.{name} in {self.mapping.source}); "
                        "map it to the service's field"
                    ) from None
        block.setdefault("rank", position)
        block.setdefault("score", None)
        return block

    def similar(
        self, query: str, *, top_k: int, kb_scope: str | None
    ) -> tuple[Any, list[dict[str, Any]]]:
        """The similarity search's raw answer and its results in ragsnap's names."""
        m = self.mapping
        params = _named(m.similar_params, query=query, topK=top_k, kbScope=kb_scope)
        endpoint = f"GET {self.base_url}{m.similar_path}"
        self.check_records(top_k, endpoint)
        answer = self._open(self.client.get_json(m.similar_path, params), endpoint)
        results = self._field(
            answer, m.similar_results, endpoint, "similar.results", self._inside()
        )
        where = self._inside(m.similar_results)
        if not isinstance(results, list):
            raise BackendError(
                f"{endpoint}: `{where}` is {type(results).__name__}, not a list; "
                f"point http.similar.results in {m.source} at the result list"
            )
        self._check_answered(len(results), endpoint, "results")
        items = []
        for position, raw in enumerate(results, 1):
            if not isinstance(raw, dict):
                raise BackendError(
                    f"{endpoint}: `{where}[{position - 1}]` is "
                    f"{type(raw).__name__}, not an object; point http.similar.results in "
                    f"{m.source} at the list of result objects"
                )
            item: dict[str, Any] = {}
            for name, dotted in m.item.items():
                try:
                    item[name] = _get(raw, dotted)
                except _Missing:
                    if name == "source":
                        raise BackendError(
                            f"{endpoint}: `{where}[{position - 1}].{dotted}` is "
                            f"missing (the result's source, mapped by http.similar.item.source "
                            f"in {m.source}); map it to the service's field"
                        ) from None
            item.setdefault("rank", position)
            items.append(item)
        return answer, items

    def documents(self) -> list[dict[str, Any]] | None:
        """The stored documents in ragsnap's names (``source``, ``kbScope`` ...: the
        ``document`` fields), or None without a list path."""
        m = self.mapping
        if m.list_path is None:
            return None
        endpoint = f"GET {self.base_url}{m.list_path}"
        answer = self._open(self.client.get_json(m.list_path), endpoint)
        docs = self._field(answer, m.list_field, endpoint, "documents.listField", self._inside())
        if not isinstance(docs, list) or not all(isinstance(d, dict) for d in docs):
            raise BackendError(
                f"{endpoint}: `{self._inside(m.list_field)}` is not a list of objects; check "
                f"http.documents.listField in {m.source}"
            )
        where = self._inside(m.list_field)
        stored = [self.stored(d, endpoint, f"{where}[{i}]") for i, d in enumerate(docs)]
        if not all(isinstance(d["source"], str) for d in stored):
            raise BackendError(
                f"{endpoint}: a listed document has no `{m.document['source']}` (its source, "
                f"mapped by http.documents.fields.source in {m.source}); map it to the "
                "service's field"
            )
        return stored

    def listing(self) -> tuple[list[dict[str, Any]], bool | None]:
        """The stored documents in ragsnap's names (``document`` fields: ``source``,
        ``id``, ``revision``, ``embedding``, ``kbScope``; one the answer lacks is None)
        and whether the service says the list is complete (None: it does not say)."""
        m = self.mapping
        path = self._need(m.list_path, "documents.list")
        endpoint = f"GET {self.base_url}{path}"
        answer = self._open(self.client.get_json(path), endpoint)
        docs = self._field(answer, m.list_field, endpoint, "documents.listField", self._inside())
        if not isinstance(docs, list) or not all(isinstance(d, dict) for d in docs):
            raise BackendError(
                f"{endpoint}: `{self._inside(m.list_field)}` is not a list of objects; check "
                f"http.documents.listField in {m.source}"
            )
        complete = None
        if m.list_complete is not None:
            try:
                complete = bool(_get(answer, m.list_complete))
            except _Missing:
                complete = None
        where = self._inside(m.list_field)
        return [self.stored(d, endpoint, f"{where}[{i}]") for i, d in enumerate(docs)], complete

    def stored(
        self, raw: Mapping[str, Any], endpoint: str = "the service", where: str = ""
    ) -> dict[str, Any]:
        """A listed document or an upload answer in ragsnap's names (missing: None), its
        fields checked: ``source`` and ``kbScope`` strings, ``id`` and ``revision``
        strings or integers, given as strings (a service that numbers its revisions
        compares equal to the state that recorded them); anything else is a
        ``BackendError`` naming ``endpoint`` and the field (``where``: the document's
        path in the answer)."""
        out: dict[str, Any] = {}
        for name, dotted in self.mapping.document.items():
            try:
                value = _get(raw, dotted)
            except _Missing:
                value = None
            if value is None or name == "embedding":  # an embedding identity is any JSON
                out[name] = value
                continue
            if isinstance(value, str):
                out[name] = value
                continue
            number = isinstance(value, int) and not isinstance(value, bool)
            if number and name in ("id", "revision"):
                out[name] = str(value)
                continue
            expected = "a string or an integer" if name in ("id", "revision") else "a string"
            at = ".".join(part for part in (where, dotted) if part)
            raise BackendError(
                f"{endpoint}: `{at}` is {_kind(value)}, not {expected} (the document's {name}, "
                f"mapped by http.documents.fields.{name} in {self.mapping.source}); map it to "
                "the service's field, or fix the service's answer"
            )
        return out

    def check_upload(self, name: str, content: str) -> None:
        """Refuse an upload whose body is over the byte budget, before anything is
        sent (``prepare`` checks every document before its first request)."""
        path = self._need(self.mapping.upload_path, "documents.upload")
        self.client.encode(
            {"name": name, "content": content}, f"POST {self.base_url}{path} ({name})"
        )

    def upload(self, name: str, content: str, key: str | None = None) -> dict[str, Any]:
        """Upload one Markdown seed document; the service deletes-then-uploads by source.
        ``key`` is sent as the idempotency key header (when the mapping has one)."""
        path = self._need(self.mapping.upload_path, "documents.upload")
        header = self.mapping.idempotency_header
        if key is not None and header is not None:
            answer = self.client.request(
                "POST", path, json={"name": name, "content": content}, headers={header: key}
            )
        else:
            answer = self.client.post_json(path, {"name": name, "content": content})
        answer = self._open(answer, f"POST {self.base_url}{path}")
        return answer if isinstance(answer, dict) else {}

    def delete(self, source: str) -> dict[str, Any]:
        """Delete one document by source."""
        path = self._need(self.mapping.delete_path, "documents.delete")
        answer = self._open(
            self.client.request("DELETE", path, params={"source": source}),
            f"DELETE {self.base_url}{path}",
        )
        return answer if isinstance(answer, dict) else {}

    def _need(self, path: str | None, key: str) -> str:
        if path is None:
            raise InputError(
                self.mapping.source,
                f"http.{key} is null, so the service cannot be seeded",
                f"set http.{key} to the service's endpoint path",
                f"/http/{key.replace('.', '/')}",
            )
        return path

    def close(self) -> None:
        self.client.close()

    def __enter__(self) -> HttpService:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

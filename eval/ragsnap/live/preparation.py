"""Resumable, locked preparation of a live service: ``ragsnap prepare --backend http``.

The seed corpus is uploaded through the service's upload endpoint, each
document with a deterministic idempotency key, and what the service answered
is recorded in a state file (JSON, mode 0600)::

    {"format": "ragsnap-prepare-state/1", "service": "http://...", "complete": true,
     "epoch": null,                   # a random string once --reset-state started it over
     "documents": {"<source>": {"contentSha256": ..., "idempotencyKey": ..., "id": ...,
                                "revision": ..., "embedding": ..., "kbScope": ...,
                                "attempt": 1}},
     "attempts": {"<source>": 2},     # documents the service lost, to be uploaded again
     "counters": {"lastRun": {...}, "total": {...}},  # requests, uploads, skipped, verified
     "verification": {"passed": true, "documents": 70, "failures": []}}

Steps, in order:

1. **Checks before anything.** The state's folder must exist and not be
   world-writable; the state and its lock may not be symbolic links; every
   document's upload body must be within the service's byte budget per
   request (``http.budgets.bytes``, ``--max-bytes``; a ``UsageError`` naming
   the document, ``ragsnap.kb.backends.http``).
2. **Lock.** A non-blocking ``flock`` on ``.<state name>.lock`` beside the
   state (``ragsnap.io.locks``), held to the end of the final verification; a
   second run on the same state fails at once, naming the holder's pid, before
   any request. The lock file is never deleted.
3. **Resume check.** A saved state must match the corpus (each saved source
   still there with the same content hash) and the service: one list request
   must show every saved document with its server id, revision and embedding
   identity, ids unique, and no source twice (two records for one source: the
   service does not honour idempotency keys). Revisions and ids are compared
   as strings: a service that numbers them (``1944``) matches the state that
   recorded ``"1944"``. A document the service **lost** (neither its source nor
   its id listed, say deleted behind ragsnap's back) is dropped from the
   state's documents and recorded in ``attempts`` with its next attempt
   number, the state saved, and it is uploaded again in step 4 under a new key.
   A state the service does not know (a saved document changed, or none of
   them left: reset or another service) is refused, never silently rebuilt;
   ``reset=True`` (``--reset-state``) starts over explicitly, with a new random
   ``epoch``.
4. **Upload.** Documents not in the state are uploaded with the key
   ``idempotency_key``: ``sha256("<source>\\n<content sha256>")`` for a first
   attempt, the attempt number and the epoch added after a loss or a reset
   (so the service never replays an answer about a record it no longer
   has). A resend after a crash gets the original record back. The state is checkpointed after every
   ``CHECKPOINT_EVERY`` newly completed documents and at the end (the one
   atomic writer: temporary file mode 0600, fsynced, renamed, folder fsynced;
   a failed folder sync is an error: retry with the same state). A failed
   request, Ctrl-C or a failed verification request checkpoints what was
   uploaded before the error is raised.
5. **Verification.** A final list must show every state document with the
   same id, revision and embedding identity; duplicates, records in the
   corpus's kb_scopes the state does not know, and a list the service marks
   incomplete are failures (``PrepareResult.failures``, exit 1 in the CLI).
   A state document that is missing with neither its source nor its id listed
   was lost after its upload: the service replayed a receipt for a record it
   no longer has (uploaded by a run that crashed before its checkpoint, then
   deleted), or the record was deleted during the run. It is re-created once,
   as in step 3 (next attempt recorded, new key, uploaded), and the list is
   checked again; still missing, or every state document missing, it is a
   failure.

``verify_only`` runs steps 1, 2 and 5 only: a check of a prepared service
(before and after a trial on it, say) that records its verdict in the state.
Step 5 is ``verify_records``, a pure function whose ``Finding`` s carry a kind
(``FINDING_KINDS``); ``ragsnap live-check --state`` runs it before and after
its lookups under the same lock (``ragsnap.live.verification``).

``max_requests`` bounds the requests of one run: at the ceiling the state is
checkpointed and ``BudgetExhausted`` says to run the command again. The resume
check's list request (step 3) is counted in the counters but not against the
ceiling, so every run uploads at least one document (``--max-requests 1``
makes progress on an existing state too). The counters (requests, uploads,
skipped, verified) of the last run and in total are kept in the state.

``load_state`` checks every field a run reads (records, ``attempts``,
``epoch``, ``counters``, a nesting of at most ``MAX_DEPTH`` levels): a
tampered state is an ``InputError`` naming the file and the field, exit 2.

Test hook: with ``RAGSNAP_TEST_PREPARE_EXIT_AFTER=N`` in the environment the
process ends with ``os._exit(137)`` right after its N-th upload of the run (as
``kill -9`` would), so tests can interrupt it at exact points.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import BackendError, BudgetExhausted, InputError, OutputError, UsageError
from ..io.httpclient import MAX_DEPTH, nesting_over
from ..io.jsonio import parse_json, read_bytes, write_json
from ..io.locks import lock_path, writer_lock
from ..io.progress import Progress
from ..kb.backends.http import HttpService
from ..kb.corpus import SeedDocument, markdown_of

__all__ = [
    "CHECKPOINT_EVERY",
    "FINDING_KINDS",
    "STATE_FORMAT",
    "Counters",
    "Finding",
    "PrepareResult",
    "check_state_path",
    "idempotency_key",
    "load_state",
    "prepare",
    "verify_records",
    "verify_state",
]

STATE_FORMAT = "ragsnap-prepare-state/1"
#: the state is replaced at most once per this many newly completed documents
CHECKPOINT_EVERY = 64
_EXIT_AFTER = "RAGSNAP_TEST_PREPARE_EXIT_AFTER"
_RECORD_FIELDS = ("contentSha256", "idempotencyKey", "id", "revision")
_COUNTERS = ("requests", "uploads", "skipped", "verified")


def idempotency_key(
    source: str, content_sha256: str, attempt: int = 1, epoch: str | None = None
) -> str:
    """The upload's idempotency key: ``sha256("<source>\\n<content sha256>")`` in hex for
    the first attempt of a state that was never reset; else
    ``sha256("<source>\\n<content sha256>\\n<epoch>/<attempt>")`` (``epoch`` empty when
    None), so a re-created document or a reset state never gets an old answer replayed."""
    text = f"{source}\n{content_sha256}"
    if attempt != 1 or epoch is not None:
        text += f"\n{epoch or ''}/{attempt}"
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass
class Counters:
    """Work of one run: HTTP requests, documents uploaded, skipped (already in the
    state) and verified on the service."""

    requests: int = 0
    uploads: int = 0
    skipped: int = 0
    verified: int = 0

    def to_json(self) -> dict[str, int]:
        return {
            "requests": self.requests,
            "uploads": self.uploads,
            "skipped": self.skipped,
            "verified": self.verified,
        }


@dataclass
class PrepareResult:
    """What a preparation did and found."""

    documents: int
    counters: Counters
    failures: list[str] = field(default_factory=list)
    checkpoints: int = 0
    #: the sources the service had lost, uploaded again in this run (step 3)
    recreated: list[str] = field(default_factory=list)


def check_state_path(state: Path) -> None:
    """Refuse a state whose folder is missing or world-writable, or a symlinked
    state or lock, before the lock is taken or any request sent."""
    folder = state.parent
    try:
        info = folder.stat()
    except OSError:
        raise UsageError(
            f"{folder}: the state's folder does not exist; create it (`mkdir -m 700 "
            f"{folder}`) on a local filesystem, then run this again"
        ) from None
    if not stat.S_ISDIR(info.st_mode):
        raise UsageError(f"{folder}: is not a folder; pass --state inside a private folder")
    if info.st_mode & stat.S_IWOTH:
        raise OutputError(
            f"{folder}: the state's folder is world-writable, so anyone could replace the "
            f"state or its lock; run `chmod o-w {folder}` (or use a private folder)"
        )
    for path in (state, lock_path(state)):
        if path.is_symlink():
            raise OutputError(
                f"{path}: is a symbolic link; ragsnap never writes through links. Remove it "
                "or pass another --state"
            )
    if state.exists() and not state.is_file():
        raise UsageError(f"{state}: is not a file; pass a file path as --state")


def load_state(
    path: Path, fix: str = "pass another --state, or --reset-state to start over"
) -> dict[str, Any]:
    """The saved state, checked enough to be trusted by the steps above; ``fix`` ends
    the message of a state that is not one."""
    raw = read_bytes(path, fix)
    depth = nesting_over(raw)
    if depth is not None:
        raise InputError(path, f"nests JSON {depth} levels deep (at most {MAX_DEPTH})", fix)
    data = parse_json(raw, path)
    if not isinstance(data, dict) or data.get("format") != STATE_FORMAT:
        raise InputError(path, f"is not a prepare state ({STATE_FORMAT})", fix, "/format")
    docs = data.get("documents")
    if not isinstance(docs, dict):
        raise InputError(path, "has no `documents` object", fix, "/documents")
    for source, record in docs.items():
        pointer = "/documents/" + _escape(source)
        if not isinstance(record, dict):
            raise InputError(path, "a document record is not an object", fix, pointer)
        for name in _RECORD_FIELDS:
            if not isinstance(record.get(name), str) or not record[name]:
                raise InputError(path, f"`{name}` is missing or empty", fix, f"{pointer}/{name}")
        if "attempt" in record and not _count(record["attempt"], 1):
            raise InputError(
                path, "`attempt` is not a whole number of at least 1", fix, f"{pointer}/attempt"
            )
        if record.get("kbScope") is not None and not isinstance(record["kbScope"], str):
            raise InputError(path, "`kbScope` is not a string", fix, f"{pointer}/kbScope")
    epoch = data.get("epoch")
    if epoch is not None and not isinstance(epoch, str):
        raise InputError(path, "`epoch` is not a string", fix, "/epoch")
    attempts = data.setdefault("attempts", {})
    if not isinstance(attempts, dict):
        raise InputError(path, "`attempts` is not an object", fix, "/attempts")
    for source, attempt in attempts.items():
        if not _count(attempt, 2):
            raise InputError(
                path,
                "an attempt is not a whole number of at least 2",
                fix,
                "/attempts/" + _escape(source),
            )
    counters = data.setdefault("counters", {})
    if not isinstance(counters, dict):
        raise InputError(path, "`counters` is not an object", fix, "/counters")
    for part in ("lastRun", "total"):
        values = counters.setdefault(part, Counters().to_json())
        if not isinstance(values, dict):
            raise InputError(path, f"`{part}` is not an object", fix, f"/counters/{part}")
        for name in _COUNTERS:
            if not _count(values.setdefault(name, 0), 0):
                raise InputError(
                    path,
                    f"`{name}` is not a whole number of at least 0",
                    fix,
                    f"/counters/{part}/{name}",
                )
    return data


def _count(value: Any, least: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= least


def _escape(key: str) -> str:
    """``key`` as one JSON pointer token."""
    return key.replace("~", "~0").replace("/", "~1")


def _new_state(service: str, epoch: str | None) -> dict[str, Any]:
    return {
        "format": STATE_FORMAT,
        "service": service,
        "epoch": epoch,
        "complete": False,
        "documents": {},
        "attempts": {},
        "counters": {"lastRun": Counters().to_json(), "total": Counters().to_json()},
        "verification": None,
    }


@dataclass(frozen=True, slots=True)
class Finding:
    """One verification failure: its ``kind`` (``FINDING_KINDS``), the message, and
    the document it is about (source and server id, when known)."""

    kind: str
    message: str
    source: str | None = None
    document_id: str | None = None


#: what a verification failure can be, in the order they are checked
FINDING_KINDS = (
    "no-source",
    "partial-list",
    "duplicate",
    "duplicate-id",
    "missing",
    "changed-revision",
    "changed-embedding",
    "unexpected",
)


def verify_records(
    documents: dict[str, dict[str, Any]],
    listed: Sequence[dict[str, Any]],
    complete: bool | None,
    scopes: set[str],
) -> tuple[list[Finding], int]:
    """Compare a state's ``documents`` with the service's list (pure): the failures,
    and how many state documents were found as recorded."""
    failures: list[Finding] = []
    by_source: dict[str, list[dict[str, Any]]] = {}
    by_id: dict[str, list[str]] = {}
    for record in listed:
        source = record.get("source")
        if not isinstance(source, str):
            rid = None if record.get("id") is None else str(record["id"])
            message = f"a listed record has no source: {record}"
            failures.append(Finding("no-source", message, None, rid))
            continue
        by_source.setdefault(source, []).append(record)
        if record.get("id") is not None:
            by_id.setdefault(str(record["id"]), []).append(source)
    if complete is False:
        failures.append(
            Finding(
                "partial-list", "partial list: the service says its document list is incomplete"
            )
        )
    for source, records in sorted(by_source.items()):
        if len(records) > 1:
            ids = ", ".join(str(r.get("id")) for r in records)
            failures.append(
                Finding(
                    "duplicate",
                    f"duplicate: {len(records)} records for source {source} (ids {ids}); the "
                    "service does not honour idempotency keys",
                    source,
                )
            )
    for server_id, sources in sorted(by_id.items()):
        if len(sources) > 1:
            failures.append(
                Finding(
                    "duplicate-id",
                    f"duplicate id {server_id} for sources {', '.join(sources)}",
                    None,
                    server_id,
                )
            )
    verified = 0
    for source, saved in sorted(documents.items()):
        have = by_source.get(source, [])
        match = [r for r in have if str(r.get("id")) == saved["id"]]
        if not match:
            failures.append(
                Finding(
                    "missing",
                    f"missing: {source} (id {saved['id']}) is not on the service",
                    source,
                    saved["id"],
                )
            )
            continue
        record = match[0]
        if _text(record.get("revision")) != _text(saved["revision"]):
            failures.append(
                Finding(
                    "changed-revision",
                    f"changed revision: {source} is at {record.get('revision')}, the state "
                    f"recorded {saved['revision']}",
                    source,
                    saved["id"],
                )
            )
        elif record.get("embedding") != saved.get("embedding"):
            failures.append(
                Finding(
                    "changed-embedding",
                    f"changed embedding: {source} is embedded by {record.get('embedding')}, "
                    f"the state recorded {saved.get('embedding')}",
                    source,
                    saved["id"],
                )
            )
        else:
            verified += 1
    for source, records in sorted(by_source.items()):
        if source not in documents and any(_text(r.get("kbScope")) in scopes for r in records):
            rid = records[0].get("id")
            failures.append(
                Finding(
                    "unexpected",
                    f"unexpected: {source} is in kb_scope {records[0]['kbScope']}",
                    source,
                    None if rid is None else str(rid),
                )
            )
    return failures, verified


def _text(value: Any) -> str | None:
    """A listed revision or kb_scope as a string (an integer revision as its digits); a
    value of another type as None, which no state records."""
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


def verify_state(
    state: dict[str, Any],
    listed: Sequence[dict[str, Any]],
    complete: bool | None,
    scopes: set[str],
) -> tuple[list[str], int]:
    """``verify_records`` of the state's documents, the failures as messages."""
    failures, verified = verify_records(state["documents"], listed, complete, scopes)
    return [f.message for f in failures], verified


class _Run:
    """One preparation run over a locked state (module docstring)."""

    def __init__(
        self,
        service: HttpService,
        path: Path,
        docs: Sequence[SeedDocument],
        state: dict[str, Any],
        max_requests: int | None,
    ):
        self.service = service
        self.path = path
        self.docs = docs
        self.state = state
        self.max_requests = max_requests
        self.counters = Counters()
        self.budgeted = 0  # the requests counted against max_requests
        self.unsaved = 0
        self.checkpoints = 0
        self.total = {**Counters().to_json(), **state["counters"]["total"]}
        self.recreated: list[str] = []

    def spend(self, *, check: bool = False) -> None:
        """Count one request, or stop at the budget with a checkpoint; the resume
        check's list request (``check``) is counted but not against the budget, so
        every run with one uploads at least one document."""
        if check:
            self.counters.requests += 1
            return
        if self.max_requests is not None and self.budgeted >= self.max_requests:
            self.checkpoint()
            saved = len(self.state["documents"])
            raise BudgetExhausted(
                f"prepare: stopped at --max-requests {self.max_requests} with {saved} of "
                f"{len(self.docs)} documents in {self.path}; run the same command again to "
                "continue (raise --max-requests to do more per run)"
            )
        self.budgeted += 1
        self.counters.requests += 1

    def checkpoint(self) -> None:
        """Replace the state (the one atomic writer, mode 0600)."""
        state = self.state
        state["counters"] = {
            "lastRun": self.counters.to_json(),
            "total": {k: self.total[k] + v for k, v in self.counters.to_json().items()},
        }
        try:
            write_json(self.path, state, mode=0o600)
        except OutputError as exc:
            raise OutputError(
                f"prepare: the state was not saved durably ({exc}). Retry with the same "
                f"state ({self.path}): the same idempotency keys recover what was uploaded"
            ) from None
        self.unsaved = 0
        self.checkpoints += 1

    def listing(self, *, check: bool = False) -> tuple[list[dict[str, Any]], bool | None]:
        self.spend(check=check)
        return self.service.listing()

    def resume_check(self) -> None:
        """A saved state must be what the service holds (module docstring, step 3)."""
        saved: dict[str, dict[str, Any]] = self.state["documents"]
        if not saved:
            return
        ids = [r["id"] for r in saved.values()]
        if len(set(ids)) != len(ids):
            raise InputError(
                self.path,
                "holds one server id for several documents",
                "pass --reset-state to prepare again from scratch",
                "/documents",
            )
        listed, _ = self.listing(check=True)
        by_id = {str(r.get("id")): r for r in listed if r.get("id") is not None}
        sources = {r.get("source") for r in listed}
        lost = [s for s, r in sorted(saved.items()) if s not in sources and r["id"] not in by_id]
        unknown = [
            s
            for s, r in sorted(saved.items())
            if s not in lost
            and (
                r["id"] not in by_id
                or by_id[r["id"]].get("source") != s
                or by_id[r["id"]].get("revision") != r["revision"]
                or by_id[r["id"]].get("embedding") != r.get("embedding")
            )
        ]
        if len(lost) == len(saved):  # nothing of it is left: another or a reset service
            unknown = lost
        if unknown:
            raise BackendError(
                f"{self.service.base_url} does not hold {len(unknown)} of the "
                f"{len(saved)} documents {self.path} recorded with their ids, revisions and "
                "embedding identities "
                f"(first: {unknown[0]}, id {saved[unknown[0]]['id']}): the service was reset "
                "or changed. The state is not rebuilt silently: point at the service it was "
                "prepared on, or pass --reset-state to prepare this one from scratch"
            )
        counts: dict[str, int] = {}
        for record in listed:
            counts[str(record.get("source"))] = counts.get(str(record.get("source")), 0) + 1
        twice = sorted(s for s in saved if counts.get(s, 0) > 1)
        if twice:
            raise BackendError(
                f"{self.service.base_url} holds {counts[twice[0]]} records for {twice[0]} "
                f"({len(twice)} sources twice): it does not honour idempotency keys, so a "
                "resumed preparation would duplicate documents; clean the service up and "
                "prepare with --reset-state"
            )
        self.requeue(lost)

    def requeue(self, lost: Sequence[str]) -> None:
        """Drop the ``lost`` sources from the state's documents and record their next
        attempt (so a new key), checkpointed before anything is sent again."""
        saved: dict[str, dict[str, Any]] = self.state["documents"]
        attempts: dict[str, int] = self.state["attempts"]
        for source in lost:
            attempts[source] = saved.pop(source).get("attempt", 1) + 1
            self.recreated.append(source)
        if lost:
            self.checkpoint()

    def lost_since_upload(
        self, findings: Sequence[Finding], listed: Sequence[dict[str, Any]]
    ) -> list[str]:
        """The state documents the final verification found missing with neither their
        source nor their id listed (an old receipt replayed for a record the service no
        longer has, or a record deleted during the run) and not re-created in this run
        already; none when every state document is missing (then the service or its
        list is what is wrong, as in step 3)."""
        saved: dict[str, dict[str, Any]] = self.state["documents"]
        sources = {r.get("source") for r in listed}
        ids = {str(r.get("id")) for r in listed if r.get("id") is not None}
        missing = [f.source for f in findings if f.kind == "missing" and f.source in saved]
        if len(missing) == len(saved):
            return []
        return [
            s
            for s in missing
            if s is not None
            and s not in sources
            and saved[s]["id"] not in ids
            and s not in self.recreated
        ]

    def upload_missing(self, exit_after: int | None, *, again: bool = False) -> None:
        """Step 4: upload the documents the state does not hold; ``again``: the
        re-creation round after step 5 (the skipped count is the first round's)."""
        saved: dict[str, dict[str, Any]] = self.state["documents"]
        pending = [d for d in self.docs if d.source not in saved]
        if not again:
            self.counters.skipped = len(self.docs) - len(pending)
        progress = Progress(len(pending), "prepare", "documents")
        attempts: dict[str, int] = self.state["attempts"]
        epoch = self.state.get("epoch")
        endpoint = f"POST {self.service.base_url}{self.service.mapping.upload_path}"
        try:
            for doc in pending:
                name, content = markdown_of(doc)
                attempt = attempts.get(doc.source, 1)
                key = idempotency_key(doc.source, doc.content_hash, attempt, epoch)
                self.spend()
                answer = self.service.upload(name, content, key)
                record = self.service.stored(answer, endpoint)
                self.counters.uploads += 1
                saved[doc.source] = self._record(doc, key, record, attempt)
                attempts.pop(doc.source, None)
                self.unsaved += 1
                if exit_after is not None and self.counters.uploads >= exit_after:
                    os._exit(137)
                if self.unsaved >= CHECKPOINT_EVERY:
                    self.checkpoint()
                progress.advance()
        finally:
            progress.close()

    def _record(
        self, doc: SeedDocument, key: str, answer: dict[str, Any], attempt: int
    ) -> dict[str, Any]:
        where = f"POST {self.service.base_url} ({doc.source})"
        fields = self.service.mapping.source
        if answer.get("source") not in (None, doc.source):
            raise BackendError(
                f"{where}: the answer is for source {answer['source']}; check "
                f"http.documents.fields.source in {fields}"
            )
        for name in ("id", "revision"):
            if answer.get(name) in (None, ""):
                raise BackendError(
                    f"{where}: the upload answer has no {name}; map it with "
                    f"http.documents.fields.{name} in {fields} (prepare needs the service's "
                    "server ids and revisions)"
                )
        return {
            "contentSha256": doc.content_hash,
            "idempotencyKey": key,
            "id": str(answer["id"]),
            "revision": str(answer["revision"]),
            "embedding": answer.get("embedding"),
            "kbScope": doc.kb_scope,
            "attempt": attempt,
        }

    def verify(self) -> tuple[list[Finding], int, list[dict[str, Any]]]:
        """Step 5: the findings, how many documents were verified, and the list."""
        listed, complete = self.listing()
        scopes = {d.kb_scope for d in self.docs if d.kb_scope is not None}
        findings, verified = verify_records(self.state["documents"], listed, complete, scopes)
        self.counters.verified = verified
        return findings, verified, listed


def prepare(
    service: HttpService,
    path: Path,
    docs: Sequence[SeedDocument],
    *,
    reset: bool = False,
    max_requests: int | None = None,
    verify_only: bool = False,
    on_locked: Callable[[], None] | None = None,
) -> PrepareResult:
    """Prepare ``service`` with ``docs`` recording into the state at ``path`` (module
    docstring); ``on_locked`` is called once the lock is held (tests).

    ``verify_only`` (``--verify-only``, e.g. before and after a trial on the service)
    skips steps 3 and 4: an existing state is only verified (step 5), under the lock,
    and the verification and counters are recorded in it.
    """
    if max_requests is not None and max_requests < 1:
        raise UsageError("--max-requests must be at least 1")
    if verify_only and reset:
        raise UsageError("--verify-only checks a state and --reset-state drops it; pick one")
    check_state_path(path)
    if not verify_only:  # every upload within the byte budget, before any request
        for doc in docs:
            service.check_upload(*markdown_of(doc))
    hook = os.environ.get(_EXIT_AFTER)
    exit_after = int(hook) if hook and hook.isdigit() else None
    with writer_lock(path, "ragsnap prepare"):
        if on_locked is not None:
            on_locked()
        if verify_only and not path.exists():
            raise UsageError(
                f"{path}: no state to verify; run `ragsnap prepare --state {path}` first"
            )
        if reset or not path.exists():  # a reset never gets an old answer replayed
            state = _new_state(service.base_url, secrets.token_hex(8) if reset else None)
        else:
            state = load_state(path)
        _match_corpus(path, state, docs)
        state["service"] = service.base_url
        run = _Run(service, path, docs, state, max_requests)
        try:
            if not verify_only:
                run.resume_check()
                run.upload_missing(exit_after)
            else:
                run.counters.skipped = len(state["documents"])
            state["complete"] = len(state["documents"]) == len(docs)
            findings, verified, listed = run.verify()
            lost = [] if verify_only else run.lost_since_upload(findings, listed)
            if lost:  # the service answered for records it no longer has: once more
                run.requeue(lost)
                run.upload_missing(exit_after, again=True)
                state["complete"] = len(state["documents"]) == len(docs)
                findings, verified, _ = run.verify()
            failures = [f.message for f in findings]
        except BudgetExhausted:
            raise  # checkpointed already
        except BaseException:  # keep what was uploaded (Ctrl-C, a failed request ...)
            if run.unsaved:
                with contextlib.suppress(OutputError):  # the original error says more
                    run.checkpoint()
            raise
        if verify_only and not state["complete"]:
            failures.insert(
                0,
                f"incomplete: the state holds {len(state['documents'])} of {len(docs)} "
                "documents; run prepare without --verify-only to finish it",
            )
        state["verification"] = {
            "passed": not failures,
            "documents": verified,
            "failures": failures,
        }
        run.checkpoint()
    return PrepareResult(len(docs), run.counters, failures, run.checkpoints, run.recreated)


def _match_corpus(path: Path, state: dict[str, Any], docs: Sequence[SeedDocument]) -> None:
    """Every saved document must still be in the corpus with the same content."""
    hashes = {d.source: d.content_hash for d in docs}
    for source, record in sorted(state["documents"].items()):
        if hashes.get(source) != record["contentSha256"]:
            problem = "is no longer a seed document" if source not in hashes else "changed"
            raise InputError(
                path,
                f"was prepared from another corpus: {source} {problem} since",
                "prepare with the same seed documents, or pass --reset-state to start over "
                "(the service keeps what was uploaded)",
                "/documents",
            )

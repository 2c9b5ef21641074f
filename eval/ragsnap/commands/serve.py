"""``ragsnap serve``: the reference HTTP contract over the local knowledge base.

The token is accepted only in the ``Authorization`` header, but clients get
it wrong: a request carrying it in its query string (``?token=...``) is
refused, yet its request line would still reach the access log
(``--access-log``). So every record of uvicorn's ``uvicorn.access`` and
``uvicorn.error`` loggers passes through ``RedactSecrets`` first, which
writes ``***`` for

* the value of a query parameter with a secret's name (``_secret_name``): its
  name, percent-decoded and cut into words at ``_ - .`` blanks and camelCase, has
  a word that contains ``token``, ``secret``, ``passw``, ``passphrase``, ``pwd``,
  ``auth`` (``authorization``, ``oauth``), ``signature``, ``session``,
  ``sessid``, ``credential``, ``cookie``, ``jwt``, ``bearer`` or ``apikey``, or is ``key``,
  ``sig``, ``pass``, ``sid`` or ``otp`` (``access_token``, ``X-Api-Key``, ``apiKey``,
  ``client_secret``, ``X-Amz-Signature``, ``sig``, ``sessionId``, ``pwd``); and
* the configured bearer token in any encoding: as sent, and every piece of a
  line (between blanks, double quotes and ``/ ? & = ;``) that decodes to text
  holding it, where decoding is percent-decoding (any case of hex digits,
  ``+`` as a blank) repeated up to three times, so a fully or doubly
  percent-encoded token is caught in the path, a parameter's name or its value;
  a word of the line that still decodes to it is written as ``***`` whole.

Worker processes (``--workers N``). A lookup is CPU-bound Python: one process
answers one lookup at a time whatever the number of connections, as its threads
share one interpreter lock. With ``N`` above 1 this process binds the socket,
checks the knowledge base, then starts ``N`` worker processes (spawned, not
forked) that share the listening socket; each opens the knowledge base itself
(never creating one) and runs its own event loop, so ``N`` lookups run at once
on ``N`` cores. The banner is printed once every worker is ready. Uploads and
deletes hold the store's writer lock across processes, one at a time: a write
waits for it up to ``--write-wait`` seconds (default 10) while another worker
or ``ragsnap seed`` holds it, so uploads of different documents sent to
different workers never conflict (``ragsnap.live.service``); and a lookup in one
worker reads one state of the store whatever another worker writes (as with
``ragsnap seed`` from another process). The default is the number of CPUs, at
most ``MAX_DEFAULT_WORKERS``, for the embedded store, and 1 for Milvus (a Milvus
Lite file is opened by one process). SIGTERM or Ctrl-C stops every worker; a
worker that dies stops the service with exit code 2.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import math
import multiprocessing
import os
import re
import signal
import socket
import sys
from collections.abc import Callable
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from types import FrameType
from typing import TYPE_CHECKING
from urllib.parse import quote, quote_plus, unquote, unquote_plus

from ..config import Config, load_config
from ..errors import BackendError, MissingDependency, RagsnapError, UsageError
from ..io.httpclient import is_loopback, read_token
from ..kb.backends.registry import backend_names, get_backend
from ._kb import backend_of, open_pipeline, store_lock, store_name

if TYPE_CHECKING:
    from ..kb.pipeline import Pipeline

#: the default number of worker processes of the embedded store: the CPUs, at most this
MAX_DEFAULT_WORKERS = 4


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP, not 0: asyncio turns Nagle's algorithm off (TCP_NODELAY) only on
    # sockets whose proto says TCP, and with it on every keep-alive answer written in
    # two pieces waits ~40 ms for the client's delayed ACK
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        raise UsageError(
            f"cannot listen on {host}:{port} ({exc.strerror}); pick another --port "
            "(0 picks a free one) or stop what is using it"
        ) from None
    sock.listen(128)
    return sock


#: the uvicorn loggers whose records are redacted
_LOGGERS = ("uvicorn.access", "uvicorn.error")
#: ``name=value`` after ``?`` or ``&`` (a request line's query parameters; a value runs to
#: the next ``&``, blank or double quote, so a stray ``;``, ``#`` or ``'`` stays inside it)
_PARAMETER = re.compile(r"(?<=[?&])([^=&\s\"]+)=([^&\s\"]*)")
#: a piece of a line that may hold an encoded token on its own
_PIECE = re.compile(r"[^\s\"/?&=;]+")
#: a word of a line: what lies between blanks and double quotes
_WORD = re.compile(r"[^\s\"]+")
#: the words of a parameter's name (``X-Api-Key``, ``apiKey``, ``client_secret``)
_NAME_WORD = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")
#: a name word that contains one of these names a secret ...
_SECRET_PARTS = (
    "token",
    "secret",
    "passw",
    "passphrase",
    "pwd",
    "auth",
    "signature",
    "session",
    "sessid",
    "credential",
    "cookie",
    "jwt",
    "bearer",
    "apikey",
)
#: ... and so does a name word that is one of these
_SECRET_WORDS = frozenset({"key", "sig", "pass", "sid", "otp"})


def _secret_name(name: str) -> bool:
    """Whether a query parameter called ``name`` (as sent) holds a secret (module
    docstring)."""
    words = [w.lower() for w in _NAME_WORD.findall(unquote_plus(unquote_plus(name)))]
    glued = "".join(words)  # api_key -> apikey
    return any(w in _SECRET_WORDS for w in words) or any(part in glued for part in _SECRET_PARTS)


def _decodings(text: str) -> set[str]:
    """``text`` and what percent-decoding makes of it, up to three times over, with
    ``+`` kept and read as a blank: a doubly encoded secret is still found."""
    found = {text}
    layer = {text}
    for _ in range(3):
        layer = {decode(t) for t in layer for decode in (unquote, unquote_plus)} - found
        if not layer:
            break
        found |= layer
    return found


def _holds(text: str, token: str | None) -> bool:
    """Whether ``text`` holds ``token`` as sent or in any decoding (``_decodings``)."""
    if not token:
        return False
    return any(token in t for t in _decodings(text))


class RedactSecrets(logging.Filter):
    """Writes ``***`` over secrets in a record's message and arguments (module docstring)."""

    def __init__(self, token: str | None):
        super().__init__()
        self._forms = (
            # as sent, and as uvicorn re-quotes a path or a client may quote a value
            sorted({token, quote(token), quote(token, safe=""), quote_plus(token)}, key=len)[::-1]
            if token
            else []
        )
        self._token = token

    def redact(self, text: str) -> str:
        """``text`` with the secrets of the module docstring replaced by ``***``."""
        text = _PARAMETER.sub(self._parameter, text)
        for form in self._forms:
            text = text.replace(form, "***")
        if self._token:
            text = _PIECE.sub(self._holds_token, text)
            text = _WORD.sub(self._holds_token, text)
        return text

    def _holds_token(self, match: re.Match[str]) -> str:
        piece = match.group(0)
        return "***" if _holds(piece, self._token) else piece

    def _parameter(self, match: re.Match[str]) -> str:
        name, value = match.group(1), match.group(2)
        if _secret_name(name) or _holds(value, self._token):
            return f"{name}=***"
        return match.group(0)

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str):
            record.msg = self.redact(record.msg)
        if isinstance(record.args, tuple):
            record.args = tuple(self.redact(a) if isinstance(a, str) else a for a in record.args)
        return True


#: the signals that stop the service
_STOPS = (signal.SIGINT, signal.SIGTERM)


def _interrupt(_signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def default_workers(backend: str) -> int:
    """Worker processes when ``--workers`` is not given (module docstring): one unless
    several processes can share the backend's store."""
    if not get_backend(backend).workers:
        return 1
    return max(1, min(MAX_DEFAULT_WORKERS, os.cpu_count() or 1))


def run(args: argparse.Namespace) -> int:
    try:
        import uvicorn  # noqa: F401

        from ..live import service  # noqa: F401
    except ImportError as exc:
        raise MissingDependency(f"ragsnap serve ({exc.name} is missing)", "serve") from None
    config = load_config(args.config, embedder=getattr(args, "embedder", None))
    token = read_token(args.token_file, args.token_env)
    if not is_loopback(args.host) and token is None:
        print(
            f"serve: warning: listening on {args.host} without a token; anyone who can reach "
            "it can upload and delete documents (pass --token-file or --token-env)",
            file=sys.stderr,
        )
    backend = backend_of(args, config)
    workers: int = args.workers or default_workers(backend)
    if workers > 1 and not get_backend(backend).workers:
        shared = " or ".join(backend_names(workers=True))
        raise UsageError(
            f"--workers {workers}: several worker processes need the {shared} store; "
            f"the {backend} backend is served by one (drop --workers)"
        )
    path = store_name(backend, args, config)
    if workers == 1:
        with open_pipeline(backend, args, config, create=True, lookups=math.inf) as pipeline:
            sock = _bind(args.host, args.port)
            _banner(sock, path, pipeline.kb.count(), workers)
            _serve(args, config, token, pipeline, sock)
    else:
        with open_pipeline(backend, args, config, create=True) as pipeline:
            chunks = pipeline.kb.count()  # checked (and created) once, before any worker
        sock = _bind(args.host, args.port)
        _supervise(args, token, sock, workers, lambda: _banner(sock, path, chunks, workers))
    print("serve: stopped", flush=True)
    return 0


def _banner(sock: socket.socket, path: str, chunks: int, workers: int) -> None:
    """The first line on stdout: the URL, printed once requests are answered."""
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    plural = "s" if workers > 1 else ""
    print(
        f"serve: http://{shown}:{port} over {path} ({chunks} chunks); {workers} "
        f"worker{plural}; OpenAPI at /openapi.json; Ctrl-C stops",
        flush=True,
    )


def _serve(
    args: argparse.Namespace,
    config: Config,
    token: str | None,
    pipeline: Pipeline,
    sock: socket.socket,
) -> None:
    """Answer requests on ``sock`` with ``pipeline`` until SIGINT or SIGTERM."""
    import uvicorn

    from ..live.service import ServiceState, create_app

    backend = backend_of(args, config)
    state = ServiceState(
        kb=pipeline.kb,
        pipeline=pipeline,
        embedder=pipeline.embedder,
        chunking=config.kb.chunking,
        where=store_name(backend, args, config),
        token=token,
        store_lock=lambda: store_lock(backend, args, config),
        writer_wait=args.write_wait,
        lookups_on_loop=get_backend(backend).local,
    )
    app = create_app(state, max_body=args.max_body)
    server = uvicorn.Server(
        uvicorn.Config(app, log_level=args.log_level, access_log=args.access_log)
    )
    # after uvicorn.Config, which configures uvicorn's loggers
    if args.access_log:  # uvicorn logs requests at info: --access-log means see them
        access = logging.getLogger("uvicorn.access")
        access.setLevel(min(access.level or logging.INFO, logging.INFO))
    redact = RedactSecrets(token)
    loggers = [logging.getLogger(name) for name in _LOGGERS]
    for logger in loggers:
        logger.addFilter(redact)
    # uvicorn shuts down gracefully on SIGINT/SIGTERM, then re-raises the signal:
    # both end here as a clean stop
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        with contextlib.suppress(KeyboardInterrupt):
            server.run(sockets=[sock])
    finally:
        for logger in loggers:
            logger.removeFilter(redact)


def _worker(
    args: argparse.Namespace, token: str | None, sock: socket.socket, ready: Connection
) -> None:
    """One worker process: open the store (never create it), say so on ``ready``
    (None, or the error's message), then serve ``sock``."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # until uvicorn installs its own handlers
    try:
        config = load_config(args.config, embedder=getattr(args, "embedder", None))
        backend = backend_of(args, config)
        with open_pipeline(backend, args, config, create=False, lookups=math.inf) as pipeline:
            ready.send(None)
            ready.close()
            signal.signal(signal.SIGINT, _interrupt)
            _serve(args, config, token, pipeline, sock)
    except RagsnapError as exc:
        if not ready.closed:
            ready.send(f"{type(exc).__name__}: {exc}")
        sys.exit(exc.exit_code)


def _supervise(
    args: argparse.Namespace,
    token: str | None,
    sock: socket.socket,
    workers: int,
    on_ready: Callable[[], None],
) -> None:
    """Start ``workers`` processes serving ``sock``; call ``on_ready`` once all are, then
    wait for SIGINT/SIGTERM (stop them all) or a worker's end (stop the rest, fail)."""
    context = multiprocessing.get_context("spawn")  # nothing of this process's state is shared
    processes: list[BaseProcess] = []
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        with contextlib.suppress(KeyboardInterrupt):
            starting: dict[Connection, BaseProcess] = {}
            for _ in range(workers):
                reader, writer = context.Pipe(duplex=False)
                worker: BaseProcess = context.Process(
                    target=_worker, args=(args, token, sock, writer), daemon=True
                )
                worker.start()
                writer.close()
                processes.append(worker)
                starting[reader] = worker
            while starting:
                for done in wait(list(starting)):
                    assert isinstance(done, Connection)
                    _check_started(done, starting.pop(done))
            on_ready()
            gone = wait([p.sentinel for p in processes])  # until a signal, or a worker's end
            ended = next(p for p in processes if p.sentinel in gone)
            ended.join()  # its sentinel can close a moment before it can be reaped
            raise BackendError(
                f"serve: worker process {ended.pid} ended (exit code {ended.exitcode}); "
                "the service stopped: see the messages above, then start it again"
            )
    finally:
        # a second Ctrl-C or SIGTERM must not cut the stop short and leave workers behind
        previous = {sig: signal.signal(sig, signal.SIG_IGN) for sig in _STOPS}
        for worker in processes:
            if worker.is_alive():
                worker.terminate()  # SIGTERM: uvicorn stops gracefully
        for worker in processes:
            worker.join()
        sock.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _check_started(ready: Connection, worker: BaseProcess) -> None:
    """Raise ``BackendError`` when ``worker`` reported a problem on ``ready`` or died."""
    try:
        problem = ready.recv()
    except EOFError:
        worker.join()
        problem = f"a worker process exited with code {worker.exitcode} while starting"
    if problem is not None:
        raise BackendError(f"serve: {problem}")

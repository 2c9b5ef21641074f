"""``ragsnap serve``: the reference HTTP contract over the local knowledge base.

The token is accepted only in the ``Authorization`` header, but clients get
it wrong: a request carrying it in its query string (``?token=...``) is
refused, yet its request line would still reach the access log
(``--access-log``). So every record of uvicorn's ``uvicorn.access`` and
``uvicorn.error`` loggers passes through ``RedactSecrets`` first, which
writes ``***`` for

* the value of a query parameter whose name, case-insensitively, contains
  ``token``, ``secret``, ``password``, ``passwd``, ``apikey`` or ``api_key``
  / ``api-key``, or is ``key`` or ends in ``_key`` / ``-key``
  (``access_token``, ``X-Api-Key``, ``client_secret``), percent-encoded
  names included; and
* the configured bearer token wherever it appears (as sent or
  percent-encoded), and any query value that decodes to something holding it.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import re
import signal
import socket
import sys
from types import FrameType
from urllib.parse import quote, quote_plus, unquote_plus

from ..config import load_config
from ..errors import MissingDependency, UsageError
from ..io.httpclient import is_loopback, read_token
from ._kb import backend_of, open_pipeline, store_lock, store_name


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
_SECRET_NAME = re.compile(r"token|secret|passw(?:or)?d|api[_-]?key|^key$|[_-]key$", re.IGNORECASE)


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
        return text

    def _parameter(self, match: re.Match[str]) -> str:
        name, value = match.group(1), match.group(2)
        secret = _SECRET_NAME.search(unquote_plus(name)) is not None
        if secret or (self._token and self._token in unquote_plus(value)):
            return f"{name}=***"
        return match.group(0)

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str):
            record.msg = self.redact(record.msg)
        if isinstance(record.args, tuple):
            record.args = tuple(self.redact(a) if isinstance(a, str) else a for a in record.args)
        return True


def _interrupt(_signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def run(args: argparse.Namespace) -> int:
    try:
        import uvicorn

        from ..live.service import ServiceState, create_app
    except ImportError as exc:
        raise MissingDependency(f"ragsnap serve ({exc.name} is missing)", "serve") from None
    config = load_config(args.config)
    token = read_token(args.token_file, args.token_env)
    if not is_loopback(args.host) and token is None:
        print(
            f"serve: warning: listening on {args.host} without a token; anyone who can reach "
            "it can upload and delete documents (pass --token-file or --token-env)",
            file=sys.stderr,
        )
    backend = backend_of(args, config)
    path = store_name(backend, args, config)
    with open_pipeline(backend, args, config, create=True) as pipeline:
        kb = pipeline.kb
        state = ServiceState(
            kb=kb,
            pipeline=pipeline,
            embedder=pipeline.embedder,
            chunking=config.kb.chunking,
            where=str(path),
            token=token,
            store_lock=lambda: store_lock(backend, args, config),
        )
        app = create_app(state, max_body=args.max_body)
        sock = _bind(args.host, args.port)
        host, port = sock.getsockname()[:2]
        shown = f"[{host}]" if ":" in host else host
        print(
            f"serve: http://{shown}:{port} over {path} ({kb.count()} chunks); "
            f"OpenAPI at /openapi.json; Ctrl-C stops",
            flush=True,
        )
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
        # both end here as a clean stop, exit code 0
        signal.signal(signal.SIGTERM, _interrupt)
        try:
            with contextlib.suppress(KeyboardInterrupt):
                server.run(sockets=[sock])
        finally:
            for logger in loggers:
                logger.removeFilter(redact)
        print("serve: stopped", flush=True)
    return 0

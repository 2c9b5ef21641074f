"""``ragsnap serve``: the reference HTTP contract over the local knowledge base."""

from __future__ import annotations

import argparse
import contextlib
import signal
import socket
import sys
from types import FrameType

from ..config import load_config
from ..errors import MissingDependency, UsageError
from ..httpclient import is_loopback, read_token
from ._kb import backend_of, open_pipeline, store_name


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


def _interrupt(_signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def run(args: argparse.Namespace) -> int:
    try:
        import uvicorn

        from ..service import ServiceState, create_app
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
        # uvicorn shuts down gracefully on SIGINT/SIGTERM, then re-raises the signal:
        # both end here as a clean stop, exit code 0
        signal.signal(signal.SIGTERM, _interrupt)
        with contextlib.suppress(KeyboardInterrupt):
            server.run(sockets=[sock])
        print("serve: stopped", flush=True)
    return 0

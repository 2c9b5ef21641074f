"""Helpers shared by the backend tests: a loopback HTTP server, seed documents on disk.

Test modules here import them as ``from .conftest import ...``.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

import pytest

_Server = TypeVar("_Server", bound="LoopbackServer")


class LoopbackServer:
    """A ThreadingHTTPServer on a free port of 127.0.0.1, served from a daemon thread.

    A subclass answers every request of ``methods`` in ``handle`` (other methods
    get the standard library's 501). Use it as a context manager, or ``close()``.
    """

    #: the HTTP methods ``handle`` answers
    methods: tuple[str, ...] = ("GET", "POST")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def _handle(self) -> None:
                server.handle(self)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        for method in self.methods:
            setattr(Handler, f"do_{method}", Handler._handle)
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()

    def handle(self, request: BaseHTTPRequestHandler) -> None:
        """Answer ``request`` (runs on one of the server's threads)."""
        raise NotImplementedError

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self._thread.join(timeout=10)

    def __enter__(self: _Server) -> _Server:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()


def send(
    request: BaseHTTPRequestHandler,
    status: int,
    data: bytes,
    headers: dict[str, str] | None = None,
) -> None:
    """Answer ``request`` with ``status`` and the JSON bytes ``data`` (plus ``headers``)."""
    request.send_response(status)
    request.send_header("Content-Type", "application/json")
    request.send_header("Content-Length", str(len(data)))
    for name, value in (headers or {}).items():
        request.send_header(name, value)
    request.end_headers()
    request.wfile.write(data)


def send_json(request: BaseHTTPRequestHandler, status: int, answer: Any) -> None:
    """Answer ``request`` with ``status`` and ``answer`` as JSON."""
    send(request, status, json.dumps(answer).encode("utf-8"))


def write_doc(folder: Path, source: str, body: str, **meta: str | None) -> Path:
    """A seed document ``<source>.md`` with ``source`` and ``meta`` in its header."""
    folder.mkdir(parents=True, exist_ok=True)
    header = [f"source: {source}"] + [f"{k}: {v}" for k, v in meta.items() if v is not None]
    path = folder / f"{source}.md"
    path.write_text("---\n" + "\n".join(header) + "\n---\n" + body + "\n", encoding="utf-8")
    return path


def require_milvus() -> None:
    """Skip on a workstation without the milvus extra; fail under ``CI=true``, where
    `.ci/run` installs it and a skip would hide that the backend went untested."""
    missing = []
    for module in ("pymilvus", "milvus_lite", "jieba"):
        try:
            importlib.import_module(module)
        except ImportError:
            missing.append(module)
    if missing:
        message = (
            f"{', '.join(missing)} not installed; pip install -e '.[milvus]' to test the "
            "milvus backend"
        )
        if os.environ.get("CI") == "true":
            pytest.fail(message, pytrace=False)
        pytest.skip(message)


class MilvusLiteServer:
    """``milvus-lite server`` (Milvus Lite's gRPC server, Milvus's API) as a real process
    on a free loopback port, with its data in ``data_dir``: a Milvus server to test the
    milvus backend's ``http://host:port`` path against. ``close()`` stops it."""

    def __init__(self, data_dir: Path, timeout: float = 60.0) -> None:
        with socket.socket() as probe:  # a free port (released for the server to bind)
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        self.uri = f"http://127.0.0.1:{port}"
        self.log = data_dir.parent / f"{data_dir.name}.log"
        with self.log.open("w", encoding="utf-8") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "milvus_lite", "server", "--data-dir", str(data_dir),
                 "--host", "127.0.0.1", "--port", str(port), "--max-workers", "8"],
                stdout=log, stderr=subprocess.STDOUT,
            )  # fmt: skip
        deadline = time.monotonic() + timeout
        while True:  # until it accepts connections (it binds once it serves)
            if self.proc.poll() is not None:
                raise RuntimeError(f"milvus-lite server exited: {self.log.read_text()}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return
            except OSError:
                if time.monotonic() > deadline:
                    self.close()
                    raise RuntimeError(
                        f"milvus-lite server did not listen in {timeout} s"
                    ) from None
                time.sleep(0.1)

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture(scope="session")
def milvus_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MilvusLiteServer]:
    """One Milvus Lite gRPC server for the session; each store on it has a collection
    prefix of its own. Skipped only when the milvus-lite package has no server."""
    require_milvus()
    if importlib.util.find_spec("milvus_lite.adapter.grpc.server") is None:
        message = "this milvus-lite has no gRPC server (`milvus-lite server`: milvus-lite>=3.2)"
        if os.environ.get("CI") == "true":  # CI installs the milvus extra: never skipped
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    server = MilvusLiteServer(tmp_path_factory.mktemp("milvus-server") / "data")
    try:
        yield server
    finally:
        server.close()


#: the filter-test corpus of both store tests: source -> (kb_scope, category, breadcrumb);
#: every body holds "quartzshared" and one word of its own, "<source without dashes>uniq"
DOCS: dict[str, tuple[str | None, str, str]] = {
    "mysql-pool": ("eval", "database", "Database > MySQL > Pool"),
    "mysql-root": ("eval", "database", "Database > MySQL"),
    "mysql-replica": ("eval", "database", "Database > MySQLReplica"),
    "kafka-lag": ("eval", "messaging", "Messaging > Kafka"),
    "other-pool": ("other", "database", "Database > MySQL > Pool"),
    "unscoped": (None, "database", "Database>MySQL >  Pool"),  # stored normalised
}


def unique_word(source: str) -> str:
    return source.replace("-", "") + "uniq"


def exact_cosines(documents: Any, query: Any) -> list[float]:
    """Exact cosines of each document row with ``query``, recomputed independently of
    the stores: the encoded vectors' dot products and norms as Python integers."""
    import math

    from ragsnap.kb.numeric import encode_vectors

    q = [int(x) for x in encode_vectors(query)]
    q_square = sum(x * x for x in q)
    out = []
    for row in encode_vectors(documents):
        d = [int(x) for x in row]
        dot, square = sum(a * b for a, b in zip(d, q, strict=True)), sum(x * x for x in d)
        exact = dot * (1 / math.sqrt(square)) * (1 / math.sqrt(q_square))
        out.append(exact if square and q_square else 0.0)
    return out

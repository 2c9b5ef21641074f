"""The one HTTP client ragsnap uses to talk to services, with its safety rules.

* Plain ``http://`` only to a loopback host (``127.0.0.0/8``, ``::1``,
  ``localhost``); any other host must use ``https://``.
* Redirects are refused, never followed: a bearer token is never forwarded
  to a URL the user did not name.
* The token is read from a file or an environment variable, sent only in the
  ``Authorization`` header, and never appears in a message, log or report.
  Neither does a request's query string (it may carry a key): messages name
  the method and the URL without it.
* Every request has a deadline: ``timeout`` (``timeoutSeconds`` in the
  ``http`` and ``embedder`` sections of ragsnap.yaml) is the budget of the
  whole request - connecting, the answer's headers and its body together -
  not of each socket read, so a server that trickles a byte at a time cannot
  hold a command. The body is streamed and the deadline checked after every
  piece; a read still blocked when the budget is spent is cut off by a
  watchdog that shuts the connection's socket ``_GRACE`` (0.5 s) later.
  A service that is refused, or sends nothing at all, within the budget is
  "cannot connect" (``ServiceUnreachable``); an answer still arriving when
  the budget is spent is a ``BackendError`` saying the request took longer
  than ``timeout`` seconds.
* Retries: connection errors, timeouts, deadline misses and 5xx answers are
  retried with exponential backoff (``backoff`` x 1, 2, 4 ... seconds), at
  most ``retries`` times; every attempt has the full budget, so a request
  waits at most (retries + 1) x timeout plus the backoff. 4xx answers,
  redirects, answers over the size cap and answers that are not JSON are not
  retried (the request or the endpoint is wrong; asking again gets the same).
* Answers are capped at ``max_bytes`` (64 MiB unless the caller passes
  another): a ``Content-Length`` over the cap is refused before the body is
  read, and a body without one (chunked, or ended by closing the connection)
  is refused as soon as it grows past the cap, counted after content
  decoding; an answer over the cap is never held whole. An error answer
  (4xx/5xx) is read only up to its first 64 KiB, for the message.
"""

from __future__ import annotations

import contextlib
import functools
import heapq
import ipaddress
import itertools
import json
import os
import socket
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..errors import BackendError, InputError, ServiceUnreachable, UsageError

__all__ = ["MAX_BYTES", "HttpClient", "check_url", "is_loopback", "read_token"]

_LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})
#: the default cap on an answer's body
MAX_BYTES = 64 * 1024 * 1024
#: how long after the deadline the watchdog cuts off a read that is still blocked
_GRACE = 0.5
#: the body is streamed in pieces of this size (the deadline and the cap are checked
#: after each)
_CHUNK = 64 * 1024
#: how much of an error answer is read, for its message
_ERROR_PREFIX = 64 * 1024


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine: ``localhost``, 127.0.0.0/8 or ::1."""
    if host.lower() in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_url(url: str) -> str:
    """Return ``url`` without a trailing slash, or refuse an unsafe one."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(f"{url!r} is not an http(s) URL; pass e.g. http://127.0.0.1:9900")
    if parts.query or parts.fragment:
        raise UsageError(
            f"{url.split('?', 1)[0].split('#', 1)[0]}: a base URL takes no query string or "
            "fragment (it may carry a key, and paths are appended to it); drop it"
        )
    if parts.username or parts.password:
        raise UsageError(
            "credentials in a URL would be logged; remove them and pass a token file "
            "or environment variable instead"
        )
    if parts.scheme == "http" and not is_loopback(parts.hostname):
        raise UsageError(
            f"plain http:// is allowed only to loopback hosts, not {parts.hostname}; "
            "use https:// for remote services"
        )
    return url.rstrip("/")


def read_token(token_file: Path | None, token_env: str | None) -> str | None:
    """The bearer token from ``token_file`` (first line) or ``$token_env``; None if neither."""
    if token_file is not None:
        try:
            token = token_file.read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise InputError(
                token_file, f"cannot be read ({exc.strerror})", "pass a readable token file"
            ) from None
        if not token:
            raise InputError(token_file, "is empty", "write the token into the file")
        return token.splitlines()[0].strip()
    if token_env is not None:
        token = os.environ.get(token_env, "").strip()
        if not token:
            raise UsageError(
                f"the environment variable {token_env} is not set or empty (it should hold "
                "the bearer token); set it, or pass the token another way"
            )
        return token
    return None


class _DeadlineMissed(Exception):
    """An attempt that outlived its budget (internal: retried, then reported)."""


class _Watchdog:
    """Shuts the socket of this thread's request down ``seconds`` after it starts.

    A blocked socket read returns when its socket is shut down, whatever the
    per-read timeout; ``fired`` tells the request why its read failed or ended.
    The socket is learnt from ``_watched_adapter``'s connections, which report
    themselves to ``_inflight.watchdog`` when they connect and send a request.
    Every watchdog of the process is kept by one ``_Alarms`` thread: a thread
    started per request cost more than the request itself on a busy machine.
    """

    def __init__(self, seconds: float):
        self.fired = False
        self.done = False
        self._connection: Any = None
        self._socket: socket.socket | None = None
        self._lock = threading.Lock()
        _ALARMS.arm(self, time.monotonic() + seconds)

    def watch(self, connection: Any) -> None:
        with self._lock:
            self._connection = connection
            sock = getattr(connection, "sock", None)
            if sock is not None:
                self._socket = sock

    def fire(self) -> None:
        with self._lock:
            if self.done:
                return
            self.fired = True
            sock = getattr(self._connection, "sock", None) or self._socket
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

    def stop(self) -> None:
        with self._lock:
            self.done = True


class _Alarms:
    """One daemon thread that fires each armed ``_Watchdog`` at its time, unless stopped.

    Watchdogs wait in a heap by time; stopped ones are dropped when they reach its
    top (on the next ``arm`` or wake-up), so the heap holds about the requests in
    flight. The thread starts on the first ``arm`` and sleeps until the earliest time.
    """

    def __init__(self) -> None:
        self._state = threading.Condition()
        self._heap: list[tuple[float, int, _Watchdog]] = []
        self._order = itertools.count()  # ties in time never compare watchdogs
        self._thread: threading.Thread | None = None

    def arm(self, watchdog: _Watchdog, at: float) -> None:
        with self._state:
            while self._heap and self._heap[0][2].done:
                heapq.heappop(self._heap)
            heapq.heappush(self._heap, (at, next(self._order), watchdog))
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._run, name="ragsnap-http-deadlines", daemon=True
                )
                self._thread.start()
            elif self._heap[0][2] is watchdog:  # earlier than the thread is sleeping for
                self._state.notify()

    def _run(self) -> None:
        with self._state:
            while True:
                now = time.monotonic()
                while self._heap and (self._heap[0][2].done or self._heap[0][0] <= now):
                    heapq.heappop(self._heap)[2].fire()  # a no-op once stopped
                self._state.wait(self._heap[0][0] - now if self._heap else None)


_ALARMS = _Alarms()
_inflight = threading.local()  # .watchdog: the _Watchdog of this thread's request


def _report(connection: Any) -> None:
    watchdog: _Watchdog | None = getattr(_inflight, "watchdog", None)
    if watchdog is not None:
        watchdog.watch(connection)


@functools.cache
def _watched_adapter() -> type[Any]:
    """A requests adapter whose connections report to the thread's ``_Watchdog``
    (built on first use: requests and urllib3 are imported lazily)."""
    from requests.adapters import HTTPAdapter
    from urllib3.connection import HTTPConnection, HTTPSConnection
    from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

    # both hooks: a fresh connection has its socket only after connect(), a reused one
    # connects no more; and http.client drops conn.sock once a closing answer's headers
    # are read, while its body still arrives on that socket
    class Reporting:
        def connect(self) -> None:
            super().connect()  # type: ignore[misc]
            _report(self)

        def request(self, *args: Any, **kwargs: Any) -> None:
            _report(self)
            super().request(*args, **kwargs)  # type: ignore[misc]

    class WatchedHTTPConnection(Reporting, HTTPConnection):
        pass

    class WatchedHTTPSConnection(Reporting, HTTPSConnection):
        pass

    class WatchedHTTPConnectionPool(HTTPConnectionPool):
        ConnectionCls = WatchedHTTPConnection

    class WatchedHTTPSConnectionPool(HTTPSConnectionPool):
        ConnectionCls = WatchedHTTPSConnection

    class WatchedAdapter(HTTPAdapter):
        def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
            super().init_poolmanager(*args, **kwargs)
            self.poolmanager.pool_classes_by_scheme = {
                "http": WatchedHTTPConnectionPool,
                "https": WatchedHTTPSConnectionPool,
            }

    return WatchedAdapter


def _size(n: int) -> str:
    """``n`` bytes for a message: ``64 MiB``, ``1.5 KiB``, ``100 bytes``."""
    for unit, scale in (("MiB", 1024 * 1024), ("KiB", 1024)):
        if n >= scale:
            return f"{n / scale:.4g} {unit}"
    return f"{n} bytes"


class HttpClient:
    """JSON over HTTP to one base URL, with the rules of the module docstring.

    ``timeout`` is each attempt's budget in seconds (connect, headers and body),
    ``retries`` how many times a failed attempt is repeated, ``backoff`` the
    first pause between attempts, and ``max_bytes`` the largest answer body
    accepted (default 64 MiB).
    """

    def __init__(
        self,
        base_url: str,
        *,
        token: str | None = None,
        timeout: float = 30.0,
        retries: int = 3,
        backoff: float = 0.2,
        max_bytes: int = MAX_BYTES,
    ):
        self.base_url = check_url(base_url)
        self.max_bytes = max_bytes
        self._timeout = timeout
        self._retries = retries
        self._backoff = backoff
        self._headers = {"Accept": "application/json"}
        self._token = token
        if token is not None:
            try:
                token.encode("latin-1")
            except UnicodeEncodeError:
                raise UsageError(
                    "the token holds characters an HTTP header cannot carry (a typographic "
                    "quote or dash?); copy the token again as plain text"
                ) from None
            self._headers["Authorization"] = f"Bearer {token}"
        self._local = threading.local()  # one session per thread: requests sessions are not
        self._sessions: list[Any] = []  # safe to share between threads
        self._sessions_lock = threading.Lock()

    @property
    def _session(self) -> Any:
        session = getattr(self._local, "session", None)
        if session is None:
            import requests

            session = requests.Session()
            session.trust_env = False  # no proxies or .netrc credentials from the environment
            session.headers.update(self._headers)
            adapter = _watched_adapter()()  # the deadline's watchdog learns the sockets
            session.mount("http://", adapter)
            session.mount("https://", adapter)
            self._local.session = session
            with self._sessions_lock:
                self._sessions.append(session)
        return session

    def _url(self, path: str) -> str:
        return f"{self.base_url}/{path.lstrip('/')}"

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        """Send one request; return the parsed JSON body (None when empty).

        ``kwargs`` go to ``requests`` (``params``, ``json`` ...). The rules, the
        deadline, the retries and the size cap are the module docstring's.
        """
        import requests

        url = self._url(path)
        shown = url.split("?", 1)[0]  # a query string may carry a key: never in a message
        attempt = 0
        while True:
            try:
                status, body, encoding = self._attempt(
                    method, url, shown, kwargs, retry_5xx=attempt < self._retries
                )
            except (requests.RequestException, _DeadlineMissed) as exc:
                if attempt < self._retries:
                    attempt += 1
                    time.sleep(self._backoff * 2 ** (attempt - 1))
                    continue
                if isinstance(exc, _DeadlineMissed):
                    raise BackendError(
                        f"{method} {shown}: took longer than {self._timeout:g} s "
                        f"({self._retries + 1} attempt(s)); the timeout bounds the whole "
                        "request, body included: raise timeoutSeconds in ragsnap.yaml or "
                        "check the service"
                    ) from None
                raise ServiceUnreachable(
                    f"{method} {shown}: cannot connect ({type(exc).__name__}) after "
                    f"{self._retries + 1} attempt(s); check that the service is running and the "
                    "URL is right"
                ) from None  # the transport error stays the __context__
            if status >= 500 and attempt < self._retries:
                attempt += 1
                time.sleep(self._backoff * 2 ** (attempt - 1))
                continue
            if status >= 400:
                try:
                    text = body.decode(encoding or "utf-8", errors="replace")
                except LookupError:  # a charset Python does not know
                    text = body.decode("utf-8", errors="replace")
                detail = self._redact(text).strip().replace("\n", " ")[:300]
                raise BackendError(
                    f"{method} {shown}: HTTP {status} {detail}; "
                    + (
                        "check the token"
                        if status in (401, 403)
                        else "check the request and the service's logs"
                    )
                )
            if not body:
                return None
            try:  # in the charset the answer declares, as requests' Response.json() does;
                # undeclared, json.loads detects UTF-8, -16 or -32 (a BOM included)
                return json.loads(body.decode(encoding, errors="replace") if encoding else body)
            except (ValueError, LookupError):  # LookupError: a charset Python does not know
                raise BackendError(
                    f"{method} {shown}: the answer is not JSON; check the endpoint path"
                ) from None

    def _attempt(
        self, method: str, url: str, shown: str, kwargs: dict[str, Any], *, retry_5xx: bool
    ) -> tuple[int, bytearray, str | None]:
        """One attempt within the deadline: the status, the body (capped; only a prefix
        of an error answer; none of a 5xx when ``retry_5xx``) and its charset.

        Raises ``_DeadlineMissed`` when the budget ran out, a ``requests`` exception
        when the transport failed, ``BackendError`` for a redirect or an answer over
        the cap.
        """
        deadline = time.monotonic() + self._timeout
        watchdog = _Watchdog(self._timeout + _GRACE)
        _inflight.watchdog = watchdog
        try:
            response = self._session.request(
                method,
                url,
                timeout=self._timeout,  # per read: the watchdog enforces the total
                allow_redirects=False,
                stream=True,
                **kwargs,
            )
            with contextlib.closing(response):
                if time.monotonic() > deadline:
                    raise _DeadlineMissed
                status: int = response.status_code
                if 300 <= status < 400:
                    target = self._redact(response.headers.get("Location", "?").split("?", 1)[0])
                    raise BackendError(
                        f"{method} {shown}: answered with a redirect ({status}) to "
                        f"{target}; redirects are never followed (a token must not travel "
                        "elsewhere): use the final URL"
                    )
                body = bytearray()
                if status >= 500 and retry_5xx:
                    pass  # the attempt will be repeated: its body is not needed
                elif status >= 400:
                    self._read(response, body, _ERROR_PREFIX, deadline, truncate=True)
                else:
                    declared = response.headers.get("Content-Length", "")
                    if declared.strip().isdigit() and int(declared) > self.max_bytes:
                        raise self._too_large(method, shown)
                    if not self._read(response, body, self.max_bytes, deadline):
                        raise self._too_large(method, shown)
                encoding: str | None = response.encoding
        except Exception:
            if watchdog.fired:  # whatever failed, it failed because the socket was shut
                raise _DeadlineMissed from None
            raise
        finally:
            watchdog.stop()
            _inflight.watchdog = None
        if watchdog.fired:  # a body ended by closing the connection ends when it is shut
            raise _DeadlineMissed
        return status, body, encoding

    @staticmethod
    def _read(
        response: Any, into: bytearray, limit: int, deadline: float, *, truncate: bool = False
    ) -> bool:
        """Stream ``response``'s body into ``into``; False when it grew past ``limit``
        (``truncate``: keep its first ``limit`` bytes and stop, still True)."""
        for piece in response.iter_content(chunk_size=_CHUNK):
            if time.monotonic() > deadline:
                raise _DeadlineMissed
            if len(into) + len(piece) > limit:
                if truncate:
                    into += piece[: limit - len(into)]
                    return True
                return False
            into += piece
        return True

    def _too_large(self, method: str, shown: str) -> BackendError:
        return BackendError(
            f"{method} {shown}: the answer is larger than {_size(self.max_bytes)}, the cap on "
            "an answer (max_bytes); check that the path names the intended endpoint, or ask "
            "the service for fewer results"
        )

    def _redact(self, text: str) -> str:
        """``text`` with the token (should a service echo it) replaced by ``***``."""
        if self._token:
            text = text.replace(self._token, "***")
        return text

    def get_json(self, path: str, params: dict[str, Any] | None = None) -> Any:
        return self.request("GET", path, params=params)

    def post_json(self, path: str, body: Any) -> Any:
        return self.request("POST", path, json=body)

    def close(self) -> None:
        with self._sessions_lock:
            for session in self._sessions:
                session.close()
            self._sessions.clear()

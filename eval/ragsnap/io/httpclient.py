"""The one HTTP client ragsnap uses to talk to services, with its safety rules.

* Plain ``http://`` only to a loopback host (``127.0.0.0/8``, ``::1``,
  ``localhost``); any other host must use ``https://``.
* Redirects are refused, never followed: a bearer token is never forwarded
  to a URL the user did not name.
* The token is read from a file or an environment variable, sent only in the
  ``Authorization`` header, and never appears in a message, log or report.
  Neither does a request's query string (it may carry a key): messages name
  the method and the URL without it.
* Every attempt has a deadline: ``timeout`` (``timeoutSeconds`` in the
  ``http`` and ``embedder`` sections of ragsnap.yaml) is the budget of the
  whole attempt - the request, the answer's headers and its body together -
  not of each socket read, so a server that trickles a byte at a time cannot
  hold a command (connecting is bounded by the same timeout). The body is
  streamed and the deadline checked after every piece; a read still blocked
  when the budget is spent is cut off by a watchdog that shuts the
  connection's socket ``_GRACE`` (0.5 s) later. A service that is refused,
  or sends nothing at all, within the budget is "cannot connect"
  (``ServiceUnreachable``); an answer still arriving when the budget is spent
  is a ``BackendError`` saying the request took longer than ``timeout``
  seconds.
* Retries are urllib3's ``Retry``, mounted on the ``requests`` session through
  ``HTTPAdapter(max_retries=...)``: connection errors, timeouts, broken
  answers and 5xx answers are retried, at most ``retries`` times in all, for
  every method (ragsnap's requests are lookups, listings and uploads or
  deletes keyed by source: repeating one changes nothing). The pause is
  urllib3's backoff (none before the first retry, then ``backoff`` x 2, 4, 8
  ... seconds), or the ``Retry-After`` of a 503 answer, cut to ``timeout``.
  A deadline miss or a break while the body streams (after urllib3 has
  handed the answer over) counts against the same ``Retry``, with the same
  pause. Every attempt has the full budget, so a request waits at most
  (retries + 1) x timeout plus the pauses. 4xx answers (429 included: the
  service asks for less, not for the same again), redirects, answers over
  the size cap and answers that are not JSON are not retried (the request or
  the endpoint is wrong; asking again gets the same), but for a 409 that
  carries ``Retry-After``: the service's writer is busy (``ragsnap serve``
  while ``ragsnap seed`` writes its store), so it is retried like a 503,
  within the same ``retries``. A 409 without it (an idempotency key used for
  another document) is a true conflict and is not retried.
* An answer is parsed as JSON once its nesting is known to be at most
  ``MAX_DEPTH`` (64) levels of arrays and objects (``nesting_over`` counts it
  without parsing), so a service cannot make a parser recurse without bound;
  a deeper one is a ``BackendError`` naming the endpoint. A UTF-8 byte order
  mark before the JSON is accepted.
* ``max_bytes`` (64 MiB, 67108864 bytes, unless the caller passes another:
  the byte budget per request, ``http.budgets.bytes``) bounds both ends of a
  request. A JSON request body is serialized before anything is sent, and one
  over the budget is refused there (``UsageError``: what is sent is the
  caller's to shrink). An answer is capped at it: a ``Content-Length`` over
  the cap is refused before the body is read, and a body without one
  (chunked, or ended by closing the connection) is refused as soon as it
  grows past the cap, counted after content decoding; reading stops there and
  an answer over the cap is never held whole (``BackendError``: the service
  sent more than the budget). ``budget_hint`` names where the budget is set,
  for both messages. An error answer (4xx/5xx) is read only up to its first
  64 KiB, for the message.
* An error answer's message names the status and what the body says: a JSON
  object's ``message`` (or ``error``, ``detail``) with its ``code``
  (``HTTP 401 (code 40100): invalid token``), other JSON as it is, and an HTML
  page (a servlet container's error page) or other text as "not JSON" with its
  first words, tags stripped.
"""

from __future__ import annotations

import contextlib
import functools
import heapq
import ipaddress
import itertools
import json
import math
import os
import re
import socket
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ..errors import BackendError, InputError, ServiceUnreachable, UsageError

if TYPE_CHECKING:
    from urllib3.util import Retry

__all__ = [
    "MAX_BYTES",
    "MAX_DEPTH",
    "HttpClient",
    "check_url",
    "is_loopback",
    "nesting_over",
    "read_token",
]

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


#: the largest token file read: a bearer token is a line, not a megabyte
MAX_TOKEN_FILE_BYTES = 64 << 10


def read_token(token_file: Path | None, token_env: str | None) -> str | None:
    """The bearer token from ``token_file`` (first line) or ``$token_env``; None if neither.

    The token file is checked like every input: only a regular file of at most
    ``MAX_TOKEN_FILE_BYTES`` is read (a FIFO would block forever, ``/dev/zero``
    never ends); it is opened without blocking, then judged by its ``fstat``.
    """
    if token_file is not None:
        token = _read_token_file(token_file).strip()
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


def _read_token_file(path: Path) -> str:
    """The text of token file ``path`` (see ``read_token``)."""
    import stat

    fix = "pass a readable token file (a regular file holding the token on its first line)"
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | os.O_CLOEXEC)
    except OSError as exc:
        raise InputError(path, f"cannot be read ({exc.strerror})", fix) from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise InputError(path, "cannot be read: it is a folder, not a file", fix)
        if not stat.S_ISREG(info.st_mode):
            raise InputError(
                path, "cannot be read: it is not a regular file (a pipe or a device?)", fix
            )
        if info.st_size > MAX_TOKEN_FILE_BYTES:
            raise InputError(
                path,
                f"is {info.st_size:,} bytes, more than the {MAX_TOKEN_FILE_BYTES:,} a token "
                "file may have",
                "check that this is the token file you meant",
            )
        raw = os.read(fd, MAX_TOKEN_FILE_BYTES + 1)
    except OSError as exc:
        raise InputError(path, f"cannot be read ({exc.strerror})", fix) from None
    finally:
        os.close(fd)
    if len(raw) > MAX_TOKEN_FILE_BYTES:  # it grew after its fstat
        raise InputError(
            path,
            f"is more than the {MAX_TOKEN_FILE_BYTES:,} bytes a token file may have",
            "check that this is the token file you meant",
        )
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InputError(path, "is not UTF-8 text", "write the token as text") from None


class _DeadlineMissed(Exception):
    """An attempt that outlived its budget (internal: retried, then reported)."""


class _Deadlines:
    """The deadline of each attempt of one request, urllib3's retries included.

    urllib3 sends the request once per attempt: ``_watched_adapter``'s
    connections call ``start`` as they send it, which stops the previous
    attempt's watchdog and arms a new one; ``watch`` hands it the socket once
    a fresh connection has one.
    """

    def __init__(self, budget: float):
        self.budget = budget
        self.deadline = math.inf
        self._watchdog: _Watchdog | None = None

    def start(self, connection: Any) -> None:
        self.stop()
        self.deadline = time.monotonic() + self.budget
        self._watchdog = _Watchdog(self.budget + _GRACE)
        self._watchdog.watch(connection)

    def watch(self, connection: Any) -> None:
        if self._watchdog is not None:
            self._watchdog.watch(connection)

    @property
    def fired(self) -> bool:
        """Whether the current attempt's watchdog shut its socket."""
        return self._watchdog is not None and self._watchdog.fired

    def stop(self) -> None:
        if self._watchdog is not None:
            self._watchdog.stop()


class _Watchdog:
    """Shuts the socket of this thread's request down ``seconds`` after it starts.

    A blocked socket read returns when its socket is shut down, whatever the
    per-read timeout; ``fired`` tells the request why its read failed or ended.
    The socket is learnt from ``_watched_adapter``'s connections, through the
    ``_Deadlines`` of the thread's request (``_inflight.deadlines``).
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
_inflight = threading.local()  # .deadlines: the _Deadlines of this thread's request


def _deadlines() -> _Deadlines | None:
    deadlines: _Deadlines | None = getattr(_inflight, "deadlines", None)
    return deadlines


@functools.cache
def _watched_adapter() -> type[Any]:
    """A requests adapter whose connections start and report to the thread's
    ``_Deadlines`` (built on first use: requests and urllib3 are imported lazily)."""
    from requests.adapters import HTTPAdapter
    from urllib3.connection import HTTPConnection, HTTPSConnection
    from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

    # request() starts an attempt (urllib3 calls it once per try); connect() reports the
    # socket: a fresh connection has it only after connect(), a reused one connects no
    # more; and http.client drops conn.sock once a closing answer's headers are read,
    # while its body still arrives on that socket
    class Reporting:
        def connect(self) -> None:
            super().connect()  # type: ignore[misc]
            deadlines = _deadlines()
            if deadlines is not None:
                deadlines.watch(self)

        def request(self, *args: Any, **kwargs: Any) -> None:
            deadlines = _deadlines()
            if deadlines is not None:
                deadlines.start(self)
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


@functools.cache
def _retry_class() -> type[Retry]:
    """urllib3's ``Retry`` that obeys ``Retry-After`` on a 409 and a 503 only (module
    docstring): a 409 with it is a service asking to come back (its writer is busy); one
    without it (or a 413 or 429) is an answer that asking again would not change."""
    from urllib3.util import Retry

    class RetryAfter(Retry):
        RETRY_AFTER_STATUS_CODES = frozenset({409, 503})

    return RetryAfter


def _cause(exc: Exception) -> str:
    """The name of what failed: requests reports retries that ran out as a
    ``ConnectionError`` around urllib3's ``MaxRetryError``, whose reason says more."""
    from urllib3.exceptions import ConnectTimeoutError, MaxRetryError, ReadTimeoutError

    inner = exc.args[0] if exc.args else None
    reason = inner.reason if isinstance(inner, MaxRetryError) else None
    if isinstance(reason, ReadTimeoutError):
        return "ReadTimeout"
    if isinstance(reason, ConnectTimeoutError) and type(reason) is ConnectTimeoutError:
        return "ConnectTimeout"
    return type(exc).__name__


def _error_detail(text: str, kind: str) -> str:
    """What an error answer says, for a message: the ``message`` (or ``error``,
    ``detail``) of a JSON object, with its ``code``; else the JSON itself; an HTML
    page or other text is said not to be JSON, with its first words."""
    flat = " ".join(text.split())
    try:
        data = json.loads(text)
    except ValueError:
        data = _NOT_JSON
    if data is not _NOT_JSON:
        if isinstance(data, dict):
            said = next(
                (data[k] for k in ("message", "error", "detail") if isinstance(data.get(k), str)),
                None,
            )
            if said:
                code = data.get("code")
                coded = f" (code {json.dumps(code)})" if isinstance(code, (int, str)) else ""
                return f"{coded}: {said.strip()[:300]}"
        return f" {flat[:300]}"
    if not flat:
        return " with an empty body"
    if "html" in kind or flat[:1] == "<":
        words = " ".join(_TAG.sub(" ", text).split())
        return f", an HTML page, not JSON: {words[:200]}"
    return f", not JSON ({kind or 'no Content-Type'}): {flat[:300]}"


_NOT_JSON = object()
_TAG = re.compile(r"<(script|style)\b.*?</\1\s*>|<[^>]*>", re.DOTALL | re.IGNORECASE)


#: the deepest nesting of arrays and objects an answer may have (``json_depth``)
MAX_DEPTH = 64
#: a JSON string (escapes included) or a bracket outside one
_NESTING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')


def nesting_over(text: str | bytes | bytearray, limit: int = MAX_DEPTH) -> int | None:
    """How deep arrays and objects nest in the JSON ``text`` when that is more than
    ``limit``, else None; counted without parsing, so an answer nested thousands of
    levels deep is refused before a parser recurses into it (text that is not JSON
    gets some count, and fails to parse afterwards)."""
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8", errors="replace")
    if text.count("[") + text.count("{") <= limit:
        return None
    depth = deepest = 0
    for match in _NESTING.finditer(text):
        token = match.group()
        if token == "[" or token == "{":
            depth += 1
            deepest = max(deepest, depth)
        elif token == "]" or token == "}":
            depth -= 1
    return deepest if deepest > limit else None


def _size(n: int) -> str:
    """``n`` bytes for a message: ``64 MiB``, ``1.5 KiB``, ``100 bytes``."""
    for unit, scale in (("MiB", 1024 * 1024), ("KiB", 1024)):
        if n >= scale:
            return f"{n / scale:.4g} {unit}"
    return f"{n} bytes"


class HttpClient:
    """JSON over HTTP to one base URL, with the rules of the module docstring.

    ``timeout`` is each attempt's budget in seconds (connect, headers and body),
    ``retries`` how many times a failed attempt is repeated, ``backoff``
    urllib3's backoff factor, ``max_bytes`` the largest JSON request body sent
    and answer body accepted (default 64 MiB), and ``budget_hint`` where the
    user sets it, for messages.
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
        budget_hint: str = "max_bytes",
    ):
        self.base_url = check_url(base_url)
        self.max_bytes = max_bytes
        self.budget_hint = budget_hint
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
            # the adapter's connections start each attempt's deadline; its Retry is set
            # per request (``_send``)
            adapter = _watched_adapter()(max_retries=self._retry_policy())
            session.mount("http://", adapter)
            session.mount("https://", adapter)
            self._local.session = session
            self._local.adapter = adapter
            with self._sessions_lock:
                self._sessions.append(session)
        return session

    def _url(self, path: str) -> str:
        return f"{self.base_url}/{path.lstrip('/')}"

    def _retry_policy(self) -> Retry:
        """The urllib3 ``Retry`` of every request (the module docstring's rules)."""
        return _retry_class()(
            total=self._retries,
            redirect=False,  # never followed: a 3xx comes back and is refused
            allowed_methods=None,  # every method (see the module docstring)
            status_forcelist=range(500, 600),
            backoff_factor=self._backoff,
            raise_on_status=False,  # the last 5xx comes back, for its message
            respect_retry_after_header=True,
            retry_after_max=max(1, math.ceil(self._timeout)),
        )

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        """Send one request; return the parsed JSON body (None when empty).

        ``kwargs`` go to ``requests`` (``params``, ``json`` ...). The rules, the
        deadline, the retries and the size cap are the module docstring's.
        """
        url = self._url(path)
        shown = url.split("?", 1)[0]  # a query string may carry a key: never in a message
        if "json" in kwargs:  # serialized here, so its size is known before it is sent
            kwargs["data"] = self.encode(kwargs.pop("json"), f"{method} {shown}")
            kwargs["headers"] = {"Content-Type": "application/json", **kwargs.get("headers", {})}
        status, body, encoding, kind = self._send(method, url, shown, kwargs, self._retry_policy())
        if status >= 400:
            try:
                text = body.decode(encoding or "utf-8", errors="replace")
            except LookupError:  # a charset Python does not know
                text = body.decode("utf-8", errors="replace")
            raise BackendError(
                f"{method} {shown}: HTTP {status}{self._redact(_error_detail(text, kind))}; "
                + (
                    "check the token"
                    if status in (401, 403)
                    else "check the request and the service's logs"
                )
            )
        if not body:
            return None
        answer: str | bytearray
        try:  # in the charset the answer declares, as requests' Response.json() does;
            # undeclared, json.loads detects UTF-8, -16 or -32 (a BOM included)
            answer = body.decode(encoding, errors="replace") if encoding else body
        except LookupError:  # a charset Python does not know
            raise BackendError(
                f"{method} {shown}: the answer declares a charset Python does not know "
                f"({encoding}); check the service's Content-Type"
            ) from None
        if isinstance(answer, str):
            answer = answer.removeprefix("\ufeff")  # a UTF-8 BOM before the JSON: allowed
        depth = nesting_over(answer)
        if depth is not None:
            raise BackendError(
                f"{method} {shown}: the answer nests JSON {depth} levels deep, more than the "
                f"{MAX_DEPTH} any answer of the contract needs; check the endpoint path and "
                "the service"
            )
        try:
            return json.loads(answer)
        except (ValueError, RecursionError):
            raise BackendError(
                f"{method} {shown}: the answer is not JSON; check the endpoint path"
            ) from None

    def _send(
        self, method: str, url: str, shown: str, kwargs: dict[str, Any], retry: Retry
    ) -> tuple[int, bytearray, str | None, str]:
        """The answer's status, body (capped; only a prefix of an error answer),
        charset and media type, once urllib3's ``retry`` has retried what it may.

        urllib3 retries up to the answer's headers; a body that misses the deadline
        or breaks is counted against the ``Retry`` it handed over, and the request
        is sent again with what is left of it.
        """
        import requests
        from urllib3.exceptions import MaxRetryError, ProtocolError

        session = self._session
        self._local.adapter.max_retries = retry  # the adapter of this thread's session
        deadlines = _Deadlines(self._timeout)
        _inflight.deadlines = deadlines
        failed: Exception | None = None
        try:
            try:
                response = session.request(
                    method,
                    url,
                    timeout=self._timeout,  # per read: the watchdog enforces the total
                    allow_redirects=False,
                    stream=True,
                    **kwargs,
                )
            except requests.RequestException as exc:  # the retries are spent
                if deadlines.fired:  # whatever failed, it failed because the socket was shut
                    raise self._too_slow(method, shown) from None
                raise self._unreachable(method, shown, _cause(exc)) from None
            with contextlib.closing(response):
                try:
                    return self._answer(method, shown, response, deadlines)
                except (requests.RequestException, _DeadlineMissed) as exc:
                    failed = exc
                    spent: Retry = response.raw.retries or retry  # what urllib3 used already
        finally:
            deadlines.stop()
            _inflight.deadlines = None
        late = isinstance(failed, _DeadlineMissed) or deadlines.fired
        try:  # a read error to urllib3, retried for every method like the others
            left = spent.increment(method, shown, error=ProtocolError(type(failed).__name__))
        except MaxRetryError:
            if late:
                raise self._too_slow(method, shown) from None
            raise self._unreachable(method, shown, type(failed).__name__) from None
        left.sleep()
        return self._send(method, url, shown, kwargs, left)

    def _answer(
        self, method: str, shown: str, response: Any, deadlines: _Deadlines
    ) -> tuple[int, bytearray, str | None, str]:
        """Read ``response`` within the attempt's deadline: its status, body, charset and
        media type (``Content-Type`` without parameters, lower case).

        Raises ``_DeadlineMissed`` when the budget ran out, a ``requests`` exception
        when the body broke off, ``BackendError`` for a redirect or an answer over
        the cap.
        """
        try:
            if time.monotonic() > deadlines.deadline:
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
            if status >= 400:
                self._read(response, body, _ERROR_PREFIX, deadlines.deadline, truncate=True)
            else:
                declared = response.headers.get("Content-Length", "")
                if declared.strip().isdigit() and int(declared) > self.max_bytes:
                    raise self._too_large(method, shown)
                if not self._read(response, body, self.max_bytes, deadlines.deadline):
                    raise self._too_large(method, shown)
            encoding: str | None = response.encoding
            kind = response.headers.get("Content-Type", "").split(";", 1)[0].strip().lower()
        except Exception:
            if deadlines.fired:  # whatever failed, it failed because the socket was shut
                raise _DeadlineMissed from None
            raise
        if deadlines.fired:  # a body ended by closing the connection ends when it is shut
            raise _DeadlineMissed
        return status, body, encoding, kind

    def _too_slow(self, method: str, shown: str) -> BackendError:
        return BackendError(
            f"{method} {shown}: took longer than {self._timeout:g} s "
            f"({self._retries + 1} attempt(s)); the timeout bounds the whole "
            "request, body included: raise timeoutSeconds in ragsnap.yaml or "
            "check the service"
        )

    def _unreachable(self, method: str, shown: str, cause: str) -> ServiceUnreachable:
        return ServiceUnreachable(
            f"{method} {shown}: cannot connect ({cause}) after "
            f"{self._retries + 1} attempt(s); check that the service is running and the "
            "URL is right"
        )

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

    def encode(self, body: Any, endpoint: str) -> bytes:
        """``body`` as the JSON bytes a request sends (as ``requests`` would serialize
        it); a ``UsageError`` naming ``endpoint`` when they are over ``max_bytes``."""
        data = json.dumps(body, allow_nan=False).encode("utf-8")
        if len(data) > self.max_bytes:
            raise UsageError(
                f"{endpoint}: the request body is {len(data):,} bytes, more than the byte "
                f"budget per request ({self.max_bytes:,} bytes, {self.budget_hint}); it was "
                "not sent. Send less (a smaller document, a shorter query), or raise the budget"
            )
        return data

    def _too_large(self, method: str, shown: str) -> BackendError:
        return BackendError(
            f"{method} {shown}: the answer is larger than {_size(self.max_bytes)} "
            f"({self.max_bytes:,} bytes), the byte budget per request ({self.budget_hint}); "
            "reading stopped there. Check that the path names the intended endpoint, ask the "
            "service for fewer results, or raise the budget"
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

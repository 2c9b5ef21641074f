"""The one HTTP client ragsnap uses to talk to services, with its safety rules.

* Plain ``http://`` only to a loopback host (``127.0.0.0/8``, ``::1``,
  ``localhost``); any other host must use ``https://``.
* Redirects are refused, never followed: a bearer token is never forwarded
  to a URL the user did not name.
* The token is read from a file or an environment variable, sent only in the
  ``Authorization`` header, and never appears in a message, log or report.
* Every request has a timeout. Connection errors, timeouts and 5xx answers are
  retried with exponential backoff; 4xx answers are not (the request is wrong).
"""

from __future__ import annotations

import ipaddress
import os
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from .errors import BackendError, InputError, ServiceUnreachable, UsageError

__all__ = ["HttpClient", "check_url", "is_loopback", "read_token"]

_LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})


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


class HttpClient:
    """JSON over HTTP to one base URL, with the rules of the module docstring."""

    def __init__(
        self,
        base_url: str,
        *,
        token: str | None = None,
        timeout: float = 30.0,
        retries: int = 3,
        backoff: float = 0.2,
    ):
        self.base_url = check_url(base_url)
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
            self._local.session = session
            with self._sessions_lock:
                self._sessions.append(session)
        return session

    def _url(self, path: str) -> str:
        return f"{self.base_url}/{path.lstrip('/')}"

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        """Send one request; return the parsed JSON body (None when empty)."""
        import requests

        url = self._url(path)
        shown = url.split("?", 1)[0]  # a query string may carry a key: never in a message
        attempt = 0
        while True:
            try:
                response = self._session.request(
                    method, url, timeout=self._timeout, allow_redirects=False, **kwargs
                )
            except requests.RequestException as exc:
                if attempt < self._retries:
                    attempt += 1
                    time.sleep(self._backoff * 2 ** (attempt - 1))
                    continue
                raise ServiceUnreachable(
                    f"{method} {shown}: cannot connect ({type(exc).__name__}) after "
                    f"{self._retries + 1} attempt(s); check that the service is running and the "
                    "URL is right"
                ) from None  # the transport error stays the __context__
            if 300 <= response.status_code < 400:
                target = self._redact(response.headers.get("Location", "?").split("?", 1)[0])
                raise BackendError(
                    f"{method} {shown}: answered with a redirect ({response.status_code}) to "
                    f"{target}; redirects are never followed (a token must not travel "
                    "elsewhere): use the final URL"
                )
            if response.status_code >= 500 and attempt < self._retries:
                attempt += 1
                time.sleep(self._backoff * 2 ** (attempt - 1))
                continue
            if response.status_code >= 400:
                detail = self._redact(response.text).strip().replace("\n", " ")[:300]
                raise BackendError(
                    f"{method} {shown}: HTTP {response.status_code} {detail}; "
                    + (
                        "check the token"
                        if response.status_code in (401, 403)
                        else "check the request and the service's logs"
                    )
                )
            if not response.content:
                return None
            try:
                return response.json()
            except ValueError:
                raise BackendError(
                    f"{method} {shown}: the answer is not JSON; check the endpoint path"
                ) from None

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

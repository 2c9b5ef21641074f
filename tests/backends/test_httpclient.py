"""The HTTP client (ragsnap.io.httpclient) against a real server on 127.0.0.1."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
import time
import traceback
import tracemalloc
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from ragsnap.errors import BackendError, InputError, RagsnapError, UsageError
from ragsnap.io.httpclient import HttpClient, check_url, nesting_over, read_token

from .conftest import LoopbackServer, send

TOKEN = "sk-test-7f3a9c1e-SECRET"


@dataclass
class Reply:
    """One canned answer: status, body (a dict becomes JSON), extra headers."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


class Server(LoopbackServer):
    """A loopback server whose answers the test scripts per path.

    ``routes[path]`` is a list of replies served in turn, the last one repeated;
    an unknown path answers 404. Every request is recorded in ``seen``.
    """

    def __init__(self) -> None:
        self.routes: dict[str, list[Reply]] = {}
        self.seen: list[Seen] = []
        super().__init__()

    def handle(self, request: BaseHTTPRequestHandler) -> None:
        length = int(request.headers.get("Content-Length") or 0)
        body = request.rfile.read(length) if length else b""
        path = request.path.split("?", 1)[0]
        with self._lock:
            self.seen.append(Seen(request.command, path, dict(request.headers), body))
            queue = self.routes.get(path)
            reply = (queue.pop(0) if len(queue) > 1 else queue[0]) if queue else Reply(404)
        if reply.delay:
            time.sleep(reply.delay)
        payload = reply.body
        if callable(payload):
            payload = payload(request)
        if isinstance(payload, (dict, list)):
            payload = json.dumps(payload)
        data = payload.encode("utf-8") if isinstance(payload, str) else payload or b""
        send(request, reply.status, data, reply.headers)

    def route(self, path: str, *replies: Reply) -> None:
        self.routes[path] = list(replies)

    def hits(self, path: str) -> list[Seen]:
        with self._lock:
            return [s for s in self.seen if s.path == path]


@pytest.fixture
def server() -> Iterator[Server]:
    with Server() as srv:
        yield srv


@pytest.fixture
def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def client(server: Server, **kwargs: Any) -> HttpClient:
    kwargs.setdefault("backoff", 0.01)
    return HttpClient(server.url, **kwargs)


def backend_error(call: Any, *args: Any) -> BackendError:
    with pytest.raises(BackendError) as info:
        call(*args)
    return info.value


# --- check_url --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "http://example.com",
        "http://example.com:80/v1",
        "http://10.0.0.1",
        "http://192.168.1.20:9900",
        "http://0.0.0.0:9900",
        "http://[2001:db8::1]:9900",
        "http://localhost.example.com",
        "http://127.0.0.1.nip.io",
    ],
)
def test_check_url_refuses_plain_http_to_non_loopback(url: str) -> None:
    with pytest.raises(UsageError, match="plain http:// is allowed only to loopback"):
        check_url(url)


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://example.com", "https://example.com"),
        ("https://example.com/v1/", "https://example.com/v1"),
        ("http://127.0.0.1:9", "http://127.0.0.1:9"),
        ("http://127.8.9.10:9/", "http://127.8.9.10:9"),
        ("http://[::1]:9", "http://[::1]:9"),
        ("http://localhost", "http://localhost"),
        ("http://LOCALHOST:9900/v1", "http://LOCALHOST:9900/v1"),
    ],
)
def test_check_url_accepts_https_and_loopback(url: str, expected: str) -> None:
    assert check_url(url) == expected


@pytest.mark.parametrize(
    "url",
    [
        "http://user:pass@127.0.0.1:9",
        "https://user:pass@example.com",
        "https://token@example.com",
        "https://:pass@example.com",
    ],
)
def test_check_url_refuses_credentials(url: str) -> None:
    with pytest.raises(UsageError) as info:
        check_url(url)
    assert "credentials" in str(info.value)
    assert "user:pass" not in str(info.value) and "token@" not in str(info.value)


@pytest.mark.parametrize("url", ["ftp://127.0.0.1", "127.0.0.1:9900", "http://", "", "file:///x"])
def test_check_url_refuses_non_http_urls(url: str) -> None:
    with pytest.raises(UsageError, match="not an http"):
        check_url(url)


def test_client_checks_its_url() -> None:
    with pytest.raises(UsageError):
        HttpClient("http://example.com")


# --- requests and retries ---------------------------------------------------------------


def test_get_and_post_json(server: Server) -> None:
    server.route("/v1/items", Reply(200, {"items": [1, 2]}))
    server.route("/v1/empty", Reply(204))
    http = HttpClient(server.url + "/v1/")
    assert http.get_json("items", {"q": "pool"}) == {"items": [1, 2]}
    assert http.post_json("/items", {"a": "连接池"}) == {"items": [1, 2]}
    assert http.get_json("empty") is None
    get, post = server.hits("/v1/items")
    assert get.method == "GET" and post.method == "POST"
    assert json.loads(post.body) == {"a": "连接池"}
    assert post.headers["Accept"] == "application/json"
    assert "Authorization" not in post.headers
    http.close()


def test_5xx_is_retried_until_success(server: Server) -> None:
    server.route("/x", Reply(503, "busy"), Reply(503, "busy"), Reply(200, {"ok": True}))
    assert client(server).get_json("x") == {"ok": True}
    assert len(server.hits("/x")) == 3


def test_5xx_gives_up_after_the_retries(server: Server) -> None:
    server.route("/x", Reply(500, "database is down"))
    err = backend_error(client(server, retries=2).get_json, "x")
    assert len(server.hits("/x")) == 3
    assert "HTTP 500" in str(err) and "database is down" in str(err)
    assert "service's logs" in str(err)


def test_retries_are_urllib3_retry_mounted_on_the_session(server: Server) -> None:
    from urllib3.util import Retry

    server.route("/x", Reply(200, {}))
    http = client(server, retries=2)
    http.get_json("x")
    policy = http._session.get_adapter(server.url).max_retries
    assert isinstance(policy, Retry)
    assert (policy.total, policy.allowed_methods, policy.raise_on_status) == (2, None, False)


def test_retry_after_of_a_503_is_obeyed(server: Server) -> None:
    server.route("/x", Reply(503, "restarting", {"Retry-After": "1"}), Reply(200, {"ok": True}))
    start = time.monotonic()
    assert client(server).get_json("x") == {"ok": True}
    assert time.monotonic() - start >= 0.9  # the backoff alone would be 0 s
    assert len(server.hits("/x")) == 2


def test_retry_after_is_cut_to_the_timeout(server: Server) -> None:
    server.route("/x", Reply(503, "come back later", {"Retry-After": "3600"}), Reply(200, {}))
    start = time.monotonic()
    assert client(server, timeout=1.0).get_json("x") == {}
    assert 0.9 <= time.monotonic() - start < 5.0
    assert len(server.hits("/x")) == 2


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422, 429])
def test_4xx_is_not_retried(server: Server, status: int) -> None:
    server.route("/x", Reply(status, {"error": "nope"}))
    err = backend_error(client(server).post_json, "x", {})
    assert len(server.hits("/x")) == 1
    assert f"HTTP {status}" in str(err)
    assert ("check the token" in str(err)) == (status in (401, 403))


@pytest.mark.parametrize(
    ("status", "body", "headers", "said"),
    [
        (  # a Spring Security 401: JSON with a code and a message
            401,
            {"code": 40100, "message": "invalid or missing API token", "data": None},
            {},
            "HTTP 401 (code 40100): invalid or missing API token; check the token",
        ),
        (422, {"error": "topK out of range"}, {}, "HTTP 422: topK out of range; check the"),
        (404, {"status": 404, "path": "/x"}, {}, 'HTTP 404 {"status": 404, "path": "/x"};'),
        (  # a servlet container's error page
            500,
            "<html><head><style>p {color: red}</style></head><body><h1>Whitelabel Error "
            "Page</h1>\n<p>status=500</p></body></html>",
            {"Content-Type": "text/html;charset=UTF-8"},
            "HTTP 500, an HTML page, not JSON: Whitelabel Error Page status=500; check the",
        ),
        (503, "upstream down", {}, "HTTP 503, not JSON (application/json): upstream down;"),
        (500, "", {}, "HTTP 500 with an empty body; check the request"),
    ],
)
def test_an_error_answer_says_what_its_body_says(
    server: Server, status: int, body: Any, headers: dict[str, str], said: str
) -> None:
    server.route("/x", Reply(status, body, headers))
    err = backend_error(client(server, retries=0).get_json, "x")
    assert str(err).startswith(f"GET {server.url}/x: ")
    assert said in str(err)


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_redirect_is_refused_and_never_followed(server: Server, status: int) -> None:
    server.route("/start", Reply(status, "", {"Location": server.url + "/target"}))
    server.route("/target", Reply(200, {"ok": True}))
    err = backend_error(client(server, token=TOKEN).post_json, "start", {"a": 1})
    assert f"redirect ({status})" in str(err) and "/target" in str(err)
    assert len(server.hits("/start")) == 1
    assert server.hits("/target") == []


def test_connection_refused_after_retries(closed_port: int) -> None:
    http = HttpClient(f"http://127.0.0.1:{closed_port}", retries=2, backoff=0.01)
    err = backend_error(http.get_json, "x")
    assert "cannot connect" in str(err) and "ConnectionError" in str(err)
    assert f"127.0.0.1:{closed_port}/x" in str(err)


def test_connection_recovers_within_the_retries(server: Server) -> None:
    # the first answer arrives only after the timeout: a timeout is retried like a refusal
    server.route("/slow", Reply(200, {"late": True}, delay=1.0), Reply(200, {"ok": True}))
    assert client(server, timeout=0.3).get_json("slow") == {"ok": True}
    assert len(server.hits("/slow")) == 2


def test_timeout_gives_up_with_cannot_connect(server: Server) -> None:
    server.route("/slow", Reply(200, {"late": True}, delay=1.0))
    err = backend_error(client(server, timeout=0.2, retries=1).get_json, "slow")
    assert "cannot connect (ReadTimeout)" in str(err)
    assert len(server.hits("/slow")) == 2


@pytest.mark.parametrize("body", ["<html>Not Found</html>", "{bad json", "\x00\x01"])
def test_non_json_body_is_backend_error(server: Server, body: str) -> None:
    server.route("/x", Reply(200, body))
    err = backend_error(client(server).get_json, "x")
    assert "not JSON" in str(err) and "check the endpoint path" in str(err)
    assert len(server.hits("/x")) == 1


@pytest.mark.parametrize("kind", ["application/json", "application/json; charset=utf-8", ""])
def test_a_utf8_byte_order_mark_before_the_json_is_accepted(server: Server, kind: str) -> None:
    headers = {"Content-Type": kind} if kind else {}
    server.route("/x", Reply(200, "\ufeff" + json.dumps({"ok": "ü"}), headers))
    assert client(server).get_json("x") == {"ok": "ü"}  # was: "the answer is not JSON"


@pytest.mark.parametrize("depth", [65, 5_000, 200_000])
def test_an_answer_nested_too_deep_is_refused_before_parsing(server: Server, depth: int) -> None:
    server.route("/deep", Reply(200, "[" * depth + "]" * depth))
    err = backend_error(client(server).get_json, "deep")  # was RecursionError from 200 000
    assert f"GET {server.url}/deep: the answer nests JSON {depth} levels deep" in str(err)
    assert "more than the 64" in str(err)


def test_brackets_inside_strings_do_not_count_as_nesting(server: Server) -> None:
    text = '[[{"a": "' + "[{" * 500 + '\\"]]"}]]'
    server.route("/x", Reply(200, text))
    assert client(server).get_json("x") == [[{"a": "[{" * 500 + '"]]'}]]
    assert nesting_over("[" * 64 + "]" * 64) is None
    assert nesting_over("[" * 65 + "]" * 65) == 65


def test_a_409_with_retry_after_is_retried(server: Server) -> None:
    busy = Reply(409, {"error": "the store is being written"}, {"Retry-After": "1"})
    server.route("/x", busy, Reply(200, {"ok": True}))
    start = time.monotonic()
    assert client(server).post_json("x", {}) == {"ok": True}  # was: HTTP 409 at once
    assert len(server.hits("/x")) == 2
    assert time.monotonic() - start >= 0.9


def test_a_409_with_retry_after_gives_up_after_the_retries(server: Server) -> None:
    server.route("/x", Reply(409, {"error": "still busy"}, {"Retry-After": "0"}))
    err = backend_error(client(server, retries=2).post_json, "x", {})
    assert len(server.hits("/x")) == 3
    assert "HTTP 409: still busy" in str(err)


@pytest.mark.parametrize(("status", "headers"), [(409, {}), (429, {"Retry-After": "0"})])
def test_a_conflict_or_too_many_requests_is_not_retried(
    server: Server, status: int, headers: dict[str, str]
) -> None:
    server.route("/x", Reply(status, {"error": "key used for another document"}, headers))
    err = backend_error(client(server).post_json, "x", {})
    assert len(server.hits("/x")) == 1
    assert f"HTTP {status}" in str(err)


# --- the token --------------------------------------------------------------------------


def test_token_from_file_is_sent_as_bearer(server: Server, tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_text(f"  {TOKEN}  \nsecond line is ignored\n", encoding="utf-8")
    token = read_token(path, None)
    assert token == TOKEN
    server.route("/x", Reply(200, {}))
    client(server, token=token).get_json("x")
    assert server.hits("/x")[0].headers["Authorization"] == f"Bearer {TOKEN}"


def test_token_from_env_is_sent_as_bearer(server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGSNAP_TEST_TOKEN", f"{TOKEN}\n")
    token = read_token(None, "RAGSNAP_TEST_TOKEN")
    assert token == TOKEN
    server.route("/x", Reply(200, {}))
    client(server, token=token).post_json("x", {})
    assert server.hits("/x")[0].headers["Authorization"] == f"Bearer {TOKEN}"


def test_token_file_wins_over_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "token").write_text("from-file", encoding="utf-8")
    monkeypatch.setenv("RAGSNAP_TEST_TOKEN", "from-env")
    assert read_token(tmp_path / "token", "RAGSNAP_TEST_TOKEN") == "from-file"
    assert read_token(None, None) is None


def test_proxy_environment_is_ignored(server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    # trust_env is off: a proxy in the environment would otherwise see the token
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
    monkeypatch.setenv("http_proxy", "http://127.0.0.1:9")
    monkeypatch.setenv("NO_PROXY", "")
    server.route("/x", Reply(200, {"ok": True}))
    assert client(server, token=TOKEN).get_json("x") == {"ok": True}


@pytest.mark.parametrize(
    ("path", "replies"),
    [
        ("/unauthorized", [Reply(401, {"error": "invalid token"})]),
        ("/forbidden", [Reply(403, "forbidden")]),
        ("/broken", [Reply(500, "internal error")]),
        ("/moved", [Reply(302, "", {"Location": "/elsewhere"})]),
        ("/html", [Reply(200, "<html>login page</html>")]),
    ],
)
def test_token_never_appears_in_messages(
    server: Server, tmp_path: Path, path: str, replies: list[Reply]
) -> None:
    (tmp_path / "token").write_text(TOKEN, encoding="utf-8")
    server.route(path, *replies)
    err = backend_error(client(server, token=read_token(tmp_path / "token", None)).get_json, path)
    assert server.hits(path)[0].headers["Authorization"] == f"Bearer {TOKEN}"
    # neither the message nor the printed traceback (chained exceptions included)
    assert TOKEN not in str(err) and TOKEN not in repr(err)
    assert TOKEN not in "".join(traceback.format_exception(err))


def echo_authorization(handler: BaseHTTPRequestHandler) -> str:
    return json.dumps({"error": f"invalid credentials: {handler.headers['Authorization']}"})


@pytest.mark.parametrize("status", [401, 500])
def test_token_echoed_by_the_server_is_not_in_the_message(server: Server, status: int) -> None:
    server.route("/x", Reply(status, echo_authorization))
    err = backend_error(client(server, token=TOKEN, retries=0).get_json, "x")
    assert TOKEN not in str(err)


def test_read_token_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError) as info:
        read_token(tmp_path / "nope", "IGNORED_WHEN_A_FILE_IS_GIVEN")
    assert info.value.path == str(tmp_path / "nope") and "cannot be read" in str(info.value)


@pytest.mark.parametrize("content", ["", "  \n\n \t"])
def test_read_token_empty_file(tmp_path: Path, content: str) -> None:
    path = tmp_path / "token"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(InputError, match="is empty"):
        read_token(path, None)


def test_read_token_folder_is_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot be read"):
        read_token(tmp_path, None)


def test_read_token_fifo_does_not_block(tmp_path: Path) -> None:
    fifo = tmp_path / "token"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="not a regular file") as info:
        read_token(fifo, None)
    assert info.value.path == str(fifo)


def test_read_token_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_bytes(b"\xff\xfe-token\n")
    with pytest.raises(InputError, match="is not UTF-8 text"):
        read_token(path, None)


def test_read_token_reads_at_most_the_cap(tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_bytes(b"t" * 65_536)
    assert read_token(path, None) == "t" * 65_536
    path.write_bytes(b"t" * 65_537)
    with pytest.raises(InputError, match="is 65,537 bytes, more than the 65,536"):
        read_token(path, None)


@pytest.mark.parametrize("value", [None, "", "   "])
def test_read_token_unset_env(monkeypatch: pytest.MonkeyPatch, value: str | None) -> None:
    if value is None:
        monkeypatch.delenv("RAGSNAP_TEST_TOKEN", raising=False)
    else:
        monkeypatch.setenv("RAGSNAP_TEST_TOKEN", value)
    with pytest.raises(UsageError, match="RAGSNAP_TEST_TOKEN is not set"):
        read_token(None, "RAGSNAP_TEST_TOKEN")


def test_token_outside_latin1_is_a_ragsnap_error(server: Server, tmp_path: Path) -> None:
    (tmp_path / "token").write_text("sk-abc\u2019def", encoding="utf-8")
    server.route("/x", Reply(200, {}))
    with pytest.raises(RagsnapError):
        client(server, token=read_token(tmp_path / "token", None)).get_json("x")


def test_a_key_in_the_query_string_is_never_in_a_message() -> None:
    """Some services take a key as ?key=...; a base URL with a query string is refused
    (paths would be appended after it) and the message names the URL without it."""
    with pytest.raises(UsageError) as info:
        HttpClient("http://127.0.0.1:9/v1?api_key=sk-secret-123", retries=0)
    assert "sk-secret-123" not in str(info.value)
    assert "127.0.0.1:9/v1: a base URL takes no query string" in str(info.value)
    with pytest.raises(UsageError, match="no query string or fragment"):
        HttpClient("http://127.0.0.1:9/v1#frag")
    client = HttpClient("http://127.0.0.1:9/v1", retries=0)
    with pytest.raises(BackendError) as err:
        client.get_json("x?api_key=sk-secret-123")  # a key in a request path is hidden too
    assert "sk-secret-123" not in str(err.value)


# --- the deadline and the size cap ------------------------------------------------------

MIB = 1024 * 1024


class Streamer(LoopbackServer):
    """A loopback server that answers every request with one scripted way of streaming.

    ``trickle_headers``: the status line, then one header one byte every ``pause``
    seconds; ``trickle_body``: headers promising ``declared`` bytes (or chunked), then the
    body one byte every ``pause`` seconds; ``big``: ``size`` bytes of JSON framed by
    ``framing`` (``length``, ``chunked``, or ``close``: no length, end of body = end of
    connection). Trickles stop by themselves after ``budget`` bytes (or when the client
    hangs up, or the server closes), so no loop outlives its test.
    """

    def __init__(
        self, mode: str, *, framing: str = "length", size: int = 0, pause: float = 0.2
    ) -> None:
        self.mode, self.framing, self.size, self.pause = mode, framing, size, pause
        self.budget = 40  # trickled bytes at most: 8 s at 0.2 s a byte
        self.stopped = threading.Event()
        self.requests = 0
        self.payload = json_of_size(size) if mode == "big" else b""
        super().__init__()

    def close(self) -> None:
        self.stopped.set()
        super().close()

    def handle(self, request: BaseHTTPRequestHandler) -> None:
        with self._lock:
            self.requests += 1
        # the client hanging up is what a refused or cut-off answer looks like from here
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            getattr(self, self.mode)(request)

    def _trickle(self, request: BaseHTTPRequestHandler, data: bytes) -> None:
        for byte in data[: self.budget]:
            if self.stopped.wait(self.pause):
                return
            request.wfile.write(bytes([byte]))
            request.wfile.flush()

    def trickle_headers(self, request: BaseHTTPRequestHandler) -> None:
        request.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n")
        request.wfile.flush()
        self._trickle(request, b"X-Padding: " + b"a" * 1000 + b"\r\n")
        request.close_connection = True

    def trickle_body(self, request: BaseHTTPRequestHandler) -> None:
        request.send_response(200)
        request.send_header("Content-Type", "application/json")
        if self.framing == "chunked":
            request.send_header("Transfer-Encoding", "chunked")
        else:
            request.send_header("Content-Length", "10000")
        request.end_headers()
        body = b'{"pad": "' + b"a" * 9990 + b'"}'
        if self.framing == "chunked":  # every byte a chunk of its own
            for byte in body[: self.budget]:
                if self.stopped.wait(self.pause):
                    return
                request.wfile.write(b"1\r\n" + bytes([byte]) + b"\r\n")
                request.wfile.flush()
        else:
            self._trickle(request, body)
        request.close_connection = True

    def big(self, request: BaseHTTPRequestHandler) -> None:
        data = memoryview(self.payload)
        request.send_response(200)
        request.send_header("Content-Type", "application/json")
        if self.framing == "length":
            request.send_header("Content-Length", str(len(data)))
        elif self.framing == "chunked":
            request.send_header("Transfer-Encoding", "chunked")
        else:
            request.send_header("Connection", "close")
        request.end_headers()
        step = 64 * 1024
        for start in range(0, len(data), step):
            piece = data[start : start + step]
            if self.framing == "chunked":
                request.wfile.write(b"%x\r\n" % len(piece) + piece + b"\r\n")
            else:
                request.wfile.write(piece)
        if self.framing == "chunked":
            request.wfile.write(b"0\r\n\r\n")
        request.close_connection = self.framing == "close"


def json_of_size(size: int) -> bytes:
    """A JSON document of exactly ``size`` bytes: ``{"pad": "aaa…"}``."""
    return b'{"pad": "' + b"a" * (size - 11) + b'"}'


def deadline_error(http: HttpClient) -> tuple[BackendError, float]:
    start = time.monotonic()
    with pytest.raises(BackendError) as info:
        http.get_json("slow?key=sk-query-secret")
    return info.value, time.monotonic() - start


@pytest.mark.parametrize(
    ("mode", "framing"),
    [("trickle_body", "length"), ("trickle_body", "chunked"), ("trickle_headers", "length")],
)
def test_a_trickling_answer_is_cut_off_at_the_deadline(mode: str, framing: str) -> None:
    # every byte arrives well within a per-read timeout; only a whole-request deadline
    # stops it (before the fix, the command waited for all the bytes the server sent)
    with Streamer(mode, framing=framing) as srv:
        err, elapsed = deadline_error(HttpClient(srv.url, timeout=1.0, retries=0))
    assert elapsed < 5.0, elapsed  # bounds a hang: ~1.5 s expected
    message = str(err)
    assert f"GET {srv.url}/slow: took longer than 1 s" in message, message
    assert "sk-query-secret" not in message
    assert message.endswith("raise timeoutSeconds in ragsnap.yaml or check the service")
    assert srv.requests == 1


def test_a_deadline_miss_is_retried_like_a_timeout() -> None:
    with Streamer("trickle_body") as srv:
        err, elapsed = deadline_error(HttpClient(srv.url, timeout=0.5, retries=1, backoff=0.01))
    assert "took longer than 0.5 s (2 attempt(s))" in str(err)
    assert srv.requests == 2
    assert elapsed < 6.0, elapsed


@pytest.mark.parametrize("framing", ["length", "chunked", "close"])
def test_an_answer_over_max_bytes_is_refused_without_holding_it(framing: str) -> None:
    with Streamer("big", framing=framing, size=3 * MIB) as srv:
        http = HttpClient(srv.url, max_bytes=MIB, retries=0)
        tracemalloc.start()
        try:
            with pytest.raises(BackendError) as info:
                http.get_json("big?token=sk-query-secret")
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        http.close()
    message = str(info.value)
    assert f"GET {srv.url}/big: the answer is larger than 1 MiB" in message, message
    assert "sk-query-secret" not in message
    assert srv.requests == 1  # not retried: the same request gets the same answer
    assert peak < 2 * MIB, peak  # at most the cap and one chunk were held, never 3 MiB


@pytest.mark.parametrize("framing", ["length", "chunked", "close"])
def test_an_answer_just_under_max_bytes_is_read(framing: str) -> None:
    with Streamer("big", framing=framing, size=MIB - 1) as srv:
        http = HttpClient(srv.url, max_bytes=MIB, retries=0)
        answer = http.get_json("big")
        again = http.get_json("big")  # the connection was left reusable (or reopened)
        http.close()
    assert answer == again == {"pad": "a" * (MIB - 12)}
    assert srv.requests == 2


def test_max_bytes_defaults_to_64_mib(server: Server) -> None:
    server.route("/x", Reply(200, {"ok": True}))
    http = client(server)
    assert http.max_bytes == 64 * MIB
    assert http.get_json("x") == {"ok": True}

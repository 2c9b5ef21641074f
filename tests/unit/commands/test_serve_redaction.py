"""The access log's redaction (``ragsnap.commands.serve.RedactSecrets``): no encoding of
the token, and no value of a parameter named like a secret, reaches the log."""

from __future__ import annotations

from urllib.parse import quote, quote_plus, unquote, unquote_plus

import pytest

from ragsnap.commands.serve import RedactSecrets

TOKENS = ["sk-test-7f3a9c1e-SECRET", "tok/en+with=odd&chars", "eyJhbGciOi.J9-_x~y=="]


def _every_byte(text: str, hex_case: str = "X") -> str:
    return "".join(f"%{b:02{hex_case}}" for b in text.encode())


def encodings(token: str) -> list[str]:
    full = _every_byte(token)
    return [
        token,
        quote(token),
        quote(token, safe=""),
        quote_plus(token),
        full,  # fully percent-encoded
        _every_byte(token, "x"),  # with lower-case hex digits
        quote(full, safe=""),  # doubly encoded
        quote(quote(full, safe=""), safe=""),  # three times
        "Bearer%20" + full,
        "Bearer+" + quote_plus(token),
    ]


def lines(encoded: str) -> list[str]:
    return [
        f"GET /api/search/similar?query={encoded} HTTP/1.1",
        f"GET /api/search/similar?query=pool&q={encoded}&topK=3 HTTP/1.1",
        f"GET /api/documents/{encoded} HTTP/1.1",
        f"GET /api/search/similar?{encoded} HTTP/1.1",
        f"GET /api/search/similar?{encoded}=1 HTTP/1.1",
        f'127.0.0.1:5000 - "GET /x/{encoded}/y;{encoded}#{encoded} HTTP/1.1" 401',
    ]


def _decodes_to_token(text: str, token: str) -> bool:
    layers = {text}
    for _ in range(4):
        layers |= {decode(t) for t in layers for decode in (unquote, unquote_plus)}
    return any(token in t for t in layers)


@pytest.mark.parametrize("token", TOKENS)
def test_no_encoding_of_the_token_reaches_the_log(token: str) -> None:
    redact = RedactSecrets(token).redact
    for encoded in encodings(token):
        for line in lines(encoded):
            out = redact(line)
            assert not _decodes_to_token(out, token), (line, out)
            assert "***" in out


@pytest.mark.parametrize(
    "name",
    [
        "token",
        "access_token",
        "Api_Key",
        "X-Api-Key",
        "apiKey",
        "key",
        "client_secret",
        "password",
        "passwd",
        "pwd",
        "pass",
        "authorization",
        "Authorization",
        "auth",
        "oauth_signature",
        "sig",
        "X-Amz-Signature",
        "X-Amz-Credential",
        "session",
        "sessionId",
        "PHPSESSID",
        "sid",
        "jwt",
        "cookie",
        "otp",
        "%61uthorization",  # a percent-encoded name
    ],
)
def test_values_of_secret_parameters_are_redacted(name: str) -> None:
    line = f"GET /api/search/similar?query=pool&{name}=s3cr3t-value&topK=3 HTTP/1.1"
    assert RedactSecrets(None).redact(line) == (
        f"GET /api/search/similar?query=pool&{name}=***&topK=3 HTTP/1.1"
    )


@pytest.mark.parametrize(
    "line",
    [
        "GET /api/search/similar?query=pool&topK=3&kbScope=eval HTTP/1.1",
        "GET /api/search/similar?keyword=monkey&category=passage HTTP/1.1",
        "GET /api/documents/mysql-connection-pool HTTP/1.1",
        '127.0.0.1:5000 - "POST /api/knowledge/lookup HTTP/1.1" 200',
    ],
)
def test_nothing_else_is_redacted(line: str) -> None:
    assert RedactSecrets(TOKENS[0]).redact(line) == line

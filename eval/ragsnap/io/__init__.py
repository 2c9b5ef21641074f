"""Input and output: everything that touches a file, a schema or a socket.

``jsonio`` is the one deterministic, atomic writer and the strict JSON / YAML
reader; ``schema`` the JSON Schemas shipped in ``schemas/``; ``inputs`` loads
golden cases, fixtures and reports into the models; ``markdown`` renders
tables; ``progress`` reports long work on stderr; ``locks`` is the knowledge
base's writer lock; ``httpclient`` the one HTTP client (loopback-only plain
HTTP, no redirects, secret-safe).
"""

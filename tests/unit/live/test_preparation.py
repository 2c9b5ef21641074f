"""``ragsnap.live.preparation``'s pure parts: the key and the verification."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from ragsnap.config import load_config
from ragsnap.errors import InputError
from ragsnap.kb.backends.http import HttpService
from ragsnap.live.preparation import STATE_FORMAT, idempotency_key, verify_state


def state(**docs: dict[str, Any]) -> dict[str, Any]:
    return {"format": STATE_FORMAT, "documents": docs}


def saved(server_id: str, revision: str = "r1", embedding: Any = "e") -> dict[str, Any]:
    return {"id": server_id, "revision": revision, "embedding": embedding}


def listed(source: str, server_id: str, revision: str = "r1", **more: Any) -> dict[str, Any]:
    return {"source": source, "id": server_id, "revision": revision, "embedding": "e", **more}


def test_idempotency_key_is_sha256_of_source_and_content_hash() -> None:
    expected = hashlib.sha256(b"doc-1\nabc").hexdigest()
    assert idempotency_key("doc-1", "abc") == expected


def test_a_new_attempt_or_epoch_gets_a_new_key() -> None:
    """A re-created document (attempt 2, 3 ...) and a reset state (an epoch) never send
    a key the service has answered before."""
    first = idempotency_key("doc-1", "abc")
    keys = [
        first,
        idempotency_key("doc-1", "abc", 2),
        idempotency_key("doc-1", "abc", 3),
        idempotency_key("doc-1", "abc", 1, "e1"),
        idempotency_key("doc-1", "abc", 2, "e1"),
        idempotency_key("doc-1", "abc", 1, "e2"),
    ]
    assert len(set(keys)) == len(keys)
    assert keys[1] == hashlib.sha256(b"doc-1\nabc\n/2").hexdigest()
    assert keys[3] == hashlib.sha256(b"doc-1\nabc\ne1/1").hexdigest()
    assert idempotency_key("doc-1", "abc", 1, None) == first  # a first attempt: unchanged


def test_everything_as_recorded_passes() -> None:
    failures, verified = verify_state(
        state(a=saved("1"), b=saved("2")), [listed("a", "1"), listed("b", "2")], True, {"s"}
    )
    assert (failures, verified) == ([], 2)


def test_each_kind_of_failure_is_listed() -> None:
    failures, verified = verify_state(
        state(a=saved("1"), b=saved("2"), c=saved("3"), d=saved("4", embedding="old")),
        [
            listed("a", "1"),
            listed("a", "9"),  # a second record for a
            listed("b", "2", revision="r2"),  # changed
            listed("d", "4"),  # re-embedded
            listed("x", "3", kbScope="s"),  # unexpected in scope, and c's id reused
            listed("y", "7", kbScope="other"),  # another scope: not ours to judge
        ],
        False,
        {"s"},
    )
    assert verified == 1
    assert failures == [
        "partial list: the service says its document list is incomplete",
        "duplicate: 2 records for source a (ids 1, 9); the service does not honour "
        "idempotency keys",
        "changed revision: b is at r2, the state recorded r1",
        "missing: c (id 3) is not on the service",
        "changed embedding: d is embedded by e, the state recorded old",
        "unexpected: x is in kb_scope s",
    ]


def test_one_id_for_two_sources_is_a_duplicate() -> None:
    failures, _ = verify_state(
        state(a=saved("1")), [listed("a", "1"), listed("b", "1")], None, set()
    )
    assert failures == ["duplicate id 1 for sources a, b"]


def test_the_http_section_maps_the_document_fields(tmp_path: Path) -> None:
    config = tmp_path / "ragsnap.yaml"
    config.write_text(
        "http:\n"
        "  documents:\n"
        "    idempotencyHeader: X-Request-Key\n"
        "    complete: page.last\n"
        "    fields: {id: uuid, revision: meta.rev, embedding: receipt.model}\n",
        encoding="utf-8",
    )
    mapping = load_config(config).http
    assert mapping.idempotency_header == "X-Request-Key"
    assert mapping.list_complete == "page.last"
    service = HttpService(mapping, base_url="http://127.0.0.1:9")
    answer = {"source": "a", "uuid": "u-1", "meta": {"rev": "r"}, "receipt": {"model": "m"}}
    assert service.stored(answer) == {
        "source": "a",
        "id": "u-1",
        "revision": "r",
        "embedding": "m",
        "kbScope": None,
    }
    defaults = load_config(None).http
    assert defaults.idempotency_header == "Idempotency-Key"
    assert dict(defaults.document) == {
        k: k for k in ("source", "id", "revision", "embedding", "kbScope")
    }


def test_an_unknown_document_field_is_refused(tmp_path: Path) -> None:
    config = tmp_path / "ragsnap.yaml"
    config.write_text("http:\n  documents:\n    fields: {serverId: uuid}\n", encoding="utf-8")
    with pytest.raises(InputError, match="serverId"):
        load_config(config)

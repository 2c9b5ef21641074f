"""``ragsnap.live.preparation``'s pure parts: the key and the verification."""

from __future__ import annotations

import hashlib
from typing import Any

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

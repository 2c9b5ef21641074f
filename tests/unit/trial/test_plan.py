"""Trial plans: canonical hashes, differences, and a plan file that was edited."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragsnap.errors import InputError
from ragsnap.trial.plan import Plan, canonical_sha256, corpus_digest


def plan(**changes: object) -> Plan:
    fields: dict[str, object] = {
        "inputs": {"corpus": "a" * 64, "cases": "b" * 64},
        "methods": [{"name": "lexical", "settings": {"minScore": 0.2}}, {"name": "hybrid"}],
        "depth": 100,
        "split": "dev",
        "repetitions": 3,
        "seed": 7,
    }
    fields.update(changes)
    return Plan(**fields)  # type: ignore[arg-type]


def test_the_hash_is_canonical_json() -> None:
    assert canonical_sha256({"b": 1, "a": [1, "é"]}) == canonical_sha256({"a": [1, "é"], "b": 1})
    assert plan().sha256 == plan().sha256 != plan(seed=8).sha256
    assert corpus_digest({"x": "1", "y": "2"}) == corpus_digest({"y": "2", "x": "1"})
    assert corpus_digest({"x": "1"}) != corpus_digest({"x": "2"})


def test_differences_name_what_changed() -> None:
    assert plan().differences(plan()) == []
    changed = plan(
        inputs={"corpus": "c" * 64, "cases": "b" * 64},
        methods=[{"name": "lexical", "settings": {"minScore": 0.3}}, {"name": "hybrid"}],
        depth=None,
    )
    found = plan().differences(changed)
    assert found[0].startswith("/inputs/corpus: aaaa")
    assert "/methods/lexical: its settings changed" in found
    assert "/depth: 100 -> None" in found
    reordered = plan(methods=[{"name": "hybrid"}, {"name": "lexical"}])
    assert plan().differences(reordered) == [
        "/methods: ['lexical', 'hybrid'] -> ['hybrid', 'lexical']"
    ]


def test_a_plan_file_round_trips_and_an_edit_is_refused(tmp_path: Path) -> None:
    data = plan().file_json()
    assert Plan.from_file_json(data, tmp_path / "plan.json") == plan()
    data["plan"]["seed"] = 8
    with pytest.raises(InputError) as info:
        Plan.from_file_json(data, tmp_path / "plan.json")
    assert info.value.pointer == "/planSha256" and "edited" in str(info.value)


# -- a trial over a service (--backend http) ----------------------------------------------

SERVICE_METHODS = [{"name": "hybrid", "request": {"mode": "hybrid", "alpha": 0.5}}]


def service_plan(revision: str | None) -> Plan:
    backend = {"name": "http", "corpusRevision": revision}
    return plan(inputs={"cases": "b" * 64}, methods=SERVICE_METHODS, backend=backend)


def test_an_embedded_plan_has_no_backend_section() -> None:
    assert "backend" not in plan().to_json()
    assert plan().backend_name == "embedded"


def test_a_service_plan_round_trips_and_validates() -> None:
    from ragsnap.io.schema import validate

    made = service_plan("rev-7")
    data = made.file_json()
    validate(data, "trial-plan", "plan.json", "trial plan")
    again = Plan.from_file_json(data, "plan.json")
    assert again == made and again.backend_name == "http"
    validate(service_plan(None).file_json(), "trial-plan", "plan.json", "trial plan")


def test_differences_name_the_backend_first() -> None:
    assert service_plan("rev-7").differences(service_plan("rev-8")) == [
        "/backend/corpusRevision: rev-7 -> rev-8"
    ]
    embedded = plan(inputs={"cases": "b" * 64}, methods=SERVICE_METHODS)
    assert embedded.differences(service_plan(None)) == ["/backend/name: None -> http"]

"""Trial plans: canonical hashes, differences, and a plan file that was edited."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragsnap.errors import InputError
from ragsnap.models import Judgment
from ragsnap.trial.plan import (
    PLAN_SCHEMA_VERSION,
    Plan,
    canonical_sha256,
    check_plan_version,
    corpus_digest,
    judgments_digest,
)


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


# -- versions and the judgments' digest ----------------------------------------------------


def test_a_plan_of_an_older_version_is_refused_with_the_fix() -> None:
    data = plan().file_json()
    assert data["schemaVersion"] == PLAN_SCHEMA_VERSION == 2
    check_plan_version(data, "plan.json")  # this version passes
    with pytest.raises(InputError) as info:
        check_plan_version({**data, "schemaVersion": 1}, "plan.json")
    assert info.value.pointer == "/schemaVersion" and "older ragsnap" in str(info.value)
    assert "--write-plan" in str(info.value)
    with pytest.raises(InputError, match="reads version 2"):
        check_plan_version({**data, "schemaVersion": 3}, "plan.json")
    check_plan_version({"kind": "something else"}, "plan.json")  # left to the schema


def test_the_judgments_digest_covers_targets_grades_and_spans() -> None:
    base = {"q1": [Judgment("chunkId", "a#0", 3, ("span",))], "q2": []}
    digest = judgments_digest(base)
    assert digest == judgments_digest(dict(base))
    for changed in (
        {**base, "q1": [Judgment("chunkId", "a#1", 3, ("span",))]},
        {**base, "q1": [Judgment("chunkId", "a#0", 2, ("span",))]},
        {**base, "q1": [Judgment("chunkId", "a#0", 3, ("other",))]},
        {**base, "q1": [Judgment("docId", "a#0", 3, ("span",))]},
        {"q2": [], "q1": base["q1"]},  # the cases' order
    ):
        assert judgments_digest(changed) != digest


def test_an_embedder_name_is_part_of_the_plan_only_when_chosen() -> None:
    assert "embedder" not in plan().to_json()  # kb.embedder: the hash is as before
    chosen = plan(embedder="minilm")
    assert chosen.to_json()["embedder"] == "minilm" and chosen.sha256 != plan().sha256
    assert Plan.from_file_json(chosen.file_json(), "plan.json") == chosen
    assert plan().differences(chosen) == ["/embedder: None -> minilm"]

"""The Qilbee importer: documents and queries with vectors, graded judgments, a vector space."""

from __future__ import annotations

import copy
import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conftest import Project, block, make_fixture, set_at
from ragsnap.errors import InputError, UsageError
from ragsnap.importers import (
    ImportOptions,
    SourceDoc,
    SourceQuery,
    VectorSpace,
    make_importer,
)
from ragsnap.importers.qilbee import QilbeeImporter
from ragsnap.importers.writer import write_import
from ragsnap.io.inputs import load_cases, load_fixtures
from ragsnap.ir.metrics import parse_measure
from ragsnap.kb.embedders import Fingerprint, FrozenEmbedder, make_embedder
from ragsnap.scoring.casemetrics import case_metrics

DOCS = {  # id -> (text, vector): four topics, database / security / ops / interface
    "pool": ("The connection pool holds at most 20 connections.", (0.9, 0.1, 0.0, 0.1)),
    "slow-log": ("Queries slower than two seconds go to the slow log.", (0.7, 0.0, 0.3, 0.0)),
    "tls": ("TLS certificates renew every ninety days.", (0.1, 0.9, 0.1, 0.0)),
    "tokens": ("API tokens live in the encrypted settings store.", (0.0, 0.8, 0.0, 0.3)),
    "backup": ("Backups run nightly at two and are kept for a month.", (0.2, 0.0, 0.9, 0.0)),
    "deploy": ("Deployments roll out one zone at a time.", (0.0, 0.1, 0.8, 0.3)),
    "fonts": ("The interface font scales with the system setting.", (0.0, 0.0, 0.1, 0.9)),
    "keyboard": ("Every dialog can be operated with the keyboard.", (0.1, 0.1, 0.0, 0.8)),
}


def contract() -> dict[str, Any]:
    """A realistic small Qilbee contract fixture: 8 documents, 5 queries, 4 dimensions."""
    return {
        "name": "unit-contract",
        "space": {
            "provider": "acme",
            "model": "embed-small",
            "revision": "2026-01",
            "dimensions": 4,
        },
        "documents": [{"id": k, "text": t, "vector": list(v)} for k, (t, v) in DOCS.items()],
        "queries": [
            {
                "id": "q-pool",
                "split": "dev",
                "category": "database",
                "text": "How many connections does the pool hold?",
                "vector": [0.95, 0.05, 0.0, 0.05],
                "judgments_complete": True,
                "judgments": {"pool": 3, "slow-log": 1},
            },
            {
                "id": "q-tls",
                "split": "dev",
                "category": "security",
                "text": "When do certificates renew?",
                "vector": [0.05, 0.95, 0.1, 0.0],
                "judgments_complete": False,
                "judgments": {"tls": 3, "tokens": 1, "pool": 0},
            },
            {
                "id": "q-backup",
                "split": "test",
                "category": "ops",
                "language": "de",
                "text": "Wann laufen die Backups?",
                "vector": [0.1, 0.0, 0.95, 0.05],
                "judgments_complete": True,
                "judgments": {"deploy": 1, "backup": 2},
            },
            {
                "id": "q-fonts",
                "split": "test",
                "category": "interface",
                "text": "Can I make the font bigger?",
                "vector": [0.0, 0.0, 0.05, 1.0],
                "judgments_complete": False,
                "judgments": {"fonts": 3, "keyboard": 0},
            },
            {
                "id": "q-weather",
                "split": "test",
                "category": "ops",
                "text": "What is the weather tomorrow?",
                "vector": [0.5, 0.5, 0.5, 0.5],
                "judgments_complete": True,
                "judgments": {},
            },
        ],
    }


def write(tmp_path: Path, data: Any, name: str = "contract.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def read_all(
    path: Path, options: ImportOptions | None = None
) -> tuple[QilbeeImporter, list[SourceDoc], list[SourceQuery]]:
    importer = QilbeeImporter(path, options or ImportOptions())
    docs = list(importer.documents())
    return importer, docs, importer.queries(frozenset(d.source for d in docs))


# -- what it reads -------------------------------------------------------------


def test_space_documents_and_vectors(tmp_path: Path) -> None:
    path = write(tmp_path, contract())
    importer, docs, _ = read_all(path)
    assert importer.space == VectorSpace("acme", "embed-small", "2026-01", 4)
    assert [d.source for d in docs] == list(DOCS)
    assert docs[0].text == DOCS["pool"][0]
    assert docs[0].vector == [0.9, 0.1, 0.0, 0.1]
    assert all(isinstance(x, float) for d in docs for x in d.vector or [])
    assert docs[4].origin == f"{path} at /documents/4"


def test_queries_keep_grades_in_order_splits_categories_and_completeness(tmp_path: Path) -> None:
    _, _, queries = read_all(write(tmp_path, contract()))
    by_id = {q.id: q for q in queries}
    assert [q.id for q in queries] == ["q-pool", "q-tls", "q-backup", "q-fonts", "q-weather"]
    backup = by_id["q-backup"]
    assert [(j.target, j.grade) for j in backup.judgments] == [("deploy", 1), ("backup", 2)]
    assert (backup.split, backup.category, backup.language) == ("test", "ops", "de")
    assert backup.judgments_complete and not by_id["q-tls"].judgments_complete
    assert by_id["q-pool"].language == "en"
    assert by_id["q-pool"].vector == [0.95, 0.05, 0.0, 0.05]
    assert [(j.target, j.grade) for j in by_id["q-tls"].judgments] == [
        ("tls", 3),
        ("tokens", 1),
        ("pool", 0),
    ]
    assert all(j.spans == () for q in queries for j in q.judgments)


def test_a_query_without_relevant_judgments_is_a_no_answer_query(tmp_path: Path) -> None:
    data = contract()
    data["queries"][3]["judgments"] = {"fonts": 0, "keyboard": 0}
    _, _, queries = read_all(write(tmp_path, data))
    by_id = {q.id: q for q in queries}
    assert by_id["q-weather"].no_answer and by_id["q-weather"].judgments == ()
    fonts = by_id["q-fonts"]
    assert fonts.no_answer
    assert [(j.target, j.grade) for j in fonts.judgments] == [("fonts", 0), ("keyboard", 0)]
    assert not by_id["q-pool"].no_answer


def test_defaults_come_from_the_options(tmp_path: Path) -> None:
    data = contract()
    for query in data["queries"]:
        for key in ("split", "category", "judgments_complete"):
            query.pop(key)
    options = ImportOptions(split="dev", category="contract", language="fr")
    _, _, queries = read_all(write(tmp_path, data), options)
    assert {(q.split, q.category) for q in queries} == {("dev", "contract")}
    assert {q.language for q in queries} == {"fr", "de"}
    assert not any(q.judgments_complete for q in queries)
    _, _, queries = read_all(write(tmp_path, data))
    assert {(q.split, q.category, q.language) for q in queries} == {
        ("test", "imported", "en"),
        ("test", "imported", "de"),
    }


def test_dimension_alias_and_numeric_revision(tmp_path: Path) -> None:
    data = contract()
    data["space"] = {"provider": "acme", "model": "m", "revision": 3, "dimension": 4}
    importer, _, _ = read_all(write(tmp_path, data))
    assert importer.space == VectorSpace("acme", "m", "3", 4)


def test_same_text_with_the_same_vector_is_allowed(tmp_path: Path) -> None:
    data = contract()
    twin = copy.deepcopy(data["queries"][0])
    twin["id"] = "q-pool-again"
    data["queries"].append(twin)
    _, _, queries = read_all(write(tmp_path, data))
    assert len(queries) == 6


def test_registered_as_qilbee(tmp_path: Path) -> None:
    importer = make_importer("qilbee", write(tmp_path, contract()), ImportOptions())
    assert isinstance(importer, QilbeeImporter) and importer.format == "qilbee"


# -- through the writer ----------------------------------------------------------


def imported(tmp_path: Path) -> Path:
    out = tmp_path / "out"
    write_import(
        QilbeeImporter(write(tmp_path, contract()), ImportOptions()), out, stream=io.StringIO()
    )
    return out


def test_vectors_become_a_frozen_embedder_with_the_space_fingerprint(tmp_path: Path) -> None:
    out = imported(tmp_path)
    assert "embedder: {kind: frozen, path: vectors.json}" in (out / "ragsnap.yaml").read_text()
    embedder = make_embedder({"kind": "frozen", "path": "vectors.json"}, out)
    assert isinstance(embedder, FrozenEmbedder)
    assert embedder.fingerprint == Fingerprint("frozen", "acme/embed-small", "2026-01", 4)
    rows = embedder.embed_documents(["", ""], ["pool#0", "fonts#0"])
    expected = np.array([DOCS["pool"][1], DOCS["fonts"][1]], dtype=np.float32)
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    np.testing.assert_allclose(rows, expected, rtol=1e-6)
    query = embedder.embed_query("Wann laufen die Backups?")
    assert int(np.argmax(query)) == 2
    vectors = json.loads((out / "vectors.json").read_text())
    assert set(vectors["chunks"]) == {f"{d}#0" for d in DOCS}
    assert len(vectors["queries"]) == 5


def test_complete_judgments_judge_every_document(tmp_path: Path) -> None:
    out = imported(tmp_path)
    cases = {c.id: c for c in load_cases(out / "golden-cases.json").cases}
    pool = cases["q-pool"]
    assert [(j.target, j.grade) for j in pool.judgments] == [
        ("pool", 3),
        ("slow-log", 1),
        ("tls", 0),
        ("tokens", 0),
        ("backup", 0),
        ("deploy", 0),
        ("fonts", 0),
        ("keyboard", 0),
    ]
    assert pool.expected_sources == ("pool",)
    assert cases["q-backup"].expected_sources == ("backup",)
    assert len(cases["q-tls"].judgments) == 3  # incomplete: only what the file judges
    weather = cases["q-weather"]
    assert weather.no_answer and weather.expected_sources == ()
    assert {j.grade for j in weather.judgments} == {0} and len(weather.judgments) == 8


def test_coverage_is_complete_for_completely_judged_cases(tmp_path: Path) -> None:
    out = imported(tmp_path)
    cases = load_cases(out / "golden-cases.json").cases
    project = Project(tmp_path / "scored")
    ranking = list(reversed(DOCS))  # every document retrieved, the relevant ones late
    for case in cases:
        blocks = [block(rank, source) for rank, source in enumerate(ranking, start=1)]
        project.write_fixture(make_fixture(case.id, blocks, query=case.query))
    fixtures = load_fixtures(project.fixtures).fixtures
    coverage = parse_measure("coverage@10")
    metrics = case_metrics(cases, fixtures, [coverage])
    assert metrics["q-pool"]["coverage@10"] == 1.0
    assert metrics["q-backup"]["coverage@10"] == 1.0
    assert metrics["q-tls"]["coverage@10"] == 3 / 8
    assert metrics["q-fonts"]["coverage@10"] == 2 / 8
    assert "q-weather" not in metrics  # no-answer cases have no graded metrics


def test_a_deterministic_second_import(tmp_path: Path) -> None:
    first = imported(tmp_path)
    data = {p.name: p.read_bytes() for p in sorted(first.iterdir())}
    second = imported(tmp_path)
    assert {p.name: p.read_bytes() for p in sorted(second.iterdir())} == data


# -- what it refuses -------------------------------------------------------------


BAD = [
    # (name, change, pointer, words in the problem)
    ("no space", set_at("space", None), "/space", "no `space`"),
    ("space array", set_at("space", [4]), "/space", "JSON object"),
    ("provider missing", set_at("space/provider", None), "/space/provider", "missing"),
    ("model empty", set_at("space/model", ""), "/space/model", "non-empty"),
    ("revision missing", set_at("space/revision", None), "/space/revision", "missing"),
    ("revision object", set_at("space/revision", {}), "/space/revision", "an object"),
    ("dimensions missing", set_at("space/dimensions", None), "/space/dimensions", "missing"),
    ("dimensions zero", set_at("space/dimensions", 0), "/space/dimensions", "positive"),
    ("dimensions text", set_at("space/dimensions", "4"), "/space/dimensions", "'4'"),
    ("dimensions boolean", set_at("space/dimensions", True), "/space/dimensions", "True"),
    ("no documents", set_at("documents", None), "/documents", "no `documents`"),
    ("queries object", set_at("queries", {}), "/queries", "must be an array"),
    ("document not object", set_at("documents/3", "tls"), "/documents/3", "JSON object"),
    ("document id missing", set_at("documents/2/id", None), "/documents/2/id", "missing"),
    ("document id tab", set_at("documents/2/id", "t\tls"), "/documents/2/id", "U+0009"),
    ("duplicate document", set_at("documents/5/id", "pool"), "/documents/5/id", "/documents/0"),
    ("text missing", set_at("documents/1/text", None), "/documents/1/text", "missing"),
    ("text number", set_at("documents/1/text", 12), "/documents/1/text", "a number"),
    ("title number", set_at("documents/1/title", 12), "/documents/1/title", "non-empty"),
    ("metadata list", set_at("documents/1/metadata", []), "/documents/1/metadata", "an array"),
    ("vector missing", set_at("documents/6/vector", None), "/documents/6/vector", "missing"),
    ("vector string", set_at("documents/6/vector", "0.1,0.2"), "/documents/6/vector", "text"),
    ("vector short", set_at("documents/6/vector", [0.1, 0.2, 0.3]), "/documents/6/vector", "3"),
    ("vector long", set_at("documents/6/vector", [0.0] * 5), "/documents/6/vector", "not 4"),
    ("vector null", set_at("documents/6/vector/2", [1]), "/documents/6/vector/2", "[1]"),
    ("vector string item", set_at("documents/6/vector/1", "1"), "/documents/6/vector/1", "'1'"),
    ("vector boolean", set_at("documents/6/vector/0", False), "/documents/6/vector/0", "False"),
    ("vector overflow", set_at("documents/6/vector/3", 1e39), "/documents/6/vector/3", "float32"),
    ("query vector", set_at("queries/2/vector", [1, 2]), "/queries/2/vector", "2 numbers"),
    ("query vector missing", set_at("queries/2/vector", None), "/queries/2/vector", "missing"),
    ("query not object", set_at("queries/1", 1), "/queries/1", "JSON object"),
    ("query id missing", set_at("queries/1/id", None), "/queries/1/id", "missing"),
    ("query id DEL", set_at("queries/1/id", "q\x7ftls"), "/queries/1/id", "U+007F"),
    ("duplicate query", set_at("queries/4/id", "q-pool"), "/queries/4/id", "/queries/0"),
    ("query text missing", set_at("queries/0/text", None), "/queries/0/text", "missing"),
    ("query text long", set_at("queries/0/text", "x" * 10_001), "/queries/0/text", "10,001"),
    ("split train", set_at("queries/0/split", "train"), "/queries/0/split", "'train'"),
    ("category", set_at("queries/0/category", "data base"), "/queries/0/category", "not usable"),
    ("language", set_at("queries/0/language", "EN"), "/queries/0/language", "'EN'"),
    (
        "complete string",
        set_at("queries/0/judgments_complete", "yes"),
        "/queries/0/judgments_complete",
        "true or false",
    ),
    ("judgments list", set_at("queries/1/judgments", ["tls"]), "/queries/1/judgments", "array"),
    ("dangling", set_at("queries/1/judgments/gone", 2), "/queries/1/judgments/gone", "'gone'"),
    ("grade 4", set_at("queries/1/judgments/tls", 4), "/queries/1/judgments/tls", "grade 4"),
    ("grade -1", set_at("queries/1/judgments/tls", -1), "/queries/1/judgments/tls", "-1"),
    ("grade float", set_at("queries/1/judgments/tls", 1.5), "/queries/1/judgments/tls", "1.5"),
    ("grade text", set_at("queries/1/judgments/tls", "3"), "/queries/1/judgments/tls", "'3'"),
    ("grade boolean", set_at("queries/1/judgments/tls", True), "/queries/1/judgments/tls", "True"),
    (
        "same text, other vector",
        set_at("queries/3/text", "How many connections does the pool hold?"),
        "/queries/3/vector",
        "same text as /queries/0",
    ),
]


@pytest.mark.parametrize(
    ("change", "pointer", "words"), [b[1:] for b in BAD], ids=[b[0] for b in BAD]
)
def test_malformed_input_names_the_pointer_and_the_fix(
    tmp_path: Path, change: Any, pointer: str, words: str
) -> None:
    data = contract()
    change(data)
    path = write(tmp_path, data)
    with pytest.raises(InputError) as caught:
        read_all(path)
    err = caught.value
    assert (err.path, err.pointer) == (str(path), pointer)
    assert words in err.problem
    assert err.fix
    assert str(err).startswith(f"{path} at {pointer}: ")


def test_a_dangling_id_with_a_slash_is_escaped_in_the_pointer(tmp_path: Path) -> None:
    data = contract()
    data["queries"][0]["judgments"]["db/pool~1"] = 2
    with pytest.raises(InputError) as caught:
        read_all(write(tmp_path, data))
    assert caught.value.pointer == "/queries/0/judgments/db~1pool~01"


def test_a_nan_is_not_json(tmp_path: Path) -> None:
    path = tmp_path / "contract.json"
    text = json.dumps(contract()).replace("0.95, 0.05", "NaN, 0.05", 1)
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as caught:
        QilbeeImporter(path, ImportOptions())
    assert "not valid JSON" in caught.value.problem


def test_split_option_must_be_a_ragsnap_split(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="--split 'train'"):
        QilbeeImporter(write(tmp_path, contract()), ImportOptions(split="train"))

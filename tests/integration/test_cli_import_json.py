"""``ragsnap import goodbuddy|qilbee`` driven as a user would, then the whole loop:
import, ``ragsnap seed``, snapshots through the real pipeline, ``ragsnap score``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from conftest import Run, goodbuddy_fixture, run_cli, run_score, shared_data
from ragsnap.config import load_config
from ragsnap.io.inputs import load_cases
from ragsnap.io.jsonio import write_json
from ragsnap.io.schema import load_schema
from ragsnap.kb.backends.sqlite import SqliteKnowledgeBase
from ragsnap.kb.embedders import Embedder, Fingerprint, make_embedder
from ragsnap.kb.pipeline import LookupSettings, Pipeline
from ragsnap.kb.seeding import check_compatible
from ragsnap.kb.text import get_tokenizer
from ragsnap.snapshot.capture import snapshot_case


@pytest.fixture
def real() -> Path:
    """The real GoodBuddy fixture from ../shared/data (see conftest.shared_data)."""
    return shared_data("goodbuddy-synthetic-bilingual-v1.json")


PINNED = "2026-11-29T00:00:00Z"


def import_cli(cwd: Path, *args: str) -> Run:
    return run_cli("import", *args, cwd=cwd)


def files(folder: Path) -> dict[str, bytes]:
    """Every file directly in ``folder`` (temporary files included) and its bytes."""
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def snapshot_all(out: Path, embedder: Embedder, method: str | None = None) -> Path:
    """One fixture per imported case, through the real pipeline over the seeded store."""
    config = load_config(out / "ragsnap.yaml")
    tokenizer = get_tokenizer(config.kb.segmenter, config.kb.stemmer, config.kb.stop_words)
    folder = out / "fixtures"
    with SqliteKnowledgeBase(config.kb.path, create=False) as kb:
        check_compatible(kb.read_meta(), embedder.fingerprint, tokenizer.name, "kb", fix="-")
        pipeline = Pipeline(kb, embedder, tokenizer, LookupSettings())
        for case in load_cases(out / "golden-cases.json").cases:
            fixture = snapshot_case(pipeline, case, retrieved_at=PINNED, method=method)
            write_json(folder / f"{case.id}.json", fixture)
    return folder


def score(cwd: Path, out: Path) -> dict[str, Any]:
    """``ragsnap score`` of the imported cases against their fixtures: the JSON report."""
    _, report = run_score(
        out / "golden-cases.json", out / "fixtures", out, cwd=cwd, config=out / "ragsnap.yaml"
    )
    jsonschema.validate(report, load_schema("report"))
    assert (out / "report.md").read_text(encoding="utf-8").startswith("# ragsnap retrieval report")
    return report


# -- GoodBuddy: the real, external fixture -----------------------------------------


def test_real_goodbuddy_fixture_imports_with_its_counts(tmp_path: Path, real: Path) -> None:
    run = import_cli(tmp_path, "goodbuddy", str(real), "--out", "out")
    assert run.code == 0, run.err
    lines = run.out.splitlines()
    assert lines[0] == (
        "import: 15 documents (15 chunks), 16 queries, 17 judgments, 3 no-answer queries"
    )
    assert lines[1] == "wrote: out/corpus.jsonl, out/golden-cases.json, out/ragsnap.yaml"
    assert lines[2].startswith("next: ragsnap seed --config out/ragsnap.yaml")
    # graded judgments over a seedable corpus: the set is ready for a trial too
    assert lines[3] == (
        "  or compare retrieval methods on it: ragsnap trial --config out/ragsnap.yaml "
        "--cases out/golden-cases.json"
    )
    out = tmp_path / "out"
    assert sorted(files(out)) == ["corpus.jsonl", "golden-cases.json", "ragsnap.yaml"]

    source = json.loads(real.read_text(encoding="utf-8"))
    corpus = [json.loads(line) for line in (out / "corpus.jsonl").read_text().splitlines()]
    expected = [
        (chunk["id"], doc["id"], doc["title"], chunk["content"])
        for doc in source["documents"]
        for chunk in doc["chunks"]
    ]
    assert [(d["source"], d["doc_id"], d["title"], d["text"]) for d in corpus] == expected

    cases = load_cases(out / "golden-cases.json").cases
    assert [c.id for c in cases] == [q["id"] for q in source["queries"]]
    assert sum(c.no_answer for c in cases) == 3
    assert {c.language for c in cases} == {"en", "zh-CN"}
    assert {(c.split, c.category) for c in cases} == {("test", "imported")}
    texts = {d["source"]: d["text"] for d in corpus}
    for case, query in zip(cases, source["queries"], strict=True):
        assert case.query == query["query"]
        assert case.no_answer == query["noAnswer"]
        assert [(j.kind, j.target, j.grade, list(j.spans)) for j in case.judgments] == [
            ("source", j["chunkId"], j["relevance"], [s["text"] for s in j["spans"]])
            for j in query["judgments"]
        ]
        assert all(s in texts[j.target] for j in case.judgments for s in j.spans)
        if not case.no_answer:
            best = max(j.grade for j in case.judgments)
            assert case.expected_sources == tuple(
                j.target for j in case.judgments if j.grade == best
            )


def test_real_goodbuddy_import_is_byte_identical_on_a_second_run(
    tmp_path: Path, real: Path
) -> None:
    for out in ("first", "second", "second"):
        run = import_cli(tmp_path, "goodbuddy", str(real), "--out", out)
        assert run.code == 0, run.err
    assert files(tmp_path / "first") == files(tmp_path / "second")


def test_real_goodbuddy_whole_loop_scores_graded_and_span_metrics(
    tmp_path: Path, real: Path
) -> None:
    assert import_cli(tmp_path, "goodbuddy", str(real), "--out", "out").code == 0
    seeded = run_cli("seed", "--config", "out/ragsnap.yaml", cwd=tmp_path)
    assert seeded.code == 0, seeded.err
    assert seeded.out.startswith("seed: 15 added, 0 updated, 0 unchanged, 0 removed; ")
    out = tmp_path / "out"
    config = load_config(out / "ragsnap.yaml")
    snapshot_all(out, make_embedder(config.kb.embedder, config.kb.base))

    report = score(tmp_path, out)
    summary = report["summary"]
    assert (summary["cases"], summary["answerable"], summary["noAnswer"]) == (16, 13, 3)
    metrics = summary["metrics"]
    for name in ("ndcg@10", "map", "recall@10", "coverage@10", "contextPrecision"):
        assert metrics[name]["cases"] == 13, name
    assert metrics["contextRecall"]["cases"] == 13
    for case in report["cases"]:
        if case["noAnswer"]:
            assert not case["metrics"]
            continue
        values = case["metrics"]
        assert 0.0 <= values["ndcg@10"] <= 1.0
        assert values["contextPrecision"] is not None and values["contextRecall"] is not None
    # the lexical side of the pipeline finds at least the English answer of an English query
    english = next(c for c in report["cases"] if c["id"] == "query-backup-en")
    assert english["metrics"]["ndcg@10"] > 0


# -- Qilbee: a contract fixture with its own vector space ----------------------------


def contract() -> dict[str, Any]:
    """Eight documents with 4-dimensional vectors, five queries over dev and test."""
    docs = [
        ("pool", "The connection pool holds at most 20 connections.", [0.9, 0.1, 0.0, 0.1]),
        ("slow-log", "Queries slower than two seconds go to the slow log.", [0.7, 0, 0.3, 0]),
        ("tls", "TLS certificates renew every ninety days.", [0.1, 0.9, 0.1, 0.0]),
        ("tokens", "API tokens live in the encrypted settings store.", [0.0, 0.8, 0.0, 0.3]),
        ("backup", "Backups run nightly at two and are kept for a month.", [0.2, 0, 0.9, 0]),
        ("deploy", "Deployments roll out one zone at a time.", [0.0, 0.1, 0.8, 0.3]),
        ("fonts", "The interface font scales with the system setting.", [0, 0, 0.1, 0.9]),
        ("keyboard", "Every dialog can be operated with the keyboard.", [0.1, 0.1, 0, 0.8]),
    ]

    def query(
        qid: str, split: str, category: str, text: str, vector: list[float], **more: Any
    ) -> dict[str, Any]:
        return {
            "id": qid,
            "split": split,
            "category": category,
            "text": text,
            "vector": vector,
            **more,
        }

    return {
        "space": {
            "provider": "acme",
            "model": "embed-small",
            "revision": "2026-01",
            "dimensions": 4,
        },
        "documents": [{"id": i, "text": t, "vector": v} for i, t, v in docs],
        "queries": [
            query(
                "q-pool",
                "dev",
                "database",
                "How many connections does the pool hold?",
                [0.95, 0.05, 0.0, 0.05],
                judgments_complete=True,
                judgments={"pool": 3, "slow-log": 1},
            ),
            query(
                "q-tls",
                "dev",
                "security",
                "When do certificates renew?",
                [0.05, 0.95, 0.1, 0.0],
                judgments={"tls": 3, "tokens": 1, "pool": 0},
            ),
            query(
                "q-backup",
                "test",
                "ops",
                "Wann laufen die Backups?",
                [0.1, 0.0, 0.95, 0.05],
                language="de",
                judgments_complete=True,
                judgments={"deploy": 1, "backup": 2},
            ),
            query(
                "q-fonts",
                "test",
                "interface",
                "Can I make the font bigger?",
                [0.0, 0.0, 0.05, 1.0],
                judgments={"fonts": 3, "keyboard": 0},
            ),
            query(
                "q-weather",
                "test",
                "ops",
                "What is the weather tomorrow?",
                [0.5, 0.5, 0.5, 0.5],
                judgments_complete=True,
                judgments={},
            ),
        ],
    }


def write_contract(tmp_path: Path, data: Any, name: str = "contract.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    return path


def test_qilbee_whole_loop_with_the_frozen_vectors(tmp_path: Path) -> None:
    write_contract(tmp_path, contract())
    run = import_cli(tmp_path, "qilbee", "contract.json", "--out", "out")
    assert run.code == 0, run.err
    assert run.out.splitlines()[0] == (
        "import: 8 documents (8 chunks), 5 queries, 29 judgments, 1 no-answer query, 13 vectors"
    )
    out = tmp_path / "out"
    assert "embedder: {kind: frozen, path: vectors.json}" in (out / "ragsnap.yaml").read_text()

    seeded = run_cli("seed", "--config", "out/ragsnap.yaml", cwd=tmp_path)
    assert seeded.code == 0, seeded.err
    assert seeded.out.startswith("seed: 8 added, 0 updated, 0 unchanged, 0 removed; ")

    embedder = make_embedder({"kind": "frozen", "path": str(out / "vectors.json")})
    assert embedder.fingerprint == Fingerprint("frozen", "acme/embed-small", "2026-01", 4)
    fixtures = snapshot_all(out, embedder, method="vector")

    pool = json.loads((fixtures / "q-pool.json").read_text(encoding="utf-8"))
    assert pool["generator"]["embedder"] == {
        "kind": "frozen",
        "model": "acme/embed-small",
        "revision": "2026-01",
        "dimension": 4,
    }
    result = pool["lookupResult"]
    assert result["evidenceBlocks"][0]["source"] == "pool"
    assert result["evidenceBlocks"][0]["chunkId"] == "pool#0"
    attempts = result["retrievalTrace"]["attempts"]
    assert attempts and {a["method"] for a in attempts} == {"vector"}
    for case_id, nearest in (("q-tls", "tls"), ("q-backup", "backup"), ("q-fonts", "fonts")):
        fixture = json.loads((fixtures / f"{case_id}.json").read_text(encoding="utf-8"))
        assert fixture["lookupResult"]["evidenceBlocks"][0]["source"] == nearest, case_id

    report = score(tmp_path, out)
    by_id = {c["id"]: c for c in report["cases"]}
    assert by_id["q-pool"]["metrics"]["ndcg@10"] == 1.0
    for case_id in ("q-pool", "q-backup"):  # judgments_complete: every result is judged
        assert by_id[case_id]["metrics"]["coverage@10"] == 1.0
    assert by_id["q-weather"]["noAnswer"] is True
    assert by_id["q-backup"]["language"] == "de"
    assert report["groups"]["split"]["dev"]["cases"] == 2
    assert report["groups"]["split"]["test"]["cases"] == 3
    assert report["summary"]["metrics"]["ndcg@10"]["cases"] == 4
    assert report["summary"]["metrics"]["contextPrecision"]["cases"] == 0  # no spans


def test_qilbee_import_is_byte_identical_on_a_second_run(tmp_path: Path) -> None:
    write_contract(tmp_path, contract())
    for out in ("first", "second", "second"):
        assert import_cli(tmp_path, "qilbee", "contract.json", "--out", out).code == 0
    assert files(tmp_path / "first") == files(tmp_path / "second")
    assert "vectors.json" in files(tmp_path / "first")


# -- malformed input: exit 2, the file and the pointer, the earlier import untouched -----


def _dangling(data: dict[str, Any]) -> None:
    data["queries"][0]["judgments"][0]["chunkId"] = "chunk-gone"


def _inexact_span(data: dict[str, Any]) -> None:
    data["queries"][0]["judgments"][0]["spans"][0]["text"] = "twenty connections"


def _short_vector(data: dict[str, Any]) -> None:
    data["documents"][2]["vector"] = [0.1, 0.9]


def _dangling_doc(data: dict[str, Any]) -> None:
    data["queries"][1]["judgments"]["tsl"] = 3


MALFORMED = [
    ("goodbuddy", goodbuddy_fixture, _dangling, "/queries/0/judgments/0/chunkId", "chunk-gone"),
    (
        "goodbuddy",
        goodbuddy_fixture,
        _inexact_span,
        "/queries/0/judgments/0/spans/0/text",
        "verbatim",
    ),
    ("qilbee", contract, _short_vector, "/documents/2/vector", "2 numbers, not 4"),
    ("qilbee", contract, _dangling_doc, "/queries/1/judgments/tsl", "'tsl'"),
]


@pytest.mark.parametrize(
    ("fmt", "make", "change", "pointer", "words"),
    MALFORMED,
    ids=["goodbuddy-dangling", "goodbuddy-span", "qilbee-vector", "qilbee-dangling"],
)
def test_malformed_file_exits_2_and_keeps_the_earlier_import(
    tmp_path: Path, fmt: str, make: Any, change: Any, pointer: str, words: str
) -> None:
    write_contract(tmp_path, make(), "good.json")
    assert import_cli(tmp_path, fmt, "good.json", "--out", "out").code == 0
    before = files(tmp_path / "out")
    bad = make()
    change(bad)
    write_contract(tmp_path, bad, "bad.json")
    run = import_cli(tmp_path, fmt, "bad.json", "--out", "out")
    assert run.code == 2
    assert run.out == ""
    message = run.err.strip()
    assert message.startswith(f"InputError: bad.json at {pointer}: "), message
    assert words in message
    assert "Traceback" not in run.err
    assert files(tmp_path / "out") == before  # same files, same bytes, no temporary left


def test_invalid_json_names_the_line_and_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "broken.json").write_text('{"documents": [\n  {"id": 1,}\n]}\n', encoding="utf-8")
    run = import_cli(tmp_path, "goodbuddy", "broken.json", "--out", "out")
    assert run.code == 2
    assert run.err.startswith("InputError: broken.json: is not valid JSON (")
    assert "line 2" in run.err
    assert not (tmp_path / "out").exists()


def test_a_split_golden_cases_cannot_hold_is_a_usage_error(tmp_path: Path) -> None:
    write_contract(tmp_path, contract())
    run = import_cli(tmp_path, "qilbee", "contract.json", "--out", "out", "--split", "train")
    assert run.code == 2
    assert run.err.startswith("UsageError: --split 'train' is not a ragsnap split")

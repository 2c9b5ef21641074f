"""Ids with spaces, as real corpora have them, through the whole loop a user runs.

A tiny BEIR dataset whose chunk and query ids hold spaces and punctuation
(``Attention Is All You Need.pdf_chunk_25``) is imported, seeded, snapshot,
scored, exported as a TREC run and qrels, evaluated by ``ragsnap metrics``
and compared by ``ragsnap trial --runs-dir``: every step is the real command
in its own process, on a real SQLite knowledge base. Each file of the flow
holds the id's ragsnap form, and ``ids.tsv`` maps every form back. The other
formats' importers take such ids the same way; two ids with one ragsnap id
stop the import.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conftest import Run, run_cli
from ragsnap.importers.ids import CASE, SOURCE, ragsnap_id, read_id_map

PAPER = "Attention Is All You Need.pdf_chunk_25"
BERT = "BERT: Pre-training (2019).pdf_chunk_3"
RESNET = "resnet-chunk-1"  # usable as it is: kept byte for byte
CORPUS = [
    {
        "_id": PAPER,
        "title": "Attention Is All You Need",
        "text": "The Transformer relies entirely on self-attention to draw global "
        "dependencies between input and output, without recurrence.",
    },
    {
        "_id": BERT,
        "title": "BERT",
        "text": "BERT pre-trains deep bidirectional representations with a masked "
        "language model objective on unlabeled text.",
    },
    {
        "_id": RESNET,
        "title": "Deep residual learning",
        "text": "Residual connections let very deep convolutional networks train well.",
    },
]
ATTENTION, MASKED = "what is attention?", "how is BERT pre-trained"
QUERIES = [
    {"_id": ATTENTION, "text": "transformer self-attention without recurrence"},
    {"_id": MASKED, "text": "masked language model pre-training of BERT"},
    {"_id": "q-resnet", "text": "residual connections for deep convolutional networks"},
]
QRELS = [(ATTENTION, PAPER, 2), (MASKED, BERT, 1), ("q-resnet", RESNET, 1), ("q-resnet", PAPER, 0)]

#: the ragsnap forms (pinned: the same on every machine)
FORMS = {
    PAPER: "Attention_Is_All_You_Need.pdf_chunk_25--654b7f6fbffb",
    BERT: ragsnap_id(BERT, SOURCE),
    ATTENTION: "what_is_attention--e02ec70a6f92",
    MASKED: ragsnap_id(MASKED, CASE),
}


def beir(root: Path, corpus: list[dict[str, Any]] = CORPUS) -> Path:
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in corpus))
    (root / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in QUERIES))
    rows = "".join(f"{q}\t{d}\t{s}\n" for q, d, s in QRELS)
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + rows)
    return root


def ok(run: Run) -> Run:
    assert run.code == 0, run.out + run.err
    return run


def score(root: Path) -> Run:
    """``ragsnap score`` of ``out/fixtures`` against ``out/golden-cases.json``, with the
    settings they were captured with (``out/ragsnap.yaml``); it must pass."""
    return ok(
        run_cli(
            "score",
            "--config",
            "out/ragsnap.yaml",
            "--cases",
            "out/golden-cases.json",
            "--fixtures",
            "out/fixtures",
            "--json-report",
            "out/report.json",
            "--markdown-report",
            "out/report.md",
            cwd=root,
        )
    )


def trec_ids(path: Path, columns: int) -> list[tuple[str, str]]:
    """(query, document) of each line of a TREC run (6 columns) or qrels (4)."""
    rows = [line.split(" ") for line in path.read_text(encoding="utf-8").splitlines()]
    assert rows and all(len(row) == columns for row in rows), rows
    return [(row[0], row[2]) for row in rows]


@pytest.mark.slow
def test_ids_with_spaces_go_through_import_seed_snapshot_score_export_metrics_trial(
    tmp_path: Path,
) -> None:
    beir(tmp_path / "ds")
    out = tmp_path / "out"

    # import: the forms everywhere, the originals kept
    run = ok(run_cli("import", "beir", "ds", "--out", "out", cwd=tmp_path))
    assert "ids: 4 in their ragsnap form" in run.out
    assert (
        "wrote: out/corpus.jsonl, out/golden-cases.json, out/ids.tsv, out/ragsnap.yaml" in run.out
    )
    lines = [json.loads(x) for x in (out / "corpus.jsonl").read_text().splitlines()]
    assert [(d["source"], d.get("original_source")) for d in lines] == [
        (FORMS[PAPER], PAPER),
        (FORMS[BERT], BERT),
        (RESNET, None),
    ]
    cases = json.loads((out / "golden-cases.json").read_text())["cases"]
    assert [(c["id"], c.get("tags"), c["expectedSources"]) for c in cases] == [
        (FORMS[ATTENTION], [f"original-id:{ATTENTION}"], [FORMS[PAPER]]),
        (FORMS[MASKED], [f"original-id:{MASKED}"], [FORMS[BERT]]),
        ("q-resnet", None, [RESNET]),
    ]
    id_map = read_id_map(out / "ids.tsv")
    assert id_map == {
        "source": {FORMS[PAPER]: PAPER, FORMS[BERT]: BERT},
        "doc_id": {},
        "case": {FORMS[ATTENTION]: ATTENTION, FORMS[MASKED]: MASKED},
    }

    # seed, from another folder, through the written config
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    seeded = ok(run_cli("seed", "--config", "../out/ragsnap.yaml", cwd=elsewhere))
    assert f"added: {FORMS[PAPER]}, {FORMS[BERT]}, {RESNET}" in seeded.out

    # snapshot: one fixture per case, named by its ragsnap id
    config = ("--config", "out/ragsnap.yaml", "--cases", "out/golden-cases.json")
    ok(
        run_cli(
            "snapshot",
            *config,
            "--fixtures",
            "out/fixtures",
            "--retrieved-at",
            "2026-01-01T00:00:00Z",
            "--skip-eval",
            cwd=tmp_path,
        )
    )
    fixtures = out / "fixtures"
    assert sorted(p.name for p in fixtures.iterdir()) == sorted(
        ["_manifest.json", f"{FORMS[ATTENTION]}.json", f"{FORMS[MASKED]}.json", "q-resnet.json"]
    )
    fixture = json.loads((fixtures / f"{FORMS[ATTENTION]}.json").read_text(encoding="utf-8"))
    top = fixture["lookupResult"]["evidenceBlocks"][0]
    assert (top["source"], top["chunkId"]) == (FORMS[PAPER], f"{FORMS[PAPER]}#0")

    # score: every case found its document first
    score(tmp_path)
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert {c["id"]: c["firstExpectedRank"] for c in report["cases"]} == {
        FORMS[ATTENTION]: 1,
        FORMS[MASKED]: 1,
        "q-resnet": 1,
    }
    assert report["summary"]["metrics"]["ndcg@10"]["mean"] == 1.0

    # export-run: TREC files hold the forms (no spaces), and ids.tsv maps them back
    ok(
        run_cli(
            "export-run",
            "--cases",
            "out/golden-cases.json",
            "--fixtures",
            "out/fixtures",
            "--out",
            "out/run.trec",
            "--qrels-out",
            "out/qrels.txt",
            cwd=tmp_path,
        )
    )
    judged = trec_ids(out / "qrels.txt", 4)
    pairs = [
        (FORMS[ATTENTION], FORMS[PAPER]),
        (FORMS[MASKED], FORMS[BERT]),
        ("q-resnet", RESNET),
        ("q-resnet", FORMS[PAPER]),
    ]
    assert judged == sorted(pairs)  # by query, then document
    ranked = trec_ids(out / "run.trec", 6)
    assert (FORMS[ATTENTION], FORMS[PAPER]) in ranked
    original = {**id_map["case"], **id_map["source"]}
    assert {(original.get(q, q), original.get(d, d)) for q, d in judged} == {
        (q, d) for q, d, _ in QRELS
    }

    # metrics: per query, by ragsnap id
    evaluated = ok(
        run_cli(
            "metrics",
            "--qrels",
            "out/qrels.txt",
            "--run",
            "out/run.trec",
            "-q",
            "-m",
            "mrr@10",
            cwd=tmp_path,
        )
    )
    per_query = {
        cells[1]: float(cells[2])
        for cells in (line.split("\t") for line in evaluated.out.splitlines())
        if cells[0].strip() == "mrr@10" and cells[1] != "all"
    }
    assert per_query == {FORMS[ATTENTION]: 1.0, FORMS[MASKED]: 1.0, "q-resnet": 1.0}

    # trial --runs-dir: its runs and qrels hold the forms too, and `metrics` reads them
    ok(
        run_cli(
            "trial",
            *config,
            "--methods",
            "lexical,hybrid",
            "--runs-dir",
            "out/runs",
            "--json-report",
            "out/trial.json",
            "--markdown-report",
            "out/trial.md",
            cwd=tmp_path,
        )
    )
    trial = json.loads((out / "trial.json").read_text(encoding="utf-8"))
    assert trec_ids(out / "runs" / "qrels.txt", 4) == judged
    for method in ("lexical", "hybrid"):
        queries = {q for q, _ in trec_ids(out / "runs" / f"{method}.trec", 6)}
        assert queries == {FORMS[ATTENTION], FORMS[MASKED], "q-resnet"}
        run = ok(
            run_cli(
                "metrics",
                "--qrels",
                "out/runs/qrels.txt",
                "--run",
                f"out/runs/{method}.trec",
                "-m",
                "map",
                cwd=tmp_path,
            )
        )
        value = float(run.out.splitlines()[0].split("\t")[2])
        summary = trial["methods"][method]["summary"]["metrics"]["map"]["mean"]
        assert value == pytest.approx(summary, abs=1e-4)


def test_ids_that_would_share_a_ragsnap_id_stop_the_import(tmp_path: Path) -> None:
    """``Attention_Is_All_You_Need.pdf_chunk_25--654b7f6fbffb`` is a usable id of its own."""
    clash = {"_id": FORMS[PAPER], "text": "Another document that happens to have this id."}
    beir(tmp_path / "ds", [*CORPUS, clash])
    run = run_cli("import", "beir", "ds", "--out", "out", cwd=tmp_path)
    assert run.code == 2, run.out + run.err
    assert run.err.strip() == (
        f"InputError: ds/corpus.jsonl line 4: document id '{FORMS[PAPER]}' and the one at "
        f"ds/corpus.jsonl line 1 ('{PAPER}') would both be '{FORMS[PAPER]}' in ragsnap; "
        "rename one of them, in every file that names it"
    )
    assert list((tmp_path / "out").iterdir()) == []  # nothing written, no temporary file


def test_control_characters_stay_an_error_naming_the_line(tmp_path: Path) -> None:
    beir(tmp_path / "ds", [*CORPUS, {"_id": "bad\u0000id", "text": "x"}])
    run = run_cli("import", "beir", "ds", "--out", "out", cwd=tmp_path)
    assert run.code == 2, run.out + run.err
    assert run.err.strip() == (
        "InputError: ds/corpus.jsonl at line 4: document id 'bad\\x00id' holds U+0000, a "
        "control character, at position 4; remove it, in the corpus and in the qrels"
    )


# -- the other formats take such ids the same way ------------------------------------------


def goodbuddy(root: Path) -> list[str]:
    fixture = {
        "version": 1,
        "documents": [
            {
                "id": "Attention Is All You Need.pdf",
                "chunks": [{"id": PAPER, "content": "The Transformer relies on self-attention."}],
            },
            {"id": "doc-resnet", "chunks": [{"id": RESNET, "content": "Residual connections."}]},
        ],
        "queries": [
            {
                "id": ATTENTION,
                "query": "what does the transformer rely on",
                "judgments": [
                    {"chunkId": PAPER, "relevance": 3, "spans": [{"text": "self-attention"}]}
                ],
            },
            {
                "id": "q-resnet",
                "query": "residual",
                "judgments": [{"chunkId": RESNET, "relevance": 2}],
            },
        ],
    }
    (root / "gb.json").write_text(json.dumps(fixture), encoding="utf-8")
    return ["goodbuddy", "gb.json"]


def trec(root: Path) -> list[str]:
    (root / "docs.sgml").write_text(
        "<DOC><DOCNO> LA#1/é </DOCNO><TEXT>Self-attention replaces recurrence.</TEXT></DOC>\n"
        "<DOC><DOCNO>LA-2</DOCNO><TEXT>Residual connections.</TEXT></DOC>\n",
        encoding="utf-8",
    )
    (root / "topics.txt").write_text("q#1 self-attention\nq2 residual\n", encoding="utf-8")
    (root / "qrels.txt").write_text("q#1 0 LA#1/é 2\nq2 0 LA-2 1\n", encoding="utf-8")
    return ["trec", "docs.sgml", "--topics", "topics.txt", "--qrels", "qrels.txt"]


def smart(root: Path) -> list[str]:
    (root / "docs").write_text(
        ".I a#1\n.W\nself-attention replaces recurrence\n.I 2\n.W\nresidual connections\n",
        encoding="utf-8",
    )
    (root / "queries").write_text(".I 1\n.W\nself-attention\n.I 2\n.W\nresidual\n")
    (root / "qrels").write_text("1 a#1 1\n2 2 2\n")
    return ["smart", "docs", "--topics", "queries", "--qrels", "qrels"]


def qilbee(root: Path) -> list[str]:
    contract = {
        "space": {"provider": "acme", "model": "tiny", "revision": "1", "dimensions": 2},
        "documents": [
            {"id": PAPER, "text": "Self-attention replaces recurrence.", "vector": [1, 0]},
            {"id": RESNET, "text": "Residual connections.", "vector": [0, 1]},
        ],
        "queries": [
            {"id": ATTENTION, "text": "self-attention", "vector": [1, 0], "judgments": {PAPER: 3}},
            {"id": "q-resnet", "text": "residual", "vector": [0, 1], "judgments": {RESNET: 2}},
        ],
    }
    (root / "contract.json").write_text(json.dumps(contract), encoding="utf-8")
    return ["qilbee", "contract.json"]


@pytest.mark.parametrize(
    ("write", "mapped"),
    [
        (goodbuddy, {PAPER, ATTENTION, "Attention Is All You Need.pdf"}),
        (trec, {"LA#1/é", "q#1"}),
        (smart, {"a#1"}),
        (qilbee, {PAPER, ATTENTION}),
    ],
)
def test_every_format_imports_such_ids_and_the_loop_scores_them(
    tmp_path: Path, write: Any, mapped: set[str]
) -> None:
    args = write(tmp_path)
    ok(run_cli("import", *args, "--out", "out", cwd=tmp_path))
    out = tmp_path / "out"
    id_map = read_id_map(out / "ids.tsv")
    assert {original for kind in id_map.values() for original in kind.values()} == mapped
    ok(run_cli("seed", "--config", "out/ragsnap.yaml", cwd=tmp_path))
    ok(
        run_cli(
            "snapshot",
            "--config",
            "out/ragsnap.yaml",
            "--cases",
            "out/golden-cases.json",
            "--fixtures",
            "out/fixtures",
            "--skip-eval",
            cwd=tmp_path,
        )
    )
    scored = score(tmp_path)
    assert "2 cases: 2 passed" in scored.out

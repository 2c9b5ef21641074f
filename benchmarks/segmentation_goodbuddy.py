#!/usr/bin/env python3
"""Compare the ``bigram`` and ``jieba`` Chinese segmenters on the GoodBuddy bilingual set.

The data set (``../shared/data/goodbuddy-synthetic-bilingual-v1.json``, CC0) has
15 one-chunk documents in English or Simplified Chinese and 16 queries in both
languages with graded chunk judgments (1-3); three queries have no answer.
Many judgments are cross-lingual (a Chinese query whose best chunk is English),
which no lexical tokenizer can bridge; the segmenter only matters where a
Chinese query meets a Chinese chunk.

Steps:

1. Write every chunk as a seed document (``source`` = the document id, or the
   chunk id for a multi-chunk document, so ragsnap's chunk id is
   ``<source>#0``; ``doc_id`` and ``title`` from the file, plus any category,
   breadcrumb or scope fields it has) into a temporary folder.
2. Import the folder with ``ragsnap.kb.seeding.seed`` into two temporary SQLite
   knowledge bases, one per segmenter, both with ``HashingEmbedder()`` (which
   always uses bigram features, so the vector side is identical) and chunk
   settings large enough that every document stays one chunk.
3. For every answerable query run ``Pipeline.lookup(top_k=10)`` with
   ``lexical`` and ``hybrid+rerank`` (and ``vector`` once, as the
   segmenter-independent reference) with ``LookupSettings(min_score=0.0)`` so
   that no threshold hides a ranking, L0 hints off when no document has a
   category; map ragsnap's chunk ids back to the file's and compute recall@5,
   recall@10, mrr@10 and ndcg@10 with ``ragsnap.ir.metrics`` per language and
   overall.
4. With the default ``LookupSettings()``, count the no-answer queries that
   still return evidence (and, for balance, the answerable ones that return a
   relevant chunk).
5. For each Chinese query print both segmenters' tokens, the tokens each
   relevant chunk shares with the query and the rank of the first relevant
   chunk, which is where the two differ.

Usage::

    python benchmarks/segmentation_goodbuddy.py [--data PATH] [--keep]

Offline, a few seconds (most of it jieba loading its dictionary).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from _common import add_data_option, cjk_share
from ragsnap.ir.metrics import evaluate, parse_measures, rankings_from_dicts
from ragsnap.kb.backends.sqlite import SqliteKnowledgeBase
from ragsnap.kb.corpus import ChunkSettings, load_seed_docs
from ragsnap.kb.embedders import HashingEmbedder
from ragsnap.kb.pipeline import LookupSettings, Pipeline
from ragsnap.kb.seeding import seed
from ragsnap.kb.text import Tokenizer, get_tokenizer

SEGMENTERS = ("bigram", "jieba")
METHODS = ("lexical", "hybrid+rerank")
REFERENCE_METHOD = "vector"  # the hashing embedder ignores the segmenter
MEASURES = parse_measures(["recall@5", "recall@10", "mrr@10", "ndcg@10"])
TOP_K = 10
LANGUAGES = ("zh", "en")
#: Document fields copied into the seed frontmatter when the file has them.
FRONTMATTER_FIELDS = {
    "category": "category",
    "breadcrumb": "breadcrumb",
    "kb_scope": "kb_scope",
    "kbScope": "kb_scope",
    "scope": "kb_scope",
}


# --------------------------------------------------------------------------- data


@dataclass(frozen=True, slots=True)
class Chunk:
    chunk_id: str
    doc_id: str
    title: str | None
    text: str
    fields: dict[str, str]

    @property
    def language(self) -> str:
        return "zh" if cjk_share(self.text) > 0.2 else "en"


@dataclass(frozen=True, slots=True)
class Query:
    query_id: str
    language: str  # "zh" or "en"
    text: str
    no_answer: bool
    grades: dict[str, int]  # file chunk id -> grade


def _language(tag: str) -> str:
    base = tag.lower().split("-")[0]
    if base not in LANGUAGES:
        raise SystemExit(f"unexpected query language {tag!r}")
    return base


def load_set(path: Path) -> tuple[list[Chunk], list[Query]]:
    """The file's chunks and queries (judgments with grade >= 1 kept)."""
    data = json.loads(path.read_text("utf-8"))
    chunks: list[Chunk] = []
    for doc in data["documents"]:
        fields = {
            target: str(doc[key])
            for key, target in FRONTMATTER_FIELDS.items()
            if isinstance(doc.get(key), str) and doc[key].strip()
        }
        for chunk in doc["chunks"]:
            chunks.append(Chunk(chunk["id"], doc["id"], doc.get("title"), chunk["content"], fields))
    queries = [
        Query(
            q["id"],
            _language(q["language"]),
            q["query"],
            bool(q.get("noAnswer")),
            {j["chunkId"]: int(j["relevance"]) for j in q.get("judgments", [])},
        )
        for q in data["queries"]
    ]
    return chunks, queries


def write_seed_docs(chunks: Sequence[Chunk], folder: Path) -> dict[str, str]:
    """One seed document per chunk; return ragsnap chunk id -> the file's chunk id."""
    per_doc: dict[str, int] = {}
    for chunk in chunks:
        per_doc[chunk.doc_id] = per_doc.get(chunk.doc_id, 0) + 1
    folder.mkdir(parents=True, exist_ok=True)
    mapping: dict[str, str] = {}
    for chunk in chunks:
        source = chunk.doc_id if per_doc[chunk.doc_id] == 1 else chunk.chunk_id
        header: dict[str, Any] = {"source": source, "doc_id": chunk.doc_id}
        if chunk.title:
            header["title"] = chunk.title
        header.update(chunk.fields)
        front = yaml.safe_dump(header, allow_unicode=True, sort_keys=False)
        (folder / f"{source}.md").write_text(f"---\n{front}---\n{chunk.text}\n", "utf-8")
        mapping[f"{source}#0"] = chunk.chunk_id
    return mapping


# --------------------------------------------------------------------------- runs


@dataclass
class Store:
    segmenter: str
    tokenizer: Tokenizer
    kb: SqliteKnowledgeBase
    embedder: HashingEmbedder

    def pipeline(self, settings: LookupSettings) -> Pipeline:
        return Pipeline(self.kb, self.embedder, self.tokenizer, settings)


def build_store(segmenter: str, seed_dir: Path, db: Path, settings: ChunkSettings) -> Store:
    tokenizer = get_tokenizer(segmenter)
    embedder = HashingEmbedder()
    kb = SqliteKnowledgeBase(db)
    docs = load_seed_docs(seed_dir)
    seed(kb, docs, embedder, tokenizer, settings)
    split = {s: d.chunk_count for s, d in kb.documents().items() if d.chunk_count != 1}
    if split:
        raise SystemExit(f"documents not kept as one chunk: {split}")
    return Store(segmenter, tokenizer, kb, embedder)


def ranked_ids(result: Mapping[str, Any], mapping: Mapping[str, str]) -> list[str]:
    """The file's chunk ids of a lookup's evidence blocks, in rank order."""
    return [mapping.get(b["chunkId"], b["chunkId"]) for b in result["evidenceBlocks"]]


def unthresholded(hints: bool) -> LookupSettings:
    """Lookup settings whose score floors are all 0, so no threshold hides a ranking
    (``relative_score`` only where this version of ragsnap has it)."""
    floors: dict[str, Any] = {"min_score": 0.0, "relative_score": 0.0}
    known = {f.name for f in dataclasses.fields(LookupSettings)}
    return LookupSettings(hints=hints, **{k: v for k, v in floors.items() if k in known})


#: (segmenter, method) -> query id -> the file's chunk ids in rank order
Runs = dict[tuple[str, str], dict[str, list[str]]]
#: (segmenter, method) -> query id -> chunk id -> evidence score
Scores = dict[tuple[str, str], dict[str, dict[str, float]]]


def run(
    store: Store,
    queries: Sequence[Query],
    method: str,
    hints: bool,
    mapping: Mapping[str, str],
    scores: dict[str, dict[str, float]] | None = None,
) -> dict[str, list[str]]:
    """Ranked file chunk ids per query; fills ``scores`` with each block's score."""
    pipeline = store.pipeline(unthresholded(hints))
    out: dict[str, list[str]] = {}
    for q in queries:
        result = pipeline.lookup(q.text, top_k=TOP_K, method=method, record_latency=False)
        # every candidate the method ranked must come back (up to top_k): nothing filtered
        ranked = result["rerankTrace"]["after"]
        if len(result["evidenceBlocks"]) != min(TOP_K, len(ranked)):
            raise SystemExit(f"{q.query_id} {method}: a score floor still drops candidates")
        out[q.query_id] = ranked_ids(result, mapping)
        if scores is not None:
            scores[q.query_id] = {
                mapping.get(b["chunkId"], b["chunkId"]): float(b["score"])
                for b in result["evidenceBlocks"]
            }
    return out


def measure(queries: Sequence[Query], ranking: Mapping[str, list[str]]) -> dict[str, float]:
    qrels = {q.query_id: q.grades for q in queries}
    rankings = rankings_from_dicts(qrels, {q: ranking.get(q, []) for q in qrels})
    values = evaluate(rankings, MEASURES)
    return {str(m): float(v.mean()) if len(v) else float("nan") for m, v in values.items()}


def first_relevant(query: Query, ranking: Sequence[str]) -> int | None:
    for rank, chunk_id in enumerate(ranking, 1):
        if query.grades.get(chunk_id, 0) >= 1:
            return rank
    return None


def _rank(value: int | None) -> str:
    return "-" if value is None else str(value)


# --------------------------------------------------------------------------- report


def print_table(
    runs: Mapping[tuple[str, str], Mapping[str, list[str]]], answerable: Sequence[Query]
) -> dict[tuple[str, str, str], dict[str, float]]:
    groups = {lang: [q for q in answerable if q.language == lang] for lang in LANGUAGES}
    groups["all"] = list(answerable)
    names = [str(m) for m in MEASURES]
    header = f"| {'segmenter':<9} | {'method':<13} | {'lang':<4} | {'n':>2} | " + " | ".join(
        f"{n:>9}" for n in names
    )
    header += " |"
    print(header)
    print("".join(ch if ch == "|" else "-" for ch in header))
    table: dict[tuple[str, str, str], dict[str, float]] = {}
    for (segmenter, method), ranking in runs.items():
        for lang, group in groups.items():
            row = measure(group, ranking)
            table[(segmenter, method, lang)] = row
            cells = " | ".join(f"{row[n]:>9.3f}" for n in names)
            print(f"| {segmenter:<9} | {method:<13} | {lang:<4} | {len(group):>2} | {cells} |")
    return table


def print_deltas(table: Mapping[tuple[str, str, str], dict[str, float]]) -> None:
    print("\njieba - bigram (positive: jieba retrieves better)")
    for method in METHODS:
        for lang in (*LANGUAGES, "all"):
            a, b = table[("jieba", method, lang)], table[("bigram", method, lang)]
            cells = "  ".join(f"{m!s} {a[str(m)] - b[str(m)]:+.3f}" for m in MEASURES)
            print(f"  {method:<13} {lang:<4} {cells}")


def print_pairs(answerable: Sequence[Query], chunks: Mapping[str, Chunk]) -> None:
    pairs: dict[str, int] = {}
    for q in answerable:
        for chunk_id, grade in q.grades.items():
            if grade >= 1:
                key = f"{q.language} query -> {chunks[chunk_id].language} chunk"
                pairs[key] = pairs.get(key, 0) + 1
    listed = ", ".join(f"{k}: {v}" for k, v in sorted(pairs.items()))
    print(f"Relevant judgments by language pair: {listed}")


def print_no_answer(
    stores: Sequence[Store],
    queries: Sequence[Query],
    mapping: Mapping[str, str],
) -> None:
    defaults = LookupSettings()
    no_answer = [q for q in queries if q.no_answer]
    answerable = [q for q in queries if not q.no_answer]
    knobs = ("top_k", "min_score", "relative_score", "sufficient_score")
    shown = ", ".join(f"{k} {getattr(defaults, k)}" for k in knobs if hasattr(defaults, k))
    print(f"\nDefault LookupSettings() ({shown}, method as named):")
    for store in stores:
        pipeline = store.pipeline(defaults)
        for method in METHODS:
            returned: list[str] = []
            for q in no_answer:
                result = pipeline.lookup(q.text, method=method, record_latency=False)
                blocks = result["evidenceBlocks"]
                if blocks:
                    status = result["retrievalTrace"]["evidenceStatus"]
                    top = blocks[0]
                    returned.append(
                        f"{q.query_id} -> {len(blocks)} blocks, top "
                        f"{mapping.get(top['chunkId'], top['chunkId'])} {top['score']:.3f} {status}"
                    )
            found: list[str] = []
            for q in answerable:
                result = pipeline.lookup(q.text, method=method, record_latency=False)
                rank = first_relevant(q, ranked_ids(result, mapping))
                if rank is not None:
                    found.append(f"{q.query_id}@{rank}")
            print(
                f"  {store.segmenter:<6} {method:<13} no-answer queries with evidence: "
                f"{len(returned)}/{len(no_answer)}; answerable queries with a relevant "
                f"block: {len(found)}/{len(answerable)}"
            )
            for line in returned:
                print(f"      no-answer {line}")
            print(f"      relevant found (query@rank): {' '.join(found) or '-'}")


def print_queries(
    stores: Sequence[Store],
    runs: Runs,
    scores: Scores,
    queries: Sequence[Query],
    chunks: Mapping[str, Chunk],
) -> None:
    print("\nFirst relevant rank per query (top 10; '-' = none), bigram/jieba:")
    print(f"  {'query':<24} {'lang':<4} " + " ".join(f"{m:>13}" for m in METHODS))
    for q in queries:
        cells = []
        for method in METHODS:
            b = first_relevant(q, runs[("bigram", method)][q.query_id])
            j = first_relevant(q, runs[("jieba", method)][q.query_id])
            mark = "*" if b != j else " "
            cells.append(f"{_rank(b):>5} / {_rank(j):<4}{mark}")
        print(f"  {q.query_id:<24} {q.language:<4} " + " ".join(f"{c:>13}" for c in cells))
    print("  (* = the segmenters differ)")

    print(
        "\nChinese queries: tokens, what each relevant chunk shares, its rank "
        "(evidence score: lexical = IDF-weighted share of query tokens, hybrid+rerank = rerank)"
    )
    for q in queries:
        if q.language != "zh":
            continue
        print(f"\n{q.query_id}  {q.text}")
        for store in stores:
            tokens = store.tokenizer.tokens(q.text)
            print(f"  {store.segmenter:<6} tokens ({len(tokens)}): {' '.join(tokens)}")
        for chunk_id, grade in sorted(q.grades.items(), key=lambda kv: (-kv[1], kv[0])):
            chunk = chunks[chunk_id]
            print(f"  relevant {chunk_id} (grade {grade}, {chunk.language}): {chunk.text}")
            for store in stores:
                have = set(store.tokenizer.tokens(chunk.text))
                shared = [t for t in dict.fromkeys(store.tokenizer.tokens(q.text)) if t in have]
                ranks = ", ".join(
                    _placed(runs, scores, (store.segmenter, m), q.query_id, chunk_id)
                    for m in METHODS
                )
                print(f"    {store.segmenter:<6} shares [{' '.join(shared)}]; rank {ranks}")
        for store in stores:
            firsts = ", ".join(
                f"{m} {_rank(first_relevant(q, runs[(store.segmenter, m)][q.query_id]))}"
                for m in METHODS
            )
            top = runs[(store.segmenter, "lexical")][q.query_id][:3]
            print(
                f"  {store.segmenter:<6} first relevant: {firsts}; lexical top 3: "
                f"{', '.join(top) or '(nothing matched)'}"
            )


def _placed(runs: Runs, scores: Scores, key: tuple[str, str], query: str, chunk_id: str) -> str:
    """``lexical 1 (0.412)``: a chunk's rank and evidence score in one run."""
    ranking = runs[key][query]
    if chunk_id not in ranking:
        return f"{key[1]} -"
    return f"{key[1]} {ranking.index(chunk_id) + 1} ({scores[key][query][chunk_id]:.3f})"


# --------------------------------------------------------------------------- main


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Command-line options; every help states its default."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_data_option(parser)
    parser.add_argument(
        "--keep",
        action="store_true",
        help="keep the temporary seed docs and knowledge bases (default: delete them)",
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    start = time.perf_counter()
    chunks, queries = load_set(args.data)
    by_id = {c.chunk_id: c for c in chunks}
    unknown = {c for q in queries for c in q.grades if c not in by_id}
    if unknown:
        raise SystemExit(f"judgments name unknown chunks: {sorted(unknown)}")
    answerable = [q for q in queries if not q.no_answer and any(q.grades.values())]
    hints = any("category" in c.fields for c in chunks)
    chunk_settings = ChunkSettings(max_chars=max(len(c.text) for c in chunks) + 1000)

    workdir = Path(tempfile.mkdtemp(prefix="ragsnap-segmentation-"))
    stores: list[Store] = []
    try:
        mapping = write_seed_docs(chunks, workdir / "seed-docs")
        for segmenter in SEGMENTERS:
            db = workdir / f"{segmenter}.sqlite"
            stores.append(build_store(segmenter, workdir / "seed-docs", db, chunk_settings))
        runs: Runs = {}
        run_scores: Scores = {}
        for store in stores:
            for method in METHODS:
                key = (store.segmenter, method)
                run_scores[key] = {}
                runs[key] = run(store, answerable, method, hints, mapping, run_scores[key])
        reference = run(stores[0], answerable, REFERENCE_METHOD, hints, mapping)

        per_language = ", ".join(
            f"{sum(q.language == lang for q in answerable)} {lang}" for lang in LANGUAGES
        )
        print(
            f"GoodBuddy {args.data.name}: {len(chunks)} chunks, {len(queries)} queries "
            f"({len(answerable)} answerable: {per_language}; "
            f"{sum(q.no_answer for q in queries)} no-answer)"
        )
        print(
            f"Lookup: top_k {TOP_K}, score floors 0, L0 hints {'on' if hints else 'off'}, "
            f"HashingEmbedder(), {chunk_settings.fingerprint()}"
        )
        print_pairs(answerable, by_id)
        print()
        table = print_table(runs, answerable)
        print(f"\nReference, {REFERENCE_METHOD} only (identical for both segmenters):")
        print_table({("either", REFERENCE_METHOD): reference}, answerable)
        print_deltas(table)
        print_no_answer(stores, queries, mapping)
        print_queries(stores, runs, run_scores, answerable, by_id)
    finally:
        for store in stores:
            store.kb.close()
        if args.keep:
            print(f"\nSeed docs and knowledge bases kept in {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    print(f"\nTotal {time.perf_counter() - start:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

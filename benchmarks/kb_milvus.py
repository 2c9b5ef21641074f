#!/usr/bin/env python3
"""Benchmark the Milvus Lite backend against the embedded SQLite knowledge base.

Both stores are built from the same generated corpus (kb_embedded's generator,
default 10,000 chunks) and queried with the same lookups in the same run, so
every Milvus number comes with its embedded counterpart and the ratio
milvus / embedded. Target, at 10,000 chunks: Milvus Lite hybrid+rerank lookup
p95 under ``RERANK_TARGET_MS``. The ratios have no target.

Steps, per size:

1. Generate the corpus with ``kb_embedded.generate`` (same seed, same
   documents as kb_embedded at the same size: five chunks each, ~90% in
   kb_scope ``bench``, ~4% Chinese) and parse it once with ``load_seed_docs``
   (timed on its own; both imports use the parsed list).
2. Import into each store through the real path: open a new store (timed
   apart: a new Milvus Lite file starts its gRPC server and creates the
   collections), then ``seed(kb, docs, embedder, tokenizer, ChunkSettings())``
   with ``make_embedder({"kind": "hashing"})`` and ``get_tokenizer("bigram")``,
   both wrapped to time their share. The stores are
   ``SqliteKnowledgeBase(path)`` and ``MilvusKnowledgeBase(uri, create=True,
   analyzer=--analyzer)``. After closing, the Milvus Lite server is released,
   so the store is reopened cold, as a new lookup process would open it.
3. Reopen both stores cold (timed), then time one first lookup on each
   (hybrid+rerank, not in the percentiles): it loads the indexes, the L0 hint
   index and, for Milvus, ragsnap's document frequencies.
4. Queries (``--warmup`` untimed, then ``--queries`` timed, the same list for
   every side): kb_embedded's 3-8 word queries. Each side is
   ``Pipeline(kb, embedder, tokenizer, LookupSettings()).lookup(q,
   kb_scope="bench", top_k=5, method=m)`` for m in lexical, vector and
   hybrid+rerank on each store: a fresh ``Pipeline`` and its warm-up, then
   every query timed one at a time, for ``--rounds`` rounds with the order of
   the sides rotating. Percentiles are over the timings of all rounds.
5. Memory: peak RSS (``VmHWM``) of this process during each seed and during
   the timed rounds (process-wide: the Milvus Lite server runs in this
   process), and of one lookup process per store (``--one BACKEND``: a fresh
   interpreter that opens the store, makes the first lookup, then every
   warm-up and timed query once with each method), which also times its open
   and first lookup apart from this process's warm imports.
6. Print the tables, PASS/FAIL and the ratios; with ``--profile`` or when the
   target is missed, where a Milvus lookup's time goes: per ``kb`` call and
   per Milvus Lite RPC (which runs in this process, on the server's threads),
   then cProfile of the client and of the server handlers.

Usage::

    python benchmarks/kb_milvus.py [--chunks 10000] [--queries 100] [--warmup 10]
                                   [--rounds 3] [--analyzer standard] [--seed N]
                                   [--workdir DIR] [--keep] [--profile]

With ``--workdir`` the corpora and both stores are built there (or reused when
they were built there with the same settings; the import is then not timed)
and never deleted; otherwise everything goes to a fresh temporary folder that
is deleted at the end unless ``--keep``.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import functools
import gc
import json
import platform
import pstats
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

import ragsnap
from _common import (
    add_folder_options,
    cpu_model,
    parse_sizes,
    peak_rss_mb,
    version,
    work_folder,
)
from kb_embedded import (
    DEFAULT_SEED,
    GENERATOR_VERSION,
    SCOPE,
    TOP_K,
    Corpus,
    Latency,
    TimedEmbedder,
    TimedTokenizer,
    build_vocabulary,
    generate,
    make_queries,
    reset_peak_rss,
    time_each,
    write_corpus,
)
from ragsnap.kb.backends import KnowledgeBase
from ragsnap.kb.backends.sqlite import SqliteKnowledgeBase
from ragsnap.kb.corpus import ChunkSettings, load_seed_docs
from ragsnap.kb.embedders import make_embedder
from ragsnap.kb.pipeline import LookupSettings, Pipeline
from ragsnap.kb.seeding import seed
from ragsnap.kb.text import get_tokenizer

RERANK_TARGET_MS = 500.0
TARGET_SIZE = 10_000
METHODS = ("lexical", "vector", "hybrid+rerank")
BACKENDS = ("embedded", "milvus")
HASHING = {"kind": "hashing"}
TOKENIZER = "bigram"
#: The ``kb`` calls a lookup makes, for the breakdown of where a Milvus lookup's time goes.
KB_CALLS = (
    "read_meta",
    "doc_frequencies",
    "lexical_search",
    "vector_search",
    "chunks",
    "similarities",
    "documents",
)
#: Time in a lookup outside the ``kb`` calls: ragsnap's own work.
PIPELINE = "(rest: pipeline)"


# --------------------------------------------------------------------------- stores


def open_store(backend: str, folder: Path, analyzer: str, *, create: bool) -> KnowledgeBase:
    """The embedded SQLite file or the Milvus Lite file (a folder) in ``folder``."""
    if backend == "embedded":
        return SqliteKnowledgeBase(folder / "kb.sqlite", create=create)
    from ragsnap.kb.backends.milvus import MilvusKnowledgeBase

    return MilvusKnowledgeBase(str(folder / "milvus.db"), create=create, analyzer=analyzer)


def release_lite(folder: Path) -> None:
    """Stop this process's Milvus Lite server for the file, so the next open is cold.

    pymilvus starts one server per file, in this process, and keeps it until
    exit even after ``MilvusClient.close()``.
    """
    from milvus_lite import server_manager_instance

    server_manager_instance.release_server(str(folder / "milvus.db"))


def remove_store(backend: str, folder: Path) -> None:
    if backend == "embedded":
        for suffix in ("", "-wal", "-shm"):
            Path(f"{folder / 'kb.sqlite'}{suffix}").unlink(missing_ok=True)
    else:
        shutil.rmtree(folder / "milvus.db", ignore_errors=True)


def store_mb(backend: str, folder: Path) -> float:
    """Bytes on disk, in MB: the SQLite file and its WAL, or the Milvus Lite folder."""
    if backend == "embedded":
        paths = [Path(f"{folder / 'kb.sqlite'}{s}") for s in ("", "-wal")]
    else:
        paths = list((folder / "milvus.db").rglob("*"))
    return sum(p.stat().st_size for p in paths if p.is_file()) / 1e6


# --------------------------------------------------------------------------- one size


@dataclass(frozen=True, slots=True)
class Settings:
    """What determines a generated corpus and its stores (the manifest)."""

    generator: int
    size: int
    seed: int
    analyzer: str


@dataclass
class ImportResult:
    """One store's import: times in seconds, RSS in MB (process-wide)."""

    open_s: float
    seed_s: float
    embed_s: float
    tokenize_s: float
    close_s: float
    rss_start_mb: float
    rss_peak_mb: float


@dataclass
class OpenResult:
    """Reopening a built store as a lookup process does."""

    open_s: float
    first_lookup_s: float
    chunks: int


@dataclass
class SizeResult:
    size: int
    docs: int
    corpus_mb: float
    generate_s: float
    load_s: float | None
    imports: dict[str, ImportResult] | None
    opens: dict[str, OpenResult]
    store_mb: dict[str, float]
    latencies: dict[tuple[str, str], Latency]
    stats: dict[str, Any]
    lookup_peak_mb: float
    alone: dict[str, dict[str, Any]]
    kinds: dict[str, int] = field(default_factory=dict)


def import_store(backend: str, folder: Path, analyzer: str, docs: list[Any]) -> ImportResult:
    """Open a new store, seed it (timed apart), close it."""
    remove_store(backend, folder)
    embedder = TimedEmbedder(make_embedder(HASHING, None))  # type: ignore[arg-type]
    tokenizer = TimedTokenizer(get_tokenizer(TOKENIZER))
    gc.collect()
    reset_peak_rss()
    rss_start = peak_rss_mb()
    start = time.perf_counter()
    kb = open_store(backend, folder, analyzer, create=True)
    opened = time.perf_counter()
    try:
        plan = seed(kb, docs, embedder, tokenizer, ChunkSettings())  # type: ignore[arg-type]
        seeded = time.perf_counter()
    finally:
        kb.close()
        if backend == "milvus":
            release_lite(folder)
    closed = time.perf_counter()
    if plan.removed or plan.updated or plan.unchanged:
        raise SystemExit(f"unexpected seed plan on a new {backend} store: {plan.summary()}")
    return ImportResult(
        open_s=opened - start,
        seed_s=seeded - opened,
        embed_s=embedder.seconds,
        tokenize_s=tokenizer.seconds,
        close_s=closed - seeded,
        rss_start_mb=rss_start,
        rss_peak_mb=peak_rss_mb(),
    )


def lookup_once(kb: KnowledgeBase, query: str, method: str) -> dict[str, Any]:
    pipe = Pipeline(kb, make_embedder(HASHING, None), get_tokenizer(TOKENIZER), LookupSettings())
    return pipe.lookup(query, kb_scope=SCOPE, top_k=TOP_K, method=method)


def reopen(
    backend: str, folder: Path, analyzer: str, query: str
) -> tuple[KnowledgeBase, OpenResult]:
    """Open a built store cold, then time its first lookup (which loads its indexes)."""
    gc.collect()
    start = time.perf_counter()
    kb = open_store(backend, folder, analyzer, create=False)
    opened = time.perf_counter()
    lookup_once(kb, query, "hybrid+rerank")
    looked = time.perf_counter()
    return kb, OpenResult(opened - start, looked - opened, kb.count())


def label(backend: str, method: str) -> str:
    return f"{backend} lookup {method}"


def time_side(
    kb: KnowledgeBase, backend: str, method: str, warmup: Sequence[str], queries: Sequence[str]
) -> tuple[Latency, list[dict[str, Any]]]:
    """A fresh pipeline, its warm-up, then every query timed one at a time."""
    pipe = Pipeline(kb, make_embedder(HASHING, None), get_tokenizer(TOKENIZER), LookupSettings())
    for q in warmup:
        pipe.lookup(q, kb_scope=SCOPE, top_k=TOP_K, method=method)
    out: list[dict[str, Any]] = []
    latency = time_each(
        label(backend, method),
        queries,
        lambda q: out.append(pipe.lookup(q, kb_scope=SCOPE, top_k=TOP_K, method=method)),
    )
    return latency, out


def evidence_ids(result: dict[str, Any]) -> list[str]:
    return [b["chunkId"] for b in result["evidenceBlocks"]]


def agreement(
    kept: dict[tuple[str, str], list[dict[str, Any]]], chinese: list[bool]
) -> dict[str, Any]:
    """Evidence counts per backend and how far the two backends' evidence agrees."""
    stats: dict[str, Any] = {}
    for method in METHODS:
        emb, mil = kept[("embedded", method)], kept[("milvus", method)]
        for backend, results in (("embedded", emb), ("milvus", mil)):
            stats[f"evidence:{backend}:{method}"] = float(
                np.mean([len(r["evidenceBlocks"]) for r in results])
            )
            stats[f"empty:{backend}:{method}"] = sum(not r["evidenceBlocks"] for r in results)
        same = 0
        overlaps: list[float] = []
        overlaps_zh: list[float] = []
        for e, m, zh in zip(emb, mil, chinese, strict=True):
            a, b = evidence_ids(e), evidence_ids(m)
            same += a == b
            if a or b:
                share = len(set(a) & set(b)) / max(len(a), len(b))
                (overlaps_zh if zh else overlaps).append(share)
        stats[f"same:{method}"] = same / len(emb)
        stats[f"overlap:{method}"] = float(np.mean(overlaps)) if overlaps else float("nan")
        stats[f"overlap_zh:{method}"] = float(np.mean(overlaps_zh)) if overlaps_zh else None
    return stats


def run_size(
    settings: Settings, root: Path, reuse_ok: bool, n_queries: int, n_warmup: int, n_rounds: int
) -> tuple[SizeResult, dict[str, Any]]:
    """Build (or reuse) the corpus and both stores, then time every side."""
    size = settings.size
    folder = root / f"kb-{size}"
    docs_dir, manifest = folder / "docs", folder / "benchmark.json"
    vocab = build_vocabulary(settings.seed)
    started = time.perf_counter()
    corpus = generate(size, settings.seed, vocab)
    generate_s = time.perf_counter() - started
    corpus_mb = sum(len(c.encode("utf-8")) for _, c in corpus.files) / 1e6
    reuse = (
        reuse_ok
        and manifest.is_file()
        and (folder / "kb.sqlite").is_file()
        and (folder / "milvus.db").is_dir()
        and json.loads(manifest.read_text("utf-8")) == asdict(settings)
    )
    imports: dict[str, ImportResult] | None = None
    load_s: float | None = None
    if reuse:
        print(f"[{size:,}] reusing the stores in {folder} (import not timed)")
    else:
        manifest.unlink(missing_ok=True)
        shutil.rmtree(docs_dir, ignore_errors=True)
        write_corpus(corpus, docs_dir)
        print(
            f"[{size:,}] generated {len(corpus.files):,} documents ({corpus_mb:.1f} MB) "
            f"in {generate_s:.1f} s; importing ..."
        )
        gc.collect()
        start = time.perf_counter()
        docs = load_seed_docs(docs_dir)
        load_s = time.perf_counter() - start
        imports = {}
        for backend in BACKENDS:
            imports[backend] = import_store(backend, folder, settings.analyzer, docs)
            print(f"[{size:,}] {backend}: seeded in {imports[backend].seed_s:.1f} s")
        del docs
        manifest.write_text(json.dumps(asdict(settings)) + "\n", encoding="utf-8")

    tokenizer = get_tokenizer(TOKENIZER)
    all_queries = make_queries(corpus, vocab, n_warmup + n_queries + 1, settings.seed, tokenizer)
    first, *rest = (q for _, q in all_queries)
    warmup, queries = rest[:n_warmup], rest[n_warmup:]
    kinds: dict[str, int] = {}
    for kind, _ in all_queries[1 + n_warmup :]:
        kinds[kind] = kinds.get(kind, 0) + 1
    chinese = [kind == "chinese" for kind, _ in all_queries[1 + n_warmup :]]
    (folder / "queries.json").write_text(
        json.dumps({"first": first, "warmup": warmup, "queries": queries}, ensure_ascii=False),
        encoding="utf-8",
    )

    stores: dict[str, KnowledgeBase] = {}
    opens: dict[str, OpenResult] = {}
    try:
        for backend in BACKENDS:
            stores[backend], opens[backend] = reopen(backend, folder, settings.analyzer, first)
            if opens[backend].chunks != size:
                raise SystemExit(
                    f"expected {size} chunks, the {backend} store holds {opens[backend].chunks}"
                )
        print(f"[{size:,}] timing {n_rounds} round(s) of {n_queries} queries per side ...")
        sides = [(backend, method) for method in METHODS for backend in BACKENDS]
        rounds: dict[tuple[str, str], list[Latency]] = {side: [] for side in sides}
        kept: dict[tuple[str, str], list[dict[str, Any]]] = {}
        gc.collect()
        reset_peak_rss()
        for round_no in range(n_rounds):
            shift = round_no % len(sides)
            for backend, method in sides[shift:] + sides[:shift]:
                latency, out = time_side(stores[backend], backend, method, warmup, queries)
                rounds[(backend, method)].append(latency)
                kept.setdefault((backend, method), out)
        lookup_peak_mb = peak_rss_mb()
    finally:
        for backend, kb in stores.items():
            kb.close()
            if backend == "milvus":
                release_lite(folder)
    latencies = {
        side: Latency(label(*side), [ms for r in runs for ms in r.ms], [r.pct(95) for r in runs])
        for side, runs in rounds.items()
    }
    alone = {backend: in_subprocess(backend, folder, settings.analyzer) for backend in BACKENDS}
    result = SizeResult(
        size=size,
        docs=len(corpus.files),
        corpus_mb=corpus_mb,
        generate_s=generate_s,
        load_s=load_s,
        imports=imports,
        opens=opens,
        store_mb={backend: store_mb(backend, folder) for backend in BACKENDS},
        latencies=latencies,
        stats=agreement(kept, chinese),
        lookup_peak_mb=lookup_peak_mb,
        alone=alone,
        kinds=kinds,
    )
    context = {"folder": folder, "corpus": corpus, "warmup": warmup, "queries": queries}
    return result, context


# --------------------------------------------------------------------------- report


def ratio(milvus: float, embedded: float) -> str:
    return f"{milvus / embedded:,.2f}" if embedded > 0 else "-"


def print_size(r: SizeResult, corpus: Corpus, n_warmup: int, analyzer: str) -> None:
    """The tables of one corpus size."""
    print()
    print(
        f"kb_milvus: {r.size:,} chunks, {r.docs:,} documents ({corpus.in_scope_docs:,} in scope "
        f"{SCOPE!r}, {corpus.chinese_docs:,} Chinese), corpus {r.corpus_mb:.1f} MB "
        f"(generated in {r.generate_s:.1f} s); Milvus analyzer {analyzer!r}"
    )
    if r.load_s is not None:
        print(f"load_seed_docs (read + frontmatter, shared by both imports): {r.load_s:.2f} s")
    width = 46
    print(
        f"| {'import':<{width}} | {'embedded':>10} | {'milvus':>10} | {'milvus / embedded':>17} |"
    )
    print(f"|{'-' * (width + 2)}|{'-' * 12}|{'-' * 12}|{'-' * 19}|")

    def row(
        text: str, emb: float, mil: float, unit: str, fmt: str = ",.2f", *, share: bool = True
    ) -> None:
        cells = f"{emb:{fmt}}{unit}", f"{mil:{fmt}}{unit}"
        quotient = ratio(mil, emb) if share else "-"
        print(f"| {text:<{width}} | {cells[0]:>10} | {cells[1]:>10} | {quotient:>17} |")

    if r.imports is not None:
        e, m = r.imports["embedded"], r.imports["milvus"]
        row("open a new store", e.open_s, m.open_s, " s")
        row("seed (chunks + embed + tokenize + write)", e.seed_s, m.seed_s, " s")
        row("  embed_documents (hashing)", e.embed_s, m.embed_s, " s")
        row("  tokenizer.tokens", e.tokenize_s, m.tokenize_s, " s")
        row(
            "  chunking, index hashes, store writes",
            e.seed_s - e.embed_s - e.tokenize_s,
            m.seed_s - m.embed_s - m.tokenize_s,
            " s",
        )
        row("close (Milvus: + release the Lite server)", e.close_s, m.close_s, " s")
        row("seed throughput (chunks/s)", r.size / e.seed_s, r.size / m.seed_s, "", ",.0f")
        row("peak RSS during open + seed (MB)", e.rss_peak_mb, m.rss_peak_mb, "", ",.0f")
        row("  RSS when it started (MB)", e.rss_start_mb, m.rss_start_mb, "", ",.0f")
    else:
        print(f"| {'seed':<{width}} | {'reused':>10} | {'reused':>10} | {'':>17} |")
    row("store on disk (MB)", r.store_mb["embedded"], r.store_mb["milvus"], "", ",.1f")
    e_open, m_open = r.opens["embedded"], r.opens["milvus"]
    row("reopen, cold", e_open.open_s, m_open.open_s, " s", ",.3f")
    row("first lookup (loads the indexes)", e_open.first_lookup_s, m_open.first_lookup_s, " s")
    e_alone, m_alone = r.alone["embedded"], r.alone["milvus"]
    row(
        "lookup process (--one): import pymilvus",
        e_alone["import_s"],
        m_alone["import_s"],
        " s",
        share=False,
    )
    row("  open", e_alone["open_s"], m_alone["open_s"], " s", ",.3f")
    row("  first lookup", e_alone["first_lookup_s"], m_alone["first_lookup_s"], " s")
    row(
        "  RSS after the imports (MB)",
        e_alone["rss_imports_mb"],
        m_alone["rss_imports_mb"],
        "",
        ",.0f",
    )
    row("  peak RSS (MB)", e_alone["peak_rss_mb"], m_alone["peak_rss_mb"], "", ",.0f")

    lat = r.latencies
    n_rounds = len(lat[("embedded", METHODS[0])].round_p95)
    n_queries = len(lat[("embedded", METHODS[0])].ms) // n_rounds
    print()
    print(
        f"Lookup latency, ms: {n_queries} queries one at a time after {n_warmup} warm-up, "
        f"{n_rounds} round(s) in rotating order, percentiles over all {n_queries * n_rounds} "
        f"timings ({', '.join(f'{v} {k}' for k, v in sorted(r.kinds.items()))}); top_k "
        f"{TOP_K}, kb_scope {SCOPE!r}"
    )
    print(
        f"| {'lookup':<14} | {'emb p50':>8} | {'emb p95':>8} | {'milvus p50':>10} | "
        f"{'milvus p95':>10} | {'milvus max':>10} | {'ratio p50':>9} | {'ratio p95':>9} |"
    )
    print(
        f"|{'-' * 16}|{'-' * 10}|{'-' * 10}|{'-' * 12}|{'-' * 12}|{'-' * 12}|{'-' * 11}|{'-' * 11}|"
    )
    for method in METHODS:
        emb, mil = lat[("embedded", method)], lat[("milvus", method)]
        print(
            f"| {method:<14} | {emb.pct(50):>8.2f} | {emb.pct(95):>8.2f} | {mil.pct(50):>10.2f} | "
            f"{mil.pct(95):>10.2f} | {max(mil.ms):>10.2f} | {ratio(mil.pct(50), emb.pct(50)):>9} | "
            f"{ratio(mil.pct(95), emb.pct(95)):>9} |"
        )
    if n_rounds > 1:
        print(
            "p95 of each round: "
            + "; ".join(
                f"{backend} {method} "
                + ", ".join(f"{v:.2f}" for v in lat[(backend, method)].round_p95)
                for method in METHODS
                for backend in BACKENDS
            )
        )
    s = r.stats
    print(
        "Evidence blocks per lookup (embedded / milvus): "
        + ", ".join(
            f"{m} {s[f'evidence:embedded:{m}']:.2f} / {s[f'evidence:milvus:{m}']:.2f}"
            for m in METHODS
        )
    )
    print(
        "Lookups with no evidence (embedded / milvus): "
        + ", ".join(f"{m} {s[f'empty:embedded:{m}']} / {s[f'empty:milvus:{m}']}" for m in METHODS)
    )
    print(
        "Same evidence, in order, on both backends: "
        + ", ".join(f"{m} {s[f'same:{m}']:.0%}" for m in METHODS)
        + "; evidence overlap, English queries: "
        + ", ".join(f"{m} {s[f'overlap:{m}']:.2f}" for m in METHODS)
        + (
            "; Chinese queries: " + ", ".join(f"{m} {s[f'overlap_zh:{m}']:.2f}" for m in METHODS)
            if s[f"overlap_zh:{METHODS[0]}"] is not None
            else ""
        )
    )
    print(
        f"Peak RSS of this process during the timed rounds (both stores open): "
        f"{r.lookup_peak_mb:,.0f} MB. A lookup process (--one) is a fresh interpreter that opens "
        f"one store, makes the first lookup and then every warm-up and timed query once with "
        f"each method ({e_alone['lookups']} lookups)"
    )


# --------------------------------------------------------------------------- where the time goes


class _Recorder:
    """Adds up wall time per ``kb`` call and per Milvus Lite RPC while ``on``.

    A lookup runs in this thread and its RPCs on the Milvus Lite server's
    threads, one at a time, so each RPC is charged to the ``kb`` call running.
    """

    def __init__(self) -> None:
        self.on = False
        self.current = PIPELINE
        self.calls: dict[str, list[float]] = {}
        self.rpcs: dict[tuple[str, str], list[float]] = {}
        self.profile_server = False
        self.server_profiles: list[cProfile.Profile] = []

    def add_call(self, name: str, seconds: float) -> None:
        self.calls.setdefault(name, []).append(seconds)

    def add_rpc(self, name: str, seconds: float) -> None:
        self.rpcs.setdefault((self.current, name), []).append(seconds)

    def clear(self) -> None:
        self.calls.clear()
        self.rpcs.clear()
        self.server_profiles.clear()


@contextlib.contextmanager
def instrumented_servicer(recorder: _Recorder) -> Iterator[None]:
    """Wrap every RPC handler of Milvus Lite's servicer (for servers started inside)."""
    from milvus_lite.adapter.grpc.servicer import MilvusServicer

    originals = {
        name: fn for name, fn in vars(MilvusServicer).items() if name[:1].isupper() and callable(fn)
    }

    def wrap(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def handler(self: Any, request: Any, context: Any) -> Any:
            if not recorder.on:
                return fn(self, request, context)
            profiler: cProfile.Profile | None = None
            if recorder.profile_server:
                profiler = cProfile.Profile()
                try:
                    profiler.enable()
                except ValueError:  # Python 3.12+: one profiler for all threads
                    profiler = None
            start = time.perf_counter()
            try:
                return fn(self, request, context)
            finally:
                recorder.add_rpc(name, time.perf_counter() - start)
                if profiler is not None:
                    profiler.disable()
                    recorder.server_profiles.append(profiler)

        return handler

    for name, fn in originals.items():
        setattr(MilvusServicer, name, wrap(name, fn))
    try:
        yield
    finally:
        for name, fn in originals.items():
            setattr(MilvusServicer, name, fn)


def instrument_kb(kb: KnowledgeBase, recorder: _Recorder) -> None:
    """Time the ``kb`` calls a lookup makes (instance attributes shadow the methods)."""
    for name in KB_CALLS:
        method = getattr(kb, name)

        def timed(*args: Any, _method: Any = method, _name: str = name, **kwargs: Any) -> Any:
            if not recorder.on or recorder.current != PIPELINE:  # nested: the outer call's
                return _method(*args, **kwargs)
            recorder.current = _name
            start = time.perf_counter()
            try:
                return _method(*args, **kwargs)
            finally:
                recorder.add_call(_name, time.perf_counter() - start)
                recorder.current = PIPELINE

        setattr(kb, name, timed)


def profile_milvus(
    folder: Path, analyzer: str, warmup: Sequence[str], queries: Sequence[str]
) -> None:
    """Where a Milvus lookup's time goes: per kb call and RPC, then cProfile."""
    recorder = _Recorder()
    with instrumented_servicer(recorder):
        kb = open_store("milvus", folder, analyzer, create=False)
        try:
            instrument_kb(kb, recorder)
            for method in METHODS:
                pipe = Pipeline(
                    kb, make_embedder(HASHING, None), get_tokenizer(TOKENIZER), LookupSettings()
                )
                for q in warmup:
                    pipe.lookup(q, kb_scope=SCOPE, top_k=TOP_K, method=method)
                recorder.clear()
                gc.collect()
                recorder.on = True
                start = time.perf_counter()
                for q in queries:
                    pipe.lookup(q, kb_scope=SCOPE, top_k=TOP_K, method=method)
                total = time.perf_counter() - start
                recorder.on = False
                print_breakdown(method, recorder, total, len(queries))

            method = "hybrid+rerank"
            pipe = Pipeline(
                kb, make_embedder(HASHING, None), get_tokenizer(TOKENIZER), LookupSettings()
            )
            for q in warmup:
                pipe.lookup(q, kb_scope=SCOPE, top_k=TOP_K, method=method)
            recorder.clear()
            recorder.profile_server = True
            gc.collect()
            client = cProfile.Profile()
            recorder.on = True
            client.enable()
            for q in queries:
                pipe.lookup(q, kb_scope=SCOPE, top_k=TOP_K, method=method)
            client.disable()
            recorder.on = False
        finally:
            kb.close()
            release_lite(folder)  # its handlers were the instrumented ones
    print(
        f"\nProfile of {len(queries)} Milvus {method} lookups, this thread (the client: "
        "ragsnap + pymilvus + gRPC), top 20 by own time:"
    )
    stats = pstats.Stats(client, stream=sys.stdout)
    stats.sort_stats("tottime").print_stats(20)
    print("The same, top 25 by cumulative time:")
    stats.sort_stats("cumulative").print_stats(25)
    if recorder.server_profiles:
        print(
            f"Profile of the Milvus Lite RPC handlers of the same lookups "
            f"({len(recorder.server_profiles)} calls, server threads), top 25 by own time:"
        )
        server = pstats.Stats(*recorder.server_profiles, stream=sys.stdout)
        server.sort_stats("tottime").print_stats(25)
        print("The same, top 30 by cumulative time:")
        server.sort_stats("cumulative").print_stats(30)
    else:
        print("(no server-side profile: cProfile cannot profile two threads at once here)")


def print_breakdown(method: str, recorder: _Recorder, total: float, n: int) -> None:
    """One method's time per lookup: each kb call, the RPCs it made, the rest."""
    per = 1000.0 / n
    print(
        f"\nMilvus lookup {method}: {total * per:.1f} ms a lookup over {n} queries "
        "(no profiler); per lookup:"
    )
    rpc_head = "RPCs it made (calls, ms in the server)"
    print(f"| {'kb call':<16} | {'calls':>5} | {'ms':>7} | {rpc_head:<52} |")
    print(f"|{'-' * 18}|{'-' * 7}|{'-' * 9}|{'-' * 54}|")
    in_calls = 0.0
    for name in (*KB_CALLS, PIPELINE):
        rpcs = {rpc: v for (call, rpc), v in recorder.rpcs.items() if call == name}
        if name == PIPELINE:
            calls, seconds = n, total - in_calls
        else:
            if name not in recorder.calls:
                continue
            calls, seconds = len(recorder.calls[name]), sum(recorder.calls[name])
            in_calls += seconds
        text = ", ".join(
            f"{rpc} {len(v) / n:.1f}x {sum(v) * per:.1f} ms"
            for rpc, v in sorted(rpcs.items(), key=lambda kv: -sum(kv[1]))
        )
        print(f"| {name:<16} | {calls / n:>5.1f} | {seconds * per:>7.2f} | {text:<52} |")
    server = sum(sum(v) for v in recorder.rpcs.values())
    print(
        f"In the Milvus Lite server: {server * per:.1f} ms a lookup ({server / total:.0%}); "
        f"the rest is ragsnap, pymilvus and gRPC in this thread."
    )


# --------------------------------------------------------------------------- lookup process


def one(backend: str, folder: Path, analyzer: str) -> None:
    """``--one BACKEND``: a lookup process on the store in ``folder``; print a JSON line.

    Peak memory is this fresh process's peak RSS (``peak_rss_mb``), read after
    the imports and at the end; the queries come from ``queries.json``.
    """
    saved = json.loads((folder / "queries.json").read_text("utf-8"))
    start = time.perf_counter()
    if backend == "milvus":  # the backend imports it when the store opens: timed apart
        import pymilvus  # noqa: F401
    imported = time.perf_counter()
    rss_imports = peak_rss_mb()
    kb = open_store(backend, folder, analyzer, create=False)
    opened = time.perf_counter()
    lookups = 0
    try:
        lookup_once(kb, saved["first"], "hybrid+rerank")
        looked = time.perf_counter()
        for method in METHODS:
            pipe = Pipeline(
                kb, make_embedder(HASHING, None), get_tokenizer(TOKENIZER), LookupSettings()
            )
            for q in saved["warmup"] + saved["queries"]:
                pipe.lookup(q, kb_scope=SCOPE, top_k=TOP_K, method=method)
                lookups += 1
    finally:
        kb.close()
        if backend == "milvus":
            release_lite(folder)
    result = {
        "backend": backend,
        "import_s": imported - start,
        "open_s": opened - imported,
        "first_lookup_s": looked - opened,
        "lookups": lookups,
        "rss_imports_mb": rss_imports,
        "peak_rss_mb": peak_rss_mb(),
    }
    print(json.dumps(result))


def in_subprocess(backend: str, folder: Path, analyzer: str) -> dict[str, Any]:
    """Run ``--one BACKEND`` in a new interpreter and return its JSON line."""
    argv = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--one",
        backend,
        "--workdir",
        str(folder),
        "--analyzer",
        analyzer,
    ]
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"--one {backend} failed (exit {done.returncode}):\n{done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


# --------------------------------------------------------------------------- driver


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Command-line options; every help states its default."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--chunks",
        type=lambda text: parse_sizes(text, "chunks"),
        default=[TARGET_SIZE],
        help="corpus sizes in chunks, comma-separated (default: 10000)",
    )
    parser.add_argument("--queries", type=int, default=100, help="timed queries (default: 100)")
    parser.add_argument(
        "--warmup", type=int, default=10, help="untimed warm-up queries per side (default: 10)"
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="rounds over the queries per side, sides in rotating order (default: 3)",
    )
    parser.add_argument(
        "--analyzer",
        choices=("standard", "jieba"),
        default="standard",
        help="the Milvus chunks collection's text analyzer (default: standard)",
    )
    add_folder_options(
        parser,
        DEFAULT_SEED,
        "build (or reuse) the corpora and both stores here and keep them "
        "(default: a temporary folder)",
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="break down and cProfile the Milvus lookups at 10,000 chunks (else the last "
        "size) after the timings (default: only when the target is missed)",
    )
    parser.add_argument(
        "--one",
        choices=BACKENDS,
        help="internal: a lookup process on the store in --workdir (a size's folder), "
        "printing a JSON line",
    )
    args = parser.parse_args(argv)
    if args.queries < 20 or args.warmup < 1 or args.rounds < 1:
        parser.error("--queries must be at least 20, --warmup and --rounds at least 1")
    if args.one and args.workdir is None:
        parser.error("--one needs --workdir")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; return 0 when the target measured is met, else 1."""
    args = parse_args(argv)
    if args.one:
        one(args.one, args.workdir.resolve(), args.analyzer)
        return 0
    try:
        import milvus_lite  # noqa: F401
        import pymilvus  # noqa: F401
    except ImportError:
        raise SystemExit(
            "pymilvus and milvus-lite are needed: pip install 'ragsnap[milvus]' "
            "(or pymilvus milvus-lite)"
        ) from None
    results: list[tuple[SizeResult, dict[str, Any]]] = []
    with work_folder(args.workdir, "ragsnap-kb-milvus-", args.keep, "Corpora and stores") as root:
        for size in args.chunks:
            settings = Settings(GENERATOR_VERSION, size, args.seed, args.analyzer)
            result, ctx = run_size(
                settings, root, args.workdir is not None, args.queries, args.warmup, args.rounds
            )
            results.append((result, ctx))
            print_size(result, ctx["corpus"], args.warmup, args.analyzer)
            gc.collect()

        print()
        print(
            f"Python {platform.python_version()}, SQLite {sqlite3.sqlite_version}, "
            f"numpy {version('numpy')}, pymilvus {version('pymilvus')}, milvus-lite "
            f"{version('milvus-lite')} (pure Python, its gRPC server in this process), grpcio "
            f"{version('grpcio')}, {platform.machine()}, {cpu_model()}; ragsnap from "
            f"{Path(ragsnap.__file__).parent}"
        )
        passed = True
        target = next((r for r in results if r[0].size == TARGET_SIZE), None)
        if target is None:
            print(f"Target applies at {TARGET_SIZE:,} chunks: not measured (add it to --chunks).")
        else:
            r = target[0]
            lat = r.latencies
            p95 = lat[("milvus", "hybrid+rerank")].pct(95)
            passed = p95 < RERANK_TARGET_MS
            print(
                f"Target Milvus Lite hybrid+rerank p95 < {RERANK_TARGET_MS:.0f} ms at "
                f"{TARGET_SIZE:,}: {'PASS' if passed else 'FAIL'} ({p95:.2f} ms)"
            )
            parts = []
            if r.imports is not None:
                e, m = r.imports["embedded"], r.imports["milvus"]
                parts.append(f"seed throughput {e.seed_s / m.seed_s:.2f}")
            for method in METHODS:
                e_lat, m_lat = lat[("embedded", method)], lat[("milvus", method)]
                parts.append(
                    f"{method} p50 {ratio(m_lat.pct(50), e_lat.pct(50))}, "
                    f"p95 {ratio(m_lat.pct(95), e_lat.pct(95))}"
                )
            print(f"Ratios milvus / embedded at {TARGET_SIZE:,} (no target): " + "; ".join(parts))
        if args.profile or not passed:
            _, ctx = target if target is not None else results[-1]
            profile_milvus(ctx["folder"], args.analyzer, ctx["warmup"], ctx["queries"])
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Import and seed a generated BEIR corpus: throughput and peak memory at two sizes.

For each size (default 10,000 and 100,000 documents) this generates a BEIR
dataset deterministically, converts it with ``ragsnap import beir`` and builds
the knowledge base with ``ragsnap seed``, each in its own process, and prints
how long each step took and its peak resident memory. The import and the
seed stream the document text and keep only per-document ids and hashes, so
their peak memory should grow by a few hundred bytes a document, not with the
text: the two sizes side by side, the ratio of their peaks and the extra bytes
per extra document show how much it does.

Steps, per size:

1. Generate, from ``--seed``, a BEIR folder: ``corpus.jsonl`` (``{"_id":
   "d<n>", "title", "text"}``; the title 2-6 mid-frequency words, the text
   100-200 words drawn from a Zipf vocabulary, exponent 1.07: 30 English
   function words at the top, then 30,000 pseudo-words, in sentences of 6-18
   words), ``queries.jsonl`` (``--queries`` queries of 3-8 words taken from
   their first judged document, contiguous or scattered) and
   ``qrels/test.tsv`` (a header, then 1-3 judged documents per query: the
   first grade 2, the others 1).
2. Peer: a plain pass over ``corpus.jsonl`` that reads every line and parses
   it with the standard library's ``json.loads`` (results dropped), in its
   own process; the least any importer has to do. An ``orjson.loads`` pass
   (the parser ragsnap uses) is timed too, for information.
3. ``python -m ragsnap import beir DATASET --out OUT`` (the output folder is
   emptied first).
4. ``python -m ragsnap seed --config OUT/ragsnap.yaml`` into a new
   ``OUT/kb.sqlite`` (hashing embedder, bigram segmenter, default chunking).

Every process runs under ``/usr/bin/time -f``, whose report gives its wall
time, CPU time and peak RSS ("Maximum resident set size", from the kernel's
``wait4`` of that one child). A child's ``ru_maxrss`` on Linux includes the
high-water mark of the process it was forked from, so asking ``os.wait4``
from this (larger) Python process would over-report small children;
``/usr/bin/time`` is a small C program, so its children start near zero.
Without ``/usr/bin/time`` the script falls back to ``os.wait4`` and says so.

Usage::

    python benchmarks/import_beir.py [--sizes 10000,100000] [--queries 1000]
                                     [--seed N] [--workdir DIR] [--keep]

With ``--workdir`` the datasets are generated there (or reused when they were
generated there with the same settings; generation is then not timed) and
kept; import and seed outputs are always rebuilt. Otherwise everything goes
to a temporary folder deleted at the end unless ``--keep``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

import numpy as np

from _common import add_folder_options, add_sizes_option, cpu_model

DEFAULT_SEED = 20261130
ZIPF_EXPONENT = 1.07
PSEUDO_WORDS = 30_000
_FUNCTION_WORDS = (
    "the of and to a in is that for it as with was on be by this are or at from "
    "not an which but can have has will when"
)
_SYLLABLES = (
    "ka ri to mel sen dar vo lin ques tra pol min ber gan sul fe no ra te zi mo pa "
    "len cor vid nas tel bri hum ost lu ve gra dun sim rel fa che wor nu"
)
FUNCTION_WORDS = tuple(_FUNCTION_WORDS.split())
SYLLABLES = tuple(_SYLLABLES.split())
TIME = Path("/usr/bin/time")
GENERATOR_VERSION = 1
BATCH = 10_000  # documents generated per numpy batch

# The peer: read every corpus line and parse it, results dropped.
PEER_JSON = """
import json, sys
n = 0
with open(sys.argv[1], "rb") as f:
    for line in f:
        if line.strip():
            json.loads(line)
            n += 1
print(n)
"""
PEER_ORJSON = PEER_JSON.replace("import json, sys", "import orjson as json, sys")


# --------------------------------------------------------------------------- data


def make_vocabulary(rng: np.random.Generator) -> list[str]:
    """Function words first, then ``PSEUDO_WORDS`` distinct pseudo-words."""
    words: list[str] = list(FUNCTION_WORDS)
    seen = set(words)
    while len(words) < len(FUNCTION_WORDS) + PSEUDO_WORDS:
        n = int(rng.integers(2, 5))
        word = "".join(SYLLABLES[int(i)] for i in rng.integers(0, len(SYLLABLES), n))
        if word not in seen:
            seen.add(word)
            words.append(word)
    return words


@dataclass
class Dataset:
    folder: Path
    documents: int
    queries: int
    judgments: int
    words: int
    seconds: float | None  # None when reused
    files: dict[str, int] = field(default_factory=dict)


def generate(folder: Path, documents: int, queries: int, seed: int) -> Dataset:
    """Write corpus.jsonl, queries.jsonl and qrels/test.tsv into ``folder``."""
    start = time.perf_counter()
    rng = np.random.default_rng(seed)
    vocab = np.array(make_vocabulary(rng), dtype=object)
    ranks = np.arange(1, len(vocab) + 1, dtype=np.float64)
    cdf = np.cumsum(1.0 / ranks**ZIPF_EXPONENT)
    cdf /= cdf[-1]
    # queries first: which documents they judge, so their words can be taken
    # from those documents while the corpus is written
    judged: list[list[int]] = []
    wanted: dict[int, list[int]] = {}  # document -> queries whose text comes from it
    for q in range(queries):
        count = int(rng.integers(1, 4))
        docs = [int(d) for d in rng.choice(documents, size=count, replace=False)]
        judged.append(docs)
        wanted.setdefault(docs[0], []).append(q)
    texts: list[str] = [""] * queries
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "qrels").mkdir(exist_ok=True)
    total_words = 0
    with (folder / "corpus.jsonl").open("w", encoding="utf-8") as out:
        for first in range(0, documents, BATCH):
            n = min(BATCH, documents - first)
            lengths = rng.integers(100, 201, n)
            ids = np.searchsorted(cdf, rng.random(int(lengths.sum())))
            total_words += int(lengths.sum())
            title_lengths = rng.integers(2, 7, n)
            title_ids = rng.integers(100, 5000, int(title_lengths.sum()))
            at = t_at = 0
            lines = []
            for i in range(n):
                doc = first + i
                words = vocab[ids[at : at + lengths[i]]].tolist()
                at += int(lengths[i])
                title = " ".join(vocab[title_ids[t_at : t_at + title_lengths[i]]].tolist())
                t_at += int(title_lengths[i])
                for q in wanted.get(doc, ()):
                    texts[q] = query_text(rng, words)
                lines.append(
                    json.dumps(
                        {"_id": f"d{doc}", "title": title.capitalize(), "text": prose(rng, words)},
                        ensure_ascii=False,
                    )
                )
            out.write("\n".join(lines) + "\n")
    with (folder / "queries.jsonl").open("w", encoding="utf-8") as out:
        for q, text in enumerate(texts):
            out.write(json.dumps({"_id": f"q{q}", "text": text}) + "\n")
    judgments = 0
    with (folder / "qrels" / "test.tsv").open("w", encoding="utf-8") as out:
        out.write("query-id\tcorpus-id\tscore\n")
        for q, docs in enumerate(judged):
            for rank, doc in enumerate(docs):
                out.write(f"q{q}\td{doc}\t{2 if rank == 0 else 1}\n")
                judgments += 1
    data = Dataset(folder, documents, queries, judgments, total_words, time.perf_counter() - start)
    data.files = file_sizes(folder, ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv"))
    return data


def prose(rng: np.random.Generator, words: list[str]) -> str:
    """``words`` as sentences of 6-18 words: capitalised, ending in a full stop."""
    out: list[str] = []
    at = 0
    while at < len(words):
        n = int(rng.integers(6, 19))
        sentence = words[at : at + n]
        at += n
        out.append(" ".join(sentence).capitalize() + ".")
    return " ".join(out)


def query_text(rng: np.random.Generator, words: list[str]) -> str:
    """3-8 words of a document: a contiguous span, or content words picked apart."""
    n = int(rng.integers(3, 9))
    if rng.random() < 0.5:
        start = int(rng.integers(0, len(words) - n))
        return " ".join(words[start : start + n])
    content = [w for w in words if w not in FUNCTION_WORDS] or words
    picks = sorted(
        int(i) for i in rng.choice(len(content), size=min(n, len(content)), replace=False)
    )
    return " ".join(content[i] for i in picks)


def file_sizes(folder: Path, names: Sequence[str]) -> dict[str, int]:
    return {name: (folder / name).stat().st_size for name in names if (folder / name).exists()}


def dataset(root: Path, documents: int, queries: int, seed: int, reuse: bool) -> Dataset:
    """Generate the dataset of one size, or reuse it when the settings match."""
    folder = root / f"beir-{documents}"
    stamp = folder / "settings.json"
    settings = {
        "documents": documents,
        "queries": queries,
        "seed": seed,
        "generator": GENERATOR_VERSION,
    }
    if reuse and stamp.is_file():
        saved = json.loads(stamp.read_text())
        if saved.get("settings") == settings:
            data = Dataset(folder, documents, queries, saved["judgments"], saved["words"], None)
            data.files = file_sizes(folder, ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv"))
            return data
    if folder.exists():
        shutil.rmtree(folder)
    data = generate(folder, documents, queries, seed)
    stamp.write_text(
        json.dumps({"settings": settings, "judgments": data.judgments, "words": data.words})
    )
    return data


# --------------------------------------------------------------------------- processes


@dataclass
class Measured:
    """One child process: wall, CPU and peak RSS, with its output."""

    wall: float
    cpu: float
    peak_kb: int
    stdout: str
    stderr: str
    how: str  # "/usr/bin/time" or "os.wait4"


def measure(argv: Sequence[str], log: Path) -> Measured:
    """Run ``argv`` and measure it; exit status other than 0 stops the benchmark."""
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    out_path, err_path = log.with_suffix(".out"), log.with_suffix(".err")
    with out_path.open("wb") as out, err_path.open("wb") as err:
        if TIME.is_file():
            report = log.with_suffix(".time")
            cmd = [str(TIME), "-o", str(report), "-f", "%e %U %S %M %x", *argv]
            start = time.perf_counter()
            proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=env)
            code = proc.wait()
            wall = time.perf_counter() - start
            fields = report.read_text().strip().splitlines()[-1].split()
            how = str(TIME)
            cpu, peak = float(fields[1]) + float(fields[2]), int(fields[3])
        else:
            start = time.perf_counter()
            proc = subprocess.Popen(list(argv), stdout=out, stderr=err, env=env)
            _, status, usage = os.wait4(proc.pid, 0)
            wall = time.perf_counter() - start
            code = os.waitstatus_to_exitcode(status)
            proc.returncode = code
            how = "os.wait4 (includes this process's high-water mark)"
            cpu, peak = usage.ru_utime + usage.ru_stime, usage.ru_maxrss
    stdout, stderr = out_path.read_text("utf-8"), err_path.read_text("utf-8")
    if code != 0:
        sys.stderr.write(stdout + stderr)
        raise SystemExit(f"{' '.join(argv)} exited {code}")
    return Measured(wall, cpu, peak, stdout, stderr, how)


def ragsnap(*args: str) -> list[str]:
    return [sys.executable, "-m", "ragsnap", *args]


@dataclass
class SizeResult:
    data: Dataset
    peer: Measured
    peer_orjson: Measured
    imp: Measured
    seed: Measured
    chunks: int
    seeded_docs: int
    outputs: dict[str, int]


def run_size(root: Path, data: Dataset) -> SizeResult:
    out = root / f"out-{data.documents}"
    if out.exists():
        shutil.rmtree(out)
    logs = root / f"logs-{data.documents}"
    logs.mkdir(exist_ok=True)
    corpus = data.folder / "corpus.jsonl"
    peer = measure([sys.executable, "-c", PEER_JSON, str(corpus)], logs / "peer-json")
    peer_orjson = measure([sys.executable, "-c", PEER_ORJSON, str(corpus)], logs / "peer-orjson")
    for m in (peer, peer_orjson):
        if int(m.stdout.split()[0]) != data.documents:
            raise SystemExit(f"the peer read {m.stdout.strip()} lines, not {data.documents}")
    imp = measure(
        ragsnap("import", "beir", str(data.folder), "--out", str(out), "--allow-outside"),
        logs / "import",
    )
    first = imp.stdout.splitlines()[0]
    match = re.match(r"import: ([\d,]+) documents \(([\d,]+) chunks\), ([\d,]+) queries", first)
    if not match or int(match[1].replace(",", "")) != data.documents:
        raise SystemExit(f"unexpected import summary: {first!r}")
    if int(match[3].replace(",", "")) != data.queries:
        raise SystemExit(f"expected {data.queries} queries imported: {first!r}")
    seed = measure(ragsnap("seed", "--config", str(out / "ragsnap.yaml")), logs / "seed")
    found = re.search(r"; (\d+) documents, (\d+) chunks in", seed.stdout)
    if not found:
        raise SystemExit(f"unexpected seed summary: {seed.stdout!r}")
    seeded, chunks = int(found[1]), int(found[2])
    if seeded != data.documents or chunks != int(match[2].replace(",", "")):
        raise SystemExit(f"seed and import disagree: {first!r} / {seed.stdout.strip()!r}")
    outputs = file_sizes(out, ("corpus.jsonl", "golden-cases.json", "kb.sqlite"))
    return SizeResult(data, peer, peer_orjson, imp, seed, chunks, seeded, outputs)


# --------------------------------------------------------------------------- report


def mb(n_bytes: float) -> str:
    return f"{n_bytes / 1e6:,.1f} MB"


def rss(kb: int) -> str:
    return f"{kb / 1024:,.0f} MB"


def print_report(results: Sequence[SizeResult]) -> None:
    sizes = [f"{r.data.documents:,} docs" for r in results]
    rows: list[tuple[str, list[str]]] = []

    def row(label: str, cells: list[str]) -> None:
        rows.append((label, cells))

    row(
        "generation (corpus + queries + qrels)",
        ["reused" if r.data.seconds is None else f"{r.data.seconds:.1f} s" for r in results],
    )
    row(
        "dataset: corpus.jsonl / queries / qrels",
        [
            f"{mb(r.data.files['corpus.jsonl'])} / {r.data.files['queries.jsonl'] / 1e3:,.0f} kB"
            f" / {r.data.files['qrels/test.tsv'] / 1e3:,.0f} kB"
            for r in results
        ],
    )
    row("words in the corpus", [f"{r.data.words:,}" for r in results])
    row(
        "queries / judgments",
        [f"{r.data.queries:,} / {r.data.judgments:,}" for r in results],
    )
    row(
        "peer: json.loads pass (wall, docs/s)",
        [f"{r.peer.wall:.2f} s ({r.data.documents / r.peer.wall:,.0f}/s)" for r in results],
    )
    row(
        "orjson.loads pass (information)",
        [f"{r.peer_orjson.wall:.2f} s" for r in results],
    )
    row(
        "**ragsnap import beir** (wall, docs/s)",
        [f"**{r.imp.wall:.2f} s ({r.data.documents / r.imp.wall:,.0f}/s)**" for r in results],
    )
    row("ratio import / json.loads pass", [f"{r.imp.wall / r.peer.wall:.2f}" for r in results])
    row(
        "import outputs: corpus.jsonl / golden-cases.json",
        [
            f"{mb(r.outputs['corpus.jsonl'])} / {mb(r.outputs['golden-cases.json'])}"
            for r in results
        ],
    )
    row("chunks (default chunking)", [f"{r.chunks:,}" for r in results])
    row(
        "**ragsnap seed** (wall, chunks/s)",
        [f"**{r.seed.wall:.2f} s ({r.chunks / r.seed.wall:,.0f}/s)**" for r in results],
    )
    row("kb.sqlite", [mb(r.outputs["kb.sqlite"]) for r in results])
    row("CPU time import / seed", [f"{r.imp.cpu:.1f} s / {r.seed.cpu:.1f} s" for r in results])
    row("peak RSS: json.loads pass", [rss(r.peer.peak_kb) for r in results])
    row("**peak RSS: import**", [f"**{rss(r.imp.peak_kb)}**" for r in results])
    row("**peak RSS: seed**", [f"**{rss(r.seed.peak_kb)}**" for r in results])

    width = max(len(label) for label, _ in rows)
    cols = [max(len(s), *(len(cells[i]) for _, cells in rows)) for i, s in enumerate(sizes)]
    print(
        f"| {'':<{width}} | "
        + " | ".join(f"{s:>{c}}" for s, c in zip(sizes, cols, strict=True))
        + " |"
    )
    print(f"|{'-' * (width + 2)}|" + "|".join("-" * (c + 1) + ":" for c in cols) + "|")
    for label, cells in rows:
        print(
            f"| {label:<{width}} | "
            + " | ".join(f"{s:>{c}}" for s, c in zip(cells, cols, strict=True))
            + " |"
        )

    if len(results) >= 2:
        small, large = results[0], results[-1]
        factor = large.data.documents / small.data.documents
        print(
            f"\nMemory growth, {small.data.documents:,} -> {large.data.documents:,} documents "
            f"(x{factor:g} the corpus):"
        )
        for label, a, b in (
            ("json.loads pass", small.peer.peak_kb, large.peer.peak_kb),
            ("import", small.imp.peak_kb, large.imp.peak_kb),
            ("seed", small.seed.peak_kb, large.seed.peak_kb),
        ):
            per_doc = (b - a) * 1024 / (large.data.documents - small.data.documents)
            print(
                f"  {label:<16} {rss(a):>8} -> {rss(b):>8}: x{b / a:.2f}, "
                f"{per_doc:,.0f} bytes more per extra document"
            )
    print(f"\nPeak RSS measured with {results[0].imp.how}.")


# --------------------------------------------------------------------------- main


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Command-line options; every help states its default."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_sizes_option(parser, "documents", sort=True)
    parser.add_argument(
        "--queries", type=int, default=1000, help="queries per dataset (default: 1000)"
    )
    add_folder_options(
        parser,
        DEFAULT_SEED,
        "generate the datasets here and keep everything; reuse datasets generated "
        "with the same settings (default: a temporary folder)",
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.queries < 1 or args.queries > min(args.sizes):
        raise SystemExit("--queries must be between 1 and the smallest size")
    started = time.perf_counter()
    if args.workdir is not None:
        root = args.workdir
        root.mkdir(parents=True, exist_ok=True)
    else:
        root = Path(tempfile.mkdtemp(prefix="ragsnap-import-beir-"))
    print(
        f"Python {platform.python_version()} ({sys.executable}), ragsnap "
        f"{metadata.version('ragsnap')}, orjson {metadata.version('orjson')}, "
        f"numpy {np.__version__}; {cpu_model()}; work folder {root}"
    )
    results: list[SizeResult] = []
    try:
        for size in args.sizes:
            data = dataset(root, size, args.queries, args.seed + size, args.workdir is not None)
            gen = "reused" if data.seconds is None else f"generated in {data.seconds:.1f} s"
            print(f"{size:,} documents: {gen}; importing and seeding ...", file=sys.stderr)
            results.append(run_size(root, data))
        print()
        print_report(results)
    finally:
        if args.workdir is None and not args.keep:
            shutil.rmtree(root, ignore_errors=True)
        elif args.workdir is None:
            print(f"\nWork folder kept: {root}")
    print(f"\nTotal {time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

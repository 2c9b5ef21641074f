#!/usr/bin/env python3
"""The service's HTTP cost and saturation: ``ragsnap serve`` measured for what it is.

Two targets, both on CPU time, measured in interleaved rounds (a fresh random
sample of the cases' queries each round, the sides in random order):

(a) the service's CPU a lookup over HTTP (one at a time, through the snapshot's
    own client) at most ``TARGET_CPU_RATIO`` (1.0) x the same lookups' CPU in
    process (``Pipeline.lookup`` over the same file, latencies recorded as the
    service does) plus ``TARGET_CPU_EXTRA_MS`` (0.5 ms): what the HTTP stack
    adds, medians over the rounds;
(b) the saturation efficiency at concurrency 8 (the same lookups from 8
    threads, as ``snapshot --concurrency 8``): lookups/s x CPU a lookup (service
    and client) / the CPUs this process may use, at least ``TARGET_EFFICIENCY``
    (0.85) on a quiet machine. The load average before and after and the share
    of the machine's CPU time that was idle or went to other processes during
    the c=8 batches (``/proc/stat``) say how quiet it was.

The snapshot itself is also run, for information and for the fixture check:
``ragsnap snapshot --backend http`` of ``--cases`` golden cases (default 1,000)
at concurrency 1 and 8, and in process on the embedded knowledge base (the
reference fixtures). Their c=8 / c=1 throughput ratio was the target before
2026-12-05; it measures the machine (client and service share 2 CPUs), not the
service, and is printed as information.

Steps:

1. Generate, deterministically from ``--seed``, ``--docs`` Markdown seed
   documents (frontmatter ``source``, ``doc_id``, ``title``, ``breadcrumb``,
   one of 6 categories, ``kb_scope: bench``; an intro and three ``## ``
   sections of 40-80 words drawn from a Zipf vocabulary of 30 function words,
   3,000 pseudo-words and 60 technical words, plus 1-3 of the document's
   three topic words, which are its title: 4 chunks a document), and
   ``--cases`` golden cases (3-6 words of one part of one document,
   contiguous or scattered, 30% with a topic word added; each with
   ``expectedSources`` [that document], ``kbScope: bench``, ``topK: 5``).
2. Seed a knowledge base with the real CLI: ``python -m ragsnap seed --kb
   KB --seed-docs DOCS`` (hashing embedder, bigram segmenter: the defaults,
   as every process runs in the work folder, which has no ragsnap.yaml).
3. Start ``python -m ragsnap serve --kb KB --port 0 --workers W`` as a real
   process (its first stdout line is its URL, printed once every worker is
   ready; ``--workers`` defaults to serve's own default) and warm it with
   ``WARMUP`` lookups from 8 threads (every worker gets some), so the timed
   runs see a running service, as a user's snapshot would. Then the CPU
   rounds (``--cpu-rounds``, default 6, of ``--lookups`` lookups a side,
   default 300): http c=1 (the serve processes' CPU from each thread's
   ``/proc/PID/task/TID/schedstat``, nanoseconds), in process (this thread's
   ``time.thread_time``) and http c=8 (serve CPU + this process's
   ``time.process_time``; wall), in random order; targets (a) and (b) above.
4. For ``--rounds`` rounds, sides in rotating order, each a real process run
   under ``/usr/bin/time`` into a fresh fixtures folder, with ``--retrieved-at
   2026-01-01T00:00:00Z --skip-eval``:

   - **http c=1** (peer) and **http c=8**: ``ragsnap snapshot --backend
     http --base-url URL --concurrency N``;
   - **embedded** (for information): ``ragsnap snapshot --backend embedded
     --kb KB``.

   Each run is timed twice: the lookup phase the command prints itself
   ("snapshot: N case(s) from ... in X s", 0.1 s resolution: opening the
   source, every lookup, checking and encoding each fixture), which the
   target uses, and the process's wall time measured from here (start-up,
   reading the cases, the lookup phase and writing the fixtures, which the
   command fsyncs one by one: seconds of disk time that are the same work on
   every side). The CPU time of the serve process and its workers during each
   HTTP run is read from ``/proc/PID/stat``.
5. Check that the http c=8 fixtures of every round are byte-identical to the
   http c=1 ones of that round, that every HTTP fixture equals the embedded
   one once the ``generator`` block is removed
   (``ragsnap.snapshot.fixturediff.compare_fixtures`` with tolerance 0 and no
   diagnostic moved: everything but ``retrievedAt`` and latencies, which the
   service records, is equal), and that the embedded runs of every round are
   byte-identical.
6. Print the table (medians over the rounds), the c=8 / c=1 ratio, the CPU
   rounds and the targets' PASS/FAIL; with ``--profile``, profile one more
   http c=8 run against a one-worker service: the serve process and the
   snapshot client each under cProfile with a per-thread CPU clock
   (``time.thread_time``) in every thread, top functions by own time.

Usage::

    python benchmarks/snapshot_http.py [--cases 1000] [--docs 300] [--rounds 3]
                                       [--workers W] [--cpu-rounds 6] [--lookups 300]
                                       [--seed N] [--workdir DIR] [--keep] [--profile]

With ``--workdir`` everything is written there and kept (the corpus, the
knowledge base, the cases, every fixtures folder and the processes' logs);
otherwise into a temporary folder deleted at the end unless ``--keep``. The
exit status is 0 when both targets are met and the fixtures agree, else 1.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import platform
import pstats
import random
import re
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _common import add_folder_options, version, work_folder

REPO = Path(__file__).resolve().parents[1]
TARGET_CPU_RATIO = 1.0  # service CPU a lookup over HTTP / the lookup's CPU in process ...
TARGET_CPU_EXTRA_MS = 0.5  # ... plus this, at most
TARGET_EFFICIENCY = 0.85  # c=8: lookups/s x CPU a lookup / usable CPUs, at least
C8 = "http-c8"
DEFAULT_SEED = 20261201
SCOPE = "bench"
TOP_K = 5
RETRIEVED_AT = "2026-01-01T00:00:00Z"
WARMUP = 40  # lookups sent to the service before the first timed run, from 8 threads
LOOKUPS = 300  # lookups a side a round in the CPU rounds
CPU_ROUNDS = 6
TIME = Path("/usr/bin/time")
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")

#: side name -> (label, extra snapshot arguments)
SIDES: dict[str, tuple[str, tuple[str, ...]]] = {
    "http-c1": ("http, concurrency 1 (peer)", ("--backend", "http", "--concurrency", "1")),
    "http-c8": ("http, concurrency 8", ("--backend", "http", "--concurrency", "8")),
    "embedded": ("embedded, in process (info)", ("--backend", "embedded")),
}
PEER = "http-c1"
EMBEDDED = "embedded"  # the reference fixtures

# --------------------------------------------------------------------------- vocabulary


def _split(text: str) -> list[str]:
    """The words of a literal list written as one string."""
    return text.split()


FUNCTION_WORDS = _split(
    "the of and to in is for on with that by as at from be this are or it an "
    "when which not can if after before each all into"
)
TECH_WORDS = _split(
    "connection pool timeout replica primary failover latency throughput partition "
    "consumer producer offset broker topic queue retry backoff circuit breaker cache "
    "eviction index query schema migration rollback deployment rollout canary cluster "
    "node container image registry certificate rotation secret token permission audit "
    "backup restore snapshot volume disk memory heap thread deadlock transaction commit "
    "checkpoint compaction shard rebalance alert runbook dashboard metric trace"
)
SYLLABLES = _split(
    "ka ri to mel sen dar vo lin ques tra pol min ber gan sul fe no ra te zi mo pa "
    "len cor vid nas tel bri hum ost lu ve gra dun sim rel fa che wor nu"
)
CATEGORIES: dict[str, tuple[str, tuple[str, ...]]] = {
    "database": ("Database", ("MySQL", "PostgreSQL", "Replication")),
    "messaging": ("Messaging", ("Kafka", "RabbitMQ", "Consumers")),
    "networking": ("Networking", ("DNS", "Ingress", "TLS")),
    "security": ("Security", ("Secrets", "Access", "Audit")),
    "storage": ("Storage", ("Volumes", "Backups", "Snapshots")),
    "deployment": ("Deployment", ("Kubernetes", "Rollouts", "Releases")),
}
PSEUDO_WORDS = 3_000
SECTIONS = 3  # ``## `` sections after the intro: 4 chunks a document


@dataclass
class Vocabulary:
    """Words in Zipf rank order (exponent 1.07) and their cumulative weights."""

    words: list[str]
    cum_weights: list[float]
    topics: list[str]  # mid-frequency words, each document's own topic words

    def sample(self, rng: random.Random, n: int) -> list[str]:
        return rng.choices(self.words, cum_weights=self.cum_weights, k=n)


def build_vocabulary(seed: int) -> Vocabulary:
    """Function words first, then pseudo-words with the technical words among ranks 30-600."""
    rng = random.Random(f"vocabulary-{seed}")
    seen = set(FUNCTION_WORDS) | set(TECH_WORDS)
    made: list[str] = []
    while len(made) < PSEUDO_WORDS:
        word = "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4)))
        if word not in seen:
            seen.add(word)
            made.append(word)
    for word in TECH_WORDS:
        made.insert(rng.randrange(600), word)
    words = FUNCTION_WORDS + made
    cum = list(itertools.accumulate(1.0 / (rank**1.07) for rank in range(1, len(words) + 1)))
    return Vocabulary(words, cum, made[300:2_000])


# --------------------------------------------------------------------------- corpus + cases


@dataclass
class Document:
    """A generated seed document, kept as words for the queries."""

    source: str
    category: str
    topics: list[str]
    sections: list[list[str]]  # the words of the intro and of each section


def _sentences(rng: random.Random, words: list[str]) -> str:
    """Capitalised sentences of 6-14 words, each ending with a period."""
    out: list[str] = []
    at = 0
    while at < len(words):
        n = rng.randint(6, 14)
        part = words[at : at + n]
        at += n
        out.append(" ".join([part[0].capitalize(), *part[1:]]) + ".")
    return " ".join(out)


def generate_docs(n_docs: int, seed: int, vocab: Vocabulary) -> tuple[list[Document], list[str]]:
    """``n_docs`` documents and their Markdown files (frontmatter + intro + sections)."""
    rng = random.Random(f"docs-{seed}-{n_docs}")
    categories = list(CATEGORIES)
    docs: list[Document] = []
    files: list[str] = []
    for d in range(n_docs):
        category = categories[d % len(categories)]
        cat_title, areas = CATEGORIES[category]
        topics = [*rng.sample(vocab.topics, 2), rng.choice(TECH_WORDS)]
        title = " ".join(w.capitalize() for w in topics)
        doc = Document(f"bench-{d:04d}", category, topics, [])
        parts: list[str] = []
        for s in range(SECTIONS + 1):
            words = vocab.sample(rng, rng.randint(40, 80))
            for _ in range(rng.randint(1, 3)):
                words.insert(rng.randrange(len(words) + 1), rng.choice(topics))
            doc.sections.append(words)
            text = _sentences(rng, words)
            if s:
                heading = " ".join(
                    w.capitalize() for w in [rng.choice(topics), *vocab.sample(rng, 2)]
                )
                text = f"## {heading}\n\n{text}"
            parts.append(text)
        header = {
            "source": doc.source,
            "doc_id": f"doc-{doc.source}",
            "title": title,
            "breadcrumb": f"{cat_title} > {rng.choice(areas)} > {title}",
            "category": category,
            "kb_scope": SCOPE,
        }
        lines = ["---", *(f"{k}: {json.dumps(v)}" for k, v in header.items()), "---", ""]
        files.append("\n".join([*lines, "\n\n".join(parts), ""]))
        docs.append(doc)
    return docs, files


def generate_cases(docs: list[Document], n_cases: int, seed: int) -> dict[str, Any]:
    """The golden-cases file: one query a case from one section of one document."""
    rng = random.Random(f"cases-{seed}-{n_cases}")
    function_words = set(FUNCTION_WORDS)
    cases: list[dict[str, Any]] = []
    for i in range(n_cases):
        doc = rng.choice(docs)
        words = rng.choice(doc.sections)
        n = rng.randint(3, 6)
        if rng.random() < 0.6:
            at = rng.randrange(len(words) - n + 1)
            picked = words[at : at + n]
        else:
            content = [w for w in words if w not in function_words]
            picked = rng.sample(content, min(n, len(content)))
        if rng.random() < 0.3:
            picked.insert(rng.randrange(len(picked) + 1), rng.choice(doc.topics))
        cases.append(
            {
                "id": f"bench-{i:05d}",
                "query": " ".join(picked),
                "language": "en",
                "category": doc.category,
                "split": "dev" if i % 5 < 3 else "test",
                "kbScope": SCOPE,
                "topK": TOP_K,
                "expectedSources": [doc.source],
            }
        )
    return {
        "schemaVersion": 1,
        "description": f"snapshot_http benchmark: {n_cases} generated cases (seed {seed})",
        "cases": cases,
    }


def write_inputs(root: Path, n_docs: int, n_cases: int, seed: int) -> tuple[Path, Path]:
    """Write the seed documents and the cases file; return their paths."""
    vocab = build_vocabulary(seed)
    docs, files = generate_docs(n_docs, seed, vocab)
    docs_dir = root / "seed-docs"
    shutil.rmtree(docs_dir, ignore_errors=True)
    docs_dir.mkdir(parents=True)
    for doc, text in zip(docs, files, strict=True):
        (docs_dir / f"{doc.source}.md").write_text(text, encoding="utf-8")
    cases = root / "cases" / "golden-cases.json"
    cases.parent.mkdir(parents=True, exist_ok=True)
    data = generate_cases(docs, n_cases, seed)
    cases.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return docs_dir, cases


# --------------------------------------------------------------------------- processes


def child_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO / "eval"), "PYTHONIOENCODING": "utf-8"}


def ragsnap(*args: str) -> list[str]:
    return [sys.executable, "-m", "ragsnap", *args]


@dataclass
class Measured:
    """One child process: wall, CPU (user + system) and peak RSS, with its output."""

    wall: float
    cpu: float
    peak_mb: float
    stdout: str


def measure(argv: Sequence[str], cwd: Path, log: Path) -> Measured:
    """Run ``argv`` under ``/usr/bin/time`` (peak RSS of that child alone); stop on failure."""
    report = log.with_suffix(".time")
    command = [str(TIME), "-o", str(report), "-f", "%U %S %M", *argv] if TIME.is_file() else argv
    start = time.perf_counter()
    proc = subprocess.run(command, cwd=cwd, capture_output=True, text=True, env=child_env())
    wall = time.perf_counter() - start
    log.with_suffix(".out").write_text(proc.stdout + proc.stderr, encoding="utf-8")
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout + proc.stderr)
        raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}")
    if TIME.is_file():
        user, system, peak_kb = report.read_text().split()[-3:]
        return Measured(wall, float(user) + float(system), int(peak_kb) / 1024, proc.stdout)
    return Measured(wall, float("nan"), float("nan"), proc.stdout)


class Server:
    """``ragsnap serve`` as a real process on a free loopback port (tests/conftest.py's way)."""

    def __init__(self, argv: Sequence[str], cwd: Path, log: Path):
        self.log = log.open("w", encoding="utf-8")
        self.proc = subprocess.Popen(
            argv,
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=self.log,
            text=True,
            env=child_env(),
            start_new_session=True,  # its own process group: ``stop`` can end the workers too
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()  # printed once the socket listens
        match = re.search(r"http://[^\s]+:\d+", line)
        if match is None:
            self.stop()
            raise SystemExit(f"ragsnap serve did not start: {line!r}; see {log}")
        self.base_url = match.group(0)
        self.banner = line.strip()
        self._threads: dict[tuple[int, str], int] = {}  # on-CPU ns by (process, thread)

    def pids(self) -> list[int]:
        """The serve process and its worker processes (its children, from ``/proc``)."""
        pids = [self.proc.pid]
        for task in Path(f"/proc/{self.proc.pid}/task").iterdir():
            children = (task / "children").read_text().split()
            pids += [int(pid) for pid in children]
        return pids

    def cpu_seconds(self) -> float:
        """CPU time of the serve process and its workers so far: the nanosecond on-CPU
        time of each thread (``/proc/PID/task/TID/schedstat``), threads that have ended
        counted with their last reading (the thread pool ends idle threads); user +
        system in clock ticks (``/proc/PID/stat``, 10 ms steps) where there is none."""
        try:
            for pid in self.pids():
                for task in Path(f"/proc/{pid}/task").iterdir():
                    with contextlib.suppress(FileNotFoundError):  # a thread that just ended
                        ns = int((task / "schedstat").read_text().split()[0])
                        self._threads[(pid, task.name)] = ns
            return sum(self._threads.values()) / 1e9
        except (OSError, ValueError, IndexError):
            total = 0
            for pid in self.pids():
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                total += int(fields[11]) + int(fields[12])
            return total / CLOCK_TICKS

    def peak_rss_mb(self) -> list[float]:
        """Each process's own high-water mark (``VmHWM``): the serve process, then workers."""
        peaks = []
        for pid in self.pids():
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    peaks.append(int(line.split()[1]) / 1024)
        return peaks

    def stop(self) -> str:
        """SIGINT, as a user's Ctrl-C (uvicorn stops cleanly), then the rest of its stdout.

        A process started with SIGINT ignored (the benchmark run as a background job of a
        script: the shell makes such jobs ignore it, and so do their children) gets
        SIGTERM after 10 s, which serve also stops on; after 60 s more, its whole process
        group is killed, so that no worker outlives it holding its stdout open."""
        out = ""
        for sig, wait_s in ((signal.SIGINT, 10), (signal.SIGTERM, 60)):
            if self.proc.poll() is None:
                self.proc.send_signal(sig)
            try:
                out, _ = self.proc.communicate(timeout=wait_s)
                break
            except subprocess.TimeoutExpired:
                continue
        else:  # a hung server
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            out, _ = self.proc.communicate()
        self.log.close()
        return out


def warm_up(base_url: str, queries: Sequence[str]) -> None:
    """Send ``queries`` to the service's lookup endpoint from 8 threads, one connection
    each, so every worker builds its postings and loads its vectors."""
    from concurrent.futures import ThreadPoolExecutor

    from ragsnap.io.httpclient import HttpClient

    client = HttpClient(base_url)
    try:
        with ThreadPoolExecutor(max_workers=8) as pool:
            list(
                pool.map(
                    lambda query: client.post_json(
                        "/api/knowledge/lookup", {"query": query, "kbScope": SCOPE, "topK": TOP_K}
                    ),
                    queries,
                )
            )
    finally:
        client.close()


@dataclass
class CpuRound:
    """One round of the CPU measurement: per lookup, in ms (CPU times from ``/proc`` and
    ``time.thread_time``; the load average before and after)."""

    order: list[str]
    serve_cpu: float  # http c=1: the serve processes' CPU a lookup
    client_cpu: float  # http c=1: this thread's CPU in HttpService.lookup a lookup
    http_wall: float  # http c=1: round trip, wall, a lookup
    pipeline_cpu: float  # in process: this thread's CPU in Pipeline.lookup a lookup
    pipeline_wall: float
    c8_wall: float  # http c=8: wall a lookup
    c8_cpu: float  # http c=8: serve + this process's CPU a lookup
    c8_idle: float  # http c=8: share of the machine's CPU time idle (``/proc/stat``)


@dataclass
class CpuVerdicts:
    """Rounds of ``cpu_rounds`` and the load average around them."""

    rounds: list[CpuRound]
    n: int  # lookups a side a round
    usable: int  # CPUs this process may use
    load_before: str
    load_after: str

    def median(self, key: str) -> float:
        return float(statistics.median(getattr(r, key) for r in self.rounds))

    def efficiency(self, r: CpuRound) -> float:
        """cases/s x CPU a case / usable CPUs: the share of the CPUs c=8 keeps busy."""
        return (1000 / r.c8_wall) * (r.c8_cpu / 1000) / self.usable


def _load_average() -> str:
    """The 1, 5 and 15 minute load averages."""
    path = Path("/proc/loadavg")
    return " ".join(path.read_text().split()[:3]) if path.is_file() else "unknown"


def _machine_ticks() -> tuple[int, int]:
    """Idle (idle + iowait) and total jiffies of every CPU so far (``/proc/stat``)."""
    path = Path("/proc/stat")
    if not path.is_file():
        return 0, 0
    fields = [int(x) for x in path.read_text().splitlines()[0].split()[1:9]]
    return fields[3] + fields[4], sum(fields)


def cpu_rounds(
    server: Server, kb: Path, queries: Sequence[str], n_rounds: int, n: int, seed: int
) -> CpuVerdicts:
    """``n_rounds`` rounds; in each, a random sample of ``n`` of ``queries`` runs three
    ways in random order: one at a time over HTTP through ``HttpService`` (the
    snapshot's client), reading the serve processes' CPU before and after; in this
    process through ``Pipeline.lookup`` (the service's own call, latencies recorded),
    timed by this thread's CPU clock; and over HTTP from 8 threads (as ``snapshot
    --concurrency 8``), with this process's and the service's CPU."""
    import argparse as _argparse
    from concurrent.futures import ThreadPoolExecutor

    from ragsnap.commands._kb import open_pipeline
    from ragsnap.config import Config
    from ragsnap.kb.backends.http import HttpMapping, HttpService

    rng = random.Random(f"cpu-rounds-{seed}")
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    load_before = _load_average()
    rounds: list[CpuRound] = []
    # the service's settings: the work folder has no ragsnap.yaml
    namespace = _argparse.Namespace(kb=kb)
    with (
        open_pipeline("embedded", namespace, Config()) as pipeline,
        HttpService(HttpMapping(), base_url=server.base_url) as service,
        ThreadPoolExecutor(max_workers=8) as pool,
    ):
        service.generator()  # the health answer, fetched once, as snapshot does

        def in_process(query: str) -> None:
            pipeline.lookup(query, kb_scope=SCOPE, top_k=TOP_K, record_latency=True)

        def over_http(query: str) -> None:
            service.lookup(query, kb_scope=SCOPE, top_k=TOP_K)

        for query in queries[:WARMUP]:  # this process's postings and vectors
            in_process(query)
        list(pool.map(over_http, queries[:WARMUP]))  # and the pool's connections
        for _ in range(n_rounds):
            batch = rng.sample(list(queries), n)
            order = ["http-c1", "in-process", "http-c8"]
            rng.shuffle(order)
            got: dict[str, float] = {}
            for side in order:
                wall, thread = time.perf_counter(), time.thread_time()
                process, serve = time.process_time(), server.cpu_seconds()
                idle, total = _machine_ticks()
                if side == "in-process":
                    for query in batch:
                        in_process(query)
                elif side == "http-c1":
                    for query in batch:
                        over_http(query)
                else:
                    list(pool.map(over_http, batch))
                per = 1000 / n
                got[f"{side}-wall"] = (time.perf_counter() - wall) * per
                got[f"{side}-thread"] = (time.thread_time() - thread) * per
                got[f"{side}-process"] = (time.process_time() - process) * per
                got[f"{side}-serve"] = (server.cpu_seconds() - serve) * per
                idle_after, total_after = _machine_ticks()
                got[f"{side}-idle"] = (idle_after - idle) / max(total_after - total, 1)
            rounds.append(
                CpuRound(
                    order,
                    serve_cpu=got["http-c1-serve"],
                    client_cpu=got["http-c1-thread"],
                    http_wall=got["http-c1-wall"],
                    pipeline_cpu=got["in-process-thread"],
                    pipeline_wall=got["in-process-wall"],
                    c8_wall=got["http-c8-wall"],
                    c8_cpu=got["http-c8-serve"] + got["http-c8-process"],
                    c8_idle=got["http-c8-idle"],
                )
            )
            r = rounds[-1]
            print(
                f"cpu round {len(rounds)} ({', '.join(order)}): serve {r.serve_cpu:.2f} ms "
                f"a lookup, in process {r.pipeline_cpu:.2f}; c=8 {1000 / r.c8_wall:.0f} "
                f"lookups/s",
                file=sys.stderr,
            )
    return CpuVerdicts(rounds, n, usable or 1, load_before, _load_average())


# --------------------------------------------------------------------------- one run


SNAPSHOT_LINE = re.compile(r"snapshot: (\d+) case\(s\) from (.+) in ([\d.]+) s: ")


@dataclass
class Run:
    """One timed snapshot process."""

    side: str
    round_no: int
    fixtures: Path
    wall: float
    lookup_s: float  # what the command printed (0.1 s resolution)
    cpu: float
    peak_mb: float
    server_cpu: float | None


@dataclass
class Setup:
    """The work folder, its knowledge base and cases, and the running service."""

    root: Path
    kb: Path
    cases: Path
    n_cases: int
    server: Server | None = None
    logs: Path = field(init=False)

    def __post_init__(self) -> None:
        self.logs = self.root / "logs"
        self.logs.mkdir(exist_ok=True)


def snapshot_argv(setup: Setup, side: str, fixtures: Path) -> list[str]:
    args = [
        "snapshot",
        *SIDES[side][1],
        "--cases",
        str(setup.cases),
        "--fixtures",
        str(fixtures),
        "--retrieved-at",
        RETRIEVED_AT,
        "--skip-eval",
    ]
    if side == EMBEDDED:
        args += ["--kb", str(setup.kb)]
    else:
        assert setup.server is not None
        args += ["--base-url", setup.server.base_url]
    return args


def run_side(setup: Setup, side: str, round_no: int) -> Run:
    """One snapshot process of ``side`` into a fresh fixtures folder."""
    fixtures = setup.root / "fixtures" / f"r{round_no + 1}-{side}"
    shutil.rmtree(fixtures, ignore_errors=True)
    server = setup.server if side != EMBEDDED else None
    before = server.cpu_seconds() if server else 0.0
    m = measure(
        ragsnap(*snapshot_argv(setup, side, fixtures)),
        setup.root,
        setup.logs / f"r{round_no + 1}-{side}",
    )
    server_cpu = server.cpu_seconds() - before if server else None
    match = SNAPSHOT_LINE.search(m.stdout)
    if match is None or int(match[1]) != setup.n_cases:
        raise SystemExit(f"unexpected snapshot output for {side}: {m.stdout!r}")
    written = len(fixture_files(fixtures))
    if written != setup.n_cases:
        raise SystemExit(f"{side}: {written} fixtures written, expected {setup.n_cases}")
    return Run(side, round_no, fixtures, m.wall, float(match[3]), m.cpu, m.peak_mb, server_cpu)


# --------------------------------------------------------------------------- fixture check


@dataclass
class Check:
    """How a fixtures folder compares with the reference (embedded, round 1)."""

    label: str
    same: int = 0
    differ: list[str] = field(default_factory=list)
    generators: set[str] = field(default_factory=set)


def _load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_bytes())
    return data


def fixture_files(folder: Path) -> list[Path]:
    """The fixtures in ``folder``, by name: not ``_manifest.json`` (names starting ``_``)."""
    return sorted(p for p in folder.glob("*.json") if not p.name.startswith("_"))


def compare(reference: Path, other: Path, label: str, *, exact: bool) -> Check:
    """Every fixture equal but for ``retrievedAt``, latencies and ``generator``; bytes
    with ``exact``."""
    from ragsnap.snapshot.fixturediff import compare_fixtures

    check = Check(label)
    for ref_path in fixture_files(reference):
        path = other / ref_path.name
        if exact:
            equal = path.is_file() and path.read_bytes() == ref_path.read_bytes()
        else:
            ref, new = _load(ref_path), _load(path)
            check.generators.add(json.dumps(new.get("generator"), sort_keys=True))
            ref.pop("generator", None)
            new.pop("generator", None)
            comparison = compare_fixtures(ref, new, tolerance=0.0)
            equal = not comparison.changed and comparison.diagnostics == 0
        if equal:
            check.same += 1
        else:
            check.differ.append(ref_path.stem)
    return check


# --------------------------------------------------------------------------- report


def _proc_field(path: str, key: str) -> str | None:
    """The value of the first ``key: value`` line of a /proc file, if there is one."""
    file = Path(path)
    if file.is_file():
        for line in file.read_text().splitlines():
            if line.startswith(key):
                return line.split(":", 1)[1].strip()
    return None


def machine_line() -> str:
    model = _proc_field("/proc/cpuinfo", "model name") or platform.processor() or "unknown CPU"
    memory = _proc_field("/proc/meminfo", "MemTotal")
    ram = f", {int(memory.split()[0]) / 2**20:.0f} GB RAM" if memory else ""
    return (
        f"Machine: {os.cpu_count()} CPUs ({model}){ram}, {platform.system()} "
        f"{platform.release()} {platform.machine()}"
    )


def versions_line() -> str:
    names = (
        "fastapi",
        "starlette",
        "uvicorn",
        "pydantic",
        "anyio",
        "h11",
        "requests",
        "urllib3",
        "orjson",
    )
    return (
        f"Python {platform.python_version()}, ragsnap {version('ragsnap')}, "
        + ", ".join(f"{n} {version(n)}" for n in names)
        + f", numpy {version('numpy')}, SQLite {sqlite3.sqlite_version}; "
        f"uvloop {version('uvloop')}, httptools {version('httptools')}"
    )


@dataclass
class Summary:
    """Medians of one side over the rounds."""

    label: str
    wall: float
    lookup_s: float
    cpu: float
    peak_mb: float
    server_cpu: float | None

    @staticmethod
    def of(label: str, runs: list[Run]) -> Summary:
        server = [r.server_cpu for r in runs if r.server_cpu is not None]
        return Summary(
            label,
            statistics.median(r.wall for r in runs),
            # the command prints tenths of a second: never divide by a 0.0
            max(statistics.median(r.lookup_s for r in runs), 0.05),
            statistics.median(r.cpu for r in runs),
            max(r.peak_mb for r in runs),
            statistics.median(server) if server else None,
        )


def print_table(n_cases: int, runs: dict[str, list[Run]]) -> dict[str, Summary]:
    """The table of medians; return them."""
    n_rounds = len(runs[PEER])
    summary = {side: Summary.of(SIDES[side][0], runs[side]) for side in SIDES}
    peer = summary[PEER]
    print()
    print(
        f"Snapshot throughput, {n_cases:,} cases, medians of {n_rounds} round(s). cases/s: "
        "higher is better; ratio = the side's cases/s / http c=1 cases/s (the peer)"
    )
    head = (
        f"| {'side':<28} | {'lookup s':>8} | {'cases/s':>7} | {'ratio':>5} | {'wall s':>6} "
        f"| {'cases/s':>7} | {'ratio':>5} | {'client CPU s':>12} | {'serve CPU s':>11} "
        f"| {'client peak':>11} |"
    )
    print(head)
    print("|" + "|".join("-" * (len(c) + 2) for c in head.strip("| ").split(" | ")) + "|")
    for s in summary.values():
        server = f"{s.server_cpu:.2f}" if s.server_cpu is not None else "-"
        print(
            f"| {s.label:<28} | {s.lookup_s:>8.1f} | {n_cases / s.lookup_s:>7.0f} | "
            f"{peer.lookup_s / s.lookup_s:>5.2f} | {s.wall:>6.2f} | {n_cases / s.wall:>7.0f} | "
            f"{peer.wall / s.wall:>5.2f} | {s.cpu:>12.2f} | {server:>11} | "
            f"{s.peak_mb:>8.0f} MB |"
        )
    print(
        "lookup s: the lookup phase, as the command prints it (opening the source, every "
        "lookup, checking and encoding each fixture; 0.1 s resolution); wall s: the whole "
        "process measured from outside (start-up, reading the cases, the lookup phase, "
        "writing the fixtures); CPU: user + system of the snapshot process and, during it, "
        "of the serve process and its workers"
    )
    if n_rounds > 1:
        for what, key in (("lookup s", "lookup_s"), ("wall s", "wall")):
            print(
                f"{what} of each round: "
                + "; ".join(
                    f"{side} " + ", ".join(f"{getattr(r, key):.2f}" for r in runs[side])
                    for side in SIDES
                )
            )
    for side, s in summary.items():
        cpu = s.cpu + (s.server_cpu or 0.0)
        serve = f" + serve {s.server_cpu / n_cases * 1000:.2f}" if s.server_cpu else ""
        print(
            f"{side}: {s.lookup_s / n_cases * 1000:.2f} ms a case in the lookup phase; "
            f"{cpu / n_cases * 1000:.2f} ms of CPU a case (client {s.cpu / n_cases * 1000:.2f}"
            f"{serve}, whole processes); {cpu / s.wall:.2f} of {os.cpu_count()} CPUs busy "
            "on average"
        )
    return summary


def print_cpu(v: CpuVerdicts) -> tuple[bool, bool]:
    """The CPU rounds and the two targets; return whether each is met."""
    print()
    print(
        f"Service CPU a lookup, {len(v.rounds)} rounds of {v.n} lookups a side, sides in "
        f"random order (load average before {v.load_before}, after {v.load_after}); ms a "
        "lookup"
    )
    head = (
        "| round | order | serve CPU (c=1) | in process CPU | HTTP stack | client CPU "
        "| round trip | c=8 lookups/s | c=8 CPU | efficiency | c=8 idle |"
    )
    print(head)
    print("|" + "|".join("---" for _ in head.strip("| ").split(" | ")) + "|")
    for i, r in enumerate(v.rounds, 1):
        print(
            f"| {i} | {', '.join(r.order)} | {r.serve_cpu:.3f} | {r.pipeline_cpu:.3f} | "
            f"{r.serve_cpu - r.pipeline_cpu:.3f} | {r.client_cpu:.3f} | {r.http_wall:.3f} | "
            f"{1000 / r.c8_wall:.0f} | {r.c8_cpu:.3f} | {v.efficiency(r):.2f} | "
            f"{r.c8_idle:.2f} |"
        )
    serve, pipeline = v.median("serve_cpu"), v.median("pipeline_cpu")
    bound = TARGET_CPU_RATIO * pipeline + TARGET_CPU_EXTRA_MS
    ok_cpu = serve <= bound
    print(
        f"Target (a) service CPU a lookup over HTTP <= {TARGET_CPU_RATIO:.1f} x the same "
        f"lookup's CPU in process + {TARGET_CPU_EXTRA_MS} ms (medians): "
        f"{'PASS' if ok_cpu else 'FAIL'} ({serve:.3f} ms against {pipeline:.3f} ms in "
        f"process: {serve / pipeline:.2f} x, HTTP stack {serve - pipeline:.3f} ms; bound "
        f"{bound:.3f} ms)"
    )
    efficiency = statistics.median(v.efficiency(r) for r in v.rounds)
    idle = v.median("c8_idle")
    ok_eff = efficiency >= TARGET_EFFICIENCY
    print(
        f"Target (b) c=8 saturation efficiency (lookups/s x CPU a lookup, service + client, "
        f"/ {v.usable} usable CPUs) >= {TARGET_EFFICIENCY} on a quiet machine (median): "
        f"{'PASS' if ok_eff else 'FAIL'} ({efficiency:.2f}; load average before "
        f"{v.load_before}, after {v.load_after}; during c=8 the machine's CPUs were idle "
        f"{idle:.0%} of the time and ran other processes {max(1 - efficiency - idle, 0):.0%})"
    )
    return ok_cpu, ok_eff


def print_report(
    n_cases: int, runs: dict[str, list[Run]], checks: list[Check], cpu: CpuVerdicts, workers: str
) -> bool:
    """The table, the fixture check and the CPU targets; return whether all are met."""
    summary = print_table(n_cases, runs)
    peer, c8 = summary[PEER], summary[C8]
    print(
        f"http c=8 / c=1 throughput (information; the machine's CPUs bound it, see "
        f"benchmarks/README.md): {peer.lookup_s / c8.lookup_s:.2f} over the lookup phase, "
        f"{peer.wall / c8.wall:.2f} as whole processes; service: {workers}"
    )
    print()
    ok_fixtures = True
    for check in checks:
        total = check.same + len(check.differ)
        ok_fixtures &= not check.differ
        listed = ", ".join(check.differ[:5]) + (" ..." if len(check.differ) > 5 else "")
        print(
            f"Fixtures {check.label}: {check.same}/{total} equal"
            + (f"; differ: {listed}" if check.differ else "")
        )
    generators = sorted(set().union(*(c.generators for c in checks)))
    if generators:
        print("HTTP generator blocks (left out of the check): " + "; ".join(generators))
    print(f"Fixture check: {'PASS' if ok_fixtures else 'FAIL'}")

    ok_cpu, ok_eff = print_cpu(cpu)
    print(machine_line())
    return ok_cpu and ok_eff and ok_fixtures


# --------------------------------------------------------------------------- profile

# Runs ``python -m ragsnap ARGS`` with a cProfile per thread, all on the thread's own
# CPU clock, and writes the merged statistics to OUT: python -c PROFILER OUT ARGS...
PROFILER = """
import cProfile, pstats, sys, threading, time
out, args = sys.argv[1], sys.argv[2:]
profiles = []
def start(*_):
    profile = cProfile.Profile(time.thread_time)
    profiles.append(profile)
    profile.enable()
threading.setprofile(start)
from ragsnap.cli import main
main_profile = cProfile.Profile(time.thread_time)
main_profile.enable()
try:
    code = main(args)
finally:
    main_profile.disable()
    stats = pstats.Stats(main_profile)
    for profile in list(profiles):
        stats.add(profile)
    stats.dump_stats(out)
sys.exit(code)
"""


def profile_http(setup: Setup, n_top: int = 25) -> None:
    """One more http c=8 snapshot with the service (one worker: a profiler sees one
    process) and the client each profiled."""
    prof_dir = setup.root / "profile"
    prof_dir.mkdir(exist_ok=True)
    server_prof, client_prof = prof_dir / "serve.prof", prof_dir / "snapshot.prof"
    python = [sys.executable, "-c", PROFILER]
    serve = ["serve", "--kb", str(setup.kb), "--port", "0", "--workers", "1"]
    server = Server(
        [*python, str(server_prof), *serve],
        setup.root,
        setup.logs / "profile-serve.err",
    )
    try:
        warm_up(server.base_url, ["warm up the service"] * WARMUP)
        profiled = Setup(setup.root, setup.kb, setup.cases, setup.n_cases, server)
        fixtures = setup.root / "fixtures" / "profile-http-c8"
        shutil.rmtree(fixtures, ignore_errors=True)
        argv = [*python, str(client_prof), *snapshot_argv(profiled, C8, fixtures)]
        m = measure(argv, setup.root, setup.logs / "profile-http-c8")
    finally:
        server.stop()
    print()
    print(
        f"Profile of one http c=8 snapshot against one worker ({m.wall:.2f} s wall under "
        "the profilers): "
        "CPU seconds per thread clock, summed over threads"
    )
    for name, path in (("serve process", server_prof), ("snapshot client", client_prof)):
        if not path.is_file():
            print(f"{name}: no profile written")
            continue
        stats = pstats.Stats(str(path), stream=sys.stdout)
        total = getattr(stats, "total_tt", float("nan"))  # not in the type stubs
        print(f"\n{name}: {total:.2f} s CPU; top {n_top} by own time")
        stats.sort_stats("tottime").print_stats(n_top)
        print(f"{name}: top {n_top} by cumulative time")
        stats.sort_stats("cumulative").print_stats(n_top)


# --------------------------------------------------------------------------- driver


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Command-line options; every help states its default."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--cases",
        type=int,
        default=1000,
        help="golden cases to snapshot, at least 100 (default: 1000)",
    )
    parser.add_argument(
        "--docs", type=int, default=300, help="seed documents, 4 chunks each (default: 300)"
    )
    parser.add_argument(
        "--workers",
        type=int,
        help="ragsnap serve --workers (default: serve's default, the CPUs up to 4)",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="rounds of the three sides, in rotating order; medians are reported (default: 3)",
    )
    parser.add_argument(
        "--cpu-rounds",
        type=int,
        default=CPU_ROUNDS,
        help=f"rounds of the CPU measurement (default: {CPU_ROUNDS})",
    )
    parser.add_argument(
        "--lookups",
        type=int,
        default=LOOKUPS,
        help=f"lookups a side a round in the CPU measurement (default: {LOOKUPS})",
    )
    add_folder_options(
        parser,
        DEFAULT_SEED,
        "write the corpus, knowledge base, cases, fixtures and logs here and keep them "
        "(default: a temporary folder)",
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="after the rounds, cProfile one more http c=8 snapshot, service and client "
        "(default: off)",
    )
    args = parser.parse_args(argv)
    if (
        args.cases < 100
        or args.docs < 10
        or min(args.rounds, args.cpu_rounds, args.lookups, args.workers or 1) < 1
    ):
        parser.error(
            "--cases must be at least 100, --docs at least 10, --rounds, --cpu-rounds, "
            "--lookups and --workers at least 1"
        )
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; return 0 when both targets are met and the fixtures agree, else 1."""
    args = parse_args(argv)
    try:
        import fastapi  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        raise SystemExit("ragsnap serve needs its extra: pip install 'ragsnap[serve]'") from None
    started = time.perf_counter()
    print(machine_line())
    print(versions_line())
    with work_folder(args.workdir, "ragsnap-snapshot-http-", args.keep, "Work folder") as root:
        docs_dir, cases = write_inputs(root, args.docs, args.cases, args.seed)
        kb = root / "kb.sqlite"
        for suffix in ("", "-wal", "-shm"):
            Path(f"{kb}{suffix}").unlink(missing_ok=True)
        setup = Setup(root, kb, cases, args.cases)
        seeded = measure(
            ragsnap("seed", "--kb", str(kb), "--seed-docs", str(docs_dir)),
            root,
            setup.logs / "seed",
        )
        print(
            f"Corpus: {args.docs} documents in kb_scope {SCOPE!r}, seeded in {seeded.wall:.2f} s "
            f"({seeded.stdout.strip().splitlines()[-1]}); {args.cases:,} cases, topK {TOP_K}"
        )
        queries = [c["query"] for c in json.loads(cases.read_text("utf-8"))["cases"]]
        workers = ["--workers", str(args.workers)] if args.workers else []
        setup.server = Server(
            ragsnap("serve", "--kb", str(kb), "--port", "0", *workers),
            root,
            setup.logs / "serve.err",
        )
        runs: dict[str, list[Run]] = {side: [] for side in SIDES}
        try:
            print(f"Service: {setup.server.banner}", flush=True)
            match = re.search(r"\d+ workers?", setup.server.banner)
            parser = "httptools" if version("httptools")[0].isdigit() else "h11"
            serving = (
                f"ragsnap serve, {match.group(0) if match else '? workers'}, uvicorn "
                f"{version('uvicorn')} ({parser}), one lookup a worker at a time"
            )
            warm_up(setup.server.base_url, queries[:WARMUP])
            cpu = cpu_rounds(
                setup.server,
                kb,
                queries,
                args.cpu_rounds,
                min(args.lookups, len(queries)),
                args.seed,
            )
            names = list(SIDES)
            for round_no in range(args.rounds):
                shift = round_no % len(names)
                for side in names[shift:] + names[:shift]:
                    run = run_side(setup, side, round_no)
                    runs[side].append(run)
                    print(
                        f"round {round_no + 1}: {side:<8} {run.wall:6.2f} s "
                        f"({args.cases / run.wall:,.0f} cases/s)",
                        file=sys.stderr,
                    )
            server_peaks = setup.server.peak_rss_mb()
        finally:
            setup.server.stop()
        reference = runs[EMBEDDED][0].fixtures
        checks = (
            [
                compare(
                    c1.fixtures,
                    c8.fixtures,
                    f"http-c8 round {c8.round_no + 1} vs http-c1, bytes",
                    exact=True,
                )
                for c1, c8 in zip(runs[PEER], runs[C8], strict=True)
            ]
            + [
                compare(
                    reference,
                    r.fixtures,
                    f"embedded round {r.round_no + 1} vs round 1, bytes",
                    exact=True,
                )
                for r in runs[EMBEDDED][1:]
            ]
            + [
                compare(
                    reference,
                    r.fixtures,
                    f"{r.side} round {r.round_no + 1} vs embedded",
                    exact=False,
                )
                for side in SIDES
                if side != EMBEDDED
                for r in runs[side]
            ]
        )
        passed = print_report(args.cases, runs, checks, cpu, serving)
        print(
            "serve processes' peak RSS (VmHWM; the serve process, then its workers): "
            + ", ".join(f"{peak:.0f} MB" for peak in server_peaks)
        )
        if args.profile:
            profile_http(setup)
    print(f"Total {time.perf_counter() - started:.1f} s")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())

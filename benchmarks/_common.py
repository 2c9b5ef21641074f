"""Helpers shared by the benchmark scripts in this folder.

The scripts run as ``python benchmarks/<name>.py``, which puts this folder on
``sys.path``, so they import these with ``from _common import ...``. Only what
two or more scripts do the same way lives here: package versions, peak-RSS
readers, the ``--seed``/``--workdir``/``--keep``/``--sizes``/``--data``
options and the work folder those options describe, ``python -m ragsnap`` as a
timed process, reading what ``ragsnap import`` wrote, the CPU's model name, and
sides timed interleaved per call with thread CPU time beside wall time.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

#: The GoodBuddy bilingual set, in ``../shared/data/`` next to the repository.
GOODBUDDY_DATA = (
    Path(__file__).resolve().parents[1].parent
    / "shared"
    / "data"
    / "goodbuddy-synthetic-bilingual-v1.json"
)


# --------------------------------------------------------------------------- environment


def version(package: str) -> str:
    """An installed distribution's version, without importing it."""
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def maxrss_mb() -> float:
    """``getrusage(RUSAGE_SELF).ru_maxrss`` in MB (macOS reports bytes, Linux KiB).

    A child started by a large parent inherits the parent's peak through
    fork + exec, and the value cannot be reset.
    """
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 1024 if sys.platform != "darwin" else peak / 2**20


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``, else ``platform.processor()``),
    with its family/model numbers when known, and the cores this process may use."""
    fields = cpu_description()
    name = fields.get("model name") or platform.processor() or "unknown CPU"
    if "cpu family" in fields and "model" in fields:
        name += f" (family {fields['cpu family']}, model {fields['model']})"
    usable = fields.get("usable cores", fields["cores"])
    return f"{name}; {usable} of {fields['cores']} CPUs usable"


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far, in MB.

    On Linux this is ``VmHWM`` from ``/proc/self/status``: the high-water mark
    of the process's own address space, which starts afresh at exec and can
    be reset (``clear_refs`` 5). ``maxrss_mb`` (``ru_maxrss``) is only the
    fallback, as a child inherits its parent's peak there.
    """
    status = Path("/proc/self/status")
    if status.is_file():
        for line in status.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return maxrss_mb()


def cjk_share(text: str) -> float:
    """Share of the letters and digits in ``text`` that are CJK ideographs."""
    letters = [ch for ch in text if ch.isalnum()]
    cjk = sum(1 for ch in letters if unicodedata.name(ch, "").startswith("CJK"))
    return cjk / max(len(letters), 1)


# --------------------------------------------------------------------------- options


def parse_sizes(text: str, unit: str) -> list[int]:
    """``10000,100000`` (``_`` allowed) as a list of sizes of at least 100 ``unit``."""
    try:
        sizes = [int(x.replace("_", "")) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of integers: {text!r}") from None
    if not sizes or min(sizes) < 100:
        raise argparse.ArgumentTypeError(f"sizes must be at least 100 {unit}")
    return sizes


def add_sizes_option(parser: argparse.ArgumentParser, unit: str, *, sort: bool = False) -> None:
    """``--sizes``: corpus sizes in ``unit``, default 10000,100000 (sorted with ``sort``)."""

    def sizes(text: str) -> list[int]:
        values = parse_sizes(text, unit)
        return sorted(values) if sort else values

    parser.add_argument(
        "--sizes",
        type=sizes,
        default=[10_000, 100_000],
        help=f"corpus sizes in {unit}, comma-separated (default: 10000,100000)",
    )


def add_folder_options(parser: argparse.ArgumentParser, seed: int, workdir_help: str) -> None:
    """``--seed`` (default ``seed``), ``--workdir`` (help ``workdir_help``) and ``--keep``."""
    parser.add_argument("--seed", type=int, default=seed, help=f"random seed (default: {seed})")
    parser.add_argument("--workdir", type=Path, help=workdir_help)
    parser.add_argument(
        "--keep", action="store_true", help="keep the temporary folder (default: delete it)"
    )


def add_data_option(parser: argparse.ArgumentParser) -> None:
    """``--data``: the GoodBuddy JSON file, default ``GOODBUDDY_DATA``."""
    parser.add_argument(
        "--data",
        type=Path,
        default=GOODBUDDY_DATA,
        help="the GoodBuddy JSON file (default: ../shared/data/ next to the repository)",
    )


# --------------------------------------------------------------------------- ragsnap


def ragsnap_process(
    argv: Sequence[str], cwd: Path
) -> tuple[subprocess.CompletedProcess[str], float]:
    """``python -m ragsnap ARGV`` as its own process: the result and its wall time."""
    gc.collect()
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "ragsnap", *argv],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )
    return done, time.perf_counter() - start


def read_import(folder: Path) -> tuple[list[str], list[str], list[dict[str, Any]]]:
    """What ``ragsnap import`` wrote in ``folder``: the corpus's sources and texts, in
    file order, and the golden cases."""
    sources: list[str] = []
    texts: list[str] = []
    with (folder / "corpus.jsonl").open("rb") as lines:
        for raw in lines:
            if raw.strip():
                doc = json.loads(raw)
                sources.append(doc["source"])
                texts.append(doc["text"])
    cases: list[dict[str, Any]] = json.loads((folder / "golden-cases.json").read_text("utf-8"))[
        "cases"
    ]
    return sources, texts, cases


# --------------------------------------------------------------------------- work folder


@contextlib.contextmanager
def work_folder(
    workdir: Path | None,
    prefix: str,
    keep: bool,
    what: str,
    *,
    enter: bool = False,
) -> Iterator[Path]:
    """The folder of ``--workdir`` (resolved, created) or a new temporary one.

    With ``enter`` the block runs with it as the current directory, and the
    previous one is restored before clean-up. At the end a temporary folder
    is deleted unless ``keep``; a kept or given one is reported as
    ``"{what} kept in {folder}"``.
    """
    if workdir is not None:
        folder = workdir.resolve()
        folder.mkdir(parents=True, exist_ok=True)
    else:
        folder = Path(tempfile.mkdtemp(prefix=prefix))
    home = Path.cwd()
    try:
        if enter:
            os.chdir(folder)
        try:
            yield folder
        finally:
            if enter:
                os.chdir(home)
    finally:
        if workdir is None and not keep:
            shutil.rmtree(folder, ignore_errors=True)
        else:
            print(f"{what} kept in {folder}")


def cpu_description() -> dict[str, str]:
    """CPU model, family/model numbers, MHz and cache from ``/proc/cpuinfo``; cores."""
    info: dict[str, str] = {}
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        for line in cpuinfo.read_text().splitlines():
            key, _, value = line.partition(":")
            key = key.strip()
            if key in ("model name", "cpu family", "model", "cpu MHz", "cache size"):
                info.setdefault(key, value.strip())
    try:
        lscpu = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
    except OSError:
        lscpu = ""
    for line in lscpu.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("Hypervisor vendor", "Thread(s) per core"):
            info.setdefault(key.strip(), value.strip())
    info["cores"] = str(os.cpu_count())
    with contextlib.suppress(AttributeError):
        info["usable cores"] = str(len(os.sched_getaffinity(0)))
    cpu_max = Path("/sys/fs/cgroup/cpu.max")
    if cpu_max.is_file():
        info["cgroup cpu.max"] = cpu_max.read_text().strip()
    return info


@dataclass
class Paired:
    """Per-call wall and thread-CPU times (ms) of sides timed interleaved
    (``interleaved``), with the load average before and after."""

    wall: dict[str, list[float]]
    cpu: dict[str, list[float]]
    load_before: tuple[float, float, float]
    load_after: tuple[float, float, float]

    def p(self, side: str, q: float, cpu: bool = True) -> float:
        """The ``q``-th percentile (numpy's linear interpolation) of a side's times."""
        import numpy as np

        return float(np.percentile((self.cpu if cpu else self.wall)[side], q))

    def ratio(self, side: str, peer: str, q: float = 95, cpu: bool = True) -> float:
        return self.p(side, q, cpu) / self.p(peer, q, cpu)

    def load(self) -> str:
        """The 1-minute load average before and after, for the report."""
        return f"load average {self.load_before[0]:.2f} before, {self.load_after[0]:.2f} after"


def interleaved(
    sides: dict[str, Callable[[Any], object]], items: Sequence[Any], rounds: int, seed: int
) -> Paired:
    """Every item through every side, the sides in a random order for each item (A, B
    then B, A ...), ``rounds`` times over the items, a ``gc.collect()`` before each
    round: each call's wall time (``perf_counter``) and this thread's CPU time
    (``thread_time``: what other processes on a shared machine do not add to), in
    ms. Both sides see the same moments of the machine, so a busy minute moves both."""
    import random

    rng = random.Random(seed)
    names = list(sides)
    wall: dict[str, list[float]] = {name: [] for name in names}
    cpu: dict[str, list[float]] = {name: [] for name in names}
    before = os.getloadavg()
    for _ in range(rounds):
        gc.collect()
        for item in items:
            rng.shuffle(names)
            for name in names:
                call = sides[name]
                start_cpu, start = time.thread_time(), time.perf_counter()
                call(item)
                end, end_cpu = time.perf_counter(), time.thread_time()
                wall[name].append((end - start) * 1000.0)
                cpu[name].append((end_cpu - start_cpu) * 1000.0)
    return Paired(wall, cpu, before, os.getloadavg())


def bm25s_numba(**params: Any) -> Any:
    """``bm25s.BM25(**params)`` on its numba backend, its fastest configuration; exits
    (status 2) when bm25s or numba is missing rather than time a slower peer."""
    try:
        import bm25s
        import numba  # noqa: F401  (bm25s falls back to numpy silently without it)
    except ImportError as exc:
        raise SystemExit(
            f"the peer needs bm25s with numba ({exc.name} is missing): pip install -e '.[bench]'"
        ) from None
    retriever = bm25s.BM25(backend="numba", **params)
    if retriever.backend != "numba":
        raise SystemExit(f"bm25s chose its {retriever.backend} backend, not numba")
    return retriever

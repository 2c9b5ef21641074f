"""Subcommand handlers, imported lazily by ``ragsnap.cli``."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from ..errors import UsageError

if TYPE_CHECKING:  # not imported at start-up: `ragsnap metrics` needs neither
    from ..io.progress import Progress
    from ..models import GoldenCase

_T = TypeVar("_T")

#: Default paths, relative to the project root (the nearest folder, from the current one
#: up, that holds ragsnap.yaml; the current folder when none does); shown in --help.
DEFAULT_BASELINE = Path("reports/baseline.json")
DEFAULT_CASES = Path("cases/golden-cases.json")
DEFAULT_FIXTURES = Path("fixtures")
DEFAULT_JSON_REPORT = Path("reports/current.json")
DEFAULT_MARKDOWN_REPORT = Path("reports/current.md")
DEFAULT_DIFF_JSON = Path("reports/baseline-diff.json")
DEFAULT_DIFF_MARKDOWN = Path("reports/baseline-diff.md")
DEFAULT_LIVE_JSON = Path("reports/live-post-reindex.json")
DEFAULT_LIVE_MARKDOWN = Path("reports/live-post-reindex.md")
DEFAULT_TRIAL_JSON = Path("reports/trial.json")
DEFAULT_TRIAL_MARKDOWN = Path("reports/trial.md")
DEFAULT_TRIAL_DIFF_JSON = Path("reports/trial-diff.json")
DEFAULT_TRIAL_DIFF_MARKDOWN = Path("reports/trial-diff.md")
DEFAULT_TREND_MARKDOWN = Path("reports/trend.md")
DEFAULT_AUDIT_JSON = Path("reports/audit.json")
DEFAULT_AUDIT_MARKDOWN = Path("reports/audit.md")


@contextlib.contextmanager
def one_blas_thread() -> Iterator[None]:
    """BLAS on one thread while the block runs, for commands that run many lookups in
    one process (``snapshot``, ``trial``, ``audit``).

    Their BLAS work is small matrix-vector products (a store's vector scan on the numpy
    kernel, a few thousand rows), which a second thread does not speed up; OpenBLAS's
    extra threads spin between calls instead, on CPUs other work could use. The audit
    of Cranfield (1,400 documents, 225 cases) took 16.3 s CPU for 10.2 s wall with the
    default threads, 10.3 s CPU for 10.4 s wall on one. The products are exact
    (integer-valued float32, ``ragsnap.kb.numeric``), so no result depends on it.
    """
    import numpy  # noqa: F401  (threadpoolctl limits only the libraries already loaded)
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        yield


def select_cases(
    cases: Sequence[GoldenCase], wanted: Sequence[str] | None, path: Path
) -> list[GoldenCase]:
    """The cases ``--case`` names (all when none), in file order; unknown ids are usage errors."""
    if not wanted:
        return list(cases)
    known = {case.id for case in cases}
    unknown = [w for w in dict.fromkeys(wanted) if w not in known]
    if unknown:
        raise UsageError(
            f"--case {', '.join(unknown)}: no such case in {path}; use ids from that file"
        )
    keep = set(wanted)
    return [case for case in cases if case.id in keep]


def run_each(
    work: Callable[[GoldenCase], _T],
    cases: Sequence[GoldenCase],
    concurrency: int,
    progress: Progress,
) -> list[_T]:
    """``work`` of every case, in order, with up to ``concurrency`` in flight.

    The first case runs alone, so a service that is down fails once rather than once
    per case; after any failure the queued cases are cancelled and the error raised.
    """
    done: list[_T] = []

    def counted(case: GoldenCase) -> _T:
        out = work(case)
        progress.advance()
        return out

    try:
        done += [counted(case) for case in cases[:1]]
        if concurrency > 1 and len(cases) > 2:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(max_workers=concurrency) as pool:
                try:
                    done += pool.map(counted, cases[1:])
                except BaseException:
                    pool.shutdown(wait=True, cancel_futures=True)
                    raise
        else:
            done += [counted(case) for case in cases[1:]]
    finally:
        progress.close()
    return done


def utc_now() -> str:
    """The current time as ``2026-07-06T00:00:00Z`` (whole seconds)."""
    return datetime.now(timezone.utc).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector for one command.

    Loading thousands of fixtures builds large acyclic trees of dicts and
    tuples; with the collector on, each new generation of them triggers a
    rescan of everything already loaded, which costs about as much as parsing
    them. Reference counting still frees memory as usual; only cycles wait.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()

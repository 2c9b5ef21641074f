"""Running a trial's passes: every method over every case, warm-up first.

A pass runs each (method, case) lookup once, through the method's ``Lookup``:
a function of the case and the ranking depth that returns the lookupResult
and, with a depth, the deep ranking. The embedded trial's lookups run the
method's pipeline (``pipeline_lookup``; methods that bring their own vectors
have their own store), with latencies left out of the lookupResults so they
are the same bytes on every pass, and the deep ranking comes from the same
state of the store. A trial over a service (``ragsnap.commands.trial``) sends
one request per lookup instead; the runner does not know the difference.

Every pass's order comes from ``random.Random("ragsnap-trial:<seed>:<pass>")``,
the same on every machine. Pass 0 is the warm-up, not timed: case by case in a
shuffled order, each case's methods one after another in a shuffled order, so
a lookup follows the same query by another method. Passes 1..N are timed: a
block of lookups per method, the blocks and each block's cases shuffled, so a
method is timed as a service running it would see it (one method, lookup after
lookup), not charged with the caches the other methods' lookups evicted. The
first measured pass is the one scored.

Determinism: each pass is reduced to one SHA-256 per (method, case) over the
lookupResult and the deep ranking (ids, scores, traces, rankings; not
latency). Every pass must give the same hashes; the first pair that differs
is named. The warm-up's interleaved order against the measured passes' blocks
is what makes this a check across methods: a result that depended on what the
lookup before it left behind (the same query's scores kept by a shared store,
another method's) differs between them. Timing is a diagnostic and never part
of this comparison.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..models import JUDGMENT_TARGETS
from .plan import canonical_sha256

if TYPE_CHECKING:
    from ..kb.backends import ChunkRef
    from ..kb.pipeline import Pipeline
    from ..models import GoldenCase
    from ..settings import Method

__all__ = [
    "Lookup",
    "PassResult",
    "first_difference",
    "latency_summary",
    "pass_order",
    "pipeline_lookup",
    "run_pass",
    "run_resource_pass",
]

#: one method's lookup: (case, ranking depth) -> (lookupResult, deep ranking or None)
Lookup = Callable[["GoldenCase", "int | None"], "tuple[dict[str, Any], Sequence[ChunkRef] | None]"]


@dataclass
class PassResult:
    """One pass: lookups, deep rankings, per-item hashes and latencies (ms)."""

    lookups: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    rankings: dict[str, dict[str, Sequence[ChunkRef]]] | None = None
    hashes: dict[tuple[str, str], str] = field(default_factory=dict)
    latencies: dict[str, list[float]] = field(default_factory=dict)

    @property
    def projection_sha256(self) -> str:
        return canonical_sha256(sorted([*key, value] for key, value in self.hashes.items()))


def pass_order(
    methods: Sequence[str], case_ids: Sequence[str], seed: int, number: int
) -> list[tuple[str, str]]:
    """The (method, case) order of pass ``number``, by the seed: for the warm-up (0)
    case by case, the cases and each case's methods shuffled; for a measured pass a
    block per method, the blocks and each block's cases shuffled."""
    rng = random.Random(f"ragsnap-trial:{seed}:{number}")
    if number == 0:
        return [(m, c) for c, names in _shuffled(rng, case_ids, methods) for m in names]
    return [(m, c) for m, cases in _shuffled(rng, methods, case_ids) for c in cases]


def _shuffled(
    rng: random.Random, outer: Sequence[str], inner: Sequence[str]
) -> Iterator[tuple[str, list[str]]]:
    """``outer`` shuffled, each with its own shuffle of ``inner`` (drawn in turn)."""
    order = list(outer)
    rng.shuffle(order)
    for item in order:
        each = list(inner)
        rng.shuffle(each)
        yield item, each


def pipeline_lookup(pipeline: Pipeline, method: Method) -> Lookup:
    """``method``'s lookups through ``pipeline``, latencies not recorded."""

    def lookup(
        case: GoldenCase, depth: int | None
    ) -> tuple[dict[str, Any], Sequence[ChunkRef] | None]:
        return pipeline.lookup_ranked(
            case.query,
            kb_scope=case.kb_scope,
            top_k=case.top_k,
            method=method,
            record_latency=False,
            depth=depth,
            # depth counts what the case's judgments name: documents for a corpus
            # judged by source, so a chunked document does not shorten the run
            distinct=JUDGMENT_TARGETS[case.judgment_kind or "chunkId"],
        )

    return lookup


def run_pass(
    lookups: Mapping[str, Lookup],
    cases: Mapping[str, GoldenCase],
    order: Sequence[tuple[str, str]],
    depth: int | None,
    on_item: Callable[[], None] | None = None,
) -> PassResult:
    """Run every (method, case) of ``order`` once, through each method's lookup."""
    out = PassResult(rankings=None if depth is None else {})
    for name in lookups:
        out.lookups[name] = {}
        out.latencies[name] = []
        if out.rankings is not None:
            out.rankings[name] = {}
    for name, case_id in order:
        case = cases[case_id]
        start = time.perf_counter()
        result, ranking = lookups[name](case, depth)
        out.latencies[name].append((time.perf_counter() - start) * 1000.0)
        out.lookups[name][case_id] = result
        if out.rankings is not None and ranking is not None:
            out.rankings[name][case_id] = ranking
        if on_item is not None:
            on_item()
    # digested after the pass, not between lookups: the canonical JSON of a result and
    # a deep ranking is a few times a lookup's work, and it would leave the next
    # lookup's caches cold
    for name, case_id in order:
        ranked = None if out.rankings is None else out.rankings[name].get(case_id)
        ids = None if ranked is None else [r.chunk_id for r in ranked]
        lookup = out.lookups[name][case_id]
        out.hashes[(name, case_id)] = canonical_sha256({"lookup": lookup, "ranking": ids})
    return out


def run_resource_pass(
    lookups: Mapping[str, Lookup],
    cases: Mapping[str, GoldenCase],
    order: Sequence[tuple[str, str]],
    depth: int | None,
    cgroup: tuple[Path, str] | None,
    on_item: Callable[[], None] | None = None,
) -> dict[str, dict[str, Any]]:
    """Each method's block of ``order`` (method blocks, ``pass_order``) with the
    resource figures read around it; ``cgroup``: the directory to read and its scope
    (``given`` or ``own``), or None. Method name -> ``resources.figures``."""
    from .resources import figures, reading

    blocks: dict[str, list[str]] = {}
    for name, case_id in order:
        blocks.setdefault(name, []).append(case_id)
    where, scope = (None, "own") if cgroup is None else cgroup
    out: dict[str, dict[str, Any]] = {}
    for name, case_ids in blocks.items():
        lookup = lookups[name]
        before = reading(where)
        for case_id in case_ids:
            lookup(cases[case_id], depth)
        out[name] = figures(before, reading(where), len(case_ids), scope)
        if on_item is not None:  # progress outside the readings
            for _ in case_ids:
                on_item()
    return {name: out[name] for name in lookups}


def first_difference(first: PassResult, other: PassResult) -> str | None:
    """The first (method, case) whose result differs between two passes, or None."""
    for key in sorted(first.hashes):
        if other.hashes.get(key) != first.hashes[key]:
            method, case_id = key
            a, b = first.lookups[method][case_id], other.lookups[method][case_id]
            part = "deep ranking" if a == b else _first_key(a, b)
            return f"method {method}, case {case_id}: {part} differs"
    return None


def _first_key(a: Any, b: Any, path: str = "") -> str:
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            if a.get(key) != b.get(key):
                return _first_key(a.get(key), b.get(key), f"{path}/{key}")
    if isinstance(a, list) and isinstance(b, list):
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            if x != y:
                return _first_key(x, y, f"{path}/{i}")
        if len(a) != len(b):
            return f"{path} (length {len(a)} vs {len(b)})"
    return path or "/"


def latency_summary(values: Sequence[float]) -> dict[str, Any]:
    """count, min, median, p95 (nearest rank), max and mean in ms, 3 decimals."""
    if not values:
        return {
            "count": 0,
            "minMs": None,
            "medianMs": None,
            "p95Ms": None,
            "maxMs": None,
            "meanMs": None,
        }
    ordered = sorted(values)
    n = len(ordered)
    mid = n // 2
    median = ordered[mid] if n % 2 else (ordered[mid - 1] + ordered[mid]) / 2
    p95 = ordered[max(0, -(-95 * n // 100) - 1)]
    return {
        "count": n,
        "minMs": round(ordered[0], 3),
        "medianMs": round(median, 3),
        "p95Ms": round(p95, 3),
        "maxMs": round(ordered[-1], 3),
        "meanMs": round(sum(ordered) / n, 3),
    }

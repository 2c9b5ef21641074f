"""Pass orders, latency summaries and the first difference between two passes."""

from __future__ import annotations

import itertools
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from conftest import lay_out_cgroup
from ragsnap.trial.resources import read_cgroup
from ragsnap.trial.runner import (
    PassResult,
    first_difference,
    latency_summary,
    pass_order,
    pipeline_lookup,
    run_pass,
    run_resource_pass,
)


def test_the_warm_up_goes_case_by_case_and_measured_passes_run_a_block_per_method() -> None:
    methods, cases = ["lexical", "vector", "hybrid"], [f"c{i}" for i in range(20)]
    every = sorted((m, c) for m in methods for c in cases)
    warm = pass_order(methods, cases, seed=1, number=0)
    assert sorted(warm) == every
    # case by case: each case's three lookups together, in a shuffled order
    groups = [warm[i : i + len(methods)] for i in range(0, len(warm), len(methods))]
    assert all(len({c for _, c in group}) == 1 for group in groups)
    assert all(sorted(m for m, _ in group) == sorted(methods) for group in groups)
    assert len({tuple(m for m, _ in group) for group in groups}) > 1
    assert [group[0][1] for group in groups] != cases
    switches = sum(a[0] != b[0] for a, b in itertools.pairwise(warm))
    assert switches >= len(cases) * (len(methods) - 1)  # inside each case's group
    first = pass_order(methods, cases, seed=1, number=1)
    assert sorted(first) == every
    blocks = [first[i : i + len(cases)] for i in range(0, len(first), len(cases))]
    assert [len({m for m, _ in block}) for block in blocks] == [1, 1, 1]
    assert sorted(block[0][0] for block in blocks) == sorted(methods)
    assert all(sorted(c for _, c in block) == sorted(cases) for block in blocks)
    assert any([c for _, c in block] != cases for block in blocks)  # shuffled within
    assert first == pass_order(methods, cases, seed=1, number=1)  # the same on every run
    assert warm == pass_order(methods, cases, seed=1, number=0)
    assert first != pass_order(methods, cases, seed=1, number=2)
    assert first != pass_order(methods, cases, seed=2, number=1)
    assert warm != pass_order(methods, cases, seed=2, number=0)


def test_latency_summary() -> None:
    summary = latency_summary([float(v) for v in range(1, 101)])
    assert summary == {
        "count": 100,
        "minMs": 1.0,
        "medianMs": 50.5,
        "p95Ms": 95.0,
        "maxMs": 100.0,
        "meanMs": 50.5,
    }
    assert latency_summary([])["p95Ms"] is None
    assert latency_summary([3.0])["p95Ms"] == 3.0


def _pass(score: float, ranking: str = "x") -> PassResult:
    from ragsnap.trial.plan import canonical_sha256

    lookup = {"evidenceBlocks": [{"chunkId": "a", "score": 0.5}, {"chunkId": "b", "score": score}]}
    result = PassResult(lookups={"hybrid": {"c1": lookup, "c2": lookup}})
    for case in ("c1", "c2"):
        result.hashes[("hybrid", case)] = canonical_sha256(
            {"lookup": lookup, "ranking": [ranking] if case == "c2" else []}
        )
    return result


def test_first_difference_names_the_method_case_and_field() -> None:
    assert first_difference(_pass(0.25), _pass(0.25)) is None
    assert _pass(0.25).projection_sha256 == _pass(0.25).projection_sha256
    moved = first_difference(_pass(0.25), _pass(0.2500001))
    assert moved == "method hybrid, case c1: /evidenceBlocks/1/score differs"
    deep = first_difference(_pass(0.25), _pass(0.25, ranking="y"))
    assert deep == "method hybrid, case c2: deep ranking differs"


class _SharedStore:
    """Two methods' pipelines over one store that keeps the last query's scores; with
    ``leak`` a lookup reads them when the last query was the same one by the other
    method (the bug a shared cache can have), else it scores anew."""

    def __init__(self, leak: bool):
        self.leak = leak
        self.last: tuple[str, str] | None = None

    def pipeline(self, method: str) -> Any:
        store = self

        class _Pipeline:
            def lookup_ranked(self, query: str, **_: Any) -> tuple[dict[str, Any], None]:
                reused = store.leak and store.last == (query, "other") and method == "lexical"
                store.last = (query, "other" if method != "lexical" else "lexical")
                score = 0.5 if not reused else 0.4999
                return {"evidenceBlocks": [{"chunkId": query, "score": score}]}, None

        return _Pipeline()


def _passes(leak: bool) -> list[PassResult]:
    store = _SharedStore(leak)
    methods = ["lexical", "vector"]
    cases = {
        f"c{i}": SimpleNamespace(query=f"q{i}", kb_scope=None, top_k=5, judgment_kind=None)
        for i in range(20)
    }
    lookups = {m: pipeline_lookup(store.pipeline(m), m) for m in methods}  # type: ignore[arg-type]
    return [
        run_pass(lookups, cases, pass_order(methods, list(cases), 7, n), None)  # type: ignore[arg-type]
        for n in range(3)
    ]


def test_the_interleaved_warm_up_against_the_blocks_catches_a_cache_shared_across_methods() -> None:
    clean = _passes(leak=False)
    assert first_difference(clean[0], clean[1]) is None
    assert first_difference(clean[0], clean[2]) is None
    leaky = _passes(leak=True)
    found = first_difference(leaky[0], leaky[1]) or first_difference(leaky[0], leaky[2])
    assert found is not None and found.startswith("method lexical, case ")
    assert found.endswith(": /evidenceBlocks/0/score differs")
    assert set(leaky[1].latencies) == {"lexical", "vector"}
    assert [len(v) for v in leaky[1].latencies.values()] == [20, 20]


def test_the_resource_pass_reads_each_methods_figures_around_its_own_lookups(
    tmp_path: Path,
) -> None:
    """A service's cgroup (laid out as files) charged per lookup: each method's CPU figure
    is its own lookups' only, whatever the order of the blocks."""
    cgroup = lay_out_cgroup(tmp_path / "service.scope", 0, 1000, 5000)
    charge = {"lexical": 10, "vector": 1000}
    calls: list[tuple[str, str]] = []

    def service(name: str) -> Any:
        def lookup(case: Any, depth: int | None) -> tuple[dict[str, Any], None]:
            calls.append((name, case.id))
            used = read_cgroup(cgroup)
            assert used is not None and used["usage_usec"] is not None
            usage = used["usage_usec"] + charge[name]
            (cgroup / "cpu.stat").write_text(f"usage_usec {usage}\n", encoding="ascii")
            return {}, None

        return lookup

    cases = {f"c{i}": SimpleNamespace(id=f"c{i}") for i in range(5)}
    lookups = {"vector": service("vector"), "lexical": service("lexical")}
    order = pass_order(list(lookups), list(cases), seed=3, number=2)
    ticks: list[None] = []
    out = run_resource_pass(
        lookups,  # type: ignore[arg-type]
        cases,  # type: ignore[arg-type]
        order,
        None,
        (cgroup, "given"),
        lambda: ticks.append(None),
    )
    assert calls == order and len(ticks) == 10
    assert list(out) == ["vector", "lexical"]  # the methods' order, not the blocks'
    for name in lookups:
        figures = out[name]
        assert figures["lookups"] == 5
        assert figures["cgroup"]["scope"] == "given"
        assert figures["cgroup"]["cpuUsageUsec"] == 5 * charge[name]
        assert figures["cgroup"]["memoryPeakBytes"] == 5000
        assert figures["cgroup"]["memoryCurrentDeltaBytes"] == 0
    # no cgroup: the process figures only
    bare = run_resource_pass(lookups, cases, order, None, None)  # type: ignore[arg-type]
    assert bare["lexical"]["cgroup"] is None and bare["lexical"]["lookups"] == 5

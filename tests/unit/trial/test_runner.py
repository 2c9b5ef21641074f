"""Pass orders, latency summaries and the first difference between two passes."""

from __future__ import annotations

from ragsnap.trial.runner import PassResult, first_difference, latency_summary, pass_order


def test_the_warm_up_is_canonical_and_measured_passes_are_seeded_shuffles() -> None:
    methods, cases = ["lexical", "hybrid"], [f"c{i}" for i in range(20)]
    warm = pass_order(methods, cases, seed=1, number=0)
    assert warm == [(m, c) for m in methods for c in cases]
    first = pass_order(methods, cases, seed=1, number=1)
    assert sorted(first) == sorted(warm) and first != warm
    assert first == pass_order(methods, cases, seed=1, number=1)  # the same on every run
    assert first != pass_order(methods, cases, seed=1, number=2)
    assert first != pass_order(methods, cases, seed=2, number=1)


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

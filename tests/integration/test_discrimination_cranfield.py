"""Discriminative power and swap rates on Cranfield's trial, checked by hand.

The shared data's Cranfield collection is imported and run through ``ragsnap
trial`` (all four built-in methods, hashing embedder, dev and test splits) as a
user would, then ``ragsnap.audit.discrimination`` is checked against a
straightforward reimplementation here: plain loops over the report's
``caseResults`` for the pairs, the per-split means and their signs, and the
paired sign-flip randomization test rebuilt in plain Python (SplitMix64 over a
counter, the stream key from SHA-256, one sign bit per case), so no line of
the audit's arithmetic is reused.
"""

from __future__ import annotations

import hashlib
import json
from itertools import combinations
from typing import Any

import pytest

from conftest import run_cli, shared_data
from ragsnap.audit.discrimination import discrimination_section
from ragsnap.scoring.significance import SignificanceSettings

METHODS = ("lexical", "vector", "hybrid", "hybrid+rerank")
MASK = 2**64 - 1


def _splitmix(counter: int) -> int:
    z = (counter * 0x9E3779B97F4A7C15) & MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def _sign_flip_p(diffs: list[int], permutations: int, seed: int, name: str) -> float:
    """Two-sided randomization p of the paired differences (whole millionths): row
    ``r`` flips case ``i`` (of the nonzero ones) when bit ``i % 64`` of word
    ``key + r * words + i // 64`` is set; ``(hits + 1) / (permutations + 1)``."""
    nonzero = [d for d in diffs if d != 0]
    if not nonzero:
        return 1.0
    key = int.from_bytes(hashlib.sha256(f"{seed}\0{name}".encode()).digest()[:8], "little")
    words = -(-len(nonzero) // 64)
    observed = abs(sum(nonzero))
    hits = 0
    for r in range(permutations):
        bits = [_splitmix((key + r * words + w) & MASK) for w in range(words)]
        total = 0
        for i, d in enumerate(nonzero):
            total += -d if (bits[i // 64] >> (i % 64)) & 1 else d
        hits += abs(total) >= observed
    return round((hits + 1) / (permutations + 1), 6)


def _value(case: dict[str, Any], method: str, measure: str) -> float | None:
    entry = case["methods"][method]
    if measure == "passRate":
        return float(entry["passed"])
    if measure == "recallAtK":
        ok = not case["noAnswer"] and entry["hitLevel"] is not None
        return float(entry["hitLevel"] in ("strong", "medium")) if ok else None
    if measure == "strongHitRate":
        ok = not case["noAnswer"] and entry["hitLevel"] is not None
        return float(entry["hitLevel"] == "strong") if ok else None
    if measure == "noAnswerFalsePositiveRate":
        return float(entry["evidenceCount"] > 0) if case["noAnswer"] else None
    value = (entry["metrics"] or {}).get(measure)
    return None if value is None else float(value)


def _by_hand(trial: dict[str, Any], settings: SignificanceSettings) -> dict[str, Any]:
    """measure -> {power, swapRate, rows: [(a, b, p, swapped)]} by plain loops."""
    methods = [m["name"] for m in trial["plan"]["methods"]]
    graded = {m for e in trial["methods"].values() for m in e["summary"]["metrics"]}
    candidates = ["passRate", "recallAtK", "strongHitRate", "noAnswerFalsePositiveRate"]
    candidates += sorted(m for m in graded if not m.startswith("coverage"))
    out: dict[str, Any] = {}
    for measure in candidates:
        rows = []
        for a, b in combinations(methods, 2):
            diffs: dict[str, list[int]] = {"dev": [], "test": []}
            every = []
            for case in trial["caseResults"]:
                x, y = _value(case, a, measure), _value(case, b, measure)
                if x is None or y is None:
                    continue
                d = round(y * 1_000_000) - round(x * 1_000_000)
                diffs[case["split"]].append(d)
                every.append(d)
            if not every:
                continue
            p = None
            if any(every):
                name = f"{a}\0{b}\0{measure}"
                p = _sign_flip_p(every, settings.permutations, settings.seed, name)
            dev, test = sum(diffs["dev"]), sum(diffs["test"])
            swapped = None if dev == 0 or test == 0 else (dev > 0) != (test > 0)
            rows.append((a, b, p, swapped))
        if not rows:
            continue
        separated = sum(1 for row in rows if row[2] is not None and row[2] < settings.alpha)
        judged = [row[3] for row in rows if row[3] is not None]
        out[measure] = {
            "power": round(separated / len(rows), 6),
            "swapRate": round(sum(judged) / len(judged), 6) if judged else None,
            "rows": rows,
        }
    return out


@pytest.fixture(scope="module")
def cranfield_trial(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    data = shared_data("cranfield/cran.all.1400").parent
    work = tmp_path_factory.mktemp("cranfield")
    run = run_cli("import", "smart", str(data), "--out", "imp", "--dev-fraction", "0.3", cwd=work)
    assert run.code == 0, run.out + run.err
    run = run_cli(
        "trial",
        "--config",
        "imp/ragsnap.yaml",
        "--cases",
        "imp/golden-cases.json",
        "--methods",
        ",".join(METHODS),
        "--split",
        "all",
        "--depth",
        "20",
        "--no-check-determinism",
        "--json-report",
        "trial.json",
        "--markdown-report",
        "trial.md",
        cwd=work,
    )
    assert run.code == 0, run.out + run.err
    # the audit of that trial, as a user runs it: no baseline yet, no mutations
    run = run_cli(
        "audit",
        "--config",
        "imp/ragsnap.yaml",
        "--cases",
        "imp/golden-cases.json",
        "--trial",
        "trial.json",
        "--mutations",
        "none",
        cwd=work,
    )
    assert run.code == 0, run.out + run.err
    audit = json.loads((work / "reports/audit.json").read_text(encoding="utf-8"))
    trial: dict[str, Any] = json.loads((work / "trial.json").read_text(encoding="utf-8"))
    trial["audit"] = audit  # what `ragsnap audit --trial` reported of it
    return trial


@pytest.mark.slow
def test_cranfield_power_and_swap_rates_match_a_reimplementation(
    cranfield_trial: dict[str, Any],
) -> None:
    trial = cranfield_trial
    assert [m["name"] for m in trial["plan"]["methods"]] == list(METHODS)
    splits = {c["split"] for c in trial["caseResults"]}
    assert splits == {"dev", "test"}
    settings = SignificanceSettings(**trial["significance"]["settings"])

    audit = trial.pop("audit")
    section = discrimination_section(trial, settings)
    assert audit["discrimination"] == section  # the report holds what the module computes
    assert audit["power"] is None and "ragsnap accept" in audit["notes"][0]
    expected = _by_hand(trial, settings)

    assert section["pairs"] == 6
    assert {m["measure"] for m in section["measures"]} == set(expected)
    assert "recall@20" in expected and "ndcg@10" in expected
    for row in section["measures"]:
        hand = expected[row["measure"]]
        assert row["discriminativePower"] == hand["power"], row["measure"]
        assert row["swapRate"] == hand["swapRate"], row["measure"]
        assert [(r["a"], r["b"], r["p"], r["swapped"]) for r in row["rows"]] == hand["rows"]
    # the audit's p of a pair is the trial report's own p of the same row
    own = {
        (r["reference"], r["method"], r["measure"]): r["significance"]
        for r in trial["significance"]["rows"]
    }
    checked = 0
    for row in section["measures"]:
        for pair in row["rows"]:
            key = (pair["a"], pair["b"], row["measure"])
            if key in own:
                assert pair["p"] == (None if own[key] is None else own[key]["p"]), key
                checked += 1
    assert checked == 3 * len(section["measures"])
    # some measure separates, and the order is by separated pairs, then name
    order = [(-m["separated"], m["measure"]) for m in section["measures"]]
    assert order == sorted(order) and section["measures"][0]["separated"] > 0

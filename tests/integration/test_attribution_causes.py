"""Injected causes: each regression planted in a copy of the example project is
attributed to its pipeline stage, with the right target and evidence, and the
attribution does not depend on case or document names.

Every test starts from the example project seeded, snapshotted and accepted (its
fixtures kept as the baseline's, read with ``--baseline-fixtures``), plants one
cause, re-seeds, re-snapshots and runs ``ragsnap score --compare-to`` as a user
would (in process: ``ragsnap.cli.main``).
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conftest import copy_example
from ragsnap.cli import main

EXAMPLE = ("cases", "seed-docs", "ragsnap.yaml")


def cli(root: Path, *argv: str, monkeypatch: pytest.MonkeyPatch) -> int:
    with monkeypatch.context() as m:
        m.chdir(root)
        return main(list(argv))


def _build(root: Path, monkeypatch: pytest.MonkeyPatch, extra_yaml: str = "") -> Path:
    copy_example(root, *EXAMPLE)
    if extra_yaml:
        config = root / "ragsnap.yaml"
        config.write_text(config.read_text(encoding="utf-8") + extra_yaml, encoding="utf-8")
    for step in (("seed",), ("snapshot",), ("accept",)):
        assert cli(root, *step, monkeypatch=monkeypatch) == 0, step
    shutil.copytree(root / "fixtures", root / "baseline-fixtures")
    return root


@pytest.fixture(scope="module")
def accepted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example project, accepted; each test works on a copy."""
    with pytest.MonkeyPatch.context() as m:
        return _build(tmp_path_factory.mktemp("example") / "proj", m)


@pytest.fixture(scope="module")
def accepted_hybrid(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example project on the ``hybrid`` method (no reranker to undo a fusion move)."""
    with pytest.MonkeyPatch.context() as m:
        return _build(
            tmp_path_factory.mktemp("hybrid") / "proj",
            m,
            "lookup:\n  method: hybrid\nscoring:\n  skip: [rerankTopSource]\n",
        )


@pytest.fixture(scope="module")
def accepted_v1(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example project with ``hybrid+rerank`` on ``heuristic-v1`` (its reranker before
    heuristic-v2), the order the causes below were planted against: v1 reranks by its
    own features (``lookup.rerankWeights``), so they move it where v2 keeps the fused order."""
    with pytest.MonkeyPatch.context() as m:
        return _build(
            tmp_path_factory.mktemp("v1") / "proj",
            m,
            "methods:\n  hybrid+rerank:\n    retrievers: [lexical, vector]\n"
            "    reranker: heuristic-v1\n",
        )


def _copy(base: Path, tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    shutil.copytree(base, root, symlinks=True)
    return root


def _rescore(root: Path, monkeypatch: pytest.MonkeyPatch, *seed: str) -> dict[str, Any]:
    assert cli(root, "seed", *seed, monkeypatch=monkeypatch) == 0
    assert cli(root, "snapshot", "--skip-eval", monkeypatch=monkeypatch) == 0
    code = cli(
        root,
        "score",
        # the edits break labels on purpose (a judged span or document is gone, which the
        # label check refuses): what the diff attributes is under test
        "--no-label-check",
        "--compare-to",
        "reports/baseline.json",
        "--baseline-fixtures",
        "baseline-fixtures",
        monkeypatch=monkeypatch,
    )
    assert code == 1
    diff: dict[str, Any] = json.loads((root / "reports/baseline-diff.json").read_text("utf-8"))
    assert diff["attribution"]["baselineFixtures"] == "baseline-fixtures"
    return diff


def _cause(diff: dict[str, Any], case_id: str, target: str) -> dict[str, Any]:
    (case,) = (c for c in diff["cases"] if c["id"] == case_id)
    found = [a for a in case.get("attribution", ()) if a["target"] == target]
    assert found, (case_id, target, case.get("attribution"), case.get("lost"))
    return found[0]


def _edit(root: Path, name: str, old: str, new: str) -> None:
    path = root / "seed-docs" / name
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, (name, old)
    path.write_text(text.replace(old, new), encoding="utf-8")


def _config(root: Path, lines: str) -> None:
    path = root / "ragsnap.yaml"
    text = path.read_text(encoding="utf-8")
    if "lookup:\n" in text and lines.startswith("lookup:\n"):
        text = text.replace("lookup:\n", lines, 1)
    else:
        text += lines
    path.write_text(text, encoding="utf-8")


# --- one planted cause per stage ------------------------------------------------------


def test_corpus_the_target_chunk_lost_the_expected_words(
    accepted: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _copy(accepted, tmp_path)
    _edit(root, "k8s-rolling-update.md", "maxUnavailable: 0", "maxUnavailable: none")
    diff = _rescore(root, monkeypatch)
    cause = _cause(diff, "k8s-rolling-update-maxsurge", "k8s-rolling-update#1")
    assert cause["stage"] == "corpus"
    assert cause["evidence"] == {"textChanged": True, "removed": ["0"], "added": ["none"]}
    assert cause["before"]["evidenceRank"] == cause["after"]["evidenceRank"]  # it stayed
    assert "maxUnavailable: 0" in cause["before"]["text"]
    assert "maxUnavailable: none" in cause["after"]["text"]


def test_corpus_the_target_document_was_deleted(
    accepted: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _copy(accepted, tmp_path)
    (root / "seed-docs/mysql-replication-lag.md").unlink()
    diff = _rescore(root, monkeypatch)
    for chunk in ("mysql-replication-lag#2", "mysql-replication-lag#0"):
        cause = _cause(diff, "db-replication-lag-alert-fallback", chunk)
        assert cause["stage"] == "corpus"
        assert cause["evidence"] == {"document": "mysql-replication-lag", "absent": True}
        assert cause["after"]["present"] is False
        assert cause["after"]["evidenceRank"] is None


def test_settings_another_method(
    accepted_v1: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _copy(accepted_v1, tmp_path)
    _config(root, "lookup:\n  method: lexical\n")
    diff = _rescore(root, monkeypatch)
    cause = _cause(diff, "cache-cluster-failover-promotion", "redis-cluster-failover#0")
    assert cause["stage"] == "settings"
    assert cause["evidence"]["settings"] == {"method": ["hybrid+rerank", "lexical"]}


def test_l0_hint_a_neighbour_document_changed_category(
    accepted: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """mysql-connection-pool moves to the cache category: the payment query's hint
    follows it, and the filtered attempt no longer searches the database documents."""
    root = _copy(accepted, tmp_path)
    _edit(root, "mysql-connection-pool.md", "category: database", "category: cache")
    diff = _rescore(root, monkeypatch)
    cause = _cause(diff, "db-payment-pool-near-duplicate", "mysql-connection-pool-payment#1")
    assert cause["stage"] == "l0Hint"
    before, after = cause["evidence"]["l0Hints"]
    assert (before["category"], after["category"]) == ("database", "cache")


def test_attempt_a_higher_weak_score_retries_unfiltered(
    accepted: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _copy(accepted, tmp_path)
    _config(root, "lookup:\n  weakScore: 0.44\n")
    diff = _rescore(root, monkeypatch)
    cause = _cause(diff, "k8s-rolling-update-maxsurge", "selectedAttempt")
    assert cause["stage"] == "attempt"
    ev = cause["evidence"]
    assert ev["selectedAttempt"] == ["filtered", "unfiltered"]
    assert ev["fallbackReasons"] == [[], ["filtered-weak"]]
    assert ev["settings"] == {"weakScore": [0.35, 0.44]}


def test_retrieval_a_query_terms_only_occurrence_removed(
    accepted_v1: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """排查 ("troubleshoot") of the query occurs once in every seed body: in the heading
    of the judged chunk kafka-consumer-rebalance-zh#3. Without it the chunk keeps its
    spans but falls in the vector list."""
    root = _copy(accepted_v1, tmp_path)
    bodies = [
        p.read_text(encoding="utf-8").split("\n---\n", 1)[1] for p in root.glob("seed-docs/*.md")
    ]
    assert sum(body.count("排查") for body in bodies) == 1
    _edit(root, "kafka-consumer-rebalance-zh.md", "## 排查步骤", "## 步骤")
    diff = _rescore(root, monkeypatch)
    (case,) = (c for c in diff["cases"] if c["id"] == "mq-kafka-rebalance-zh")
    assert case["status"] == "changed"  # same hit level; it lost a judged chunk's rank
    assert case["changes"][0]["field"] == "metrics"
    cause = _cause(diff, "mq-kafka-rebalance-zh", "kafka-consumer-rebalance-zh#3")
    assert cause["stage"] == "retrieval"
    ev = cause["evidence"]
    assert ev["vectorRank"] == [2, 3]
    assert ev["removed"] == ["排查"]  # the text change that moved it, as evidence


def test_fusion_other_weights_reorder_the_fused_list(
    accepted_hybrid: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _copy(accepted_hybrid, tmp_path)
    _config(root, "lookup:\n  fusion: {kind: convex, lexicalWeight: 0.0, vectorWeight: 1.0}\n")
    diff = _rescore(root, monkeypatch)
    cause = _cause(diff, "db-err-4031-order-repository", "mysql-connection-pool#2")
    assert cause["stage"] == "fusion"
    ev = cause["evidence"]
    assert ev["fusedRank"] == [1, 2]
    old, new = ev["settings"]["fusion"]
    assert (old["weights"]["lexical"], new["weights"]["lexical"]) == (0.7, 0.0)
    # the lists agree: the fused order alone moved it
    for key in ("lexicalRank", "vectorRank"):
        assert cause["before"][key] == cause["after"][key]


def test_rerank_other_weights_change_the_top_source(
    accepted_v1: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _copy(accepted_v1, tmp_path)
    _config(
        root,
        "lookup:\n  rerankWeights: {confidence: 0.05, phrase: 0.0, identifiers: 0.0, "
        "title: 0.95, coverage: 0.0}\n",
    )
    diff = _rescore(root, monkeypatch)
    cause = _cause(diff, "k8s-exit-137-oomkilled-rerank", "rerankTopSource")
    assert cause["stage"] == "rerank"
    ev = cause["evidence"]
    assert ev["rerankTop"] == ["k8s-oomkilled-memory-limits", "k8s-crashloopbackoff"]
    assert ev["settings"]["rerankWeights"][1]["title"] == 0.95


def test_floor_a_higher_min_score_drops_the_evidence(
    accepted: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _copy(accepted, tmp_path)
    _config(root, "lookup:\n  minScore: 0.45\n")
    diff = _rescore(root, monkeypatch)
    cause = _cause(diff, "obs-runbook-url-required", "alert-runbook-conventions#1")
    assert cause["stage"] == "floor"
    ev = cause["evidence"]
    assert ev["floor"] == [0.22, 0.45]
    assert ev["confidence"] < 0.45
    assert ev["settings"] == {"minScore": [0.22, 0.45]}
    assert cause["after"]["rerankRank"] is not None  # still retrieved and reranked


def test_cut_a_lower_top_k(accepted: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _copy(accepted, tmp_path)
    cases = root / "cases/golden-cases.json"
    data = json.loads(cases.read_text(encoding="utf-8"))
    data["defaults"]["topK"] = 1
    cases.write_text(json.dumps(data, ensure_ascii=False, indent=2), encoding="utf-8")
    diff = _rescore(root, monkeypatch)
    cause = _cause(diff, "mq-kafka-lag-alert-decoy", "kafka-consumer-lag#1")
    assert cause["stage"] == "cut"
    ev = cause["evidence"]
    assert ev["topK"] == [5, 1]
    assert ev["confidence"] >= ev["floor"][1]  # it passes the floor: the cut dropped it


def test_context_a_smaller_budget(
    accepted: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _copy(accepted, tmp_path)
    _config(root, "lookup:\n  contextBudgetChars: 300\n")
    diff = _rescore(root, monkeypatch)
    cause = _cause(diff, "k8s-exit-137-oomkilled-rerank", "contextSources")
    assert cause["stage"] == "context"
    ev = cause["evidence"]
    assert ev["contextSources"] == [
        ["k8s-oomkilled-memory-limits", "k8s-crashloopbackoff"],
        ["k8s-oomkilled-memory-limits"],
    ]
    assert ev["settings"] == {"contextBudgetChars": [2000, 300]}


# --- names do not decide -------------------------------------------------------------


def _rename(root: Path) -> dict[str, str]:
    """Give every document source, doc id and case id a new name that keeps their sort
    order (rankings break ties by chunk id); return new name -> old name."""
    sources = sorted(p.stem for p in (root / "seed-docs").glob("*.md"))
    new_source = {s: f"n{i:03d}" for i, s in enumerate(sources)}
    for old, new in new_source.items():
        path = root / "seed-docs" / f"{old}.md"
        text = path.read_text(encoding="utf-8")
        text = re.sub(rf"^source: {re.escape(old)}$", f"source: {new}", text, count=1, flags=re.M)
        text = re.sub(
            rf"^doc_id: doc-{re.escape(old)}$", f"doc_id: doc-{new}", text, count=1, flags=re.M
        )
        path.unlink()
        (root / "seed-docs" / f"{new}.md").write_text(text, encoding="utf-8")
    cases_path = root / "cases/golden-cases.json"
    data = json.loads(cases_path.read_text(encoding="utf-8"))
    ids = sorted(c["id"] for c in data["cases"])
    new_case = {c: f"c{i:03d}" for i, c in enumerate(ids)}

    def name(value: str) -> str:
        source, sep, n = value.partition("#")
        if value.startswith("doc-") and value[4:] in new_source:
            return "doc-" + new_source[value[4:]]
        return new_source.get(source, source) + sep + n

    for case in data["cases"]:
        case["id"] = new_case[case["id"]]
        for key in ("expectedSources", "expectedDocIds", "expectedContextSources"):
            if key in case:
                case[key] = [name(v) for v in case[key]]
        if "expectedRerankTopSource" in case:
            case["expectedRerankTopSource"] = name(case["expectedRerankTopSource"])
        for judgment in case.get("judgments", ()):
            for key in ("chunkId", "docId", "source"):
                if key in judgment:
                    judgment[key] = name(judgment[key])
    cases_path.write_text(json.dumps(data, ensure_ascii=False, indent=2), encoding="utf-8")
    back = {v: k for k, v in new_source.items()}
    back.update({v: k for k, v in new_case.items()})
    back.update({f"doc-{v}": f"doc-{k}" for k, v in new_source.items()})
    return back


def _named_back(value: Any, back: dict[str, str]) -> Any:
    if isinstance(value, str):
        source, sep, n = value.partition("#")
        return back.get(value, back.get(source, source) + sep + n if source in back else value)
    if isinstance(value, list):
        return [_named_back(v, back) for v in value]
    if isinstance(value, dict):
        return {_named_back(k, back): _named_back(v, back) for k, v in value.items()}
    return value


INJECTIONS: dict[str, Callable[[Path], None]] = {
    "text": lambda r: _edit(
        r, "k8s-rolling-update.md", "maxUnavailable: 0", "maxUnavailable: none"
    ),
    "floor": lambda r: _config(r, "lookup:\n  minScore: 0.45\n"),
    "category": lambda r: _edit(
        r, "mysql-connection-pool.md", "category: database", "category: cache"
    ),
}


@pytest.mark.parametrize("injection", sorted(INJECTIONS))
def test_renamed_cases_and_documents_get_the_same_causes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, injection: str
) -> None:
    causes = []
    for renamed in (False, True):
        root = tmp_path / f"renamed-{renamed}"
        copy_example(root, *EXAMPLE)
        back = _rename(root) if renamed else {}
        for step in (("seed",), ("snapshot",), ("accept",)):
            assert cli(root, *step, monkeypatch=monkeypatch) == 0
        shutil.copytree(root / "fixtures", root / "baseline-fixtures")
        inject = INJECTIONS[injection]
        if renamed:  # the same edit, of the renamed file
            originals = {v: k for k, v in back.items()}
            for path in (root / "seed-docs").glob("*.md"):
                path.rename(root / "seed-docs" / f"{back.get(path.stem, path.stem)}.md")
            inject(root)
            for path in (root / "seed-docs").glob("*.md"):
                path.rename(root / "seed-docs" / f"{originals.get(path.stem, path.stem)}.md")
        else:
            inject(root)
        diff = _rescore(root, monkeypatch)
        found = {
            case["id"]: [
                {k: v for k, v in a.items() if k not in ("before", "after")}
                | {"before": a["before"], "after": a["after"]}
                for a in case.get("attribution", ())
            ]
            for case in diff["cases"]
        }
        causes.append(_named_back(found, back))
    assert causes[0] == causes[1]
    assert any(causes[0].values())  # the injection was attributed somewhere

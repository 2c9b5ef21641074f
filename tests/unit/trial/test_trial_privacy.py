"""The privacy view of a trial report (ragsnap.trial.privacy)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ragsnap.errors import InputError
from ragsnap.io.schema import validate
from ragsnap.trial.privacy import private_trial, private_trial_diff
from ragsnap.trial.report import render_trial_markdown

SHA = "a" * 64
AGGREGATE = {
    "cases": 1,
    "passed": 1,
    "failed": 0,
    "passRate": 1.0,
    "answerable": 1,
    "noAnswer": 0,
    "hitLevels": {"strong": 1, "medium": 0, "weak": 0, "miss": 0},
    "recallAtK": 1.0,
    "strongHitRate": 1.0,
    "missCount": 0,
    "noAnswerFalsePositives": 0,
    "noAnswerFalsePositiveRate": None,
    "metrics": {"ndcg@10": {"mean": 1.0, "cases": 1}},
}
DEFINITION = {
    "name": "lexical",
    "retrievers": ["lexical"],
    "embedder": {"kind": "openai", "model": "secret-model-v9", "revision": "r", "dimension": 8},
    "settings": {"segmenter": "bigram-v1+secret-analyzer", "minScore": 0.22},
    "note": "a note about the secret corpus",
}


def trial_report() -> dict[str, Any]:
    latency = {"count": 1, "minMs": 1.0, "medianMs": 1.0, "p95Ms": 1.0, "maxMs": 1.0, "meanMs": 1.0}
    return {
        "schemaVersion": 1,
        "kind": "ragsnap-trial-report",
        "plan": {
            "inputs": {"corpus": SHA, "cases": SHA, "vectors": SHA, "providers": SHA},
            "methods": [DEFINITION],
            "depth": None,
            "split": "all",
            "repetitions": 1,
            "seed": 1,
        },
        "planSha256": SHA,
        "corpus": {"documents": 1, "chunks": 2, "sha256": SHA},
        "cases": {"total": 1, "run": 1, "answerable": 1, "noAnswer": 0, "sha256": SHA},
        "methods": {
            "lexical": {
                "definition": DEFINITION,
                "summary": AGGREGATE,
                "groups": {"split": {"dev": AGGREGATE}, "language": {}, "categoryTest": {}},
                "admitted": None,
                "status": None,
                "gateCounts": None,
            }
        },
        "gates": None,
        "determinism": {
            "checked": True,
            "passes": 2,
            "identical": True,
            "firstDifference": None,
            "projectionSha256": SHA,
        },
        "runs": None,
        "caseResults": [],
        "timing": {
            "warmup": True,
            "repetitions": 1,
            "latency": {"lexical": latency},
            "wallSeconds": 1.0,
            "cpuSeconds": 1.0,
            "peakRssMiB": 1.0,
            "cgroup": None,
        },
    }


def test_private_trial_hashes_the_method_definitions() -> None:
    full = trial_report()
    validate(full, "trial-report", "t.json", "trial report")
    private = private_trial(full)
    validate(private, "private-trial-report", "t.json", "trial report")
    text = json.dumps(private) + render_trial_markdown(private)
    for secret in ("secret-model-v9", "secret-analyzer", "secret corpus", "openai"):
        assert secret in json.dumps(full)
        assert secret not in text
    assert private["plan"]["methods"] == [
        {"name": "lexical", "sha256": private["methods"]["lexical"]["definition"]["sha256"]}
    ]
    assert private["timing"] == full["timing"] and private["planSha256"] == SHA
    other = trial_report()
    other["plan"]["methods"][0] = {**DEFINITION, "settings": {"minScore": 0.3}}
    other["planSha256"] = "b" * 64
    assert (
        private_trial(other)["evaluationDefinitionSha256"] != private["evaluationDefinitionSha256"]
    )
    assert private_trial(private) == private


def test_private_trial_keeps_the_run_file_names_without_their_folder() -> None:
    full = trial_report()
    full["runs"] = {
        "files": ["/home/alice/acme-eval/runs/lexical.trec"],
        "qrels": "/home/alice/acme-eval/runs/qrels.txt",
        "source": "ranking",
    }
    validate(full, "trial-report", "t.json", "trial report")
    private = private_trial(full)
    validate(private, "private-trial-report", "t.json", "trial report")
    assert private["runs"] == {"files": ["lexical.trec"], "qrels": "qrels.txt", "source": "ranking"}
    text = json.dumps(private) + render_trial_markdown(private)
    assert "alice" not in text and "acme-eval" not in text
    assert "TREC runs: lexical.trec (qrels: qrels.txt)." in render_trial_markdown(private)
    assert private_trial(private) == private
    leaky = {**private, "runs": full["runs"]}  # the schema refuses a folder in the view
    with pytest.raises(InputError):
        validate(leaky, "private-trial-report", "t.json", "trial report")


def test_private_trial_diff_names_no_path() -> None:
    diff = {"baseline": "secret/dir/trial.json", "methods": {}}
    assert private_trial_diff(diff) == {"baseline": "baseline", "methods": {}, "privacy": True}


def test_the_plans_embedder_name_and_content_digests_in_the_privacy_view() -> None:
    """``--embedder minilm`` names a model: the privacy view leaves it out of the plan
    (the plan hash still covers it); the digests of every input's content stay."""
    report = trial_report()
    inputs = dict.fromkeys(("corpus", "cases", "judgments", "vectors", "providers", "gates"), SHA)
    report["plan"] = {**report["plan"], "inputs": inputs, "embedder": "minilm"}
    validate(report, "trial-report", "trial.json", "trial report")
    private = private_trial(report)
    validate(private, "private-trial-report", "trial.json", "trial report")
    assert "embedder" not in private["plan"] and private["plan"]["inputs"] == inputs
    assert "minilm" not in json.dumps(private)
    assert private["planSha256"] == report["planSha256"]

"""The privacy view of a trial report and of a trial diff (``trial --privacy``).

Pure functions. A trial report already leaves out queries, texts, titles and
source names; its privacy view (``private-trial-report.schema.json``, marked
``"privacy": true``) also leaves out what describes the retrieval setup
beyond ids and hashes:

* each method's definition (retrievers, embedder fingerprint with its model
  name, every retrieval setting, the note) becomes its name and the SHA-256
  of the definition, in ``plan.methods`` and ``methods.*.definition``, and
  ``plan.embedder`` (the name ``--embedder`` chose, e.g. ``minilm``) is left
  out (the plan hash still covers it);
* ``evaluationDefinitionSha256`` is added: the SHA-256 of the plan's hash
  (corpus, cases with queries, judgments and splits, vector providers,
  methods with their settings, depth, split, repetitions, seed), the scoring
  version and the measures. ``plan.inputs`` keeps its digests (``corpus``,
  ``cases``, ``judgments``, ``vectors``: the providers' fingerprints and
  their files' content, ``providers``: the hash of the provider definitions,
  ``aliases``, ``gates``: the files' content; ``ragsnap.trial.plan``): hashes
  of content, which name no file, model or path.

A trial over a service keeps ``service`` without its ``baseUrl`` (an
endpoint); the backend and the corpus revision stay.

The TREC runs (``--runs-dir``) keep their file names only (``<method>.trec``,
``qrels.txt``: method ids), never the folder they were written to, which can
name a user or a machine (``/home/alice/runs``).

Measurements, gates (method and measure ids, the case fields a gate selects on
as its file states them, thresholds, values, why a gate did not run), the
determinism check, case results (ids, hit levels, failure codes) and timing
stay as they are. The plan hash stays, so a private
report still names the plan it ran; a plan file (``--write-plan``) is an input
and is written in full.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any

from ..scoring.privacy import is_private, sha256_json
from ..scoring.report import SCORING_VERSION

__all__ = ["private_trial", "private_trial_diff"]


def _method(definition: Mapping[str, Any]) -> dict[str, Any]:
    return {"name": definition["name"], "sha256": sha256_json(dict(definition))}


def private_trial(report: Mapping[str, Any]) -> dict[str, Any]:
    """The privacy view of a trial report (a private one is returned as it is)."""
    if is_private(report):
        return dict(report)
    plan = report["plan"]
    measures = sorted(
        {name for entry in report["methods"].values() for name in entry["summary"]["metrics"]}
    )
    service = report.get("service")
    hidden: dict[str, Any] = {} if service is None else {"service": _without_url(service)}
    runs = report.get("runs")
    if runs is not None:  # file names (method ids), not the folder
        hidden["runs"] = {
            **runs,
            "files": [PurePosixPath(f).name for f in runs["files"]],
            "qrels": PurePosixPath(runs["qrels"]).name,
        }
    return {
        **report,
        **hidden,
        "privacy": True,
        "plan": {
            **{k: v for k, v in plan.items() if k != "embedder"},  # a model's name
            "methods": [_method(m) for m in plan["methods"]],
        },
        "evaluationDefinitionSha256": sha256_json(
            {
                "plan": report["planSha256"],
                "scoringVersion": SCORING_VERSION,
                "measures": measures,
            }
        ),
        "methods": {
            name: {**entry, "definition": _method(entry["definition"])}
            for name, entry in report["methods"].items()
        },
    }


def _without_url(service: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in service.items() if k != "baseUrl"}


def private_trial_diff(diff: Mapping[str, Any]) -> dict[str, Any]:
    """The privacy view of a trial diff: its baseline is named ``baseline``, not by its
    path (the rest is method ids, input digest names and measurements)."""
    return {**diff, "privacy": True, "baseline": "baseline"}

"""ragsnap: a retrieval regression harness for RAG knowledge bases.

Snapshots of a retrieval service's lookups, scored offline against golden
cases, diffed against a committed baseline: did retrieval get worse, where,
and why? No LLM, no API key.

The public API is what ``__all__`` lists; the command line (``ragsnap``) is
built on exactly these pieces.
"""

from __future__ import annotations

__version__ = "0.1.0"

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .aggregates import Aggregate, aggregate, group
    from .casemetrics import case_metrics, context_precision_recall
    from .diff import Tolerances, diff_reports, render_diff_markdown
    from .errors import InputError, MissingDependency, OutputError, RagsnapError, UsageError
    from .inputs import CaseSet, FixtureSet, load_cases, load_fixtures, load_report
    from .metrics import (
        Measure,
        Rankings,
        evaluate,
        parse_measure,
        parse_measures,
        rankings_from_dicts,
    )
    from .models import EvidenceBlock, Fixture, GoldenCase, Judgment, LookupResult
    from .report import build_report, render_markdown
    from .scoring import CaseResult, score_case
    from .trec import rankings_from_trec, read_qrels, read_run, write_qrels, write_run

#: Public name -> the module that defines it. Imported on first use (PEP 562),
#: so ``import ragsnap`` and ``ragsnap --help`` stay cheap.
_EXPORTS = {
    "Aggregate": "aggregates",
    "aggregate": "aggregates",
    "group": "aggregates",
    "case_metrics": "casemetrics",
    "context_precision_recall": "casemetrics",
    "Measure": "metrics",
    "Rankings": "metrics",
    "evaluate": "metrics",
    "parse_measure": "metrics",
    "parse_measures": "metrics",
    "rankings_from_dicts": "metrics",
    "Judgment": "models",
    "read_qrels": "trec",
    "read_run": "trec",
    "rankings_from_trec": "trec",
    "write_qrels": "trec",
    "write_run": "trec",
    "Tolerances": "diff",
    "diff_reports": "diff",
    "render_diff_markdown": "diff",
    "InputError": "errors",
    "MissingDependency": "errors",
    "OutputError": "errors",
    "RagsnapError": "errors",
    "UsageError": "errors",
    "CaseSet": "inputs",
    "FixtureSet": "inputs",
    "load_cases": "inputs",
    "load_fixtures": "inputs",
    "load_report": "inputs",
    "EvidenceBlock": "models",
    "Fixture": "models",
    "GoldenCase": "models",
    "LookupResult": "models",
    "build_report": "report",
    "render_markdown": "report",
    "CaseResult": "scoring",
    "score_case": "scoring",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'ragsnap' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


__all__ = [
    "Aggregate",
    "CaseResult",
    "CaseSet",
    "EvidenceBlock",
    "Fixture",
    "FixtureSet",
    "GoldenCase",
    "InputError",
    "Judgment",
    "LookupResult",
    "Measure",
    "MissingDependency",
    "OutputError",
    "RagsnapError",
    "Rankings",
    "Tolerances",
    "UsageError",
    "__version__",
    "aggregate",
    "build_report",
    "case_metrics",
    "context_precision_recall",
    "diff_reports",
    "evaluate",
    "group",
    "load_cases",
    "load_fixtures",
    "load_report",
    "parse_measure",
    "parse_measures",
    "rankings_from_dicts",
    "rankings_from_trec",
    "read_qrels",
    "read_run",
    "render_diff_markdown",
    "render_markdown",
    "score_case",
    "write_qrels",
    "write_run",
]

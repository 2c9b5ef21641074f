"""``ragsnap explain CASE``: one case, stage by stage, its current fixture against the
baseline's (``ragsnap.scoring.explain``).

The baseline fixture is read as the diff reads it (``_forensics``): from
``--baseline-fixtures DIR``, from git at ``--baseline-ref REF``, else from the first
usual ref (HEAD, HEAD^1, the upstream, origin/...) whose fixtures are the ones the
baseline report (``--baseline``, default reports/baseline.json) was scored from;
with no baseline report, from git at HEAD. Both fixtures are scored as ``ragsnap
score`` scores them, so what the case lost is the diff's own list.

Prints text (``--json``: the explanation object as JSON) and writes no file. Exit 0
when the case was explained, whether or not it regressed; 2 for an unknown case, a
case without a fixture on either side, baseline fixtures that cannot be found, or a
ref git cannot read.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ..config import load_config
from ..errors import InputError, UsageError, did_you_mean
from ..io.inputs import load_cases, load_report, read_manifest
from ..io.jsonio import parse_json, read_bytes
from ..io.schema import validate
from ..models import Fixture, GoldenCase
from ..scoring.attribution import Side
from ..scoring.explain import explain_case, render_explanation
from ..scoring.hits import score_case
from ..scoring.report import case_entry
from . import DEFAULT_BASELINE
from ._forensics import BaselineFixtures, baseline_fixtures, documents, open_git


def run(args: argparse.Namespace) -> int:
    config = load_config(args.config)
    case = _case(args.cases, args.case_id)
    current, current_json = _current(args.fixtures, case.id)
    source, notes = _baseline_source(args)
    old_json = source.fixture(case.id)
    if old_json is None:
        raise UsageError(
            f"case {case.id!r} has no baseline fixture in {source.label} (a case added since "
            "the baseline); name the baseline that has it with --baseline-ref REF or "
            "--baseline-fixtures DIR"
        )
    old_fixture = Fixture.from_json(dict(old_json))
    skip = config.skip_expectations
    before_entry = case_entry(score_case(case, old_fixture, None, skip=skip))
    after_entry = case_entry(score_case(case, current, None, skip=skip))
    explanation = explain_case(
        before_entry,
        after_entry,
        Side(old_json, documents(source.manifest, case.id)),
        Side(current_json, documents(read_manifest(args.fixtures), case.id)),
        source.label,
        notes,
    )
    if args.json:
        json.dump(explanation, sys.stdout, ensure_ascii=False, indent=2, sort_keys=True)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(render_explanation(explanation))
    return 0


def _case(path: Path, case_id: str) -> GoldenCase:
    cases = load_cases(path).cases
    for case in cases:
        if case.id == case_id:
            return case
    meant = did_you_mean(case_id, [c.id for c in cases])
    hint = f"did you mean {meant!r}?" if meant else "use an id from that file"
    raise UsageError(f"no case {case_id!r} in {path.as_posix()}; {hint}")


def _current(folder: Path, case_id: str) -> tuple[Fixture, dict[str, Any]]:
    path = folder / f"{case_id}.json"
    if not path.is_file():
        raise InputError(
            path,
            f"case {case_id!r} has no current fixture",
            f"run `ragsnap snapshot --case {case_id}` (or pass --fixtures DIR)",
        )
    data: Any = parse_json(read_bytes(path, "re-snapshot the case", kind="fixture"), path)
    validate(data, "fixture", path, "fixture")
    return Fixture.from_json(data), data


def _baseline_source(args: argparse.Namespace) -> tuple[BaselineFixtures, list[str]]:
    """Where the baseline fixture is read, and notes about it (module docstring)."""
    report_path: Path | None = args.baseline
    if report_path is None and DEFAULT_BASELINE.is_file():
        report_path = DEFAULT_BASELINE
    ref, folder = args.baseline_ref, args.baseline_fixtures
    if report_path is None and ref is None and folder is None:
        found = open_git(args.fixtures, "HEAD", required=True)
        assert found is not None
        return found, [f"no baseline report ({DEFAULT_BASELINE}): compared with git HEAD"]
    baseline = {} if report_path is None else load_report(report_path, "baseline")
    source, notes = baseline_fixtures(args.fixtures, baseline, ref, folder)
    if source is None:
        raise UsageError(
            f"the fixtures {report_path} was scored from are not in git at HEAD, HEAD^1, the "
            "upstream, origin/HEAD, origin/main or origin/master; pass --baseline-ref REF "
            "(the branch the baseline was accepted on) or --baseline-fixtures DIR"
        )
    return source, notes

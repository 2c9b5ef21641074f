"""``ragsnap export-run``: fixtures as a TREC run, judgments as TREC qrels."""

from __future__ import annotations

import argparse

from ..config import load_config
from ..errors import UsageError
from ..io.inputs import load_cases, load_fixtures
from ..io.jsonio import check_outputs
from ..io.reads import labelled, reads_of
from ..ir.trec import write_qrels, write_run
from ..models import JUDGMENT_TARGETS


def run(args: argparse.Namespace) -> int:
    """Write the run (and the qrels) and say how many queries each holds."""
    case_set = load_cases(args.cases)
    fixtures = load_fixtures(args.fixtures).fixtures
    outputs = [args.out] + ([args.qrels_out] if args.qrels_out else [])
    config = load_config(None)  # the project's: its files are inputs no output may replace
    check_outputs(
        labelled(args, outputs), inputs=reads_of(args, config), allow_outside=args.allow_outside
    )
    ranked: dict[str, list[str]] = {}
    judgments: dict[str, dict[str, int]] = {}
    for case in case_set.cases:
        kind = args.target or case.judgment_kind or "chunkId"
        if case.judgments and case.judgment_kind != kind:
            raise UsageError(
                f"case {case.id!r} judges {case.judgment_kind} targets, not {kind}; "
                "drop --target or pass the case's kind"
            )
        field = JUDGMENT_TARGETS[kind]
        fixture = fixtures.get(case.id)
        if fixture is not None:
            blocks = fixture.lookup.evidence_blocks
            ranked[case.id] = [t for b in blocks if (t := getattr(b, field)) is not None]
        if case.judgments:
            judgments[case.id] = {j.target: j.grade for j in case.judgments}
    write_run(args.out, ranked, tag=args.tag)
    message = f"Wrote {args.out} ({len(ranked)} queries)"
    if args.qrels_out:
        write_qrels(args.qrels_out, judgments)
        message += f" and {args.qrels_out} ({len(judgments)} judged queries)"
    print(message)
    return 0

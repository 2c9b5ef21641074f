"""``ragsnap score``: fixtures against golden cases, then an optional baseline diff.

Everything is read and checked before anything is written: a bad baseline or
a bad fixture leaves every existing report untouched.

The fixtures stream (``ragsnap.io.inputs.FixtureStream``): each is read, hashed,
validated, built, scored and dropped; only each case's result, the judged cases'
rankings (their graded metrics are computed in one batch at the end), the sources
each fixture cites and its digest (the provenance check) are kept, so the memory a
run needs does not grow with the fixtures' texts. The reports are the same bytes as
scoring all loaded fixtures at once.

``scoring.skip`` in ragsnap.yaml names case expectations that are not checked
(``score_case``'s ``skip``); the report and the summary say which were skipped.

Before scoring, the label checks of ``ragsnap check`` run (``commands._labels``):
an error is bad input (exit 2, nothing written), a warning is printed once on
stderr; ``--no-label-check`` skips them, and the report's ``labelCheck`` says so.
Their one pass over the seed corpus is the provenance check's too.

Before scoring, the fixtures' provenance is checked (``ragsnap.snapshot.provenance``):
a fixture captured before a seed document or a lookup setting changed makes the
run fail (exit 1) with one line per cause, after the reports are written (the
JSON report's ``provenance`` holds them); what cannot be checked is a note on
stderr.

``--privacy`` writes the privacy views (``ragsnap.scoring.privacy``) of every
report: the diff is computed on the full report, then made private. A diff
against a private baseline is private too.

A failing case fails the run (exit 1) as the ``knownFailures`` mode of ragsnap.yaml
says (``ragsnap.scoring.hits``: by default a ``knownFailure`` case that fails is an
expected failure, not failing the run). ``--history DIR`` also writes the score
report into DIR under a dated name (``ragsnap.scoring.trend.history_name``), what
``ragsnap trend`` reads: the workflow keeps the history that way.
"""

from __future__ import annotations

import argparse
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..config import load_config
from ..errors import UsageError
from ..io.baseline import load_baseline
from ..io.inputs import FixtureStream, load_cases_document
from ..io.jsonio import check_outputs, write_outputs
from ..io.reads import labelled, reads_of
from ..ir.metrics import parse_measures
from ..scoring.privacy import evaluation_definition, is_private, private_diff, private_report
from ..scoring.report import render_markdown
from ..scoring.review import render_diff_markdown
from ..scoring.stream import score_report, score_stream
from ..scoring.summary import diff_lines, score_lines
from . import DEFAULT_DIFF_JSON, DEFAULT_DIFF_MARKDOWN, gc_paused
from ._labels import check_labels_before_scoring
from ._provenance import check_fixture_digests
from ._review import diff_with_config, extra_outputs


def run(args: argparse.Namespace) -> int:
    """Score, report, diff; return 1 when a case failed or a regression was found."""
    with gc_paused():
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    if args.compare_to is None and (
        args.diff_json_report or args.diff_markdown_report or args.require_significance
    ):
        raise UsageError(
            "--diff-json-report, --diff-markdown-report and --require-significance need "
            "--compare-to BASELINE; add it or drop them"
        )
    config = load_config(args.config, embedder=getattr(args, "embedder", None))
    case_set, document = load_cases_document(args.cases)
    privacy = getattr(args, "privacy", False)
    scored = score_stream(
        case_set.cases, FixtureStream(args.fixtures), config.skip_expectations, privacy
    )
    labels = check_labels_before_scoring(
        config, args.cases, case_set.cases, document, skip=getattr(args, "no_label_check", False)
    )
    del document  # read by the label checks only
    case_ids = {case.id for case in case_set.cases}
    staleness = check_fixture_digests(
        config, scored.digests, scored.cited, args.fixtures, case_ids, labels.seed
    )
    report = score_report(
        case_set.cases,
        scored,
        parse_measures(config.measures),
        {
            "cases": args.cases.as_posix(),
            "casesSha256": case_set.sha256,
            "fixtures": args.fixtures.as_posix(),
            "fixturesSha256": scored.sha256,
        },
        config.known_failures,
        # each case row a read-only ``FrozenRow`` (40 % of a row dict's memory): the
        # rows are held while the baseline is read and diffed, the run's peak
        frozen=True,
    )
    generators = scored.generators
    # What streaming saves is lost if the case results outlive the report: they are in
    # it now, so they are freed before the diff and the writer (the peak of a run).
    # The golden cases go too, and only then is the baseline read (23 MB of JSON for
    # 10,000 cases), row by row into the fields the diff reads (``load_baseline``): its
    # bytes are the run's largest allocation, so they come after the case results and
    # the cases are gone, not on top of them.
    del scored, case_set, case_ids
    baseline = None if args.compare_to is None else load_baseline(args.compare_to, "baseline")
    report["labelCheck"] = labels.to_json()
    if staleness.stale:  # notes depend on where it runs: the terminal's, not the report's
        report["provenance"] = staleness.to_json()
    diff = None
    if baseline is not None:
        # the diff reads the full data; the privacy view comes after
        diff = diff_with_config(baseline, report, config, args, args.compare_to.as_posix())
    full = report
    if privacy:
        report = private_report(full, evaluation_definition(full, generators))
    if diff is not None and (privacy or is_private(baseline or {})):
        diff = private_diff(diff, baseline, full)
        if privacy:  # the current report's own hashes, definition included
            diff["currentInputs"] = dict(report["inputs"])
    del baseline  # the diff holds what the reports need of it
    outputs: list[tuple[Path, Any]] = [
        (args.json_report, report),
        (args.markdown_report, render_markdown(report)),
    ]
    diff_markdown = args.diff_markdown_report or DEFAULT_DIFF_MARKDOWN
    if diff is not None:
        outputs += [
            (args.diff_json_report or DEFAULT_DIFF_JSON, diff),
            (diff_markdown, render_diff_markdown(diff)),
        ]
    full_report = diff_markdown if diff is not None else args.markdown_report
    outputs += extra_outputs(args, report, diff, full_report)
    if getattr(args, "history", None) is not None:  # --history DIR: a dated copy
        from ..scoring.trend import history_name  # its charts import the HTML renderer

        outputs.append((args.history / history_name(report, datetime.now(timezone.utc)), report))
    check_outputs(
        labelled(args, [path for path, _ in outputs]),
        inputs=reads_of(args, config),
        allow_outside=args.allow_outside,
    )
    write_outputs(dict(outputs))

    lines = score_lines(report, args.max_listed, args.markdown_report)
    if diff is not None:
        lines += diff_lines(diff, args.max_listed, diff_markdown)
    lines += staleness.lines()
    lines.append("Reports: " + ", ".join(path.as_posix() for path, _ in outputs))
    print("\n".join(lines))
    for note in staleness.note_lines():
        print(note, file=sys.stderr)
    failed = report["outcome"]["casesFailingRun"] > 0  # by the knownFailures mode
    regressed = diff is not None and diff["regressed"]
    return 1 if failed or regressed or staleness.stale else 0

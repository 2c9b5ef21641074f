"""``ragsnap audit``: could the golden set have turned the PR check red?

Three parts, each from what the project already has (``ragsnap.audit``):

* **power** (always): from the baseline's per-case values (and, with
  ``--current``, the per-case differences of a current score report against it),
  each aggregate metric's minimum detectable effect under the diff's paired
  test, and how many cases a drop of ``--drop`` needs;
* **discrimination** (with ``--trial``): each measure's discriminative power over
  the trial's methods and its swap rate between the dev and test splits;
* **mutations** (unless ``--mutations none``): each retrieval fault of the
  catalogue injected into the embedded pipeline, re-seeded and re-snapshotted in
  a scratch store, scored and diffed against the baseline as the PR check would;
  the mutation score is the share the check catches, and each uncaught one comes
  with the kind of case that would catch it.

Everything is read and checked before anything runs; the reports are written
at the end, atomically. Exit codes: 0 written; 1 the mutation score is below
``--fail-under``; 2 bad input (a missing baseline, an unknown mutation name, a
baseline the unmutated pipeline no longer reproduces).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ..config import load_config
from ..errors import UsageError
from ..io.inputs import load_cases_document, load_report, load_trial_report
from ..io.jsonio import check_outputs, write_outputs
from ..io.reads import labelled, reads_of
from ..io.schema import validate
from . import DEFAULT_BASELINE, one_blas_thread

__all__ = ["run"]

_NO_BASELINE = (
    "detectable effects were not computed: {} does not exist (`ragsnap accept` writes it) "
    "and no --current report was given"
)
_NO_TRIAL = (
    "discriminative power was not measured: run `ragsnap trial --split all` and pass its "
    "report with --trial"
)


def _mutation_names(given: str | None) -> list[str] | None:
    """``--mutations``: None for every mutation, [] for none, else the names, checked
    against the catalogue (an unknown name: exit 2, the closest one suggested)."""
    from ..audit.mutations import select_mutations

    if given is None or given.strip() == "all":
        return None
    if given.strip() == "none":
        return []
    names = [name.strip() for name in given.split(",") if name.strip()]
    try:
        select_mutations(names)
    except UsageError as error:
        raise UsageError(f"--mutations: {error}, or all, or none") from None
    return names


def _failing_note(mutations: dict[str, Any] | None) -> list[str]:
    """A note when cases fail the run before any mutation: the check is red already."""
    failing = [] if mutations is None else mutations["controlFailing"]
    if not failing:
        return []
    shown = ", ".join(failing[:5]) + (f" and {len(failing) - 5} more" if len(failing) > 5 else "")
    return [
        f"{len(failing)} case(s) fail the run on the unchanged pipeline ({shown}): the PR check "
        "is red before any change, and a mutation counts as caught by a case only when it "
        "newly fails; fix them or mark them knownFailure"
    ]


def _baseline(args: argparse.Namespace, names: list[str] | None) -> dict[str, Any] | None:
    """The baseline score report; None when the default one does not exist and nothing
    needs it (``--mutations none``: a trial's measures audited before any baseline)."""
    if args.baseline == DEFAULT_BASELINE and not args.baseline.exists() and names == []:
        return None
    if not args.baseline.exists() and names != []:
        raise UsageError(
            f"the mutation audit diffs against the baseline, and {args.baseline} does not "
            "exist: run `ragsnap seed && ragsnap snapshot && ragsnap accept` to write it, "
            "pass --baseline FILE, or audit without mutations (--mutations none)"
        )
    return load_report(args.baseline, "baseline")


def run(args: argparse.Namespace) -> int:
    """Run the command with BLAS on one thread (``one_blas_thread``)."""
    with one_blas_thread():
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    """Audit the golden set; return 1 when the mutation score is below --fail-under."""
    from ..audit.discrimination import discrimination_section
    from ..audit.power import power_section
    from ..audit.report import audit_lines, build_audit_report, render_audit_markdown

    if not 0.0 < args.power < 1.0:
        raise UsageError(f"--power {args.power}: give a probability between 0 and 1, e.g. 0.8")
    if not 0.0 < args.drop < 1.0:
        raise UsageError(f"--drop {args.drop}: give a drop between 0 and 1, e.g. 0.02 (2 points)")
    config = load_config(args.config, embedder=getattr(args, "embedder", None))
    names = _mutation_names(args.mutations)
    case_set, _document = load_cases_document(args.cases)
    baseline = _baseline(args, names)
    current = None if args.current is None else load_report(args.current, "current report")
    trial = None if args.trial is None else load_trial_report(args.trial, "trial report")
    outputs = [args.json_report, args.markdown_report]
    if args.html_report is not None:
        outputs.append(args.html_report)
    check_outputs(
        labelled(args, outputs),
        inputs=reads_of(args, config),
        allow_outside=args.allow_outside,
    )

    started = time.monotonic()
    significance = config.significance
    scored = current if current is not None else baseline
    power = (
        None
        if scored is None
        else power_section(
            scored,
            significance,
            power=args.power,
            drop=args.drop,
            baseline=baseline if current is not None else None,
        )
    )
    discrimination = None if trial is None else discrimination_section(trial, significance)
    mutations = None
    timing: dict[str, Any] = {}
    if names != []:
        from ..audit.runner import mutation_section, run_audit

        assert baseline is not None  # _baseline insists on one when mutations run
        audit = run_audit(
            config,
            case_set,
            baseline,
            names=names,
            method=args.method,
            workdir=Path(tempfile.gettempdir()),
            baseline_label=args.baseline.as_posix(),
        )
        mutations = mutation_section(audit)
        seconds = mutations.pop("seconds")  # timings apart: the rest is the same every run
        timing = {
            "controlSeconds": seconds["control"],
            "mutationSeconds": seconds["mutations"],
        }
    timing["wallSeconds"] = round(time.monotonic() - started, 3)
    report = build_audit_report(
        inputs={
            "cases": args.cases.as_posix(),
            "casesSha256": case_set.sha256,
            "baseline": None if baseline is None else args.baseline.as_posix(),
            "report": None if args.current is None else args.current.as_posix(),
            "trial": None if args.trial is None else args.trial.as_posix(),
        },
        settings={
            "alpha": significance.alpha,
            "power": args.power,
            "drop": args.drop,
            "failUnder": args.fail_under,
            "method": None if mutations is None else mutations["method"],
        },
        power=power,
        discrimination=discrimination,
        mutations=mutations,
        notes=[
            *_failing_note(mutations),
            *([] if scored is not None else [_NO_BASELINE.format(args.baseline.as_posix())]),
            *([] if trial is not None else [_NO_TRIAL]),
        ],
        timing=timing,
    )
    validate(report, "audit-report", args.json_report, "audit report")
    written: dict[Path, Any] = {
        args.json_report: report,
        args.markdown_report: render_audit_markdown(report),
    }
    if args.html_report is not None:
        from ..audit.report import render_audit_html

        written[args.html_report] = render_audit_html(report)
    write_outputs(written)
    lines = audit_lines(report)
    lines.append(f"Took {timing['wallSeconds']:.1f} s.")
    lines.append("Reports: " + ", ".join(path.as_posix() for path in written))
    print("\n".join(lines))
    score = None if mutations is None else mutations.get("score")
    if args.fail_under is not None and score is not None and score < args.fail_under:
        print(
            f"error: the mutation score {score:.2f} is below --fail-under {args.fail_under}: "
            "add the cases the advice names",
            file=sys.stderr,
        )
        return 1
    return 0

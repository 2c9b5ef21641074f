"""``ragsnap accept``: the one-command baseline update after an intended change.

1. Regenerate the fixtures: exactly ``ragsnap snapshot --skip-eval`` with the same
   options (cases, fixtures, backend, knowledge base, method ...), which lists
   every fixture rewritten or added, and the orphaned ones (deleted with
   ``--prune``: fixtures only, as ``snapshot --prune`` deletes them). Nothing is
   written until every lookup has succeeded, and a failure here (a knowledge base
   that is missing or unreachable) stops the command before the baseline is touched.
2. Score the new fixtures into the baseline, ``reports/baseline.json`` and
   ``reports/baseline.md`` (``--baseline FILE``: FILE and FILE with ``.md``), as
   ``ragsnap score --json-report FILE --markdown-report FILE.md`` does.
3. Diff the previous baseline against the new one with the score diff's rules
   and tolerances, and print its verdict: what the update accepts.
4. Keep the new baseline in the history folder (``history`` in ragsnap.yaml, else
   ``reports/history``; committed, read by ``ragsnap trend``) under a dated name
   (``ragsnap.scoring.trend.history_name``: UTC date and time, then a hash), when
   it differs from the previous baseline; an unchanged baseline adds nothing.

Exits 0 when the baseline was written, failing cases or not (accepting them is
the point; they stay listed in the report); 2 on bad input, with nothing of the
baseline changed. The previous baseline must be a score report or unreadable
JSON (a merge conflict's markers): any other JSON file there is refused rather
than replaced. The options are checked before the first fixture is written.
"""

from __future__ import annotations

import argparse
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import orjson

from ..config import load_config
from ..errors import InputError, UsageError
from ..io.inputs import load_report
from ..io.jsonio import check_outputs, read_bytes, write_outputs
from ..io.reads import reads_of
from ..scoring.report import REPORT_KIND
from ..scoring.summary import diff_lines
from ..scoring.trend import history_name
from . import score, snapshot
from ._review import diff_with_config


def _previous(path: Path) -> tuple[bytes | None, dict[str, Any] | None]:
    """The previous baseline's bytes and report; a report that cannot be read is
    replaced (with a note), a file that is not a score report at all refused."""
    if not path.exists():
        print(f"accept: no previous baseline at {path}; writing the first one")
        return None, None
    raw = read_bytes(path, "pass another --baseline FILE")
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        print(f"accept: the previous {path} is not valid JSON; replacing it, not compared")
        return raw, None
    if not isinstance(data, dict) or data.get("kind") != REPORT_KIND:
        raise UsageError(
            f"--baseline {path} is not a ragsnap score report, and accept would replace it; "
            "pass the baseline's path (default: reports/baseline.json)"
        )
    try:
        return raw, load_report(path, "baseline")
    except InputError as exc:
        print(f"accept: the previous {path} is not compared ({exc.problem}); replacing it")
        return raw, None


def run(args: argparse.Namespace) -> int:
    baseline: Path = args.baseline
    markdown = baseline.with_suffix(".md")
    if markdown == baseline:
        raise UsageError(
            f"--baseline {baseline}: the Markdown baseline is written beside it as "
            f"{baseline.stem}.md; pass the JSON file, e.g. reports/baseline.json"
        )
    config = load_config(args.config, embedder=getattr(args, "embedder", None))
    history = config.history
    check_outputs(
        [
            ("--baseline", baseline),
            ("--baseline", markdown),
            ("", history / "entry.json"),  # the entry's name comes later
        ],
        inputs=reads_of(args, config, updates=["baseline"]),
        allow_outside=args.allow_outside,
    )
    old_raw, old_report = _previous(baseline)

    snapshot.run(
        argparse.Namespace(**{**vars(args), "case": None, "check": False, "skip_eval": True})
    )
    print("baseline:", flush=True)
    score.run(snapshot.score_args(args, baseline, markdown))

    if old_raw is not None and baseline.read_bytes() == old_raw:
        print(f"Baseline unchanged: {baseline} is what it was; no history entry added")
    else:
        current = load_report(baseline, "baseline")
        if old_report is not None:
            label = f"the previous {baseline.as_posix()}"
            diff = diff_with_config(old_report, current, config, args, label)
            print("\n".join(diff_lines(diff, args.max_listed, markdown)))
        entry = history / history_name(current, datetime.now(timezone.utc))
        write_outputs({entry: current})
        print(f"History: {entry.as_posix()} (`ragsnap trend` draws the history)")
    print(
        f"accept: review the changes (git diff {args.fixtures.as_posix()} "
        f"{baseline.as_posix()}) and commit the fixtures, the baseline and "
        f"{history.as_posix()} together"
    )
    return 0

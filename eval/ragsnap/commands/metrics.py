"""``ragsnap metrics --qrels FILE --run FILE``: trec_eval-style evaluation.

Output, tab-separated ``measure<TAB>query<TAB>value`` lines: with ``-q`` one
line per row and measure first (rows sorted by query id), then one ``all``
line per measure, then ``num_q`` (the rows averaged over) and
``num_excluded`` (the queries of the qrels left out). The rows follow the
query-set rule (``ragsnap.ir.metrics.QUERY_SETS``): ``trec`` unless
``--query-set`` or ``-c`` says otherwise, so by default every ``all`` line is
trec_eval's. Each ``all`` value is ``aggregate``'s (a mean; a sum for the
counts ``num_ret``, ``num_rel``, ``num_rel_ret`` and ``num_nonrel_judged_ret``,
printed as integers; a geometric mean for ``gm_map`` and ``gm_bpref``, which,
as in trec_eval, have no per-query lines). ``relstring`` is text, printed per
query only (with ``-q``), quoted as trec_eval quotes it.

trec_eval's options, with its semantics: ``-l N`` makes a grade of at least N
relevant (default 1), ``-M N`` cuts each query's ranking to its first N
results, ``-m official`` and ``-m all_trec`` name trec_eval's measure sets
(``TREC_SETS``, printed in trec_eval's order after a ``runid`` line, the tag
of the run's last line), and ``--trec-eval 9|10`` picks the release whose
recall-level rule ``iprec`` and ``11pt_avg`` follow (default 9: 9.0.8, the
current release). A measure of the set that ragsnap does not compute is named
on stderr (``TREC_SETS_MISSING``), never silently dropped.
"""

from __future__ import annotations

import argparse
import sys

from ..errors import UsageError
from ..ir.metrics import (
    DEFAULT_MEASURES,
    DEFAULT_TREC_EVAL,
    MEASURES,
    TREC_SETS,
    TREC_SETS_MISSING,
    Measure,
    aggregate,
    parse_measures,
    texts,
)
from ..ir.trec import evaluate_files, read_run_tag
from . import gc_paused


def _query_set(args: argparse.Namespace) -> str:
    """``--query-set``, or ``complete`` for ``-c``; ``trec`` when neither is given."""
    chosen: str | None = args.query_set
    if args.complete:
        if chosen not in (None, "complete"):
            raise UsageError(
                f"-c and --query-set {chosen} ask for different query sets; pass only one"
            )
        return "complete"
    return chosen or "trec"


def _expand(requested: list[str], rule: str) -> tuple[list[str], bool, list[str]]:
    """The measures asked for, with trec_eval's set names expanded: (measures,
    whether ``runid`` is printed, the set's measures ragsnap does not compute)."""
    names: list[str] = []
    runid = False
    missing: list[str] = []
    for text in requested:
        key = text.strip().lower()
        if key in TREC_SETS:
            names += TREC_SETS[key]
            runid = True
            if key == "all_trec":
                missing += TREC_SETS_MISSING[rule]
        elif key == "runid":
            runid = True
        elif key == "num_q":
            continue  # always printed
        else:
            names.append(text)
    return names, runid, list(dict.fromkeys(missing))


def run(args: argparse.Namespace) -> int:
    """Print ``measure<TAB>query<TAB>value`` lines; ``-q`` adds per-query lines."""
    if args.digits < 0 or args.digits > 17:
        raise UsageError(f"--digits {args.digits}: give a number of decimal places from 0 to 17")
    if args.max_retrieved is not None and args.max_retrieved < 1:
        raise UsageError(f"-M {args.max_retrieved}: give at least 1 result per query")
    query_set = _query_set(args)
    rule: str = args.trec_eval or DEFAULT_TREC_EVAL
    names, runid, missing = _expand(args.measure or list(DEFAULT_MEASURES), rule)
    measures = parse_measures(names)
    with gc_paused():
        rankings, values = evaluate_files(
            args.qrels,
            args.run,
            measures,
            query_set,
            relevance_level=args.relevance_level,
            max_retrieved=args.max_retrieved,
            trec_eval=rule,
        )
    width = max(12, *(len(str(m)) for m in measures)) if measures else 12

    def line(measure: Measure | str, query: str, value: float | str) -> str:
        if isinstance(value, str):
            shown = value
        elif isinstance(measure, str) or MEASURES[measure.name].aggregate == "sum":
            shown = f"{value:.0f}"
        else:
            shown = f"{value:.{args.digits}f}"
        return f"{measure!s:<{width}}\t{query}\t{shown}"

    out = []
    if runid:
        out.append(line("runid", "all", read_run_tag(args.run)))
    if args.per_query:
        listed = [m for m in measures if MEASURES[m.name].aggregate != "geometric"]
        strings = {m: texts(rankings, m) for m in listed if MEASURES[m.name].aggregate == "text"}
        for row, query in enumerate(rankings.query_ids):
            for m in listed:
                shown: float | str = strings[m][row] if m in strings else float(values[m][row])
                out.append(line(m, query, shown))
    out += [
        line(m, "all", aggregate(m, values[m]))
        for m in measures
        if MEASURES[m.name].aggregate != "text"
    ]
    out.append(line("num_q", "all", len(rankings.query_ids)))
    out.append(line("num_excluded", "all", len(rankings.excluded)))
    sys.stdout.write("\n".join(out) + "\n")
    if missing:
        sys.stderr.write(
            f"note: trec_eval {rule}'s all_trec also prints {', '.join(missing)}, which "
            "ragsnap does not compute; they are left out above\n"
        )
    return 0

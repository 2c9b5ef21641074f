"""``ragsnap metrics --qrels FILE --run FILE``: trec_eval-style evaluation.

Output, tab-separated ``measure<TAB>query<TAB>value`` lines: with ``-q`` one
line per row and measure first (rows sorted by query id), then one ``all``
line per measure, then ``num_q`` (the rows averaged over) and
``num_excluded`` (the queries of the qrels left out). The rows follow the
query-set rule (``ragsnap.ir.metrics.QUERY_SETS``): ``trec`` unless
``--query-set`` or ``-c`` says otherwise, so by default every ``all`` line is
trec_eval's. Each ``all`` value is ``aggregate``'s (a mean; a sum for the
counts ``num_ret``, ``num_rel`` and ``num_rel_ret``, printed as integers; a
geometric mean for ``gm_map``, which, as in trec_eval, has no per-query
lines).
"""

from __future__ import annotations

import argparse
import sys

from ..errors import UsageError
from ..ir.metrics import DEFAULT_MEASURES, MEASURES, Measure, aggregate, parse_measures
from ..ir.trec import evaluate_files
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


def run(args: argparse.Namespace) -> int:
    """Print ``measure<TAB>query<TAB>value`` lines; ``-q`` adds per-query lines."""
    if args.digits < 0 or args.digits > 17:
        raise UsageError(f"--digits {args.digits}: give a number of decimal places from 0 to 17")
    query_set = _query_set(args)
    measures = parse_measures(args.measure or DEFAULT_MEASURES)
    with gc_paused():
        rankings, values = evaluate_files(args.qrels, args.run, measures, query_set)
    width = max(12, *(len(str(m)) for m in measures))

    def line(measure: Measure | str, query: str, value: float) -> str:
        count = isinstance(measure, str) or MEASURES[measure.name].aggregate == "sum"
        shown = f"{value:.0f}" if count else f"{value:.{args.digits}f}"
        return f"{measure!s:<{width}}\t{query}\t{shown}"

    out = []
    if args.per_query:
        listed = [m for m in measures if MEASURES[m.name].aggregate != "geometric"]
        for row, query in enumerate(rankings.query_ids):
            out += [line(m, query, float(values[m][row])) for m in listed]
    out += [line(m, "all", aggregate(m, values[m])) for m in measures]
    out.append(line("num_q", "all", len(rankings.query_ids)))
    out.append(line("num_excluded", "all", len(rankings.excluded)))
    sys.stdout.write("\n".join(out) + "\n")
    return 0

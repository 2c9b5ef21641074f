"""``ragsnap metrics --qrels FILE --run FILE``: trec_eval-style evaluation."""

from __future__ import annotations

import argparse
import sys

from ..errors import UsageError
from ..ir.metrics import DEFAULT_MEASURES, parse_measures
from ..ir.trec import evaluate_files
from . import gc_paused


def run(args: argparse.Namespace) -> int:
    """Print ``measure<TAB>query<TAB>value`` lines; ``-q`` adds per-query lines."""
    if args.digits < 0 or args.digits > 17:
        raise UsageError(f"--digits {args.digits}: give a number of decimal places from 0 to 17")
    measures = parse_measures(args.measure or DEFAULT_MEASURES)
    with gc_paused():
        rankings, values = evaluate_files(args.qrels, args.run, measures)
    width = max(12, *(len(str(m)) for m in measures))
    fmt = f"{{:<{width}}}\t{{}}\t{{:.{args.digits}f}}"
    out = []
    if args.per_query:
        for row, query in enumerate(rankings.query_ids):
            out += [fmt.format(str(m), query, values[m][row]) for m in measures]
    n = len(rankings.query_ids)
    for m in measures:
        out.append(fmt.format(str(m), "all", float(values[m].mean()) if n else 0.0))
    out.append(f"{'num_q':<{width}}\tall\t{n}")
    out.append(f"{'num_excluded':<{width}}\tall\t{len(rankings.excluded)}")
    sys.stdout.write("\n".join(out) + "\n")
    return 0

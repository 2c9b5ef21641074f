"""Graded IR measures and span metrics for golden cases against their fixtures.

Pure functions. A case contributes when it is answerable and has judgments
with a grade >= 1; its ranking is the fixture's evidence blocks, identified by
the case's judgment target (``chunkId``, ``docId`` or ``source``) and
de-duplicated by it (first occurrence wins), unless a deeper ranking of
target ids is passed for it (``ragsnap trial --depth``: the method's ranking
without score floors or top K). A judged case without a fixture scores 0.
The IR measures are those of ``ragsnap.ir.metrics`` (trec_eval semantics);
the span metrics follow GoodBuddy's definitions:

* the returned context is the text of the top-K evidence blocks, one block per
  chunk id (a repeated chunk cannot count twice);
* the annotated spans are the exact spans of the judgments with grade >= 1;
  a span that lies inside another span of the case is dropped (nested spans
  are unioned), repeated spans count once;
* **context precision** = characters of the returned context covered by some
  occurrence of an annotated span (overlapping occurrences unioned) / all
  returned characters (0 when nothing was returned);
* **context recall** = characters of the annotated spans that occur verbatim
  in the returned context / all annotated characters.

A case without spans has no span metrics (``None``); averages skip it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..ir.metrics import Measure, evaluate, rankings_from_dicts
from ..models import JUDGMENT_TARGETS, Fixture, GoldenCase

__all__ = [
    "CONTEXT_PRECISION",
    "CONTEXT_RECALL",
    "annotated_spans",
    "case_metrics",
    "context_precision_recall",
    "first_holding",
]

CONTEXT_PRECISION = "contextPrecision"
CONTEXT_RECALL = "contextRecall"


def _union_length(intervals: list[tuple[int, int]]) -> int:
    total, end = 0, -1
    for start, stop in sorted(intervals):
        if stop <= end:
            continue
        total += stop - max(start, end)
        end = stop
    return total


def _occurrences(text: str, span: str) -> list[tuple[int, int]]:
    found, at = [], text.find(span)
    while at >= 0:
        found.append((at, at + len(span)))
        at = text.find(span, at + 1)
    return found


def annotated_spans(spans: Sequence[str]) -> list[str]:
    """The distinct non-empty ``spans``, those inside another one dropped."""
    distinct = [s for s in dict.fromkeys(spans) if s]
    return [s for s in distinct if not any(s != o and s in o for o in distinct)]


def first_holding(texts: Sequence[str], span: str) -> int | None:
    """The index of the first of ``texts`` that holds ``span`` verbatim, or None."""
    return next((i for i, text in enumerate(texts) if span in text), None)


def context_precision_recall(
    texts: Sequence[str], spans: Sequence[str]
) -> tuple[float | None, float | None]:
    """Context precision and recall of returned ``texts`` for annotated ``spans``."""
    kept = annotated_spans(spans)
    if not kept:
        return None, None
    returned = sum(len(t) for t in texts)
    covered = sum(_union_length([iv for s in kept for iv in _occurrences(t, s)]) for t in texts)
    annotated = sum(len(s) for s in kept)
    found = sum(len(s) for s in kept if first_holding(texts, s) is not None)
    return (covered / returned if returned else 0.0), found / annotated


def case_metrics(
    cases: Sequence[GoldenCase],
    fixtures: Mapping[str, Fixture],
    measures: Sequence[Measure],
    deep_rankings: Mapping[str, Sequence[str]] | None = None,
) -> dict[str, dict[str, float | None]]:
    """Per judged case: each measure (``str(measure)`` keys) and the span metrics.

    ``deep_rankings`` (case id -> target ids, best first) replaces a case's evidence
    as the ranking the IR measures read; the span metrics always read the
    evidence."""
    judged = [c for c in cases if not c.no_answer and any(j.grade >= 1 for j in c.judgments)]
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, list[str]] = {}
    spans: dict[str, tuple[float | None, float | None]] = {}
    for case in judged:
        qrels[case.id] = {j.target: j.grade for j in case.judgments}
        fixture = fixtures.get(case.id)
        blocks = fixture.lookup.evidence_blocks if fixture else ()
        field = JUDGMENT_TARGETS[case.judgment_kind or "chunkId"]
        if deep_rankings is not None and case.id in deep_rankings:
            run[case.id] = list(deep_rankings[case.id])
        else:
            run[case.id] = [t for b in blocks if (t := getattr(b, field)) is not None]
        top = {b.chunk_id: b.text for b in blocks[: case.top_k]}
        spans[case.id] = context_precision_recall(
            list(top.values()), [s for j in case.judgments if j.grade >= 1 for s in j.spans]
        )
    rankings = rankings_from_dicts(qrels, run)
    values = evaluate(rankings, measures)
    result: dict[str, dict[str, float | None]] = {}
    for row, case_id in enumerate(rankings.query_ids):
        entry: dict[str, float | None] = {str(m): float(values[m][row]) for m in measures}
        entry[CONTEXT_PRECISION], entry[CONTEXT_RECALL] = spans[case_id]
        result[case_id] = entry
    return result

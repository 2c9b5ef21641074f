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
* overlapping spans are unioned too, as GoodBuddy unions them: the annotated
  characters are the union of the spans' characters in the text they were
  quoted from. That text is the judged chunk's when the fixture returned it
  and it holds the span (the span's first occurrence there); spans the
  fixture holds no source for are laid end to end, each merged with the one
  before it where the earlier one's end is the later one's start, by at
  least two characters (``abcd`` and ``cdef`` cover the six characters of
  ``abcdef``, not eight);
* **context precision** = characters of the returned context covered by some
  occurrence of an annotated span (overlapping occurrences unioned) / all
  returned characters (0 when nothing was returned);
* **context recall** = annotated characters covered by a span that occurs
  verbatim in the returned context / all annotated characters (``abcd`` and
  ``cdef`` over the context ``zzabcdzz``: 4 of 6).

A case without spans has no span metrics (``None``); averages skip it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..ir.metrics import Measure, evaluate, rankings_from_dicts
from ..models import JUDGMENT_TARGETS, EvidenceBlock, Fixture, GoldenCase

__all__ = [
    "CONTEXT_PRECISION",
    "CONTEXT_RECALL",
    "CaseRanking",
    "annotated_spans",
    "case_metrics",
    "case_ranking",
    "context_precision_recall",
    "first_holding",
    "graded_metrics",
    "is_judged",
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


#: the fewest characters two spans without a source must share to be taken as one
#: stretch of their chunk (a shared last and first letter is too often chance)
MIN_SPAN_OVERLAP = 2


def _overlap(before: str, after: str) -> int:
    """The length of the longest proper suffix of ``before`` that starts ``after``
    (0 below ``MIN_SPAN_OVERLAP``)."""
    for size in range(min(len(before), len(after)) - 1, MIN_SPAN_OVERLAP - 1, -1):
        if before.endswith(after[:size]):
            return size
    return 0


def _footprints(spans: Sequence[str], sources: Sequence[str]) -> list[tuple[int, int]]:
    """Each span's characters as an interval in one frame where overlapping spans share
    characters: the first of ``sources`` that holds a span places it (each source its own
    stretch of the frame), the spans no source holds follow end to end in their order,
    each sharing its longest start that ends the span before it."""
    placed: dict[int, tuple[int, int]] = {}
    offset = 0
    for source in sources:
        for i, span in enumerate(spans):
            if i not in placed and (at := source.find(span)) >= 0:
                placed[i] = (offset + at, offset + at + len(span))
        offset += len(source)
    previous = ""
    for i, span in enumerate(spans):
        if i in placed:
            continue
        start = offset - _overlap(previous, span) if previous else offset
        placed[i] = (start, start + len(span))
        offset, previous = start + len(span), span
    return [placed[i] for i in range(len(spans))]


def context_precision_recall(
    texts: Sequence[str], spans: Sequence[str], sources: Sequence[str] = ()
) -> tuple[float | None, float | None]:
    """Context precision and recall of returned ``texts`` for annotated ``spans``.

    ``sources`` are texts the spans were quoted from (the judged chunks' texts, where
    known): spans are placed there to union the ones that overlap."""
    kept = annotated_spans(spans)
    if not kept:
        return None, None
    returned = sum(len(t) for t in texts)
    covered = sum(_union_length([iv for s in kept for iv in _occurrences(t, s)]) for t in texts)
    footprints = _footprints(kept, sources)
    annotated = _union_length(footprints)
    found = _union_length(
        [fp for s, fp in zip(kept, footprints, strict=True) if first_holding(texts, s) is not None]
    )
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
    rankings: dict[str, CaseRanking] = {}
    for case in cases:
        if is_judged(case):
            fixture = fixtures.get(case.id)
            deep = None if deep_rankings is None else deep_rankings.get(case.id)
            rankings[case.id] = case_ranking(
                case, fixture.lookup.evidence_blocks if fixture else (), deep
            )
    return graded_metrics(cases, rankings, measures)


#: what ``graded_metrics`` needs of one judged case: its qrels (target -> grade), its
#: ranking of target ids and its span metrics (context precision, context recall)
CaseRanking = tuple[dict[str, int], list[str], tuple[float | None, float | None]]


def is_judged(case: GoldenCase) -> bool:
    """Whether ``case`` has graded metrics: answerable, with a judgment of grade >= 1."""
    return not case.no_answer and any(j.grade >= 1 for j in case.judgments)


def case_ranking(
    case: GoldenCase, blocks: Sequence[EvidenceBlock], deep: Sequence[str] | None = None
) -> CaseRanking:
    """One judged case's part of ``case_metrics`` from its evidence ``blocks`` (empty:
    no fixture) and its ``deep`` ranking, if any: computed as each fixture is read,
    so the blocks' texts need not be kept (``ragsnap score`` streams)."""
    qrels = {j.target: j.grade for j in case.judgments}
    field = JUDGMENT_TARGETS[case.judgment_kind or "chunkId"]
    if deep is not None:
        run = list(deep)
    else:
        run = [t for b in blocks if (t := getattr(b, field)) is not None]
    top = {b.chunk_id: b.text for b in blocks[: case.top_k]}
    judged_targets = {j.target for j in case.judgments if j.grade >= 1}
    sources = {b.chunk_id: b.text for b in blocks if getattr(b, field) in judged_targets}
    spans = context_precision_recall(
        list(top.values()),
        [s for j in case.judgments if j.grade >= 1 for s in j.spans],
        list(sources.values()),
    )
    return qrels, run, spans


def graded_metrics(
    cases: Sequence[GoldenCase], rankings: Mapping[str, CaseRanking], measures: Sequence[Measure]
) -> dict[str, dict[str, float | None]]:
    """``case_metrics`` from each judged case's ``case_ranking`` (a judged case
    missing from ``rankings`` has no fixture: an empty ranking, scoring 0)."""
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, list[str]] = {}
    spans: dict[str, tuple[float | None, float | None]] = {}
    for case in cases:
        if not is_judged(case):
            continue
        ranking = rankings.get(case.id)
        qrels[case.id], run[case.id], spans[case.id] = (
            ranking if ranking is not None else case_ranking(case, ())
        )
    ranked = rankings_from_dicts(qrels, run)
    values = evaluate(ranked, measures)
    result: dict[str, dict[str, float | None]] = {}
    for row, case_id in enumerate(ranked.query_ids):
        entry: dict[str, float | None] = {str(m): float(values[m][row]) for m in measures}
        entry[CONTEXT_PRECISION], entry[CONTEXT_RECALL] = spans[case_id]
        result[case_id] = entry
    return result

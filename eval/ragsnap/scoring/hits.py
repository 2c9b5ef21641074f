"""Score one fixture against its golden case: hit level, expectations, pass state.

Pure functions over the models; no I/O. The rules, which the README repeats:

Only the first ``topK`` evidence blocks count ("the top K").

* **found**: some top-K block's ``source`` is in ``expectedSources`` or its
  ``docId`` is in ``expectedDocIds``. The *first expected rank* is the rank of
  the first such block.
* **breadcrumb coverage**: every expected breadcrumb is a segment prefix of
  some top-K block's breadcrumb. Breadcrumbs are split on ``>``, each segment
  trimmed, NFKC-normalised and case-folded; ``Database > MySQL`` covers
  ``Database > MySQL > Connection Pool`` but not ``Database > MySQLX``.
* **keyword coverage**: every expected keyword occurs as a substring of the
  top-K blocks' text (NFKC-normalised and case-folded on both sides).
* **coverage satisfied**: breadcrumb coverage is complete (the case expects
  breadcrumbs) or keyword coverage is complete (the case expects keywords);
  a case that expects neither is satisfied by finding the document.
* **hit level**: ``strong`` = found and coverage satisfied; ``medium`` =
  found, coverage incomplete; ``weak`` = not found, but at least one expected
  keyword occurs; ``miss`` = neither.

A case passes when its hit level is at least ``minHitLevel`` (default
``medium``) and every pipeline expectation holds. The pipeline expectations
are named in ``EXPECTATIONS`` (``selectedAttempt``, ``fallbackReason``,
``fallbackReasons``, ``evidenceStatus``, ``contextSources``,
``rerankTopSource``: the case fields ``expected<Name>``); the ones in
``score_case``'s ``skip`` (``scoring.skip`` in ragsnap.yaml, for a service
that does not expose a trace or a context pack) are not checked, and a case
that sets one lists it in ``skipped_expectations``.

**Not applicable.** Each pipeline expectation reads one part of the lookupResult
(``EXPECTATION_PARTS``): ``selectedAttempt``, ``fallbackReason``,
``fallbackReasons`` and ``evidenceStatus`` the ``retrievalTrace``,
``rerankTopSource`` the ``rerankTrace``, ``contextSources`` the ``contextPack``.
A fixture that does not record that part (a hand-written fixture, a service
whose mapping sets the trace to null: ``LookupResult.absent``) cannot show the
expectation: it is *not applicable* (``not_applicable``: the expectation and the
missing part, "not applicable (fixture has no rerankTrace)"), never checked, so
it neither passes nor fails the case, and every report counts it. A present
rerank trace with ``applied: false`` is a rerank that did not run: its top
source is none, so ``rerankTopSource`` is checked and fails, as it always did.
Skipped (``scoring.skip``: configured not to check) and not applicable (the
fixture cannot show it) are different and both reported; an expectation that
is both is reported as skipped. A no-answer case has no hit
level and passes only when no evidence is returned. A failing case lists
every reason, in a fixed order.

**Coverage** (``Coverage``, the report's per-case ``coverage``): the same rules per
expected target, so the baseline diff can name what a case lost. Each expected
source, doc id and judged target (a judgment with grade >= 1, by its ``chunkId``,
``docId`` or ``source``) with the rank of the first top-K block that is it (``None``:
not in the top K); each expected keyword and breadcrumb with the chunk id of the
first top-K block that covers it, and each answer span (``casemetrics.annotated_spans``)
with the chunk id of the first top-K block holding it verbatim (``None``: not
covered). The coverage counts are counted from it.

**Known failures** (a case's ``knownFailure: "<reason>"``), pytest's xfail: every
case has one ``case_outcome``, ``passed`` or ``failed`` without the mark,
``expected failure`` (fails as its mark says) or ``now passes`` (passes despite its
mark: remove the mark) with it. Which outcomes fail the run is the
``knownFailures`` setting of ragsnap.yaml (``KNOWN_FAILURE_MODES``, ``fails_run``):

* ``expected`` (the default): an expected failure does not fail the run; a known
  failure that now passes is reported (remove its ``knownFailure``) and does not
  fail it either (pytest's xfail);
* ``strict``: as ``expected``, but a known failure that now passes fails the run,
  so its mark is removed (pytest's ``xfail(strict=True)``, XPASS(strict));
* ``fail``: every failing case fails the run, marked or not (the mark is then only
  documentation).

A failed case fails the run in every mode.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass

from ..models import (
    JUDGMENT_TARGETS,
    EvidenceBlock,
    Fixture,
    GoldenCase,
    HitLevel,
    hit_level_rank,
)
from .casemetrics import annotated_spans, first_holding

__all__ = [
    "DEFAULT_KNOWN_FAILURES",
    "EXPECTATIONS",
    "EXPECTATION_PARTS",
    "FIXTURE_MISSING",
    "KNOWN_FAILURE_MODES",
    "OUTCOMES",
    "CaseResult",
    "Coverage",
    "breadcrumb_covers",
    "case_outcome",
    "fails_run",
    "hit_level",
    "normalize",
    "not_applicable_text",
    "score_case",
]

FIXTURE_MISSING = "fixture missing"

#: ``knownFailures`` in ragsnap.yaml: what a case marked ``knownFailure`` does to the run
KNOWN_FAILURE_MODES = ("expected", "strict", "fail")
DEFAULT_KNOWN_FAILURES = "expected"
#: a case's outcome, in the order the summaries count them
OUTCOMES = ("passed", "now passes", "expected failure", "failed")


def case_outcome(passed: bool, known_failure: object) -> str:
    """``passed`` / ``failed`` for an unmarked case; ``now passes`` / ``expected
    failure`` for one whose ``knownFailure`` is set (see the module docstring)."""
    if not known_failure:
        return "passed" if passed else "failed"
    return "now passes" if passed else "expected failure"


def fails_run(outcome: str, mode: str) -> bool:
    """Whether a case with ``outcome`` fails the run under ``knownFailures: mode``."""
    if mode not in KNOWN_FAILURE_MODES:
        raise ValueError(f"unknown knownFailures mode {mode!r}; use one of {KNOWN_FAILURE_MODES}")
    return (
        outcome == "failed"
        or (outcome == "now passes" and mode == "strict")
        or (outcome == "expected failure" and mode == "fail")
    )


#: The pipeline expectations ``score_case`` can skip, each with whether a case sets it
#: (its ``expected<Name>`` field), in the order failing reasons are listed.
EXPECTATIONS: Mapping[str, Callable[[GoldenCase], bool]] = {
    "selectedAttempt": lambda case: case.expected_selected_attempt is not None,
    "fallbackReason": lambda case: case.expected_fallback_reason is not None,
    "fallbackReasons": lambda case: case.expected_fallback_reasons is not None,
    "evidenceStatus": lambda case: case.expected_evidence_status is not None,
    "contextSources": lambda case: bool(case.expected_context_sources),
    "rerankTopSource": lambda case: case.expected_rerank_top_source is not None,
}
#: The lookupResult part (``models.LOOKUP_PARTS``) each expectation reads: a fixture
#: without it makes the expectation not applicable (module docstring).
EXPECTATION_PARTS: Mapping[str, str] = {
    "selectedAttempt": "retrievalTrace",
    "fallbackReason": "retrievalTrace",
    "fallbackReasons": "retrievalTrace",
    "evidenceStatus": "retrievalTrace",
    "contextSources": "contextPack",
    "rerankTopSource": "rerankTrace",
}


def not_applicable_text(expectation: str, part: str) -> str:
    """``rerankTopSource not applicable (fixture has no rerankTrace)``."""
    return f"{expectation} not applicable (fixture has no {part})"


#: The full-width forms of ASCII (U+FF01-U+FF5E) and the ideographic space, each
#: with its NFKC form: Chinese text is full of them (commas, colons, parentheses),
#: and every one sends ``unicodedata.normalize`` from its quick check down the
#: slow path, which decomposes and recomposes the whole text.
_WIDE_FORMS = {
    chr(code): unicodedata.normalize("NFKC", chr(code)) for code in (0x3000, *range(0xFF01, 0xFF5F))
}
_WIDE = re.compile("[\u3000\uff01-\uff5e]")


def normalize(text: str) -> str:
    """NFKC-normalise and case-fold ``text`` for matching.

    ASCII text takes a fast path: NFKC leaves it unchanged and case folding
    equals ``lower()`` there. Text that is not NFKC yet first has its
    full-width forms replaced by their NFKC forms: a character replaced by its
    NFKC form leaves the text compatibility-equivalent, so NFKC of the result
    is NFKC of the text, and the quick check then usually finds it normalised
    already (about 3x faster on Chinese runbook text; a test compares the two).
    """
    if text.isascii():
        return text.lower()
    if not unicodedata.is_normalized("NFKC", text):
        for char in set(_WIDE.findall(text)):
            text = text.replace(char, _WIDE_FORMS[char])
    return unicodedata.normalize("NFKC", text).casefold()


@functools.lru_cache(maxsize=8192)
def _segments(breadcrumb: str) -> tuple[str, ...]:
    """A breadcrumb's normalised segments (an ASCII one in one ``lower()``, which is
    what ``normalize`` does to each of its segments); a knowledge base has a few
    hundred breadcrumbs, repeated over every fixture, so each is split once."""
    if breadcrumb.isascii():
        return tuple(part.strip() for part in breadcrumb.lower().split(">"))
    return tuple(normalize(part.strip()) for part in breadcrumb.split(">"))


def _is_prefix(want: tuple[str, ...], have: tuple[str, ...]) -> bool:
    return len(want) <= len(have) and have[: len(want)] == want


def breadcrumb_covers(expected: str, actual: str | None) -> bool:
    """True when ``expected`` is a segment prefix of ``actual``."""
    if not actual:
        return False
    return _is_prefix(_segments(expected), _segments(actual))


@dataclass(frozen=True, slots=True)
class Coverage:
    """Which top-K block covered each expected target (see the module docstring)."""

    #: expected source / doc id / judged target -> rank of the first top-K block that is it
    sources: tuple[tuple[str, int | None], ...] = ()
    doc_ids: tuple[tuple[str, int | None], ...] = ()
    chunks: tuple[tuple[str, int | None], ...] = ()
    #: expected keyword / breadcrumb / answer span -> chunk id of the first top-K block covering it
    keywords: tuple[tuple[str, str | None], ...] = ()
    breadcrumbs: tuple[tuple[str, str | None], ...] = ()
    spans: tuple[tuple[str, str | None], ...] = ()


def _keyword_coverage(
    words: tuple[str, ...], top: tuple[EvidenceBlock, ...]
) -> tuple[tuple[str, str | None], ...]:
    """Each expected keyword and the chunk id of the first top-K block whose normalised
    text holds it (None: none). A block's text is normalised only when a keyword not
    found in the blocks before it is looked for there (most are found in the first)."""
    texts: list[str] = []

    def first(needle: str) -> str | None:
        for at, block in enumerate(top):
            if at == len(texts):
                texts.append(normalize(block.text))
            if needle in texts[at]:
                return block.chunk_id
        return None

    return tuple((word, first(normalize(word))) for word in words)


def coverage(case: GoldenCase, top: tuple[EvidenceBlock, ...]) -> Coverage:
    """The coverage of ``case`` by its top-K evidence blocks ``top``."""

    def ranks(values: tuple[str, ...], field: str) -> tuple[tuple[str, int | None], ...]:
        return tuple(
            (value, next((b.rank for b in top if getattr(b, field) == value), None))
            for value in values
        )

    have = [(block.chunk_id, _segments(block.breadcrumb)) for block in top if block.breadcrumb]
    crumbs = tuple(
        (want, next((chunk for chunk, segs in have if _is_prefix(_segments(want), segs)), None))
        for want in case.expected_breadcrumbs
    )
    keywords = _keyword_coverage(case.expected_keywords, top) if case.expected_keywords else ()
    judged = [j for j in case.judgments if j.grade >= 1]
    chunks = tuple(
        (
            j.target,
            next((b.rank for b in top if getattr(b, JUDGMENT_TARGETS[j.kind]) == j.target), None),
        )
        for j in {j.target: j for j in judged}.values()
    )
    spans: tuple[tuple[str, str | None], ...] = ()
    wanted = annotated_spans([s for j in judged for s in j.spans])
    if wanted:
        held = {b.chunk_id: b.text for b in top}  # one text per chunk, as the span metrics
        ids, bodies = list(held), list(held.values())
        spans = tuple(
            (span, None if (at := first_holding(bodies, span)) is None else ids[at])
            for span in wanted
        )
    return Coverage(
        sources=ranks(case.expected_sources, "source"),
        doc_ids=ranks(case.expected_doc_ids, "doc_id"),
        chunks=chunks,
        keywords=keywords,
        breadcrumbs=crumbs,
        spans=spans,
    )


@dataclass(frozen=True, slots=True)
class CaseResult:
    """The outcome of scoring one case; everything the reports show."""

    case: GoldenCase
    fixture_present: bool
    passed: bool
    reasons: tuple[str, ...]
    hit_level: HitLevel | None
    first_expected_rank: int | None
    evidence_count: int
    matched_sources: tuple[str, ...]
    breadcrumbs_covered: int
    keywords_covered: int
    selected_attempt: str | None
    #: None: the fixture has no retrieval trace (the evidence status too) / no context pack
    fallback_reasons: tuple[str, ...] | None
    evidence_status: str | None
    rerank_top_source: str | None
    context_sources: tuple[str, ...] | None
    #: graded IR and span metrics (``ragsnap.scoring.hits.casemetrics``); None when not judged
    metrics: Mapping[str, float | None] | None = None
    #: the sources of the evidence blocks in the case's top K, in rank order
    top_sources: tuple[str, ...] = ()
    #: the expectations the case sets that were not checked (``EXPECTATIONS`` names)
    skipped_expectations: tuple[str, ...] = ()
    #: the expectations the case sets that its fixture cannot show, each with the
    #: lookupResult part the fixture lacks (``EXPECTATION_PARTS``), in ``EXPECTATIONS`` order
    not_applicable: tuple[tuple[str, str], ...] = ()
    #: which top-K block covered each expected target; None for a no-answer case
    coverage: Coverage | None = None


def hit_level(
    found: bool,
    breadcrumbs_complete: bool | None,
    keywords_complete: bool | None,
    any_keyword: bool,
) -> HitLevel:
    """Combine the coverage facts into a hit level (see module docstring).

    ``None`` for a completeness flag means the case does not expect that kind
    of coverage.
    """
    if found:
        if breadcrumbs_complete is None and keywords_complete is None:
            return "strong"
        return "strong" if (breadcrumbs_complete or keywords_complete) else "medium"
    return "weak" if any_keyword else "miss"


def score_case(
    case: GoldenCase,
    fixture: Fixture | None,
    metrics: Mapping[str, float | None] | None = None,
    *,
    skip: Collection[str] = (),
) -> CaseResult:
    """Score ``case`` against its ``fixture`` (``None`` when the file is missing);
    ``metrics`` are its graded metrics, computed in one batch by ``casemetrics``;
    the expectations named in ``skip`` (``EXPECTATIONS`` keys) are not checked."""
    unknown = sorted(set(skip) - EXPECTATIONS.keys())
    if unknown:
        raise ValueError(f"unknown expectation(s) {unknown}; known: {list(EXPECTATIONS)}")
    skipped = tuple(name for name, sets in EXPECTATIONS.items() if name in skip and sets(case))
    if fixture is None:
        return CaseResult(
            case=case,
            fixture_present=False,
            passed=False,
            reasons=(FIXTURE_MISSING,),
            hit_level=None if case.no_answer else "miss",
            first_expected_rank=None,
            evidence_count=0,
            matched_sources=(),
            breadcrumbs_covered=0,
            keywords_covered=0,
            selected_attempt=None,
            fallback_reasons=(),
            evidence_status=None,
            rerank_top_source=None,
            context_sources=(),
            metrics=metrics,
            skipped_expectations=skipped,
            coverage=None if case.no_answer else coverage(case, ()),
        )
    lookup = fixture.lookup
    absent = (
        tuple(
            (name, EXPECTATION_PARTS[name])
            for name, sets in EXPECTATIONS.items()
            if name not in skipped and EXPECTATION_PARTS[name] in lookup.absent and sets(case)
        )
        if lookup.absent
        else ()
    )
    top = lookup.evidence_blocks[: case.top_k]
    reasons: list[str] = []
    if fixture.query != case.query:
        reasons.append("stale fixture: its query differs from the case's query")

    level: HitLevel | None
    covered: Coverage | None = None
    if case.no_answer:
        level, first_rank, crumbs, keywords = None, None, 0, 0
        matched: tuple[str, ...] = ()
        if lookup.evidence_blocks:
            reasons.append(
                f"no-answer case returned {len(lookup.evidence_blocks)} evidence block(s)"
            )
    else:
        covered = coverage(case, top)
        level, first_rank, matched, crumbs, keywords = _retrieval(case, top, covered)
        if hit_level_rank(level) < hit_level_rank(case.min_hit_level):
            reasons.append(f"hit level {level} is below the minimum {case.min_hit_level}")

    reasons.extend(_pipeline_reasons(case, fixture, (*skipped, *(name for name, _ in absent))))
    return CaseResult(
        case=case,
        fixture_present=True,
        passed=not reasons,
        reasons=tuple(reasons),
        hit_level=level,
        first_expected_rank=first_rank,
        evidence_count=len(lookup.evidence_blocks),
        matched_sources=matched,
        breadcrumbs_covered=crumbs,
        keywords_covered=keywords,
        selected_attempt=lookup.selected_attempt,
        fallback_reasons=lookup.fallback_reasons,
        evidence_status=lookup.evidence_status,
        rerank_top_source=lookup.rerank_top_source,
        context_sources=lookup.context_sources,
        metrics=metrics,
        top_sources=tuple(block.source for block in top),
        skipped_expectations=skipped,
        not_applicable=absent,
        coverage=covered,
    )


def _retrieval(
    case: GoldenCase, top: tuple[EvidenceBlock, ...], covered: Coverage
) -> tuple[HitLevel, int | None, tuple[str, ...], int, int]:
    sources, doc_ids = set(case.expected_sources), set(case.expected_doc_ids)
    first_rank: int | None = None
    matched: list[str] = []
    for block in top:
        if block.source in sources or (block.doc_id is not None and block.doc_id in doc_ids):
            if first_rank is None:
                first_rank = block.rank
            if block.source not in matched:
                matched.append(block.source)

    crumbs = sum(chunk is not None for _, chunk in covered.breadcrumbs)
    keywords = sum(chunk is not None for _, chunk in covered.keywords)
    level = hit_level(
        found=first_rank is not None,
        breadcrumbs_complete=(
            crumbs == len(case.expected_breadcrumbs) if case.expected_breadcrumbs else None
        ),
        keywords_complete=(
            keywords == len(case.expected_keywords) if case.expected_keywords else None
        ),
        any_keyword=keywords > 0,
    )
    return level, first_rank, tuple(matched), crumbs, keywords


def _mismatch(label: str, actual: object, expected: object) -> str | None:
    if expected is None or actual == expected:
        return None
    return f"{label} {actual!r}, expected {expected!r}"


def _pipeline_reasons(
    case: GoldenCase, fixture: Fixture, skipped: tuple[str, ...] = ()
) -> list[str]:
    """Why the pipeline expectations failed, in ``EXPECTATIONS`` order, the skipped and
    the not applicable ones (both in ``skipped``) left out."""
    lookup = fixture.lookup
    reason = case.expected_fallback_reason
    reasons = case.expected_fallback_reasons
    held = lookup.context_sources or ()
    missing = [s for s in case.expected_context_sources if s not in held]
    fallback = lookup.fallback_reasons or ()
    checks = {
        "selectedAttempt": _mismatch(
            "selected attempt", lookup.selected_attempt, case.expected_selected_attempt
        ),
        "fallbackReason": None
        if reason is None or reason in fallback
        else f"fallback reason {reason!r} not among {list(fallback)}",
        "fallbackReasons": _mismatch(
            "fallback reasons",
            list(fallback),
            None if reasons is None else list(reasons),
        ),
        "evidenceStatus": _mismatch(
            "evidence status", lookup.evidence_status, case.expected_evidence_status
        ),
        "contextSources": f"context pack lacks expected source(s) {missing}" if missing else None,
        "rerankTopSource": _mismatch(
            "rerank top source", lookup.rerank_top_source, case.expected_rerank_top_source
        ),
    }
    return [check for name, check in checks.items() if check is not None and name not in skipped]

"""Scoring a stream of fixtures into a score report: what ``ragsnap score`` and the
golden-set audit (``ragsnap.audit.runner``) share.

``score_stream`` scores each case as its fixture is read, then drops the fixture:
only each case's result, the judged cases' rankings (their graded metrics come in
one batch, ``score_report``), the sources each fixture's evidence cites and its
digest (the provenance check) are kept, so the memory a run needs does not grow
with the fixtures' texts. ``score_report`` computes the graded metrics and builds
the report (``ragsnap.scoring.report.build_report``). A ``FixtureSource`` is any
iterable of fixtures that knows, once iterated, each fixture's digest and the
digest of all of them: the folder stream ``ragsnap.io.inputs.FixtureStream``, or
fixtures held in memory (``MemoryFixtures``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from ..ir.metrics import Measure
from ..models import Fixture, GoldenCase
from .casemetrics import CaseRanking, case_ranking, graded_metrics, is_judged
from .hits import CaseResult, score_case
from .report import build_report

__all__ = [
    "FixtureSource",
    "MemoryFixtures",
    "Scored",
    "score_report",
    "score_stream",
    "with_metrics",
]


class FixtureSource(Protocol):
    """Fixtures one at a time; after the iteration, ``digests`` (case ID -> SHA-256 of
    its fixture's bytes) and ``sha256`` (over all of them)."""

    digests: dict[str, str]

    def __iter__(self) -> Iterator[Fixture]: ...

    @property
    def sha256(self) -> str: ...


class MemoryFixtures:
    """Fixtures held in memory as ``(case ID, file bytes, fixture)``, in case ID order
    (a folder's file name order); digested as ``FixtureStream`` digests files."""

    def __init__(self, fixtures: Iterable[tuple[str, bytes, Fixture]]) -> None:
        self._fixtures = sorted(fixtures, key=lambda item: f"{item[0]}.json")
        digest = hashlib.sha256()
        self.digests: dict[str, str] = {}
        for case_id, raw, _ in self._fixtures:
            own = hashlib.sha256(raw)
            digest.update(f"{case_id}.json".encode() + b"\0" + own.digest())
            self.digests[case_id] = own.hexdigest()
        self._sha256 = digest.hexdigest()

    @property
    def sha256(self) -> str:
        return self._sha256

    def __iter__(self) -> Iterator[Fixture]:
        for _, _, fixture in self._fixtures:
            yield fixture


@dataclass(slots=True)
class Scored:
    """What ``score_stream`` keeps of the fixtures: each case's result (graded
    metrics still to come), the judged cases' rankings, the sources each fixture's
    evidence cites and its file's SHA-256 (the provenance check), the fixtures no case
    names, the fixtures' generators (the privacy view) and the folder's SHA-256."""

    results: dict[str, CaseResult]
    rankings: dict[str, CaseRanking]
    cited: dict[str, tuple[str, ...]]
    digests: dict[str, str]
    orphans: list[str]
    generators: list[dict[str, Any]]
    sha256: str


def score_stream(
    cases: Sequence[GoldenCase],
    stream: FixtureSource,
    skip: Collection[str],
    keep_generators: bool = False,
) -> Scored:
    """Score each case as its fixture is read, then drop the fixture: only the results
    and digests are kept (``Scored``), not the fixtures' blocks and texts; their
    generator blocks only with ``keep_generators`` (the privacy view's definition). A
    case without a fixture is scored as missing."""
    by_id = {case.id: case for case in cases}
    results: dict[str, CaseResult] = {}
    rankings: dict[str, CaseRanking] = {}
    cited: dict[str, tuple[str, ...]] = {}
    orphans: list[str] = []
    generators: list[dict[str, Any]] = []
    shared: dict[str, str] = {}
    for fixture in stream:
        if keep_generators and fixture.generator is not None:
            generators.append(fixture.generator)
        case = by_id.get(fixture.case_id)
        if case is None:
            orphans.append(fixture.case_id)
            continue
        blocks = fixture.lookup.evidence_blocks
        keep = shared.setdefault  # a source name kept once, however many cases cite it
        cited[case.id] = tuple([keep(block.source, block.source) for block in blocks])
        if is_judged(case):
            rankings[case.id] = case_ranking(case, blocks)
        results[case.id] = _shared(score_case(case, fixture, None, skip=skip), shared)
    for case in cases:
        if case.id not in results:
            results[case.id] = score_case(case, None, None, skip=skip)
    return Scored(results, rankings, cited, stream.digests, orphans, generators, stream.sha256)


def score_report(
    cases: Sequence[GoldenCase],
    scored: Scored,
    measures: Sequence[Measure],
    inputs: Mapping[str, str],
    known_failures: str,
    *,
    frozen: bool = False,
) -> dict[str, Any]:
    """The score report of ``scored``: each judged case's graded ``measures`` (one
    batch), then ``build_report`` with ``inputs`` and the ``knownFailures`` mode."""
    graded = graded_metrics(cases, scored.rankings, measures)
    results = [with_metrics(scored.results[case.id], graded.get(case.id)) for case in cases]
    return build_report(results, scored.orphans, inputs, known_failures, frozen=frozen)


def with_metrics(result: CaseResult, metrics: dict[str, float | None] | None) -> CaseResult:
    """``result`` with its case's graded metrics (``score_case``'s ``metrics``)."""
    return result if metrics is None else replace(result, metrics=metrics)


def _shared(result: CaseResult, shared: dict[str, str]) -> CaseResult:
    """``result``, just made by ``score_case``, with the strings it keeps of its fixture
    (source names, the selected attempt, the evidence status, fallback reasons) replaced
    by the equal strings kept before: a source is one object however many cases list it,
    and no string of a dropped fixture outlives it (the fixtures' strings, kept one per
    case, were 20 MiB at 10,000 cases, scattered over memory the stream had freed).

    The result is not shared yet, so its frozen fields are set in place, as a frozen
    dataclass's own ``__post_init__`` sets them (``dataclasses.replace`` cost three
    times as much)."""
    keep = shared.setdefault
    put = object.__setattr__
    for name in ("top_sources", "context_sources", "matched_sources", "fallback_reasons"):
        values = getattr(result, name)
        if values:
            put(result, name, tuple([keep(value, value) for value in values]))
    for name in ("rerank_top_source", "selected_attempt", "evidence_status"):
        value = getattr(result, name)
        if value is not None:
            put(result, name, keep(value, value))
    return result

"""Aggregate case results: overall and per category, language and split.

Pure functions. Rates whose denominator is zero are ``None`` (``null`` in
JSON), never 0, so an empty group cannot look like a regression.

* pass rate = passed cases / all cases
* Recall@K = answerable cases with hit level strong or medium / answerable cases
* strong hit rate = answerable cases with hit level strong / answerable cases
* miss count = answerable cases with hit level miss (a missing fixture is a miss)
* no-answer false-positive rate = no-answer cases that returned any evidence /
  no-answer cases with a fixture
* each graded metric (``ndcg@10``, ``contextRecall`` ...) = its mean over the
  judged answerable cases that have it (macro average), with that count
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from .hits import CaseResult

__all__ = ["GROUP_KEYS", "Aggregate", "aggregate", "group"]

#: Report group name -> how to read it from a case.
GROUP_KEYS: dict[str, Callable[[CaseResult], str]] = {
    "category": lambda r: r.case.category,
    "language": lambda r: r.case.language,
    "split": lambda r: r.case.split,
}

#: Aggregate fields where a higher value is better (the diff reads this).
HIGHER_IS_BETTER = ("passRate", "recallAtK", "strongHitRate")
#: Aggregate fields where a lower value is better.
LOWER_IS_BETTER = ("missCount", "noAnswerFalsePositiveRate")


def _rate(numerator: int, denominator: int) -> float | None:
    return numerator / denominator if denominator else None


@dataclass(frozen=True, slots=True)
class Aggregate:
    """Counts over a set of case results; rates are derived from them."""

    cases: int
    passed: int
    answerable: int
    no_answer: int
    strong: int
    medium: int
    weak: int
    miss: int
    fixture_missing: int
    no_answer_scored: int
    no_answer_false_positives: int
    #: failing cases whose golden case says ``knownFailure`` (they do not fail a run)
    known_failures: int = 0
    #: per metric name: (sum over the cases that have it, how many cases)
    metric_sums: tuple[tuple[str, float, int], ...] = ()

    @property
    def failed(self) -> int:
        return self.cases - self.passed

    @property
    def pass_rate(self) -> float | None:
        return _rate(self.passed, self.cases)

    @property
    def recall_at_k(self) -> float | None:
        return _rate(self.strong + self.medium, self.answerable)

    @property
    def strong_hit_rate(self) -> float | None:
        return _rate(self.strong, self.answerable)

    @property
    def no_answer_false_positive_rate(self) -> float | None:
        return _rate(self.no_answer_false_positives, self.no_answer_scored)

    def to_json(self) -> dict[str, Any]:
        """The report's camelCase form."""
        return {
            "cases": self.cases,
            "passed": self.passed,
            "failed": self.failed,
            "knownFailures": self.known_failures,
            "passRate": self.pass_rate,
            "answerable": self.answerable,
            "noAnswer": self.no_answer,
            "hitLevels": {
                "strong": self.strong,
                "medium": self.medium,
                "weak": self.weak,
                "miss": self.miss,
            },
            "recallAtK": self.recall_at_k,
            "strongHitRate": self.strong_hit_rate,
            "missCount": self.miss,
            "fixtureMissing": self.fixture_missing,
            "noAnswerFalsePositives": self.no_answer_false_positives,
            "noAnswerFalsePositiveRate": self.no_answer_false_positive_rate,
            "metrics": {
                name: {"mean": total / count if count else None, "cases": count}
                for name, total, count in self.metric_sums
            },
        }


def aggregate(results: Iterable[CaseResult]) -> Aggregate:
    """Count ``results`` into one ``Aggregate``."""
    levels: Counter[str] = Counter()
    sums: dict[str, list[float]] = {}
    cases = passed = no_answer = missing = na_scored = na_fp = known = 0
    for result in results:
        for name, value in (result.metrics or {}).items():
            slot = sums.setdefault(name, [0.0, 0])
            if value is not None:
                slot[0] += value
                slot[1] += 1
        cases += 1
        passed += result.passed
        known += not result.passed and result.case.known_failure is not None
        missing += not result.fixture_present
        if result.case.no_answer:
            no_answer += 1
            if result.fixture_present:
                na_scored += 1
                na_fp += result.evidence_count > 0
        elif result.hit_level is not None:
            levels[result.hit_level] += 1
    return Aggregate(
        cases=cases,
        passed=passed,
        answerable=cases - no_answer,
        no_answer=no_answer,
        strong=levels["strong"],
        medium=levels["medium"],
        weak=levels["weak"],
        miss=levels["miss"],
        fixture_missing=missing,
        known_failures=known,
        no_answer_scored=na_scored,
        no_answer_false_positives=na_fp,
        metric_sums=tuple((name, total, int(count)) for name, (total, count) in sums.items()),
    )


def group(results: Iterable[CaseResult], key: Callable[[CaseResult], str]) -> dict[str, Aggregate]:
    """Aggregate ``results`` per value of ``key``, in sorted key order."""
    buckets: dict[str, list[CaseResult]] = {}
    for result in results:
        buckets.setdefault(key(result), []).append(result)
    return {name: aggregate(buckets[name]) for name in sorted(buckets)}

"""Compare a current score report with a baseline: regressions first.

Pure functions over two validated report dicts. Values are compared after
rounding both to the writer's precision, so a baseline read back from disk
and a report still in memory compare exactly.

Aggregate metrics, overall and per category / language / split (every row is
kept, unchanged ones too, so a reader sees the whole table):

* pass rate, Recall@K, strong hit rate: a drop larger than the tolerance is a
  regression, a rise an improvement;
* miss count, no-answer false-positive rate: a rise larger than the tolerance
  (``missCount``; ``metrics`` for the rate) is a regression;
* graded metrics (nDCG@k, Recall@k, MRR, context precision / recall ...):
  a drop of the mean larger than the ``metrics`` tolerance is a regression;
  judgment coverage is reported as a change, never a regression (it says how
  complete the judgments are, not how good retrieval is);
* a move smaller than the metric's **noise floor** is "changed", never a
  regression or an improvement (``NoiseFloor``: 0.001 by default, 0 for the
  miss count);
* a regression or improvement of a mean or a rate gets a **paired test** over
  the cases both reports share (``ragsnap.scoring.significance``): the
  permutation ``p`` and the bootstrap interval of the mean difference;
* the ``p`` of every row one diff tested are **corrected as one family**
  (``SignificanceSettings.correction``: Holm by default, Bonferroni or none;
  the rule is in ``ragsnap.scoring.significance``). A row keeps both ``p`` and
  ``pAdjusted``, and is ``significant`` when the adjusted p is below alpha. With
  ``require`` set, a drop that is not significant (adjusted) is "changed", not
  a regression. Case-level regressions always fail.

**Causes.** Each row records ``movedCases``: how many cases' contributions to it
differ (a value that moved; a case added, removed, or moved between scopes).
``causes`` groups the rows that moved by that set of cases (``_causes``): one
group per set, worst status first. A category / language / split row is
*folded* under the overall row of its metric when that row moved with the same
status and the scope row's cases are among its cases (the same drop, seen in a
slice); a scope row that moved when the overall row did not, or with other
cases, is listed in its own group. So one case sliding strong -> medium is one
group: the overall rows it moved, under that case, and a count of the scope
rows that repeat them. Renderings read ``causes`` (``cause_lines``); the
``aggregates`` list keeps every row, and ``counts`` still counts rows.

Case-level changes, for every case present in both reports (``case_diff``, one case):

* pass state: pass -> fail is a regression, fail -> pass an improvement;
* hit level (strong > medium > weak > miss): down is a regression;
* first expected rank: moving down by more than the rank tolerance, or
  dropping out of the top K, is a regression; moving up an improvement;
* selected attempt, fallback reasons, evidence status, rerank top source:
  reported as changes; they fail the run only through the pass state, when
  the case states an expectation about them;
* a case none of these moved that still lost something named (a judged chunk
  fell, a span is no longer covered) is "changed", with one ``metrics`` change
  listing its graded metrics that moved: its losses are listed like any other's.

**What a case lost** (``lost``, on every regressed or changed case, ``case_lost``),
from the two reports' ``coverage`` (``ragsnap.scoring.report``), each entry a
``kind`` of ``LOST_KINDS``:

* ``keyword``, ``breadcrumb``, ``span``: covered in the baseline by the chunk
  ``before``, covered by nothing now (``after`` null);
* ``source``, ``docId``, ``chunk`` (a judged target): in the baseline's top K at
  rank ``before``, now below the cut (``after`` null) or at a lower rank ``after``;

listed keywords, breadcrumbs, sources, doc ids, chunks, spans, expectations.
* ``expectation``: a pipeline expectation (``EXPECTATION_REASONS``) that held in
  the baseline and fails now, ``before`` "held", ``after`` "failed"; its values are
  in the case's ``changes`` (``change`` names that field, when there is one).

A target the current case no longer expects is not lost. When one report is
private (``ragsnap.scoring.privacy``), the other's coverage is compared as its
privacy view, so the losses are named by their hashes. A baseline written
before reports recorded ``coverage`` yields expectation entries only (a note says
so once). ``lost_text`` is the one line every rendering shows: the first
``LOST_SHOWN`` losses, then "+N more".

A changed case carries what a reviewer needs beside it: the query, the current
failing reasons, and the top sources before and after. Cases only in the
current report are ``added``, only in the baseline ``removed``; neither fails
the run. The hit-level transition matrix counts every shared case. Only
regressions fail.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..io.jsonio import FLOAT_DIGITS
from ..models import HIT_LEVELS, hit_level_rank
from .aggregates import HIGHER_IS_BETTER, LOWER_IS_BETTER
from .attribution import STAGE_LABELS, cause_text
from .privacy import is_private, private_coverage
from .report import percent
from .significance import SignificanceSettings, adjust_p, paired_test

__all__ = [
    "CAUSE_IDS_SHOWN",
    "CHANGED",
    "DIFF_KIND",
    "DIFF_SCHEMA_VERSION",
    "EXPECTATION_REASONS",
    "IMPROVEMENT",
    "LOST_KINDS",
    "LOST_ORDER",
    "LOST_SHOWN",
    "REGRESSION",
    "UNCHANGED",
    "NoiseFloor",
    "Tolerances",
    "case_diff",
    "case_lost",
    "case_value",
    "cause_lines",
    "delta_text",
    "diff_reports",
    "level_status",
    "lost_text",
    "metric_status",
    "metric_value",
    "p_label",
    "row_label",
    "testable",
    "verdict",
]

DIFF_SCHEMA_VERSION = 1
DIFF_KIND = "ragsnap-diff-report"

REGRESSION, IMPROVEMENT, CHANGED, UNCHANGED = "regression", "improvement", "changed", "unchanged"
_SEVERITY = {REGRESSION: 3, IMPROVEMENT: 2, CHANGED: 1, UNCHANGED: 0}
#: Case fields that are reported when they change but never fail by themselves.
_NEUTRAL_FIELDS = ("selectedAttempt", "fallbackReasons", "evidenceStatus", "rerankTopSource")
_EPSILON = 1e-12
#: the ``kind`` of a ``lost`` entry
LOST_KINDS = ("source", "docId", "chunk", "keyword", "breadcrumb", "span", "expectation")
#: coverage key -> lost kind, in the order a case's losses are listed (the short
#: ones a reader recognises first; spans, long, last)
LOST_ORDER = (
    ("keywords", "keyword"),
    ("breadcrumbs", "breadcrumb"),
    ("sources", "source"),
    ("docIds", "docId"),
    ("chunks", "chunk"),
    ("spans", "span"),
)
_RANKED_KEYS = ("sources", "docIds", "chunks")
#: pipeline expectation -> the starts of its failing reason (full and private forms),
#: and the case change that shows its values
EXPECTATION_REASONS: Mapping[str, tuple[tuple[str, ...], str | None]] = {
    "selectedAttempt": (("selected attempt ",), "selectedAttempt"),
    "fallbackReasons": (("fallback reasons ",), "fallbackReasons"),
    "fallbackReason": (("fallback reason ", "expected fallback reason "), "fallbackReasons"),
    "evidenceStatus": (("evidence status ",), "evidenceStatus"),
    "contextSources": (("context pack lacks ",), None),
    "rerankTopSource": (("rerank top source ",), "rerankTopSource"),
}
#: losses shown in one line
LOST_SHOWN = 3
_NOT_RECORDED = (
    "the baseline report does not record coverage (written before ragsnap recorded it): "
    "lost sources, keywords, breadcrumbs and spans are not recorded in the baseline; "
    "re-accept the baseline to record them"
)


@dataclass(frozen=True, slots=True)
class Tolerances:
    """How much worse a value may get before it counts as a regression."""

    pass_rate: float = 0.0
    recall_at_k: float = 0.0
    strong_hit_rate: float = 0.0
    miss_count: int = 0
    first_expected_rank: int = 0
    metrics: float = 0.0

    def for_metric(self, metric: str) -> float:
        """The tolerance of a report metric: an aggregate in camelCase, or a graded
        metric (``ndcg@10``, ``contextRecall`` ...), which share ``metrics``."""
        field = _TOLERANCE_FIELDS.get(metric, "metrics")
        value: float = getattr(self, field)
        return value

    def to_json(self) -> dict[str, float]:
        """camelCase form for the diff report."""
        return {key: getattr(self, field) for key, field in _TOLERANCE_FIELDS.items()}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Tolerances:
        """Build from a validated ``tolerances`` mapping (camelCase keys)."""
        return cls(**{_TOLERANCE_FIELDS[k]: v for k, v in data.items()})


#: camelCase key (config, reports) -> Tolerances field.
_TOLERANCE_FIELDS = {
    "passRate": "pass_rate",
    "recallAtK": "recall_at_k",
    "strongHitRate": "strong_hit_rate",
    "missCount": "miss_count",
    "firstExpectedRank": "first_expected_rank",
    "metrics": "metrics",
}

#: the noise floor of every mean and rate unless ``diff.noiseFloor`` says otherwise
DEFAULT_NOISE_FLOOR = 0.001


@dataclass(frozen=True, slots=True)
class NoiseFloor:
    """Moves smaller than this are "changed", never a regression or an improvement.

    ``default`` covers every rate and graded mean; ``metrics`` overrides single
    metrics by name (``ndcg@10``, ``passRate`` ...). The miss count, a count of
    cases, has no floor unless named.
    """

    default: float = DEFAULT_NOISE_FLOOR
    metrics: Mapping[str, float] = field(default_factory=dict)

    def for_metric(self, metric: str) -> float:
        """The floor of one metric."""
        if metric in self.metrics:
            return self.metrics[metric]
        return 0.0 if metric == "missCount" else self.default

    def to_json(self) -> dict[str, float]:
        """The config's form: ``default`` and one key per overridden metric."""
        return {"default": self.default, **self.metrics}

    @classmethod
    def from_json(cls, data: Mapping[str, float]) -> NoiseFloor:
        """Build from a validated ``noiseFloor`` mapping."""
        rest = {k: v for k, v in data.items() if k != "default"}
        return cls(default=data.get("default", DEFAULT_NOISE_FLOOR), metrics=rest)


def _round(value: Any) -> Any:
    return round(value, FLOAT_DIGITS) if isinstance(value, float) else value


def metric_status(
    metric: str, before: Any, after: Any, tolerance: float, noise_floor: float = 0.0
) -> str:
    """regression / improvement / changed / unchanged of one aggregate or graded metric
    (a lower-is-better one counts the other way; coverage only ever "changes"; a move
    below ``noise_floor`` only "changes")."""
    if before is None or after is None or metric.startswith("coverage"):
        return UNCHANGED if before == after else CHANGED
    delta = after - before
    if delta == 0:
        return UNCHANGED
    if metric in LOWER_IS_BETTER:
        delta = -delta
    if abs(delta) < noise_floor - _EPSILON:
        return CHANGED
    if delta < -tolerance - _EPSILON:
        return REGRESSION
    return IMPROVEMENT if delta > _EPSILON else CHANGED


# --- paired tests: one value per case behind each aggregate ---------------------------


def case_value(case: Mapping[str, Any], metric: str) -> float | None:
    """The case's contribution to ``metric``'s mean or rate; None when it has none (a
    report case: ``passed``, ``noAnswer``, ``hitLevel``, ``fixture``, ``evidenceCount``,
    ``metrics``). The paired tests of ``ragsnap.trial.significance`` read it too."""
    if metric == "passRate":
        return float(case["passed"])
    if metric in ("recallAtK", "strongHitRate"):
        if case["noAnswer"] or case["hitLevel"] is None:
            return None
        wanted = ("strong",) if metric == "strongHitRate" else ("strong", "medium")
        return float(case["hitLevel"] in wanted)
    if metric == "noAnswerFalsePositiveRate":
        if not case["noAnswer"] or case["fixture"] != "present":
            return None
        return float(case["evidenceCount"] > 0)
    value = (case["metrics"] or {}).get(metric)
    return None if value is None else float(value)


def testable(metric: str) -> bool:
    """Whether ``metric``'s rows get a paired test (not a count, not judgment coverage)."""
    return metric != "missCount" and not metric.startswith("coverage")


class _PairedValues:
    """Per-case values of the cases both reports share, read once per metric and
    once per scope however many rows ask (NaN where a case has no value)."""

    def __init__(self, pairs: Sequence[tuple[Mapping[str, Any], Mapping[str, Any]]]) -> None:
        self.pairs = pairs
        self._metrics: dict[str, Any] = {}
        self._scopes: dict[str, Any] = {}
        self._fields: dict[str, Any] = {}

    def _columns(self, metric: str) -> Any:
        if metric not in self._metrics:
            import numpy as np

            nan = float("nan")
            self._metrics[metric] = np.array(
                [
                    [
                        nan if v is None else v
                        for v in (case_value(old, metric) for old, _ in self.pairs)
                    ],
                    [
                        nan if v is None else v
                        for v in (case_value(new, metric) for _, new in self.pairs)
                    ],
                ],
                dtype=np.float64,
            ).reshape(2, len(self.pairs))
        return self._metrics[metric]

    def _members(self, scope: str) -> Any:
        """The mask of the scope's cases (in the current report): one column of the
        scope's field per field (category, language, split), compared at once."""
        if scope not in self._scopes:
            import numpy as np

            if scope == "all":
                self._scopes[scope] = np.ones(len(self.pairs), dtype=bool)
            else:
                name, _, value = scope.partition("=")
                if name not in self._fields:
                    self._fields[name] = np.array(
                        [new[name] for _, new in self.pairs], dtype=object
                    )
                self._scopes[scope] = np.asarray(self._fields[name] == value, dtype=bool)
        return self._scopes[scope]

    def test(
        self, scope: str, metric: str, settings: SignificanceSettings
    ) -> dict[str, Any] | None:
        """The paired test of ``metric`` over the scope's cases that have it in both."""
        import numpy as np

        columns = self._columns(metric)
        keep = self._members(scope) & ~np.isnan(columns).any(axis=0)
        if not keep.any():
            return None
        result = paired_test(columns[0, keep], columns[1, keep], settings, f"{scope}\0{metric}")
        return {**result.to_json(), "significant": result.significant(settings.alpha)}


# --- aggregate rows -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Rules:
    tolerances: Tolerances
    noise_floor: NoiseFloor
    significance: SignificanceSettings | None
    paired: _PairedValues


def _aggregate_rows(
    scope: str, before: Mapping[str, Any], after: Mapping[str, Any], rules: _Rules
) -> Iterator[dict[str, Any]]:
    """The rows of one scope, each with its raw paired test (corrected, and ``require``
    applied, over the whole diff by ``_correct``)."""
    graded = [name for name in before["metrics"] if name in after["metrics"]]
    values = {
        **{m: (before[m], after[m]) for m in (*HIGHER_IS_BETTER, *LOWER_IS_BETTER)},
        **{m: (before["metrics"][m]["mean"], after["metrics"][m]["mean"]) for m in graded},
    }
    for metric, (raw_old, raw_new) in values.items():
        old, new = _round(raw_old), _round(raw_new)
        tolerance = rules.tolerances.for_metric(metric)
        floor = rules.noise_floor.for_metric(metric)
        status = metric_status(metric, old, new, tolerance, floor)
        test = None
        if (
            rules.significance is not None
            and status in (REGRESSION, IMPROVEMENT)
            and testable(metric)
        ):
            test = rules.paired.test(scope, metric, rules.significance)
        yield {
            "scope": scope,
            "metric": metric,
            "baseline": old,
            "current": new,
            "delta": None if old is None or new is None else _round(new - old),
            "tolerance": tolerance,
            "noiseFloor": floor,
            "significance": test,
            "status": status,
        }


def _correct(rows: Sequence[dict[str, Any]], settings: SignificanceSettings | None) -> None:
    """Adjust the p of every tested row as one family (``settings.correction``), mark
    ``significant`` by the adjusted p, and with ``require`` turn a drop that is not
    significant into "changed"."""
    if settings is None:
        return
    tested = [row["significance"] for row in rows if row["significance"] is not None]
    adjusted = adjust_p([test["p"] for test in tested], settings.correction)
    for test, p in zip(tested, adjusted, strict=True):
        test["pAdjusted"] = p
        test["significant"] = p < settings.alpha
    if settings.require:
        for row in rows:
            test = row["significance"]
            if row["status"] == REGRESSION and test is not None and not test["significant"]:
                row["status"] = CHANGED


# --- causes: the cases behind the rows that moved ---------------------------------------

_ABSENT = object()


def _row_value(case: Mapping[str, Any], metric: str) -> Any:
    """The case's contribution to an aggregate row of ``metric`` (None: none)."""
    if metric == "missCount":
        level = case["hitLevel"]
        return None if case["noAnswer"] or level is None else level == "miss"
    if metric.startswith("coverage"):
        return (case["metrics"] or {}).get(metric)
    return case_value(case, metric)


#: the fields of a case row that ``_row_value`` and ``_scopes`` read: a case whose rows
#: agree on all of them moved no aggregate row (most cases of a diff)
_ROW_FIELDS = (
    "passed",
    "noAnswer",
    "hitLevel",
    "fixture",
    "evidenceCount",
    "metrics",
    "category",
    "language",
    "split",
)


def _row_fields(case: Mapping[str, Any]) -> tuple[Any, ...]:
    return tuple([case.get(name, _ABSENT) for name in _ROW_FIELDS])


def _scopes(case: Mapping[str, Any]) -> tuple[str, ...]:
    return ("all", *(f"{name}={case[name]}" for name in ("category", "language", "split")))


def _moved_cases(
    old_cases: Mapping[str, Mapping[str, Any]],
    new_cases: Mapping[str, Mapping[str, Any]],
    metrics: Sequence[str],
) -> dict[tuple[str, str], list[str]]:
    """(scope, metric) -> the cases whose contribution to that row differs between the
    reports (a value that moved, or a case that joined or left the scope, was added or
    removed), in report order (current cases, then removed ones)."""
    ids = [*new_cases, *(i for i in old_cases if i not in new_cases)]
    moved: dict[tuple[str, str], list[str]] = {}
    for case_id in ids:
        old, new = old_cases.get(case_id), new_cases.get(case_id)
        if old is not None and new is not None and _row_fields(old) == _row_fields(new):
            continue  # equal fields, equal contributions to every row
        old_scopes = () if old is None else _scopes(old)
        new_scopes = () if new is None else _scopes(new)
        for metric in metrics:
            # rounded as the rows are: a report in memory against one read back
            before = None if old is None else _round(_row_value(old, metric))
            after = None if new is None else _round(_row_value(new, metric))
            if old_scopes == new_scopes and before == after:
                continue
            for scope in dict.fromkeys((*old_scopes, *new_scopes)):
                a = before if scope in old_scopes and before is not None else _ABSENT
                b = after if scope in new_scopes and after is not None else _ABSENT
                if a is not b and a != b:
                    moved.setdefault((scope, metric), []).append(case_id)
    return moved


def _causes(
    rows: Sequence[Mapping[str, Any]], moved: Mapping[tuple[str, str], list[str]]
) -> list[dict[str, Any]]:
    """The rows that moved, grouped by the set of cases that moved them.

    A category, language or split row is *folded* under the overall row of its
    metric when that row moved with the same status and the scope row's cases are
    among the overall row's (the same cases, seen in a slice): it is listed in
    ``folded``, not ``rows``. Any other row that moved (an overall row, a scope row
    that moved when the overall one did not, or the other way, or with other cases)
    is listed in ``rows`` of the group of exactly its cases. Groups come worst status
    first, then in the order of their first row.
    """
    changed = [row for row in rows if row["status"] != UNCHANGED]
    overall = {row["metric"]: row for row in changed if row["scope"] == "all"}
    groups: dict[tuple[str, ...], dict[str, Any]] = {}

    def group(cases: Sequence[str]) -> dict[str, Any]:
        key = tuple(cases)
        if key not in groups:
            groups[key] = {"cases": list(key), "rows": [], "folded": []}
        return groups[key]

    for row in changed:
        cases = moved.get((row["scope"], row["metric"]), [])
        ref = {"scope": row["scope"], "metric": row["metric"]}
        top = overall.get(row["metric"])
        if (
            row["scope"] != "all"
            and top is not None
            and top["status"] == row["status"]
            and set(cases) <= set(moved.get(("all", row["metric"]), []))
        ):
            group(moved.get(("all", row["metric"]), []))["folded"].append(ref)
        else:
            group(cases)["rows"].append((ref, row["status"]))
    out = []
    for entry in groups.values():
        statuses = [status for _, status in entry["rows"]]
        out.append(
            {
                "cases": entry["cases"],
                "status": _worst(statuses),
                "rows": [ref for ref, _ in entry["rows"]],
                "folded": entry["folded"],
            }
        )
    order = sorted(range(len(out)), key=lambda i: (-_SEVERITY[out[i]["status"]], i))
    return [out[i] for i in order]


# --- cases ----------------------------------------------------------------------------


def _rank_status(before: int | None, after: int | None, tolerance: int) -> str:
    if before == after:
        return UNCHANGED
    if after is None:
        return REGRESSION
    if before is None:
        return IMPROVEMENT
    if after > before + tolerance:
        return REGRESSION
    return IMPROVEMENT if after < before else CHANGED


def level_status(before: str | None, after: str | None) -> str:
    """A hit level's move: down is a regression, up an improvement."""
    if before == after:
        return UNCHANGED
    if before is None or after is None:
        return CHANGED
    return REGRESSION if hit_level_rank(after) < hit_level_rank(before) else IMPROVEMENT


def _case_changes(
    before: Mapping[str, Any], after: Mapping[str, Any], tol: Tolerances
) -> list[dict[str, Any]]:
    statuses = {
        "passed": (
            UNCHANGED
            if before["passed"] == after["passed"]
            else (IMPROVEMENT if after["passed"] else REGRESSION)
        ),
        "hitLevel": level_status(before["hitLevel"], after["hitLevel"]),
        "firstExpectedRank": _rank_status(
            before["firstExpectedRank"], after["firstExpectedRank"], tol.first_expected_rank
        ),
    }
    for name in _NEUTRAL_FIELDS:
        if name in before and name in after:  # a private report leaves them out
            statuses[name] = UNCHANGED if before[name] == after[name] else CHANGED
    return [
        {"field": name, "baseline": before[name], "current": after[name], "status": status}
        for name, status in statuses.items()
        if status != UNCHANGED
    ]


def _metric_changes(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The graded metrics of a case that moved, as one ``metrics`` change (status changed:
    the aggregate rows say whether they regressed), for a case that lost something named."""
    old, new = before.get("metrics") or {}, after.get("metrics") or {}
    moved = [m for m in sorted(set(old) & set(new)) if _round(old[m]) != _round(new[m])]

    def text(values: Mapping[str, Any]) -> str:
        return "; ".join(f"{m} {metric_value(m, values[m])}" for m in moved) or "-"

    return [{"field": "metrics", "baseline": text(old), "current": text(new), "status": CHANGED}]


def _expectations_failing(reasons: Sequence[str]) -> set[str]:
    failing = set()
    for name, (starts, _) in EXPECTATION_REASONS.items():
        for reason in reasons:
            # "fallback reasons ..." also starts with "fallback reason "
            if reason.startswith(starts) and not (
                name == "fallbackReason" and reason.startswith("fallback reasons ")
            ):
                failing.add(name)
    return failing


def _lost_covered(
    kind: str, old: Sequence[Mapping[str, Any]], new: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    held = {item["target"]: item["chunk"] for item in new}
    return [
        {"kind": kind, "target": item["target"], "before": item["chunk"], "after": None}
        for item in old
        if item["chunk"] is not None and item["target"] in held and held[item["target"]] is None
    ]


def _lost_ranked(
    kind: str, old: Sequence[Mapping[str, Any]], new: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    now = {item["target"]: item["rank"] for item in new}
    lost = []
    for item in old:
        was, target = item["rank"], item["target"]
        if was is not None and target in now and (now[target] is None or now[target] > was):
            lost.append({"kind": kind, "target": target, "before": was, "after": now[target]})
    return lost


def case_lost(
    before: Mapping[str, Any],
    after: Mapping[str, Any],
    changes: Sequence[Mapping[str, Any]],
    hash_before: bool = False,
    hash_after: bool = False,
) -> list[dict[str, Any]]:
    """What a case lost from ``before`` (baseline entry) to ``after`` (current entry);
    ``changes`` are the case's changes (module docstring). ``hash_before`` /
    ``hash_after``: compare that side's coverage as a private report holds it (the
    other report is private)."""
    lost: list[dict[str, Any]] = []
    old, new = before.get("coverage"), after.get("coverage")
    if old is not None and hash_before:
        old = private_coverage(old)
    if new is not None and hash_after:
        new = private_coverage(new)
    if old is not None and new is not None:
        for key, kind in LOST_ORDER:
            lost += (_lost_ranked if key in _RANKED_KEYS else _lost_covered)(
                kind, old.get(key, ()), new.get(key, ())
            )
    fields = {c["field"] for c in changes}
    was_failing = _expectations_failing(before["reasons"])
    for name in sorted(
        _expectations_failing(after["reasons"]) - was_failing, key=list(EXPECTATION_REASONS).index
    ):
        change = EXPECTATION_REASONS[name][1]
        lost.append(
            {
                "kind": "expectation",
                "target": name,
                "before": "held",
                "after": "failed",
                "change": change if change in fields else None,
            }
        )
    return lost


def _worst(statuses: Sequence[str]) -> str:
    return max(statuses, key=_SEVERITY.__getitem__, default=UNCHANGED)


def _case_row(
    case_id: str,
    status: str,
    changes: list[dict[str, Any]],
    before: Mapping[str, Any] | None,
    after: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """A changed case with what a reviewer reads beside it."""
    shown = after if after is not None else before
    assert shown is not None  # a case is in at least one report
    return {
        "id": case_id,
        "status": status,
        "query": shown.get("query"),  # none in a private report
        "category": shown["category"],
        "language": shown["language"],
        "changes": changes,
        "reasons": [] if after is None else list(after["reasons"]),
        "baselineReasons": [] if before is None else list(before["reasons"]),
        "topSources": {
            "baseline": None if before is None else before.get("topSources"),
            "current": None if after is None else after.get("topSources"),
        },
    }


def case_diff(
    before: Mapping[str, Any],
    after: Mapping[str, Any],
    tolerances: Tolerances,
    hash_before: bool = False,
    hash_after: bool = False,
) -> dict[str, Any] | None:
    """One case of the diff: its report entry ``before`` (baseline) against ``after``
    (current), with its ``changes`` and, when it regressed or changed, what it
    ``lost`` (``case_lost``, whose ``hash_before`` / ``hash_after`` these are); None
    when nothing changed. ``diff_reports`` lists one per shared case; ``pytest
    --ragsnap`` computes the one of a failing case."""
    changes = _case_changes(before, after, tolerances)
    lost = None
    if not changes and before.get("coverage") != after.get("coverage"):
        # a case that kept its level but lost a judged chunk or a span: its metrics
        lost = case_lost(before, after, (), hash_before, hash_after)
        changes = _metric_changes(before, after) if lost else []
    if not changes:
        return None
    status = _worst([c["status"] for c in changes])
    row = _case_row(after["id"], status, changes, before, after)
    if status in (REGRESSION, CHANGED):
        row["lost"] = (
            lost if lost is not None else case_lost(before, after, changes, hash_before, hash_after)
        )
    return row


def _transitions(
    pairs: Sequence[tuple[Mapping[str, Any], Mapping[str, Any]]],
) -> dict[str, dict[str, int]]:
    """baseline hit level -> current hit level -> cases (answerable cases in both)."""
    matrix: dict[str, dict[str, int]] = {old: dict.fromkeys(HIT_LEVELS, 0) for old in HIT_LEVELS}
    for old, new in pairs:
        if old["hitLevel"] is not None and new["hitLevel"] is not None:
            matrix[old["hitLevel"]][new["hitLevel"]] += 1
    return matrix


def diff_reports(
    baseline: Mapping[str, Any],
    current: Mapping[str, Any],
    tolerances: Tolerances,
    baseline_label: str,
    *,
    noise_floor: NoiseFloor | None = None,
    significance: SignificanceSettings | None = None,
) -> dict[str, Any]:
    """Diff two score reports; the result is the diff report's JSON form.

    Without ``noise_floor`` every move counts (a floor of 0); without
    ``significance`` no paired tests run.
    """
    old_cases = {c["id"]: c for c in baseline["cases"]}
    new_cases = {c["id"]: c for c in current["cases"]}
    pairs = [(old_cases[i], case) for i, case in new_cases.items() if i in old_cases]
    rules = _Rules(
        tolerances, noise_floor or NoiseFloor(default=0.0), significance, _PairedValues(pairs)
    )

    aggregates = list(_aggregate_rows("all", baseline["summary"], current["summary"], rules))
    for name in ("category", "language", "split"):
        old_groups, new_groups = baseline["groups"][name], current["groups"][name]
        for value in sorted(set(old_groups) & set(new_groups)):
            aggregates += _aggregate_rows(
                f"{name}={value}", old_groups[value], new_groups[value], rules
            )
    _correct(aggregates, significance)
    moved = _moved_cases(old_cases, new_cases, list(dict.fromkeys(r["metric"] for r in aggregates)))
    for row in aggregates:
        row["movedCases"] = len(moved.get((row["scope"], row["metric"]), ()))

    # a private report's coverage is hashed: the other side's is compared hashed too
    private = is_private(baseline), is_private(current)
    hashing = (private[1] and not private[0], private[0] and not private[1])
    cases = []
    for case_id, entry in new_cases.items():
        old = old_cases.get(case_id)
        if old is None:
            cases.append(_case_row(case_id, "added", [], None, entry))
            continue
        changed = case_diff(old, entry, tolerances, *hashing)
        if changed is not None:
            cases.append(changed)
    cases += [
        _case_row(case_id, "removed", [], old, None)
        for case_id, old in old_cases.items()
        if case_id not in new_cases
    ]

    notes = []
    if baseline["inputs"]["casesSha256"] != current["inputs"]["casesSha256"]:
        notes.append("the golden cases changed since the baseline was written")
    if baseline["scoringVersion"] != current["scoringVersion"]:
        notes.append(
            f"scoring rules changed ({baseline['scoringVersion']} -> "
            f"{current['scoringVersion']}); some changes may come from the rules"
        )
    unrecorded = {c["id"] for c in baseline["cases"] if "coverage" not in c and not c["noAnswer"]}
    if any("lost" in case and case["id"] in unrecorded for case in cases):
        notes.append(_NOT_RECORDED)
    case_statuses = [c["status"] for c in cases]
    metric_statuses = [row["status"] for row in aggregates]
    counts = {
        "regressedCases": case_statuses.count(REGRESSION),
        "improvedCases": case_statuses.count(IMPROVEMENT),
        "changedCases": case_statuses.count(CHANGED),
        "addedCases": case_statuses.count("added"),
        "removedCases": case_statuses.count("removed"),
        "aggregateRegressions": metric_statuses.count(REGRESSION),
        "aggregateImprovements": metric_statuses.count(IMPROVEMENT),
        "aggregateChanges": metric_statuses.count(CHANGED),
    }
    return {
        "schemaVersion": DIFF_SCHEMA_VERSION,
        "kind": DIFF_KIND,
        "baseline": baseline_label,
        "baselineInputs": dict(baseline["inputs"]),
        "currentInputs": dict(current["inputs"]),
        "tolerances": tolerances.to_json(),
        "noiseFloor": rules.noise_floor.to_json(),
        "significance": None if significance is None else significance.to_json(),
        "regressed": REGRESSION in case_statuses or REGRESSION in metric_statuses,
        "counts": counts,
        "aggregates": aggregates,
        "causes": _causes(aggregates, moved),
        "hitLevelTransitions": _transitions(pairs),
        "cases": cases,
        "notes": notes,
    }


# --- text -----------------------------------------------------------------------------


def metric_value(metric: str, value: Any) -> str:
    """A rate as a percentage, a count as it is, a graded metric with three
    decimals, ``None`` as ``n/a``."""
    if value is None:
        return "n/a"
    if metric == "missCount":
        return str(value)
    if metric in HIGHER_IS_BETTER or metric in LOWER_IS_BETTER:
        return percent(value)
    return f"{value:.3f}"


def delta_text(metric: str, delta: Any) -> str:
    """A signed change: percentage points for rates, three decimals for means (four
    when smaller than 0.001, so a move is never shown as +0.000), a count as it is."""
    if delta is None:
        return "n/a"
    if delta == 0:
        return "0"
    if metric == "missCount":
        return f"{delta:+d}"
    if metric in HIGHER_IS_BETTER or metric in LOWER_IS_BETTER:
        return f"{delta * 100:+.1f} pp" if abs(delta) >= 0.0005 else f"{delta * 100:+.2f} pp"
    return f"{delta:+.3f}" if abs(delta) >= 0.0005 else f"{delta:+.4f}"


#: how the correction's adjusted p is labelled in every rendering
_P_LABELS = {"holm": "Holm p", "bonferroni": "Bonferroni p", "none": "p"}
#: how many case ids a cause names before it counts the rest
CAUSE_IDS_SHOWN = 5


def p_label(diff: Mapping[str, Any]) -> str:
    """``Holm p``, ``Bonferroni p`` or ``p``: the name of the p-value renderings show."""
    sig = diff["significance"]
    return "p" if sig is None else _P_LABELS[sig.get("correction", "none")]


def _cases_text(n: int) -> str:
    return f"{n} case" + ("" if n == 1 else "s")


def row_label(row: Mapping[str, Any]) -> str:
    """A row's status as a reviewer reads it: a drop beyond its tolerance whose
    (adjusted) test is not significant says so, with how many cases moved it."""
    test = row["significance"]
    demoted = row["status"] == CHANGED and test is not None  # --require-significance
    if (row["status"] == REGRESSION or demoted) and test is not None and not test["significant"]:
        return f"beyond tolerance, not significant ({_cases_text(row['movedCases'])})"
    return str(row["status"])


def _row_text(row: Mapping[str, Any], p_name: str | None) -> str:
    """``[scope ]metric delta``, with the adjusted p when ``p_name`` is given."""
    scope = "" if row["scope"] == "all" else f"{row['scope']} "
    test = row["significance"]
    p = "" if p_name is None or test is None else f" ({p_name} {test['pAdjusted']:.3f})"
    return f"{scope}{row['metric']} {delta_text(row['metric'], row['delta'])}{p}"


def cause_lines(
    diff: Mapping[str, Any],
    cause: Mapping[str, Any],
    *,
    arrow: str = "<-",
    quote: str = "",
    statuses: Sequence[str] | None = None,
) -> list[str]:
    """One line per status in a cause: its rows' deltas, the cases behind them, the
    status and the adjusted p; each line counts the folded scope rows that repeat
    its overall rows.

    ``statuses`` keeps only rows of those statuses (None: all); no line when none
    is left. ``quote`` wraps each case id (a backtick for Markdown)."""
    by_key = {(r["scope"], r["metric"]): r for r in diff["aggregates"]}
    rows = [by_key[(ref["scope"], ref["metric"])] for ref in cause["rows"]]
    if statuses is not None:
        rows = [r for r in rows if r["status"] in statuses]
    if not rows:
        return []
    ids = cause["cases"]
    named = ", ".join(f"{quote}{i}{quote}" for i in ids[:CAUSE_IDS_SHOWN])
    more = f" … (+{len(ids) - CAUSE_IDS_SHOWN})" if len(ids) > CAUSE_IDS_SHOWN else ""
    why = f"{_cases_text(len(ids))}: {named}{more}" if ids else "no case's value moved"
    label_of = {id(r): row_label(r) for r in rows}
    folded = [by_key[(ref["scope"], ref["metric"])] for ref in cause["folded"]]
    # regressions, then drops beyond tolerance that are not significant, then the rest
    order = {REGRESSION: 0, IMPROVEMENT: 2, CHANGED: 3}
    labels = sorted(dict.fromkeys(label_of.values()), key=lambda label: order.get(label, 1))
    name = p_label(diff)
    lines = []
    for label in labels:
        mine = [r for r in rows if label_of[id(r)] == label]
        ps = {r["significance"]["pAdjusted"] for r in mine if r["significance"] is not None}
        one_p = len(ps) == 1 and all(r["significance"] is not None for r in mine)
        shown = ", ".join(_row_text(r, None if one_p else name) for r in mine)
        tail = f", {name} {ps.pop():.3f}" if one_p else ""
        # a folded row is counted on the line of the overall row it repeats
        here = {id(r) for r in mine}
        alike = sum(1 for r in folded if id(by_key[("all", r["metric"])]) in here)
        tail += f"; +{alike} category/language/split row(s) alike" if alike else ""
        lines.append(f"{shown} {arrow} {why}: {label}{tail}")
    return lines


def _loss_text(entry: Mapping[str, Any], cause: Mapping[str, Any] | None) -> str:
    kind, target = entry["kind"], entry["target"]
    if kind == "expectation":
        what = f"lost expectation {target}"
        why = "held -> failed"
    elif kind in ("keyword", "breadcrumb", "span"):
        shown = target if len(target) <= 40 else target[:39] + "…"
        what, why = f"lost {kind} '{shown}'", f"was in {entry['before']}"
    else:
        after = "below the cut" if entry["after"] is None else f"rank {entry['after']}"
        what, why = f"lost {kind} {target}", f"rank {entry['before']} -> {after}"
    if cause is not None:
        stage = cause["stage"]
        label = "no stage" if stage is None else STAGE_LABELS[stage]
        said = f"{label}: {cause_text(cause)}"
        # "was in X" says nothing more when the cause names X first
        why = said if said.split(": ", 1)[1].startswith(f"{cause['target']} ") else f"{why}; {said}"
    return f"{what} ({why})"


def lost_text(case: Mapping[str, Any], shown: int = LOST_SHOWN) -> str | None:
    """``lost keyword '14 days' (was in log-retention#1; corpus: log-retention#1 text
    changed: removed '14 days')``: a diff case's first ``shown`` losses, each with the
    stage it was lost at when the case has an ``attribution``
    (``ragsnap.scoring.attribution``; a cause is named once, at its first loss), then
    "+N more"; None when it lost nothing named."""
    lost = case.get("lost") or []
    if not lost:
        return None
    first = {c["losses"][0]: c for c in case.get("attribution") or ()}
    text = "; ".join(_loss_text(e, first.get(i)) for i, e in enumerate(lost[:shown]))
    return text + (f" +{len(lost) - shown} more" if len(lost) > shown else "")


def verdict(diff: Mapping[str, Any]) -> str:
    """One sentence: regressions first, then everything else that moved."""
    counts = diff["counts"]
    head = "Regressed" if diff["regressed"] else "No regressions"
    causes = sum(1 for c in diff.get("causes", ()) if c["status"] == REGRESSION)
    return (
        f"{head} against {diff['baseline']}: {counts['regressedCases']} case(s) regressed, "
        f"{counts['improvedCases']} improved, {counts['changedCases']} changed, "
        f"{counts['addedCases']} added, {counts['removedCases']} removed; "
        f"{counts['aggregateRegressions']} aggregate metric regression(s)"
        + (f" from {causes} cause(s)" if counts["aggregateRegressions"] else "")
        + f", {counts['aggregateImprovements']} improvement(s)"
    )

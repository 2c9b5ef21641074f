"""Build the score report (a JSON-ready dict) and render it as Markdown.

Pure functions. The JSON report is the contract (``schemas/report.schema.json``)
that the baseline diff reads back; the Markdown is rendered from that same
dict, so the two never disagree. Summaries come first, details after.

``outcome`` (the report's ``outcome`` object) counts the cases by
``hits.case_outcome`` under the ``knownFailures`` mode the run used, and how many
of them fail the run (``hits.fails_run``); ``outcome_text`` is its one line
("29 cases: 18 passed, 11 expected failures (knownFailure), 0 failed"), the first
line of the terminal summary and the Markdown report's headline alike. A report
written before the field existed is read with the default mode.

A case's ``coverage`` (``hits.Coverage``; absent for a no-answer case and in reports
written before it existed) records, per expected target, where the top K covered
it: ``sources``, ``docIds`` and ``chunks`` (the judged targets) as ``{"target",
"rank"}`` (``rank`` null: not in the top K); ``keywords``, ``breadcrumbs`` and
``spans`` as ``{"target", "chunk"}`` (the chunk id of the first top-K block that
covers it, null: not covered). The baseline diff reads it to name what a case lost.

**Expectations not checked.** A case's ``notApplicable`` lists the expectations
its fixture cannot show (``hits.EXPECTATION_PARTS``: ``{"expectation":
"rerankTopSource", "missing": "rerankTrace"}``) and ``skippedExpectations`` the ones
``scoring.skip`` turned off; each is written only when not empty, so the reports of
fixtures with every trace keep their bytes. A fixture without a retrieval trace has
``fallbackReasons`` and ``evidenceStatus`` null, one without a context pack
``contextSources`` null. The report's ``notApplicable`` (present when some case has
any) counts the cases that have any and, per expectation, the cases; ``unchecked_lines``
says both kinds in one line each, for the Markdown report, the terminal summary and
the other formats.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from ..io.jsonio import FloatsUnder, FrozenRow
from ..io.markdown import markdown_table
from ..models import REPORT_KIND, REPORT_SCHEMA_VERSION
from .aggregates import GROUP_KEYS, aggregate, group
from .hits import (
    DEFAULT_KNOWN_FAILURES,
    EXPECTATION_PARTS,
    EXPECTATIONS,
    CaseResult,
    Coverage,
    case_outcome,
    fails_run,
    not_applicable_text,
)

__all__ = [
    "REPORT_KIND",
    "REPORT_SCHEMA_VERSION",
    "SCORING_VERSION",
    "build_report",
    "case_entry",
    "coverage_entry",
    "label_check_line",
    "not_applicable_summary",
    "outcome",
    "outcome_text",
    "percent",
    "provenance_lines",
    "render_markdown",
    "report_outcome",
    "unchecked_lines",
    "unchecked_text",
]

#: The Markdown report lists every case up to this many (the JSON report always does).
ALL_CASES_LISTED = 1000

#: Bumped whenever a scoring rule changes meaning; recorded in every report
#: (2: overlapping answer spans unioned in context precision and recall).
SCORING_VERSION = "hit-levels/2"


def coverage_entry(coverage: Coverage) -> dict[str, list[dict[str, Any]]]:
    """A case's ``coverage`` object (see the module docstring)."""
    ranked = {"sources": coverage.sources, "docIds": coverage.doc_ids, "chunks": coverage.chunks}
    covered = {
        "keywords": coverage.keywords,
        "breadcrumbs": coverage.breadcrumbs,
        "spans": coverage.spans,
    }
    return {
        **{key: [{"target": t, "rank": r} for t, r in pairs] for key, pairs in ranked.items()},
        **{key: [{"target": t, "chunk": c} for t, c in pairs] for key, pairs in covered.items()},
    }


#: the keys of a case row that hold floats (``case_entry``): the writer rounds only these
CASE_FLOAT_KEYS = ("metrics",)


def case_entry(result: CaseResult) -> FloatsUnder:
    """One case's row of the JSON report: a ``FloatsUnder`` object, its only floats the
    graded ``metrics`` (the rest are strings, integers, booleans and lists of them)."""
    return FloatsUnder(_case_fields(result), CASE_FLOAT_KEYS)


def _case_fields(result: CaseResult) -> dict[str, Any]:
    case = result.case
    return {
        "id": case.id,
        "query": case.query,
        "category": case.category,
        "language": case.language,
        "split": case.split,
        "kbScope": case.kb_scope,
        "topK": case.top_k,
        "noAnswer": case.no_answer,
        "fixture": "present" if result.fixture_present else "missing",
        "passed": result.passed,
        "knownFailure": case.known_failure,
        "reasons": list(result.reasons),
        "hitLevel": result.hit_level,
        "minHitLevel": None if case.no_answer else case.min_hit_level,
        "firstExpectedRank": result.first_expected_rank,
        "evidenceCount": result.evidence_count,
        "matchedSources": list(result.matched_sources),
        "topSources": list(result.top_sources),
        "breadcrumbsCovered": result.breadcrumbs_covered,
        "breadcrumbsExpected": len(case.expected_breadcrumbs),
        "keywordsCovered": result.keywords_covered,
        "keywordsExpected": len(case.expected_keywords),
        "selectedAttempt": result.selected_attempt,
        "fallbackReasons": _listed(result.fallback_reasons),
        "evidenceStatus": result.evidence_status,
        "rerankTopSource": result.rerank_top_source,
        "contextSources": _listed(result.context_sources),
        "metrics": None if result.metrics is None else dict(result.metrics),
        # only when ``scoring.skip`` skipped one: reports without skips keep their bytes
        **(
            {"skippedExpectations": list(result.skipped_expectations)}
            if result.skipped_expectations
            else {}
        ),
        # only when the fixture lacks a part an expectation needs (likewise)
        **(
            {
                "notApplicable": [
                    {"expectation": name, "missing": part} for name, part in result.not_applicable
                ]
            }
            if result.not_applicable
            else {}
        ),
        **({} if result.coverage is None else {"coverage": coverage_entry(result.coverage)}),
    }


#: the one empty list of every ``FrozenRow`` case row (reasons, sources, coverage kinds)
_EMPTY: list[Any] = []


def _frozen_entry(result: CaseResult) -> FrozenRow:
    """``case_entry(result)`` as a ``FrozenRow``, its empty lists (top level and
    coverage kinds) one shared list: equal, written the same, read only."""
    row = case_entry(result)
    for key, value in row.items():
        if type(value) is list and not value:
            row[key] = _EMPTY
    coverage = row.get("coverage")
    if type(coverage) is dict:
        for key, items in coverage.items():
            if type(items) is list and not items:
                coverage[key] = _EMPTY
    return FrozenRow.of(row)


def _listed(values: Sequence[str] | None) -> list[str] | None:
    return None if values is None else list(values)


def not_applicable_summary(cases: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The report's ``notApplicable``: how many ``cases`` have an expectation their
    fixture cannot show, and per expectation how many; None when none has."""
    having = [c["notApplicable"] for c in cases if c.get("notApplicable")]
    if not having:
        return None
    counts = Counter(entry["expectation"] for entries in having for entry in entries)
    return {"cases": len(having), "expectations": dict(counts)}


def _per_expectation(counts: Mapping[str, int], parts: bool) -> str:
    return ", ".join(
        f"{name} in {counts[name]} case(s)" + (f" (no {EXPECTATION_PARTS[name]})" if parts else "")
        for name in EXPECTATIONS
        if counts.get(name)
    )


def unchecked_lines(report: Mapping[str, Any]) -> dict[str, str]:
    """The expectations the cases set that were not checked, one line per kind (the
    case field that lists them -> the line; empty when every expectation was
    checked): ``notApplicable``: ``Not applicable in 2 case(s) (the fixture lacks
    what they read, neither passed nor failed): rerankTopSource in 2 case(s) (no
    rerankTrace)``; ``skippedExpectations``: ``Not checked (scoring.skip):
    contextSources in 1 case(s)``."""
    cases = report["cases"]
    lines = {}
    absent = Counter(e["expectation"] for c in cases for e in c.get("notApplicable", ()))
    if absent:
        having = sum(bool(c.get("notApplicable")) for c in cases)
        lines["notApplicable"] = (
            f"Not applicable in {having} case(s) (the fixture lacks what they read, neither "
            f"passed nor failed): {_per_expectation(absent, True)}"
        )
    skipped = Counter(name for c in cases for name in c.get("skippedExpectations", ()))
    if skipped:
        lines["skippedExpectations"] = (
            f"Not checked (scoring.skip): {_per_expectation(skipped, False)}"
        )
    return lines


def unchecked_text(case: Mapping[str, Any]) -> str | None:
    """One case's expectations that were not checked: ``rerankTopSource not applicable
    (fixture has no rerankTrace); contextSources skipped (scoring.skip)``; None: none."""
    parts = [
        not_applicable_text(e["expectation"], e["missing"]) for e in case.get("notApplicable", ())
    ]
    parts += [f"{name} skipped (scoring.skip)" for name in case.get("skippedExpectations", ())]
    return "; ".join(parts) or None


def outcome(
    cases: Sequence[Mapping[str, Any]], mode: str = DEFAULT_KNOWN_FAILURES
) -> dict[str, Any]:
    """The ``outcome`` of report cases under ``knownFailures: mode`` (module docstring)."""
    counts = {"passed": 0, "now passes": 0, "expected failure": 0, "failed": 0}
    failing = 0
    for case in cases:
        kind = case_outcome(case["passed"], case.get("knownFailure"))
        counts[kind] += 1
        failing += fails_run(kind, mode)
    return {
        "knownFailures": mode,
        "passed": counts["passed"],
        "nowPassing": counts["now passes"],
        "expectedFailures": counts["expected failure"],
        "failed": counts["failed"],
        "casesFailingRun": failing,
    }


def report_outcome(report: Mapping[str, Any]) -> Mapping[str, Any]:
    """The report's ``outcome``, or (an older report) its cases' under the default mode."""
    found: Mapping[str, Any] | None = report.get("outcome")
    return found if found is not None else outcome(report["cases"])


def _plural(count: int, one: str, many: str) -> str:
    return f"{count} {one if count == 1 else many}"


def outcome_text(report: Mapping[str, Any]) -> str:
    """``29 cases: 18 passed, 11 expected failures (knownFailure), 0 failed``: what
    passed, what is expected to fail and what failed, as pytest's ``18 passed, 11
    xfailed`` says it; a known failure that now passes is named, and so is the mode
    when it makes known failures fail the run."""
    o = report_outcome(report)
    mode = o["knownFailures"]
    parts = [f"{o['passed']} passed"]
    if o["nowPassing"]:
        parts.append(
            _plural(o["nowPassing"], "known failure now passes", "known failures now pass")
            + (" (failing the run: knownFailures: strict)" if mode == "strict" else "")
        )
    expected = o["expectedFailures"]
    if mode == "fail":
        parts.append(
            f"{o['failed'] + expected} failed"
            + (f" ({expected} marked knownFailure; knownFailures: fail)" if expected else "")
        )
    else:
        if expected:
            parts.append(
                _plural(expected, "expected failure", "expected failures") + " (knownFailure)"
            )
        parts.append(f"{o['failed']} failed")
    return f"{report['summary']['cases']} cases: " + ", ".join(parts)


def build_report(
    results: Sequence[CaseResult],
    orphaned_fixtures: Sequence[str],
    inputs: Mapping[str, str],
    known_failures: str = DEFAULT_KNOWN_FAILURES,
    *,
    frozen: bool = False,
) -> dict[str, Any]:
    """Assemble the JSON score report from scored cases; ``known_failures`` is the
    ``knownFailures`` mode its ``outcome`` counts with. With ``frozen`` each case row is
    a ``FrozenRow`` (read-only, 40 % of a row dict's memory; read and written as
    the row): for a report only read until it is written (``ragsnap score``)."""
    cases: list[Mapping[str, Any]] = (
        [_frozen_entry(r) for r in results] if frozen else [case_entry(r) for r in results]
    )
    return {
        "schemaVersion": REPORT_SCHEMA_VERSION,
        "kind": REPORT_KIND,
        "scoringVersion": SCORING_VERSION,
        "inputs": dict(inputs),
        "summary": aggregate(results).to_json(),
        "groups": {
            name: {value: agg.to_json() for value, agg in group(results, key).items()}
            for name, key in GROUP_KEYS.items()
        },
        "cases": cases,
        "orphanedFixtures": sorted(orphaned_fixtures),
        "outcome": outcome(cases, known_failures),
        **({} if (absent := not_applicable_summary(cases)) is None else {"notApplicable": absent}),
    }


def percent(value: float | None) -> str:
    """``0.9166`` -> ``91.7%``; ``None`` -> ``n/a``."""
    return "n/a" if value is None else f"{value * 100:.1f}%"


def _aggregate_row(name: str, agg: Mapping[str, Any]) -> list[Any]:
    return [
        name,
        agg["cases"],
        agg["passed"],
        percent(agg["passRate"]),
        percent(agg["recallAtK"]),
        percent(agg["strongHitRate"]),
        agg["missCount"],
        percent(agg["noAnswerFalsePositiveRate"]),
    ]


_AGG_HEADERS = (
    "",
    "cases",
    "passed",
    "pass rate",
    "Recall@K",
    "strong",
    "misses",
    "no-answer FP",
)


def _metrics_section(report: Mapping[str, Any]) -> list[str]:
    names = list(report["summary"]["metrics"])
    if not names:
        return []
    scopes = [("all cases", report["summary"])] + [
        (f"{group}={value}", agg)
        for group, values in report["groups"].items()
        for value, agg in values.items()
    ]
    rows = []
    for scope, agg in scopes:
        metrics = agg["metrics"]
        judged = max((m["cases"] for m in metrics.values()), default=0)
        cells = [
            "n/a"
            if name not in metrics or metrics[name]["mean"] is None
            else f"{metrics[name]['mean']:.3f}"
            for name in names
        ]
        rows.append([scope, judged, *cells])
    return [
        "",
        "## Graded relevance",
        "",
        "Macro averages over judged answerable cases (trec_eval semantics; context precision "
        "and recall over exact answer spans).",
        "",
        markdown_table(["scope", "judged", *names], rows),
    ]


def provenance_lines(report: Mapping[str, Any], limit: int = 10) -> list[str]:
    """Markdown lines for the fixtures' provenance: what makes them stale (each fails
    the run) and what could not be checked; none when the check found nothing."""
    provenance = report.get("provenance")
    if provenance is None:
        return []
    if "staleCauses" in provenance:  # a private report keeps the counts
        stale, notes = provenance["staleCauses"], provenance["notes"]
        return [f"**Stale fixtures: {stale} cause(s)**; {notes} note(s)."] if stale else []
    lines: list[str] = []
    causes = provenance["stale"]
    if causes:
        lines += [
            f"**Stale fixtures**: this check fails until they are re-captured; "
            f"{provenance['fix']}.",
            "",
        ]
        lines += [f"- {cause}" for cause in causes[:limit]]
        if len(causes) > limit:
            lines.append(f"- … and {len(causes) - limit} more")
    notes = provenance["notes"][:limit]
    if notes:
        lines += ["", *(f"> note: {note}" for note in notes)]
    return lines


def label_check_line(label_check: Any) -> str | None:
    """The Markdown line of a report's ``labelCheck`` (score and trial reports) when
    its labels were not all checked; None when they were, or the report predates it."""
    if not isinstance(label_check, Mapping):
        return None
    status = label_check.get("status")
    if status == "skipped":
        return (
            "**Labels not checked** (`--no-label-check`): the label checks of "
            "`ragsnap check` did not run before scoring."
        )
    if status == "partial":
        return (
            "**Labels checked in part**: no seed corpus, so targets and spans were not "
            "checked (secrets, paths and no-answer coverage were)."
        )
    return None


def render_markdown(report: Mapping[str, Any]) -> str:
    """Render a score report dict as Markdown."""
    summary = report["summary"]
    levels = summary["hitLevels"]
    private = report.get("privacy") is True
    mode = report_outcome(report)["knownFailures"]
    stale = provenance_lines(report)
    lines = [
        "# ragsnap retrieval report",
        "",
        f"**{outcome_text(report)}** "
        f"(pass rate {percent(summary['passRate'])}); Recall@K {percent(summary['recallAtK'])}, "
        f"strong hit rate {percent(summary['strongHitRate'])}, "
        f"{summary['missCount']} miss(es).",
        "",
        f"Hit levels: {levels['strong']} strong, {levels['medium']} medium, "
        f"{levels['weak']} weak, {levels['miss']} miss; "
        f"{summary['noAnswer']} no-answer case(s), "
        f"{summary['noAnswerFalsePositives']} returned evidence.",
        "",
        *([*stale, ""] if stale else []),
        *([labels, ""] if (labels := label_check_line(report.get("labelCheck"))) else []),
        "## Aggregates",
        "",
        markdown_table(_AGG_HEADERS, [_aggregate_row("all cases", summary)]),
    ]
    for name, groups in report["groups"].items():
        lines += [
            "",
            f"### By {name}",
            "",
            markdown_table(
                (name, *_AGG_HEADERS[1:]), [_aggregate_row(k, v) for k, v in groups.items()]
            ),
        ]
    lines += _metrics_section(report)
    fixed = [c["id"] for c in report["cases"] if c["passed"] and c.get("knownFailure")]
    if fixed:
        lines += [
            "",
            f"## Known failures that now pass ({len(fixed)})",
            "",
            (
                "These fail the run (`knownFailures: strict`): "
                if mode == "strict"
                else "These pass although marked `knownFailure`: "
            )
            + "remove `knownFailure` from them so a new failure counts again:",
            "",
            *[f"- `{case_id}`" for case_id in fixed],
        ]
    failing = [c for c in report["cases"] if not c["passed"] and not c.get("knownFailure")]
    lines += ["", f"## Failing cases ({len(failing)})", ""]
    if failing:
        lines.append(
            markdown_table(
                ("case", "hit level", "reasons"),
                [[c["id"], c["hitLevel"], "; ".join(c["reasons"])] for c in failing],
            )
        )
    else:
        lines.append("None.")
    known = [c for c in report["cases"] if not c["passed"] and c.get("knownFailure")]
    if known:
        lines += [
            "",
            f"## Known failures ({len(known)})",
            "",
            "These cases fail as their `knownFailure` says; "
            + (
                "with `knownFailures: fail` they fail the run."
                if mode == "fail"
                else "they are expected failures and do not fail the run."
            ),
            "",
            markdown_table(
                ("case", "hit level", "reasons", "known failure")[: 3 if private else 4],
                [
                    [c["id"], c["hitLevel"], "; ".join(c["reasons"]), c["knownFailure"]][
                        : 3 if private else 4
                    ]
                    for c in known
                ],
            ),
        ]
    cases = report["cases"]
    lines += _unchecked_section(report)
    if len(cases) <= ALL_CASES_LISTED:
        lines += ["", "## All cases", "", _all_cases_table(cases, private)]
    else:  # a table no one reads, and most of the run's time: the JSON and HTML hold them
        lines += [
            "",
            "## All cases",
            "",
            f"{len(cases):,} cases, more than this report lists one by one (at most "
            f"{ALL_CASES_LISTED:,}): the failing ones are above, every case is in the JSON "
            "report, and `--html-report FILE` writes a page that filters and pages them.",
        ]
    orphans = report["orphanedFixtures"]
    if orphans:
        lines += [
            "",
            f"## Orphaned fixtures ({len(orphans)})",
            "",
            "These fixtures have no golden case; delete them or add the cases:",
            "",
            *[f"- `{name}`" for name in orphans],
        ]
    inputs = report["inputs"]
    lines += ["", "---", ""]
    if private:
        lines.append(
            "Privacy view: ids, hashes and measurements only. "
            + ", ".join(f"{name} `{value[:12]}`" for name, value in sorted(inputs.items()))
            + f", scoring `{report['scoringVersion']}`."
        )
    else:
        lines.append(
            f"Cases `{inputs['cases']}` (sha256 `{inputs['casesSha256'][:12]}`), "
            f"fixtures `{inputs['fixtures']}` (sha256 `{inputs['fixturesSha256'][:12]}`), "
            f"scoring `{report['scoringVersion']}`."
        )
    return "\n".join(lines) + "\n"


def _unchecked_section(report: Mapping[str, Any]) -> list[str]:
    """ "Expectations not checked": not applicable (the fixture lacks the part they
    read) and skipped (``scoring.skip``), counted, then case by case; none when every
    expectation was checked."""
    counts = unchecked_lines(report)
    if not counts:
        return []
    rows = [[c["id"], text] for c in report["cases"] if (text := unchecked_text(c)) is not None]
    lines = [
        "",
        f"## Expectations not checked ({len(rows)} case(s))",
        "",
        "Not applicable: the case expects a part of the lookupResult its fixture does not "
        "record, so the expectation is neither passed nor failed. Skipped: `scoring.skip` in "
        "ragsnap.yaml turns it off.",
        "",
        *(f"- {line}" for line in counts.values()),
    ]
    if len(rows) <= ALL_CASES_LISTED:
        lines += ["", markdown_table(("case", "not checked"), rows)]
    return lines


_ALL_HEADERS = (
    "case",
    "split",
    "category",
    "lang",
    "hit level",
    "first rank",
    "attempt",
    "fallback",
    "evidence",
    "rerank top",
    "pass",
)
#: the pipeline columns a private report does not hold
_PIPELINE_COLUMNS = ("selectedAttempt", "fallbackReasons", "evidenceStatus", "rerankTopSource")


def _all_cases_table(cases: Sequence[Mapping[str, Any]], private: bool) -> str:
    rows = []
    for c in cases:
        pipeline = [] if private else [c[name] for name in _PIPELINE_COLUMNS]
        rows.append(
            [
                c["id"],
                c["split"],
                c["category"],
                c["language"],
                "no-answer" if c["noAnswer"] else c["hitLevel"],
                c["firstExpectedRank"],
                *pipeline,
                c["passed"]
                if not c.get("knownFailure")
                else case_outcome(c["passed"], c["knownFailure"]),
            ]
        )
    headers = [h for h in _ALL_HEADERS if not private or h not in _ALL_HEADERS[6:10]]
    return markdown_table(headers, rows)

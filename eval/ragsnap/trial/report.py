"""The trial report: one JSON document (``trial-report.schema.json``) and its Markdown.

Pure functions. The report is privacy-safe: it holds case, method and
category ids, digests, settings, measurements and failure codes, and no
query, document text, title, source name, file path, endpoint or credential
(GoodBuddy's rule). Everything but ``timing`` is a function of the plan, so
two runs of one plan give the same bytes there; ``timing`` (latency, CPU,
memory) is a diagnostic in its own section.

Each method says which view each of its columns read (``views``: ``ranking``,
the raw ranking to the trial's depth, or ``evidence``, the floored top-K
evidence); the tables mark every measure column ``[R]`` or ``[E]`` and say
what the marks mean under the table.

Tables are rendered with ``tabulate`` (GitHub format in Markdown, plain on
the terminal); numbers are formatted before they reach it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tabulate import tabulate

from ..io.jsonio import round_floats
from ..models import TRIAL_REPORT_KIND, TRIAL_REPORT_SCHEMA_VERSION
from ..scoring.casemetrics import CONTEXT_PRECISION, CONTEXT_RECALL
from ..scoring.report import label_check_line
from ..scoring.significance import SignificanceSettings
from .gates import gates_line, method_status, status_reason
from .measure import EVIDENCE, RANKING, TRIAL_MEASURES, MethodMeasurement, failure_codes
from .significance import method_tests, significance_markdown

__all__ = [
    "TRIAL_REPORT_KIND",
    "TRIAL_REPORT_SCHEMA_VERSION",
    "build_trial_report",
    "method_table",
    "render_trial_markdown",
    "views_legend",
]


#: the measures of the method x measure tables, in order (coverage is in the JSON)
TABLE_MEASURES = (
    *(m for m in TRIAL_MEASURES if not m.startswith("coverage")),
    CONTEXT_PRECISION,
    CONTEXT_RECALL,
)


def _case_entries(
    measurements: Mapping[str, MethodMeasurement],
) -> list[dict[str, Any]]:
    names = list(measurements)
    first = measurements[names[0]].results
    rows = []
    for index, result in enumerate(first):
        case = result.case
        per_method = {}
        for name in names:
            r = measurements[name].results[index]
            per_method[name] = {
                "hitLevel": r.hit_level,
                "passed": r.passed,
                "knownFailure": case.known_failure is not None,
                "firstExpectedRank": r.first_expected_rank,
                "evidenceCount": r.evidence_count,
                "metrics": None if r.metrics is None else dict(sorted(r.metrics.items())),
                "failures": failure_codes(r.reasons),
            }
        rows.append(
            {
                "id": case.id,
                "split": case.split,
                "language": case.language,
                "category": case.category,
                "noAnswer": case.no_answer,
                "methods": per_method,
            }
        )
    return rows


def build_trial_report(
    *,
    plan: Mapping[str, Any],
    plan_sha256: str,
    corpus: Mapping[str, Any],
    cases: Mapping[str, Any],
    definitions: Mapping[str, Mapping[str, Any]],
    measurements: Mapping[str, MethodMeasurement],
    gates: Sequence[Mapping[str, Any]] | None,
    determinism: Mapping[str, Any],
    runs: Mapping[str, Any] | None,
    timing: Mapping[str, Any],
    service: Mapping[str, Any] | None = None,
    significance: SignificanceSettings | None = None,
    reference: str | None = None,
    all_pairs: bool = False,
) -> dict[str, Any]:
    """Assemble the JSON trial report; ``gates`` are ``GateResult.to_json()`` rows;
    ``service``: a trial over a service (backend, base URL, corpus revision).

    Each method's ``status`` is ``admitted`` or ``experimental``
    (``ragsnap.trial.gates.method_status``; ``admitted`` is the same as a boolean),
    with the ``gateCounts`` behind it; all three are null without a gates file.

    With ``significance``, ``significance`` holds the paired tests between methods
    (``ragsnap.trial.significance``): each against ``reference`` (the first method
    when None), or every pair with ``all_pairs``; null with one method."""
    methods: dict[str, Any] = {}
    for name, measurement in measurements.items():
        status = None if gates is None else method_status(gates, name)
        methods[name] = {
            "definition": dict(definitions[name]),
            "summary": measurement.summary(),
            "groups": measurement.groups(),
            "admitted": None if status is None else status["status"] == "admitted",
            "status": None if status is None else status["status"],
            "gateCounts": None if status is None else status["gateCounts"],
            "views": measurement.views(),
        }
    case_results = _case_entries(measurements)
    tests = None
    if significance is not None:
        names = list(measurements)
        tests = method_tests(
            round_floats(case_results),  # the values as the report writes them
            names,
            {m for entry in methods.values() for m in entry["summary"]["metrics"]},
            significance,
            None if all_pairs else reference or names[0],
        )
    return {
        "schemaVersion": TRIAL_REPORT_SCHEMA_VERSION,
        "kind": TRIAL_REPORT_KIND,
        "plan": dict(plan),
        "planSha256": plan_sha256,
        "corpus": dict(corpus),
        **({} if service is None else {"service": dict(service)}),
        "cases": dict(cases),
        "methods": methods,
        "gates": None if gates is None else [dict(g) for g in gates],
        "determinism": dict(determinism),
        "runs": None if runs is None else dict(runs),
        "caseResults": case_results,
        **({} if significance is None else {"significance": tests}),
        "timing": dict(timing),
    }


def _number(value: Any, digits: int = 3) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, (bool, int)):
        return str(value)
    return f"{value:.{digits}f}"


def _rate(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:.1f}%"


def _row(name: str, block: Mapping[str, Any], extra: Sequence[str] = ()) -> list[str]:
    metrics = block["metrics"]
    return [
        name,
        *extra,
        str(block["cases"]),
        _rate(block["passRate"]),
        _rate(block["recallAtK"]),
        *(_number(metrics.get(m, {}).get("mean")) for m in TABLE_MEASURES),
        _rate(block["noAnswerFalsePositiveRate"]),
    ]


#: the columns of the measure tables, each with the key its view is recorded under
_COLUMNS = (
    ("pass", "passRate"),
    ("hit@K", "recallAtK"),
    *((m, m) for m in TABLE_MEASURES),
    ("no-answer FP", "noAnswerFalsePositiveRate"),
)
#: how a column header says which view it read
VIEW_MARKS = {RANKING: "[R]", EVIDENCE: "[E]"}


def _views(report: Mapping[str, Any]) -> dict[str, str]:
    """The columns' views (every method of a trial reads the same ones; a report
    written before views were recorded has none)."""
    for _name, entry in _ordered(report):
        return dict(entry.get("views") or {})
    return {}


def _headers(report: Mapping[str, Any]) -> list[str]:
    views = _views(report)
    return [
        "cases",
        *(
            f"{label} {VIEW_MARKS[views[key]]}" if key in views else label
            for label, key in _COLUMNS
        ),
    ]


def views_legend(report: Mapping[str, Any]) -> str:
    """What the ``[R]`` and ``[E]`` marks of the column headers mean for this report."""
    views = _views(report)
    if not views:
        return ""
    depth = report["plan"]["depth"]
    ranked = [key for key, view in views.items() if view == RANKING]
    parts = []
    if ranked:
        parts.append(f"[R] reads the raw ranking to depth {depth} (no score floor, no top K)")
    parts.append("[E] reads the evidence (the top K after the score floors)")
    if not ranked:
        parts.append("run with --depth N (or trial.depth) for the ranking measures")
    return "Columns: " + "; ".join(parts) + "."


def _ordered(report: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """The methods in the plan's order (a JSON object's keys are sorted when written)."""
    return [(m["name"], report["methods"][m["name"]]) for m in report["plan"]["methods"]]


def method_table(report: Mapping[str, Any], fmt: str = "github") -> str:
    """The method x measure table of the cases that ran."""
    rows = []
    for name, entry in _ordered(report):
        row = _row(name, entry["summary"])
        rows.append([*row, entry["status"] or "n/a"])
    return str(
        tabulate(
            rows,
            headers=["method", *_headers(report), "status"],
            tablefmt=fmt,
            disable_numparse=True,
        )
    )


def _group_table(report: Mapping[str, Any], group: str, label: str) -> str:
    rows = []
    for name, entry in _ordered(report):
        for key, block in entry["groups"][group].items():
            rows.append(_row(name, block, [key]))
    return str(
        tabulate(
            rows,
            headers=["method", label, *_headers(report)],
            tablefmt="github",
            disable_numparse=True,
        )
    )


def _corpus_line(
    corpus: Mapping[str, Any],
    service: Mapping[str, Any] | None,
    budgets: Mapping[str, Any] | None = None,
) -> str:
    if service is None:
        return (
            f"Corpus: {corpus['documents']} documents, {corpus['chunks']} chunks "
            f"(`{corpus['sha256'][:16]}`)."
        )
    at = f" at {service['baseUrl']}" if "baseUrl" in service else ""
    revision = service["corpusRevision"]
    return (
        f"Service: {service['backend']}{at}, corpus revision "
        f"{'not recorded' if revision is None else f'`{revision}`'}; each method's ranking "
        "is what the service returns."
        + (
            f" Budgets per request: {budgets['records']} records, {budgets['bytes']} bytes."
            if budgets
            else ""
        )
    )


def render_trial_markdown(report: Mapping[str, Any]) -> str:
    """The report as Markdown: the comparison first, then groups, gates, checks, timing."""
    plan = report["plan"]
    cases = report["cases"]
    corpus = report["corpus"]
    lines = [
        "# ragsnap trial",
        "",
        f"Plan `{report['planSha256'][:16]}`: split {plan['split']}, "
        f"depth {plan['depth'] if plan['depth'] is not None else 'evidence only'}, "
        f"{plan['repetitions']} measured repetition(s), seed {plan['seed']}. "
        f"{_corpus_line(corpus, report.get('service'), (plan.get('backend') or {}).get('budgets'))}"
        f" Cases: {cases['run']} of "
        f"{cases['total']} ran "
        f"({cases['answerable']} answerable, {cases['noAnswer']} no-answer).",
        *(
            [
                "",
                "Privacy view: ids, hashes and measurements only; evaluation definition "
                f"`{report['evaluationDefinitionSha256'][:16]}`, providers "
                f"`{plan['inputs'].get('providers', '')[:16]}`.",
            ]
            if report.get("privacy")
            else []
        ),
        *(["", labels] if (labels := label_check_line(report.get("labelCheck"))) else []),
        "",
        "## Methods",
        "",
        method_table(report),
        "",
        "Graded measures are means over the judged answerable cases; hit@K is the share of "
        "answerable cases with a strong or medium hit; no-answer FP is the share of "
        "no-answer cases that returned evidence.",
        "",
        *([views_legend(report), ""] if _views(report) else []),
    ]
    for name, entry in _ordered(report):
        definition = entry["definition"]
        if definition.get("note"):
            lines.append(f"- **{name}**: {definition['note']}")
    lines += ["", *significance_markdown(report.get("significance"))]
    lines += [
        "## Per split",
        "",
        _group_table(report, "split", "split"),
        "",
        "## Per language",
        "",
        _group_table(report, "language", "language"),
        "",
        "## Per category (test split)",
        "",
        _group_table(report, "categoryTest", "category"),
        "",
        "## Gates",
        "",
    ]
    gates = report["gates"]
    if gates is None:
        lines.append("No gates file was given.")
    else:
        lines += [
            f"{gates_line(gates)}. A method is admitted when every gate that applies to it "
            "ran and passed, and experimental until then (a gate failed, could not run, or "
            "none applies).",
            "",
        ]
        lines += [
            f"- **{name}**: {entry['status']} ({status_reason(entry['gateCounts'])})"
            for name, entry in _ordered(report)
        ]
        rows = [
            [
                g["method"],
                g["gate"],
                "n/a" if g.get("cases") is None else str(g["cases"]),
                _number(g["value"], 4),
                "not run" if not g["ran"] else "pass" if g["passed"] else "FAIL",
                g["message"],
            ]
            for g in gates
        ]
        lines += [
            "",
            tabulate(
                rows,
                headers=["method", "gate", "cases", "value", "result", "why"],
                tablefmt="github",
                disable_numparse=True,
            ),
        ]
    det = report["determinism"]
    lines += ["", "## Determinism", ""]
    if det["checked"]:
        verdict = "identical" if det["identical"] else f"DIFFERENT: {det['firstDifference']}"
        lines.append(
            f"{det['passes']} passes compared (ids, scores, traces, rankings; not latency): "
            f"{verdict}. Projection `{det['projectionSha256'][:16]}`."
        )
    else:
        lines.append("Not checked (--no-check-determinism).")
    runs = report["runs"]
    if runs is not None:
        lines += ["", f"TREC runs: {', '.join(runs['files'])} (qrels: {runs['qrels']})."]
    timing = report["timing"]
    lines += [
        "",
        "## Timing (diagnostic, not compared)",
        "",
        tabulate(
            [
                [
                    name,
                    str(t["count"]),
                    *(_number(t[k]) for k in ("minMs", "medianMs", "p95Ms", "maxMs", "meanMs")),
                ]
                for name, t in timing["latency"].items()
            ],
            headers=["method", "lookups", "min ms", "median ms", "p95 ms", "max ms", "mean ms"],
            tablefmt="github",
            disable_numparse=True,
        ),
        "",
        f"Wall {_number(timing['wallSeconds'], 2)} s, CPU {_number(timing['cpuSeconds'], 2)} s, "
        f"peak RSS {_number(timing['peakRssMiB'], 1)} MiB (the whole run, seeding included).",
        "",
        *_resource_lines(timing.get("resources")),
    ]
    return "\n".join(lines)


def _resource_lines(resources: Mapping[str, Any] | None) -> list[str]:
    """The resource pass per method (``ragsnap.trial.resources``), when it ran."""
    if not resources:
        return []
    rows = []
    for name, r in resources.items():
        cgroup = r["cgroup"] or {}
        usec = cgroup.get("cpuUsageUsec")
        current, peak = cgroup.get("memoryCurrentBytes"), cgroup.get("memoryPeakBytes")
        rows.append(
            [
                name,
                str(r["lookups"]),
                _number(r["wallSeconds"]),
                _number(r["cpuSeconds"]),
                _number(r["rssDeltaMiB"], 1),
                _number(r["peakRssDeltaMiB"], 1),
                _number(None if usec is None else usec / 1000, 1),
                _number(None if current is None else current / 1048576, 1),
                _number(None if peak is None else peak / 1048576, 1),
            ]
        )
    scopes = {r["cgroup"]["scope"] for r in resources.values() if r["cgroup"] is not None}
    whose = (
        "the cgroup given with --cgroup"
        if scopes == {"given"}
        else "ragsnap's own cgroup"
        if scopes
        else "no cgroup (none readable; --cgroup DIR names one)"
    )
    return [
        "### Resource pass (each method alone, warm, nothing seeded)",
        "",
        str(
            tabulate(
                rows,
                headers=[
                    "method",
                    "lookups",
                    "wall s",
                    "CPU s",
                    "RSS delta MiB",
                    "peak RSS delta MiB",
                    "cgroup CPU ms",
                    "cgroup memory MiB",
                    "cgroup peak MiB",
                ],
                tablefmt="github",
                disable_numparse=True,
            )
        ),
        "",
        f"CPU and RSS are this process's; the cgroup columns read {whose}: its CPU counts "
        "everything in it, its memory is a point sample after the method's pass and its peak "
        "is the cgroup's lifetime peak.",
        "",
    ]

"""The live post-reindex check: the JSON report and its Markdown, as pure functions.

``ragsnap live-check`` sends each golden case's query to a running service's
similarity search; this module turns the answers into the report. No I/O
here: the command does the requests and the writing.

Rules, per case (``K`` is the case's topK, or ``--top-k``):

* **pass**: an expected source is among the first ``K`` results, matched
  against each result's ``source`` (``expectedSources``) or ``docId``
  (``expectedDocIds``); ``firstExpectedRank`` is its 1-based position in the
  answer's order.
* **fail**: the case expects sources or doc ids and none is in the top ``K``.
* **skipped**: the case expects neither (``noAnswer`` cases, keyword-only
  cases): a similarity search always returns its nearest chunks, so there is
  nothing to check. It still counts towards ``empty``.

A failing case whose golden case names a ``knownFailure`` is reported (and
counted in ``summary.knownFailures``) but does not fail the check, as in
``ragsnap score``.

``summary.allEmpty`` is true when every case the service answered returned no
results at all: an empty index, typically a reindex that dropped the vectors.
It fails the check by itself, even when no case was checkable.

With ``--state``, ``--repeat-check`` or ``--max-requests`` the report has a
``service`` section (``ragsnap.live.verification``): the verification of the
prepared service before and after the lookups, the repeat check and the
request counters. A failure there makes ``summary.verdict`` ``invalid`` (the
case counts stay as they are) and is the first thing the Markdown shows.
Without those options the report has no such key.

The report is privacy-safe and small: result texts are left out (only their
length, ``textChars``), other strings are cut to ``MAX_CHARS``, and of the raw
answer only the sorted field names are kept. No token is ever passed in.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from ..io.markdown import markdown_table
from ..models import GoldenCase
from .verification import render_service_markdown

__all__ = [
    "LIVE_REPORT_KIND",
    "LIVE_REPORT_SCHEMA_VERSION",
    "MAX_CHARS",
    "LiveAnswer",
    "build_live_report",
    "check_case",
    "is_known_failure",
    "public_url",
    "raw_fields",
    "render_live_markdown",
]

LIVE_REPORT_SCHEMA_VERSION = 1
LIVE_REPORT_KIND = "ragsnap-live-check"
#: Strings from the service (breadcrumbs, titles ...) are cut to this many characters.
MAX_CHARS = 200
#: The result fields a report keeps, in ragsnap's names; the text itself never.
RESULT_FIELDS = ("rank", "source", "chunkId", "docId", "title", "breadcrumb", "score", "scoreLabel")


@dataclass(frozen=True, slots=True)
class LiveAnswer:
    """One case's similarity search: what was asked and what came back.

    ``raw_fields`` is ``raw_fields(answer, results_path)`` of the raw answer;
    ``items`` are its results already mapped to ragsnap's field names.
    """

    kb_scope: str | None
    top_k: int
    items: tuple[Mapping[str, Any], ...]
    raw_fields: Mapping[str, list[str] | None]


def public_url(url: str) -> str:
    """``url`` without its query string and fragment (they may carry a key)."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", "")).rstrip("/")


def _keys(value: Any) -> list[str] | None:
    return sorted(str(k) for k in value) if isinstance(value, Mapping) else None


def raw_fields(answer: Any, results_path: str) -> dict[str, list[str] | None]:
    """The sorted field names of the raw ``answer`` and of its first result item.

    ``results_path`` is the dotted path of the result list inside the answer
    (``""`` for the answer itself); a value that is not an object is ``None``.
    """
    results: Any = answer
    for part in results_path.split(".") if results_path else ():
        results = results.get(part) if isinstance(results, Mapping) else None
    first = results[0] if isinstance(results, list) and results else None
    return {"answer": _keys(answer), "item": _keys(first)}


def _short(value: Any) -> Any:
    """A JSON scalar as it is (strings cut to ``MAX_CHARS``); anything else, and an integer
    beyond 64 bits (which no JSON writer need carry), as a short string."""
    if value is None or isinstance(value, (bool, float)):
        return value
    if isinstance(value, int) and -(2**63) <= value < 2**63:
        return value
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= MAX_CHARS else text[: MAX_CHARS - 1] + "…"


def _result(item: Mapping[str, Any], position: int) -> dict[str, Any]:
    out = {name: _short(item.get(name)) for name in RESULT_FIELDS}
    if out["rank"] is None:
        out["rank"] = position
    text = item.get("text")
    out["textChars"] = len(text) if isinstance(text, str) else None
    return out


def check_case(case: GoldenCase, answer: LiveAnswer) -> dict[str, Any]:
    """One case's entry of the report (see the module docstring for the rules)."""
    k = answer.top_k
    top = answer.items[:k]
    sources, doc_ids = set(case.expected_sources), set(case.expected_doc_ids)
    matched: list[str] = []
    first_rank: int | None = None
    for position, item in enumerate(top, 1):
        pairs = ((item.get("source"), sources), (item.get("docId"), doc_ids))
        hits = [t for t, wanted in pairs if isinstance(t, str) and t in wanted]
        if hits and first_rank is None:
            first_rank = position
        matched += [t for t in hits if t not in matched]
    count = len(answer.items)
    if not (sources or doc_ids):
        status = "skipped"
        reason = (
            "noAnswer case: nothing is expected"
            if case.no_answer
            else "expects only keywords; live-check matches sources and doc ids"
        )
    elif first_rank is not None:
        status, reason = "pass", f"{matched[0]} at rank {first_rank} of the top {k}"
    elif count == 0:
        status, reason = "fail", "no results"
    else:
        got = ", ".join(dict.fromkeys(str(_short(item.get("source"))) for item in top[:3]))
        status, reason = "fail", f"no expected source in the top {k} (top: {got})"
    return {
        "caseId": case.id,
        "query": case.query,
        "kbScope": answer.kb_scope,
        "topK": k,
        "noAnswer": case.no_answer,
        "expectedSources": list(case.expected_sources),
        "expectedDocIds": list(case.expected_doc_ids),
        "resultCount": count,
        "firstExpectedRank": first_rank,
        "matched": matched,
        "status": status,
        "reason": reason,
        "knownFailure": case.known_failure,
        "topResults": [_result(item, position) for position, item in enumerate(top, 1)],
        "rawFields": {key: answer.raw_fields.get(key) for key in ("answer", "item")},
    }


def is_known_failure(entry: Mapping[str, Any]) -> bool:
    """Whether a case entry failed as its golden case's ``knownFailure`` says it would."""
    return entry["status"] == "fail" and bool(entry["knownFailure"])


def _summary(entries: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    counts = {
        status: sum(1 for e in entries if e["status"] == status)
        for status in ("pass", "fail", "skipped")
    }
    known = sum(1 for e in entries if is_known_failure(e))
    empty = sum(1 for e in entries if e["resultCount"] == 0)
    all_empty = bool(entries) and empty == len(entries)
    return {
        "cases": len(entries),
        "passed": counts["pass"],
        "failed": counts["fail"],
        "knownFailures": known,
        "skipped": counts["skipped"],
        "empty": empty,
        "allEmpty": all_empty,
        "verdict": "fail" if counts["fail"] > known or all_empty else "pass",
    }


def build_live_report(
    cases: Sequence[GoldenCase],
    answers: Sequence[LiveAnswer],
    *,
    base_url: str,
    endpoint: str,
    cases_file: str,
    cases_sha256: str,
    checked_at: str,
    overrides: Mapping[str, Any],
    service: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The JSON live-check report of ``cases`` and their ``answers``, in the same order.

    ``endpoint`` is e.g. ``GET /api/search/similar``; ``overrides`` records
    ``--kb-scope`` and ``--top-k`` (None when not given); ``checked_at`` is an
    ISO 8601 UTC time; ``service`` is the ``service`` section
    (``ragsnap.live.verification``), left out when None.
    """
    if len(cases) != len(answers):
        raise ValueError(f"{len(cases)} cases but {len(answers)} answers")
    entries = [check_case(case, answer) for case, answer in zip(cases, answers, strict=True)]
    summary = _summary(entries)
    report = {
        "schemaVersion": LIVE_REPORT_SCHEMA_VERSION,
        "kind": LIVE_REPORT_KIND,
        "checkedAt": checked_at,
        "baseUrl": public_url(base_url),
        "endpoint": endpoint,
        "inputs": {"cases": cases_file, "casesSha256": cases_sha256},
        "overrides": dict(overrides),
        "summary": summary,
        "cases": entries,
    }
    if service is not None:
        report["service"] = dict(service)
        if service["verdict"] == "invalid":
            summary["verdict"] = "invalid"
    return report


def _service_first(report: Mapping[str, Any], private: bool) -> tuple[list[str], list[str]]:
    """The service section's lines: (before the case summary, after it). An invalid
    run shows its failures first; a valid one after the summary."""
    service = report.get("service")
    if service is None:
        return [], []
    lines = ["", *render_service_markdown(service, private)]
    return (lines, []) if service["verdict"] == "invalid" else ([], lines)


def _score(value: Any) -> Any:
    return f"{value:.3f}" if isinstance(value, float) else value


def _render_private(report: Mapping[str, Any]) -> str:
    """A privacy report (``ragsnap.live.privacy``): summary, failures, every case by id."""
    s = report["summary"]
    checked = s["passed"] + s["failed"]
    rows = [
        [
            c["caseId"],
            "known failure" if is_known_failure(c) else c["status"],
            c["topK"],
            c["resultCount"],
            f"{c['matchedTargets']}/{c['expectedTargets']}",
            c["firstExpectedRank"],
            c["reason"],
        ]
        for c in report["cases"]
    ]
    inputs = report["inputs"]
    first, after = _service_first(report, True)
    lines = [
        "# ragsnap live check",
        *first,
        "",
        f"**{s['verdict'].upper()}: {s['passed']} of {checked} checked case(s) passed**; "
        f"{s['skipped']} skipped, {s['knownFailures']} known failure(s), {s['empty']} of "
        f"{s['cases']} returned no results.",
        *(
            ["", "**Every case returned no results: the index looks empty.**"]
            if s["allEmpty"]
            else []
        ),
        *after,
        "",
        "## Cases",
        "",
        markdown_table(
            ("case", "status", "topK", "results", "matched", "first rank", "reason"), rows
        ),
        "",
        "---",
        "",
        f"Privacy view: ids, hashes and counts only. Checked {report['checkedAt']}; "
        + ", ".join(f"{name} `{value[:12]}`" for name, value in sorted(inputs.items()))
        + ".",
    ]
    return "\n".join(lines) + "\n"


def render_live_markdown(report: Mapping[str, Any]) -> str:
    """Render a live-check report dict as Markdown: summary, failures, every case."""
    if report.get("privacy") is True:
        return _render_private(report)
    s = report["summary"]
    checked = s["passed"] + s["failed"]
    first, after = _service_first(report, False)
    lines = [
        "# ragsnap live check",
        *first,
        "",
        f"**{s['verdict'].upper()}: {s['passed']} of {checked} checked case(s) passed** "
        f"against `{report['baseUrl']}` ({report['endpoint']}); {s['skipped']} skipped, "
        f"{s['knownFailures']} known failure(s), {s['empty']} of {s['cases']} returned no "
        "results.",
    ]
    if s["allEmpty"]:
        lines += [
            "",
            "**Every case returned no results: the index looks empty.** Reindex the "
            "knowledge base, or check the kbScope the cases search.",
        ]
    overrides = {k: v for k, v in report["overrides"].items() if v is not None}
    if overrides:
        lines += ["", "Overrides: " + ", ".join(f"{k}={v}" for k, v in sorted(overrides.items()))]
    lines += after
    failed = [c for c in report["cases"] if c["status"] == "fail" and not is_known_failure(c)]
    lines += ["", f"## Failed cases ({len(failed)})", ""]
    if failed:
        lines.append(
            markdown_table(
                ("case", "expected", "results", "reason"),
                [
                    [
                        c["caseId"],
                        c["expectedSources"] + c["expectedDocIds"],
                        c["resultCount"],
                        c["reason"],
                    ]
                    for c in failed
                ],
            )
        )
    else:
        lines.append("None.")
    known = [c for c in report["cases"] if is_known_failure(c)]
    if known:
        lines += [
            "",
            f"## Known failures ({len(known)})",
            "",
            "These cases fail as their `knownFailure` says; they do not fail the check.",
            "",
            markdown_table(
                ("case", "reason", "known failure"),
                [[c["caseId"], c["reason"], c["knownFailure"]] for c in known],
            ),
        ]
    lines += [
        "",
        "## All cases",
        "",
        markdown_table(
            ("case", "status", "kbScope", "topK", "results", "first rank", "top source"),
            [
                [
                    c["caseId"],
                    "known failure" if is_known_failure(c) else c["status"],
                    c["kbScope"],
                    c["topK"],
                    c["resultCount"],
                    c["firstExpectedRank"],
                    c["topResults"][0]["source"] if c["topResults"] else None,
                ]
                for c in report["cases"]
            ],
        ),
        "",
        "## Top results",
    ]
    for c in report["cases"]:
        lines += [
            "",
            f"### {c['caseId']} ({c['status']})",
            "",
            "> " + " ".join(c["query"].split()),
            "",
        ]
        if not c["topResults"]:
            lines.append("No results.")
            continue
        lines.append(
            markdown_table(
                ("rank", "source", "docId", "chunkId", "breadcrumb", "score", "label"),
                [
                    [
                        r["rank"],
                        r["source"],
                        r["docId"],
                        r["chunkId"],
                        r["breadcrumb"],
                        _score(r["score"]),
                        r["scoreLabel"],
                    ]
                    for r in c["topResults"]
                ],
            )
        )
    shapes: dict[tuple[str, str], list[str]] = {}
    for c in report["cases"]:
        raw = c["rawFields"]
        key = (", ".join(raw["answer"] or ["-"]), ", ".join(raw["item"] or ["-"]))
        shapes.setdefault(key, []).append(c["caseId"])
    lines += ["", "## Raw response fields", ""]
    if shapes:
        lines.append(
            markdown_table(
                ("answer fields", "first result's fields", "cases"),
                [[a, i, len(ids)] for (a, i), ids in shapes.items()],
            )
        )
    else:
        lines.append("No cases.")
    inputs = report["inputs"]
    lines += [
        "",
        "---",
        "",
        f"Checked {report['checkedAt']}; cases `{inputs['cases']}` "
        f"(sha256 `{inputs['casesSha256'][:12]}`).",
    ]
    return "\n".join(lines) + "\n"

"""The audit report: its JSON form, its Markdown, its terminal lines and its HTML page.

Pure functions of the sections ``power``, ``discrimination`` and ``runner`` build.
The JSON report (``audit-report.schema.json``) holds the inputs and settings, one
key per section (``discrimination`` and ``mutations`` are null when that part
did not run, with the reason in ``notes``), and ``advice``: every recommendation
of the sections in one list, the uncaught mutations' first, each naming the kind
of case to add. Timings are kept apart (``timing``) so that two runs over the
same inputs differ only there.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .discrimination import discrimination_markdown
from .power import power_advice, power_markdown
from .runner import mutation_markdown

__all__ = [
    "AUDIT_KIND",
    "AUDIT_SCHEMA_VERSION",
    "audit_lines",
    "build_audit_report",
    "render_audit_html",
    "render_audit_markdown",
]

AUDIT_KIND = "ragsnap-audit"
AUDIT_SCHEMA_VERSION = 1


def _advice(
    power: Mapping[str, Any] | None,
    discrimination: Mapping[str, Any] | None,
    mutations: Mapping[str, Any] | None,
) -> list[dict[str, str]]:
    """Every recommendation in one list: (part, subject, text), uncaught mutations first."""
    out: list[dict[str, str]] = []
    if mutations is not None:
        for entry in mutations["results"]:
            if entry["applicable"] and not entry["caught"] and entry["advice"]:
                out.append({"part": "mutations", "subject": entry["name"], "text": entry["advice"]})
    for metric, text in [] if power is None else power_advice(power):
        out.append({"part": "power", "subject": metric, "text": text})
    if discrimination is not None and discrimination["reason"] is None:
        recommended = discrimination["recommended"]
        text = (
            "gate on " + ", ".join(recommended) + ": they separate methods and keep their "
            "order between dev and test"
            if recommended
            else "no measure both separates methods and keeps its order between dev and "
            "test: add cases before gating on one"
        )
        out.append({"part": "discrimination", "subject": "gates", "text": text})
    return out


def build_audit_report(
    *,
    inputs: Mapping[str, Any],
    settings: Mapping[str, Any],
    power: Mapping[str, Any] | None,
    discrimination: Mapping[str, Any] | None,
    mutations: Mapping[str, Any] | None,
    notes: Sequence[str] = (),
    timing: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The JSON audit report."""
    return {
        "schemaVersion": AUDIT_SCHEMA_VERSION,
        "kind": AUDIT_KIND,
        "inputs": dict(inputs),
        "settings": dict(settings),
        "power": None if power is None else dict(power),
        "discrimination": None if discrimination is None else dict(discrimination),
        "mutations": None if mutations is None else dict(mutations),
        "advice": _advice(power, discrimination, mutations),
        "notes": list(notes),
        "timing": dict(timing or {}),
    }


def render_audit_markdown(report: Mapping[str, Any]) -> str:
    """The Markdown audit report: the verdict, then one section per part, then advice."""
    lines = ["# ragsnap audit", "", *_verdict(report), ""]
    if report["power"] is None:
        lines += ["## Minimum detectable effect", "", "Not computed: no score report.", ""]
    else:
        lines += power_markdown(report["power"])
    if report["discrimination"] is None:
        lines += ["## Discriminative power", ""]
        lines += ["Not run: pass `--trial REPORT` (a `ragsnap trial --split all` report).", ""]
    else:
        lines += discrimination_markdown(report["discrimination"])
    lines += ["## Mutations", ""]
    if report["mutations"] is None:
        lines.append("Not run (`--mutations none`).")
    else:
        lines += mutation_markdown(report["mutations"])
    # the power section lists its own advice under its table
    advice = [a for a in report["advice"] if a["part"] != "power"]
    if advice:
        lines += ["", "## What to add", ""]
        lines += [f"- **{a['subject']}** ({a['part']}): {a['text']}" for a in advice]
    if report["notes"]:
        lines += ["", "## Notes", "", *(f"- {note}" for note in report["notes"])]
    return "\n".join(lines) + "\n"


def _verdict(report: Mapping[str, Any]) -> list[str]:
    """One line per part: the mutation score, the metrics' detectable effects, the
    measures that separate methods."""
    out = []
    mutations = report["mutations"]
    if mutations is not None:
        out.append(_score_line(mutations))
    power = report["power"]
    rows = [] if power is None else [row for row in power["rows"] if row["scope"] == "all"]
    drop = report["settings"]["drop"]
    seen = [r for r in rows if r["mde"] is not None and r["mde"] <= drop]
    if rows and not seen:
        smallest = min((r for r in rows if r["mde"] is not None), key=_mde, default=None)
        out.append(
            f"No metric would show a drop of {drop:g} as significant with "
            f"{rows[0]['cases']} cases"
            + (
                f" (smallest MDE: {smallest['metric']} {smallest['mde']:.3f})"
                if smallest is not None
                else ""
            )
            + "."
        )
    elif rows:
        out.append(
            f"{len(seen)} of {len(rows)} metrics would show a drop of {drop:g} as "
            f"significant: {', '.join(r['metric'] for r in seen)}."
        )
    return out


def _mde(row: Mapping[str, Any]) -> float:
    return float(row["mde"])


def _score_line(mutations: Mapping[str, Any]) -> str:
    caught, applicable = mutations["caught"], mutations["applicable"]
    score = mutations.get("score")
    share = "n/a" if score is None else f"{score:.0%}"
    return f"Mutation score {share}: the PR check catches {caught} of {applicable} mutation(s)."


def audit_lines(report: Mapping[str, Any]) -> list[str]:
    """The terminal summary: the verdict, then each uncaught mutation's advice."""
    lines = _verdict(report)
    for advice in report["advice"]:
        if advice["part"] == "mutations":
            lines.append(f"  not caught: {advice['subject']}: {advice['text']}")
    return lines


def _power_html(power: Mapping[str, Any]) -> dict[str, Any]:
    """The detectable effects: a chart of each overall metric's MDE beside the drop it
    is judged against, and the table of every row."""
    from ..scoring.html import bar_chart, markup

    settings = power["settings"]
    overall = [row for row in power["rows"] if row["scope"] == "all"]
    metrics = [row["metric"] for row in overall]
    series = [
        ("MDE", [row["mde"] for row in overall]),
        (f"drop {settings['drop']:g}", [settings["drop"]] * len(overall)),
    ]
    drop = settings["drop"]
    rows = [
        [
            (row["scope"], ""),
            (row["metric"], ""),
            (row["cases"], "num"),
            ("n/a" if row["mean"] is None else f"{row['mean']:.3f}", "num"),
            (
                "n/a" if row["mde"] is None else f"{row['mde']:.3f}",
                "num regression" if row["mde"] is None or row["mde"] > drop else "num improvement",
            ),
            ("n/a" if row["casesNeeded"] is None else row["casesNeeded"], "num"),
            (row["mdeReason"] or row["casesNeededReason"] or "", ""),
        ]
        for row in power["rows"]
    ]
    return {
        "chart": markup(bar_chart("mde", metrics, series, maximum=1.0)) if overall else "",
        "head": ["scope", "metric", "cases", "mean", "MDE", f"cases for {drop:g}", "why n/a"],
        "rows": rows,
        "note": f"The smallest drop the diff's paired test (alpha {settings['alpha']}) calls "
        f"significant in {settings['power']:.0%} of regressions where cases lose their value "
        f"one by one ({power['model']}).",
    }


def _discrimination_html(section: Mapping[str, Any] | None) -> dict[str, Any]:
    if section is None:
        note = "Not measured: pass --trial REPORT (ragsnap trial --split all)."
        return {"rows": [], "note": note}
    if section["reason"] is not None:
        return {"rows": [], "note": f"Not measured: {section['reason']}."}
    recommended = set(section["recommended"])
    rows = [
        [
            (row["measure"], "improvement" if row["measure"] in recommended else ""),
            (f"{row['discriminativePower']:.0%}", "num"),
            (f"{row['separated']}/{row['pairs']}", "num"),
            (f"{row['separatedAdjusted']}/{row['pairs']}", "num"),
            ("n/a" if row["swapRate"] is None else f"{row['swapRate']:.0%}", "num"),
            (f"{row['swapped']}/{row['comparable']}", "num"),
        ]
        for row in section["measures"]
    ]
    correction = section["settings"]["correction"]
    return {
        "head": [
            "measure",
            "discriminative power",
            "separated",
            f"separated ({correction})",
            "swap rate",
            "swapped",
        ],
        "rows": rows,
        "note": f"{len(section['methods'])} methods, {section['pairs']} pairs; "
        f"{section['cases']['dev']} dev and {section['cases']['test']} test cases. "
        "Highlighted: the measures that separate methods and never swap.",
    }


def _mutations_html(section: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if section is None:
        return None
    rows = []
    for r in section["results"]:
        if not r["applicable"]:
            caught = ("not applicable", "")
        elif not r["caught"]:
            caught = ("not caught", "regression")
        elif r["caughtRequiringSignificance"]:
            caught = ("caught", "improvement")
        else:
            caught = ("caught, not significant", "")
        by = ", ".join(r["caughtBy"][:6]) + (
            f" +{len(r['caughtBy']) - 6}" if len(r["caughtBy"]) > 6 else ""
        )
        if r["aggregateRegressions"]:
            by += ("; " if by else "") + f"{len(r['aggregateRegressions'])} aggregate(s)"
        rows.append(
            [
                (r["name"], ""),
                (r["stage"], ""),
                caught,
                (r["changedCases"], "num"),
                (by, ""),
                (r["detail"] or r["reason"] or "", ""),
                (r["advice"] or "", ""),
            ]
        )
    return {
        "head": [
            "mutation",
            "stage",
            "PR check",
            "cases changed",
            "caught by",
            "what changed",
            "what to add",
        ],
        "rows": rows,
        "note": f"Method {section['method']}, {section['cases']} cases; each mutation "
        "re-snapshotted in a scratch store and diffed against the baseline as the PR check.",
    }


def render_audit_html(report: Mapping[str, Any]) -> str:
    """The audit report as one self-contained HTML page (``templates/html/audit.html.j2``)."""
    from ..scoring.html import render

    mutations = report["mutations"]
    uncaught = 0 if mutations is None else mutations["applicable"] - mutations["caught"]
    cards: list[tuple[str, Any]] = []
    if mutations is not None:
        score = mutations["score"]
        cards.append(("mutation score", "n/a" if score is None else f"{score:.0%}"))
        cards.append(("mutations not caught", uncaught))
    power = report["power"]
    if power is not None and power["rows"]:
        cards.append(("cases", power["rows"][0]["cases"]))
    return render(
        "audit.html.j2",
        title="ragsnap audit",
        bad=uncaught > 0,
        verdict=" ".join(_verdict(report)),
        card_items=cards,
        advice=[[(a["part"], ""), (a["subject"], ""), (a["text"], "")] for a in report["advice"]],
        mutations=_mutations_html(mutations),
        power=None if power is None else _power_html(power),
        discrimination=_discrimination_html(report["discrimination"]),
        notes=report["notes"],
        cases_sha=report["inputs"]["casesSha256"][:16],
        baseline=report["inputs"]["baseline"],
    )

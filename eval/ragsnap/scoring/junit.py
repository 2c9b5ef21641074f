"""A score report (and its baseline diff) as a JUnit XML file, for CI test views.

Pure: returns the XML text, deterministic for the same inputs (no timestamps,
no host names). One ``testcase`` per golden case, in the report's order:

* a case that fails (and is not a known failure), or that regressed against the
  baseline, is a ``failure`` whose message is the hit level and the reasons (and,
  when it regressed, what changed and what it lost: the diff's ``lost_text``);
* a known failure that still fails (an expected failure) is ``skipped`` with
  ``type="xfail"`` and its ``knownFailure`` text, which CI test views show as not
  failed (pytest's JUnit XML writes an xfail the same way); with ``knownFailures:
  fail`` it is a ``failure`` like any other;
* a known failure that now passes passes, saying so in its ``system-out`` (remove
  its ``knownFailure``); with ``knownFailures: strict`` it is a ``failure`` of type
  ``XPASS(strict)``, as pytest reports it;
* an expectation the case sets but did not check is a ``property`` of its
  ``testcase`` (first, as pytest writes ``record_property``), never a failure:
  ``notApplicable`` (``rerankTopSource (fixture has no rerankTrace)``: the fixture
  lacks the part it reads) and ``skippedExpectations`` (``scoring.skip``), comma
  separated; the ``ragsnap.cases`` suite's properties count them
  (``report.unchecked_lines``);
* with a diff, a second suite holds one ``testcase`` per overall aggregate row,
  failing when the row is a regression;
* when the report has a ``provenance`` (stale fixtures, or what could not be
  checked), a suite ``ragsnap.fixtures`` holds one ``testcase`` ``provenance``,
  failing with one line per stale cause; its notes go in ``system-out``.

Any text (case ids, queries, reasons, ``knownFailure`` notes) may hold characters
XML 1.0 forbids (the C0 controls but tab, newline and carriage return; U+FFFE,
U+FFFF, lone surrogates): each is written as its Python escape (``\\x0b``), so
the file is always well-formed.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from typing import Any

from .diff import REGRESSION, delta_text, lost_text, metric_value
from .hits import case_outcome
from .report import report_outcome, unchecked_lines

__all__ = ["render_junit_xml"]

#: characters no XML 1.0 document may hold, even escaped as a character reference
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _xml_safe(text: str) -> str:
    """``text`` with every character XML 1.0 forbids written as its escape (``\\x0b``)."""
    return _NOT_XML.sub(lambda m: ascii(m.group())[1:-1], text)


def _suite(parent: ET.Element, name: str) -> ET.Element:
    return ET.SubElement(parent, "testsuite", name=name)


def _count(suite: ET.Element) -> tuple[int, int, int]:
    cases = suite.findall("testcase")
    failures = sum(c.find("failure") is not None for c in cases)
    skipped = sum(c.find("skipped") is not None for c in cases)
    suite.set("tests", str(len(cases)))
    suite.set("failures", str(failures))
    suite.set("errors", "0")
    suite.set("skipped", str(skipped))
    return len(cases), failures, skipped


def _known(case: Mapping[str, Any]) -> str:
    known = case["knownFailure"]
    return "knownFailure" if known is True else f"knownFailure: {known}"


def _case_failure(
    case: Mapping[str, Any], regression: Mapping[str, Any] | None, mode: str
) -> str | None:
    failing = not case["passed"] and (not case.get("knownFailure") or mode == "fail")
    if not failing and regression is None:
        return None
    level = "no-answer" if case["noAnswer"] else (case["hitLevel"] or "n/a")
    parts = [f"hit level {level}"]
    if failing:
        parts.append(
            "; ".join(case["reasons"])
            + (f" ({_known(case)}; knownFailures: fail)" if case.get("knownFailure") else "")
        )
    if regression is not None:
        parts.append(
            "regressed against the baseline: "
            + "; ".join(
                f"{ch['field']} {ch['baseline']!r} -> {ch['current']!r}"
                for ch in regression["changes"]
                if ch["status"] == REGRESSION
            )
            + ("" if (lost := lost_text(regression)) is None else f"; {lost}")
        )
    return ": ".join(parts[:2]) + ("; " + parts[2] if len(parts) > 2 else "")


def _unchecked_properties(item: ET.Element, case: Mapping[str, Any]) -> None:
    """The case's expectations that were not checked, as ``property`` elements."""
    absent = [
        f"{e['expectation']} (fixture has no {e['missing']})" for e in case.get("notApplicable", ())
    ]
    skipped = list(case.get("skippedExpectations", ()))
    if not absent and not skipped:
        return
    listed = ET.SubElement(item, "properties")
    if absent:
        ET.SubElement(listed, "property", name="notApplicable", value=", ".join(absent))
    if skipped:
        ET.SubElement(listed, "property", name="skippedExpectations", value=", ".join(skipped))


def render_junit_xml(report: Mapping[str, Any], diff: Mapping[str, Any] | None) -> str:
    """The JUnit XML text of a score report and, when given, its diff."""
    root = ET.Element("testsuites", name="ragsnap")
    suite = _suite(root, "ragsnap.cases")
    regressed = (
        {} if diff is None else {c["id"]: c for c in diff["cases"] if c["status"] == REGRESSION}
    )
    mode = report_outcome(report)["knownFailures"]
    counts = unchecked_lines(report)
    if counts:
        listed = ET.SubElement(suite, "properties")
        for name, line in counts.items():
            ET.SubElement(listed, "property", name=name, value=line)
    for case in report["cases"]:
        item = ET.SubElement(
            suite, "testcase", classname=f"ragsnap.{case['category']}", name=case["id"]
        )
        _unchecked_properties(item, case)
        message = _case_failure(case, regressed.get(case["id"]), mode)
        outcome = case_outcome(case["passed"], case.get("knownFailure"))
        if message is not None:
            failure = ET.SubElement(item, "failure", message=message, type="RetrievalFailure")
            query = case.get("query")  # none in a private report
            failure.text = message if query is None else f"query: {query}\n{message}"
        elif outcome == "expected failure":
            ET.SubElement(
                item, "skipped", type="xfail", message=f"expected failure ({_known(case)})"
            )
        elif outcome == "now passes":
            text = f"known failure now passes: remove its knownFailure ({_known(case)})"
            if mode == "strict":
                ET.SubElement(
                    item, "failure", type="XPASS(strict)", message=f"[XPASS(strict)] {text}"
                )
            else:
                ET.SubElement(item, "system-out").text = text
    totals = [_count(suite)]
    if diff is not None:
        rows = _suite(root, "ragsnap.aggregates")
        for row in diff["aggregates"]:
            if row["scope"] != "all":
                continue
            item = ET.SubElement(
                rows, "testcase", classname="ragsnap.aggregates", name=row["metric"]
            )
            if row["status"] == REGRESSION:
                metric = row["metric"]
                ET.SubElement(
                    item,
                    "failure",
                    type="AggregateRegression",
                    message=f"{metric} {metric_value(metric, row['baseline'])} -> "
                    f"{metric_value(metric, row['current'])} "
                    f"({delta_text(metric, row['delta'])}, tolerance {row['tolerance']})",
                )
        totals.append(_count(rows))
    provenance = report.get("provenance")
    if provenance is not None:
        fixtures = _suite(root, "ragsnap.fixtures")
        item = ET.SubElement(fixtures, "testcase", classname="ragsnap.fixtures", name="provenance")
        stale = provenance.get("stale")
        count = len(stale) if stale is not None else provenance["staleCauses"]
        if count:
            failure = ET.SubElement(
                item,
                "failure",
                type="StaleFixtures",
                message=f"stale fixtures: {count} cause(s)",
            )
            if stale is not None:  # a private report keeps the count only
                failure.text = "\n".join([*stale, provenance["fix"]])
        notes = provenance.get("notes")
        if isinstance(notes, list) and notes:
            ET.SubElement(item, "system-out").text = "\n".join(notes)
        totals.append(_count(fixtures))
    root.set("tests", str(sum(t[0] for t in totals)))
    root.set("failures", str(sum(t[1] for t in totals)))
    root.set("errors", "0")
    root.set("skipped", str(sum(t[2] for t in totals)))
    ET.indent(root)
    # the serialised text holds the forbidden characters only where report text put them
    return _xml_safe(
        '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, "unicode") + "\n"
    )

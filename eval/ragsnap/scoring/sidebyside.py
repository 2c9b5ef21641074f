"""Baseline and current side by side for every diff case with causes: what the
HTML page (``ragsnap.scoring.html``) draws under "What the cases lost, and where".

Pure: a diff (``ragsnap.scoring.diff``) whose cases carry ``lost`` and
``attribution`` (``ragsnap.scoring.attribution``) in, plain dicts and strings out;
the template (``templates/html/_why.html.j2``) escapes every one of them.

For each case with an ``attribution``, regressions first, then the diff's order:

* ``lost``: what it lost, every loss (``diff.lost_text``);
* per cause (at most ``CAUSES_SHOWN``): its stage (``STAGE_LABELS``; "no stage"
  when the fixtures agree), its line (``cause_text``), the unreported stages, and
* ``texts``: the target's evidence text in the baseline and in the current
  fixture as runs of (text, changed), the word runs that went marked in the
  baseline and those that came in the current text (``attribution.word_diff``,
  the tokenisation of ``word_changes``); a side whose trail holds no text is None
  ("not reported");
* ``rows``: the ranks per stage, in pipeline order (``STAGES``): lexical, vector,
  fused and reranked rank, confidence, evidence rank, in context (always; a key
  the trail leaves out is "not reported"), the document's presence and the
  chunk's category when a trail records them, and what the cause's evidence
  compares (changed words, settings moved, L0 hints, attempts, floor, topK ...).
  The rows of the attributed stage are ``marked``; a row whose two sides differ
  is ``moved``. When no row belongs to the attributed stage, one says so.

A privacy diff (``ragsnap.scoring.privacy``) holds no text and no category:
``private`` is true, ``texts`` None, the rows hold ranks, scores and counts only;
a hashed id is never shown as if it were text.

At most ``CASES_SHOWN`` cases are drawn (``total`` counts them all); the JSON diff
holds every one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .attribution import STAGE_LABELS, STAGES, cause_text, word_diff
from .diff import REGRESSION, lost_text

__all__ = ["CASES_SHOWN", "CAUSES_SHOWN", "NOT_REPORTED", "why_context"]

#: cases drawn side by side on one page
CASES_SHOWN = 50
#: causes drawn per case
CAUSES_SHOWN = 5
#: a trail key the fixture does not record
NOT_REPORTED = "not reported"

#: trail key -> (stage, measure); shown always
_RANKS = (
    ("lexicalRank", "retrieval", "lexical rank"),
    ("vectorRank", "retrieval", "vector rank"),
    ("fusedRank", "fusion", "fused rank"),
    ("rerankRank", "rerank", "reranked rank"),
    ("confidence", "floor", "confidence"),
    ("evidenceRank", "cut", "evidence rank"),
    ("inContext", "context", "in context"),
)
#: trail keys shown when either side records them
_OPTIONAL = (
    ("present", "corpus", "document in the knowledge base"),
    ("category", "attempt", "category"),
)
#: evidence key holding [baseline, current] -> (stage, measure)
_PAIRS = {
    "l0Hints": ("l0Hint", "L0 hint"),
    "selectedAttempt": ("attempt", "selected attempt"),
    "fallbackReasons": ("attempt", "fallback reasons"),
    "floor": ("floor", "floor"),
    "evidenceStatus": ("floor", "evidence status"),
    "topK": ("cut", "topK"),
    "rerankTop": ("rerank", "rerank top source"),
    "contextSources": ("context", "context sources"),
}
#: rows that name the corpus: never drawn for a privacy diff (its view drops them)
_NAMED = frozenset({"category", "l0Hints", "rerankTop", "contextSources"})
#: what a null rank means, per trail key
_NONE = {
    "lexicalRank": "not found",
    "vectorRank": "not found",
    "fusedRank": "not listed",
    "rerankRank": "not listed",
    "confidence": "none",
    "evidenceRank": "not evidence",
    "category": "none",
}


def why_context(diff: Mapping[str, Any], private: bool) -> dict[str, Any]:
    """What the side-by-side section draws (module docstring): ``cases`` (each with
    its ``anchor``, the id the case table links to), ``total`` and ``shown``."""
    cases = [c for c in diff["cases"] if c.get("attribution")]
    cases.sort(key=lambda c: c["status"] != REGRESSION)  # stable: the diff's order
    shown = cases[:CASES_SHOWN]
    return {
        "cases": [_case(case, n, private) for n, case in enumerate(shown, 1)],
        "total": len(cases),
        "shown": len(shown),
        "private": private,
    }


def _case(case: Mapping[str, Any], n: int, private: bool) -> dict[str, Any]:
    causes = case["attribution"]
    lost = case.get("lost") or []
    return {
        "id": case["id"],
        "anchor": f"why-{n}",
        "status": case["status"],
        "lost": lost_text(case, len(lost)) if lost else None,
        "causes": [_cause(c, private) for c in causes[:CAUSES_SHOWN]],
        "more": max(len(causes) - CAUSES_SHOWN, 0),
    }


def _cause(cause: Mapping[str, Any], private: bool) -> dict[str, Any]:
    stage = cause["stage"]
    old, new = cause["before"], cause["after"]
    texts: dict[str, list[tuple[str, bool]] | None] | None = None
    if not private and ("text" in old or "text" in new):
        if "text" in old and "text" in new:
            before, after = word_diff(old["text"], new["text"])
            texts = {"baseline": before, "current": after}
        else:  # one side only: nothing to compare it with
            texts = {
                side: [(trail["text"], False)] if "text" in trail else None
                for side, trail in (("baseline", old), ("current", new))
            }
    return {
        "stage": "no stage" if stage is None else STAGE_LABELS[stage],
        "target": cause["target"],
        "line": cause_text(cause),
        "unreported": [STAGE_LABELS[s] for s in cause["unreported"]],
        "texts": texts,
        "rows": _rows(cause, private),
    }


def _rows(cause: Mapping[str, Any], private: bool) -> list[dict[str, Any]]:
    old, new, ev, stage = cause["before"], cause["after"], cause["evidence"], cause["stage"]
    rows: list[tuple[str, str, str, str]] = []
    for key, where, measure in _OPTIONAL:
        if (key in old or key in new) and not (private and key in _NAMED):
            rows.append((where, measure, _value(key, old), _value(key, new)))
    for key, where, measure in _RANKS:
        rows.append((where, measure, _value(key, old), _value(key, new)))
    if "removed" in ev or "removedCount" in ev:
        rows.append(("corpus", "changed words", *_words(ev)))
    if ev.get("documentChanged") is not None:
        rows.append(("corpus", "document", "as in the baseline", "changed"))
    for key, setting in sorted((ev.get("settings") or {}).items()):  # the stage's own
        where = stage or "settings"
        rows.append((where, f"setting {key}", _plain(setting[0]), _plain(setting[1])))
    for key, (where, measure) in _PAIRS.items():
        if private and key in _NAMED:
            continue
        if key in ev and isinstance(ev[key], list) and len(ev[key]) == 2:
            rows.append((where, measure, _plain(ev[key][0]), _plain(ev[key][1])))
    if "budgetChars" in ev:
        rows.append(("context", "context budget (chars)", "", _plain(ev["budgetChars"])))
    if stage is not None and not any(r[0] == stage for r in rows):
        rows.append((stage, "what moved", "", "see the cause above"))
    rows.sort(key=lambda r: STAGES.index(r[0]))  # stable: trail rows first in a stage
    out = []
    for where, measure, before, after in rows:
        out.append(
            {
                "stage": STAGE_LABELS[where],
                "measure": measure,
                "baseline": before,
                "current": after,
                "marked": where == stage,
                "moved": before != after,
                "repeat": False,
            }
        )
    for row, previous in zip(out[1:], out, strict=False):  # the stage is named once
        if row["stage"] == previous["stage"]:
            row["repeat"] = True
    return out


def _value(key: str, trail: Mapping[str, Any]) -> str:
    if key not in trail:
        return NOT_REPORTED
    value = trail[key]
    if value is None and key == "fusedRank" and trail.get("listed"):
        return f"not in the {trail['listed']} listed"
    if value is None:
        return _NONE.get(key, "none")
    if key == "present":
        return "yes" if value else "absent"
    if key == "fusedRank" and trail.get("listed"):
        return f"{value} of {trail['listed']}"
    return _plain(value)


def _words(ev: Mapping[str, Any]) -> tuple[str, str]:
    if "removed" in ev:
        return _quoted(ev["removed"]), _quoted(ev.get("added") or [])
    return (
        f"{ev.get('removedCount', 0)} run(s) removed",
        f"{ev.get('addedCount', 0)} run(s) added",
    )


def _quoted(words: Sequence[str]) -> str:
    return ", ".join(f"'{w}'" for w in words) or "none"


def _plain(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ", ".join(_plain(v) for v in value) or "none"
    if isinstance(value, dict):
        return ", ".join(f"{k} {_plain(v)}" for k, v in value.items() if v is not None) or "none"
    return str(value)

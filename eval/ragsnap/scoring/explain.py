"""One case explained stage by stage: its baseline fixture against its current one
(``ragsnap explain CASE``).

Pure functions. ``explain_case`` takes the case's two score-report case entries
(``ragsnap.scoring.report.case_entry``, with their ``coverage``) and the two sides
(``ragsnap.scoring.attribution.Side``) and returns one JSON-ready object that every
rendering reads (``render_explanation`` is the terminal's):

* ``case``: its ``id`` and ``query``; ``baselineFixtures``: where the baseline
  fixture was read; ``notes``;
* ``hitLevel`` and ``passed``: ``[baseline, current]``;
* ``lost``: what the case lost (``ragsnap.scoring.diff.case_lost``, the diff's own
  list) and ``causes``: their stage attribution (``attribute_case``), each with its
  one line (``text``, ``cause_text``);
* ``targets``: EVERY expected target of the case (keywords, breadcrumbs, sources,
  doc ids, judged chunks, answer spans, in the order the diff lists losses), lost or
  not: its ``kind`` and ``target``, the ``chunk`` it is followed through (a
  keyword's, breadcrumb's or span's covering chunk, a source's, doc id's or judged
  chunk's best-ranked evidence block; the baseline's, else the current one's; null:
  no chunk on either side), its ``source``, whether it was ``lost``, the ``stage``
  it was lost at (null: not lost, or no stage differs), both ``trails``
  (``attribution.trail``, the chunk text included) and ``rows``: one per stage of
  ``STAGES`` in pipeline order, ``{"stage", "baseline", "current", "lostHere"}``
  with each side's value as text.

**The rows.** corpus: the document present or absent, and the chunk text the same
or changed (the removed / added words, ``word_changes``); settings: the settings
that shape every stage and differ (``settings_moved``), else "same"; L0 hint: the
hinted category and breadcrumb prefix; attempt: the selected attempt, its fallback
reasons, the selected filtered attempt's category and the target's; retrieval: its
lexical and vector ranks ("none": that list did not find it); fusion: its place in
the fused order; rerank: in the reranked order; floor: its confidence against the
floor; cut: its evidence rank against ``topK``; context: whether its source is in
the context pack. A setting owned by a later stage that differs is shown in that
stage's row. A value the fixture does not record reads "not reported", never a
guess; the attributed stage of a lost target has ``lostHere``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .attribution import (
    STAGE_LABELS,
    STAGES,
    Side,
    attribute_case,
    cause_text,
    floor_value,
    settings_moved,
    stage_settings,
    target_chunk,
    trail,
    word_changes,
)
from .diff import LOST_ORDER, case_lost, lost_text

__all__ = ["NOT_REPORTED", "TARGET_ORDER", "explain_case", "render_explanation"]

NOT_REPORTED = "not reported"
#: coverage key -> target kind, in the order the diff lists a case's losses
TARGET_ORDER = LOST_ORDER
_COVERED = ("keywords", "breadcrumbs", "spans")
_LOST_HERE = "<- lost here"


def explain_case(
    before_entry: Mapping[str, Any],
    after_entry: Mapping[str, Any],
    before: Side,
    after: Side,
    label: str,
    notes: Sequence[str] = (),
) -> dict[str, Any]:
    """The explanation of one case (module docstring): ``before_entry`` /
    ``after_entry`` are its report case entries scored from the fixtures of
    ``before`` / ``after`` (both present); ``label`` says where the baseline
    fixture came from."""
    if before.fixture is None or after.fixture is None:
        raise ValueError("explain_case needs a fixture on both sides")
    lost = case_lost(before_entry, after_entry, ())
    causes = attribute_case(lost, before, after)
    for cause in causes:
        cause["text"] = cause_text(cause)
    by_loss = {index: cause for cause in causes for index in cause["losses"]}
    lost_at = {(e["kind"], e["target"]): i for i, e in enumerate(lost)}
    targets = []
    for key, kind in TARGET_ORDER:
        old_items = (before_entry.get("coverage") or {}).get(key, ())
        new_items = {i["target"]: i for i in (after_entry.get("coverage") or {}).get(key, ())}
        for item in old_items:
            index = lost_at.get((kind, item["target"]))
            why = None if index is None else by_loss.get(index)
            one = _target(kind, item, new_items.get(item["target"]), key, before, after, why)
            targets.append({**one, "lost": index is not None})
    return {
        "case": {"id": after_entry["id"], "query": after_entry["query"]},
        "baselineFixtures": label,
        "notes": list(notes),
        "hitLevel": [before_entry["hitLevel"], after_entry["hitLevel"]],
        "passed": [before_entry["passed"], after_entry["passed"]],
        "lost": lost,
        "lostText": lost_text({"lost": lost, "attribution": causes}, len(lost)),
        "causes": causes,
        "targets": targets,
    }


def _locate(
    kind: str, item: Mapping[str, Any] | None, key: str, side: Side
) -> tuple[str, str | None] | None:
    """The chunk ``side`` follows the target through (``target_chunk``)."""
    if item is None or side.fixture is None:
        return None
    entry = {"kind": kind, "target": item["target"], "before": item.get("chunk")}
    if key in _COVERED and entry["before"] is None:
        return None
    return target_chunk(entry, side.fixture["lookupResult"]["evidenceBlocks"])


def _target(
    kind: str,
    old_item: Mapping[str, Any],
    new_item: Mapping[str, Any] | None,
    key: str,
    before: Side,
    after: Side,
    cause: Mapping[str, Any] | None,
) -> dict[str, Any]:
    located = _locate(kind, old_item, key, before) or _locate(kind, new_item, key, after)
    out: dict[str, Any] = {"kind": kind, "target": old_item["target"]}
    if located is None:
        out.update(chunk=None, source=None, stage=None, trails=None, rows=[])
        return out
    chunk, source = located
    if source is None:  # a covering chunk that only the other side ranks
        for side in (before, after):
            hit = _block(side, chunk)
            if hit is not None:
                source = hit["source"]
                break
    old, new = trail(before, chunk, source), trail(after, chunk, source)
    stage = None if cause is None else cause["stage"]
    rows = _rows(old, new, before, after, source)
    for row in rows:
        row["lostHere"] = stage is not None and row["stage"] == stage
    out.update(
        chunk=chunk,
        source=source,
        stage=stage,
        trails={"baseline": old, "current": new},
        rows=rows,
    )
    return out


def _block(side: Side, chunk: str) -> Mapping[str, Any] | None:
    blocks = [] if side.fixture is None else side.fixture["lookupResult"]["evidenceBlocks"]
    return next((b for b in blocks if b.get("chunkId") == chunk), None)


def _rows(
    old: Mapping[str, Any],
    new: Mapping[str, Any],
    before: Side,
    after: Side,
    source: str | None,
) -> list[dict[str, Any]]:
    moved = settings_moved(before, after)
    settings = [stage_settings(_generator(s)) for s in (before, after)]
    values: dict[str, tuple[str, str]] = {
        "corpus": _corpus(old, new, before, after, source),
        "settings": ("same", "same"),
    }
    sides = ((old, before, settings[0]), (new, after, settings[1]))
    for stage, cell in _CELLS.items():
        a, b = (cell(t, side, own) for t, side, own in sides)
        values[stage] = (a, b)
    rows = []
    for stage in STAGES:
        a, b = values[stage]
        changed = moved.get(stage)
        if changed and stage != "cut":  # the cut row shows topK itself
            shown = [", ".join(f"{k} {_value(v[i])}" for k, v in changed.items()) for i in (0, 1)]
            a, b = (
                (shown[0], shown[1])
                if stage == "settings"
                else (f"{a}; {shown[0]}", f"{b}; {shown[1]}")
            )
        rows.append({"stage": stage, "baseline": a, "current": b})
    return rows


def _generator(side: Side) -> Mapping[str, Any] | None:
    return None if side.fixture is None else side.fixture.get("generator")


def _trace(side: Side) -> Mapping[str, Any]:
    assert side.fixture is not None
    trace: Mapping[str, Any] = side.fixture["lookupResult"].get("retrievalTrace") or {}
    return trace  # none (a retriever without one): every field of it is not reported


def _corpus(
    old: Mapping[str, Any], new: Mapping[str, Any], before: Side, after: Side, source: str | None
) -> tuple[str, str]:
    def present(t: Mapping[str, Any]) -> str:
        if "present" not in t:
            return "document not reported"
        return "present" if t["present"] else "absent"

    current = present(new)
    docs = before.documents, after.documents
    if (
        source is not None
        and docs[0] is not None
        and docs[1] is not None
        and source in docs[0]
        and source in docs[1]
        and docs[0][source] != docs[1][source]
    ):
        current += ", document changed"
    if "text" in old and "text" in new:
        if old["text"] == new["text"]:
            current += "; text same"
        else:
            removed, added = word_changes(old["text"], new["text"])
            parts = [f"removed {_quoted(removed)}"] if removed else []
            parts += [f"added {_quoted(added)}"] if added else []
            current += "; text changed" + (f": {'; '.join(parts)}" if parts else "")
    else:
        current += "; text not reported"
    return present(old), current


def _quoted(words: Sequence[str]) -> str:
    return ", ".join(f"'{w}'" for w in words)


def _l0_hint(t: Mapping[str, Any], side: Side, own: Mapping[str, Any]) -> str:
    trace = _trace(side)
    if "l0Hints" not in trace:
        return NOT_REPORTED
    hints = trace["l0Hints"] or {}
    parts = [
        f"{label} {hints[key]}"
        for key, label in (("category", "category"), ("breadcrumbPrefix", "breadcrumb"))
        if hints.get(key)
    ]
    return ", ".join(parts) or "none"


def _attempt(t: Mapping[str, Any], side: Side, own: Mapping[str, Any]) -> str:
    trace = _trace(side)
    if "selectedAttempt" not in trace:
        return NOT_REPORTED
    picked = trace["selectedAttempt"]
    text = f"{picked}"
    for attempt in trace.get("attempts", ()):
        category = (attempt.get("filter") or {}).get("category")
        if attempt.get("name") == picked and category is not None:
            text += f" (category {category})"
    if "fallbackReasons" in trace:
        reasons = trace["fallbackReasons"]
        text += f", fallback {', '.join(reasons)}" if reasons else ", no fallback"
    if "category" in t:
        text += f"; target in {t['category']}"
    return text


def _retrieval(t: Mapping[str, Any], side: Side, own: Mapping[str, Any]) -> str:
    if "lexicalRank" not in t and "vectorRank" not in t:
        return NOT_REPORTED
    return ", ".join(
        f"{name} {_rank(t[key]) if key in t else NOT_REPORTED}"
        for key, name in (("lexicalRank", "lexical"), ("vectorRank", "vector"))
    )


def _place(t: Mapping[str, Any], key: str, what: str) -> str:
    """``2 of 20``: the target's place in a list the rerank trace records."""
    if key not in t:
        return NOT_REPORTED
    listed = t.get("listed")
    if t[key] is None:
        return f"not in the {what} top {listed}" if listed else f"not in the {what} list"
    return f"{t[key]} of {listed}" if listed else str(t[key])


def _fusion(t: Mapping[str, Any], side: Side, own: Mapping[str, Any]) -> str:
    return _place(t, "fusedRank", "fused")


def _rerank(t: Mapping[str, Any], side: Side, own: Mapping[str, Any]) -> str:
    return _place(t, "rerankRank", "reranked")


def _floor(t: Mapping[str, Any], side: Side, own: Mapping[str, Any]) -> str:
    floor = floor_value(side, own)
    conf = t.get("confidence")
    if conf is None and floor is None:
        return NOT_REPORTED
    shown = f"confidence {_value(conf) if conf is not None else NOT_REPORTED}"
    shown += f", floor {_value(floor) if floor is not None else NOT_REPORTED}"
    if conf is not None and floor is not None:
        shown += " (passes)" if conf >= floor else " (below)"
    return shown


def _cut(t: Mapping[str, Any], side: Side, own: Mapping[str, Any]) -> str:
    top_k = own["cut"].get("topK")
    k = f" (topK {top_k})" if top_k is not None else " (topK not reported)"
    rank = t.get("evidenceRank")
    return ("not evidence" if rank is None else f"evidence rank {rank}") + k


def _context(t: Mapping[str, Any], side: Side, own: Mapping[str, Any]) -> str:
    if "inContext" not in t:
        return NOT_REPORTED
    if t["inContext"]:
        return "in the context pack"
    assert side.fixture is not None
    pack = side.fixture["lookupResult"].get("contextPack") or {}
    budget = pack.get("budgetChars")
    return "left out" + (f" (budget {budget} chars)" if budget is not None else "")


_Cell = Callable[[Mapping[str, Any], Side, Mapping[str, Any]], str]
#: stage -> its cell: (the target's trail, the side, its ``stage_settings``) -> text
_CELLS: dict[str, _Cell] = {
    "l0Hint": _l0_hint,
    "attempt": _attempt,
    "retrieval": _retrieval,
    "fusion": _fusion,
    "rerank": _rerank,
    "floor": _floor,
    "cut": _cut,
    "context": _context,
}


def _rank(value: Any) -> str:
    return "none" if value is None else str(value)


def _value(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(map(_value, value)) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_value(v)}" for k, v in value.items()) + "}"
    return "none" if value is None else str(value)


def render_explanation(explanation: Mapping[str, Any]) -> str:
    """The terminal's text of an explanation: the case, where the baseline fixture
    came from, what it lost and where, then one table per expected target."""
    from tabulate import tabulate

    case = explanation["case"]
    levels, passed = explanation["hitLevel"], explanation["passed"]
    lines = [
        f"{case['id']}: {case['query']}",
        f"baseline fixture: {explanation['baselineFixtures']}",
        *(f"note: {note}" for note in explanation["notes"]),
        f"hit level {_value(levels[0])} -> {_value(levels[1])}; "
        f"passed {_yes(passed[0])} -> {_yes(passed[1])}",
        explanation["lostText"]
        if explanation["lost"]
        else "lost nothing: every target the baseline covered is still covered",
    ]
    for cause in explanation["causes"]:
        if explanation["lost"][cause["losses"][0]]["kind"] != "expectation":
            continue
        stage = "no stage differs" if cause["stage"] is None else STAGE_LABELS[cause["stage"]]
        lines.append(f"expectation {cause['target']}: {stage}: {cause['text']}")
    if not explanation["targets"]:
        lines.append("no expected targets (a no-answer case): nothing to follow through the stages")
    for target in explanation["targets"]:
        lines.append("")
        head = f"{target['kind']} {target['target']!r}"
        if target["chunk"] is None:
            lines.append(f"{head}: covered by no chunk on either side")
            continue
        head += f" via chunk {target['chunk']}"
        if target["lost"]:
            where = "no stage differs" if target["stage"] is None else STAGE_LABELS[target["stage"]]
            head += f": LOST ({where})"
        lines.append(head)
        rows = [
            [
                STAGE_LABELS[r["stage"]],
                r["baseline"],
                r["current"],
                _LOST_HERE if r["lostHere"] else "",
            ]
            for r in target["rows"]
        ]
        lines.append(
            tabulate(
                rows, ["stage", "baseline", "current", ""], tablefmt="simple", disable_numparse=True
            )
        )
    return "\n".join(lines) + "\n"


def _yes(value: Any) -> str:
    return "yes" if value else "no"

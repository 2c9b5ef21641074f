"""Where a case lost what it lost: the first pipeline stage at which the baseline
fixture and the current one disagree about the lost target.

Pure functions over two fixtures as JSON (``lookupResult`` and ``generator``), the
diff's ``lost`` list of the case (``ragsnap.scoring.diff.case_lost``) and, when
the fixture manifests record them, each side's corpus documents (source ->
digest, ``ragsnap.snapshot.provenance``).

**Targets.** A lost keyword, breadcrumb or span names the chunk that covered it in
the baseline; a lost source, doc id or judged target names the best-ranked
baseline evidence block that matched it. Losses of the same chunk share one
cause. A lost pipeline expectation is attributed over the whole lookup.

**A target's trail** (``trail``): where the chunk stood at each stage in one
fixture, read only from what the fixture records: its ``category`` and ``text``
(evidence block), its ``lexicalRank`` / ``vectorRank`` (evidence block metadata or
rerank trace item; null: that list did not find it), ``fusedRank`` (its place in
the rerank trace's ``before`` list: the fused order), ``rerankRank`` (in
``after``), ``confidence``, ``evidenceRank``, ``inContext`` and ``text`` (the
evidence block's: what a reader compares side by side). A field the
fixture does not record for it is left out: it is *not reported*, never guessed.
A fixture without a rerank trace, a retrieval trace or a context pack (a retriever
that does not report them) records none of their fields; the L0 hint and attempt
stages are compared only when both fixtures have a retrieval trace.

**Stages** (``STAGES``, pipeline order); the cause is the first that differs:

* ``corpus``: the target's document is absent from the current knowledge base
  (manifest), or its chunk text no longer holds a lost keyword or span
  (``evidence.removed`` / ``added``: the words that went and came). A text
  change that kept what the case expects but moved the chunk (a query term
  removed) is evidence of the stage where it moved; one that moved nothing is
  the cause last;
* ``settings``: a setting that shapes every stage differs (method, backend,
  embedder, pipeline version, segmenter, candidates ...); a setting owned by a
  later stage is that stage's evidence instead (fusion weights -> fusion, rerank
  weights and depth -> rerank, ``minScore`` / ``relativeScore`` /
  ``sufficientScore`` -> floor, ``topK`` -> cut, ``contextBudgetChars`` ->
  context, ``weakScore`` -> attempt, ``hints`` -> L0 hint);
* ``l0Hint``: the hinted category or breadcrumb prefix differs while a filtered
  attempt was selected on either side;
* ``attempt``: another attempt was selected or the fallback reasons differ, or
  the selected filtered attempt's category is not the target's (filtered out);
* ``retrieval``: the target's lexical or vector rank moved;
* ``fusion``: both ranks agree but its place in the fused order moved;
* ``rerank``: the fused place agrees but the reranked place moved;
* ``floor``: it is still in the reranked list but its confidence is below the
  floor (``max(minScore, relativeScore x the attempt's top confidence)``), or the
  candidates above it pass the floor differently;
* ``cut``: it passes the floor but falls past ``topK``;
* ``context``: it is evidence but its source left the context pack (budget).

When the current fixture no longer records the target at all (it left the fused
head the trace lists), the stages it cannot show are ``unreported`` and the
cause is the first of them (``retrieval``): a reader sees the trail went cold
there, not a guess. A document whose digest changed is noted in the evidence
(``documentChanged``) and is the cause only when no recorded stage differs. No
difference at all is stage null (the golden case or the scoring rules changed,
not the lookup). Cause names are ids and positions, never guessed from case or
document names.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .hits import normalize

__all__ = [
    "STAGES",
    "STAGE_LABELS",
    "Side",
    "attribute_case",
    "attribute_diff",
    "cause_text",
    "floor_value",
    "settings_moved",
    "stage_settings",
    "target_chunk",
    "trail",
    "word_changes",
    "word_diff",
]

STAGES = (
    "corpus",
    "settings",
    "l0Hint",
    "attempt",
    "retrieval",
    "fusion",
    "rerank",
    "floor",
    "cut",
    "context",
)
#: how a stage is named in one line of text
STAGE_LABELS = {
    "corpus": "corpus",
    "settings": "settings",
    "l0Hint": "L0 hint",
    "attempt": "attempt",
    "retrieval": "retrieval",
    "fusion": "fusion",
    "rerank": "rerank",
    "floor": "floor",
    "cut": "cut",
    "context": "context",
}
#: generator.settings keys owned by one stage (the rest belong to ``settings``)
_OWNED = {
    "fusion": "fusion",
    "reranker": "rerank",
    "rerankDepth": "rerank",
    "rerankWeights": "rerank",
    "minScore": "floor",
    "relativeScore": "floor",
    "sufficientScore": "floor",
    "contextBudgetChars": "context",
    "weakScore": "attempt",
    "hints": "l0Hint",
}
#: generator keys (outside ``settings``) that shape every stage
_GLOBAL = ("backend", "method", "embedder", "pipelineVersion", "kbScope")
#: words of a text diff shown
_WORDS_SHOWN = 6
_WORD = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff]|[^\W_]+(?:[-.:/'][^\W_]+)*|\S")


@dataclass(frozen=True, slots=True)
class Side:
    """One side of the comparison: a fixture's JSON (None: no fixture for the case)
    and its manifest's corpus documents (source -> digest; None: not recorded)."""

    fixture: Mapping[str, Any] | None
    documents: Mapping[str, str] | None = None


def stage_settings(generator: Mapping[str, Any] | None) -> dict[str, dict[str, Any]]:
    """A generator's settings by the stage that owns them (``topK`` -> cut)."""
    out: dict[str, dict[str, Any]] = {stage: {} for stage in STAGES}
    if generator is None:
        return out
    for key in _GLOBAL:
        if key in generator:
            out["settings"][key] = generator[key]
    if "topK" in generator:
        out["cut"]["topK"] = generator["topK"]
    for key, value in (generator.get("settings") or {}).items():
        out[_OWNED.get(key, "settings")][key] = value
    return out


def settings_moved(before: Side, after: Side) -> dict[str, dict[str, list[Any]]]:
    """stage -> setting -> [baseline, current], for the settings that differ
    (``stage_settings`` of each side's generator)."""
    old = stage_settings(_generator(before))
    new = stage_settings(_generator(after))
    moved: dict[str, dict[str, list[Any]]] = {}
    for stage in STAGES:
        for key in sorted(set(old[stage]) | set(new[stage])):
            a, b = old[stage].get(key), new[stage].get(key)
            if a != b:
                moved.setdefault(stage, {})[key] = [a, b]
    return moved


def _generator(side: Side) -> Mapping[str, Any] | None:
    return None if side.fixture is None else side.fixture.get("generator")


def _result(side: Side) -> Mapping[str, Any]:
    return {} if side.fixture is None else side.fixture["lookupResult"]


def word_changes(before: str, after: str) -> tuple[list[str], list[str]]:
    """The runs of words ``before`` lost and ``after`` gained (CJK by character),
    each run joined as it read, at most ``_WORDS_SHOWN`` runs a side."""
    a, b = _WORD.findall(before), _WORD.findall(after)
    removed: list[str] = []
    added: list[str] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op in ("replace", "delete") and len(removed) < _WORDS_SHOWN:
            removed.append(_join(a[i1:i2]))
        if op in ("replace", "insert") and len(added) < _WORDS_SHOWN:
            added.append(_join(b[j1:j2]))
    return removed, added


def word_diff(before: str, after: str) -> tuple[list[tuple[str, bool]], list[tuple[str, bool]]]:
    """``before`` and ``after`` as runs of (text, changed), read as they are
    (whitespace kept): the word runs ``word_changes`` names (every one of them)
    are marked, removed ones in ``before``, added ones in ``after``."""
    a, b = list(_WORD.finditer(before)), list(_WORD.finditer(after))
    words = [m.group() for m in a], [m.group() for m in b]
    gone: list[tuple[int, int]] = []
    came: list[tuple[int, int]] = []
    matcher = difflib.SequenceMatcher(a=words[0], b=words[1], autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op in ("replace", "delete"):
            gone.append((a[i1].start(), a[i2 - 1].end()))
        if op in ("replace", "insert"):
            came.append((b[j1].start(), b[j2 - 1].end()))
    return _runs(before, gone), _runs(after, came)


def _runs(text: str, marked: Sequence[tuple[int, int]]) -> list[tuple[str, bool]]:
    out: list[tuple[str, bool]] = []
    at = 0
    for start, end in marked:
        if start > at:
            out.append((text[at:start], False))
        out.append((text[start:end], True))
        at = end
    if at < len(text):
        out.append((text[at:], False))
    return out


def _join(words: Sequence[str]) -> str:
    out = ""
    for w in words:
        cjk = len(w) == 1 and "\u3040" <= w <= "\ufaff"
        out += w if not out or cjk or (len(out) and "\u3040" <= out[-1] <= "\ufaff") else " " + w
    return out


def _find(items: Sequence[Mapping[str, Any]], chunk: str) -> tuple[int, Mapping[str, Any]] | None:
    for i, item in enumerate(items, 1):
        if item.get("chunkId") == chunk:
            return i, item
    return None


def trail(side: Side, chunk: str, source: str | None) -> dict[str, Any]:
    """Where ``chunk`` stood at each stage of ``side``'s fixture (module docstring);
    fields the fixture does not record for it are left out."""
    out: dict[str, Any] = {}
    if side.fixture is None:
        return out
    if side.documents is not None and source is not None:
        out["present"] = source in side.documents
    result = _result(side)
    rerank = result.get("rerankTrace") or {}
    applied = bool(rerank.get("applied"))
    blocks = result["evidenceBlocks"]
    found = _find(blocks, chunk)
    before, after = rerank.get("before") or [], rerank.get("after") or []
    fused, reranked = _find(before, chunk), _find(after, chunk)
    for hit in (found, fused, reranked):  # the first record that has them
        if hit is None:
            continue
        item = hit[1]
        meta = item.get("metadata", item)
        for key in ("lexicalRank", "vectorRank", "confidence"):
            if key in meta and key not in out:
                out[key] = meta[key]
        if "category" in meta and "category" not in out:
            out["category"] = meta["category"]
    if found is not None and "lexicalRank" in out and "vectorRank" not in out:
        out["vectorRank"] = None  # an evidence block leaves out the list that missed it
    if found is not None and "vectorRank" in out and "lexicalRank" not in out:
        out["lexicalRank"] = None
    if before:  # a service without a rerank trace records none of these
        out["fusedRank"] = None if fused is None else fused[0]
        out["listed"] = len(before)
        if applied:
            out["rerankRank"] = None if reranked is None else reranked[0]
    out["evidenceRank"] = None if found is None else found[0]
    if found is not None:
        out["text"] = found[1]["text"]
        pack = result.get("contextPack") or {}
        if "sources" in pack:
            out["inContext"] = found[1]["source"] in pack["sources"]
    return out


def target_chunk(
    entry: Mapping[str, Any], blocks: Sequence[Mapping[str, Any]]
) -> tuple[str, str | None] | None:
    """The baseline chunk a loss (a ``lost`` entry, or an expected target in that
    form) is about, and its source (None: not found in ``blocks``)."""
    kind, target = entry["kind"], entry["target"]
    if kind in ("keyword", "breadcrumb", "span"):
        chunk = entry["before"]
        hit = _find(blocks, chunk)
        return chunk, None if hit is None else hit[1]["source"]
    fields = {"source": ("source",), "docId": ("docId",)}.get(kind, ("chunkId", "docId", "source"))
    for block in blocks:  # best first
        if any(block.get(f) == target for f in fields):
            return block["chunkId"], block["source"]
    return None


def floor_value(side: Side, settings: Mapping[str, Any]) -> float | None:
    """The confidence floor of ``side``'s selected attempt, ``max(minScore,
    relativeScore x its top confidence)`` (``settings``: ``stage_settings``); None
    when the fixture does not record one of them."""
    trace = _result(side).get("retrievalTrace") or {}
    selected = trace.get("selectedAttempt")
    top = next(
        (a.get("topScore") for a in trace.get("attempts", ()) if a.get("name") == selected), None
    )
    floor_settings = settings.get("floor", {})
    low, share = floor_settings.get("minScore"), floor_settings.get("relativeScore")
    if low is None or share is None or top is None:
        return None
    return round(max(float(low), float(share) * float(top)), 6)


def _hints_matter(before: Side, after: Side) -> bool:
    def filtered(side: Side) -> bool:
        trace = _result(side).get("retrievalTrace") or {}
        return bool(trace.get("selectedAttempt") == "filtered")

    return filtered(before) or filtered(after)


def _cause(
    stage: str | None,
    target: str,
    old: dict[str, Any],
    new: dict[str, Any],
    evidence: dict[str, Any],
    unreported: Sequence[str] = (),
) -> dict[str, Any]:
    return {
        "stage": stage,
        "target": target,
        "before": old,
        "after": new,
        "evidence": evidence,
        "unreported": list(unreported),
    }


def _pipeline_stage(
    before: Side, after: Side, moved: Mapping[str, Mapping[str, list[Any]]]
) -> tuple[str | None, dict[str, Any]]:
    """The first of settings / L0 hint / attempt at which the two lookups differ (the
    last two only when both fixtures have a retrieval trace)."""
    if "settings" in moved:
        return "settings", {"settings": dict(moved["settings"])}
    old, new = _result(before).get("retrievalTrace"), _result(after).get("retrievalTrace")
    if old is None or new is None:
        return None, {}
    hints = old.get("l0Hints"), new.get("l0Hints")
    if hints[0] != hints[1] and _hints_matter(before, after):
        ev: dict[str, Any] = {"l0Hints": list(hints)}
        if "l0Hint" in moved:
            ev["settings"] = dict(moved["l0Hint"])
        return "l0Hint", ev
    picked = old.get("selectedAttempt"), new.get("selectedAttempt")
    reasons = old.get("fallbackReasons"), new.get("fallbackReasons")
    if picked[0] != picked[1] or reasons[0] != reasons[1]:
        ev = {
            "selectedAttempt": list(picked),
            "fallbackReasons": list(reasons),
            "attempts": [_attempts(old), _attempts(new)],
        }
        # an attempt's hits are the candidates that reach minScore: its floor decides too
        owned = {**moved.get("attempt", {}), **moved.get("floor", {})}
        if owned:
            ev["settings"] = owned
        return "attempt", ev
    return None, {}


def _attempts(trace: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [
        {k: a.get(k) for k in ("name", "hitCount", "topScore", "filter")}
        for a in trace.get("attempts", ())
    ]


def _with(
    ev: dict[str, Any], moved: Mapping[str, Mapping[str, list[Any]]], stage: str
) -> dict[str, Any]:
    if stage in moved:
        ev["settings"] = dict(moved[stage])
    return ev


def _target_cause(
    chunk: str, source: str | None, lost: Sequence[Mapping[str, Any]], before: Side, after: Side
) -> dict[str, Any]:
    old, new = trail(before, chunk, source), trail(after, chunk, source)
    moved = settings_moved(before, after)
    settings_new = stage_settings(_generator(after))
    settings_old = stage_settings(_generator(before))
    docs_old, docs_new = before.documents, after.documents
    changed_doc = (
        source is not None
        and docs_old is not None
        and docs_new is not None
        and source in docs_old
        and source in docs_new
        and docs_old[source] != docs_new[source]
    )
    text: dict[str, Any] = {}
    if "text" in old and "text" in new and old["text"] != new["text"]:
        removed, added = word_changes(old["text"], new["text"])
        text = {"textChanged": True, "removed": removed, "added": added}

    def cause(
        stage: str | None, ev: dict[str, Any], unreported: Sequence[str] = ()
    ) -> dict[str, Any]:
        if stage != "corpus":
            ev.update(text)  # a text change is noted where it moved the target
            if changed_doc and not text:
                ev["documentChanged"] = source
        return _cause(stage, chunk, old, new, ev, unreported)

    # corpus: the document is gone, or the text lost what the case expects of it
    if new.get("present") is False and old.get("present") is not False:
        return cause("corpus", {"document": source, "absent": True})
    if text and _content_gone(lost, new["text"]):
        return cause("corpus", text)
    # settings, L0 hint, attempt
    stage, ev = _pipeline_stage(before, after, moved)
    if stage is not None:
        return cause(stage, ev)
    selected = _result(after).get("retrievalTrace") or {}
    picked = selected.get("selectedAttempt")
    for attempt in selected.get("attempts", ()):
        category = (attempt.get("filter") or {}).get("category")
        if (
            attempt.get("name") == picked
            and category is not None
            and old.get("category") not in (None, category)
        ):
            return cause(
                "attempt",
                {"filteredOut": True, "filter": category, "category": old.get("category")},
            )
    if "category" in old and "category" in new and old["category"] != new["category"]:
        return cause("attempt", {"category": [old["category"], new["category"]]})
    # retrieval and fusion
    ranks = ("lexicalRank", "vectorRank")
    known = all(k in new for k in ranks) and all(k in old for k in ranks)
    if known and any(old[k] != new[k] for k in ranks):
        return cause("retrieval", _with({k: [old[k], new[k]] for k in ranks}, moved, "retrieval"))
    if new.get("fusedRank") is None and new.get("evidenceRank") is None and not known:
        # it left every list the current fixture records: the trail goes cold
        if changed_doc:
            return _cause("corpus", chunk, old, new, {"documentChanged": source}, ("retrieval",))
        ev = {"listed": new.get("listed") or 0}
        for stage in ("fusion", "rerank"):
            _with(ev, moved, stage)
        return cause("retrieval", ev, ("retrieval", "fusion"))
    if "fusedRank" in old and "fusedRank" in new and old["fusedRank"] != new["fusedRank"]:
        return cause(
            "fusion", _with({"fusedRank": [old["fusedRank"], new["fusedRank"]]}, moved, "fusion")
        )
    if "rerankRank" in old and "rerankRank" in new and old["rerankRank"] != new["rerankRank"]:
        return cause(
            "rerank", _with({"rerankRank": [old["rerankRank"], new["rerankRank"]]}, moved, "rerank")
        )
    # floor and cut
    floors = [floor_value(before, settings_old), floor_value(after, settings_new)]
    top_k = [settings_old["cut"].get("topK"), settings_new["cut"].get("topK")]
    if new.get("evidenceRank") is None:
        conf = new.get("confidence")
        if conf is not None and floors[1] is not None and conf < floors[1]:
            return cause("floor", _with({"confidence": conf, "floor": floors}, moved, "floor"))
        if conf is None:
            return cause("cut", _with({"topK": top_k}, moved, "cut"), ("floor",))
        return cause(
            "cut", _with({"topK": top_k, "confidence": conf, "floor": floors}, moved, "cut")
        )
    if old.get("evidenceRank") != new.get("evidenceRank"):
        return cause(
            "floor",
            _with(
                {
                    "evidenceRank": [old.get("evidenceRank"), new.get("evidenceRank")],
                    "floor": floors,
                },
                moved,
                "floor",
            ),
        )
    if old.get("inContext") and new.get("inContext") is False:
        pack = _result(after).get("contextPack") or {}
        return cause(
            "context",
            _with(
                {"budgetChars": pack.get("budgetChars"), "charCount": pack.get("charCount")},
                moved,
                "context",
            ),
        )
    if text:  # it stood where it stood: what changed is its text
        return cause("corpus", text)
    if changed_doc:
        return _cause("corpus", chunk, old, new, {"documentChanged": source})
    return cause(None, {})


def _content_gone(lost: Sequence[Mapping[str, Any]], text: str) -> bool:
    """Whether a lost keyword or span of the chunk is no longer in its ``text``."""
    held = normalize(text)
    return any(
        e["kind"] in ("keyword", "span") and normalize(e["target"]) not in held for e in lost
    )


def _expectation_cause(name: str, before: Side, after: Side) -> dict[str, Any]:
    moved = settings_moved(before, after)
    stage, ev = _pipeline_stage(before, after, moved)
    if stage is None:
        stage = {
            "selectedAttempt": "attempt",
            "fallbackReasons": "attempt",
            "fallbackReason": "attempt",
            "evidenceStatus": "floor",
            "rerankTopSource": "rerank",
            "contextSources": "context",
        }.get(name)
        old, new = _result(before), _result(after)
        if stage == "floor":
            ev = {
                "evidenceStatus": [
                    (old.get("retrievalTrace") or {}).get("evidenceStatus"),
                    (new.get("retrievalTrace") or {}).get("evidenceStatus"),
                ]
            }
        elif stage == "rerank":
            ev = {"rerankTop": [_top(old), _top(new)]}
        elif stage == "context":
            ev = {"contextSources": [_pack(old), _pack(new)]}
        else:
            stage = None
        if stage is not None:
            _with(ev, moved, stage)
    return _cause(stage, name, {}, {}, ev)


def _top(result: Mapping[str, Any]) -> str | None:
    after = (result.get("rerankTrace") or {}).get("after") or []
    return after[0]["source"] if after else None


def _pack(result: Mapping[str, Any]) -> list[str] | None:
    pack = result.get("contextPack") or {}
    return pack.get("sources")


def attribute_case(
    lost: Sequence[Mapping[str, Any]], before: Side, after: Side
) -> list[dict[str, Any]]:
    """One cause per lost chunk (its losses' indices in ``losses``) and per lost
    expectation, in the order of ``lost``; [] when either fixture is missing."""
    if before.fixture is None or after.fixture is None:
        return []
    blocks = _result(before)["evidenceBlocks"]
    slots: list[tuple[str, Any]] = []  # ("expectation", index) or ("chunk", chunk id)
    chunks: dict[str, tuple[str | None, list[int]]] = {}
    for index, entry in enumerate(lost):
        if entry["kind"] == "expectation":
            slots.append(("expectation", index))
            continue
        located = target_chunk(entry, blocks)
        if located is None:
            continue
        chunk, source = located
        if chunk not in chunks:
            chunks[chunk] = (source, [])
            slots.append(("chunk", chunk))
        chunks[chunk][1].append(index)
    causes: list[dict[str, Any]] = []
    for kind, key in slots:
        if kind == "expectation":
            one = _expectation_cause(lost[key]["target"], before, after)
            one["losses"] = [key]
        else:
            source, losses = chunks[key]
            one = _target_cause(key, source, [lost[i] for i in losses], before, after)
            one["losses"] = losses
        causes.append(one)
    return causes


def _quote(words: Sequence[str]) -> str:
    return ", ".join(f"'{w if len(w) <= 30 else w[:29] + '…'}'" for w in words[:2])


def cause_text(cause: Mapping[str, Any]) -> str:
    """``log-retention#1 text changed: removed '14 days'``: a cause in a few words (a
    text change that moved the target at a later stage is said after it)."""
    text = _stage_text(cause)
    ev = cause["evidence"]
    if cause["stage"] != "corpus" and ev.get("textChanged"):
        text += f"; its text changed: {_changed_words(ev)}"
    elif cause["stage"] != "corpus" and ev.get("documentChanged"):
        text += f"; its document {ev['documentChanged']} changed"
    return text


def _changed_words(ev: Mapping[str, Any]) -> str:
    if "removed" not in ev:  # a privacy view counts the changed words
        runs = ev.get("removedCount", 0), ev.get("addedCount", 0)
        return f"{runs[0]} word run(s) removed, {runs[1]} added"
    parts = [f"removed {_quote(ev['removed'])}"] if ev["removed"] else []
    parts += [f"added {_quote(ev['added'])}"] if ev["added"] and not ev["removed"] else []
    return "; ".join(parts) or "whitespace"


def _stage_text(cause: Mapping[str, Any]) -> str:
    stage, target, ev = cause["stage"], cause["target"], cause["evidence"]
    old, new = cause["before"], cause["after"]
    if stage is None:
        return f"{target}: the fixtures agree (the golden case or the scoring changed)"
    if stage == "corpus":
        if ev.get("absent"):
            return f"{target}: document {ev.get('document')} absent from the knowledge base"
        if ev.get("textChanged"):
            return f"{target} text changed: {_changed_words(ev)}"
        return f"{target}: its document {ev.get('documentChanged')} changed"
    settings = ev.get("settings") or {}
    moved = ", ".join(f"{k} {_short(v[0])} -> {_short(v[1])}" for k, v in settings.items())
    tail = f" ({moved})" if moved else ""
    if stage == "settings":
        return f"settings changed{tail}"
    if stage == "l0Hint":
        a, b = ev["l0Hints"]
        return f"L0 hint {_hint(a)} -> {_hint(b)}{tail}"
    if stage == "attempt":
        if ev.get("filteredOut"):
            return (
                f"{target} filtered out (category {ev.get('category')}, filter {ev.get('filter')})"
            )
        if "category" in ev:
            a, b = ev["category"]
            return f"{target} category {a} -> {b}"
        a, b = ev["selectedAttempt"]
        r0, r1 = (_short(r) for r in ev["fallbackReasons"])
        return f"attempt {a} -> {b}, fallback {r0} -> {r1}{tail}"
    if stage == "retrieval":
        if cause["unreported"]:
            listed = ev.get("listed")
            depth = f" top {listed}" if listed else ""
            return (
                f"{target} left the fused{depth} list (retrieval / fusion ranks not reported){tail}"
            )
        parts = [
            f"{k[:-4]} rank {_rank(ev[k][0])} -> {_rank(ev[k][1])}"
            for k in ("lexicalRank", "vectorRank")
            if ev[k][0] != ev[k][1]
        ]
        return f"{target} {', '.join(parts)}{tail}"
    if stage in ("fusion", "rerank"):
        key = "fusedRank" if stage == "fusion" else "rerankRank"
        a, b = ev.get(key, [old.get(key), new.get(key)])
        place = "fused" if stage == "fusion" else "reranked"
        a_text, b_text = _rank(a, old.get("listed")), _rank(b, new.get("listed"))
        return f"{target} {place} rank {a_text} -> {b_text}{tail}"
    if stage == "floor":
        if "confidence" in ev:
            return f"{target} confidence {ev['confidence']} below the floor {ev['floor'][1]}{tail}"
        if "evidenceStatus" in ev:
            a, b = ev["evidenceStatus"]
            return f"evidence status {a} -> {b}{tail}"
        a, b = ev["evidenceRank"]
        return f"{target} evidence rank {_rank(a)} -> {_rank(b)} (the floor passes others){tail}"
    if stage == "cut":
        return f"{target} fell past topK{tail}"
    if "contextSources" in ev:
        return f"context sources changed{tail}"
    return f"{target} left the context pack (budget {ev.get('budgetChars')}){tail}"


def _rank(value: Any, listed: int | None = None) -> str:
    if value is None:
        return f"below the top {listed} listed" if listed else "none"
    return str(value)


def _hint(hints: Any) -> str:
    if not hints:
        return "none"
    return str(hints.get("category") or hints.get("breadcrumbPrefix") or "none")


def _short(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(map(str, value)) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {v}" for k, v in value.items()) + "}"
    return str(value)


def attribute_diff(
    diff: dict[str, Any], sides: Mapping[str, tuple[Side, Side]], label: str | None
) -> None:
    """Add ``attribution`` (``attribute_case``) to every diff case with a ``lost`` list
    whose fixtures ``sides`` holds (case id -> (baseline, current)), and the diff's
    ``attribution`` record: where the baseline fixtures came from (``label``; None:
    none were found) and how many cases got causes."""
    attributed = 0
    for case in diff["cases"]:
        if not case.get("lost") or case["id"] not in sides:
            continue
        before, after = sides[case["id"]]
        causes = attribute_case(case["lost"], before, after)
        if causes:
            case["attribution"] = causes
            attributed += 1
    diff["attribution"] = {"baselineFixtures": label, "attributedCases": attributed}

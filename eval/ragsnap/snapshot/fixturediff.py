"""Semantic comparison of two fixtures: what moved, and whether it is beyond the tolerance.

``compare_fixtures(old, new, tolerance)`` walks both fixtures field by field.
It compares the *retrieval*, the part of a fixture a golden case and a reviewer
look at:

- **identities compare exactly**: evidence blocks (chunk ids, sources, doc ids,
  titles, breadcrumbs, texts, ranks), the context pack, the retrieval trace's
  decisions (L0 hints, attempts and their filters, selected attempt, fallback
  reasons, evidence status), the rerank order of the first ``topK`` items of
  the rerank trace, and every field of the ``generator`` block (the settings
  that produced the fixture);
- **numbers compare within the tolerance**: a score, confidence or cosine
  moved when ``|old - new| > tolerance`` (absolute; ``snapshot.tolerance`` in
  ragsnap.yaml, default 1e-4; scores live in [0, 1]). Integers are identities.

Some fields are **diagnostics**: recorded to explain a result and refreshed
whenever the fixture is written, but never by themselves a change, because
they move with an edit anywhere in the corpus or deep in the candidate lists:
an evidence block's raw ``metadata.bm25`` (it depends on the corpus's size and
average length), ``metadata.fused``, ``metadata.lexicalRank`` and
``metadata.vectorRank`` (positions among all candidates), an attempt's
``hitCount``, the scores, confidences and list ranks in the rerank trace (the
evidence blocks carry the same numbers for what reached the evidence; the
trace's order is compared) and
rerank-trace items below ``topK``. ``retrievedAt`` and every
``latencyMs`` are never compared.

Lists of evidence blocks and ranked items are aligned by ``chunkId``, attempts
by ``name`` (by position when those are missing or repeated), so a change is
named where it happened::

    lookupResult.evidenceBlocks[mysql-connection-pool#2].rank 1 -> 3
    lookupResult.rerankTrace.after[redis-eviction-policy#1] position 2 -> 1
    generator.settings.minScore 0.22 -> 0.3

A fixture without a change is the same retrieval: ``ragsnap snapshot`` leaves
its bytes alone and ``--check`` passes. Changes are listed settings first, then
rank moves, then other identities, then numbers.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..settings import SNAPSHOT_TOLERANCE

__all__ = [
    "DEFAULT_TOLERANCE",
    "Change",
    "FixtureComparison",
    "compare_fixtures",
    "fixture_changes",
]

DEFAULT_TOLERANCE = SNAPSHOT_TOLERANCE

#: never compared: when the fixture was taken, and how long it took
_VOLATILE = frozenset({"retrievedAt", "latencyMs"})
#: list items are aligned by the first of these keys that every item has, once
_ITEM_KEYS = ("chunkId", "name")
_KINDS = ("setting", "rank", "identity", "number")
_RANK_KEYS = frozenset({"rank", "lexicalRank", "vectorRank"})
_WIDTH = 48  # characters of a value in a one-line description
#: absorbs the binary representation of decimals: 0.01007 - 0.00997 is 1.0000000000000113e-4
_HAIR = 1e-12


class _Absent:
    """A field or list item that one side does not have."""

    def __repr__(self) -> str:
        return "absent"


ABSENT: Any = _Absent()


@dataclass(frozen=True, slots=True)
class Change:
    """One difference: ``kind`` is setting, rank, identity or number."""

    kind: str
    path: str
    old: Any
    new: Any

    def describe(self) -> str:
        """``path old -> new``, values shortened for one line (two texts from
        just before where they first differ)."""
        old, new = self.old, self.new
        if isinstance(old, str) and isinstance(new, str) and max(len(old), len(new)) > _WIDTH:
            start = max(0, _common_prefix(old, new) - 12)
            if start > 0:
                old, new = "…" + old[start:], "…" + new[start:]
        if self.kind == "rank" and self.path.endswith("]"):  # a list item's position
            return f"{self.path} position {_show(old)} -> {_show(new)}"
        return f"{self.path} {_show(old)} -> {_show(new)}"


@dataclass(frozen=True, slots=True)
class FixtureComparison:
    """The changes beyond the tolerance, how many numbers moved within it, and how
    many diagnostic fields moved."""

    changes: tuple[Change, ...]
    within_tolerance: int
    diagnostics: int  # diagnostic fields that moved (never a change by themselves)
    tolerance: float

    @property
    def changed(self) -> bool:
        """Whether the retrieval differs (a change beyond the tolerance)."""
        return bool(self.changes)

    def of_kind(self, kind: str) -> list[Change]:
        return [c for c in self.changes if c.kind == kind]


def compare_fixtures(
    old: Mapping[str, Any], new: Mapping[str, Any], tolerance: float = DEFAULT_TOLERANCE
) -> FixtureComparison:
    """Compare two fixtures (see the module docstring); the order of arguments is
    the order of time.

    Both fixtures are first put in a canonical form (volatile fields dropped,
    diagnostics set apart, keyed lists turned into mappings by chunk id or
    name with each item's position, the rerank trace cut at ``topK``); deepdiff
    then finds every difference between the two forms, and each one is
    classified here (setting, rank, identity, number) and held against the
    tolerance.
    """
    if _identical(old, new):  # the common case, at a fraction of the cost
        return FixtureComparison((), 0, 0, tolerance)
    generator = new.get("generator")
    head = generator.get("topK") if isinstance(generator, Mapping) else None
    depth = head if isinstance(head, int) and not isinstance(head, bool) else None
    canonical = _Canonical(depth)
    a, b = canonical.forms(old, new, ())
    first, second = canonical.diagnostics  # those of items both sides hold
    moved = sum(first[k] != second[k] for k in first.keys() & second.keys())
    if a == b and _same_types(a, b):  # only diagnostics or volatile fields moved
        return FixtureComparison((), 0, moved, tolerance)
    from deepdiff import DeepDiff  # imported only when something differs (~0.5 s)

    order = {path: i for i, path in enumerate(_paths(a, ()))}  # old's order, then new's
    order.update({p: len(order) + i for i, p in enumerate(_paths(b, ())) if p not in order})
    found: list[tuple[int, Change]] = []
    within = 0
    diff = DeepDiff(a, b, view="tree", verbose_level=2)
    for report, items in diff.items():
        for item in items:
            steps = tuple(item.path(output_format="list"))
            left = ABSENT if report.endswith("_added") else item.t1
            right = ABSENT if report.endswith("_removed") else item.t2
            for where, change in _classify(steps, left, right, depth):
                if change.kind == "number" and abs(change.old - change.new) <= tolerance + _HAIR:
                    within += 1
                    continue
                found.append((order.get(where, len(order)), change))
    found.sort(key=lambda x: (_KINDS.index(x[1].kind), x[0]))
    return FixtureComparison(tuple(c for _, c in found), within, moved, tolerance)


#: an evidence block's metadata that moves with the whole corpus or the candidate lists
_DIAGNOSTIC_METADATA = frozenset({"bm25", "fused", "lexicalRank", "vectorRank"})
#: a rerank trace item's fields that move with the corpus or the lists
_DIAGNOSTIC_ITEM = frozenset({"score", "confidence", "lexicalRank", "vectorRank"})
_POSITION = "\x00position"  # the canonical form's key for a keyed list item's position
_RERANK_LISTS = (
    ("lookupResult", "rerankTrace", "before"),
    ("lookupResult", "rerankTrace", "after"),
)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _item_key(items: Sequence[Any]) -> str | None:
    """The key that names every item of ``items`` uniquely, if there is one."""
    if not items or not all(isinstance(x, Mapping) for x in items):
        return None
    for key in _ITEM_KEYS:
        names = [x.get(key) for x in items]
        if all(isinstance(n, str) for n in names) and len(set(names)) == len(names):
            return key
    return None


def _diagnostic(steps: tuple[Any, ...]) -> bool:
    """Whether the field at ``steps`` is a diagnostic (see the module docstring)."""
    if len(steps) == 5 and steps[:2] == ("lookupResult", "evidenceBlocks"):
        return bool(steps[3] == "metadata" and steps[4] in _DIAGNOSTIC_METADATA)
    if len(steps) == 5 and steps[:3] == ("lookupResult", "retrievalTrace", "attempts"):
        return bool(steps[4] == "hitCount")
    if len(steps) == 5 and steps[:2] == ("lookupResult", "rerankTrace"):
        return bool(steps[2] in ("before", "after") and steps[4] in _DIAGNOSTIC_ITEM)
    return False


class _Canonical:
    """Both fixtures' canonical forms for deepdiff, and their diagnostics by path.

    A list is keyed only when both sides can be keyed by the same field;
    otherwise both compare by position."""

    def __init__(self, depth: int | None):
        self.depth = depth
        self.diagnostics: tuple[dict[tuple[Any, ...], Any], dict[tuple[Any, ...], Any]] = ({}, {})

    def forms(self, a: Any, b: Any, steps: tuple[Any, ...]) -> tuple[Any, Any]:
        if isinstance(a, Mapping) or isinstance(b, Mapping):
            if not (isinstance(a, Mapping) and isinstance(b, Mapping)):
                return self.alone(a, steps, 0), self.alone(b, steps, 1)
            out: tuple[dict[Any, Any], dict[Any, Any]] = ({}, {})
            for key in list(a) + [k for k in b if k not in a]:
                here = (*steps, key)
                if key in _VOLATILE:
                    continue
                if _diagnostic(here):
                    for side, value in enumerate((a, b)):
                        if key in value:
                            self.diagnostics[side][here] = value[key]
                    continue
                if key not in b:
                    out[0][key] = self.alone(a[key], here, 0)
                elif key not in a:
                    out[1][key] = self.alone(b[key], here, 1)
                else:
                    out[0][key], out[1][key] = self.forms(a[key], b[key], here)
            return out
        if isinstance(a, list) and isinstance(b, list):
            return self.lists(a, b, steps)
        return self.alone(a, steps, 0), self.alone(b, steps, 1)

    def lists(self, a: list[Any], b: list[Any], steps: tuple[Any, ...]) -> tuple[Any, Any]:
        if self.depth is not None and steps in _RERANK_LISTS:
            tail = (*steps, "below")
            self.diagnostics[0][tail], self.diagnostics[1][tail] = a[self.depth :], b[self.depth :]
            a, b = a[: self.depth], b[: self.depth]
        key = _item_key(a) if a else _item_key(b)
        if key is None or (a and b and _item_key(b) != key):
            n = min(len(a), len(b))
            pairs = [self.forms(a[i], b[i], (*steps, i)) for i in range(n)]
            left = [x for x, _ in pairs] + [
                self.alone(a[i], (*steps, i), 0) for i in range(n, len(a))
            ]
            right = [y for _, y in pairs] + [
                self.alone(b[i], (*steps, i), 1) for i in range(n, len(b))
            ]
            return left, right
        before = {f"[{x[key]}]": (i, x) for i, x in enumerate(a)}
        after = {f"[{x[key]}]": (i, x) for i, x in enumerate(b)}
        out: tuple[dict[Any, Any], dict[Any, Any]] = ({}, {})
        for name in list(before) + [n for n in after if n not in before]:
            here = (*steps, name)
            if name in before and name in after:
                out[0][name], out[1][name] = self.forms(before[name][1], after[name][1], here)
            elif name in before:
                out[0][name] = self.alone(before[name][1], here, 0)
            else:
                out[1][name] = self.alone(after[name][1], here, 1)
            for side, named in enumerate((before, after)):
                if name in named and "rank" not in named[name][1]:  # blocks carry their rank
                    out[side][name][_POSITION] = named[name][0] + 1
        return out

    def alone(self, value: Any, steps: tuple[Any, ...], side: int) -> Any:
        """The canonical form of a value the other side has nothing to pair with."""
        if not isinstance(value, (Mapping, list)):
            return value
        sub = _Canonical(self.depth)
        form = sub.forms(value, value, steps)[0]
        self.diagnostics[side].update(sub.diagnostics[0])
        return form


def _identical(a: Any, b: Any) -> bool:
    """Equal in every field but the volatile ones, types included (``==`` holds True == 1)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        keys = a.keys() - _VOLATILE
        return keys == b.keys() - _VOLATILE and all(_identical(a[k], b[k]) for k in keys)
    if isinstance(a, list):
        return len(a) == len(b) and all(_identical(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _same_types(a: Any, b: Any) -> bool:
    """Whether two equal canonical forms also agree in type where it matters (``==``
    holds True == 1; numbers of either kind are fine)."""
    if isinstance(a, dict):
        return all(_same_types(v, b[k]) for k, v in a.items())
    if isinstance(a, list):
        return all(_same_types(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) or (_is_number(a) and _is_number(b))


def _paths(value: Any, steps: tuple[Any, ...]) -> Iterator[tuple[Any, ...]]:
    """Every path in a canonical form, in document order (for listing changes)."""
    yield steps
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*steps, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _paths(item, (*steps, i))


def _dotted(steps: Sequence[Any]) -> str:
    out = ""
    for step in steps:
        if isinstance(step, int):
            out += f"[{step}]"
        elif step.startswith("[") and step.endswith("]"):
            out += step
        else:
            out += f".{step}" if out else step
    return out


def _position(value: Any, depth: int | None, steps: tuple[Any, ...]) -> Any:
    """How a keyed list item that one side lacks is shown: its position there."""
    if value is ABSENT:
        below = depth is not None and steps[:-1] in _RERANK_LISTS
        return f"below top {depth}" if below else ABSENT
    if isinstance(value, Mapping):
        where = value.get(_POSITION, value.get("rank"))
        return f"position {where}"
    return value


def _classify(
    steps: tuple[Any, ...], old: Any, new: Any, depth: int | None
) -> Iterator[tuple[tuple[Any, ...], Change]]:
    """One deepdiff difference as ``Change`` s with their paths (deepdiff reports a
    mapping that became empty, or was empty, as one value: it is split by key)."""
    if isinstance(old, dict) and isinstance(new, dict):
        for key in list(old) + [k for k in new if k not in old]:
            left, right = old.get(key, ABSENT), new.get(key, ABSENT)
            if left is ABSENT or right is ABSENT or left != right:
                yield from _classify((*steps, key), left, right, depth)
        return
    change = _change(steps, old, new, depth)
    if change is not None:
        yield steps, change


def _change(steps: tuple[Any, ...], old: Any, new: Any, depth: int | None) -> Change | None:
    """One difference as a ``Change``; None when it is none (3 and 3.0)."""
    if steps and steps[-1] == _POSITION:
        return Change("rank", _dotted(steps[:-1]), old, new)
    path = _dotted(steps)
    keyed_item = bool(steps) and isinstance(steps[-1], str) and steps[-1].startswith("[")
    if keyed_item and (old is ABSENT or new is ABSENT):
        return Change("identity", path, _position(old, depth, steps), _position(new, depth, steps))
    if _is_number(old) and _is_number(new):
        if old == new:
            return None  # 3 and 3.0
        whole = isinstance(old, int) and isinstance(new, int)
        if not whole and steps[0] != "generator":
            return Change("number", path, old, new)
    if steps and steps[0] == "generator":
        return Change("setting", path, old, new)
    if steps and steps[-1] in _RANK_KEYS:
        return Change("rank", path, old, new)
    return Change("identity", path, old, new)


def _common_prefix(a: str, b: str) -> int:
    """How many leading characters ``a`` and ``b`` share."""
    n = min(len(a), len(b))
    return next((i for i in range(n) if a[i] != b[i]), n)


def _show(value: Any, width: int = _WIDTH) -> str:
    if value is ABSENT:
        return "absent"
    if isinstance(value, str):
        if value.startswith(("position ", "below top ")):
            return value
        return repr(value if len(value) <= width else value[: width - 1] + "…")
    if isinstance(value, (list, dict)):
        text = json.dumps(value, ensure_ascii=False, sort_keys=True)
        return text if len(text) <= width else text[: width - 1] + "…"
    return repr(value) if not isinstance(value, float) else f"{value:.6g}"


# -- the reviewer's summary --------------------------------------------------------


def _lookup(fixture: Mapping[str, Any]) -> dict[str, Any]:
    result = fixture.get("lookupResult")
    return result if isinstance(result, dict) else {}


def _first_ranks(fixture: Mapping[str, Any]) -> dict[str, int]:
    ranks: dict[str, int] = {}
    blocks = _lookup(fixture).get("evidenceBlocks")
    for position, block in enumerate(blocks if isinstance(blocks, list) else [], 1):
        if isinstance(block, dict) and isinstance(block.get("source"), str):
            rank = block.get("rank")
            ranks.setdefault(block["source"], rank if isinstance(rank, int) else position)
    return ranks


def _trace(fixture: Mapping[str, Any], key: str) -> Any:
    trace = _lookup(fixture).get("retrievalTrace")
    return trace.get(key) if isinstance(trace, dict) else None


def _rerank_top(fixture: Mapping[str, Any]) -> str | None:
    rerank = _lookup(fixture).get("rerankTrace")
    after = rerank.get("after") if isinstance(rerank, dict) else None
    if isinstance(after, list) and after and isinstance(after[0], dict):
        top = after[0].get("source")
        return top if isinstance(top, str) else None
    return None


def _list(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(map(str, value)) + "]"
    return str(value)


def _headlines(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """Sources gained, lost and moved, and the pipeline fields a case checks."""
    out: list[str] = []
    before, after = _first_ranks(old), _first_ranks(new)
    gained = [s for s in after if s not in before]
    lost = [s for s in before if s not in after]
    if gained:
        out.append("gained " + ", ".join(gained))
    if lost:
        out.append("lost " + ", ".join(lost))
    moves = [f"{s} {before[s]}->{after[s]}" for s in after if s in before and before[s] != after[s]]
    if moves:
        out.append("moved " + ", ".join(moves))
    for key, label in (
        ("selectedAttempt", "selected attempt"),
        ("fallbackReasons", "fallback reasons"),
        ("evidenceStatus", "evidence status"),
    ):
        a, b = _trace(old, key), _trace(new, key)
        if a != b:
            out.append(f"{label} {_list(a)} -> {_list(b)}")
    top_a, top_b = _rerank_top(old), _rerank_top(new)
    if top_a != top_b:
        out.append(f"rerank top {top_a} -> {top_b}")
    return out


def fixture_changes(
    old: Mapping[str, Any] | None,
    new: Mapping[str, Any],
    tolerance: float = DEFAULT_TOLERANCE,
    *,
    listed: int = 3,
) -> list[str]:
    """Why ``new`` differs from ``old``, for a reviewer: one phrase per kind of change.

    An empty list means the same retrieval within ``tolerance``; ``None`` for
    ``old`` is a new fixture. Settings that differ come first ("written with
    other settings: ..."), then sources gained, lost and moved and the
    pipeline fields, then the first ``listed`` changes as ``path old -> new``
    and how many more there are.
    """
    if old is None:
        return ["new fixture"]
    comparison = compare_fixtures(old, new, tolerance)
    if not comparison.changed:
        return []
    out: list[str] = []
    settings = comparison.of_kind("setting")
    if settings:
        shown = ", ".join(c.describe() for c in settings[:listed])
        more = len(settings) - listed
        out.append(
            "written with other settings: " + shown + (f" (and {more} more)" if more > 0 else "")
        )
    out.extend(_headlines(old, new))
    rest = [c for c in comparison.changes if c.kind != "setting"]
    if rest:
        shown = ", ".join(c.describe() for c in rest[:listed])
        more = len(rest) - listed
        out.append(shown + (f" (and {more} more)" if more > 0 else ""))
    return out

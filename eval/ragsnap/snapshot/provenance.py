"""Fixture provenance: what each fixture was captured from, and whether it still holds.

``ragsnap snapshot`` writes ``fixtures/_manifest.json`` beside the fixtures (a
name no case id can take). It records, once per distinct *capture*, what
determines a fixture's lookup, and for every fixture which capture it came from
and the SHA-256 of its bytes::

    {"kind": "ragsnap-fixture-manifest", "schemaVersion": 1,
     "captures": {"<key>": {"settings": {"backend": "embedded",
                                         "method": "hybrid+rerank",
                                         "lookup.minScore": 0.22, ...},
                            "corpus": {"documents": {"<source>": "<index hash>"}}}},
     "fixtures": {"<caseId>": {"capture": "<key>", "sha256": "<file digest>"}}}

* ``settings`` are the values of ragsnap.yaml that can change a lookup (the
  backend, the method and its spec, every ``lookup`` knob, the segmenter,
  stemmer, stop words, embedder spec and chunking of ``kb``), and the pipeline
  version, flat under the names ragsnap.yaml spells them
  (``ragsnap.commands._provenance.settings_of``).
* ``corpus.documents`` is, for a local store (embedded, milvus), a digest of
  each stored document as the store held it at capture: the digest of its
  parsed seed file and the chunk settings (``ragsnap.kb.seeding.document_digest``,
  the same on any checkout's line endings) when the store holds exactly that
  file, else the store's own index hash, which no seed file's digest equals, so
  a store seeded from an older file makes its fixtures stale. A service
  (``--backend http``) records ``corpus.revision`` when its health answer
  reports a ``corpusRevision``, else null.
* A capture's key is the first 16 hex digits of the SHA-256 of its canonical
  JSON, so fixtures captured together share one entry.

``check_provenance`` (pure) compares the manifest with the current state (the
same capture computed from today's ragsnap.yaml and ``seed-docs/``) and returns
one line per cause, naming the document or setting that changed and the
fixtures captured before it, and notes for what it cannot check: a manifest that
is missing, a fixture with no record (hand-written, or from an older ragsnap), a
service's corpus (only ``snapshot --check`` against the service can tell).
A fixture whose bytes differ from the manifest's record was edited after it was
captured: a note, since ``snapshot --check`` (which re-runs its lookup) is the
judge of an edit. ``score``, ``check`` and ``pytest --ragsnap`` fail (exit 1) on
any problem; notes never fail a run.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from ..io.inputs import FIXTURE_MANIFEST

__all__ = [
    "MANIFEST_KIND",
    "MANIFEST_NAME",
    "STALE_FIX",
    "Capture",
    "Manifest",
    "Staleness",
    "check_provenance",
]

#: the manifest's file name inside the fixtures folder: no case id starts with "_"
MANIFEST_NAME = FIXTURE_MANIFEST
MANIFEST_KIND = "ragsnap-fixture-manifest"
#: what to do about stale fixtures
STALE_FIX = (
    "run `ragsnap seed && ragsnap snapshot` and commit the fixtures (`ragsnap accept` "
    "also updates the baseline)"
)
#: fixtures named in one line before the rest are counted
_NAMED = 3


def _canonical(value: Any) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


@dataclass(frozen=True, slots=True)
class Capture:
    """What one snapshot run captured its fixtures from."""

    settings: Mapping[str, Any]
    #: source -> index hash of every stored document; None when the store is a service
    documents: Mapping[str, str] | None = None
    #: a service's corpus revision, when it reports one
    revision: str | None = None

    def to_json(self) -> dict[str, Any]:
        corpus: dict[str, Any] = (
            {"documents": dict(self.documents)}
            if self.documents is not None
            else {"revision": self.revision}
        )
        return {"settings": dict(self.settings), "corpus": corpus}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Capture:
        corpus = data["corpus"]
        documents = corpus.get("documents")
        return cls(
            settings=data["settings"],
            documents=None if documents is None else dict(documents),
            revision=corpus.get("revision"),
        )

    @property
    def key(self) -> str:
        return hashlib.sha256(_canonical(self.to_json())).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class Manifest:
    """Captures by key, and each fixture's (capture key, file SHA-256)."""

    captures: Mapping[str, Capture] = field(default_factory=dict)
    fixtures: Mapping[str, tuple[str, str]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        used = {key for key, _ in self.fixtures.values()}
        return {
            "kind": MANIFEST_KIND,
            "schemaVersion": 1,
            "captures": {k: c.to_json() for k, c in self.captures.items() if k in used},
            "fixtures": {
                case_id: {"capture": key, "sha256": digest}
                for case_id, (key, digest) in self.fixtures.items()
            },
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Manifest:
        """From a manifest document that passed its schema (``fixture-manifest``)."""
        return cls(
            captures={k: Capture.from_json(v) for k, v in data["captures"].items()},
            fixtures={
                case_id: (entry["capture"], entry["sha256"])
                for case_id, entry in data["fixtures"].items()
            },
        )

    def captures_of(self) -> dict[str, Any]:
        """Each fixture's capture as JSON, without the file digests (what ``snapshot
        --check`` compares: a fixture edited within the tolerance is still current)."""
        return {c: self.captures[key].to_json() for c, (key, _) in self.fixtures.items()}

    def updated(
        self, capture: Capture, digests: Mapping[str, str], present: Iterable[str]
    ) -> Manifest:
        """This manifest with ``digests``' fixtures recorded as captured by
        ``capture``; fixtures not in ``present`` (no file any more) are dropped."""
        keep = set(present)
        fixtures = {k: v for k, v in self.fixtures.items() if k in keep}
        key = capture.key
        for case_id, digest in digests.items():
            fixtures[case_id] = (key, digest)
        captures = {**self.captures, key: capture}
        used = {k for k, _ in fixtures.values()}
        return Manifest(
            {k: c for k, c in sorted(captures.items()) if k in used}, dict(sorted(fixtures.items()))
        )


@dataclass(frozen=True, slots=True)
class Staleness:
    """The outcome of a provenance check: problems fail a run, notes do not."""

    problems: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    #: each stale fixture's case id -> the problems that make it stale
    cases: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def stale(self) -> bool:
        return bool(self.problems)

    def lines(self) -> list[str]:
        """What the terminal shows of the problems: a count with the fix, one a line."""
        if not self.problems:
            return []
        return [
            f"Stale fixtures ({len(self.problems)} cause(s)); {STALE_FIX}:",
            *(f"  {problem}" for problem in self.problems),
        ]

    def note_lines(self) -> list[str]:
        """What the terminal shows of the notes, after everything else."""
        return [f"note: {note}" for note in self.notes]

    def to_json(self) -> dict[str, Any]:
        return {"stale": list(self.problems), "notes": list(self.notes), "fix": STALE_FIX}


def _named(files: Sequence[str], total_in_folder: int, folder: str) -> str:
    """``fixtures/a.json`` / ``fixtures/a.json, fixtures/b.json and 3 more``, or
    ``the 29 fixtures in fixtures/`` when that is all of them."""
    if len(files) == total_in_folder and len(files) > _NAMED:
        return f"the {len(files)} fixtures in {folder}/"
    shown = ", ".join(files[:_NAMED])
    rest = len(files) - _NAMED
    return shown + (f" and {rest} more" if rest > 0 else "")


def _were(files: Sequence[str]) -> str:
    return "was" if len(files) == 1 else "were"


def _value(value: Any) -> str:
    return _canonical(value).decode("utf-8")


def check_provenance(
    manifest: Manifest | None,
    digests: Mapping[str, str],
    current: Capture,
    *,
    folder: str,
    cited: Mapping[str, Iterable[str]] | None = None,
    paths: Mapping[str, str] | None = None,
    config_name: str = "ragsnap.yaml",
) -> Staleness:
    """Compare the fixtures' recorded captures with ``current``.

    ``digests`` maps each case id whose fixture is scored to its file's SHA-256;
    ``folder`` is the fixtures folder as the user names it; ``cited`` the sources
    each fixture's evidence cites (a changed document is named with the fixtures
    that cite it when some do); ``paths`` the seed file of each current source.
    ``current.documents`` None means the corpus is not at hand (not checked).
    """
    manifest_path = f"{folder}/{MANIFEST_NAME}"
    if not digests:
        return Staleness()
    if manifest is None:
        return Staleness(
            notes=(
                f"{manifest_path} is missing, so the fixtures' corpus and settings are not "
                "checked; `ragsnap snapshot` records them",
            )
        )
    paths = paths or {}
    problems: list[str] = []
    notes: list[str] = []

    def file_of(case_id: str) -> str:
        return f"{folder}/{case_id}.json"

    def note(case_ids: list[str], one: str, many: str) -> None:
        """A note on ``case_ids``' fixtures: ``one`` or ``many`` follow their names."""
        if case_ids:
            files = [file_of(c) for c in case_ids]
            notes.append(
                f"{_named(files, len(digests), folder)} {one if len(files) == 1 else many}"
            )

    unrecorded = sorted(c for c in digests if c not in manifest.fixtures)
    where = f"no record in {manifest_path} (written by hand or by an older ragsnap), so"
    later = "corpus and settings are not checked; `ragsnap snapshot` records them"
    note(unrecorded, f"has {where} its {later}", f"have {where} their {later}")
    edited = sorted(
        c for c in digests if c in manifest.fixtures and manifest.fixtures[c][1] != digests[c]
    )
    after = (
        f"edited after capture (the bytes differ from {manifest_path}); `ragsnap snapshot "
        "--check` compares {it} with the knowledge base, and `ragsnap snapshot` records the "
        "bytes it keeps"
    )
    note(edited, "was " + after.format(it="it"), "were " + after.format(it="them"))
    stale: dict[str, list[str]] = {}
    by_capture: dict[str, list[str]] = {}
    for case_id in sorted(digests):
        if case_id in manifest.fixtures:
            by_capture.setdefault(manifest.fixtures[case_id][0], []).append(case_id)
    cited_by: dict[str, set[str]] = {}
    for case_id, sources in (cited or {}).items():
        for source in sources:
            cited_by.setdefault(source, set()).add(case_id)
    context = _Context(current, folder, len(digests), cited_by, paths, config_name)
    for key, case_ids in by_capture.items():
        first = len(problems)
        _capture_problems(manifest.captures[key], case_ids, context, problems, notes)
        for case_id in case_ids if len(problems) > first else ():
            stale.setdefault(case_id, []).extend(problems[first:])
    return Staleness(
        tuple(problems), tuple(notes), {c: tuple(lines) for c, lines in sorted(stale.items())}
    )


@dataclass(frozen=True, slots=True)
class _Context:
    """What every capture of one check is compared with, and how things are named."""

    current: Capture
    folder: str
    total: int
    cited_by: Mapping[str, set[str]]
    paths: Mapping[str, str]
    config_name: str

    def file_of(self, case_id: str) -> str:
        return f"{self.folder}/{case_id}.json"


def _capture_problems(
    captured: Capture,
    case_ids: list[str],
    context: _Context,
    problems: list[str],
    notes: list[str],
) -> None:
    """Append what changed since ``captured`` for the fixtures of ``case_ids``."""
    current, folder, total = context.current, context.folder, context.total
    paths, cited_by, file_of = context.paths, context.cited_by, context.file_of
    config_name = context.config_name
    files = [file_of(c) for c in case_ids]
    after = f"after {_named(files, total, folder)} {_were(files)} captured"
    if captured.documents is None and current.documents is None and current.revision:
        if captured.revision != current.revision:  # both from the service: comparable
            problems.append(
                f"the service's corpus revision changed ({captured.revision} -> "
                f"{current.revision}) {after}"
            )
        return
    if captured.documents is None:
        revision = "" if captured.revision is None else f" (corpus revision {captured.revision})"
        # a Python retriever (ragsnap.kb.backends.python), or a python.methods entry's
        retriever = captured.settings.get(
            "python.retriever", captured.settings.get("method.retriever")
        )
        if retriever is not None:
            unversioned = (
                "; it reports no fingerprint() or version, so nothing records which corpus "
                "it searched"
                if captured.revision is None
                else ""
            )
            notes.append(
                f"{_named(files, total, folder)} came from the Python retriever {retriever}"
                f"{revision}: its corpus cannot be checked offline{unversioned}; "
                "`ragsnap snapshot --check --backend python` compares them with the retriever"
            )
            return
        notes.append(
            f"{_named(files, total, folder)} came from a service{revision}: the corpus and "
            "the service's settings cannot be checked offline; "
            "`ragsnap snapshot --check --backend http` compares them with the service"
        )
        return
    changed_settings = sorted(
        name
        for name in set(captured.settings) | set(current.settings)
        if captured.settings.get(name) != current.settings.get(name)
    )
    for name in changed_settings:
        before, now = captured.settings.get(name), current.settings.get(name)
        problems.append(
            f"{config_name}: {name} changed ({_value(before)} -> {_value(now)}) {after}"
        )
    if current.documents is None:
        return
    if "kb.chunking" in changed_settings:
        return  # every document's index hash moved with it: said once above
    old, new = captured.documents, current.documents
    for source in sorted(set(old) | set(new)):
        if old.get(source) == new.get(source):
            continue
        where = paths.get(source, f"source {source!r}")
        citing = [file_of(c) for c in case_ids if c in cited_by.get(source, ())]
        named = (
            f"after {_named(citing, total, folder)} (citing it) {_were(citing)} captured"
            if citing
            else after
        )
        if source not in new:
            what = f"{where} was removed from the corpus"
        elif source not in old:
            what = f"{where} was added"
        else:
            what = f"{where} changed"
        problems.append(f"{what} {named}")

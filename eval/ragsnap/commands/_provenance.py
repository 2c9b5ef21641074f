"""The fixture provenance check as ``score``, ``check`` and ``pytest --ragsnap`` run it,
and the corpus digests ``snapshot`` records.

The I/O around ``ragsnap.snapshot.provenance``: the manifest of the fixtures
folder, the current settings of ragsnap.yaml and the digest of every seed
document (``ragsnap.kb.seeding.document_digest``: parsed as ``ragsnap seed``
parses it, no knowledge base needed), compared by ``check_provenance``.

At capture, a stored document is recorded by the digest of its seed file when
the store holds exactly that file (same index hash), and by the store's own
index hash otherwise, which no seed file's digest equals: a store seeded from
an older file makes its fixtures stale, as it should.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config import Config
from ..errors import RagsnapError
from ..io.inputs import FixtureSet, read_manifest
from ..snapshot.provenance import Capture, Manifest, Staleness, check_provenance

if TYPE_CHECKING:
    from ..kb.corpus import ChunkSettings, SeedDocument

__all__ = [
    "add_seed_document",
    "captured_documents",
    "check_fixture_digests",
    "check_fixtures",
    "folder_name",
    "seed_state",
    "settings_of",
]


def settings_of(config: Config, backend: str, method: str | None = None) -> dict[str, Any]:
    """The settings of ragsnap.yaml that can change a lookup of ``method`` (the
    configured one when None) on ``backend``, flat under their ragsnap.yaml names.

    A backend that answers whole lookups (a service, a Python retriever) runs its own
    lookup, so only the backend and what it adds itself are recorded (the python
    backend's retriever; the http backend's method with the fields its requests add,
    ``http.methods``); a store adds its own settings to the pipeline's (the milvus
    backend's analyzer): ``ragsnap.kb.backends.registry``.
    """
    from ..kb.backends.registry import get_backend

    entry = get_backend(backend)
    if entry.looks_up != "pipeline":
        return {"backend": backend, **entry.settings(config, method)}
    from ..settings import PIPELINE_VERSION, method_settings

    spec = config.lookup.method_spec(method or config.lookup.method)
    kb = config.kb
    out: dict[str, Any] = {
        "backend": backend,
        "method": spec.name,
        "method.retrievers": list(spec.retrievers),
        "method.embedder": spec.embedder,
        "pipelineVersion": PIPELINE_VERSION,
        **{f"lookup.{k}": v for k, v in method_settings(config.lookup, spec).items()},
        "kb.segmenter": kb.segmenter,
        "kb.stemmer": kb.stemmer,
        "kb.stopWords": kb.stop_words,
        "kb.embedder": kb.embedder if spec.embedder is None else None,
        "kb.chunking": kb.chunking.fingerprint(),
        **entry.settings(config, method),
    }
    return out


def _shown(path: str) -> str:
    """``path`` relative to the current folder when it lies below it."""
    if not Path(path).is_absolute():
        return path
    try:
        return Path(os.path.relpath(path)).as_posix()
    except ValueError:  # another drive
        return path


@dataclass(frozen=True, slots=True)
class SeedState:
    """Every seed document of ``kb.seedDocs``: digest, index hash and file, by source."""

    digests: dict[str, str]
    index_hashes: dict[str, str]
    paths: dict[str, str]


def add_seed_document(state: SeedState, doc: SeedDocument, settings: ChunkSettings) -> None:
    """Record ``doc`` in ``state`` (one step of ``seed_state``'s pass, for a caller that
    reads the corpus for something else too: ``_labels``)."""
    from ..kb.seeding import document_digest, index_hash

    state.digests[doc.source] = document_digest(doc, settings)
    state.index_hashes[doc.source] = index_hash(doc, settings)
    state.paths[doc.source] = _shown(doc.path)


def seed_state(config: Config) -> SeedState | None:
    """The seed corpus of ``kb.seedDocs``, or None when there is none to compare with."""
    from ..kb.corpus import open_seed_docs

    folder = config.kb.seed_docs
    if not folder.exists():
        return None
    state = SeedState({}, {}, {})
    for doc in open_seed_docs(folder):
        add_seed_document(state, doc, config.kb.chunking)
    return state


def _seeded_digest(path: str | None, stored: str, config: Config) -> str | None:
    """The digest of the Markdown file a document was seeded from, when that file still
    holds what the store indexed (same index hash)."""
    from ..kb.corpus import parse_seed_doc
    from ..kb.seeding import document_digest, index_hash

    if path is None:
        return None
    for candidate in (Path(path), config.kb.seed_docs / Path(path).name):
        if candidate.suffix != ".md" or not candidate.is_file():
            continue
        try:
            doc = parse_seed_doc(candidate, candidate.read_bytes())
        except (OSError, RagsnapError):
            continue
        if index_hash(doc, config.kb.chunking) == stored:
            return document_digest(doc, config.kb.chunking)
    return None


def captured_documents(
    stored: Mapping[str, tuple[str, str | None]] | None, config: Config
) -> tuple[dict[str, str] | None, list[str]]:
    """What the manifest records of a store's documents: the digest of the seed file the
    store holds exactly (same index hash), found in ``kb.seedDocs`` or where it was
    seeded from, else the store's index hash (which no digest equals); and the seed files
    of ``kb.seedDocs`` (or sources) the store does not hold as they are now."""
    if stored is None:
        return None, []
    state = seed_state(config)
    documents: dict[str, str] = {}
    for source, (digest, path) in stored.items():
        if state is not None and state.index_hashes.get(source) == digest:
            documents[source] = state.digests[source]
        else:
            documents[source] = _seeded_digest(path, digest, config) or digest
    if state is None:
        return documents, []
    behind = [
        state.paths.get(source, f"source {source!r}")
        for source in sorted(set(stored) | set(state.index_hashes))
        if (stored[source][0] if source in stored else None) != state.index_hashes.get(source)
    ]
    return documents, behind


def folder_name(folder: Path) -> str:
    """The fixtures folder as the messages name it (``fixtures``, ``.``)."""
    return folder.as_posix().rstrip("/") or "."


def check_fixtures(
    config: Config,
    fixture_set: FixtureSet,
    folder: Path,
    case_ids: Collection[str],
    seed: SeedState | None = None,
) -> Staleness:
    """Whether the fixtures of ``folder`` (as loaded in ``fixture_set``) of the cases
    ``case_ids`` still describe the corpus of ``kb.seedDocs`` and the settings of
    ragsnap.yaml (a fixture no case names is not scored, so not checked). ``seed``: the
    seed state when the caller has read it already (the label check's pass), so the
    corpus is not read again."""
    cited = {
        case_id: {block.source for block in fixture.lookup.evidence_blocks}
        for case_id, fixture in fixture_set.fixtures.items()
    }
    return check_fixture_digests(config, fixture_set.digests, cited, folder, case_ids, seed)


def check_fixture_digests(
    config: Config,
    file_digests: Mapping[str, str],
    sources: Mapping[str, Collection[str]],
    folder: Path,
    case_ids: Collection[str],
    seed: SeedState | None = None,
) -> Staleness:
    """``check_fixtures`` from what a streamed read kept of the fixtures (``ragsnap
    score``): each file's SHA-256 (``FixtureStream.digests``) and the sources its
    evidence blocks cite, by case ID."""
    digests = {c: d for c, d in file_digests.items() if c in case_ids}
    if not digests:
        return Staleness()
    raw = read_manifest(folder)
    if raw is None:  # nothing to compare with: no need to read the corpus
        return check_provenance(None, digests, Capture({}), folder=folder_name(folder))
    manifest = Manifest.from_json(raw)
    state = seed if seed is not None else seed_state(config)
    current = Capture(
        settings_of(config, config.kb.backend), documents=None if state is None else state.digests
    )
    cited = {case_id: set(sources[case_id]) for case_id in digests}
    result = check_provenance(
        manifest,
        digests,
        current,
        folder=folder_name(folder),
        cited=cited,
        paths=None if state is None else state.paths,
        config_name=(
            _shown(config.source)
            if Path(config.source).is_file()
            else f"the built-in settings (no {config.source} was loaded)"
        ),
    )
    if state is None:
        missing = config.kb.seed_docs.as_posix()
        return Staleness(
            result.problems,
            (*result.notes, f"{missing} not found: the fixtures' corpus is not checked"),
        )
    return result

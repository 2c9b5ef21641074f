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
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ..config import Config
from ..io.inputs import FixtureSet, read_manifest
from ..snapshot.provenance import Capture, Manifest, Staleness, check_provenance, settings_of

__all__ = ["captured_documents", "check_fixtures", "seed_state"]


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


def seed_state(config: Config) -> SeedState | None:
    """The seed corpus of ``kb.seedDocs``, or None when there is none to compare with."""
    from ..kb.corpus import open_seed_docs
    from ..kb.seeding import document_digest, index_hash

    folder = config.kb.seed_docs
    if not folder.exists():
        return None
    state = SeedState({}, {}, {})
    for doc in open_seed_docs(folder):
        state.digests[doc.source] = document_digest(doc, config.kb.chunking)
        state.index_hashes[doc.source] = index_hash(doc, config.kb.chunking)
        state.paths[doc.source] = _shown(doc.path)
    return state


def captured_documents(
    stored: Mapping[str, str] | None, config: Config
) -> tuple[dict[str, str] | None, list[str]]:
    """What the manifest records of a store's documents (source -> index hash): the seed
    file's digest where the store holds exactly that file, else the store's hash; and
    the seed files (or sources) the store does not hold as they are now."""
    if stored is None:
        return None, []
    state = seed_state(config)
    if state is None:
        return dict(stored), []
    documents = {
        source: state.digests[source] if state.index_hashes.get(source) == digest else digest
        for source, digest in stored.items()
    }
    behind = [
        state.paths.get(source, f"source {source!r}")
        for source in sorted(set(stored) | set(state.index_hashes))
        if stored.get(source) != state.index_hashes.get(source)
    ]
    return documents, behind


def check_fixtures(config: Config, fixture_set: FixtureSet, folder: Path) -> Staleness:
    """Whether the fixtures of ``folder`` (as loaded in ``fixture_set``) still describe
    the corpus of ``kb.seedDocs`` and the settings of ragsnap.yaml."""
    raw = read_manifest(folder)
    manifest = None if raw is None else Manifest.from_json(raw)
    state = seed_state(config)
    current = Capture(
        settings_of(config, config.kb.backend), documents=None if state is None else state.digests
    )
    cited = {
        case_id: {block.source for block in fixture.lookup.evidence_blocks}
        for case_id, fixture in fixture_set.fixtures.items()
    }
    result = check_provenance(
        manifest,
        fixture_set.digests,
        current,
        folder=folder.as_posix().rstrip("/") or ".",
        cited=cited,
        paths=None if state is None else state.paths,
        config_name=_shown(config.source),
    )
    if state is None and manifest is not None:
        seed = config.kb.seed_docs.as_posix()
        return Staleness(
            result.problems,
            (*result.notes, f"{seed} not found: the fixtures' corpus is not checked"),
        )
    return result

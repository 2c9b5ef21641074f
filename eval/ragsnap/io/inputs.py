"""Read golden cases and fixtures from disk: validate, check, build models.

This is the I/O shell in front of the pure scoring core. Beyond the JSON
Schema it checks what a schema cannot say: unique case IDs, that a case can
be scored at all, that a fixture's ``caseId`` matches its file name and that
evidence ranks run 1..n in order. Each failure is an ``InputError`` naming
the file, the JSON pointer and the fix.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..models import (
    REPORT_KIND,
    REPORT_SCHEMA_VERSION,
    TRIAL_REPORT_KIND,
    Fixture,
    GoldenCase,
)
from .decode import decode_fixture
from .jsonio import parse_json, read_bytes, read_json
from .schema import validate

__all__ = [
    "FIXTURE_MANIFEST",
    "CaseSet",
    "FixtureSet",
    "FixtureStream",
    "is_fixture",
    "load_cases",
    "load_cases_document",
    "load_fixtures",
    "load_report",
    "read_manifest",
]

#: the fixture manifest's name inside a fixtures folder (``ragsnap.snapshot.provenance``):
#: no case id starts with "_", so it is never a fixture
FIXTURE_MANIFEST = "_manifest.json"


@dataclass(frozen=True, slots=True)
class CaseSet:
    """The golden cases of one file, in file order, and the file's SHA-256."""

    cases: tuple[GoldenCase, ...]
    sha256: str


@dataclass(frozen=True, slots=True)
class FixtureSet:
    """Fixtures keyed by case ID, a SHA-256 over all fixture files, and each file's."""

    fixtures: dict[str, Fixture]
    sha256: str
    #: case ID -> SHA-256 (hex) of its fixture file's bytes
    digests: dict[str, str] = field(default_factory=dict)


def load_cases(path: Path) -> CaseSet:
    """Read, validate and check a golden cases file."""
    return load_cases_document(path)[0]


def load_cases_document(path: Path) -> tuple[CaseSet, Any]:
    """``load_cases`` and the file's parsed JSON, read once (``ragsnap check`` reads
    fields the models leave out, such as ``notes``)."""
    raw = read_bytes(path, "pass --cases with the path of your golden cases file")
    data: Any = parse_json(raw, path)
    validate(data, "golden-cases", path, "golden cases file")
    defaults = data.get("defaults", {})
    seen: dict[str, int] = {}
    cases = []
    for index, item in enumerate(data["cases"]):
        pointer = f"/cases/{index}"
        case_id = item["id"]
        if case_id in seen:
            raise InputError(
                path,
                f"duplicate case id {case_id!r} (first at /cases/{seen[case_id]})",
                "give every case a unique id",
                pointer=f"{pointer}/id",
            )
        seen[case_id] = index
        case = GoldenCase.from_json(item, defaults)
        _check_case(case, path, pointer)
        cases.append(case)
    return CaseSet(tuple(cases), hashlib.sha256(raw).hexdigest()), data


def _check_case(case: GoldenCase, path: Path, pointer: str) -> None:
    kinds = {j.kind for j in case.judgments}
    if len(kinds) > 1:
        raise InputError(
            path,
            f"case {case.id!r} mixes judgment targets ({', '.join(sorted(kinds))})",
            "judge either chunks (chunkId), documents (docId) or sources (source) in one case",
            pointer=f"{pointer}/judgments",
        )
    targets = [j.target for j in case.judgments]
    if len(set(targets)) != len(targets):
        dup = next(t for t in targets if targets.count(t) > 1)
        raise InputError(
            path,
            f"{dup!r} is judged twice",
            "keep one judgment per target",
            pointer=f"{pointer}/judgments/{len(targets) - 1 - targets[::-1].index(dup)}",
        )
    if case.no_answer and any(j.grade > 0 for j in case.judgments):
        raise InputError(
            path,
            "a noAnswer case cannot judge anything relevant",
            "remove the judgments with a grade above 0 or set noAnswer to false",
            pointer=f"{pointer}/judgments",
        )
    if case.no_answer:
        for field, value in (
            ("expectedSources", case.expected_sources),
            ("expectedDocIds", case.expected_doc_ids),
            ("expectedBreadcrumbs", case.expected_breadcrumbs),
            ("expectedKeywords", case.expected_keywords),
            ("expectedContextSources", case.expected_context_sources),
            ("expectedRerankTopSource", case.expected_rerank_top_source),
        ):
            if value:
                raise InputError(
                    path,
                    f"a noAnswer case cannot expect {field}",
                    f"remove {field} or set noAnswer to false",
                    pointer=f"{pointer}/{field}",
                )
    elif not (case.expected_sources or case.expected_doc_ids or case.expected_keywords):
        raise InputError(
            path,
            f"case {case.id!r} expects nothing, so it cannot be scored",
            "add expectedSources, expectedDocIds or expectedKeywords, or set noAnswer to true",
            pointer=pointer,
        )


def load_fixtures(folder: Path) -> FixtureSet:
    """Read, validate and check every ``*.json`` fixture directly in ``folder`` (the
    manifest, ``_manifest.json``, is not a fixture)."""
    stream = FixtureStream(folder)
    fixtures = {fixture.case_id: fixture for fixture in stream}
    return FixtureSet(fixtures, stream.sha256, stream.digests)


class FixtureStream:
    """The fixtures of ``folder`` one at a time, as ``load_fixtures`` reads them.

    Iterating reads, validates, checks and builds each ``*.json`` fixture in file
    name order (the manifest, ``_manifest.json``, is not one; each decoded typed,
    ``ragsnap.io.decode``) and hashes its bytes; what a caller does not keep is freed
    at once (``ragsnap score`` scores each fixture and drops it). After the
    iteration, ``sha256`` is the SHA-256 over all fixture files (``FixtureSet.sha256``)
    and ``digests`` each file's. A bad fixture raises ``InputError`` when it is
    reached, so a caller writes nothing before the iteration ends.
    """

    def __init__(self, folder: Path) -> None:
        if not folder.is_dir():
            raise InputError(
                folder,
                "fixtures folder not found",
                "pass --fixtures with the folder that holds {caseId}.json snapshots",
            )
        self.folder = folder
        #: case ID -> SHA-256 (hex) of its fixture file's bytes, filled by the iteration
        self.digests: dict[str, str] = {}
        self._digest = hashlib.sha256()
        self._done = False

    @property
    def sha256(self) -> str:
        """The SHA-256 over all fixture files (after the iteration)."""
        if not self._done:
            raise RuntimeError("FixtureStream.sha256 is known only after the iteration")
        return self._digest.hexdigest()

    def __iter__(self) -> Iterator[Fixture]:
        folder = self.folder
        with os.scandir(folder) as entries:
            names = sorted(
                e.name for e in entries if e.name.endswith(".json") and e.name != FIXTURE_MANIFEST
            )
        digest, digests = self._digest, self.digests
        # Each file's path as the string ``str(folder / name)``, without a Path per file:
        # they cost as much as the stat and the open over 10,000 fixtures.
        prefix = "" if folder == Path() else os.path.join(folder, "")  # noqa: PTH118
        for name in names:
            path = prefix + name
            raw = read_bytes(
                path, "a fixture is a {caseId}.json file: remove or rename it", kind="fixture"
            )
            own = hashlib.sha256(raw)
            digest.update(name.encode("utf-8") + b"\0" + own.digest())
            fixture = decode_fixture(raw, path)  # typed, or the schema's way (io.decode)
            del raw
            case_id = name[: -len(".json")]
            if fixture.case_id != case_id:  # ".json" (stem ".json") matches no valid caseId
                stem = Path(name).stem
                raise InputError(
                    path,
                    f"caseId {fixture.case_id!r} disagrees with the file name",
                    f"rename the file to {fixture.case_id}.json or set caseId to {stem!r}",
                    pointer="/caseId",
                )
            blocks = fixture.lookup.evidence_blocks
            if [block.rank for block in blocks] != list(range(1, len(blocks) + 1)):
                index, block = next((i, b) for i, b in enumerate(blocks) if b.rank != i + 1)
                raise InputError(
                    path,
                    f"rank {block.rank} at position {index + 1}; "
                    "ranks must run 1..n in array order",
                    "renumber the evidence blocks or regenerate the fixture",
                    pointer=f"/lookupResult/evidenceBlocks/{index}/rank",
                )
            digests[case_id] = own.hexdigest()
            yield fixture
        self._done = True


def is_fixture(path: Path) -> bool:
    """Whether ``path`` is a fixture of this project: a regular JSON file, valid against
    the fixture schema, whose ``caseId`` is its file name's stem. A prune deletes only
    these; anything else (a cases file, ``package.json``, notes) is never deleted."""
    if path.name == FIXTURE_MANIFEST or path.suffix != ".json" or path.is_symlink():
        return False
    try:
        data: Any = parse_json(read_bytes(path, "", kind="fixture"), path)
        validate(data, "fixture", path, "fixture")
    except InputError:
        return False
    return bool(data["caseId"] == path.stem)


def read_manifest(folder: Path) -> dict[str, Any] | None:
    """The fixture manifest of ``folder``, validated (None when there is none)."""
    path = folder / FIXTURE_MANIFEST
    if not path.is_file():
        return None
    fix = (
        "regenerate it with `ragsnap snapshot` (it records what the fixtures were "
        "captured from; do not edit it by hand)"
    )
    data: Any = read_json(path, fix)
    validate(data, "fixture-manifest", path, "fixture manifest")
    for case_id, entry in data["fixtures"].items():
        if entry["capture"] not in data["captures"]:
            raise InputError(
                path,
                f"fixture {case_id!r} names capture {entry['capture']!r}, which is not listed",
                fix,
                pointer=f"/fixtures/{case_id}/capture",
            )
    result: dict[str, Any] = data
    return result


def load_report(path: Path, role: str) -> dict[str, Any]:
    """Read a JSON score report written by ``ragsnap score`` (e.g. the baseline).

    ``role`` names it in messages (``"baseline"``). A report of another schema
    version, or another kind of file, gets an error that says how to
    regenerate it.
    """
    regenerate = (
        f"regenerate the {role} with `ragsnap score --json-report {path}` "
        "(or scripts/eval_rag_retrieval.py) from the fixtures it should describe"
    )
    data: Any = read_json(path, f"pass an existing {role} report, or {regenerate}")
    if not isinstance(data, dict):
        raise InputError(path, "is not a ragsnap score report (not a JSON object)", regenerate)
    other = _not_a_report(path, data, role, "score")
    if other is not None:
        raise other
    kind = data.get("kind")
    if kind != REPORT_KIND:
        raise InputError(
            path,
            f"is not a ragsnap score report (kind {kind!r})",
            f"pass the JSON report written by `ragsnap score`; {regenerate}",
            pointer="/kind",
        )
    version = data.get("schemaVersion")
    if version != REPORT_SCHEMA_VERSION:
        raise InputError(
            path,
            f"was written with report schema version {version!r}, and this ragsnap reads "
            f"version {REPORT_SCHEMA_VERSION}",
            regenerate,
            pointer="/schemaVersion",
        )
    schema = "private-report" if data.get("privacy") is True else "report"
    validate(data, schema, path, f"{role} report")
    seen: set[str] = set()
    for index, case in enumerate(data["cases"]):
        if case["id"] in seen:
            raise InputError(
                path,
                f"case {case['id']!r} appears twice",
                f"keep one of them, or {regenerate}",
                pointer=f"/cases/{index}/id",
            )
        seen.add(case["id"])
    result: dict[str, Any] = data
    return result


def _not_a_report(path: Path, data: Any, role: str, command: str) -> InputError | None:
    """The error of an input file passed where a ``command`` report (``score`` or
    ``trial``) is read: a golden cases file or a fixture says what it is and which
    command writes the report from it (rather than suggesting to write a report over
    it); None for anything else."""
    if not isinstance(data, dict) or "kind" in data:
        return None
    written = "reports/current.json" if command == "score" else "reports/trial.json"
    if isinstance(data.get("cases"), list) and "schemaVersion" in data:
        return InputError(
            path,
            f"is a golden cases file, not a report: the {role} must be a JSON report "
            f"`ragsnap {command}` wrote",
            f"run `ragsnap {command} --cases {path}` first (it writes {written}), "
            f"then diff two reports (`ragsnap diff reports/baseline.json {written}`)"
            + (
                f", or both at once: `ragsnap score --cases {path} --compare-to "
                "reports/baseline.json`"
                if command == "score"
                else ""
            ),
        )
    if "caseId" in data and "lookupResult" in data:
        return InputError(
            path,
            f"is a fixture, not a report: the {role} must be a JSON report `ragsnap {command}` "
            "wrote",
            f"score the fixtures folder it is in (`ragsnap score --fixtures {path.parent}` "
            "writes reports/current.json), then diff two reports",
        )
    return None


def report_kind(path: Path) -> str | None:
    """The ``kind`` of a JSON report file (a score report, a trial report ...), or None."""
    data: Any = read_json(path, "pass an existing JSON report")
    return data.get("kind") if isinstance(data, dict) else None


def load_trial_report(path: Path, role: str) -> dict[str, Any]:
    """Read a JSON trial report written by ``ragsnap trial`` (e.g. a baseline)."""
    regenerate = f"regenerate the {role} with `ragsnap trial --json-report {path}`"
    data: Any = read_json(path, f"pass an existing {role} report, or {regenerate}")
    other = _not_a_report(path, data, role, "trial")
    if other is not None:
        raise other
    kind = data.get("kind") if isinstance(data, dict) else None
    if kind != TRIAL_REPORT_KIND:
        raise InputError(
            path,
            f"is not a ragsnap trial report (kind {kind!r})",
            f"compare two reports of `ragsnap trial`; {regenerate}",
            pointer="/kind",
        )
    schema = "private-trial-report" if data.get("privacy") is True else "trial-report"
    validate(data, schema, path, "trial report")
    return dict(data)

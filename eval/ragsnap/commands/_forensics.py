"""The baseline's fixtures, for stage attribution (``ragsnap.scoring.attribution``).

A diff of two score reports names what each case lost; which pipeline stage lost
it needs the fixtures on both sides. The current ones are the fixtures folder;
the baseline's come from, in this order:

* ``--baseline-fixtures DIR``: a folder of fixtures (with its ``_manifest.json``);
* ``--baseline-ref REF``: the fixtures folder as git holds it at ``REF``
  (``origin/main``, a tag, a commit), read with ``git show``;
* neither: the first of ``HEAD``, ``HEAD^1``, the branch's upstream,
  ``origin/HEAD``, ``origin/main`` and ``origin/master`` whose fixture manifest
  says its fixtures are exactly those the baseline report was scored from (the
  manifest's file digests give the report's ``fixturesSha256``). Nothing found:
  the diff says how to name them, and the losses are still listed.

A named source whose fixtures are not the baseline's is used, with a note. A
baseline fixture is checked against its manifest's digest and the fixture
schema; a bad one, or a ref git cannot read, is bad input (exit 2).
"""

from __future__ import annotations

import functools
import hashlib
import os
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InputError, UsageError
from ..io.inputs import FIXTURE_MANIFEST, read_manifest
from ..io.jsonio import parse_json, read_bytes
from ..io.schema import validate
from ..scoring.attribution import Side, attribute_diff

__all__ = [
    "BaselineFixtures",
    "attribute",
    "attribute_with",
    "baseline_fixtures",
    "documents",
    "open_folder",
    "open_git",
]

#: refs tried, in order, when no baseline fixtures are named
DEFAULT_REFS = ("HEAD", "HEAD^1", "@{upstream}", "origin/HEAD", "origin/main", "origin/master")
_GIT_TIMEOUT = 60.0
_NAME_IT = (
    "pass --baseline-ref REF (the branch the baseline was accepted on, e.g. origin/main) "
    "or --baseline-fixtures DIR"
)


@dataclass(frozen=True, slots=True)
class BaselineFixtures:
    """Where baseline fixtures are read: ``read(names)`` is each file's bytes (None: no
    such file), read together (one git process for all of them)."""

    label: str
    read: Callable[[Sequence[str]], dict[str, bytes | None]]
    manifest: Mapping[str, Any] | None

    def digest(self) -> str | None:
        """The fixtures folder's SHA-256 as ``load_fixtures`` computes it, from the
        manifest's file digests (None without a manifest)."""
        if self.manifest is None:
            return None
        h = hashlib.sha256()
        for case_id in sorted(f"{c}.json" for c in self.manifest["fixtures"]):
            own = self.manifest["fixtures"][case_id[: -len(".json")]]["sha256"]
            h.update(case_id.encode("utf-8") + b"\0" + bytes.fromhex(own))
        return h.hexdigest()

    def fixture(self, case_id: str) -> Mapping[str, Any] | None:
        """The baseline fixture of ``case_id`` (None: it has none), checked."""
        return self.fixtures([case_id])[case_id]

    def fixtures(self, case_ids: Sequence[str]) -> dict[str, Mapping[str, Any] | None]:
        """The baseline fixtures of ``case_ids``, read together, each checked."""
        raw = self.read([f"{case_id}.json" for case_id in case_ids])
        return {c: self._checked(c, raw[f"{c}.json"]) for c in case_ids}

    def _checked(self, case_id: str, raw: bytes | None) -> Mapping[str, Any] | None:
        if raw is None:
            return None
        where = f"{self.label}/{case_id}.json"
        entry = (self.manifest or {}).get("fixtures", {}).get(case_id)
        if entry is not None and hashlib.sha256(raw).hexdigest() != entry["sha256"]:
            raise InputError(
                Path(where),
                "the fixture's bytes disagree with its manifest's sha256",
                "re-snapshot the baseline fixtures, or name other baseline fixtures",
            )
        data: Any = parse_json(raw, where)
        validate(data, "fixture", where, "fixture")
        result: Mapping[str, Any] = data
        return result


def open_folder(folder: Path) -> BaselineFixtures:
    """Baseline fixtures in a folder (``--baseline-fixtures``)."""
    if not folder.is_dir():
        raise InputError(
            folder,
            "baseline fixtures folder not found",
            "pass --baseline-fixtures with a folder of {caseId}.json fixtures",
        )

    def read(names: Sequence[str]) -> dict[str, bytes | None]:
        return {
            name: read_bytes(folder / name, "pass a folder of fixtures", kind="fixture")
            if (folder / name).is_file()
            else None
            for name in names
        }

    return BaselineFixtures(folder.as_posix(), read, read_manifest(folder))


def _git(folder: Path, *argv: str) -> subprocess.CompletedProcess[bytes] | None:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_PAGER": "cat"}
    try:
        return subprocess.run(
            ["git", "-C", str(folder), *argv],
            capture_output=True,
            timeout=_GIT_TIMEOUT,
            env=env,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None


def _cat_files(
    folder: Path, objects: Sequence[str], names: Sequence[str]
) -> dict[str, bytes | None]:
    """``git cat-file --batch`` of ``objects`` (``commit:path``), by ``names``: one process
    for every file; a missing one is None."""
    request = "".join(f"{o}\n" for o in objects).encode("utf-8")
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}
    try:
        done = subprocess.run(
            ["git", "-C", str(folder), "cat-file", "--batch"],
            input=request,
            capture_output=True,
            timeout=_GIT_TIMEOUT,
            env=env,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return dict.fromkeys(names)
    out, at = done.stdout, 0
    found: dict[str, bytes | None] = {}
    for name in names:
        end = out.find(b"\n", at)
        if end < 0:
            found[name] = None
            continue
        header = out[at:end].split()
        at = end + 1
        if len(header) == 3 and header[1] == b"blob":
            size = int(header[2])
            found[name] = out[at : at + size]
            at += size + 1  # the content, then a newline
        else:  # "<object> missing", or not a file
            found[name] = None
            if len(header) == 3:  # a tree or another object: its content follows
                at += int(header[2]) + 1
    return found


@functools.lru_cache(maxsize=8)
def _prefix(folder: Path) -> str | None:
    """``folder``'s path inside its repository (asked once, whatever the refs tried)."""
    inside = _git(folder, "rev-parse", "--show-prefix")
    if inside is None or inside.returncode != 0:
        return None
    return inside.stdout.decode("utf-8").strip()


def open_git(folder: Path, ref: str, *, required: bool) -> BaselineFixtures | None:
    """The fixtures folder ``folder`` as git holds it at ``ref``; None when git cannot
    read it and it is not ``required`` (a named ``--baseline-ref`` is)."""
    if not ref or ref.startswith("-") or any(c in ref for c in "\0\n"):
        raise UsageError(
            f"--baseline-ref {ref!r} is not a git revision; name a branch, tag or commit"
        )
    if not folder.is_dir():
        return None
    probe = _git(folder, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    if probe is None or probe.returncode != 0:
        if required:
            raise UsageError(
                f"git cannot resolve {ref!r} in {folder.as_posix()}; fetch it first "
                f"(git fetch origin main) or pass --baseline-fixtures DIR"
            )
        return None
    commit = probe.stdout.decode().strip()
    prefix = _prefix(folder)
    if prefix is None:
        return None

    def read(names: Sequence[str]) -> dict[str, bytes | None]:
        return _cat_files(folder, [f"{commit}:{prefix}{name}" for name in names], names)

    label = f"{ref}:{folder.as_posix()}"
    raw = read([FIXTURE_MANIFEST])[FIXTURE_MANIFEST]
    manifest = None
    if raw is not None:
        where = f"{label}/{FIXTURE_MANIFEST}"
        data: Any = parse_json(raw, where)
        validate(data, "fixture-manifest", where, "fixture manifest")
        manifest = data
    elif not required:
        return None
    return BaselineFixtures(label, read, manifest)


def baseline_fixtures(
    fixtures: Path, baseline: Mapping[str, Any], ref: str | None, folder: Path | None
) -> tuple[BaselineFixtures | None, list[str]]:
    """The baseline fixtures (module docstring) and notes about them."""
    want = baseline.get("inputs", {}).get("fixturesSha256")
    if folder is not None or ref is not None:
        found = (
            open_folder(folder)
            if folder is not None
            else open_git(fixtures, ref or "", required=True)
        )
        assert found is not None
        if want is not None and found.digest() != want:
            return found, [
                f"the baseline fixtures at {found.label} are not the ones the baseline was "
                "scored from (their digest differs); stages are compared against them anyway"
            ]
        return found, []
    for candidate in DEFAULT_REFS:
        found = open_git(fixtures, candidate, required=False)
        if found is not None and want is not None and found.digest() == want:
            return found, []
    return None, [f"stages were not attributed: the baseline's fixtures were not found; {_NAME_IT}"]


def documents(manifest: Mapping[str, Any] | None, case_id: str) -> Mapping[str, str] | None:
    """The corpus documents (source -> digest) the manifest records for the capture
    of ``case_id``'s fixture (None: not recorded)."""
    if manifest is None:
        return None
    entry = manifest["fixtures"].get(case_id)
    if entry is None:
        return None
    corpus = manifest["captures"][entry["capture"]].get("corpus") or {}
    documents = corpus.get("documents")
    return None if documents is None else dict(documents)


def attribute(
    diff: dict[str, Any],
    fixtures: Path,
    baseline: Mapping[str, Any],
    ref: str | None,
    folder: Path | None,
) -> list[str]:
    """Attribute the diff's losses to stages (``attribute_diff``); the notes to show."""
    wanted = [c["id"] for c in diff["cases"] if c.get("lost")]
    if not wanted or baseline.get("privacy") is True:
        return []
    source, notes = baseline_fixtures(fixtures, baseline, ref, folder)
    if source is None:
        diff["attribution"] = {"baselineFixtures": None, "attributedCases": 0}
        diff["notes"] = [*diff["notes"], *notes]
        return notes
    attribute_with(diff, fixtures, source)
    diff["notes"] = [*diff["notes"], *notes]
    return notes


def attribute_with(diff: dict[str, Any], fixtures: Path, source: BaselineFixtures) -> None:
    """Attribute the losses of the diff's cases (``attribute_diff``) from the baseline
    fixtures ``source`` and the current ones in the folder ``fixtures``; ``pytest
    --ragsnap`` finds ``source`` once and attributes each failing case with it."""
    current = read_manifest(fixtures)
    sides: dict[str, tuple[Side, Side]] = {}
    wanted = [c["id"] for c in diff["cases"] if c.get("lost")]
    old = source.fixtures(wanted)
    for case_id in wanted:
        path = fixtures / f"{case_id}.json"
        now: Any = None
        if path.is_file():
            now = parse_json(read_bytes(path, "re-snapshot", kind="fixture"), path)
        sides[case_id] = (
            Side(old[case_id], documents(source.manifest, case_id)),
            Side(now, documents(current, case_id)),
        )
    attribute_diff(diff, sides, source.label)

"""``ragsnap snapshot``: every golden case's live lookup written as ``fixtures/{caseId}.json``.

Every lookup runs (and every answer is checked against the fixture contract)
before the first file is written, so a service that fails half-way leaves the
fixtures as they were. A fixture whose retrieval did not change is left as it is,
bytes and ``retrievedAt`` included, so a rerun makes no diff: identities compare
exactly and numbers within ``snapshot.tolerance`` (``ragsnap.snapshot.fixturediff``).
What did change is summarised per case for the reviewer: the settings it was
written with, sources gained, lost and moved, then each change as
``path old -> new``. ``--check`` writes nothing and exits 1 when any fixture
would change; it first reads every committed fixture with the rules ``score``
applies, so a fixture ``score`` would refuse is bad input (exit 2), never "up
to date".

Beside the fixtures, ``fixtures/_manifest.json`` records what each fixture was
captured from: the settings of ragsnap.yaml that shape a lookup, and a digest of
every document the store held (``ragsnap.snapshot.provenance``), so
``score``, ``check`` and ``pytest --ragsnap`` catch a fixture left stale by a
seed-document or settings edit. A fixture whose lookup did not change keeps its
bytes; only its manifest entry moves to the new capture. ``--check`` also fails
when the manifest would change (a corpus edit that moved no lookup still needs
``ragsnap snapshot`` to record it).

``--prune`` deletes the fixtures no case names, and only fixtures: files that are
valid against the fixture schema with the ``caseId`` of their name
(``ragsnap.io.inputs.is_fixture``). Any other ``*.json`` there is listed as "not a
fixture, left alone", and a ``--fixtures`` folder that holds anything else the
command reads (the cases file, the configuration: ``--fixtures cases``,
``--fixtures .``) is refused before anything runs. No fixture is written over or
into another input (``ragsnap.io.reads``).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import hashlib
import os
import sys
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from ..config import Config, load_config
from ..errors import BackendError, InputError, OutputError, UsageError
from ..io.inputs import FIXTURE_MANIFEST, is_fixture, load_cases, load_fixtures, read_manifest
from ..io.jsonio import check_outputs, dump_json, read_bytes, write_outputs
from ..io.progress import Progress
from ..io.reads import Read, reads_of
from ..io.schema import validate
from ..kb.backends.registry import LOOKUP_PARTS, get_backend
from ..models import GoldenCase
from ..snapshot.capture import LookupSource, PipelineSource, snapshot_case, without_latencies
from ..snapshot.fixturediff import fixture_changes
from ..snapshot.provenance import Capture, Manifest, check_provenance
from . import (
    DEFAULT_JSON_REPORT,
    DEFAULT_MARKDOWN_REPORT,
    one_blas_thread,
    run_each,
    select_cases,
    utc_now,
)
from ._kb import backend_of, entry_of, options_of, with_options
from ._provenance import captured_documents, folder_name, settings_of

#: at most this many changed cases are listed one per line
LISTED = 40


@contextlib.contextmanager
def open_source(
    args: argparse.Namespace, config: Config, lookups: float | None = None
) -> Iterator[tuple[LookupSource, str]]:
    """The lookup source ``--backend`` names, and a description for messages;
    ``lookups``: how many the command will run (``open_pipeline``)."""
    entry = entry_of(args, config)
    options = dataclasses.replace(options_of(args), method=args.method)
    if entry.open_source is not None:  # whole lookups answered by something else
        if args.kb is not None:
            raise UsageError(
                f"--kb is for a local knowledge base; {entry.answered_by} runs its own "
                "lookup: drop --kb or use --backend embedded"
            )
        if args.method is not None and not entry.methods:
            raise UsageError(
                f"--method chooses among ragsnap's methods or a service's http.methods; "
                f"{entry.answered_by} has none: drop --method"
            )
        entry.check_options(options, ("--base-url", "--token-file", "--token-env", "--retriever"))
        with entry.open_source(config, options) as (source, described):
            yield source, described
        return
    entry.check_options(options, ("--base-url", "--token-file", "--token-env", "--retriever"))
    from ._kb import open_pipeline, store_name

    settings = config.lookup
    if args.method is not None:
        settings = dataclasses.replace(settings, method=args.method)
    path = store_name(entry.name, args, config)
    with open_pipeline(entry.name, args, config, settings=settings, lookups=lookups) as pipeline:
        yield PipelineSource(pipeline, record_latency=args.latency), f"{entry.name} ({path})"


def _check_retrieved_at(value: str | None) -> str | None:
    if value is None:
        return None
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(
            f"--retrieved-at {value!r} is not an ISO 8601 time; pass e.g. 2026-07-06T00:00:00Z"
        ) from None
    if "T" not in value or not (value.endswith("Z") or value[-6] in "+-"):
        raise UsageError(
            f"--retrieved-at {value!r} needs a date, a time and a zone; "
            "pass e.g. 2026-07-06T00:00:00Z"
        )
    return value


def _read_old(path: Path) -> tuple[dict[str, Any] | None, bytes | None]:
    """The current fixture at ``path`` and its bytes (None, None when absent; None and
    the bytes when it is not a JSON object)."""
    if not path.is_file():
        return None, None
    raw = read_bytes(path, "check the file's permissions", kind="fixture")
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None, raw
    return (data if isinstance(data, dict) else None), raw


def _fixture_files(folder: Path) -> list[str]:
    """The names of the fixture files in ``folder`` (the manifest is not one)."""
    if not folder.is_dir():
        return []
    with os.scandir(folder) as entries:
        return sorted(
            e.name
            for e in entries
            if e.name.endswith(".json") and e.name != FIXTURE_MANIFEST and e.is_file()
        )


def _orphans(folder: Path, case_ids: set[str]) -> tuple[list[Path], list[Path]]:
    """The files in ``folder`` that no case names: the fixtures (what ``--prune``
    deletes), and the other ``*.json`` files (never deleted, said)."""
    names = _fixture_files(folder)
    unnamed = [folder / name for name in names if name[: -len(".json")] not in case_ids]
    fixtures = [path for path in unnamed if is_fixture(path)]
    return fixtures, [path for path in unnamed if path not in fixtures]


def _check_prune(folder: Path, reads: list[Read]) -> None:
    """Refuse ``--prune`` of a folder that holds anything the command reads (the cases
    file, the configuration ...): it is not a fixtures folder alone."""
    place = folder.resolve()
    for read in reads:
        if read.option == "--fixtures" or not read.path.exists():
            continue
        if read.path.resolve().is_relative_to(place):
            raise UsageError(
                f"--fixtures {folder}: holds {read.path}, {read.what}; --prune deletes what no "
                "case names in the fixtures folder, so it refuses a folder that holds anything "
                "else ragsnap reads. Pass the folder of {caseId}.json fixtures (default: "
                "fixtures), or drop --prune"
            )


def _old_manifest(folder: Path, check: bool) -> Manifest | None:
    """The folder's manifest; an unreadable one is replaced by a run that writes (said),
    and is bad input for ``--check``."""
    try:
        raw = read_manifest(folder)
    except InputError as exc:
        if check:
            raise
        print(f"snapshot: replacing {folder / FIXTURE_MANIFEST} ({exc.problem})")
        return None
    return None if raw is None else Manifest.from_json(raw)


def run(args: argparse.Namespace) -> int:
    """Run the command with BLAS on one thread (``one_blas_thread``)."""
    with one_blas_thread():
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    config = with_options(args, load_config(args.config, embedder=getattr(args, "embedder", None)))
    retrieved_at = _check_retrieved_at(args.retrieved_at)
    if args.check and args.prune:
        raise UsageError("--check writes nothing and --prune deletes files; pick one")
    case_set = load_cases(args.cases)
    cases = select_cases(list(case_set.cases), args.case, args.cases)
    folder: Path = args.fixtures
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"--fixtures {folder} is a file, not a folder; pass a folder")
    manifest_path = folder / FIXTURE_MANIFEST
    if not args.check:
        reads = reads_of(args, config, updates=["fixtures"])
        check_outputs(
            [("--fixtures", p) for p in (*(folder / f"{c.id}.json" for c in cases), manifest_path)],
            inputs=reads,
            allow_outside=args.allow_outside,
        )
        if args.prune:
            _check_prune(folder, reads)
    elif folder.is_dir():
        load_fixtures(folder)  # what score would refuse is bad input here too
    old_manifest = _old_manifest(folder, args.check)
    orphans, strangers = _orphans(folder, {case.id for case in case_set.cases})
    stamp = retrieved_at or utc_now()
    started = time.perf_counter()

    with open_source(args, config, lookups=len(cases)) as (source, described):
        concurrency = args.concurrency or entry_of(args, config).concurrency(config)
        generator = source.generator()
        fix = entry_of(args, config).fix
        progress = Progress(len(cases), "snapshot", "cases")

        def one(case: GoldenCase) -> tuple[dict[str, Any], bytes]:
            try:
                fixture = snapshot_case(
                    source, case, retrieved_at=stamp, kb_scope=args.kb_scope, generator=generator
                )
            except BackendError as exc:  # which lookup failed: the case
                raise BackendError(f"case {case.id}: {exc}") from None
            if not args.latency:  # a service measures them anyway: fixtures stay stable
                fixture = without_latencies(fixture)
            where = folder / f"{case.id}.json"
            try:
                validate(fixture, "fixture", where, "fixture")
            except InputError as exc:
                raise BackendError(
                    f"case {case.id}: the {described} answer does not fit the fixture contract "
                    f"({exc.problem} at {exc.pointer or 'the top'}); {fix}"
                ) from None
            # what the file will hold: floats rounded as the writer rounds them
            raw = dump_json(fixture)
            data: dict[str, Any] = orjson.loads(raw)
            return data, raw

        fixtures = run_each(one, cases, concurrency, progress)
        documents, revision = source.corpus()
    elapsed = time.perf_counter() - started
    backend = str(generator.get("backend", backend_of(args, config)))
    entry = get_backend(backend)
    method = args.method if entry.looks_up == "pipeline" or entry.methods else None
    recorded, behind = captured_documents(documents, config)
    capture = Capture(settings_of(config, backend, method), recorded, revision)

    changed: list[tuple[str, list[str]]] = []
    writes: list[tuple[Path, bytes]] = []
    digests: dict[str, str] = {}
    for case, (fixture, raw) in zip(cases, fixtures, strict=True):
        path = folder / f"{case.id}.json"
        old, old_raw = _read_old(path)
        reasons = fixture_changes(old, fixture, config.snapshot_tolerance)
        kept = raw if old_raw is None else old_raw
        if reasons:
            changed.append((case.id, reasons))
            writes.append((path, raw))
            kept = raw
        elif retrieved_at is not None and old != fixture:
            writes.append((path, raw))  # same retrieval, newly pinned timestamp
            kept = raw
        digests[case.id] = hashlib.sha256(kept).hexdigest()
    pruned = {p.name for p in orphans} if args.prune else set()
    present = {
        name[: -len(".json")] for name in _fixture_files(folder) if name not in pruned
    } | set(digests)
    manifest = (old_manifest or Manifest()).updated(capture, digests, present)
    manifest_raw = dump_json(manifest.to_json())
    manifest_moved = not manifest_path.is_file() or manifest_path.read_bytes() != manifest_raw
    if args.check and old_manifest is not None:
        manifest_moved = old_manifest.captures_of() != manifest.captures_of()

    if not args.check:
        if manifest_moved:
            writes.append((manifest_path, manifest_raw))
        if writes:
            folder.mkdir(parents=True, exist_ok=True)
        write_outputs(dict(writes))
        for path in orphans if args.prune else []:
            try:
                path.unlink()
            except OSError as exc:
                raise OutputError(
                    f"{path}: cannot delete ({exc.strerror}); remove it by hand"
                ) from None
    verb = "would change" if args.check else "changed"
    new = sum(1 for _, reasons in changed if reasons == ["new fixture"])
    print(
        f"snapshot: {len(cases)} case(s) from {described} in {elapsed:.1f} s: "
        f"{len(changed) - new} {verb}, {new} new, {len(cases) - len(changed)} unchanged"
    )
    for case_id, reasons in changed[:LISTED]:
        print(f"  {case_id}: {'; '.join(reasons)}")
    if len(changed) > LISTED:
        print(f"  ... and {len(changed) - LISTED} more")
    empty = [part for part in LOOKUP_PARTS if part not in entry.records]
    if empty:
        print(
            f"snapshot: the {backend} backend records {', '.join(entry.records)} only; "
            f"{', '.join(empty)} are left out, so expectations on them are not "
            "applicable (counted in every report)"
        )
    if orphans:
        action = "deleted" if args.prune else "no case; --prune deletes them"
        print(f"orphaned fixtures ({action}): " + ", ".join(p.name for p in orphans))
    if strangers:
        print(
            f"not a fixture, left alone (in {folder}, named by no case): "
            + ", ".join(p.name for p in strangers)
        )

    if behind:
        shown = ", ".join(behind[:LISTED]) + (" ..." if len(behind) > LISTED else "")
        print(
            f"snapshot: the knowledge base does not hold {config.kb.seed_docs.as_posix()} as "
            f"it is now ({len(behind)} document(s) differ: {shown}); run `ragsnap seed` "
            "first, then `ragsnap snapshot`"
        )
    if args.check:
        if behind:
            return 1
        if changed:
            print("snapshot --check: fixtures are out of date; run `ragsnap snapshot` and commit")
            return 1
        if manifest_moved:
            state = "is missing" if old_manifest is None else "records another corpus or settings"
            print(
                f"snapshot --check: the fixtures' lookups are unchanged, but {manifest_path} "
                f"{state}; run `ragsnap snapshot` and commit it"
            )
            if old_manifest is not None:
                moved = check_provenance(old_manifest, digests, capture, folder=folder_name(folder))
                print("\n".join(f"  {line}" for line in moved.problems))
            return 1
        print("snapshot --check: fixtures are up to date")
        return 0

    fixtures_written = len(writes) - (1 if manifest_moved else 0)
    also = f" and {manifest_path}" if manifest_moved else ""
    print(f"wrote {fixtures_written} fixture(s) to {folder}{also}")
    sys.stdout.flush()
    if args.skip_eval:
        return 0
    return _score(args)


def _score(args: argparse.Namespace) -> int:
    """Run ``ragsnap score`` on the fixtures, as the seed's generator runs the scorer."""
    from . import score

    print("score:", flush=True)
    code: int = score.run(score_args(args, DEFAULT_JSON_REPORT, DEFAULT_MARKDOWN_REPORT))
    return code


def score_args(
    args: argparse.Namespace, json_report: Path, markdown_report: Path
) -> argparse.Namespace:
    """The arguments of a ``ragsnap score`` run, with no baseline diff, of the cases and
    fixtures a snapshot (or ``ragsnap accept``) just wrote."""
    return argparse.Namespace(
        cases=args.cases,
        fixtures=args.fixtures,
        json_report=json_report,
        markdown_report=markdown_report,
        compare_to=None,
        diff_json_report=None,
        diff_markdown_report=None,
        config=args.config,
        embedder=getattr(args, "embedder", None),
        max_listed=getattr(args, "max_listed", 20),
        allow_outside=args.allow_outside,
        extra_reports=[],
        junit_xml=None,
        require_significance=False,
    )

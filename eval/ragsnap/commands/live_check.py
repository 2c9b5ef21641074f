"""``ragsnap live-check``: a smoke check of a running service after a reindex.

Every golden case's query goes to the service's similarity search
(``GET /api/search/similar`` by default, mapped by the ``http`` section of
ragsnap.yaml), or, with ``--backend python`` (or ``kb.backend: python``), to the
Python retriever's ``search``: the backend registry's ``open_search``; a case
passes when an expected source is in its top K (see ``ragsnap.live.livecheck``).
The first request runs alone, so an unreachable service fails after one
request's retries rather than one per case; the rest run ``--concurrency`` at a
time. Both reports are written only after
every request succeeded. ``--privacy`` writes their privacy views
(``ragsnap.live.privacy``): ids, hashes and counts, never a query, source,
URL or endpoint.

``--state STATE`` (of ``ragsnap prepare``) verifies the prepared service before
and after the lookups under the state's lock, ``--repeat-check`` sends each
search twice and compares the answers, ``--max-requests`` caps the requests of
the run (``ragsnap.live.verification`` is the spec).
"""

from __future__ import annotations

import argparse
import contextlib
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..config import Config, load_config
from ..errors import BackendError, ServiceUnreachable, UsageError
from ..io.inputs import load_cases
from ..io.jsonio import check_outputs, write_outputs
from ..io.progress import Progress
from ..io.reads import labelled, reads_of
from ..kb.backends.http import DEFAULT_BASE_URL
from ..kb.backends.registry import Backend, BackendOptions, get_backend
from ..live.livecheck import (
    LiveAnswer,
    build_live_report,
    is_known_failure,
    public_url,
    raw_fields,
    render_live_markdown,
)
from ..live.verification import (
    RequestBudget,
    ServiceVerifier,
    check_budget,
    repeat_failures,
    service_section,
)
from ..models import GoldenCase
from . import run_each, select_cases, utc_now

#: at most this many failed cases are listed on the terminal, one per line
LISTED = 20


def _origin(args: argparse.Namespace, config: Config) -> str:
    """Where the base URL came from, for messages."""
    if args.base_url is not None:
        return "--base-url"
    if config.http.base_url != DEFAULT_BASE_URL:
        return f"http.baseUrl in {config.http.source}"
    return "the default base URL"


@contextlib.contextmanager
def _state_locked(
    args: argparse.Namespace, budget: RequestBudget
) -> Iterator[ServiceVerifier | None]:
    """The verifier of ``--state``, its lock held for the ``with`` block (None without)."""
    if args.state is None:
        yield None
        return
    from ..io.locks import writer_lock
    from ..live.preparation import load_state

    with writer_lock(args.state, "ragsnap live-check"):
        if not args.state.exists():
            raise UsageError(
                f"{args.state}: no state to verify; run `ragsnap prepare --state {args.state}` "
                "first, or leave out --state"
            )
        state = load_state(args.state, "pass the state file `ragsnap prepare` wrote")
        yield ServiceVerifier(args.state, state, budget)


def run(args: argparse.Namespace) -> int:
    config = load_config(args.config)
    case_set = load_cases(args.cases)
    cases = select_cases(list(case_set.cases), args.case, args.cases)
    json_path: Path = args.json_report
    markdown_path: Path = args.markdown_report
    html_path: Path | None = args.html_report
    reads = reads_of(args, config, updates=["state"])
    check_outputs(
        labelled(args, [json_path, markdown_path, *([html_path] if html_path else [])]),
        inputs=reads,
        allow_outside=args.allow_outside,
    )
    if args.state is not None:  # updated in place, in a private folder of its own anywhere
        check_outputs([("--state", args.state)], inputs=reads, allow_outside=True)
    entry = _backend(args, config)
    entry.check_options(
        _options(args),
        (
            "--base-url",
            "--token-file",
            "--token-env",
            "--retriever",
            "--max-records",
            "--max-bytes",
        ),
    )
    if args.state is not None and entry.seeds != "service":
        raise UsageError(
            f"--state verifies a service `ragsnap prepare` prepared; the {entry.name} backend "
            "has none: drop --state"
        )
    if args.state is not None:
        from ..live.preparation import check_state_path

        check_state_path(args.state)  # before the lock is taken or anything is sent
    check_budget(args.max_requests, len(cases), args.repeat_check, args.state is not None)
    budget = RequestBudget(args.max_requests)
    with _state_locked(args, budget) as verifier:
        return _check(args, config, entry, case_set.sha256, cases, budget, verifier)


def _backend(args: argparse.Namespace, config: Config) -> Backend:
    """``--backend``, else ``kb.backend`` when it can search, else ``http``: the backend
    whose similarity search is checked (``Backend.open_search``)."""
    given: str | None = getattr(args, "backend", None)
    if given is not None:
        return get_backend(given)
    configured = get_backend(config.kb.backend, "kb.backend")
    return configured if configured.open_search is not None else get_backend("http")


def _options(args: argparse.Namespace) -> BackendOptions:
    return BackendOptions(
        base_url=args.base_url,
        token_file=args.token_file,
        token_env=args.token_env,
        retriever=getattr(args, "retriever", None),
        max_records=args.max_records,
        max_bytes=args.max_bytes,
    )


def _check(
    args: argparse.Namespace,
    config: Config,
    entry: Backend,
    cases_sha256: str,
    cases: list[GoldenCase],
    budget: RequestBudget,
    verifier: ServiceVerifier | None,
) -> int:
    json_path: Path = args.json_report
    markdown_path: Path = args.markdown_report
    html_path: Path | None = args.html_report
    sectioned = verifier is not None or args.repeat_check or args.max_requests is not None
    checked_at = utc_now()
    started = time.perf_counter()
    repeats: dict[str, tuple[Any, ...]] = {}

    assert entry.open_search is not None  # live-check offers only backends that search
    with entry.open_search(config, _options(args)) as found:
        service = found.service
        url = public_url(found.where)
        endpoint = found.endpoint
        concurrency = args.concurrency or entry.concurrency(config)
        progress = Progress(len(cases), "live-check", "cases")

        def search(query: str, top_k: int, kb_scope: str | None) -> tuple[Any, list[Any]]:
            budget.spend("lookup")
            return found.search(query, top_k, kb_scope)

        def ask(case: GoldenCase) -> LiveAnswer:
            kb_scope = args.kb_scope if args.kb_scope is not None else case.kb_scope
            top_k = args.top_k or case.top_k
            try:
                raw, items = search(case.query, top_k, kb_scope)
                if args.repeat_check:
                    repeats[case.id] = tuple(search(case.query, top_k, kb_scope)[1])
            except ServiceUnreachable as exc:
                raise ServiceUnreachable(
                    f"the service at {url} (from {_origin(args, config)}) did not answer "
                    f"{endpoint} ({type(exc.__context__).__name__}, after "
                    f"{found.retries} retries); start the service, or pass "
                    "--base-url with the URL it listens on"
                ) from None
            except BackendError as exc:
                raise BackendError(f"case {case.id}: {exc}") from None
            fields = raw_fields(raw, found.results_path)
            return LiveAnswer(kb_scope, top_k, tuple(items), fields)

        if verifier is not None:
            verifier.verify(service, "before")
        answers = run_each(ask, cases, concurrency, progress)
        if verifier is not None:
            verifier.verify(service, "after")
    elapsed = time.perf_counter() - started

    section = None
    if sectioned:
        unstable = (
            repeat_failures(
                [c.id for c in cases], [a.items for a in answers], [repeats[c.id] for c in cases]
            )
            if args.repeat_check
            else None
        )
        if verifier is not None:
            section = verifier.section(unstable, len(cases))
        else:
            section = service_section(
                state=None,
                before=None,
                after=None,
                failures=unstable or [],
                repeat=None if unstable is None else (len(cases), len(unstable)),
                budget=budget,
            )
    report = build_live_report(
        cases,
        answers,
        base_url=url,
        endpoint=endpoint,
        cases_file=str(args.cases),
        cases_sha256=cases_sha256,
        checked_at=checked_at,
        overrides={"kbScope": args.kb_scope, "topK": args.top_k},
        service=section,
    )
    if args.privacy:
        from ..io.schema import validate
        from ..live.privacy import private_live

        report = private_live(report)
        validate(report, "private-live-report", json_path, "live-check report")
    outputs: dict[Path, Any] = {json_path: report, markdown_path: render_live_markdown(report)}
    if html_path is not None:
        from ..live.html import render_live_html

        outputs[html_path] = render_live_html(report)
    write_outputs(outputs)

    s = report["summary"]
    print(
        f"live-check: {s['cases']} case(s) against {url} in {elapsed:.1f} s: "
        f"{s['passed']} passed, {s['failed']} failed ({s['knownFailures']} known), "
        f"{s['skipped']} skipped; {s['empty']} returned no results"
    )
    failed = [c for c in report["cases"] if c["status"] == "fail"]
    failed.sort(key=is_known_failure)  # new failures first
    for c in failed[:LISTED]:
        label = "known failure" if is_known_failure(c) else "FAIL"
        print(f"  {label} {c['caseId']}: {c['reason']}")
    if len(failed) > LISTED:
        print(f"  ... and {len(failed) - LISTED} more")
    if s["allEmpty"]:
        print(
            f"live-check: every case returned no results: the index behind {url} looks "
            "empty; reindex the knowledge base (or check the cases' kbScope, --kb-scope)"
        )
    verification = report.get("service")
    if verification is not None:
        _print_service(verification)
    names = [path.as_posix() for path in outputs]
    print(f"wrote {', '.join(names[:-1])} and {names[-1]}")
    return 0 if s["verdict"] == "pass" else 1


def _print_service(service: dict[str, Any]) -> None:
    c = service["counters"]
    phases = [
        f"{name} {'passed' if result['passed'] else 'FAILED'}"
        for name in ("before", "after")
        if (result := service[name]) is not None
    ]
    if service["repeatCheck"] is not None:
        phases.append(f"repeat check {service['repeatCheck']['unstable']} unstable")
    verdict = "INVALID" if service["verdict"] == "invalid" else "valid"
    print(
        f"live-check: service verification {verdict}: {', '.join(phases) or 'no checks'}; "
        f"{c['requests']} request(s) ({c['verificationRequests']} verification, "
        f"{c['lookups']} lookup(s))"
    )
    failures = service["failures"]
    for f in failures[:LISTED]:  # a privacy view has no messages: ids instead
        what = f.get("message") or f["caseId"] or f["documentId"] or ""
        print(f"  {f['phase']} {f['kind']}: {what}")
    if len(failures) > LISTED:
        print(f"  ... and {len(failures) - LISTED} more")
    if failures:
        print(
            "live-check: the run is invalid (the service changed or answered unstably); the "
            "case results do not count. Re-prepare or fix the service, then run it again"
        )

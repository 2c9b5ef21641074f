"""``ragsnap live-check``: a smoke check of a running service after a reindex.

Every golden case's query goes to the service's similarity search
(``GET /api/search/similar`` by default, mapped by the ``http`` section of
ragsnap.yaml); a case passes when an expected source is in its top K (see
``ragsnap.live.livecheck``). The first request runs alone, so an unreachable
service fails after one request's retries rather than one per case; the
rest run ``--concurrency`` at a time. Both reports are written only after
every request succeeded. ``--privacy`` writes their privacy views
(``ragsnap.live.privacy``): ids, hashes and counts, never a query, source,
URL or endpoint.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from ..config import Config, load_config
from ..errors import BackendError, ServiceUnreachable
from ..io.httpclient import read_token
from ..io.inputs import load_cases
from ..io.jsonio import check_outputs, write_outputs
from ..io.progress import Progress
from ..kb.backends.http import DEFAULT_BASE_URL, HttpService
from ..live.livecheck import (
    LiveAnswer,
    build_live_report,
    is_known_failure,
    public_url,
    raw_fields,
    render_live_markdown,
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


def run(args: argparse.Namespace) -> int:
    config = load_config(args.config)
    case_set = load_cases(args.cases)
    cases = select_cases(list(case_set.cases), args.case, args.cases)
    json_path: Path = args.json_report
    markdown_path: Path = args.markdown_report
    html_path: Path | None = args.html_report
    check_outputs(
        [json_path, markdown_path, *([html_path] if html_path is not None else [])],
        inputs=[args.cases, args.config, args.token_file],
        allow_outside=args.allow_outside,
    )
    token = read_token(args.token_file, args.token_env)
    checked_at = utc_now()
    started = time.perf_counter()

    with HttpService(config.http, base_url=args.base_url, token=token) as service:
        url = public_url(service.base_url)
        endpoint = f"GET {service.mapping.similar_path}"
        concurrency = args.concurrency or config.http.concurrency
        progress = Progress(len(cases), "live-check", "cases")

        def ask(case: GoldenCase) -> LiveAnswer:
            kb_scope = args.kb_scope if args.kb_scope is not None else case.kb_scope
            top_k = args.top_k or case.top_k
            try:
                raw, items = service.similar(case.query, top_k=top_k, kb_scope=kb_scope)
            except ServiceUnreachable as exc:
                raise ServiceUnreachable(
                    f"the service at {url} (from {_origin(args, config)}) did not answer "
                    f"{endpoint} ({type(exc.__context__).__name__}, after "
                    f"{service.mapping.retries} retries); start the service, or pass "
                    "--base-url with the URL it listens on"
                ) from None
            except BackendError as exc:
                raise BackendError(f"case {case.id}: {exc}") from None
            fields = raw_fields(raw, service.mapping.similar_results)
            return LiveAnswer(kb_scope, top_k, tuple(items), fields)

        answers = run_each(ask, cases, concurrency, progress)
    elapsed = time.perf_counter() - started

    report = build_live_report(
        cases,
        answers,
        base_url=url,
        endpoint=endpoint,
        cases_file=str(args.cases),
        cases_sha256=case_set.sha256,
        checked_at=checked_at,
        overrides={"kbScope": args.kb_scope, "topK": args.top_k},
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
    names = [path.as_posix() for path in outputs]
    print(f"wrote {', '.join(names[:-1])} and {names[-1]}")
    return 1 if s["verdict"] == "fail" else 0

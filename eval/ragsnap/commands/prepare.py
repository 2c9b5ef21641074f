"""``ragsnap prepare --backend http --state STATE``: resumable, locked preparation of a
live service (``ragsnap.live.preparation`` is the spec)."""

from __future__ import annotations

import argparse
import sys
import time

from ..config import load_config


def run(args: argparse.Namespace) -> int:
    from ..io.httpclient import read_token
    from ..io.jsonio import check_outputs
    from ..io.reads import reads_of
    from ..kb.backends.http import HttpService
    from ..kb.corpus import open_seed_docs
    from ..live.preparation import check_state_path, prepare

    config = load_config(args.config)
    # the state is written (replaced by --reset-state): never over another input; it
    # lives in a private folder of its own, anywhere
    reads = reads_of(args, config, updates=["state"])
    check_outputs([("--state", args.state)], inputs=reads, allow_outside=True)
    check_state_path(args.state)  # before the corpus is read or anything is sent
    folder = args.seed_docs if args.seed_docs is not None else config.kb.seed_docs
    started = time.perf_counter()
    docs = list(open_seed_docs(folder))  # every document parsed and checked first
    token = read_token(args.token_file, args.token_env)
    mapping = config.http.with_budgets(args.max_records, args.max_bytes)
    with HttpService(mapping, base_url=args.base_url, token=token) as service:
        result = prepare(
            service,
            args.state,
            docs,
            reset=args.reset_state,
            max_requests=args.max_requests,
            verify_only=args.verify_only,
        )
        where = service.base_url
    c = result.counters
    if result.recreated:
        print(
            f"prepare: the service had lost {len(result.recreated)} document(s) of "
            f"{args.state} (first: {result.recreated[0]}); uploaded again under new "
            "idempotency keys"
        )
    elapsed = time.perf_counter() - started
    verdict = "verified" if not result.failures else f"{len(result.failures)} failure(s)"
    print(
        f"prepare: {verdict}; {result.documents} documents on {where}: {c.uploads} uploaded, "
        f"{c.skipped} skipped, {c.verified} verified; {c.requests} requests, "
        f"{result.checkpoints} checkpoint(s) of {args.state} ({elapsed:.1f} s)"
    )
    if result.failures:
        for failure in result.failures[:50]:
            print(f"  {failure}")
        if len(result.failures) > 50:
            print(f"  ... and {len(result.failures) - 50} more")
        print(f"The failures are recorded in {args.state} (verification.failures).")
    sys.stdout.flush()
    return 1 if result.failures else 0

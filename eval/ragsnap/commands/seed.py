"""``ragsnap seed``: import seed-docs/*.md (or a JSONL corpus) into the knowledge base."""

from __future__ import annotations

import argparse
import sys
import time

from ..backends.sqlite import SqliteKnowledgeBase
from ..config import Config, load_config
from ..corpus import SeedCorpus, markdown_of, open_seed_docs
from ..errors import UsageError
from ..progress import Progress
from ..seeding import SeedPlan, index_hashes, seed
from ._kb import kb_path, open_embedder, open_tokenizer


def run(args: argparse.Namespace) -> int:
    config = load_config(args.config)
    folder = args.seed_docs if args.seed_docs is not None else config.kb.seed_docs
    started = time.perf_counter()
    docs = open_seed_docs(folder)
    hashes = index_hashes(docs, config.kb.chunking)  # every document checked before the store opens
    if (args.backend or config.kb.backend) == "http":
        return _seed_http(args, config, docs, len(hashes), started)
    if args.base_url is not None:
        raise UsageError("--base-url is for --backend http; drop it or add --backend http")
    tokenizer = open_tokenizer(config)
    embedder = open_embedder(config)
    path = kb_path(args, config)
    progress: Progress | None = None

    def before_write(plan: SeedPlan) -> None:
        nonlocal progress
        progress = Progress(len(plan.added) + len(plan.updated), "seed", "documents")

    with SqliteKnowledgeBase(path) as kb:
        plan = seed(
            kb,
            docs,
            embedder,
            tokenizer,
            config.kb.chunking,
            reindex=args.reindex,
            hashes=hashes,
            where=str(path),
            on_upload=lambda _up: progress.advance() if progress else None,
            before_write=before_write,
        )
        if progress is not None:
            progress.close()
        chunks = kb.count()
    elapsed = time.perf_counter() - started
    print(
        f"seed: {plan.summary()}; {plan.total} documents, {chunks} chunks in {path} "
        f"({elapsed:.1f} s)"
    )
    changed = (("added", plan.added), ("updated", plan.updated), ("removed", plan.removed))
    for label, sources in changed:
        if sources and len(sources) <= 20:
            print(f"  {label}: {', '.join(sources)}")
    sys.stdout.flush()
    return 0


def _seed_http(
    args: argparse.Namespace, config: Config, docs: SeedCorpus, total: int, started: float
) -> int:
    """Seed through the service's upload endpoint (it deletes-then-uploads by source).

    Every document is uploaded; the service leaves unchanged ones alone. With a
    document list endpoint, documents the service holds in the seed documents'
    kb_scopes that are no longer seed documents are deleted; documents of other
    scopes, or without one, are never touched.
    """
    from ..backends.http import HttpService
    from ..httpclient import read_token

    if args.reindex:
        raise UsageError(
            "--reindex rebuilds a local knowledge base; reindex the service itself, or "
            "delete its documents and seed again"
        )
    token = read_token(args.token_file, args.token_env)
    counts = {"added": 0, "updated": 0, "unchanged": 0}
    seeded: set[str] = set()
    scopes: set[str] = set()
    with HttpService(config.http, base_url=args.base_url, token=token) as service:
        progress = Progress(total, "seed", "documents")
        for doc in docs:
            name, content = markdown_of(doc)
            answer = service.upload(name, content)
            status = answer.get("status")
            counts[status if status in counts else "updated"] += 1
            seeded.add(doc.source)
            if doc.kb_scope is not None:
                scopes.add(doc.kb_scope)
            progress.advance()
        progress.close()
        stored = service.documents()
        removed = (
            []
            if stored is None
            else sorted(
                d["source"]
                for d in stored
                if d["source"] not in seeded and d.get("kbScope") in scopes
            )
        )
        for source in removed:
            service.delete(source)
        where = service.base_url
    elapsed = time.perf_counter() - started
    listing = "" if stored is not None else " (the service lists no documents: none removed)"
    print(
        f"seed: {counts['added']} added, {counts['updated']} updated, "
        f"{counts['unchanged']} unchanged, {len(removed)} removed; {len(seeded)} documents "
        f"uploaded to {where}{listing} ({elapsed:.1f} s)"
    )
    if removed and len(removed) <= 20:
        print(f"  removed: {', '.join(removed)}")
    return 0

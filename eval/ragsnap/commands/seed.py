"""``ragsnap seed``: import seed-docs/*.md (or a JSONL corpus) into the knowledge base."""

from __future__ import annotations

import argparse
import sys
import time

from ..backends.sqlite import SqliteKnowledgeBase
from ..config import load_config
from ..corpus import open_seed_docs
from ..progress import Progress
from ..seeding import SeedPlan, index_hashes, seed
from ._kb import kb_path, open_embedder, open_tokenizer


def run(args: argparse.Namespace) -> int:
    config = load_config(args.config)
    folder = args.seed_docs if args.seed_docs is not None else config.kb.seed_docs
    started = time.perf_counter()
    docs = open_seed_docs(folder)
    hashes = index_hashes(docs, config.kb.chunking)  # every document checked before the store opens
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

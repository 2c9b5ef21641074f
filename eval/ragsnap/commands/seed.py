"""``ragsnap seed``: import seed-docs/*.md (or a JSONL corpus) into the knowledge base."""

from __future__ import annotations

import argparse
import sys
import time

from ..config import Config, load_config
from ..errors import UsageError
from ..io.jsonio import check_outputs
from ..io.progress import Progress
from ..io.reads import reads_of
from ..kb.backends.registry import get_backend
from ..kb.corpus import SeedCorpus, markdown_of, open_seed_docs
from ..kb.seeding import SeedPlan, index_hash, seed
from ._kb import (
    backend_of,
    entry_of,
    kb_path,
    open_embedder,
    open_store,
    open_tokenizer,
    options_of,
    store_lock,
    store_name,
)


def run(args: argparse.Namespace) -> int:
    config = load_config(args.config, embedder=getattr(args, "embedder", None))
    folder = args.seed_docs if args.seed_docs is not None else config.kb.seed_docs
    backend = backend_of(args, config)
    entry = get_backend(backend)
    if entry.uses_kb:  # the store is written: never over an input
        reads = reads_of(args, config, updates=["kb"])
        check_outputs([("--kb", kb_path(args, config))], inputs=reads, allow_outside=True)
    started = time.perf_counter()
    docs = open_seed_docs(folder)
    # every document is parsed and checked before the store opens
    hashes: dict[str, str] = {}
    for doc in docs:
        hashes[doc.source] = index_hash(doc, config.kb.chunking)
    if entry.seeds == "service":
        return _seed_service(args, config, docs, len(hashes), started)
    entry.check_options(options_of(args), ("--base-url", "--retriever"))
    if entry.seeds == "none":
        return _hand_over(args, config, docs, started)
    tokenizer = open_tokenizer(config)
    embedder = open_embedder(config)
    path = store_name(backend, args, config)
    progress: Progress | None = None

    def before_write(plan: SeedPlan) -> None:
        nonlocal progress
        progress = Progress(len(plan.added) + len(plan.updated), "seed", "documents")

    with store_lock(backend, args, config):  # from reading the store to the commit
        kb = open_store(backend, args, config, create=True, docs=docs)
        try:
            dropped = entry.before_seed(kb, config, docs, reindex=args.reindex, where=path)
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
            if dropped:  # say it as the embedded store does: rebuilt documents were updated
                plan = SeedPlan(
                    added=tuple(s for s in plan.added if s not in dropped),
                    updated=tuple(s for s in plan.added if s in dropped),
                    unchanged=(),
                    removed=tuple(sorted(dropped - set(hashes))),
                )
            chunks = kb.count()
        finally:
            kb.close()
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


def _hand_over(args: argparse.Namespace, config: Config, docs: SeedCorpus, started: float) -> int:
    """A backend that holds its own documents takes them through its hook, if it has
    one (the python backend: ``add_documents`` or ``index``), else refuses."""
    entry = entry_of(args, config)
    if args.reindex:
        raise UsageError(
            f"--reindex rebuilds a local knowledge base; the {entry.name} backend holds its "
            "own documents: drop --reindex"
        )
    assert entry.hand_over is not None
    listed = list(docs)
    where = entry.hand_over(config, options_of(args), listed)
    elapsed = time.perf_counter() - started
    print(f"seed: {len(listed)} documents handed to {where} ({elapsed:.1f} s)")
    return 0


def _seed_service(
    args: argparse.Namespace, config: Config, docs: SeedCorpus, total: int, started: float
) -> int:
    """Seed through the service's upload endpoint (it deletes-then-uploads by source).

    Every document is uploaded; the service leaves unchanged ones alone. With a
    document list endpoint, documents the service holds in the seed documents'
    kb_scopes that are no longer seed documents are deleted; documents of other
    scopes, or without one, are never touched.
    """
    if args.reindex:
        raise UsageError(
            "--reindex rebuilds a local knowledge base; reindex the service itself, or "
            "delete its documents and seed again"
        )
    entry = entry_of(args, config)
    entry.check_options(options_of(args), ("--retriever",))
    assert entry.open_service is not None
    counts = {"added": 0, "updated": 0, "unchanged": 0}
    seeded: set[str] = set()
    scopes: set[str] = set()
    with entry.open_service(config, options_of(args)) as service:
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

"""``ragsnap lookup "query"``: print one lookupResult, for debugging the pipeline."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import sys

from ..config import load_config
from ..pipeline import Pipeline
from ..seeding import check_compatible
from ._kb import backend_of, open_embedder, open_store, open_tokenizer, store_name


def run(args: argparse.Namespace) -> int:
    config = load_config(args.config)
    settings = config.lookup
    if args.method is not None:
        settings = dataclasses.replace(settings, method=args.method)
    backend = backend_of(args, config)
    path = store_name(backend, args, config)
    embedder = open_embedder(config)
    tokenizer = open_tokenizer(config)
    with contextlib.closing(open_store(backend, args, config, create=False)) as kb:
        check_compatible(
            kb.read_meta(),
            embedder.fingerprint,
            tokenizer.name,
            str(path),
            fix="configure the embedder and segmenter it was built with, "
            "or rebuild it with `ragsnap seed --reindex`",
        )
        result = Pipeline(kb, embedder, tokenizer, settings).lookup(
            args.query,
            kb_scope=args.kb_scope,
            top_k=args.top_k,
            record_latency=not args.no_latency,
        )
    json.dump({"lookupResult": result}, sys.stdout, ensure_ascii=False, indent=2, sort_keys=True)
    sys.stdout.write("\n")
    return 0

"""``ragsnap lookup "query"``: print one lookupResult, for debugging the pipeline."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys

from ..config import load_config
from ._kb import backend_of, open_pipeline


def run(args: argparse.Namespace) -> int:
    config = load_config(args.config, embedder=getattr(args, "embedder", None))
    settings = config.lookup
    if args.method is not None:
        settings = dataclasses.replace(settings, method=args.method)
    with open_pipeline(
        backend_of(args, config), args, config, settings=settings, lookups=1
    ) as pipeline:
        result = pipeline.lookup(
            args.query,
            kb_scope=args.kb_scope,
            top_k=args.top_k,
            record_latency=not args.no_latency,
        )
    json.dump({"lookupResult": result}, sys.stdout, ensure_ascii=False, indent=2, sort_keys=True)
    sys.stdout.write("\n")
    return 0

"""``ragsnap import FORMAT SOURCE --out DIR``: another tool's corpus and judgments, converted."""

from __future__ import annotations

import argparse

from ..config import load_config
from ..importers import ImportOptions, make_importer
from ..importers.writer import IMPORT_FILES, check_out_folder, write_import
from ..io.jsonio import check_outputs
from ..io.reads import reads_of


def run(args: argparse.Namespace) -> int:
    config = load_config(args.config)
    options = ImportOptions(
        split=args.split,
        language=args.language,
        category=args.category,
        topics=args.topics,
        qrels=args.qrels,
        dev_fraction=args.dev_fraction,
    )
    check_outputs(  # before the source is read: nothing it reads is replaced
        [("--out", args.out / name) for name in IMPORT_FILES],
        inputs=reads_of(args, config),
        allow_outside=args.allow_outside,
    )
    check_out_folder(args.out, args.format)
    importer = make_importer(args.format, args.source, options)
    summary = write_import(
        importer, args.out, kb_scope=args.kb_scope, settings=config.kb.chunking, source=args.source
    )
    for line in summary.lines():
        print(line)
    print(
        f"next: ragsnap seed --config {args.out / 'ragsnap.yaml'}, then score against "
        f"{args.out / 'golden-cases.json'}"
    )
    if summary.judgments:  # graded judgments over a seedable corpus: a trial can run on it
        print(
            f"  or compare retrieval methods on it: ragsnap trial --config "
            f"{args.out / 'ragsnap.yaml'} --cases {args.out / 'golden-cases.json'}"
        )
    return 0

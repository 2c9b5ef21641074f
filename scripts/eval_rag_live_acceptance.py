#!/usr/bin/env python3
"""Smoke-check a running service's similarity search after a reindex.

A thin wrapper of ``ragsnap live-check``; run
``python scripts/eval_rag_live_acceptance.py --help``.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "eval"))

from ragsnap.cli import main

if __name__ == "__main__":
    sys.exit(main(["live-check", *sys.argv[1:]]))

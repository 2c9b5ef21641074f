#!/usr/bin/env python3
"""Import or reindex the canonical seed documents into the knowledge base.

A thin wrapper of ``ragsnap seed``; run ``python scripts/prepare_rag_eval_seed.py --help``.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "eval"))

from ragsnap.cli import main

if __name__ == "__main__":
    sys.exit(main(["seed", *sys.argv[1:]]))

#!/usr/bin/env python3
"""Score fixtures against golden cases and diff against a baseline.

A thin wrapper of ``ragsnap score``; run ``python scripts/eval_rag_retrieval.py --help``.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "eval"))

from ragsnap.cli import main

if __name__ == "__main__":
    sys.exit(main(["score", *sys.argv[1:]]))

#!/usr/bin/env python3
"""Write every golden case's live lookup as fixtures/{caseId}.json, then score them.

A thin wrapper of ``ragsnap snapshot``; run
``python scripts/generate_rag_lookup_snapshots.py --help``.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "eval"))

from ragsnap.cli import main

if __name__ == "__main__":
    sys.exit(main(["snapshot", *sys.argv[1:]]))

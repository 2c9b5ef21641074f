#!/usr/bin/env python3
"""``python scripts/eval_rag_trial.py ...`` is ``ragsnap trial ...``: retrieval methods
side by side on one corpus (see ``ragsnap trial --help``)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "eval"))

from ragsnap.cli import main

if __name__ == "__main__":
    sys.exit(main(["trial", *sys.argv[1:]]))

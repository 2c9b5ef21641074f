"""Subcommand handlers, imported lazily by ``ragsnap.cli``."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector for one command.

    Loading thousands of fixtures builds large acyclic trees of dicts and
    tuples; with the collector on, each new generation of them triggers a
    rescan of everything already loaded, which costs about as much as parsing
    them. Reference counting still frees memory as usual; only cycles wait.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()

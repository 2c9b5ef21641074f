"""Opening the configured knowledge base, embedder and pipeline for a command."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..config import Config
from ..embedders import Embedder, make_embedder
from ..text import Tokenizer, get_tokenizer

__all__ = ["kb_path", "open_embedder", "open_tokenizer"]


def kb_path(args: argparse.Namespace, config: Config) -> Path:
    """``--kb`` when given, else the configured path."""
    given: Path | None = getattr(args, "kb", None)
    return given if given is not None else config.kb.path


def open_embedder(config: Config) -> Embedder:
    """The configured embedder (imports its heavy dependencies only now)."""
    return make_embedder(config.kb.embedder, config.kb.base)


def open_tokenizer(config: Config) -> Tokenizer:
    """The configured tokenizer (segmenter)."""
    return get_tokenizer(config.kb.segmenter)

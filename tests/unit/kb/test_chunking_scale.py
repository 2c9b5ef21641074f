"""Chunking is linear in a document's size (``ragsnap.kb.corpus._split_long``), and
the linear chunker cuts exactly where the quadratic one it replaced did."""

from __future__ import annotations

import random

import pytest

from ragsnap.kb.corpus import (
    ChunkSettings,
    SeedDocument,
    _sections,
    _split_long,
    chunk_document,
)


def _old_cut_point(text: str, limit: int) -> int:
    """The chunker before it was made linear, kept verbatim as the reference."""
    for sep in ("\n\n", "\n", " "):
        at = text.rfind(sep, limit // 2, limit)
        if at > 0:
            return at
    return limit


def _old_split_long(text: str, settings: ChunkSettings) -> list[str]:
    if len(text) <= settings.max_chars:
        return [text]
    pieces: list[str] = []
    start = 0
    while start < len(text):
        if len(text) - start <= settings.max_chars:
            pieces.append(text[start:].strip())
            break
        end = start + _old_cut_point(text[start:], settings.max_chars)
        pieces.append(text[start:end].strip())
        back = max(end - settings.overlap_chars, start + 1)
        space = text.find(" ", back, end)
        start = space + 1 if settings.overlap_chars and space != -1 else end
    return [p for p in pieces if p]


WORDS = ["pool", "size", "连接池", "HikariCP", "x" * 40, "a", "", "timeout=30s", "é"]


def _document(rng: random.Random) -> str:
    """A body of varied shape: words, runs without blanks, blank lines, headings."""
    parts: list[str] = []
    for _ in range(rng.randrange(1, 150)):
        roll = rng.random()
        if roll < 0.55:
            parts.append(rng.choice(WORDS))
        elif roll < 0.65:
            parts.append("y" * rng.randrange(1, 1500))  # longer than a chunk, no blank
        elif roll < 0.75:
            parts.append("\n\n")
        elif roll < 0.85:
            parts.append("\n")
        elif roll < 0.9:
            parts.append(f"\n## Heading {rng.randrange(9)}\n")
        elif roll < 0.95:
            parts.append(" " * rng.randrange(1, 5))
        else:
            parts.append("\n```\n")
    return rng.choice([" ", "", "\n"]).join(parts)


SETTINGS = [
    ChunkSettings(),
    ChunkSettings(max_chars=200, overlap_chars=0),
    ChunkSettings(max_chars=200, overlap_chars=100),
    ChunkSettings(max_chars=64, overlap_chars=7, heading_level=3),
    ChunkSettings(max_chars=3, overlap_chars=0),
    ChunkSettings(max_chars=4, overlap_chars=2),
    ChunkSettings(max_chars=5000, overlap_chars=2500),
]


@pytest.mark.parametrize("seed", range(60))
def test_the_linear_chunker_cuts_where_the_old_one_did(seed: int) -> None:
    rng = random.Random(seed)
    body = _document(rng)
    for settings in SETTINGS:
        assert _split_long(body, settings) == _old_split_long(body, settings), (seed, settings)
    doc = SeedDocument(path="d.md", source="d", body=body, content_hash="0")
    settings = SETTINGS[seed % len(SETTINGS)]
    assert [c.text for c in chunk_document(doc, settings)] == [
        piece
        for _, text in _sections(body, settings.heading_level)
        if text
        for piece in _old_split_long(text, settings)
    ]


class _Counted(str):
    """A string that counts the characters copied out of it by slicing."""

    copied = 0

    def __getitem__(self, key):  # type: ignore[no-untyped-def, override]
        piece = super().__getitem__(key)
        _Counted.copied += len(piece)
        return piece


def test_32_mb_is_chunked_in_work_linear_in_its_size() -> None:
    """No timing: the characters copied while cutting a 32 MB section (which has no
    heading to split it) stay within a small multiple of its size (the old chunker
    copied the rest of the text for every piece: about 4.3e11 characters here)."""
    line = "The pool size bounds the connections; HikariCP waits connectionTimeout ms.\n"
    paragraph = line * 12 + "\n"
    size = 32 * 1024 * 1024
    text = _Counted((paragraph * (size // len(paragraph) + 1))[:size])
    _Counted.copied = 0
    settings = ChunkSettings()
    pieces = _split_long(text, settings)
    assert len(pieces) > size // settings.max_chars
    # each piece is copied once, plus its overlap: at most twice the text
    assert _Counted.copied <= 2 * size, _Counted.copied

"""``did_you_mean``: the closest known name to a mistyped one, or None."""

from __future__ import annotations

import pytest

from ragsnap.errors import did_you_mean


@pytest.mark.parametrize(
    ("word", "known", "meant"),
    [
        ("socre", ["score", "seed", "snapshot"], "score"),
        ("expectedSource", ["expectedSources", "expectedDocIds"], "expectedSources"),
        ("topk", ["topK", "method"], "topK"),  # case-insensitive, the known spelling back
        ("hybird", ["lexical", "hybrid", "hybrid+rerank"], "hybrid"),
        ("zzz", ["score", "seed"], None),  # nothing close
        ("score", ["score"], None),  # never the word itself
        ("x", [], None),
    ],
)
def test_did_you_mean(word: str, known: list[str], meant: str | None) -> None:
    assert did_you_mean(word, known) == meant

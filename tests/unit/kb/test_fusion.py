"""cc-adaptive-v1's per-query weights (``ragsnap.kb.fusion``) on tiny lists."""

from __future__ import annotations

import pytest

from ragsnap.kb.fusion import list_confidence, query_profile, query_weights
from ragsnap.settings import ADAPTIVE_FUSION, EMBEDDER_FUSION, FUSION_KIND_DEFAULTS, FusionProfile

EQUAL = FUSION_KIND_DEFAULTS["adaptive"]  # priors 0.5 / 0.5

#: a list whose head stands out: its 10th score is a fifth of its best
STEEP = [10.0, 8.0, 6.0, 5.0, 4.0, 3.5, 3.0, 2.5, 2.2, 2.0, 1.0]
#: a weak embedder's cosines: the 10th within 5 % of the best
FLAT = [0.40, 0.399, 0.398, 0.397, 0.396, 0.395, 0.394, 0.393, 0.392, 0.38, 0.30]


def test_the_confidence_is_the_gap_at_rank_10() -> None:
    assert list_confidence(STEEP) == pytest.approx(1 - 2.0 / 10.0)
    assert list_confidence(FLAT) == pytest.approx(1 - 0.38 / 0.40)
    assert list_confidence(STEEP, rank=2) == pytest.approx(1 - 8.0 / 10.0)


def test_an_empty_flat_or_non_positive_list_has_no_confidence() -> None:
    assert list_confidence([]) == 0.0
    assert list_confidence([3.0] * 12) == 0.0  # flat: every score the best
    assert list_confidence([0.0, -0.1, -0.2]) == 0.0  # nothing similar
    assert list_confidence([-0.1] * 12) == 0.0


def test_a_short_list_counts_its_missing_entries_as_zero() -> None:
    """Fewer than 10 entries: the 10th is a chunk it did not find, share 0, so a list
    with one match is fully confident (and reading it deeper would not change that)."""
    assert list_confidence([5.0]) == 1.0
    assert list_confidence([5.0, 5.0, 4.0]) == 1.0
    # a negative 10th cosine is clamped: the gap is at most 1
    assert list_confidence([0.5, *([0.1] * 8), -0.5]) == 1.0


def test_the_steeper_list_gets_the_say() -> None:
    a, b = query_weights(EQUAL, STEEP, FLAT)
    assert a > 10 * b > 0
    b2, a2 = query_weights(EQUAL, FLAT, STEEP)
    assert (a2, b2) == (a, b)  # symmetric: equal profile weights
    # the profile's weights still scale them
    lean = FusionProfile(name="x", kind="adaptive", lexical_weight=0.9, vector_weight=0.1)
    assert query_weights(lean, STEEP, STEEP) == pytest.approx(
        (0.9 * list_confidence(STEEP), 0.1 * list_confidence(STEEP))
    )


def test_one_empty_list_leaves_all_the_weight_to_the_other() -> None:
    assert query_weights(ADAPTIVE_FUSION, STEEP, [])[1] == 0.0
    assert query_weights(ADAPTIVE_FUSION, [], FLAT)[0] == 0.0
    assert query_weights(ADAPTIVE_FUSION, [], FLAT)[1] > 0.0


def test_two_flat_or_empty_lists_fall_back_to_the_profile_s_weights() -> None:
    assert query_weights(ADAPTIVE_FUSION, [], []) == (0.7, 0.3)
    assert query_weights(EQUAL, [1.0] * 12, [0.3] * 12) == (0.5, 0.5)


def test_the_query_profile_is_convex_with_the_query_s_weights() -> None:
    f = query_profile(ADAPTIVE_FUSION, STEEP, FLAT)
    assert (f.name, f.kind) == ("cc-adaptive-v1", "convex")
    assert (f.lexical_weight, f.vector_weight) == query_weights(ADAPTIVE_FUSION, STEEP, FLAT)


@pytest.mark.parametrize("profile", [EMBEDDER_FUSION["hashing"], FUSION_KIND_DEFAULTS["rrf"]])
def test_other_kinds_are_left_as_they_are(profile: object) -> None:
    assert query_profile(profile, STEEP, FLAT) is profile  # type: ignore[arg-type]

"""Per-query fusion weights: ``cc-adaptive-v1``, a convex fusion whose weights follow
each list's own confidence.

Pure functions over one query's two score lists (best first, as the store returns
them). ``query_profile`` turns a method's fusion profile into the profile that
fuses *this* query's lists: a ``convex`` or ``rrf`` profile is returned as it is;
an ``adaptive`` profile becomes a ``convex`` one with the query's weights, so the
pipeline's convex fusion (each list's scores divided by its best, a weighted mean
of the shares) does the rest unchanged.

The query's weights::

    n_i        = s_i / s_1                  each list's scores over its best
    gap        = 1 - n_k                    k = ADAPTIVE_GAP_RANK (10); n_k = 0 when
                                            the list holds fewer than k entries (a
                                            chunk it did not find has share 0);
                                            clamped to [0, 1]
    confidence = gap                        0 for an empty list or one whose best
                                            is not positive (it adds nothing)
    weight     = profile weight * confidence
    both 0     -> the profile's weights      (two flat lists: the plain convex mean)

A list whose head stands out from its tenth entry (BM25 on a query whose rare terms
only a few chunks hold; a trained embedder's cosine on a query it understands)
gets most of the say; a flat list (a weak embedder's cosines, all within a few
percent of each other; BM25 on a query of common words) gets little, so the fused
list follows its stronger part on that query instead of averaging in noise. The
profile's weights are priors (``ragsnap.settings.EMBEDDER_ADAPTIVE``: what an
embedder is worth on average); the confidences matter most where a prior is off,
which is where a fixed convex mix loses to its better list. The plain gap was
chosen over its square and square root, the gap at rank 5 or 20, z-score and
head-window min-max normalisation and a fused list that keeps the stronger list's
head, on development data only (Cranfield's dev split with both analyzers, the
example set's dev cases; benchmarks/README.md, quality_cranfield).

Depth: ``gap`` reads the first k entries only, so a lookup (``candidates`` deep:
50 by default; a setting below k reads a shorter list, whose 10th counts 0) and a
deep ranking (1,000 deep) weigh a query's lists alike, and a
chunk's fused value is, as with ``cc-max-v1``, independent of how deep the lists
are read. Machine independence: the weights come from the lists' grid values by
division, subtraction and multiplication (correctly rounded in IEEE 754 on every
CPU), so the same lists give the same bits.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ..settings import ADAPTIVE_GAP_RANK, FusionProfile

__all__ = ["ADAPTIVE_GAP_RANK", "list_confidence", "query_profile", "query_weights"]


def list_confidence(values: Sequence[float], rank: int = ADAPTIVE_GAP_RANK) -> float:
    """How far a list's head stands out: ``1 - values[rank-1] / values[0]`` in [0, 1]
    (``values`` best first; a missing entry counts 0); 0 for an empty list or one
    whose best is not positive."""
    if not values:
        return 0.0
    top = values[0]
    if top <= 0.0:
        return 0.0
    at = values[rank - 1] / top if len(values) >= rank else 0.0
    return min(1.0, max(0.0, 1.0 - at))


def query_weights(
    f: FusionProfile, lexical: Sequence[float], vector: Sequence[float]
) -> tuple[float, float]:
    """The lexical and vector weights that fuse this query's lists (best first)."""
    if f.kind != "adaptive":
        return f.lexical_weight, f.vector_weight
    a = f.lexical_weight * list_confidence(lexical)
    b = f.vector_weight * list_confidence(vector)
    if a + b <= 0.0:  # both flat (or empty): the profile's own mean
        return f.lexical_weight, f.vector_weight
    return a, b


def query_profile(
    f: FusionProfile, lexical: Sequence[float], vector: Sequence[float]
) -> FusionProfile:
    """The profile that fuses this query's lists: ``f`` itself unless it is adaptive,
    else a convex profile (same name) with ``query_weights``."""
    if f.kind != "adaptive":
        return f
    a, b = query_weights(f, lexical, vector)
    return replace(f, kind="convex", lexical_weight=a, vector_weight=b)

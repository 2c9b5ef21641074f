"""Chunking, lookup pipeline and retrieval method settings: plain dataclasses.

They live apart from ``ragsnap.kb.pipeline`` so that reading ``ragsnap.yaml``
(every command does) does not import numpy, the embedders and the backends.

A retrieval method is data, not a code path: a ``Method`` names its
retrievers (``lexical``, ``vector`` or both), the fusion profile that merges
two lists, the reranker, its score floors and, optionally, its own vector
provider. The pipeline runs any of them; ``ragsnap.yaml``'s ``methods:``
section adds more (another fusion weight, no floors, other vectors) without
code. The shipped definitions::

    lexical         BM25 over the lexical index
    vector          cosine over the configured embedder's vectors
    hybrid          both, merged by the fusion profile (by embedder: ``cc-adaptive-v1``
                    for hashing, a convex combination of max-normalised BM25 and
                    cosine whose weights follow each list's confidence on the query;
                    ``cc-max-v1``, the same with fixed weights, for the others)
    hybrid+rerank   hybrid, then the heuristic-v2 reranker (``ragsnap.kb.rerankers``;
                    heuristic-v1, the default before it, stays
                    available by name)
    alias           cosine over an alias provider's vectors (``trial.aliases``):
                    regression plumbing with stable cross-language matches,
                    not an embedding model
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from .errors import UsageError, did_you_mean

__all__ = [
    "ADAPTIVE_FUSION",
    "ADAPTIVE_GAP_RANK",
    "ALIAS_NOTE",
    "BUILTIN_METHODS",
    "EMBEDDER_ADAPTIVE",
    "EMBEDDER_FUSION",
    "EMBEDDER_FUSION_KIND",
    "FUSION_KINDS",
    "FUSION_KIND_DEFAULTS",
    "FUSION_NAMES",
    "HEURISTIC_V2_WEIGHTS",
    "METHODS",
    "NAMED_EMBEDDERS",
    "PIPELINE_VERSION",
    "RERANKERS",
    "RETRIEVERS",
    "SNAPSHOT_TOLERANCE",
    "ChunkSettings",
    "FusionProfile",
    "LookupSettings",
    "Method",
    "RerankWeights",
    "default_fusion",
    "method_settings",
    "named_embedder",
]

#: 2: scores on the 1e-6 grid, exact cosines; 3: evidence scores are the ranking values;
#: 4: convex fusion of max-normalised scores by default, weights by embedder
#: 5: the rerank trace's items carry their confidence and list ranks; rerank weights
#: 6: hybrid over the hashing embedder fuses with cc-adaptive-v1 (per-query weights);
#: hybrid+rerank reranks with heuristic-v2 (the reranker's name is in every fixture too)
PIPELINE_VERSION = "ragsnap-lookup/6"
#: the built-in methods every store can run with its own vectors
METHODS = ("lexical", "vector", "hybrid", "hybrid+rerank")
RETRIEVERS = ("lexical", "vector")
#: the registered rerankers (``ragsnap.kb.rerankers.SCORERS``), by name
RERANKERS = ("heuristic-v1", "heuristic-v2")
#: heuristic-v2's fixed weights (``ragsnap.kb.rerankers.HEURISTIC_V2``), as fixtures record them
HEURISTIC_V2_WEIGHTS = {"fused": 1.0, "title": 0.1, "codes": 0.1}
ALIAS_NOTE = "regression plumbing: a fixture-aware alias provider, not an embedding model"
#: how far a fixture's numbers may move and the fixture is the same (``snapshot.tolerance``)
SNAPSHOT_TOLERANCE = 1e-4


#: how a fusion profile merges two lists (``FusionProfile.kind``)
FUSION_KINDS = ("convex", "rrf", "adaptive")
#: the profile name of each kind when a configuration names none
FUSION_NAMES = {"convex": "cc-max-v1", "rrf": "wrrf-v1", "adaptive": "cc-adaptive-v1"}
#: the rank whose score an adaptive profile compares with the best (``ragsnap.kb.fusion``)
ADAPTIVE_GAP_RANK = 10


@dataclass(frozen=True, slots=True)
class FusionProfile:
    """How a hybrid method merges its lexical and vector lists; requests cannot change it.

    ``convex`` (profile ``cc-max-v1``): each list's scores are divided by the
    list's best (BM25 / best BM25, cosine / best cosine) and a chunk's fused
    value is the weighted mean of its two shares (0 for a list that did not find
    it), at most 1 (below 0 only for a chunk whose cosine is; a list whose best
    is not positive adds nothing). Dividing by the best, not by the
    range, makes a chunk's share from a list the same however deep that list
    is read, so a lookup's head is the head of a deeper ranking whenever both
    lists of the lookup reach its chunks.

    ``rrf`` (profile ``wrrf-v1``): weighted reciprocal rank fusion, the sum of
    ``weight / (k + rank)`` over the lists that found the chunk.

    ``adaptive`` (profile ``cc-adaptive-v1``): ``convex`` with per-query weights,
    each the profile's weight times the list's confidence on the query, the gap
    between its best score and its 10th over the best (``ragsnap.kb.fusion``): a
    flat list gets little say, a list whose head stands out gets most of it.
    """

    name: str = FUSION_NAMES["convex"]
    kind: str = "convex"
    k: int = 60
    lexical_weight: float = 0.85
    vector_weight: float = 0.15

    def __post_init__(self) -> None:
        if self.kind not in FUSION_KINDS:
            raise UsageError(
                f"fusion profile {self.name}: unknown kind {self.kind!r}; use "
                f"{' or '.join(FUSION_KINDS)}"
            )
        if self.lexical_weight < 0 or self.vector_weight < 0:
            raise UsageError(f"fusion profile {self.name}: weights must not be negative")
        if self.lexical_weight + self.vector_weight <= 0:
            raise UsageError(
                f"fusion profile {self.name}: the weights sum to 0; give one of them a weight"
            )
        if self.k < 1:
            raise UsageError(f"fusion profile {self.name}: k must be at least 1, not {self.k}")

    def to_json(self) -> dict[str, Any]:
        weights = {"lexical": self.lexical_weight, "vector": self.vector_weight}
        if self.kind == "rrf":
            return {"profile": self.name, "kind": self.kind, "k": self.k, "weights": weights}
        return {"profile": self.name, "kind": self.kind, "weights": weights}


#: each kind's profile, for a ``fusion:`` mapping that names another kind than the
#: embedder's default
FUSION_KIND_DEFAULTS: dict[str, FusionProfile] = {
    "convex": FusionProfile(),
    "rrf": FusionProfile(
        name=FUSION_NAMES["rrf"], kind="rrf", lexical_weight=1.0, vector_weight=1.0
    ),
    "adaptive": FusionProfile(
        name=FUSION_NAMES["adaptive"], kind="adaptive", lexical_weight=0.5, vector_weight=0.5
    ),
}

#: The ``convex`` (``cc-max-v1``) profile of each embedder kind, the default up to
#: ``ragsnap-lookup/5``, chosen on development data only (Cranfield's dev split,
#: the example set's dev cases; benchmarks/README.md has the test-split numbers): a
#: weak embedder's cosine gets a small share, a trained model's the larger one. An
#: embedder kind not listed gets ``FusionProfile()``. ``fusion: {kind: convex}``
#: is the default of an embedder kind ``EMBEDDER_FUSION_KIND`` does not list.
EMBEDDER_FUSION: dict[str, FusionProfile] = {
    "hashing": FusionProfile(lexical_weight=0.85, vector_weight=0.15),
    "sentence-transformer": FusionProfile(lexical_weight=0.4, vector_weight=0.6),
    # the best of vector weights 0.1-0.9 on Cranfield's dev split (MAP and nDCG@10)
    "wordllama": FusionProfile(lexical_weight=0.6, vector_weight=0.4),
}


#: the embedders ``--embedder NAME`` chooses (every command that embeds, and ``score``
#: and ``check``, which compare fixtures with the settings), as ``kb.embedder`` specs:
#: the ones that need nothing more than their name. Frozen vectors, alias files and an
#: OpenAI-compatible endpoint need a path or a URL: set those in ``kb.embedder``.
NAMED_EMBEDDERS: dict[str, dict[str, Any]] = {
    "hashing": {"kind": "hashing"},
    "minilm": {"kind": "sentence-transformer"},
    "wordllama": {"kind": "wordllama"},
}


def named_embedder(name: str) -> dict[str, Any]:
    """The ``kb.embedder`` spec ``--embedder NAME`` stands for."""
    try:
        return dict(NAMED_EMBEDDERS[name])
    except KeyError:
        meant = did_you_mean(name, list(NAMED_EMBEDDERS))
        hint = f" (did you mean {meant!r}?)" if meant else ""
        raise UsageError(
            f"--embedder {name!r}{hint}: use one of {', '.join(NAMED_EMBEDDERS)}, or set "
            "kb.embedder in ragsnap.yaml for frozen vectors or an endpoint"
        ) from None


#: Each embedder kind's ``cc-adaptive-v1`` priors: the per-query confidences move the
#: weights away from them (``ragsnap.kb.fusion``). Chosen on development data only
#: (Cranfield's dev split with both analyzers, the example set's dev cases;
#: benchmarks/README.md, quality_cranfield). An embedder kind not listed gets equal
#: priors (``FUSION_KIND_DEFAULTS["adaptive"]``).
EMBEDDER_ADAPTIVE: dict[str, FusionProfile] = {
    "hashing": replace(FUSION_KIND_DEFAULTS["adaptive"], lexical_weight=0.7, vector_weight=0.3),
    "sentence-transformer": replace(
        FUSION_KIND_DEFAULTS["adaptive"], lexical_weight=0.4, vector_weight=0.6
    ),
}
#: The fusion kind each embedder kind gets by default (since ``ragsnap-lookup/6``:
#: ``adaptive`` for hashing, the default embedder); a kind not listed gets
#: ``convex`` (``cc-max-v1``). MiniLM stays convex: on the example set's dev cases
#: cc-adaptive-v1 ranked 0.04 MAP below cc-max-v1 with it (its cosines are flatter
#: than BM25 even where they are right, so the gap under-weights them).
EMBEDDER_FUSION_KIND: dict[str, str] = {"hashing": "adaptive"}
#: the default embedder's default profile (``LookupSettings().fusion``)
ADAPTIVE_FUSION = EMBEDDER_ADAPTIVE["hashing"]


def default_fusion(embedder_kind: str | None, kind: str | None = None) -> FusionProfile:
    """The fusion profile a hybrid method over ``embedder_kind``'s vectors gets by
    default (``kind`` None: ``EMBEDDER_FUSION_KIND``'s), or when its configuration
    names ``kind`` (adaptive: the embedder's priors; convex: its ``cc-max-v1``
    weights)."""
    embedder_kind = embedder_kind or "hashing"
    kind = kind or EMBEDDER_FUSION_KIND.get(embedder_kind, "convex")
    if kind == "adaptive":
        return EMBEDDER_ADAPTIVE.get(embedder_kind, FUSION_KIND_DEFAULTS["adaptive"])
    if kind == "convex":
        return EMBEDDER_FUSION.get(embedder_kind, FusionProfile())
    return FUSION_KIND_DEFAULTS[kind]


@dataclass(frozen=True, slots=True)
class Method:
    """A retrieval method: its retrievers, fusion, reranker, floors and vectors.

    ``None`` means "as configured": the lookup's fusion profile, ``minScore``
    and ``relativeScore``, and the knowledge base's embedder.
    """

    name: str
    retrievers: tuple[str, ...]
    fusion: FusionProfile | None = None
    reranker: str | None = None
    min_score: float | None = None
    relative_score: float | None = None
    #: an embedder spec (``{kind: alias, path: ...}``) when the method brings its vectors
    embedder: dict[str, Any] | None = field(default=None, hash=False)
    #: what the method is for, shown in reports (the alias provider's caveat)
    note: str | None = None

    def __post_init__(self) -> None:
        if not self.retrievers or any(r not in RETRIEVERS for r in self.retrievers):
            raise UsageError(
                f"method {self.name!r}: retrievers {list(self.retrievers)}; use lexical, "
                "vector or both"
            )
        if len(set(self.retrievers)) != len(self.retrievers):
            raise UsageError(f"method {self.name!r}: a retriever is listed twice")
        if self.reranker is not None and self.reranker not in RERANKERS:
            raise UsageError(
                f"method {self.name!r}: unknown reranker {self.reranker!r}; use "
                f"{', '.join(RERANKERS)} or none"
            )

    @property
    def kind(self) -> str:
        """What the trace's attempts call the retrieval: lexical, vector or hybrid."""
        return self.retrievers[0] if len(self.retrievers) == 1 else "hybrid"

    @property
    def fused(self) -> bool:
        return len(self.retrievers) > 1


BUILTIN_METHODS: tuple[Method, ...] = (
    Method("lexical", ("lexical",)),
    Method("vector", ("vector",)),
    Method("hybrid", ("lexical", "vector")),
    Method("hybrid+rerank", ("lexical", "vector"), reranker="heuristic-v2"),
)


@dataclass(frozen=True, slots=True)
class RerankWeights:
    """heuristic-v1's weights (``lookup.rerankWeights``): a rerank score is the weighted
    sum of the candidate's confidence, phrase, identifier, title and coverage shares
    (``ragsnap.kb.pipeline``). The defaults sum to 1; any non-negative weights work."""

    confidence: float = 0.45
    phrase: float = 0.20
    identifiers: float = 0.15
    title: float = 0.10
    coverage: float = 0.10

    def __post_init__(self) -> None:
        values = self.to_json().values()
        if any(v < 0 for v in values) or sum(values) <= 0:
            raise UsageError(
                f"rerank weights must not be negative and must not all be 0; got {self.to_json()}"
            )

    def to_json(self) -> dict[str, float]:
        return {
            "confidence": self.confidence,
            "phrase": self.phrase,
            "identifiers": self.identifiers,
            "title": self.title,
            "coverage": self.coverage,
        }


@dataclass(frozen=True, slots=True)
class LookupSettings:
    """Pipeline knobs (``lookup:`` in ragsnap.yaml)."""

    method: str = "hybrid+rerank"
    top_k: int = 5
    candidates: int = 50
    rerank_depth: int = 20
    min_score: float = 0.22
    relative_score: float = 0.5
    weak_score: float = 0.35
    sufficient_score: float = 0.45
    context_budget_chars: int = 2000
    hints: bool = True
    fusion: FusionProfile = field(default_factory=lambda: ADAPTIVE_FUSION)
    rerank_weights: RerankWeights = field(default_factory=RerankWeights)
    #: every method a lookup may name: the built-ins and ``methods:`` of ragsnap.yaml
    methods: tuple[Method, ...] = BUILTIN_METHODS

    def __post_init__(self) -> None:
        self.method_spec(self.method)

    def method_spec(self, name: str) -> Method:
        """The method called ``name``; an unknown name is a usage error."""
        for method in self.methods:
            if method.name == name:
                return method
        names = ", ".join(m.name for m in self.methods)
        meant = did_you_mean(name, [m.name for m in self.methods])
        hint = f" (did you mean {meant!r}?)" if meant else ""
        raise UsageError(
            f"unknown method {name!r}{hint}; use one of {names} (or define it under `methods:` "
            "in ragsnap.yaml)"
        )


@dataclass(frozen=True, slots=True)
class ChunkSettings:
    """How bodies are cut: by headings, then by size with overlap."""

    max_chars: int = 1200
    overlap_chars: int = 150
    heading_level: int = 2

    def fingerprint(self) -> str:
        """Identity of these settings, part of every document's index hash."""
        return f"md-headings-v1:h{self.heading_level}:max{self.max_chars}:ov{self.overlap_chars}"


def method_settings(settings: LookupSettings, spec: Method) -> dict[str, Any]:
    """The lookup knobs that shape a lookup of ``spec`` under ``settings``: the method's
    own floors and fusion where it sets them, the lookup's otherwise (what a fixture's
    ``generator.settings`` and the fixture manifest record)."""
    s = settings
    fusion = spec.fusion or s.fusion
    return {
        "candidates": s.candidates,
        "minScore": s.min_score if spec.min_score is None else spec.min_score,
        "relativeScore": s.relative_score if spec.relative_score is None else spec.relative_score,
        "weakScore": s.weak_score,
        "sufficientScore": s.sufficient_score,
        "contextBudgetChars": s.context_budget_chars,
        "hints": s.hints,
        "fusion": fusion.to_json() if spec.fused else None,
        "reranker": spec.reranker,
        "rerankDepth": s.rerank_depth if spec.reranker else None,
        "rerankWeights": (
            None
            if spec.reranker is None
            else dict(HEURISTIC_V2_WEIGHTS)
            if spec.reranker == "heuristic-v2"
            else s.rerank_weights.to_json()
        ),
    }

"""The modular lookup pipeline: a query in, a ``lookupResult`` (fixture schema) out.

Steps, each recorded in the trace::

    L0 hints     category / breadcrumb prefix guessed from document metadata
                 (category names, breadcrumbs, titles, tags, keywords)
    L1 filtered  retrieval inside kb_scope AND the hinted category
    retry        "unfiltered": drops only the L0 category, never kb_scope, when the
                 filtered attempt is empty (filtered-empty), below weak_score
                 (filtered-weak), or there was no hint (no-l0-hint)
    fusion       the method's fusion profile merges the lexical (BM25) and vector
                 (cosine) lists: cc-adaptive-v1 (the hashing embedder's default),
                 the weighted mean of BM25 / best BM25 and cosine / best cosine
                 with per-query weights that follow each list's confidence
                 (``ragsnap.kb.fusion``); cc-max-v1 (the other embedders'), the
                 same mean with fixed weights (``ragsnap.settings.EMBEDDER_FUSION``);
                 or wrrf-v1, the sum of w / (k + rank)
    rerank       the method's reranker (``ragsnap.kb.rerankers``; hybrid+rerank:
                 heuristic-v2) on the first rerank_depth candidates
    evidence     dedupe by chunk, drop confidences below min_score (or below
                 relative_score x the best), keep top_k; status none / partial /
                 sufficient (best confidence >= sufficient_score)
    context      evidence texts in rank order within context_budget_chars

Scores. Every candidate gets a *confidence* in [0, 1] that does not depend on
which list found it: ``lexical`` = IDF-weighted share of the query's terms the
chunk contains (IDF = BM25's ln(1 + (N - df + 0.5) / (df + 0.5))); ``vector`` =
cosine clamped at 0; ``hybrid`` = the mean of both, whatever the fusion
weights (they set the ranking; the floors read the same scale for every
profile). Rankings
come from the method (BM25 order, cosine order, fused order, reranked order),
and an evidence block's ``score`` is the value its list is ranked by: BM25 for
``lexical``, the cosine for ``vector``, the fused value for ``hybrid``, the
rerank score after reranking; so scores never rise down the list (a block past
the reranked head, only when ``topK`` exceeds ``rerankDepth``, shows at most
the score above it). The thresholds always compare confidences, so a reranker
reorders evidence but never filters it; ``scoreLabel`` (high >= 0.6, medium >=
0.4, low) labels the confidence, which ``metadata.confidence`` holds with the
raw BM25, cosine, fused value and list ranks. The rerank trace's ``before``
list shows the fused values, its ``after`` list the rerank scores; each item
also holds its confidence and its lexical and vector ranks (null: that list did
not find it), so a fixture records every stage of the candidates it shows.

Rerankers (``ragsnap.kb.rerankers``, where their formulas are) score each
candidate of the head from its features: its ranking value over the head's
best (``fused_share``), its confidence, and shares measured on its chunk:
phrase (the query's adjacent term pairs found adjacent), identifiers (code-like
query words found verbatim, ``maxPoolSize``, ``ERR-4031``; coverage when the
query has none), codes (the same for strict code words; 0 when none), title
(query terms in the title / breadcrumb / heading) and coverage (the unweighted
share of query terms in the chunk). heuristic-v2 (hybrid+rerank's) = fused
share + 0.1 title + 0.1 codes; heuristic-v1 = 0.45 confidence + 0.20 phrase +
0.15 identifiers + 0.10 title + 0.10 coverage (``lookup.rerankWeights``).

Methods (``ragsnap.settings.Method``): a method names its retrievers (lexical,
vector or both, fused), its reranker and its floors; ``lexical``, ``vector``,
``hybrid`` and ``hybrid+rerank`` (default) are built in, ``methods:`` in
ragsnap.yaml adds more. A method with its own vectors needs a store seeded
with its embedder.

Machine independence (``ragsnap.kb.numeric``). Every score above (BM25, cosine,
confidence, fused, rerank) is put on the 1e-6 grid before it is ranked,
compared with a floor or written; every ranking orders grid values and breaks
equal ones by chunk id (the lexical and vector lists too, whatever order a
store returned). A store's score that moved by a few ulps lands on the same
grid point, so the lookupResult is the same bytes on every CPU. Scores derived
from others (fused, a hybrid confidence, a rerank score) are computed from the
exact values and put on the grid once: half of a grid value (a hybrid
confidence with no lexical match) would sit exactly on a half-tick, where an
ulp decides the rounding.
"""

from __future__ import annotations

import functools
import itertools
import math
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, cast, overload

import numpy as np

from ..errors import BackendError, UsageError
from ..settings import (
    METHODS,
    PIPELINE_VERSION,
    FusionProfile,
    LookupSettings,
    Method,
    method_settings,
)
from .backends import (
    ChunkRef,
    CodedStore,
    Filter,
    KnowledgeBase,
    Ranking,
    SnapshotStore,
    StoredChunk,
    breadcrumb_segments,
    cut_ranking,
)
from .embedders import Embedder
from .fusion import query_profile
from .kernels import compiled_code_sums, compiled_coverage_grid
from .numeric import GRID, TICKS_PER_UNIT, VECTOR_ENCODING, quantize, ticks, ticks_array
from .rerankers import RerankFeatures, code_words, rerank_order
from .text import Tokenizer, is_identifier

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = [
    "METHODS",
    "PIPELINE_VERSION",
    "FusionProfile",
    "LookupSettings",
    "Pipeline",
    "describe_method",
    "score_label",
]

_PUNCT = ".,;:?!()[]\"'"


@dataclass(slots=True)
class _Candidate:
    row: int
    ref: ChunkRef  # identities only: the text is read when the chunk is shown or reranked
    lexical: float | None = None
    lexical_rank: int | None = None
    cosine: float | None = None
    vector_rank: int | None = None
    fused: float = 0.0
    ranking: float = 0.0  # the value the method ranks by, on the grid
    confidence: float = 0.0  # on the grid
    exact_confidence: float = 0.0  # before the grid: what derived scores are computed from
    rerank: float | None = None

    @property
    def score(self) -> float:
        """The value the final list is ranked by: the rerank score when reranked."""
        return self.ranking if self.rerank is None else self.rerank


class _Ranked(Sequence[_Candidate]):
    """An attempt's candidates in ranked order, each made when first read: a lookup
    reads a few (the evidence, the trace, the reranked head) of the ``candidates``
    its lists found, and those it reads together (a slice, ``at``) are made in one
    call of ``make`` (given their places in the order). ``with_head`` gives the same
    list with its head reordered."""

    __slots__ = ("_confidences", "_head", "_made", "_make", "_rows")

    def __init__(
        self,
        rows: list[int],
        confidences: list[float],
        make: Callable[[list[int]], list[_Candidate]],
        head: list[_Candidate] | None = None,
        made: dict[int, _Candidate] | None = None,
    ):
        self._rows = rows
        self._confidences = confidences  # each row's, known before it is made
        self._make = make  # the candidates at these places of ``rows``
        self._head = head or []
        self._made = {} if made is None else made  # by row, shared with reordered copies

    def __len__(self) -> int:
        return len(self._rows)

    @overload
    def __getitem__(self, i: int) -> _Candidate: ...

    @overload
    def __getitem__(self, i: slice) -> list[_Candidate]: ...

    def __getitem__(self, i: int | slice) -> _Candidate | list[_Candidate]:
        if isinstance(i, slice):
            return self.at(range(*i.indices(len(self._rows))))
        if i < 0:
            i += len(self._rows)
        return self.at([i])[0]  # IndexError past the end, as a list's

    def at(self, places: Iterable[int]) -> list[_Candidate]:
        """The candidates at ``places`` (each in ``range(len(self))``); those not made
        yet are made together."""
        places = list(places)
        head, made, rows = len(self._head), self._made, self._rows
        if head:
            missing = [i for i in places if i >= head and rows[i] not in made]
        else:
            missing = [i for i in places if rows[i] not in made]
        if len(set(missing)) != len(missing):  # a place asked twice: made once
            missing = list(dict.fromkeys(missing))
        if missing:
            for i, c in zip(missing, self._make(missing), strict=True):
                made[rows[i]] = c
        return [self._head[i] if i < head else made[rows[i]] for i in places]

    def __iter__(self) -> Iterator[_Candidate]:
        for i in range(len(self._rows)):
            yield self[i]

    def confidence(self, i: int) -> float:
        """``self[i].confidence``, without making the candidate."""
        return self._head[i].confidence if i < len(self._head) else self._confidences[i]

    def confidences(self) -> list[float]:
        """Every place's confidence, in order (none is made)."""
        if not self._head:
            return self._confidences
        return [self.confidence(i) for i in range(len(self._rows))]

    def reaching(self, floor: float) -> list[int]:
        """The places, in order, whose confidence reaches ``floor`` (none is made)."""
        head = len(self._head)
        places = [i for i, c in enumerate(self._head) if c.confidence >= floor]
        rest = self._confidences
        places += [i for i in range(head, len(rest)) if rest[i] >= floor]
        return places

    def with_head(self, head: list[_Candidate]) -> _Ranked:
        """This ranking with its first ``len(head)`` candidates replaced by ``head``
        (the same candidates, reordered)."""
        return _Ranked(self._rows, self._confidences, self._make, head, self._made)


class _Lists(NamedTuple):
    """An attempt's lists as its candidates read them (``Pipeline._lists``)."""

    refs: dict[int, ChunkRef]
    lexical_at: dict[int, int]  # row -> its place in the lexical list
    vector_at: dict[int, int]
    fused: dict[int, float]  # row -> the sum of its lists' shares


class _Single(NamedTuple):
    """A single-list attempt's list as its unreranked result reads it
    (``Pipeline._single_result``): no candidate object is made."""

    found: list[tuple[int, float]]  # (row, exact value), in the list's order
    on_lexical: bool  # the lexical list (else the vector list)
    fusion: FusionProfile
    weight: float  # the list's weight in the fusion profile


@dataclass
class _Attempt:
    name: str
    flt: Filter
    method: str
    ranked: _Ranked
    hit_count: int
    top_score: float | None
    latency_ms: float
    single: _Single | None = None  # a single list's, for ``_single_result``

    def to_json(self, with_latency: bool) -> dict[str, Any]:
        return {
            "name": self.name,
            "filter": self.flt.to_json(),
            "method": self.method,
            "hitCount": self.hit_count,
            "topScore": self.top_score,
            "latencyMs": round(self.latency_ms, 3) if with_latency else None,
        }


def _shares(f: FusionProfile, values: Sequence[float], weight: float) -> list[float]:
    """Each entry's share of the fused value, for a list (best first) with ``weight``:
    ``_share`` of each, computed on arrays (the same operations; a deep ranking's
    lists are thousands long)."""
    if not values:
        return []
    if f.kind == "rrf":
        ranks = np.arange(1, len(values) + 1, dtype=np.float64)
        shares: list[float] = (weight / (f.k + ranks)).tolist()
        return shares
    top = max(values)
    if top <= 0.0:  # nothing similar: the list adds nothing
        return [0.0] * len(values)
    scale = weight / (f.lexical_weight + f.vector_weight)
    shares = (scale * (np.asarray(values, dtype=np.float64) / top)).tolist()
    return shares


def _share(f: FusionProfile, weight: float, top: float, rank: int, value: float) -> float:
    """The share of the fused value of a list's entry at ``rank`` (from 1) with
    ``value``, in a list (with ``weight``) whose largest value is ``top``."""
    if f.kind == "rrf":
        return weight / (f.k + rank)
    if top <= 0.0:  # nothing similar: the list adds nothing
        return 0.0
    scale = weight / (f.lexical_weight + f.vector_weight)
    # a negative cosine stays negative: the vector list's order holds below 0 too
    return scale * (value / top)


def _ms(start: float) -> float:
    return (time.perf_counter() - start) * 1000.0


def score_label(score: float) -> str:
    """The evidence label of a score: high (>= 0.6), medium (>= 0.4) or low."""
    return "high" if score >= 0.6 else "medium" if score >= 0.4 else "low"


def _common_prefix(split: Sequence[tuple[str, ...]]) -> str | None:
    """The longest common prefix of breadcrumbs given as their segments
    (``breadcrumb_segments``): that of the first and the last in tuple order (every
    breadcrumb between them shares it)."""
    if not split:
        return None
    prefix: list[str] = []
    for low, high in zip(min(split), max(split), strict=False):
        if low != high:
            break
        prefix.append(low)
    return " > ".join(prefix) or None


def describe_method(
    settings: LookupSettings, spec: Method, segmenter: str, analyzer: str | None
) -> dict[str, Any]:
    """Every setting that can change a lookupResult of ``spec`` under ``settings``."""
    return {
        **method_settings(settings, spec),
        "segmenter": segmenter,
        "analyzer": analyzer,
        "scoreGrid": GRID,
        "vectorEncoding": VECTOR_ENCODING,
    }


def _evidence_block(
    rank: int, ch: StoredChunk, score: float, confidence: float, meta: dict[str, Any]
) -> dict[str, Any]:
    """One evidence block of a lookupResult: ``ch``'s chunk fields, ``score`` (at most
    the score above it), the label of ``confidence`` (``score_label``, inlined) and
    ``meta`` with the chunk's category and kbScope added."""
    if ch.category is not None:
        meta["category"] = ch.category
    if ch.kb_scope is not None:
        meta["kbScope"] = ch.kb_scope
    return {
        "rank": rank,
        "chunkId": ch.chunk_id,
        "docId": ch.doc_id,
        "source": ch.source,
        "title": ch.title,
        "breadcrumb": ch.breadcrumb,
        "text": ch.text,
        "score": score,
        "scoreLabel": "high" if confidence >= 0.6 else "medium" if confidence >= 0.4 else "low",
        "metadata": meta,
    }


class Pipeline:
    """Runs lookups against one store with one embedder and tokenizer."""

    def __init__(
        self,
        kb: KnowledgeBase,
        embedder: Embedder,
        tokenizer: Tokenizer,
        settings: LookupSettings | None = None,
    ):
        self.kb = kb
        self.embedder = embedder
        self.tokenizer = tokenizer
        self.settings = settings or LookupSettings()
        self._hint_cache: dict[tuple[str, str | None], _HintIndex] = {}
        #: whether the store keeps its last lexical list's term codes (``CodedStore``)
        self._coded = isinstance(kb, CodedStore)
        #: the index tokens of chunk metadata (title, breadcrumb, heading) the reranker
        #: read: a document's chunks share most of it, and tokenizing is the costly part
        self._meta_terms: dict[str, frozenset[str]] = {}

    def method(self, method: str | Method | None = None) -> Method:
        """The method called ``method`` (the configured one when None)."""
        if isinstance(method, Method):
            return method
        return self.settings.method_spec(method or self.settings.method)

    def describe(self, method: str | Method | None = None) -> dict[str, Any]:
        """What a fixture's ``generator.settings`` records: every setting that can
        change a lookupResult of ``method`` (the configured one when None); a store
        that records the tokenizer its own full-text index splits with (Milvus's
        ``milvusTokenizer``, chosen from what the server takes) adds it, so a fixture
        captured through another tokenizer differs."""
        meta = self.kb.read_meta()
        out = describe_method(
            self.settings, self.method(method), self.tokenizer.name, meta.get("analyzer")
        )
        if "milvusTokenizer" in meta:
            out["milvusTokenizer"] = meta["milvusTokenizer"]
        return out

    def _fusion(self, spec: Method) -> FusionProfile:
        return spec.fusion or self.settings.fusion

    def _min_score(self, spec: Method) -> float:
        return self.settings.min_score if spec.min_score is None else spec.min_score

    def _relative_score(self, spec: Method) -> float:
        return self.settings.relative_score if spec.relative_score is None else spec.relative_score

    # -- L0 -------------------------------------------------------------------

    def _hint_index(self, kb_scope: str | None, generation: str) -> _HintIndex:
        key = (generation, kb_scope)
        index = self._hint_cache.get(key)
        if index is None:  # one generation at a time; safe when threads share the pipeline
            index = _HintIndex.build(self.kb, self.tokenizer, kb_scope)
            self._hint_cache = {key: index}
        return index

    # -- one attempt ----------------------------------------------------------

    def _search(
        self, spec: Method, query: _Query, flt: Filter, limit: int
    ) -> tuple[list[tuple[int, float]], list[tuple[int, float]], list[int]]:
        """The method's lists, ``limit`` deep: lexical, vector, and their rows in order."""
        lexical: list[tuple[int, float]] = []
        vector: list[tuple[int, float]] = []
        if "lexical" in spec.retrievers:
            lexical = self.kb.lexical_search(query.tokens, flt, limit, text=query.text)
        if "vector" in spec.retrievers and query.vector is not None:
            vector = self.kb.vector_search(query.vector, flt, limit)
        if lexical and vector:
            rows = list(dict.fromkeys([r for r, _ in lexical] + [r for r, _ in vector]))
        else:  # one list: its rows are distinct already
            rows = [r for r, _ in lexical or vector]
        return lexical, vector, rows

    def _attempt(
        self,
        name: str,
        flt: Filter,
        spec: Method,
        query: _Query,
    ) -> _Attempt:
        start = time.perf_counter()
        lexical, vector, rows = self._search(spec, query, flt, self.settings.candidates)
        method = spec.kind
        cosines: dict[int, float] = dict(vector)
        per_unit = TICKS_PER_UNIT  # quantize(x), inlined
        single: _Single | None = None
        # the lists come in the store's order (grid score, then chunk id: the
        # KnowledgeBase contract), so a list's ranks are its positions
        if spec.fused:  # the fused order needs every share and identity now
            lists = self._lists(spec, lexical, vector, rows)
            if query.vector is not None:  # a lexical-only candidate's cosine
                missing = [r for r in rows if r not in lists.vector_at]
                if missing:
                    sims = self.kb.similarities(query.vector, missing)
                    cosines.update(zip(missing, sims, strict=True))
            fused, refs = lists.fused, lists.refs
            order = sorted(rows, key=lambda r: (-ticks(fused[r]), refs[r].chunk_id))

            def make(places: list[int]) -> list[_Candidate]:
                made = []
                for i in places:  # a place in the fused order
                    r = order[i]
                    at, vat = lists.lexical_at.get(r), lists.vector_at.get(r)
                    value = fused[r]
                    made.append(
                        _Candidate(  # positional, in field order: a lookup makes a dozen
                            r,
                            refs[r],
                            None if at is None else lexical[at][1],
                            None if at is None else at + 1,
                            cosines.get(r),
                            None if vat is None else vat + 1,
                            value,
                            round(value * per_unit) / per_unit,
                            confidences[i],
                            exact[i],
                        )
                    )
                return made

        else:  # one list, in its order: identities and shares only of what is read
            order = rows
            on_lexical = method == "lexical"
            found = lexical if on_lexical else vector
            f = self._fusion(spec)
            weight = f.lexical_weight if on_lexical else f.vector_weight
            single = _Single(found, on_lexical, f, weight)
            top_value: list[float] = []  # the list's largest value, when first needed

            def make(places: list[int]) -> list[_Candidate]:
                picked = [order[i] for i in places]  # a place in the list
                refs = self.kb.refs(picked)
                if len(refs) != len(picked):  # a write removed them since the search
                    raise _StaleRead
                if not top_value:
                    top_value.append(max([v for _, v in found], default=0.0))
                top = top_value[0]
                # ``_share``, inlined (the same operations in the same order)
                rrf = f.kind == "rrf"
                scale = weight / (f.lexical_weight + f.vector_weight)
                made = []
                for i, r in zip(places, picked, strict=True):
                    value = found[i][1]
                    share = (
                        weight / (f.k + i + 1)
                        if rrf
                        else 0.0
                        if top <= 0.0
                        else scale * (value / top)
                    )
                    made.append(
                        _Candidate(
                            r,
                            refs[r],
                            value if on_lexical else None,
                            i + 1 if on_lexical else None,
                            cosines.get(r),
                            None if on_lexical else i + 1,
                            0.0 + share,
                            round(value * per_unit) / per_unit,
                            confidences[i],
                            exact[i],
                        )
                    )
                return made

        exact, confidences = self._exact_confidences(spec, query, order, cosines)
        floor = self._min_score(spec)
        hits = len(confidences) - sum(map(floor.__gt__, confidences))
        top = max(confidences, default=None)
        ranked = _Ranked(order, confidences, make)
        return _Attempt(name, flt, method, ranked, hits, top, _ms(start), single)

    def _lists(
        self,
        spec: Method,
        lexical: list[tuple[int, float]],
        vector: list[tuple[int, float]],
        rows: list[int],
    ) -> _Lists:
        """What a fused attempt's candidates are made from: identities, list ranks,
        shares (the fused order needs them all)."""
        refs = self.kb.refs(rows)
        if len(refs) != len(rows):  # a write removed them since the search: start again
            raise _StaleRead
        lexical_values, vector_values = [v for _, v in lexical], [v for _, v in vector]
        f = query_profile(self._fusion(spec), lexical_values, vector_values)
        lexical_shares = _shares(f, lexical_values, f.lexical_weight)
        vector_shares = _shares(f, vector_values, f.vector_weight)
        if not (lexical and vector):  # one list: each row's one share, added to 0.0
            found, shares = (lexical, lexical_shares) if lexical else (vector, vector_shares)
            fused = {r: 0.0 + share for (r, _), share in zip(found, shares, strict=True)}
        else:
            fused = dict.fromkeys(rows, 0.0)  # lexical share, then vector's
            for found, shares in ((lexical, lexical_shares), (vector, vector_shares)):
                for (r, _), share in zip(found, shares, strict=True):
                    fused[r] += share
        return _Lists(
            refs,
            {r: i for i, (r, _) in enumerate(lexical)},
            {r: i for i, (r, _) in enumerate(vector)},
            fused,
        )

    def _exact_confidences(
        self, spec: Method, query: _Query, rows: list[int], cosines: dict[int, float]
    ) -> tuple[list[float], list[float]]:
        """Each row's confidence before the grid (see the module docstring): the query
        terms its index tokens hold (bit codes the store answers from its postings,
        without reading the chunks), its cosine, or the mean of both; and on the grid."""
        kind = spec.kind
        per_unit = TICKS_PER_UNIT  # quantize(x), inlined
        if kind == "vector":
            exact = [max(cosines.get(r) or 0.0, 0.0) for r in rows]
            return exact, [round(x * per_unit) / per_unit for x in exact]
        if kind == "lexical" and self._coded:  # the codes the store kept for this list
            kept = cast("CodedStore", self.kb).found_term_codes(query.distinct, rows)
            if kept is not None:
                both = compiled_coverage_grid(kept, query.weights, query.idf_total)
                if both is not None:
                    return both
        codes = self.kb.matched_terms(query.distinct, rows)
        if len(codes) != len(rows):  # rows are distinct: a write removed some
            raise _StaleRead
        held = list(map(codes.__getitem__, rows))
        if kind == "lexical":
            # each row's in one compiled pass, a repeated code again (when the compiled
            # kernels are loaded): cheaper than once per code in Python, even for a
            # short query's few codes (a lookup's 5-8 % at the p95, measured in place)
            both = compiled_coverage_grid(held, query.weights, query.idf_total)
            if both is not None:
                return both
        coverage = query.coverage_of_codes(list(set(held)))
        if kind == "lexical":  # a function of the code: each code put on the grid once
            grid = {code: round(x * per_unit) / per_unit for code, x in coverage.items()}
            return list(map(coverage.__getitem__, held)), list(map(grid.__getitem__, held))
        exact = [
            (coverage[code] + max(cosines.get(r) or 0.0, 0.0)) / 2
            for r, code in zip(rows, held, strict=True)
        ]
        return exact, [round(x * per_unit) / per_unit for x in exact]

    def _confidences(self, spec: Method, query: _Query, cands: dict[int, _Candidate]) -> None:
        """Set every candidate's confidence (as an attempt sets them); a hybrid
        candidate that only the lexical list found gets its cosine now."""
        missing = [r for r, c in cands.items() if c.cosine is None]
        if spec.fused and missing and query.vector is not None:
            for r, sim in zip(missing, self.kb.similarities(query.vector, missing), strict=True):
                cands[r].cosine = sim
        rows = list(cands)
        cosines = {r: c.cosine for r, c in cands.items() if c.cosine is not None}
        exact, grid = self._exact_confidences(spec, query, rows, cosines)
        for r, x, g in zip(rows, exact, grid, strict=True):
            c = cands[r]
            c.exact_confidence = x
            c.confidence = g

    # -- the deep ranking -----------------------------------------------------

    def _deep_ranking(
        self, query: _Query, flt: Filter, spec: Method, depth: int, distinct: str
    ) -> Sequence[ChunkRef]:
        """The method's ranking under ``flt`` down to its ``depth``-th distinct
        ``distinct`` (``chunk_id``, ``doc_id`` or ``source``: what the judgments
        name), with no score floor and no top K. The lists are read ``depth`` deep,
        and deeper (twice each time) while chunks of the same document leave fewer
        than ``depth`` distinct targets and the store has more; so a top-1000 run of
        a chunked corpus names 1,000 documents, as a document-level peer's does.
        """
        # a single list's order does not depend on how deep it is read: read it twice
        # as deep at once; a fused ranking's does (a chunk one short list misses loses
        # that list's share), so it always goes depth, 2 x depth, 4 x depth ...
        limit = depth if spec.fused or distinct == "chunk_id" else 2 * depth
        while True:
            if spec.fused or spec.reranker is not None:
                order, refs, exhausted = self._ranked_rows(query, flt, spec, limit)
                got = cut_ranking([refs[r] for r in order], distinct, depth)
            else:  # one list, in the store's order: the store cuts it
                got = self._single_ranking(query, flt, spec, limit, distinct, depth)
                exhausted = got.found < limit
            if distinct == "chunk_id" or got.targets >= depth or exhausted:
                return got.refs
            limit *= 2

    def _single_ranking(
        self, query: _Query, flt: Filter, spec: Method, limit: int, distinct: str, depth: int
    ) -> Ranking:
        """A single-list method's list ``limit`` deep as identities, cut for ``depth``."""
        if "lexical" in spec.retrievers:
            return self.kb.lexical_ranking(query.tokens, flt, limit, distinct, depth, query.text)
        if query.vector is not None:
            return self.kb.vector_ranking(query.vector, flt, limit, distinct, depth)
        return cut_ranking([], distinct, depth)

    def _ranked_rows(
        self, query: _Query, flt: Filter, spec: Method, limit: int
    ) -> tuple[list[int], dict[int, ChunkRef], bool]:
        """The method's order of the rows its lists find ``limit`` deep (fused by the
        profile, the first ``rerank_depth`` reranked, as in a lookup), their
        identities, and whether the lists ran out before ``limit``.

        Only identities are fetched for the whole list; full chunks only for the
        reranked head. This is what ranking measures (recall@1000, MAP) need.
        """
        lexical, vector, rows = self._search(spec, query, flt, limit)
        exhausted = len(lexical) < limit and len(vector) < limit
        refs = self.kb.refs(rows)
        if len(refs) != len(rows):
            raise _StaleRead
        # the lists come in the store's order (grid score, then chunk id: the
        # KnowledgeBase contract), so a list's ranks are its positions
        fused: dict[int, float] = {}
        if not spec.fused:
            order = rows  # one list: its rows, in its order
        else:
            f = query_profile(self._fusion(spec), [v for _, v in lexical], [v for _, v in vector])
            for found, weight in ((lexical, f.lexical_weight), (vector, f.vector_weight)):
                shares = _shares(f, [v for _, v in found], weight)
                for (r, _), share in zip(found, shares, strict=True):
                    fused[r] = fused.get(r, 0.0) + share
            keys = list(fused)
            grid = ticks_array(np.fromiter(fused.values(), dtype=np.float64, count=len(keys)))
            ids = np.array([refs[r].chunk_id for r in keys], dtype=np.str_)
            order = [keys[i] for i in np.lexsort((ids, -grid)).tolist()]
        if spec.reranker is not None and order:
            head = order[: self.settings.rerank_depth]
            cands = {r: _Candidate(r, refs[r]) for r in head}
            # what the reranker may blend with: the value the head is ranked by, as
            # an attempt sets it (the fused value, or the one list's score)
            values = fused if spec.fused else dict(lexical or vector)
            for r in head:
                cands[r].fused = fused.get(r, 0.0)
                cands[r].ranking = quantize(values.get(r, 0.0))
            for r, v in vector:
                if r in cands:
                    cands[r].cosine = v
            self._confidences(spec, query, cands)
            reranked = self._rerank(
                spec.reranker, query, [cands[r] for r in head]
            )  # all of the head
            order = [c.row for c in reranked] + order[len(head) :]
        return order, refs, exhausted

    # -- rerank ---------------------------------------------------------------

    def _rerank(self, reranker: str, query: _Query, head: list[_Candidate]) -> list[_Candidate]:
        """``head`` (the first ``rerank_depth`` candidates, in ranked order) in the order
        of ``reranker`` (``ragsnap.kb.rerankers``)."""
        chunks = self._chunks(head, tokens=True)
        w = self.settings.rerank_weights
        best = max((c.ranking for c in head), default=0.0)
        features: list[tuple[str, RerankFeatures]] = []
        for c in head:
            ch = chunks[c.row]
            if ch.tokens is None or ch.token_set is None:  # the KnowledgeBase contract
                raise BackendError(
                    f"the knowledge base returned chunk {ch.chunk_id!r} without the index "
                    "tokens the reranker asked for; report this as a bug"
                )
            meta = " ".join(x for x in (ch.title, ch.breadcrumb, ch.heading) if x)
            terms = self._meta_terms.get(meta)
            if terms is None:
                if len(self._meta_terms) >= _META_TERMS:  # a bound, not an eviction policy
                    self._meta_terms = {}
                terms = self._meta_terms[meta] = frozenset(self.tokenizer.tokens(meta))
            coverage = query.share_in(ch.token_set)
            f = RerankFeatures(
                fused_share=c.ranking / best if best > 0 else 0.0,
                confidence=c.exact_confidence,
                phrase=query.phrase_share(ch.tokens),
                identifiers=query.identifier_share(ch.text, coverage),
                title=query.share_in(terms),
                coverage=coverage,
                codes=query.code_share(ch.text),
            )
            features.append((c.ref.chunk_id, f))
        out = []
        for i, score in rerank_order(reranker, features, w):
            head[i].rerank = score
            out.append(head[i])
        return out

    # -- the lookup -----------------------------------------------------------

    def lookup(
        self,
        query: str,
        *,
        kb_scope: str | None = None,
        top_k: int | None = None,
        method: str | Method | None = None,
        record_latency: bool = True,
    ) -> dict[str, Any]:
        """Run the pipeline; return a ``lookupResult`` dict (fixture schema).

        The whole lookup reads one state of the store: it runs again when the
        store's generation changed while it ran (a write by another thread or
        process), or when a write removed a chunk between a search and the
        chunk fetch, up to ``_READS`` times; from the third time on, a store that
        can (``SnapshotStore``) holds one state for the whole lookup, so it ends
        however busy the writers are.
        """
        result, _ = self.lookup_ranked(
            query, kb_scope=kb_scope, top_k=top_k, method=method, record_latency=record_latency
        )
        return result

    def lookup_ranked(
        self,
        query: str,
        *,
        kb_scope: str | None = None,
        top_k: int | None = None,
        method: str | Method | None = None,
        record_latency: bool = True,
        depth: int | None = None,
        distinct: str = "chunk_id",
    ) -> tuple[dict[str, Any], Sequence[ChunkRef] | None]:
        """``lookup``, and with ``depth`` the method's deep ranking in the selected
        attempt's filter down to ``depth`` distinct ``distinct`` (``chunk_id``,
        ``doc_id`` or ``source``; ``_deep_ranking``), read from the same state of
        the store.
        """
        if distinct not in ("chunk_id", "doc_id", "source"):
            raise UsageError(f"distinct must be chunk_id, doc_id or source, not {distinct!r}")
        s = self.settings
        spec = self.method(method)
        if depth is not None and depth < 1:
            raise UsageError(f"depth must be at least 1, not {depth}")
        top_k = s.top_k if top_k is None else top_k
        if top_k < 1:
            raise UsageError(f"top_k must be at least 1, not {top_k}")
        kb = self.kb
        for read in range(_READS):
            # after the first reads met writes, a store that can holds one state
            held = kb if read >= _OPTIMISTIC_READS and isinstance(kb, SnapshotStore) else None
            try:
                with kb.pinned() if held is None else held.snapshot() as generation:
                    result = self._lookup(
                        query, kb_scope, top_k, spec, record_latency, generation, depth, distinct
                    )
            except _StaleRead:
                continue
            if held is not None or kb.generation() == generation:
                return result
        raise BackendError(
            f"the knowledge base changed under {_READS} lookups in a row (it is being "
            "written continuously); let the seed or upload finish, then look up again"
        )

    def _lookup(
        self,
        query: str,
        kb_scope: str | None,
        top_k: int,
        spec: Method,
        record_latency: bool,
        generation: str,
        depth: int | None,
        distinct: str,
    ) -> tuple[dict[str, Any], Sequence[ChunkRef] | None]:
        s = self.settings
        base = spec.kind
        tokens = self.tokenizer.tokens(query)
        vector = self.embedder.embed_query(query) if "vector" in spec.retrievers else None
        df, total = self.kb.doc_frequencies(tokens)
        q = _Query(query, tokens, vector, df, total)

        hints: dict[str, str] = {}
        if s.hints:
            hints = self._hint_index(kb_scope, generation).hints(tokens)
        attempts: list[dict[str, Any]] = []
        reasons: list[str] = []
        scope = Filter(kb_scope=kb_scope)
        selected: _Attempt
        if "category" in hints:
            first = self._attempt("filtered", Filter(kb_scope, hints["category"]), spec, q)
            attempts.append(first.to_json(record_latency))
            if first.hit_count == 0:
                reasons.append("filtered-empty")
            elif first.top_score is None or first.top_score < s.weak_score:
                reasons.append("filtered-weak")
            selected = first
        else:
            attempts.append(
                {
                    "name": "filtered",
                    "filter": scope.to_json(),
                    "method": base,
                    "hitCount": 0,
                    "topScore": None,
                    "latencyMs": None,
                    "skipped": True,
                    "reason": "no L0 hint matched the query" if s.hints else "hints disabled",
                }
            )
            reasons.append("no-l0-hint")
        deep = None
        if reasons:
            if depth is not None:  # the selected attempt's filter: the deeper list first,
                # so that when it holds every chunk the filter admits (a small corpus),
                # the attempt's shorter list is a cut of it in the store
                deep = self._deep_ranking(q, scope, spec, depth, distinct)
            selected = self._attempt("unfiltered", scope, spec, q)
            attempts.append(selected.to_json(record_latency))

        ranked = selected.ranked
        rerank_json: dict[str, Any]
        blocks: list[dict[str, Any]] | None = None
        if spec.reranker is not None:
            before = ranked[: s.rerank_depth]
            before_json = [self._ranked_item(c, c.ranking) for c in before]
            ranked = ranked.with_head(self._rerank(spec.reranker, q, before))
            rerank_json = {
                "applied": True,
                "reranker": spec.reranker,
                "before": before_json,
                "after": [self._ranked_item(c, c.score) for c in ranked[: len(before)]],
            }
        elif selected.single is not None and (
            made := self._single_result(selected.single, selected, top_k, spec)
        ):  # one list, unreranked: its trace and evidence made from the list itself
            items, blocks = made
            rerank_json = {"applied": False, "reranker": None, "before": items, "after": items}
        else:  # ``_ranked_item``, inlined (no reranker: a candidate's score is its ranking)
            items = [
                {
                    "chunkId": c.ref.chunk_id,
                    "source": c.ref.source,
                    "score": c.ranking,
                    "confidence": c.confidence,
                    "lexicalRank": c.lexical_rank,
                    "vectorRank": c.vector_rank,
                }
                for c in ranked[:top_k]
            ]
            rerank_json = {"applied": False, "reranker": None, "before": items, "after": items}

        if blocks is None:
            blocks = self._evidence(ranked, top_k, spec, selected.top_score or 0.0)
        status = (
            "none"
            if not blocks
            else "sufficient"
            if max(b["metadata"]["confidence"] for b in blocks) >= s.sufficient_score
            else "partial"
        )
        trace: dict[str, Any] = {
            "l0Hints": hints,
            "attempts": attempts,
            "selectedAttempt": selected.name,
            "fallbackReasons": reasons,
            "evidenceStatus": status,
        }
        if spec.fused:
            trace["fusion"] = self._fusion(spec).to_json()
        result = {
            "evidenceBlocks": blocks,
            "contextPack": self._context(blocks),
            "retrievalTrace": trace,
            "rerankTrace": rerank_json,
        }
        if depth is not None and deep is None:
            deep = self._deep_ranking(q, selected.flt, spec, depth, distinct)
        return result, deep

    def _single_result(
        self, single: _Single, attempt: _Attempt, top_k: int, spec: Method
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]] | None:
        """An unreranked single-list attempt's trace items (its first ``top_k``) and
        evidence blocks, made from its list (``single``) without a candidate object:
        the values, keys and order ``_ranked_item`` (inlined in ``_lookup``) and
        ``_evidence`` give from the candidates ``make`` builds in ``_attempt``. None
        when two places of the list share a chunk id (the caller then makes them the
        general way, which skips a repeat)."""
        found, on_lexical, f, weight = single
        confidences = attempt.ranked.confidences()
        per_unit = TICKS_PER_UNIT  # quantize(x), inlined
        head = found[:top_k]
        floor = max(self._min_score(spec), self._relative_score(spec) * (attempt.top_score or 0.0))
        # floors compare confidences; the first top_k that reach it are shown
        shown = [i for i, c in enumerate(confidences) if c >= floor][:top_k]
        rows = [r for r, _ in head]
        rows += [found[i][0] for i in shown if i >= top_k]
        # one read for both: the chunks shown and the identities of the trace's items
        # (the same identities a ``ChunkRef`` holds)
        chunks = self.kb.chunks(rows, tokens=False)
        if len(chunks) != len(rows):  # a write removed them since the search
            raise _StaleRead
        if len({chunks[found[i][0]].chunk_id for i in shown}) != len(shown):
            return None
        items = []
        for i, (r, value) in enumerate(head):
            ref = chunks[r]
            items.append(
                {
                    "chunkId": ref.chunk_id,
                    "source": ref.source,
                    "score": round(value * per_unit) / per_unit,
                    "confidence": confidences[i],
                    "lexicalRank": i + 1 if on_lexical else None,
                    "vectorRank": None if on_lexical else i + 1,
                }
            )
        # a place's share of the fused value: ``_share``, as ``make`` computes it
        top = max([v for _, v in found], default=0.0)
        rrf = f.kind == "rrf"
        scale = weight / (f.lexical_weight + f.vector_weight)
        blocks: list[dict[str, Any]] = []
        ceiling = math.inf  # the score above: a block never shows more
        for rank, i in enumerate(shown, 1):
            r, value = found[i]
            score = round(value * per_unit) / per_unit  # the candidate's ranking
            if score <= ceiling:
                ceiling = score
            share = weight / (f.k + i + 1) if rrf else 0.0 if top <= 0.0 else scale * (value / top)
            ch = chunks[r]
            confidence = confidences[i]
            meta: dict[str, Any] = {
                "confidence": confidence,
                "fused": round((0.0 + share) * per_unit) / per_unit,
            }
            if on_lexical:
                meta["bm25"] = score
                meta["lexicalRank"] = i + 1
            else:  # the vector list's value is the cosine
                meta["cosine"] = score
                meta["vectorRank"] = i + 1
            blocks.append(_evidence_block(rank, ch, ceiling, confidence, meta))
        return items, blocks

    @staticmethod
    def _ranked_item(c: _Candidate, score: float) -> dict[str, Any]:
        # a grid value (``score``: a candidate's ``ranking`` or ``score``) is its own
        # 6-decimal rounding (tested in test_numeric): written as it is. The confidence
        # and the list ranks say where a candidate stood at each stage (what
        # ``ragsnap.scoring.attribution`` reads when a case lost it).
        return {
            "chunkId": c.ref.chunk_id,
            "source": c.ref.source,
            "score": score,
            "confidence": c.confidence,
            "lexicalRank": c.lexical_rank,
            "vectorRank": c.vector_rank,
        }

    def _chunks(self, cands: Sequence[_Candidate], *, tokens: bool) -> dict[int, StoredChunk]:
        """The stored chunks of ``cands`` (read only for what is shown or reranked; their
        index tokens only for reranking)."""
        rows = [c.row for c in cands]
        stored = self.kb.chunks(rows, tokens=tokens)
        if len(stored) != len(set(rows)):  # a write removed them since the search
            raise _StaleRead
        return stored

    def _evidence(
        self, ranked: _Ranked, top_k: int, spec: Method, best: float
    ) -> list[dict[str, Any]]:
        """The evidence blocks: the first ``top_k`` distinct chunks of ``ranked`` whose
        confidence reaches the floor (``best``: the attempt's top confidence)."""
        seen: set[str] = set()
        floor = max(self._min_score(spec), self._relative_score(spec) * best)
        shown: list[_Candidate] = []
        # floors compare confidences: a reranker reorders, it does not filter
        places = ranked.reaching(floor)
        read = 0
        while len(shown) < top_k and read < len(places):
            # made only when they pass, as many at once as can still be shown
            batch = ranked.at(places[read : read + top_k - len(shown)])
            read += len(batch)
            for c in batch:
                if c.ref.chunk_id not in seen:
                    seen.add(c.ref.chunk_id)
                    shown.append(c)
        chunks = self._chunks(shown, tokens=False)
        blocks: list[dict[str, Any]] = []
        ceiling = math.inf  # the score above: a block never shows more
        per_unit = TICKS_PER_UNIT  # quantize(x), inlined
        for rank, c in enumerate(shown, 1):
            score = c.ranking if c.rerank is None else c.rerank  # c.score
            if score <= ceiling:  # min(score, ceiling), which keeps score when equal
                ceiling = score
            ch = chunks[c.row]
            confidence = c.confidence
            meta: dict[str, Any] = {
                "confidence": confidence,  # grid values, as in ``_ranked_item``
                "fused": round(c.fused * per_unit) / per_unit,
            }
            if c.lexical is not None:
                meta["bm25"] = round(c.lexical * per_unit) / per_unit
                meta["lexicalRank"] = c.lexical_rank
            if c.cosine is not None:
                meta["cosine"] = round(c.cosine * per_unit) / per_unit
            if c.vector_rank is not None:
                meta["vectorRank"] = c.vector_rank
            blocks.append(_evidence_block(rank, ch, ceiling, confidence, meta))
        return blocks

    def _context(self, blocks: list[dict[str, Any]]) -> dict[str, Any]:
        budget = self.settings.context_budget_chars
        parts: list[str] = []
        sources: list[str] = []
        used = 0
        truncated = False
        for b in blocks:
            sep = 2 if parts else 0
            room = budget - used - sep
            text = b["text"]
            if len(text) > room:
                truncated = True
                if room >= 200:  # a useful piece still fits: cut at a word boundary
                    cut = text.rfind(" ", 0, room - 1)
                    parts.append(text[: cut if cut > room // 2 else room - 1] + "…")
                    used = budget
                    if b["source"] not in sources:
                        sources.append(b["source"])
                break
            parts.append(text)
            used += sep + len(text)
            if b["source"] not in sources:
                sources.append(b["source"])
        joined = "\n\n".join(parts)
        return {
            "sources": sources,
            "text": joined,
            "charCount": len(joined),
            "budgetChars": budget,
            "truncated": truncated,
        }


class _StaleRead(Exception):
    """A chunk found by a search was gone when it was fetched: the store was written."""


#: how many chunk metadata strings a pipeline keeps tokenized for the reranker
_META_TERMS = 20_000

#: how often a lookup is tried while the store keeps changing under it
_READS = 5

#: how many of those read as they go, checking the store's generation afterwards; the
#: others read a snapshot when the store can (``SnapshotStore``: the embedded one),
#: so that a lookup during continuous writes (a reindex under a live service) ends
_OPTIMISTIC_READS = 2


class _Query:
    """A query's tokens, vector and term weights, with the overlap features."""

    def __init__(
        self,
        text: str,
        tokens: list[str],
        vector: NDArray[np.float32] | None,
        df: dict[str, int],
        total: int,
    ):
        self.text = text
        self.tokens = tokens
        self.vector = vector
        self.distinct = list(dict.fromkeys(tokens))
        self._sums: dict[int, float] = {0: 0.0}  # a code's weights added in order
        n = max(total, 1)
        log = math.log
        counts = list(map(df.get, self.distinct, itertools.repeat(0)))
        weights = [log(1.0 + (n - d + 0.5) / (d + 0.5)) for d in counts]
        self.idf_items = tuple(zip(self.distinct, weights, strict=True))
        total_idf = 0.0  # added in order, as coverage adds (sum() compensates on 3.12+)
        for w in weights:
            total_idf += w
        self.idf_total = total_idf
        self.weights = weights  # each distinct token's idf, in order

    @functools.cached_property
    def pairs(self) -> set[tuple[str, str]]:
        """The query's adjacent term pairs (the reranker's; made when it asks)."""
        return set(itertools.pairwise(self.tokens))

    @functools.cached_property
    def identifiers(self) -> list[str]:
        """The query's code-like words, distinct, in order (the reranker's)."""
        words = (w.strip(_PUNCT) for w in self.text.replace("`", " ").split())
        return [w for w in dict.fromkeys(words) if is_identifier(w)]

    def coverage(self, have: frozenset[str]) -> float:
        """IDF-weighted share of the query's terms found in the chunk (its distinct
        tokens ``have``); the weights are added in the query's term order."""
        if self.idf_total <= 0:
            return 0.0
        found = 0.0
        for t, w in self.idf_items:
            if t in have:
                found += w
        return found / self.idf_total

    def coverage_of_code(self, code: int) -> float:
        """``coverage`` of the terms whose bits ``code`` sets (bit i: the i-th distinct
        term): the same weights added in the same order; each code once a query."""
        total = self._sums.get(code)
        if total is None:
            total = self._sum_of_code(code)
        return total / self.idf_total if self.idf_total > 0 else 0.0

    def coverage_of_codes(self, codes: list[int]) -> dict[int, float]:
        """``coverage_of_code`` of each of ``codes``: the sums from the compiled kernel
        when it is loaded (the same additions in the same order), else as it adds."""
        sums = compiled_code_sums(codes, self.weights)
        if sums is None:
            return {code: self.coverage_of_code(code) for code in codes}
        total = self.idf_total
        if total <= 0:
            return dict.fromkeys(codes, 0.0)
        return dict(zip(codes, (sums / total).tolist(), strict=True))

    def _sum_of_code(self, code: int) -> float:
        """The weights of ``code``'s terms added from its lowest set bit up, from 0.0.

        Adding in that order, the running sum before the highest bit is the sum of the
        code without it: sums are kept per code, so a code costs the additions its
        longest known prefix (the same low bits) leaves, each the same operation."""
        sums = self._sums
        known = code
        high: list[int] = []
        while known not in sums:  # strip the highest bits down to a known code
            top = known.bit_length() - 1
            high.append(top)
            known ^= 1 << top
        total = sums[known]
        for bit in reversed(high):  # then add them back, lowest first
            known |= 1 << bit
            total += self.idf_items[bit][1]
            sums[known] = total
        return total

    def share_in(self, terms: frozenset[str] | set[str]) -> float:
        """Unweighted share of distinct query terms in ``terms``."""
        if not self.distinct:
            return 0.0
        return sum(1 for t in self.distinct if t in terms) / len(self.distinct)

    def phrase_share(self, chunk_tokens: Sequence[str]) -> float:
        """Share of the query's adjacent term pairs that are adjacent in the chunk."""
        if not self.pairs:
            return self.share_in(frozenset(chunk_tokens))
        have = set(itertools.pairwise(chunk_tokens))
        return len(self.pairs & have) / len(self.pairs)

    @functools.cached_property
    def codes(self) -> list[str]:
        """The query's code words (``ragsnap.kb.rerankers.code_words``: heuristic-v2's)."""
        return code_words(self.identifiers)

    def code_share(self, text: str) -> float:
        """Share of the query's code words found verbatim (case-insensitive); 0 if none."""
        if not self.codes:
            return 0.0
        lowered = text.lower()
        return sum(1 for w in self.codes if w.lower() in lowered) / len(self.codes)

    def identifier_share(self, text: str, fallback: float) -> float:
        """Share of code-like query words found verbatim (case-insensitive)."""
        if not self.identifiers:
            return fallback
        lowered = text.lower()
        found = sum(1 for w in self.identifiers if w.lower() in lowered)
        return found / len(self.identifiers)


@dataclass
class _HintIndex:
    """Per-category vocabularies from document metadata, for L0 hints.

    A category scores the sum, over distinct query terms in its vocabulary, of
    the share of the term's documents that are in the category (a term found
    in two database documents and one cache document gives database 2/3 and
    cache 1/3); the best category wins unless two tie. Its breadcrumb prefix is the longest common
    prefix of its documents that share the most query terms (all of its
    documents when none shares any).
    """

    #: term -> (category, the share of the term's documents in it), in the order the
    #: categories were first met
    term_shares: dict[str, tuple[tuple[str, float], ...]]
    postings: dict[tuple[str, str], list[int]]  # (category, term) -> documents
    #: each document's breadcrumb, as its segments, in sorted order: a document is
    #: numbered by its place here, so the least and the greatest breadcrumb of some
    #: documents (their common prefix's ends) are those of the least and greatest number
    breadcrumbs: list[tuple[str, ...]]
    prefixes: dict[str, str | None]  # each category's documents' common prefix

    @classmethod
    def build(cls, kb: KnowledgeBase, tokenizer: Tokenizer, kb_scope: str | None) -> _HintIndex:
        term_categories: dict[str, dict[str, int]] = {}
        postings: dict[tuple[str, str], list[int]] = {}
        breadcrumbs: list[tuple[str, ...]] = []
        by_category: dict[str, list[int]] = {}
        for info in kb.documents().values():
            if info.category is None or (kb_scope is not None and info.kb_scope != kb_scope):
                continue
            parts: list[str] = [info.category, info.breadcrumb or "", info.title or ""]
            for key in ("tags", "keywords"):
                value = info.metadata.get(key)
                if isinstance(value, list):
                    parts.extend(str(v) for v in value)
                elif isinstance(value, str):
                    parts.append(value)
            vocab = set(tokenizer.tokens(" ".join(parts)))
            doc = -1
            if info.breadcrumb:
                doc = len(breadcrumbs)
                breadcrumbs.append(tuple(breadcrumb_segments(info.breadcrumb)))
                by_category.setdefault(info.category, []).append(doc)
            for term in vocab:
                categories = term_categories.setdefault(term, {})
                categories[info.category] = categories.get(info.category, 0) + 1
                if doc >= 0:
                    postings.setdefault((info.category, term), []).append(doc)
        shares = {
            term: tuple((c, n / documents) for c, n in categories.items())
            for term, categories in term_categories.items()
            for documents in (sum(categories.values()),)
        }
        # renumber the documents in breadcrumb order (see ``breadcrumbs``)
        order = sorted(range(len(breadcrumbs)), key=breadcrumbs.__getitem__)
        number = [0] * len(order)
        for new, old in enumerate(order):
            number[old] = new
        postings = {key: [number[d] for d in docs] for key, docs in postings.items()}
        prefixes = {
            category: _common_prefix([breadcrumbs[d] for d in docs])
            for category, docs in by_category.items()
        }
        return cls(shares, postings, [breadcrumbs[d] for d in order], prefixes)

    def hints(self, tokens: Sequence[str]) -> dict[str, str]:
        """``{category, breadcrumbPrefix}`` of the best-matching category, or ``{}``
        when nothing matches or two categories tie."""
        if not self.term_shares:  # a store without categories: no term can match
            return {}
        distinct = sorted(set(tokens))  # a fixed order: float sums must not vary by run
        scores: dict[str, float] = {}
        shares = self.term_shares
        for term in distinct:
            for category, share in shares.get(term, ()):
                scores[category] = scores.get(category, 0.0) + share
        if not scores:
            return {}
        best = max(scores.values())
        top = [category for category, score in scores.items() if score == best]
        if len(top) > 1:  # a tie names no category
            return {}
        category = top[0]
        postings = self.postings
        held = [docs for term in distinct if (docs := postings.get((category, term)))]
        if held:
            # the documents sharing the most query terms: one term's are all of its own
            # (a document is in a term's postings once); more are tallied (in C)
            docs = held[0]
            if len(held) > 1:
                tally = Counter(itertools.chain.from_iterable(held))
                most = max(tally.values())
                docs = [d for d, n in tally.items() if n == most]
            # documents are numbered in breadcrumb order: the ends of their breadcrumbs
            prefix = _common_prefix([self.breadcrumbs[min(docs)], self.breadcrumbs[max(docs)]])
        else:
            prefix = self.prefixes.get(category)
        hint = {"category": category}
        if prefix:
            hint["breadcrumbPrefix"] = prefix
        return hint

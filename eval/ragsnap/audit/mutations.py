"""The catalogue of retrieval faults the mutation audit injects (pure).

Each mutation is a realistic breakage of the embedded lookup pipeline: what a
config edit, an indexer change, a half-finished re-seed or a reranker bug does to
a team's retrieval. A mutation reads the project (``Project``: the configuration,
the audited method, the seed documents, the golden cases) and returns the
project as the fault leaves it (``Variant``), or ``NotApplicable`` with the
reason (no stemmer configured, a method without a reranker, a single category,
a fault that provably changes nothing, such as a chunk size that cuts no section
differently: an equivalent mutant no case could catch): never skipped silently.
The runner (``ragsnap.audit.runner``) seeds a scratch store for a mutation that
changes the index (``index=True``: the tokenizer, the chunking, the documents or
their indexed text) and reuses the control store for one that changes only the
lookup.

Mutations are registered by name (``MUTATIONS``, ``register``); a name is
stable, kebab-case, and never changes what it means. The catalogue, by stage:

=================  ===================  =============================================
name               stage                the fault
=================  ===================  =============================================
stemming-off       index                ``kb.analyzer.stemmer: none`` (index + queries)
stop-words-flipped index                ``kb.analyzer.stopWords`` toggled
heading-dropped    index                the heading line left out of each section's
                                        chunk text (what is indexed and embedded)
chunks-doubled     index                ``chunking.maxChars`` x 2
chunks-halved      index                ``chunking.maxChars`` / 2 (overlap at most half)
wrong-category-hint hints               the L0 hint names the next category (sorted,
                                        cyclic) instead of the one it found
hints-off          hints                ``lookup.hints: false``
scope-ignored      retrieval            lookups run without the case's ``kbScope``
vector-off         retrieval            the method's vector retriever removed
lexical-off        retrieval            the method's lexical retriever removed
candidates-cut     retrieval            ``lookup.candidates`` cut to the largest topK
fusion-inverted    fusion               the fusion profile's two weights swapped
rerank-reversed    rerank               the reranked head's order reversed
rerank-depth-cut   rerank               ``lookup.rerankDepth`` / 4
min-score-raised   evidence             the method's ``minScore`` + 0.15
top-k-cut          evidence             each lookup asks for topK - 1 blocks
context-halved     evidence             ``lookup.contextBudgetChars`` / 2
stale-document     corpus               one document missing from the index (not
                                        re-seeded): the one most cases expect
metadata-lost      corpus               the same document's frontmatter lost except
                                        ``source`` and ``kb_scope``
=================  ===================  =============================================

A document-level fault picks its document deterministically: the one the most
golden cases expect (expected sources and doc ids, judged targets of grade > 0),
ties broken by source. Each mutation's ``advice`` says what kind of case would
catch it when none did; ``{subject}`` in it is the variant's subject (the
document, the setting).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from ..config import Config
from ..errors import UsageError, did_you_mean
from ..kb.corpus import Chunk, SeedDocument, chunk_document
from ..models import GoldenCase
from ..settings import ChunkSettings, LookupSettings, Method

__all__ = [
    "MUTATIONS",
    "STAGES",
    "Mutation",
    "NotApplicable",
    "Project",
    "Variant",
    "catalogue_rows",
    "expected_documents",
    "most_expected_document",
    "register",
    "select_mutations",
]

#: the pipeline stages a mutation breaks, in the order a lookup runs them
STAGES = ("index", "hints", "retrieval", "fusion", "rerank", "evidence", "corpus")

#: how a chunker is called: a document and the chunk settings in, its chunks out
Chunker = Callable[[SeedDocument, ChunkSettings], list[Chunk]]
#: how a lookup's request is changed: (kbScope, topK) in, (kbScope, topK) out
Request = Callable[[str | None, int], tuple[str | None, int]]


@dataclass(frozen=True, slots=True)
class Project:
    """What a mutation reads: the configuration (its ``lookup.method`` the audited
    method), the seed documents and the golden cases."""

    config: Config
    docs: tuple[SeedDocument, ...]
    cases: tuple[GoldenCase, ...]

    @property
    def method(self) -> Method:
        """The audited method's definition."""
        return self.config.lookup.method_spec(self.config.lookup.method)


@dataclass(frozen=True, slots=True)
class Variant:
    """The project as a fault leaves it.

    ``config`` is the changed configuration (tokenizer, chunking, lookup settings,
    the method redefined under its own name), ``docs`` the documents the store
    holds, ``chunker`` how they are cut (None: ``chunk_document``), ``pipeline``
    the name of a pipeline fault (``ragsnap.audit.faults.PIPELINE_FAULTS``),
    ``request`` how each lookup's kbScope and topK are changed; ``detail`` says
    what changed in words, ``subject`` what the advice names (a document, a
    setting)."""

    config: Config
    docs: tuple[SeedDocument, ...]
    detail: str
    subject: str = ""
    chunker: Chunker | None = field(default=None, compare=False)
    pipeline: str | None = None
    request: Request | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class NotApplicable:
    """Why a mutation cannot be applied to a project."""

    reason: str


@dataclass(frozen=True, slots=True)
class Mutation:
    """One fault of the catalogue (module docstring). ``index``: the fault changes
    what the store holds, so it needs its own scratch store."""

    name: str
    title: str
    stage: str
    index: bool
    advice: str
    change: Callable[[Project], Variant | NotApplicable] = field(compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.stage not in STAGES:
            raise ValueError(f"mutation {self.name}: unknown stage {self.stage!r}")

    def apply(self, project: Project) -> Variant | NotApplicable:
        """The project with this fault, or why it does not apply."""
        return self.change(project)

    def advice_for(self, variant: Variant | None) -> str:
        """The advice, with the variant's subject filled in."""
        return self.advice.format(subject=variant.subject if variant is not None else "")


#: every mutation by name, in catalogue order
MUTATIONS: dict[str, Mutation] = {}


def register(mutation: Mutation) -> Mutation:
    """Add ``mutation`` to ``MUTATIONS`` (a name is registered once)."""
    if mutation.name in MUTATIONS:
        raise ValueError(f"mutation {mutation.name} is registered twice")
    MUTATIONS[mutation.name] = mutation
    return mutation


def select_mutations(names: Sequence[str] | None) -> list[Mutation]:
    """The mutations ``names`` lists (catalogue order when None; an unknown name is a
    usage error naming the closest)."""
    if names is None:
        return list(MUTATIONS.values())
    chosen: list[Mutation] = []
    for name in names:
        if name not in MUTATIONS:
            meant = did_you_mean(name, list(MUTATIONS))
            hint = f" (did you mean {meant!r}?)" if meant else ""
            raise UsageError(f"unknown mutation {name!r}{hint}; use one of {', '.join(MUTATIONS)}")
        if MUTATIONS[name] not in chosen:
            chosen.append(MUTATIONS[name])
    return chosen


# --- helpers ------------------------------------------------------------------------


def _lookup(project: Project, **changes: object) -> Config:
    """The configuration with lookup settings changed."""
    config = project.config
    return replace(config, lookup=replace(config.lookup, **changes))  # type: ignore[arg-type]


def _method(project: Project, spec: Method) -> Config:
    """The configuration with the audited method redefined as ``spec`` (same name)."""
    settings: LookupSettings = project.config.lookup
    methods = tuple(spec if m.name == spec.name else m for m in settings.methods)
    return replace(project.config, lookup=replace(settings, methods=methods))


def _kb(project: Project, **changes: object) -> Config:
    config = project.config
    return replace(config, kb=replace(config.kb, **changes))  # type: ignore[arg-type]


def _source_of_chunk(chunk_id: str) -> str:
    return chunk_id.rsplit("#", 1)[0]


def expected_documents(cases: Sequence[GoldenCase], docs: Sequence[SeedDocument]) -> Counter[str]:
    """Source -> how many cases expect the document: its source or doc id among the
    expected ones, or a judgment of grade > 0 on it, a doc id of it or one of its chunks
    (each case counted once per document; only documents of ``docs``)."""
    sources = {doc.source for doc in docs}
    by_doc_id = {doc.doc_id: doc.source for doc in docs if doc.doc_id is not None}
    counts: Counter[str] = Counter()
    for case in cases:
        wanted = set(case.expected_sources)
        wanted.update(by_doc_id[d] for d in case.expected_doc_ids if d in by_doc_id)
        for judgment in case.judgments:
            if judgment.grade <= 0:
                continue
            if judgment.kind == "source":
                wanted.add(judgment.target)
            elif judgment.kind == "docId" and judgment.target in by_doc_id:
                wanted.add(by_doc_id[judgment.target])
            elif judgment.kind == "chunkId":
                wanted.add(_source_of_chunk(judgment.target))
        counts.update(wanted & sources)
    return counts


def most_expected_document(project: Project) -> SeedDocument | None:
    """The document the most cases expect, ties by source; None when no case expects
    one of the seed documents."""
    counts = expected_documents(project.cases, project.docs)
    if not counts:
        return None
    source = min(counts, key=lambda s: (-counts[s], s))
    return next(doc for doc in project.docs if doc.source == source)


def _cases_text(n: int) -> str:
    return f"{n} case" if n == 1 else f"{n} cases"


# --- index ----------------------------------------------------------------------------


def _stemming_off(project: Project) -> Variant | NotApplicable:
    stemmer = project.config.kb.stemmer
    if stemmer is None:
        return NotApplicable("no stemmer is configured (kb.analyzer.stemmer: none)")
    return Variant(
        _kb(project, stemmer=None),
        project.docs,
        f"stemmer {stemmer} -> none (index and queries)",
        subject=stemmer,
    )


def _stop_words_flipped(project: Project) -> Variant | NotApplicable:
    on = project.config.kb.stop_words
    state = "on -> off" if on else "off -> on"
    return Variant(
        _kb(project, stop_words=not on),
        project.docs,
        f"stop words {state} (index and queries)",
        subject="off" if on else "on",
    )


def _without_heading(doc: SeedDocument, settings: ChunkSettings) -> list[Chunk]:
    """``chunk_document``'s chunks with the heading line left out of each section's
    first chunk (the chunk keeps its ``heading`` metadata)."""
    marker = "#" * settings.heading_level + " "
    out = []
    for chunk in chunk_document(doc, settings):
        text = chunk.text
        if chunk.heading is not None and text.startswith(marker):
            text = text.partition("\n")[2].strip() or chunk.heading
        out.append(replace(chunk, text=text))
    return out


def _heading_dropped(project: Project) -> Variant | NotApplicable:
    settings = project.config.kb.chunking
    headed = [
        doc.source
        for doc in project.docs
        if any(c.heading is not None for c in chunk_document(doc, settings))
    ]
    if not headed:
        return NotApplicable(
            f"no seed document has a level-{settings.heading_level} heading: the index "
            "text holds no heading to drop"
        )
    return Variant(
        project.config,
        project.docs,
        f"heading lines left out of the indexed text of {len(headed)} document(s)",
        subject=f"level-{settings.heading_level} headings",
        chunker=_without_heading,
    )


def _rechunked(project: Project, factor: float) -> Variant | NotApplicable:
    if project.config.kb.embedder.get("kind") == "frozen":
        return NotApplicable(
            "frozen vectors are keyed by chunk id: a re-chunked corpus has ids they lack"
        )
    old = project.config.kb.chunking
    size = max(1, int(old.max_chars * factor))
    overlap = min(old.overlap_chars, size // 2)
    new = replace(old, max_chars=size, overlap_chars=overlap)
    if new == old:
        return NotApplicable(f"chunking.maxChars {old.max_chars} cannot be changed by {factor}")
    before = [[c.text for c in chunk_document(doc, old)] for doc in project.docs]
    if before == [[c.text for c in chunk_document(doc, new)] for doc in project.docs]:
        return NotApplicable(
            f"no section is cut differently at maxChars {size}: every chunk stays as it is"
        )
    return Variant(
        _kb(project, chunking=new),
        project.docs,
        f"chunking.maxChars {old.max_chars} -> {size}"
        + (
            f", overlapChars {old.overlap_chars} -> {overlap}"
            if overlap != old.overlap_chars
            else ""
        ),
        subject=str(size),
    )


# --- hints ----------------------------------------------------------------------------


def _categories(project: Project) -> list[str]:
    return sorted({doc.category for doc in project.docs if doc.category is not None})


def _wrong_hint(project: Project) -> Variant | NotApplicable:
    if not project.config.lookup.hints:
        return NotApplicable("L0 hints are off (lookup.hints: false)")
    categories = _categories(project)
    if len(categories) < 2:
        return NotApplicable(
            f"the seed documents have {len(categories)} category: a hint cannot name another"
        )
    return Variant(
        project.config,
        project.docs,
        "the L0 hint names the next category (sorted, cyclic) of the ones in "
        f"{', '.join(categories)}",
        subject="category",
        pipeline="wrong-category-hint",
    )


def _hints_off(project: Project) -> Variant | NotApplicable:
    if not project.config.lookup.hints:
        return NotApplicable("L0 hints are off already (lookup.hints: false)")
    if not _categories(project):
        # hints are read from categorised documents only: none, no hint, nothing to lose
        return NotApplicable(
            "no seed document has a category: an L0 hint never fires, so turning hints "
            "off changes nothing"
        )
    return Variant(_lookup(project, hints=False), project.docs, "lookup.hints true -> false")


# --- retrieval ------------------------------------------------------------------------


def _scope_ignored(project: Project) -> Variant | NotApplicable:
    scoped = [case.id for case in project.cases if case.kb_scope is not None]
    if not scoped:
        return NotApplicable("no case has a kbScope: there is no boundary to drop")
    scopes = sorted({doc.kb_scope for doc in project.docs if doc.kb_scope is not None})
    if len(scopes) < 2 and all(doc.kb_scope is not None for doc in project.docs):
        return NotApplicable(
            "every seed document is in one kbScope: dropping the boundary admits nothing new"
        )

    def unscoped(_scope: str | None, top_k: int) -> tuple[str | None, int]:
        return None, top_k

    return Variant(
        project.config,
        project.docs,
        f"lookups of {_cases_text(len(scoped))} run without their kbScope",
        subject="kbScope",
        request=unscoped,
    )


def _without_retriever(project: Project, dropped: str) -> Variant | NotApplicable:
    spec = project.method
    if dropped not in spec.retrievers:
        return NotApplicable(f"method {spec.name} has no {dropped} retriever")
    if len(spec.retrievers) == 1:
        return NotApplicable(f"method {spec.name} has only the {dropped} retriever")
    kept = tuple(r for r in spec.retrievers if r != dropped)
    return Variant(
        _method(project, replace(spec, retrievers=kept)),
        project.docs,
        f"method {spec.name}: retrievers {'+'.join(spec.retrievers)} -> {'+'.join(kept)}",
        subject=dropped,
    )


def _candidates_cut(project: Project) -> Variant | NotApplicable:
    settings = project.config.lookup
    deepest = max((case.top_k for case in project.cases), default=settings.top_k)
    if settings.candidates <= deepest:
        return NotApplicable(
            f"lookup.candidates {settings.candidates} is not above the largest topK {deepest}"
        )
    return Variant(
        _lookup(project, candidates=deepest),
        project.docs,
        f"lookup.candidates {settings.candidates} -> {deepest}",
        subject=str(deepest),
    )


# --- fusion and rerank ----------------------------------------------------------------


def _fusion_inverted(project: Project) -> Variant | NotApplicable:
    spec = project.method
    if not spec.fused:
        return NotApplicable(f"method {spec.name} fuses nothing (one retriever)")
    profile = spec.fusion or project.config.lookup.fusion
    if profile.lexical_weight == profile.vector_weight:
        return NotApplicable(
            f"fusion profile {profile.name} weighs both lists {profile.lexical_weight}: "
            "inverting changes nothing"
        )
    inverted = replace(
        profile, lexical_weight=profile.vector_weight, vector_weight=profile.lexical_weight
    )
    return Variant(
        _method(project, replace(spec, fusion=inverted)),
        project.docs,
        f"fusion {profile.name} weights lexical {profile.lexical_weight} / vector "
        f"{profile.vector_weight} -> {inverted.lexical_weight} / {inverted.vector_weight}",
        subject=profile.name,
    )


def _rerank_reversed(project: Project) -> Variant | NotApplicable:
    spec = project.method
    if spec.reranker is None:
        return NotApplicable(f"method {spec.name} has no reranker")
    return Variant(
        project.config,
        project.docs,
        f"the {spec.reranker} head of rerankDepth {project.config.lookup.rerank_depth} "
        "in reverse order",
        subject=spec.reranker,
        pipeline="rerank-reversed",
    )


def _rerank_depth_cut(project: Project) -> Variant | NotApplicable:
    spec = project.method
    if spec.reranker is None:
        return NotApplicable(f"method {spec.name} has no reranker")
    depth = project.config.lookup.rerank_depth
    if depth < 4:
        return NotApplicable(f"lookup.rerankDepth is {depth}: too shallow to cut by 4")
    return Variant(
        _lookup(project, rerank_depth=depth // 4),
        project.docs,
        f"lookup.rerankDepth {depth} -> {depth // 4}",
        subject=str(depth // 4),
    )


# --- evidence -------------------------------------------------------------------------


def _min_score_raised(project: Project) -> Variant | NotApplicable:
    spec = project.method
    settings = project.config.lookup
    old = settings.min_score if spec.min_score is None else spec.min_score
    new = round(min(1.0, old + 0.15), 6)
    if new == old:
        return NotApplicable(f"minScore is {old} already: it cannot rise")
    return Variant(
        _method(project, replace(spec, min_score=new)),
        project.docs,
        f"method {spec.name}: minScore {old} -> {new}",
        subject=str(new),
    )


def _top_k_cut(project: Project) -> Variant | NotApplicable:
    if all(case.top_k <= 1 for case in project.cases):
        return NotApplicable("every case asks for topK 1: it cannot be cut")

    def fewer(scope: str | None, top_k: int) -> tuple[str | None, int]:
        return scope, max(1, top_k - 1)

    return Variant(
        project.config, project.docs, "each lookup asks for topK - 1 blocks", request=fewer
    )


def _context_halved(project: Project) -> Variant | NotApplicable:
    budget = project.config.lookup.context_budget_chars
    return Variant(
        _lookup(project, context_budget_chars=budget // 2),
        project.docs,
        f"lookup.contextBudgetChars {budget} -> {budget // 2}",
        subject=str(budget // 2),
    )


# --- corpus ---------------------------------------------------------------------------


def _stale_document(project: Project) -> Variant | NotApplicable:
    doc = most_expected_document(project)
    if doc is None:
        return NotApplicable("no case expects a seed document")
    n = expected_documents(project.cases, project.docs)[doc.source]
    return Variant(
        project.config,
        tuple(d for d in project.docs if d.source != doc.source),
        f"{doc.source} (expected by {_cases_text(n)}) missing from the index",
        subject=doc.source,
    )


def _metadata_lost(project: Project) -> Variant | NotApplicable:
    doc = most_expected_document(project)
    if doc is None:
        return NotApplicable("no case expects a seed document")
    lost = [
        name
        for name, value in (
            ("title", doc.title),
            ("breadcrumb", doc.breadcrumb),
            ("category", doc.category),
            ("doc_id", doc.doc_id),
        )
        if value is not None
    ] + sorted(doc.metadata)
    if not lost:
        return NotApplicable(f"{doc.source} has no frontmatter beyond source and kb_scope")
    bare = replace(doc, title=None, breadcrumb=None, category=None, doc_id=None, metadata={})
    return Variant(
        project.config,
        tuple(bare if d.source == doc.source else d for d in project.docs),
        f"{doc.source} lost its frontmatter {', '.join(lost)}",
        subject=doc.source,
    )


_CATALOGUE: tuple[
    tuple[str, str, str, bool, str, Callable[[Project], Variant | NotApplicable]], ...
] = (
    (
        "stemming-off",
        "stemming off",
        "index",
        True,
        "no case depends on stemming: add a case whose query uses another inflection "
        "than its answer ('rebalancing' for a document that says 'rebalance')",
        _stemming_off,
    ),
    (
        "stop-words-flipped",
        "stop words flipped",
        "index",
        True,
        "no case depends on how stop words are treated: add a case whose query is "
        "mostly function words around one rare term, or a phrase that only matches "
        "with its stop words",
        _stop_words_flipped,
    ),
    (
        "heading-dropped",
        "heading dropped from the index text",
        "index",
        True,
        "no case depends on a section heading: add a case whose query uses the words of "
        "a heading that its section's body does not repeat",
        _heading_dropped,
    ),
    (
        "chunks-doubled",
        "chunk size doubled",
        "index",
        True,
        "no case pins its answer to a chunk: judge the answer's chunk (judgments with "
        "chunkId) or expect a keyword the neighbouring sections would crowd out",
        lambda p: _rechunked(p, 2.0),
    ),
    (
        "chunks-halved",
        "chunk size halved",
        "index",
        True,
        "no case needs an answer that spans a long section: add a case whose keywords "
        "sit far apart in one section, judged on its chunk",
        lambda p: _rechunked(p, 0.5),
    ),
    (
        "wrong-category-hint",
        "category hint names another category",
        "hints",
        False,
        "no case depends on a category hint: add a case whose answer is only in one "
        "category and expect selectedAttempt: filtered",
        _wrong_hint,
    ),
    (
        "hints-off",
        "L0 hints off",
        "hints",
        False,
        "no case checks the L0 hint: expect selectedAttempt: filtered (and no fallback "
        "reasons) on a case whose query names its category",
        _hints_off,
    ),
    (
        "scope-ignored",
        "kbScope boundary ignored",
        "retrieval",
        False,
        "no case guards the kbScope boundary: add a case whose query also matches a "
        "document of another scope, and expect only the in-scope source",
        _scope_ignored,
    ),
    (
        "vector-off",
        "vector retriever disabled",
        "retrieval",
        False,
        "no case needs the vector side: add a paraphrase case whose query shares few "
        "words with its answer (a synonym, another language)",
        lambda p: _without_retriever(p, "vector"),
    ),
    (
        "lexical-off",
        "lexical retriever disabled",
        "retrieval",
        False,
        "no case needs exact terms: add a case with an identifier or error code "
        "(ERR-4031, maxPoolSize) that only the lexical index matches",
        lambda p: _without_retriever(p, "lexical"),
    ),
    (
        "candidates-cut",
        "candidate depth cut to topK",
        "retrieval",
        False,
        "no case depends on candidates below the first lists' heads: add a case whose "
        "answer ranks low in one list and is lifted by fusion or the reranker",
        _candidates_cut,
    ),
    (
        "fusion-inverted",
        "fusion weights inverted",
        "fusion",
        False,
        "no case is sensitive to the balance of the two lists: add a case where lexical "
        "and vector disagree and the answer is the lexical (or vector) one, judged by rank",
        _fusion_inverted,
    ),
    (
        "rerank-reversed",
        "reranker order reversed",
        "rerank",
        False,
        "no case checks the order of the reranked head: expect rerankTopSource, or judge "
        "the answer's chunk with graded judgments so nDCG/MRR see the order",
        _rerank_reversed,
    ),
    (
        "rerank-depth-cut",
        "rerank depth cut to a quarter",
        "rerank",
        False,
        "no case has its answer deep in the fused list: add a case the reranker lifts "
        "from below rank {subject} into the top K",
        _rerank_depth_cut,
    ),
    (
        "min-score-raised",
        "score floor raised by 0.15",
        "evidence",
        False,
        "no case has its answer near the score floor: add a case with a weak but correct "
        "match (a partial answer) and expect evidenceStatus or a minimum hit level",
        _min_score_raised,
    ),
    (
        "top-k-cut",
        "topK cut by one",
        "evidence",
        False,
        "no case needs its last evidence slot: judge every chunk that answers a case "
        "(graded judgments), so losing the K-th block lowers its recall and nDCG",
        _top_k_cut,
    ),
    (
        "context-halved",
        "context budget halved",
        "evidence",
        False,
        "no case checks the context pack: expect contextSources with two or more "
        "sources, so a smaller budget that drops one is seen",
        _context_halved,
    ),
    (
        "stale-document",
        "stale index (one document not re-seeded)",
        "corpus",
        True,
        "no case expects {subject}: add a case whose answer is only in it",
        _stale_document,
    ),
    (
        "metadata-lost",
        "one document's metadata lost",
        "corpus",
        True,
        "no case depends on {subject}'s frontmatter: expect its breadcrumb or doc id, or "
        "a selectedAttempt that needs its category",
        _metadata_lost,
    ),
)

for _entry in _CATALOGUE:
    register(Mutation(*_entry))


def catalogue_rows() -> list[Mapping[str, object]]:
    """Each mutation's name, title, stage and whether it needs its own store."""
    return [
        {"name": m.name, "title": m.title, "stage": m.stage, "ownStore": m.index}
        for m in MUTATIONS.values()
    ]

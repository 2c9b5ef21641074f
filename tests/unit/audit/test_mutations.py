"""The mutation catalogue (ragsnap.audit.mutations): each fault changes what it says,
and only that, or says why it does not apply."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import pytest

from ragsnap.audit.mutations import (
    MUTATIONS,
    STAGES,
    NotApplicable,
    Project,
    Variant,
    most_expected_document,
    select_mutations,
)
from ragsnap.config import Config
from ragsnap.errors import UsageError
from ragsnap.kb.corpus import SeedDocument, chunk_document
from ragsnap.models import GoldenCase
from ragsnap.settings import ChunkSettings, FusionProfile


def doc(source: str, category: str | None, body: str, scope: str = "team") -> SeedDocument:
    return SeedDocument(
        path=f"{source}.md",
        source=source,
        body=body,
        content_hash=source,
        title=f"{source} title",
        breadcrumb=f"{category} > {source}" if category else None,
        category=category,
        kb_scope=scope,
        doc_id=f"doc-{source}",
        metadata={"keywords": [source]},
    )


LONG = "word " * 300  # 1,500 characters: cut at maxChars 1200, not at 2400
DOCS = (
    doc("alpha", "database", f"Intro.\n\n## Pool\n\nmaximumPoolSize is 20.\n\n## Long\n\n{LONG}"),
    doc("beta", "cache", "## Eviction\n\nallkeys-lru evicts keys."),
    doc("gamma", "cache", "No heading here."),
    doc("delta", "cache", "Another team's page.", scope="other"),
)


def case(case_id: str, **fields: Any) -> GoldenCase:
    data = {"id": case_id, "query": "q", "language": "en", "category": "database", "split": "dev"}
    return GoldenCase.from_json({**data, **fields}, {"kbScope": "team", "topK": 5})


CASES = (
    case("c1", expectedSources=["beta"]),
    case("c2", expectedDocIds=["doc-beta"], judgments=[{"chunkId": "alpha#1", "grade": 2}]),
    case("c3", judgments=[{"chunkId": "alpha#2", "grade": 3}, {"source": "gamma", "grade": 0}]),
)
PROJECT = Project(Config(), DOCS, CASES)


def changed(before: Any, after: Any, path: str = "") -> set[str]:
    """The dotted paths where two dataclass trees differ."""
    if dataclasses.is_dataclass(before) and type(before) is type(after):
        out: set[str] = set()
        for f in dataclasses.fields(before):
            out |= changed(
                getattr(before, f.name), getattr(after, f.name), f"{path}.{f.name}".strip(".")
            )
        return out
    return set() if before == after else {path}


def variant(name: str, project: Project = PROJECT) -> Variant:
    applied = MUTATIONS[name].apply(project)
    assert isinstance(applied, Variant), applied
    return applied


def reason(name: str, project: Project) -> str:
    applied = MUTATIONS[name].apply(project)
    assert isinstance(applied, NotApplicable), applied
    return applied.reason


def test_the_catalogue_is_registered_by_stable_kebab_case_names() -> None:
    assert len(MUTATIONS) >= 14
    for name, mutation in MUTATIONS.items():
        assert name == mutation.name and re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", name)
        assert mutation.stage in STAGES and mutation.title and mutation.advice
    assert {m.stage for m in MUTATIONS.values()} == set(STAGES)
    assert [m.name for m in select_mutations(["hints-off", "top-k-cut", "hints-off"])] == [
        "hints-off",
        "top-k-cut",
    ]
    with pytest.raises(UsageError, match="did you mean 'hints-off'"):
        select_mutations(["hint-off"])


#: name -> (the config paths it changes, whether it changes the documents, its chunker,
#: pipeline fault and request change are set)
CHANGES: dict[str, tuple[set[str], bool, bool, str | None, bool]] = {
    "stemming-off": ({"kb.stemmer"}, False, False, None, False),
    "stop-words-flipped": ({"kb.stop_words"}, False, False, None, False),
    "heading-dropped": (set(), False, True, None, False),
    "chunks-doubled": ({"kb.chunking.max_chars"}, False, False, None, False),
    "chunks-halved": ({"kb.chunking.max_chars"}, False, False, None, False),
    "wrong-category-hint": (set(), False, False, "wrong-category-hint", False),
    "hints-off": ({"lookup.hints"}, False, False, None, False),
    "scope-ignored": (set(), False, False, None, True),
    "vector-off": ({"lookup.methods"}, False, False, None, False),
    "lexical-off": ({"lookup.methods"}, False, False, None, False),
    "candidates-cut": ({"lookup.candidates"}, False, False, None, False),
    "fusion-inverted": ({"lookup.methods"}, False, False, None, False),
    "rerank-reversed": (set(), False, False, "rerank-reversed", False),
    "rerank-depth-cut": ({"lookup.rerank_depth"}, False, False, None, False),
    "min-score-raised": ({"lookup.methods"}, False, False, None, False),
    "top-k-cut": (set(), False, False, None, True),
    "context-halved": ({"lookup.context_budget_chars"}, False, False, None, False),
    "stale-document": (set(), True, False, None, False),
    "metadata-lost": (set(), True, False, None, False),
}


def test_every_mutation_is_described() -> None:
    assert set(CHANGES) == set(MUTATIONS)


@pytest.mark.parametrize("name", list(CHANGES))
def test_each_mutation_changes_only_what_it_says(name: str) -> None:
    paths, docs, chunker, fault, request = CHANGES[name]
    got = variant(name)
    assert changed(PROJECT.config, got.config) == paths
    assert (got.docs != PROJECT.docs) is docs
    assert (got.chunker is not None) is chunker
    assert got.pipeline == fault
    assert (got.request is not None) is request
    assert got.detail
    # an index fault needs its own store; a lookup fault leaves the index as it is
    assert MUTATIONS[name].index is bool(
        {"kb.stemmer", "kb.stop_words", "kb.chunking.max_chars"} & paths or docs or chunker
    )


def test_the_settings_move_by_the_stated_amounts() -> None:
    lookup = PROJECT.config.lookup
    assert variant("chunks-doubled").config.kb.chunking.max_chars == 2400
    halved = variant("chunks-halved").config.kb.chunking
    assert (halved.max_chars, halved.overlap_chars) == (600, 150)
    assert variant("candidates-cut").config.lookup.candidates == 5
    assert variant("rerank-depth-cut").config.lookup.rerank_depth == lookup.rerank_depth // 4
    assert variant("context-halved").config.lookup.context_budget_chars == 1000
    assert variant("stop-words-flipped").config.kb.stop_words is (not Config().kb.stop_words)

    def method(name: str) -> Any:
        config = variant(name).config
        return config.lookup.method_spec(config.lookup.method)

    assert method("vector-off").retrievers == ("lexical",)
    assert method("lexical-off").retrievers == ("vector",)
    assert method("min-score-raised").min_score == pytest.approx(lookup.min_score + 0.15)
    fusion = method("fusion-inverted").fusion
    assert (fusion.lexical_weight, fusion.vector_weight) == (
        lookup.fusion.vector_weight,
        lookup.fusion.lexical_weight,
    )
    # the request changes
    top = variant("top-k-cut").request
    scope = variant("scope-ignored").request
    assert top is not None and scope is not None
    assert (top("team", 5), top("team", 1)) == (("team", 4), ("team", 1))
    assert scope("team", 5) == (None, 5)


def test_the_heading_is_dropped_from_the_text_and_the_chunks_stay() -> None:
    chunker = variant("heading-dropped").chunker
    assert chunker is not None
    settings = ChunkSettings()
    before, after = chunk_document(DOCS[0], settings), chunker(DOCS[0], settings)
    assert [c.chunk_id for c in after] == [c.chunk_id for c in before]
    assert [c.heading for c in after] == [c.heading for c in before]
    assert before[1].text.startswith("## Pool\n") and after[1].text == "maximumPoolSize is 20."
    assert after[0].text == before[0].text == "Intro."


def test_the_document_faults_pick_the_most_expected_document() -> None:
    # beta: c1 (source), c2 (doc id); alpha: c2, c3 (judged chunks); gamma: grade 0 only
    chosen = most_expected_document(PROJECT)
    assert chosen is not None and chosen.source == "alpha"  # 2 each: ties by source
    stale = variant("stale-document")
    assert [d.source for d in stale.docs] == ["beta", "gamma", "delta"]
    assert stale.subject == "alpha" and "alpha (expected by 2 cases)" in stale.detail
    assert "no case expects alpha" in MUTATIONS["stale-document"].advice_for(stale)
    lost = variant("metadata-lost").docs[0]
    assert (lost.source, lost.kb_scope, lost.body) == ("alpha", "team", DOCS[0].body)
    assert (lost.title, lost.breadcrumb, lost.category, lost.doc_id, lost.metadata) == (
        None,
        None,
        None,
        None,
        {},
    )
    assert variant("metadata-lost").docs[1:] == DOCS[1:]


def _with(project: Project, **lookup: Any) -> Project:
    config = project.config
    return dataclasses.replace(
        project,
        config=dataclasses.replace(config, lookup=dataclasses.replace(config.lookup, **lookup)),
    )


def test_a_mutation_that_does_not_apply_says_why() -> None:
    config = Config()
    lexical = _with(PROJECT, method="lexical")
    assert "has only the lexical retriever" in reason("lexical-off", lexical)
    assert "has no vector retriever" in reason("vector-off", lexical)
    assert "fuses nothing" in reason("fusion-inverted", lexical)
    assert "has no reranker" in reason("rerank-reversed", lexical)
    assert "has no reranker" in reason("rerank-depth-cut", lexical)
    no_hints = _with(PROJECT, hints=False)
    assert "hints are off" in reason("hints-off", no_hints)
    assert "hints are off" in reason("wrong-category-hint", no_hints)
    one_category = dataclasses.replace(PROJECT, docs=DOCS[1:])
    assert "1 category" in reason("wrong-category-hint", one_category)
    assert isinstance(MUTATIONS["hints-off"].apply(one_category), Variant)
    uncategorised = dataclasses.replace(
        PROJECT, docs=tuple(dataclasses.replace(doc, category=None) for doc in DOCS)
    )
    assert "no seed document has a category" in reason("hints-off", uncategorised)
    unstemmed = dataclasses.replace(
        PROJECT, config=dataclasses.replace(config, kb=dataclasses.replace(config.kb, stemmer=None))
    )
    assert "no stemmer" in reason("stemming-off", unstemmed)
    short = dataclasses.replace(PROJECT, docs=DOCS[1:])
    assert "every chunk stays" in reason("chunks-doubled", short)
    frozen = dataclasses.replace(
        PROJECT,
        config=dataclasses.replace(
            config, kb=dataclasses.replace(config.kb, embedder={"kind": "frozen", "path": "v"})
        ),
    )
    assert "keyed by chunk id" in reason("chunks-halved", frozen)
    headless = dataclasses.replace(PROJECT, docs=DOCS[2:])
    assert "no seed document has a level-2 heading" in reason("heading-dropped", headless)
    unjudged = dataclasses.replace(PROJECT, cases=(case("c9"),))
    assert "no case expects" in reason("stale-document", unjudged)
    assert "no case expects" in reason("metadata-lost", unjudged)
    one = dataclasses.replace(PROJECT, cases=(case("c9", topK=1),))
    assert "topK 1" in reason("top-k-cut", one)
    unscoped = dataclasses.replace(PROJECT, cases=(case("c9", kbScope=None),))
    assert "no case has a kbScope" in reason("scope-ignored", unscoped)
    one_scope = dataclasses.replace(PROJECT, docs=DOCS[:3])
    assert "every seed document is in one kbScope" in reason("scope-ignored", one_scope)
    even = _with(PROJECT, fusion=FusionProfile(lexical_weight=0.5, vector_weight=0.5))
    assert "inverting changes nothing" in reason("fusion-inverted", even)
    assert "not above the largest topK" in reason("candidates-cut", _with(PROJECT, candidates=5))

"""Pipeline faults the mutation catalogue names (``Variant.pipeline``), registered by name.

Each is a ``ragsnap.kb.pipeline.Pipeline`` subclass that breaks one step and leaves
every other step as it is:

``wrong-category-hint``  the L0 hint (``_HintIndex.hints``) names the category that
                         follows the one it found in sorted order (cyclic, among the
                         categories of the lookup's kbScope), with that category's
                         breadcrumb prefix; a lookup with no hint keeps none
``rerank-reversed``      the reranker's head comes out in reverse order: the
                         candidate it ranked last is first; the rerank scores stay
                         in descending order down the list (the worst candidate gets
                         the best score), as a broken sort would leave them
"""

from __future__ import annotations

from collections.abc import Sequence

from ..kb.pipeline import Pipeline, _Candidate, _HintIndex, _Query

__all__ = ["PIPELINE_FAULTS", "ReversedRerankPipeline", "WrongHintPipeline"]


class _WrongHints(_HintIndex):
    """A hint index whose hint names the next category."""

    def hints(self, tokens: Sequence[str]) -> dict[str, str]:
        found = super().hints(tokens)
        if "category" not in found:
            return found
        categories = sorted({c for shares in self.term_shares.values() for c, _ in shares})
        if len(categories) < 2:
            return found
        wrong = categories[(categories.index(found["category"]) + 1) % len(categories)]
        hint = {"category": wrong}
        prefix = self.prefixes.get(wrong)
        if prefix:
            hint["breadcrumbPrefix"] = prefix
        return hint


class WrongHintPipeline(Pipeline):
    """The pipeline with a wrong L0 category hint (module docstring)."""

    def _hint_index(self, kb_scope: str | None, generation: str) -> _HintIndex:
        index = super()._hint_index(kb_scope, generation)
        return _WrongHints(index.term_shares, index.postings, index.breadcrumbs, index.prefixes)


class ReversedRerankPipeline(Pipeline):
    """The pipeline whose reranked head is reversed (module docstring)."""

    def _rerank(self, reranker: str, query: _Query, head: list[_Candidate]) -> list[_Candidate]:
        ranked = super()._rerank(reranker, query, head)
        scores = [c.rerank for c in ranked]
        reversed_head = ranked[::-1]
        for candidate, score in zip(reversed_head, scores, strict=True):
            candidate.rerank = score
        return reversed_head


#: every pipeline fault by name
PIPELINE_FAULTS: dict[str, type[Pipeline]] = {
    "wrong-category-hint": WrongHintPipeline,
    "rerank-reversed": ReversedRerankPipeline,
}

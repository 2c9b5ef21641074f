"""The mutation audit's I/O shell: each fault of the catalogue run as the PR check would see it.

``run_audit`` takes the project's configuration, golden cases and baseline score
report, and for the embedded pipeline and the audited method (the configured one,
or ``method``):

1. **Control.** Seeds a scratch store (a temporary folder under ``workdir``) from
   the seed documents as ``ragsnap seed`` does, snapshots every case in memory as
   ``ragsnap snapshot`` does (no latencies, a fixed ``retrievedAt``), scores the
   fixtures as ``ragsnap score`` does (``ragsnap.scoring.stream``, ``scoring.skip``
   and ``knownFailures`` of the configuration) and diffs the report against the
   baseline as ``ragsnap score --compare-to`` does (the configuration's tolerances,
   noise floor and significance). A control whose diff moved anything means the
   baseline is not what the pipeline gives now: an ``InputError`` on the baseline
   (exit 2): run ``ragsnap seed``, ``ragsnap snapshot`` and ``ragsnap accept``
   first. Cases that fail the run on the control already (a check that is red
   before any change: an imported IR collection's hard queries) are recorded
   (``controlFailing``) and not counted again.
2. **Each mutation** (``ragsnap.audit.mutations``): a fault that changes the index
   gets its own scratch store, seeded from the variant's documents, chunker and
   tokenizer, and deleted after use; a lookup-only fault reuses the control store.
   Its lookups run through the variant's settings, pipeline fault
   (``ragsnap.audit.faults``) and request change; the fixtures are scored and
   diffed as in 1.

**Caught** is what makes the PR check exit 1: a case or aggregate regression in
the diff (``diff["regressed"]``), or a case newly failing the run (one that passed,
or was an expected failure, on the control). A mutation's
``caughtBy`` are its regressed and failing cases; ``caughtRequiringSignificance``
says whether it is still caught with ``significance.require`` on (by a case, or by
an aggregate drop whose adjusted p is below alpha). The mutation score is caught /
applicable; a mutation that does not apply to the project is listed with the reason,
never counted.

Embeddings are computed once: every store shares one ``CachedEmbedder``, keyed by
the exact text embedded (and the chunk id for frozen vectors, which are looked up
by it), so a re-chunked corpus embeds only its new texts, and queries are embedded
once for all mutations.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config import Config
from ..errors import InputError, UsageError
from ..io.inputs import CaseSet
from ..io.progress import Progress
from ..kb.corpus import SeedDocument, chunk_document, load_seed_docs
from ..scoring.hits import case_outcome, fails_run
from .mutations import Mutation, NotApplicable, Project, Variant, select_mutations

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from ..kb.backends.sqlite import SqliteKnowledgeBase
    from ..kb.embedders import Embedder, Fingerprint
    from ..kb.pipeline import Pipeline

__all__ = [
    "RETRIEVED_AT",
    "AggregateRegression",
    "AuditRun",
    "CachedEmbedder",
    "MutationResult",
    "mutation_markdown",
    "mutation_section",
    "run_audit",
]

#: the ``retrievedAt`` of every fixture the audit captures (they never reach a file)
RETRIEVED_AT = "2000-01-01T00:00:00Z"
#: at most this many case ids are named in a message
_NAMED = 8
#: at most this many case ids are shown in a table cell
_SHOWN = 4


@dataclass(frozen=True, slots=True)
class AggregateRegression:
    """An aggregate row of a mutation's diff that regressed."""

    scope: str
    metric: str
    delta: float | None
    p: float | None
    p_adjusted: float | None
    significant: bool | None

    def to_json(self) -> dict[str, Any]:
        return {
            "scope": self.scope,
            "metric": self.metric,
            "delta": self.delta,
            "p": self.p,
            "pAdjusted": self.p_adjusted,
            "significant": self.significant,
        }


@dataclass(frozen=True, slots=True)
class MutationResult:
    """What one mutation did to the PR check (module docstring)."""

    name: str
    title: str
    stage: str
    applicable: bool
    reason: str | None = None
    caught: bool = False
    regressed_cases: tuple[str, ...] = ()
    failing_cases: tuple[str, ...] = ()
    aggregate_regressions: tuple[AggregateRegression, ...] = ()
    changed_cases: int = 0
    detail: str | None = None
    advice: str | None = None
    seconds: float = 0.0

    @property
    def caught_by(self) -> tuple[str, ...]:
        """The cases that caught it: regressed or failing the run, sorted."""
        return tuple(sorted({*self.regressed_cases, *self.failing_cases}))

    @property
    def caught_requiring_significance(self) -> bool:
        """Whether it is caught with ``significance.require`` on: by a case, or by an
        aggregate drop whose (adjusted) paired test is significant."""
        return bool(
            self.regressed_cases
            or self.failing_cases
            or any(row.significant for row in self.aggregate_regressions)
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "title": self.title,
            "stage": self.stage,
            "applicable": self.applicable,
            "reason": self.reason,
            "caught": self.caught if self.applicable else None,
            "caughtBy": list(self.caught_by),
            "caughtRequiringSignificance": (
                self.caught_requiring_significance if self.applicable else None
            ),
            "regressedCases": list(self.regressed_cases),
            "failingCases": list(self.failing_cases),
            "aggregateRegressions": [row.to_json() for row in self.aggregate_regressions],
            "changedCases": self.changed_cases,
            "detail": self.detail,
            "advice": self.advice,
        }


@dataclass(frozen=True, slots=True)
class AuditRun:
    """A mutation audit: the audited method, the number of cases, each mutation's
    result in catalogue order, and the time of the control and of the whole run."""

    method: str
    cases: int
    results: tuple[MutationResult, ...]
    control_seconds: float
    seconds: float
    #: the cases that fail the run on the unchanged pipeline already (not counted again)
    control_failing: tuple[str, ...] = ()

    @property
    def applicable(self) -> int:
        return sum(1 for r in self.results if r.applicable)

    @property
    def caught(self) -> int:
        return sum(1 for r in self.results if r.applicable and r.caught)

    @property
    def score(self) -> float | None:
        """caught / applicable (None when nothing applies)."""
        return self.caught / self.applicable if self.applicable else None


# --- embeddings ------------------------------------------------------------------------


class CachedEmbedder:
    """An embedder that embeds each distinct text once (module docstring): documents
    keyed by their exact text (and chunk id for frozen vectors), queries by text.

    A batch's new texts are embedded together, in their order: a document of the
    control store is embedded as ``ragsnap seed`` embeds it (its chunks in one batch),
    except a text an earlier document already had, which keeps that vector (the same
    for every embedder whose vector of a text does not depend on its batch, as the
    hashing embedder's; the control check would say so if it did).
    """

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self._by_id = inner.fingerprint.kind == "frozen"
        self._documents: dict[tuple[str, str], NDArray[np.float32]] = {}
        self._queries: dict[str, NDArray[np.float32]] = {}
        #: texts embedded by the inner embedder (documents, queries)
        self.embedded = [0, 0]

    @property
    def fingerprint(self) -> Fingerprint:
        return self.inner.fingerprint

    def _key(self, text: str, chunk_id: str) -> tuple[str, str]:
        return (text, chunk_id if self._by_id else "")

    def embed_documents(self, texts: Sequence[str], ids: Sequence[str]) -> NDArray[np.float32]:
        import numpy as np

        keys = [self._key(t, i) for t, i in zip(texts, ids, strict=True)]
        first: dict[tuple[str, str], int] = {}  # each new key's first place, in order
        for n, key in enumerate(keys):
            if key not in self._documents:
                first.setdefault(key, n)
        missing = list(first.values())
        if missing:
            rows = self.inner.embed_documents(
                [texts[n] for n in missing], [ids[n] for n in missing]
            )
            for n, row in zip(missing, rows, strict=True):
                self._documents[keys[n]] = row
            self.embedded[0] += len(missing)
        dimension = self.fingerprint.dimension
        if not keys:
            return np.zeros((0, dimension), dtype=np.float32)
        return np.stack([self._documents[key] for key in keys]).astype(np.float32, copy=False)

    def embed_query(self, text: str) -> NDArray[np.float32]:
        found = self._queries.get(text)
        if found is None:
            found = self._queries[text] = self.inner.embed_query(text)
            self.embedded[1] += 1
        return found


# --- stores, snapshots, scores ---------------------------------------------------------


def _seed_store(
    path: Path,
    config: Config,
    variant_docs: Sequence[SeedDocument],
    variant: Variant | None,
    embedder: CachedEmbedder,
) -> SqliteKnowledgeBase:
    """A scratch embedded store at ``path`` holding ``variant_docs`` as ``ragsnap seed``
    indexes them (the variant's chunker when it has one)."""
    from ..kb.backends import Upload, WriteBatch
    from ..kb.backends.sqlite import SqliteKnowledgeBase
    from ..kb.seeding import index_hash
    from ..kb.text import get_tokenizer

    kb_config = config.kb
    tokenizer = get_tokenizer(kb_config.segmenter, kb_config.stemmer, kb_config.stop_words)
    chunking = kb_config.chunking
    chunker = chunk_document if variant is None or variant.chunker is None else variant.chunker
    meta = {
        "embedder": json.dumps(embedder.fingerprint.to_json(), sort_keys=True),
        "tokenizer": tokenizer.name,
        "chunking": chunking.fingerprint(),
    }

    def uploads() -> Iterator[Upload]:
        for doc in variant_docs:
            chunks = chunker(doc, chunking)
            vectors = embedder.embed_documents(
                [c.text for c in chunks], [c.chunk_id for c in chunks]
            )
            tokens = [" ".join(tokenizer.tokens(c.text)) for c in chunks]
            yield Upload(doc, index_hash(doc, chunking), chunks, tokens, vectors, False)

    kb = SqliteKnowledgeBase(path, create=True)
    try:
        kb.write(WriteBatch((), uploads(), meta))
    except BaseException:
        kb.close()
        raise
    return kb


def _pipeline(
    kb: SqliteKnowledgeBase, config: Config, embedder: CachedEmbedder, fault: str | None
) -> Pipeline:
    from ..kb.pipeline import Pipeline
    from ..kb.text import get_tokenizer
    from .faults import PIPELINE_FAULTS

    kind = Pipeline if fault is None else PIPELINE_FAULTS[fault]
    k = config.kb
    return kind(kb, embedder, get_tokenizer(k.segmenter, k.stemmer, k.stop_words), config.lookup)


class _Source:
    """The pipeline as a ``LookupSource`` whose requests a variant may change."""

    def __init__(self, pipeline: Pipeline, variant: Variant | None) -> None:
        from ..snapshot.capture import PipelineSource

        self._inner = PipelineSource(pipeline)
        self._request = None if variant is None else variant.request

    def generator(self) -> dict[str, Any]:
        return self._inner.generator()

    def lookup(self, query: str, *, kb_scope: str | None, top_k: int) -> dict[str, Any]:
        if self._request is not None:
            kb_scope, top_k = self._request(kb_scope, top_k)
        return self._inner.lookup(query, kb_scope=kb_scope, top_k=top_k)

    def corpus(self) -> tuple[dict[str, tuple[str, str | None]] | None, str | None]:
        return self._inner.corpus()


def _report(source: _Source, config: Config, cases: CaseSet, label: str) -> dict[str, Any]:
    """Every case snapshotted through ``source`` (in memory) and scored as
    ``ragsnap score`` scores fixtures."""
    from ..io.decode import decode_fixture
    from ..io.jsonio import dump_json
    from ..ir.metrics import parse_measures
    from ..scoring.stream import MemoryFixtures, score_report, score_stream
    from ..snapshot.capture import snapshot_case

    generator = source.generator()
    held = []
    for case in cases.cases:
        fixture = snapshot_case(source, case, retrieved_at=RETRIEVED_AT, generator=generator)
        raw = dump_json(fixture)
        held.append((case.id, raw, decode_fixture(raw, f"{label}/{case.id}.json")))
    fixtures = MemoryFixtures(held)
    scored = score_stream(cases.cases, fixtures, config.skip_expectations)
    inputs = {
        "cases": label,
        "casesSha256": cases.sha256,
        "fixtures": label,
        "fixturesSha256": scored.sha256,
    }
    return score_report(
        cases.cases, scored, parse_measures(config.measures), inputs, config.known_failures
    )


def _diff(baseline: Mapping[str, Any], report: Mapping[str, Any], config: Config) -> dict[str, Any]:
    from ..scoring.diff import diff_reports

    return diff_reports(
        baseline,
        report,
        config.tolerances,
        "baseline",
        noise_floor=config.noise_floor,
        significance=config.significance,
    )


def _failing(report: Mapping[str, Any], mode: str) -> list[str]:
    return [
        case["id"]
        for case in report["cases"]
        if fails_run(case_outcome(case["passed"], case.get("knownFailure")), mode)
    ]


def _named(ids: Sequence[str]) -> str:
    shown = ", ".join(ids[:_NAMED])
    return shown + (f" and {len(ids) - _NAMED} more" if len(ids) > _NAMED else "")


def _check_control(
    diff: Mapping[str, Any],
    report: Mapping[str, Any],
    config: Config,
    where: str,
    configured: str | None = None,
) -> tuple[str, ...]:
    """Refuse a control that is not the baseline (an ``InputError`` on ``where``);
    return the cases that fail the run on it already (a PR check that is red before
    any change: a mutation is caught by a case only when that case newly fails)."""
    fix = (
        "the baseline is not what the pipeline gives now; run `ragsnap seed`, "
        "`ragsnap snapshot` and `ragsnap accept` first, then audit again"
    )
    if configured is not None and configured != config.lookup.method:
        fix = (
            f"the baseline comes from lookup.method {configured}, the audit runs "
            f"{config.lookup.method}: audit the method the baseline was captured with (drop "
            f"--method), or snapshot and accept with --method {config.lookup.method} first"
        )
    moved = [c["id"] for c in diff["cases"]]
    if moved:
        raise InputError(
            where,
            f"the unchanged pipeline moves {len(moved)} case(s) against it ({_named(moved)})",
            fix,
        )
    rows = [f"{r['scope']} {r['metric']}" for r in diff["aggregates"] if r["status"] != "unchanged"]
    if rows:
        raise InputError(
            where, f"the unchanged pipeline moves {len(rows)} aggregate(s) ({_named(rows)})", fix
        )
    return tuple(_failing(report, config.known_failures))


@contextmanager
def _scratch(workdir: Path) -> Iterator[Path]:
    workdir.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix=".ragsnap-audit-", dir=workdir))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _result(
    mutation: Mutation,
    variant: Variant,
    diff: Mapping[str, Any],
    report: Mapping[str, Any],
    config: Config,
    seconds: float,
    already: Sequence[str] = (),
) -> MutationResult:
    regressed = tuple(c["id"] for c in diff["cases"] if c["status"] == "regression")
    before = set(already)
    failing = tuple(i for i in _failing(report, config.known_failures) if i not in before)
    rows = []
    for row in diff["aggregates"]:
        if row["status"] != "regression":
            continue
        test = row["significance"] or {}
        rows.append(
            AggregateRegression(
                row["scope"],
                row["metric"],
                row["delta"],
                test.get("p"),
                test.get("pAdjusted"),
                test.get("significant"),
            )
        )
    caught = bool(diff["regressed"]) or bool(failing)
    return MutationResult(
        name=mutation.name,
        title=mutation.title,
        stage=mutation.stage,
        applicable=True,
        caught=caught,
        regressed_cases=regressed,
        failing_cases=failing,
        aggregate_regressions=tuple(rows),
        changed_cases=len(diff["cases"]),
        detail=variant.detail,
        advice=None if caught else mutation.advice_for(variant),
        seconds=seconds,
    )


def run_audit(
    config: Config,
    cases: CaseSet,
    baseline_report: Mapping[str, Any],
    *,
    names: Sequence[str] | None = None,
    method: str | None = None,
    workdir: Path,
    docs: Sequence[SeedDocument] | None = None,
    progress: bool = True,
    baseline_label: str = "the baseline report",
) -> AuditRun:
    """Run the mutations ``names`` lists (all when None) against the project (module
    docstring). ``docs``: the seed documents (default: ``kb.seedDocs``); ``workdir``:
    where the scratch stores live while the audit runs (removed after it);
    ``progress``: a line per mutation on stderr."""
    from ..kb.embedders import make_embedder

    started = time.perf_counter()
    if config.kb.backend != "embedded":
        raise UsageError(
            f"the mutation audit re-seeds scratch copies of the embedded pipeline; kb.backend "
            f"is {config.kb.backend} in {config.source}: audit with the embedded backend "
            "(kb.backend: embedded, or --backend embedded), whose baseline it compares with"
        )
    mutations = select_mutations(names)
    configured = config.lookup.method
    if method is not None:
        config = dataclasses.replace(
            config, lookup=dataclasses.replace(config.lookup, method=method)
        )
    spec = config.lookup.method_spec(config.lookup.method)
    documents = tuple(load_seed_docs(config.kb.seed_docs) if docs is None else docs)
    project = Project(config, documents, cases.cases)
    embedder = CachedEmbedder(make_embedder(spec.embedder or config.kb.embedder, config.kb.base))
    bar = Progress(len(mutations) + 1, "audit", "runs") if progress else None
    results: list[MutationResult] = []
    with _scratch(workdir) as scratch:
        control = _seed_store(scratch / "control.sqlite", config, documents, None, embedder)
        try:
            report = _report(
                _Source(_pipeline(control, config, embedder, None), None), config, cases, "control"
            )
            already = _check_control(
                _diff(baseline_report, report, config), report, config, baseline_label, configured
            )
            control_seconds = time.perf_counter() - started
            if bar is not None:
                bar.advance()
            for n, mutation in enumerate(mutations):
                begun = time.perf_counter()
                applied = mutation.apply(project)
                if isinstance(applied, NotApplicable):
                    results.append(
                        MutationResult(
                            mutation.name, mutation.title, mutation.stage, False, applied.reason
                        )
                    )
                else:
                    store = control
                    if mutation.index:
                        path = scratch / f"mutation-{n}.sqlite"
                        store = _seed_store(path, applied.config, applied.docs, applied, embedder)
                    try:
                        pipeline = _pipeline(store, applied.config, embedder, applied.pipeline)
                        mutated = _report(
                            _Source(pipeline, applied), applied.config, cases, mutation.name
                        )
                    finally:
                        if store is not control:
                            store.close()
                            for leftover in scratch.glob(f"mutation-{n}.sqlite*"):
                                leftover.unlink()
                    diff = _diff(baseline_report, mutated, config)
                    results.append(
                        _result(
                            mutation,
                            applied,
                            diff,
                            mutated,
                            config,
                            time.perf_counter() - begun,
                            already,
                        )
                    )
                if bar is not None:
                    bar.advance()
        finally:
            control.close()
    if bar is not None:
        bar.close()
    return AuditRun(
        spec.name,
        len(cases.cases),
        tuple(results),
        control_seconds,
        time.perf_counter() - started,
        already,
    )


# --- the report section ----------------------------------------------------------------


def mutation_section(run: AuditRun) -> dict[str, Any]:
    """The audit's mutation section, JSON-ready and deterministic: everything but
    ``seconds`` (the timings, which a caller may drop) is the same on every run."""
    return {
        "method": run.method,
        "cases": run.cases,
        "mutations": len(run.results),
        "applicable": run.applicable,
        "caught": run.caught,
        "score": None if run.score is None else round(run.score, 6),
        "controlFailing": list(run.control_failing),
        "results": [result.to_json() for result in run.results],
        "seconds": {
            "total": round(run.seconds, 3),
            "control": round(run.control_seconds, 3),
            "mutations": {r.name: round(r.seconds, 3) for r in run.results},
        },
    }


def _caught_by(result: Mapping[str, Any]) -> str:
    """The cases that caught a mutation (the first few), then its aggregate
    regressions (the first two, with the adjusted p of their paired test)."""
    if not result["applicable"]:
        return ""
    cases: list[str] = result["caughtBy"]
    parts = [
        ", ".join(cases[:_SHOWN]) + (f" +{len(cases) - _SHOWN}" if len(cases) > _SHOWN else "")
    ]
    rows = result["aggregateRegressions"]
    shown = []
    for row in rows[:2]:
        text = f"{row['scope']} {row['metric']}"
        if row["delta"] is not None:
            text += f" {row['delta']:+.3f}"
        if row["pAdjusted"] is not None:
            text += f" (p {row['pAdjusted']:.3f})"
        shown.append(text)
    if shown:
        more = f" +{len(rows) - 2}" if len(rows) > 2 else ""
        parts.append("aggregates: " + "; ".join(shown) + more)
    return " · ".join(part for part in parts if part)


def mutation_markdown(section: Mapping[str, Any]) -> list[str]:
    """The section as Markdown lines: the mutation score, then one table row per
    mutation (mutation, stage, caught, caught by, advice for an uncaught one; a
    mutation that does not apply says why)."""
    from ..io.markdown import markdown_table

    score = section["score"]
    head = (
        f"Mutation score: {section['caught']} of {section['applicable']} applicable mutations "
        f"caught ({score:.0%})"
        if score is not None
        else "Mutation score: no mutation applies to this project"
    )
    rows = []
    for result in section["results"]:
        caught = (
            "n/a"
            if not result["applicable"]
            else "**no**"
            if not result["caught"]
            else "yes"
            if result["caughtRequiringSignificance"]
            else "yes, not significant"
        )
        note = result["reason"] if not result["applicable"] else result["advice"] or ""
        rows.append([result["name"], result["stage"], caught, _caught_by(result), note])
    table = markdown_table(["mutation", "stage", "caught", "caught by", "advice"], rows)
    skipped = section["mutations"] - section["applicable"]
    lines = [
        head
        + (f"; {skipped} not applicable" if skipped else "")
        + f" (method {section['method']}, {section['cases']} cases).",
        "",
        *table.splitlines(),
    ]
    if any(r["caught"] and not r["caughtRequiringSignificance"] for r in section["results"]):
        lines += [
            "",
            "*yes, not significant*: caught only by aggregate drops beyond the tolerance whose "
            "paired test is not significant; with `significance.require: true` the check "
            "would pass.",
        ]
    return lines

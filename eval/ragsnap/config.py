"""The optional project configuration file, ``ragsnap.yaml``.

Looked up in the project root (``ragsnap.cli`` runs every command there: the nearest
folder, from the current one upwards, that holds this file) unless ``--config`` names
another file; a missing default file means built-in defaults, a missing named file is
an error. Strictly validated against ``schemas/config.schema.json``::

    diff:
      tolerances:          # how much worse a value may get before it regresses
        passRate: 0.0      # absolute drop allowed, 0..1
        recallAtK: 0.0
        strongHitRate: 0.0
        missCount: 0       # extra misses allowed
        firstExpectedRank: 0  # rank positions a found document may move down
        metrics: 0.0       # drop allowed in any graded metric's mean (ndcg@10 ...)
      noiseFloor:          # a move smaller than this is "changed", never a regression
        default: 0.001     # every rate and graded mean (the miss count: 0)
        ndcg@10: 0.005     # per metric, by name
      significance:        # paired tests of every aggregate that moved
        permutations: 1000 # random sign flips of the permutation test
        bootstrap: 1000    # resamples of the bootstrap interval
        seed: 0
        alpha: 0.05        # significant when p < alpha
        require: false     # true (or --require-significance): an aggregate drop fails
                           # only when significant; case regressions always fail
        correction: holm   # holm | bonferroni | none: the p-values of the rows one diff
                           # tests are adjusted as one family; significant = adjusted p < alpha
    measures: [recall@5, recall@10, mrr@10, ndcg@10, map, coverage@10]  # judged cases
    snapshot:
      tolerance: 0.0001    # a fixture's numbers may move this much (absolute) and the
                           # fixture is unchanged: not rewritten, --check passes
    kb:                    # the knowledge base of `ragsnap seed` / `ragsnap lookup`
      backend: embedded    # embedded | milvus | http | python: where seed, snapshot, serve go
      path: .ragsnap/kb.sqlite
      milvus:              # the milvus backend (extra `milvus`)
        uri: .ragsnap/milvus.db  # a Milvus Lite file, or http(s)://host:19530
        tokenEnv: MILVUS_TOKEN   # or tokenFile: path (servers only)
        collection: ragsnap      # the prefix of its three collections
        analyzer: ragsnap  # ragsnap (BM25 over ragsnap's own tokens) | standard | jieba |
                           # auto (Milvus analyses the text: jieba when it has Chinese)
      seedDocs: seed-docs
      segmenter: bigram    # Chinese segmentation: bigram | jieba (extra `zh`)
      analyzer:            # Latin text: part of the index's fingerprint
        stemmer: english   # a Snowball language (PyStemmer): german, french, ...; or none
        stopWords: english # or none
      embedder: {kind: hashing, dimension: 256}
                           # or {kind: sentence-transformer} (extra `embed`),
                           # {kind: frozen, path: vectors.json},
                           # {kind: openai, baseUrl: https://..., model: ..., tokenEnv: VAR}
      chunking: {maxChars: 1200, overlapChars: 150, headingLevel: 2}
    http:                  # the http backend and live-check (see ragsnap.kb.backends.http)
      baseUrl: http://127.0.0.1:9900
      tokenEnv: RAG_TOKEN  # or tokenFile: path; endpoint paths and answer fields too
      envelope: null       # or {code: code, message: message, data: data, ok: 0}:
                           # Spring's {code, message, data}, errors with HTTP 200
    python:                # the python backend (see ragsnap.kb.backends.python)
      retriever: my_rag.search:make_retriever  # MODULE:FACTORY (or --retriever)
      methods: {bm25: my_rag.search:make_bm25}  # --method / trial: one retriever each
      timeoutSeconds: 30   # one search may take this long, then the lookup fails
    lookup:                # the lookup pipeline (see ragsnap.kb.pipeline)
      method: hybrid+rerank  # lexical | vector | hybrid | hybrid+rerank
      topK: 5
      candidates: 50       # per list, before fusion
      rerankDepth: 20
      minScore: 0.22       # evidence whose confidence is below this is dropped
      relativeScore: 0.5   # ...and evidence below this share of the best score
      weakScore: 0.35      # a filtered attempt whose best is below this is retried
      sufficientScore: 0.45 # evidence status "sufficient" from this top score
      contextBudgetChars: 2000
      hints: true          # L0 hints from document metadata
      fusion: {kind: adaptive, lexicalWeight: 0.7, vectorWeight: 0.3}  # by embedder:
                           # hashing cc-adaptive-v1; others {kind: convex} (cc-max-v1,
                           # MiniLM 0.4 / 0.6); or {kind: rrf, k: 60, lexicalWeight: 1.0, ...}
      rerankWeights: {confidence: 0.45, phrase: 0.2, identifiers: 0.15, title: 0.1,
                      coverage: 0.1}  # heuristic-v1's (heuristic-v2's are fixed); any left
                                      # out keeps its default
    methods:               # retrieval methods as data, beside the built-ins (lexical,
      lexical-heavy:       # vector, hybrid, hybrid+rerank, alias); any may be redefined
        retrievers: [lexical, vector]
        fusion: {lexicalWeight: 2.0, vectorWeight: 1.0}
        reranker: none     # or heuristic-v2 (hybrid+rerank's), heuristic-v1
        minScore: 0.1      # floors: the lookup's when left out
        relativeScore: 0.0
        embedder: {kind: frozen, path: other-vectors.json}  # its own vectors
        note: what the method is for
    scoring:               # `ragsnap score`
      skip: [rerankTopSource]  # expectations not checked: for a service that reports
                           # a part but cannot meet them (a rerank trace with applied:
                           # false). Any of selectedAttempt, fallbackReason,
                           # fallbackReasons, evidenceStatus, contextSources,
                           # rerankTopSource (the golden cases' expected<Name> fields);
                           # a skipped one never fails a case, and the case's report
                           # entry lists it under skippedExpectations. (An expectation
                           # on a part the fixture lacks is not applicable: no skip
                           # needed.)
    knownFailures: expected  # what a case marked `knownFailure` does to the run (score,
                           # pytest --ragsnap, the JUnit file); see ragsnap.scoring.hits:
                           # expected: it does not fail the run, and one that now passes
                           #   is reported ("remove its knownFailure") -- pytest's xfail
                           # strict: as expected, but one that now passes fails the run
                           #   -- pytest's xfail(strict=True)
                           # fail: every failing case fails the run, marked or not
    history: reports/history  # where `ragsnap accept` (and `ragsnap score --history`)
                           # keep dated score reports, and what `ragsnap trend` reads
    trial:                 # `ragsnap trial` defaults
      aliases: aliases.yaml  # term groups of the `alias` method (its vector provider)
      methods: [lexical, vector, hybrid, hybrid+rerank, alias]
      depth: 1000          # raw ranking depth (default: the evidence only)
      gates: gates.yaml
      shareable: false     # true: trial writes privacy reports unless --no-privacy
      storeCache: .ragsnap/trial-stores  # seeded stores reused (false: seed every time)

Paths inside the file are relative to the file's folder.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from .errors import InputError, UsageError, did_you_mean
from .io.jsonio import read_yaml
from .io.schema import validate
from .ir.metrics import MEASURES, parse_measures
from .kb.backends.python import PythonConfig
from .kb.backends.registry import BACKENDS, DEFAULT_BACKEND, get_backend
from .scoring.diff import NoiseFloor, Tolerances
from .scoring.hits import DEFAULT_KNOWN_FAILURES, EXPECTATIONS
from .scoring.significance import SignificanceSettings
from .settings import (
    ALIAS_NOTE,
    BUILTIN_METHODS,
    SNAPSHOT_TOLERANCE,
    ChunkSettings,
    FusionProfile,
    LookupSettings,
    Method,
    RerankWeights,
    default_fusion,
)

if TYPE_CHECKING:
    from .kb.backends.http import HttpMapping

__all__ = ["DEFAULT_CONFIG", "Config", "KbConfig", "MilvusConfig", "TrialConfig", "load_config"]

DEFAULT_CONFIG = Path("ragsnap.yaml")
#: Graded measures the score report computes for judged cases.
DEFAULT_CASE_MEASURES = ("recall@5", "recall@10", "mrr@10", "ndcg@10", "map", "coverage@10")


DEFAULT_KB = Path(".ragsnap/kb.sqlite")
#: where ``ragsnap trial`` keeps the stores it seeds (``ragsnap.kb.store_cache``)
DEFAULT_TRIAL_STORES = Path(".ragsnap/trial-stores")
#: ``history`` when left out: the committed folder of dated score reports
DEFAULT_HISTORY = Path("reports/history")
DEFAULT_MILVUS_URI = ".ragsnap/milvus.db"
#: ``kb.analyzer.stemmer`` when left out: English Snowball (``none`` turns it off)
DEFAULT_STEMMER = "english"


@dataclass(frozen=True, slots=True)
class MilvusConfig:
    """Where the milvus backend's collections live."""

    uri: str = DEFAULT_MILVUS_URI
    token_file: Path | None = None
    token_env: str | None = None
    collection: str = "ragsnap"
    analyzer: str = "ragsnap"

    @classmethod
    def from_json(cls, data: dict[str, Any], base: Path) -> MilvusConfig:
        uri = data.get("uri", DEFAULT_MILVUS_URI)
        if "uri" in data and "://" not in uri:  # a Milvus Lite file: relative to the config
            uri = str(base / uri)
        token_file = data.get("tokenFile")
        return cls(
            uri=uri,
            token_file=None if token_file is None else base / token_file,
            token_env=data.get("tokenEnv"),
            collection=data.get("collection", "ragsnap"),
            analyzer=data.get("analyzer", "ragsnap"),
        )


DEFAULT_SEED_DOCS = Path("seed-docs")


@dataclass(frozen=True, slots=True)
class KbConfig:
    """Where the knowledge base lives and how it is built."""

    backend: str = DEFAULT_BACKEND
    path: Path = DEFAULT_KB
    seed_docs: Path = DEFAULT_SEED_DOCS
    segmenter: str = "bigram"
    stemmer: str | None = DEFAULT_STEMMER
    stop_words: bool = True
    embedder: dict[str, Any] = field(default_factory=lambda: {"kind": "hashing"})
    chunking: ChunkSettings = field(default_factory=ChunkSettings)
    milvus: MilvusConfig = field(default_factory=MilvusConfig)
    base: Path | None = None  # folder of the config file, for the embedder's paths


@dataclass(frozen=True, slots=True)
class TrialConfig:
    """``trial:``: the alias provider's file and the trial's defaults."""

    aliases: Path | None = None
    methods: tuple[str, ...] | None = None  # None: every built-in the corpus can run
    depth: int | None = None
    gates: Path | None = None
    #: the reports are shared: ``trial`` writes privacy views unless ``--no-privacy``
    shareable: bool = False
    #: ``storeCache``: the folder of seeded trial stores (``ragsnap.kb.store_cache``);
    #: None (``storeCache: false``): every trial seeds a temporary store
    store_cache: Path | None = DEFAULT_TRIAL_STORES


@dataclass(frozen=True, slots=True)
class Config:
    """Validated settings; every field has a default."""

    tolerances: Tolerances = field(default_factory=Tolerances)
    noise_floor: NoiseFloor = field(default_factory=NoiseFloor)
    significance: SignificanceSettings = field(default_factory=SignificanceSettings)
    measures: tuple[str, ...] = DEFAULT_CASE_MEASURES
    snapshot_tolerance: float = SNAPSHOT_TOLERANCE
    kb: KbConfig = field(default_factory=KbConfig)
    lookup: LookupSettings = field(default_factory=LookupSettings)
    trial: TrialConfig = field(default_factory=TrialConfig)
    #: the validated ``http`` section, its folder and file; read through ``http``
    http_section: dict[str, Any] = field(default_factory=dict)
    http_base: Path | None = None
    python: PythonConfig = field(default_factory=PythonConfig)
    source: str = str(DEFAULT_CONFIG)
    #: ``scoring.skip``: the case expectations ``ragsnap score`` does not check
    skip_expectations: tuple[str, ...] = ()
    #: ``scoring.noAnswerCoverage``: the severity of a language with answerable cases
    #: and no no-answer case (``ragsnap.scoring.hygiene``): error | warning
    no_answer_coverage: Literal["error", "warning"] = "error"
    #: ``knownFailures``: expected | strict | fail (``ragsnap.scoring.hits``)
    known_failures: str = DEFAULT_KNOWN_FAILURES
    #: ``history``: the folder of dated score reports (accept, score --history, trend)
    history: Path = DEFAULT_HISTORY

    @property
    def http(self) -> HttpMapping:
        """The ``http`` section with its defaults (imported only by the commands that talk
        to a service, so reading ragsnap.yaml stays cheap for the others)."""
        from .kb.backends.http import load_mapping

        return load_mapping(self.http_section, self.http_base, self.source)


def _backend(name: str, path: Path) -> str:
    """``kb.backend``: a registered backend (the closest one named when it is not)."""
    try:
        get_backend(name)
    except UsageError:
        meant = did_you_mean(name, BACKENDS)
        fix = f"use one of: {', '.join(map(repr, BACKENDS))}"
        raise InputError(
            path,
            f"{name!r} is not a backend",
            f"did you mean {meant!r}? Else {fix}" if meant else fix,
            "/kb/backend",
        ) from None
    return name


def _kb_config(data: dict[str, Any], base: Path, path: Path) -> KbConfig:
    chunking = data.get("chunking", {})
    defaults = ChunkSettings()
    # the schema's "integer" admits 3.0; the settings are used as Python ints
    max_chars = int(chunking.get("maxChars", defaults.max_chars))
    overlap = int(chunking.get("overlapChars", defaults.overlap_chars))
    if overlap * 2 > max_chars:
        raise InputError(
            path,
            f"`overlapChars` {overlap} is more than half of `maxChars` {max_chars}",
            "use an overlap of at most half the chunk size",
            "/kb/chunking/overlapChars",
        )

    def where(key: str, default: Path) -> Path:
        return base / data[key] if key in data else default

    stemmer = data.get("analyzer", {}).get("stemmer", DEFAULT_STEMMER)

    return KbConfig(
        backend=_backend(data.get("backend", DEFAULT_BACKEND), path),
        path=where("path", DEFAULT_KB),
        seed_docs=where("seedDocs", DEFAULT_SEED_DOCS),
        segmenter=data.get("segmenter", "bigram"),
        stemmer=None if stemmer == "none" else stemmer,
        stop_words=data.get("analyzer", {}).get("stopWords", "english") == "english",
        embedder=dict(data.get("embedder", {"kind": "hashing"})),
        chunking=ChunkSettings(
            max_chars=max_chars,
            overlap_chars=overlap,
            heading_level=int(chunking.get("headingLevel", defaults.heading_level)),
        ),
        milvus=MilvusConfig.from_json(data.get("milvus", {}), base),
        base=base,
    )


def _fusion(
    data: dict[str, Any],
    default: FusionProfile,
    path: Path,
    pointer: str,
    embedder_kind: str | None = None,
) -> FusionProfile:
    """A ``fusion:`` mapping; what it leaves out comes from ``default`` (the
    embedder's profile) when it keeps that kind, from the embedder's profile of the
    kind it names otherwise (``default_fusion``)."""
    kind = data.get("kind", default.kind)
    if kind != "rrf" and "k" in data:
        raise InputError(
            path,
            "`k` is the rank constant of reciprocal rank fusion; "
            f"{'an' if kind.startswith('a') else 'a'} {kind} profile has none",
            "drop `k`, or set `kind: rrf`",
            pointer,
        )
    base = default if kind == default.kind else default_fusion(embedder_kind, kind)
    return FusionProfile(
        name=data.get("profile", base.name),
        kind=kind,
        k=int(data.get("k", base.k)),
        lexical_weight=float(data.get("lexicalWeight", base.lexical_weight)),
        vector_weight=float(data.get("vectorWeight", base.vector_weight)),
    )


def _methods(
    data: dict[str, Any],
    aliases: str | None,
    path: Path,
    fusion: FusionProfile,
    embedder_kind: str | None = None,
) -> tuple[Method, ...]:
    """The built-in methods, ``alias`` when an alias file is configured, then ``methods:``.

    A fused method with its own vectors and no ``fusion`` gets its embedder's
    default profile; ``fusion`` fills what a method's profile leaves out.
    Embedder paths stay as written: they are resolved against the config's folder
    when the embedder is made."""
    methods = {m.name: m for m in BUILTIN_METHODS}
    if aliases is not None:
        methods["alias"] = Method(
            "alias", ("vector",), embedder={"kind": "alias", "path": aliases}, note=ALIAS_NOTE
        )
    for name, spec in data.items():
        pointer = f"/methods/{name}"
        retrievers = tuple(spec["retrievers"])
        if "fusion" in spec and len(retrievers) < 2:
            raise InputError(
                path,
                f"method {name!r} has `fusion` but one retriever",
                "list both retrievers, or drop `fusion`",
                pointer,
            )
        reranker = spec.get("reranker")
        embedder = spec.get("embedder")
        own_kind = embedder_kind if embedder is None else embedder.get("kind")
        own = fusion if embedder is None else default_fusion(own_kind)
        try:
            if "fusion" in spec:
                profile: FusionProfile | None = _fusion(
                    spec["fusion"], own, path, f"{pointer}/fusion", own_kind
                )
            else:
                profile = None if embedder is None or len(retrievers) < 2 else own
            methods[name] = Method(
                name,
                retrievers,
                fusion=profile,
                reranker=None if reranker in (None, "none") else reranker,
                min_score=_float(spec.get("minScore")),
                relative_score=_float(spec.get("relativeScore")),
                embedder=dict(spec["embedder"]) if "embedder" in spec else None,
                note=spec.get("note"),
            )
        except UsageError as exc:
            raise InputError(path, str(exc), "fix the method's definition", pointer) from None
    return tuple(methods.values())


def _float(value: Any) -> float | None:
    """A score setting as a float (YAML reads ``0`` as an int); None stays None."""
    return None if value is None else float(value)


def _trial_config(data: dict[str, Any], base: Path) -> TrialConfig:
    def where(key: str) -> Path | None:
        return base / data[key] if key in data else None

    methods = data.get("methods")
    return TrialConfig(
        aliases=where("aliases"),
        methods=None if methods is None else tuple(methods),
        depth=data.get("depth"),
        gates=where("gates"),
        shareable=data.get("shareable", False),
        store_cache=_store_cache(data.get("storeCache", True), base),
    )


def _store_cache(value: str | bool, base: Path) -> Path | None:
    """``trial.storeCache``: a folder (relative to the config's), true (the default
    folder) or false (no cache)."""
    if value is False:
        return None
    return base / (DEFAULT_TRIAL_STORES if value is True else value)


def _lookup_settings(
    data: dict[str, Any], methods: tuple[Method, ...], path: Path, fusion: FusionProfile
) -> LookupSettings:
    keys = {
        "method": "method",
        "topK": "top_k",
        "candidates": "candidates",
        "rerankDepth": "rerank_depth",
        "minScore": "min_score",
        "relativeScore": "relative_score",
        "weakScore": "weak_score",
        "sufficientScore": "sufficient_score",
        "contextBudgetChars": "context_budget_chars",
        "hints": "hints",
    }
    whole = {"topK", "candidates", "rerankDepth", "contextBudgetChars"}
    # YAML reads `minScore: 0` as an int; the pipeline's floors are floats
    real = {"minScore", "relativeScore", "weakScore", "sufficientScore"}
    values: dict[str, Any] = {
        keys[k]: int(v) if k in whole else float(v) if k in real else v
        for k, v in data.items()
        if k not in ("fusion", "rerankWeights")
    }
    try:
        values["rerank_weights"] = RerankWeights(**data.get("rerankWeights", {}))
    except UsageError as exc:
        raise InputError(
            path, str(exc), "give at least one weight above 0", "/lookup/rerankWeights"
        ) from None
    try:
        values["fusion"] = fusion
        settings = LookupSettings(**values, methods=methods)
    except UsageError as exc:
        raise InputError(
            path,
            str(exc).split(" (")[0],
            "name a built-in method or one under `methods:`",
            "/lookup/method",
        ) from None
    if not settings.min_score <= settings.sufficient_score:
        raise InputError(
            path,
            "`minScore` is above `sufficientScore`",
            "make minScore <= sufficientScore",
            "/lookup",
        )
    return settings


def _skip_expectations(data: dict[str, Any], path: Path) -> tuple[str, ...]:
    """``scoring.skip``, each name checked against the expectations ``score_case`` knows."""
    names = tuple(data.get("skip", ()))
    for index, name in enumerate(names):
        if name not in EXPECTATIONS:
            raise InputError(
                path,
                f"`scoring.skip` names {name!r}, which is not an expectation ragsnap checks",
                "use some of: " + ", ".join(EXPECTATIONS),
                f"/scoring/skip/{index}",
            )
    return names


def load_config(path: Path | None, *, embedder: str | None = None) -> Config:
    """Read ``path`` (or ``ragsnap.yaml`` when it exists) into a ``Config``; ``embedder``
    (``--embedder NAME``, ``settings.NAMED_EMBEDDERS``) replaces ``kb.embedder`` before
    the settings are read, so what follows from the embedder (the fusion profile of the
    built-in hybrid methods) follows the one chosen."""
    data: Any = None
    if path is None and not DEFAULT_CONFIG.exists():
        path = DEFAULT_CONFIG  # no file: the built-in defaults
    else:
        if path is None:
            path = DEFAULT_CONFIG  # found by default: a folder of that name is an error too
            fix = "rename or remove it (ragsnap reads ragsnap.yaml in the project root)"
        else:
            fix = "pass --config with an existing file, or leave it out"
        data = read_yaml(path, fix)
    if embedder is not None and (data is None or isinstance(data, dict)):
        from .settings import named_embedder

        given: dict[str, Any] = data if isinstance(data, dict) else {}
        kb: dict[str, Any] = given["kb"] if isinstance(given.get("kb"), dict) else {}
        data = {**given, "kb": {**kb, "embedder": named_embedder(embedder)}}
    if data is None:
        return Config()
    validate(data, "config", path, "configuration")
    measures = tuple(data.get("measures", DEFAULT_CASE_MEASURES))
    try:
        parsed = parse_measures(measures)
    except UsageError as exc:
        raise InputError(
            path, str(exc).split(";")[0], "use measures such as ndcg@10", "/measures"
        ) from None
    for index, measure in enumerate(parsed):
        if MEASURES[measure.name].aggregate != "mean":  # gm_map, num_ret ...: not per case
            raise InputError(
                path,
                f"{measure} is not a per-case measure (reports average per-case values; "
                f"{measure} is a count or another mean)",
                "use it with `ragsnap metrics` on TREC files, and per-case measures such as "
                "map or ndcg@10 here",
                f"/measures/{index}",
            )
    base = path.parent
    trial = _trial_config(data.get("trial", {}), base)
    lookup = data.get("lookup", {})
    embedder_kind = data.get("kb", {}).get("embedder", {}).get("kind")
    fusion = default_fusion(embedder_kind)
    try:
        if "fusion" in lookup:
            fusion = _fusion(lookup["fusion"], fusion, path, "/lookup/fusion", embedder_kind)
        methods = _methods(
            data.get("methods", {}),
            data.get("trial", {}).get("aliases"),
            path,
            fusion,
            embedder_kind,
        )
    except UsageError as exc:  # a weight or k the profile refuses
        raise InputError(path, str(exc), "fix the fusion profile", "/lookup/fusion") from None
    diff = data.get("diff", {})
    return Config(
        tolerances=Tolerances.from_json(diff.get("tolerances", {})),
        noise_floor=NoiseFloor.from_json(diff.get("noiseFloor", {})),
        significance=SignificanceSettings(**diff.get("significance", {})),
        measures=measures,
        snapshot_tolerance=float(data.get("snapshot", {}).get("tolerance", SNAPSHOT_TOLERANCE)),
        kb=_kb_config(data.get("kb", {}), base, path),
        lookup=_lookup_settings(lookup, methods, path, fusion),
        trial=trial,
        http_section=dict(data.get("http", {})),
        http_base=base,
        python=PythonConfig(
            retriever=data.get("python", {}).get("retriever"),
            methods=dict(data.get("python", {}).get("methods", {})),
            timeout_seconds=float(data.get("python", {}).get("timeoutSeconds", 30.0)),
            base=base,
        ),
        source=str(path),
        skip_expectations=_skip_expectations(data.get("scoring", {}), path),
        no_answer_coverage=data.get("scoring", {}).get("noAnswerCoverage", "error"),
        known_failures=data.get("knownFailures", DEFAULT_KNOWN_FAILURES),
        history=base / data["history"] if "history" in data else DEFAULT_HISTORY,
    )

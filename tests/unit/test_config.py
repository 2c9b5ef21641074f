"""ragsnap.yaml loading (ragsnap.config)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragsnap.config import load_config
from ragsnap.errors import InputError
from ragsnap.scoring.diff import Tolerances
from ragsnap.settings import (
    ADAPTIVE_FUSION,
    EMBEDDER_ADAPTIVE,
    EMBEDDER_FUSION,
    FUSION_KIND_DEFAULTS,
    FusionProfile,
    default_fusion,
)


def test_defaults_when_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert load_config(None).tolerances == Tolerances()


def test_default_file_is_picked_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("ragsnap.yaml").write_text("diff:\n  tolerances:\n    passRate: 0.05\n    missCount: 2\n")
    assert load_config(None).tolerances == Tolerances(pass_rate=0.05, miss_count=2)


def test_errors(tmp_path: Path) -> None:
    bad = tmp_path / "c.yaml"
    bad.write_text("diff:\n  tolerances:\n    passrate: 0.1\n")
    with pytest.raises(InputError, match=r"at /diff/tolerances: unknown field 'passrate'"):
        load_config(bad)
    bad.write_text("diff: [\n")
    with pytest.raises(InputError, match=r"at line \d+: is not valid YAML"):
        load_config(bad)
    with pytest.raises(InputError, match="file not found"):
        load_config(tmp_path / "absent.yaml")


def test_kb_and_lookup_sections(tmp_path: Path) -> None:
    path = tmp_path / "conf" / "ragsnap.yaml"
    path.parent.mkdir()
    path.write_text(
        "kb:\n  path: store/kb.sqlite\n  seedDocs: corpus.jsonl\n  segmenter: jieba\n"
        "  embedder: {kind: frozen, path: vectors.json}\n"
        "  chunking: {maxChars: 400, overlapChars: 50}\n"
        "lookup: {method: lexical, topK: 7, minScore: 0.1, relativeScore: 0.0}\n",
        encoding="utf-8",
    )
    config = load_config(path)
    assert config.kb.path == path.parent / "store/kb.sqlite"  # relative to the file
    assert config.kb.seed_docs == path.parent / "corpus.jsonl"
    assert config.kb.segmenter == "jieba"
    assert config.kb.embedder == {"kind": "frozen", "path": "vectors.json"}
    assert (config.kb.chunking.max_chars, config.kb.chunking.overlap_chars) == (400, 50)
    assert (config.lookup.method, config.lookup.top_k) == ("lexical", 7)
    assert (config.lookup.min_score, config.lookup.relative_score) == (0.1, 0.0)


@pytest.mark.parametrize(
    ("text", "pointer"),
    [
        ("kb:\n  chunking: {maxChars: 100, overlapChars: 60}\n", "/kb/chunking/overlapChars"),
        ("lookup: {topK: 0}\n", "/lookup/topK"),
        ("lookup: {method: fuzzy}\n", "/lookup/method"),
        ("lookup: {minScore: 0.9, sufficientScore: 0.5}\n", "/lookup"),
        ("kb: {embedder: {kind: openai}}\n", "/kb/embedder"),
        ("kb: {colour: blue}\n", "/kb"),
    ],
)
def test_bad_kb_and_lookup_settings(tmp_path: Path, text: str, pointer: str) -> None:
    path = tmp_path / "ragsnap.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as info:
        load_config(path)
    assert info.value.pointer is not None and info.value.pointer.startswith(pointer)


def test_whole_numbers_written_as_floats_become_ints(tmp_path: Path) -> None:
    path = tmp_path / "ragsnap.yaml"
    path.write_text(
        "kb: {chunking: {maxChars: 1200.0, overlapChars: 100.0, headingLevel: 2.0}}\n"
        "lookup: {rerankDepth: 3.0, candidates: 10.0, topK: 4.0}\n",
        encoding="utf-8",
    )
    config = load_config(path)
    values = [
        config.kb.chunking.max_chars,
        config.kb.chunking.overlap_chars,
        config.kb.chunking.heading_level,
        config.lookup.rerank_depth,
        config.lookup.candidates,
        config.lookup.top_k,
    ]
    assert values == [1200, 100, 2, 3, 10, 4]
    assert all(type(v) is int for v in values)
    assert "max1200:" in config.kb.chunking.fingerprint()


def test_methods_are_data(tmp_path: Path) -> None:
    (tmp_path / "aliases.yaml").write_text("groups: {pool: [pool, 连接池]}\n", encoding="utf-8")
    path = tmp_path / "ragsnap.yaml"
    path.write_text(
        "trial: {aliases: aliases.yaml, methods: [lexical, lexical-heavy], depth: 100}\n"
        "lookup: {method: lexical-heavy, fusion: {kind: rrf, k: 30}}\n"
        "methods:\n"
        "  lexical-heavy:\n"
        "    retrievers: [lexical, vector]\n"
        "    fusion: {lexicalWeight: 2.0, vectorWeight: 0.5}\n"
        "    reranker: none\n"
        "    minScore: 0.1\n"
        "    note: leans on BM25\n"
        "  bm25-nofloor: {retrievers: [lexical], relativeScore: 0.0, reranker: heuristic-v1}\n",
        encoding="utf-8",
    )
    config = load_config(path)
    lookup = config.lookup
    assert lookup.method == "lexical-heavy" and lookup.fusion.k == 30
    assert (lookup.fusion.kind, lookup.fusion.name, lookup.fusion.lexical_weight) == (
        "rrf",
        "wrrf-v1",
        1.0,
    )
    names = [m.name for m in lookup.methods]
    assert names == [
        "lexical",
        "vector",
        "hybrid",
        "hybrid+rerank",
        "alias",
        "lexical-heavy",
        "bm25-nofloor",
    ]
    heavy = lookup.method_spec("lexical-heavy")
    assert heavy.kind == "hybrid" and heavy.reranker is None and heavy.min_score == 0.1
    # what a method's profile leaves out comes from the lookup's
    assert heavy.fusion is not None
    assert (heavy.fusion.kind, heavy.fusion.lexical_weight, heavy.fusion.k) == ("rrf", 2.0, 30)
    assert heavy.note == "leans on BM25"
    nofloor = lookup.method_spec("bm25-nofloor")
    assert nofloor.kind == "lexical" and nofloor.reranker == "heuristic-v1"
    alias = lookup.method_spec("alias")
    assert alias.embedder == {"kind": "alias", "path": "aliases.yaml"}  # resolved when made
    assert config.trial.aliases == tmp_path / "aliases.yaml"
    assert alias.note is not None and "not an embedding model" in alias.note
    assert config.trial.methods == ("lexical", "lexical-heavy") and config.trial.depth == 100


def test_alias_is_defined_only_with_an_alias_file(tmp_path: Path) -> None:
    path = tmp_path / "ragsnap.yaml"
    path.write_text("lookup: {method: alias}\n", encoding="utf-8")
    with pytest.raises(InputError) as info:
        load_config(path)
    assert info.value.pointer == "/lookup/method" and "unknown method 'alias'" in str(info.value)


@pytest.mark.parametrize(
    ("text", "pointer", "words"),
    [
        ("methods: {x: {retrievers: [lexical], fusion: {k: 5}}}\n", "/methods/x", "one retriever"),
        ("methods: {x: {retrievers: []}}\n", "/methods/x/retrievers", ""),
        ("methods: {x: {retrievers: [bm25]}}\n", "/methods/x/retrievers/0", ""),
        ("methods: {x: {retrievers: [lexical], reranker: cross}}\n", "/methods/x/reranker", ""),
        ("methods: {X Y: {retrievers: [lexical]}}\n", "/methods", ""),
        ("methods: {x: {retrievers: [vector], embedder: {kind: alias}}}\n", "/methods/x", ""),
        ("trial: {depth: 0}\n", "/trial/depth", ""),
        ("lookup: {fusion: {lexicalWeight: 0, vectorWeight: 0}}\n", "/lookup/fusion", "sum to 0"),
        ("lookup: {fusion: {k: 30}}\n", "/lookup/fusion", "set `kind: rrf`"),
        ("lookup: {fusion: {kind: mean}}\n", "/lookup/fusion/kind", ""),
        (
            "methods: {x: {retrievers: [lexical, vector], fusion: {kind: convex, k: 5}}}\n",
            "/methods/x/fusion",
            "a convex profile has none",
        ),
        (
            "lookup: {fusion: {kind: adaptive, k: 5}}\n",
            "/lookup/fusion",
            "an adaptive profile has none",
        ),
        (
            "methods: {x: {retrievers: [lexical, vector], fusion: {lexicalWeight: 0, "
            "vectorWeight: 0}}}\n",
            "/methods/x",
            "sum to 0",
        ),
    ],
)
def test_bad_methods(tmp_path: Path, text: str, pointer: str, words: str) -> None:
    path = tmp_path / "ragsnap.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as info:
        load_config(path)
    assert info.value.pointer is not None and info.value.pointer.startswith(pointer)
    assert words in str(info.value)


def test_fusion_defaults_follow_the_embedder(tmp_path: Path) -> None:
    """No ``fusion:``: cc-adaptive-v1 with the embedder's priors; ``kind: convex`` is
    cc-max-v1 with the embedder's weights (the default before ragsnap-lookup/6); a
    method with its own vectors gets its own embedder's; a partial mapping fills in
    from them."""
    path = tmp_path / "ragsnap.yaml"
    assert load_config(None).lookup.fusion == ADAPTIVE_FUSION == EMBEDDER_ADAPTIVE["hashing"]
    assert (ADAPTIVE_FUSION.name, ADAPTIVE_FUSION.kind) == ("cc-adaptive-v1", "adaptive")
    assert (ADAPTIVE_FUSION.lexical_weight, ADAPTIVE_FUSION.vector_weight) == (0.7, 0.3)
    path.write_text("kb: {embedder: {kind: sentence-transformer}}\n", encoding="utf-8")
    minilm = EMBEDDER_FUSION["sentence-transformer"]  # MiniLM keeps cc-max-v1
    assert load_config(path).lookup.fusion == minilm and minilm.kind == "convex"
    path.write_text(
        "kb: {embedder: {kind: sentence-transformer}}\nlookup: {fusion: {kind: adaptive}}\n",
        encoding="utf-8",
    )
    assert load_config(path).lookup.fusion == EMBEDDER_ADAPTIVE["sentence-transformer"]
    path.write_text(
        "kb: {embedder: {kind: sentence-transformer}}\nlookup: {fusion: {kind: convex}}\n",
        encoding="utf-8",
    )
    assert load_config(path).lookup.fusion == EMBEDDER_FUSION["sentence-transformer"]
    assert load_config(path).lookup.fusion.name == "cc-max-v1"
    path.write_text(
        "kb: {embedder: {kind: sentence-transformer}}\n"
        "lookup: {fusion: {lexicalWeight: 3}}\n"
        "methods:\n"
        "  own: {retrievers: [lexical, vector], embedder: {kind: hashing}}\n"
        "  own-convex:\n"
        "    retrievers: [lexical, vector]\n"
        "    embedder: {kind: hashing}\n"
        "    fusion: {kind: convex}\n"
        "  own-rrf:\n"
        "    retrievers: [lexical, vector]\n"
        "    embedder: {kind: hashing}\n"
        "    fusion: {kind: rrf}\n",
        encoding="utf-8",
    )
    lookup = load_config(path).lookup
    assert (lookup.fusion.kind, lookup.fusion.lexical_weight) == ("convex", 3.0)
    assert lookup.fusion.vector_weight == minilm.vector_weight
    assert lookup.method_spec("own").fusion == ADAPTIVE_FUSION
    assert lookup.method_spec("own-convex").fusion == EMBEDDER_FUSION["hashing"]
    assert lookup.method_spec("own-rrf").fusion == FusionProfile(
        name="wrrf-v1", kind="rrf", lexical_weight=1.0, vector_weight=1.0
    )
    assert lookup.method_spec("hybrid").fusion is None  # the lookup's, at run time
    assert default_fusion("openai") == FusionProfile()  # cc-max-v1, as before
    assert default_fusion("openai", "adaptive") == FUSION_KIND_DEFAULTS["adaptive"]  # 0.5 / 0.5


def test_the_analyzer(tmp_path: Path) -> None:
    path = tmp_path / "ragsnap.yaml"
    path.write_text("kb: {analyzer: {stemmer: english, stopWords: none}}\n", encoding="utf-8")
    kb = load_config(path).kb
    assert (kb.stemmer, kb.stop_words) == ("english", False)
    path.write_text("kb: {analyzer: {stemmer: none}}\n", encoding="utf-8")
    assert load_config(path).kb.stemmer is None
    # the milvus backend takes it too (Milvus's stemmer filter; refused with Milvus Lite,
    # which ignores that filter, when the store is opened)
    path.write_text("kb: {backend: milvus, analyzer: {stemmer: english}}\n", encoding="utf-8")
    kb = load_config(path).kb
    assert (kb.backend, kb.stemmer, kb.stop_words) == ("milvus", "english", True)
    path.write_text("kb: {analyzer: {stemmer: klingon}}\n", encoding="utf-8")
    with pytest.raises(InputError) as info:
        load_config(path)
    assert info.value.pointer == "/kb/analyzer/stemmer"


@pytest.mark.parametrize("measure", ["gm_map", "num_ret", "NumRelRet"])
def test_measures_that_are_not_per_case_are_refused(tmp_path: Path, measure: str) -> None:
    path = tmp_path / "ragsnap.yaml"
    path.write_text(f"measures: [map, {measure}]\n", encoding="utf-8")
    with pytest.raises(InputError) as info:
        load_config(path)
    assert info.value.pointer == "/measures/1" and "not a per-case measure" in str(info.value)


def test_scoring_skip(tmp_path: Path) -> None:
    path = tmp_path / "ragsnap.yaml"
    assert load_config(_write(path, "diff: {}\n")).skip_expectations == ()
    config = load_config(_write(path, "scoring:\n  skip: [rerankTopSource, contextSources]\n"))
    assert config.skip_expectations == ("rerankTopSource", "contextSources")


def test_scoring_skip_unknown_name_names_file_field_and_valid_names(tmp_path: Path) -> None:
    path = _write(tmp_path / "ragsnap.yaml", "scoring:\n  skip: [contextSources, rerankTrace]\n")
    with pytest.raises(InputError) as info:
        load_config(path)
    err = info.value
    assert err.exit_code == 2 and err.path == str(path)
    assert err.pointer == "/scoring/skip/1" and "'rerankTrace'" in err.problem
    assert "rerankTopSource" in err.fix and "selectedAttempt" in err.fix
    with pytest.raises(InputError, match="/scoring"):
        load_config(_write(path, "scoring:\n  skipped: [contextSources]\n"))


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_known_failures_and_history(tmp_path: Path) -> None:
    path = tmp_path / "ragsnap.yaml"
    config = load_config(_write(path, "diff: {}\n"))
    assert (config.known_failures, config.history) == ("expected", Path("reports/history"))
    config = load_config(_write(path, "knownFailures: strict\nhistory: ci/history\n"))
    assert (config.known_failures, config.history) == ("strict", tmp_path / "ci/history")
    assert load_config(_write(path, "knownFailures: fail\n")).known_failures == "fail"
    with pytest.raises(InputError) as info:
        load_config(_write(path, "knownFailures: xfail\n"))
    err = info.value
    assert err.exit_code == 2 and err.path == str(path) and err.pointer == "/knownFailures"
    assert err.fix == "use one of: 'expected', 'strict', 'fail'"


def test_embedder_by_name_replaces_kb_embedder_before_the_settings_are_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--embedder NAME``: the named spec replaces kb.embedder, and the hybrid methods'
    fusion follows it; methods with their own vectors keep them."""
    from ragsnap.errors import UsageError
    from ragsnap.settings import NAMED_EMBEDDERS

    path = tmp_path / "ragsnap.yaml"
    path.write_text(
        "kb: {embedder: {kind: frozen, path: v.json}, segmenter: bigram}\n"
        "methods:\n  own: {retrievers: [vector], embedder: {kind: hashing, dimension: 64}}\n",
        encoding="utf-8",
    )
    assert load_config(path).kb.embedder == {"kind": "frozen", "path": "v.json"}
    chosen = load_config(path, embedder="minilm")
    assert chosen.kb.embedder == {"kind": "sentence-transformer"} == NAMED_EMBEDDERS["minilm"]
    assert chosen.kb.segmenter == "bigram"  # the rest of kb stays
    assert chosen.lookup.fusion == EMBEDDER_FUSION["sentence-transformer"]
    assert chosen.lookup.method_spec("own").embedder == {"kind": "hashing", "dimension": 64}
    assert load_config(path, embedder="hashing").kb.embedder == {"kind": "hashing"}
    with pytest.raises(UsageError, match=r"did you mean 'minilm'.*hashing, minilm"):
        load_config(path, embedder="minilim")
    (tmp_path / "empty").mkdir()
    monkeypatch.chdir(tmp_path / "empty")  # no ragsnap.yaml: the defaults, with the embedder
    assert load_config(None).kb.embedder == {"kind": "hashing"}
    assert load_config(None, embedder="minilm").kb.embedder == {"kind": "sentence-transformer"}

"""The LangChain and LlamaIndex adapters (``ragsnap.kb.backends.adapters``): the example
project snapshotted and scored through each ecosystem's own in-memory store
(``adapter_retrievers.py``), compared with ragsnap's embedded ``vector`` method over the
same hashing embedder.

The comparison: the adapters rank by the exact cosine; the embedded backend by the
cosine of its int11-encoded vectors, inside the L0 hint's category first, and cuts the
evidence at its floors. With hints off and the floors at 0 the rankings agree on every
case, and so do the hit levels and measures; with the built-in ``vector`` method they
agree on 8 of 30 cases, and each other case differs by a floor's cut or by the
category filter of an L0 hint (asserted below).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import REPO, Run, copy_example, run_cli
from ragsnap.cli import main
from ragsnap.errors import UsageError
from ragsnap.kb.corpus import load_seed_docs

PINNED = "2026-11-30T00:00:00Z"
MODULE = "backends.adapter_retrievers"
#: the embedded pipeline with neither L0 hints nor floors: a plain scoped cosine ranking
PLAIN = "lookup:\n  hints: false\n  minScore: 0.0\n  relativeScore: 0.0\n"


def needs(module: str, extra: str) -> pytest.MarkDecorator:
    missing = importlib.util.find_spec(module.partition(".")[0]) is None
    return pytest.mark.skipif(
        missing, reason=f"{module} is not installed: pip install 'ragsnap[{extra}]'"
    )


LANGCHAIN = needs("langchain_core", "langchain")
LLAMAINDEX = needs("llama_index", "llamaindex")
#: the ``version`` each factory gives its adapter: the fixtures' corpus revision
VERSIONS = {"langchain_store": "langchain-in-memory", "llamaindex_index": "llamaindex-simple"}
ADAPTERS = [
    pytest.param("langchain_store", marks=LANGCHAIN, id="langchain"),
    pytest.param("llamaindex_index", marks=LLAMAINDEX, id="llamaindex"),
]


def ragsnap(*args: str, cwd: Path) -> Run:
    """``ragsnap`` as a real process, with the test factories importable."""
    return run_cli(*args, cwd=cwd, tests_importable=True)


def project(root: Path, extra: str) -> Path:
    copy_example(root, "cases", "seed-docs", "ragsnap.yaml")
    with (root / "ragsnap.yaml").open("a", encoding="utf-8") as config:
        config.write(extra)
    return root


def fixtures(root: Path) -> dict[str, list[dict[str, Any]]]:
    out = {}
    for path in (root / "fixtures").glob("[!_]*.json"):
        fixture = json.loads(path.read_text(encoding="utf-8"))
        out[fixture["caseId"]] = fixture["lookupResult"]["evidenceBlocks"]
    return out


def cases(root: Path) -> dict[str, dict[str, Any]]:
    report = json.loads((root / "reports" / "current.json").read_text(encoding="utf-8"))
    return {case["id"]: case for case in report["cases"]}


def chunks(blocks: list[dict[str, Any]]) -> list[str]:
    return [block["chunkId"] for block in blocks]


@pytest.fixture(scope="module")
def embedded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The example snapshotted by the embedded backend's ``vector`` method: as built in
    (``vector``), and with neither hints nor floors (``plain``)."""
    out = {}
    for name, extra in (("vector", ""), ("plain", PLAIN)):
        root = project(tmp_path_factory.mktemp(f"embedded-{name}"), extra)
        assert ragsnap("seed", cwd=root).code == 0
        run = ragsnap("snapshot", "--method", "vector", "--retrieved-at", PINNED, cwd=root)
        assert run.code in (0, 1), run.err
        out[name] = root
    return out


@LANGCHAIN
@LLAMAINDEX
def test_a_trial_compares_the_adapters_as_python_methods(tmp_path: Path) -> None:
    """Each adapter as a ``python.methods`` entry: both rank by the exact cosine of the
    same embeddings, so the trial measures them alike, case by case."""
    root = project(
        tmp_path,
        f"python:\n  methods:\n    langchain: {MODULE}:langchain_store\n"
        f"    llamaindex: {MODULE}:llamaindex_index\n",
    )
    run = ragsnap("trial", "--backend", "python", "--depth", "10", "--gates", "none.yaml", cwd=root)
    assert run.code == 2 and "none.yaml" in run.err  # a gates file that is not there
    (root / "gates.yaml").write_text(
        "version: 1\ngates:\n  - {method: '*', measure: recall@10, min: 0.7}\n",
        encoding="utf-8",
    )
    run = ragsnap(
        "trial", "--backend", "python", "--depth", "10", "--gates", "gates.yaml", cwd=root
    )
    assert run.code == 0, run.out + run.err
    report = json.loads((root / "reports" / "trial.json").read_text(encoding="utf-8"))
    assert report["plan"]["methods"] == [
        {"name": "langchain", "retriever": f"{MODULE}:langchain_store"},
        {"name": "llamaindex", "retriever": f"{MODULE}:llamaindex_index"},
    ]
    assert report["service"] == {"backend": "python", "corpusRevision": VERSIONS["langchain_store"]}
    assert report["determinism"]["identical"] is True
    assert "Gates: 2 of 2 ran and passed" in run.out
    langchain, llamaindex = (report["methods"][n]["summary"] for n in ("langchain", "llamaindex"))
    assert langchain["metrics"]["recall@10"]["mean"] > 0.7
    for measure, value in langchain["metrics"].items():
        assert llamaindex["metrics"][measure]["mean"] == pytest.approx(value["mean"], abs=1e-6)
    for case in report["caseResults"]:
        levels = {r["hitLevel"] for r in case["methods"].values()}
        assert len(levels) == 1, case


@pytest.mark.parametrize("factory", ADAPTERS)
def test_the_example_snapshots_and_scores_through_an_adapter_like_the_embedded_vector(
    tmp_path: Path, embedded: dict[str, Path], factory: str
) -> None:
    spec = f"{MODULE}:{factory}"
    root = project(tmp_path, f"kb:\n  backend: python\npython:\n  retriever: {spec}\n")
    run = ragsnap("snapshot", "--retrieved-at", PINNED, cwd=root)
    assert run.code in (0, 1), run.err
    assert f"30 case(s) from python ({spec})" in run.out
    fixture = json.loads(
        (root / "fixtures" / "db-err-4031-order-repository.json").read_text(encoding="utf-8")
    )
    assert fixture["generator"]["settings"]["retriever"] == spec
    assert set(fixture["lookupResult"]) == {"evidenceBlocks"}  # no traces: not applicable
    first = fixture["lookupResult"]["evidenceBlocks"][0]
    assert (first["rank"], first["source"], first["chunkId"]) == (
        1,
        "mysql-connection-pool-payment",
        "mysql-connection-pool-payment#2",
    )
    assert first["metadata"] == {"category": "database", "kb_scope": "rag-eval"}
    assert first["text"].startswith("## ERR-4033: payment")
    scored = ragsnap("score", cwd=root)
    assert scored.code in (0, 1), scored.err
    assert f"came from the Python retriever {spec} (corpus revision {VERSIONS[factory]}" in (
        scored.err
    )

    mine, report = fixtures(root), cases(root)
    # hints off, floors at 0: the same ranking on every case, so the same hit levels and
    # measures; the scores differ only by the embedded store's int11 vectors
    plain, plain_report = fixtures(embedded["plain"]), cases(embedded["plain"])
    assert len(plain) == len(mine) == 30
    for case, blocks in plain.items():
        assert chunks(mine[case]) == chunks(blocks), case
        for theirs, ours in zip(blocks, mine[case], strict=True):
            assert ours["score"] == pytest.approx(theirs["score"], abs=1e-3)
            assert (ours["source"], ours["text"]) == (theirs["source"], theirs["text"])
        for key in ("hitLevel", "firstExpectedRank", "metrics", "keywordsCovered"):
            assert report[case][key] == plain_report[case][key], (case, key)

    # the built-in vector method: L0 hints and floors make it differ where they act
    vector, vector_report = fixtures(embedded["vector"]), cases(embedded["vector"])
    agree = [case for case in vector if chunks(vector[case]) == chunks(mine[case])]
    assert len(agree) == 8
    for case in agree:
        assert report[case]["hitLevel"] == vector_report[case]["hitLevel"], case
        assert report[case]["metrics"] == vector_report[case]["metrics"], case
    for case in set(vector) - set(agree):
        if vector_report[case]["selectedAttempt"] == "filtered":
            continue  # searched inside the category an L0 hint named
        theirs = chunks(vector[case])  # else: the same ranking, cut at a floor
        assert chunks(mine[case])[: len(theirs)] == theirs, case
        best = vector[case][0]["score"] if theirs else 0.0
        assert mine[case][len(theirs)]["score"] < max(0.22, 0.5 * best) + 1e-3, case


@LANGCHAIN
@LLAMAINDEX
def test_the_retriever_adapters_rank_as_the_store_adapters() -> None:
    """A LangChain retriever has no scores (None); a LlamaIndex retriever's nodes have
    them. Both filter the scope after retrieval."""
    from backends import adapter_retrievers as factories

    stores = factories.langchain_store(), factories.llamaindex_index()
    retrievers = factories.langchain_retriever(), factories.llamaindex_retriever()
    for scope, query in (
        ("rag-eval", "How many connections does the payment service pool hold?"),
        ("other-team", "billing batch jobs and their MySQL pool"),
        (None, "How many connections does the payment service pool hold?"),
    ):
        filters = {"kbScope": scope}
        expected = stores[0].search(query, top_k=5, filters=filters)
        assert [hit["chunk_id"] for hit in expected]
        assert stores[1].search(query, top_k=5, filters=filters) == expected
        for retriever in retrievers:
            hits = retriever.search(query, top_k=5, filters=filters)
            assert [h["chunk_id"] for h in hits] == [h["chunk_id"] for h in expected]
        if scope is not None:
            assert {h["metadata"]["kb_scope"] for h in expected} == {scope}
    assert {h["score"] for h in retrievers[0].search(query, top_k=5, filters={})} == {None}
    assert None not in {h["score"] for h in retrievers[1].search(query, top_k=5, filters={})}


@LLAMAINDEX
def test_a_scope_filtered_after_retrieval_keeps_only_the_scope() -> None:
    from backends.adapter_retrievers import vector_store_index
    from ragsnap.kb.backends.adapters import llamaindex

    index = vector_store_index()
    in_store = llamaindex.from_index(index)
    after = llamaindex.from_index(index, scope_in_store=False, fetch_k=200)
    short = llamaindex.from_index(index, scope_in_store=False, fetch_k=1)
    query = "What does ERR-4031 from OrderRepository mean?"
    filters = {"kbScope": "other-team"}
    expected = in_store.search(query, top_k=5, filters=filters)
    assert expected and {h["metadata"]["kb_scope"] for h in expected} == {"other-team"}
    assert after.search(query, top_k=5, filters=filters) == expected
    # one candidate from the whole index, of another scope: nothing is returned
    assert in_store.search(query, top_k=1, filters={})[0]["metadata"]["kb_scope"] == "rag-eval"
    assert short.search(query, top_k=5, filters=filters) == []


@LANGCHAIN
def test_a_hit_without_a_chunk_id_names_the_key_to_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = f"{MODULE}:langchain_unkeyed"
    root = project(tmp_path, f"kb:\n  backend: python\npython:\n  retriever: {spec}\n")
    monkeypatch.chdir(root)
    assert main(["snapshot"]) == 2
    err = capsys.readouterr().err
    assert "langchain.from_vector_store: result 1 has no metadata 'chunk_id'" in err
    assert "keys=MetadataKeys(chunk_id='...')" in err
    assert not (root / "fixtures").exists()


@LANGCHAIN
def test_seed_adds_the_seed_documents_to_an_adapted_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from backends.adapter_retrievers import langchain_empty

    adapter = langchain_empty()
    assert adapter.search("ERR-4031", top_k=5, filters={}) == []
    adapter.add_documents(load_seed_docs(REPO / "seed-docs"))
    hits = adapter.search("ERR-4031 OrderRepository", top_k=5, filters={"kbScope": "rag-eval"})
    assert hits[0]["chunk_id"] == "mysql-connection-pool-payment#2"

    spec = f"{MODULE}:langchain_empty"
    monkeypatch.chdir(project(tmp_path, f"kb:\n  backend: python\npython:\n  retriever: {spec}\n"))
    assert main(["seed"]) == 0
    assert f"seed: 18 documents handed to retriever {spec} (add_documents)" in (
        capsys.readouterr().out
    )


@pytest.mark.parametrize(
    ("module", "make", "extra"),
    [
        ("langchain_core", "langchain", "langchain"),
        ("llama_index.core", "llamaindex", "llamaindex"),
    ],
)
def test_an_adapter_without_its_library_says_which_extra_to_install(
    monkeypatch: pytest.MonkeyPatch, module: str, make: str, extra: str
) -> None:
    import importlib

    adapter = importlib.import_module(f"ragsnap.kb.backends.adapters.{make}")
    monkeypatch.setitem(sys.modules, module, None)  # import raises ImportError
    maker = adapter.from_retriever
    with pytest.raises(UsageError, match=rf"pip install 'ragsnap\[{extra}\]'"):
        maker(object())


@LANGCHAIN
@LLAMAINDEX
def test_the_adapters_touch_no_network(tmp_path: Path) -> None:
    """Importing both libraries, building their stores and searching them connects
    nowhere, resolves no host and writes no file (no tokenizer, nltk data or model is
    fetched). urllib3's import-time IPv6 probe (a bind to ::1) is local and allowed."""
    script = (
        "import sys\n"
        "seen = []\n"
        "def hook(event, args):\n"
        "    if event in ('socket.connect', 'socket.sendto', 'socket.getaddrinfo',\n"
        "                 'socket.gethostbyname', 'urllib.Request', 'http.client.connect'):\n"
        "        seen.append(event)\n"
        "    if event == 'open' and isinstance(args[1], str) and set(args[1]) & set('wax+'):\n"
        "        seen.append(f'open {args[0]}')\n"
        "sys.addaudithook(hook)\n"
        "from backends import adapter_retrievers as f\n"
        "for make in (f.langchain_store, f.llamaindex_index, f.langchain_retriever):\n"
        "    make().search('ERR-4031', top_k=5, filters={'kbScope': 'rag-eval'})\n"
        "print(seen)\n"
    )
    path = os.pathsep.join([str(REPO / "eval"), str(REPO / "tests")])
    proc = subprocess.run(
        [sys.executable, "-c", script],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": path},
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"

"""Methods of the ``python`` backend: ``python.methods``, ``snapshot --method`` and
``trial --backend python`` on the example project, through two retrievers that rank
differently (``python_retrievers``: BM25, and BM25 with a title bonus).

The trial and the snapshot run ``ragsnap`` as a real process (``tests/`` on
``PYTHONPATH``); the refusals run ``ragsnap.cli.main`` in-process.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import copy_example
from ragsnap.cli import main
from ragsnap.io.schema import validate

from .test_python_backend import PINNED, ragsnap, read

BM25 = "backends.python_retrievers:keyword"
TITLED = "backends.python_retrievers:titled"
#: gates the two methods pass on the example (checked against the numbers below)
GATES = """\
version: 1
gates:
  - {method: bm25, measure: mrr@10, min: 0.8}
  - {method: titled, measure: recall@10, notBelow: {method: bm25, by: 0.0}}
"""


def methods_project(root: Path, methods: str = f"bm25: {BM25}, titled: {TITLED}") -> Path:
    copy_example(root, "cases", "seed-docs", "ragsnap.yaml")
    with (root / "ragsnap.yaml").open("a", encoding="utf-8") as config:
        config.write(f"kb:\n  backend: python\npython:\n  methods: {{{methods}}}\n")
    (root / "gates.yaml").write_text(GATES, encoding="utf-8")
    return root


def test_a_trial_compares_two_python_retrievers(tmp_path: Path) -> None:
    root = methods_project(tmp_path)
    args = ("trial", "--backend", "python", "--depth", "10", "--repetitions", "2")
    run = ragsnap(*args, "--gates", "gates.yaml", cwd=root)
    assert run.code == 0, run.out + run.err
    report = read(root / "reports" / "trial.json")
    validate(report, "trial-report", "trial.json", "trial report")
    assert "trial: 2 method(s) x 30 case(s) (split all, depth 10, 2 repetition(s))" in run.out
    revision = report["service"]["corpusRevision"]
    assert revision.startswith("bm25:")  # the first retriever's fingerprint
    assert f"Service: python, corpus revision {revision}" in run.out
    assert report["service"] == {"backend": "python", "corpusRevision": revision}
    assert report["plan"]["backend"] == {"name": "python", "corpusRevision": revision}
    assert report["plan"]["methods"] == [
        {"name": "bm25", "retriever": BM25},
        {"name": "titled", "retriever": TITLED},
    ]
    assert report["corpus"] == {"documents": None, "chunks": None, "sha256": None}
    assert "Determinism: 3 passes identical" in run.out
    assert report["determinism"]["checked"] and report["determinism"]["identical"]
    # both methods measured, and the title bonus ranks differently
    recall = {n: m["summary"]["metrics"]["recall@10"]["mean"] for n, m in report["methods"].items()}
    assert recall["titled"] > recall["bm25"] > 0.5
    latency = report["timing"]["latency"]
    assert latency["bm25"]["count"] == latency["titled"]["count"] == 2 * 30
    assert latency["titled"]["p95Ms"] is not None
    assert [(g["method"], g["passed"]) for g in report["gates"]] == [
        ("bm25", True),
        ("titled", True),
    ]
    assert "Gates: 2 of 2 ran and passed" in run.out

    # --methods picks among them; a pinned plan runs again over the same retrievers
    one = ragsnap("trial", "--backend", "python", "--methods", "titled", cwd=root)
    assert one.code in (0, 1), one.err  # the example's own gates may fail a retriever
    assert list(read(root / "reports" / "trial.json")["methods"]) == ["titled"]
    # the gates are an input of the plan: the same file when it is written and run
    wrote = ragsnap("trial", "--backend", "python", "--write-plan", "plan.json", "--gates", "gates.yaml", cwd=root)  # fmt: skip
    assert wrote.code == 0, wrote.err
    assert "Run it with `ragsnap trial --backend python --plan plan.json`" in wrote.out
    again = ragsnap("trial", "--backend", "python", "--plan", "plan.json", "--gates", "gates.yaml", cwd=root)  # fmt: skip
    assert again.code == 0, again.err
    embedded = ragsnap("trial", "--plan", "plan.json", cwd=root)
    assert embedded.code == 2
    assert "was written for a trial over the python backend" in embedded.err


def test_snapshot_method_uses_that_methods_retriever(tmp_path: Path) -> None:
    root = methods_project(tmp_path)
    run = ragsnap("snapshot", "--method", "titled", "--retrieved-at", PINNED, cwd=root)
    assert run.code in (0, 1), run.err  # cases may fail; the fixtures are written
    assert f"30 case(s) from python ({TITLED})" in run.out
    generator = read(root / "fixtures" / "db-err-4031-order-repository.json")["generator"]
    assert generator["method"] == "titled"
    assert generator["settings"]["retriever"] == TITLED
    (capture,) = read(root / "fixtures" / "_manifest.json")["captures"].values()
    assert capture["settings"] == {
        "backend": "python",
        "method": "titled",
        "method.retriever": TITLED,
    }
    same = ragsnap("snapshot", "--check", "--method", "titled", cwd=root)
    assert same.code == 0, same.out + same.err
    other = ragsnap("snapshot", "--check", "--method", "bm25", cwd=root)
    assert other.code == 1
    assert "generator.method 'titled' -> 'bm25'" in other.out
    scored = ragsnap("score", cwd=root)
    assert f"came from the Python retriever {TITLED}" in scored.err + scored.out


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (
            ["snapshot", "--method", "dense"],
            "method 'dense' is not in python.methods; use one of bm25, titled",
        ),
        (
            ["snapshot", "--method", "bm25", "--retriever", BM25],
            "--method bm25 picks python.methods.bm25's retriever and --retriever names another",
        ),
        (
            ["trial", "--backend", "python", "--methods", "bm25,dense"],
            "--methods names dense, which python.methods in ragsnap.yaml does not map; use one "
            "of bm25, titled",
        ),
        (["trial", "--backend", "python", "--kb", "kb.sqlite"], "--kb is for the embedded trial"),
        (
            ["trial", "--backend", "python", "--aliases", "aliases.json"],
            "--aliases is for the embedded trial; the retriever runs its own lookup",
        ),
        (
            ["trial", "--backend", "python", "--base-url", "http://127.0.0.1:1"],
            "--base-url is for --backend http",
        ),
        (
            ["trial", "--backend", "python", "--token-env", "T"],
            "--token-file and --token-env are for --backend http",
        ),
    ],
)
def test_bad_method_input_exits_2(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    said: str,
) -> None:
    monkeypatch.chdir(methods_project(tmp_path))
    assert main(argv) == 2
    assert said in capsys.readouterr().err


def test_a_project_without_python_methods_has_nothing_to_trial(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    copy_example(tmp_path, "cases", "seed-docs", "ragsnap.yaml")
    monkeypatch.chdir(tmp_path)
    assert main(["trial", "--backend", "python"]) == 2
    assert (
        "ragsnap.yaml at /python/methods: maps no python.methods, so a trial over the "
        "retriever has no methods to compare" in capsys.readouterr().err
    )
    with (tmp_path / "ragsnap.yaml").open("a", encoding="utf-8") as config:
        config.write("python:\n  methods: {bm25: 3}\n")
    assert main(["trial", "--backend", "python"]) == 2
    assert "/python/methods/bm25" in capsys.readouterr().err

"""A mistyped name gets "did you mean" with the closest known one, exit 2: a subcommand,
a choice, a golden case's field, a ragsnap.yaml key, a method and a measure."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import run_cli
from ragsnap.cli import main


@pytest.fixture
def initialised(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project as `ragsnap init` writes it, as the current folder."""
    monkeypatch.chdir(tmp_path)
    assert main(["init"]) == 0
    return tmp_path


def test_mistyped_subcommand(tmp_path: Path) -> None:
    run = run_cli("socre", cwd=tmp_path)
    assert run.code == 2
    assert "invalid choice: 'socre' (did you mean 'score'?)" in run.err
    assert "Traceback" not in run.err


def test_unlike_subcommand_gets_no_guess(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["zzz"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'zzz'" in err and "did you mean" not in err


def test_mistyped_choice(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["seed", "--backend", "embeded"])
    assert exit_.value.code == 2
    assert "invalid choice: 'embeded' (did you mean 'embedded'?)" in capsys.readouterr().err


def test_mistyped_case_field(initialised: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = initialised / "cases" / "golden-cases.json"
    cases = json.loads(path.read_text(encoding="utf-8"))
    first = cases["cases"][0]
    first["expectedSource"] = first.pop("expectedSources")
    path.write_text(json.dumps(cases), encoding="utf-8")
    assert main(["score"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(
        "InputError: cases/golden-cases.json at /cases/0: unknown field 'expectedSource'; "
        "did you mean 'expectedSources'? Else remove it or correct its spelling (allowed: "
    )


@pytest.mark.parametrize(
    ("added", "expected"),
    [
        ("lookpu:\n  topK: 3\n", "ragsnap.yaml: unknown field 'lookpu'; did you mean 'lookup'?"),
        ("lookup:\n  topk: 3\n", "at /lookup: unknown field 'topk'; did you mean 'topK'?"),
        ("measures: [map, ndgc@10]\n", "unknown measure 'ndgc@10' (did you mean 'ndcg@10'?)"),
    ],
)
def test_mistyped_config_key_or_measure(
    initialised: Path, capsys: pytest.CaptureFixture[str], added: str, expected: str
) -> None:
    with (initialised / "ragsnap.yaml").open("a", encoding="utf-8") as file:
        file.write(added)
    assert main(["score"]) == 2
    assert expected in capsys.readouterr().err


def test_mistyped_method(initialised: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["lookup", "pool size", "--method", "hybird"]) == 2
    err = capsys.readouterr().err
    assert "UsageError: unknown method 'hybird' (did you mean 'hybrid'?)" in err


def test_mistyped_measure_on_the_command_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("qrels").write_text("q1 0 d1 1\n", encoding="utf-8")
    Path("run").write_text("q1 Q0 d1 1 1.0 t\n", encoding="utf-8")
    assert main(["metrics", "--qrels", "qrels", "--run", "run", "-m", "ndgc@10"]) == 2
    err = capsys.readouterr().err
    assert "unknown measure 'ndgc@10' (did you mean 'ndcg@10'?)" in err
    assert main(["metrics", "--qrels", "qrels", "--run", "run", "-m", "recip_rnak"]) == 2
    assert "(did you mean 'recip_rank'?)" in capsys.readouterr().err


def test_mistyped_option(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["score", "--junit-reprot", "r.xml"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "ragsnap score: error: unrecognized arguments: --junit-reprot r.xml" in err
    assert "(did you mean '--junit-report' for '--junit-reprot'?)" in err

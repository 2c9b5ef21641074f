"""No command writes over, deletes, or writes inside anything it reads.

Every option of ``ragsnap``'s parser that names a path is classified here, as an input
(``ragsnap.io.reads.INPUT_OPTIONS``), an output, or both (a file the command updates):
a new option that is neither fails ``test_every_path_option_is_classified``. Every
output option is then pointed at every input kind of an example project (the
configuration, the golden cases, a seed document, the seed folder, the fixtures
folder, a fixture, the alias and gates files the configuration includes): exit 2,
a message naming the option and what the input is, and the project byte-identical.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import REPO, Served, copy_example, goodbuddy_fixture, run_cli
from ragsnap.cli import build_parser, main
from ragsnap.io.reads import INPUT_OPTIONS

#: output options: (command, dest) -> the command line that reaches its writing, with
#: the option last (its value appended); a DIR option writes inside its value
OUTPUTS: dict[tuple[str, str], list[str]] = {
    ("score", "json_report"): ["score", "--json-report"],
    ("score", "markdown_report"): ["score", "--markdown-report"],
    ("score", "diff_json_report"): [
        "score",
        "--compare-to",
        "reports/baseline.json",
        "--diff-json-report",
    ],
    ("score", "diff_markdown_report"): [
        "score",
        "--compare-to",
        "reports/baseline.json",
        "--diff-markdown-report",
    ],
    ("score", "extra_reports"): ["score", "--report"],
    ("score", "junit_xml"): ["score", "--junit-xml"],
    ("score", "html_report"): ["score", "--html-report"],
    ("score", "history"): ["score", "--history"],
    ("diff", "diff_json_report"): [
        "diff",
        "reports/baseline.json",
        "reports/baseline.json",
        "--diff-json-report",
    ],
    ("diff", "diff_markdown_report"): [
        "diff",
        "reports/baseline.json",
        "reports/baseline.json",
        "--diff-markdown-report",
    ],
    ("diff", "extra_reports"): [
        "diff",
        "reports/baseline.json",
        "reports/baseline.json",
        "--report",
    ],
    ("diff", "junit_xml"): [
        "diff",
        "reports/baseline.json",
        "reports/baseline.json",
        "--junit-xml",
    ],
    ("diff", "html_report"): [
        "diff",
        "reports/baseline.json",
        "reports/baseline.json",
        "--html-report",
    ],
    ("trend", "markdown_report"): ["trend", "reports/baseline.json", "--markdown-report"],
    ("trend", "html_report"): ["trend", "reports/baseline.json", "--html-report"],
    ("check", "json_report"): ["check", "--json-report"],
    ("export-run", "out"): ["export-run", "--out"],
    ("export-run", "qrels_out"): ["export-run", "--out", "reports/run.txt", "--qrels-out"],
    ("seed", "kb"): ["seed", "--kb"],
    ("prepare", "state"): ["prepare", "--state"],
    ("import", "out"): ["import", "goodbuddy", "in/gb.json", "--out"],
    ("snapshot", "fixtures"): ["snapshot", "--fixtures"],
    ("accept", "fixtures"): ["accept", "--fixtures"],
    ("accept", "baseline"): ["accept", "--baseline"],
    ("init", "dir"): [],  # init writes only files that do not exist (test_cli_init)
    ("live-check", "json_report"): ["live-check", "--json-report"],
    ("live-check", "markdown_report"): ["live-check", "--markdown-report"],
    ("live-check", "html_report"): ["live-check", "--html-report"],
    ("live-check", "state"): ["live-check", "--state"],
    ("trial", "write_plan"): ["trial", "--write-plan"],
    ("trial", "json_report"): ["trial", "--json-report"],
    ("trial", "markdown_report"): ["trial", "--markdown-report"],
    ("trial", "html_report"): ["trial", "--html-report"],
    ("trial", "diff_json_report"): [],  # need a trial baseline; same check as json_report
    ("trial", "diff_markdown_report"): [],
    ("trial", "runs_dir"): ["trial", "--runs-dir"],
    ("audit", "json_report"): ["audit", "--mutations", "none", "--json-report"],
    ("audit", "markdown_report"): ["audit", "--mutations", "none", "--markdown-report"],
    ("audit", "html_report"): ["audit", "--mutations", "none", "--html-report"],
}
#: options that name a folder the command writes inside
FOLDER_OUTPUTS = {
    ("score", "history"),
    ("import", "out"),
    ("snapshot", "fixtures"),
    ("accept", "fixtures"),
    ("trial", "runs_dir"),
}

#: the input kinds of the example project: (kind, path to pass, what the message says)
FILE_KINDS = [
    ("config", "ragsnap.yaml", "ragsnap.yaml is the loaded configuration"),
    ("cases", "cases/golden-cases.json", "is the golden cases file"),
    ("seed doc", "seed-docs/k8s-crashloopbackoff.md", "inside seed-docs, the seed corpus"),
    ("fixture", "fixtures/cache-avalanche-prevention-zh.json", "inside fixtures, the fixtures"),
    ("new in fixtures", "fixtures/new.json", "inside fixtures, the fixtures folder"),
    ("aliases", "cases/aliases.yaml", "is the alias file that ragsnap.yaml includes"),
    ("gates", "cases/gates.yaml", "is the gates file that ragsnap.yaml includes"),
]
FOLDER_KINDS = [
    ("seed folder", "seed-docs", "inside seed-docs, the seed corpus"),
    ("fixtures folder", "fixtures", "inside fixtures, the fixtures folder"),
]


def _path_options() -> list[tuple[str, str]]:
    """(command, dest) of every option of the parser that names a path."""
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    found = []
    for name, command in sub.choices.items():
        for action in command._actions:
            kind = getattr(action.type, "__name__", "")
            if action.type is Path or kind == "_report_format":
                found.append((name, action.dest))
    return found


def test_every_path_option_is_classified() -> None:
    """A new option that names a path must be added to OUTPUTS or to INPUT_OPTIONS."""
    unknown = [
        f"{command} {dest}"
        for command, dest in _path_options()
        if (command, dest) not in OUTPUTS and dest not in INPUT_OPTIONS and dest != "config"
    ]
    assert unknown == [], "classify these options (input or output): " + ", ".join(unknown)
    assert set(OUTPUTS) <= set(_path_options())


#: options that delete or replace what is there: (command, dest); the prunes delete only
#: fixtures (test_prune_*), --reset-state replaces only the state (test_prepare_state_*)
DELETES = {("snapshot", "prune"), ("accept", "prune"), ("prepare", "reset_state")}


def test_every_delete_option_is_classified() -> None:
    """A new flag that deletes or starts over must be added to DELETES (and tested)."""
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    found = {
        (name, action.dest)
        for name, command in sub.choices.items()
        for action in command._actions
        if any(word in (action.help or "") for word in ("delete", "start over", "replace"))
        and isinstance(action, argparse._StoreTrueAction)
    }
    assert found == DELETES


def _tree(root: Path) -> dict[str, bytes | None]:
    return {
        p.relative_to(root).as_posix(): (p.read_bytes() if p.is_file() else None)
        for p in sorted(root.rglob("*"))
    }


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = copy_example(
        tmp_path_factory.mktemp("example"),
        "ragsnap.yaml",
        "cases",
        "fixtures",
        "seed-docs",
        "reports",
    )
    (root / "in").mkdir()
    (root / "in" / "gb.json").write_text(json.dumps(goodbuddy_fixture()), encoding="utf-8")
    return root


@pytest.fixture
def project(example: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "p"
    shutil.copytree(example, root)
    monkeypatch.chdir(root)
    return root


def _cases() -> list[tuple[tuple[str, str], str, str, str]]:
    out = []
    for key, argv in OUTPUTS.items():
        if not argv:
            continue
        kinds = FOLDER_KINDS if key in FOLDER_OUTPUTS else FILE_KINDS
        for kind, path, said in kinds:
            if key == ("accept", "baseline") and path.endswith(".md"):
                continue  # refused as "pass the JSON file" (test_cli_accept)
            if key[1] == "fixtures" and kind == "fixtures folder":
                continue  # snapshot's own output folder
            out.append((key, kind, path, said))
    return out


@pytest.mark.parametrize(
    ("key", "kind", "path", "said"), _cases(), ids=lambda v: v if isinstance(v, str) else None
)
def test_no_output_option_writes_over_or_inside_an_input(
    project: Path,
    capsys: pytest.CaptureFixture[str],
    key: tuple[str, str],
    kind: str,
    path: str,
    said: str,
) -> None:
    argv = [*OUTPUTS[key]]
    value = f"github={path}" if key[1] == "extra_reports" else path
    before = _tree(project)
    code = main([*argv, value])
    err = capsys.readouterr().err
    assert code == 2, err
    flag = argv[-1]
    assert f"{flag} " in err and "ragsnap" in err, err
    assert said in err, err
    assert _tree(project) == before  # nothing written, replaced or deleted


@pytest.mark.parametrize(
    "argv",
    [
        ["score", "--json-report", "ragsnap.yaml"],
        ["export-run", "--out", "ragsnap.yaml"],
        ["accept", "--baseline", "ragsnap.yaml"],
        ["trial", "--write-plan", "ragsnap.yaml"],
        ["trial", "--json-report", "cases/aliases.yaml"],
        ["import", "goodbuddy", "in/gb.json", "--out", "."],
        ["import", "goodbuddy", "in/gb.json", "--out", "seed-docs"],
    ],
    ids=" ".join,
)
def test_the_issues_reproductions_are_refused(
    kb_project: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    """Each of these wrote over an input at exit 0 (with a knowledge base to run on)."""
    before = _tree(kb_project)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "UsageError:" in err and ("pass" in err or "choose" in err), err
    assert _tree(kb_project) == before


@pytest.mark.parametrize(
    ("state", "said"),
    [
        ("seed-docs/k8s-crashloopbackoff.md", "is inside seed-docs, the seed corpus"),
        ("cases/golden-cases.json", "cases/golden-cases.json is the golden cases file"),
        ("ragsnap.yaml", "ragsnap.yaml is the loaded configuration"),
    ],
)
def test_prepare_state_is_never_another_input(
    project: Path,
    capsys: pytest.CaptureFixture[str],
    serve: Callable[..., Served],
    state: str,
    said: str,
) -> None:
    """Against a real service, which the old code prepared, replacing the file."""
    served = serve("--kb", str(project.parent / "kb.sqlite"), "--workers", "1", cwd=project)
    before = _tree(project)
    argv = ["prepare", "--state", state, "--reset-state", "--base-url", served.base_url]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"UsageError: --state {state}: {said}" in err, err
    assert _tree(project) == before


def test_trend_refuses_to_write_into_the_folder_it_reads(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "hist").mkdir()
    shutil.copy(project / "reports" / "baseline.json", project / "hist" / "2026-01-01.json")
    before = _tree(project)
    assert main(["trend", "hist", "--markdown-report", "hist/x.md"]) == 2
    err = capsys.readouterr().err
    assert "--markdown-report hist/x.md: is inside hist" in err, err
    assert _tree(project) == before


def test_import_out_is_new_empty_or_an_earlier_import_of_the_same_format(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    imported = ["import", "goodbuddy", "in/gb.json", "--out"]
    assert main([*imported, "imported"]) == 0
    assert main([*imported, "imported"]) == 0  # an earlier import: replaced
    (project / "other").mkdir()
    (project / "other" / "package.json").write_text("{}\n", encoding="utf-8")
    before = _tree(project)
    capsys.readouterr()
    assert main([*imported, "other"]) == 2
    err = capsys.readouterr().err
    assert (
        "--out other: holds package.json, not an earlier import (it has no ragsnap.yaml)" in err
    ), err
    marked = (project / "imported" / "ragsnap.yaml").read_text(encoding="utf-8")
    (project / "imported" / "ragsnap.yaml").write_text(
        marked.replace("import goodbuddy", "import beir"), encoding="utf-8"
    )
    before = _tree(project)
    assert main([*imported, "imported"]) == 2
    assert "an import of another format" in capsys.readouterr().err
    assert _tree(project) == before
    (project / "empty").mkdir()
    assert main([*imported, "empty"]) == 0


# -- prune: only fixtures of this project are ever deleted ---------------------------


@pytest.fixture(scope="module")
def seeded(example: Path) -> Path:
    run = run_cli("seed", cwd=example)
    assert run.code == 0, run.err
    return example


@pytest.fixture
def kb_project(seeded: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "p"
    shutil.copytree(seeded, root)
    monkeypatch.chdir(root)
    return root


@pytest.mark.parametrize(
    "argv",
    [
        ["snapshot", "--fixtures", "cases", "--prune", "--skip-eval"],
        ["snapshot", "--fixtures", ".", "--prune", "--skip-eval"],
        ["accept", "--fixtures", "cases", "--prune"],
    ],
    ids=" ".join,
)
def test_prune_refuses_a_folder_that_holds_the_cases_or_the_config(
    kb_project: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    (kb_project / "package.json").write_text("{}\n", encoding="utf-8")
    before = _tree(kb_project)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"--fixtures {argv[2]}: holds " in err and "drop --prune" in err, err
    assert _tree(kb_project) == before


def test_prune_deletes_only_fixtures_and_leaves_other_files_alone(
    kb_project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fixtures = kb_project / "fixtures"
    retired = json.loads((fixtures / "cache-avalanche-prevention-zh.json").read_text("utf-8"))
    retired["caseId"] = "retired-case"
    (fixtures / "retired-case.json").write_text(json.dumps(retired), encoding="utf-8")
    (fixtures / "misnamed.json").write_text(json.dumps(retired), encoding="utf-8")
    (fixtures / "notes.json").write_text('{"note": "keep me"}\n', encoding="utf-8")
    kept = {name: (fixtures / name).read_bytes() for name in ("misnamed.json", "notes.json")}
    assert main(["snapshot", "--prune", "--skip-eval"]) == 0
    out = capsys.readouterr().out
    assert "orphaned fixtures (deleted): retired-case.json" in out
    assert (
        "not a fixture, left alone (in fixtures, named by no case): misnamed.json, "
        "notes.json" in out
    )
    assert not (fixtures / "retired-case.json").exists()
    assert {name: (fixtures / name).read_bytes() for name in kept} == kept


def test_pytest_update_refuses_to_prune_the_cases_folder(kb_project: Path) -> None:
    (kb_project / "test_nothing.py").write_text("", encoding="utf-8")
    before = _tree(kb_project)
    run = run_cli_pytest(kb_project, "--ragsnap-fixtures", "cases")
    assert "--fixtures cases: holds cases/golden-cases.json, the golden cases file" in run, run
    assert _tree(kb_project) == before


def test_pytest_update_leaves_a_non_fixture_alone(kb_project: Path) -> None:
    notes = kb_project / "fixtures" / "notes.json"
    notes.write_text('{"note": "keep me"}\n', encoding="utf-8")
    (kb_project / "test_nothing.py").write_text("", encoding="utf-8")
    run = run_cli_pytest(kb_project)
    assert notes.read_text(encoding="utf-8") == '{"note": "keep me"}\n', run
    assert "not a fixture, left alone (in fixtures, named by no case): notes.json" in run
    assert "deleted: notes.json" not in run


def run_cli_pytest(root: Path, *extra: str) -> str:
    """``pytest --ragsnap --ragsnap-update`` as a real process in ``root``."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "eval")}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--ragsnap",
            "--ragsnap-update",
            "-rA",
            *extra,
        ],
        cwd=root,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    return proc.stdout + proc.stderr

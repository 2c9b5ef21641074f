"""Every shell line the README's quickstart and the CI page (docs/ci.md) show runs, in
order, in a temporary folder, as a newcomer would type it.

The lines are the ```bash blocks of the README's "## Quickstart" section, then the
```bash blocks of docs/ci.md, run in one shell (so `cd` carries over) with `ragsnap`
on the PATH. THE RULE FOR SKIPPING: a line is skipped only when it needs what a test run
does not have: it installs (`pip install`), calls GitHub (`gh`, `git push`), or talks to
a service (an `http://` or `https://` URL, `--backend http`, `ragsnap serve`,
`live-check`, `prepare`). Today no shown line is skipped; a skipped line is listed in the
test's output. `text`, `yaml` and other blocks are not shell and are not run.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO

#: what makes a line need a network, a service or GitHub (see the module docstring)
OUTSIDE = re.compile(
    r"\bpip install\b|(^|[\s;&|(])gh\s|\bgit push\b|https?://|--backend[ =]http\b"
    r"|\bragsnap (serve|live-check|prepare)\b"
)


def _bash_lines(markdown: str) -> list[str]:
    """The lines of every ```bash block, continuation lines joined, blank lines and
    comment-only lines dropped."""
    lines = []
    for block in re.findall(r"```bash\n(.*?)```", markdown, re.S):
        for line in block.replace("\\\n", " ").splitlines():
            if line.strip() and not line.lstrip().startswith("#"):
                lines.append(line.strip())
    return lines


def _quickstart_lines() -> list[str]:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Quickstart\n", 1)[1].split("\n## ", 1)[0]
    return _bash_lines(section)


def _ci_page_lines() -> list[str]:
    return _bash_lines((REPO / "docs/ci.md").read_text(encoding="utf-8"))


def needs_outside(line: str) -> bool:
    """The skipping rule of the module docstring."""
    return OUTSIDE.search(line) is not None


def _script(lines: list[str]) -> str:
    """A bash script running ``lines`` in order, stopping at the first that fails and
    naming it."""
    parts = []
    for number, line in enumerate(lines, 1):
        parts.append(line)
        parts.append(
            f'status=$?; if [ "$status" -ne 0 ]; then '
            f"echo {shlex.quote(f'line {number} failed: {line}')} "
            f'"(exit $status)" >&2; exit 1; fi'
        )
    return "\n".join(parts) + "\n"


def _env(tmp_path: Path) -> dict[str, str]:
    shims = tmp_path / "bin"
    shims.mkdir()
    shim = shims / "ragsnap"  # this checkout's ragsnap, as the README's install gives it
    shim.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m ragsnap "$@"\n')
    shim.chmod(0o755)
    return {
        **os.environ,
        "PATH": f"{shims}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": str(REPO / "eval"),
        "PYTHONIOENCODING": "utf-8",
        "GIT_AUTHOR_NAME": "docs test",
        "GIT_AUTHOR_EMAIL": "docs@example.invalid",
        "GIT_COMMITTER_NAME": "docs test",
        "GIT_COMMITTER_EMAIL": "docs@example.invalid",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
    }


def test_the_quickstart_and_the_ci_page_run_as_shown(tmp_path: Path) -> None:
    quickstart, ci_page = _quickstart_lines(), _ci_page_lines()
    assert len(quickstart) >= 4, "the README's quickstart has no ```bash block"
    assert len(ci_page) >= 3, "docs/ci.md has no ```bash block of local checks"
    lines = [line for line in [*quickstart, *ci_page] if not needs_outside(line)]
    skipped = [line for line in [*quickstart, *ci_page] if needs_outside(line)]
    print("skipped (network, service or GitHub):", skipped or "none")
    work = tmp_path / "work"
    work.mkdir()
    run = subprocess.run(
        ["bash", "-c", _script(lines)],
        cwd=work,
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    (project,) = [p.parent for p in work.glob("*/ragsnap.yaml")]
    assert (project / "reports/baseline.json").is_file()
    assert sorted(p.name for p in (project / "fixtures").glob("*.json"))[0] == "_manifest.json"
    assert (project / "reports/pr-comment.md").is_file()
    assert (project / "reports/junit.xml").is_file()
    committed = subprocess.run(
        ["git", "ls-files"], cwd=project, capture_output=True, text=True, check=True
    ).stdout.split()
    assert "reports/baseline.json" in committed
    assert not any(
        name.startswith(".ragsnap/") and name != ".ragsnap/.gitignore" for name in committed
    ), "the knowledge base was committed"


def _workflow_ragsnap_lines() -> list[str]:
    """The ``ragsnap`` commands of the workflow ``init`` writes, one per line as written,
    without their trailing comments (and without the install step's version print)."""
    workflow = REPO / "eval/ragsnap/templates/project/dot-github/workflows/ragsnap.yml"
    found = []
    for line in workflow.read_text(encoding="utf-8").splitlines():
        text = line.split("  #", 1)[0].strip()
        if text.startswith("ragsnap ") and text != "ragsnap --version":
            found.append(text)
    return found


def test_the_ci_page_runs_the_workflows_checks_locally() -> None:
    assert _workflow_ragsnap_lines() == _ci_page_lines()


@pytest.mark.parametrize(
    ("line", "skipped"),
    [
        ("ragsnap seed && ragsnap snapshot && ragsnap accept", False),
        ("git init my-eval && cd my-eval", False),
        ("python -m pip install -e '.[docs]'", True),
        ("gh pr comment 1 --body-file reports/pr-comment.md", True),
        ("git push origin main", True),
        ("ragsnap snapshot --backend http", True),
        ("ragsnap live-check --base-url https://rag.example.com", True),
        ("ragsnap serve --port 0", True),
    ],
)
def test_the_skipping_rule(line: str, skipped: bool) -> None:
    assert needs_outside(line) is skipped

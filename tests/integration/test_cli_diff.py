"""``ragsnap diff`` and the command line's start-up cost."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import REPO, Project, block, make_case, make_fixture, run_cli


def test_diff_two_reports(project: Project) -> None:
    project.write_cases([make_case("a"), make_case("b")])
    project.write_fixture(make_fixture("a", [block(1, "mysql-pool")]))
    project.write_fixture(make_fixture("b", [block(1, "mysql-pool")]))
    assert (
        run_cli(
            "score", "--json-report", "base.json", "--markdown-report", "base.md", cwd=project.root
        ).code
        == 0
    )
    project.write_fixture(make_fixture("b", [block(1, "x"), block(2, "y"), block(3, "mysql-pool")]))
    assert run_cli("score", cwd=project.root).code == 0  # still passes: found at rank 3

    run = run_cli("diff", "base.json", "reports/current.json", cwd=project.root)
    assert run.code == 1
    assert "  b: firstExpectedRank 1 -> 3" in run.out
    diff = json.loads((project.root / "reports/baseline-diff.json").read_text())
    assert diff["counts"]["regressedCases"] == 1

    same = run_cli(
        "diff",
        "base.json",
        "base.json",
        "--diff-json-report",
        "same.json",
        "--diff-markdown-report",
        "same.md",
        cwd=project.root,
    )
    assert same.code == 0 and same.out.startswith("No regressions against base.json")

    clobber = run_cli(
        "diff",
        "base.json",
        "reports/current.json",
        "--diff-json-report",
        "base.json",
        cwd=project.root,
    )
    assert clobber.code == 2 and "base.json: base.json is the baseline report" in clobber.err


def test_help_does_not_import_heavy_modules() -> None:
    code = (
        "import sys, contextlib, io\n"
        "from ragsnap.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try: main(['--help'])\n"
        "    except SystemExit: pass\n"
        "heavy = {'numpy', 'jsonschema', 'yaml', 'tabulate', 'deepdiff', 'requests', 'torch',"
        " 'pymilvus', 'fastapi', 'jsonschema_rs', 'orjson', 'jinja2', 'markupsafe', 'tqdm'}\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": str(REPO / "eval")},
    ).stdout
    assert out.strip() == "[]"

"""``ragsnap check``'s label checks before ``score`` and ``trial`` (ragsnap.commands._labels):
each error-level check refuses the run (exit 2, nothing written), warnings are printed
once, and ``--no-label-check`` is recorded in the reports."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from conftest import copy_example, run_cli, write_json
from ragsnap.io.schema import load_schema

CASES = "cases/golden-cases.json"
#: an OpenAI-style key, built so this file holds none
SECRET = "sk-" + "proj" + "A1b2C3d4E5f6G7h8J9k0"
#: the cheapest trial of the example: one method
TRIAL = ("trial", "--methods", "lexical", "--no-check-determinism")


def _no_zh_no_answer(cases: list[dict[str, Any]]) -> None:
    cases[:] = [c for c in cases if not (c["language"] == "zh" and c.get("noAnswer"))]


#: every error-level check of ragsnap.scoring.hygiene: (code, a change that breaks
#: the example's cases, the pointer and a piece of the message that names it)
BREAKS: dict[str, tuple[Callable[[list[dict[str, Any]]], None], str, str]] = {
    "missing-target": (
        lambda c: c[0]["judgments"][0].update(chunkId="mysql-connection-pool#42"),
        "/cases/0/judgments/0/chunkId",
        "chunk 'mysql-connection-pool#42' does not exist",
    ),
    "span-not-verbatim": (
        lambda c: c[1]["judgments"][0]["spans"].__setitem__(1, "a span that occurs nowhere"),
        "/cases/1/judgments/0/spans/1",
        "span 'a span that occurs nowhere' does not occur verbatim",
    ),
    "out-of-scope": (
        lambda c: c[9].update(expectedSources=["billing-db-pool-tuning"]),
        "/cases/9/expectedSources/0",
        "is in kb_scope 'other-team'",
    ),
    "breadcrumb": (
        lambda c: c[1].update(expectedBreadcrumbs=["Database > Postgres"]),
        "/cases/1/expectedBreadcrumbs/0",
        "breadcrumb 'Database > Postgres' is not a prefix",
    ),
    "secret": (
        lambda c: c[2].update(query=c[2]["query"] + f" (api key {SECRET})"),
        "/cases/2/query",
        "holds an API key (sk-...)",
    ),
    "absolute-path": (
        lambda c: c[3].update(notes="Written from /home/alice/notes.md"),
        "/cases/3/notes",
        "holds an absolute path",
    ),
    "endpoint": (
        lambda c: c[4].update(notes="Reproduced against http://10.2.3.4/api/knowledge/lookup"),
        "/cases/4/notes",
        "holds a URL",
    ),
    "no-answer-coverage": (
        _no_zh_no_answer,
        "/cases",
        "language 'zh' has 3 answerable case(s) and no no-answer case",
    ),
}


def test_every_error_level_check_of_hygiene_is_covered() -> None:
    """BREAKS names each error code ragsnap.scoring.hygiene can emit (its docstring's)."""
    import ragsnap.scoring.hygiene as hygiene

    doc = hygiene.__doc__ or ""
    errors = doc.split("Errors:")[1]
    codes = {code for code in BREAKS if f"``{code}``" in errors}
    assert codes == set(BREAKS)
    assert {rule.code for rule in hygiene.PRIVACY_RULES} <= set(BREAKS)


@pytest.fixture
def example(tmp_path: Path) -> Path:
    copy_example(tmp_path, "cases", "fixtures", "seed-docs", "ragsnap.yaml")
    return tmp_path


def edit_cases(root: Path, change: Callable[[list[dict[str, Any]]], None]) -> None:
    path = root / CASES
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data["cases"])
    write_json(path, data)


COMMANDS = {"score": ("score",), "trial": TRIAL}


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("code", sorted(BREAKS))
def test_each_label_check_refuses_score_and_trial(example: Path, command: str, code: str) -> None:
    change, pointer, problem = BREAKS[code]
    edit_cases(example, change)
    run = run_cli(*COMMANDS[command], cwd=example)
    assert run.code == 2, run.out + run.err
    assert run.out == ""
    message = run.err.strip().splitlines()[-1]
    assert message.startswith(f"InputError: {CASES} at {pointer}"), message
    assert problem in message
    if pointer != "/cases":  # a case's value: the message names the case
        index = int(pointer.split("/")[2])
        cases = json.loads((example / CASES).read_text(encoding="utf-8"))["cases"]
        assert f"(case {cases[index]['id']!r})" in message
    assert "--no-label-check" in message  # the way out, and the fix before it
    assert SECRET not in run.out + run.err
    assert not (example / "reports").exists()  # nothing written


def test_several_errors_are_all_listed_and_the_first_raised(example: Path) -> None:
    def two(cases: list[dict[str, Any]]) -> None:
        BREAKS["missing-target"][0](cases)
        BREAKS["absolute-path"][0](cases)

    edit_cases(example, two)
    run = run_cli("score", cwd=example)
    assert run.code == 2
    lines = run.err.strip().splitlines()
    assert lines[0].startswith(f"error: {CASES} at /cases/3/notes (case ")
    assert lines[1].startswith(f"InputError: {CASES} at /cases/0/judgments/0/chunkId")
    assert "(1 more label error(s) above)" in lines[1]


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_warning_is_printed_once_and_counted(example: Path, command: str) -> None:
    edit_cases(example, _no_zh_no_answer)
    config = example / "ragsnap.yaml"
    config.write_text(config.read_text() + "scoring:\n  noAnswerCoverage: warning\n")
    run = run_cli(*COMMANDS[command], cwd=example)
    assert run.code in (0, 1), run.out + run.err
    warnings = [line for line in run.err.splitlines() if line.startswith("warning: ")]
    assert warnings == [
        f"warning: {CASES} at /cases: language 'zh' has 3 answerable case(s) and no no-answer "
        "case, so no-answer false positives are not measured in it; add a case with "
        '"language": "zh", "noAnswer": true and a question the seed corpus does not answer'
    ]
    report = "reports/current.json" if command == "score" else "reports/trial.json"
    data = json.loads((example / report).read_text(encoding="utf-8"))
    assert data["labelCheck"] == {"status": "checked", "warnings": 1}


@pytest.mark.parametrize("privacy", [False, True])
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_no_label_check_runs_and_the_reports_say_so(
    example: Path, command: str, privacy: bool
) -> None:
    edit_cases(example, BREAKS["missing-target"][0])
    flags = ("--no-label-check", *(["--privacy"] if privacy else []))
    run = run_cli(*COMMANDS[command], *flags, cwd=example)
    assert run.code in (0, 1), run.out + run.err  # a case may fail: it was scored
    assert "--no-label-check" in run.err
    name = "current" if command == "score" else "trial"
    data = json.loads((example / f"reports/{name}.json").read_text(encoding="utf-8"))
    assert data["labelCheck"] == {"status": "skipped", "warnings": 0}
    schema = {"score": "report", "trial": "trial-report"}[command]
    jsonschema.validate(data, load_schema(f"private-{schema}" if privacy else schema))
    markdown = (example / f"reports/{name}.md").read_text(encoding="utf-8")
    assert "**Labels not checked** (`--no-label-check`)" in markdown


def test_score_without_a_seed_corpus_checks_what_needs_none(example: Path) -> None:
    """No seed-docs: secrets still refuse the run; the report says ``partial``."""
    for path in sorted((example / "seed-docs").iterdir()):
        path.unlink()
    (example / "seed-docs").rmdir()
    run = run_cli("score", cwd=example)
    assert run.code == 0, run.out + run.err
    assert "seed-docs not found: the golden cases' targets and spans are not checked" in run.err
    data = json.loads((example / "reports/current.json").read_text(encoding="utf-8"))
    assert data["labelCheck"] == {"status": "partial", "warnings": 0}
    assert "**Labels checked in part**" in (example / "reports/current.md").read_text()

    edit_cases(example, BREAKS["secret"][0])
    run = run_cli("score", cwd=example)
    assert run.code == 2 and "holds an API key (sk-...)" in run.err

"""``ragsnap.io.reads``: what a command reads, and ``check_outputs`` refusing outputs over it."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from conftest import make_fixture
from ragsnap.config import load_config
from ragsnap.errors import UsageError
from ragsnap.io.inputs import is_fixture
from ragsnap.io.jsonio import check_outputs
from ragsnap.io.reads import Read, labelled, reads_of


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ragsnap.yaml").write_text(
        "kb:\n  seedDocs: docs\ntrial:\n  aliases: cases/aliases.yaml\n  gates: g.yaml\n"
        "history: hist\n",
        encoding="utf-8",
    )
    return tmp_path


def _paths(reads: list[Read]) -> dict[str, str]:
    return {read.path.as_posix(): read.what for read in reads}


def test_reads_of_knows_the_configuration_and_what_it_includes(project: Path) -> None:
    args = argparse.Namespace(handler="trial", cases=Path("c.json"), plan=None)
    reads = _paths(reads_of(args, load_config(None), history=True))
    assert reads["ragsnap.yaml"] == "the loaded configuration"
    assert reads["cases/aliases.yaml"] == "the alias file that ragsnap.yaml includes"
    assert reads["g.yaml"] == "the gates file that ragsnap.yaml includes"
    assert reads["docs"] == "the seed corpus"
    assert reads["hist"] == "the history folder this command reads"
    assert reads["c.json"] == "the golden cases file"
    assert reads["fixtures"] == "the fixtures folder"  # no --fixtures: the project's default
    assert "cases/golden-cases.json" not in reads  # --cases named another file


def test_an_output_over_an_input_names_the_option_the_file_and_what_it_is(
    project: Path,
) -> None:
    args = argparse.Namespace(handler="score", cases=Path("c.json"), fixtures=Path("fx"))
    reads = reads_of(args, load_config(None))
    with pytest.raises(UsageError) as caught:
        check_outputs([("--json-report", Path("ragsnap.yaml"))], inputs=reads)
    assert str(caught.value) == (
        "--json-report ragsnap.yaml: ragsnap.yaml is the loaded configuration, which ragsnap "
        "reads and never overwrites; pass another path to --json-report"
    )
    with pytest.raises(UsageError, match=r"--report docs/x\.md: is inside docs, the seed corpus"):
        check_outputs([("--report", Path("docs/x.md"))], inputs=reads)
    check_outputs([("--json-report", Path("reports/current.json"))], inputs=reads)


def test_only_the_option_that_updates_a_file_may_name_it(project: Path) -> None:
    args = argparse.Namespace(handler="snapshot", cases=Path("c.json"), fixtures=Path("fx"))
    reads = reads_of(args, load_config(None), updates=["fixtures"])
    check_outputs([("--fixtures", Path("fx/a.json"))], inputs=reads)  # its own folder
    with pytest.raises(UsageError, match="is inside fx, the fixtures folder"):
        check_outputs([("--json-report", Path("fx/a.json"))], inputs=reads)
    with pytest.raises(UsageError, match=r"c\.json is the golden cases file"):
        check_outputs([("--fixtures", Path("c.json"))], inputs=reads)


def test_labelled_finds_the_option_of_each_output() -> None:
    args = argparse.Namespace(
        json_report=Path("r.json"),
        history=Path("hist"),
        extra_reports=[("junit", Path("j.xml"))],
        cases=Path("r.json"),  # an input option is never the label
    )
    paths = [Path("r.json"), Path("hist/2026.json"), Path("j.xml"), Path("other.md")]
    assert labelled(args, paths) == [
        ("--json-report", Path("r.json")),
        ("--history", Path("hist/2026.json")),
        ("--report", Path("j.xml")),
        ("", Path("other.md")),
    ]


def test_is_fixture_needs_the_schema_and_the_case_id_of_the_file_name(tmp_path: Path) -> None:
    fixture = make_fixture("c1")
    (tmp_path / "c1.json").write_text(json.dumps(fixture), encoding="utf-8")
    (tmp_path / "c2.json").write_text(json.dumps(fixture), encoding="utf-8")  # misnamed
    (tmp_path / "package.json").write_text('{"name": "x"}', encoding="utf-8")
    (tmp_path / "bad.json").write_text("{", encoding="utf-8")
    (tmp_path / "_manifest.json").write_text(json.dumps(fixture), encoding="utf-8")
    assert [p.name for p in sorted(tmp_path.iterdir()) if is_fixture(p)] == ["c1.json"]


def test_the_projects_configuration_stays_safe_when_another_is_loaded(project: Path) -> None:
    (project / "other.yaml").write_text("measures: [map]\n", encoding="utf-8")
    args = argparse.Namespace(handler="score", config=Path("other.yaml"))
    reads = _paths(reads_of(args, load_config(Path("other.yaml"))))
    assert reads["other.yaml"] == "the loaded configuration"
    assert reads["ragsnap.yaml"] == "the project's configuration"

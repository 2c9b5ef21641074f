"""``ragsnap --help`` groups the commands by what people do, happy path first, and every
command's options follow one convention (module docstring of ``ragsnap.cli``)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from conftest import run_cli
from ragsnap.cli import GROUPS, build_parser


def _commands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def test_help_lists_the_groups_in_order_with_the_happy_path_first(tmp_path: Path) -> None:
    run = run_cli("--help", cwd=tmp_path)
    assert run.code == 0, run.err
    text = run.out
    happy = " ".join(text.split())
    assert "ragsnap init`, then `ragsnap seed && ragsnap snapshot && ragsnap accept`" in happy
    assert "`ragsnap score --compare-to reports/baseline.json`" in happy
    headings = [f"\n{group}:\n" for group in GROUPS]
    positions = [text.index(heading) for heading in headings]
    assert positions == sorted(positions)
    assert text.index("The happy path") < positions[0]
    start, everyday = (text[positions[i] : positions[i + 1]] for i in range(2))
    assert "  init " in start
    order = [everyday.index(f"  {name} ") for name in GROUPS["everyday"]]
    assert order == sorted(order)
    assert "{init,seed" not in text  # no flat list of choices


def test_every_command_is_in_exactly_one_group() -> None:
    listed = [name for names in GROUPS.values() for name in names]
    assert sorted(listed) == sorted(_commands())
    assert len(listed) == len(set(listed))


@pytest.mark.parametrize("name", sorted(_commands()))
def test_command_help_still_works(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args([name, "--help"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: ragsnap {name} ")


def test_every_option_states_its_default_or_that_it_is_required() -> None:
    missing = [
        f"{name} {action.option_strings[0]}"
        for name, command in _commands().items()
        for action in command._actions
        if action.option_strings
        and action.help != argparse.SUPPRESS
        and not isinstance(action, argparse._HelpAction)
        and "default" not in (action.help or "")
        and "(required)" not in (action.help or "")
    ]
    assert missing == []


@pytest.mark.parametrize(
    ("argv", "dest"),
    [
        (["score", "--junit-report", "r.xml"], "junit_xml"),
        (["diff", "a.json", "b.json", "--junit-report", "r.xml"], "junit_xml"),
        (["score", "--history-out", "r"], "history"),
        (["export-run", "--run-out", "r.xml"], "out"),
        (["trial", "--plan-out", "r.xml"], "write_plan"),
        (["trial", "--runs-out", "r.xml"], "runs_dir"),
    ],
)
def test_conventional_aliases_set_the_old_options(argv: list[str], dest: str) -> None:
    """``--<format>-report FILE`` for reports, ``--<what>-out`` for other written data;
    the old spelling keeps working and fills the same field."""
    parser = build_parser()
    new = parser.parse_args(argv)
    old_flag = next(
        action.option_strings[0] for action in _commands()[argv[0]]._actions if action.dest == dest
    )
    old = parser.parse_args([old_flag if arg == argv[-2] else arg for arg in argv])
    assert getattr(new, dest) == getattr(old, dest) == Path(argv[-1])
    assert old_flag != argv[-2]

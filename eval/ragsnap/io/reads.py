"""What a command reads, so that none of its outputs or deletions can destroy it.

Every command declares its inputs through ``reads_of(args, config)`` and hands
them to ``ragsnap.io.jsonio.check_outputs`` before anything runs; this module is
the one place that knows the input kinds:

- the options that name an input, by argparse ``dest`` (``INPUT_OPTIONS``: the
  cases file, the fixtures folder, the seed corpus, a plan, a baseline, a state
  file, run and qrels files, the folders ``trend`` reads ...);
- the files the configuration brings: the configuration actually loaded
  (``Config.source``; ``ragsnap.yaml`` when none was, and the project's
  ``ragsnap.yaml`` also when ``--config`` named another), ``trial.aliases``,
  ``trial.gates`` and the seed corpus (``kb.seedDocs``, a folder or a
  ``.jsonl`` file);
- the project's golden cases and fixtures at their default paths, for the
  commands that take no ``--cases`` or ``--fixtures`` (a trial report written
  into ``fixtures/`` would break the next ``ragsnap score`` all the same).

An output may not be any of these files, nor lie inside any of these folders.
One exception: an option whose file or folder the command itself updates
(``accept --baseline``, ``prepare --state``, ``seed --kb``, ``snapshot
--fixtures``) may name that file or write in that folder; no other option may.
A prune's rules (only fixtures are deleted) are ``ragsnap.commands.snapshot``'s.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

__all__ = ["INPUT_OPTIONS", "Read", "labelled", "reads_of"]


class _Kb(Protocol):
    @property
    def seed_docs(self) -> Path: ...


class _Trial(Protocol):
    @property
    def aliases(self) -> Path | None: ...
    @property
    def gates(self) -> Path | None: ...


class Project(Protocol):
    """What ``reads_of`` needs of ``ragsnap.config.Config`` (io sits below config)."""

    @property
    def source(self) -> str: ...
    @property
    def kb(self) -> _Kb: ...
    @property
    def trial(self) -> _Trial: ...
    @property
    def history(self) -> Path: ...


@dataclass(frozen=True, slots=True)
class Read:
    """A file or folder a command reads: ``what`` it is (``"the loaded configuration"``),
    and the option that named it (``"--cases"``; ``""`` when none did)."""

    path: Path
    what: str
    option: str = ""
    folder: bool = False


#: the options that name something a command reads, by argparse dest: (what it is,
#: whether it is a folder; None: a folder when it is one on disk, e.g. trend's REPORT)
INPUT_OPTIONS: dict[str, tuple[str, bool | None]] = {
    "cases": ("the golden cases file", False),
    "fixtures": ("the fixtures folder", True),
    "seed_docs": ("the seed corpus", None),
    "compare_to": ("the baseline report", False),
    "baseline": ("the baseline report", False),  # diff BASELINE; accept --baseline updates it
    "current": ("the current report", False),
    "reports": ("a score report (or a folder of them) that trend reads", None),
    "plan": ("the pinned trial plan", False),
    "trial": ("the trial report", False),  # audit --trial
    "aliases": ("the alias file", False),
    "gates": ("the gates file", False),
    "state": ("the state file", False),  # prepare --state and live-check --state update it
    "run": ("the run file", False),
    "qrels": ("the qrels file", False),
    "topics": ("the topics file", False),
    "source": ("what is being imported", None),
    "token_file": ("the token file", False),
    "kb": ("the knowledge base", False),
    "baseline_fixtures": ("the baseline's fixtures folder", True),
    "cgroup": ("the service's cgroup folder", True),
}

#: the project's configuration file (``ragsnap.config.DEFAULT_CONFIG``)
_PROJECT_CONFIG = Path("ragsnap.yaml")
#: the golden cases and fixtures at their default paths (``ragsnap.commands``)
_PROJECT = (
    ("cases", Path("cases/golden-cases.json"), "the golden cases file", False),
    ("fixtures", Path("fixtures"), "the fixtures folder", True),
)


def reads_of(
    args: argparse.Namespace,
    config: Project | None = None,
    *,
    updates: Iterable[str] = (),
    history: bool = False,
) -> list[Read]:
    """Everything command ``args`` reads (see the module docstring), with ``config``
    the configuration it loaded (None: it loads none). ``updates``: the dests among
    ``INPUT_OPTIONS`` whose file the command itself writes (``baseline`` for ``accept``):
    that option's output may name it. ``history``: the command reads the history folder
    of ``config`` (``trend`` without REPORT)."""
    reads: list[Read] = []
    given = vars(args)
    for dest, (what, folder) in INPUT_OPTIONS.items():
        value = given.get(dest)
        values = value if isinstance(value, (list, tuple)) else [value]
        for path in values:
            if not isinstance(path, Path):
                continue
            is_folder = path.is_dir() if folder is None else folder
            option = "--" + dest.replace("_", "-") if dest in updates else ""
            reads.append(Read(path, what, option, is_folder))
    if config is not None:
        source = Path(config.source)
        loaded = source.is_file()
        reads.append(Read(source, "the loaded configuration" if loaded else "the configuration"))
        if source != _PROJECT_CONFIG:  # --config named another: the project's stays safe
            reads.append(Read(_PROJECT_CONFIG, "the project's configuration"))
        corpus = config.kb.seed_docs
        reads.append(Read(corpus, "the seed corpus", folder=corpus.suffix != ".jsonl"))
        for path, what in ((config.trial.aliases, "alias"), (config.trial.gates, "gates")):
            if path is not None:
                reads.append(Read(path, f"the {what} file that {source} includes"))
        if history:
            reads.append(Read(config.history, "the history folder this command reads", folder=True))
    else:
        named = given.get("config")
        source = named if isinstance(named, Path) else _PROJECT_CONFIG
        reads.append(Read(source, "the project's configuration"))
        reads.append(Read(Path("seed-docs"), "the seed corpus", folder=True))
    for dest, path, what, folder in _PROJECT:
        if dest not in given:
            reads.append(Read(path, what, folder=folder))
    return reads


#: options whose flag is not ``--`` + their dest with dashes
_FLAGS = {"extra_reports": "--report"}


def labelled(args: argparse.Namespace, outputs: Iterable[Path]) -> list[tuple[str, Path]]:
    """Each of ``outputs`` with the option of ``args`` that named it, for messages: the
    option whose value is that path, or a folder holding it (``--history DIR``, ``--out
    DIR``), or a list holding it (``--report FORMAT=FILE``); ``""`` for a default path
    no option named."""
    given = [(d, v) for d, v in vars(args).items() if d not in INPUT_OPTIONS or d == "state"]
    named: list[tuple[str, Path]] = []
    for path in outputs:
        option = ""
        for dest, value in given:
            held = [v for v in value if isinstance(v, tuple)] if isinstance(value, list) else []
            if value == path or value == path.parent or any(path in item for item in held):
                option = _FLAGS.get(dest, "--" + dest.replace("_", "-"))
                break
        named.append((option, path))
    return named

"""``ragsnap init [DIR]``: a minimal working project, ready for ``ragsnap accept``.

Writes the files under ``ragsnap/templates/project/`` (package data) into DIR
(default: the current folder), a path segment ``dot-x`` becoming ``.x``::

    ragsnap.yaml                    short, commented settings; marks the project root
    cases/golden-cases.json         three example cases that pass against the seed docs
    seed-docs/*.md                  example Markdown documents with frontmatter
    .github/workflows/ragsnap.yml   the pull-request check (docs/ci.md)
    .ragsnap/.gitignore             the knowledge base is never committed (this file is)
    reports/.gitignore              generated reports neither; this file, the baseline
                                    and the dated reports in reports/history/ are

The workflow installs ragsnap from one setting, ``RAGSNAP_REQUIREMENT``, whose default
pins the version that wrote it: every ``__RAGSNAP_VERSION__`` in a template becomes
``ragsnap.__version__``. The ignore files keep themselves (``!.gitignore``), so after
``git add .`` and a clone, ``seed`` and ``snapshot`` leave ``git status`` clean.

It never overwrites: when any of these files exists (or cannot be created, a
file standing where a folder must be), nothing is written and the command
exits 2 naming them. The ignore files sit in their own folders, so a
repository's own ``.gitignore`` is left alone.
"""

from __future__ import annotations

import argparse
import os
import sys
from importlib import resources
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from .. import __version__
from ..errors import OutputError
from ..io.jsonio import check_outputs, write_outputs

if TYPE_CHECKING:
    if sys.version_info >= (3, 11):
        from importlib.resources.abc import Traversable
    else:
        from importlib.abc import Traversable

#: the template folder inside the package
TEMPLATE = "templates/project"
#: replaced by the running ragsnap's version in every template file
VERSION_PLACEHOLDER = b"__RAGSNAP_VERSION__"


def _walk(folder: Traversable, at: PurePosixPath) -> list[tuple[PurePosixPath, bytes]]:
    files: list[tuple[PurePosixPath, bytes]] = []
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        name = "." + entry.name[len("dot-") :] if entry.name.startswith("dot-") else entry.name
        if entry.is_dir():
            files += _walk(entry, at / name)
        elif not entry.name.endswith((".pyc", ".pyo")):
            data = entry.read_bytes().replace(VERSION_PLACEHOLDER, __version__.encode())
            files.append((at / name, data))
    return files


def project_files() -> list[tuple[PurePosixPath, bytes]]:
    """Every file of the example project: (path inside the project, bytes), sorted."""
    root = resources.files("ragsnap").joinpath(TEMPLATE)
    return sorted(_walk(root, PurePosixPath()))


def _blocked(target: Path) -> bool:
    """Whether writing ``target`` would replace something, or cannot work."""
    if os.path.lexists(target):  # a dangling symbolic link counts too
        return True
    return any(parent.exists() and not parent.is_dir() for parent in target.parents)


def run(args: argparse.Namespace) -> int:
    folder: Path = args.dir
    files = project_files()
    targets = {folder / Path(*name.parts): data for name, data in files}
    blocked = [path for path in targets if _blocked(path)]
    if blocked:
        listed = ", ".join(path.as_posix() for path in blocked)
        raise OutputError(
            f"ragsnap init writes nothing, since it would overwrite or cannot create: {listed}. "
            "Move them aside, or run `ragsnap init NEW-FOLDER` into an empty folder"
        )
    check_outputs(list(targets), allow_outside=args.allow_outside)
    write_outputs(targets)

    where = folder.as_posix()
    print(f"init: wrote {len(targets)} files to {where}:")
    for name, _ in files:
        print(f"  {name}")
    print("Next steps:")
    if folder != Path():
        print(f"  cd {where}")
    print("  ragsnap seed && ragsnap snapshot && ragsnap accept")
    print(
        "  (seed builds the knowledge base from seed-docs/, snapshot writes and scores a fixture "
        "per case, accept writes the baseline reports/baseline.json)"
    )
    print('  git add . && git commit -m "ragsnap: golden cases, fixtures and baseline"')
    print(
        "  (the .gitignore files in .ragsnap/ and reports/ keep the knowledge base and "
        "generated reports out; they commit themselves, the baseline and reports/history/)"
    )
    print(
        "Then every pull request runs .github/workflows/ragsnap.yml: it comments the score "
        "and fails on a regression or a stale fixture."
    )
    print(
        "As the cases grow, `ragsnap audit` says which retrieval faults they would miss "
        "and what kind of case would catch each."
    )
    print(
        "Before the first pull request, point RAGSNAP_REQUIREMENT "
        f"(default ragsnap=={__version__}) in that workflow at where your CI gets ragsnap: "
        "it is not on a public package index yet (a git tag or your internal index: the "
        "comment above the setting shows both)."
    )
    return 0

"""``ragsnap init [DIR]``: a minimal working project, ready for ``ragsnap accept``.

Writes the files under ``ragsnap/templates/project/`` (package data) into DIR
(default: the current folder), a path segment ``dot-x`` becoming ``.x``::

    ragsnap.yaml                    short, commented settings; marks the project root
    cases/golden-cases.json         three example cases that pass against the seed docs
    seed-docs/*.md                  example Markdown documents with frontmatter
    .github/workflows/ragsnap.yml   the pull-request check (docs/ci.md)
    .ragsnap/.gitignore             the knowledge base is never committed
    reports/.gitignore              generated reports neither; the baseline is

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

from ..errors import OutputError
from ..io.jsonio import check_outputs, write_outputs

if TYPE_CHECKING:
    if sys.version_info >= (3, 11):
        from importlib.resources.abc import Traversable
    else:
        from importlib.abc import Traversable

#: the template folder inside the package
TEMPLATE = "templates/project"


def _walk(folder: Traversable, at: PurePosixPath) -> list[tuple[PurePosixPath, bytes]]:
    files: list[tuple[PurePosixPath, bytes]] = []
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        name = "." + entry.name[len("dot-") :] if entry.name.startswith("dot-") else entry.name
        if entry.is_dir():
            files += _walk(entry, at / name)
        elif not entry.name.endswith((".pyc", ".pyo")):
            files.append((at / name, entry.read_bytes()))
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
        "Then every pull request runs .github/workflows/ragsnap.yml: it comments the score "
        "and fails on a regression."
    )
    return 0

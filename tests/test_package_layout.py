"""The package's tree reads like the product's flow, and nothing imports upward.

Every module of ``eval/ragsnap`` belongs to a layer: a root module (``errors``,
``models``, ``settings``, ``config``, ``cli``, ``pytest_plugin``) or a capability
subpackage (``io``, ``ir``, ``kb``, ``snapshot``, ``scoring``, ``importers``, ``live``,
``trial``, ``audit``, ``commands``). A module may import from its own layer and from layers below it,
never from a layer above or beside it, including imports deferred into a
function or kept for type checking. The Layout table of docs/development.md
names every subpackage.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "eval" / "ragsnap"

#: layer -> rank; a module may import only from its own layer or a lower rank.
LAYERS = {
    "errors": 0,
    "models": 0,
    "settings": 1,
    "io": 2,
    "ir": 3,
    "kb": 3,
    "snapshot": 4,
    "scoring": 4,
    "importers": 5,
    "live": 5,
    "trial": 5,
    "config": 6,
    "audit": 7,
    "commands": 8,
    "cli": 9,
    "pytest_plugin": 9,
    "__main__": 10,
    "__init__": 10,
}

#: ``__version__`` is the package's first statement, imported by the CLI and the
#: service for ``--version`` and the health endpoint; it depends on nothing.
LEAF_NAMES = {"__version__"}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _imports(text: str, module: str, is_package: bool) -> list[tuple[int, str, list[str]]]:
    """(line, absolute module, names) of every ragsnap import in a module's text."""
    package = module if is_package else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "ragsnap":
                    found.append((node.lineno, alias.name, []))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            if target.split(".")[0] != "ragsnap":
                continue
            names = [alias.name for alias in node.names]
            # ``from . import x`` where x is a submodule imports that submodule
            submodules = [
                f"{target}.{name}"
                for name in names
                if (PACKAGE.parent / Path(*target.split("."), f"{name}.py")).exists()
                or (PACKAGE.parent / Path(*target.split("."), name, "__init__.py")).exists()
            ]
            if submodules:
                found.extend((node.lineno, sub, []) for sub in submodules)
            else:
                found.append((node.lineno, target, names))
    return found


MODULES = sorted(PACKAGE.rglob("*.py"))


def test_every_module_has_a_layer() -> None:
    unplaced = sorted(
        {_layer(_module_name(path)) for path in MODULES} - LAYERS.keys(),
    )
    assert not unplaced, (
        f"{unplaced} have no layer: add them to LAYERS in {Path(__file__).name} "
        "(and to the Layout table of docs/development.md)"
    )


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_imports_from_a_layer_above(path: Path) -> None:
    source = _layer(_module_name(path))
    upward = []
    text = path.read_text(encoding="utf-8")
    for line, target, names in _imports(text, _module_name(path), path.name == "__init__.py"):
        layer = _layer(target)
        if layer == source or (names and set(names) <= LEAF_NAMES):
            continue
        if LAYERS[layer] >= LAYERS[source]:
            upward.append(f"line {line}: {target} ({layer}) from {source}")
    assert not upward, "imports from a layer above or beside:\n" + "\n".join(upward)


def test_the_checker_finds_deferred_and_submodule_imports() -> None:
    """The checker itself: a deferred ``..scoring`` import from ``io`` and a
    ``from .. import kb`` are both seen, with the layers they reach."""
    text = (
        "from .. import kb\n"
        "def f():\n"
        "    from ..scoring.report import REPORT_KIND\n"
        "    return REPORT_KIND\n"
    )
    found = _imports(text, "ragsnap.io.probe", is_package=False)
    assert found == [(1, "ragsnap.kb", []), (3, "ragsnap.scoring.report", ["REPORT_KIND"])]
    assert [LAYERS[_layer(target)] > LAYERS["io"] for _, target, _ in found] == [True, True]


def test_docs_layout_table_names_every_subpackage() -> None:
    page = (REPO / "docs/development.md").read_text(encoding="utf-8")
    section = page.split("## Layout", 1)[1].split("\n## ", 1)[0]
    listed = set(re.findall(r"`eval/ragsnap/([\w]+)/`", section))
    subpackages = {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    assert listed == subpackages, (
        f"docs/development.md's Layout table lists {sorted(listed)}, the package has {sorted(subpackages)}"
    )

"""The reference site in docs/: the generated `ragsnap.yaml` page matches the JSON
Schema it is rendered from, and every page is in the site's navigation.

`mkdocs build --strict` itself (broken links and anchors) runs in `.ci/run`.
"""

from __future__ import annotations

import importlib.util
import json
import re
from types import ModuleType
from typing import Any

import yaml

from conftest import REPO

SCHEMA = REPO / "eval/ragsnap/io/schemas/config.schema.json"


def _renderer() -> ModuleType:
    path = REPO / "scripts/render_config_reference.py"
    spec = importlib.util.spec_from_file_location("render_config_reference", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_configuration_page_is_the_rendering_of_the_schema() -> None:
    page = (REPO / "docs/configuration.md").read_text(encoding="utf-8")
    rendered = _renderer().render(json.loads(SCHEMA.read_text(encoding="utf-8")))
    assert page == rendered, (
        "docs/configuration.md is stale: run python scripts/render_config_reference.py"
    )


def _keys(node: dict[str, Any], path: str = "") -> set[str]:
    keys = set()
    for name, child in node.get("properties", {}).items():
        keys.add(f"{path}{name}")
        keys |= _keys(child, f"{path}{name}.")
    return keys


def test_configuration_page_names_every_key_and_description() -> None:
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    page = (REPO / "docs/configuration.md").read_text(encoding="utf-8")
    missing = sorted(key for key in _keys(schema) if f"`{key}`" not in page)
    assert not missing, f"keys missing from docs/configuration.md: {missing}"
    descriptions = re.findall(r'"description": "((?:[^"\\]|\\.)*)"', SCHEMA.read_text())
    for description in descriptions:
        text = " ".join(json.loads(f'"{description}"').replace("|", "\\|").split())
        assert text in page, f"description missing from the page: {text[:60]}"


def test_a_schema_change_changes_the_page() -> None:
    renderer = _renderer()
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    before = renderer.render(schema)
    schema["properties"]["snapshot"]["properties"]["tolerance"]["maximum"] = 2
    assert renderer.render(schema) != before


def _nav_pages(node: object) -> set[str]:
    if isinstance(node, str):
        return {node}
    if isinstance(node, list):
        return set().union(*(_nav_pages(item) for item in node))
    if isinstance(node, dict):
        return set().union(*(_nav_pages(value) for value in node.values()))
    return set()


def test_every_page_is_in_the_navigation_and_every_entry_exists() -> None:
    config = yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))
    nav = _nav_pages(config["nav"])
    pages = {p.relative_to(REPO / "docs").as_posix() for p in (REPO / "docs").rglob("*.md")}
    assert nav == pages


def test_readme_links_only_to_pages_that_exist() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    for target in re.findall(r"\]\((docs/[^)#]+)", readme):
        assert (REPO / target).is_file(), target

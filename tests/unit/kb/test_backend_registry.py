"""``ragsnap.kb.backends.registry``: backends by name, what each can do, nothing imported
to list them, and every place that names backends reading them from here."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ragsnap.cli import build_parser
from ragsnap.commands._provenance import settings_of
from ragsnap.config import Config, KbConfig, MilvusConfig
from ragsnap.errors import UsageError
from ragsnap.kb.backends.python import PythonConfig
from ragsnap.kb.backends.registry import (
    BACKENDS,
    Backend,
    BackendOptions,
    backend_names,
    get_backend,
    register_backend,
)


def test_capabilities_of_the_built_in_backends() -> None:
    assert list(BACKENDS) == ["embedded", "milvus", "http", "python"]
    assert backend_names(seeds="store") == ("embedded", "milvus")
    assert backend_names(seeds="service") == ("http",)
    assert backend_names(looks_up="whole") == ("http", "python")
    assert backend_names(serves=True) == ("embedded", "milvus")
    assert backend_names(workers=True) == ("embedded",)
    assert backend_names(local=True) == ("embedded",)  # serve looks up on its event loop
    assert get_backend("python").records == ("evidenceBlocks",)
    assert get_backend("http").records == (
        "evidenceBlocks",
        "contextPack",
        "retrievalTrace",
        "rerankTrace",
    )


def test_which_store_is_local_and_locked(tmp_path: Path) -> None:
    kb = tmp_path / "kb.sqlite"
    lite = Config(kb=KbConfig(milvus=MilvusConfig(uri=str(tmp_path / "m.db"))))
    server = Config(kb=KbConfig(milvus=MilvusConfig(uri="http://127.0.0.1:19530")))
    assert get_backend("embedded").lock_file(lite, kb) == kb
    assert get_backend("milvus").lock_file(lite, kb) == tmp_path / "m.db"
    assert get_backend("milvus").lock_file(server, kb) is None
    assert get_backend("http").lock_file(lite, kb) is None
    assert get_backend("milvus").where(server, kb) == "http://127.0.0.1:19530"
    assert get_backend("embedded").where(server, kb) == str(kb)


def test_an_unknown_backend_suggests_the_closest() -> None:
    with pytest.raises(UsageError, match=r"no backend 'pyhton'; did you mean 'python'\?"):
        get_backend("pyhton")
    with pytest.raises(UsageError, match="use one of embedded, milvus, http, python"):
        get_backend("zzz")


def test_the_manifest_settings_each_backend_adds() -> None:
    config = Config(python=PythonConfig(retriever="pkg.mod:make"))
    assert settings_of(config, "python") == {
        "backend": "python",
        "python.retriever": "pkg.mod:make",
    }
    assert settings_of(config, "http") == {"backend": "http"}
    assert settings_of(config, "milvus")["kb.milvus.analyzer"] == "ragsnap"
    assert "kb.milvus.analyzer" not in settings_of(config, "embedded")


def test_flags_of_another_backend_are_refused_naming_their_backend() -> None:
    python = get_backend("python")
    python.check_options(BackendOptions(retriever="a:b"), ("--retriever", "--base-url"))
    with pytest.raises(UsageError, match="--base-url is for --backend http; drop it"):
        python.check_options(BackendOptions(base_url="http://x"), ("--base-url",))
    with pytest.raises(UsageError, match="--token-file and --token-env are for --backend http"):
        python.check_options(BackendOptions(token_env="T"), ("--token-env",))
    python.check_options(BackendOptions(token_env="T"), ("--base-url",))  # not checked here


def test_the_cli_and_the_config_schema_offer_the_registered_backends() -> None:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    choices = {
        name: next(a.choices for a in command._actions if a.dest == "backend")
        for name, command in sub.choices.items()
        if any(a.dest == "backend" for a in command._actions)
    }
    assert tuple(choices["snapshot"]) == tuple(choices["seed"]) == tuple(BACKENDS)
    assert tuple(choices["serve"]) == tuple(choices["lookup"]) == ("embedded", "milvus")
    assert tuple(choices["prepare"]) == ("http",)


def test_ragsnap_yaml_takes_every_registered_backend(tmp_path: Path) -> None:
    from ragsnap.config import load_config

    path = tmp_path / "ragsnap.yaml"
    for name in BACKENDS:
        path.write_text(f"kb:\n  backend: {name}\n", encoding="utf-8")
        assert load_config(path).kb.backend == name


def test_a_registered_backend_is_offered_by_the_cli() -> None:
    try:
        register_backend(Backend("memory", "an in-memory test store", "none", "whole"))
        sub = next(a for a in build_parser()._actions if a.dest == "command")
        backend = next(a for a in sub.choices["snapshot"]._actions if a.dest == "backend")
        assert "memory" in backend.choices
    finally:
        del BACKENDS["memory"]


def test_listing_the_backends_imports_none() -> None:
    code = (
        "import sys; from ragsnap.kb.backends.registry import backend_names; backend_names(); "
        "print(sorted(m for m in sys.modules if m.startswith('ragsnap.kb.backends.')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "['ragsnap.kb.backends.registry']"


def test_a_mistyped_backend_in_ragsnap_yaml_suggests_the_closest(tmp_path: Path) -> None:
    from ragsnap.config import load_config
    from ragsnap.errors import InputError

    path = tmp_path / "ragsnap.yaml"
    path.write_text("kb:\n  backend: pyhton\n", encoding="utf-8")
    with pytest.raises(InputError) as raised:
        load_config(path)
    assert raised.value.pointer == "/kb/backend"
    assert "'pyhton' is not a backend; did you mean 'python'? Else use one of: 'embedded'" in (
        str(raised.value)
    )

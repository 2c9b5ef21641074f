"""ragsnap.yaml loading (ragsnap.config)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragsnap.config import load_config
from ragsnap.diff import Tolerances
from ragsnap.errors import InputError


def test_defaults_when_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert load_config(None).tolerances == Tolerances()


def test_default_file_is_picked_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("ragsnap.yaml").write_text("diff:\n  tolerances:\n    passRate: 0.05\n    missCount: 2\n")
    assert load_config(None).tolerances == Tolerances(pass_rate=0.05, miss_count=2)


def test_errors(tmp_path: Path) -> None:
    bad = tmp_path / "c.yaml"
    bad.write_text("diff:\n  tolerances:\n    passrate: 0.1\n")
    with pytest.raises(InputError, match=r"at /diff/tolerances: unknown field 'passrate'"):
        load_config(bad)
    bad.write_text("diff: [\n")
    with pytest.raises(InputError, match=r"at line \d+: is not valid YAML"):
        load_config(bad)
    with pytest.raises(InputError, match="file not found"):
        load_config(tmp_path / "absent.yaml")

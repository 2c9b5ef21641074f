"""The deterministic atomic writer and the strict reader (ragsnap.io.jsonio)."""

from __future__ import annotations

import os
import random
import stat
from pathlib import Path
from typing import Any

import pytest

from ragsnap.errors import InputError, OutputError, UsageError
from ragsnap.io.jsonio import (
    MAX_INPUT_BYTES,
    FloatsUnder,
    FrozenRow,
    _write_body,
    check_outputs,
    dump_json,
    read_bytes,
    read_json,
    round_floats,
    write_json,
    write_outputs,
)


def test_dump_is_sorted_indented_unescaped_rounded_with_newline() -> None:
    out = dump_json({"b": 1 / 3, "a": ["缓存", 2.0, None], "c": {"z": 1, "y": True}})
    assert out.decode("utf-8") == (
        '{\n  "a": [\n    "缓存",\n    2.0,\n    null\n  ],\n  "b": 0.333333,\n'
        '  "c": {\n    "y": true,\n    "z": 1\n  }\n}\n'
    )


def test_write_json_replaces_atomically_and_leaves_no_temp_files(tmp_path: Path) -> None:
    target = tmp_path / "deep" / "report.json"
    write_json(target, {"v": 1})
    write_json(target, {"v": 2})
    assert read_json(target, "fix") == {"v": 2}
    assert [p.name for p in target.parent.iterdir()] == ["report.json"]
    assert target.stat().st_mode & 0o777 == 0o666 & ~_umask()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_symlinked_destination_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    real = tmp_path / "real.json"
    real.write_text("keep me")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    other = tmp_path / "other.md"
    with pytest.raises(OutputError, match="symbolic link"):
        write_outputs({other: "first", link: {"x": 1}})
    assert real.read_text() == "keep me"
    assert not other.exists()  # every destination is checked before the first write


def test_failed_write_keeps_the_previous_file(tmp_path: Path) -> None:
    target = tmp_path / "r.json"
    write_json(target, {"old": True})
    with pytest.raises(TypeError):
        write_json(target, {"bad": object()})
    assert read_json(target, "fix") == {"old": True}
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]


def test_check_outputs_refuses_the_same_file_twice_and_inputs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UsageError, match="same file"):
        check_outputs([tmp_path / "a", tmp_path / "x" / ".." / "a"])
    with pytest.raises(UsageError, match="a is an input of this command, which ragsnap reads"):
        check_outputs([Path("a")], inputs=[None, tmp_path / "a"])
    (tmp_path / "fx").mkdir()
    with pytest.raises(UsageError, match="inside fx, a folder this command reads"):
        check_outputs([Path("fx/report.md")], folders=[Path("fx")])
    check_outputs([Path("out/a.json"), Path("b.md")], inputs=[Path("cases.json")])


def test_check_outputs_keeps_writes_inside_the_working_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    for outside in (tmp_path / "x.json", Path("../x.json"), Path("a/../../x.json")):
        with pytest.raises(UsageError, match=r"outside the working folder.*--allow-outside"):
            check_outputs([outside])
        check_outputs([outside], allow_outside=True)
    check_outputs([work / "inside.json", Path("a/../other.json")])
    with pytest.raises(UsageError, match="NUL"):
        check_outputs([Path("a\0b")])


def test_check_outputs_refuses_symlinks_on_the_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "real").mkdir()
    (tmp_path / "linked").symlink_to(tmp_path / "real")
    with pytest.raises(OutputError, match="linked is a symbolic link"):
        check_outputs([Path("linked/report.json")])
    (tmp_path / "real" / "target.json").write_text("{}")
    (tmp_path / "report.json").symlink_to(tmp_path / "real" / "target.json")
    with pytest.raises(OutputError, match="symbolic link"):
        check_outputs([Path("report.json")])
    assert (tmp_path / "real" / "target.json").read_text() == "{}"


def test_reader_errors_name_the_problem(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_bytes(b'{\n  "a": 1,\n}')
    with pytest.raises(
        InputError, match=r"bad.json: is not valid JSON \(trailing comma .*line 2, column 9\)"
    ):
        read_json(bad, "fix")
    latin = tmp_path / "latin.json"
    latin.write_bytes('{"a": "caf\xe9"}'.encode("latin-1"))
    with pytest.raises(InputError, match=r"is not UTF-8 \(byte 0xe9 on line 1\); re-save"):
        read_json(latin, "fix")
    with pytest.raises(InputError, match="file not found; do this"):
        read_json(tmp_path / "missing.json", "do this")
    bom = tmp_path / "bom.json"
    bom.write_bytes(b'\xef\xbb\xbf{"a": 1}')
    assert read_json(bom, "fix") == {"a": 1}


@pytest.mark.parametrize("size", [0, 1, 65_537, MAX_INPUT_BYTES["config"]])
def test_read_bytes_reads_whole_files_up_to_the_limit(tmp_path: Path, size: int) -> None:
    data = bytes(i % 251 for i in range(size))
    (tmp_path / "f").write_bytes(data)
    assert read_bytes(tmp_path / "f", "fix", kind="config") == data
    assert read_bytes(str(tmp_path / "f"), "fix", kind="config") == data
    (tmp_path / "f").write_bytes(data + b"x" * (MAX_INPUT_BYTES["config"] + 1 - size))
    with pytest.raises(InputError, match="bytes, more than the 1,048,576 a config may have"):
        read_bytes(tmp_path / "f", "fix", kind="config")


@pytest.mark.skipif(not Path("/proc/self/maps").is_file(), reason="needs Linux /proc")
def test_read_bytes_reads_past_a_size_stat_understates() -> None:
    maps = Path("/proc/self/maps")  # a regular file whose stat size is 0
    assert maps.stat().st_size == 0
    data = read_bytes(maps, "fix", kind="config")
    assert len(data) > 4096 and data.endswith(b"\n")


def test_write_json_with_a_mode_gives_the_file_that_mode(tmp_path: Path) -> None:
    target = tmp_path / "private.json"
    old = os.umask(0)
    try:
        write_json(target, {"a": 1}, mode=0o600)
    finally:
        os.umask(old)
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert target.read_bytes() == b'{\n  "a": 1\n}\n'


def test_floats_under_rounds_only_its_float_keys() -> None:
    """A ``FloatsUnder`` row is copied with only its float keys rounded; the rest is
    not walked (so a float elsewhere would stay as it is: the row's builder promises
    there is none, which test_report checks for the score report's case rows)."""
    row = FloatsUnder({"m": {"x": 1 / 3, "y": None}, "n": [1, "a"], "z": None}, ("m", "z"))
    rounded = round_floats({"rows": [row], "mean": 2 / 3})
    assert rounded == {
        "rows": [{"m": {"x": 0.333333, "y": None}, "n": [1, "a"], "z": None}],
        "mean": 0.666667,
    }
    assert type(rounded["rows"][0]) is dict and row["m"]["x"] == 1 / 3  # a copy
    assert round_floats(FloatsUnder({"other": 0.1234567}, ("m",))) == {"other": 0.1234567}
    unrounded = FloatsUnder({"other": [1, "b"], "m": None}, ("m",))
    assert round_floats(unrounded) is unrounded  # nothing under its float keys
    assert dump_json([row, unrounded]) == dump_json([dict(row), dict(unrounded)])


def test_frozen_row_reads_compares_and_writes_as_its_row(tmp_path: Path) -> None:
    """A ``FrozenRow`` reads, iterates (in its row's key order), compares and is written
    as the ``FloatsUnder`` row it was made from, its values not copied; rows of one
    shape share their keys; a copy or a pickle is a ``FrozenRow`` again."""
    import copy
    import pickle

    source = FloatsUnder(
        {"z": "first", "m": {"x": 1 / 3, "y": None}, "n": [1, "a"], "a": None}, ("m",)
    )
    row = FrozenRow.of(source)
    assert row == source and source == row and dict(row) == source
    assert list(row) == ["z", "m", "n", "a"] and len(row) == 4
    assert row["n"] is source["n"] and row.get("a", 5) is None and row.get("q", 5) == 5
    assert "a" in row and "q" not in row and 1 not in row
    with pytest.raises(KeyError):
        row["q"]
    assert row != {**source, "a": 1} and row != {"z": "first"}
    assert row.float_keys == ("m",)
    other = FrozenRow.of(FloatsUnder({**source, "z": "second"}, ("m",)))
    assert other._shape is row._shape and other != row
    assert round_floats(row) == round_floats(source)
    assert dump_json([row, other]) == dump_json([source, dict(other)])
    rows = {"cases": [row] * 70, "b": [other]}
    write_json(tmp_path / "r.json", rows)
    assert (tmp_path / "r.json").read_bytes() == dump_json(
        {"cases": [source] * 70, "b": [dict(other)]}
    )
    for again in (copy.deepcopy(row), pickle.loads(pickle.dumps(row))):
        assert type(again) is FrozenRow and again == source and list(again) == list(source)


def _random_value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(6 if depth < 3 else 3)
    if kind == 0:
        return rng.choice(["a", "缓存", "x\ny", "", 'é"\\', 0, -3, 10**12, True, None])
    if kind == 1:
        return rng.choice([1 / 3, 1.0, -2.5e-9, 3.0])
    if kind == 2:
        return rng.choice([[], {}, FloatsUnder({"metrics": {"m": 2 / 3}}, ("metrics",))])
    if kind == 3:
        return [_random_value(rng, depth + 1) for _ in range(rng.choice([0, 1, 3, 64, 65, 90]))]
    keys = ["b", "a", "ä", "cases", "Z", "_k"]
    return {
        f"{rng.choice(keys)}{i}": _random_value(rng, depth + 1) for i in range(rng.randrange(5))
    }


def test_write_json_writes_long_lists_an_item_at_a_time_as_the_same_bytes(tmp_path: Path) -> None:
    rng = random.Random(5)
    for index in range(200):
        value = {
            f"k{i}{rng.choice(['', 'é'])}": _random_value(rng) for i in range(rng.randrange(6))
        }
        if rng.random() < 0.7:  # a report's case rows
            value["cases"] = [_random_value(rng, 1) for _ in range(rng.choice([0, 64, 65, 300]))]
        target = tmp_path / f"{index}.json"
        write_json(target, value)
        assert target.read_bytes() == dump_json(value), index
    # a report's rows are written one at a time: no write holds the whole document
    rows = {"cases": [{"id": f"case-{i}", "metrics": {"m": i / 7}} for i in range(1000)]}
    writes: list[int] = []

    class Handle:
        def write(self, data: bytes) -> None:
            writes.append(len(data))

    _write_body(Handle(), rows)
    assert sum(writes) + 1 == len(dump_json(rows)) and max(writes) < sum(writes) / 100

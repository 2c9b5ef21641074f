"""Resource figures of the trial's resource pass (ragsnap.trial.resources): cgroup v2
directories are files, so a laid-out one is the real interface; a real one when this
machine mounts cgroup v2."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import lay_out_cgroup
from ragsnap.errors import InputError
from ragsnap.trial.resources import Reading, check_cgroup, figures, read_cgroup, reading


def test_a_cgroup_v2_directory_is_read_from_its_files(tmp_path: Path) -> None:
    root = lay_out_cgroup(tmp_path / "svc.scope", 1_000, 4096, 8192)
    assert check_cgroup(root) == root
    assert read_cgroup(root) == {"usage_usec": 1_000, "memory.current": 4096, "memory.peak": 8192}
    # without the memory controller: CPU only
    bare = lay_out_cgroup(tmp_path / "cpu-only", 7, None, None)
    assert read_cgroup(bare) == {"usage_usec": 7, "memory.current": None, "memory.peak": None}
    assert read_cgroup(tmp_path / "missing") is None


@pytest.mark.parametrize(
    ("layout", "words"),
    [
        ("missing", "is not a directory, so not a cgroup"),
        ("file", "is not a directory, so not a cgroup"),
        ("empty", "has no readable cpu.stat with a usage_usec line"),
        ("v1", "has no readable cpu.stat with a usage_usec line"),
    ],
)
def test_a_path_that_is_not_a_cgroup_v2_directory_is_bad_input(
    tmp_path: Path, layout: str, words: str
) -> None:
    path = tmp_path / layout
    if layout == "file":
        path.write_text("usage_usec 1\n", encoding="ascii")
    elif layout == "empty":
        path.mkdir()
    elif layout == "v1":  # a cgroup v1 cpu controller's cpu.stat has no usage_usec
        path.mkdir()
        (path / "cpu.stat").write_text("nr_periods 0\nnr_throttled 0\n", encoding="ascii")
        (path / "cpuacct.usage").write_text("123\n", encoding="ascii")
    with pytest.raises(InputError) as caught:
        check_cgroup(path)
    assert words in str(caught.value) and "--cgroup" in str(caught.value)


def test_figures_are_the_deltas_between_two_readings() -> None:
    before = Reading(
        10.0,
        2.0,
        100 * 1048576,
        150 * 1048576,
        {"usage_usec": 5_000, "memory.current": 1 << 20, "memory.peak": 3 << 20},
    )
    after = Reading(
        10.5,
        2.25,
        102 * 1048576,
        151 * 1048576,
        {"usage_usec": 7_500, "memory.current": 2 << 20, "memory.peak": 4 << 20},
    )
    assert figures(before, after, 16, "given") == {
        "lookups": 16,
        "wallSeconds": 0.5,
        "cpuSeconds": 0.25,
        "rssDeltaMiB": 2.0,
        "peakRssDeltaMiB": 1.0,
        "cgroup": {
            "scope": "given",
            "cpuUsageUsec": 2_500,
            "memoryCurrentBytes": 2 << 20,
            "memoryCurrentDeltaBytes": 1 << 20,
            "memoryPeakBytes": 4 << 20,
        },
    }
    unread = Reading(11.0, 2.5, None, None, None)
    assert figures(unread, unread, 0, "own")["cgroup"] is None
    assert figures(unread, unread, 0, "own")["rssDeltaMiB"] is None


def test_a_reading_of_this_process_sees_memory_it_holds(tmp_path: Path) -> None:
    root = lay_out_cgroup(tmp_path / "svc", 1, 2, 3)
    before = reading(root)
    held = bytearray(64 * 1048576)  # touched: resident
    for i in range(0, len(held), 4096):
        held[i] = 1
    after = reading(root)
    result = figures(before, after, 1, "given")
    assert result["cgroup"] is not None and result["cgroup"]["cpuUsageUsec"] == 0
    if result["rssDeltaMiB"] is not None:  # /proc/self/statm (Linux)
        assert result["rssDeltaMiB"] >= 32
    assert len(held) == 64 * 1048576


#: this machine's cgroup v2 directory: the unified mount (cgroup v2 only), else the
#: hybrid layout's v2 hierarchy
REAL = next(
    (p for p in (Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/unified")) if read_cgroup(p)),
    None,
)


@pytest.mark.skipif(REAL is None, reason="this machine mounts no cgroup v2 hierarchy")
def test_a_real_cgroup_v2_directory_of_this_machine_is_accepted() -> None:
    assert REAL is not None
    assert check_cgroup(REAL) == REAL
    first = read_cgroup(REAL)
    assert first is not None and isinstance(first["usage_usec"], int)

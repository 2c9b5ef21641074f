"""The rule for files another user could have planted (``ragsnap.io.ownership``)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ragsnap.io.ownership import untrusted_because


@pytest.mark.parametrize(
    ("mode", "uid", "gid", "reason"),
    [
        (0o755, None, None, None),
        (0o775, None, None, None),  # group-writable, but the group is the user's own
        (0o777, None, None, "is world-writable"),
        (
            0o1777,
            None,
            None,
            "is world-writable (sticky, like /tmp: anyone may create files in it)",
        ),
        (0o755, 4242, None, "is owned by another user (uid 4242)"),
        (0o775, None, 4242, "is group-writable (gid 4242, not your own group)"),
        (0o755, None, 4242, None),  # another group that cannot write
    ],
)
def test_who_could_have_written_it(
    tmp_path: Path, mode: int, uid: int | None, gid: int | None, reason: str | None
) -> None:
    folder = tmp_path / "f"
    folder.mkdir()
    folder.chmod(mode)
    os.chown(folder, os.getuid() if uid is None else uid, os.getgid() if gid is None else gid)
    assert untrusted_because(folder.stat()) == reason


def test_root_owned_files_are_trusted(tmp_path: Path) -> None:
    path = tmp_path / "ragsnap.yaml"
    path.write_text("")
    os.chown(path, 0, os.getgid())
    assert untrusted_because(path.stat()) is None

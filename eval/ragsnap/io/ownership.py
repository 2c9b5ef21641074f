"""Who could have written a file: the rule for files that others must not plant.

A file (or the folder that holds it) is *trusted* when nobody but the current
user, or the system (root), could have put it there:

- it is owned by the current user or by root (uid 0), and
- it is not world-writable (a sticky ``/tmp``-like folder included: anyone may
  create a new file there), and
- it is not group-writable, unless its group is the user's own primary group
  (the usual "user private group" set-up, where umask 002 is common).

``ragsnap`` applies it to a ``ragsnap.yaml`` found in a parent folder, and to
that folder, before it becomes the project's settings (a planted file could send
the user's bearer token anywhere); a prepare state's folder must not be
world-writable either (``live.preparation.check_state_path``). On a system
without POSIX ownership (Windows) every file is trusted.
"""

from __future__ import annotations

import os
import stat

__all__ = ["untrusted_because"]


def untrusted_because(info: os.stat_result) -> str | None:
    """Why a file or folder whose ``stat`` is ``info`` could have been written by
    someone else ("is world-writable", "is owned by uid 1001"), or None when only the
    current user or root could have."""
    getuid = getattr(os, "getuid", None)
    if getuid is None:  # pragma: no cover - no POSIX ownership (Windows)
        return None
    mode = info.st_mode
    if mode & stat.S_IWOTH:
        sticky = (
            " (sticky, like /tmp: anyone may create files in it)" if mode & stat.S_ISVTX else ""
        )
        return f"is world-writable{sticky}"
    if info.st_uid not in (getuid(), 0):
        return f"is owned by another user (uid {info.st_uid})"
    if mode & stat.S_IWGRP and info.st_gid != os.getgid():
        return f"is group-writable (gid {info.st_gid}, not your own group)"
    return None

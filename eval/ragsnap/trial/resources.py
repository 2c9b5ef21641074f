"""Resource figures of a trial's resource pass: read before and after each method's pass.

After the measured passes, each method's lookups run once more on their own
(warm, serial, nothing seeded; ``ragsnap.trial.runner.run_resource_pass``),
and these figures are read just before and just after that method's block:

* ``wallSeconds`` and ``cpuSeconds``: the block's wall-clock time and this
  process's CPU time (user + system; for a trial over a service, the client's);
* ``rssDeltaMiB``: resident memory after minus before (``/proc/self/statm``;
  null where there is none), ``peakRssDeltaMiB``: how much the process's peak
  resident memory rose during the block (``getrusage``; 0 when a method needed
  no more memory than the process had already used);
* ``cgroup``: a cgroup v2 directory's ``cpu.stat`` ``usage_usec`` delta, and
  its ``memory.current`` after the block with its delta, and ``memory.peak``
  (the cgroup's lifetime peak, not the block's) when the cgroup has the memory
  controller. The directory is ``trial --cgroup DIR`` (``scope: given``: a
  service's container, e.g. ``/sys/fs/cgroup/system.slice/docker-<id>.scope``,
  read-only, without network) or else ragsnap's own ``/sys/fs/cgroup``
  (``scope: own``) when it is a cgroup v2 directory; null when neither is
  readable. A cgroup's CPU counts everything that runs in it.

No path is written into the report. Readings are I/O; the figures are a pure
function of two readings.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InputError

__all__ = ["OWN_CGROUP", "Reading", "check_cgroup", "figures", "read_cgroup", "reading"]

#: ragsnap's own cgroup, as a container sees it
OWN_CGROUP = Path("/sys/fs/cgroup")
_MIB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class Reading:
    """The figures at one moment: clocks, this process's memory, a cgroup's files."""

    wall: float
    cpu: float
    rss_bytes: int | None
    peak_rss_bytes: int | None
    cgroup: dict[str, int | None] | None


def _int_file(path: Path) -> int | None:
    try:
        return int(path.read_text(encoding="ascii").split()[0])
    except (OSError, ValueError, IndexError, UnicodeDecodeError):
        return None


def _usage_usec(root: Path) -> int | None:
    try:
        lines = (root / "cpu.stat").read_text(encoding="ascii").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    for line in lines:
        key, _, value = line.partition(" ")
        if key == "usage_usec":
            try:
                return int(value)
            except ValueError:
                return None
    return None


def read_cgroup(root: Path) -> dict[str, int | None] | None:
    """``cpu.stat`` usage_usec, ``memory.current`` and ``memory.peak`` of the cgroup v2
    directory ``root``; None when none of them is readable."""
    out = {
        "usage_usec": _usage_usec(root),
        "memory.current": _int_file(root / "memory.current"),
        "memory.peak": _int_file(root / "memory.peak"),
    }
    return out if any(v is not None for v in out.values()) else None


def check_cgroup(path: Path) -> Path:
    """``path`` when it is a readable cgroup v2 directory (a ``cpu.stat`` with a
    ``usage_usec`` line), else bad input (exit 2) saying how to find the right one."""
    fix = (
        "pass --cgroup the service's cgroup v2 directory, e.g. /sys/fs/cgroup/system.slice/"
        "docker-<container id>.scope (the line `0::/...` of /proc/<service pid>/cgroup, "
        "under /sys/fs/cgroup), or drop --cgroup"
    )
    if not path.is_dir():
        raise InputError(path, "is not a directory, so not a cgroup", fix)
    if _usage_usec(path) is None:
        raise InputError(
            path,
            "has no readable cpu.stat with a usage_usec line, so it is not a cgroup v2 "
            "directory (a cgroup v1 hierarchy has cpuacct.usage instead)",
            fix,
        )
    return path


def _rss_bytes() -> int | None:
    try:
        pages = int(Path("/proc/self/statm").read_text(encoding="ascii").split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return pages * os.sysconf("SC_PAGE_SIZE")


def _peak_rss_bytes() -> int | None:
    try:
        import resource
    except ImportError:  # not on Windows
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak) if sys.platform == "darwin" else int(peak) * 1024


def reading(cgroup: Path | None) -> Reading:
    """The figures now; ``cgroup`` None reads no cgroup."""
    return Reading(
        wall=time.perf_counter(),
        cpu=time.process_time(),
        rss_bytes=_rss_bytes(),
        peak_rss_bytes=_peak_rss_bytes(),
        cgroup=None if cgroup is None else read_cgroup(cgroup),
    )


def _delta(after: int | None, before: int | None) -> int | None:
    return None if after is None or before is None else after - before


def _mib(value: int | None) -> float | None:
    return None if value is None else round(value / _MIB, 1)


def figures(before: Reading, after: Reading, lookups: int, scope: str) -> dict[str, Any]:
    """A block's figures (module docstring); ``scope``: ``given`` or ``own``."""
    cgroup = None
    if before.cgroup is not None and after.cgroup is not None:
        cgroup = {
            "scope": scope,
            "cpuUsageUsec": _delta(after.cgroup["usage_usec"], before.cgroup["usage_usec"]),
            "memoryCurrentBytes": after.cgroup["memory.current"],
            "memoryCurrentDeltaBytes": _delta(
                after.cgroup["memory.current"], before.cgroup["memory.current"]
            ),
            "memoryPeakBytes": after.cgroup["memory.peak"],
        }
    return {
        "lookups": lookups,
        "wallSeconds": round(max(0.0, after.wall - before.wall), 3),
        "cpuSeconds": round(max(0.0, after.cpu - before.cpu), 3),
        "rssDeltaMiB": _mib(_delta(after.rss_bytes, before.rss_bytes)),
        "peakRssDeltaMiB": _mib(_delta(after.peak_rss_bytes, before.peak_rss_bytes)),
        "cgroup": cgroup,
    }

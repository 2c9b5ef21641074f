"""One writer at a time: an advisory lock beside a knowledge base file.

``ragsnap seed`` holds it from the moment it reads what the store holds until
its write has committed, and ``ragsnap serve`` holds it for each upload or
delete, so two writers never plan against the same state and then both write
(two seeds of different corpora used to leave a store that matched neither).
The lock is a non-blocking POSIX ``flock`` on a hidden file beside the store,
``.<name>.lock`` (mode 0600), which records the holder's pid, command and
start time; a second writer fails at once, naming the holder. Anything but a
regular file there (a FIFO, a device) is refused, exit 2, without blocking. The operating
system releases the lock when the holder exits or crashes; the file stays (a
new lock on a re-created file would not exclude a holder of the old one).
Readers never take it: a lookup reads one consistent state on its own.

A lock is never stale: the system drops it with its last holder, so a lock that
is busy is held by a live process. Its record can still name one that has
exited (a new holder that has not written its record yet, or a child that
inherited the descriptor of a holder that exited). Then the record is read again
briefly, and when it still names a dead process the message says so, names the
live processes that hold the file open (found in ``/proc/*/fd``; Linux), and
says how to list them (``fuser -v``); it never suggests deleting the file, and
never takes the lock over, since the holder may be writing.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from ..errors import KnowledgeBaseBusy, OutputError

__all__ = ["lock_path", "writer_lock"]


def lock_path(store: Path) -> Path:
    """The lock file of the store at ``store``: ``.<name>.lock`` beside it."""
    return store.parent / f".{store.name}.lock"


@contextlib.contextmanager
def writer_lock(store: Path, what: str | None = None) -> Iterator[None]:
    """Hold the writer lock of ``store`` for the ``with`` block, or raise
    ``KnowledgeBaseBusy`` naming the process that holds it."""
    import fcntl

    path = lock_path(store)
    if path.is_symlink():
        raise OutputError(
            f"{path}: is a symbolic link; ragsnap never writes through links. Remove it"
        )
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | os.O_CLOEXEC
        fd = os.open(path, flags | getattr(os, "O_NONBLOCK", 0), 0o600)  # a FIFO: no wait
    except OSError as exc:
        raise OutputError(
            f"{path}: cannot create the writer lock ({exc.strerror}); choose a writable place "
            "for the knowledge base"
        ) from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OutputError(
                f"{path}: the writer lock is not a regular file (a pipe, a device or a "
                f"folder?); remove it (`rm {path}`: ragsnap creates it again) and run this again"
            )
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise _busy(store, path, fd) from None
        command = what or " ".join(["ragsnap", *sys.argv[1:2]])
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        record = f"pid {os.getpid()} ({command}, since {stamp})\n".encode()
        try:
            os.pwrite(fd, record, 0)  # written, then cut: a reader never sees it empty
            os.ftruncate(fd, len(record))
        except OSError as exc:
            fcntl.flock(fd, fcntl.LOCK_UN)
            raise OutputError(
                f"{path}: cannot write the writer lock ({exc.strerror}); choose a writable "
                "place for the knowledge base"
            ) from None
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


_PID = re.compile(r"^pid (\d+)\b")


def _alive(pid: int) -> bool:
    """Whether process ``pid`` exists (a zombie counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's: it exists
        pass
    try:
        state = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[-1].split()[0]
    except (OSError, IndexError):
        return True  # no /proc: kill's answer stands
    return state != b"Z"


def _openers(path: Path) -> list[str]:
    """``pid N (command)`` of every other live process that holds ``path`` open, from
    ``/proc/*/fd`` (Linux; empty elsewhere or when nothing can be read)."""
    try:
        target = path.stat()
        processes = [p for p in Path("/proc").iterdir() if p.name.isdigit()]
    except OSError:
        return []
    found: list[str] = []
    for process in processes:
        if int(process.name) == os.getpid():
            continue
        try:
            fds = list((process / "fd").iterdir())
        except OSError:
            continue
        for fd in fds:
            try:
                held = fd.stat()
            except OSError:
                continue
            if (held.st_dev, held.st_ino) == (target.st_dev, target.st_ino):
                try:
                    raw = (process / "cmdline").read_bytes()
                    command = raw.replace(b"\0", b" ").decode("utf-8", "replace").strip()
                except OSError:
                    command = ""
                found.append(f"pid {process.name}" + (f" ({command[:80]})" if command else ""))
                break
    return found


def _busy(store: Path, path: Path, fd: int) -> KnowledgeBaseBusy:
    """The error of a busy lock: its holder as its record names it, unless that process
    has exited (module docstring)."""
    record = _holder(fd)
    for _ in range(50):  # a new holder writes its record within moments
        match = _PID.match(record)
        if match is None or _alive(int(match.group(1))):
            return KnowledgeBaseBusy(
                f"{store} is being written by {record}; wait for it to finish (or stop it), "
                "then run this again"
            )
        time.sleep(0.01)
        record = _holder(fd)
    holders = _openers(path)
    held_by = (
        f"it is held by {', '.join(holders)}"
        if holders
        else "it is held by a live process that inherited the lock (a child of that one?)"
    )
    return KnowledgeBaseBusy(
        f"{store} is locked for writing, but the process its lock file names ({record}) has "
        f"exited; {held_by}. A lock is released when its last holder exits, so this one is "
        f"not stale: stop that process (`fuser -v {path}` lists the holders), then run this "
        f"again; do not delete {path} (a new file would not exclude the holder)"
    )


def _holder(fd: int) -> str:
    """Who holds the lock, as its record says; a holder that has only just taken it may
    not have written it yet, so wait for it briefly."""
    for _ in range(50):
        text = os.pread(fd, 4096, 0).decode("utf-8", "replace").strip()
        if text:
            return text
        time.sleep(0.01)
    return "another process"

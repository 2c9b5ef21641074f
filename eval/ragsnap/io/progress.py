"""Progress for long work: a bar on a terminal, sparse lines in a log.

On a terminal the bar redraws in place (``seed  42/180 documents [####    ]``);
when the stream is not a terminal (CI logs, pipes) a line is printed at each
tenth of the work once the job has run for a second, so a log shows a long job
is alive without flooding it, and a short one stays quiet.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import TextIO

__all__ = ["Progress"]


class Progress:
    """Counts ``total`` units of work named ``unit`` under ``label``.

    ``total=None`` is for streams of unknown length: a terminal shows a
    running count, a log gets a line every ten seconds.
    """

    def __init__(self, total: int | None, label: str, unit: str, stream: TextIO | None = None):
        self.total = total
        self.label = label
        self.unit = unit
        self.done = 0
        self._lock = threading.Lock()
        self._stream = stream if stream is not None else sys.stderr
        self._tty = bool(getattr(self._stream, "isatty", lambda: False)())
        self._next_line = max(1, -(-(total or 0) // 10))
        self._last_draw = 0.0
        self._started = time.monotonic()
        self._drawn = False

    def advance(self, n: int = 1) -> None:
        """Record ``n`` more units done (safe to call from several threads)."""
        with self._lock:
            self._advance(n)

    def _advance(self, n: int) -> None:
        self.done += n
        if self.total is None:
            self._count()
            return
        if self.total <= 0:
            return
        if self._tty:
            now = time.monotonic()
            if now - self._last_draw >= 0.1 or self.done >= self.total:
                self._last_draw = now
                filled = int(30 * self.done / self.total)
                bar = "#" * filled + " " * (30 - filled)
                self._stream.write(f"\r{self.label} {self.done}/{self.total} {self.unit} [{bar}]")
                self._stream.flush()
                self._drawn = True
        elif self.done >= self._next_line and self.done < self.total:
            while self._next_line <= self.done:
                self._next_line += max(1, -(-self.total // 10))
            if time.monotonic() - self._started >= 1.0:
                self._stream.write(f"{self.label}: {self.done}/{self.total} {self.unit}\n")
                self._stream.flush()

    def _count(self) -> None:
        now = time.monotonic()
        if self._tty:
            if now - self._last_draw >= 0.1:
                self._last_draw = now
                self._stream.write(f"\r{self.label} {self.done:,} {self.unit}")
                self._stream.flush()
                self._drawn = True
        elif now - max(self._last_draw, self._started) >= 10.0:
            self._last_draw = now
            self._stream.write(f"{self.label}: {self.done:,} {self.unit}\n")
            self._stream.flush()

    def close(self) -> None:
        """End the bar's line (the caller prints its own summary)."""
        if self._drawn:
            self._stream.write("\n")
            self._stream.flush()
            self._drawn = False

"""Progress for long work: a bar on a terminal, sparse lines in a log.

On a terminal the bar redraws in place
(``seed 42/180 documents [#######       ] 3.5/s ETA 0:40``); when the stream is
not a terminal (CI logs, pipes) a line is printed at each tenth of the work
once the job has run for a second (``seed: 18/180 documents (3.6/s, ETA
0:45)``), so a log shows a long job is alive without flooding it, and a short
one stays quiet. Both go to stderr unless the caller passes another stream.

The rate is the units done so far over the time since the ``Progress`` was
made (a mean over the whole job, so it settles rather than jitters); the ETA
is the units left at that rate, written ``M:SS`` (``H:MM:SS`` from an hour
on). Neither is shown before any time has passed or any unit is done; a job
of unknown length shows the rate alone.
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
        self._width = 0  # of the last frame drawn on the terminal

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
                pace = _pace(self.done, self.total, now - self._started, sep=" ")
                self._draw(
                    f"{self.label} {self.done}/{self.total} {self.unit} [{bar}]"
                    + (f" {pace}" if pace else "")
                )
        elif self.done >= self._next_line and self.done < self.total:
            while self._next_line <= self.done:
                self._next_line += max(1, -(-self.total // 10))
            elapsed = time.monotonic() - self._started
            if elapsed >= 1.0:
                pace = _pace(self.done, self.total, elapsed)
                self._stream.write(
                    f"{self.label}: {self.done}/{self.total} {self.unit}"
                    + (f" ({pace})" if pace else "")
                    + "\n"
                )
                self._stream.flush()

    def _draw(self, frame: str) -> None:
        """Redraw the terminal line; blanks cover what a longer frame left."""
        self._stream.write(f"\r{frame.ljust(self._width)}")
        self._stream.flush()
        self._width = len(frame)
        self._drawn = True

    def _count(self) -> None:
        now = time.monotonic()
        if self._tty:
            if now - self._last_draw >= 0.1:
                self._last_draw = now
                pace = _pace(self.done, None, now - self._started)
                self._draw(f"{self.label} {self.done:,} {self.unit}" + (f" {pace}" if pace else ""))
        elif now - max(self._last_draw, self._started) >= 10.0:
            self._last_draw = now
            pace = _pace(self.done, None, now - self._started)
            self._stream.write(
                f"{self.label}: {self.done:,} {self.unit}" + (f" ({pace})" if pace else "") + "\n"
            )
            self._stream.flush()

    def close(self) -> None:
        """End the bar's line (the caller prints its own summary)."""
        if self._drawn:
            self._stream.write("\n")
            self._stream.flush()
            self._drawn = False
            self._width = 0


def _pace(done: int, total: int | None, elapsed: float, sep: str = ", ") -> str:
    """``12.5/s, ETA 1:04`` (the rate alone when ``total`` is None; ``sep`` between
    the two); empty before any time has passed or any unit is done."""
    if elapsed <= 0 or done <= 0:
        return ""
    rate = done / elapsed
    shown = f"{rate:,.1f}/s" if rate < 100 else f"{rate:,.0f}/s"
    if total is None:
        return shown
    return f"{shown}{sep}ETA {_clock(max(0, total - done) / rate)}"


def _clock(seconds: float) -> str:
    """``seconds`` rounded up to a whole second, as ``M:SS`` or ``H:MM:SS``."""
    whole = int(-(-seconds // 1))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"

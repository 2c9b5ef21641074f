"""Progress for long work: a tqdm bar on a terminal, sparse lines in a log.

On a terminal the bar is tqdm's, redrawn in place at most ten times a second
(``seed 42/180 documents [#######       ] 3.5/s ETA 00:40``; a job of unknown
length shows a running count and its rate); tqdm is imported when the first
bar is drawn, so a command that draws none never loads it. When the stream
is not a terminal (CI logs, pipes) a plain line is printed at each tenth of
the work once the job has run for a second (``seed: 18/180 documents (3.6/s,
ETA 0:45)``), so a log shows a long job is alive without flooding it, and a
short one stays quiet. Both go to stderr unless the caller passes another
stream.

In the plain lines the rate is the units done so far over the time since the
``Progress`` was made (a mean over the whole job, so it settles rather than
jitters); the ETA is the units left at that rate, written ``M:SS``
(``H:MM:SS`` from an hour on). Neither is shown before any time has passed or
any unit is done; a job of unknown length gets a line with the count and the
rate every ten seconds.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:  # imported when a terminal bar is first drawn
    from tqdm import tqdm

__all__ = ["Progress"]


class Progress:
    """Counts ``total`` units of work named ``unit`` under ``label``.

    ``total=None`` is for streams of unknown length: a terminal shows a
    running count, a log gets a line every ten seconds. A total of zero or
    less draws nothing.
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
        self._last_line = 0.0
        self._started = time.monotonic()
        self._bar: tqdm[Any] | None = None  # the terminal's bar, made at the first advance

    def advance(self, n: int = 1) -> None:
        """Record ``n`` more units done (safe to call from several threads)."""
        with self._lock:
            self.done += n
            if self.total is not None and self.total <= 0:
                return
            if self._tty:
                self._draw(n)
            elif self.total is None:
                self._count_line()
            else:
                self._line()

    def _draw(self, n: int) -> None:
        if self._bar is None:
            from tqdm import tqdm

            unit = self.unit.replace("{", "{{").replace("}", "}}")
            shape = (
                f"{{desc}} {{n:,}} {unit} {{rate_noinv_fmt}}"
                if self.total is None
                else f"{{desc}} {{n}}/{{total}} {unit} [{{bar:30}}] {{rate_noinv_fmt}} ETA "
                "{remaining}"
            )
            self._bar = tqdm(
                total=self.total,
                desc=self.label,
                file=self._stream,
                bar_format=shape,
                ascii=" #",
                unit="",
                unit_scale=True,
                mininterval=0.1,
                initial=self.done,  # drawn now, with the units done so far
            )
        else:
            self._bar.update(n)

    def _line(self) -> None:
        assert self.total is not None
        if self.done >= self._next_line and self.done < self.total:
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

    def _count_line(self) -> None:
        now = time.monotonic()
        if now - max(self._last_line, self._started) >= 10.0:
            self._last_line = now
            pace = _pace(self.done, None, now - self._started)
            self._stream.write(
                f"{self.label}: {self.done:,} {self.unit}" + (f" ({pace})" if pace else "") + "\n"
            )
            self._stream.flush()

    def close(self) -> None:
        """End the bar's line, its last frame drawn (the caller prints its own summary)."""
        with self._lock:
            if self._bar is not None:
                self._bar.close()
                self._bar = None


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

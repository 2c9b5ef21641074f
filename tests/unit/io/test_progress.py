"""Progress output (ragsnap.io.progress)."""

from __future__ import annotations

import io
import subprocess
import sys

import pytest

from ragsnap.io import progress
from ragsnap.io.progress import Progress


class FakeTTY(io.StringIO):
    def isatty(self) -> bool:
        return True


class Clock:
    """A fake ``time.monotonic`` that only moves when a test moves it."""

    def __init__(self, start: float = 1000.0):
        self.now = start
        self.step = 0.0  # seconds each unit of work takes, see ``run``

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(progress.time, "monotonic", fake)
    return fake


def run(bar: Progress, steps: int, clock: Clock | None = None) -> None:
    for _ in range(steps):
        if clock is not None:
            clock.now += clock.step
        bar.advance()
    bar.close()


def test_short_job_on_a_log_prints_nothing(clock: Clock) -> None:
    stream = io.StringIO()
    bar = Progress(500, "seed", "documents", stream)
    run(bar, 500)
    assert bar.done == 500
    assert stream.getvalue() == ""


def test_short_job_in_real_time_prints_nothing() -> None:
    stream = io.StringIO()
    run(Progress(50, "seed", "documents", stream), 50)
    assert stream.getvalue() == ""


def test_long_job_on_a_log_prints_sparse_lines(clock: Clock) -> None:
    clock.step = 0.5  # every advance takes half a second
    stream = io.StringIO()
    run(Progress(1000, "seed", "documents", stream), 1000, clock)
    out = stream.getvalue()
    assert "\r" not in out
    lines = out.splitlines()
    assert 1 <= len(lines) <= 10
    # 100 done in 50 s: 2/s, and 900 left take 7.5 minutes
    assert lines[0] == "seed: 100/1000 documents (2.0/s, ETA 7:30)"
    assert all(
        line.startswith("seed: ") and "/1000 documents (2.0/s, ETA " in line for line in lines
    )
    counts = [int(line.split()[1].split("/")[0]) for line in lines]
    assert counts == sorted(set(counts))


def test_log_lines_with_uneven_steps(clock: Clock) -> None:
    clock.step = 2.0
    stream = io.StringIO()
    bar = Progress(100, "embed", "chunks", stream)
    for n in (7, 30, 1, 50, 12):
        clock.now += clock.step
        bar.advance(n)
    bar.close()
    # a line when a tenth boundary (10, 20, ...) is crossed, never at the end
    lines = stream.getvalue().splitlines()
    # 37 in 4 s: 9.25/s, 63 left take 6.8 s (rounded up); 88 in 8 s: 11/s, 12 left 1.1 s
    assert lines == [
        "embed: 37/100 chunks (9.2/s, ETA 0:07)",
        "embed: 88/100 chunks (11.0/s, ETA 0:02)",
    ]


def test_log_quiet_for_the_first_second(clock: Clock) -> None:
    clock.step = 0.001  # 1000 advances take one second
    stream = io.StringIO()
    run(Progress(1000, "seed", "documents", stream), 1000, clock)
    assert stream.getvalue() == ""


def test_log_starts_after_the_first_second(clock: Clock) -> None:
    clock.step = 0.004  # 250 advances take one second
    stream = io.StringIO()
    run(Progress(1000, "seed", "documents", stream), 1000, clock)
    counts = [int(line.split()[1].split("/")[0]) for line in stream.getvalue().splitlines()]
    assert counts == [300, 400, 500, 600, 700, 800, 900]


@pytest.mark.parametrize("total", [1, 3, 10, 11, 18, 19, 25, 59, 1000, 1099])
def test_slow_job_prints_at_most_ten_lines(clock: Clock, total: int) -> None:
    # "a line at each tenth of the work": never more than ten lines, whatever the total
    clock.step = 5.0
    stream = io.StringIO()
    run(Progress(total, "seed", "documents", stream), total, clock)
    lines = stream.getvalue().splitlines()
    assert len(lines) <= 10, lines
    if total >= 10:
        assert lines


def test_zero_total_prints_nothing(clock: Clock) -> None:
    clock.step = 5.0
    for stream in (io.StringIO(), FakeTTY()):
        run(Progress(0, "seed", "documents", stream), 3, clock)
        assert stream.getvalue() == ""


def test_tty_draws_a_tqdm_bar_in_place_and_close_ends_the_line() -> None:
    stream = FakeTTY()
    bar = Progress(4, "seed", "documents", stream)
    for _ in range(4):
        bar.advance()
    out = stream.getvalue()
    assert out.startswith("\rseed 1/4 documents [")
    assert "\n" not in out
    bar.close()
    closed = stream.getvalue()
    assert closed.startswith(out) and closed.endswith("\n") and closed.count("\n") == 1
    last = closed.rstrip("\n").split("\r")[-1]
    assert last.startswith(f"seed 4/4 documents [{'#' * 30}] ") and " ETA " in last
    bar.close()
    assert stream.getvalue() == closed  # a second close writes nothing


def test_tty_throttles_but_always_draws_the_end() -> None:
    stream = FakeTTY()
    run(Progress(1000, "seed", "documents", stream), 1000)
    frames = stream.getvalue().split("\r")[1:]
    assert frames[0].startswith("seed 1/1000 documents [")
    assert frames[-1].startswith("seed 1000/1000 documents [")
    assert len(frames) < 500  # redrawn at most ten times a second, not once per unit


def test_tqdm_is_imported_only_to_draw_on_a_terminal() -> None:
    code = (
        "import io, sys\n"
        "from ragsnap.io.progress import Progress\n"
        "class TTY(io.StringIO):\n"
        "    def isatty(self): return True\n"
        "bar = Progress(3, 'seed', 'documents', io.StringIO()); bar.advance(3); bar.close()\n"
        "print('tqdm' in sys.modules)\n"
        "bar = Progress(3, 'seed', 'documents', TTY()); bar.advance(3); bar.close()\n"
        "print('tqdm' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.split() == ["False", "True"]


def test_close_without_drawing_writes_nothing(clock: Clock) -> None:
    stream = FakeTTY()
    Progress(10, "seed", "documents", stream).close()
    assert stream.getvalue() == ""


# --- rate and ETA ----------------------------------------------------------------------


def test_eta_counts_hours(clock: Clock) -> None:
    stream = io.StringIO()
    bar = Progress(1000, "embed", "chunks", stream)
    clock.now += 400.0
    bar.advance(100)  # 0.25/s: 900 left take an hour
    clock.now += 8000.0
    bar.advance(100)  # 200 in 8,400 s: 800 left take 9.3 hours (33,600 s)
    assert stream.getvalue().splitlines() == [
        "embed: 100/1000 chunks (0.2/s, ETA 1:00:00)",
        "embed: 200/1000 chunks (0.0/s, ETA 9:20:00)",
    ]


def test_fast_rates_drop_the_decimal(clock: Clock) -> None:
    stream = io.StringIO()
    bar = Progress(100_000, "seed", "documents", stream)
    clock.now += 2.0
    bar.advance(10_000)  # 5,000/s; 90,000 left take 18 s
    assert stream.getvalue() == "seed: 10000/100000 documents (5,000/s, ETA 0:18)\n"


def test_unknown_total_shows_the_rate_alone(clock: Clock) -> None:
    stream, tty = io.StringIO(), FakeTTY()
    for out in (stream, tty):
        bar = Progress(None, "import", "documents", out)
        clock.now += 12.0
        bar.advance(3000)
        bar.close()
    assert stream.getvalue() == "import: 3,000 documents (250/s)\n"
    assert tty.getvalue().startswith("\rimport 3,000 documents ")  # tqdm's count and rate
    assert tty.getvalue().endswith("/s\n")

"""Compiled (numba) kernels for ``ragsnap.ir.trec``: the same results as its numpy code.

numba is optional. ``trec`` imports this module only when numba can be
imported and the input is large enough to repay loading the kernels (see
``trec.COMPILED_FROM``); otherwise its numpy code runs. Every kernel here
returns exactly what the numpy code returns (tests run both and compare):

* ``scan`` tokenises a block of whole lines in one pass and reports the
  first line with the wrong number of fields, like ``trec._tokenise``.
* ``gather`` copies tokens into a NUL-padded byte matrix, like
  ``trec._strings``.
* ``plain_decimals`` / ``plain_integers`` parse the usual spellings of
  scores and grades exactly (a float is an integer mantissa below 2^53
  divided by a power of ten below 10^16, one correctly rounded division, as
  in ``trec._plain_decimals``) and say when a value needs the general parser.
* ``hash_rows`` hashes each NUL-padded id (FNV-1a over its 8-byte words, so
  ids of different widths hash alike).
* ``rank`` builds the grade and judged matrices from the run grouped by
  query: per query, first occurrence of each document wins, results are
  ordered by score descending then document id descending (bytes), and each
  result is looked up among that query's judgments. The work per query
  touches only that query's lines and judgments, so the time is linear in
  the run's size.

The kernels are single-threaded and release the GIL (``nogil``); the results
never depend on the number of threads.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, cast

import numba
import numpy as np

if TYPE_CHECKING:
    import numpy.typing as npt

    Ints = npt.NDArray[np.int64]
    Bytes = npt.NDArray[np.uint8]

F = TypeVar("F", bound=Callable[..., Any])

_FNV_OFFSET = np.uint64(0xCBF29CE484222325)
_FNV_PRIME = np.uint64(0x100000001B3)
#: 10^0 .. 10^15, each exact in float64.
_POWERS = np.array([10.0**k for k in range(16)], dtype=np.float64)


def load_target() -> None:
    """Load numba's CPU target (its implementations of Python and numpy), which
    the first kernel call would otherwise load: ``trec._load_kernels`` calls
    this while it keeps ``scipy.linalg`` from being imported for nothing. A numba
    whose internals moved skips the early load (the first call loads the target,
    scipy and all): the results are the same, only the start-up is not trimmed."""
    try:
        from numba.core.registry import cpu_target

        cpu_target.target_context.refresh()
    except (ImportError, AttributeError):
        return


def _jit(function: F) -> F:
    """Compile with numba: no Python objects, GIL released, cached on disk."""
    return cast("F", numba.njit(cache=True, nogil=True)(function))


@_jit
def measure(
    buf: Bytes, fields: int, wanted: Ints, extra: bool
) -> tuple[int, Ints, int, int, int, int]:
    """Check the lines of ``buf`` and size the columns: one pass, nothing stored.

    Bytes <= 32 separate tokens; a newline (or the end of ``buf``) ends a
    line. Returns ``(records, widths, bad, count, start, end)``: the lines
    with tokens, the longest token of each ``wanted`` column, and ``bad`` -1,
    or the 0-based index (blank lines included) of the first line whose
    number of tokens is neither 0 nor ``fields`` (with ``extra``: neither 0
    nor at least ``fields``; tokens past ``fields`` are ignored), with that
    number and the line's start and end offsets.
    """
    widths = np.zeros(wanted.size, dtype=np.int64)
    slot = np.full(fields + 1, -1, dtype=np.int64)
    for w in range(wanted.size):
        slot[wanted[w]] = w
    records = 0
    line = 0
    line_start = 0
    count = 0
    i = 0
    n = buf.size
    while i <= n:
        c = buf[i] if i < n else 10
        if c == 10:
            if count != 0 and (count < fields if extra else count != fields):
                return records, widths, line, count, line_start, i
            if count != 0:
                records += 1
            count = 0
            line += 1
            i += 1
            line_start = i
        elif c <= 32:
            i += 1
        else:
            start = i
            while i < n and buf[i] > 32:
                i += 1
            w = slot[min(count, fields)]
            if w >= 0:
                widths[w] = max(widths[w], i - start)
            count += 1
    return records, widths, -1, 0, 0, 0


@_jit
def _decimal(buf: Bytes, i: int, end: int) -> tuple[float, bool]:
    """``-?digits[.digits]`` of 1-15 digits (the dot anywhere) as the float
    strtod gives: the mantissa, exact, over a power of ten, exact, one
    correctly rounded division. ``False`` for any other spelling."""
    negative = buf[i] == 45
    if negative:
        i += 1
    mantissa = 0
    digits = 0
    dots = 0
    after = 0
    while i < end:
        c = buf[i]
        if 48 <= c <= 57:
            mantissa = mantissa * 10 + (c - 48)
            digits += 1
            after += dots
        elif c == 46 and dots == 0:
            dots = 1
        else:
            return 0.0, False
        i += 1
    if digits == 0 or digits > 15:
        return 0.0, False
    value = mantissa / _POWERS[after]
    return (-value if negative else value), True


@_jit
def _integer(buf: Bytes, i: int, end: int) -> tuple[int, bool]:
    """``-?digits`` of 1-18 digits; ``False`` for any other spelling."""
    negative = buf[i] == 45
    if negative:
        i += 1
    if i == end or end - i > 18:
        return 0, False
    value = 0
    while i < end:
        c = buf[i]
        if c < 48 or c > 57:
            return 0, False
        value = value * 10 + (c - 48)
        i += 1
    return (-value if negative else value), True


@_jit
def fill(
    buf: Bytes,
    fields: int,
    wanted: Ints,
    first: Bytes,
    second: Bytes,
    floats: npt.NDArray[np.float64],
    ints: Ints,
) -> bool:
    """Copy the tokens of columns ``wanted[0]`` and ``wanted[1]`` of each line
    (checked by ``measure``) into the rows of ``first`` and ``second``
    (zeroed, wide enough) and parse column ``wanted[2]`` into ``floats`` (one
    per line) as a decimal, or else into ``ints`` as an integer. False when a
    value needs the general parser. The caller allocates every output: numpy
    asks the kernel for huge pages, which numba's allocator does not."""
    decimal = floats.size > 0
    plain = True
    record = 0
    count = 0
    i = 0
    n = buf.size
    while i < n:
        c = buf[i]
        if c == 10:
            if count:
                record += 1
            count = 0
            i += 1
        elif c <= 32:
            i += 1
        else:
            start = i
            while i < n and buf[i] > 32:
                i += 1
            if count == wanted[0]:
                for j in range(i - start):
                    first[record, j] = buf[start + j]
            elif count == wanted[1]:
                for j in range(i - start):
                    second[record, j] = buf[start + j]
            elif count == wanted[2] and plain:
                if decimal:
                    value, plain = _decimal(buf, start, i)
                    floats[record] = value
                else:
                    number, plain = _integer(buf, start, i)
                    ints[record] = number
            count += 1
    return plain


@_jit
def spans(buf: Bytes, column: int, records: int) -> tuple[Ints, Ints, Ints]:
    """Start and end offsets of column ``column``'s token of each line, and
    the offset of each line's first token (for error messages)."""
    starts = np.empty(records, dtype=np.int64)
    ends = np.empty(records, dtype=np.int64)
    lines = np.empty(records, dtype=np.int64)
    record = 0
    count = 0
    i = 0
    n = buf.size
    while i < n:
        c = buf[i]
        if c == 10:
            if count:
                record += 1
            count = 0
            i += 1
        elif c <= 32:
            i += 1
        else:
            start = i
            while i < n and buf[i] > 32:
                i += 1
            if count == 0:
                lines[record] = start
            if count == column:
                starts[record] = start
                ends[record] = i
            count += 1
    return starts, ends, lines


@_jit
def heads(matrix: Bytes) -> Ints:
    """Indices of the rows that differ from the row before (always row 0)."""
    n, width = matrix.shape
    out = np.empty(n, dtype=np.int64)
    count = 0
    for r in range(n):
        if r == 0:
            out[count] = r
            count += 1
            continue
        for k in range(width):
            if matrix[r, k] != matrix[r - 1, k]:
                out[count] = r
                count += 1
                break
    found: Ints = out[:count].copy()
    return found


@_jit
def _mix_word(value: np.uint64, word: np.uint64) -> np.uint64:
    mixed: np.uint64 = (value ^ word) * _FNV_PRIME
    mixed ^= mixed >> np.uint64(29)
    return mixed


@_jit
def _hash_row(matrix: Bytes, row: int) -> np.uint64:
    """FNV-1a over the id's 8-byte words (little-endian, the last one
    NUL-padded), stopping at the first all-NUL word: ids hold no NUL, so
    the hash is the same whatever the matrix's width."""
    value: np.uint64 = _FNV_OFFSET
    width = matrix.shape[1]
    whole = width // 8
    b = matrix[row]
    for j in range(0, 8 * whole, 8):
        word: np.uint64 = (
            np.uint64(b[j])
            | (np.uint64(b[j + 1]) << 8)
            | (np.uint64(b[j + 2]) << 16)
            | (np.uint64(b[j + 3]) << 24)
            | (np.uint64(b[j + 4]) << 32)
            | (np.uint64(b[j + 5]) << 40)
            | (np.uint64(b[j + 6]) << 48)
            | (np.uint64(b[j + 7]) << 56)
        )
        if word == 0:
            return value
        value = _mix_word(value, word)
    last: np.uint64 = np.uint64(0)
    for k in range(width - 8 * whole):
        last |= np.uint64(b[8 * whole + k]) << np.uint64(8 * k)
    return _mix_word(value, last) if last != 0 else value


@_jit
def hash_rows(matrix: Bytes) -> npt.NDArray[np.uint64]:
    """``_hash_row`` of each row: one hash per id, the same at any width."""
    out = np.empty(matrix.shape[0], dtype=np.uint64)
    for r in range(matrix.shape[0]):
        out[r] = _hash_row(matrix, r)
    return out


@_jit
def _same(a: Bytes, i: int, b: Bytes, j: int) -> bool:
    """Whether row ``i`` of ``a`` and row ``j`` of ``b`` hold the same NUL-padded id."""
    wa, wb = a.shape[1], b.shape[1]
    for k in range(min(wa, wb)):
        if a[i, k] != b[j, k]:
            return False
    for k in range(wb, wa):
        if a[i, k] != 0:
            return False
    for k in range(wa, wb):  # noqa: SIM110 - numba compiles loops, not all()
        if b[j, k] != 0:
            return False
    return True


@_jit
def _before(score: npt.NDArray[np.float64], doc: Bytes, a: int, b: int) -> bool:
    """Whether line ``a`` ranks before line ``b``: higher score, then larger id."""
    if score[a] != score[b]:
        return bool(score[a] > score[b])
    for k in range(doc.shape[1]):
        if doc[a, k] != doc[b, k]:
            return bool(doc[a, k] > doc[b, k])
    return False


@_jit
def _sort(
    items: Ints, lines: Ints, score: npt.NDArray[np.float64], doc: Bytes, buffer: Ints
) -> None:
    """Sort ``items`` (indices into ``lines``) in place into rank order of
    their lines (``_before``).

    Runs usually list a query's results in score order, with only tied
    neighbours out of place: an insertion sort finishes those in linear time.
    When it has moved more than a few items per line it stops, and a
    bottom-up merge sort (``buffer`` at least as large) finishes the job.
    """
    n = items.size
    budget = 4 * n + 16
    for i in range(1, n):
        item = items[i]
        j = i - 1
        while j >= 0 and _before(score, doc, lines[item], lines[items[j]]):
            items[j + 1] = items[j]
            j -= 1
            budget -= 1
        items[j + 1] = item
        if budget < 0:
            break
    if budget >= 0:
        return
    width = 1
    while width < n:
        for lo in range(0, n, 2 * width):
            mid = min(lo + width, n)
            hi = min(lo + 2 * width, n)
            i, j, k = lo, mid, lo
            while i < mid and j < hi:
                if _before(score, doc, lines[items[j]], lines[items[i]]):
                    buffer[k] = items[j]
                    j += 1
                else:
                    buffer[k] = items[i]
                    i += 1
                k += 1
            while i < mid:
                buffer[k] = items[i]
                i += 1
                k += 1
            while j < hi:
                buffer[k] = items[j]
                j += 1
                k += 1
        items[:] = buffer[:n]
        width *= 2


@_jit
def rank(
    row_bounds: Ints,
    block_starts: Ints,
    block_ends: Ints,
    score: npt.NDArray[np.float64],
    doc: Bytes,
    judged_bounds: Ints,
    judged_key: npt.NDArray[np.uint64],
    row_bits: int,
    judged_doc: Ints,
    judged_grade: Ints,
    qrels_doc: Bytes,
    grades: Ints,
    judged: npt.NDArray[np.bool_],
) -> Ints:
    """Fill the grade and judged matrices (zeroed, a row per query, as wide as
    the row with the most lines) and return the results retrieved per row.

    Row ``r``'s run lines are those of blocks ``row_bounds[r]:row_bounds[r +
    1]``, block ``b`` being lines ``block_starts[b]:block_ends[b]`` (``score``
    and the rows of ``doc`` are indexed by line; blocks in file order). Its
    judgments are entries ``judged_bounds[r]:judged_bounds[r + 1]`` of
    ``judged_*``, one per document, sorted by ``judged_key``: the row in the
    top ``row_bits`` bits, then the top bits of the ``hash_rows`` of the
    document (``qrels_doc[judged_doc]``); a key match is confirmed on the
    bytes.
    """
    row_shift = np.uint64(64 - row_bits)
    hash_shift = np.uint64(row_bits)
    rows = row_bounds.size - 1
    longest = grades.shape[1]
    retrieved = np.zeros(rows, dtype=np.int64)
    kept = np.empty(longest, dtype=np.int64)
    buffer = np.empty(longest, dtype=np.int64)
    hashes = np.empty(longest, dtype=np.uint64)
    positions = np.empty(longest, dtype=np.int64)
    size = 16
    while size < 2 * longest:
        size *= 2
    table = np.full(size, -1, dtype=np.int64)
    for r in range(rows):
        lines = 0
        for b in range(row_bounds[r], row_bounds[r + 1]):
            lines += block_ends[b] - block_starts[b]
        # first occurrence of each document wins (open addressing on its hash)
        slots = 16
        while slots < 2 * lines:
            slots *= 2
        mask = np.uint64(slots - 1)
        table[:slots] = -1
        count = 0
        for b in range(row_bounds[r], row_bounds[r + 1]):
            for i in range(block_starts[b], block_ends[b]):
                h = _hash_row(doc, i)
                s = h & mask
                duplicate = False
                while table[s] >= 0:
                    other = table[s]
                    if hashes[other] == h and _same(doc, i, doc, kept[other]):
                        duplicate = True
                        break
                    s = (s + np.uint64(1)) & mask
                if not duplicate:
                    table[s] = count
                    kept[count] = i
                    hashes[count] = h
                    count += 1
        ordered = positions[:count]
        for p in range(count):
            ordered[p] = p
        _sort(ordered, kept, score, doc, buffer)
        retrieved[r] = count
        j_lo, j_hi = judged_bounds[r], judged_bounds[r + 1]
        if j_lo == j_hi:
            continue
        for p in range(count):
            h = (np.uint64(r) << row_shift) | (hashes[ordered[p]] >> hash_shift)
            line = kept[ordered[p]]
            a, z = j_lo, j_hi
            while a < z:
                m = (a + z) // 2
                if judged_key[m] < h:
                    a = m + 1
                else:
                    z = m
            while a < j_hi and judged_key[a] == h:
                if _same(doc, line, qrels_doc, judged_doc[a]):
                    grades[r, p] = judged_grade[a]
                    judged[r, p] = True
                    break
                a += 1
    return retrieved

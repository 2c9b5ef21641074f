"""TREC qrels and run files: a vectorised reader, a writer, and evaluation.

Formats (whitespace-separated, one record per line, blank lines ignored):

* qrels: ``query iteration document grade`` (grade an integer, e.g. 0-3)
* run:   ``query Q0 document rank score tag`` (the rank column is ignored;
  trec_eval orders by score, ties by document id descending). As in
  trec_eval, fields after the tag are ignored: a run line has at least six.

The reader never builds a Python object per line: a file is read in blocks
of whole lines, tokenised with numpy on the raw bytes, and its columns become
fixed-width byte-string and number arrays. A line with the wrong number of
fields (a qrels line other than four, a run line fewer than six), a grade
that is not an integer or a score that is not a number is an ``InputError``
naming the file and the line.

Two code paths give identical results (tests run both). With numba installed
(optional: ``pip install 'ragsnap[fast]'``), inputs of at least
``COMPILED_FROM`` bytes use the compiled kernels of
``trec_kernels``: a file is mapped into memory and read in two passes
straight into the final arrays, and the rankings are built query by query,
each query's lines and judgments together, so every step is linear in the
run's size and single-threaded. Otherwise numpy does the same work on whole
columns; its joins and sorts over the whole run touch memory at random, so
its time grows somewhat faster than the run once the run's arrays no longer
fit in the CPU caches.

``rankings_from_trec`` (and ``evaluate_files``) joins the two: which queries
become rows is a query-set rule of ``metrics`` (``QUERY_SETS``), passed by
name: ``"ragsnap"`` by default (judged queries with a relevant document),
``"trec"`` for trec_eval's own (judged queries in the run) or ``"complete"``
for trec_eval ``-c`` (every judged query). A query judged in the qrels is one
with at least one line there; a query in the run, one with at least one line
in the run.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, BinaryIO

from ..errors import InputError, OutputError
from .metrics import DEFAULT_TREC_EVAL, Measure, Rankings, evaluate, query_set_rule

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    _Columns = tuple[list[npt.NDArray[np.bytes_]], npt.NDArray[np.generic]]

__all__ = [
    "TrecQrels",
    "TrecRun",
    "compiled_for",
    "evaluate_files",
    "format_qrels",
    "format_run",
    "rankings_from_trec",
    "read_qrels",
    "read_run",
    "read_run_tag",
    "write_qrels",
    "write_run",
]

_BLOCK = 32 * 1024 * 1024  # bytes of whole lines tokenised at once

#: Inputs of at least this many bytes use the compiled kernels (``trec_kernels``)
#: when numba is installed; smaller ones take the numpy code, which is faster
#: there once loading numba (about 0.3-0.5 s of CPU in a fresh process) is
#: counted. ``evaluate_files`` (``ragsnap metrics``) decides once, from the two
#: files' sizes on disk, before reading either; ``read_qrels``, ``read_run``
#: and ``rankings_from_trec`` called alone decide from their own input's bytes
#: (a file's size, the run's columns). None: never. The results are the same.
#: Measured in whole processes (benchmarks/README.md, metrics_vs_peers).
COMPILED_FROM: int | None = 32 << 20


def _kernels(size: int) -> ModuleType | None:
    """The compiled kernels for an input of ``size`` bytes, or None for the
    numpy code (numba missing, or the input below ``COMPILED_FROM``)."""
    if COMPILED_FROM is None or size < COMPILED_FROM:
        return None
    return _load_kernels()


def _load_kernels() -> ModuleType | None:
    """``trec_kernels``, loaded, or None when numba is missing.

    numba's first kernel load imports its whole CPU target, and with it
    ``scipy.linalg`` (about a third of the load's CPU time), only to learn
    whether ``np.convolve`` / ``np.correlate`` may call BLAS. None of these
    kernels uses BLAS, so when scipy is not already imported that one import
    is refused while the target loads (numba then uses its own loop for those
    two functions; ``np.dot`` and the rest still import scipy when compiled).
    Only in a process with one thread: another could be importing scipy.
    """
    import sys
    import threading

    if "ragsnap.ir.trec_kernels" in sys.modules:
        return sys.modules["ragsnap.ir.trec_kernels"]
    blas = "scipy.linalg.cython_blas"
    block = blas not in sys.modules and threading.active_count() == 1
    if block:
        sys.modules[blas] = None  # type: ignore[assignment]  # import fails at once
    try:
        from . import trec_kernels

        trec_kernels.load_target()
    except ImportError:  # numba is optional: pip install 'ragsnap[fast]'
        return None
    finally:
        if block and sys.modules.get(blas, 0) is None:
            del sys.modules[blas]
    return trec_kernels


def _file_bytes(path: Path) -> int | None:
    """The size of a regular file; None for a pipe or what cannot be read (the
    reader then says what is wrong)."""
    try:
        info = path.stat()
    except OSError:
        return None
    return info.st_size if stat.S_ISREG(info.st_mode) else None


@dataclass(frozen=True, slots=True)
class TrecQrels:
    """Columns of a qrels file (byte strings for ids)."""

    query: npt.NDArray[np.bytes_]
    doc: npt.NDArray[np.bytes_]
    grade: npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class TrecRun:
    """Columns of a run file (byte strings for ids)."""

    query: npt.NDArray[np.bytes_]
    doc: npt.NDArray[np.bytes_]
    score: npt.NDArray[np.float64]


def _open(path: Path) -> BinaryIO:
    """``path`` opened for reading bytes; an ``InputError`` when it cannot be."""
    try:
        return path.open("rb")
    except FileNotFoundError:
        raise InputError(path, "file not found", "pass the path of an existing file") from None
    except OSError as exc:
        raise InputError(path, f"cannot be read ({exc.strerror})", "check the path") from None


def _blocks(path: Path) -> Iterator[tuple[memoryview, int]]:
    """Yield (block of whole lines, the block's byte offset in the file).

    A block ends at its last newline; the partial line after it is read again
    with the next block (a seek back), so no block is ever copied to be joined.
    """
    offset = 0
    with _open(path) as handle:
        while True:
            chunk = handle.read(_BLOCK)
            if not chunk:
                return
            cut = chunk.rfind(b"\n") + 1
            if cut == 0:  # a line longer than a block, or the last line without a newline
                more = handle.read()
                chunk += more
                cut = chunk.find(b"\n") + 1 if more else 0
                if cut == 0:
                    yield memoryview(chunk + b"\n"), offset
                    return
            yield memoryview(chunk)[:cut], offset
            offset += cut
            if cut < len(chunk):
                handle.seek(offset)


def _line_number(path: Path, offset: int) -> int:
    """1-based number of the line that starts at byte ``offset`` (errors only)."""
    with path.open("rb") as handle:
        return handle.read(offset).count(b"\n") + 1


def _tokenise(
    block: memoryview, fields: int, path: Path, offset: int, extra: bool = False
) -> tuple[npt.NDArray[np.uint8], list[tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]]]:
    """Token (start, end) offsets of each of the first ``fields`` columns of a
    block of whole lines; with ``extra``, a line may have more (ignored)."""
    import numpy as np

    buf = np.frombuffer(block, dtype=np.uint8)
    space = buf <= 32
    edges = np.flatnonzero(np.diff(np.concatenate(([True], space, [True])).view(np.int8)))
    starts, ends = edges[0::2], edges[1::2]
    newlines = np.flatnonzero(buf == 10)
    counts = np.diff(np.concatenate(([0], np.searchsorted(starts, newlines))))
    bad = np.flatnonzero((counts != 0) & ((counts < fields) if extra else (counts != fields)))
    if bad.size:
        first = int(bad[0])
        text = bytes(block[(newlines[first - 1] + 1 if first else 0) : newlines[first]])
        raise _fields_error(path, offset, first, int(counts[first]), fields, text, extra)
    if not extra or bool(np.all((counts == 0) | (counts == fields))):
        return buf, [(starts[c::fields], ends[c::fields]) for c in range(fields)]
    heads = (np.cumsum(counts) - counts)[counts > 0]  # each line's first token
    return buf, [(starts[heads + c], ends[heads + c]) for c in range(fields)]


def _fields_error(
    path: Path, offset: int, line: int, count: int, fields: int, text: bytes, extra: bool = False
) -> InputError:
    """The error for line ``line`` (0-based, in the block at ``offset``) of ``count`` fields."""
    expected = f"at least {fields}" if extra else str(fields)
    return InputError(
        path,
        f"line {_line_number(path, offset) + line} has {count} fields, "
        f"expected {expected}: {text.decode('utf-8', 'replace')[:80]!r}",
        "fix or remove that line",
    )


def _strings(
    buf: npt.NDArray[np.uint8], span: tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]
) -> npt.NDArray[np.bytes_]:
    """Gather tokens into a fixed-width byte-string array."""
    import numpy as np

    starts, ends = span
    if starts.size == 0:
        return np.zeros(0, dtype="S1")
    lengths = ends - starts
    width = int(lengths.max())
    padded = np.concatenate((buf, np.zeros(width, dtype=np.uint8)))
    windows = np.lib.stride_tricks.as_strided(padded, shape=(buf.size, width), strides=(1, 1))
    matrix = windows[starts]  # copies `width` bytes per token, no index matrix
    matrix *= np.arange(width) < lengths[:, None]
    return matrix.view(f"S{width}").ravel()


def _numbers(
    values: npt.NDArray[np.bytes_],
    dtype: type,
    path: Path,
    offset: int,
    buf: npt.NDArray[np.uint8],
    line_starts: npt.NDArray[np.int64],
    what: str,
) -> npt.NDArray[np.generic]:
    """Convert a column; on failure, find the first bad value and its line."""
    import numpy as np

    if dtype is np.float64:
        fast = _plain_decimals(values)
        if fast is not None:
            return fast
    try:
        converted: npt.NDArray[np.generic] = values.astype(dtype)
        if dtype is np.float64 and np.isnan(converted).any():
            raise ValueError("nan")  # a score that cannot be ordered
        return converted
    except (ValueError, OverflowError):
        newlines = np.flatnonzero(buf == 10)
        lines = np.searchsorted(newlines, line_starts) + _line_number(path, offset)
        for value, line in zip(values, lines, strict=True):
            try:
                one: npt.NDArray[np.generic] = np.array([value]).astype(dtype)
                if dtype is np.float64 and np.isnan(one).any():
                    raise ValueError("nan")
            except (ValueError, OverflowError):
                kind = "an integer" if dtype is np.int64 else "a number"
                raise InputError(
                    path,
                    f"line {line}: {what} {value.decode('utf-8', 'replace')!r} is not {kind}",
                    "fix or remove that line",
                ) from None
        raise  # pragma: no cover - numpy refused a value Python accepts


def _read(
    path: Path,
    fields: int,
    columns: Sequence[int],
    numeric: tuple[int, type, str],
    extra: bool = False,
    compiled: bool | None = None,
) -> tuple[list[npt.NDArray[np.bytes_]], npt.NDArray[np.generic]]:
    """The file's columns; ``compiled`` True/False picks the code path (the
    kernels only when numba is installed), None decides by the file's size."""
    import numpy as np

    size = _file_bytes(path)  # a regular file can be mapped; a pipe is read in blocks, once
    if size:
        kernels = _kernels(size) if compiled is None else _load_kernels() if compiled else None
        if kernels is not None:
            return _read_compiled(kernels, path, fields, columns, numeric, extra)

    def columns_of(item: tuple[memoryview, int]) -> _Columns:
        block, offset = item
        buf, spans = _tokenise(block, fields, path, offset, extra)
        strings = [_strings(buf, spans[column]) for column in columns]
        raw = _strings(buf, spans[numeric[0]])
        return strings, _numbers(raw, numeric[1], path, offset, buf, spans[0][0], numeric[2])

    from concurrent.futures import ThreadPoolExecutor

    # numpy releases the GIL in the heavy steps: two threads read two blocks at once
    with ThreadPoolExecutor(max_workers=min(2, os.cpu_count() or 1)) as pool:
        results = list(pool.map(columns_of, _blocks(path)))
    if not results:
        empty = [np.zeros(0, dtype="S1") for _ in columns]
        return empty, np.zeros(0, dtype=numeric[1])
    strings = [np.concatenate([r[0][slot] for r in results]) for slot in range(len(columns))]
    return strings, np.concatenate([r[1] for r in results])


def _read_compiled(
    kernels: ModuleType,
    path: Path,
    fields: int,
    columns: Sequence[int],
    numeric: tuple[int, type, str],
    extra: bool = False,
) -> _Columns:
    """``_read`` by the compiled kernels (same results): the file is mapped into
    memory, checked and sized in one pass, and its columns filled in another,
    straight into the final arrays."""
    import mmap

    import numpy as np

    column, dtype, what = numeric
    with _open(path) as handle:  # the map stays open until its last view is freed
        buf = np.frombuffer(mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ), np.uint8)
    wanted = np.array([*columns, column], dtype=np.int64)
    records, widths, bad, count, start, end = kernels.measure(buf, fields, wanted, extra)
    if bad >= 0:
        raise _fields_error(path, 0, bad, count, fields, bytes(buf[start:end]), extra)
    first = np.zeros((records, max(int(widths[0]), 1)), dtype=np.uint8)
    second = np.zeros((records, max(int(widths[1]), 1)), dtype=np.uint8)
    decimal = dtype is np.float64
    floats = np.empty(records if decimal else 0, dtype=np.float64)
    ints = np.empty(0 if decimal else records, dtype=np.int64)
    plain = kernels.fill(buf, fields, wanted, first, second, floats, ints)
    values: npt.NDArray[np.generic] = floats if decimal else ints
    if not plain:  # other spellings (1e-05, inf, +3 ...): numpy parses the column
        starts, ends, line_starts = kernels.spans(buf, column, records)
        raw = _strings(buf, (starts, ends))
        values = _numbers(raw, dtype, path, 0, buf, line_starts, what)
    strings = [m.view(f"S{m.shape[1]}").ravel() for m in (first, second)]
    return strings, values


def _plain_decimals(values: npt.NDArray[np.bytes_]) -> npt.NDArray[np.float64] | None:
    """Parse plain decimals (``-12.345``, at most 15 digits) without strtod.

    The digits form an integer mantissa below 2^53 and the result is that
    mantissa divided by a power of ten below 10^16, both exact in float64, so
    the one correctly rounded division gives the same float as strtod would.
    Returns None when any value is not such a decimal (exponents, ``inf``,
    more digits): the caller then lets numpy parse them all.
    """
    import numpy as np

    n, width = values.size, values.dtype.itemsize
    if n == 0:
        return np.zeros(0, dtype=np.float64)
    chars = values.view(np.uint8).reshape(n, width)
    digit = (chars >= 48) & (chars <= 57)
    dot = chars == 46
    negative = chars[:, 0] == 45
    allowed = digit | dot | (chars == 0)
    allowed[:, 0] |= negative
    count = digit.sum(axis=1)
    if not allowed.all() or (dot.sum(axis=1) > 1).any() or (count == 0).any() or count.max() > 15:
        return None
    mantissa = np.zeros(n, dtype=np.int64)
    for column in range(width):
        mantissa = np.where(digit[:, column], mantissa * 10 + (chars[:, column] - 48), mantissa)
    after_dot = np.cumsum(dot, axis=1) > 0
    scale = 10.0 ** (digit & after_dot).sum(axis=1)
    result: npt.NDArray[np.float64] = mantissa / scale
    result[negative] *= -1.0
    return result


def read_qrels(path: Path, *, compiled: bool | None = None) -> TrecQrels:
    """Read a TREC qrels file (``query iteration document grade``). ``compiled``:
    the code path (same results), by default chosen by the file's size."""
    import numpy as np

    (query, doc), grade = _read(path, 4, (0, 2), (3, np.int64, "grade"), compiled=compiled)
    return TrecQrels(query, doc, grade.astype(np.int64, copy=False))


def read_run(path: Path, *, compiled: bool | None = None) -> TrecRun:
    """Read a TREC run file (``query Q0 document rank score tag``; fields after
    the tag are ignored, as trec_eval ignores them). ``compiled``: the code path
    (same results), by default chosen by the file's size."""
    import numpy as np

    (query, doc), score = _read(
        path, 6, (0, 2), (4, np.float64, "score"), extra=True, compiled=compiled
    )
    return TrecRun(query, doc, score.astype(np.float64, copy=False))


def read_run_tag(path: Path) -> str:
    """The tag (sixth field) of the run's last line with fields: trec_eval's
    ``runid``; empty for a run without lines. Reads the file from its end."""
    step = 1 << 16
    with _open(path) as handle:
        end = handle.seek(0, 2)
        tail = b""
        while True:
            start = max(0, end - step)
            handle.seek(start)
            tail = handle.read(end - start) + tail
            lines = tail.split(b"\n")
            # the first piece may be a partial line unless the file starts there
            for line in reversed(lines if start == 0 else lines[1:]):
                fields = line.split()
                if fields:
                    return fields[5].decode("utf-8", "backslashreplace") if len(fields) > 5 else ""
            if start == 0:
                return ""
            end = start
            tail = lines[0]


def _intern(values: npt.NDArray[np.bytes_]) -> tuple[npt.NDArray[np.bytes_], npt.NDArray[np.int64]]:
    """Sorted unique values and each value's index among them.

    Files list one query's lines together, so only the first value of each
    run of equal neighbours is looked up: far fewer than one per line.
    """
    import numpy as np

    if values.size == 0:
        return values, np.zeros(0, dtype=np.int64)
    change = np.empty(values.size, dtype=bool)
    change[0] = True
    np.not_equal(values[1:], values[:-1], out=change[1:])
    heads = np.flatnonzero(change)
    unique, head_codes = np.unique(values[heads], return_inverse=True)
    lengths = np.diff(np.append(heads, values.size))
    return unique, np.repeat(head_codes.astype(np.int64), lengths)


def _mix(query: npt.NDArray[np.int64], doc_hash: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    """A 64-bit hash of (query code, document hash) pairs (splitmix64 finaliser)."""
    import numpy as np

    x: npt.NDArray[np.uint64] = doc_hash ^ (query.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15))
    x ^= x >> np.uint64(30)
    x *= np.uint64(0xBF58476D1CE4E5B9)
    x ^= x >> np.uint64(27)
    x *= np.uint64(0x94D049BB133111EB)
    x ^= x >> np.uint64(31)
    return x


def _unique_pairs(
    query: npt.NDArray[np.int64], doc_hash: npt.NDArray[np.uint64], doc: npt.NDArray[np.bytes_]
) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.int64]]:
    """Sorted unique pair hashes and, for each, the index of its first judgment.

    Two different pairs with one hash would be merged; that is checked, and
    then ragsnap stops rather than score with a wrong judgment.
    """
    import numpy as np

    pairs, first, inverse = np.unique(_mix(query, doc_hash), return_index=True, return_inverse=True)
    same = first[inverse]
    if not (np.array_equal(query[same], query) and np.array_equal(doc[same], doc)):
        raise AssertionError("64-bit hash collision between two judgments; please report it")
    return pairs, first.astype(np.int64)


def _join(
    table: npt.NDArray[np.uint64], values: npt.NDArray[np.uint64]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Positions of ``values`` found in the sorted ``table``, and where they are.

    A one-hash Bloom filter first drops most values (most retrieved documents
    are unjudged), so only a few are binary-searched.
    """
    import numpy as np

    if table.size == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    bits = 1 << min(max(int(table.size * 16).bit_length(), 10), 27)
    mask = np.uint64(bits - 1)
    present = np.zeros(bits, dtype=bool)
    present[table & mask] = True
    maybe = np.flatnonzero(present[values & mask])
    slot = np.minimum(np.searchsorted(table, values[maybe]), table.size - 1)
    found = table[slot] == values[maybe]
    return maybe[found], slot[found]


def _hash(values: npt.NDArray[np.bytes_], words: int) -> npt.NDArray[np.uint64]:
    """A 64-bit FNV-style hash of each byte string, read as ``words`` 8-byte words
    (exact when that is one word). Arrays hashed with the same ``words`` agree
    whatever their own widths."""
    import numpy as np

    hashed = np.empty(values.size, dtype=np.uint64)
    step = 1 << 20  # bounded temporaries for long ids
    for start in range(0, values.size, step):
        keys = _order_keys(values[start : start + step], words)
        part = keys[0].copy()
        if len(keys) > 1:
            part[:] = 0xCBF29CE484222325
            for word in keys:
                part = (part ^ word) * np.uint64(0x100000001B3)
        hashed[start : start + step] = part
    return hashed


def _words(*arrays: npt.NDArray[np.bytes_]) -> int:
    """8-byte words needed for the widest of ``arrays``."""
    return max(-(-a.dtype.itemsize // 8) for a in arrays)


def _order_keys(doc: npt.NDArray[np.bytes_], words: int = 0) -> list[npt.NDArray[np.uint64]]:
    """Unsigned integers whose order is the byte order of ``doc`` (8 bytes a word)."""
    import numpy as np

    words = max(words, _words(doc))
    padded = doc.astype(f"S{words * 8}").view(">u8").reshape(-1, words)
    return [padded[:, w].astype(np.uint64) for w in range(words)]


def rankings_from_trec(
    qrels: TrecQrels,
    run: TrecRun,
    query_set: str = "ragsnap",
    relevance_level: int = 1,
    *,
    compiled: bool | None = None,
) -> Rankings:
    """Rankings of the queries that ``query_set`` keeps (see ``metrics``): by
    default every judged query with a relevant document; ``"trec"`` for
    trec_eval's judged queries in the run, ``"complete"`` for trec_eval -c. A
    grade of at least ``relevance_level`` is relevant (trec_eval ``-l``).
    ``compiled``: the code path (same results), by default chosen by the size
    of the run's columns."""
    import numpy as np

    rule = query_set_rule(query_set)
    # the run's queries: one per line, or (compiled) one per block of lines of a query
    if compiled is None:
        kernels = _kernels(run.query.nbytes + run.doc.nbytes + run.score.nbytes)
    else:
        kernels = _load_kernels() if compiled else None
    heads = None if kernels is None else kernels.heads(_byte_matrix(run.query))
    blocks = run.query if heads is None else run.query[heads]
    names, codes = _intern(np.concatenate([blocks, qrels.query]))
    run_q, judged_q = codes[: blocks.size], codes[blocks.size :]
    n_queries = names.size

    # qrels: first judgment of each (query, document) wins; pairs are joined by a
    # 64-bit hash and every match is confirmed on the strings themselves
    words = _words(qrels.doc, run.doc)
    judged_hash = _hash(qrels.doc, words)
    pairs, first = _unique_pairs(judged_q, judged_hash, qrels.doc)
    grades = qrels.grade[first]
    key_q = judged_q[first]
    level = relevance_level
    num_rel = np.bincount(key_q, weights=grades >= level, minlength=n_queries).astype(np.int64)
    nonrel = (grades >= 0) & (grades < level)
    num_nonrel = np.bincount(key_q, weights=nonrel, minlength=n_queries).astype(np.int64)
    in_qrels = np.zeros(n_queries, dtype=bool)
    in_qrels[key_q] = True
    in_run = np.zeros(n_queries, dtype=bool)
    in_run[run_q] = True
    is_row = rule.rows(in_qrels, in_run, num_rel > 0)
    evaluated = np.flatnonzero(is_row)
    excluded = np.flatnonzero(in_qrels & ~is_row)
    row_of = np.full(n_queries, -1, dtype=np.int64)
    row_of[evaluated] = np.arange(evaluated.size)

    # the run: only the rows' queries, in trec_eval order, de-duplicated
    if kernels is not None and heads is not None:
        grade_matrix, judged_matrix, retrieved = _compiled_matrices(
            kernels, qrels, run, heads, row_of[run_q], first, grades, row_of[key_q]
        )
    else:
        keep = np.flatnonzero(row_of[run_q] >= 0)
        rows = row_of[run_q[keep]]
        grade_matrix, judged_matrix, retrieved = _matrices(
            qrels, run, rows, keep, evaluated, pairs, first, grades, judged_q, words
        )

    positive = np.flatnonzero((grades > 0) & (row_of[key_q] >= 0))
    p_rows = row_of[key_q[positive]]
    p_order = np.lexsort((-grades[positive], p_rows))
    p_rows, p_grades = p_rows[p_order], grades[positive][p_order]
    p_pos = np.arange(p_rows.size) - np.searchsorted(p_rows, np.arange(evaluated.size))[p_rows]
    ideal = np.zeros((evaluated.size, max(int(p_pos.max(initial=0)) + 1, 1)), dtype=np.int64)
    ideal[p_rows, p_pos] = p_grades

    decode = np.char.decode
    return Rankings(
        query_ids=tuple(decode(names[evaluated], "utf-8", "backslashreplace").tolist()),
        grades=grade_matrix,
        judged=judged_matrix,
        retrieved=retrieved,
        num_rel=num_rel[evaluated],
        num_nonrel=num_nonrel[evaluated],
        ideal=ideal,
        excluded=tuple(decode(names[excluded], "utf-8", "backslashreplace").tolist()),
        relevance_level=level,
    )


def _matrices(
    qrels: TrecQrels,
    run: TrecRun,
    rows: npt.NDArray[np.int64],
    keep: npt.NDArray[np.int64],
    evaluated: npt.NDArray[np.int64],
    pairs: npt.NDArray[np.uint64],
    first: npt.NDArray[np.int64],
    grades: npt.NDArray[np.int64],
    judged_q: npt.NDArray[np.int64],
    words: int,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.bool_], npt.NDArray[np.int64]]:
    """Grade and judged matrices and results retrieved per row, in numpy.

    ``keep`` are the run lines of the rows' queries and ``rows`` their rows;
    ``pairs`` the sorted (query, document) hashes of the judgments, ``first``
    each one's qrels line and ``grades`` its grade. Lines are put in trec_eval
    order and de-duplicated; the document strings are read only where hashes
    cannot decide: ties, duplicates and join hits.
    """
    import numpy as np

    order = _trec_order(rows, run.score[keep], run.doc, keep)
    rows, line = rows[order], keep[order]
    run_pairs = _mix(evaluated[rows], _hash(run.doc, words)[line])
    unique = _first_occurrences(run_pairs, rows, run.doc, line)
    rows, line, run_pairs = rows[unique], line[unique], run_pairs[unique]

    head = np.flatnonzero(np.concatenate(([True], rows[1:] != rows[:-1])))
    position = np.arange(rows.size) - np.repeat(head, np.diff(np.append(head, rows.size)))
    retrieved = np.bincount(rows, minlength=evaluated.size).astype(np.int64)
    width = max(int(retrieved.max(initial=0)), 1)

    hit, slot = _join(pairs, run_pairs)
    source = first[slot]
    exact = (judged_q[source] == evaluated[rows[hit]]) & (qrels.doc[source] == run.doc[line[hit]])
    hit, slot = hit[exact], slot[exact]

    grade_matrix = np.zeros((evaluated.size, width), dtype=np.int64)
    judged_matrix = np.zeros((evaluated.size, width), dtype=bool)
    grade_matrix[rows[hit], position[hit]] = grades[slot]
    judged_matrix[rows[hit], position[hit]] = True
    return grade_matrix, judged_matrix, retrieved


def _byte_matrix(values: npt.NDArray[np.bytes_]) -> npt.NDArray[np.uint8]:
    """A byte-string array as one NUL-padded row of bytes per value (no copy)."""
    import numpy as np

    values = np.ascontiguousarray(values)
    return values.view(np.uint8).reshape(values.size, values.dtype.itemsize)


def _compiled_matrices(
    kernels: ModuleType,
    qrels: TrecQrels,
    run: TrecRun,
    heads: npt.NDArray[np.int64],
    head_rows: npt.NDArray[np.int64],
    first: npt.NDArray[np.int64],
    grades: npt.NDArray[np.int64],
    judged_rows: npt.NDArray[np.int64],
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.bool_], npt.NDArray[np.int64]]:
    """``_matrices`` by the compiled kernels (same results), query by query.

    The run comes as blocks: ``heads`` are the lines that start a block of
    lines of one query and ``head_rows`` each block's row (-1 for none);
    ``judged_rows`` is the row of each judgment of ``first`` (-1 for none;
    every row has one). Each row's blocks are taken in file order and the
    judgments sorted by row, then document hash, so the kernel looks each result up
    among its own query's judgments only: no step is larger than linear.
    """
    import numpy as np

    n_rows = int(judged_rows.max(initial=-1)) + 1
    ends = np.append(heads[1:], run.query.size)
    kept = np.flatnonzero(head_rows >= 0)
    kept = kept[np.argsort(head_rows[kept], kind="stable")]
    row_bounds = np.searchsorted(head_rows[kept], np.arange(n_rows + 1))

    judged = np.flatnonzero(judged_rows >= 0)
    row_bits = max(n_rows.bit_length(), 1)
    doc_hash = kernels.hash_rows(_byte_matrix(qrels.doc))[first[judged]]
    key = (judged_rows[judged].astype(np.uint64) << np.uint64(64 - row_bits)) | (
        doc_hash >> np.uint64(row_bits)
    )
    by_key = np.argsort(key)
    judged, key = judged[by_key], key[by_key]
    judged_bounds = np.searchsorted(judged_rows[judged], np.arange(n_rows + 1))
    # as wide as the row with the most lines (before de-duplication)
    lines = np.concatenate(([0], np.cumsum(ends[kept] - heads[kept])))
    longest = max(int((lines[row_bounds[1:]] - lines[row_bounds[:-1]]).max(initial=0)), 1)
    grade = np.zeros((n_rows, longest), dtype=np.int64)
    judged_matrix = np.zeros((n_rows, longest), dtype=bool)
    retrieved = kernels.rank(
        row_bounds,
        heads[kept],
        ends[kept],
        run.score,
        _byte_matrix(run.doc),
        judged_bounds,
        key,
        row_bits,
        first[judged],
        grades[judged],
        _byte_matrix(qrels.doc),
        grade,
        judged_matrix,
    )
    width = max(int(retrieved.max(initial=0)), 1)
    if grade.shape[1] != width:  # duplicates made every row shorter
        grade, judged_matrix = grade[:, :width].copy(), judged_matrix[:, :width].copy()
    return grade, judged_matrix, retrieved


def _trec_order(
    rows: npt.NDArray[np.int64],
    score: npt.NDArray[np.float64],
    doc: npt.NDArray[np.bytes_],
    line: npt.NDArray[np.int64],
) -> npt.NDArray[np.int64]:
    """Indices that group the rows (each query's results together) and order
    each group by score descending, then document (``doc[line[i]]``) descending.

    Run files usually come grouped by query and sorted by score already; that
    is checked in one pass, and only tied neighbours are then re-ordered: pairs
    by one vectorised comparison, larger tie groups by a sort of their own.
    """
    import numpy as np

    n = rows.size
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    same_row = rows[1:] == rows[:-1]
    heads = rows[np.concatenate(([True], ~same_row))]
    grouped = np.bincount(heads).max(initial=0) <= 1  # one block of lines per query
    if grouped and bool(np.all(~same_row | (score[1:] <= score[:-1]))):
        order = np.arange(n)
    else:
        order = np.argsort(-score, kind="stable")
        order = order[np.argsort(rows[order], kind="stable")]
    r, s = rows[order], score[order]
    tied = np.flatnonzero((r[1:] == r[:-1]) & (s[1:] == s[:-1]))
    if tied.size == 0:
        return order
    in_tie = np.zeros(n, dtype=bool)
    in_tie[tied] = in_tie[tied + 1] = True
    members = np.flatnonzero(in_tie)
    # a tie group is a run of equal (row, score)
    boundary = np.concatenate(([True], (r[1:] != r[:-1]) | (s[1:] != s[:-1])))
    group = np.cumsum(boundary)[members]
    starts = np.flatnonzero(np.concatenate(([True], group[1:] != group[:-1])))
    sizes = np.diff(np.append(starts, members.size))

    first = members[starts[sizes == 2]]
    a, b = order[first], order[first + 1]
    swap = doc[line[a]] < doc[line[b]]
    order[first[swap]], order[first[swap] + 1] = b[swap], a[swap]

    large = np.repeat(sizes > 2, sizes)
    if large.any():
        big = members[large]
        keys = _order_keys(doc[line[order[big]]])
        inverted = [np.iinfo(np.uint64).max - k for k in reversed(keys)]
        order[big] = order[big][np.lexsort((*inverted, group[large]))]
    return order


def _first_occurrences(
    pairs: npt.NDArray[np.uint64],
    rows: npt.NDArray[np.int64],
    doc: npt.NDArray[np.bytes_],
    line: npt.NDArray[np.int64],
) -> npt.NDArray[np.int64]:
    """Positions (in sorted order) to keep: for each (row, document), the one
    that came first in the file (``line`` holds each position's file index, and
    ``doc[line[i]]`` its document).

    The pair hashes are sorted once; only pairs whose hash repeats are compared
    exactly, so a run without duplicates costs one sort.
    """
    import numpy as np

    ordered = np.sort(pairs)
    repeated = ordered[1:][ordered[1:] == ordered[:-1]]
    if repeated.size == 0:
        return np.arange(pairs.size)
    suspects = np.flatnonzero(np.isin(pairs, repeated))
    keys = _order_keys(doc[line[suspects]])
    by_pair = np.lexsort((line[suspects], *reversed(keys), rows[suspects]))
    same = rows[suspects][by_pair][1:] == rows[suspects][by_pair][:-1]
    for word in keys:
        same &= word[by_pair][1:] == word[by_pair][:-1]
    drop = np.zeros(pairs.size, dtype=bool)
    drop[suspects[by_pair[1:][same]]] = True
    return np.flatnonzero(~drop)


def compiled_for(qrels_path: Path, run_path: Path) -> bool | None:
    """Whether ``evaluate_files`` takes the compiled kernels for these files: their
    sizes on disk together reach ``COMPILED_FROM`` (a ``stat`` each; nothing is
    read). None when one is not a regular file (each step then decides alone)."""
    qrels, run = _file_bytes(qrels_path), _file_bytes(run_path)
    if qrels is None or run is None:
        return None
    return COMPILED_FROM is not None and qrels + run >= COMPILED_FROM


def evaluate_files(
    qrels_path: Path,
    run_path: Path,
    measures: Sequence[Measure],
    query_set: str = "ragsnap",
    *,
    relevance_level: int = 1,
    max_retrieved: int | None = None,
    trec_eval: str = DEFAULT_TREC_EVAL,
) -> tuple[Rankings, dict[Measure, npt.NDArray[np.float64]]]:
    """Read both files and evaluate ``measures`` per query (rows by ``query_set``),
    a grade of at least ``relevance_level`` relevant (trec_eval ``-l``), each
    query's results cut to the first ``max_retrieved`` (``-M``), by the
    recall-level rule of ``trec_eval`` 9 or 10.

    The code path is chosen once, before either file is read, from the two
    files' sizes on disk (``COMPILED_FROM``): numba is loaded only when the
    inputs are large enough to repay it. With a pipe among them, each step
    decides from its own input."""
    compiled = compiled_for(qrels_path, run_path)
    qrels = read_qrels(qrels_path, compiled=compiled)
    run = read_run(run_path, compiled=compiled)
    rankings = rankings_from_trec(qrels, run, query_set, relevance_level, compiled=compiled)
    del qrels, run  # the columns are not needed for the measures
    if max_retrieved is not None:
        rankings = rankings.cut(max_retrieved)
    return rankings, evaluate(rankings, measures, trec_eval)


#: what a TREC id must not hold: white space (``str.isspace``, as ``\s`` matches in a
#: str pattern) and control characters
_BAD_ID = re.compile(r"[\s\x00-\x1f]")


def _check_ids(*ids: str) -> None:
    if all(ids) and _BAD_ID.search("".join(ids)) is None:  # one scan for the whole list
        return
    for value in ids:
        if not value or _BAD_ID.search(value):
            raise OutputError(
                f"cannot write {value!r} to a TREC file: TREC ids and tags are non-empty and "
                "contain no white space; rename it in the fixture or golden case"
            )


def format_run(ranked: Mapping[str, Sequence[str]], tag: str = "ragsnap") -> str:
    """Ranked document lists as run text; scores are n - rank + 1 so that
    trec_eval's score ordering reproduces the ranks exactly."""
    lines = []
    for query in sorted(ranked):
        docs = list(dict.fromkeys(ranked[query]))
        _check_ids(tag, query, *docs)
        lines += [f"{query} Q0 {d} {i} {len(docs) - i + 1} {tag}" for i, d in enumerate(docs, 1)]
    return "\n".join(lines) + "\n" if lines else ""


def format_qrels(judgments: Mapping[str, Mapping[str, int]]) -> str:
    """Graded judgments as qrels text, sorted by query and document."""
    for query, graded in judgments.items():
        _check_ids(query, *graded)
    lines = [
        f"{query} 0 {doc} {grade}"
        for query in sorted(judgments)
        for doc, grade in sorted(judgments[query].items())
    ]
    return "\n".join(lines) + "\n" if lines else ""


def write_run(path: Path, ranked: Mapping[str, Sequence[str]], tag: str = "ragsnap") -> None:
    """Write ranked document lists as a run (``format_run``), atomically."""
    from ..io.jsonio import write_text

    write_text(path, format_run(ranked, tag))


def write_qrels(path: Path, judgments: Mapping[str, Mapping[str, int]]) -> None:
    """Write graded judgments as a qrels file (``format_qrels``), atomically."""
    from ..io.jsonio import write_text

    write_text(path, format_qrels(judgments))

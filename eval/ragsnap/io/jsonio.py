"""The one reader and the one writer for every file ragsnap touches.

Reading: bytes must be UTF-8 (a leading byte-order mark is tolerated) and
strict JSON (no NaN, no trailing commas); failures become ``InputError`` with
the file, the line and column, and the fix.

Writing: every output is rendered deterministically (sorted keys, two-space
indent, UTF-8 without escaping, floats rounded to ``FLOAT_DIGITS`` places,
trailing newline) so two runs on the same input are byte-identical, then
written atomically: a temporary file in the destination folder, flushed and
fsynced, renamed over the destination, and the folder fsynced. A symlinked
destination is refused rather than followed.
"""

from __future__ import annotations

import contextlib
import errno
import math
import os
import stat
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson

from ..errors import InputError, OutputError, UsageError
from .reads import Read

__all__ = [
    "FLOAT_DIGITS",
    "AtomicFile",
    "FloatsUnder",
    "FrozenRow",
    "check_outputs",
    "dump_json",
    "parse_json",
    "parse_yaml",
    "read_bytes",
    "read_json",
    "read_yaml",
    "round_floats",
    "write_json",
    "write_outputs",
    "write_text",
]

FLOAT_DIGITS = 6
_BOM = b"\xef\xbb\xbf"
_READ_STEP = 1 << 16


#: the largest input file ragsnap reads whole, by kind (``read_bytes``'s ``kind``)
MAX_INPUT_BYTES = {
    "config": 1 << 20,  # ragsnap.yaml: 1 MiB
    "seed document": 16 << 20,  # one Markdown seed document: 16 MiB
    "fixture": 64 << 20,  # one fixture: 64 MiB (a top-1000 lookup is about 1 MB)
    "file": 1 << 30,  # golden cases, reports, frozen vectors: 1 GiB
}


def read_bytes(path: Path | str, fix: str, *, kind: str = "file") -> bytes:
    """Read a whole input file; ``fix`` says what to do when it is missing.

    Only a regular file is read (a FIFO would block forever, ``/dev/zero``
    never ends), and at most ``MAX_INPUT_BYTES[kind]`` of it: a larger one is
    refused before it is read.
    """
    limit = MAX_INPUT_BYTES[kind]
    name = os.fspath(path)  # os-level calls: pathlib's add up over 10,000 fixtures
    try:
        info = os.stat(name)  # noqa: PTH116 - never blocks, unlike opening a FIFO
    except FileNotFoundError:
        raise InputError(path, "file not found", fix) from None
    except OSError as exc:
        raise InputError(path, f"cannot be read ({exc.strerror})", fix) from None
    if stat.S_ISDIR(info.st_mode):
        raise InputError(path, "is a folder, not a file", fix)
    if not stat.S_ISREG(info.st_mode):
        raise InputError(path, "is not a regular file (a pipe or a device?)", fix)
    if info.st_size > limit:
        raise InputError(
            path,
            f"is {info.st_size:,} bytes, more than the {limit:,} a {kind} may have",
            "split it, or check that this is the file you meant",
        )
    try:
        data = _read_all(name, info.st_size, limit)
    except OSError as exc:
        raise InputError(path, f"cannot be read ({exc.strerror})", fix) from None
    if len(data) > limit:  # it grew while it was read
        raise InputError(path, f"is more than the {limit:,} bytes a {kind} may have", fix)
    return data


def _read_all(name: str, size: int, limit: int) -> bytes:
    """The first ``limit + 1`` bytes of file ``name`` (all of it when shorter), whose
    ``stat`` gave ``size``.

    One ``read`` of ``size + 1`` bytes takes a whole file, and a second, empty one
    confirms the end. A read of n bytes allocates n bytes first, so asking for the
    limit (64 MiB for a fixture) would cost more than parsing the file; only a file
    that grew since its ``stat`` (or a short read) goes on, in 64 KiB steps.
    """
    fd = os.open(name, os.O_RDONLY | getattr(os, "O_BINARY", 0))  # no newline translation
    try:
        data = os.read(fd, size + 1)
        while data and len(data) <= limit:
            more = os.read(fd, min(limit + 1 - len(data), _READ_STEP))
            if not more:
                break
            data += more
    finally:
        os.close(fd)
    return data


def parse_json(raw: bytes, path: Path | str) -> Any:
    """Parse strict UTF-8 JSON, turning every failure into an ``InputError``."""
    if raw.startswith(_BOM):
        raw = raw[len(_BOM) :]
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as uexc:
            line = raw.count(b"\n", 0, uexc.start) + 1
            raise InputError(
                path,
                f"is not UTF-8 (byte 0x{raw[uexc.start]:02x} on line {line})",
                "re-save the file with UTF-8 encoding",
            ) from None
        raise InputError(
            path,
            f"is not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})",
            "fix the JSON syntax (a JSON linter shows the exact spot)",
        ) from None


def read_yaml(path: Path, fix: str, *, kind: str = "config") -> Any:
    """Read and parse a YAML input file (``read_bytes``, then UTF-8, then ``parse_yaml``);
    ``fix`` says what to do when it is missing."""
    raw = read_bytes(path, fix, kind=kind)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(path, "is not UTF-8", "re-save the file with UTF-8 encoding") from None
    return parse_yaml(text, path, "fix the YAML syntax")


def parse_yaml(text: str, path: Path, fix: str, *, subject: str = "", first_line: int = 1) -> Any:
    """Parse YAML ``text`` (safe loader); a failure becomes ``InputError`` reading
    ``<subject>is not valid YAML (...)`` with ``fix`` and the line, counted from
    ``first_line`` (for YAML embedded in a larger file).

    Aliases (``*name``) are refused before anything is built: a chain of them
    expands without bound (a "billion laughs" document of 600 bytes grows to
    gigabytes). So are ``.nan`` and ``.inf``, which no setting or metadata can
    mean; every other value is plain data.
    """
    import yaml

    # libyaml's C loader when PyYAML has it: about 9x faster on seed-doc headers
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        if "*" in text:  # the only way to write an alias; most headers never get here
            for token in yaml.scan(text, Loader=loader):
                if isinstance(token, yaml.AliasToken):
                    raise InputError(
                        path,
                        f"{subject}uses a YAML alias (*{token.value})",
                        "write the value out in full: ragsnap does not expand YAML aliases, "
                        "whose expansion has no bound",
                        f"line {token.start_mark.line + first_line}",
                    )
        data = yaml.load(text, Loader=loader)  # a safe loader either way
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + first_line}" if mark is not None else None
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise InputError(path, f"{subject}is not valid YAML ({problem})", fix, where) from None
    pointer = _non_finite(data, "")
    if pointer is not None:
        raise InputError(
            path,
            f"{subject}holds a number that is not finite (.nan or .inf)",
            "write a finite number",
            pointer or "/",
        )
    return data


def _non_finite(value: Any, pointer: str) -> str | None:
    """The JSON pointer of the first NaN or infinity in ``value``, or None."""
    if isinstance(value, float):
        return None if math.isfinite(value) else pointer
    if isinstance(value, dict):
        items: Any = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return None
    for key, item in items:
        step = str(key).replace("~", "~0").replace("/", "~1")
        found = _non_finite(item, f"{pointer}/{step}")
        if found is not None:
            return found
    return None


def read_json(path: Path, fix: str) -> Any:
    """Read and parse one JSON file; see ``read_bytes`` and ``parse_json``."""
    return parse_json(read_bytes(path, fix), path)


class FloatsUnder(dict[str, Any]):
    """A JSON object whose floats are all under the keys ``float_keys``: ``round_floats``
    rounds only those values and copies the rest as they are, without walking them.

    For a row built in bulk whose shape is known where it is built (a score report's
    10,000 case rows: their only floats are the graded ``metrics``); a test checks each
    such row against that promise."""

    __slots__ = ("float_keys",)

    def __init__(self, items: Mapping[str, Any], float_keys: tuple[str, ...]) -> None:
        super().__init__(items)
        self.float_keys = float_keys

    def __reduce__(self) -> Any:  # copy and pickle as what it is
        return (FloatsUnder, (dict(self), self.float_keys))


class FrozenRow(Mapping[str, Any]):
    """A ``FloatsUnder`` row held compactly: a read-only mapping over one tuple of its
    values and a key tuple shared by every row with the same keys in the same order
    (about 40 % of a 30-key dict's memory). It reads, iterates (in its keys'
    order) and compares as the dict it was made from; its values are that dict's, not
    copied. ``round_floats`` writes it as that ``FloatsUnder`` row.

    For rows held in bulk and only read (``ragsnap score`` keeps its report's 10,000
    case rows so while the baseline is read and diffed); ``of`` makes one."""

    __slots__ = ("_shape", "_values")

    def __init__(
        self, keys: tuple[str, ...], values: tuple[Any, ...], float_keys: tuple[str, ...]
    ) -> None:
        shape = _SHAPES.get((keys, float_keys))
        if shape is None:
            index = {key: at for at, key in enumerate(keys)}
            shape = _SHAPES.setdefault((keys, float_keys), (index, float_keys))
        self._shape = shape
        self._values = values

    @classmethod
    def of(cls, row: FloatsUnder) -> FrozenRow:
        """``row`` as a ``FrozenRow`` (same keys, order, values and float keys)."""
        return cls(tuple(row), tuple(row.values()), row.float_keys)

    @property
    def float_keys(self) -> tuple[str, ...]:
        return self._shape[1]

    def __getitem__(self, key: str) -> Any:
        return self._values[self._shape[0][key]]

    def get(self, key: str, default: Any = None) -> Any:
        at = self._shape[0].get(key)
        return default if at is None else self._values[at]

    def __contains__(self, key: object) -> bool:
        return key in self._shape[0]

    def __iter__(self) -> Iterator[str]:
        return iter(self._shape[0])

    def __len__(self) -> int:
        return len(self._values)

    def to_dict(self) -> FloatsUnder:
        """The ``FloatsUnder`` row this one holds."""
        return FloatsUnder(dict(zip(self._shape[0], self._values, strict=True)), self._shape[1])

    def __repr__(self) -> str:
        return f"FrozenRow({dict(self)!r})"

    def __reduce__(self) -> Any:  # copy and pickle as what it is
        return (FrozenRow, (tuple(self._shape[0]), self._values, self._shape[1]))


#: each ``FrozenRow`` shape (its keys in order, its float keys) with its keys' places:
#: one per shape, shared by every row of that shape
_SHAPES: dict[tuple[tuple[str, ...], tuple[str, ...]], tuple[dict[str, int], tuple[str, ...]]] = {}


def round_floats(value: Any, digits: int = FLOAT_DIGITS) -> Any:
    """Return ``value`` with every float rounded, recursing into mappings, lists
    and tuples (tuples become lists). Exact type checks first: this walks every
    node of a report, so the common cases must stay cheap (strings, integers,
    booleans and None are not even visited). A ``FloatsUnder`` object is copied
    with only its float keys' values rounded, or returned as it is when they hold
    no float."""
    kind = type(value)
    if kind is float:
        return round(value, digits)
    if kind is FrozenRow:
        value = value.to_dict()
        kind = FloatsUnder
    if kind is FloatsUnder:
        keys = [k for k in value.float_keys if type(value.get(k)) not in _LEAVES]
        if not keys:  # nothing to round: written as it is (orjson writes a dict subclass)
            return value
        rounded = dict(value)
        for key in keys:
            rounded[key] = round_floats(rounded[key], digits)
        return rounded
    if kind is dict or (kind is not str and isinstance(value, Mapping)):
        return {k: v if type(v) in _LEAVES else round_floats(v, digits) for k, v in value.items()}
    if kind is list or kind is tuple:
        return [v if type(v) in _LEAVES else round_floats(v, digits) for v in value]
    return value


#: values ``round_floats`` returns as they are, checked inline: most of a report's
#: nodes, and a call for each would cost more than the rounding
_LEAVES = frozenset({str, int, bool, type(None)})


def dump_json(value: Any) -> bytes:
    """Render ``value`` as deterministic JSON bytes (see module docstring)."""
    return _dump_body(value) + b"\n"


def _dump_body(value: Any) -> bytes:
    """``dump_json`` without its final newline."""
    return orjson.dumps(round_floats(value), option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS)


def _refuse_symlink(path: Path) -> None:
    if path.is_symlink():
        raise OutputError(
            f"{path}: is a symbolic link; ragsnap never writes through links. "
            "Remove the link or pass a different output path"
        )


def _write_atomic(path: Path, data: bytes) -> None:
    with AtomicFile(path) as output:
        output.handle.write(data)
        output.commit()


def _fsync_dir(folder: Path) -> None:
    """Make a rename in ``folder`` durable; a failure is reported, not ignored
    (a filesystem that cannot sync folders at all, EINVAL, is the exception)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory fds
        return
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.ENOTSUP):
            raise OutputError(
                f"{folder}: the file was written but the folder could not be synced "
                f"({exc.strerror}), so it may not survive a crash; check the disk and run "
                "the command again"
            ) from None
    finally:
        os.close(fd)


class AtomicFile:
    """A file written in pieces that appears whole or not at all: the one atomic writer.

    ``handle`` is a binary handle on a temporary file beside ``path``;
    ``commit()`` fsyncs it, renames it over ``path`` and fsyncs the folder;
    ``discard()`` (or leaving a ``with`` block by an exception, Ctrl-C
    included) deletes it. The file gets ``mode`` (e.g. 0o600 for a private
    file; the temporary file never has more), by default 0o666 less the umask.
    Several can be prepared and then committed together, so a failed import
    replaces none of its outputs. A symlinked destination is refused, also one
    created while the file was written.
    """

    def __init__(self, path: Path, *, mode: int | None = None):
        _refuse_symlink(path)
        self.path = path
        self._mode = mode
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise OutputError(
                f"{path.parent}: cannot create the folder ({exc.strerror}); choose a writable path"
            ) from None
        try:
            fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        except OSError as exc:
            raise OutputError(
                f"{path.parent}: cannot write there ({exc.strerror}); choose a writable path"
            ) from None
        self._tmp = Path(name)
        self.handle = os.fdopen(fd, "wb")

    def commit(self) -> None:
        self.handle.flush()
        os.fsync(self.handle.fileno())
        self.handle.close()
        if self._mode is None:
            umask = os.umask(0)
            os.umask(umask)
            self._tmp.chmod(0o666 & ~umask)
        else:
            self._tmp.chmod(self._mode)
        _refuse_symlink(self.path)  # a link created while we wrote is refused too
        try:
            self._tmp.replace(self.path)
        except OSError as exc:
            self.discard()
            raise OutputError(
                f"{self.path}: cannot be replaced ({exc.strerror}); check that it is a "
                "writable file, or choose another path"
            ) from None
        _fsync_dir(self.path.parent)

    def discard(self) -> None:
        if not self.handle.closed:
            self.handle.close()
        with contextlib.suppress(FileNotFoundError):
            self._tmp.unlink()

    def __enter__(self) -> AtomicFile:
        return self

    def __exit__(self, kind: object, *rest: object) -> None:
        if kind is not None:
            self.discard()


def write_json(path: Path, value: Any, *, mode: int | None = None) -> None:
    """Write ``value`` to ``path`` as deterministic JSON, atomically (with ``mode``, see
    ``AtomicFile``)."""
    with AtomicFile(path, mode=mode) as output:
        _write_body(output.handle, value)
        output.handle.write(b"\n")
        output.commit()


#: an object's list longer than this is written an item at a time (``_write_body``)
_WRITTEN_BY_ITEM = 64


def _write_body(handle: Any, value: Any) -> None:
    """Write ``dump_json(value)`` without its newline to ``handle``, the same bytes: an
    object's long lists (a score report's 10,000 case rows) are rendered an item at a
    time, each item indented as ``orjson`` indents it inside the object, so the whole
    document (23 MB at 10,000 cases) is never in memory at once."""
    if type(value) is not dict or not any(
        type(item) is list and len(item) > _WRITTEN_BY_ITEM for item in value.values()
    ):
        handle.write(_dump_body(value))
        return
    handle.write(b"{")
    for index, key in enumerate(sorted(value)):
        item = value[key]
        handle.write((b"\n  " if index == 0 else b",\n  ") + orjson.dumps(key) + b": ")
        if type(item) is list and len(item) > _WRITTEN_BY_ITEM:
            for at, entry in enumerate(item):
                body = _dump_body(entry).replace(b"\n", b"\n    ")
                handle.write((b"[\n    " if at == 0 else b",\n    ") + body)
            handle.write(b"\n  ]")
        else:
            handle.write(_dump_body(item).replace(b"\n", b"\n  "))
    handle.write(b"\n}")


def write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` as UTF-8 with a trailing newline, atomically."""
    if not text.endswith("\n"):
        text += "\n"
    _write_atomic(path, text.encode("utf-8"))


def check_outputs(
    outputs: Sequence[Path | tuple[str, Path]],
    *,
    inputs: Sequence[Read | Path | None] = (),
    folders: Sequence[Path | None] = (),
    allow_outside: bool = False,
) -> None:
    """Refuse output paths before anything is written. ``outputs`` are paths, or
    (option, path) pairs (``("--json-report", path)``) so a message names the option.
    An output may not

    - name the same file as another output, or as anything the command reads
      (``inputs``: ``ragsnap.io.reads.reads_of`` lists them with what each is; a bare
      path is "an input of this command"), nor lie in a folder it reads (a ``Read``
      that is a folder, or ``folders``), since it would replace or add to what it is
      computed from; only the option that updates its own file or folder (a ``Read``
      with that ``option``: ``accept --baseline``, ``snapshot --fixtures``) may name it;
    - hold a NUL character;
    - leave the working folder (an absolute path elsewhere, or ``..``), unless
      ``allow_outside`` (the commands' ``--allow-outside``);
    - pass through a symbolic link below the working folder, or be one.
    """
    named = [item if isinstance(item, tuple) else ("", item) for item in outputs]
    for _, path in named:
        if "\0" in str(path):
            raise UsageError(f"{str(path)!r} holds a NUL character; pass a plain file name")
    here = Path.cwd()
    absolute = [Path(os.path.normpath(here / p)) for _, p in named]
    resolved = [p.resolve() for p in absolute]
    if len(set(resolved)) != len(resolved):
        raise UsageError("two outputs would be written to the same file; give each its own path")
    reads = [
        item if isinstance(item, Read) else Read(item, "an input of this command")
        for item in inputs
        if item is not None
    ] + [Read(f, "a folder this command reads", folder=True) for f in folders if f is not None]
    for (option, name), target in zip(named, resolved, strict=True):
        for read in reads:
            _refuse_over(option, name, target, read)
    for (option, name), path in zip(named, absolute, strict=True):
        label = f"{option} {name}" if option else str(name)
        if not path.is_relative_to(here):
            if allow_outside:
                continue
            raise UsageError(
                f"{label} is outside the working folder {here}; pass a path inside it, or "
                "add --allow-outside if you mean it"
            )
        step = here
        for part in path.relative_to(here).parts:
            step = step / part
            if step.is_symlink():
                raise OutputError(
                    f"{label}: {step} is a symbolic link; ragsnap never writes through links. "
                    "Pass a path without one, or remove the link"
                )


def _refuse_over(option: str, name: Path, target: Path, read: Read) -> None:
    """Refuse output ``name`` (resolved: ``target``) of ``option`` when it is ``read``,
    or lies inside it (a folder)."""
    place = read.path.resolve()
    label = f"{option} {name}" if option else str(name)
    fix = f"pass another path to {option}" if option else "choose another output path"
    if read.option and read.option == option and (place == target or read.folder):
        return  # the option's own file or folder, which the command updates
    if place == target:
        raise UsageError(
            f"{label}: {read.path} is {read.what}, which ragsnap reads and never overwrites; {fix}"
        )
    if read.folder and target.is_relative_to(place):
        raise UsageError(
            f"{label}: is inside {read.path}, {read.what}, and ragsnap never writes into a "
            f"folder it reads; {fix} outside it"
        )


def write_outputs(outputs: Mapping[Path, bytes | str | Any]) -> None:
    """Write several outputs, each atomically, after checking all destinations.

    ``bytes`` are written as they are, ``str`` as text, anything else as JSON.
    Every destination is checked for a symlink before the first write, so a
    refused destination leaves all the others untouched.
    """
    for path in outputs:
        _refuse_symlink(path)
    for path, value in outputs.items():
        if isinstance(value, bytes):
            _write_atomic(path, value)
        elif isinstance(value, str):
            write_text(path, value)
        else:
            write_json(path, value)

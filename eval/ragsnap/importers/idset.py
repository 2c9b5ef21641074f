"""A set of ids kept on disk, so an import's memory does not grow with the corpus.

Checking for duplicate document ids and for judgments of unknown documents
needs every id an import has read. ``IdSet`` keeps them (with where each was
read, for messages) in a temporary SQLite file that SQLite pages through a
small cache, instead of a Python set that grows by ~100 bytes per document.
Iteration follows insertion order. The file is deleted on ``close()`` (or when
the set is garbage-collected).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import tempfile
from collections.abc import Iterable, Iterator
from collections.abc import Set as AbstractSet
from pathlib import Path

__all__ = ["IdSet"]


class IdSet(AbstractSet[str]):
    """Ids in insertion order, each with the place it was first read."""

    def __init__(self) -> None:
        fd, name = tempfile.mkstemp(prefix="ragsnap-ids-", suffix=".sqlite")
        os.close(fd)
        self._path = Path(name)
        self._db = sqlite3.connect(name)
        self._db.execute("PRAGMA journal_mode=OFF")
        self._db.execute("PRAGMA synchronous=OFF")
        self._db.execute("CREATE TABLE ids (n INTEGER PRIMARY KEY, id TEXT UNIQUE, origin TEXT)")
        self._count = 0

    def add(self, item: str, origin: str = "") -> str | None:
        """Add ``item``; return where it was first read when it was already there."""
        try:
            self._db.execute("INSERT INTO ids (id, origin) VALUES (?, ?)", (item, origin))
        except sqlite3.IntegrityError:
            return self.where(item) or "?"
        self._count += 1
        return None

    def where(self, item: str) -> str | None:
        """Where ``item`` was first read (``?`` when that was not said); None when absent."""
        row = self._db.execute("SELECT origin FROM ids WHERE id = ?", (item,)).fetchone()
        return None if row is None else str(row[0]) if row[0] else "?"

    def __contains__(self, item: object) -> bool:
        if not isinstance(item, str):
            return False
        return self._db.execute("SELECT 1 FROM ids WHERE id = ?", (item,)).fetchone() is not None

    def __iter__(self) -> Iterator[str]:
        cursor = self._db.cursor()  # its own cursor: lookups may run while iterating
        for (item,) in cursor.execute("SELECT id FROM ids ORDER BY n"):
            yield item

    def __len__(self) -> int:
        return self._count

    @classmethod
    def _from_iterable(cls, items: Iterable[str]) -> set[str]:  # type: ignore[override]
        """Set operators (``&``, ``|`` ...) give plain in-memory sets."""
        return set(items)

    def close(self) -> None:
        """Delete the temporary file."""
        if not hasattr(self, "_db"):  # __init__ failed before the file existed
            return
        with contextlib.suppress(sqlite3.Error):
            self._db.close()
        with contextlib.suppress(OSError):
            self._path.unlink()

    def __del__(self) -> None:
        self.close()

    def __enter__(self) -> IdSet:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

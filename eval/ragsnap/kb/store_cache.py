"""A cache of seeded embedded stores, reused until what they were seeded from changes.

``ragsnap trial`` seeds one embedded store per vector provider; with a real
model that is most of a trial's time (about 10 minutes for 11,000 documents
with MiniLM, 95 % of it embedding). A store is a function of its inputs, so it
is kept under a key made of all of them and reused while they stay the same:

==============  ===========================================================
``corpus``      the corpus digest: every source and its index hash (the
                file's bytes, frontmatter included, and the chunk settings)
``vectors``     the embedder's fingerprint and the SHA-256 of the files it
                reads (``ragsnap.kb.embedders.vectors_identity``)
``tokenizer``   the segmenter, stemmer and stop words (the lexical index)
``store``       ``STORE_CACHE_VERSION`` and the ragsnap version (the store's
                format and how seeding fills it)
==============  ===========================================================

The key is the SHA-256 of that record as canonical JSON; a store lives in
``<cache>/<key>/kb.sqlite`` (``trial.storeCache`` in ragsnap.yaml, default
``.ragsnap/trial-stores``, which ``ragsnap init``'s ``.ragsnap/.gitignore``
keeps out of git; ``--no-store-cache`` seeds a temporary store instead).

A store is complete or absent: it is seeded into ``<cache>/.tmp-<key>-<pid>/``,
closed, then that folder is renamed to ``<cache>/<key>`` (a rename within one
folder is atomic), so a crash leaves only a ``.tmp-`` folder, removed by the
next seeding of that key. Two trials that need the same missing store take
turns on ``<cache>/.<key>.lock`` (a blocking ``flock``, released by the
operating system if the holder dies): the second waits and reuses the first's
store. A reused store is checked before use (its documents' index hashes, its
embedder and segmenter); one that fails the check is seeded again.

Clearing the cache is deleting the folder (``rm -rf .ragsnap/trial-stores``):
nothing else refers to it. Stores of older corpora stay until then.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import stat
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import OutputError

if TYPE_CHECKING:
    from .backends.sqlite import SqliteKnowledgeBase

__all__ = ["STORE_CACHE_VERSION", "open_cached_store", "store_key"]

#: bump when a store seeded by older code must not be reused
STORE_CACHE_VERSION = 1
STORE_FILE = "kb.sqlite"


def store_key(
    corpus: str, vectors: Mapping[str, Any], tokenizer: Mapping[str, Any], version: str
) -> str:
    """The key of a store seeded from ``corpus`` (``ragsnap.trial.plan.corpus_digest``)
    with the embedder ``vectors`` describes (``vectors_identity``) and ``tokenizer``'s
    settings, by ragsnap ``version``."""
    record = {
        "corpus": corpus,
        "vectors": dict(vectors),
        "tokenizer": dict(tokenizer),
        "store": {"cacheVersion": STORE_CACHE_VERSION, "ragsnap": version},
    }
    text = json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def open_cached_store(
    cache: Path,
    key: str,
    seed_into: Callable[[SqliteKnowledgeBase], None],
    usable: Callable[[SqliteKnowledgeBase], bool],
    *,
    kernel: str = "auto",
) -> tuple[SqliteKnowledgeBase, bool]:
    """The store of ``key`` in ``cache`` and whether it was reused (True) or seeded now
    by ``seed_into`` (False); ``usable`` checks a reused one (module docstring)."""
    from .backends.sqlite import SqliteKnowledgeBase

    final = cache / key
    found = _open_if_usable(final, usable, kernel)
    if found is not None:
        return found, True
    try:
        cache.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(
            f"{cache}: cannot create the trial store cache ({exc.strerror}); set "
            "trial.storeCache to a writable folder, or pass --no-store-cache"
        ) from None
    with _turn(cache / f".{key}.lock"):
        found = _open_if_usable(final, usable, kernel)  # another trial seeded it meanwhile
        if found is not None:
            return found, True
        for stale in cache.glob(f".tmp-{key}-*"):  # a crashed seeding's (we hold the lock)
            shutil.rmtree(stale, ignore_errors=True)
        work = cache / f".tmp-{key}-{os.getpid()}"
        work.mkdir()
        try:
            store = SqliteKnowledgeBase(work / STORE_FILE, kernel=kernel)
            try:
                seed_into(store)
            finally:
                store.close()
            if final.exists():  # a store that failed its check
                shutil.rmtree(final)
            work.rename(final)
        except BaseException:
            shutil.rmtree(work, ignore_errors=True)
            raise
    return SqliteKnowledgeBase(final / STORE_FILE, create=False, kernel=kernel), False


def _open_if_usable(
    folder: Path, usable: Callable[[SqliteKnowledgeBase], bool], kernel: str
) -> SqliteKnowledgeBase | None:
    from ..errors import BackendError
    from .backends.sqlite import SqliteKnowledgeBase

    path = folder / STORE_FILE
    if not path.is_file():
        return None
    try:
        store = SqliteKnowledgeBase(path, create=False, kernel=kernel)
    except BackendError:  # damaged: seeded again
        return None
    try:
        if usable(store):
            return store
    except BaseException:
        store.close()
        raise
    store.close()
    return None


@contextlib.contextmanager
def _turn(path: Path) -> Iterator[None]:
    """Hold the lock file ``path`` (waiting for another holder) for the block."""
    import fcntl

    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | os.O_CLOEXEC
    fix = "remove it (ragsnap creates it again), or pass --no-store-cache"
    try:
        fd = os.open(path, flags | getattr(os, "O_NONBLOCK", 0), 0o600)  # a FIFO: no wait
    except OSError as exc:
        raise OutputError(
            f"{path}: cannot open the trial store cache's lock ({exc.strerror}); {fix}"
        ) from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OutputError(f"{path}: the trial store cache's lock is not a regular file; {fix}")
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)

"""The knowledge base's writer lock (``ragsnap.io.locks``)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ragsnap.errors import KnowledgeBaseBusy, OutputError
from ragsnap.io.locks import lock_path, writer_lock


def test_the_lock_records_its_holder_and_excludes_a_second_writer(tmp_path: Path) -> None:
    store = tmp_path / "kb.sqlite"
    with writer_lock(store, "ragsnap seed (the test)"):
        assert lock_path(store).read_text().startswith(f"pid {os.getpid()} (ragsnap seed")
        with pytest.raises(KnowledgeBaseBusy, match="ragsnap seed \\(the test"):
            writer_lock(store).__enter__()
    with writer_lock(store):  # released
        pass


def test_a_fifo_lock_is_refused_without_blocking(tmp_path: Path) -> None:
    store = tmp_path / "kb.sqlite"
    os.mkfifo(lock_path(store))
    with pytest.raises(OutputError, match="the writer lock is not a regular file"):  # noqa: SIM117
        with writer_lock(store):
            pass


def test_a_folder_lock_is_refused(tmp_path: Path) -> None:
    store = tmp_path / "kb.sqlite"
    lock_path(store).mkdir()
    with pytest.raises(OutputError, match="cannot create the writer lock"):  # noqa: SIM117
        with writer_lock(store):
            pass

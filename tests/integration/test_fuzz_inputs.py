"""Seeded mutations of the committed example files, fed to the commands that read them.

Every run must end with exit code 0, 1 or 2 (3 is a bug: an exception ragsnap did not
raise on purpose), and a run that exits 2 must leave every file as it was. The files
mutated are the ones a user edits by hand: the golden cases, a fixture, the baseline,
``ragsnap.yaml`` and a seed document. The runs are in-process (``ragsnap.cli.main``)
so a few hundred fit the time budget (25 s); ``RAGSNAP_FUZZ_RUNS`` and
``RAGSNAP_FUZZ_SECONDS`` make a longer hunt (each run is reproducible from its number).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conftest import REPO, mutate_json
from ragsnap.cli import main

RUNS = int(os.environ.get("RAGSNAP_FUZZ_RUNS", "240"))
BUDGET_SECONDS = float(os.environ.get("RAGSNAP_FUZZ_SECONDS", "25"))  # stop here, whatever RUNS
ODD_VALUES: list[Any] = [
    None, True, False, -1, 0, 1, 10**30, -(10**30), 1e308, -0.0, 0.5, "", "x" * 5000,
    "💥\u0000\u202e", [], {}, [None], {"": None}, "../../etc/passwd", "ERR-4031",
]  # fmt: skip
YAML_SNIPPETS = [
    "&a x", "*a", "!!python/object:os.system", "? [a]", "\t", ": :", "{", "[", "'", "\"",
    "~", "null", ".nan", "- - -", "<<: *a", "%YAML 1.1", "---", "...", "\u00a0", "@",
]  # fmt: skip


def mutate_bytes(raw: bytes, rng: random.Random) -> bytes:
    op = rng.randrange(4)
    if op == 0 and raw:
        return raw[: rng.randrange(len(raw))]  # truncated
    if op == 1 and raw:
        i = rng.randrange(len(raw))
        return raw[:i] + bytes([rng.randrange(256)]) + raw[i + 1 :]
    if op == 2:
        i = rng.randrange(len(raw) + 1)
        return raw[:i] + rng.choice([b"\xff\xfe", b"\x00", b"\r", b"NaN", b"1e999"]) + raw[i:]
    return b"\xef\xbb\xbf" + raw  # a byte-order mark


def mutate_text_lines(raw: bytes, rng: random.Random) -> bytes:
    lines = raw.decode("utf-8", "replace").split("\n")
    i = rng.randrange(len(lines))
    op = rng.randrange(3)
    if op == 0:
        lines.insert(i, lines[i])
    elif op == 1:
        del lines[i]
    else:
        lines[i] = lines[i] + " " + rng.choice(YAML_SNIPPETS)
    return "\n".join(lines).encode("utf-8")


def mutate_file(path: Path, rng: random.Random) -> None:
    raw = path.read_bytes()
    structural = rng.random() < 0.7
    if path.suffix == ".json" and structural:
        try:
            data = json.loads(raw)
        except ValueError:  # broken by an earlier mutation: break it further
            path.write_bytes(mutate_bytes(raw, rng))
            return
        data = _mutate(data, rng)
        path.write_text(json.dumps(data, ensure_ascii=rng.random() < 0.5), encoding="utf-8")
    elif path.suffix in (".yaml", ".md") and structural:
        path.write_bytes(mutate_text_lines(raw, rng))
    else:
        path.write_bytes(mutate_bytes(raw, rng))


CONFIG = """diff:
  tolerances: {passRate: 0.0, metrics: 0.0, missCount: 0}
measures: [recall@5, ndcg@10, mrr@10]
snapshot:
  tolerance: 0.0001
lookup: {topK: 5, minScore: 0.22, candidates: 50}
kb:
  path: kb.sqlite
  seedDocs: docs
"""


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example files once, with a baseline scored from them."""
    root = tmp_path_factory.mktemp("pristine")
    shutil.copy(REPO / "cases" / "golden-cases.json", root / "cases.json")
    shutil.copytree(REPO / "fixtures", root / "fixtures")
    shutil.copytree(REPO / "seed-docs", root / "docs")
    shutil.copy(REPO / "reports" / "baseline.json", root / "baseline.json")
    (root / "ragsnap.yaml").write_text(CONFIG, encoding="utf-8")
    return root


def snapshot_of(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


SCORE = ["score", "--cases", "cases.json", "--fixtures", "fixtures", "--compare-to",
         "baseline.json", "--json-report", "out/r.json", "--markdown-report", "out/r.md",
         "--diff-json-report", "out/d.json", "--diff-markdown-report", "out/d.md"]  # fmt: skip
TARGETS: list[tuple[str, Callable[[Path], Path], list[str]]] = [
    ("cases", lambda r: r / "cases.json", SCORE),
    ("fixture", lambda r: r / "fixtures" / "db-err-4031-order-repository.json", SCORE),
    ("fixture", lambda r: r / "fixtures" / "cache-avalanche-prevention-zh.json", SCORE),
    ("baseline", lambda r: r / "baseline.json", SCORE),
    ("config", lambda r: r / "ragsnap.yaml", SCORE),
    ("seed document", lambda r: r / "docs" / "mysql-connection-pool.md", ["seed"]),
    ("seed document", lambda r: r / "docs" / "redis-cache-avalanche-zh.md", ["seed"]),
    ("config", lambda r: r / "ragsnap.yaml", ["seed"]),
]


@pytest.mark.slow
def test_mutated_inputs_exit_0_1_or_2_and_bad_input_changes_nothing(
    pristine: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started = time.perf_counter()
    outcomes: dict[int, int] = {}
    runs = 0
    for number in range(RUNS):
        if number >= 40 and time.perf_counter() - started > BUDGET_SECONDS:
            break
        rng = random.Random(number)
        what, where, argv = TARGETS[number % len(TARGETS)]
        root = tmp_path / f"run{number}"
        shutil.copytree(pristine, root)
        mutate_file(where(root), rng)
        if rng.random() < 0.3:  # sometimes two mutations
            mutate_file(where(root), rng)
        monkeypatch.chdir(root)
        before = snapshot_of(root)
        err = io.StringIO()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            code = main(argv)
        message = err.getvalue()
        context = f"run {number} ({what}, {' '.join(argv[:1])}): exit {code}\n{message}"
        assert code in (0, 1, 2), context
        assert "Traceback" not in message and "InternalError" not in message, context
        if code == 2:
            assert message.strip(), context  # it says why
            assert snapshot_of(root) == before, context  # and wrote nothing
        outcomes[code] = outcomes.get(code, 0) + 1
        runs += 1
        monkeypatch.chdir(tmp_path)
        shutil.rmtree(root)
    assert runs >= 40
    assert outcomes.get(2, 0) > runs // 4  # the mutations really do break things
    assert outcomes.get(0, 0) + outcomes.get(1, 0) > 0  # and some are harmless


def _mutate(data: Any, rng: random.Random) -> Any:
    return mutate_json(data, rng, ODD_VALUES)

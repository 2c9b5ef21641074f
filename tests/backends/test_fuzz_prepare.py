"""Seeded mutations of a prepare state file and of a service's answers, fed to
``ragsnap prepare`` and ``ragsnap live-check --state``.

Every run must end with exit code 0, 1 or 2 and say why when it is not 0; 3 is a bug
(an exception ragsnap did not raise on purpose). The service is ``Keyed`` (a loopback
server with ``ragsnap serve``'s document contract) whose answer to one endpoint is
mutated: structurally (a field deleted, retyped, duplicated) or as bytes (truncated, a
byte changed, a byte order mark, nested thousands deep, not JSON). The state is the
one a clean ``prepare`` wrote, mutated the same ways. Runs are in-process
(``ragsnap.cli.main``) against a client with a 5 s timeout and no retries, so a hang
would fail the test rather than hold it; ``RAGSNAP_FUZZ_RUNS`` and
``RAGSNAP_FUZZ_SECONDS`` make a longer hunt (each run is reproducible from its
number).
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import os
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conftest import mutate_json
from ragsnap.cli import main

from .test_prepare_services import STATE, Keyed, write_project

RUNS = int(os.environ.get("RAGSNAP_FUZZ_RUNS", "160"))
BUDGET_SECONDS = float(os.environ.get("RAGSNAP_FUZZ_SECONDS", "20"))
ODD_VALUES: list[Any] = [
    None, True, False, -1, 0, 1, 10**30, -(10**30), 1e308, -0.0, 0.5, "", "x" * 5000,
    "💥\u0000\u202e", [], {}, [None], {"": None}, ["a", "b"], {"kind": [[[]]]},
]  # fmt: skip
#: the endpoints whose answers are mutated: (method, path)
ENDPOINTS = [
    ("GET", "/api/documents"),
    ("POST", "/api/documents"),
    ("GET", "/api/health"),
    ("GET", "/api/search/similar"),
]


def mutate_bytes(raw: bytes, rng: random.Random) -> bytes:
    """One change to the bytes: truncated, a byte replaced, a BOM, deep nesting, not JSON."""
    op = rng.randrange(6)
    if op == 0 and raw:
        return raw[: rng.randrange(len(raw))]
    if op == 1 and raw:
        i = rng.randrange(len(raw))
        return raw[:i] + bytes([rng.randrange(256)]) + raw[i + 1 :]
    if op == 2:
        return "\ufeff".encode() + raw
    if op == 3:
        depth = rng.choice([65, 1000, 50_000])
        return b"[" * depth + raw + b"]" * depth
    if op == 4:
        return rng.choice([b"", b"null", b"[]", b'"x"', b"1e999", b"NaN", b"<html>oops</html>"])
    return raw + raw  # two documents in one answer


def mutated(raw: bytes, rng: random.Random) -> bytes:
    if rng.random() < 0.6:
        try:
            data = json.loads(raw)
        except ValueError:
            return mutate_bytes(raw, rng)
        return json.dumps(_mutate(data, rng)).encode()
    return mutate_bytes(raw, rng)


def run_quietly(argv: list[str]) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue() + err.getvalue()


@pytest.mark.slow
def test_mutated_states_and_answers_exit_0_1_or_2_with_a_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = write_project(tmp_path)
    (project / "ragsnap.yaml").write_text(
        "http:\n  timeoutSeconds: 5\n  retries: 0\n", encoding="utf-8"
    )
    monkeypatch.chdir(project)
    monkeypatch.delenv("RAGSNAP_TEST_PREPARE_EXIT_AFTER", raising=False)
    with Keyed() as service:
        prepare = ["prepare", "--state", STATE, "--seed-docs", "seed-docs"]
        prepare += ["--base-url", service.url]
        live = ["live-check", "--state", STATE, "--base-url", service.url]
        code, said = run_quietly(prepare)
        assert code == 0, said
        state = (project / STATE).read_bytes()
        records, receipts = copy.deepcopy(service.records), copy.deepcopy(service.receipts)
        started = time.monotonic()
        seen: dict[int, int] = {}
        runs = 0
        for number in range(RUNS):
            if time.monotonic() - started > BUDGET_SECONDS:
                break
            rng = random.Random(number)
            (project / STATE).write_bytes(state)
            service.records, service.receipts = copy.deepcopy(records), copy.deepcopy(receipts)
            service.shape = None
            if rng.random() < 0.4:
                (project / STATE).write_bytes(mutated(state, rng))
                target = "the state"
            else:
                endpoint = rng.choice(ENDPOINTS)
                answer_rng = random.Random(number * 7919)
                service.shape = shaper(endpoint, answer_rng)
                target = f"{endpoint[0]} {endpoint[1]}"
            argv = prepare if rng.random() < 0.5 else live
            code, said = run_quietly(argv)
            assert code in (0, 1, 2), f"run {number} ({argv[0]}, {target}): exit {code}\n{said}"
            assert "Traceback" not in said and "internal error" not in said.lower(), (
                f"run {number} ({argv[0]}, {target}):\n{said}"
            )
            if code == 2:
                assert "Error: " in said or "BudgetExhausted: " in said, (
                    f"run {number} ({argv[0]}, {target}): exit 2 without a message\n{said}"
                )
            seen[code] = seen.get(code, 0) + 1
            runs += 1
    assert runs >= 40, f"only {runs} runs in {BUDGET_SECONDS} s"
    assert seen.get(2, 0) > runs // 4  # the mutations reached the checks
    assert seen.get(0, 0) + seen.get(1, 0) > 0  # and some were harmless


def shaper(endpoint: tuple[str, str], rng: random.Random) -> Callable[[str, str, bytes], bytes]:
    """Mutate every answer of ``endpoint`` (each differently, from ``rng``)."""

    def shape(method: str, path: str, data: bytes) -> bytes:
        return mutated(data, rng) if (method, path) == endpoint else data

    return shape


def _mutate(data: Any, rng: random.Random) -> Any:
    return mutate_json(data, rng, ODD_VALUES)

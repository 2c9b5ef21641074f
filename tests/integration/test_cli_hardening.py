"""Hostile and careless input through the CLI, as a user would meet it.

Every case here was a defect once: a hang, a crash that exited 1 like a regression,
an input overwritten by an output, an unbounded YAML expansion, two writers mixing
their corpora. Each now exits 2 with the file, the field and the fix (or 3 for a
bug), in well under a second, and changes no file.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import REPO, Run, run_cli

CASES = REPO / "cases" / "golden-cases.json"
FIXTURES = REPO / "fixtures"
SEED_DOCS = REPO / "seed-docs"
BOMB = """a: &a ["x","x","x","x","x","x","x","x","x"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
"""


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """A working folder with copies of the example cases and fixtures."""
    shutil.copy(CASES, tmp_path / "cases.json")
    shutil.copytree(FIXTURES, tmp_path / "fixtures")
    return tmp_path


def score(work: Path, *args: str) -> Run:
    return run_cli("score", "--cases", "cases.json", "--fixtures", "fixtures", *args, cwd=work)


def run_program(
    program: str, *args: str, cwd: Path, **env: str
) -> subprocess.CompletedProcess[str]:
    """``python -c program args`` with ragsnap importable, for what argv cannot carry or
    a bug planted in-process; ``env`` adds variables (RAGSNAP_DEBUG is never inherited)."""
    base = {**os.environ, "PYTHONPATH": str(REPO / "eval")}
    base.pop("RAGSNAP_DEBUG", None)
    return subprocess.run(
        [sys.executable, "-c", program, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**base, **env},
        timeout=60,
    )


def tree(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


def refused(run: Run, *words: str) -> None:
    assert run.code == 2, run.out + run.err
    assert "Traceback" not in run.err
    for word in words:
        assert word in run.err, run.err


# -- 1. YAML aliases ---------------------------------------------------------------------


def test_an_alias_bomb_in_ragsnap_yaml_is_refused_at_once(work: Path) -> None:
    (work / "ragsnap.yaml").write_text(BOMB + "measures: [*g, *g]\n", encoding="utf-8")
    before = tree(work)
    started = time.perf_counter()
    run = score(work)
    assert time.perf_counter() - started < 30  # it used to run 40-50 s into a MemoryError
    refused(run, "ragsnap.yaml at line 2: uses a YAML alias (*a)", "write the value out")
    assert tree(work) == before


def test_an_alias_bomb_in_seed_frontmatter_is_refused(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    shutil.copytree(SEED_DOCS, docs)
    header = "---\nsource: bomb\n" + BOMB + "tags: *g\n---\n"
    (docs / "bomb.md").write_text(header + "Body.\n", encoding="utf-8")
    run = run_cli("seed", "--kb", "kb.sqlite", "--seed-docs", str(docs), cwd=tmp_path)
    refused(run, "bomb.md at line 4: frontmatter uses a YAML alias (*a)")
    assert not (tmp_path / "kb.sqlite").exists()  # nothing imported


# -- 5. NaN and infinities --------------------------------------------------------------


@pytest.mark.parametrize("value", [".nan", ".inf", "-.inf"])
def test_non_finite_numbers_in_the_config_are_bad_input(work: Path, value: str) -> None:
    (work / "ragsnap.yaml").write_text(f"diff:\n  tolerances:\n    passRate: {value}\n")
    refused(score(work), "ragsnap.yaml at /diff/tolerances/passRate", "not finite")


def test_non_finite_numbers_in_json_inputs_are_bad_input(work: Path) -> None:
    fixture = work / "fixtures" / "obs-log-retention-days.json"
    fixture.write_text(fixture.read_text().replace('"score": 0.', '"score": 1e999 , "x": 0.', 1))
    refused(score(work), "obs-log-retention-days.json: is not valid JSON")


# -- 6. a bug is exit 3, never 1 ---------------------------------------------------------


def test_an_internal_error_exits_3_in_one_line_and_debug_shows_the_traceback(
    tmp_path: Path,
) -> None:
    """A command that raises something ragsnap does not raise on purpose (a bug)."""
    program = (
        "import sys, ragsnap.commands.score as s\n"
        "def broken(args): return {}['missing']\n"
        "s.run = broken\n"
        "from ragsnap.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )

    def bug(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
        return run_program(program, *args, cwd=tmp_path, **env)

    plain = bug("score")
    assert plain.returncode == 3
    assert "Traceback" not in plain.stderr
    assert plain.stderr.startswith("InternalError: KeyError: 'missing'. This is a bug")
    assert "--debug" in plain.stderr and len(plain.stderr.strip().splitlines()) == 1
    for debug in (
        bug("--debug", "score"),
        bug("score", "--debug"),
        bug("score", RAGSNAP_DEBUG="1"),
    ):
        assert debug.returncode == 3
        assert "Traceback (most recent call last)" in debug.stderr


# -- 7, 8. what an input file may be --------------------------------------------------------


def test_a_fifo_as_cases_is_refused_without_hanging(work: Path) -> None:
    os.mkfifo(work / "pipe.json")
    refused(score(work, "--cases", "pipe.json"), "pipe.json: is not a regular file")


def test_dev_zero_as_cases_is_refused(work: Path) -> None:
    refused(score(work, "--cases", "/dev/zero"), "/dev/zero: is not a regular file")


def test_an_oversized_config_is_refused_before_it_is_read(work: Path) -> None:
    with (work / "ragsnap.yaml").open("wb") as handle:
        handle.truncate(2 << 20)  # sparse: 2 MiB of nothing
    refused(score(work), "ragsnap.yaml: is 2,097,152 bytes, more than the 1,048,576")


def test_a_folder_named_like_a_fixture_is_bad_input(work: Path) -> None:
    (work / "fixtures" / "zz.json").mkdir()
    refused(score(work), "fixtures/zz.json: is a folder, not a file")


def test_a_folder_named_ragsnap_yaml_is_bad_input(work: Path) -> None:
    (work / "ragsnap.yaml").mkdir()
    refused(score(work), "ragsnap.yaml: is a folder, not a file", "rename or remove it")


# -- 9. a baseline with a case twice ------------------------------------------------------


def test_a_baseline_with_a_duplicate_case_is_bad_input(work: Path) -> None:
    assert score(work, "--json-report", "base.json").code == 0
    report = json.loads((work / "base.json").read_text())
    report["cases"].append(report["cases"][0])
    (work / "base.json").write_text(json.dumps(report))
    case = report["cases"][0]["id"]
    refused(
        score(work, "--compare-to", "base.json"),
        f"base.json at /cases/{len(report['cases']) - 1}/id: case '{case}' appears twice",
    )


# -- 10. a read-only command never creates a knowledge base -------------------------------


def test_lookup_refuses_a_file_that_is_not_a_knowledge_base(tmp_path: Path) -> None:
    (tmp_path / "empty.sqlite").touch()
    run = run_cli("lookup", "--kb", "empty.sqlite", "pool size", cwd=tmp_path)
    refused(run, "empty.sqlite: not a ragsnap knowledge base")
    assert (tmp_path / "empty.sqlite").stat().st_size == 0  # not turned into one
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty.sqlite"]


# -- 11. TREC runs --------------------------------------------------------------------------


@pytest.mark.parametrize("score_text", ["nan", "NaN", "-nan"])
def test_metrics_refuses_a_run_score_that_is_not_a_number(tmp_path: Path, score_text: str) -> None:
    """NaN cannot be ordered; an infinity can (trec_eval orders it like any score)."""
    (tmp_path / "qrels").write_text("q1 0 d1 1\n")
    (tmp_path / "run").write_text(f"q1 Q0 d2 1 0.5 r\nq1 Q0 d1 2 {score_text} r\n")
    run = run_cli("metrics", "--qrels", "qrels", "--run", "run", cwd=tmp_path)
    refused(run, f"run: line 2: score '{score_text}' is not a number")


# -- 4, 14. outputs ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--json-report", "cases.json"), "cases.json: cases.json is the golden cases file"),
        (
            ("--markdown-report", "fixtures/x.json"),
            "x.json: is inside fixtures, the fixtures folder",
        ),
        (
            ("--markdown-report", "fixtures/obs-log-retention-days.json"),
            "is inside fixtures, the fixtures folder, and ragsnap never writes into a folder",
        ),
        (("--json-report", "../outside.json"), "is outside the working folder"),
        (("--json-report", "/tmp/ragsnap-outside.json"), "add --allow-outside if you mean it"),
    ],
)
def test_score_never_writes_over_its_inputs_or_outside(
    work: Path, args: tuple[str, ...], message: str
) -> None:
    before = tree(work)
    refused(score(work, *args), message)
    assert tree(work) == before
    assert not (work.parent / "outside.json").exists()


def test_export_run_never_writes_over_the_cases(work: Path) -> None:
    before = tree(work)
    run = run_cli(
        "export-run", "--cases", "cases.json", "--fixtures", "fixtures", "--out", "cases.json",
        cwd=work,
    )  # fmt: skip
    refused(run, "--out cases.json: cases.json is the golden cases file, which ragsnap reads")
    assert tree(work) == before


def test_allow_outside_writes_where_the_user_means(
    work: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    elsewhere = tmp_path_factory.mktemp("elsewhere") / "report.json"
    run = score(work, "--json-report", str(elsewhere), "--allow-outside")
    assert run.code == 0, run.err
    assert json.loads(elsewhere.read_text())["kind"] == "ragsnap-score-report"


def test_reports_never_go_through_a_symlinked_folder(
    work: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    target = tmp_path_factory.mktemp("target")
    (work / "reports").symlink_to(target, target_is_directory=True)
    refused(score(work, "--json-report", "reports/x.json"), "reports is a symbolic link")
    assert list(target.iterdir()) == []


def test_a_nul_in_a_report_path_is_a_usage_error(work: Path) -> None:
    # argv cannot carry a NUL; ragsnap.yaml-free paths come from the command line only,
    # so drive main() in-process
    program = (
        "import sys; from ragsnap.cli import main\n"
        "sys.exit(main(['score', '--cases', 'cases.json', '--fixtures', 'fixtures', "
        "'--json-report', 'a\\x00b.json']))\n"
    )
    proc = run_program(program, cwd=work)
    assert proc.returncode == 2, proc.stderr
    assert "holds a NUL character" in proc.stderr and "Traceback" not in proc.stderr


# -- 2. one writer at a time ---------------------------------------------------------------------


def test_a_second_seed_fails_naming_the_writer_that_holds_the_lock(tmp_path: Path) -> None:
    import fcntl

    assert (
        run_cli("seed", "--kb", "kb.sqlite", "--seed-docs", str(SEED_DOCS), cwd=tmp_path).code == 0
    )
    lock = tmp_path / ".kb.sqlite.lock"
    assert lock.stat().st_mode & 0o777 == 0o600
    fd = os.open(lock, os.O_RDWR)
    me = os.getpid()  # the holder: this process, alive
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.pwrite(fd, f"pid {me} (ragsnap seed, since 2026-12-01T10:00:00Z)\n".encode(), 0)
        run = run_cli(
            "seed", "--kb", "kb.sqlite", "--seed-docs", str(SEED_DOCS), "--reindex", cwd=tmp_path
        )
    finally:
        os.close(fd)
    refused(run, f"KnowledgeBaseBusy: kb.sqlite is being written by pid {me} (ragsnap seed")


def test_a_lock_whose_record_names_an_exited_process_says_so_and_names_the_holder(
    tmp_path: Path,
) -> None:
    """The record names a process that has exited (a real one, started and reaped here)
    while this process holds the lock: the message says the named one has exited, names
    the live holder and how to list holders, and never says to delete the file."""
    import fcntl

    assert (
        run_cli("seed", "--kb", "kb.sqlite", "--seed-docs", str(SEED_DOCS), cwd=tmp_path).code == 0
    )
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()  # exited and reaped: its pid names no process
    lock = tmp_path / ".kb.sqlite.lock"
    fd = os.open(lock, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        record = f"pid {gone.pid} (ragsnap seed, since 2026-12-01T10:00:00Z)\n"
        os.pwrite(fd, record.encode(), 0)
        os.ftruncate(fd, len(record))
        run = run_cli("seed", "--kb", "kb.sqlite", "--seed-docs", str(SEED_DOCS), cwd=tmp_path)
    finally:
        os.close(fd)
    refused(
        run,
        f"KnowledgeBaseBusy: kb.sqlite is locked for writing, but the process its lock file "
        f"names (pid {gone.pid} (ragsnap seed",
        f"has exited; it is held by pid {os.getpid()} (",
        "fuser -v",
        "do not delete",
    )
    # released: the next seed takes it and records itself
    assert (
        run_cli("seed", "--kb", "kb.sqlite", "--seed-docs", str(SEED_DOCS), cwd=tmp_path).code == 0
    )
    assert f"pid {gone.pid} " not in lock.read_text()


def corpus(folder: Path, tag: str, n: int) -> Path:
    folder.mkdir()
    for i in range(n):
        (folder / f"{tag}-{i}.md").write_text(
            f"---\nsource: {tag}-{i}\nkb_scope: race\n---\n{tag} document {i}.\n\n"
            + f"## Section\n\n{tag} words {i} " * 3,
            encoding="utf-8",
        )
    return folder


@pytest.mark.slow
def test_two_seeds_at_once_never_mix_their_corpora(tmp_path: Path) -> None:
    """Seeding corpus b and corpus c into one knowledge base at the same time: each run
    either seeds its corpus whole or fails with exit 2 naming the other; the store then
    holds exactly one corpus."""
    b, c = corpus(tmp_path / "b", "b", 300), corpus(tmp_path / "c", "c", 300)
    env = {**os.environ, "PYTHONPATH": str(REPO / "eval")}
    for _ in range(3):
        (tmp_path / "kb.sqlite").unlink(missing_ok=True)
        procs = [
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "ragsnap",
                    "seed",
                    "--kb",
                    "kb.sqlite",
                    "--seed-docs",
                    str(d),
                ],
                cwd=tmp_path,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
            )
            for d in (b, c)
        ]
        results = [(p.wait(timeout=300), p.stderr.read() if p.stderr else "") for p in procs]
        for procs_ in procs:
            if procs_.stdout:
                procs_.stdout.close()
            if procs_.stderr:
                procs_.stderr.close()
        codes = sorted(code for code, _ in results)
        assert codes in ([0, 0], [0, 2]), results
        for code, err in results:
            assert "Traceback" not in err
            if code == 2:
                assert "KnowledgeBaseBusy" in err and "is being written by pid" in err
        listed = run_cli("lookup", "--kb", "kb.sqlite", "document", "--top-k", "5", cwd=tmp_path)
        assert listed.code == 0, listed.err
        import sqlite3

        with sqlite3.connect(tmp_path / "kb.sqlite") as db:
            sources = {r[0] for r in db.execute("SELECT source FROM documents")}
        assert len(sources) == 300
        assert {s.split("-")[0] for s in sources} in ({"b"}, {"c"})

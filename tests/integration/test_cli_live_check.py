"""``ragsnap live-check`` driven as a user would: a real ``ragsnap serve`` over the
repository's seed documents, the real CLI as a process, exit codes and reports."""

from __future__ import annotations

import hashlib
import json
import os
import socket
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conftest import REPO, Run, Served, run_cli

CASES = REPO / "cases" / "golden-cases.json"
TOKEN = "tok-9f2c7d1e-live-check"
#: cases that pass under ragsnap serve's vector-only similarity over the seed docs:
#: by source, by source and doc id, by doc id only, a Chinese query; and a no-answer case
PASSING = (
    "db-hikari-max-pool-size-key",
    "k8s-rolling-update-maxsurge",
    "cache-avalanche-prevention-zh",
    "mq-reconsume-later-exact",
)
NO_ANSWER = "db-noanswer-postgres-autovacuum"
#: a paraphrase vector-only similarity misses; the case names it a knownFailure
KNOWN = "db-slow-sql-paraphrase"
#: its expected source is second by vector similarity
SECOND = "db-err-4031-order-repository"

Serve = Callable[..., Served]


def seeded(cwd: Path) -> Path:
    """A knowledge base of the repository's seed documents in ``cwd``."""
    run = run_cli("seed", "--kb", "kb.sqlite", "--seed-docs", str(REPO / "seed-docs"), cwd=cwd)
    assert run.code == 0, run.out + run.err
    return cwd / "kb.sqlite"


def live_check(base_url: str, *args: str, cwd: Path, script: str | None = None) -> Run:
    cli = () if script else ("live-check",)
    return run_cli(
        *cli, "--base-url", base_url, "--cases", str(CASES), *args, cwd=cwd, script=script
    )


def reports(cwd: Path) -> tuple[dict[str, Any], str]:
    """The JSON report (parsed) and the Markdown report at their default paths."""
    folder = cwd / "reports"
    data = json.loads((folder / "live-post-reindex.json").read_text(encoding="utf-8"))
    return data, (folder / "live-post-reindex.md").read_text(encoding="utf-8")


def cases_of(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["caseId"]: c for c in report["cases"]}


def selected(*ids: str) -> list[str]:
    return [arg for case_id in ids for arg in ("--case", case_id)]


def json_ids() -> list[str]:
    """The case ids of the repository's golden cases file, in file order."""
    return [c["id"] for c in json.loads(CASES.read_text(encoding="utf-8"))["cases"]]


def case_json(case_id: str) -> dict[str, Any]:
    """One case of the repository's golden cases file, as written."""
    cases = json.loads(CASES.read_text(encoding="utf-8"))["cases"]
    found: dict[str, Any] = next(c for c in cases if c["id"] == case_id)
    return found


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


# -- a healthy service ------------------------------------------------------------------


def test_passes_on_the_seeded_knowledge_base(tmp_path: Path, serve: Serve) -> None:
    seeded(tmp_path)
    server = serve("--kb", "kb.sqlite", cwd=tmp_path)
    run = live_check(server.base_url, *selected(*PASSING, NO_ANSWER), cwd=tmp_path)
    assert run.code == 0, run.out + run.err
    assert run.out.startswith(f"live-check: 5 case(s) against {server.base_url} in "), run.out
    assert "4 passed, 0 failed (0 known), 1 skipped; 0 returned no results" in run.out
    assert "wrote reports/live-post-reindex.json and reports/live-post-reindex.md" in run.out
    assert "Traceback" not in run.err

    report, markdown = reports(tmp_path)
    assert report["kind"] == "ragsnap-live-check"
    assert report["baseUrl"] == server.base_url
    assert report["endpoint"] == "GET /api/search/similar"
    assert report["checkedAt"].endswith("Z")
    assert report["inputs"]["casesSha256"] == hashlib.sha256(CASES.read_bytes()).hexdigest()
    assert report["summary"] == {
        "cases": 5,
        "passed": 4,
        "failed": 0,
        "knownFailures": 0,
        "skipped": 1,
        "empty": 0,
        "allEmpty": False,
        "verdict": "pass",
    }
    by_id = cases_of(report)
    assert [c["caseId"] for c in report["cases"]] == [
        c for c in json_ids() if c in {*PASSING, NO_ANSWER}
    ]  # file order, not --case order
    hikari = by_id["db-hikari-max-pool-size-key"]
    assert hikari["status"] == "pass"
    assert hikari["firstExpectedRank"] == 1
    assert hikari["kbScope"] == "rag-eval" and hikari["topK"] == 5
    assert hikari["expectedSources"] == ["mysql-connection-pool"]
    assert hikari["expectedDocIds"] == ["doc-mysql-connection-pool"]
    assert hikari["resultCount"] == 5
    top = hikari["topResults"][0]
    assert top["source"] == "mysql-connection-pool"
    assert top["docId"] == "doc-mysql-connection-pool"
    assert top["breadcrumb"].startswith("Database > MySQL > Connection Pool")
    assert isinstance(top["score"], float) and top["scoreLabel"] in ("high", "medium", "low")
    assert top["textChars"] > 0 and "text" not in top
    assert hikari["rawFields"] == {
        "answer": ["kbScope", "query", "results", "topK"],
        "item": [
            *("breadcrumb", "chunkId", "docId", "rank", "score", "scoreLabel", "source"),
            *("text", "title"),
        ],
    }
    maxsurge = by_id["k8s-rolling-update-maxsurge"]  # expects a doc id only
    assert (maxsurge["status"], maxsurge["matched"]) == ("pass", ["doc-k8s-rolling-update"])
    skipped = by_id[NO_ANSWER]
    assert (skipped["status"], skipped["reason"]) == (
        "skipped",
        "noAnswer case: nothing is expected",
    )
    assert "**PASS: 4 of 4 checked case(s) passed**" in markdown
    assert "### db-hikari-max-pool-size-key (pass)" in markdown
    assert "Database > MySQL > Connection Pool" in markdown


@pytest.mark.slow
def test_a_missed_case_exits_1_and_is_listed(tmp_path: Path, serve: Serve) -> None:
    seeded(tmp_path)
    server = serve("--kb", "kb.sqlite", cwd=tmp_path)
    run = live_check(server.base_url, *selected(SECOND, PASSING[0]), cwd=tmp_path)
    assert run.code == 0, run.out + run.err
    assert cases_of(reports(tmp_path)[0])[SECOND]["firstExpectedRank"] == 2

    run = live_check(server.base_url, *selected(SECOND, PASSING[0]), "--top-k", "1", cwd=tmp_path)
    assert run.code == 1, run.out + run.err
    assert "1 passed, 1 failed (0 known), 0 skipped" in run.out
    assert f"  FAIL {SECOND}: no expected source in the top 1 (top: " in run.out
    report, markdown = reports(tmp_path)
    failed = cases_of(report)[SECOND]
    assert (failed["status"], failed["firstExpectedRank"], failed["topK"]) == ("fail", None, 1)
    assert failed["resultCount"] == len(failed["topResults"]) == 1
    assert failed["knownFailure"] is None
    assert report["overrides"] == {"kbScope": None, "topK": 1}
    assert report["summary"]["verdict"] == "fail"
    assert "**FAIL: 1 of 2 checked case(s) passed**" in markdown
    assert "## Failed cases (1)" in markdown
    assert "Overrides: topK=1" in markdown


@pytest.mark.slow
def test_a_known_failure_is_listed_but_does_not_fail(tmp_path: Path, serve: Serve) -> None:
    seeded(tmp_path)
    server = serve("--kb", "kb.sqlite", cwd=tmp_path)
    run = live_check(server.base_url, *selected(KNOWN, PASSING[0]), cwd=tmp_path)
    assert run.code == 0, run.out + run.err
    assert "1 passed, 1 failed (1 known), 0 skipped" in run.out
    assert f"  known failure {KNOWN}: no expected source in the top 5 (top: " in run.out
    report, markdown = reports(tmp_path)
    entry = cases_of(report)[KNOWN]
    assert entry["status"] == "fail"
    assert entry["knownFailure"] == case_json(KNOWN)["knownFailure"]
    assert "mysql-slow-query-log" not in {r["source"] for r in entry["topResults"]}
    assert report["summary"]["knownFailures"] == 1
    assert "## Failed cases (0)" in markdown and "## Known failures (1)" in markdown


def test_every_repo_case_is_accounted_for(tmp_path: Path, serve: Serve) -> None:
    seeded(tmp_path)
    server = serve("--kb", "kb.sqlite", cwd=tmp_path)
    run = live_check(server.base_url, "--concurrency", "3", cwd=tmp_path)
    # vector-only similarity misses some paraphrases, which the cases know
    assert run.code == 0, run.out + run.err
    report, _ = reports(tmp_path)
    s = report["summary"]
    assert s["cases"] == len(json_ids()) == len(report["cases"])
    assert [c["caseId"] for c in report["cases"]] == json_ids()
    assert s["passed"] + s["failed"] + s["skipped"] == s["cases"]
    no_answer = {c for c in json_ids() if case_json(c).get("noAnswer")}
    assert {c["caseId"] for c in report["cases"] if c["status"] == "skipped"} == no_answer
    assert s["empty"] == 0 and s["allEmpty"] is False
    assert s["passed"] > s["failed"] == s["knownFailures"] > 0
    assert run.out.count("  known failure ") == s["failed"]
    assert "  FAIL " not in run.out


def test_kb_scope_override(tmp_path: Path, serve: Serve) -> None:
    seeded(tmp_path)
    server = serve("--kb", "kb.sqlite", cwd=tmp_path)
    run = live_check(
        server.base_url, "--case", PASSING[0], "--kb-scope", "other-team", cwd=tmp_path
    )
    assert run.code == 1, run.out + run.err  # the other team's documents do not hold it
    report, _ = reports(tmp_path)
    entry = cases_of(report)[PASSING[0]]
    assert (entry["kbScope"], entry["status"]) == ("other-team", "fail")
    assert {r["source"] for r in entry["topResults"]} == {"billing-db-pool-tuning"}
    assert report["overrides"] == {"kbScope": "other-team", "topK": None}

    run = live_check(
        server.base_url, "--case", PASSING[0], "--kb-scope", "no-such-scope", cwd=tmp_path
    )
    assert run.code == 1, run.out + run.err
    report, _ = reports(tmp_path)
    assert cases_of(report)[PASSING[0]]["resultCount"] == 0
    assert report["summary"]["allEmpty"] is True


def test_base_url_from_ragsnap_yaml(tmp_path: Path, serve: Serve) -> None:
    seeded(tmp_path)
    server = serve("--kb", "kb.sqlite", cwd=tmp_path)
    (tmp_path / "ragsnap.yaml").write_text(
        f"http:\n  baseUrl: {server.base_url}\n", encoding="utf-8"
    )
    run = run_cli("live-check", "--cases", str(CASES), "--case", PASSING[0], cwd=tmp_path)
    assert run.code == 0, run.out + run.err
    assert f"against {server.base_url} " in run.out


@pytest.mark.slow
def test_the_script_wrapper(tmp_path: Path, serve: Serve) -> None:
    seeded(tmp_path)
    server = serve("--kb", "kb.sqlite", cwd=tmp_path)
    out = tmp_path / "out"
    run = live_check(
        server.base_url,
        *selected(*PASSING),
        "--json-report",
        str(out / "live.json"),
        "--markdown-report",
        str(out / "live.md"),
        cwd=tmp_path,
        script="eval_rag_live_acceptance.py",
    )
    assert run.code == 0, run.out + run.err
    assert "4 passed, 0 failed" in run.out
    report = json.loads((out / "live.json").read_text(encoding="utf-8"))
    assert report["summary"]["passed"] == 4
    assert (out / "live.md").read_text(encoding="utf-8").startswith("# ragsnap live check")
    assert not (tmp_path / "reports").exists()


# -- an emptied index -------------------------------------------------------------------


def _api(base_url: str, method: str, path: str, **params: str) -> Any:
    query = f"?{urllib.parse.urlencode(params)}" if params else ""
    request = urllib.request.Request(f"{base_url}{path}{query}", method=method)
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


@pytest.mark.slow
def test_an_emptied_index_exits_1_as_all_empty(tmp_path: Path, serve: Serve) -> None:
    seeded(tmp_path)
    server = serve("--kb", "kb.sqlite", cwd=tmp_path)
    documents = _api(server.base_url, "GET", "/api/documents")["documents"]
    assert len(documents) == 18
    for doc in documents:
        answer = _api(server.base_url, "DELETE", "/api/documents", source=doc["source"])
        assert answer["removed"] is True
    assert _api(server.base_url, "GET", "/api/documents")["documents"] == []

    run = live_check(server.base_url, *selected(*PASSING, NO_ANSWER), cwd=tmp_path)
    assert run.code == 1, run.out + run.err
    assert "0 passed, 4 failed (0 known), 1 skipped; 5 returned no results" in run.out
    assert "the index behind" in run.out and "looks empty; reindex" in run.out
    report, markdown = reports(tmp_path)
    assert report["summary"]["allEmpty"] is True
    assert report["summary"]["verdict"] == "fail"
    assert {c["reason"] for c in report["cases"] if c["status"] == "fail"} == {"no results"}
    assert "the index looks empty" in markdown

    # no checkable case at all: an empty index still fails
    run = live_check(server.base_url, "--case", NO_ANSWER, cwd=tmp_path)
    assert run.code == 1, run.out + run.err
    assert reports(tmp_path)[0]["summary"]["allEmpty"] is True


# -- services that cannot be used -------------------------------------------------------


def test_an_unreachable_service_exits_2_naming_the_url(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    run = live_check(url, "--case", PASSING[0], cwd=tmp_path)
    assert run.code == 2, run.out + run.err
    assert run.err.startswith(f"ServiceUnreachable: the service at {url} (from --base-url) ")
    assert "start the service, or pass --base-url" in run.err
    assert "Traceback" not in run.err
    assert not (tmp_path / "reports").exists()


def test_plain_http_to_a_remote_host_is_refused_before_any_request(tmp_path: Path) -> None:
    run = live_check("http://example.com", cwd=tmp_path)
    assert run.code == 2, run.out + run.err
    assert "plain http:// is allowed only to loopback hosts, not example.com" in run.err
    assert "did not answer" not in run.err  # refused, not tried
    assert not (tmp_path / "reports").exists()


def test_an_unknown_case_is_a_usage_error(tmp_path: Path) -> None:
    run = live_check("http://127.0.0.1:9", "--case", "no-such-case", cwd=tmp_path)
    assert run.code == 2
    assert "UsageError: --case no-such-case: no such case in" in run.err
    assert not (tmp_path / "reports").exists()


@pytest.mark.slow
def test_a_missing_mapped_field_exits_2_naming_it(tmp_path: Path, serve: Serve) -> None:
    seeded(tmp_path)
    server = serve("--kb", "kb.sqlite", cwd=tmp_path)
    config = tmp_path / "conf" / "ragsnap.yaml"
    config.parent.mkdir()
    config.write_text("http:\n  similar:\n    item:\n      source: docSource\n", encoding="utf-8")
    run = live_check(server.base_url, "--config", str(config), "--case", PASSING[0], cwd=tmp_path)
    assert run.code == 2, run.out + run.err
    assert f"case {PASSING[0]}: GET {server.base_url}/api/search/similar: " in run.err
    assert "`results[0].docSource` is missing" in run.err
    assert "http.similar.item.source" in run.err
    assert not (tmp_path / "reports").exists()


def test_a_search_over_the_record_budget_exits_2_before_it_is_sent(
    tmp_path: Path, serve: Serve
) -> None:
    seeded(tmp_path)
    server = serve("--kb", "kb.sqlite", cwd=tmp_path)
    run = live_check(server.base_url, "--max-records", "1", "--case", PASSING[0], cwd=tmp_path)
    assert run.code == 2, run.out + run.err
    assert f"UsageError: GET {server.base_url}/api/search/similar: topK " in run.err, run.err
    assert "more records than the budget per request (1 records, http.budgets.records" in run.err
    assert not (tmp_path / "reports").exists()
    within = live_check(server.base_url, "--max-records", "50", "--case", PASSING[0], cwd=tmp_path)
    assert within.code == 0, within.out + within.err


# -- a service behind a token -----------------------------------------------------------


@pytest.fixture
def guarded(tmp_path: Path, serve: Serve) -> Served:
    seeded(tmp_path)
    return serve(
        "--kb",
        "kb.sqlite",
        "--token-env",
        "RAGSNAP_TEST_TOKEN",
        cwd=tmp_path,
        env={"RAGSNAP_TEST_TOKEN": TOKEN},
    )


def _no_token_anywhere(cwd: Path, *runs: Run) -> None:
    for run in runs:
        assert TOKEN not in run.out and TOKEN not in run.err
    for path in cwd.rglob("*"):
        if path.is_file() and path.suffix in (".json", ".md"):
            assert TOKEN not in path.read_text(encoding="utf-8"), path


@pytest.mark.slow
def test_without_the_token_exits_2_mentioning_it(tmp_path: Path, guarded: Served) -> None:
    run = live_check(guarded.base_url, "--case", PASSING[0], cwd=tmp_path)
    assert run.code == 2, run.out + run.err
    assert "HTTP 401" in run.err and "check the token" in run.err
    assert not (tmp_path / "reports").exists()

    unset = live_check(
        guarded.base_url,
        "--token-env",
        "RAGSNAP_TEST_UNSET_VAR",
        "--case",
        PASSING[0],
        cwd=tmp_path,
    )
    assert unset.code == 2, unset.out + unset.err
    assert "the environment variable RAGSNAP_TEST_UNSET_VAR is not set" in unset.err

    wrong = tmp_path / "wrong-token"
    wrong.write_text("not-the-token\n", encoding="utf-8")
    bad = live_check(
        guarded.base_url, "--token-file", str(wrong), "--case", PASSING[0], cwd=tmp_path
    )
    assert bad.code == 2 and "check the token" in bad.err
    assert "not-the-token" not in bad.err
    _no_token_anywhere(tmp_path, run, unset, bad)


@pytest.mark.slow
def test_the_right_token_passes_and_is_never_written(
    tmp_path: Path, guarded: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n", encoding="utf-8")
    by_file = live_check(
        guarded.base_url, "--token-file", str(token_file), *selected(*PASSING), cwd=tmp_path
    )
    assert by_file.code == 0, by_file.out + by_file.err
    assert reports(tmp_path)[0]["summary"]["passed"] == 4

    monkeypatch.setenv("RAGSNAP_TEST_TOKEN", TOKEN)  # run_cli passes the environment on
    by_env = live_check(
        guarded.base_url, "--token-env", "RAGSNAP_TEST_TOKEN", *selected(*PASSING), cwd=tmp_path
    )
    assert by_env.code == 0, by_env.out + by_env.err
    _no_token_anywhere(tmp_path, by_file, by_env)
    out, err = guarded.stop()
    assert TOKEN not in out + err


@pytest.mark.parametrize("kind", ["fifo", "device", "huge"])
def test_a_token_file_that_is_not_a_small_regular_file_is_exit_2(tmp_path: Path, kind: str) -> None:
    """A FIFO used to block forever and /dev/zero to run out of memory: both are refused
    before anything is read, naming the file (no service is needed to get there)."""
    if kind == "fifo":
        token = tmp_path / "token"
        os.mkfifo(token)
        problem = "cannot be read: it is not a regular file (a pipe or a device?)"
    elif kind == "device":
        token = Path("/dev/zero")
        problem = "cannot be read: it is not a regular file (a pipe or a device?)"
    else:
        token = tmp_path / "token"
        token.write_bytes(b"x" * (64 * 1024 + 1))
        problem = "is 65,537 bytes, more than the 65,536 a token file may have"
    run = live_check("http://127.0.0.1:9", "--token-file", str(token), cwd=tmp_path)
    assert run.code == 2, run.out + run.err
    assert run.err.splitlines()[-1].startswith(f"InputError: {token}: {problem}")

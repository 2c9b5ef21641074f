"""Privacy mode driven as a user would (GoodBuddy's privacy test): every report kind
written with ``--privacy`` on the example project, then every written file scanned
for anything of the inputs that is not an id or a hash.

The project (cases, fixtures, reports, seed documents, ragsnap.yaml) is copied into
a temporary folder and seeded; then ``score``, ``score --compare-to`` with the PR
comment and JUnit XML (against the committed full baseline and against a fixture
set with a regressed case), ``diff`` (of full reports, and of two privacy
reports), ``trial`` (lexical and alias, with a trial diff) and ``live-check``
against a real ``ragsnap serve`` on loopback, once more with ``--state`` after
``ragsnap prepare`` and a document changed on the service (an invalid run whose
verification failures name documents). The needles are every seed
document's title, breadcrumb, source file path and name and source name, each
chunk's first 40 characters, every query, expected keyword and breadcrumb, the
kbScope, the input file paths, the service URL and the embedder's model name and
the knowledge base's fingerprints. The same runs without ``--privacy`` must show
some of them, so the scan can fail.
"""

from __future__ import annotations

import html
import json
import re
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from conftest import REPO, Served, copy_example, run_cli
from ragsnap.io.schema import validate
from ragsnap.kb.corpus import chunk_document, load_seed_docs
from ragsnap.settings import ChunkSettings

Serve = Callable[..., Served]
#: the case whose fixture loses its expected document, so the diff has a regression
REGRESSED = "db-hikari-max-pool-size-key"
#: cases live-check sends (a pass, a known failure, a no-answer case)
LIVE_CASES = ("db-hikari-max-pool-size-key", "db-slow-sql-paraphrase", "k8s-noanswer-ingress-tls")
#: what the hashing embedder and the embedded store are known by
FINGERPRINTS = ("char-ngram", "bigram-v1", "snowball-english", "heuristic-v1", "cc-adaptive-v1")


def _project(root: Path) -> Path:
    copy_example(root, "cases", "fixtures", "reports", "seed-docs", "ragsnap.yaml")
    run = run_cli("seed", cwd=root)
    assert run.code == 0, run.out + run.err
    regressed = root / "fixtures-regressed"
    shutil.copytree(root / "fixtures", regressed)
    path = regressed / f"{REGRESSED}.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    lookup = data["lookupResult"]
    blocks = [b for b in lookup["evidenceBlocks"] if b["source"] != "mysql-connection-pool"]
    for rank, block in enumerate(blocks, 1):
        block["rank"] = rank
    lookup["evidenceBlocks"] = blocks
    path.write_text(json.dumps(data, ensure_ascii=False, indent=2), encoding="utf-8")
    return root


def _run(root: Path, *args: str, codes: tuple[int, ...] = (0, 1)) -> None:
    run = run_cli(*args, cwd=root)
    assert run.code in codes, " ".join(args) + "\n" + run.out + run.err
    assert "Traceback" not in run.err


def _every_report(root: Path, out: str, base_url: str, privacy: tuple[str, ...]) -> Path:
    """Run every command that writes reports into ``root/out``; return that folder."""
    o = root / out
    o.mkdir()

    def path(name: str) -> str:
        return f"{out}/{name}"

    _run(root, "score", *privacy, "--json-report", path("score.json"),
         "--markdown-report", path("score.md"))  # fmt: skip
    _run(root, "score", *privacy, "--compare-to", "reports/baseline.json",
         "--json-report", path("current.json"), "--markdown-report", path("current.md"),
         "--diff-json-report", path("baseline-diff.json"),
         "--diff-markdown-report", path("baseline-diff.md"),
         "--report", f"github={path('pr-comment.md')}", "--junit-xml", path("junit.xml"))  # fmt: skip
    _run(root, "score", *privacy, "--fixtures", "fixtures-regressed",
         "--compare-to", "reports/baseline.json",
         "--json-report", path("regressed.json"), "--markdown-report", path("regressed.md"),
         "--diff-json-report", path("regressed-diff.json"),
         "--diff-markdown-report", path("regressed-diff.md"),
         "--report", f"github={path('regressed-pr.md')}",
         "--junit-xml", path("regressed-junit.xml"))  # fmt: skip
    _run(root, "diff", *privacy, "reports/baseline.json", path("regressed.json"),
         "--diff-json-report", path("diff.json"), "--diff-markdown-report", path("diff.md"),
         "--report", f"github={path('diff-pr.md')}", "--junit-xml", path("diff-junit.xml"))  # fmt: skip
    _run(root, "diff", path("score.json"), path("regressed.json"),
         "--diff-json-report", path("diff2.json"), "--diff-markdown-report", path("diff2.md"),
         "--junit-xml", path("diff2-junit.xml"))  # fmt: skip
    _run(root, "trial", *privacy, "--methods", "lexical,alias", "--runs-dir", path("runs"),
         "--json-report", path("trial.json"), "--markdown-report", path("trial.md"))  # fmt: skip
    _run(root, "trial", *privacy, "--methods", "lexical,alias", "--split", "dev",
         "--compare-to", path("trial.json"),
         "--json-report", path("trial-dev.json"), "--markdown-report", path("trial-dev.md"),
         "--diff-json-report", path("trial-diff.json"),
         "--diff-markdown-report", path("trial-diff.md"))  # fmt: skip
    cases = [arg for case_id in LIVE_CASES for arg in ("--case", case_id)]
    _run(root, "live-check", *privacy, "--base-url", base_url, *cases,
         "--json-report", path("live.json"), "--markdown-report", path("live.md"))  # fmt: skip
    # a prepared service, changed behind the state's back: an invalid run with failures
    (root / f"{out}-state").mkdir(mode=0o700)
    state = f"{out}-state/s.json"
    _run(root, "prepare", "--state", state, "--base-url", base_url, codes=(0,))
    edited = sorted((root / "seed-docs").glob("*.md"))[0]
    requests.post(
        f"{base_url}/api/documents",
        json={"name": edited.name, "content": edited.read_text(encoding="utf-8") + "\nEdited.\n"},
        timeout=60,
    ).raise_for_status()
    _run(root, "live-check", *privacy, "--base-url", base_url, *cases, "--state", state,
         "--repeat-check", "--json-report", path("live-state.json"),
         "--markdown-report", path("live-state.md"), codes=(1,))  # fmt: skip
    _run(root, "diff", *privacy, path("trial.json"), path("trial-dev.json"),
         "--diff-json-report", path("trial-diff2.json"),
         "--diff-markdown-report", path("trial-diff2.md"))  # fmt: skip
    return o


def _needles(root: Path, base_url: str) -> dict[str, str]:
    """Every private string of the inputs -> what it is."""
    found: dict[str, str] = {}
    for doc in load_seed_docs(root / "seed-docs"):
        name = Path(doc.path).name
        found[f"seed-docs/{name}"] = "source path"
        found[name] = "source file name"
        for value, what in ((doc.title, "title"), (doc.breadcrumb, "breadcrumb")):
            if value:
                found[value] = what
        for chunk in chunk_document(doc, ChunkSettings()):
            found[chunk.text[:40]] = f"chunk text of {chunk.chunk_id}"
    cases = json.loads((root / "cases" / "golden-cases.json").read_text(encoding="utf-8"))
    for case in cases["cases"]:
        found[case["query"]] = f"query of {case['id']}"
        for keyword in case.get("expectedKeywords", ()):
            if len(keyword) >= 5 and not keyword.isdigit():  # '137' is in any number
                found[keyword] = "expected keyword"
        for crumb in case.get("expectedBreadcrumbs", ()):
            found[crumb] = "expected breadcrumb"
        if case.get("knownFailure"):
            found[case["knownFailure"][:40]] = "knownFailure text"
    found["rag-eval"] = "kbScope"
    found["golden-cases.json"] = "input path"
    found["-state/s.json"] = "input path"
    found["aliases.yaml"] = "input path"
    found[base_url] = "endpoint URL"
    found["127.0.0.1"] = "endpoint host"
    found["/api/search/similar"] = "endpoint"
    for value in FINGERPRINTS:
        found[value] = "embedder or knowledge-base fingerprint"
    return {needle: what for needle, what in found.items() if needle.strip()}


def _sources(root: Path) -> list[str]:
    return [doc.source for doc in load_seed_docs(root / "seed-docs")]


def _forms(needle: str) -> set[str]:
    """The needle as written, as XML escapes it and as JSON escapes it."""
    return {needle, html.escape(needle), html.escape(needle, quote=False), json.dumps(needle)[1:-1]}


def _hits(folder: Path, needles: dict[str, str], sources: list[str]) -> list[str]:
    hits = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        text = path.read_text(encoding="utf-8")
        for needle, what in needles.items():
            if any(form in text for form in _forms(needle)):
                hits.append(f"{path.relative_to(folder)}: {what}: {needle!r}")
        if path.suffix == ".trec" or path.name == "qrels.txt":
            continue  # TREC files hold chunk ids (`<source>#<n>`): ids, allowed
        for source in sources:  # a source name, not a case id that starts with it
            if re.search(rf"(?<![\w-]){re.escape(source)}(?![\w-])", text):
                hits.append(f"{path.relative_to(folder)}: source name: {source!r}")
    return hits


@pytest.fixture
def project(tmp_path: Path, serve: Serve) -> Iterator[tuple[Path, str]]:
    root = _project(tmp_path / "project")
    server = serve("--kb", ".ragsnap/kb.sqlite", cwd=root)
    yield root, server.base_url


@pytest.mark.slow
def test_privacy_reports_hold_no_private_string(project: tuple[Path, str]) -> None:
    root, base_url = project
    folder = _every_report(root, "private", base_url, ("--privacy",))
    names = sorted(p.name for p in folder.rglob("*") if p.is_file())
    assert len(names) == 36, names  # every report of every command above was written
    needles = _needles(root, base_url)
    assert len(needles) > 150
    assert _hits(folder, needles, _sources(root)) == []

    for name, schema in (
        ("score.json", "private-report"),
        ("regressed.json", "private-report"),
        ("baseline-diff.json", "private-diff-report"),
        ("regressed-diff.json", "private-diff-report"),
        ("diff.json", "private-diff-report"),
        ("diff2.json", "private-diff-report"),
        ("trial.json", "private-trial-report"),
        ("live.json", "private-live-report"),
        ("live-state.json", "private-live-report"),
    ):
        data: Any = json.loads((folder / name).read_text(encoding="utf-8"))
        assert data["privacy"] is True, name
        validate(data, schema, name, "privacy report")

    # what a privacy report still says: ids, hashes, measurements, id-based failures
    report = json.loads((folder / "regressed.json").read_text(encoding="utf-8"))
    assert set(report["inputs"]) == {
        "casesSha256",
        "fixturesSha256",
        "providersSha256",
        "evaluationDefinitionSha256",
    }
    case = next(c for c in report["cases"] if c["id"] == REGRESSED)
    assert case["reasons"] == [
        "hit level weak is below the minimum medium; 0 expected target(s) found in the top 5, "
        "breadcrumbs 1/1, keywords 1/2"
    ]
    diff = json.loads((folder / "regressed-diff.json").read_text(encoding="utf-8"))
    assert diff["regressed"] is True and diff["baseline"] == "baseline"
    assert [c["id"] for c in diff["cases"] if c["status"] == "regression"] == [REGRESSED]
    # the diff of two privacy reports finds the same regression
    both = json.loads((folder / "diff2.json").read_text(encoding="utf-8"))
    assert [c["id"] for c in both["cases"] if c["status"] == "regression"] == [REGRESSED]
    assert both["counts"] == diff["counts"]
    trial = json.loads((folder / "trial.json").read_text(encoding="utf-8"))
    assert [m["name"] for m in trial["plan"]["methods"]] == ["lexical", "alias"]
    assert set(trial["timing"]["latency"]) == {"lexical", "alias"}
    live = json.loads((folder / "live.json").read_text(encoding="utf-8"))
    assert sorted(c["caseId"] for c in live["cases"]) == sorted(LIVE_CASES)
    assert live["summary"]["passed"] == 1 and live["summary"]["knownFailures"] == 1
    verified = json.loads((folder / "live-state.json").read_text(encoding="utf-8"))
    assert verified["summary"]["verdict"] == "invalid"
    assert verified["service"]["failuresByKind"] == {"changed-revision": 2}
    assert verified["service"]["repeatCheck"] == {"cases": len(LIVE_CASES), "unstable": 0}
    assert all(f["documentId"] and f["sourceSha256"] for f in verified["service"]["failures"])


@pytest.mark.slow
def test_full_reports_hold_the_strings_the_scan_looks_for(project: tuple[Path, str]) -> None:
    root, base_url = project
    folder = _every_report(root, "full", base_url, ())
    needles = _needles(root, base_url)
    hits = _hits(folder, needles, _sources(root))
    kinds = {hit.split(": ")[1].split(" of ")[0] for hit in hits}
    assert {
        "query",
        "title",
        "breadcrumb",
        "expected breadcrumb",
        "source name",
        "kbScope",
        "input path",
        "endpoint URL",
        "embedder or knowledge-base fingerprint",
        "knownFailure text",
    } <= kinds, kinds


@pytest.mark.slow
def test_trial_shareable_makes_privacy_the_default(tmp_path: Path) -> None:
    copy_example(tmp_path, "cases", "seed-docs")
    config = (REPO / "ragsnap.yaml").read_text(encoding="utf-8")
    (tmp_path / "ragsnap.yaml").write_text(config + "  shareable: true\n", encoding="utf-8")
    args = ("trial", "--methods", "lexical", "--split", "dev")
    _run(tmp_path, *args, "--json-report", "shared.json", "--markdown-report", "shared.md")
    _run(tmp_path, *args, "--no-privacy", "--json-report", "full.json", "--markdown-report", "f.md")
    shared = json.loads((tmp_path / "shared.json").read_text(encoding="utf-8"))
    full = json.loads((tmp_path / "full.json").read_text(encoding="utf-8"))
    assert shared["privacy"] is True and "privacy" not in full
    assert set(shared["plan"]["methods"][0]) == {"name", "sha256"}
    assert "char-ngram" in json.dumps(full) and "char-ngram" not in json.dumps(shared)

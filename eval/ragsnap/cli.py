"""The ``ragsnap`` command line: one ``main(argv)`` behind every entry point.

Subcommand handlers live in ``ragsnap.commands`` and are imported only when
their subcommand runs, so ``ragsnap --help`` stays fast. Exit codes, for
every command: 0 all good; 1 a case failed or a regression was found; 2 bad
usage or bad input (the message names the file, the field and the fix). A
traceback means a bug.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path

from . import __version__
from .commands import (
    DEFAULT_BASELINE,
    DEFAULT_CASES,
    DEFAULT_DIFF_JSON,
    DEFAULT_DIFF_MARKDOWN,
    DEFAULT_FIXTURES,
    DEFAULT_JSON_REPORT,
    DEFAULT_LIVE_JSON,
    DEFAULT_LIVE_MARKDOWN,
    DEFAULT_MARKDOWN_REPORT,
    DEFAULT_TREND_MARKDOWN,
    DEFAULT_TRIAL_DIFF_JSON,
    DEFAULT_TRIAL_DIFF_MARKDOWN,
    DEFAULT_TRIAL_JSON,
    DEFAULT_TRIAL_MARKDOWN,
)
from .errors import INTERNAL_ERROR, RagsnapError

__all__ = ["build_parser", "main"]


def _add_cases(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--cases",
        type=Path,
        default=DEFAULT_CASES,
        metavar="FILE",
        help=f"golden cases file (default: {DEFAULT_CASES})",
    )


def _add_reports(parser: argparse.ArgumentParser, json_report: Path, markdown_report: Path) -> None:
    parser.add_argument(
        "--json-report",
        type=Path,
        default=json_report,
        metavar="FILE",
        help=f"where to write the JSON report (default: {json_report})",
    )
    parser.add_argument(
        "--markdown-report",
        type=Path,
        default=markdown_report,
        metavar="FILE",
        help=f"where to write the Markdown report (default: {markdown_report})",
    )


def _add_inputs(parser: argparse.ArgumentParser) -> None:
    _add_cases(parser)
    parser.add_argument(
        "--fixtures",
        type=Path,
        default=DEFAULT_FIXTURES,
        metavar="DIR",
        help=f"folder of {{caseId}}.json fixtures (default: {DEFAULT_FIXTURES})",
    )


def _add_common(parser: argparse.ArgumentParser, listed: str) -> None:
    parser.add_argument(
        "--config",
        type=Path,
        metavar="FILE",
        help="settings file with diff tolerances (default: ragsnap.yaml when it exists, "
        "else every tolerance is 0)",
    )
    parser.add_argument(
        "--max-listed",
        type=int,
        default=20,
        metavar="N",
        help=f"list at most N {listed} cases on the terminal (default: 20)",
    )


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``ragsnap`` and its subcommands."""
    parser = argparse.ArgumentParser(
        prog="ragsnap",
        description="Retrieval regression harness for RAG knowledge bases.",
        epilog="Exit codes: 0 all good, 1 a case failed or a regression was found, "
        "2 bad usage or input, 3 an internal error (a bug: --debug shows the traceback).",
    )
    parser.add_argument("--version", action="version", version=f"ragsnap {__version__}")
    parser.add_argument(
        "--debug",
        action="store_true",
        help="show the traceback of an internal error (default: off; also RAGSNAP_DEBUG=1)",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    score = sub.add_parser(
        "score",
        help="score saved fixtures against golden cases, optionally diff against a baseline",
        description="Score fixtures/{caseId}.json against the golden cases offline (no "
        "knowledge base, no network), write JSON and Markdown reports, and with "
        "--compare-to diff them against a baseline report.",
    )
    _add_inputs(score)
    _add_reports(score, DEFAULT_JSON_REPORT, DEFAULT_MARKDOWN_REPORT)
    score.add_argument(
        "--compare-to",
        type=Path,
        metavar="FILE",
        help="baseline JSON report to diff against (default: no diff)",
    )
    score.add_argument(
        "--diff-json-report",
        type=Path,
        metavar="FILE",
        help=f"where to write the JSON diff (default with --compare-to: {DEFAULT_DIFF_JSON})",
    )
    score.add_argument(
        "--diff-markdown-report",
        type=Path,
        metavar="FILE",
        help="where to write the Markdown diff (default with --compare-to: "
        f"{DEFAULT_DIFF_MARKDOWN})",
    )
    _add_common(score, "failing or regressed")
    _add_review(score)
    _add_privacy(score)
    score.add_argument(
        "--history",
        type=Path,
        metavar="DIR",
        help="also write the JSON score report into DIR under a dated name "
        "(YYYY-MM-DDTHHMMSS.mmmZ-<hash>.json, UTC), for `ragsnap trend`; CI keeps the history "
        "this way (default: none; `ragsnap accept` writes to `history` in ragsnap.yaml, "
        "else reports/history)",
    )
    _add_allow_outside(score)
    score.set_defaults(handler="score")

    diff = sub.add_parser(
        "diff",
        help="diff two existing JSON score reports",
        description="Compare a current JSON score report with a baseline report without "
        "rescoring; exits 1 on any regression.",
    )
    diff.add_argument("baseline", type=Path, help="the baseline JSON report")
    diff.add_argument("current", type=Path, help="the current JSON report")
    diff.add_argument(
        "--diff-json-report",
        type=Path,
        default=DEFAULT_DIFF_JSON,
        metavar="FILE",
        help=f"where to write the JSON diff (default: {DEFAULT_DIFF_JSON})",
    )
    diff.add_argument(
        "--diff-markdown-report",
        type=Path,
        default=DEFAULT_DIFF_MARKDOWN,
        metavar="FILE",
        help=f"where to write the Markdown diff (default: {DEFAULT_DIFF_MARKDOWN})",
    )
    _add_common(diff, "regressed")
    _add_review(diff)
    _add_privacy(diff)
    _add_allow_outside(diff)
    diff.set_defaults(handler="diff")

    trend = sub.add_parser(
        "trend",
        help="score reports over time: a metric-over-time table and one chart per metric",
        description="Read score reports (or folders of them; by default the history folder "
        "that `ragsnap accept` and `ragsnap score --history` write), order them by the date "
        "in their file names (YYYY-MM-DD, optionally with a time) when every name has one, "
        "else in the order given, and write each metric over time as a Markdown table and, "
        "with --html-report, one small chart per metric. Both open with the latest change "
        "(the last report against the one before): which shown metrics dropped, or that "
        "none did. Reports that scored other golden cases than the one before are marked.",
    )
    trend.add_argument(
        "reports",
        type=Path,
        nargs="*",
        metavar="REPORT",
        help="JSON score reports, or folders of them (other JSON files there are skipped) "
        "(default: the `history` folder of ragsnap.yaml, else reports/history)",
    )
    trend.add_argument(
        "--metrics",
        metavar="NAMES",
        help="comma-separated metrics to show, e.g. passRate,recallAtK,ndcg@10 (default: "
        "every metric the reports have)",
    )
    trend.add_argument(
        "--config",
        type=Path,
        metavar="FILE",
        help="settings file with the `history` folder (default: ragsnap.yaml when it exists)",
    )
    trend.add_argument(
        "--markdown-report",
        type=Path,
        default=DEFAULT_TREND_MARKDOWN,
        metavar="FILE",
        help=f"where to write the Markdown table (default: {DEFAULT_TREND_MARKDOWN})",
    )
    _add_html(trend, what="the metrics over time as a chart and a table")
    _add_allow_outside(trend)
    trend.set_defaults(handler="trend")

    check = sub.add_parser(
        "check",
        help="check the golden cases' labels against the seed corpus (offline)",
        description="Check the golden cases against the seed documents, offline: every "
        "judgment target (chunkId, docId, source) and every expectedSources, expectedDocIds, "
        "expectedContextSources and expectedRerankTopSource value exists (chunk ids as "
        "`ragsnap seed` cuts them with kb.chunking), every answer span occurs verbatim in "
        "its chunk or document, every expectedBreadcrumbs value is a prefix of a "
        "document's breadcrumb, and no case holds a secret (API key, token, password=, "
        "private key), a personal path (/home/..., C:\\..., ~/) or an endpoint "
        "(http://..., host:port); these are errors. A language with answerable cases but "
        "no noAnswer case is a warning. One line per finding: FILE at JSON-POINTER: "
        "problem; fix. Then the committed fixtures are read as `ragsnap score` reads them and "
        "compared with what fixtures/_manifest.json says they were captured from: a seed "
        "document or a lookup setting changed since, or a fixture edited by hand, makes them "
        "stale.",
        epilog="Exit codes: 0 no errors (warnings alone exit 0), 1 stale fixtures, 2 an error "
        "in a label or bad input (as for every command), 3 an internal error.",
    )
    _add_inputs(check)
    check.add_argument(
        "--seed-docs",
        type=Path,
        metavar="DIR",
        help="folder of Markdown seed documents, or a .jsonl corpus (default: kb.seedDocs "
        "in ragsnap.yaml, else seed-docs)",
    )
    check.add_argument(
        "--config",
        type=Path,
        metavar="FILE",
        help="settings file for kb.seedDocs and kb.chunking (default: ragsnap.yaml when it "
        "exists, else built-in defaults)",
    )
    check.add_argument(
        "--json-report",
        type=Path,
        metavar="FILE",
        help="also write the findings as JSON (default: none)",
    )
    _add_allow_outside(check)
    check.set_defaults(handler="check")

    metrics = sub.add_parser(
        "metrics",
        help="evaluate a TREC run against TREC qrels, trec_eval style",
        description="Read TREC qrels (query iter doc grade) and a run (query Q0 doc rank score "
        "tag) and print measure<TAB>query<TAB>value lines: per query with -q, then each "
        "measure's `all` line, num_q (queries averaged over) and num_excluded (queries of the "
        "qrels left out). By default the `all` lines are trec_eval's: the queries in both the "
        "run and the qrels are averaged over, including those whose judgments hold no "
        "relevant document (they score 0); a run query without judgments and a judged query "
        "missing from the run are ignored. -c averages over every query in the qrels, a "
        "missing one scoring 0 (trec_eval -c); --query-set ragsnap uses golden-case scoring's "
        "rule: queries without a relevant judgment are left out, judged queries missing from "
        "the run score 0. num_ret, num_rel and num_rel_ret are summed; gm_map is the "
        "geometric mean of AP (floor 0.00001) and has no per-query lines.",
    )
    metrics.add_argument("--qrels", type=Path, required=True, metavar="FILE", help="qrels file")
    metrics.add_argument("--run", type=Path, required=True, metavar="FILE", help="run file")
    metrics.add_argument(
        "-m",
        "--measure",
        action="append",
        metavar="MEASURE",
        help="a measure such as ndcg@10, recall@5, map, mrr@10, precision@10, hit@10, "
        "rprec, bpref, gm_map, iprec@0.10, num_ret, num_rel, num_rel_ret, ndcg_exp@10, "
        "coverage@10; trec_eval names (P_5, recip_rank, iprec_at_recall_0.10) and "
        "ir_measures names (AP, RR, R@5, nDCG@10, P@5) work too; repeatable (default: "
        "map, rprec, mrr@10, ndcg@10, recall@5, recall@10, precision@5, precision@10, "
        "hit@10, coverage@10)",
    )
    metrics.add_argument(
        "-q", "--per-query", action="store_true", help="also print one line per query"
    )
    metrics.add_argument(
        "--digits", type=int, default=4, metavar="N", help="decimal places (default: 4)"
    )
    metrics.add_argument(
        "-c",
        "--complete",
        action="store_true",
        help="average over every query in the qrels, a judged query missing from the run "
        "scoring 0, as trec_eval -c does; the same as --query-set complete (default: off)",
    )
    metrics.add_argument(
        "--query-set",
        choices=("trec", "complete", "ragsnap"),
        help="which queries are averaged over: trec = in both run and qrels (trec_eval), "
        "complete = every query in the qrels (trec_eval -c), ragsnap = judged queries with "
        "a relevant document, in the run or not, as golden-case scoring does (default: trec)",
    )
    metrics.set_defaults(handler="metrics")

    export = sub.add_parser(
        "export-run",
        help="write fixtures as a TREC run (and judgments as TREC qrels)",
        description="Write each case's evidence blocks as a TREC run (scores n - rank + 1, so "
        "trec_eval keeps the fixture's order) and, with --qrels-out, the golden cases' "
        "judgments as TREC qrels, for trec_eval, ranx or `ragsnap metrics`.",
    )
    _add_inputs(export)
    export.add_argument("--out", type=Path, required=True, metavar="FILE", help="run file")
    export.add_argument(
        "--qrels-out", type=Path, metavar="FILE", help="also write the judgments (default: no)"
    )
    export.add_argument(
        "--target",
        choices=("chunkId", "docId", "source"),
        help="which evidence id to rank (default: each case's judgment kind, else chunkId)",
    )
    export.add_argument("--tag", default="ragsnap", help="the run tag column (default: ragsnap)")
    _add_allow_outside(export)
    export.set_defaults(handler="export_run")

    seed = sub.add_parser(
        "seed",
        help="import seed-docs/*.md into the knowledge base (delete-then-upload by source)",
        description="Make the knowledge base hold exactly the seed documents: new files are "
        "added, changed files re-chunked and re-embedded, files that are gone removed, "
        "unchanged files left alone; all in one transaction. Frontmatter feeds metadata only; "
        "the Markdown body is chunked and indexed.",
    )
    seed.add_argument(
        "--seed-docs",
        type=Path,
        metavar="DIR",
        help="folder of Markdown seed documents, or a .jsonl corpus (one {source, text, ...} "
        "object a line) (default: kb.seedDocs in ragsnap.yaml, else seed-docs)",
    )
    _add_kb(seed)
    seed.add_argument(
        "--backend",
        choices=("embedded", "milvus", "http"),
        help="embedded: the SQLite knowledge base; milvus: kb.milvus.uri (extra `milvus`); "
        "http: upload through the service's endpoint (default: kb.backend in ragsnap.yaml, "
        "else embedded)",
    )
    seed.add_argument(
        "--base-url",
        metavar="URL",
        help="http: the service (default: http.baseUrl in ragsnap.yaml, else "
        "http://127.0.0.1:9900)",
    )
    _add_token(seed, "http: send this bearer token")
    seed.add_argument(
        "--reindex",
        action="store_true",
        help="rebuild every document, also to switch embedder or segmenter (default: only "
        "changed documents)",
    )
    seed.set_defaults(handler="seed")

    prepare = sub.add_parser(
        "prepare",
        help="upload the seed corpus to a live service, resumably, recording its receipts "
        "in a state file",
        description="Upload seed-docs/ through the service's upload endpoint with "
        "deterministic idempotency keys and record each document's server id, revision and "
        "embedding identity in --state (mode 0600), checkpointed every 64 documents, under a "
        "lock beside the state. Re-running with the same state resumes: it checks the saved "
        "documents against the service, re-sends only what is missing, and verifies the "
        "whole state at the end. Exit 0 verified, 1 verification failures (listed), 2 usage, "
        "lock, service or budget errors.",
    )
    prepare.add_argument(
        "--backend",
        choices=("http",),
        default="http",
        help="the service to prepare (default: http, the only one)",
    )
    prepare.add_argument(
        "--state",
        type=Path,
        required=True,
        metavar="FILE",
        help="the state file, in an existing private folder (required)",
    )
    prepare.add_argument(
        "--seed-docs",
        type=Path,
        metavar="DIR",
        help="folder of Markdown seed documents, or a .jsonl corpus (default: kb.seedDocs "
        "in ragsnap.yaml, else seed-docs)",
    )
    prepare.add_argument(
        "--config",
        type=Path,
        metavar="FILE",
        help="settings file (default: ragsnap.yaml when it exists, else built-in defaults)",
    )
    prepare.add_argument(
        "--base-url",
        metavar="URL",
        help="the service (default: http.baseUrl in ragsnap.yaml, else http://127.0.0.1:9900)",
    )
    _add_token(prepare, "send this bearer token")
    prepare.add_argument(
        "--max-requests",
        type=_positive_int,
        metavar="N",
        help="send at most N requests in this run, then checkpoint and stop with exit 2 "
        "(default: no limit)",
    )
    prepare.add_argument(
        "--reset-state",
        action="store_true",
        help="start over: ignore what --state holds (the service keeps its documents; the "
        "same keys get the same records back) (default: resume from it)",
    )
    prepare.add_argument(
        "--verify-only",
        action="store_true",
        help="upload nothing: verify the state against the service (under the lock) and "
        "record the verdict in it, e.g. before and after a trial (default: prepare)",
    )
    prepare.set_defaults(handler="prepare")

    lookup = sub.add_parser(
        "lookup",
        help="run one query through the lookup pipeline and print its lookupResult",
        description="Print the full lookupResult (evidence blocks, context pack, retrieval and "
        "rerank traces) of one query as JSON, for debugging the pipeline.",
    )
    lookup.add_argument("query", help="the query text")
    _add_kb(lookup)
    _add_store_backend(lookup)
    lookup.add_argument(
        "--kb-scope",
        metavar="SCOPE",
        help="only documents of this kb_scope (default: every document)",
    )
    lookup.add_argument(
        "--top-k",
        type=_positive_int,
        metavar="N",
        help="evidence blocks (default: lookup.topK, else 5)",
    )
    _add_method(lookup, "")
    lookup.add_argument(
        "--no-latency",
        action="store_true",
        help="write null latencies, so the output is byte-stable (default: measured)",
    )
    lookup.set_defaults(handler="lookup")

    imp = sub.add_parser(
        "import",
        help="convert another tool's corpus and judgments (BEIR, TREC, SMART, GoodBuddy, Qilbee)",
        description="Write ragsnap's own files from another format: DIR/corpus.jsonl (seed "
        "documents), DIR/golden-cases.json (graded judgments, spans, splits, no-answer "
        "queries), DIR/vectors.json (frozen vectors, when the format has them) and "
        "DIR/ragsnap.yaml pointing at them. Formats: beir (a folder with corpus.jsonl, "
        "queries.jsonl, qrels/<split>.tsv), trec (SGML documents, --topics, --qrels), "
        "smart (a folder with cran.all.1400, cran.qry, cranqrel, or the documents file with "
        "--topics and --qrels), goodbuddy (a JSON fixture), qilbee (a JSON contract fixture).",
    )
    imp.add_argument(
        "format", choices=("beir", "trec", "smart", "goodbuddy", "qilbee"), help="the format"
    )
    imp.add_argument("source", type=Path, help="the file or folder to read")
    imp.add_argument("--out", type=Path, required=True, metavar="DIR", help="output folder")
    imp.add_argument(
        "--kb-scope",
        metavar="SCOPE",
        help="kb_scope for documents that have none, and the cases' default (default: none)",
    )
    imp.add_argument(
        "--split",
        help="beir: which qrels/<split>.tsv, dev or test (default: both when present); "
        "others: the cases' split when the format has none (default: test)",
    )
    imp.add_argument(
        "--language", help="the queries' language when the format has none (default: en)"
    )
    imp.add_argument(
        "--category", help="the cases' category when the format has none (default: imported)"
    )
    imp.add_argument(
        "--topics",
        type=Path,
        metavar="FILE",
        help="trec: the topics file; smart: the queries file (default: SOURCE/cran.qry)",
    )
    imp.add_argument(
        "--qrels",
        type=Path,
        metavar="FILE",
        help="trec: the qrels file; smart: the `query document grade` file "
        "(default: SOURCE/cranqrel)",
    )
    imp.add_argument(
        "--dev-fraction",
        type=float,
        metavar="F",
        help="smart, trec: put a case in dev when the SHA-256 of its id, as a fraction, is "
        "below F (0 < F < 1), else in test; the same on every machine. beir, goodbuddy and "
        "qilbee carry their own splits and ignore it (default: none, every case gets --split)",
    )
    imp.add_argument(
        "--config",
        type=Path,
        metavar="FILE",
        help="settings file for the chunk counts (default: ragsnap.yaml when it exists)",
    )
    _add_allow_outside(imp)
    imp.set_defaults(handler="import_")

    snap = sub.add_parser(
        "snapshot",
        help="write each golden case's live lookup as fixtures/{caseId}.json, then score",
        description="Call the backend's lookup for every golden case (or --case ID) and write "
        "fixtures/{caseId}.json in the fixture contract; fixtures whose retrieval did not "
        "change are left alone, and what changed is listed per case. Then run `ragsnap "
        "score` unless --skip-eval. Nothing is written until every lookup has succeeded.",
    )
    _add_inputs(snap)
    snap.add_argument(
        "--case",
        action="append",
        metavar="ID",
        help="only this case; repeatable (default: every case)",
    )
    _add_lookup_source(snap)
    snap.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 when any fixture would change (for CI)",
    )
    snap.add_argument("--prune", action="store_true", help="delete fixtures that no case refers to")
    snap.add_argument(
        "--skip-eval", action="store_true", help="do not run `ragsnap score` afterwards"
    )
    _add_allow_outside(snap)
    snap.set_defaults(handler="snapshot")

    accept = sub.add_parser(
        "accept",
        help="accept the current retrieval: regenerate the fixtures, then the baseline",
        description="The baseline update after an intended change, in one command: "
        "regenerate the fixtures as `ragsnap snapshot` does (listing what changed), score "
        "them into the baseline (--baseline FILE and FILE with .md), and print the diff's "
        "verdict against the previous baseline. When the fixtures cannot be regenerated "
        "nothing is written. Exits 0 when the baseline was written, even with failing "
        "cases (they stay in the report); 2 on bad input.",
    )
    _add_inputs(accept)
    _add_lookup_source(accept)
    accept.add_argument(
        "--baseline",
        type=Path,
        default=DEFAULT_BASELINE,
        metavar="FILE",
        help=f"the baseline JSON report; the Markdown one goes beside it as .md "
        f"(default: {DEFAULT_BASELINE})",
    )
    accept.add_argument(
        "--prune", action="store_true", help="delete fixtures that no case refers to"
    )
    accept.add_argument(
        "--max-listed",
        type=int,
        default=20,
        metavar="N",
        help="list at most N failing or regressed cases on the terminal (default: 20)",
    )
    _add_allow_outside(accept)
    accept.set_defaults(handler="accept")

    init = sub.add_parser(
        "init",
        help="write a minimal working project: settings, example cases and docs, CI workflow",
        description="Write ragsnap.yaml, cases/golden-cases.json, example seed-docs/, "
        ".github/workflows/ragsnap.yml (the pull-request check) and .gitignore files for "
        "the knowledge base and generated reports into DIR, then print the next steps. "
        "Writes nothing when any of these files exists.",
    )
    init.add_argument(
        "dir",
        nargs="?",
        type=Path,
        default=Path(),
        metavar="DIR",
        help="the project folder, created when missing (default: the current folder)",
    )
    _add_allow_outside(init)
    init.set_defaults(handler="init")

    live = sub.add_parser(
        "live-check",
        help="smoke-check a running service's similarity search after a reindex",
        description="Send every golden case's query (or --case ID) to the service's "
        "similarity search (GET /api/search/similar, mapped by the http section of "
        "ragsnap.yaml) and check that an expected source is in the top K. Writes JSON and "
        "Markdown reports with each case's top results, breadcrumbs, score labels and raw "
        "response fields (no result texts, never the token). Exits 1 when a case fails (a "
        "case's knownFailure is reported, not failing) or every case returned no results "
        "(an empty index), 2 when the service cannot be reached. Not a replacement for the "
        "offline `ragsnap score` baseline. With --state (of `ragsnap prepare`) the prepared "
        "service is verified before and after the lookups under the state's lock; a "
        "verification failure makes the run invalid (exit 1), a held lock or a too small "
        "--max-requests exits 2 before any request.",
    )
    _add_cases(live)
    live.add_argument(
        "--case",
        action="append",
        metavar="ID",
        help="only this case; repeatable (default: every case)",
    )
    live.add_argument(
        "--base-url",
        metavar="URL",
        help="the service (default: http.baseUrl in ragsnap.yaml, else http://127.0.0.1:9900)",
    )
    _add_token(live, "send this bearer token")
    live.add_argument(
        "--kb-scope",
        metavar="SCOPE",
        help="search every case inside this kb_scope (default: each case's kbScope)",
    )
    live.add_argument(
        "--top-k",
        type=_positive_int,
        metavar="N",
        help="results asked for and checked per case (default: each case's topK)",
    )
    _add_reports(live, DEFAULT_LIVE_JSON, DEFAULT_LIVE_MARKDOWN)
    _add_html(live)
    live.add_argument(
        "--config",
        type=Path,
        metavar="FILE",
        help="settings file with the http section (default: ragsnap.yaml when it exists, "
        "else built-in defaults)",
    )
    live.add_argument(
        "--concurrency",
        type=_positive_int,
        metavar="N",
        help="requests in flight (default: http.concurrency, else 4)",
    )
    live.add_argument(
        "--state",
        type=Path,
        metavar="FILE",
        help="the state file `ragsnap prepare` wrote: hold its lock for the run and verify "
        "the service against it (ids, revisions, embedding identities, no duplicates or "
        "stray records, a complete list) before and after the lookups (default: no "
        "verification)",
    )
    live.add_argument(
        "--repeat-check",
        action="store_true",
        help="send each case's search twice and fail the run when the two answers' evidence "
        "ids differ (default: once)",
    )
    live.add_argument(
        "--max-requests",
        type=_positive_int,
        metavar="N",
        help="send at most N requests (verification lists and searches); a run that needs "
        "more exits 2 before sending any (default: no limit)",
    )
    _add_allow_outside(live)
    _add_privacy(live)
    live.set_defaults(handler="live_check")

    trial = sub.add_parser(
        "trial",
        help="compare retrieval methods on one corpus: measured, pinned, gated",
        description="Seed a temporary embedded knowledge base from the configured corpus "
        "(one per vector provider; --kb uses an existing one), run every method over the "
        "same golden cases with the same k, and write one comparison report: hit levels, "
        "graded measures (over raw rankings with --depth), span context precision and "
        "recall, no-answer false positives, per split, language and category; latency from "
        "a warm-up and seeded, shuffled repetitions; a determinism check; gates. The report "
        "holds ids, digests and measurements, never queries or texts. Exits 1 when a gate "
        "fails or two passes differ.",
    )
    _add_cases(trial)
    trial.add_argument(
        "--methods",
        metavar="A,B,...",
        help="methods to compare (default: trial.methods in ragsnap.yaml, else lexical, "
        "vector, hybrid, hybrid+rerank, and alias when trial.aliases is set)",
    )
    trial.add_argument(
        "--depth",
        type=_positive_int,
        metavar="N",
        help="also rank N candidates per query (N documents when the judgments name "
        "documents) with no score floor and no top K, for the ranking measures and the TREC "
        "runs (default: trial.depth, else the evidence only)",
    )
    trial.add_argument(
        "--split",
        choices=("dev", "test", "all"),
        help="run only the cases of this split (default: all)",
    )
    trial.add_argument(
        "--repetitions",
        type=_positive_int,
        metavar="N",
        help="measured passes after the warm-up (default: 1)",
    )
    trial.add_argument(
        "--seed",
        type=int,
        metavar="N",
        help="seed of each pass's shuffled order: the warm-up's queries and their methods, "
        "a measured pass's method blocks and their queries (default: 20260920)",
    )
    trial.add_argument(
        "--write-plan",
        type=Path,
        metavar="FILE",
        help="write the plan (input digests, methods and settings, depth, split, "
        "repetitions, seed) and stop",
    )
    trial.add_argument(
        "--plan",
        type=Path,
        metavar="FILE",
        help="run exactly this plan: flags that would change it are refused, and inputs "
        "that differ from it are named",
    )
    trial.add_argument(
        "--aliases",
        type=Path,
        metavar="FILE",
        help="the alias provider's term groups (YAML), which defines the `alias` method "
        "(default: trial.aliases in ragsnap.yaml, else no alias method)",
    )
    trial.add_argument(
        "--gates",
        type=Path,
        metavar="FILE",
        help="thresholds per method (YAML; default: trial.gates, else no gates)",
    )
    trial.add_argument(
        "--runs-dir",
        type=Path,
        metavar="DIR",
        help="write DIR/<method>.trec and DIR/qrels.txt for `ragsnap metrics`, trec_eval, "
        "ranx (default: none)",
    )
    trial.add_argument(
        "--no-check-determinism",
        dest="check_determinism",
        action="store_false",
        help="do not compare the passes (default: every pass must give the same results)",
    )
    _add_reports(trial, DEFAULT_TRIAL_JSON, DEFAULT_TRIAL_MARKDOWN)
    _add_html(trial)
    trial.add_argument(
        "--compare-to",
        type=Path,
        metavar="FILE",
        help="a baseline trial report to diff against, per method; exits 1 on a "
        "regression (default: no diff)",
    )
    trial.add_argument(
        "--diff-json-report",
        type=Path,
        metavar="FILE",
        help=f"where to write the JSON diff (default with --compare-to: {DEFAULT_TRIAL_DIFF_JSON})",
    )
    trial.add_argument(
        "--diff-markdown-report",
        type=Path,
        metavar="FILE",
        help=f"where to write the Markdown diff (default with --compare-to: "
        f"{DEFAULT_TRIAL_DIFF_MARKDOWN})",
    )
    trial.add_argument(
        "--kb",
        type=Path,
        metavar="FILE",
        help="use this embedded knowledge base instead of seeding a temporary one "
        "(default: a temporary one, deleted after)",
    )
    trial.add_argument(
        "--config",
        type=Path,
        metavar="FILE",
        help="settings file (default: ragsnap.yaml when it exists, else built-in defaults)",
    )
    _add_allow_outside(trial)
    _add_privacy(trial, "trial.shareable in ragsnap.yaml, else off")
    trial.set_defaults(handler="trial")

    serve = sub.add_parser(
        "serve",
        help="serve the knowledge base over the HTTP contract (lookup, similar, upload)",
        description="Run the reference HTTP service (FastAPI + uvicorn, extra `serve`) over the "
        "local knowledge base: POST /api/knowledge/lookup, GET /api/search/similar, "
        "GET/POST/DELETE /api/documents, GET /api/health; OpenAPI at /openapi.json. "
        "The http backend and live-check talk to it.",
    )
    _add_kb(serve)
    _add_store_backend(serve)
    serve.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)"
    )
    serve.add_argument(
        "--port",
        type=_port,
        default=9900,
        help="port to listen on; 0 picks a free one (default: 9900)",
    )
    _add_token(serve, "require this bearer token", configured=False)
    serve.add_argument(
        "--max-body",
        type=_positive_int,
        default=8 * 1024 * 1024,
        metavar="BYTES",
        help="largest request body accepted (default: 8 MiB)",
    )
    serve.add_argument(
        "--log-level",
        choices=("critical", "error", "warning", "info", "debug"),
        default="warning",
        help="uvicorn log level (default: warning)",
    )
    serve.add_argument("--access-log", action="store_true", help="log every request (default: off)")
    serve.add_argument(
        "--workers",
        type=_positive_int,
        metavar="N",
        help="worker processes answering requests, each opening the knowledge base; N "
        "lookups run at once (default: the CPUs, at most 4, for the embedded store; 1 for "
        "milvus)",
    )
    serve.add_argument(
        "--write-wait",
        type=_seconds,
        default=10.0,
        metavar="SECONDS",
        help="how long an upload or delete waits for the store's writer lock while another "
        "worker or `ragsnap seed` holds it, before a 409 with Retry-After (default: 10)",
    )
    serve.set_defaults(handler="serve")
    for command in sub.choices.values():  # --debug after the command works too
        command.add_argument(
            "--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS
        )
    return parser


def _add_lookup_source(parser: argparse.ArgumentParser) -> None:
    """Where ``snapshot`` and ``accept`` run their lookups, and how."""
    parser.add_argument(
        "--backend",
        choices=("embedded", "milvus", "http"),
        help="where lookups run (default: kb.backend in ragsnap.yaml, else embedded)",
    )
    _add_kb(parser)
    parser.add_argument(
        "--kb-scope",
        metavar="SCOPE",
        help="look up every case inside this kb_scope (default: each case's kbScope)",
    )
    parser.add_argument(
        "--retrieved-at",
        metavar="TIME",
        help="pin retrievedAt (ISO 8601, e.g. 2026-07-06T00:00:00Z) so reruns are "
        "byte-identical (default: now, and unchanged fixtures keep theirs)",
    )
    parser.add_argument(
        "--concurrency",
        type=_positive_int,
        metavar="N",
        help="lookups in flight (default: http.concurrency for http, else 1)",
    )
    _add_method(parser, "embedded, milvus: ")
    parser.add_argument(
        "--latency",
        action="store_true",
        help="record measured latencies in the fixtures (default: null, so fixtures are stable)",
    )
    parser.add_argument(
        "--base-url",
        metavar="URL",
        help="http: the service (default: http.baseUrl in ragsnap.yaml, else "
        "http://127.0.0.1:9900)",
    )
    _add_token(parser, "http: send this bearer token")


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 0..65535, not {value}")
    return value


def _report_format(text: str) -> tuple[str, Path]:
    from .scoring.formats import REPORT_FORMATS

    name, sep, path = text.partition("=")
    if not sep or not path:
        raise argparse.ArgumentTypeError(f"{text!r} is not NAME=FILE (e.g. github=reports/pr.md)")
    if name not in REPORT_FORMATS:
        raise argparse.ArgumentTypeError(
            f"no report format {name!r}; use one of {', '.join(sorted(REPORT_FORMATS))}"
        )
    return name, Path(path)


def _add_review(parser: argparse.ArgumentParser) -> None:
    """The PR-check flags of ``score`` and ``diff``: extra formats, significance."""
    parser.add_argument(
        "--report",
        dest="extra_reports",
        action="append",
        type=_report_format,
        default=[],
        metavar="FORMAT=FILE",
        help="also write FORMAT to FILE; formats: github (a pull-request comment, always "
        "under 60,000 characters), junit (JUnit XML, one test per case), html (one "
        "self-contained page with charts); repeatable",
    )
    parser.add_argument(
        "--junit-xml",
        type=Path,
        metavar="FILE",
        help="write a JUnit XML file (the same as --report junit=FILE)",
    )
    _add_html(parser, "the same as --report html=FILE")
    parser.add_argument(
        "--require-significance",
        action="store_true",
        help="an aggregate drop fails only when the paired test finds it significant "
        "(p < diff.significance.alpha); case regressions always fail (default: "
        "diff.significance.require in ragsnap.yaml, else off)",
    )


def _add_html(
    parser: argparse.ArgumentParser, more: str = "", what: str = "charts, the case table"
) -> None:
    parser.add_argument(
        "--html-report",
        type=Path,
        metavar="FILE",
        help=f"also write one self-contained HTML page ({what}; no network)"
        + (f"; {more}" if more else "")
        + " (default: none)",
    )


def _add_privacy(parser: argparse.ArgumentParser, default: str = "off") -> None:
    parser.add_argument(
        "--privacy",
        action="store_true" if default == "off" else argparse.BooleanOptionalAction,
        default=False if default == "off" else None,
        help="write privacy reports: case, method and category ids, SHA-256 hashes of the "
        "inputs and of the evaluation definition, measurements and id-based failures; no "
        f"query, title, text, source, path, URL or model name (default: {default})",
    )


def _add_allow_outside(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--allow-outside",
        action="store_true",
        help="allow outputs outside the working folder (absolute paths elsewhere, ..); "
        "default: refused, as are outputs through symbolic links",
    )


def _add_method(parser: argparse.ArgumentParser, which: str) -> None:
    parser.add_argument(
        "--method",
        metavar="NAME",
        help=f"{which}retrieval method: lexical, vector, hybrid, hybrid+rerank or one "
        "defined under `methods:` in ragsnap.yaml (default: lookup.method, else hybrid+rerank)",
    )


def _add_store_backend(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--backend",
        choices=("embedded", "milvus"),
        help="embedded: the SQLite file (--kb); milvus: kb.milvus.uri (extra `milvus`) "
        "(default: kb.backend in ragsnap.yaml, else embedded)",
    )


def _add_token(parser: argparse.ArgumentParser, what: str, configured: bool = True) -> None:
    default = (
        "default: http.tokenFile / http.tokenEnv in ragsnap.yaml, else no token"
        if configured
        else "default: no token"
    )
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--token-file",
        type=Path,
        metavar="FILE",
        help=f"{what}, read from the first line of FILE ({default})",
    )
    group.add_argument(
        "--token-env",
        metavar="VAR",
        help=f"{what}, read from the environment variable VAR ({default})",
    )


def _seconds(text: str) -> float:
    """A number of seconds, at least 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 <= value <= 3600:
        raise argparse.ArgumentTypeError(f"{text} is not between 0 and 3600 seconds")
    return value


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def _add_kb(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--kb",
        type=Path,
        metavar="FILE",
        help="the SQLite knowledge base (default: kb.path in ragsnap.yaml, else "
        ".ragsnap/kb.sqlite)",
    )
    parser.add_argument(
        "--config",
        type=Path,
        metavar="FILE",
        help="settings file (default: ragsnap.yaml when it exists, else built-in defaults)",
    )


#: the file that marks a project's root (``config.DEFAULT_CONFIG``, named here so that
#: parsing the command line does not import the configuration's dependencies)
PROJECT_FILE = "ragsnap.yaml"
#: commands that look for no project root: ``init`` makes one where it is told
ROOTLESS = frozenset({"init"})


def find_root(start: Path, warn: Callable[[str], None] | None = None) -> Path | None:
    """The nearest folder, from ``start`` upwards, that holds a ``ragsnap.yaml`` nobody
    else could have planted; None when none does.

    The walk stops at the first folder that is a repository root (it holds ``.git``,
    a folder or a file) or the user's home, after looking in it. A ``ragsnap.yaml`` in a
    parent folder is skipped, with a warning passed to ``warn``, when it or its folder
    is untrusted (``io.ownership``: world-writable, like the system temp folder, or
    owned by another user): another user could have put it there to send your token
    to their server. ``start`` itself is the folder you chose, and is not judged.
    """
    from .io.ownership import untrusted_because

    try:
        home: Path | None = Path.home()
    except (KeyError, RuntimeError, OSError):  # no home: walk to a repository root or /
        home = None
    for folder in (start, *start.parents):
        candidate = folder / PROJECT_FILE
        try:
            found = candidate.exists()
            if found and folder != start:
                why = next(
                    (
                        f"{where} {reason}"
                        for where, path in (("the folder", folder), ("the file", candidate))
                        if (reason := untrusted_because(path.stat())) is not None
                    ),
                    None,
                )
                if why is not None:
                    found = False
                    if warn is not None:
                        warn(
                            f"ragsnap: ignoring {candidate}: {why}, so another user could "
                            "have put it there; move your project to a folder of your own "
                            "(or pass --config)"
                        )
            if found:
                return folder
            if folder == home or (folder / ".git").exists():
                return None
        except OSError:  # a folder above that cannot be read: no project there
            return None
    return None


def _command_parser(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    """The parser of subcommand ``name``."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found: argparse.ArgumentParser = action.choices[name]
            return found
    raise LookupError(name)  # pragma: no cover - build_parser always has subcommands


def rebase(
    args: argparse.Namespace, command: argparse.ArgumentParser, here: Path, root: Path
) -> None:
    """Make the relative paths the user typed (relative to ``here``) relative to ``root``
    instead, in place; values that still hold their default are left as they are, to be
    read relative to ``root``."""
    prefix = os.path.relpath(here, root)

    def moved(value: object) -> object:
        if isinstance(value, Path):
            if value.is_absolute():
                return value
            return Path(os.path.normpath(Path(prefix, value)))
        if isinstance(value, (list, tuple)):
            return type(value)(moved(item) for item in value)
        return value

    for dest, value in vars(args).items():
        if value is not command.get_default(dest):
            setattr(args, dest, moved(value))


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``ragsnap`` with ``argv`` (default: ``sys.argv[1:]``); return the exit code.

    Every command but ``init`` runs in the project root: the nearest folder, from the
    current one upwards to the repository root or your home, that holds a
    ``ragsnap.yaml`` nobody else could have planted (``find_root``; the current folder
    when none does); when it is a parent folder, stderr says which file was loaded.
    Default paths (``cases/golden-cases.json``, ``fixtures``, ``reports/...``,
    ``ragsnap.yaml``, ``.ragsnap/kb.sqlite``, ``seed-docs``) are therefore the root's,
    and so is the working folder that outputs must stay inside; paths the user typed
    keep meaning what they meant from the current folder (they are rebased onto the
    root), and messages name them relative to the root, which is said on stderr. The
    current folder is restored afterwards.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        here = Path.cwd()
    except OSError:  # the current folder was deleted: nothing to look for
        return _run(args)
    root = None if args.command in ROOTLESS else find_root(here, _warn)
    if root is None or root == here:
        return _run(args)
    rebase(args, _command_parser(parser, args.command), here, root)
    found = root / PROJECT_FILE
    # --config names the settings itself; the file found still makes the root
    using = f"using {found}" if getattr(args, "config", None) is None else f"{found} marks the root"
    print(
        f"ragsnap: {using} (found in a parent folder); working in the project root "
        f"{os.path.relpath(root, here)}, the paths below are relative to it",
        file=sys.stderr,
    )
    os.chdir(root)
    try:
        return _run(args)
    finally:
        with contextlib.suppress(OSError):
            os.chdir(here)


def _warn(message: str) -> None:
    print(message, file=sys.stderr)


def _run(args: argparse.Namespace) -> int:
    """Run the parsed command; errors become exit codes (see the module docstring)."""
    module = importlib.import_module(f"ragsnap.commands.{args.handler}")
    try:
        code: int = module.run(args)
    except RagsnapError as exc:
        print(f"{exc.kind}: {exc}", file=sys.stderr)
        return exc.exit_code
    except BrokenPipeError:  # `ragsnap lookup ... | head`: the reader left, not an error
        with contextlib.suppress(OSError):
            sys.stdout = Path(os.devnull).open("w")  # noqa: SIM115 - no flush error at exit
        return 0
    except KeyboardInterrupt:
        print("Interrupted; nothing half-written was left behind.", file=sys.stderr)
        return 130
    except Exception as exc:  # a bug: never exit 1, which means "regression"
        if args.debug or os.environ.get("RAGSNAP_DEBUG", "") not in ("", "0"):
            traceback.print_exc()
        else:
            detail = str(exc).splitlines()[0][:200] if str(exc) else ""
            print(
                f"InternalError: {type(exc).__name__}: {detail}. This is a bug in ragsnap, "
                "not a problem with your input; re-run with --debug (or RAGSNAP_DEBUG=1) for "
                "the traceback and report it",
                file=sys.stderr,
            )
        return INTERNAL_ERROR
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

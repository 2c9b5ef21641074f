"""The ``ragsnap`` command line: one ``main(argv)`` behind every entry point.

Subcommand handlers live in ``ragsnap.commands`` and are imported only when
their subcommand runs, so ``ragsnap --help`` stays fast. Exit codes, for
every command: 0 all good; 1 a case failed or a regression was found; 2 bad
usage or bad input (the message names the file, the field and the fix). A
traceback means a bug.

``ragsnap --help`` lists the commands in groups (``GROUPS``), the happy path
first: ``ragsnap init``, then ``ragsnap seed && ragsnap snapshot && ragsnap
accept``; on every pull request ``ragsnap score --compare-to
reports/baseline.json``. A mistyped command or choice gets "did you mean" (exit 2).

Inputs and outputs follow one convention in every command; an older spelling
stays as an alias of the conventional one (in parentheses) and fills the same field:

| what | convention | examples |
| --- | --- | --- |
| the project's inputs | --<what it holds> PATH | --cases, --fixtures, --seed-docs, --kb, --config |
| other inputs | --<what it holds> FILE | --qrels, --run, --state, --plan, --aliases, --gates |
| what a command is about | positional | diff BASELINE CURRENT, trend REPORT..., explain CASE, |
| | | lookup QUERY |
| the baseline | --compare-to FILE | score, trial; accept --baseline FILE rewrites it |
| a report | --<format>-report FILE | --json-report, --markdown-report, --html-report, |
| | | --junit-report (--junit-xml), --diff-json-report |
| any report format | --report FORMAT=FILE | --report github=reports/pr.md (repeatable) |
| other written data | --<what>-out FILE or DIR | --qrels-out, --run-out (--out), import --out, |
| | | --plan-out (--write-plan), --runs-out (--runs-dir), |
| | | --history-out (--history) |
| where outputs go | the project folder | --allow-outside lifts it |
| a service | --base-url URL | --token-file FILE or --token-env VAR (default: http:) |
| a count | N, at least 1 | --top-k, --concurrency, --max-requests, --depth, |
| | | --max-records, --max-bytes |

Inputs default to the project's paths (resolved from the folder of ragsnap.yaml);
JSON and Markdown reports default to files under reports/; other reports and
written data are written only when asked for.

Every option's help states its default (or that it is required). Options that
several commands share are declared once (``_SHARED``, added with ``_add``); a
command passes only what differs, usually its help.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import keyword
import os
import sys
import textwrap
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

from . import __version__
from .commands import (
    DEFAULT_AUDIT_JSON,
    DEFAULT_AUDIT_MARKDOWN,
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


def _within(
    convert: Callable[[str], float], low: float, high: float, what: str
) -> Callable[[str], Any]:
    """An option type: ``convert`` the text, then require ``low <= value <= high``;
    ``what`` names the value in the message ("a port number")."""

    def parse(text: str) -> Any:
        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None
        if not low <= value <= high:
            bounds = f"at least {low}" if high == float("inf") else f"{low}..{high}"
            raise argparse.ArgumentTypeError(f"{what} is {bounds}, not {text}")
        return value

    return parse


_positive_int = _within(int, 1, float("inf"), "a whole number")
_seconds = _within(float, 0, 3600, "a number of seconds")
_port = _within(int, 0, 65535, "a port number")


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


#: how an option's value is read and shown: a file, a folder, a count, an on/off flag
_FILE: dict[str, Any] = {"type": Path, "metavar": "FILE"}
_DIR: dict[str, Any] = {"type": Path, "metavar": "DIR"}
_COUNT: dict[str, Any] = {"type": _positive_int, "metavar": "N"}
_FLAG: dict[str, Any] = {"action": "store_true"}
_SERVICE = "the service (default: http.baseUrl in ragsnap.yaml, else http://127.0.0.1:9900)"
_SETTINGS = "(default: ragsnap.yaml when it exists, else built-in defaults)"
_TOKEN = "default: http.tokenFile / http.tokenEnv in ragsnap.yaml, else no token"

#: the options several commands share, declared once (flag -> its settings); a command
#: passes only what differs, usually the help that says what the option means there
_SHARED: dict[str, dict[str, Any]] = {
    "--cases": {
        **_FILE,
        "default": DEFAULT_CASES,
        "help": f"golden cases file (default: {DEFAULT_CASES})",
    },
    "--fixtures": {
        **_DIR,
        "default": DEFAULT_FIXTURES,
        "help": f"folder of {{caseId}}.json fixtures (default: {DEFAULT_FIXTURES})",
    },
    "--config": {**_FILE, "help": f"settings file {_SETTINGS}"},
    "--embedder": {
        "metavar": "NAME",
        "help": "embed with this embedder instead of kb.embedder in ragsnap.yaml: hashing "
        "(character n-grams, no dependency), minilm (all-MiniLM-L6-v2, extra `embed`) or "
        "wordllama (static vectors, extra `wordllama`); "
        "methods with vectors of their own keep them (default: kb.embedder, else hashing)",
    },
    "--kb": {
        **_FILE,
        "help": "the SQLite knowledge base (default: kb.path in ragsnap.yaml, else "
        ".ragsnap/kb.sqlite)",
    },
    "--seed-docs": {
        **_DIR,
        "help": "folder of Markdown seed documents, or a .jsonl corpus (default: kb.seedDocs "
        "in ragsnap.yaml, else seed-docs)",
    },
    "--base-url": {"metavar": "URL", "help": _SERVICE},
    "--retriever": {
        "metavar": "MODULE:FACTORY",
        "help": "python: the callable that returns the retriever (default: python.retriever "
        "in ragsnap.yaml)",
    },
    "--case": {
        "action": "append",
        "metavar": "ID",
        "help": "only this case; repeatable (default: every case)",
    },
    "--kb-scope": {"metavar": "SCOPE"},
    "--top-k": _COUNT,
    "--concurrency": _COUNT,
    "--max-requests": _COUNT,
    "--max-records": {
        **_COUNT,
        "help": "http: the budget per request in records: a lookup or search asking for more "
        "is refused before it is sent, an answer with more is an error (default: "
        "http.budgets.records in ragsnap.yaml, else 10000)",
    },
    "--max-bytes": {
        **_COUNT,
        "help": "http: the budget per request in serialized bytes: a request body over it is "
        "refused before it is sent, an answer is read up to it, then refused (default: "
        "http.budgets.bytes in ragsnap.yaml, else 67108864)",
    },
    "--state": _FILE,
    "--compare-to": _FILE,
    "--max-listed": {"type": int, "default": 20, "metavar": "N"},
    "--prune": {**_FLAG, "help": "delete fixtures that no case refers to (default: keep them)"},
    "--no-label-check": {
        **_FLAG,
        "help": "do not run `ragsnap check`'s label checks before scoring; the report "
        "records it (default: they run, and a broken label exits 2)",
    },
    "--allow-outside": {
        **_FLAG,
        "help": "allow outputs outside the working folder (absolute paths elsewhere, ..); "
        "default: refused, as are outputs through symbolic links",
    },
}


def _add(parser: argparse.ArgumentParser, flag: str, *aliases: str, **settings: Any) -> None:
    """Add the option ``flag`` (also spelled ``aliases``) as ``_SHARED`` declares it,
    ``settings`` overriding; the dest always comes from ``flag``, the first spelling."""
    parser.add_argument(flag, *aliases, **{**_SHARED.get(flag, {}), **settings})


def _add_inputs(parser: argparse.ArgumentParser) -> None:
    _add(parser, "--cases")
    _add(parser, "--fixtures")


def _add_reports(
    parser: argparse.ArgumentParser, json_report: Path, markdown_report: Path, what: str = "report"
) -> None:
    """``--json-report`` and ``--markdown-report``; ``--diff-...`` ones for ``what="diff"``."""
    prefix = "--diff-" if what == "diff" else "--"
    for kind, default in (("JSON", json_report), ("Markdown", markdown_report)):
        _add(
            parser,
            f"{prefix}{kind.lower()}-report",
            **_FILE,
            default=default,
            help=f"where to write the {kind} {what} (default: {default})",
        )


def _add_comparison(
    parser: argparse.ArgumentParser, help: str, json_diff: Path, markdown_diff: Path
) -> None:
    """``--compare-to`` a baseline, and where its diff goes (``score``, ``trial``)."""
    _add(parser, "--compare-to", help=help)
    for kind, default in (("JSON", json_diff), ("Markdown", markdown_diff)):
        _add(
            parser,
            f"--diff-{kind.lower()}-report",
            **_FILE,
            help=f"where to write the {kind} diff (default with --compare-to: {default})",
        )


def _add_html(
    parser: argparse.ArgumentParser, more: str = "", what: str = "charts, the case table"
) -> None:
    _add(
        parser,
        "--html-report",
        **_FILE,
        help=f"also write one self-contained HTML page ({what}; no network)"
        + (f"; {more}" if more else "")
        + " (default: none)",
    )


def _add_review(parser: argparse.ArgumentParser, listed: str) -> None:
    """The PR-check flags of ``score`` and ``diff``: extra formats, significance."""
    _add(
        parser,
        "--config",
        help="settings file with diff tolerances (default: ragsnap.yaml when it exists, "
        "else every tolerance is 0)",
    )
    _add(
        parser, "--max-listed", help=f"list at most N {listed} cases on the terminal (default: 20)"
    )
    _add(
        parser,
        "--report",
        dest="extra_reports",
        action="append",
        type=_report_format,
        default=[],
        metavar="FORMAT=FILE",
        help="also write FORMAT to FILE; formats: github (a pull-request comment, always "
        "under 60,000 characters), junit (JUnit XML, one test per case), html (one "
        "self-contained page with charts); repeatable (default: none)",
    )
    _add(
        parser,
        "--junit-xml",
        "--junit-report",
        **_FILE,
        help="write a JUnit XML file (the same as --report junit=FILE) (default: none)",
    )
    _add_html(parser, "the same as --report html=FILE")
    _add(
        parser,
        "--require-significance",
        **_FLAG,
        help="an aggregate drop fails only when the paired test finds it significant "
        "(p < diff.significance.alpha); case regressions always fail (default: "
        "diff.significance.require in ragsnap.yaml, else off)",
    )
    _add_baseline_fixtures(parser)
    _add_privacy(parser)
    _add(parser, "--allow-outside")


def _add_baseline_fixtures(parser: argparse.ArgumentParser) -> None:
    """Where the baseline's fixtures are read, for stage attribution."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--baseline-ref",
        metavar="REF",
        help="read the baseline's fixtures from git at REF (origin/main, a tag, a commit), "
        "to say at which pipeline stage each case lost what it lost (default: the first of "
        "HEAD, HEAD^1, the upstream, origin/HEAD, origin/main, origin/master whose fixtures "
        "are the baseline's)",
    )
    group.add_argument(
        "--baseline-fixtures",
        type=Path,
        metavar="DIR",
        help="read the baseline's fixtures from this folder instead (default: see --baseline-ref)",
    )


def _add_privacy(parser: argparse.ArgumentParser, default: str = "off") -> None:
    _add(
        parser,
        "--privacy",
        action="store_true" if default == "off" else argparse.BooleanOptionalAction,
        default=False if default == "off" else None,
        help="write privacy reports: case, method and category ids, SHA-256 hashes of the "
        "inputs and of the evaluation definition, measurements and id-based failures; no "
        f"query, title, text, source, path, URL or model name (default: {default})",
    )


def _add_method(parser: argparse.ArgumentParser, which: str, http: str = "") -> None:
    _add(
        parser,
        "--method",
        metavar="NAME",
        help=f"{which}retrieval method: lexical, vector, hybrid, hybrid+rerank or one "
        "defined under `methods:` in ragsnap.yaml (default: lookup.method, else hybrid+rerank)"
        f"{http}",
    )


def _backends(**wanted: Any) -> tuple[str, ...]:
    """The registered backends with these capabilities (``ragsnap.kb.backends.registry``;
    listing them imports no backend)."""
    from .kb.backends.registry import backend_names

    return backend_names(**wanted)


def _searching_backends() -> tuple[str, ...]:
    """``live-check --backend``'s choices: the backends with a similarity search."""
    from .kb.backends.registry import BACKENDS

    return tuple(name for name, b in BACKENDS.items() if b.open_search is not None)


def _trial_backends() -> tuple[str, ...]:
    """``trial --backend``'s choices: the embedded store (the pipeline's trial) and every
    backend that answers whole lookups with methods of its own."""
    from .kb.backends.registry import DEFAULT_BACKEND

    return (DEFAULT_BACKEND, *_backends(looks_up="whole", methods=True))


def _methods_key(name: str) -> str:
    from .kb.backends.registry import BACKENDS

    return BACKENDS[name].methods_key


def _backend_help(names: tuple[str, ...]) -> str:
    from .kb.backends.registry import BACKENDS

    return "; ".join(f"{name}: {BACKENDS[name].help}" for name in names)


def _add_store(parser: argparse.ArgumentParser, backends: tuple[str, ...] = ()) -> None:
    """``--kb``, ``--config`` and ``--embedder``, and with ``backends`` the ``--backend`` of
    a local store."""
    _add(parser, "--kb")
    _add(parser, "--config")
    _add(parser, "--embedder")
    if backends:
        _add(
            parser,
            "--backend",
            choices=backends,
            help=f"{_backend_help(backends)} (default: kb.backend in ragsnap.yaml, else embedded)",
        )


def _add_token(parser: argparse.ArgumentParser, what: str, default: str = _TOKEN) -> None:
    group = parser.add_mutually_exclusive_group()
    for flag, metavar, where in (
        ("--token-file", "FILE", "read from the first line of FILE"),
        ("--token-env", "VAR", "read from the environment variable VAR"),
    ):
        group.add_argument(
            flag,
            type=Path if metavar == "FILE" else str,
            metavar=metavar,
            help=f"{what}, {where} ({default})",
        )


def _add_lookup_source(parser: argparse.ArgumentParser) -> None:
    """Where ``snapshot`` and ``accept`` run their lookups, and how."""
    _add(
        parser,
        "--backend",
        choices=_backends(),
        help="where lookups run (default: kb.backend in ragsnap.yaml, else embedded)",
    )
    _add_store(parser)
    _add(
        parser,
        "--kb-scope",
        help="look up every case inside this kb_scope (default: each case's kbScope)",
    )
    _add(
        parser,
        "--retrieved-at",
        metavar="TIME",
        help="pin retrievedAt (ISO 8601, e.g. 2026-07-06T00:00:00Z) so reruns are "
        "byte-identical (default: now, and unchanged fixtures keep theirs)",
    )
    _add(
        parser,
        "--concurrency",
        help="lookups in flight (default: http.concurrency for http, else 1)",
    )
    _add_method(
        parser,
        "embedded, milvus: ",
        "; http: one named under http.methods, whose fields every lookup request carries "
        "(default: none, the service's own method)",
    )
    _add(
        parser,
        "--latency",
        **_FLAG,
        help="record measured latencies in the fixtures (default: null, so fixtures are stable)",
    )
    _add(parser, "--base-url", help=f"http: {_SERVICE}")
    _add_token(parser, "http: send this bearer token")
    _add(parser, "--retriever")


_Declare = Callable[[argparse.ArgumentParser], None]
#: each subcommand: its help texts (``help``, ``epilog``; the ``description`` is the
#: docstring of the function that declares its options) and that function
_COMMANDS: dict[str, tuple[dict[str, Any], _Declare]] = {}


def _command(name: str, **texts: Any) -> Callable[[_Declare], _Declare]:
    """Register the function that declares subcommand ``name``'s options; its docstring
    is the command's description in ``ragsnap NAME --help``."""

    def register(declare: _Declare) -> _Declare:
        _COMMANDS[name] = ({**texts, "description": declare.__doc__ or ""}, declare)
        return declare

    return register


#: the subcommands as ``ragsnap --help`` lists them: grouped by what people do, the
#: happy path first
GROUPS: dict[str, tuple[str, ...]] = {
    "start": ("init",),
    "everyday": ("seed", "snapshot", "score", "accept", "check"),
    "review": ("diff", "trend", "explain", "lookup"),
    "data": ("import", "metrics", "export-run"),
    "live": ("serve", "prepare", "live-check"),
    "experiments": ("trial", "audit"),
}
HAPPY_PATH = (
    "The happy path: `ragsnap init`, then `ragsnap seed && ragsnap snapshot && ragsnap "
    "accept`; on every pull request: `ragsnap score --compare-to reports/baseline.json`. "
    "`ragsnap COMMAND --help` shows a command's options."
)


class _Parser(argparse.ArgumentParser):
    """An argument parser that suggests the closest choice for a mistyped one."""

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        choices = action.choices
        if choices is not None and value not in choices:
            from .errors import did_you_mean

            meant = did_you_mean(str(value), [str(choice) for choice in choices])
            if meant is not None:
                raise argparse.ArgumentError(
                    action, f"invalid choice: {value!r} (did you mean {meant!r}?)"
                )
        super()._check_value(action, value)


def _grouped(sub: argparse._SubParsersAction[_Parser]) -> str:
    """The subcommands with their one-line help, by ``GROUPS``."""
    helps = {action.dest: action.help or "" for action in sub._choices_actions}
    width = max(map(len, helps)) + 2

    def line(name: str) -> str:
        return textwrap.fill(
            f"{name:<{width}}{helps[name]}",
            88,
            initial_indent="  ",
            subsequent_indent=" " * (width + 2),
        )

    blocks = [f"{group}:\n" + "\n".join(map(line, names)) for group, names in GROUPS.items()]
    return "\n\n".join([textwrap.fill(HAPPY_PATH, 88), *blocks])


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``ragsnap`` and its subcommands (``--help`` groups them)."""
    parser = _Parser(
        prog="ragsnap",
        usage="ragsnap [-h] [--version] [--debug] COMMAND ...",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=textwrap.fill(
            "Exit codes: 0 all good, 1 a case failed or a regression was found, 2 bad usage "
            "or input, 3 an internal error (a bug: --debug shows the traceback).",
            88,
        ),
    )
    parser.add_argument("--version", action="version", version=f"ragsnap {__version__}")
    parser.add_argument(
        "--debug",
        action="store_true",
        help="show the traceback of an internal error (default: off; also RAGSNAP_DEBUG=1)",
    )
    sub = parser.add_subparsers(
        dest="command", metavar="COMMAND", required=True, help=argparse.SUPPRESS
    )
    for name in (n for names in GROUPS.values() for n in names):
        texts, declare = _COMMANDS[name]
        command = sub.add_parser(name, prog=f"ragsnap {name}", **texts)
        declare(command)
        handler = name.replace("-", "_")  # the module in ragsnap.commands
        command.set_defaults(handler=f"{handler}_" if keyword.iskeyword(handler) else handler)
    parser.description = "Retrieval regression harness for RAG knowledge bases.\n\n" + _grouped(sub)
    for command in sub.choices.values():  # --debug after the command works too
        command.add_argument(
            "--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS
        )
    return parser


@_command(
    "init", help="write a minimal working project: settings, example cases and docs, CI workflow"
)
def _init(init: argparse.ArgumentParser) -> None:
    """Write ragsnap.yaml, cases/golden-cases.json, example seed-docs/,
    .github/workflows/ragsnap.yml (the pull-request check) and .gitignore files for the
    knowledge base and generated reports into DIR, then print the next steps. Writes
    nothing when any of these files exists.
    """
    init.add_argument(
        "dir",
        nargs="?",
        type=Path,
        default=Path(),
        metavar="DIR",
        help="the project folder, created when missing (default: the current folder)",
    )
    _add(init, "--allow-outside")


@_command(
    "seed", help="import seed-docs/*.md into the knowledge base (delete-then-upload by source)"
)
def _seed(seed: argparse.ArgumentParser) -> None:
    """Make the knowledge base hold exactly the seed documents: new files are added,
    changed files re-chunked and re-embedded, files that are gone removed, unchanged
    files left alone; all in one transaction. Frontmatter feeds metadata only; the
    Markdown body is chunked and indexed.
    """
    _add(
        seed,
        "--seed-docs",
        help="folder of Markdown seed documents, or a .jsonl corpus (one {source, text, ...} "
        "object a line) (default: kb.seedDocs in ragsnap.yaml, else seed-docs)",
    )
    _add_store(seed)
    _add(
        seed,
        "--backend",
        choices=_backends(),
        help="embedded: the SQLite knowledge base; milvus: kb.milvus.uri (extra `milvus`); "
        "http: upload through the service's endpoint; python: the retriever's "
        "add_documents(docs) or index(docs), if it has one (default: kb.backend in "
        "ragsnap.yaml, else embedded)",
    )
    _add(seed, "--base-url", help=f"http: {_SERVICE}")
    _add_token(seed, "http: send this bearer token")
    _add(seed, "--retriever")
    _add(
        seed,
        "--reindex",
        **_FLAG,
        help="rebuild every document, also to switch embedder or segmenter (default: only "
        "changed documents)",
    )


@_command(
    "snapshot", help="write each golden case's live lookup as fixtures/{caseId}.json, then score"
)
def _snapshot(snap: argparse.ArgumentParser) -> None:
    """Call the backend's lookup for every golden case (or --case ID) and write
    fixtures/{caseId}.json in the fixture contract; fixtures whose retrieval did not
    change are left alone, and what changed is listed per case. Then run `ragsnap score`
    unless --skip-eval. Nothing is written until every lookup has succeeded.
    """
    _add_inputs(snap)
    _add(snap, "--case")
    _add_lookup_source(snap)
    _add(
        snap,
        "--check",
        **_FLAG,
        help="write nothing; exit 1 when any fixture would change, for CI (default: write)",
    )
    _add(snap, "--prune")
    _add(
        snap, "--skip-eval", **_FLAG, help="do not run `ragsnap score` afterwards (default: run it)"
    )
    _add(snap, "--allow-outside")


@_command(
    "score", help="score saved fixtures against golden cases, optionally diff against a baseline"
)
def _score(score: argparse.ArgumentParser) -> None:
    """Score fixtures/{caseId}.json against the golden cases offline (no knowledge base, no
    network), write JSON and Markdown reports, and with --compare-to diff them against a
    baseline report.
    """
    _add_inputs(score)
    _add_reports(score, DEFAULT_JSON_REPORT, DEFAULT_MARKDOWN_REPORT)
    _add_comparison(
        score,
        "baseline JSON report to diff against (default: no diff)",
        DEFAULT_DIFF_JSON,
        DEFAULT_DIFF_MARKDOWN,
    )
    _add_review(score, "failing or regressed")
    _add(
        score,
        "--embedder",
        help="the embedder the fixtures were captured with (`snapshot --embedder NAME`), "
        "for the fixtures' staleness check: hashing, minilm or wordllama (default: "
        "kb.embedder in ragsnap.yaml, else hashing)",
    )
    _add(
        score,
        "--history",
        "--history-out",
        **_DIR,
        help="also write the JSON score report into DIR under a dated name "
        "(YYYY-MM-DDTHHMMSS.mmmZ-<hash>.json, UTC), for `ragsnap trend`; CI keeps the history "
        "this way (default: none; `ragsnap accept` writes to `history` in ragsnap.yaml, "
        "else reports/history)",
    )
    _add(score, "--no-label-check")


@_command("accept", help="accept the current retrieval: regenerate the fixtures, then the baseline")
def _accept(accept: argparse.ArgumentParser) -> None:
    """The baseline update after an intended change, in one command: regenerate the
    fixtures as `ragsnap snapshot` does (listing what changed), score them into the
    baseline (--baseline FILE and FILE with .md), and print the diff's verdict against
    the previous baseline. When the fixtures cannot be regenerated nothing is written.
    Exits 0 when the baseline was written, even with failing cases (they stay in the
    report); 2 on bad input.
    """
    _add_inputs(accept)
    _add_lookup_source(accept)
    _add(
        accept,
        "--baseline",
        **_FILE,
        default=DEFAULT_BASELINE,
        help=f"the baseline JSON report; the Markdown one goes beside it as .md "
        f"(default: {DEFAULT_BASELINE})",
    )
    _add(accept, "--prune")
    _add(
        accept,
        "--max-listed",
        help="list at most N failing or regressed cases on the terminal (default: 20)",
    )
    _add(accept, "--allow-outside")


@_command(
    "check",
    help="check the golden cases' labels against the seed corpus, and the fixtures' "
    "provenance (offline)",
    epilog="Exit codes: 0 no errors (warnings alone exit 0), 1 stale fixtures, 2 an error "
    "in a label or bad input (as for every command), 3 an internal error.",
)
def _check(check: argparse.ArgumentParser) -> None:
    r"""Check the golden cases against the seed documents, offline: every judgment target
    (chunkId, docId, source) and every expectedSources, expectedDocIds,
    expectedContextSources and expectedRerankTopSource value exists (chunk ids as
    `ragsnap seed` cuts them with kb.chunking), every answer span occurs verbatim in its
    chunk or document, every expectedBreadcrumbs value is a prefix of a document's
    breadcrumb, and no case holds a secret (API key, token, password=, private key), a
    personal path (/home/..., C:\..., ~/) or an endpoint (http://..., host:port); these
    are errors. A language with answerable cases but no noAnswer case is a warning. One
    line per finding: FILE at JSON-POINTER: problem; fix. Then the committed fixtures
    are read as `ragsnap score` reads them and compared with what
    fixtures/_manifest.json says they were captured from: a seed document or a lookup
    setting changed since, or a fixture edited by hand, makes them stale.
    """
    _add_inputs(check)
    _add(check, "--seed-docs")
    _add(
        check,
        "--config",
        help="settings file for kb.seedDocs and kb.chunking (default: ragsnap.yaml when it "
        "exists, else built-in defaults)",
    )
    _add(
        check,
        "--embedder",
        help="the embedder the fixtures were captured with (`snapshot --embedder NAME`), "
        "for the provenance check: hashing, minilm or wordllama (default: kb.embedder in "
        "ragsnap.yaml, else hashing)",
    )
    _add(check, "--json-report", **_FILE, help="also write the findings as JSON (default: none)")
    _add(check, "--allow-outside")


@_command("diff", help="diff two existing JSON score reports")
def _diff(diff: argparse.ArgumentParser) -> None:
    """Compare a current JSON score report with a baseline report without rescoring; exits
    1 on any regression.
    """
    diff.add_argument("baseline", type=Path, help="the baseline JSON report")
    diff.add_argument("current", type=Path, help="the current JSON report")
    _add_reports(diff, DEFAULT_DIFF_JSON, DEFAULT_DIFF_MARKDOWN, "diff")
    _add_review(diff, "regressed")


@_command(
    "trend", help="score reports over time: a metric-over-time table and one chart per metric"
)
def _trend(trend: argparse.ArgumentParser) -> None:
    """Read score reports (or folders of them; by default the history folder that `ragsnap
    accept` and `ragsnap score --history` write), order them by the date in their file
    names (YYYY-MM-DD, optionally with a time) when every name has one, else in the
    order given, and write each metric over time as a Markdown table and, with
    --html-report, one small chart per metric. Both open with the latest change (the last
    report against the one before): which shown metrics dropped, or that none did.
    Reports that scored other golden cases than the one before are marked.
    """
    trend.add_argument(
        "reports",
        type=Path,
        nargs="*",
        metavar="REPORT",
        help="JSON score reports, or folders of them (other JSON files there are skipped) "
        "(default: the `history` folder of ragsnap.yaml, else reports/history)",
    )
    _add(
        trend,
        "--metrics",
        metavar="NAMES",
        help="comma-separated metrics to show, e.g. passRate,recallAtK,ndcg@10 (default: "
        "every metric the reports have)",
    )
    _add(
        trend,
        "--config",
        help="settings file with the `history` folder (default: ragsnap.yaml when it exists)",
    )
    _add(
        trend,
        "--markdown-report",
        **_FILE,
        default=DEFAULT_TREND_MARKDOWN,
        help=f"where to write the Markdown table (default: {DEFAULT_TREND_MARKDOWN})",
    )
    _add_html(trend, what="the metrics over time as a chart and a table")
    _add(trend, "--allow-outside")


@_command(
    "explain",
    help="one case stage by stage, its current fixture against the baseline's: what it "
    "lost and where",
    epilog="Exit codes: 0 the case was explained (regressed or not), 2 bad usage or input "
    "(an unknown case, a case without a fixture on either side, a ref git cannot read), "
    "3 an internal error.",
)
def _explain(explain: argparse.ArgumentParser) -> None:
    """Score CASE's current fixture and its baseline fixture as `ragsnap score` does, say
    what the case lost and at which pipeline stage (as the baseline diff does), then show
    every expected target (source, doc id, judged chunk, keyword, breadcrumb, span) as a
    table: one row per stage in pipeline order (corpus, settings, L0 hint, attempt,
    retrieval, fusion, rerank, floor, cut, context), the baseline's value beside the
    current one, the stage where a lost target was lost marked `<- lost here`; a value a
    fixture does not record reads "not reported". The baseline fixture is read from
    --baseline-fixtures DIR, from git at --baseline-ref REF, else from the first of HEAD,
    HEAD^1, the upstream, origin/HEAD, origin/main, origin/master whose fixtures are the
    ones --baseline was scored from (no baseline report: git HEAD). Writes no file.
    """
    explain.add_argument(
        "case_id", metavar="CASE", help="the id of the golden case to explain (required)"
    )
    _add_inputs(explain)
    _add(
        explain,
        "--baseline",
        **_FILE,
        help=f"the baseline JSON report, whose fixtures digest finds the baseline fixtures in "
        f"git (default: {DEFAULT_BASELINE} when it exists, else the fixtures at git HEAD)",
    )
    _add_baseline_fixtures(explain)
    _add(
        explain,
        "--config",
        help="settings file with scoring.skip (default: ragsnap.yaml when it exists, else "
        "built-in defaults)",
    )
    _add(
        explain,
        "--json",
        **_FLAG,
        help="print the explanation as JSON instead of text (default: text)",
    )


@_command("lookup", help="run one query through the lookup pipeline and print its lookupResult")
def _lookup(lookup: argparse.ArgumentParser) -> None:
    """Print the full lookupResult (evidence blocks, context pack, retrieval and rerank
    traces) of one query as JSON, for debugging the pipeline.
    """
    lookup.add_argument("query", help="the query text")
    _add_store(lookup, _backends(looks_up="pipeline"))
    _add(lookup, "--kb-scope", help="only documents of this kb_scope (default: every document)")
    _add(lookup, "--top-k", help="evidence blocks (default: lookup.topK, else 5)")
    _add_method(lookup, "")
    _add(
        lookup,
        "--no-latency",
        **_FLAG,
        help="write null latencies, so the output is byte-stable (default: measured)",
    )


@_command(
    "import",
    help="convert another tool's corpus and judgments (BEIR, TREC, SMART, GoodBuddy, Qilbee)",
)
def _import(imp: argparse.ArgumentParser) -> None:
    """Write ragsnap's own files from another format: DIR/corpus.jsonl (seed documents),
    DIR/golden-cases.json (graded judgments, spans, splits, no-answer queries),
    DIR/vectors.json (frozen vectors, when the format has them) and DIR/ragsnap.yaml
    pointing at them. Formats: beir (a folder with corpus.jsonl, queries.jsonl,
    qrels/<split>.tsv), trec (SGML documents, --topics, --qrels), smart (a folder with
    cran.all.1400, cran.qry, cranqrel, or the documents file with --topics and --qrels),
    goodbuddy (a JSON fixture), qilbee (a JSON contract fixture).
    """
    imp.add_argument(
        "format", choices=("beir", "trec", "smart", "goodbuddy", "qilbee"), help="the format"
    )
    imp.add_argument("source", type=Path, help="the file or folder to read")
    _add(imp, "--out", **_DIR, required=True, help="output folder (required)")
    _add(
        imp,
        "--kb-scope",
        help="kb_scope for documents that have none, and the cases' default (default: none)",
    )
    _add(
        imp,
        "--split",
        help="beir: which qrels/<split>.tsv, dev or test (default: both when present); "
        "others: the cases' split when the format has none (default: test)",
    )
    _add(imp, "--language", help="the queries' language when the format has none (default: en)")
    _add(imp, "--category", help="the cases' category when the format has none (default: imported)")
    _add(
        imp,
        "--topics",
        **_FILE,
        help="trec: the topics file; smart: the queries file (default: SOURCE/cran.qry)",
    )
    _add(
        imp,
        "--qrels",
        **_FILE,
        help="trec: the qrels file; smart: the `query document grade` file "
        "(default: SOURCE/cranqrel)",
    )
    _add(
        imp,
        "--dev-fraction",
        type=float,
        metavar="F",
        help="smart, trec: put a case in dev when the SHA-256 of its id, as a fraction, is "
        "below F (0 < F < 1), else in test; the same on every machine. beir, goodbuddy and "
        "qilbee carry their own splits and ignore it (default: none, every case gets --split)",
    )
    _add(
        imp,
        "--config",
        help="settings file for the chunk counts (default: ragsnap.yaml when it exists)",
    )
    _add(imp, "--allow-outside")


@_command("metrics", help="evaluate a TREC run against TREC qrels, trec_eval style")
def _metrics(metrics: argparse.ArgumentParser) -> None:
    """Read TREC qrels (query iter doc grade) and a run (query Q0 doc rank score tag) and
    print measure<TAB>query<TAB>value lines: per query with -q, then each measure's
    `all` line, num_q (queries averaged over) and num_excluded (queries of the qrels
    left out). By default the `all` lines are trec_eval's: the queries in both the run
    and the qrels are averaged over, including those whose judgments hold no relevant
    document (they score 0); a run query without judgments and a judged query missing
    from the run are ignored. -c averages over every query in the qrels, a missing one
    scoring 0 (trec_eval -c); --query-set ragsnap uses golden-case scoring's rule:
    queries without a relevant judgment are left out, judged queries missing from the
    run score 0. num_ret, num_rel, num_rel_ret and num_nonrel_judged_ret are summed;
    gm_map and gm_bpref are geometric means (floor 0.00001) with no per-query lines.
    trec_eval's -l, -M and -m all_trec / -m official work as in trec_eval.
    """
    _add(metrics, "--qrels", **_FILE, required=True, help="qrels file (required)")
    _add(metrics, "--run", **_FILE, required=True, help="run file (required)")
    _add(
        metrics,
        "-m",
        "--measure",
        action="append",
        metavar="MEASURE",
        help="a measure such as ndcg@10, recall@5, map, mrr@10, precision@10, hit@10, "
        "rprec, bpref, gm_map, iprec@0.10, num_ret, num_rel, num_rel_ret, ndcg_exp@10, "
        "coverage@10; trec_eval names (P_5, recip_rank, iprec_at_recall_0.10) and "
        "ir_measures names (AP, RR, R@5, nDCG@10, P@5) work too; repeatable (default: "
        "map, rprec, mrr@10, ndcg@10, recall@5, recall@10, precision@5, precision@10, "
        "hit@10, coverage@10); all_trec or official for trec_eval's sets, in its order "
        "after a runid line (all_trec adds relstring, infap, gm_bpref, rprec_mult@0.20, "
        "utility, 11pt_avg, bing, g, ndcg_rel, rndcg, relative_precision@5, set_precision, "
        "set_relative_precision, set_recall, set_map, set_f, num_nonrel_judged_ret)",
    )
    _add(
        metrics,
        "-l",
        "--relevance-level",
        type=int,
        default=1,
        metavar="N",
        help="a judgment of grade N or more is relevant, as trec_eval -l (default: 1)",
    )
    _add(
        metrics,
        "-M",
        "--max-retrieved",
        type=int,
        metavar="N",
        help="evaluate only the first N results of each query, as trec_eval -M "
        "(default: every result)",
    )
    _add(
        metrics,
        "--trec-eval",
        choices=("9", "10"),
        help="the trec_eval release whose recall-level rule iprec (iprec_at_recall) and "
        "11pt_avg follow: 9 takes floor(L * R + 0.9) relevant results, 10 (10.0-rc2) "
        "rounds L * R to the nearest; they differ when L * R has a fraction in [0.1, 0.5) "
        "(default: 9, as the current release, trec_eval 9.0.8, prints)",
    )
    _add(metrics, "-q", "--per-query", **_FLAG, help="also print one line per query (default: off)")
    _add(metrics, "--digits", type=int, default=4, metavar="N", help="decimal places (default: 4)")
    _add(
        metrics,
        "-c",
        "--complete",
        **_FLAG,
        help="average over every query in the qrels, a judged query missing from the run "
        "scoring 0, as trec_eval -c does; the same as --query-set complete (default: off)",
    )
    _add(
        metrics,
        "--query-set",
        choices=("trec", "complete", "ragsnap"),
        help="which queries are averaged over: trec = in both run and qrels (trec_eval), "
        "complete = every query in the qrels (trec_eval -c), ragsnap = judged queries with "
        "a relevant document, in the run or not, as golden-case scoring does (default: trec)",
    )


@_command("export-run", help="write fixtures as a TREC run (and judgments as TREC qrels)")
def _export_run(export: argparse.ArgumentParser) -> None:
    """Write each case's evidence blocks as a TREC run (scores n - rank + 1, so trec_eval
    keeps the fixture's order) and, with --qrels-out, the golden cases' judgments as
    TREC qrels, for trec_eval, ranx or `ragsnap metrics`.
    """
    _add_inputs(export)
    _add(export, "--out", "--run-out", **_FILE, required=True, help="run file (required)")
    _add(export, "--qrels-out", **_FILE, help="also write the judgments (default: no)")
    _add(
        export,
        "--target",
        choices=("chunkId", "docId", "source"),
        help="which evidence id to rank (default: each case's judgment kind, else chunkId)",
    )
    _add(export, "--tag", default="ragsnap", help="the run tag column (default: ragsnap)")
    _add(export, "--allow-outside")


@_command("serve", help="serve the knowledge base over the HTTP contract (lookup, similar, upload)")
def _serve(serve: argparse.ArgumentParser) -> None:
    """Run the reference HTTP service (FastAPI + uvicorn, extra `serve`) over the local
    knowledge base: POST /api/knowledge/lookup, GET /api/search/similar, GET/POST/DELETE
    /api/documents, GET /api/health; OpenAPI at /openapi.json. The http backend and
    live-check talk to it.
    """
    _add_store(serve, _backends(serves=True))
    _add(serve, "--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    _add(
        serve,
        "--port",
        type=_port,
        default=9900,
        help="port to listen on; 0 picks a free one (default: 9900)",
    )
    _add_token(serve, "require this bearer token", "default: no token")
    _add(
        serve,
        "--max-body",
        type=_positive_int,
        default=8 * 1024 * 1024,
        metavar="BYTES",
        help="largest request body accepted (default: 8 MiB)",
    )
    _add(
        serve,
        "--log-level",
        choices=("critical", "error", "warning", "info", "debug"),
        default="warning",
        help="uvicorn log level (default: warning)",
    )
    _add(serve, "--access-log", **_FLAG, help="log every request (default: off)")
    _add(
        serve,
        "--workers",
        **_COUNT,
        help="worker processes answering requests, each opening the knowledge base; N "
        "lookups run at once (default: the CPUs, at most 4, for the embedded store; 1 for "
        "milvus)",
    )
    _add(
        serve,
        "--write-wait",
        type=_seconds,
        default=10.0,
        metavar="SECONDS",
        help="how long an upload or delete waits for the store's writer lock while another "
        "worker or `ragsnap seed` holds it, before a 409 with Retry-After (default: 10)",
    )


@_command(
    "prepare",
    help="upload the seed corpus to a live service, resumably, recording its receipts "
    "in a state file",
)
def _prepare(prepare: argparse.ArgumentParser) -> None:
    """Upload seed-docs/ through the service's upload endpoint with deterministic
    idempotency keys and record each document's server id, revision and embedding
    identity in --state (mode 0600), checkpointed every 64 documents, under a lock
    beside the state. Re-running with the same state resumes: it checks the saved
    documents against the service, re-sends only what is missing, and verifies the whole
    state at the end. Exit 0 verified, 1 verification failures (listed), 2 usage, lock,
    service or budget errors.
    """
    _add(
        prepare,
        "--backend",
        choices=_backends(seeds="service"),
        default="http",
        help="the service to prepare (default: http, the only one)",
    )
    _add(
        prepare,
        "--state",
        required=True,
        help="the state file, in an existing private folder (required)",
    )
    _add(prepare, "--seed-docs")
    _add(prepare, "--config")
    _add(prepare, "--base-url")
    _add_token(prepare, "send this bearer token")
    _add(
        prepare,
        "--max-requests",
        help="send at most N requests in this run, then checkpoint and stop with exit 2 "
        "(default: no limit)",
    )
    _add(prepare, "--max-records")
    _add(prepare, "--max-bytes")
    _add(
        prepare,
        "--reset-state",
        **_FLAG,
        help="start over: ignore what --state holds (the service keeps its documents; the "
        "same keys get the same records back) (default: resume from it)",
    )
    _add(
        prepare,
        "--verify-only",
        **_FLAG,
        help="upload nothing: verify the state against the service (under the lock) and "
        "record the verdict in it, e.g. before and after a trial (default: prepare)",
    )


@_command("live-check", help="smoke-check a running service's similarity search after a reindex")
def _live_check(live: argparse.ArgumentParser) -> None:
    """Send every golden case's query (or --case ID) to the service's similarity search
    (GET /api/search/similar, mapped by the http section of ragsnap.yaml) and check that
    an expected source is in the top K. Writes JSON and Markdown reports with each
    case's top results, breadcrumbs, score labels and raw response fields (no result
    texts, never the token). Exits 1 when a case fails (a case's knownFailure is
    reported, not failing) or every case returned no results (an empty index), 2 when
    the service cannot be reached. Not a replacement for the offline `ragsnap score`
    baseline. With --state (of `ragsnap prepare`) the prepared service is verified
    before and after the lookups under the state's lock; a verification failure makes
    the run invalid (exit 1), a held lock or a too small --max-requests exits 2 before
    any request.
    """
    _add(live, "--cases")
    _add(live, "--case")
    _add(
        live,
        "--backend",
        choices=_searching_backends(),
        help="whose similarity search is checked: a service (http) or a Python retriever "
        "(python, its search) (default: kb.backend in ragsnap.yaml when it is one of these, "
        "else http)",
    )
    _add(live, "--base-url")
    _add_token(live, "send this bearer token")
    _add(live, "--retriever")
    _add(
        live,
        "--kb-scope",
        help="search every case inside this kb_scope (default: each case's kbScope)",
    )
    _add(live, "--top-k", help="results asked for and checked per case (default: each case's topK)")
    _add_reports(live, DEFAULT_LIVE_JSON, DEFAULT_LIVE_MARKDOWN)
    _add_html(live)
    _add(
        live,
        "--config",
        help="settings file with the http section (default: ragsnap.yaml when it exists, "
        "else built-in defaults)",
    )
    _add(live, "--concurrency", help="requests in flight (default: http.concurrency, else 4)")
    _add(
        live,
        "--state",
        help="the state file `ragsnap prepare` wrote: hold its lock for the run and verify "
        "the service against it (ids, revisions, embedding identities, no duplicates or "
        "stray records, a complete list) before and after the lookups (default: no "
        "verification)",
    )
    _add(
        live,
        "--repeat-check",
        **_FLAG,
        help="send each case's search twice and fail the run when the two answers' evidence "
        "ids differ (default: once)",
    )
    _add(
        live,
        "--max-requests",
        help="send at most N requests (verification lists and searches); a run that needs "
        "more exits 2 before sending any (default: no limit)",
    )
    _add(live, "--max-records")
    _add(live, "--max-bytes")
    _add(live, "--allow-outside")
    _add_privacy(live)


@_command(
    "audit",
    help="could the golden set catch a regression? detectable effects, discriminative "
    "power, a mutation score",
)
def _audit(audit: argparse.ArgumentParser) -> None:
    """Audit the golden set itself. From the baseline (and --current, a current score
    report of the same cases): each aggregate metric's minimum detectable effect under the
    diff's paired test and the cases a drop of --drop needs. With --trial: each
    measure's discriminative power over the trial's methods and its swap rate between
    the dev and test splits. Then a mutation audit: each retrieval fault of the
    catalogue (stemming off, a wrong category hint, topK cut by one, a stale index ...)
    injected into the embedded pipeline in a scratch store, snapshotted, scored and
    diffed against the baseline as the PR check would; the mutation score is the share
    the check catches, and each uncaught fault comes with the kind of case that would
    catch it. Exits 1 when the mutation score is below --fail-under.
    """
    _add(audit, "--cases")
    _add(audit, "--config", help=f"settings file {_SETTINGS}")
    _add(audit, "--embedder")
    _add(
        audit,
        "--baseline",
        **_FILE,
        default=DEFAULT_BASELINE,
        help=f"the committed baseline score report the PR check compares against "
        f"(default: {DEFAULT_BASELINE})",
    )
    _add(
        audit,
        "--current",
        **_FILE,
        help="a current score report of the same cases (`ragsnap score`'s): its per-case "
        "differences from the baseline are the churn the detectable effects allow for "
        "(default: none)",
    )
    _add(
        audit,
        "--trial",
        **_FILE,
        help="a trial report (`ragsnap trial --split all`) for discriminative power and "
        "dev/test swap rates per measure (default: none, that part is skipped)",
    )
    _add(
        audit,
        "--mutations",
        metavar="A,B,...",
        help="the mutations to run, by name, or all or none (default: all)",
    )
    _add_method(audit, "the mutated ")
    _add(
        audit,
        "--drop",
        type=_within(float, 0, 1, "a share"),
        default=0.02,
        metavar="X",
        help="the drop the case counts are computed for (default: 0.02, two points)",
    )
    _add(
        audit,
        "--power",
        type=_within(float, 0, 1, "a probability"),
        default=0.8,
        metavar="P",
        help="the probability of detection a minimum detectable effect has (default: 0.8)",
    )
    _add(
        audit,
        "--fail-under",
        type=_within(float, 0, 1, "a share"),
        metavar="X",
        help="exit 1 when the mutation score is below X (default: never)",
    )
    _add_reports(audit, DEFAULT_AUDIT_JSON, DEFAULT_AUDIT_MARKDOWN, "audit report")
    _add_html(audit, what="the detectable effects, the measures, the mutations and their advice")
    _add(audit, "--allow-outside")


@_command("trial", help="compare retrieval methods on one corpus: measured, pinned, gated")
def _trial(trial: argparse.ArgumentParser) -> None:
    """Seed an embedded knowledge base from the configured corpus (one per vector
    provider, kept in trial.storeCache and reused while the corpus, embedder and
    segmenter stay the same; --kb uses an existing one), run every method over the same golden cases
    with the same k, and write one comparison report: hit levels, graded measures (over
    raw rankings with --depth), span context precision and recall, no-answer false
    positives, per split, language and category; latency from a warm-up and seeded,
    shuffled repetitions; a determinism check; gates. The report holds ids, digests and
    measurements, never queries or texts. Exits 1 when a gate that ran fails or two
    passes differ; a gate that could not run leaves its method experimental. With
    --backend http, the methods of http.methods run on a live service instead; with
    --backend python, the retrievers of python.methods; nothing seeded.
    """
    _add(trial, "--cases")
    _add(
        trial,
        "--backend",
        choices=_trial_backends(),
        help="embedded: temporary knowledge bases seeded from kb.seedDocs; "
        + "; ".join(
            f"{name}: one method per {_methods_key(name)} entry" for name in _trial_backends()[1:]
        )
        + " (default: embedded)",
    )
    _add(trial, "--base-url", help=f"http: {_SERVICE}")
    _add_token(trial, "http: send this bearer token")
    _add(trial, "--max-records")
    _add(trial, "--max-bytes")
    _add(
        trial,
        "--methods",
        metavar="A,B,...",
        help="methods to compare (default: trial.methods in ragsnap.yaml, else lexical, "
        "vector, hybrid, hybrid+rerank, and alias when trial.aliases is set; http, python: "
        "every http.methods / python.methods entry)",
    )
    _add(
        trial,
        "--depth",
        **_COUNT,
        help="also rank N candidates per query (N documents when the judgments name "
        "documents) with no score floor and no top K, for the ranking measures and the TREC "
        "runs (default: trial.depth, else the evidence only)",
    )
    _add(
        trial,
        "--split",
        choices=("dev", "test", "all"),
        help="run only the cases of this split (default: all)",
    )
    _add(trial, "--repetitions", **_COUNT, help="measured passes after the warm-up (default: 1)")
    _add(
        trial,
        "--seed",
        type=int,
        metavar="N",
        help="seed of each pass's shuffled order: the warm-up's queries and their methods, "
        "a measured pass's method blocks and their queries (default: 20260920)",
    )
    _add(
        trial,
        "--write-plan",
        "--plan-out",
        **_FILE,
        help="write the plan (input digests, methods and settings, depth, split, "
        "repetitions, seed) and stop (default: run the trial)",
    )
    _add(
        trial,
        "--plan",
        **_FILE,
        help="run exactly this plan: flags that would change it are refused, and inputs "
        "that differ from it are named (default: the plan the flags and settings make)",
    )
    _add(
        trial,
        "--aliases",
        **_FILE,
        help="the alias provider's term groups (YAML), which defines the `alias` method "
        "(default: trial.aliases in ragsnap.yaml, else no alias method)",
    )
    _add(
        trial,
        "--gates",
        **_FILE,
        help="thresholds per method, over any selection of cases (YAML; default: "
        "trial.gates, else no gates)",
    )
    _add(
        trial,
        "--runs-dir",
        "--runs-out",
        **_DIR,
        help="write DIR/<method>.trec and DIR/qrels.txt for `ragsnap metrics`, trec_eval, "
        "ranx (default: none)",
    )
    _add(
        trial,
        "--no-check-determinism",
        dest="check_determinism",
        action="store_false",
        help="do not compare the passes (default: every pass must give the same results)",
    )
    _add(
        trial,
        "--reference",
        metavar="METHOD",
        help="the method every other method is paired with in the report's significance "
        "tests (diff.significance settings; default: the first method)",
    )
    _add(
        trial,
        "--all-pairs",
        action="store_true",
        help="test every pair of methods instead of each against the reference (default: off)",
    )
    _add_reports(trial, DEFAULT_TRIAL_JSON, DEFAULT_TRIAL_MARKDOWN)
    _add_html(trial)
    _add_comparison(
        trial,
        "a baseline trial report to diff against, per method; exits 1 on a "
        "regression (default: no diff)",
        DEFAULT_TRIAL_DIFF_JSON,
        DEFAULT_TRIAL_DIFF_MARKDOWN,
    )
    _add(
        trial,
        "--kb",
        help="use this embedded knowledge base instead of seeding one "
        "(default: the store cache's, else a temporary one, deleted after)",
    )
    _add(
        trial,
        "--no-store-cache",
        dest="store_cache",
        action="store_false",
        help="seed a temporary store, deleted after, instead of reusing (or seeding and "
        "keeping) the store of this corpus and embedder in trial.storeCache (default: "
        ".ragsnap/trial-stores; clear it by deleting the folder)",
    )
    _add(
        trial,
        "--cgroup",
        **_DIR,
        help="read this cgroup v2 directory's cpu.stat, memory.current and memory.peak around "
        "each method's resource pass (a service's container, e.g. /sys/fs/cgroup/system.slice/"
        "docker-<id>.scope; read-only) (default: ragsnap's own cgroup when readable)",
    )
    _add(
        trial,
        "--keep",
        type=_within(int, 0, 10000, "a whole number"),
        metavar="N",
        help="move the previous JSON, Markdown and HTML reports into trial-history/ beside "
        "the JSON report before writing, keeping the newest N runs there; 0 overwrites "
        "(default: 20)",
    )
    _add(trial, "--config")
    _add(trial, "--embedder")
    _add(trial, "--allow-outside")
    _add_privacy(trial, "trial.shareable in ragsnap.yaml, else off")
    _add(trial, "--no-label-check")


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
    args, extras = parser.parse_known_args(argv)
    if extras:
        _refuse(_command_parser(parser, args.command), extras)
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


def _refuse(command: argparse.ArgumentParser, extras: list[str]) -> NoReturn:
    """Exit 2 on arguments ``command`` does not know, suggesting the option meant."""
    from .errors import did_you_mean

    known = [flag for action in command._actions for flag in action.option_strings]
    meant = {
        extra: did_you_mean(extra.partition("=")[0], known)
        for extra in extras
        if extra.startswith("--")
    }
    hints = "; ".join(f"did you mean {m!r} for {e!r}?" for e, m in meant.items() if m)
    command.error(f"unrecognized arguments: {' '.join(extras)}" + (f" ({hints})" if hints else ""))


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

"""``pytest --ragsnap``: every golden case as a pytest test.

Installed with ragsnap as the ``pytest11`` entry point ``ragsnap``, so it is
loaded by every pytest run in an environment that has ragsnap; it stays inert
(no ragsnap module beyond this one imported, no hook doing any work) unless
``--ragsnap`` is given::

    pytest --ragsnap                     # score every case's saved fixture, offline
    pytest --ragsnap -k db-err-4031      # one case (or any -k / -m selection)
    pytest --ragsnap --ragsnap-update    # snapshot the selected cases first, then score

**Labels first.** At collection, the label checks of ``ragsnap check`` run as
``ragsnap score`` runs them (``ragsnap.commands._labels``, over the cases as read
and one pass over the seed corpus that the provenance check reuses): a broken
label (a target that does not exist, a span that occurs nowhere, a secret in a
case, a language with no no-answer case ...) stops the run as a usage error
(exit code 4) listing every error; warnings and notes are in the terminal
summary, once. ``--ragsnap-no-label-check`` skips them.

**What is collected.** One test item per golden case of ``ragsnap_cases``
(default ``cases/golden-cases.json``), named by the case id under the cases
file (``cases/golden-cases.json::db-err-4031-order-repository``). The items are
added by a session-level hook, so they are collected whatever the project's
``testpaths`` say, and before ``-k``, ``-m`` and ``--deselect`` select from them.

**What an item checks.** Exactly what ``ragsnap score`` checks, with its code, the
fixtures' provenance first: a case whose fixture was captured before a seed document
or a lookup setting changed fails with the cause (``ragsnap.snapshot.provenance``),
known failure or not. Then the case's fixture in ``ragsnap_fixtures`` (default
``fixtures``) is scored by ``ragsnap.scoring.hits.score_case`` with its graded
metrics from ``ragsnap.scoring.casemetrics.case_metrics`` and the measures of
``ragsnap_config`` (default ``ragsnap.yaml`` when it exists). A failing case
fails with ``hit level <level>: <reason>; <reason>``, the reasons ``ragsnap
score`` lists. A case with ``knownFailure`` follows ``knownFailures`` in the
configuration (``ragsnap.scoring.hits``), as ``ragsnap score`` does: ``expected``
(the default) marks it ``xfail`` with that reason (xfailed while it fails, XPASS
when it passes, as ``ragsnap score`` lists "known failures that now pass");
``strict`` marks it ``xfail(strict=True)``, so a known failure that passes fails
the run as ``XPASS(strict)``; ``fail`` does not mark it, so it fails like any
case. An expectation the case's fixture cannot show (no retrieval trace, rerank
trace or context pack: not applicable) or that ``scoring.skip`` turns off is not
checked, as in ``ragsnap score``, and is recorded as the item's
``ragsnap.notApplicable`` / ``ragsnap.skippedExpectations`` property (JUnit XML).
A missing fixture fails, known failure or not, saying how to create it:
unlike ``ragsnap score``, which counts it as a known failure's failure, a test
that cannot run is never expected.

**What a failing case lost.** With a baseline score report (``ragsnap_baseline``,
default ``reports/baseline.json`` when it exists; none: no comparison), a case that
fails or xfails and is in the baseline is compared with it as ``ragsnap score
--compare-to`` compares it: its report entry (``ragsnap.scoring.report.case_entry``)
against the baseline's (``ragsnap.scoring.diff.case_diff``), and what it lost is
attributed to a pipeline stage (``ragsnap.commands._forensics.attribute_with``). The
``lost_text`` line ends the failure message: ``hit level medium: <reasons>; lost
keyword '14 days' (corpus: log-retention#1 text changed: removed '14 days')``. The
baseline's fixtures are found once per session, at the first loss, as ``ragsnap
score`` finds them (``ragsnap_baseline_fixtures``, ``ragsnap_baseline_ref``, else the
git revision whose fixtures the baseline was scored from); none found: the loss is
named without its stage, and the terminal summary says how to name them. A private
baseline names losses by their hashes, without stages.

**--ragsnap-update.** Before the first test runs, the fixtures of the selected
cases are regenerated from the configured knowledge base by ``ragsnap
snapshot``'s own code (``ragsnap.commands.snapshot.run``: the ``kb.backend`` of
the configuration, by default the embedded SQLite file ``.ragsnap/kb.sqlite``
that ``ragsnap seed`` builds; unchanged fixtures are left as they are), then the
items score them. Its report is shown in the terminal summary.

**Unused fixtures** (``*.json`` files in the fixtures folder that no golden
case names) are listed in the terminal summary; ``--ragsnap-update`` deletes
them, but only when every case is selected, since a partial selection says
nothing about the others (syrupy's rule), and only those that are fixtures of
this project (valid against the fixture schema, ``caseId`` the file's name):
any other file is listed as "not a fixture, left alone", and a fixtures folder
that holds the cases file or the configuration is refused (``ragsnap snapshot
--prune``'s rules).

**Paths** (``--ragsnap-cases``, ``--ragsnap-fixtures``, ``--ragsnap-config``,
``--ragsnap-baseline``, ``--ragsnap-baseline-fixtures``, else the ini options of
the same names, else ``ragsnap score``'s defaults) are relative to pytest's
rootdir, and every ragsnap function runs with the rootdir as the current folder,
so the plugin reads and writes what ``ragsnap score`` and ``ragsnap snapshot``
run from the rootdir would. Bad input (a cases file, configuration, baseline
report or fixture that does not validate, a knowledge base that cannot be
opened) stops the run as a pytest usage error (exit code 4) naming
the file and the fix; baseline fixtures or a git revision that cannot be read stop
it with exit code 4 at the first loss (``pytest.exit``: raised in a test, a usage
error would only fail that test).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from _pytest._code.code import TerminalRepr, TracebackStyle

    from .commands._forensics import BaselineFixtures
    from .commands._labels import LabelCheck
    from .config import Config
    from .io.inputs import CaseSet, FixtureSet
    from .models import Fixture, GoldenCase
    from .scoring.hits import CaseResult
    from .snapshot.provenance import Staleness

__all__ = [
    "CaseFailed",
    "CaseItem",
    "CasesFile",
    "FixtureMissing",
    "FixtureStale",
    "RagsnapRun",
]

#: ``ragsnap score``'s defaults (``ragsnap.commands.DEFAULT_CASES``, ``DEFAULT_FIXTURES``,
#: ``ragsnap.config.DEFAULT_CONFIG``; a test keeps them equal), spelled out here so
#: that loading the plugin imports nothing else of ragsnap
DEFAULT_CASES = "cases/golden-cases.json"
DEFAULT_FIXTURES = "fixtures"
DEFAULT_CONFIG = "ragsnap.yaml"
DEFAULT_BASELINE = "reports/baseline.json"


class CaseFailed(Exception):
    """A golden case whose fixture does not satisfy it; the message is the reasons."""


class FixtureStale(Exception):
    """A case's fixture was captured before its corpus or settings changed: it fails,
    known failure or not (its xfail expects ``CaseFailed`` only)."""


class FixtureMissing(Exception):
    """A golden case without a fixture; the message says how to create one."""


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("ragsnap", "ragsnap golden cases")
    group.addoption(
        "--ragsnap",
        action="store_true",
        help="collect the golden cases as tests, each scoring its saved fixture offline as "
        "`ragsnap score` does (default: off)",
    )
    group.addoption(
        "--ragsnap-update",
        action="store_true",
        help="with --ragsnap: first regenerate the selected cases' fixtures from the "
        "knowledge base as `ragsnap snapshot` does, and delete unused fixtures when every "
        "case is selected (default: off)",
    )
    group.addoption(
        "--ragsnap-no-label-check",
        action="store_true",
        help="with --ragsnap: do not run `ragsnap check`'s label checks before scoring "
        "(default: they run, and a broken label stops the run as a usage error)",
    )
    for name, what, default, metavar in (
        ("cases", "golden cases file", DEFAULT_CASES, "FILE"),
        ("fixtures", "folder of {caseId}.json fixtures", DEFAULT_FIXTURES, "DIR"),
        ("config", "ragsnap settings file", f"{DEFAULT_CONFIG} when it exists", "FILE"),
        (
            "baseline",
            "baseline score report a failing case is compared with, to say what it lost",
            f"{DEFAULT_BASELINE} when it exists, else no comparison",
            "FILE",
        ),
        (
            "baseline_ref",
            "git revision holding the baseline's fixtures, to say at which stage a "
            "failing case lost it",
            "the one of HEAD, its parent, the upstream, origin/main ... whose fixtures the "
            "baseline was scored from",
            "REF",
        ),
        (
            "baseline_fixtures",
            "folder of the baseline's fixtures (instead of a git revision)",
            "none",
            "DIR",
        ),
    ):
        what += "" if metavar == "REF" else ", relative to the rootdir"
        group.addoption(
            f"--ragsnap-{name.replace('_', '-')}",
            metavar=metavar,
            help=f"{what} (default: the ini option ragsnap_{name}, else {default})",
        )
        parser.addini(
            f"ragsnap_{name}",
            f"ragsnap: {what} (default: {default})",
            default="",
        )


def pytest_configure(config: pytest.Config) -> None:
    if not config.getoption("ragsnap"):
        if config.getoption("ragsnap_update"):
            raise pytest.UsageError(
                "--ragsnap-update needs --ragsnap; run `pytest --ragsnap --ragsnap-update`"
            )
        return
    config.pluginmanager.register(RagsnapRun(config), "ragsnap-run")


def _setting(config: pytest.Config, name: str) -> str | None:
    """``--ragsnap-<name>``, else the ini option ``ragsnap_<name>``, else None."""
    value = config.getoption(f"ragsnap_{name}") or config.getini(f"ragsnap_{name}")
    return str(value) if value else None


@contextlib.contextmanager
def _inside(folder: Path) -> Iterator[None]:
    """Run ragsnap code with ``folder`` as the current folder, as its command line
    would run there (``contextlib.chdir`` is 3.11+)."""
    before = Path.cwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(before)


@contextlib.contextmanager
def _usage_errors(doing: str) -> Iterator[None]:
    """A ``RagsnapError`` (bad input, a knowledge base that cannot be opened) as a
    pytest usage error: the message, no traceback."""
    from .errors import RagsnapError

    try:
        yield
    except RagsnapError as exc:
        raise pytest.UsageError(f"ragsnap ({doing}): {exc.kind}: {exc}") from None


@contextlib.contextmanager
def _stop_on_errors(doing: str) -> Iterator[None]:
    """A ``RagsnapError`` while a test runs (bad baseline fixtures, a git revision that
    cannot be read) stops the session as a usage error: raised in a test, a
    ``pytest.UsageError`` would only fail that test."""
    from .errors import RagsnapError

    try:
        yield
    except RagsnapError as exc:
        said = _our_options(f"ragsnap ({doing}): {exc.kind}: {exc}")
        pytest.exit(said, returncode=pytest.ExitCode.USAGE_ERROR)


def _our_options(text: str) -> str:
    """``ragsnap.commands._forensics``'s messages name ``ragsnap score``'s options
    (``--baseline-ref``, ``--baseline-fixtures``); the plugin's are prefixed."""
    return text.replace("--baseline-", "--ragsnap-baseline-")


def snapshot_args(
    cases: Path, fixtures: Path, config: Path | None, only: list[str] | None, *, prune: bool
) -> argparse.Namespace:
    """The arguments of ``ragsnap snapshot --cases CASES --fixtures FIXTURES [--config
    CONFIG] [--case ID ...] [--prune] --skip-eval``; everything else its default (a
    test keeps the names equal to the command line's)."""
    return argparse.Namespace(
        cases=cases,
        fixtures=fixtures,
        config=config,
        embedder=None,
        case=only,
        backend=None,
        kb=None,
        kb_scope=None,
        retrieved_at=None,
        concurrency=None,
        method=None,
        latency=False,
        base_url=None,
        token_file=None,
        token_env=None,
        retriever=None,
        check=False,
        prune=prune,
        skip_eval=True,
        allow_outside=False,
    )


class RagsnapRun:
    """The plugin's state for one ``pytest --ragsnap`` session (registered only then)."""

    def __init__(self, config: pytest.Config):
        self.root = config.rootpath
        self.update: bool = config.getoption("ragsnap_update")
        self.no_label_check: bool = config.getoption("ragsnap_no_label_check")
        self.labels: LabelCheck | None = None  # the label check's result, at collection
        self.label_lines: list[str] = []  # its warnings and notes, for the summary
        self.cases = Path(_setting(config, "cases") or DEFAULT_CASES)
        self.fixtures = Path(_setting(config, "fixtures") or DEFAULT_FIXTURES)
        named = _setting(config, "config")
        self.config_file = None if named is None else Path(named)
        named = _setting(config, "baseline")
        self.baseline_file = Path(named) if named is not None else None
        if named is None and (self.root / DEFAULT_BASELINE).is_file():
            self.baseline_file = Path(DEFAULT_BASELINE)
        self.baseline_ref = _setting(config, "baseline_ref")
        named = _setting(config, "baseline_fixtures")
        self.baseline_folder = None if named is None else Path(named)
        self.baseline: dict[str, Any] | None = None  # the report, read at collection
        self.baseline_cases: dict[str, Mapping[str, Any]] = {}
        self.baseline_source: BaselineFixtures | None = None  # found at the first loss
        self.baseline_searched = False
        self.baseline_notes: list[str] = []
        self.case_set: CaseSet | None = None
        self.settings: Config | None = None
        self.staleness: Staleness | None = None
        self.measures: tuple[str, ...] = ()
        self.skip: frozenset[str] = frozenset()
        self.known_failures = "expected"  # ragsnap.yaml's knownFailures, read at collection
        self.prepared = False
        self.saved: dict[str, Fixture] = {}
        self.graded: dict[str, dict[str, float | None]] = {}
        self.unused: list[str] = []
        self.deleted: list[str] = []
        self.snapshot_report: list[str] = []

    # -- collection -------------------------------------------------------------------

    @pytest.hookimpl(tryfirst=True)  # before -k, -m and --deselect select from the items
    def pytest_collection_modifyitems(
        self, session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        self._read_inputs()
        node = CasesFile.from_parent(session, path=self.root / self.cases, run=self)
        items.extend(session.genitems(node))

    def _read_inputs(self) -> None:
        """Read the configuration and the golden cases, or stop with a usage error."""
        from .config import load_config
        from .io.inputs import load_cases_document, load_report

        for path, option, what in (
            (self.cases, "cases", "golden cases file"),
            (self.config_file, "config", "ragsnap settings file"),
            (self.baseline_file, "baseline", "baseline score report"),
        ):
            if path is not None and not (self.root / path).is_file():
                raise pytest.UsageError(
                    f"ragsnap: {path}: no such {what} under the rootdir {self.root}; create "
                    f"it, or set ragsnap_{option} in the pytest configuration (or pass "
                    f"--ragsnap-{option})"
                )
        with _usage_errors("reading the inputs"), _inside(self.root):
            settings = load_config(self.config_file)
            self.settings = settings
            self.measures = settings.measures
            self.skip = frozenset(settings.skip_expectations)
            self.known_failures = settings.known_failures
            self.case_set, document = load_cases_document(self.cases)
        self._check_labels(settings, document)
        if self.baseline_file is not None:
            with _usage_errors("reading the baseline, --ragsnap-baseline"), _inside(self.root):
                self.baseline = load_report(self.baseline_file, "baseline")
            self.baseline_cases = {c["id"]: c for c in self.baseline["cases"]}

    def _check_labels(self, settings: Config, document: Any) -> None:
        """``ragsnap check``'s label checks, as ``ragsnap score`` runs them
        (``ragsnap.commands._labels``): an error stops the run as a usage error with
        every error line; warnings and notes go to the terminal summary, once."""
        from .commands._labels import check_labels_before_scoring
        from .errors import RagsnapError

        assert self.case_set is not None
        said = io.StringIO()
        try:
            with _inside(self.root), contextlib.redirect_stderr(said):
                self.labels = check_labels_before_scoring(
                    settings, self.cases, self.case_set.cases, document, skip=self.no_label_check
                )
        except RagsnapError as exc:
            listed = "".join(f"{line}\n" for line in said.getvalue().splitlines())
            raise pytest.UsageError(
                f"{listed}ragsnap (checking the golden cases' labels): {exc.kind}: {exc}"
            ) from None
        self.label_lines = said.getvalue().splitlines()

    # -- before the first test --------------------------------------------------------

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> None:
        if session.testsfailed or session.config.option.collectonly:
            return  # collection errors: pytest stops; --collect-only: nothing runs
        self.prepare(session)

    def prepare(self, session: pytest.Session) -> None:
        """Snapshot the selected cases (``--ragsnap-update``), read the fixtures and
        compute the selected cases' graded metrics; once per session."""
        if self.prepared:
            return
        self.prepared = True
        selected = [item.case for item in session.items if isinstance(item, CaseItem)]
        if not selected:
            return
        if self.update:
            self._snapshot(selected)
        from .ir.metrics import parse_measures
        from .scoring.casemetrics import case_metrics

        fixture_set = self._read_fixtures()
        self.saved = {} if fixture_set is None else fixture_set.fixtures
        if fixture_set is not None:
            self.staleness = self._provenance(fixture_set)
        self.graded = case_metrics(selected, self.saved, parse_measures(self.measures))
        self.unused = [f"{name}.json" for name in self.saved if name not in self._case_ids()]

    def _case_ids(self) -> set[str]:
        assert self.case_set is not None  # read at collection
        return {case.id for case in self.case_set.cases}

    def _snapshot(self, selected: list[GoldenCase]) -> None:
        """``ragsnap snapshot`` of the selected cases, pruning unused fixtures when
        every case is selected; its report kept for the terminal summary."""
        from .commands import snapshot

        every = len(selected) == len(self._case_ids())
        before = self._fixture_names()
        args = snapshot_args(
            self.cases,
            self.fixtures,
            self.config_file,
            None if every else [case.id for case in selected],
            prune=every,
        )
        out = io.StringIO()
        with (
            _usage_errors("--ragsnap-update"),
            _inside(self.root),
            contextlib.redirect_stdout(out),
            contextlib.redirect_stderr(io.StringIO()),  # its progress: the summary says it
        ):
            snapshot.run(args)
        self.snapshot_report = out.getvalue().splitlines()
        if every:  # what the prune deleted: fixtures only, never another file
            after = set(self._fixture_names())
            self.deleted = [name for name in before if name not in after]

    def _fixture_names(self) -> list[str]:
        folder = self.root / self.fixtures
        if not folder.is_dir():
            return []
        from .io.inputs import FIXTURE_MANIFEST

        return sorted(
            p.name
            for p in folder.iterdir()
            if p.name.endswith(".json") and p.name != FIXTURE_MANIFEST and p.is_file()
        )

    def _read_fixtures(self) -> FixtureSet | None:
        """Every fixture, as ``ragsnap score`` reads them; None when the folder is absent
        (every case then fails saying how to create its fixture)."""
        from .io.inputs import load_fixtures

        folder = self.root / self.fixtures
        if not folder.exists():
            return None
        if not folder.is_dir():
            raise pytest.UsageError(
                f"ragsnap: {self.fixtures}: a file, not a folder of fixtures; set "
                "ragsnap_fixtures in the pytest configuration (or pass --ragsnap-fixtures) "
                "to the folder"
            )
        with _usage_errors("reading the fixtures"), _inside(self.root):
            return load_fixtures(self.fixtures)

    def _provenance(self, fixture_set: FixtureSet) -> Staleness:
        """The fixtures' provenance check, as ``ragsnap score`` runs it."""
        from .commands._provenance import check_fixtures

        assert self.settings is not None  # read at collection
        with _usage_errors("checking the fixtures' provenance"), _inside(self.root):
            return check_fixtures(
                self.settings,
                fixture_set,
                self.fixtures,
                self._case_ids(),
                None if self.labels is None else self.labels.seed,  # read once, at collection
            )

    # -- one case ---------------------------------------------------------------------

    def score(self, item: CaseItem) -> None:
        """Score ``item``'s case as ``ragsnap score`` does; raise when it fails."""
        from .scoring.hits import score_case

        self.prepare(item.session)  # when another plugin drives the run loop
        case = item.case
        fixture = self.saved.get(case.id)
        if fixture is None:
            where = (self.fixtures / f"{case.id}.json").as_posix()
            raise FixtureMissing(
                f"{where}: missing; run `pytest --ragsnap --ragsnap-update -k {case.id}` or "
                f"`ragsnap snapshot --case {case.id}` to create it from the knowledge base "
                "(`ragsnap seed` builds the embedded one), or delete the case"
            )
        stale = self.staleness.cases.get(case.id) if self.staleness is not None else None
        if stale:
            from .snapshot.provenance import STALE_FIX

            raise FixtureStale("stale fixture: " + "; ".join(stale) + f"; {STALE_FIX}")
        result = score_case(case, fixture, self.graded.get(case.id), skip=self.skip)
        item.user_properties.extend(_properties(result))
        if not result.passed:
            raise CaseFailed(failure_message(result, self.lost(result)))

    # -- what a failing case lost -----------------------------------------------------

    def lost(self, result: CaseResult) -> str | None:
        """What the case lost against the baseline report, with the stage it was lost
        at, as ``ragsnap score --compare-to`` says it (``lost_text``); None without a
        baseline, or when the case is not in it or lost nothing named."""
        before = self.baseline_cases.get(result.case.id)
        if before is None or self.baseline is None:
            return None
        from .scoring.diff import case_diff, lost_text
        from .scoring.privacy import is_private
        from .scoring.report import case_entry

        assert self.settings is not None  # read at collection
        private = is_private(self.baseline)  # its coverage is hashed: compare ours hashed
        row = case_diff(before, case_entry(result), self.settings.tolerances, False, private)
        if row is None or not row.get("lost"):
            return None
        if not private:  # a private baseline names hashes, not chunks: no stages
            self._attribute(row)
        return lost_text(row)

    def _attribute(self, row: dict[str, Any]) -> None:
        """Attribute a diff case's losses to stages (``ragsnap score``'s code), the
        baseline fixtures found at the first loss of the session."""
        from .commands._forensics import attribute_with, baseline_fixtures

        assert self.baseline is not None
        with _stop_on_errors("reading the baseline fixtures"), _inside(self.root):
            if not self.baseline_searched:
                self.baseline_searched = True
                self.baseline_source, notes = baseline_fixtures(
                    self.fixtures, self.baseline, self.baseline_ref, self.baseline_folder
                )
                self.baseline_notes = [_our_options(note) for note in notes]
            if self.baseline_source is not None:
                attribute_with({"cases": [row]}, self.fixtures, self.baseline_source)

    # -- the terminal summary ---------------------------------------------------------

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        # snapshot's own report, but for its orphan line: deletions are said below
        lines = [line for line in self.snapshot_report if not line.startswith("orphaned")]
        if self.deleted:
            lines.append(f"{_fixtures(len(self.deleted))} unused, deleted: {_names(self.deleted)}")
        lines += self.label_lines
        if self.staleness is not None:
            lines += self.staleness.lines() + self.staleness.note_lines()
        lines += self.baseline_notes
        if self.unused:
            fix = (
                "run with --ragsnap-update and every case selected to delete them"
                if self.update
                else "run with --ragsnap-update to delete them"
            )
            lines.append(f"{_fixtures(len(self.unused))} unused: {_names(self.unused)}; {fix}")
        if lines:
            terminalreporter.section("ragsnap", sep="-")
            for line in lines:
                terminalreporter.write_line(line)


def _fixtures(count: int) -> str:
    return f"{count} ragsnap fixture{'' if count == 1 else 's'}"


def _names(names: Iterable[str], limit: int = 20) -> str:
    names = list(names)
    return ", ".join(names[:limit]) + (
        f" ... and {len(names) - limit} more" if len(names) > limit else ""
    )


def failure_message(result: CaseResult, lost: str | None = None) -> str:
    """``hit level <level>: <reasons>``, then what the case ``lost`` against the baseline
    when it lost something; a no-answer case has no hit level."""
    level = result.hit_level or "none (no-answer case)"
    return f"hit level {level}: {'; '.join(result.reasons)}" + (f"; {lost}" if lost else "")


def _properties(result: CaseResult) -> list[tuple[str, object]]:
    """What a JUnit XML report records of a scored case."""
    found: Mapping[str, float | None] = result.metrics or {}
    unchecked: list[tuple[str, object]] = []
    if result.not_applicable:  # the fixture lacks the part they read: neither passed nor failed
        unchecked.append(
            (
                "ragsnap.notApplicable",
                ", ".join(
                    f"{name} (fixture has no {part})" for name, part in result.not_applicable
                ),
            )
        )
    if result.skipped_expectations:  # scoring.skip
        unchecked.append(("ragsnap.skippedExpectations", ", ".join(result.skipped_expectations)))
    return [
        ("ragsnap.hitLevel", result.hit_level),
        ("ragsnap.firstExpectedRank", result.first_expected_rank),
        *((f"ragsnap.{name}", value) for name, value in found.items()),
        *unchecked,
    ]


class CasesFile(pytest.File):
    """The golden cases file as a collector of one ``CaseItem`` per case."""

    def __init__(self, *, run: RagsnapRun, **kwargs: Any):
        super().__init__(**kwargs)
        self.run = run

    def collect(self) -> Iterator[CaseItem]:
        assert self.run.case_set is not None  # read before this collector is made
        for case in self.run.case_set.cases:
            item = CaseItem.from_parent(self, name=case.id, case=case, run=self.run)
            mode = self.run.known_failures
            if case.known_failure and mode != "fail":
                item.add_marker(
                    pytest.mark.xfail(
                        reason=case.known_failure, raises=CaseFailed, strict=mode == "strict"
                    )
                )
            yield item


class CaseItem(pytest.Item):
    """One golden case: passes when its saved fixture satisfies it."""

    def __init__(self, *, case: GoldenCase, run: RagsnapRun, **kwargs: Any):
        super().__init__(**kwargs)
        self.case = case
        self.run = run

    def runtest(self) -> None:
        self.run.score(self)

    def repr_failure(
        self, excinfo: pytest.ExceptionInfo[BaseException], style: TracebackStyle | None = None
    ) -> str | TerminalRepr:
        if isinstance(excinfo.value, CaseFailed | FixtureMissing | FixtureStale):
            return str(excinfo.value)  # the message is the whole story: no traceback
        return super().repr_failure(excinfo, style)

    def reportinfo(self) -> tuple[Path, None, str]:
        return self.path, None, f"ragsnap case {self.name}"

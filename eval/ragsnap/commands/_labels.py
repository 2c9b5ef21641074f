"""``ragsnap check``'s label checks as ``score``, ``trial`` and ``pytest --ragsnap`` run
them before they score anything.

``check_labels_before_scoring`` runs every check of ``ragsnap.scoring.hygiene``
(``check_cases``) over the cases as the command already loaded them (the
validated cases and the file's parsed JSON: nothing is read twice) and the seed
corpus of ``kb.seedDocs``, read in one streamed pass that also yields what the
command reads the corpus for anyway: the fixture provenance check's seed state
(``_provenance.SeedState``, passed on to ``check_fixtures``) and each
document's index hash (the trial's corpus digest). Only the text of the
documents the cases judge is kept.

* An **error** is bad input: the command stops before it scores or writes
  anything (``InputError``, exit 2), naming the cases file, the case id, the
  field (a JSON pointer) and the fix; every other error is listed on stderr
  first, and the message says ``ragsnap check`` lists them all.
* A **warning** is printed once, on stderr (``warning: FILE at POINTER (case
  ID): problem; fix``), never per case; the report counts them.
* No seed corpus (``kb.seedDocs`` does not exist: a service's corpus, a
  hand-made fixture set): the checks that need none (secrets, paths,
  endpoints, no-answer coverage) still run, a path or endpoint in a span or
  keyword passes (its quote cannot be looked up), and a note on stderr says
  the targets and spans were not checked; the report says ``partial``.
* ``--no-label-check`` skips them all; the report says ``skipped`` (its JSON
  ``labelCheck`` and a line of its Markdown), so a reader knows the numbers
  rest on labels nobody checked.

The report's ``labelCheck``: ``{"status": "checked" | "partial" | "skipped",
"warnings": N}``.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ..config import Config
from ..errors import InputError
from ..kb.corpus import SeedDocument
from ..models import GoldenCase
from ..scoring.hygiene import (
    CorpusIndex,
    Finding,
    check_cases,
    check_no_answer_coverage,
    check_privacy,
    needed_documents,
    quote_candidates,
)
from ._provenance import SeedState, add_seed_document

__all__ = ["LabelCheck", "check_labels_before_scoring", "skipped_labels"]

#: error lines listed on stderr before the error is raised
_LISTED = 20
NO_LABEL_CHECK_FIX = (
    "`ragsnap check` lists every finding (--no-label-check skips the check, and the report says so)"
)


@dataclass(frozen=True)
class LabelCheck:
    """What the label check found and what its corpus pass read on the way."""

    status: Literal["checked", "partial", "skipped"]
    warnings: tuple[str, ...] = ()
    #: the seed state of kb.seedDocs (None: not read, or no corpus)
    seed: SeedState | None = None

    def to_json(self) -> dict[str, Any]:
        """The report's ``labelCheck``."""
        return {"status": self.status, "warnings": len(self.warnings)}

    @property
    def index_hashes(self) -> dict[str, str]:
        """Source -> index hash of every seed document (empty: the corpus was not read)."""
        return {} if self.seed is None else self.seed.index_hashes


def skipped_labels() -> LabelCheck:
    return LabelCheck("skipped")


def _case_of(pointer: str, cases: Sequence[GoldenCase]) -> str:
    """`` (case 'ID')`` for a pointer inside ``/cases/N``."""
    parts = pointer.split("/")
    if len(parts) > 2 and parts[1] == "cases" and parts[2].isdigit():
        index = int(parts[2])
        if index < len(cases):
            return f" (case {cases[index].id!r})"
    return ""


def _line(finding: Finding, file: str, cases: Sequence[GoldenCase]) -> str:
    return (
        f"{finding.severity}: {file} at {finding.pointer}{_case_of(finding.pointer, cases)}: "
        f"{finding.problem}; {finding.fix}"
    )


def check_labels_before_scoring(
    config: Config,
    cases_path: Path,
    cases: Sequence[GoldenCase],
    document: Any,
    *,
    skip: bool = False,
) -> LabelCheck:
    """Run the label checks (module docstring): raise ``InputError`` on an error, print
    the warnings and the partial note once on stderr, return what was read."""
    if skip:
        print(
            "note: --no-label-check: the golden cases' labels are not checked against the "
            "seed corpus (the report records it)",
            file=sys.stderr,
        )
        return skipped_labels()
    from ..kb.corpus import open_seed_docs

    folder = config.kb.seed_docs
    seed: SeedState | None = None
    status: Literal["checked", "partial"]
    if folder.exists():
        state = seed = SeedState({}, {}, {})
        settings = config.kb.chunking

        def tapped() -> Iterator[SeedDocument]:  # the provenance check's pass, on the way
            for doc in open_seed_docs(folder):
                add_seed_document(state, doc, settings)
                yield doc

        corpus = CorpusIndex.build(
            tapped(),
            settings,
            keep=needed_documents(cases),
            quotes=quote_candidates(document),
        )
        findings = check_cases(document, cases, corpus, config.no_answer_coverage)
        status = "checked"
    else:
        findings = [
            *check_privacy(document, trust_quotes=True),  # no corpus to find quotes in
            *check_no_answer_coverage(cases, config.no_answer_coverage),
        ]
        status = "partial"
    file = cases_path.as_posix()
    errors = [f for f in findings if f.severity == "error"]
    if errors:
        first = errors[0]
        for other in errors[1:_LISTED]:
            print(_line(other, file, cases), file=sys.stderr)
        if len(errors) > _LISTED:
            print(f"... and {len(errors) - _LISTED} more label error(s)", file=sys.stderr)
        more = f" ({len(errors) - 1} more label error(s) above)" if len(errors) > 1 else ""
        raise InputError(
            cases_path,
            f"{first.problem.rstrip('.')}{_case_of(first.pointer, cases)}{more}",
            f"{first.fix}; {NO_LABEL_CHECK_FIX}",
            first.pointer,
        )
    warnings = tuple(_line(f, file, cases) for f in findings)
    for line in warnings:
        print(line, file=sys.stderr)
    if status == "partial":
        print(
            f"note: {folder.as_posix()} not found: the golden cases' targets and spans are "
            "not checked against a corpus (secrets, paths and no-answer coverage are)",
            file=sys.stderr,
        )
    return LabelCheck(status, warnings, seed)

"""``ragsnap check``: label hygiene of the golden cases against the seed corpus.

Reads the cases file and the seed corpus (``--seed-docs``, else ``kb.seedDocs``),
cuts the documents into chunks with ``kb.chunking`` as ``ragsnap seed`` would, and
runs ``scoring.hygiene.check_cases``: judgment targets and expected sources, doc
ids and chunk ids exist, answer spans are verbatim in their target, expected
breadcrumbs prefix a document's breadcrumb, no secret, personal path or endpoint
is in a case, every language with answerable cases has a no-answer case (errors;
the last a warning with ``scoring.noAnswerCoverage: warning``). Needs no knowledge
base and no network. ``score``, ``trial`` and ``pytest --ragsnap`` run the same
checks before they score (``commands._labels``).

Then, when the fixtures folder (``--fixtures``) exists, every fixture is read as
``score`` reads it and its provenance checked (``ragsnap.snapshot.provenance``):
a fixture captured before a seed document or a lookup setting changed is stale.

Exit codes: 0 no errors (warnings are printed and do not fail); 1 stale fixtures;
2 an error (a broken label is bad input, as a malformed cases file is). The terminal
shows the counts first, then one line per finding (``error: FILE at POINTER:
problem; fix``), then the report path; ``--json-report`` writes the same
findings as JSON (``check-report.schema.json``), atomically.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from typing import Any

from ..config import load_config
from ..io.inputs import load_cases_document, load_fixtures
from ..io.jsonio import check_outputs, write_outputs
from ..io.reads import reads_of
from ..kb.corpus import open_seed_docs
from ..scoring.hygiene import CorpusIndex, check_cases, needed_documents, quote_candidates
from ..snapshot.provenance import Staleness
from ._provenance import check_fixtures

#: the exit code of a run with at least one error: bad input
EXIT_ERRORS = 2


def _count(n: int, one: str) -> str:
    return f"{n} {one}{'' if n == 1 else 's'}"


def run(args: argparse.Namespace) -> int:
    config = load_config(args.config, embedder=getattr(args, "embedder", None))
    folder = args.seed_docs if args.seed_docs is not None else config.kb.seed_docs
    case_set, document = load_cases_document(args.cases)
    settings = config.kb.chunking
    if args.json_report is not None:
        check_outputs(
            [("--json-report", args.json_report)],
            inputs=reads_of(args, config),
            allow_outside=args.allow_outside,
        )
    corpus = CorpusIndex.build(
        open_seed_docs(folder),  # streamed: only the judged documents' text is kept
        settings,
        keep=needed_documents(case_set.cases),
        quotes=quote_candidates(document),
    )
    findings = check_cases(document, case_set.cases, corpus, config.no_answer_coverage)
    staleness = Staleness()
    if args.fixtures.is_dir():
        seeded = dataclasses.replace(config, kb=dataclasses.replace(config.kb, seed_docs=folder))
        scored = {case.id for case in case_set.cases}
        staleness = check_fixtures(seeded, load_fixtures(args.fixtures), args.fixtures, scored)
    errors = sum(f.severity == "error" for f in findings)
    chunks = sum(corpus.chunk_counts.values())
    warnings = len(findings) - errors
    cases_name = args.cases.as_posix()
    if args.json_report is not None:
        report: dict[str, Any] = {
            "kind": "ragsnap-check-report",
            "schemaVersion": 1,
            "inputs": {
                "cases": cases_name,
                "seedDocs": folder.as_posix(),
                "chunking": {
                    "maxChars": settings.max_chars,
                    "overlapChars": settings.overlap_chars,
                    "headingLevel": settings.heading_level,
                },
            },
            "summary": {
                "cases": len(case_set.cases),
                "documents": len(corpus.sources),
                "chunks": chunks,
                "errors": errors,
                "warnings": warnings,
            },
            "findings": [{"file": cases_name, **f.to_json()} for f in findings],
            "provenance": {"fixtures": args.fixtures.as_posix(), **staleness.to_json()},
        }
        write_outputs({args.json_report: report})
    verdict = "labels OK" if not errors else "fix the errors below"
    lines = [
        f"check: {_count(len(case_set.cases), 'case')} against {folder.as_posix()} "
        f"({_count(len(corpus.sources), 'document')}, {_count(chunks, 'chunk')}): "
        f"{_count(errors, 'error')}, {_count(warnings, 'warning')}; {verdict}"
    ]
    lines += [f.line(cases_name) for f in findings]
    lines += staleness.lines()
    if args.json_report is not None:
        lines.append(f"Report: {args.json_report.as_posix()}")
    print("\n".join(lines))
    for note in staleness.note_lines():
        print(note, file=sys.stderr)
    if errors:
        return EXIT_ERRORS
    return 1 if staleness.stale else 0

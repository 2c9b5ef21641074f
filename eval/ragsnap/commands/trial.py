"""``ragsnap trial``: retrieval methods side by side on one corpus, pinned and gated.

The flow: resolve the methods (``--methods``, the plan, ``trial.methods`` or
every built-in the configuration can run), the cases of the split, and one
vector provider per distinct embedder; digest the inputs into a plan
(``--write-plan`` stops here, ``--plan`` must match it); take one embedded
knowledge base per vector provider from the store cache (``ragsnap.kb.store_cache``:
reused while the corpus, the embedder with its files and the segmenter stay the
same, else seeded from the configured corpus and kept; stderr says which),
or seed a temporary one (``--no-store-cache``), or use ``--kb``, asserting
the same corpus in each; run the warm-up pass
and the measured passes; compare their determinism projections; score the
first measured pass per method; apply the gates; pair the methods case by case
(``ragsnap.trial.significance``: against ``--reference`` or the first method, or
every pair with ``--all-pairs``); write the report (and the TREC runs) atomically.
Exit 1 when a gate that ran fails or the passes differ; a gate that could not run
fails nothing but leaves its method experimental (``ragsnap.trial.gates``).

``--backend http`` runs the trial over a live service instead (the ``http``
mapping of ragsnap.yaml), ``--backend python`` over Python retrievers: any
backend whose registry entry answers whole lookups and runs methods of its own
(``ragsnap.kb.backends.registry``; the trial never branches on a backend's
name). One method per entry of its methods (``http.methods``,
``python.methods``; or those ``--methods`` / ``trial.methods`` name), each
opened as its own lookup source (a service connection sending that method's
fields, ``ragsnap.kb.backends.http``; that method's retriever,
``ragsnap.kb.backends.python``). Nothing is seeded: the corpus is the
backend's own, so the plan records the corpus revision the first source
reports (a service's health answer, a retriever's fingerprint or version;
null, "not recorded", when it reports none) instead of a corpus digest, and
the report names the backend (and a service's base URL, no credentials).
With a depth, a lookup asks for ``topK = max(depth, the case's topK)``: the
deep ranking is the answer's evidence blocks as returned (chunks, in its
order), and the case's first topK blocks are scored as its evidence, so
nothing is asked twice and a lookup's latency is one call's. A service's
budgets per request (``http.budgets``, ``--max-records``, ``--max-bytes``:
QilbeeDB's trial budgets, ``ragsnap.kb.backends.http``) are recorded in the
plan (``backend.budgets``, so a plan pins them: ``--plan`` runs with the
plan's budgets, and a flag that differs is refused) and checked before anything
is sent: a depth or a case's topK over the record budget is a usage error,
exit 2, before the first lookup or the plan file. Latencies a
service reports inside its traces (``latencyMs``) are left out, so the
determinism check compares retrieval, not timing; the passes, latency
figures, gates, repetitions and seeds are the embedded trial's.

Before anything runs, the label checks of ``ragsnap check`` do
(``commands._labels``): an error exits 2, warnings are printed once, and
``--no-label-check`` skips them (the report's ``labelCheck`` says so); their
pass over the corpus gives the plan its corpus digest.

``--privacy`` (the default when ``trial.shareable: true``; ``--no-privacy``
turns it off) writes the report's privacy view (``ragsnap.trial.privacy``);
a diff is computed on the full report, then made private. The TREC runs hold
ids only and are written as they are; a plan file is written in full.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import re
import resource
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config import Config, load_config
from ..errors import BackendError, InputError, RagsnapError, UsageError
from ..io.inputs import load_cases_document
from ..io.jsonio import (
    check_outputs,
    parse_json,
    read_bytes,
    read_yaml,
    round_floats,
    write_outputs,
)
from ..io.progress import Progress
from ..io.reads import labelled, reads_of
from ..io.schema import validate
from ..models import JUDGMENT_TARGETS, GoldenCase
from ..settings import ALIAS_NOTE, Method
from ..trial.gates import GateResult, evaluate_gates, gates_from_json, gates_line
from ..trial.measure import MethodMeasurement, measure_method, trial_measures
from ..trial.plan import (
    Plan,
    canonical_sha256,
    check_plan_version,
    corpus_digest,
    judgments_digest,
)
from ..trial.privacy import private_trial, private_trial_diff
from ..trial.report import (
    build_trial_report,
    method_table,
    render_trial_markdown,
    views_legend,
)
from ..trial.runner import (
    Lookup,
    PassResult,
    first_difference,
    latency_summary,
    pass_order,
    pipeline_lookup,
    run_pass,
    run_resource_pass,
)
from ..trial.significance import significance_lines
from . import DEFAULT_TRIAL_DIFF_JSON, DEFAULT_TRIAL_DIFF_MARKDOWN, gc_paused, one_blas_thread
from ._kb import open_tokenizer
from ._labels import check_labels_before_scoring

if TYPE_CHECKING:
    from ..kb.backends.registry import Backend
    from ..kb.backends.sqlite import SqliteKnowledgeBase
    from ..kb.embedders import Embedder

#: the flags a plan fixes: giving one with --plan is a usage error
PLAN_FLAGS = ("methods", "depth", "split", "repetitions", "seed", "embedder")
DEFAULT_SEED = 20260920
#: previous runs' reports kept in trial-history/ (``--keep``)
DEFAULT_KEEP = 20
HISTORY_FOLDER = "trial-history"
#: a kept report's name: the previous run's UTC time and plan hash, then the report's name
_KEPT = re.compile(r"^(\d{4}-\d\d-\d\dT\d{6}\.\d{3}Z-(?:[0-9a-f]{16}|unknown))-")
#: the flags of the backends a trial can run over
BACKEND_FLAGS = ("--base-url", "--token-file", "--token-env", "--max-records", "--max-bytes")


@dataclasses.dataclass(frozen=True)
class _Side:
    """What a trial runs on (the embedded store or a service): the methods'
    definitions, the plan's inputs and backend, the report's service section, and
    ``run(cases, depth, repetitions, seed) -> (passes, the report's corpus, each method's
    resource-pass figures)``."""

    definitions: dict[str, dict[str, Any]]
    inputs: dict[str, str]
    backend: dict[str, Any] | None
    service: dict[str, Any] | None
    run: Callable[
        [Sequence[GoldenCase], int | None, int, int],
        tuple[list[PassResult], dict[str, Any], dict[str, Any]],
    ]
    #: input digest name -> what it digests, as a refused plan names it ("the frozen
    #: vectors file x.json")
    about: dict[str, str] = dataclasses.field(default_factory=dict)


def run(args: argparse.Namespace) -> int:
    """Run the command with BLAS on one thread (``one_blas_thread``)."""
    with one_blas_thread():
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    cpu_started = time.process_time()
    if args.plan is not None:
        given = [f"--{f}" for f in PLAN_FLAGS if getattr(args, f) is not None]
        if given:
            raise UsageError(
                f"{', '.join(given)} would change the pinned plan {args.plan}; drop "
                f"{'it' if len(given) == 1 else 'them'}, or write a new plan with --write-plan"
            )
        if args.write_plan is not None:
            raise UsageError(
                "--plan runs a plan and --write-plan writes one; pass only one of them"
            )
    pinned = _load_plan(args.plan) if args.plan is not None else None
    _resource_cgroup(args)  # a --cgroup that is not one: exit 2 before anything runs
    embedder = _pick(getattr(args, "embedder", None), pinned, "embedder", None)
    config = _with_aliases(load_config(args.config, embedder=embedder), args.aliases)
    from ..kb.backends.registry import DEFAULT_BACKEND, get_backend

    # --backend's choices (cli): the embedded store and the backends that answer whole
    # lookups with methods of their own
    backend = getattr(args, "backend", None) or DEFAULT_BACKEND
    entry = get_backend(backend)
    _check_backend_flags(args, entry)
    if pinned is not None and pinned.backend_name != backend:
        raise InputError(
            args.plan,
            f"was written for a trial over the {pinned.backend_name} backend, and this trial "
            f"runs over {backend}",
            f"run it with --backend {pinned.backend_name}, or write a plan for {backend} with "
            f"`ragsnap trial --backend {backend} --write-plan FILE`",
            "/plan/backend",
        )
    _planned_budgets(args, pinned)
    given_privacy = getattr(args, "privacy", None)
    privacy = config.trial.shareable if given_privacy is None else given_privacy
    names = _method_names(args, config, pinned, entry)
    depth = _pick(args.depth, pinned, "depth", config.trial.depth)
    split = _pick(args.split, pinned, "split", "all")
    repetitions = int(_pick(args.repetitions, pinned, "repetitions", 1))
    seed = int(_pick(args.seed, pinned, "seed", DEFAULT_SEED))
    if depth is not None and not 1 <= depth <= 10000:
        raise UsageError(f"--depth {depth}: use 1 to 10000")
    if not 1 <= repetitions <= 1000:
        raise UsageError(f"--repetitions {repetitions}: use 1 to 1000")

    case_set, cases_document = load_cases_document(args.cases)
    # ragsnap check's label checks (commands._labels); their corpus pass is the seeding's
    labels = check_labels_before_scoring(
        config, args.cases, case_set.cases, cases_document, skip=args.no_label_check
    )
    cases = [c for c in case_set.cases if split == "all" or c.split == split]
    if not cases:
        raise UsageError(
            f"{args.cases} has no case in split {split!r}; use --split all, or give the cases "
            "splits (`split: dev|test`)"
        )
    reference = getattr(args, "reference", None)
    if reference is not None and reference not in names:
        raise UsageError(
            f"--reference {reference} is not a method of this trial; use one of {', '.join(names)}"
        )
    if reference is not None and getattr(args, "all_pairs", False):
        raise UsageError("--all-pairs tests every pair, so it takes no --reference; drop one")
    gates_path = args.gates if args.gates is not None else config.trial.gates
    gates = _load_gates(gates_path) if gates_path is not None else None

    if args.compare_to is None and (args.diff_json_report or args.diff_markdown_report):
        raise UsageError(
            "--diff-json-report and --diff-markdown-report need --compare-to BASELINE; "
            "add it or drop them"
        )
    baseline = None
    if args.compare_to is not None:
        from ..io.inputs import load_trial_report

        baseline = load_trial_report(args.compare_to, "baseline")
    diff_json = args.diff_json_report or DEFAULT_TRIAL_DIFF_JSON
    diff_markdown = args.diff_markdown_report or DEFAULT_TRIAL_DIFF_MARKDOWN
    outputs = [args.json_report, args.markdown_report]
    if baseline is not None:
        outputs += [diff_json, diff_markdown]
    if args.html_report is not None:
        outputs.append(args.html_report)
    runs = _run_files(args.runs_dir, names) if args.runs_dir is not None else {}
    if args.write_plan is not None:
        outputs = [args.write_plan]
    check_outputs(
        labelled(args, [*outputs, *runs.values()]),
        inputs=reads_of(args, config),
        allow_outside=args.allow_outside,
    )

    with contextlib.ExitStack() as stack:
        side = (
            _whole_side(args, config, entry, names, case_set.sha256, stack)
            if entry.looks_up == "whole"
            else _embedded_side(args, config, names, case_set.sha256, labels.index_hashes)
        )
        inputs, about = _common_inputs(args, case_set, gates_path)
        plan = Plan(
            {**side.inputs, **inputs},
            [side.definitions[n] for n in names],
            depth,
            split,
            repetitions,
            seed,
            side.backend,
            embedder,
        )
        _within_budgets(side.backend, cases, depth)
        if pinned is not None:
            differences = pinned.differences(plan)
            if differences:
                raise InputError(
                    args.plan,
                    "does not match this run: "
                    + "; ".join(_explained(differences, {**side.about, **about})),
                    "run with the inputs the plan was written for, or write a new plan with "
                    "`ragsnap trial --write-plan FILE`",
                    "/plan",
                )
        if args.write_plan is not None:
            write_outputs({args.write_plan: plan.file_json()})
            print(
                f"Wrote {args.write_plan}: {len(names)} method(s), split {split}, "
                f"{len(cases)} case(s), plan {plan.sha256[:16]}. Run it with "
                f"`ragsnap trial{entry.flag} --plan {args.write_plan}`."
            )
            return 0
        passes, corpus, resources = side.run(cases, depth, repetitions, seed)

    scored = passes[1] if len(passes) > 1 else passes[0]
    measures = trial_measures(depth)
    measurements: dict[str, MethodMeasurement] = {
        name: measure_method(
            cases,
            scored.lookups[name],
            None if scored.rankings is None else scored.rankings[name],
            measures,
        )
        for name in names
    }
    determinism = _determinism(passes, args.check_determinism)
    latency = {
        name: latency_summary([v for p in passes[1:] for v in p.latencies[name]]) for name in names
    }
    gate_rows = _apply_gates(gates, gates_path, measurements, latency)
    run_files, run_texts = _runs(args.runs_dir, runs, cases, scored, names)
    report = build_trial_report(
        plan=plan.to_json(),
        plan_sha256=plan.sha256,
        corpus=corpus,
        service=side.service,
        cases={
            "total": len(case_set.cases),
            "run": len(cases),
            "answerable": sum(not c.no_answer for c in cases),
            "noAnswer": sum(c.no_answer for c in cases),
            "sha256": case_set.sha256,
        },
        definitions=side.definitions,
        measurements=measurements,
        gates=None if gate_rows is None else [g.to_json() for g in gate_rows],
        determinism=determinism,
        runs=run_files,
        timing={
            "warmup": True,
            "repetitions": repetitions,
            "latency": latency,
            "resources": resources,
            "wallSeconds": round(time.perf_counter() - started, 3),
            "cpuSeconds": round(time.process_time() - cpu_started, 3),
            "peakRssMiB": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            "cgroup": _cgroup(),
        },
        significance=config.significance,
        reference=reference,
        all_pairs=getattr(args, "all_pairs", False),
    )
    report["labelCheck"] = labels.to_json()
    full = report
    if privacy:
        report = private_trial(full)
    validate(
        report,
        "private-trial-report" if privacy else "trial-report",
        args.json_report,
        "trial report",
    )
    written: dict[Path, Any] = {
        args.json_report: report,
        args.markdown_report: render_trial_markdown(report),
        **run_texts,
    }
    diff = None
    if baseline is not None:
        from ..trial.compare import diff_trials, render_trial_diff_markdown

        # the report as it reads back from disk (floats rounded like every output)
        diff = diff_trials(
            baseline,
            round_floats(full),
            config.tolerances,
            args.compare_to.as_posix(),
            config.significance,
        )
        if privacy or baseline.get("privacy") is True:
            diff = private_trial_diff(diff)
        written[diff_json] = diff
        written[diff_markdown] = render_trial_diff_markdown(diff)
    if args.html_report is not None:
        from ..trial.html import render_trial_html

        written[args.html_report] = render_trial_html(round_floats(report), diff)
    kept = _keep_previous(args, written)
    write_outputs(written)
    print(_summary(report, args, gate_rows, diff))
    if kept is not None:
        print(f"Previous report: {kept.as_posix()} (trial-history keeps {_keep(args)} run(s))")
    failed_gates = gate_rows is not None and any(g.ran and not g.passed for g in gate_rows)
    regressed = diff is not None and diff["regressed"]
    return 1 if failed_gates or determinism["identical"] is False or regressed else 0


def _keep(args: argparse.Namespace) -> int:
    keep = getattr(args, "keep", None)
    return DEFAULT_KEEP if keep is None else int(keep)


def _keep_previous(args: argparse.Namespace, written: dict[Path, Any]) -> Path | None:
    """Before a run's reports replace the previous run's: copy those (JSON, Markdown,
    HTML) into ``trial-history/`` beside the JSON report, named by the previous run's
    UTC time and plan hash, and keep the newest ``--keep`` runs there. Returns the
    previous JSON report's kept copy (None when there was none or ``--keep 0``)."""
    keep = _keep(args)
    previous: Path = args.json_report
    if keep == 0 or not previous.is_file():
        return None
    try:
        plan = json.loads(previous.read_bytes()).get("planSha256")
    except (OSError, ValueError, AttributeError):
        plan = None
    plan = plan[:16] if isinstance(plan, str) and re.fullmatch(r"[0-9a-f]{64}", plan) else None
    when = datetime.fromtimestamp(previous.stat().st_mtime, timezone.utc)
    run = when.strftime("%Y-%m-%dT%H%M%S") + f".{when.microsecond // 1000:03d}Z-{plan or 'unknown'}"
    folder = previous.parent / HISTORY_FOLDER
    reports = [args.json_report, args.markdown_report, args.html_report]
    copies = {
        folder / f"{run}-{path.name}": path.read_bytes()
        for path in reports
        if path is not None and path in written and path.is_file()
    }
    write_outputs(copies)
    runs = sorted(
        {m.group(1) for p in folder.iterdir() if (m := _KEPT.match(p.name)) and p.is_file()}
    )
    for old in runs[: max(0, len(runs) - keep)]:
        for path in folder.glob(f"{old}-*"):
            path.unlink()
    return folder / f"{run}-{previous.name}"


def _check_backend_flags(args: argparse.Namespace, entry: Backend) -> None:
    """The flags of one backend are refused with another (``Backend.check_options``);
    ``--kb``, ``--aliases`` and ``--embedder`` belong to the embedded trial."""
    from ._kb import options_of

    if entry.looks_up == "whole":
        for flag, value in (
            ("--kb", args.kb),
            ("--aliases", args.aliases),
            ("--embedder", getattr(args, "embedder", None)),
        ):
            if value is not None:
                raise UsageError(
                    f"{flag} is for the embedded trial; {entry.answered_by} runs its own "
                    f"lookup: drop "
                    f"{flag}, or drop --backend {entry.name}"
                )
    entry.check_options(options_of(args), BACKEND_FLAGS)


def _embedded_side(
    args: argparse.Namespace,
    config: Config,
    names: Sequence[str],
    cases_sha256: str,
    known_hashes: dict[str, str] | None = None,
) -> _Side:
    """The embedded trial: a store per vector provider (the store cache's, a temporary
    one, or ``--kb``), seeded from the configured corpus when the passes run unless
    reused; the plan's inputs with what each digests (``_Side.about``).
    ``known_hashes``: the corpus's index hashes when the label check's pass computed
    them (not computed again)."""
    from ..kb.corpus import open_seed_docs
    from ..kb.embedders import embedder_files, file_sha256, make_embedder, vectors_identity
    from ..kb.pipeline import describe_method
    from ..kb.seeding import index_hashes

    known = {m.name for m in config.lookup.methods}
    if "alias" in names and "alias" not in known:
        raise UsageError(
            "the method `alias` reads the alias provider's term groups, and none are given: "
            "pass --aliases FILE (YAML term groups, e.g. cases/aliases.yaml) or set "
            "trial.aliases in ragsnap.yaml, or drop alias from the methods"
        )
    methods = {name: config.lookup.method_spec(name) for name in names}
    tokenizer = open_tokenizer(config)
    providers: dict[str, dict[str, Any]] = {}  # embedder spec key -> spec
    provider_of: dict[str, str] = {}
    for name, spec in methods.items():
        embedder_spec = spec.embedder if spec.embedder is not None else config.kb.embedder
        key = json.dumps(embedder_spec, sort_keys=True)
        providers.setdefault(key, embedder_spec)
        provider_of[name] = key
    if args.kb is not None and len(providers) > 1:
        own = [n for n, s in methods.items() if s.embedder is not None]
        raise UsageError(
            f"--kb holds one vector space, and {', '.join(own)} bring(s) other vectors; drop "
            "--kb (the trial seeds a store per vector provider) or those methods"
        )
    embedders: dict[str, Embedder] = {
        key: make_embedder(spec, config.kb.base) for key, spec in providers.items()
    }

    docs = None
    if args.kb is not None:
        from ..kb.backends.sqlite import SqliteKnowledgeBase

        with SqliteKnowledgeBase(args.kb, create=False) as kb:
            hashes = {s: d.index_hash for s, d in sorted(kb.documents().items())}
    else:
        docs = open_seed_docs(config.kb.seed_docs)
        hashes = known_hashes or index_hashes(docs, config.kb.chunking)
    definitions: dict[str, dict[str, Any]] = {
        name: {
            "name": name,
            "retrievers": list(spec.retrievers),
            "embedder": embedders[provider_of[name]].fingerprint.to_json(),
            "settings": describe_method(config.lookup, spec, tokenizer.name, None),
            "note": spec.note,
        }
        for name, spec in methods.items()
    }
    identities = {key: vectors_identity(embedder) for key, embedder in embedders.items()}
    inputs = {
        "corpus": corpus_digest(hashes),
        "cases": cases_sha256,
        # the providers' fingerprints and the content of the files they read (streamed)
        "vectors": canonical_sha256(
            sorted({json.dumps(identities[provider_of[n]], sort_keys=True) for n in names})
        ),
        "providers": canonical_sha256(
            sorted(json.dumps(d["embedder"], sort_keys=True) for d in definitions.values())
        ),
    }
    used = {provider_of[n] for n in names}
    files = [f for key in used for f in embedder_files(embedders[key])]
    about = {
        "corpus": f"the corpus of {args.kb if args.kb is not None else config.kb.seed_docs}",
        "providers": "the embedders' fingerprints ("
        + ", ".join(sorted({str(embedders[key].fingerprint) for key in used}))
        + ")",
        "vectors": "the vectors ("
        + "; ".join(
            [f"file {f}" for f in sorted({str(f) for f in files})]
            + [f"embedder {e}" for e in sorted({str(embedders[k].fingerprint) for k in used})]
        )
        + ")",
    }
    aliases = sorted(
        {
            str(f)
            for key in used
            if embedders[key].fingerprint.kind == "alias"
            for f in embedder_files(embedders[key])
        }
    )
    if aliases:
        inputs["aliases"] = canonical_sha256([file_sha256(Path(f)) for f in aliases])
        about["aliases"] = "the alias file " + ", ".join(aliases)

    def run(
        cases: Sequence[GoldenCase], depth: int | None, repetitions: int, seed: int
    ) -> tuple[list[PassResult], dict[str, Any], dict[str, Any]]:
        from ..kb.pipeline import Pipeline

        with tempfile.TemporaryDirectory(prefix="ragsnap-trial-") as work:
            stores = _open_stores(
                args, config, embedders, tokenizer, docs, hashes, Path(work), identities
            )
            try:
                lookups = {
                    name: pipeline_lookup(
                        Pipeline(
                            stores[provider_of[name]],
                            embedders[provider_of[name]],
                            tokenizer,
                            config.lookup,
                        ),
                        spec,
                    )
                    for name, spec in methods.items()
                }
                passes, resources = _run_passes(
                    lookups, cases, depth, repetitions, seed, _resource_cgroup(args)
                )
                chunks = next(iter(stores.values())).count()
            finally:
                for store in stores.values():
                    store.close()
        corpus = {"documents": len(hashes), "chunks": chunks, "sha256": inputs["corpus"]}
        return passes, corpus, resources

    return _Side(definitions, inputs, None, None, run, about)


def _whole_side(
    args: argparse.Namespace,
    config: Config,
    entry: Backend,
    names: Sequence[str],
    cases_sha256: str,
    stack: contextlib.ExitStack,
) -> _Side:
    """The trial over a backend that answers whole lookups: one lookup source per
    method (a service connection, a retriever), opened with that method; nothing
    seeded."""
    from ._kb import options_of

    assert entry.open_source is not None
    options = options_of(args)
    sources: dict[str, Any] = {
        name: stack.enter_context(
            entry.open_source(config, dataclasses.replace(options, method=name))
        )[0]
        for name in names
    }
    first = sources[names[0]]
    revision = first.corpus()[1] if callable(getattr(first, "corpus", None)) else None
    definitions = {name: entry.definition(config, name) for name in names}
    service: dict[str, Any] = {"backend": entry.name}
    base_url = getattr(first, "base_url", None)
    if isinstance(base_url, str):
        service["baseUrl"] = _shown_url(base_url)
    service["corpusRevision"] = revision
    backend: dict[str, Any] = {"name": entry.name, "corpusRevision": revision}
    budgets = getattr(first, "budgets", None)  # a service's budgets per request
    if isinstance(budgets, dict):
        backend["budgets"] = dict(budgets)

    def run(
        cases: Sequence[GoldenCase], depth: int | None, repetitions: int, seed: int
    ) -> tuple[list[PassResult], dict[str, Any], dict[str, Any]]:
        lookups = {name: _whole_lookup(name, source) for name, source in sources.items()}
        passes, resources = _run_passes(
            lookups, cases, depth, repetitions, seed, _resource_cgroup(args)
        )
        return passes, {"documents": None, "chunks": None, "sha256": None}, resources

    return _Side(definitions, {"cases": cases_sha256}, backend, service, run)


def _planned_budgets(args: argparse.Namespace, pinned: Plan | None) -> None:
    """A pinned plan's budgets per request, where ``--max-records`` / ``--max-bytes``
    are not given: the plan's beat ``http.budgets`` (as its depth beats
    ``trial.depth``); a flag that differs from the plan is refused with the plan."""
    planned = (pinned.backend or {}).get("budgets") if pinned is not None else None
    if not planned:
        return
    if args.max_records is None:
        args.max_records = int(planned["records"])
    if args.max_bytes is None:
        args.max_bytes = int(planned["bytes"])


def _within_budgets(
    backend: dict[str, Any] | None, cases: Sequence[GoldenCase], depth: int | None
) -> None:
    """Refuse, before any lookup is sent (and before a plan is written), a trial whose
    lookups would ask a service for more records than its budget per request
    (``plan.backend.budgets``): the depth, or a case's topK."""
    budgets = (backend or {}).get("budgets")
    if not budgets:
        return
    records = int(budgets["records"])
    fix = "or raise the budget (--max-records, http.budgets.records in ragsnap.yaml)"
    if depth is not None and depth > records:
        raise UsageError(
            f"--depth {depth} asks the service for {depth} records per lookup, more than "
            f"its budget per request ({records} records); lower --depth, {fix}"
        )
    wide = max(cases, key=lambda c: c.top_k)
    if wide.top_k > records:
        raise UsageError(
            f"case {wide.id} asks the service for topK {wide.top_k} records, more than its "
            f"budget per request ({records} records); lower the case's topK, {fix}"
        )


def _whole_lookup(name: str, source: Any) -> Lookup:
    """``name``'s lookups on ``source``: one call each (module docstring)."""
    from ..kb.backends import ChunkRef
    from ..snapshot.capture import without_latencies

    def lookup(
        case: GoldenCase, depth: int | None
    ) -> tuple[dict[str, Any], Sequence[ChunkRef] | None]:
        top_k = case.top_k if depth is None else max(depth, case.top_k)
        try:
            answer = source.lookup(case.query, kb_scope=case.kb_scope, top_k=top_k)
        except BackendError as exc:
            raise BackendError(f"case {case.id}, method {name}: {exc}") from None
        result: dict[str, Any] = without_latencies({"lookupResult": answer})["lookupResult"]
        if depth is None:
            return result, None
        blocks = result["evidenceBlocks"]
        ranking = [ChunkRef(b["chunkId"], b.get("docId"), b["source"]) for b in blocks]
        return {**result, "evidenceBlocks": blocks[: case.top_k]}, ranking

    return lookup


def _shown_url(url: str) -> str:
    """``url`` as a report may show it: no user, password, query or fragment."""
    parts = urllib.parse.urlsplit(url)
    return urllib.parse.urlunsplit(
        (parts.scheme, parts.netloc.rpartition("@")[2], parts.path, "", "")
    )


def _with_aliases(config: Config, aliases: Path | None) -> Config:
    """``config`` with the ``alias`` method over ``aliases`` (``--aliases``)."""
    if aliases is None:
        return config
    alias = Method(
        "alias",
        ("vector",),
        embedder={"kind": "alias", "path": str(aliases.absolute())},
        note=ALIAS_NOTE,
    )
    methods = (*(m for m in config.lookup.methods if m.name != "alias"), alias)
    return dataclasses.replace(
        config,
        lookup=dataclasses.replace(config.lookup, methods=methods),
        trial=dataclasses.replace(config.trial, aliases=aliases),
    )


def _pick(given: Any, pinned: Plan | None, field: str, default: Any) -> Any:
    """The flag when given, else the pinned plan's value, else ``default``."""
    if given is not None:
        return given
    return getattr(pinned, field) if pinned is not None else default


def _method_names(
    args: argparse.Namespace, config: Config, pinned: Plan | None, entry: Backend
) -> list[str]:
    whole = entry.looks_up == "whole"
    if args.methods is not None:
        names = [n.strip() for n in args.methods.split(",") if n.strip()]
        if not names:
            raise UsageError("--methods is empty; name methods such as lexical,hybrid")
    elif pinned is not None:
        names = pinned.method_names
    elif config.trial.methods is not None:
        names = list(config.trial.methods)
    elif whole:
        names = list(entry.method_names(config))
        if not names:
            key = entry.methods_key
            raise InputError(
                config.source,
                f"maps no {key}, so a trial over {entry.answered_by} has no methods to compare",
                f"add `{key}: {entry.methods_example}",
                "/" + key.replace(".", "/"),
            )
    else:
        known = {m.name for m in config.lookup.methods}
        names = [n for n in ("lexical", "vector", "hybrid", "hybrid+rerank", "alias") if n in known]
    duplicated = sorted({n for n in names if names.count(n) > 1})
    if duplicated:
        raise UsageError(f"--methods names {', '.join(duplicated)} twice; list each once")
    if whole:
        _check_whole_methods(args, config, pinned, entry, names)
    return names


def _check_whole_methods(
    args: argparse.Namespace,
    config: Config,
    pinned: Plan | None,
    entry: Backend,
    names: Sequence[str],
) -> None:
    """Every method of a trial over a backend that answers whole lookups is one of its
    configured methods (``http.methods``); the message names where the unknown one came
    from."""
    key = entry.methods_key
    mapped = list(entry.method_names(config))
    unknown = [n for n in names if n not in mapped]
    if not unknown:
        return
    listed = ", ".join(unknown)
    known = f"use one of {', '.join(mapped)}" if mapped else f"{key} maps none"
    if args.methods is not None:
        raise UsageError(
            f"--methods names {listed}, which {key} in {config.source} does not map; "
            f"{known}, or add {'it' if len(unknown) == 1 else 'them'} there"
        )
    if pinned is not None:
        raise InputError(
            args.plan,
            f"names method(s) {listed}, which {key} in {config.source} does not map",
            f"add them to {key}, or write a new plan with --write-plan",
            "/plan/methods",
        )
    index = list(config.trial.methods or ()).index(unknown[0])
    raise InputError(
        config.source,
        f"trial.methods names {listed}, which {key} does not map (a trial over "
        f"{entry.answered_by} compares the methods {key} maps)",
        f"{known}, or add {'it' if len(unknown) == 1 else 'them'} to {key}",
        f"/trial/methods/{index}",
    )


def _common_inputs(
    args: argparse.Namespace, case_set: Any, gates_path: Path | None
) -> tuple[dict[str, str], dict[str, str]]:
    """The input digests of every trial (the judgments; the gates when it has some) and
    what each digests, for a refused plan's message."""
    from ..kb.embedders import file_sha256

    inputs = {"judgments": judgments_digest({c.id: c.judgments for c in case_set.cases})}
    about = {
        "cases": f"the cases file {args.cases}",
        "judgments": f"the judgments in {args.cases}",
    }
    if gates_path is not None:
        inputs["gates"] = file_sha256(gates_path)
        about["gates"] = f"the gates file {gates_path}"
    return inputs, about


def _explained(differences: Sequence[str], about: dict[str, str]) -> list[str]:
    """``Plan.differences`` with each differing input named (its file when it is one)
    instead of its two digests."""
    out = []
    for difference in differences:
        pointer, _, change = difference.partition(": ")
        key = pointer.removeprefix("/inputs/")
        if not pointer.startswith("/inputs/"):
            out.append(difference)
        elif change.startswith("None -> "):
            out.append(f"{pointer}: the plan has no {key}, and this run has {about.get(key, key)}")
        elif change.endswith(" -> None"):
            out.append(f"{pointer}: the plan has {key}, and this run has none")
        else:
            out.append(f"{pointer}: {about.get(key, key)} changed since the plan was written")
    return out


def _load_plan(path: Path) -> Plan:
    raw = read_bytes(path, "pass --plan with a plan written by `ragsnap trial --write-plan`")
    data = parse_json(raw, path)
    check_plan_version(data, path)
    validate(data, "trial-plan", path, "trial plan")
    return Plan.from_file_json(data, path)


def _load_gates(path: Path) -> list[Any]:
    data = read_yaml(path, "pass --gates with an existing gates file")
    validate(data, "gates", path, "gates file")
    return gates_from_json(data, path)


def _run_files(folder: Path, names: Sequence[str]) -> dict[str, Path]:
    files = {name: folder / f"{name}.trec" for name in names}
    files["qrels"] = folder / "qrels.txt"
    return files


def _open_stores(
    args: argparse.Namespace,
    config: Config,
    embedders: dict[str, Embedder],
    tokenizer: Any,
    docs: Any,
    hashes: dict[str, str],
    work: Path,
    identities: dict[str, dict[str, Any]],
) -> dict[str, SqliteKnowledgeBase]:
    """One store per vector provider: ``--kb``; else the store cache's (reused, or
    seeded now and kept: ``ragsnap.kb.store_cache``); else (``--no-store-cache``,
    ``trial.storeCache: false``) seeded now into ``work``."""
    from ..kb.backends.sqlite import SqliteKnowledgeBase
    from ..kb.seeding import check_compatible, seed

    def seed_into(store: SqliteKnowledgeBase, embedder: Embedder) -> None:
        progress = Progress(len(hashes), f"trial: seed ({embedder.fingerprint.kind})", "documents")
        seed(
            store,
            docs,
            embedder,
            tokenizer,
            config.kb.chunking,
            hashes=hashes,
            where=f"a trial store ({embedder.fingerprint.kind})",
            on_upload=_advancer(progress),
        )
        progress.close()
        stored = {s: d.index_hash for s, d in store.documents().items()}
        if stored != hashes:
            raise AssertionError("a trial store holds another corpus than the plan's")

    cache = config.trial.store_cache if getattr(args, "store_cache", True) else None
    stores: dict[str, SqliteKnowledgeBase] = {}
    try:
        for number, (key, embedder) in enumerate(embedders.items()):
            if args.kb is None and cache is not None:
                stores[key] = _cached_store(
                    cache, config, embedder, tokenizer, hashes, identities[key], seed_into
                )
                continue
            if args.kb is not None:
                store = SqliteKnowledgeBase(args.kb, create=False, kernel="compiled")
                stores[key] = store
                check_compatible(
                    store.read_meta(),
                    embedder.fingerprint,
                    tokenizer.name,
                    str(args.kb),
                    fix="configure the embedder and segmenter it was built with, or drop --kb",
                )
                continue
            store = SqliteKnowledgeBase(work / f"kb-{number}.sqlite", kernel="compiled")
            stores[key] = store
            print(
                f"trial: seeding a temporary store ({embedder.fingerprint}), deleted after "
                "(the store cache is off; `ragsnap seed` then `trial --kb FILE` also avoids "
                "seeding)",
                file=sys.stderr,
            )
            seed_into(store, embedder)
        counts = {store.count() for store in stores.values()}
        if len(counts) != 1:
            raise AssertionError(f"the trial's stores hold different chunk counts: {counts}")
    except BaseException:
        for store in stores.values():
            store.close()
        raise
    return stores


def _cached_store(
    cache: Path,
    config: Config,
    embedder: Embedder,
    tokenizer: Any,
    hashes: dict[str, str],
    identity: dict[str, Any],
    seed_into: Callable[[SqliteKnowledgeBase, Embedder], None],
) -> SqliteKnowledgeBase:
    """The store cache's store of this corpus, embedder and tokenizer (reused, or seeded
    now), said on stderr."""
    from .. import __version__
    from ..kb.seeding import check_compatible
    from ..kb.store_cache import open_cached_store, store_key

    kb = config.kb
    key = store_key(
        corpus_digest(hashes),
        identity,
        {
            "name": tokenizer.name,
            "segmenter": kb.segmenter,
            "stemmer": kb.stemmer,
            "stopWords": kb.stop_words,
        },
        __version__,
    )

    def usable(store: SqliteKnowledgeBase) -> bool:
        stored = {s: d.index_hash for s, d in store.documents().items()}
        try:
            check_compatible(store.read_meta(), embedder.fingerprint, tokenizer.name, "", fix="")
        except RagsnapError:
            return False
        return stored == hashes

    where = (cache / key).as_posix()

    def seed_and_say(store: SqliteKnowledgeBase) -> None:
        print(
            f"trial: seeding the store of {embedder.fingerprint} into {where}; later trials "
            "of this corpus and embedder reuse it (--no-store-cache: don't; delete the folder "
            "to clear it)",
            file=sys.stderr,
        )
        seed_into(store, embedder)

    store, reused = open_cached_store(cache, key, seed_and_say, usable, kernel="compiled")
    if reused:
        print(
            f"trial: reused the store of {embedder.fingerprint} in {where} (same corpus and "
            "embedder)",
            file=sys.stderr,
        )
    return store


def _advancer(progress: Progress) -> Any:
    def advance(_upload: Any) -> None:
        progress.advance()

    return advance


def _run_passes(
    lookups: dict[str, Lookup],
    cases: Sequence[GoldenCase],
    depth: int | None,
    repetitions: int,
    seed: int,
    cgroup: tuple[Path, str] | None,
) -> tuple[list[PassResult], dict[str, Any]]:
    """The warm-up, the measured passes, then the resource pass (``trial.runner``)."""
    by_id = {c.id: c for c in cases}
    ids = [c.id for c in cases]
    total = (repetitions + 2) * len(lookups) * len(ids)
    progress = Progress(total, "trial", "lookups")
    passes = []
    # the collector paused through the passes: lookups leave no reference cycles
    # (tested), and with it on, each lookup of a pass paid for scans of the results
    # every earlier one keeps (up to a sixth of a lexical lookup's p95)
    with gc_paused():
        for number in range(repetitions + 1):
            order = pass_order(list(lookups), ids, seed, number)
            passes.append(run_pass(lookups, by_id, order, depth, progress.advance))
        order = pass_order(list(lookups), ids, seed, repetitions + 1)
        resources = run_resource_pass(lookups, by_id, order, depth, cgroup, progress.advance)
    progress.close()
    return passes, resources


def _determinism(passes: Sequence[PassResult], checked: bool) -> dict[str, Any]:
    projection = passes[0].projection_sha256
    if not checked:
        return {
            "checked": False,
            "passes": len(passes),
            "identical": None,
            "firstDifference": None,
            "projectionSha256": projection,
        }
    difference = None
    for other in passes[1:]:
        difference = first_difference(passes[0], other)
        if difference is not None:
            break
    return {
        "checked": True,
        "passes": len(passes),
        "identical": difference is None,
        "firstDifference": difference,
        "projectionSha256": projection,
    }


def _apply_gates(
    gates: list[Any] | None,
    path: Path | None,
    measurements: dict[str, MethodMeasurement],
    latency: dict[str, Any],
) -> list[GateResult] | None:
    if gates is None or path is None:
        return None
    return evaluate_gates(gates, measurements, latency, path)


def _runs(
    folder: Path | None,
    files: dict[str, Path],
    cases: Sequence[GoldenCase],
    scored: PassResult,
    names: Sequence[str],
) -> tuple[dict[str, Any] | None, dict[Path, str]]:
    """The TREC runs (the deep ranking, else the evidence) and the qrels, as texts."""
    from ..ir.trec import format_qrels, format_run
    from ..kb.backends import ChunkRef

    if folder is None:
        return None, {}
    texts: dict[Path, str] = {}
    for name in names:
        ranked: dict[str, list[str]] = {}
        for case in cases:
            field = JUDGMENT_TARGETS[case.judgment_kind or "chunkId"]
            if scored.rankings is not None:
                items: Sequence[Any] = scored.rankings[name][case.id]
            else:
                items = [
                    ChunkRef(b["chunkId"], b.get("docId"), b["source"])
                    for b in scored.lookups[name][case.id]["evidenceBlocks"]
                ]
            ranked[case.id] = [t for ref in items if (t := getattr(ref, field)) is not None]
        texts[files[name]] = format_run(ranked, tag=_tag(name))
    judged = {c.id: {j.target: j.grade for j in c.judgments} for c in cases if c.judgments}
    texts[files["qrels"]] = format_qrels(judged)
    listed = [files[n].as_posix() for n in names]
    return (
        {
            "files": listed,
            "qrels": files["qrels"].as_posix(),
            "source": "ranking" if scored.rankings is not None else "evidence",
        },
        texts,
    )


def _tag(name: str) -> str:
    """A TREC run tag: the method name without characters TREC tools split on."""
    return "".join(ch if ch.isalnum() or ch in "._-+" else "_" for ch in name)


def _resource_cgroup(args: argparse.Namespace) -> tuple[Path, str] | None:
    """The cgroup the resource pass reads: ``--cgroup DIR`` (checked), else ragsnap's
    own when it is a cgroup v2 directory, else none (``ragsnap.trial.resources``)."""
    from ..trial.resources import OWN_CGROUP, check_cgroup, read_cgroup

    given: Path | None = getattr(args, "cgroup", None)
    if given is not None:
        return check_cgroup(given), "given"
    return (OWN_CGROUP, "own") if read_cgroup(OWN_CGROUP) is not None else None


def _cgroup() -> dict[str, Any] | None:
    """Read-only cgroup v2 figures of this container, when they are there."""
    root = Path("/sys/fs/cgroup")
    out: dict[str, Any] = {}
    for name in ("memory.peak", "memory.current"):
        try:
            out[name] = int((root / name).read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue
    try:
        for line in (root / "cpu.stat").read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == "usage_usec":
                out["cpu.usage_usec"] = int(value)
    except (OSError, ValueError):
        pass
    return out or None


def _summary(
    report: dict[str, Any],
    args: argparse.Namespace,
    gates: list[GateResult] | None,
    diff: dict[str, Any] | None,
) -> str:
    plan = report["plan"]
    cases = report["cases"]
    det = report["determinism"]
    lines = [
        f"trial: {len(report['methods'])} method(s) x {cases['run']} case(s) "
        f"(split {plan['split']}, depth {plan['depth'] or 'evidence'}, "
        f"{plan['repetitions']} repetition(s)); plan {report['planSha256'][:16]}",
        method_table(report, fmt="simple"),
        *filter(None, [views_legend(report)]),
        *significance_lines(report.get("significance")),
    ]
    service = report.get("service")
    if service is not None:
        revision = service["corpusRevision"]
        at = f" at {service['baseUrl']}" if "baseUrl" in service else ""
        lines.insert(
            1,
            f"Service: {service['backend']}{at}, corpus revision "
            f"{'not recorded' if revision is None else revision}",
        )
    if det["checked"]:
        lines.append(
            f"Determinism: {det['passes']} passes identical"
            if det["identical"]
            else f"Determinism: passes DIFFER: {det['firstDifference']}"
        )
    if gates is not None:
        # only gates that ran count; one that could not run keeps its method experimental
        lines.append(f"Gates: {gates_line(report['gates'])}")
        failed = [g for g in gates if g.ran and not g.passed]
        lines += [f"  {g.method}: {g.gate}: {g.message}" for g in failed]
        skipped = [f"  not run: {g.method}: {g.gate}: {g.message}" for g in gates if not g.ran]
        lines += skipped[:10]
        if len(skipped) > 10:
            lines.append(f"  ... and {len(skipped) - 10} more not run (see the Markdown report)")
    runs = report["runs"]
    if runs is not None:
        lines.append(f"Runs: {', '.join(runs['files'])}; qrels {runs['qrels']}")
    reports = [args.json_report, args.markdown_report]
    if diff is not None:
        from ..trial.compare import trial_diff_lines

        lines += trial_diff_lines(diff, 20)
        reports += [
            args.diff_json_report or DEFAULT_TRIAL_DIFF_JSON,
            args.diff_markdown_report or DEFAULT_TRIAL_DIFF_MARKDOWN,
        ]
    if args.html_report is not None:
        reports.append(args.html_report)
    lines.append("Reports: " + ", ".join(p.as_posix() for p in reports))
    return "\n".join(lines)

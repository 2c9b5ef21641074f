#!/usr/bin/env python3
"""Embedders side by side: retrieval quality, embedding throughput on 2 cores, and the
hybrid fusion weight of each, chosen on development queries only.

For every embedder (``hashing``, the default; ``minilm``, extra ``embed``;
``wordllama``, extra ``wordllama``):

1. Cranfield (``../shared/data/cranfield``, never downloaded): ``ragsnap import
   smart --dev-fraction 0.3`` as ``quality_cranfield.py`` does, then one ``ragsnap
   trial --depth 1000`` with ``kb.embedder: {kind: NAME}`` (the default analyzer,
   stemmer english) over ``lexical, vector, hybrid, hybrid+rerank`` and a sweep of
   ``hybrid-vNN`` methods: lexical + vector, convex fusion with vector weight
   NN/100, no reranker. ``ragsnap metrics`` scores every run on the dev and the
   test split (MAP, nDCG@10). The sweep's best dev MAP is the weight to pick;
   its test numbers are reported, never used to choose.
2. The example set (``cases/golden-cases.json`` with ``ragsnap.yaml``) and
   GoodBuddy's bilingual set (``cases/goodbuddy``), ``ragsnap trial --embedder
   NAME``: MAP and nDCG@10 per method from the JSON report, by split and by
   language (GoodBuddy's ``zh`` cases are Chinese).
3. Throughput: a fresh process per embedder embeds Cranfield's 1,398 texts
   (``embed_documents``) twice, interleaved with the others in random order;
   docs/s by wall time and by the process's CPU time (``time.process_time``:
   every thread, torch's and the tokenizer's too), plus the load time.

Usage::

    python benchmarks/quality_embedders.py [--embedders hashing,minilm,wordllama]
                                           [--work DIR] [--keep] [--skip-sets]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from _common import cpu_model, ragsnap_process, version, work_folder
from quality_cranfield import (
    CRANFIELD_DATA,
    DEPTH,
    GOODBUDDY_DIR,
    REPO,
    Steps,
    filter_lines,
    goodbuddy_config,
    import_cranfield,
)

SPECS = {
    "hashing": {"kind": "hashing"},
    "minilm": {"kind": "sentence-transformer"},
    "wordllama": {"kind": "wordllama"},
}
METHODS = ("lexical", "vector", "hybrid", "hybrid+rerank")
SWEEP = (10, 20, 30, 40, 50, 60, 70, 80, 90)
SPLITS = ("dev", "test")
ROUNDS = 2

THROUGHPUT = r"""
import json, sys, time
from ragsnap.kb.embedders import make_embedder
spec, texts = json.loads(sys.argv[1]), json.load(open(sys.argv[2], encoding="utf-8"))
w, c = time.perf_counter(), time.process_time()
e = make_embedder(spec)
e.embed_documents(texts[:4], [""] * 4)
load = time.perf_counter() - w
w, c = time.perf_counter(), time.process_time()
e.embed_documents(texts, [""] * len(texts))
print(json.dumps({"load_s": load, "wall_s": time.perf_counter() - w,
                  "cpu_s": time.process_time() - c, "n": len(texts)}))
"""


def cranfield_trial(work: Path, name: str, steps: Steps, reuse: bool) -> Path:
    methods: dict[str, Any] = {
        f"hybrid-v{w:02d}": {
            "retrievers": ["lexical", "vector"],
            "fusion": {"kind": "convex", "lexicalWeight": (100 - w) / 100, "vectorWeight": w / 100},
            "reranker": "none",
        }
        for w in SWEEP
    }
    config = {
        "kb": {
            "path": str(work / "kb" / f"{name}.sqlite"),
            "seedDocs": str(work / "import" / "corpus.jsonl"),
            "chunking": {"maxChars": 1200, "overlapChars": 150, "headingLevel": 2},
            "embedder": dict(SPECS[name]),
        },
        "methods": methods,
    }
    path = work / "configs" / f"{name}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    runs = work / "runs" / name
    report = work / "reports" / f"cranfield-{name}.json"
    argv = ["trial", "--config", str(path), "--cases", str(work / "import" / "golden-cases.json")]
    argv += ["--methods", ",".join([*METHODS, *methods]), "--depth", str(DEPTH)]
    argv += ["--runs-dir", str(runs), "--json-report", str(report), "--allow-outside"]
    argv += ["--repetitions", "1"]
    if reuse and report.is_file():
        return runs
    done, seconds = ragsnap_process(argv, work)
    if done.returncode not in (0, 1):
        raise SystemExit(f"cranfield trial {name}: {done.stderr[-2000:]}")
    steps.add(f"Cranfield trial, {name}", seconds)
    return runs


def per_query_ap(work: Path, qrels: Path, run: Path) -> dict[str, float]:
    argv = ["metrics", "--qrels", str(qrels), "--run", str(run), "-q", "-m", "map"]
    done, _ = ragsnap_process(argv, work)
    out: dict[str, float] = {}
    for line in done.stdout.splitlines():
        parts = [p.strip() for p in line.split("\t")]
        if len(parts) == 3 and parts[0] == "map" and parts[1] != "all":
            out[parts[1]] = float(parts[2])
    return out


def paired_p(work: Path, qrels: Path, a: Path, b: Path) -> tuple[float, float]:
    """Mean AP difference b - a and its paired permutation p (ragsnap's own test)."""
    from ragsnap.scoring.significance import SignificanceSettings, paired_test

    left, right = per_query_ap(work, qrels, a), per_query_ap(work, qrels, b)
    ids = sorted(set(left) & set(right))
    result = paired_test(
        [left[q] for q in ids],
        [right[q] for q in ids],
        SignificanceSettings(permutations=10000),
        f"{a.name}|{b.name}",
    )
    diff = sum(right[q] - left[q] for q in ids) / len(ids)
    return diff, result.p


def metrics(work: Path, qrels: Path, run: Path) -> dict[str, float]:
    argv = ["metrics", "--qrels", str(qrels), "--run", str(run), "--digits", "6"]
    argv += ["-m", "map", "-m", "ndcg@10"]
    done, _ = ragsnap_process(argv, work)
    out: dict[str, float] = {}
    for line in done.stdout.splitlines():
        parts = [p.strip() for p in line.split("\t")]
        if len(parts) == 3 and parts[1] == "all":
            out[parts[0]] = float(parts[2])
    return out


def set_trial(work: Path, name: str, which: str, steps: Steps, reuse: bool) -> dict[str, Any]:
    report = work / "reports" / f"{which}-{name}.json"
    if reuse and report.is_file():
        cached: dict[str, Any] = json.loads(report.read_text("utf-8"))
        return cached
    if which == "example":
        argv = ["trial", "--config", str(REPO / "ragsnap.yaml")]
        argv += ["--cases", str(REPO / "cases" / "golden-cases.json"), "--embedder", name]
        cwd = REPO
    else:
        config = goodbuddy_config(work / name)  # MiniLM, absolute paths
        data = yaml.safe_load(config.read_text("utf-8"))
        data["kb"]["embedder"] = dict(SPECS[name])
        config.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), "utf-8")
        argv = ["trial", "--config", str(config)]
        argv += ["--cases", str(GOODBUDDY_DIR / "golden-cases.json")]
        cwd = work
    argv += ["--json-report", str(report), "--allow-outside", "--repetitions", "1"]
    done, seconds = ragsnap_process(argv, cwd)
    if done.returncode not in (0, 1) or not report.is_file():
        raise SystemExit(f"{which} trial {name}: {done.stderr[-2000:]}")
    steps.add(f"{which} trial, {name}", seconds)
    result: dict[str, Any] = json.loads(report.read_text("utf-8"))
    return result


def throughput(work: Path, names: list[str], texts: list[str]) -> dict[str, list[dict[str, float]]]:
    source = work / "texts.json"
    source.write_text(json.dumps(texts), encoding="utf-8")
    order = [n for _ in range(ROUNDS) for n in names]
    random.Random(45).shuffle(order)
    out: dict[str, list[dict[str, float]]] = {n: [] for n in names}
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    for name in order:
        argv = [sys.executable, "-c", THROUGHPUT, json.dumps(SPECS[name]), str(source)]
        done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
        if done.returncode != 0:
            raise SystemExit(f"throughput {name}: {done.stderr[-2000:]}")
        out[name].append(json.loads(done.stdout.splitlines()[-1]))
    return out


def cell(group: dict[str, Any] | None) -> str:
    """``MAP / nDCG@10`` of a report group, ``-`` where it has none."""
    found = (group or {}).get("metrics", {})
    values = [(found.get(m) or {}).get("mean") for m in ("map", "ndcg@10")]
    if any(v is None for v in values):
        return "-"
    return f"{values[0]:.3f} / {values[1]:.3f}"


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--embedders", default=",".join(SPECS))
    parser.add_argument("--work", type=Path)
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--skip-sets", action="store_true", help="Cranfield only")
    parser.add_argument(
        "--reuse", action="store_true", help="keep the trials whose report is in --work"
    )
    args = parser.parse_args(argv)
    names = [n for n in args.embedders.split(",") if n]
    print(f"Machine: {cpu_model()}, {os.cpu_count()} cores; load {load_average()}")
    print(f"numpy {version('numpy')}, wordllama {version('wordllama')}, torch {version('torch')}")
    steps = Steps()
    with work_folder(args.work, "ragsnap-quality-embedders-", args.keep, "work folder") as work:
        inputs = import_cranfield(CRANFIELD_DATA, work, steps)
        qrels_all = None
        rows: list[str] = []
        for name in names:
            runs = cranfield_trial(work, name, steps, args.reuse)
            qrels_all = runs / "qrels.txt"
            for split in SPLITS:
                ids = {q for q, s in inputs.split_of.items() if s == split}
                qrels = work / "splits" / split / "qrels.txt"
                filter_lines(qrels_all, qrels, ids)
                for run in sorted(runs.glob("*.trec")):
                    part = work / "splits" / split / f"{name}--{run.name}"
                    filter_lines(run, part, ids)
                    m = metrics(work, qrels, part)
                    rows.append(
                        f"| {name} | {run.stem} | {split} | {m['map']:.4f} | {m['ndcg@10']:.4f} |"
                    )
        print("\nCranfield (stemmer english), MAP and nDCG@10 by split\n")
        print("| embedder | method | split | MAP | nDCG@10 |\n|---|---|---|--:|--:|")
        print("\n".join(rows))
        print("\nPaired permutation tests of AP (10,000 permutations), b - a\n")
        print("| split | a | b | mean AP b - a | p |\n|---|---|---|--:|--:|")
        pairs = [
            (f"{x}/{m}", f"{y}/{m}")
            for m in ("vector", "hybrid")
            for x, y in (("hashing", "wordllama"), ("minilm", "wordllama"))
            if x in names and y in names
        ]
        pairs += [(f"{n}/lexical", f"{n}/hybrid") for n in names]
        for split in SPLITS:
            qrels = work / "splits" / split / "qrels.txt"
            for a, b in pairs:
                (na, ma), (nb, mb) = a.split("/"), b.split("/")
                part_a = work / "splits" / split / f"{na}--{ma}.trec"
                part_b = work / "splits" / split / f"{nb}--{mb}.trec"
                diff, p = paired_p(work, qrels, part_a, part_b)
                print(f"| {split} | {a} | {b} | {diff:+.4f} | {p:.4f} |")
        if not args.skip_sets:
            for which in ("example", "goodbuddy"):
                print(f"\n{which}: MAP / nDCG@10 by group\n")
                print("| embedder | method | all | dev | test | en | zh |")
                print("|---|---|--:|--:|--:|--:|--:|")
                for name in names:
                    data = set_trial(work, name, which, steps, args.reuse)
                    for method in METHODS:
                        if method not in data["methods"]:
                            continue
                        entry = data["methods"][method]
                        groups = [entry["summary"]]
                        for key, group in (("split", "dev"), ("split", "test")):
                            groups.append(entry["groups"].get(key, {}).get(group))
                        languages = entry["groups"].get("language", {})
                        for lang in ("en", "zh"):  # GoodBuddy's Chinese is zh-CN
                            key = next((k for k in sorted(languages) if k.startswith(lang)), "")
                            groups.append(languages.get(key))
                        cells = [cell(g) for g in groups]
                        print(f"| {name} | {method} | " + " | ".join(cells) + " |")
        print(f"\nThroughput: {len(inputs.texts)} Cranfield texts; load {load_average()}\n")
        result = throughput(work, names, inputs.texts)
        print("| embedder | load s | wall s | CPU s | docs/s (wall) | docs/s (CPU) |")
        print("|---|--:|--:|--:|--:|--:|")
        for name, samples in result.items():
            for s in samples:
                print(
                    f"| {name} | {s['load_s']:.2f} | {s['wall_s']:.2f} | {s['cpu_s']:.2f} | "
                    f"{s['n'] / s['wall_s']:.0f} | {s['n'] / s['cpu_s']:.0f} |"
                )
        print(f"\nload after: {load_average()}\nSteps:")
        for label, seconds, note in steps.rows:
            print(f"  {label}: {seconds:.1f} s {note}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

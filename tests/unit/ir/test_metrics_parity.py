"""ragsnap.ir.metrics against trec_eval (pytrec_eval), per query, on seeded random runs.

The acceptance test of the measures: every query of every seed, both ways of
building ``Rankings`` (plain dicts, and TREC files read back from disk), to
1e-9, under each query-set rule. The data is built to hit trec_eval's
corners: many tied scores, grades 0-3, relevant documents never retrieved,
judged queries missing from the run, queries judged only with grade 0,
queries only in the run, and document ids of many lengths (prefixes of each
other, longer than 8 bytes, non-ASCII).

Without pytrec_eval the module is skipped on a workstation and fails under
``CI=true``, where the test extra installs it.
"""

from __future__ import annotations

import math
import os
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from ragsnap.ir.metrics import (
    GM_FLOOR,
    Measure,
    Rankings,
    aggregate,
    evaluate,
    parse_measure,
    rankings_from_dicts,
)
from ragsnap.ir.trec import rankings_from_trec, read_qrels, read_run

try:
    import pytrec_eval
except ImportError:
    _MISSING = "pytrec_eval is not installed; pip install -e '.[test]' to check against trec_eval"
    if os.environ.get("CI") == "true":
        pytest.fail(_MISSING, pytrace=False)
    pytest.skip(_MISSING, allow_module_level=True)

TOLERANCE = 1e-9
CUTOFFS = (1, 3, 5, 10, 20)

# ids of at most 8 bytes, several of them prefixes of others
SHORT_IDS = [
    *(f"d{i}" for i in (1, 2, 3, 5, 9, 10, 11, 20, 100, 101, 1000)),
    *("a", "b", "ab", "abc", "Z", "d1-x", "d1_", "é", "éa", "ß1", "文1", "z"),
]
# ids longer than 8 bytes (several 8-byte words), some extending short ones
LONG_IDS = [
    "d100000000",
    "d1000000000000000",
    "d1-appendix-04",
    "document-00000001",
    "document-000000010",
    "長い文書ID",
    "ñandú-ñandú-ñ",
    "x" * 25,
    "d10-long-identifier",
    "abcdefgh",  # exactly 8 bytes
    "abcdefghi",
]
QUERY_IDS = ["q1", "q10", "q100", "q2", "query-number-eleven", "问题-3", "Q", "q1a"]
# a handful of values, so that most scores tie; some need an exponent to print
SCORES = [3.0, 2.5, 2.0, 1.0, 0.5, 0.1, 0.0, -1.25]
EXPONENT_SCORES = [1e-05, 2.5e20]

# (id layout, seed): "short" keeps every id within one 8-byte word, "mixed"
# draws judged and retrieved ids from short and long ones alike, and
# "long-unretrieved" judges long ids but only ever retrieves short ones.
CASES = [(layout, seed) for layout in ("short", "mixed", "long-unretrieved") for seed in range(4)]


@dataclass
class Data:
    qrels: dict[str, dict[str, int]] = field(default_factory=dict)
    run: dict[str, dict[str, float]] = field(default_factory=dict)
    missing: set[str] = field(default_factory=set)  # judged, relevant, not in the run
    zero_only: set[str] = field(default_factory=set)  # judged, no relevant document
    run_only: set[str] = field(default_factory=set)

    @property
    def evaluated(self) -> set[str]:
        return {q for q, j in self.qrels.items() if any(g >= 1 for g in j.values())}


def make_data(layout: str, seed: int) -> Data:
    rng = random.Random(f"{layout}-{seed}")
    if layout == "short":
        judged_pool, retrieved_pool = SHORT_IDS, SHORT_IDS
    elif layout == "mixed":
        judged_pool = retrieved_pool = SHORT_IDS + LONG_IDS
    else:
        judged_pool, retrieved_pool = SHORT_IDS + LONG_IDS, SHORT_IDS
    values = rng.sample(SCORES, rng.randint(2, 5))
    if seed % 2:
        values += EXPONENT_SCORES
    kinds = ["missing", "zero-only", "zero-only", "run-only", "no-relevant-retrieved"]
    kinds += ["normal"] * (len(QUERY_IDS) + 6 - len(kinds))
    rng.shuffle(kinds)
    queries = QUERY_IDS + [f"q{i}" for i in range(3, 9)]
    data = Data()
    for query, kind in zip(queries, kinds, strict=True):
        judged = rng.sample(judged_pool, rng.randint(1, 12))
        if kind == "zero-only":
            data.qrels[query] = dict.fromkeys(judged, 0)
            data.zero_only.add(query)
        elif kind != "run-only":
            grades = {d: rng.choice((0, 0, 1, 2, 3)) for d in judged}
            if all(g == 0 for g in grades.values()):
                grades[judged[0]] = rng.randint(1, 3)
            data.qrels[query] = grades
        else:
            data.run_only.add(query)
        if kind == "missing":
            data.missing.add(query)
            continue
        retrieved = rng.sample(retrieved_pool, rng.randint(1, len(retrieved_pool) - 2))
        if kind == "zero-only":
            some_judged = [d for d in judged[:3] if d in retrieved_pool]
            retrieved = list(dict.fromkeys([*some_judged, *retrieved]))
        if kind == "no-relevant-retrieved":
            retrieved = [d for d in retrieved if data.qrels[query].get(d, 0) < 1]
        if not retrieved:
            data.missing.add(query)
            continue
        data.run[query] = {d: rng.choice(values) for d in retrieved}
    return data


def trec_order(scores: dict[str, float]) -> list[str]:
    """trec_eval's ranking: score descending, then document id descending by bytes."""
    return [d for d, _ in sorted(scores.items(), key=lambda i: (i[1], i[0].encode()), reverse=True)]


def write_trec_files(data: Data, seed: int, tmp_path: Path) -> tuple[Path, Path]:
    """The same data as TREC files: qrels shuffled; run lines shuffled for even
    seeds, and for odd ones grouped by query (queries in a random order) and
    sorted by score, tied lines in a random order."""
    rng = random.Random(seed)
    seps = (" ", "\t", "  ")
    qrels_lines = [
        rng.choice(seps).join((q, "0", d, str(g)))
        for q, j in data.qrels.items()
        for d, g in j.items()
    ]
    rng.shuffle(qrels_lines)
    run_items = [(q, d, s) for q, scores in data.run.items() for d, s in scores.items()]
    rng.shuffle(run_items)
    if seed % 2:  # queries in a random order, ties in a random order
        place = {q: rng.random() for q in data.run}
        run_items.sort(key=lambda i: (place[i[0]], -i[2]))
    run_lines = [
        rng.choice(seps).join((q, "Q0", d, str(rank), repr(s), "tag"))
        for rank, (q, d, s) in enumerate(run_items, 1)
    ]
    qrels_path, run_path = tmp_path / "qrels.txt", tmp_path / "run.txt"
    qrels_path.write_bytes(("\n".join(qrels_lines) + "\n").encode("utf-8"))
    run_path.write_bytes(("\n".join(run_lines) + "\n").encode("utf-8"))
    return qrels_path, run_path


def from_dicts(data: Data, seed: int, tmp_path: Path, query_set: str = "ragsnap") -> Rankings:
    return rankings_from_dicts(data.qrels, data.run, query_set)


def from_trec(data: Data, seed: int, tmp_path: Path, query_set: str = "ragsnap") -> Rankings:
    qrels_path, run_path = write_trec_files(data, seed, tmp_path)
    return rankings_from_trec(read_qrels(qrels_path), read_run(run_path), query_set)


BUILDERS: dict[str, Callable[[Data, int, Path, str], Rankings]] = {
    "dicts": from_dicts,
    "trec": from_trec,
}

# trec_eval's eleven recall levels, and others where floor(L * R + 0.9) is easy to get wrong
LEVELS = [f"{i / 10:.2f}" for i in range(11)] + ["0.05", "0.15", "0.25", "0.33", "0.45", "0.67"]
# trec_eval's multiples of R for Rprec_mult, and others
MULTIPLES = [*range(20, 201, 20), 5, 33, 150, 250]

# ragsnap measure -> trec_eval measure
TREC_EQUIVALENTS: dict[str, str] = {
    "mrr": "recip_rank",
    "ndcg": "ndcg",
    "map": "map",
    "rprec": "Rprec",
    "bpref": "bpref",
    "num_ret": "num_ret",
    "num_rel": "num_rel",
    "num_rel_ret": "num_rel_ret",
    **{f"iprec@{level}": f"iprec_at_recall_{level}" for level in LEVELS},
    **{f"precision@{k}": f"P_{k}" for k in CUTOFFS},
    **{f"recall@{k}": f"recall_{k}" for k in CUTOFFS},
    **{f"hit@{k}": f"success_{k}" for k in CUTOFFS},
    **{f"ndcg@{k}": f"ndcg_cut_{k}" for k in CUTOFFS},
    **{f"map@{k}": f"map_cut_{k}" for k in CUTOFFS},
    # the rest of trec_eval's all_trec
    "infap": "infAP",
    "utility": "utility",
    "11pt_avg": "11pt_avg",
    "bing": "binG",
    "g": "G",
    "ndcg_rel": "ndcg_rel",
    "rndcg": "Rndcg",
    "set_precision": "set_P",
    "set_relative_precision": "set_relative_P",
    "set_recall": "set_recall",
    "set_map": "set_map",
    "set_f": "set_F",
    "num_nonrel_judged_ret": "num_nonrel_judged_ret",
    **{f"relative_precision@{k}": f"relative_P_{k}" for k in CUTOFFS},
    **{f"rprec_mult@{m / 100:.2f}": f"Rprec_mult_{m / 100:.2f}" for m in MULTIPLES},
}
#: measures whose per-query trec_eval value is the logarithm, averaged geometrically
GEOMETRIC = {"gm_map": "gm_map", "gm_bpref": "gm_bpref"}


# trec_eval -c evaluates a judged query missing from the run against this one
# unjudged document, then sets its num_ret to 0 (trec_eval.c, "bogus_ranking")
PLACEHOLDER = "ceci_nest_pas_un_docno"


def reference_values(
    data: Data, complete: bool = False, relevance_level: int = 1
) -> dict[str, dict[str, float]]:
    """trec_eval's value of every ragsnap measure, per query it evaluates; with
    ``complete``, also for the judged queries missing from the run, as -c does.
    ``gm_map`` and ``gm_bpref`` are trec_eval's per-query log(max(value, 0.00001))."""
    run = dict(data.run)
    if complete:
        run.update({q: {PLACEHOLDER: 1.0} for q in data.qrels if q not in data.run})
    evaluator = pytrec_eval.RelevanceEvaluator(
        data.qrels,
        {*TREC_EQUIVALENTS.values(), "num_rel_ret", "num_rel", *GEOMETRIC.values()},
        relevance_level=relevance_level,
    )
    raw = evaluator.evaluate(run)
    out = {q: {m: raw[q][t] for m, t in TREC_EQUIVALENTS.items()} for q in raw}
    for q, row in raw.items():  # recall without a cutoff: relevant retrieved / relevant
        out[q]["recall"] = row["num_rel_ret"] / row["num_rel"] if row["num_rel"] else 0.0
        out[q].update({m: row[t] for m, t in GEOMETRIC.items()})
        if q not in data.run:  # -c resets what its placeholder result changed
            out[q]["num_ret"] = out[q]["utility"] = 0.0
    rr = pytrec_eval.RelevanceEvaluator(data.qrels, {"recip_rank"}, relevance_level=relevance_level)
    for k in CUTOFFS:  # mrr@k: recip_rank on the run cut to its top k in trec_eval order
        cut = {q: {d: s[d] for d in trec_order(s)[:k]} for q, s in run.items()}
        for q, row in rr.evaluate(cut).items():
            out[q][f"mrr@{k}"] = row["recip_rank"]
    return out


def ndcg_exp_reference(ranking: list[str], judgments: dict[str, int], k: int | None) -> float:
    """nDCG with gain 2^g - 1 (0 for a negative grade) and discount log2(rank + 1),
    written out longhand."""
    top = ranking if k is None else ranking[:k]
    dcg = sum((2 ** max(judgments.get(d, 0), 0) - 1) / math.log2(i + 2) for i, d in enumerate(top))
    ideal = sorted((g for g in judgments.values() if g > 0), reverse=True)
    ideal = ideal if k is None else ideal[:k]
    idcg = sum((2**g - 1) / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def coverage_reference(ranking: list[str], judgments: dict[str, int], k: int) -> float:
    shown = ranking[:k]
    return sum(d in judgments for d in shown) / len(shown) if shown else 1.0


def all_measures() -> list[Measure]:
    names = [*TREC_EQUIVALENTS, "recall", "ndcg_exp", *GEOMETRIC]
    names += [f"{m}@{k}" for m in ("mrr", "ndcg_exp", "coverage") for k in CUTOFFS]
    return [parse_measure(n) for n in names]


def compare(
    rankings: Rankings,
    measures: list[Measure],
    values: dict[Measure, list[float]],
    data: Data,
    reference: dict[str, dict[str, float]],
) -> list[str]:
    """Mismatches of ragsnap's per-query values with the reference's, row by row."""
    mismatches = []
    for row, query in enumerate(rankings.query_ids):
        judgments = data.qrels[query]
        ranking = trec_order(data.run.get(query, {}))
        for m in measures:
            got = values[m][row]
            if m.name == "coverage":
                assert m.cutoff is not None
                want = coverage_reference(ranking, judgments, m.cutoff)
            elif m.name == "ndcg_exp":
                want = ndcg_exp_reference(ranking, judgments, m.cutoff)
            elif m.name in GEOMETRIC:  # trec_eval's per-query value is the logarithm
                got, want = math.log(max(got, GM_FLOOR)), reference[query][m.name]
            else:
                want = reference[query][str(m)]
            if not math.isclose(got, want, rel_tol=0.0, abs_tol=TOLERANCE):
                mismatches.append(f"{query!r} {m}: ragsnap {got!r}, reference {want!r}")
    return mismatches


@pytest.mark.parametrize("builder", sorted(BUILDERS))
@pytest.mark.parametrize(("layout", "seed"), CASES)
def test_every_measure_matches_trec_eval_per_query(
    layout: str, seed: int, builder: str, tmp_path: Path
) -> None:
    data = make_data(layout, seed)
    rankings = BUILDERS[builder](data, seed, tmp_path, "ragsnap")
    measures = all_measures()
    values = evaluate(rankings, measures)
    reference = reference_values(data)

    assert data.missing and data.zero_only and data.run_only  # the data has every corner
    assert set(reference) - data.zero_only == data.evaluated - data.missing
    assert rankings.query_ids == tuple(sorted(data.evaluated))
    assert rankings.excluded == tuple(sorted(data.zero_only))
    assert not set(rankings.query_ids) & (data.run_only | data.zero_only)

    # trec_eval leaves a missing query out; ragsnap's rule keeps it with nothing
    # retrieved, which is how trec_eval -c evaluates it: 0 but for its R (num_rel)
    reference_c = reference_values(data, complete=True)
    reference.update({q: reference_c[q] for q in data.missing})
    listed = {m: values[m].tolist() for m in measures}
    mismatches = compare(rankings, measures, listed, data, reference)
    assert not mismatches, f"{len(mismatches)} mismatches:\n" + "\n".join(mismatches[:40])
    for row, query in enumerate(rankings.query_ids):
        if query in data.missing:  # exactly 0, not merely close
            nonzero = {"coverage", "num_rel"}
            assert all(listed[m][row] == 0.0 for m in measures if m.name not in nonzero), query


@pytest.mark.parametrize("builder", sorted(BUILDERS))
@pytest.mark.parametrize(("layout", "seed"), CASES)
@pytest.mark.parametrize("query_set", ["trec", "complete"])
def test_trec_eval_query_sets_match_trec_eval_per_query_and_in_the_mean(
    query_set: str, layout: str, seed: int, builder: str, tmp_path: Path
) -> None:
    """``trec``: the rows are exactly the queries pytrec_eval evaluates (judged and in
    the run, grade-0-only ones included). ``complete``: every judged query, a missing
    one evaluated as trec_eval -c does. Then each ``all`` value is trec_eval's:
    pytrec_eval's mean (sum for num_*, exp of the mean log for gm_map) over the rows."""
    data = make_data(layout, seed)
    complete = query_set == "complete"
    rankings = BUILDERS[builder](data, seed, tmp_path, query_set)
    measures = all_measures()
    values = evaluate(rankings, measures)
    reference = reference_values(data, complete)

    judged_in_run = set(data.qrels) & set(data.run)
    assert data.zero_only <= judged_in_run and data.missing  # the data has the corners
    rows = set(data.qrels) if complete else judged_in_run
    assert rankings.query_ids == tuple(sorted(rows))
    assert set(reference) == rows
    assert set(rankings.excluded) == set(data.qrels) - rows

    listed = {m: values[m].tolist() for m in measures}
    mismatches = compare(rankings, measures, listed, data, reference)
    assert not mismatches, f"{len(mismatches)} mismatches:\n" + "\n".join(mismatches[:40])

    for m, name in [(parse_measure(m), t) for m, t in TREC_EQUIVALENTS.items()]:
        want = pytrec_eval.compute_aggregated_measure(name, [reference[q][str(m)] for q in rows])
        assert aggregate(m, values[m]) == pytest.approx(want, rel=1e-12, abs=1e-12), m
    for name in GEOMETRIC:
        measure = parse_measure(name)
        want = pytrec_eval.compute_aggregated_measure(name, [reference[q][name] for q in rows])
        assert aggregate(measure, values[measure]) == pytest.approx(want, rel=1e-12), name


@pytest.mark.parametrize(("layout", "seed"), CASES)
def test_dicts_and_trec_files_build_the_same_rankings(
    layout: str, seed: int, tmp_path: Path
) -> None:
    data = make_data(layout, seed)
    a, b = from_dicts(data, seed, tmp_path), from_trec(data, seed, tmp_path)
    assert a.query_ids == b.query_ids
    assert a.excluded == b.excluded
    assert a.retrieved.tolist() == b.retrieved.tolist()
    assert a.num_rel.tolist() == b.num_rel.tolist()
    assert a.grades.tolist() == b.grades.tolist()
    assert a.judged.tolist() == b.judged.tolist()
    assert [[g for g in row if g] for row in a.ideal.tolist()] == [
        [g for g in row if g] for row in b.ideal.tolist()
    ]


def with_unjudged_pool(data: Data, seed: int) -> Data:
    """The data with about a quarter of the judgments made -1: in the pool, not
    judged (what infAP samples); trec_eval reads any negative grade so."""
    rng = random.Random(f"pool-{seed}")
    for judgments in data.qrels.values():
        for doc in list(judgments):
            if rng.random() < 0.25:
                judgments[doc] = -1
    return data


@pytest.mark.parametrize("builder", sorted(BUILDERS))
@pytest.mark.parametrize(("layout", "seed"), CASES)
@pytest.mark.parametrize("level", [2, 3])
@pytest.mark.parametrize("pool", [False, True], ids=["judged", "sampled-pool"])
def test_a_relevance_level_matches_trec_eval_l(
    pool: bool, level: int, layout: str, seed: int, builder: str, tmp_path: Path
) -> None:
    """trec_eval -l N: a grade of N or more is relevant; a judged grade below N
    is non-relevant (bpref, infAP, num_nonrel_judged_ret); gains stay the grades."""
    data = make_data(layout, seed)
    if pool:
        data = with_unjudged_pool(data, seed)
    build = rankings_from_trec if builder == "trec" else None
    if build is None:
        rankings = rankings_from_dicts(data.qrels, data.run, "trec", relevance_level=level)
    else:
        qrels_path, run_path = write_trec_files(data, seed, tmp_path)
        rankings = build(read_qrels(qrels_path), read_run(run_path), "trec", level)
    assert rankings.relevance_level == level
    assert rankings.query_ids == tuple(sorted(set(data.qrels) & set(data.run)))
    measures = all_measures()
    values = {m: v.tolist() for m, v in evaluate(rankings, measures).items()}
    reference = reference_values(data, relevance_level=level)
    mismatches = compare(rankings, measures, values, data, reference)
    assert not mismatches, f"{len(mismatches)} mismatches:\n" + "\n".join(mismatches[:40])


@pytest.mark.parametrize(("layout", "seed"), CASES)
@pytest.mark.parametrize("depth", [1, 3, 8])
def test_a_cut_matches_trec_eval_m(depth: int, layout: str, seed: int) -> None:
    """trec_eval -M N orders each query's results, then keeps the first N: the
    same as evaluating the run cut to its top N in trec_eval order."""
    data = make_data(layout, seed)
    rankings = rankings_from_dicts(data.qrels, data.run, "trec").cut(depth)
    assert int(rankings.retrieved.max()) <= depth
    cut = {q: {d: s[d] for d in trec_order(s)[:depth]} for q, s in data.run.items()}
    measures = [m for m in all_measures() if m.name != "mrr" or m.cutoff is None]
    values = {m: v.tolist() for m, v in evaluate(rankings, measures).items()}
    reference = reference_values(Data(data.qrels, cut))
    mismatches = compare(rankings, measures, values, Data(data.qrels, cut), reference)
    assert not mismatches, f"{len(mismatches)} mismatches:\n" + "\n".join(mismatches[:40])


def iprec_by_trec_eval_source(
    ranking: list[str], judgments: dict[str, int], levels: list[float], rule: str
) -> list[float]:
    """te_calc_iprec_at_recall of m_iprec_at_recall.c, line by line: the cutoff
    of each level is (long) (L * R + 0.9) in trec_eval 9 and lround(L * R) in
    trec_eval 10 (10.0-rc2); the rest is the same in both. ``levels`` ascending,
    as trec_eval keeps them."""
    rels = [judgments.get(d, -1) for d in ranking]
    num_rel = sum(g >= 1 for g in judgments.values())
    num_rel_ret = sum(g >= 1 for g in rels)
    num_ret = len(rels)
    if rule == "9":
        cutoffs = [int(level * num_rel + 0.9) for level in levels]
    else:  # C's lround: half away from zero
        cutoffs = [math.floor(level * num_rel + 0.5) for level in levels]
    values = [0.0] * len(levels)
    current = len(levels) - 1
    while current >= 0 and cutoffs[current] > num_rel_ret:
        current -= 1
    int_precis = num_rel_ret / num_ret if num_ret else 0.0
    rel_so_far = num_rel_ret
    i = num_ret
    while i > 0 and rel_so_far > 0:
        int_precis = max(int_precis, rel_so_far / i)
        if rels[i - 1] >= 1:
            while current >= 0 and rel_so_far == cutoffs[current]:
                values[current] = int_precis
                current -= 1
            rel_so_far -= 1
        i -= 1
    while current >= 0:
        values[current] = int_precis
        current -= 1
    return values


@pytest.mark.parametrize(("layout", "seed"), CASES)
@pytest.mark.parametrize("rule", ["9", "10"])
def test_iprec_and_11pt_avg_follow_each_trec_eval_releases_recall_rule(
    rule: str, layout: str, seed: int
) -> None:
    """Rule 9 is pytrec_eval's (checked above); here both rules against a port
    of trec_eval's own loop, which agrees with pytrec_eval under rule 9."""
    data = make_data(layout, seed)
    rankings = rankings_from_dicts(data.qrels, data.run, "trec")
    levels = [round(float(level) * 100) for level in LEVELS]
    measures = [Measure("iprec", level) for level in levels] + [parse_measure("11pt_avg")]
    values = evaluate(rankings, measures, trec_eval=rule)
    eleven = [level / 100 for level in range(0, 101, 10)]
    pinned = reference_values(data) if rule == "9" else {}
    for row, query in enumerate(rankings.query_ids):
        ranking = trec_order(data.run[query])
        want = [
            iprec_by_trec_eval_source(ranking, data.qrels[query], [level / 100], rule)[0]
            for level in levels
        ]
        got = [float(values[m][row]) for m in measures[:-1]]
        assert got == pytest.approx(want, abs=TOLERANCE), query
        points = iprec_by_trec_eval_source(ranking, data.qrels[query], eleven, rule)
        assert float(values[measures[-1]][row]) == pytest.approx(sum(points) / 11, abs=TOLERANCE)
        if pinned:  # the port is trec_eval 9: pytrec_eval agrees with it
            assert want == pytest.approx(
                [pinned[query][str(m)] for m in measures[:-1]], abs=TOLERANCE
            )


def test_the_two_recall_rules_differ_where_l_times_r_has_a_fraction_in_01_to_05() -> None:
    """R = 4 and L = 0.3: trec_eval 9 needs floor(1.2 + 0.9) = 2 relevant results,
    trec_eval 10 lround(1.2) = 1. Relevant at ranks 1, 3, 5 and 7: 2/3 against 1."""
    qrels = {"q": {"a": 1, "c": 1, "e": 1, "g": 1, "b": 0, "d": 0, "f": 0}}
    run = {"q": ["a", "b", "c", "d", "e", "f", "g"]}
    rankings = rankings_from_dicts(qrels, run, "trec")
    iprec = parse_measure("iprec_at_recall_0.30")
    assert evaluate(rankings, [iprec])[iprec].tolist() == [pytest.approx(2 / 3)]
    assert evaluate(rankings, [iprec], trec_eval="10")[iprec].tolist() == [pytest.approx(1.0)]
    scores = {"q": {d: 7.0 - i for i, d in enumerate(run["q"])}}
    want = pytrec_eval.RelevanceEvaluator(qrels, {"iprec_at_recall"}).evaluate(scores)
    assert want["q"]["iprec_at_recall_0.30"] == pytest.approx(2 / 3)  # pytrec_eval is 9

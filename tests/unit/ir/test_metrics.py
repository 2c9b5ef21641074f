"""Measures on examples small enough to work out on paper (ragsnap.ir.metrics)."""

from __future__ import annotations

from math import log2

import pytest

from ragsnap.errors import UsageError
from ragsnap.ir.metrics import (
    DEFAULT_MEASURES,
    GM_FLOOR,
    MEASURES,
    QUERY_SETS,
    TREC_SETS,
    Measure,
    aggregate,
    evaluate,
    parse_measure,
    parse_measures,
    rankings_from_dicts,
    texts,
)

# q1 judges a=3, b=1, c=0, e=2: three relevant documents (a, b, e), e never
# retrieved. The run ranks c, a, x, b: grades 0, 3, 0 (x unjudged), 1.
# q2 is judged but missing from the run, q3 is judged only with grade 0 and
# q4 appears only in the run.
QRELS = {
    "q1": {"a": 3, "b": 1, "c": 0, "e": 2},
    "q2": {"f": 1},
    "q3": {"g": 0, "h": 0},
}
RUN = {"q1": ["c", "a", "x", "b"], "q3": ["g"], "q4": ["a", "b"]}

IDCG = 3 / log2(2) + 2 / log2(3) + 1 / log2(4)  # ideal grades 3, 2, 1
IDCG_EXP = 7 / log2(2) + 3 / log2(3) + 1 / log2(4)  # gains 2^g - 1: 7, 3, 1

# measure -> value for q1 (q2 scores 0 on all of them except coverage)
HAND_COMPUTED = {
    "precision@1": 0.0,
    "precision@2": 1 / 2,
    "precision@4": 2 / 4,
    "precision@5": 2 / 5,  # divides by k although only 4 were retrieved
    "recall@1": 0.0,
    "recall@2": 1 / 3,
    "recall@4": 2 / 3,
    "recall@100": 2 / 3,
    "recall": 2 / 3,
    "hit@1": 0.0,
    "hit@2": 1.0,
    "mrr": 1 / 2,
    "mrr@1": 0.0,
    "mrr@2": 1 / 2,
    "ndcg@1": 0.0,
    "ndcg@2": (3 / log2(3)) / (3 + 2 / log2(3)),
    "ndcg@4": (3 / log2(3) + 1 / log2(5)) / IDCG,
    "ndcg": (3 / log2(3) + 1 / log2(5)) / IDCG,
    "ndcg_exp@2": (7 / log2(3)) / (7 + 3 / log2(3)),
    "ndcg_exp": (7 / log2(3) + 1 / log2(5)) / IDCG_EXP,
    "map": (1 / 2 + 2 / 4) / 3,
    "map@1": 0.0,
    "map@2": (1 / 2) / 3,
    "map@3": (1 / 2) / 3,
    "map@4": (1 / 2 + 2 / 4) / 3,
    "rprec": 1 / 3,  # one relevant in the top R = 3
    "coverage@1": 1.0,
    "coverage@2": 1.0,
    "coverage@3": 2 / 3,  # x is unjudged
    "coverage@4": 3 / 4,
    "coverage@10": 3 / 4,  # over the 4 retrieved, not over 10
    # c (grade 0) is above both relevant results a and b; N = 1 judged non-relevant
    "bpref": ((1 - 1 / 1) + (1 - 1 / 1)) / 3,
    "gm_map": (1 / 2 + 2 / 4) / 3,  # per query it is AP
    # relevant at ranks 2 and 4 (P 1/2 and 2/4); n = max(1, floor(L * 3 + 0.9))
    "iprec@0.00": 1 / 2,
    "iprec@0.50": 1 / 2,  # n = floor(2.4) = 2: the best P at rank 4 or below
    "iprec@0.70": 1 / 2,  # 0.7 * 3 + 0.9 is 2.9999999999999996 in floating point: n = 2
    "iprec@0.80": 0.0,  # n = floor(3.3) = 3, but only 2 relevant results were retrieved
    "iprec@1.00": 0.0,
    "num_ret": 4,
    "num_rel": 3,
    "num_rel_ret": 2,
    # the rest of trec_eval's all_trec
    "relative_precision@2": 1 / 2,  # over min(k, R)
    "relative_precision@5": 2 / 3,
    "rprec_mult@0.20": 0.0,  # P@floor(0.6 + 0.9) = P@1
    "rprec_mult@1.00": 1 / 3,  # P@3
    "rprec_mult@2.00": 2 / 6,  # P@6, past the 4 retrieved
    "set_precision": 2 / 4,
    "set_recall": 2 / 3,
    "set_relative_precision": 2 / 3,  # over min(4 retrieved, R = 3)
    "set_map": 2 * 2 / (4 * 3),
    "set_f": 2 * (1 / 2) * (2 / 3) / (1 / 2 + 2 / 3),
    "num_nonrel_judged_ret": 1,  # c
    "utility": 2 - 2,  # relevant retrieved - others retrieved
    # iprec is 1/2 at the eight levels needing 1 or 2 relevant results, 0 at 0.8-1.0
    "11pt_avg": 8 * (1 / 2) / 11,
    "bing": (1 / log2(2 + 1) + 1 / log2(2 + 2)) / 3,  # c above a; c and x above b
    "gm_bpref": 0.0,  # per query it is bpref
    # a: 1/2 + 1/2 * (1 judged above / 1) * eps / (1 + 2 eps); b: 1/4 + 3/4 * 2/3 * 1/2
    "infap": (1 / 2 + 1 / 2 * 0.00001 / (1 + 2 * 0.00001) + 1 / 2) / 3,
    # gains 0, 3, 0, 1; ideal costs 3, 5, 6, 7 summed; gains summed 0, 3, 3, 4
    "g": (3 / log2(2 + 5 - 3) + 1 / log2(2 + 7 - 4)) / 6,
    # nDCG at a and at b, and for e (never retrieved) the final nDCG
    "ndcg_rel": ((3 / log2(3)) / (3 + 2 / log2(3)) + 2 * (3 / log2(3) + 1 / log2(5)) / IDCG) / 3,
    # nDCG at ranks 1, 2 and 3, where the ideal gain drops from 3 to 2, 1 and 0
    "rndcg": (0 + (3 / log2(3)) / (3 + 2 / log2(3)) + (3 / log2(3)) / IDCG) / 3,
}


@pytest.fixture(scope="module")
def values() -> dict[str, list[float]]:
    rankings = rankings_from_dicts(QRELS, RUN)
    measures = [parse_measure(m) for m in HAND_COMPUTED]
    return {str(m): v.tolist() for m, v in evaluate(rankings, measures).items()}


@pytest.mark.parametrize("measure", list(HAND_COMPUTED))
def test_hand_computed_value(measure: str, values: dict[str, list[float]]) -> None:
    q1, q2 = values[measure]
    assert q1 == pytest.approx(HAND_COMPUTED[measure], rel=1e-12, abs=1e-15)
    # q2 was judged but not retrieved: 0, except coverage (nothing to cover) and its R
    expected = {"coverage": 1.0, "num_rel": 1.0}.get(measure.split("@")[0], 0.0)
    assert q2 == expected


def test_bpref_counts_only_judged_non_relevant_results_above() -> None:
    # ranked: n1 (0), x (unjudged), r1 (2), m (-1: judged, neither relevant nor
    # non-relevant), n2 (0), r2 (1); R = 3 (r3 never retrieved), N = 3 (n3 neither)
    qrels = {"q": {"r1": 2, "r2": 1, "r3": 1, "n1": 0, "n2": 0, "n3": 0, "m": -1}}
    rankings = rankings_from_dicts(qrels, {"q": ["n1", "x", "r1", "m", "n2", "r2"]})
    assert rankings.num_nonrel.tolist() == [3]
    (value,) = evaluate(rankings, [parse_measure("bpref")]).values()
    assert value.tolist() == [pytest.approx(((1 - 1 / 3) + (1 - 2 / 3)) / 3)]


def test_bpref_divides_by_min_of_n_and_r() -> None:
    # R = 1, N = 3: one non-relevant above the relevant result costs min(1, 1) / min(3, 1)
    rankings = rankings_from_dicts({"q": {"r": 1, "a": 0, "b": 0, "c": 0}}, {"q": ["a", "r"]})
    (value,) = evaluate(rankings, [parse_measure("bpref")]).values()
    assert value.tolist() == [0.0]


def test_interpolated_precision_takes_the_best_precision_at_or_below() -> None:
    # R = 2, relevant at ranks 3 and 4: P@3 = 1/3, P@4 = 2/4, so the interpolated
    # precision at the first relevant result is the better one further down
    rankings = rankings_from_dicts({"q": {"a": 1, "b": 1}}, {"q": ["x", "y", "a", "b", "z"]})
    result = evaluate(rankings, parse_measures(["iprec@0", "iprec@0.5", "iprec@1"]))
    assert [v.tolist() for v in result.values()] == [[0.5], [0.5], [0.5]]


def test_interpolated_precision_with_nothing_relevant_retrieved_is_0() -> None:
    rankings = rankings_from_dicts({"q": {"a": 1}, "r": {"b": 0}}, {"q": ["x"], "r": ["b"]}, "trec")
    (value,) = evaluate(rankings, [parse_measure("iprec@0")]).values()
    assert value.tolist() == [0.0, 0.0]


# ---------------------------------------------------------------- all values


def test_aggregate_means_sums_counts_and_floors_the_geometric_mean() -> None:
    rankings = rankings_from_dicts(QRELS, RUN)  # q1 (AP 1/3) and q2 (AP 0)
    measures = parse_measures(["map", "gm_map", "num_rel", "num_ret", "precision@2"])
    values = evaluate(rankings, measures)
    assert {str(m): aggregate(m, values[m]) for m in measures} == {
        "map": pytest.approx(1 / 6),
        "gm_map": pytest.approx((1 / 3 * GM_FLOOR) ** (1 / 2)),
        "num_rel": 4.0,
        "num_ret": 4.0,
        "precision@2": 0.25,
    }


def test_aggregate_over_no_rows_is_0() -> None:
    rankings = rankings_from_dicts({"q": {"a": 0}}, {"q": ["a"]})
    measures = parse_measures(["map", "gm_map", "num_ret"])
    values = evaluate(rankings, measures)
    assert [aggregate(m, values[m]) for m in measures] == [0.0, 0.0, 0.0]


# ---------------------------------------------------------------- query sets


@pytest.mark.parametrize(
    ("query_set", "rows", "excluded"),
    [
        ("trec", ("q1", "q3"), ("q2",)),  # in the run and judged; q4 has no judgments
        ("complete", ("q1", "q2", "q3"), ()),  # every judged query
        ("ragsnap", ("q1", "q2"), ("q3",)),  # judged with a relevant document
    ],
)
def test_query_sets_choose_the_rows(
    query_set: str, rows: tuple[str, ...], excluded: tuple[str, ...]
) -> None:
    rankings = rankings_from_dicts(QRELS, RUN, query_set)
    assert rankings.query_ids == rows
    assert rankings.excluded == excluded
    values = evaluate(rankings, parse_measures(["map", "coverage@1", "num_rel"]))
    q1, q2, q3 = (1 / 2 + 2 / 4) / 3, 0.0, 0.0
    assert values[parse_measure("map")].tolist() == [
        {"q1": q1, "q2": q2, "q3": q3}[q] for q in rows
    ]
    # q3's grade-0 result is judged; q2 retrieved nothing
    assert values[parse_measure("num_rel")].tolist() == [
        {"q1": 3, "q2": 1, "q3": 0}[q] for q in rows
    ]


def test_the_default_query_set_is_ragsnaps() -> None:
    default, ragsnap = rankings_from_dicts(QRELS, RUN), rankings_from_dicts(QRELS, RUN, "ragsnap")
    assert (default.query_ids, default.excluded) == (ragsnap.query_ids, ragsnap.excluded)
    assert set(QUERY_SETS) == {"trec", "complete", "ragsnap"}


def test_a_query_with_no_result_or_no_judgment_is_not_in_the_run_or_qrels() -> None:
    # an empty ranking is not "in the run", an empty judgment set is not "judged"
    rankings = rankings_from_dicts({"q": {"a": 1}, "r": {}}, {"q": [], "r": ["a"]}, "trec")
    assert rankings.query_ids == ()
    assert rankings.excluded == ("q", "r")


def test_an_unknown_query_set_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="unknown query set 'all'; use one of trec, complete"):
        rankings_from_dicts(QRELS, RUN, "all")


def test_batch_rows_are_the_evaluated_queries_in_sorted_order() -> None:
    rankings = rankings_from_dicts(QRELS, RUN)
    assert rankings.query_ids == ("q1", "q2")
    assert rankings.excluded == ("q3",)
    assert rankings.retrieved.tolist() == [4, 0]
    assert rankings.num_rel.tolist() == [3, 1]
    assert rankings.grades[0, :4].tolist() == [0, 3, 0, 1]
    assert rankings.judged[0, :4].tolist() == [True, True, False, True]
    assert rankings.ideal[0, :3].tolist() == [3, 2, 1]


def test_rprec_counts_the_missing_ranks_as_misses() -> None:
    # R = 3 but only one document retrieved (the batch is one column wide)
    rankings = rankings_from_dicts({"q": {"a": 1, "b": 1, "c": 2}}, {"q": ["a"]})
    (rprec,) = evaluate(rankings, [parse_measure("rprec")]).values()
    assert rprec.tolist() == [1 / 3]


def test_rprec_is_precision_at_the_query_own_r() -> None:
    # q has R = 1, r has R = 3: each stops at its own R
    rankings = rankings_from_dicts(
        {"q": {"b": 1}, "r": {"a": 1, "b": 1, "c": 1}},
        {"q": ["a", "b", "c"], "r": ["a", "x", "b", "c"]},
    )
    (rprec,) = evaluate(rankings, [parse_measure("rprec")]).values()
    assert rprec.tolist() == [0.0, pytest.approx(2 / 3)]


def test_negative_grades_count_as_not_relevant_and_gain_nothing() -> None:
    rankings = rankings_from_dicts({"q": {"a": -1, "b": 2}}, {"q": ["a", "b"]})
    result = evaluate(rankings, [parse_measure(m) for m in ("ndcg", "ndcg_exp", "mrr", "p@1")])
    # DCG = 0 + 2 / log2(3) over IDCG = 2; with gain 2^g - 1: 3 / log2(3) over 3
    assert [v.tolist() for v in result.values()] == [
        [pytest.approx(1 / log2(3))],
        [pytest.approx(1 / log2(3))],
        [0.5],
        [0.0],
    ]


# ---------------------------------------------------------------- ranking rules


def ranked_grades(run: dict[str, float] | list[str], grades: dict[str, int]) -> list[int]:
    rankings = rankings_from_dicts({"q": grades}, {"q": run})
    return rankings.grades[0, : int(rankings.retrieved[0])].tolist()


def test_equal_scores_are_ordered_by_document_id_descending() -> None:
    # each document's grade is its place in trec_eval's order
    grades = {"top": 9, "é": 1, "z": 2, "d2": 3, "d10": 4, "d1": 5, "last": 8}
    scores = {"d1": 1.0, "last": 0.5, "d10": 1.0, "z": 1.0, "top": 2.0, "é": 1.0, "d2": 1.0}
    assert ranked_grades(scores, grades) == [9, 1, 2, 3, 4, 5, 8]


def test_a_ranked_list_keeps_its_order_and_the_first_of_each_duplicate() -> None:
    # [b, b, a]: a is at rank 2, not 3
    rankings = rankings_from_dicts({"q": {"a": 1}}, {"q": ["b", "b", "a"]})
    assert rankings.retrieved.tolist() == [2]
    result = evaluate(rankings, parse_measures(["mrr", "precision@2", "coverage@3"]))
    assert [v.tolist() for v in result.values()] == [[0.5], [0.5], [0.5]]
    # a relevant document repeated is counted once
    rankings = rankings_from_dicts({"q": {"a": 1, "c": 1}}, {"q": ["a", "a", "z", "a"]})
    (p2,) = evaluate(rankings, [parse_measure("precision@2")]).values()
    assert p2.tolist() == [0.5]
    assert ranked_grades(["z", "a", "y", "z"], {"a": 2, "y": 1, "z": 3}) == [3, 2, 1]


def test_nothing_to_evaluate_gives_empty_columns() -> None:
    rankings = rankings_from_dicts({"q": {"a": 0}}, {"q": ["a"]})
    assert rankings.query_ids == ()
    assert rankings.excluded == ("q",)
    result = evaluate(rankings, parse_measures(DEFAULT_MEASURES))
    assert all(v.shape == (0,) for v in result.values())


# ---------------------------------------------------------------- parse_measure


@pytest.mark.parametrize(
    ("text", "name", "cutoff", "canonical"),
    [
        # trec_eval's all_trec names
        ("relative_P_5", "relative_precision", 5, "relative_precision@5"),
        ("Rprec_mult_0.20", "rprec_mult", 20, "rprec_mult@0.20"),
        ("Rprec_mult_2.00", "rprec_mult", 200, "rprec_mult@2.00"),
        ("set_P", "set_precision", None, "set_precision"),
        ("set_relative_P", "set_relative_precision", None, "set_relative_precision"),
        ("set_recall", "set_recall", None, "set_recall"),
        ("set_map", "set_map", None, "set_map"),
        ("set_F", "set_f", None, "set_f"),
        ("11pt_avg", "11pt_avg", None, "11pt_avg"),
        ("binG", "bing", None, "bing"),
        ("G", "g", None, "g"),
        ("Rndcg", "rndcg", None, "rndcg"),
        ("ndcg_rel", "ndcg_rel", None, "ndcg_rel"),
        ("infAP", "infap", None, "infap"),
        ("gm_bpref", "gm_bpref", None, "gm_bpref"),
        ("utility", "utility", None, "utility"),
        ("num_nonrel_judged_ret", "num_nonrel_judged_ret", None, "num_nonrel_judged_ret"),
        ("relstring", "relstring", None, "relstring"),
        ("relstring_20", "relstring", 20, "relstring@20"),
        ("ndcg@10", "ndcg", 10, "ndcg@10"),
        ("NDCG@10", "ndcg", 10, "ndcg@10"),
        ("  map ", "map", None, "map"),
        ("P_5", "precision", 5, "precision@5"),
        ("p@5", "precision", 5, "precision@5"),
        ("precision.5", "precision", 5, "precision@5"),
        ("success@5", "hit", 5, "hit@5"),
        ("success_1", "hit", 1, "hit@1"),
        ("ndcg_cut_10", "ndcg", 10, "ndcg@10"),
        ("ndcg_cut", "ndcg", None, "ndcg"),
        ("recip_rank", "mrr", None, "mrr"),
        ("mrr@10", "mrr", 10, "mrr@10"),
        ("map_cut_10", "map", 10, "map@10"),
        ("r-precision", "rprec", None, "rprec"),
        ("rprec", "rprec", None, "rprec"),
        ("recall_10", "recall", 10, "recall@10"),
        ("recall", "recall", None, "recall"),
        ("ndcg_exp@10", "ndcg_exp", 10, "ndcg_exp@10"),
        ("ndcg_exp_10", "ndcg_exp", 10, "ndcg_exp@10"),
        ("judged@5", "coverage", 5, "coverage@5"),
        ("coverage@010", "coverage", 10, "coverage@10"),
        # trec_eval names of the newer measures
        ("num_ret", "num_ret", None, "num_ret"),
        ("num_rel", "num_rel", None, "num_rel"),
        ("num_rel_ret", "num_rel_ret", None, "num_rel_ret"),
        ("bpref", "bpref", None, "bpref"),
        ("gm_map", "gm_map", None, "gm_map"),
        ("Rprec", "rprec", None, "rprec"),
        ("iprec_at_recall_0.00", "iprec", 0, "iprec@0.00"),
        ("iprec_at_recall_0.10", "iprec", 10, "iprec@0.10"),
        ("iprec_at_recall.0.5", "iprec", 50, "iprec@0.50"),
        ("iprec_at_recall_1.00", "iprec", 100, "iprec@1.00"),
        ("iprec@0.05", "iprec", 5, "iprec@0.05"),
        ("iprec@1", "iprec", 100, "iprec@1.00"),
        # ir_measures names
        ("AP", "map", None, "map"),
        ("AP@10", "map", 10, "map@10"),
        ("RR", "mrr", None, "mrr"),
        ("RR@10", "mrr", 10, "mrr@10"),
        ("R@5", "recall", 5, "recall@5"),
        ("nDCG@10", "ndcg", 10, "ndcg@10"),
        ("P@5", "precision", 5, "precision@5"),
        ("Success@10", "hit", 10, "hit@10"),
        ("Judged@10", "coverage", 10, "coverage@10"),
        ("Bpref", "bpref", None, "bpref"),
        ("IPrec@0.1", "iprec", 10, "iprec@0.10"),
        ("NumRet", "num_ret", None, "num_ret"),
        ("NumRel", "num_rel", None, "num_rel"),
        ("NumRelRet", "num_rel_ret", None, "num_rel_ret"),
    ],
)
def test_parse_measure_aliases_and_canonical_names(
    text: str, name: str, cutoff: int | None, canonical: str
) -> None:
    measure = parse_measure(text)
    assert measure == Measure(name, cutoff)
    assert str(measure) == canonical
    assert parse_measure(canonical) == measure


@pytest.mark.parametrize(
    ("text", "fragments"),
    [
        ("bogus", ["unknown measure 'bogus'", *sorted(MEASURES), "e.g. ndcg@10"]),
        ("", ["unknown measure ''"]),
        ("ndcg@", ["unknown measure 'ndcg@'"]),
        ("ndcg@x", ["unknown measure 'ndcg@x'"]),
        ("P5", ["unknown measure 'P5'"]),
        ("precision", ["'precision' needs a cutoff", "precision@10"]),
        ("P", ["'precision' needs a cutoff", "precision@10"]),
        ("hit", ["'hit' needs a cutoff", "hit@10"]),
        ("coverage", ["'coverage' needs a cutoff", "coverage@10"]),
        ("rprec@5", ["'rprec' takes no cutoff", "write rprec"]),
        ("ndcg@0", ["'ndcg@0'", "at least 1"]),
        ("P_0", ["'P_0'", "at least 1"]),
        ("ndcg@2.5", ["'ndcg@2.5'", "whole number", "ndcg@10"]),
        ("num_ret@10", ["'num_ret' takes no cutoff", "write num_ret"]),
        ("bpref@10", ["'bpref' takes no cutoff"]),
        ("iprec", ["'iprec' needs a recall level from 0 to 1", "iprec@0.10"]),
        ("iprec_at_recall", ["'iprec' needs a recall level"]),
        ("iprec@1.5", ["'iprec@1.5'", "from 0 to 1 in steps of 0.01", "iprec@0.10"]),
        ("iprec@0.125", ["'iprec@0.125'", "steps of 0.01"]),
        ("iprec@10", ["'iprec@10'", "from 0 to 1"]),
        ("AP(rel=2)", ["unknown measure 'AP(rel=2)'"]),
        ("rprec_mult", ["'rprec_mult' needs a multiple of R", "rprec_mult@0.20"]),
        ("Rprec_mult_0", ["'Rprec_mult_0'", "multiple of R above 0"]),
        ("relative_P", ["'relative_precision' needs a cutoff"]),
        ("11pt_avg@5", ["'11pt_avg' takes no cutoff"]),
    ],
)
def test_parse_measure_errors_say_what_to_write(text: str, fragments: list[str]) -> None:
    with pytest.raises(UsageError) as info:
        parse_measure(text)
    for fragment in fragments:
        assert fragment in str(info.value)


def test_parse_measures_keeps_order_and_drops_repeats() -> None:
    parsed = parse_measures(["map", "P_5", "precision@5", "ndcg_cut_10", "map"])
    assert [str(m) for m in parsed] == ["map", "precision@5", "ndcg@10"]


def test_default_measures_all_parse_to_themselves() -> None:
    assert [str(m) for m in parse_measures(DEFAULT_MEASURES)] == list(DEFAULT_MEASURES)


def test_measures_are_value_objects() -> None:
    assert {parse_measure("P_5"): 1}[Measure("precision", 5)] == 1
    assert parse_measure("map") != parse_measure("map@5")
    with pytest.raises(AttributeError):
        Measure("map").cutoff = 3  # type: ignore[misc]


def test_recall_levels_print_with_two_decimals() -> None:
    assert [str(Measure("iprec", level)) for level in (0, 5, 10, 100)] == [
        "iprec@0.00",
        "iprec@0.05",
        "iprec@0.10",
        "iprec@1.00",
    ]
    levels = parse_measures(["iprec@1", "iprec@0.5", "iprec@0.05", "iprec@0"])
    assert [str(m) for m in sorted(levels)] == [
        "iprec@0.00",
        "iprec@0.05",
        "iprec@0.50",
        "iprec@1.00",
    ]


def test_measures_sort_by_name_then_cutoff() -> None:
    # Measure is declared orderable; a name with and without a cutoff must sort too
    measures = parse_measures(["mrr", "ndcg@10", "map@10", "ndcg@5", "map", "ndcg"])
    assert [str(m) for m in sorted(measures)] == [
        "map",
        "map@10",
        "mrr",
        "ndcg",
        "ndcg@5",
        "ndcg@10",
    ]


def test_evaluate_returns_one_column_per_measure_in_the_order_asked() -> None:
    rankings = rankings_from_dicts(QRELS, RUN)
    measures = parse_measures(["rprec", "map", "hit@1"])
    result = evaluate(rankings, measures)
    assert list(result) == list(measures)
    assert all(v.shape == (2,) and v.dtype.kind == "f" for v in result.values())


def test_relstring_prints_each_result_grade_as_trec_eval_does() -> None:
    qrels = {"q1": {"a": 3, "b": 12, "c": 0, "p": -1}, "q2": {"f": 1}}
    run = {"q1": ["c", "a", "x", "b", "p", "y"]}
    rankings = rankings_from_dicts(qrels, run, "complete")
    assert texts(rankings, parse_measure("relstring")) == ["'03->.-'", "''"]
    assert texts(rankings, parse_measure("relstring_3")) == ["'03-'", "''"]
    with pytest.raises(UsageError, match="no `all` value"):
        aggregate(
            parse_measure("relstring"),
            evaluate(rankings, [parse_measure("relstring")])[parse_measure("relstring")],
        )
    with pytest.raises(UsageError, match="is a number, not text"):
        texts(rankings, parse_measure("map"))


def test_a_relevance_level_moves_the_line_between_relevant_and_not() -> None:
    """trec_eval -l 2: b (grade 1) is judged non-relevant; gains stay the grades."""
    rankings = rankings_from_dicts(QRELS, RUN, "trec", relevance_level=2)
    measures = parse_measures(["num_rel", "num_rel_ret", "precision@4", "num_nonrel_judged_ret"])
    got = {str(m): v.tolist() for m, v in evaluate(rankings, measures).items()}
    assert got == {
        "num_rel": [2.0, 0.0],  # a, e; q3 judged only grade 0
        "num_rel_ret": [1.0, 0.0],
        "precision@4": [1 / 4, 0.0],
        "num_nonrel_judged_ret": [2.0, 1.0],  # c and b; g
    }
    ndcg = parse_measure("ndcg")
    assert evaluate(rankings, [ndcg])[ndcg].tolist()[0] == pytest.approx(HAND_COMPUTED["ndcg"])


def test_a_cut_keeps_the_first_results_of_each_query() -> None:
    rankings = rankings_from_dicts(QRELS, RUN, "trec").cut(2)
    measures = parse_measures(["num_ret", "num_rel_ret", "precision@4", "map"])
    got = {str(m): v.tolist() for m, v in evaluate(rankings, measures).items()}
    assert got == {
        "num_ret": [2.0, 1.0],
        "num_rel_ret": [1.0, 0.0],
        "precision@4": [1 / 4, 0.0],
        "map": [(1 / 2) / 3, 0.0],
    }
    with pytest.raises(UsageError, match="at least 1"):
        rankings.cut(0)


def test_an_unknown_trec_eval_rule_names_the_known_ones() -> None:
    rankings = rankings_from_dicts(QRELS, RUN)
    with pytest.raises(UsageError, match="use one of 9, 10"):
        evaluate(rankings, [parse_measure("iprec@0.10")], trec_eval="11")


def test_trec_evals_sets_parse_and_name_every_all_trec_measure() -> None:
    all_trec = parse_measures(TREC_SETS["all_trec"])
    assert len(all_trec) == len(TREC_SETS["all_trec"])  # no repeats
    assert parse_measures(TREC_SETS["official"]) == all_trec[: len(TREC_SETS["official"])]
    # trec_eval 9.0.8's all_trec, one family each (runid and num_q are printed apart)
    families = {m.name for m in all_trec}
    assert families == {
        *("num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "rprec", "bpref", "mrr"),
        *("iprec", "precision", "relstring", "recall", "infap", "gm_bpref", "rprec_mult"),
        *("utility", "11pt_avg", "bing", "g", "ndcg", "ndcg_rel", "rndcg", "relative_precision"),
        *("hit", "set_precision", "set_relative_precision", "set_recall", "set_map", "set_f"),
        "num_nonrel_judged_ret",
    }


def test_the_all_value_adds_the_rows_one_after_another_as_trec_eval_does() -> None:
    """trec_eval adds its queries' values in order, then divides: nine 0.1s make
    0.09999999999999999, where numpy's pairwise mean gives 0.1. Printed to four
    decimals, such a difference can move a digit (0.01925 over 200 queries)."""
    import numpy as np

    nine = np.full(9, 0.1)
    assert aggregate(parse_measure("map"), nine) == 0.09999999999999999
    assert float(nine.mean()) == 0.1
    logs = np.log(np.full(9, 0.1))
    sequential = 0.0
    for value in logs.tolist():
        sequential += value
    assert aggregate(parse_measure("gm_map"), np.full(9, 0.1)) == float(np.exp(sequential / 9))

"""Sharon's optimizer: the traffic workload of Sharon Figure 1 (Table I, Figure 4, Examples 5-10) and, on
random workloads, the plan finder against the exhaustive optimizer."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cepvec
from cepvec.sharing.optimizer import (_branch_and_bound, exhaustive, guaranteed_weight, gwmin, plan_finder,
                                      plan_sequences, reduce_graph, sharing_candidates, sharon_graph)
from tests.strategies import examples

#: Sharon Figure 1: q1-q7 (each WHERE [vehicle] WITHIN 10 min SLIDE 1 min)
TRAFFIC = {"q1": "OakSt MainSt StateSt", "q2": "OakSt MainSt WestSt", "q3": "LindenSt ParkAve OakSt MainSt",
           "q4": "ParkAve OakSt MainSt WestSt", "q5": "MainSt StateSt", "q6": "EastPark ElmSt ParkAve",
           "q7": "ElmSt ParkAve GreenHill"}
SEQS = {k: tuple(v.split()) for k, v in TRAFFIC.items()}
P = {"p1": ("OakSt", "MainSt"), "p2": ("ParkAve", "OakSt"), "p3": ("ParkAve", "OakSt", "MainSt"),
     "p4": ("MainSt", "WestSt"), "p5": ("OakSt", "MainSt", "WestSt"), "p6": ("MainSt", "StateSt"),
     "p7": ("ElmSt", "ParkAve")}
#: the benefit values of Figure 4 (Example 7 lists them with the degrees)
WEIGHTS = {"p1": 25, "p2": 9, "p3": 12, "p4": 15, "p5": 20, "p6": 8, "p7": 18}


def paper_graph():
    name = {v: k for k, v in P.items()}
    cands = [dataclasses.replace(c, benefit=WEIGHTS[name[c.pattern]]) for c in sharing_candidates(SEQS)]
    g = sharon_graph(cands, SEQS)
    ids = {name[v.pattern]: i for i, v in enumerate(g.vertices)}
    return g, ids


def test_table_1_candidates():
    got = {c.pattern: set(c.queries) for c in sharing_candidates(SEQS)}
    assert got == {P["p1"]: {"q1", "q2", "q3", "q4"}, P["p2"]: {"q3", "q4"}, P["p3"]: {"q3", "q4"},
                   P["p4"]: {"q2", "q4"}, P["p5"]: {"q2", "q4"}, P["p6"]: {"q1", "q5"}, P["p7"]: {"q6", "q7"}}


def test_figure_4_graph_and_examples_5_to_10():
    g, ids = paper_graph()
    degree = {p: len(g.adj[i]) for p, i in ids.items()}
    assert degree == {"p1": 5, "p2": 3, "p3": 4, "p4": 3, "p5": 4, "p6": 1, "p7": 0}  # Example 7's denominators
    # Example 5: {p2, p4} is valid with score 24; {p1} scores 25
    assert g.independent([ids["p2"], ids["p4"]]) and g.weight([ids["p2"], ids["p4"]]) == 24
    # Example 7: guaranteed weight 38.57; Score_max(p3) = 38 < 38.57, so p3 is pruned
    assert guaranteed_weight(g) == pytest.approx(38.5667, abs=1e-4)
    red = reduce_graph(g)
    assert [(v, smax) for v, smax, _ in red.conflict_ridden] == [(ids["p3"], 38)]
    assert red.conflict_free == [ids["p7"]]  # Example 8
    assert red.alive == {ids[p] for p in ("p1", "p2", "p4", "p5", "p6")}  # Example 9: 2^5 plans remain
    # Example 10: the optimal plan
    best = plan_finder(g, red)
    assert sorted(best) == sorted(ids[p] for p in ("p2", "p4", "p6", "p7"))
    assert g.weight(best) == 50 == g.weight(exhaustive(g))
    assert g.independent(gwmin(g)) and g.weight(gwmin(g)) <= 50


def test_workload_of_figure_1_queries_explains_its_plan():
    texts = {k: f"RETURN COUNT(*) PATTERN SEQ({', '.join(s)}) WHERE [vehicle] WITHIN 10 min SLIDE 1 min"
             for k, s in SEQS.items()}
    texts["k"] = "RETURN COUNT(*) PATTERN SEQ(OakSt, MainSt+) WHERE [vehicle] WITHIN 10 min SLIDE 1 min"
    wl = cepvec.workload(texts)
    assert wl.plan.not_sharable == {"k": "Kleene pattern"}
    assert [sorted(c.seqs) for c in wl.plan.classes] == [sorted(SEQS)]
    text = wl.explain()
    assert "k: not sharable (Kleene pattern)" in text
    assert "((OakSt, MainSt), {q1, q2, q3, q4})" in text
    assert "estimated cost (Sharon equations 2-8):" in text and "Sharon plan (auto):" in text


@st.composite
def workloads(draw):
    n = draw(st.integers(2, 12))
    seqs = {f"q{i}": tuple(draw(st.lists(st.sampled_from("ABCDEF"), min_size=2, max_size=5))) for i in range(n)}
    rates = draw(st.dictionaries(st.sampled_from("ABCDEF"), st.integers(1, 30), max_size=6))
    return seqs, rates


@settings(max_examples=examples(200), deadline=None)
@given(workloads())
def test_plan_finder_weight_equals_exhaustive(wr):
    seqs, rates = wr
    g = sharon_graph(sharing_candidates(seqs, rates), seqs)
    if len(g.vertices) > 16:  # the oracle tries 2^n plans
        g.vertices, g.adj = g.vertices[:16], [a & set(range(16)) for a in g.adj[:16]]
    best = exhaustive(g)
    found = plan_finder(g)
    assert g.independent(found)
    assert g.weight(found) == pytest.approx(g.weight(best))
    assert g.weight(_branch_and_bound(g, list(range(len(g.vertices))))) == pytest.approx(g.weight(best))
    greedy = gwmin(g)
    assert g.independent(greedy) and g.weight(greedy) <= g.weight(best) + 1e-9
    assert g.weight(greedy) >= guaranteed_weight(g) - 1e-9  # GWMIN's guarantee (equation 10)
    assert plan_sequences(seqs, "exhaustive", rates).score == pytest.approx(plan_sequences(seqs, "auto", rates).score) \
        if len(sharon_graph(sharing_candidates(seqs, rates), seqs).vertices) <= 16 else True


def test_explain_says_what_the_executor_shares():
    texts = {n: f"RETURN COUNT(*) PATTERN SEQ({', '.join(s)}) WHERE [vehicle] WITHIN 10 min SLIDE 1 min"
             for n, s in (("q1", "ABC"), ("q2", "ABD"), ("q3", "AE"), ("q4", "CD"))}
    wl = cepvec.workload(texts)
    assert wl.plan.shared_groups == (("q1", "q2", "q3", "q4"),)
    lines = wl.explain().splitlines()
    assert lines[-1] == "  7 prefix counters instead of 10; computed once: (A) for {q1, q2, q3}; (A, B) for {q1, q2}"
    none = cepvec.workload(texts, sharing="none")
    assert none.plan.shared_groups == () and none.explain().endswith("every query runs on its own path)")

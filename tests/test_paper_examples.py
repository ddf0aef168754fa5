"""Worked examples of the source papers and of docs/semantics.md, on every local engine.

Expected numbers come from the papers' text (cited per test) or are derived by
hand in the comments; none of them was obtained by running cepvec.

Papers:
* GRETA: Poppe et al., "GRETA: Graph-based Real-time Event Trend
  Aggregation" (VLDB 2018 tech report).
* A-Seq: Qi et al., "Complex Event Analytics: Online Aggregation of
  Stream Sequence Patterns" (SIGMOD 2014).

Streams are written as in the papers: ``a1`` is an event of type A at time 1
(seconds); several events may share a time stamp (``c2`` and ``b2``).
"""

from __future__ import annotations

import math

import polars as pl
import pytest

import cepvec

from .conftest import run_engine


def run(query, events, **kwargs):
    return run_engine(query, events, **kwargs)


# GRETA Figure 6 / Figure 8 stream: I = {a1, b2, c2, a3, e3, a4, c5, d6, b7, a8, b9}
FIG6 = "a1 b2 c2 a3 e3 a4 c5 d6 b7 a8 b9"
# GRETA Figure 3 / Figure 12 stream: I = {a1, b2, a3, a4, b7}, a1.attr=5, a3.attr=6, a4.attr=4
FIG12 = "a1 b2 a3 a4 b7"
FIG12_ATTR = {"a1": 5, "a3": 6, "a4": 4}
# GRETA Figure 13 stream: I = {a1, b2, a3, a4, b5}
FIG13 = "a1 b2 a3 a4 b5"


def stream(spec: str, **attrs: dict) -> pl.DataFrame:
    """``"a1 b2"`` -> events (A, 1), (B, 2); ``attrs={"x": {"a1": 5}}`` sets attribute values (else null)."""
    names = spec.split()
    data: dict[str, list] = {"type": [n[0].upper() for n in names], "time": [int(n[1:]) for n in names]}
    for col, values in attrs.items():
        data[col] = [values.get(n) for n in names]
    schema = {"type": pl.String, "time": pl.Int64} | {c: pl.Int64 for c in attrs}
    return pl.DataFrame(data, schema=schema)


def rows(df: pl.DataFrame) -> list[tuple]:
    return [tuple(r) for r in df.iter_rows()]


def match_sets(query: str, events: pl.DataFrame) -> list[tuple]:
    """Every match as the tuple of its event names (``("a1", "b2")``), in match order."""
    m = cepvec.matches(query, events, limit=None)
    out = []
    for _, g in m.group_by("match", maintain_order=True):
        g = g.sort("position")
        out.append(tuple(f"{t.lower()}{s}" for t, s in zip(g["type"], g["time"])))
    return out


# ====================================================================== docs/semantics.md worked values


def test_semantics_worked_values_figure12(engine):
    # docs/semantics.md "Worked values" (GRETA Example 1 / Example 8, Figure 12): (SEQ(A+, B))+ over
    # a1, b2, a3, a4, b7 with a1.attr=5, a3.attr=6, a4.attr=4: COUNT(*)=11, COUNT(A)=20,
    # MIN(A.attr)=4, MAX(A.attr)=6, SUM(A.attr)=100, AVG(A.attr)=5.
    ev = stream(FIG12, attr=FIG12_ATTR)
    res = run("RETURN COUNT(*), COUNT(A), MIN(A.attr), MAX(A.attr), SUM(A.attr), AVG(A.attr) "
                     "PATTERN (SEQ(A+, B))+", ev, engine=engine)
    assert res.columns == ["COUNT(*)", "COUNT(A)", "MIN(A.attr)", "MAX(A.attr)", "SUM(A.attr)", "AVG(A.attr)"]
    assert rows(res) == [(11, 20, 4, 6, 100, 5.0)]


def test_figure12_trends_by_hand():
    # GRETA Figure 3 lists the 11 trends of (SEQ(A+, B))+ in a1, b2, a3, a4, b7. By hand:
    # one block ending at b2: (a1 b2); one block ending at b7: A+ any non-empty subset of
    # {a1, a3, a4} (7); two blocks: (a1 b2)(A+ subset of {a3, a4}, b7) (3). 1 + 7 + 3 = 11.
    got = sorted(match_sets("RETURN COUNT(*) PATTERN (SEQ(A+, B))+", stream(FIG12)))
    want = sorted([
        ("a1", "b2"),
        ("a1", "b7"), ("a3", "b7"), ("a4", "b7"), ("a1", "a3", "b7"), ("a1", "a4", "b7"),
        ("a3", "a4", "b7"), ("a1", "a3", "a4", "b7"),
        ("a1", "b2", "a3", "b7"), ("a1", "b2", "a4", "b7"), ("a1", "b2", "a3", "a4", "b7"),
    ])
    assert got == want


def test_semantics_worked_values_figure6c(engine):
    # docs/semantics.md "Worked values" and GRETA Section 4.2 / Figure 6(c): (SEQ(A+, B))+ over
    # a1, b2, c2, a3, e3, a4, c5, d6, b7, a8, b9: final_count = b2 + b7 + b9 = 43.
    res = run("RETURN COUNT(*) PATTERN (SEQ(A+, B))+", stream(FIG6), engine=engine)
    assert rows(res) == [(43,)]


# ====================================================================== GRETA Figure 6


def test_greta_figure6a_kleene_a(engine):
    # GRETA Figure 6(a), pattern A+ (b's, c's, d's, e's are irrelevant). Vertex counts by
    # Theorem 4.3: a1 = 1, a3 = 1 + a1 = 2, a4 = 1 + a1 + a3 = 4, a8 = 1 + 1 + 2 + 4 = 8;
    # final count = 1 + 2 + 4 + 8 = 15 = 2^4 - 1 (every non-empty subset of the four a's).
    res = run("RETURN COUNT(*), COUNT(A) PATTERN A+", stream(FIG6), engine=engine)
    # COUNT(A): each a is in half of the 16 subsets: 4 * 8 = 32
    assert rows(res) == [(15, 32)]


def test_greta_figure6a_vertex_counts_via_emit_changes(engine):
    # EMIT CHANGES without WITHIN reports, at each END event, all matches so far (unbounded):
    # the running sum of the vertex counts of Figure 6(a): 1, 1+2, 1+2+4, 1+2+4+8.
    res = run("RETURN COUNT(*) PATTERN A+ EMIT CHANGES", stream(FIG6), engine=engine)
    assert res.columns == ["time", "COUNT(*)"]
    assert rows(res) == [(1, 1), (3, 3), (4, 7), (8, 15)]


def test_greta_figure6b_seq_kleene_b(engine):
    # GRETA Figure 6(b), pattern SEQ(A+, B) ("there are no dashed edges since b's may not precede
    # a's"). A+ counts as in 6(a); b2 = a1 = 1; b7 = a1 + a3 + a4 = 1 + 2 + 4 = 7;
    # b9 = a1 + a3 + a4 + a8 = 15. Final count 1 + 7 + 15 = 23.
    res = run("RETURN COUNT(*) PATTERN SEQ(A+, B)", stream(FIG6), engine=engine)
    assert rows(res) == [(23,)]
    res = run("RETURN COUNT(*) PATTERN SEQ(A+, B) EMIT CHANGES", stream(FIG6), engine=engine)
    assert rows(res) == [(2, 1), (7, 8), (9, 23)]


def test_greta_figure6c_nested_kleene(engine):
    # GRETA Section 4.2 / Figure 6(c): a4.count = 1 + (a1 + b2 + a3) = 6,
    # b7.count = a1 + a3 + a4 = 10, final_count = b2 + b7 + b9 = 43.
    # EMIT CHANGES without WITHIN gives the running final count at each END event b:
    # b2 -> 1, b7 -> 1 + 10 = 11 (so b7 alone ends 10 trends), b9 -> 43 (b9 ends 32).
    ev = stream(FIG6)
    res = run("RETURN COUNT(*) PATTERN (SEQ(A+, B))+ EMIT CHANGES", ev, engine=engine)
    assert rows(res) == [(2, 1), (7, 11), (9, 43)]


def test_greta_figure6c_b7_alone_ends_10_trends(engine):
    # Isolating b7 with a window: WITHIN 7 EMIT CHANGES at t=7 counts the trends lying in
    # (0, 7], i.e. every trend ending at b2 or b7: 1 + 10 = 11; WITHIN 6 at t=7 drops every trend
    # that starts at a1 (7 - 1 = 6 is not < 6): b7's trends from a3/a4 only: a3 -> b7, a4 -> b7,
    # a3 -> a4 -> b7 = 3. (a4.count = 6 includes the three paths through a1.)
    ev = stream(FIG6)
    res = run("RETURN COUNT(*) PATTERN (SEQ(A+, B))+ WITHIN 7 EMIT CHANGES", ev, engine=engine)
    assert dict(rows(res))[7] == 11
    res = run("RETURN COUNT(*) PATTERN (SEQ(A+, B))+ WITHIN 6 EMIT CHANGES", ev, engine=engine)
    assert dict(rows(res))[7] == 3


def test_greta_figure6c_b7_and_a4_counts_via_matches():
    # Same numbers from the matches themselves: trends whose last event is b7 (b7.count = 10)
    # and prefixes ending at a4 (a4.count = 6: the trends of SEQ((SEQ(A+, B))+, A+) or A+ ending
    # at a4: A+ ending at a4: {a4, a1a4, a3a4, a1a3a4} = 4; (a1 b2)(a4 | a3 a4) = 2).
    ev = stream(FIG6)
    trends = match_sets("RETURN COUNT(*) PATTERN (SEQ(A+, B))+", ev)
    assert len(trends) == 43
    assert sum(1 for t in trends if t[-1] == "b7") == 10
    assert sum(1 for t in trends if t[-1] == "b2") == 1
    assert sum(1 for t in trends if t[-1] == "b9") == 32
    prefixes = (match_sets("RETURN COUNT(*) PATTERN A+", ev)
                + match_sets("RETURN COUNT(*) PATTERN SEQ((SEQ(A+, B))+, A+)", ev))
    assert sum(1 for t in prefixes if t[-1] == "a4") == 6
    # Section 4.2: the shortest trend is (a1, b2), the longest (a1, b2, a3, a4, b7, a8, b9)
    assert min(trends, key=len) == ("a1", "b2")
    assert max(trends, key=len) == ("a1", "b2", "a3", "a4", "b7", "a8", "b9")


def test_greta_figure6d_nested_negation(engine):
    # GRETA Example 2 / Example 4 / Figure 6(d): (SEQ(A+, NOT SEQ(C, NOT E, D), B))+.
    # e3 invalidates c2 (c2-d6 is not a match of SEQ(C, NOT E, D)); (c5, d6) is, and marks
    # a1, a3, a4 as invalid to connect to any b after d6: b7 cannot be inserted, b9 connects
    # only to a8. Trends: (a1 b2); one block ending at b9 = any subset of {a1, a3, a4} then a8, b9
    # (8); (a1 b2)(subset of {a3, a4}, a8, b9) (4). Total 13.
    # COUNT(A): 1 + (8 * 1 + 3 * 4) + (4 * 2 + 2 * 2) = 1 + 20 + 12 = 33.
    ev = stream(FIG6)
    q = "RETURN COUNT(*), COUNT(A) PATTERN (SEQ(A+, NOT SEQ(C, NOT E, D), B))+"
    assert rows(run(q, ev, engine=engine)) == [(13, 33)]
    # running count: b2 -> 1; b7 adds nothing (no valid predecessor), yet a row appears because
    # (a1 b2) lies before t=7; b9 -> 13
    res = run("RETURN COUNT(*) PATTERN (SEQ(A+, NOT SEQ(C, NOT E, D), B))+ EMIT CHANGES",
                     ev, engine=engine)
    assert rows(res) == [(2, 1), (7, 1), (9, 13)]


def test_greta_figure6d_without_inner_negation(engine):
    # Dropping NOT E: (c2, d6) now matches SEQ(C, D) as well and invalidates a1 (before c2)
    # for b's after d6 -- a1 is already invalid through (c5, d6). So the count stays 13.
    ev = stream(FIG6)
    res = run("RETURN COUNT(*) PATTERN (SEQ(A+, NOT SEQ(C, D), B))+", ev, engine=engine)
    assert rows(res) == [(13,)]


def test_greta_figure8_negated_end_and_start(engine):
    # GRETA Example 3 / Figure 8 (no numbers in the text; by hand under docs/semantics.md's strict
    # time comparisons). Stream a1 ... b9, a's at 1, 3, 4, 8, e3 at 3.
    ev = stream(FIG6)
    # 8(a) SEQ(A+, NOT E): no E after the last a (till the end of the input). e3 invalidates the
    # a's strictly before time 3: only trends ending at a1: {a1} -> 15 - 1 = 14.
    assert rows(run("RETURN COUNT(*) PATTERN SEQ(A+, NOT E)", ev, engine=engine)) == [(14,)]
    # 8(b) SEQ(NOT E, A+): no E before the first a. e3 invalidates a's strictly after 3: trends
    # starting at a1 (subsets of {a3, a4, a8}: 8) or a3 (subsets of {a4, a8}: 4) survive: 12.
    assert rows(run("RETURN COUNT(*) PATTERN SEQ(NOT E, A+)", ev, engine=engine)) == [(12,)]


# ====================================================================== GRETA Figure 12


def test_greta_figure12_each_aggregate(engine):
    # GRETA Figure 12 (a)-(d): COUNT(*)=11, COUNT(A)=20, MIN(A.attr)=4, SUM(A.attr)=100;
    # Example 8: MAX(A.attr)=6, AVG = SUM / COUNT(A) = 100 / 20 = 5. One query per aggregate,
    # with aliases.
    ev = stream(FIG12, attr=FIG12_ATTR)
    for agg, value in [("COUNT(*)", 11), ("COUNT(A)", 20), ("MIN(A.attr)", 4), ("MAX(A.attr)", 6),
                       ("SUM(A.attr)", 100), ("AVG(A.attr)", 5.0)]:
        res = run(f"RETURN {agg} AS v PATTERN (SEQ(A+, B))+", ev, engine=engine)
        assert res.columns == ["v"]
        assert rows(res) == [(value,)], agg


def test_greta_figure12_count_b(engine):
    # By hand: COUNT(B) over the 11 trends of Figure 3: 8 trends with one b, 3 with two -> 14.
    ev = stream(FIG12, attr=FIG12_ATTR)
    assert rows(run("RETURN COUNT(B) PATTERN (SEQ(A+, B))+", ev, engine=engine)) == [(14,)]


def test_greta_theorem91_sum_of_b_attr_is_null_when_b_has_none(engine):
    # b's carry no attr (null): SUM/MIN/MAX skip nulls, all-null gives null
    ev = stream(FIG12, attr=FIG12_ATTR)
    res = run("RETURN SUM(B.attr), MIN(B.attr), AVG(B.attr) PATTERN (SEQ(A+, B))+", ev, engine=engine)
    assert rows(res) == [(None, None, None)]


# ====================================================================== GRETA Figure 13 (Section 9)


def test_greta_figure13_repeated_types(engine):
    # GRETA Section 9 / Figure 13: SEQ(A+, B, A, A+, B+) = SEQ(A1+, B2, A3, A4+, B5+) over
    # a1, b2, a3, a4, b5. Sub-graph counts (Theorem 4.3 with "an event may not be its own
    # predecessor"): A1: a1=1, a3=2, a4=4; B2: b2=a1=1, b5=a1+a3+a4=7; A3: a3=b2=1, a4=b2=1;
    # A4: a4=a3(A3)=1; B5: b5=a4(A4)=1. Final count = B5 = 1: the single trend (a1,b2,a3,a4,b5).
    ev = stream(FIG13)
    q = "RETURN COUNT(*), COUNT(A), COUNT(B) PATTERN SEQ(A+, B, A, A+, B+)"
    # a name refers to all occurrences of its type: 3 a's and 2 b's in the trend
    assert rows(run(q, ev, engine=engine)) == [(1, 3, 2)]


def test_greta_figure13_subgraph_counts(engine):
    # The prefixes of SEQ(A1+, B2, A3, A4+, B5+) give the sub-graph counts above:
    ev = stream(FIG13)

    def count(pattern):
        return rows(run(f"RETURN COUNT(*) PATTERN {pattern}", ev, engine=engine))

    assert count("A+") == [(1 + 2 + 4,)]              # A1 sub-graph: a1, a3, a4
    assert count("SEQ(A+, B)") == [(1 + 7,)]          # B2: b2, b5
    assert count("SEQ(A+, B, A)") == [(1 + 1,)]       # A3: a3, a4
    assert count("SEQ(A+, B, A, A+)") == [(1,)]       # A4: a4
    assert count("SEQ(A+, B, A, A+, B+)") == [(1,)]   # B5: b5


def test_greta_figure13_event_in_several_subgraphs():
    # "a4 is inserted into the sub-graphs for A1, A3, and A4 ... b5 is inserted into the
    # sub-graphs for B2 and B5. b5 is an END event in the sub-graph for B5."
    ev = stream(FIG13)
    full = "SEQ(A x1+, B y2, A x3, A x4+, B y5+)"
    m = cepvec.matches(f"RETURN COUNT(*) PATTERN {full}", ev, limit=None)
    assert m.select("variable", "type", "time").rows() == [
        ("x1", "A", 1), ("y2", "B", 2), ("x3", "A", 3), ("x4", "A", 4), ("y5", "B", 5)]

    def last_vars(pattern):
        mm = cepvec.matches(f"RETURN COUNT(*) PATTERN {pattern}", ev, limit=None)
        last = mm.group_by("match").agg(pl.all().sort_by("position").last())
        return set(last.filter(pl.col("time").is_in([4, 5]))["variable"].to_list())

    # a4 ends prefixes at A1, A3 and A4
    assert last_vars("A x1+") == {"x1"}
    assert last_vars("SEQ(A x1+, B y2, A x3)") == {"x3"}
    assert last_vars("SEQ(A x1+, B y2, A x3, A x4+)") == {"x4"}
    # b5 ends prefixes at B2 and B5
    assert last_vars("SEQ(A x1+, B y2)") == {"y2"}
    assert last_vars(full) == {"y5"}


def test_greta_section9_same_type_twice_counts_assignments(engine):
    # GRETA Section 9: each occurrence of a repeated type is its own state (SEQ(A1+, A2+)) and
    # "an event may be inserted into several sub-graphs": a trend is a path through the states, so
    # the same events split differently between the occurrences are different trends.
    # SEQ(A+, A+) over a1 a2 a3: two events: 3 subsets x 1 split; three events: 2 splits -> 5.
    ev = stream("a1 a2 a3")
    assert rows(run("RETURN COUNT(*) PATTERN SEQ(A+, A+)", ev, engine=engine)) == [(5,)]
    listed = match_sets("RETURN COUNT(*) PATTERN SEQ(A+, A+)", ev)
    assert sorted(listed) == sorted([("a1", "a2"), ("a1", "a3"), ("a2", "a3"),
                                     ("a1", "a2", "a3"), ("a1", "a2", "a3")])


# ====================================================================== GRETA Section 6


def test_greta_example6_sliding_window(engine):
    # GRETA Example 6 / Figure 9: (SEQ(A+, B))+ within a 10-second window sliding every 3 seconds.
    # Under docs/semantics.md windows are [3k, 3k + 10), k >= 0, over the Figure 6 stream:
    # k=0 [0, 10): all events -> 43 (Figure 6(c)).
    # k=1 [3, 13): a3 a4 b7 a8 b9: blocks ending b7: A+ in {a3, a4} (3); single block ending b9:
    #   A+ in {a3, a4, a8} (7); (b7-block)(a8 b9): 3. Total 13.
    # k=2 [6, 16): b7 a8 b9 -> (a8 b9) = 1.  k=3 [9, 19): b9 alone -> no match, no row.
    res = run("RETURN COUNT(*) PATTERN (SEQ(A+, B))+ WITHIN 10 seconds SLIDE 3 seconds",
                     stream(FIG6), engine=engine)
    assert res.columns == ["window_start", "window_end", "COUNT(*)"]
    assert rows(res) == [(0, 10, 43), (3, 13, 13), (6, 16, 1)]


def test_greta_example7_edge_predicate(engine):
    # GRETA Example 7 / Figure 10: A.attr < NEXT(A).attr requires attr to increase from one a to
    # the next in a trend. Figure 10's values are not in the text; with a1.attr=5, a3.attr=6,
    # a4.attr=4, a8.attr=7 the edges are a1->a3, a1->a8, a3->a8, a4->a8 (4 < 7), and A+ counts
    # (Theorem 4.3): a1 = 1, a3 = 1 + 1 = 2, a4 = 1, a8 = 1 + 1 + 2 + 1 = 5. Total 9.
    ev = stream("a1 a3 a4 a8", attr={"a1": 5, "a3": 6, "a4": 4, "a8": 7})
    res = run("RETURN COUNT(*) PATTERN A+ WHERE A.attr < NEXT(A).attr", ev, engine=engine)
    assert rows(res) == [(9,)]


# ====================================================================== GRETA Section 2


PRICES = [10, 2, 9, 8, 7, 1, 6, 5, 4, 3]


def _price_stream() -> pl.DataFrame:
    return pl.DataFrame({"type": ["Stock"] * 10, "time": list(range(1, 11)), "price": PRICES})


def test_greta_section2_skip_till_any_match_down_trend(engine):
    # GRETA Section 2: for price records I = {10, 2, 9, 8, 7, 1, 6, 5, 4, 3}, skip-till-any-match
    # "is the only semantics that detects the down-trend (10, 9, 8, 7, 6, 5, 4, 3)".
    q = "RETURN COUNT(*) PATTERN Stock S+ WHERE S.price > NEXT(S).price"
    m = cepvec.matches(q, _price_stream(), limit=None)
    trends = [tuple(g.sort("position")["price"].to_list()) for _, g in m.group_by("match")]
    assert (10, 9, 8, 7, 6, 5, 4, 3) in trends
    # count by hand: c(x) = 1 + sum of c(y) over earlier y > x (strictly decreasing subsequences):
    # 10:1, 2:2, 9:2, 8:4, 7:8, 1:18, 6:16, 5:32, 4:64, 3:128 -> 275
    assert rows(run(q, _price_stream(), engine=engine)) == [(275,)]


def test_greta_section2_skip_till_next_match(engine):
    # GRETA Section 2: skip-till-next-match detects the shorter trends (10, 2), (9, 8, 7, 1) and
    # (6, 5, 4, 3), not the long one. docs/semantics.md: a strategy only removes edges (x -> y needs no
    # event z between x and y that x could be followed by): edges 10->2, 2->1, 9->8, 8->7, 7->1,
    # 6->5, 5->4, 4->3. Paths (any start): 10:1, 2:2, 9:1, 8:2, 7:3, 1:1+2+3=6, 6:1, 5:2, 4:3,
    # 3:4 -> 25.
    q = ("RETURN COUNT(*) PATTERN Stock S+ "
         "WHERE skip_till_next_match(S) { S.price > NEXT(S).price }")
    m = cepvec.matches(q, _price_stream(), limit=None)
    trends = [tuple(g.sort("position")["price"].to_list()) for _, g in m.group_by("match")]
    for t in [(10, 2), (9, 8, 7, 1), (6, 5, 4, 3)]:
        assert t in trends
    assert (10, 9, 8, 7, 6, 5, 4, 3) not in trends
    assert rows(run(q, _price_stream(), engine=engine)) == [(25,)]


# ====================================================================== GRETA Q1-Q3 (Section 1)


def test_greta_q1_down_trends_per_sector(engine):
    # GRETA Q1: RETURN sector, COUNT(*) PATTERN Stock S+ WHERE [company, sector] AND
    # S.price > NEXT(S).price GROUP-BY sector WITHIN 10 minutes SLIDE 10 seconds.
    # All events lie in [0, 10) s, so every trend falls into window k=0 = [0, 600) only.
    # tech/IBM prices 10@1, 8@3, 9@5, 7@7: decreasing subsequences c: 10:1, 8:2, 9:2, 7:1+1+2+2=6 -> 11
    # tech/MSFT 5@2, 4@4: 1 + 2 = 3 (never mixed with IBM: [company]) -> tech 14
    # energy/XOM 3@6, 2@8, 2@9: 3:1, 2@8: 2, 2@9: 1 + 1 (from 3; 2 > 2 is false) = 2 -> 5
    # The Quote event is not a Stock and is ignored.
    ev = pl.DataFrame({
        "type": ["Stock", "Stock", "Stock", "Stock", "Stock", "Stock", "Stock", "Quote", "Stock", "Stock"],
        "time": [1, 2, 3, 4, 5, 6, 7, 7, 8, 9],
        "company": ["IBM", "MSFT", "IBM", "MSFT", "IBM", "XOM", "IBM", "IBM", "XOM", "XOM"],
        "sector": ["tech", "tech", "tech", "tech", "tech", "energy", "tech", "tech", "energy", "energy"],
        "price": [10, 5, 8, 4, 9, 3, 7, 1, 2, 2],
    })
    q = ("RETURN sector, COUNT(*) PATTERN Stock S+ WHERE [company, sector] AND S.price > NEXT(S).price "
         "GROUP-BY sector WITHIN 10 minutes SLIDE 10 seconds")
    res = run(q, ev, engine=engine)
    assert res.columns == ["sector", "window_start", "window_end", "COUNT(*)"]
    assert rows(res) == [("energy", 0, 600, 5), ("tech", 0, 600, 14)]


def test_greta_q2_cpu_of_increasing_load_trends(engine):
    # GRETA Q2: RETURN mapper, SUM(M.cpu) PATTERN SEQ(Start S, Measurement M+, End E)
    # WHERE [job, mapper] AND M.load < NEXT(M).load GROUP-BY mapper WITHIN 1 minute SLIDE 30 seconds.
    # Windows [30k, 30k + 60).
    # m1/j1: S@1, M@2 (load 1, cpu 10), M@3 (3, 20), M@4 (2, 30), E@5, S@40, M@45 (1, 5), E@50.
    #   window k=0 [0, 60):
    #     S1..E5: increasing M+ in loads (1, 3, 2): {10}, {20}, {30}, {10,20}, {10,30} -> 5 trends,
    #       cpu 10 + 20 + 30 + 30 + 40 = 130
    #     S1..E50: the same 5 plus {M45} (load 1 follows nothing: loads before are >= 1) -> 6, cpu 135
    #     S40..E50: {M45} -> 1, cpu 5
    #     -> 12 trends, SUM 270
    #   window k=1 [30, 90): S40 M45 E50 -> 1 trend, SUM 5
    # m2/j1: S@10, M@11 (load 5, cpu 7), E@13 -> 1 trend, SUM 7, window k=0 only.
    #   M@12 belongs to job j2 (no S/E of j2): excluded by [job].
    ev = pl.DataFrame({
        "type": ["Start", "Measurement", "Measurement", "Measurement", "End",
                 "Start", "Measurement", "Measurement", "End",
                 "Start", "Measurement", "End"],
        "time": [1, 2, 3, 4, 5, 10, 11, 12, 13, 40, 45, 50],
        "job": ["j1", "j1", "j1", "j1", "j1", "j1", "j1", "j2", "j1", "j1", "j1", "j1"],
        "mapper": ["m1", "m1", "m1", "m1", "m1", "m2", "m2", "m2", "m2", "m1", "m1", "m1"],
        "load": [None, 1, 3, 2, None, None, 5, 6, None, None, 1, None],
        "cpu": [None, 10, 20, 30, None, None, 7, 8, None, None, 5, None],
    })
    q = ("RETURN mapper, SUM(M.cpu), COUNT(*) PATTERN SEQ(Start S, Measurement M+, End E) "
         "WHERE [job, mapper] AND M.load < NEXT(M).load GROUP-BY mapper WITHIN 1 minute SLIDE 30 seconds")
    res = run(q, ev, engine=engine)
    assert res.columns == ["mapper", "window_start", "window_end", "SUM(M.cpu)", "COUNT(*)"]
    assert rows(res) == [("m1", 0, 60, 270, 12), ("m1", 30, 90, 5, 1), ("m2", 0, 60, 7, 1)]


def test_greta_q3_slowdowns_without_accident(engine):
    # GRETA Q3: RETURN segment, COUNT(*), AVG(P.speed) PATTERN SEQ(NOT Accident A, Position P+)
    # WHERE [P.vehicle, segment] AND P.speed > NEXT(P).speed GROUP-BY segment
    # WITHIN 5 minutes SLIDE 1 minute. Windows [60k, 60k + 300); the negated start is checked from
    # the window start 60k (docs/semantics.md Negation): an accident in [60k, first P) kills the trend.
    # s1: v1 speeds 50@10, 40@20, 45@30, 20@40; v2 30@25; accident @35 (only first P < 35 survive).
    #   v1 starting 50: {50},{50,40},{50,45},{50,20},{50,40,20},{50,45,20} (6);
    #   starting 40: {40},{40,20}; starting 45: {45},{45,20}; starting 20@40: killed. v2: {30}.
    #   COUNT 11; SUM(speed) 50+90+95+70+110+115+40+60+45+65+30 = 770, COUNT(P) 20 -> AVG 38.5.
    #   All trends start before 60: window k=0 only.
    # s2: v3 speeds 60@5, 55@12, 50@15, 45@100, 44@110; accident @8.
    #   k=0 [0, 300): only trends starting at 60@5 survive; the rest of v3's speeds decrease, so
    #     every subset of {55, 50, 45, 44} follows: 16 trends, COUNT(P) 16 + 8*4 = 48,
    #     SUM 16*60 + 8*(55+50+45+44) = 2512 -> AVG 2512/48.
    #   k=1 [60, 360): the accident @8 is before the window: {45}, {44}, {45,44}: COUNT 3,
    #     SUM 45 + 44 + 89 = 178, COUNT(P) 4 -> AVG 44.5.
    ev = pl.DataFrame({
        "type": ["Position", "Accident", "Position", "Position", "Position", "Position", "Position",
                 "Position", "Accident", "Position", "Position", "Position"],
        "time": [5, 8, 10, 12, 15, 20, 25, 30, 35, 40, 100, 110],
        "segment": ["s2", "s2", "s1", "s2", "s2", "s1", "s1", "s1", "s1", "s1", "s2", "s2"],
        "vehicle": ["v3", None, "v1", "v3", "v3", "v1", "v2", "v1", None, "v1", "v3", "v3"],
        "speed": [60, None, 50, 55, 50, 40, 30, 45, None, 20, 45, 44],
    })
    q = ("RETURN segment, COUNT(*), AVG(P.speed) PATTERN SEQ(NOT Accident A, Position P+) "
         "WHERE [P.vehicle, segment] AND P.speed > NEXT(P).speed GROUP-BY segment "
         "WITHIN 5 minutes SLIDE 1 minute")
    res = run(q, ev, engine=engine)
    assert res.columns == ["segment", "window_start", "window_end", "COUNT(*)", "AVG(P.speed)"]
    got = rows(res)
    want = [("s1", 0, 300, 11, 38.5), ("s2", 0, 300, 16, 2512 / 48), ("s2", 60, 360, 3, 44.5)]
    assert [r[:4] for r in got] == [r[:4] for r in want]
    for g, w in zip(got, want):
        assert math.isclose(g[4], w[4], rel_tol=1e-12)


# ====================================================================== A-Seq


def test_aseq_example1_stack_based(engine):
    # A-Seq Example 1 / Figure 1: SEQ(TypeUsername a, TypePassword b, ClickSubmit c) WITHIN 5s.
    # a1, b2, c3, c4, b6: c3 forms <a1, b2, c3> -> count 1; c4 forms <a1, b2, c4> -> 2; at b6 a1 is
    # purged (6 - 1 = 5 is not < 5) and the count drops to 0 -- b6 is no END event, so no row.
    ev = pl.DataFrame({"type": ["TypeUsername", "TypePassword", "ClickSubmit", "ClickSubmit", "TypePassword"],
                       "time": [1, 2, 3, 4, 6]})
    q = "PATTERN SEQ(TypeUsername a, TypePassword b, ClickSubmit c) AGG COUNT WITHIN 5s EMIT CHANGES"
    res = run(q, ev, engine=engine)
    assert res.columns == ["time", "COUNT"]
    assert rows(res) == [(3, 1), (4, 2)]


def test_aseq_figure2_dynamic_prefix_counting(engine):
    # A-Seq Section 3.1 / Figure 2, pattern (A, B, C): at t_i one match (a1, b1, c1) and a2
    # waiting; b2 at t_{i+1} forms (a1, b2), (a2, b2); c2 at t_{i+2} forms 3 new matches:
    # total 4, with count(A,B,C)_{t_{i+1}} = 1 and count(A,B)_{t_{i+1}} = 3.
    # Stream (our times): a1@1 b1@2 c1@3 a2@4 b2@5 c2@6.
    ev = stream("a1 b2 c3 a4 b5 c6")
    res = run("PATTERN SEQ(A, B, C) AGG COUNT EMIT CHANGES", ev, engine=engine)
    assert rows(res) == [(3, 1), (6, 4)]
    res = run("PATTERN SEQ(A, B) AGG COUNT EMIT CHANGES", ev, engine=engine)
    assert rows(res) == [(2, 1), (5, 3)]  # count(A,B) = 3 at t_{i+1}


def test_aseq_example2_prefix_counters(engine):
    # A-Seq Example 2 / Figure 4, pattern (A, B, C, D): before b arrives at t_{i+1},
    # count(A) = 3 and count(A, B) = 2; after it, count(A, B) = 3 + 2 = 5; the other prefix counts
    # are unchanged; d (a TRIG) returns the count of (A, B, C, D).
    # Figure 4's stream is not in the text; this one reproduces the stated counts:
    # a1 a2 b3 a4 | b5 (t_{i+1}) | c6 | d7. Then count(A,B,C) = 5 and (A,B,C,D) = 5 at d7.
    ev = stream("a1 a2 b3 a4 b5 c6 d7")
    assert rows(run("PATTERN A AGG COUNT EMIT CHANGES", ev, engine=engine))[-1] == (4, 3)
    assert rows(run("PATTERN SEQ(A, B) AGG COUNT EMIT CHANGES", ev, engine=engine)) == [(3, 2), (5, 5)]
    assert rows(run("PATTERN SEQ(A, B, C) AGG COUNT EMIT CHANGES", ev, engine=engine)) == [(6, 5)]
    assert rows(run("PATTERN SEQ(A, B, C, D) AGG COUNT EMIT CHANGES", ev, engine=engine)) == [(7, 5)]


def test_aseq_example3_start_event_marking(engine):
    # A-Seq Example 3 / Figure 6, pattern (A, B, C, D), Q.win = 7s. Text: a1 at t=1s
    # (Exp = 8s), b1, c1, a2 at t=4s, then c2 and b2, d1 at t=7s: output 2 = 2 (a1) + 0 (a2).
    # c3 at t=8s: a1 expires (a count at t=8 would be 0). Then "a3 and [d2]" arrive: output 1.
    # Times not in the text are ours: b1@2, c1@3, c2@5, b2@6, a3@9, d2@10.
    # By hand: d1@7: a1's (a1,b1,c1,d1), (a1,b1,c2,d1) = 2; a2 needs b after 4 and c after it
    # before 7: b2@6 has no later c before 7 -> 0. d2@10: window (3, 10]: a1 gone; a2: (a2, b2, c3, d2)
    # = 1; a3@9 has no b after it -> 1.
    ev = stream("a1 b2 c3 a4 c5 b6 d7 c8 a9 d10")
    q = "PATTERN SEQ(A, B, C, D) AGG COUNT WITHIN 7 s EMIT CHANGES"
    assert rows(run(q, ev, engine=engine)) == [(7, 2), (10, 1)]
    # "If users require a result at this moment [t=8], the output would be 0": with integer times
    # the A-Seq window (8 - 7, 8] is the SLIDE window [2, 9), which holds no match, so no row.
    # By hand: a1's two matches span [1, 7] and fit only [1, 8) ([0, 7) excludes d7); (a4, b6, c8,
    # d10) fits only [4, 11).
    res = run("PATTERN SEQ(A, B, C, D) AGG COUNT WITHIN 7 s SLIDE 1 s", ev, engine=engine)
    assert rows(res) == [(1, 8, 2), (4, 11, 1)]


def test_aseq_example4_negation_recount(engine):
    # A-Seq Example 4 / Figure 7, pattern (A, B, !C, D): c1 at t=3s clears count(A, B) to 0,
    # (A) and (A, B, D) are kept; "the output result is 2 when d1 arrives"; <a1, b1, d1> is not
    # counted since c1 lies between b1 and d1. Times other than c1@3 are ours:
    # a1@1 b1@2 c1@3 a2@4 b2@5 d1@6 -> (a1, b2, d1), (a2, b2, d1) = 2.
    ev = stream("a1 b2 c3 a4 b5 d6")
    q = "PATTERN SEQ(A, B, !C, D) AGG COUNT WITHIN 10 s EMIT CHANGES"
    assert rows(run(q, ev, engine=engine)) == [(6, 2)]
    assert sorted(match_sets(q, ev)) == [("a1", "b5", "d6"), ("a4", "b5", "d6")]
    # the same in the SASE and GRETA forms
    assert rows(run("EVENT SEQ(A, B, ~C, D) WITHIN 10 s EMIT CHANGES RETURN COUNT(*)", ev,
                           engine=engine)) == [(6, 2)]
    assert rows(run("RETURN COUNT(*) PATTERN SEQ(A, B, NOT C, D) WITHIN 10 s EMIT CHANGES", ev,
                           engine=engine)) == [(6, 2)]


def test_aseq_example5_hashed_prefix_counters(engine):
    # A-Seq Example 5 / Figure 8: an equivalence test on id partitions the stream; a1 and a4 have
    # id 1. By hand, pattern (A, B) with [id], a1(id1) b2(id2) b3(id1) a4(id1) b5(id1) a6(id2) b7(id2):
    # id1: (a1,b3), (a1,b5), (a4,b5) = 3; id2: (a6, b7) = 1 (b2 precedes a6). Total 4; with
    # GROUP BY id one row per partition.
    ev = stream("a1 b2 b3 a4 b5 a6 b7", id={"a1": 1, "b2": 2, "b3": 1, "a4": 1, "b5": 1, "a6": 2, "b7": 2})
    assert rows(run("PATTERN SEQ(A, B) WHERE [id] AGG COUNT", ev, engine=engine)) == [(4,)]
    res = run("RETURN id, COUNT(*) PATTERN SEQ(A, B) GROUP-BY id", ev, engine=engine)
    assert rows(res) == [(1, 3), (2, 1)]

"""``cepvec.matches``: the matches themselves, on small streams (expected listings by hand)."""

from __future__ import annotations

import datetime as dt

import polars as pl
import pytest

import cepvec
from cepvec import CepvecPlanError


def stream(spec: str, **attrs: dict) -> pl.DataFrame:
    """``"a1 b2"`` -> events (A, 1), (B, 2); ``attrs={"x": {"a1": 5}}`` sets attribute values."""
    names = spec.split()
    data: dict[str, list] = {"type": [n[0].upper() for n in names], "time": [int(n[1:]) for n in names]}
    for col, values in attrs.items():
        data[col] = [values.get(n) for n in names]
    return pl.DataFrame(data)


def listing(m: pl.DataFrame, *extra: str) -> list[tuple]:
    """One tuple per match listing: (extra columns of its first row..., event names in order)."""
    out = []
    for _, g in m.group_by("match", maintain_order=True):
        assert g["position"].to_list() == list(range(g.height))
        head = tuple(g[c][0] for c in extra)
        out.append(head + (tuple(f"{t.lower()}{s}" for t, s in zip(g["type"], g["time"])),))
    return out


# ====================================================================== columns


def test_columns_without_window():
    m = cepvec.matches("RETURN COUNT(*) PATTERN SEQ(A, B)", stream("a1 b2", x={"a1": 7}))
    assert m.columns == ["match", "position", "variable", "type", "time", "x"]
    assert m.schema["match"] == pl.Int64 and m.schema["position"] == pl.Int64
    assert m.schema["variable"] == pl.String
    assert m.rows() == [(0, 0, "A", "A", 1, 7), (0, 1, "B", "B", 2, None)]


def test_columns_with_group_by_and_clashing_names():
    # group attributes come after "match"; an input column with the same name is renamed event_<name>
    ev = stream("a1 b2", g={"a1": "u", "b2": "u"})
    m = cepvec.matches("RETURN g, COUNT(*) PATTERN SEQ(A, B) GROUP-BY g", ev)
    assert m.columns == ["match", "g", "position", "variable", "type", "time", "event_g"]
    assert m.rows() == [(0, "u", 0, "A", "A", 1, "u"), (0, "u", 1, "B", "B", 2, "u")]
    # the label of the group column follows AS; the input column keeps its name then
    m = cepvec.matches("RETURN g AS grp, COUNT(*) PATTERN SEQ(A, B) GROUP-BY g", ev)
    assert m.columns == ["match", "grp", "position", "variable", "type", "time", "g"]


def test_columns_with_slide():
    m = cepvec.matches("RETURN COUNT(*) PATTERN SEQ(A, B) WITHIN 5 SLIDE 5", stream("a1 b2"))
    assert m.columns == ["match", "window_start", "window_end", "position", "variable", "type", "time"]
    assert m.rows() == [(0, 0, 5, 0, "A", "A", 1), (0, 0, 5, 1, "B", "B", 2)]


def test_columns_with_emit_changes():
    # the EMIT time is named <time column>_emit, next to the event's own time column
    m = cepvec.matches("RETURN COUNT(*) PATTERN SEQ(A, B) WITHIN 5 EMIT CHANGES", stream("a1 b2"))
    assert m.columns == ["match", "time_emit", "position", "variable", "type", "time"]
    assert m.rows() == [(0, 2, 0, "A", "A", 1), (0, 2, 1, "B", "B", 2)]


def test_variables_are_the_names_written():
    # explicit variables; a repeated type gets one variable per occurrence
    ev = stream("a1 b2 a3")
    m = cepvec.matches("RETURN COUNT(*) PATTERN SEQ(A x, B, A y)", ev)
    assert m["variable"].to_list() == ["x", "B", "y"]
    m = cepvec.matches("RETURN COUNT(*) PATTERN SEQ(A, B, A)", ev)
    assert m["variable"].to_list() == ["A", "B", "A"]


def test_negated_events_are_not_listed():
    # SEQ(A, NOT C, B) over a1 b2 c3 a4 b5: (a1 b2), (a4 b5); (a1 b5) has c3 between
    m = cepvec.matches("RETURN COUNT(*) PATTERN SEQ(A, NOT C, B)", stream("a1 b2 c3 a4 b5"))
    assert listing(m) == [(("a1", "b2"),), (("a4", "b5"),)]
    assert "C" not in m["type"].to_list()


def test_timestamp_window_columns_keep_dtype():
    base = dt.datetime(2024, 1, 1)
    ev = pl.DataFrame({"type": ["A", "B"], "time": [base, base + dt.timedelta(seconds=1)]}).with_columns(
        pl.col("time").dt.replace_time_zone("UTC"))
    m = cepvec.matches("RETURN COUNT(*) PATTERN SEQ(A, B) WITHIN 10 s SLIDE 10 s", ev)
    assert m.schema["window_start"] == ev.schema["time"] == m.schema["window_end"]
    assert m["window_start"][0] == ev["time"][0]
    m = cepvec.matches("RETURN COUNT(*) PATTERN SEQ(A, B) WITHIN 10 s EMIT CHANGES", ev)
    assert m.schema["time_emit"] == ev.schema["time"]
    assert m["time_emit"].to_list() == [ev["time"][1]] * 2


@pytest.mark.parametrize("convert", [lambda d: d.to_pandas(), lambda d: d.to_arrow()], ids=["pandas", "arrow"])
def test_other_input_formats(convert):
    ev = stream("a1 b2 b3")
    want = cepvec.matches("RETURN COUNT(*) PATTERN SEQ(A, B)", ev)
    got = cepvec.matches("RETURN COUNT(*) PATTERN SEQ(A, B)", convert(ev))
    assert got.rows() == want.rows()


# ====================================================================== ordering


def test_matches_are_numbered_densely_and_positions_ascend():
    # (SEQ(A+, B))+ over a1 b2 a3 a4 b7: the 11 trends of GRETA Figure 3
    m = cepvec.matches("RETURN COUNT(*) PATTERN (SEQ(A+, B))+", stream("a1 b2 a3 a4 b7"), limit=None)
    assert m["match"].unique(maintain_order=True).to_list() == list(range(11))
    assert m["match"].is_sorted()
    for _, g in m.group_by("match"):
        assert g["position"].to_list() == list(range(g.height))
        assert g["time"].is_sorted() and g["time"].n_unique() == g.height  # strictly increasing times


def test_ordering_by_group_then_window():
    # groups ordered with nulls last, whatever order they appear in the input
    ev = stream("a1 b2 a3 b4 a5 b6", g={"a1": None, "b2": None, "a3": "z", "b4": "z", "a5": "k", "b6": "k"})
    m = cepvec.matches("RETURN g, COUNT(*) PATTERN SEQ(A, B) GROUP-BY g", ev, limit=None)
    assert listing(m, "g") == [("k", ("a5", "b6")), ("z", ("a3", "b4")), (None, ("a1", "b2"))]


def test_slide_windows_listed_per_window():
    # SEQ(A, B) WITHIN 4 SLIDE 1 over a1 b2 b5: windows [k, k + 4), k >= 0.
    # (a1 b2) lies in [0, 4) and [1, 5); (a1 b5) spans 4 (not < 4); there is no A after 1.
    # Each (window, match) pair is one listing with its own match id, windows in order.
    m = cepvec.matches("RETURN COUNT(*) PATTERN SEQ(A, B) WITHIN 4 SLIDE 1", stream("a1 b2 b5"), limit=None)
    assert listing(m, "window_start", "window_end") == [(0, 4, ("a1", "b2")), (1, 5, ("a1", "b2"))]
    assert m["match"].unique().to_list() == [0, 1]


def test_slide_listings_agree_with_run():
    # per (window) the number of listed matches is the COUNT(*) of run
    ev = stream("a1 b2 a3 b4 a5 b6")
    q = "RETURN COUNT(*) PATTERN SEQ(A, B) WITHIN 3 SLIDE 2"
    m = cepvec.matches(q, ev, limit=None)
    per_window = (m.group_by("window_start", "window_end").agg(pl.col("match").n_unique().alias("n"))
                  .sort("window_start"))
    res = cepvec.run(q, ev, engine="reference")
    assert per_window.rows() == res.rows()
    # by hand: windows [0, 3), [2, 5), [4, 7): (a1 b2) in [0, 3); (a3 b4) in [2, 5); (a5 b6) in [4, 7);
    # (a1 b4), (a3 b6) span 3: in none
    assert res.rows() == [(0, 3, 1), (2, 5, 1), (4, 7, 1)]


def test_emit_changes_listed_per_output_time():
    # SEQ(A, B) WITHIN 10 EMIT CHANGES over a1 b2 b3: at t=2 (a1 b2); at t=3 (a1 b2), (a1 b3)
    m = cepvec.matches("RETURN COUNT(*) PATTERN SEQ(A, B) WITHIN 10 EMIT CHANGES", stream("a1 b2 b3"), limit=None)
    assert listing(m, "time_emit") == [(2, ("a1", "b2")), (3, ("a1", "b2")), (3, ("a1", "b3"))]


def test_matches_of_the_window_only():
    # WITHIN 2 alone: (a1 b2) and (a3 b4) qualify; (a1 b4) spans 3
    m = cepvec.matches("RETURN COUNT(*) PATTERN SEQ(A, B) WITHIN 2", stream("a1 b2 a3 b4"), limit=None)
    assert sorted(t for (t,) in listing(m)) == [("a1", "b2"), ("a3", "b4")]


def test_negated_start_counts_only_listed_matches():
    # SEQ(NOT C, A, B) WITHIN 4 over c1 a2 b3 a5 b6 (docs/semantics.md: with WITHIN alone a C kills a
    # match when it ends before its first event and starts after last - 4):
    # (a2 b3): c1 ends before a2 and 1 > 3 - 4 -> not listed; (a5 b6): 1 > 6 - 4 is false -> listed;
    # (a2 b6) spans 4 -> outside the window.
    m = cepvec.matches("RETURN COUNT(*) PATTERN SEQ(NOT C, A, B) WITHIN 4", stream("c1 a2 b3 a5 b6"), limit=None)
    assert listing(m) == [(("a5", "b6"),)]


def test_unsorted_input_is_listed_in_time_order():
    ev = stream("b2 a1")
    m = cepvec.matches("RETURN COUNT(*) PATTERN SEQ(A, B)", ev)
    assert listing(m) == [(("a1", "b2"),)]


# ====================================================================== limit


def test_default_limit_is_1000():
    # A+ over 10 a's: 2^10 - 1 = 1023 matches
    ev = pl.DataFrame({"type": ["A"] * 10, "time": list(range(10))})
    assert cepvec.matches("RETURN COUNT(*) PATTERN A+", ev)["match"].n_unique() == 1000
    assert cepvec.matches("RETURN COUNT(*) PATTERN A+", ev, limit=None)["match"].n_unique() == 1023
    assert cepvec.matches("RETURN COUNT(*) PATTERN A+", ev, limit=5)["match"].n_unique() == 5


def test_limit_larger_than_the_number_of_matches():
    m = cepvec.matches("RETURN COUNT(*) PATTERN SEQ(A, B)", stream("a1 b2 b3"), limit=50)
    assert listing(m) == [(("a1", "b2"),), (("a1", "b3"),)]


def test_limit_counts_window_listings():
    # with SLIDE a match listed in two windows is two listings; limit=1 keeps the first
    m = cepvec.matches("RETURN COUNT(*) PATTERN SEQ(A, B) WITHIN 4 SLIDE 1", stream("a1 b2 b5"), limit=1)
    assert listing(m, "window_start") == [(0, ("a1", "b2"))]


def test_limit_stops_the_enumeration_early():
    # docs/semantics.md: matches(limit=k) stops building matches after k (the enumeration is
    # exponential, so the limit must bound the work). The reference engine enumerates partitions
    # in the order they first appear in the input, so its k matches come from the earliest
    # partitions ("z" here), and the listing of those k is ordered by group as usual; the match
    # engine enumerates in listing order, so its k matches are the first k of the full listing.
    ev = stream("a1 b2 a3 b4", g={"a1": "z", "b2": "z", "a3": "k", "b4": "k"})
    q = "RETURN g, COUNT(*) PATTERN SEQ(A, B) GROUP-BY g"
    for engine in ("reference", "match"):
        full = cepvec.matches(q, ev, limit=None, engine=engine)
        assert listing(full, "g") == [("k", ("a3", "b4")), ("z", ("a1", "b2"))]
    assert listing(cepvec.matches(q, ev, limit=1, engine="reference"), "g") == [("z", ("a1", "b2"))]
    assert listing(cepvec.matches(q, ev, limit=1, engine="match"), "g") == [("k", ("a3", "b4"))]
    assert listing(cepvec.matches(q, ev, limit=1), "g") == [("k", ("a3", "b4"))]


@pytest.mark.parametrize("bad", [0, -1, 2.5, "10"])
def test_bad_limit(bad):
    with pytest.raises(CepvecPlanError) as info:
        cepvec.matches("RETURN COUNT(*) PATTERN SEQ(A, B)", stream("a1 b2"), limit=bad)
    assert str(info.value) == f"limit must be a positive integer or None; found {bad!r}"


def test_no_matches_gives_an_empty_frame_with_the_columns():
    m = cepvec.matches("RETURN COUNT(*) PATTERN SEQ(B, A)", stream("a1 b2", x={"a1": 1}))
    assert m.height == 0
    assert m.columns == ["match", "position", "variable", "type", "time", "x"]

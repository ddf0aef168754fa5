"""The match engine (cepvec/paths/match, kernels/match.py) lists exactly the reference engine's matches.

* Hypothesis: generated queries (every pattern shape of tests/strategies.py, local and edge
  predicates, equivalences, GROUP-BY, negation at the start, middle and end, no window and
  WITHIN) under each of the four event selection strategies, over small streams: the same set
  of matches (each as its events with variables), in batches of any size, long and wide.
* Exhaustive tiny streams for shapes where the strategies differ most.
* Queries it cannot run are refused by engine="match" and answered by the reference engine
  under engine="auto".
"""

from __future__ import annotations

from collections import Counter

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import cepvec
from cepvec.paths.match import match_batches, match_support
from cepvec.registry import choose
from cepvec.runtime.prepare import prepare
from tests.strategies import SLOW, examples, make_frame, queries, streams, sweep_size, tiny_streams
from tests.test_oracle_agreement import rows_differ

pytestmark = pytest.mark.filterwarnings("ignore::cepvec.errors.CepvecWarning")

STRATEGIES = ("skip_till_any_match", "skip_till_next_match", "partition_contiguity", "strict_contiguity")


def with_strategy(text: str, strategy: str) -> str:
    """``text`` with its WHERE clause wrapped in ``strategy(...) { }`` (a WHERE is added if needed)."""
    if strategy == "skip_till_any_match":
        return text
    if " WHERE " in text:
        return text.replace(" WHERE ", f" WHERE {strategy}() {{ }} AND ", 1)
    cut = min([text.index(k) for k in (" GROUP-BY", " WITHIN", " EMIT") if k in text] + [len(text)])
    return f"{text[:cut]} WHERE {strategy}() {{ }}{text[cut:]}"


def match_set(m: pl.DataFrame) -> Counter:
    """The matches of a long listing as a multiset of tuples of (variable, event columns...)."""
    out: Counter = Counter()
    if not m.height:
        return out
    assert m["match"].to_list() == sorted(m["match"].to_list())
    ids = m["match"].unique(maintain_order=True).to_list()
    assert ids == list(range(len(ids))), "match ids are 0, 1, 2, ... in listing order"
    rest = [c for c in m.columns if c not in ("match", "position")]
    groups: dict = {}  # match id -> its rows, in listing order
    for match, position, *r in m.select(["match", "position", *rest]).iter_rows():
        g = groups.setdefault(match, [])
        assert position == len(g)
        g.append(tuple("NaN" if v != v else v for v in r))
    for g in groups.values():
        out[tuple(g)] += 1
    return out


def check(text: str, df: pl.DataFrame) -> None:
    q = cepvec.compile(text)
    if match_support(q, df.schema) is not None:
        with pytest.raises(cepvec.UnsupportedByEngine, match="cannot"):
            cepvec.matches(q, df, limit=None, engine="match")
        return
    want = cepvec.matches(q, df, limit=None, engine="reference")
    got = cepvec.matches(q, df, limit=None, engine="match")
    assert got.schema == want.schema, text
    assert match_set(got) == match_set(want), f"{text}\n{df}\nmatch engine:\n{got}\nreference:\n{want}"
    # whole matches per output batch, any batch size (a match a batch: on the first 64; a seventh of the
    # rows a batch: on all); the groups come in run's order
    prep = prepare(q, df)
    small = pl.concat(list(match_batches(q, prep, batch_rows=1, limit=64)))
    assert small.equals(got.filter(pl.col("match") < 64))
    assert pl.concat(list(match_batches(q, prep, batch_rows=max(1, got.height // 7)))).equals(got)
    if q.group_labels and got.height:
        firsts = got.group_by("match", maintain_order=True).first()
        assert firsts.select(q.group_labels).rows() == firsts.sort(
            list(q.group_labels), nulls_last=True, maintain_order=True).select(q.group_labels).rows()
    # wide: one row per match, the same events
    wide = cepvec.matches(q, df, limit=None, format="wide")
    assert wide.height == len(match_set(got)) or wide.height == got["match"].n_unique()
    if got.height:
        assert wide["variable"].to_list() == got.group_by("match", maintain_order=True).agg("variable")[
            "variable"].to_list()
    # limit: the first k of the full listing
    k = max(1, got["match"].n_unique() // 2) if got.height else 1
    assert cepvec.matches(q, df, limit=k, engine="match").equals(got.filter(pl.col("match") < k))


@st.composite
def _case(draw):
    window = draw(st.sampled_from(["", "", " WITHIN 1", " WITHIN 2", " WITHIN 4"]))
    text = draw(queries(window=window))
    text = with_strategy(text, draw(st.sampled_from(STRATEGIES)))
    qtypes = [t for t in cepvec.compile(text).event_types if t in "ABCD"]
    types = "ABCD" if not qtypes or draw(st.integers(0, 4)) == 0 else qtypes
    return text, draw(streams(max_events=8, types=types))


@settings(max_examples=examples(250), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_case())
def test_match_engine_agrees_with_reference(case):
    text, df = case
    check(text, df)


SHAPES = ["SEQ(A, B)", "SEQ(A+, B)", "SEQ(A, B+, C)", "(SEQ(A+, B))+", "SEQ(A, NOT C, B)", "SEQ(NOT C, A, B)",
          "SEQ(A, B, NOT C)", "SEQ(A+, NOT SEQ(C, C), B)"]


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("shape", SHAPES)
def test_exhaustive_tiny_streams(shape, strategy):
    # every stream of tiny_streams at once: stream k is partition id=k, shifted to times 100 k + ...,
    # so no match, negation or contiguity test reaches from one stream into another
    rows = [(ty, 100 * k + t, k, i + 1, 0.5)
            for k, ev in enumerate(tiny_streams(sweep_size(5), times=(0, 1, 2, 4))) for i, (t, ty) in enumerate(ev)]
    df = make_frame(rows)
    edge = " AND A.x <= NEXT(B).x + 2" if "B" in shape else ""
    # default profile: one of the two windows per (shape, strategy), alternating, so each shape and each
    # strategy meets both; --slow runs both everywhere
    windows = ("", " WITHIN 3")
    if not SLOW:
        windows = (windows[(SHAPES.index(shape) + STRATEGIES.index(strategy)) % 2],)
    for window in windows:
        check(with_strategy(f"RETURN COUNT(*) PATTERN {shape} WHERE [id]{edge}{window}", strategy), df)


def test_refused_queries_go_to_the_reference_engine():
    df = make_frame([("A", 1, 0, 1, 0.5), ("B", 2, 0, 2, 0.5), ("B", 3, 1, 3, 0.5)])
    text = "RETURN COUNT(*) PATTERN SEQ(A, B) WITHIN 4 SLIDE 2"
    with pytest.raises(cepvec.UnsupportedByEngine) as info:
        cepvec.matches(text, df, engine="match")
    assert str(info.value) == (
        "engine='match' cannot list the matches of query 'RETURN COUNT(*) PATTERN SEQ(A, B) WITHIN 4 SLIDE 2': "
        "a SLIDE window (a match is listed once per window; the match engine lists WITHIN and no window). "
        "Use engine='reference' (exponential) or engine='auto'")
    assert cepvec.matches(text, df).equals(cepvec.matches(text, df, engine="reference"))


def test_bad_engine_and_format():
    df = make_frame([("A", 1, 0, 1, 0.5)])
    with pytest.raises(cepvec.UnsupportedByEngine, match="unknown engine 'greta' for cepvec.matches; choose one "
                                                          "of: auto, match, reference"):
        cepvec.matches("RETURN COUNT(*) PATTERN A", df, engine="greta")
    with pytest.raises(cepvec.CepvecPlanError, match="format must be 'long' or 'wide'; found 'tall'"):
        cepvec.matches("RETURN COUNT(*) PATTERN A", df, format="tall")


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_case(), st.sampled_from(["int64", "float64"]))
def test_aggregates_over_matches_agree_with_reference(case, numeric):
    # engine="auto" aggregates over the match engine's matches where no online path runs the query
    text, df = case
    q = cepvec.compile(text)
    if choose(q, "auto", df.schema).engine != "match":
        return
    got = cepvec.run(q, df, numeric=numeric).to_dicts()
    want = cepvec.run(q, df, engine="reference", numeric=numeric).to_dicts()
    assert rows_differ(got, want) is None, f"{text}\n{df}\n{got}\n{want}"


def test_aggregates_over_matches_overflow():
    # SUM over matches leaves int64: the same error as the other engines, float64 gives the value
    big = 2**62
    df = make_frame([("A", 1, 0, big, 0.5), ("A", 2, 0, big, 0.5), ("B", 3, 0, 1, 0.5)])
    text = "RETURN SUM(A.x) PATTERN SEQ(A+, B) WHERE skip_till_next_match() { }"
    assert choose(cepvec.compile(text), "auto").engine == "match"
    with pytest.raises(cepvec.CepvecOverflowError, match="overflows in SUM"):
        cepvec.run(text, df)
    assert cepvec.run(text, df, numeric="float64")["SUM(A.x)"].to_list() == [float(3 * big)]


POSITION_PATTERNS = ["SEQ(A+ a[], B)", "SEQ(B, A+ a[])", "SEQ(B, A+ a[], C)", "(SEQ(A+ a[], B))+", "A+ a[]",
                     "SEQ(A+ a[], NOT C, B)"]
POSITION_PREDICATES = ["a[1].x > 3", "a[a.LEN].x < 5", "a[1].x > 3 AND a[a.LEN].x <= 6", "a[1].v < 0.5",
                       "a[1].x > 2 AND a[i].x > a[i-1].x"]


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(POSITION_PATTERNS), st.sampled_from(POSITION_PREDICATES), st.sampled_from(STRATEGIES),
       st.sampled_from(["", " WITHIN 3"]), streams(max_events=8, types="ABC"))
def test_first_and_last_element_predicates(pattern, pred, strategy, window, df):
    # SASE+ a[1] / a[a.LEN] alone: the match engine and the reference engine list the same matches,
    # and cepvec.run (aggregates over the match engine's matches) gives the reference engine's rows
    text = with_strategy(f"RETURN COUNT(*), SUM(a.x) PATTERN {pattern} WHERE {pred}{window}", strategy)
    check(text, df)
    q = cepvec.compile(text)
    if q.position_texts or strategy != "skip_till_any_match":  # else an online path runs it
        assert choose(q, "auto", df.schema).engine == "match"
    got, want = cepvec.run(q, df).to_dicts(), cepvec.run(q, df, engine="reference").to_dicts()
    assert rows_differ(got, want) is None, f"{text}\n{df}\n{got}\n{want}"


def test_first_element_by_hand():
    # SASE+ Query 3's shape: runs of rising x that start at a multiple of 5, then a B
    df = make_frame([("A", 1, 0, 5, 0.5), ("A", 2, 0, 7, 0.5), ("A", 3, 0, 6, 0.5), ("A", 4, 0, 10, 0.5),
                     ("B", 5, 0, 0, 0.5)])
    text = ("RETURN COUNT(*) PATTERN SEQ(A+ a[], B b) WHERE skip_till_next_match(a[], b) "
            "{ a[1].x % 5 = 0 AND a[i].x > a[i-1].x }")
    m = cepvec.matches(text, df, limit=None)
    runs = sorted(tuple(g["time"].to_list()) for _, g in m.group_by("match"))
    # runs start at x = 5 (t1) or x = 10 (t4). Skip till next match: after t1 the next event that
    # continues the run is t2 (7 > 5), which ends t1's other options (b5 comes later); after t2 it is
    # t4 (10 > 7; t3's 6 is not rising), after t4 the B at t5
    assert runs == [(1, 2, 4, 5), (4, 5)]


def test_docs_worked_example():
    # docs/matching.md, "Worked example": the four strategies over the same eight stock events
    ev = pl.DataFrame({"type": ["Stock"] * 8, "time": list(range(1, 9)), "symbol": list("XXYXXYXX"),
                       "price": [10, 12, 50, 11, 13, 40, 15, 9],
                       "volume": [900, 800, 700, 900, 600, 120, 700, 100]})
    want = {
        "strict_contiguity": set(),
        "partition_contiguity": {"e4 e5 e7 e8"},
        "skip_till_next_match": {"e4 e5 e7 e8", "e1 e2 e5 e7 e8"},
        # every rising subsequence of e1 e2 e4 e5 e7 (prices 10 12 11 13 15) from e1 or e4, then e8
        "skip_till_any_match": {" ".join(f"e{t}" for t in run) + " e8" for run in [
            (1,), (1, 2), (1, 4), (1, 5), (1, 7), (1, 2, 5), (1, 2, 7), (1, 4, 5), (1, 4, 7), (1, 5, 7),
            (1, 2, 5, 7), (1, 4, 5, 7), (4,), (4, 5), (4, 7), (4, 5, 7)]},
    }
    for strategy, runs in want.items():
        text = (f"RETURN COUNT(*) PATTERN SEQ(Stock+ a[], Stock b) WHERE {strategy}(a[], b) {{ [symbol] AND "
                "a[1].volume > 800 AND a[i].price > a[i-1].price AND b.volume < 150 }")
        for engine in ("match", "reference"):
            m = cepvec.matches(text, ev, limit=None, engine=engine)
            got = [" ".join(f"e{t}" for t in g["time"]) for _, g in m.group_by("match", maintain_order=True)]
            assert len(got) == len(runs) and set(got) == runs, (strategy, engine, got)


@pytest.mark.parametrize("text", [
    "RETURN id, COUNT(*) PATTERN SEQ(A a, B b) GROUP-BY id",
    "RETURN COUNT(*) PATTERN SEQ(A a, B b) WHERE skip_till_next_match(a, b) { [id] }",
    "RETURN id, COUNT(*) PATTERN SEQ(A a, A b) GROUP-BY id WITHIN 6",
    "RETURN COUNT(*) PATTERN SEQ(A a, NOT C, B b) WHERE [id]",
])
def test_nan_and_null_keys_are_different_partitions(text):
    """The match engine read float keys with NaN as null (as its predicates read them), so a NaN event
    and a null event formed one match (found by a fuzzer); docs/semantics.md 2.3 keeps them apart."""
    df = pl.DataFrame({"type": ["A", "B", "A", "C", "B", "A"], "time": [0, 3, 4, 5, 6, 7],
                       "id": [float("nan"), None, None, float("nan"), float("nan"), 1.0]})
    want = cepvec.run(text, df, engine="reference")
    assert_frame_equal(cepvec.run(text, df, engine="match"), want)
    assert_frame_equal(cepvec.run(text, df), want)
    pairs = cepvec.matches("RETURN COUNT(*) PATTERN SEQ(A a, B b) WHERE [id]", df).select("match", "id").rows()
    ids = {}
    for m, v in pairs:
        ids.setdefault(m, set()).add("nan" if v != v else v)
    assert all(len(v) == 1 for v in ids.values()) and ids

"""The Numba engines (aseq, greta) agree with the reference engine.

* Hypothesis: generated queries and streams (tests/strategies.py); every query
  an engine supports must give the reference engine's rows, and a query it
  does not support must be refused with UnsupportedByEngine (never a wrong
  number).
* Batch-split invariance: the same query over the same stream cut into
  batches at arbitrary points (inside runs of equal time stamps too) gives
  identical rows.
* Exhaustive tiny streams for the GRETA issue's shapes on every window form.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import cepvec
from cepvec.registry import engine_support, run_engine
from cepvec.runtime.prepare import prepare
from tests.strategies import (SLOW, examples, half_of_pairs, make_frame, query_and_stream, sweep_size,
                              tiny_streams)
from tests.test_oracle_agreement import rows_differ

pytestmark = pytest.mark.filterwarnings("ignore::cepvec.errors.CepvecWarning")
ENGINES = ("aseq", "greta")


def _rows(df: pl.DataFrame) -> list[dict]:
    return df.to_dicts()


@settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(query_and_stream(), st.data())
def test_engines_agree_with_reference(qs, data):
    text, df = qs
    q = cepvec.compile(text)
    want = _rows(cepvec.run(q, df, engine="reference"))
    for engine in ENGINES:
        if engine_support(q, engine) is not None:
            with pytest.raises(cepvec.UnsupportedByEngine):
                cepvec.run(q, df, engine=engine)
            continue
        got = _rows(cepvec.run(q, df, engine=engine))
        diff = rows_differ(got, want)
        assert diff is None, f"{engine}: {text}\n{df}\n{diff}"
        # batch-split invariance: any cut of the input gives the same rows
        cuts = data.draw(st.lists(st.integers(0, len(df)), max_size=4), label="cuts")
        got_cut = _rows(run_engine(q, prepare(q, df), engine, batches=cuts))
        diff = rows_differ(got_cut, want)
        assert diff is None, f"{engine} cut at {sorted(set(cuts))}: {text}\n{df}\n{diff}"


SHAPES = ["A+", "SEQ(A+, B)", "SEQ(A, B+, C)", "(SEQ(A+, B))+", "SEQ(A+, NOT C, B)", "SEQ(NOT C, A+)",
          "SEQ(A+, NOT C)", "SEQ(A a1, B, A a2+)", "SEQ(A, B, C)", "SEQ(A, NOT C, B)"]
WINDOWS = ["", "WITHIN 2", "WITHIN 2 EMIT CHANGES", "WITHIN 2 SLIDE 1", "WITHIN 3 SLIDE 3", "WITHIN 2 SLIDE 3",
           "EMIT CHANGES"]


def _streams(n_max: int):
    for ev in tiny_streams(n_max):
        yield [(t, ty, i % 2, i + 1) for i, (t, ty) in enumerate(ev)]


_SCHEMA = {"time": pl.Int64, "type": pl.String, "id": pl.Int64, "x": pl.Int64}


def _frame(ev) -> pl.DataFrame:
    return pl.DataFrame({"time": [e[0] for e in ev], "type": [e[1] for e in ev], "id": [e[2] for e in ev],
                         "x": [e[3] for e in ev]}, schema=_SCHEMA)


@pytest.mark.parametrize(("shape", "window"), half_of_pairs(SHAPES, WINDOWS))
def test_exhaustive_tiny_streams(shape, window):
    """Every stream of up to sweep_size(5) events: the engine gives the reference engine's rows.

    All streams run at once, each a partition of its own (``WHERE [sid] GROUP-BY sid``: one run per
    engine); every stream alone without GROUP-BY in the slow profile, every 40th by default."""
    aggs = "COUNT(*), COUNT(A), SUM(A.x), AVG(A.x)"
    text = f"RETURN {aggs} PATTERN {shape} {window}"
    q = cepvec.compile(text)
    engine = "aseq" if not q.is_kleene else "greta"
    if engine_support(q, engine) is not None:
        with pytest.raises(cepvec.UnsupportedByEngine, match="cannot run"):
            cepvec.run(q, pl.DataFrame({"type": ["A"], "time": [0], "x": [1]}), engine=engine)
        return
    streams = list(_streams(sweep_size(5)))
    grouped = f"RETURN sid, {aggs} PATTERN {shape} WHERE [sid] GROUP-BY sid {window}"
    every = _frame([e for ev in streams for e in ev]).with_columns(
        pl.Series("sid", [k for k, ev in enumerate(streams) for _ in ev], dtype=pl.Int64)).sort(
        "time", maintain_order=True)
    want = _rows(cepvec.run(grouped, every, engine="reference"))
    got = _rows(cepvec.run(grouped, every, engine=engine))
    if rows_differ(got, want) is not None:
        bad = [(streams[k], [r for r in got if r["sid"] == k], [r for r in want if r["sid"] == k])
               for k in range(len(streams))]
        bad = [b for b in bad if rows_differ(b[1], b[2]) is not None]
        raise AssertionError(f"{grouped}: {len(bad)} streams differ, e.g. {bad[:3]}")
    bad = []
    for ev in streams[::1 if SLOW else 40]:
        df = _frame(ev)
        want = _rows(cepvec.run(q, df, engine="reference"))
        got = _rows(cepvec.run(q, df, engine=engine))
        if rows_differ(got, want) is not None:
            bad.append((ev, got, want))
    assert not bad, f"{text}: {len(bad)} streams differ, e.g. {bad[:3]}"


def _type_encodings(df: pl.DataFrame, data) -> dict[str, pl.DataFrame]:
    """The same stream with its type column as String, Categorical and Enum (extra categories, shuffled)."""
    present = sorted(set(df["type"].to_list()))
    extra = data.draw(st.lists(st.sampled_from(["Z", "Y", "AA", "long_type_name_past_12_bytes"]), unique=True),
                      label="extra categories")
    cats = data.draw(st.permutations(present + extra + [t for t in "ABCD" if t not in present]), label="enum order")
    return {
        "string": df,
        "categorical": df.with_columns(pl.col("type").cast(pl.Categorical)),
        "enum": df.with_columns(pl.col("type").cast(pl.Enum(cats))),
    }


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(query_and_stream(), st.data())
def test_type_column_encodings_agree(qs, data):
    # Categorical and Enum type columns take the physical-id path of the linear engine: same rows as String
    text, df = qs
    q = cepvec.compile(text)
    encodings = _type_encodings(df, data)
    for engine in ENGINES:
        if engine_support(q, engine) is not None:
            continue
        want = _rows(cepvec.run(q, df, engine=engine))
        cuts = data.draw(st.lists(st.integers(0, len(df)), max_size=3), label="cuts")
        for name, enc in encodings.items():
            got = _rows(run_engine(q, prepare(q, enc), engine, batches=cuts))
            diff = rows_differ(got, want)
            assert diff is None, f"{engine}, {name} type column cut at {sorted(set(cuts))}: {text}\n{enc}\n{diff}"


@pytest.mark.parametrize("dtype", [pl.Categorical, pl.Enum(["a", "b"]), pl.String])
def test_categorical_attribute_in_a_local_predicate(dtype):
    """A Categorical or Enum attribute compared with a string literal (its NaN test must not cast the
    categories to Float64, which Polars refuses)."""
    df = pl.DataFrame({"type": ["A", "A", "B", "C", "B"], "time": [1, 2, 3, 4, 5],
                       "x": pl.Series(["a", "b", "a", None, "b"], dtype=dtype)})
    for text in ("RETURN COUNT(*) PATTERN SEQ(A, B) WHERE A.x = 'a'",
                 "RETURN COUNT(*) PATTERN SEQ(A, NOT C, B) WHERE A.x = 'a' AND B.x != 'b' WITHIN 5 SLIDE 1"):
        want = cepvec.run(text, df, engine="reference")
        got = cepvec.run(text, df)
        assert got.to_dicts() == want.to_dicts(), text
        assert len(want), text


@pytest.mark.parametrize("dtype", [pl.Enum(["b", "c", "a"]), pl.Categorical, pl.String])
def test_rows_of_every_engine_in_the_same_group_order(dtype):
    """Rows come in the order Polars sorts the group values: an Enum by its categories. The reference
    and match engines sorted the strings alphabetically (found by a fuzzer)."""
    df = pl.DataFrame({"type": ["A", "A", "A", "B", "B", "B"], "time": [1, 2, 3, 4, 5, 6],
                       "id": pl.Series(["a", "b", "c", "c", "a", "b"], dtype=dtype)})
    for text in ("RETURN id, COUNT(*) PATTERN SEQ(A, B) WHERE [id] GROUP-BY id",
                 "RETURN id, COUNT(*) PATTERN SEQ(A a, B b) WHERE [id] AND a.time < b.time GROUP-BY id WITHIN 9 SLIDE 3",
                 "RETURN id, COUNT(*) PATTERN SEQ(A, B+) WHERE [id] GROUP-BY id EMIT CHANGES"):
        want = df.select(pl.col("id").unique().sort())["id"].to_list()
        ran = []
        for engine in ("auto", "aseq", "greta", "match", "reference"):
            try:
                got = cepvec.run(text, df, engine=engine)["id"].unique(maintain_order=True).to_list()
            except cepvec.errors.UnsupportedByEngine:
                continue
            assert got == want, (engine, text)
            ran.append(engine)
        assert "reference" in ran and len(ran) >= 3, ran


@pytest.mark.parametrize("text", [
    "RETURN MAX(B.v), MIN(B.v), MIN(A.v), SUM(B.v) PATTERN SEQ(A, B)",
    "RETURN g, MAX(B.v), MIN(B.v) PATTERN SEQ(A, B+) WHERE [g] GROUP-BY g WITHIN 3 SLIDE 1",
    "RETURN g, MAX(B.v) PATTERN SEQ(A, B+) WHERE [id] AND B.v < NEXT(B).v GROUP-BY g",
    "RETURN MAX(B.v) PATTERN SEQ(A, B) WITHIN 3 EMIT CHANGES",
])
def test_min_max_of_decimals_keep_their_scale(text):
    """MIN / MAX of a Decimal column on the scan path came out as the scaled integers (10^scale too
    large, dtype Object; found by a fuzzer): the reference engine's rows and dtypes."""
    from decimal import Decimal

    vals = ["1.50", "2.25", None, "-1.00", "3.10", "0.05", "2.25", None]
    df = pl.DataFrame({"type": list("ABABBABB"), "time": [1, 2, 3, 4, 5, 6, 7, 8], "g": [0, 0, 1, 1, 0, 1, 1, 0],
                       "id": [0, 1, 0, 1, 0, 1, 0, 1], "v": [Decimal(v) if v else None for v in vals]},
                      schema_overrides={"v": pl.Decimal(10, 2)})
    want = cepvec.run(text, df, engine="reference")
    got = cepvec.run(text, df)
    assert got.schema == want.schema
    assert got.rows() == want.rows() and len(want)


@pytest.mark.parametrize("text", [
    "RETURN id, COUNT(*) PATTERN A+ WHERE [id] AND A.x < NEXT(A).x GROUP-BY id {w}",
    "RETURN COUNT(*), MIN(A.x) PATTERN A+ WHERE A.x + NEXT(A).x != 3 {w}",
    "RETURN COUNT(*), SUM(b.x) PATTERN SEQ(NOT C, A a, B b) {w}",
    "RETURN id, COUNT(*) PATTERN SEQ(A, B+, NOT C) WHERE [id] GROUP-BY id {w}",
])
@pytest.mark.parametrize("window", ["WITHIN {span}", "WITHIN {span} EMIT CHANGES"])
def test_a_within_that_covers_the_input_is_dropped_exactly(text, window):
    """``cepvec.run`` drops ``WITHIN w`` when the times span less than ``w`` (the Kleene paths are
    cubic in the events of a window under WITHIN alone: 420 s for 10^4 events of one group; found by
    a performance fuzzer): the rows are those of the reference engine with the window, and of the
    path that keeps it; one unit less of WITHIN keeps the window and still agrees."""
    import numpy as np

    rng = np.random.default_rng(7)
    n = 40
    df = pl.DataFrame({"type": rng.choice(list("ABC"), n), "time": np.sort(rng.integers(0, 12, n)),
                       "id": rng.integers(0, 2, n), "x": rng.integers(0, 4, n)})
    span = int(df["time"].max() - df["time"].min())
    for w in (span + 1, span):
        q = text.format(w=window.format(span=w))
        want = cepvec.run(q, df, engine="reference")
        assert_frame_equal(cepvec.run(q, df), want)
        kept = cepvec.run(q, df, engine="greta" if "+" in q else "aseq")  # not "auto": the window is kept
        assert_frame_equal(kept, want)


@settings(max_examples=examples(40), deadline=None)
@given(seed=st.integers(0, 2**31), n=st.integers(10, 30), span=st.sampled_from([50, 3000, 40000]),
       window=st.sampled_from([(2000, 1), (3000, 7), (500, 3)]), cuts=st.lists(st.integers(0, 24), max_size=3))
def test_long_windows_over_sparse_events(seed, n, span, window, cuts):
    """WITHIN w SLIDE s with w / s in the hundreds or thousands over a few events: every run of
    windows that hold the same events gets one result, repeated for each window of the run (the
    loop no longer visits the empty ones); more rows than the output arrays first hold (they grow
    in the middle of a run), sums and averages beside the count, cut into batches."""
    import numpy as np

    rng = np.random.default_rng(seed)
    w, s = window
    df = make_frame([(str(rng.choice(list("ABC"))), int(t), int(rng.integers(0, 2)), int(rng.integers(-2, 5)), 0.5)
                     for t in np.sort(rng.integers(0, span, n))])
    text = f"RETURN id, COUNT(*), SUM(b.x), AVG(a.x) PATTERN SEQ(A a, B b) WHERE [id] GROUP-BY id WITHIN {w} SLIDE {s}"
    q = cepvec.compile(text)
    want = _rows(cepvec.run(q, df, engine="reference"))
    got = _rows(run_engine(q, prepare(q, df), "aseq", batches=cuts))
    assert rows_differ(got, want) is None


@pytest.mark.parametrize("pattern, path", [("A+ WHERE [id] AND A.x != NEXT(A).x", "scan"),
                                           ("SEQ(A+, B) WHERE [id] AND A.x != NEXT(A).x", "scan"),
                                           ("A+ WHERE [id]", "linear"), ("SEQ(A+, B) WHERE [id]", "linear")])
@pytest.mark.parametrize("window", ["WITHIN 40 EMIT CHANGES", "EMIT CHANGES"])
def test_emit_changes_with_many_partitions_of_one_group(pattern, path, window):
    """EMIT CHANGES with ``[id]`` finer than GROUP-BY: a partition visits only the emit times of its
    group where one of its matches can count (within ``w`` after one of its events; without WITHIN,
    every later one), not every END time of the group (``kernels/emit.py``; 30 partitions of one
    group, a gap in time, input cut into batches); the rows are the reference engine's. A match of one
    event counts until ``w`` after it: visiting one emit time fewer fails it."""
    import numpy as np

    from cepvec.registry import greta_path

    rng = np.random.default_rng(11)
    n = 300
    t = np.cumsum(rng.integers(0, 3, n))
    t[n // 2:] += 10**12
    ev = pl.DataFrame({"type": rng.choice(["A", "B"], n), "time": t, "id": rng.integers(0, 30, n),
                       "g": np.zeros(n, np.int64), "x": rng.integers(0, 4, n)})
    q = cepvec.compile(f"RETURN g, COUNT(*), MAX(A.x) PATTERN {pattern} GROUP-BY g {window}")
    assert greta_path(q) == path
    want = _rows(cepvec.run(q, ev, engine="reference"))
    assert len(want) > 50 and rows_differ(_rows(cepvec.run(q, ev)), want) is None
    engine = "greta" if "+" in pattern else "aseq"
    assert rows_differ(_rows(run_engine(q, prepare(q, ev), engine, batches=[97, 150, 151, 200])), want) is None


@pytest.mark.parametrize("numeric", ["int64", "float64"])
@pytest.mark.parametrize("text", [
    "RETURN AVG(B.v), SUM(B.v), COUNT(*) PATTERN SEQ(A, B)",
    "RETURN AVG(B.v), SUM(B.v), COUNT(*) PATTERN SEQ(A, B) WITHIN 3",
    "RETURN AVG(B.v), SUM(B.v), COUNT(*) PATTERN SEQ(A+, B) WITHIN 3",
    "RETURN SUM(A.v), AVG(A.v), COUNT(*) PATTERN SEQ(A, B) WITHIN 3 SLIDE 3",
    "RETURN SUM(A.v), COUNT(*) PATTERN SEQ(A, B) WITHIN 4 EMIT CHANGES",
])
def test_infinite_and_nan_values_count_only_in_their_matches(text, numeric):
    """An infinite or NaN attribute value adds to the sums of the matches that hold its event and to no
    other: the linear maps multiply a weight by counts that are zero where no match is (0 * inf is NaN
    in IEEE arithmetic; a zero annihilates in ``kernels/linear/arith.py``). Reference: the reference
    engine."""
    inf = float("inf")
    ev = pl.DataFrame({"type": ["B", "B", "A", "B", "A", "B", "A", "B", "B"],
                       "time": [2, 5, 6, 7, 10, 11, 20, 21, 40],
                       "v": [inf, -3.25, 1.0, -3.25, -inf, 3.0, float("nan"), 2.0, inf]})
    q = cepvec.compile(text)
    want = _rows(cepvec.run(q, ev, engine="reference", numeric=numeric))
    got = _rows(cepvec.run(q, ev, numeric=numeric))
    assert str(got) == str(want)  # (NaN == NaN as text)


@pytest.mark.parametrize("numeric", ["int64", "float64"])
@pytest.mark.parametrize("text,types,times,ids,v", [
    # a group of partitions (EMIT CHANGES, [id]): a partition's total -inf again changes nothing
    ("RETURN SUM(A.price) PATTERN SEQ(A, B) WHERE [id] EMIT CHANGES", "ABB", [1, 2, 3], [0, 0, 0],
     [-math.inf, 1.0, 1.0]),
    # WITHIN alone, ties (the general loop adds what a group of equal times ends: new total less old)
    ("RETURN SUM(p1.price) PATTERN SEQ(B p0, B p1) WITHIN 10", "BBBBC", [14, 21, 22, 22, 122], None,
     [1.0, -math.inf, -math.inf, 1.0, 0.0]),
])
def test_an_infinite_total_again_is_not_nan(text, types, times, ids, v, numeric):
    """Paths that add the change of a running total (new less old) add nothing when both are the same
    infinity (``inf - inf`` is NaN): the reference engine's -inf, not NaN. Found by differential fuzzing."""
    ev = pl.DataFrame({"type": list(types), "time": times, "price": v, **({"id": ids} if ids else {})})
    want = _rows(cepvec.run(text, ev, engine="reference", numeric=numeric))
    assert str(_rows(cepvec.run(text, ev, numeric=numeric))) == str(want)
    assert "nan" not in str(want)


@pytest.mark.parametrize("sharing", ["auto", "greedy", "exhaustive"])
def test_a_shared_negation_with_an_infinite_sum_is_exact(sharing, shared_runs):
    """A negated end takes back a window's earlier total by subtraction in the shared executor; with
    +inf in the summed attribute that gave NaN. The sum is shared as its finite part and the numbers of
    matches holding +inf and -inf (docs/sharing.md), so the query still runs shared."""
    wl = {"q": "RETURN SUM(B.price), AVG(B.price) PATTERN SEQ(A, B, NOT C)",
          "other": "RETURN COUNT(*) PATTERN SEQ(A, B, D)"}
    ev = pl.DataFrame({"type": ["A", "B", "C", "B", "D"], "time": [1, 2, 3, 4, 5],
                       "price": [1.0, math.inf, 1.0, 2.0, 0.0]})
    for prices, want in (([1.0, math.inf, 1.0, 2.0, 0.0], 2.0), ([1.0, 5.0, 1.0, -math.inf, 0.0], -math.inf)):
        ev = ev.with_columns(price=pl.Series(prices))
        shared_runs.clear()
        got = cepvec.run_many(wl, ev, sharing=sharing, numeric="float64")
        assert shared_runs == [["other", "q"]]
        for name, text in wl.items():
            assert got[name].equals(cepvec.run(text, ev, numeric="float64"))
        assert got["q"]["SUM(B.price)"].to_list() == [want]


@settings(max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31), cuts=st.lists(st.integers(1, 59), max_size=4),
       text=st.sampled_from([
           "RETURN g, COUNT(*), SUM(b.x), AVG(a.x) PATTERN SEQ(A a, B b) WHERE [id] GROUP-BY g EMIT CHANGES",
           "RETURN COUNT(*), COUNT(b) PATTERN SEQ(A a, B+ b) WHERE [id] EMIT CHANGES",
           "RETURN g, COUNT(*) PATTERN SEQ(A, B, NOT C) WHERE [id] GROUP-BY g EMIT CHANGES",
           "RETURN g, SUM(b.x) PATTERN SEQ(NOT C, A, B b) WHERE [id] GROUP-BY g EMIT CHANGES",
           "RETURN COUNT(*) PATTERN SEQ(A, NOT C, B) WHERE [id] EMIT CHANGES"]))
def test_unbounded_emit_changes_carried_forward(seed, cuts, text):
    """EMIT CHANGES without WITHIN, several partitions (``[id]``) per group: the linear kernel writes a
    partition's row only where its totals change and the stream carries the rows forward and adds them
    up per group at every emit time (``LinearStream._carried_forward``): the reference engine's rows,
    with negations that lower a partition's count, ties, and the input cut into batches (a partition's
    last row from an earlier batch counts in the later ones)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    n = 60
    df = pl.DataFrame({"type": rng.choice(list("ABC"), n), "time": np.sort(rng.integers(0, 40, n)),
                       "id": rng.integers(0, 6, n), "g": rng.integers(0, 2, n), "x": rng.integers(-2, 4, n)})
    df = df.with_columns(pl.col("g").first().over("id"))  # each partition in one group
    q = cepvec.compile(text)
    want = _rows(cepvec.run(q, df, engine="reference"))
    got = _rows(run_engine(q, prepare(q, df), "greta" if q.is_kleene else "aseq", batches=sorted(set(cuts))))
    assert rows_differ(got, want) is None


def test_unbounded_emit_changes_group_total_past_int64_raises():
    """Carried-forward group totals (``LinearStream._carried_forward``) are checked: three partitions of
    about 4.6e18 trends each pass int64 in the group's total at the third END time (float64 runs)."""
    rows = [(t, 1000 * k + i, k) for k in range(3) for i, t in enumerate(["A"] * 62 + ["B"])]
    df = pl.DataFrame(rows, schema=["type", "time", "id"], orient="row")
    q = "RETURN COUNT(*) PATTERN SEQ(A+, B) WHERE [id] EMIT CHANGES"
    assert cepvec.run(q, df, numeric="float64")["COUNT(*)"].to_list() == [float(2**62 - 1) * k for k in (1, 2, 3)]
    with pytest.raises(cepvec.CepvecOverflowError, match="adding up the partitions of a group"):
        cepvec.run(q, df)


@pytest.mark.parametrize("cuts", [[], [3], [2], [4], [3, 4]])
def test_unbounded_emit_changes_a_change_after_the_last_emit_time_of_a_batch(cuts):
    """A partition's totals can change at an event that is not an END event (an end negation ends its
    match): with no emit time of its group after it in the batch, the change is written at the group's
    first emit time of a later batch, where the partition has no event of its own (without that, its
    old total is carried forward: 2 instead of 1 at time 11)."""
    df = pl.DataFrame({"type": ["A", "B", "C", "A", "B"], "time": [1, 2, 5, 10, 11], "id": [1, 1, 1, 2, 2],
                       "g": [0] * 5})
    q = cepvec.compile("RETURN g, COUNT(*) PATTERN SEQ(A, B, NOT C) WHERE [id] GROUP-BY g EMIT CHANGES")
    want = _rows(cepvec.run(q, df, engine="reference"))
    assert [r["COUNT(*)"] for r in want] == [1, 1]
    assert rows_differ(_rows(run_engine(q, prepare(q, df), "aseq", batches=cuts)), want) is None


@pytest.mark.parametrize("path,text", [
    ("linear", "RETURN COUNT(*) PATTERN SEQ(A, B) WITHIN 10"),
    ("trend", "RETURN COUNT(*) PATTERN A+ WHERE A.x < NEXT(A).x WITHIN 10 SLIDE 5"),
    ("scan", "RETURN COUNT(*) PATTERN A+ WHERE A.x + NEXT(A).x != 3 WITHIN 10"),
])
def test_a_batch_before_the_previous_one_is_an_error(path, text):
    """Every path's run refuses a batch that starts before the previous one ended (and takes an empty
    batch, or one that starts at the previous end, in between)."""
    from cepvec.registry import NUMBA_PATHS

    q = cepvec.compile(text)
    df = pl.DataFrame({"type": ["A", "B", "A", "B"], "time": [1, 2, 3, 4], "x": [1.0, 5.0, 2.0, 7.0]})
    prep = prepare(q, df)
    run = next(p for p in NUMBA_PATHS if p.name == path).open(q, prep.df.schema, w=prep.w, s=prep.s)
    times = prep.times.to_numpy()
    run.push(prep.df[1:3], times[1:3])
    run.push(prep.df[:0], times[:0])
    run.push(prep.df[2:3], times[2:3])  # starts at the previous end: a tie, accepted
    with pytest.raises(cepvec.CepvecDataError, match="before the previous batch ended"):
        run.push(prep.df[:1], times[:1])


@pytest.mark.parametrize(("text", "rows"), [
    ("RETURN id, SUM(C.f) PATTERN C WHERE [g] GROUP-BY id EMIT CHANGES",
     [("B", 2, 0, 0, 0.0), ("C", 2, 1, 0, -0.5), ("C", 12, 0, 0, float("-inf"))]),
    ("RETURN id, SUM(C.f) PATTERN C WHERE [g] GROUP-BY id EMIT CHANGES",
     [("B", 2, 0, 0, 0.0), ("C", 2, 1, 0, 1.5), ("C", 12, 0, 0, 1e17)]),
    ("RETURN SUM(a.f), COUNT(*) PATTERN SEQ(A a, NOT C) WHERE [id] EMIT CHANGES",
     [("A", 2, 1, 0, float("-inf")), ("C", 4, 1, 0, 0.0), ("A", 4, 0, 0, 5.0)]),
])
def test_float_group_totals_of_unbounded_emit_changes(text, rows):
    """Found by a differential fuzzer: the float totals of a group were a running sum of its partitions'
    changes over every group in turn, less the groups before it; one group's 1e17 swallowed another's
    1.5, its -inf made another's NaN, and a match taken back from -inf to 0 added +inf."""
    df = pl.DataFrame(rows, schema={"type": pl.String, "time": pl.Int64, "id": pl.Int64, "g": pl.Int64,
                                    "f": pl.Float64}, orient="row")
    for numeric in ("int64", "float64"):
        want = _rows(cepvec.run(text, df, engine="reference", numeric=numeric))
        assert rows_differ(_rows(cepvec.run(text, df, numeric=numeric)), want) is None
        assert rows_differ(_rows(cepvec.run_many({"q": text}, df, numeric=numeric)["q"]), want) is None


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31), cuts=st.lists(st.integers(1, 39), max_size=3),
       numeric=st.sampled_from(["int64", "float64"]),
       text=st.sampled_from([
           "RETURN g, SUM(b.f), AVG(a.f) PATTERN SEQ(A a, B b) WHERE [id] GROUP-BY g EMIT CHANGES",
           "RETURN g, SUM(a.f) PATTERN SEQ(A a, NOT C) WHERE [id] GROUP-BY g EMIT CHANGES",
           "RETURN SUM(b.f), COUNT(*) PATTERN SEQ(A, B+ b) WHERE [id] EMIT CHANGES"]))
def test_float_group_totals_of_unbounded_emit_changes_in_batches(seed, cuts, numeric, text):
    """Float sums of several partitions per group under EMIT CHANGES without WITHIN, values that are
    infinite, huge or small, the input cut into batches: the reference engine's rows."""
    import numpy as np

    rng = np.random.default_rng(seed)
    n = 40
    df = pl.DataFrame({"type": rng.choice(list("ABC"), n), "time": np.sort(rng.integers(0, 25, n)),
                       "id": rng.integers(0, 5, n), "g": rng.integers(0, 2, n),
                       "f": rng.choice([float("inf"), float("-inf"), 1e17, 1.5, -0.5, 3.0], n)})
    df = df.with_columns(pl.col("g").first().over("id"))  # each partition in one group
    q = cepvec.compile(text)
    want = _rows(cepvec.run(q, df, engine="reference", numeric=numeric))
    got = _rows(run_engine(q, prepare(q, df), "greta" if q.is_kleene else "aseq", numeric=numeric,
                           batches=sorted(set(cuts))))
    assert rows_differ(got, want) is None


@pytest.mark.parametrize("n_categories", [3, 300, 70_000])  # UInt8, UInt16 and UInt32 physical ids
def test_an_enum_of_any_width_gives_the_rows_of_strings(n_categories):
    """The linear path reads a Categorical / Enum type column's physical ids through a table of the
    query's types (``kernels/linear/encode.py::lut_codes_count``); ids past the table and types the
    query does not name count as no type."""
    rng = np.random.default_rng(7)
    names = [f"t{i}" for i in range(n_categories - 3)] + ["A", "B", "C"]
    cats = [names[i] for i in rng.permutation(len(names))]
    n = 3000
    types = np.array(names)[rng.integers(max(0, len(names) - 6), len(names), n)]  # a few others, A, B, C
    df = pl.DataFrame({"type": types, "time": np.sort(rng.integers(0, n // 2, n)), "id": rng.integers(0, 4, n)})
    q = "RETURN id, COUNT(*) PATTERN SEQ(A, B, C) WHERE [id] GROUP-BY id WITHIN 20"
    want = cepvec.run(q, df)
    assert want["COUNT(*)"].sum() > 0
    for enc in [pl.Enum(cats), pl.Categorical]:
        assert_frame_equal(cepvec.run(q, df.with_columns(pl.col("type").cast(enc))), want, check_exact=True)

"""Input validation, conversions and the output schema of ``cepvec.run``.

Bad input gets a clear error; the tests assert the exact message. Expected
results are derived by hand in the comments.
"""

from __future__ import annotations

import datetime as dt
import math
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import cepvec

from .conftest import run_engine
from cepvec import (CepvecDataError, CepvecOverflowError, CepvecPlanError, CepvecTypeError,
                    CepvecWarning, UnsupportedByEngine)


def run(query, events, **kwargs):
    return run_engine(query, events, **kwargs)


Q = "RETURN COUNT(*) PATTERN SEQ(A, B)"


def ab(**extra) -> pl.DataFrame:
    """a1 b2 a3 b4 (+ extra columns)."""
    return pl.DataFrame({"type": ["A", "B", "A", "B"], "time": [1, 2, 3, 4], **extra})


def rows(df: pl.DataFrame) -> list[tuple]:
    return [tuple(r) for r in df.iter_rows()]


def raises_exactly(exc_type, message: str, fn, *args, **kwargs):
    with pytest.raises(exc_type) as info:
        fn(*args, **kwargs)
    assert str(info.value) == message
    return info.value


# ====================================================================== missing / wrong columns


def test_missing_type_column(engine):
    ev = pl.DataFrame({"kind": ["A", "B"], "time": [1, 2]})
    raises_exactly(CepvecPlanError,
                   "the input has no type column 'type'; columns are: kind, time. Rename the column or "
                   "pass type_col='<name>' to cepvec.compile", cepvec.run, Q, ev, engine=engine)


def test_missing_time_column(engine):
    ev = pl.DataFrame({"type": ["A", "B"], "ts": [1, 2]})
    raises_exactly(CepvecPlanError,
                   "the input has no time column 'time'; columns are: type, ts. Rename the column or "
                   "pass time_col='<name>' to cepvec.compile", cepvec.run, Q, ev, engine=engine)


def test_custom_type_and_time_columns(engine):
    q = cepvec.compile(Q, type_col="kind", time_col="ts")
    ev = pl.DataFrame({"kind": ["A", "B", "A", "B"], "ts": [1, 2, 3, 4]})
    # (a1 b2), (a1 b4), (a3 b4)
    assert rows(run(q, ev, engine=engine)) == [(3,)]
    # the EMIT CHANGES column is named after the time column
    q = cepvec.compile(Q + " WITHIN 2 EMIT CHANGES", type_col="kind", time_col="ts")
    res = run(q, ev, engine=engine)
    assert res.columns == ["ts", "COUNT(*)"]
    assert rows(res) == [(2, 1), (4, 1)]


def test_type_and_time_column_must_differ():
    raises_exactly(CepvecPlanError, "type_col and time_col must differ; both are 't'",
                   cepvec.compile, Q, type_col="t", time_col="t")


def test_missing_attribute_column(engine):
    raises_exactly(CepvecPlanError,
                   "attribute 'x' used by the query is not a column of the input; columns are: type, time. "
                   "Fix the query or add the column (nulls allowed)",
                   cepvec.run, Q + " WHERE A.x > 1", ab(), engine=engine)
    # an attribute read only by an aggregate is needed as well
    raises_exactly(CepvecPlanError,
                   "attribute 'y' used by the query is not a column of the input; columns are: type, time. "
                   "Fix the query or add the column (nulls allowed)",
                   cepvec.run, "RETURN SUM(A.y) PATTERN SEQ(A, B)", ab(), engine=engine)


def test_type_column_of_wrong_dtype(engine):
    ev = pl.DataFrame({"type": [1, 2], "time": [1, 2]})
    raises_exactly(CepvecTypeError,
                   "type column 'type' must hold event type names (String, Categorical or Enum); found Int64. "
                   "If these are type codes, map them to the query's type names as an Enum (as fast as the "
                   "codes): pl.col('type').replace_strict({<code of A>: 'A', <code of B>: 'B'}, "
                   "return_dtype=pl.Enum(['A', 'B']))", cepvec.run, Q, ev, engine=engine)
    ev = pl.DataFrame({"type": [1.0, 2.0], "time": [1, 2]})
    raises_exactly(CepvecTypeError,
                   "type column 'type' must hold event type names (String, Categorical or Enum); found Float64. "
                   "Cast it with pl.col('type').cast(pl.String)", cepvec.run, Q, ev, engine=engine)


def test_float_time_column(engine):
    ev = pl.DataFrame({"type": ["A", "B"], "time": [1.0, 2.0]})
    raises_exactly(CepvecTypeError,
                   "time column 'time' must be an integer or a timestamp; found Float64. Cast it, e.g. "
                   "pl.col('time').cast(pl.Int64), or convert with .str.to_datetime()",
                   cepvec.run, Q, ev, engine=engine)


def test_string_time_column(engine):
    ev = pl.DataFrame({"type": ["A", "B"], "time": ["1", "2"]})
    raises_exactly(CepvecTypeError,
                   "time column 'time' must be an integer or a timestamp; found String. Cast it, e.g. "
                   "pl.col('time').cast(pl.Int64), or convert with .str.to_datetime()",
                   cepvec.run, Q, ev, engine=engine)


def test_null_time(engine):
    ev = pl.DataFrame({"type": ["A", "B", "B"], "time": [1, None, None]})
    raises_exactly(CepvecDataError,
                   "time column 'time' has 2 null value(s) (first at row 1); every event needs an occurrence "
                   "time. Drop or fill those rows", cepvec.run, Q, ev, engine=engine)


def test_null_type(engine):
    ev = pl.DataFrame({"type": ["A", None], "time": [1, 2]})
    raises_exactly(CepvecDataError,
                   "type column 'type' has 1 null value(s) (first at row 1); every event needs a type. "
                   "Drop or fill those rows", cepvec.run, Q, ev, engine=engine)


def test_unknown_numeric_mode(engine):
    raises_exactly(CepvecPlanError, "numeric must be 'int64' or 'float64'; found 'decimal'",
                   cepvec.run, Q, ab(), engine=engine, numeric="decimal")


def test_bad_engine_name():
    from cepvec.registry import ENGINES  # the list grows as engines are added

    assert "auto" in ENGINES and "reference" in ENGINES
    raises_exactly(UnsupportedByEngine, f"unknown engine 'fast'; choose one of: {', '.join(ENGINES)}",
                   cepvec.run, Q, ab(), engine="fast")


def test_bad_time_unit(engine):
    raises_exactly(CepvecPlanError, "time_unit must be one of s, ms, us, ns; found 'min'",
                   cepvec.run, Q, ab(), engine=engine, time_unit="min")


def test_time_unit_with_timestamp_column(engine):
    ev = ab().with_columns(pl.from_epoch("time", "s").cast(pl.Datetime("ms")))
    raises_exactly(CepvecPlanError,
                   "time_unit='s' was given but time column 'time' is a timestamp in 'ms'; a timestamp carries "
                   "its own unit, drop time_unit", cepvec.run, Q, ev, engine=engine, time_unit="s")


def test_events_of_unsupported_type(engine):
    raises_exactly(CepvecTypeError,
                   "events must be a polars DataFrame, a pyarrow Table or RecordBatch, or a pandas DataFrame; "
                   "found list. Convert it with polars.DataFrame(...) first",
                   cepvec.run, Q, [{"type": "A", "time": 1}], engine=engine)


def test_query_of_unsupported_type(engine):
    raises_exactly(CepvecTypeError,
                   "query must be query text (str) or a Query from cepvec.compile; found int",
                   cepvec.run, 42, ab(), engine=engine)


def test_sum_of_string_attribute_is_a_type_error(engine):
    # output_schema's check "SUM(A.s) needs a numeric attribute" must apply whether or not there
    # are matches. BUG: with matches the reference engine adds the strings first and a bare
    # Python TypeError ("unsupported operand type(s) for +: 'int' and 'str") escapes.
    ev = ab(s=["x", "y", "z", "w"])
    raises_exactly(CepvecTypeError, "SUM(A.s) needs a numeric attribute; 's' is String",
                   cepvec.run, "RETURN SUM(A.s) PATTERN SEQ(A, B)", ev, engine=engine)
    raises_exactly(CepvecTypeError, "AVG(A.s) needs a numeric attribute; 's' is String",
                   cepvec.run, "RETURN AVG(A.s) PATTERN SEQ(A, B)", ev, engine=engine)


def test_sum_of_string_attribute_without_matches_is_a_type_error(engine):
    ev = pl.DataFrame({"type": ["A", "A"], "time": [1, 2], "s": ["x", "y"]})
    with pytest.warns(CepvecWarning):
        raises_exactly(CepvecTypeError, "SUM(A.s) needs a numeric attribute; 's' is String",
                       cepvec.run, "RETURN SUM(A.s) PATTERN SEQ(A, B)", ev, engine=engine)


# ====================================================================== durations and time units


def test_non_integral_duration(engine):
    raises_exactly(CepvecPlanError,
                   "WITHIN 500 ms is not a whole number of seconds (the time column's unit); use a duration "
                   "that is, or pass time_unit='ms' (or 'us', 'ns') if the time column counts finer units",
                   cepvec.run, Q + " WITHIN 500 ms", ab(), engine=engine)
    raises_exactly(CepvecPlanError,
                   "SLIDE 500 ms is not a whole number of seconds (the time column's unit); use a duration "
                   "that is, or pass time_unit='ms' (or 'us', 'ns') if the time column counts finer units",
                   cepvec.run, Q + " WITHIN 2 s SLIDE 500 ms", ab(), engine=engine)
    raises_exactly(CepvecPlanError,
                   "WITHIN 0.5 is not a whole number of seconds (the time column's unit); use a duration "
                   "that is, or pass time_unit='ms' (or 'us', 'ns') if the time column counts finer units",
                   cepvec.run, Q + " WITHIN 0.5", ab(), engine=engine)


def test_non_integral_duration_fixed_by_time_unit(engine):
    # the same times read as milliseconds: a1 b2 a3 b4 ms; WITHIN 500 ms keeps all three matches
    # (spans 1, 3, 1 ms); WITHIN 2 ms keeps the two with span 1
    assert rows(run(Q + " WITHIN 500 ms", ab(), engine=engine, time_unit="ms")) == [(3,)]
    assert rows(run(Q + " WITHIN 2 ms", ab(), engine=engine, time_unit="ms")) == [(2,)]


@pytest.mark.parametrize("unit,scale", [("s", 1), ("ms", 1_000), ("us", 1_000_000), ("ns", 1_000_000_000)])
def test_integer_time_units_convert_durations(engine, unit, scale):
    if unit == "s":
        # the default unit: A at 0, B at 1 s
        ev = pl.DataFrame({"type": ["A", "B"], "time": [0, 1]})
        assert rows(run(Q + " WITHIN 1 s", ev, engine=engine)) == []
        assert rows(run(Q + " WITHIN 2 s", ev, engine=engine)) == [(1,)]
        assert rows(run(Q + " WITHIN 1 minute", ev, engine=engine, time_unit="s")) == [(1,)]
        return
    # A at 0, B at 1.5 s (in the column's unit): span 1.5 s
    ev = pl.DataFrame({"type": ["A", "B"], "time": [0, 3 * scale // 2]})
    kw = {"time_unit": unit}
    assert rows(run(Q + " WITHIN 1 s", ev, engine=engine, **kw)) == []        # 1.5 s >= 1 s
    assert rows(run(Q + " WITHIN 2 seconds", ev, engine=engine, **kw)) == [(1,)]
    assert rows(run(Q + " WITHIN 1600 ms", ev, engine=engine, **kw)) == [(1,)]
    assert rows(run(Q + " WITHIN 1 minute", ev, engine=engine, **kw)) == [(1,)]
    # a bare number is in the column's unit: 3*scale//2 units is not < itself
    assert rows(run(Q + f" WITHIN {3 * scale // 2}", ev, engine=engine, **kw)) == []
    assert rows(run(Q + f" WITHIN {3 * scale // 2 + 1}", ev, engine=engine, **kw)) == [(1,)]
    # SLIDE windows in the column's unit: [k s, k s + 2 s): the match (0, 1.5 s) is in k=0 only
    res = run(Q + " WITHIN 2 s SLIDE 1 s", ev, engine=engine, **kw)
    assert rows(res) == [(0, 2 * scale, 1)]


# ====================================================================== unsorted input


def test_unsorted_input_is_sorted(engine):
    # BUG: prepare() calls Series.arg_sort(maintain_order=True), which polars does not have:
    # every unsorted input raises TypeError instead of being sorted.
    ev = pl.DataFrame({"type": ["A", "B", "A", "A", "B"], "time": [1, 2, 3, 4, 7], "x": [5, 0, 6, 4, 0]})
    q = "RETURN COUNT(*), SUM(A.x) PATTERN (SEQ(A+, B))+"
    want = run(q, ev, engine=engine)
    assert rows(want) == [(11, 100)]  # GRETA Figure 12
    shuffled = ev[[3, 0, 4, 2, 1]]
    assert rows(run(q, shuffled, engine=engine)) == rows(want)


def test_unsorted_input_with_ties(engine):
    # ties keep their input order (stable sort) and never combine: A and B both at 2
    ev = pl.DataFrame({"type": ["B", "A", "B", "A"], "time": [3, 2, 2, 1]})
    # sorted: a1, (a2 b2), b3 -> (a1 b2), (a1 b3), (a2 b3) = 3
    assert rows(run(Q, ev, engine=engine)) == [(3,)]


# ====================================================================== timestamps


@pytest.mark.parametrize("tz", [None, "UTC", "Europe/Berlin"])
@pytest.mark.parametrize("unit", ["ms", "us", "ns"])
def test_datetime_columns_keep_their_dtype(engine, unit, tz):
    base = dt.datetime(2024, 3, 1, 12, 0, 0)
    ts = [base + dt.timedelta(seconds=s) for s in (0, 1, 20, 21)]
    dtype = pl.Datetime(unit, tz)
    ev = pl.DataFrame({"type": ["A", "B", "A", "B"],
                       "time": pl.Series(ts, dtype=pl.Datetime(unit)).dt.replace_time_zone(tz)})
    assert ev.schema["time"] == dtype
    # SLIDE: windows [10 s k, 10 s k + 10 s) aligned to the epoch: (a0 b1) in [12:00:00, 12:00:10),
    # (a20 b21) in [12:00:20, 12:00:30); (a0 b21) spans 21 s
    res = run(Q + " WITHIN 10 s SLIDE 10 s", ev, engine=engine)
    assert res.columns == ["window_start", "window_end", "COUNT(*)"]
    assert res.schema["window_start"] == dtype and res.schema["window_end"] == dtype
    start = pl.Series([base, base + dt.timedelta(seconds=20)], dtype=pl.Datetime(unit)).dt.replace_time_zone(tz)
    assert res["window_start"].to_list() == start.to_list()
    assert res["window_end"].to_list() == (start + dt.timedelta(seconds=10)).to_list()
    assert res["COUNT(*)"].to_list() == [1, 1]
    # EMIT CHANGES: one row per B, column named like the time column, same dtype
    res = run(Q + " WITHIN 1 minute EMIT CHANGES", ev, engine=engine)
    assert res.columns == ["time", "COUNT(*)"]
    assert res.schema["time"] == dtype
    assert res["time"].to_list() == [ev["time"][1], ev["time"][3]]
    assert res["COUNT(*)"].to_list() == [1, 3]


def test_datetime_durations_must_be_whole_units(engine):
    ev = ab().with_columns(pl.from_epoch("time", "s").cast(pl.Datetime("ms")))
    with pytest.raises(CepvecPlanError, match=r"^WITHIN 1500 us is not a whole number of milliseconds "):
        run(Q + " WITHIN 1500 us", ev, engine=engine)
    res = run(Q + " WITHIN 2000 ms", ev, engine=engine)
    assert rows(res) == [(2,)]  # (a1 b2), (a3 b4): spans of 1 s; (a1 b4) spans 3 s


def test_date_time_column(engine):
    days = [dt.date(2020, 1, d) for d in (1, 2, 3, 4)]
    ev = pl.DataFrame({"type": ["A", "B", "A", "B"], "time": days})
    # 2020-01-01 is day 18262 since the epoch (even): 2-day windows start on 01-01 and 01-03
    res = run(Q + " WITHIN 2 days SLIDE 2 days", ev, engine=engine)
    assert res.schema["window_start"] == pl.Date
    assert rows(res) == [(days[0], dt.date(2020, 1, 3), 1), (days[2], dt.date(2020, 1, 5), 1)]


@pytest.mark.parametrize("dtype", [pl.Int32, pl.UInt32, pl.Int64])
def test_integer_time_dtype_is_kept(engine, dtype):
    ev = ab().with_columns(pl.col("time").cast(dtype))
    res = run(Q + " WITHIN 2 SLIDE 2", ev, engine=engine)
    assert res.schema["window_start"] == dtype and res.schema["window_end"] == dtype
    # windows [2k, 2k + 2): (a1 b2) needs 2k <= 1 and 2k + 2 > 2: none; (a3 b4): 2k <= 3 and
    # 2k + 2 > 4: none; (a1 b4) spans 3 >= 2
    assert rows(res) == []
    res = run(Q + " WITHIN 2 SLIDE 1", ev, engine=engine)
    # [1, 3): (a1 b2); [3, 5): (a3 b4)
    assert rows(res) == [(1, 3, 1), (3, 5, 1)]
    res = run(Q + " WITHIN 5 EMIT CHANGES", ev, engine=engine)
    # b2: (a1 b2); b4: (a1 b2), (a1 b4), (a3 b4)
    assert res.schema["time"] == dtype
    assert rows(res) == [(2, 1), (4, 3)]


# ====================================================================== input formats


def test_input_formats(engine):
    pdf = pd.DataFrame({"type": ["A", "B", "A", "B"], "time": [1, 2, 3, 4], "x": [1.0, None, 3.0, 4.0]})
    want = [(3, 5.0)]  # SUM(A.x) over (a1 b2), (a1 b4), (a3 b4) = 1 + 1 + 3
    q = "RETURN COUNT(*), SUM(A.x) PATTERN SEQ(A, B)"
    assert rows(run(q, pdf, engine=engine)) == want
    table = pa.Table.from_pandas(pdf, preserve_index=False)
    assert rows(run(q, table, engine=engine)) == want
    assert rows(run(q, table.to_batches()[0], engine=engine)) == want
    assert rows(run(q, pl.from_pandas(pdf).lazy(), engine=engine)) == want


# ====================================================================== nulls


def test_null_attribute_in_comparisons_is_false(engine):
    ev = ab(x=[1, None, None, 5])
    # a local predicate on a null is false: a3 cannot bind A
    assert rows(run(Q + " WHERE A.x < 10", ev, engine=engine)) == [(2,)]
    # an edge predicate with a null side is false: (a1 b2) 1 < null, (a3 b4) null < 5; (a1 b4) holds
    assert rows(run(Q + " WHERE A.x < B.x", ev, engine=engine)) == [(1,)]
    # three-valued logic: NOT (null > 3) is unknown, not true: only a1 binds A -> (a1 b2), (a1 b4)
    assert rows(run(Q + " WHERE NOT (A.x > 3)", ev, engine=engine)) == [(2,)]
    # unknown OR true is true; unknown OR unknown is unknown (a3 x is null)
    assert rows(run(Q + " WHERE A.x / 0 = 1 OR A.x = 1", ev, engine=engine)) == [(2,)]
    # division by zero is null: the predicate is never true
    assert rows(run(Q + " WHERE A.x / 0 = 1", ev, engine=engine)) == []
    # != with a null is also false
    assert rows(run(Q + " WHERE A.x != 7", ev, engine=engine)) == [(2,)]


def test_null_group_values_form_their_own_group_ordered_last(engine):
    ev = pl.DataFrame({"type": ["A", "B", "A", "B", "A", "B"], "time": [1, 2, 3, 4, 5, 6],
                       "g": [None, None, "y", "y", "x", "x"]})
    res = run("RETURN g, COUNT(*) PATTERN SEQ(A, B) GROUP-BY g", ev, engine=engine)
    assert rows(res) == [("x", 1), ("y", 1), (None, 1)]
    # with a SLIDE window: ordered by group, then window
    res = run("RETURN g, COUNT(*) PATTERN SEQ(A, B) GROUP-BY g WITHIN 2 SLIDE 1", ev, engine=engine)
    assert rows(res) == [("x", 5, 7, 1), ("y", 3, 5, 1), (None, 1, 3, 1)]


def test_null_equivalence_values_form_their_own_partition(engine):
    # [id]: nulls match nulls (as GROUP BY), never a value
    ev = pl.DataFrame({"type": ["A", "B", "A", "B"], "time": [1, 2, 3, 4], "id": [None, None, 1, None]})
    # partition null: a1 b2 b4 -> (a1 b2), (a1 b4); partition 1: a3 alone
    assert rows(run(Q + " WHERE [id]", ev, engine=engine)) == [(2,)]


def test_nan_group_values_form_one_group(engine):
    # NaN keys: all NaNs form one group (as polars group_by does), distinct from null.
    # BUG: the reference engine keys NaN as the tuple ("NaN",), so sorting the groups raises
    # TypeError ('<' between tuple and float) and the group column cannot be built.
    ev = pl.DataFrame({"type": ["A", "B", "A", "B", "A", "B"], "time": [1, 2, 3, 4, 5, 6],
                       "g": [1.0, 1.0, float("nan"), float("nan"), None, None]})
    res = run("RETURN g, COUNT(*) PATTERN SEQ(A, B) GROUP-BY g", ev, engine=engine)
    got = rows(res)
    assert len(got) == 3
    assert got[0] == (1.0, 1)
    assert math.isnan(got[1][0]) and got[1][1] == 1
    assert got[2] == (None, 1)


def test_null_values_in_aggregates(engine):
    # a1 (x=1), b2 (x=null), a3 (x=null), b4 (x=5); matches (a1 b2), (a1 b4), (a3 b4)
    ev = ab(x=[1, None, None, 5])
    q = ("RETURN COUNT(*), COUNT(A), SUM(A.x), MIN(A.x), MAX(A.x), AVG(A.x), "
         "SUM(B.x), MIN(B.x), AVG(B.x) PATTERN SEQ(A, B)")
    res = run(q, ev, engine=engine)
    # COUNT(A) counts events (3), nulls included; SUM(A.x) = 1 + 1 (a3 null skipped) = 2;
    # AVG(A.x) = SUM over the non-null values / their number = 2 / 2 = 1.0 (not 2 / 3);
    # B: x over b2, b4, b4 = null, 5, 5 -> SUM 10, MIN 5, AVG 5.0
    assert rows(res) == [(3, 3, 2, 1, 1, 1.0, 10, 5, 5.0)]
    # all null -> null (and the aggregate keeps its dtype)
    res = run("RETURN COUNT(*), SUM(A.x), MIN(A.x), MAX(A.x), AVG(A.x) PATTERN SEQ(A, B)",
                     ab(x=pl.Series([None] * 4, dtype=pl.Int64)), engine=engine)
    assert rows(res) == [(3, None, None, None, None)]
    assert res.schema["SUM(A.x)"] == pl.Int64 and res.schema["AVG(A.x)"] == pl.Float64


# ====================================================================== overflow


def _seventy_a() -> pl.DataFrame:
    return pl.DataFrame({"type": ["A"] * 70, "time": list(range(70))})


@pytest.mark.parametrize("engine", ["greta", "auto"])
def test_kleene_count_overflow_raises(engine):
    # A+ over 70 A events with distinct times has 2^70 - 1 trends (every non-empty subset);
    # docs/semantics.md: nothing ever wraps around silently. (The reference engine would have to
    # build 2^70 matches; its overflow check is exercised on the SUM path below.)
    q = "RETURN COUNT(*) PATTERN A+"
    with pytest.raises(CepvecOverflowError) as info:
        cepvec.run(q, _seventy_a(), engine=engine)
    assert q in str(info.value) and "numeric='float64'" in str(info.value)


@pytest.mark.parametrize("engine", ["greta", "auto"])
def test_kleene_count_float64_mode(engine):
    res = cepvec.run("RETURN COUNT(*) PATTERN A+", _seventy_a(), engine=engine, numeric="float64")
    assert res.schema["COUNT(*)"] == pl.Float64
    assert math.isclose(res["COUNT(*)"][0], 2.0**70 - 1, rel_tol=1e-12)


def test_integer_sum_overflow_raises_naming_the_query(engine):
    # A+ over three events with x = 2^62: every a is in 4 of the 7 trends: SUM = 12 * 2^62 > int64
    ev = pl.DataFrame({"type": ["A"] * 3, "time": [1, 2, 3], "x": [2**62] * 3})
    q = "RETURN COUNT(*), SUM(A.x) PATTERN A+"
    with pytest.raises(CepvecOverflowError) as info:
        run(q, ev, engine=engine)
    assert q in str(info.value) and "numeric='float64'" in str(info.value)
    assert isinstance(info.value, OverflowError)  # callers may catch the builtin
    if engine == "reference":  # the oracle's message names the aggregate, its value and the group
        assert str(info.value) == (
            f"SUM(A.x) = {12 * 2**62} does not fit in int64 for group () of query '{q}'; pass "
            "numeric='float64' for approximate results")
        evg = ev.with_columns(g=pl.lit("k"))
        qg = "RETURN g, SUM(A.x) PATTERN A+ GROUP-BY g"
        with pytest.raises(CepvecOverflowError) as info:
            run(qg, evg, engine=engine)
        assert "('k',)" in str(info.value) and qg in str(info.value)


def test_integer_sum_overflow_float64_mode(engine):
    ev = pl.DataFrame({"type": ["A"] * 3, "time": [1, 2, 3], "x": [2**62] * 3})
    res = run("RETURN COUNT(*), SUM(A.x) PATTERN A+", ev, engine=engine, numeric="float64")
    assert res.schema == pl.Schema({"COUNT(*)": pl.Float64, "SUM(A.x)": pl.Float64})
    assert res["COUNT(*)"][0] == 7.0
    assert math.isclose(res["SUM(A.x)"][0], 12 * 2.0**62, rel_tol=1e-12)


_MIN64 = -(2**63)


@pytest.mark.filterwarnings("ignore::cepvec.errors.CepvecWarning")  # no C in the input
@pytest.mark.parametrize("text,types,x,ids", [
    # 2 matches x -2^62 = -2^63: the product fits (an exact test, not |a| > MAX // |b|)
    ("RETURN COUNT(*), SUM(B.x) PATTERN SEQ(A, B)", "AAB", [0, 0, -(2**62)], None),
    # the partitions of a group added up (EMIT CHANGES, [id]): -2^63 fits
    ("RETURN SUM(A.x) PATTERN SEQ(A, B) WHERE [id] EMIT CHANGES", "AAB", [-(2**62), -(2**62), 0], [1, 1, 1]),
    ("RETURN COUNT(*), SUM(p1.x) PATTERN SEQ(A p0, NOT C m, B p1, C p2) WHERE [id] WITHIN 30 EMIT CHANGES",
     "AAB", [-(2**62)] * 3, [1, 1, 1]),
])
def test_the_int64_minimum_is_not_an_overflow(engine, text, types, x, ids):
    """docs/semantics.md: exact sums raise only when a value leaves int64; -2^63 is inside."""
    ev = pl.DataFrame({"type": list(types), "time": [17, 21, 36], "x": x, **({"id": ids} if ids else {})})
    assert run(text, ev, engine=engine).equals(cepvec.run(text, ev, engine="reference"))
    if "EMIT" not in text:
        assert run(text, ev, engine=engine)["SUM(B.x)"].to_list() == [_MIN64]
        with pytest.raises(CepvecOverflowError):  # one match more: -3 x 2^62
            run(text, pl.concat([ev[:1], ev]).with_columns(time=pl.Series([1, 17, 21, 36])), engine=engine)


def test_exact_product_overflow_test_near_the_limits():
    """``_mul_ovf`` (kernels/linear/arith.py) against Python integers on products around +-2^63."""
    import numba

    from cepvec.kernels.linear.arith import _mul_ovf

    mul_ovf = numba.njit(lambda a, b: _mul_ovf(a, b))
    edge = [0, 1, -1, 2, -2, 3, -3, 2**31, -(2**31), 2**32 - 1, 2**62, -(2**62), 2**62 + 1, 3037000499,
            3037000500, -3037000500, 2**63 - 1, _MIN64, _MIN64 + 1]
    for a in edge:
        for b in edge:
            assert mul_ovf(np.int64(a), np.int64(b)) == (not _MIN64 <= a * b < 2**63), (a, b)


# ====================================================================== unknown event types


def test_query_type_missing_from_string_column_warns(engine):
    with pytest.warns(CepvecWarning) as rec:
        res = run("RETURN COUNT(*) PATTERN SEQ(A, C)", ab(), engine=engine)
    assert [str(w.message) for w in rec] == [
        "event type 'C' named in the query does not occur in column 'type' (seen: A, B); check the spelling"]
    package = str(Path(cepvec.__file__).parent)  # the warning points at the caller, not into cepvec
    assert rec[0].filename.endswith(".py") and not rec[0].filename.startswith(package)
    assert res.height == 0 and res.columns == ["COUNT(*)"]


@pytest.mark.parametrize("first_c", [3, 100, 5_000, 70_000])
def test_a_type_first_seen_late_in_the_column_does_not_warn(first_c):
    """The check reads the first 64 rows, then 4 096, then 65 536, then the column: a type first seen at
    any of those depths is found, and one never seen warns."""
    types = np.array(["A", "B"] * 40_000)
    types[first_c] = "C"
    ev = pl.DataFrame({"type": types, "time": np.arange(len(types))})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cepvec.run("RETURN COUNT(*) PATTERN SEQ(A, C) WITHIN 2", ev)
    with pytest.warns(CepvecWarning, match="event type 'D' named in the query does not occur"):
        cepvec.run("RETURN COUNT(*) PATTERN SEQ(A, D) WITHIN 2", ev)


def test_query_type_missing_from_categorical_column_warns(engine):
    ev = ab().with_columns(pl.col("type").cast(pl.Categorical))
    with pytest.warns(CepvecWarning, match="event type 'C' named in the query does not occur"):
        run("RETURN COUNT(*) PATTERN SEQ(A, C)", ev, engine=engine)
    assert rows(run(Q, ev, engine=engine)) == [(3,)]


def test_query_type_missing_from_enum_column_raises(engine):
    ev = ab().with_columns(pl.col("type").cast(pl.Enum(["A", "B", "D"])))
    raises_exactly(CepvecPlanError,
                   "event type 'C' in the query is not a category of the Enum type column 'type' (A, B, D); "
                   "check the spelling", cepvec.run, "RETURN COUNT(*) PATTERN SEQ(A, C)", ev, engine=engine)
    # a category without events is fine, silently
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert rows(run("RETURN COUNT(*) PATTERN SEQ(A, D)", ev, engine=engine)) == []
        assert rows(run(Q, ev, engine=engine)) == [(3,)]


def test_no_warning_when_types_are_present(engine):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run(Q, ab(), engine=engine)


# ====================================================================== output schema


def _typed_events() -> pl.DataFrame:
    return pl.DataFrame({
        "type": ["A", "B", "A", "B"],
        "time": [1, 2, 3, 4],
        "g": pl.Series([7, 7, 7, 7], dtype=pl.Int32),
        "i": pl.Series([1, 2, 3, 4], dtype=pl.Int16),
        "f": pl.Series([0.5, 1.5, 2.5, 3.5], dtype=pl.Float32),
        "s": ["p", "q", "r", "t"],
    })


AGGS = "COUNT(*), COUNT(A), SUM(A.i), SUM(A.f), MIN(A.i), MAX(A.f), MIN(A.s), AVG(A.i), AVG(A.f)"
AGG_DTYPES = {"COUNT(*)": pl.Int64, "COUNT(A)": pl.Int64, "SUM(A.i)": pl.Int64, "SUM(A.f)": pl.Float64,
              "MIN(A.i)": pl.Int16, "MAX(A.f)": pl.Float32, "MIN(A.s)": pl.String,
              "AVG(A.i)": pl.Float64, "AVG(A.f)": pl.Float64}


@pytest.mark.parametrize("window,win_cols", [
    ("", {}),
    (" WITHIN 10", {}),
    (" WITHIN 10 EMIT CHANGES", {"time": pl.Int64}),
    (" WITHIN 10 SLIDE 5", {"window_start": pl.Int64, "window_end": pl.Int64}),
])
def test_output_columns_and_dtypes(engine, window, win_cols):
    q = f"RETURN g, {AGGS} PATTERN SEQ(A, B) GROUP-BY g{window}"
    want = {"g": pl.Int32} | win_cols | AGG_DTYPES
    res = run(q, _typed_events(), engine=engine)
    assert res.schema == pl.Schema(want)
    assert cepvec.compile(q).output_columns == tuple(want)
    # the same schema when nothing matches
    with pytest.warns(CepvecWarning):
        empty = run(q, _typed_events().filter(pl.col("type") == "A"), engine=engine)
    assert empty.height == 0
    assert empty.schema == pl.Schema(want)


def test_output_values_without_window(engine):
    # matches (a1 b2), (a1 b4), (a3 b4): A.i = 1, 1, 3; A.f = 0.5, 0.5, 2.5; A.s = p, p, r
    res = run(f"RETURN g, {AGGS} PATTERN SEQ(A, B) GROUP-BY g", _typed_events(), engine=engine)
    assert rows(res) == [(7, 3, 3, 5, 3.5, 1, 2.5, "p", 5 / 3, 3.5 / 3)]


def test_output_dtypes_float64_mode(engine):
    q = f"RETURN g, {AGGS} PATTERN SEQ(A, B) GROUP-BY g"
    res = run(q, _typed_events(), engine=engine, numeric="float64")
    want = {"g": pl.Int32} | AGG_DTYPES | {"COUNT(*)": pl.Float64, "COUNT(A)": pl.Float64, "SUM(A.i)": pl.Float64}
    assert res.schema == pl.Schema(want)
    assert rows(res) == [(7, 3.0, 3.0, 5.0, 3.5, 1, 2.5, "p", 5 / 3, 3.5 / 3)]


def test_output_labels_as_written_and_aliases(engine):
    ev = ab(x=[1, 2, 3, 4])
    res = run("RETURN count(*), sum( A.x ) AS 'my sum', Min(A.x) AS lo PATTERN SEQ(A, B)", ev,
                     engine=engine)
    assert res.columns == ["count(*)", "my sum", "lo"]
    res = run("PATTERN SEQ(A, B) AGG COUNT, SUM(A.x)", ev, engine=engine)
    assert res.columns == ["COUNT", "SUM(A.x)"]


def test_default_aggregate_is_count_star(engine):
    # SASE form without RETURN, A-Seq form without AGG
    assert run("EVENT SEQ(A, B)", ab(), engine=engine).columns == ["COUNT(*)"]
    assert rows(run("PATTERN SEQ(A, B)", ab(), engine=engine)) == [(3,)]


def test_group_attributes_always_output(engine):
    # every GROUP-BY attribute is a column even if RETURN does not list it, in GROUP-BY order
    ev = ab(g=["u", "u", "v", "v"], h=[1, 1, 1, 1])
    res = run("RETURN COUNT(*) PATTERN SEQ(A, B) GROUP-BY h, g", ev, engine=engine)
    assert res.columns == ["h", "g", "COUNT(*)"]
    assert rows(res) == [(1, "u", 1), (1, "v", 1)]
    res = run("RETURN g AS grp, COUNT(*) PATTERN SEQ(A, B) GROUP-BY g", ev, engine=engine)
    assert res.columns == ["grp", "COUNT(*)"]


def test_rows_ordered_by_group_then_time(engine):
    ev = pl.DataFrame({"type": ["A", "B", "A", "B", "B", "A", "B"], "time": [1, 2, 3, 4, 5, 6, 7],
                       "g": ["z", "z", "a", "a", "z", "a", "a"]})
    res = run("RETURN g, COUNT(*) PATTERN SEQ(A, B) GROUP-BY g WITHIN 10 EMIT CHANGES", ev, engine=engine)
    # a: a3 b4 a6 b7 -> t4: 1, t7: 3; z: a1 b2 b5 -> t2: 1, t5: 2
    assert rows(res) == [("a", 4, 1), ("a", 7, 3), ("z", 2, 1), ("z", 5, 2)]


def test_no_rows_without_matches(engine):
    res = run("RETURN COUNT(*) PATTERN SEQ(B, A)", pl.DataFrame({"type": ["A", "B"], "time": [1, 2]}),
                     engine=engine)
    assert res.height == 0 and res.schema == pl.Schema({"COUNT(*)": pl.Int64})


# ====================================================================== windows (contract decisions)


def test_slide_larger_than_within_leaves_gaps(engine):
    # WITHIN 3 SLIDE 10: windows [0, 3), [10, 13), ...; a5 b6 lies in none
    ev = pl.DataFrame({"type": ["A", "B", "A", "B", "A", "B"], "time": [1, 2, 5, 6, 11, 12]})
    res = run(Q + " WITHIN 3 SLIDE 10", ev, engine=engine)
    assert rows(res) == [(0, 3, 1), (10, 13, 1)]


def test_negative_times_under_slide_are_an_error(engine):
    # windows start at k*s for k >= 0 only: an event before time 0 could never be counted, so it is
    # an error (docs/semantics.md 6), not a silent empty result
    ev = pl.DataFrame({"type": ["A", "B", "A", "B"], "time": [1, -4, -5, 2]})
    with pytest.raises(cepvec.CepvecDataError) as info:
        run(Q + " WITHIN 3 SLIDE 1", ev, engine=engine)
    assert str(info.value) == (
        "time column 'time' has a negative time at row 0 (-5); SLIDE windows start at time 0 (window k covers "
        "[k*SLIDE, k*SLIDE + WITHIN), k >= 0), so such events could never be counted. Shift the times (e.g. "
        "subtract the minimum) or filter those rows")
    # without SLIDE negative times are ordinary: (a-5 b-4) and (a1 b2); (a-5 b2) spans 7 >= 3
    assert rows(run(Q + " WITHIN 3", ev, engine=engine)) == [(2,)]


def test_emit_changes_with_slide_is_rejected():
    with pytest.raises(cepvec.NotSupportedError) as info:
        cepvec.compile(Q + " WITHIN 3 SLIDE 1 EMIT CHANGES")
    assert info.value.message == (
        "not supported: EMIT CHANGES with SLIDE; use WITHIN w EMIT CHANGES for continuous results, "
        "or WITHIN w SLIDE s for one row per window")


def test_emit_changes_without_within_is_unbounded(engine):
    ev = pl.DataFrame({"type": ["A", "B", "B"], "time": [1, 100, 10_000]})
    assert rows(run(Q + " EMIT CHANGES", ev, engine=engine)) == [(100, 1), (10_000, 2)]


def test_emit_changes_rows_only_at_end_events_with_a_match(engine):
    # END events are events that can bind the last variable (type and local predicates):
    # b2 (x=0) fails B.x > 0 -> no row at 2 although (a1 b2) is in (0, 2] for SEQ(A, B) without the
    # predicate; b4 has no match in (2, 4] -> no row; b6: (a5 b6) -> 1.
    ev = pl.DataFrame({"type": ["A", "B", "B", "A", "B"], "time": [1, 2, 4, 5, 6], "x": [0, 0, 1, 0, 1]})
    res = run(Q + " WHERE B.x > 0 WITHIN 2 EMIT CHANGES", ev, engine=engine)
    assert rows(res) == [(6, 1)]


# ====================================================================== decisions recorded in docs/semantics.md


def test_equality_predicate_with_nulls_is_false(engine):
    # docs/semantics.md: "A comparison with a null attribute is false". A.id = B.id is an edge
    # predicate; with null ids it never holds, exactly like A.id <= B.id.
    # BUG: the compiler rewrites A.id = B.id (and A.id = NEXT(A).id) into the equivalence test [id],
    # under which null ids form their own partition and DO match: 2 matches instead of 0 here,
    # and A+ WHERE A.id = NEXT(A).id gives 3 instead of 2.
    ev = pl.DataFrame({"type": ["A", "A", "B"], "time": [1, 2, 3], "id": pl.Series([None] * 3, dtype=pl.Int64)})
    assert rows(run(Q + " WHERE A.id <= B.id", ev, engine=engine)) == []
    assert rows(run(Q + " WHERE A.id = B.id", ev, engine=engine)) == []
    assert rows(run("RETURN COUNT(*) PATTERN A+ WHERE A.id = NEXT(A).id", ev, engine=engine)) == [(2,)]


def test_equality_rewrite_keeps_non_null_semantics(engine):
    # with values the rewrite is exact: (a1 b3) id 1 = 1; (a2 b3) 2 != 1
    ev = pl.DataFrame({"type": ["A", "A", "B"], "time": [1, 2, 3], "id": [1, 2, 1]})
    assert rows(run(Q + " WHERE A.id = B.id", ev, engine=engine)) == [(1,)]
    assert rows(run(Q + " WHERE [id]", ev, engine=engine)) == [(1,)]


def test_equality_between_positive_variables_does_not_constrain_negated_events(engine):
    # SEQ(A, NOT C, B) WHERE A.id = B.id: the equivalence covers A and B only, so c2 (id 2) blocks
    # (a1 b3); with [id] every event, the negated C included, must share the id, and c2 does not.
    ev = pl.DataFrame({"type": ["A", "C", "B"], "time": [1, 2, 3], "id": [1, 2, 1]})
    assert rows(run("RETURN COUNT(*) PATTERN SEQ(A, NOT C, B) WHERE A.id = B.id", ev, engine=engine)) == []
    assert rows(run("RETURN COUNT(*) PATTERN SEQ(A, NOT C, B) WHERE [id]", ev, engine=engine)) == [(1,)]


def test_nan_equivalence_values_match_like_group_keys(engine):
    # [v] partitions by v with all NaNs in one partition; the qualified form [A.v] must agree.
    # A+ over two NaN events: (a1), (a2), (a1 a2) = 3.
    # BUG: the qualified check compares with != and NaN != NaN, so [A.v] gives 2.
    ev = pl.DataFrame({"type": ["A", "A"], "time": [1, 2], "v": [float("nan"), float("nan")]})
    assert rows(run("RETURN COUNT(*) PATTERN A+ WHERE [v]", ev, engine=engine)) == [(3,)]
    assert rows(run("RETURN COUNT(*) PATTERN A+ WHERE [A.v]", ev, engine=engine)) == [(3,)]


def test_nan_in_predicates_and_aggregates_is_null(engine):
    # NaN compares like null (false) and is skipped by SUM/MIN/MAX/AVG
    ev = ab(x=[1.0, 0.0, float("nan"), 0.0])
    assert rows(run(Q + " WHERE A.x < 5", ev, engine=engine)) == [(2,)]       # a3 excluded
    res = run("RETURN SUM(A.x), MAX(A.x), AVG(A.x) PATTERN SEQ(A, B)", ev, engine=engine)
    assert rows(res) == [(2.0, 1.0, 1.0)]  # (a1 b2), (a1 b4), (a3 b4): 1 + 1, NaN skipped


def test_edge_predicate_between_two_variables_applies_in_both_directions(engine):
    # (SEQ(A a, B b))+ WHERE a.x < b.x: on a -> b and, across the Kleene boundary, b -> a
    # (each variable keeps its event: next a.x < previous b.x).
    # a1 (x=1), b2 (x=5), a3 (x=7), b4 (x=9): a -> b: (a1 b2), (a1 b4), (a3 b4) all hold;
    # (a1 b2)(a3 b4) needs a3.x = 7 < b2.x = 5 -> rejected. So 3, not 4.
    ev = ab(x=[1, 5, 7, 9])
    assert rows(run("RETURN COUNT(*) PATTERN (SEQ(A a, B b))+", ev, engine=engine)) == [(4,)]
    assert rows(run("RETURN COUNT(*) PATTERN (SEQ(A a, B b))+ WHERE a.x < b.x", ev, engine=engine)) == [(3,)]


def test_bare_attribute_predicate_filters_every_event_negated_ones_included(engine):
    # WHERE x > 0 (no variable) is a local predicate on every occurrence, the negated C included:
    # c2 has x = 0, so it is no C-match and does not block (a1 b3)
    ev = pl.DataFrame({"type": ["A", "C", "B"], "time": [1, 2, 3], "x": [1, 0, 1]})
    assert rows(run("RETURN COUNT(*) PATTERN SEQ(A, NOT C, B) WHERE x > 0", ev, engine=engine)) == [(1,)]
    assert rows(run("RETURN COUNT(*) PATTERN SEQ(A, NOT C, B)", ev, engine=engine)) == []


def test_type_name_refers_to_all_its_occurrences(engine):
    # SEQ(A a1, B, A a2) over a1 b2 a3: one match; COUNT(A) falls back to the type (no variable
    # is named A): 2 events; COUNT(a1) = 1; a local predicate on A filters both occurrences
    ev = pl.DataFrame({"type": ["A", "B", "A"], "time": [1, 2, 3], "x": [1, 0, 2]})
    q = "RETURN COUNT(*), COUNT(A), COUNT(a1), SUM(A.x) PATTERN SEQ(A a1, B, A a2)"
    assert rows(run(q, ev, engine=engine)) == [(1, 2, 1, 3)]
    assert rows(run(q + " WHERE A.x > 1", ev, engine=engine)) == []


def test_not_at_start_or_end_only_for_the_whole_pattern():
    with pytest.raises(cepvec.NotSupportedError) as info:
        cepvec.compile("RETURN COUNT(*) PATTERN (SEQ(A, NOT C))+")
    assert info.value.message == (
        "not supported: NOT C at the end of a SEQ nested inside Kleene plus; docs/semantics.md defines negated "
        "start and end only for the whole pattern. Move the NOT between two positive parts")


def test_predicate_between_non_adjacent_variables_is_rejected():
    """Part I: rejected with an error naming it unless the caller allows the match-constructing engine."""
    import polars as pl

    text = "RETURN COUNT(*) PATTERN SEQ(A a, B b, C c) WHERE a.x < c.x"
    df = pl.DataFrame({"type": ["A", "B", "C"], "time": [1, 2, 3], "x": [1, 0, 2]})
    with pytest.raises(cepvec.CepvecQueryError) as info:
        cepvec.run(text, df)
    assert info.value.message.startswith(
        "predicate a.x < c.x compares variables a and c, which are never adjacent in the pattern, so it "
        "cannot be aggregated online; predicates between different variables must relate an event and the "
        "one right after it in a match; pass engine='match'")
    assert (info.value.line, info.value.col) == (1, 50)
    assert cepvec.run(text, df, engine="match")["COUNT(*)"].to_list() == [1]
    assert cepvec.run(text, df, engine="reference")["COUNT(*)"].to_list() == [1]


def test_negated_end_with_emit_changes(engine):
    # SEQ(A, NOT C) WITHIN 5 EMIT CHANGES over a1 c3 a4: END events are a's.
    # t=1: (a1), no C in (1, 1] -> 1. t=4: a1 is killed by c3 (after a1, at or before 4); a4 -> 1.
    ev = pl.DataFrame({"type": ["A", "C", "A"], "time": [1, 3, 4]})
    res = run("RETURN COUNT(*) PATTERN SEQ(A, NOT C) WITHIN 5 EMIT CHANGES", ev, engine=engine)
    assert rows(res) == [(1, 1), (4, 1)]
    # WITHIN 5 alone: a C before first + 5 kills: a1 (c3 < 6); a4 survives -> 1
    assert rows(run("RETURN COUNT(*) PATTERN SEQ(A, NOT C) WITHIN 5", ev, engine=engine)) == [(1,)]


def test_a_type_seen_only_late_in_a_long_column_is_not_reported_missing():
    """The check looks at the first rows, then scans the column for a type it has not seen yet."""
    n = (1 << 16) + 10
    types = ["A"] * (n - 2) + ["B", "C"]
    df = pl.DataFrame({"type": types, "time": list(range(n))})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cepvec.run("RETURN COUNT(*) PATTERN SEQ(A, B, C)", df)["COUNT(*)"][0] == n - 2
    with pytest.warns(cepvec.CepvecWarning, match="event type 'D' named in the query does not occur.*A, B, C"):
        cepvec.run("RETURN COUNT(*) PATTERN SEQ(A, D)", df)

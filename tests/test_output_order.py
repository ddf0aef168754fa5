"""The output order of groups (``cepvec/runtime/output.py``): by GROUP-BY value, nulls last, equal
values in partition order, as Polars' stable sort orders them; integer columns sorted by
:func:`int_order` itself."""

from __future__ import annotations

import datetime as dt

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cepvec
from cepvec.runtime import output as O
from tests.strategies import examples

DTYPES = {pl.Int8: (-128, 127), pl.Int32: (-(2**31), 2**31 - 1), pl.Int64: (-(2**63), 2**63 - 1),
          pl.UInt8: (0, 255), pl.UInt64: (0, 2**64 - 1)}


def _polars_order(col: pl.Series) -> list[int]:
    return pl.DataFrame({"v": col, "row": np.arange(len(col))}).sort(
        "v", nulls_last=True, maintain_order=True)["row"].to_list()


@settings(max_examples=examples(200), deadline=None)
@given(dtype=st.sampled_from(sorted(DTYPES, key=str)), data=st.data())
def test_int_order_is_that_of_the_stable_sort(dtype, data):
    """Rows of an integer column with repeats, nulls and the dtype's extremes: the order of Polars'
    stable sort with nulls last; None only where the values' range and the row numbers do not fit
    in 63 bits (then Polars sorts). A short column (below ``INT_ORDER_FROM``): NumPy's sort when it
    has no null, else None."""
    lo, hi = DTYPES[dtype]
    value = st.integers(lo, hi) | st.sampled_from([lo, hi, 0, 1]) | st.integers(0, 5)
    values = data.draw(st.lists(value | st.none(), max_size=60))
    short = data.draw(st.booleans())
    col = pl.Series("v", values, dtype=dtype)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(O, "INT_ORDER_FROM", 1 << 14 if short else 0)
        got = O.int_order(col)
    present = [v for v in values if v is not None]
    fits = not present or (max(present) - min(present) + 1).bit_length() + len(values).bit_length() <= 63
    if short:
        assert (got is None) == (len(present) < len(values))
        if got is not None:
            assert got.tolist() == _polars_order(col)
    elif not fits or max(present, default=0) >= 2**63:
        assert got is None
    else:
        assert got.tolist() == _polars_order(col)


def test_int_order_of_dates_and_of_other_dtypes(monkeypatch):
    monkeypatch.setattr(O, "INT_ORDER_FROM", 0)
    days = pl.Series("d", [dt.date(2026, 1, 3), None, dt.date(1970, 1, 1), dt.date(2026, 1, 3), dt.date(1900, 5, 5)])
    assert O.int_order(days).tolist() == _polars_order(days) == [4, 2, 0, 3, 1]
    rng = np.random.default_rng(3)
    for col in (pl.Series("t", rng.integers(0, 10**15, 40)).cast(pl.Datetime("us", "Europe/Paris")),
                pl.Series("t", rng.integers(-10**12, 10**12, 40)).cast(pl.Duration("ns")),
                pl.Series("t", rng.integers(0, 86_400 * 10**9, 40)).cast(pl.Time)):
        col = col.scatter([3, 7], None)
        assert O.int_order(col).tolist() == _polars_order(col), col.dtype
    assert O.int_order(pl.Series("v", [None, None], dtype=pl.Int64)).tolist() == [0, 1]
    assert O.int_order(pl.Series("v", ["b", "a"])) is None
    assert O.int_order(pl.Series("v", [0.5, -1.0])) is None


@pytest.mark.parametrize("nulls", [False, True])
def test_many_groups_come_out_in_key_order(monkeypatch, nulls):
    """A run with more groups than :data:`INT_ORDER_FROM`, ids in a random order (and nulls, one
    group): its rows in GROUP-BY order, nulls last, each with the count of its own group."""
    rng = np.random.default_rng(5)
    n = 3 * O.INT_ORDER_FROM
    ids = pl.Series("id", rng.integers(0, n // 2, n) * 7 - 1000)
    if nulls:
        ids = ids.scatter(np.arange(0, n, 97), None)
    df = pl.DataFrame({"type": rng.choice(["A", "B"], n), "time": np.arange(n), "id": ids})
    sorted_here, original = [], O.int_order  # the orders int_order gave (not None: it sorted the groups)
    monkeypatch.setattr(O, "int_order", lambda col: sorted_here.append(original(col)) or sorted_here[-1])
    got = cepvec.run("RETURN id, COUNT(*) PATTERN SEQ(A, B) GROUP-BY id", df)
    a, b = df.filter(pl.col("type") == "A"), df.filter(pl.col("type") == "B")
    want = (a.join(b, on="id", nulls_equal=True).filter(pl.col("time") < pl.col("time_right"))
            .group_by("id").len().sort("id", nulls_last=True))
    assert len(sorted_here) == 1 and len(sorted_here[0]) == df["id"].n_unique() > O.INT_ORDER_FROM
    assert got["id"].to_list() == want["id"].to_list()
    assert got["COUNT(*)"].to_list() == want["len"].to_list()

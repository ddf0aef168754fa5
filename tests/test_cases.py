"""The worked cases (tests/fixtures/cases) on every local engine and every input format.

Each JSON case is read from tests/fixtures/cases through ``load_shared_cases()``. A case is run as

    run(case["query"], <events>, engine=engine)

with the events given as a Polars DataFrame, a pyarrow Table and a pandas
DataFrame, and the result must equal ``expected`` as a multiset of rows
(AVG within 1e-9, see ``tests/fixtures/cases/README.md``). ``expected_match_count`` is
checked against the number of distinct matches ``cepvec.matches`` lists.
"""

from __future__ import annotations

import math

import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import cepvec

from .conftest import load_shared_cases, run_engine


def run(query, events, **kwargs):
    return run_engine(query, events, **kwargs)


AVG_TOL = 1e-9
CASES = load_shared_cases()
CASE_IDS = [c.get("name") or c["_file"] for c in CASES]

# the cases spell the unit out ("seconds"); cepvec takes "s", "ms", "us", "ns"
_UNITS = {None: None, "s": None, "sec": None, "second": None, "seconds": None,
          "ms": "ms", "millisecond": "ms", "milliseconds": "ms",
          "us": "us", "microsecond": "us", "microseconds": "us",
          "ns": "ns", "nanosecond": "ns", "nanoseconds": "ns"}


def _time_unit(case: dict) -> str | None:
    return _UNITS[case.get("time_unit")]


def _as_polars(case: dict) -> pl.DataFrame:
    # infer over every row: attributes missing from the first events must not be dropped
    return pl.DataFrame(case["events"], infer_schema_length=None)


def _as_arrow(case: dict) -> pa.Table:
    return pa.Table.from_pylist(case["events"])


def _as_pandas(case: dict) -> pd.DataFrame:
    return pd.DataFrame.from_records(case["events"])


FORMATS = {"polars": _as_polars, "arrow": _as_arrow, "pandas": _as_pandas}


def _same(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, float) or isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return math.isclose(a, b, rel_tol=AVG_TOL, abs_tol=AVG_TOL)
    return a == b


def assert_rows_equal(result: pl.DataFrame, expected: list[dict], context: str = "") -> None:
    """``result`` equals ``expected`` as a multiset of rows (floats within 1e-9)."""
    got = result.to_dicts()
    if expected:
        want_cols = set(expected[0])
        assert set(result.columns) == want_cols, (
            f"{context}: columns {result.columns} differ from the expected {sorted(want_cols)}")
    assert len(got) == len(expected), f"{context}: {len(got)} rows, expected {len(expected)}:\n{result}"
    unused = list(got)
    for row in expected:
        for k, cand in enumerate(unused):
            if all(_same(cand[c], v) for c, v in row.items()):
                del unused[k]
                break
        else:
            raise AssertionError(f"{context}: expected row {row} not in the result:\n{result}")


def test_cases_are_present():
    assert CASES, "no shared cases found"
    for c in CASES:
        assert {"query", "events", "expected"} <= set(c), c["_file"]


@pytest.mark.parametrize("fmt", list(FORMATS))
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_shared_case(case, fmt, engine):
    events = FORMATS[fmt](case)
    res = run(case["query"], events, engine=engine, time_unit=_time_unit(case))
    assert_rows_equal(res, case["expected"], f"{case['_file']} ({fmt}, {engine})")


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_shared_case_is_insensitive_to_input_order(case, engine):
    # the same events shuffled (reversed): local runs sort by time (stable);
    # events with equal times never combine, so the order among ties is irrelevant
    events = _as_polars(case).reverse()
    res = run(case["query"], events, engine=engine, time_unit=_time_unit(case))
    assert_rows_equal(res, case["expected"], f"{case['_file']} (reversed, {engine})")


@pytest.mark.parametrize("case", [c for c in CASES if "expected_match_count" in c],
                         ids=[n for c, n in zip(CASES, CASE_IDS) if "expected_match_count" in c])
@pytest.mark.parametrize("fmt", list(FORMATS))
def test_shared_case_match_count(case, fmt):
    m = cepvec.matches(case["query"], FORMATS[fmt](case), limit=None, time_unit=_time_unit(case))
    assert m["match"].n_unique() == case["expected_match_count"]


@pytest.mark.parametrize("case", [c for c in CASES if "expected_match_count" in c],
                         ids=[n for c, n in zip(CASES, CASE_IDS) if "expected_match_count" in c])
def test_shared_case_match_count_agrees_with_count_star(case, engine):
    # without windows every match is listed once, so COUNT(*) (when returned) is the match count
    res = run(case["query"], _as_polars(case), engine=engine, time_unit=_time_unit(case))
    if "COUNT(*)" in res.columns and "window_start" not in res.columns:
        assert res["COUNT(*)"].sum() == case["expected_match_count"]

"""``cepvec.run_many``: each frame is exactly what ``cepvec.run`` returns for that query.

* Hypothesis: workloads of generated queries (every shape, window and aggregate of
  ``tests/strategies.py``) over generated streams, every sharing mode, and the same
  input cut into batches at random points;
* input checks and errors: a query that fails names itself.
"""

from __future__ import annotations

import warnings

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import cepvec
from cepvec.sharing.run import run_many as run_many_cut
from tests.strategies import examples, queries, streams

pytestmark = pytest.mark.filterwarnings("ignore::cepvec.errors.CepvecWarning")
MODES = ("none", "auto", "greedy", "exhaustive")


def alone(text, df, **kw) -> pl.DataFrame:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return cepvec.run(text, df, **kw)


def assert_same(got: dict, texts: dict, df, **kw) -> None:
    assert list(got) == list(texts)
    for name, text in texts.items():
        assert_frame_equal(got[name], alone(text, df, **kw), check_exact=True), name


@settings(max_examples=examples(120), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(queries(), min_size=1, max_size=4), streams(), st.sampled_from(MODES), st.data())
def test_run_many_equals_run(texts, df, sharing, data):
    named = {f"n{i}": t for i, t in enumerate(texts)}
    assert_same(cepvec.run_many(named, df, sharing=sharing), named, df)
    cuts = data.draw(st.lists(st.integers(0, len(df)), max_size=4), label="cuts")
    assert_same(run_many_cut(named, df, sharing=sharing, batches=cuts), named, df)


def test_list_names_and_float_numeric():
    ev = pl.DataFrame({"type": ["A", "B", "A", "B"], "time": [1, 2, 3, 5], "x": [1, 2, 3, 4]})
    texts = ["RETURN COUNT(*) PATTERN SEQ(A, B) WITHIN 3", "RETURN SUM(B.x), AVG(A.x) PATTERN SEQ(A, B)"]
    got = cepvec.run_many(texts, ev, numeric="float64")
    assert_same(got, {"q0": texts[0], "q1": texts[1]}, ev, numeric="float64")


def test_a_query_that_fails_to_compile_names_itself():
    with pytest.raises(cepvec.CepvecSyntaxError, match=r"^query 'bad': "):
        cepvec.run_many({"ok": "RETURN COUNT(*) PATTERN SEQ(A, B)", "bad": "RETURN COUNT(*) PATTERN SEQ(A,"},
                        pl.DataFrame({"type": ["A"], "time": [1]}))


def test_a_query_that_reads_a_missing_column_names_itself():
    ev = pl.DataFrame({"type": ["A", "B"], "time": [1, 2]})
    with pytest.raises(cepvec.CepvecPlanError, match=r"^query 'q1': attribute 'id' used by the query"):
        cepvec.run_many(["RETURN COUNT(*) PATTERN SEQ(A, B)", "RETURN id, COUNT(*) PATTERN SEQ(A, B) GROUP-BY id"],
                        ev)


def test_bad_arguments():
    ev = pl.DataFrame({"type": ["A"], "time": [1]})
    with pytest.raises(cepvec.CepvecPlanError, match="sharing must be one of 'auto', 'none'"):
        cepvec.run_many(["RETURN COUNT(*) PATTERN A"], ev, sharing="all")
    with pytest.raises(cepvec.CepvecTypeError, match="queries must be a dict"):
        cepvec.run_many("RETURN COUNT(*) PATTERN A", ev)
    with pytest.raises(cepvec.CepvecTypeError, match="queries is empty"):
        cepvec.run_many({}, ev)
    with pytest.raises(cepvec.CepvecPlanError, match="numeric must be"):
        cepvec.run_many(["RETURN COUNT(*) PATTERN A"], ev, numeric="int32")
    with pytest.raises(cepvec.UnsupportedByEngine, match=r"^query 'q0': engine='aseq' cannot run"):
        cepvec.run_many(["RETURN COUNT(*) PATTERN A+"], ev, engine="aseq")


def test_negative_times_with_slide_fail_as_in_run():
    ev = pl.DataFrame({"type": ["A", "B"], "time": [-1, 2]})
    with pytest.raises(cepvec.CepvecDataError, match=r"^query 'q1': time column 'time' has a negative time at row 0"):
        cepvec.run_many(["RETURN COUNT(*) PATTERN SEQ(A, B)", "RETURN COUNT(*) PATTERN SEQ(A, B) WITHIN 2 SLIDE 1"],
                        ev)

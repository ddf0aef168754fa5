"""The stable time order of unsorted input (cepvec.runtime.prepare.time_order).

The radix sort (kernels/keys.py::stable_order) must be NumPy's stable argsort for any int64
values: ties keep their input order, negative and extreme values, one value, ranges that need
one to eight passes; and an unsorted input runs to the rows of its sorted copy.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cepvec
from cepvec.kernels import _jit
from cepvec.kernels.keys import DESCENT_BLOCK, first_descent, stable_order
from cepvec.runtime import threads
from cepvec.runtime.prepare import is_sorted, time_order
from tests.strategies import examples

I64 = st.integers(-2**63, 2**63 - 1)


@settings(max_examples=examples(300), deadline=None)
@given(values=st.lists(st.integers(-3, 3) | st.integers(-2**40, 2**40) | I64, max_size=200),
       spread=st.sampled_from([1, 2**8 - 1, 2**8, 2**8 + 1, 2**16 + 3, 2**33, 2**62]))
def test_radix_order_is_the_stable_argsort(values, spread):
    t = np.array(values, np.int64)
    assert stable_order(t).tolist() == np.argsort(t, kind="stable").tolist()
    small = (t % spread).astype(np.int64)  # few distinct values: many ties
    assert stable_order(small).tolist() == np.argsort(small, kind="stable").tolist()


@pytest.mark.parametrize("t", [[], [5], [2**63 - 1, -2**63, 0, -2**63, 2**63 - 1], [7] * 10])
def test_radix_order_edge_cases(t):
    t = np.array(t, np.int64)
    assert stable_order(t).tolist() == np.argsort(t, kind="stable").tolist()


@pytest.mark.parametrize("shuffle", ["random", "nearly sorted"])
def test_unsorted_input_gives_the_rows_of_its_sorted_copy(monkeypatch, shuffle):
    """Both branches of time_order (timsort for nearly sorted times, radix sort otherwise) on a run."""
    monkeypatch.setattr(_jit, "NUMPY_BELOW", 0)
    rng = np.random.default_rng(3)
    n = 4000
    t = np.sort(rng.integers(0, 1500, n))
    if shuffle == "random":
        t = rng.permutation(t)
    else:
        t[[10, 11]] = t[[11, 10]] if t[10] != t[11] else (t[10] + 1, t[10])
    assert (1000 * np.count_nonzero(t[1:] < t[:-1]) < n) == (shuffle == "nearly sorted")
    assert time_order(t).tolist() == np.argsort(t, kind="stable").tolist()
    ev = pl.DataFrame({"type": rng.choice(list("ABC"), n), "time": t, "id": rng.integers(0, 20, n)})
    text = "RETURN id, COUNT(*) PATTERN SEQ(A, B, C) WHERE [id] GROUP-BY id WITHIN 40 SLIDE 20"
    ordered = ev.with_row_index("r").sort("time", "r").drop("r")
    assert cepvec.run(text, ev).equals(cepvec.run(text, ordered))


@settings(max_examples=examples(200), deadline=None)
@given(n=st.sampled_from([0, 1, 2, DESCENT_BLOCK, DESCENT_BLOCK + 1, DESCENT_BLOCK + 2, 3 * DESCENT_BLOCK + 5]),
       at=st.lists(st.integers(0, 4000), max_size=3), ties=st.booleans(), data=st.data())
def test_first_descent_and_is_sorted(n, at, ties, data):
    """The first descent, wherever it falls (a block's first or last row, the halves' boundary), ties
    never counted as one; ``is_sorted`` on one thread and in halves on two agree with it."""
    t = np.arange(n, dtype=np.int64) // (2 if ties else 1)
    for i in {a % n for a in at} if n else ():
        t[i] -= data.draw(st.integers(1, 3), label="drop")
    desc = np.flatnonzero(t[1:] < t[:-1])
    want = int(desc[0]) + 1 if len(desc) else -1
    assert first_descent(t) == want
    for n_threads in ("1", "2"):
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(_jit, "NUMPY_BELOW", 0)
            mp.setenv("CEPVEC_NUM_THREADS", n_threads)
            mp.setattr(threads, "MIN_EVENTS_PER_THREAD", 1)
            assert is_sorted(pl.Series(t)) == (want < 0)


def test_is_sorted_at_the_halves_boundary(monkeypatch):
    """A descent between the last row of the first half and the first of the second: each half is
    sorted, the column is not."""
    monkeypatch.setattr(_jit, "NUMPY_BELOW", 0)
    monkeypatch.setenv("CEPVEC_NUM_THREADS", "2")
    monkeypatch.setattr(threads, "MIN_EVENTS_PER_THREAD", 1)
    t = np.arange(5000, dtype=np.int64)
    m = threads.halves(len(t))[1][0]
    assert m == 2500
    t[m:] -= 10  # rows m-1, m descend
    assert first_descent(t[:m]) == first_descent(t[m:]) == -1
    assert not is_sorted(pl.Series(t))
    assert is_sorted(pl.Series(np.sort(t)))

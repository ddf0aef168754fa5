"""Partition ids (cepvec.runtime.partitions.Partitions): every key dtype gets the ids of the Polars join.

A single key column of a String, Categorical, Enum or float dtype takes int64 codes of its rows
(hashes, physical ids, bit patterns) and a Numba table; the ids and the key frame must be those
of the join of every row, batch after batch, with nulls, NaN, -0.0 and hash collisions.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cepvec
from cepvec.kernels import _jit
from cepvec.runtime import partitions as P
from tests.strategies import examples

Q = cepvec.compile("RETURN id, COUNT(*) PATTERN SEQ(A, B) WHERE [id] GROUP-BY id")

POOLS = {
    "string": (pl.String, ["a", "b", "long key past twelve bytes", "", None, "é"]),
    "categorical": (pl.Categorical, ["x", "y", "z", None]),
    "enum": (pl.Enum(["p", "q", "r", "s"]), ["s", "q", "p", None]),
    "float": (pl.Float64, [0.0, -0.0, 1.5, float("nan"), -float("nan"), None, 1e300, -2.25]),
}


def _ids_in_batches(parts: P.Partitions, col: pl.Series, cuts: list[int], method) -> list[int]:
    bounds = [0, *sorted(set(cuts)), len(col)]
    out: list[int] = []
    for a, b in zip(bounds[:-1], bounds[1:]):
        if b > a:
            out += method(parts, pl.DataFrame({"id": col[a:b]})).tolist()
    return out


@settings(max_examples=examples(150), deadline=None)
@given(kind=st.sampled_from(sorted(POOLS)), data=st.data())
def test_coded_ids_are_those_of_the_join(kind, data):
    dtype, pool = POOLS[kind]
    values = data.draw(st.lists(st.sampled_from(pool), max_size=40), label="keys")
    cuts = data.draw(st.lists(st.integers(0, len(values)), max_size=3), label="cuts")
    col = pl.Series("id", values, dtype=pl.Float64 if kind == "float" else pl.String).cast(dtype)
    coded, joined = P.Partitions(Q, {"id": dtype}), P.Partitions(Q, {"id": dtype})
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_jit, "NUMPY_BELOW", 0)
        got = _ids_in_batches(coded, col, cuts, P.Partitions.ids)
    want = _ids_in_batches(joined, col, cuts, P.Partitions._joined_ids)
    assert got == want
    assert coded.keys.equals(joined.keys)
    if kind != "float" or len(values):
        assert P._row_codes(col) is not None  # the coded path ran, not the join


@pytest.mark.parametrize("kind", sorted(POOLS))
def test_coded_ids_of_every_pool_value_in_two_orders(kind):
    """Every value of the pool (null, NaN, -NaN, -0.0 beside 0.0, ...) in a first batch and again,
    reversed, with the pool's first value, in a second one."""
    dtype, pool = POOLS[kind]
    values = pool[::-1] + pool + pool[:1]
    col = pl.Series("id", values, dtype=pl.Float64 if kind == "float" else pl.String).cast(dtype)
    coded, joined = P.Partitions(Q, {"id": dtype}), P.Partitions(Q, {"id": dtype})
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_jit, "NUMPY_BELOW", 0)
        got = _ids_in_batches(coded, col, [len(pool) // 2], P.Partitions.ids)
    assert got == _ids_in_batches(joined, col, [len(pool) // 2], P.Partitions._joined_ids)
    assert coded.keys.equals(joined.keys)


def test_a_hash_collision_falls_back_to_the_join(monkeypatch):
    """Every string hashed to one code: the check finds rows of one code with different keys."""
    col = pl.Series("id", ["a", "b", "a", None, "c"])
    monkeypatch.setattr(_jit, "NUMPY_BELOW", 0)
    monkeypatch.setattr(P, "_row_codes", lambda c: (np.zeros(len(c), np.int64), False))
    got = P.Partitions(Q, {"id": pl.String}).ids(pl.DataFrame({"id": col}))
    assert got.tolist() == [0, 1, 0, 2, 3]


@pytest.mark.parametrize("keys", [np.arange(1000, dtype=np.int64) << 44,
                                  np.arange(1000, dtype=np.float64).view(np.int64),
                                  np.arange(1000, dtype=np.int64)])
def test_hash_slots_spread_keys_that_differ_in_high_bits(keys):
    """Packed ids (``k << 44``) and integral floats differ only in their high bits; a slot taken from
    the low bits of the product put them all in one slot (a run took 3.2 s instead of 60 ms)."""
    from cepvec.kernels.keys import _slot

    shift = 64 - 11  # a table of 2048 slots
    slots = {int(_slot(np.int64(k), np.int64(shift))) for k in keys}
    assert len(slots) >= 600
    assert all(0 <= s < 2048 for s in slots)

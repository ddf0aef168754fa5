"""``kernels/_jit.py::borrow``: an array passed to a jitted call without reference counts.

The borrowed array must be the same memory (reads and writes go through), keep its shape, strides
and dtype (2-D, non-contiguous, read-only, bool), and leave the array's reference count alone.
"""

from __future__ import annotations

import sys

import numba
import numpy as np
import pytest

from cepvec.kernels._jit import borrow


@numba.njit
def _callee(a, i, v):
    a[i] = v
    return a.shape[0], a.strides[0], a.sum()


@numba.njit
def _write_through(a, i, v):
    return _callee(borrow(a), i, v)


@numba.njit
def _read(a):
    b = borrow(a)
    return b.shape, b.strides, b[b.shape[0] - 1]


def test_writes_through_and_keeps_the_layout():
    a = np.arange(10, dtype=np.int64)
    n, stride, total = _write_through(a, 3, 100)
    assert (n, stride) == (10, 8) and a[3] == 100 and total == a.sum()
    s = np.arange(20.0)[::3]  # a strided view
    assert _read(s) == (s.shape, s.strides, s[-1])
    m = np.arange(12, dtype=np.int32).reshape(3, 4)[:, 1:]  # 2-D, not contiguous
    shape, strides, last = _read(m)
    assert shape == m.shape and strides == m.strides and np.array_equal(last, m[-1])
    ro = np.array([True, False, False, True, True])
    ro.flags.writeable = False
    assert _read(ro)[2] == ro[-1]


def test_borrowed_arrays_in_a_loop_leave_the_reference_count_alone():
    """A million borrows of an array inside a kernel: its Python reference count is unchanged and
    the data still reads (a borrow that took or dropped a reference would show here or crash)."""
    @numba.njit
    def borrow_many(a, n):
        t = 0.0
        for _ in range(n):
            t += borrow(a)[2]
        return t

    a = np.arange(7.0)
    before = sys.getrefcount(a)
    assert borrow_many(a, 1_000_000) == 2_000_000.0
    assert sys.getrefcount(a) == before


def test_borrow_refuses_what_is_not_an_array():
    @numba.njit
    def bad(x):
        return borrow(x)

    with pytest.raises(numba.core.errors.TypingError):
        bad(3)

"""Checked int64 addition and multiplication of the trend kernels (also used by ``scan.py``)."""

from __future__ import annotations

import numpy as np

from .._jit import jit_inline
from .constants import _I64_MAX, _I64_MIN, ERR_OVERFLOW


@jit_inline
def _add(a, b, check, err):
    """a + b, flagging int64 overflow in ``err`` (setup code; per-event code uses the flag forms)."""
    if check and ((b > 0 and a > _I64_MAX - b) or (b < 0 and a < _I64_MIN - b)):
        err[0] = ERR_OVERFLOW
        return a
    return a + b


@jit_inline
def _sadd(a, b, check):
    """(a + b, False), or (a, True) when it would overflow int64. The test must not compute the
    wrapped sum first: LLVM treats signed overflow as impossible and folds such a test away."""
    if check and ((b > 0 and a > _I64_MAX - b) or (b < 0 and a < _I64_MIN - b)):
        return a, True
    return a + b, False


#: the largest int64 whose square fits in int64 (products of factors this small need no test)
_SQRT_MAX = 3037000499


@jit_inline
def _smul(a, b, check):
    """(a * b, False), or (a, True) when it would overflow int64. Exact: the product wrapped in uint64
    divided by one factor gives the other back iff it did not wrap (as ``linear/arith.py::_mul_ovf``;
    ``|x|`` of -2^63 is itself -2^63, which made 1 x -2^63 an overflow and 2 x -2^63 none)."""
    if check and not (-_SQRT_MAX <= a <= _SQRT_MAX and -_SQRT_MAX <= b <= _SQRT_MAX):  # else |a b| < 2^63
        if a == 0 or b == 0:
            return a * b, False
        if a == -1 or b == -1:
            if a == _I64_MIN or b == _I64_MIN:
                return a, True
        elif np.int64(np.uint64(a) * np.uint64(b)) // b != a:
            return a, True
    return a * b, False

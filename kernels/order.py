"""Order keys of MIN / MAX (:mod:`cepvec.runtime.order_keys`): uint64 keys in which a bigger
key is the better extreme and 0 means "no value". One pass over a column, written into ``out``
(callers cut a long column in ranges, one per thread). Pure array functions."""

from __future__ import annotations

import numpy as np

from ._jit import jit

_SIGN = np.uint64(1 << 63)
_ABS = np.uint64((1 << 63) - 1)
_EXP = np.uint64(0x7FF0_0000_0000_0000)  # above it (sign bit off): a NaN


@jit
def float_order_keys(bits, is_min, out):
    """Keys of float64 values given as their bits (``x.view(np.uint64)``): NaN (null is passed as
    NaN) gives 0, a larger value a larger key (``is_min``: a smaller value). -0.0 orders just below
    0.0 (docs/semantics.md 2.5)."""
    flip = np.uint64(0) - np.uint64(is_min)  # all ones for MIN
    for i in range(bits.shape[0]):
        b = bits[i]
        k = (~b if (b >> np.uint64(63)) != 0 else b | _SIGN) ^ flip
        out[i] = k if (b & _ABS) <= _EXP else np.uint64(0)


@jit
def int_order_keys(vals, valid, is_min, out):
    """Keys of int64 values given as uint64 (``x.view(np.uint64)``); ``valid`` is the non-null mask
    (length 0: no nulls), a null gives 0. Returns the number of valid values whose key is 0 (the
    int64 extreme that cannot be told from "no value")."""
    flip = np.uint64(0) - np.uint64(is_min)
    all_valid = valid.shape[0] == 0
    bad = 0
    for i in range(vals.shape[0]):
        k = (vals[i] ^ _SIGN) ^ flip
        ok = all_valid or valid[i]
        bad += ok and k == 0
        out[i] = k if ok else np.uint64(0)
    return bad

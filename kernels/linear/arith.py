"""Arithmetic of the state: exact int64 (overflow flagged), float64, and the order semiring.

Scalar stubs resolved per dtype at compile time by ``@overload`` (registered when this
module is imported, so every module whose kernels call them imports it first), and the
scalar helpers ``_add`` / ``_mul`` built on them."""

from __future__ import annotations

import numpy as np

from numba.core import types
from numba.extending import overload

from .._jit import OVERLOAD_OPTIONS, jit_inline


# ---------------------------------------------------------------------- arithmetic helpers
# int64 state is exact and flags overflow in err[0]; float64 state is plain arithmetic.
# The dtype is resolved at compile time by tiny *scalar* overloads (_wadd, _wmul, _ovf,
# _big, _mul_ovf); the helpers over arrays are ordinary force-inlined functions built on
# them (an overload taking arrays brought reference counting into the inner loops).
# Loops are branch-free: a data-dependent branch (a sign test) mispredicts, and a runtime
# branch around two loop versions measured 2.5x slower than either loop alone. Overflow
# tests run on unsigned (wrapping) sums: LLVM folds tests on a wrapped *signed* sum away,
# since signed overflow is undefined for it. After an overflow the values are garbage;
# the caller stops and raises.

_I64_MAX = 9223372036854775807
_U64_MAX = 18446744073709551615


def _wadd(a, b):
    """a + b, wrapping for integers."""
    raise NotImplementedError


def _wmul(a, b):
    """a * b, wrapping for integers."""
    raise NotImplementedError


def _ovf(a, b, s):
    """Negative iff the integer sum ``s = _wadd(a, b)`` overflowed (0 for floats)."""
    raise NotImplementedError


def _big(a, b):
    """True when the integer product a * b may not fit in int64 (False for floats)."""
    raise NotImplementedError


def _mul_ovf(a, b):
    """Exact test: the integer product a * b overflows int64 (False for floats)."""
    raise NotImplementedError


def _zero(a):
    """The additive identity of ``a``'s semiring (0; the order semiring's 0 too)."""
    raise NotImplementedError


def _one(a):
    """The multiplicative identity of ``a``'s semiring (1; the order semiring: 2**64 - 1)."""
    raise NotImplementedError


def _delta(new, old):
    """What to add to a running total that holds ``old`` to make it hold ``new``."""
    raise NotImplementedError


def _is_order(a) -> bool:
    """The element type of the order semiring: uint64 (see :func:`_zero`)."""
    return isinstance(a, types.Integer) and not a.signed


def _is_exact(a) -> bool:
    return isinstance(a, types.Integer) and a.signed


@overload(_wadd, jit_options=OVERLOAD_OPTIONS)
def _ov_wadd(a, b):
    if _is_order(a):
        def impl(a, b):
            return max(a, b)
        return impl
    if _is_exact(a):
        def impl(a, b):
            return np.int64(np.uint64(a) + np.uint64(b))
        return impl

    def impl(a, b):
        return a + b
    return impl


@overload(_wmul, jit_options=OVERLOAD_OPTIONS)
def _ov_wmul(a, b):
    if _is_order(a):
        def impl(a, b):
            return min(a, b)
        return impl
    if _is_exact(a):
        def impl(a, b):
            return np.int64(np.uint64(a) * np.uint64(b))
        return impl

    # floats: a zero annihilates (no match times any weight is no match): IEEE's 0 * inf = NaN would
    # let an infinite value of an event that is in no match turn every sum of its window into NaN
    def impl(a, b):
        p = a * b
        return p if a != 0 and b != 0 else 0.0
    return impl


@overload(_ovf, jit_options=OVERLOAD_OPTIONS)
def _ov_ovf(a, b, s):
    if _is_exact(a):
        def impl(a, b, s):
            return (np.int64(a) ^ s) & (np.int64(b) ^ s)
        return impl

    def impl(a, b, s):
        return np.int64(0)
    return impl


@overload(_big, jit_options=OVERLOAD_OPTIONS)
def _ov_big(a, b):
    if _is_exact(a):
        def impl(a, b):
            return abs(np.float64(a) * np.float64(b)) >= 9.0e18
        return impl

    def impl(a, b):
        return False
    return impl


@overload(_mul_ovf, jit_options=OVERLOAD_OPTIONS)
def _ov_mul_ovf(a, b):
    if _is_exact(a):
        def impl(a, b):
            # exact: the wrapped product divided by one factor gives the other back iff it did not
            # wrap (a wrap moves the product by a multiple of 2^64, far more than |b|); -1 x -2^63 is
            # the one product whose division itself overflows. -2^63 itself fits (2 x -2^62 does).
            if a == 0 or b == 0:
                return False
            if a == -1:
                return b == -_I64_MAX - 1
            if b == -1:
                return a == -_I64_MAX - 1
            p = np.int64(np.uint64(a) * np.uint64(b))
            return p // b != a
        return impl

    def impl(a, b):
        return False
    return impl


@overload(_zero, jit_options=OVERLOAD_OPTIONS)
def _ov_zero(a):
    if _is_order(a):
        def impl(a):
            return np.uint64(0)
        return impl
    if _is_exact(a):
        def impl(a):
            return np.int64(0)
        return impl

    def impl(a):
        return np.float64(0.0)
    return impl


@overload(_one, jit_options=OVERLOAD_OPTIONS)
def _ov_one(a):
    if _is_order(a):
        def impl(a):
            return np.uint64(_U64_MAX)
        return impl
    if _is_exact(a):
        def impl(a):
            return np.int64(1)
        return impl

    def impl(a):
        return np.float64(1.0)
    return impl


@overload(_delta, jit_options=OVERLOAD_OPTIONS)
def _ov_delta(new, old):
    if _is_order(new):
        def impl(new, old):  # idempotent sum: adding the whole new state again is exact
            return new
        return impl

    def impl(new, old):  # the same infinity again adds nothing (inf - inf would make the total NaN)
        return _zero(new) if new == old else new - old
    return impl


# The helpers below return an overflow flag (negative: overflow) instead of writing
# ``err``: a small inlined helper that conditionally stores into an array argument kept
# reference-count updates (atomic increments) in the caller's loop. Callers OR the flags
# into a local and test it once per event.

@jit_inline
def _add(a, b):
    """(a + b, flag)."""
    s = _wadd(a, b)
    return s, _ovf(a, b, s)


@jit_inline
def _mul(a, w):
    """(a * w, flag); the exact test only when |a w| may reach 9e18."""
    f = np.int64(0)
    if _big(a, w) and _mul_ovf(a, w):
        f = np.int64(-1)
    return _wmul(a, w), f

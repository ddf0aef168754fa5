"""Key spaces and event order of the trend kernels: binary search over sorted keys, an O(n)
radix sort of int64 keys, the order-preserving int64 code of floats and the stable order of
events by partition."""

from __future__ import annotations

import numpy as np

from .._jit import jit, jit_inline, jit_reading
from .constants import _I64_MAX


@jit_inline
def _position(ks, lo, hi, x, upper):
    """First index in [lo, hi) with ks[i] >= x (``upper``: ks[i] > x); ``ks`` sorted."""
    while lo < hi:
        mid = (lo + hi) >> 1
        if ks[mid] < x or (upper and ks[mid] == x):
            lo = mid + 1
        else:
            hi = mid
    return lo


@jit_inline
def _lower(ks, lo, hi, x):
    """First index in [lo, hi) with ks[i] >= x; ``ks`` sorted."""
    return _position(ks, lo, hi, x, np.bool_(False))  # not the literal: one specialisation of _position


#: Below this many keys :func:`sort_keys` is an insertion sort; callers in loops over many small
#: segments call :func:`small_sort` themselves (inlined: a call with six arrays costs more than it).
SMALL_SORT = 64


@jit_inline
def small_sort(a, v, lo, hi):
    """Insertion sort of ``a[lo:hi]``, carrying ``v`` along (stable)."""
    for i in range(lo + 1, hi):
        x = a[i]
        y = v[i]
        j = i - 1
        while j >= lo and a[j] > x:
            a[j + 1] = a[j]
            v[j + 1] = v[j]
            j -= 1
        a[j + 1] = x
        v[j + 1] = y


@jit
def sort_keys(a, v, lo, hi, ta, tv):
    """Sort ``a[lo:hi]`` (int64) in place in O(n) whatever the order of the input, carrying
    ``v[lo:hi]`` along (stable: equal keys keep their order).

    Numba's ``ndarray.sort`` is a quicksort that goes quadratic on common inputs
    (ascending keys with a smaller one appended: 10^6 keys took 64 s), and the
    key spaces here are exactly that: the carried keys come back sorted and a
    batch of rising prices is sorted already. This is an LSD radix sort over the
    order-preserving unsigned image of the keys, 8 bits a pass, skipping the
    passes in which every key has the same digit; insertion sort below 64 keys.
    ``ta`` and ``tv`` hold at least ``hi - lo`` values each.
    """
    n = hi - lo
    if n < SMALL_SORT:
        small_sort(a, v, lo, hi)
        return
    sign = np.uint64(1) << np.uint64(63)
    cnt = np.zeros(256, np.int64)
    src_is_a = True
    for p in range(8):
        sh = np.uint64(8 * p)
        for d in range(256):
            cnt[d] = 0
        if src_is_a:
            for i in range(n):
                cnt[((np.uint64(a[lo + i]) ^ sign) >> sh) & np.uint64(255)] += 1
        else:
            for i in range(n):
                cnt[((np.uint64(ta[i]) ^ sign) >> sh) & np.uint64(255)] += 1
        trivial = False
        for d in range(256):
            if cnt[d] == n:
                trivial = True
            if cnt[d] != 0:
                break
        if trivial:
            continue
        tot = 0
        for d in range(256):
            c = cnt[d]
            cnt[d] = tot
            tot += c
        if src_is_a:
            for i in range(n):
                x = a[lo + i]
                d = ((np.uint64(x) ^ sign) >> sh) & np.uint64(255)
                ta[cnt[d]] = x
                tv[cnt[d]] = v[lo + i]
                cnt[d] += 1
        else:
            for i in range(n):
                x = ta[i]
                d = ((np.uint64(x) ^ sign) >> sh) & np.uint64(255)
                a[lo + cnt[d]] = x
                v[lo + cnt[d]] = tv[i]
                cnt[d] += 1
        src_is_a = not src_is_a
    if not src_is_a:
        for i in range(n):
            a[lo + i] = ta[i]
            v[lo + i] = tv[i]


@jit_reading("pid")
def partition_order(pid, n_parts):
    """Stable counting sort of event indices by partition id (keeps time order).

    Returns ``(order, seg_ptr)``: partition ``p``'s events are
    ``order[seg_ptr[p]:seg_ptr[p+1]]``.
    """
    n = pid.shape[0]
    counts = np.zeros(n_parts + 1, np.int64)
    for i in range(n):
        counts[pid[i] + 1] += 1
    for p in range(n_parts):
        counts[p + 1] += counts[p]
    seg_ptr = counts.copy()
    pos = counts[:n_parts].copy()
    order = np.empty(n, np.int64)
    for i in range(n):
        p = pid[i]
        order[pos[p]] = i
        pos[p] += 1
    return order, seg_ptr


def float_order_key(x: np.ndarray) -> np.ndarray:
    """Order-preserving int64 code of float64 values (-0.0 as 0.0; mask NaN out first)."""
    b = (np.asarray(x, np.float64) + 0.0).view(np.int64)
    return np.where(b >= 0, b, b ^ np.int64(_I64_MAX))

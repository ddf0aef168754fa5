"""Key spaces and event order of the trend kernels: binary search over sorted keys, an O(n)
radix sort of int64 keys, the order-preserving int64 code of floats and the stable order of
events by partition."""

from __future__ import annotations

import numpy as np

from .._jit import jit, jit_callee, jit_inline, jit_reading
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


#: From this many keys :func:`sort_keys` first splits them by their top ``MSD_BITS`` varying bits, so
#: that the byte-wise passes run over buckets that fit the caches (a pass over 10^6 keys scattered its
#: writes over 512 streams, and sorting grew 23x from 10^5 to 10^6 keys).
MSD_FROM = 1 << 15
#: Bits of that first split (8192 buckets: 10^6 distinct float keys sorted in 44 ms, 43 ms with 16 bits, 48 with 11).
MSD_BITS = 13

_SIGN = np.uint64(1) << np.uint64(63)


@jit_callee
def _lsd(x, xv, x0, y, yv, y0, n, passes, cnt):
    """Stable LSD radix sort of the keys ``x[x0:x0 + n]`` (payload ``xv``) by their low ``passes``
    bytes, 8 bits a pass, ``y[y0:y0 + n]`` / ``yv`` the scratch; passes in which every key has the
    same byte are skipped. Returns True when the sorted keys ended in ``y``, False in ``x``."""
    in_y = False
    for p in range(passes):
        sh = np.uint64(8 * p)
        for d in range(256):
            cnt[d] = 0
        if in_y:
            for i in range(n):
                cnt[((np.uint64(y[y0 + i]) ^ _SIGN) >> sh) & np.uint64(255)] += 1
        else:
            for i in range(n):
                cnt[((np.uint64(x[x0 + i]) ^ _SIGN) >> sh) & np.uint64(255)] += 1
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
        if in_y:
            for i in range(n):
                k = y[y0 + i]
                d = ((np.uint64(k) ^ _SIGN) >> sh) & np.uint64(255)
                x[x0 + cnt[d]] = k
                xv[x0 + cnt[d]] = yv[y0 + i]
                cnt[d] += 1
        else:
            for i in range(n):
                k = x[x0 + i]
                d = ((np.uint64(k) ^ _SIGN) >> sh) & np.uint64(255)
                y[y0 + cnt[d]] = k
                yv[y0 + cnt[d]] = xv[x0 + i]
                cnt[d] += 1
        in_y = not in_y
    return in_y


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
    From ``MSD_FROM`` keys, one pass first distributes the keys by their top
    ``MSD_BITS`` varying bits (stable), and each of those buckets is then sorted
    by the bits below them. ``ta`` and ``tv`` hold at least ``hi - lo`` values each.
    """
    n = hi - lo
    if n < SMALL_SORT:
        small_sort(a, v, lo, hi)
        return
    if n < MSD_FROM:
        if _lsd(a, v, lo, ta, tv, np.int64(0), n, np.int64(8), np.empty(256, np.int64)):
            for i in range(n):
                a[lo + i] = ta[i]
                v[lo + i] = tv[i]
        return
    umin = np.uint64(a[lo]) ^ _SIGN
    umax = umin
    for i in range(lo + 1, hi):
        u = np.uint64(a[i]) ^ _SIGN
        if u < umin:
            umin = u
        if u > umax:
            umax = u
    diff = umin ^ umax
    if diff == np.uint64(0):  # every key equal: already in order
        return
    top = 63
    while (diff >> np.uint64(top)) == np.uint64(0):
        top -= 1
    nbk = 1 << MSD_BITS
    cnt = np.zeros(nbk + 1, np.int64)
    low_bits = top - (MSD_BITS - 1) if top >= MSD_BITS - 1 else 0  # the bucket: bits low_bits ..
    sh = np.uint64(low_bits)
    bmask = np.uint64(nbk - 1)
    for i in range(lo, hi):
        cnt[((((np.uint64(a[i]) ^ _SIGN) >> sh) & bmask)) + 1] += 1
    for d in range(nbk):
        cnt[d + 1] += cnt[d]
    bounds = cnt.copy()  # bucket d is ta[bounds[d]:bounds[d + 1]]
    for i in range(lo, hi):
        k = a[i]
        d = ((np.uint64(k) ^ _SIGN) >> sh) & bmask
        ta[cnt[d]] = k
        tv[cnt[d]] = v[i]
        cnt[d] += 1
    passes = (low_bits + 7) // 8  # the bytes below the bucket's bits (bits above them are equal)
    for d in range(nbk):
        b0 = bounds[d]
        nb = bounds[d + 1] - b0
        if nb == 0:
            continue
        if nb < SMALL_SORT:
            small_sort(ta, tv, b0, b0 + nb)
            in_a = False
        else:
            in_a = _lsd(ta, tv, b0, a, v, lo + b0, nb, passes, cnt)
        if not in_a:
            for i in range(nb):
                a[lo + b0 + i] = ta[b0 + i]
                v[lo + b0 + i] = tv[b0 + i]


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

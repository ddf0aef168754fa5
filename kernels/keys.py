"""Dense partition ids for integer key columns: a direct table for a small key range, an
open-addressing hash table otherwise; new keys are numbered in order of first appearance; the
check of hashed string keys on their Arrow views; the stable order of unsorted times. Pure array
functions, shared by every path (:class:`cepvec.runtime.partitions.Partitions`,
:func:`cepvec.runtime.prepare.time_order`)."""

from __future__ import annotations

import numpy as np

from ._jit import jit, jit_inline, jit_reading
from .views import VIEW_HI_MASK, VIEW_LO_MASK, byte_at


@jit_reading("vals")
def min_max(vals):
    lo = vals[0]
    hi = vals[0]
    for i in range(vals.shape[0]):
        v = vals[i]
        lo = min(lo, v)
        hi = max(hi, v)
    return lo, hi


@jit_reading("vals")
def dense_ids_direct(vals, vmin, direct, n_known, ids):
    """Dense id per int64 key through a direct table (``direct[v - vmin]``, -1: new key),
    written to ``ids``; new keys numbered from ``n_known`` in order of first appearance
    (and entered in ``direct``). Returns the row of each new key's first appearance."""
    first = np.empty(min(vals.shape[0], direct.shape[0]), np.int64)  # no reassignment inside the loop
    n_new = 0
    for i in range(vals.shape[0]):
        j = vals[i] - vmin
        p = direct[j]
        if p < 0:
            p = n_known + n_new
            direct[j] = p
            first[n_new] = i
            n_new += 1
        ids[i] = p
    return first[:n_new].copy()


@jit_inline
def _slot(v, shift):
    """Fibonacci hashing: the top bits of ``v`` times 2**64 / golden ratio (every bit of ``v`` moves
    them; the low bits of the product ignore the high bits of ``v``, so integral floats or keys that
    differ above bit 44 all fell into one slot)."""
    return np.int64((np.uint64(v) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(shift))


@jit_reading("vals")
def dense_ids(vals, tab_key, tab_id, n_known, ids):
    """Dense id per int64 key (open addressing) into ``ids``, new keys numbered from ``n_known``.

    Returns ``(first, tab_key, tab_id)``: ``first`` holds the row of each new key's first
    appearance (in order: new key ``n_known + j`` is ``vals[first[j]]``); the table is grown (and
    returned) when more than half full. Empty slots have ``tab_id < 0``.
    """
    n = vals.shape[0]
    size = tab_key.shape[0]
    shift = 64
    while (1 << (64 - shift)) < size:
        shift -= 1
    first = np.empty(16, np.int64)
    n_new = 0
    used = n_known
    last_key = np.int64(0)
    last_id = np.int64(-1)
    for i in range(n):
        v = vals[i]
        if last_id >= 0 and v == last_key:
            ids[i] = last_id
            continue
        j = _slot(v, shift)
        while True:
            if tab_id[j] < 0:
                if 2 * (used + 1) > size:
                    size2 = 2 * size
                    shift -= 1
                    k2 = np.empty(size2, np.int64)  # empty + loops: np.zeros / np.full cost compile time
                    i2 = np.empty(size2, np.int64)
                    for jj in range(size2):
                        i2[jj] = -1
                    for jj in range(size):
                        if tab_id[jj] >= 0:
                            h = _slot(tab_key[jj], shift)
                            while i2[h] >= 0:
                                h = (h + 1) & (size2 - 1)
                            k2[h] = tab_key[jj]
                            i2[h] = tab_id[jj]
                    tab_key = k2
                    tab_id = i2
                    size = size2
                    j = _slot(v, shift)
                    continue
                tab_key[j] = v
                tab_id[j] = used
                if n_new == first.shape[0]:
                    nk = np.empty(2 * n_new, np.int64)
                    for c in range(n_new):  # a loop: slice assignment compiles shape-error formatting (~1.5 s cold)
                        nk[c] = first[c]
                    first = nk
                first[n_new] = i
                n_new += 1
                used += 1
                ids[i] = tab_id[j]
                break
            if tab_key[j] == v:
                ids[i] = tab_id[j]
                break
            j = (j + 1) & (size - 1)
        last_key = v
        last_id = ids[i]
    return first[:n_new].copy(), tab_key, tab_id


@jit
def renumber_new(ids, n_known, remap):
    """``ids[i] = remap[ids[i] - n_known]`` where ``ids[i] >= n_known`` (provisional ids of new keys)."""
    for i in range(ids.shape[0]):
        p = ids[i]
        if p >= n_known:
            ids[i] = remap[p - n_known]


@jit
def views_equal_first(views, addrs, ids, first, lo, hi):
    """True when the string of every row ``i`` in ``[lo, hi)`` equals the string of the first row
    of its id (``first[ids[i]]``), read from Arrow string views: ``views`` the (n, 2) uint64 view words,
    ``addrs`` the addresses of the variadic data buffers (strings over 12 bytes; see
    ``kernels/views.py``). Checks ids taken from a hash of the strings."""
    lo_mask = VIEW_LO_MASK
    hi_mask = VIEW_HI_MASK
    len_bits = np.uint64(0xFFFFFFFF)
    for i in range(lo, hi):
        r = first[ids[i]]
        if r == i:
            continue
        a0, a1 = views[i, 0], views[i, 1]
        b0, b1 = views[r, 0], views[r, 1]
        n = np.int64(a0 & len_bits)
        if n != np.int64(b0 & len_bits):
            return False
        if n <= 12:
            if (a0 ^ b0) & lo_mask[n] != 0 or (a1 ^ b1) & hi_mask[n] != 0:
                return False
            continue
        if a0 != b0:  # the first four bytes (the view's prefix)
            return False
        pa = addrs[np.int64(a1 & len_bits)] + np.int64(a1 >> np.uint64(32))
        pb = addrs[np.int64(b1 & len_bits)] + np.int64(b1 >> np.uint64(32))
        if pa == pb:
            continue
        for k in range(4, n):
            if byte_at(pa + k) != byte_at(pb + k):
                return False
    return True


@jit_reading("t")
def stable_order(t):
    """The stable ascending order of int64 values ``t`` (an argsort): an LSD radix sort of
    ``t - min(t)``, 8 bits a pass (256 buckets: the scatter stays in cache; 11 bits measured
    slower), as many passes as the range of the values needs (three for 5·10^5 distinct
    seconds, six for a day of nanoseconds); O(n) per pass whatever the order."""
    n = t.shape[0]
    order = np.arange(n)
    if n < 2:
        return order
    lo = t[0]
    hi = t[0]
    for i in range(n):
        lo = min(lo, t[i])
        hi = max(hi, t[i])
    span = np.uint64(hi) - np.uint64(lo)  # wraps correctly: any two int64 differ by less than 2^64
    k = np.empty(n, np.uint64)
    for i in range(n):
        k[i] = np.uint64(t[i]) - np.uint64(lo)
    k2 = np.empty(n, np.uint64)
    o2 = np.empty(n, np.int64)
    cnt = np.empty(257, np.int64)
    mask = np.uint64(255)
    shift = 0
    while shift < 64 and (span >> np.uint64(shift)) != 0:
        sh = np.uint64(shift)
        cnt[:] = 0
        for i in range(n):
            cnt[((k[i] >> sh) & mask) + 1] += 1
        for d in range(256):
            cnt[d + 1] += cnt[d]
        for i in range(n):
            d = (k[i] >> sh) & mask
            p = cnt[d]
            k2[p] = k[i]
            o2[p] = order[i]
            cnt[d] = p + 1
        k, k2 = k2, k
        order, o2 = o2, order
        shift += 8
    return order

"""EMIT CHANGES output times per partition when a group holds several partitions (``[id]`` finer
than GROUP-BY): an END event of the group gives a row at its time, and each partition adds its
matches at that time. A partition's matches can count at an emit time ``te`` only when one of its
events lies in ``(te - w, te]`` (under ``WITHIN w``), or at or before ``te`` (without WITHIN), so the
kernels visit those emit times only, not every emit time of the group in every partition (that
cost partitions x END events of the group: 10^4 partitions of one group in 10^5 events took 38 s
and 17 GB on the scan path)."""

from __future__ import annotations

import numpy as np

from ._jit import jit
from .trend.keys import _lower


#: which emit times of its group a segment visits (:func:`segment_emit_times`)
FROM_FIRST = 0  # every one from its first event on (a partition's matches count at every later one)
WITHIN = 1  # those within ``w`` after one of its events
NEXT = 2  # the first at or after each of its events (its totals change only at its events)


@jit
def segment_emit_times(ET, gptr, seg_group, t, seg_len, w, how, pending):
    """The emit times each segment (one partition's events: ``t`` in segment order, rising within a
    segment, ``seg_len[k]`` of them, of group ``seg_group[k]``) must visit, of its group's
    (``ET[gptr[g]:gptr[g + 1]]``, rising): by ``how`` (``FROM_FIRST``, ``WITHIN``, ``NEXT``); a
    ``pending`` segment (``NEXT``: a change of an earlier call not written yet) also visits its
    group's first. Returns ``(times, lo, hi, left)``: segment ``k``'s times are ``times[lo[k]:hi[k]]``,
    rising; ``left[k]`` (``NEXT``): a change at its last event (or a pending one) found no emit time
    in this call. Two passes (count, then fill), a binary search per event."""
    n_seg = seg_len.shape[0]
    lo = np.empty(n_seg, np.int64)
    hi = np.empty(n_seg, np.int64)
    left = np.zeros(n_seg, np.bool_)
    out = np.empty(0, np.int64)
    for fill in range(2):
        total = 0
        e = 0
        for k in range(n_seg):
            g0 = gptr[seg_group[k]]
            g1 = gptr[seg_group[k] + 1]
            lo[k] = total
            done = g0  # the group's times before this index are taken (or before every event)
            if how == NEXT and pending[k]:
                if g1 > g0:
                    if fill:
                        out[total] = ET[g0]
                    total += 1
                    done = g0 + 1
                else:
                    left[k] = True
            for i in range(e, e + seg_len[k]):
                a = _lower(ET, done, g1, t[i])
                if how == WITHIN:
                    b = _lower(ET, a, g1, t[i] + w)
                elif how == NEXT:
                    b = min(a + 1, g1)
                    left[k] = a == g1
                else:
                    b = g1
                for j in range(max(a, done), b):
                    if fill:
                        out[total] = ET[j]
                    total += 1
                if b > done:
                    done = b
                if how == FROM_FIRST:
                    break  # every later time of the group: taken with the first event
            hi[k] = total
            e += seg_len[k]
        if not fill:
            out = np.empty(total, np.int64)
    return out, lo, hi, left


@jit
def group_totals(gptr, tree_off, slot, is_emit, val):
    """The totals of every group at its emit times, from its partitions' changes: a partition's new
    totals replace its old ones (not added as a difference: with floats, ``inf - inf`` is NaN and
    ``1e17 + 1.5 - 1e17`` is 0), and a group's totals are the sum of its partitions' current ones.

    Rows ``gptr[g]:gptr[g + 1]`` are group ``g``'s, in time order with the changes of a time before its
    emit times; a change row sets partition ``slot[r]`` of its group to ``val[r]``, an emit row reads
    the group's totals. Each group keeps a binary tree of sums over its partitions, ``tree_off[g]``
    its first node and ``tree_off[g + 1] - tree_off[g] = 2 L`` its size (``L``, a power of two, the
    leaves; node 1 the root): a change rewrites a leaf and the sums above it, O(log L), by additions
    of current values only. Returns the totals of the emit rows, in row order."""
    ncol = val.shape[1]
    n_emit = 0
    for r in range(is_emit.shape[0]):
        n_emit += is_emit[r]
    out = np.empty((n_emit, ncol), val.dtype)
    T = np.zeros((tree_off[-1], ncol), val.dtype)
    k = 0
    for g in range(gptr.shape[0] - 1):
        base = tree_off[g]
        leaves = (tree_off[g + 1] - base) // 2
        for r in range(gptr[g], gptr[g + 1]):
            if is_emit[r]:
                for c in range(ncol):
                    out[k, c] = T[base + 1, c]
                k += 1
                continue
            i = leaves + slot[r]
            for c in range(ncol):
                T[base + i, c] = val[r, c]
            i //= 2
            while i >= 1:
                for c in range(ncol):
                    T[base + i, c] = T[base + 2 * i, c] + T[base + 2 * i + 1, c]
                i //= 2
    return out

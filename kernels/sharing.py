"""Shared prefix counters for many fixed-length SEQ queries (A-Seq prefix sharing, Sharon's shared executor).

The queries of one sharing class form a trie of prefixes: node 0 is the empty
prefix, every other node a prefix ``(E_1 .. E_j)`` with its parent
``(E_1 .. E_{j-1})``; a prefix common to several queries is one node, so its
count is computed once per event for all of them. Per partition and open
window the kernel keeps ``cnt[node]``, the number of matches of the prefix
inside the window so far (A-Seq's dynamic prefix counting): an event of type
``E`` adds ``cnt[parent]`` to ``cnt[node]`` for every node whose last type is
``E``. A query's result in a window is the count of its last node.

Strictly increasing times inside a match: an update reads the parent's value
from before the current time stamp (``prev`` holds it while ``upd_t`` equals
the current time), so events with equal times never extend each other and
the order of nodes within one event does not matter (a type twice in one
pattern included).

Windows: ``WITHIN w SLIDE s`` window ``k`` covers ``[k*s, k*s + w)``; an event
at ``t`` updates every window containing it, each in slot ``k % R`` with
``R = ceil(w / s)``, which no other window needs while ``k`` is open (times
only increase per partition). A slot is emitted (one row per query with a
non-zero count) when a later window takes it, and every open slot at the end
(:func:`emit_open`). Without a window there is one window, ``k = 0``.

Node 0 (the empty prefix) counts 1 in every open window. Exact int64 counts: an addition that would leave int64 stops the kernel with
status -2 (the caller raises the overflow error); float64 counts never stop.
"""

from __future__ import annotations

import numpy as np

from cepvec.kernels._jit import jit

MODE_NONE = 0
MODE_SLIDE = 1
_I64_MAX = np.iinfo(np.int64).max


@jit
def run_shared(pid, times, codes, type_ptr, type_nodes, parent, qleaf, mode, w, s, is_int,
               cnt, prev, upd_t, slot_k, start, out_q, out_p, out_k, out_v, n_out):
    """Process events ``start..`` of a batch; returns (status, next event, rows written).

    status 0: every event done; 1: the output buffers are full (call again from the next event
    with larger buffers); -2: an int64 count overflowed at the next event.
    """
    n = len(times)
    R = cnt.shape[1]
    N = cnt.shape[2]
    Q = len(qleaf)
    cap = len(out_q)
    for i in range(start, n):
        c = codes[i]
        if c <= 0:
            continue
        p = pid[i]
        t = times[i]
        if mode == MODE_SLIDE:
            kmin = (t - w) // s + 1
            if kmin < 0:
                kmin = 0
            kmax = t // s
        else:
            kmin = 0
            kmax = 0
        # open the windows first (emitting the ones they replace), so a full buffer stops before any update
        for k in range(kmin, kmax + 1):
            r = k % R
            old = slot_k[p, r]
            if old != k:
                if old >= 0:
                    if n_out + Q > cap:
                        return 1, i, n_out
                    for j in range(Q):
                        v = cnt[p, r, qleaf[j]]
                        if v != 0:
                            out_q[n_out] = j
                            out_p[n_out] = p
                            out_k[n_out] = old
                            out_v[n_out] = v
                            n_out += 1
                cnt[p, r, 0] = 1  # the empty prefix: one (empty) match
                for x in range(1, N):
                    cnt[p, r, x] = 0
                for x in range(N):
                    upd_t[p, r, x] = -(1 << 62)
                slot_k[p, r] = k
        for k in range(kmin, kmax + 1):
            r = k % R
            for a in range(type_ptr[c], type_ptr[c + 1]):
                node = type_nodes[a]
                par = parent[node]
                if upd_t[p, r, par] == t:  # never true for the root, which no event updates
                    val = prev[p, r, par]
                else:
                    val = cnt[p, r, par]
                if val == 0:
                    continue
                if upd_t[p, r, node] != t:
                    prev[p, r, node] = cnt[p, r, node]
                    upd_t[p, r, node] = t
                cur = cnt[p, r, node]
                if is_int and cur > _I64_MAX - val:
                    return -2, i, n_out
                cnt[p, r, node] = cur + val
    return 0, n, n_out


@jit
def emit_open(cnt, slot_k, qleaf, out_q, out_p, out_k, out_v):
    """Rows of every open window (the end of the input); the buffers hold ``P * R * Q`` rows."""
    n_out = 0
    for p in range(cnt.shape[0]):
        for r in range(cnt.shape[1]):
            k = slot_k[p, r]
            if k < 0:
                continue
            for j in range(len(qleaf)):
                v = cnt[p, r, qleaf[j]]
                if v != 0:
                    out_q[n_out] = j
                    out_p[n_out] = p
                    out_k[n_out] = k
                    out_v[n_out] = v
                    n_out += 1
    return n_out

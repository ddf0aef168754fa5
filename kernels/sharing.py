"""Shared prefix counters for many fixed-length SEQ queries (A-Seq prefix sharing, Sharon's shared executor).

The queries of one sharing class form a trie of prefixes: node 0 is the empty
prefix, every other node a prefix ``(E_1 .. E_j)`` with its parent
``(E_1 .. E_{j-1})``; a prefix common to several queries is one node, so its
count is computed once per event for all of them. Per partition, node and
open window the kernel keeps ``cnt[p, node, slot]``, the number of matches of
the prefix inside the window so far (A-Seq's dynamic prefix counting): an
event of type ``E`` adds ``cnt[parent]`` to ``cnt[node]`` for every node whose
last type is ``E``. A query's result in a window is the count of its last
node. Node 0 counts 1 in every open window. A counter is valid only while its
``tag`` equals the window its slot holds (``slot_k``): opening a window resets
nothing, and a counter last written for an older window reads as 0.

Strictly increasing times inside a match:

* within one event, the nodes of its type are visited deepest first
  (``type_nodes`` is sorted so), so a node whose parent has the same type
  reads the parent before this event adds to it (a type twice in a pattern);
* events of one partition with equal times (a *tie group*, found by a first
  pass over the call's events) read every parent as it was before that time:
  the first change of each (partition, node, slot) at that time is journaled
  with its old value, and reads look the journal up. The caller holds back the events of a
  batch's last time stamp, so a tie group never spans two calls.

Windows: ``WITHIN w SLIDE s`` window ``k`` covers ``[k*s, k*s + w)``; an event
at ``t`` updates every window containing it, each in slot ``k % R`` with
``R = ceil(w / s)``, which no other window needs while ``k`` is open (times
only increase per partition). A slot is emitted (one row per query with a
non-zero count) when a later window takes it, and every open slot at the end
(:func:`emit_open`). Without a window there is one window, ``k = 0``.

Exact int64 counts: an addition that would leave int64 stops the kernel with
status -2 (the caller raises the overflow error); float64 counts never stop.
The per-event loop is one function on purpose (docs/architecture.md,
"Kernels": a call with array arguments per event costs reference counting).
"""

from __future__ import annotations

import numpy as np

from cepvec.kernels._jit import jit

MODE_NONE = 0
MODE_SLIDE = 1
_I64_MAX = np.iinfo(np.int64).max


@jit
def run_shared(pid, times, codes, type_ptr, type_nodes, parent, qleaf, mode, w, s, is_int,
               cnt, tag, slot_k, start, out_q, out_p, out_k, out_v):
    """Process events ``start..`` (every one of a type in the trie); returns (status, next event, rows).

    status 0: every event done; 1: the output buffers are full (call again from the next event
    with larger or emptied buffers); -2: an int64 count overflowed at the next event.
    """
    n = len(times)
    n_part = cnt.shape[0]
    R = cnt.shape[2]
    Q = len(qleaf)
    cap = len(out_q)
    n_out = 0
    # first pass: which events share their partition's time stamp with an earlier / a later one
    last_i = np.full(n_part, -1, np.int64)
    tie_prev = np.zeros(n, np.bool_)
    tie_next = np.zeros(n, np.bool_)
    longest = 1  # most events with one time stamp (every partition)
    run = 0
    for i in range(n):
        p = pid[i]
        j = last_i[p]
        if j >= 0 and times[j] == times[i]:
            tie_prev[i] = True
            tie_next[j] = True
        run = run + 1 if i > 0 and times[i - 1] == times[i] else 1
        if run > longest:
            longest = run
        last_i[p] = i
    most = 1
    for c in range(len(type_ptr) - 1):
        if type_ptr[c + 1] - type_ptr[c] > most:
            most = type_ptr[c + 1] - type_ptr[c]
    jcap = longest * most * R + 1
    j_part = np.empty(jcap, np.int64)
    j_node = np.empty(jcap, np.int64)
    j_slot = np.empty(jcap, np.int64)
    j_old = np.empty(jcap, cnt.dtype)
    n_j = 0
    j_time = -(1 << 62)
    for i in range(start, n):
        c = codes[i]
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
                    for q in range(Q):
                        if tag[p, qleaf[q], r] != old:
                            continue
                        v = cnt[p, qleaf[q], r]
                        if v != 0:
                            out_q[n_out] = q
                            out_p[n_out] = p
                            out_k[n_out] = old
                            out_v[n_out] = v
                            n_out += 1
                slot_k[p, r] = k  # no reset: counters tagged with an older window read as 0
        if not (tie_prev[i] or tie_next[i]):
            r0 = kmin % R
            for a in range(type_ptr[c], type_ptr[c + 1]):
                node = type_nodes[a]
                par = parent[node]
                r = r0
                for k in range(kmin, kmax + 1):  # slots of windows kmin..kmax, without a modulo per step
                    if par == 0:
                        val = cnt.dtype.type(1)
                    elif tag[p, par, r] == k:
                        val = cnt[p, par, r]
                    else:
                        val = cnt.dtype.type(0)
                    if val != 0:
                        if tag[p, node, r] == k:
                            cur = cnt[p, node, r]
                        else:
                            cur = cnt.dtype.type(0)
                            tag[p, node, r] = k
                        if is_int and cur > _I64_MAX - val:
                            return -2, i, n_out
                        cnt[p, node, r] = cur + val
                    r += 1
                    if r == R:
                        r = 0
            continue
        # an event of a tie group: parents as they were before time t (journal of the first changes at
        # time t, of every partition: tie groups of several partitions interleave)
        if t != j_time:
            n_j = 0
            j_time = t
        for a in range(type_ptr[c], type_ptr[c + 1]):
            node = type_nodes[a]
            par = parent[node]
            for k in range(kmin, kmax + 1):
                r = k % R
                if par == 0:
                    val = cnt.dtype.type(1)
                elif tag[p, par, r] == k:
                    val = cnt[p, par, r]
                else:
                    val = cnt.dtype.type(0)
                for x in range(n_j):
                    if j_node[x] == par and j_slot[x] == r and j_part[x] == p:
                        val = j_old[x]
                        break
                if val == 0:
                    continue
                if tag[p, node, r] == k:
                    cur = cnt[p, node, r]
                else:
                    cur = cnt.dtype.type(0)
                    tag[p, node, r] = k
                seen = False
                for x in range(n_j):
                    if j_node[x] == node and j_slot[x] == r and j_part[x] == p:
                        seen = True
                        break
                if not seen:
                    j_part[n_j] = p
                    j_node[n_j] = node
                    j_slot[n_j] = r
                    j_old[n_j] = cur
                    n_j += 1
                if is_int and cur > _I64_MAX - val:
                    return -2, i, n_out
                cnt[p, node, r] = cur + val
    return 0, n, n_out


@jit
def emit_open(cnt, tag, slot_k, qleaf, out_q, out_p, out_k, out_v):
    """Rows of every open window (the end of the input); the buffers hold ``P * R * Q`` rows."""
    n_out = 0
    for p in range(cnt.shape[0]):
        for r in range(cnt.shape[2]):
            k = slot_k[p, r]
            if k < 0:
                continue
            for q in range(len(qleaf)):
                if tag[p, qleaf[q], r] != k:
                    continue
                v = cnt[p, qleaf[q], r]
                if v != 0:
                    out_q[n_out] = q
                    out_p[n_out] = p
                    out_k[n_out] = k
                    out_v[n_out] = v
                    n_out += 1
    return n_out

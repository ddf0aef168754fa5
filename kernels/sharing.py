"""Shared prefix counters for many fixed-length SEQ queries (A-Seq prefix sharing, Sharon's shared executor).

The queries of one sharing class form a trie of prefixes: node 0 is the empty
prefix, every other node a prefix ``(E_1 .. E_j)`` with its parent
``(E_1 .. E_{j-1})``; a prefix common to several queries is one node, so its
count is computed once per event for all of them (A-Seq's dynamic prefix
counting: an event of type ``E`` adds the count of ``parent`` to the count of
every node whose last type is ``E``).

Counts by start pane (A-Seq's Start Event Marking, by pane): time is cut into
panes of ``g = gcd(WITHIN, SLIDE)`` units, so every window ``[k*s, k*s + w)``
is a run of whole panes. ``C[p, node, j % Rp]`` counts the matches of the
prefix in partition ``p`` whose first event lies in pane ``j`` (``Rp = w / g``
panes are live: older ones start before every window that can still grow).
An event at ``t`` extends, for each node of its type, only the start panes
where the parent's count is non-zero (``mask[p, node]``: one bit per pane
slot, with ``Rp <= 62``; otherwise every live pane is read), so a prefix that
no start pane has reached costs nothing; an event of a first type adds 1 to
the current pane alone. A counter is valid while its tag equals the pane its
slot holds; a stale one reads as 0 (opening a pane resets nothing).

Windows: only a query's last node (its *leaf*) needs per-window totals.
``W[p, leaf, k % Rw]`` (``Rw = ceil(w / s)``) is the count of window ``k``:
when a leaf's count of start pane ``j`` grows by ``d`` at time ``t``, every
open window that contains ``t`` and starts at or before pane ``j`` gains
``d``. A window's slot is emitted (one row per query with a non-zero count)
when a later window takes it, and every open one at the end
(:func:`emit_open`). Without a window there is one pane and one window.

Local predicates: a trie symbol is an event type with its local predicates
(``A[price > 10]``); ``pm`` holds one boolean column per distinct predicate
(computed by the caller, once per batch) and a node whose predicate is false
for an event is skipped for it, like a node of another type.

Strictly increasing times inside a match:

* within one event, the nodes of its type are visited deepest first
  (``type_nodes`` is sorted so), so a node whose parent has the same type
  reads the parent before this event adds to it (a type twice in a pattern);
* events of one partition with equal times (a *tie group*, found by a first
  pass over the call's events) read every parent as it was before that time:
  the first change of each (partition, node, pane slot) at that time is
  journaled with its old value, and reads look the journal up. The caller
  holds back the events of a batch's last time stamp, so a tie group never
  spans two calls.

Exact int64 counts: an addition that would leave int64 stops the kernel with
status -2 (the caller raises the overflow error); float64 counts never stop.
The per-event loop is one function on purpose (docs/architecture.md,
"Kernels": a call with array arguments per event costs reference counting).
"""

from __future__ import annotations

import numpy as np

from cepvec.kernels._jit import jit, jit_callee, jit_inline, jit_reading, variant
from cepvec.kernels.trend.arith import _sadd, _smul

MODE_NONE = 0
MODE_SLIDE = 1
#: WITHIN alone: start panes are the distinct times of a partition (*ordinals*), live while they are
#: within ``w`` of the current time; one total per partition and leaf
MODE_WITHIN = 2
#: row kinds (``node_kind``): counts and non-null counts (added, never negative), sums (added, any
#: sign), MIN / MAX as uint64 order keys held in int64 (the larger key wins, 0 is no value)
KIND_COUNT = 0
KIND_SUM = 1
KIND_MAX = 2
#: most pane slots tracked by the bit mask of non-zero start panes
MASK_BITS = 62
_I64_MAX = np.iinfo(np.int64).max
NO_TAG = -(1 << 62)
# the index of a single set bit (< 64): de Bruijn multiplication, Numba has no count-trailing-zeros
_DEBRUIJN_MUL = 0x03F79D71B4CB0A89
_DEBRUIJN = np.zeros(64, np.int64)
for _i in range(64):
    _DEBRUIJN[(((1 << _i) * _DEBRUIJN_MUL) & ((1 << 64) - 1)) >> 58] = _i


@jit_inline
def _emit_window(W, wtag, leaf_of, qleaf, p, r, k, out_q, out_p, out_k, out_v, n_out):
    """Append a row per query with a non-zero count in window ``k`` (slot ``r``) of partition ``p``
    (once per window, not per event); returns the new row count."""
    for q in range(len(qleaf)):
        lf = leaf_of[qleaf[q]]
        if wtag[p, lf, r] == k and W[p, lf, r] != 0:
            out_q[n_out] = q
            out_p[n_out] = p
            out_k[n_out] = k
            out_v[n_out] = W[p, lf, r]
            n_out += 1
    return n_out


@jit_callee
def _emit_changes(pend_p, pend_lf, n_pend, t, w, within, leaf_node, lf_ptr, lf_rows, node_kind, first, is_int, C,
                  ctag, mask, FL, OT, ON, grp_ptr, grp_parts, out_q, out_p, out_k, out_v, n_out):
    """EMIT CHANGES at time ``t``: per (group, leaf) with an END event at ``t`` (each pair is recorded
    once per time stamp), the matches in ``(t - w, t]`` of every partition of the group
    (``grp_parts[grp_ptr[g]:grp_ptr[g + 1]]``; a leaf's counts of the ordinals after ``t - w``, without
    WITHIN of the one pane), combined as the row's kind combines (sums; the larger key of MIN / MAX),
    as a row of every output row of that leaf under the group's first partition. A match whose first
    event has its last N (a negated start) after ``t - w`` is left out. Only the slots of ``mask``
    are read when it is kept. Returns the new row count, -1 on an int64 overflow."""
    use_mask = C.shape[2] <= MASK_BITS
    for x in range(n_pend):
        gr, lf = pend_p[x], pend_lf[x]
        kind = node_kind[leaf_node[lf]]
        signed = is_int and kind == KIND_SUM
        tot = C.dtype.type(0)
        for gp in range(grp_ptr[gr], grp_ptr[gr + 1]):
            v, o1 = _leaf_value(grp_parts[gp], lf, t, w, within, use_mask, leaf_node, node_kind, first, is_int, C,
                                ctag, mask, FL, OT, ON)
            if not o1:
                tot, o1 = _combine(kind, signed, is_int, tot, v)
            if o1:
                return -1
        if tot == 0:
            continue
        for a in range(lf_ptr[lf], lf_ptr[lf + 1]):
            out_q[n_out] = lf_rows[a]
            out_p[n_out] = grp_parts[grp_ptr[gr]]
            out_k[n_out] = t
            out_v[n_out] = tot
            n_out += 1
    return n_out


@jit_inline
def _leaf_value(p, lf, t, w, within, use_mask, leaf_node, node_kind, first, is_int, C, ctag, mask, FL, OT, ON):
    """Leaf ``lf``'s matches in ``(t - w, t]`` in partition ``p`` (:func:`_emit_changes`): ``(value,
    overflowed)``."""
    Rp = C.shape[2]
    node = leaf_node[lf]
    kind = node_kind[node]
    fn = first[node]
    signed = is_int and kind == KIND_SUM
    tot = C.dtype.type(0)
    lo, hi = (ON[p, 2], ON[p, 0]) if within else (0, 0)
    if hi < 0:
        return tot, False  # no event of this partition yet
    if within:  # the partition's oldest live ordinal as of t (its last event may be earlier)
        while lo <= hi and OT[p, lo % Rp] <= t - w:
            lo += 1
    todo = mask[p, node] if use_mask else 0
    j = lo - 1
    while True:
        if use_mask:  # the slots of the mask's bits (a dead slot's bit is cleared)
            if todo == 0:
                break
            low = todo & -todo
            todo ^= low
            b = _DEBRUIJN[((low * _DEBRUIJN_MUL) >> 58) & 63]
            j = hi - (hi - b) % Rp
            if j < lo or ctag[p, node, b] != j:
                mask[p, node] &= ~low
                continue
        else:
            j += 1
            if j > hi:
                break
            b = j % Rp
            if ctag[p, node, b] != j:
                continue
        if fn >= 0 and within and FL[p, fn, b] != NO_TAG and FL[p, fn, b] > t - w:
            continue  # an N after t - w before the first event
        tot, o1 = _combine(kind, signed, is_int, tot, C[p, node, b])
        if o1:
            return tot, True
    return tot, False


# Not inlined: called only by events of a negated type; inlined, its code slowed the per-event loop of
# workloads without negation by 10% (120 e-commerce queries, 188 -> 205 ms).
@jit_callee
def _reset_guarded(i, c, p, jcur, jlo, Rp, use_mask, pm, reset_ptr, reset_nodes, reset_pred, C, ctag, mask, j_part,
                   j_node, j_slot, j_old, j_reset, n_j, within, leaf_of, W, is_int):
    """Event ``i`` (type code ``c``, partition ``p``, pane ``jcur``) resets the guarded nodes of its type:
    each live start pane (``jlo`` and later) keeps only what was added at this event's time (the
    journal holds the counts from before it; a pane not journaled yet is journaled here). ``within``
    (WITHIN alone, one total per leaf in ``W``): a reset leaf's total loses what the reset took (the
    matches a negated end removes). Returns the journal length, -1 when an int64 total overflowed."""
    for a in range(reset_ptr[c], reset_ptr[c + 1]):
        pr = reset_pred[a]
        if pr >= 0 and not pm[i, pr]:
            continue
        node = reset_nodes[a]
        todo = mask[p, node] if use_mask else 0
        lf = leaf_of[node] if within else -1
        for b in range(Rp):
            if use_mask and (todo >> b) & 1 == 0:
                continue
            tag = ctag[p, node, b]
            if tag > jcur or tag <= jcur - Rp or tag < jlo:
                continue  # a dead pane reads as 0
            cur = C[p, node, b]
            x = 0
            while x < n_j and not (j_node[x] == node and j_slot[x] == b and j_part[x] == p):
                x += 1
            if x == n_j:  # first change of this pane at this time: the count before it is the current one
                j_part[n_j] = p
                j_node[n_j] = node
                j_slot[n_j] = b
                j_old[n_j] = cur
                n_j += 1
            elif j_reset[x]:
                continue  # reset at this time already: it holds only what this time added
            j_reset[x] = True
            C[p, node, b] = cur - j_old[x]
            if lf >= 0 and j_old[x] != 0:
                if is_int:
                    v, o1 = _sadd(W[p, lf, 0], -j_old[x], True)
                    if o1:
                        return -1
                    W[p, lf, 0] = v
                else:
                    W[p, lf, 0] -= j_old[x]
    return n_j


@jit_inline
def _key_max(a, b):
    """The larger of two order keys (uint64 bit patterns in int64)."""
    return b if np.uint64(b) > np.uint64(a) else a


@jit_inline
def _combine(kind, signed, is_int, cur, val):
    """``cur`` and ``val`` combined as the row's kind combines them: the larger order key (MIN / MAX),
    else the sum (int64: checked, both ways for sums). Returns ``(value, overflowed)``."""
    if kind == KIND_MAX:
        return _key_max(cur, val), False
    if signed:
        return _sadd(cur, val, True)
    if is_int and cur > _I64_MAX - val:
        return cur, True
    return cur + val, False


@jit_inline
def _journal(p, row, slot, old, j_part, j_row, j_slot, j_old, j_reset, n_j):
    """Record ``old`` as the value of (partition, row, slot) before the current time, unless an entry
    for it is there already; returns the journal length."""
    for x in range(n_j):
        if j_row[x] == row and j_slot[x] == slot and j_part[x] == p:
            return n_j
    j_part[n_j] = p
    j_row[n_j] = row
    j_slot[n_j] = slot
    j_old[n_j] = old
    j_reset[n_j] = False
    return n_j + 1


@jit_callee
def _reset_ends(i, c, p, kmin, kmax, Rw, pm, end_ptr, end_leaf, end_pred, W, wtag, wj_part, wj_leaf, wj_slot,
                wj_old, wj_reset, n_wj):
    """Event ``i`` (code ``c``, partition ``p``, in windows ``kmin..kmax``) ends the matches of the leaves
    of queries ending with its negation: each open window keeps what its time added. Returns the
    window journal length."""
    for a in range(end_ptr[c], end_ptr[c + 1]):
        pr = end_pred[a]
        if pr >= 0 and not pm[i, pr]:
            continue
        lf = end_leaf[a]
        for k in range(kmin, kmax + 1):
            r = k % Rw
            if wtag[p, lf, r] != k:
                continue  # no match of this window yet
            cur = W[p, lf, r]
            x = 0
            while x < n_wj and not (wj_leaf[x] == lf and wj_slot[x] == r and wj_part[x] == p):
                x += 1
            if x == n_wj:
                n_wj = _journal(p, lf, r, cur, wj_part, wj_leaf, wj_slot, wj_old, wj_reset, n_wj)
            elif wj_reset[x]:
                continue
            wj_reset[x] = True
            W[p, lf, r] = cur - wj_old[x]
    return n_wj


#: The variant's constants (``kernels/_jit.py::variant``): ``NEG``, negations (guarded nodes, negated
#: starts and ends); ``EMIT``, EMIT CHANGES. :data:`run_shared_plain` has neither and compiles neither's
#: code (nor its helpers); :data:`run_shared` has both.
NEG = True
EMIT = True


def _run_shared(pid, times, codes, pm, ew, type_ptr, type_nodes, node_pred, node_w, node_kind, reset_ptr,
                reset_nodes, reset_pred, end_ptr, end_leaf, end_pred, start_ptr, start_nodes, start_pred, first,
                parent, leaf_of, qleaf, mode, w, s, g, is_int, emit, leaf_node, lf_ptr, lf_rows, gid, grp_ptr,
                grp_parts, C, ctag, mask, W, wtag, slot_k, LN, PN, FL, OT, ON, start, out_q, out_p, out_k, out_v):
    """Process events ``start..`` (every one of a type in the trie); returns (status, next event, rows).

    ``pm[i, j]``: whether local predicate ``j`` holds for event ``i`` (shape ``(n, predicates)``);
    ``node_pred[node]``: the predicate of a node, -1 for none (the node skips events it rejects).
    Sums (SUM / AVG): a *channel* row keeps, per start pane, the sum over its prefix's matches of
    an attribute of one position (or the number of those matches where it is not null).
    ``node_w[row] >= 0``: the row binds that position and adds the parent's count times the
    event's weight ``ew[i, node_w[row]]`` (the attribute, null as 0; or 1 / 0 for not null);
    otherwise it adds the parent row as a count row does. ``node_kind[row]``: ``KIND_SUM`` rows
    may be negative (int64 additions checked both ways); ``KIND_MAX`` rows (MIN / MAX) keep the
    largest order key of the position's events in their prefix's matches instead of a sum (the
    binding row takes the event's key where the parent's count shows a prefix; ``ew`` holds the
    keys).
    ``reset_nodes[reset_ptr[c]:reset_ptr[c + 1]]``: the guarded nodes an event of type code ``c``
    resets (a negation ``NOT N`` after the node's position; ``reset_pred``: the negation's
    predicate, -1 for none). After its own updates, such an event takes from every live start pane
    of the node the count it had before the event's time: prefixes that ended earlier have this
    event between them and any later extension; those ending at this time stay (the order in a
    match is strict). The event runs in journal mode (as a tie) so that later events of its time
    still read the counts from before it. ``end_leaf[end_ptr[c]:end_ptr[c + 1]]``: the leaves (in
    ``W``) of queries ending with ``NOT N`` that an event of code ``c`` resets (``end_pred``: N's
    predicate): in every open window that contains it, the matches that ended before it no longer
    count (an N after the match and before the window's end); the window totals of those leaves
    are journaled at tie times as the counts are.

    A negated start (``SEQ(NOT N, A, B)``: no N in ``[k*s, first)`` for window ``k``; without a
    window, no N before ``first``): an event of code ``c`` moves, for the first nodes
    ``start_nodes[start_ptr[c]:start_ptr[c + 1]]``, the last N time ``LN`` (and ``PN``, the one
    before, so that a first event reads the last N strictly before its time). A first event with
    an N before it in its own pane (without a window: at all) starts nothing; otherwise its
    matches count only in windows that start after the pane of that N, recorded per start pane in
    ``FL`` (every counted first event of a pane has the same last N: one in the pane would have
    stopped it). ``first[row]``: the guarded first node of a row's prefix, -1 for none.

    WITHIN alone (``MODE_WITHIN``): the start panes are *ordinals*, the distinct times of a
    partition's events in order (``ON[p] = (last ordinal, its time, oldest live ordinal)``,
    ``OT[p, slot]`` the time of the ordinal in a slot); an ordinal is live while its time is after
    ``t - w``, so a leaf's count grows only by matches with ``last - first < w``, and the leaf's
    total (one window) adds them. The caller sizes ``Rp`` to the most live ordinals
    (:func:`ordinals_needed`). A negated start keeps its first event and records the last N time
    (``FL``): a match counts at time ``t`` only when that N is at or before ``t - w``. A negated
    end is a guard of the leaf: the reset takes the matches it removes off the leaf's total.

    ``emit`` (EMIT CHANGES, with ``MODE_WITHIN`` or, without WITHIN, ``MODE_NONE``): an event that a
    leaf takes (type and predicate) is an END event of the leaf's queries; after its time stamp
    (:func:`_emit_changes`) every output row of that leaf (``lf_rows[lf_ptr[lf]:lf_ptr[lf + 1]]``)
    gets a row (key: the time) with the leaf's matches in ``(t - w, t]``: its counts by live
    ordinal (``leaf_node[lf]``: the leaf's trie row). No totals in ``W`` (``wtag[p, lf, 0]`` holds the
    last time the pair was recorded); with equivalence attributes beyond GROUP-BY an END event
    records its group (``gid[p]``), whose row adds up its partitions (``grp_ptr`` / ``grp_parts``: the
    partitions of each group); a negated end is a guard of
    the leaf (its reset removes the matches an N after them ends), a negated start is read at
    emission (the last N before the first event at or before ``t - w``).

    status 0: every event done; 1: the output buffers may not hold the rows of the next time stamp
    (call again from the next event with emptied or larger buffers: a stop falls between time
    stamps, so the journal of a tie group never spans two calls); -2: an int64 count overflowed at
    the next event.
    """
    n = len(times)
    n_part = C.shape[0]
    Rp = C.shape[2]
    Rw = W.shape[2]
    use_mask = Rp <= MASK_BITS
    Q = len(qleaf)
    cap = len(out_q)
    n_out = np.int64(0)
    has_pred = pm.shape[1] > 0
    one = C.dtype.type(1)
    zero = C.dtype.type(0)
    # first pass: which events share their partition's time stamp with an earlier / a later one (from
    # ``start`` on: a call resumes between time stamps, so no tie reaches back before it)
    last_i = np.full(n_part, -1, np.int64)
    tie_prev = np.zeros(n, np.bool_)
    tie_next = np.zeros(n, np.bool_)
    longest = 1  # most events with one time stamp (every partition)
    run = 0
    for i in range(start, n):
        p = pid[i]
        j = last_i[p]
        if j >= 0 and times[j] == times[i]:
            tie_prev[i] = True
            tie_next[j] = True
        run = run + 1 if i > start and times[i - 1] == times[i] else 1
        if run > longest:
            longest = run
        last_i[p] = i
    most = 1  # most journal entries per event and pane: nodes of its type and nodes it resets
    for c in range(len(type_ptr) - 1):
        k = type_ptr[c + 1] - type_ptr[c] + reset_ptr[c + 1] - reset_ptr[c] + end_ptr[c + 1] - end_ptr[c]
        if k > most:
            most = k
    jcap = longest * most * max(Rp, 1) + 1
    # window totals changed at the current time (end negations only): same layout, slots of W
    wcap = longest * most * Rw + 1 if end_ptr[-1] > 0 else 1
    wj_part = np.empty(wcap, np.int64)
    wj_leaf = np.empty(wcap, np.int64)
    wj_slot = np.empty(wcap, np.int64)
    wj_old = np.empty(wcap, C.dtype)
    wj_reset = np.zeros(wcap, np.bool_)
    n_wj = np.int64(0)
    has_end = end_ptr[-1] > 0
    has_start = start_ptr[-1] > 0
    j_part = np.empty(jcap, np.int64)
    j_node = np.empty(jcap, np.int64)
    j_slot = np.empty(jcap, np.int64)
    j_old = np.empty(jcap, C.dtype)
    j_reset = np.zeros(jcap, np.bool_)  # the entry's counter was reset at this time already
    n_j = np.int64(0)
    j_time = NO_TAG
    within = mode == MODE_WITHIN
    # EMIT CHANGES: the (partition, leaf) pairs with an END event at the current time stamp
    most_leaves = 1
    if emit:
        for c in range(len(type_ptr) - 1):
            k = 0
            for a in range(type_ptr[c], type_ptr[c + 1]):
                if leaf_of[type_nodes[a]] >= 0:
                    k += 1
            most_leaves = max(most_leaves, k)
    pend_p = np.empty(longest * most_leaves if emit else 0, np.int64)
    pend_lf = np.empty(longest * most_leaves if emit else 0, np.int64)
    n_pend = np.int64(0)
    for i in range(start, n):
        c = codes[i]
        p = pid[i]
        t = times[i]
        if (mode == MODE_SLIDE or emit) and (i == start or times[i - 1] != t):
            if EMIT and n_pend:  # the rows of the previous time stamp's END events (room checked at its start)
                n_out = _emit_changes(pend_p, pend_lf, n_pend, times[i - 1], w, within, leaf_node, lf_ptr, lf_rows,
                                      node_kind, first, is_int, C, ctag, mask, FL, OT, ON, grp_ptr, grp_parts, out_q, out_p, out_k, out_v,
                                      n_out)
                n_pend = np.int64(0)
                if n_out < 0:
                    return -2, i, 0
            # a new time stamp: its events open at most Rw windows each, every opening emitting Q rows;
            # with EMIT CHANGES an END event gives each query of its leaves a row, summed over the
            # partitions of its group (_emit_changes: one row per group, leaf and output row; the bound
            # times the partitions of the largest group asked 800 million rows of 4 000 events)
            e = i + 1
            while e < n and times[e] == t:
                e += 1
            if n_out + (e - i) * (Q if emit else Rw * Q) > cap:
                return 1, i, n_out
        for a in range(start_ptr[c], start_ptr[c + 1] if NEG and has_start else start_ptr[c]):  # a negated start's N
            pr = start_pred[a]
            if pr >= 0 and not pm[i, pr]:
                continue
            nd = start_nodes[a]
            if LN[p, nd] != t:
                PN[p, nd] = LN[p, nd]
                LN[p, nd] = t
        if mode == MODE_SLIDE:
            kmin = (t - w) // s + 1
            if kmin < 0:
                kmin = 0
            kmax = t // s
            if kmin > kmax:
                continue  # between windows (SLIDE > WITHIN): no match with this event is in a window
            jcur = t // g
            jlo = kmin * s // g  # first pane of the oldest window that contains t
        elif within:
            kmin = 0
            kmax = 0
            lo = ON[p, 2]
            jcur = ON[p, 0]
            while lo <= jcur and OT[p, lo % Rp] <= t - w:
                lo += 1  # expired: started at or before t - w
            if ON[p, 1] != t:  # a new time of this partition: the next ordinal
                jcur += 1
                OT[p, jcur % Rp] = t
                ON[p, 0] = jcur
                ON[p, 1] = t
            ON[p, 2] = lo
            jlo = lo
        else:
            kmin = 0
            kmax = 0
            jcur = 0
            jlo = 0
        # open the windows first (emitting the ones they replace), so a full buffer stops before any update
        for k in range(kmin, kmax + 1):
            r = k % Rw
            old = slot_k[p, r]
            if old != k:
                if old >= 0:
                    n_out = _emit_window(W, wtag, leaf_of, qleaf, p, r, old, out_q, out_p, out_k, out_v, n_out)
                slot_k[p, r] = k  # no reset: totals tagged with an older window read as 0
        ends = end_ptr[c + 1] > end_ptr[c]
        resets = reset_ptr[c + 1] > reset_ptr[c] or ends
        tie = tie_prev[i] or tie_next[i] or resets
        if tie and t != j_time:
            n_j = np.int64(0)  # the journal holds the first changes at time t, of every partition
            n_wj = np.int64(0)
            j_time = t
        for a in range(type_ptr[c], type_ptr[c + 1]):
            node = type_nodes[a]
            if has_pred:  # loop-invariant: without predicates the check costs nothing per node
                pr = node_pred[node]
                if pr >= 0 and not pm[i, pr]:
                    continue  # the node's local predicate rejects this event
            par = parent[node]
            lf = leaf_of[node]
            if EMIT and emit and lf >= 0:  # an END event of the leaf's queries: rows of its group after this time stamp
                gr = gid[p]
                if wtag[gr, lf, 0] != t:  # (no window totals under EMIT CHANGES: the tag holds the last
                    wtag[gr, lf, 0] = t   # time the pair was recorded)
                    pend_p[n_pend] = gr
                    pend_lf[n_pend] = lf
                    n_pend += 1
                lf = -1  # no totals in W
            fn = first[node] if NEG and has_start else -1  # loop-invariant flag: no load without a negated start
            if NEG and par == 0 and fn >= 0:  # a negated start: the last N strictly before this event
                last_n = LN[p, fn] if LN[p, fn] < t else PN[p, fn]
                floor = NO_TAG
                if last_n != NO_TAG:
                    if within:
                        floor = last_n  # its matches count from time last_n + w on
                    elif mode != MODE_SLIDE or last_n // g == jcur:
                        continue  # an N before it in the scope of every window that holds it
                    else:
                        floor = last_n // g
                if node == fn:
                    FL[p, fn, jcur % Rp] = floor
            if par == 0:
                todo = 1  # a first event: the current pane only
            elif use_mask:
                todo = mask[p, par]  # the start panes where the parent may be non-zero
                if todo == 0:
                    continue
            else:
                todo = jcur - jlo + 1
            jp = jcur if par == 0 else jlo - 1
            while todo != 0:
                # the next start pane jp (and its slot b) to extend
                if par == 0:
                    todo = 0
                    b = jcur % Rp
                elif use_mask:
                    low = todo & -todo
                    todo ^= low
                    b = _DEBRUIJN[((low * _DEBRUIJN_MUL) >> 58) & 63]
                    jp = jcur - (jcur - b) % Rp
                    if ctag[p, par, b] != jp:
                        mask[p, par] &= ~low  # a dead pane: forget it
                        continue
                    if jp < jlo:
                        continue
                else:
                    todo -= 1
                    jp += 1
                    b = jp % Rp
                # the parent's count of start pane jp, before time t
                if par == 0:
                    val = one
                elif ctag[p, par, b] == jp:
                    val = C[p, par, b]
                else:
                    val = zero
                if tie:
                    for x in range(n_j):
                        if j_node[x] == par and j_slot[x] == b and j_part[x] == p:
                            val = j_old[x]
                            break
                if val == 0:
                    continue
                wc = node_w[node]
                kind = node_kind[node]
                if wc >= 0:  # a channel row binding its position: the parent's count times the weight
                    if kind == KIND_MAX:
                        val = ew[i, wc]  # the event's order key (0: no value); the count said a prefix exists
                    elif is_int:
                        val, o1 = _smul(val, ew[i, wc], True)
                        if o1:
                            return -2, i, n_out
                    else:
                        val = val * ew[i, wc]
                    if val == 0:
                        continue
                signed = is_int and kind == KIND_SUM
                if ctag[p, node, b] == jp:
                    cur = C[p, node, b]
                else:
                    cur = zero
                    ctag[p, node, b] = jp
                if tie:
                    seen = False
                    for x in range(n_j):
                        if j_node[x] == node and j_slot[x] == b and j_part[x] == p:
                            seen = True
                            break
                    if not seen:
                        j_part[n_j] = p
                        j_node[n_j] = node
                        j_slot[n_j] = b
                        j_old[n_j] = cur
                        j_reset[n_j] = False
                        n_j += 1
                nv, o1 = _combine(kind, signed, is_int, cur, val)
                if o1:
                    return -2, i, n_out
                C[p, node, b] = nv
                if use_mask:
                    mask[p, node] |= 1 << b
                if lf >= 0:  # a query's last node: the windows that contain t and start by pane jp
                    khi = kmax if mode != MODE_SLIDE else min(kmax, jp * g // s)
                    klo = kmin
                    if NEG and within and fn >= 0 and FL[p, fn, b] != NO_TAG and FL[p, fn, b] > t - w:
                        continue  # the last N before the first event is within w of t
                    if NEG and fn >= 0 and mode == MODE_SLIDE and FL[p, fn, b] != NO_TAG:
                        kf = ((FL[p, fn, b] + 1) * g + s - 1) // s  # windows starting after the N's pane
                        if kf > klo:
                            klo = kf
                    r = klo % Rw
                    for k in range(klo, khi + 1):
                        if wtag[p, lf, r] == k:
                            tot = W[p, lf, r]
                        else:
                            tot = zero
                            wtag[p, lf, r] = k
                        nv, o1 = _combine(kind, signed, is_int, tot, val)
                        if o1:
                            return -2, i, n_out
                        if NEG and tie and has_end:  # (MIN / MAX never meet a negated end)
                            n_wj = _journal(p, lf, r, tot, wj_part, wj_leaf, wj_slot, wj_old, wj_reset, n_wj)
                        W[p, lf, r] = nv
                        r += 1
                        if r == Rw:
                            r = 0
        if NEG and ends:
            n_wj = _reset_ends(i, c, p, kmin, kmax, Rw, pm, end_ptr, end_leaf, end_pred, W, wtag, wj_part, wj_leaf,
                               wj_slot, wj_old, wj_reset, n_wj)
        if NEG and reset_ptr[c + 1] > reset_ptr[c]:
            n_j = _reset_guarded(i, c, p, jcur, jlo if within else jcur - Rp + 1, Rp, use_mask, pm, reset_ptr,
                                 reset_nodes, reset_pred, C, ctag, mask, j_part, j_node, j_slot, j_old, j_reset, n_j,
                                 within and not emit, leaf_of, W, is_int)
            if n_j < 0:
                return -2, i, n_out
    if EMIT and n_pend:
        n_out = _emit_changes(pend_p, pend_lf, n_pend, times[n - 1], w, within, leaf_node, lf_ptr, lf_rows, node_kind,
                              first, is_int, C, ctag, mask, FL, OT, ON, grp_ptr, grp_parts, out_q, out_p, out_k, out_v,
                              n_out)
        if n_out < 0:
            return -2, n - 1, 0
    return 0, n, n_out



run_shared = jit_reading("pid", "times")(variant(_run_shared, "run_shared", NEG=True, EMIT=True))
run_shared_plain = jit_reading("pid", "times")(variant(_run_shared, "run_shared_plain", NEG=False, EMIT=False))

@jit
def emit_open(W, wtag, slot_k, leaf_of, qleaf, out_q, out_p, out_k, out_v):
    """Rows of every open window (the end of the input); the buffers hold ``P * Rw * Q`` rows."""
    n_out = np.int64(0)
    for p in range(W.shape[0]):
        for r in range(W.shape[2]):
            k = slot_k[p, r]
            if k < 0:
                continue
            n_out = _emit_window(W, wtag, leaf_of, qleaf, p, r, k, out_q, out_p, out_k, out_v, n_out)
    return n_out


@jit_reading("times")
def ordinals_needed(order, seg_ptr, seg_pid, times, w, ON, OT, Rp):
    """The most live ordinals (WITHIN alone) any partition will hold while processing ``times``:
    its live ordinals from earlier calls (``ON`` / ``OT`` with ``Rp`` slots) and the distinct times of
    its events here (``order[seg_ptr[k]:seg_ptr[k + 1]]``: partition ``seg_pid[k]``'s events in
    time order), counted over every stretch of ``w`` time units."""
    most = 1
    buf = np.empty(0, np.int64)
    for k in range(len(seg_pid)):
        p = seg_pid[k]
        lo, hi = seg_ptr[k], seg_ptr[k + 1]
        n_old = ON[p, 0] - ON[p, 2] + 1 if ON[p, 0] >= 0 else 0
        if n_old < 0:
            n_old = 0
        if len(buf) < n_old + hi - lo:
            buf = np.empty(2 * (n_old + hi - lo), np.int64)
        m = 0
        for j in range(ON[p, 2], ON[p, 2] + n_old):
            buf[m] = OT[p, j % Rp]
            m += 1
        for x in range(lo, hi):
            t = times[order[x]]
            if m == 0 or buf[m - 1] != t:
                buf[m] = t
                m += 1
        a = 0
        for x in range(m):  # distinct times in (buf[x] - w, buf[x]]
            while buf[a] <= buf[x] - w:
                a += 1
            if x - a + 1 > most:
                most = x - a + 1
    return most


@jit
def relayout(ON, Rp, C, ctag, FL, OT, C2, ctag2, FL2, OT2, mask2):
    """Copy the live ordinals of every partition from ``Rp`` slots to ``C2.shape[2]`` slots (ordinal
    ``j`` goes to slot ``j % R``); the new mask (when ``R`` fits it) marks the slots holding counts."""
    R = C2.shape[2]
    use_mask = R <= MASK_BITS
    for p in range(ON.shape[0]):
        if ON[p, 0] < 0:
            continue
        for j in range(ON[p, 2], ON[p, 0] + 1):
            b, b2 = j % Rp, j % R
            OT2[p, b2] = OT[p, b]
            for node in range(C.shape[1]):
                FL2[p, node, b2] = FL[p, node, b]
                if ctag[p, node, b] == j:
                    C2[p, node, b2] = C[p, node, b]
                    ctag2[p, node, b2] = j
                    if use_mask:
                        mask2[p, node] |= 1 << b2

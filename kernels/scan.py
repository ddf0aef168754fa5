"""Trend aggregation by predecessor scan: GRETA's per-event graph, O(n) per event.

Reference: GRETA (Theorems 4.3 and 9.1, Definition 5, Sections 5, 6 and 9).
See ``docs/algorithms.md`` section 5 for the derivation.

The path for what the Fenwick trend path (``kernels/trend/``) and the
linear maps (``kernels/linear/``) refuse: any edge predicate, every window
form, multi-event and nested negative sub-patterns, MIN/MAX. Every event
``e`` bound to occurrence ``o`` scans the earlier events of its partition
(its *predecessors*) and sums their value rows where the transition's edge
predicate holds::

    row(e as o)[b] = [o starts, seeded in bucket b] + sum over transitions p -> o,
                     earlier x bound to p, edge(x, e) true, no guarding negation between:
                     row(x as p)[b]

A *bucket* ``b`` is what the window needs to tell trends apart: one bucket
without a window (and for EMIT CHANGES without WITHIN), the window index
``k`` for ``WITHIN w SLIDE s``, and the start time of the trend for
``WITHIN w`` and ``WITHIN w EMIT CHANGES`` (a trend counts only when
``last - first < w``, so trends are kept apart by their first event's time).
An event holds the buckets ``[blo, bhi)`` it can lie in; a pair reads the
buckets both lie in.

Edge predicates arrive as a postfix program (``OP_*``) over numeric columns
(strings as codes of an order-preserving dictionary, nulls as masks) and are
interpreted once per (event, transition) over the whole block of candidate
predecessors (:func:`_eval_block`), so the interpreter's dispatch costs per
event, not per pair.

Negation (GRETA Definition 5): for every negative sub-pattern ``N`` the
kernel computes ``LS_N(t)``, the latest start time of an ``N``-match that
ended before ``t`` (``NEG_INF`` if none), by max-propagation of start times
along ``N``'s own template (start events carry their own time; nested
negations are applied first, innermost first, exactly as guards of the main
pattern). Every negation condition of the contract is ``LS_N(A) > B``:

* middle ``SEQ(P, NOT N, Q)``: edge ``x -> e`` invalid iff ``LS_N(e.t) > x.t``;
* start: invalid iff ``LS_N(first) > -inf`` (no window), ``>= k s`` (SLIDE),
  ``> last - w`` (WITHIN), ``> t - w`` (EMIT CHANGES at ``t``);
* end: invalid iff ``LS_N(+inf) > last`` (no window), ``LS_N(k s + w) > last``
  (SLIDE), ``LS_N(first + w) > last`` (WITHIN), ``LS_N(t + 1) > last`` (EMIT).

Negative matches, like positive ones, span less than ``w`` under a window.

Aggregates: a row is the count, the linear components (``COUNT(v)``,
``SUM(v.a)``, non-null counts) in the state dtype (int64 with overflow
detection, or float64), float sums next to exact counts, and per MIN/MAX
aggregate the minimum and maximum order code over the prefixes.

All arrays are C-contiguous NumPy arrays; no Python objects cross into the
kernel.
"""

from __future__ import annotations

import numpy as np

from ._jit import jit, jit_callee, jit_inline
from .trend.arith import _sadd, _smul
from .trend.keys import _lower

MODE_NONE = 0
MODE_WITHIN = 1
MODE_EMIT = 2  # WITHIN w EMIT CHANGES
MODE_SLIDE = 3
MODE_EMIT_ALL = 4  # EMIT CHANGES without WITHIN

ERR_OVERFLOW = 1
#: the value rows of a segment exceed the bound they were sized by before the loop (a bug: err[1] partition,
#: err[2] rows)
ERR_INTERNAL = 3

I64_MAX = 9223372036854775807
NEG_INF = -9223372036854775807 - 1

# postfix opcodes of edge predicates (stack of (int, float, null) slots)
OP_PUSH_PI = 0  # prev event's int column arg
OP_PUSH_NI = 1  # next event's int column arg
OP_PUSH_PF = 2
OP_PUSH_NF = 3
OP_CONST_I = 4
OP_CONST_F = 5
OP_TOF = 6  # top int -> float
OP_TOF2 = 7  # second from top int -> float
OP_ADD_I = 8
OP_SUB_I = 9
OP_MUL_I = 10
OP_MOD_I = 11
OP_NEG_I = 12
OP_ADD_F = 13
OP_SUB_F = 14
OP_MUL_F = 15
OP_DIV_F = 16
OP_MOD_F = 17
OP_NEG_F = 18
OP_CMP_I = 19  # arg: CMP_*
OP_CMP_F = 20
OP_AND = 21
OP_OR = 22
OP_NOT = 23
OP_NOTNULL = 24

CMP_EQ = 0
CMP_NE = 1
CMP_LT = 2
CMP_LE = 3
CMP_GT = 4
CMP_GE = 5


@jit_inline
def _cmp(a, b, c):
    if c == CMP_EQ:
        return a == b
    if c == CMP_NE:
        return a != b
    if c == CMP_LT:
        return a < b
    if c == CMP_LE:
        return a <= b
    if c == CMP_GT:
        return a > b
    return a >= b


# One long function on purpose: the dispatch loop of a stack machine, one branch per opcode;
# a call per opcode would pass the stack arrays each time (atomic reference counting, see below).
@jit_inline
def eval_scratch(max_depth, n):
    """Scratch of :func:`_eval_block` for blocks of up to ``n`` candidates: ``(cand, mask, sI, sF, sN)``."""
    return (np.empty(n, np.int64), np.empty(n, np.bool_), np.zeros((max_depth, n), np.int64),
            np.zeros((max_depth, n), np.float64), np.zeros((max_depth, n), np.bool_))


@jit_callee
def _eval_block(prog_op, prog_arg, plo, phi, constI, constF, colI, nI, colF, nF, cand, nc, e, sI, sF, sN, mask):
    """Evaluate one predicate program for the pairs (cand[k], e), k < nc: mask[k] = predicate is true.

    SQL three-valued logic as the reference engine: a null operand makes arithmetic and
    comparisons null, ``x / 0`` and ``x % 0`` are null, ``%`` is floor modulo; only true passes.
    """
    d = 0
    for pc in range(plo, phi):
        op = prog_op[pc]
        a = prog_arg[pc]
        if op == OP_PUSH_PI:
            for k in range(nc):
                x = cand[k]
                sI[d, k] = colI[x, a]
                sN[d, k] = nI[x, a]
            d += 1
        elif op == OP_PUSH_NI:
            v = colI[e, a]
            nn = nI[e, a]
            for k in range(nc):
                sI[d, k] = v
                sN[d, k] = nn
            d += 1
        elif op == OP_PUSH_PF:
            for k in range(nc):
                x = cand[k]
                sF[d, k] = colF[x, a]
                sN[d, k] = nF[x, a]
            d += 1
        elif op == OP_PUSH_NF:
            fv = colF[e, a]
            nn = nF[e, a]
            for k in range(nc):
                sF[d, k] = fv
                sN[d, k] = nn
            d += 1
        elif op == OP_CONST_I:
            v = constI[a]
            for k in range(nc):
                sI[d, k] = v
                sN[d, k] = False
            d += 1
        elif op == OP_CONST_F:
            fv = constF[a]
            for k in range(nc):
                sF[d, k] = fv
                sN[d, k] = False
            d += 1
        elif op == OP_TOF:
            for k in range(nc):
                sF[d - 1, k] = float(sI[d - 1, k])
        elif op == OP_TOF2:
            for k in range(nc):
                sF[d - 2, k] = float(sI[d - 2, k])
        elif op == OP_NEG_I:
            for k in range(nc):
                sI[d - 1, k] = -sI[d - 1, k]
        elif op == OP_NEG_F:
            for k in range(nc):
                sF[d - 1, k] = -sF[d - 1, k]
        elif op == OP_NOT:
            for k in range(nc):
                sI[d - 1, k] = 1 - sI[d - 1, k]
        elif op == OP_NOTNULL:
            for k in range(nc):
                sI[d - 1, k] = 0 if sN[d - 1, k] else 1
                sN[d - 1, k] = False
        elif op == OP_AND or op == OP_OR:
            for k in range(nc):
                an = sN[d - 2, k]
                bn = sN[d - 1, k]
                av = sI[d - 2, k] != 0
                bv = sI[d - 1, k] != 0
                if op == OP_AND:
                    if (not an and not av) or (not bn and not bv):
                        sI[d - 2, k] = 0
                        sN[d - 2, k] = False
                    elif an or bn:
                        sN[d - 2, k] = True
                    else:
                        sI[d - 2, k] = 1
                else:
                    if (not an and av) or (not bn and bv):
                        sI[d - 2, k] = 1
                        sN[d - 2, k] = False
                    elif an or bn:
                        sN[d - 2, k] = True
                    else:
                        sI[d - 2, k] = 0
            d -= 1
        elif op == OP_CMP_I or op == OP_CMP_F:
            # one loop per (type, comparison): no dispatch inside the loop, so LLVM can vectorise it
            for k in range(nc):
                sN[d - 2, k] = sN[d - 2, k] or sN[d - 1, k]
            if op == OP_CMP_F:
                if a == CMP_LT:
                    for k in range(nc):
                        sI[d - 2, k] = sF[d - 2, k] < sF[d - 1, k]
                elif a == CMP_GT:
                    for k in range(nc):
                        sI[d - 2, k] = sF[d - 2, k] > sF[d - 1, k]
                else:
                    for k in range(nc):
                        sI[d - 2, k] = _cmp(sF[d - 2, k], sF[d - 1, k], a)
            else:
                if a == CMP_LT:
                    for k in range(nc):
                        sI[d - 2, k] = sI[d - 2, k] < sI[d - 1, k]
                elif a == CMP_GT:
                    for k in range(nc):
                        sI[d - 2, k] = sI[d - 2, k] > sI[d - 1, k]
                else:
                    for k in range(nc):
                        sI[d - 2, k] = _cmp(sI[d - 2, k], sI[d - 1, k], a)
            d -= 1
        elif op == OP_ADD_I or op == OP_SUB_I or op == OP_MUL_I or op == OP_ADD_F or op == OP_SUB_F \
                or op == OP_MUL_F:
            for k in range(nc):
                sN[d - 2, k] = sN[d - 2, k] or sN[d - 1, k]
            if op == OP_ADD_I:
                for k in range(nc):
                    sI[d - 2, k] = sI[d - 2, k] + sI[d - 1, k]
            elif op == OP_SUB_I:
                for k in range(nc):
                    sI[d - 2, k] = sI[d - 2, k] - sI[d - 1, k]
            elif op == OP_MUL_I:
                for k in range(nc):
                    sI[d - 2, k] = sI[d - 2, k] * sI[d - 1, k]
            elif op == OP_ADD_F:
                for k in range(nc):
                    sF[d - 2, k] = sF[d - 2, k] + sF[d - 1, k]
            elif op == OP_SUB_F:
                for k in range(nc):
                    sF[d - 2, k] = sF[d - 2, k] - sF[d - 1, k]
            else:
                for k in range(nc):
                    sF[d - 2, k] = sF[d - 2, k] * sF[d - 1, k]
            d -= 1
        else:  # division and modulo: null on a zero divisor
            for k in range(nc):
                nn = sN[d - 2, k] or sN[d - 1, k]
                if op == OP_MOD_I:
                    bi = sI[d - 1, k]
                    if bi == 0:
                        nn = True
                    elif bi == -1:  # x % -1 == 0; avoids the trap of INT64_MIN % -1
                        sI[d - 2, k] = 0
                    elif not nn:
                        sI[d - 2, k] = sI[d - 2, k] % bi  # floor modulo, as Python
                elif op == OP_DIV_F:
                    bf = sF[d - 1, k]
                    if bf == 0.0:
                        nn = True
                    else:
                        sF[d - 2, k] = sF[d - 2, k] / bf
                else:  # OP_MOD_F, Python's float modulo: the sign of the divisor
                    bf = sF[d - 1, k]
                    if bf == 0.0:
                        nn = True
                    else:
                        r = np.fmod(sF[d - 2, k], bf)
                        if r != 0.0:
                            if (bf < 0.0) != (r < 0.0):
                                r += bf
                        else:
                            r = np.copysign(0.0, bf)
                        sF[d - 2, k] = r
                sN[d - 2, k] = nn
            d -= 1
    for k in range(nc):
        mask[k] = (not sN[0, k]) and sI[0, k] != 0


@jit_inline
def _ls(PM, g, ev_t, lo, hi, T):
    """Latest start time of a match of negation g that ended before T (NEG_INF: none)."""
    if g < 0:
        return NEG_INF
    return PM[g, _lower(ev_t, lo, hi, T) - lo]


# One long function on purpose: inside a kernel this large, a call with array arguments per event
# costs atomic reference counting (see the performance note in ``trend/__init__.py``).
@jit
def run_scan(mode, w, s, check, done, bound, seg_ptr, seg_pid, seg_kbase, out_ptr, ev_row, seg_et_lo, seg_et_hi, ET,
             ev_t, ev_bind, wi, wf, mmv, mmok, colI, nI, colF, nF,
             occ_pat, occ_start, occ_end, in_ptr, in_tr, tr_src, tr_plo, tr_phi, tr_gptr, tr_guards,
             prog_op, prog_arg, constI, constF, neg_order, start_neg, end_neg,
             comp_i, comp_f, mm_occ, max_depth, out_vi, out_vf, out_mm, err):
    """Scan every partition ``seg_ptr[k]:seg_ptr[k+1]`` (events in time order) and fill its output rows.

    Output rows of segment k are ``out_ptr[k]:out_ptr[k+1]``: one row (no window, WITHIN), one per
    window that holds an event of the segment (SLIDE: the windows of event ``i`` are rows ``ev_row[i]``
    and on, relative to the segment, in window order; buckets count windows from ``seg_kbase[k]``),
    one per emit time ``ET[seg_et_lo[k] + j]`` (EMIT CHANGES).
    Only results that became final in ``(done, bound]`` are added (streaming: the caller replays
    the events still in reach): WITHIN, matches whose first event ``τ`` has ``done < τ + w <= bound``;
    SLIDE, windows with ``done < k s + w <= bound``; EMIT CHANGES, the caller passes only the new
    emit times. ``out_vi``/``out_vf`` must be zero and ``out_mm`` hold ``I64_MAX`` (minimum columns, even) and
    ``NEG_INF`` (maximum columns, odd). On int64 overflow ``err = (ERR_OVERFLOW, partition, time)``.
    """
    n_occ = occ_pat.shape[0]
    n_neg = neg_order.shape[0]
    G = n_neg  # pattern index of the main (positive) pattern
    NCi = wi.shape[1]
    Ri = 1 + NCi
    Rf = wf.shape[1]
    NM = mmv.shape[1]
    RM = 2 * NM
    windowed = mode == MODE_WITHIN or mode == MODE_EMIT or mode == MODE_SLIDE
    by_start = mode == MODE_WITHIN or mode == MODE_EMIT
    dt = out_vi.dtype
    single = mode == MODE_NONE or mode == MODE_EMIT_ALL  # one bucket per event
    scalar = single and Ri == 1 and Rf == 0 and NM == 0
    # scratch of one segment, allocated once for the longest (many tiny partitions: one allocation
    # per array, not one per partition); a segment uses the first n rows
    # counters and bounds passed to helpers are typed: a literal 0 compiles the helper twice (literal, then int64)
    nmax = np.int64(0)
    zero = np.int64(0)
    for sg in range(seg_ptr.shape[0] - 1):
        nmax = max(nmax, seg_ptr[sg + 1] - seg_ptr[sg])
    cand, mask, sI, sF, sN = eval_scratch(max_depth, nmax)
    gstart = np.empty(nmax, np.int64)  # first event of e's time stamp: predecessors end before it
    xlo = np.empty(nmax, np.int64)  # first event inside e's window reach (t > e.t - w)
    PM = np.empty((max(n_neg, 1), nmax + 1), np.int64)
    ST = np.empty((nmax if n_neg > 0 else 0, n_occ), np.int64)
    blo = np.empty(nmax, np.int64)
    bhi = np.empty(nmax, np.int64)
    SB = np.empty(nmax if by_start else 0, np.int64)  # distinct start times (by_start buckets)
    off = np.empty((nmax, n_occ), np.int64)
    # value rows of a segment, sized once for the largest bound (an array the loop may rebind is
    # reference-counted on every pass): an event adds a row per main occurrence it binds and bucket,
    # and its buckets are at most its windows (SLIDE) or the events in its reach (WITHIN, EMIT)
    n_main = 0
    for o in range(n_occ):
        if occ_pat[o] == G:
            n_main += 1
    vmax = 1
    for sg in range(seg_ptr.shape[0] - 1):
        lo = seg_ptr[sg]
        hi = seg_ptr[sg + 1]
        if mode == MODE_SLIDE:
            tot = (hi - lo) * (w // s + 2)
        elif by_start:
            tot = 0
            j = lo
            k = lo
            for i in range(lo, hi):
                while ev_t[j] <= ev_t[i] - w:
                    j += 1
                while k < hi and ev_t[k] <= ev_t[i]:
                    k += 1
                tot += k - j
        else:
            tot = hi - lo
        vmax = max(vmax, tot * n_main)
    VI = np.empty(vmax * Ri, dt)
    VF = np.empty(vmax * Rf, np.float64)
    VM = np.empty(vmax * RM, np.int64)
    for sg in range(seg_ptr.shape[0] - 1):
        lo = seg_ptr[sg]
        hi = seg_ptr[sg + 1]
        n = hi - lo
        if n == 0:
            continue
        pid = seg_pid[sg]
        o0 = out_ptr[sg]
        ncap = out_ptr[sg + 1] - o0
        j = lo
        for i in range(lo, hi):
            if i > lo and ev_t[i] == ev_t[i - 1]:
                gstart[i - lo] = gstart[i - 1 - lo]
            else:
                gstart[i - lo] = i
            if windowed:
                while ev_t[j] <= ev_t[i] - w:
                    j += 1
                xlo[i - lo] = j
            else:
                xlo[i - lo] = lo

        # ---- negative sub-patterns, innermost first: PM[g, i] = LS_g(ev_t[lo + i])
        for gi in range(n_neg):
            g = neg_order[gi]
            PM[g, 0] = NEG_INF
            for i in range(lo, hi):
                bnd = ev_bind[i]
                ti = ev_t[i]
                endv = NEG_INF
                floor_ = ti - w if windowed else NEG_INF  # a match's start must be > floor_
                for o in range(n_occ):
                    if occ_pat[o] != g or (bnd >> o) & 1 == 0:
                        continue
                    best = ti if occ_start[o] else NEG_INF
                    for ii in range(in_ptr[o], in_ptr[o + 1]):
                        tr = in_tr[ii]
                        p = tr_src[tr]
                        glim = NEG_INF
                        for gg in range(tr_gptr[tr], tr_gptr[tr + 1]):
                            v = _ls(PM, tr_guards[gg], ev_t, lo, hi, ti)
                            if v > glim:
                                glim = v
                        nc = np.int64(0)  # typed: a literal 0 here made _eval_block compile twice
                        for x in range(xlo[i - lo], gstart[i - lo]):
                            if (ev_bind[x] >> p) & 1 != 0 and ev_t[x] >= glim:
                                v = ST[x - lo, p]
                                if v > best and v > floor_:
                                    cand[nc] = x
                                    nc += 1
                        if nc == 0:
                            continue
                        has_prog = tr_phi[tr] > tr_plo[tr]
                        if has_prog:
                            _eval_block(prog_op, prog_arg, tr_plo[tr], tr_phi[tr], constI, constF, colI, nI,
                                        colF, nF, cand, nc, i, sI, sF, sN, mask)
                        for k in range(nc):
                            if (not has_prog) or mask[k]:
                                v = ST[cand[k] - lo, p]
                                if v > best:
                                    best = v
                    ST[i - lo, o] = best
                    if occ_end[o] and best > floor_ and best > endv:
                        endv = best
                prev = PM[g, i - lo]
                PM[g, i - lo + 1] = endv if endv > prev else prev

        # ---- buckets of every event: [blo, bhi)
        for i in range(n):
            blo[i] = 0
            bhi[i] = 1
        nsb = np.int64(0)
        kb = seg_kbase[sg]
        if mode == MODE_SLIDE:
            for i in range(lo, hi):
                t = ev_t[i]
                klo = (t - w) // s + 1
                if klo < 0:
                    klo = 0
                khi = t // s
                blo[i - lo] = klo - kb
                bhi[i - lo] = khi + 1 - kb
                if bhi[i - lo] < blo[i - lo]:
                    bhi[i - lo] = blo[i - lo]
        elif by_start:
            for i in range(lo, hi):
                for o in range(n_occ):
                    if occ_pat[o] == G and occ_start[o] and (ev_bind[i] >> o) & 1 != 0:
                        if nsb == 0 or SB[nsb - 1] != ev_t[i]:
                            SB[nsb] = ev_t[i]
                            nsb += 1
                        break
            for i in range(lo, hi):
                t = ev_t[i]
                blo[i - lo] = _lower(SB, zero, nsb, t - w + 1)
                bhi[i - lo] = _lower(SB, zero, nsb, t + 1)
        # ---- value rows: offsets of every (event, main occurrence)
        for i in range(n):
            for o in range(n_occ):
                off[i, o] = -1
        total = 0
        for i in range(lo, hi):
            nb = bhi[i - lo] - blo[i - lo]
            if nb <= 0:
                continue
            for o in range(n_occ):
                if occ_pat[o] == G and (ev_bind[i] >> o) & 1 != 0:
                    off[i - lo, o] = total
                    total += nb
        if total > vmax:
            err[0] = ERR_INTERNAL
            err[1] = pid
            err[2] = total
            return
        for r in range(total * Ri):
            VI[r] = 0
        for r in range(total * Rf):
            VF[r] = 0.0
        for r in range(total):
            for m in range(NM):
                VM[r * RM + 2 * m] = I64_MAX
                VM[r * RM + 2 * m + 1] = NEG_INF
        et_lo = seg_et_lo[sg]
        et_hi = seg_et_hi[sg]
        bad = False
        for i in range(lo, hi):
            bnd = ev_bind[i]
            ti = ev_t[i]
            b0 = blo[i - lo]
            b1 = bhi[i - lo]
            nb = b1 - b0
            if nb <= 0:
                continue
            for o in range(n_occ):
                base = off[i - lo, o]
                if base < 0:
                    continue
                # seeds: the trends this event starts
                if occ_start[o]:
                    ls0 = _ls(PM, start_neg, ev_t, lo, hi, ti)
                    if mode == MODE_NONE or mode == MODE_EMIT_ALL:
                        if ls0 == NEG_INF:
                            VI[base * Ri] = 1
                    elif mode == MODE_SLIDE:
                        for b in range(b0, b1):
                            if not (ls0 != NEG_INF and ls0 >= (kb + b) * s):
                                VI[(base + b - b0) * Ri] = 1
                    else:  # its own start-time bucket (the last one it lies in); start negation at the end
                        VI[(base + nb - 1) * Ri] = 1
                # predecessors
                for ii in range(in_ptr[o], in_ptr[o + 1]):
                    tr = in_tr[ii]
                    p = tr_src[tr]
                    glim = NEG_INF
                    for gg in range(tr_gptr[tr], tr_gptr[tr + 1]):
                        v = _ls(PM, tr_guards[gg], ev_t, lo, hi, ti)
                        if v > glim:
                            glim = v
                    nc = np.int64(0)
                    for x in range(xlo[i - lo], gstart[i - lo]):
                        if off[x - lo, p] >= 0 and ev_t[x] >= glim:
                            if single or max(blo[x - lo], b0) < min(bhi[x - lo], b1):
                                cand[nc] = x
                                nc += 1
                    if nc == 0:
                        continue
                    has_prog = tr_phi[tr] > tr_plo[tr]
                    if has_prog:
                        _eval_block(prog_op, prog_arg, tr_plo[tr], tr_phi[tr], constI, constF, colI, nI,
                                    colF, nF, cand, nc, i, sI, sF, sN, mask)
                    if scalar:  # one bucket, a count only (COUNT(*)): sum in a register
                        acc = VI[base]
                        for k in range(nc):
                            if has_prog and not mask[k]:
                                continue
                            sv, o1 = _sadd(acc, VI[off[cand[k] - lo, p]], check)
                            acc = sv
                            bad |= o1
                        VI[base] = acc
                        continue
                    for k in range(nc):
                        if has_prog and not mask[k]:
                            continue
                        x = cand[k]
                        xb0 = blo[x - lo]
                        c0 = max(xb0, b0)
                        c1 = min(bhi[x - lo], b1)
                        xbase = off[x - lo, p]
                        for b in range(c0, c1):
                            src = xbase + b - xb0
                            dst = base + b - b0
                            cx = VI[src * Ri]
                            if cx == 0:
                                continue
                            for r in range(Ri):
                                sv, o1 = _sadd(VI[dst * Ri + r], VI[src * Ri + r], check)
                                VI[dst * Ri + r] = sv
                                bad |= o1
                            for r in range(Rf):
                                VF[dst * Rf + r] += VF[src * Rf + r]
                            for m in range(NM):
                                if VM[src * RM + 2 * m] < VM[dst * RM + 2 * m]:
                                    VM[dst * RM + 2 * m] = VM[src * RM + 2 * m]
                                if VM[src * RM + 2 * m + 1] > VM[dst * RM + 2 * m + 1]:
                                    VM[dst * RM + 2 * m + 1] = VM[src * RM + 2 * m + 1]
                # this event's own weights: agg(e) = sum of agg(x) + count(e) * w(e)
                for b in range(nb):
                    r0 = base + b
                    cnt = VI[r0 * Ri]
                    if cnt == 0:
                        continue
                    for c in range(NCi):
                        if comp_i[c, o]:
                            prod, o1 = _smul(cnt, wi[i, c], check)
                            sv, o2 = _sadd(VI[r0 * Ri + 1 + c], prod, check)
                            VI[r0 * Ri + 1 + c] = sv
                            bad |= o1 | o2
                    for c in range(Rf):
                        if comp_f[c, o]:
                            VF[r0 * Rf + c] += float(cnt) * wf[i, c]
                    for m in range(NM):
                        if mm_occ[m, o] and mmok[i, m]:
                            mv = mmv[i, m]
                            if mv < VM[r0 * RM + 2 * m]:
                                VM[r0 * RM + 2 * m] = mv
                            if mv > VM[r0 * RM + 2 * m + 1]:
                                VM[r0 * RM + 2 * m + 1] = mv
                if bad:
                    err[0] = ERR_OVERFLOW
                    err[1] = pid
                    err[2] = ti
                    return
                if not occ_end[o]:
                    continue
                # ---- complete matches ending at this event: add to the output rows
                for b in range(nb):
                    r0 = base + b
                    if VI[r0 * Ri] == 0:
                        continue
                    if mode == MODE_NONE or mode == MODE_EMIT_ALL or mode == MODE_WITHIN or mode == MODE_SLIDE:
                        if mode == MODE_SLIDE:
                            orow = ev_row[i] + b
                            kend = (kb + b0 + b) * s + w
                            if kend <= done or kend > bound:
                                continue
                            if _ls(PM, end_neg, ev_t, lo, hi, kend) > ti:
                                continue
                        elif mode == MODE_WITHIN:
                            orow = 0
                            tau = SB[b0 + b]
                            if tau + w <= done or tau + w > bound:
                                continue
                            if _ls(PM, start_neg, ev_t, lo, hi, tau) > ti - w:
                                continue
                            if _ls(PM, end_neg, ev_t, lo, hi, tau + w) > ti:
                                continue
                        elif mode == MODE_NONE:
                            orow = 0
                            if end_neg >= 0 and PM[end_neg, n] > ti:
                                continue
                        else:  # EMIT_ALL: every emit time from ti on, until an end negation starts after ti
                            orow = -1
                        if orow >= 0:
                            if orow >= ncap:
                                continue
                            rows_lo = orow
                            rows_hi = orow + 1
                        else:
                            rows_lo = _lower(ET, et_lo, et_hi, ti) - et_lo
                            rows_hi = et_hi - et_lo
                    else:  # MODE_EMIT: times t in [ti, tau + w), t >= LS_start(tau) + w
                        tau = SB[b0 + b]
                        tlo = ti
                        ls0 = _ls(PM, start_neg, ev_t, lo, hi, tau)
                        if ls0 != NEG_INF and ls0 + w > tlo:
                            tlo = ls0 + w
                        rows_lo = _lower(ET, et_lo, et_hi, tlo) - et_lo
                        rows_hi = _lower(ET, et_lo, et_hi, tau + w) - et_lo
                    for q in range(rows_lo, rows_hi):
                        if mode == MODE_EMIT or mode == MODE_EMIT_ALL:
                            if _ls(PM, end_neg, ev_t, lo, hi, ET[et_lo + q] + 1) > ti:
                                break  # LS is non-decreasing in t: no later time is valid either
                        orow2 = o0 + q
                        for r in range(Ri):
                            sv, o1 = _sadd(out_vi[orow2, r], VI[r0 * Ri + r], check)
                            out_vi[orow2, r] = sv
                            bad |= o1
                        for r in range(Rf):
                            out_vf[orow2, r] += VF[r0 * Rf + r]
                        for m in range(NM):
                            if VM[r0 * RM + 2 * m] < out_mm[orow2, 2 * m]:
                                out_mm[orow2, 2 * m] = VM[r0 * RM + 2 * m]
                            if VM[r0 * RM + 2 * m + 1] > out_mm[orow2, 2 * m + 1]:
                                out_mm[orow2, 2 * m + 1] = VM[r0 * RM + 2 * m + 1]
                if bad:
                    err[0] = ERR_OVERFLOW
                    err[1] = pid
                    err[2] = ti
                    return

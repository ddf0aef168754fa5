"""Run-based match construction (SASE+ NFA^b runs with their computation state), resumable.

Reference: SASE+ (SIGMOD'08) Sections 3 and 5: a run is a partial match with
a *computation state* (the values later predicates read: running aggregates
of a Kleene variable, its length, the first and last event of a variable).
Predicates over that state (``a[i].price > avg(a[..i-1].price)``, ``a.LEN``,
two variables that are never adjacent) differ between two runs that share
their last event, so the shared match graph of :mod:`.match` cannot hold
them; this kernel follows every run forward instead, depth first from each
start event, keeping the run's events and state on explicit stacks.

:func:`run_matches` visits, per partition (events sorted by (partition,
time), bounded by ``seg_ptr``) and per start candidate, the runs that begin
there. A run at event ``x`` bound to occurrence ``v`` is extended by ``y``
bound to ``w`` on a template transition ``k = v -> w`` when ``y`` is later,
inside the window (``t_y - t_first < w``), a candidate of ``w``, and passes
the edge program of ``k`` (on ``x``, ``y``) and the run program of ``k`` (on
the state row of the run, ``y``); the strategy keeps every such ``y`` (skip
till any match), those at the earliest time of one (skip till next match:
what passes nothing is skipped, SASE+'s ignore), or those at the next time
stamp of the input / partition (contiguity: otherwise the run dies). A
guarding negation with a match strictly between ``x`` and ``y`` (``LS_N``,
built by :func:`.match.build_match_graph`) removes the extension. A run at
the end occurrence whose final program and negated start / end pass is a
match; it is written first event first, and the walk goes on (a Kleene end
may take more).

The run state lives in rows ``n + depth`` of the run program's columns
(``rcolI``/``rcolF``, the events in rows ``0..n-1``): the run program reads the
state as its *previous* row and the event as its *next*, so it runs on the
postfix interpreter of the scan path (:func:`.scan._eval_block`) unchanged.
The walk returns when the output buffer is full; ``state`` lets the next
call continue.
"""

from __future__ import annotations

import numpy as np

from ._jit import jit, jit_inline
from .match import MODE_WITHIN, NEG_INF, POS_INF, STRAT_NEXT, STRAT_PARTITION, STRAT_STRICT, _ls_before
from .scan import _eval_block

SL_FIRST = 0
SL_LAST = 1
SL_LEN = 2
SL_COUNT = 3
SL_SUM = 4
SL_MIN = 5
SL_MAX = 6
SL_AVG = 7


@jit_inline
def _bind_slots(src, dst, y, occ, enter, sl_kind, sl_occ, sl_src, sl_srcf, sl_dstf, sl_col, sl_aux,
                rcolI, rnI, rcolF, rnF):
    """State row ``dst`` = state row ``src`` (``-1``: the empty run) after binding event ``y`` to ``occ``."""
    for j in range(sl_kind.shape[0]):
        c = sl_col[j]
        isf = sl_dstf[j]
        if src < 0:  # the empty run: null values, zero counts
            if isf:
                rcolF[dst, c] = 0.0
                rnF[dst, c] = True
            else:
                rcolI[dst, c] = 0
                rnI[dst, c] = not (sl_kind[j] == SL_LEN or sl_kind[j] == SL_COUNT)
        elif isf:
            rcolF[dst, c] = rcolF[src, c]
            rnF[dst, c] = rnF[src, c]
        else:
            rcolI[dst, c] = rcolI[src, c]
            rnI[dst, c] = rnI[src, c]
        if sl_occ[j] != occ:
            continue
        kind = sl_kind[j]
        if kind == SL_LEN:
            rcolI[dst, c] = 1 if enter else rcolI[dst, c] + 1
            continue
        if kind == SL_AVG:
            cs = sl_aux[j]  # the count slot's column; the float sum is sl_src
            if rcolI[dst, cs] > 0:
                rcolF[dst, c] = rcolF[dst, sl_src[j]] / rcolI[dst, cs]
                rnF[dst, c] = False
            else:
                rnF[dst, c] = True
            continue
        s = sl_src[j]
        srcf = sl_srcf[j]
        null = rnF[y, s] if srcf else rnI[y, s]
        if kind == SL_COUNT:
            add = 0 if null else 1
            rcolI[dst, c] = add if enter else rcolI[dst, c] + add
            continue
        if kind == SL_LAST or (kind == SL_FIRST and enter) or (enter and null):
            if isf:
                rcolF[dst, c] = rcolF[y, s] if srcf else float(rcolI[y, s])
                rnF[dst, c] = null
            else:
                rcolI[dst, c] = rcolI[y, s]
                rnI[dst, c] = null
            continue
        if kind == SL_FIRST or null:
            continue
        if isf:
            fv = rcolF[y, s] if srcf else float(rcolI[y, s])
            if enter or rnF[dst, c]:
                rcolF[dst, c] = fv
            elif kind == SL_SUM:
                rcolF[dst, c] += fv
            elif kind == SL_MIN:
                rcolF[dst, c] = min(rcolF[dst, c], fv)
            else:
                rcolF[dst, c] = max(rcolF[dst, c], fv)
            rnF[dst, c] = False
        else:
            iv = rcolI[y, s]
            if enter or rnI[dst, c]:
                rcolI[dst, c] = iv
            elif kind == SL_SUM:
                rcolI[dst, c] += iv
            elif kind == SL_MIN:
                rcolI[dst, c] = min(rcolI[dst, c], iv)
            else:
                rcolI[dst, c] = max(rcolI[dst, c], iv)
            rnI[dst, c] = False


@jit
def run_matches(strategy, mode, w, seg_ptr, t, gnext, cand, start_ok, end_ok, n_occ, start_occ, end_occ,
                out_ptr, out_tr, tr_dst, tr_gptr, tr_guards,
                plo, phi, prog_op, prog_arg, constI, constF, colI, nI, colF, nF,
                rplo, rphi, rprog_op, rprog_arg, rconstI, rconstF, rcolI, rnI, rcolF, rnF,
                sl_kind, sl_occ, sl_src, sl_srcf, sl_dstf, sl_col, sl_aux, max_depth,
                neg_t, neg_pm, neg_seg, start_neg, end_neg, fin, cn_occ, cn_kind, cn_prev, cn_next,
                limit, state, st_ev, st_occ, st_y, st_k, st_T, out_match, out_pos, out_node):
    """Write the matches of every run (see the module docstring) until the buffers are full.

    ``state`` = (partition, next start event, depth, fresh, matches written); returns the rows
    written; 0 with ``state[0] == len(seg_ptr) - 1`` (or ``limit`` reached) means done. The
    final run program is entry ``fin``, the condition of one-event negation ``c`` (an event of
    occurrence ``cn_occ[c]`` blocks only the matches it passes it against; ``cn_kind`` 0 start,
    1 middle between the runs of ``cn_prev[c]`` and ``cn_next[c]``, 2 end) entry ``fin + 1 + c``;
    row ``n + d`` of ``rcolI``/``rcolF`` holds the state of the run prefix of depth ``d + 1``.
    """
    n = t.shape[0]
    n_seg = seg_ptr.shape[0] - 1
    cap = out_match.shape[0]
    blk = np.zeros(1, np.int64)
    mask = np.zeros(1, np.bool_)
    sI = np.zeros((max_depth, 1), np.int64)
    sF = np.zeros((max_depth, 1), np.float64)
    sN = np.zeros((max_depth, 1), np.bool_)
    s = state[0]
    a = state[1]
    depth = state[2]
    fresh = state[3]
    done = state[4]
    rows = 0
    while s < n_seg:
        if limit >= 0 and done >= limit:
            break
        lo = seg_ptr[s]
        hi = seg_ptr[s + 1]
        if depth == 0:
            if a < lo:
                a = lo
            if a >= hi:
                s += 1
                continue
            y = a
            a += 1
            if not (cand[y, start_occ] and start_ok[y, start_occ]):
                continue
            st_ev[0] = y
            st_occ[0] = start_occ
            _bind_slots(-1, n, y, start_occ, True, sl_kind, sl_occ, sl_src, sl_srcf, sl_dstf, sl_col, sl_aux,
                        rcolI, rnI, rcolF, rnF)
            st_y[0] = y + 1
            st_k[0] = out_ptr[start_occ]
            st_T[0] = POS_INF
            depth = 1
            fresh = 1
        d = depth - 1
        x = st_ev[d]
        v = st_occ[d]
        tx = t[x]
        first = t[st_ev[0]]
        if fresh == 1:
            ok = v == end_occ and end_ok[x, v]
            if ok and rplo[fin] < rphi[fin]:
                blk[0] = n + d
                _eval_block(rprog_op, rprog_arg, rplo[fin], rphi[fin], rconstI, rconstF, rcolI, rnI, rcolF, rnF,
                            blk, 1, x, sI, sF, sN, mask)
                ok = mask[0]
            if ok and start_neg >= 0:
                lv = _ls_before(neg_t, neg_pm, start_neg, neg_seg[start_neg, s], neg_seg[start_neg, s + 1], first)
                if lv != NEG_INF and (mode != MODE_WITHIN or lv > tx - w):
                    ok = False
            if ok and end_neg >= 0:
                bound = POS_INF if mode != MODE_WITHIN else first + w
                lv = _ls_before(neg_t, neg_pm, end_neg, neg_seg[end_neg, s], neg_seg[end_neg, s + 1], bound)
                if lv > tx:
                    ok = False
            for c in range(cn_occ.shape[0]):
                if not ok:
                    break
                if cn_kind[c] == 0:
                    zlo = tx - w if mode == MODE_WITHIN else NEG_INF
                    zhi = first
                elif cn_kind[c] == 2:
                    zlo = tx
                    zhi = first + w if mode == MODE_WITHIN else POS_INF
                else:
                    zlo = NEG_INF
                    zhi = POS_INF
                    for dd in range(depth):
                        if st_occ[dd] == cn_prev[c]:
                            zlo = t[st_ev[dd]]
                        if st_occ[dd] == cn_next[c] and zhi == POS_INF:
                            zhi = t[st_ev[dd]]
                # the partition's events strictly inside (zlo, zhi): bisect for the first
                za = lo
                zb = hi
                while za < zb:
                    zm = (za + zb) >> 1
                    if t[zm] <= zlo:
                        za = zm + 1
                    else:
                        zb = zm
                blk[0] = n + d
                for z in range(za, hi):
                    if t[z] >= zhi:
                        break
                    if not cand[z, cn_occ[c]]:
                        continue
                    p = fin + 1 + c
                    _eval_block(rprog_op, rprog_arg, rplo[p], rphi[p], rconstI, rconstF, rcolI, rnI, rcolF, rnF,
                                blk, 1, z, sI, sF, sN, mask)
                    if mask[0]:
                        ok = False
                        break
            if ok:
                if rows + depth > cap:
                    break  # resume here (fresh stays 1)
                for dd in range(depth):
                    out_match[rows] = done
                    out_pos[rows] = dd
                    out_node[rows] = st_ev[dd] * n_occ + st_occ[dd]
                    rows += 1
                done += 1
            fresh = 0
            continue
        # the next extension of the run at depth d
        y = st_y[d]
        kp = st_k[d]
        T = st_T[d]
        found = -1
        while y < hi:
            ty = t[y]
            if (mode == MODE_WITHIN and ty - first >= w) or ty > T:
                break
            if ty <= tx:
                y += 1
                kp = out_ptr[v]
                continue
            if T == POS_INF:
                if strategy == STRAT_STRICT:
                    T = gnext[x]
                    if ty > T:
                        break
                elif strategy == STRAT_PARTITION:
                    T = ty
            while kp < out_ptr[v + 1]:
                k = out_tr[kp]
                kp += 1
                wo = tr_dst[k]
                if not cand[y, wo]:
                    continue
                if plo[k] < phi[k]:
                    blk[0] = x
                    _eval_block(prog_op, prog_arg, plo[k], phi[k], constI, constF, colI, nI, colF, nF,
                                blk, 1, y, sI, sF, sN, mask)
                    if not mask[0]:
                        continue
                if rplo[k] < rphi[k]:
                    blk[0] = n + d
                    _eval_block(rprog_op, rprog_arg, rplo[k], rphi[k], rconstI, rconstF, rcolI, rnI, rcolF, rnF,
                                blk, 1, y, sI, sF, sN, mask)
                    if not mask[0]:
                        continue
                if strategy == STRAT_NEXT and T == POS_INF:
                    T = ty  # the first event this run can take: later times are skipped
                blocked = False
                for gg in range(tr_gptr[k], tr_gptr[k + 1]):
                    g = tr_guards[gg]
                    if _ls_before(neg_t, neg_pm, g, neg_seg[g, s], neg_seg[g, s + 1], ty) > tx:
                        blocked = True
                        break
                if blocked:
                    continue
                found = k
                break
            if found >= 0:
                break
            y += 1
            kp = out_ptr[v]
        st_y[d] = y
        st_k[d] = kp
        st_T[d] = T
        if found < 0:
            depth -= 1
            continue
        wo = tr_dst[found]
        st_ev[depth] = y
        st_occ[depth] = wo
        _bind_slots(n + d, n + d + 1, y, wo, wo != v, sl_kind, sl_occ, sl_src, sl_srcf, sl_dstf, sl_col, sl_aux,
                    rcolI, rnI, rcolF, rnF)
        st_y[depth] = y + 1
        st_k[depth] = out_ptr[wo]
        st_T[depth] = POS_INF
        depth += 1
        fresh = 1
    state[0] = s
    state[1] = a
    state[2] = depth
    state[3] = fresh
    state[4] = done
    return rows

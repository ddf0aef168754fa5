"""Trend aggregation by linear maps over a sliding-window aggregator.

Reference: A-Seq (prefix counters), GRETA (Theorems 4.3 and 9.1: counts and
linear aggregates propagate along template transitions). See
``docs/algorithms.md`` for the derivation.

Without edge predicates, everything a new event needs from the past is a
small vector of per-state totals: for every template state the number of
partial matches ending in it (and their linear aggregates), a copy of the
totals that a negation may invalidate, and the final totals. An event (or a
group of events with the same time stamp) changes that vector by one affine
map ``x -> M x``; ``M = P + E`` where ``P`` zeroes the rows a negation resets
and ``E`` adds, from the *pre*-state, the contributions of new partial
matches (events with equal time never see each other).

Windows need the composition of the maps of the events inside the window,
applied to the initial vector ``v0``. A two-stack queue (back stack: one
running composite ``B``; front stack: suffix results ``u_i``) gives it in
amortised O(nnz * D) per event and O(D^2) per query, whatever the window
length: no per-window or per-START-event state.

Programs: every event carries a program id ``p = ev_prog[e]`` (one per
distinct combination of occurrences it binds and negations it completes).
Program ``p`` is a list of triplets ``(dst, src, wk)`` in
``prog_ptr[p]:prog_ptr[p+1]``: ``x'[dst] += coef * x[src]`` with ``coef = 1``
when ``wk < 0`` and ``coef = ev_w[e, wk]`` otherwise, plus the rows
``reset_rows[reset_ptr[p]:reset_ptr[p+1]]`` that it zeroes (negations).

All arrays are C-contiguous NumPy arrays; state is int64 (exact, with
overflow detection) or float64. Invariants: within a segment events are
sorted by time; segments are partitions.
"""

from __future__ import annotations

import numpy as np

from ._jit import jit, jit_inline

MODE_NONE = 0  # no window: one result per partition at the end
MODE_WITHIN = 1  # WITHIN w: running total of matches with last - first < w
MODE_EMIT = 2  # WITHIN w EMIT CHANGES: result at given times t over (t - w, t]
MODE_SLIDE = 3  # WITHIN w SLIDE s: result per window [k s, k s + w)
MODE_EMIT_UNBOUNDED = 4  # EMIT CHANGES without WITHIN

ERR_OVERFLOW = 1


@jit
def _acc(a, b, check, err):
    """a + b, flagging int64 overflow. The test must not compute the wrapped sum
    first: LLVM treats signed overflow as impossible and folds such a test away."""
    if check and ((b > 0 and a > 9223372036854775807 - b) or (b < 0 and a < -9223372036854775807 - 1 - b)):
        err[0] = ERR_OVERFLOW
        return a
    return a + b


@jit
def _scale(a, w, check, err):
    if check and a != 0 and w != 0:
        if abs(a) > 9223372036854775807 // abs(w):
            err[0] = ERR_OVERFLOW
            return a
    return a * w


@jit
def _left_apply(X, lo, hi, ev_prog, ev_w, prog_ptr, trip_dst, trip_src, trip_wk,
                reset_ptr, reset_rows, tmp, check, err):
    """X <- M_group X for events [lo, hi) of one time stamp; X has shape (D, ncols).

    Pass 1 reads every contribution from the pre-state into ``tmp``; then the
    resets zero their rows; pass 2 adds the contributions. So events with the
    same time stamp never see each other, and a Kleene self-loop doubles.
    """
    ncols = X.shape[1]
    m = 0
    for e in range(lo, hi):
        p = ev_prog[e]
        for k in range(prog_ptr[p], prog_ptr[p + 1]):
            s = trip_src[k]
            wk = trip_wk[k]
            if wk < 0:
                for c in range(ncols):
                    tmp[m, c] = X[s, c]
            else:
                wv = ev_w[e, wk]
                for c in range(ncols):
                    tmp[m, c] = _scale(X[s, c], wv, check, err)
            m += 1
    for e in range(lo, hi):
        p = ev_prog[e]
        for k in range(reset_ptr[p], reset_ptr[p + 1]):
            r = reset_rows[k]
            for c in range(ncols):
                X[r, c] = 0
    m = 0
    for e in range(lo, hi):
        p = ev_prog[e]
        for k in range(prog_ptr[p], prog_ptr[p + 1]):
            d = trip_dst[k]
            for c in range(ncols):
                X[d, c] = _acc(X[d, c], tmp[m, c], check, err)
            m += 1


@jit
def _right_apply(G, lo, hi, ev_prog, ev_w, prog_ptr, trip_dst, trip_src, trip_wk,
                 reset_ptr, reset_rows, tmp, check, err):
    """G <- G M_group (G is D x D): the transpose of ``_left_apply``, used on a flip."""
    D = G.shape[0]
    m = 0
    for e in range(lo, hi):
        p = ev_prog[e]
        for k in range(prog_ptr[p], prog_ptr[p + 1]):
            d = trip_dst[k]
            wk = trip_wk[k]
            if wk < 0:
                for i in range(D):
                    tmp[m, i] = G[i, d]
            else:
                wv = ev_w[e, wk]
                for i in range(D):
                    tmp[m, i] = _scale(G[i, d], wv, check, err)
            m += 1
    for e in range(lo, hi):
        p = ev_prog[e]
        for k in range(reset_ptr[p], reset_ptr[p + 1]):
            r = reset_rows[k]
            for i in range(D):
                G[i, r] = 0
    m = 0
    for e in range(lo, hi):
        p = ev_prog[e]
        for k in range(prog_ptr[p], prog_ptr[p + 1]):
            s = trip_src[k]
            for i in range(D):
                G[i, s] = _acc(G[i, s], tmp[m, i], check, err)
            m += 1


@jit
def _matvec(B, u, out, check, err):
    D = B.shape[0]
    for i in range(D):
        acc = B[i, 0] * 0
        for j in range(D):
            if B[i, j] != 0 and u[j] != 0:
                acc = _acc(acc, _scale(B[i, j], u[j], check, err), check, err)
        out[i, 0] = acc


@jit
def _set_identity(M):
    D = M.shape[0]
    for i in range(D):
        for j in range(D):
            M[i, j] = 0
        M[i, i] = 1


@jit
def run_segments(mode, w, s, check,
                 seg_ptr, seg_pid, seg_replay, seg_emit_ptr, emit_times, slide_limit,
                 ev_time, ev_prog, ev_end, ev_w,
                 prog_ptr, trip_dst, trip_src, trip_wk, reset_ptr, reset_rows,
                 v0, out_rows, X_state, next_k, err):
    """Process every segment (one partition's events, time-sorted) and return outputs.

    Parameters
    ----------
    mode : one of MODE_*
    w, s : window length and slide in time units (ignored where unused)
    seg_ptr : (n_seg + 1) event offsets of segments; seg_pid : partition id per segment
    seg_replay : number of leading events of each segment that were already
        processed in an earlier batch (they rebuild the window, no output)
    seg_emit_ptr, emit_times : per segment, sorted output times (EMIT modes)
    slide_limit : close SLIDE windows with k s + w <= slide_limit
    X_state : (n_partitions, D) carried state: the running vector (NONE, EMIT
        unbounded) or the running output totals (WITHIN)
    next_k : (n_partitions,) next SLIDE window to close
    out_rows : rows of the state vector to output (final totals)
    err : err[0] set to ERR_OVERFLOW, err[1] the partition id, err[2] the time

    Returns
    -------
    (out_pid, out_key, out_val) : partition id, time (EMIT) or window index
    (SLIDE) and the ``out_rows`` of the result, one row per non-empty result.
    """
    D = v0.shape[0]
    n_out_rows = out_rows.shape[0]
    cap = 1024
    out_pid = np.empty(cap, np.int64)
    out_key = np.empty(cap, np.int64)
    out_val = np.empty((cap, n_out_rows), v0.dtype)
    n_out = 0

    tmp = np.zeros((16, D), v0.dtype)
    B = np.zeros((D, D), v0.dtype)
    G = np.zeros((D, D), v0.dtype)
    Y = np.zeros((D, 1), v0.dtype)
    Y2 = np.zeros((D, 1), v0.dtype)
    U = np.zeros((64, D), v0.dtype)
    gstart = np.empty(1, np.int64)

    for sg in range(seg_ptr.shape[0] - 1):
        lo = seg_ptr[sg]
        hi = seg_ptr[sg + 1]
        pid = seg_pid[sg]
        replay_end = lo + seg_replay[sg]
        # group boundaries (equal time stamps)
        ng = 0
        if gstart.shape[0] < hi - lo + 1:
            gstart = np.empty(2 * (hi - lo) + 1, np.int64)
        e = lo
        need_max = 0
        while e < hi:
            gstart[ng] = e
            ng += 1
            t0 = ev_time[e]
            need = 0
            while e < hi and ev_time[e] == t0:
                p = ev_prog[e]
                need += prog_ptr[p + 1] - prog_ptr[p]
                e += 1
            if need > need_max:
                need_max = need
        gstart[ng] = hi
        if need_max > tmp.shape[0]:
            tmp = np.zeros((2 * need_max, D), v0.dtype)

        if mode == MODE_NONE or mode == MODE_EMIT_UNBOUNDED:
            Xv = X_state[pid].copy().reshape((D, 1))
            ep = seg_emit_ptr[sg]
            ep_hi = seg_emit_ptr[sg + 1]
            for gi in range(ng):
                t = ev_time[gstart[gi]]
                if mode == MODE_EMIT_UNBOUNDED:
                    while ep < ep_hi and emit_times[ep] < t:
                        if Xv[out_rows[0], 0] != 0:
                            if n_out == out_pid.shape[0]:
                                out_pid, out_key, out_val = _grow(out_pid, out_key, out_val)
                            out_pid[n_out] = pid
                            out_key[n_out] = emit_times[ep]
                            for r in range(n_out_rows):
                                out_val[n_out, r] = Xv[out_rows[r], 0]
                            n_out += 1
                        ep += 1
                _left_apply(Xv, gstart[gi], gstart[gi + 1], ev_prog, ev_w, prog_ptr, trip_dst,
                            trip_src, trip_wk, reset_ptr, reset_rows, tmp, check, err)
                if err[0] != 0:
                    err[1] = pid
                    err[2] = t
                    return out_pid[:n_out], out_key[:n_out], out_val[:n_out]
            if mode == MODE_EMIT_UNBOUNDED:
                while ep < ep_hi:
                    if Xv[out_rows[0], 0] != 0:
                        if n_out == out_pid.shape[0]:
                            out_pid, out_key, out_val = _grow(out_pid, out_key, out_val)
                        out_pid[n_out] = pid
                        out_key[n_out] = emit_times[ep]
                        for r in range(n_out_rows):
                            out_val[n_out, r] = Xv[out_rows[r], 0]
                        n_out += 1
                    ep += 1
            for r in range(D):
                X_state[pid, r] = Xv[r, 0]
            continue

        # ---- windowed modes: two-stack queue over groups [f_lo, b_hi):
        # [f_lo, f_hi) is the front (suffix results in U), [f_hi, b_hi) the back (composite B)
        f_lo = 0
        f_hi = 0
        b_hi = 0
        _set_identity(B)
        ep = seg_emit_ptr[sg]
        ep_hi = seg_emit_ptr[sg + 1]
        k = next_k[pid]
        gi = 0
        while True:
            t = ev_time[gstart[gi]] if gi < ng else 0
            at_end = gi >= ng
            # 1) results that are due before this group is pushed
            if mode == MODE_EMIT:
                while ep < ep_hi and (at_end or emit_times[ep] < t):
                    te = emit_times[ep]
                    while f_lo < b_hi and ev_time[gstart[f_lo]] <= te - w:
                        f_lo, f_hi, b_hi, U = _pop(f_lo, f_hi, b_hi, B, G, U, tmp, v0, gstart, ev_prog,
                                                   ev_w, prog_ptr, trip_dst, trip_src, trip_wk,
                                                   reset_ptr, reset_rows, check, err)
                    if f_lo < b_hi:
                        _query(f_lo, f_hi, b_hi, B, U, v0, Y, check, err)
                        if Y[out_rows[0], 0] != 0:
                            if n_out == out_pid.shape[0]:
                                out_pid, out_key, out_val = _grow(out_pid, out_key, out_val)
                            out_pid[n_out] = pid
                            out_key[n_out] = te
                            for r in range(n_out_rows):
                                out_val[n_out, r] = Y[out_rows[r], 0]
                            n_out += 1
                    ep += 1
            elif mode == MODE_SLIDE:
                while True:
                    if f_lo >= b_hi:
                        if at_end:
                            break
                        # empty queue: jump to the first window that contains this group
                        kmin = (t - w) // s + 1
                        if kmin > k:
                            k = kmin
                    limit = slide_limit if at_end else t
                    if k * s + w > limit:
                        break
                    while f_lo < b_hi and ev_time[gstart[f_lo]] < k * s:
                        f_lo, f_hi, b_hi, U = _pop(f_lo, f_hi, b_hi, B, G, U, tmp, v0, gstart, ev_prog,
                                                   ev_w, prog_ptr, trip_dst, trip_src, trip_wk,
                                                   reset_ptr, reset_rows, check, err)
                    if f_lo < b_hi and k >= 0:
                        _query(f_lo, f_hi, b_hi, B, U, v0, Y, check, err)
                        if Y[out_rows[0], 0] != 0:
                            if n_out == out_pid.shape[0]:
                                out_pid, out_key, out_val = _grow(out_pid, out_key, out_val)
                            out_pid[n_out] = pid
                            out_key[n_out] = k
                            for r in range(n_out_rows):
                                out_val[n_out, r] = Y[out_rows[r], 0]
                            n_out += 1
                    k += 1
            if err[0] != 0:
                err[1] = pid
                err[2] = t
                break
            if at_end:
                break
            # 2) expire groups no future result can use
            if mode == MODE_WITHIN or mode == MODE_EMIT:
                while f_lo < b_hi and ev_time[gstart[f_lo]] <= t - w:
                    f_lo, f_hi, b_hi, U = _pop(f_lo, f_hi, b_hi, B, G, U, tmp, v0, gstart, ev_prog,
                                               ev_w, prog_ptr, trip_dst, trip_src, trip_wk,
                                               reset_ptr, reset_rows, check, err)
            # 3) WITHIN: matches that end in this group, counted over (t - w, t]
            if mode == MODE_WITHIN and gstart[gi] >= replay_end:
                has_end = False
                for e2 in range(gstart[gi], gstart[gi + 1]):
                    if ev_end[e2]:
                        has_end = True
                if has_end:
                    if f_lo < b_hi:
                        _query(f_lo, f_hi, b_hi, B, U, v0, Y, check, err)
                    else:
                        for r in range(D):
                            Y[r, 0] = v0[r]
                    for r in range(D):
                        Y2[r, 0] = Y[r, 0]
                    _left_apply(Y2, gstart[gi], gstart[gi + 1], ev_prog, ev_w, prog_ptr, trip_dst,
                                trip_src, trip_wk, reset_ptr, reset_rows, tmp, check, err)
                    for r in range(n_out_rows):
                        rr = out_rows[r]
                        X_state[pid, rr] = _acc(X_state[pid, rr], Y2[rr, 0] - Y[rr, 0], check, err)
            # 4) push the group onto the back stack
            _left_apply(B, gstart[gi], gstart[gi + 1], ev_prog, ev_w, prog_ptr, trip_dst,
                        trip_src, trip_wk, reset_ptr, reset_rows, tmp, check, err)
            b_hi += 1
            if err[0] != 0:
                err[1] = pid
                err[2] = t
                break
            gi += 1
        next_k[pid] = k
        if err[0] != 0:
            break
    return out_pid[:n_out], out_key[:n_out], out_val[:n_out]


@jit
def _grow(out_pid, out_key, out_val):
    n = out_pid.shape[0]
    p2 = np.empty(2 * n, np.int64)
    k2 = np.empty(2 * n, np.int64)
    v2 = np.empty((2 * n, out_val.shape[1]), out_val.dtype)
    p2[:n] = out_pid
    k2[:n] = out_key
    v2[:n] = out_val
    return p2, k2, v2


@jit
def _query(f_lo, f_hi, b_hi, B, U, v0, Y, check, err):
    """Window state = B (u_front) where u_front is the oldest front suffix (or v0)."""
    if f_lo < f_hi:
        _matvec(B, U[f_lo % U.shape[0]], Y, check, err)
    else:
        _matvec(B, v0, Y, check, err)
    return Y


@jit
def _pop(f_lo, f_hi, b_hi, B, G, U, tmp, v0, gstart, ev_prog, ev_w,
         prog_ptr, trip_dst, trip_src, trip_wk, reset_ptr, reset_rows, check, err):
    """Drop the oldest group; flip the back stack into the front when the front is empty."""
    D = v0.shape[0]
    if f_lo == f_hi:
        # flip: suffix composites of the back groups, newest first
        _set_identity(G)
        u = np.empty(D, v0.dtype)
        cap = U.shape[0]
        if b_hi - f_hi > cap:  # the front never holds more than the window: grow on demand
            while cap < b_hi - f_hi:
                cap *= 2
            U = np.zeros((cap, D), v0.dtype)
        for gi in range(b_hi - 1, f_hi - 1, -1):
            _right_apply(G, gstart[gi], gstart[gi + 1], ev_prog, ev_w, prog_ptr, trip_dst,
                         trip_src, trip_wk, reset_ptr, reset_rows, tmp, check, err)
            for i in range(D):
                acc = G[i, 0] * 0
                for j in range(D):
                    if G[i, j] != 0 and v0[j] != 0:
                        acc = _acc(acc, _scale(G[i, j], v0[j], check, err), check, err)
                u[i] = acc
            U[gi % cap, :] = u
        f_hi = b_hi
        _set_identity(B)
    return f_lo + 1, f_hi, b_hi, U


@jit
def partition_order(pid, n_parts):
    """Stable counting sort of event indices by partition id (O(n), keeps time order).

    Returns ``(order, seg_ptr)``: ``order`` lists event indices grouped by
    partition, ``seg_ptr[p]:seg_ptr[p+1]`` is partition ``p``'s range.
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


@jit
def encode_programs(bind, neg):
    """Dense id per distinct (bind, neg) pair, in order of first appearance.

    Returns ``(prog, uniq_bind, uniq_neg)``. Open addressing over a small
    table: the number of distinct pairs is tiny (types x predicate outcomes).
    """
    n = bind.shape[0]
    size = 64
    keys_b = np.zeros(size, np.uint64)
    keys_n = np.zeros(size, np.uint64)
    ids = np.full(size, -1, np.int64)
    ub = np.zeros(size, np.uint64)
    un = np.zeros(size, np.uint64)
    count = 0
    prog = np.empty(n, np.int64)
    for i in range(n):
        b = bind[i]
        g = neg[i]
        h = (b * np.uint64(0x9E3779B97F4A7C15) + g * np.uint64(0xC2B2AE3D27D4EB4F)) >> np.uint64(40)
        j = np.int64(h % np.uint64(size))
        while True:
            if ids[j] < 0:
                if 2 * (count + 1) > size:
                    # grow and rehash
                    size2 = size * 2
                    kb2 = np.zeros(size2, np.uint64)
                    kn2 = np.zeros(size2, np.uint64)
                    id2 = np.full(size2, -1, np.int64)
                    for jj in range(size):
                        if ids[jj] >= 0:
                            hh = (keys_b[jj] * np.uint64(0x9E3779B97F4A7C15)
                                  + keys_n[jj] * np.uint64(0xC2B2AE3D27D4EB4F)) >> np.uint64(40)
                            k2 = np.int64(hh % np.uint64(size2))
                            while id2[k2] >= 0:
                                k2 = (k2 + 1) % size2
                            kb2[k2] = keys_b[jj]
                            kn2[k2] = keys_n[jj]
                            id2[k2] = ids[jj]
                    ub2 = np.zeros(size2, np.uint64)
                    un2 = np.zeros(size2, np.uint64)
                    ub2[:count] = ub[:count]
                    un2[:count] = un[:count]
                    keys_b, keys_n, ids, ub, un, size = kb2, kn2, id2, ub2, un2, size2
                    j = np.int64(h % np.uint64(size))
                    continue
                keys_b[j] = b
                keys_n[j] = g
                ids[j] = count
                ub[count] = b
                un[count] = g
                count += 1
                prog[i] = ids[j]
                break
            if keys_b[j] == b and keys_n[j] == g:
                prog[i] = ids[j]
                break
            j = (j + 1) % size
    return prog, ub[:count].copy(), un[:count].copy()

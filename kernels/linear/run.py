"""Entry point of the linear-map kernels: :func:`run_segments` and the general loop.

``run_segments`` runs each mode's fast loop (``windows.py``) and sends the segments it
leaves (equal time stamps, programs not in place) to :func:`_run_general`, which handles
groups of equal time stamps and any program (``apply.py``)."""

from __future__ import annotations

import numpy as np

from .._jit import jit, jit_callee
from .apply import _apply_fast, _apply_generic, _dot, _fast, _set_identity, _u_row, _within_generic
from .arith import _add, _mul
from .constants import (ERR_OVERFLOW, F_DELTA, F_END, F_INV, F_LEFT, F_RIGHT, HDR, MODE_EMIT, MODE_EMIT_CHANGED,
                        MODE_EMIT_UNBOUNDED,
                        MODE_SLIDE, MODE_WITHIN)
from .chain import DRIVE_WITHIN_CHAIN, chain_bits
from .windows import (_drive_emit, _drive_emit_inverse, _drive_slide, _drive_slide_inverse, _drive_vector,
                      _drive_within, _drive_within_inverse, _emit_rows_bound, _emits)


def run_segments(mode, w, s, check,
                 seg_lo, seg_hi, seg_pid, seg_replay, seg_emit_lo, seg_emit_hi, emit_times, slide_limit,
                 ev_time, ev_prog, ev_w, PT, v0, out_rows, X_state, next_k, err):
    """Process every segment (one partition's events, time-sorted) and return outputs.

    Parameters
    ----------
    mode : one of MODE_*
    w, s : window length and slide in time units (ignored where unused)
    check : True for int64 state (exact, overflow flagged), False for float64;
        the arithmetic follows the state dtype (``v0.dtype``)
    seg_lo, seg_hi : event range of each segment; seg_pid : partition id per segment
    seg_replay : number of leading events of each segment that were already
        processed in an earlier batch (they rebuild the window, no output)
    seg_emit_lo, seg_emit_hi, emit_times : per segment, the range of sorted
        output times (EMIT modes) in ``emit_times``
    slide_limit : close SLIDE windows with k s + w <= slide_limit
    PT : packed programs (:func:`pack_programs`)
    v0 : initial state vector, a 0/1 vector
    X_state : (n_partitions, D) carried state: the running vector (NONE, EMIT
        unbounded) or the running output totals (WITHIN)
    next_k : (n_partitions,) next SLIDE window to close
    out_rows : rows of the state vector to output (final totals)
    err : err[0] set to ERR_OVERFLOW, err[1] the partition id, err[2] the time
        (of the first overflow in segment order; processing stops there)

    Returns
    -------
    (out_pid, out_key, out_val) : partition id, time (EMIT) or window index
    (SLIDE) and the ``out_rows`` of the result, one row per non-empty result
    (grouped by partition, keys increasing within a partition).

    Plain Python (releases no GIL itself; the jitted parts do): each mode has its
    own jitted driver around its fast loop (WITHIN, EMIT and SLIDE two: the inverse loop when every program is
    a count or sum step, ``F_INV``, with int64 state and weights >= 0; the two-stack queue otherwise), and
    segments the fast loop leaves
    (equal time stamps, programs not in place) go through :func:`_run_general`.
    Separate entry points keep the first call's compilation to the mode in use
    (Numba compiles every function a jitted function may call).
    """
    n_seg = len(seg_lo)
    slow = np.zeros(n_seg, np.bool_)
    nz = np.flatnonzero(v0)
    one = np.iinfo(v0.dtype).max if v0.dtype == np.uint64 else 1
    flat_ok = 1 <= len(nz) <= 2 and bool(np.all((v0 == 0) | (v0 == one)))
    j0 = int(nz[0]) if len(nz) else 0
    j1 = int(nz[1]) if len(nz) > 1 else -1
    # exact counts and sums of weights >= 0: the loops that keep the window's map
    inverse = v0.dtype == np.int64 and _all_inverse(PT) and _weights_nonnegative(seg_lo, seg_hi, ev_w)
    if not flat_ok:
        slow[:] = True
        outs = (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros((0, len(out_rows)), v0.dtype))
    elif mode == MODE_WITHIN:
        bits = chain_within(mode, PT, v0)
        if bits is not None:  # a plain sequence's counts: the loop with the window's map in registers
            L = int(np.bitwise_or.reduce(bits)).bit_length()  # the END program binds occurrence L - 1
            DRIVE_WITHIN_CHAIN[L](w, seg_lo, seg_hi, seg_pid, seg_replay, ev_time, ev_prog, bits, X_state, slow)
        else:
            drive = _drive_within_inverse if inverse else _drive_within
            drive(w, seg_lo, seg_hi, seg_pid, seg_replay, ev_time, ev_prog, ev_w, PT, v0, j0, j1, X_state, err,
                  slow)
        outs = (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros((0, len(out_rows)), v0.dtype))
    elif mode == MODE_EMIT:
        drive = _drive_emit_inverse if inverse else _drive_emit
        outs = drive(w, seg_lo, seg_hi, seg_pid, seg_emit_lo, seg_emit_hi, emit_times, ev_time, ev_prog,
                     ev_w, PT, v0, j0, j1, out_rows, err, slow)
    elif mode == MODE_SLIDE:
        drive = _drive_slide_inverse if inverse else _drive_slide
        outs = drive(w, s, seg_lo, seg_hi, seg_pid, slide_limit, ev_time, ev_prog, ev_w, PT, v0, j0, j1, out_rows,
                     next_k, err, slow)
    else:
        outs = _drive_vector(mode, seg_lo, seg_hi, seg_pid, seg_emit_lo, seg_emit_hi, emit_times, ev_time,
                             ev_prog, ev_w, PT, v0, out_rows, X_state, err, slow)
    if not slow.any():
        return outs
    sel = np.flatnonzero(slow)
    if err[0]:  # the fast pass stopped at an overflow: only earlier segments still count
        stop = int(np.flatnonzero(seg_pid == err[1])[0])
        sel = sel[sel < stop]
        if not len(sel):
            return outs
    err2 = np.zeros(3, np.int64)
    g = _run_general(mode, w, s, seg_lo[sel], seg_hi[sel], seg_pid[sel], seg_replay[sel], seg_emit_lo[sel],
                     seg_emit_hi[sel], emit_times, slide_limit, ev_time, ev_prog, ev_w, PT, v0, out_rows, X_state,
                     next_k, err2)
    if err2[0]:
        err[:] = err2
    if not len(outs[0]):
        return g
    return tuple(np.concatenate([a, b]) for a, b in zip(outs, g))


def chain_within(mode, PT, v0) -> np.ndarray | None:
    """The program bits of ``chain.py``'s loop when :func:`run_segments` takes it for these arguments
    (the WITHIN count of a plain sequence, int64 state), else None. The linear path asks before it
    orders ties: that loop takes them in any order."""
    if not CHAIN_LOOP or mode != MODE_WITHIN or v0.dtype != np.int64:
        return None
    key = (PT.tobytes(), v0.tobytes())  # a run asks once per range of segments: the answer of the first
    bits = _CHAIN_BITS.get(key, _CHAIN_BITS)  # (the dict itself: not asked before; threads may ask at once)
    if bits is _CHAIN_BITS:
        bits = chain_bits(PT, v0) if _all_inverse(PT) else None
        if len(_CHAIN_BITS) >= 256:
            _CHAIN_BITS.clear()
        _CHAIN_BITS[key] = bits
    return None if bits is None else bits.copy()


#: Whether plain sequences take ``chain.py``'s loop: tests' references and asv baselines set it False
#: to run them on the inverse loop it replaced (checked before the answers kept below).
CHAIN_LOOP = True

#: :func:`chain_within`'s answers by programs and start vector (plain Python over the programs: some
#: 0.08 ms a call, and a run of 10^6 events on two threads asks some 8 times, its threads in turn)
_CHAIN_BITS: dict = {}


def _all_inverse(PT) -> bool:
    """Whether every program of ``PT`` carries ``F_INV``: WITHIN, EMIT CHANGES and SLIDE then run the
    inverse loops (``_drive_within_inverse``, ``_drive_emit_inverse``, ``_drive_slide_inverse``)."""
    return len(PT) > 0 and bool(np.all(PT[PT[:PT[0]]] & F_INV))


def _weights_nonnegative(seg_lo, seg_hi, ev_w) -> bool:
    """Whether the weights of the segments' events are all >= 0: a program with ``F_INV`` and weights is
    then a map ``I + N`` with ``N >= 0``, which the inverse loops undo exactly (a weight < 0 would let a
    value of the window's map exceed the map's own and overflow on the way: the two-stack loops take it)."""
    if ev_w.shape[1] == 0 or not len(seg_lo):
        return True
    return bool(ev_w[int(seg_lo.min()):int(seg_hi.max())].min() >= 0)


@jit_callee
def _slide_bound(w, s, lo, hi, ev_time):
    """Windows [k s, k s + w) that hold an event of [lo, hi): bounds the SLIDE results."""
    n = 0
    have = False
    last = 0
    for e in range(lo, hi):
        t = ev_time[e]
        k_hi = t // s
        k_lo = (t - w) // s + 1
        if k_lo < 0:
            k_lo = 0
        if have and k_lo <= last:
            k_lo = last + 1
        if k_hi >= k_lo:
            n += k_hi - k_lo + 1
            last = k_hi
            have = True
    return n


# One long function on purpose: inside a kernel this large, a call with array arguments per event
# costs atomic reference counting (measured: see the docstring of ``windows.py``).
@jit
def _run_general(mode, w, s,
                 seg_lo, seg_hi, seg_pid, seg_replay, seg_emit_lo, seg_emit_hi, emit_times, slide_limit,
                 ev_time, ev_prog, ev_w, PT, v0, out_rows, X_state, next_k, err):
    """The general loop of :func:`run_segments` (groups of equal time stamps, any
    program), for the segments the fast loops leave (same arguments and results)."""
    D = v0.shape[0]
    n_out_rows = out_rows.shape[0]
    out0 = out_rows[0]
    ocap = 0
    if mode == MODE_EMIT or mode == MODE_EMIT_UNBOUNDED or mode == MODE_EMIT_CHANGED:
        for sg in range(seg_lo.shape[0]):
            ocap += _emit_rows_bound(mode, seg_lo[sg], seg_hi[sg], seg_emit_lo[sg], seg_emit_hi[sg])
    elif mode == MODE_SLIDE:
        for sg in range(seg_lo.shape[0]):
            ocap += _slide_bound(w, s, seg_lo[sg], seg_hi[sg], ev_time)
    out_pid = np.empty(ocap, np.int64)
    out_key = np.empty(ocap, np.int64)
    out_val = np.empty((ocap, n_out_rows), v0.dtype)
    n_out = 0

    tmp = np.zeros((16, D), v0.dtype)
    B = np.zeros((D, D), v0.dtype)
    GT = np.zeros((D, D), v0.dtype)
    Y = np.zeros((D, 1), v0.dtype)
    Y2 = np.zeros((D, 1), v0.dtype)
    Xv = np.zeros((D, 1), v0.dtype)
    # U[0] = v0; U[1 + (g & (cap - 1))] = suffix result of front group g (cap a power of 2)
    cap = 64
    U = np.zeros((cap + 1, D), v0.dtype)
    for j in range(D):
        U[0, j] = v0[j]
    gstart = np.empty(1, np.int64)
    windowed = mode == MODE_WITHIN or mode == MODE_EMIT or mode == MODE_SLIDE
    n_nz = 0
    for j in range(D):
        if v0[j] != 0:
            n_nz += 1
    v0nz = np.zeros(max(n_nz, 1), np.int64)
    n_nz = 0
    for j in range(D):
        if v0[j] != 0:
            v0nz[n_nz] = j
            n_nz += 1
    for sg in range(seg_lo.shape[0]):
        lo = seg_lo[sg]
        hi = seg_hi[sg]
        pid = seg_pid[sg]
        replay_end = lo + seg_replay[sg]
        ep = seg_emit_lo[sg]
        ep_hi = seg_emit_hi[sg]
        # group boundaries (equal time stamps); tmp rows for the generic path
        ng = 0
        if gstart.shape[0] < hi - lo + 1:
            gstart = np.empty(2 * (hi - lo) + 1, np.int64)
        need_max = 0
        q_max = 0  # most groups within a time span of w + s: bounds the queue
        j = 0
        e = lo
        while e < hi:
            gstart[ng] = e
            ng += 1
            t0 = ev_time[e]
            need = PT[PT[ev_prog[e]] + 1]
            e += 1
            while e < hi and ev_time[e] == t0:
                need += PT[PT[ev_prog[e]] + 1]
                e += 1
            if need > need_max:
                need_max = need
            if windowed:
                while ev_time[gstart[j]] <= t0 - w - s:
                    j += 1
                if ng - j > q_max:
                    q_max = ng - j
        gstart[ng] = hi
        if need_max > tmp.shape[0]:
            tmp = np.zeros((2 * need_max, D), v0.dtype)
        if q_max + 1 > cap:
            while cap < q_max + 1:
                cap *= 2
            U = np.zeros((cap + 1, D), v0.dtype)
            for j in range(D):
                U[0, j] = v0[j]

        if not windowed:
            for r in range(D):
                Xv[r, 0] = X_state[pid, r]
            n_first = n_out
            for gi in range(ng + 1):
                t = ev_time[gstart[gi]] if gi < ng else 0
                if mode == MODE_EMIT_UNBOUNDED or mode == MODE_EMIT_CHANGED:
                    while ep < ep_hi and (gi == ng or emit_times[ep] < t):
                        if _emits(mode, Xv, out_rows, out_val, n_out, n_first):
                            out_pid[n_out] = pid
                            out_key[n_out] = emit_times[ep]
                            for r in range(n_out_rows):
                                out_val[n_out, r] = Xv[out_rows[r], 0]
                            n_out += 1
                        ep += 1
                if gi == ng:
                    break
                g_lo = gstart[gi]
                g_hi = gstart[gi + 1]
                if _fast(g_lo, g_hi, ev_prog, PT, F_LEFT):
                    if _apply_fast(Xv, g_lo, ev_prog, ev_w, PT, False) < 0:
                        err[0] = ERR_OVERFLOW
                else:
                    _apply_generic(Xv, g_lo, g_hi, ev_prog, ev_w, PT, tmp, err, False)
                if err[0] != 0:
                    err[1] = pid
                    err[2] = t
                    return out_pid[:n_out], out_key[:n_out], out_val[:n_out]
            for r in range(D):
                X_state[pid, r] = Xv[r, 0]
            continue

        # ---- windowed modes, general loop: two-stack queue over groups [f_lo, b_hi):
        # [f_lo, f_hi) is the front (suffix results in U), [f_hi, b_hi) the back (composite B).
        # Each step picks one action: a query (EMIT / SLIDE result) or pushing the next group;
        # both first pop the groups with time <= bound.
        f_lo = 0
        f_hi = 0
        b_hi = 0
        _set_identity(B)
        k = next_k[pid]
        gi = 0
        t = 0
        while True:
            at_end = gi >= ng
            if not at_end:
                t = ev_time[gstart[gi]]
            act = 0  # 0: done, 1: query, 2: push group gi
            do_pop = True
            bound = 0
            qkey = 0
            if mode == MODE_EMIT:
                if ep < ep_hi and (at_end or emit_times[ep] < t):
                    act = 1
                    qkey = emit_times[ep]
                    bound = qkey - w
                    ep += 1
                elif not at_end:
                    act = 2
                    bound = t - w
            elif mode == MODE_SLIDE:
                if f_lo >= b_hi and not at_end:
                    # empty queue: jump to the first window that contains this group
                    kmin = (t - w) // s + 1
                    if kmin > k:
                        k = kmin
                if not (f_lo >= b_hi and at_end):
                    limit = slide_limit if at_end else t
                    if k * s + w <= limit:
                        act = 1
                        qkey = k
                        bound = k * s - 1
                        k += 1
                    elif not at_end:
                        act = 2
                        do_pop = False
            elif not at_end:  # WITHIN
                act = 2
                bound = t - w
            if act == 0:
                break
            # pop the groups with time <= bound (flip the back stack when the front is empty)
            while do_pop and f_lo < b_hi and ev_time[gstart[f_lo]] <= bound:
                if f_lo == f_hi:
                    _set_identity(GT)
                    for g in range(b_hi - 1, f_hi - 1, -1):
                        fl = np.int64(0)
                        if _fast(gstart[g], gstart[g + 1], ev_prog, PT, F_RIGHT):
                            fl |= _apply_fast(GT, gstart[g], ev_prog, ev_w, PT, True)
                        else:
                            _apply_generic(GT, gstart[g], gstart[g + 1], ev_prog, ev_w, PT, tmp, err, True)
                        fl |= _u_row(GT, U, 1 + (g & (cap - 1)), v0nz)
                        if fl < 0:
                            err[0] = ERR_OVERFLOW
                    f_hi = b_hi
                    _set_identity(B)
                f_lo += 1
            # window state = B u with u = U[ui] (v0 when the front is empty)
            ui = 1 + (f_lo & (cap - 1)) if f_lo < f_hi else 0
            if act == 1:
                if f_lo < b_hi and (mode != MODE_SLIDE or qkey >= 0):
                    y0, fl = _dot(B, out0, U, ui)
                    if y0 != 0:
                        out_pid[n_out] = pid
                        out_key[n_out] = qkey
                        out_val[n_out, 0] = y0
                        for r in range(1, n_out_rows):
                            y, fl2 = _dot(B, out_rows[r], U, ui)
                            fl |= fl2
                            out_val[n_out, r] = y
                        n_out += 1
                    if fl < 0:
                        err[0] = ERR_OVERFLOW
                if err[0] != 0:
                    err[1] = pid
                    err[2] = t
                    break
                continue
            g_lo = gstart[gi]
            g_hi = gstart[gi + 1]
            # WITHIN: matches that end in this group, counted over (t - w, t]
            if mode == MODE_WITHIN and g_lo >= replay_end:
                o = PT[ev_prog[g_lo]]
                fl = PT[o]
                if g_hi - g_lo == 1 and (fl & F_DELTA) != 0:
                    if fl & F_END:
                        k0 = o + HDR + 3 * PT[o + 1] + PT[o + 2]
                        fl = np.int64(0)
                        for kk in range(k0, k0 + 3 * PT[o + 3], 3):
                            ys, fl2 = _dot(B, PT[kk + 1], U, ui)
                            fl |= fl2
                            wk = PT[kk + 2]
                            if wk >= 0:
                                ys, fl2 = _mul(ys, ev_w[g_lo, wk])
                                fl |= fl2
                            v, fl2 = _add(X_state[pid, PT[kk]], ys)
                            fl |= fl2
                            X_state[pid, PT[kk]] = v
                        if fl < 0:
                            err[0] = ERR_OVERFLOW
                else:
                    has_end = False
                    for e2 in range(g_lo, g_hi):
                        if PT[PT[ev_prog[e2]]] & F_END:
                            has_end = True
                    if has_end:
                        _within_generic(X_state, pid, g_lo, g_hi, B, U, ui, Y, Y2, ev_prog, ev_w, PT, tmp,
                                        out_rows, err)
            # push the group onto the back stack
            if _fast(g_lo, g_hi, ev_prog, PT, F_LEFT):
                if _apply_fast(B, g_lo, ev_prog, ev_w, PT, False) < 0:
                    err[0] = ERR_OVERFLOW
            else:
                _apply_generic(B, g_lo, g_hi, ev_prog, ev_w, PT, tmp, err, False)
            b_hi += 1
            gi += 1
            if err[0] != 0:
                err[1] = pid
                err[2] = t
                break
        next_k[pid] = k
        if err[0] != 0:
            break
    return out_pid[:n_out], out_key[:n_out], out_val[:n_out]

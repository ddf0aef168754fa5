"""Per-mode fast loops of the linear-map kernels and their jitted drivers.

Loops: each segment first runs a per-mode fast loop (events one at a time,
every program in place; :func:`_within_fast`, :func:`_emit_fast`,
:func:`_slide_fast`, each typed inside its driver by ``jit_body``, and :func:`_drive_vector`'s
own loop), which falls back to the general
loop of :func:`run_segments` (groups of equal time stamps) when it meets a
tie it cannot run one event after the other (``programs.tie_ranks``) or
another program. What made the difference, measured (Numba 0.68):
helpers small enough to inline (a non-inlined call with several array
arguments costs 60-100 ns), no array reassigned inside an event loop, no
array argument written by an inlined helper (both add reference counting to
every iteration), branch-free overflow tests, few live arrays in a loop
(register pressure), loops over slices from index 0 (no wraparound code).
About 25 ns per event for WITHIN of SEQ(A, B, C), whatever the window.

Counts and integer sums of weights >= 0 (every program ``F_INV``, int64 state) take the inverse loops instead,
:func:`_within_inverse`, :func:`_emit_inverse` and :func:`_slide_inverse`: variants of the
sources of :func:`_within_fast`, :func:`_emit_fast` and :func:`_slide_fast` with the global
``INVERSE`` true, which keep the
window's map and remove an event by its inverse (no queue; docs/algorithms.md section 2). The WITHIN
count of a plain sequence of at most ``chain.MAX_CHAIN`` occurrences keeps that map in registers
instead (``chain.py``).
"""

from __future__ import annotations

import numpy as np

from .._jit import jit, jit_body, jit_callee, jit_inline, variant
from .apply import _apply_fast
from .arith import _add, _big, _mul, _mul_ovf, _one, _ovf, _wadd, _wmul, _zero
from .constants import (ERR_OVERFLOW, F_END, F_FAST, F_FASTW, F_INV, F_LEFT, F_TIE, HDR, MODE_EMIT_CHANGED,
                        MODE_EMIT_UNBOUNDED, ST_GROW_OUT,
                        ST_GROW_U, ST_OK, ST_OVERFLOW, ST_SLOW, TIE_SHIFT)


# Fast loops: one segment whose programs all apply in place (flag F_FAST; F_FASTW under
# WITHIN) and whose equal time stamps may run one after the other (``_tie_fits``). They find out themselves: on a tie or
# another program they return ST_SLOW, when the queue outgrows U or the results outgrow
# the output arrays ST_GROW_* with the size needed; the caller then restores the segment's
# state (X_state row, next_k, n_out) and runs it again (larger arrays, or the general loop).
# ST_OVERFLOW reports an int64 overflow (with the time), for the caller to raise.
#
# Register pressure rules these loops: every array argument carries its pointer, shapes
# and strides, and a signed index needs the shape for the negative-index wraparound. So
# they take the segment's slices of the event arrays (indices from 0), keep B, GT and U in
# one flat workspace ``W`` (B at 0, GT at D*D, U row r at 2*D*D + r*D; U[0] = v0), index
# with unsigned integers (no wraparound), get v0's ones as scalars (j0, j1) and write no
# ``err``: measured 25 instead of 31 ns per event.
#
# The pop loop is written out in each of them on purpose: as a helper taking the queue
# arrays it kept reference-count updates (atomic increments) on every call.
#
#     while f_lo < e and ev_time[f_lo] <= bound:       # pop the events with time <= bound
#         if f_lo == f_hi:                               # front empty: flip the back into it
#             if e - f_hi > capm1: return ST_GROW_U ...  # U holds the back's suffix results
#             GT = I
#             for g in range(e - 1, f_hi - 1, -1):       # newest first: GT = (M_{e-1}...M_g)^T
#                 GT <- M_g^T GT; U[1 + (g & capm1)] = G v0
#             f_hi = e
#             B = I
#         f_lo += 1
#
# The queue is [f_lo, e): front [f_lo, f_hi) with suffix results in U[1 + (g & capm1)],
# back [f_hi, e) with composite B. The window state is B u with u = U[ui] (v0 = U[0] when
# the front is empty).

_U64 = np.uint64
#: Zero as a typed value, not a literal: a helper called with a literal 0 in one place and an
#: int64 in another compiles twice (seen on a cold cache: about 1.4 s of the WITHIN loop).
_Z = np.int64(0)
#: ``right`` of :func:`_fapply` as typed values: literal True / False compiled it twice (0.4 s each cold).
_RIGHT = np.bool_(True)
_LEFT = np.bool_(False)


@jit_inline
def _tie_fits(PT, pa, pb):
    """True when an event of program ``pb`` may follow one of ``pa`` with the same time stamp
    in place (see ``programs.tie_ranks``; ``order_ties`` sorted the tie by rank)."""
    fa = PT[_U64(PT[_U64(pa)])]
    fb = PT[_U64(PT[_U64(pb)])]
    ra = fa >> TIE_SHIFT
    rb = fb >> TIE_SHIFT
    return ra > 0 and rb > 0 and (ra < rb or (pa == pb and (fb & F_TIE) != 0))


@jit_inline
def _fident(W, base, D):
    for i in range(D * D):
        W[_U64(base + i)] = 0
    for i in range(D):
        W[_U64(base + i * D + i)] = _one(W[0])


@jit_inline
def _frow_add(W, d, s, D):
    """W[d:d+D] += W[s:s+D]; returns the overflow flag."""
    f = np.int64(0)
    for c in range(D):
        a = W[_U64(d + c)]
        b = W[_U64(s + c)]
        us = _wadd(a, b)
        f |= _ovf(a, b, us)
        W[_U64(d + c)] = us
    return f


@jit_inline
def _frow_axpy(W, d, s, wv, D):
    """W[d:d+D] += wv * W[s:s+D] (d != s); returns the overflow flag."""
    f = np.int64(0)
    big = False
    for c in range(D):
        a = W[_U64(d + c)]
        x = W[_U64(s + c)]
        big |= _big(x, wv)
        p = _wmul(x, wv)
        us = _wadd(a, p)
        f |= _ovf(a, p, us)
        W[_U64(d + c)] = us
    if big:
        for c in range(D):
            if _mul_ovf(W[_U64(s + c)], wv):
                f = np.int64(-1)
    return f


@jit_inline
def _fapply(W, base, D, e, ev_prog, ev_w, nw, PT, right):
    """In place: the rows at ``base`` (B or GT) <- M_e (``right``: M_e^T) times them.
    ``ev_w`` is flat (event e's weights at e * nw). Returns the overflow flag."""
    o = PT[_U64(ev_prog[_U64(e)])]
    nt = PT[_U64(o + 1)]
    r0 = o + HDR + 3 * nt
    for k in range(r0, r0 + PT[_U64(o + 2)]):
        r = base + PT[_U64(k)] * D
        for c in range(D):
            W[_U64(r + c)] = 0
    f = np.int64(0)
    for i in range(nt):
        if right:
            k = r0 - 3 * (i + 1)
            d = PT[_U64(k + 1)]
            s = PT[_U64(k)]
        else:
            k = o + HDR + 3 * i
            d = PT[_U64(k)]
            s = PT[_U64(k + 1)]
        wk = PT[_U64(k + 2)]
        if wk < 0:
            f |= _frow_add(W, base + d * D, base + s * D, D)
        else:
            f |= _frow_axpy(W, base + d * D, base + s * D, ev_w[_U64(e * nw + wk)], D)
    return f


@jit_inline
def _fdot(W, r, u, D):
    """(sum_j W[r + j] * W[u + j], flag)."""
    acc = _zero(W[_U64(r)])
    f = np.int64(0)
    big = False
    for j in range(D):
        b = W[_U64(r + j)]
        x = W[_U64(u + j)]
        big |= _big(b, x)
        p = _wmul(b, x)
        us = _wadd(acc, p)
        f |= _ovf(acc, p, us)
        acc = us
    if big:
        for j in range(D):
            if _mul_ovf(W[_U64(r + j)], W[_U64(u + j)]):
                f = np.int64(-1)
    return acc, f


@jit_body
def _inv_push(W, D, e, ev_prog, ev_w, nw, PT):
    """The inverse loops' ``W <- M_e W`` (no resets; a weight is >= 0): row ``dst += coef *`` row ``src``
    per triplet, in order. Returns the overflow flag."""
    o = PT[_U64(ev_prog[_U64(e)])]
    f = np.int64(0)
    for kt in range(o + HDR, o + HDR + 3 * PT[_U64(o + 1)], 3):
        wk = PT[_U64(kt + 2)]
        if wk < 0:
            f |= _frow_add(W, PT[_U64(kt)] * D, PT[_U64(kt + 1)] * D, D)
        else:
            f |= _frow_axpy(W, PT[_U64(kt)] * D, PT[_U64(kt + 1)] * D, ev_w[_U64(e * nw + wk)], D)
    return f


@jit_body
def _inv_pop(W, D, f, ev_prog, ev_w, nw, PT):
    """The inverse loops' ``W <- W M_f^-1``: column ``src -= coef *`` column ``dst`` per triplet, in the
    triplets' order. Exact, and no subtraction overflows: each value taken is at most the one it is
    taken from (``_within_loop``). A helper typed inside each loop (``jit_body``): as a ``jit_inline``
    function taking ``W`` it cost the loop 18% (reference counting; docs/performance-log.md, session 37)."""
    of = PT[_U64(ev_prog[_U64(f)])]
    for kt in range(of + HDR, of + HDR + 3 * PT[_U64(of + 1)], 3):
        d = PT[_U64(kt)]
        sc = PT[_U64(kt + 1)]
        wk = PT[_U64(kt + 2)]
        if wk < 0:
            for r in range(D):
                W[_U64(r * D + sc)] -= W[_U64(r * D + d)]
        else:
            wv = ev_w[_U64(f * nw + wk)]
            for r in range(D):
                W[_U64(r * D + sc)] -= wv * W[_U64(r * D + d)]


@jit_inline
def _fflip(W, D, f_hi, e, ev_prog, ev_w, nw, PT, capm1, j0, j1):
    """The flip of the pop loop (see above); returns the overflow flag. Takes few arrays."""
    G0 = D * D
    U0 = 2 * D * D
    f = np.int64(0)
    _fident(W, G0, D)
    for g in range(e - 1, f_hi - 1, -1):
        f |= _fapply(W, G0, D, g, ev_prog, ev_w, nw, PT, _RIGHT)
        row = U0 + (1 + (g & capm1)) * D
        for i in range(D):
            W[_U64(row + i)] = W[_U64(G0 + j0 * D + i)]
        if j1 >= 0:
            f |= _frow_add(W, row, G0 + j1 * D, D)
    _fident(W, _Z, D)
    return f


def _within_loop(w, n, replay_end, ev_time, ev_prog, ev_w, nw, PT, W, D, capm1, j0, j1, xrow):
    """WITHIN w over one segment (``n`` events, the event arrays its slices): adds to the
    output totals ``xrow`` the matches ending in it. Returns ``(status, need, time)``.

    Two loops from this source (a global ``INVERSE`` that Numba folds, ``_jit.variant``):
    :func:`_within_fast`, the two-stack queue, and :func:`_within_inverse`, for segments whose
    programs all carry ``F_INV`` (no reset, no self-loop; weights >= 0, see ``run._weights_nonnegative``). The
    inverse loop keeps the window's map ``W = M_e ... M_f`` (D x D, row-major in ``W[:D * D]``):
    a new event multiplies it on the left as in the two-stack loop (row ``dst += coef *`` row ``src``
    per triplet), an event that leaves the window on the right by its inverse (``W <- W M_f^-1``:
    column ``src -= coef *`` column ``dst`` per triplet, in the triplets' order). No queue and no
    flips: the window state is ``W v0``. Every value it holds is a count or a sum of weights >= 0 over
    the window or a part of it, never more than the window's own, so a subtraction never overflows; a
    sum that does returns ``ST_SLOW`` (the general loop decides whether the results overflow).
    """
    U0 = 2 * D * D
    flag = F_INV if INVERSE else F_FASTW
    st_ovf = ST_SLOW if INVERSE else ST_OVERFLOW
    f_lo = _Z
    f_hi = _Z
    ovf = np.int64(0)
    _fident(W, _Z, D)
    for e in range(n):
        t = ev_time[_U64(e)]
        o = PT[_U64(ev_prog[_U64(e)])]
        fl = PT[_U64(o)]
        if (fl & flag) == 0 or (e > 0 and t == ev_time[_U64(e - 1)]
                                and not _tie_fits(PT, ev_prog[_U64(e - 1)], ev_prog[_U64(e)])):
            return ST_SLOW, 0, 0
        bound = t - w
        while f_lo < e and ev_time[_U64(f_lo)] <= bound:
            if INVERSE:
                _inv_pop(W, D, f_lo, ev_prog, ev_w, nw, PT)
            elif f_lo == f_hi:
                if e - f_hi > capm1:
                    return ST_GROW_U, e - f_hi, 0
                ovf |= _fflip(W, D, f_hi, e, ev_prog, ev_w, nw, PT, capm1, j0, j1)
                f_hi = e
            f_lo += 1
        if (fl & F_END) != 0 and e >= replay_end:
            # matches ending at e, over (t - w, t]: sum of coef * (window state)[src] over END triplets
            ui = U0 + ((1 + (f_lo & capm1)) * D if f_lo < f_hi else 0)
            k0 = o + HDR + 3 * PT[_U64(o + 1)] + PT[_U64(o + 2)]
            for kk in range(k0, k0 + 3 * PT[_U64(o + 3)], 3):
                if INVERSE:  # (W v0)[src], v0 = e_j0 (+ e_j1)
                    sr = PT[_U64(kk + 1)] * D
                    ys = W[_U64(sr + j0)]
                    if j1 >= 0:
                        ys, f = _add(ys, W[_U64(sr + j1)])
                        ovf |= f
                else:
                    ys, f = _fdot(W, PT[_U64(kk + 1)] * D, ui, D)
                    ovf |= f
                wk = PT[_U64(kk + 2)]
                if wk >= 0:
                    ys, f = _mul(ys, ev_w[_U64(e * nw + wk)])
                    ovf |= f
                d = _U64(PT[_U64(kk)])
                v, f = _add(xrow[d], ys)
                ovf |= f
                xrow[d] = v
        if INVERSE:
            ovf |= _inv_push(W, D, e, ev_prog, ev_w, nw, PT)
        else:
            ovf |= _fapply(W, _Z, D, e, ev_prog, ev_w, nw, PT, _LEFT)
        if ovf < 0:
            return st_ovf, 0, t
    return ST_OK, 0, 0


def _emit_loop(w, n, pid, emit_times, ev_time, ev_prog, ev_w, nw, PT, out_rows, W, D, capm1, j0, j1,
               out_pid, out_key, out_val, n_out):
    """WITHIN w EMIT CHANGES over one segment (``n`` events; ``emit_times`` its output
    times): a result at every output time te, over (te - w, te].
    Returns ``(status, n_out, need, time)``.

    Two loops from this source, as for :func:`_within_loop`: :func:`_emit_fast` (the two-stack
    queue) and :func:`_emit_inverse` (programs with ``F_INV``: the window's map in ``W[:D * D]``;
    an overflow returns ``ST_SLOW``)."""
    U0 = 2 * D * D
    n_out_rows = out_rows.shape[0]
    out0 = out_rows[0] * D
    flag = F_INV if INVERSE else F_FAST
    st_ovf = ST_SLOW if INVERSE else ST_OVERFLOW
    f_lo = _Z
    f_hi = _Z
    ovf = np.int64(0)
    _fident(W, _Z, D)
    ep = 0
    ep_hi = emit_times.shape[0]
    e = 0
    t = 0
    if n > 0:
        t = ev_time[_U64(0)]
        if (PT[_U64(PT[_U64(ev_prog[_U64(0)])])] & flag) == 0:
            return ST_SLOW, n_out, 0, 0
    while True:
        # next action: a result at output time te < t, or pushing event e
        query = ep < ep_hi and (e == n or emit_times[_U64(ep)] < t)
        if not query and e == n:
            break
        te = emit_times[_U64(ep)] if query else t
        bound = te - w
        while f_lo < e and ev_time[_U64(f_lo)] <= bound:
            if INVERSE:
                _inv_pop(W, D, f_lo, ev_prog, ev_w, nw, PT)
            elif f_lo == f_hi:
                if e - f_hi > capm1:
                    return ST_GROW_U, n_out, e - f_hi, 0
                ovf |= _fflip(W, D, f_hi, e, ev_prog, ev_w, nw, PT, capm1, j0, j1)
                f_hi = e
            f_lo += 1
        if query:
            ep += 1
            if f_lo < e:
                ui = U0 + ((1 + (f_lo & capm1)) * D if f_lo < f_hi else 0)
                if INVERSE:  # (W v0)[out row]
                    y0 = W[_U64(out0 + j0)]
                    f = np.int64(0)
                    if j1 >= 0:
                        y0, f = _add(y0, W[_U64(out0 + j1)])
                else:
                    y0, f = _fdot(W, out0, ui, D)
                ovf |= f
                if y0 != 0:
                    if n_out == out_pid.shape[0]:
                        return ST_GROW_OUT, n_out, n_out + 1, 0
                    out_pid[n_out] = 0
                    out_key[n_out] = te
                    out_val[n_out, 0] = y0
                    for r in range(1, n_out_rows):
                        if INVERSE:
                            y = W[_U64(out_rows[r] * D + j0)]
                            f = np.int64(0)
                            if j1 >= 0:
                                y, f = _add(y, W[_U64(out_rows[r] * D + j1)])
                        else:
                            y, f = _fdot(W, out_rows[r] * D, ui, D)
                        ovf |= f
                        out_val[n_out, r] = y
                    n_out += 1
        else:
            if INVERSE:
                ovf |= _inv_push(W, D, e, ev_prog, ev_w, nw, PT)
            else:
                ovf |= _fapply(W, _Z, D, e, ev_prog, ev_w, nw, PT, _LEFT)
            e += 1
            if e < n:
                t_prev = t
                t = ev_time[_U64(e)]
                if (PT[_U64(PT[_U64(ev_prog[_U64(e)])])] & flag) == 0 or (
                        t == t_prev and not _tie_fits(PT, ev_prog[_U64(e - 1)], ev_prog[_U64(e)])):
                    return ST_SLOW, n_out, 0, 0
        if ovf < 0:
            return st_ovf, n_out, 0, te
    return ST_OK, n_out, 0, 0


def _slide_loop(w, s, n, k, slide_limit, ev_time, ev_prog, ev_w, nw, PT, out_rows, W, D, capm1, j0, j1,
                out_key, out_val, n_out, e0, f_lo, f_hi):
    """WITHIN w SLIDE s over one segment (``n`` events): a result per window
    [k s, k s + w) closed before slide_limit. Returns
    ``(status, n_out, k, need, time, e, f_lo, f_hi)``.

    Resumable: on ST_GROW_OUT the caller grows the output arrays and calls again
    with the returned ``k, e, f_lo, f_hi`` (``W`` kept); a fresh start has
    ``e0 = f_lo = f_hi = 0``.

    Two loops from this source: :func:`_slide_fast` (the two-stack queue) and, with the global
    ``INVERSE`` true, :func:`_slide_inverse`, which keeps the window's map in ``W[:D * D]`` as
    :func:`_within_inverse` does (programs with ``F_INV``; an overflow returns ``ST_SLOW``).
    """
    U0 = 2 * D * D
    n_out_rows = out_rows.shape[0]
    out0 = out_rows[0] * D
    flag = F_INV if INVERSE else F_FAST
    st_ovf = ST_SLOW if INVERSE else ST_OVERFLOW
    ovf = np.int64(0)
    if e0 == 0:
        _fident(W, _Z, D)
    for e in range(e0, n + 1):
        at_end = e == n
        t = 0
        if not at_end:
            t = ev_time[_U64(e)]
            if (PT[_U64(PT[_U64(ev_prog[_U64(e)])])] & flag) == 0 or (
                    e > 0 and t == ev_time[_U64(e - 1)]
                    and not _tie_fits(PT, ev_prog[_U64(e - 1)], ev_prog[_U64(e)])):
                return ST_SLOW, n_out, k, 0, 0, e, f_lo, f_hi
        # close the windows [k s, k s + w) that end before this event
        while True:
            if f_lo >= e:
                if at_end:
                    break
                kmin = (t - w) // s + 1  # empty queue: jump to the first window holding t
                if kmin > k:
                    k = kmin
            limit = slide_limit if at_end else t
            if k * s + w > limit:
                break
            bound = k * s - 1
            while f_lo < e and ev_time[_U64(f_lo)] <= bound:
                if INVERSE:
                    _inv_pop(W, D, f_lo, ev_prog, ev_w, nw, PT)
                elif f_lo == f_hi:
                    if e - f_hi > capm1:
                        return ST_GROW_U, n_out, k, e - f_hi, 0, e, f_lo, f_hi
                    ovf |= _fflip(W, D, f_hi, e, ev_prog, ev_w, nw, PT, capm1, j0, j1)
                    f_hi = e
                f_lo += 1
            if f_lo >= e:
                k += 1
                continue
            # the queue holds the same events until the window that pops its front (the first
            # k s past the front's time) or the last window this loop closes: one result for
            # that run of windows (w / s of them per event under a long window, mostly empty)
            run_end = min(-((-(ev_time[_U64(f_lo)] + 1)) // s), (limit - w) // s + 1)
            if k < 0:  # no window before time 0
                k = min(run_end, 0)
                continue
            ui = U0 + ((1 + (f_lo & capm1)) * D if f_lo < f_hi else 0)
            if INVERSE:  # (W v0)[out row]
                y0 = W[_U64(out0 + j0)]
                f = np.int64(0)
                if j1 >= 0:
                    y0, f = _add(y0, W[_U64(out0 + j1)])
            else:
                y0, f = _fdot(W, out0, ui, D)
            ovf |= f
            if y0 == 0:
                k = run_end
                continue
            first = n_out
            while k < run_end:
                if n_out == out_key.shape[0]:  # full: grow (or stop at an overflow: never past the end)
                    if ovf < 0:
                        return st_ovf, n_out, k, 0, t, e, f_lo, f_hi
                    return ST_GROW_OUT, n_out, k, n_out + run_end - k, 0, e, f_lo, f_hi
                out_key[n_out] = k
                out_val[n_out, 0] = y0
                for r in range(1, n_out_rows):
                    if n_out == first:
                        if INVERSE:
                            y = W[_U64(out_rows[r] * D + j0)]
                            f = np.int64(0)
                            if j1 >= 0:
                                y, f = _add(y, W[_U64(out_rows[r] * D + j1)])
                        else:
                            y, f = _fdot(W, out_rows[r] * D, ui, D)
                        ovf |= f
                        out_val[n_out, r] = y
                    else:
                        out_val[n_out, r] = out_val[first, r]
                n_out += 1
                k += 1
        if ovf < 0:
            return st_ovf, n_out, k, 0, t, e, f_lo, f_hi
        if at_end:
            break
        if INVERSE:
            ovf |= _inv_push(W, D, e, ev_prog, ev_w, nw, PT)
        else:
            ovf |= _fapply(W, _Z, D, e, ev_prog, ev_w, nw, PT, _LEFT)
        if ovf < 0:
            return st_ovf, n_out, k, 0, t, e, f_lo, f_hi
    return ST_OK, n_out, k, 0, 0, n, f_lo, f_hi


INVERSE = False
_within_fast = jit_body(_within_loop)
_within_inverse = jit_body(variant(_within_loop, "_within_inverse", INVERSE=True))
_slide_fast = jit_body(_slide_loop)
_slide_inverse = jit_body(variant(_slide_loop, "_slide_inverse", INVERSE=True))
_emit_fast = jit_body(_emit_loop)
_emit_inverse = jit_body(variant(_emit_loop, "_emit_inverse", INVERSE=True))


@jit_inline
def _emit_rows_bound(mode, lo, hi, ep, ep_hi):
    """Most EMIT CHANGES rows of a segment: one per emit time; with MODE_EMIT_CHANGED at most one more
    than its events (its totals change only at them)."""
    n = ep_hi - ep
    if mode == MODE_EMIT_CHANGED and hi - lo + 1 < n:
        n = hi - lo + 1
    return n


@jit_inline
def _emits(mode, Xv, out_rows, out_val, n_out, n_first):
    """Whether an EMIT CHANGES row is written now: a non-zero count (MODE_EMIT_UNBOUNDED); or the
    segment's first row, or totals that differ from its last row (MODE_EMIT_CHANGED)."""
    if mode != MODE_EMIT_CHANGED:
        return Xv[out_rows[0], 0] != 0
    if n_out == n_first:
        return True
    for r in range(out_rows.shape[0]):
        if out_val[n_out - 1, r] != Xv[out_rows[r], 0]:
            return True
    return False


@jit_callee
def _grow_out(out_pid, out_key, out_val, need):
    """Larger output arrays holding the same rows (plain loops: cheaper to compile than
    slice assignment)."""
    n = max(need, 2 * out_pid.shape[0], 1024)
    m = out_pid.shape[0]
    p2 = np.empty(n, np.int64)
    k2 = np.empty(n, np.int64)
    v2 = np.empty((n, out_val.shape[1]), out_val.dtype)
    for i in range(m):
        p2[i] = out_pid[i]
        k2[i] = out_key[i]
        for c in range(out_val.shape[1]):
            v2[i, c] = out_val[i, c]
    return p2, k2, v2


# ---------------------------------------------------------------------- drivers
# One jitted driver per mode around its fast loop (called by ``run.run_segments``).

@jit_callee
def _flat_workspace(D, fcap, v0):
    """B, GT and U of the fast loops in one array; U[0] = v0."""
    Wk = np.zeros(2 * D * D + (fcap + 1) * D, v0.dtype)
    for j in range(D):
        Wk[2 * D * D + j] = v0[j]
    return Wk


@jit
def _drive_within(w, seg_lo, seg_hi, seg_pid, seg_replay, ev_time, ev_prog, ev_w, PT, v0, j0, j1, X_state, err,
                  slow):
    """WITHIN: the fast loop over every segment (retries with a larger queue; marks in
    ``slow`` the segments for the general loop)."""
    D = v0.shape[0]
    nw = ev_w.shape[1]
    fcap = np.int64(64)
    Wk = _flat_workspace(D, fcap, v0)
    x_save = np.zeros(D, v0.dtype)
    for sg in range(seg_lo.shape[0]):
        lo = seg_lo[sg]
        hi = seg_hi[sg]
        pid = seg_pid[sg]
        for r in range(D):
            x_save[r] = X_state[pid, r]
        while True:
            status, need, t_err = _within_fast(w, hi - lo, seg_replay[sg], ev_time[lo:hi], ev_prog[lo:hi],
                                               ev_w[lo:hi].reshape(-1), nw, PT, Wk, D, fcap - 1, j0, j1,
                                               X_state[pid])
            if status == ST_OK or status == ST_OVERFLOW:
                break
            for r in range(D):
                X_state[pid, r] = x_save[r]
            if status == ST_GROW_U:
                while fcap < need + 1:
                    fcap *= 2
                Wk = _flat_workspace(D, fcap, v0)
            else:
                slow[sg] = True
                break
        if status == ST_OVERFLOW:
            err[0] = ERR_OVERFLOW
            err[1] = pid
            err[2] = t_err
            return


_drive_within_inverse = jit(variant(_drive_within.py_func, "_drive_within_inverse", _within_fast=_within_inverse))
_drive_within_inverse.__doc__ = """WITHIN when every program carries ``F_INV`` (int64 state): :func:`_drive_within` around
:func:`_within_inverse` (the segments it leaves, a tie it cannot run in order or a sum that overflows, go
to the general loop)."""


@jit
def _drive_emit(w, seg_lo, seg_hi, seg_pid, seg_emit_lo, seg_emit_hi, emit_times, ev_time, ev_prog, ev_w, PT, v0,
                j0, j1, out_rows, err, slow):
    """WITHIN w EMIT CHANGES: the fast loop over every segment (see :func:`_drive_within`)."""
    D = v0.shape[0]
    nw = ev_w.shape[1]
    ocap = 0
    for sg in range(seg_lo.shape[0]):
        ocap += seg_emit_hi[sg] - seg_emit_lo[sg]
    out_pid = np.empty(ocap, np.int64)
    out_key = np.empty(ocap, np.int64)
    out_val = np.empty((ocap, out_rows.shape[0]), v0.dtype)
    n_out = np.int64(0)  # typed: a literal 0 compiles the helper twice (literal, then int64)
    fcap = np.int64(64)
    Wk = _flat_workspace(D, fcap, v0)
    for sg in range(seg_lo.shape[0]):
        lo = seg_lo[sg]
        hi = seg_hi[sg]
        n_save = n_out
        while True:
            status, n_out, need, t_err = _emit_fast(w, hi - lo, seg_pid[sg],
                                                    emit_times[seg_emit_lo[sg]:seg_emit_hi[sg]], ev_time[lo:hi],
                                                    ev_prog[lo:hi], ev_w[lo:hi].reshape(-1), nw, PT, out_rows, Wk,
                                                    D, fcap - 1, j0, j1, out_pid, out_key, out_val, n_save)
            if status == ST_OK or status == ST_OVERFLOW:
                break
            n_out = n_save
            if status == ST_GROW_U:
                while fcap < need + 1:
                    fcap *= 2
                Wk = _flat_workspace(D, fcap, v0)
            else:  # ST_SLOW (the output capacity is exact: never ST_GROW_OUT)
                slow[sg] = True
                break
        for r in range(n_save, n_out):
            out_pid[r] = seg_pid[sg]
        if status == ST_OVERFLOW:
            err[0] = ERR_OVERFLOW
            err[1] = seg_pid[sg]
            err[2] = t_err
            break
    return out_pid[:n_out], out_key[:n_out], out_val[:n_out]


_drive_emit_inverse = jit(variant(_drive_emit.py_func, "_drive_emit_inverse", _emit_fast=_emit_inverse))
_drive_emit_inverse.__doc__ = """WITHIN w EMIT CHANGES when every program carries ``F_INV`` (int64 state): :func:`_drive_emit`
around :func:`_emit_inverse`."""


@jit
def _drive_slide(w, s, seg_lo, seg_hi, seg_pid, slide_limit, ev_time, ev_prog, ev_w, PT, v0, j0, j1, out_rows,
                 next_k, err, slow):
    """WITHIN w SLIDE s: the fast loop over every segment (see :func:`_drive_within`);
    the output arrays grow while the loop resumes where it stopped."""
    D = v0.shape[0]
    nw = ev_w.shape[1]
    ocap = 1024 + ev_time.shape[0] // 16
    out_pid = np.empty(ocap, np.int64)
    out_key = np.empty(ocap, np.int64)
    out_val = np.empty((ocap, out_rows.shape[0]), v0.dtype)
    n_out = np.int64(0)  # typed: a literal 0 compiles the helper twice (literal, then int64)
    fcap = np.int64(64)
    Wk = _flat_workspace(D, fcap, v0)
    for sg in range(seg_lo.shape[0]):
        lo = seg_lo[sg]
        hi = seg_hi[sg]
        pid = seg_pid[sg]
        n_save = n_out
        while True:
            k = next_k[pid]
            e_r = np.int64(0)
            f_lo_r = np.int64(0)
            f_hi_r = np.int64(0)
            n_out = n_save
            while True:
                status, n_out, k, need, t_err, e_r, f_lo_r, f_hi_r = _slide_fast(
                    w, s, hi - lo, k, slide_limit, ev_time[lo:hi], ev_prog[lo:hi], ev_w[lo:hi].reshape(-1), nw,
                    PT, out_rows, Wk, D, fcap - 1, j0, j1, out_key, out_val, n_out, e_r, f_lo_r, f_hi_r)
                if status != ST_GROW_OUT:
                    break
                out_pid, out_key, out_val = _grow_out(out_pid, out_key, out_val, need)
            if status == ST_OK or status == ST_OVERFLOW:
                break
            n_out = n_save
            if status == ST_GROW_U:
                while fcap < need + 1:
                    fcap *= 2
                Wk = _flat_workspace(D, fcap, v0)
            else:
                slow[sg] = True
                break
        if status == ST_SLOW:
            continue
        next_k[pid] = k
        for r in range(n_save, n_out):
            out_pid[r] = pid
        if status == ST_OVERFLOW:
            err[0] = ERR_OVERFLOW
            err[1] = pid
            err[2] = t_err
            break
    return out_pid[:n_out], out_key[:n_out], out_val[:n_out]


_drive_slide_inverse = jit(variant(_drive_slide.py_func, "_drive_slide_inverse", _slide_fast=_slide_inverse))
_drive_slide_inverse.__doc__ = """WITHIN w SLIDE s when every program carries ``F_INV`` (int64 state): :func:`_drive_slide`
around :func:`_slide_inverse`."""


@jit
def _drive_vector(mode, seg_lo, seg_hi, seg_pid, seg_emit_lo, seg_emit_hi, emit_times, ev_time, ev_prog, ev_w, PT,
                  v0, out_rows, X_state, err, slow):
    """No window (a running vector per partition), and EMIT CHANGES without WITHIN (the running totals
    at every output time): the fast loop over every segment. A segment with an event the fast loop does
    not take is marked in ``slow``, its ``X_state`` row and rows left as they were (the general loop
    runs it). One function, not a driver calling a loop per segment: a first run compiles it once
    (a jitted callee is compiled alone, then again inside its caller's module)."""
    D = v0.shape[0]
    emits = mode == MODE_EMIT_UNBOUNDED or mode == MODE_EMIT_CHANGED
    ocap = 0
    if emits:
        for sg in range(seg_lo.shape[0]):
            ocap += _emit_rows_bound(mode, seg_lo[sg], seg_hi[sg], seg_emit_lo[sg], seg_emit_hi[sg])
    out_pid = np.empty(ocap, np.int64)
    out_key = np.empty(ocap, np.int64)
    out_val = np.empty((ocap, out_rows.shape[0]), v0.dtype)
    n_out_rows = out_rows.shape[0]
    n_out = np.int64(0)
    Xv = np.zeros((D, 1), v0.dtype)
    for sg in range(seg_lo.shape[0]):
        lo = seg_lo[sg]
        hi = seg_hi[sg]
        pid = seg_pid[sg]
        ep = seg_emit_lo[sg]
        ep_hi = seg_emit_hi[sg]
        n_first = n_out  # this segment's first row
        for r in range(D):
            Xv[r, 0] = X_state[pid, r]
        t_prev = 0
        ovf = np.int64(0)
        fast = True
        for e in range(lo, hi + 1):
            t = 0
            if e < hi:
                t = ev_time[e]
                if (PT[PT[ev_prog[e]]] & F_LEFT) == 0 or (e > lo and t == t_prev
                                                          and not _tie_fits(PT, ev_prog[e - 1], ev_prog[e])):
                    fast = False
                    break
                t_prev = t
            if emits:
                while ep < ep_hi and (e == hi or emit_times[ep] < t):
                    if _emits(mode, Xv, out_rows, out_val, n_out, n_first):
                        if n_out == out_pid.shape[0]:  # (the bound above holds: a guard)
                            fast = False
                            break
                        out_pid[n_out] = pid
                        out_key[n_out] = emit_times[ep]
                        for r in range(n_out_rows):
                            out_val[n_out, r] = Xv[out_rows[r], 0]
                        n_out += 1
                    ep += 1
                if not fast:
                    break
            if e == hi:
                break
            ovf |= _apply_fast(Xv, e, ev_prog, ev_w, PT, False)
            if ovf < 0:
                err[0] = ERR_OVERFLOW
                err[1] = pid
                err[2] = t
                break
        if not fast:
            n_out = n_first
            slow[sg] = True
            continue
        for r in range(D):
            X_state[pid, r] = Xv[r, 0]
        if err[0] != 0:
            break
    return out_pid[:n_out], out_key[:n_out], out_val[:n_out]

"""Applying programs to a state: rows, dots, in-place and generic application of a group.

Programs and the in-place conditions (flags ``F_LEFT`` / ``F_RIGHT``) are described in
``programs.py``. The general loop (``run.py``) uses these helpers; the fast loops
(``windows.py``) have flat-workspace versions of them."""

from __future__ import annotations

import numpy as np

from .._jit import jit_callee, jit_inline
from .arith import _add, _big, _delta, _mul, _mul_ovf, _one, _ovf, _wadd, _wmul, _zero
from .constants import ERR_OVERFLOW, HDR


# Like ``_add`` / ``_mul`` (``arith.py``), the row and dot helpers return an overflow flag
# (negative: overflow) instead of writing ``err``.

@jit_inline
def _row_add(X, d, s):
    """X[d, :] += X[s, :]; returns the flag."""
    f = np.int64(0)
    for c in range(X.shape[1]):
        a = X[d, c]
        b = X[s, c]
        us = _wadd(a, b)
        f |= _ovf(a, b, us)
        X[d, c] = us
    return f


@jit_inline
def _row_axpy(X, d, s, wv):
    """X[d, :] += wv * X[s, :] (``d != s``); returns the flag."""
    f = np.int64(0)
    big = False
    for c in range(X.shape[1]):
        a = X[d, c]
        x = X[s, c]
        big |= _big(x, wv)
        p = _wmul(x, wv)
        us = _wadd(a, p)
        f |= _ovf(a, p, us)
        X[d, c] = us
    if big:  # X[s] is intact (d != s): exact test of the products
        for c in range(X.shape[1]):
            if _mul_ovf(X[s, c], wv):
                f = np.int64(-1)
    return f


@jit_inline
def _dot(B, r, U, ui):
    """(sum_j B[r, j] * U[ui, j], flag)."""
    acc = _zero(B[r, 0])
    f = np.int64(0)
    big = False
    for j in range(B.shape[1]):
        b = B[r, j]
        x = U[ui, j]
        big |= _big(b, x)
        p = _wmul(b, x)
        us = _wadd(acc, p)
        f |= _ovf(acc, p, us)
        acc = us
    if big:
        for j in range(B.shape[1]):
            if _mul_ovf(B[r, j], U[ui, j]):
                f = np.int64(-1)
    return acc, f


# ---------------------------------------------------------------------- applying programs

@jit_inline
def _fast(lo, hi, ev_prog, PT, flag):
    """True when the group [lo, hi) is one event whose program has ``flag`` (F_LEFT / F_RIGHT)."""
    return hi - lo == 1 and (PT[PT[ev_prog[lo]]] & flag) != 0


@jit_inline
def _apply_fast(X, e, ev_prog, ev_w, PT, right):
    """In-place ``X <- M_e X`` (``right``: ``X <- M_e^T X``) for a one-event group
    whose program has F_LEFT (F_RIGHT); returns the overflow flag. Small on purpose:
    it is inlined."""
    ncols = X.shape[1]
    o = PT[ev_prog[e]]
    nt = PT[o + 1]
    r0 = o + HDR + 3 * nt
    for k in range(r0, r0 + PT[o + 2]):
        r = PT[k]
        for c in range(ncols):
            X[r, c] = 0
    f = np.int64(0)
    for i in range(nt):
        if right:
            k = r0 - 3 * (i + 1)
            d = PT[k + 1]
            s = PT[k]
        else:
            k = o + HDR + 3 * i
            d = PT[k]
            s = PT[k + 1]
        wk = PT[k + 2]
        if wk < 0:
            f |= _row_add(X, d, s)
        else:
            f |= _row_axpy(X, d, s, ev_w[e, wk])
    return f


@jit_callee
def _apply_generic(X, lo, hi, ev_prog, ev_w, PT, tmp, err, right):
    """X <- M_group X (``right``: X <- M_group^T X) for events [lo, hi) of one time stamp.

    X has shape (D, ncols). ``right`` applies the transposed map, which is how
    the column operations of ``G <- G M`` look on ``X = G^T``. Pass 1 reads
    every contribution from the pre-state into ``tmp``; then the resets zero
    their rows; pass 2 adds the contributions. So events with the same time
    stamp never see each other, and a Kleene self-loop doubles. Not for hot
    loops (a call with many array arguments costs 60-100 ns): callers test
    :func:`_fast` and use :func:`_apply_fast` when they can.
    """
    ncols = X.shape[1]
    m = 0
    for e in range(lo, hi):
        o = PT[ev_prog[e]]
        for k in range(o + HDR, o + HDR + 3 * PT[o + 1], 3):
            s = PT[k] if right else PT[k + 1]
            wk = PT[k + 2]
            if wk < 0:
                for c in range(ncols):
                    tmp[m, c] = X[s, c]
            else:
                wv = ev_w[e, wk]
                for c in range(ncols):
                    p, fl = _mul(X[s, c], wv)
                    tmp[m, c] = p
                    if fl < 0:
                        err[0] = ERR_OVERFLOW
            m += 1
    for e in range(lo, hi):
        o = PT[ev_prog[e]]
        r0 = o + HDR + 3 * PT[o + 1]
        for k in range(r0, r0 + PT[o + 2]):
            r = PT[k]
            for c in range(ncols):
                X[r, c] = 0
    m = 0
    for e in range(lo, hi):
        o = PT[ev_prog[e]]
        for k in range(o + HDR, o + HDR + 3 * PT[o + 1], 3):
            d = PT[k + 1] if right else PT[k]
            for c in range(ncols):
                v, fl = _add(X[d, c], tmp[m, c])
                X[d, c] = v
                if fl < 0:
                    err[0] = ERR_OVERFLOW
            m += 1


@jit_inline
def _set_identity(M):
    D = M.shape[0]
    for i in range(D):
        for j in range(D):
            M[i, j] = 0
        M[i, i] = _one(M[0, 0])


@jit_callee
def _within_generic(X_state, pid, lo, hi, B, U, ui, Y, Y2, ev_prog, ev_w, PT, tmp, out_rows, err):
    """WITHIN: add to the output totals the matches ending in group [lo, hi) (any programs)."""
    D = B.shape[0]
    f = np.int64(0)
    for r in range(D):
        y, fl = _dot(B, r, U, ui)
        f |= fl
        Y[r, 0] = y
        Y2[r, 0] = y
    _apply_generic(Y2, lo, hi, ev_prog, ev_w, PT, tmp, err, False)
    for r in range(out_rows.shape[0]):
        rr = out_rows[r]
        v, fl = _add(X_state[pid, rr], _delta(Y2[rr, 0], Y[rr, 0]))
        f |= fl
        X_state[pid, rr] = v
    if f < 0:
        err[0] = ERR_OVERFLOW


@jit_inline
def _u_row(GT, U, row, v0nz):
    """U[row] = G v0 = sum of the rows ``v0nz`` of GT (``v0`` is a 0/1 vector:
    plan_linear sets its H and NOSTART rows to 1)."""
    D = GT.shape[0]
    j0 = v0nz[0]
    for i in range(D):
        U[row, i] = GT[j0, i]
    f = np.int64(0)
    for jj in range(1, v0nz.shape[0]):
        j = v0nz[jj]
        for i in range(D):
            a = U[row, i]
            b = GT[j, i]
            us = _wadd(a, b)
            f |= _ovf(a, b, us)
            U[row, i] = us
    return f

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
All programs live in one packed int64 table ``PT`` (see :func:`pack_programs`):
``o = PT[p]`` is the offset of program ``p``; ``PT[o:o+4]`` holds its flags
and its numbers of triplets, reset rows and END triplets, followed by the
triplets ``(dst, src, wk)`` (``x'[dst] += coef * x[src]`` with ``coef = 1``
when ``wk < 0`` and ``coef = ev_w[e, wk]`` otherwise), the reset rows (zeroed
by a negation), and the END triplets (the triplets whose ``dst`` is an output
row).

In place: a group of one event whose program allows it (flag ``F_LEFT``)
is applied in place: resets first, then the triplets in an order where every
row is read before another triplet writes it (a self-loop reads and writes in
one statement); ``F_RIGHT`` is the same for the transposed map (the reverse
order). Programs whose triplets form a cycle, and groups of several events,
take the generic path (all contributions from the pre-state into ``tmp``,
then resets, then adds).

Loops: each segment first runs a per-mode fast loop (one event per group,
every program in place; :func:`_within_fast`, :func:`_emit_fast`,
:func:`_slide_fast`, :func:`_vector_fast`), which falls back to the general
loop of :func:`run_segments` (groups of equal time stamps) when it meets a
tie or another program. What made the difference, measured (Numba 0.68):
helpers small enough to inline (a non-inlined call with several array
arguments costs 60-100 ns), no array reassigned inside an event loop, no
array argument written by an inlined helper (both add reference counting to
every iteration), branch-free overflow tests, few live arrays in a loop
(register pressure), loops over slices from index 0 (no wraparound code).
About 25 ns per event for WITHIN of SEQ(A, B, C), whatever the window.

All arrays are C-contiguous NumPy arrays; state is int64 (exact, with
overflow detection) or float64. Invariants: within a segment events are
sorted by time; segments are partitions; the kernels are ``nogil`` and a
call only writes the ``X_state`` / ``next_k`` rows of its own segments, so
disjoint sets of segments may run in parallel threads.
"""

from __future__ import annotations

import numpy as np

from numba.core import types
from numba.extending import overload

from ._jit import jit, jit_inline

MODE_NONE = 0  # no window: one result per partition at the end
MODE_WITHIN = 1  # WITHIN w: running total of matches with last - first < w
MODE_EMIT = 2  # WITHIN w EMIT CHANGES: result at given times t over (t - w, t]
MODE_SLIDE = 3  # WITHIN w SLIDE s: result per window [k s, k s + w)
MODE_EMIT_UNBOUNDED = 4  # EMIT CHANGES without WITHIN

ERR_OVERFLOW = 1

# program flags (PT[PT[p]])
F_LEFT = 1  # a one-event group may be applied in place, triplets in order
F_RIGHT = 2  # the transposed map may be applied in place, triplets in reverse order
F_END = 4  # the program binds the pattern's END occurrence
F_DELTA = 8  # WITHIN: the output rows change by sum(coef * x[src]) over the END triplets
F_FAST = 16  # F_LEFT and F_RIGHT: the fast loops may run it
F_FASTW = 32  # F_FAST, and F_DELTA if F_END: the WITHIN fast loop may run it
HDR = 4  # header words per program: flags, n_trip, n_reset, n_end


# ---------------------------------------------------------------------- arithmetic helpers
# int64 state is exact and flags overflow in err[0]; float64 state is plain arithmetic.
# The dtype is resolved at compile time by tiny *scalar* overloads (_wadd, _wmul, _ovf,
# _big, _mul_ovf); the helpers over arrays are ordinary force-inlined functions built on
# them (an overload taking arrays brought reference counting into the inner loops).
# Loops are branch-free: a data-dependent branch (a sign test) mispredicts, and a runtime
# branch around two loop versions measured 2.5x slower than either loop alone. Overflow
# tests run on unsigned (wrapping) sums: LLVM folds tests on a wrapped *signed* sum away,
# since signed overflow is undefined for it. After an overflow the values are garbage;
# the caller stops and raises.

_I64_MAX = 9223372036854775807
_U64_MAX = 18446744073709551615
_INLINE = {"forceinline": True, "nogil": True}


def _wadd(a, b):
    """a + b, wrapping for integers."""
    raise NotImplementedError


def _wmul(a, b):
    """a * b, wrapping for integers."""
    raise NotImplementedError


def _ovf(a, b, s):
    """Negative iff the integer sum ``s = _wadd(a, b)`` overflowed (0 for floats)."""
    raise NotImplementedError


def _big(a, b):
    """True when the integer product a * b may not fit in int64 (False for floats)."""
    raise NotImplementedError


def _mul_ovf(a, b):
    """Exact test: the integer product a * b overflows int64 (False for floats)."""
    raise NotImplementedError


def _zero(a):
    """The additive identity of ``a``'s semiring (0; the order semiring's 0 too)."""
    raise NotImplementedError


def _one(a):
    """The multiplicative identity of ``a``'s semiring (1; the order semiring: 2**64 - 1)."""
    raise NotImplementedError


def _delta(new, old):
    """What to add to a running total that holds ``old`` to make it hold ``new``."""
    raise NotImplementedError


def _is_order(a) -> bool:
    """The element type of the order semiring: uint64 (see :func:`_zero`)."""
    return isinstance(a, types.Integer) and not a.signed


def _is_exact(a) -> bool:
    return isinstance(a, types.Integer) and a.signed


@overload(_wadd, jit_options=_INLINE)
def _ov_wadd(a, b):
    if _is_order(a):
        def impl(a, b):
            return max(a, b)
        return impl
    if _is_exact(a):
        def impl(a, b):
            return np.int64(np.uint64(a) + np.uint64(b))
        return impl

    def impl(a, b):
        return a + b
    return impl


@overload(_wmul, jit_options=_INLINE)
def _ov_wmul(a, b):
    if _is_order(a):
        def impl(a, b):
            return min(a, b)
        return impl
    if _is_exact(a):
        def impl(a, b):
            return np.int64(np.uint64(a) * np.uint64(b))
        return impl

    def impl(a, b):
        return a * b
    return impl


@overload(_ovf, jit_options=_INLINE)
def _ov_ovf(a, b, s):
    if _is_exact(a):
        def impl(a, b, s):
            return (np.int64(a) ^ s) & (np.int64(b) ^ s)
        return impl

    def impl(a, b, s):
        return np.int64(0)
    return impl


@overload(_big, jit_options=_INLINE)
def _ov_big(a, b):
    if _is_exact(a):
        def impl(a, b):
            return abs(np.float64(a) * np.float64(b)) >= 9.0e18
        return impl

    def impl(a, b):
        return False
    return impl


@overload(_mul_ovf, jit_options=_INLINE)
def _ov_mul_ovf(a, b):
    if _is_exact(a):
        def impl(a, b):
            if a == 0 or b == 0:
                return False
            if a == -_I64_MAX - 1 or b == -_I64_MAX - 1:
                return not (a == 1 or b == 1)
            return abs(a) > _I64_MAX // abs(b)
        return impl

    def impl(a, b):
        return False
    return impl


@overload(_zero, jit_options=_INLINE)
def _ov_zero(a):
    if _is_order(a):
        def impl(a):
            return np.uint64(0)
        return impl
    if _is_exact(a):
        def impl(a):
            return np.int64(0)
        return impl

    def impl(a):
        return np.float64(0.0)
    return impl


@overload(_one, jit_options=_INLINE)
def _ov_one(a):
    if _is_order(a):
        def impl(a):
            return np.uint64(_U64_MAX)
        return impl
    if _is_exact(a):
        def impl(a):
            return np.int64(1)
        return impl

    def impl(a):
        return np.float64(1.0)
    return impl


@overload(_delta, jit_options=_INLINE)
def _ov_delta(new, old):
    if _is_order(new):
        def impl(new, old):  # idempotent sum: adding the whole new state again is exact
            return new
        return impl

    def impl(new, old):
        return new - old
    return impl


# The helpers below return an overflow flag (negative: overflow) instead of writing
# ``err``: a small inlined helper that conditionally stores into an array argument kept
# reference-count updates (atomic increments) in the caller's loop. Callers OR the flags
# into a local and test it once per event.

@jit_inline
def _add(a, b):
    """(a + b, flag)."""
    s = _wadd(a, b)
    return s, _ovf(a, b, s)


@jit_inline
def _mul(a, w):
    """(a * w, flag); the exact test only when |a w| may reach 9e18."""
    f = np.int64(0)
    if _big(a, w) and _mul_ovf(a, w):
        f = np.int64(-1)
    return _wmul(a, w), f


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


@jit
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


@jit
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


# Fast loops: one segment whose times are strictly increasing and whose programs all apply
# in place (flag F_FAST; F_FASTW under WITHIN). They find out themselves: on a tie or
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

ST_OK = 0
ST_SLOW = 1
ST_GROW_U = 2
ST_GROW_OUT = 3
ST_OVERFLOW = 4
_U64 = np.uint64


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


@jit_inline
def _fflip(W, D, f_hi, e, ev_prog, ev_w, nw, PT, capm1, j0, j1):
    """The flip of the pop loop (see above); returns the overflow flag. Takes few arrays."""
    G0 = D * D
    U0 = 2 * D * D
    f = np.int64(0)
    _fident(W, G0, D)
    for g in range(e - 1, f_hi - 1, -1):
        f |= _fapply(W, G0, D, g, ev_prog, ev_w, nw, PT, True)
        row = U0 + (1 + (g & capm1)) * D
        for i in range(D):
            W[_U64(row + i)] = W[_U64(G0 + j0 * D + i)]
        if j1 >= 0:
            f |= _frow_add(W, row, G0 + j1 * D, D)
    _fident(W, 0, D)
    return f


@jit
def _within_fast(w, n, replay_end, ev_time, ev_prog, ev_w, nw, PT, W, D, capm1, j0, j1, xrow):
    """WITHIN w over one segment (``n`` events, the event arrays its slices): adds to the
    output totals ``xrow`` the matches ending in it. Returns ``(status, need, time)``."""
    U0 = 2 * D * D
    f_lo = 0
    f_hi = 0
    ovf = np.int64(0)
    _fident(W, 0, D)
    for e in range(n):
        t = ev_time[_U64(e)]
        o = PT[_U64(ev_prog[_U64(e)])]
        fl = PT[_U64(o)]
        if (fl & F_FASTW) == 0 or (e > 0 and t == ev_time[_U64(e - 1)]):
            return ST_SLOW, 0, 0
        bound = t - w
        while f_lo < e and ev_time[_U64(f_lo)] <= bound:
            if f_lo == f_hi:
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
        ovf |= _fapply(W, 0, D, e, ev_prog, ev_w, nw, PT, False)
        if ovf < 0:
            return ST_OVERFLOW, 0, t
    return ST_OK, 0, 0


@jit
def _emit_fast(w, n, pid, emit_times, ev_time, ev_prog, ev_w, nw, PT, out_rows, W, D, capm1, j0, j1,
               out_pid, out_key, out_val, n_out):
    """WITHIN w EMIT CHANGES over one segment (``n`` events; ``emit_times`` its output
    times): a result at every output time te, over (te - w, te].
    Returns ``(status, n_out, need, time)``."""
    U0 = 2 * D * D
    n_out_rows = out_rows.shape[0]
    out0 = out_rows[0] * D
    f_lo = 0
    f_hi = 0
    ovf = np.int64(0)
    _fident(W, 0, D)
    ep = 0
    ep_hi = emit_times.shape[0]
    e = 0
    t = 0
    if n > 0:
        t = ev_time[_U64(0)]
        if (PT[_U64(PT[_U64(ev_prog[_U64(0)])])] & F_FAST) == 0:
            return ST_SLOW, n_out, 0, 0
    while True:
        # next action: a result at output time te < t, or pushing event e
        query = ep < ep_hi and (e == n or emit_times[_U64(ep)] < t)
        if not query and e == n:
            break
        te = emit_times[_U64(ep)] if query else t
        bound = te - w
        while f_lo < e and ev_time[_U64(f_lo)] <= bound:
            if f_lo == f_hi:
                if e - f_hi > capm1:
                    return ST_GROW_U, n_out, e - f_hi, 0
                ovf |= _fflip(W, D, f_hi, e, ev_prog, ev_w, nw, PT, capm1, j0, j1)
                f_hi = e
            f_lo += 1
        if query:
            ep += 1
            if f_lo < e:
                ui = U0 + ((1 + (f_lo & capm1)) * D if f_lo < f_hi else 0)
                y0, f = _fdot(W, out0, ui, D)
                ovf |= f
                if y0 != 0:
                    if n_out == out_pid.shape[0]:
                        return ST_GROW_OUT, n_out, n_out + 1, 0
                    out_pid[n_out] = 0
                    out_key[n_out] = te
                    out_val[n_out, 0] = y0
                    for r in range(1, n_out_rows):
                        y, f = _fdot(W, out_rows[r] * D, ui, D)
                        ovf |= f
                        out_val[n_out, r] = y
                    n_out += 1
        else:
            ovf |= _fapply(W, 0, D, e, ev_prog, ev_w, nw, PT, False)
            e += 1
            if e < n:
                t_prev = t
                t = ev_time[_U64(e)]
                if t == t_prev or (PT[_U64(PT[_U64(ev_prog[_U64(e)])])] & F_FAST) == 0:
                    return ST_SLOW, n_out, 0, 0
        if ovf < 0:
            return ST_OVERFLOW, n_out, 0, te
    return ST_OK, n_out, 0, 0


@jit
def _slide_fast(w, s, n, k, slide_limit, ev_time, ev_prog, ev_w, nw, PT, out_rows, W, D, capm1, j0, j1,
                out_key, out_val, n_out, e0, f_lo, f_hi):
    """WITHIN w SLIDE s over one segment (``n`` events): a result per window
    [k s, k s + w) closed before slide_limit. Returns
    ``(status, n_out, k, need, time, e, f_lo, f_hi)``.

    Resumable: on ST_GROW_OUT the caller grows the output arrays and calls again
    with the returned ``k, e, f_lo, f_hi`` (``W`` kept); a fresh start has
    ``e0 = f_lo = f_hi = 0``.
    """
    U0 = 2 * D * D
    n_out_rows = out_rows.shape[0]
    out0 = out_rows[0] * D
    ovf = np.int64(0)
    if e0 == 0:
        _fident(W, 0, D)
    for e in range(e0, n + 1):
        at_end = e == n
        t = 0
        if not at_end:
            t = ev_time[_U64(e)]
            if (PT[_U64(PT[_U64(ev_prog[_U64(e)])])] & F_FAST) == 0 or (e > 0 and t == ev_time[_U64(e - 1)]):
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
                if f_lo == f_hi:
                    if e - f_hi > capm1:
                        return ST_GROW_U, n_out, k, e - f_hi, 0, e, f_lo, f_hi
                    ovf |= _fflip(W, D, f_hi, e, ev_prog, ev_w, nw, PT, capm1, j0, j1)
                    f_hi = e
                f_lo += 1
            if f_lo < e and k >= 0:
                ui = U0 + ((1 + (f_lo & capm1)) * D if f_lo < f_hi else 0)
                y0, f = _fdot(W, out0, ui, D)
                ovf |= f
                if y0 != 0:
                    if n_out == out_key.shape[0] and ovf >= 0:
                        return ST_GROW_OUT, n_out, k, n_out + 1, 0, e, f_lo, f_hi
                    out_key[n_out] = k
                    out_val[n_out, 0] = y0
                    for r in range(1, n_out_rows):
                        y, f = _fdot(W, out_rows[r] * D, ui, D)
                        ovf |= f
                        out_val[n_out, r] = y
                    n_out += 1
            k += 1
        if ovf < 0:
            return ST_OVERFLOW, n_out, k, 0, t, e, f_lo, f_hi
        if at_end:
            break
        ovf |= _fapply(W, 0, D, e, ev_prog, ev_w, nw, PT, False)
        if ovf < 0:
            return ST_OVERFLOW, n_out, k, 0, t, e, f_lo, f_hi
    return ST_OK, n_out, k, 0, 0, n, f_lo, f_hi


@jit
def _vector_fast(mode, lo, hi, pid, ep, ep_hi, emit_times, ev_time, ev_prog, ev_w, PT, out_rows, Xv, X_state,
                 out_pid, out_key, out_val, n_out, err):
    """No window (running vector per partition), and EMIT CHANGES without WITHIN (the
    running totals at every output time). Returns ``(status, n_out)``."""
    D = Xv.shape[0]
    n_out_rows = out_rows.shape[0]
    out0 = out_rows[0]
    for r in range(D):
        Xv[r, 0] = X_state[pid, r]
    t_prev = 0
    ovf = np.int64(0)
    for e in range(lo, hi + 1):
        t = 0
        if e < hi:
            t = ev_time[e]
            if (PT[PT[ev_prog[e]]] & F_LEFT) == 0 or (e > lo and t == t_prev):
                return ST_SLOW, n_out
            t_prev = t
        if mode == MODE_EMIT_UNBOUNDED:
            while ep < ep_hi and (e == hi or emit_times[ep] < t):
                if Xv[out0, 0] != 0:
                    if n_out == out_pid.shape[0]:
                        return ST_GROW_OUT, n_out
                    out_pid[n_out] = pid
                    out_key[n_out] = emit_times[ep]
                    for r in range(n_out_rows):
                        out_val[n_out, r] = Xv[out_rows[r], 0]
                    n_out += 1
                ep += 1
        if e == hi:
            break
        ovf |= _apply_fast(Xv, e, ev_prog, ev_w, PT, False)
        if ovf < 0:
            err[0] = ERR_OVERFLOW
            err[1] = pid
            err[2] = t
            break
    for r in range(D):
        X_state[pid, r] = Xv[r, 0]
    return ST_OK, n_out


@jit
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


@jit
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
    own jitted driver around its fast loop, and segments the fast loop leaves
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
    if not flat_ok:
        slow[:] = True
        outs = (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros((0, len(out_rows)), v0.dtype))
    elif mode == MODE_WITHIN:
        _drive_within(w, seg_lo, seg_hi, seg_pid, seg_replay, ev_time, ev_prog, ev_w, PT, v0, j0, j1, X_state,
                      err, slow)
        outs = (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros((0, len(out_rows)), v0.dtype))
    elif mode == MODE_EMIT:
        outs = _drive_emit(w, seg_lo, seg_hi, seg_pid, seg_emit_lo, seg_emit_hi, emit_times, ev_time, ev_prog,
                           ev_w, PT, v0, j0, j1, out_rows, err, slow)
    elif mode == MODE_SLIDE:
        outs = _drive_slide(w, s, seg_lo, seg_hi, seg_pid, slide_limit, ev_time, ev_prog, ev_w, PT, v0, j0, j1,
                            out_rows, next_k, err, slow)
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


@jit
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
    fcap = 64
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
    n_out = 0
    fcap = 64
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
    n_out = 0
    fcap = 64
    Wk = _flat_workspace(D, fcap, v0)
    for sg in range(seg_lo.shape[0]):
        lo = seg_lo[sg]
        hi = seg_hi[sg]
        pid = seg_pid[sg]
        n_save = n_out
        while True:
            k = next_k[pid]
            e_r = 0
            f_lo_r = 0
            f_hi_r = 0
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


@jit
def _drive_vector(mode, seg_lo, seg_hi, seg_pid, seg_emit_lo, seg_emit_hi, emit_times, ev_time, ev_prog, ev_w, PT,
                  v0, out_rows, X_state, err, slow):
    """No window and EMIT CHANGES without WITHIN: the fast loop over every segment."""
    D = v0.shape[0]
    ocap = 0
    if mode == MODE_EMIT_UNBOUNDED:
        for sg in range(seg_lo.shape[0]):
            ocap += seg_emit_hi[sg] - seg_emit_lo[sg]
    out_pid = np.empty(ocap, np.int64)
    out_key = np.empty(ocap, np.int64)
    out_val = np.empty((ocap, out_rows.shape[0]), v0.dtype)
    n_out = 0
    Xv = np.zeros((D, 1), v0.dtype)
    for sg in range(seg_lo.shape[0]):
        n_save = n_out
        status, n_out = _vector_fast(mode, seg_lo[sg], seg_hi[sg], seg_pid[sg], seg_emit_lo[sg], seg_emit_hi[sg],
                                     emit_times, ev_time, ev_prog, ev_w, PT, out_rows, Xv, X_state, out_pid,
                                     out_key, out_val, n_out, err)
        if status != ST_OK:  # ST_SLOW: X_state untouched (the loop writes it at the end)
            n_out = n_save
            slow[sg] = True
        elif err[0] != 0:
            break
    return out_pid[:n_out], out_key[:n_out], out_val[:n_out]


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
    if mode == MODE_EMIT or mode == MODE_EMIT_UNBOUNDED:
        for sg in range(seg_lo.shape[0]):
            ocap += seg_emit_hi[sg] - seg_emit_lo[sg]
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
            for gi in range(ng + 1):
                t = ev_time[gstart[gi]] if gi < ng else 0
                if mode == MODE_EMIT_UNBOUNDED:
                    while ep < ep_hi and (gi == ng or emit_times[ep] < t):
                        if Xv[out0, 0] != 0:
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


# ---------------------------------------------------------------------- programs

def pack_programs(progs, out_rows):
    """Pack programs into the int64 table ``PT`` of :func:`run_segments` (plain Python).

    ``progs``: one ``(triplets, resets, is_end)`` per program id, ``triplets`` a
    list of ``(dst, src, wk)``. Orders the triplets for in-place application
    and sets the flags (see the module docstring).
    """
    outs = {int(r) for r in out_rows}
    header = len(progs)
    body: list[int] = []
    offs = []
    for trips, resets, is_end in progs:
        trips = [tuple(int(x) for x in t) for t in trips]
        resets = sorted({int(r) for r in resets})
        order = _inplace_order(trips)
        flags = F_END if is_end else 0
        if order is not None:
            trips = [trips[i] for i in order]
            srcs = {t[1] for t in trips}
            dsts = {t[0] for t in trips}
            if not (set(resets) & srcs):
                flags |= F_LEFT
            if not (set(resets) & dsts):
                flags |= F_RIGHT
        ends = [t for t in trips if t[0] in outs]
        if not (set(resets) & outs) and not any(t[1] in outs for t in ends):
            flags |= F_DELTA
        if flags & F_LEFT and flags & F_RIGHT:
            flags |= F_FAST
            if not (flags & F_END) or flags & F_DELTA:
                flags |= F_FASTW
        offs.append(header + len(body))
        body += [flags, len(trips), len(resets), len(ends)]
        for t in trips:
            body += list(t)
        body += resets
        for t in ends:
            body += list(t)
    return np.array(offs + body, np.int64)


def _inplace_order(trips):
    """An order of ``trips`` in which every row is read before another triplet writes it.

    Triplet ``k`` must precede every other triplet ``k'`` with ``dst[k'] == src[k]``
    (Kahn's algorithm, stable); None when the constraints form a cycle.
    """
    n = len(trips)
    succ: list[list[int]] = [[] for _ in range(n)]
    indeg = [0] * n
    for k in range(n):
        for k2 in range(n):
            if k2 != k and trips[k2][0] == trips[k][1]:
                succ[k].append(k2)
                indeg[k2] += 1
    ready = [k for k in range(n) if indeg[k] == 0]
    out = []
    while ready:
        k = ready.pop(0)
        out.append(k)
        for k2 in succ[k]:
            indeg[k2] -= 1
            if indeg[k2] == 0:
                ready.append(k2)
                ready.sort()
    return out if len(out) == n else None


# ---------------------------------------------------------------------- input preparation

@jit
def count_events(n_parts, cls, cls_prog, pid):
    """Per partition, the new events that are kept (``cls_prog[cls[i]] >= 0``)."""
    count = np.zeros(n_parts, np.int64)
    for i in range(cls.shape[0]):
        count[pid[i]] += cls_prog[cls[i]] >= 0
    return count


@jit
def fill_events(cls, cls_prog, pid, t, w, pos, out_t, out_prog, out_w):
    """Scatter the kept new events to ``pos[partition]`` (advanced in place).

    Branch-free (kept and dropped events come in random order): a dropped event is
    written to the spare last slot of the output arrays, which the caller ignores.
    """
    nw = w.shape[1]
    spare = out_t.shape[0] - 1
    for i in range(cls.shape[0]):
        pg = cls_prog[cls[i]]
        keep = pg >= 0
        p = pid[i]
        j0 = pos[p]
        j = j0 if keep else spare
        pos[p] = j0 + keep
        out_t[j] = t[i]
        out_prog[j] = pg
        for c in range(nw):
            out_w[j, c] = w[i, c]


@jit
def fill_carry(c_t, c_prog, c_w, c_pid, pos, out_t, out_prog, out_w):
    """Scatter the carried events to ``pos[partition]`` (advanced in place)."""
    nw = c_w.shape[1]
    for i in range(c_t.shape[0]):
        p = c_pid[i]
        j = pos[p]
        pos[p] = j + 1
        out_t[j] = c_t[i]
        out_prog[j] = c_prog[i]
        for c in range(nw):
            out_w[j, c] = c_w[i, c]


@jit
def _end_times(ev_time, ev_prog, prog_flags, out):
    """Distinct times of the END events among the slices (time-sorted) into ``out``;
    returns their number (loops from 0 over slices: no index wraparound)."""
    m = 0
    t_last = 0
    for e in range(ev_prog.shape[0]):  # branch-free: END events come in random order
        t = ev_time[e]
        keep = ((prog_flags[ev_prog[e]] & F_END) != 0) & ((m == 0) | (t != t_last))
        out[m] = t  # out has a spare slot
        m += keep
        t_last = t if keep else t_last
    return m


@jit
def segment_emit_schedule(seg_lo, seg_hi, seg_replay, ev_time, ev_prog, prog_flags):
    """Output times of EMIT when groups are partitions: per segment, the distinct times of
    its new (not replayed) END events, in order. Returns ``(emit_lo, emit_hi, times)``."""
    n_seg = seg_lo.shape[0]
    emit_lo = np.empty(n_seg, np.int64)
    emit_hi = np.empty(n_seg, np.int64)
    n = 0
    for sg in range(n_seg):
        n += seg_hi[sg] - seg_lo[sg] - seg_replay[sg]
    times = np.empty(n + 1, np.int64)
    m = 0
    for sg in range(n_seg):
        a = seg_lo[sg] + seg_replay[sg]
        b = seg_hi[sg]
        emit_lo[sg] = m
        m += _end_times(ev_time[a:b], ev_prog[a:b], prog_flags, times[m:])
        emit_hi[sg] = m
    return emit_lo, emit_hi, times[:m].copy()


@jit
def rank_counts(rank_of_pid, pid, counts):
    """counts[rank_of_pid[p]] += 1 for every result row of partition p."""
    for i in range(pid.shape[0]):
        counts[rank_of_pid[pid[i]]] += 1


@jit
def rank_scatter(rank_of_pid, pid, key, val, pos, out_pid, out_key, out_val):
    """Stable counting sort of result rows by the rank of their partition: row i goes to
    ``pos[rank]`` (advanced in place); call once per chunk of results, in output order."""
    m = val.shape[1]
    for i in range(pid.shape[0]):
        r = rank_of_pid[pid[i]]
        j = pos[r]
        pos[r] = j + 1
        out_pid[j] = pid[i]
        out_key[j] = key[i]
        for c in range(m):
            out_val[j, c] = val[i, c]


@jit
def keys_increase(pid, key):
    """True when within every run of equal partition ids the keys strictly increase."""
    for i in range(1, pid.shape[0]):
        if pid[i] == pid[i - 1] and key[i] <= key[i - 1]:
            return False
    return True


@jit
def carry_index(seg_lo, seg_hi, seg_pid, ev_time, mode, limit, w, s, next_k):
    """Events a later batch still needs: per segment a suffix (time-sorted segments).

    WITHIN / EMIT: time > limit - w; SLIDE: time >= next_k[pid] * s.
    Returns ``(idx, pid)`` of the kept events in segment order.
    """
    n = 0
    first = np.empty(seg_lo.shape[0], np.int64)
    for sg in range(seg_lo.shape[0]):
        if mode == MODE_SLIDE:
            bound = next_k[seg_pid[sg]] * s
            a = seg_hi[sg]
            while a > seg_lo[sg] and ev_time[a - 1] >= bound:
                a -= 1
        else:
            bound = limit - w
            a = seg_hi[sg]
            while a > seg_lo[sg] and ev_time[a - 1] > bound:
                a -= 1
        first[sg] = a
        n += seg_hi[sg] - a
    idx = np.empty(n, np.int64)
    pid = np.empty(n, np.int64)
    j = 0
    for sg in range(seg_lo.shape[0]):
        for e in range(first[sg], seg_hi[sg]):
            idx[j] = e
            pid[j] = seg_pid[sg]
            j += 1
    return idx, pid


@jit
def emit_schedule(n_groups, group_of_pid, t, cls, cls_prog, prog_flags, pid):
    """Sorted distinct END-event times per group (EMIT modes).

    ``t`` is time-sorted (batch order). Returns ``(ptr, times)``: group ``g``'s
    times are ``times[ptr[g]:ptr[g+1]]``.
    """
    cnt = np.zeros(n_groups + 1, np.int64)
    for i in range(t.shape[0]):
        pg = cls_prog[cls[i]]
        if pg >= 0 and prog_flags[pg] & F_END:
            cnt[group_of_pid[pid[i]] + 1] += 1
    for g in range(n_groups):
        cnt[g + 1] += cnt[g]
    pos = cnt[:n_groups].copy()
    times = np.empty(cnt[n_groups], np.int64)
    for i in range(t.shape[0]):
        pg = cls_prog[cls[i]]
        if pg >= 0 and prog_flags[pg] & F_END:
            g = group_of_pid[pid[i]]
            j = pos[g]
            if j == cnt[g] or times[j - 1] != t[i]:
                times[j] = t[i]
                pos[g] = j + 1
    # compact (duplicates left gaps at the end of each group's range)
    ptr = np.zeros(n_groups + 1, np.int64)
    m = 0
    for g in range(n_groups):
        for j in range(cnt[g], pos[g]):
            times[m] = times[j]
            m += 1
        ptr[g + 1] = m
    return ptr, times[:m].copy()


def view_words(name: str):
    """The two 64-bit words of the Arrow string view of ``name`` (None: longer than 12 bytes)."""
    b = name.encode("utf-8")
    if len(b) > 12:
        return None
    n = len(b)
    b = b + bytes(12 - n)
    return n | (int.from_bytes(b[:4], "little") << 32), int.from_bytes(b[4:12], "little")


def view_hash(words):
    """A collision-free hash of inline views: ``(m1, m2, shift, tab, cand_lo, cand_hi)``.

    Slot ``((lo * m1) ^ (hi * m2)) >> shift`` of ``tab`` holds 1 + the index of the
    candidate with those words (0: none); ``cand_lo[0], cand_hi[0]`` is a sentinel
    no inline view has (its length field exceeds 12).
    """
    K = len(words)
    bits = 6
    while (1 << bits) < 4 * max(K, 1):
        bits += 1
    rng = np.random.default_rng(12345)
    mask = (1 << 64) - 1
    while True:
        m1 = int(rng.integers(1, 1 << 62)) * 2 + 1
        m2 = int(rng.integers(1, 1 << 62)) * 2 + 1
        slots = [(((lo * m1) & mask) ^ ((hi * m2) & mask)) >> (64 - bits) for lo, hi in words]
        if len(set(slots)) == K:
            break
    tab = np.zeros(1 << bits, np.int64)
    for c, sl in enumerate(slots):
        tab[sl] = c + 1
    cand_lo = np.array([0xFFFFFFFF] + [lo for lo, _ in words], np.uint64)
    cand_hi = np.array([0] + [hi for _, hi in words], np.uint64)
    return np.uint64(m1), np.uint64(m2), np.uint64(64 - bits), tab, cand_lo, cand_hi


# view masks by length (index 13: longer than 12 bytes, keeps only the length field,
# which no candidate matches): bytes past the length should be zero; mask them anyway
_VIEW_LO_MASK = np.array([(1 << (32 + 8 * n)) - 1 for n in range(4)] + [(1 << 64) - 1] * 9 + [0xFFFFFFFF],
                         np.uint64)
_VIEW_HI_MASK = np.array([0] * 5 + [(1 << (8 * (n - 4))) - 1 for n in range(5, 13)] + [0], np.uint64)


@jit
def view_codes(views, m1, m2, shift, tab, cand_lo, cand_hi, codes):
    """Type code of each Arrow string view (1 + candidate index; 0: none) into ``codes``.

    ``views`` is the (n, 2) uint64 view buffer of a ``string_view`` array. Strings
    longer than 12 bytes are not inline and get code 0 (the caller only takes this
    path when no candidate is longer). Branch-free: types come in random order.
    Callers pass slices rather than an index range: loops from 0 let LLVM drop the
    negative-index wraparound (measured 2.7x faster).
    """
    lo_mask = _VIEW_LO_MASK
    hi_mask = _VIEW_HI_MASK
    for i in range(codes.shape[0]):
        lo = views[i, 0]
        hi = views[i, 1]
        ln = lo & np.uint64(0xFFFFFFFF)
        ix = ln if ln < np.uint64(13) else np.uint64(13)
        lo = lo & lo_mask[ix]
        hi = hi & hi_mask[ix]
        c = tab[((lo * m1) ^ (hi * m2)) >> shift]
        codes[i] = c * ((cand_lo[c] == lo) & (cand_hi[c] == hi))


@jit
def min_max(vals):
    lo = vals[0]
    hi = vals[0]
    for i in range(vals.shape[0]):
        v = vals[i]
        lo = min(lo, v)
        hi = max(hi, v)
    return lo, hi


@jit
def dense_ids_direct(vals, vmin, direct, n_known):
    """Dense id per int64 key through a direct table (``direct[v - vmin]``, -1: new key),
    new keys numbered from ``n_known`` in order of first appearance.
    Returns ``(ids, new_keys)``."""
    n = vals.shape[0]
    ids = np.empty(n, np.int64)
    new_keys = np.empty(min(n, direct.shape[0]), np.int64)  # no reassignment inside the loop
    n_new = 0
    for i in range(n):
        j = vals[i] - vmin
        p = direct[j]
        if p < 0:
            p = n_known + n_new
            direct[j] = p
            new_keys[n_new] = vals[i]
            n_new += 1
        ids[i] = p
    return ids, new_keys[:n_new].copy()


@jit
def combine_bits(codes, bind_of_code, neg_of_code, masks, mask_bit, mask_is_neg, mask_code_ok):
    """Bind and negation bits per event: by type code, plus predicate-gated bits.

    ``masks[:, j]`` is the predicate outcome of occurrence (or negation) ``j``,
    which sets bit ``mask_bit[j]`` when ``mask_code_ok[j, code]``.
    """
    n = codes.shape[0]
    bind = np.empty(n, np.uint64)
    neg = np.empty(n, np.uint64)
    for i in range(n):
        c = codes[i]
        b = bind_of_code[c]
        g = neg_of_code[c]
        for j in range(masks.shape[1]):
            if masks[i, j] and mask_code_ok[j, c]:
                if mask_is_neg[j]:
                    g |= np.uint64(1) << np.uint64(mask_bit[j])
                else:
                    b |= np.uint64(1) << np.uint64(mask_bit[j])
        bind[i] = b
        neg[i] = g
    return bind, neg


@jit
def dense_ids(vals, tab_key, tab_id, n_known):
    """Dense id per int64 key (open addressing), new keys numbered from ``n_known``.

    Returns ``(ids, new_keys, tab_key, tab_id)``; the table is grown (and
    returned) when more than half full. Empty slots have ``tab_id < 0``.
    """
    n = vals.shape[0]
    size = tab_key.shape[0]
    ids = np.empty(n, np.int64)
    new_keys = np.empty(16, np.int64)
    n_new = 0
    used = n_known
    last_key = np.int64(0)
    last_id = np.int64(-1)
    for i in range(n):
        v = vals[i]
        if last_id >= 0 and v == last_key:
            ids[i] = last_id
            continue
        j = np.int64((np.uint64(v) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(20)) & (size - 1)
        while True:
            if tab_id[j] < 0:
                if 2 * (used + 1) > size:
                    size2 = 2 * size
                    k2 = np.zeros(size2, np.int64)
                    i2 = np.full(size2, -1, np.int64)
                    for jj in range(size):
                        if tab_id[jj] >= 0:
                            h = np.int64((np.uint64(tab_key[jj]) * np.uint64(0x9E3779B97F4A7C15))
                                         >> np.uint64(20)) & (size2 - 1)
                            while i2[h] >= 0:
                                h = (h + 1) & (size2 - 1)
                            k2[h] = tab_key[jj]
                            i2[h] = tab_id[jj]
                    tab_key = k2
                    tab_id = i2
                    size = size2
                    j = np.int64((np.uint64(v) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(20)) & (size - 1)
                    continue
                tab_key[j] = v
                tab_id[j] = used
                if n_new == new_keys.shape[0]:
                    nk = np.empty(2 * n_new, np.int64)
                    for c in range(n_new):  # a loop: slice assignment compiles shape-error formatting (~1.5 s cold)
                        nk[c] = new_keys[c]
                    new_keys = nk
                new_keys[n_new] = v
                n_new += 1
                used += 1
                ids[i] = tab_id[j]
                break
            if tab_key[j] == v:
                ids[i] = tab_id[j]
                break
            j = (j + 1) & (size - 1)
        last_key = v
        last_id = ids[i]
    return ids, new_keys[:n_new].copy(), tab_key, tab_id


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
                    for c in range(count):  # a loop: slice assignment compiles shape-error formatting
                        ub2[c] = ub[c]
                        un2[c] = un[c]
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

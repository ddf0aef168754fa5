"""WITHIN counts of a plain sequence with the window's map in registers (A-Seq's shape).

``SEQ(E_1, ..., E_L)`` counted under ``WITHIN w``, every program a chain of count steps:
occurrence ``i`` adds row ``i`` of the state to row ``i + 1`` (triplet ``(i + 1, i, -1)``), the
start vector is ``e_0`` and the output row is ``L``. Types may repeat (an event that binds
several occurrences applies their steps highest first) and local predicates may give the
events of one type different programs; no negation, no Kleene closure, no weights
(:func:`chain_bits` decides, from the program table). Ties may come in any order.

The loop is that of ``windows._within_inverse``: it keeps the window's map
``W = M_e ... M_f``; a new event multiplies it on the left (row ``i + 1 +=`` row ``i`` for each of
its occurrences), an event that leaves the window on the right by its inverse (column
``i -=`` column ``i + 1``), and an END event adds ``(W v0)[L - 1] = W[L - 1, 0]``, the partial
matches of its last step, to the partition's total. Only rows and columns ``0 .. L - 1`` are
kept: row ``L`` (the completed matches) feeds nothing but the total, which the END step reads
from row ``L - 1``. ``W`` is lower triangular with a unit diagonal, so column ``i`` changes
only in rows ``i + 1 .. L - 1`` and row ``i + 1`` only in columns ``0 .. i``.

A segment with ties takes :func:`_chain_group_loop`, which applies the events of a time stamp as one
map and so needs no tie order (the linear path skips ``order_ties`` for these queries).

What makes it fast: ``L`` is a compile-time constant (a ``_jit.variant`` per length,
``DRIVE_WITHIN_CHAIN[L]``, compiled when a query of that length first runs), ``W`` is a stack
array (``_jit.stack_int64``) whose indices are all constants once the loops are unrolled, so
LLVM keeps it in registers, and an event's occurrences are applied through masks (bit ``i`` of
``bits[prog]``), not branches. ``windows._within_inverse`` keeps ``W`` in memory, and each update
of an element waits on the store of the one before (docs/performance-log.md, session 39).
"""

from __future__ import annotations

import numpy as np

from .._jit import jit, jit_body, stack_int64, variant
from .constants import F_END, F_INV, HDR, ST_OK, ST_SLOW

#: The longest sequence with a loop of its own (``W`` of ``L * L`` registers; from about 5 steps
#: on they spill to the stack, still ahead of the loop over memory); longer ones take
#: ``windows._within_inverse``.
MAX_CHAIN = 6

# Compile-time constants of each variant (placeholders here): the sequence's length and L * L.
L = 3
LL = 9


def chain_bits(PT: np.ndarray, v0: np.ndarray) -> np.ndarray | None:
    """Per program of ``PT``, the bit mask of the occurrences it binds (bit ``i``: the step
    ``(i + 1, i, -1)``), when the programs are the count steps of one sequence of ``L <= MAX_CHAIN``
    occurrences started at ``e_0``, the END program's only END triplet ``(L, L - 1, -1)``; else None
    (plain Python, a few programs). ``L`` is the highest row a triplet names: rows past it (a row
    that the output rows of another stream's components read, ``paths/linear/run.py::_stream_rows``)
    are never written, and the loop leaves them as they are."""
    if len(PT) == 0 or len(v0) == 0 or v0[0] != 1 or np.count_nonzero(v0) != 1:
        return None
    n_prog = int(PT[0])
    k = 0
    for p in range(n_prog):
        o = int(PT[p])
        trips = PT[o + HDR:o + HDR + 3 * int(PT[o + 1])].reshape(-1, 3)
        if len(trips):
            k = max(k, int(trips[:, :2].max()))
    if not 1 <= k <= MAX_CHAIN:
        return None
    bits = np.zeros(n_prog, np.int64)
    for p in range(n_prog):
        o = int(PT[p])
        flags, n_trip, n_reset, n_end = (int(x) for x in PT[o:o + HDR])
        trips = PT[o + HDR:o + HDR + 3 * n_trip].reshape(-1, 3)
        ends = PT[o + HDR + 3 * n_trip + n_reset:o + HDR + 3 * n_trip + n_reset + 3 * n_end].reshape(-1, 3)
        if not flags & F_INV or n_reset:
            return None
        for d, s, wk in trips.tolist():
            if d != s + 1 or not 0 <= s < k or wk != -1 or bits[p] >> s & 1:
                return None
            bits[p] |= 1 << s
        is_end = bool(bits[p] >> (k - 1) & 1)
        if is_end != bool(flags & F_END) or ends.tolist() != ([[k, k - 1, -1]] if is_end else []):
            return None
    return bits


def _chain_loop(w, n, replay_end, ev_time, ev_prog, bits):
    """WITHIN ``w`` over one segment without ties (``n`` events, the event arrays its slices): the
    matches that end in it, after the first ``replay_end`` events (carried from an earlier batch:
    they rebuild the window). Returns ``(status, total)``: ``ST_SLOW`` (total unused) for a sum that
    leaves int64. Every value is a count of matches of a part of the window, never negative, and a sum
    of two such values that leaves int64 wraps to a negative one: the sign bits of the sums, OR-ed and
    tested once at the end, find every overflow (the values after one are garbage, and dropped); the
    subtractions cannot overflow.

    Branch-free: each step of the loop either takes the oldest event ``f`` out of the window (when
    it has left it: ``t_f <= t_e - w``) or takes event ``e`` in, and computes both updates with the
    other one's mask zero (an event leaves the window after 0, 1 or more arrivals, at random: a loop
    per arrival over the events that leave mispredicted about once an event; session 41, 1.3x)."""
    W = stack_int64(LL)
    for i in range(LL):
        W[i] = 0
    for i in range(L):
        W[i * L + i] = 1
    total = np.int64(0)
    ovf = np.int64(0)
    f = 0
    e = 0
    while e < n:
        out = np.int64((f < e) & (ev_time[f] <= ev_time[e] - w))  # 1: f leaves; 0: e arrives
        bf = bits[ev_prog[f]] * out
        b = bits[ev_prog[e]] * (1 - out)
        for s in range(L - 2, -1, -1):  # W <- W M_f^-1, steps highest first (column L - 1 stays)
            m = (bf >> s) & 1
            for r in range(s + 1, L):
                W[r * L + s] -= W[r * L + s + 1] * m
        total += W[(L - 1) * L] * ((b >> (L - 1)) & 1) * np.int64(e >= replay_end)  # an END event's matches
        ovf |= total
        for s in range(L - 2, -1, -1):  # W <- M_e W, steps highest first (row L is not kept)
            m = (b >> s) & 1
            for c in range(s + 1):
                us = W[(s + 1) * L + c] + W[s * L + c] * m
                ovf |= us
                W[(s + 1) * L + c] = us
        e += 1 - out
        f += out
    return (ST_SLOW if ovf < 0 else ST_OK), total


def _chain_group_loop(w, n, replay_end, ev_time, ev_prog, bits):
    """:func:`_chain_loop` for a segment with ties, whatever their order: the events of one time stamp
    never see each other, so their map is ``I + sum N_e = prod_i (I + c_i E_i)`` (``c_i`` of them take
    step ``i``; lowest step on the left, no cross terms), applied as one when the group closes (its END
    events read the window before it), and removed as one when the window's start passes its time
    (``W <- W prod_i (I - c_i E_i)``, highest step first). ``order_ties`` is not needed. A product
    ``c_i x`` can pass 2^64 and wrap to a positive value, which no sign test sees: the counts and the
    values of a time stamp's products are OR-ed (each OR at least its largest term), and only when
    a value passes 2^31 and a count 1 is their product tested, once per time stamp, in float64 (at
    4·10^18, below int64's 9.2·10^18: a larger one sends the segment to the general loop, which is
    exact)."""
    W = stack_int64(LL)
    C = stack_int64(L)  # the open group: C[i] events of step i (i < L - 1), C[L - 1] END events past replay_end
    for i in range(LL):
        W[i] = 0
    for i in range(L):
        W[i * L + i] = 1
        C[i] = 0
    total = np.int64(0)
    ovf = np.int64(0)
    big = False
    f = 0
    t_open = ev_time[0] if n > 0 else np.int64(0)
    for e in range(n + 1):
        t = ev_time[e] if e < n else t_open + 1
        if t != t_open:  # close the open group: its END events' matches, then W <- G W
            x = W[(L - 1) * L]
            orx = x  # (bounds of the products' factors: OR-ed, each at least the largest)
            orc = C[L - 1]
            total += C[L - 1] * x
            ovf |= total
            for s in range(L - 2, -1, -1):
                orc |= C[s]
                for c in range(s + 1):
                    x = W[s * L + c]
                    orx |= x
                    us = W[(s + 1) * L + c] + C[s] * x
                    ovf |= us
                    W[(s + 1) * L + c] = us
            if (orx >> 31) != 0 and (orc >> 1) != 0:  # a product may pass 2^62: tested in float64
                big |= np.float64(orc) * np.float64(orx) >= 4.0e18
            if e == n:
                break
            for s in range(L):
                C[s] = 0
            t_open = t
            bound = t - w
            while f < e and ev_time[f] <= bound:  # W <- W G_f^-1, a group at a time (in C[:L - 1])
                tg = ev_time[f]
                while f < e and ev_time[f] == tg:
                    bf = bits[ev_prog[f]]
                    for s in range(L - 1):
                        C[s] += (bf >> s) & 1
                    f += 1
                for s in range(L - 2, -1, -1):
                    for r in range(s + 1, L):
                        W[r * L + s] -= W[r * L + s + 1] * C[s]
                for s in range(L - 1):
                    C[s] = 0
        b = bits[ev_prog[e]]
        for s in range(L - 1):
            C[s] += (b >> s) & 1
        C[L - 1] += ((b >> (L - 1)) & 1) * np.int64(e >= replay_end)
    return (ST_SLOW if ovf < 0 or big else ST_OK), total


def _drive_within_chain(w, seg_lo, seg_hi, seg_pid, seg_replay, ev_time, ev_prog, bits, X_state, slow):
    """WITHIN counts of a sequence of ``L`` occurrences: each segment's matches added to its
    partition's total ``X_state[pid, L]`` (:func:`_chain_loop`, or :func:`_chain_group_loop` for a
    segment with ties); a segment whose sums leave int64 is marked in ``slow`` for the general loop,
    its total untouched."""
    for sg in range(seg_lo.shape[0]):
        lo = seg_lo[sg]
        hi = seg_hi[sg]
        ties = False
        for e in range(lo + 1, hi):
            ties |= ev_time[e] == ev_time[e - 1]
        if ties:
            status, total = _chain_group(w, hi - lo, seg_replay[sg], ev_time[lo:hi], ev_prog[lo:hi], bits)
        else:
            status, total = _chain(w, hi - lo, seg_replay[sg], ev_time[lo:hi], ev_prog[lo:hi], bits)
        pid = seg_pid[sg]
        a = X_state[pid, L]
        us = a + total
        if status != ST_OK or ((a ^ us) & (total ^ us)) < 0:
            slow[sg] = True
        else:
            X_state[pid, L] = us


_chain = _chain_group = None  # each driver variant binds its own loops


def _driver(k: int):
    loop = jit_body(variant(_chain_loop, f"_chain_loop{k}", L=k, LL=k * k))
    group = jit_body(variant(_chain_group_loop, f"_chain_group_loop{k}", L=k, LL=k * k))
    return jit(variant(_drive_within_chain, f"_drive_within_chain{k}", _chain=loop, _chain_group=group, L=k))


# one driver per length, bound to its name (the name of its cache index); compiled on first use
_drive_within_chain1 = _driver(1)
_drive_within_chain2 = _driver(2)
_drive_within_chain3 = _driver(3)
_drive_within_chain4 = _driver(4)
_drive_within_chain5 = _driver(5)
_drive_within_chain6 = _driver(6)
DRIVE_WITHIN_CHAIN = (None, _drive_within_chain1, _drive_within_chain2, _drive_within_chain3,
                      _drive_within_chain4, _drive_within_chain5, _drive_within_chain6)

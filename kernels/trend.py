"""Trend aggregation with edge predicates: GRETA per-event propagation.

Reference: GRETA (Theorems 4.3 and 9.1, Sections 6 and 9). See
``docs/algorithms.md`` section 4 for the derivation.

With an edge predicate such as ``S.price > NEXT(S).price`` the predecessors
of an event depend on the event, so per-state running totals (the linear-map
engine) no longer suffice. Every event ``e`` bound to occurrence ``o`` gets
a value row (count, then one column per linear aggregate component)::

    count(e as o) = [o starts the pattern] + sum over transitions p -> o of
                    sum of count(x) over earlier events x bound to p whose
                    edge predicate with e holds
    agg_j(e as o) = same sums of agg_j(x) + count(e as o) * w_j(e)

and a match total is the sum over END events. Each transition keeps a
*structure* of the rows of its source events:

* ``K_SUM``: no edge predicate, a running sum;
* ``K_LT``/``K_LE``/``K_GT``/``K_GE``: ``key(x) op thr(e)`` with ``key`` an
  expression of the predecessor and ``thr`` one of the successor: a Fenwick
  tree over the ranks of the keys (prefix sums; ``>``/``>=`` use reversed
  ranks so that they are prefix sums as well): O(log n) per event;
* ``K_EQ``: ``key(x) = thr(e)``: one cell per distinct key.

Keys and thresholds arrive as int64 (floats in an order-preserving int64
encoding), so every comparison is exact and NaN/null never gets here
(``ev_kok``/``ev_tok`` flag valid values).

Windows (``MODE_SLIDE``, GRETA Section 6 "sub-graph sharing"): every
structure, running sum and final total is kept per open window, in a ring of
``W`` slots (window ``k`` uses slot ``k % W``); an event falls into the
windows ``k`` with ``k s <= t < k s + w`` and is queried and inserted once
per such window; a Fenwick node holds one value per ring slot, so one tree
walk serves every open window. Nothing is cleared eagerly: a node is tagged
with its structure's reset generation and the newest window it was written
for (see :func:`run_segments`). A window's totals are emitted when the first
event at or after ``k s + w`` arrives (or at ``limit``) and the slot is
reused. The key space is rebuilt per epoch of a few hundred events (the
events still inside an open window are replayed), so trees stay as small as
the windows.

Negation (single-event negative sub-patterns): an event of a negated type
resets, after the same-time queries and before the same-time insertions,
the structures of the transitions it guards (middle), the ``NOSTART`` flag
(negated start) or the final totals (negated end), in every open window.

All arrays are C-contiguous NumPy arrays. Value rows are split in two: the
"main" row (count, then the components held in the main dtype: int64 with
overflow detection or float64) and a float64 row (float sums when counts are
exact).

Performance note: the per-event code (:func:`_epoch`) takes no array views,
rebinds no array and calls no function with array arguments; inside a kernel
this large, Numba then emits atomic reference counting per event, which cost
up to 80% of the run time.
"""

from __future__ import annotations

import numpy as np

from ._jit import jit, jit_inline

MODE_NONE = 0  # no window: state carried across calls as rows (see run_segments)
MODE_SLIDE = 3  # WITHIN w SLIDE s

K_SUM = 0
K_LT = 1  # key(prev) <  thr(next)
K_LE = 2
K_GT = 3
K_GE = 4
K_EQ = 5

ERR_OVERFLOW = 1
ERR_MEMORY = 2  # the per-window trees of an epoch would exceed max_cells (err[1] partition, err[2] cells)

_I64_MAX = 9223372036854775807
_I64_MIN = -9223372036854775807 - 1


@jit_inline
def _add(a, b, check, err):
    """a + b, flagging int64 overflow in ``err`` (setup code; per-event code uses the flag forms)."""
    if check and ((b > 0 and a > _I64_MAX - b) or (b < 0 and a < _I64_MIN - b)):
        err[0] = ERR_OVERFLOW
        return a
    return a + b


@jit_inline
def _sadd(a, b, check):
    """(a + b, False), or (a, True) when it would overflow int64. The test must not compute the
    wrapped sum first: LLVM treats signed overflow as impossible and folds such a test away."""
    if check and ((b > 0 and a > _I64_MAX - b) or (b < 0 and a < _I64_MIN - b)):
        return a, True
    return a + b, False


@jit_inline
def _smul(a, b, check):
    """(a * b, False), or (a, True) when it would overflow int64."""
    if check and a != 0 and b != 0:
        if a == -1 or b == -1:
            if a == _I64_MIN or b == _I64_MIN:
                return a, True
        elif abs(a) > _I64_MAX // abs(b):
            return a, True
    return a * b, False


@jit_inline
def _lower(ks, lo, hi, x):
    """First index in [lo, hi) with ks[i] >= x."""
    while lo < hi:
        mid = (lo + hi) >> 1
        if ks[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


@jit
def sort_keys(a, lo, hi, tmp):
    """Sort ``a[lo:hi]`` (int64) in place in O(n) whatever the order of the input.

    Numba's ``ndarray.sort`` is a quicksort that goes quadratic on common inputs
    (ascending keys with a smaller one appended: 10^6 keys took 64 s), and the
    key spaces here are exactly that: the carried keys come back sorted and a
    batch of rising prices is sorted already. This is an LSD radix sort over the
    order-preserving unsigned image of the keys, 8 bits a pass, skipping the
    passes in which every key has the same digit; insertion sort below 64 keys.
    ``tmp`` holds at least ``hi - lo`` values.
    """
    n = hi - lo
    if n < 64:
        for i in range(lo + 1, hi):
            x = a[i]
            j = i - 1
            while j >= lo and a[j] > x:
                a[j + 1] = a[j]
                j -= 1
            a[j + 1] = x
        return
    sign = np.uint64(1) << np.uint64(63)
    cnt = np.zeros(256, np.int64)
    src_is_a = True
    for p in range(8):
        sh = np.uint64(8 * p)
        for d in range(256):
            cnt[d] = 0
        if src_is_a:
            for i in range(n):
                cnt[((np.uint64(a[lo + i]) ^ sign) >> sh) & np.uint64(255)] += 1
        else:
            for i in range(n):
                cnt[((np.uint64(tmp[i]) ^ sign) >> sh) & np.uint64(255)] += 1
        trivial = False
        for d in range(256):
            if cnt[d] == n:
                trivial = True
            if cnt[d] != 0:
                break
        if trivial:
            continue
        tot = 0
        for d in range(256):
            c = cnt[d]
            cnt[d] = tot
            tot += c
        if src_is_a:
            for i in range(n):
                x = a[lo + i]
                d = ((np.uint64(x) ^ sign) >> sh) & np.uint64(255)
                tmp[cnt[d]] = x
                cnt[d] += 1
        else:
            for i in range(n):
                x = tmp[i]
                d = ((np.uint64(x) ^ sign) >> sh) & np.uint64(255)
                a[lo + cnt[d]] = x
                cnt[d] += 1
        src_is_a = not src_is_a
    if not src_is_a:
        for i in range(n):
            a[lo + i] = tmp[i]


@jit
def _grow_out(pid, key, vi, vf, need):
    n = max(2 * pid.shape[0], need)
    m = pid.shape[0]
    p2 = np.empty(n, np.int64)
    k2 = np.empty(n, np.int64)
    vi2 = np.empty((n, vi.shape[1]), vi.dtype)
    vf2 = np.empty((n, vf.shape[1]), vf.dtype)
    p2[:m] = pid
    k2[:m] = key
    vi2[:m] = vi
    vf2[:m] = vf
    return p2, k2, vi2, vf2


@jit
def _grow_state(pid, tr, key, vi, vf, need):
    n = max(2 * pid.shape[0], need)
    t2 = np.empty(n, np.int64)
    t2[:pid.shape[0]] = tr
    p2, k2, vi2, vf2 = _grow_out(pid, key, vi, vf, need)
    return p2, t2, k2, vi2, vf2


@jit
def _epoch(mode, w, s, W, check, tags, pid, ep_lo, ep_hi, k_next, opened, gctr,
           ev_t, ev_bind, ev_neg, ev_wi, ev_wf, ev_key, ev_kok, ev_thr, ev_tok,
           occ_start, occ_end, in_ptr, in_tr, out_ptr, out_tr,
           tr_kind, tr_reset, start_reset, end_reset, comp_i, comp_f,
           KS, ks_off, ks_m, nd_base, RG, NRG, NKM, TI, TF, RSI, RSF, FINI, FINF, NOST,
           tmpI, tmpF, pair_e, pair_o, out_pid, out_key, out_vi, out_vf, n_out):
    """Process the events ``[ep_lo, ep_hi)`` of one partition, one time stamp (group) at a time.

    Every buffer is sized by the caller, so no array is rebound here, and no view is taken and no
    function with array arguments is called per event: each would cost atomic reference counting.
    Returns ``(k_next, opened, gctr, n_out, overflow, time)``.
    """
    n_occ = occ_start.shape[0]
    NT = tr_kind.shape[0]
    NCi = ev_wi.shape[1]
    Ri = 1 + NCi
    Rf = ev_wf.shape[1]
    WRi = W * Ri
    WRf = W * Rf
    e = ep_lo
    while e < ep_hi:
        t = ev_t[e]
        g1 = e + 1
        while g1 < ep_hi and ev_t[g1] == t:
            g1 += 1
        bad = False
        if mode == MODE_SLIDE:
            klo = (t - w) // s + 1
            khi = t // s
            if klo < k_next:
                klo = k_next
            # close the windows that end at or before t
            kk = k_next
            while kk < klo and kk <= opened:
                sl = kk % W
                if FINI[sl * Ri] != 0:
                    out_pid[n_out] = pid
                    out_key[n_out] = kk
                    for r in range(Ri):
                        out_vi[n_out, r] = FINI[sl * Ri + r]
                    for r in range(Rf):
                        out_vf[n_out, r] = FINF[sl * Rf + r]
                    n_out += 1
                kk += 1
            if klo > k_next:
                k_next = klo
            if opened < k_next - 1:
                opened = k_next - 1
            if khi < klo:  # in no window (SLIDE > WITHIN gap)
                e = g1
                continue
            kk = opened + 1
            while kk <= khi:  # open windows: empty their ring slots
                sl = kk % W
                for tr in range(NT):
                    for r in range(Ri):
                        RSI[tr * WRi + sl * Ri + r] = 0
                    for r in range(Rf):
                        RSF[tr * WRf + sl * Rf + r] = 0.0
                for r in range(Ri):
                    FINI[sl * Ri + r] = 0
                for r in range(Rf):
                    FINF[sl * Rf + r] = 0.0
                NOST[sl] = 1
                kk += 1
            if khi > opened:
                opened = khi
            nl = khi - klo + 1
            s0 = klo % W
        else:
            klo = 0
            khi = 0
            nl = 1
            s0 = 0
        nlRi = nl * Ri
        nlRf = nl * Rf

        # -- 1) query: the value rows of every (event, occurrence) of the group, per window
        npair = 0
        for ee in range(e, g1):
            bnd = ev_bind[ee]
            if bnd == 0:
                continue
            for o in range(n_occ):
                if (bnd >> o) & 1 == 0:
                    continue
                pi = npair
                pair_e[pi] = ee
                pair_o[pi] = o
                ri = pi * WRi
                rf = pi * WRf
                for x in range(nlRi):
                    tmpI[ri + x] = 0
                for x in range(nlRf):
                    tmpF[rf + x] = 0.0
                if occ_start[o]:
                    sl = s0
                    for j in range(nl):
                        if start_reset == 0 or NOST[sl] != 0:
                            tmpI[ri + j * Ri] = 1
                        sl += 1
                        if sl == W:
                            sl = 0
                for ii in range(in_ptr[o], in_ptr[o + 1]):
                    tr = in_tr[ii]
                    kind = tr_kind[tr]
                    if kind == K_SUM:
                        n1 = W - s0
                        if n1 > nl:
                            n1 = nl
                        for pc in range(2):
                            if pc == 0:
                                xd = ri
                                xs = tr * WRi + s0 * Ri
                                xn = n1 * Ri
                            else:
                                xd = ri + n1 * Ri
                                xs = tr * WRi
                                xn = (nl - n1) * Ri
                            for x in range(xn):
                                a_ = tmpI[xd + x]
                                b_ = RSI[xs + x]
                                if check and ((b_ > 0 and a_ > _I64_MAX - b_) or (b_ < 0 and a_ < _I64_MIN - b_)):
                                    bad = True
                                else:
                                    tmpI[xd + x] = a_ + b_
                        n1 = W - s0
                        if n1 > nl:
                            n1 = nl
                        for pc in range(2):
                            if pc == 0:
                                xd = rf
                                xs = tr * WRf + s0 * Rf
                                xn = n1 * Rf
                            else:
                                xd = rf + n1 * Rf
                                xs = tr * WRf
                                xn = (nl - n1) * Rf
                            for x in range(xn):
                                tmpF[xd + x] += RSF[xs + x]
                        continue
                    if not ev_tok[ee, tr]:
                        continue
                    m = ks_m[tr]
                    if m == 0:
                        continue
                    ka = ks_off[tr]
                    base = nd_base[tr]
                    rgt = RG[tr]
                    thr = ev_thr[ee, tr]
                    # position of thr among the keys: first >= thr, or first > thr for <= and >
                    upper = kind == K_LE or kind == K_GT
                    blo = ka
                    bhi = ka + m
                    while blo < bhi:
                        mid = (blo + bhi) >> 1
                        if KS[mid] < thr or (upper and KS[mid] == thr):
                            blo = mid + 1
                        else:
                            bhi = mid
                    p = blo - ka
                    if kind == K_EQ:
                        i = p + 1 if (p < m and KS[ka + p] == thr) else 0
                    elif kind == K_LT or kind == K_LE:
                        i = p
                    else:
                        i = m - p
                    while i > 0:  # Fenwick prefix sum over indices 1..i
                        nd = base + i
                        if tags:
                            if NRG[nd] != rgt:
                                nv = 0
                            else:
                                nv = NKM[nd]
                                if nv > khi:
                                    nv = khi
                                nv = nv - klo + 1
                        else:
                            nv = 1
                        if nv > 0:
                            n1 = W - s0
                            if n1 > nv:
                                n1 = nv
                            for pc in range(2):
                                if pc == 0:
                                    xd = ri
                                    xs = nd * WRi + s0 * Ri
                                    xn = n1 * Ri
                                else:
                                    xd = ri + n1 * Ri
                                    xs = nd * WRi
                                    xn = (nv - n1) * Ri
                                for x in range(xn):
                                    a_ = tmpI[xd + x]
                                    b_ = TI[xs + x]
                                    if check and ((b_ > 0 and a_ > _I64_MAX - b_) or (b_ < 0 and a_ < _I64_MIN - b_)):
                                        bad = True
                                    else:
                                        tmpI[xd + x] = a_ + b_
                            n1 = W - s0
                            if n1 > nv:
                                n1 = nv
                            for pc in range(2):
                                if pc == 0:
                                    xd = rf
                                    xs = nd * WRf + s0 * Rf
                                    xn = n1 * Rf
                                else:
                                    xd = rf + n1 * Rf
                                    xs = nd * WRf
                                    xn = (nv - n1) * Rf
                                for x in range(xn):
                                    tmpF[xd + x] += TF[xs + x]
                        if kind == K_EQ:
                            break
                        i = i & (i - 1)
                # linear aggregates: agg(e) = sum of agg(x) + count(e) * w(e)
                nz = False
                for j in range(nl):
                    cnt = tmpI[ri + j * Ri]
                    if cnt == 0:
                        continue
                    nz = True
                    for c in range(NCi):
                        if comp_i[c, o]:
                            x = ri + j * Ri + 1 + c
                            prod, o1 = _smul(cnt, ev_wi[ee, c], check)
                            v, o2 = _sadd(tmpI[x], prod, check)
                            tmpI[x] = v
                            bad |= o1 | o2
                    for c in range(Rf):
                        if comp_f[c, o]:
                            tmpF[rf + j * Rf + c] += float(cnt) * ev_wf[ee, c]
                if nz:
                    npair += 1

        # -- 2) negation: empty what the group's negated events invalidate (in every open window)
        for ee in range(e, g1):
            nb_ = ev_neg[ee]
            if nb_ == 0:
                continue
            for tr in range(NT):
                if (tr_reset[tr] & nb_) != 0:
                    if tr_kind[tr] == K_SUM:
                        sl = s0
                        for j in range(nl):
                            for r in range(Ri):
                                RSI[tr * WRi + sl * Ri + r] = 0
                            for r in range(Rf):
                                RSF[tr * WRf + sl * Rf + r] = 0.0
                            sl += 1
                            if sl == W:
                                sl = 0
                    else:
                        gctr += 1
                        RG[tr] = gctr
            sl = s0
            for j in range(nl):
                if (start_reset & nb_) != 0:
                    NOST[sl] = 0
                if (end_reset & nb_) != 0:
                    for r in range(Ri):
                        FINI[sl * Ri + r] = 0
                    for r in range(Rf):
                        FINF[sl * Rf + r] = 0.0
                sl += 1
                if sl == W:
                    sl = 0

        # -- 3) insert the group's rows into the structures of the outgoing transitions
        for pi in range(npair):
            ee = pair_e[pi]
            o = pair_o[pi]
            ri = pi * WRi
            rf = pi * WRf
            for ii in range(out_ptr[o], out_ptr[o + 1]):
                tr = out_tr[ii]
                kind = tr_kind[tr]
                if kind == K_SUM:
                    n1 = W - s0
                    if n1 > nl:
                        n1 = nl
                    for pc in range(2):
                        if pc == 0:
                            xd = tr * WRi + s0 * Ri
                            xs = ri
                            xn = n1 * Ri
                        else:
                            xd = tr * WRi
                            xs = ri + n1 * Ri
                            xn = (nl - n1) * Ri
                        for x in range(xn):
                            a_ = RSI[xd + x]
                            b_ = tmpI[xs + x]
                            if check and ((b_ > 0 and a_ > _I64_MAX - b_) or (b_ < 0 and a_ < _I64_MIN - b_)):
                                bad = True
                            else:
                                RSI[xd + x] = a_ + b_
                    n1 = W - s0
                    if n1 > nl:
                        n1 = nl
                    for pc in range(2):
                        if pc == 0:
                            xd = tr * WRf + s0 * Rf
                            xs = rf
                            xn = n1 * Rf
                        else:
                            xd = tr * WRf
                            xs = rf + n1 * Rf
                            xn = (nl - n1) * Rf
                        for x in range(xn):
                            RSF[xd + x] += tmpF[xs + x]
                    continue
                if not ev_kok[ee, tr]:
                    continue
                m = ks_m[tr]
                ka = ks_off[tr]
                base = nd_base[tr]
                rgt = RG[tr]
                key = ev_key[ee, tr]
                blo = ka
                bhi = ka + m
                while blo < bhi:
                    mid = (blo + bhi) >> 1
                    if KS[mid] < key:
                        blo = mid + 1
                    else:
                        bhi = mid
                rank = blo - ka
                i = m - rank if (kind == K_GT or kind == K_GE) else rank + 1
                while i <= m:  # Fenwick update of indices i, i + lowbit(i), ...
                    nd = base + i
                    if not tags:
                        kold = 0
                    elif NRG[nd] != rgt:
                        NRG[nd] = rgt
                        kold = klo - 1  # every slot is stale
                    else:
                        kold = NKM[nd]
                    # windows klo..kold accumulate, kold+1..khi are written fresh
                    na = kold - klo + 1
                    if na < 0:
                        na = 0
                    elif na > nl:
                        na = nl
                    nr = nl - na
                    sb = s0 + na
                    if sb >= W:
                        sb -= W
                    n1 = W - s0
                    if n1 > na:
                        n1 = na
                    for pc in range(2):
                        if pc == 0:
                            xd = nd * WRi + s0 * Ri
                            xs = ri
                            xn = n1 * Ri
                        else:
                            xd = nd * WRi
                            xs = ri + n1 * Ri
                            xn = (na - n1) * Ri
                        for x in range(xn):
                            a_ = TI[xd + x]
                            b_ = tmpI[xs + x]
                            if check and ((b_ > 0 and a_ > _I64_MAX - b_) or (b_ < 0 and a_ < _I64_MIN - b_)):
                                bad = True
                            else:
                                TI[xd + x] = a_ + b_
                    n1 = W - sb
                    if n1 > nr:
                        n1 = nr
                    for pc in range(2):
                        if pc == 0:
                            xd = nd * WRi + sb * Ri
                            xs = ri + na * Ri
                            xn = n1 * Ri
                        else:
                            xd = nd * WRi
                            xs = ri + na * Ri + n1 * Ri
                            xn = (nr - n1) * Ri
                        for x in range(xn):
                            TI[xd + x] = tmpI[xs + x]
                    n1 = W - s0
                    if n1 > na:
                        n1 = na
                    for pc in range(2):
                        if pc == 0:
                            xd = nd * WRf + s0 * Rf
                            xs = rf
                            xn = n1 * Rf
                        else:
                            xd = nd * WRf
                            xs = rf + n1 * Rf
                            xn = (na - n1) * Rf
                        for x in range(xn):
                            TF[xd + x] += tmpF[xs + x]
                    n1 = W - sb
                    if n1 > nr:
                        n1 = nr
                    for pc in range(2):
                        if pc == 0:
                            xd = nd * WRf + sb * Rf
                            xs = rf + na * Rf
                            xn = n1 * Rf
                        else:
                            xd = nd * WRf
                            xs = rf + na * Rf + n1 * Rf
                            xn = (nr - n1) * Rf
                        for x in range(xn):
                            TF[xd + x] = tmpF[xs + x]
                    if tags and khi > kold:
                        NKM[nd] = khi
                    if kind == K_EQ:
                        break
                    i += i & (-i)
            if occ_end[o]:
                n1 = W - s0
                if n1 > nl:
                    n1 = nl
                for pc in range(2):
                    if pc == 0:
                        xd = 0 + s0 * Ri
                        xs = ri
                        xn = n1 * Ri
                    else:
                        xd = 0
                        xs = ri + n1 * Ri
                        xn = (nl - n1) * Ri
                    for x in range(xn):
                        a_ = FINI[xd + x]
                        b_ = tmpI[xs + x]
                        if check and ((b_ > 0 and a_ > _I64_MAX - b_) or (b_ < 0 and a_ < _I64_MIN - b_)):
                            bad = True
                        else:
                            FINI[xd + x] = a_ + b_
                n1 = W - s0
                if n1 > nl:
                    n1 = nl
                for pc in range(2):
                    if pc == 0:
                        xd = 0 + s0 * Rf
                        xs = rf
                        xn = n1 * Rf
                    else:
                        xd = 0
                        xs = rf + n1 * Rf
                        xn = (nl - n1) * Rf
                    for x in range(xn):
                        FINF[xd + x] += tmpF[xs + x]
        if bad:
            return k_next, opened, gctr, n_out, True, t
        e = g1
    return k_next, opened, gctr, n_out, False, 0


@jit
def run_segments(mode, w, s, W, check, limit,
                 seg_ptr, seg_pid, next_k,
                 ev_t, ev_bind, ev_neg, ev_wi, ev_wf, ev_key, ev_kok, ev_thr, ev_tok,
                 occ_start, occ_end, in_ptr, in_tr, out_ptr, out_tr,
                 tr_src, tr_kind, tr_reset, start_reset, end_reset, comp_i, comp_f,
                 cs_ptr, cs_tr, cs_key, cs_vi, cs_vf, epoch_min, max_cells, err):
    """Process every segment (one partition's events, time-sorted).

    Parameters
    ----------
    mode : MODE_NONE or MODE_SLIDE
    w, s : window length and slide (MODE_SLIDE); W : ring size (1 for MODE_NONE)
    check : detect int64 overflow (main dtype int64)
    limit : MODE_SLIDE: close windows with ``k s + w <= limit`` at the end
    seg_ptr, seg_pid : event offsets of segments and their partition ids
    next_k : (n_partitions,) MODE_SLIDE: next window to close, updated; events
        before ``next_k * s`` must not be passed (they are replayed otherwise)
    ev_* : per event: time, occurrence bits it binds (int64 bit mask), negation
        bits it completes, main weights (n, NCi), float weights (n, NCf), key
        and threshold per transition (int64, with validity flags)
    occ_start, occ_end : per occurrence (bit): starts / ends the pattern
    in_ptr, in_tr / out_ptr, out_tr : CSR lists of the transitions into / out of
        each occurrence
    tr_src, tr_kind, tr_reset : per transition: source occurrence, K_* kind,
        negation bits that empty it
    start_reset, end_reset : negation bits of a negated start / end
    comp_i, comp_f : (NCi | NCf, n_occ) whether an occurrence feeds a component
    cs_* : MODE_NONE carried state rows, grouped per segment by ``cs_ptr``:
        transition (``NT``: final totals, ``NT + 1``: NOSTART flag), key and
        value rows (raw per-key values, not Fenwick sums)
    epoch_min : MODE_SLIDE: fewest new events per epoch (key-space rebuild)
    max_cells : stop with ERR_MEMORY rather than allocate more tree cells (nodes x ring slots x row)
    err : err[0] = ERR_OVERFLOW (err[1] partition, err[2] time) or ERR_MEMORY (partition, cells)

    Returns
    -------
    out_pid, out_key, out_vi, out_vf : closed windows (MODE_SLIDE) with a match
    so_pid, so_tr, so_key, so_vi, so_vf : MODE_NONE state rows after the call

    Notes
    -----
    A Fenwick node holds one value row per ring slot, plus two tags: the reset
    generation of its structure when it was last written (a negation, a new
    segment or a new epoch takes a fresh generation: every node with an older
    one reads as empty) and ``kmax``, the newest window it was written for.
    Every write covers all open windows (zeros included), so the slots of
    windows up to ``kmax`` are current and later ones are stale: a read takes
    the contiguous windows ``klo .. min(khi, kmax)`` without a per-slot test.
    The tags are skipped when nothing can make a node stale (no window, no
    negation resetting a keyed structure): every node of a segment is
    initialised when its key space is built.

    SLIDE epochs: the key space is rebuilt every ``epoch_min`` (or more) new
    events from the events still inside an open window (replayed, exactly as
    across calls) and the new ones, so the trees stay as small as the windows.
    """
    n_occ = occ_start.shape[0]
    NT = tr_kind.shape[0]
    NCi = ev_wi.shape[1]
    Ri = 1 + NCi
    Rf = ev_wf.shape[1]
    dti = ev_wi.dtype
    WRi = W * Ri
    WRf = W * Rf

    out_pid = np.empty(64, np.int64)
    out_key = np.empty(64, np.int64)
    out_vi = np.empty((64, Ri), dti)
    out_vf = np.empty((64, Rf), np.float64)
    n_out = 0
    so_pid = np.empty(64, np.int64)
    so_tr = np.empty(64, np.int64)
    so_key = np.empty(64, np.int64)
    so_vi = np.empty((64, Ri), dti)
    so_vf = np.empty((64, Rf), np.float64)
    n_so = 0

    RG = np.zeros(NT, np.int64)  # reset generation per keyed structure
    gctr = 0
    RSI = np.zeros(NT * WRi, dti)  # running sums per (transition, ring slot)
    RSF = np.zeros(NT * WRf, np.float64)
    FINI = np.zeros(WRi, dti)  # final totals per ring slot
    FINF = np.zeros(WRf, np.float64)
    NOST = np.ones(W, np.int64)
    ks_off = np.zeros(NT + 1, np.int64)
    ks_m = np.zeros(NT, np.int64)
    nd_base = np.zeros(NT + 1, np.int64)
    KS = np.empty(64, np.int64)
    KT = np.empty(64, np.int64)  # scratch of sort_keys
    TI = np.zeros(64 * WRi, dti)
    TF = np.zeros(64 * WRf, np.float64)
    NRG = np.zeros(64, np.int64)  # per node: reset generation when last written
    NKM = np.zeros(64, np.int64)  # per node: newest window written
    tmpI = np.zeros(64 * WRi, dti)
    tmpF = np.zeros(64 * WRf, np.float64)
    pair_e = np.zeros(64, np.int64)
    pair_o = np.zeros(64, np.int64)
    SI = np.zeros((1, Ri), dti)
    SF = np.zeros((1, Rf), np.float64)
    tags = mode == MODE_SLIDE
    for tr in range(NT):
        if tr_kind[tr] != K_SUM and tr_reset[tr] != 0:
            tags = True

    for sg in range(seg_ptr.shape[0] - 1):
        lo = seg_ptr[sg]
        hi = seg_ptr[sg + 1]
        pid = seg_pid[sg]
        c0 = cs_ptr[sg]
        c1 = cs_ptr[sg + 1]
        k_next = next_k[pid] if mode == MODE_SLIDE else 0
        opened = 0
        ep = lo
        while ep < hi:
            if mode == MODE_SLIDE:
                ep_lo = ep  # replay the events still inside an open window
                while ep_lo > lo and ev_t[ep_lo - 1] >= k_next * s:
                    ep_lo -= 1
                ep_hi = ep + max(epoch_min, 2 * (ep - ep_lo))
                if ep_hi >= hi:
                    ep_hi = hi
                else:
                    while ep_hi < hi and ev_t[ep_hi] == ev_t[ep_hi - 1]:
                        ep_hi += 1
            else:
                ep_lo = lo
                ep_hi = hi
            # ---- key spaces: sorted distinct keys of the source events of every keyed transition
            total = 0
            for tr in range(NT):
                ks_off[tr] = total
                if tr_kind[tr] != K_SUM:
                    smask = np.int64(1) << tr_src[tr]
                    for e in range(ep_lo, ep_hi):
                        if ev_kok[e, tr] and (ev_bind[e] & smask) != 0:
                            total += 1
                    for c in range(c0, c1):
                        if cs_tr[c] == tr:
                            total += 1
            ks_off[NT] = total
            if KS.shape[0] < total:
                KS = np.empty(2 * total, np.int64)
                KT = np.empty(2 * total, np.int64)
            nodes = 0
            for tr in range(NT):
                nd_base[tr] = nodes
                ks_m[tr] = 0
                gctr += 1
                RG[tr] = gctr  # fresh generation: nodes written before read as empty
                if tr_kind[tr] == K_SUM:
                    continue
                a = ks_off[tr]
                n = a
                smask = np.int64(1) << tr_src[tr]
                for e in range(ep_lo, ep_hi):
                    if ev_kok[e, tr] and (ev_bind[e] & smask) != 0:
                        KS[n] = ev_key[e, tr]
                        n += 1
                for c in range(c0, c1):
                    if cs_tr[c] == tr:
                        KS[n] = cs_key[c]
                        n += 1
                if n > a:
                    sort_keys(KS, a, n, KT)
                    m = 1
                    for i in range(a + 1, n):
                        if KS[i] != KS[a + m - 1]:
                            KS[a + m] = KS[i]
                            m += 1
                    ks_m[tr] = m
                nodes += ks_m[tr] + 1
            nd_base[NT] = nodes
            if nodes * (WRi + WRf) > max_cells:
                err[0] = ERR_MEMORY
                err[1] = pid
                err[2] = nodes * (WRi + WRf)
                break
            if NRG.shape[0] < nodes:
                NRG = np.zeros(2 * nodes, np.int64)
                NKM = np.zeros(2 * nodes, np.int64)
                TI = np.zeros(2 * nodes * WRi, dti)
                TF = np.zeros(2 * nodes * WRf, np.float64)
            # ---- buffers for the epoch: pairs of the largest group, windows it may emit
            gmax = 1
            n_emit = W
            kn = k_next
            op = k_next - 1
            e = ep_lo
            while e < ep_hi:
                g1 = e + 1
                while g1 < ep_hi and ev_t[g1] == ev_t[e]:
                    g1 += 1
                if g1 - e > gmax:
                    gmax = g1 - e
                if mode == MODE_SLIDE:
                    kl = (ev_t[e] - w) // s + 1
                    if kl > kn:
                        kn = kl
                    kh = ev_t[e] // s
                    if kh > op:
                        n_emit += kh - max(op + 1, kn) + 1
                        op = kh
                e = g1
            if pair_e.shape[0] < gmax * n_occ:
                pair_e = np.zeros(2 * gmax * n_occ, np.int64)
                pair_o = np.zeros(2 * gmax * n_occ, np.int64)
                tmpI = np.zeros(2 * gmax * n_occ * WRi, dti)
                tmpF = np.zeros(2 * gmax * n_occ * WRf, np.float64)
            if mode == MODE_SLIDE and out_pid.shape[0] < n_out + n_emit:
                out_pid, out_key, out_vi, out_vf = _grow_out(out_pid, out_key, out_vi, out_vf, n_out + n_emit)

            # ---- window state
            if mode == MODE_SLIDE:
                opened = k_next - 1  # windows >= k_next are rebuilt by the replay
            else:
                opened = 0
                RSI[:] = 0
                RSF[:] = 0.0
                FINI[:] = 0
                FINF[:] = 0.0
                NOST[0] = 1
                # load the carried state rows (raw values per key), then build the Fenwick trees
                for tr in range(NT):
                    if tr_kind[tr] == K_SUM:
                        continue
                    for i in range(1, ks_m[tr] + 1):
                        nd = nd_base[tr] + i
                        NRG[nd] = RG[tr]
                        NKM[nd] = 0
                        for r in range(Ri):
                            TI[nd * Ri + r] = 0
                        for r in range(Rf):
                            TF[nd * Rf + r] = 0.0
                for c in range(c0, c1):
                    tr = cs_tr[c]
                    if tr < NT:
                        kind = tr_kind[tr]
                        if kind == K_SUM:
                            for r in range(Ri):
                                RSI[tr * WRi + r] = _add(RSI[tr * WRi + r], cs_vi[c, r], check, err)
                            for r in range(Rf):
                                RSF[tr * WRf + r] += cs_vf[c, r]
                            continue
                        m = ks_m[tr]
                        a = ks_off[tr]
                        rank = _lower(KS, a, a + m, cs_key[c]) - a
                        i = m - rank if (kind == K_GT or kind == K_GE) else rank + 1
                        nd = nd_base[tr] + i
                        for r in range(Ri):
                            TI[nd * Ri + r] = _add(TI[nd * Ri + r], cs_vi[c, r], check, err)
                        for r in range(Rf):
                            TF[nd * Rf + r] += cs_vf[c, r]
                    elif tr == NT:
                        for r in range(Ri):
                            FINI[r] = _add(FINI[r], cs_vi[c, r], check, err)
                        for r in range(Rf):
                            FINF[r] += cs_vf[c, r]
                    else:
                        NOST[0] = 1 if cs_vi[c, 0] != 0 else 0
                for tr in range(NT):
                    if tr_kind[tr] == K_SUM or tr_kind[tr] == K_EQ:
                        continue
                    m = ks_m[tr]
                    base = nd_base[tr]
                    for i in range(1, m + 1):
                        j = i + (i & -i)
                        if j <= m:
                            for r in range(Ri):
                                TI[(base + j) * Ri + r] = _add(TI[(base + j) * Ri + r], TI[(base + i) * Ri + r],
                                                               check, err)
                            for r in range(Rf):
                                TF[(base + j) * Rf + r] += TF[(base + i) * Rf + r]
                if err[0] != 0:
                    err[1] = pid
                    err[2] = ev_t[lo] if hi > lo else 0
                    break

            k_next, opened, gctr, n_out, bad, tbad = _epoch(
                mode, w, s, W, check, tags, pid, ep_lo, ep_hi, k_next, opened, gctr,
                ev_t, ev_bind, ev_neg, ev_wi, ev_wf, ev_key, ev_kok, ev_thr, ev_tok,
                occ_start, occ_end, in_ptr, in_tr, out_ptr, out_tr,
                tr_kind, tr_reset, start_reset, end_reset, comp_i, comp_f,
                KS, ks_off, ks_m, nd_base, RG, NRG, NKM, TI, TF, RSI, RSF, FINI, FINF, NOST,
                tmpI, tmpF, pair_e, pair_o, out_pid, out_key, out_vi, out_vf, n_out)
            if bad:
                err[0] = ERR_OVERFLOW
                err[1] = pid
                err[2] = tbad
                break
            ep = ep_hi
        if err[0] != 0:
            break

        # ---- end of the segment
        if mode == MODE_SLIDE:
            if out_pid.shape[0] < n_out + W:
                out_pid, out_key, out_vi, out_vf = _grow_out(out_pid, out_key, out_vi, out_vf, n_out + W)
            kk = k_next
            while kk <= opened and kk * s + w <= limit:
                sl = kk % W
                if FINI[sl * Ri] != 0:
                    out_pid[n_out] = pid
                    out_key[n_out] = kk
                    for r in range(Ri):
                        out_vi[n_out, r] = FINI[sl * Ri + r]
                    for r in range(Rf):
                        out_vf[n_out, r] = FINF[sl * Rf + r]
                    n_out += 1
                kk += 1
            kl = (limit - w) // s + 1
            if kl > k_next:
                k_next = kl
            next_k[pid] = k_next
            continue
        # MODE_NONE: dump the state as raw rows per key
        need = n_so + 2 + NT
        for tr in range(NT):
            need += ks_m[tr]
        if so_pid.shape[0] < need:
            so_pid, so_tr, so_key, so_vi, so_vf = _grow_state(so_pid, so_tr, so_key, so_vi, so_vf, need)
        for tr in range(NT):
            kind = tr_kind[tr]
            if kind == K_SUM:
                if RSI[tr * WRi] != 0:
                    so_pid[n_so] = pid
                    so_tr[n_so] = tr
                    so_key[n_so] = 0
                    for r in range(Ri):
                        so_vi[n_so, r] = RSI[tr * WRi + r]
                    for r in range(Rf):
                        so_vf[n_so, r] = RSF[tr * WRf + r]
                    n_so += 1
                continue
            m = ks_m[tr]
            a = ks_off[tr]
            base = nd_base[tr]
            if SI.shape[0] < m + 1:
                SI = np.zeros((2 * m + 2, Ri), dti)
                SF = np.zeros((2 * m + 2, Rf), np.float64)
            for i in range(1, m + 1):
                nd = base + i
                valid = (not tags) or NRG[nd] == RG[tr]
                for r in range(Ri):
                    SI[i, r] = TI[nd * Ri + r] if valid else 0
                for r in range(Rf):
                    SF[i, r] = TF[nd * Rf + r] if valid else 0.0
            if kind != K_EQ:  # undo the Fenwick build: node sums back to values per key
                for i in range(m, 0, -1):
                    j = i + (i & -i)
                    if j <= m:
                        for r in range(Ri):
                            SI[j, r] -= SI[i, r]
                        for r in range(Rf):
                            SF[j, r] -= SF[i, r]
            for i in range(1, m + 1):
                if SI[i, 0] == 0:
                    continue
                rank = m - i if (kind == K_GT or kind == K_GE) else i - 1
                so_pid[n_so] = pid
                so_tr[n_so] = tr
                so_key[n_so] = KS[a + rank]
                for r in range(Ri):
                    so_vi[n_so, r] = SI[i, r]
                for r in range(Rf):
                    so_vf[n_so, r] = SF[i, r]
                n_so += 1
        if FINI[0] != 0:
            so_pid[n_so] = pid
            so_tr[n_so] = NT
            so_key[n_so] = 0
            for r in range(Ri):
                so_vi[n_so, r] = FINI[r]
            for r in range(Rf):
                so_vf[n_so, r] = FINF[r]
            n_so += 1
        if start_reset != 0:
            so_pid[n_so] = pid
            so_tr[n_so] = NT + 1
            so_key[n_so] = 0
            for r in range(Ri):
                so_vi[n_so, r] = 0
            for r in range(Rf):
                so_vf[n_so, r] = 0.0
            so_vi[n_so, 0] = NOST[0]
            n_so += 1
    return (out_pid[:n_out], out_key[:n_out], out_vi[:n_out], out_vf[:n_out],
            so_pid[:n_so], so_tr[:n_so], so_key[:n_so], so_vi[:n_so], so_vf[:n_so])


@jit
def partition_order(pid, n_parts):
    """Stable counting sort of event indices by partition id (keeps time order).

    Returns ``(order, seg_ptr)``: partition ``p``'s events are
    ``order[seg_ptr[p]:seg_ptr[p+1]]``.
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


def float_order_key(x: np.ndarray) -> np.ndarray:
    """Order-preserving int64 code of float64 values (-0.0 as 0.0; mask NaN out first)."""
    b = (np.asarray(x, np.float64) + 0.0).view(np.int64)
    return np.where(b >= 0, b, b ^ np.int64(_I64_MAX))

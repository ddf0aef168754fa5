"""One epoch of the trend kernels: :func:`_epoch`, the per-event loop of :func:`_run_segments`
(queries, negation resets, insertions and window emission; see the package docstring)."""

from __future__ import annotations

import numpy as np

from .._jit import jit_callee, jit_inline
from .arith import _sadd, _smul
from .constants import K_EQ, K_SUM, MODE_SLIDE


#: The flags of :func:`_ring_add` as typed values (a literal True / False would compile it once per value)
_RING_DST = np.bool_(True)
_RING_SRC = np.bool_(False)
_NO_CHECK = np.bool_(False)
_ADD = np.bool_(False)
_COPY = np.bool_(True)
#: row 0 as a typed value: a literal 0 compiles a helper once more (``Literal[int](0)``)
_ROW0 = np.int64(0)


@jit_inline
def _ring_add(dst, d, src, s, ring_dst, s0, n, W, R, check, copy):
    """Rows ``j < n`` of ``R`` values: ``dst`` row += ``src`` row (``copy``: ``dst`` row = ``src`` row).
    One side is a ring of ``W`` rows at ``d`` (``ring_dst``) or ``s`` whose row ``j`` is slot
    ``(s0 + j) % W``, the other ``n`` rows in a line. With ``check``, a sum that would overflow int64
    is not added (:func:`_sadd`) and the result is True. Inlined by LLVM, where the flags are
    constants; its arrays are the caller's borrowed ones, so the call counts no references."""
    n1 = W - s0
    if n1 > n:
        n1 = n
    bad = False
    for pc in range(2):
        if pc == 0:
            ring = s0 * R
            line = 0
            xn = n1 * R
        else:
            ring = 0
            line = n1 * R
            xn = (n - n1) * R
        xd = d + ring if ring_dst else d + line
        xs = s + line if ring_dst else s + ring
        for x in range(xn):
            if copy:
                dst[xd + x] = src[xs + x]
            else:
                v, o = _sadd(dst[xd + x], src[xs + x], check)
                dst[xd + x] = v
                bad |= o
    return bad


# One long function on purpose: inside a kernel this large, a call with array arguments per event
# costs atomic reference counting (see the package docstring, ``__init__.py``); the ring-row helper
# above is inlined by LLVM and takes only arrays the caller borrowed.
@jit_callee
def _epoch(mode, w, s, W, check, tags, pid, ep_lo, ep_hi, k_next, opened, gctr,
           ev_t, ev_bind, ev_neg, ev_wi, ev_wf, ev_kok, ev_tok,
           occ_start, occ_end, in_ptr, in_tr, out_ptr, out_tr,
           tr_kind, tr_reset, start_reset, end_reset, comp_i, comp_f,
           INS, QRY, ks_m, nd_base, RG, NRG, NKM, TI, TF, RSI, RSF, FINI, FINF, NOST,
           tmpI, tmpF, pair_e, pair_o, out_pid, out_key, out_vi, out_vf, n_out):
    """Process the events ``[ep_lo, ep_hi)`` of one partition, one time stamp (group) at a time.

    Every buffer is sized by the caller, so no array is rebound here, and no view is taken and no
    function with array arguments is called per event but the LLVM-inlined :func:`_ring_add` on
    the borrowed arrays: each would cost atomic reference counting.
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
                        bad |= _ring_add(tmpI, ri, RSI, tr * WRi, _RING_SRC, s0, nl, W, Ri, check, _ADD)
                        _ring_add(tmpF, rf, RSF, tr * WRf, _RING_SRC, s0, nl, W, Rf, _NO_CHECK, _ADD)
                        continue
                    if not ev_tok[ee, tr]:
                        continue
                    if ks_m[tr] == 0:
                        continue
                    base = nd_base[tr]
                    rgt = RG[tr]
                    i = QRY[(ee - ep_lo) * NT + tr]  # the threshold's index (_run_segments)
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
                            bad |= _ring_add(tmpI, ri, TI, nd * WRi, _RING_SRC, s0, nv, W, Ri, check, _ADD)
                            _ring_add(tmpF, rf, TF, nd * WRf, _RING_SRC, s0, nv, W, Rf, _NO_CHECK, _ADD)
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
                    bad |= _ring_add(RSI, tr * WRi, tmpI, ri, _RING_DST, s0, nl, W, Ri, check, _ADD)
                    _ring_add(RSF, tr * WRf, tmpF, rf, _RING_DST, s0, nl, W, Rf, _NO_CHECK, _ADD)
                    continue
                if not ev_kok[ee, tr]:
                    continue
                m = ks_m[tr]
                base = nd_base[tr]
                rgt = RG[tr]
                i = INS[(ee - ep_lo) * NT + tr]  # the key's index (_run_segments)
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
                    bad |= _ring_add(TI, nd * WRi, tmpI, ri, _RING_DST, s0, na, W, Ri, check, _ADD)
                    _ring_add(TI, nd * WRi, tmpI, ri + na * Ri, _RING_DST, sb, nr, W, Ri, _NO_CHECK, _COPY)
                    _ring_add(TF, nd * WRf, tmpF, rf, _RING_DST, s0, na, W, Rf, _NO_CHECK, _ADD)
                    _ring_add(TF, nd * WRf, tmpF, rf + na * Rf, _RING_DST, sb, nr, W, Rf, _NO_CHECK, _COPY)
                    if tags and khi > kold:
                        NKM[nd] = khi
                    if kind == K_EQ:
                        break
                    i += i & (-i)
            if occ_end[o]:
                bad |= _ring_add(FINI, _ROW0, tmpI, ri, _RING_DST, s0, nl, W, Ri, check, _ADD)
                _ring_add(FINF, _ROW0, tmpF, rf, _RING_DST, s0, nl, W, Rf, _NO_CHECK, _ADD)
        if bad:
            return k_next, opened, gctr, n_out, True, t
        e = g1
    return k_next, opened, gctr, n_out, False, 0

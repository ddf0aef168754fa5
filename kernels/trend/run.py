"""Entry points of the trend kernels: :func:`_run_segments` (per segment: key spaces, epochs,
carried state) and the growth of its output and state arrays."""

from __future__ import annotations

import numpy as np

from .._jit import borrow, jit, jit_callee, jit_inline, variant
from .arith import _add
from .constants import (END, ERR_INTERNAL, ERR_MEMORY, ERR_OVERFLOW, K_EQ, K_GE, K_GT, K_LE, K_LT, K_SUM, MODE_NONE,
                        MODE_SLIDE)
from .epoch import _epoch
from .keys import SMALL_SORT, _lower, _position, small_sort, sort_keys


@jit_inline
def _query_index(kind, p, m, KS, a, thr):
    """The Fenwick index a query starts at, from ``p``, the threshold's position among the ``m``
    keys ``KS[a:a + m]`` (see :func:`_run_segments`)."""
    if kind == K_EQ:
        return p + 1 if (p < m and KS[a + p] == thr) else 0
    if kind == K_LT or kind == K_LE:
        return p
    return m - p


@jit_callee
def key_spaces(ep_lo, ep_hi, c0, c1, gctr, search_keys, tr_kind, tr_src, tgt, ev_bind, ev_kok, ev_key, ev_tok,
               ev_thr, cs_tr, cs_key, ks_off, ks_m, nd_base, RG, KS, KV, KT, KVT, INS, QRY):
    """Build the key spaces of one epoch (events ``ep_lo:ep_hi``, carried rows ``c0:c1``): per keyed
    transition the sorted distinct keys of its source events and carried rows (``KS[ks_off[tr]:]``,
    ``ks_m[tr]`` of them), each event's Fenwick insertion index (``INS``) and query index (``QRY``),
    the first node of each structure (``nd_base``) and a fresh reset generation per structure
    (``RG``, from ``gctr``). Returns ``(nodes, gctr)``.

    Value-dtype free: compiled once, whatever the main dtype of :func:`_run_segments`. Called once per
    epoch with its arrays borrowed.
    """
    NT = tr_kind.shape[0]
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
                KV[n] = e - ep_lo
                n += 1
        for c in range(c0, c1):
            if cs_tr[c] == tr:
                KS[n] = cs_key[c]
                KV[n] = -1
                n += 1
        if n > a:
            kind = tr_kind[tr]
            if n - a < SMALL_SORT:
                small_sort(KS, KV, a, n)
            else:
                sort_keys(KS, KV, a, n, KT, KVT)
            m = np.int64(0)  # not the literal: one specialisation of _query_index
            for i in range(a, n):  # distinct keys; an event's key is the rank m - 1
                if m == 0 or KS[i] != KS[a + m - 1]:
                    KS[a + m] = KS[i]
                    m += 1
                if KV[i] >= 0:
                    INS[KV[i] * NT + tr] = m - 1
            ks_m[tr] = m
            # ranks to Fenwick indices; the query index of an event: the position of its
            # threshold among the keys, first >= thr (or first > thr for <= and >): an event
            # whose threshold is its own key has its rank; else a binary search in a small key
            # space, or the thresholds sorted (after the key spaces in KS) and merged
            gt = kind == K_GT or kind == K_GE
            upper = kind == K_LE or kind == K_GT
            tmask = tgt[tr]
            t0 = ks_off[NT]
            nt_ = t0
            for e in range(ep_lo, ep_hi):
                x = (e - ep_lo) * NT + tr
                src = ev_kok[e, tr] and (ev_bind[e] & smask) != 0
                r = INS[x]
                if src:
                    INS[x] = m - r if gt else r + 1
                if not ev_tok[e, tr] or (ev_bind[e] & tmask) == 0:
                    continue
                thr = ev_thr[e, tr]
                if src and thr == ev_key[e, tr]:
                    p = r + 1 if upper else r
                elif m <= search_keys:
                    p = _position(KS, a, a + m, thr, upper) - a
                else:
                    KS[nt_] = thr
                    KV[nt_] = e - ep_lo
                    nt_ += 1
                    continue
                QRY[x] = _query_index(kind, p, m, KS, a, thr)
            if nt_ > t0:
                sort_keys(KS, KV, t0, nt_, KT, KVT)
                p = 0
                for j in range(t0, nt_):
                    thr = KS[j]
                    while p < m and (KS[a + p] < thr or (upper and KS[a + p] == thr)):
                        p += 1
                    QRY[KV[j] * NT + tr] = _query_index(kind, p, m, KS, a, thr)
        nodes += ks_m[tr] + 1
    nd_base[NT] = nodes
    return nodes, gctr


#: which variant of :func:`_run_segments` this is: windows (``MODE_SLIDE``) or none (``MODE_NONE``); a
#: constant of each variant (``_jit.variant``), so each compiles only its own mode's code
SLIDE = True


# One long function on purpose: inside a kernel this large, a call with array arguments per event
# costs atomic reference counting (see the package docstring, ``__init__.py``).
def _run_segments(w, s, W, check, limit,
                 seg_ptr, seg_pid, next_k,
                 ev_t, ev_bind, ev_neg, ev_wi, ev_wf, ev_key, ev_kok, ev_thr, ev_tok,
                 occ_start, occ_end, in_ptr, in_tr, out_ptr, out_tr,
                 tr_src, tr_kind, tr_reset, start_reset, end_reset, comp_i, comp_f,
                 cs_ptr, cs_tr, cs_key, cs_vi, cs_vf, epoch_min, search_keys, max_cells, err):
    """Process every segment (one partition's events, time-sorted).

    Parameters
    ----------
    (the mode is the variant: :data:`run_segments_slide` for ``MODE_SLIDE``, :data:`run_segments_none`
    for ``MODE_NONE``)
    w, s : window length and slide (MODE_SLIDE); W : ring size (1 for MODE_NONE)
    check : detect int64 overflow (main dtype int64)
    limit : MODE_SLIDE: close windows with ``k s + w <= limit`` at the end; ``END``: the last
        call (MODE_NONE: only the totals are returned, no state rows per key)
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
    search_keys : key spaces of at most this many keys find an event's query position by a binary
        search; larger ones sort the epoch's thresholds and merge them with the keys
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

    Key spaces: per epoch and keyed transition, the keys of the source events (and the carried
    ones) are sorted with their events (:func:`sort_keys`), so each event's insertion index is its
    key's rank; its query index is the position of its threshold among the keys, by a binary search
    in a small key space, else by sorting the thresholds and merging them with the keys. The epoch
    loop searches nothing (a binary search over 10^6 keys misses the caches: about 160 ns).

    SLIDE epochs: the key space is rebuilt every ``epoch_min`` (or more) new
    events from the events still inside an open window (replayed, exactly as
    across calls) and the new ones, so the trees stay as small as the windows.
    """
    # typed, not literals: _epoch would compile once per mode and value of ``tags`` (as a specialisation
    # for constants of its caller), where one specialisation per value dtype serves both variants
    mode = np.int64(MODE_SLIDE if SLIDE else MODE_NONE)
    n_occ = occ_start.shape[0]
    NT = tr_kind.shape[0]
    NCi = ev_wi.shape[1]
    Ri = 1 + NCi
    Rf = ev_wf.shape[1]
    dti = ev_wi.dtype
    WRi = W * Ri
    WRf = W * Rf

    n_out = np.int64(0)  # typed, not a literal: _epoch would compile twice (literal 0, then int64)
    n_so = 0

    RG = np.zeros(NT, np.int64)  # reset generation per keyed structure
    gctr = np.int64(0)
    RSI = np.zeros(NT * WRi, dti)  # running sums per (transition, ring slot)
    RSF = np.zeros(NT * WRf, np.float64)
    FINI = np.zeros(WRi, dti)  # final totals per ring slot
    FINF = np.zeros(WRf, np.float64)
    NOST = np.ones(W, np.int64)
    ks_off = np.zeros(NT + 1, np.int64)
    ks_m = np.zeros(NT, np.int64)
    nd_base = np.zeros(NT + 1, np.int64)
    # key spaces (every keyed transition's keys, then one epoch's thresholds) and their events (offset
    # in the epoch; -1: a carried key), sized once for the largest segment (not rebound in the loop)
    kmax = 1  # every transition's keys and the thresholds
    smax = 1  # one sort: a transition's keys (events and carried rows) or the thresholds
    emax = 1  # events of a segment
    for sg in range(seg_ptr.shape[0] - 1):
        ns = seg_ptr[sg + 1] - seg_ptr[sg]
        nc = cs_ptr[sg + 1] - cs_ptr[sg]
        kmax = max(kmax, (NT + 1) * ns + nc)
        smax = max(smax, ns + nc)
        emax = max(emax, ns)
    KS = np.empty(kmax, np.int64)
    KV = np.empty(kmax, np.int64)
    KT = np.empty(smax, np.int64)  # scratch of sort_keys
    KVT = np.empty(smax, np.int64)
    # per (event of the epoch, transition): the Fenwick index an insertion starts at, and a query
    INS = np.empty(max(1, NT * emax), np.int64)
    QRY = np.empty(max(1, NT * emax), np.int64)
    tgt = np.zeros(NT, np.int64)  # occurrence bits of the target of each transition
    for o in range(n_occ):
        for ii in range(in_ptr[o], in_ptr[o + 1]):
            tgt[in_tr[ii]] |= np.int64(1) << o
    tags = np.bool_(SLIDE)
    for tr in range(NT):
        if tr_kind[tr] != K_SUM and tr_reset[tr] != 0:
            tags = True
    # Every buffer below is sized once, from bounds over all segments, and never rebound in the
    # segment loop: an array a loop may rebind is reference-counted on every pass (about 20 of them
    # were a fifth of the time with 10^5 small partitions). np.empty touches no page; the rows used
    # are written before they are read.
    ncmax = 0  # carried rows of a segment
    gall = 1  # events of the longest tie group (one time stamp of one partition)
    n_rows = 0  # SLIDE: windows a segment may emit (each holds one of its events, and lies in its span)
    n_state = 0  # MODE_NONE: state rows a segment may dump (a row per key, the totals, the flag)
    for sg in range(seg_ptr.shape[0] - 1):
        lo = seg_ptr[sg]
        hi = seg_ptr[sg + 1]
        nc = cs_ptr[sg + 1] - cs_ptr[sg]
        ncmax = max(ncmax, nc)
        if hi > lo:  # (+ W: an epoch's check counts the ring's W windows beside the new ones)
            n_rows += min((hi - lo) * W, (ev_t[hi - 1] - ev_t[lo]) // s + W + 2) + W
        n_state += 2 + NT * (1 + hi - lo + nc)
        g0 = lo
        for e in range(lo + 1, hi + 1):
            if e == hi or ev_t[e] != ev_t[g0]:
                gall = max(gall, e - g0)
                g0 = e
    nodes_max = min(NT * (emax + ncmax + 1) + 1, max_cells // max(1, WRi + WRf) + 1)
    TI = np.empty(max(1, nodes_max * WRi), dti)
    TF = np.empty(max(1, nodes_max * WRf), np.float64)
    NRG = np.empty(nodes_max if tags else 1, np.int64)  # per node: reset generation when last written
    NKM = np.empty(nodes_max if tags else 1, np.int64)  # per node: newest window written
    tmpI = np.zeros(gall * n_occ * WRi, dti)
    tmpF = np.zeros(gall * n_occ * WRf, np.float64)
    pair_e = np.zeros(gall * n_occ, np.int64)
    pair_o = np.zeros(gall * n_occ, np.int64)
    nso = 1 if SLIDE else n_state
    SI = np.zeros((1 if SLIDE else emax + ncmax + 2, Ri), dti)
    SF = np.zeros((1 if SLIDE else emax + ncmax + 2, Rf), np.float64)
    nout = n_rows if SLIDE else 1
    out_pid = np.empty(nout, np.int64)
    out_key = np.empty(nout, np.int64)
    out_vi = np.empty((nout, Ri), dti)
    out_vf = np.empty((nout, Rf), np.float64)
    so_pid = np.empty(nso, np.int64)
    so_tr = np.empty(nso, np.int64)
    so_key = np.empty(nso, np.int64)
    so_vi = np.empty((nso, Ri), dti)
    so_vf = np.empty((nso, Rf), np.float64)
    for sg in range(seg_ptr.shape[0] - 1):
        lo = seg_ptr[sg]
        hi = seg_ptr[sg + 1]
        pid = seg_pid[sg]
        c0 = cs_ptr[sg]
        c1 = cs_ptr[sg + 1]
        k_next = next_k[pid] if SLIDE else np.int64(0)  # typed: a literal 0 compiles _epoch twice
        opened = np.int64(0)
        ep = lo
        while ep < hi:
            if SLIDE:
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
            # ---- key spaces: sorted distinct keys of the source events of every keyed transition,
            # with each event's insertion and query index (no search per event in the epoch loop)
            nodes, gctr = key_spaces(ep_lo, ep_hi, c0, c1, gctr, search_keys, borrow(tr_kind), borrow(tr_src),
                                     borrow(tgt), borrow(ev_bind), borrow(ev_kok), borrow(ev_key), borrow(ev_tok),
                                     borrow(ev_thr), borrow(cs_tr), borrow(cs_key), borrow(ks_off), borrow(ks_m),
                                     borrow(nd_base), borrow(RG), borrow(KS), borrow(KV), borrow(KT), borrow(KVT),
                                     borrow(INS), borrow(QRY))
            if nodes * (WRi + WRf) > max_cells:
                err[0] = ERR_MEMORY
                err[1] = pid
                err[2] = nodes * (WRi + WRf)
                break
            # a node is read only after it is written in its generation (tags) or set below (no tags);
            # generations start at 1, so the epoch's nodes start at 0 (TI / TF are not zeroed: only
            # the pages in use are touched)
            if nodes * WRi > TI.shape[0] or nodes * WRf > TF.shape[0] or (tags and nodes > NRG.shape[0]):
                err[0] = ERR_INTERNAL
                err[1] = pid
                err[2] = nodes
                break
            if tags:
                for nd in range(nodes):
                    NRG[nd] = 0
                    NKM[nd] = 0
            # ---- the buffers' bounds, checked: pairs of the largest group, windows the epoch may emit
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
                if SLIDE:
                    kl = (ev_t[e] - w) // s + 1
                    if kl > kn:
                        kn = kl
                    kh = ev_t[e] // s
                    if kh > op:
                        n_emit += kh - max(op + 1, kn) + 1
                        op = kh
                e = g1
            if gmax * n_occ > pair_e.shape[0] or (SLIDE and n_out + n_emit > out_pid.shape[0]):
                err[0] = ERR_INTERNAL
                err[1] = pid
                err[2] = n_out + n_emit
                break

            # ---- window state
            if SLIDE:
                opened = k_next - 1  # windows >= k_next are rebuilt by the replay
            else:
                opened = np.int64(0)
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
                        if tags:
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

            # a call per epoch (per partition when they are small): its arrays borrowed, without
            # reference counts (kernels/_jit.py::borrow)
            k_next, opened, gctr, n_out, bad, tbad = _epoch(
                mode, w, s, W, check, tags, pid, ep_lo, ep_hi, k_next, opened, gctr,
                borrow(ev_t), borrow(ev_bind), borrow(ev_neg), borrow(ev_wi), borrow(ev_wf), borrow(ev_kok),
                borrow(ev_tok), borrow(occ_start), borrow(occ_end), borrow(in_ptr), borrow(in_tr), borrow(out_ptr),
                borrow(out_tr), borrow(tr_kind), borrow(tr_reset), start_reset, end_reset, borrow(comp_i),
                borrow(comp_f), borrow(INS), borrow(QRY), borrow(ks_m), borrow(nd_base), borrow(RG), borrow(NRG),
                borrow(NKM), borrow(TI), borrow(TF), borrow(RSI), borrow(RSF), borrow(FINI), borrow(FINF),
                borrow(NOST), borrow(tmpI), borrow(tmpF), borrow(pair_e), borrow(pair_o), borrow(out_pid),
                borrow(out_key), borrow(out_vi), borrow(out_vf), n_out)
            if bad:
                err[0] = ERR_OVERFLOW
                err[1] = pid
                err[2] = tbad
                break
            ep = ep_hi
        if err[0] != 0:
            break

        # ---- end of the segment
        if SLIDE:
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
        last = limit >= END
        need = n_so + 2 + NT
        msi = 0  # rows of SI / SF the dump uses
        for tr in range(NT):
            need += 0 if last else ks_m[tr]
            msi = max(msi, ks_m[tr] + 1)
        if need > so_pid.shape[0] or msi > SI.shape[0]:
            err[0] = ERR_INTERNAL
            err[1] = pid
            err[2] = max(need, msi)
            break
        for tr in range(NT):
            if last:
                break
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


#: :func:`_run_segments` with windows (``WITHIN ... SLIDE``) and without: the variants share one source
#: and compile apart (the carried state rows of ``MODE_NONE`` were some 60% of its code; a windowed
#: query no longer compiles them)
run_segments_slide = jit(variant(_run_segments, "run_segments_slide", SLIDE=True))
run_segments_none = jit(variant(_run_segments, "run_segments_none", SLIDE=False))

"""Input preparation for the linear-map kernels: events and carried state in segment order,
emit schedules, output ranking, carry bounds, Arrow string-view codes, dense ids and
program ids from bound / negation bits."""

from __future__ import annotations

import numpy as np

from .._jit import jit, jit_callee, jit_inline, jit_reading
from ..views import VIEW_HI_MASK, VIEW_LO_MASK
from .constants import F_END, MODE_SLIDE, TIE_SHIFT


@jit
def count_events(n_parts, cls, cls_prog, pid):
    """Per partition, the new events that are kept (``cls_prog[cls[i]] >= 0``)."""
    count = np.zeros(n_parts, np.int64)
    for i in range(cls.shape[0]):
        count[pid[i]] += cls_prog[cls[i]] >= 0
    return count


@jit_reading("cls", "cls_prog", "pid", "t", "w")
def fill_events(cls, cls_prog, pid, t, w, pos, out_t, out_prog, out_w, spare):
    """Scatter the kept new events to ``pos[partition]`` (advanced in place).

    Branch-free (kept and dropped events come in random order): a dropped event is
    written to the slot ``spare``, which the caller ignores (threads filling one output
    each get a spare slot of their own, a cache line apart: one shared slot would
    bounce between the cores on every dropped event).
    """
    nw = w.shape[1]
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


#: Ties longer than this are ordered by a counting sort instead of an insertion sort.
_TIE_INSERTION = 16


@jit_inline
def _next_tie(ev_time, e, hi):
    """The next run ``[a, b)`` of equal time stamps with ``b > e`` (``a == b == hi``: none left)."""
    while e < hi and ev_time[e] != ev_time[e - 1]:
        e += 1
    if e >= hi:
        return hi, hi
    a = e - 1
    while e < hi and ev_time[e] == ev_time[a]:
        e += 1
    return a, e


@jit
def order_ties(seg_lo, seg_hi, ev_time, ev_prog, ev_w, PT):
    """Sort every run of equal time stamps of every segment by tie rank, stably and in place.

    Events with one time stamp never see each other, so any order within a run means the
    same; in rank order the fast loops can run them one after the other
    (``programs.tie_ranks``). One pass over the times when there are no ties. Runs longer
    than ``_TIE_INSERTION`` are left to :func:`order_long_ties`; returns their number.
    """
    nw = ev_w.shape[1]
    wrow = np.empty(nw, ev_w.dtype)
    n_long = 0
    for sg in range(seg_lo.shape[0]):
        hi = seg_hi[sg]
        e = seg_lo[sg] + 1
        while True:
            a, e = _next_tie(ev_time, e, hi)
            if a >= hi:
                break
            if e - a > _TIE_INSERTION:
                n_long += 1
                continue
            for i in range(a + 1, e):
                p = ev_prog[i]
                r = PT[PT[p]] >> TIE_SHIFT
                j = i
                while j > a and (PT[PT[ev_prog[j - 1]]] >> TIE_SHIFT) > r:
                    j -= 1
                if j < i:
                    for c in range(nw):
                        wrow[c] = ev_w[i, c]
                    for m in range(i, j, -1):
                        ev_prog[m] = ev_prog[m - 1]
                        for c in range(nw):
                            ev_w[m, c] = ev_w[m - 1, c]
                    ev_prog[j] = p
                    for c in range(nw):
                        ev_w[j, c] = wrow[c]
    return n_long


@jit
def order_long_ties(seg_lo, seg_hi, ev_time, ev_prog, ev_w, PT):
    """The runs of equal time stamps that :func:`order_ties` left (longer than
    ``_TIE_INSERTION``), by a stable counting sort on tie rank (a kernel of its own: most
    inputs never need it compiled)."""
    nw = ev_w.shape[1]
    n_prog = PT[0] if PT.shape[0] > 0 else 0
    start = np.zeros(n_prog + 2, np.int64)
    for sg in range(seg_lo.shape[0]):
        hi = seg_hi[sg]
        e = seg_lo[sg] + 1
        while True:
            a, e = _next_tie(ev_time, e, hi)
            if a >= hi:
                break
            if e - a <= _TIE_INSERTION:
                continue
            for r in range(n_prog + 2):
                start[r] = 0
            for i in range(a, e):
                start[(PT[PT[ev_prog[i]]] >> TIE_SHIFT) + 1] += 1
            for r in range(1, n_prog + 2):
                start[r] += start[r - 1]
            prog = np.empty(e - a, np.int64)
            w = np.empty((e - a, nw), ev_w.dtype)
            for i in range(a, e):
                r = PT[PT[ev_prog[i]]] >> TIE_SHIFT
                j = start[r]
                start[r] = j + 1
                prog[j] = ev_prog[i]
                for c in range(nw):
                    w[j, c] = ev_w[i, c]
            for i in range(e - a):
                ev_prog[a + i] = prog[i]
                for c in range(nw):
                    ev_w[a + i, c] = w[i, c]


@jit_reading("n_carry", "first", "second", "also")
def segment_layout(n_carry, first, second, also, min_events, starts):
    """Where the events go and which segments the kernels visit. Each partition's segment comes in
    partition order: its carried events first (``n_carry``, per partition; empty: none), then its
    kept new events of the first range of the rows (``first``, per partition) and of the second
    (``second``; empty: one range). Writes to ``starts[r, p]`` the slot where range ``r``'s events of
    partition ``p`` begin (:func:`fill_events`). Returns the first slot of each partition's segment,
    the number of events, the segments of the partitions with events or flagged in ``also`` (empty:
    none) as ``(pid, lo, hi, replay)`` (partition, first and end slot, carried events), and the same
    of those with ``min_events`` events or more, which the kernel runs (``min_events`` 0: the same
    arrays). In NumPy this was some fifteen passes over the partitions (10^6 of them: some 10 ms)."""
    n = first.shape[0]
    seg_start = np.empty(n, np.int64)
    carried = n_carry.shape[0] > 0
    two = second.shape[0] > 0
    flagged = also.shape[0] > 0
    at = 0
    m = 0
    r = 0
    for p in range(n):
        seg_start[p] = at
        pos = at + n_carry[p] if carried else at
        starts[0, p] = pos
        pos += first[p]
        if two:
            starts[1, p] = pos
            pos += second[p]
        c = pos - at
        if c > 0 or (flagged and also[p]):
            m += 1
            r += c >= min_events
        at = pos
    pid = np.empty(m, np.int64)
    lo = np.empty(m, np.int64)
    hi = np.empty(m, np.int64)
    replay = np.empty(m, np.int64)
    every = r == m
    r_pid = pid if every else np.empty(r, np.int64)
    r_lo = lo if every else np.empty(r, np.int64)
    r_hi = hi if every else np.empty(r, np.int64)
    r_replay = replay if every else np.empty(r, np.int64)
    j = 0
    k = 0
    for p in range(n):
        a = seg_start[p]
        b = seg_start[p + 1] if p + 1 < n else at
        if b == a and not (flagged and also[p]):
            continue
        c = n_carry[p] if carried else 0
        pid[j] = p
        lo[j] = a
        hi[j] = b
        replay[j] = c
        j += 1
        if not every and b - a >= min_events:
            r_pid[k] = p
            r_lo[k] = a
            r_hi[k] = b
            r_replay[k] = c
            k += 1
    return seg_start, at, (pid, lo, hi, replay), (r_pid, r_lo, r_hi, r_replay)


def segment_layout_numpy(n_carry, first, second, also, min_events, starts):
    """:func:`segment_layout` in NumPy, for fewer partitions than ``NUMPY_BELOW``: some ten passes
    over them, about twice the kernel's time (10^4 partitions: 165 against 91 us), and a first run
    on a cold cache does not compile the kernel (0.45-0.55 s)."""
    n = len(first)
    carry = n_carry if len(n_carry) else np.zeros(n, np.int64)
    count = carry + first + (second if len(second) else 0)
    seg_start = np.zeros(n, np.int64)
    np.cumsum(count[:-1], out=seg_start[1:])
    starts[0] = seg_start + carry
    if len(second):
        starts[1] = starts[0] + first
    on = np.flatnonzero((count > 0) | (also if len(also) else False))
    seg = (on.astype(np.int64), seg_start[on], seg_start[on] + count[on], carry[on].astype(np.int64))
    runs = count[on] >= min_events
    run = seg if runs.all() else tuple(a[runs] for a in seg)
    return seg_start, int(count.sum()), seg, run


def fill_events_numpy(keep, pid, t, prog, w, pos, out_t, out_prog, out_w):
    """:func:`fill_events` (and :func:`fill_carry`) in NumPy, for few rows (``NUMPY_BELOW``): the rows
    where ``keep`` holds (every row: ``keep`` None) to ``pos[partition]`` on, in their order,
    ``pos`` advanced; ``prog`` the program of each row."""
    rows = np.arange(len(pid)) if keep is None else np.flatnonzero(keep)
    p = pid[rows]
    order = np.argsort(p, kind="stable")
    rows, p = rows[order], p[order]
    first = np.searchsorted(p, p)  # the first of each row's partition among the sorted rows
    dest = pos[p] + np.arange(len(p)) - first
    out_t[dest] = t[rows]
    out_prog[dest] = prog[rows]
    out_w[dest] = w[rows]
    np.add.at(pos, p, 1)


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


@jit_callee
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


@jit_reading("rank_of_pid", "pid", "key")
def rank_histogram(rank_of_pid, pid, key, lo, hi, count, first, last):
    """Rows ``[lo, hi)`` of the result: ``count[rank]`` += 1 per row of a partition of that rank;
    ``first`` / ``last`` (filled with the int64 max / min by the caller) get each partition's first
    and last key. Returns True when the keys of every partition strictly rise in these rows."""
    ok = True
    for i in range(lo, hi):
        p = pid[i]
        count[rank_of_pid[p]] += 1
        if key[i] <= last[p]:
            ok = False
        if first[p] == np.iinfo(np.int64).max:
            first[p] = key[i]
        last[p] = key[i]
    return ok


@jit_reading("rank_of_pid", "pid")
def rank_place(rank_of_pid, pid, lo, hi, pos, order):
    """Stable counting sort, second pass: row ``i`` of ``[lo, hi)`` goes to ``order[pos[rank]]``
    (``pos`` advanced in place; ranges placed in threads get disjoint ``pos``)."""
    for i in range(lo, hi):
        r = rank_of_pid[pid[i]]
        order[pos[r]] = i
        pos[r] += 1


@jit_reading("rank_of_pid", "pid", "key")
def rank_scatter(rank_of_pid, pid, key, lo, hi, vi, vf, pos, out_key, out_vi, out_vf):
    """Stable counting sort, second pass, moving the cells themselves: row ``i`` of ``[lo, hi)`` goes
    to ``j = pos[rank]`` (``pos`` advanced in place): ``out_key[j] = key[i]`` and the row's values
    ``vi[i, :]`` / ``vf[i, :]`` to column ``j`` of ``out_vi`` / ``out_vf`` (one contiguous row per
    value column)."""
    ni, nf = vi.shape[1], vf.shape[1]
    for i in range(lo, hi):
        r = rank_of_pid[pid[i]]
        j = pos[r]
        pos[r] = j + 1
        out_key[j] = key[i]
        for c in range(ni):
            out_vi[c, j] = vi[i, c]
        for c in range(nf):
            out_vf[c, j] = vf[i, c]


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


@jit_reading("group_of_pid", "t", "cls", "cls_prog", "pid")
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


#: Up to this many candidate types, a view is compared with each of them instead of hashed: the hash
#: and its two dependent table reads took 8.7 ns a view, three comparisons 4.0-4.6 ns (10^6 views).
_COMPARE_UP_TO = 8


@jit_inline
def _view_words(views, i, lo_mask, hi_mask):
    """The words of view ``i`` with the bytes past an inline string's length cleared."""
    lo = views[i, 0]
    hi = views[i, 1]
    ln = lo & np.uint64(0xFFFFFFFF)
    ix = ln if ln < np.uint64(13) else np.uint64(13)
    return lo & lo_mask[ix], hi & hi_mask[ix]


@jit_inline
def _view_code(views, i, lo_mask, hi_mask, m1, m2, shift, tab, cand_lo, cand_hi):
    """Type code of view ``i`` (1 + candidate index; 0: none) through the hash: see :func:`view_codes`."""
    lo, hi = _view_words(views, i, lo_mask, hi_mask)
    c = tab[((lo * m1) ^ (hi * m2)) >> shift]
    return c * ((cand_lo[c] == lo) & (cand_hi[c] == hi))


@jit_inline
def _view_code_compared(views, i, lo_mask, hi_mask, cand_lo, cand_hi):
    """:func:`_view_code` by comparing the view with each candidate (they are distinct: one matches
    at most), for few candidates (``_COMPARE_UP_TO``)."""
    lo, hi = _view_words(views, i, lo_mask, hi_mask)
    c = np.int64(0)
    for k in range(1, cand_lo.shape[0]):
        c += k * ((cand_lo[k] == lo) & (cand_hi[k] == hi))
    return c


@jit
def view_codes(views, m1, m2, shift, tab, cand_lo, cand_hi, codes):
    """Type code of each Arrow string view (1 + candidate index; 0: none) into ``codes``.

    ``views`` is the (n, 2) uint64 view buffer of a ``string_view`` array. Strings
    longer than 12 bytes are not inline and get code 0 (the caller only takes this
    path when no candidate is longer). Branch-free: types come in random order.
    Callers pass slices rather than an index range: loops from 0 let LLVM drop the
    negative-index wraparound (measured 2.7x faster).
    """
    lo_mask = VIEW_LO_MASK
    hi_mask = VIEW_HI_MASK
    if cand_lo.shape[0] <= _COMPARE_UP_TO + 1:
        for i in range(codes.shape[0]):
            codes[i] = _view_code_compared(views, i, lo_mask, hi_mask, cand_lo, cand_hi)
    else:
        for i in range(codes.shape[0]):
            codes[i] = _view_code(views, i, lo_mask, hi_mask, m1, m2, shift, tab, cand_lo, cand_hi)


@jit
def view_codes_count(views, m1, m2, shift, tab, cand_lo, cand_hi, n_parts, cls_prog, pid, codes):
    """:func:`view_codes` and :func:`count_events` in one pass: the codes into ``codes``, and per
    partition the events that are kept (``cls_prog[code] >= 0``)."""
    lo_mask = VIEW_LO_MASK
    hi_mask = VIEW_HI_MASK
    count = np.zeros(n_parts, np.int64)
    if cand_lo.shape[0] <= _COMPARE_UP_TO + 1:
        for i in range(codes.shape[0]):
            c = _view_code_compared(views, i, lo_mask, hi_mask, cand_lo, cand_hi)
            codes[i] = c
            count[pid[i]] += cls_prog[c] >= 0
    else:
        for i in range(codes.shape[0]):
            c = _view_code(views, i, lo_mask, hi_mask, m1, m2, shift, tab, cand_lo, cand_hi)
            codes[i] = c
            count[pid[i]] += cls_prog[c] >= 0
    return count


@jit_reading("phys", "lut", "cls_prog", "pid")
def lut_codes_count(phys, lut, n_parts, cls_prog, pid, codes):
    """:func:`view_codes_count` for a Categorical / Enum type column: the code of each physical id
    through ``lut`` (ids past its end: ``lut[-1]``, 0) into ``codes``, and per partition the events
    that are kept (``cls_prog[code] >= 0``)."""
    last = lut.shape[0] - 1
    count = np.zeros(n_parts, np.int64)
    for i in range(codes.shape[0]):
        x = np.int64(phys[i])
        c = lut[x if x < last else last]
        codes[i] = c
        count[pid[i]] += cls_prog[c] >= 0
    return count


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

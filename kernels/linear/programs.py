"""Programs of the linear-map kernels and their packed table ``PT`` (plain Python).

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
"""

from __future__ import annotations

import numpy as np

from .constants import F_DELTA, F_END, F_FAST, F_FASTW, F_INV, F_LEFT, F_RIGHT, F_TIE, TIE_SHIFT


def pack_programs(progs, out_rows):
    """Pack programs into the int64 table ``PT`` of :func:`run_segments` (plain Python).

    ``progs``: one ``(triplets, resets, is_end)`` per program id, ``triplets`` a
    list of ``(dst, src, wk)``. Orders the triplets for in-place application
    and sets the flags (see the module docstring).
    """
    outs = {int(r) for r in out_rows}
    ranks, tie_self = tie_ranks(progs)
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
                if not resets and all(d != s for d, s, _ in trips):
                    flags |= F_INV
        if ranks[len(offs)]:
            flags |= ranks[len(offs)] << TIE_SHIFT
            if tie_self[len(offs)]:
                flags |= F_TIE
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


#: Above this many programs the tie ranks are not computed (pairwise test); ties then take
#: the general loop as before.
MAX_TIE_PROGRAMS = 512


def tie_ranks(progs):
    """Per program, a rank (0: none) for running events with one time stamp one after the other.

    Events with equal time stamps never see each other: the group's map adds every
    contribution from the pre-state (``_apply_generic``). Applied one after the other in
    place, events ``a`` then ``b`` give the same result when ``a`` writes (adds to or
    resets) no row that ``b`` reads, and adds to no row that ``b`` resets. Ranks order the
    programs so that, sorted by rank within a time stamp, every pair of events of
    different programs satisfies this (a topological order of the "must come first"
    relation); a program in a cycle of it, or in a pair that fits in neither order, gets
    rank 0. ``tie_self[p]``: two events of program ``p`` fit (no Kleene self-loop and the
    like). The fast loops run a tie in place only when every event of it has a rank,
    ranks increase along it, and equal ranks are one program with ``tie_self``.
    """
    n = len(progs)
    if n > MAX_TIE_PROGRAMS:
        return [0] * n, [False] * n
    srcs, dsts, resets = [], [], []
    for trips, rs, _ in progs:
        srcs.append({int(t[1]) for t in trips})
        dsts.append({int(t[0]) for t in trips})
        resets.append({int(r) for r in rs})

    def fits(a, b):  # a then b, in place, equals both from the pre-state
        return not ((dsts[a] | resets[a]) & srcs[b]) and not (dsts[a] & resets[b])

    tie_self = [fits(p, p) for p in range(n)]
    bad = [False] * n
    succ: list[list[int]] = [[] for _ in range(n)]
    indeg = [0] * n
    for a in range(n):
        for b in range(a + 1, n):
            ab, ba = fits(a, b), fits(b, a)
            if not ab and not ba:
                bad[a] = bad[b] = True
            elif not ba:  # a must come first
                succ[a].append(b)
                indeg[b] += 1
            elif not ab:
                succ[b].append(a)
                indeg[a] += 1
    ready = [p for p in range(n) if indeg[p] == 0]
    order = []
    while ready:
        p = ready.pop()
        order.append(p)
        for q in succ[p]:
            indeg[q] -= 1
            if indeg[q] == 0:
                ready.append(q)
    ranks = [0] * n
    for i, p in enumerate(order):
        ranks[p] = i + 1
    for p in range(n):
        if bad[p] or indeg[p] > 0:  # in a cycle (never reached indegree 0) or a misfit pair
            ranks[p] = 0
    return ranks, tie_self

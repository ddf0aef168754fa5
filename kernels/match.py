"""Match construction (SASE / SASE+): a shared match graph per partition, then a resumable enumeration.

Reference: SASE (SIGMOD'06) sequence scan and construction over active
instance stacks; SASE+ (SIGMOD'08) NFA^b with a shared match buffer and the
four event selection strategies. ``docs/matching.md`` derives the design;
``docs/semantics.md`` 4.5 and 5 are the contract.

Phase 1, :func:`build_match_graph` (SASE's sequence scan, SASE+'s shared
buffer): events arrive sorted by (partition, time). An event ``e`` that is a
candidate of occurrence ``o`` (type and local predicates, computed by the
caller) becomes the *node* ``e * n_occ + o``; its incoming edges are the
earlier nodes ``x`` of every template transition ``p -> o`` that

* are earlier in time, inside the window (``t_e - w < t_x``),
* pass the selection strategy: strict contiguity (``t_x`` is the previous
  time stamp of the whole input), partition contiguity (the previous time
  stamp of the partition), skip till next match (``e`` is at the first time
  after ``x`` of any candidate successor of ``x``: ``nxt[x, p]``), skip till
  any match (no condition),
* satisfy the transition's edge predicate (postfix program, the scan path's
  interpreter :func:`cepvec.kernels.scan._eval_block`),
* have no match of a guarding negation strictly between them,
* can still reach a start node inside the window.

Like a stack entry of SASE, a node keeps pointers to its predecessors (the
edges, in CSR order: node ids increase with time, so ``eptr`` is filled in
order) and ``ls[node]``, the latest start time of a path that reaches it
(``NEG_INF``: none; window pruning reads it). Negative sub-patterns are
matched on the same graph; for each, the end nodes are kept per partition
with the running maximum of their latest start (``LS_N(T)``: the latest
start of an N-match that ended before ``T``).

Phase 2, :func:`emit_matches` (SASE's construction): a depth-first walk
backwards from every end node, in the given order, along edges whose node
can still start inside the window, emits a match at every start node (after
the negated start / end checks). The walk keeps its stack in ``state`` and
returns when the output buffer is full, so output is produced in batches of
bounded size and ``limit`` stops it early.
"""

from __future__ import annotations

import numpy as np

from ._jit import jit, jit_inline
from .scan import _eval_block, eval_scratch

NEG_INF = -9223372036854775807 - 1
POS_INF = 9223372036854775807
UNSET = POS_INF  # nxt[x, p] before any successor arrived

STRAT_ANY = 0
STRAT_NEXT = 1
STRAT_PARTITION = 2
STRAT_STRICT = 3

MODE_NONE = 0
MODE_WITHIN = 1


@jit_inline
def _ls_before(neg_t, neg_pm, g, lo, hi, T):
    """Latest start of a match of negation ``g`` (entries ``[lo, hi)``) that ended strictly before ``T``."""
    a = lo
    b = hi
    while a < b:
        m = (a + b) >> 1
        if neg_t[g, m] < T:
            a = m + 1
        else:
            b = m
    if a == lo:
        return NEG_INF
    return neg_pm[g, a - 1]


@jit
def build_match_graph(strategy, mode, w, seg_ptr, t, gprev, cand, start_ok, occ_pat, occ_start, occ_end, n_pat,
                      in_ptr, in_tr, tr_src, tr_gptr, tr_guards, plo, phi, prog_op, prog_arg, constI, constF,
                      colI, nI, colF, nF, max_depth, ls, eptr, edges, nxt, neg_t, neg_pm, neg_seg):
    """Phase 1 (see the module docstring). Fills ``ls``, ``eptr``, ``nxt``, ``neg_*``; returns the edges.

    ``edges`` is grown (doubled) when full; the returned array holds ``eptr[-1]`` edges. Events are
    sorted by (partition, time); ``seg_ptr`` bounds the partitions. ``occ_pat[o]`` is the negation
    of occurrence ``o`` or ``n_pat - 1`` (main pattern); ``occ_start``/``occ_end`` mark the start and
    end occurrences of their own template; ``start_ok[e, o]``: ``e`` may start a match as ``o``
    (SASE+ ``v[1]`` predicates of a Kleene ``v`` at the start of the pattern).
    """
    n = t.shape[0]
    n_occ = cand.shape[1]
    n_seg = seg_ptr.shape[0] - 1
    G = n_pat - 1
    neg_cnt = np.zeros(max(G, 1), np.int64)
    widest = 1
    for s in range(n_seg):
        widest = max(widest, seg_ptr[s + 1] - seg_ptr[s])
    blk, mask, sI, sF, sN = eval_scratch(max_depth, widest)
    # skip till next match: per occurrence, the events of the partition still waiting for their next
    # event (nxt unset), newest last; compacted when the time stamp advances. Scanning them instead of
    # the whole window makes the cost per event the number of open runs, not the window length.
    # (only occurrences with a successor wait for one: an end state would stay open forever)
    open_ev = np.empty((n_occ, widest if strategy == STRAT_NEXT else 1), np.int64)
    open_cnt = np.zeros(n_occ, np.int64)
    has_next = np.zeros(n_occ, np.bool_)
    for k in range(tr_src.shape[0]):
        has_next[tr_src[k]] = True
    ne = 0
    eptr[0] = 0
    for s in range(n_seg):
        lo = seg_ptr[s]
        hi = seg_ptr[s + 1]
        for g in range(G):
            neg_seg[g, s] = neg_cnt[g]
        for o in range(n_occ):
            open_cnt[o] = 0
        prev_time = NEG_INF  # latest time stamp of the partition before the current one
        for i in range(lo, hi):
            ti = t[i]
            lower = ti - w if mode == MODE_WITHIN else NEG_INF
            if i > lo and t[i - 1] < ti:
                prev_time = t[i - 1]
                if strategy == STRAT_NEXT:
                    for o in range(n_occ):
                        kept = 0
                        for j in range(open_cnt[o]):
                            x = open_ev[o, j]
                            if nxt[x * n_occ + o] == UNSET and t[x] > lower:
                                open_ev[o, kept] = x
                                kept += 1
                        open_cnt[o] = kept
            for o in range(n_occ):
                node = i * n_occ + o
                best = NEG_INF
                if cand[i, o]:
                    if occ_start[o] and start_ok[i, o]:
                        best = ti
                    for kk in range(in_ptr[o], in_ptr[o + 1]):
                        k = in_tr[kk]
                        p = tr_src[k]
                        # the block of predecessors the strategy allows
                        nc = 0
                        if strategy == STRAT_NEXT:
                            for j in range(open_cnt[p] - 1, -1, -1):
                                x = open_ev[p, j]
                                if t[x] < ti and t[x] > lower:
                                    v = nxt[x * n_occ + p]
                                    if v == UNSET or v == ti:
                                        blk[nc] = x
                                        nc += 1
                        x = i - 1 if strategy != STRAT_NEXT else lo - 1
                        while x >= lo:
                            tx = t[x]
                            if tx <= lower:
                                break
                            if tx < ti and cand[x, p]:
                                if strategy == STRAT_STRICT:
                                    if tx < gprev[i]:
                                        break
                                    if tx == gprev[i]:
                                        blk[nc] = x
                                        nc += 1
                                elif strategy == STRAT_PARTITION:
                                    if tx < prev_time:
                                        break
                                    blk[nc] = x
                                    nc += 1
                                else:
                                    blk[nc] = x
                                    nc += 1
                            x -= 1
                        if nc == 0:
                            continue
                        if plo[k] < phi[k]:
                            _eval_block(prog_op, prog_arg, plo[k], phi[k], constI, constF, colI, nI, colF, nF,
                                        blk, nc, i, sI, sF, sN, mask)
                        else:
                            for c in range(nc):
                                mask[c] = True
                        for c in range(nc):
                            if not mask[c]:
                                continue
                            x = blk[c]
                            xn = x * n_occ + p
                            if strategy == STRAT_NEXT:
                                nxt[xn] = ti
                            tx = t[x]
                            ok = True
                            for gg in range(tr_gptr[k], tr_gptr[k + 1]):
                                g = tr_guards[gg]
                                if _ls_before(neg_t, neg_pm, g, neg_seg[g, s], neg_cnt[g], ti) > tx:
                                    ok = False
                                    break
                            if not ok:
                                continue
                            lx = ls[xn]
                            if lx == NEG_INF or lx <= lower:
                                continue
                            if ne == edges.shape[0]:
                                grown = np.empty(2 * ne + 16, np.int64)
                                for j in range(ne):
                                    grown[j] = edges[j]
                                edges = grown
                            edges[ne] = xn
                            ne += 1
                            if lx > best:
                                best = lx
                ls[node] = best
                eptr[node + 1] = ne
                if strategy == STRAT_NEXT and cand[i, o] and has_next[o]:
                    open_ev[o, open_cnt[o]] = i
                    open_cnt[o] += 1
                g = occ_pat[o]
                if g < G and occ_end[o] and best != NEG_INF:
                    c = neg_cnt[g]
                    neg_t[g, c] = ti
                    pm = best
                    if c > neg_seg[g, s] and neg_pm[g, c - 1] > pm:
                        pm = neg_pm[g, c - 1]
                    neg_pm[g, c] = pm
                    neg_cnt[g] = c + 1
    for g in range(G):
        neg_seg[g, n_seg] = neg_cnt[g]
    return edges


@jit
def emit_matches(mode, w, ends, end_seg, t, n_occ, node_start, ls, eptr, edges, start_neg, end_neg,
                 neg_t, neg_pm, neg_seg, limit, state, st_node, st_cur, out_match, out_pos, out_node):
    """Phase 2: write matches (one row per event, first event first) until the buffers are full.

    ``state`` = (index into ``ends``, stack depth, top node not yet tested as a start, matches
    written so far); it is updated in place so the next call continues. ``node_start[node]``: the
    node may start a match of the main pattern (its start occurrence, ``v[1]`` predicates true). Returns the rows
    written; 0 with ``state[0] == len(ends)`` (or ``limit`` reached) means done. The buffers must
    hold the longest match (``st_node`` has room for any path).
    """
    cap = out_match.shape[0]
    n_ends = ends.shape[0]
    e_idx = state[0]
    depth = state[1]
    fresh = state[2]
    done = state[3]
    rows = 0
    while e_idx < n_ends:
        if limit >= 0 and done >= limit:
            break
        if depth == 0:
            y = ends[e_idx]
            ty = t[y // n_occ]
            lower = ty - w if mode == MODE_WITHIN else NEG_INF
            if ls[y] == NEG_INF or ls[y] <= lower:
                e_idx += 1
                continue
            st_node[0] = y
            st_cur[0] = eptr[y]
            depth = 1
            fresh = 1
        y = st_node[0]
        ty = t[y // n_occ]
        lower = ty - w if mode == MODE_WITHIN else NEG_INF
        node = st_node[depth - 1]
        if fresh == 1:
            if node_start[node]:
                first = t[node // n_occ]
                s = end_seg[e_idx]
                ok = True
                if start_neg >= 0:
                    v = _ls_before(neg_t, neg_pm, start_neg, neg_seg[start_neg, s], neg_seg[start_neg, s + 1],
                                   first)
                    if v != NEG_INF and (mode != MODE_WITHIN or v > ty - w):
                        ok = False
                if ok and end_neg >= 0:
                    bound = POS_INF if mode != MODE_WITHIN else first + w
                    v = _ls_before(neg_t, neg_pm, end_neg, neg_seg[end_neg, s], neg_seg[end_neg, s + 1], bound)
                    if v > ty:
                        ok = False
                if ok:
                    if rows + depth > cap:
                        break  # resume here (fresh stays 1)
                    for d in range(depth):
                        out_match[rows] = done
                        out_pos[rows] = d
                        out_node[rows] = st_node[depth - 1 - d]
                        rows += 1
                    done += 1
            fresh = 0
            continue
        c = st_cur[depth - 1]
        hi = eptr[node + 1]
        nxt_node = -1
        while c < hi:
            x = edges[c]
            c += 1
            if ls[x] > lower:
                nxt_node = x
                break
        st_cur[depth - 1] = c
        if nxt_node >= 0:
            st_node[depth] = nxt_node
            st_cur[depth] = eptr[nxt_node]
            depth += 1
            fresh = 1
        else:
            depth -= 1
            if depth == 0:
                e_idx += 1
    state[0] = e_idx
    state[1] = depth
    state[2] = fresh
    state[3] = done
    return rows

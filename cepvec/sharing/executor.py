"""The shared executor: the queries of one sharing class on one trie of prefix counters.

Every query the executor runs (:func:`executor_support`) is a fixed-length
``SEQ`` of event types with ``COUNT(*)``, under ``WITHIN ... SLIDE``, ``WITHIN``
alone (start panes are each partition's distinct times within the window),
``EMIT CHANGES`` (rows read off the leaves at END times) or no window, with GROUP-BY and equivalence predicates ``[attr]`` (partitions), local
predicates (``WHERE A.price > 10``), negations of one event type (``SEQ(A, NOT N, B)``,
``SEQ(A, B, NOT N)``, ``SEQ(NOT N, A, B)``) and SUM / AVG / COUNT / MIN / MAX of a position. The queries of the class become one trie of
prefixes (A-Seq section 4's prefix sharing) whose symbols are (event type, local
predicates, the negations that follow): a prefix common to several queries,
types, predicates and negations alike, is counted once per event and window for
all of them; an event of a negated type resets the prefixes it guards, and ends
the matches of the windows that contain it for queries that end with its
negation. Each
distinct local predicate is evaluated once per batch as a boolean column
(:func:`cepvec.runtime.polars_expr.predicate_mask`, as the linear path does);
a node with a predicate skips the events where it does not hold.
:mod:`cepvec.kernels.sharing` runs the counters; this module encodes the batches (type codes, partition ids through
:class:`cepvec.runtime.partitions.Partitions`), keeps the state across batches
(results do not depend on the cuts: the state is per partition and window,
and equal times are handled inside the kernel) and builds each query's frame
with :func:`cepvec.runtime.output.assemble_output`, as the linear path does.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import polars as pl

from cepvec.kernels import sharing as K
from cepvec.kernels.trend import partition_order
from cepvec.paths.linear.plan import plan_components
from cepvec.runtime.type_codes import TypeCodes
from cepvec.plan.ir import Query
from cepvec.runtime.order_keys import order_keys, orderable
from cepvec.runtime.output import (assemble_output, group_ranks, in_rank_order, overflow_error, select_weights,
                                   sums_overflow)
from cepvec.runtime.partitions import Partitions
from cepvec.runtime.polars_expr import component_weight, predicate_mask
from cepvec.runtime.prepare import Prepared
from cepvec.sharing.sequences import local_key, negated_of, positions_of, steps_of


class Trie:
    """The prefixes of the queries' sequences of steps (event type, local predicate key, guard): ``parent``,
    event type and predicate per node, the last node per query. Two positions are one step when type,
    predicates and the negations that follow them agree, so queries share a prefix only then.

    A node whose step has a guard (``SEQ(A, NOT N, B)``: the node of prefix ``A`` guarded by ``N``)
    is *reset* by an event of a guard type (with the guard's predicate): its prefixes that ended
    before that event can no longer be extended (``reset_ptr`` / ``reset_nodes`` / ``reset_pred``
    by type code, as ``type_ptr`` / ``type_nodes``)."""

    def __init__(self, seqs: list[tuple[tuple, ...]], chans: list[list[tuple[int, int, int]]] | None = None):
        """``seqs``: per query its steps; ``chans``: per query its channels ``(position k (1-based),
        weight column, row kind)`` (``kernels.sharing.KIND_*``). A channel is a row for each prefix of the
        query of length k or more; the row of length k binds position k (the parent's count times
        the weight), longer ones add their parent's channel row. Queries share a channel row where
        prefix, position and weight agree."""
        self.node_of: dict[tuple, int] = {(): 0}
        self.parent = [0]
        self.last: list[tuple | None] = [None]
        self.w = [-1]  # per row: weight column it binds (-1: none)
        self.kind = [K.KIND_COUNT]  # per row: kernels.sharing.KIND_*
        self.leaf = []
        self.chan_leaf: list[list[int]] = []
        for qi, seq in enumerate(seqs):
            for j in range(1, len(seq) + 1):
                pre = seq[:j]
                if pre not in self.node_of:
                    self._row(pre, self.node_of[seq[:j - 1]], seq[j - 1], -1, K.KIND_COUNT)
            self.leaf.append(self.node_of[seq])
            leaves = []
            for k, wcol, kind in (chans[qi] if chans else ()):
                for j in range(k, len(seq) + 1):
                    key = (seq[:j], k, wcol)
                    if key not in self.node_of:
                        par = self.node_of[seq[:k - 1]] if j == k else self.node_of[(seq[:j - 1], k, wcol)]
                        self._row(key, par, seq[j - 1], wcol if j == k else -1, kind)
                leaves.append(self.node_of[(seq, k, wcol)])
            self.chan_leaf.append(leaves)
        steps = [x for x in self.last if x is not None]
        guards = [g for x in steps for g in (*x[2], *x[3])]
        self.types = list(dict.fromkeys([x[0] for x in steps] + [t for t, _ in guards]))
        #: distinct local predicate keys (one mask column each, whatever type they are used with)
        self.preds = list(dict.fromkeys([x[1] for x in steps if x[1]] + [key for _, key in guards if key]))
        code = {t: c for c, t in enumerate(self.types, start=1)}
        pred = {key: j for j, key in enumerate(self.preds)}
        self.node_pred = np.full(len(self.parent), -1, np.int64)
        # per type code: whether a node or guard of it has no predicate, and which predicate columns they use
        self.code_free = np.zeros(len(self.types) + 1, np.bool_)
        self.code_preds = np.zeros((len(self.types) + 1, len(self.preds)), np.bool_)
        depth = [0] * len(self.parent)
        resets: list[list[tuple[int, int]]] = [[] for _ in range(len(self.types) + 1)]
        starts: list[list[tuple[int, int]]] = [[] for _ in range(len(self.types) + 1)]
        #: per row: the first node of its prefix when that node has a start guard (a negated start), else -1
        self.first = np.full(len(self.parent), -1, np.int64)
        for node in range(1, len(self.parent)):
            depth[node] = depth[self.parent[node]] + 1
            t, key, guard, start = self.last[node]
            par = self.parent[node]
            if par == 0:  # the count row of this one-step prefix (a channel row binds beside it)
                self.first[node] = self.node_of[(self.last[node],)] if start else -1
            else:
                self.first[node] = self.first[par]
            if par == 0 and start and self.w[node] < 0:  # a count row (its channels share its times)
                for gt, gk in start:
                    starts[code[gt]].append((node, pred[gk] if gk else -1))
            for c, j in [(code[t], pred[key] if key else -1)] + [(code[gt], pred[gk] if gk else -1)
                                                              for gt, gk in (*guard, *start)]:
                if j >= 0:
                    self.code_preds[c, j] = True
                else:
                    self.code_free[c] = True
            if key:
                self.node_pred[node] = pred[key]
            for gt, gk in guard:
                resets[code[gt]].append((node, pred[gk] if gk else -1))
        by_code: list[list[int]] = [[] for _ in range(len(self.types) + 1)]
        for node in sorted(range(1, len(self.parent)), key=lambda x: -depth[x]):  # deepest first (kernel)
            by_code[code[self.last[node][0]]].append(node)
        self.type_ptr = np.zeros(len(by_code) + 1, np.int64)
        self.type_ptr[1:] = np.cumsum([len(b) for b in by_code])
        self.type_nodes = np.array([x for b in by_code for x in b], np.int64)
        self.reset_ptr = np.zeros(len(resets) + 1, np.int64)
        self.reset_ptr[1:] = np.cumsum([len(r) for r in resets])
        self.reset_nodes = np.array([x for r in resets for x, _ in r], np.int64)
        self.reset_pred = np.array([j for r in resets for _, j in r], np.int64)
        # a negated start: an N event moves the N times of the first nodes it guards
        self.start_ptr = np.zeros(len(starts) + 1, np.int64)
        self.start_ptr[1:] = np.cumsum([len(x) for x in starts])
        self.start_nodes = np.array([x for st in starts for x, _ in st], np.int64)
        self.start_pred = np.array([j for st in starts for _, j in st], np.int64)

    def _row(self, key, parent: int, step: tuple, w: int, kind: int) -> None:
        self.node_of[key] = len(self.parent)
        self.parent.append(parent)
        self.last.append(step)
        self.w.append(w)
        self.kind.append(kind)

    @property
    def size(self) -> int:
        """Counters per window and partition (the empty prefix included)."""
        return len(self.parent)


class SharedRun:
    """One run of the shared executor over time-ordered batches (``push`` then ``finish``)."""

    #: output rows of the first kernel call, and at most (four 8-byte columns: 64 MB) once calls fill them
    FIRST_ROWS = 1 << 14
    MAX_ROWS = 1 << 21

    def __init__(self, queries: dict[str, Query], prep: Prepared, *, numeric: str = "int64"):
        self.queries = queries
        self.names = list(queries)
        self.q0 = q0 = queries[self.names[0]]
        self.prep = prep
        self.numeric = numeric
        # SUM / AVG: the linear path's components (a sum, a count of non-null values, a count of a
        # position's events); the sums and non-null counts are channels of the trie, one weight
        # column per distinct (attribute, kind)
        self.plans = {n: SimpleNamespace(**dict(zip(("components", "comp_of_agg"), plan_components(queries[n]))))
                      for n in self.names}
        weights: dict[tuple[str, str], int] = {}
        self.weight_query: dict[tuple[str, str], Query] = {}  # a query reading it (MIN / MAX key errors)
        schema = prep.df.schema
        chans = []
        # float sums of a query that takes back (a negation after a position): a negation takes a prefix's
        # or a window's earlier value back by subtraction, and inf - inf is NaN. Such a sum is three
        # channels, each exact under subtraction: its finite values, and the number of matches holding
        # +inf and -inf (combined in _values)
        self.inf_chans: dict[str, dict[int, tuple[int, int, int]]] = {}  # query -> component -> channels
        for n in self.names:
            q, comps = queries[n], self.plans[n].components
            takes_back = numeric != "int64" and any(step[2] for step in steps_of(q))
            split = {k for k, c in enumerate(comps) if takes_back and c.kind == "sum" and schema[c.attr].is_float()}
            kinds = [(c.attr, "finite" if k in split else c.kind) for k, c in enumerate(comps)]
            for c, key in zip(comps, kinds):
                self.weight_query.setdefault(key, q)
            pos = positions_of(q)
            ch = [(pos.index(c.occs[0]) + 1, weights.setdefault(key, len(weights)), _KINDS[key[1]])
                  for c, key in zip(comps, kinds) if c.kind != "count"]
            at = {k: j for j, k in enumerate(k for k, c in enumerate(comps) if c.kind != "count")}
            self.inf_chans[n] = {}
            for k in sorted(split):
                self.inf_chans[n][k] = (at[k], len(ch), len(ch) + 1)
                ch += [(pos.index(comps[k].occs[0]) + 1, weights.setdefault((comps[k].attr, kind), len(weights)),
                        K.KIND_COUNT) for kind in ("+inf", "-inf")]
            chans.append(ch)
        self.weights = list(weights)
        self.chan_kinds = [[k for _, _, k in ch] for ch in chans]
        self.trie = Trie([steps_of(queries[n]) for n in self.names], chans)
        # each distinct local predicate once: its conjunction as one Polars boolean expression per batch
        exprs: dict[tuple[str, ...], tuple] = {}
        for q in queries.values():
            for o in positions_of(q) + negated_of(q):
                exprs.setdefault(local_key(q, o), q.local.get(o, ()))
        self.pred_exprs = [predicate_mask(exprs[key]).alias(f"__pred{j}") for j, key in enumerate(self.trie.preds)]
        target = pl.Int64 if numeric == "int64" else pl.Float64
        self.weight_exprs = [_weight(attr, kind, target).alias(f"__w{j}")
                             for j, (attr, kind) in enumerate(self.weights) if kind not in ("min", "max")]
        self.parent = np.array(self.trie.parent, np.int64)
        self.node_w = np.array(self.trie.w, np.int64)
        self.node_kind = np.array(self.trie.kind, np.int64)
        # output rows: per query its count leaf, then the leaf of each channel (the kernel's "queries")
        self.out_rows: list[tuple[int, int]] = []  # (query index, channel index or -1 for the count)
        rows = []
        for qi in range(len(self.names)):
            self.out_rows.append((qi, -1))
            rows.append(self.trie.leaf[qi])
            for ci, lf in enumerate(self.trie.chan_leaf[qi]):
                self.out_rows.append((qi, ci))
                rows.append(lf)
        self.qleaf = np.array(rows, np.int64)
        leaves = sorted(set(rows))
        self.leaf_of = np.full(self.trie.size, -1, np.int64)
        self.leaf_of[leaves] = np.arange(len(leaves))
        # a negated end (SEQ(A, B, NOT N)): an N event ends the matches of every open window of the
        # query's leaves (its count and channels)
        code = {t: c for c, t in enumerate(self.trie.types, start=1)}
        pred = {key: j for j, key in enumerate(self.trie.preds)}
        ends: list[list[tuple[int, int]]] = [[] for _ in range(len(self.trie.types) + 1)]
        # (under WITHIN alone and EMIT CHANGES the leaf's guard does it: the reset takes the removed
        # matches off its total, or out of the counts that EMIT CHANGES reads)
        for qi, name in enumerate(self.names if q0.window.kind in ("slide", "none") else ()):
            for gt, gk in steps_of(queries[name])[-1][2]:
                for r in [self.trie.leaf[qi], *self.trie.chan_leaf[qi]]:
                    ends[code[gt]].append((int(self.leaf_of[r]), pred[gk] if gk else -1))
        self.end_ptr = np.zeros(len(ends) + 1, np.int64)
        self.end_ptr[1:] = np.cumsum([len(e) for e in ends])
        self.end_leaf = np.array([x for e in ends for x, _ in e], np.int64)
        self.end_pred = np.array([j for e in ends for _, j in e], np.int64)
        if q0.window.kind == "slide":
            self.mode, self.w, self.s = K.MODE_SLIDE, int(prep.w), int(prep.s)
            self.g = math.gcd(self.w, self.s)  # pane length: every window is a run of whole panes
            self.Rp, self.Rw = self.w // self.g, max(1, -(-self.w // self.s))
        elif prep.w is not None:  # WITHIN alone or with EMIT CHANGES: start panes are ordinals (distinct
            # times), Rp grows to the live ones
            self.mode, self.w, self.s, self.g, self.Rp, self.Rw = K.MODE_WITHIN, int(prep.w), 1, 1, 4, 1
        else:
            self.mode, self.w, self.s, self.g, self.Rp, self.Rw = K.MODE_NONE, 0, 1, 1, 1, 1
        self.emit = q0.window.kind == "emit"
        negation = self.trie.reset_ptr[-1] > 0 or self.end_ptr[-1] > 0 or self.trie.start_ptr[-1] > 0
        # a workload without negation or EMIT CHANGES compiles neither's code (kernels/sharing.py)
        self.kernel = K.run_shared if negation or self.emit else K.run_shared_plain
        # EMIT CHANGES: per leaf its trie row and its output rows
        self.leaf_node = np.array(leaves, np.int64)
        by_leaf = [[r for r, node in enumerate(rows) if self.leaf_of[node] == lf] for lf in range(len(leaves))]
        self.lf_ptr = np.zeros(len(leaves) + 1, np.int64)
        self.lf_ptr[1:] = np.cumsum([len(x) for x in by_leaf])
        self.lf_rows = np.array([r for x in by_leaf for r in x], np.int64)
        self.dtype = np.int64 if numeric == "int64" else np.float64
        self.parts = Partitions(q0, {c: schema[c] for c in q0.partition_by})
        self._group_arrays = None
        self._alloc(0)
        self.cap = self.FIRST_ROWS  # output rows per kernel call; doubled up to MAX_ROWS while calls fill them
        self.out = self._buffers(self.cap)
        self.chunks: list[tuple[np.ndarray, ...]] = []
        self.held: tuple[np.ndarray, ...] | None = None  # events of the last time stamp pushed so far
        self.type_codes = TypeCodes(self.q0.type_col, self.trie.types)

    def _alloc(self, n_part: int):
        """``self.state``, in the order of :func:`cepvec.kernels.sharing.run_shared`'s state arguments
        (the ``_C`` ... ``_ON`` indices below)."""
        n_leaf = int(self.leaf_of.max()) + 1
        self.state = [np.zeros((n_part, self.trie.size, self.Rp), self.dtype),  # C: counts by start pane
                      np.full((n_part, self.trie.size, self.Rp), K.NO_TAG, np.int64),  # ctag
                      np.zeros((n_part, self.trie.size), np.int64),  # mask of non-zero start panes
                      np.zeros((n_part, n_leaf, self.Rw), self.dtype),  # W: window totals of leaves
                      np.full((n_part, n_leaf, self.Rw), K.NO_TAG, np.int64),  # wtag
                      np.full((n_part, self.Rw), -1, np.int64),  # slot_k: the window of each slot
                      np.full((n_part, self.trie.size), K.NO_TAG, np.int64),  # last N time (negated start)
                      np.full((n_part, self.trie.size), K.NO_TAG, np.int64),  # the N time before it
                      np.full((n_part, self.trie.size, self.Rp), K.NO_TAG, np.int64),  # pane of the last N
                      np.zeros((n_part, self.Rp), np.int64),  # OT: time of each ordinal slot (WITHIN alone)
                      np.tile(np.array([-1, K.NO_TAG, 0], np.int64), (n_part, 1))]  # ON: last ordinal, time, oldest

    @property
    def n_part(self) -> int:
        return len(self.state[_C])

    def bytes_per_partition(self) -> int:
        """Bytes of state each partition holds (every trie node's counts by start pane, dense)."""
        return sum(a.itemsize * int(np.prod(a.shape[1:])) for a in self.state)

    def _grow(self, n_part: int):
        old = self.state
        self._alloc(max(n_part, 2 * len(old[0])))
        for new, o in zip(self.state, old):
            new[:len(o)] = o

    def _ordinals(self, pid: np.ndarray, times: np.ndarray) -> None:
        """WITHIN alone: enough ordinal slots for the most distinct times a partition holds within ``w``
        in this call (doubling; the live ordinals move to their new slots)."""
        order, seg = partition_order(pid, self.n_part)
        seg_pid = np.flatnonzero(np.diff(seg)).astype(np.int64)
        seg_ptr = np.append(seg[seg_pid], len(order)).astype(np.int64)
        need = K.ordinals_needed(order, seg_ptr, seg_pid, times, self.w, self.state[_ON], self.state[_OT], self.Rp)
        if need <= self.Rp:
            return
        old, old_rp = self.state, self.Rp
        self.Rp = max(need, 2 * old_rp)
        if need <= K.MASK_BITS < self.Rp:
            self.Rp = K.MASK_BITS  # keep the bit mask of non-zero slots while it fits
        self._alloc(self.n_part)
        for j in (_W, _WTAG, _SLOT_K, _LN, _PN, _ON):  # arrays without a slot axis
            self.state[j][:] = old[j]
        new = self.state
        K.relayout(old[_ON], old_rp, old[_C], old[_CTAG], old[_FL], old[_OT], new[_C], new[_CTAG], new[_FL], new[_OT],
                   new[_MASK])

    def _groups(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """EMIT CHANGES: the group of every partition and the partitions of every group (CSR), for the
        rows an END event gives every partition of its group (recomputed when partitions appear)."""
        n = self.n_part
        if self._group_arrays is not None and self._group_arrays[0] == (n, len(self.parts.keys)):
            return self._group_arrays[1]
        q0 = self.q0
        if not self.emit or q0.partition_by == q0.group_by:
            ids = np.arange(n, dtype=np.int64)
            arrays = (ids, np.arange(n + 1, dtype=np.int64), ids)
        else:
            gf = self.parts.group_frame()
            pids = gf["__pid"].to_numpy().astype(np.int64)
            gid = np.zeros(n, np.int64)
            if q0.group_by:  # (group_by: nulls and NaN each one group, as the output's sums group them)
                g = (gf.with_row_index("__r").group_by(list(q0.group_by), maintain_order=True).agg("__r")
                     .with_row_index("__g").select("__g", "__r").explode("__r"))
                gid[pids[g["__r"].to_numpy()]] = g["__g"].to_numpy().astype(np.int64)
            order = pids[np.argsort(gid[pids], kind="stable")]
            ptr = np.zeros(int(gid.max()) + 2, np.int64)
            np.add.at(ptr, gid[pids] + 1, 1)
            arrays = (gid, np.cumsum(ptr), order)
        self._group_arrays = ((n, len(self.parts.keys)), arrays)
        return arrays

    def _buffers(self, cap: int):
        return (np.empty(cap, np.int64), np.empty(cap, np.int64), np.empty(cap, np.int64), np.empty(cap, self.dtype))

    def push(self, df: pl.DataFrame, times: np.ndarray) -> None:
        """Encode a batch and run the events before its last time stamp (those are held back: ties may
        continue in the next batch)."""
        if not len(df):
            return
        codes = self.type_codes.codes(df)
        pid = self.parts.ids(df).astype(np.int64, copy=False)
        times = np.asarray(times, dtype=np.int64)
        if self.pred_exprs:
            pm = np.ascontiguousarray(df.select(self.pred_exprs).to_numpy().astype(np.bool_, copy=False))
            # an event is kept when a node of its type has no predicate or one of its type's predicates holds
            ok = self.trie.code_free[codes] | (pm & self.trie.code_preds[codes]).any(axis=1)
            keep = np.flatnonzero(ok & (codes != 0))
        else:
            pm = np.zeros((len(codes), 0), np.bool_)
            keep = np.flatnonzero(codes)
        ew = np.zeros((len(codes), len(self.weights)), self.dtype)
        if self.weight_exprs:
            enc = select_weights(df, self.weight_exprs, self.q0)
        for j, (attr, kind) in enumerate(self.weights):
            if kind in ("min", "max"):  # order keys (uint64 bits; int64 state only)
                order_keys(df[attr], kind, self.weight_query[(attr, kind)], out=ew[:, j].view(np.uint64))
            else:
                ew[:, j] = enc[f"__w{j}"].to_numpy()
        arrays = (pid, times, codes, pm, ew)
        if len(keep) < len(codes):
            arrays = tuple(a[keep] for a in arrays)
        if self.held is not None:
            arrays = tuple(np.concatenate([h, x]) for h, x in zip(self.held, arrays))
        times = arrays[1]
        if not len(times):
            return
        cut = int(np.searchsorted(times, times[-1], side="left"))
        self.held = tuple(a[cut:] for a in arrays)
        self._run(*(a[:cut] for a in arrays))

    def _run(self, pid, times, codes, pm, ew):
        if not len(times):
            return
        need = max(int(pid.max()) + 1, len(self.parts.keys))  # (keys of held-back events too: EMIT's groups)
        if need > self.n_part:
            self._grow(need)
        if self.mode == K.MODE_WITHIN:
            self._ordinals(pid, times)
        start = 0
        while True:
            status, start, n = self.kernel(pid, times, codes, pm, ew, self.trie.type_ptr, self.trie.type_nodes,
                                            self.trie.node_pred, self.node_w, self.node_kind,
                                            self.trie.reset_ptr, self.trie.reset_nodes, self.trie.reset_pred,
                                            self.end_ptr, self.end_leaf, self.end_pred, self.trie.start_ptr,
                                            self.trie.start_nodes, self.trie.start_pred, self.trie.first,
                                            self.parent, self.leaf_of,
                                            self.qleaf,
                                            self.mode, self.w, self.s,
                                            self.g, self.dtype is np.int64, self.emit, self.leaf_node, self.lf_ptr,
                                            self.lf_rows, *self._groups(), *self.state, start, *self.out)
            if n:
                self.chunks.append(tuple(a[:n].copy() for a in self.out))
            if status == 0:
                return
            if status == -2:
                raise overflow_error(self.q0, f"near time {int(times[start])} (shared prefix counters)")
            # status 1, the buffers are full: larger ones (a call costs a pass over the rest of the events,
            # so the number of calls must stay logarithmic), four times larger when nothing was written
            # (they hold fewer rows than one time stamp may emit)
            if n == 0 or self.cap < self.MAX_ROWS:
                self.cap *= 4 if n == 0 else 2
                self.out = self._buffers(self.cap)

    def finish(self) -> dict[str, pl.DataFrame]:
        """The frame of every query, exactly as ``cepvec.run`` returns it."""
        if self.held is not None:
            self._run(*self.held)
            self.held = None
        chunks = list(self.chunks)
        if not self.emit:  # the windows still open: at most one row per partition, window slot and query row
            # (EMIT CHANGES wrote its rows at its emit times)
            out = self._buffers(max(1, self.n_part * self.Rw * len(self.qleaf)))
            n = K.emit_open(*self.state[_W:_SLOT_K + 1], self.leaf_of, self.qleaf, *out)
            chunks.append(tuple(a[:n] for a in out))
        if not chunks:
            chunks = [self._buffers(0)]
        qj, pid, key, val = (np.concatenate([c[i] for c in chunks]) for i in range(4))
        qc = np.array(self.out_rows, np.int64).reshape(-1, 2)
        cells = pl.DataFrame({"__q": qc[qj, 0], "__j": qc[qj, 1], "__pid": pid, "__key": key, "__v": val})
        # one row per (query, partition, window) with a match; channel j of the query's components in
        # column __v{1+j} (pivoted: the queries' channels share the columns, each query reads its own)
        base = cells.filter(pl.col("__j") < 0).select("__q", "__pid", "__key", pl.col("__v").alias("__v0"))
        ch = cells.filter(pl.col("__j") >= 0)
        n_ch = max((len(c) for c in self.trie.chan_leaf), default=0)
        if len(ch):
            wide = ch.pivot(on="__j", index=["__q", "__pid", "__key"], values="__v", aggregate_function="sum")
            wide = wide.rename({c: f"__c{c}" for c in wide.columns if c not in ("__q", "__pid", "__key")})
            base = base.join(wide, on=["__q", "__pid", "__key"], how="left")
        base = base.with_columns([pl.col(f"__c{j}").fill_null(0) if f"__c{j}" in base.columns
                                  else pl.lit(0, dtype=base["__v0"].dtype).alias(f"__c{j}") for j in range(n_ch)])
        vcols = ["__v0"] + [f"__c{j}" for j in range(n_ch)]
        # a column holds order keys (MIN / MAX) for a query when its channel j is one: those combine by
        # the larger unsigned key, the others add (every query of a class reads its own channels)
        # per channel column, the queries whose channel there is an order key (MIN / MAX): the larger key
        # combines their partitions; the other queries' channels in that column add up
        keyed = {f"__c{j}": [qi for qi, kinds in enumerate(self.chan_kinds) if j < len(kinds) and kinds[j] == K.KIND_MAX]
                 for j in range(n_ch)}
        keyed = {c: qs for c, qs in keyed.items() if qs}
        q0 = self.q0  # every query of the class has its GROUP-BY and partitions
        if q0.partition_by == q0.group_by:
            return self._frames_by_partition(base)
        if q0.group_by:
            base = base.join(self.parts.group_frame(), on="__pid", how="left")
        by = ["__q", *q0.group_by, "__key"]
        if len(base):
            sums = base.with_columns([pl.when(pl.col("__q").is_in(qs)).then(0).otherwise(pl.col(c)).alias(c)
                                      for c, qs in keyed.items()])
            if self.dtype is np.int64 and sums_overflow(sums, by, vcols):
                first = int(base["__q"][0])
                raise overflow_error(self.queries[self.names[first]], "when adding up the partitions of a group")
            aggs = [pl.col(c).sum() if c not in keyed else
                    pl.when(pl.col("__q").is_in(keyed[c])).then(0).otherwise(pl.col(c)).sum().alias(c) for c in vcols]
            aggs += [pl.col(c).reinterpret(signed=False).max().reinterpret(signed=True).alias(c + "__max")
                     for c in keyed]
            base = base.group_by(by).agg(aggs)
            base = base.with_columns([pl.when(pl.col("__q").is_in(qs)).then(pl.col(c + "__max")).otherwise(pl.col(c))
                                      .alias(c) for c, qs in keyed.items()]).drop([c + "__max" for c in keyed])
        base = base.sort(by, nulls_last=True)
        bounds = np.searchsorted(base["__q"].to_numpy(), np.arange(len(self.names) + 1))
        frames = {}
        for qi, name in enumerate(self.names):
            part = base.slice(int(bounds[qi]), int(bounds[qi + 1] - bounds[qi]))
            q, plan = self.queries[name], self.plans[name]
            frames[name] = assemble_output(q, self.prep, plan, self.numeric, {g: part[g] for g in q.group_by},
                                           part["__key"].to_numpy(), self._values(name, part))
        return frames

    def _values(self, name: str, part: pl.DataFrame) -> dict:
        """The value columns ``__v0``, ``__v1`` ... of query ``name``'s plan from its cells: the count,
        then per component the count again (COUNT(v): one event of v per match) or its channel."""
        vals, j = {"__v0": part["__v0"]}, 0
        for k, c in enumerate(self.plans[name].components):
            if c.kind == "count":
                vals[f"__v{1 + k}"] = part["__v0"]
            else:
                vals[f"__v{1 + k}"] = part[f"__c{j}"]
                j += 1
        for k, (fin, pos, neg) in self.inf_chans[name].items():  # IEEE: +inf and -inf together are NaN
            pinf, ninf = pl.col(f"__c{pos}") > 0, pl.col(f"__c{neg}") > 0
            vals[f"__v{1 + k}"] = part.select(
                pl.when(pinf & ninf).then(float("nan")).when(pinf).then(float("inf")).when(ninf).then(float("-inf"))
                .otherwise(pl.col(f"__c{fin}"))).to_series()
        return vals

    def _frames_by_partition(self, base: pl.DataFrame) -> dict[str, pl.DataFrame]:
        """Every partition its own group: each query's cells are one per (group, window), put in the
        output order by a counting sort on the rank of the group values (``in_rank_order``, as the
        linear path does), not by a sort of every row (3.2 million rows: 0.9 s)."""
        gf = self.parts.group_frame()
        by_q = base.partition_by("__q", as_dict=True, maintain_order=True)
        empty = base.clear()
        frames, ranks = {}, {}  # the order of the group values: once per GROUP-BY, not once per query
        for qi, name in enumerate(self.names):
            part, q = by_q.get((qi,), empty), self.queries[name]
            if len(part) and tuple(q.group_by) not in ranks:
                ranks[tuple(q.group_by)] = group_ranks(q, gf)
            frames[name] = in_rank_order(q, self.prep, self.plans[name], self.numeric, gf, part["__pid"].to_numpy(),
                                         part["__key"].to_numpy(), self._values(name, part),
                                         rank=ranks.get(tuple(q.group_by)))
        return frames


#: positions in ``SharedRun.state``: counts, their tags, the mask of non-zero slots; window totals,
#: their tags, the window of each slot; last N times (negated start), the one before, the last N of a
#: slot; the time of each ordinal slot, and (last ordinal, its time, oldest live ordinal) (WITHIN alone)
_C, _CTAG, _MASK, _W, _WTAG, _SLOT_K, _LN, _PN, _FL, _OT, _ON = range(11)

_KINDS = {"sum": K.KIND_SUM, "finite": K.KIND_SUM, "nonnull": K.KIND_COUNT, "min": K.KIND_MAX, "max": K.KIND_MAX}


def _weight(attr: str, kind: str, target) -> pl.Expr:
    """The weight column of a channel: a component's (:func:`component_weight`), or of a float sum split
    in three (``SharedRun``): ``finite``, the sum's weight with the infinities as 0; ``+inf`` and ``-inf``,
    1 where the attribute holds that infinity."""
    if kind == "finite":
        v = pl.col(attr)
        return pl.when(v.is_infinite()).then(0.0).otherwise(component_weight(attr, "sum", target)).cast(target)
    if kind in ("+inf", "-inf"):
        return (pl.col(attr) == float(kind)).fill_null(False).cast(target)
    return component_weight(attr, kind, target)


def runs_shared(q: Query, schema: dict, numeric: str) -> bool:
    """Whether the shared executor runs ``q`` on this input: exact counts (``numeric="int64"``) keep
    sums exact, so SUM / AVG of a non-integer attribute run on the query's own path then; MIN / MAX
    run on order keys in the int64 state, so with ``numeric="float64"`` they run on their own path,
    and so do MIN / MAX of a column the Numba paths cannot order, and under EMIT CHANGES a SUM / AVG of
    a non-integer attribute (its row adds the start panes' sums in another order than the query's own
    path: the frames of ``run_many`` and ``cepvec.run`` stay equal to the last bit)."""
    minmax = [a for a in q.aggs if a.func in ("MIN", "MAX")]
    if minmax and (numeric != "int64" or not all(orderable(schema[a.attr]) for a in minmax)):
        return False
    if numeric != "int64" and q.window.kind != "emit":
        return True
    # a float sum is exact nowhere; under EMIT CHANGES the executor adds a row's ordinals in another
    # order than the query's own path, so the last bits could differ: those run on their own path
    return all(schema[a.attr].is_integer() for a in q.aggs if a.func in ("SUM", "AVG"))

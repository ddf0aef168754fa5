"""Driver of the linear-map kernels: encode columns, carry state across batches.

:class:`LinearStream` consumes time-ordered batches one after another and
keeps, per partition, only what a future result can use (the running state
vector, or the events still inside the window), so results do not depend on
how the input is cut into batches. The local engine is one ``push`` and one
``finish``; the Spark adapter calls the same two methods per partition.

Per batch: the type column becomes a small code per event (a Numba pass over
the Arrow string views; Polars for other column types), codes (and local
predicate outcomes) become program ids, a single integer partition key
becomes dense partition ids through a Numba hash table (a Polars join
otherwise), one counting-sort pass groups carried and new events by
partition, and the segments run in up to ``CEPVEC_NUM_THREADS`` threads
(the kernels release the GIL; each thread owns whole partitions).
"""

from __future__ import annotations

import numpy as np
import polars as pl

from cepvec.paths.base import batch_end
from cepvec.kernels.emit import NEXT as EMIT_NEXT, WITHIN as EMIT_WITHIN, group_totals, segment_emit_times
from cepvec.runtime.memory import check_emit_rows
from cepvec.runtime.prepare import Prepared
from cepvec.kernels import _jit, linear as K
from cepvec.runtime.output import build_output_frame, overflow_error, select_weights
from cepvec.runtime.order_keys import ORDER_ONE, check_orderable, order_keys
from cepvec.paths.linear.plan import LinearPlan
from cepvec.runtime.partitions import Partitions
from cepvec.runtime.polars_expr import component_weight, may_hold_nan, predicate_mask
from cepvec.runtime.type_codes import TypeCodes
from cepvec.runtime import threads
from cepvec.runtime.threads import map_threads, split_ranges

STATE_DTYPES = {"int64": np.int64, "float64": np.float64, "order": np.uint64}
# The order semiring (MIN / MAX): values are uint64 order keys, "+" is max and "*" is min, so 0
# is the zero (no match, or no value) and 2**64 - 1 the one; a bigger key is a better extreme.
_MODES = {"none": K.MODE_NONE, "within": K.MODE_WITHIN, "emit": K.MODE_EMIT, "slide": K.MODE_SLIDE}
_BIG = np.iinfo(np.int64).max // 4
_EMIT_MODES = (K.MODE_EMIT, K.MODE_EMIT_UNBOUNDED)


#: int64 slots between the spare slots of two threads in fill_events (a cache line)
_SPARE_STRIDE = 8
#: no counts (:func:`kernels.linear.segment_layout`: no carried events, one range of rows)
_NO_COUNTS = np.zeros(0, np.int64)
#: Fewest new rows per partition in each piece of a batch counted apart (:meth:`LinearStream._pieces`).
PIECE_ROWS_PER_KEY = 16
#: no flags (:func:`kernels.linear.segment_layout`: no partition visited without events)
_NO_FLAGS = np.zeros(0, np.bool_)


def encoding_kernels_loaded() -> bool:
    """Whether this process holds the linear path's encoding kernels (partition ids, type codes, the
    scatter into partition order), compiled or loaded from the cache by a batch
    of ``_jit.NUMPY_BELOW`` rows or more. Until then a batch of fewer rows is encoded in Polars and
    NumPy: a first run on a cold cache compiles only the kernel that counts (a grouped ``SEQ`` over 64
    events: 3.7-4.8 s -> 1.6-1.7 s, docs/performance-log.md, session 51). Once they are held, few rows
    take them too: 1-4 ms faster a batch of 200-16 000 rows."""
    return len(K.fill_events.overloads) > 0


class LinearStream(Partitions):
    """Incremental evaluation of one query with the linear-map kernels."""

    def __init__(self, plan: LinearPlan, *, state: str, w: int | None, s: int | None,
                 key_schema: dict, zero_components: tuple[int, ...] = ()):
        self.plan = plan
        self.zero_components = zero_components
        self.q = plan.query
        self.state = state
        self.w, self.s = w, s
        kind = self.q.window.kind
        self.mode = _MODES[kind]
        if kind == "emit" and w is None:
            self.mode = K.MODE_EMIT_UNBOUNDED
        self.dtype = STATE_DTYPES[state]
        Partitions.__init__(self, self.q, key_schema)
        self.row_of, self.D, self.v0_rows, self.out_rows = _stream_rows(plan, zero_components)
        self.counted: tuple[int, ...] = ()  # non-null counts that are the count of matches (_count_dense)
        self.min_events = _min_events(plan)
        self.X = np.zeros((0, self.D), self.dtype)
        self.next_k = np.zeros(0, np.int64)
        self.carry: dict[str, np.ndarray] | None = None
        self.held: tuple[pl.DataFrame, np.ndarray] | None = None
        self.outputs: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self.changes_only = False  # set by LinearRun: the only stream of its query (see _changes)
        self.emit_log: list[tuple[np.ndarray, np.ndarray]] = []  # (a partition of the group, time) per emit time
        self.emit_pending = np.zeros(0, np.bool_)  # per partition: a change not written yet (see _changes)
        self.last_time: int | None = None
        self.programs: dict[tuple[int, int], int] = {}
        self.PT = np.zeros(0, np.int64)
        self.prog_flags = np.zeros(0, np.int64)
        self.order_ties = False
        # the stream of the same query whose partition ids and type classes this one takes (LinearRun)
        self.lead: LinearStream | None = None
        self.followed = False  # a stream takes this one's encoding: keep it until the next batch
        self._encoded: tuple | None = None  # (batch number, pid, cls, cls_prog, counts) of the last batch
        self._n_batches = 0
        self._setup_encoding()
        # GROUP-BY values are the partition keys: each partition is its own group
        self.groups_are_partitions = list(self.q.partition_by) == list(self.q.group_by)

    # -------------------------------------------------------------- encoding setup
    def _setup_encoding(self):
        """Type codes, bits per code, predicate masks and weight columns."""
        plan, q = self.plan, self.q
        # (bit, is_neg, occurrence) for every positive occurrence and negation
        items = [(bit, False, q.occs[o]) for bit, o in enumerate(plan.occ_ids)]
        items += [(bit, True, q.occs[q.negations[g].node.occ]) for bit, g in enumerate(plan.neg_ids)]
        names: list[str] = []
        for _b, _n, occ in items:
            for t in occ.types:
                if t not in names:
                    names.append(t)
        K1 = len(names) + 1
        bind = np.zeros(K1, np.uint64)
        neg = np.zeros(K1, np.uint64)
        masks, mbit, mneg, mok = [], [], [], []
        for bit, is_neg, occ in items:
            codes = [names.index(t) + 1 for t in occ.types]
            preds = q.local.get(occ.id, ())
            if preds:
                masks.append(predicate_mask(preds))
                mbit.append(bit)
                mneg.append(is_neg)
                ok = np.zeros(K1, np.bool_)
                ok[codes] = True
                mok.append(ok)
            else:
                tgt = neg if is_neg else bind
                tgt[codes] |= np.uint64(1 << bit)
        self.bind_of_code, self.neg_of_code = bind, neg
        self.mask_exprs = masks
        self.mask_bit = np.array(mbit, np.int64)
        self.mask_is_neg = np.array(mneg, np.bool_)
        self.mask_code_ok = np.array(mok, np.bool_).reshape(len(mok), K1)
        self.type_codes = TypeCodes(q.type_col, names)
        self.end_bit = 1 << plan.occ_ids.index(q.template.end)
        # weight columns: sums, non-null counts and order keys (count components weigh 1, zeroed ones 0)
        self.wcols = [j for j, c in enumerate(plan.components)
                      if c.kind != "count" and j not in self.zero_components]

    def _code_programs(self) -> np.ndarray:
        """Global program id per type code (-1: ignored), when no predicate gates a bit."""
        return self._global_ids(list(zip(self.bind_of_code.tolist(), self.neg_of_code.tolist())))

    def _classes(self, df: pl.DataFrame, kernels: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """Per event a class id and per class its global program id (-1: event is ignored); the type
        codes by :meth:`TypeCodes.codes` (``kernels``: as it says)."""
        codes = self.type_codes.codes(df, kernels=kernels)
        if not self.mask_exprs:
            return codes, self._code_programs()
        m = df.select([e.alias(f"__m{j}") for j, e in enumerate(self.mask_exprs)]).to_numpy()
        m = np.ascontiguousarray(m.astype(np.bool_, copy=False)).reshape(len(df), len(self.mask_exprs))
        bind, neg = K.combine_bits(codes, self.bind_of_code, self.neg_of_code, m, self.mask_bit,
                                   self.mask_is_neg, self.mask_code_ok)
        local, ub, un = K.encode_programs(bind, neg)
        return local.astype(np.int32), self._global_ids(list(zip(ub.tolist(), un.tolist())))

    def _global_ids(self, pairs) -> np.ndarray:
        glob = np.empty(max(len(pairs), 1), np.int64)
        glob[:] = -1
        changed = False
        for i, key in enumerate(pairs):
            if key == (0, 0):
                continue
            if key not in self.programs:
                self.programs[key] = len(self.programs)
                changed = True
            glob[i] = self.programs[key]
        if changed:
            self._build_programs()
        return glob

    def _build_programs(self):
        plan = self.plan
        comps = plan.components
        wcol = {j: i for i, j in enumerate(self.wcols)}
        progs = []
        for (b, g) in self.programs:  # dict order == program id
            trips = []
            for bit in range(len(plan.occ_ids)):
                if (b >> bit) & 1:
                    for k in range(int(plan.trip_ptr[bit]), int(plan.trip_ptr[bit + 1])):
                        d, s, j = int(plan.trip_dst[k]), int(plan.trip_src[k]), int(plan.trip_wk[k])
                        if j >= 0:
                            if j in self.zero_components:
                                continue  # weight 0: no contribution
                            j = -1 if comps[j].kind == "count" else wcol[j]
                        if self.row_of[s] >= 0:  # (a row the stream does not keep is always 0)
                            trips.append((int(self.row_of[d]), int(self.row_of[s]), j))
            rows: set[int] = set()
            for bit in range(len(plan.neg_ids)):
                if (g >> bit) & 1:
                    rows.update(int(self.row_of[r]) for r in plan.neg_rows[plan.neg_ptr[bit]:plan.neg_ptr[bit + 1]]
                                if self.row_of[r] >= 0)
            progs.append((trips, rows, bool(b & self.end_bit)))
        self.PT = K.pack_programs(progs, self.out_rows)
        self.prog_flags = self.PT[self.PT[:len(progs)]].copy()
        # ties of several programs run in place once sorted by tie rank (kernels: order_ties)
        self.order_ties = len(progs) > 1 and bool(np.any(self.prog_flags >> K.TIE_SHIFT))

    def _weights(self, df: pl.DataFrame) -> np.ndarray:
        if not self.wcols:
            return np.zeros((len(df), 0), self.dtype)
        if self.state == "order":
            w = np.empty((len(df), len(self.wcols)), np.uint64)
            for i, j in enumerate(self.wcols):
                c = self.plan.components[j]
                order_keys(df[c.attr], c.kind, self.q, out=w[:, i])
            return w
        wdt = pl.Int64 if self.state == "int64" else pl.Float64
        comps = self.plan.components
        nan = {a: may_hold_nan(df[a]) for a in {comps[j].attr for j in self.wcols}}
        exprs = [component_weight(comps[j].attr, comps[j].kind, wdt, nan[comps[j].attr]).alias(f"__w{j}")
                 for j in self.wcols]
        enc = select_weights(df, exprs, self.q)
        if len(exprs) == 1:
            return enc.to_series().to_numpy().astype(self.dtype, copy=False).reshape(len(df), 1)
        # the columns written into the rows (C order, as the kernels read them), the halves of the rows
        # in threads: Polars' own 2-D array is column-major, and NumPy's copy into row-major took 4-10 ms
        # of 10^6 rows on one thread, while the pool waited
        cols = [c.to_numpy() for c in enc.get_columns()]
        w = np.empty((len(df), len(cols)), self.dtype)

        def fill(r):
            for i, c in enumerate(cols):
                w[r[0]:r[1], i] = c[r[0]:r[1]]

        map_threads(fill, threads.halves(len(df)))
        return w

    # -------------------------------------------------------------- partitions
    def _on_new_keys(self) -> None:
        self._grow(len(self.keys))

    def _v0(self) -> np.ndarray:
        """The initial state vector in this stream's semiring (its ones are the semiring's one)."""
        v0 = self.v0_rows.astype(self.dtype)
        if self.state == "order":
            v0[v0 != 0] = ORDER_ONE
        return v0

    def _grow(self, n: int):
        if n > self.X.shape[0]:
            n2 = max(n, 2 * self.X.shape[0])
            X = np.zeros((n2, self.D), self.dtype)
            X[: self.X.shape[0]] = self.X
            if self.mode in (K.MODE_NONE, K.MODE_EMIT_UNBOUNDED):
                X[self.X.shape[0]:] = self._v0()
            # else new rows stay zero, untouched here: the kernel threads touch (fault in) their own
            self.X = X
            nk = np.zeros(n2, np.int64)
            nk[: self.next_k.shape[0]] = self.next_k
            self.next_k = nk

    def clone_partitions(self, dst: pl.DataFrame, src: pl.DataFrame) -> None:
        """New partitions ``dst`` (key frames) start with the state of partitions ``src``: their
        vector or carried window events, and their held-back rows (see cepvec.paths.qualified)."""
        from cepvec.paths.qualified import clone_index, copy_rows

        d = self.ids(dst)
        sp = self.ids(src)
        self.X[d] = self.X[sp]
        self.next_k[d] = self.next_k[sp]
        if self._changes() and len(d):  # their totals are new rows: written at their group's next emit time
            pending = np.zeros(max(len(self.emit_pending), int(d.max()) + 1), np.bool_)
            pending[:len(self.emit_pending)] = self.emit_pending
            pending[d] = True
            self.emit_pending = pending
        c = self.carry
        if c is not None:
            rows, new_pid = clone_index(c["pid"], sp, d)
            self.carry = {k: np.concatenate([v, new_pid if k == "pid" else v[rows]]) for k, v in c.items()}
        if self.held is not None:
            hdf, ht = self.held
            hdf = hdf.with_columns(pl.Series("__t", ht))
            extra = copy_rows(hdf, src, dst)
            if len(extra):
                both = pl.concat([hdf, extra], how="vertical_relaxed").sort("__t", maintain_order=True)
                self.held = (both.drop("__t"), both["__t"].to_numpy())

    # -------------------------------------------------------------- streaming
    def push(self, df: pl.DataFrame, times: np.ndarray, *, final: bool = False):
        """Consume the next time-ordered batch (``times`` in the time unit).

        Runs one batch behind: a batch is held until the next one arrives (or ``finish``), so a
        whole input pushed at once runs in one pass with nothing carried; of the held batch,
        the events with the next batch's first time stamp wait for it (equal time stamps never
        see each other).
        """
        times = np.asarray(times, dtype=np.int64)
        self.last_time = batch_end(times, self.last_time)
        if not final and not len(df):
            return
        t_next = int(times[0]) if len(df) else None
        if self.held is not None:
            hdf, ht = self.held
            self.held = None
            df = pl.concat([hdf, df], how="vertical_relaxed") if len(df) else hdf
            times = np.concatenate([ht, times])
        if final:
            limit = _BIG
        else:
            # everything before the new batch's first time stamp is final
            cut = int(np.searchsorted(times, t_next, side="left"))
            self.held = (df[cut:], times[cut:])
            if not cut:
                return
            df = df[:cut]
            times = times[:cut]
            limit = t_next
        self._process(df, times, limit)

    def finish(self) -> None:
        if self.held is not None:
            (hdf, ht), self.held = self.held, None
            self._count_dense(hdf)
            self._process(hdf, ht, _BIG)
        elif self.carry is not None:
            self._process(None, None, _BIG)
        if self.mode in (K.MODE_NONE, K.MODE_WITHIN):
            nz = np.nonzero(self.X[: len(self.keys), self.out_rows[0]])[0]  # the partitions with a match
            self.outputs.append((nz.astype(np.int64), np.zeros(len(nz), np.int64), self.X[nz][:, self.out_rows]))
        if self._changes():
            self.outputs = [self._carried_forward()]

    def _count_dense(self, df: pl.DataFrame) -> None:
        """Before the first batch, when it is the whole input (a local run): a non-null count this
        stream answers, of an occurrence that binds one event per match, of an attribute without null
        or NaN in the input, is the count of matches. Such components keep no rows (fed by a weight of
        1 per event) and take the count's values in the cells (:meth:`_counted`): a SUM or AVG of such a
        column leaves the count stream a plain sequence's count (the chain loop; the two-stack queue
        over count and non-null rows before: 69-77 of the 173 ms of ``COUNT(*), SUM(B.p), AVG(C.p)``
        at 10^6 events on one core). Not under Kleene closure: ``A+`` binds several events of a match."""
        if self._n_batches or self.carry is not None or len(self.keys) or self.X.shape[0] or self.q.is_kleene:
            return  # state exists (its layout stays), or an occurrence may bind several events of a match
        comps = self.plan.components
        dense = [j for j in self.wcols if comps[j].kind == "nonnull" and len(comps[j].occs) == 1 and
                 _no_null_nor_nan(df[comps[j].attr])]
        if not dense:
            return
        self.zero_components = tuple(sorted({*self.zero_components, *dense}))
        self.counted = tuple(dense)
        self.wcols = [j for j in self.wcols if j not in dense]
        self.row_of, self.D, self.v0_rows, self.out_rows = _stream_rows(self.plan, self.zero_components)
        self.X = np.zeros((0, self.D), self.dtype)

    def _changes(self) -> bool:
        """EMIT CHANGES without WITHIN where a group holds several partitions, sums only: a partition
        visits only the first emit time of its group at or after each of its events (its totals change
        only at them; a change after the batch's last one waits for the next batch's first), the
        kernel writes its row there only where its totals changed (``MODE_EMIT_CHANGED``), and
        :meth:`_carried_forward` adds them up per group at every emit time. (A row per partition and
        later END time of its group grew with partitions x END times: 30 000 events of 6 000 ids took
        0.97 GB, 60 000 events a process.)"""
        return (self.changes_only and self.mode == K.MODE_EMIT_UNBOUNDED and not self.groups_are_partitions
                and self.state != "order")

    def _carried_forward(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The group totals at every emit time of each group (one row per group and time with a match,
        under a partition of the group) from the partitions' rows where their totals changed: each
        partition's changes (its rows in time order, less its previous row), then per group a running
        sum over the changes and the emit times in time order, read at the emit times."""
        ncol = len(self.out_rows)
        if not self.outputs:
            return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros((0, ncol), self.dtype)
        pid, key, val = (np.concatenate([o[i] for o in self.outputs]) for i in range(3))
        gop, n_groups = self._group_ids(max(len(self.keys), 1))
        order = np.argsort(pid, kind="stable")  # a partition's rows arrive in time order
        pid, key, val = pid[order], key[order], val[order]
        reps = np.concatenate([r for r, _ in self.emit_log]) if self.emit_log else np.zeros(0, np.int64)
        times = np.concatenate([t for _, t in self.emit_log]) if self.emit_log else np.zeros(0, np.int64)
        if val.dtype.kind == "f":
            return self._float_totals(pid, key, val, reps, times, gop, n_groups)
        delta = val.copy()
        with np.errstate(invalid="ignore"):  # inf - inf: set to 0 below
            delta[1:] -= val[:-1]
        if delta.dtype.kind == "f":  # the same infinity again adds nothing (inf - inf would be NaN)
            delta[1:][val[1:] == val[:-1]] = 0
        first = np.ones(len(pid), np.bool_)
        first[1:] = pid[1:] != pid[:-1]
        delta[first] = val[first]
        g = np.concatenate([gop[pid], gop[reps]])
        t = np.concatenate([key, times])
        is_emit = np.concatenate([np.zeros(len(pid), np.int64), np.ones(len(times), np.int64)])
        steps = np.concatenate([delta, np.zeros((len(times), ncol), self.dtype)])
        order = np.lexsort((is_emit, t, g))  # a change at t counts at the emit time t
        g, t, is_emit, steps = g[order], t[order], is_emit[order], steps[order]
        start = np.flatnonzero(np.r_[True, g[1:] != g[:-1]])  # each group's running sum starts at 0
        run = _group_running_sums(steps, start)  # int64: wraps across groups, exact within one
        if self.dtype == np.int64 and len(run) and _running_sums_leave_int64(steps, start):
            raise overflow_error(self.q, "when adding up the partitions of a group")
        at = np.flatnonzero((is_emit == 1) & (run[:, 0] != 0))
        return _first_partitions(gop, n_groups)[g[at]], t[at], run[at]

    def _process(self, df: pl.DataFrame | None, times: np.ndarray | None, limit: int):
        nw = len(self.wcols)
        emit = self.mode in _EMIT_MODES
        n_new = len(df) if df is not None else 0
        counts = None
        # few rows, before this process holds the encoding kernels: the encoding steps in Polars and
        # NumPy (a first run on a cold cache compiles only the kernel that counts; encoding_kernels_loaded)
        small = n_new < _jit.NUMPY_BELOW and not encoding_kernels_loaded()
        if n_new:
            self._n_batches += 1
            shared = self._lead_encoding(n_new)
            views = None if self.mask_exprs or shared is not None or small else self.type_codes.views(df)
            two = views is not None and len(threads.halves(n_new)) > 1  # two threads, no shared encoding, no masks
            numbering = self.string_numbering(df) if two else None
            if two and (numbering is None or numbering[0] == "one"):  # the ids on one of the threads
                pid, cls, cls_prog, counts = self._ids_beside_codes(df, views, numbering)
            else:
                pid = shared[1] if shared is not None else self.ids(df, numbering)
                cls, cls_prog, counts = self._codes(df, shared, views, pid, small)
            if counts is None and small:
                counts = [np.bincount(pid[cls_prog[cls] >= 0], minlength=max(len(self.keys), 1))]
            if self.followed:
                self._encoded = (self._n_batches, pid, cls, cls_prog, counts)
            new_w = self._weights(df)
        else:
            times = np.zeros(0, np.int64)
            cls = np.zeros(0, np.int32)
            cls_prog = np.full(1, -1, np.int64)
            new_w = np.zeros((0, nw), self.dtype)
            pid = np.zeros(0, np.int64)
        c = self.carry
        if c is None:
            c = {"t": np.zeros(0, np.int64), "prog": np.zeros(0, np.int64),
                 "w": np.zeros((0, nw), self.dtype), "pid": np.zeros(0, np.int64)}
        if not n_new and not len(c["t"]) and (not emit or not len(self.keys)):
            return
        # group carried and new events by partition (stable: carried first, then time order)
        n_parts = max(len(self.keys), 1)
        small = small and n_parts < _jit.NUMPY_BELOW and len(c["t"]) < _jit.NUMPY_BELOW and \
            (counts is None or len(counts) == 1)
        if counts is None:
            counts = map_threads(lambda r: K.count_events(n_parts, cls[r[0]:r[1]], cls_prog, pid[r[0]:r[1]]),
                                 self._pieces(n_new))
        k = len(counts)  # the kept new events per partition of each piece of the rows (threads.pieces)
        ranges = threads.cut(n_new, k)
        n_carry = np.bincount(c["pid"], minlength=n_parts) if len(c["pid"]) else _NO_COUNTS
        also = _NO_FLAGS  # partitions visited without events of this batch
        if emit and not self.groups_are_partitions:
            gop, n_groups = self._group_ids(n_parts)
            ptr, emit_times = K.emit_schedule(n_groups, gop, times, cls, cls_prog, self.prog_flags, pid)
            g_emit = ptr[1:] - ptr[:-1]
            if self._changes():  # the group of each emit time, by a partition of it (ids stay; groups may not)
                rep = _first_partitions(gop, n_groups)
                self.emit_log.append((rep[np.repeat(np.arange(n_groups), g_emit)], emit_times))
            also = g_emit[gop] > 0  # partitions of a group with output times still hold a window
        # the segments, and of them those the kernel runs: under WITHIN (SLIDE), not those with fewer
        # events than a match takes (no match ends in them, no window of theirs has one; their events
        # still carry over below, and a window closed again later holds no match either: a million
        # keys of an event each)
        skip = SKIP_SHORT_SEGMENTS and self.mode in (K.MODE_WITHIN, K.MODE_SLIDE) and self.min_events > 1
        starts = threads.thread_rows(k, n_parts, fill=None)  # (each piece's on cache lines of its own)
        first, second = (counts[0], counts[1] if k == 2 else _NO_COUNTS) if k <= 2 else \
            (np.add.reduce(counts), _NO_COUNTS)
        seg_start, total, (seg_pid, seg_lo, seg_hi, replay), (run_pid, run_lo, run_hi, run_replay) = \
            (K.segment_layout_numpy if n_parts < _jit.NUMPY_BELOW else K.segment_layout)(
                n_carry, first, second, also, self.min_events if skip else 0, starts)
        for j in range(1, k if k > 2 else 1):  # (segment_layout wrote the first piece's; the others follow it)
            np.add(starts[j - 1], counts[j - 1], out=starts[j])
        # spare slots at the end, a cache line apart: fill_events writes dropped events there
        spare = total + _SPARE_STRIDE * np.arange(k, dtype=np.int64)
        ev_t = np.empty(total + _SPARE_STRIDE * k, np.int64)
        ev_prog = np.empty(len(ev_t), np.int64)
        ev_w = np.empty((len(ev_t), nw), self.dtype)
        if small:  # (the carried events first, then the new ones: each partition's in their order)
            if len(c["t"]):
                K.fill_events_numpy(None, c["pid"], c["t"], c["prog"], c["w"], seg_start.copy(), ev_t, ev_prog, ev_w)
            prog = cls_prog[cls]
            K.fill_events_numpy(prog >= 0, pid, times, prog, new_w, starts[0], ev_t, ev_prog, ev_w)
        else:
            if len(c["t"]):
                K.fill_carry(c["t"], c["prog"], c["w"], c["pid"], seg_start.copy(), ev_t, ev_prog, ev_w)
            map_threads(lambda i: K.fill_events(cls[ranges[i][0]:ranges[i][1]], cls_prog,
                                                pid[ranges[i][0]:ranges[i][1]], times[ranges[i][0]:ranges[i][1]],
                                                new_w[ranges[i][0]:ranges[i][1]], starts[i], ev_t, ev_prog, ev_w,
                                                spare[i]), range(k))
        ev_t, ev_prog, ev_w = ev_t[:total], ev_prog[:total], ev_w[:total]
        if emit and self.groups_are_partitions:
            emit_lo, emit_hi, emit_times = K.segment_emit_schedule(seg_lo, seg_hi, replay, ev_t, ev_prog,
                                                                   self.prog_flags)
        elif emit and self.mode == K.MODE_EMIT:  # each partition visits the emit times within w of its events
            emit_times, emit_lo, emit_hi, _ = segment_emit_times(emit_times, ptr, gop[seg_pid], ev_t, seg_hi - seg_lo,
                                                                 np.int64(self.w), EMIT_WITHIN,
                                                                 np.zeros(len(seg_pid), np.bool_))
        elif emit and self._changes():  # each partition visits the first emit time after each of its events
            pending = np.zeros(n_parts, np.bool_)
            pending[:len(self.emit_pending)] = self.emit_pending
            emit_times, emit_lo, emit_hi, left = segment_emit_times(emit_times, ptr, gop[seg_pid], ev_t,
                                                                    seg_hi - seg_lo, np.int64(0), EMIT_NEXT,
                                                                    pending[seg_pid])
            pending[seg_pid] = left  # a change with no emit time after it in this batch: the next one's first
            self.emit_pending = pending
        elif emit:  # without WITHIN a partition's matches count at every later emit time (state carries over)
            emit_lo = ptr[gop[seg_pid]]
            emit_hi = ptr[gop[seg_pid] + 1]
            check_emit_rows(self.q, int(np.sum(emit_hi - emit_lo)), 16 + 8 * len(self.out_rows), len(seg_pid))
        else:
            emit_lo = emit_hi = np.zeros(len(seg_pid), np.int64)
            emit_times = np.zeros(0, np.int64)
        v0 = self._v0()
        args = (K.MODE_EMIT_CHANGED if self._changes() else self.mode, int(self.w or 0), int(self.s or 1),
                self.state == "int64")
        tail = (emit_times, np.int64(limit), ev_t, ev_prog, ev_w, self.PT, v0, self.out_rows,
                self.X, self.next_k)

        # a plain sequence's WITHIN count takes the chain loop, which runs ties in any order
        order_ties = self.order_ties and K.chain_within(args[0], self.PT, v0) is None

        if len(run_pid) < len(seg_pid):  # (short segments skipped: under WITHIN (SLIDE), no emit times)
            emit_lo = emit_hi = np.zeros(len(run_pid), np.int64)

        def run(r):
            a, b = r
            if order_ties and b > a and _has_ties(ev_t[run_lo[a]:run_hi[b - 1]]):
                if run_hi[b - 1] - run_lo[a] < _jit.NUMPY_BELOW:
                    _order_ties_numpy(run_lo[a:b], run_hi[a:b], ev_t, ev_prog, ev_w, self.PT)
                elif K.order_ties(run_lo[a:b], run_hi[a:b], ev_t, ev_prog, ev_w, self.PT):
                    K.order_long_ties(run_lo[a:b], run_hi[a:b], ev_t, ev_prog, ev_w, self.PT)
            e = np.zeros(3, np.int64)
            return K.run_segments(*args, run_lo[a:b], run_hi[a:b], run_pid[a:b], run_replay[a:b],
                                  emit_lo[a:b], emit_hi[a:b], *tail, e), e

        sizes = run_hi - run_lo
        ranges = split_ranges(sizes, per_thread=threads.RANGES_PER_THREAD)
        for (out_pid, out_key, out_val), err in map_threads(run, ranges, costs=[sizes[a:b].sum() for a, b in ranges]):
            if err[0]:
                self._raise_overflow(int(err[1]), int(err[2]))
            if len(out_pid):
                self.outputs.append((out_pid, out_key, out_val))
        self._set_carry(seg_lo, seg_hi, seg_pid, ev_t, ev_prog, ev_w, limit)

    def _pieces(self, n: int) -> list[tuple[int, int]]:
        """The pieces of ``n`` new rows whose kept events are counted per partition apart (each a row of
        counts, and of starts where :func:`kernels.linear.fill_events` writes them): ``threads.pieces``,
        with at least ``PIECE_ROWS_PER_KEY`` rows per partition in each (every piece costs a pass over
        the partitions)."""
        return threads.pieces(n, most=n // (PIECE_ROWS_PER_KEY * max(len(self.keys), 1)))

    def _codes(self, df: pl.DataFrame, shared: tuple | None, views: np.ndarray | None, pid: np.ndarray,
               small: bool = False) -> tuple:
        """The type class of each event of ``df``, the programs of the classes, and the kept events per
        partition of each of :meth:`_pieces` (None: not counted here): the lead stream's (``shared``), from
        the string ``views`` or a Categorical's physical ids with the counts in the same pass (the pieces
        in threads), else by expressions (and so for ``small`` input: no kernel)."""
        n_new, n_parts, counts = len(df), max(len(self.keys), 1), None
        # the lead's classes are type codes only without predicate masks: with them they number the
        # (bind, negation) pairs of the lead's batch, and an equal array of programs meant nothing (a B
        # after an event of another type read as a negation only: MIN / MAX from no value; fuzzer)
        if shared is not None and not self.mask_exprs and shared[4] is not None and \
                np.array_equal(self._code_programs(), shared[3]):
            cls, cls_prog, counts = shared[2:]  # (the call registered the programs in this stream too)
        elif shared is not None:
            cls, cls_prog = self._classes(df)
        elif views is not None:  # type codes and kept events per partition in one pass (pieces in threads)
            cls = np.empty(n_new, np.int32)
            cls_prog = self._code_programs()
            counts = map_threads(lambda r: K.view_codes_count(views[r[0]:r[1]], *self.type_codes.view_hash,
                                                              n_parts, cls_prog, pid[r[0]:r[1]], cls[r[0]:r[1]]),
                                 self._pieces(n_new))
        elif not self.mask_exprs and not small and self.type_codes.is_categorical(df):  # the same from physical ids
            phys, lut = self.type_codes.category_ids(df[self.type_codes.type_col])
            cls = np.empty(n_new, np.int32)
            cls_prog = self._code_programs()
            counts = map_threads(lambda r: K.lut_codes_count(phys[r[0]:r[1]], lut, n_parts, cls_prog,
                                                             pid[r[0]:r[1]], cls[r[0]:r[1]]), self._pieces(n_new))
        else:
            cls, cls_prog = self._classes(df, kernels=not small)
        return cls, cls_prog, counts

    def _ids_beside_codes(self, df: pl.DataFrame, views: np.ndarray, numbering: tuple[str, float] | None) -> tuple:
        """On two threads: the partition ids of ``df`` (:meth:`ids`, one serial pass) beside the type
        codes of its string ``views`` (in eight pieces, the threads take them as they come free), then
        the kept events per partition of each of :meth:`_pieces`. Returns ``(pid, cls, cls_prog, counts)``. Reading
        16-byte views is the longer step; with the codes and counts in one pass after the ids instead
        (:func:`view_codes_count`), the ids ran alone on one core (10^6 events, 100 or 10 000 keys, two
        cores: 0.8-2.1 ms of 30-33 less, docs/performance-log.md, session 42). ``numbering``: as
        :meth:`ids` takes it."""
        n = len(df)
        cls = np.empty(n, np.int32)
        step = n // 8 + 1
        pieces = [(a, min(a + step, n)) for a in range(0, n, step)]
        vh = self.type_codes.view_hash

        def run(piece):
            if piece is None:
                return self.ids(df, numbering)
            K.view_codes(views[piece[0]:piece[1]], *vh, cls[piece[0]:piece[1]])
            return None

        pid = map_threads(run, [None, *pieces], costs=[n] + [b - a for a, b in pieces])[0]  # the ids first
        cls_prog = self._code_programs()
        n_parts = max(len(self.keys), 1)
        counts = map_threads(lambda r: K.count_events(n_parts, cls[r[0]:r[1]], cls_prog, pid[r[0]:r[1]]),
                             self._pieces(n))
        return pid, cls, cls_prog, counts

    def _lead_encoding(self, n_new: int) -> tuple | None:
        """The lead stream's encoding of this batch (partition ids, type classes, kept events per
        partition), or None (no lead, or its last batch is not this one). The streams of a query see
        the same batches in turn, lead first, so their keys are numbered alike: this one takes the
        lead's key frame instead of numbering the keys again (a MIN / MAX or float SUM beside a count
        is two streams; the ids and classes were half the serial work of a second stream)."""
        lead = self.lead
        enc = lead._encoded if lead is not None else None
        if enc is None or enc[0] != self._n_batches or len(enc[1]) != n_new:
            return None
        if len(self.keys) != len(lead.keys):
            self.keys = lead.keys
            self._tab_n = -1  # the hash table of Partitions._int_ids has not seen them
            self._on_new_keys()
        return enc

    def _float_totals(self, pid, key, val, reps, times, gop, n_groups) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`_carried_forward` with float totals: a group's totals at an emit time are the sum of
        its partitions' current ones (``kernels/emit.py::group_totals``), not a running sum of their
        changes (a change from ``-inf`` to 0 added ``+inf``, and the running sums crossed groups);
        ``reps`` and ``times``: a partition of the group and the time of each emit time."""
        # each partition's leaf in its group's tree: its rank among the group's partitions
        by_group = np.argsort(gop, kind="stable")
        sizes = np.bincount(gop, minlength=n_groups)
        first = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        slot_of = np.empty(len(gop), np.int64)
        slot_of[by_group] = np.arange(len(gop)) - first[gop[by_group]]
        leaves = 1 << np.ceil(np.log2(np.maximum(sizes, 1))).astype(np.int64)
        tree_off = np.concatenate([[0], np.cumsum(2 * leaves)]).astype(np.int64)
        g = np.concatenate([gop[pid], gop[reps]])
        t = np.concatenate([key, times])
        is_emit = np.concatenate([np.zeros(len(pid), np.int64), np.ones(len(times), np.int64)])
        order = np.lexsort((is_emit, t, g))  # a change at t counts at the emit time t
        g, t, is_emit = g[order], t[order], is_emit[order]
        slot = np.concatenate([slot_of[pid], np.zeros(len(times), np.int64)])[order]
        vals = np.concatenate([val, np.zeros((len(times), val.shape[1]), val.dtype)])[order]
        gptr = np.searchsorted(g, np.arange(n_groups + 1)).astype(np.int64)
        tot = group_totals(gptr, tree_off, slot, is_emit, np.ascontiguousarray(vals))
        at = np.flatnonzero(is_emit == 1)
        nz = tot[:, 0] != 0
        return _first_partitions(gop, n_groups)[g[at][nz]], t[at][nz], tot[nz]

    def _group_ids(self, n_parts: int) -> tuple[np.ndarray, int]:
        """Dense group id of every partition id, and the number of groups."""
        gop = np.asarray(self._group_of(np.arange(n_parts)), np.int64)
        return np.ascontiguousarray(gop), int(gop.max()) + 1 if len(gop) else 1

    def _group_of(self, pids: np.ndarray) -> np.ndarray:
        """Dense group id of each partition id (partitions of one GROUP-BY value share it)."""
        g = list(self.q.group_by)
        if not g:
            return np.zeros(len(pids), np.int64)
        if list(self.q.partition_by) == g:
            return pids
        g = [c for c in self.key_cols if c in g or c.removesuffix("__nan") in g]
        uniq = self.keys.select(g).unique(maintain_order=True).with_row_index("__gid")
        gid = self.keys.join(uniq, on=g, how="left", nulls_equal=True, maintain_order="left")["__gid"]
        return gid.cast(pl.Int64).to_numpy()[pids]

    def _set_carry(self, seg_lo, seg_hi, seg_pid, ev_t, ev_prog, ev_w, limit: int):
        if self.mode in (K.MODE_NONE, K.MODE_EMIT_UNBOUNDED) or limit >= _BIG or not len(ev_t):
            self.carry = None
            return
        idx, pid = K.carry_index(seg_lo, seg_hi, seg_pid, ev_t, self.mode, np.int64(limit),
                                 int(self.w or 0), int(self.s or 1), self.next_k)
        self.carry = {"t": ev_t[idx], "prog": ev_prog[idx], "w": ev_w[idx], "pid": pid}

    def _raise_overflow(self, pid: int, t: int):
        raise overflow_error(self.q, self.locate(pid, t))

    # -------------------------------------------------------------- results
    def cell_chunks(self) -> tuple[list[tuple], list[str], list[str]]:
        """The cells as the kernel wrote them: chunks of ``(pid, key, values, no float values)`` and
        the names of the value columns (``runtime/output.py::chunks_in_rank_order``)."""
        chunks = [(pid, key, self._counted(val), np.zeros((len(pid), 0), np.float64))
                  for pid, key, val in self.outputs]
        return chunks, [f"__v{j}" for j in range(len(self.out_rows))], []

    def _counted(self, val: np.ndarray) -> np.ndarray:
        """The output values with the components of :meth:`_count_dense` set to the count of matches."""
        for j in self.counted:
            val[:, 1 + j] = val[:, 0]
        return val

    def result_cells(self) -> pl.DataFrame:
        """One row per (partition, key) with the output rows as columns v0..vk."""
        ncol = len(self.out_rows)
        if self.outputs:
            pid = np.concatenate([o[0] for o in self.outputs])
            key = np.concatenate([o[1] for o in self.outputs])
            val = self._counted(np.concatenate([o[2] for o in self.outputs]))
        else:
            pid = np.zeros(0, np.int64)
            key = np.zeros(0, np.int64)
            val = np.zeros((0, ncol), self.dtype)
        data = {"__pid": pid, "__key": key}
        for j in range(ncol):
            data[f"__v{j}"] = val[:, j]
        return pl.DataFrame(data)


class LinearRun:
    """One query over one time-ordered stream: one :class:`LinearStream` per semiring it needs.

    The first stream (int64, or float64 when ``numeric="float64"``) answers
    COUNT(*) and every linear component; with exact counts, SUMs of float
    attributes run in a float64 stream; MIN and MAX run in an ``order`` stream.
    Every stream zeroes the components another stream answers.
    """

    def __init__(self, q, schema: dict, *, w: int | None, s: int | None, numeric: str = "int64"):
        from cepvec.paths.linear.plan import build

        self.q = q
        self.plan = build(q)
        self.numeric = numeric
        comps = self.plan.components
        order = [j for j, c in enumerate(comps) if c.kind in ("min", "max")]
        for j in order:
            check_orderable(q, comps[j], schema)
        floats = [j for j, c in enumerate(comps) if c.kind == "sum" and not schema[c.attr].is_integer()]
        first = "int64" if numeric == "int64" else "float64"
        answer = {first: [j for j in range(len(comps)) if j not in order]}
        if first == "int64" and floats:
            answer["int64"] = [j for j in answer["int64"] if j not in floats]
            answer["float64"] = floats
        if order:
            answer["order"] = order
        self.answers = answer
        key_schema = {c: schema[c] for c in q.partition_by}
        self.streams = [LinearStream(self.plan, state=st, w=w, s=s, key_schema=key_schema,
                                     zero_components=tuple(j for j in range(len(comps)) if j not in js))
                        for st, js in answer.items()]
        for st in self.streams[1:]:  # pushed after the first: its partition ids and classes serve them
            st.lead = self.streams[0]
        self.streams[0].followed = len(self.streams) > 1
        # one stream (no MIN / MAX beside the sums): EMIT CHANGES rows carried forward, not per emit time
        self.streams[0].changes_only = len(self.streams) == 1

    def push(self, df: pl.DataFrame, times: np.ndarray) -> None:
        for st in self.streams:
            st.push(df, times)

    def clone_partitions(self, dst: pl.DataFrame, src: pl.DataFrame) -> None:
        for st in self.streams:
            st.clone_partitions(dst, src)

    def finish(self, prep: Prepared) -> pl.DataFrame:
        for st in self.streams:
            st.finish()
        self.streams[0]._encoded = None
        return build_output_frame(self.q, prep, self.plan, self.streams, self.numeric,
                                  list(self.answers.values()))


def _no_null_nor_nan(col: pl.Series) -> bool:
    """Whether ``col`` holds no null and no NaN (NaN reads as null: ``component_weight``'s non-null count
    is then 1 on every row). The null count is the column's own; only a float column is read for NaN."""
    return col.null_count() == 0 and not may_hold_nan(col)


def _stream_rows(plan, zero_components) -> tuple[np.ndarray, int, np.ndarray, np.ndarray]:
    """The rows of ``plan``'s state a stream keeps: those its own programs can make non-zero from the
    start vector (the triplets of the components it zeroes dropped). A query of several streams has
    every component's rows in its plan, and each stream answers some: a stream that kept the others'
    rows computed maps of D x D for a few rows (a float SUM beside its count: D 12, of which each
    stream needs 6). Returns ``(row_of, D, v0, out_rows)``: the stream's row of each plan row (-1:
    dropped), its number of rows, start vector and output rows. The output rows it drops (the
    components another stream answers, and the non-null counts :meth:`LinearStream._count_dense`
    takes from the count) read one more row, last, that nothing writes: it stays 0 (a kernel adds
    to the WITHIN totals of each output row, so they may not share a row that changes)."""
    zero = set(zero_components)
    keep = np.asarray(plan.v0) != 0
    while True:  # a row some kept triplet reads a kept row into (rows only grow: at most D passes)
        more = keep.copy()
        for d, s, j in zip(plan.trip_dst, plan.trip_src, plan.trip_wk):
            if keep[s] and not (j >= 0 and int(j) in zero):
                more[d] = True
        if (more == keep).all():
            break
        keep = more
    row_of = np.full(plan.D, -1, np.int64)
    row_of[keep] = np.arange(int(keep.sum()), dtype=np.int64)
    D = int(keep.sum())
    out_rows = row_of[plan.out_rows]
    if (out_rows < 0).any():
        out_rows = np.where(out_rows < 0, D, out_rows)
        D += 1
    v0 = np.zeros(D, plan.v0.dtype)
    v0[:int(keep.sum())] = np.asarray(plan.v0)[keep]
    return row_of, D, v0, out_rows.astype(np.int64)


#: Under WITHIN and SLIDE, segments with fewer events than a match takes (:func:`_min_events`) are not
#: run. ``warmup.compile_kernels`` turns it off: its few sample rows per partition would skip kernels
#: (and their specialisations) that a large run's longer segments call.
SKIP_SHORT_SEGMENTS = True


def _min_events(plan) -> int:
    """The fewest events a match takes: the shortest path of triplets from a row of the start vector
    to the count of matches (each event moves a partial match along one triplet at most; a negation
    only resets rows)."""
    dist = {int(r): 0 for r in np.flatnonzero(plan.v0)}
    frontier = list(dist)
    while frontier:
        nxt = []
        for d, s in zip(plan.trip_dst.tolist(), plan.trip_src.tolist()):
            if s in frontier and d not in dist:
                dist[d] = dist[s] + 1
                nxt.append(d)
        frontier = nxt
    return dist.get(int(plan.out_rows[0]), 1)


def _running_sums_leave_int64(steps: np.ndarray, start: np.ndarray) -> bool:
    """Whether a running sum of :func:`_group_running_sums` (int64 ``steps``, a new sum at each row of
    ``start``) leaves int64: estimated in float64, and where the estimate comes near the limit, summed
    exactly in Python integers (-2^63 itself fits)."""
    near = np.abs(_group_running_sums(steps.astype(np.float64), start)).max(axis=1) >= 9.2e18
    if not near.any():
        return False
    lo, hi = np.iinfo(np.int64).min, np.iinfo(np.int64).max
    for a, b in zip(start.tolist(), [*start[1:].tolist(), len(steps)]):
        if not near[a:b].any():  # only the groups whose estimate comes near the limit
            continue
        for j in range(steps.shape[1]):
            total = 0
            for v in steps[a:b, j].tolist():
                total += v
                if not lo <= total <= hi:
                    return True
    return False


def _first_partitions(gop: np.ndarray, n_groups: int) -> np.ndarray:
    """The first partition id of each group (``gop``: the group of each partition id)."""
    rep = np.empty(n_groups, np.int64)
    rep[gop[::-1]] = np.arange(len(gop), dtype=np.int64)[::-1]
    return rep


def _group_running_sums(steps: np.ndarray, start: np.ndarray) -> np.ndarray:
    """Running sums of the rows of ``steps`` (2-D), restarted at each row index of ``start``."""
    run = np.cumsum(steps, axis=0)
    before = np.zeros((len(start), steps.shape[1]), steps.dtype)
    before[1:] = run[start[1:] - 1]
    return run - np.repeat(before, np.diff(np.r_[start, len(steps)]), axis=0)


def _order_ties_numpy(seg_lo, seg_hi, ev_t, ev_prog, ev_w, PT) -> None:
    """:func:`cepvec.kernels.linear.order_ties` in NumPy, for few events: every run of equal times of
    every segment sorted by tie rank, stably and in place (a stable sort by segment, time, rank)."""
    idx = np.concatenate([np.arange(lo, hi) for lo, hi in zip(seg_lo, seg_hi)] + [np.zeros(0, np.int64)])
    seg = np.repeat(np.arange(len(seg_lo)), seg_hi - seg_lo)
    rank = PT[PT[ev_prog[idx]]] >> K.TIE_SHIFT
    order = idx[np.lexsort((rank, ev_t[idx], seg))]
    ev_prog[idx] = ev_prog[order]
    ev_w[idx] = ev_w[order]


def _has_ties(t: np.ndarray) -> bool:
    """Whether two neighbours of ``t`` (events in partition order) have one time: without, no tie
    needs ordering, and a first run on tie-free data does not compile ``order_ties``."""
    return len(t) > 1 and bool(np.any(t[1:] == t[:-1]))

"""Driver of the linear-map kernels: encode columns, carry state across batches.

:class:`LinearStream` consumes time-ordered batches one after another and
keeps, per partition, only what a future result can use (the running state
vector, or the events still inside the window), so results do not depend on
how the input is cut into batches. The local engine is one ``push`` and one
``finish``; the Spark adapter calls the same two methods per partition.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from .errors import CepvecDataError, CepvecOverflowError
from .frontend import Prepared
from .kernels import linear as K
from .plan_linear import LinearPlan
from .polars_expr import predicate_mask

_MODES = {"none": K.MODE_NONE, "within": K.MODE_WITHIN, "emit": K.MODE_EMIT, "slide": K.MODE_SLIDE}
_BIG = np.iinfo(np.int64).max // 4


def _encode_columns(plan: LinearPlan, df: pl.DataFrame, int_state: bool, zero_components=()):
    """Bind bits, negation bits, END flags and component weights as NumPy arrays."""
    q = plan.query
    tcol = pl.col(q.type_col).cast(pl.String)
    bind = pl.lit(0, dtype=pl.UInt64)
    for bit, o in enumerate(plan.occ_ids):
        occ = q.occs[o]
        m = tcol.is_in(list(occ.types)) & predicate_mask(q.local.get(o, ()))
        bind = bind | pl.when(m).then(pl.lit(1 << bit, dtype=pl.UInt64)).otherwise(pl.lit(0, dtype=pl.UInt64))
    neg = pl.lit(0, dtype=pl.UInt64)
    for bit, g in enumerate(plan.neg_ids):
        n = q.negations[g]
        occ = q.occs[n.node.occ]
        m = tcol.is_in(list(occ.types)) & predicate_mask(q.local.get(occ.id, ()))
        neg = neg | pl.when(m).then(pl.lit(1 << bit, dtype=pl.UInt64)).otherwise(pl.lit(0, dtype=pl.UInt64))
    end_bit = 1 << plan.occ_ids.index(q.template.end)
    wdt = pl.Int64 if int_state else pl.Float64
    weights = []
    for j, c in enumerate(plan.components):
        if j in zero_components:
            weights.append(pl.lit(0, dtype=wdt).alias(f"__w{j}"))
        elif c.kind == "count":
            weights.append(pl.lit(1, dtype=wdt).alias(f"__w{j}"))
        elif c.kind == "nonnull":
            x = pl.col(c.attr)  # NaN reads as null, as in the reference engine
            valid = x.is_not_null() & x.cast(pl.Float64, strict=False).is_nan().fill_null(False).not_()
            weights.append(valid.cast(wdt).alias(f"__w{j}"))
        else:
            x = pl.col(c.attr)
            if not int_state:
                x = x.cast(pl.Float64)
                x = pl.when(x.is_nan()).then(None).otherwise(x)
            weights.append(x.fill_null(0).cast(wdt).alias(f"__w{j}"))
    enc = df.select(bind.alias("__bind"), neg.alias("__neg"), *weights)
    b = enc["__bind"].to_numpy()
    return (b, enc["__neg"].to_numpy(), (b & np.uint64(end_bit)) != 0,
            enc.select([f"__w{j}" for j in range(len(plan.components))]).to_numpy().astype(
                np.int64 if int_state else np.float64, copy=False).reshape(len(df), len(plan.components)))


class LinearStream:
    """Incremental evaluation of one query with the linear-map kernels."""

    def __init__(self, plan: LinearPlan, *, int_state: bool, w: int | None, s: int | None,
                 key_schema: dict, zero_components: tuple[int, ...] = ()):
        self.plan = plan
        self.zero_components = zero_components
        self.q = plan.query
        self.int_state = int_state
        self.w, self.s = w, s
        kind = self.q.window.kind
        self.mode = _MODES[kind]
        if kind == "emit" and w is None:
            self.mode = K.MODE_EMIT_UNBOUNDED
        self.dtype = np.int64 if int_state else np.float64
        # float keys: NaN does not join to NaN, so keys hold (value with NaN as null, is-NaN flag)
        self.float_keys = [c for c, dt in key_schema.items() if dt.is_float()]
        ks = dict(key_schema)
        for c in self.float_keys:
            ks[c + "__nan"] = pl.Boolean
        self.key_cols = list(ks)
        self.keys = pl.DataFrame(schema={**ks, "__pid": pl.Int64})
        self.X = np.zeros((0, plan.D), self.dtype)
        self.next_k = np.zeros(0, np.int64)
        self.carry: dict[str, np.ndarray] | None = None
        self.held: pl.DataFrame | None = None
        self.outputs: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self.last_time: int | None = None
        self.programs: dict[tuple[int, int], int] = {}
        self.prog_arrays = None

    # -------------------------------------------------------------- programs
    def _program_ids(self, bind: np.ndarray, neg: np.ndarray) -> np.ndarray:
        """Global program id per event: one program per distinct (bind, neg) pair."""
        local, ub, un = K.encode_programs(bind, neg)
        glob = np.empty(len(ub), np.int64)
        changed = False
        for i, key in enumerate(zip(ub.tolist(), un.tolist())):
            if key not in self.programs:
                self.programs[key] = len(self.programs)
                changed = True
            glob[i] = self.programs[key]
        if changed or self.prog_arrays is None:
            self.prog_arrays = self._build_programs()
        return glob[local] if len(local) else np.zeros(0, np.int64)

    def _build_programs(self):
        plan = self.plan
        ptr, dst, src, wk, rptr, rrows = [0], [], [], [], [0], []
        for (b, g) in self.programs:  # dict order == program id
            for bit in range(len(plan.occ_ids)):
                if (b >> bit) & 1:
                    lo, hi = plan.trip_ptr[bit], plan.trip_ptr[bit + 1]
                    dst += plan.trip_dst[lo:hi].tolist()
                    src += plan.trip_src[lo:hi].tolist()
                    wk += plan.trip_wk[lo:hi].tolist()
            ptr.append(len(dst))
            rows: list[int] = []
            for bit in range(len(plan.neg_ids)):
                if (g >> bit) & 1:
                    rows += plan.neg_rows[plan.neg_ptr[bit]:plan.neg_ptr[bit + 1]].tolist()
            rrows += sorted(set(rows))
            rptr.append(len(rrows))
        a = lambda x: np.array(x, np.int64)  # noqa: E731
        return a(ptr), a(dst), a(src), a(wk), a(rptr), a(rrows)

    # -------------------------------------------------------------- encoding
    def _partition_ids(self, df: pl.DataFrame) -> np.ndarray:
        cols = self.key_cols
        if not cols:
            if len(self.keys) == 0:
                self.keys = pl.DataFrame({"__pid": [0]}, schema={"__pid": pl.Int64})
                self._grow(1)
            return np.zeros(len(df), np.int64)
        df = df.select(self.key_exprs())
        uniq = df.unique(maintain_order=True)
        known = uniq.join(self.keys, on=cols, how="left", nulls_equal=True)
        new = known.filter(pl.col("__pid").is_null()).select(cols)
        if len(new):
            start = len(self.keys)
            new = new.with_columns(pl.int_range(start, start + len(new), dtype=pl.Int64).alias("__pid"))
            self.keys = pl.concat([self.keys, new.cast(self.keys.schema)], how="vertical")
            self._grow(len(self.keys))
        return (df.join(self.keys, on=cols, how="left", nulls_equal=True,
                        maintain_order="left")["__pid"].to_numpy())

    def key_exprs(self) -> list[pl.Expr]:
        out = []
        for c in self.q.partition_by:
            if c in self.float_keys:
                out += [pl.col(c).fill_nan(None).alias(c), pl.col(c).is_nan().fill_null(False).alias(c + "__nan")]
            else:
                out.append(pl.col(c))
        return out

    def group_frame(self) -> pl.DataFrame:
        """Partition id and the original GROUP-BY values (NaN restored)."""
        exprs = [pl.col("__pid")]
        for g in self.q.group_by:
            if g in self.float_keys:
                exprs.append(pl.when(pl.col(g + "__nan")).then(float("nan")).otherwise(pl.col(g)).alias(g))
            else:
                exprs.append(pl.col(g))
        return self.keys.select(exprs)

    def _grow(self, n: int):
        if n > self.X.shape[0]:
            X = np.zeros((n, self.plan.D), self.dtype)
            X[: self.X.shape[0]] = self.X
            X[self.X.shape[0]:] = self.plan.v0.astype(self.dtype) if self.mode in (
                K.MODE_NONE, K.MODE_EMIT_UNBOUNDED) else 0
            self.X = X
            nk = np.zeros(n, np.int64)
            nk[: self.next_k.shape[0]] = self.next_k
            self.next_k = nk

    # -------------------------------------------------------------- streaming
    def push(self, df: pl.DataFrame, times: np.ndarray, *, final: bool = False):
        """Consume the next time-ordered batch (``times`` in the time unit)."""
        if len(df) and self.last_time is not None and times[0] < self.last_time:
            raise CepvecDataError(
                f"batch starts at time {times[0]}, before the previous batch ended ({self.last_time}); "
                "batches must arrive in time order")
        if self.held is not None:
            df = pl.concat([self.held, df.with_columns(pl.Series("__t", times))], how="vertical_relaxed")
            self.held = None
        else:
            df = df.with_columns(pl.Series("__t", times))
        if not final and len(df):
            # equal time stamps may continue in the next batch: hold the last one back
            tmax = df["__t"][-1]
            cut = int(np.searchsorted(df["__t"].to_numpy(), tmax, side="left"))
            self.held = df[cut:]
            df = df[:cut]
            limit = int(tmax)
        else:
            limit = _BIG
        if len(df):
            self.last_time = int(df["__t"][-1])
        self._process(df, limit)

    def finish(self) -> None:
        if self.held is not None:
            held, self.held = self.held, None
            self._process(held, _BIG)
        elif self.carry is not None:
            self._process(None, _BIG)
        if self.mode in (K.MODE_NONE, K.MODE_WITHIN):
            rows = self.plan.out_rows
            vals = self.X[:, rows]
            nz = np.nonzero(vals[:, 0])[0]
            self.outputs.append((nz.astype(np.int64), np.zeros(len(nz), np.int64), vals[nz]))

    def _process(self, df: pl.DataFrame | None, limit: int):
        plan = self.plan
        emit_src = (np.zeros(0, np.int64), np.zeros(0, np.int64))
        if df is not None and len(df):
            bind, neg, end, wts = _encode_columns(plan, df, self.int_state, self.zero_components)
            keep = (bind != 0) | (neg != 0)
            t = df["__t"].to_numpy()
            pid = self._partition_ids(df)
            if self.mode == K.MODE_EMIT or self.mode == K.MODE_EMIT_UNBOUNDED:
                emit_src = (pid[end], t[end])
            prog = self._program_ids(np.ascontiguousarray(bind[keep]), np.ascontiguousarray(neg[keep]))
            new = {"t": t[keep], "prog": prog, "end": end[keep], "w": wts[keep], "pid": pid[keep]}
        else:
            new = None
        parts = [p for p in (self.carry, new) if p is not None and len(p["t"])]
        n_carry = len(self.carry["t"]) if self.carry is not None else 0
        if not parts and self.mode not in (K.MODE_EMIT, K.MODE_EMIT_UNBOUNDED):
            return
        if parts:
            ev = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
        else:
            ev = {"t": np.zeros(0, np.int64), "prog": np.zeros(0, np.int64), "end": np.zeros(0, np.bool_), "w": np.zeros((0, len(plan.components)), self.dtype),
                  "pid": np.zeros(0, np.int64)}
        n_parts = len(self.keys) if len(self.keys) else 1
        order, seg_all = K.partition_order(ev["pid"], n_parts)
        for k in ("t", "prog", "end", "w", "pid"):
            ev[k] = np.ascontiguousarray(ev[k][order])
        is_carry = np.zeros(len(order), np.bool_)
        is_carry[:] = order < n_carry
        counts = np.diff(seg_all)
        seg_pids = np.nonzero(counts)[0]
        emit_ptr, emit_times = self._emit_schedule(seg_pids, emit_src)
        if self.mode in (K.MODE_EMIT, K.MODE_EMIT_UNBOUNDED):
            # partitions of a group with output times but no events here still hold a window
            seg_pids = np.union1d(seg_pids, self._pids_with_emits(emit_src)).astype(np.int64)
            emit_ptr, emit_times = self._emit_schedule(seg_pids, emit_src)
        seg_ptr = np.concatenate([[0], np.cumsum(counts[seg_pids])]).astype(np.int64)
        starts = seg_all[seg_pids]
        # events of the selected partitions, in segment order
        idx = np.concatenate([np.arange(a, a + c) for a, c in zip(starts, counts[seg_pids])]) \
            if len(seg_pids) else np.zeros(0, np.int64)
        idx = idx.astype(np.int64)
        replay = np.array([int(is_carry[a:a + c].sum()) for a, c in zip(starts, counts[seg_pids])], np.int64)
        err = np.zeros(3, np.int64)
        out_pid, out_key, out_val = K.run_segments(
            self.mode, int(self.w or 0), int(self.s or 1), self.int_state,
            seg_ptr, seg_pids.astype(np.int64), replay, emit_ptr, emit_times, np.int64(limit),
            ev["t"][idx], ev["prog"][idx], ev["end"][idx],
            np.ascontiguousarray(ev["w"][idx].astype(self.dtype, copy=False)),
            *(self.prog_arrays if self.prog_arrays is not None else self._build_programs()),
            plan.v0.astype(self.dtype), plan.out_rows, self.X, self.next_k, err)
        if err[0]:
            self._raise_overflow(int(err[1]), int(err[2]))
        if len(out_pid):
            self.outputs.append((out_pid, out_key, out_val))
        self._set_carry(ev, limit)

    def _pids_with_emits(self, emit_src) -> np.ndarray:
        pid_end, _ = emit_src
        groups = self._group_of(np.unique(pid_end))
        all_groups = self._group_of(np.arange(len(self.keys)))
        return np.nonzero(np.isin(all_groups, groups))[0]

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

    def _emit_schedule(self, seg_pids: np.ndarray, emit_src):
        if self.mode not in (K.MODE_EMIT, K.MODE_EMIT_UNBOUNDED):
            return np.zeros(len(seg_pids) + 1, np.int64), np.zeros(0, np.int64)
        pid_end, t_end = emit_src
        g_end = self._group_of(pid_end)
        g_seg = self._group_of(seg_pids)
        ptr = [0]
        times: list[np.ndarray] = []
        for g in g_seg:
            ts = np.unique(t_end[g_end == g])
            times.append(ts)
            ptr.append(ptr[-1] + len(ts))
        return (np.array(ptr, np.int64),
                np.concatenate(times).astype(np.int64) if times else np.zeros(0, np.int64))

    def _set_carry(self, ev: dict, limit: int):
        if self.mode in (K.MODE_NONE, K.MODE_EMIT_UNBOUNDED) or limit >= _BIG or not len(ev["t"]):
            self.carry = None
            return
        if self.mode == K.MODE_SLIDE:
            keep = ev["t"] >= self.next_k[ev["pid"]] * self.s
        else:
            keep = ev["t"] > limit - self.w
        self.carry = {k: v[keep] for k, v in ev.items()}

    def _raise_overflow(self, pid: int, t: int):
        key = self.keys.filter(pl.col("__pid") == pid).drop("__pid").to_dicts()
        raise CepvecOverflowError(
            f"an exact int64 count or sum overflows in partition {key[0] if key else {}} near time {t} "
            f"for query {' '.join(self.q.text.split())!r}; pass numeric='float64' for approximate results")

    # -------------------------------------------------------------- results
    def result_cells(self) -> pl.DataFrame:
        """One row per (partition, key) with the output rows as columns v0..vk."""
        ncol = len(self.plan.out_rows)
        if self.outputs:
            pid = np.concatenate([o[0] for o in self.outputs])
            key = np.concatenate([o[1] for o in self.outputs])
            val = np.concatenate([o[2] for o in self.outputs])
        else:
            pid = np.zeros(0, np.int64)
            key = np.zeros(0, np.int64)
            val = np.zeros((0, ncol), self.dtype)
        data = {"__pid": pid, "__key": key}
        for j in range(ncol):
            data[f"__v{j}"] = val[:, j]
        return pl.DataFrame(data)


class LinearRun:
    """One query over one time-ordered stream: one or two :class:`LinearStream` (exact + float)."""

    def __init__(self, q, schema: dict, *, w: int | None, s: int | None, numeric: str = "int64"):
        from .plan_linear import build

        self.q = q
        self.plan = build(q)
        self.numeric = numeric
        self.float_comps = [j for j, c in enumerate(self.plan.components)
                            if c.kind == "sum" and not schema[c.attr].is_integer()]
        exact = numeric == "int64"
        # with float sums and exact counts, run twice: int64 for counts (float sums zeroed), float64 for sums
        kinds = [True, False] if (exact and self.float_comps) else [exact]
        key_schema = {c: schema[c] for c in q.partition_by}
        self.streams = [LinearStream(self.plan, int_state=k, w=w, s=s, key_schema=key_schema,
                                     zero_components=tuple(self.float_comps) if (k and not (len(kinds) == 1)) else ())
                        for k in kinds]

    def push(self, df: pl.DataFrame, times: np.ndarray) -> None:
        for st in self.streams:
            st.push(df, times)

    def finish(self, prep: Prepared) -> pl.DataFrame:
        from .engines import build_output_frame

        for st in self.streams:
            st.finish()
        return build_output_frame(self.q, prep, self.plan, self.streams, self.numeric, self.float_comps)


def run_linear(q, prep: Prepared, *, numeric: str = "int64", batches: list[int] | None = None) -> pl.DataFrame:
    """Evaluate ``q`` with the linear-map kernels (``batches``: cut points, for tests)."""
    run = LinearRun(q, prep.df.schema, w=prep.w, s=prep.s, numeric=numeric)
    times = prep.times.to_numpy()
    cuts = [0] + sorted(set(batches or [])) + [len(prep.df)]
    for a, b in zip(cuts, cuts[1:]):
        run.push(prep.df[a:b], times[a:b])
    return run.finish(prep)

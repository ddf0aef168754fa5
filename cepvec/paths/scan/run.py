"""Driver of the GRETA predecessor-scan path: encode columns, partition, run the kernel, assemble rows.

:class:`ScanRun` has the interface of :class:`cepvec.paths.linear.run.LinearRun`
and :class:`cepvec.paths.trend.run.TrendRun`: ``push(df, times)`` any number of
time-ordered batches, then ``finish(prep)``; the result does not depend on the
cuts. Partition ids come from the trend path's
:class:`cepvec.runtime.partitions.Partitions`, and the last time stamp of a batch
is held back as there (ties are processed together).

* No window (and EMIT CHANGES without WITHIN): every earlier event of a
  partition is a predecessor, so the batches are kept and scanned once by
  ``finish``.
* WITHIN, WITHIN EMIT CHANGES, SLIDE: every batch is scanned on arrival
  together with the carried events of the last ``2w`` (replayed); only the
  results that became final since the previous batch are emitted
  (:meth:`ScanRun._scan`), so state is bounded by the window.
"""

from __future__ import annotations

from decimal import Decimal

import numpy as np
import polars as pl

from cepvec.errors import CepvecDataError
from cepvec.runtime import threads
from cepvec.runtime.progress import warn_user
from cepvec.runtime.threads import map_threads, split_ranges
from cepvec.kernels.emit import FROM_FIRST as EMIT_FROM_FIRST, WITHIN as EMIT_WITHIN, segment_emit_times
from cepvec.runtime.memory import check_emit_rows
from cepvec.runtime.order_keys import extreme_value_error
from cepvec.runtime.prepare import Prepared
from cepvec.kernels import scan as K
from cepvec.paths.base import batch_end, feed
from cepvec.runtime.output import (assemble_output, in_rank_order, internal_error, overflow_error, select_weights,
                                   sums_overflow)
from cepvec.kernels.trend import float_order_key, partition_order
from cepvec.paths.scan.plan import Programs, ScanPlan, build
from cepvec.runtime.polars_expr import predicate_mask
from cepvec.runtime.type_codes import type_in

_MODES = {"none": K.MODE_NONE, "within": K.MODE_WITHIN, "slide": K.MODE_SLIDE}
_NEG = -(1 << 62)  # "before every time" / "after every time" bounds of the emitted results
_POS = 1 << 62


class _MinMaxCodes:
    """Order-preserving int64 codes of one MIN/MAX attribute, and the way back to its dtype."""

    def __init__(self, series: pl.Series):
        self.dtype = dt = series.dtype
        if dt.is_float():
            v = series.cast(pl.Float64).to_numpy()
            self.ok = ~np.isnan(v)  # null and NaN are skipped, as in the reference engine
            self.codes = float_order_key(np.where(self.ok, v, 0.0))
            self.kind = "f"
        elif dt in (pl.String, pl.Categorical) or isinstance(dt, (pl.Categorical, pl.Enum)):
            s = series.cast(pl.String)
            self.dictionary = sorted(v for v in s.unique().to_list() if v is not None)
            d = pl.DataFrame({"v": self.dictionary, "c": np.arange(len(self.dictionary), dtype=np.int64)},
                             schema={"v": pl.String, "c": pl.Int64})
            c = pl.DataFrame({"v": s}).join(d, on="v", how="left", maintain_order="left")["c"]
            self.ok = c.is_not_null().to_numpy()
            self.codes = c.fill_null(0).to_numpy().astype(np.int64)
            self.kind = "s"
        else:
            self.ok = series.is_not_null().to_numpy()
            # a Decimal's physical values are its scaled integers (decoded with the scale below)
            self.kind = "d" if dt.is_decimal() else "i"
            try:
                self.codes = series.to_physical().cast(pl.Int64).fill_null(0).to_numpy().astype(np.int64)
            except pl.exceptions.InvalidOperationError:
                raise CepvecDataError(
                    f"MIN / MAX of column '{series.name}' ({dt}): a value does not fit in Int64"
                    + (" once scaled" if self.kind == "d" else "") + "; use engine='reference'") from None

    def decode(self, codes: np.ndarray, valid: np.ndarray) -> pl.Series:
        if self.kind == "f":
            b = np.where(codes >= 0, codes, codes ^ np.int64(K.I64_MAX)).view(np.float64)
            s = pl.Series(b).cast(pl.Float64)
        elif self.kind == "s":
            idx = np.where(valid, codes, 0)
            s = pl.Series([self.dictionary[i] if ok else None for i, ok in zip(idx, valid)], dtype=pl.String)
        elif self.kind == "d":  # scaled integers back to decimals (a few result cells: Python objects)
            scale = self.dtype.scale
            return pl.Series([Decimal(int(c)).scaleb(-scale) if ok else None for c, ok in zip(codes, valid)],
                             dtype=self.dtype)
        else:
            s = pl.Series(codes, dtype=pl.Int64)
        s = pl.select(pl.when(pl.Series(valid)).then(s).otherwise(None)).to_series()
        return s.cast(self.dtype)


class ScanRun:
    """One query over one time-ordered stream on the predecessor-scan path."""

    def __init__(self, q, schema: dict, *, w: int | None, s: int | None, numeric: str = "int64"):
        from cepvec.runtime.partitions import Partitions

        self.q = q
        self.plan: ScanPlan = build(q)
        self.numeric = numeric
        self.int_state = numeric == "int64"
        self.schema = dict(schema)
        self.w, self.s = int(w or 0), int(s or 1)
        kind = q.window.kind
        if kind == "emit":
            self.mode = K.MODE_EMIT if w is not None else K.MODE_EMIT_ALL
        else:
            self.mode = _MODES[kind]
        # with a window, batches are scanned as they come (replaying the events still in reach);
        # without one every earlier event is a predecessor, so the batches are kept until finish
        self.incremental = self.mode in (K.MODE_WITHIN, K.MODE_EMIT, K.MODE_SLIDE)
        self.programs = Programs(q, self.plan, self.schema)  # raises UnsupportedByEngine on bad types
        self.parts = Partitions(q, {c: self.schema[c] for c in q.partition_by})
        # the columns the kernel reads once the events are bound and partitioned (gathered in
        # partition order: the type and key columns are not carried along)
        attrs = [c.attr for c in self.plan.components if c.kind != "count"]
        attrs += [attr for _, _, attr in self.plan.minmax]
        attrs += [attr for attr, _ in self.programs.icols] + list(self.programs.fcols)
        self.kernel_cols = list(dict.fromkeys(["__t", *attrs]))
        self.read_cols = set(q.attributes) | set(attrs)
        self.frames: list[pl.DataFrame] = []  # kept batches (no window) or the carried events
        self.held: pl.DataFrame | None = None
        self.done = _NEG  # results are final (emitted) up to this bound (see _scan)
        self.cells: list[pl.DataFrame] = []
        self.pending: list = []  # Futures of the pieces scanning in the pool (threads.in_pool)
        self.last_time: int | None = None
        self.warned = False  # the long-run warning (_warn_if_long) was made; given by _add
        self.warning: str | None = None

    #: events per scan under a window: a large batch is scanned in pieces, so the per-call rows
    #: (events x buckets) stay proportional to the piece plus the carry, not to the batch
    CHUNK = 1 << 16
    #: a piece holds at least this many events per partition seen so far
    EVENTS_PER_PARTITION = 16
    #: pieces that may be queued in the pool per thread while the next one is prepared
    PIPELINE = 2

    def clone_partitions(self, dst: pl.DataFrame, src: pl.DataFrame) -> None:
        """New partitions ``dst`` (key frames) start with the events of partitions ``src``: kept
        batches or carried window events, and held-back rows (see cepvec.paths.qualified)."""
        from cepvec.paths.qualified import copy_rows

        def with_copies(f: pl.DataFrame) -> pl.DataFrame:
            # encoded rows hold float keys raw, under __raw{j} (see _events): matched by their names
            raw = ({f"__raw{j}": c for j, c in enumerate(self.q.partition_by)}
                   if self.parts.float_keys and "__pid" in f.columns else {})
            extra = copy_rows(f.rename(raw), src, dst)
            if "__pid" in extra.columns:  # encoded rows: the copies belong to the new partitions
                extra = extra.with_columns(pl.Series("__pid", self.parts.ids(extra), dtype=pl.Int64))
            extra = extra.rename({c: r for r, c in raw.items()})
            return pl.concat([f, extra], how="vertical_relaxed").sort("__t", maintain_order=True) if len(extra) else f

        self.frames = [with_copies(f) for f in self.frames if len(f)]
        if self.held is not None and len(self.held):
            self.held = with_copies(self.held)

    def push(self, df: pl.DataFrame, times: np.ndarray) -> None:
        """Consume the next time-ordered batch (``times`` in the time unit).

        With a window, the batch is encoded (:meth:`_encode`: the pattern's events, then their
        partition ids, numbered in input order) and cut into pieces (:meth:`_pieces`) that scan in
        the pool.
        """
        if not len(df):
            return
        self.last_time = batch_end(times, self.last_time)
        df = df.with_columns(pl.Series("__t", np.asarray(times, np.int64)))
        if not self.incremental:
            self.frames.append(df)
            return
        # one encoding of the batch (Polars spreads it over its threads; the partition ids of a long
        # column are taken in two threads), then pieces scan in the pool while this thread hands them on
        part = self._encode(df)
        # every piece's frame is cut before any is handed on: once pieces scan, their preparation in
        # the pool holds the GIL often, and this thread's cutting between hand-offs kept a pool
        # thread idle for milliseconds. A piece's last time stamp is held back (equal time stamps
        # may continue in the next piece or batch): it runs rows [start, cut) of the batch, after
        # the rows held back before them; the cuts come from one array of the batch's times
        tv = part["__t"].to_numpy()
        jobs, start = [], 0
        for _, d in self._pieces(len(part)):
            cut = int(np.searchsorted(tv, tv[d - 1], side="left"))
            if cut <= start:  # every row of the piece has the time stamp held back
                continue
            new, new_t = part[start:cut], tv[start:cut]
            if self.held is not None and len(self.held):
                new = pl.concat([self.held, new], how="vertical_relaxed", rechunk=False)
                new_t = np.concatenate([self.held["__t"].to_numpy(), new_t])
            self.held = None
            jobs.append(self._frame(new, int(tv[d - 1]), new_t))
            start = cut
        rest = part[start:]
        self.held = rest if self.held is None else pl.concat([self.held, rest], how="vertical_relaxed",
                                                              rechunk=False)
        for job in jobs:
            if job is not None:
                self._submit(*job)

    def _pieces(self, n: int) -> list[tuple[int, int]]:
        """Row ranges of a batch of ``n`` events: about ``CHUNK`` events, or ``EVENTS_PER_PARTITION``
        per partition seen so far (a piece's cost per partition is fixed), in a multiple of the
        threads' number of pieces of equal length (the pool's threads finish together)."""
        k = -(-n // max(self.CHUNK, self.EVENTS_PER_PARTITION * len(self.parts)))
        nt = threads.n_threads()
        if nt > 1 and n >= threads.MIN_EVENTS_PER_THREAD // 4:
            k = -(-max(k, nt) // nt) * nt
        cuts = np.linspace(0, n, k + 1).astype(np.int64)
        return [(int(a), int(b)) for a, b in zip(cuts[:-1], cuts[1:]) if b > a]

    def _encode(self, df: pl.DataFrame) -> pl.DataFrame:
        """:meth:`_events` of ``df`` with their partition ids ``__pid``."""
        return self._with_ids(self._events(df))

    def _with_ids(self, df: pl.DataFrame) -> pl.DataFrame:
        """Encoded events with their partition ids ``__pid`` (new keys numbered in input order)."""
        raw = {c: f"__raw{j}" for j, c in enumerate(self.q.partition_by)} if self.parts.float_keys else {}
        keys = df.select([pl.col(a).alias(c) for c, a in raw.items()]) if raw else df
        return df.with_columns(pl.Series("__pid", self.parts.ids(keys), dtype=pl.Int64))

    def _events(self, df: pl.DataFrame) -> pl.DataFrame:
        """The events of ``df`` that can bind a position, with their position bits ``__bind``, the
        columns the kernel reads (NaN read as null, as for the predicates) and the partition keys
        (float keys read raw under ``__raw{j}``: Partitions.ids keeps NaN apart from null)."""
        q = self.q
        keys = list(q.partition_by)
        raw = {c: f"__raw{j}" for j, c in enumerate(keys)} if self.parts.float_keys else {}
        floats = [c for c, dt in df.schema.items() if dt in (pl.Float32, pl.Float64) and c in self.read_cols]
        bind = pl.lit(0, dtype=pl.Int64)
        for o in q.occs:
            m = type_in(q.type_col, o.types) & predicate_mask(q.local.get(o.id, ()))
            bind = bind | pl.when(m).then(pl.lit(1 << o.id, dtype=pl.Int64)).otherwise(pl.lit(0, dtype=pl.Int64))
        return (df.lazy().with_columns([pl.col(c).alias(a) for c, a in raw.items()])
                .with_columns(pl.col(floats).fill_nan(None)).with_columns(bind.alias("__bind"))
                .filter(pl.col("__bind") != 0)
                .select(list(dict.fromkeys(["__bind", *self.kernel_cols, *(raw.values() if raw else keys)])))
                .collect())

    def _scan(self, new: pl.DataFrame | None, bound: int) -> None:
        """Scan the carried events and ``new`` (all before ``bound``); emit what became final."""
        job = self._frame(new, bound)
        if job is not None:
            self._submit(*job)

    def _frame(self, new: pl.DataFrame | None, bound: int, new_t: np.ndarray | None = None) -> tuple | None:
        """The events to scan for the results final at ``bound`` (``(frame, done, bound)``, None when
        there are none), and the carry of the next call (``new_t``: the times of ``new``, if known).

        Final, and not emitted before, are: WITHIN, the matches whose first event ``τ`` has
        ``done < τ + w <= bound`` (the end negation reads up to ``τ + w``); SLIDE, the windows with
        ``done < k s + w <= bound``; EMIT CHANGES, the times in ``[done, bound)``. All of them
        start after ``done - w`` and their negative matches after ``done - 2w``, so the events
        after ``bound - 2w`` are carried to the next call and replayed.
        """
        parts = [f for f in (*self.frames, new) if f is not None and len(f)]
        df = pl.concat(parts, how="vertical_relaxed", rechunk=False) if parts else None
        done, self.done = self.done, bound
        if df is None or not len(df):
            return None
        # rows are in time order: the carry is a suffix (found in the carried times, then in new's)
        lo = 0
        if bound < _POS:
            x = bound - 2 * self.w
            if new_t is None:
                lo = int(np.searchsorted(df["__t"].to_numpy(), x, side="right"))
            else:
                old = [f["__t"].to_numpy() for f in self.frames if len(f)]
                ct = np.concatenate(old) if len(old) > 1 else (old[0] if old else new_t[:0])
                lo = int(np.searchsorted(ct, x, side="right"))
                if lo == len(ct):
                    lo += int(np.searchsorted(new_t, x, side="right"))
        self.frames = [df[lo:]]
        return df, done, bound

    def _submit(self, df: pl.DataFrame, done: int, bound: int) -> None:
        """Scan ``df`` for the results final in ``(done, bound]``: in the pool when there are threads
        (up to PIPELINE pieces per thread queued; cells collected in order), else here."""
        self._wait(self.PIPELINE * threads.n_threads())
        if bound < _POS and threads.n_threads() > 1 and len(df) >= threads.MIN_EVENTS_PER_THREAD // 4:
            self.pending.append(threads.in_pool(self._piece_cells, df, done, bound))
        else:
            self._wait()
            self._add(self._piece_cells(df, done, bound))

    def _piece_cells(self, df: pl.DataFrame, done: int, bound: int) -> pl.DataFrame | None:
        job = self._kernel_job(df, done, bound)
        return job() if job is not None else None

    def _wait(self, keep: int = 0) -> None:
        """Collect the cells of the pieces scanning in the background, oldest first, until ``keep``
        are left (their errors are raised here, in input order)."""
        while len(self.pending) > keep:
            self._add(self.pending.pop(0).result())

    def _add(self, cells: pl.DataFrame | None) -> None:
        if self.warning is not None:
            warn_user(self.warning)
            self.warning = None
        if cells is not None and len(cells):
            self.cells.append(cells)

    def finish(self, prep: Prepared) -> pl.DataFrame:
        if self.incremental:
            held, self.held = self.held, None
            self._scan(held, _POS)
        else:
            df = pl.concat(self.frames, how="vertical_relaxed") if self.frames else None
            if df is not None and len(df):
                job = self._kernel_job(df, _NEG, _POS)
                self._add(job() if job is not None else None)
        self._wait()
        self.frames = []
        if not self.cells:
            return pl.DataFrame(schema=_out_schema(self.q, prep, self.numeric))
        cells = pl.concat(self.cells, how="vertical_relaxed")
        return _assemble(self.q, prep, self.plan, self.numeric, cells, self.parts,
                         repeats=self.mode == K.MODE_WITHIN and len(self.cells) > 1)

    # ------------------------------------------------------------------ kernel call
    def _kernel_job(self, df: pl.DataFrame, done: int, bound: int):
        """The encoded events of ``df`` and a function that scans them: it returns the cells
        (partition, key, values; MIN/MAX decoded) of the results final in ``(done, bound]``,
        or raises the first overflow in segment order. None when ``df`` holds no event."""
        q, plan = self.q, self.plan
        if "__bind" not in df.columns:  # the kept batches (no window) are encoded here
            df = self._encode(df)
        if not len(df):
            return None
        bind_all = np.asarray(df["__bind"].to_numpy(), np.int64)
        parts = self.parts
        pid = df["__pid"].to_numpy()
        # the keys as of now: pieces run in the pool while later batches add keys (the ids of this
        # piece's events are all below its length)
        keys = parts.keys
        n_parts = max(len(keys), 1)
        order, seg_all = partition_order(pid, n_parts)
        # columns are read in input order and their arrays gathered in partition order (df holds the
        # kernel's columns, the bits, the keys and the ids: read, not selected)
        ev_t = np.take(np.asarray(df["__t"].to_numpy(), np.int64), order)
        ev_bind = np.take(bind_all, order)
        counts = np.diff(seg_all)
        pid = np.repeat(np.arange(n_parts, dtype=np.int64), counts)  # the ids in partition order
        seg_pids = np.nonzero(counts)[0].astype(np.int64)
        seg_ptr = np.append(seg_all[seg_pids], len(order)).astype(np.int64)
        n_seg = len(seg_pids)

        # aggregate weights
        dtype = np.int64 if self.int_state else np.float64
        comps = plan.components
        comp_float = [self.int_state and c.kind == "sum" and not self.schema[c.attr].is_integer() for c in comps]
        main = [j for j, f in enumerate(comp_float) if not f]
        flo = [j for j, f in enumerate(comp_float) if f]
        # every array below is built in partition order (gathered once, by ``order``)
        wi = np.zeros((len(df), len(main)), dtype)
        wf = np.zeros((len(df), len(flo)), np.float64)
        for j, c in enumerate(comps):
            if c.kind == "count":
                x = 1
            elif c.kind == "nonnull":
                x = df[c.attr].is_not_null().to_numpy()[order]
            else:
                kind = pl.Int64 if (self.int_state and not comp_float[j]) else pl.Float64
                x = select_weights(df, [pl.col(c.attr).fill_null(0).cast(kind)], q).to_series().to_numpy()[order]
            if comp_float[j]:
                wf[:, flo.index(j)] = x
            else:
                wi[:, main.index(j)] = x
        co = plan.arrays["comp_occ"]
        comp_i = np.ascontiguousarray(co[main].reshape(len(main), co.shape[1]))
        comp_f = np.ascontiguousarray(co[flo].reshape(len(flo), co.shape[1]))
        mm = [_MinMaxCodes(df[attr]) for _, _, attr in plan.minmax]
        for (j, _, attr), m in zip(plan.minmax, mm):  # the kernel's 'no value' is Int64's MIN / MAX
            kind = q.aggs[j].func.lower()
            if m.kind in ("i", "d") and np.any(m.ok & (m.codes == (K.I64_MAX if kind == "min" else K.NEG_INF))):
                raise extreme_value_error(q, kind, attr)
        mmv = np.ascontiguousarray(np.stack([m.codes[order] for m in mm], axis=1) if mm
                                   else np.zeros((len(df), 0), np.int64))
        mmok = np.ascontiguousarray(np.stack([m.ok[order] for m in mm], axis=1) if mm
                                    else np.zeros((len(df), 0), np.bool_))
        colI, nI, colF, nF, constI, constF = self.programs.encode(df, order)
        prog_op, prog_arg, plo, phi = self.programs.arrays()

        # output rows per segment
        w, s = self.w, self.s
        seg_kbase = np.zeros(n_seg, np.int64)
        ev_row = row_key = np.zeros(0, np.int64)
        seg_et_lo = np.zeros(n_seg, np.int64)
        seg_et_hi = np.zeros(n_seg, np.int64)
        ET = np.zeros(0, np.int64)
        if self.mode == K.MODE_SLIDE:
            t_first = ev_t[seg_ptr[:-1]]
            seg_kbase = np.maximum(0, (t_first - w) // s + 1)
            ev_row, row_key, cap = _slide_rows(ev_t, seg_ptr, w, s)
        elif self.mode in (K.MODE_EMIT, K.MODE_EMIT_ALL):
            # emit times of a group: the times of its END events (any partition of the group)
            end_bit = np.int64(1) << np.int64(q.template.end)
            gid_of_pid = np.zeros(n_parts, np.int64)
            if q.group_by and len(keys):
                gcols = [c for g in q.group_by for c in ([g, g + "__nan"] if g in parts.float_keys else [g])]
                uniq = keys.select(gcols).unique(maintain_order=True).with_row_index("__g")
                g = keys.join(uniq, on=gcols, how="left", nulls_equal=True)
                gid_of_pid[g["__pid"].to_numpy()] = g["__g"].to_numpy().astype(np.int64)
            gid = gid_of_pid[pid]
            is_end = ((ev_bind & end_bit) != 0) & (ev_t >= done)  # earlier times were emitted before
            et = pl.DataFrame({"g": gid[is_end], "t": ev_t[is_end]}).unique().sort("g", "t")
            ET = np.ascontiguousarray(et["t"].to_numpy().astype(np.int64))
            n_g = int(gid_of_pid.max()) + 1 if len(gid_of_pid) else 1
            gptr = np.searchsorted(et["g"].to_numpy(), np.arange(n_g + 1)).astype(np.int64)
            how = EMIT_WITHIN if self.mode == K.MODE_EMIT else EMIT_FROM_FIRST
            ET, seg_et_lo, seg_et_hi, _ = segment_emit_times(ET, gptr, gid_of_pid[seg_pids], ev_t, np.diff(seg_ptr),
                                                             np.int64(w), how, np.zeros(n_seg, np.bool_))
            cap = seg_et_hi - seg_et_lo
            if self.mode == K.MODE_EMIT_ALL and list(q.partition_by) != list(q.group_by):
                check_emit_rows(q, int(cap.sum()), 8 * (3 + len(main) + len(flo) + 2 * len(mm)), n_seg)
        else:
            cap = np.ones(n_seg, np.int64)
        out_ptr = np.concatenate([[0], np.cumsum(cap)]).astype(np.int64)
        n_out = int(out_ptr[-1])
        Ri, Rf, RM = 1 + len(main), len(flo), 2 * len(mm)
        out_vi = np.zeros((n_out, Ri), dtype)
        out_vf = np.zeros((n_out, Rf), np.float64)
        out_mm = np.empty((n_out, RM), np.int64)
        out_mm[:, 0::2] = K.I64_MAX
        out_mm[:, 1::2] = K.NEG_INF
        A = plan.arrays

        def run(r):  # the segments [a, b), in a thread of their own when there are several
            a, b = r
            err = np.zeros(3, np.int64)
            K.run_scan(self.mode, np.int64(w), np.int64(s), self.int_state, np.int64(done), np.int64(bound),
                       seg_ptr[a:b + 1], seg_pids[a:b], seg_kbase[a:b], out_ptr[a:b + 1], ev_row, seg_et_lo[a:b],
                       seg_et_hi[a:b], ET, ev_t, ev_bind, wi, wf, mmv, mmok, colI, nI, colF, nF,
                       A["occ_pat"], A["occ_start"], A["occ_end"], A["in_ptr"], A["in_tr"], A["tr_src"], plo, phi,
                       A["tr_gptr"], A["tr_guards"], prog_op, prog_arg, constI, constF, A["neg_order"],
                       A["start_neg"], A["end_neg"], comp_i, comp_f, A["mm_occ"], np.int64(self.programs.max_depth),
                       out_vi, out_vf, out_mm, err)
            return err

        return lambda: self._scan_cells(run, mm, main, flo, seg_ptr, seg_pids, row_key, seg_et_lo, out_ptr,
                                        cap, ET, ev_t, out_vi, out_vf, out_mm)

    #: steps of a scan (events x predecessors in reach x value rows each adds) past which a run warns
    #: that it will be long: about 1 ns a step here, so some ten seconds
    WARN_STEPS = 1e10

    def _buckets(self, reach: np.ndarray) -> np.ndarray:
        """Value rows a predecessor adds (docs/algorithms.md section 5): one without a window, the open
        windows under SLIDE, the distinct start times in reach under WITHIN alone (about ``reach``)."""
        if self.mode == K.MODE_SLIDE:
            return np.minimum(reach, -(-self.w // self.s))
        return reach if self.mode in (K.MODE_WITHIN, K.MODE_EMIT) else np.ones_like(reach)

    def _warn_if_long(self, steps: float, reach: float) -> None:
        """Warn once per run when a scan's estimated steps pass :attr:`WARN_STEPS`, with what would help
        (kept here and given by the thread that collects the results: a pool thread's warning would point
        at no line of the caller's)."""
        if steps <= self.WARN_STEPS or self.warned:
            return
        self.warned = True
        if self.mode in (K.MODE_WITHIN, K.MODE_EMIT):
            hint = ("each event keeps a value per distinct start time in its window, so the cost grows with the "
                    "square of a window's events; WITHIN w SLIDE s keeps one value per open window, and runs "
                    "comparisons such as S.price > NEXT(S).price on the trend path in O(log n) per event")
        elif self.mode == K.MODE_SLIDE:
            hint = "a shorter WITHIN, or a larger SLIDE, shortens the predecessor scans"
        else:
            hint = "without WITHIN every earlier event of a partition is a predecessor; a WITHIN window bounds them"
        self.warning = (f"query {' '.join(self.q.text.split())!r} runs on the predecessor scan (docs/algorithms.md "
                        f"section 5): about {steps:.1e} steps for this input (up to {reach:,.0f} events of one "
                        f"partition in reach of an event, about a nanosecond a step), a long run; {hint}")

    def _scan_cells(self, run, mm, main, flo, seg_ptr, seg_pids, row_key, seg_et_lo, out_ptr, cap, ET, ev_t,
                    out_vi, out_vf, out_mm) -> pl.DataFrame:
        """Run the scan (``run`` over ranges of segments, in threads) and read the cells off its output."""
        q, parts, w = self.q, self.parts, self.w
        n_seg, n_out = len(seg_pids), len(out_vi)
        # an event costs a scan of its window here: a thread pays off from a few thousand events, and
        # a segment weighs its events times the events in a window (a dense partition scans more);
        # the first error in segment order is raised
        n_ev = np.diff(seg_ptr)
        if len(n_ev):
            span = ev_t[seg_ptr[1:] - 1] - ev_t[seg_ptr[:-1]] + 1
            reach = np.clip(n_ev * (w / span), 1, n_ev) if w > 0 else n_ev.astype(np.float64)
            self._warn_if_long(float(np.sum(n_ev * reach * self._buckets(reach))), float(reach.max()))
            if w > 0:
                n_ev = n_ev * reach  # floats: n_ev * w may leave int64
        for err in map_threads(run, split_ranges(n_ev, threads.MIN_EVENTS_PER_THREAD // 16)):
            if err[0] == K.ERR_INTERNAL:
                raise internal_error(q, f"the value rows of the scan kernel, sized before its loop, were too few "
                                     f"({int(err[2]):,} rows)", parts.describe(int(err[1])))
            if err[0]:
                raise overflow_error(q, parts.locate(int(err[1]), int(err[2])))
        # cells: (partition, key) -> values
        seg_of_row = np.repeat(np.arange(n_seg), cap)
        row_in_seg = np.arange(n_out) - out_ptr[:-1][seg_of_row]
        if self.mode == K.MODE_SLIDE:
            key = row_key
        elif self.mode in (K.MODE_EMIT, K.MODE_EMIT_ALL):
            key = ET[seg_et_lo[seg_of_row] + row_in_seg]
        else:
            key = np.zeros(n_out, np.int64)
        nz = out_vi[:, 0] != 0
        data = {"__pid": seg_pids[seg_of_row][nz], "__key": key[nz], "__v0": out_vi[nz, 0]}
        for col, j in enumerate(main):
            data[f"__v{1 + j}"] = out_vi[nz, 1 + col]
        for col, j in enumerate(flo):
            data[f"__v{1 + j}"] = out_vf[nz, col]
        cells = pl.DataFrame(data)
        # MIN/MAX decoded here: codes of strings depend on the dictionary of this call
        for m in range(len(mm)):
            for col, r, none in (("__mn", 2 * m, K.I64_MAX), ("__mx", 2 * m + 1, K.NEG_INF)):
                codes = out_mm[nz, r]
                cells = cells.with_columns(mm[m].decode(codes, codes != none).alias(f"{col}{m}"))
        return cells


def _slide_rows(ev_t: np.ndarray, seg_ptr: np.ndarray, w: int, s: int):
    """SLIDE output rows: one per window that holds an event of the segment (not every window from
    the segment's first event to its last: sparse partitions and gaps in time would make that grid
    unbounded). An event at ``t`` lies in windows ``klo..khi``; within a segment both rise with
    ``t``, so the windows not numbered before are those after the previous event's ``khi``, and the
    windows of an event are consecutive rows ending at the row of its ``khi``. Returns, per event in
    segment order, the row of its first window relative to its segment; per row, its window; and
    the rows of each segment."""
    klo = np.maximum(0, (ev_t - w) // s + 1)
    khi = ev_t // s
    first = seg_ptr[:-1]
    prev = np.empty_like(khi)
    prev[1:] = khi[:-1]
    prev[first] = klo[first] - 1  # nothing numbered before a segment's first event
    new = np.maximum(0, khi - np.maximum(klo - 1, prev))  # (an event between windows has none)
    cum = np.cumsum(new)
    ends = cum[seg_ptr[1:] - 1] if len(first) else np.zeros(0, np.int64)
    starts = np.concatenate([[0], ends[:-1]]).astype(np.int64)
    ev_row = cum - 1 - (khi - klo) - np.repeat(starts, np.diff(seg_ptr))
    row_key = np.arange(int(cum[-1]) if len(cum) else 0, dtype=np.int64) + np.repeat(khi - cum + 1, new)
    return ev_row.astype(np.int64), row_key, (ends - starts).astype(np.int64)


def _out_schema(q, prep, numeric):
    from cepvec.runtime.prepare import output_schema

    return output_schema(q, prep.df.schema, prep.time_dtype, numeric)


def _assemble(q, prep: Prepared, plan: ScanPlan, numeric: str, cells: pl.DataFrame, parts,
              repeats: bool) -> pl.DataFrame:
    """Sum the cells of the partitions of each group (min/max for MIN/MAX), then finish the aggregates.

    ``repeats``: a (partition, key) may have cells from several scans (WITHIN: every scan adds to the
    one total of a partition); otherwise the cells are unique.
    """
    if not len(cells):
        return pl.DataFrame(schema=_out_schema(q, prep, numeric))
    by = list(q.group_by) + ["__key"]
    vcols = [c for c in cells.columns if c.startswith("__v")]
    int_cols = [c for c in vcols if cells.schema[c].is_integer()]
    aggs = [pl.col(c).sum() for c in vcols]
    mmcols = [(f"__mn{m}" if q.aggs[j].func == "MIN" else f"__mx{m}", q.aggs[j].label)
              for m, (j, _, _) in enumerate(plan.minmax)]
    for m in range(len(plan.minmax)):
        aggs += [pl.col(f"__mn{m}").min(), pl.col(f"__mx{m}").max()]
    if list(q.partition_by) == list(q.group_by):
        # each partition is its own group: add up the cells of a (partition, key), then order them
        # by the group values (a counting sort, runtime/output.py::in_rank_order)
        if sums_overflow(cells, ["__pid", "__key"], int_cols):
            raise overflow_error(q, "when adding up the partitions of a group")
        if repeats and mmcols:
            cells = cells.group_by(["__pid", "__key"]).agg(aggs)
        pid, key = cells["__pid"].to_numpy(), cells["__key"].to_numpy()
        columns = {c: cells[c].to_numpy() for c in vcols}
        if repeats and not mmcols:  # WITHIN: one key; the int64 sums were checked above
            pid, columns = _sum_by_partition(pid, columns, len(parts))
            key = np.zeros(len(pid), np.int64)
        return in_rank_order(q, prep, plan, numeric, parts.group_frame(), pid, key, columns,
                             {lab: cells[c] for c, lab in mmcols})
    if q.group_by:
        cells = cells.join(parts.group_frame(), on="__pid", how="left")
    if sums_overflow(cells, by, int_cols):
        raise overflow_error(q, "when adding up the partitions of a group")
    g = cells.group_by(by).agg(aggs).sort(by, nulls_last=True)
    keyv = g["__key"].to_numpy()
    group_cols = {gcol: g[gcol] for gcol in q.group_by}
    vals = {c: g[c] for c in vcols}
    out = assemble_output(q, prep, plan, numeric, group_cols, keyv, vals, minmax_ok=True)
    return out.with_columns(g[c].alias(lab) for c, lab in mmcols) if mmcols else out


def _sum_by_partition(pid: np.ndarray, columns: dict, n_parts: int) -> tuple[np.ndarray, dict]:
    """The partitions of ``pid`` (rising) and each column's sum over the rows of each."""
    seen = np.zeros(n_parts, np.bool_)
    seen[pid] = True
    ids = np.flatnonzero(seen).astype(np.int64)
    sums = {}
    for c, v in columns.items():
        tot = np.zeros(n_parts, v.dtype)
        np.add.at(tot, pid, v)
        sums[c] = tot[ids]
    return ids, sums


def run_scan(q, prep: Prepared, *, numeric: str = "int64", batches: list[int] | None = None) -> pl.DataFrame:
    """Evaluate ``q`` on the predecessor-scan path (``batches``: cut points, for tests)."""
    return feed(ScanRun(q, prep.df.schema, w=prep.w, s=prep.s, numeric=numeric), prep, batches)

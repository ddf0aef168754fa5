"""Driver of the GRETA trend path (edge predicates): encode columns, carry state across batches.

:class:`TrendRun` mirrors :class:`cepvec.paths.linear.run.LinearRun`: ``push(df,
times)`` any number of time-ordered batches, then ``finish(prep)`` returns the
result DataFrame. Results do not depend on how the input is cut:

* the last time stamp of every batch is held back until the next batch (ties
  are processed together: same-time events never see each other);
* no window: each partition carries its predecessor structures as rows (one
  per distinct key of each transition, the running sums and the final
  totals), re-indexed together with the next batch's keys;
* WITHIN w SLIDE s: each partition carries its events that are still inside
  an open window and replays them (closed windows are never emitted twice).
  Large batches are processed in pieces so that the per-window Fenwick trees
  stay proportional to the piece, not the batch.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from cepvec.errors import CepvecPlanError, UnsupportedByEngine
from cepvec.runtime.prepare import Prepared
from cepvec.kernels import trend as K
from cepvec.paths.base import batch_end, feed
from cepvec.runtime.output import build_output_frame, internal_error, overflow_error, select_weights
from cepvec.paths.trend.plan import TrendPlan, build
from cepvec.runtime import threads
from cepvec.runtime.threads import map_threads, split_ranges
from cepvec.runtime.partitions import Partitions
from cepvec.runtime.polars_expr import component_weight, predicate_mask, to_polars
from cepvec.runtime.type_codes import type_in

_BIG = K.END  # the bound of the last call
_EVENT_KEYS = ("t", "bind", "neg", "wi", "wf", "key", "kok", "thr", "tok", "pid")


def _gather_events(parts: list[dict], n_parts: int) -> dict:
    """The events of ``parts`` (the carry, whose arrays hold only events, then the new batch, whose
    arrays hold every row of the batch and ``__keep`` the rows that are events) in partition order,
    with ``__order`` and ``__seg`` of :func:`kernels.trend.partition_order`. One gather per array
    from the batch, in threads; the few carried events are written over it."""
    pid_all = np.concatenate([p["pid"] for p in parts]) if len(parts) > 1 else parts[0]["pid"]
    order, seg = K.partition_order(pid_all, n_parts)
    main = parts[-1]
    nc = len(pid_all) - len(main["pid"])  # events of the carry (before the batch's)
    local = order if not nc else np.where(order < nc, nc, order) - nc
    rows = main["__keep"][local] if "__keep" in main else local
    at_carry = np.flatnonzero(order < nc) if nc else None
    from_carry = order[at_carry] if nc else None

    def gather(k):
        if k == "pid":
            return pid_all[order]
        out = np.take(main[k], rows, axis=0)
        if nc:
            out[at_carry] = parts[0][k][from_carry]
        return out

    ev = _map_distinct(gather, {k: (pid_all if k == "pid" else main[k]) for k in _EVENT_KEYS}, len(order))
    ev["__order"], ev["__seg"] = order, seg
    return ev


def _map_distinct(fn, arrays: dict, events: int) -> dict:
    """``{k: fn(k)}`` for every key of ``arrays``, ``fn`` called (in threads) once per distinct array:
    keys holding one array (the thresholds that are the keys) get one result."""
    first: dict = {}
    for k, a in arrays.items():
        first.setdefault(id(a), k)
    todo = list(dict.fromkeys(first.values()))
    done = dict(zip(todo, map_threads(fn, todo, events=events)))
    return {k: done[first[id(a)]] for k, a in arrays.items()}


def _domain(dt) -> str | None:
    """'int' or 'float' for a comparable numeric dtype, None otherwise."""
    if dt == pl.Boolean or dt.is_integer() or dt.is_temporal():
        return "int"
    if dt.is_float() or dt.is_numeric():
        return "float"
    return None


def keyed_transitions(q, plan: TrendPlan, schema: dict) -> list[tuple[int, pl.Expr, pl.Expr, str]]:
    """``(transition, key expr, threshold expr, "int" | "float")`` of every indexed transition;
    raises :class:`UnsupportedByEngine` when a key or threshold is not a number, boolean or time."""
    empty = pl.DataFrame(schema=schema)
    keyed = []
    for k, t in enumerate(plan.transitions):
        if t.index.op is None:
            continue
        kx, tx = to_polars(t.index.key), to_polars(t.index.thr)
        dts = empty.select(kx.alias("k"), tx.alias("t")).schema
        doms = [_domain(dts["k"]), _domain(dts["t"])]
        if None in doms:
            bad = dts["k"] if doms[0] is None else dts["t"]
            raise UnsupportedByEngine(
                f"engine='greta' cannot run query {' '.join(q.text.split())!r}: edge predicate "
                f"{t.index.text} compares values of type {bad}; the trend path indexes numbers, booleans "
                "and times only. Use engine='reference'")
        keyed.append((k, kx, tx, "float" if "float" in doms else "int"))
    return keyed


class TrendStream:
    """Incremental evaluation of one query on the trend path."""

    CHUNK = 1 << 18  # events per kernel call in SLIDE mode (bounds the carried arrays)
    #: SLIDE: a piece holds at least this many events per partition seen so far (a kernel call costs
    #: about a microsecond per partition it visits: many small groups cut in pieces of ``CHUNK``
    #: events were visited once per piece), up to ``MAX_CHUNK`` events
    EVENTS_PER_PARTITION = 16
    MAX_CHUNK = 1 << 22
    EPOCH_MIN = 512  # SLIDE: fewest new events of a partition between two key-space rebuilds
    #: key spaces of at most this many keys place an event's threshold by a binary search (the keys
    #: stay in the L1 cache); larger ones sort the thresholds and merge (kernels/trend/run.py)
    SEARCH_KEYS = 4096
    MAX_CELLS = 1 << 26  # tree cells (keys x open windows x row width) one kernel call may allocate

    def __init__(self, plan: TrendPlan, schema: dict, *, int_state: bool, w: int | None, s: int | None):
        self.plan = plan
        self.q = q = plan.query
        self.int_state = int_state
        self.dtype = np.int64 if int_state else np.float64
        self.mode = K.MODE_SLIDE if q.window.kind == "slide" else K.MODE_NONE
        self.w, self.s = int(w or 0), int(s or 1)
        self.W = (self.w + self.s - 1) // self.s + 1 if self.mode == K.MODE_SLIDE else 1
        # components kept in float64 next to exact counts: sums of non-integer attributes
        comps = plan.components
        self.comp_float = [int_state and c.kind == "sum" and not schema[c.attr].is_integer() for c in comps]
        self.main_comps = [j for j, f in enumerate(self.comp_float) if not f]
        self.float_comps = [j for j, f in enumerate(self.comp_float) if f]
        co = plan.arrays["comp_occ"]  # (components, occurrences)
        n_occ = len(plan.occ_ids)
        self.comp_i = np.ascontiguousarray(co[self.main_comps].reshape(len(self.main_comps), n_occ))
        self.comp_f = np.ascontiguousarray(co[self.float_comps].reshape(len(self.float_comps), n_occ))
        self.keyed = keyed_transitions(q, plan, schema)  # raises UnsupportedByEngine for other types
        # S.x < NEXT(S).x: the threshold of every keyed transition is its key's own expression, so the
        # threshold arrays are the key arrays (encoded, gathered and carried once)
        self.thr_is_key = all(str(kx) == str(tx) for _, kx, tx, _ in self.keyed)
        key_schema = {c: schema[c] for c in q.partition_by}
        self.parts = Partitions(q, key_schema)
        self.next_k = np.zeros(0, np.int64)
        self.carry: dict | None = None  # SLIDE: events still inside an open window
        # MODE_NONE: the events since the last state rows that could be taken, for the last call (see _run)
        self.kept: list[dict] | None = None
        nri, nrf = 1 + len(self.main_comps), len(self.float_comps)
        self.state = {"pid": np.zeros(0, np.int64), "tr": np.zeros(0, np.int64), "key": np.zeros(0, np.int64),
                      "vi": np.zeros((0, nri), self.dtype), "vf": np.zeros((0, nrf), np.float64)}
        self.held: pl.DataFrame | None = None
        # one batch behind: the last batch pushed waits for the next one or for finish, which runs it
        # whole (nothing held back: a held-back last time stamp made finish reload every carried state
        # row, a tenth of a one-batch run without a window)
        self.pending: tuple[pl.DataFrame, np.ndarray] | None = None
        self.outputs: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
        self.last_time: int | None = None
        self.finished = False

    # -------------------------------------------------------------- encoding
    def _encode(self, df: pl.DataFrame) -> dict:
        """Per row of ``df``: the occurrence bits it binds, the negation bits it completes, its
        weights, and the key and threshold of every keyed transition (with validity flags). One
        Polars call for the whole batch, which spreads its expressions over Polars' own threads: the
        two halves side by side in two threads of cepvec's took 42-52 ms against 25-29 ms on 2 cores
        (10^6 events, ``asv_benches/benchmarks/threads.py``'s trend query), as fast on 1 core."""
        n, NT = len(df), len(self.plan.transitions)
        out = {"bind": np.empty(n, np.int64), "neg": np.empty(n, np.int64),
               "wi": np.zeros((n, len(self.main_comps)), self.dtype), "wf": np.zeros((n, len(self.float_comps)), np.float64),
               "key": np.zeros((n, NT), np.int64), "kok": np.zeros((n, NT), np.bool_)}
        out["thr"], out["tok"] = ((out["key"], out["kok"]) if self.thr_is_key else
                                  (np.zeros((n, NT), np.int64), np.zeros((n, NT), np.bool_)))
        rows = {k: v for k, v in out.items() if not (self.thr_is_key and k in ("thr", "tok"))}
        self._encode_rows(df, rows)
        return out

    def _encode_rows(self, df: pl.DataFrame, out: dict) -> None:
        """:meth:`_encode` of ``df`` into the arrays ``out``."""
        plan, q = self.plan, self.q
        bind = pl.lit(0, dtype=pl.Int64)
        for b, o in enumerate(plan.occ_ids):
            m = type_in(q.type_col, q.occs[o].types) & predicate_mask(q.local.get(o, ()))
            bind = bind | pl.when(m).then(pl.lit(1 << b, dtype=pl.Int64)).otherwise(pl.lit(0, dtype=pl.Int64))
        neg = pl.lit(0, dtype=pl.Int64)
        for b, g in enumerate(plan.neg_ids):
            occ = q.occs[q.negations[g].node.occ]
            m = type_in(q.type_col, occ.types) & predicate_mask(q.local.get(occ.id, ()))
            neg = neg | pl.when(m).then(pl.lit(1 << b, dtype=pl.Int64)).otherwise(pl.lit(0, dtype=pl.Int64))
        exprs = [bind.alias("__bind"), neg.alias("__neg")]
        for j, c in enumerate(plan.components):
            wdt = pl.Float64 if (self.comp_float[j] or not self.int_state) else pl.Int64
            x = pl.lit(1, dtype=wdt) if c.kind == "count" else component_weight(c.attr, c.kind, wdt,
                                                                                 df.schema[c.attr].is_float())
            exprs.append(x.alias(f"__w{j}"))
        same = {}  # a threshold that is the key's own expression (S.x < NEXT(S).x) is encoded once
        for k, kx, tx, dom in self.keyed:
            same[k] = str(kx) == str(tx)
            for name, x in (("k", kx),) if same[k] else (("k", kx), ("t", tx)):
                if dom == "float":
                    x = x.cast(pl.Float64)
                    x = pl.when(x.is_nan()).then(None).otherwise(x)
                else:
                    x = x.to_physical().cast(pl.Int64)
                exprs.append(x.alias(f"__{name}{k}"))
        # NaN reads as null in every predicate (as in the reference engine): Polars would order it
        # above every number, so a local predicate such as v > -1 would hold
        enc = select_weights(df.with_columns(pl.col(pl.Float32, pl.Float64).fill_nan(None)), exprs, self.q)
        out["bind"][:] = enc["__bind"].to_numpy()
        out["neg"][:] = enc["__neg"].to_numpy()
        for col, j in enumerate(self.main_comps):
            out["wi"][:, col] = enc[f"__w{j}"].to_numpy()
        for col, j in enumerate(self.float_comps):
            out["wf"][:, col] = enc[f"__w{j}"].to_numpy()
        # (with thr_is_key, out has no threshold arrays: they are the key arrays)
        pairs = [("k", "key", "kok")] + ([("t", "thr", "tok")] if "thr" in out else [])
        for k, _, _, dom in self.keyed:
            for name, val, ok in pairs:
                s = enc[f"__k{k}" if same[k] else f"__{name}{k}"]
                out[ok][:, k] = s.is_not_null().to_numpy()
                v = s.fill_null(0).to_numpy()
                out[val][:, k] = K.float_order_key(v) if dom == "float" else v
        return None

    def clone_partitions(self, dst: pl.DataFrame, src: pl.DataFrame) -> None:
        """New partitions ``dst`` (key frames) start with the state of partitions ``src``: their
        carried rows or window events, and their held-back rows (see cepvec.paths.qualified)."""
        from cepvec.paths.qualified import clone_index, copy_rows

        d = self.parts.ids(dst)
        sp = self.parts.ids(src)
        if len(self.next_k) < len(self.parts):
            nk = np.zeros(len(self.parts), np.int64)
            nk[: len(self.next_k)] = self.next_k
            self.next_k = nk
        self.next_k[d] = self.next_k[sp]

        def dup(rows: dict) -> dict:
            idx, new_pid = clone_index(rows["pid"], sp, d)
            return {k: np.concatenate([v, new_pid if k == "pid" else v[idx]]) for k, v in rows.items()}

        self.state = dup(self.state)
        o = np.argsort(self.state["pid"], kind="stable")
        self.state = {k: np.ascontiguousarray(v[o]) for k, v in self.state.items()}
        if self.carry is not None:
            self.carry = dup(self.carry)
        if self.kept is not None:
            self.kept = [dup(k) for k in self.kept]
        if self.held is not None and len(self.held):
            extra = copy_rows(self.held, src, dst)
            if len(extra):
                self.held = pl.concat([self.held, extra], how="vertical_relaxed").sort("__t", maintain_order=True)
        if self.pending is not None and len(self.pending[0]):  # the batch not run yet
            f = self.pending[0].with_columns(pl.Series("__t", np.asarray(self.pending[1], np.int64)))
            extra = copy_rows(f, src, dst)
            if len(extra):
                f = pl.concat([f, extra], how="vertical_relaxed").sort("__t", maintain_order=True)
                self.pending = (f.drop("__t"), f["__t"].to_numpy())

    # -------------------------------------------------------------- streaming
    def _carry_len(self) -> int:
        return len(self.carry["t"]) if self.carry is not None else 0

    def push(self, df: pl.DataFrame, times: np.ndarray) -> None:
        """Consume the next time-ordered batch (``times`` in the time unit): run the batch before it
        (one batch behind, see ``pending``)."""
        self.last_time = batch_end(times, self.last_time)
        prev, self.pending = self.pending, (df, times)
        if prev is not None:
            self._push(*prev)

    def _push(self, df: pl.DataFrame, times: np.ndarray, final: bool = False) -> None:
        """Run a batch (``final``: the last one, nothing held back).

        SLIDE: a large batch is cut into pieces; while one piece runs in the background
        (``threads.in_background``), the next is encoded and its events (with the carry) put in
        partition order (:meth:`_events_of`). A piece's length depends on the carry and on the
        partitions seen so far (both known on this thread, so the cuts do not depend on timing).
        """
        n = len(df)
        if self.mode != K.MODE_SLIDE or n <= self.CHUNK:
            cut = self._cut(df, times, final)
            if cut is not None:  # (MODE_NONE: the last call keeps no state rows per key)
                self._process(cut[0], _BIG if final and self.mode == K.MODE_NONE else cut[1])
            return
        pending, a = None, 0
        try:
            while a < n:
                per_part = min(self.EVENTS_PER_PARTITION * len(self.parts), self.MAX_CHUNK)
                b = min(n, a + max(self.CHUNK, 2 * self._carry_len(), per_part))
                cut = self._cut(df[a:b], times[a:b], final and b == n)
                a = b
                if cut is None:
                    continue
                new, n_parts = self._encode_new(cut[0]), len(self.parts)
                ev = self._events_of(new, cut[1], n_parts)
                if pending is not None:
                    pending, done = None, pending
                    done.result()
                job = (lambda ev=ev, tmax=cut[1], n_parts=n_parts: self._run(ev, tmax, n_parts))
                if threads.n_threads() > 1:
                    pending = threads.in_background(job)
                else:
                    job()
        finally:
            if pending is not None:
                pending.result()

    def _cut(self, df: pl.DataFrame, times: np.ndarray, final: bool = False) -> tuple[pl.DataFrame, int] | None:
        """The rows of ``df`` (after the rows held back before it) to process now and their bound:
        the rows of the last time stamp are held back (the next batch may continue it), unless
        ``final``."""
        df = df.with_columns(pl.Series("__t", np.asarray(times, np.int64)))
        if self.held is not None:
            df = pl.concat([self.held, df], how="vertical_relaxed", rechunk=False)
            self.held = None
        if not len(df):
            return None
        tv = df["__t"].to_numpy()
        tmax = int(tv[-1])
        if final:
            return df, tmax
        cut = int(np.searchsorted(tv, tmax, side="left"))
        self.held = df[cut:]
        return df[:cut], tmax

    def finish(self) -> None:
        if self.finished:
            return
        self.finished = True
        pending, self.pending = self.pending, None
        if pending is not None:
            self._push(*pending, final=True)
        held, self.held = self.held, None
        self._process(held, _BIG)
        if self.kept is not None:  # kept events no final call above ran (it had no new event)
            self._process(None, _BIG)
        if self.mode == K.MODE_NONE:
            st = self.state
            fin = st["tr"] == len(self.plan.transitions)
            vi = st["vi"][fin]
            nz = vi[:, 0] != 0
            self.outputs.append((st["pid"][fin][nz], np.zeros(int(nz.sum()), np.int64), vi[nz], st["vf"][fin][nz]))

    def _process(self, df: pl.DataFrame | None, limit: int) -> None:
        new = self._encode_new(df)
        if self.kept is not None and limit < _BIG:  # MODE_NONE, state rows not taken: the last call runs these
            if new is not None:
                keep = new["__keep"]
                events = _map_distinct(lambda k: np.take(new[k], keep, axis=0),
                                       {k: new[k] for k in _EVENT_KEYS if k != "pid"}, len(keep))
                self.kept.append({**events, "pid": new["pid"]})
            return
        n_parts = len(self.parts)
        self._run(self._events_of(new, limit, n_parts), limit, n_parts)

    def _encode_new(self, df: pl.DataFrame | None) -> dict | None:
        """The encoded events of ``df`` with their partition ids (None: no event of the pattern)."""
        if df is None or not len(df):
            return None
        enc = self._encode(df)
        keep = (enc["bind"] != 0) | (enc["neg"] != 0)
        if not keep.any():
            return None
        enc["t"] = df["__t"].to_numpy().astype(np.int64)
        keys = df.select(self.q.partition_by) if self.q.partition_by else df  # (no key: only the length)
        enc["pid"] = self.parts.ids(keys.filter(pl.Series(keep)))
        enc["__keep"] = np.flatnonzero(keep)
        return enc

    def _events_of(self, new: dict | None, limit: int, n_parts: int) -> dict | None:
        """The events of the next kernel call up to ``limit``: the carried events, then ``new``
        (ids below ``n_parts``), in partition order (None: no event); and, SLIDE, the carry of
        the call after it, taken from them here (on the caller's thread, while the call before
        runs: no wait for the kernel).

        The carry is the events at or after ``next_k * s``, ``next_k`` the first window the call
        leaves open: ``max(0, (limit - w) // s + 1)`` for every partition of the call (its events'
        times are at most ``limit``, so no window closes later). :meth:`_run` checks the kernel's
        ``next_k`` against it."""
        if self.kept is not None:  # MODE_NONE's last call: the kept events (in time order per partition) first
            kept, self.kept = self.kept, None
            self.carry = kept[0] if len(kept) == 1 else {k: np.concatenate([p[k] for p in kept]) for k in _EVENT_KEYS}
        parts = [p for p in (self.carry, new) if p is not None and len(p["t"])]
        if self.mode == K.MODE_NONE or limit >= _BIG:
            self.carry = None
        if not parts:
            return None
        ev = _gather_events(parts, n_parts)
        if self.mode == K.MODE_SLIDE and limit < _BIG:
            ev["__next_k"] = max(0, (limit - self.w) // self.s + 1)
            keep = np.nonzero(ev["t"] >= ev["__next_k"] * self.s)[0]
            self.carry = _map_distinct(lambda k: np.take(ev[k], keep, axis=0), {k: ev[k] for k in _EVENT_KEYS},
                                       len(keep))
        return ev

    def _run(self, ev: dict | None, limit: int, n_parts: int) -> None:
        """Run the events ``ev`` (:meth:`_events_of`; ids below ``n_parts``) up to ``limit``."""
        plan = self.plan
        if len(self.next_k) < n_parts:
            nk = np.zeros(n_parts, np.int64)
            nk[: len(self.next_k)] = self.next_k
            self.next_k = nk
        if ev is None:
            return
        order = ev["__order"]
        seg_all = ev["__seg"]
        counts = np.diff(seg_all)
        seg_pids = np.nonzero(counts)[0].astype(np.int64)
        seg_ptr = np.append(seg_all[seg_pids], len(order)).astype(np.int64)
        # MODE_NONE: the carried state rows of these partitions, grouped like the segments
        st = self.state
        seen = np.zeros(n_parts, np.bool_)
        seen[seg_pids] = True
        sel = seen[st["pid"]]
        cs = {k: np.ascontiguousarray(v[sel]) for k, v in st.items()}
        cs_ptr = np.searchsorted(cs["pid"], np.append(seg_pids, np.iinfo(np.int64).max)).astype(np.int64)
        cs_ptr[-1] = len(cs["pid"])
        A = plan.arrays

        def run(r):  # the segments [a, b), in a thread of their own when there are several
            a, b = r
            err = np.zeros(3, np.int64)
            kernel = K.run_segments_slide if self.mode == K.MODE_SLIDE else K.run_segments_none
            res = kernel(
                self.w, self.s, self.W, self.int_state, np.int64(limit),
                seg_ptr[a:b + 1], seg_pids[a:b], self.next_k,
                ev["t"], ev["bind"], ev["neg"], ev["wi"], ev["wf"], ev["key"], ev["kok"], ev["thr"], ev["tok"],
                A["occ_start"], A["occ_end"], A["in_ptr"], A["in_tr"], A["out_ptr"], A["out_tr"],
                A["tr_src"], A["tr_kind"], A["tr_reset"], A["start_reset"], A["end_reset"], self.comp_i,
                self.comp_f, cs_ptr[a:b + 1], cs["tr"], cs["key"], cs["vi"], cs["vf"], np.int64(self.EPOCH_MIN),
                np.int64(self.SEARCH_KEYS), np.int64(self.MAX_CELLS), err)
            return res, err

        sizes = np.diff(seg_ptr)
        ranges = split_ranges(sizes, per_thread=threads.RANGES_PER_THREAD)
        results = map_threads(run, ranges, costs=[sizes[a:b].sum() for a, b in ranges])
        for _, err in results:  # the first error in segment order, as one call would stop there
            if err[0]:
                self._raise(err)
        for r, _ in results:  # per thread, in segment order (not concatenated: result_cells does it once)
            if len(r[0]):
                self.outputs.append(tuple(r[:4]))
        if self.mode == K.MODE_NONE and limit < _BIG and not all(
                np.isfinite(r[7]).all() and np.isfinite(r[8]).all() for r, _ in results):
            # a state row is inf or NaN: the kernel turns node sums back into values per key by subtraction,
            # where inf - inf is NaN (a +inf value, or a float64 count past the float range). The state rows
            # are not taken; these events run again, with every later batch, in the last call
            self.kept = [{k: ev[k] for k in _EVENT_KEYS}]
            return
        if self.mode == K.MODE_NONE:
            rest = {k: v[~sel] for k, v in st.items()}
            merged = {k: np.concatenate([rest[k]] + [r[4 + j] for r, _ in results])
                      for j, k in enumerate(("pid", "tr", "key", "vi", "vf"))}
            o = K.partition_order(merged["pid"], max(n_parts, 1))[0]  # stable: a counting sort
            self.state = {k: np.ascontiguousarray(v[o]) for k, v in merged.items()}
        elif "__next_k" in ev and (self.next_k[seg_pids] != ev["__next_k"]).any():
            p = int(seg_pids[np.flatnonzero(self.next_k[seg_pids] != ev["__next_k"])[0]])
            raise internal_error(self.q, f"the kernel left window {int(self.next_k[p])} open, not the first open "
                                 f"window {int(ev['__next_k'])} the carry was taken for", self.parts.describe(p))

    def _raise(self, err: np.ndarray) -> None:
        if err[0] == K.ERR_MEMORY:
            raise CepvecPlanError(
                f"the trend path would hold {int(err[2]):,} window cells for partition "
                f"{self.parts.describe(int(err[1]))} of query {' '.join(self.q.text.split())!r}: every event is "
                f"kept once per open window ({self.W - 1} windows of WITHIN/SLIDE) and a window holds too many "
                "events; use a coarser SLIDE or a shorter WITHIN")
        if err[0] == K.ERR_INTERNAL:
            raise internal_error(self.q, f"a buffer of the trend kernel, sized before its loop, was too small "
                                 f"({int(err[2]):,} rows)", self.parts.describe(int(err[1])))
        raise overflow_error(self.q, self.parts.locate(int(err[1]), int(err[2])))

    # -------------------------------------------------------------- results
    def group_frame(self) -> pl.DataFrame:
        return self.parts.group_frame()

    def cell_chunks(self) -> tuple[list[tuple], list[str], list[str]]:
        """The cells as the kernel wrote them: chunks of ``(pid, key, vi, vf)`` and the names of the
        columns of ``vi`` (the count, then the exact components) and ``vf`` (float sums)
        (``runtime/output.py::chunks_in_rank_order``)."""
        return ([tuple(o) for o in self.outputs], ["__v0"] + [f"__v{1 + j}" for j in self.main_comps],
                [f"__v{1 + j}" for j in self.float_comps])

    def result_cells(self) -> pl.DataFrame:
        """One row per (partition, key) with the count as ``__v0`` and component j as ``__v{1+j}``."""
        nri, nrf = 1 + len(self.main_comps), len(self.float_comps)
        if self.outputs:
            pid = np.concatenate([o[0] for o in self.outputs])
            key = np.concatenate([o[1] for o in self.outputs])
            vi = np.concatenate([o[2] for o in self.outputs])
            vf = np.concatenate([o[3] for o in self.outputs])
        else:
            pid = key = np.zeros(0, np.int64)
            vi = np.zeros((0, nri), self.dtype)
            vf = np.zeros((0, nrf), np.float64)
        data = {"__pid": pid, "__key": key, "__v0": vi[:, 0]}
        for col, j in enumerate(self.main_comps):
            data[f"__v{1 + j}"] = vi[:, 1 + col]
        for col, j in enumerate(self.float_comps):
            data[f"__v{1 + j}"] = vf[:, col]
        return pl.DataFrame(data).select(["__pid", "__key"] + [f"__v{j}" for j in range(1 + len(self.plan.components))])


class TrendRun:
    """One query over one time-ordered stream on the trend path (same interface as ``LinearRun``)."""

    def __init__(self, q, schema: dict, *, w: int | None, s: int | None, numeric: str = "int64"):
        self.q = q
        self.plan = build(q)
        self.numeric = numeric
        self.stream = TrendStream(self.plan, schema, int_state=numeric == "int64", w=w, s=s)

    def push(self, df: pl.DataFrame, times: np.ndarray) -> None:
        self.stream.push(df, times)

    def clone_partitions(self, dst: pl.DataFrame, src: pl.DataFrame) -> None:
        self.stream.clone_partitions(dst, src)

    def finish(self, prep: Prepared) -> pl.DataFrame:
        self.stream.finish()
        return build_output_frame(self.q, prep, self.plan, [self.stream], self.numeric, [])


def run_trend(q, prep: Prepared, *, numeric: str = "int64", batches: list[int] | None = None) -> pl.DataFrame:
    """Evaluate ``q`` on the trend path (``batches``: cut points, for tests)."""
    return feed(TrendRun(q, prep.df.schema, w=prep.w, s=prep.s, numeric=numeric), prep, batches)

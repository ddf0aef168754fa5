"""Driver of the match engine: candidates, partitions, the match graph, then matches in batches.

:class:`MatchGraph` builds the shared match graph of a prepared input and
yields its matches in batches; :func:`long_frame` / :func:`wide_frame` turn
them into the frames of ``cepvec.matches`` (long: one row per event of a
match; wide: one row per match). ``cepvec.paths.match.runs.match_batches``
drives it (or the run-based executor) and writes the frames. Matches come
ordered by group (as ``cepvec.run`` orders its rows), then by partition,
then by the time of their last event, then in the order of the depth-first
walk (``cepvec.kernels.match.emit_matches``).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import polars as pl

from cepvec.kernels import match as K
from cepvec.kernels.trend import partition_order
from cepvec.paths.match.plan import MODES, STRATEGIES, build
from cepvec.paths.scan.plan import Programs
from cepvec.plan.ir import Query
from cepvec.runtime.partitions import Partitions, sorted_unique
from cepvec.runtime.polars_expr import predicate_mask
from cepvec.runtime.type_codes import type_in
from cepvec.runtime.prepare import Prepared

BATCH_ROWS = 1 << 16


def previous_time(times: np.ndarray) -> np.ndarray:
    """For sorted ``times``, the latest time stamp before each one (``NEG_INF`` for the first)."""
    gprev = np.full(len(times), K.NEG_INF, np.int64)
    if len(times):
        new = np.flatnonzero(times[1:] != times[:-1]) + 1  # first index of each later time stamp
        run = np.zeros(len(times), np.int64)
        run[new] = new
        run = np.maximum.accumulate(run)  # first index of each event's time stamp
        has = run > 0
        gprev[has] = times[run[has] - 1]
    return gprev


class MatchGraph:
    """Phase 1 over a whole prepared input: the shared match graph (``cepvec.kernels.match``)."""

    def __init__(self, q: Query, prep: Prepared, positive: bool = True):
        """``positive=False``: only the negative sub-patterns are built (their ``LS_N`` tables), for
        the run-based engine (:mod:`cepvec.paths.match.runs`), which finds the positive matches itself."""
        self.q = q
        plan = build(q)
        df = prep.df.with_columns(pl.col(pl.Float32, pl.Float64).fill_nan(None))  # NaN reads as null
        programs = Programs(q, plan, dict(prep.df.schema))
        n_occ = len(q.occs)
        cand = df.select([(type_in(q.type_col, o.types) & predicate_mask(q.local.get(o.id, ()))).alias(str(o.id))
                          for o in q.occs]).to_numpy().astype(np.bool_)
        # SASE+ v[1] / v[v.LEN] alone: who may start / end a match
        start_ok, end_ok = (
            df.with_columns([predicate_mask(preds.get(o.id, ())).alias(f"__ok{o.id}") for o in q.occs])
            .select([f"__ok{o.id}" for o in q.occs]).to_numpy().astype(np.bool_).reshape(len(df), n_occ)
            if preds else np.ones((len(df), n_occ), np.bool_) for preds in (q.start_local, q.end_local))
        times = prep.times.to_numpy().astype(np.int64)
        # strict contiguity: the previous time stamp of the whole input
        gprev = previous_time(times)
        # partitions, ordered by group (nulls last) as cepvec.run orders its rows
        parts = Partitions(q, {c: prep.df.schema[c] for c in q.partition_by})
        # (the keys as given: NaN and null are different keys, docs/semantics.md 2.3)
        pid = parts.ids(prep.df) if len(df) else np.zeros(0, np.int64)
        self.pid = pid  # partition of each row of prep.df (non-overlapping output)
        rank = np.zeros(len(parts), np.int64)
        if q.group_by and len(parts.keys):
            gf = parts.group_frame().sort(list(q.group_by), nulls_last=True, maintain_order=True)
            rank[gf["__pid"].to_numpy()] = np.arange(len(gf))
        else:
            rank = np.arange(len(parts), dtype=np.int64)
        order, seg_all = partition_order(np.ascontiguousarray(rank[pid]), len(parts))
        seg_ptr = sorted_unique(seg_all).astype(np.int64) if len(df) else np.zeros(1, np.int64)
        self.order = order
        self.seg_ptr = seg_ptr
        self.t = np.ascontiguousarray(times[order])
        cand = np.ascontiguousarray(cand[order].reshape(len(order), n_occ))
        start_ok = np.ascontiguousarray(start_ok[order])
        end_ok = np.ascontiguousarray(end_ok[order])
        # only the columns the edge predicates read are gathered into partition order
        used = list(dict.fromkeys([a for a, _ in programs.icols] + programs.fcols))
        colI, nI, colF, nF, constI, constF = programs.encode(df.select(used)[order] if used else df.select(used))
        prog_op, prog_arg, plo, phi = programs.arrays()
        if not positive:
            # the run-based engine reads these (the graph engine lets them go after phase 1); no node
            # of the main pattern: only the negations' matches are built
            self.df, self.plan, self.programs, self.times_sorted = df, plan, programs, times
            self.cand, self.start_ok, self.end_ok = cand, start_ok, end_ok
            self.edge_programs = (plo, phi, prog_op, prog_arg, constI, constF, colI, nI, colF, nF)
            cand = cand.copy()
            cand[:, [o.id for o in q.occs if not o.negated]] = False
        A = plan.arrays
        n = len(order)
        G = len(q.negations)
        self.n_occ = n_occ
        self.ls = np.empty(n * n_occ, np.int64)
        self.eptr = np.zeros(n * n_occ + 1, np.int64)
        nxt = np.full(n * n_occ, K.UNSET, np.int64)
        self.neg_t = np.zeros((max(G, 1), max(n, 1) if G else 1), np.int64)
        self.neg_pm = np.zeros((max(G, 1), max(n, 1) if G else 1), np.int64)
        self.neg_seg = np.zeros((max(G, 1), len(seg_ptr)), np.int64)
        self.mode = MODES[q.window.kind]
        self.w = np.int64(prep.w or 0)
        self.edges = K.build_match_graph(
            STRATEGIES[q.strategy], self.mode, self.w, seg_ptr, self.t, np.ascontiguousarray(gprev[order]), cand, start_ok,
            A["occ_pat"], A["occ_start"], A["occ_end"], np.int64(G + 1), A["in_ptr"], A["in_tr"], A["tr_src"],
            A["tr_gptr"], A["tr_guards"], plo, phi, prog_op, prog_arg, constI, constF, colI, nI, colF, nF,
            np.int64(programs.max_depth), self.ls, self.eptr, np.zeros(max(n, 16), np.int64), nxt,
            self.neg_t, self.neg_pm, self.neg_seg)
        end = q.template.end
        ends = np.arange(n, dtype=np.int64) * n_occ + end
        keep = cand[:, end] & end_ok[:, end] & (self.ls[ends] != K.NEG_INF) if n else np.zeros(0, np.bool_)
        self.ends = np.ascontiguousarray(ends[keep])
        self.end_seg = np.ascontiguousarray(
            (np.searchsorted(seg_ptr, np.nonzero(keep)[0], side="right") - 1).astype(np.int64))
        self.node_start = np.zeros((n, n_occ), np.bool_)
        self.node_start[:, q.template.start] = start_ok[:, q.template.start]
        self.node_start = self.node_start.reshape(-1)
        start_neg, end_neg = int(A["start_neg"]), int(A["end_neg"])
        self.negs = (np.int64(start_neg), np.int64(end_neg))

    def batches(self, limit: int | None, batch_rows: int = BATCH_ROWS) -> Iterator[tuple[np.ndarray, ...]]:
        """``(match id, position, row of prep.df, occurrence)`` arrays, whole matches per batch."""
        n = len(self.t)
        cap = max(1, batch_rows)
        state = np.zeros(4, np.int64)
        st_node = np.zeros(n + 1, np.int64)  # a path never has more nodes than the input has events
        st_cur = np.zeros(n + 1, np.int64)
        lim = np.int64(-1 if limit is None else limit)
        while True:
            out_match = np.empty(cap, np.int64)
            out_pos = np.empty(cap, np.int64)
            out_node = np.empty(cap, np.int64)
            rows = K.emit_matches(self.mode, self.w, self.ends, self.end_seg, self.t, np.int64(self.n_occ),
                                  self.node_start, self.ls, self.eptr, self.edges, self.negs[0], self.negs[1],
                                  self.neg_t, self.neg_pm, self.neg_seg, lim, state, st_node, st_cur,
                                  out_match, out_pos, out_node)
            if rows:
                node = out_node[:rows]
                yield out_match[:rows], out_pos[:rows], self.order[node // self.n_occ], node % self.n_occ
                continue
            if state[0] >= len(self.ends) or (limit is not None and state[3] >= limit):
                return
            cap *= 2  # the next match is longer than the buffer: a frame never splits a match


def next_time(times: np.ndarray) -> np.ndarray:
    """For sorted ``times``, the earliest time stamp after each one (``POS_INF`` for the last)."""
    if not len(times):
        return np.zeros(0, np.int64)
    prev = previous_time(-times[::-1])[::-1]  # the latest stamp before each one, on the reversed axis
    out = np.full(len(times), K.POS_INF, np.int64)
    has = prev != K.NEG_INF
    out[has] = -prev[has]
    return out


def long_frame(q: Query, prep: Prepared, match_id, pos, rows, occ) -> pl.DataFrame:
    """The long format of ``cepvec.matches``: one row per event of a match."""
    df = prep.df
    ev = df[rows] if len(rows) else df.head(0)
    names = pl.Series("variable", [o.name for o in q.occs], dtype=pl.String)
    cols: dict[str, pl.Series] = {"match": pl.Series("match", match_id, dtype=pl.Int64)}
    for lab, g in zip(q.group_labels, q.group_by):
        cols[lab] = ev[g].rename(lab)
    cols["position"] = pl.Series("position", pos, dtype=pl.Int64)
    cols["variable"] = names.gather(occ)
    left = pl.DataFrame(cols)
    clash = [c for c in ev.columns if c in left.columns]
    if clash:
        ev = ev.rename({c: f"event_{c}" for c in clash})
    return pl.concat([left, ev], how="horizontal")


def wide_frame(q: Query, long: pl.DataFrame) -> pl.DataFrame:
    """One row per match: ``match``, the group labels, then ``variable`` and every event column as lists."""
    keys = ["match", *q.group_labels]
    lists = [c for c in long.columns if c not in keys and c != "position"]
    return long.group_by(keys, maintain_order=True).agg([pl.col(c) for c in lists])


def empty_frame(q: Query, prep: Prepared, format: str = "long") -> pl.DataFrame:  # noqa: A002
    """The frame with no match, with the schema of :func:`match_batches`."""
    z = np.zeros(0, np.int64)
    long = long_frame(q, prep, z, z, z, z)
    return long if format == "long" else wide_frame(q, long)

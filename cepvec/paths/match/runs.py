"""The run-based match engine: queries with predicates over the whole run (``cepvec.kernels.runs``).

A query with run predicates (``q.run_preds``: ``avg(a[..i-1].price)``, ``a.LEN``,
variables that are never adjacent) is matched run by run, each run with its
own computation state, instead of on the shared match graph
(``docs/matching.md``). The negative sub-patterns are still built by the
graph kernel (their ``LS_N`` tables, :class:`MatchGraph` with
``positive=False``); the edge predicates are the graph engine's programs, the
run predicates a second program set whose *previous* row is the run's state
(:class:`RunPrograms`).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import polars as pl

from cepvec.errors import UnsupportedByEngine
from cepvec.kernels import runs as K
from cepvec.kernels import scan as KS
from cepvec.paths.match.plan import STRATEGIES
from cepvec.paths.match.run import BATCH_ROWS, MatchGraph, empty_frame, long_frame, next_time, wide_frame
from cepvec.paths.scan.plan import Programs, ScanPlan, _kind
from cepvec.plan.ir import Query
from cepvec.runtime.overlap import non_overlapping
from cepvec.runtime.prepare import Prepared

SLOT_KINDS = {"first": K.SL_FIRST, "last": K.SL_LAST, "len": K.SL_LEN, "count": K.SL_COUNT, "sum": K.SL_SUM,
              "sumf": K.SL_SUM, "min": K.SL_MIN, "max": K.SL_MAX, "avg": K.SL_AVG}


def slot_dtype(sl, schema: dict):
    """The column type of a run-state slot (``docs/semantics.md`` 4.6)."""
    if sl.kind in ("len", "count"):
        return pl.Int64
    if sl.kind in ("sumf", "avg"):
        return pl.Float64
    dt = schema.get(sl.attr)
    if sl.kind == "sum":
        return pl.Int64 if dt is not None and (dt.is_integer() or dt == pl.Boolean) else pl.Float64
    return dt


class RunPrograms(Programs):
    """The run predicates of every transition (and of the match's end, the last entry) as postfix
    programs whose previous row is the run state (``q.run_slots``) and next row the event."""

    def __init__(self, q: Query, plan: ScanPlan, schema: dict):
        ext = dict(schema)
        self.slot_names = [sl.name for sl in q.run_slots]
        for sl in q.run_slots:
            if sl.attr is not None and _kind(schema.get(sl.attr)) is None:
                self.q = q
                self.fail(f"over {sl.attr}", f"reads {sl.attr} of type {schema.get(sl.attr)}")
            if sl.kind in ("sum", "sumf", "avg") and _kind(schema[sl.attr]) not in ("i", "f"):
                self.q = q
                self.fail(f"{sl.kind}({sl.attr})", f"sums {sl.attr} of type {schema[sl.attr]}, not a number")
            ext[sl.name] = slot_dtype(sl, schema)
        self.q = q
        self.schema = ext
        self.icols, self.fcols, self.strings = [], [], set()
        self.consts_i, self.consts_f, self.ops, self.args, self.str_lits = [], [], [], [], []
        self.plo, self.phi, self.max_depth = [], [], 1
        self.conditioned = sorted({p.at[1] for p in q.run_preds if isinstance(p.at, tuple) and p.at[0] == "NOT"})
        self.final = len(plan.transitions)  # then one program per conditioned negation
        for at in ([(src, dst) for src, dst, _g, _p in plan.transitions] + [None]
                   + [("NOT", g) for g in self.conditioned]):
            self.plo.append(len(self.ops))
            preds = [p for p in q.run_preds if p.at == at]
            self._depth = 0
            for k, p in enumerate(preds):
                self.compile_bool(p.expr, p.text)
                if k:
                    self.emit(KS.OP_AND, 0, -1)
            self.phi.append(len(self.ops))
        # the slots: their own column, the event column they read
        cols = {}
        for sl in q.run_slots:
            kind = _kind(ext[sl.name])
            cols[sl.name] = (self.col(sl.name, kind), kind == "f")
        self.slots = []
        for sl in q.run_slots:
            col, isf = cols[sl.name]
            if sl.kind == "avg":
                src = cols[self._slot(q, "sumf", sl)][0]
                aux = cols[self._slot(q, "count", sl)][0]
                srcf = True
            elif sl.attr is None:
                src, srcf, aux = -1, False, -1
            else:
                k = _kind(schema[sl.attr])
                src, srcf, aux = self.col(sl.attr, k), k == "f", -1
            self.slots.append((SLOT_KINDS[sl.kind], sl.occ, src, srcf, isf, col, aux))

    @staticmethod
    def _slot(q: Query, kind: str, sl) -> str:
        return next(s.name for s in q.run_slots if (s.kind, s.occ, s.attr) == (kind, sl.occ, sl.attr))

    def fail(self, text: str, why: str):
        raise UnsupportedByEngine(
            f"engine='match' cannot run query {' '.join(self.q.text.split())!r}: run predicate {text} {why}. "
            "Use engine='reference'")

    def encode_rows(self, df: pl.DataFrame, n: int, extra: int):
        """Encoded columns of the ``n`` events ``df`` followed by ``extra`` rows for run states."""
        names = [a for a, _ in self.icols] + self.fcols
        events = [a for a in dict.fromkeys(names) if a not in self.slot_names]
        base = df.select(events) if events else pl.DataFrame({"__n": np.zeros(n, np.int8)})
        frame = base.with_columns([pl.lit(None, dtype=self.schema[s]).alias(s) for s in self.slot_names]).select(
            events + self.slot_names)
        colI, nI, colF, nF, constI, constF = self.encode(frame)

        def grow(a, fill):  # the state rows after the events (written by the kernel)
            out = np.full((a.shape[0] + extra, a.shape[1]), fill, a.dtype)
            out[:a.shape[0]] = a
            return out

        return grow(colI, 0), grow(nI, True), grow(colF, 0.0), grow(nF, True), constI, constF

    def slot_arrays(self):
        a = np.array(self.slots, dtype=np.int64).reshape(len(self.slots), 7)
        return tuple(np.ascontiguousarray(a[:, j]) for j in range(7))


class RunMatches:
    """The matches of a query with run predicates over a prepared input, in batches."""

    def __init__(self, q: Query, prep: Prepared):
        g = MatchGraph(q, prep, positive=False)
        self.g = g
        self.pid = g.pid
        self.q = q
        plan = g.plan
        rp = RunPrograms(q, plan, dict(prep.df.schema))
        n = len(g.order)
        self.n = n
        used = [a for a in dict.fromkeys([a for a, _ in rp.icols] + rp.fcols) if a not in rp.slot_names]
        self.rcols = rp.encode_rows(g.df.select(used)[g.order] if used else g.df.select(used), n, n + 1)
        rop, rarg, rplo, rphi = rp.arrays()
        self.rprog = (rplo, rphi, rop, rarg)
        self.slots = rp.slot_arrays()
        sl_dstf = self.slots[4].astype(np.bool_)
        self.slots = self.slots[:3] + (self.slots[3].astype(np.bool_), sl_dstf) + self.slots[5:]
        self.max_depth = np.int64(max(rp.max_depth, g.programs.max_depth))
        # negations with conditions on the match: checked per match by the kernel, not by LS_N
        cond = rp.conditioned
        negs = [q.negations[c] for c in cond]
        self.cn = (np.int64(rp.final), np.array([n.node.occ for n in negs], np.int64),
                   np.array([{"start": 0, "middle": 1, "end": 2}[n.placement] for n in negs], np.int64),
                   np.array([-1 if n.prev is None else n.prev for n in negs], np.int64),
                   np.array([-1 if n.next is None else n.next for n in negs], np.int64))
        A = plan.arrays
        kept = [[int(x) for x in A["tr_guards"][A["tr_gptr"][k]:A["tr_gptr"][k + 1]] if int(x) not in cond]
                for k in range(len(plan.transitions))]
        self.guards = (np.array(np.concatenate([[0], np.cumsum([len(x) for x in kept])]), np.int64),
                       np.array([x for k in kept for x in k], np.int64))
        self.negs = tuple(np.int64(-1) if int(x) in cond else x for x in g.negs)
        main = len(plan.transitions) - len(q.template.transitions)  # the main pattern's transitions come last
        out = [[k for k in range(main, len(plan.transitions)) if plan.transitions[k][0] == o]
               for o in range(len(q.occs))]
        self.out_ptr = np.array(np.concatenate([[0], np.cumsum([len(x) for x in out])]), np.int64)
        self.out_tr = np.array([k for x in out for k in x], np.int64)
        self.tr_dst = np.array([t[1] for t in plan.transitions], np.int64)
        self.gnext = np.ascontiguousarray(next_time(g.times_sorted)[g.order]) if n else np.zeros(0, np.int64)

    def batches(self, limit: int | None, batch_rows: int = BATCH_ROWS) -> Iterator[tuple[np.ndarray, ...]]:
        """``(match id, position, row of prep.df, occurrence)`` arrays, whole matches per batch."""
        g, q, n = self.g, self.q, self.n
        cap = max(1, batch_rows)
        state = np.zeros(5, np.int64)
        stacks = [np.zeros(n + 1, np.int64) for _ in range(5)]
        lim = np.int64(-1 if limit is None else limit)
        rcolI, rnI, rcolF, rnF, rconstI, rconstF = self.rcols
        plo, phi, prog_op, prog_arg, constI, constF, colI, nI, colF, nF = g.edge_programs
        while True:
            out = [np.empty(cap, np.int64) for _ in range(3)]
            rows = K.run_matches(
                STRATEGIES[q.strategy], g.mode, g.w, g.seg_ptr, g.t, self.gnext, g.cand, g.start_ok, g.end_ok,
                np.int64(g.n_occ), np.int64(q.template.start), np.int64(q.template.end), self.out_ptr, self.out_tr,
                self.tr_dst, *self.guards, plo, phi, prog_op, prog_arg, constI, constF, colI, nI,
                colF, nF, *self.rprog, rconstI, rconstF, rcolI, rnI, rcolF, rnF, *self.slots, self.max_depth,
                g.neg_t, g.neg_pm, g.neg_seg, *self.negs, *self.cn, lim, state, *stacks, *out)
            if rows:
                node = out[2][:rows]
                yield out[0][:rows], out[1][:rows], g.order[node // g.n_occ], node % g.n_occ
                continue
            if state[0] >= len(g.seg_ptr) - 1 or (limit is not None and state[4] >= limit):
                return
            cap *= 2  # the next match is longer than the buffer: a frame never splits a match


def matcher(q: Query, prep: Prepared) -> MatchGraph | RunMatches:
    """The engine that lists ``q``'s matches: the shared graph, or runs when predicates read the run."""
    return RunMatches(q, prep) if q.run_preds else MatchGraph(q, prep)


def non_overlapping_batches(q: Query, prep: Prepared, graph, limit: int | None, batch_rows: int):
    """The batches of ``graph`` reduced to SASE+'s non-overlapping matches (:mod:`cepvec.runtime.overlap`).

    The choice needs every match of a partition, so the matches are collected first (memory of all
    of them, unlike ``overlap="all"``), chosen, renumbered and cut into batches again.
    """
    got = list(graph.batches(None, batch_rows))
    if not got:
        return
    mid, pos, rows, occ = (np.concatenate(x) for x in zip(*got))
    starts = np.flatnonzero(np.r_[True, mid[1:] != mid[:-1]])
    ends = np.r_[starts[1:], len(mid)]
    times = prep.times.to_numpy().astype(np.int64)
    pid = graph.pid if q.strategy != "strict-contiguity" else np.zeros(len(prep.df), np.int64)
    keys = [(tuple(rows[a:b].tolist()), tuple(occ[a:b].tolist())) for a, b in zip(starts, ends)]
    keep = non_overlapping(pid[rows[starts]].tolist(), times[rows[starts]].tolist(),
                           times[rows[ends - 1]].tolist(), keys)[:limit]
    cut, acc = [0], 0
    for k, j in enumerate(keep):
        size = int(ends[j] - starts[j])
        if acc + size > batch_rows and k > cut[-1]:
            cut.append(k)
            acc = 0
        acc += size
    cut.append(len(keep))
    for a, b in zip(cut, cut[1:]):
        sel = np.concatenate([np.arange(starts[j], ends[j]) for j in keep[a:b]])
        new = np.repeat(np.arange(a, b, dtype=np.int64), [ends[j] - starts[j] for j in keep[a:b]])
        yield new, pos[sel], rows[sel], occ[sel]


def match_batches(q: Query, prep: Prepared, *, limit: int | None = None, format: str = "long",  # noqa: A002
                  batch_rows: int = BATCH_ROWS, overlap: str = "all") -> Iterator[pl.DataFrame]:
    """The matches of ``q`` over ``prep`` as frames of whole matches, at least one frame (the schema).

    ``overlap="none"``: SASE+'s non-overlapping matches only (:func:`non_overlapping_batches`).
    """
    graph = matcher(q, prep)
    empty = True
    source = (graph.batches(limit, batch_rows) if overlap == "all"
              else non_overlapping_batches(q, prep, graph, limit, batch_rows))
    for match_id, pos, rows, occ in source:
        long = long_frame(q, prep, match_id, pos, rows, occ)
        empty = False
        yield long if format == "long" else wide_frame(q, long)
    if empty:  # one frame at least: it carries the schema
        yield empty_frame(q, prep, format)

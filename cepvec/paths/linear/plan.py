"""Physical plan of the linear-map engine (``cepvec.kernels.linear``).

The state vector has one *slot* per quantity the future needs, each slot a
block of ``1 + n_components`` rows (a count and one row per linear aggregate
component):

* ``H``: the constant 1 (start events add from it);
* ``NOSTART``: 1 until a negated-start event occurs in the window (0 after);
* ``S[o]``: partial matches whose last event is bound to occurrence ``o``
  (only for occurrences that have a successor);
* ``V[o, guards]``: the same, restricted to the ones no negation in
  ``guards`` has invalidated yet (for guarded SEQ transitions);
* ``F``: complete matches.

An event binding occurrence ``o`` adds, for every source slot ``s`` (its
template predecessors, or ``H``/``NOSTART`` when ``o`` starts the pattern)
and destination slot ``d`` (``S[o]``, ``V[o, *]``, ``F`` when ``o`` ends it):
``d.count += s.count`` and ``d.agg_j += s.agg_j + w_j(e) * s.count`` when
``o`` takes part in component ``j``. That is GRETA Theorem 9.1 summed per
state instead of per event.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from cepvec.runtime.order_keys import orderable
from cepvec.plan.ir import Query, Seq, Neg, Leaf, run_reason

MAX_OCCS = 64


@dataclass(frozen=True)
class Component:
    """A linear aggregate component: per match, the sum of a weight over its events."""

    kind: str  # "count" (events bound), "sum" (attribute values), "nonnull" (non-null values),
    # "min" / "max" (extreme attribute value: runs on the order semiring, see engine_linear)
    occs: tuple[int, ...]
    attr: str | None


@dataclass
class LinearPlan:
    query: Query
    components: tuple[Component, ...]
    n_slots: int
    D: int
    trip_ptr: np.ndarray
    trip_dst: np.ndarray
    trip_src: np.ndarray
    trip_wk: np.ndarray
    neg_ptr: np.ndarray
    neg_rows: np.ndarray
    v0: np.ndarray  # int64; cast per run
    out_rows: np.ndarray
    occ_ids: tuple[int, ...]  # positive occurrence ids in bit order
    neg_ids: tuple[int, ...]  # negation ids in bit order
    start_neg: int | None
    end_neg: int | None
    slot_names: list[str] = field(default_factory=list)

    def describe(self) -> str:
        return (f"linear-map state of {self.D} rows ({self.n_slots} slots: "
                f"{', '.join(self.slot_names)}; {len(self.components)} aggregate components)")


def unsupported_reason(q: Query, schema: dict | None = None) -> str | None:
    """Why the linear-map engine cannot run ``q`` (None when it can); ``schema``: the
    input's column types when known (MIN/MAX need an orderable attribute)."""
    if q.strategy != "skip-till-any-match":
        return f"event selection strategy {q.strategy} (only skip-till-any-match)"
    if q.position_texts:
        return f"a predicate on the first or last event of the match ({', '.join(q.position_texts)})"
    if q.run_preds:
        return run_reason(q)
    if q.edges:
        preds = sorted({p.text for ps in q.edges.values() for p in ps})
        return f"edge predicates ({'; '.join(preds)})"
    if q.qualified_equivalences:
        return "equivalence on the attribute of one variable only (" + ", ".join(
            e.text for e in q.qualified_equivalences) + ")"
    if schema is not None:
        for a in q.aggs:
            if a.func in ("MIN", "MAX") and a.attr in schema and not orderable(schema[a.attr]):
                return f"{a.label} over a {schema[a.attr]} attribute (MIN/MAX of numbers, booleans and times only)"
    for n in q.negations:
        if not isinstance(n.node, Leaf):
            return "a negative sub-pattern with more than one event"
        if n.placement == "end" and q.window.kind == "within":
            return ("a negated end with WITHIN alone (its scope, first(match) + w, lies after the match; "
                    "use SLIDE or EMIT CHANGES windows)")
    positive = [o for o in q.occs if not o.negated]
    if len(positive) > MAX_OCCS or len(q.negations) > MAX_OCCS:
        return f"more than {MAX_OCCS} pattern variables or negations"
    return None


def plan_components(q: Query) -> tuple[list[Component], list[tuple[int, ...]]]:
    """Linear aggregate components of ``q`` and, per aggregate, the components it reads.

    COUNT(v) is one ``count`` component; SUM and AVG are a ``sum`` and a ``nonnull``
    component (the non-null count tells an all-null SUM, which is null, from 0);
    MIN and MAX are one ``min`` / ``max`` component. Shared by the linear-map and
    the trend engines.
    """
    comps: list[Component] = []
    comp_of_agg: list[tuple[int, ...]] = []
    for a in q.aggs:
        wanted: list[Component] = []
        if a.star:
            pass
        elif a.func == "COUNT":
            wanted = [Component("count", tuple(sorted(a.occs)), None)]
        elif a.func in ("MIN", "MAX"):
            wanted = [Component(a.func.lower(), tuple(sorted(a.occs)), a.attr)]
        else:  # SUM, AVG
            wanted = [Component("sum", tuple(sorted(a.occs)), a.attr),
                      Component("nonnull", tuple(sorted(a.occs)), a.attr)]
        idx: list[int] = []
        for c in wanted:
            if c not in comps:
                comps.append(c)
            idx.append(comps.index(c))
        comp_of_agg.append(tuple(idx))
    return comps, comp_of_agg


def top_negations(q: Query) -> tuple[int | None, int | None]:
    """Ids of the negated start and negated end of the whole pattern (None when absent)."""
    start_neg = end_neg = None
    if isinstance(q.root, Seq):
        if isinstance(q.root.items[0], Neg):
            start_neg = q.root.items[0].id
        if isinstance(q.root.items[-1], Neg):
            end_neg = q.root.items[-1].id
    return start_neg, end_neg


def build(q: Query) -> LinearPlan:
    """Compile ``q`` into triplet programs for :func:`cepvec.kernels.linear.run_segments`."""
    reason = unsupported_reason(q)
    if reason is not None:
        raise ValueError(reason)
    tmpl = q.template
    comps, comp_of_agg = plan_components(q)
    nc = len(comps)
    R = 1 + nc

    start_neg, end_neg = top_negations(q)

    slots: list[str] = []

    def new_slot(name: str) -> int:
        slots.append(name)
        return len(slots) - 1

    H = new_slot("H")
    NOSTART = new_slot("NOSTART") if start_neg is not None else None
    has_succ = {t.src for t in tmpl.transitions}
    S = {o: new_slot(f"S[{q.occs[o].name}#{o}]") for o in tmpl.states if o in has_succ}
    V: dict[tuple[int, tuple[int, ...]], int] = {}
    for t in tmpl.transitions:
        if t.guards and (t.src, t.guards) not in V:
            V[(t.src, t.guards)] = new_slot(f"V[{q.occs[t.src].name}#{t.src} not {t.guards}]")
    F = new_slot("F")

    def row(slot: int, j: int = -1) -> int:
        return slot * R + (j + 1)

    occ_ids = tuple(o for o in tmpl.states)
    trips: list[list[tuple[int, int, int]]] = []
    for o in occ_ids:
        srcs: list[int] = []
        if o == tmpl.start:
            srcs.append(NOSTART if NOSTART is not None else H)
        for t in tmpl.transitions:
            if t.dst == o:
                srcs.append(V[(t.src, t.guards)] if t.guards else S[t.src])
        dsts: list[int] = []
        if o in S:
            dsts.append(S[o])
        dsts += [slot for (src, _g), slot in V.items() if src == o]
        if o == tmpl.end:
            dsts.append(F)
        tr: list[tuple[int, int, int]] = []
        for s in srcs:
            for d in dsts:
                tr.append((row(d), row(s), -1))
                for j, c in enumerate(comps):
                    if s not in (H, NOSTART):
                        tr.append((row(d, j), row(s, j), -1))
                    if o in c.occs:
                        tr.append((row(d, j), row(s), j))
        trips.append(tr)
    trip_ptr = np.zeros(len(occ_ids) + 1, np.int64)
    for i, tr in enumerate(trips):
        trip_ptr[i + 1] = trip_ptr[i] + len(tr)
    flat = [x for tr in trips for x in tr]
    trip_dst = np.array([x[0] for x in flat], np.int64)
    trip_src = np.array([x[1] for x in flat], np.int64)
    trip_wk = np.array([x[2] for x in flat], np.int64)

    neg_ids = tuple(n.id for n in q.negations)
    resets: list[list[int]] = []
    for g in neg_ids:
        rows: list[int] = []
        if g == start_neg:
            rows.append(row(NOSTART))
        if g == end_neg:
            rows += [row(F, j) for j in range(-1, nc)]
        for (src, guards), slot in V.items():
            if g in guards:
                rows += [row(slot, j) for j in range(-1, nc)]
        resets.append(rows)
    neg_ptr = np.zeros(len(neg_ids) + 1, np.int64)
    for i, r in enumerate(resets):
        neg_ptr[i + 1] = neg_ptr[i] + len(r)
    neg_rows = np.array([x for r in resets for x in r], np.int64)

    D = len(slots) * R
    v0 = np.zeros(D, np.int64)
    v0[row(H)] = 1
    if NOSTART is not None:
        v0[row(NOSTART)] = 1
    out_rows = np.array([row(F, j) for j in range(-1, nc)], np.int64)
    plan = LinearPlan(q, tuple(comps), len(slots), D, trip_ptr, trip_dst, trip_src, trip_wk,
                      neg_ptr, neg_rows, v0, out_rows, occ_ids, neg_ids, start_neg, end_neg, slots)
    plan.comp_of_agg = comp_of_agg  # type: ignore[attr-defined]
    return plan

"""Physical plan of the GRETA trend path (``cepvec.kernels.trend``).

The path for patterns whose transitions carry edge predicates
(``S.price > NEXT(S).price``): per-event counts and linear aggregates
(GRETA Theorems 4.3 and 9.1) with one predecessor structure per template
transition:

* no edge predicate: a running sum of the source events' rows;
* one comparison ``f(prev) op g(next)`` (``op`` in ``< <= > >= =``, ``f`` an
  expression over the predecessor's attributes only, ``g`` over the
  successor's only, e.g. ``S.price * 1.05 < NEXT(S).price``): a Fenwick tree
  over the ranks of ``f`` (or one cell per distinct value for ``=``).

Anything else is refused with a reason (:func:`unsupported_reason`), and the
engine registry sends the query to the predecessor scan (``plan_scan``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from cepvec.lang import ast as A
from cepvec.lang.render import render_plan_expr
from cepvec.kernels import trend as K
from cepvec.paths.linear.plan import Component, plan_components, top_negations
from cepvec.plan.ir import Leaf, Query, iter_refs, run_reason

MAX_OCCS = 62  # occurrences and negations are bits of an int64
OPS = {"<": K.K_LT, "<=": K.K_LE, ">": K.K_GT, ">=": K.K_GE, "=": K.K_EQ}
_MIRROR = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "=": "="}


@dataclass(frozen=True)
class EdgeIndex:
    """How a transition finds the predecessors of an event."""

    op: str | None  # None: no edge predicate (running sum); else the comparison key(prev) op thr(next)
    key: A.Expr | None = None  # expression of the predecessor event (refs: $prev)
    thr: A.Expr | None = None  # expression of the successor event (refs: $next)
    text: str = ""

    @property
    def kind(self) -> int:
        return K.K_SUM if self.op is None else OPS[self.op]

    def describe(self) -> str:
        if self.op is None:
            return "running sum (no edge predicate)"
        what = (f"one cell per distinct value of {render_plan_expr(self.key)} (point lookup, O(1))"
                if self.op == "=" else
                f"Fenwick tree over the ranks of {render_plan_expr(self.key)}, prefix sums for "
                f"{render_plan_expr(self.key)} {self.op} {render_plan_expr(self.thr)} (O(log n))")
        return f"{what} [{self.text}]"


@dataclass
class TrendTransition:
    src: int  # occurrence id
    dst: int
    index: EdgeIndex
    guards: tuple[int, ...]


@dataclass
class TrendPlan:
    query: Query
    occ_ids: tuple[int, ...]  # positive occurrence ids in bit order
    neg_ids: tuple[int, ...]  # negation ids in bit order
    transitions: list[TrendTransition]
    components: tuple[Component, ...]
    comp_of_agg: list[tuple[int, ...]]
    start_neg: int | None
    end_neg: int | None
    arrays: dict = field(default_factory=dict)

    def describe(self) -> str:
        return "; ".join(f"{self.query.occs[t.src].name} -> {self.query.occs[t.dst].name}: {t.index.describe()}"
                         for t in self.transitions)


def _side_ok(e) -> bool:
    """An arithmetic expression (attributes, constants, + - * / %, unary minus)."""
    if isinstance(e, (A.Num, A.Ref)):
        return True
    if isinstance(e, A.Bin):
        return _side_ok(e.left) and _side_ok(e.right)
    if isinstance(e, A.Unary):
        return e.op == "-" and _side_ok(e.operand)
    return False


def classify_edge(preds) -> tuple[EdgeIndex | None, str | None]:
    """The predecessor structure for a transition's edge predicates, or the reason there is none."""
    if not preds:
        return EdgeIndex(None), None
    if len(preds) > 1:
        return None, ("several edge predicates on one transition (" + " AND ".join(p.text for p in preds)
                      + "); the trend path indexes one comparison per transition")
    p = preds[0]
    e = p.expr
    if not isinstance(e, A.Cmp) or e.op not in _MIRROR:
        op = e.op if isinstance(e, A.Cmp) else type(e).__name__
        return None, (f"edge predicate {p.text} is not a comparison with < <= > >= = (found {op}); the trend "
                      "path indexes f(prev) op g(next)")
    lv = {r.var for r in iter_refs(e.left)}
    rv = {r.var for r in iter_refs(e.right)}
    if not (_side_ok(e.left) and _side_ok(e.right)):
        return None, f"edge predicate {p.text} uses a construct other than arithmetic on attributes"
    if lv == {"$prev"} and rv == {"$next"}:
        return EdgeIndex(e.op, e.left, e.right, p.text), None
    if lv == {"$next"} and rv == {"$prev"}:
        return EdgeIndex(_MIRROR[e.op], e.right, e.left, p.text), None
    return None, (f"edge predicate {p.text} mixes attributes of both events on one side; the trend path "
                  "indexes f(prev) op g(next) with each side over one event")


def unsupported_reason(q: Query) -> str | None:
    """Why the trend path cannot run ``q`` (None when it can)."""
    if q.strategy != "skip-till-any-match":
        return f"event selection strategy {q.strategy} (only skip-till-any-match)"
    if q.position_texts:
        return f"a predicate on the first or last event of the match ({', '.join(q.position_texts)})"
    if q.run_preds:
        return run_reason(q)
    if q.window.kind == "within":
        return ("WITHIN without SLIDE together with edge predicates: a trend counts only when last - first < w, "
                "so an event's contribution depends on the time of each trend's first event and per-start state "
                "would be needed")
    if q.window.kind == "emit":
        return ("EMIT CHANGES together with edge predicates: each output time t needs the trends inside "
                "(t - w, t], so an event's contribution depends on each trend's first event time and per-start "
                "state would be needed")
    if q.qualified_equivalences:
        return "equivalence on the attribute of one variable only (" + ", ".join(
            e.text for e in q.qualified_equivalences) + ")"
    for a in q.aggs:
        if a.func in ("MIN", "MAX"):
            return f"{a.label} (MIN/MAX are not linear aggregates)"
    for n in q.negations:
        if not isinstance(n.node, Leaf):
            return "a negative sub-pattern with more than one event"
    positive = [o for o in q.occs if not o.negated]
    if len(positive) > MAX_OCCS or len(q.negations) > MAX_OCCS:
        return f"more than {MAX_OCCS} pattern variables or negations"
    trans = {(t.src, t.dst) for t in q.template.transitions}
    for key, preds in q.edges.items():
        if key not in trans:
            return f"edge predicate {preds[0].text} inside a negative sub-pattern"
        _, why = classify_edge(preds)
        if why is not None:
            return why
    return None


def transition_paths(q: Query) -> dict[tuple[int, int], str]:
    """(src, dst) -> how the trend path finds predecessors on that transition (for explain)."""
    out = {}
    for t in q.template.transitions:
        idx, why = classify_edge(q.edges.get((t.src, t.dst), ()))
        out[(t.src, t.dst)] = idx.describe() if idx is not None else f"not supported: {why}"
    return out


def build(q: Query) -> TrendPlan:
    """Compile ``q`` into the arrays of :func:`cepvec.kernels.trend.run._run_segments`."""
    reason = unsupported_reason(q)
    if reason is not None:
        raise ValueError(reason)
    tmpl = q.template
    comps, comp_of_agg = plan_components(q)
    start_neg, end_neg = top_negations(q)

    occ_ids = tuple(tmpl.states)
    bit = {o: i for i, o in enumerate(occ_ids)}
    neg_ids = tuple(n.id for n in q.negations)
    nbit = {g: i for i, g in enumerate(neg_ids)}
    transitions = [TrendTransition(t.src, t.dst, classify_edge(q.edges.get((t.src, t.dst), ()))[0], t.guards)
                   for t in tmpl.transitions]
    n_occ = len(occ_ids)
    NT = len(transitions)
    a = lambda x, dt=np.int64: np.ascontiguousarray(np.array(x, dtype=dt))  # noqa: E731
    in_lists = [[k for k, t in enumerate(transitions) if bit[t.dst] == b] for b in range(n_occ)]
    out_lists = [[k for k, t in enumerate(transitions) if bit[t.src] == b] for b in range(n_occ)]
    arrays = {
        "occ_start": a([o == tmpl.start for o in occ_ids], np.bool_),
        "occ_end": a([o == tmpl.end for o in occ_ids], np.bool_),
        "in_ptr": a(np.concatenate([[0], np.cumsum([len(x) for x in in_lists])])),
        "in_tr": a([k for x in in_lists for k in x]),
        "out_ptr": a(np.concatenate([[0], np.cumsum([len(x) for x in out_lists])])),
        "out_tr": a([k for x in out_lists for k in x]),
        "tr_src": a([bit[t.src] for t in transitions]),
        "tr_kind": a([t.index.kind for t in transitions]),
        "tr_reset": a([sum(1 << nbit[g] for g in t.guards) for t in transitions]),
        "start_reset": np.int64(1 << nbit[start_neg]) if start_neg is not None else np.int64(0),
        "end_reset": np.int64(1 << nbit[end_neg]) if end_neg is not None else np.int64(0),
    }
    arrays["comp_occ"] = a([[o in c.occs for o in occ_ids] for c in comps], np.bool_).reshape(len(comps), n_occ)
    assert NT == len(arrays["tr_kind"])
    return TrendPlan(q, occ_ids, neg_ids, transitions, tuple(comps), comp_of_agg, start_neg, end_neg, arrays)

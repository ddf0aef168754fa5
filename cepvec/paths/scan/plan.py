"""Physical plan of the GRETA predecessor-scan path (``cepvec.kernels.scan``).

The path for queries that the linear maps and the Fenwick trend path refuse:
any edge predicate (several comparisons, AND/OR/NOT, ``!=``, arithmetic over
both events, strings), every window form (none, WITHIN, WITHIN EMIT CHANGES,
EMIT CHANGES, SLIDE), negative sub-patterns of several events and nested
negation, MIN/MAX. Each event scans its predecessors in its partition:
O(n) per event, O(n^2) per partition (GRETA's own complexity, without the
trend construction of the reference engine).

The plan has two parts:

* the templates: the main pattern and every negative sub-pattern, as tables
  over all occurrences (positive and negated), each transition with its
  guarding negations and its edge-predicate program (:func:`build`);
* the edge-predicate programs, compiled from the predicate AST to the postfix
  bytecode of :func:`cepvec.kernels.scan._eval_block` once the column types
  are known (:class:`Programs`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from cepvec.lang import ast as A
from cepvec.errors import CepvecTypeError, UnsupportedByEngine
from cepvec.kernels import scan as K
from cepvec.paths.linear.plan import Component, plan_components, top_negations
from cepvec.plan.ir import Query, iter_refs, run_reason

MAX_OCCS = 62  # occurrences are bits of an int64
_CMP = {"=": K.CMP_EQ, "!=": K.CMP_NE, "<": K.CMP_LT, "<=": K.CMP_LE, ">": K.CMP_GT, ">=": K.CMP_GE}
_ARITH_I = {"+": K.OP_ADD_I, "-": K.OP_SUB_I, "*": K.OP_MUL_I, "%": K.OP_MOD_I}
_ARITH_F = {"+": K.OP_ADD_F, "-": K.OP_SUB_F, "*": K.OP_MUL_F, "/": K.OP_DIV_F, "%": K.OP_MOD_F}


def unsupported_reason(q: Query) -> str | None:
    """Why the predecessor-scan path cannot run ``q`` (None when it can)."""
    if q.strategy != "skip-till-any-match":
        return f"event selection strategy {q.strategy} (only skip-till-any-match)"
    if q.position_texts:
        return f"a predicate on the first or last event of the match ({', '.join(q.position_texts)})"
    if q.run_preds:
        return run_reason(q)
    if q.qualified_equivalences:
        return "equivalence on the attribute of one variable only (" + ", ".join(
            e.text for e in q.qualified_equivalences) + ")"
    if len(q.occs) > MAX_OCCS:
        return f"more than {MAX_OCCS} pattern variables (negated ones included)"
    return None


def describe_transition(preds) -> str:
    if not preds:
        return "predecessor scan, O(n) per event (no edge predicate)"
    return ("predecessor scan, O(n) per event: the edge predicate is interpreted over each event's block of "
            "predecessors [" + " AND ".join(p.text for p in preds) + "]")


def plan_aggregates(q: Query):
    """Linear components (COUNT(v), SUM, AVG), and the MIN/MAX aggregates.

    Returns ``(components, comp_of_agg, minmax)``: ``comp_of_agg[j]`` the components aggregate j
    reads (empty for COUNT(*) and MIN/MAX); ``minmax`` a list of ``(agg index, occs, attr)``.
    """
    every, every_of_agg = plan_components(q)
    keep = [j for j, c in enumerate(every) if c.kind not in ("min", "max")]  # MIN/MAX: not linear here
    new_index = {j: i for i, j in enumerate(keep)}
    comps = [every[j] for j in keep]
    comp_of_agg: list[tuple[int, ...]] = []
    minmax: list[tuple[int, tuple[int, ...], str]] = []
    for j, (a, idx) in enumerate(zip(q.aggs, every_of_agg)):
        if a.func in ("MIN", "MAX"):
            minmax.append((j, tuple(sorted(a.occs)), a.attr))
            comp_of_agg.append(())
        else:
            comp_of_agg.append(tuple(new_index[i] for i in idx))
    return comps, comp_of_agg, minmax


@dataclass
class ScanPlan:
    query: Query
    components: tuple[Component, ...]
    comp_of_agg: list[tuple[int, ...]]
    minmax: list[tuple[int, tuple[int, ...], str]]
    transitions: list[tuple[int, int, tuple[int, ...], tuple]]  # (src, dst, guards, edge preds)
    arrays: dict

    def describe(self) -> str:
        occ = self.query.occs
        return "; ".join(f"{occ[s].name} -> {occ[d].name}: {describe_transition(p)}"
                         for s, d, _, p in self.transitions)


def _depth(q: Query, g: int) -> int:
    d = 0
    while q.negations[g].parent is not None:
        g = q.negations[g].parent
        d += 1
    return d


def build(q: Query) -> ScanPlan:
    """The template tables of ``q`` for :func:`cepvec.kernels.scan.run_scan`."""
    reason = unsupported_reason(q)
    if reason is not None:
        raise ValueError(reason)
    comps, comp_of_agg, minmax = plan_aggregates(q)
    G = len(q.negations)
    n_occ = len(q.occs)
    occ_pat = np.array([o.neg if o.negated else G for o in q.occs], np.int64)
    occ_start = np.zeros(n_occ, np.bool_)
    occ_end = np.zeros(n_occ, np.bool_)
    trans = []
    for tmpl in [n.template for n in q.negations] + [q.template]:
        occ_start[tmpl.start] = True
        occ_end[tmpl.end] = True
        for t in tmpl.transitions:
            trans.append((t.src, t.dst, t.guards, q.edges.get((t.src, t.dst), ())))
    in_lists = [[k for k, t in enumerate(trans) if t[1] == o] for o in range(n_occ)]
    gl = [list(t[2]) for t in trans]
    start_neg, end_neg = top_negations(q)
    order = sorted(range(G), key=lambda g: (-_depth(q, g), g))
    a = lambda x, dt=np.int64: np.ascontiguousarray(np.array(x, dtype=dt))  # noqa: E731
    arrays = {
        "occ_pat": occ_pat, "occ_start": occ_start, "occ_end": occ_end,
        "in_ptr": a(np.concatenate([[0], np.cumsum([len(x) for x in in_lists])])),
        "in_tr": a([k for x in in_lists for k in x]),
        "tr_src": a([t[0] for t in trans]),
        "tr_gptr": a(np.concatenate([[0], np.cumsum([len(x) for x in gl])])),
        "tr_guards": a([g for x in gl for g in x]),
        "neg_order": a(order),
        "start_neg": np.int64(-1 if start_neg is None else start_neg),
        "end_neg": np.int64(-1 if end_neg is None else end_neg),
        "comp_occ": a([[o in c.occs for o in range(n_occ)] for c in comps], np.bool_).reshape(len(comps), n_occ),
        "mm_occ": a([[o in occs for o in range(n_occ)] for _, occs, _ in minmax], np.bool_).reshape(
            len(minmax), n_occ),
    }
    return ScanPlan(q, tuple(comps), comp_of_agg, minmax, trans, arrays)


# --------------------------------------------------------------------------- edge predicate programs
def _kind(dt) -> str | None:
    """Static type of a column in a predicate: 'i' int/bool, 'f' float, 's' string, 't' time."""
    if dt == pl.Boolean or dt.is_integer():
        return "i"
    if dt.is_float() or dt.is_decimal():
        return "f"
    if dt in (pl.String, pl.Categorical) or isinstance(dt, (pl.Categorical, pl.Enum)):
        return "s"
    if dt.is_temporal():
        return "t"
    return None


class Programs:
    """Edge predicates of every transition compiled to postfix bytecode over encoded columns.

    Integer, boolean and time columns are int64, float columns float64 (NaN as null, as the
    reference engine reads them), strings codes of one sorted dictionary of every string the
    predicates compare (so code order is string order). Nulls are masks.
    """

    def __init__(self, q: Query, plan: ScanPlan, schema: dict):
        self.q = q
        self.schema = schema
        self.icols: list[tuple[str, str]] = []  # (attr, kind) of int-coded columns
        self.fcols: list[str] = []
        self.strings: set[str] = set()
        self.consts_i: list[int] = []
        self.consts_f: list[float] = []
        self.ops: list[int] = []
        self.args: list[int] = []
        self.str_lits: list[tuple[int, str]] = []  # (index into consts_i, literal) fixed up by the dictionary
        self.plo: list[int] = []
        self.phi: list[int] = []
        self.max_depth = 1
        for _src, _dst, _g, preds in plan.transitions:
            self.plo.append(len(self.ops))
            if preds:
                self._depth = 0
                for k, p in enumerate(preds):
                    self.compile_bool(p.expr, p.text)
                    if k:
                        self.emit(K.OP_AND, 0, -1)
            self.phi.append(len(self.ops))

    def fail(self, text: str, why: str):
        raise UnsupportedByEngine(
            f"engine='greta' cannot run query {' '.join(self.q.text.split())!r}: edge predicate {text} {why}. "
            "Use engine='reference'")

    def emit(self, op: int, arg: int, delta: int) -> None:
        self.ops.append(op)
        self.args.append(arg)
        self._depth += delta
        self.max_depth = max(self.max_depth, self._depth)

    def col(self, attr: str, kind: str) -> int:
        if kind == "f":
            if attr not in self.fcols:
                self.fcols.append(attr)
            return self.fcols.index(attr)
        if (attr, kind) not in self.icols:
            self.icols.append((attr, kind))
        return self.icols.index((attr, kind))

    def compile_value(self, e, text: str) -> str:
        """Push the value of ``e``; returns its static kind ('i', 'f', 's', 't' or 'b' for conditions)."""
        if isinstance(e, A.Num):
            v = e.value
            if isinstance(v, bool) or isinstance(v, int):
                self.consts_i.append(int(v))
                self.emit(K.OP_CONST_I, len(self.consts_i) - 1, 1)
                return "i"
            self.consts_f.append(float(v))
            self.emit(K.OP_CONST_F, len(self.consts_f) - 1, 1)
            return "f"
        if isinstance(e, A.Str):
            self.consts_i.append(0)
            self.str_lits.append((len(self.consts_i) - 1, e.value))
            self.strings.add(e.value)
            self.emit(K.OP_CONST_I, len(self.consts_i) - 1, 1)
            return "s"
        if isinstance(e, A.Ref):
            dt = self.schema.get(e.attr)
            kind = _kind(dt) if dt is not None else None
            if kind is None:
                self.fail(text, f"reads {e.attr} of type {dt}")
            c = self.col(e.attr, kind)
            prev = e.var == "$prev"
            if kind == "f":
                self.emit(K.OP_PUSH_PF if prev else K.OP_PUSH_NF, c, 1)
            else:
                self.emit(K.OP_PUSH_PI if prev else K.OP_PUSH_NI, c, 1)
            return kind
        if isinstance(e, A.Unary):
            if e.op == "NOTNULL":
                self.compile_value(e.operand, text)
                self.emit(K.OP_NOTNULL, 0, 0)
                return "b"
            if e.op == "NOT":
                self.compile_bool(e.operand, text)
                self.emit(K.OP_NOT, 0, 0)
                return "b"
            k = self.compile_value(e.operand, text)
            if k not in ("i", "f"):
                self.fail(text, "negates a value that is not a number")
            self.emit(K.OP_NEG_I if k == "i" else K.OP_NEG_F, 0, 0)
            return k
        if isinstance(e, A.Bin):
            ka = self.compile_value(e.left, text)
            kb = self.compile_value(e.right, text)
            if ka not in ("i", "f") or kb not in ("i", "f"):
                self.fail(text, f"uses {e.op} on a value that is not a number")
            if ka == "i" and kb == "i" and e.op != "/":
                self.emit(_ARITH_I[e.op], 0, -1)
                return "i"
            if kb == "i":
                self.emit(K.OP_TOF, 0, 0)
            if ka == "i":
                self.emit(K.OP_TOF2, 0, 0)
            self.emit(_ARITH_F[e.op], 0, -1)
            return "f"
        if isinstance(e, (A.Cmp, A.BoolOp)):
            self.compile_bool(e, text)
            return "b"
        self.fail(text, f"uses {type(e).__name__}")
        return ""

    def compile_bool(self, e, text: str) -> None:
        if isinstance(e, A.Cmp):
            ka = self.compile_value(e.left, text)
            kb = self.compile_value(e.right, text)
            num = ("i", "f", "b")
            if ka in num and kb in num:
                if ka == "f" or kb == "f":
                    if kb != "f":
                        self.emit(K.OP_TOF, 0, 0)
                    if ka != "f":
                        self.emit(K.OP_TOF2, 0, 0)
                    self.emit(K.OP_CMP_F, _CMP[e.op], -1)
                else:
                    self.emit(K.OP_CMP_I, _CMP[e.op], -1)
                return
            if ka == kb and ka in ("s", "t"):
                self.emit(K.OP_CMP_I, _CMP[e.op], -1)
                return
            self.fail(text, f"compares values of different types ({ka} and {kb})")
        elif isinstance(e, A.BoolOp):
            for k, x in enumerate(e.items):
                self.compile_bool(x, text)
                if k:
                    self.emit(K.OP_AND if e.op == "AND" else K.OP_OR, 0, -1)
        else:
            k = self.compile_value(e, text)
            if k not in ("b", "i"):
                self.fail(text, "uses a value that is not a condition")

    # ---------------------------------------------------------------- columns
    def encode(self, df: pl.DataFrame, order: np.ndarray | None = None):
        """Encoded columns of ``df`` (its rows ``order`` when given) and the constant pools (string
        literals as dictionary codes)."""
        rows = (lambda a: a) if order is None else (lambda a: a[order])  # noqa: E731
        strings = set(self.strings)
        for attr, kind in self.icols:
            if kind == "s":
                strings.update(v for v in df[attr].cast(pl.String).unique().to_list() if v is not None)
        dictionary = sorted(strings)
        code = {v: i for i, v in enumerate(dictionary)}
        n = len(df) if order is None else len(order)
        colI = np.zeros((n, len(self.icols)), np.int64)
        nI = np.zeros((n, len(self.icols)), np.bool_)
        for j, (attr, kind) in enumerate(self.icols):
            s = df[attr]
            nI[:, j] = rows(s.is_null().to_numpy())
            if kind == "s":
                d = pl.DataFrame({"v": dictionary, "c": np.arange(len(dictionary), dtype=np.int64)},
                                 schema={"v": pl.String, "c": pl.Int64})
                v = pl.DataFrame({"v": s.cast(pl.String)}).join(d, on="v", how="left", maintain_order="left")["c"]
                colI[:, j] = rows(v.fill_null(0).to_numpy())
            else:
                try:
                    colI[:, j] = rows(s.to_physical().cast(pl.Int64).fill_null(0).to_numpy())
                except pl.exceptions.InvalidOperationError as err:
                    raise CepvecTypeError(
                        f"column '{attr}' ({s.dtype}) holds a value above the int64 range "
                        f"({s.max()}), which the predicate's int64 arithmetic cannot hold; cast the column to "
                        "Int64 (values below 2**63) or Float64 (approximate)") from err
        colF = np.zeros((n, len(self.fcols)), np.float64)
        nF = np.zeros((n, len(self.fcols)), np.bool_)
        for j, attr in enumerate(self.fcols):
            v = rows(df[attr].cast(pl.Float64).to_numpy())
            bad = np.isnan(v)
            nF[:, j] = bad
            colF[:, j] = np.where(bad, 0.0, v)
        consts_i = list(self.consts_i)
        for k, lit in self.str_lits:
            consts_i[k] = code[lit]
        return colI, nI, colF, nF, np.array(consts_i + [0], np.int64), np.array(self.consts_f + [0.0], np.float64)

    def arrays(self):
        a = lambda x, dt=np.int64: np.ascontiguousarray(np.array(x, dtype=dt))  # noqa: E731
        return a(self.ops), a(self.args), a(self.plo), a(self.phi)


def refs_attrs(q: Query) -> list[str]:
    return sorted({r.attr for ps in q.edges.values() for p in ps for r in iter_refs(p.expr)})

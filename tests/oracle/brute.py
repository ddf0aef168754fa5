"""A second, independent brute-force oracle for cepvec (tests only).

It shares no matching code with :mod:`cepvec.paths.reference.evaluate`. It reads only the
compiled :class:`cepvec.plan.ir.Query` (pattern tree, predicates, window,
aggregates) and decides everything else itself, straight from docs/semantics.md:

* per partition (equal values of ``q.partition_by``; None equals None), every
  subset of the partition's events with strictly increasing times, and every
  assignment of positive occurrences to those events, is tested by a direct
  recursive matcher on the pattern tree;
* a negation ``NOT N`` between two positive parts rejects the split when some
  match of N (found by the same brute force, with its own nested negations)
  lies strictly inside the gap;
* windows, negated start / end and aggregates are applied to the list of
  matches exactly as docs/semantics.md words them.

Only skip-till-any-match, integer time columns and inputs of a handful of
events (≤ 9) are supported: it is exponential on purpose.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

from cepvec.lang import ast as A
from cepvec.plan.ir import Kleene, Leaf, Neg, Query, Seq

_UNIT_NS = {"ns": 1, "us": 10**3, "ms": 10**6, "s": 10**9,
            "min": 60 * 10**9, "h": 3600 * 10**9, "d": 86400 * 10**9}

MAX_EVENTS_PER_PARTITION = 12


# --------------------------------------------------------------------------- expressions
def _ev(expr, row, prev, nxt):
    """Three-valued evaluation: ``None`` is SQL NULL / unknown."""
    if isinstance(expr, (A.Num, A.Str)):
        return expr.value
    if isinstance(expr, A.Ref):
        if expr.var == "$prev":
            val = prev[expr.attr]
        elif expr.var == "$next":
            val = nxt[expr.attr]
        else:
            val = row[expr.attr]
        if isinstance(val, float) and math.isnan(val):
            return None
        return val
    if isinstance(expr, A.Unary):
        val = _ev(expr.operand, row, prev, nxt)
        if val is None:
            return None
        if expr.op == "NOT":
            return not val
        return -val
    if isinstance(expr, A.Bin):
        a = _ev(expr.left, row, prev, nxt)
        b = _ev(expr.right, row, prev, nxt)
        if a is None or b is None:
            return None
        if expr.op == "+":
            return a + b
        if expr.op == "-":
            return a - b
        if expr.op == "*":
            return a * b
        if expr.op in ("/", "%") and b == 0:
            return None
        if expr.op == "/":
            return a / b
        if expr.op == "%":
            return math.fmod(a, b) if isinstance(a, float) or isinstance(b, float) else int(math.fmod(a, b))
        raise ValueError(f"unknown operator {expr.op}")
    if isinstance(expr, A.Cmp):
        a = _ev(expr.left, row, prev, nxt)
        b = _ev(expr.right, row, prev, nxt)
        if a is None or b is None:
            return None
        op = expr.op
        if op == "=":
            return a == b
        if op == "!=":
            return a != b
        if op == "<":
            return a < b
        if op == "<=":
            return a <= b
        if op == ">":
            return a > b
        if op == ">=":
            return a >= b
        raise ValueError(f"unknown comparison {op}")
    if isinstance(expr, A.BoolOp):
        vals = [_ev(x, row, prev, nxt) for x in expr.items]
        if expr.op == "AND":
            if False in vals:
                return False
            return None if None in vals else True
        if True in vals:
            return True
        return None if None in vals else False
    raise ValueError(f"cannot evaluate {expr!r}")


def _true(expr, row=None, prev=None, nxt=None) -> bool:
    return _ev(expr, row, prev, nxt) is True


# --------------------------------------------------------------------------- pattern helpers
def _positive_leaves(node) -> list[int]:
    """Occurrences a match of ``node`` may bind (nested negations excluded)."""
    if isinstance(node, Leaf):
        return [node.occ]
    if isinstance(node, Kleene):
        return _positive_leaves(node.body)
    if isinstance(node, Seq):
        return [o for it in node.items if not isinstance(it, Neg) for o in _positive_leaves(it)]
    return []


def _last_leaf(node) -> int:
    if isinstance(node, Leaf):
        return node.occ
    if isinstance(node, Kleene):
        return _last_leaf(node.body)
    return _last_leaf([it for it in node.items if not isinstance(it, Neg)][-1])


def _key(v):
    if isinstance(v, float) and math.isnan(v):
        return ("NaN",)
    return v


# --------------------------------------------------------------------------- one partition
class _Part:
    """The events of one partition, in time order."""

    def __init__(self, q: Query, rows: list[dict], times: list[int]):
        self.q = q
        self.rows = rows
        self.times = times
        self._neg_spans: dict[int, list[tuple[int, int]]] = {}
        self._binds: dict[tuple[int, int], bool] = {}

    def binds(self, i: int, occ: int) -> bool:
        """Event i may bind occurrence occ: type test and local predicates."""
        if (i, occ) not in self._binds:
            self._binds[i, occ] = self._test_binds(i, occ)
        return self._binds[i, occ]

    def _test_binds(self, i: int, occ: int) -> bool:
        o = self.q.occs[occ]
        row = self.rows[i]
        if row[self.q.type_col] not in o.types:
            return False
        return all(_true(p, row) for p in self.q.local.get(occ, ()))

    # -- all matches of a (sub-)pattern in this partition --------------------------------
    def all_matches(self, node) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
        """Every (event indexes, occurrences) pair that is a match of ``node``."""
        occs = sorted(set(_positive_leaves(node)))
        n = len(self.rows)
        out = []
        for size in range(1, n + 1):
            for sub in itertools.combinations(range(n), size):
                if any(self.times[sub[k]] >= self.times[sub[k + 1]] for k in range(size - 1)):
                    continue
                choices = [[o for o in occs if self.binds(i, o)] for i in sub]
                if any(not c for c in choices):
                    continue
                for assign in itertools.product(*choices):
                    if self.is_match(node, sub, assign):
                        out.append((sub, assign))
        return out

    def is_match(self, node, sub, assign) -> bool:
        # every adjacent pair satisfies the edge predicates of its transition
        for k in range(len(sub) - 1):
            x, y = self.rows[sub[k]], self.rows[sub[k + 1]]
            for p in self.q.edges.get((assign[k], assign[k + 1]), ()):
                if not _true(p.expr, None, x, y):
                    return False
        # qualified equivalences: the events bound to the listed occurrences agree
        for e in self.q.equivalences:
            if e.occs is None:
                continue
            vals = {_key(self.rows[i][e.attr]) for i, o in zip(sub, assign) if o in e.occs}
            if len(vals) > 1:
                return False
        return _Matcher(self, sub, assign).full(node, 0, len(sub))

    def neg_spans(self, neg: Neg) -> list[tuple[int, int]]:
        """(first time, last time) of every match of the negated body."""
        if neg.id not in self._neg_spans:
            self._neg_spans[neg.id] = [(self.times[s[0]], self.times[s[-1]])
                                       for s, _ in self.all_matches(neg.body)]
        return self._neg_spans[neg.id]


class _Matcher:
    """Does the bound sequence ``sub[lo:hi]`` match a pattern node exactly?"""

    def __init__(self, part: _Part, sub, assign):
        self.part = part
        self.sub = sub
        self.assign = assign
        self.memo: dict = {}

    def t(self, k: int) -> int:
        return self.part.times[self.sub[k]]

    def full(self, node, lo: int, hi: int) -> bool:
        key = (id(node), lo, hi)
        if key not in self.memo:
            self.memo[key] = self._full(node, lo, hi)
        return self.memo[key]

    def _full(self, node, lo, hi) -> bool:
        if hi <= lo:
            return False
        if isinstance(node, Leaf):
            return hi - lo == 1 and self.assign[lo] == node.occ and self.part.binds(self.sub[lo], node.occ)
        if isinstance(node, Kleene):
            # one body match, or a body match followed by more Kleene iterations
            if self.full(node.body, lo, hi):
                return True
            return any(self.full(node.body, lo, k) and self.full(node, k, hi) for k in range(lo + 1, hi))
        if isinstance(node, Seq):
            # leading / trailing negations only occur at the top level; windows handle them
            items = list(node.items)
            while isinstance(items[0], Neg):
                items.pop(0)
            while isinstance(items[-1], Neg):
                items.pop()
            return self._seq(items, lo, hi)
        raise ValueError(f"unexpected node {node!r}")

    def _seq(self, items, lo, hi) -> bool:
        first = items[0]
        rest = items[1:]
        if not rest:
            return self.full(first, lo, hi)
        guards = []
        while isinstance(rest[0], Neg):
            guards.append(rest.pop(0))
        for k in range(lo + 1, hi):
            if not self.full(first, lo, k):
                continue
            gap_lo, gap_hi = self.t(k - 1), self.t(k)
            if any(gap_lo < f and l < gap_hi for g in guards for f, l in self.part.neg_spans(g)):
                continue
            if self._seq(rest, k, hi):
                return True
        return False


# --------------------------------------------------------------------------- driver
def _duration(d, unit: str) -> int | None:
    if d is None:
        return None
    n = Fraction(str(d.value)) * _UNIT_NS[d.unit or unit] / _UNIT_NS[unit]
    if n.denominator != 1:
        raise ValueError(f"duration {d} is not a whole number of {unit}")
    return int(n)


def _aggregate(q: Query, cell: list[list[tuple[dict, int]]]) -> list:
    out = []
    for a in q.aggs:
        if a.func == "COUNT" and not a.occs:
            out.append(len(cell))
            continue
        bound = [row for m in cell for row, occ in m if occ in a.occs]
        if a.func == "COUNT":
            out.append(len(bound))
            continue
        vals = [row[a.attr] for row in bound]
        vals = [x for x in vals if x is not None and not (isinstance(x, float) and math.isnan(x))]
        if not vals:
            out.append(None)
        elif a.func == "SUM":
            out.append(sum(vals))
        elif a.func == "MIN":
            out.append(min(vals))
        elif a.func == "MAX":
            out.append(max(vals))
        elif a.func == "AVG":
            out.append(sum(vals) / len(vals))
        else:
            raise ValueError(a.func)
    return out


def brute_run(text_or_query, df, *, time_unit: str | None = None) -> list[dict]:
    """Brute-force result rows of a query over a (tiny) Polars DataFrame."""
    import cepvec

    q = cepvec.compile(text_or_query) if isinstance(text_or_query, str) else text_or_query
    if q.strategy != "skip-till-any-match":
        raise NotImplementedError("brute_run supports skip-till-any-match only")
    if not df.schema[q.time_col].is_integer():
        raise NotImplementedError("brute_run supports integer time columns only")
    unit = time_unit or "s"
    w = _duration(q.window.within, unit)
    s = _duration(q.window.slide, unit)
    kind = q.window.kind

    rows = df.to_dicts()
    order = sorted(range(len(rows)), key=lambda i: rows[i][q.time_col])  # stable
    rows = [rows[i] for i in order]

    parts: dict[tuple, list[dict]] = {}
    for r in rows:
        parts.setdefault(tuple(_key(r[a]) for a in q.partition_by), []).append(r)
    gidx = [q.partition_by.index(g) for g in q.group_by]

    root = q.root
    start_neg = end_neg = None
    if isinstance(root, Seq):
        if isinstance(root.items[0], Neg):
            start_neg = root.items[0]
        if isinstance(root.items[-1], Neg):
            end_neg = root.items[-1]
    last_occ = _last_leaf(root)

    cells: dict[tuple, list] = {}
    emit_times: dict[tuple, set[int]] = {}
    for key, prows in parts.items():
        if len(prows) > MAX_EVENTS_PER_PARTITION:
            raise ValueError(f"brute_run: partition {key} has {len(prows)} events; keep inputs tiny")
        group = tuple(key[j] for j in gidx)
        part = _Part(q, prows, [r[q.time_col] for r in prows])
        if kind == "emit":
            emit_times.setdefault(group, set()).update(
                part.times[i] for i in range(len(prows)) if part.binds(i, last_occ))
        sn = part.neg_spans(start_neg) if start_neg is not None else []
        en = part.neg_spans(end_neg) if end_neg is not None else []
        for sub, assign in part.all_matches(root):
            first, last = part.times[sub[0]], part.times[sub[-1]]
            bound = [(prows[i], o) for i, o in zip(sub, assign)]
            if kind == "none":
                if any(l < first for f, l in sn) or any(f > last for f, l in en):
                    continue
                cells.setdefault((group, ()), []).append(bound)
            elif kind == "within":
                if last - first >= w:
                    continue
                if any(last - w < f and l < first for f, l in sn):
                    continue
                if any(last < f and l < first + w for f, l in en):
                    continue
                cells.setdefault((group, ()), []).append(bound)
            elif kind == "slide":
                k = 0
                while k * s <= first:
                    lo, hi = k * s, k * s + w
                    if lo <= first and last < hi \
                            and not any(lo <= f and l < first for f, l in sn) \
                            and not any(last < f and l < hi for f, l in en):
                        cells.setdefault((group, (lo, hi)), []).append(bound)
                    k += 1
            elif kind == "emit":
                cells.setdefault(("__emit__", group), []).append((first, last, bound, sn, en))
            else:
                raise ValueError(kind)

    if kind == "emit":
        pending = {g: v for (tag, g), v in cells.items() if tag == "__emit__"}
        cells = {}
        for group, ms in pending.items():
            for t in sorted(emit_times.get(group, ())):
                for first, last, bound, sn, en in ms:
                    lo_t = t - w if w is not None else -math.inf
                    if not (lo_t < first and last <= t):
                        continue
                    if any(lo_t < f and l < first for f, l in sn):
                        continue
                    if any(last < f and l <= t for f, l in en):
                        continue
                    cells.setdefault((group, (t,)), []).append(bound)

    out = []
    for (group, win), cell in cells.items():
        vals = list(group)
        if kind == "slide":
            vals += list(win)
        elif kind == "emit":
            vals.append(win[0])
        vals += _aggregate(q, cell)
        out.append((group, win, dict(zip(q.output_columns, vals))))
    out.sort(key=lambda r: (tuple((v is None, v if v is not None else 0) for v in r[0]), r[1]))
    return [r[2] for r in out]


__all__ = ["brute_run"]

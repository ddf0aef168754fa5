"""Reference engine: build every match, then aggregate (the two-step approach).

This is the oracle every other engine is checked against. It is plain
Python, deliberately simple, and exponential in the worst case: it
materialises every match of the pattern (SASE's composite events) and only
then applies windows, negated start/end and aggregates. It shares no code
with :mod:`cepvec.kernels`.

Inputs are plain Python rows (``dict`` per event) that the front end has
validated: integer times, known columns. See ``docs/semantics.md`` (the
contract in Part I, the decisions in Part II) for the meaning implemented here.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass

from cepvec.lang import ast as A
from cepvec.errors import CepvecOverflowError, CepvecTypeError
from cepvec.plan.ir import Kleene, Leaf, Neg, Query, Seq
from cepvec.runtime.overlap import non_overlapping

INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)


# ------------------------------------------------------------------ expressions
def evaluate(expr, row, prev=None, nxt=None):
    """Evaluate a predicate expression; ``None`` is SQL NULL / unknown."""
    if isinstance(expr, A.Num):
        return expr.value
    if isinstance(expr, A.Str):
        return expr.value
    if isinstance(expr, A.Ref):
        src = prev if expr.var == "$prev" else nxt if expr.var == "$next" else row
        v = src.get(expr.attr)
        if isinstance(v, float) and math.isnan(v):
            return None
        return v
    if isinstance(expr, A.Unary):
        v = evaluate(expr.operand, row, prev, nxt)
        if expr.op == "NOTNULL":  # internal: added where equality chains became equivalence
            return v is not None
        if v is None:
            return None
        return (not v) if expr.op == "NOT" else -v
    if isinstance(expr, A.Bin):
        a = evaluate(expr.left, row, prev, nxt)
        b = evaluate(expr.right, row, prev, nxt)
        if a is None or b is None:
            return None
        try:
            if expr.op == "+":
                return a + b
            if expr.op == "-":
                return a - b
            if expr.op == "*":
                return a * b
            if expr.op == "/":
                return None if b == 0 else a / b
            if expr.op == "%":
                return None if b == 0 else a % b  # floor modulo, as Python and Polars
        except TypeError as e:
            raise CepvecTypeError(f"cannot compute {a!r} {expr.op} {b!r}: {e}") from None
        raise AssertionError(expr.op)
    if isinstance(expr, A.Cmp):
        a = evaluate(expr.left, row, prev, nxt)
        b = evaluate(expr.right, row, prev, nxt)
        if a is None or b is None:
            return None
        try:
            return {"=": a == b, "!=": a != b, "<": a < b, "<=": a <= b,
                    ">": a > b, ">=": a >= b}[expr.op]
        except TypeError:
            raise CepvecTypeError(
                f"cannot compare {type(a).__name__} value {a!r} with {type(b).__name__} value {b!r}; "
                "compare numbers with numbers and strings with strings") from None
    if isinstance(expr, A.BoolOp):
        vals = [evaluate(x, row, prev, nxt) for x in expr.items]
        if expr.op == "AND":
            if any(v is False for v in vals):
                return False
            return None if any(v is None for v in vals) else True
        if any(v is True for v in vals):
            return True
        return None if any(v is None for v in vals) else False
    raise AssertionError(expr)


# ------------------------------------------------------------------ matching
@dataclass(frozen=True)
class Match:
    """One match: ``(event index, occurrence id)`` pairs in time order."""

    binding: tuple[tuple[int, int], ...]
    first: int  # time of the first event
    last: int  # time of the last event


class _Partition:
    """All events of one partition (one value of the equivalence / group keys)."""

    def __init__(self, q: Query, rows: list[dict], times: list[int], types: list,
                 global_pos: list[int], all_times: list[int], max_span: int | None, progress=None):
        self.q = q
        self.progress = progress  # counts the matches built (cepvec.runtime.progress.Progress), or None
        self.rows = rows
        self.times = times
        self.types = types
        self.gpos = global_pos  # position of each event in the whole (time-sorted) input
        self.all_times = all_times
        self.max_span = max_span
        self._memo: dict[int, list[Match]] = {}
        self._cand: dict[int, list[int]] = {}
        self._spans: dict[int, list[tuple[int, int]]] = {}
        self._qualified = q.qualified_equivalences  # (a property of the query, computed per access)

    # candidates of an occurrence: type test + local predicates
    def candidates(self, occ: int) -> list[int]:
        if occ not in self._cand:
            o = self.q.occs[occ]
            preds = self.q.local.get(occ, ())
            out = [i for i, row in enumerate(self.rows)
                   if self.types[i] in o.types and (not preds or all(evaluate(p, row) is True for p in preds))]
            self._cand[occ] = out
        return self._cand[occ]

    def edge_ok(self, x: int, v: int, y: int, w: int) -> bool:
        if self.times[y] <= self.times[x]:
            return False
        for p in self.q.edges.get((v, w), ()):
            if evaluate(p.expr, None, self.rows[x], self.rows[y]) is not True:
                return False
        strategy = self.q.strategy
        if strategy == "skip-till-any-match":
            return True
        tx, ty = self.times[x], self.times[y]
        if strategy in ("strict-contiguity", "partition-contiguity"):
            # no event of the whole input (of the partition) strictly between x and y: the first
            # time after tx in the sorted list is ty or later
            pool = self.all_times if strategy == "strict-contiguity" else self.times
            j = bisect.bisect_right(pool, tx)
            return j == len(pool) or pool[j] >= ty
        # skip-till-next-match: y is among the earliest events that could follow x at all
        for tr in _successors(self.q, v):
            for z in self.candidates(tr):
                if tx < self.times[z] < ty and self._edge_preds(x, v, z, tr):
                    return False
        return True

    def _edge_preds(self, x, v, y, w) -> bool:
        return all(evaluate(p.expr, None, self.rows[x], self.rows[y]) is True
                   for p in self.q.edges.get((v, w), ()))

    def join(self, left: list[Match], right: list[Match], guards: tuple[int, ...] = ()) -> list[Match]:
        """Concatenate left and right matches that may be adjacent.

        ``guards`` are negations that must have no match strictly between the
        end of the left part and the start of the right part.
        """
        spans = [sp for g in guards for sp in self.neg_spans(g)]
        out = []
        before = 0
        # a right match must start after the left one ends (edge_ok) and within max_span of its start:
        # when ``right`` is in order of first time (as matches are built), the ones that can are a run of
        # it, found by bisection (the pairs tried, and so the order of ``out``, are the nested loop's)
        firsts = [r.first for r in right]
        ordered = all(a <= b for a, b in zip(firsts, firsts[1:]))
        for m in left:
            x, v = m.binding[-1]
            for j in range(bisect.bisect_right(firsts, m.last) if ordered else 0, len(right)):
                r = right[j]
                if self.max_span is not None and r.last - m.first >= self.max_span:
                    if ordered and r.first - m.first >= self.max_span:
                        break  # and every later one
                    continue
                y, w = r.binding[0]
                if not self.edge_ok(x, v, y, w):
                    continue
                if any(m.last < nf and nl < r.first for nf, nl in spans):
                    continue
                out.append(Match(m.binding + r.binding, m.first, r.last))
            if self.progress is not None:
                self.progress.update(len(out) - before)
                before = len(out)
        return out

    def matches(self, node) -> list[Match]:
        """Every match of a (sub-)pattern in this partition, memoised per node."""
        key = id(node)
        if key in self._memo:
            return self._memo[key]
        if isinstance(node, Leaf):
            res = [Match(((i, node.occ),), self.times[i], self.times[i]) for i in self.candidates(node.occ)]
        elif isinstance(node, Kleene):
            base = self.matches(node.body)
            res = list(base)
            frontier = base
            while frontier:
                frontier = self.join(frontier, base)
                res.extend(frontier)
        elif isinstance(node, Seq):
            res = _seq_matches(self, node)
        else:
            raise AssertionError(node)
        if self._qualified:
            res = [m for m in res if self._qualified_ok(m)]
        self._memo[key] = res
        return res

    def run_matches(self) -> list[Match]:
        """The matches of a query with run predicates (``q.run_preds``), built run by run.

        A run is a partial match; it is extended by an event ``y`` bound to ``w`` on a template
        transition ``v -> w`` when ``y`` is later, a candidate of ``w``, the edge predicates of
        ``v -> w`` and the run predicates placed on it hold, and no guarding negation matches in
        between; the strategy then keeps (docs/semantics.md 4.6): every such extension (skip till
        any match), those at the earliest time of one (skip till next match: events that pass
        nothing are skipped), those at the next time stamp of the input / partition (contiguity).
        """
        q = self.q
        out: list[Match] = []
        trans = [t for t in q.template.transitions]
        stack = [((i, q.template.start),) for i in reversed(self.candidates(q.template.start))]
        while stack:
            b = stack.pop()
            x, v = b[-1]
            first, tx = self.times[b[0][0]], self.times[x]
            if v == q.template.end and all(_run_ok(q, p, self.rows, b, None) for p in q.run_preds if p.at is None) \
                    and self._middle_conditions_ok(b):
                out.append(Match(b, first, tx))
                if self.progress is not None:
                    self.progress.update(1)
            exts = []
            for tr in trans:
                if tr.src != v:
                    continue
                for y in self.candidates(tr.dst):
                    ty = self.times[y]
                    if ty <= tx or (self.max_span is not None and ty - first >= self.max_span):
                        continue
                    if self._edge_preds(x, v, y, tr.dst) and all(
                            _run_ok(q, p, self.rows, b, y) for p in q.run_preds if p.at == (v, tr.dst)):
                        exts.append((y, tr))
            if exts and q.strategy != "skip-till-any-match":
                if q.strategy == "skip-till-next-match":
                    keep = min(self.times[y] for y, _ in exts)
                else:  # the next time stamp of the input / partition (both lists are sorted)
                    pool = self.all_times if q.strategy == "strict-contiguity" else self.times
                    j = bisect.bisect_right(pool, tx)
                    keep = pool[j] if j < len(pool) else None
                exts = [(y, tr) for y, tr in exts if self.times[y] == keep]
            for y, tr in reversed(sorted(exts, key=lambda e: (e[0], e[1].dst))):
                spans = [sp for g in tr.guards if g not in conditioned(q) for sp in self.neg_spans(g)]
                if any(tx < nf and nl < self.times[y] for nf, nl in spans):
                    continue
                stack.append(b + ((y, tr.dst),))
        if self._qualified:
            out = [m for m in out if self._qualified_ok(m)]
        return out

    def conditioned_spans(self, g: int, binding) -> list[tuple[int, int]]:
        """The matches of one-event negation ``g`` that pass its conditions on the match ``binding``."""
        occ = self.q.negations[g].node.occ
        preds = [p for p in self.q.run_preds if p.at == ("NOT", g)]
        return [(self.times[z], self.times[z]) for z in self.candidates(occ)
                if all(_run_ok(self.q, p, self.rows, binding, z) for p in preds)]

    def _middle_conditions_ok(self, binding) -> bool:
        """No event of a conditioned middle negation (one passing its conditions) lies in its gap."""
        for g in conditioned(self.q):
            n = self.q.negations[g]
            if n.placement != "middle":
                continue
            lo = max(self.times[i] for i, o in binding if o == n.prev)
            hi = min(self.times[i] for i, o in binding if o == n.next)
            if any(lo < t < hi for t, _ in self.conditioned_spans(g, binding)):
                return False
        return True

    def _qualified_ok(self, m: Match) -> bool:
        for e in self._qualified:
            vals = [_key(self.rows[i].get(e.attr)) for i, o in m.binding if o in e.occs]
            if len(vals) > 1 and any(v != vals[0] for v in vals[1:]):
                return False
        return True

    def neg_spans(self, neg_id: int) -> list[tuple[int, int]]:
        """The (first, last) times of the matches of negation ``neg_id``, sorted, without repeats
        (memoised, as the matches are: every join guarded by it asks again)."""
        if neg_id not in self._spans:
            self._spans[neg_id] = sorted({(m.first, m.last) for m in self.matches(self.q.negations[neg_id].node)})
        return self._spans[neg_id]


def run_state(q: Query, rows: list[dict], binding) -> dict:
    """The run's state (``q.run_slots``) after the events of ``binding``, by slot name."""
    state = {}
    for sl in q.run_slots:
        evs = [rows[i] for i, o in binding if o == sl.occ]
        if sl.kind == "len":
            state[sl.name] = len(evs)
            continue
        vals = [r.get(sl.attr) for r in evs]
        if sl.kind == "first":
            state[sl.name] = vals[0] if vals else None
            continue
        if sl.kind == "last":
            state[sl.name] = vals[-1] if vals else None
            continue
        xs = [v for v in vals if v is not None and not (isinstance(v, float) and math.isnan(v))]
        if sl.kind == "count":
            state[sl.name] = len(xs)
        elif not xs:
            state[sl.name] = None
        elif sl.kind in ("sum", "sumf"):
            state[sl.name] = sum(xs)
        elif sl.kind == "min":
            state[sl.name] = min(xs)
        elif sl.kind == "max":
            state[sl.name] = max(xs)
        else:
            state[sl.name] = sum(xs) / len(xs)
    return state


def _run_ok(q: Query, p, rows: list[dict], binding, y: int | None) -> bool:
    """Run predicate ``p`` holds when the run ``binding`` takes event ``y`` (None: at its end)."""
    return evaluate(p.expr, None, run_state(q, rows, binding), rows[y] if y is not None else {}) is True


def conditioned(q: Query) -> set[int]:
    """Negations with conditions on the match (``RunPred.at == ("NOT", g)``), checked per match."""
    return {p.at[1] for p in q.run_preds if isinstance(p.at, tuple) and p.at[0] == "NOT"}


def _successors(q: Query, occ: int) -> list[int]:
    out = [t.dst for t in q.template.transitions if t.src == occ]
    for n in q.negations:
        out += [t.dst for t in n.template.transitions if t.src == occ]
    return out


def _seq_matches(part: _Partition, node: Seq) -> list[Match]:
    """SEQ with middle negations: join part by part, checking each guarded gap."""
    items = node.items
    pos = [k for k, it in enumerate(items) if not isinstance(it, Neg)]
    res = part.matches(items[pos[0]])
    for k0, k1 in zip(pos, pos[1:]):
        guards = tuple(g.id for g in items[k0 + 1:k1] if isinstance(g, Neg))
        res = part.join(res, part.matches(items[k1]), guards)
    return res


# ------------------------------------------------------------------ windows + aggregates
class _NaN:
    """Grouping key standing for NaN: NaN values form one group, like null (and like Polars)."""

    def __repr__(self):
        return "NaN"


NAN_KEY = _NaN()


def _key(v):
    if isinstance(v, float) and math.isnan(v):
        return NAN_KEY
    return v


def unkey(v):
    return math.nan if v is NAN_KEY else v


def _top_negations(q: Query):
    """Negated start and end of the whole pattern (ids), if any."""
    start = end = None
    if isinstance(q.root, Seq):
        if isinstance(q.root.items[0], Neg):
            start = q.root.items[0].id
        if isinstance(q.root.items[-1], Neg):
            end = q.root.items[-1].id
    return start, end


class ReferenceResult:
    """Per (group key, window key) the list of matches and the rows they bind."""

    def __init__(self):
        self.cells: dict[tuple, list[tuple[Match, list[dict]]]] = {}

    def add(self, group: tuple, window: tuple, m: Match, rows: list[dict]):
        self.cells.setdefault((group, window), []).append((m, rows))


def evaluate_query(q: Query, rows: list[dict], times: list[int], *, w: int | None, s: int | None,
                   match_limit: int | None = None, progress=None, overlap: str = "all") -> ReferenceResult:
    """Enumerate matches of ``q`` over time-sorted ``rows`` and assign them to (group, window) cells.

    ``times`` are the integer occurrence times (``rows[i][time_col]`` may be a datetime);
    ``w`` and ``s`` are the window length and slide in the same unit. ``progress``
    (an object with ``update(k)``) is told of every match built by a join. ``overlap="none"``
    keeps SASE+'s non-overlapping matches only (:mod:`cepvec.runtime.overlap`; no window or WITHIN).
    """
    type_col = q.type_col
    parts: dict[tuple, list[int]] = {}
    partition_by = q.partition_by
    for i, row in enumerate(rows):
        key = tuple([_key(row.get(a)) for a in partition_by])
        parts.setdefault(key, []).append(i)
    group_idx = [q.partition_by.index(g) for g in q.group_by]
    start_neg, end_neg = _top_negations(q)
    kind = q.window.kind
    max_span = w if kind in ("within", "slide") else (w if kind == "emit" and w is not None else None)
    result = ReferenceResult()
    ends_checked = bool(q.start_local or q.end_local)
    cond = conditioned(q)
    end_occ = q.template.end
    total = 0

    # EMIT CHANGES: output times per group are END-capable events of the group
    emit_times: dict[tuple, set[int]] = {}
    partitions = []
    for key, idx in parts.items():
        part = _Partition(q, [rows[i] for i in idx], [times[i] for i in idx],
                          [rows[i][type_col] for i in idx], idx, times, max_span, progress)
        partitions.append((key, part))
        if kind == "emit":
            g = tuple(key[j] for j in group_idx)
            emit_times.setdefault(g, set()).update(part.times[i] for i in part.candidates(end_occ))

    emit_sorted = {g: sorted(ts) for g, ts in emit_times.items()}
    pending = []  # overlap="none": (partition, match, rows, group) before the choice
    for pidx, (key, part) in enumerate(partitions):
        group = tuple(key[j] for j in group_idx)
        ms = part.run_matches() if q.run_preds else part.matches(q.root)
        sn = part.neg_spans(start_neg) if start_neg is not None else []
        en = part.neg_spans(end_neg) if end_neg is not None else []
        for m in ms:
            if ends_checked and not _ends_ok(q, part, m):
                continue
            if start_neg in cond:
                sn = part.conditioned_spans(start_neg, m.binding)
            if end_neg in cond:
                en = part.conditioned_spans(end_neg, m.binding)
            mrows = [part.rows[i] for i, _ in m.binding]
            placed = False
            if overlap == "none":
                if window_ok(q, m, sn, en, w):
                    pending.append((0 if q.strategy == "strict-contiguity" else pidx, m, mrows, group,
                                    tuple(part.gpos[i] for i, _ in m.binding)))
                continue
            if kind == "none":
                if not any(nl < m.first for nf, nl in sn) and not any(nf > m.last for nf, nl in en):
                    result.add(group, (), m, mrows)
                    placed = True
            elif kind == "within":
                if m.last - m.first < w \
                        and not any(nl < m.first and nf > m.last - w for nf, nl in sn) \
                        and not any(nf > m.last and nl < m.first + w for nf, nl in en):
                    result.add(group, (), m, mrows)
                    placed = True
            elif kind == "emit":
                # the output times t of the match: t >= last, t - w < first (WITHIN), no start
                # negation match after t - w before first (none at all without WITHIN), no end
                # negation match after last ending at or before t: one range of the sorted times
                lo, hi = m.last, math.inf if w is None else m.first + w
                before = [nf for nf, nl in sn if nl < m.first]
                if before and w is None:
                    continue
                if before:
                    lo = max(lo, max(before) + w)
                hi = min([hi] + [nl for nf, nl in en if nf > m.last])
                ts = emit_sorted.get(group, [])
                for t in ts[bisect.bisect_left(ts, lo):bisect.bisect_left(ts, hi)]:
                    result.add(group, (t,), m, mrows)
                    placed = True
            else:  # slide
                k_lo = max(0, (m.last - w) // s + 1)
                k_hi = m.first // s
                for k in range(k_lo, k_hi + 1):
                    ws, we = k * s, k * s + w
                    if any(nl < m.first and nf >= ws for nf, nl in sn):
                        continue
                    if any(nf > m.last and nl < we for nf, nl in en):
                        continue
                    result.add(group, (ws, we), m, mrows)
                    placed = True
            if placed:
                total += 1
                if match_limit is not None and total >= match_limit:
                    return result
    if overlap == "none":
        keep = non_overlapping([p[0] for p in pending], [p[1].first for p in pending], [p[1].last for p in pending],
                               [(p[4], tuple(o for _, o in p[1].binding)) for p in pending])
        for j in keep[:match_limit]:
            result.add(pending[j][3], (), pending[j][1], pending[j][2])
    return result


def window_ok(q: Query, m: Match, sn, en, w) -> bool:
    """No window or WITHIN: ``m`` fits the window and no negated start / end match blocks it."""
    if q.window.kind == "none":
        return not any(nl < m.first for nf, nl in sn) and not any(nf > m.last for nf, nl in en)
    return (m.last - m.first < w and not any(nl < m.first and nf > m.last - w for nf, nl in sn)
            and not any(nf > m.last and nl < m.first + w for nf, nl in en))


def _ends_ok(q: Query, part: _Partition, m: Match) -> bool:
    """SASE+ v[1] / v[v.LEN] alone: the first / last event of the match, when bound to v, satisfies them."""
    for (i, o), preds in ((m.binding[0], q.start_local), (m.binding[-1], q.end_local)):
        if any(evaluate(p, part.rows[i]) is not True for p in preds.get(o, ())):
            return False
    return True


def aggregate(q: Query, result: ReferenceResult, *, numeric: str = "int64",
              attr_is_int: dict[str, bool] | None = None) -> list[tuple[tuple, tuple, list]]:
    """Aggregate every (group, window) cell: ``[(group, window, [agg values])]`` sorted."""
    attr_is_int = attr_is_int or {}
    out = []
    for (group, window), cell in result.cells.items():
        vals = []
        for a in q.aggs:
            occs = set(a.occs)
            if a.star:
                v = len(cell)
            elif a.func == "COUNT":
                v = sum(1 for m, _ in cell for _, o in m.binding if o in occs)
            else:
                xs = [rows[k].get(a.attr) for m, rows in cell
                      for k, (_, o) in enumerate(m.binding) if o in occs]
                xs = [x for x in xs if x is not None and not (isinstance(x, float) and math.isnan(x))]
                if not xs:
                    v = None
                elif a.func == "SUM":
                    v = sum(xs)
                elif a.func == "MIN":
                    v = min(xs)
                elif a.func == "MAX":
                    v = max(xs)
                else:
                    v = sum(xs) / len(xs)
            exact = a.func == "COUNT" or (a.func == "SUM" and attr_is_int.get(a.attr, False))
            if exact and v is not None:
                if numeric == "float64":
                    v = float(v)
                elif not (INT64_MIN <= v <= INT64_MAX):
                    raise CepvecOverflowError(
                        f"{a.label} = {v} does not fit in int64 for group {group!r}"
                        f"{' window ' + repr(window) if window else ''} of query "
                        f"{' '.join(q.text.split())!r}; pass numeric='float64' for approximate results")
            vals.append(v)
        out.append((group, window, vals))
    out.sort(key=lambda r: (sort_key(r[0]), r[1]))
    return [(tuple(unkey(g) for g in group), window, vals) for group, window, vals in out]


def sort_key(values: tuple):
    # nulls last (polars' nulls_last=True); NaN after every number, before null (as Polars sorts)
    return tuple((v is None, v is NAN_KEY, v if v is not None and v is not NAN_KEY else 0) for v in values)

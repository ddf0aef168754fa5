"""Sharon's optimizer (Poppe et al., ICDE 2018, sections III-VII) as plain Python.

A workload is first split into *sharing classes*: fixed-length ``SEQ`` queries
of single event types without predicates between events, negation or Kleene,
that have the same window, GROUP-BY and equivalences (Section VII: queries
with other windows or grouping do not share with each other; the rest of the
workload is listed as not sharable). Within a class, each query is its
sequence of *symbols*: an event type with its local predicates (``A[x > 1]``;
``A`` without one), so a sub-pattern is shared where types and predicates
agree (Section VII's predicates), and:

* a *sharable pattern* is a contiguous sub-pattern of length > 1 that appears
  in more than one query; with the queries ``Q_p`` that contain it, it is a
  *sharing candidate* ``(p, Q_p)`` (Definition 3);
* its benefit ``BValue(p, Q_p) = NonShared(p, Q_p) - Shared(p, Q_p)``
  (equations 1-8, from the event rate of each type per window);
* two candidates *conflict* when their patterns overlap in a query they share
  (Definition 6); candidates with a positive benefit and their conflicts form
  the *Sharon graph* (Definition 10, Algorithm 1);
* *pruning* (Section V): a candidate whose best possible plan
  (``Score_max``, equation 11) scores below GWMIN's guaranteed weight
  (equation 10) is conflict-ridden and dropped; a candidate without conflicts
  is conflict-free and goes straight into the plan;
* the *plan finder* (Section VI) builds the valid plans level by level, each
  new plan from two valid parents that differ in one candidate each, when
  those two do not conflict (Lemma 6), and keeps the best. Each connected
  component of the reduced graph is searched on its own (a plan is the union
  of independent sets of the components), so the search is exponential only
  in the largest component; a component whose levels grow past
  :data:`LEVEL_LIMIT` plans is finished by branch and bound on the same
  graph (exact too);
* ``exhaustive`` tries every subset of the unreduced graph's vertices (the
  tests' oracle, small workloads only); ``greedy`` is GWMIN itself.

Rates default to one rate for every type (:data:`DEFAULT_RATE` events per
window); pass ``rates`` to weigh types by how often they occur.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field

from cepvec.errors import CepvecPlanError
from cepvec.plan.ir import Query
from cepvec.sharing.sequences import class_key, executor_support, symbols_of, why_not_sharable

DEFAULT_RATE = 100.0
#: plans per level past which the plan finder finishes a component by branch and bound
LEVEL_LIMIT = 20_000


# ----------------------------------------------------------------------------- candidates and benefit
@dataclass(frozen=True)
class Candidate:
    """A sharing candidate ``(p, Q_p)`` with its benefit value."""

    pattern: tuple[str, ...]
    queries: tuple[str, ...]
    benefit: float

    @property
    def label(self) -> str:
        return f"(({', '.join(self.pattern)}), {{{', '.join(self.queries)}}})"


def occurrences(p: tuple[str, ...], seq: tuple[str, ...]) -> list[int]:
    """Start positions of ``p`` in ``seq``."""
    n = len(p)
    return [i for i in range(len(seq) - n + 1) if seq[i:i + n] == p]


def _rate(rates, t: str) -> float:
    """The rate of a symbol: its own, else its event type's (``A[x > 1]``: ``A``; a predicate's
    selectivity is not known), else :data:`DEFAULT_RATE`."""
    if not rates:
        return DEFAULT_RATE
    return float(rates.get(t, rates.get(t.split("[", 1)[0], DEFAULT_RATE)))


def non_shared_cost(seq: tuple[str, ...], rates=None) -> float:
    """Equation 2: ``Rate(E_1) * Rate(P)`` (counts per START event, each matched event updates them)."""
    return _rate(rates, seq[0]) * sum(_rate(rates, t) for t in seq)


def benefit(p: tuple[str, ...], seqs: list[tuple[str, ...]], rates=None) -> float:
    """Equation 8: ``BValue(p, Q_p) = NonShared(p, Q_p) - Shared(p, Q_p)`` (equations 1-7).

    ``Comb`` (equation 5) multiplies the counts of the START events of the parts
    the query is cut into; a part that is empty (``p`` starts or ends the
    query) contributes no factor, and a query that is ``p`` itself combines
    nothing.
    """
    r = lambda t: _rate(rates, t)  # noqa: E731
    rate_p = sum(r(t) for t in p)
    shared = r(p[0]) * rate_p  # p computed once (equation 7)
    non_shared = 0.0
    for seq in seqs:
        non_shared += non_shared_cost(seq, rates)
        m = occurrences(p, seq)[0]
        prefix, suffix = seq[:m], seq[m + len(p):]
        comp = (r(prefix[0]) * sum(map(r, prefix)) if prefix else 0.0) + \
               (r(suffix[0]) * sum(map(r, suffix)) if suffix else 0.0)
        starts = [part[0] for part in (prefix, p, suffix) if part]
        comb = 0.0
        if len(starts) > 1:
            comb = 1.0
            for t in starts:
                comb *= r(t)
        shared += comp + comb
    return non_shared - shared


def sharing_candidates(seqs: dict[str, tuple[str, ...]], rates=None) -> list[Candidate]:
    """Every sharable pattern with the queries that contain it (Definition 3), sorted by pattern."""
    where: dict[tuple[str, ...], list[str]] = {}
    for name, seq in seqs.items():
        seen = set()
        for i in range(len(seq)):
            for j in range(i + 2, len(seq) + 1):
                p = seq[i:j]
                if p not in seen:
                    seen.add(p)
                    where.setdefault(p, []).append(name)
    out = []
    for p, names in where.items():
        if len(names) > 1:
            out.append(Candidate(p, tuple(names), benefit(p, [seqs[n] for n in names], rates)))
    out.sort(key=lambda c: (c.pattern, c.queries))
    return out


def in_conflict(a: Candidate, b: Candidate, seqs: dict[str, tuple[str, ...]]) -> bool:
    """Definition 6: the patterns overlap (share a position) in a query both candidates contain."""
    common = set(a.queries).intersection(b.queries)
    for q in common:
        seq = seqs[q]
        for i in occurrences(a.pattern, seq):
            for j in occurrences(b.pattern, seq):
                if i < j + len(b.pattern) and j < i + len(a.pattern):
                    return True
    return False


# ----------------------------------------------------------------------------- the Sharon graph
@dataclass
class SharonGraph:
    """Vertices (beneficial candidates shared by > 1 query, weight = benefit) and conflict edges."""

    vertices: list[Candidate]
    adj: list[set[int]]

    @property
    def edges(self) -> list[tuple[int, int]]:
        return [(i, j) for i, ns in enumerate(self.adj) for j in sorted(ns) if i < j]

    def weight(self, plan) -> float:
        return sum(self.vertices[i].benefit for i in plan)

    def independent(self, plan) -> bool:
        plan = list(plan)
        return all(b not in self.adj[a] for a, b in itertools.combinations(plan, 2))


def sharon_graph(cands: list[Candidate], seqs: dict[str, tuple[str, ...]]) -> SharonGraph:
    """Algorithm 1: beneficial candidates as weighted vertices, sharing conflicts as edges."""
    verts = [c for c in cands if c.benefit > 0 and len(c.queries) > 1]
    adj: list[set[int]] = [set() for _ in verts]
    by_query: dict[str, list[int]] = {}
    for i, c in enumerate(verts):
        for q in c.queries:
            by_query.setdefault(q, []).append(i)
    for q, ids in by_query.items():
        seq = seqs[q]
        spans = {i: [(s, s + len(verts[i].pattern)) for s in occurrences(verts[i].pattern, seq)] for i in ids}
        for a, b in itertools.combinations(ids, 2):
            if b in adj[a]:
                continue
            if any(x0 < y1 and y0 < x1 for x0, x1 in spans[a] for y0, y1 in spans[b]):
                adj[a].add(b)
                adj[b].add(a)
    return SharonGraph(verts, adj)


def guaranteed_weight(g: SharonGraph, alive=None) -> float:
    """Equation 10: GWMIN returns at least ``sum w(u) / (degree(u) + 1)`` (degrees within ``alive``)."""
    alive = set(range(len(g.vertices))) if alive is None else alive
    return sum(g.vertices[u].benefit / (len(g.adj[u] & alive) + 1) for u in alive)


def gwmin(g: SharonGraph, alive=None) -> list[int]:
    """GWMIN (Sakai et al.): repeatedly take the vertex of largest ``w / (degree + 1)``, drop its neighbours."""
    alive = set(range(len(g.vertices))) if alive is None else set(alive)
    plan = []
    while alive:
        v = max(sorted(alive), key=lambda u: g.vertices[u].benefit / (len(g.adj[u] & alive) + 1))
        plan.append(v)
        alive -= g.adj[v] | {v}
    return sorted(plan)


@dataclass
class Reduction:
    """Section V: what pruning removed and why."""

    alive: set[int]
    conflict_free: list[int]
    conflict_ridden: list[tuple[int, float, float]]  # (vertex, Score_max, guaranteed weight)


def reduce_graph(g: SharonGraph) -> Reduction:
    """Drop conflict-ridden candidates (``Score_max < guaranteed weight``) and set aside conflict-free ones."""
    alive = set(range(len(g.vertices)))
    gw = guaranteed_weight(g)
    total = sum(c.benefit for c in g.vertices)
    ridden = []
    for v in sorted(alive):
        smax = total - sum(g.vertices[u].benefit for u in g.adj[v])
        if smax < gw - 1e-9 * max(1.0, abs(gw)):
            ridden.append((v, smax, gw))
    alive -= {v for v, _, _ in ridden}
    free = sorted(v for v in alive if not (g.adj[v] & alive))
    alive -= set(free)
    return Reduction(alive, free, ridden)


def components(g: SharonGraph, alive: set[int]) -> list[list[int]]:
    seen: set[int] = set()
    out = []
    for v in sorted(alive):
        if v in seen:
            continue
        comp, stack = [], [v]
        seen.add(v)
        while stack:
            u = stack.pop()
            comp.append(u)
            for x in g.adj[u] & alive:
                if x not in seen:
                    seen.add(x)
                    stack.append(x)
        out.append(sorted(comp))
    return out


def _levelwise(g: SharonGraph, comp: list[int]) -> list[int] | None:
    """Section VI: valid plans level by level (Lemma 6), best kept; None when a level passes LEVEL_LIMIT."""
    best: tuple[float, tuple[int, ...]] = (0.0, ())
    level = [(v,) for v in comp]  # sorted tuples: plans of size 1 are valid
    while level:
        for plan in level:
            w = g.weight(plan)
            if w > best[0]:
                best = (w, plan)
        nxt = []
        # two plans with the same first s-1 candidates make a child when their last ones do not conflict
        for _, grp in itertools.groupby(level, key=lambda p: p[:-1]):
            grp = list(grp)
            for a, b in itertools.combinations(grp, 2):
                if b[-1] not in g.adj[a[-1]]:
                    nxt.append(a + (b[-1],))
                    if len(nxt) > LEVEL_LIMIT:
                        return None
        level = nxt
    return list(best[1])


def _branch_and_bound(g: SharonGraph, comp: list[int]) -> list[int]:
    """Exact maximum weight independent set of ``comp``: include / exclude the heaviest vertex, bounded by
    the weight left."""
    order = sorted(comp, key=lambda v: -g.vertices[v].benefit)
    best: list = [0.0, []]

    def go(cands: list[int], chosen: list[int], w: float):
        if w > best[0]:
            best[0], best[1] = w, list(chosen)
        if not cands or w + sum(g.vertices[v].benefit for v in cands) <= best[0]:
            return
        v, rest = cands[0], cands[1:]
        chosen.append(v)
        go([u for u in rest if u not in g.adj[v]], chosen, w + g.vertices[v].benefit)
        chosen.pop()
        go(rest, chosen, w)

    go(order, [], 0.0)
    return sorted(best[1])


def plan_finder(g: SharonGraph, red: Reduction | None = None) -> list[int]:
    """The optimal plan: conflict-free candidates plus the best valid plan of each component (Section VI)."""
    red = red or reduce_graph(g)
    plan = list(red.conflict_free)
    for comp in components(g, red.alive):
        found = _levelwise(g, comp)
        plan += found if found is not None else _branch_and_bound(g, comp)
    return sorted(plan)


def exhaustive(g: SharonGraph) -> list[int]:
    """Every subset of the vertices; the valid one of highest score (the oracle: small graphs only)."""
    n = len(g.vertices)
    if n > 22:
        raise CepvecPlanError(f"the exhaustive optimizer tries 2^{n} plans; use sharing='auto' for this workload")
    best: tuple[float, list[int]] = (0.0, [])
    for mask in range(1 << n):
        plan = [i for i in range(n) if mask >> i & 1]
        if g.independent(plan):
            w = g.weight(plan)
            if w > best[0] + 1e-9:
                best = (w, plan)
    return best[1]


# ----------------------------------------------------------------------------- the workload's plan
@dataclass
class ClassPlan:
    """The Sharon plan of one sharing class."""

    key: tuple
    seqs: dict[str, tuple[str, ...]]
    candidates: list[Candidate]
    graph: SharonGraph
    reduction: Reduction | None
    chosen: list[int]
    finder: str

    @property
    def score(self) -> float:
        return self.graph.weight(self.chosen)

    @property
    def cost_without(self) -> float:
        return sum(non_shared_cost(s, self._rates) for s in self.seqs.values())

    _rates: dict | None = None


@dataclass
class SharingPlan:
    """The plan of a workload: per sharing class the Sharon plan; which queries run shared; why others do not."""

    sharing: str
    classes: list[ClassPlan] = field(default_factory=list)
    not_sharable: dict[str, str] = field(default_factory=dict)  # query -> why
    shared_groups: tuple[tuple[str, ...], ...] = ()  # each group: one run of the shared executor
    seconds: float = 0.0

    @property
    def shared_queries(self) -> tuple[str, ...]:
        """The queries the shared executor runs (docs/sharing.md); the others run alone in the same pass."""
        return tuple(n for g in self.shared_groups for n in g)

    @property
    def chosen(self) -> list[Candidate]:
        return [c.graph.vertices[i] for c in self.classes for i in c.chosen]

    @property
    def score(self) -> float:
        return sum(c.score for c in self.classes)


def plan_sequences(seqs: dict[str, tuple[str, ...]], sharing: str = "auto", rates=None, key=()) -> ClassPlan:
    """The Sharon plan of one class of sequences under ``sharing`` ("auto", "greedy", "exhaustive", "none")."""
    cands = sharing_candidates(seqs, rates)
    g = sharon_graph(cands, seqs)
    red = None
    if sharing == "none":
        chosen: list[int] = []
    elif sharing == "greedy":
        chosen = gwmin(g)
    elif sharing == "exhaustive":
        chosen = exhaustive(g)
    else:
        red = reduce_graph(g)
        chosen = plan_finder(g, red)
    cp = ClassPlan(key, dict(seqs), cands, g, red, chosen, sharing)
    cp._rates = rates
    return cp


def plan_workload(queries: dict[str, Query], sharing: str = "auto", rates=None) -> SharingPlan:
    """Split the workload into sharing classes and plan each; every class of at least two queries the shared
    executor supports runs on one shared run."""
    t0 = time.perf_counter()
    plan = SharingPlan(sharing)
    classes: dict[tuple, dict[str, tuple[str, ...]]] = {}
    for name, q in queries.items():
        why = why_not_sharable(q)
        if why is not None:
            plan.not_sharable[name] = why
            continue
        classes.setdefault(class_key(q), {})[name] = symbols_of(q)
    for key, seqs in classes.items():
        plan.classes.append(plan_sequences(seqs, sharing, rates, key))
    if sharing != "none":
        runnable: dict[tuple, list[str]] = {}
        for name, q in queries.items():
            if executor_support(q) is None:
                runnable.setdefault(class_key(q), []).append(name)
        plan.shared_groups = tuple(tuple(names) for names in runnable.values() if len(names) > 1)
    plan.seconds = time.perf_counter() - t0
    return plan


def explain_plan(wl) -> str:
    """``Workload.explain()``: classes, candidates and benefits, conflicts, pruning, plan, costs, executor."""
    plan: SharingPlan = wl.plan
    lines = [f"workload: {len(wl.queries)} queries, sharing={plan.sharing!r} "
             f"(planned in {plan.seconds * 1000:.1f} ms)"]
    for name, why in plan.not_sharable.items():
        lines.append(f"  {name}: not sharable ({why}); runs on its own path in the same pass")
    for k, cp in enumerate(plan.classes):
        q0 = wl.queries[next(iter(cp.seqs))]
        lines.append(f"sharing class {k + 1}: {', '.join(cp.seqs)} (window {_window(q0)}"
                     + (f", GROUP-BY {', '.join(q0.group_by)}" if q0.group_by else "")
                     + (f", partitioned by [{', '.join(q0.partition_by)}]" if q0.partition_by != q0.group_by else "")
                     + ")")
        g = cp.graph
        idx = {id(c): i for i, c in enumerate(g.vertices)}
        lines.append("  sharing candidates (p, Q_p) and BValue:")
        for c in cp.candidates:
            tag = f"v{idx[id(c)]}" if id(c) in idx else "non-beneficial, pruned"
            lines.append(f"    {c.label}  BValue={c.benefit:g}  [{tag}]")
        if g.edges:
            lines.append("  conflicts: " + ", ".join(f"v{a}-v{b}" for a, b in g.edges))
        else:
            lines.append("  conflicts: none")
        if cp.reduction is not None:
            red = cp.reduction
            for v, smax, gw in red.conflict_ridden:
                lines.append(f"  pruned v{v}: conflict-ridden, Score_max={smax:g} < GWMIN guaranteed weight {gw:g}")
            for v in red.conflict_free:
                lines.append(f"  v{v} is conflict-free: in every optimal plan")
        chosen = ", ".join(g.vertices[i].label for i in cp.chosen) or "nothing"
        lines.append(f"  Sharon plan ({cp.finder}): {chosen}; score {cp.score:g}")
        lines.append(f"  estimated cost (Sharon equations 2-8): {cp.cost_without:g} without sharing, "
                     f"{cp.cost_without - cp.score:g} with")
    for group in plan.shared_groups:
        seqs = {n: symbols_of(wl.queries[n]) for n in group}
        lines.append(f"shared executor (A-Seq prefix sharing: one trie of prefix counters by start pane): "
                     f"{', '.join(group)}")
        shared = shared_prefixes(seqs)
        counters = len({s[:j] for s in seqs.values() for j in range(1, len(s) + 1)})
        lines.append(f"  {counters} prefix counters instead of {sum(map(len, seqs.values()))}; "
                     + ("computed once: " + "; ".join(f"({', '.join(p)}) for {{{', '.join(qs)}}}"
                                                       for p, qs in shared) if shared else "no common prefix"))
        chans = [n for n in group if any(a.func in ("SUM", "AVG", "MIN", "MAX") for a in wl.queries[n].aggs)]
        if chans:
            lines.append(f"  aggregates ({', '.join(chans)}): channels of the trie beside the counts; SUM / AVG of "
                         "a non-integer attribute with numeric='int64', and MIN / MAX with numeric='float64', "
                         "run on their own path")
    if not plan.shared_groups:
        lines.append("shared executor: not used (every query runs on its own path)")
    in_executor = {n for group in plan.shared_groups for n in group}
    for cp in plan.classes:
        for name in cp.seqs:
            why = executor_support(wl.queries[name])
            if name not in in_executor and why is not None:
                lines.append(f"  {name}: not in the shared executor ({why}); runs on its own path in the same pass")
    return "\n".join(lines)


def shared_prefixes(seqs: dict[str, tuple[str, ...]]) -> list[tuple[tuple[str, ...], tuple[str, ...]]]:
    """The longest prefixes common to two or more queries, each with those queries (the executor's sharing)."""
    by_prefix: dict[tuple[str, ...], list[str]] = {}
    for name, seq in seqs.items():
        for j in range(1, len(seq) + 1):
            by_prefix.setdefault(seq[:j], []).append(name)
    out = []
    for p, names in by_prefix.items():
        if len(names) > 1 and not any(len(p2) == len(p) + 1 and p2[:-1] == p and len(n2) == len(names)
                                      for p2, n2 in by_prefix.items()):
            out.append((p, tuple(names)))
    return sorted(out)


def _window(q: Query) -> str:
    w = q.window
    if w.kind == "none":
        return "none"
    text = f"WITHIN {w.within.value}{' ' + w.within.unit if w.within.unit else ''}" if w.within else ""
    if w.kind == "slide":
        text += f" SLIDE {w.slide.value}{' ' + w.slide.unit if w.slide.unit else ''}"
    if w.kind == "emit":
        text += " EMIT CHANGES"
    return text.strip()

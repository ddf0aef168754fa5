"""Compiled queries: the logical plan every engine runs (:class:`Query` and its parts).

:func:`cepvec.plan.compile.compile_query` turns the syntax tree into a :class:`Query`:

* the pattern is normalised (nested SEQ flattened, adjacent NOTs merged,
  every occurrence of an event type numbered as its own variable);
* the GRETA template (Algorithm 1, with Section 9's repeated types) is built:
  states are occurrences, transitions are ``SEQ`` and ``+`` edges, each SEQ
  transition knows the negations guarding it;
* predicates are classified into local (vertex), equivalence and edge
  predicates; equality chains ``a.id = b.id = c.id`` that constrain every
  transition become equivalence tests;
* the window and aggregates are resolved.

Engines never look at the syntax tree again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union

from cepvec.lang import ast as A

#: ``Query.explain`` calls ``EXPLAINER[0]``; ``cepvec/__init__.py`` sets it to :func:`cepvec.explain.explain`.
EXPLAINER: list = [lambda q: f"query: {q.text}"]

# ----------------------------------------------------------------------- pattern IR


@dataclass(frozen=True)
class Occ:
    """One occurrence of an event type in the pattern (a template state)."""

    id: int
    name: str  # variable name users write (explicit variable, else the type)
    types: tuple[str, ...]
    negated: bool  # inside a NOT
    neg: int | None  # innermost negation it belongs to (None: positive)
    explicit: bool  # name came from an explicit variable

    @property
    def label(self) -> str:
        t = self.types[0] if len(self.types) == 1 else f"ANY({', '.join(self.types)})"
        return t if self.name == t else f"{t} {self.name}"


@dataclass(frozen=True)
class Leaf:
    occ: int


@dataclass(frozen=True)
class Kleene:
    body: "Node"


@dataclass(frozen=True)
class Seq:
    items: tuple["Node", ...]  # may contain Neg items (never two adjacent, never all)


@dataclass(frozen=True)
class Neg:
    id: int
    body: "Node"


Node = Union[Leaf, Kleene, Seq, Neg]


@dataclass(frozen=True)
class Transition:
    src: int
    dst: int
    kind: str  # "SEQ" or "+"
    guards: tuple[int, ...] = ()  # negations that must not occur between src and dst


@dataclass(frozen=True)
class Template:
    """GRETA template of a positive (sub-)pattern."""

    states: tuple[int, ...]
    start: int
    end: int
    transitions: tuple[Transition, ...]

    def preds(self, occ: int) -> tuple[int, ...]:
        return tuple(sorted({t.src for t in self.transitions if t.dst == occ}))


@dataclass(frozen=True)
class Negation:
    """A negative sub-pattern ``NOT N`` and where it sits."""

    id: int
    node: Node
    template: Template
    prev: int | None  # occurrence right before the NOT (None: negated start)
    next: int | None  # occurrence right after the NOT (None: negated end)
    parent: int | None  # enclosing negation (nested negation), None at top level

    @property
    def placement(self) -> str:
        if self.prev is None:
            return "start"
        if self.next is None:
            return "end"
        return "middle"


# --------------------------------------------------------------------- predicates


@dataclass(frozen=True)
class EdgePred:
    """Predicate on adjacent events: refs use var ``$prev`` and ``$next``."""

    expr: A.Expr
    text: str


@dataclass(frozen=True)
class RunSlot:
    """One value of a run's computation state (SASE+ Section 5's vector V).

    ``kind``: ``first`` / ``last`` (``attr`` of the first / last event bound to ``occ`` so far),
    ``len`` (how many), ``count`` / ``sum`` / ``min`` / ``max`` / ``avg`` (of the non-null ``attr``
    values of those events; ``count`` counts them, the others are null when there is none).
    Run predicates read it as ``Ref("$prev", name)``.
    """

    name: str
    kind: str
    occ: int
    attr: str | None


@dataclass(frozen=True)
class RunPred:
    """A predicate over the run so far (SASE+ iterator aggregates, ``v.LEN``, non-adjacent variables).

    ``expr`` reads the event being bound as ``Ref("$next", attr)`` and the run's state before it
    as ``Ref("$prev", slot name)``. ``at`` is the template transition whose take it conditions
    (``(v, v)``: a Kleene take; ``(u, v)``: the begin of ``v``, which is also the end of ``u``'s
    run); ``None``: evaluated once the match is complete (no ``$next``).
    """

    expr: A.Expr
    text: str
    at: tuple[int, int] | None


@dataclass(frozen=True)
class Equivalence:
    attr: str
    occs: frozenset[int] | None  # None: every event of a match, negated ones included
    text: str


@dataclass(frozen=True)
class Window:
    kind: str  # "none", "within", "emit", "slide"
    within: A.Duration | None = None
    slide: A.Duration | None = None


@dataclass(frozen=True)
class AggSpec:
    func: str  # COUNT, SUM, MIN, MAX, AVG
    occs: tuple[int, ...]  # occurrences aggregated (empty for COUNT(*))
    attr: str | None
    label: str  # output column name

    @property
    def star(self) -> bool:
        return self.func == "COUNT" and not self.occs


@dataclass(frozen=True)
class Query:
    """A compiled query. Build it with :func:`cepvec.compile`."""

    text: str
    ast: A.QueryAst = field(repr=False)
    occs: tuple[Occ, ...] = field(repr=False)
    root: Node = field(repr=False)  # positive pattern with Neg items in place
    template: Template = field(repr=False)
    negations: tuple[Negation, ...] = field(repr=False)
    local: dict = field(repr=False)  # occ id -> tuple[Expr] (refs have var None)
    edges: dict = field(repr=False)  # (src occ, dst occ) -> tuple[EdgePred]
    equivalences: tuple[Equivalence, ...] = field(repr=False)
    group_by: tuple[str, ...] = ()
    group_labels: tuple[str, ...] = ()
    aggs: tuple[AggSpec, ...] = ()
    window: Window = Window("none")
    strategy: str = "skip-till-any-match"
    type_col: str = "type"
    # SASE+ v[1] / v[v.LEN] alone (Kleene v at the start / end of the pattern): predicates on the first
    # / last event of a match when it is bound to that occurrence (occ id -> tuple[Expr], var None);
    # inside the pattern they are edge predicates on the transitions entering / leaving v's run
    start_local: dict = field(default_factory=dict, repr=False)
    end_local: dict = field(default_factory=dict, repr=False)
    position_texts: tuple[str, ...] = ()  # the WHERE text of those predicates (explain, refusals)
    time_col: str = "time"
    # predicates over the whole run so far (RunPred), and the run state they read (RunSlot)
    run_preds: tuple = field(default=(), repr=False)
    run_slots: tuple = field(default=(), repr=False)
    # run predicates between never-adjacent variables: (the error engine="auto" raises in cepvec.run, start, end)
    not_adjacent: tuple = ()

    # ---------------------------------------------------------------- derived
    @property
    def partition_by(self) -> tuple[str, ...]:
        """Attributes every event of a match shares (GROUP-BY plus unqualified equivalence)."""
        out = list(self.group_by)
        for e in self.equivalences:
            if e.occs is None and e.attr not in out:
                out.append(e.attr)
        return tuple(out)

    @property
    def qualified_equivalences(self) -> tuple[Equivalence, ...]:
        return tuple(e for e in self.equivalences if e.occs is not None)

    @property
    def is_kleene(self) -> bool:
        return _has_kleene(self.root)

    @property
    def event_types(self) -> tuple[str, ...]:
        seen: list[str] = []
        for o in self.occs:
            for t in o.types:
                if t not in seen:
                    seen.append(t)
        return tuple(seen)

    @property
    def attributes(self) -> tuple[str, ...]:
        """Every data attribute the query reads (predicates, keys, aggregates)."""
        seen: list[str] = list(self.partition_by)
        for e in self.equivalences:
            if e.attr not in seen:
                seen.append(e.attr)
        exprs = [x for v in self.local.values() for x in v]
        # the predicates on the first and last event of a Kleene run (a1[1].x, a1[a1.LEN].x) too: the Arrow
        # kernel selects these columns, and dropped one (0 rows, or a missing column; a differential fuzzer)
        exprs += [x for d in (self.start_local, self.end_local) for v in d.values() for x in v]
        exprs += [p.expr for v in self.edges.values() for p in v]
        for x in exprs:
            for r in iter_refs(x):
                if r.attr not in seen:
                    seen.append(r.attr)
        for p in self.run_preds:  # $prev refs name run-state slots, not columns
            for r in iter_refs(p.expr):
                if r.var != "$prev" and r.attr not in seen:
                    seen.append(r.attr)
        for sl in self.run_slots:
            if sl.attr and sl.attr not in seen:
                seen.append(sl.attr)
        for a in self.aggs:
            if a.attr and a.attr not in seen:
                seen.append(a.attr)
        return tuple(seen)

    @property
    def output_columns(self) -> tuple[str, ...]:
        cols = list(self.group_labels)
        if self.window.kind == "slide":
            cols += ["window_start", "window_end"]
        elif self.window.kind == "emit":
            cols.append(self.time_col)
        cols += [a.label for a in self.aggs]
        return tuple(cols)

    def occ(self, i: int) -> Occ:
        return self.occs[i]

    def explain(self) -> str:
        """Human-readable plan: template, negations, predicates, window, engine.

        The text is written by :func:`cepvec.explain.explain`, a layer above the plan; the
        package installs it when it is imported (``EXPLAINER``), so the plan never imports it.
        """
        return EXPLAINER[0](self)

    def __str__(self) -> str:  # noqa: D105
        return self.text


def run_reason(q: Query) -> str:
    """Why an online path cannot run a query with run predicates (``q.run_preds``)."""
    return ("a predicate over the whole run, not a pair of adjacent events ("
            + "; ".join(dict.fromkeys(p.text for p in q.run_preds)) + ")")


def _has_kleene(node: Node) -> bool:
    if isinstance(node, Kleene):
        return True
    if isinstance(node, Seq):
        return any(_has_kleene(i) for i in node.items if not isinstance(i, Neg))
    return False


def iter_refs(expr):
    """Yield every :class:`~cepvec.lang.ast.Ref` inside an expression."""
    if isinstance(expr, A.Ref):
        yield expr
    elif isinstance(expr, (A.Bin, A.Cmp)):
        yield from iter_refs(expr.left)
        yield from iter_refs(expr.right)
    elif isinstance(expr, A.Unary):
        yield from iter_refs(expr.operand)
    elif isinstance(expr, A.BoolOp):
        for x in expr.items:
            yield from iter_refs(x)
    elif isinstance(expr, A.Call):
        for x in expr.args:
            yield from iter_refs(x)
    elif isinstance(expr, A.Equiv):
        for x in expr.items:
            yield from iter_refs(x)


def map_refs(expr, fn):
    """Rebuild ``expr`` with every Ref replaced by ``fn(ref)``."""
    if isinstance(expr, A.Ref):
        return fn(expr)
    if isinstance(expr, A.Bin):
        return A.Bin(expr.op, map_refs(expr.left, fn), map_refs(expr.right, fn), span=expr.span)
    if isinstance(expr, A.Cmp):
        return A.Cmp(expr.op, map_refs(expr.left, fn), map_refs(expr.right, fn), span=expr.span)
    if isinstance(expr, A.Unary):
        return A.Unary(expr.op, map_refs(expr.operand, fn), span=expr.span)
    if isinstance(expr, A.BoolOp):
        return A.BoolOp(expr.op, tuple(map_refs(x, fn) for x in expr.items), span=expr.span)
    return expr


"""Compiled queries: the logical plan every engine runs.

``compile_query`` turns the syntax tree into a :class:`Query`:

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

from . import ast as A
from .errors import CepvecQueryError, NotSupportedError

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
    time_col: str = "time"

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
        exprs += [p.expr for v in self.edges.values() for p in v]
        for x in exprs:
            for r in iter_refs(x):
                if r.attr not in seen:
                    seen.append(r.attr)
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
        """Human-readable plan: template, negations, predicates, window, engine."""
        from .explain import explain

        return explain(self)

    def __str__(self) -> str:  # noqa: D105
        return self.text


def _has_kleene(node: Node) -> bool:
    if isinstance(node, Kleene):
        return True
    if isinstance(node, Seq):
        return any(_has_kleene(i) for i in node.items if not isinstance(i, Neg))
    return False


def iter_refs(expr):
    """Yield every :class:`~cepvec.ast.Ref` inside an expression."""
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


# ------------------------------------------------------------------------ compile


def compile_query(text: str, *, type_col: str = "type", time_col: str = "time") -> Query:
    """Parse and compile query text into a :class:`Query` (see :func:`cepvec.compile`)."""
    from .parser import parse

    tree = parse(text)
    return _Compiler(tree, text, type_col, time_col).run()


class _Compiler:
    def __init__(self, tree: A.QueryAst, text: str, type_col: str, time_col: str):
        self.tree = tree
        self.text = text
        self.type_col = type_col
        self.time_col = time_col
        self.occs: list[Occ] = []
        self.neg_nodes: list[tuple[Node, int | None]] = []  # (body, parent)
        self.neg_spans: dict[int, tuple[int, int]] = {}  # negation id -> span of its NOT in the text
        self.errors: list[CepvecQueryError] = []

    def err(self, cls, message: str, span=None) -> CepvecQueryError:
        if span is not None and span != (0, 0):
            return cls(message, source=self.text, start=span[0], end=span[1])
        return cls(message)

    def quote(self, span) -> str:
        return " ".join(self.text[span[0]:span[1]].split())

    # ---------------------------------------------------------------- driver
    def run(self) -> Query:
        t = self.tree
        root = self.renumber_negations(self.normalize_top(t.pattern))
        self.normalized_root = root
        template = build_template(root)
        negations = self.build_negations(root)
        self._negations = negations
        names = self.name_table()
        local, edges, equivs = self.classify(names, template, negations)
        group_by, group_labels, aggs = self.resolve_returns(names)
        window = self.resolve_window()
        if self.errors:
            raise _combine(self.errors)
        return Query(
            text=self.text, ast=t, occs=tuple(self.occs), root=root, template=template,
            negations=tuple(negations), local=local, edges=edges, equivalences=tuple(equivs),
            group_by=group_by, group_labels=group_labels, aggs=aggs, window=window,
            strategy=t.strategy or "skip-till-any-match",
            type_col=self.type_col, time_col=self.time_col)

    # ---------------------------------------------------------------- pattern
    def normalize_top(self, p: A.Pattern) -> Node:
        if isinstance(p, A.PNot):
            raise self.err(CepvecQueryError,
                           "NOT cannot be the whole pattern: negation is only allowed inside SEQ(...), "
                           "between, before or after positive parts, e.g. SEQ(A, NOT C, B)", p.span)
        self.pattern_types = _pattern_types(p)  # every event type, wherever it occurs
        node = self.normalize(p, neg=None, top=True)
        self.check_neg_positions(node, top=True)
        return node

    def normalize(self, p: A.Pattern, neg: int | None, top: bool = False) -> Node:
        if isinstance(p, A.PType):
            explicit = p.var is not None
            name = p.var if explicit else p.types[0]
            if not explicit and len(p.types) > 1:
                name = "ANY(" + ",".join(p.types) + ")"
            for o in self.occs:
                if explicit and o.explicit and o.name == name:
                    raise self.err(CepvecQueryError,
                                   f"variable '{name}' is declared twice in the pattern; give each "
                                   "occurrence its own name, e.g. SEQ(A a1, B, A a2)", p.span)
            # a variable may not share its name with an event type of the pattern, wherever that
            # type occurs (before or after it); only ``A A``, naming the sole A by its type, is harmless
            if explicit and name in self.pattern_types and (
                    name not in p.types or self.pattern_types[name] > 1):
                raise self.err(CepvecQueryError,
                               f"variable '{name}' has the name of an event type used in the "
                               "pattern; choose another variable name", p.span)
            occ = Occ(len(self.occs), name, p.types, neg is not None, neg, explicit)
            self.occs.append(occ)
            return Leaf(occ.id)
        if isinstance(p, A.PKleene):
            if isinstance(p.body, A.PNot):
                raise self.err(CepvecQueryError,
                               "Kleene plus over a negation, (NOT P)+, means the same as NOT P; "
                               "write NOT P inside SEQ(...)", p.span)
            body = self.normalize(p.body, neg)
            # (P+)+ has exactly the matches of P+; keeping both would count each match once per
            # way of splitting it into iterations
            return body if isinstance(body, Kleene) else Kleene(body)
        if isinstance(p, A.PNot):
            if isinstance(p.body, A.PNot):
                raise self.err(CepvecQueryError, "double negation NOT NOT P is not allowed; write P", p.span)
            nid = len(self.neg_nodes)
            self.neg_nodes.append((None, neg))  # placeholder, filled below
            self.neg_spans[nid] = p.span
            body = self.normalize(p.body, nid)
            if not _has_positive(body):
                raise self.err(CepvecQueryError, "NOT needs a pattern with at least one event type", p.span)
            self.neg_nodes[nid] = (body, neg)
            return Neg(nid, body)
        if isinstance(p, A.PSeq):
            items: list[Node] = []
            for it in p.items:
                sub = self.normalize(it, neg)
                if isinstance(sub, Seq):
                    items.extend(sub.items)  # flatten SEQ without Kleene into its parent
                else:
                    items.append(sub)
            # two adjacent negations SEQ(P, NOT C, NOT D, Q) mean SEQ(P, NOT SEQ(C, D), Q)
            merged: list[Node] = []
            for it in items:
                if isinstance(it, Neg) and merged and isinstance(merged[-1], Neg):
                    prev = merged.pop()
                    nid = prev.id
                    body = Seq(_seq_items(prev.body) + _seq_items(it.body))
                    self.neg_nodes[nid] = (body, self.neg_nodes[nid][1])
                    self._reassign_neg(it.body, nid)
                    self.neg_spans[nid] = (self.neg_spans[nid][0], self.neg_spans[it.id][1])
                    self.neg_nodes[it.id] = (None, None)
                    merged.append(Neg(nid, body))
                else:
                    merged.append(it)
            if not any(not isinstance(x, Neg) for x in merged):
                raise self.err(CepvecQueryError,
                               "SEQ(...) needs at least one positive (non-negated) part", p.span)
            if len(merged) == 1:
                return merged[0]
            return Seq(tuple(merged))
        raise AssertionError(p)

    def _reassign_neg(self, node: Node, nid: int) -> None:
        for leaf in _leaves(node):
            o = self.occs[leaf]
            if o.neg is not None and self.neg_nodes[o.neg][1] == nid:
                continue
            self.occs[leaf] = Occ(o.id, o.name, o.types, True, nid, o.explicit)

    def check_neg_positions(self, node: Node, top: bool, inside: str | None = None) -> None:
        """NOT at the start or end of a SEQ is only meaningful for the whole pattern.

        ``inside`` names the construct a nested SEQ sits in ("Kleene plus" or "another NOT").
        """
        if isinstance(node, Seq):
            for k, it in enumerate(node.items):
                if isinstance(it, Neg):
                    if (k == 0 or k == len(node.items) - 1) and not top:
                        span = self.neg_spans.get(it.id)
                        where = "start" if k == 0 else "end"
                        what = self.quote(span) if span else "NOT"
                        raise self.err(
                            NotSupportedError,
                            f"not supported: {what} at the {where} of a SEQ nested inside {inside}; "
                            "docs/semantics.md defines negated start and end only for the whole pattern. "
                            "Move the NOT between two positive parts", span)
                    self.check_neg_positions(it.body, top=False, inside="another NOT")
                else:
                    self.check_neg_positions(it, top=False, inside=inside)
        elif isinstance(node, Kleene):
            self.check_neg_positions(node.body, top=False, inside="Kleene plus")
        elif isinstance(node, Neg):
            self.check_neg_positions(node.body, top=False, inside="another NOT")

    def build_negations(self, root: Node) -> list[Negation]:
        out: dict[int, Negation] = {}

        def walk(node: Node, parent: int | None):
            if isinstance(node, Seq):
                items = node.items
                for k, it in enumerate(items):
                    if isinstance(it, Neg):
                        prev = end_occ(items[k - 1]) if k > 0 else None
                        nxt = start_occ(items[k + 1]) if k + 1 < len(items) else None
                        out[it.id] = Negation(it.id, it.body, build_template(it.body), prev, nxt, parent)
                        walk(it.body, it.id)
                    else:
                        walk(it, parent)
            elif isinstance(node, Kleene):
                walk(node.body, parent)

        walk(root, None)
        return [out[i] for i in sorted(out)]

    def renumber_negations(self, root: Node) -> Node:
        """Number negations 0..k-1 in order of appearance (merging adjacent NOTs leaves gaps)
        and point every occurrence at its innermost negation, before anything refers to them."""
        counter = [0]

        def walk(node: Node, neg: int | None) -> Node:
            if isinstance(node, Leaf):
                o = self.occs[node.occ]
                self.occs[node.occ] = Occ(o.id, o.name, o.types, neg is not None, neg, o.explicit)
                return node
            if isinstance(node, Kleene):
                return Kleene(walk(node.body, neg))
            if isinstance(node, Seq):
                return Seq(tuple(walk(i, neg) for i in node.items))
            nid = counter[0]
            counter[0] += 1
            return Neg(nid, walk(node.body, nid))

        return walk(root, None)

    def name_table(self) -> dict[str, tuple[int, ...]]:
        names: dict[str, list[int]] = {}
        for o in self.occs:
            names.setdefault(o.name, []).append(o.id)
        # a type name also refers to its occurrences when no variable has that name
        types: dict[str, list[int]] = {}
        for o in self.occs:
            for t in o.types:
                types.setdefault(t, []).append(o.id)
        for t, ids in types.items():
            names.setdefault(t, ids)
        return {k: tuple(v) for k, v in names.items()}

    # ------------------------------------------------------------- predicates
    def classify(self, names, template: Template, negations: list[Negation]):
        local: dict[int, list[A.Expr]] = {o.id: [] for o in self.occs}
        edges: dict[tuple[int, int], list[EdgePred]] = {}
        equivs: list[Equivalence] = []
        all_trans = self.all_transitions(template, negations)

        def lookup(name: str, span) -> tuple[int, ...]:
            if name not in names:
                known = ", ".join(sorted({o.name for o in self.occs}))
                raise self.err(CepvecQueryError,
                               f"unknown variable '{name}' in WHERE; the pattern declares: {known}", span)
            return names[name]

        conjuncts = list(self.tree.where)
        self.rewrite_local: dict[int, list] = {}
        # equality chains that constrain every transition become equivalence tests
        conjuncts = self.rewrite_equalities(conjuncts, names, all_trans, template, equivs)

        for o, preds in self.rewrite_local.items():
            local[o].extend(preds)
        for c in conjuncts:
            try:
                self.classify_one(c, names, lookup, local, edges, equivs, all_trans)
            except CepvecQueryError as e:
                self.errors.append(e)
        return ({k: tuple(v) for k, v in local.items()},
                {k: tuple(v) for k, v in edges.items()}, equivs)

    def all_transitions(self, template: Template, negations: list[Negation]) -> list[Transition]:
        out = list(template.transitions)
        for n in negations:
            out.extend(n.template.transitions)
        return out

    def classify_one(self, c, names, lookup, local, edges, equivs, all_trans):
        text = self.quote(c.span)
        if isinstance(c, A.Equiv):
            for item in c.items:
                if isinstance(item, A.Cmp):  # [name = 'John']: a local predicate on every event
                    for o in self.occs:
                        local[o.id].append(map_refs(item, lambda r: A.Ref(None, r.attr, span=r.span)))
                    continue
                if item.var is None:
                    equivs.append(Equivalence(item.attr, None, self.quote(item.span)))
                else:
                    occs = lookup(item.var, item.span)
                    equivs.append(Equivalence(item.attr, frozenset(occs), self.quote(item.span)))
            return
        self.check_supported(c)
        refs = list(iter_refs(c))
        plain_vars = {r.var for r in refs if r.var is not None and not r.next and r.index in (None, "i")}
        next_vars = {r.var for r in refs if r.next}
        idx = {(r.var, r.index) for r in refs if r.index not in (None, "i")}
        idx_i = {r.var for r in refs if r.index == "i"}
        for v in plain_vars | next_vars | {v for v, _ in idx}:
            lookup(v, c.span)
        if not next_vars and not idx and len(plain_vars) <= 1:
            # local (vertex) predicate
            if plain_vars:
                (v,) = plain_vars
                targets = names[v]
            else:
                targets = tuple(o.id for o in self.occs)  # bare attributes: every event
            expr = map_refs(c, lambda r: A.Ref(None, r.attr, span=r.span))
            for o in targets:
                local[o].append(expr)
            return
        # edge predicate: work out (prev-name, next-name) role of each ref
        pairs = self.edge_roles(c, refs, plain_vars, next_vars, idx, idx_i, text)
        found = False
        for prev_name, next_name, role in pairs:
            for t in all_trans:
                if t.src in names[prev_name] and t.dst in names[next_name]:
                    expr = map_refs(c, lambda r, role=role: A.Ref(role(r), r.attr, span=r.span))
                    edges.setdefault((t.src, t.dst), []).append(EdgePred(expr, text))
                    found = True
        if not found:
            raise self.not_adjacent_error(c, text, pairs, names, {k for _, k in idx})

    def not_adjacent_error(self, c, text, pairs, names, kinds=frozenset()) -> CepvecQueryError:
        vs = sorted({p for p, _, _ in pairs} | {n for _, n, _ in pairs})
        neg = [v for v in vs if all(self.occs[o].negated for o in names[v])]
        pos = [v for v in vs if v not in neg]
        if neg and pos:
            # adjacent across the gap of its negation? then it is well formed but unsupported
            n_occ = self.occs[names[neg[0]][0]]
            borders = set()
            for n in self._negations:
                if n.id == n_occ.neg:
                    borders = {n.prev, n.next}
            if any(o in borders for v in pos for o in names[v]):
                return self.err(
                    NotSupportedError,
                    f"not supported: predicate {text} relates negated variable '{neg[0]}' to a positive "
                    "variable; only equality of one attribute across the whole pattern (an equivalence "
                    "test such as [id]) may involve a negated variable", c.span)
        if len(vs) == 1:  # v.x op NEXT(v).x or v[i-1]: v must follow itself
            (v,) = vs
            return self.err(
                CepvecQueryError,
                f"predicate {text} relates two consecutive {v} events, but {v} never follows itself in the "
                f"pattern (it would under Kleene plus: {self.occs[names[v][0]].types[0]}+ {v}), so it "
                "cannot be aggregated online", c.span)
        if kinds in ({"first"}, {"last"}):  # b[1] vs the variable before b+, b[b.LEN] vs the one after
            ((prev, nxt, _),) = pairs
            if kinds == {"first"}:
                return self.err(
                    CepvecQueryError,
                    f"predicate {text} compares the first {nxt} with {prev}, but {prev} never comes right "
                    f"before {nxt} in the pattern, so it cannot be aggregated online; {nxt}[1] may only be "
                    f"compared with the variable right before {nxt}", c.span)
            return self.err(
                CepvecQueryError,
                f"predicate {text} compares the last {prev} with {nxt}, but {nxt} never comes right after "
                f"{prev} in the pattern, so it cannot be aggregated online; {prev}[{prev}.LEN] may only be "
                f"compared with the variable right after {prev}", c.span)
        return self.err(
            CepvecQueryError,
            f"predicate {text} compares variables {' and '.join(vs)}, which are never adjacent in the "
            "pattern, so it cannot be aggregated online; predicates between different variables must "
            "relate an event and the one right after it in a match", c.span)

    def edge_roles(self, c, refs, plain_vars, next_vars, idx, idx_i, text):
        """Return [(prev_name, next_name, role(ref) -> '$prev'|'$next')]."""
        if next_vars:
            if len(next_vars) > 1:
                raise self.err(CepvecQueryError,
                               f"predicate {text} uses NEXT(...) of two different variables; use one", c.span)
            (w,) = next_vars
            others = plain_vars
            if len(others) != 1:
                raise self.err(CepvecQueryError,
                               f"predicate {text} must compare one variable v with NEXT(w): "
                               "v.attr op NEXT(w).attr", c.span)
            (v,) = others
            return [(v, w, lambda r: "$next" if r.next else "$prev")]
        if idx:
            kinds = {k for _, k in idx}
            vars_idx = {v for v, _ in idx}
            if kinds == {"i-1"} and len(vars_idx) == 1:
                (v,) = vars_idx
                if plain_vars - {v}:
                    raise self.err(NotSupportedError,
                                   f"not supported: predicate {text} mixes {v}[i-1] with another variable", c.span)
                return [(v, v, lambda r: "$prev" if r.index == "i-1" else "$next")]
            if kinds == {"first"} and len(vars_idx) == 1 and len(plain_vars - vars_idx) == 1:
                (b,) = vars_idx
                (a,) = plain_vars - vars_idx
                return [(a, b, lambda r, b=b: "$next" if r.var == b else "$prev")]
            if kinds == {"last"} and len(vars_idx) == 1 and len(plain_vars - vars_idx) == 1:
                (a,) = vars_idx
                (b,) = plain_vars - vars_idx
                return [(a, b, lambda r, a=a: "$prev" if r.var == a else "$next")]
            raise self.err(NotSupportedError,
                           f"not supported: predicate {text} constrains a specific element of a Kleene "
                           "array variable; cepvec supports only v[i] vs v[i-1], v[1] vs the variable "
                           "before the Kleene, and v[v.LEN] vs the variable after it", c.span)
        if len(plain_vars) != 2:
            vs = sorted(plain_vars)
            raise self.err(CepvecQueryError,
                           f"predicate {text} compares variables {', '.join(vs[:-1])} and {vs[-1]}, which are "
                           "never adjacent in the pattern all at once, so it cannot be aggregated online; an "
                           "edge predicate relates an event and the one right after it in a match", c.span)
        v, w = sorted(plain_vars)
        return [(v, w, lambda r, v=v: "$prev" if r.var == v else "$next"),
                (w, v, lambda r, w=w: "$prev" if r.var == w else "$next")]

    def check_supported(self, c) -> None:
        def walk(e):
            if isinstance(e, A.Call):
                raise self.err(NotSupportedError,
                               f"not supported: function call {self.quote(e.span)} in a predicate; "
                               "cepvec predicates use attributes, constants and + - * / % only", e.span)
            if isinstance(e, A.Ref) and e.index not in (None, "i", "i-1", "first", "last"):
                raise self.err(NotSupportedError,
                               f"not supported: array subscript {e.var}[{e.index}] in "
                               f"{self.quote(e.span)}", e.span)
            if isinstance(e, A.Equiv):
                raise self.err(CepvecQueryError,
                               "an equivalence test [...] must stand alone in WHERE, joined by AND", e.span)
            if isinstance(e, (A.Bin, A.Cmp)):
                walk(e.left)
                walk(e.right)
            elif isinstance(e, A.Unary):
                walk(e.operand)
            elif isinstance(e, A.BoolOp):
                for x in e.items:
                    walk(x)
        walk(c)
        if isinstance(c, (A.Num, A.Str, A.Ref, A.Bin)):
            raise self.err(CepvecQueryError,
                           f"WHERE expects a condition (a comparison such as S.price > 10), "
                           f"found {self.quote(c.span)}", c.span)

    def rewrite_equalities(self, conjuncts, names, all_trans, template: Template, equivs):
        """Equalities of one attribute that make every event of a match share it become ``[attr]``.

        All equalities ``v.attr = w.attr`` and ``v.attr = NEXT(w).attr`` on one attribute are judged
        together (``x.id = y.id = z.id``, ``a.id = c.id AND b.id = c.id``). They are rewritten to the
        equivalence test exactly when

        (a) they connect every positive occurrence, and every negated one too when any of them
            involves a negated variable (union-find over all of them); and
        (b) every transition of the positive template is constrained: covered by one of them as an
            edge predicate, or, in a pattern without Kleene plus (each variable is bound once per
            match), implied through (a) by transitivity.

        With Kleene plus a variable binds several events and ``A.id = B.id`` in ``SEQ(A+, B)``
        constrains only the ``A -> B`` pair, not ``A -> A``: (b) keeps it an edge predicate.
        Matches of one event (``A+``) have no transition, and an equivalence would still drop their
        null keys, so nothing is rewritten when the shortest match has fewer than two events.
        """
        cand: dict[str, list] = {}
        for c in conjuncts:
            if (isinstance(c, A.Cmp) and c.op == "=" and isinstance(c.left, A.Ref)
                    and isinstance(c.right, A.Ref) and c.left.attr == c.right.attr
                    and c.left.var is not None and c.right.var is not None
                    and c.left.index is None and c.right.index is None
                    and not c.left.next and c.left.var in names and c.right.var in names
                    and (c.left.var != c.right.var or c.right.next)):
                cand.setdefault(c.left.attr, []).append(c)
        if not cand or _min_length(self.normalized_root) < 2:
            # with one-event matches (A+) an equality constrains nothing on a lone event,
            # while an equivalence would still drop null keys: not the same query
            return conjuncts
        removed: set[int] = set()
        positive = [o.id for o in self.occs if not o.negated]
        negs = [o.id for o in self.occs if o.negated]
        kleene = _has_kleene(self.normalized_root)
        for attr, cs in cand.items():
            covered: set[tuple[int, int]] = set()
            parent = {o.id: o.id for o in self.occs}

            def find(x):
                while parent[x] != x:
                    parent[x] = parent[parent[x]]
                    x = parent[x]
                return x

            def union(x, y):
                parent[find(x)] = find(y)

            dangling = False
            for c in cs:
                a, b = names[c.left.var], names[c.right.var]
                if c.right.next:
                    # v = NEXT(w) relates only the pairs v -> w that are transitions
                    pairs = [(t.src, t.dst) for t in all_trans if t.src in a and t.dst in b]
                    dangling |= not pairs  # never adjacent: left for classify to report
                    for x, y in pairs:
                        union(x, y)
                else:
                    # v = w between two variables: every event of v equals every event of w
                    for x in a:
                        for y in b:
                            union(x, y)
                for t in template.transitions:
                    if c.right.next:
                        if t.src in a and t.dst in b:
                            covered.add((t.src, t.dst))
                    elif (t.src in a and t.dst in b) or (t.src in b and t.dst in a):
                        covered.add((t.src, t.dst))
            if dangling:
                continue
            # (a) every positive event is tied to every other
            if len({find(o) for o in positive}) > 1:
                continue
            # (b) every transition constrained: directly, or by transitivity when variables bind once
            if kleene and not all((t.src, t.dst) in covered for t in template.transitions):
                continue
            touched_neg = any(o in negs for c in cs for o in names[c.left.var] + names[c.right.var])
            if negs and touched_neg:
                if len({find(o.id) for o in self.occs}) != 1:
                    continue
                scope = None
            else:
                scope = None if not negs else frozenset(positive)
            text = " AND ".join(self.quote(c.span) for c in cs)
            equivs.append(Equivalence(attr, scope, text))
            removed.update(id(c) for c in cs)
            # a comparison with null is false: events with a null (or NaN) attr take part in no match
            notnull = A.Unary("NOTNULL", A.Ref(None, attr))
            for o in self.occs:
                if scope is None or o.id in scope:
                    self.rewrite_local.setdefault(o.id, []).append(notnull)
        return [c for c in conjuncts if id(c) not in removed]

    # ---------------------------------------------------------------- RETURN
    def resolve_returns(self, names):
        t = self.tree
        group_by = tuple(dict.fromkeys(t.group_by))
        labels = {g: g for g in group_by}
        aggs: list[AggSpec] = []
        agg_spans: list = []  # span of each aggregate in the text (None: the default COUNT(*))
        group_items: dict[str, A.GroupAttr] = {}  # GROUP-BY attribute -> its RETURN item
        items = t.returns or (A.Agg("COUNT", None, None, None, "COUNT(*)"),)
        for it in items:
            if isinstance(it, A.GroupAttr):
                if it.attr in group_by and (it.alias or it.attr not in group_items):
                    group_items[it.attr] = it  # the item whose label the column takes
                if it.attr not in group_by:
                    self.errors.append(self.err(
                        CepvecQueryError,
                        f"RETURN lists attribute '{it.attr}', which is not a GROUP-BY attribute; add "
                        f"GROUP-BY {it.attr} or aggregate it, e.g. MAX(v.{it.attr})", it.span))
                    continue
                if it.alias:
                    labels[it.attr] = it.alias
                continue
            if it.var is None:
                occs: tuple[int, ...] = ()
            else:
                if it.var not in names:
                    known = ", ".join(sorted({o.name for o in self.occs}))
                    self.errors.append(self.err(
                        CepvecQueryError,
                        f"unknown variable '{it.var}' in {it.label}; the pattern declares: {known}", it.span))
                    continue
                occs = names[it.var]
                if any(self.occs[o].negated for o in occs) and not all(self.occs[o].negated for o in occs):
                    t0 = self.occs[occs[0]].types[0]
                    self.errors.append(self.err(
                        CepvecQueryError,
                        f"{it.label} aggregates over '{it.var}', which names a positive and a negated (NOT) "
                        f"occurrence; name the positive one (e.g. {t0} {t0.lower()}1) and aggregate over "
                        "that variable", it.span))
                    continue
                if any(self.occs[o].negated for o in occs):
                    self.errors.append(self.err(
                        CepvecQueryError,
                        f"{it.label} aggregates over '{it.var}', which is negated (NOT); a negated event "
                        "is never part of a match, so it has nothing to aggregate", it.span))
                    continue
            aggs.append(AggSpec(it.func, occs, it.attr, it.alias or it.label))
            agg_spans.append((it.span if it.span != (0, 0) else None, it.alias))
        group_labels = tuple(labels[g] for g in group_by)
        # every output column with the construct that makes it: (label, quoted text, span or None)
        columns = [(labels[g], self.quote(group_items[g].span) if g in group_items else f"GROUP-BY {g}",
                    group_items[g].span if g in group_items else None) for g in group_by]
        columns += [(a.label, (self.quote(sp) if sp else a.label) + (f" AS {alias}" if alias else ""), sp)
                    for a, (sp, alias) in zip(aggs, agg_spans)]
        seen: dict[str, str] = {}
        for lab, what, span in columns:
            if lab in seen:
                self.errors.append(self.err(
                    CepvecQueryError,
                    f"two output columns are named '{lab}': {seen[lab]} and {what}; give one of them "
                    "another name with AS", span))
            else:
                seen[lab] = what
        return group_by, group_labels, tuple(aggs)

    def resolve_window(self) -> Window:
        t = self.tree
        if t.slide is not None and t.emit_changes:
            self.errors.append(self.err(
                NotSupportedError,
                "not supported: EMIT CHANGES with SLIDE; use WITHIN w EMIT CHANGES for continuous "
                "results, or WITHIN w SLIDE s for one row per window", t.slide.span))
        if t.emit_changes:
            return Window("emit", t.within)
        if t.slide is not None:
            return Window("slide", t.within, t.slide)
        if t.within is not None:
            return Window("within", t.within)
        return Window("none")


def _combine(errors: list[CepvecQueryError]) -> CepvecQueryError:
    """One exception for several problems: the first is located, three more are listed, the rest counted."""
    if len(errors) == 1:
        return errors[0]
    first = errors[0]
    more = len(errors) - 1
    rest = "\n".join(f"  - {e.message}" for e in errors[1:4])
    tail = f"\n  … and {more - 3} more" if more > 3 else ""
    exc = _combined_class(type(first))(f"{first.message}\n{more} more problem(s):\n{rest}{tail}",
                                       source=first.source, start=first.start, end=first.end)
    exc.errors = errors
    return exc


_COMBINED: dict[type, type] = {}


def _combined_class(cls: type) -> type:
    """``cls`` whose ``str()`` puts the position and caret right after the first problem's line.

    The caret belongs to the first problem, so it goes under that message, before the list of the
    others. The class keeps the name (and module) of ``cls``: tracebacks and ``type(e).__name__``
    read the same, and ``isinstance``/``except cls`` work as for ``cls``.
    """
    if cls not in _COMBINED:
        def __str__(self) -> str:
            text = cls.__str__(self)
            if self.line is None:
                return text
            head, sep, others = self.message.partition("\n")
            located = text[len(self.message):]  # " (line L, col C)\n  <source line>\n  <caret>"
            return f"{head}{located}{sep}{others}"

        def __reduce__(self):
            return (_rebuild_combined, (cls, self.message, self.source, self.start, self.end,
                                        getattr(self, "errors", None)))

        sub = type(cls.__name__, (cls,), {"__str__": __str__, "__reduce__": __reduce__,
                                          "__module__": cls.__module__, "__qualname__": cls.__qualname__,
                                          "__doc__": cls.__doc__})
        _COMBINED[cls] = sub
    return _COMBINED[cls]


def _rebuild_combined(cls, message, source, start, end, errors):
    exc = _combined_class(cls)(message, source=source, start=start, end=end)
    if errors is not None:
        exc.errors = errors
    return exc


def _pattern_types(p: A.Pattern) -> dict[str, int]:
    """Event type -> number of occurrences (type tests) naming it, negated ones included."""
    out: dict[str, int] = {}

    def walk(x):
        if isinstance(x, A.PType):
            for t in x.types:
                out[t] = out.get(t, 0) + 1
        elif isinstance(x, (A.PKleene, A.PNot)):
            walk(x.body)
        elif isinstance(x, A.PSeq):
            for it in x.items:
                walk(it)

    walk(p)
    return out


def _min_length(node: Node) -> int:
    """Fewest events in a match of ``node``."""
    if isinstance(node, Leaf):
        return 1
    if isinstance(node, Kleene):
        return _min_length(node.body)
    if isinstance(node, Seq):
        return sum(_min_length(i) for i in node.items if not isinstance(i, Neg))
    return 0


def _has_positive(node: Node) -> bool:
    if isinstance(node, Leaf):
        return True
    if isinstance(node, Kleene):
        return _has_positive(node.body)
    if isinstance(node, Seq):
        return any(_has_positive(i) for i in node.items if not isinstance(i, Neg))
    return False


def _seq_items(node: Node) -> tuple[Node, ...]:
    return node.items if isinstance(node, Seq) else (node,)


def _leaves(node: Node):
    if isinstance(node, Leaf):
        yield node.occ
    elif isinstance(node, Kleene):
        yield from _leaves(node.body)
    elif isinstance(node, Seq):
        for i in node.items:
            yield from _leaves(i)
    elif isinstance(node, Neg):
        yield from _leaves(node.body)


# ------------------------------------------------------------------- template


def start_occ(node: Node) -> int:
    if isinstance(node, Leaf):
        return node.occ
    if isinstance(node, Kleene):
        return start_occ(node.body)
    if isinstance(node, Seq):
        return start_occ(next(i for i in node.items if not isinstance(i, Neg)))
    raise AssertionError(node)


def end_occ(node: Node) -> int:
    if isinstance(node, Leaf):
        return node.occ
    if isinstance(node, Kleene):
        return end_occ(node.body)
    if isinstance(node, Seq):
        return end_occ([i for i in node.items if not isinstance(i, Neg)][-1])
    raise AssertionError(node)


def build_template(node: Node) -> Template:
    """GRETA Algorithm 1 on a positive pattern whose negations are skipped over."""
    states: list[int] = []
    trans: list[Transition] = []

    def walk(n: Node):
        if isinstance(n, Leaf):
            states.append(n.occ)
        elif isinstance(n, Kleene):
            walk(n.body)
            trans.append(Transition(end_occ(n.body), start_occ(n.body), "+"))
        elif isinstance(n, Seq):
            pos = [i for i in n.items if not isinstance(i, Neg)]
            for i in pos:
                walk(i)
            guards: list[int] = []
            prev: Node | None = None
            for it in n.items:
                if isinstance(it, Neg):
                    guards.append(it.id)
                    continue
                if prev is not None:
                    trans.append(Transition(end_occ(prev), start_occ(it), "SEQ", tuple(guards)))
                guards = []
                prev = it
        elif isinstance(n, Neg):
            pass

    walk(node)
    # merge duplicate transitions (same src/dst from different operators)
    merged: dict[tuple[int, int], Transition] = {}
    for t in trans:
        key = (t.src, t.dst)
        if key in merged:
            m = merged[key]
            kind = m.kind if m.kind == t.kind else "SEQ,+"
            merged[key] = Transition(t.src, t.dst, kind, tuple(sorted(set(m.guards) & set(t.guards))))
        else:
            merged[key] = t
    return Template(tuple(states), start_occ(node), end_occ(node), tuple(merged.values()))

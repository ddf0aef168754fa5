"""Run predicates: WHERE conjuncts that depend on the whole run so far, not on a pair of adjacent events.

SASE+ (Section 3.2, step 2) places each conjunct on the edge of its *last identifier*: the
automaton state where the last event it reads is selected. cepvec does the same on patterns that
are a SEQ of single events and Kleene plus of single events (``E x``, ``E+ a[]``), where every
variable's events form one contiguous block of the match, in pattern order:

* ``avg/min/max/sum/count(a[..i-1].attr)``, ``a[i]``, ``a[i-1]``: the take of ``a`` (the
  transition ``a -> a``, its 2nd and later events), against the events ``a`` took before;
* ``x.attr`` (a single-event ``x``) and ``a[1].attr``: the begin of ``x`` / ``a``;
* ``a[a.LEN].attr`` and ``a.LEN``: the end of ``a``'s run, i.e. the begin of the next variable
  (or the end of the match when ``a`` is last).

The conjunct is checked when the run takes its last identifier's event, against the run's state
(the values of SASE+ Section 5's computation state, :class:`cepvec.plan.ir.RunSlot`); an event
that fails it is not taken by that run (``docs/semantics.md`` 4.6).
"""

from __future__ import annotations

from cepvec.errors import NotSupportedError
from cepvec.lang import ast as A
from cepvec.plan.ir import Kleene, Leaf, Neg, RunPred, RunSlot, Seq

RUN_FUNCS = ("AVG", "MIN", "MAX", "SUM", "COUNT")


def is_len_ref(r: A.Ref, kleene_names: set[str]) -> bool:
    return r.var in kleene_names and r.attr.upper() == "LEN" and r.index is None and not r.next


def flat_items(root) -> list[tuple[int, bool]] | None:
    """``[(occ, is Kleene)]`` of a SEQ of single events and ``E+`` (negations skipped), or None."""
    items = root.items if isinstance(root, Seq) else (root,)
    out = []
    for it in items:
        if isinstance(it, Neg):
            continue
        if isinstance(it, Leaf):
            out.append((it.occ, False))
        elif isinstance(it, Kleene) and isinstance(it.body, Leaf):
            out.append((it.body.occ, True))
        else:
            return None
    return out


class RunPredicateClassifier:
    """Mixin of :class:`cepvec.plan.compile.Compiler` (uses ``occs``, ``err``, ``quote``,
    ``normalized_root``); fills ``run_preds`` and ``run_slots``."""

    def needs_run(self, c, kleene_names: set[str]) -> bool:
        """Does conjunct ``c`` read the run beyond a pair of adjacent events?"""
        found = False

        def walk(e):
            nonlocal found
            if isinstance(e, A.Call):  # other functions keep the general "function call" refusal
                if e.name.upper() in RUN_FUNCS or any(isinstance(a, A.Ref) and a.index == "..i-1" for a in e.args):
                    found = True
            elif isinstance(e, A.Ref) and (e.index == "..i-1" or is_len_ref(e, kleene_names)):
                found = True
            elif isinstance(e, (A.Bin, A.Cmp)):
                walk(e.left)
                walk(e.right)
            elif isinstance(e, A.Unary):
                walk(e.operand)
            elif isinstance(e, A.BoolOp):
                for x in e.items:
                    walk(x)
        walk(c)
        return found

    def slot(self, kind: str, occ: int, attr: str | None) -> str:
        slots = self.run_slots
        for s in slots:
            if (s.kind, s.occ, s.attr) == (kind, occ, attr):
                return s.name
        if kind == "avg":  # computed from a float sum and a count, kept before it
            self.slot("sumf", occ, attr)
            self.slot("count", occ, attr)
        name = f"__run{len(slots)}"
        slots.append(RunSlot(name, kind, occ, attr))
        return name

    def classify_run(self, c, text: str, names) -> None:
        """Place conjunct ``c`` (see the module docstring); raise a located error when it cannot be."""
        items = flat_items(self.normalized_root)
        if items is None:
            raise self.err(NotSupportedError,
                           f"not supported: predicate {text} depends on the whole run, which cepvec evaluates "
                           "only on patterns that are a SEQ of single events and Kleene plus of single events "
                           "(E x, E+ a[]), not inside a nested SEQ or Kleene", c.span)
        pos = {occ: j for j, (occ, _) in enumerate(items)}
        kleene = {occ for occ, k in items if k}
        kleene_names = {self.occs[o].name for o in kleene}

        def occ_of(name: str, span) -> int:
            occs = names.get(name, ())
            if any(self.occs[o].negated for o in occs):
                raise self.err(NotSupportedError,
                               f"not supported: predicate {text} depends on the run and reads negated variable "
                               f"'{name}'; a negated variable may only appear in equivalence tests and in edge "
                               "predicates with its neighbours", span)
            if len(occs) != 1:
                raise self.err(NotSupportedError,
                               f"not supported: predicate {text} names '{name}', which stands for "
                               f"{len(occs)} occurrences; give each occurrence its own variable", span)
            return occs[0]

        # pass 1: every reference's instantiation point (2j: begin of item j, 2j+1: a take of item j)
        refs: list[tuple[object, int, str, int]] = []  # (node, point, role, occ)

        def visit(e):
            if isinstance(e, A.Call):
                fn = e.name.upper()
                arg = e.args[0] if len(e.args) == 1 else None
                if fn not in RUN_FUNCS or not (isinstance(arg, A.Ref) and arg.index == "..i-1"):
                    raise self.err(NotSupportedError,
                                   f"not supported: {self.quote(e.span)} in predicate {text}; the functions in "
                                   "predicates are avg, min, max, sum and count over the earlier events of a "
                                   "Kleene variable, as in avg(a[..i-1].price)", e.span)
                o = occ_of(arg.var, arg.span)
                if o not in kleene:
                    raise self.err(NotSupportedError,
                                   f"not supported: {self.quote(e.span)}: '{arg.var}' is not a Kleene variable "
                                   f"(declare it as E+ {arg.var}[])", e.span)
                refs.append((e, 2 * pos[o] + 1, fn.lower(), o))
                return
            if isinstance(e, A.Ref):
                if e.next or e.var is None:
                    raise self.err(NotSupportedError,
                                   f"not supported: {self.quote(e.span)} in predicate {text}, which depends on the "
                                   "run; name the variable (v.attr, v[i].attr, v[1].attr, v[v.LEN].attr)", e.span)
                if is_len_ref(e, kleene_names):
                    o = occ_of(e.var, e.span)
                    refs.append((e, 2 * pos[o] + 2, "len", o))
                    return
                o = occ_of(e.var, e.span)
                k = o in kleene
                if e.index == "..i-1":
                    raise self.err(NotSupportedError,
                                   f"not supported: {self.quote(e.span)} outside an aggregate; write "
                                   f"avg({self.quote(e.span)}) (or min, max, sum, count)", e.span)
                if e.index in ("i", "i-1") and k:
                    refs.append((e, 2 * pos[o] + 1, "cur" if e.index == "i" else "last", o))
                elif e.index == "first" or (not k and e.index in (None, "last")):
                    refs.append((e, 2 * pos[o], "first", o))
                elif e.index == "last":
                    refs.append((e, 2 * pos[o] + 2, "last", o))
                else:
                    raise self.err(NotSupportedError,
                                   f"not supported: {self.quote(e.span)} in predicate {text}; "
                                   + (f"'{e.var}' is a Kleene variable: write {e.var}[i], {e.var}[1] or "
                                      f"{e.var}[{e.var}.LEN]" if k else f"'{e.var}' is a single event: write "
                                      f"{e.var}.{e.attr}"), e.span)
                return
            for x in _children(e):
                visit(x)
        visit(c)
        point = max(p for _, p, _, _ in refs)
        if point % 2 == 1:  # a take: every other reference must be known before it
            j = point // 2
            bad = [n for n, p, _, o in refs if p % 2 == 1 and o != items[j][0]]
            if bad:
                raise self.err(NotSupportedError,
                               f"not supported: predicate {text} iterates over two Kleene variables at once", c.span)
        else:
            j = point // 2
            late = [n for n, p, _, _ in refs if p % 2 == 1 and p // 2 >= j]
            if late:
                raise self.err(NotSupportedError,
                               f"not supported: predicate {text} mixes each event of a Kleene run "
                               f"({self.quote(late[0].span)}) with its end or a later variable", c.span)

        # pass 2: rewrite every reference to the event being taken ($next) or a slot of the run ($prev)
        def rewrite(n, p, role, o) -> A.Ref:
            span = n.span
            if role == "cur" or (p == point and role == "first" and point % 2 == 0):
                return A.Ref("$next", n.attr, span=span)
            if role == "len":
                return A.Ref("$prev", self.slot("len", o, None), span=span)
            if role in ("first", "last"):
                return A.Ref("$prev", self.slot(role if o in kleene else "last", o, n.attr), span=span)
            return A.Ref("$prev", self.slot(role, o, n.args[0].attr), span=span)

        table = {id(n): rewrite(n, p, role, o) for n, p, role, o in refs}
        expr = _replace(c, table)
        if point % 2 == 1:
            o = items[point // 2][0]
            at = (o, o)
        elif point == 0:  # only the first event: a local predicate, never routed here
            raise self.err(NotSupportedError, f"not supported: predicate {text}", c.span)
        elif point // 2 < len(items):
            at = (items[point // 2 - 1][0], items[point // 2][0])
        else:
            at = None
        self.run_preds.append(RunPred(expr, text, at))


class NegRunPredicateClassifier:
    """Predicates between a negated single event and positive variables (SASE's misplaced inventory).

    ``x.shelf_id = z.shelf_id`` with ``!(... z)`` at the end of ``SEQ(x, y, !z)``: an event ``z``
    blocks a match only when it passes the predicate against *that* match, so the negation is
    checked once the match is complete, against its state (``RunPred.at = ("NOT", negation id)``;
    ``docs/semantics.md`` 5).
    """

    def classify_neg_run(self, c, text: str, names, z: int) -> None:
        items = flat_items(self.normalized_root)
        neg = next(n for n in self._negations if n.id == self.occs[z].neg)
        if items is None or not isinstance(neg.node, Leaf) or neg.parent is not None:
            raise self.err(NotSupportedError,
                           f"not supported: predicate {text} relates a negated variable to positive ones; cepvec "
                           "runs that when the negation is one event (NOT E z) in a SEQ of single events and "
                           "Kleene plus of single events", c.span)
        kleene = {occ for occ, k in items if k}
        kleene_names = {self.occs[o].name for o in kleene}
        table = {}

        def visit(e):
            if isinstance(e, A.Ref):
                occs = names.get(e.var, ())
                if e.next or e.var is None or len(occs) != 1 or e.index in ("i", "i-1", "..i-1"):
                    raise self.err(NotSupportedError,
                                   f"not supported: {self.quote(e.span)} in predicate {text}, which relates a "
                                   "negated variable to the match; name each variable once (v.attr, v[1].attr, "
                                   "v[v.LEN].attr, v.LEN)", e.span)
                o = occs[0]
                if o == z:
                    table[id(e)] = A.Ref("$next", e.attr, span=e.span)
                elif self.occs[o].negated:
                    raise self.err(NotSupportedError,
                                   f"not supported: predicate {text} relates two negated variables", c.span)
                elif is_len_ref(e, kleene_names):
                    table[id(e)] = A.Ref("$prev", self.slot("len", o, None), span=e.span)
                elif o in kleene and e.index not in ("first", "last"):
                    raise self.err(NotSupportedError,
                                   f"not supported: {self.quote(e.span)} in predicate {text}; '{e.var}' is a "
                                   f"Kleene variable: write {e.var}[1] or {e.var}[{e.var}.LEN]", e.span)
                else:
                    kind = "first" if o in kleene and e.index == "first" else "last"
                    table[id(e)] = A.Ref("$prev", self.slot(kind, o, e.attr), span=e.span)
                return
            if isinstance(e, A.Call):
                raise self.err(NotSupportedError,
                               f"not supported: {self.quote(e.span)} in predicate {text}, which relates a negated "
                               "variable to the match", e.span)
            for x in _children(e):
                visit(x)
        visit(c)
        self.run_preds.append(RunPred(_replace(c, table), text, ("NOT", neg.id)))


def _children(e):
    if isinstance(e, (A.Bin, A.Cmp)):
        return (e.left, e.right)
    if isinstance(e, A.Unary):
        return (e.operand,)
    if isinstance(e, A.BoolOp):
        return e.items
    return ()


def _replace(e, table):
    if id(e) in table:
        return table[id(e)]
    if isinstance(e, A.Bin):
        return A.Bin(e.op, _replace(e.left, table), _replace(e.right, table), span=e.span)
    if isinstance(e, A.Cmp):
        return A.Cmp(e.op, _replace(e.left, table), _replace(e.right, table), span=e.span)
    if isinstance(e, A.Unary):
        return A.Unary(e.op, _replace(e.operand, table), span=e.span)
    if isinstance(e, A.BoolOp):
        return A.BoolOp(e.op, tuple(_replace(x, table) for x in e.items), span=e.span)
    return e

"""Predicate classes: each WHERE conjunct becomes a local (vertex), equivalence or edge predicate of
the template's transitions, or an error that says why it cannot be one."""

from __future__ import annotations


from cepvec.errors import CepvecQueryError, NotSupportedError
from cepvec.lang import ast as A
from cepvec.plan.ir import EdgePred, Equivalence, Negation, Template, Transition, iter_refs, map_refs
from cepvec.plan.runpreds import flat_items


class PredicateClassifier:
    """Mixin of :class:`cepvec.plan.compile.Compiler`: reads and extends its state (``text``, ``occs``,
    ``errors``, ``err``, ``quote``)."""

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
        self.start_local: dict[int, list] = {}
        self.end_local: dict[int, list] = {}
        self.position_texts: list[str] = []
        self._template = template
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
        kleene_names = {self.occs[t.src].name for t in all_trans if t.src == t.dst}
        if self.needs_run(c, kleene_names):
            negated = {r.var for r in iter_refs(c) if r.var in names and all(self.occs[o].negated for o in names[r.var])}
            if len(negated) == 1 and len(names[next(iter(negated))]) == 1:  # a.LEN against a negated z
                self.classify_neg_run(c, text, names, names[next(iter(negated))][0])
            else:
                self.classify_run(c, text, names)
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
        kinds = {k for _, k in idx}
        if not next_vars and not plain_vars and len(idx) == 1 and kinds in ({"first"}, {"last"}):
            self.classify_position(c, text, next(iter(idx))[0], kinds == {"first"}, names, local, edges,
                                   all_trans)
            return
        # edge predicate: work out (prev-name, next-name) role of each ref
        try:
            pairs = self.edge_roles(c, refs, plain_vars, next_vars, idx, idx_i, text)
        except CepvecQueryError as e:
            if len(plain_vars) > 2 and not next_vars and not idx and self.route_negated(c, text, names, plain_vars, e):
                return
            if type(e) is CepvecQueryError and len(plain_vars) > 2 and not next_vars and not idx \
                    and flat_items(self.normalized_root) is not None \
                    and not any(self.occs[o].negated for v in plain_vars for o in names[v]):
                self.classify_run(c, text, names)  # three or more variables: a predicate over the run
                self.not_adjacent.append((e.message, e.start, e.end))
                return
            raise
        found = False
        for prev_name, next_name, role in pairs:
            for t in all_trans:
                if t.src in names[prev_name] and t.dst in names[next_name]:
                    expr = map_refs(c, lambda r, role=role: A.Ref(role(r), r.attr, span=r.span))
                    edges.setdefault((t.src, t.dst), []).append(EdgePred(expr, text))
                    found = True
        if not found:
            err = self.not_adjacent_error(c, text, pairs, names, {k for _, k in idx})
            vs = {p for p, _, _ in pairs} | {n for _, n, _ in pairs}
            if self.route_negated(c, text, names, vs, err):
                return
            if type(err) is CepvecQueryError and len(vs) > 1 and flat_items(self.normalized_root) is not None \
                    and not any(self.occs[o].negated for v in vs for o in names[v]):
                # never adjacent: a predicate over the run (the match engine checks it, docs/semantics.md 4.2)
                self.classify_run(c, text, names)
                self.not_adjacent.append((err.message, err.start, err.end))
                return
            raise err

    def classify_position(self, c, text, v, first: bool, names, local, edges, all_trans) -> None:
        """SASE+ ``v[1].a op k`` / ``v[v.LEN].a op k`` alone: the first / last event of v's Kleene run.

        The run of a Kleene v starts on every transition into v from another state (an edge
        predicate on its next event) or at the start of a match (``start_local``), and ends on
        every transition from v to another state (on its previous event) or at the end of a match
        (``end_local``). Without Kleene, v[1] and v[v.LEN] are v: a local predicate.
        """
        occs = names[v]
        if any(self.occs[o].negated for o in occs):
            raise self.err(NotSupportedError,
                           f"not supported: predicate {text} constrains an element of negated variable '{v}'",
                           c.span)
        plain = map_refs(c, lambda r: A.Ref(None, r.attr, span=r.span))
        kleene = [o for o in occs if any(t.src == o and t.dst == o for t in all_trans)]
        for o in occs:
            if o not in kleene:
                local[o].append(plain)
        if not kleene:
            return
        role = "$next" if first else "$prev"
        expr = map_refs(c, lambda r: A.Ref(role, r.attr, span=r.span))
        for t in all_trans:
            if t.src != t.dst and (t.dst if first else t.src) in kleene:
                edges.setdefault((t.src, t.dst), []).append(EdgePred(expr, text))
        for o in kleene:
            if o == (self._template.start if first else self._template.end):
                (self.start_local if first else self.end_local).setdefault(o, []).append(plain)
                if text not in self.position_texts:
                    self.position_texts.append(text)

    def route_negated(self, c, text, names, vs, err) -> bool:
        """A predicate between one negated variable and positive ones becomes a condition of the
        negation on the match (:class:`cepvec.plan.runpreds.NegRunPredicateClassifier`); True if so."""
        neg = [v for v in vs if all(self.occs[o].negated for o in names[v])]
        if len(neg) != 1 or len(vs) < 2 or len(names[neg[0]]) != 1 or flat_items(self.normalized_root) is None:
            return False
        if any(self.occs[o].negated for v in vs if v != neg[0] for o in names[v]):
            return False
        self.classify_neg_run(c, text, names, names[neg[0]][0])
        if type(err) is CepvecQueryError:  # never adjacent (not bordering the negation's gap): 4.2
            self.not_adjacent.append((err.message, err.start, err.end))
        return True

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
                           "array variable; cepvec supports only v[i] vs v[i-1], v[1] alone or vs the "
                           "variable before the Kleene, and v[v.LEN] alone or vs the variable after it", c.span)
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

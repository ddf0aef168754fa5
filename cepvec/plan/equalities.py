"""Equality chains ``a.id = b.id = c.id`` that constrain every transition become equivalence tests
(``[id]``), so that engines partition by them instead of testing each edge."""

from __future__ import annotations


from cepvec.lang import ast as A
from cepvec.plan.ir import _has_kleene, Equivalence, Template
from cepvec.plan.template import _min_length


class EqualityRewriter:
    """Mixin of :class:`cepvec.plan.compile.Compiler`: reads and extends its state (``text``, ``occs``,
    ``errors``, ``err``, ``quote``)."""

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

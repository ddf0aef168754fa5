"""Pattern normalisation: nested SEQ flattened, adjacent NOTs merged, occurrences numbered, negations
placed and checked (the first step of :func:`cepvec.plan.compile.compile_query`)."""

from __future__ import annotations


from cepvec.errors import CepvecQueryError, NotSupportedError
from cepvec.lang import ast as A
from cepvec.plan.ir import Kleene, Leaf, Neg, Negation, Node, Occ, Seq
from cepvec.plan.template import _leaves, _has_positive, _pattern_types, _seq_items, build_template, end_occ, start_occ


class Normalizer:
    """Mixin of :class:`cepvec.plan.compile.Compiler`: reads and extends its state (``text``, ``occs``,
    ``errors``, ``err``, ``quote``)."""

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

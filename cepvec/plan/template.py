"""The GRETA template of a normalised pattern (Algorithm 1, with Section 9's repeated types).

States are occurrences; transitions are ``SEQ`` and ``+`` edges, each SEQ
transition knowing the negations that guard it.
"""

from __future__ import annotations

from cepvec.lang import ast as A
from cepvec.plan.ir import Kleene, Leaf, Neg, Node, Seq, Template, Transition


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

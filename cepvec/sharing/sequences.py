"""Which queries share: fixed-length SEQ patterns as type sequences, sharing classes, executor support."""

from __future__ import annotations

import math
from fractions import Fraction

from cepvec.lang.render import render_plan_expr
from cepvec.plan.ir import Leaf, Neg, Query, Seq, run_reason
from cepvec.runtime.prepare import UNIT_NS


#: most panes per window (counters per partition and node) the shared executor keeps
MAX_PANES = 4096


def _sequence(q: Query) -> tuple[tuple[int, ...], dict[int, tuple[int, ...]], tuple[int, ...]] | None:
    """``(positions, guards, start)`` of a fixed-length SEQ of single-type occurrences: the positive
    occurrence ids, per position the negated occurrences right after it (``SEQ(A, NOT N, B)``:
    ``{A: (N,)}``; after the last position: a negated end), and the negated occurrences before the
    first position (a negated start). Negations must each be one event type; else None (a negated
    sequence or choice of types)."""
    if q.is_kleene or q.edges:
        return None
    root = q.root
    items = root.items if isinstance(root, Seq) else (root,)
    out: list[int] = []
    guards: dict[int, list[int]] = {}
    start: list[int] = []
    for it in items:
        if isinstance(it, Neg):
            if not isinstance(it.body, Leaf) or len(q.occs[it.body.occ].types) != 1:
                return None  # a negated sequence or choice of types
            (guards.setdefault(out[-1], []) if out else start).append(it.body.occ)
            continue
        if not isinstance(it, Leaf):
            return None
        occ = q.occs[it.occ]
        if len(occ.types) != 1 or occ.negated:
            return None
        out.append(it.occ)
    if not out:
        return None
    return tuple(out), {k: tuple(v) for k, v in guards.items()}, tuple(start)


def positions_of(q: Query) -> tuple[int, ...] | None:
    """The positive occurrence ids of a fixed-length SEQ of single-type occurrences (negations only of
    one event type after a position), else None."""
    seq = _sequence(q)
    return None if seq is None else seq[0]


def negated_of(q: Query) -> tuple[int, ...]:
    """The negated occurrences of a query :func:`positions_of` accepts."""
    seq = _sequence(q)
    return () if seq is None else seq[2] + tuple(o for g in seq[1].values() for o in g)


def sequence_of(q: Query) -> tuple[str, ...] | None:
    """The event types of the positions of a fixed-length SEQ (:func:`positions_of`), else None."""
    pos = positions_of(q)
    return None if pos is None else tuple(q.occs[o].types[0] for o in pos)


def local_key(q: Query, occ: int) -> tuple[str, ...]:
    """The local predicates of occurrence ``occ`` as sorted distinct texts (a conjunction: order and
    repeats do not matter); ``()`` without one."""
    return tuple(sorted({render_plan_expr(x) for x in q.local.get(occ, ())}))


def steps_of(q: Query) -> tuple[tuple[str, tuple[str, ...], tuple, tuple], ...] | None:
    """Per position of the SEQ its (event type, :func:`local_key`, guard, start guard): the trie's
    symbols, else None. The guard is the set of ``(type, local_key)`` of the negations between this
    position and the next (``SEQ(A, NOT N, B)``: A's guard is ``(("N", ()),)``), sorted; the start
    guard, on the first position only, those before it (``SEQ(NOT N, A, B)``); ``()`` without one."""
    seq = _sequence(q)
    if seq is None:
        return None
    pos, guards, start = seq

    def kinds(occs):
        return tuple(sorted({(q.occs[n].types[0], local_key(q, n)) for n in occs}))

    return tuple((q.occs[o].types[0], local_key(q, o), kinds(guards.get(o, ())), kinds(start) if j == 0 else ())
                 for j, o in enumerate(pos))


def symbol(step: tuple) -> str:
    """A step as text: ``A``, ``A[x > 1]`` with a local predicate, ``A NOT N`` when a negation follows
    it, ``NOT N A`` when one comes before it (the optimizer's and explain's alphabet)."""
    t, key = step[0], step[1]
    text = f"{t}[{' AND '.join(key)}]" if key else t
    for nt, nkey in (step[2] if len(step) > 2 else ()):
        text += f" NOT {symbol((nt, nkey))}"
    for nt, nkey in (step[3] if len(step) > 3 else ()):
        text = f"NOT {symbol((nt, nkey))} {text}"
    return text


def symbols_of(q: Query) -> tuple[str, ...] | None:
    """The SEQ as symbols: two positions are the same symbol when type, local predicates and the
    negations that follow agree."""
    steps = steps_of(q)
    return None if steps is None else tuple(symbol(x) for x in steps)


def why_not_sharable(q: Query) -> str | None:
    """Why ``q`` cannot share sub-patterns with other queries (None: it can)."""
    if q.is_kleene:
        return "Kleene pattern"
    if q.edges:
        return "predicates between adjacent events"
    if q.qualified_equivalences:
        return "qualified equivalence"
    if q.negations and _sequence(q) is None and sequence_of_positives(q):
        return "negation of a sequence or of several types"
    if sequence_of(q) is None:
        return "not a SEQ of single event types"
    if len(sequence_of(q)) < 2:
        return "a single event type"
    return None


def sequence_of_positives(q: Query) -> bool:
    """Whether the positive items of ``q`` are single-type occurrences in one SEQ (whatever its
    negations): then only the negations keep it from sharing."""
    root = q.root
    items = root.items if isinstance(root, Seq) else (root,)
    pos = [it for it in items if not isinstance(it, Neg)]
    return bool(pos) and all(isinstance(it, Leaf) and len(q.occs[it.occ].types) == 1 for it in pos)


def _duration(d) -> tuple | None:
    """A duration as (nanoseconds, "abs") or (value, None) for a bare number (in the column's unit)."""
    if d is None:
        return None
    if d.unit is None:
        return (Fraction(str(d.value)), None)
    return (Fraction(str(d.value)) * UNIT_NS[d.unit], "abs")


def _gcd(a: Fraction, b: Fraction) -> Fraction:
    """The largest duration both are whole multiples of (the executor's pane length)."""
    return Fraction(math.gcd(a.numerator * b.denominator, b.numerator * a.denominator), a.denominator * b.denominator)


def window_key(q: Query) -> tuple:
    """The window of ``q`` with durations compared exactly (``10 min`` equals ``600 s``)."""
    return (q.window.kind, _duration(q.window.within), _duration(q.window.slide))


def class_key(q: Query) -> tuple:
    """Queries share only with queries of the same key: columns, window, keys, strategy. Local predicates
    are part of the symbols (:func:`symbols_of`): prefixes share where types and predicates agree."""
    return (q.type_col, q.time_col, window_key(q), q.group_by, q.partition_by, q.strategy)


def executor_support(q: Query) -> str | None:
    """Why the shared executor cannot run ``q`` (None: it can)."""
    why = why_not_sharable(q)
    if why is not None:
        return why
    seq = _sequence(q)
    if q.window.kind == "within" and seq and seq[2] and seq[1].get(seq[0][-1]):
        return ("a negated start and a negated end under WITHIN alone, where the end's reset would take back "
                "matches the start kept out of the total")
    if q.window.kind == "slide":
        (w, wu), (sl, su) = _duration(q.window.within), _duration(q.window.slide)
        panes = w / _gcd(w, sl) if wu == su else None
        if panes is None or panes > MAX_PANES:
            return (f"WITHIN is {panes} panes of gcd(WITHIN, SLIDE) (the shared executor keeps at most {MAX_PANES})"
                    if panes is not None else "WITHIN and SLIDE mix a bare number and a unit")
    pos = positions_of(q)
    for a in q.aggs:
        if a.func in ("MIN", "MAX") and (_sequence(q) or ((), {}, ()))[1]:
            return ("MIN / MAX with a negation after a position (it takes counts back; a minimum cannot be "
                    "taken back)")
        if not a.star and (len(a.occs) != 1 or a.occs[0] not in pos):
            return f"{a.label} does not read one position of the SEQ"
    if q.strategy != "skip-till-any-match":
        return f"event selection {q.strategy}"
    if q.run_preds:
        return run_reason(q)
    return None

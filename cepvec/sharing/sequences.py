"""Which queries share: fixed-length SEQ patterns as type sequences, sharing classes, executor support."""

from __future__ import annotations

import math
from fractions import Fraction

from cepvec.lang.render import render_plan_expr
from cepvec.plan.ir import Leaf, Query, Seq, run_reason
from cepvec.runtime.prepare import UNIT_NS


#: most panes per window (counters per partition and node) the shared executor keeps
MAX_PANES = 4096


def positions_of(q: Query) -> tuple[int, ...] | None:
    """The occurrence ids of a fixed-length SEQ of single-type occurrences (no negation), else None."""
    if q.negations or q.is_kleene or q.edges:
        return None
    root = q.root
    items = root.items if isinstance(root, Seq) else (root,)
    out = []
    for it in items:
        if not isinstance(it, Leaf):
            return None
        occ = q.occs[it.occ]
        if len(occ.types) != 1 or occ.negated:
            return None
        out.append(it.occ)
    return tuple(out)


def sequence_of(q: Query) -> tuple[str, ...] | None:
    """The event types of a fixed-length SEQ of single-type occurrences (no negation), else None."""
    pos = positions_of(q)
    return None if pos is None else tuple(q.occs[o].types[0] for o in pos)


def local_key(q: Query, occ: int) -> tuple[str, ...]:
    """The local predicates of occurrence ``occ`` as sorted distinct texts (a conjunction: order and
    repeats do not matter); ``()`` without one."""
    return tuple(sorted({render_plan_expr(x) for x in q.local.get(occ, ())}))


def steps_of(q: Query) -> tuple[tuple[str, tuple[str, ...]], ...] | None:
    """Per position of the SEQ its (event type, :func:`local_key`): the trie's symbols, else None."""
    pos = positions_of(q)
    return None if pos is None else tuple((q.occs[o].types[0], local_key(q, o)) for o in pos)


def symbol(step: tuple[str, tuple[str, ...]]) -> str:
    """A step as text: ``A``, or ``A[x > 1]`` with a local predicate (the optimizer's and explain's alphabet)."""
    t, key = step
    return f"{t}[{' AND '.join(key)}]" if key else t


def symbols_of(q: Query) -> tuple[str, ...] | None:
    """The SEQ as symbols: two positions are the same symbol when type and local predicates agree."""
    steps = steps_of(q)
    return None if steps is None else tuple(symbol(x) for x in steps)


def why_not_sharable(q: Query) -> str | None:
    """Why ``q`` cannot share sub-patterns with other queries (None: it can)."""
    if q.is_kleene:
        return "Kleene pattern"
    if q.negations:
        return "negation"
    if q.edges:
        return "predicates between adjacent events"
    if q.qualified_equivalences:
        return "qualified equivalence"
    if sequence_of(q) is None:
        return "not a SEQ of single event types"
    if len(sequence_of(q)) < 2:
        return "a single event type"
    return None


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
    if q.window.kind not in ("slide", "none"):
        return f"window {q.window.kind} (the shared executor runs WITHIN ... SLIDE and no window)"
    if q.window.kind == "slide":
        (w, wu), (sl, su) = _duration(q.window.within), _duration(q.window.slide)
        panes = w / _gcd(w, sl) if wu == su else None
        if panes is None or panes > MAX_PANES:
            return (f"WITHIN is {panes} panes of gcd(WITHIN, SLIDE) (the shared executor keeps at most {MAX_PANES})"
                    if panes is not None else "WITHIN and SLIDE mix a bare number and a unit")
    if any(not a.star for a in q.aggs):
        return "aggregates other than COUNT(*)"
    if q.strategy != "skip-till-any-match":
        return f"event selection {q.strategy}"
    if q.run_preds:
        return run_reason(q)
    return None

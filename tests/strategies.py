"""Hypothesis strategies for cepvec tests: tiny event streams and query texts.

* :func:`streams` — 0–8 events, types from ``ABCD``, integer times 0..7
  (non-decreasing, ties allowed), ``id`` (0/1 or null), ``x`` (small int or
  null), ``v`` (float, sometimes NaN).
* :func:`query_and_stream` — a query and a stream over mostly its own types.
* :func:`queries` — query text drawn from a grammar of pattern shapes
  (single type, Kleene, SEQ, nested Kleene, negation at start / middle / end
  including ``NOT SEQ(C, D)`` and nested ``NOT SEQ(C, NOT E, D)``, repeated
  types with explicit variables), local / edge / equivalence predicates,
  GROUP-BY, every window form (none, WITHIN, WITHIN + EMIT CHANGES, bare
  EMIT CHANGES, SLIDE <= and > WITHIN) and the six aggregates. Predicates and
  aggregates are chosen from the compiled pattern (its variables and
  transitions), so almost every drawn query compiles; the rest are filtered
  with ``assume``.
"""

from __future__ import annotations

import itertools
import os

import polars as pl
import pytest
from hypothesis import assume
from hypothesis import strategies as st

import cepvec
from cepvec.errors import CepvecError

# --------------------------------------------------------------------------- test profiles
# The default profile keeps the whole suite under 5 minutes on 2 cores; ``pytest --slow``
# (tests/conftest.py sets CEPVEC_TESTS=slow) runs the exhaustive profile: the tests marked
# ``slow``, full Hypothesis example counts, exhaustive sweeps one event longer, and every pair
# of the sweeps parametrised with :func:`half_of_pairs`.
SLOW = os.environ.get("CEPVEC_TESTS") == "slow"


def examples(n: int) -> int:
    """Hypothesis ``max_examples``: ``n`` in the slow profile, a quarter (at least 25) by default."""
    return n if SLOW else max(25, n // 4)


def sweep_size(n: int) -> int:
    """Longest stream of an exhaustive sweep: ``n`` in the slow profile, ``n - 1`` by default."""
    return n if SLOW else n - 1


def half_of_pairs(xs, ys, keep=lambda i, j: (i + j) % 2 == 0, ids=None) -> list:
    """``pytest.param(x, y)`` for every pair of ``xs`` and ``ys`` (for ``pytest.mark.parametrize`` of two
    names), those ``keep(i, j)`` rejects marked ``slow``: the default profile runs half of the pairs,
    alternating, so every x and every y still runs; ``--slow`` runs every pair. ``ids(x, y)``: a test id."""
    return [pytest.param(x, y, marks=[] if keep(i, j) else [pytest.mark.slow], id=ids(x, y) if ids else None)
            for i, x in enumerate(xs) for j, y in enumerate(ys)]


TYPES = "ABCD"
SCHEMA = {"type": pl.String, "time": pl.Int64, "id": pl.Int64, "x": pl.Int64, "v": pl.Float64}
FLOATS = (-1.5, 0.0, 0.25, 1.0, 2.5, 4.0, float("nan"))  # NaN acts as null (docs/semantics.md 2.4)
#: with infinities, which are values (docs/semantics.md 2.5)
FLOATS_INF = FLOATS + (float("inf"), float("-inf"))


# --------------------------------------------------------------------------- streams
def make_frame(events: list[tuple]) -> pl.DataFrame:
    """``[(type, time, id, x, v), ...]`` as a Polars DataFrame with the test schema."""
    cols = {k: [e[j] for e in events] for j, k in enumerate(SCHEMA)}
    return pl.DataFrame(cols, schema=SCHEMA)


@st.composite
def event_lists(draw, max_events: int = 8, max_time: int = 7, types=TYPES, floats=FLOATS):
    # weighted towards longer streams: short ones rarely hold a match
    n = min(max_events, draw(st.sampled_from([0, 1, 2, 3, 4, 5, 6, 6, 7, 7, 8, 8, 8])))
    times = sorted(draw(st.lists(st.integers(0, max_time), min_size=n, max_size=n)))
    out = []
    for t in times:
        out.append((
            draw(st.sampled_from(sorted(types))),
            t,
            draw(st.one_of(st.sampled_from([0, 1]), st.none()) if draw(st.integers(0, 5)) else st.none()),
            draw(st.sampled_from([-1, 0, 1, 2, 3, None])),
            draw(st.sampled_from(floats)),
        ))
    return out


def streams(max_events: int = 8, max_time: int = 7, types=TYPES, floats=FLOATS):
    """Small event streams as Polars DataFrames (types drawn from ``types``, ``v`` from ``floats``)."""
    return event_lists(max_events, max_time, types, floats).map(make_frame)


# --------------------------------------------------------------------------- patterns
class _Names:
    """Hands out explicit variable names a1, b2, ... (never a type name)."""

    def __init__(self):
        self.k = 0

    def __call__(self, t: str) -> str:
        self.k += 1
        return f"{t.lower()}{self.k}"


@st.composite
def _atom(draw, names: _Names, kleene: bool = True):
    """``T``, ``T v``, ``T+`` or ``T v+``."""
    t = draw(st.sampled_from(TYPES))
    var = f" {names(t)}" if draw(st.integers(0, 3)) == 0 else ""
    plus = "+" if kleene and draw(st.booleans()) else ""
    return f"{t}{var}{plus}"


@st.composite
def _neg_body(draw):
    """Body of a NOT: a type, ``T+``, ``SEQ(T, T)`` or nested ``SEQ(T, NOT T, T)``."""
    t = lambda: draw(st.sampled_from(TYPES))  # noqa: E731
    kind = draw(st.sampled_from(["type", "type", "kleene", "seq", "nested"]))
    if kind == "type":
        return t()
    if kind == "kleene":
        return f"{t()}+"
    if kind == "seq":
        return f"SEQ({t()}, {t()})"
    return f"SEQ({t()}, NOT {t()}, {t()})"


@st.composite
def patterns(draw, kleene_of_kleene: bool = True, many_negations: bool = True):
    """Pattern text from a grammar of shapes.

    ``kleene_of_kleene`` allows ``(A+)+``-like shapes; ``many_negations``
    allows a negation in several places of one SEQ (e.g. two adjacent NOTs
    in one gap and another NOT later). Both exist as switches so that a
    search for new bugs can leave out constructs with a known one.
    """
    names = _Names()
    shapes = ["single", "kleene", "seq", "seq", "seq", "nested_kleene", "seq_nested", "repeated", "neg", "neg",
              "neg", "neg_in_kleene"]
    if kleene_of_kleene:
        shapes.append("kleene_of_kleene")
    shape = draw(st.sampled_from(shapes))
    if shape == "single":
        return draw(_atom(names, kleene=False))
    if shape == "kleene":
        return f"{draw(_atom(names, kleene=False))}+"
    if shape == "kleene_of_kleene":
        inner = draw(st.sampled_from(["{a}+", "SEQ({a}+)", "SEQ({a}, {b}+)+"]))
        inner = inner.format(a=draw(_atom(names, kleene=False)), b=draw(_atom(names, kleene=False)))
        outer = f"({inner})+"
        if draw(st.booleans()):
            return outer
        other = draw(_atom(names))
        return f"SEQ({other}, {outer})" if draw(st.booleans()) else f"SEQ({outer}, {other})"
    if shape == "seq":
        items = draw(st.lists(_atom(names), min_size=2, max_size=3))
        return f"SEQ({', '.join(items)})"
    if shape == "nested_kleene":
        a, b = draw(_atom(names)), draw(_atom(names, kleene=False))
        return f"(SEQ({a}, {b}))+"
    if shape == "seq_nested":
        a, b, c = draw(_atom(names, kleene=False)), draw(_atom(names)), draw(_atom(names, kleene=False))
        inner = f"(SEQ({b}, {c}))+"
        return f"SEQ({a}, {inner})" if draw(st.booleans()) else f"SEQ({inner}, {a})"
    if shape == "repeated":
        t = draw(st.sampled_from(TYPES))
        other = draw(st.sampled_from(TYPES))
        p1 = "+" if draw(st.booleans()) else ""
        p2 = "+" if draw(st.booleans()) else ""
        return f"SEQ({t} {names(t)}{p1}, {other}, {t} {names(t)}{p2})"
    if shape == "neg_in_kleene":
        a, b = draw(_atom(names)), draw(_atom(names, kleene=False))
        n = draw(st.sampled_from(TYPES))
        return f"(SEQ({a}, NOT {n}, {b}))+"
    # negation at the start, in the middle (possibly two adjacent NOTs) and / or at the end
    pos = draw(st.lists(_atom(names), min_size=1, max_size=3))
    where = draw(st.sampled_from(["start", "middle", "end"] + (["several"] if many_negations else [])))
    start = where == "start" or (where == "several" and draw(st.booleans()))
    end = where == "end" or (where == "several" and draw(st.booleans()))
    middle = where == "middle" or (where == "several" and draw(st.booleans()))
    if where == "several" and not (start or end or middle):
        middle = True
    if middle and len(pos) == 1:
        pos.append(draw(_atom(names)))
    gaps = []
    if middle:
        gaps = [draw(st.integers(1, len(pos) - 1))]
        if where == "several" and len(pos) == 3 and draw(st.booleans()):
            gaps = [1, 2]
    items: list[str] = []
    for k, p in enumerate(pos):
        if k in gaps:
            items.append(f"NOT {draw(_neg_body())}")
            if draw(st.integers(0, 4 if where == "middle" else 1)) == 0:
                items.append(f"NOT {draw(st.sampled_from(TYPES))}")  # SEQ(P, NOT C, NOT D, Q)
        items.append(p)
    if start:
        items.insert(0, f"NOT {draw(_neg_body())}")
    if end:
        items.append(f"NOT {draw(_neg_body())}")
    return f"SEQ({', '.join(items)})"


# --------------------------------------------------------------------------- queries
def _compile(text: str):
    try:
        return cepvec.compile(text)
    except CepvecError:
        return None


@st.composite
def windows(draw):
    kind = draw(st.sampled_from(["none", "within", "emit", "slide_le", "slide_gt", "none", "within", "emit",
                                 "slide_le", "slide_gt", "emit_unbounded"]))
    w = draw(st.integers(1, 5))
    if kind == "none":
        return ""
    if kind == "emit_unbounded":  # EMIT CHANGES without WITHIN (docs/semantics.md 6)
        return " EMIT CHANGES"
    if kind == "within":
        return f" WITHIN {w}"
    if kind == "emit":
        return f" WITHIN {w} EMIT CHANGES"
    if kind == "slide_le":
        return f" WITHIN {w} SLIDE {draw(st.integers(1, w))}"
    return f" WITHIN {w} SLIDE {draw(st.integers(w + 1, 7))}"


@st.composite
def queries(draw, pattern=None, window=None, **grammar):
    """Query text (GRETA form) that cepvec.compile accepts.

    ``pattern`` / ``window`` fix those parts; ``grammar`` is passed to :func:`patterns`.
    """
    pat = pattern if pattern is not None else draw(patterns(**grammar))
    q0 = _compile(f"RETURN COUNT(*) PATTERN {pat}")
    assume(q0 is not None)
    by_name: dict[str, list] = {}
    for o in q0.occs:
        by_name.setdefault(o.name, []).append(o)
    all_names = sorted(by_name)
    positive = sorted(n for n, os in by_name.items() if not any(o.negated for o in os))
    trans = list(q0.template.transitions) + [t for n in q0.negations for t in n.template.transitions]
    pairs = sorted({(q0.occs[t.src].name, q0.occs[t.dst].name) for t in trans})

    where: list[str] = []
    for _ in range(draw(st.sampled_from([0, 0, 1, 1, 2, 3]))):
        kind = draw(st.sampled_from(["local", "local", "bare", "next", "next", "plain", "equiv", "equiv",
                                     "equiv_q"]))
        if kind == "local":
            n = draw(st.sampled_from(all_names))
            where.append(draw(st.sampled_from([
                f"{n}.x > 1", f"{n}.x <= 1", f"{n}.x != 0", f"{n}.v < 1.0", f"{n}.x >= 0 AND {n}.v > 0"])))
        elif kind == "bare":
            where.append(draw(st.sampled_from(["x >= 0", "v > -1"])))
        elif kind == "next" and pairs:
            a, b = draw(st.sampled_from(pairs))
            where.append(draw(st.sampled_from([
                f"{a}.x < NEXT({b}).x", f"{a}.x >= NEXT({b}).x", f"{a}.x + 1 > NEXT({b}).x",
                f"{a}.v * 2 <= NEXT({b}).v"])))
        elif kind == "plain":
            distinct = [(a, b) for a, b in pairs if a != b]
            if distinct:
                a, b = draw(st.sampled_from(distinct))
                where.append(draw(st.sampled_from([f"{a}.x <= {b}.x", f"{a}.x != {b}.x"])))
        elif kind == "equiv":
            where.append("[id]")
        elif kind == "equiv_q" and positive:
            where.append(f"[{draw(st.sampled_from(positive))}.id]")
    where = list(dict.fromkeys(where))

    group = draw(st.booleans()) and draw(st.booleans())
    aggs: list[str] = []
    for _ in range(draw(st.integers(1, 3))):
        f = draw(st.sampled_from(["COUNT(*)", "COUNT", "SUM", "MIN", "MAX", "AVG"]))
        if f == "COUNT(*)" or not positive:
            aggs.append("COUNT(*)")
            continue
        n = draw(st.sampled_from(positive))
        if f == "COUNT":
            aggs.append(f"COUNT({n})")
        else:
            aggs.append(f"{f}({n}.{draw(st.sampled_from(['x', 'v']))})")
    aggs = list(dict.fromkeys(aggs))
    ret = (["id"] if group and draw(st.booleans()) else []) + aggs

    text = f"RETURN {', '.join(ret)} PATTERN {pat}"
    if where:
        text += f" WHERE {' AND '.join(where)}"
    if group:
        text += " GROUP-BY id"
    text += window if window is not None else draw(windows())
    assume(_compile(text) is not None)
    return text


@st.composite
def query_and_stream(draw, max_events: int = 8, **grammar):
    """``(query text, stream)``; the stream mostly uses the query's own event types.

    Independent draws leave most results empty; drawing the stream's types
    from the query's types (sometimes from all of ``ABCD``) makes matches,
    and thus disagreements, far more likely.
    """
    text = draw(queries(**grammar))
    qtypes = [t for t in cepvec.compile(text).event_types if t in TYPES]
    types = TYPES if not qtypes or draw(st.integers(0, 4)) == 0 else qtypes
    return text, draw(streams(max_events=max_events, types=types))


def tiny_streams(n_max: int, times=(0, 1, 3), types="ABC", n_min: int = 0):
    """Every stream of ``n_min..n_max`` events as ``[(time, type), ...]``: all time multisets and
    type sequences, with tied events in one order only (same-time events never see each other)."""
    for n in range(n_min, n_max + 1):
        for ts in itertools.combinations_with_replacement(times, n):
            for tys in itertools.product(types, repeat=n):
                if any(ts[i] == ts[i + 1] and tys[i] > tys[i + 1] for i in range(n - 1)):
                    continue
                yield list(zip(ts, tys))


# --------------------------------------------------------------------------- workloads (run_many)
SHARED_WINDOWS = ("", "WITHIN 2 SLIDE 1", "WITHIN 3 SLIDE 3", "WITHIN 2 SLIDE 3", "WITHIN 4 SLIDE 2", "WITHIN 2",
                  "WITHIN 5", "WITHIN 3 EMIT CHANGES", "EMIT CHANGES")
# (RETURN prefix, WHERE items, GROUP-BY clause)
SHARED_KEYS = (("", (), ""), ("id, ", (), " GROUP-BY id"), ("", ("[id]",), ""), ("x, ", (), " GROUP-BY x"),
               ("v, ", (), " GROUP-BY v"))
# local predicates of one position (a small pool, so queries share prefixes with and without them; the stream's
# x and id have nulls, v has NaN)
# aggregates of one query ({a}: a position's variable): counts, integer and float sums (float sums with
# exact counts run on the query's own path)
SHARED_AGGS = ("COUNT(*)", "COUNT(*)", "COUNT(*), SUM({a}.x)", "AVG({a}.x)", "COUNT({a}), SUM({a}.v)",
               "SUM({a}.x) AS s, AVG({a}.v), COUNT(*)")
SHARED_MINMAX = ("MIN({a}.x), MAX({a}.v)", "COUNT(*), MAX({a}.x), SUM({a}.x)")
SHARED_PREDICATES = ("", "", "{v}.x > 1", "{v}.x <= 2", "{v}.v < 2.5", "{v}.x > 1 AND {v}.v >= 0", "{v}.id != 0")


@st.composite
def shared_workloads(draw, predicates: bool = True, negations: bool = True, aggregates: bool = True):
    """Queries the shared executor runs: SEQ of 1-4 types (repeats allowed), COUNT(*) or SUM / AVG /
    COUNT of a position (integers with nulls, floats with NaN), one window and key, local predicates
    on some positions, a negation of one type (with or without a predicate) after some positions,
    the last included, and before the first (a type of the pattern or another; under WITHIN alone
    not both before the first and after the last, which runs on its own path)."""
    window = draw(st.sampled_from(SHARED_WINDOWS))
    ret, where, key = draw(st.sampled_from(SHARED_KEYS))
    n = draw(st.integers(2, 5))
    texts = {}
    for i in range(n):
        seq = draw(st.lists(st.sampled_from("ABC"), min_size=1, max_size=4))
        parts, items = [], list(where)
        if negations and len(seq) > 1 and draw(st.integers(0, 3)) == 0:  # a negated start
            parts.append(f"NOT {draw(st.sampled_from('ABC'))} m0")
            if predicates:
                pred = draw(st.sampled_from(SHARED_PREDICATES)).format(v="m0")
                if pred:
                    items.append(pred)
        alone = window.startswith("WITHIN") and "SLIDE" not in window
        for j, t in enumerate(seq):
            parts.append(f"{t} v{j}")
            if alone and parts[0].startswith("NOT ") and j == len(seq) - 1:
                break
            if negations and len(seq) > 1 and draw(st.integers(0, 2)) == 0:  # after a position (or the end)
                parts.append(f"NOT {draw(st.sampled_from('ABC'))} n{j}")
                if predicates:
                    pred = draw(st.sampled_from(SHARED_PREDICATES)).format(v=f"n{j}")
                    if pred:
                        items.append(pred)
        pattern = seq[0] if len(seq) == 1 else f"SEQ({', '.join(parts)})"
        if predicates:
            for j in range(len(seq)):
                pred = draw(st.sampled_from(SHARED_PREDICATES)).format(v=seq[0] if len(seq) == 1 else f"v{j}")
                if pred:
                    items.append(pred)
        cond = f" WHERE {' AND '.join(items)}" if items else ""
        var = seq[0] if len(seq) == 1 else f"v{draw(st.integers(0, len(seq) - 1))}"
        negated = any(p.startswith("NOT ") for p in parts[1:])  # MIN / MAX share without a negation after a position
        pool = SHARED_AGGS if negated else SHARED_AGGS + SHARED_MINMAX
        aggs = draw(st.sampled_from(pool)).format(a=var) if aggregates else "COUNT(*)"
        texts[f"s{i}"] = f"RETURN {ret}{aggs} PATTERN {pattern}{cond}{key} {window}".strip()
    return texts

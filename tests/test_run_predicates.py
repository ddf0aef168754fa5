"""Predicates over the whole run (SASE+ Query 3) and non-overlapping output, against a brute force.

``brute`` below is independent of cepvec: it enumerates every subsequence of
a partition and every way to bind it to the pattern's variables, and checks
the definition of docs/semantics.md 4.6 directly (predicates as Python
functions written next to each query text, SQL nulls by hand; each
strategy's condition on every pair of consecutive events; negation gaps;
the window). ``non_overlapping`` applies docs/semantics.md 8.1 to its
result. The match engine (run-based executor, cepvec/kernels/runs.py) and
the reference engine must both list exactly these matches.
"""

from __future__ import annotations

import bisect
import itertools
from dataclasses import dataclass, field

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cepvec
from cepvec.paths.match.run import MatchGraph
from cepvec.paths.match.runs import RunMatches
from cepvec.registry import choose, run_engine
from cepvec.runtime.prepare import prepare
from tests.strategies import examples, half_of_pairs, sweep_size, tiny_streams

pytestmark = pytest.mark.filterwarnings("ignore::cepvec.errors.CepvecWarning")

STRATEGIES = ("skip_till_any_match", "skip_till_next_match", "partition_contiguity", "strict_contiguity")
SCHEMA = {"type": pl.String, "time": pl.Int64, "id": pl.Int64, "x": pl.Int64, "k": pl.Int64}


# ----------------------------------------------------------------- SQL nulls, by hand
def vals(prefix, var):
    return [e["x"] for v, e in prefix if v == var]


def nn(xs):
    return [x for x in xs if x is not None]


def avg(xs):
    xs = nn(xs)
    return sum(xs) / len(xs) if xs else None


def agg(fn, xs):
    xs = nn(xs)
    return fn(xs) if xs else None


def cmp(a, op, b):
    if a is None or b is None:
        return False
    return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b, "!=": a != b, "=": a == b}[op]


def add(*xs):
    return None if any(x is None for x in xs) else sum(xs)


@dataclass
class Spec:
    """A query (``{S}``: the strategy, ``{W}``: the window) and its meaning in Python."""

    name: str
    text: str
    items: list  # [(variable, type, Kleene?)]
    local: dict = field(default_factory=dict)  # variable -> f(event)
    step: object = None  # f(prefix [(var, event)], var, event): edge and run predicates of the bind
    final: object = None  # f(match)
    negs: list = field(default_factory=list)  # [(after item: -1 start, len(items)-1 end, type[, f(z, match)])]
    by_id: bool = False
    explicit: bool = False  # never-adjacent variables: cepvec.run needs engine="match" (semantics 4.2)


SPECS = [
    Spec("avg", "PATTERN SEQ(A+ a[], B b) WHERE {S} [id] AND a[i].x > avg(a[..i-1].x) AND b.x < 3 {W}",
         [("a", "A", True), ("b", "B", False)], local={"b": lambda e: cmp(e["x"], "<", 3)},
         step=lambda p, v, e: v != "a" or p[-1][0] != "a" or cmp(e["x"], ">", avg(vals(p, "a"))), by_id=True),
    Spec("len", "PATTERN SEQ(A+ a[], B b) WHERE {S} a.LEN >= 2 AND b.x >= a[a.LEN].x {W}",
         [("a", "A", True), ("b", "B", False)],
         step=lambda p, v, e: v != "b" or (len(vals(p, "a")) >= 2 and cmp(e["x"], ">=", vals(p, "a")[-1]))),
    Spec("never_adjacent", "PATTERN SEQ(A a, B b, C c) WHERE {S} [id] AND a.x < c.x {W}",
         [("a", "A", False), ("b", "B", False), ("c", "C", False)],
         step=lambda p, v, e: v != "c" or cmp(vals(p, "a")[0], "<", e["x"]), by_id=True, explicit=True),
    Spec("misplaced", "PATTERN SEQ(A p, A q, NOT C z) WHERE {S} [id] AND p.x != q.x AND p.x = z.x {W}",
         [("p", "A", False), ("q", "A", False)], negs=[(1, "C", lambda z, m: cmp(z["x"], "=", vals(m, "p")[0]))],
         step=lambda p, v, e: v != "q" or cmp(vals(p, "p")[0], "!=", e["x"]), by_id=True, explicit=True),
    Spec("cond_middle", "PATTERN SEQ(A+ a[], NOT C z, B b) WHERE {S} z.x > b.x AND a.LEN <= 2 {W}",
         [("a", "A", True), ("b", "B", False)], negs=[(0, "C", lambda z, m: cmp(z["x"], ">", vals(m, "b")[0]))],
         step=lambda p, v, e: v != "b" or len(vals(p, "a")) <= 2),
    Spec("cond_start", "PATTERN SEQ(NOT C z, A+ a[], B b) WHERE {S} [id] AND z.x = a[1].x + a.LEN - 1 {W}",
         [("a", "A", True), ("b", "B", False)], by_id=True,
         negs=[(-1, "C", lambda z, m: cmp(z["x"], "=", add(vals(m, "a")[0], len(vals(m, "a")), -1)))]),
    Spec("max_sum_count_neg",
         "PATTERN SEQ(A+ a[], NOT C, B b) WHERE {S} a[i].x >= max(a[..i-1].x) AND sum(a[..i-1].x) < 6 "
         "AND count(a[..i-1].x) < 3 {W}",
         [("a", "A", True), ("b", "B", False)], negs=[(0, "C")],
         step=lambda p, v, e: v != "a" or p[-1][0] != "a" or (
             cmp(e["x"], ">=", agg(max, vals(p, "a"))) and cmp(agg(sum, vals(p, "a")), "<", 6)
             and len(nn(vals(p, "a"))) < 3)),
    Spec("final_min", "PATTERN SEQ(B b, A+ a[]) WHERE {S} a.LEN <= 2 AND a[i].x != min(a[..i-1].x) {W}",
         [("b", "B", False), ("a", "A", True)],
         step=lambda p, v, e: v != "a" or p[-1][0] != "a" or cmp(e["x"], "!=", agg(min, vals(p, "a"))),
         final=lambda m: len(vals(m, "a")) <= 2),
    Spec("first_end_neg", "PATTERN SEQ(A+ a[], B b, NOT C) WHERE {S} [id] AND b.x > a[1].x + a.LEN - 2 {W}",
         [("a", "A", True), ("b", "B", False)], negs=[(1, "C")], by_id=True,
         step=lambda p, v, e: v != "b" or cmp(e["x"], ">", add(vals(p, "a")[0], len(vals(p, "a")), -2))),
    Spec("start_neg_sum", "PATTERN SEQ(NOT C, A a, B+ b[]) WHERE {S} b[i].x > a.x + sum(b[..i-1].x) - 4 {W}",
         [("a", "A", False), ("b", "B", True)], negs=[(-1, "C")],
         step=lambda p, v, e: v != "b" or p[-1][0] != "b" or cmp(
             e["x"], ">", add(vals(p, "a")[0], agg(sum, vals(p, "b")), -4))),
]


def query_text(spec: Spec, strategy: str, within: int | None) -> str:
    s = "" if strategy == "skip_till_any_match" else f"{strategy}() {{ }} AND"
    return "RETURN COUNT(*) " + spec.text.format(S=s, W=f"WITHIN {within}" if within else "")


# ----------------------------------------------------------------- the brute force
def labelings(m: int, items):
    """Every way to bind ``m`` consecutive events to the items (a Kleene item takes 1 or more)."""
    if not items:
        if m == 0:
            yield []
        return
    (var, _, kleene), rest = items[0], items[1:]
    for take in range(1, m + 1 if kleene else 2):
        for tail in labelings(m - take, rest):
            yield [var] * take + tail


def brute(spec: Spec, events: list[dict], strategy: str, within: int | None) -> set:
    types = {v: t for v, t, _ in spec.items}
    order = [v for v, _, _ in spec.items]
    kleene = {v for v, _, k in spec.items if k}
    parts: dict = {}
    for e in events:
        parts.setdefault(e["id"] if spec.by_id else 0, []).append(e)

    def cand(v, e):
        return e["type"] == types[v] and spec.local.get(v, lambda _: True)(e)

    def bind_ok(prefix, v, e):
        return cand(v, e) and (not prefix or spec.step is None or spec.step(prefix, v, e))

    def successors(v):
        j = order.index(v)
        return ([v] if v in kleene else []) + order[j + 1:j + 2]

    all_times = sorted(e["time"] for e in events)
    out = set()
    for part in parts.values():
        for m in range(1, len(part) + 1):
            for sub in itertools.combinations(part, m):
                if any(sub[i]["time"] >= sub[i + 1]["time"] for i in range(m - 1)):
                    continue
                if within is not None and sub[-1]["time"] - sub[0]["time"] >= within:
                    continue
                for lab in labelings(m, spec.items):
                    seq = list(zip(lab, sub))
                    if not all(bind_ok(seq[:i], v, e) for i, (v, e) in enumerate(seq)):
                        continue
                    if spec.final is not None and not spec.final(seq):
                        continue
                    if not _gaps_ok(spec, seq, part, order, within) or not _strategy_ok(
                            strategy, seq, part, all_times, successors, bind_ok):
                        continue
                    out.add(tuple((v, e["k"]) for v, e in seq))
    return out


def _gaps_ok(spec, seq, part, order, within) -> bool:
    first, last = seq[0][1]["time"], seq[-1][1]["time"]
    for after, typ, *cond in spec.negs:
        zs = [z["time"] for z in part if z["type"] == typ and (not cond or cond[0](z, seq))]
        if after == -1:
            lo, hi = (last - within if within else None), first
        elif after == len(order) - 1:
            lo, hi = last, (first + within if within else None)
        else:
            lo = max(e["time"] for v, e in seq if v == order[after])
            hi = min(e["time"] for v, e in seq if v == order[after + 1])
        if any((lo is None or lo < t) and (hi is None or t < hi) for t in zs):
            return False
    return True


def _strategy_ok(strategy, seq, part, events, successors, bind_ok) -> bool:
    for i in range(1, len(seq)):
        tx, ty = seq[i - 1][1]["time"], seq[i][1]["time"]
        if strategy == "strict_contiguity" and bisect.bisect_right(events, tx) < bisect.bisect_left(events, ty):
            return False  # an event of the whole input (sorted times) strictly between
        if strategy == "partition_contiguity" and any(tx < e["time"] < ty for e in part):
            return False
        if strategy == "skip_till_next_match" and any(
                tx < z["time"] < ty and any(bind_ok(seq[:i], s, z) for s in successors(seq[i - 1][0]))
                for z in part):
            return False
    return True


def non_overlapping(spec: Spec, matches: set, events: list[dict], strategy: str) -> set:
    """docs/semantics.md 8.1 applied to a set of matches (tuples of (variable, k))."""
    ev = {e["k"]: e for e in events}
    order = [v for v, _, _ in spec.items]

    def key(m):
        ts = [ev[k]["time"] for _, k in m]
        part = ev[m[0][1]]["id"] if spec.by_id and strategy != "strict_contiguity" else 0
        return part, ts[-1], -ts[0], tuple(k for _, k in m), tuple(order.index(v) for v, _ in m)

    keep, cut = set(), {}
    for m in sorted(matches, key=key):
        part, last, neg_first = key(m)[:3]
        if part not in cut or -neg_first > cut[part]:
            keep.add(m)
            cut[part] = last
    return keep


# ----------------------------------------------------------------- cepvec side
def frame(events: list[dict]) -> pl.DataFrame:
    return pl.DataFrame({c: [e[c] for e in events] for c in SCHEMA}, schema=SCHEMA)


def listed(df: pl.DataFrame) -> set:
    w = df.group_by("match", maintain_order=True).agg("variable", "k")
    out = [tuple(zip(v, k)) for v, k in zip(w["variable"].to_list(), w["k"].to_list())]
    assert len(out) == len(set(out)), "a match is listed twice"
    return set(out)


def check(spec: Spec, events: list[dict], strategy: str, within: int | None, overlap: str = "all") -> None:
    text = query_text(spec, strategy, within)
    want = brute(spec, events, strategy, within)
    if overlap == "none":
        want = non_overlapping(spec, want, events, strategy)
    df = frame(events)
    for engine in ("match", "reference"):
        long = cepvec.matches(text, df, limit=None, engine=engine, overlap=overlap)
        got = listed(long)
        assert got == want, f"{engine} {text}\n{df}\nmissing {want - got}\nextra {got - want}"
        wide = cepvec.matches(text, df, limit=None, engine=engine, overlap=overlap, format="wide")
        assert wide.height == len(want)
        assert set(tuple(zip(v, k)) for v, k in zip(wide["variable"].to_list(), wide["k"].to_list())) == want


@st.composite
def event_dicts(draw, max_events: int = 8):
    n = draw(st.integers(0, max_events))
    times = sorted(draw(st.lists(st.integers(0, 6), min_size=n, max_size=n)))
    return [{"type": draw(st.sampled_from("AABBC")), "time": t, "id": draw(st.sampled_from([1, 2])),
             "x": draw(st.sampled_from([0, 1, 2, 3, 4, None])), "k": i} for i, t in enumerate(times)]


@settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(events=event_dicts(), spec=st.sampled_from(SPECS), strategy=st.sampled_from(STRATEGIES),
       within=st.sampled_from([None, 3]), overlap=st.sampled_from(["all", "all", "none"]))
def test_run_predicates_agree_with_brute_force(events, spec, strategy, within, overlap):
    check(spec, events, strategy, within, overlap)


@pytest.mark.parametrize(("spec", "strategy"), half_of_pairs(SPECS, STRATEGIES, ids=lambda s, g: f"{g}-{s.name}"))
def test_exhaustive_tiny_streams(spec, strategy):
    """Every stream of up to 4 (5 with --slow) events over times 0, 1, 3; x varies with stream and position.

    The streams run side by side in one input: stream s is partition id = s at times 100 s + t, so
    no event of another stream lies between two events of one (strict contiguity included)."""
    if not spec.by_id:
        spec = Spec(spec.name, spec.text.replace("{S} ", "{S} [id] AND "), spec.items, spec.local, spec.step,
                    spec.final, spec.negs, True)
    events: list[dict] = []
    for s, stream in enumerate(tiny_streams(sweep_size(5), types="ABC")):
        events += [{"type": ty, "time": 100 * s + t, "id": s, "x": (s + 3 * i) % 5, "k": len(events) + i}
                   for i, (t, ty) in enumerate(stream)]
    for within in (None, 2):
        check(spec, events, strategy, within)


def test_docs_worked_example():
    """docs/matching.md: SASE+ Query 3's shape with avg(a[..i-1].price) over the eight events."""
    ev = pl.DataFrame({"type": ["Stock"] * 8, "time": list(range(1, 9)), "symbol": list("XXYXXYXX"),
                       "price": [10, 12, 50, 11, 13, 40, 15, 9], "volume": [900, 800, 700, 900, 600, 120, 700, 100]})
    want = {"skip_till_any_match": 16, "skip_till_next_match": [[1, 2, 5, 7, 8], [4, 5, 7, 8]],
            "partition_contiguity": [[4, 5, 7, 8]], "strict_contiguity": []}
    for strategy, expect in want.items():
        q = ("RETURN COUNT(*) PATTERN SEQ(Stock+ a[], Stock b) WHERE " + strategy + "(a[], b) { [symbol] AND "
             "a[1].volume > 800 AND a[i].price > avg(a[..i-1].price) AND b.volume < 150 }")
        got = sorted(cepvec.matches(q, ev, limit=None, format="wide")["time"].to_list())
        assert (len(got) if isinstance(expect, int) else got) == expect, strategy
        assert cepvec.run(q, ev)["COUNT(*)"].to_list() == ([len(got)] if got else []), strategy
    # the avg predicate skips e4 (11 is not above avg(10, 12) = 11) on the run from e1
    q = ("RETURN COUNT(*) PATTERN SEQ(Stock+ a[], Stock b) WHERE skip_till_next_match(a[], b) { [symbol] AND "
         "a[1].volume > 800 AND a[i].price > avg(a[..i-1].price) AND b.volume < 150 }")
    assert cepvec.matches(q, ev, limit=None, overlap="none", format="wide")["time"].to_list() == [[4, 5, 7, 8]]


FORWARD = [
    "RETURN COUNT(*) PATTERN SEQ(A+, B) WHERE {S} A.x < NEXT(A).x",
    "RETURN COUNT(*) PATTERN SEQ(A a, NOT C, B+ b[]) WHERE {S} [id] AND b[i].x != b[i-1].x AND a.x <= b[1].x",
    "RETURN COUNT(*) PATTERN SEQ(NOT C, A+ a[], B b, NOT C) WHERE {S} a[a.LEN].x < b.x WITHIN 4",
    "RETURN COUNT(*) PATTERN (SEQ(A+, B))+ WHERE {S} [id]",
    "RETURN COUNT(*) PATTERN SEQ(A, NOT SEQ(C, B), B) WHERE {S} A.x > 1",
]


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(events=event_dicts(), text=st.sampled_from(FORWARD), strategy=st.sampled_from(STRATEGIES))
def test_runs_equal_the_shared_graph_without_run_predicates(events, text, strategy):
    """The run-based executor follows the same strategy rules as the shared graph (docs/matching.md)."""
    q = cepvec.compile(text.format(S="" if strategy == "skip_till_any_match" else f"{strategy}() {{ }} AND"))
    prep = prepare(q, frame(events))

    def as_set(engine):
        out = set()
        for mid, pos, rows, occ in engine.batches(None, 3):
            for m in set(mid.tolist()):
                sel = mid == m
                out.add(tuple(zip(rows[sel].tolist(), occ[sel].tolist())))
        return out

    assert as_set(RunMatches(q, prep)) == as_set(MatchGraph(q, prep)), q.text


@settings(max_examples=examples(100), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(events=event_dicts(max_events=9), spec=st.sampled_from(SPECS), strategy=st.sampled_from(STRATEGIES),
       cut=st.integers(1, 7))
def test_batches_and_aggregates(events, spec, strategy, cut):
    """Frames of any size hold whole matches; cepvec.run's aggregates over them equal the reference's."""
    v = spec.items[0][0]
    text = query_text(spec, strategy, None).replace("RETURN COUNT(*)", f"RETURN COUNT(*), SUM({v}.x), MAX({v}.x)")
    df = frame(events)
    whole = cepvec.matches(text, df, limit=None, engine="match")
    assert pl.concat(list(cepvec.iter_matches(text, df, engine="match", batch_rows=cut))).equals(whole)
    limited = cepvec.matches(text, df, limit=2, engine="match")
    assert limited.equals(whole.filter(pl.col("match") < 2))
    engine = "match" if spec.explicit else "auto"
    got = cepvec.run(text, df, engine=engine)
    want = cepvec.run(text, df, engine="reference")
    assert got.equals(want), f"{text}\n{got}\n{want}"
    # the same rows however the input is cut into batches (cepvec.run pushes batches to the path)
    q = cepvec.compile(text)
    prep = prepare(q, df)
    cuts = list(range(cut, len(df), cut))
    assert run_engine(q, prep, choose(q, engine, prep.df.schema), batches=cuts).equals(got)


def test_auto_refuses_never_adjacent_aggregation_but_match_runs_it():
    text = "RETURN COUNT(*) PATTERN SEQ(A a, B b, C c) WHERE a.x < c.x"
    df = frame([{"type": t, "time": i, "id": 1, "x": i, "k": i} for i, t in enumerate("ABC")])
    with pytest.raises(cepvec.CepvecQueryError) as info:
        cepvec.run(text, df)
    assert info.value.message == (
        "predicate a.x < c.x compares variables a and c, which are never adjacent in the pattern, so it cannot be "
        "aggregated online; predicates between different variables must relate an event and the one right after "
        "it in a match; pass engine='match' to aggregate over the match engine's matches (or engine='reference'), "
        "or list them with cepvec.matches")
    assert (info.value.line, info.value.col, info.value.text) == (1, 50, "a.x < c.x")
    assert cepvec.run(text, df, engine="match")["COUNT(*)"].to_list() == [1]
    assert cepvec.matches(text, df, format="wide")["k"].to_list() == [[0, 1, 2]]
    assert "engine (auto): none - predicate a.x < c.x" in cepvec.compile(text).explain()


@pytest.mark.parametrize("text, construct, message", [
    ("PATTERN SEQ(A a, B b) WHERE b.x > avg(a[..i-1].x)", "avg(a[..i-1].x)", "'a' is not a Kleene variable"),
    ("PATTERN SEQ(A+ a[], B b) WHERE a[i].x > median(a[..i-1].x)", "median(a[..i-1].x)",
     "the functions in predicates are avg, min, max, sum and count"),
    ("PATTERN (SEQ(A+ a[], B b))+ WHERE a[i].x > avg(a[..i-1].x)", "a[i].x > avg(a[..i-1].x)",
     "not inside a nested SEQ or Kleene"),
    ("PATTERN SEQ(A+ a[], B b) WHERE a[i].x > a[..i-1].x", "a[..i-1].x", "outside an aggregate"),
    ("PATTERN SEQ(A+ a[], B+ b[]) WHERE b[i].x > avg(a[..i-1].x)", "b[i].x > avg(a[..i-1].x)",
     "iterates over two Kleene variables at once"),
    ("PATTERN SEQ(A+ a[], B b) WHERE a.x > avg(a[..i-1].x)", "a.x", "write a[i], a[1] or a[a.LEN]"),
])
def test_unsupported_run_predicates_are_located(text, construct, message):
    with pytest.raises(cepvec.NotSupportedError) as info:
        cepvec.compile(text)
    assert message in info.value.message
    assert info.value.text == construct


def test_explain_shows_run_predicates():
    text = ("RETURN COUNT(*) PATTERN SEQ(S+ a[], S b) WHERE skip_till_next_match(a[], b) { [id] AND "
            "a[i].x > avg(a[..i-1].x) AND a.LEN >= 3 }")
    plan = cepvec.compile(text).explain()
    assert "run (over the run so far) at [0] a -> [0] a: a[i].x > avg(a[..i-1].x)" in plan
    assert "run (over the run so far) at [0] a -> [1] b: a.LEN >= 3" in plan
    assert "a -> a (take again (Kleene +)): edge predicate true; run predicate a[i].x > avg(a[..i-1].x)" in plan
    assert "run predicates read each run's state (count(a.x), avg(a.x), len(a))" in plan
    assert "engine (auto): match" in plan


def select_non_overlapping(matches: set, events: list[dict], by_id: bool, names: list[str]) -> set:
    """docs/semantics.md 8.1 over any listing (tuples of (variable, k)); ``names``: variables in pattern order."""
    ev = {e["k"]: e for e in events}

    def key(m):
        ts = [ev[k]["time"] for _, k in m]
        return (ev[m[0][1]]["id"] if by_id else 0, ts[-1], -ts[0], tuple(k for _, k in m),
                tuple(names.index(v) for v, _ in m))

    keep, cut = set(), {}
    for m in sorted(matches, key=key):
        part, last, neg_first = key(m)[:3]
        if part not in cut or -neg_first > cut[part]:
            keep.add(m)
            cut[part] = last
    return keep


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(events=event_dicts(), text=st.sampled_from(FORWARD), strategy=st.sampled_from(STRATEGIES))
def test_non_overlapping_on_the_shared_graph(events, text, strategy):
    """overlap="none" on queries the shared graph runs: both engines keep 8.1's choice among all matches."""
    q = cepvec.compile(text.format(S="" if strategy == "skip_till_any_match" else f"{strategy}() {{ }} AND"))
    df = frame(events)
    every = listed(cepvec.matches(q, df, limit=None, engine="reference"))
    by_id = "[id]" in q.text and strategy != "strict_contiguity"
    want = select_non_overlapping(every, events, by_id, [o.name for o in q.occs])
    for engine in ("match", "reference"):
        got = listed(cepvec.matches(q, df, limit=None, engine=engine, overlap="none"))
        assert got == want, f"{engine} {q.text}\n{df}"
    limited = cepvec.matches(q, df, limit=1, engine="match", overlap="none")
    assert limited["match"].n_unique() == min(1, len(want))


def test_overlap_argument_checks_and_cli(tmp_path):
    df = frame([{"type": t, "time": i, "id": 1, "x": i, "k": i} for i, t in enumerate("AABB")])
    with pytest.raises(cepvec.CepvecPlanError, match="overlap must be 'all' or 'none'; found 'some'"):
        cepvec.matches("RETURN COUNT(*) PATTERN SEQ(A, B)", df, overlap="some")
    with pytest.raises(cepvec.CepvecPlanError, match="with a SLIDE or EMIT CHANGES window a match is listed once"):
        cepvec.matches("RETURN COUNT(*) PATTERN SEQ(A, B) WITHIN 3 SLIDE 1", df, overlap="none")
    # a1 a2 b3 b4: every pair overlaps; the one ending first and starting last is (a2, b3)
    got = cepvec.matches("RETURN COUNT(*) PATTERN SEQ(A, B)", df, overlap="none", format="wide")
    assert got["k"].to_list() == [[1, 2]]
    path = tmp_path / "ev.parquet"
    df.write_parquet(path)
    from cepvec.cli import main

    out = tmp_path / "m.parquet"
    assert main(["matches", "RETURN COUNT(*) PATTERN SEQ(A, B)", str(path), "-o", str(out), "--overlap", "none"]) == 0
    assert pl.read_parquet(out)["k"].to_list() == [1, 2]

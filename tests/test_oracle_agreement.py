"""The reference engine agrees with an independent brute force (tests/oracle/brute.py).

1. A Hypothesis property over generated queries (tests/strategies.py) and
   small streams, plus minimal hand-checked cases (each one pins down a bug
   the property found).
2. An exhaustive sweep: for a set of pattern shapes and every window form,
   every stream of up to 5 events over types {A, B, C} with times from
   {0, 1, 3} (ties allowed). Events with equal times are never adjacent in a
   match and the front end sorts stably, so the order among tied events cannot
   change a result: the sweep enumerates each multiset of types per time stamp
   once.
"""

from __future__ import annotations

import itertools
import math
import warnings

import pytest
from hypothesis import HealthCheck, given, settings

import cepvec
from cepvec.errors import CepvecWarning
from tests.oracle.brute import brute_run
from tests.strategies import SLOW, examples, make_frame, query_and_stream, sweep_size

pytestmark = pytest.mark.filterwarnings("ignore::cepvec.errors.CepvecWarning")


def _same(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, float) or isinstance(b, float):
        if math.isnan(a) or math.isnan(b):  # NaN from both: one answer (+inf and -inf in one sum)
            return math.isnan(a) and math.isnan(b)
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    return a == b


def rows_differ(got: list[dict], want: list[dict]) -> str | None:
    """None when the row lists agree, else a short description of the first difference."""
    if len(got) != len(want):
        return f"{len(got)} rows from the engine, {len(want)} from brute force"
    for k, (g, w) in enumerate(zip(got, want)):
        if list(g) != list(w):
            return f"row {k}: columns {list(g)} != {list(w)}"
        for c in g:
            if not _same(g[c], w[c]):
                return f"row {k} column {c!r}: engine {g[c]!r}, brute force {w[c]!r}"
    return None


def check(text: str, df) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CepvecWarning)
        got = cepvec.run(text, df, engine="reference").to_dicts()
    want = brute_run(text, df)
    diff = rows_differ(got, want)
    assert diff is None, (
        f"reference engine and brute force disagree: {diff}\nquery: {text}\n"
        f"stream (type, time, id, x, v): {df.rows()}\nengine: {got}\nbrute:  {want}")


# --------------------------------------------------------------------------- 1. property
@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(query_and_stream())
def test_reference_agrees_with_brute_force(case):
    text, df = case
    check(text, df)


# --------------------------------------------------------------------------- minimal known cases
def _ev(spec: str):
    """``"A0 B1 A1"`` -> stream of (type, time) with x = position."""
    return make_frame([(tok[0], int(tok[1:]), None, k, 0.5 * k) for k, tok in enumerate(spec.split())])


MINIMAL_CASES = [
    # A match is one (event sequence, occurrence assignment): (A+)+ has exactly the matches of A+,
    # however the sequence splits into iterations. a0 a1 -> {a0}, {a1}, {a0 a1}: COUNT(*) = 3.
    ("RETURN COUNT(*) PATTERN (A+)+", "A0 A1", [{"COUNT(*)": 3}]),
    ("RETURN COUNT(*), SUM(A.x) PATTERN SEQ(B, (A+)+)", "B0 A1 A2 A3", [{"COUNT(*)": 7, "SUM(A.x)": 24}]),
    # Two adjacent NOTs merge into one negation; a later NOT must still be found.
    ("RETURN COUNT(*) PATTERN SEQ(A, NOT C, NOT D, B, NOT E)", "A0 B1", [{"COUNT(*)": 1}]),
    ("RETURN COUNT(*) PATTERN SEQ(A, NOT C, NOT D, B, NOT E, A)", "A0 B1 A2 E3 A4", [{"COUNT(*)": 1}]),
    # ... and the gap B-A must be guarded by SEQ(E, NOT F, G), not by the nested NOT F.
    ("RETURN COUNT(*) PATTERN SEQ(A, NOT C, NOT D, B, NOT SEQ(E, NOT F, G), A)", "A0 B1 F2 A3",
     [{"COUNT(*)": 1}]),
    ("RETURN COUNT(*) PATTERN SEQ(A, NOT C, NOT D, B, NOT SEQ(E, NOT F, G), A)", "A0 B1 E2 G3 A4", []),
]


@pytest.mark.parametrize("text,events,expected", MINIMAL_CASES, ids=[c[0] for c in MINIMAL_CASES])
def test_minimal_cases(text, events, expected):
    df = _ev(events)
    assert brute_run(text, df) == expected
    check(text, df)


# --------------------------------------------------------------------------- worked values
def test_brute_force_reproduces_greta_worked_values():
    df = make_frame([("A", 1, None, 5, 0.0), ("B", 2, None, None, 0.0), ("A", 3, None, 6, 0.0),
                     ("A", 4, None, 4, 0.0), ("B", 7, None, None, 0.0)])
    q = "RETURN COUNT(*), COUNT(A), MIN(A.x), MAX(A.x), SUM(A.x), AVG(A.x) PATTERN (SEQ(A+, B))+"
    assert brute_run(q, df) == [{"COUNT(*)": 11, "COUNT(A)": 20, "MIN(A.x)": 4, "MAX(A.x)": 6,
                                 "SUM(A.x)": 100, "AVG(A.x)": 5.0}]
    stream = [("A", 1), ("B", 2), ("C", 2), ("A", 3), ("E", 3), ("A", 4), ("C", 5), ("D", 6), ("B", 7),
              ("A", 8), ("B", 9)]
    df = make_frame([(t, tm, None, None, 0.0) for t, tm in stream])
    assert brute_run("RETURN COUNT(*) PATTERN (SEQ(A+, B))+", df) == [{"COUNT(*)": 43}]
    check("RETURN COUNT(*) PATTERN (SEQ(A+, B))+", df)


# --------------------------------------------------------------------------- 2. exhaustive sweep
SHAPES = ["A+", "SEQ(A+, B)", "SEQ(A, B+, C)", "(SEQ(A+, B))+", "SEQ(A+, NOT C, B)", "SEQ(NOT C, A+)",
          "SEQ(A+, NOT C)", "SEQ(A, B, C)"]
WINDOWS = ["", " WITHIN 2", " WITHIN 2 EMIT CHANGES", " EMIT CHANGES", " WITHIN 2 SLIDE 1", " WITHIN 3 SLIDE 3",
           " WITHIN 2 SLIDE 3"]
SWEEP_TIMES = (0, 1, 3)
SWEEP_TYPES = "ABC"
SWEEP_MAX = sweep_size(5)


def sweep_streams() -> list[list[tuple]]:
    """Every stream of up to SWEEP_MAX events, one per multiset of types at each time."""
    per_time = [
        [combo for n in range(SWEEP_MAX + 1) for combo in itertools.combinations_with_replacement(SWEEP_TYPES, n)]
        for _ in SWEEP_TIMES]
    out = []
    for choice in itertools.product(*per_time):
        if sum(len(c) for c in choice) > SWEEP_MAX:
            continue
        events = []
        for t, types in zip(SWEEP_TIMES, choice):
            for ty in types:
                k = len(events)
                events.append((ty, t, None, (3 * k + 1) % 5 - 1, 0.5 * k))
        out.append(events)
    return out


_STREAMS = sweep_streams()


def test_sweep_stream_count():
    # C(5 + 3*3, 5) streams: multisets of up to 5 (time, type) pairs over 9 pairs
    assert len(_STREAMS) == math.comb(SWEEP_MAX + len(SWEEP_TIMES) * len(SWEEP_TYPES), SWEEP_MAX)


@pytest.mark.parametrize("window", WINDOWS, ids=lambda w: w.strip() or "no-window")
@pytest.mark.parametrize("shape", SHAPES)
def test_exhaustive_tiny_streams(shape, window):
    """Every stream of the sweep: the reference engine gives the brute-force rows. All streams at once,
    stream k the partition ``id = k`` (``WHERE [id] GROUP-BY id``); each stream alone without GROUP-BY
    in the slow profile, every 40th by default."""
    aggs = "COUNT(*), COUNT(A), SUM(A.x), MIN(A.x), MAX(A.x), AVG(A.v)"
    text = f"RETURN {aggs} PATTERN {shape}{window}"
    q = cepvec.compile(text)
    grouped = cepvec.compile(f"RETURN id, {aggs} PATTERN {shape} WHERE [id] GROUP-BY id{window}")
    every = make_frame([(e[0], e[1], k, *e[3:]) for k, events in enumerate(_STREAMS) for e in events])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CepvecWarning)
        got = cepvec.run(grouped, every, engine="reference").to_dicts()
    want = brute_run(grouped, every)
    if rows_differ(got, want) is not None:
        bad = [(k, [r for r in got if r["id"] == k], [r for r in want if r["id"] == k]) for k in range(len(_STREAMS))]
        bad = [f"  stream {[(e[0], e[1], e[3]) for e in _STREAMS[k]]}:\n    engine {g}\n    brute  {w}"
               for k, g, w in bad if rows_differ(g, w) is not None]
        raise AssertionError(f"query: {grouped.text}\n{len(bad)} of {len(_STREAMS)} streams disagree "
                             "(type, time, x):\n" + "\n".join(bad[:10]))
    failures = []
    for events in _STREAMS[::1 if SLOW else 40]:
        df = make_frame(events)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CepvecWarning)
            got = cepvec.run(q, df, engine="reference").to_dicts()
        want = brute_run(q, df)
        diff = rows_differ(got, want)
        if diff is not None:
            failures.append(f"  stream {[(e[0], e[1], e[3]) for e in events]}: {diff}\n"
                            f"    engine {got}\n    brute  {want}")
    assert not failures, (f"query: {text}\n{len(failures)} of {len(_STREAMS)} streams disagree "
                          f"(type, time, x):\n" + "\n".join(failures[:10]))

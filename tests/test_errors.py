"""Every user error is a typed cepvec error with the offending text and a fix (no raw tracebacks).

Each case below was once a Polars, Numba or Python error escaping from ``cepvec.run``.
The fuzz tests feed random bytes, random token sequences and mutated seed queries to the
parser and to ``cepvec.run``: nothing but ``cepvec.CepvecError`` may come out.
"""

from __future__ import annotations

import json
import time
import warnings
from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cepvec
from cepvec.lang.parser import MAX_NESTING

from .strategies import examples

EV = pl.DataFrame({"type": ["A", "B", "A", "B"], "time": [1, 2, 3, 4], "x": [1, 2, 3, 4],
                   "s": ["a", "b", "c", "d"]})


@pytest.mark.parametrize("engine", ["auto", "aseq", "greta", "reference"])
@pytest.mark.parametrize(("where", "message"), [
    ("a.s > 3", "predicate a.s > 3 compares column 's' (String, a string) with 3 (a number)"),
    ("a.x = 'abc'", "predicate a.x = 'abc' compares column 'x' (Int64, a number) with 'abc' (a string)"),
    ("a.s < b.x", "predicate a.s < b.x compares column 's' (String, a string) with column 'x' (Int64, a number)"),
    ("a.s + 1 > b.x", "predicate a.s + 1 computes '+' on column 's' (String, a string); arithmetic needs numbers"),
])
def test_predicate_type_mismatch_is_a_type_error(where, message, engine):
    with pytest.raises(cepvec.CepvecTypeError) as info:
        cepvec.run(f"RETURN COUNT(*) PATTERN SEQ(A a, B b) WHERE {where}", EV, engine=engine)
    assert str(info.value).startswith(message)
    assert isinstance(info.value, TypeError)


def test_edge_predicate_type_mismatch_in_kleene():
    with pytest.raises(cepvec.CepvecTypeError, match=r"^predicate A.s < NEXT\(A\).x compares column 's'"):
        cepvec.run("RETURN COUNT(*) PATTERN A+ WHERE A.s < NEXT(A).x", EV)


@pytest.mark.parametrize(("window", "unit"), [("WITHIN 1e30 s", None), ("WITHIN 1000000000000 days", "ns"),
                                              ("WITHIN 10 s SLIDE 1e25 s", None)])
def test_huge_durations_are_a_plan_error(window, unit):
    with pytest.raises(cepvec.CepvecPlanError, match="longer than the longest window cepvec supports"):
        cepvec.run(f"RETURN COUNT(*) PATTERN SEQ(A, B) {window}", EV, time_unit=unit)


@pytest.mark.parametrize("text", ["\u00b9", "RETURN COUNT(*) PATTERN SEQ(A, B) WITHIN 1\u00b2",
                                  "RETURN COUNT(*) PATTERN A WHERE A.x > \u0663"])
def test_non_ascii_digits_are_a_syntax_error(text):
    """Superscript and Arabic-Indic digits pass ``str.isdigit`` but are not numbers of the language
    (found by the byte fuzzer: ``int('\u00b9')`` raised ValueError)."""
    with pytest.raises(cepvec.CepvecSyntaxError, match="unexpected character"):
        cepvec.compile(text)


def test_deep_nesting_is_a_syntax_error_with_position():
    text = "RETURN COUNT(*) PATTERN SEQ(A, B) WHERE " + "(" * 3000 + "A.x > 1" + ")" * 3000
    with pytest.raises(cepvec.CepvecSyntaxError) as info:
        cepvec.compile(text)
    e = info.value
    assert e.message.startswith(f"nesting deeper than {MAX_NESTING} levels")
    assert (e.line, e.col, e.text) == (1, len("RETURN COUNT(*) PATTERN SEQ(A, B) WHERE ") + MAX_NESTING + 1, "(")
    for deep in ["RETURN COUNT(*) PATTERN " + "SEQ(" * 3000 + "A" + ")" * 3000,
                 "RETURN COUNT(*) PATTERN SEQ(A, B) WHERE " + "NOT " * 3000 + "A.x > 1",
                 "RETURN COUNT(*) PATTERN SEQ(A, B) WHERE A.x > " + "abs(" * 3000 + "1" + ")" * 3000]:
        with pytest.raises(cepvec.CepvecSyntaxError, match="nesting deeper than"):
            cepvec.compile(deep)
    # just under the limit still works
    ok = "RETURN COUNT(*) PATTERN SEQ(A, B) WHERE " + "(" * (MAX_NESTING - 5) + "A.x > 1" + ")" * (MAX_NESTING - 5)
    assert cepvec.run(ok, EV)["COUNT(*)"].to_list() == [1]  # (a3, b4)


def test_uint64_time_above_int64_is_a_data_error():
    ev = EV.with_columns(pl.Series("time", [1, 2, 3, 2**63 + 5], dtype=pl.UInt64))
    with pytest.raises(cepvec.CepvecDataError) as info:
        cepvec.run("RETURN COUNT(*) PATTERN SEQ(A, B)", ev)
    assert str(info.value).startswith(
        "time column 'time' (UInt64) has a value above 2^63 - 1 at row 3 (9223372036854775813)")
    small = EV.with_columns(pl.col("time").cast(pl.UInt64))  # UInt64 that fits is fine
    assert cepvec.run("RETURN COUNT(*) PATTERN SEQ(A, B)", small)["COUNT(*)"].to_list() == [3]


@pytest.mark.parametrize("engine", ["auto", "reference"])
@pytest.mark.parametrize("window", ["", "WITHIN 2", "WITHIN 2 SLIDE 1", "WITHIN 2 EMIT CHANGES"])
def test_times_beyond_2_61_are_a_data_error(window, engine):
    """Past +-2^61 units (nanoseconds after 2043) SLIDE queries returned no rows, times near 2^63 hung
    (found by a fuzzer); they are refused, and times just inside the limit give the reference's rows."""
    from cepvec.runtime.prepare import TIME_LIMIT

    text = f"RETURN COUNT(*) PATTERN SEQ(A, B) {window}"
    ns = pl.DataFrame({"type": ["A", "B"], "time": pl.Series([2345709600000000000, 2345709630000000000],
                                                              dtype=pl.Datetime("ns"))})
    with pytest.raises(cepvec.CepvecDataError, match=r"time column 'time' has a time too far from 1970 at row 0 "
                                                      r"\(2044-05-01 10:00:00, 2345709600000000000 in unit 'ns'\)"):
        cepvec.run(text, ns, engine=engine)
    edge = TIME_LIMIT - 2 * 3 - 2  # twice WITHIN + SLIDE inside the limit
    ev = pl.DataFrame({"type": ["A", "B"], "time": [edge, edge + 1]})
    assert cepvec.run(text, ev, engine=engine).rows() == cepvec.run(text, ev, engine="reference").rows() != []
    with pytest.raises(cepvec.CepvecDataError):
        cepvec.run(text, ev.with_columns(pl.col("time") + 10), engine=engine)


@pytest.mark.parametrize("dtype", [pl.Int16, pl.UInt8, pl.Int32])
def test_window_ends_beyond_a_narrow_time_dtype_are_a_data_error(dtype):
    """window_start / window_end keep the time column's dtype (docs/semantics.md 7.3); a window end past
    its range was Polars' cast error (found by a fuzzer)."""
    ev = EV.with_columns(pl.col("time").cast(dtype))
    text = "RETURN COUNT(*) PATTERN SEQ(A, B) WITHIN {w} SLIDE 1"
    top = pl.select(dtype.max()).item()
    with pytest.raises(cepvec.CepvecDataError, match=rf"the last SLIDE window ends at {4 + top}, beyond the range "
                                                      rf"of time column 'time' \({dtype}, up to {top}\)"):
        cepvec.run(text.format(w=top), ev)
    assert cepvec.run(text.format(w=top - 4), ev).schema["window_end"] == dtype  # the last end fits


@pytest.mark.parametrize("text", ["RETURN MIN(A.x), MAX(A.x) PATTERN A+",
                                  "RETURN MAX(A.x) PATTERN A+ WHERE A.x + NEXT(A).x != 3"])
def test_overflow_of_a_min_max_query_says_what_overflows(text):
    """A query of MIN / MAX alone keeps the number of matches (it tells which windows have one): the
    message names it, not "a count or sum" the query does not ask for (found by a fuzzer)."""
    ev = pl.DataFrame({"type": ["A"] * 70, "time": list(range(70)), "x": 1})
    with pytest.raises(cepvec.CepvecOverflowError, match=r"^the exact int64 number of matches, which tells MIN / "
                                                         r"MAX which windows have a match, overflows near time \d+ "):
        cepvec.run(text, ev)
    assert cepvec.run(text, ev, numeric="float64").row(0)[-1] == 1


def test_int128_columns_are_a_type_error():
    ev = EV.with_columns(pl.col("x").cast(pl.Int128))
    with pytest.raises(cepvec.CepvecTypeError, match=r"column 'x' is Int128; cepvec reads integers of up to 64 "
                                                      r"bits. Cast it, e.g. pl.col\('x'\).cast\(pl.Int64\)"):
        cepvec.run("RETURN x, COUNT(*) PATTERN SEQ(A, B) GROUP-BY x", ev)


def test_run_takes_type_and_time_column_names():
    ev = EV.rename({"type": "kind", "time": "ts"})
    got = cepvec.run("RETURN COUNT(*) PATTERN SEQ(A, B)", ev, type_col="kind", time_col="ts")
    assert got["COUNT(*)"].to_list() == [3]
    q = cepvec.compile("RETURN COUNT(*) PATTERN SEQ(A, B)")
    with pytest.raises(cepvec.CepvecPlanError, match="type_col='kind' was given, but the compiled query reads "
                                                     "column 'type'; pass type_col to cepvec.compile"):
        cepvec.run(q, ev, type_col="kind")


def test_many_conjuncts_compile_linearly():
    where = " AND ".join(f"A.x != {i + 10}" for i in range(5000))
    t0 = time.perf_counter()
    got = cepvec.run(f"RETURN COUNT(*) PATTERN SEQ(A, B) WHERE {where}", EV)
    assert got["COUNT(*)"].to_list() == [3]
    # 449 s before the fix (quadratic); linear now, about 1 s. A guard, not a benchmark.
    assert time.perf_counter() - t0 < 30


# --------------------------------------------------------------------------- fuzz
SEEDS = [s["text"] for s in json.loads((Path(__file__).parent / "fixtures" / "seed_queries.json").read_text())
         if "text" in s]
TOKENS = ["RETURN", "PATTERN", "WHERE", "GROUP-BY", "GROUP", "BY", "WITHIN", "SLIDE", "EMIT", "CHANGES", "EVENT",
          "AGG", "SEQ", "NOT", "ANY", "AND", "OR", "NEXT", "COUNT", "SUM", "AVG", "MIN", "MAX", "AS", "(", ")", ",",
          "+", "-", "*", "/", "%", "!", "~", "=", "!=", "<", "<=", ">", ">=", "[", "]", ".", "A", "B", "C", "a", "b",
          "x", "s", "1", "0", "2.5", "1e30", "'abc'", "10", "s", "ms", "minutes", "days", "*", "[]", "i", "LEN",
          "skip-till-next-match", "strict-contiguity", "\n", "--", "\"", "'"]
TINY = pl.DataFrame({"type": ["A", "B", "C", "A"], "time": [0, 1, 1, 3], "x": [1, None, 3, 2],
                     "s": ["a", "b", None, "c"], "id": [0, 1, 0, 1]})


def _only_cepvec_errors(text: str, events=TINY) -> None:
    try:
        q = cepvec.compile(text)
    except cepvec.CepvecError:
        return
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cepvec.run(q, events, engine="auto" if q.is_kleene or len(events) < 6 else "auto")
    except cepvec.CepvecError:
        pass


FUZZ = settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(st.binary(max_size=80))
def test_fuzz_random_bytes(data):
    _only_cepvec_errors(data.decode("utf-8", errors="replace"))


@FUZZ
@given(st.lists(st.sampled_from(TOKENS), max_size=30))
def test_fuzz_token_sequences(tokens):
    _only_cepvec_errors(" ".join(tokens))


@FUZZ
@given(st.sampled_from(SEEDS), st.data())
def test_fuzz_mutated_seed_queries(seed, data):
    words = seed.split()
    for _ in range(data.draw(st.integers(1, 3))):
        op = data.draw(st.sampled_from(["drop", "insert", "replace", "swap"]))
        i = data.draw(st.integers(0, max(0, len(words) - 1)))
        if op == "drop" and words:
            del words[i]
        elif op == "insert":
            words.insert(i, data.draw(st.sampled_from(TOKENS)))
        elif op == "replace" and words:
            words[i] = data.draw(st.sampled_from(TOKENS))
        elif op == "swap" and len(words) > 1:
            j = data.draw(st.integers(0, len(words) - 1))
            words[i], words[j] = words[j], words[i]
    _only_cepvec_errors(" ".join(words))


COLUMN_TYPES = {
    "string": pl.Series(["a", "b", "c", "d"]), "float": pl.Series([1.5, float("nan"), None, -2.0]),
    "bool": pl.Series([True, False, None, True]), "date": pl.Series([None, 1, 2, 3]).cast(pl.Date),
    "null": pl.Series([None, None, None, None]), "uint64": pl.Series([0, 1, 2**64 - 1, 3], dtype=pl.UInt64),
    "categorical": pl.Series(["a", "b", "a", None]).cast(pl.Categorical), "int": pl.Series([1, 2, None, 4]),
    "int128": pl.Series([1, 2, None, 4]).cast(pl.Int128), "far": pl.Series([0, 1, 2**61, 2**63 - 1]),
}
FRAME_QUERIES = [
    "RETURN COUNT(*), SUM(A.x), MIN(A.x), MAX(B.x), AVG(A.x) PATTERN SEQ(A, B) WITHIN 3",
    "RETURN x, COUNT(*) PATTERN A+ WHERE A.x < NEXT(A).x GROUP-BY x",
    "RETURN COUNT(*) PATTERN SEQ(A a, B b) WHERE a.x > 1 AND [x]",
    "RETURN COUNT(*) PATTERN SEQ(A, NOT C, B) WHERE A.x = 'a' WITHIN 5 SLIDE 1",
]


@FUZZ
@given(st.sampled_from(sorted(COLUMN_TYPES)), st.sampled_from(sorted(COLUMN_TYPES)),
       st.sampled_from(sorted(COLUMN_TYPES)), st.sampled_from(FRAME_QUERIES))
def test_fuzz_column_types(type_kind, time_kind, x_kind, text):
    ev = pl.DataFrame({"type": COLUMN_TYPES[type_kind] if type_kind != "string" else ["A", "B", "C", "B"],
                       "time": COLUMN_TYPES[time_kind] if time_kind != "int" else [0, 1, 1, 3],
                       "x": COLUMN_TYPES[x_kind]})
    _only_cepvec_errors(text, ev)


def test_uint64_values_above_int64_raise_cepvec_errors():
    """A UInt64 value above 2**63 - 1: an exact SUM overflows (linear, scan and shared paths); an edge
    predicate's int64 arithmetic cannot hold it (a type error naming the column), never Polars' cast error.
    Found by test_fuzz_column_types."""
    df = pl.DataFrame({"type": ["A", "B", "A", "B"], "time": [1, 2, 3, 4],
                       "x": pl.Series([2**64 - 1, 1, 5, 2], dtype=pl.UInt64)})
    seq = "RETURN COUNT(*), SUM(A.x) PATTERN SEQ(A, B) WITHIN 3"
    scan = "RETURN COUNT(*), SUM(A.x) PATTERN A+ WHERE A.x + NEXT(A).x != 3 WITHIN 3"
    for q in (seq, scan):
        with pytest.raises(cepvec.CepvecOverflowError, match="when reading a SUM / AVG attribute"):
            cepvec.run(q, df)
    with pytest.raises(cepvec.CepvecOverflowError, match="query 'a'"):
        cepvec.run_many({"a": seq, "b": seq.replace("WITHIN 3", "WITHIN 3 SLIDE 1").replace("SEQ(A, B)", "SEQ(A, B, B)"),
                         "c": seq.replace("SEQ(A, B)", "SEQ(A, B, A)")}, df)
    with pytest.raises(cepvec.CepvecTypeError, match="column 'x' .UInt64. holds a value above the int64 range"):
        cepvec.run(scan, df, numeric="float64")
    assert cepvec.run(seq, df, numeric="float64")["SUM(A.x)"].to_list() == [2.0**64 - 1 + 5]


@pytest.mark.parametrize("name", ["__pid", "__t", "__gid", "__bind", "__g"])
def test_columns_named_like_cepvec_internal_columns(name):
    """Names beginning with '__' are cepvec's own columns: a query that reads one gets an error naming
    it and how to rename it (they once gave wrong rows, or crashed a kernel); an input column of such a
    name that the query does not read changes nothing."""
    ev = pl.DataFrame({"type": ["A", "B", "B", "A", "C", "B"], "time": [6, 9, 10, 11, 12, 14],
                       "id": [1, 1, 2, 2, 2, 2], "g": [0] * 6, "v": [2.5, 1.0, 0.0, 4.0, 1.0, 3.0]})
    text = "RETURN COUNT(*), SUM(A.v) PATTERN SEQ(A, B) WHERE [{c}] GROUP-BY g WITHIN 10 EMIT CHANGES"
    with pytest.raises(cepvec.CepvecPlanError, match=f"column '{name}' is read by the query.*rename it"):
        cepvec.run(text.format(c=name), ev.rename({"id": name}))
    want = cepvec.run(text.format(c="id"), ev)
    assert want.height == 3
    assert cepvec.run(text.format(c="id"), ev.with_columns(pl.col("id").alias(name) * 7)).equals(want)
    assert cepvec.run_many({"q": text.format(c="id")}, ev.with_columns(pl.lit(1).alias(name)))["q"].equals(want)


@pytest.mark.parametrize("aggs, pattern", [("COUNT(*), MAX(B.x)", "SEQ(A, B) WHERE [id]"),
                                           ("COUNT(*)", "A+ WHERE [id] AND A.x != NEXT(A).x")])
def test_emit_changes_rows_past_the_memory_budget_are_refused_with_a_fix(aggs, pattern, monkeypatch):
    """EMIT CHANGES without WITHIN, ``[id]`` finer than GROUP-BY, where the rows are a row per partition
    and later END time of the group (MIN / MAX on the linear path, any aggregate on the scan path).
    Past ``EMIT_ROWS_BUDGET`` bytes (an eighth of the machine's memory) they raise a CepvecPlanError that
    names the rows and the fixes, before allocating them (a process was once killed instead); under
    WITHIN the same input runs, and so do counts and sums on the linear path (rows where a partition's
    totals change, carried forward)."""
    import numpy as np

    from cepvec.runtime import memory

    rng = np.random.default_rng(0)
    n = 3000
    ev = pl.DataFrame({"type": rng.choice(["A", "B"], n), "time": np.arange(n), "id": rng.integers(0, 300, n),
                       "x": rng.integers(0, 5, n)})
    text = f"RETURN {aggs} PATTERN {pattern} EMIT CHANGES"
    want = cepvec.run(text, ev)
    monkeypatch.setattr(memory, "EMIT_ROWS_BUDGET", 10_000)
    with pytest.raises(cepvec.CepvecPlanError, match=r"partitions .* a row at every later END time.*Add WITHIN w"):
        cepvec.run(text, ev)
    assert cepvec.run(text.replace("EMIT CHANGES", "WITHIN 50 EMIT CHANGES"), ev).height > 0
    sums = "RETURN COUNT(*), SUM(B.x) PATTERN SEQ(A, B) WHERE [id] EMIT CHANGES"
    assert cepvec.run(sums, ev).height > 1000
    monkeypatch.setattr(memory, "EMIT_ROWS_BUDGET", 1 << 40)
    assert cepvec.run(text, ev).equals(want)

"""Partition ids (cepvec.runtime.partitions.Partitions): every key dtype gets the ids of the Polars join.

A single key column of a String, Categorical, Enum or float dtype takes int64 codes of its rows
(hashes, physical ids, bit patterns) and a Numba table; the ids and the key frame must be those
of the join of every row, batch after batch, with nulls, NaN, -0.0 and hash collisions.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cepvec
from cepvec.runtime import partitions as P
from tests.strategies import examples

Q = cepvec.compile("RETURN id, COUNT(*) PATTERN SEQ(A, B) WHERE [id] GROUP-BY id")

POOLS = {
    "string": (pl.String, ["a", "b", "long key past twelve bytes", "", None, "é"]),
    # ids from the Arrow string views (kernels/keys.py::view_ids): inline ones, long ones alike in length and prefix
    "string views": (pl.String, ["a", "b", "long key past twelve bytes", "long key past twelve bytez", "",
                                 "é", "abcdefghijkl", "abcdefghijkm", "abcdefghijklm"]),
    "categorical": (pl.Categorical, ["x", "y", "z", None]),
    "enum": (pl.Enum(["p", "q", "r", "s"]), ["s", "q", "p", None]),
    "float": (pl.Float64, [0.0, -0.0, 1.5, float("nan"), -float("nan"), None, 1e300, -2.25,
                          float(np.array(0x7FF4_0000_0000_0001).view(np.float64))]),  # a NaN of another payload
    # no nulls, a key range too wide for a direct table: Partitions._int_ids' hash table, kept between batches
    "int, spread": (pl.Int64, [0, 7, -3, 2**40, -(2**50), 2**62, -(2**63)]),
    # null's code is one below the smallest value, or one above the largest (int64's least is a value)
    "int with nulls": (pl.Int64, [3, None, -1, 0, 2**62, -(2**63)]),
    "int with nulls, no free code": (pl.Int64, [None, -(2**63), 2**63 - 1, 0]),
    "int32 with nulls": (pl.Int32, [None, 5, -7]),
    "uint64 with nulls": (pl.UInt64, [None, 0, 2**63 - 1, 2**64 - 1]),
}


def _ids_in_batches(parts: P.Partitions, df: pl.DataFrame, cuts: list[int], method) -> list[int]:
    bounds = [0, *sorted(set(cuts)), len(df)]
    return [i for a, b in zip(bounds[:-1], bounds[1:]) if b > a for i in method(parts, df[a:b]).tolist()]


def _coded_agrees_with_joined(schema: dict, q, df: pl.DataFrame, cuts: list[int]) -> None:
    """The ids of ``df`` cut at ``cuts``, through the codes (any size, CODED_IDS_FROM = 0) and through the join."""
    coded, joined = P.Partitions(q, schema), P.Partitions(q, schema)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(P, "CODED_IDS_FROM", 0)
        mp.setattr(P, "SIZED_TABLES_FROM", 0)  # tables sized for a sample's guess of the keys
        got = _ids_in_batches(coded, df, cuts, P.Partitions.ids)
    assert got == _ids_in_batches(joined, df, cuts, P.Partitions._joined_ids)
    assert coded.keys.equals(joined.keys)
    for parts in (coded, joined):  # (appended batch after batch, kept in one chunk)
        assert max(parts.keys.n_chunks("all")) <= 1


def _key_frame(kind: str, values: list) -> pl.DataFrame:
    dtype = POOLS[kind][0]
    if dtype.is_integer():
        return pl.DataFrame({"id": pl.Series("id", values, dtype=dtype)})
    return pl.DataFrame({"id": pl.Series("id", values, dtype=pl.Float64 if kind == "float" else pl.String).cast(dtype)})


@settings(max_examples=examples(150), deadline=None)
@given(kind=st.sampled_from(sorted(POOLS)), data=st.data())
def test_coded_ids_are_those_of_the_join(kind, data):
    values = data.draw(st.lists(st.sampled_from(POOLS[kind][1]), max_size=40), label="keys")
    cuts = data.draw(st.lists(st.integers(0, len(values)), max_size=3), label="cuts")
    _coded_agrees_with_joined({"id": POOLS[kind][0]}, Q, _key_frame(kind, values), cuts)


@pytest.mark.parametrize("kind", sorted(POOLS))
def test_coded_ids_of_every_pool_value_in_two_orders(kind):
    """Every value of the pool (null, NaN, -NaN, -0.0 beside 0.0, ...) in a first batch and again,
    reversed, with the pool's first value, in a second one."""
    pool = POOLS[kind][1]
    df = _key_frame(kind, pool[::-1] + pool + pool[:1])
    _coded_agrees_with_joined({"id": POOLS[kind][0]}, Q, df, [len(pool) // 2])


Q2 = cepvec.compile("RETURN a, b, COUNT(*) PATTERN SEQ(A, B) WHERE [a, b] GROUP-BY a, b")
PAIRS = {
    "string x int": ({"a": pl.String, "b": pl.Int64}, ["u", "v", None], [0, 7, -3]),
    "categorical x float": ({"a": pl.Categorical, "b": pl.Float64}, ["x", None], [0.0, -0.0, float("nan"), None, 2.5]),
    "int with nulls x date": ({"a": pl.Int64, "b": pl.Date}, [1, None, 2], [0, 19000]),
    "uint64 x bool": ({"a": pl.UInt64, "b": pl.Boolean}, [0, 2**64 - 1, 2**63], [True, False]),
    # a float key first: its NaN flag column comes after every key column in the key frame
    "float x int": ({"a": pl.Float64, "b": pl.Int64}, [1.5, float("nan"), None, -0.0], [7, -1]),
}


def _pairs_agree(kind: str, rows: list, cuts: list[int]) -> None:
    schema = PAIRS[kind][0]
    raw = {"a": schema["a"] if schema["a"] != pl.Categorical else pl.String,
           "b": pl.Int32 if schema["b"] == pl.Date else schema["b"]}
    df = pl.DataFrame({"a": [r[0] for r in rows], "b": [r[1] for r in rows]}, schema=raw, strict=False).cast(schema)
    _coded_agrees_with_joined(schema, Q2, df, cuts)


@settings(max_examples=examples(120), deadline=None)
@given(kind=st.sampled_from(sorted(PAIRS)), data=st.data())
def test_coded_ids_of_two_key_columns_are_those_of_the_join(kind, data):
    """Tuples of two columns of mixed dtypes: the ids of the tuples of their codes' ids."""
    _, pool_a, pool_b = PAIRS[kind]
    rows = data.draw(st.lists(st.tuples(st.sampled_from(pool_a), st.sampled_from(pool_b)), max_size=40), label="keys")
    _pairs_agree(kind, rows, data.draw(st.lists(st.integers(0, len(rows)), max_size=3), label="cuts"))


@pytest.mark.parametrize("kind", sorted(PAIRS))
def test_coded_ids_of_every_pair_in_two_orders(kind):
    _, pool_a, pool_b = PAIRS[kind]
    rows = [(x, y) for x in pool_a for y in pool_b]
    _pairs_agree(kind, rows + rows[::-1], [len(rows) // 2, len(rows) + 1])


def test_a_hash_collision_falls_back_to_the_join(monkeypatch):
    """Strings without Arrow views (hashed to int64 codes), every one hashed to one code: the check
    finds rows of one code with different keys."""
    col = pl.Series("id", ["a", "b", "a", None, "c"])
    monkeypatch.setattr(P, "CODED_IDS_FROM", 0)
    monkeypatch.setattr(P, "string_view_array", lambda *a, **k: None)
    monkeypatch.setattr(P, "_row_codes", lambda c: (np.zeros(len(c), np.int64), False))
    got = P.Partitions(Q, {"id": pl.String}).ids(pl.DataFrame({"id": col}))
    assert got.tolist() == [0, 1, 0, 2, 3]


@pytest.mark.parametrize("values", [["a", "b", "a", "c"], ["long key past twelve bytes", "long key past twelve bytez"],
                                    ["abcdefghijkl", "abcdefghijkm"], ["abc", "abcd"], ["", "x", None]])
def test_strings_alike_in_their_views_get_the_ids_of_the_join(monkeypatch, values):
    """Strings read from their Arrow views: inline ones (up to 12 bytes) and long ones that share
    their length and first four bytes, null and the empty string."""
    monkeypatch.setattr(P, "CODED_IDS_FROM", 0)
    df = pl.DataFrame({"id": pl.Series(values + values[::-1], dtype=pl.String)})
    got = P.Partitions(Q, {"id": pl.String}).ids(df)
    want = P.Partitions(Q, {"id": pl.String})._joined_ids(df)
    assert got.tolist() == want.tolist()


STRINGS = ["", "a", "ab", "é", "abcdefghijkl", "abcdefghijkm", "abcdefghijklm", "long key past twelve bytes",
           "long key past twelve bytez", "long kez past twelve bytes", "long key, other length",
           "lonG key past twelve bytes", "abcdefghijklmnop", "abcdefghijklmnoq", None]


@settings(max_examples=examples(150), deadline=None)
@given(picks=st.lists(st.integers(0, len(STRINGS) - 1), min_size=1, max_size=60), start=st.integers(0, 3),
       cut=st.integers(0, 60), how=st.sampled_from(["one", "halves", "shares"]),
       guess=st.sampled_from([0.0, 1.0, 7.0, 1e9, np.inf]))
def test_string_ids_from_views_are_those_of_the_strings(picks, start, cut, how, guess):
    """The ids of a String column read from its Arrow views (``kernels/keys.py::view_ids``): equal
    ids for equal strings (null one key), numbered in order of first appearance; on a slice (view
    offset) of a column of two chunks (one with its own long-string buffers), in one pass, or on
    two threads in two halves of the rows or two shares of the keys; with hash tables sized for a
    ``guess`` of the keys (0: none; too few or too many)."""
    values = [STRINGS[i] for i in picks]
    head = pl.Series("id", ["pad"] * start + values[:cut], dtype=pl.String)
    col = pl.concat([head, pl.Series("id", values[cut:], dtype=pl.String)], rechunk=False)[start:]
    with pytest.MonkeyPatch.context() as mp:
        if how != "one":
            mp.setenv("CEPVEC_NUM_THREADS", "2")
            mp.setattr(P.threads, "MIN_EVENTS_PER_THREAD", 1)
        mp.setattr(P, "_numbering", lambda n, distinct, shares: (how if n >= 2 else "one", guess))
        local, first, exact = P._column_ids(col)
    number: dict = {}
    assert exact
    assert local.tolist() == [number.setdefault(v, len(number)) for v in values]
    assert first.tolist() == [values.index(v) for v in number]


@pytest.mark.parametrize("tail", ["", "long key past twelve bytes"])
def test_inline_strings_alike_in_their_first_word(tail):
    """Thousands of 12-byte strings with one length and first four bytes (one first view word): the
    probes pass slots of other keys with that word, and only the second word tells them apart; then
    a long string (``tail``), from which on the general loop numbers the rows."""
    values = [f"abcd{k:08d}" for k in range(3000)]
    values = values + values[::-1] + [tail] * bool(tail) + values[::7]
    local, first, exact = P._column_ids(pl.Series("id", values))
    number: dict = {}
    assert exact
    assert local.tolist() == [number.setdefault(v, len(number)) for v in values]
    assert first.tolist() == [values.index(v) for v in number]


def test_long_strings_are_compared_byte_by_byte():
    """Long strings whose two key words agree (length, first four bytes, hash) are still compared:
    the comparison of ``view_ids`` finds a difference in any byte past the fourth, at any length."""
    import numba

    from cepvec.kernels.keys import _same_long
    from cepvec.runtime.type_codes import string_view_array, view_words_of

    same = numba.njit(lambda v, a, b, addrs: _same_long(np.int64(v[a, 0] & np.uint64(0xFFFFFFFF)), v[a, 1], v[b, 1],
                                                        addrs))  # jitted callers only
    for n in (13, 15, 16, 20, 24, 31, 40):
        base = "".join(chr(97 + k % 26) for k in range(n))
        values = [base, base] + [base[:k] + "#" + base[k + 1:] for k in range(4, n)]
        arr = string_view_array(pl.Series(values))
        addrs = np.array([b.address for b in arr.buffers()[2:]], np.int64)
        views = view_words_of(arr)
        assert same(views, 0, 1, addrs)
        assert not any(same(views, 0, j, addrs) for j in range(2, len(values)))


@pytest.mark.parametrize("keys, shares, how", [(10, True, "halves"), (1000, True, "halves"), (20_000, True, "halves"),
                                               (100_000, True, "shares"), (None, True, "shares"),
                                               (100_000, False, "halves"), (600_000, False, "one"), (None, False, "one")])
def test_numbering_by_the_keys_for_the_rows(monkeypatch, keys, shares, how):
    """The sample's guess (``_numbering``) of 10^6 rows drawn from ``keys`` keys (None: all distinct),
    on two threads: shares of the keys (where the caller has them) when a table outgrows a core's
    cache, else halves while a half holds at most an eighth of the rows as distinct keys."""
    monkeypatch.setenv("CEPVEC_NUM_THREADS", "2")
    n = 1_000_000
    codes = np.arange(n) if keys is None else np.random.default_rng(1).integers(0, keys, n)
    how2, guess = P._numbering(n, lambda rows: len(P.sorted_unique(codes[rows])), shares)
    assert how2 == how
    assert guess == np.inf if keys is None else keys / 2 < guess < 2 * keys  # within the factor of a table's growth
    monkeypatch.setenv("CEPVEC_NUM_THREADS", "1")
    assert P._numbering(n, lambda rows: len(P.sorted_unique(codes[rows])), shares) == ("one", guess)


@settings(max_examples=examples(150), deadline=None)
@given(codes=st.lists(st.integers(-3, 8) | st.integers(-2**63, 2**63 - 1), max_size=80))
def test_local_ids_in_two_halves_are_those_of_one_pass(codes):
    """Dense ids and first rows of int64 codes (direct table or hash table), in two halves on two
    threads merged by the ids of their first rows: those of one pass, in order of first appearance."""
    codes = np.array(codes, np.int64)
    one = P._local_ids(codes)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CEPVEC_NUM_THREADS", "2")
        mp.setattr(P.threads, "MIN_EVENTS_PER_THREAD", 1)
        mp.setattr(P, "DIRECT_HALVES_FROM", 0)
        mp.setattr(P, "ROWS_PER_KEY_FOR_HALVES", 0)
        mp.setattr(P, "HALVES_UP_TO_KEYS", np.inf)
        two = P._local_ids(codes)
    seen = {}
    want = [seen.setdefault(v, len(seen)) for v in codes.tolist()]  # ids in order of first appearance
    assert one[0].tolist() == two[0].tolist() == want
    assert one[1].tolist() == two[1].tolist() == [want.index(k) for k in range(len(seen))]


_K = np.arange(20_000, dtype=np.uint64)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)  # the multiplier of Fibonacci hashing, and its inverse mod 2**64
_GOLDEN_INVERSE = np.uint64(pow(0x9E3779B97F4A7C15, -1, 1 << 64))


@pytest.mark.parametrize("name", ["k << 44", "integral floats", "k", "k * 1000", "k * golden", "k * golden^-1"])
def test_hash_slots_spread_keys_of_any_pattern(name):
    """20 000 keys of a pattern in a table of 2^17 slots, by linear probing: at most 1.5 probes a key
    on average. Packed ids (``k << 44``) and integral floats differ only in their high bits (a slot
    from the low bits of the product put them all in one slot: 3.2 s instead of 60 ms); keys of a
    multiplicative pattern went to a few runs of slots under Fibonacci hashing (the top bits of one
    product: 8.3 probes a key for ``k * golden``, 10 000 for the multiples of its inverse)."""
    import numba

    from cepvec.kernels.keys import _slot

    with np.errstate(over="ignore"):
        keys = {"k << 44": _K << np.uint64(44), "integral floats": _K.astype(np.float64).view(np.uint64),
                "k": _K, "k * 1000": _K * np.uint64(1000), "k * golden": _K * _GOLDEN,
                "k * golden^-1": _K * _GOLDEN_INVERSE}[name].view(np.int64)

    @numba.njit
    def probes(keys, shift):  # the compiled helper (jitted callers only), and a table filled by linear probing
        size = 1 << (64 - shift)
        used = np.zeros(size, np.bool_)
        total = 0
        for k in keys:
            j = _slot(k, shift)
            total += 1
            while used[j]:
                j = (j + 1) & (size - 1)
                total += 1
            used[j] = True
        return total / len(keys)

    assert probes(keys, np.int64(64 - 17)) <= 1.5


KEYS_E2E = {
    "float": pl.Series([0.5, -0.0, 0.0, float("nan"), None, 2.0] * 500),
    "string": pl.Series(["a", None, "long key past twelve bytes", "b", "", "a"] * 500),
    "categorical": pl.Series(["x", "y", None, "z", "x", "y"] * 500).cast(pl.Categorical),
}
E2E_QUERIES = {
    "linear": "RETURN id, COUNT(*), SUM(b.v) PATTERN SEQ(A a, B b, C c) WHERE [id] GROUP-BY id WITHIN 40 SLIDE 20",
    "trend": "RETURN id, COUNT(*) PATTERN SEQ(A, B+) WHERE [id] AND B.v < NEXT(B).v GROUP-BY id WITHIN 30",
    "scan": "RETURN id, COUNT(*) PATTERN A+ WHERE [id] AND A.v + NEXT(A).v != 3 GROUP-BY id WITHIN 20 EMIT CHANGES",
    "match": "RETURN id, COUNT(*) PATTERN SEQ(A a, B b) WHERE skip_till_next_match(a, b) { [id] } GROUP-BY id",
}


@pytest.mark.parametrize("kind", sorted(KEYS_E2E))
@pytest.mark.parametrize("path", sorted(E2E_QUERIES))
def test_every_path_gets_the_same_rows_through_codes_and_join(kind, path):
    """3 000 events whose keys repeat NaN, -0.0, null and long strings: every path's rows with the ids
    from row codes (any size, CODED_IDS_FROM = 0) equal those with the ids from the join of every row (the ids differ in
    nothing a path can see), and the shared executor's too."""
    import numpy as np

    rng = np.random.default_rng(3)
    keys = KEYS_E2E[kind].sample(fraction=1.0, shuffle=True, seed=1)
    n = len(keys)
    df = pl.DataFrame({"type": rng.choice(list("ABC"), n), "time": np.sort(rng.integers(0, n // 2, n)),
                       "v": rng.integers(0, 5, n)}).with_columns(keys.alias("id"))
    text = E2E_QUERIES[path]
    runs = []
    for below in (0, 1 << 40):
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(P, "CODED_IDS_FROM", below)
            runs.append((cepvec.run(text, df), cepvec.run_many({"q": text, "q2": E2E_QUERIES["linear"]}, df)))
    (coded, coded_many), (joined, joined_many) = runs
    assert len(coded) > 0
    assert coded.equals(joined), path
    for name in coded_many:
        assert coded_many[name].equals(joined_many[name]), name


@pytest.mark.parametrize("text", [
    "RETURN k, COUNT(*) PATTERN SEQ(A, B) WHERE [k] GROUP-BY k WITHIN 20 SLIDE 5",
    "RETURN k, COUNT(*) PATTERN SEQ(A, B+) WHERE [k] GROUP-BY k",
    "RETURN k, COUNT(*) PATTERN SEQ(A, B+) WHERE [k] AND B.x < NEXT(B).x GROUP-BY k WITHIN 20 SLIDE 10",
    "RETURN k, COUNT(*) PATTERN A+ WHERE [k] AND A.x + NEXT(A).x != 3 GROUP-BY k WITHIN 20",
])
@pytest.mark.parametrize("with_null", [False, True])
def test_decimal_group_keys(text, with_null):
    """A Decimal GROUP-BY column: the output repeats each group's value as a Decimal (NumPy would make
    objects of it: a Polars cast error), as the reference engine does; nulls keep their own group."""
    from decimal import Decimal

    keys = [Decimal("1.50"), Decimal("-2.25"), None if with_null else Decimal("7"), Decimal("1.50"),
            Decimal("0.00")] * 6
    df = pl.DataFrame({"type": ["A", "B", "A", "B", "B", "A"] * 5, "time": list(range(30)),
                       "k": pl.Series(keys, dtype=pl.Decimal(10, 2)), "x": [i % 4 for i in range(30)]})
    assert cepvec.run(text, df).equals(cepvec.run(text, df, engine="reference"))

"""Dense partition ids for the partition keys of a query, shared by the engines' drivers."""

from __future__ import annotations

import numpy as np
import polars as pl

from cepvec.kernels import _jit
from cepvec.kernels.keys import (_capacity, dense_ids, float_codes, ids_direct, key_table, merge_shares, min_max,
                                 new_keys_direct, renumber_new, scatter_ids, view_ids, view_share)
from cepvec.runtime import threads
from cepvec.runtime.type_codes import string_view_array, view_words_of


#: From this many rows on, keys other than one null-free integer column take row codes and the Numba
#: tables (:meth:`Partitions._coded_ids`); fewer rows go through the Polars join (no kernel to compile
#: for a first run on small data). Tests set it to 0 to run the codes on small inputs too.
CODED_IDS_FROM = 1 << 14
#: A direct table of keys is filled in two halves (two threads) when the rows are this many times
#: its length or more: with more keys for the rows, the halves see the same keys and merging them
#: costs as much as the second half (10^6 rows of 2·10^5 keys: 6.6 ms in halves, 3.0 ms in one pass).
ROWS_PER_KEY_FOR_HALVES = 8
#: ... and when the column has this many rows or more: below it one pass that enters the keys and
#: writes the ids is faster than filling the table in halves and reading it in halves (100 keys, two
#: threads: 10^6 rows 0.87 against 1.17 ms; 4·10^6 rows 6.5 against 5.9 ms).
DIRECT_HALVES_FROM = 1 << 21


class Partitions:
    """Dense partition ids for the partition keys (GROUP-BY plus unqualified equivalences).

    Float keys: NaN does not join to NaN, so keys hold (value with NaN as null, is-NaN flag).
    One null-free integer key column (the usual customer or vehicle id) takes a Numba path: a
    direct table over a small key range, else a hash table kept between calls; others a Polars join.
    """

    def __init__(self, q, key_schema: dict):
        self.q = q
        self.float_keys = [c for c, dt in key_schema.items() if dt.is_float()]
        ks = dict(key_schema)
        for c in self.float_keys:
            ks[c + "__nan"] = pl.Boolean
        self.key_cols = list(ks)
        self.keys = pl.DataFrame(schema={**ks, "__pid": pl.Int64})
        self.int_key = None
        if len(key_schema) == 1:
            (c, dt), = key_schema.items()
            if dt.is_integer() and dt != pl.UInt64:
                self.int_key = c
        self._table = key_table()
        self._tab_n = 0  # len(self.keys) the hash table reflects (-1: stale)

    def __len__(self) -> int:
        return max(len(self.keys), 1)

    def key_exprs(self) -> list[pl.Expr]:
        out = []
        for c in self.q.partition_by:
            if c in self.float_keys:
                out += [pl.col(c).fill_nan(None).alias(c), pl.col(c).is_nan().fill_null(False).alias(c + "__nan")]
            else:
                out.append(pl.col(c))
        return out

    def ids(self, df: pl.DataFrame, numbering: tuple[str, float] | None = None) -> np.ndarray:
        """Dense partition id of every row of ``df`` (new keys get the next ids); ``numbering``: how
        to number one String key column, when the caller has asked (:meth:`string_numbering`)."""
        cols = self.key_cols
        if not cols:
            if len(self.keys) == 0:
                self.keys = pl.DataFrame({"__pid": [0]}, schema={"__pid": pl.Int64})
                self._on_new_keys()
            return np.zeros(len(df), np.int64)
        key = self._int_key_range(df) if len(df) >= _jit.NUMPY_BELOW or direct_kernel_loaded() else None
        if key is not None:
            vals, vmin, vmax = key
            if not _direct_range(vmin, vmax, len(vals)):
                return self._hashed_ids(vals)
            ids = np.empty(len(vals), np.int64)
            self._direct_table(vals, vmin, vmax, ids)
            return ids
        if len(df) >= CODED_IDS_FROM:
            ids = self._coded_ids(df, numbering)
            if ids is not None:
                return ids
        return self._joined_ids(df)

    def string_numbering(self, df: pl.DataFrame) -> tuple[str, float] | None:
        """How :meth:`ids` numbers one long String key column of ``df`` (:func:`_numbering`: ``"one"``
        pass, two ``"halves"`` of the rows or two ``"shares"`` of the keys, and the guess of the keys);
        None for other keys. Halves and shares take both threads, better run alone than on one thread
        beside other work (with 100 / 1 000 keys in 10^6 rows the ids in one pass beside the type
        codes took 9.5-10.6 ms of a run, in halves first 6.4 ms; A-Seq on two cores 4-6 % faster,
        docs/performance-log.md, session 49). Give the answer to :meth:`ids`: it is a sample of the
        rows (0.5-0.9 ms at 10^6)."""
        if len(self.key_cols) != 1 or len(df) < CODED_IDS_FROM:
            return None
        col = df[self.key_cols[0]]
        arr = string_view_array(col, nulls=True)
        return None if arr is None else _string_ids(col, arr, decide_only=True)

    def _joined_ids(self, df: pl.DataFrame) -> np.ndarray:
        """:meth:`ids` by a Polars join of the distinct keys with the known ones (any key columns)."""
        cols = self.key_cols
        self._tab_n = -1  # the join below may add keys the hash table does not hold
        df = df.select(self.key_exprs())
        uniq = df.unique(maintain_order=True)
        known = uniq.join(self.keys, on=cols, how="left", nulls_equal=True)
        new = known.filter(pl.col("__pid").is_null()).select(cols)
        if len(new):
            start = len(self.keys)
            new = new.with_columns(pl.int_range(start, start + len(new), dtype=pl.Int64).alias("__pid"))
            self._append_keys(new)
        return df.join(self.keys, on=cols, how="left", nulls_equal=True, maintain_order="left")["__pid"].to_numpy()

    def _distinct_ids(self, df: pl.DataFrame) -> np.ndarray:
        """:meth:`_joined_ids` of rows with distinct keys (the first row of each key of a batch):
        one join with the known keys, the others numbered in order."""
        cols = self.key_cols
        df = df.select(self.key_exprs()).select(cols)  # the key frame's column order (NaN flags last)
        if len(self.keys):
            pid = df.join(self.keys, on=cols, how="left", nulls_equal=True, maintain_order="left")["__pid"]
            new = pid.is_null().to_numpy()
            ids = pid.fill_null(-1).to_numpy().copy()
        else:
            new = np.ones(len(df), np.bool_)
            ids = np.empty(len(df), np.int64)
        n_new = int(new.sum())
        if n_new:
            self._tab_n = -1  # keys the hash table of _int_ids does not hold
            start = len(self.keys)
            ids[new] = np.arange(start, start + n_new, dtype=np.int64)
            added = df.filter(pl.Series(new)) if n_new < len(df) else df
            added = added.with_columns(pl.Series("__pid", ids[new], dtype=pl.Int64))
            self._append_keys(added)
        return ids

    def _coded_ids(self, df: pl.DataFrame, numbering: tuple[str, float] | None = None) -> np.ndarray | None:
        """:meth:`ids` through int64 codes of the rows (None: a key column has no codes for its dtype).

        Each key column gets dense ids of this batch (:func:`_column_ids`; several columns: the ids
        of the tuples of their ids); the first row of each goes through the join of
        :meth:`_joined_ids` (a row per distinct key, in order of first appearance, so new keys are
        numbered as the join of every row numbers them), and every row takes its first row's id.
        Ids from hashed codes are checked: a collision (rows with one code and different keys) sends
        the batch through the join.
        """
        cols = list(self.q.partition_by)
        per_col = [_column_ids(df[c], numbering if len(cols) == 1 else None) for c in cols]
        if any(x is None for x in per_col):
            return None
        local, first, _ = per_col[0]
        for ids2, first2, _ in per_col[1:]:
            m, m2 = len(first), len(first2)
            if m * m2 >= 1 << 62:
                return None
            local, first = _local_ids(local * m2 + ids2)
        for c, (_, _, exact) in zip(cols, per_col):
            if not exact and not _same_as_first(df[c], local, first):
                return None
        return _renumbered(local, self._distinct_ids(df[first]))

    def _int_key_range(self, df: pl.DataFrame) -> tuple[np.ndarray, int, int] | None:
        """The values of the one null-free integer key column of ``df`` as int64, and their minimum and
        maximum (None: no such column, or no rows)."""
        if self.int_key is None or not len(df):
            return None
        col = df[self.int_key]
        if col.null_count():
            return None
        vals = col.cast(pl.Int64).to_numpy()
        # the halves of a long column in two threads (a read of the column: at 10^6 rows, 1.0 -> 0.6 ms)
        bounds = threads.map_threads(lambda r: min_max(vals[r[0]:r[1]]), threads.halves(len(vals)))
        return vals, min(int(lo) for lo, _ in bounds), max(int(hi) for _, hi in bounds)

    def _direct_table(self, vals: np.ndarray, vmin: int, vmax: int, ids: np.ndarray) -> None:
        """The ids of ``vals`` into ``ids`` from a direct table of the keys ``vmin..vmax``, the known ones
        and those of ``vals`` entered (new keys numbered in order of first appearance, the key frame
        extended; :func:`_direct_ids`); the hash table is rebuilt when next needed."""
        c = self.int_key
        n0 = len(self.keys)
        direct = np.full(vmax - vmin + 1, -1, np.int64)
        kc = self.keys[c]
        if kc.null_count():
            known = self.keys.filter(pl.col(c).is_between(vmin, vmax))
            direct[known[c].cast(pl.Int64).to_numpy() - vmin] = known["__pid"].to_numpy()
        else:  # (a mask, not a filter: a query costs more than the keys of a batch)
            kv = kc.cast(pl.Int64).to_numpy()
            inside = (kv >= vmin) & (kv <= vmax)
            direct[kv[inside] - vmin] = self.keys["__pid"].to_numpy()[inside]
        self._add_int_keys(vals[_direct_ids(vals, vmin, direct, n0, ids)])
        self._tab_n = -1

    def _hashed_ids(self, vals: np.ndarray) -> np.ndarray:
        """:meth:`ids` of the int64 values of one integer key column through the hash table kept
        between calls (a key range too wide for a direct table)."""
        c = self.int_key
        n0 = len(self.keys)
        want = 0  # room for the keys of the batch (a guess; at least the known ones are held)
        if len(vals) >= SIZED_TABLES_FROM:
            want = _keys_in(_guess_keys(len(vals), lambda rows: len(sorted_unique(vals[rows]))), len(vals))
        if self._tab_n != n0 or _capacity.py_func(len(self._table), 2) < want:
            # rebuild the hash table from the keys (a join added some; or sized for the batch's)
            known = self.keys.filter(pl.col(c).is_not_null())
            kv = known[c].cast(pl.Int64).to_numpy()
            _first, table = dense_ids(kv, key_table(max(n0 + 1, want)), 0, np.empty(len(kv), np.int64))
            if len(kv):  # dense_ids numbered them 0..m-1 in order; set the real partition ids
                used = table[:, 1] >= 0
                table[used, 1] = known["__pid"].to_numpy()[table[used, 1]]
            self._table = table
        ids = np.empty(len(vals), np.int64)
        first, self._table = dense_ids(vals, self._table, n0, ids)
        self._add_int_keys(vals[first])
        self._tab_n = len(self.keys)
        return ids

    def _add_int_keys(self, new_keys: np.ndarray) -> None:
        """Append the keys ``new_keys`` of the integer key column, numbered from ``len(self.keys)``."""
        if not len(new_keys):
            return
        c, n0 = self.int_key, len(self.keys)
        self._append_keys(pl.DataFrame([pl.Series(c, new_keys).cast(self.keys.schema[c]),
                                        pl.Series("__pid", np.arange(n0, n0 + len(new_keys), dtype=np.int64))]))

    def _append_keys(self, new: pl.DataFrame) -> None:
        """Append the key rows ``new`` (their ``__pid`` set) to the key frame, in one chunk.

        Eager ``vstack`` and a rechunk, and a select / cast only when ``new`` does not have the key
        frame's schema: this runs on one thread while the other threads run kernels
        (``LinearStream._ids_beside_codes``), and Polars' query engine (``pl.concat``, a frame's
        ``select`` or ``cast``) waits for a thread of Polars' pool, which finds every core busy: 1-4 ms
        for 100 keys on two busy cores, against 0.03 ms (10^6 events, docs/performance-log.md,
        session 49)."""
        if new.schema != self.keys.schema:
            new = new.select(self.keys.columns).cast(self.keys.schema)
        self.keys = self.keys.vstack(new).rechunk()
        self._on_new_keys()

    def group_frame(self) -> pl.DataFrame:
        """Partition id and the original GROUP-BY values (NaN restored)."""
        exprs = [pl.col("__pid")]
        for g in self.q.group_by:
            if g in self.float_keys:
                exprs.append(pl.when(pl.col(g + "__nan")).then(float("nan")).otherwise(pl.col(g)).alias(g))
            else:
                exprs.append(pl.col(g))
        return self.keys.select(exprs)

    def _on_new_keys(self) -> None:
        """Hook for subclasses that size per-partition state by ``len(self.keys)``."""

    def locate(self, pid: int, t: int) -> str:
        """Where an error happened, for its message: the partition's keys (if any) and the time."""
        return f"in partition {self.describe(pid)} near time {t}" if self.q.partition_by else f"near time {t}"

    def describe(self, pid: int) -> dict:
        key = self.keys.filter(pl.col("__pid") == pid).drop("__pid").to_dicts()
        return key[0] if key else {}


def _column_ids(col: pl.Series, numbering: tuple[str, float] | None = None) -> tuple[np.ndarray, np.ndarray, bool] | None:
    """Dense ids of the rows of one key column in order of first appearance, the row of each id's
    first appearance, and whether equal ids are equal keys (else the ids must be checked, see
    :func:`_same_as_first`); None for a dtype without codes (:func:`_row_codes`). A String column
    is read from its Arrow views, exactly (``numbering``: :func:`_string_ids`'); any other through its
    int64 codes."""
    arr = string_view_array(col, nulls=True)
    if arr is not None:
        return (*_string_ids(col, arr, numbering=numbering), True)
    coded = _row_codes(col)
    if coded is None:
        return None
    codes, exact = coded
    return (*_local_ids(codes, hashed=not exact), exact)


def _local_ids(codes: np.ndarray, hashed: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Dense ids of int64 codes in order of first appearance, and the row of each id's first
    appearance: a direct table over a small range of codes, else a hash table (``hashed``: the
    codes are hashes, no range is looked for); a long column in two halves on two threads."""
    n = len(codes)
    local = np.empty(n, np.int64)
    if not n:
        return local, np.zeros(0, np.int64)
    if not hashed:
        vmin, vmax = (int(v) for v in min_max(codes))
        if _direct_range(vmin, vmax, n):
            direct = np.full(vmax - vmin + 1, -1, np.int64)
            return local, _direct_ids(codes, vmin, direct, 0, local)

    return _ids_in_halves(n, local, lambda a, b, out, size: dense_ids(codes[a:b], key_table(size), 0, out),
                          lambda rows, table, first, out: dense_ids(codes[rows], table, len(first), out),
                          lambda rows: len(sorted_unique(codes[rows])))


def _string_ids(col: pl.Series, arr, decide_only: bool = False, numbering: tuple[str, float] | None = None):
    """:func:`_local_ids` of a String column ``col`` read from its Arrow ``string_view`` array ``arr``
    (:func:`kernels.keys.view_ids`: inline strings by their view words, longer ones hashed and
    compared; nulls one key); ``decide_only``: only how they would be numbered (:func:`_numbering`'s
    answer), which ``numbering`` gives when the caller asked before."""
    views = view_words_of(arr)
    addrs = np.array([b.address for b in arr.buffers()[2:]] or [0], np.int64)  # arr holds the buffers
    if not col.null_count():
        nulls = np.zeros(0, np.bool_)
    else:  # (a decision reads the sample's flags only: the column's took 0.86 ms at 10^6 rows)
        nulls = None if decide_only else col.is_null().to_numpy()

    def rows_of(x, rows):
        if x is None:
            return col.gather(rows).is_null().to_numpy()
        return x[rows] if len(x) else x

    def merge(rows, table, first, out):  # the first half's keys (first seen at rows `first`) lead the rows
        both = np.concatenate([first, rows])
        return view_ids(_frozen(views[both]), addrs, rows_of(nulls, both), table, len(first), out)

    def distinct(rows):  # (Polars' gather and n_unique of the sample took 1.2 ms, this 0.1)
        return len(view_ids(_frozen(views[rows]), addrs, rows_of(nulls, rows), key_table(width=3), 0,
                            np.empty(len(rows), np.int64))[0])

    def shares(out, size):  # each thread the keys of one share (kernels/keys.py::view_share)
        def number(share):
            n = len(views)
            sv, sn, rows = np.empty((n, 2), np.uint64), np.empty(len(nulls), np.bool_), np.empty(n, np.int64)
            m = view_share(views, addrs, nulls, share, sv, sn, rows)
            ids = np.empty(m, np.int64)
            first = view_ids(_frozen(sv[:m]), addrs, sn[:m], key_table(size, width=3), 0, ids)[0]
            return rows[:m], ids, rows[first]

        (rows0, ids0, first0), (rows1, ids1, first1) = threads.map_threads(number, [0, 1])
        first, g0, g1 = merge_shares(first0, first1)

        def scatter(r):  # the rows [a, b) of both shares (their rows ascend)
            for rows, ids, g in ((rows0, ids0, g0), (rows1, ids1, g1)):
                k, j = np.searchsorted(rows, r)
                scatter_ids(rows[k:j], ids[k:j], g, out)

        threads.map_threads(scatter, threads.halves(len(out)))
        return first

    if decide_only:
        return _numbering(len(col), distinct, True)
    return _ids_in_halves(len(col), np.empty(len(col), np.int64),
                          lambda a, b, out, size: view_ids(views[a:b], addrs, rows_of(nulls, slice(a, b)),
                                                           key_table(size, width=3), 0, out), merge, distinct, shares,
                          numbering)


def _frozen(a: np.ndarray) -> np.ndarray:
    """``a`` read-only: the type of the views read from Arrow (one Numba specialisation of a kernel)."""
    a.flags.writeable = False
    return a


def _ids_in_halves(n: int, local: np.ndarray, number, merge, distinct, shares=None,
                   numbering: tuple[str, float] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(local, first)``: dense ids into ``local`` and the first rows, from a hash table.

    ``number(a, b, out, size)`` numbers rows ``[a, b)`` from an empty table for ``size`` keys into
    ``out`` and returns the first rows and the table. On two threads (:func:`_numbering` picks, from
    a sample of the rows: ``distinct(rows)`` is how many distinct keys they hold; ``numbering``: its
    answer, when the caller has it), with few keys for
    the rows a long column is cut in two halves, each numbered with a table of its own; ``merge(rows,
    table, first, out)`` then looks the second half's distinct keys (its first ``rows``) up in the
    first half's ``table`` (keys ``first``) in order of first appearance (a key it did not see takes
    the next id), and the second half is renumbered. With many keys, ``shares(local, size)`` (when
    given) numbers every row on both threads, each thread the keys of one half of the hash space in
    a table for ``size`` keys, and returns the first rows.
    """
    how, keys = numbering or _numbering(n, distinct, shares is not None)
    if how == "shares":
        return local, shares(local, _keys_in(keys, n) // 2)
    if how == "one":
        return local, number(0, n, local, _keys_in(keys, n))[0]
    parts = threads.halves(n)
    m = parts[1][0]
    (first, table), (first2, _) = threads.map_threads(
        lambda r: number(r[0], r[1], local[r[0]:r[1]], _keys_in(keys, r[1] - r[0])), parts)
    remap = np.empty(len(first2), np.int64)
    unseen = merge(m + first2, table, first, remap)[0]
    renumber_new(local[m:], 0, remap)
    return local, np.concatenate([first, m + first2[unseen]])


#: Rows sampled to guess how many distinct keys a long column has (:func:`_numbering`).
KEY_SAMPLE = 4096
#: The halves of a column are numbered apart while a half is expected to hold at most this share of
#: the column's rows as distinct keys (its merge looks each of them up; docs/performance-log.md, session 44).
HALVES_UP_TO_KEYS = 1 / 8
#: From this many rows on, a hash table is sized for the keys a sample guesses (:func:`_guess_keys`), not
#: grown from empty: 10^6 rows of 10^5 int64 keys took 22.7 ms growing the table, 13.6 ms sized
#: (docs/performance-log.md, session 46).
SIZED_TABLES_FROM = 1 << 15
#: From this many keys (a guess) the rows are numbered in shares of the keys, not in halves of the rows:
#: a table of that many keys outgrows a core's cache (docs/performance-log.md, session 45).
SHARES_FROM_KEYS = 1 << 15


def _numbering(n: int, distinct, shares: bool) -> tuple[str, float]:
    """How :func:`_ids_in_halves` numbers ``n`` rows: ``"one"`` pass, two ``"halves"`` or two
    ``"shares"`` of the keys (``shares``: possible), and the guess of :func:`_guess_keys` (0: the
    rows are too few to guess). A half of the rows holds about :func:`_keys_in` ``(keys, n / 2)``
    distinct keys. With 6·10^5 distinct strings in 10^6 rows the halves and their merge took 1.5x
    one pass on one thread."""
    on_two = len(threads.halves(n)) > 1
    if not on_two and n < SIZED_TABLES_FROM:
        return "one", 0.0
    keys = _guess_keys(n, distinct)
    if not on_two:
        return "one", keys
    if shares and keys >= SHARES_FROM_KEYS:
        return "shares", keys
    if _keys_in(keys, n // 2) <= HALVES_UP_TO_KEYS * n or HALVES_UP_TO_KEYS == np.inf:
        return "halves", keys
    return "one", keys


def _guess_keys(n: int, distinct) -> float:
    """A guess of how many keys ``n`` rows are drawn from (inf: no key seen twice in the sample):
    ``distinct(rows)`` of :data:`KEY_SAMPLE` random rows gives the ``d`` distinct keys among the ``s``
    rows, and ``K`` solves ``K (1 - exp(-s / K)) = d``, the distinct keys expected of ``s`` rows drawn
    from ``K`` alike (about ``s² / 2 (s - d)`` for many keys, ``d`` for few; fewer than the truth
    where some keys are frequent)."""
    rows = sorted_unique(np.random.default_rng(0).integers(0, n, min(n, KEY_SAMPLE)))
    s, d = len(rows), distinct(rows)
    if d >= s:
        return np.inf
    lo, hi = float(d), float(s) * s  # the expected count grows with K: bisect (in ratio)
    for _ in range(40):
        mid = (lo * hi) ** 0.5
        lo, hi = (mid, hi) if mid * -np.expm1(-s / mid) < d else (lo, mid)
    return hi


def _keys_in(keys: float, n: int) -> int:
    """How many distinct keys ``n`` rows drawn from ``keys`` keys hold, ``K (1 - exp(-n / K))``
    (at most ``n``; 0 for no guess): the size of a hash table for them."""
    if not keys:
        return 0
    return n if keys == np.inf else min(n, int(keys * -np.expm1(-n / keys)))


def sorted_unique(a: np.ndarray) -> np.ndarray:
    """The distinct values of ``a`` in ascending order: ``np.unique``, by a sort (NumPy 2.4's
    ``np.unique`` of integers took 0.74 ms for 4 096 values and 604 ms for 10^6, a sort 0.03 and 25)."""
    a = np.sort(a)
    return a[np.r_[True, a[1:] != a[:-1]]] if len(a) else a


def _renumbered(local: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """``ids[local]`` in place of ``local`` (two halves of a long column on two threads); nothing to do
    when ``ids`` are ``0, 1, ...`` (the keys of a first batch, numbered in order)."""
    if len(ids) and ids[0] == 0 and np.array_equal(ids, np.arange(len(ids))):
        return local
    threads.map_threads(lambda r: renumber_new(local[r[0]:r[1]], 0, ids), threads.halves(len(local)))
    return local


def _same_as_first(col: pl.Series, local: np.ndarray, first: np.ndarray) -> bool:
    """Whether every row of ``col`` equals the row ``first[local[i]]`` (null equal to null): the
    check of ids taken from a hash."""
    return bool(col.eq_missing(col.gather(first).gather(local)).all())


#: the code of null in :func:`_row_codes` of a float column (a NaN bit pattern; every NaN of the column
#: is read as the canonical one)
_NULL_FLOAT_CODE = np.int64(0x7FF8_0000_0000_0001)


_I64 = np.iinfo(np.int64)


def _row_codes(col: pl.Series) -> tuple[np.ndarray, bool] | None:
    """int64 code per row of a key column and whether equal codes mean equal keys (``exact``): the
    physical ids of a Categorical / Enum column (null: -1), the bits of a float (one NaN, null
    apart), a 64-bit hash of a String (not exact), the values of an integer, temporal or boolean
    column (null: one below the smallest value of the column, or one above the largest). None for
    other dtypes, and for a column with nulls whose values leave no int64 code free on either side."""
    dt = col.dtype
    if isinstance(dt, (pl.Categorical, pl.Enum)):
        phys = col.to_physical()
        if phys.null_count():
            return phys.cast(pl.Int64).fill_null(-1).to_numpy(), True
        return phys.to_numpy().astype(np.int64), True
    if dt.is_float():
        v = np.ascontiguousarray(col.cast(pl.Float64).to_numpy())
        bits = np.empty(len(v), np.int64)  # (NumPy's where, isnan and view took 3.7 ms at 10^6 rows, this 1.4)
        threads.map_threads(lambda r: float_codes(v[r[0]:r[1]], bits[r[0]:r[1]]), threads.halves(len(v)))
        if col.null_count():
            bits[col.is_null().to_numpy()] = _NULL_FLOAT_CODE
        return bits, True
    if dt == pl.String:
        return col.hash().to_numpy().view(np.int64), False
    if dt.is_integer() or dt.is_temporal() or dt == pl.Boolean:
        phys = col.to_physical()
        if not col.null_count():
            if phys.dtype == pl.UInt64:
                return phys.to_numpy().view(np.int64), True
            return phys.cast(pl.Int64).to_numpy(), True
        if phys.dtype == pl.UInt64 and (phys.max() or 0) > _I64.max:
            return None
        v = phys.cast(pl.Int64)
        lo, hi = v.min(), v.max()
        if lo is None:  # every row null
            return np.zeros(len(v), np.int64), True
        null_code = lo - 1 if lo > _I64.min else (hi + 1 if hi < _I64.max else None)
        return (None if null_code is None else (v.fill_null(null_code).to_numpy(), True))
    return None


def _direct_range(vmin: int, vmax: int, n: int) -> bool:
    """Whether ``n`` integer keys from ``vmin`` to ``vmax`` take a direct table (else a hash table)."""
    return vmax - vmin < min(1 << 20, 8 * n + 1024)


def _direct_in_halves(n: int, size: int) -> bool:
    """Whether :func:`_direct_ids` fills a direct table of ``size`` keys for ``n`` rows in two halves
    on two threads, then reads it in halves: from :data:`DIRECT_HALVES_FROM` rows, with few keys for
    the rows (at most one per :data:`ROWS_PER_KEY_FOR_HALVES`), on two threads."""
    return n >= DIRECT_HALVES_FROM and ROWS_PER_KEY_FOR_HALVES * size <= n and len(threads.halves(n)) > 1


def direct_kernel_loaded() -> bool:
    """Whether this process holds the kernel that enters keys in a direct table (compiled, or loaded
    from the cache by a batch of ``_jit.NUMPY_BELOW`` rows or more). Until then the integer keys of a
    batch of fewer rows are numbered by :meth:`Partitions._joined_ids` (a Polars join): a first run
    on a cold cache does not compile it."""
    return len(new_keys_direct.overloads) > 0


def _direct_ids(vals: np.ndarray, vmin: int, direct: np.ndarray, n0: int, ids: np.ndarray) -> np.ndarray:
    """The id of each row of ``vals`` into ``ids`` from the direct table ``direct``, its new keys
    entered and numbered from ``n0`` in order of first appearance; returns their first rows. One pass
    enters the keys and writes the ids (:func:`new_keys_direct`); where :func:`_direct_in_halves`,
    the two halves of the column enter their keys in two threads without writing ids (the second on
    a copy of the table; its keys the first half did not see then take the next ids in its order),
    and the ids are read from the table in halves (:func:`read_direct`)."""
    if not _direct_in_halves(len(vals), len(direct)):
        return new_keys_direct(vals, vmin, direct, n0, ids)
    m = threads.halves(len(vals))[1][0]
    second = direct.copy()
    none = np.zeros(0, np.int64)
    first0, first1 = threads.map_threads(lambda a: new_keys_direct(*a, none),
                                         [(vals[:m], vmin, direct, n0), (vals[m:], vmin, second, n0)])
    first = first0
    if len(first1):
        new1 = vals[m + first1] - vmin
        unseen = direct[new1] < 0  # keys the first half did not see
        direct[new1[unseen]] = n0 + len(first0) + np.arange(int(unseen.sum()), dtype=np.int64)
        first = np.concatenate([first0, m + first1[unseen]])
    read_direct(vals, vmin, direct, ids)
    return first


def read_direct(vals: np.ndarray, vmin: int, direct: np.ndarray, ids: np.ndarray) -> None:
    """:func:`ids_direct` into ``ids``, the halves of a long column in two threads."""
    threads.map_threads(lambda r: ids_direct(vals[r[0]:r[1]], vmin, direct, ids[r[0]:r[1]]), threads.halves(len(vals)))

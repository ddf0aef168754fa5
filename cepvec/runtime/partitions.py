"""Dense partition ids for the partition keys of a query, shared by the engines' drivers."""

from __future__ import annotations

import numpy as np
import polars as pl

from cepvec.kernels import _jit
from cepvec.kernels.keys import dense_ids, dense_ids_direct, min_max, renumber_new
from cepvec.runtime import threads


#: From this many rows on, keys other than one null-free integer column take row codes and the Numba
#: tables (:meth:`Partitions._coded_ids`); fewer rows go through the Polars join (no kernel to compile
#: for a first run on small data). Tests set it to 0 to run the codes on small inputs too.
CODED_IDS_FROM = 1 << 14


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
        self._tab_key = np.zeros(16, np.int64)
        self._tab_id = np.full(16, -1, np.int64)
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

    def ids(self, df: pl.DataFrame) -> np.ndarray:
        """Dense partition id of every row of ``df`` (new keys get the next ids)."""
        cols = self.key_cols
        if not cols:
            if len(self.keys) == 0:
                self.keys = pl.DataFrame({"__pid": [0]}, schema={"__pid": pl.Int64})
                self._on_new_keys()
            return np.zeros(len(df), np.int64)
        if self.int_key is not None and len(df):
            col = df[self.int_key]
            if col.null_count() == 0:
                return self._int_ids(col)
        if len(df) >= CODED_IDS_FROM:
            ids = self._coded_ids(df)
            if ids is not None:
                return ids
        return self._joined_ids(df)

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
            self.keys = pl.concat([self.keys, new.cast(self.keys.schema)], how="vertical")
            self._on_new_keys()
        return df.join(self.keys, on=cols, how="left", nulls_equal=True, maintain_order="left")["__pid"].to_numpy()

    def _coded_ids(self, df: pl.DataFrame) -> np.ndarray | None:
        """:meth:`ids` through int64 codes of the rows (None: a key column has no codes for its dtype).

        Each key column's codes (:func:`_row_codes`) get dense ids of this batch in a Numba table
        (several columns: the ids of the tuples of their ids); the first row of each goes through the
        join of :meth:`_joined_ids` (a row per distinct key, in order of first appearance, so new keys
        are numbered as the join of every row numbers them), and every row takes its first row's id.
        Hashed codes (strings) are checked: a collision (rows with one code and different keys) sends
        the batch through the join.
        """
        cols = list(self.q.partition_by)
        coded = [_row_codes(df[c]) for c in cols]
        if any(x is None for x in coded):
            return None
        local, m = _local_ids(coded[0][0])
        for codes, _ in coded[1:]:
            ids2, m2 = _local_ids(codes)
            if m * m2 >= 1 << 62:
                return None
            local, m = _local_ids(local * m2 + ids2)
        # first appearances: the ids rise by one at each
        first = np.flatnonzero(np.diff(np.maximum.accumulate(local), prepend=-1) > 0)
        reps = df[first]
        for c, (_, exact) in zip(cols, coded):
            if not exact and not df[c].eq_missing(reps[c].gather(local)).all():
                return None
        return self._joined_ids(reps)[local]

    def _int_ids(self, col: pl.Series) -> np.ndarray:
        c = self.int_key
        vals = col.cast(pl.Int64).to_numpy()
        n0 = len(self.keys)
        if len(vals) < _jit.NUMPY_BELOW:
            vmin, vmax = (int(vals.min()), int(vals.max())) if len(vals) else (0, -1)
        else:
            vmin, vmax = (int(v) for v in min_max(vals))
        if vmax - vmin < min(1 << 20, 8 * len(vals) + 1024):
            # small key range: a direct table (the hash table is rebuilt when next needed)
            direct = np.full(vmax - vmin + 1, -1, np.int64)
            known = self.keys.filter(pl.col(c).is_between(vmin, vmax))
            direct[known[c].cast(pl.Int64).to_numpy() - vmin] = known["__pid"].to_numpy()
            ids = np.empty(len(vals), np.int64)
            new_keys = _direct_ids(vals, vmin, direct, n0, ids)
            self._tab_n = -1
        else:
            if self._tab_n != n0:  # rebuild the hash table from the keys (a join added some)
                known = self.keys.filter(pl.col(c).is_not_null())
                size = 16
                while size < 2 * (n0 + 1):
                    size *= 2
                self._tab_key = np.zeros(size, np.int64)
                self._tab_id = np.full(size, -1, np.int64)
                _ids, _new, self._tab_key, self._tab_id = dense_ids(
                    known[c].cast(pl.Int64).to_numpy(), self._tab_key, self._tab_id, 0)
                # dense_ids numbered them 0..m-1 in order; set the real partition ids
                used = self._tab_id >= 0
                self._tab_id[used] = known["__pid"].to_numpy()[self._tab_id[used]]
            ids, new_keys, self._tab_key, self._tab_id = dense_ids(vals, self._tab_key, self._tab_id, n0)
            self._tab_n = n0
        if len(new_keys):
            new = pl.DataFrame({c: pl.Series(c, new_keys).cast(self.keys.schema[c]),
                                "__pid": np.arange(n0, n0 + len(new_keys), dtype=np.int64)})
            self.keys = pl.concat([self.keys, new], how="vertical")
            self._on_new_keys()
        if self._tab_n >= 0:
            self._tab_n = len(self.keys)
        return ids

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


def _local_ids(codes: np.ndarray) -> tuple[np.ndarray, int]:
    """Dense ids of int64 codes in order of first appearance, and their number."""
    local = np.empty(len(codes), np.int64)
    if not len(codes):
        return local, 0
    vmin, vmax = (int(v) for v in min_max(codes))
    if vmax - vmin < min(1 << 20, 8 * len(codes) + 1024):
        m = len(dense_ids_direct(codes, vmin, np.full(vmax - vmin + 1, -1, np.int64), 0, local))
    else:
        local, new, _, _ = dense_ids(codes, np.zeros(16, np.int64), np.full(16, -1, np.int64), 0)
        m = len(new)
    return local, m


#: the code of null in :func:`_row_codes` of a float column (a NaN bit pattern; every NaN of the column
#: is read as the canonical one)
_NULL_FLOAT_CODE = np.int64(0x7FF8_0000_0000_0001)


def _row_codes(col: pl.Series) -> tuple[np.ndarray, bool] | None:
    """int64 code per row of a key column and whether equal codes mean equal keys (``exact``): the
    physical ids of a Categorical / Enum column (null: -1), the bits of a float (one NaN, null
    apart), a 64-bit hash of a String (not exact), the values of a null-free integer, temporal or
    boolean column. None for other dtypes (and integers with nulls: no code is left for null)."""
    dt = col.dtype
    if isinstance(dt, (pl.Categorical, pl.Enum)):
        return col.to_physical().cast(pl.Int64).fill_null(-1).to_numpy(), True
    if dt.is_float():
        v = col.cast(pl.Float64).to_numpy()
        bits = np.where(np.isnan(v), np.float64("nan"), v + 0.0).view(np.int64)  # -0.0 is 0.0
        if col.null_count():
            bits = np.where(col.is_null().to_numpy(), _NULL_FLOAT_CODE, bits)
        return np.ascontiguousarray(bits), True
    if dt == pl.String:
        return col.hash().to_numpy().view(np.int64), False
    if (dt.is_integer() or dt.is_temporal() or dt == pl.Boolean) and not col.null_count():
        phys = col.to_physical()
        if phys.dtype == pl.UInt64:
            return phys.to_numpy().view(np.int64), True
        return phys.cast(pl.Int64).to_numpy(), True
    return None


def _direct_ids(vals: np.ndarray, vmin: int, direct: np.ndarray, n0: int, ids: np.ndarray) -> np.ndarray:
    """:func:`dense_ids_direct` into ``ids``, the two halves of a long column in two threads.

    The second half numbers its new keys provisionally on a copy of the table; then the keys the
    first half saw take the first half's ids, the others the next ids in order of appearance in
    the second half (their order in the whole column), and the second half is renumbered.
    """
    n = len(vals)
    if threads.n_threads() < 2 or n < 2 * threads.MIN_EVENTS_PER_THREAD:
        return dense_ids_direct(vals, vmin, direct, n0, ids)
    m = n // 2
    second = direct.copy()
    new0, new1 = threads.map_threads(lambda a: dense_ids_direct(*a),
                                     [(vals[:m], vmin, direct, n0, ids[:m]), (vals[m:], vmin, second, n0, ids[m:])])
    if not len(new1):
        return new0
    remap = direct[new1 - vmin]  # the first half's ids (-1: a key the first half did not see)
    unseen = remap < 0
    remap[unseen] = n0 + len(new0) + np.arange(int(unseen.sum()), dtype=np.int64)
    direct[new1[unseen] - vmin] = remap[unseen]
    renumber_new(ids[m:], n0, remap)
    return np.concatenate([new0, new1[unseen]])

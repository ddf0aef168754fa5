"""Dense partition ids for the partition keys of a query, shared by the engines' drivers."""

from __future__ import annotations

import numpy as np
import polars as pl


class Partitions:
    """Dense partition ids for the partition keys (GROUP-BY plus unqualified equivalences).

    Float keys: NaN does not join to NaN, so keys hold (value with NaN as null, is-NaN flag).
    """

    def __init__(self, q, key_schema: dict):
        self.q = q
        self.float_keys = [c for c, dt in key_schema.items() if dt.is_float()]
        ks = dict(key_schema)
        for c in self.float_keys:
            ks[c + "__nan"] = pl.Boolean
        self.key_cols = list(ks)
        self.keys = pl.DataFrame(schema={**ks, "__pid": pl.Int64})

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

    def describe(self, pid: int) -> dict:
        key = self.keys.filter(pl.col("__pid") == pid).drop("__pid").to_dicts()
        return key[0] if key else {}

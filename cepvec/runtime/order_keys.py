"""Order keys: MIN and MAX as uint64 keys in which a bigger key is the better extreme.

The linear-map kernels run MIN / MAX over the "order semiring" (add is max,
multiply is min) on these keys; 0 means "no value" (null, NaN, no match).
``docs/algorithms.md`` section 3 derives it.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from cepvec.errors import CepvecDataError, UnsupportedByEngine

ORDER_ONE = np.uint64(np.iinfo(np.uint64).max)  # the multiplicative identity: "every value is allowed"
_SIGN = np.uint64(1 << 63)


def orderable(dtype) -> bool:
    """True when MIN / MAX over a column of ``dtype`` can run on order keys."""
    return dtype.is_numeric() and not dtype.is_decimal() or dtype.is_temporal() or dtype == pl.Boolean


def check_orderable(q, comp, schema: dict) -> None:
    dt = schema[comp.attr]
    if not orderable(dt):
        raise UnsupportedByEngine(
            f"{comp.kind.upper()} over '{comp.attr}' ({dt}) in query {' '.join(q.text.split())!r}: the Numba "
            "engines take MIN/MAX of numbers, booleans, dates and times only; use engine='reference'")


def order_keys(col: pl.Series, kind: str, q) -> np.ndarray:
    """uint64 order keys of ``col`` for a ``min`` / ``max`` component: a bigger key is a
    better extreme (MIN: smaller value), null and NaN are 0 (no value)."""
    dt = col.dtype
    if dt.is_float():
        x = col.cast(pl.Float64).fill_nan(None)
        valid = x.is_not_null().to_numpy()
        bits = x.fill_null(0.0).to_numpy().view(np.uint64)
        key = np.where(bits >> np.uint64(63), ~bits, bits | _SIGN)
    else:
        x = col.to_physical() if dt.is_temporal() else col
        try:
            x = x.cast(pl.Int64)
        except pl.exceptions.InvalidOperationError as exc:
            raise CepvecDataError(
                f"{kind.upper()}({col.name}): a value does not fit in Int64 ({exc}); use engine='reference'"
            ) from None
        valid = x.is_not_null().to_numpy()
        key = x.fill_null(0).to_numpy().view(np.uint64) ^ _SIGN
    if kind == "min":
        key = ~key
    key = np.where(valid, key, np.uint64(0))
    if np.any(valid & (key == 0)):
        extreme = "largest" if kind == "min" else "smallest"
        raise CepvecDataError(
            f"{kind.upper()}({col.name}) in query {' '.join(q.text.split())!r}: the {extreme} Int64 value "
            "cannot be told from 'no value' by the Numba engines' order keys; use engine='reference'")
    return key


def order_values(keys: pl.Series, kind: str, dtype) -> pl.Series:
    """The values of ``order_keys`` (0: null), as a Series of ``dtype``."""
    k = keys.to_numpy().astype(np.uint64, copy=False)
    null = k == 0
    if kind == "min":
        k = ~k
    if dtype.is_float():
        bits = np.where(k >> np.uint64(63), k ^ _SIGN, ~k)
        vals = pl.Series(keys.name, bits.view(np.float64))
    else:
        vals = pl.Series(keys.name, (k ^ _SIGN).view(np.int64))
        if dtype.is_temporal():
            phys = pl.Int32 if dtype == pl.Date else pl.Int64
            return pl.select(pl.when(pl.Series(null)).then(None).otherwise(vals.cast(phys))).to_series() \
                .cast(dtype).rename(keys.name)
    return pl.select(pl.when(pl.Series(null)).then(None).otherwise(vals)).to_series().cast(dtype).rename(keys.name)

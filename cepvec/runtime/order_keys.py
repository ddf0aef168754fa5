"""Order keys: MIN and MAX as uint64 keys in which a bigger key is the better extreme.

The linear-map kernels run MIN / MAX over the "order semiring" (add is max,
multiply is min) on these keys; 0 means "no value" (null, NaN, no match).
``docs/algorithms.md`` section 3 derives it.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from cepvec.errors import CepvecDataError, UnsupportedByEngine
from cepvec.kernels.order import float_order_keys, int_order_keys
from cepvec.runtime import threads

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


def order_keys(col: pl.Series, kind: str, q, out: np.ndarray | None = None) -> np.ndarray:
    """uint64 order keys of ``col`` for a ``min`` / ``max`` component: a bigger key is a
    better extreme (MIN: smaller value), null and NaN are 0 (no value). One kernel pass
    (:mod:`cepvec.kernels.order`), a long column in two halves on two threads, written into
    ``out`` when given (a column of the caller's weights: no array of its own, whose pages a
    long column pays to touch, and no copy)."""
    dt = col.dtype
    is_min = kind == "min"
    if out is None:
        out = np.empty(len(col), np.uint64)
    if dt.is_float():
        x = col.cast(pl.Float64)
        if x.null_count():
            x = x.fill_null(float("nan"))
        bits = np.ascontiguousarray(x.to_numpy()).view(np.uint64)
        threads.map_threads(lambda r: float_order_keys(bits[r[0]:r[1]], is_min, out[r[0]:r[1]]),
                            threads.halves(len(col)))
        return out
    x = col.to_physical() if dt.is_temporal() else col
    try:
        x = x.cast(pl.Int64)
    except pl.exceptions.InvalidOperationError as exc:
        raise CepvecDataError(
            f"{kind.upper()}({col.name}): a value does not fit in Int64 ({exc}); use engine='reference'"
        ) from None
    valid = x.is_not_null().to_numpy() if x.null_count() else np.zeros(0, np.bool_)
    vals = np.ascontiguousarray(x.fill_null(0).to_numpy() if len(valid) else x.to_numpy()).view(np.uint64)
    bad = threads.map_threads(
        lambda r: int_order_keys(vals[r[0]:r[1]], valid[r[0]:r[1]] if len(valid) else valid, is_min,
                                 out[r[0]:r[1]]),
        threads.halves(len(col)))
    if sum(bad):
        raise extreme_value_error(q, kind, col.name)
    return out


def extreme_value_error(q, kind: str, name: str) -> CepvecDataError:
    """MIN of the largest / MAX of the smallest Int64 value: the Numba paths keep it as 'no value'."""
    extreme = "largest" if kind == "min" else "smallest"
    return CepvecDataError(
        f"{kind.upper()}({name}) in query {' '.join(q.text.split())!r}: the {extreme} Int64 value "
        "cannot be told from 'no value' by the Numba engines' order keys; use engine='reference'")


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

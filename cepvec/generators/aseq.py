"""The A-Seq / Sharon workloads: purchases (Sharon q8-q11) and the A-Seq benchmark stream."""

from __future__ import annotations

import numpy as np
import polars as pl


from cepvec.generators._common import (
    DEFAULT_ITEMS, _check_common, _check_int, _empty, _finish, _labels, _times_from_gaps,
)

# ---------------------------------------------------------------------------
# 4. purchases (Sharon q8--q11)
# ---------------------------------------------------------------------------

_PURCHASE_SCHEMA: dict[str, pl.DataType] = {
    "type": pl.String,
    "time": pl.Int64,
    "customer": pl.Int64,
    "price": pl.Float64,
}


def _check_items(items: object) -> tuple[str, ...]:
    ok = (
        isinstance(items, (tuple, list))
        and len(items) > 0
        and all(isinstance(i, str) and i for i in items)
        and len(set(items)) == len(items)
    )
    if not ok:
        raise ValueError(
            "items must be a non-empty tuple or list of distinct non-empty strings, "
            f"got {items!r}"
        )
    return tuple(items)


def purchases(
    *,
    n_events: int,
    seed: int = 0,
    n_customers: int = 1000,
    items: tuple[str, ...] | list[str] = DEFAULT_ITEMS,
    weights: tuple[float, ...] | list[float] | np.ndarray | None = None,
) -> pl.DataFrame:
    """Synthetic e-commerce purchase stream for Sharon queries q8--q11.

    Each event is one purchase; its event type is the item bought (e.g.
    ``SEQ(Laptop, Case)`` per customer).

    Distributions:

    * ``type``: drawn i.i.d. from ``items`` with probabilities ``weights /
      sum(weights)`` (uniform when ``weights`` is None).
    * ``time``: the first event is at 0; gaps are ``Poisson(1)`` seconds
      (Sharon does not specify arrival rates; ties occur).
    * ``customer``: uniform integer in ``[0, n_customers - 1]``.
    * ``price`` (Float64): item ``i`` has a list price ``b_i`` drawn once
      per call log-uniformly from ``[5, 2000)`` (``exp(Uniform[ln 5, ln
      2000))``); each purchase pays ``b_i * Uniform[0.8, 1.2)``, rounded to
      2 decimals. (Sharon does not specify prices.)

    Parameters
    ----------
    n_events : int
        Number of purchases (rows), ``>= 0``.
    seed : int, default 0
        Seed for ``numpy.random.default_rng``, ``>= 0``.
    n_customers : int, default 1000
        Number of customers, ``>= 1``.
    items : tuple or list of str, default :data:`DEFAULT_ITEMS`
        Item names (event types): non-empty, distinct, non-empty strings.
        The default is ``("Laptop", "Case", "Adapter", "Mouse",
        "KeyBoardProtector", "Monitor", "Phone", "ScreenProtector")``.
    weights : tuple, list or 1-D array of float, optional
        Relative purchase frequency of each item: one finite non-negative
        number per item with a positive sum. None means uniform.

    Returns
    -------
    polars.DataFrame
        Columns ``type`` (String, one of ``items``), ``time`` (Int64),
        ``customer`` (Int64), ``price`` (Float64); sorted by ``time``,
        ``n_events`` rows, no nulls.

    Raises
    ------
    ValueError
        If an argument is out of range or of the wrong type.

    Examples
    --------
    >>> from cepvec.generators import purchases
    >>> df = purchases(n_events=1000, seed=1, weights=[4, 2, 1, 1, 1, 1, 1, 1])
    >>> df["type"].value_counts(sort=True)["type"][0]
    'Laptop'
    """
    n, seed = _check_common(n_events, seed)
    n_customers = _check_int("n_customers", n_customers, 1)
    items = _check_items(items)
    if weights is None:
        probs = np.full(len(items), 1.0 / len(items))
    else:
        try:
            w = np.asarray(weights, dtype=np.float64)
        except (TypeError, ValueError):
            w = None
        if w is None or w.ndim != 1 or w.size != len(items):
            raise ValueError(
                f"weights must have one number per item ({len(items)}), got {weights!r}"
            )
        if not (np.all(np.isfinite(w)) and np.all(w >= 0) and w.sum() > 0):
            raise ValueError(
                f"weights must be finite and non-negative with a positive sum, got {weights!r}"
            )
        probs = w / w.sum()
    if n == 0:
        return _empty(_PURCHASE_SCHEMA)

    rng = np.random.default_rng(seed)
    time = _times_from_gaps(rng.poisson(1.0, n))
    item = rng.choice(len(items), size=n, p=probs)
    customer = rng.integers(0, n_customers, n, dtype=np.int64)
    base = np.exp(rng.uniform(np.log(5.0), np.log(2000.0), len(items)))
    price = np.round(base[item] * rng.uniform(0.8, 1.2, n), 2)
    out = pl.DataFrame(
        {
            "type": _labels(item, items),
            "time": pl.Series("time", time, dtype=pl.Int64),
            "customer": pl.Series("customer", customer, dtype=pl.Int64),
            "price": pl.Series("price", price, dtype=pl.Float64),
        }
    )
    return _finish(out)


# ---------------------------------------------------------------------------
# 5. A-Seq benchmark stream
# ---------------------------------------------------------------------------

_ABCD_SCHEMA: dict[str, pl.DataType] = {
    "type": pl.String,
    "time": pl.Int64,
    "id": pl.Int64,
    "x": pl.Int64,
    "v": pl.Float64,
}


def _check_types(types: object) -> tuple[str, ...]:
    if isinstance(types, str):
        labels = tuple(types)
    elif isinstance(types, (tuple, list)) and all(isinstance(t, str) and t for t in types):
        labels = tuple(types)
    else:
        labels = ()
    if not labels or len(set(labels)) != len(labels):
        raise ValueError(
            "types must be a non-empty string of distinct letters or a tuple/list of "
            f"distinct non-empty strings, got {types!r}"
        )
    return labels


def sequence_abcd(
    *,
    n_events: int,
    seed: int = 0,
    n_ids: int = 10,
    types: str | tuple[str, ...] | list[str] = "ABCD",
    max_gap: int = 3,
) -> pl.DataFrame:
    """Synthetic A-Seq benchmark stream (patterns such as ``SEQ(A, B, C, D)``).

    Distributions (all independent):

    * ``type``: uniform over the given types.
    * ``time``: the first event is at 0; each further event adds a uniform
      integer gap in ``[1, max_gap]``, so ``time`` is **strictly
      increasing**.
    * ``id``: uniform integer in ``[0, n_ids - 1]``.
    * ``x``: uniform integer in ``[0, 99]``.
    * ``v``: ``Uniform[0, 1)`` (Float64).

    Parameters
    ----------
    n_events : int
        Number of rows, ``>= 0``.
    seed : int, default 0
        Seed for ``numpy.random.default_rng``, ``>= 0``.
    n_ids : int, default 10
        Number of distinct ``id`` values (the partition attribute), ``>= 1``.
    types : str, or tuple or list of str, default "ABCD"
        Event types. A string means one type per character (``"ABCD"`` ->
        A, B, C, D); a tuple or list gives the type names. Must be non-empty and
        distinct.
    max_gap : int, default 3
        Largest time gap between consecutive events, ``>= 1``.

    Returns
    -------
    polars.DataFrame
        Columns ``type`` (String), ``time`` (Int64, strictly increasing),
        ``id`` (Int64), ``x`` (Int64), ``v`` (Float64); ``n_events`` rows, no
        nulls.

    Raises
    ------
    ValueError
        If an argument is out of range or of the wrong type.

    Examples
    --------
    >>> from cepvec.generators import sequence_abcd
    >>> df = sequence_abcd(n_events=1000, seed=1)
    >>> sorted(df["type"].unique().to_list())
    ['A', 'B', 'C', 'D']
    >>> bool((df["time"].diff().drop_nulls() >= 1).all())
    True
    """
    n, seed = _check_common(n_events, seed)
    n_ids = _check_int("n_ids", n_ids, 1)
    labels = _check_types(types)
    max_gap = _check_int("max_gap", max_gap, 1)
    if n == 0:
        return _empty(_ABCD_SCHEMA)

    rng = np.random.default_rng(seed)
    code = rng.integers(0, len(labels), n, dtype=np.int64)
    time = _times_from_gaps(rng.integers(1, max_gap + 1, n, dtype=np.int64))
    out = pl.DataFrame(
        {
            "type": _labels(code, labels),
            "time": pl.Series("time", time, dtype=pl.Int64),
            "id": pl.Series("id", rng.integers(0, n_ids, n, dtype=np.int64), dtype=pl.Int64),
            "x": pl.Series("x", rng.integers(0, 100, n, dtype=np.int64), dtype=pl.Int64),
            "v": pl.Series("v", rng.random(n), dtype=pl.Float64),
        }
    )
    return _finish(out)



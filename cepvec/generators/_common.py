"""Shared pieces of the generators: constants, argument checks, vectorised helpers."""

from __future__ import annotations

import numpy as np
import polars as pl


#: Default item catalogue of the Sharon e-commerce stream (queries q8--q11).
DEFAULT_ITEMS: tuple[str, ...] = (
    "Laptop",
    "Case",
    "Adapter",
    "Mouse",
    "KeyBoardProtector",
    "Monitor",
    "Phone",
    "ScreenProtector",
)

#: Length of one expressway segment in feet (one mile, as in Linear Road).
FEET_PER_SEGMENT: int = 5280

# Linear Road vehicles report their position every 30 seconds.
_LINEAR_ROAD_REPORT_INTERVAL = 30.0


# ---------------------------------------------------------------------------
# argument validation
# ---------------------------------------------------------------------------


def _is_int(value: object) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _is_real(value: object) -> bool:
    return (
        isinstance(value, (int, float, np.integer, np.floating))
        and not isinstance(value, (bool, np.bool_))
    )


def _check_int(name: str, value: object, minimum: int) -> int:
    if not _is_int(value) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _check_positive(name: str, value: object, minimum: float = 0.0, inclusive: bool = False) -> float:
    ok = _is_real(value) and bool(np.isfinite(value)) and (
        value >= minimum if inclusive else value > minimum
    )
    if not ok:
        op = ">=" if inclusive else ">"
        raise ValueError(f"{name} must be a finite number {op} {minimum:g}, got {value!r}")
    return float(value)


def _check_probability(name: str, value: object) -> float:
    if not (_is_real(value) and bool(np.isfinite(value)) and 0.0 <= value <= 1.0):
        raise ValueError(f"{name} must be a number in [0, 1], got {value!r}")
    return float(value)


def _check_common(n_events: object, seed: object) -> tuple[int, int]:
    return _check_int("n_events", n_events, 0), _check_int("seed", seed, 0)


# ---------------------------------------------------------------------------
# vectorised helpers
# ---------------------------------------------------------------------------


def _times_from_gaps(gaps: np.ndarray) -> np.ndarray:
    """First event at time 0, then ``time[i] = time[i-1] + gaps[i]``."""
    gaps = np.asarray(gaps, dtype=np.int64)
    if gaps.size:
        gaps[0] = 0
    return np.cumsum(gaps, dtype=np.int64)


def _labels(codes: np.ndarray, labels: tuple[str, ...], name: str = "type") -> pl.Series:
    """Map integer codes ``0..len(labels)-1`` to a ``String`` series."""
    return pl.Series(name, codes, dtype=pl.Int64).replace_strict(
        list(range(len(labels))), list(labels), return_dtype=pl.String
    )


def _empty(schema: dict[str, pl.DataType]) -> pl.DataFrame:
    return pl.DataFrame(schema=schema)


def _finish(df: pl.DataFrame) -> pl.DataFrame:
    """Flag the (already sorted) ``time`` column as sorted."""
    return df.with_columns(pl.col("time").set_sorted())


def _group_cumsum(group: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Running sum of ``values`` within each ``group``, in row order."""
    frame = pl.DataFrame({"g": group, "v": values})
    return frame.select(pl.col("v").cum_sum().over("g"))["v"].to_numpy()


def _floored_walk(group: np.ndarray, start: np.ndarray, step: np.ndarray, floor: float) -> np.ndarray:
    """Per-group random walk with a barrier at ``floor``.

    Row ``k`` of group ``g`` holds ``P_k = max(floor, P_{k-1} + step_k)`` with
    ``P_0 = start`` (``start`` is given per row and must be constant within a
    group and ``>= floor``). Vectorised through the Lindley identity
    ``P_k = W_k - min(0, min_{j<=k} (W_j - floor))`` with the free walk
    ``W_k = start + step_1 + ... + step_k``.
    """
    free = start + _group_cumsum(group, step)
    frame = pl.DataFrame({"g": group, "w": free - floor})
    low = frame.select(pl.col("w").cum_min().over("g"))["w"].to_numpy()
    return free - np.minimum(low, 0.0)


def _reflected_walk(
    group: np.ndarray, start: np.ndarray, step: np.ndarray, low: float, high: float
) -> np.ndarray:
    """Per-group random walk reflected at ``low`` and ``high``.

    The free walk ``start + step_1 + ... + step_k`` is folded into
    ``[low, high]`` (period ``2 * (high - low)``). Path by path this is the
    walk reflected at both bounds whose step direction flips at every
    reflection; for symmetric steps (e.g. normal) the flipped steps have the
    same law, so the result is a random walk with reflecting barriers.
    """
    width = high - low
    free = start - low + _group_cumsum(group, step)
    return low + width - np.abs(np.mod(free, 2.0 * width) - width)


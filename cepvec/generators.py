"""Seeded synthetic event-stream generators for the workloads of the papers.

Every generator returns a :class:`polars.DataFrame` with

* ``type`` -- ``String``, the event type;
* ``time`` -- ``Int64``, seconds since 0, non-negative, sorted ascending
  (ties are allowed unless a generator says otherwise);
* workload-specific attribute columns.

All generators take keyword-only arguments ``n_events`` and ``seed`` plus
workload knobs, draw every random number from
``numpy.random.default_rng(seed)`` (so the output is a pure function of the
arguments) and are vectorised with NumPy/Polars: there is no Python loop per
event, so 10^7 events take a few seconds.

Conventions shared by all generators:

* the first event is at time 0 and ``time[i] = time[i-1] + gap[i]``;
* ``n_events == 0`` yields an empty frame with the full schema (except for
  :func:`cluster_monitoring`, which needs at least one complete run);
* bad arguments raise :class:`ValueError` naming the argument, what was
  expected and what was found.

``WORKLOADS`` maps the short names ``"stock"``, ``"cluster"``, ``"traffic"``,
``"purchases"`` and ``"abcd"`` to the generator functions.
"""

import numpy as np
import polars as pl

__all__ = [
    "stock_trades",
    "cluster_monitoring",
    "traffic",
    "purchases",
    "sequence_abcd",
    "WORKLOADS",
    "DEFAULT_ITEMS",
    "FEET_PER_SEGMENT",
]

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


# ---------------------------------------------------------------------------
# 1. stock trades (GRETA Q1)
# ---------------------------------------------------------------------------

_STOCK_SCHEMA: dict[str, pl.DataType] = {
    "type": pl.String,
    "time": pl.Int64,
    "company": pl.Int64,
    "sector": pl.Int64,
    "price": pl.Float64,
    "volume": pl.Int64,
    "side": pl.String,
    "tid": pl.Int64,
}


def stock_trades(
    *,
    n_events: int,
    seed: int = 0,
    n_companies: int = 10,
    n_sectors: int = 3,
    mean_gap: float = 1.0,
) -> pl.DataFrame:
    """Synthetic stock-trade stream for GRETA query Q1 (``Stock S+``).

    Replicates the schema of the NYSE trade stream used by GRETA (volume,
    price, time stamp in seconds, sell/buy, company, sector, transaction id).
    Every row has event type ``"Stock"``.

    Distributions (all independent unless stated):

    * ``time``: the first trade is at 0; each further gap is
      ``Poisson(mean_gap)`` seconds, so equal time stamps (ties) occur.
    * ``company``: uniform integer in ``[0, n_companies - 1]``.
    * ``sector``: ``company % n_sectors`` (deterministic).
    * ``price``: per-company random walk. Company ``c`` starts at
      ``s_c ~ Uniform[90, 110)``; each trade of ``c`` first applies a step
      ``N(0, 1)`` and reports the new level. The walk is floored at 0.01 as a
      barrier (``P_k = max(0.01, P_{k-1} + step_k)``), not merely clipped on
      output, so it leaves the floor again on the next up-step. The reported
      price is rounded to 2 decimals (never below 0.01).
    * ``volume``: uniform integer in ``[1, 10000]``.
    * ``side``: ``"buy"`` or ``"sell"`` with probability 1/2 each.
    * ``tid``: transaction id ``0 .. n_events - 1`` in stream order.

    Parameters
    ----------
    n_events : int
        Number of trades (rows), ``>= 0``.
    seed : int, default 0
        Seed for ``numpy.random.default_rng``, ``>= 0``.
    n_companies : int, default 10
        Number of companies, ``>= 1``.
    n_sectors : int, default 3
        Number of sectors, ``>= 1``. If ``n_sectors > n_companies`` the
        sectors ``n_companies .. n_sectors - 1`` simply have no trades.
    mean_gap : float, default 1.0
        Mean of the Poisson inter-arrival gap in seconds, finite and ``> 0``.

    Returns
    -------
    polars.DataFrame
        Columns ``type`` (String, always ``"Stock"``), ``time`` (Int64),
        ``company`` (Int64), ``sector`` (Int64), ``price`` (Float64),
        ``volume`` (Int64), ``side`` (String), ``tid`` (Int64); sorted by
        ``time``, ``n_events`` rows, no nulls.

    Raises
    ------
    ValueError
        If an argument is out of range or of the wrong type.

    Examples
    --------
    >>> from cepvec.generators import stock_trades
    >>> df = stock_trades(n_events=1000, seed=1)
    >>> df.columns
    ['type', 'time', 'company', 'sector', 'price', 'volume', 'side', 'tid']
    >>> df.height
    1000
    >>> (df["sector"] == df["company"] % 3).all()
    True
    """
    n, seed = _check_common(n_events, seed)
    n_companies = _check_int("n_companies", n_companies, 1)
    n_sectors = _check_int("n_sectors", n_sectors, 1)
    mean_gap = _check_positive("mean_gap", mean_gap)
    if n == 0:
        return _empty(_STOCK_SCHEMA)

    rng = np.random.default_rng(seed)
    time = _times_from_gaps(rng.poisson(mean_gap, n))
    company = rng.integers(0, n_companies, n, dtype=np.int64)
    start = rng.uniform(90.0, 110.0, n_companies)
    step = rng.normal(0.0, 1.0, n)
    volume = rng.integers(1, 10_001, n, dtype=np.int64)
    side = rng.integers(0, 2, n, dtype=np.int64)

    walk = _floored_walk(company, start[company], step, 0.01)
    price = np.maximum(np.round(walk, 2), 0.01)
    out = pl.DataFrame(
        {
            "type": pl.repeat("Stock", n, dtype=pl.String, eager=True).alias("type"),
            "time": pl.Series("time", time, dtype=pl.Int64),
            "company": pl.Series("company", company, dtype=pl.Int64),
            "sector": pl.Series("sector", company % n_sectors, dtype=pl.Int64),
            "price": pl.Series("price", price, dtype=pl.Float64),
            "volume": pl.Series("volume", volume, dtype=pl.Int64),
            "side": _labels(side, ("buy", "sell"), "side"),
            "tid": pl.Series("tid", np.arange(n, dtype=np.int64)),
        }
    )
    return _finish(out)


# ---------------------------------------------------------------------------
# 2. cluster monitoring (GRETA Q2)
# ---------------------------------------------------------------------------

_CLUSTER_TYPES = ("Start", "Measurement", "End")
_CLUSTER_SCHEMA: dict[str, pl.DataType] = {
    "type": pl.String,
    "time": pl.Int64,
    "job": pl.Int64,
    "mapper": pl.Int64,
    "cpu": pl.Float64,
    "memory": pl.Float64,
    "load": pl.Float64,
}


def _run_lengths(rng: np.random.Generator, n: int, mean_measurements: float) -> np.ndarray:
    """Lengths (>= 3) of complete Start, Measurement+, End runs summing to ``n``."""
    p = 1.0 / mean_measurements
    batch = int(n / (mean_measurements + 2.0) * 1.1) + 16
    chunks = []
    total = 0
    while total < n:  # a loop over batches of runs, not over events
        lengths = rng.geometric(p, batch).astype(np.int64) + 2
        chunks.append(lengths)
        total += int(lengths.sum())
    lengths = np.concatenate(chunks)
    cum = np.cumsum(lengths)
    k = int(np.searchsorted(cum, n))  # first run whose end reaches n
    rest = n - (int(cum[k - 1]) if k > 0 else 0)
    if rest >= 3:
        lengths = lengths[: k + 1].copy()
        lengths[k] = rest
    else:  # 1 or 2 events left over: give them to the previous run (k >= 1 since n >= 3)
        lengths = lengths[:k].copy()
        lengths[k - 1] += rest
    return lengths


def cluster_monitoring(
    *,
    n_events: int,
    seed: int = 0,
    n_mappers: int = 10,
    n_jobs: int = 5,
    mean_measurements: float = 20.0,
    mean_gap: float = 1.0,
) -> pl.DataFrame:
    """Synthetic Hadoop-cluster monitoring stream for GRETA query Q2.

    Q2 is ``SEQ(Start S, Measurement M+, End E) WHERE [job, mapper]``. Every
    ``(job, mapper)`` pair repeatedly runs *Start, Measurement x m, End*; the
    runs of different pairs are interleaved in time.

    Construction and distributions:

    * Runs: the number of measurements of a run is ``m ~ Geometric(p)`` on
      ``{1, 2, ...}`` with ``p = 1 / mean_measurements`` (mean
      ``mean_measurements``, default 20). Runs are drawn until they cover
      ``n_events``; the final run is shortened so the stream has exactly
      ``n_events`` rows, and if only 1 or 2 events would be left for it they
      are appended as extra measurements to the preceding run instead. Hence
      **every run is complete** and has at least one measurement.
    * Each run is assigned to a pair ``(job, mapper)`` drawn uniformly from
      ``n_jobs x n_mappers`` pairs (``job`` uniform in ``[0, n_jobs - 1]``,
      ``mapper`` uniform in ``[0, n_mappers - 1]``, independent); a pair
      executes its runs one after another.
    * Interleaving: the stream order is a uniformly random interleaving of
      the pairs' event sequences (a uniform shuffle of the multiset of pair
      labels), so each pair's events keep their order and runs of a pair
      never overlap.
    * ``time``: the first event is at 0 and gaps are ``Geometric(1 /
      mean_gap)`` on ``{1, 2, ...}`` (mean ``mean_gap``; with the default 1.0
      every gap is exactly 1), so ``time`` is **strictly increasing** and
      the per-pair order is unambiguous.
    * Measurement rows: ``cpu ~ Uniform[0, 1000)``, ``memory ~ Uniform[0,
      64)`` (GB), ``load ~ Uniform[0, 10)``, all Float64 and independent.
    * Start and End rows carry ``job`` and ``mapper`` but have **null**
      ``cpu``, ``memory`` and ``load``.

    Parameters
    ----------
    n_events : int
        Number of rows; ``0`` (empty frame) or ``>= 3`` (one complete run).
    seed : int, default 0
        Seed for ``numpy.random.default_rng``, ``>= 0``.
    n_mappers : int, default 10
        Number of mapper ids, ``>= 1``.
    n_jobs : int, default 5
        Number of job ids, ``>= 1``.
    mean_measurements : float, default 20.0
        Mean number of measurements per run, finite and ``>= 1``.
    mean_gap : float, default 1.0
        Mean gap between consecutive events in seconds, finite and ``>= 1``.

    Returns
    -------
    polars.DataFrame
        Columns ``type`` (String: ``"Start"``, ``"Measurement"``, ``"End"``),
        ``time`` (Int64, strictly increasing), ``job`` (Int64), ``mapper``
        (Int64), ``cpu``, ``memory``, ``load`` (Float64, null on Start/End);
        ``n_events`` rows.

    Raises
    ------
    ValueError
        If an argument is out of range or of the wrong type.

    Examples
    --------
    >>> import polars as pl
    >>> from cepvec.generators import cluster_monitoring
    >>> df = cluster_monitoring(n_events=1000, seed=1)
    >>> sorted(df["type"].unique().to_list())
    ['End', 'Measurement', 'Start']
    >>> df.filter(pl.col("type") != "Measurement")["cpu"].null_count() == (
    ...     df["type"] != "Measurement").sum()
    True
    """
    n, seed = _check_common(n_events, seed)
    if 0 < n < 3:
        raise ValueError(
            "n_events must be 0 or an integer >= 3 "
            f"(one complete Start, Measurement, End run), got {n_events!r}"
        )
    n_mappers = _check_int("n_mappers", n_mappers, 1)
    n_jobs = _check_int("n_jobs", n_jobs, 1)
    mean_measurements = _check_positive("mean_measurements", mean_measurements, 1.0, inclusive=True)
    mean_gap = _check_positive("mean_gap", mean_gap, 1.0, inclusive=True)
    if n == 0:
        return _empty(_CLUSTER_SCHEMA)

    rng = np.random.default_rng(seed)
    lengths = _run_lengths(rng, n, mean_measurements)
    n_runs = lengths.size
    n_pairs = n_jobs * n_mappers
    pair_dtype = np.int16 if n_pairs <= np.iinfo(np.int16).max else np.int64  # radix sort
    pair_of_run = rng.integers(0, n_pairs, n_runs).astype(pair_dtype)

    # Events in run-major order.
    run_start = np.cumsum(lengths) - lengths
    run_id = np.repeat(np.arange(n_runs), lengths)
    kind = np.ones(n, dtype=np.int8)  # Measurement
    kind[run_start] = 0  # Start
    kind[run_start + lengths - 1] = 2  # End
    pair_evt = pair_of_run[run_id]
    del run_id

    # Uniform random interleaving preserving each pair's order: shuffle the
    # multiset of pair labels; the k-th occurrence of pair q in the shuffled
    # sequence receives the k-th event of q.
    by_pair = np.argsort(pair_evt, kind="stable")
    slots = np.argsort(rng.permutation(pair_evt), kind="stable")
    dest = np.empty(n, dtype=np.int64)
    dest[by_pair] = slots
    kind_g = np.empty_like(kind)
    kind_g[dest] = kind
    pair_g = np.empty_like(pair_evt)
    pair_g[dest] = pair_evt
    pair_g = pair_g.astype(np.int64)

    time = _times_from_gaps(rng.geometric(1.0 / mean_gap, n))
    cpu = rng.uniform(0.0, 1000.0, n)
    memory = rng.uniform(0.0, 64.0, n)
    load = rng.uniform(0.0, 10.0, n)

    is_measurement = pl.Series("_m", kind_g == 1)
    out = pl.DataFrame(
        {
            "type": _labels(kind_g, _CLUSTER_TYPES),
            "time": pl.Series("time", time, dtype=pl.Int64),
            "job": pl.Series("job", pair_g // n_mappers, dtype=pl.Int64),
            "mapper": pl.Series("mapper", pair_g % n_mappers, dtype=pl.Int64),
            "cpu": cpu,
            "memory": memory,
            "load": load,
            "_m": is_measurement,
        }
    ).with_columns(
        pl.when(pl.col("_m")).then(pl.col(c)).otherwise(None).alias(c)
        for c in ("cpu", "memory", "load")
    ).drop("_m")
    return _finish(out)


# ---------------------------------------------------------------------------
# 3. traffic (GRETA Q3, Linear Road-like)
# ---------------------------------------------------------------------------

_TRAFFIC_TYPES = ("Position", "Accident")
_TRAFFIC_SCHEMA: dict[str, pl.DataType] = {
    "type": pl.String,
    "time": pl.Int64,
    "vehicle": pl.Int64,
    "segment": pl.Int64,
    "speed": pl.Float64,
    "position": pl.Int64,
}


def traffic(
    *,
    n_events: int,
    seed: int = 0,
    n_vehicles: int = 100,
    n_segments: int = 10,
    accident_rate: float = 0.001,
) -> pl.DataFrame:
    """Synthetic Linear Road-like traffic stream for GRETA query Q3.

    Q3 is ``SEQ(NOT Accident A, Position P+) WHERE [P.vehicle, segment]``.
    The expressway is a ring of ``n_segments`` one-mile segments
    (:data:`FEET_PER_SEGMENT` = 5280 feet each), total length
    ``L = n_segments * 5280`` feet.

    Distributions:

    * ``type``: each event independently is ``"Accident"`` with probability
      ``accident_rate``, else ``"Position"``.
    * ``time``: the first event is at 0; gaps are ``Poisson(30 /
      n_vehicles)`` seconds, so each vehicle reports on average every 30
      seconds as in Linear Road (ties occur).
    * Position rows:

      - ``vehicle``: uniform integer in ``[0, n_vehicles - 1]``.
      - ``speed`` (mph, Float64): per-vehicle random walk. Vehicle ``v``
        starts at ``Uniform[0, 100)``; each of its reports applies a step
        ``N(0, 5)`` and reports the new speed. The walk is kept inside
        ``[0, 100]`` by *reflection* at both bounds (folding the free walk),
        rather than by clipping the cumulative sum, which would pin most
        speeds at the bounds for long streams; reflection is the
        clip-to-range that keeps the walk mixing (its stationary
        distribution is uniform on ``[0, 100]``).
      - ``position`` (feet, Int64): vehicle ``v`` starts at a uniform integer
        in ``[0, L)``; each report advances it by
        ``round(speed * dt * 5280 / 3600)`` feet, where ``dt`` is the time
        since the vehicle's previous report (0 for its first report), modulo
        ``L`` (ring road).
      - ``segment``: ``position // 5280``, in ``[0, n_segments - 1]``.

    * Accident rows: ``position`` uniform integer in ``[0, L)``, ``segment``
      ``= position // 5280``; ``vehicle`` and ``speed`` are **null**.

    Parameters
    ----------
    n_events : int
        Number of rows, ``>= 0``.
    seed : int, default 0
        Seed for ``numpy.random.default_rng``, ``>= 0``.
    n_vehicles : int, default 100
        Number of vehicles, ``>= 1``.
    n_segments : int, default 10
        Number of one-mile segments of the ring road, ``>= 1``.
    accident_rate : float, default 0.001
        Probability that an event is an Accident, in ``[0, 1]``.

    Returns
    -------
    polars.DataFrame
        Columns ``type`` (String: ``"Position"``, ``"Accident"``), ``time``
        (Int64), ``vehicle`` (Int64, null on Accident), ``segment`` (Int64),
        ``speed`` (Float64, null on Accident), ``position`` (Int64); sorted
        by ``time``, ``n_events`` rows. Invariant on all rows:
        ``segment == position // 5280``.

    Raises
    ------
    ValueError
        If an argument is out of range or of the wrong type.

    Examples
    --------
    >>> import polars as pl
    >>> from cepvec.generators import traffic
    >>> df = traffic(n_events=1000, seed=1, accident_rate=0.01)
    >>> df.filter(pl.col("type") == "Accident")["vehicle"].null_count() == (
    ...     df["type"] == "Accident").sum()
    True
    """
    n, seed = _check_common(n_events, seed)
    n_vehicles = _check_int("n_vehicles", n_vehicles, 1)
    n_segments = _check_int("n_segments", n_segments, 1)
    accident_rate = _check_probability("accident_rate", accident_rate)
    if n == 0:
        return _empty(_TRAFFIC_SCHEMA)

    rng = np.random.default_rng(seed)
    road = n_segments * FEET_PER_SEGMENT
    time = _times_from_gaps(rng.poisson(_LINEAR_ROAD_REPORT_INTERVAL / n_vehicles, n))
    is_accident = rng.random(n) < accident_rate
    vehicle = rng.integers(0, n_vehicles, n, dtype=np.int64)
    speed0 = rng.uniform(0.0, 100.0, n_vehicles)
    pos0 = rng.integers(0, road, n_vehicles, dtype=np.int64)
    step = rng.normal(0.0, 5.0, n)
    accident_pos = rng.integers(0, road, n, dtype=np.int64)

    # Accident rows form their own throw-away group (-1) in the walks below.
    group = np.where(is_accident, -1, vehicle)
    speed = _reflected_walk(group, np.where(is_accident, 0.0, speed0[vehicle]), step, 0.0, 100.0)
    dt = (
        pl.DataFrame({"g": group, "t": time})
        .select(pl.col("t").diff().over("g").fill_null(0))["t"]
        .to_numpy()
    )
    advance = np.round(speed * dt * (FEET_PER_SEGMENT / 3600.0)).astype(np.int64)
    walk_pos = (pos0[vehicle] + _group_cumsum(group, advance)) % road
    position = np.where(is_accident, accident_pos, walk_pos).astype(np.int64)

    out = pl.DataFrame(
        {
            "type": _labels(is_accident.astype(np.int8), _TRAFFIC_TYPES),
            "time": pl.Series("time", time, dtype=pl.Int64),
            "vehicle": pl.Series("vehicle", vehicle, dtype=pl.Int64),
            "segment": pl.Series("segment", position // FEET_PER_SEGMENT, dtype=pl.Int64),
            "speed": pl.Series("speed", speed, dtype=pl.Float64),
            "position": pl.Series("position", position, dtype=pl.Int64),
            "_a": pl.Series("_a", is_accident),
        }
    ).with_columns(
        pl.when(pl.col("_a")).then(None).otherwise(pl.col(c)).alias(c)
        for c in ("vehicle", "speed")
    ).drop("_a")
    return _finish(out)


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


#: Short workload name -> generator function.
WORKLOADS: "dict[str, Callable[..., pl.DataFrame]]" = {  # noqa: F821 (typing only)
    "stock": stock_trades,
    "cluster": cluster_monitoring,
    "traffic": traffic,
    "purchases": purchases,
    "abcd": sequence_abcd,
}

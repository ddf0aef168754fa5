"""The GRETA paper workloads: stock trades (Q1), cluster monitoring (Q2), traffic (Q3)."""

from __future__ import annotations

import numpy as np
import polars as pl


from cepvec.generators._common import (
    FEET_PER_SEGMENT, _LINEAR_ROAD_REPORT_INTERVAL, _check_common, _check_int, _check_positive,
    _check_probability, _empty, _finish, _floored_walk, _group_cumsum, _labels, _reflected_walk,
    _times_from_gaps,
)

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



"""Tests for cepvec.generators (seeded synthetic workload streams)."""

import re

import numpy as np
import polars as pl
import pytest

from cepvec import generators as gen
from cepvec.generators import _common
from cepvec.generators import (
    DEFAULT_ITEMS,
    FEET_PER_SEGMENT,
    WORKLOADS,
    cluster_monitoring,
    purchases,
    sequence_abcd,
    stock_trades,
    traffic,
)

SCHEMAS = {
    "stock": {
        "type": pl.String,
        "time": pl.Int64,
        "company": pl.Int64,
        "sector": pl.Int64,
        "price": pl.Float64,
        "volume": pl.Int64,
        "side": pl.String,
        "tid": pl.Int64,
    },
    "cluster": {
        "type": pl.String,
        "time": pl.Int64,
        "job": pl.Int64,
        "mapper": pl.Int64,
        "cpu": pl.Float64,
        "memory": pl.Float64,
        "load": pl.Float64,
    },
    "traffic": {
        "type": pl.String,
        "time": pl.Int64,
        "vehicle": pl.Int64,
        "segment": pl.Int64,
        "speed": pl.Float64,
        "position": pl.Int64,
    },
    "purchases": {
        "type": pl.String,
        "time": pl.Int64,
        "customer": pl.Int64,
        "price": pl.Float64,
    },
    "abcd": {
        "type": pl.String,
        "time": pl.Int64,
        "id": pl.Int64,
        "x": pl.Int64,
        "v": pl.Float64,
    },
}

NAMES = sorted(SCHEMAS)


# ---------------------------------------------------------------------------
# properties shared by every generator
# ---------------------------------------------------------------------------


def test_workloads_registry():
    assert WORKLOADS == {
        "stock": stock_trades,
        "cluster": cluster_monitoring,
        "traffic": traffic,
        "purchases": purchases,
        "abcd": sequence_abcd,
    }


@pytest.mark.parametrize("name", NAMES)
def test_deterministic_per_seed(name):
    f = WORKLOADS[name]
    a = f(n_events=3000, seed=7)
    b = f(n_events=3000, seed=7)
    assert a.equals(b, null_equal=True)


@pytest.mark.parametrize("name", NAMES)
def test_different_seeds_differ(name):
    f = WORKLOADS[name]
    a = f(n_events=3000, seed=1)
    b = f(n_events=3000, seed=2)
    assert not a.equals(b, null_equal=True)
    # not just one column: the event types or times differ too
    assert not (a["type"].equals(b["type"]) and a["time"].equals(b["time"]))


@pytest.mark.parametrize("name", NAMES)
def test_schema(name):
    df = WORKLOADS[name](n_events=500, seed=3)
    assert dict(df.schema) == SCHEMAS[name]
    assert df.columns[:2] == ["type", "time"]


@pytest.mark.parametrize("name", NAMES)
def test_time_sorted_nonnegative_starts_at_zero(name):
    df = WORKLOADS[name](n_events=5000, seed=4)
    t = df["time"].to_numpy()
    assert t[0] == 0
    assert (t >= 0).all()
    assert (np.diff(t) >= 0).all()
    assert df["time"].null_count() == 0
    assert df["type"].null_count() == 0


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("n", [3, 4, 5, 17, 999, 4321])
def test_row_count(name, n):
    df = WORKLOADS[name](n_events=n, seed=n)
    assert df.height == n


@pytest.mark.parametrize("name", NAMES)
def test_zero_events_gives_empty_frame_with_schema(name):
    df = WORKLOADS[name](n_events=0)
    assert df.height == 0
    assert dict(df.schema) == SCHEMAS[name]


@pytest.mark.parametrize("name", ["stock", "traffic", "purchases", "abcd"])
@pytest.mark.parametrize("n", [1, 2])
def test_tiny_streams(name, n):
    assert WORKLOADS[name](n_events=n).height == n


@pytest.mark.parametrize("name", NAMES)
def test_numpy_integer_arguments_accepted(name):
    a = WORKLOADS[name](n_events=np.int64(100), seed=np.int32(5))
    b = WORKLOADS[name](n_events=100, seed=5)
    assert a.equals(b, null_equal=True)


# ---------------------------------------------------------------------------
# stock_trades
# ---------------------------------------------------------------------------


def test_stock_invariants():
    df = stock_trades(n_events=20_000, seed=11, n_companies=7, n_sectors=4)
    assert (df["type"] == "Stock").all()
    assert (df["sector"] == df["company"] % 4).all()
    assert set(df["company"].unique()) == set(range(7))
    assert df["volume"].min() >= 1 and df["volume"].max() <= 10_000
    assert set(df["side"].unique()) == {"buy", "sell"}
    assert df["tid"].to_list() == list(range(20_000))
    price = df["price"].to_numpy()
    assert (price >= 0.01).all()
    assert np.allclose(price, np.round(price, 2), rtol=0, atol=1e-9)
    assert df.null_count().sum_horizontal().item() == 0
    # ties occur with Poisson gaps
    assert (np.diff(df["time"].to_numpy()) == 0).any()


def test_stock_price_walk_starts_near_100_with_unit_steps():
    df = stock_trades(n_events=20_000, seed=12, n_companies=5)
    first = df.group_by("company").agg(pl.col("price").first())["price"]
    assert first.min() > 85 and first.max() < 115
    steps = df.select(pl.col("price").diff().over("company").drop_nulls())["price"].to_numpy()
    assert abs(steps.std() - 1.0) < 0.05
    assert abs(steps.mean()) < 0.05


def test_stock_price_floor_is_reached_and_left():
    df = stock_trades(n_events=200_000, seed=0, n_companies=1, n_sectors=1)
    price = df["price"].to_numpy()
    assert price.min() == 0.01
    at_floor = np.flatnonzero(price == 0.01)
    # the floor is a barrier, not an absorbing state
    assert (price[at_floor[at_floor + 1 < price.size] + 1] > 0.01).any()


def test_stock_mean_gap():
    df = stock_trades(n_events=100_000, seed=3, mean_gap=2.5)
    gaps = np.diff(df["time"].to_numpy())
    assert abs(gaps.mean() - 2.5) < 0.05


def test_stock_more_sectors_than_companies():
    df = stock_trades(n_events=1000, n_companies=2, n_sectors=5)
    assert (df["sector"] == df["company"]).all()


def test_floored_walk_matches_loop_reference():
    rng = np.random.default_rng(99)
    n = 5000
    group = rng.integers(0, 3, n)
    start_g = np.array([2.0, 5.0, 1.0])
    step = rng.normal(0.0, 1.0, n)
    got = _common._floored_walk(group, start_g[group], step, 0.5)
    level = start_g.copy()
    want = np.empty(n)
    for i in range(n):
        level[group[i]] = max(0.5, level[group[i]] + step[i])
        want[i] = level[group[i]]
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-9)
    assert (want == 0.5).any()


# ---------------------------------------------------------------------------
# cluster_monitoring
# ---------------------------------------------------------------------------

_RUNS = re.compile(r"(SM+E)*")


def _pair_sequences(df):
    code = pl.col("type").replace_strict(
        {"Start": "S", "Measurement": "M", "End": "E"}, return_dtype=pl.String
    )
    return (
        df.sort("time", maintain_order=True)
        .group_by("job", "mapper", maintain_order=True)
        .agg(code.str.join("").alias("seq"))
    )


@pytest.mark.parametrize("n", [3, 4, 5, 6, 23, 24, 25, 1000, 20_000])
def test_cluster_every_pair_is_start_measurements_end(n):
    df = cluster_monitoring(n_events=n, seed=n, n_jobs=3, n_mappers=4)
    assert df.height == n
    for seq in _pair_sequences(df)["seq"]:
        assert _RUNS.fullmatch(seq), seq


def test_cluster_invariants():
    df = cluster_monitoring(n_events=50_000, seed=5, n_jobs=4, n_mappers=6)
    assert set(df["type"].unique()) == {"Start", "Measurement", "End"}
    assert set(df["job"].unique()) == set(range(4))
    assert set(df["mapper"].unique()) == set(range(6))
    # strictly increasing time, default gap exactly 1
    assert (np.diff(df["time"].to_numpy()) == 1).all()
    meas = df.filter(pl.col("type") == "Measurement")
    other = df.filter(pl.col("type") != "Measurement")
    assert meas.select("cpu", "memory", "load").null_count().sum_horizontal().item() == 0
    assert other["cpu"].null_count() == other.height
    assert other["memory"].null_count() == other.height
    assert other["load"].null_count() == other.height
    assert other.select("job", "mapper").null_count().sum_horizontal().item() == 0
    assert 0 <= meas["cpu"].min() and meas["cpu"].max() < 1000
    assert 0 <= meas["memory"].min() and meas["memory"].max() < 64
    assert 0 <= meas["load"].min() and meas["load"].max() < 10
    n_starts = (df["type"] == "Start").sum()
    assert n_starts == (df["type"] == "End").sum()
    # geometric number of measurements with mean ~20
    assert abs(meas.height / n_starts - 20) < 2


def test_cluster_pairs_are_interleaved():
    df = cluster_monitoring(n_events=2000, seed=1, n_jobs=2, n_mappers=2)
    # the pair of consecutive events changes often (not one pair at a time)
    pair = (df["job"] * 2 + df["mapper"]).to_numpy()
    assert (np.diff(pair) != 0).mean() > 0.5


def test_cluster_knobs():
    df = cluster_monitoring(n_events=60_000, seed=2, mean_measurements=5.0, mean_gap=3.0)
    n_runs = (df["type"] == "Start").sum()
    assert abs((df["type"] == "Measurement").sum() / n_runs - 5.0) < 0.3
    gaps = np.diff(df["time"].to_numpy())
    assert gaps.min() >= 1
    assert abs(gaps.mean() - 3.0) < 0.1
    one = cluster_monitoring(n_events=100, mean_measurements=1.0)
    assert one.height == 100
    for seq in _pair_sequences(one)["seq"]:
        assert _RUNS.fullmatch(seq)


# ---------------------------------------------------------------------------
# traffic
# ---------------------------------------------------------------------------


def test_traffic_invariants():
    df = traffic(n_events=50_000, seed=6, n_vehicles=20, n_segments=4, accident_rate=0.02)
    assert set(df["type"].unique()) == {"Position", "Accident"}
    acc = df.filter(pl.col("type") == "Accident")
    pos = df.filter(pl.col("type") == "Position")
    assert acc.height > 0
    assert acc["vehicle"].null_count() == acc.height
    assert acc["speed"].null_count() == acc.height
    assert acc.select("segment", "position").null_count().sum_horizontal().item() == 0
    assert pos.null_count().sum_horizontal().item() == 0
    assert abs(acc.height / df.height - 0.02) < 0.005
    road = 4 * FEET_PER_SEGMENT
    assert df["position"].min() >= 0 and df["position"].max() < road
    assert (df["segment"] == df["position"] // FEET_PER_SEGMENT).all()
    assert set(df["segment"].unique()) == set(range(4))
    assert set(pos["vehicle"].unique()) == set(range(20))
    assert pos["speed"].min() >= 0 and pos["speed"].max() <= 100
    # each vehicle reports every ~30 s on average
    per_vehicle = df["time"].max() / (pos.height / 20)
    assert 27 < per_vehicle < 33


def test_traffic_vehicle_motion_is_consistent():
    df = traffic(n_events=20_000, seed=7, n_vehicles=10, n_segments=3, accident_rate=0.0)
    road = 3 * FEET_PER_SEGMENT
    moves = df.select(
        "vehicle",
        dt=pl.col("time").diff().over("vehicle"),
        dpos=pl.col("position").diff().over("vehicle"),
        dspeed=pl.col("speed").diff().over("vehicle"),
        speed="speed",
    ).drop_nulls()
    expected = np.round(moves["speed"].to_numpy() * moves["dt"].to_numpy() * 5280 / 3600)
    assert ((moves["dpos"].to_numpy() - expected) % road == 0).all()
    # random-walk speed: steps are small (N(0, 5), possibly reflected)
    assert np.abs(moves["dspeed"].to_numpy()).max() < 40
    assert 4.5 < moves["dspeed"].std() < 5.5


def test_traffic_accident_rate_extremes():
    none = traffic(n_events=2000, accident_rate=0.0)
    assert (none["type"] == "Position").all()
    everything = traffic(n_events=2000, accident_rate=1)
    assert (everything["type"] == "Accident").all()
    assert everything["vehicle"].null_count() == 2000


def test_reflected_walk_matches_loop_reference():
    rng = np.random.default_rng(5)
    n = 5000
    group = rng.integers(0, 4, n)
    start_g = rng.uniform(0, 10, 4)
    step = rng.normal(0, 3.0, n)
    got = _common._reflected_walk(group, start_g[group], step, 0.0, 10.0)
    # Folding the free walk is, path by path, the walk reflected at 0 and 10
    # whose step direction flips at each reflection (same law for symmetric
    # steps).
    level = start_g.copy()
    sign = np.ones(4)
    want = np.empty(n)
    for i in range(n):
        g = group[i]
        x = level[g] + sign[g] * step[i]
        while x < 0 or x > 10:
            x = -x if x < 0 else 20 - x
            sign[g] = -sign[g]
        level[g] = x
        want[i] = x
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-9)
    assert (got >= 0).all() and (got <= 10).all()


# ---------------------------------------------------------------------------
# purchases
# ---------------------------------------------------------------------------


def test_purchases_invariants():
    df = purchases(n_events=40_000, seed=8, n_customers=50)
    assert set(df["type"].unique()) == set(DEFAULT_ITEMS)
    assert set(df["customer"].unique()) == set(range(50))
    price = df["price"].to_numpy()
    assert (price > 0).all()
    assert np.allclose(price, np.round(price, 2), rtol=0, atol=1e-9)
    # per item: list price b_i times Uniform[0.8, 1.2)
    spread = df.group_by("type").agg(ratio=pl.col("price").max() / pl.col("price").min())
    assert (spread["ratio"] < 1.5 + 1e-6).all()
    # uniform over the 8 items
    counts = df["type"].value_counts()["count"].to_numpy()
    assert abs(counts / 40_000 - 1 / 8).max() < 0.01
    assert df.null_count().sum_horizontal().item() == 0


def test_purchases_weights_and_custom_items():
    df = purchases(n_events=30_000, seed=9, items=["A", "B", "C"], weights=[3, 1, 0])
    counts = dict(df["type"].value_counts().iter_rows())
    assert "C" not in counts
    assert abs(counts["A"] / 30_000 - 0.75) < 0.02
    df2 = purchases(n_events=100, items=("Solo",))
    assert (df2["type"] == "Solo").all()
    arr = purchases(n_events=100, items=["A", "B"], weights=np.array([1.0, 1.0]))
    assert arr.height == 100


# ---------------------------------------------------------------------------
# sequence_abcd
# ---------------------------------------------------------------------------


def test_abcd_invariants():
    df = sequence_abcd(n_events=40_000, seed=10, n_ids=6, max_gap=4)
    gaps = np.diff(df["time"].to_numpy())
    assert gaps.min() == 1 and gaps.max() == 4
    assert set(np.unique(gaps)) == {1, 2, 3, 4}
    assert set(df["type"].unique()) == set("ABCD")
    counts = df["type"].value_counts()["count"].to_numpy()
    assert abs(counts / 40_000 - 0.25).max() < 0.01
    assert set(df["id"].unique()) == set(range(6))
    assert df["x"].min() == 0 and df["x"].max() == 99
    assert 0 <= df["v"].min() and df["v"].max() < 1
    assert df.null_count().sum_horizontal().item() == 0


def test_abcd_types_and_gap_one():
    df = sequence_abcd(n_events=1000, types="XY", max_gap=1)
    assert set(df["type"].unique()) == {"X", "Y"}
    assert df["time"].to_list() == list(range(1000))
    df2 = sequence_abcd(n_events=1000, types=["Start", "Stop"])
    assert set(df2["type"].unique()) == {"Start", "Stop"}


# ---------------------------------------------------------------------------
# argument validation
# ---------------------------------------------------------------------------

BAD_ARGS = [
    (stock_trades, {"n_events": -1}, "n_events must be an integer >= 0, got -1"),
    (stock_trades, {"n_events": 2.0}, "n_events must be an integer >= 0, got 2.0"),
    (stock_trades, {"n_events": True}, "n_events must be an integer >= 0, got True"),
    (stock_trades, {"n_events": 10, "seed": -3}, "seed must be an integer >= 0, got -3"),
    (stock_trades, {"n_events": 10, "seed": "x"}, "seed must be an integer >= 0, got 'x'"),
    (stock_trades, {"n_events": 10, "n_companies": 0}, "n_companies must be an integer >= 1, got 0"),
    (stock_trades, {"n_events": 10, "n_sectors": 0}, "n_sectors must be an integer >= 1, got 0"),
    (stock_trades, {"n_events": 10, "mean_gap": 0}, "mean_gap must be a finite number > 0, got 0"),
    (
        stock_trades,
        {"n_events": 10, "mean_gap": float("inf")},
        "mean_gap must be a finite number > 0, got inf",
    ),
    (
        cluster_monitoring,
        {"n_events": 2},
        "n_events must be 0 or an integer >= 3 (one complete Start, Measurement, End run), got 2",
    ),
    (cluster_monitoring, {"n_events": -5}, "n_events must be an integer >= 0, got -5"),
    (cluster_monitoring, {"n_events": 10, "n_mappers": 0}, "n_mappers must be an integer >= 1, got 0"),
    (cluster_monitoring, {"n_events": 10, "n_jobs": -1}, "n_jobs must be an integer >= 1, got -1"),
    (
        cluster_monitoring,
        {"n_events": 10, "mean_measurements": 0.5},
        "mean_measurements must be a finite number >= 1, got 0.5",
    ),
    (
        cluster_monitoring,
        {"n_events": 10, "mean_gap": 0.9},
        "mean_gap must be a finite number >= 1, got 0.9",
    ),
    (traffic, {"n_events": 10, "n_vehicles": 0}, "n_vehicles must be an integer >= 1, got 0"),
    (traffic, {"n_events": 10, "n_segments": 0}, "n_segments must be an integer >= 1, got 0"),
    (
        traffic,
        {"n_events": 10, "accident_rate": 1.5},
        "accident_rate must be a number in [0, 1], got 1.5",
    ),
    (
        traffic,
        {"n_events": 10, "accident_rate": float("nan")},
        "accident_rate must be a number in [0, 1], got nan",
    ),
    (purchases, {"n_events": 10, "n_customers": 0}, "n_customers must be an integer >= 1, got 0"),
    (
        purchases,
        {"n_events": 10, "items": "Laptop"},
        "items must be a non-empty tuple or list of distinct non-empty strings, got 'Laptop'",
    ),
    (
        purchases,
        {"n_events": 10, "items": ()},
        "items must be a non-empty tuple or list of distinct non-empty strings, got ()",
    ),
    (
        purchases,
        {"n_events": 10, "items": ["A", "A"]},
        "items must be a non-empty tuple or list of distinct non-empty strings, got ['A', 'A']",
    ),
    (
        purchases,
        {"n_events": 10, "weights": [1, 2]},
        "weights must have one number per item (8), got [1, 2]",
    ),
    (
        purchases,
        {"n_events": 10, "items": ["A", "B"], "weights": ["x", 1]},
        "weights must have one number per item (2), got ['x', 1]",
    ),
    (
        purchases,
        {"n_events": 10, "items": ["A", "B"], "weights": [-1, 2]},
        "weights must be finite and non-negative with a positive sum, got [-1, 2]",
    ),
    (
        purchases,
        {"n_events": 10, "items": ["A", "B"], "weights": [0, 0]},
        "weights must be finite and non-negative with a positive sum, got [0, 0]",
    ),
    (sequence_abcd, {"n_events": 10, "n_ids": 0}, "n_ids must be an integer >= 1, got 0"),
    (sequence_abcd, {"n_events": 10, "max_gap": 0}, "max_gap must be an integer >= 1, got 0"),
    (
        sequence_abcd,
        {"n_events": 10, "types": "AAB"},
        "types must be a non-empty string of distinct letters or a tuple/list of "
        "distinct non-empty strings, got 'AAB'",
    ),
    (
        sequence_abcd,
        {"n_events": 10, "types": ""},
        "types must be a non-empty string of distinct letters or a tuple/list of "
        "distinct non-empty strings, got ''",
    ),
    (
        sequence_abcd,
        {"n_events": 10, "types": ["A", 1]},
        "types must be a non-empty string of distinct letters or a tuple/list of "
        "distinct non-empty strings, got ['A', 1]",
    ),
]


@pytest.mark.parametrize(
    ("func", "kwargs", "message"),
    BAD_ARGS,
    ids=[f"{f.__name__}-{'-'.join(map(str, kw))}-{i}" for i, (f, kw, _) in enumerate(BAD_ARGS)],
)
def test_bad_arguments_raise(func, kwargs, message):
    with pytest.raises(ValueError) as excinfo:
        func(**kwargs)
    assert str(excinfo.value) == message


@pytest.mark.parametrize("name", NAMES)
def test_missing_n_events_and_positional_calls_rejected(name):
    f = WORKLOADS[name]
    with pytest.raises(TypeError):
        f()
    with pytest.raises(TypeError):
        f(100)

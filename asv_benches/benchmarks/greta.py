"""GRETA workloads (stock Q1, cluster Q2, traffic Q3) on the trend path, with baselines in the same run.

* ``time_greta``: ``engine="auto"`` (the GRETA trend path: Fenwick trees over
  ranked prices for ``S.price > NEXT(S).price``, shared SLIDE window slots);
* ``time_reference``: the match-constructing engine, only at 200 events (it
  is exponential: 500 Q1 events did not finish in 14 minutes);
* ``time_polars_pass``: a plain Polars group-by over the same columns.

Q1 uses the paper's window (10 minutes sliding by 10 seconds: 60 windows per
event); Q2 uses 1 minute sliding by 30 seconds; Q3 (the paper's query:
``[P.vehicle, segment]``, accidents broadcast to every vehicle of their
segment) 5 minutes sliding by 1 minute.
"""

from __future__ import annotations

import functools

import numpy as np
import polars as pl

import cepvec

from . import SEED, SKIP_SLOW, make_events

Q1 = ("RETURN sector, COUNT(*) PATTERN Stock S+ WHERE [company, sector] AND S.price > NEXT(S).price "
      "GROUP-BY sector WITHIN 10 minutes SLIDE 10 seconds")
Q2 = ("RETURN mapper, SUM(M.cpu) PATTERN SEQ(Start S, Measurement M+, End E) WHERE [job, mapper] "
      "AND M.load < NEXT(M).load GROUP-BY mapper WITHIN 1 minute SLIDE 30 seconds")
Q3 = ("RETURN segment, COUNT(*), AVG(P.speed) PATTERN SEQ(NOT Accident A, Position P+) "
      "WHERE [P.vehicle, segment] AND P.speed > NEXT(P).speed GROUP-BY segment WITHIN 5 minutes SLIDE 1 minute")
SIZES = [200, 100_000] + ([] if SKIP_SLOW else [1_000_000])
WORKLOAD = {"q1": ("stock", Q1), "q2": ("cluster", Q2), "q3": ("traffic", Q3)}


class Greta:
    params = [["q1", "q2", "q3"], SIZES]
    param_names = ["query", "n_events"]
    timeout = 600

    def setup(self, query, n_events):
        workload, text = WORKLOAD[query]
        self.events = make_events(workload, n_events)
        self.query = cepvec.compile(text)
        cepvec.run(self.query, make_events(workload, 200))  # compile / load the kernels

    def time_greta(self, query, n_events):
        cepvec.run(self.query, self.events)

    def time_polars_pass(self, query, n_events):
        self.events.group_by(self.events.columns[2]).agg(pl.len())


class GretaReference:
    params = [["q1", "q2", "q3"], [200]]
    param_names = ["query", "n_events"]
    timeout = 600

    def setup(self, query, n_events):
        workload, text = WORKLOAD[query]
        self.events = make_events(workload, n_events)
        self.query = cepvec.compile(text)
        cepvec.run(self.query, self.events)

    def time_reference(self, query, n_events):
        cepvec.run(self.query, self.events, engine="reference")

    def time_greta(self, query, n_events):
        cepvec.run(self.query, self.events)


# --------------------------------------------------------------------------- scaling: n log n vs n^2
#: GRETA Q1 in one partition and one window (no equivalence, no WITHIN): every event is a
#: predecessor candidate of every later one. The count exceeds int64 from a few hundred events
#: on, so both paths run with numeric="float64".
Q1_ONE_WINDOW = "RETURN COUNT(*) PATTERN Stock S+ WHERE S.price > NEXT(S).price"
Q1_THRESHOLD = "RETURN COUNT(*) PATTERN Stock S+ WHERE S.price > NEXT(S).price * 1.01"
SCALING_SIZES = [1_000, 10_000, 100_000] + ([] if SKIP_SLOW else [1_000_000])
#: Price distributions of the scaling curve, each with its own time stamps:
#: ``generator``: the stock generator (prices in cents, ~40k distinct values, repeated times);
#: ``distinct``: uniform floats, all distinct, strictly increasing integer times;
#: ``few``: 50 distinct integer prices, times with ties (about 4 events a time stamp);
#: ``rising``: distinct floats sorted ascending with a drop every 97 events (sorted key spaces
#: plus one smaller key: the input on which a quicksort of the key space goes quadratic).
KEYS = ["generator", "distinct", "few", "rising"]


@functools.lru_cache(maxsize=16)
def scaling_events(keys: str, n_events: int) -> pl.DataFrame:
    if keys == "generator":
        return make_events("stock", n_events, n_companies=1, n_sectors=1)
    rng = np.random.default_rng(0)
    time = np.arange(n_events, dtype=np.int64)
    if keys == "distinct":
        price = rng.uniform(0, 1000, n_events)
    elif keys == "few":
        price = rng.integers(0, 50, n_events).astype(np.float64)
        time = np.sort(rng.integers(0, max(1, n_events // 4), n_events))
    else:
        price = np.sort(rng.uniform(0, 1000, n_events))
        price[::97] = rng.uniform(0, 1, len(price[::97]))
    return pl.DataFrame({"type": "Stock", "time": time, "price": price})


class GretaScaling:
    """Q1 in one window on the Fenwick trend path (O(log n) per event), on four price distributions.

    Baseline in the same run: ``time_numpy_argsort``, a NumPy argsort of the prices (the ranking
    that any O(n log n) method needs at least once). ``time_fenwick`` over that baseline should
    stay flat as n grows; the 10^5 -> 10^6 step of ``time_fenwick`` should be about 10x.
    """

    params = [KEYS, SCALING_SIZES]
    param_names = ["keys", "n_events"]
    timeout = 600

    def setup(self, keys, n_events):
        self.q = cepvec.compile(Q1_ONE_WINDOW)
        self.events = scaling_events(keys, n_events)
        cepvec.run(self.q, self.events.head(100), engine="greta", numeric="float64")  # compile / load

    def time_fenwick(self, keys, n_events):
        cepvec.run(self.q, self.events, engine="greta", numeric="float64")

    def time_numpy_argsort(self, keys, n_events):
        np.argsort(self.events["price"].to_numpy(), kind="stable")


class GretaScalingThreshold(GretaScaling):
    """Q1 in one window with a threshold that is not the key (``S.price > NEXT(S).price * 1.01``):
    the trend kernel sorts the thresholds and merges them with the keys (``kernels/trend/run.py``;
    ``GretaScaling``'s threshold is the event's own key, which needs no placement). Baseline in the
    same run: ``time_numpy_argsort`` of the prices."""

    params = [["distinct", "few"], SCALING_SIZES]

    def setup(self, keys, n_events):
        self.q = cepvec.compile(Q1_THRESHOLD)
        self.events = scaling_events(keys, n_events)
        cepvec.run(self.q, self.events.head(100), engine="greta", numeric="float64")  # compile / load


class GretaScalingScan:
    """Baseline from the same run: the predecessor-scan path (O(n) per event) on the same query.

    The scan is forced by calling its driver ``cepvec.paths.scan.run.run_scan`` directly (the engine
    registry would pick the Fenwick path for this predicate); it returns the same counts. Only up
    to 10^5 events: 10^6 would take about 100x the 10^5 time.
    """

    params = [SCALING_SIZES[:3]]
    param_names = ["n_events"]
    timeout = 600

    def setup(self, n_events):
        from cepvec.paths.scan.run import run_scan
        from cepvec.runtime.prepare import prepare

        self.q = cepvec.compile(Q1_ONE_WINDOW)
        self.events = scaling_events("generator", n_events)
        self.prepare = prepare
        self.run = run_scan
        self.run(self.q, prepare(self.q, self.events.head(100)), numeric="float64")

    def time_scan(self, n_events):
        self.run(self.q, self.prepare(self.q, self.events), numeric="float64")


class _Partitions:
    """10^5 events, 10 vs 10 000 partitions in one run, uniform and Zipf keys: ``QUERIES`` (one per
    window form) over ``frame`` with ``NUMERIC`` counts; time and peak memory of ``cepvec.run``."""

    QUERIES: dict = {}
    NUMERIC = "int64"
    param_names = ["window", "partitions", "keys"]
    timeout = 300

    @staticmethod
    def frame(rng, n, ids):
        raise NotImplementedError

    def setup(self, window, partitions, keys):
        rng = np.random.default_rng(SEED)
        n = 100_000
        ids = rng.integers(0, partitions, n) if keys == "uniform" else (rng.zipf(1.3, n) - 1) % partitions
        self.events = self.frame(rng, n, ids.astype(np.int64))
        self.query = cepvec.compile(self.QUERIES[window])
        cepvec.run(self.query, self.events[:2000], numeric=self.NUMERIC)

    def time_run(self, window, partitions, keys):
        cepvec.run(self.query, self.events, numeric=self.NUMERIC)

    def peakmem_run(self, window, partitions, keys):
        cepvec.run(self.query, self.events, numeric=self.NUMERIC)


class ScanGroups(_Partitions):
    """The predecessor scan (a `!=` edge predicate) under SLIDE and under EMIT CHANGES with `[id]`
    finer than GROUP-BY, 10^5 events, 10 vs 10 000 partitions: the output rows are the windows (emit
    times) that hold a partition's events, so many small partitions cost about what a few large
    ones do (ratio of the two in one run). Two distributions of the keys: uniform and Zipf. Before
    2026-11-26 the rows were every window (emit time) of a partition's span: 10 000 partitions under
    SLIDE took 5 s and 5 GB, under EMIT CHANGES about 40 s and 17 GB."""

    QUERIES = {
        "slide": "RETURN id, COUNT(*) PATTERN A+ WHERE [id] AND A.x + NEXT(A).x != 3 GROUP-BY id WITHIN 20 SLIDE 10",
        "emit": "RETURN g, COUNT(*) PATTERN A+ WHERE [id] AND A.x + NEXT(A).x != 3 GROUP-BY g WITHIN 20 EMIT CHANGES",
    }
    NUMERIC = "float64"
    params = [list(QUERIES), [10, 10_000], ["uniform", "zipf"]]

    @staticmethod
    def frame(rng, n, ids):
        return pl.DataFrame({"type": ["A"] * n, "time": np.cumsum(rng.integers(1, 4, n)), "id": ids,
                             "g": np.zeros(n, np.int64), "x": rng.integers(0, 1000, n).astype(np.float64)})


class EmitPartitions(_Partitions):
    """EMIT CHANGES with ``[id]`` finer than the (absent) GROUP-BY on the linear path, 10^5 events,
    10 vs 10 000 partitions in the same run, uniform and Zipf keys: under ``WITHIN 20`` a partition
    visits only the emit times within 20 after its events (``kernels/emit.py``); without WITHIN the
    first emit time after each of its events, with a row only where its totals change, carried
    forward per group (``MODE_EMIT_CHANGED``). Before 2026-11-26 both visited (and the latter wrote)
    a row per partition and END time: 10 000 partitions took 0.7 s under WITHIN and far more memory
    than the machine has without it."""

    QUERIES = {
        "within": "RETURN COUNT(*), SUM(B.x) PATTERN SEQ(A, B) WHERE [id] WITHIN 20 EMIT CHANGES",
        "unbounded": "RETURN COUNT(*), SUM(B.x) PATTERN SEQ(A, B) WHERE [id] EMIT CHANGES",
    }
    params = [list(QUERIES), [10, 10_000], ["uniform", "zipf"]]

    @staticmethod
    def frame(rng, n, ids):
        return pl.DataFrame({"type": rng.choice(["A", "B", "C"], n), "time": np.cumsum(rng.integers(1, 4, n)),
                             "id": ids, "x": rng.integers(0, 100, n)})


class EmitPartitionsFloat(EmitPartitions):
    """The ``unbounded`` query of :class:`EmitPartitions` with ``numeric="float64"``: its group totals
    come from a tree of sums over the partitions' current totals (``kernels/emit.py::group_totals``; a
    running sum of their changes took back infinities and lost small values), against the exact int64
    running sum of ``EmitPartitions`` in the same run."""

    QUERIES = {"unbounded": EmitPartitions.QUERIES["unbounded"]}
    NUMERIC = "float64"
    params = [list(QUERIES), [10, 10_000], ["uniform", "zipf"]]

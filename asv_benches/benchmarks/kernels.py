"""A-Seq workload: ``SEQ(A, B, C) WHERE [id] GROUP-BY id WITHIN W`` on every engine.

Every benchmark in a class runs on the same seeded data in the same asv run,
so the report gives ratios between them:

* ``time_aseq``: cepvec's default engine (``engine="auto"`` -> aseq), end to
  end from a Polars DataFrame (encoding, partitioning, kernel, output);
* ``time_reference``: the match-constructing reference engine (only at the
  sizes it finishes; bigger sizes are skipped);
* ``time_duckdb_window``: the best DuckDB SQL we could write for the same
  count: per C event, ``#A in (t - W, t) * #B before t - sum of #B up to each
  such A`` with RANGE window frames (linear time; right with equal time stamps);
* ``time_duckdb_join``: the obvious time-bounded self-join (skipped where the
  join output explodes past a few seconds);
* ``time_duckdb_bucketed``: the strongest join we could write: time buckets of
  width W make the range conditions equi-joins on (id, bucket) and
  (id, bucket + 1) that DuckDB hashes (checked against cepvec in setup);
* ``time_numpy_pass``: one vectorised NumPy pass over the same columns
  (type code -> per-id counts), the speed-of-light proxy for touching the data.

``track_aseq_events_per_s`` reports throughput (unit: events/s).
Data: ``sequence_abcd`` (types A-D uniform, time +1..3 per event, strictly
increasing), with 10 or 10,000 ids.
"""

from __future__ import annotations

import time

import numpy as np
import polars as pl

import cepvec

from . import SEED, SKIP_SLOW, make_events

SIZES = [1_000, 100_000, 1_000_000] + ([] if SKIP_SLOW else [10_000_000])
QUERY = "RETURN id, COUNT(*) PATTERN SEQ(A, B, C) WHERE [id] GROUP-BY id WITHIN {w}"

DUCKDB_WINDOW = """
WITH e AS (
  SELECT id, time, type,
         COALESCE(SUM(CASE WHEN type = 'B' THEN 1 ELSE 0 END) OVER (PARTITION BY id ORDER BY time
           RANGE BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS nb_lt,
         SUM(CASE WHEN type = 'B' THEN 1 ELSE 0 END) OVER (PARTITION BY id ORDER BY time
           RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS nb_le
  FROM ev),
w AS (
  SELECT id, type, nb_lt,
         COALESCE(SUM(CASE WHEN type = 'A' THEN 1 ELSE 0 END) OVER win, 0) AS na,
         COALESCE(SUM(CASE WHEN type = 'A' THEN nb_le ELSE 0 END) OVER win, 0) AS sa
  FROM e
  WINDOW win AS (PARTITION BY id ORDER BY time RANGE BETWEEN {w1} PRECEDING AND 1 PRECEDING))
SELECT id, SUM(na * nb_lt - sa) AS n FROM w WHERE type = 'C' GROUP BY id HAVING n > 0 ORDER BY id
"""

DUCKDB_JOIN = """
SELECT a.id, COUNT(*) AS n
FROM ev a
JOIN ev b ON b.id = a.id AND b.type = 'B' AND b.time > a.time AND b.time < a.time + {w}
JOIN ev c ON c.id = a.id AND c.type = 'C' AND c.time > b.time AND c.time < a.time + {w}
WHERE a.type = 'A'
GROUP BY a.id ORDER BY a.id
"""


# The strongest join we could write: a time bucket of width W turns each range condition into equi-joins
# on (id, bucket) and (id, bucket + 1), which DuckDB hashes; only pairs within one window span survive.
DUCKDB_BUCKETED = """
WITH e AS (SELECT id, time, type, time // {w} AS bk FROM ev),
a AS (SELECT id, time, bk FROM e WHERE type = 'A'),
b AS (SELECT id, time, bk FROM e WHERE type = 'B'),
c AS (SELECT id, time, bk FROM e WHERE type = 'C'),
ab AS (
  SELECT a.id, a.time AS ta, b.time AS tb, a.bk FROM a JOIN b ON b.id = a.id AND b.bk = a.bk
    WHERE b.time > a.time
  UNION ALL
  SELECT a.id, a.time, b.time, a.bk FROM a JOIN b ON b.id = a.id AND b.bk = a.bk + 1
    WHERE b.time < a.time + {w}),
abc AS (
  SELECT ab.id FROM ab JOIN c ON c.id = ab.id AND c.bk = ab.bk
    WHERE c.time > ab.tb
  UNION ALL
  SELECT ab.id FROM ab JOIN c ON c.id = ab.id AND c.bk = ab.bk + 1
    WHERE c.time > ab.tb AND c.time < ab.ta + {w})
SELECT id, COUNT(*) AS n FROM abc GROUP BY id ORDER BY id
"""


def _same_counts(con, sql: str, query, events) -> None:
    """Refuse a baseline SQL whose counts differ from cepvec's (checked on the benchmark's own data)."""
    got = con.execute(sql).fetchall()
    want = [tuple(r) for r in cepvec.run(query, events).select("id", "COUNT(*)").rows()]
    if got != want:
        raise AssertionError(f"baseline SQL disagrees with cepvec: {got[:3]} vs {want[:3]}")


def _events_per_s(query, events, runs: int = 5) -> float:
    """Steady-state throughput: one untimed run at full size (a process's first run also pays for the
    first touch of its large arrays' pages: about 1.7x the time at 10^6 events; cold start is
    ``coldstart.py``'s), then the median of ``runs`` timed runs."""
    import statistics

    cepvec.run(query, events)
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        cepvec.run(query, events)
        times.append(time.perf_counter() - t)
    return len(events) / statistics.median(times)


class SeqABC:
    params = [SIZES, [50, 5_000], [10, 10_000]]
    param_names = ["n_events", "window", "n_ids"]
    timeout = 600

    def setup(self, n_events, window, n_ids):
        self.events = make_events("abcd", n_events, n_ids=n_ids)
        self.query = cepvec.compile(QUERY.format(w=window))
        # compile the kernels outside the timing (asv runs each benchmark in a fresh process)
        cepvec.run(self.query, make_events("abcd", 1_000, n_ids=n_ids))

    def time_aseq(self, n_events, window, n_ids):
        cepvec.run(self.query, self.events)

    def track_aseq_events_per_s(self, n_events, window, n_ids):
        return _events_per_s(self.query, self.events)

    track_aseq_events_per_s.unit = "events/s"

    def time_numpy_pass(self, n_events, window, n_ids):
        ids = self.events["id"].to_numpy()
        is_c = (self.events["type"] == "C").to_numpy()
        np.bincount(ids[is_c], minlength=n_ids)


class SeqABCReference:
    params = [[1_000], [50, 5_000], [10, 10_000]]
    param_names = ["n_events", "window", "n_ids"]

    def setup(self, n_events, window, n_ids):
        self.events = make_events("abcd", n_events, n_ids=n_ids)
        self.query = cepvec.compile(QUERY.format(w=window))
        cepvec.run(self.query, self.events)  # load the compiled kernels outside the timing

    def time_reference(self, n_events, window, n_ids):
        cepvec.run(self.query, self.events, engine="reference")

    def time_aseq(self, n_events, window, n_ids):
        cepvec.run(self.query, self.events)


def bursty_abcd(n_events: int, n_ids: int) -> pl.DataFrame:
    """The second distribution: bursts of equal time stamps (about 2 events per stamp), skewed ids
    (Zipf, one id holds about half the events), skewed types (A 40 %, B 30 %, C 20 %, D 10 %) in a
    Categorical column."""
    rng = np.random.default_rng(SEED)
    return pl.DataFrame({
        "type": pl.Series(rng.choice(list("ABCD"), n_events, p=[0.4, 0.3, 0.2, 0.1])).cast(pl.Categorical),
        "time": np.sort(rng.integers(0, max(1, n_events // 2), n_events)),
        "id": (rng.zipf(1.5, n_events) - 1) % n_ids,
    })


DISTRIBUTIONS = {"uniform": lambda n, ids: make_events("abcd", n, n_ids=ids), "bursty": bursty_abcd}


class SeqABCTypes:
    """``time_aseq`` at 10^6 events with the type column as String, Categorical or Enum, on both
    distributions (``DISTRIBUTIONS``: the bursty one has ties, a hot id and skewed types); 10 ids,
    ``WITHIN 50``. ``track_aseq_events_per_s`` is the throughput."""

    params = [[1_000_000], ["string", "categorical", "enum"], list(DISTRIBUTIONS)]
    param_names = ["n_events", "types", "data"]
    timeout = 600

    def setup(self, n_events, types, data):
        events = DISTRIBUTIONS[data](n_events, 10)
        dtype = {"string": pl.String, "categorical": pl.Categorical, "enum": pl.Enum(list("ABCD"))}[types]
        self.events = events.with_columns(pl.col("type").cast(pl.String).cast(dtype))
        self.query = cepvec.compile(QUERY.format(w=50))
        cepvec.run(self.query, self.events[:1_000])

    def time_aseq(self, n_events, types, data):
        cepvec.run(self.query, self.events)

    def track_aseq_events_per_s(self, n_events, types, data):
        return _events_per_s(self.query, self.events)

    track_aseq_events_per_s.unit = "events/s"


def _typed_events(n_events: int, types: str, data: str) -> pl.DataFrame:
    """``DISTRIBUTIONS[data]`` with 10 ids, the type column as String or Categorical."""
    dtype = pl.Categorical if types == "categorical" else pl.String
    return DISTRIBUTIONS[data](n_events, 10).with_columns(pl.col("type").cast(pl.String).cast(dtype))


class SeqABCChain:
    """The WITHIN count of ``SEQ(A, B, C)`` at 10^6 events, 10 ids, on the chain loop
    (``kernels/linear/chain.py``: the window's map in registers; ``time_chain``) against the same
    run on the inverse loop over the map in memory it replaced (``windows._within_inverse``,
    ``time_inverse``: ``CHAIN_LOOP`` off), both distributions, String and Categorical types.
    ``track_*_one_core``: events/s with the whole process confined to one core (``threads._pin``), the
    issue's "25 M events/s on one core"; the ``time_*`` runs take every core."""

    params = [[1_000_000], ["string", "categorical"], list(DISTRIBUTIONS)]
    param_names = ["n_events", "types", "data"]
    timeout = 600

    def setup(self, n_events, types, data):
        from cepvec.kernels.linear import run as linear_run

        self.events = _typed_events(n_events, types, data)
        self.query = cepvec.compile(QUERY.format(w=50))
        self.run_module = linear_run
        self.time_chain(n_events, types, data)
        self.time_inverse(n_events, types, data)

    def time_chain(self, n_events, types, data):
        cepvec.run(self.query, self.events)

    def time_inverse(self, n_events, types, data):
        self.run_module.CHAIN_LOOP = False
        try:
            cepvec.run(self.query, self.events)
        finally:
            self.run_module.CHAIN_LOOP = True

    def _one_core(self, fn):
        import os

        from .threads import _pin

        cpus = os.sched_getaffinity(0)
        _pin({min(cpus)})
        try:
            return fn()
        finally:
            _pin(cpus)

    def track_chain_events_per_s_one_core(self, n_events, types, data):
        return self._one_core(lambda: _events_per_s(self.query, self.events))

    def track_inverse_events_per_s_one_core(self, n_events, types, data):
        self.run_module.CHAIN_LOOP = False
        try:
            return self._one_core(lambda: _events_per_s(self.query, self.events))
        finally:
            self.run_module.CHAIN_LOOP = True

    track_chain_events_per_s_one_core.unit = "events/s"
    track_inverse_events_per_s_one_core.unit = "events/s"


class SeqABCEmit:
    """``... GROUP-BY id WITHIN 50 EMIT CHANGES`` (a row per id at each END time) at 10^6 events, on
    both distributions, String and Categorical types. ``time_emit``: the count's inverse loop
    (``kernels/linear/windows.py::_emit_inverse``); ``time_emit_two_stack``: the same run on the
    two-stack queue every other EMIT CHANGES query takes (the baseline of the inverse loop);
    ``time_within``: the query without EMIT CHANGES (one row per id)."""

    params = [[1_000_000], ["string", "categorical"], list(DISTRIBUTIONS)]
    param_names = ["n_events", "types", "data"]
    timeout = 600

    def setup(self, n_events, types, data):
        from cepvec.kernels.linear import run as linear_run, windows

        self.events = _typed_events(n_events, types, data)
        self.emit = cepvec.compile(QUERY.format(w=50) + " EMIT CHANGES")
        self.within = cepvec.compile(QUERY.format(w=50))
        self.run_module, self.inverse, self.two_stack = linear_run, windows._drive_emit_inverse, windows._drive_emit
        for q in (self.emit, self.within):
            cepvec.run(q, self.events[:1_000])
        self.time_emit_two_stack(n_events, types, data)  # compiles the two-stack driver

    def time_emit(self, n_events, types, data):
        cepvec.run(self.emit, self.events)

    def time_emit_two_stack(self, n_events, types, data):
        self.run_module._drive_emit_inverse = self.two_stack
        try:
            cepvec.run(self.emit, self.events)
        finally:
            self.run_module._drive_emit_inverse = self.inverse

    def time_within(self, n_events, types, data):
        cepvec.run(self.within, self.events)


class _DuckDBData:
    params = [SIZES, [50, 2_000], [10], list(DISTRIBUTIONS)]
    param_names = ["n_events", "window", "n_ids", "data"]
    timeout = 600

    def setup(self, n_events, window, n_ids, data):
        try:
            import duckdb
        except ImportError as exc:  # benchmark-only dependency
            raise NotImplementedError("duckdb is not installed: pip install -e '.[bench]'") from exc
        self.events = DISTRIBUTIONS[data](n_events, n_ids)
        self.con = duckdb.connect()
        self.con.execute("SET enable_progress_bar = false")
        self.con.register("ev_df", self.events.to_arrow())
        self.con.execute("CREATE TABLE ev AS SELECT * FROM ev_df")
        self.query = cepvec.compile(QUERY.format(w=window))
        cepvec.run(self.query, make_events("abcd", 1_000, n_ids=n_ids))


class SeqABCDuckDB(_DuckDBData):
    def time_aseq(self, n_events, window, n_ids, data):
        cepvec.run(self.query, self.events)

    def time_duckdb_window(self, n_events, window, n_ids, data):
        self.con.execute(DUCKDB_WINDOW.format(w1=window - 1)).fetchall()


class SeqABCDuckDBBucketed(_DuckDBData):
    """The bucketed self-join (``DUCKDB_BUCKETED``), checked against cepvec on the same data first."""

    def setup(self, n_events, window, n_ids, data):
        if data == "bursty" and n_events * window > 5e8:  # the hot id's join output: 95 s at 10^6, W = 2000
            raise NotImplementedError("bucketed join output too large at this size")
        super().setup(n_events, window, n_ids, data)
        if n_events <= 100_000:
            _same_counts(self.con, DUCKDB_BUCKETED.format(w=window), self.query, self.events)
            _same_counts(self.con, DUCKDB_WINDOW.format(w1=window - 1), self.query, self.events)

    def time_aseq(self, n_events, window, n_ids, data):
        cepvec.run(self.query, self.events)

    def time_duckdb_bucketed(self, n_events, window, n_ids, data):
        self.con.execute(DUCKDB_BUCKETED.format(w=window)).fetchall()


class SeqABCDuckDBJoin(_DuckDBData):
    """The self-join is cubic in the window: sizes where it runs for minutes are skipped."""

    def setup(self, n_events, window, n_ids, data):
        # join output ~ n W^2 / 64 on uniform data; bursty data put half the events in one id (x 50)
        if n_events * (window / 8) ** 2 * (50 if data == "bursty" else 1) > 2e10:
            raise NotImplementedError("self-join output too large at this size")
        super().setup(n_events, window, n_ids, data)

    def time_duckdb_join(self, n_events, window, n_ids, data):
        self.con.execute(DUCKDB_JOIN.format(w=window)).fetchall()


class SlideManyWindows:
    """``SEQ(A, B, C) ... GROUP-BY id WITHIN 10000 SLIDE s``: each event lies in 10000 / s windows.

    ``time_slide`` against ``time_within`` (the same query under ``WITHIN 10000`` alone: no
    window rows, a cost per event independent of the window) on the same data, 10^5 events over
    10^6 time units. ``sparse``: 10 000 ids of 10 events each (most windows of an id hold no
    match; the loop once visited each of them: 5.2 s at SLIDE 1); ``dense``: 100 ids (SLIDE 1
    then writes tens of millions of rows, the output itself; SLIDE 100 shown for it).
    """

    params = [["sparse", "dense"], [1, 100]]
    param_names = ["data", "slide"]
    timeout = 300

    def setup(self, data, slide):
        if data == "dense" and slide == 1:
            raise NotImplementedError  # 4.5·10^7 output rows: the output, not the loop
        rng = np.random.default_rng(SEED)
        n = 100_000
        self.events = pl.DataFrame({"type": rng.choice(list("ABCD"), n),
                                    "time": np.sort(rng.integers(0, 1_000_000, n)),
                                    "id": rng.integers(0, 10_000 if data == "sparse" else 100, n)})
        base = "RETURN id, COUNT(*) PATTERN SEQ(A, B, C) WHERE [id] GROUP-BY id WITHIN 10000"
        self.slide = cepvec.compile(f"{base} SLIDE {slide}")
        self.within = cepvec.compile(base)
        cepvec.run(self.slide, self.events[:2000])
        cepvec.run(self.within, self.events[:2000])

    def time_slide(self, data, slide):
        cepvec.run(self.slide, self.events)

    def time_within(self, data, slide):
        cepvec.run(self.within, self.events)


AGGREGATES = {"sum_avg": "COUNT(*), SUM(B.p), AVG(C.p)", "min_max": "COUNT(*), MIN(A.p), MAX(C.p)"}

# The bucketed join of DUCKDB_BUCKETED carrying the prices of B and C: COUNT(*), SUM(b.p), AVG(c.p) per id.
DUCKDB_BUCKETED_SUMS = """
WITH e AS (SELECT id, time, type, p, time // {w} AS bk FROM ev),
a AS (SELECT id, time, bk FROM e WHERE type = 'A'),
b AS (SELECT id, time, p, bk FROM e WHERE type = 'B'),
c AS (SELECT id, time, p, bk FROM e WHERE type = 'C'),
ab AS (
  SELECT a.id, a.time AS ta, b.time AS tb, b.p AS pb, a.bk FROM a JOIN b ON b.id = a.id AND b.bk = a.bk
    WHERE b.time > a.time
  UNION ALL
  SELECT a.id, a.time, b.time, b.p, a.bk FROM a JOIN b ON b.id = a.id AND b.bk = a.bk + 1
    WHERE b.time < a.time + {w}),
abc AS (
  SELECT ab.id, ab.pb, c.p AS pc FROM ab JOIN c ON c.id = ab.id AND c.bk = ab.bk
    WHERE c.time > ab.tb
  UNION ALL
  SELECT ab.id, ab.pb, c.p FROM ab JOIN c ON c.id = ab.id AND c.bk = ab.bk + 1
    WHERE c.time > ab.tb AND c.time < ab.ta + {w})
SELECT id, COUNT(*) AS n, SUM(pb), AVG(pc) FROM abc GROUP BY id ORDER BY id
"""


def _priced(n_events: int, data: str) -> pl.DataFrame:
    """``DISTRIBUTIONS[data]`` with 10 ids and a price ``p`` per event: distinct floats."""
    rng = np.random.default_rng(SEED + 1)
    return DISTRIBUTIONS[data](n_events, 10).with_columns(p=pl.Series(rng.random(n_events) * 1000.0))


class SeqABCAggregates:
    """``SEQ(A, B, C) ... GROUP-BY id WITHIN 50`` with sums and averages or MIN / MAX of a float price
    beside the count, 10^6 events, both distributions. Such a query runs in two streams (exact counts
    and float sums, or the order keys), each keeping only the rows of the state its own components
    reach (``paths/linear/run.py::_stream_rows``), and the count stream takes the non-null counts of a
    null-free column from the count (``LinearStream._count_dense``). Baselines in the same run:
    ``time_every_row``, the same run with every stream keeping every row of the plan and computing its
    non-null counts (as before both); ``time_count``, the query
    with ``COUNT(*)`` alone (what the aggregates cost); ``time_duckdb_bucketed`` (``sum_avg``), the
    bucketed self-join of ``SeqABCDuckDBBucketed`` carrying the prices, checked against cepvec first."""

    params = [[1_000_000], list(AGGREGATES), list(DISTRIBUTIONS)]
    param_names = ["n_events", "aggregates", "data"]
    timeout = 600

    def setup(self, n_events, aggregates, data):
        from cepvec.paths.linear import run as linear_run

        self.events = _priced(n_events, data)
        self.query = cepvec.compile(f"RETURN id, {AGGREGATES[aggregates]} PATTERN SEQ(A, B, C) WHERE [id] "
                                    "GROUP-BY id WITHIN 50")
        self.count = cepvec.compile(QUERY.format(w=50))
        self.run_module, self.stream_rows = linear_run, linear_run._stream_rows
        for q in (self.query, self.count):
            cepvec.run(q, self.events[:1_000])
        self.time_every_row(n_events, aggregates, data)

    def time_run(self, n_events, aggregates, data):
        cepvec.run(self.query, self.events)

    def time_every_row(self, n_events, aggregates, data):
        def every_row(plan, zero_components):
            return np.arange(plan.D, dtype=np.int64), plan.D, plan.v0, plan.out_rows

        stream = self.run_module.LinearStream
        count_dense = stream._count_dense
        self.run_module._stream_rows = every_row
        stream._count_dense = lambda self, df: None
        try:
            cepvec.run(self.query, self.events)
        finally:
            self.run_module._stream_rows = self.stream_rows
            stream._count_dense = count_dense

    def time_count(self, n_events, aggregates, data):
        cepvec.run(self.count, self.events)


class SeqABCAggregatesDuckDB:
    """``SeqABCAggregates``' ``sum_avg`` query against the bucketed DuckDB self-join that carries the
    prices (``DUCKDB_BUCKETED_SUMS``), both distributions; the join's rows are checked against cepvec's
    on the benchmark's first 10^5 events."""

    params = [[1_000_000], list(DISTRIBUTIONS)]
    param_names = ["n_events", "data"]
    timeout = 600

    def setup(self, n_events, data):
        try:
            import duckdb
        except ImportError as exc:  # benchmark-only dependency
            raise NotImplementedError("duckdb is not installed: pip install -e '.[bench]'") from exc
        self.events = _priced(n_events, data)
        self.query = cepvec.compile(f"RETURN id, {AGGREGATES['sum_avg']} PATTERN SEQ(A, B, C) WHERE [id] "
                                    "GROUP-BY id WITHIN 50")
        self.con = duckdb.connect()
        self.con.execute("SET enable_progress_bar = false")
        small = self.events[:100_000]
        self.con.register("ev", small.to_arrow())
        got = self.con.execute(DUCKDB_BUCKETED_SUMS.format(w=50)).fetchall()
        want = cepvec.run(self.query, small).rows()
        if len(got) != len(want) or any(g[0] != w[0] or g[1] != w[1] or not np.allclose(g[2:], w[2:], rtol=1e-9)
                                         for g, w in zip(got, want)):
            raise AssertionError(f"baseline SQL disagrees with cepvec: {got[:2]} vs {want[:2]}")
        self.con.unregister("ev")
        self.con.register("ev_df", self.events.to_arrow())
        self.con.execute("CREATE TABLE ev AS SELECT * FROM ev_df")

    def time_aseq(self, n_events, data):
        cepvec.run(self.query, self.events)

    def time_duckdb_bucketed(self, n_events, data):
        self.con.execute(DUCKDB_BUCKETED_SUMS.format(w=50)).fetchall()


#: integer sums beside the count, one query per window mode
INT_SUMS = {"within": "WITHIN 50", "slide": "WITHIN 50 SLIDE 10", "emit": "WITHIN 50 EMIT CHANGES"}


class SeqABCIntSums:
    """``COUNT(*), SUM(B.q), AVG(C.q)`` of an integer column ``q`` (0-9 999) under each window mode
    (``INT_SUMS``), 10^6 events, both distributions. With every weight >= 0 a sum step is undone exactly
    by its inverse, so these streams keep the window's map (``windows._within_inverse`` and its SLIDE and
    EMIT CHANGES twins) instead of the two-stack queue. Baseline in the same run: ``time_two_stack``,
    the same run on the two-stack queue (what a negative weight in the batch gives, and every integer
    sum before)."""

    params = [[1_000_000], list(INT_SUMS), list(DISTRIBUTIONS)]
    param_names = ["n_events", "window", "data"]
    timeout = 600

    def setup(self, n_events, window, data):
        from cepvec.kernels.linear import run as kernel_run

        rng = np.random.default_rng(SEED + 2)
        self.events = DISTRIBUTIONS[data](n_events, 10).with_columns(q=pl.Series(rng.integers(0, 10_000, n_events)))
        self.query = cepvec.compile(f"RETURN id, COUNT(*), SUM(B.q), AVG(C.q) PATTERN SEQ(A, B, C) WHERE [id] "
                                    f"GROUP-BY id {INT_SUMS[window]}")
        self.kernel_run, self.nonnegative = kernel_run, kernel_run._weights_nonnegative
        cepvec.run(self.query, self.events[:1_000])
        self.time_two_stack(n_events, window, data)

    def time_run(self, n_events, window, data):
        cepvec.run(self.query, self.events)

    def time_two_stack(self, n_events, window, data):
        self.kernel_run._weights_nonnegative = lambda *a: False
        try:
            cepvec.run(self.query, self.events)
        finally:
            self.kernel_run._weights_nonnegative = self.nonnegative

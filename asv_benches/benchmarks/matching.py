"""The match engine (``cepvec.matches``): SEQ(A, B, C) and SASE+'s stock template, with baselines in the same run.

* ``SeqABCMatches``: ``SEQ(A, B, C) WHERE [id] WITHIN W`` over 10^6 events,
  output dominated (several match rows per event):
  ``time_match_engine`` (every match written in long format, frame by frame
  through ``cepvec.iter_matches``), ``time_duckdb_join`` (the time-bounded
  three-way self-join producing the same matches, one row per match with
  the three events' columns, fetched as Arrow, with time buckets that make
  DuckDB hash the range joins; checked against cepvec's match count in
  setup), ``peakmem_match_engine``, and
  ``track_events_per_s`` / ``track_rows_per_s``.
* ``StockMatches``: SASE+ Section 6's template
  ``SEQ(Stock+ a[], Stock b) WHERE <strategy> {[company] AND a[1].price % 500 = 0
  AND a[i].price > a[i-1].price AND b.volume < 150} WITHIN W`` under
  partition contiguity and skip till next match, W of about 500 and 2 000
  events per partition.
* ``MatchReference``: both queries at 2 000 events, match engine against the
  reference engine (exponential; it cannot run the 10^6 inputs).
* ``StockAvgRuns``: SASE+ Query 3's shape, the same template with the run
  predicate ``a[i].price > avg(a[..i-1].price)`` instead of ``a[i-1]``: the
  run-based executor (``kernels/runs.py``), 10^6 events, W = 50 000, both
  price distributions; ``StockAvgReference``: the same at 2 000 events
  against the reference engine, in the same run.

Two distributions each: ``uniform`` (uniform ids, types, gaps) and
``bursty`` (about 4 events per time stamp, skewed types); for stocks, ``walk`` (per-company
random walk of integer prices) and ``jumpy`` (independent uniform prices,
Zipf companies).
"""

from __future__ import annotations

import time

import numpy as np
import polars as pl

import cepvec

from . import SEED, make_events

N = 1_000_000
SEQ = "RETURN COUNT(*) PATTERN SEQ(A, B, C) WHERE [id] WITHIN {w}"
STOCK = ("RETURN COUNT(*) PATTERN SEQ(Stock+ a[], Stock b) WHERE {strategy}(a[], b) {{ [company] AND "
         "a[1].price % 500 = 0 AND a[i].price > a[i-1].price AND b.volume < 150 }} WITHIN {w}")
STOCK_AVG = ("RETURN COUNT(*) PATTERN SEQ(Stock+ a[], Stock b) WHERE {strategy}(a[], b) {{ [company] AND "
             "a[1].price % 500 = 0 AND a[i].price > avg(a[..i-1].price) AND b.volume < 150 }} WITHIN {w}")
N_IDS = 1_000
N_COMPANIES = 100

# The three-way self-join producing the same matches, one row per match with the three events'
# columns. A plain join on id with range conditions compares every pair of an id's events (10^9
# pairs here); time buckets of width W make the range conditions equi-joins on (id, bucket) and
# (id, bucket + 1) that DuckDB hashes, the strongest form we could write (as in kernels.py).
DUCKDB_JOIN = """
WITH e AS (SELECT id, time, type, x, time // {w} AS bk FROM ev),
a AS (SELECT * FROM e WHERE type = 'A'), b AS (SELECT * FROM e WHERE type = 'B'),
c AS (SELECT * FROM e WHERE type = 'C'),
ab AS (
  SELECT a.id, a.time AS a_time, a.x AS a_x, a.bk, b.time AS b_time, b.x AS b_x
  FROM a JOIN b ON b.id = a.id AND b.bk = a.bk WHERE b.time > a.time
  UNION ALL
  SELECT a.id, a.time, a.x, a.bk, b.time, b.x
  FROM a JOIN b ON b.id = a.id AND b.bk = a.bk + 1 WHERE b.time < a.time + {w})
SELECT ab.id, a_time, a_x, b_time, b_x, c.time AS c_time, c.x AS c_x
FROM ab JOIN c ON c.id = ab.id AND c.bk = ab.bk WHERE c.time > ab.b_time
UNION ALL
SELECT ab.id, a_time, a_x, b_time, b_x, c.time, c.x
FROM ab JOIN c ON c.id = ab.id AND c.bk = ab.bk + 1 WHERE c.time > ab.b_time AND c.time < ab.a_time + {w}
"""


def seq_events(data: str, n: int) -> pl.DataFrame:
    """``uniform``: types A-C uniform, ids uniform, time +1..3 per event (span about 2n).
    ``bursty``: about 4 events per time stamp (span n / 4), skewed types (A 50 %, B 30 %, C 20 %),
    uniform ids; its windows are scaled by the span (:func:`seq_window`) so both hold as many events."""
    if data == "uniform":
        return make_events("abcd", n, n_ids=N_IDS, types="ABC")
    rng = np.random.default_rng(SEED)
    return pl.DataFrame({"type": rng.choice(np.array(list("ABC")), n, p=[0.5, 0.3, 0.2]),
                         "time": np.sort(rng.integers(0, max(1, n // 4), n)),
                         "id": rng.integers(0, N_IDS, n), "x": rng.integers(0, 100, n)})


def seq_window(window: int, data: str) -> int:
    """The WITHIN of ``window`` (a window of the uniform data) over ``data``: the same events per window."""
    return window if data == "uniform" else max(1, window // 8)


def stock_events(data: str, n: int) -> pl.DataFrame:
    """Integer prices in cents; time = event index (so W counts events), 100 companies."""
    rng = np.random.default_rng(SEED)
    if data == "walk":
        company = rng.integers(0, N_COMPANIES, n)
        price = 100_000 + np.cumsum(rng.integers(-100, 101, n))  # one walk, sampled by every company
    else:
        company = (rng.zipf(1.5, n) - 1) % N_COMPANIES
        price = rng.integers(1, 200_000, n)
    return pl.DataFrame({"type": ["Stock"] * n, "time": np.arange(n, dtype=np.int64), "company": company,
                         "price": price.astype(np.int64), "volume": rng.integers(0, 1_000, n)})


def consume(query, events) -> int:
    """Every match, frame by frame (memory: one frame); returns the rows written."""
    return sum(f.height for f in cepvec.iter_matches(query, events, limit=None))


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


class SeqABCMatches:
    # W in time units; times rise by 2 per event on average and 1 000 ids share them, so W = 40 000
    # holds about 20 events per id and window (about 7 of each type)
    params = [[10_000, 40_000], ["uniform", "bursty"]]
    param_names = ["window", "data"]
    timeout = 900

    def setup(self, window, data):
        self.events = seq_events(data, N)
        self.query = cepvec.compile(SEQ.format(w=seq_window(window, data)))
        consume(self.query, self.events.head(2_000))  # compile / load the kernels

    def time_match_engine(self, window, data):
        consume(self.query, self.events)

    def peakmem_match_engine(self, window, data):
        consume(self.query, self.events)

    def track_events_per_s(self, window, data):
        return N / _timed(lambda: consume(self.query, self.events))

    track_events_per_s.unit = "events/s"

    def track_rows_per_s(self, window, data):
        rows = [0]
        t = _timed(lambda: rows.__setitem__(0, consume(self.query, self.events)))
        return rows[0] / t

    track_rows_per_s.unit = "rows/s"


class SeqABCDuckDBJoin:
    params = SeqABCMatches.params
    param_names = SeqABCMatches.param_names
    timeout = 900

    def setup(self, window, data):
        try:
            import duckdb
        except ImportError as exc:  # benchmark-only dependency
            raise NotImplementedError("duckdb is not installed: pip install -e '.[bench]'") from exc
        events = seq_events(data, N)
        self.con = duckdb.connect()
        self.con.register("ev", events.to_arrow())
        self.sql = DUCKDB_JOIN.format(w=seq_window(window, data))
        n = self.con.sql(f"SELECT COUNT(*) FROM ({self.sql})").fetchall()[0][0]
        want = cepvec.run(SEQ.format(w=seq_window(window, data)), events)["COUNT(*)"][0]
        if n != want:
            raise AssertionError(f"the self-join finds {n} matches, cepvec {want}")

    def time_duckdb_join(self, window, data):
        self.con.sql(self.sql).to_arrow_table()

    def peakmem_duckdb_join(self, window, data):
        self.con.sql(self.sql).to_arrow_table()


class StockMatches:
    # W in events (time = index): 100 companies, so W = 50 000 and 200 000 hold about 500 and 2 000
    # events per company and window
    params = [["partition_contiguity", "skip_till_next_match"], [50_000, 200_000], ["walk", "jumpy"]]
    param_names = ["strategy", "window", "data"]
    timeout = 900

    def setup(self, strategy, window, data):
        self.events = stock_events(data, N)
        self.query = cepvec.compile(STOCK.format(strategy=strategy, w=window))
        consume(self.query, self.events.head(2_000))

    def time_match_engine(self, strategy, window, data):
        consume(self.query, self.events)

    def peakmem_match_engine(self, strategy, window, data):
        consume(self.query, self.events)

    def track_events_per_s(self, strategy, window, data):
        return N / _timed(lambda: consume(self.query, self.events))

    track_events_per_s.unit = "events/s"

    def track_rows_per_s(self, strategy, window, data):
        rows = [0]
        t = _timed(lambda: rows.__setitem__(0, consume(self.query, self.events)))
        return rows[0] / t

    track_rows_per_s.unit = "rows/s"


class MatchReference:
    """Small inputs, where the reference engine finishes: the same listing from both engines."""

    params = [["seq", "stock_next"]]
    param_names = ["query"]
    timeout = 900

    def setup(self, query):
        if query == "seq":
            self.events = seq_events("uniform", 2_000).with_columns(pl.col("id") % 10)
            self.query = cepvec.compile(SEQ.format(w=400))
        else:
            self.events = stock_events("walk", 2_000).with_columns(pl.col("company") % 5)
            self.query = cepvec.compile(STOCK.format(strategy="skip_till_next_match", w=400))
        consume(self.query, self.events)

    def time_match_engine(self, query):
        cepvec.matches(self.query, self.events, limit=None)

    def time_reference(self, query):
        cepvec.matches(self.query, self.events, limit=None, engine="reference")


class StockAvgRuns:
    """SASE+ Query 3's shape (``avg(a[..i-1].price)``): the run-based executor over 10^6 events."""

    params = [["partition_contiguity", "skip_till_next_match"], ["walk", "jumpy"]]
    param_names = ["strategy", "data"]
    timeout = 900

    def setup(self, strategy, data):
        self.events = stock_events(data, N)
        self.query = cepvec.compile(STOCK_AVG.format(strategy=strategy, w=50_000))
        consume(self.query, self.events.head(2_000))

    def time_match_engine(self, strategy, data):
        consume(self.query, self.events)

    def track_events_per_s(self, strategy, data):
        return N / _timed(lambda: consume(self.query, self.events))

    track_events_per_s.unit = "events/s"


class StockAvgReference:
    """The same query at 2 000 events (5 companies, W = 400), against the reference engine."""

    params = [["partition_contiguity", "skip_till_next_match"], ["walk", "jumpy"]]
    param_names = ["strategy", "data"]
    timeout = 900

    def setup(self, strategy, data):
        self.events = stock_events(data, 2_000).with_columns(pl.col("company") % 5)
        self.query = cepvec.compile(STOCK_AVG.format(strategy=strategy, w=400))
        got = cepvec.matches(self.query, self.events, limit=None)
        want = cepvec.matches(self.query, self.events, limit=None, engine="reference")
        if got.height != want.height:
            raise ValueError(f"match engine {got.height} rows, reference engine {want.height}")

    def time_match_engine(self, strategy, data):
        cepvec.matches(self.query, self.events, limit=None)

    def time_reference(self, strategy, data):
        cepvec.matches(self.query, self.events, limit=None, engine="reference")

"""A-Seq workload: ``SEQ(A, B, C) WHERE [id] GROUP-BY id WITHIN W`` on every engine.

Every benchmark in a class runs on the same seeded data in the same asv run,
so the report gives ratios between them:

* ``time_aseq``: cepvec's default engine (``engine="auto"`` -> aseq), end to
  end from a Polars DataFrame (encoding, partitioning, kernel, output);
* ``time_reference``: the match-constructing reference engine (only at the
  sizes it finishes; bigger sizes are skipped);
* ``time_duckdb_window``: the best DuckDB SQL we could write for the same
  count: per C event, ``#A in (t - W, t) * #B before t - sum of #B before each
  such A`` with RANGE window frames (linear time);
* ``time_duckdb_join``: the obvious time-bounded self-join (skipped where the
  join output explodes past a few seconds);
* ``time_numpy_pass``: one vectorised NumPy pass over the same columns
  (type code -> per-id counts), the speed-of-light proxy for touching the data.

``track_aseq_events_per_s`` reports throughput (unit: events/s).
Data: ``sequence_abcd`` (types A-D uniform, time +1..3 per event, strictly
increasing), with 10 or 10,000 ids.
"""

from __future__ import annotations

import time

import numpy as np

import cepvec

from . import SKIP_SLOW, make_events

SIZES = [1_000, 100_000, 1_000_000] + ([] if SKIP_SLOW else [10_000_000])
QUERY = "RETURN id, COUNT(*) PATTERN SEQ(A, B, C) WHERE [id] GROUP-BY id WITHIN {w}"

DUCKDB_WINDOW = """
WITH e AS (
  SELECT id, time, type,
         SUM(CASE WHEN type = 'B' THEN 1 ELSE 0 END)
           OVER (PARTITION BY id ORDER BY time ROWS UNBOUNDED PRECEDING) AS nb
  FROM ev),
w AS (
  SELECT id, type, nb,
         SUM(CASE WHEN type = 'A' THEN 1 ELSE 0 END) OVER win AS na,
         SUM(CASE WHEN type = 'A' THEN nb ELSE 0 END) OVER win AS sa
  FROM e
  WINDOW win AS (PARTITION BY id ORDER BY time RANGE BETWEEN {w1} PRECEDING AND 1 PRECEDING))
SELECT id, SUM(na * nb - sa) AS n FROM w WHERE type = 'C' GROUP BY id ORDER BY id
"""

DUCKDB_JOIN = """
SELECT a.id, COUNT(*) AS n
FROM ev a
JOIN ev b ON b.id = a.id AND b.type = 'B' AND b.time > a.time AND b.time < a.time + {w}
JOIN ev c ON c.id = a.id AND c.type = 'C' AND c.time > b.time AND c.time < a.time + {w}
WHERE a.type = 'A'
GROUP BY a.id ORDER BY a.id
"""


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
        t = time.perf_counter()
        cepvec.run(self.query, self.events)
        return n_events / (time.perf_counter() - t)

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


class _DuckDBData:
    params = [SIZES, [50, 2_000], [10]]
    param_names = ["n_events", "window", "n_ids"]
    timeout = 600

    def setup(self, n_events, window, n_ids):
        try:
            import duckdb
        except ImportError as exc:  # benchmark-only dependency
            raise NotImplementedError("duckdb is not installed: pip install -e '.[bench]'") from exc
        self.events = make_events("abcd", n_events, n_ids=n_ids)
        self.con = duckdb.connect()
        self.con.register("ev_df", self.events.to_arrow())
        self.con.execute("CREATE TABLE ev AS SELECT * FROM ev_df")
        self.query = cepvec.compile(QUERY.format(w=window))
        cepvec.run(self.query, make_events("abcd", 1_000, n_ids=n_ids))


class SeqABCDuckDB(_DuckDBData):
    def time_aseq(self, n_events, window, n_ids):
        cepvec.run(self.query, self.events)

    def time_duckdb_window(self, n_events, window, n_ids):
        self.con.execute(DUCKDB_WINDOW.format(w1=window - 1)).fetchall()


class SeqABCDuckDBJoin(_DuckDBData):
    """The self-join is cubic in the window: sizes where it runs for minutes are skipped."""

    def setup(self, n_events, window, n_ids):
        if n_events * (window / 8) ** 2 > 2e10:
            raise NotImplementedError("self-join output too large at this size")
        super().setup(n_events, window, n_ids)

    def time_duckdb_join(self, n_events, window, n_ids):
        self.con.execute(DUCKDB_JOIN.format(w=window)).fetchall()

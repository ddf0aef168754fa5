"""GROUP-BY keys of every dtype: partition ids must not depend on how users spell their keys.

One query per path (A-Seq ``SEQ(A, B, C)`` and the Fenwick trend path), 10^6 events with
ties, 100, 10 000 or 500 000 groups (the last: two events per group on average, where the
cost per partition shows), the same groups spelled as

* ``int``: small int64 ids (0 .. groups - 1), a direct table;
* ``spread``: int64 ids ``k << 44`` (packed ids; keys differing only in high bits once fell
  into one slot of the hash table: 3.2 s instead of 60 ms at 10 000 groups);
* ``float``: float64 ids ``k * 1.37`` (distinct floats), their bit patterns;
* ``string``: ``"user<k>"``, 64-bit hashes checked for collisions;
* ``categorical``: the strings as ``pl.Categorical``, their physical ids;
* ``int_nulls``: the int64 ids with a tenth of the rows null (one more group), null coded as
  one below the smallest id (it took the Polars join of every row before: 49 ms against 26 ms
  for A-Seq at 100 groups);
* ``scrambled``: int64 ids ``k * 0x9E3779B97F4A7C15`` (ids scrambled by the multiplier of
  Fibonacci hashing: one product's top bits put them in runs of hash slots, 10^5 such keys took
  47 ms against 10 ms for random ones before the slot's second round);
* ``long_string``: ``"customer-account-<k>"`` zero-padded to 29 bytes, past the 12 bytes kept
  inline in an Arrow view: hashed, then compared with the bytes of their id's first row.

Baseline in the same run: ``time_polars_group_by``, Polars' own hash group-by counting the
rows of each key (the cost of partitioning alone, by a columnar engine; cepvec does it and
the aggregation). The ratio of interest is each spelling against ``int`` and against this.
"""

from __future__ import annotations

import numpy as np
import polars as pl

import cepvec

QUERIES = {
    "aseq": "RETURN id, COUNT(*) PATTERN SEQ(A, B, C) WHERE [id] GROUP-BY id WITHIN 50",
    "trend": "RETURN id, COUNT(*) PATTERN A+ WHERE [id] AND A.x < NEXT(A).x GROUP-BY id WITHIN 400 SLIDE 200",
}
N = 1_000_000


def events(n_groups: int, key: str, types: str) -> pl.DataFrame:
    rng = np.random.default_rng(0)
    k = rng.integers(0, n_groups, N)
    df = pl.DataFrame({
        "type": np.array(list(types))[rng.integers(0, len(types), N)],
        "time": np.sort(rng.integers(0, N // 2, N)),
        "x": rng.random(N),
    })
    if key == "int":
        ids = pl.Series("id", k)
    elif key == "int_nulls":
        ids = pl.Series("id", k).scatter(np.flatnonzero(rng.random(N) < 0.1), None)
    elif key == "spread":
        ids = pl.Series("id", k << 44)
    elif key == "scrambled":
        ids = pl.Series("id", (k.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)).view(np.int64))
    elif key == "long_string":
        ids = pl.Series("id", np.array([f"customer-account-{i:012d}" for i in range(n_groups)])[k])
    elif key == "float":
        ids = pl.Series("id", k * 1.37)
    else:
        ids = pl.Series("id", np.array([f"user{i}" for i in range(n_groups)])[k])
        if key == "categorical":
            ids = ids.cast(pl.Categorical)
    return df.with_columns(ids)


class KeyDtypes:
    params = [list(QUERIES), [100, 10_000, 500_000],
              ["int", "int_nulls", "spread", "scrambled", "float", "string", "long_string", "categorical"]]
    param_names = ["path", "n_groups", "key"]
    timeout = 600

    def setup(self, path, n_groups, key):
        self.query = cepvec.compile(QUERIES[path])
        self.events = events(n_groups, key, "ABCD" if path == "aseq" else "A")
        cepvec.run(self.query, self.events[:20_000])  # compile / load the kernels

    def time_run(self, path, n_groups, key):
        cepvec.run(self.query, self.events)

    def time_polars_group_by(self, path, n_groups, key):
        self.events.group_by("id").len()


class UnsortedTimes:
    """Unsorted input: ``cepvec.run`` sorts the events by time (stable) before the A-Seq query.

    10^6 events, 10 000 ids, their rows ``shuffled`` (random order) or ``nearly`` sorted (1 000
    adjacent pairs swapped), times in ``seconds`` (a span of 5·10^5: two radix passes) or
    ``nanoseconds`` (a day from 2023: five passes). Same run: ``time_run_sorted`` (the same
    events already in time order: the query without the sort), ``time_polars_sort`` (Polars'
    stable sort of the frame by time, the strongest sort at hand) and ``time_order`` (cepvec's
    stable order of the times alone, ``runtime/prepare.py::time_order``).
    """

    params = [["shuffled", "nearly"], ["seconds", "nanoseconds"]]
    param_names = ["order", "unit"]
    timeout = 600

    def setup(self, order, unit):
        rng = np.random.default_rng(0)
        n = N
        t = np.sort(rng.integers(0, n // 2, n))
        if unit == "nanoseconds":
            t = 1_672_531_200 * 10**9 + np.sort(rng.integers(0, 86_400 * 10**9, n))
        self.sorted = pl.DataFrame({"type": np.array(list("ABCD"))[rng.integers(0, 4, n)], "time": t,
                                    "id": rng.integers(0, 10_000, n)})
        if order == "shuffled":
            idx = rng.permutation(n)
        else:
            idx = np.arange(n)
            i = rng.choice(n - 1, 1000, replace=False)
            idx[i], idx[i + 1] = idx[i + 1], idx[i]
        self.events = self.sorted[idx]
        self.times = self.events["time"].to_numpy()
        w = "50" if unit == "seconds" else "50000000000"
        self.query = cepvec.compile(f"RETURN id, COUNT(*) PATTERN SEQ(A, B, C) WHERE [id] GROUP-BY id WITHIN {w}")
        cepvec.run(self.query, self.events[:20_000])  # compile / load the kernels
        cepvec.run(self.query, self.events[:20_000].reverse())

    def time_run(self, order, unit):
        cepvec.run(self.query, self.events, time_unit="ns" if unit == "nanoseconds" else None)

    def time_run_sorted(self, order, unit):
        cepvec.run(self.query, self.sorted, time_unit="ns" if unit == "nanoseconds" else None)

    def time_polars_sort(self, order, unit):
        self.events.sort("time", maintain_order=True)

    def time_order(self, order, unit):
        from cepvec.runtime.prepare import time_order

        time_order(self.times)


class SortedCheck:
    """Whether the times are sorted, before every local run (``runtime/prepare.py::is_sorted``:
    ``kernels/keys.py::first_descent`` on two halves in threads). 10^6 times: ``ties`` (about two
    events a time stamp), ``distinct`` (strictly increasing nanoseconds) and ``last`` (sorted but
    the last time, so every block is read). Baseline in the same run: Polars' ``Series.is_sorted``
    (``time_polars_is_sorted``), what ``prepare`` called before."""

    params = [["ties", "distinct", "last"]]
    param_names = ["times"]

    def setup(self, times):
        from cepvec.runtime.prepare import is_sorted

        rng = np.random.default_rng(0)
        if times == "distinct":
            t = 1_672_531_200 * 10**9 + np.cumsum(rng.integers(1, 10**6, N))
        else:
            t = np.sort(rng.integers(0, N // 2, N))
        if times == "last":
            t[-1] = t[0] - 1
        self.times = pl.Series("time", t)
        self.is_sorted = is_sorted
        assert self.is_sorted(self.times) == (times != "last")  # (compiles the kernel)

    def time_is_sorted(self, times):
        self.is_sorted(self.times)

    def time_polars_is_sorted(self, times):
        self.times.is_sorted()

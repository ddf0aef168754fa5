"""Scaling probe over data shapes: a benchmark script, not an asv suite.

Run it from the repository root::

    python asv_benches/shapes_probe.py                 # every query, every shape, 10^5 and 10^6 events
    python asv_benches/shapes_probe.py aseq sum_avg    # some queries

Each query (``QUERIES``) runs on each data shape (``SHAPES``: the group key, the
time column and the attribute ``x`` drawn in different ways) at 10^5 and then
10^6 events, after a run on 10^4 events of the same shape (its kernels
compiled). It prints both times and their ratio, marking a ratio above 15 (the
issue's bound for 10x the events) or a 10^6 run over 2 s. A shape's first run
at a size may still compile a specialisation the 10^4 run did not need (the
partition ids of 2^14 rows or more, two threads from 2^21): rerun a marked
cell alone before reading it as a cliff. A Kleene count without a window
overflows int64 on most shapes: such a cell prints the error (the contract).

It is a script because the matrix (10 queries x 10 shapes x 2 sizes) would
take an asv run an hour; the asv suite keeps the shapes that matter per path
(``benchmarks/``: two distributions each).
"""

from __future__ import annotations

import sys
import time
import warnings

import numpy as np
import polars as pl

import cepvec

QUERIES = {
    "aseq": "RETURN id, COUNT(*) PATTERN SEQ(A, B, C) WHERE [id] GROUP-BY id WITHIN 50",
    "aseq_slide": "RETURN id, COUNT(*) PATTERN SEQ(A, B, C) WHERE [id] GROUP-BY id WITHIN 50 SLIDE 10",
    "aseq_emit": "RETURN id, COUNT(*) PATTERN SEQ(A, B, C) WHERE [id] GROUP-BY id WITHIN 50 EMIT CHANGES",
    "negation": "RETURN id, COUNT(*) PATTERN SEQ(A, NOT D, B) WHERE [id] GROUP-BY id WITHIN 50",
    "sum_avg": "RETURN id, COUNT(*), SUM(B.x), AVG(C.x) PATTERN SEQ(A, B, C) WHERE [id] GROUP-BY id WITHIN 50",
    "min_max": "RETURN id, MIN(A.x), MAX(C.x) PATTERN SEQ(A, B, C) WHERE [id] GROUP-BY id WITHIN 100 SLIDE 50",
    "trend": "RETURN COUNT(*) PATTERN A+ WHERE A.x > NEXT(A).x",
    "trend_grouped": "RETURN id, COUNT(*) PATTERN A+ WHERE [id] AND A.x < NEXT(A).x GROUP-BY id WITHIN 400 SLIDE 200",
    "scan": "RETURN id, COUNT(*) PATTERN A+ WHERE [id] AND A.x + NEXT(A).x != 3 GROUP-BY id WITHIN 20",
    "kleene_seq": "RETURN id, COUNT(*), SUM(B.x) PATTERN SEQ(A, B+, C) WHERE [id] AND B.x < NEXT(B).x "
                  "GROUP-BY id WITHIN 100 SLIDE 50",
}
#: (group key, time column, x): see :func:`events`
SHAPES = [("10", "ties", "distinct"), ("distinct", "rising", "distinct"), ("100k_strings", "ties", "few"),
          ("floats", "sparse", "nan"), ("one", "ties", "distinct"), ("nulls", "ties", "nulls"),
          ("categorical", "rising", "few"), ("10", "one_stamp", "distinct"), ("one", "rising", "rising"),
          ("one", "rising", "falling")]


def events(n: int, key: str, time_: str, x: str, types: str) -> pl.DataFrame:
    """``n`` events of ``types`` (uniform), a group key ``id``, a time and an attribute ``x``:

    * key: ``10`` ints, ``distinct`` ints (one event per key), ``100k_strings``, ``floats`` (mostly
      distinct), ``one`` key, ``nulls`` (100 ints, 5 % null), ``categorical`` (1 000 categories);
    * time: ``ties`` (about 50 events per stamp), ``rising`` (one event per stamp), ``sparse``
      (gaps of about 100), ``one_stamp`` (every event at time 0);
    * x: ``distinct`` floats, ``few`` values (0..4), ``nan`` (20 % NaN), ``nulls`` (20 % null),
      ``rising`` / ``falling`` (monotone).
    """
    rng = np.random.default_rng(1)
    ids = {"10": lambda: pl.Series("id", rng.integers(0, 10, n)),
           "distinct": lambda: pl.Series("id", rng.permutation(n)),
           "100k_strings": lambda: pl.Series("id", rng.integers(0, 100_000, n)).cast(pl.String),
           "floats": lambda: pl.Series("id", rng.random(n) * 1e6 // 1 / 7),
           "one": lambda: pl.Series("id", np.zeros(n, np.int64)),
           "nulls": lambda: pl.Series("id", rng.integers(0, 100, n)).set(pl.Series(rng.random(n) < 0.05), None),
           "categorical": lambda: pl.Series("id", rng.integers(0, 1000, n)).cast(pl.String).cast(pl.Categorical)}
    times = {"ties": lambda: np.sort(rng.integers(0, n // 50, n)), "rising": lambda: np.arange(n),
             "sparse": lambda: np.sort(rng.integers(0, n * 100, n)), "one_stamp": lambda: np.zeros(n, np.int64)}
    xs = {"distinct": lambda: pl.Series("x", rng.random(n) * 1000),
          "few": lambda: pl.Series("x", rng.integers(0, 5, n).astype(float)),
          "nan": lambda: pl.Series("x", np.where(rng.random(n) < 0.2, np.nan, rng.random(n))),
          "nulls": lambda: pl.Series("x", rng.random(n)).set(pl.Series(rng.random(n) < 0.2), None),
          "rising": lambda: pl.Series("x", np.arange(n, dtype=float)),
          "falling": lambda: pl.Series("x", -np.arange(n, dtype=float))}
    kind = pl.Series("type", np.array(list(types))[rng.integers(0, len(types), n)])
    return pl.DataFrame([kind, pl.Series("time", times[time_]()), ids[key](), xs[x]()])


def main(names: list[str]) -> None:
    warnings.simplefilter("ignore")
    for name in names or list(QUERIES):
        q = cepvec.compile(QUERIES[name])
        types = "A" if q.event_types == ("A",) else "ABCD"
        for shape in SHAPES:
            label = f"{name:14s} {'/'.join(shape):30s}"
            try:
                cepvec.run(q, events(10_000, *shape, types))
                ts = []
                for n in (100_000, 1_000_000):
                    ev = events(n, *shape, types)
                    t0 = time.perf_counter()
                    cepvec.run(q, ev)
                    ts.append(time.perf_counter() - t0)
                ratio = ts[1] / ts[0]
                mark = "  <<<" if ratio > 15 or ts[1] > 2 else ""
                print(f"{label} {ts[0] * 1e3:8.1f} {ts[1] * 1e3:8.1f} ms  x{ratio:5.1f}{mark}", flush=True)
            except cepvec.CepvecError as e:
                print(f"{label} {type(e).__name__}: {str(e)[:100]}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])

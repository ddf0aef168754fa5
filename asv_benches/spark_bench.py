"""cepvec on Spark against Spark's own costs: a benchmark script, not an asv suite.

Run it from the repository root::

    python asv_benches/spark_bench.py                   # n = 10**6, local[1] and local[2]
    python asv_benches/spark_bench.py --big             # also n = 10**7
    python asv_benches/spark_bench.py --sizes 100000    # quick check
    python asv_benches/spark_bench.py --join-max 100000 # self-join only up to 10**5 events

Why a script and not ``asv_benches/benchmarks/spark.py``
--------------------------------------------------------
asv hosts Spark poorly:

* asv runs every benchmark (and every repeat) in a fresh Python process.
  A SparkSession is a JVM that takes ~8-10 s to start, so either each sample
  pays the start-up (and measures it), or ``setup_cache`` would have to hand
  a live session across processes, which it cannot (it pickles its result).
* asv's timers run in the driver. The work happens in the JVM and in the
  Python worker processes that Spark forks; ``time_*`` sees only the wall
  clock of the driver's blocking call, and ``peakmem_*`` sees only the driver
  (the number it reports says nothing about executor memory).
* The first job of a session pays worker start-up, the cepvec import and the
  Numba cache load (or compile) in every Python worker. asv's warm-up and
  repeat logic would mix that one-off cost into the samples; here it is
  measured separately ("first-batch latency").
* Comparing ``local[1]`` with ``local[2]`` needs two sessions in one run
  (``spark.master`` cannot change inside a live session).

Plain timing with ``time.perf_counter`` around blocking actions, repeated and
reported as the minimum, is what is left; this script does that.

What it measures (``sequence_abcd`` data, 10 ids, integer seconds)
-------------------------------------------------------------------
(a) ``spark``      Spark's own pipeline as cepvec.run uses it, with a
                   pass-through ``mapInArrow``: repartition by ``id``,
                   ``sortWithinPartitions(id, time)``, Arrow transfer to
                   Python and back, batches yielded unchanged, then a write
                   to the ``noop`` format (forces execution, writes nothing).
                   This is the floor for any mapInArrow-based engine.
(b) ``self-join``  Spark SQL for ``SEQ(A, B, C) WHERE [id] WITHIN W``: the
                   number of triples a, b, c of one id with
                   a.time < b.time < c.time and c.time - a.time < W. Written
                   as a band join a user would write after the obvious
                   version stalls: an equi-join on (id, time bucket of width
                   W) with the neighbouring bucket added by ``explode``, then
                   the band conditions. (The plain ``ON a.id = b.id AND b.time
                   BETWEEN ...`` self-join is an equi-join on 10 id values
                   only: per id it compares every A with every B.)
(c) ``cepvec``     ``cepvec.run(q, sdf)`` for
                   ``RETURN id, COUNT(*) PATTERN SEQ(A, B, C) WHERE [id]
                   GROUP-BY id WITHIN W``, collected (10 rows).
(c') ``kernel``    the same kernel through ``mapInArrow`` as a user writes it,
                   without the final ``orderBy`` of cepvec.run; the gap between
                   (c) and (c') is the cost of that ordering step.
(l) ``local``      ``cepvec.run(q, polars_df)`` in this process (no Spark).

Each of (a)-(c') runs on ``local[1]`` and on ``local[2]`` (separate sessions,
``spark.sql.shuffle.partitions`` = 2 x cores, AQE off). The table gives the
minimum over ``--repeat`` runs in seconds, cepvec/(a) (how much cepvec adds
to Spark's own data movement) and (b)/cepvec (the speed-up over SQL), and
checks that (b), (c), (c') and (l) give the same total count.

First-batch latency: on a fresh session (and a Numba cache directory that is
empty, then one that is warm) a tiny cepvec job is timed twice; inside each
task the time from entering the mapInArrow function to its first output
batch is recorded per Python worker (pid), which is where the Numba kernels
are loaded from ``NUMBA_CACHE_DIR`` or compiled.

The input is generated once per size with cepvec.generators and written to
Parquet in a temporary directory, so every session reads the same file.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

import polars as pl

import cepvec
from cepvec.generators import sequence_abcd

N_IDS = 10
SEED = 0
WINDOW = 200  # seconds; with 10 ids and gaps of 1-3 s an id sees ~10 events per window

QUERY = "RETURN id, COUNT(*) PATTERN SEQ(A, B, C) WHERE [id] GROUP-BY id WITHIN {w}"


# --------------------------------------------------------------------------- data


def write_input(n: int, directory: Path) -> tuple[Path, pl.DataFrame]:
    df = sequence_abcd(n_events=n, seed=SEED, n_ids=N_IDS)
    path = directory / f"abcd_{n}.parquet"
    df.write_parquet(path)
    return path, df


# --------------------------------------------------------------------------- Spark


def start_session(cores: int, numba_cache: Path):
    """A fresh local[cores] session; its Python workers inherit NUMBA_CACHE_DIR from this process."""
    os.environ["NUMBA_CACHE_DIR"] = str(numba_cache)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master(f"local[{cores}]")
        .appName(f"cepvec-bench-local{cores}")
        .config("spark.sql.shuffle.partitions", str(2 * cores))
        .config("spark.sql.adaptive.enabled", "false")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", "6g")
        .config("spark.executorEnv.NUMBA_CACHE_DIR", str(numba_cache))
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def stop_session(spark) -> None:
    spark.stop()
    # a new builder must start a new JVM-side SparkContext with the new master
    from pyspark.sql import SparkSession

    SparkSession._instantiatedSession = None
    SparkSession._activeSession = None


def passthrough(batches):
    """(a): yield the batches unchanged (the mapInArrow floor)."""
    yield from batches


def run_passthrough(sdf) -> int:
    staged = sdf.repartition(int(sdf.sparkSession.conf.get("spark.sql.shuffle.partitions")), "id")
    staged = staged.sortWithinPartitions("id", "time")
    staged.mapInArrow(passthrough, sdf.schema).write.format("noop").mode("overwrite").save()
    return -1


def run_self_join(sdf, w: int) -> int:
    """(b): count of (a, b, c) with the same id, a.time < b.time < c.time, c.time - a.time < w."""
    spark = sdf.sparkSession
    sdf.createOrReplaceTempView("ev")
    sql = f"""
    WITH a AS (SELECT id, time AS ta, time DIV {w} AS bk FROM ev WHERE type = 'A'),
         b AS (SELECT id, time AS tb, time DIV {w} AS bk FROM ev WHERE type = 'B'),
         c AS (SELECT id, time AS tc, time DIV {w} AS bk FROM ev WHERE type = 'C'),
         a2 AS (SELECT id, ta, bk, bk + d AS jk FROM a LATERAL VIEW explode(array(0, 1)) t AS d),
         ab AS (SELECT a2.id, a2.ta, a2.bk, b.tb FROM a2 JOIN b
                  ON a2.id = b.id AND a2.jk = b.bk AND b.tb > a2.ta AND b.tb < a2.ta + {w}),
         ab2 AS (SELECT id, ta, tb, bk + d AS jk FROM ab LATERAL VIEW explode(array(0, 1)) t AS d)
    SELECT COUNT(*) AS n FROM ab2 JOIN c
      ON ab2.id = c.id AND ab2.jk = c.bk AND c.tc > ab2.tb AND c.tc < ab2.ta + {w}
    """
    return int(spark.sql(sql).collect()[0]["n"])


def run_cepvec(sdf, w: int) -> int:
    """(c): cepvec.run on the Spark DataFrame; the total of COUNT(*) over the 10 ids."""
    rows = cepvec.run(QUERY.format(w=w), sdf).collect()
    return int(sum(r["COUNT(*)"] for r in rows))


def run_kernel(sdf, w: int) -> int:
    """(c'): the same kernel through mapInArrow, without cepvec.run's final orderBy."""
    q = QUERY.format(w=w)
    k = cepvec.kernel(q, sdf.schema)
    n = int(sdf.sparkSession.conf.get("spark.sql.shuffle.partitions"))
    out = sdf.repartition(n, "id").sortWithinPartitions("id", "time").mapInArrow(k, k.schema)
    return int(sum(r["COUNT(*)"] for r in out.collect()))


def best_of(fn, repeat: int):
    times, value = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        value = fn()
        times.append(time.perf_counter() - t0)
    return min(times), value


# --------------------------------------------------------------------------- first-batch latency


def _timed_kernel(k):
    """mapInArrow function: run ``k`` and yield one row of timings for this task."""

    def timed(batches):
        import os as _os
        import time as _time

        import pyarrow as _pa

        t0 = _time.perf_counter()
        first = None
        rows = 0
        for out in k(batches):
            if first is None:
                first = _time.perf_counter() - t0
            rows += out.num_rows
        total = _time.perf_counter() - t0
        yield _pa.RecordBatch.from_pylist(
            [{"pid": _os.getpid(), "first_batch_s": first if first is not None else total,
              "task_s": total, "rows": rows, "numba_cache": _os.environ.get("NUMBA_CACHE_DIR", "")}])

    return timed


def first_batch_latency(spark, path: Path, w: int) -> list[dict]:
    """Two runs of a tiny cepvec job on this session: driver wall time and per-task worker timings."""
    sdf = spark.read.parquet(str(path)).limit(20_000)
    k = cepvec.kernel(QUERY.format(w=w), sdf.schema)
    n = int(spark.conf.get("spark.sql.shuffle.partitions"))
    staged = sdf.repartition(n, "id").sortWithinPartitions("id", "time")
    out = []
    for label in ("first run", "second run"):
        t0 = time.perf_counter()
        tasks = staged.mapInArrow(_timed_kernel(k), "pid BIGINT, first_batch_s DOUBLE, task_s DOUBLE, "
                                                    "rows BIGINT, numba_cache STRING").collect()
        wall = time.perf_counter() - t0
        per_worker: dict[int, float] = {}
        for r in tasks:  # a worker runs several tasks; its first one pays the kernel load
            per_worker[r["pid"]] = max(per_worker.get(r["pid"], 0.0), r["first_batch_s"])
        out.append({"run": label, "wall_s": wall, "numba_cache": {r["numba_cache"] for r in tasks},
                    "first_batch_s": ", ".join(f"{v:.2f}" for _, v in sorted(per_worker.items()))})
    return out


# --------------------------------------------------------------------------- main


def _loadavg() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[10**6])
    p.add_argument("--big", action="store_true", help="add n = 10**7 (needs ~6 GB of driver memory)")
    p.add_argument("--join-max", type=int, default=None,
                   help="run the self-join (b) only for n <= this (it is the slow one)")
    p.add_argument("--cores", type=int, nargs="+", default=[1, 2])
    p.add_argument("--window", type=int, default=WINDOW)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--no-latency", action="store_true")
    args = p.parse_args(argv)
    sizes = sorted(set(args.sizes + ([10**7] if args.big else [])))
    w = args.window

    print(f"# cepvec Spark benchmark  {_dt.date.today().isoformat()}  {platform.node()}  "
          f"{os.cpu_count()} cores  Python {platform.python_version()}  "
          f"pyspark {__import__('pyspark').__version__}  cepvec {cepvec.__version__}")
    print(f"# query: {QUERY.format(w=w)}")
    print(f"# load average at start: {_loadavg()}")
    tmp = Path(tempfile.mkdtemp(prefix="cepvec-spark-bench-"))
    numba_cache = tmp / "numba-cache"
    try:
        inputs = {n: write_input(n, tmp) for n in sizes}
        results: dict[tuple, float] = {}
        counts: dict[tuple, int] = {}
        q = QUERY.format(w=w)
        cepvec.run(q, inputs[sizes[0]][1].head(1000))  # compile (or load) the kernels in this process
        for n, (_, df) in inputs.items():
            t, c = best_of(lambda df=df: int(cepvec.run(QUERY.format(w=w), df)["COUNT(*)"].sum()), args.repeat)
            results[("local", n, 0)] = t
            counts[("local", n)] = c
            print(f"local cepvec n={n}: {t:.2f} s, {c} matches", flush=True)

        for cores in args.cores:
            spark = start_session(cores, numba_cache)
            try:
                for n, (path, _) in inputs.items():
                    sdf = spark.read.parquet(str(path))
                    run_cepvec(sdf.limit(1000), w)  # start workers and load kernels before timing
                    steps = [("spark", run_passthrough), ("cepvec", lambda s: run_cepvec(s, w)),
                             ("kernel", lambda s: run_kernel(s, w))]
                    if args.join_max is None or n <= args.join_max:
                        steps.insert(1, ("self-join", lambda s: run_self_join(s, w)))
                    for name, fn in steps:
                        t, c = best_of(lambda fn=fn: fn(sdf), args.repeat)
                        results[(name, n, cores)] = t
                        if c >= 0:
                            counts[(name, n, cores)] = c
                        print(f"local[{cores}] n={n} {name}: {t:.2f} s" + (f", {c} matches" if c >= 0 else ""),
                              flush=True)
            finally:
                stop_session(spark)

        latency = []
        if not args.no_latency:
            shutil.rmtree(numba_cache, ignore_errors=True)
            path = inputs[sizes[0]][0]
            for label in ("empty Numba cache", "warm Numba cache"):
                spark = start_session(2, numba_cache)
                try:
                    for r in first_batch_latency(spark, path, w):
                        latency.append({"session": label, **r})
                finally:
                    stop_session(spark)

        # ------------------------------------------------------------------ report
        print(f"\n# load average at end: {_loadavg()}")
        ok = True
        print("\n## seconds (min of %d runs)\n" % args.repeat)
        print("| n | cores | (a) Spark pass-through | (b) SQL self-join | (c) cepvec.run | (c') kernel, no orderBy "
              "| cepvec / (a) | (b) / cepvec |")
        print("|---|---|---|---|---|---|---|---|")
        for n in sizes:
            for cores in args.cores:
                a = results.get(("spark", n, cores))
                b = results.get(("self-join", n, cores))
                c = results.get(("cepvec", n, cores))
                k = results.get(("kernel", n, cores))
                fmt = lambda x: "-" if x is None else f"{x:.2f}"  # noqa: E731
                ratio = lambda x, y: "-" if x is None or y is None else f"{x / y:.2f}"  # noqa: E731
                print(f"| {n:.0e} | {cores} | {fmt(a)} | {fmt(b)} | {fmt(c)} | {fmt(k)} | {ratio(c, a)} | "
                      f"{ratio(b, c)} |")
            print(f"| {n:.0e} | local cepvec, 1 process | | | {results[('local', n, 0)]:.2f} | | | |")
        print("\n## match counts\n")
        for n in sizes:
            seen = {key: v for key, v in counts.items() if key[1] == n}
            same = len(set(seen.values())) == 1
            ok &= same
            print(f"n={n}: " + ", ".join(f"{key[0]}{'' if len(key) == 2 else f'[{key[2]}]'}={v}"
                                         for key, v in seen.items()) + ("  OK" if same else "  MISMATCH"))
        if latency:
            print("\n## first-batch latency, local[2], 20,000 events\n")
            print("| session | run | job wall s | per Python worker: s from function entry to first batch |")
            print("|---|---|---|---|")
            for r in latency:
                print(f"| {r['session']} | {r['run']} | {r['wall_s']:.2f} | {r['first_batch_s']} |")
            print(f"\n(workers saw NUMBA_CACHE_DIR = {set().union(*(r['numba_cache'] for r in latency))})")
        return 0 if ok else 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

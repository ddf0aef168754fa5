"""cepvec on Spark against Spark's own costs: a benchmark script, not an asv suite.

Run it from the repository root::

    python asv_benches/spark_bench.py                   # n = 10**6, local[1] and local[2]
    python asv_benches/spark_bench.py --big             # also n = 10**7
    python asv_benches/spark_bench.py --sizes 100000    # quick check
    python asv_benches/spark_bench.py --join-max 100000 # self-join only up to 10**5 events
    python asv_benches/spark_bench.py --sweep 2000 5000 10000 --cores 2  # W where the self-join explodes

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
                   pass-through ``mapInArrow``: the same staging as
                   cepvec.run (``cepvec.spark_adapter.run.stage``: select
                   the columns the query reads, repartition by ``id``,
                   ``sortWithinPartitions(id, time)``), Arrow transfer to
                   Python and back, batches yielded unchanged, then a write
                   to the ``noop`` format (forces execution, writes nothing).
                   This is the floor for any mapInArrow-based engine that
                   returns its input's size; cepvec returns 10 rows, so
(a') ``sink``      the same with a function that reads every batch and
                   yields nothing is the floor for cepvec itself.
(b) ``self-join``  Spark SQL for ``SEQ(A, B, C) WHERE [id] WITHIN W``: the
                   number of triples a, b, c of one id with
                   a.time < b.time < c.time and c.time - a.time < W. Written
                   as a band join a user would write after the obvious
                   version stalls: an equi-join on (id, time bucket of width
                   W) with the neighbouring bucket added by ``explode``, then
                   the band conditions. (The plain ``ON a.id = b.id AND b.time
                   BETWEEN ...`` self-join is an equi-join on 10 id values
                   only: per id it compares every A with every B.)
(b') ``sql-window`` the same count in Spark SQL without a join, with window
                   functions over (id, time): per A event, the number of B in
                   (ta, ta + W) times the number of C up to ta + W - 1, minus
                   the sum over those B of the number of C up to tb (RANGE
                   frames). It needs this pattern's algebra worked out by
                   hand and does not extend to Kleene plus or negation; it is
                   here because it is the fastest SQL for this one count.
(c) ``cepvec``     ``cepvec.run(q, sdf)`` for
                   ``RETURN id, COUNT(*) PATTERN SEQ(A, B, C) WHERE [id]
                   GROUP-BY id WITHIN W``, collected (10 rows).
(c') ``kernel``    the same kernel through ``mapInArrow`` as a user writes it,
                   without the final ``orderBy`` of cepvec.run; the gap between
                   (c) and (c') is the cost of that ordering step.
(l) ``local``      ``cepvec.run(q, polars_df)`` in this process (no Spark).
(d) ``slide``      ``RETURN COUNT(*) PATTERN SEQ(A, B, C) WHERE [id] WITHIN W
                   SLIDE W/2`` (no GROUP-BY) through cepvec.run, i.e. window
                   replication (2 copies per event, partitioned by window id);
(d1) ``slide-1p``  the same kernel on one partition sorted by time, as
                   cepvec.run ran such queries before window replication.

``--sweep W1 W2 ...`` times (b), (b') and (c) at the largest core count for
larger windows (the band join's cost grows with the number of matches,
about W**2 per event, cepvec's does not); a (b) run is cancelled after
``--join-timeout`` seconds and reported as ``> timeout``.

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
SLIDE_QUERY = "RETURN COUNT(*) PATTERN SEQ(A, B, C) WHERE [id] WITHIN {w} SLIDE {s}"


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


def run_passthrough(sdf, w: int) -> int:
    from cepvec.spark_adapter.run import stage

    staged, _, _ = stage(cepvec.compile(QUERY.format(w=w)), sdf)
    staged.mapInArrow(passthrough, staged.schema).write.format("noop").mode("overwrite").save()
    return -1


def sink(batches):
    """(a'): consume the batches and yield nothing (the transfer to Python only)."""
    for _ in batches:
        pass
    return iter(())


def run_sink(sdf, w: int) -> int:
    from cepvec.spark_adapter.run import stage

    staged, _, _ = stage(cepvec.compile(QUERY.format(w=w)), sdf)
    staged.mapInArrow(sink, staged.schema).write.format("noop").mode("overwrite").save()
    return -1


def run_sql_window(sdf, w: int) -> int:
    """(b'): the same count with window functions (no join): sum over A of nB * C(<= ta+W-1) - sum C(<= tb)."""
    spark = sdf.sparkSession
    sdf.createOrReplaceTempView("ev")
    frame = f"PARTITION BY id ORDER BY time RANGE BETWEEN 1 FOLLOWING AND {w - 1} FOLLOWING"
    sql = f"""
    WITH e AS (SELECT id, type, time,
                 COUNT(CASE WHEN type = 'C' THEN 1 END) OVER (PARTITION BY id ORDER BY time
                   RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS c_le
               FROM ev WHERE type IN ('A', 'B', 'C')),
         s AS (SELECT type,
                 COUNT(CASE WHEN type = 'B' THEN 1 END) OVER ({frame}) AS nb,
                 SUM(CASE WHEN type = 'B' THEN c_le ELSE 0 END) OVER ({frame}) AS sum_c_le,
                 COUNT(CASE WHEN type = 'C' THEN 1 END) OVER (PARTITION BY id ORDER BY time
                   RANGE BETWEEN UNBOUNDED PRECEDING AND {w - 1} FOLLOWING) AS c_upto
               FROM e)
    SELECT SUM(nb * c_upto - sum_c_le) AS n FROM s WHERE type = 'A'
    """
    return int(spark.sql(sql).collect()[0]["n"] or 0)


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
    """(c'): the same kernel through mapInArrow, without cepvec.run's final gathering sort."""
    from cepvec.spark_adapter.run import stage

    staged, k, _ = stage(cepvec.compile(QUERY.format(w=w)), sdf)
    return int(sum(r["COUNT(*)"] for r in staged.mapInArrow(k, k.schema).collect()))


SLIDE_DIVISOR = 2  # (d) uses SLIDE W / SLIDE_DIVISOR; --slide-divisor changes it


def run_slide(sdf, w: int) -> int:
    """(d): a SLIDE query without GROUP-BY through cepvec.run (window replication)."""
    rows = cepvec.run(SLIDE_QUERY.format(w=w, s=w // SLIDE_DIVISOR), sdf).collect()
    return int(sum(r["COUNT(*)"] for r in rows))


def run_slide_one_partition(sdf, w: int) -> int:
    """(d1): the same kernel in one partition sorted by time (no window replication)."""
    k = cepvec.kernel(SLIDE_QUERY.format(w=w, s=w // SLIDE_DIVISOR), sdf.schema)
    out = sdf.select("type", "time", "id").repartition(1).sortWithinPartitions("time").mapInArrow(k, k.schema)
    return int(sum(r["COUNT(*)"] for r in out.collect()))


def with_timeout(spark, fn, seconds: float):
    """Run ``fn()``; cancel its Spark jobs after ``seconds`` (then return None)."""
    import threading

    timer = threading.Timer(seconds, spark.sparkContext.cancelAllJobs)
    timer.start()
    try:
        return fn()
    except Exception as e:  # noqa: BLE001 - a cancelled job surfaces as a Py4J/Spark error
        if "cancel" in str(e).lower():
            return None
        raise
    finally:
        timer.cancel()


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
    p.add_argument("--no-slide", action="store_true", help="skip (d) and (d1)")
    p.add_argument("--slide-divisor", type=int, default=2, help="(d) uses SLIDE W / this (1: tumbling windows)")
    p.add_argument("--sweep", type=int, nargs="*", default=[],
                   help="more windows W for (b), (b') and (c) at the smallest size and the largest core count")
    p.add_argument("--join-timeout", type=float, default=300.0, help="cancel a (b) run after this many seconds")
    args = p.parse_args(argv)
    sizes = sorted(set(args.sizes + ([10**7] if args.big else [])))
    w = args.window
    global SLIDE_DIVISOR
    SLIDE_DIVISOR = args.slide_divisor

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
        loads: dict[tuple, str] = {}
        q = QUERY.format(w=w)
        cepvec.run(q, inputs[sizes[0]][1].head(1000))  # compile (or load) the kernels in this process
        for n, (_, df) in inputs.items():
            t, c = best_of(lambda df=df: int(cepvec.run(QUERY.format(w=w), df)["COUNT(*)"].sum()), args.repeat)
            results[("local", n, 0)] = t
            counts[("local", n)] = c
            print(f"local cepvec n={n}: {t:.2f} s, {c} matches", flush=True)
            if not args.no_slide:
                c = int(cepvec.run(SLIDE_QUERY.format(w=w, s=w // SLIDE_DIVISOR), df)["COUNT(*)"].sum())
                counts[("slide-local", n)] = c

        for cores in args.cores:
            spark = start_session(cores, numba_cache)
            try:
                for n, (path, _) in inputs.items():
                    sdf = spark.read.parquet(str(path))
                    run_cepvec(sdf.limit(1000), w)  # start workers and load kernels before timing
                    steps = [("spark", lambda s: run_passthrough(s, w)), ("sink", lambda s: run_sink(s, w)),
                             ("cepvec", lambda s: run_cepvec(s, w)),
                             ("kernel", lambda s: run_kernel(s, w))]
                    if args.join_max is None or n <= args.join_max:
                        steps[1:1] = [("self-join", lambda s: run_self_join(s, w)),
                                      ("sql-window", lambda s: run_sql_window(s, w))]
                    if not args.no_slide:
                        steps += [("slide", lambda s: run_slide(s, w)),
                                  ("slide-1p", lambda s: run_slide_one_partition(s, w))]
                    for name, fn in steps:
                        loads[(n, cores)] = _loadavg()
                        t, c = best_of(lambda fn=fn: fn(sdf), args.repeat)
                        results[(name, n, cores)] = t
                        if c >= 0:
                            counts[(name, n, cores)] = c
                        print(f"local[{cores}] n={n} {name}: {t:.2f} s" + (f", {c} matches" if c >= 0 else "")
                              + f"  (load {_loadavg()})", flush=True)
            finally:
                stop_session(spark)

        sweep = []
        if args.sweep:
            cores, n = max(args.cores), sizes[0]
            spark = start_session(cores, numba_cache)
            try:
                sdf = spark.read.parquet(str(inputs[n][0])).cache()
                sdf.count()
                run_cepvec(sdf.limit(1000), w)
                for ww in args.sweep:
                    load = _loadavg()
                    tc, cc = best_of(lambda ww=ww: run_cepvec(sdf, ww), 2)
                    t0 = time.perf_counter()
                    cw = with_timeout(spark, lambda ww=ww: run_sql_window(sdf, ww), args.join_timeout)
                    tw = time.perf_counter() - t0 if cw is not None else None
                    t0 = time.perf_counter()
                    cb = with_timeout(spark, lambda ww=ww: run_self_join(sdf, ww), args.join_timeout)
                    tb = time.perf_counter() - t0 if cb is not None else None
                    ok_counts = (cw is None or cw == cc) and (cb is None or cb == cc)
                    sweep.append({"w": ww, "matches": cc, "b": tb, "bw": tw, "c": tc, "ok": ok_counts,
                                  "load": load})
                    print(f"sweep local[{cores}] n={n} W={ww}: cepvec {tc:.2f} s, sql-window {tw} s, self-join "
                          + (f"{tb:.2f} s" if tb is not None else f"> {args.join_timeout:.0f} s")
                          + f", {cc} matches{'' if ok_counts else ' MISMATCH'}  (load {load})", flush=True)
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
        fmt = lambda x: "-" if x is None else f"{x:.2f}"  # noqa: E731
        ratio = lambda x, y: "-" if x is None or y is None else f"{x / y:.2f}"  # noqa: E731
        print("| n | cores | (a) Spark pass-through | (a') sink | (b) SQL self-join | (b') SQL window functions "
              "| (c) cepvec.run | (c') kernel only | cepvec / (a) | cepvec / (a') | (b) / cepvec | (b') / cepvec "
              "| load |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for n in sizes:
            for cores in args.cores:
                a, a1, b, bw, c, k = (results.get((name, n, cores))
                                      for name in ("spark", "sink", "self-join", "sql-window", "cepvec", "kernel"))
                print(f"| {n:.0e} | {cores} | {fmt(a)} | {fmt(a1)} | {fmt(b)} | {fmt(bw)} | {fmt(c)} | {fmt(k)} | "
                      f"{ratio(c, a)} | {ratio(c, a1)} | {ratio(b, c)} | {ratio(bw, c)} | "
                      f"{loads.get((n, cores), '')} |")
            print(f"| {n:.0e} | local cepvec, 1 process | | | | | {results[('local', n, 0)]:.2f} | | | | | | |")
        if not args.no_slide:
            print(f"\n## no GROUP-BY: {SLIDE_QUERY.format(w=w, s=w // SLIDE_DIVISOR)}\n")
            print("| n | cores | (d) cepvec.run, window replication | (d1) one partition | (d1) / (d) |")
            print("|---|---|---|---|---|")
            for n in sizes:
                for cores in args.cores:
                    d, d1 = results.get(("slide", n, cores)), results.get(("slide-1p", n, cores))
                    print(f"| {n:.0e} | {cores} | {fmt(d)} | {fmt(d1)} | {ratio(d1, d)} |")
        if sweep:
            print(f"\n## larger windows, n = {sizes[0]:.0e}, local[{max(args.cores)}]\n")
            print("| W | matches | (b) self-join | (b') window functions | (c) cepvec.run | (b) / (c) | (b') / (c) "
                  "| load |")
            print("|---|---|---|---|---|---|---|---|")
            for r in sweep:
                b = fmt(r["b"]) if r["b"] is not None else f"> {args.join_timeout:.0f}"
                br = ratio(r["b"], r["c"]) if r["b"] is not None else f"> {args.join_timeout / r['c']:.0f}"
                bw = fmt(r["bw"]) if r["bw"] is not None else f"> {args.join_timeout:.0f}"
                print(f"| {r['w']} | {r['matches']} | {b} | {bw} | {fmt(r['c'])} | {br} | "
                      f"{ratio(r['bw'], r['c'])} | {r['load']} |")
                ok &= r["ok"]
        print("\n## match counts\n")
        for n in sizes:
            for group in ("main", "slide"):
                seen = {key: v for key, v in counts.items()
                        if key[1] == n and key[0].startswith("slide") == (group == "slide")}
                if not seen:
                    continue
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

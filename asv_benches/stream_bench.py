"""``cepvec.stream`` against Spark's own streaming costs: a benchmark script, not an asv suite.

Run it from the repository root::

    python asv_benches/stream_bench.py                       # 10 micro-batches of 10^5 events, 1,000 groups
    python asv_benches/stream_bench.py --batches 100 --variants passthrough "cepvec buckets=16"  # 10^7 events
    python asv_benches/stream_bench.py --batch 20000 --batches 4   # quick check
    python asv_benches/stream_bench.py --keyless --variants passthrough "cepvec buckets=16"  # no GROUP-BY

It is a script for the reasons ``asv_benches/spark_bench.py`` gives (a JVM per
asv process, work done outside the driver's timers). All variants run in one
session, one after the other, on the same files, so their ratios are
same-run ratios.

Data: ``--batches`` Parquet files of ``--batch`` events each (types A, B, C,
D; ``--groups`` ids; integer seconds, 1,000 events per second of event time,
so a micro-batch covers 100 s at the defaults), read by a file source with
``maxFilesPerTrigger=1`` (one file per micro-batch, ``availableNow``).

Query: ``RETURN id, COUNT(*) PATTERN SEQ(A, B, C) WHERE [id] GROUP-BY id
WITHIN 60 s SLIDE 10 s``, watermark 10 s; with ``--keyless`` the same
without GROUP-BY (state keys are blocks of windows; ``buckets`` is then
unused).

Variants, each written to the ``noop`` sink:

* ``passthrough``: Spark's stateless pass-through (the query's columns
  selected and written): what moving the events costs;
* ``state-noop``: the same ``applyInPandasWithState`` staging as cepvec
  (watermark, groupBy key, event-time timeout) with a function that reads
  its input and yields nothing: what the stateful Python API alone costs;
* ``tws-noop``: the alternative stateful API, ``transformWithStateInPandas``
  (RocksDB state store, one value state per key), with the same do-nothing
  function: what that API alone costs;
* ``cepvec keys``: ``cepvec.stream`` with one state key per GROUP-BY value;
* ``cepvec buckets=B``: ``cepvec.stream`` with the groups hashed into B
  state keys.

``tws-noop`` runs on the RocksDB state store, the others on Spark's default
HDFS-backed one (the session's provider is set before each variant starts).
The rows of docs/streaming.md for ``cepvec.stream`` on
``transformWithStateInPandas`` ("tws buckets=16", "tws keys") were measured
with this script at commit c12d9bf of branch ``stream2``, which had that
port (``state_api=``); it was not kept (on par with the default). The
one-key numbers there for ``--keyless`` (queries without GROUP-BY before window
blocks) came from this script run with the cepvec of commit 0670d99.

Reported per variant: events per second over the micro-batches after the
first (the first pays Python worker start-up and the Numba cache load; the
sum of their ``triggerExecution`` times; Spark keeps the last 100 progress
reports), events per second by the wall clock of the whole run,
the median micro-batch duration (``triggerExecution``: the latency from a
batch's start to its rows being committed; a window's row is emitted in
the first micro-batch whose watermark passes the window's end, so its
event-time latency adds the watermark delay and up to one micro-batch
interval), and for the stateful variants the state store's size (rows and
bytes) after each batch.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

import numpy as np
import polars as pl

QUERY = "RETURN id, COUNT(*) PATTERN SEQ(A, B, C) WHERE [id] GROUP-BY id WITHIN 60 s SLIDE 10 s"
# --keyless: the same pattern without GROUP-BY (one row per window; state keys are blocks of windows)
KEYLESS = "RETURN COUNT(*) PATTERN SEQ(A, B, C) WHERE [id] WITHIN 60 s SLIDE 10 s"
SCHEMA = "type STRING, time BIGINT, id BIGINT"


def write_files(folder: str, batches: int, batch: int, groups: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    os.makedirs(folder, exist_ok=True)
    for i in range(batches):
        t = (i * batch + np.arange(batch)) // 1000  # 1,000 events per second of event time
        df = pl.DataFrame({"type": rng.choice(["A", "B", "C", "D"], batch).tolist(), "time": t.astype(np.int64),
                           "id": rng.integers(0, groups, batch).astype(np.int64)})
        f = os.path.join(folder, f"batch-{i:05d}.parquet")
        df.write_parquet(f)
        os.utime(f, (1_000_000_000 + 10 * i, 1_000_000_000 + 10 * i))


def state_noop(key, pdfs, state):  # pragma: no cover - runs in the Spark Python workers
    for p in pdfs:
        len(p)
    wm = state.getCurrentWatermarkMs()
    state.update((1,))
    state.setTimeoutTimestamp(max(wm, 1) + 60_000)
    return iter(())


def _tws_noop_processor():
    from pyspark.sql.streaming import StatefulProcessor
    from pyspark.sql.types import LongType, StructField, StructType

    class Noop(StatefulProcessor):  # pragma: no cover - runs in the Spark Python workers
        def init(self, handle):
            self.n = handle.getValueState("n", StructType([StructField("n", LongType())]))

        def handleInputRows(self, key, rows, timerValues):
            m = 0
            for p in rows:
                m += len(p)
            self.n.update((m,))
            return iter(())

        def close(self):
            pass

    return Noop()


ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
HDFS = "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"


def build(spark, variant: str, src, query: str = QUERY):
    from pyspark.sql import functions as F

    import cepvec

    tws = variant == "tws-noop"
    spark.conf.set("spark.sql.streaming.stateStore.providerClass", ROCKSDB if tws else HDFS)
    if variant == "passthrough":
        return src.select("type", "time", "id")
    if variant == "state-noop":
        staged = src.withColumn("__ts", F.timestamp_seconds("time")).withWatermark("__ts", "10 seconds")
        return staged.groupBy("id").applyInPandasWithState(state_noop, "n BIGINT", "x BIGINT", "append",
                                                           "EventTimeTimeout")
    if variant == "tws-noop":
        staged = src.withColumn("__ts", F.timestamp_seconds("time")).withWatermark("__ts", "10 seconds")
        return staged.groupBy("id").transformWithStateInPandas(
            statefulProcessor=_tws_noop_processor(), outputStructType="x BIGINT", outputMode="Append",
            timeMode="EventTime")
    buckets = None if variant.endswith(" keys") else int(variant.split("=")[1])
    return cepvec.stream(query, src, watermark="10 s", buckets=buckets)


def measure(spark, variant: str, folder: str, work: str, events_per_batch: int, query: str = QUERY) -> dict:
    src = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).parquet(folder)
    ck = os.path.join(work, "ck-" + variant.replace(" ", "-").replace("=", ""))
    shutil.rmtree(ck, ignore_errors=True)
    t0 = time.perf_counter()
    q = (build(spark, variant, src, query).writeStream.format("noop").option("checkpointLocation", ck)
         .trigger(availableNow=True).start())
    q.awaitTermination()
    wall = time.perf_counter() - t0
    prog = [p for p in q.recentProgress if p["numInputRows"] > 0]
    durations = [p["durationMs"]["triggerExecution"] / 1000 for p in prog]
    steady = durations[1:] or durations
    rows = sum(p["numInputRows"] for p in prog[1:]) if len(prog) > 1 else sum(p["numInputRows"] for p in prog)
    # rows, bytes in memory (HDFS-backed store: the last versions' maps) and, RocksDB, the SST files' bytes
    state = [(p["stateOperators"][0]["numRowsTotal"], p["stateOperators"][0]["memoryUsedBytes"],
              p["stateOperators"][0].get("customMetrics", {}).get("rocksdbSstFileSize"))
             for p in q.recentProgress if p["stateOperators"]]
    total = sum(p["numInputRows"] for p in prog)
    return {"variant": variant, "wall": wall, "wall_events_per_s": total / wall, "events_per_s": rows / sum(steady), "median_batch_s":
            statistics.median(steady), "first_batch_s": durations[0], "batches": len(prog), "state": state}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--batch", type=int, default=100_000)
    ap.add_argument("--batches", type=int, default=10)
    ap.add_argument("--groups", type=int, default=1000)
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--keyless", action="store_true", help="the query without GROUP-BY (window-block state keys)")
    ap.add_argument("--variants", nargs="*",
                    default=["passthrough", "state-noop", "tws-noop", "cepvec buckets=16", "cepvec keys"])
    args = ap.parse_args(argv)

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master(f"local[{args.cores}]").appName("cepvec-stream-bench")
             .config("spark.sql.shuffle.partitions", str(2 * args.cores))
             .config("spark.sql.adaptive.enabled", "false").config("spark.ui.enabled", "false")
             .config("spark.sql.session.timeZone", "UTC").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    work = tempfile.mkdtemp(prefix="cepvec-stream-bench-")
    folder = os.path.join(work, "in")
    write_files(folder, args.batches, args.batch, args.groups)
    print(f"{args.batches} micro-batches x {args.batch} events, {args.groups} groups, local[{args.cores}], "
          f"load {os.getloadavg()}", flush=True)
    results = []
    for v in args.variants:
        r = measure(spark, v, folder, work, args.batch, KEYLESS if args.keyless else QUERY)
        results.append(r)
        print(f"{v:18s} {r['events_per_s']:>12,.0f} events/s  ({r['wall_events_per_s']:,.0f} by wall)  median batch {r['median_batch_s']:.2f} s  "
              f"first batch {r['first_batch_s']:.2f} s  wall {r['wall']:.1f} s  load {os.getloadavg()[0]:.1f}",
              flush=True)
        if r["state"]:
            sizes = r["state"]
            pick = sizes if len(sizes) <= 12 else sizes[:: max(1, len(sizes) // 12)] + [sizes[-1]]
            print("   state rows/memory bytes[/SST bytes] per batch:",
                  " ".join(f"{n}/{b}" + (f"/{sst}" if sst is not None else "") for n, b, sst in pick), flush=True)
    base = results[0]["events_per_s"]
    for r in results[1:]:
        print(f"{results[0]['variant']} / {r['variant']}: {base / r['events_per_s']:.2f}x")
    spark.stop()
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

"""A continuous cepvec query on a Spark file stream (docs/streaming.md).

    python examples/stream_files.py

Writes four micro-batches of events into a temporary folder (one Parquet
file each, with some events out of order and one late), runs
``RETURN id, COUNT(*) PATTERN SEQ(A, B+) WHERE [id] GROUP-BY id WITHIN 10 s
SLIDE 5 s`` on them with ``cepvec.stream``, writes the rows to a Parquet
sink with a checkpoint, prints them and the late-event count, and checks
them against ``cepvec.run`` on the events that were in time.
"""

from __future__ import annotations

import os
import sys
import tempfile

import polars as pl

import cepvec

QUERY = "RETURN id, COUNT(*) PATTERN SEQ(A, B+) WHERE [id] GROUP-BY id WITHIN 10 s SLIDE 5 s"

# (type, time in seconds, id): four micro-batches; A@12 arrives out of order (within the 5 s delay),
# B@3 arrives after the watermark passed it (late); Z@100 only moves the watermark past every window
BATCHES = [
    [("A", 1, 1), ("B", 2, 1), ("A", 4, 2), ("B", 6, 2), ("B", 9, 1)],
    [("A", 11, 1), ("B", 14, 1), ("A", 13, 2), ("B", 16, 2)],
    [("A", 12, 2), ("B", 3, 1), ("B", 21, 2), ("A", 22, 1), ("B", 24, 1)],
    [("Z", 100, 0)],
]


def main() -> None:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # the workers run this Python (and its cepvec)
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[2]").config("spark.sql.shuffle.partitions", "2")
             .config("spark.ui.enabled", "false").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    work = tempfile.mkdtemp(prefix="cepvec-stream-")
    src_dir, out_dir, ck = (os.path.join(work, d) for d in ("in", "out", "checkpoint"))
    os.makedirs(src_dir)
    for i, rows in enumerate(BATCHES):
        f = os.path.join(src_dir, f"batch-{i}.parquet")
        pl.DataFrame(rows, schema={"type": pl.String, "time": pl.Int64, "id": pl.Int64}, orient="row").write_parquet(f)
        os.utime(f, (1_000_000_000 + i, 1_000_000_000 + i))  # the file source reads the oldest file first

    events = (spark.readStream.schema("type STRING, time BIGINT, id BIGINT")
              .option("maxFilesPerTrigger", 1).parquet(src_dir))
    rows = cepvec.stream(QUERY, events, watermark="5 seconds", checkpoint=ck)
    query = (rows.writeStream.format("parquet").option("path", out_dir).option("checkpointLocation", ck)
             .trigger(availableNow=True).start())  # a long-running job would use .trigger(processingTime=...)
    query.awaitTermination()

    got = pl.from_arrow(spark.read.parquet(out_dir).toArrow()).sort("id", "window_start")
    late = sum(p["observedMetrics"]["cepvec"]["late_events"] for p in query.recentProgress
               if "cepvec" in p.get("observedMetrics", {}))
    print(got)
    print("late events:", late)
    in_time = pl.DataFrame([e for b in BATCHES for e in b if e != ("B", 3, 1)],
                           schema={"type": pl.String, "time": pl.Int64, "id": pl.Int64}, orient="row")
    want = cepvec.run(QUERY, in_time).sort("id", "window_start")
    assert got.equals(want.select(got.columns)) and late == 1, (got, want, late)
    print("same rows as cepvec.run on the in-time events")
    spark.stop()


if __name__ == "__main__":
    main()

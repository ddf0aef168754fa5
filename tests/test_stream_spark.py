"""``cepvec.stream`` on Spark Structured Streaming (the shared ``local[2]`` session).

A Parquet file source is fed one file per micro-batch
(``maxFilesPerTrigger=1``): the events cut at random points, shuffled inside
each batch, some held back into later batches (out of order within the
delay, or late), and a last event far in the future so that the watermark
closes every window. The rows written to a Parquet sink must be exactly
``cepvec.run`` on the events that were in time (an event is late when its
time is at or below the watermark of its micro-batch, computed here as Spark
computes it, independently of the code under test), the late events must be
counted, and a restart from the checkpoint must give the same rows, none
twice. Streams run side by side (``availableNow``) to keep the file short.
"""

from __future__ import annotations

import polars as pl
import pytest
from polars.testing import assert_frame_equal

pytest.importorskip("pyspark", reason="the Spark tests need pyspark: pip install 'cepvec[spark]'")

from pyspark.errors import StreamingQueryException  # noqa: E402

import cepvec  # noqa: E402

from .stream_sim import QUERIES, events, feeds, flush_event, split_late, write_batches  # noqa: E402

pytestmark = [pytest.mark.spark, pytest.mark.filterwarnings("ignore::cepvec.errors.CepvecWarning")]

DELAY_S = 10
SCHEMA = "type STRING, time BIGINT, id BIGINT, v BIGINT"


def stream_batches(seed: int, batches: int = 4) -> list[pl.DataFrame]:
    ev = events(seed, n=160)
    out = feeds(ev, seed, batches=batches, late=4)
    out[-1] = pl.concat([out[-1], flush_event(ev, 100_000)])
    return out


def source(spark, folder, schema=SCHEMA):
    return spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).parquet(str(folder))


def start(df, out, ck):
    return (df.writeStream.format("parquet").option("path", str(out)).option("checkpointLocation", str(ck))
            .trigger(availableNow=True).start())


def late_count(query) -> int:
    return sum(p["observedMetrics"]["cepvec"]["late_events"] for p in query.recentProgress
               if "cepvec" in p.get("observedMetrics", {}))


def read(spark, out) -> pl.DataFrame:
    return pl.from_arrow(spark.read.parquet(str(out)).toArrow())


def same_rows(got: pl.DataFrame, want: pl.DataFrame):
    assert len(want) > 0
    cols = list(want.columns)
    assert_frame_equal(got.select(cols).sort(cols), want.sort(cols), check_dtypes=False)


def test_stream_gives_run_on_in_time_events(spark, tmp_path):
    """A-Seq GROUP-BY (a state key per id, and hash buckets), GRETA Kleene with an edge predicate, negation
    without GROUP-BY (late events as a side output), EMIT CHANGES on a timestamp column: four streams at once."""
    batches = stream_batches(14)
    write_batches(batches, tmp_path / "in")
    ts_batches = [b.with_columns(pl.from_epoch("time", "s").dt.replace_time_zone("UTC")) for b in batches]
    write_batches(ts_batches, tmp_path / "in_ts")
    kept, late = split_late(batches, DELAY_S * 1000)
    assert len(late) >= 3 and len(kept) + len(late) == sum(map(len, batches))
    runs = {
        "aseq": dict(buckets=None), "kleene": dict(buckets=3), "negation": dict(late="side"), "emit": {},
    }
    queries = {}
    for name, kw in runs.items():
        src = source(spark, tmp_path / ("in_ts" if name == "emit" else "in"),
                     SCHEMA.replace("time BIGINT", "time TIMESTAMP") if name == "emit" else SCHEMA)
        out = cepvec.stream(QUERIES[name], src, watermark=f"{DELAY_S} seconds", **kw)
        queries[name] = start(out, tmp_path / f"out_{name}", tmp_path / f"ck_{name}")
    for name, query in queries.items():
        query.awaitTermination()
        got = read(spark, tmp_path / f"out_{name}")
        events_in = kept.with_columns(pl.from_epoch("time", "s").dt.replace_time_zone("UTC")) if name == "emit" \
            else kept
        want = cepvec.run(QUERIES[name], events_in)
        if name == "negation":
            side = got.filter(pl.col("late_event").is_not_null()).select(pl.col("late_event").struct.unnest())
            cols = list(side.columns)  # the columns the query reads
            assert cols == ["type", "time", "id"]
            assert_frame_equal(side.sort(cols), late.select(cols).sort(cols))
            got = got.filter(pl.col("late_event").is_null())
        if name == "emit":
            assert got.schema["time"] == pl.Datetime("us", "UTC")
        same_rows(got, want)
        assert late_count(query) == len(late), name


def test_restart_from_the_checkpoint_gives_each_row_once(spark, tmp_path):
    """Stop after two micro-batches, restart from the checkpoint with the rest: the union is the full result."""
    text = QUERIES["kleene"]
    batches = stream_batches(19)
    kept, late = split_late(batches, DELAY_S * 1000)
    write_batches(batches[:2], tmp_path / "in")
    ck, out = tmp_path / "ck", tmp_path / "out"
    kw = dict(watermark="10 s", checkpoint=str(ck), buckets=2)
    first = start(cepvec.stream(text, source(spark, tmp_path / "in"), **kw), out, ck)
    first.awaitTermination()
    n_first = len(read(spark, out))
    write_batches(batches[2:], tmp_path / "in", start=2)
    second = start(cepvec.stream(text, source(spark, tmp_path / "in"), **kw), out, ck)
    second.awaitTermination()
    got = read(spark, out)
    assert 0 < n_first < len(got)
    assert not got.select("id", "window_start").is_duplicated().any()
    same_rows(got, cepvec.run(text, kept))
    assert late_count(first) + late_count(second) == len(late)
    # the checkpoint remembers the query: another one would misread its state
    other = text.replace("WITHIN 20 s", "WITHIN 30 s")
    with pytest.raises(cepvec.CepvecPlanError, match="holds the state of a cepvec stream with another query"):
        cepvec.stream(other, source(spark, tmp_path / "in"), **kw)
    with pytest.raises(cepvec.CepvecPlanError, match="another buckets .*2 there, 3 now"):
        cepvec.stream(text, source(spark, tmp_path / "in"), **{**kw, "buckets": 3})


def test_late_error_stops_the_query(spark, tmp_path):
    ev = pl.DataFrame({"type": ["A", "B", "C", "A"], "time": [1, 50, 60, 2], "id": [0, 0, 0, 0], "v": [1, 2, 3, 4]})
    write_batches([ev[:3], ev[3:]], tmp_path / "in")
    out = cepvec.stream(QUERIES["aseq"], source(spark, tmp_path / "in"), watermark="5 s", late="error")
    query = start(out, tmp_path / "out", tmp_path / "ck")
    with pytest.raises(StreamingQueryException, match=r"1 late event\(s\).*time = 2"):
        query.awaitTermination()


def test_refusals(spark, tmp_path):
    write_batches([events(1, n=5)], tmp_path / "in")
    src = source(spark, tmp_path / "in")
    with pytest.raises(cepvec.CepvecQueryError, match="has WITHIN without SLIDE or EMIT CHANGES"):
        cepvec.stream("RETURN COUNT(*) PATTERN SEQ(A, B) WITHIN 5 s", src)
    with pytest.raises(cepvec.CepvecTypeError, match="takes a streaming DataFrame"):
        cepvec.stream(QUERIES["aseq"], spark.read.parquet(str(tmp_path / "in")))
    with pytest.raises(cepvec.CepvecPlanError, match="late must be one of 'drop', 'error', 'side'"):
        cepvec.stream(QUERIES["aseq"], src, late="keep")

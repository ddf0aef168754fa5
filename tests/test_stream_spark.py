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
twice. Streams run side by side (``availableNow``) to keep the file short
(one Spark session start, four streams of four micro-batches: three files and
the batch without data that the last watermark triggers). Each micro-batch
costs about a second whatever its size (measured), so the streams keep few
micro-batches and two state partitions.
"""

from __future__ import annotations

import polars as pl
import pytest
from polars.testing import assert_frame_equal

pytest.importorskip("pyspark", reason="the Spark tests need pyspark: pip install 'cepvec[spark]'")

from pyspark.errors import StreamingQueryException  # noqa: E402

import cepvec  # noqa: E402

from .stream_sim import QUERIES, events, feeds, flush_event, split_late, watermarks, write_batches  # noqa: E402

pytestmark = [pytest.mark.spark, pytest.mark.filterwarnings("ignore::cepvec.errors.CepvecWarning")]

DELAY_S = 10
SCHEMA = "type STRING, time BIGINT, id BIGINT, v BIGINT"


@pytest.fixture(autouse=True)
def two_state_partitions(spark):
    """The streams' state stores in 2 partitions, not the session's 4: each partition is a Python task per
    micro-batch (a fifth of a micro-batch's time here). The number is fixed in a checkpoint at its first start."""
    before = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", "2")
    yield
    spark.conf.set("spark.sql.shuffle.partitions", before)


def stream_batches(seed: int, batches: int = 3) -> list[pl.DataFrame]:
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


def test_stream_gives_run_on_in_time_events_and_restarts(spark, tmp_path):
    """A-Seq GROUP-BY (a state key per id), GRETA Kleene with an edge predicate (hash buckets; stopped after two
    micro-batches, which leaves the windows the watermark has not passed unwritten, and restarted from its
    checkpoint with the rest), negation without GROUP-BY (window-block keys, late events as a side output), EMIT
    CHANGES on a timestamp column: four streams side by side."""
    batches = stream_batches(14)
    kept, late = split_late(batches, DELAY_S * 1000)
    assert len(late) >= 3 and len(kept) + len(late) == sum(map(len, batches))
    write_batches(batches, tmp_path / "in")
    write_batches(batches[:2], tmp_path / "in_kleene")
    write_batches([b.with_columns(pl.from_epoch("time", "s").dt.replace_time_zone("UTC")) for b in batches],
                  tmp_path / "in_emit")
    ts_schema = SCHEMA.replace("time BIGINT", "time TIMESTAMP")
    runs = {"aseq": dict(buckets=None), "kleene": dict(buckets=3, checkpoint=str(tmp_path / "ck_kleene")),
            "negation": dict(late="side"), "emit": {}}

    def run(name):
        src = source(spark, tmp_path / ("in_" + name if name in ("kleene", "emit") else "in"),
                     ts_schema if name == "emit" else SCHEMA)
        out = cepvec.stream(QUERIES[name], src, watermark=f"{DELAY_S} seconds", **runs[name])
        return start(out, tmp_path / f"out_{name}", tmp_path / f"ck_{name}")

    queries = {name: run(name) for name in runs}
    for query in queries.values():
        query.awaitTermination()
    # the Kleene stream stopped: rows are written for exactly the windows the last watermark passed
    # (window_end - 1 at or below it, in seconds); the later windows stay open in the state
    first = read(spark, tmp_path / "out_kleene")
    closed = watermarks(batches[:2], DELAY_S * 1000)[-1] // 1000
    same_rows(first, cepvec.run(QUERIES["kleene"], kept).filter(pl.col("window_end") - 1 <= closed))
    n_first = len(first)
    # restart: the rest of the Kleene stream's files, the same checkpoint
    write_batches(batches[2:], tmp_path / "in_kleene", start=2)
    restarted = run("kleene")
    restarted.awaitTermination()
    for name, query in queries.items():
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
        if name == "kleene":
            assert 0 < n_first < len(got)
            assert not got.select("id", "window_start").is_duplicated().any()
            assert late_count(query) + late_count(restarted) == len(late)
        else:
            assert late_count(query) == len(late), name
        same_rows(got, want)
    # the checkpoint remembers the query and the state layout: another one would misread its state
    src = source(spark, tmp_path / "in")
    other = QUERIES["kleene"].replace("WITHIN 20 s", "WITHIN 30 s")
    with pytest.raises(cepvec.CepvecPlanError, match="holds the state of a cepvec stream with another query"):
        cepvec.stream(other, src, **runs["kleene"])
    with pytest.raises(cepvec.CepvecPlanError, match="another buckets .*3 there, 4 now"):
        cepvec.stream(QUERIES["kleene"], src, **{**runs["kleene"], "buckets": 4})


def test_a_failed_micro_batch_is_rerun_from_the_checkpoint(spark, tmp_path):
    """late="error" stops the query inside the micro-batch with the first late event (its tasks fail, some may
    have run); restarted from the checkpoint with late="drop", that micro-batch runs again from the last
    committed state: the rows are cepvec.run's on the in-time events, each once, and every late event counted."""
    text = QUERIES["kleene"]
    batches = stream_batches(21)
    kept, late = split_late(batches, DELAY_S * 1000)
    write_batches(batches, tmp_path / "in")
    ck, out = tmp_path / "ck", tmp_path / "out"
    failing = start(cepvec.stream(text, source(spark, tmp_path / "in"), watermark="10 s", late="error",
                                  checkpoint=str(ck)), out, ck)
    with pytest.raises(StreamingQueryException, match=r"late event\(s\) in this micro-batch: the event at time ="):
        failing.awaitTermination()
    done = len(failing.recentProgress)
    assert 0 < done < len(batches)  # it failed in a later micro-batch, after committing some
    rerun = start(cepvec.stream(text, source(spark, tmp_path / "in"), watermark="10 s", checkpoint=str(ck)), out, ck)
    rerun.awaitTermination()
    got = read(spark, out)
    assert not got.select("id", "window_start").is_duplicated().any()
    same_rows(got, cepvec.run(text, kept))
    assert late_count(rerun) == len(late)


def test_refusals(spark, tmp_path):
    write_batches([events(1, n=5)], tmp_path / "in")
    src = source(spark, tmp_path / "in")
    with pytest.raises(cepvec.CepvecQueryError, match="has WITHIN without SLIDE or EMIT CHANGES"):
        cepvec.stream("RETURN COUNT(*) PATTERN SEQ(A, B) WITHIN 5 s", src)
    with pytest.raises(cepvec.CepvecTypeError, match="takes a streaming DataFrame"):
        cepvec.stream(QUERIES["aseq"], spark.read.parquet(str(tmp_path / "in")))
    with pytest.raises(cepvec.CepvecPlanError, match="late must be one of 'drop', 'error', 'side'"):
        cepvec.stream(QUERIES["aseq"], src, late="keep")


def test_strict_contiguity_keys_its_state_once_whatever_the_group_by():
    """Under strict contiguity an event of any group between two events of a match breaks it, so the
    stream keeps one state key (as ``cepvec.run`` on Spark takes one partition); other queries keep a key
    per GROUP-BY value, per hash bucket of them, per block of windows, or one."""
    from cepvec.spark_adapter.stream import state_keys

    strict = cepvec.compile("RETURN id, COUNT(*) PATTERN SEQ(A, B) WHERE strict_contiguity() { } GROUP-BY id "
                            "WITHIN 10 s SLIDE 10 s")
    grouped = cepvec.compile("RETURN id, COUNT(*) PATTERN SEQ(A, B) GROUP-BY id WITHIN 10 s SLIDE 10 s")
    alone = cepvec.compile("RETURN COUNT(*) PATTERN SEQ(A, B) WITHIN 10 s SLIDE 10 s")
    assert [state_keys(strict, None, None), state_keys(strict, 4, None)] == ["one", "one"]
    assert [state_keys(grouped, None, None), state_keys(grouped, 4, None)] == ["group", "bucket"]
    assert [state_keys(alone, None, 3), state_keys(alone, None, None)] == ["block", "one"]

"""cepvec on Spark: the conformance cases, generated data, mapInArrow as users write it.

Every test uses the one session-scoped ``spark`` fixture (tests/conftest.py:
``local[2]``, 4 shuffle partitions, AQE off, Arrow on, UTC) and is marked
``spark``; deselect them with ``-m "not spark"``. Spark DataFrames have no
row order, so results are compared after sorting by every output column.
The whole file runs in about a minute (session start ~10 s, first Numba
compile in each Python worker ~5 s).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import polars as pl
import pytest

pytest.importorskip("pyspark", reason="the Spark tests need pyspark: pip install 'cepvec[spark]'")

from pyspark.errors import PythonException  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402
from pyspark.sql import types as T  # noqa: E402

import cepvec  # noqa: E402
from cepvec.generators import sequence_abcd, stock_trades, traffic  # noqa: E402
from cepvec.spark_adapter import partition_plan  # noqa: E402

from .conftest import load_shared_cases  # noqa: E402
from .strategies import SLOW  # noqa: E402
from .test_cases import _as_polars, _time_unit, assert_rows_equal  # noqa: E402

pytestmark = [pytest.mark.spark, pytest.mark.filterwarnings("ignore::cepvec.errors.CepvecWarning")]

REL_TOL = 1e-9  # AVG and float sums: Spark and local runs may add in a different order
CASES = load_shared_cases()


# --------------------------------------------------------------------------- helpers


def to_spark(spark, df: pl.DataFrame):
    """A Spark DataFrame with the same column types (int64 with nulls stays BIGINT)."""
    return spark.createDataFrame(df.to_arrow())


def declared_schema(spark, text, sdf) -> T.StructType:
    """The Spark schema of ``cepvec.kernel(text, sdf.schema).schema`` (a DDL string)."""
    return spark.createDataFrame([], cepvec.kernel(text, sdf.schema).schema).schema


def normalize(pdf: pd.DataFrame) -> pd.DataFrame:
    """Sorted by every column, timestamps as naive UTC nanoseconds, fresh index."""
    pdf = pdf.copy()
    for c in pdf.columns:
        if isinstance(pdf[c].dtype, pd.DatetimeTZDtype):
            pdf[c] = pdf[c].dt.tz_convert("UTC").dt.tz_localize(None)
        if pd.api.types.is_datetime64_any_dtype(pdf[c]):
            pdf[c] = pdf[c].astype("datetime64[ns]")
    return pdf.sort_values(list(pdf.columns), na_position="last").reset_index(drop=True)


def assert_frames_equal(got: pd.DataFrame, want: pd.DataFrame, context: str) -> None:
    assert list(got.columns) == list(want.columns), f"{context}: columns {list(got.columns)} != {list(want.columns)}"
    got, want = normalize(got), normalize(want)
    try:
        pd.testing.assert_frame_equal(got, want, check_exact=False, rtol=REL_TOL, atol=1e-12)
    except AssertionError as e:
        raise AssertionError(f"{context}\nSpark:\n{got}\nlocal:\n{want}") from e


# --------------------------------------------------------------------------- shared cases


@pytest.mark.parametrize("case", CASES, ids=[c.get("name") or c["_file"] for c in CASES])
def test_shared_case_on_spark(spark, case):
    events = _as_polars(case)
    unit = _time_unit(case)
    res = cepvec.run(case["query"], to_spark(spark, events), time_unit=unit)
    got = pl.from_arrow(res.toArrow())
    assert_rows_equal(got, case["expected"], f"{case['_file']} (Spark)")
    local = cepvec.run(case["query"], events, time_unit=unit)
    assert got.schema == local.schema
    assert_frames_equal(got.to_pandas(), local.to_pandas(), f"{case['_file']}: Spark vs local")
    # the documented mapInArrow route gives the same rows
    sdf = to_spark(spark, events)
    k = cepvec.kernel(case["query"], sdf.schema, time_unit=unit)
    routed = cepvec.partition(case["query"], sdf, time_unit=unit).mapInArrow(k, k.schema)
    assert_frames_equal(routed.toPandas(), local.to_pandas(), f"{case['_file']}: partition + mapInArrow")


# --------------------------------------------------------------------------- generated data

ABCD = sequence_abcd(n_events=1500, seed=11, n_ids=5, max_gap=2)
STOCK = stock_trades(n_events=800, seed=5, n_companies=6, n_sectors=3)

GENERATED = [
    ("abcd", "RETURN id, COUNT(*), SUM(B.x), AVG(C.v) PATTERN SEQ(A, B, C) WHERE [id] GROUP-BY id WITHIN 20 SLIDE 10"),
    ("abcd", "RETURN COUNT(*), MIN(A.x) PATTERN SEQ(A, B, C) WHERE [id] WITHIN 15"),  # no GROUP-BY: one partition
    ("abcd", "RETURN id, COUNT(*) PATTERN SEQ(A, NOT D, C) GROUP-BY id WITHIN 12 EMIT CHANGES"),
    ("abcd", "RETURN id, COUNT(*), COUNT(A), MAX(A.x) PATTERN (SEQ(A+, B))+ WHERE [id] GROUP-BY id WITHIN 25 SLIDE 40"),
    ("abcd_nulls", "RETURN id, COUNT(*), AVG(B.v) PATTERN SEQ(A, B+) GROUP-BY id WITHIN 10 SLIDE 5"),
    ("stock", "RETURN sector, COUNT(*) PATTERN Stock S+ WHERE [company, sector] AND S.price > NEXT(S).price "
              "GROUP-BY sector WITHIN 20 SLIDE 10"),
    ("stock", "RETURN side, sector, COUNT(*), SUM(S.volume), AVG(S.price) PATTERN Stock S+ WHERE [company] "
              "AND S.price < NEXT(S).price GROUP-BY side, sector WITHIN 15 EMIT CHANGES"),
    # GRETA Q3: qualified equivalence, accidents broadcast to every vehicle of their segment
    ("traffic", "RETURN segment, COUNT(*), AVG(P.speed), MAX(P.speed) PATTERN SEQ(NOT Accident A, Position P+) "
                "WHERE [P.vehicle, segment] AND P.speed > NEXT(P).speed GROUP-BY segment WITHIN 2 minutes "
                "SLIDE 1 minute"),
    # predecessor scan: an edge predicate the Fenwick path refuses, WITHIN alone
    ("stock", "RETURN sector, COUNT(*), MIN(S.price) PATTERN Stock S+ WHERE [company, sector] AND "
              "S.price != NEXT(S).price GROUP-BY sector WITHIN 12"),
]
# string group values with nulls (Spark sorts nulls first, cepvec.run orders them last)
ABCD_NULLS = ABCD.with_columns(
    pl.when(pl.col("id") == 0).then(None).otherwise(pl.format("dev-{}", "id")).alias("id"))
TRAFFIC = traffic(n_events=1200, seed=3, n_vehicles=8, n_segments=3, accident_rate=0.02)
DATA = {"abcd": ABCD, "stock": STOCK, "abcd_nulls": ABCD_NULLS, "traffic": TRAFFIC}


@pytest.fixture(scope="module")
def frames(spark):
    return {name: to_spark(spark, df).cache() for name, df in DATA.items()}


@pytest.mark.parametrize(("data", "text"), [  # the Kleene SLIDE with gaps runs in the slow profile
    pytest.param(d, t, id=f"{d}:{t}", marks=[pytest.mark.slow] if i == 3 else [])
    for i, (d, t) in enumerate(GENERATED)])
def test_generated_data_spark_equals_local(frames, data, text):
    sdf = frames[data]
    res = cepvec.run(text, sdf)
    local = cepvec.run(text, DATA[data])
    assert len(local) > 0, "test data too sparse"
    assert res.schema == declared_schema(sdf.sparkSession, text, sdf)
    assert_frames_equal(res.toPandas(), local.to_pandas(), text)
    # the documented mapInArrow route gives the same rows
    k = cepvec.kernel(text, sdf.schema)
    routed = cepvec.partition(text, sdf).mapInArrow(k, k.schema)
    assert_frames_equal(routed.toPandas(), local.to_pandas(), f"partition + mapInArrow: {text}")


def test_no_group_by_runs_in_one_partition(frames):
    text = GENERATED[1][1]
    assert partition_plan(cepvec.compile(text)).single
    assert "no parallelism" in cepvec.compile(text).explain()
    assert cepvec.run(text, frames["abcd"]).rdd.getNumPartitions() == 1
    grouped = partition_plan(cepvec.compile(GENERATED[0][1]))
    assert grouped.strategy == "key" and grouped.keys == ("id",) and not grouped.single


def test_strict_contiguity_with_group_by_runs_in_one_partition(frames):
    """Strict contiguity: no event of the whole input may lie between two events of a match, those of
    other groups included, so GROUP-BY does not partition the input (per group, A1 -> B3 of id 0 read as
    a match past the C of id 1 at time 2: a differential fuzzer). The rows are the local run's."""
    text = "RETURN id, COUNT(*) PATTERN SEQ(A, B) WHERE strict_contiguity() { } GROUP-BY id WITHIN 10 SLIDE 10"
    plan = partition_plan(cepvec.compile(text))
    assert plan.single and "strict contiguity" in plan.why
    tiny = pl.DataFrame({"type": ["A", "C", "B"], "time": [1, 2, 3], "id": [0, 1, 0]})
    assert cepvec.run(text, tiny).height == 0
    sdf = frames["abcd"]
    assert cepvec.run(text, sdf).rdd.getNumPartitions() == 1
    local = cepvec.run(text, ABCD)
    assert len(local) > 0, "test data too sparse"
    assert_frames_equal(cepvec.run(text, sdf).toPandas(), local.to_pandas(), text)
    assert cepvec.run(text, to_spark(sdf.sparkSession, tiny)).count() == 0


def test_run_executes_the_kernel_in_one_job(frames):
    sc = frames["abcd"].sparkSession.sparkContext
    sc.setJobGroup("cepvec-one-job", "cepvec.run runs the kernel once")
    try:
        cepvec.run(GENERATED[0][1], frames["abcd"]).collect()
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    jobs = sc.statusTracker().getJobIdsForGroup("cepvec-one-job")
    assert len(jobs) == 1, f"{len(jobs)} Spark jobs for one cepvec.run(...).collect()"


# --------------------------------------------------------------------------- SLIDE without GROUP-BY: window replication

# events at multiples of 5 (ties inside a time stamp and on every window boundary)
_rng = np.random.default_rng(3)
TIES = pl.DataFrame({
    "type": _rng.choice(list("ABCD"), 400).tolist(),
    "time": (_rng.integers(0, 60, 400) * 5).tolist(),
    "id": _rng.integers(0, 3, 400).tolist(),
    "x": _rng.integers(0, 100, 400).tolist(),
}).sort("time")
REPLICATED = [
    ("abcd", "RETURN COUNT(*), SUM(B.x), AVG(C.v) PATTERN SEQ(A, B, C) WHERE [id] WITHIN 20 SLIDE 10"),  # w = 2s
    ("abcd", "RETURN COUNT(*), MIN(A.x), MAX(B.x) PATTERN SEQ(A, B+, C) WITHIN 7 SLIDE 3"),  # w not a multiple
    ("abcd", "RETURN COUNT(*) PATTERN SEQ(A, B, C) WHERE [id] WITHIN 6 SLIDE 10"),  # s > w: gaps
    ("abcd", "RETURN COUNT(*), COUNT(A) PATTERN (SEQ(A+, B))+ WHERE [id] WITHIN 12 SLIDE 12"),  # tumbling
    ("ties", "RETURN COUNT(*), SUM(A.x) PATTERN SEQ(A, B+, C) WITHIN 15 SLIDE 5"),  # ties on boundaries
    ("ties", "RETURN COUNT(*) PATTERN SEQ(NOT D, A, B) WHERE [id] WITHIN 20 SLIDE 10"),  # negated start: k*s
    ("ties", "RETURN COUNT(*), MAX(A.x) PATTERN SEQ(A, B, NOT D) WHERE [id] WITHIN 20 SLIDE 15"),  # end: k*s + w
]
DATA["ties"] = TIES


# the gaps, tumbling and negated-end windows run in the slow profile (``pytest --slow``)
_REPLICATED_SLOW = (2, 3, 6)


@pytest.mark.parametrize(("data", "text"), [
    pytest.param(d, t, id=f"{d}:{t}", marks=[pytest.mark.slow] if i in _REPLICATED_SLOW else [])
    for i, (d, t) in enumerate(REPLICATED)])
def test_slide_without_group_by_replicates_windows(spark, frames, data, text):
    sdf = frames[data]
    assert partition_plan(cepvec.compile(text)).strategy == "window"
    res = cepvec.run(text, sdf)
    local = cepvec.run(text, DATA[data])
    assert len(local) > 0, "test data too sparse"
    assert res.schema == declared_schema(spark, text, sdf)
    got = pl.from_arrow(res.toArrow())
    assert got.schema == local.schema
    assert got.equals(local), f"{text}\nSpark:\n{got}\nlocal:\n{local}"  # same rows in the same order
    # small blocks: many block boundaries inside the data
    from cepvec.spark_adapter.run import run_spark

    small = pl.from_arrow(run_spark(cepvec.compile(text), sdf, window_block=3).toArrow())
    assert small.equals(local), f"{text} (3 windows per block)\nSpark:\n{small}\nlocal:\n{local}"
    # the documented mapInArrow route, with the same small blocks
    k = cepvec.kernel(text, sdf.schema, window_block=3)
    routed = cepvec.partition(text, sdf, window_block=3).mapInArrow(k, k.schema)
    assert_frames_equal(routed.toPandas(), local.to_pandas(), f"partition + mapInArrow: {text}")


def test_window_replication_with_timestamps_and_units(spark):
    base = TIES.filter(pl.col("time") >= 0).with_columns(pl.col("time") * 1000 + 1_700_000_000_000)  # ms
    q_ms = "RETURN COUNT(*), SUM(A.x) PATTERN SEQ(A, B, NOT D, C) WITHIN 20 s SLIDE 7 s"
    got = pl.from_arrow(cepvec.run(q_ms, to_spark(spark, base), time_unit="ms").toArrow())
    want = cepvec.run(q_ms, base, time_unit="ms")
    assert len(want) and got.equals(want)
    ts = base.with_columns(pl.col("time").cast(pl.Datetime("ms", "UTC")).dt.cast_time_unit("us"))
    got_ts = cepvec.run(q_ms, to_spark(spark, ts))
    assert got_ts.schema["window_start"].dataType == T.TimestampType()
    assert_frames_equal(got_ts.toPandas(), cepvec.run(q_ms, ts).to_pandas(), "TIMESTAMP")
    # TIMESTAMP_NTZ: windows of the wall-clock value, whatever the session time zone
    ntz = to_spark(spark, base).withColumn(
        "time", F.expr("timestampadd(MILLISECOND, time, TIMESTAMP_NTZ'1970-01-01 00:00:00')"))
    assert ntz.schema["time"].dataType == T.TimestampNTZType()
    spark.conf.set("spark.sql.session.timeZone", "America/New_York")
    try:
        got_ntz = cepvec.run(q_ms, ntz).select(F.unix_micros("window_start").alias("us"), "`COUNT(*)`").collect()
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")
    assert [(r["us"] // 1000, r["COUNT(*)"]) for r in got_ntz] == list(zip(want["window_start"], want["COUNT(*)"]))


@pytest.mark.parametrize("block", [None, 1])  # default blocks (~32 window lengths); one block per window
def test_window_replication_partitions_by_block(spark, frames, block):
    from cepvec.spark_adapter.run import BLOCK_COL, run_spark, stage

    text = "RETURN COUNT(*), SUM(A.x) PATTERN SEQ(A, B+, C) WITHIN 15 SLIDE 5"
    q = cepvec.compile(text)
    sdf = frames["ties"]
    staged, k, plan = stage(q, sdf, window_block=block)
    assert plan.block == 96 and k.tag_block == (block or 96)
    assert "blocks of 96 consecutive windows" in q.explain()
    physical = staged._jdf.queryExecution().executedPlan().toString()
    assert f"hashpartitioning({BLOCK_COL}" in physical and "Generate explode" in physical, physical
    # every event once per block of B windows [5k, 5k + 15), k >= 0, holding a window that contains it
    B = block or 96
    want = 0
    for t in TIES["time"].to_list():
        kmin, kmax = max(0, -(-(t - 14) // 5)), t // 5
        want += len(range(kmin // B, kmax // B + 1)) if kmin <= kmax else 0
    assert staged.count() == want
    where = staged.select(BLOCK_COL, F.spark_partition_id().alias("p")).distinct().toPandas()
    assert where[BLOCK_COL].is_unique  # each block in exactly one partition
    if block == 1:  # ceil(w/s) = 3 copies of an event, the windows spread over the partitions
        assert want > 2.5 * len(TIES.filter(pl.col("time") >= 0)) and where["p"].nunique() > 1
    got = pl.from_arrow(run_spark(q, sdf, window_block=block).toArrow())
    assert got.equals(cepvec.run(text, TIES))


# --------------------------------------------------------------------------- mapInArrow as a user writes it

USER_QUERY = "RETURN id, COUNT(*), SUM(B.x) PATTERN SEQ(A, B+, C) WHERE [id] GROUP-BY id WITHIN 20 SLIDE 10"


def test_map_in_arrow_with_a_schemaless_kernel(frames):
    df = frames["abcd"]
    q = USER_QUERY
    out = cepvec.partition(q, df).mapInArrow(cepvec.kernel(q), cepvec.kernel(q).schema)
    assert out.schema.simpleString() == (
        "struct<id:string,window_start:bigint,window_end:bigint,COUNT(*):bigint,SUM(B.x):double>")
    want = cepvec.run(q, ABCD).with_columns(pl.col("id").cast(pl.String), pl.col("SUM(B.x)").cast(pl.Float64))
    assert len(want)
    assert_frames_equal(out.toPandas(), want.to_pandas(), "schema-less kernel")


def test_map_in_arrow_with_the_input_schema(frames):
    df = frames["abcd"]
    k = cepvec.kernel(USER_QUERY, df.schema)
    out = cepvec.partition(USER_QUERY, df).mapInArrow(k, k.schema)
    assert out.schema.simpleString() == (
        "struct<id:bigint,window_start:bigint,window_end:bigint,COUNT(*):bigint,SUM(B.x):bigint>")
    assert_frames_equal(out.toPandas(), cepvec.run(USER_QUERY, ABCD).to_pandas(), "kernel(q, df.schema)")


KEYLESS = "RETURN COUNT(*), SUM(B.x) PATTERN SEQ(A, B+, C) WHERE [id] WITHIN 20"
NOT_LAID_OUT = "this mapInArrow input was not laid out by cepvec.partition"
MOVED = "the DataFrame was repartitioned or coalesced after cepvec.partition"
REORDERED = "the rows were reordered after cepvec.partition"


def _raises_in_worker(df, k, cls, *fragments):
    """The kernel raises ``cls`` in a task; cepvec.spark_errors gives it back on the driver, message first."""
    with pytest.raises(cepvec.CepvecError) as e, cepvec.spark_errors():
        df.mapInArrow(k, k.schema).collect()
    msg = str(e.value)
    assert isinstance(e.value.spark_exception, PythonException)
    assert "Traceback" not in msg and "SQLSTATE" not in msg, msg
    if MOVED in fragments and REORDERED in msg:
        # a task that kept its own partition id may fail first, on the order the shuffle scrambled
        cls, fragments = cepvec.CepvecDataError, (REORDERED, "goes back in time")
    assert type(e.value) is cls, f"{type(e.value).__name__}: {msg}"
    for f in fragments:
        assert f in msg, msg


# Each failed task costs Spark new Python workers (about 1 CPU-s each: cepvec imported, its kernels
# loaded), so the default profile fails each check of the kernel's input once; the variants that take a
# check already failed (a keyless query, a user's own repartition, a shuffle by another key) run with --slow.
_VARIANT = [pytest.mark.slow]


@pytest.mark.parametrize("text", [USER_QUERY, pytest.param(KEYLESS, marks=_VARIANT)])
def test_skipping_the_partition_step_raises(frames, text):
    df = frames["abcd"]
    k = cepvec.kernel(text, df.schema)
    assert df.rdd.getNumPartitions() > 1
    _raises_in_worker(df, k, cepvec.CepvecPlanError, NOT_LAID_OUT, "cepvec.partition(q, df).mapInArrow(k, k.schema)")
    if text == KEYLESS:
        return
    if SLOW:  # the user's own repartition and sort are not enough: the kernel cannot check them
        _raises_in_worker(df.repartition("id").sortWithinPartitions("id", "time"), k, cepvec.CepvecPlanError,
                          NOT_LAID_OUT)
    # the short form without a schema, straight on the DataFrame (it gave 2 partial rows before the checks)
    _raises_in_worker(df, cepvec.kernel(text), cepvec.CepvecPlanError, NOT_LAID_OUT)


@pytest.mark.parametrize("text", [USER_QUERY, pytest.param(KEYLESS, marks=_VARIANT)])
def test_a_shuffle_after_partition_raises(frames, text):
    df = frames["abcd"]
    k = cepvec.kernel(text, df.schema)
    laid_out = cepvec.partition(text, df)
    # several partitions (a keyless query's one partition spread over 3)
    _raises_in_worker(laid_out.repartition(3), k, cepvec.CepvecPlanError, MOVED)
    if SLOW:
        _raises_in_worker(laid_out.repartition(4, "type"), k, cepvec.CepvecPlanError, MOVED)  # wrong key
    if text == USER_QUERY:  # 4 partitions into 1
        _raises_in_worker(laid_out.coalesce(1), k, cepvec.CepvecPlanError, MOVED, "rows tagged for Spark partition 0..")


def test_unsorted_partition_raises(frames):
    df = frames["abcd"]
    k = cepvec.kernel(USER_QUERY, df.schema)
    laid_out = cepvec.partition(USER_QUERY, df).sortWithinPartitions(F.col("time").desc())
    _raises_in_worker(laid_out, k, cepvec.CepvecDataError, "goes back in time", REORDERED)


def test_partition_for_another_query_raises(frames):
    df = frames["abcd"]
    k = cepvec.kernel(USER_QUERY, df.schema)
    other = USER_QUERY.replace("WITHIN 20", "WITHIN 30")
    _raises_in_worker(cepvec.partition(other, df), k, cepvec.CepvecPlanError,
                      "laid out by cepvec.partition for another query")


def test_a_worker_with_another_cepvec_raises(frames):
    import dataclasses

    df = frames["abcd"]
    k = cepvec.kernel(USER_QUERY, df.schema)
    # as built by a driver with other cepvec sources
    elsewhere = dataclasses.replace(k, cepvec_build=k.cepvec_build.partition(":")[0] + ":" + "0" * 16)
    _raises_in_worker(cepvec.partition(USER_QUERY, df), elsewhere, cepvec.CepvecPlanError,
                      "the Spark workers run another copy of cepvec", "set PYSPARK_PYTHON")


def test_data_errors_come_back_as_cepvec_errors(spark, frames):
    nulls = frames["abcd"].withColumn("time", F.when(F.col("time") == 7, None).otherwise(F.col("time")))
    with pytest.raises(cepvec.CepvecDataError, match=r"^time column 'time' has \d+ null value\(s\)") as e, \
            cepvec.spark_errors():
        cepvec.run(USER_QUERY, nulls).collect()
    assert str(e.value).endswith("Drop or fill those rows"), str(e.value)
    # other errors pass unchanged
    with pytest.raises(PythonException, match="ZeroDivisionError"), cepvec.spark_errors():
        frames["abcd"].mapInArrow(lambda it: (b for b in it if 1 / 0), "id BIGINT").collect()


def test_spark_error_text_is_parsed():
    from cepvec.spark_adapter import cepvec_error

    tb = ("An exception was thrown from the Python worker:\nTraceback (most recent call last):\n"
          '  File "x.py", line 1, in f\n')
    err = cepvec_error(PythonException(tb + "cepvec.errors.CepvecOverflowError: SUM overflows int64\n"
                                            "second line\n SQLSTATE: 38000\n\nJVM stacktrace:\n\tat org.x"))
    assert type(err) is cepvec.CepvecOverflowError and str(err) == "SUM overflows int64\nsecond line"
    missing = cepvec_error(PythonException(tb + "ModuleNotFoundError: No module named 'cepvec'"))
    assert isinstance(missing, cepvec.CepvecPlanError) and "set PYSPARK_PYTHON" in str(missing).replace("Set", "set")
    # a cepvec error followed by another exception, or none at all: not a cepvec error
    assert cepvec_error(PythonException(tb + "cepvec.errors.CepvecDataError: x\n\nDuring handling of the above "
                                             "exception, another exception occurred:\n\nKeyError: 1")) is None
    assert cepvec_error(PythonException(tb + "KeyError: 1")) is None
    assert cepvec_error(ValueError("cepvec.errors.CepvecDataError: x")) is None


def test_bad_schema_is_refused_on_the_driver(frames, spark):
    df = frames["abcd"]
    as_string = df.withColumn("time", F.col("time").cast("string"))
    with pytest.raises(cepvec.CepvecTypeError, match="time column 'time' must be an integer or a timestamp"):
        cepvec.kernel(USER_QUERY, as_string.schema)
    with pytest.raises(cepvec.CepvecTypeError, match="time column 'time' must be an integer or a timestamp"):
        cepvec.partition(USER_QUERY, as_string)
    with pytest.raises(cepvec.CepvecTypeError, match="time column 'time' must be an integer or a timestamp"):
        cepvec.run(USER_QUERY, df.withColumn("time", F.col("time").cast("double")))
    with pytest.raises(cepvec.CepvecPlanError, match="the input schema has no column 'time' that the query reads"):
        cepvec.run(USER_QUERY, df.drop("time"))
    with pytest.raises(cepvec.CepvecTypeError, match="type column 'type' must hold event type names"):
        cepvec.kernel(USER_QUERY, df.withColumn("type", F.lit(1)).schema)
    with pytest.raises(cepvec.CepvecTypeError, match="predicate B.x > 'abc' compares column 'x'"):
        cepvec.run("RETURN COUNT(*) PATTERN SEQ(A, B) WHERE B.x > 'abc'", df)
    with pytest.raises(cepvec.CepvecTypeError, match="cepvec.partition takes a Spark DataFrame"):
        cepvec.partition(USER_QUERY, ABCD)
    with pytest.raises(cepvec.CepvecTypeError, match="events is a Spark RDD"):
        cepvec.run(USER_QUERY, df.rdd)


# --------------------------------------------------------------------------- empty input


@pytest.mark.parametrize("text", [GENERATED[0][1], GENERATED[1][1], GENERATED[2][1]])
def test_empty_dataframe_gives_empty_result_with_the_right_columns(spark, frames, text):
    empty = spark.createDataFrame([], frames["abcd"].schema)
    res = cepvec.run(text, empty)
    local = cepvec.run(text, ABCD.head(0))
    assert res.columns == local.columns
    assert res.schema == declared_schema(spark, text, empty)
    assert res.count() == 0


# --------------------------------------------------------------------------- timestamps


def test_timestamp_time_column_gives_timestamp_windows(spark, frames):
    texts = ["RETURN id, COUNT(*), SUM(B.x) PATTERN SEQ(A, B+, C) WHERE [id] GROUP-BY id WITHIN 20 s SLIDE 10 s",
             "RETURN id, COUNT(*) PATTERN SEQ(A, NOT D, C) GROUP-BY id WITHIN 12 seconds EMIT CHANGES"]
    offset = 1_700_000_000  # seconds since the epoch: a realistic date
    sdf = frames["abcd"].withColumn("time", F.timestamp_seconds(F.col("time") + offset))
    assert sdf.schema["time"].dataType == T.TimestampType()
    local_df = ABCD.with_columns(((pl.col("time") + offset) * 1_000_000).cast(pl.Datetime("us", "UTC")))
    for text in texts:
        res = cepvec.run(text, sdf)
        tcols = ["window_start", "window_end"] if "SLIDE" in text else ["time"]
        for c in tcols:
            assert res.schema[c].dataType == T.TimestampType(), res.schema
        local = cepvec.run(text, local_df)
        assert len(local)
        got = res.toPandas()
        assert_frames_equal(got, local.to_pandas(), text)
        # the same instants as the integer run over the same epoch seconds (SLIDE windows start at
        # k * SLIDE >= 0 from the epoch, so the offset must be kept, not subtracted afterwards)
        ints = cepvec.run(text, ABCD.with_columns(pl.col("time") + offset))
        ints = ints.sort(list(cepvec.compile(text).group_labels) + tcols[:1])
        got = normalize(got)
        for c in tcols:
            assert (got[c].astype("int64") // 10**9).tolist() == ints[c].to_list()
    # a schema-less kernel takes the layout (time unit, window blocks) from the batches' timestamp type
    text = "RETURN COUNT(*), SUM(B.x) PATTERN SEQ(A, B+, C) WHERE [id] WITHIN 20 s SLIDE 10 s"  # replicated
    k = cepvec.kernel(text)
    got = cepvec.partition(text, sdf).mapInArrow(k, k.schema).toPandas()
    want = cepvec.run(text, local_df).with_columns(pl.col("window_start", "window_end").dt.epoch("us"),
                                                   pl.col("SUM(B.x)").cast(pl.Float64))
    assert len(want)
    assert_frames_equal(got, want.to_pandas(), f"schema-less kernel on timestamps: {text}")


def test_no_progress_bar_in_spark_tasks(spark):
    # CEPVEC_PROGRESS=1 forces bars on the driver, never in a Spark task (nobody reads a worker's stderr)
    def probe(batches):
        import os

        import pyarrow as pa

        from cepvec.runtime import progress

        os.environ["CEPVEC_PROGRESS"] = "1"
        for _ in batches:
            pass
        yield pa.RecordBatch.from_pydict({"on": [progress.bar_enabled()], "worker": [progress.on_spark_worker()]})

    rows = spark.range(4, numPartitions=2).mapInArrow(probe, "on boolean, worker boolean").collect()
    assert rows and all(r.worker and not r.on for r in rows)


def test_min_max_of_a_decimal_column_on_spark(spark):
    """A Spark DECIMAL column's MIN / MAX (the output type had no Spark mapping; found by a fuzzer)."""
    from decimal import Decimal

    sdf = spark.createDataFrame([("A", 1, Decimal("1.50")), ("B", 2, Decimal("2.25")), ("B", 3, Decimal("-1.00"))],
                                "type STRING, time BIGINT, v DECIMAL(10,2)")
    got = cepvec.run("RETURN MAX(B.v), MIN(B.v) PATTERN SEQ(A, B)", sdf).collect()
    assert [tuple(r) for r in got] == [(Decimal("2.25"), Decimal("-1.00"))]

"""``cepvec.run(query, spark_df)``: repartition, sort within partitions, mapInArrow.

The partitioning follows the query's shape (:func:`cepvec.arrow_kernel.partition_plan`):
by the GROUP-BY attributes; for SLIDE queries without GROUP-BY by block of
windows, after copying every event to the blocks with a window that contains
it; otherwise in one partition.
"""

from __future__ import annotations

try:
    from pyspark.sql import Column, DataFrame
    from pyspark.sql import functions as F
    from pyspark.sql import types as T
except ImportError as e:  # pragma: no cover - exercised only without pyspark
    raise ImportError(
        "cepvec.spark_adapter needs PySpark: pip install 'cepvec[spark]' (pyspark>=4, pandas>=2.2,<3)"
    ) from e

from cepvec.arrow_kernel import BLOCK_COL, PART_COL, PLAN_COL, TAG_COLS, Kernel, PartitionPlan, make_kernel, \
    partition_plan
from cepvec.errors import CepvecPlanError, CepvecTypeError
from cepvec.runtime.prepare import TIME_UNITS, duration_to_units
from cepvec.plan.ir import Query

_NTZ_EPOCH = "TIMESTAMP_NTZ'1970-01-01 00:00:00'"


def _col(name: str) -> Column:
    return F.col(f"`{name}`")


def time_in_units(q: Query, df: DataFrame, time_unit: str | None) -> tuple[Column, str]:
    """The time column as a BIGINT in the unit the kernel computes in, and that unit.

    Mirrors :func:`cepvec.runtime.prepare.prepare`: integers count ``time_unit``
    (default seconds); Spark timestamps reach the kernel as microseconds (the
    instant for TIMESTAMP, the wall-clock value for TIMESTAMP_NTZ); dates
    count seconds.
    """
    dt = df.schema[q.time_col].dataType
    t = _col(q.time_col)
    if isinstance(dt, T.IntegralType):
        unit = time_unit or "s"
        if unit not in TIME_UNITS:
            raise CepvecPlanError(f"time_unit must be one of {', '.join(TIME_UNITS)}; found {unit!r}")
        return t.cast("long"), unit
    if isinstance(dt, (T.TimestampType, T.TimestampNTZType)):
        if time_unit is not None and time_unit != "us":
            raise CepvecPlanError(
                f"time_unit={time_unit!r} was given but time column '{q.time_col}' is a timestamp in 'us'; "
                "a timestamp carries its own unit, drop time_unit")
        if isinstance(dt, T.TimestampType):
            return F.unix_micros(t), "us"
        return F.expr(f"timestampdiff(MICROSECOND, {_NTZ_EPOCH}, `{q.time_col}`)"), "us"
    if isinstance(dt, T.DateType):
        return F.unix_date(t).cast("long") * 86_400, "s"
    raise CepvecTypeError(
        f"time column '{q.time_col}' must be an integer or a timestamp; found {dt.simpleString()}. Cast it, "
        f"e.g. F.col('{q.time_col}').cast('long'), or convert with F.to_timestamp")


def slide_units(q: Query, df: DataFrame, time_unit: str | None) -> tuple[Column, int, int]:
    """The time as BIGINT in the kernel's unit, and WITHIN and SLIDE in that unit."""
    t, unit = time_in_units(q, df, time_unit)
    return t, duration_to_units(q.window.within, unit, "WITHIN"), duration_to_units(q.window.slide, unit, "SLIDE")


def replicate_to_blocks(q: Query, df: DataFrame, time_unit: str | None, block: int) -> DataFrame:
    """One copy of each event per block of ``block`` windows that has a window containing it (BLOCK_COL).

    The windows ``k >= 0`` with ``k*s <= t < k*s + w`` run from
    ``kmin = max(0, floor((t - w) / s) + 1)`` to ``kmax = floor(t / s)``; the
    event goes to blocks ``kmin div block .. kmax div block`` (none for an
    event in a gap between windows, ``s > w``; block 0 for an event before
    time 0, which the kernel then refuses as the local run does). Integer
    arithmetic throughout (no doubles: nanosecond times exceed 2**53).
    """
    t, w, s = slide_units(q, df, time_unit)
    tmp = {"t": "__cepvec_t", "lo": "__cepvec_kmin", "hi": "__cepvec_kmax"}

    def floor_div(expr: str) -> Column:  # floor(x / s) for BIGINT x (div truncates towards zero)
        return F.expr(f"(({expr}) - pmod(({expr}), {s}L)) div {s}L")

    out = df.withColumn(tmp["t"], t)
    out = out.withColumn(tmp["lo"], F.greatest(F.lit(0).cast("long"), floor_div(f"{tmp['t']} - {w}L") + 1))
    out = out.withColumn(tmp["hi"], floor_div(tmp["t"]))
    # an event before time 0 goes to block 0, where the kernel reports it (docs/semantics.md 6)
    negative = F.col(tmp["t"]) < 0
    out = out.where((F.col(tmp["lo"]) <= F.col(tmp["hi"])) | negative)
    blocks = F.when(negative, F.array(F.lit(0).cast("long"))).otherwise(
        F.sequence(F.expr(f"{tmp['lo']} div {block}L"), F.expr(f"{tmp['hi']} div {block}L")))
    return out.withColumn(BLOCK_COL, F.explode(blocks)).drop(*tmp.values())


def stage(q: Query, df: DataFrame, *, engine: str = "auto", time_unit: str | None = None,
          numeric: str = "int64", window_block: int | None = None) -> tuple[DataFrame, Kernel, PartitionPlan]:
    """The partitioned, sorted and tagged input of the kernel, the kernel, and the plan (before mapInArrow).

    ``window_block`` (window replication only): windows per block; default
    :func:`cepvec.arrow_kernel.window_block`, 1 gives one block per window
    (``ceil(w/s)`` copies of each event, one kernel run per window).
    The schema is validated (and the kernel built) before any Spark job runs.
    """
    plan = partition_plan(q)
    check_input(df, window_block)
    if q.time_col in df.columns:
        time_in_units(q, df, time_unit)  # a time column of the wrong type, in Spark's terms
    # partitions by key are sorted by time alone: one engine run per partition, however many keys
    k = make_kernel(q, schema=df.schema, time_unit=time_unit, numeric=numeric, engine=engine,
                    spark_window_block=window_block)
    staged = lay_out(q, df, {q.type_col, q.time_col, *q.attributes}, k, time_unit)
    return staged, k, plan


def lay_out(q: Query, df: DataFrame, columns: set, k, time_unit: str | None) -> DataFrame:
    """``df`` partitioned as ``q`` needs (:func:`partition_plan`), sorted, tagged for kernel ``k``.

    ``columns``: the columns that cross to Python (those the kernel's queries read); ``k`` gives the tag
    (``plan_tag``) and the windows per block (``tag_block``). A workload kernel lays out its input by any
    one of its queries (they all have one layout).
    """
    plan = partition_plan(q)
    df = df.select(*[_col(c) for c in df.columns if c in columns])
    time = _col(q.time_col)
    n = int(df.sparkSession.conf.get("spark.sql.shuffle.partitions"))
    if plan.strategy == "key":
        cols = [_col(c) for c in plan.keys]
        staged = df.repartition(n, *cols).sortWithinPartitions(time)
    elif plan.strategy == "window":
        b = F.col(BLOCK_COL)
        staged = replicate_to_blocks(q, df, time_unit, k.tag_block).repartition(n, b).sortWithinPartitions(b, time)
    else:
        staged = df.repartition(1).sortWithinPartitions(time)
    # tags: the partition each row sits in (evaluated in the same stage as mapInArrow) and the plan
    return staged.withColumn(PART_COL, F.spark_partition_id()).withColumn(PLAN_COL, F.lit(k.plan_tag))


def check_input(df: DataFrame, window_block: int | None) -> None:
    """Driver-side checks of ``cepvec.partition`` and ``cepvec.run`` that do not depend on the query."""
    clash = [c for c in TAG_COLS if c in df.columns]
    if clash:
        raise CepvecPlanError(f"the input has a column named {clash[0]!r}, which cepvec uses itself; rename it")
    if window_block is not None and (not isinstance(window_block, int) or window_block < 1):
        raise CepvecPlanError(f"window_block must be a positive integer; found {window_block!r}")


def result_order(q: Query, out: DataFrame) -> DataFrame:
    """``out`` (``q``'s rows) in one partition, ordered like the local result (by group, then time)."""
    order = [_col(c).asc_nulls_last() for c in q.group_labels]
    if q.window.kind == "slide":
        order.append(F.col("window_start"))
    elif q.window.kind == "emit":
        order.append(_col(q.time_col))
    # orderBy would sample the mapInArrow output first and so run every kernel twice;
    # results are small (one row per group and window): gather them and sort in one task
    return out.repartition(1).sortWithinPartitions(*order) if order else out


def partition(q: Query, df: DataFrame, *, time_unit: str | None = None, window_block: int | None = None) -> DataFrame:
    """``df`` laid out for ``cepvec.kernel(q, df.schema)``: see :func:`cepvec.partition`."""
    staged, _, _ = stage(q, df, time_unit=time_unit, window_block=window_block)
    return staged


def run_spark(q: Query, df: DataFrame, *, engine: str = "auto", time_unit: str | None = None,
              numeric: str = "int64", window_block: int | None = None) -> DataFrame:
    """Distribute ``q`` over a Spark DataFrame; same columns and rows as the local run.

    Rows come back in one partition, ordered like the local result (by group,
    then time). ``window_block``: see :func:`stage`.
    """
    staged, k, _ = stage(q, df, engine=engine, time_unit=time_unit, numeric=numeric, window_block=window_block)
    return result_order(q, staged.mapInArrow(k, k.schema))

"""``cepvec.run(query, spark_df)``: repartition, sort within partitions, mapInArrow.

The partitioning follows the query's shape (:func:`cepvec.arrow_kernel.partition_plan`):
by the GROUP-BY attributes; for SLIDE queries without GROUP-BY by window id,
after replicating every event to the windows that contain it; otherwise in
one partition.
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

from cepvec.arrow_kernel import Kernel, PartitionPlan, make_kernel, partition_plan
from cepvec.errors import CepvecPlanError, CepvecTypeError
from cepvec.frontend import TIME_UNITS, duration_to_units
from cepvec.query import Query

WINDOW_COL = "__cepvec_window"  # window id k of a replicated event (SLIDE windows [k*s, k*s + w))
_NTZ_EPOCH = "TIMESTAMP_NTZ'1970-01-01 00:00:00'"


def _col(name: str) -> Column:
    return F.col(f"`{name}`")


def time_in_units(q: Query, df: DataFrame, time_unit: str | None) -> tuple[Column, str]:
    """The time column as a BIGINT in the unit the kernel computes in, and that unit.

    Mirrors :func:`cepvec.frontend.prepare`: integers count ``time_unit``
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


def replicate_to_windows(q: Query, df: DataFrame, time_unit: str | None) -> DataFrame:
    """One copy of each event per SLIDE window ``k >= 0`` with ``k*s <= t < k*s + w``, id in WINDOW_COL.

    ``k`` runs from ``floor((t - w) / s) + 1`` (at least 0) to ``floor(t / s)``:
    ``ceil(w / s)`` copies at most, none for an event in a gap between
    windows (``s > w``) or before time 0. Integer arithmetic throughout (no
    doubles: nanosecond times exceed 2**53).
    """
    t, unit = time_in_units(q, df, time_unit)
    w = duration_to_units(q.window.within, unit, "WITHIN")
    s = duration_to_units(q.window.slide, unit, "SLIDE")
    tmp = {"t": "__cepvec_t", "lo": "__cepvec_kmin", "hi": "__cepvec_kmax"}

    def floor_div(expr: str) -> Column:  # floor(x / s) for BIGINT x (div truncates towards zero)
        return F.expr(f"(({expr}) - pmod(({expr}), {s}L)) div {s}L")

    out = df.withColumn(tmp["t"], t)
    out = out.withColumn(tmp["lo"], F.greatest(F.lit(0).cast("long"), floor_div(f"{tmp['t']} - {w}L") + 1))
    out = out.withColumn(tmp["hi"], floor_div(tmp["t"]))
    out = out.where(F.col(tmp["lo"]) <= F.col(tmp["hi"]))
    out = out.withColumn(WINDOW_COL, F.explode(F.sequence(F.col(tmp["lo"]), F.col(tmp["hi"]))))
    return out.drop(*tmp.values())


def stage(q: Query, df: DataFrame, *, engine: str = "auto", time_unit: str | None = None,
          numeric: str = "int64") -> tuple[DataFrame, Kernel, PartitionPlan]:
    """The partitioned and sorted input of the kernel, the kernel, and the plan (before mapInArrow)."""
    plan = partition_plan(q)
    if WINDOW_COL in df.columns:
        raise CepvecPlanError(f"the input has a column named {WINDOW_COL!r}, which cepvec.run uses itself; "
                              "rename it")
    k = make_kernel(q, schema=df.schema, time_unit=time_unit, numeric=numeric, engine=engine,
                    window_col=WINDOW_COL if plan.strategy == "window" else None)
    # only the columns the query reads cross to Python
    needed = [c for c in df.columns if c in {q.type_col, q.time_col, *q.attributes}]
    df = df.select(*[_col(c) for c in needed])
    time = _col(q.time_col)
    n = int(df.sparkSession.conf.get("spark.sql.shuffle.partitions"))
    if plan.strategy == "key":
        cols = [_col(c) for c in plan.keys]
        staged = df.repartition(n, *cols).sortWithinPartitions(*cols, time)
    elif plan.strategy == "window":
        # by time only, window ids interleaved: one engine run per partition serves all its windows
        # (sorting by (window id, time) would cost one engine run, ~1 ms of Python, per window)
        staged = replicate_to_windows(q, df, time_unit).repartition(n, F.col(WINDOW_COL)).sortWithinPartitions(time)
    else:
        staged = df.repartition(1).sortWithinPartitions(time)
    return staged, k, plan


def run_spark(q: Query, df: DataFrame, *, engine: str = "auto", time_unit: str | None = None,
              numeric: str = "int64") -> DataFrame:
    """Distribute ``q`` over a Spark DataFrame; same columns and rows as the local run.

    Rows come back in one partition, ordered like the local result (by group,
    then time).
    """
    staged, k, _ = stage(q, df, engine=engine, time_unit=time_unit, numeric=numeric)
    out = staged.mapInArrow(k, k.schema)
    order = [_col(c).asc_nulls_last() for c in q.group_labels]
    if q.window.kind == "slide":
        order.append(F.col("window_start"))
    elif q.window.kind == "emit":
        order.append(_col(q.time_col))
    # orderBy would sample the mapInArrow output first and so run every kernel twice;
    # results are small (one row per group and window): gather them and sort in one task
    return out.repartition(1).sortWithinPartitions(*order) if order else out

"""``cepvec.run(query, spark_df)``: repartition, sort within partitions, mapInArrow."""

from __future__ import annotations

from dataclasses import dataclass

try:
    from pyspark.sql import DataFrame
    from pyspark.sql import functions as F
except ImportError as e:  # pragma: no cover - exercised only without pyspark
    raise ImportError(
        "cepvec.spark_adapter needs PySpark: pip install 'cepvec[spark]' (pyspark>=4, pandas>=2.2,<3)"
    ) from e

from cepvec.arrow_kernel import make_kernel
from cepvec.query import Query


@dataclass(frozen=True)
class PartitionPlan:
    """How a query is spread over Spark partitions."""

    keys: tuple[str, ...]  # repartition and sort by these, then by time
    single: bool  # everything in one partition
    why: str


def partition_plan(q: Query) -> PartitionPlan:
    """Partition by the GROUP-BY attributes; without them, run in one partition.

    Every event of a GROUP-BY value must reach the same kernel call, because
    equivalence partitions inside a group share output rows (EMIT CHANGES
    times, sums per window). Without GROUP-BY the result is one group, so the
    whole input goes to one partition.
    """
    if q.group_by:
        return PartitionPlan(tuple(q.group_by), False,
                             f"repartition by the GROUP-BY attributes ({', '.join(q.group_by)}), "
                             f"sort by them and {q.time_col}")
    return PartitionPlan((), True, "no GROUP-BY: the result is one group, computed in one partition "
                                   f"sorted by {q.time_col}")


def run_spark(q: Query, df: DataFrame, *, engine: str = "auto", time_unit: str | None = None,
              numeric: str = "int64") -> DataFrame:
    """Distribute ``q`` over a Spark DataFrame; same columns and rows as the local run.

    Rows come back in one partition, ordered like the local result (by group,
    then time).
    """
    k = make_kernel(q, schema=df.schema, time_unit=time_unit, numeric=numeric, engine=engine)
    plan = partition_plan(q)
    cols = [F.col(f"`{c}`") for c in plan.keys]
    time = F.col(f"`{q.time_col}`")
    if plan.single:
        staged = df.repartition(1).sortWithinPartitions(time)
    else:
        n = df.sparkSession.conf.get("spark.sql.shuffle.partitions")
        staged = df.repartition(int(n), *cols).sortWithinPartitions(*cols, time)
    out = staged.mapInArrow(k, k.schema)
    order = [F.col(f"`{c}`").asc_nulls_last() for c in q.group_labels]
    if q.window.kind == "slide":
        order.append(F.col("window_start"))
    elif q.window.kind == "emit":
        order.append(F.col(f"`{q.time_col}`"))
    # orderBy would sample the mapInArrow output first and so run every kernel twice;
    # results are small (one row per group and window): gather them and sort in one task
    return out.repartition(1).sortWithinPartitions(*order) if order else out

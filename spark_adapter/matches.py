"""``cepvec.matches(query, spark_df)``: repartition by the match partitions, mapInArrow the match kernel.

Every event of a partition (the query's GROUP-BY and equivalence values) must
reach one task; strict contiguity looks at every event of the input, so it
runs in one partition. The kernel (:mod:`cepvec.match_kernel`) sorts each
task's events by time itself.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from cepvec.match_kernel import make_match_kernel
from cepvec.plan.ir import Query


def matches_spark(q: Query, df: DataFrame, *, limit: int | None, time_unit: str | None, engine: str,
                  format: str) -> DataFrame:  # noqa: A002
    """The matches of ``q`` over ``df`` as a Spark DataFrame (see :func:`cepvec.matches`)."""
    k = make_match_kernel(q, schema=df.schema, time_unit=time_unit, engine=engine, format=format, limit=limit)
    keys = [] if q.strategy == "strict-contiguity" else list(q.partition_by)
    laid = df.repartition(*[F.col(f"`{c}`") for c in keys]) if keys else df.repartition(1)
    return laid.mapInArrow(k, k.spark_schema)

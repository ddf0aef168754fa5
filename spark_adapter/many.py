"""``cepvec.run_many(queries, spark_df)`` and ``cepvec.partition(workload, df)``: workloads on Spark.

The queries are split by Spark layout (:func:`cepvec.workload_kernel.layout_groups`:
GROUP-BY attributes, or the window for window replication, or one
partition); each group is one Spark job: one shuffle of the columns its
queries read and one ``mapInArrow`` of a workload kernel, which runs the
shared executor for the queries the sharing plan shares and every other
query on its own path, over each partition's batches once. Each query's frame
is the rows of its name, its columns, in ``cepvec.run``'s order.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from cepvec.errors import CepvecError
from cepvec.plan.ir import Query
from cepvec.sharing.workload import Workload, compile_workload, named
from cepvec.workload_kernel import WorkloadKernel, layout_groups, make_workload_kernel

from .run import _col, check_input, lay_out, result_order, time_in_units

#: the query-name column of the combined result inside run_many (cannot clash with a query's column)
RUN_MANY_QUERY_COL = "__cepvec_query"


class SparkFrames(dict):
    """name -> Spark DataFrame (what ``cepvec.run`` gives for that query), from one job per layout group.

    The combined result of each group's job is persisted (``DataFrame.persist()``), so the first action on
    any of its frames runs the job once and the others read the cached rows; :meth:`unpersist` frees them.
    """

    def __init__(self, frames: dict, combined: list):
        super().__init__(frames)
        self.combined = combined  # the persisted result of each group's job (all its queries' rows)

    def unpersist(self) -> None:
        """Free the cached results of the jobs (the frames stay valid: an action runs the job again)."""
        for c in self.combined:
            c.unpersist()


def stage_workload(queries, df: DataFrame, *, engine: str = "auto", time_unit: str | None = None,
                   numeric: str = "int64", sharing: str = "auto", window_block: int | None = None,
                   query_col: str = "query") -> tuple[DataFrame, WorkloadKernel]:
    """The partitioned, sorted and tagged input of a workload kernel, and the kernel (one layout group).

    Every query is checked against ``df.schema`` on the driver, errors named by query.
    """
    wl = queries if isinstance(queries, Workload) else compile_workload(queries, sharing)
    check_input(df, window_block)
    for name, q in wl.queries.items():
        if q.time_col in df.columns:
            try:
                time_in_units(q, df, time_unit)  # a time column of the wrong type, in Spark's terms
            except CepvecError as exc:
                raise named(exc, name) from None
    k = make_workload_kernel(wl, schema=df.schema, time_unit=time_unit, numeric=numeric, engine=engine,
                             sharing=sharing, spark_window_block=window_block, query_col=query_col)
    columns = {c for q in wl.queries.values() for c in (q.type_col, q.time_col, *q.attributes)}
    return lay_out(next(iter(wl.queries.values())), df, columns, k, time_unit), k


def partition_workload(queries, df: DataFrame, *, time_unit: str | None = None, sharing: str = "auto",
                       window_block: int | None = None) -> DataFrame:
    """``df`` laid out for ``cepvec.kernel(queries, df.schema)``: see :func:`cepvec.partition`."""
    staged, _ = stage_workload(queries, df, time_unit=time_unit, sharing=sharing, window_block=window_block)
    return staged


def run_many_spark(queries, df: DataFrame, *, sharing: str = "auto", engine: str = "auto",
                   numeric: str = "int64", time_unit: str | None = None) -> SparkFrames:
    """Per query the Spark DataFrame ``cepvec.run(query, df)`` returns; one Spark job per layout group."""
    wl = queries if isinstance(queries, Workload) and queries.sharing == sharing else compile_workload(
        queries.queries if isinstance(queries, Workload) else queries, sharing)
    staged = []
    for names in layout_groups(wl.queries):  # every group is checked before any job is built
        sub: dict[str, Query] = {n: wl.queries[n] for n in names}
        staged.append(stage_workload(sub, df, engine=engine, time_unit=time_unit, numeric=numeric, sharing=sharing,
                                     query_col=RUN_MANY_QUERY_COL))
    frames, combined = {}, []
    for inp, k in staged:
        res = inp.mapInArrow(k, k.schema).persist()
        combined.append(res)
        for name, kq in k.kernels.items():
            cols = [_col(c) for c in kq.output_polars_schema]
            rows = res.where(F.col(RUN_MANY_QUERY_COL) == F.lit(name)).select(*cols)
            frames[name] = result_order(wl.queries[name], rows)
    return SparkFrames({n: frames[n] for n in wl.queries}, combined)


__all__ = ["run_many_spark", "partition_workload", "stage_workload", "SparkFrames", "RUN_MANY_QUERY_COL"]

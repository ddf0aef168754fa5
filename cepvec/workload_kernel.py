"""``cepvec.kernel(workload)``: many queries in one ``mapInArrow`` call, on the shared executor.

One kernel runs a whole workload (or a part of it) over each Spark partition:
the queries the sharing plan shares run on one :class:`cepvec.sharing.executor.SharedRun`
per sharing class, every other query on the path ``cepvec.run`` takes, all
fed the same batches once (:class:`cepvec.sharing.run.WorkloadRun`). The loop
over a partition's batches, the partition tags and the order checks are those
of the single-query kernel (:func:`cepvec.arrow_kernel.drive`).

**Output layout (decision).** One fixed Arrow schema for every batch: a
``query`` column (string, the query's name) followed by the union of the
queries' output columns in order of first appearance; a column a query does
not have is null in its rows (a name has one type: the queries of one kernel
share the time column, group labels are input columns, aggregate labels name
their attribute). A query whose output has a column ``query`` is refused.
``WHERE query = name`` and a selection of that query's columns gives
exactly the rows ``cepvec.run`` gives (:func:`cepvec.spark_adapter.many.run_many_spark`
does this).

**Partitioning (decision).** A kernel needs one layout of its input
(:func:`cepvec.arrow_kernel.partition_plan`): every query of the kernel must
be partitioned the same way, i.e. have the same :func:`layout_key`: the same
set of GROUP-BY attributes (hash-partitioned by them), or no GROUP-BY and the
same ``WITHIN ... SLIDE`` window (window replication by blocks), or no
GROUP-BY and no SLIDE (one partition), and the same time column. The queries of
one sharing class always have one layout. A workload with several layouts is
split by :func:`layout_groups`; ``cepvec.run_many(queries, spark_df)`` runs one
Spark job (one shuffle and one ``mapInArrow``) per group, and
``cepvec.kernel(workload)`` refuses a workload of several groups, naming them.
Partitioning two GROUP-BY layouts by a common attribute would save a shuffle,
but puts every group of the finer key in the task of the coarser one: not done.

The kernel needs the input schema (``cepvec.kernel(queries, df.schema)``):
each query is checked against it on the driver, with its name in the error.
Outside Spark (plain pyarrow iterators, untagged input) each call holds every
event of the groups it sees, ordered by time (``order="time"``).
"""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass

import polars as pl
import pyarrow as pa

from cepvec.arrow_kernel import Kernel, _arrow_type, _spark_type, _to_arrow, build_id, drive, keep_block, \
    make_kernel, partition_plan
from cepvec.errors import CepvecError, CepvecPlanError, CepvecTypeError
from cepvec.plan.ir import Query
from cepvec.runtime.prepare import Prepared, duration_to_units
from cepvec.sharing.sequences import window_key
from cepvec.sharing.workload import SHARING, Workload, compile_workload, named

QUERY_COL = "query"


def layout_key(q: Query) -> tuple:
    """Queries with equal keys can be partitioned one way on Spark (module docstring)."""
    plan = partition_plan(q)
    window = window_key(q) if plan.strategy == "window" else None
    return (plan.strategy, tuple(sorted(plan.keys)), q.time_col, window)


def layout_groups(queries: dict[str, Query]) -> list[tuple[str, ...]]:
    """The names of ``queries`` grouped by :func:`layout_key`, in order of first appearance."""
    groups: dict[tuple, list[str]] = {}
    for name, q in queries.items():
        groups.setdefault(layout_key(q), []).append(name)
    return [tuple(g) for g in groups.values()]


def describe_layout(q: Query) -> str:
    """The layout of ``q`` in words (error messages)."""
    plan = partition_plan(q)
    if plan.strategy == "key":
        return f"GROUP-BY {', '.join(plan.keys)}"
    if plan.strategy == "window":
        return "no GROUP-BY, WITHIN ... SLIDE window replication"
    return "no GROUP-BY, one partition"


@dataclass
class WorkloadKernel:
    """Callable for ``mapInArrow`` running many queries; build it with :func:`cepvec.kernel` on a workload."""

    kernels: dict  # name -> the query's own Kernel (its text, columns, output schema, layout)
    sharing: str
    numeric: str
    engine: str
    time_unit: str | None
    input_schema: dict  # column -> polars dtype (the columns any query reads)
    plan_tag: int  # fingerprint of the partitioning: every query's own one
    tag_block: int
    tag_order: str
    spark_window_block: int | None
    cepvec_version: str
    cepvec_build: str
    query_col: str = QUERY_COL
    # the layout fields of drive() for untagged input: one run per call, rows ordered by time
    typed: bool = True
    block_col: str | None = None
    window_block: int = 1
    order: str = "time"

    @property
    def names(self) -> list[str]:
        return list(self.kernels)

    def workload(self) -> Workload:
        """The compiled queries and their sharing plan (compiled again in every task: texts pickle small)."""
        return compile_workload({n: k.query for n, k in self.kernels.items()}, self.sharing)

    @property
    def output_polars_schema(self) -> dict:
        out = {self.query_col: pl.String}
        for k in self.kernels.values():
            out.update(k.output_polars_schema)
        return out

    @property
    def arrow_schema(self) -> pa.Schema:
        return pa.schema([(n, _arrow_type(dt)) for n, dt in self.output_polars_schema.items()])

    @property
    def schema(self) -> str:
        """Spark DDL of the output: ``"`query` STRING, ..."``."""
        return ", ".join(f"`{n.replace('`', '``')}` {_spark_type(dt)}" for n, dt in self.output_polars_schema.items())

    def __call__(self, batches):
        """``Iterator[pyarrow.RecordBatch] -> Iterator[pyarrow.RecordBatch]``."""
        return process_workload_batches(batches, self)


def make_workload_kernel(queries, *, schema=None, time_unit: str | None = None, numeric: str = "int64",
                         engine: str = "auto", sharing: str = "auto", spark_window_block: int | None = None,
                         query_col: str = QUERY_COL) -> WorkloadKernel:
    """See :func:`cepvec.kernel` (a workload: a dict or list of queries, or a :class:`Workload`)."""
    if sharing not in SHARING:
        raise CepvecPlanError(f"sharing must be one of {', '.join(map(repr, SHARING))}; found {sharing!r}")
    if schema is None:
        raise CepvecTypeError("cepvec.kernel(workload) needs the input schema: cepvec.kernel(queries, df.schema) "
                              "(each query is checked against it on the driver)")
    wl = queries if isinstance(queries, Workload) else compile_workload(queries, sharing)
    groups = layout_groups(wl.queries)
    if len(groups) > 1:
        parts = "; ".join(f"{{{', '.join(g)}}} ({describe_layout(wl.queries[g[0]])})" for g in groups)
        raise CepvecPlanError(
            f"the queries need different Spark partitionings, one kernel cannot run them all: {parts}. Build one "
            "kernel (and cepvec.partition) per group, or use cepvec.run_many(queries, df), which runs one job per "
            "group")
    kernels: dict[str, Kernel] = {}
    for name, q in wl.queries.items():
        try:
            kernels[name] = make_kernel(q, schema=schema, time_unit=time_unit, numeric=numeric, engine=engine,
                                        spark_window_block=spark_window_block)
        except CepvecError as exc:
            raise named(exc, name) from None
    # one name, one type: within one layout the queries share the time column (window_start, window_end and
    # EMIT's time column have its type), group labels are input columns and aggregate labels name their
    # attribute; only the query-name column can clash
    for name, k in kernels.items():
        if query_col in k.output_polars_schema:
            raise CepvecPlanError(
                f"query {name!r} has an output column {query_col!r}, which the workload kernel uses for the query "
                "names; rename that input column, or use cepvec.run_many(queries, df)")
    types: dict = {}
    for k in kernels.values():
        types.update(k.input_schema)
    k0 = next(iter(kernels.values()))
    text = "\x1e".join(f"{n}\x1f{k.plan_tag}" for n, k in kernels.items())
    tag = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little") >> 1
    return WorkloadKernel(kernels, sharing, numeric, engine, time_unit, types, tag, k0.tag_block, k0.tag_order,
                          spark_window_block, k0.cepvec_version, build_id(), query_col=query_col)


def process_workload_batches(batches, k: WorkloadKernel):
    """The body of the workload's mapInArrow function (module level, testable without Spark)."""
    from cepvec.registry import choose
    from cepvec.sharing.run import WorkloadRun

    wl = k.workload()
    queries = wl.queries
    q0 = queries[k.names[0]]
    choices = {}
    for name, q in queries.items():
        try:
            choices[name] = choose(q, k.engine, k.input_schema)
        except CepvecError as exc:
            raise named(exc, name) from None
    shared = wl.plan.shared_groups if k.sharing != "none" and k.engine != "reference" else ()
    union = k.output_polars_schema
    out_schema = k.arrow_schema

    def open_run(schema, prep: Prepared):
        base = Prepared(prep.df.head(0), prep.times.head(0), prep.unit, prep.time_dtype, prep.w, prep.s)
        preps = {n: dataclasses.replace(base, w=duration_to_units(q.window.within, prep.unit, "WITHIN"),
                                        s=duration_to_units(q.window.slide, prep.unit, "SLIDE"))
                 for n, q in queries.items()}
        return WorkloadRun(queries, preps, choices, numeric=k.numeric, shared=shared)

    def close_run(run, prep: Prepared, block) -> list[pa.RecordBatch]:
        out = []
        for name, res in run.finish().items():
            res = keep_block(res, run.preps[name], block)
            if len(res):
                res = res.with_columns(pl.lit(name, dtype=pl.String).alias(k.query_col))
                missing = {c: dt for c, dt in union.items() if c not in res.columns}
                res = res.with_columns([pl.lit(None, dtype=dt).alias(c) for c, dt in missing.items()])
                out.append(_to_arrow(res, out_schema))
        return out

    yield from drive(batches, k, q0, open_run, close_run, out_schema)


__all__ = ["WorkloadKernel", "make_workload_kernel", "process_workload_batches", "layout_groups", "layout_key",
           "QUERY_COL"]

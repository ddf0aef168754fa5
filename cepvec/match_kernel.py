"""``cepvec.kernel(query, schema, output="matches")``: the matches of a query for Spark's ``mapInArrow``.

:class:`MatchKernel` maps the Arrow batches of one task to Arrow batches of
matches, in the long or wide format of :func:`cepvec.matches`. A task must
hold every event of the partitions it sees (the query's GROUP-BY and
equivalence attributes; the whole input under strict contiguity, which looks
at every event): ``cepvec.matches(query, spark_df)`` repartitions so. The
task's events are gathered (any order: they are sorted by time), the match
engine builds the graph once and writes the matches a batch at a time. Only
the match engine runs here: a query it cannot run is refused on the driver
(collect the events and use ``cepvec.matches(q, df, engine="reference")``).
``match`` ids are unique across tasks: the task's Spark partition id times
:data:`TASK_IDS` plus the id within the task.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl
import pyarrow as pa

from cepvec.arrow_kernel import _polars_types, _task_partition
from cepvec.errors import CepvecPlanError
from cepvec.paths.match import MATCH_FORMATS, empty_frame, match_batches, match_engine
from cepvec.plan.compile import compile_query
from cepvec.plan.ir import Query
from cepvec.runtime.prepare import prepare

#: match ids of Spark task p are p * TASK_IDS + 0, 1, 2, ...
TASK_IDS = 1 << 40


def _plain(t: pa.DataType) -> pa.DataType:
    """Arrow types Spark reads: large and view strings and lists as plain ones."""
    if pa.types.is_large_string(t) or t == pa.string_view():
        return pa.string()
    if pa.types.is_large_list(t) or pa.types.is_list(t):
        return pa.list_(_plain(t.value_type))
    return t


@dataclass
class MatchKernel:
    """Callable for ``mapInArrow``; build it with ``cepvec.kernel(query, schema, output="matches")``."""

    query_text: str
    type_col: str
    time_col: str
    time_unit: str | None
    engine: str
    format: str
    limit: int | None
    input_schema: pa.Schema

    @property
    def query(self) -> Query:
        return compile_query(self.query_text, type_col=self.type_col, time_col=self.time_col)

    @property
    def arrow_schema(self) -> pa.Schema:
        q = self.query
        prep = prepare(q, pl.from_arrow(self.input_schema.empty_table()), time_unit=self.time_unit)
        out = empty_frame(q, prep, self.format).to_arrow().schema
        return pa.schema([(f.name, _plain(f.type)) for f in out])

    @property
    def spark_schema(self):
        """The output as a Spark ``StructType`` (needs PySpark)."""
        from pyspark.sql.pandas.types import from_arrow_schema  # noqa: PLC0415  (optional dependency)

        return from_arrow_schema(self.arrow_schema)

    def __call__(self, batches):
        """``Iterator[pyarrow.RecordBatch] -> Iterator[pyarrow.RecordBatch]``."""
        return process_match_batches(batches, self)


def make_match_kernel(query, *, schema, type_col: str = "type", time_col: str = "time",
                      time_unit: str | None = None, engine: str = "auto", format: str = "long",  # noqa: A002
                      limit: int | None = None) -> MatchKernel:
    """See :func:`cepvec.kernel` (``output="matches"``)."""
    q = query if isinstance(query, Query) else compile_query(query, type_col=type_col, time_col=time_col)
    if schema is None:
        raise CepvecPlanError("output='matches' needs the input schema (every input column is in the output): "
                              "pass cepvec.kernel(q, df.schema, output='matches')")
    if engine not in ("auto", "match"):
        raise CepvecPlanError(f"engine must be 'auto' or 'match' for output='matches' (the reference engine "
                              f"runs on local frames only: cepvec.matches(q, df, engine='reference')); "
                              f"found {engine!r}")
    if format not in MATCH_FORMATS:
        raise CepvecPlanError(f"format must be 'long' or 'wide'; found {format!r}")
    types = _polars_types(schema)
    arrow = pl.DataFrame(schema=types).to_arrow().schema
    k = MatchKernel(q.text, q.type_col, q.time_col, time_unit, engine, format, limit, arrow)
    match_engine(q, "match", types)  # refuses here, on the driver
    k.arrow_schema  # noqa: B018  (missing columns and bad types fail on the driver too)
    return k


def process_match_batches(batches, k: MatchKernel):
    """The body of the mapInArrow function: gather the task's events, yield its matches."""
    q = k.query
    out_schema = k.arrow_schema
    tables = [pa.Table.from_batches([b]) for b in batches if b.num_rows]
    df = (pl.from_arrow(pa.concat_tables(tables, promote_options="permissive")) if tables
          else pl.from_arrow(k.input_schema.empty_table()))
    prep = prepare(q, df, time_unit=k.time_unit)
    offset = (_task_partition() or 0) * TASK_IDS
    for f in match_batches(q, prep, limit=k.limit, format=k.format):
        f = f.with_columns(pl.col("match") + offset)
        yield pa.RecordBatch.from_arrays([f[c].to_arrow().cast(t.type) for c, t in zip(f.columns, out_schema)],
                                         schema=out_schema)

"""``cepvec.kernel(workload)`` / ``process_workload_batches`` on pyarrow batches, without Spark.

* Hypothesis: workloads of generated queries (every shape of ``tests/strategies.py``, and workloads the shared
  executor runs, local predicates included), split into Spark layout groups, one kernel per group, the
  stream cut into batches anywhere: each query's rows (``WHERE query = name``, its columns) are exactly
  ``cepvec.run``'s frame;
* the output schema (``query`` plus the union of the columns, null where a query lacks one), the tags,
  pickling, that the sharing classes run on the shared executor, and the driver-side refusals (several
  layouts, no schema, a ``query`` column, named errors).
"""

from __future__ import annotations

import pickle

import polars as pl
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import cepvec
from cepvec.arrow_kernel import PART_COL, PLAN_COL
from cepvec.workload_kernel import WorkloadKernel, layout_groups
from tests.strategies import FLOATS_INF, SCHEMA, examples, queries, shared_workloads, streams

pytestmark = pytest.mark.filterwarnings("ignore::cepvec.errors.CepvecWarning")


def batches_of(df: pl.DataFrame, cuts) -> list[pa.RecordBatch]:
    table = df.to_arrow()
    bounds = [0, *sorted(cuts), table.num_rows]
    out = []
    for a, b in zip(bounds, bounds[1:]):
        piece = table.slice(a, b - a)
        out.append(piece.combine_chunks().to_batches()[0] if b > a else
                   pa.RecordBatch.from_pylist([], schema=table.schema))
    return out


def collect(k: WorkloadKernel, batches) -> pl.DataFrame:
    out = list(k(iter(batches)))
    for b in out:
        assert b.schema == k.arrow_schema, f"batch schema\n{b.schema}\n!= declared\n{k.arrow_schema}"
    return pl.from_arrow(pa.Table.from_batches(out, schema=k.arrow_schema))


def rows_of(res: pl.DataFrame, k: WorkloadKernel, name: str) -> pl.DataFrame:
    cols = list(k.kernels[name].output_polars_schema)
    return res.filter(pl.col(k.query_col) == name).select(cols)


def check_workload(texts: dict, df: pl.DataFrame, cuts, sharing: str = "auto", numeric: str = "int64") -> None:
    wl = cepvec.workload(texts, sharing=sharing)
    for names in layout_groups(wl.queries):
        k = cepvec.kernel({n: wl.queries[n] for n in names}, SCHEMA, sharing=sharing, numeric=numeric)
        res = collect(k, batches_of(df, cuts))
        for name in names:
            assert_frame_equal(rows_of(res, k, name), cepvec.run(texts[name], df, numeric=numeric), check_exact=True)


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(queries(), min_size=1, max_size=4), streams(), st.sampled_from(("auto", "none")), st.data())
def test_kernel_of_any_workload_equals_run(texts, df, sharing, data):
    cuts = data.draw(st.lists(st.integers(0, len(df)), max_size=4), label="cuts")
    check_workload({f"n{i}": t for i, t in enumerate(texts)}, df, cuts, sharing)


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shared_workloads(), streams(types="ABC", floats=FLOATS_INF), st.sampled_from(("int64", "float64")), st.data())
def test_kernel_of_shared_workload_equals_run(texts, df, numeric, data):
    """The kernel sees one batch at a time: float sums with infinities under negations included."""
    cuts = data.draw(st.lists(st.integers(0, len(df)), max_size=4), label="cuts")
    check_workload(texts, df, cuts, numeric=numeric)


def test_output_schema_is_query_and_the_union_of_columns():
    texts = {"a": "RETURN id, COUNT(*) PATTERN SEQ(A, B) GROUP-BY id WITHIN 4 SLIDE 2",
             "b": "RETURN id, SUM(A.x), COUNT(*) PATTERN SEQ(A, C) GROUP-BY id",
             "c": "RETURN id, MAX(B.v) PATTERN SEQ(A, B+) GROUP-BY id WITHIN 3 EMIT CHANGES"}
    k = cepvec.kernel(texts, SCHEMA)
    assert k.schema == ("`query` STRING, `id` BIGINT, `window_start` BIGINT, `window_end` BIGINT, `COUNT(*)` BIGINT, "
                        "`SUM(A.x)` BIGINT, `time` BIGINT, `MAX(B.v)` DOUBLE")
    df = pl.DataFrame({"type": list("ACBAB"), "time": [0, 1, 2, 3, 4], "id": [1, 1, 1, 2, 1], "x": [1, 2, 3, 4, 5],
                       "v": [0.5, 1.5, 2.5, 3.5, 4.5]})
    k2 = pickle.loads(pickle.dumps(k))
    res = collect(k2, batches_of(df, [2]))
    b_rows = res.filter(pl.col("query") == "b")
    assert len(b_rows) and b_rows["window_start"].null_count() == len(b_rows)  # b has no window column
    for name, text in texts.items():
        assert_frame_equal(rows_of(res, k2, name), cepvec.run(text, df), check_exact=True)
    empty = list(k(iter([])))  # an empty partition: one empty batch of the schema
    assert len(empty) == 1 and empty[0].num_rows == 0 and empty[0].schema == k.arrow_schema


def test_tagged_input_is_checked():
    texts = {"a": "RETURN COUNT(*) PATTERN SEQ(A, B)", "b": "RETURN COUNT(*) PATTERN SEQ(A, B, C) WITHIN 3"}
    k = cepvec.kernel(texts, SCHEMA)
    df = pl.DataFrame({"type": list("ABC"), "time": [0, 1, 2], "id": [0, 0, 0], "x": [0, 0, 0],
                       "v": [0.0, 0.0, 0.0]})
    tagged = df.with_columns(pl.lit(0).alias(PART_COL), pl.lit(k.plan_tag).alias(PLAN_COL))
    res = collect(k, tagged.to_arrow().to_batches())
    assert res["COUNT(*)"].to_list() == [1, 1]
    other = cepvec.kernel({"a": texts["a"]}, SCHEMA)
    with pytest.raises(cepvec.CepvecPlanError, match="laid out by cepvec.partition for another query"):
        collect(other, tagged.to_arrow().to_batches())


def test_driver_side_refusals():
    with pytest.raises(cepvec.CepvecPlanError, match=r"need different Spark partitionings.*\{g\} \(GROUP-BY id\); "
                                                     r"\{w\} \(no GROUP-BY, WITHIN \.\.\. SLIDE"):
        cepvec.kernel({"g": "RETURN id, COUNT(*) PATTERN SEQ(A, B) GROUP-BY id",
                       "w": "RETURN COUNT(*) PATTERN SEQ(A, B) WITHIN 2 SLIDE 1"}, SCHEMA)
    with pytest.raises(cepvec.CepvecTypeError, match="needs the input schema"):
        cepvec.kernel(["RETURN COUNT(*) PATTERN SEQ(A, B)"])
    with pytest.raises(cepvec.CepvecPlanError, match="^query 'q1': the input schema has no column 'y'"):
        cepvec.kernel(["RETURN COUNT(*) PATTERN SEQ(A, B)", "RETURN SUM(A.y) PATTERN SEQ(A, B)"], SCHEMA)
    with pytest.raises(cepvec.CepvecPlanError, match="query 'q0' has an output column 'query'"):
        cepvec.kernel(["RETURN query, COUNT(*) PATTERN SEQ(A, B) GROUP-BY query"], {**SCHEMA, "query": pl.Int64})
    with pytest.raises(cepvec.CepvecPlanError, match="sharing must be one of"):
        cepvec.kernel(["RETURN COUNT(*) PATTERN SEQ(A, B)"], SCHEMA, sharing="all")


def test_the_kernel_runs_the_shared_executor(shared_runs):
    """The sharing plan's classes run on one SharedRun per kernel run (one per call here), the others alone."""
    made = shared_runs
    texts = {"p": "RETURN COUNT(*) PATTERN SEQ(A a, B b) WHERE a.x > 0",
             "q": "RETURN COUNT(*) PATTERN SEQ(A a, B b, C) WHERE a.x > 0",
             "k": "RETURN COUNT(*) PATTERN SEQ(A, B+)"}
    df = pl.DataFrame({"type": list("ABCAB"), "time": [0, 1, 2, 3, 4], "id": [0] * 5, "x": [1, 0, 0, 1, 0],
                       "v": [0.0] * 5})
    k = cepvec.kernel(texts, SCHEMA)
    res = collect(k, batches_of(df, [3]))
    assert made == [["p", "q"]]
    for name, text in texts.items():
        assert_frame_equal(rows_of(res, k, name), cepvec.run(text, df), check_exact=True)
    made.clear()
    collect(cepvec.kernel(texts, SCHEMA, sharing="none"), batches_of(df, []))
    assert made == []

"""``cepvec.run_many(queries, spark_df)`` on the real ``local[2]`` session: per query the Spark DataFrame
``cepvec.run`` returns, with the rows of the local ``run_many``."""

from __future__ import annotations

import pytest

pytest.importorskip("pyspark", reason="the Spark tests need pyspark: pip install 'cepvec[spark]'")

import polars as pl  # noqa: E402
from polars.testing import assert_frame_equal  # noqa: E402

import cepvec  # noqa: E402
from cepvec.generators import ecommerce_stream, ecommerce_workload  # noqa: E402

pytestmark = [pytest.mark.spark, pytest.mark.filterwarnings("ignore::cepvec.errors.CepvecWarning")]


def test_run_many_on_spark_equals_local(spark):
    texts = ecommerce_workload(1, n_items=6, min_length=2, max_length=3, n_segments=2, within="30 min",
                               slide="10 min")
    texts["kleene"] = "RETURN customer, COUNT(*) PATTERN SEQ(Item00, Item01+) GROUP-BY customer WITHIN 30 min"
    events = ecommerce_stream(n_events=600, seed=2, n_items=6, n_customers=4).drop("price")
    local = cepvec.run_many(texts, events)
    got = cepvec.run_many(texts, spark.createDataFrame(events.to_pandas()))
    assert list(got) == list(texts)
    for name, frame in got.items():
        rows = pl.from_arrow(frame.toArrow())
        assert_frame_equal(rows, local[name], check_exact=True)
    with pytest.raises(cepvec.CepvecPlanError, match="^query 'q0': .*'customer'"):
        cepvec.run_many(texts, spark.createDataFrame(events.drop("customer").to_pandas()))

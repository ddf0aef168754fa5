"""``cepvec.run_many(queries, spark_df)`` and ``cepvec.kernel(workload)`` on the real ``local[2]`` session.

One workload with three Spark layouts (GROUP-BY customer; no GROUP-BY with one SLIDE window, replicated by
window blocks; no GROUP-BY and no SLIDE, one partition), shared classes with and without local predicates,
and queries on their own paths (Kleene, EMIT CHANGES, SUM): per query the Spark DataFrame has the rows of the
local ``run_many`` and the schema of ``cepvec.run(query, spark_df)``; one Spark job per layout; the
workload kernel fed by ``cepvec.partition(workload, df)``; errors named by query.
"""

from __future__ import annotations

import pytest

pytest.importorskip("pyspark", reason="the Spark tests need pyspark: pip install 'cepvec[spark]'")

import polars as pl  # noqa: E402
from polars.testing import assert_frame_equal  # noqa: E402

import cepvec  # noqa: E402
from cepvec.generators import ecommerce_stream, ecommerce_workload  # noqa: E402

pytestmark = [pytest.mark.spark, pytest.mark.filterwarnings("ignore::cepvec.errors.CepvecWarning")]

WINDOW = "WITHIN 30 min SLIDE 10 min"


def workload() -> dict[str, str]:
    texts = ecommerce_workload(3, n_items=6, min_length=2, max_length=3, n_segments=2, within="30 min",
                               slide="10 min")
    texts["pred1"] = (f"RETURN customer, COUNT(*) PATTERN SEQ(Item00 a, Item01 b, Item02 c) WHERE a.price > 50 "
                      f"GROUP-BY customer {WINDOW}")
    texts["pred2"] = (f"RETURN customer, COUNT(*) PATTERN SEQ(Item00 a, Item01 b) WHERE a.price > 50 "
                      f"AND b.price <= 80 GROUP-BY customer {WINDOW}")
    texts["kleene"] = "RETURN customer, COUNT(*) PATTERN SEQ(Item00, Item01+) GROUP-BY customer WITHIN 30 min"
    texts["w1"] = f"RETURN COUNT(*) PATTERN SEQ(Item00, Item01, Item03) WHERE [customer] {WINDOW}"
    texts["w2"] = f"RETURN COUNT(*) PATTERN SEQ(Item00, Item01) WHERE [customer] {WINDOW}"
    texts["w3"] = f"RETURN SUM(Item01.price) PATTERN SEQ(Item00, Item01) {WINDOW}"
    texts["one1"] = "RETURN COUNT(*) PATTERN SEQ(Item00 a, Item02 b) WHERE a.price < 60 AND [customer]"
    texts["one2"] = "RETURN COUNT(*) PATTERN SEQ(Item00 a, Item02 b, Item01 c) WHERE a.price < 60 AND [customer]"
    texts["emit"] = "RETURN COUNT(*) PATTERN SEQ(Item02, Item03) WHERE [customer] WITHIN 20 min EMIT CHANGES"
    return texts


def test_run_many_on_spark_equals_local(spark):
    texts = workload()
    events = ecommerce_stream(n_events=600, seed=2, n_items=6, n_customers=4)
    sdf = spark.createDataFrame(events.to_pandas())
    wl = cepvec.workload(texts)
    assert {"pred1", "pred2", "w1", "w2", "one1", "one2"} <= set(wl.plan.shared_queries)
    local = cepvec.run_many(wl, events)
    with cepvec.spark_errors():
        got = cepvec.run_many(wl, sdf)
        assert list(got) == list(texts)
        assert len(got.combined) == 3  # one job per layout: GROUP-BY customer, the SLIDE window, one partition
        for name, frame in got.items():
            assert frame.schema == cepvec.run(texts[name], sdf).schema, name
            assert_frame_equal(pl.from_arrow(frame.toArrow()), local[name], check_exact=True)
        assert sum(len(local[n]) for n in texts) > 40  # the comparison is not of empty frames
        got.unpersist()

        # the workload kernel on cepvec.partition's layout: the window group
        sub = {n: texts[n] for n in ("w1", "w2", "w3")}
        k = cepvec.kernel(sub, sdf.schema)
        rows = pl.from_arrow(cepvec.partition(sub, sdf).mapInArrow(k, k.schema).toArrow())
    for name in sub:
        mine = rows.filter(pl.col("query") == name).select(local[name].columns).sort("window_start")
        assert_frame_equal(mine, local[name], check_exact=True)
    with pytest.raises(cepvec.CepvecPlanError, match="^query 'q0': .*'customer'"):
        cepvec.run_many(texts, spark.createDataFrame(events.drop("customer").to_pandas()))

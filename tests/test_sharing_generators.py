"""Sharon's workload generators (cepvec.generators.sharon): seeded, well formed, sharing sub-patterns."""

from __future__ import annotations

import pytest
from polars.testing import assert_frame_equal

import cepvec
from cepvec.generators import ecommerce_stream, ecommerce_workload, traffic_workload
from cepvec.generators.sharon import TRAFFIC_ROUTES


def test_ecommerce_workload_is_seeded_distinct_and_shares_segments():
    a = ecommerce_workload(40, seed=3)
    assert a == ecommerce_workload(40, seed=3) and a != ecommerce_workload(40, seed=4)
    assert list(a) == [f"q{i}" for i in range(40)]
    wl = cepvec.workload(a)
    seqs = [c.seqs for c in wl.plan.classes]
    assert len(seqs) == 1 and len(set(seqs[0].values())) == 40  # one class, distinct patterns
    assert all(6 <= len(s) <= 10 for s in seqs[0].values())
    assert all(t.startswith("Item") for s in seqs[0].values() for t in s)
    assert set(wl.plan.shared_queries) == set(a)  # the shared executor runs them all
    assert wl.plan.classes[0].candidates  # the segments give sharable patterns


def test_ecommerce_stream_distributions():
    u = ecommerce_stream(n_events=20_000, seed=1)
    z = ecommerce_stream(n_events=20_000, seed=1, distribution="zipf")
    assert_frame_equal(u, ecommerce_stream(n_events=20_000, seed=1))
    assert u["customer"].n_unique() == 20 and u["type"].n_unique() == 50
    top = z["type"].value_counts(sort=True)
    assert top["type"][0] == "Item00" and top["count"][0] > 3 * u["type"].value_counts()["count"].max()
    with pytest.raises(ValueError, match="distribution must be one of uniform, zipf"):
        ecommerce_stream(n_events=10, distribution="normal")


def test_traffic_workload_is_figure_1():
    texts = traffic_workload()
    assert set(texts) == set(TRAFFIC_ROUTES)
    q = cepvec.compile(texts["q4"])
    assert [o.types[0] for o in q.occs] == ["ParkAve", "OakSt", "MainSt", "WestSt"]
    assert q.partition_by == ("vehicle",)


def test_too_many_queries_for_the_pool():
    with pytest.raises(ValueError, match="distinct queries cannot be drawn"):
        ecommerce_workload(50, n_segments=1, min_length=2, max_length=2)

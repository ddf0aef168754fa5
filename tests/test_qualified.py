"""Qualified equivalence (``[P.vehicle]``) on the Numba engines agrees with the reference engine.

Every tiny stream is its own GROUP-BY group (``sid``) of one run. Vehicles
appear for the first time in the middle of streams, after broadcast events,
and the batch cuts fall before, between and after them: a partition that
appears in a later batch must start from its phantom's state (carried window
events, vector, held-back rows).
"""

from __future__ import annotations

import polars as pl
import pytest

import cepvec
from cepvec.registry import engine_support, run_engine
from cepvec.runtime.prepare import prepare
from tests.strategies import tiny_streams
from tests.test_oracle_agreement import rows_differ

pytestmark = pytest.mark.filterwarnings("ignore::cepvec.errors.CepvecWarning")

WINDOWS = ["", "WITHIN 2", "WITHIN 2 EMIT CHANGES", "WITHIN 2 SLIDE 1", "WITHIN 3 SLIDE 2", "EMIT CHANGES"]


def _frame(types: str, n_max: int = 4, times=(0, 1, 2)) -> pl.DataFrame:
    rows = []
    for sid, ev in enumerate(tiny_streams(n_max, times, types, n_min=1)):
        for j, (t, ty) in enumerate(ev):
            rows.append((sid, t, ty, (sid + j) % 2 if ty == "P" else None, (sid * 3 + j) % 5, j % 2))
    return pl.DataFrame(rows, schema={"sid": pl.Int64, "time": pl.Int64, "type": pl.String, "vehicle": pl.Int64,
                                      "speed": pl.Int64, "segment": pl.Int64}, orient="row")


def _check(text: str, df: pl.DataFrame, engine: str):
    q = cepvec.compile(text)
    assert engine_support(q, engine) is None, engine_support(q, engine)
    want = cepvec.run(q, df, engine="reference").to_dicts()
    got = cepvec.run(q, df, engine=engine).to_dicts()
    diff = rows_differ(got, want)
    assert diff is None, f"{engine}: {text}: {diff}"
    n = len(df)
    for cuts in ([n // 4, n // 2, 3 * n // 4], list(range(0, n, max(1, n // 40)))):
        got = run_engine(q, prepare(q, df), engine, batches=cuts).to_dicts()
        diff = rows_differ(got, want)
        assert diff is None, f"{engine}, {len(cuts)} cuts: {text}: {diff}"


@pytest.mark.parametrize("window", WINDOWS)
@pytest.mark.parametrize("pattern", ["SEQ(NOT A, P+)", "SEQ(P, NOT A, P)", "SEQ(A, P+)", "SEQ(P+, NOT A)",
                                     "SEQ(A, P, A)"])
def test_broadcast_matches_reference(pattern, window):
    text = (f"RETURN sid, COUNT(*), SUM(P.speed), MAX(P.speed) PATTERN {pattern} "
            f"WHERE [P.vehicle, segment] GROUP-BY sid {window}")
    q = cepvec.compile(text)
    engine = "greta" if q.is_kleene else "aseq"
    if engine_support(q, engine) is not None:  # e.g. a negated end with WITHIN alone
        assert "negated end" in engine_support(q, engine)
        return
    _check(text, _frame("AP"), engine)


@pytest.mark.parametrize("window", ["", "WITHIN 2 SLIDE 1", "WITHIN 3 SLIDE 2"])
def test_broadcast_on_the_trend_path(window):
    """GRETA Q3's shape: an edge predicate on P, the negated start broadcast per segment."""
    text = (f"RETURN sid, segment, COUNT(*), AVG(P.speed) PATTERN SEQ(NOT A, P+) "
            f"WHERE [P.vehicle, segment] AND P.speed > NEXT(P).speed GROUP-BY sid, segment {window}")
    _check(text, _frame("AP"), "greta")


@pytest.mark.parametrize("window", ["", "WITHIN 2", "WITHIN 2 EMIT CHANGES", "WITHIN 3 SLIDE 2"])
def test_broadcast_on_the_scan_path(window):
    """Edge predicates the Fenwick path refuses, MIN/MAX with edges: the predecessor scan."""
    text = (f"RETURN sid, COUNT(*), MIN(P.speed) PATTERN SEQ(NOT A, P+) "
            f"WHERE [P.vehicle, segment] AND P.speed != NEXT(P).speed GROUP-BY sid {window}")
    assert cepvec.registry.greta_path(cepvec.compile(text)) == "scan"
    _check(text, _frame("AP"), "greta")


@pytest.mark.parametrize("window", ["WITHIN 2", "WITHIN 2 EMIT CHANGES", "WITHIN 3 SLIDE 2"])
def test_float_keys_on_the_scan_path(window):
    """Float vehicle ids (NaN and null among them) on the scan path: the carried and held-back rows
    keep them raw under other names, and copying them to a new vehicle's partitions read the key
    names (a Polars ColumnNotFoundError under a window, found by a fuzzer)."""
    text = (f"RETURN sid, COUNT(*) PATTERN SEQ(P a, NOT SEQ(A, C), P b) WHERE a.vehicle = b.vehicle "
            f"AND a.speed != b.speed GROUP-BY sid {window}")
    assert cepvec.registry.greta_path(cepvec.compile(text)) == "scan"
    df = _frame("APC", n_max=3).with_columns(
        pl.col("vehicle").cast(pl.Float64).replace({1.0: float("nan")}).fill_null(pl.col("sid") % 3 - 0.5))
    _check(text, df, "greta")


def test_group_by_the_qualified_attribute_sees_every_vehicle():
    text = "RETURN vehicle, COUNT(*) PATTERN SEQ(A, P+) WHERE [P.vehicle] GROUP-BY vehicle WITHIN 2 SLIDE 1"
    _check(text, _frame("AP", n_max=4).filter(pl.col("sid") < 60).drop("sid"), "greta")


@pytest.mark.parametrize("text,why", [
    ("RETURN COUNT(*) PATTERN SEQ(A a, P p+) WHERE [a.vehicle] AND [p.speed]", "different variables"),
    ("RETURN COUNT(*) PATTERN SEQ(P p1, P p2) WHERE [p1.vehicle]", "other variables match too"),
])
def test_refused_shapes_say_why(text, why):
    q = cepvec.compile(text)
    assert why in engine_support(q, "greta")
    df = pl.DataFrame({"type": ["A", "P", "P"], "time": [0, 1, 2], "vehicle": [1, 1, 1], "speed": [1, 2, 2]})
    with pytest.raises(cepvec.UnsupportedByEngine, match=why):
        cepvec.run(q, df, engine="greta")
    assert len(cepvec.run(q, df)) == 1  # auto: the reference engine


@pytest.mark.parametrize("unqualified", [False, True])
def test_copies_past_the_memory_budget_are_refused_with_a_fix(unqualified, monkeypatch):
    """``[B.x]`` copies each A and C event into the partition of every value of ``x`` (with ``segment``,
    of every value its segment holds): past ``BROADCAST_ROWS_BUDGET`` bytes a batch raises a
    CepvecPlanError that names the rows and the fixes, before the join that copies them (500 000 events
    of 2 000 values asked some 20 GiB, and Polars aborted the process). Below it, the same run."""
    import numpy as np

    from cepvec.runtime import memory

    rng = np.random.default_rng(0)
    n = 2000
    df = pl.DataFrame({"type": rng.choice(list("ABC"), n), "time": np.arange(n), "x": rng.integers(0, 40, n),
                       "segment": rng.integers(0, 4, n)})
    text = f"RETURN COUNT(*) PATTERN SEQ(A, B+, C) WHERE [B.x{', segment' if unqualified else ''}] WITHIN 30"
    want = cepvec.run(text, df)
    copies = (n * 2 // 3) * (40 // (4 if unqualified else 1))  # A and C events x the partitions each joins
    monkeypatch.setattr(memory, "BROADCAST_ROWS_BUDGET", copies * 8 // 4)
    with pytest.raises(cepvec.CepvecPlanError, match=r"copies each event .* into every partition .* rows here.*"
                                                     r"Add an unqualified equivalence attribute"):
        cepvec.run(text, df)
    monkeypatch.setattr(memory, "BROADCAST_ROWS_BUDGET", copies * 8 * 64)
    assert cepvec.run(text, df).equals(want)

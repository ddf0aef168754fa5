"""The match engine's entry points: iter_matches, format="wide", the CLI ``cepvec matches``,
``cepvec.kernel(output="matches")`` and ``cepvec.matches`` on Spark."""

from __future__ import annotations

import polars as pl
import pyarrow as pa
import pytest

import cepvec
from cepvec.cli import main
from tests.strategies import make_frame

Q = "RETURN id, COUNT(*) PATTERN SEQ(A+, B) WHERE [id] AND A.x < NEXT(A).x GROUP-BY id WITHIN 5"


def events() -> pl.DataFrame:
    rows = [("A", 1, 0, 1, 0.5), ("A", 2, 1, 5, 0.5), ("A", 3, 0, 2, 0.5), ("B", 4, 0, 0, 0.5),
            ("A", 4, 1, 7, 0.5), ("B", 6, 1, 1, 0.5), ("C", 6, 0, 1, 0.5), ("B", 7, 0, 3, 0.5)]
    return make_frame(rows)


def test_iter_matches_is_matches_in_pieces():
    ev = events()
    full = cepvec.matches(Q, ev, limit=None)
    # id 0: a1 b4, a3 b4, a1 a3 b4, a3 b7 (a1 .. b7 spans 6 >= 5); id 1: a2 b6, a4 b6, a2 a4 b6
    assert full["match"].n_unique() == 7
    pieces = list(cepvec.iter_matches(Q, ev, batch_rows=2))
    assert len(pieces) > 1 and pl.concat(pieces).equals(full)
    for p in pieces:  # whole matches per frame
        assert p.group_by("match").agg(pl.col("position").max() + 1 == pl.len())["position"].all()


def test_wide_format_is_one_row_per_match():
    ev = events()
    long = cepvec.matches(Q, ev, limit=None)
    wide = cepvec.matches(Q, ev, limit=None, format="wide")
    assert wide.columns == ["match", "id", "variable", "type", "time", "event_id", "x", "v"]
    assert wide.height == long["match"].n_unique()
    assert wide.explode(["variable", "type", "time", "event_id", "x", "v"]).equals(long.drop("position"))


@pytest.mark.parametrize("suffix", [".parquet", ".csv", ".arrow"])
def test_cli_matches_writes_the_matches(tmp_path, suffix):
    src = tmp_path / "events.parquet"
    events().write_parquet(src)
    out = tmp_path / f"matches{suffix}"
    assert main(["matches", Q, str(src), "-o", str(out)]) == 0
    got = {".parquet": pl.read_parquet, ".csv": pl.read_csv, ".arrow": pl.read_ipc}[suffix](out)
    assert got.equals(cepvec.matches(Q, events(), limit=None))


def test_cli_matches_wide_csv_is_refused(tmp_path, capsys):
    src = tmp_path / "events.parquet"
    events().write_parquet(src)
    assert main(["matches", Q, str(src), "-o", str(tmp_path / "m.csv"), "--format", "wide"]) == 2
    assert capsys.readouterr().err == ("error: CSV cannot hold the list columns of --format wide; write .parquet "
                                       "or .arrow, or use --format long\n")


def test_cli_matches_prints_and_limits(tmp_path, capsys):
    src = tmp_path / "events.parquet"
    events().write_parquet(src)
    assert main(["matches", Q, str(src), "--limit", "2"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("shape: (5, 9)")  # two matches of id 0 ending at b4: one of 2 events, one of 3


def _as_set(m: pl.DataFrame) -> set:
    rest = [c for c in m.columns if c not in ("match", "position")]
    return {tuple(g.select(rest).rows()) for _, g in m.sort("match", "position").group_by("match",
                                                                                          maintain_order=True)}


@pytest.mark.parametrize("cuts", [[], [1], [2, 3, 7], list(range(1, 8))])
def test_match_kernel_on_arrow_batches_any_cuts(cuts):
    ev = events().sample(fraction=1.0, shuffle=True, seed=len(cuts))  # any order within the call
    table = ev.to_arrow()
    bounds = [0, *cuts, ev.height]
    batches = [b for a, z in zip(bounds, bounds[1:]) for b in table.slice(a, z - a).to_batches()]
    k = cepvec.kernel(Q, table.schema, output="matches")
    got = pl.from_arrow(pa.Table.from_batches(list(k(iter(batches))), schema=k.arrow_schema))
    want = cepvec.matches(Q, events(), limit=None)
    assert got.columns == want.columns
    assert got.equals(want.cast(got.schema))


def test_match_kernel_refusals():
    schema = events().to_arrow().schema
    with pytest.raises(cepvec.CepvecPlanError, match="output='matches' needs the input schema"):
        cepvec.kernel(Q, output="matches")
    with pytest.raises(cepvec.UnsupportedByEngine, match="a SLIDE window"):
        cepvec.kernel("RETURN COUNT(*) PATTERN SEQ(A, B) WITHIN 4 SLIDE 2", schema, output="matches")
    with pytest.raises(cepvec.CepvecPlanError, match="output must be 'aggregates' or 'matches'; found 'rows'"):
        cepvec.kernel(Q, schema, output="rows")


@pytest.mark.spark  # the strategy is in the query text: Spark runs either the same way (the other with --slow)
@pytest.mark.parametrize("strategy", ["skip_till_any_match", pytest.param("strict_contiguity", marks=pytest.mark.slow)])
def test_matches_on_spark_equal_local(spark, strategy):
    from tests.test_match_engine import with_strategy

    text = with_strategy(Q, strategy)
    ev = events()
    sdf = spark.createDataFrame(ev.to_pandas())
    want = cepvec.matches(text, ev, limit=None)  # first: the Spark workers then load the compiled kernels
    got = pl.from_pandas(cepvec.matches(text, sdf, limit=None).toPandas())
    assert got.columns == want.columns
    assert _as_set(got.cast(want.schema)) == _as_set(want)
    wide = pl.from_pandas(cepvec.matches(text, sdf, limit=None, format="wide").toPandas())
    assert wide.height == want["match"].n_unique()


@pytest.mark.spark
def test_run_predicate_matches_on_spark_equal_local(spark):
    """SASE+ Query 3's avg(a[..i-1].x) under skip till next match: Spark local[2] lists the local matches."""
    text = ("RETURN COUNT(*) PATTERN SEQ(A+ a[], B b) WHERE skip_till_next_match(a[], b) { [id] AND "
            "a[i].x > avg(a[..i-1].x) AND a.LEN >= 2 }")
    ev = events()
    want = cepvec.matches(text, ev, limit=None)
    assert want.height, "the stream has matches"
    got = pl.from_pandas(cepvec.matches(text, spark.createDataFrame(ev.to_pandas()), limit=None).toPandas())
    assert _as_set(got.cast(want.schema)) == _as_set(want)

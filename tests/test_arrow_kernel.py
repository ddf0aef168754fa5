"""``cepvec.kernel`` / ``process_batches`` on pyarrow batches, without Spark.

The kernel is the body of ``df.mapInArrow``: an iterator of RecordBatches in,
an iterator of RecordBatches out, one call per Spark partition. Its contract
(``cepvec/arrow_kernel.py``, ``docs/spark.md``): each call holds every event
of its GROUP-BY values, ordered by (GROUP-BY attributes, time); without
GROUP-BY the whole call is one run ordered by time.

Checked here:

* equality with ``cepvec.run(q, polars_df)`` for many query shapes (SEQ,
  Kleene, nested Kleene, negation, every window form, GROUP-BY, ``[id]``);
* batch-split invariance (Hypothesis): any cut of the input into batches,
  including empty batches, cuts inside a group and inside a run of equal time
  stamps, gives the same rows;
* the output schema, empty input, unordered input, pickling, state between
  calls, the schema-less kernel and timestamp time columns.
"""

from __future__ import annotations

import pickle
import re

import polars as pl
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import cepvec
from cepvec import arrow_kernel
from cepvec.arrow_kernel import Kernel, process_batches
from cepvec.registry import choose
from cepvec.errors import CepvecDataError, CepvecError
from cepvec.generators import sequence_abcd, stock_trades

from .strategies import FLOATS, TYPES, examples, make_frame, queries

pytestmark = pytest.mark.filterwarnings("ignore::cepvec.errors.CepvecWarning")

# --------------------------------------------------------------------------- helpers


def kernel_order(q: cepvec.Query, df: pl.DataFrame) -> pl.DataFrame:
    """``df`` in the order a kernel call needs: by GROUP-BY attributes (nulls last), then time.

    The sort is stable, so events with equal keys keep their input order;
    ``cepvec.run`` orders its output by group with nulls last, so the kernel's
    output comes out in the same row order as the local run.
    """
    return df.sort([*q.group_by, q.time_col], nulls_last=True, maintain_order=True)


def cut(table: pa.Table, cuts) -> list[pa.RecordBatch]:
    """``table`` as RecordBatches split at the row offsets ``cuts`` (repeats give empty batches)."""
    bounds = [0, *sorted(cuts), table.num_rows]
    out = []
    for a, b in zip(bounds, bounds[1:]):
        piece = table.slice(a, b - a)
        out.append(piece.combine_chunks().to_batches()[0] if b > a else
                   pa.RecordBatch.from_pylist([], schema=table.schema))
    return out


def collect(k: Kernel, batches) -> pl.DataFrame:
    """Run the kernel; every output batch must have exactly ``k.arrow_schema``."""
    out = list(k(iter(batches)))
    for b in out:
        assert isinstance(b, pa.RecordBatch)
        assert b.schema == k.arrow_schema, f"batch schema\n{b.schema}\n!= declared\n{k.arrow_schema}"
    return pl.from_arrow(pa.Table.from_batches(out, schema=k.arrow_schema))


def run_kernel(query, df: pl.DataFrame, cuts=None, max_chunksize=None, schema="input", **kw) -> pl.DataFrame:
    """The kernel's result on ``df`` (put in kernel order) cut into batches."""
    q = cepvec.compile(query) if isinstance(query, str) else query
    table = kernel_order(q, df).to_arrow()
    if cuts is not None:
        batches = cut(table, cuts)
    else:
        batches = table.to_batches(max_chunksize=max_chunksize)
    k = cepvec.kernel(q, table.schema if schema == "input" else schema, **kw)
    return collect(k, batches)


def assert_same(got: pl.DataFrame, want: pl.DataFrame, context: str = "") -> None:
    """Same columns, dtypes and rows in the same order; floats (AVG) within 1e-9."""
    try:
        assert_frame_equal(got, want, check_exact=False, rel_tol=1e-9, abs_tol=1e-12)
    except AssertionError as e:
        raise AssertionError(f"{context}\nkernel:\n{got}\nlocal run:\n{want}") from e


# --------------------------------------------------------------------------- data

ABCD = sequence_abcd(n_events=600, seed=3, n_ids=3, max_gap=2).with_columns(
    site=pl.when(pl.col("x") < 50).then(pl.lit("north")).otherwise(pl.lit("south")))
# ties: several events per time stamp (sequence_abcd times are strictly increasing)
ABCD_TIES = ABCD.with_columns(pl.col("time") // 4)
STOCK = stock_trades(n_events=500, seed=2, n_companies=6, n_sectors=3)

ABCD_QUERIES = [
    # fixed-length SEQ (A-Seq engine)
    "RETURN COUNT(*) PATTERN SEQ(A, B, C) WHERE [id] WITHIN 12",
    "RETURN id, COUNT(*), SUM(B.x), AVG(C.v) PATTERN SEQ(A, B, C) WHERE [id] GROUP-BY id WITHIN 12",
    "RETURN id, COUNT(*), MIN(A.x), MAX(B.x) PATTERN SEQ(A, B) GROUP-BY id WITHIN 8 SLIDE 4",
    "RETURN id, COUNT(*) PATTERN SEQ(A, B, C) GROUP-BY id WITHIN 10 SLIDE 13",
    "RETURN id, COUNT(*), SUM(A.v) PATTERN SEQ(A, B) WHERE [id] AND A.x < B.x GROUP-BY id WITHIN 10 EMIT CHANGES",
    "RETURN COUNT(*) PATTERN SEQ(A, B) WHERE [id] WITHIN 5 EMIT CHANGES",
    # Kleene (GRETA engine)
    "RETURN id, COUNT(*), COUNT(A), SUM(A.x) PATTERN SEQ(A+, B) GROUP-BY id WITHIN 15",
    "RETURN id, COUNT(*), AVG(A.v) PATTERN (SEQ(A+, B))+ WHERE [id] GROUP-BY id WITHIN 20 SLIDE 10",
    "RETURN COUNT(*), MAX(B.x) PATTERN SEQ(A, B+) WHERE [id] AND B.x > NEXT(B).x WITHIN 12 SLIDE 6",
    "RETURN id, COUNT(*) PATTERN A+ GROUP-BY id WITHIN 10 EMIT CHANGES",
    # negation
    "RETURN id, COUNT(*) PATTERN SEQ(A, NOT D, C) GROUP-BY id WITHIN 10",
    "RETURN COUNT(*) PATTERN SEQ(NOT D, A, B) WHERE [id] WITHIN 6 SLIDE 3",
    "RETURN id, COUNT(*), SUM(B.x) PATTERN SEQ(A, B+, NOT C) WHERE [id] GROUP-BY id WITHIN 9",
    "RETURN id, COUNT(*) PATTERN (SEQ(A+, NOT SEQ(C, NOT D, C), B))+ GROUP-BY id WITHIN 14 EMIT CHANGES",
    # no window at all: one result per group over the whole input
    "RETURN id, COUNT(*), MIN(B.x) PATTERN SEQ(A, NOT C, B) WHERE [id] GROUP-BY id",
    # bare EMIT CHANGES (unbounded); a fixed-length SEQ keeps the counts small
    "RETURN id, COUNT(*) PATTERN SEQ(C, D) GROUP-BY id EMIT CHANGES",
    # two GROUP-BY attributes
    "RETURN site, id, COUNT(*) PATTERN SEQ(A, B+) GROUP-BY site, id WITHIN 20",
]

STOCK_QUERIES = [
    # GRETA Q1 and variants (int sector, float price, string side)
    "RETURN sector, COUNT(*) PATTERN Stock S+ WHERE [company, sector] AND S.price > NEXT(S).price "
    "GROUP-BY sector WITHIN 20 SLIDE 10",
    "RETURN side, COUNT(*), SUM(S.volume), AVG(S.price) PATTERN Stock S+ WHERE [company] "
    "AND S.price < NEXT(S).price GROUP-BY side WITHIN 15 EMIT CHANGES",
    "RETURN COUNT(*), MIN(S.price) PATTERN Stock S+ WHERE [company] AND S.price > NEXT(S).price WITHIN 10",
    # an edge predicate on a string attribute
    "RETURN sector, COUNT(*) PATTERN Stock S+ WHERE [company] AND S.side < NEXT(S).side GROUP-BY sector WITHIN 8",
]


def _cases():
    for text in ABCD_QUERIES:
        yield pytest.param(text, ABCD, id=f"abcd:{text}")
        yield pytest.param(text, ABCD_TIES, id=f"abcd_ties:{text}")
    for text in STOCK_QUERIES:
        yield pytest.param(text, STOCK, id=f"stock:{text}")


# --------------------------------------------------------------------------- equality with cepvec.run


def _cut_cases():
    """Every query and data set in batches of 7 rows and all at once; batches of one event and of 64,
    and batches of 7 of the data without ties (the tie data cut the same queries harder), run in the
    slow profile (``pytest --slow``)."""
    for chunk in (1, 7, 64, 10**6):
        for p in _cases():
            slow = chunk in (1, 64) or (chunk == 7 and p.id.startswith("abcd:"))
            yield pytest.param(*p.values, chunk, id=f"{chunk}-{p.id}", marks=[pytest.mark.slow] if slow else [])


@pytest.mark.parametrize(("text", "df", "chunk"), list(_cut_cases()))
def test_kernel_equals_local_run(text, df, chunk):
    want = cepvec.run(text, df)
    assert len(want), "test data too sparse: the query has no result rows"
    got = run_kernel(text, df, max_chunksize=chunk)
    assert_same(got, want, f"{text} (batches of {chunk} rows)")


def test_batches_hold_several_groups_and_groups_span_batches():
    # the data of the parametrised test above exercise both situations
    q = cepvec.compile("RETURN id, COUNT(*) PATTERN SEQ(A, B) GROUP-BY id WITHIN 8")
    batches = kernel_order(q, ABCD).to_arrow().to_batches(max_chunksize=64)
    ids = [set(b.column("id").to_pylist()) for b in batches]
    assert any(len(s) > 1 for s in ids), "no batch holds several groups"
    assert any(a & b for a, b in zip(ids, ids[1:])), "no group spans two batches"


def test_cuts_inside_a_run_of_equal_time_stamps():
    q = "RETURN id, COUNT(*), SUM(B.x) PATTERN SEQ(A, B+, C) GROUP-BY id WITHIN 6"
    ordered = kernel_order(cepvec.compile(q), ABCD_TIES)
    # every row whose time equals the next row's time (same id): a cut after it splits a tie
    same_next = ((ordered["time"] == ordered["time"].shift(-1)) & (ordered["id"] == ordered["id"].shift(-1)))
    tie_cuts = (same_next.arg_true() + 1).to_list()
    assert len(tie_cuts) > 50
    want = cepvec.run(q, ABCD_TIES)
    assert_same(run_kernel(q, ABCD_TIES, cuts=tie_cuts), want, "cut inside every tie")
    assert_same(run_kernel(q, ABCD_TIES, cuts=tie_cuts[::3]), want, "cut inside every third tie")


# --------------------------------------------------------------------------- Hypothesis: batch-split invariance


@st.composite
def longer_streams(draw, types: str, max_events: int):
    """Up to ``max_events`` events, times with many ties, ids 0/1/2/null (several groups)."""
    n = draw(st.integers(0, max_events))
    times = sorted(draw(st.lists(st.integers(0, max(1, n // 2)), min_size=n, max_size=n)))
    ids = st.sampled_from([0, 1, 2, None])
    events = [(draw(st.sampled_from(types)), t, draw(ids), draw(st.sampled_from([-1, 0, 1, 2, 3, None])),
               draw(st.sampled_from(FLOATS))) for t in times]
    return make_frame(events)


@st.composite
def query_stream_cuts(draw):
    text = draw(queries())
    q = cepvec.compile(text)
    qtypes = "".join(t for t in q.event_types if t in TYPES)
    types = TYPES if not qtypes or draw(st.integers(0, 4)) == 0 else qtypes
    # the reference engine (queries the Numba engines do not support) builds every match
    max_events = 10 if choose(q).engine == "reference" else 24
    df = draw(longer_streams(types, max_events))
    cuts = draw(st.lists(st.integers(0, df.height), max_size=6))
    return text, df, cuts


@settings(max_examples=examples(250), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(query_stream_cuts(), st.sampled_from([0, 1, 3, arrow_kernel.COALESCE_ROWS]))
def test_batch_split_invariance(args, coalesce_rows):
    """A kernel call gives ``cepvec.run``'s rows however its input is cut into batches, GROUP-BY values run
    one by one, a few together or all together (``COALESCE_ROWS``)."""
    text, df, cuts = args
    q = cepvec.compile(text)
    try:
        want = cepvec.run(q, df)
    except CepvecError as e:  # e.g. overflow: the kernel must fail the same way
        with pytest.raises(type(e)), pytest.MonkeyPatch.context() as mp:
            mp.setattr(arrow_kernel, "COALESCE_ROWS", coalesce_rows)
            run_kernel(q, df, cuts=cuts)
        return
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(arrow_kernel, "COALESCE_ROWS", coalesce_rows)
        whole = run_kernel(q, df, cuts=[])
        split = run_kernel(q, df, cuts=cuts)
    context = (f"query: {text}\ncuts: {sorted(cuts)}\nCOALESCE_ROWS: {coalesce_rows}\n"
               f"stream (type, time, id, x, v): {df.rows()}")
    assert_same(whole, want, "one batch vs cepvec.run\n" + context)
    assert_same(split, whole, "cut vs one batch\n" + context)


@pytest.mark.parametrize("coalesce_rows", [0, 40, 150, 10**9])
@pytest.mark.parametrize("text", [
    "RETURN id, COUNT(*), SUM(B.x), AVG(C.v) PATTERN SEQ(A, B, C) WHERE [id] GROUP-BY id WITHIN 12 SLIDE 4",
    "RETURN id, COUNT(*), MAX(A.x) PATTERN (SEQ(A+, B))+ WHERE [id] AND A.x < NEXT(A).x GROUP-BY id WITHIN 25",
])
def test_group_values_run_together_up_to_coalesce_rows(monkeypatch, text, coalesce_rows):
    """``order="group"``: consecutive GROUP-BY values run as one engine run until their rows reach
    ``COALESCE_ROWS``; a value with more rows than that runs alone, streamed. Twelve values in
    descending order, the first a third of the rows, batches of 37 rows: ``cepvec.run``'s rows, and
    as many engine runs as the threshold allows (one for all, one per value, or in between)."""
    monkeypatch.setattr(arrow_kernel, "COALESCE_ROWS", coalesce_rows)
    q = cepvec.compile(text)
    df = sequence_abcd(n_events=900, seed=5, n_ids=11, max_gap=2)
    df = df.with_columns(id=pl.when(pl.col("x") % 3 == 0).then(11).otherwise("id"))
    df = df.sort("id", "time", descending=[True, False], maintain_order=True)
    sizes = df.group_by("id", maintain_order=True).len()["len"].to_list()
    assert len(sizes) == 12 and sizes[0] > 3 * max(sizes[1:])
    want = cepvec.run(q, df)
    assert len(want)
    opened = []
    choice = choose(q)
    monkeypatch.setattr(type(choice), "open", lambda self, *a, **kw: opened.append(1) or choice_open(self, *a, **kw))
    got = collect(cepvec.kernel(q, df.to_arrow().schema), df.to_arrow().to_batches(max_chunksize=37))
    assert_same(got.sort(got.columns, nulls_last=True), want.sort(want.columns, nulls_last=True), text)
    runs, held = 0, 0  # the runs the rule above makes
    for n in sizes:
        if n > coalesce_rows:
            runs, held = runs + (held > 0) + 1, 0
        elif held >= coalesce_rows:
            runs, held = runs + 1, n
        else:
            held += n
    runs += held > 0
    assert len(opened) == runs, (sizes, coalesce_rows)
    assert runs == {0: 12, 40: 12, 10**9: 1}.get(coalesce_rows, runs) and (coalesce_rows != 150 or 2 < runs < 12)


@pytest.mark.parametrize("coalesce_rows", [0, 10**9])
def test_batches_of_other_schemas_in_one_call(monkeypatch, coalesce_rows):
    """A call whose batches differ in schema (the type column as ``string``, then ``large_string``, then
    ``string_view``; the second without nulls allowed and ``x`` as int32): gathered only with batches of
    their own schema, the values of one run in their common types, the rows of ``cepvec.run``."""
    monkeypatch.setattr(arrow_kernel, "COALESCE_ROWS", coalesce_rows)
    text = ABCD_QUERIES[1]
    q = cepvec.compile(text)
    table = kernel_order(q, ABCD).select("type", "time", "id", "x", "v").to_arrow()
    pieces = [table.slice(0, 200), table.slice(200, 200), table.slice(400)]
    batches = []
    for piece, ty in zip(pieces, [pa.string(), pa.large_string(), pa.string_view()]):
        narrow = ty == pa.large_string()
        schema = pa.schema([pa.field(f.name, ty if f.name == "type" else pa.int32() if f.name == "x" and narrow
                                     else f.type, nullable=not narrow) for f in piece.schema])
        batches += piece.cast(schema).to_batches()
    assert len({b.schema for b in batches}) == 3
    got = collect(cepvec.kernel(text), batches)  # (a schema-less kernel declares String keys, Float64 sums)
    want = cepvec.run(text, ABCD)
    assert_same(got, want.cast(got.schema), text)


def test_columns_the_query_does_not_read_are_left_alone():
    """Columns no query clause reads (a nested list, a String with nulls, a dictionary) are not
    converted: the rows are those of the input without them; a column the query reads that is missing
    is an error that lists every column of the input."""
    text = ABCD_QUERIES[1]
    q = cepvec.compile(text)
    table = kernel_order(q, ABCD).select("type", "time", "id", "x", "v").to_arrow()
    n = len(table)
    wide = table.append_column("tags", pa.array([[i, i + 1] for i in range(n)])) \
        .append_column("note", pa.array([None if i % 3 else f"n{i}" for i in range(n)], pa.large_string())) \
        .append_column("kind", pa.array([f"k{i % 4}" for i in range(n)]).dictionary_encode())
    k = cepvec.kernel(text)
    assert_same(collect(k, wide.to_batches(max_chunksize=97)), collect(k, table.to_batches(max_chunksize=97)), text)
    with pytest.raises(cepvec.CepvecPlanError, match="tags") as err:
        collect(cepvec.kernel(text), wide.drop_columns(["id"]).to_batches())
    assert "'id'" in str(err.value)


@pytest.mark.parametrize("text", [
    "RETURN COUNT(*) PATTERN A+ a1[] WHERE a1[a1.LEN].x = 2 WITHIN 3 SLIDE 5",
    "RETURN COUNT(*) PATTERN A+ a1[] WHERE a1[a1.LEN].x = 2 AND a1[1].v > 0 WITHIN 3",
])
def test_the_first_and_last_event_of_a_run_read_their_columns(text):
    """``a1[1].v`` and ``a1[a1.LEN].x`` read ``v`` and ``x``: they are attributes of the query, and the
    kernel keeps their columns (it gave 0 rows, or no column ``x``; a differential fuzzer)."""
    q = cepvec.compile(text)
    assert {"x"} <= set(q.attributes) and ("v" in q.attributes) == ("a1[1].v" in text)
    import numpy as np

    rng = np.random.default_rng(84)
    n = 60
    df = pl.DataFrame({"type": rng.choice(["A", "B"], n), "time": np.sort(rng.integers(0, 40, n)),
                       "x": rng.integers(0, 4, n), "v": rng.integers(-2, 3, n), "other": rng.integers(0, 9, n)})
    want = cepvec.run(text, df)
    assert want["COUNT(*)"].sum() > 0
    table = kernel_order(q, df).to_arrow()
    assert_same(collect(cepvec.kernel(text, table.schema), table.to_batches(max_chunksize=17)), want, text)


choice_open = type(choose(cepvec.compile(ABCD_QUERIES[1]))).open  # (before a test replaces it)


# --------------------------------------------------------------------------- schema


@pytest.mark.parametrize("text", ABCD_QUERIES[:8])
def test_output_schema_matches_local_dtypes(text):
    k = cepvec.kernel(text, ABCD.to_arrow().schema)
    want = cepvec.run(text, ABCD)
    assert k.arrow_schema.names == want.columns
    assert pl.DataFrame(k.arrow_schema.empty_table()).schema == want.schema
    assert k.schema == ", ".join(f"`{n}` {t}" for n, t in _ddl(k.arrow_schema))


def _ddl(schema: pa.Schema):
    names = {pa.int64(): "BIGINT", pa.float64(): "DOUBLE", pa.large_string(): "STRING", pa.string(): "STRING"}
    for f in schema:
        yield f.name, "TIMESTAMP" if pa.types.is_timestamp(f.type) else names[f.type]


# --------------------------------------------------------------------------- empty input

EMPTY_QUERIES = [
    "RETURN id, COUNT(*) PATTERN SEQ(A, B) GROUP-BY id WITHIN 8 SLIDE 4",
    "RETURN COUNT(*) PATTERN SEQ(A, B+) WHERE [id] WITHIN 5 EMIT CHANGES",
    "RETURN COUNT(*) PATTERN SEQ(A, NOT B, C)",
]


@pytest.mark.parametrize("text", EMPTY_QUERIES)
def test_empty_input_gives_no_rows(text):
    k = cepvec.kernel(text, ABCD.to_arrow().schema)
    assert collect(k, []).height == 0
    empty = pa.RecordBatch.from_pylist([], schema=ABCD.to_arrow().schema)
    res = collect(k, [empty, empty, empty])
    assert res.height == 0
    assert res.schema == cepvec.run(text, ABCD.head(0)).schema


@pytest.mark.parametrize("text", EMPTY_QUERIES)
def test_empty_batches_between_data_are_ignored(text):
    q = cepvec.compile(text)
    table = kernel_order(q, ABCD).to_arrow()
    n = table.num_rows
    want = cepvec.run(q, ABCD)
    got = collect(cepvec.kernel(q, table.schema), cut(table, [0, 0, 5, 5, 5, n // 2, n // 2, n, n]))
    assert_same(got, want, text)


def test_input_without_matches_gives_no_rows():
    df = ABCD.filter(pl.col("type") != "B")
    k = cepvec.kernel("RETURN id, COUNT(*) PATTERN SEQ(A, B) GROUP-BY id WITHIN 8", df.to_arrow().schema)
    assert collect(k, kernel_order(k.query, df).to_arrow().to_batches(max_chunksize=50)).height == 0


# --------------------------------------------------------------------------- unordered input

GROUPED = "RETURN id, COUNT(*) PATTERN SEQ(A, B) GROUP-BY id WITHIN 8"
UNGROUPED = "RETURN COUNT(*) PATTERN SEQ(A, B) WHERE [id] WITHIN 8"


def batch(types, times, ids) -> pa.RecordBatch:
    return pl.DataFrame({"type": types, "time": times, "id": ids},
                        schema={"type": pl.String, "time": pl.Int64, "id": pl.Int64}).to_arrow().to_batches()[0]


def drain(text, batches):
    k = cepvec.kernel(text, batches[0].schema)
    return list(k(iter(batches)))


def test_group_reappearing_in_a_later_batch_raises():
    batches = [batch(["A", "B"], [5, 6], [0, 0]), batch(["A", "B"], [1, 2], [1, 1]), batch(["A"], [7], [0])]
    with pytest.raises(CepvecDataError) as e:
        drain(GROUPED, batches)
    assert str(e.value) == (
        "input is not ordered by the GROUP-BY attributes: group {'id': 0} appears again at row 4 after "
        "other groups; sort each partition by (id, time) and repartition by (id), or let cepvec.partition(q, df) do it")


def test_group_reappearing_in_the_same_batch_raises():
    with pytest.raises(CepvecDataError, match=re.escape("group {'id': 1} appears again at row 3")):
        drain(GROUPED, [batch(["A", "B", "A", "B"], [1, 2, 3, 3], [1, 0, 0, 1])])


def test_time_going_back_inside_a_group_raises():
    with pytest.raises(CepvecDataError) as e:
        drain(GROUPED, [batch(["A", "B", "A"], [5, 6, 4], [0, 0, 0])])
    assert str(e.value) == (
        "input is not ordered by time within group {'id': 0}: row 2 goes back in time; sort each "
        "partition by (id, time), or let cepvec.partition(q, df) do it")


def test_time_going_back_across_batches_raises():
    batches = [batch(["A", "B"], [1, 2], [1, 1]), batch(["A", "B"], [5, 6], [0, 0]),
               batch(["A", "B"], [4, 7], [0, 0])]
    with pytest.raises(CepvecDataError, match=re.escape("group {'id': 0}: row 4 goes back in time")):
        drain(GROUPED, batches)


def test_time_going_back_without_group_by_raises():
    with pytest.raises(CepvecDataError) as e:
        drain(UNGROUPED, [batch(["A", "B"], [5, 6], [0, 1]), batch(["A", "B"], [7, 3], [0, 1])])
    assert str(e.value) == (
        "input is not ordered by time: row 3 goes back in time; sort each partition "
        "by (time), or let cepvec.partition(q, df) do it")


def test_unordered_input_from_shuffled_rows_raises():
    k = cepvec.kernel(GROUPED, ABCD.to_arrow().schema)
    shuffled = ABCD.sample(fraction=1.0, shuffle=True, seed=1).to_arrow()
    with pytest.raises(CepvecDataError, match=r"row \d+"):
        list(k(iter(shuffled.to_batches(max_chunksize=100))))


def test_time_ties_across_a_group_boundary_are_not_disorder():
    # a new group may start at an earlier time than the previous group ended
    got = collect(cepvec.kernel(GROUPED, batch(["A"], [0], [0]).schema),
                  [batch(["A", "B", "A"], [5, 9, 1], [0, 0, 1]), batch(["B"], [2], [1])])
    assert got.rows() == [(0, 1), (1, 1)]


def test_time_going_back_names_the_first_offending_row():
    # row 0: t=5 (batch 1); batch 2: rows 1, 2, 3 at t=3, 4, 2. Row 1 (t=3 < 5) is the first row that
    # goes back in time; cepvec reports row 3 (t=2 < 4).
    with pytest.raises(CepvecDataError) as e:
        drain(GROUPED, [batch(["A"], [5], [0]), batch(["A", "B", "A"], [3, 4, 2], [0, 0, 0])])
    assert "row 1 goes back in time" in str(e.value), str(e.value)


# --------------------------------------------------------------------------- pickling and state


def test_kernel_pickles_and_the_copy_gives_the_same_rows():
    text = ABCD_QUERIES[7]
    k = cepvec.kernel(text, ABCD.to_arrow().schema)
    k2 = pickle.loads(pickle.dumps(k))
    assert k2 == k
    assert k2.schema == k.schema and k2.arrow_schema == k.arrow_schema
    batches = kernel_order(k.query, ABCD).to_arrow().to_batches(max_chunksize=50)
    assert_same(collect(k2, batches), cepvec.run(text, ABCD))
    # the schema-less kernel pickles too (this is what df.mapInArrow ships to the workers)
    k3 = cepvec.kernel(text)
    assert pickle.loads(pickle.dumps(k3)) == k3


def test_process_batches_is_the_module_level_body():
    k = cepvec.kernel(GROUPED, ABCD.to_arrow().schema)
    batches = kernel_order(k.query, ABCD).to_arrow().to_batches(max_chunksize=50)
    a = pa.Table.from_batches(list(process_batches(iter(batches), k)), schema=k.arrow_schema)
    b = pa.Table.from_batches(list(k(iter(batches))), schema=k.arrow_schema)
    assert a.equals(b)


def test_no_state_leaks_between_calls_of_one_kernel():
    # Spark calls one kernel object once per partition; a group of one call may reappear in the next
    text = "RETURN id, COUNT(*), SUM(B.x) PATTERN SEQ(A, B+) GROUP-BY id WITHIN 10 SLIDE 5"
    k = cepvec.kernel(text, ABCD.to_arrow().schema)
    first, second = ABCD.head(300), ABCD.tail(300)
    b1 = kernel_order(k.query, first).to_arrow().to_batches(max_chunksize=40)
    b2 = kernel_order(k.query, second).to_arrow().to_batches(max_chunksize=40)
    r1 = collect(k, b1)
    r2 = collect(k, b2)
    assert_same(r1, cepvec.run(text, first))
    assert_same(r2, cepvec.run(text, second))
    assert_same(collect(k, b1), r1)  # and again: same answer as the first time


def test_interleaved_iteration_of_two_calls():
    # two partitions of one kernel object consumed in alternation (as two generators)
    text = "RETURN id, COUNT(*) PATTERN SEQ(A, B+) GROUP-BY id WITHIN 10"
    k = cepvec.kernel(text, ABCD.to_arrow().schema)
    parts = [ABCD.filter(pl.col("id") < 2), ABCD.filter(pl.col("id") >= 2)]
    gens = [k(iter(kernel_order(k.query, p).to_arrow().to_batches(max_chunksize=1))) for p in parts]
    outs: list[list] = [[], []]
    live = [True, True]
    while any(live):
        for j, g in enumerate(gens):
            if live[j]:
                try:
                    outs[j].append(next(g))
                except StopIteration:
                    live[j] = False
    for p, o in zip(parts, outs):
        assert_same(pl.from_arrow(pa.Table.from_batches(o, schema=k.arrow_schema)), cepvec.run(text, p))


# --------------------------------------------------------------------------- schema-less kernel


def test_schemaless_kernel_gives_string_groups_and_matches_its_schema():
    text = "RETURN id, COUNT(*), SUM(B.x), AVG(C.v) PATTERN SEQ(A, B, C) WHERE [id] GROUP-BY id WITHIN 12"
    k = cepvec.kernel(text)
    assert k.schema == "`id` STRING, `COUNT(*)` BIGINT, `SUM(B.x)` DOUBLE, `AVG(C.v)` DOUBLE"
    batches = kernel_order(k.query, ABCD).to_arrow().to_batches(max_chunksize=64)
    got = collect(k, batches)  # asserts every batch has exactly k.arrow_schema
    assert got.schema["id"] == pl.String
    want = cepvec.run(text, ABCD).with_columns(pl.col("id").cast(pl.String), pl.col("SUM(B.x)").cast(pl.Float64))
    assert_same(got, want)


def test_schemaless_kernel_on_string_input():
    # what Spark hands over when the DataFrame's id column is a string
    text = "RETURN id, COUNT(*) PATTERN SEQ(A, B+) WHERE [id] GROUP-BY id WITHIN 8 EMIT CHANGES"
    df = ABCD.with_columns(pl.format("dev-{}", "id").alias("id"))
    k = cepvec.kernel(text)
    assert_same(collect(k, kernel_order(k.query, df).to_arrow().to_batches(max_chunksize=33)),
                cepvec.run(text, df))


@pytest.mark.parametrize("text", [
    "RETURN sector, COUNT(*) PATTERN Stock S+ WHERE [company, sector] AND S.price > NEXT(S).price "
    "GROUP-BY sector WITHIN 20",
    "RETURN sector, COUNT(*) PATTERN Stock S+ WHERE [company] AND S.price > 100 GROUP-BY sector WITHIN 20",
])
def test_schemaless_kernel_with_numeric_predicates(text):
    # GRETA Q1 as a user would run it on Spark: df.mapInArrow(cepvec.kernel(q), cepvec.kernel(q).schema).
    # Prices around 90-110 (two and three digits) make text order differ from numeric order.
    want = cepvec.run(text, STOCK)
    k = cepvec.kernel(text)
    try:
        got = collect(k, kernel_order(k.query, STOCK).to_arrow().to_batches(max_chunksize=64))
    except CepvecError as e:  # refusing (and asking for schema=) would be fine too
        assert "schema" in str(e)
        return
    assert got["COUNT(*)"].to_list() == want["COUNT(*)"].to_list()


def test_schemaless_kernel_on_a_timestamp_time_column():
    text = "RETURN id, COUNT(*) PATTERN SEQ(A, B) GROUP-BY id WITHIN 20 s SLIDE 10 s"
    df = ABCD.with_columns((pl.col("time") * 1_000_000).cast(pl.Datetime("us", "UTC")))
    want = cepvec.run(text, df)
    assert len(want)
    k = cepvec.kernel(text)
    try:
        got = collect(k, kernel_order(k.query, df).to_arrow().to_batches())
    except CepvecError as e:  # refusing (and asking for schema=) would be fine too
        assert "schema" in str(e)
        return
    assert got["COUNT(*)"].to_list() == want["COUNT(*)"].to_list()


# --------------------------------------------------------------------------- timestamp time columns

TS_QUERIES = [
    "RETURN id, COUNT(*), SUM(B.x) PATTERN SEQ(A, B+, C) WHERE [id] GROUP-BY id WITHIN 20 s SLIDE 10 s",
    "RETURN id, COUNT(*) PATTERN SEQ(A, NOT D, B) GROUP-BY id WITHIN 15 s EMIT CHANGES",
    "RETURN COUNT(*), AVG(A.v) PATTERN SEQ(A+, B) WHERE [id] WITHIN 10 seconds",
]


@pytest.mark.parametrize("text", TS_QUERIES)
def test_timestamp_time_column(text):
    # seconds since the epoch as timestamp[us, UTC], i.e. what Spark hands a TimestampType column to Python
    df = ABCD.with_columns((pl.col("time") * 1_000_000 + 1_700_000_000_000_000).cast(pl.Datetime("us", "UTC")))
    table = kernel_order(cepvec.compile(text), df).to_arrow()
    assert table.schema.field("time").type == pa.timestamp("us", tz="UTC")
    k = cepvec.kernel(text, table.schema)
    for name in ("window_start", "window_end", "time"):
        if name in k.arrow_schema.names:
            assert k.arrow_schema.field(name).type == pa.timestamp("us", tz="UTC")
            assert f"`{name}` TIMESTAMP" in k.schema
    got = collect(k, table.to_batches(max_chunksize=37))
    want = cepvec.run(text, df)
    assert len(want)
    assert_same(got, want, text)
    # the same instants as the integer run over the same epoch seconds (SLIDE windows start at
    # k * SLIDE >= 0 from the epoch, so shift the integer input, not the result)
    ints = cepvec.run(text, ABCD.with_columns(pl.col("time") + 1_700_000_000))
    for name in ("window_start", "window_end", "time"):
        if name in got.columns:
            assert got[name].dt.epoch("s").to_list() == ints[name].to_list()


def test_timestamp_with_a_session_time_zone_gives_utc_windows():
    # Spark hands timestamps over in the session time zone; the instant is what counts
    text = TS_QUERIES[0]
    df = ABCD.with_columns((pl.col("time") * 1_000_000).cast(pl.Datetime("us", "UTC")))
    table = kernel_order(cepvec.compile(text), df).to_arrow()
    zoned = table.set_column(1, "time", table.column("time").cast(pa.timestamp("us", tz="Europe/Berlin")))
    k = cepvec.kernel(text, table.schema)
    got = collect(k, zoned.to_batches(max_chunksize=50))
    assert_same(got, cepvec.run(text, df))


def test_numeric_float64_kernel():
    text = "RETURN id, COUNT(*), SUM(B.x) PATTERN SEQ(A, B+) GROUP-BY id WITHIN 10"
    k = cepvec.kernel(text, ABCD.to_arrow().schema, numeric="float64")
    got = collect(k, kernel_order(k.query, ABCD).to_arrow().to_batches(max_chunksize=64))
    assert_same(got, cepvec.run(text, ABCD, numeric="float64"))
    assert got.schema["COUNT(*)"] == pl.Float64


def test_time_unit_ms_kernel():
    text = "RETURN id, COUNT(*) PATTERN SEQ(A, B) GROUP-BY id WITHIN 8 s SLIDE 4 s"
    df = ABCD.with_columns(pl.col("time") * 1000)
    k = cepvec.kernel(text, df.to_arrow().schema, time_unit="ms")
    got = collect(k, kernel_order(k.query, df).to_arrow().to_batches(max_chunksize=64))
    assert_same(got, cepvec.run(text, df, time_unit="ms"))
    assert (got["window_start"] // 1000).to_list() == cepvec.run(text, ABCD)["window_start"].to_list()


# --------------------------------------------------------------------------- window replication (window_col)


def _replicate(df: pl.DataFrame, w: int, s: int, block: int) -> pl.DataFrame:
    """Each event once per block of ``block`` windows [k*s, k*s + w), k >= 0, with a window containing it."""
    rows = []
    for r in df.iter_rows(named=True):
        t = r["time"]
        kmin, kmax = max(0, -(-(t - w + 1) // s)), t // s
        rows += [{**r, "blk": j} for j in range(kmin // block, kmax // block + 1)] if kmin <= kmax else []
    return pl.DataFrame(rows, schema={**df.schema, "blk": pl.Int64}).sort("blk", "time", maintain_order=True)


@pytest.mark.parametrize(("text", "w", "s"), [
    ("RETURN COUNT(*), SUM(B.x), AVG(C.v) PATTERN SEQ(A, B, C) WHERE [id] WITHIN 12 SLIDE 4", 12, 4),
    ("RETURN COUNT(*), MIN(A.x) PATTERN SEQ(NOT D, A, B+, NOT C) WITHIN 7 SLIDE 3", 7, 3),
    ("RETURN COUNT(*) PATTERN SEQ(A, B) WHERE [id] WITHIN 3 SLIDE 5", 3, 5),
])
@pytest.mark.parametrize(("chunk", "block"), [(5, 1), (64, 2), pytest.param(7, 5, marks=pytest.mark.slow),
                                              pytest.param(10**6, 100, marks=pytest.mark.slow)])
def test_block_replicated_kernel_gives_each_window_once(text, w, s, chunk, block):
    for df in (ABCD, ABCD_TIES):
        want = cepvec.run(text, df)
        assert len(want)
        k = cepvec.arrow_kernel.make_kernel(text, schema=dict(df.schema), block_col="blk", window_block=block)
        batches = _replicate(df, w, s, block).to_arrow().to_batches(max_chunksize=chunk)
        got = pl.from_arrow(pa.Table.from_batches(list(k(iter(batches))), schema=k.arrow_schema))
        assert_same(got, want, f"{text}, {block} windows per block")


# --------------------------------------------------------------------------- order="time"

@pytest.mark.parametrize("text", [
    "RETURN id, COUNT(*), SUM(B.x), MAX(A.x) PATTERN SEQ(A, B, C) WHERE [id] GROUP-BY id WITHIN 20 SLIDE 10",
    "RETURN id, COUNT(*) PATTERN SEQ(A, NOT D, C) GROUP-BY id WITHIN 12 EMIT CHANGES",
    "RETURN site, COUNT(*), AVG(A.v) PATTERN (SEQ(A+, B))+ WHERE [id] GROUP-BY site WITHIN 25",
])
@pytest.mark.parametrize("chunk", [None, 37])
def test_time_ordered_kernel_runs_all_groups_in_one_engine(text, chunk):
    """order="time": groups interleaved in time order (what cepvec.run on Spark sends); one engine run."""
    table = ABCD_TIES.sort("time", maintain_order=True).to_arrow()
    k = cepvec.kernel(text, table.schema, order="time")
    got = collect(k, table.to_batches(max_chunksize=chunk))
    want = cepvec.run(text, ABCD_TIES)
    assert len(want) > 0
    assert_same(got.sort(got.columns, nulls_last=True), want.sort(want.columns, nulls_last=True), text)


def test_time_ordered_kernel_checks_time_order_and_its_option():
    k = cepvec.kernel(GROUPED, batch(["A"], [1], [0]).schema, order="time")
    with pytest.raises(CepvecDataError, match=re.escape("row 2 goes back in time; sort each partition by (time)")):
        list(k(iter([batch(["A", "B", "A"], [5, 6, 4], [0, 1, 0])])))
    with pytest.raises(CepvecError, match="order must be 'group'"):
        cepvec.kernel(GROUPED, order="id")


# --------------------------------------------------------------------------- schema checks and partition tags


@pytest.mark.parametrize(("column", "values", "message"), [
    ("time", ["1", "2"], "time column 'time' must be an integer or a timestamp; found String"),
    ("time", [1.0, 2.0], "time column 'time' must be an integer or a timestamp; found Float64"),
    ("type", [1, 2], "type column 'type' must hold event type names"),
    ("x", ["5", "6"], "predicate A.x > 3 compares column 'x' (String, a string) with 3 (a number)"),
])
def test_schemaless_kernel_checks_the_first_batch(column, values, message):
    # without a schema nothing is known on the driver; the first batch's types are checked like a local frame
    data = {"type": ["A", "B"], "time": [1, 2], "x": [5, 6]} | {column: values}
    k = cepvec.kernel("RETURN COUNT(*) PATTERN SEQ(A, B) WHERE A.x > 3 WITHIN 10")
    with pytest.raises(cepvec.CepvecTypeError, match=re.escape(message)):
        list(k(iter([pa.record_batch(data)])))
    with pytest.raises(cepvec.CepvecTypeError, match=re.escape(message)):  # the same check as with a schema
        cepvec.kernel("RETURN COUNT(*) PATTERN SEQ(A, B) WHERE A.x > 3 WITHIN 10", pa.record_batch(data).schema)


def tagged(k: Kernel, df: pl.DataFrame, part: int = 0, plan: int | None = None) -> pl.DataFrame:
    """``df`` with the columns cepvec.partition adds (outside Spark the task's partition id is the first row's)."""
    from cepvec.arrow_kernel import PART_COL, PLAN_COL

    return df.with_columns(pl.lit(part, pl.Int32).alias(PART_COL),
                           pl.lit(k.plan_tag if plan is None else plan, pl.Int64).alias(PLAN_COL))


def test_tagged_input_is_checked_outside_spark_too():
    from cepvec.arrow_kernel import PART_COL

    text = GROUPED  # tagged input of a GROUP-BY query is ordered by time alone (cepvec.partition's layout)
    k = cepvec.kernel(text, ABCD.to_arrow().schema)
    rows = tagged(k, ABCD.sort("time"))
    assert_same(collect(k, rows.to_arrow().to_batches(max_chunksize=50)), cepvec.run(text, ABCD).sort("id"))
    moved = rows.with_columns(pl.when(pl.int_range(pl.len()) == 70).then(1).otherwise(pl.col(PART_COL))
                              .cast(pl.Int32).alias(PART_COL))
    with pytest.raises(cepvec.CepvecPlanError, match=re.escape("rows tagged for Spark partition 0..1 reached the "
                                                               "task of partition 0: the DataFrame was repartitioned")):
        collect(k, moved.to_arrow().to_batches(max_chunksize=50))
    with pytest.raises(CepvecDataError, match="goes back in time; the rows were reordered after cepvec.partition"):
        collect(k, rows.reverse().to_arrow().to_batches())
    with pytest.raises(cepvec.CepvecPlanError, match="laid out by cepvec.partition for another query"):
        collect(k, tagged(k, ABCD.sort("time"), plan=k.plan_tag ^ 1).to_arrow().to_batches())


def test_schemaless_kernel_takes_the_layout_from_the_batches():
    # SLIDE without GROUP-BY on a timestamp column: window blocks in microseconds, not the seconds a
    # schema-less kernel would guess; the plan fingerprint must match what cepvec.partition computed
    from cepvec.arrow_kernel import spark_layout

    text = "RETURN COUNT(*) PATTERN SEQ(A, B) WITHIN 20 s SLIDE 10 s"
    df = ABCD.with_columns((pl.col("time") * 1_000_000).cast(pl.Datetime("us", "UTC")))
    k = cepvec.kernel(text)
    _, block, _, plan = spark_layout(k.query, pl.Datetime("us", "UTC"), None)
    assert plan != k.plan_tag  # the guess (integer seconds) differs
    from cepvec.arrow_kernel import BLOCK_COL

    assert block == 64  # windows 0..63 in block 0: events before 640 s
    df = df.filter(pl.col("time").dt.epoch("s") < 640)
    rows = tagged(k, df, plan=plan).with_columns(pl.lit(0, pl.Int64).alias(BLOCK_COL))
    want = cepvec.run(text, df).with_columns(pl.col("window_start", "window_end").dt.epoch("us"))
    assert len(want)
    assert_same(collect(k, rows.to_arrow().to_batches(max_chunksize=100)), want)


def test_build_id_names_the_source():
    from cepvec.arrow_kernel import build_id

    k = cepvec.kernel(GROUPED)
    assert k.cepvec_build == build_id()
    assert re.fullmatch(re.escape(cepvec.__version__) + ":[0-9a-f]{16}", k.cepvec_build)
    assert pickle.loads(pickle.dumps(k)).cepvec_build == k.cepvec_build
    from cepvec.arrow_kernel import same_build

    version, _, digest = build_id().partition(":")
    assert same_build(build_id(), build_id()) and same_build(build_id(), f"{version}:")  # no source: versions
    assert not same_build(build_id(), f"{version}:{'0' * 16}") and not same_build(build_id(), f"0.0.0:{digest}")

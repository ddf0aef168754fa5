"""``cepvec.kernel(query)``: a picklable function from Arrow batches to Arrow batches.

Made for ``df.mapInArrow(k, k.schema)`` (PySpark), but needs only pyarrow:
it receives an iterator of ``pyarrow.RecordBatch`` and yields batches of one
fixed output schema.

Input contract (per call, i.e. per Spark partition):

* rows are ordered by (GROUP-BY attributes, time): each GROUP-BY value is one
  contiguous run, time-ordered inside (equivalence partitions inside a run
  may interleave; the kernel separates them);
* all rows of a GROUP-BY value are in the same call (repartition by the
  GROUP-BY attributes; without GROUP-BY the whole input is one run).

A run may span batches and a batch may hold many runs; state is carried
across batches and each run is flushed when the next one starts or the input
ends. Consecutive GROUP-BY values run together, their rows in time order,
until they reach :data:`COALESCE_ROWS` rows (an engine run's set-up costs
1-2 ms; the engines keep the values apart); a value with more rows runs
alone, and a run takes its rows in pieces of about that many. The output
comes per run: within a run of several values, in ``cepvec.run``'s order.
Unordered input raises :class:`CepvecDataError` naming the rows.

Window replication (``Kernel.block_col``, used by ``cepvec.run`` on Spark for
SLIDE queries without GROUP-BY). Windows are numbered ``k >= 0`` (window ``k``
is ``[k*s, k*s + w)``) and cut into blocks of ``window_block`` = B consecutive
ids; block ``j`` holds windows ``j*B .. j*B + B - 1``. Every event is copied
once per block that has a window containing it (column ``block_col``), and
all copies of a block are in the same call, ordered by (block, time). The
kernel runs the query once per block, on exactly the events of the block's
windows, and keeps only the rows of the block's own windows; the rows it also
computes for windows that start before the block or end after its last
window see only part of their events and are dropped. The result of a window
depends only on the events inside it (negated starts and ends included,
SEMANTICS "Negation"), so each window comes out exactly as in the local run.
An event is copied to ``1 + (w/s - 1)/B`` blocks on average (at most
``ceil(w/s)``, when B = 1: one block per window). :func:`partition_plan`
picks the strategy for a query.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute  # noqa: F401  (pa.compute)

from cepvec.errors import CepvecDataError, CepvecPlanError, CepvecTypeError
from cepvec.runtime.output import int_order
from cepvec.runtime.prepare import UNIT_NS, Prepared, duration_to_units, output_schema, prepare, time_values_to_output
from cepvec.plan.compile import compile_query
from cepvec.plan.ir import Query

# Window replication: a block spans about BLOCK_SPAN_WINDOWS window lengths, so an event is copied
# to ~1 + 1/32 blocks instead of ceil(w/s) windows. Rejected alternatives (measured): one engine
# run per window costs ~1.4 ms of Python set-up each (10^5 events in 2,000 windows: 2.8 s against
# 0.01 s locally); one run per partition with the window id as an extra GROUP-BY key pays a polars
# join per batch over every (window, id) key seen so far (10^7 events: 153 s on local[1]) and
# ceil(w/s) copies through the shuffle. Larger blocks cut the ~2 ms per block further but leave
# fewer blocks, hence tasks, per data set.
BLOCK_SPAN_WINDOWS = 32

#: Rows a kernel call gathers before an engine takes them. An engine run's set-up costs 1-2 ms, and each
#: batch some 1 ms of Polars and NumPy calls around the kernels (conversion, checks, push). So (1) with
#: ``order="group"`` and no window replication, consecutive GROUP-BY values whose rows add up to at most
#: this many run as one engine run, their rows in time order (what ``order="time"`` runs; the engines
#: keep groups apart): one run per value took 19 s for 10^4 values of 100 events, against 0.2 s in one
#: run; a value with more rows runs alone; (2) consecutive batches of one schema are converted, checked
#: and pushed together up to this many rows (Spark's batches hold 10^4 rows). Results do not depend on
#: it (tests/test_arrow_kernel.py).
COALESCE_ROWS = 1 << 19

# Partition tags (written by cepvec.partition, checked by the kernel in every Spark task): the Spark
# partition id each row was placed in, and a fingerprint of the partitioning (query, strategy, block).
# A task whose rows carry another partition id, or no tag, was fed input that skipped or undid the
# partitioning step; it raises instead of returning a partial answer (docs/spark.md).
PART_COL = "__cepvec_part"
PLAN_COL = "__cepvec_plan"
BLOCK_COL = "__cepvec_block"  # block id j of a replicated event (windows j*B .. j*B + B - 1)
TAG_COLS = (PART_COL, PLAN_COL, BLOCK_COL)


def plan_fingerprint(q: Query, strategy: str, block: int | None, time_unit: str | None) -> int:
    """A stable int63 naming the partitioning of ``q`` (same on the driver and in every worker)."""
    import hashlib

    text = "\x1f".join([q.text, q.type_col, q.time_col, strategy, str(block or 0), time_unit or ""])
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little") >> 1


def _task_partition() -> int | None:
    """The Spark partition id of the running task, or None outside a Spark task."""
    try:
        from pyspark import TaskContext
    except ImportError:
        return None
    ctx = TaskContext.get()
    return None if ctx is None else ctx.partitionId()


def window_block(w, s) -> int:
    """Windows per replication block (B): the block spans at least BLOCK_SPAN_WINDOWS window lengths.

    ``w`` and ``s`` in the same unit (ints or Fractions). An event's windows
    span ``ceil(w/s)`` ids at most, fewer than B, so it is copied to 1 or 2
    blocks (1 + (w/s - 1)/B on average).
    """
    return max(1, math.ceil(BLOCK_SPAN_WINDOWS * Fraction(w) / Fraction(s)))


_SPARK_DDL = {
    pl.Int64: "BIGINT", pl.Int32: "INT", pl.Int16: "SMALLINT", pl.Int8: "TINYINT",
    pl.Float64: "DOUBLE", pl.Float32: "FLOAT", pl.String: "STRING", pl.Boolean: "BOOLEAN",
    pl.Date: "DATE",
}


def _spark_type(dt) -> str:
    if isinstance(dt, pl.Datetime):
        return "TIMESTAMP"
    if dt.is_decimal() and dt.precision is not None and dt.precision <= 38:  # MIN / MAX of a Decimal column
        return f"DECIMAL({dt.precision},{dt.scale})"
    for k, v in _SPARK_DDL.items():
        if dt == k:
            return v
    raise CepvecTypeError(f"output column type {dt} has no Spark SQL equivalent; cast the input column")


def _arrow_type(dt) -> pa.DataType:
    if isinstance(dt, pl.Datetime):
        # Spark hands timestamps to Python as microseconds in the session time zone and reads
        # them back as UTC instants; the instant is what matters.
        return pa.timestamp("us", tz="UTC")
    return pl.Series([], dtype=dt).to_arrow().type


@dataclass
class Kernel:
    """Callable for ``mapInArrow``; build it with :func:`cepvec.kernel`."""

    query_text: str
    type_col: str
    time_col: str
    time_unit: str | None
    numeric: str
    engine: str
    input_schema: dict  # column -> polars dtype (only the columns the query reads)
    typed: bool = True  # False: no schema was given; input_schema holds only the output conventions
    # window replication (module docstring): the column with the block id j of each copied event,
    # and the windows per block B; a call's rows are ordered by (GROUP-BY, block, time) and the run
    # of block j keeps windows j*B .. j*B + B - 1
    block_col: str | None = None
    window_block: int = 1
    # "group": rows ordered by (GROUP-BY, time), values run together up to COALESCE_ROWS rows (a larger
    # one alone); "time": rows ordered by time alone, one engine run per call (the engines group internally)
    order: str = "group"
    # Spark: fingerprint of the partitioning (plan_fingerprint) and how tagged input is ordered
    plan_tag: int | None = None
    tag_block: int = 0  # windows per block of tagged input (0: no window replication)
    tag_order: str = "time"
    spark_window_block: int | None = None  # window_block given to cepvec.partition (None: the default)
    # the driver's cepvec: version and a fingerprint of its source (build_id); a worker that
    # imports another copy refuses to run (docs/spark.md, "Running on a cluster")
    cepvec_version: str = ""
    cepvec_build: str = ""

    @property
    def query(self) -> Query:
        return compile_query(self.query_text, type_col=self.type_col, time_col=self.time_col)

    @property
    def output_polars_schema(self) -> dict:
        q = self.query
        return output_schema(q, self.input_schema, self.input_schema[q.time_col], self.numeric)

    @property
    def arrow_schema(self) -> pa.Schema:
        return pa.schema([(n, _arrow_type(dt)) for n, dt in self.output_polars_schema.items()])

    @property
    def schema(self) -> str:
        """Spark DDL of the output, e.g. ``"`sector` BIGINT, `COUNT(*)` BIGINT"``."""
        return ", ".join(f"`{n.replace('`', '``')}` {_spark_type(dt)}"
                         for n, dt in self.output_polars_schema.items())

    def __call__(self, batches):
        """``Iterator[pyarrow.RecordBatch] -> Iterator[pyarrow.RecordBatch]``."""
        return process_batches(batches, self)


def data_unit(time_dtype, time_unit: str | None) -> str:
    """The unit the kernel computes times in, for a time column of ``time_dtype``."""
    if isinstance(time_dtype, pl.Datetime):
        return time_dtype.time_unit
    if time_dtype == pl.Date:
        return "s"
    return time_unit or "s"


def spark_layout(q: Query, time_dtype, time_unit: str | None, block_override: int | None = None):
    """``(strategy, block, order, fingerprint)`` of tagged Spark input for ``q`` (see :func:`partition_plan`)."""
    plan = partition_plan(q)
    unit = data_unit(time_dtype, time_unit)
    block = 0
    if plan.strategy == "window":
        w = duration_to_units(q.window.within, unit, "WITHIN")
        s = duration_to_units(q.window.slide, unit, "SLIDE")
        block = block_override or window_block(w, s)
    # partitions by key, and one partition of several GROUP-BY values (strict contiguity), are sorted by time
    order = "time" if plan.strategy == "key" or (plan.strategy == "single" and q.group_by) else "group"
    return plan.strategy, block, order, plan_fingerprint(q, plan.strategy, block, unit)


def make_kernel(query, *, schema=None, type_col: str = "type", time_col: str = "time",
                time_unit: str | None = None, numeric: str = "int64", engine: str = "auto",
                block_col: str | None = None, window_block: int = 1, order: str = "group",
                spark_window_block: int | None = None) -> Kernel:
    """See :func:`cepvec.kernel`."""
    from cepvec._version import __version__
    from cepvec.registry import choose

    q = query if isinstance(query, Query) else compile_query(query, type_col=type_col, time_col=time_col)
    choose(q, engine)  # fail early for an engine that cannot run the query
    cols = {q.type_col, q.time_col, *q.attributes}
    if schema is None:
        # no input schema: time is an integer, group values are strings, sums are doubles
        types = {c: pl.String for c in cols}
        types[q.time_col] = pl.Int64
        for a in q.aggs:
            if a.attr:
                types[a.attr] = pl.Float64
    else:
        types = _polars_types(schema)
        missing = sorted(c for c in cols if c not in types)
        if missing:  # CepvecPlanError, as for a local frame without the column
            raise CepvecPlanError(
                f"the input schema has no column {missing[0]!r} that the query reads; columns are: "
                f"{', '.join(types)}. Rename the column, or pass type_col=/time_col= to cepvec.compile")
        types = {c: types[c] for c in cols}
        validate_schema(q, types, time_unit, numeric)
    if block_col is not None and q.window.kind != "slide":
        raise CepvecPlanError(f"block_col needs a WITHIN ... SLIDE query; this one's window is {q.window.kind!r}")
    if not isinstance(window_block, int) or window_block < 1:
        raise CepvecPlanError(f"window_block must be a positive integer; found {window_block!r}")
    if order not in ("group", "time"):
        raise CepvecPlanError(f"order must be 'group' (partitions sorted by GROUP-BY values, then time) or "
                              f"'time' (sorted by time alone); found {order!r}")
    if order == "time" and block_col is not None:
        raise CepvecPlanError("order='time' cannot be combined with window replication (block_col)")
    # a schema-less kernel guesses an integer time column here and redoes the layout from the
    # first batch's time type in the worker (_check_tags)
    _, tag_block, tag_order, tag = spark_layout(q, types[q.time_col], time_unit, spark_window_block)
    return Kernel(q.text, q.type_col, q.time_col, time_unit, numeric, engine, types, typed=schema is not None,
                  block_col=block_col, window_block=window_block, order=order, plan_tag=tag,
                  tag_block=tag_block, tag_order=tag_order, spark_window_block=spark_window_block,
                  cepvec_version=__version__, cepvec_build=build_id())


@functools.lru_cache(maxsize=1)
def build_id() -> str:
    """A fingerprint of the cepvec code this process runs: ``"<version>:<hash of the source files>"``.

    The hash covers the ``.py`` files of ``cepvec`` and ``cepvec.kernels``,
    read through ``importlib.resources`` (so a zip from ``--py-files`` hashes
    like an installed copy); it is empty when no source is found (a build
    without ``.py`` files). Computed once per process (~1 ms). The driver puts
    it in every kernel; a Spark worker whose cepvec has another fingerprint
    runs another copy of cepvec (the usual cause: the driver runs in a
    virtualenv and the workers start the system ``python3`` because
    ``PYSPARK_PYTHON`` is not set). See :func:`same_build`.
    """
    import hashlib
    from importlib.resources import files

    from cepvec._version import __version__

    h = hashlib.blake2b(digest_size=8)
    n = 0
    def walk(node, prefix):
        for f in sorted(node.iterdir(), key=lambda f: f.name):
            if f.is_dir() and f.name != "__pycache__":
                yield from walk(f, f"{prefix}/{f.name}")
            elif f.name.endswith(".py"):
                yield f"{prefix}/{f.name}", f

    for pkg in ("cepvec", "cepvec.kernels"):  # the kernels are a package of their own (pyproject package-dir)
        for name, f in walk(files(pkg), pkg):
            h.update(name.encode() + b"\0" + f.read_bytes())
            n += 1
    return f"{__version__}:{h.hexdigest() if n else ''}"


def same_build(a: str, b: str) -> bool:
    """Whether two :func:`build_id` values name the same cepvec (versions only when a side has no source)."""
    (va, _, ha), (vb, _, hb) = a.partition(":"), b.partition(":")
    return va == vb and (ha == hb or not ha or not hb)


def validate_schema(q: Query, types: dict, time_unit: str | None, numeric: str) -> None:
    """The checks ``cepvec.run`` makes on a local frame, on a schema alone (driver side, before any job)."""
    from cepvec.runtime.prepare import check_predicate_types, prepare

    prep = prepare(q, pl.DataFrame(schema=types), time_unit=time_unit, check_types=False)
    output_schema(q, types, prep.time_dtype, numeric)
    check_predicate_types(q, types)


def _polars_types(schema) -> dict:
    """Column types from a Spark StructType, a pyarrow Schema or a {name: polars dtype} dict."""
    if isinstance(schema, dict):
        return dict(schema)
    if isinstance(schema, pa.Schema):
        return dict(pl.DataFrame(schema.empty_table()).schema)
    if type(schema).__module__.startswith("pyspark"):
        from pyspark.sql.pandas.types import to_arrow_schema  # noqa: PLC0415  (a Spark schema: pyspark is there)

        return dict(pl.DataFrame(to_arrow_schema(schema, timezone="UTC").empty_table()).schema)
    raise CepvecTypeError(
        f"schema must be a Spark StructType, a pyarrow Schema or a dict; found {type(schema).__name__}")


def process_batches(batches, k: Kernel):
    """The body of the mapInArrow function (module level, testable without Spark)."""
    from cepvec.registry import choose

    q = k.query
    choice = choose(q, k.engine, k.input_schema if k.typed else None)
    out_schema = k.arrow_schema

    def open_run(schema, prep: Prepared):
        nonlocal choice
        if not k.typed:  # the batch's own types decide (e.g. MIN of a string column)
            choice = choose(q, k.engine, schema)
        return choice.open(q, schema, w=prep.w, s=prep.s, numeric=k.numeric)

    def close_run(run, prep: Prepared, block: tuple[int, int] | None) -> list[pa.RecordBatch]:
        res = keep_block(run.finish(prep), prep, block)
        return [_to_arrow(res, out_schema)] if len(res) else []

    yield from drive(batches, k, q, open_run, close_run, out_schema)


def keep_block(res: pl.DataFrame, prep: Prepared, block: tuple[int, int] | None) -> pl.DataFrame:
    """The rows of the windows ``block = (first, count)`` (window replication: the block's own windows;
    the others see only part of their events); ``res`` itself without a block."""
    if block is None or not len(res):
        return res
    first, count = block
    lo, hi = time_values_to_output([first * prep.s, (first + count) * prep.s], prep.unit, prep.time_dtype)
    return res.filter((pl.col("window_start") >= lo) & (pl.col("window_start") < hi))


def drive(batches, k, q: Query, open_run, close_run, out_schema: pa.Schema):
    """Cut one call's batches into runs and yield their result batches (the loop of every aggregate kernel).

    ``k`` is a :class:`Kernel` (or a kernel with the same layout fields), ``q`` the query whose type and
    time columns and GROUP-BY order the rows. Each run key (a GROUP-BY value or window block, or the whole
    call with ``order="time"``) gets ``open_run(schema, prep)``; its rows go to ``run.push(df, times)`` in
    pieces of about :data:`COALESCE_ROWS`; when the next key starts or the input ends, ``close_run(run, prep,
    block)`` gives its result batches (``block``: ``(first window, windows)`` to keep under window
    replication, else None). Consecutive GROUP-BY values without window blocks share a run up to
    :data:`COALESCE_ROWS` rows, pushed once in time order.
    """
    batches, layout = _check_tags(batches, k, q)
    order, block_col, block = k.order, k.block_col, k.window_block
    if layout is not None:  # laid out by cepvec.partition: its order and window blocks
        order, block = layout
        block_col = BLOCK_COL if block else None
    # run key: a GROUP-BY value (values run together, see COALESCE_ROWS) and block of window ids (one
    # engine run each), or the whole call (order="time")
    group = list(q.group_by) if order == "group" else []
    order_text = ", ".join(group + [q.time_col])
    if block_col is not None:
        group.append(block_col)
        order_text = ", ".join(group + [q.time_col])
    if layout is not None:  # cepvec.partition sorted it: something in between reordered the rows
        fix_group = fix_time = (
            "the rows were reordered after cepvec.partition (a sort, repartition or coalesce between "
            "cepvec.partition and mapInArrow); call mapInArrow right after cepvec.partition")
    else:
        fix_time = f"sort each partition by ({order_text}), or let cepvec.partition(q, df) do it"
        fix_group = (f"sort each partition by ({order_text}) and repartition by "
                     f"({', '.join(q.group_by or [block_col or ''])}), or let cepvec.partition(q, df) do it")
    seen_groups: set = set()
    cur_key = None
    cur = None  # the run of the current group (cepvec.paths.base.Run, or a workload's run)
    cur_prep: Prepared | None = None
    last_time = None
    # GROUP-BY values held back to run together (COALESCE_ROWS): ``[rows, times, lo, hi]`` per batch
    # they came in (the rows lo..hi of its frame), their number of rows, the run's schema and Prepared
    # (the first value's); the current value: where it starts in ``held``, its rows, schema and Prepared
    coalesce = bool(group) and block_col is None
    held: list[list] = []
    n_held = 0
    held_run = val_run = val_at = None  # val_at: (entry of held, row of its frame), set at its first rows
    val_rows = 0

    def flush() -> list[pa.RecordBatch]:
        nonlocal cur
        if cur is None:
            return []
        run, cur = cur, None
        push(run, take_held((len(held), 0)))
        return close_run(run, cur_prep, (cur_key[-1] * block, block) if block_col is not None else None)

    def push(run, part: list[list], in_time_order: bool = False) -> None:
        """``run.push`` of held rows ``part`` (``take_held``) in one piece; ``in_time_order``: rows of several
        GROUP-BY values, put in time order (each value's rows keep their order; values interleave)."""
        if not part:
            return
        if len(part) == 1:
            rows, t_all, lo, hi = part[0]
            rows, t = rows[lo:hi], t_all[lo:hi]
        else:  # (an untyped kernel's batches may differ in dtypes: their common supertype)
            t = np.concatenate([t_all[lo:hi] for _, t_all, lo, hi in part])
            rows = pl.concat([df[lo:hi] for df, _, lo, hi in part], how="vertical_relaxed", rechunk=True)
        if in_time_order:  # (a SIMD sort of (time, row) packed in int64: 6-9 ms at 2^19 rows, NumPy's
            # stable argsort of the values' runs 7-45 ms)
            order = int_order(pl.Series(t))
            order = np.argsort(t, kind="stable") if order is None else order
            rows, t = rows[order], t[order]
        run.push(rows, t)

    def take_held(upto: tuple[int, int]) -> list[list]:
        """The held rows before ``upto = (entry, row)``, taken out of ``held``."""
        nonlocal held, n_held
        i, a = upto
        part = held[:i] + ([[*held[i][:3], a]] if i < len(held) and a > held[i][2] else [])
        held = ([[*held[i][:2], a, held[i][3]]] if i < len(held) else []) + held[i + 1:]
        n_held -= sum(hi - lo for _, _, lo, hi in part)
        return part

    def run_held(part: list[list]) -> list[pa.RecordBatch]:
        """One engine run over whole GROUP-BY values (``take_held``), in time order."""
        if not part:
            return []
        run = open_run(*held_run)
        push(run, part, in_time_order=True)
        return close_run(run, held_run[1], None)

    n_seen = 0
    n_out = 0
    read = {*k.input_schema, *([block_col] if block_col is not None else [])}
    for part in _gathered(batches, COALESCE_ROWS):
        df = _frame(part, read)
        if k.typed:  # schema-less kernels read the batch's own types; only the output is converted
            df = df.cast({c: dt for c, dt in k.input_schema.items() if c in df.columns and df.schema[c] != dt
                          and not isinstance(dt, pl.Datetime)}, strict=False)
        prep = prepare(q, df, time_unit=k.time_unit, check_types=False, sort=False)
        times = prep.times.to_numpy()
        if group:
            run_id = df.select(pl.struct(group).rle_id()).to_series().to_numpy()
            starts = np.flatnonzero(np.diff(run_id, prepend=-1))
            keys = df.select(group)[starts].rows()
        else:
            starts, keys = np.array([0]), [()]
        bounds = [*starts.tolist(), len(df)]
        # the first row earlier than the row before it in its group (a row that starts a group may be)
        back = np.flatnonzero(np.diff(times) < 0) + 1
        back = back[~np.isin(back, starts)] if len(starts) > 1 else back
        first_back = int(back[0]) if len(back) else len(df)
        batch_run = None  # (schema, Prepared) of a run that starts in this batch
        for a, b, key in zip(bounds, bounds[1:], keys):
            key = tuple(("NaN",) if isinstance(v, float) and v != v else v for v in key)
            if cur_key is None or key != cur_key:
                for out in flush():
                    n_out += 1
                    yield out
                if key in seen_groups:
                    raise CepvecDataError(
                        f"input is not ordered by the GROUP-BY attributes: group {dict(zip(group, key))} "
                        f"appears again at row {n_seen + a} after other groups; {fix_group}")
                seen_groups.add(key)
                cur_key = key
                last_time = None
                if batch_run is None:
                    batch_run = (k.input_schema if k.typed else df.schema,
                                 Prepared(df.head(0), prep.times.head(0), prep.unit, prep.time_dtype, prep.w, prep.s))
                val_run = batch_run
                if coalesce:  # held back until the held values reach COALESCE_ROWS (or this one does)
                    if n_held >= COALESCE_ROWS:
                        for out in run_held(take_held((len(held), 0))):
                            n_out += 1
                            yield out
                    if not held:
                        held_run = val_run
                    val_at, val_rows = None, 0
                else:
                    cur = open_run(*val_run)
                    cur_prep = val_run[1]
            seg_t = times[a:b]
            if (last_time is not None and seg_t[0] < last_time) or a <= first_back < b:
                bad = a if (last_time is not None and seg_t[0] < last_time) else first_back
                raise CepvecDataError(
                    f"input is not ordered by time{f' within group {dict(zip(group, key))}' if group else ''}: row "
                    f"{n_seen + bad} goes back in time; {fix_time}")
            last_time = int(seg_t[-1])
            if held and held[-1][0] is prep.df and held[-1][3] == a:  # the batch's rows go on
                held[-1][3] = b
            else:
                held.append([prep.df, times, a, b])
            n_held += b - a
            if cur is not None:  # an open run: pushed a piece at a time
                if n_held >= COALESCE_ROWS:
                    push(cur, take_held((len(held), 0)))
                continue
            if val_at is None:
                val_at = (len(held) - 1, a)
            val_rows += b - a
            if val_rows > COALESCE_ROWS:  # a large value: the ones before it run, it runs alone
                for out in run_held(take_held(val_at)):
                    n_out += 1
                    yield out
                cur = open_run(*val_run)
                cur_prep = val_run[1]
                push(cur, take_held((len(held), 0)))
        n_seen += len(df)
    for out in [*flush(), *run_held(take_held((len(held), 0)))]:
        n_out += 1
        yield out
    if n_out == 0 and n_seen == 0:
        # an empty partition gives one empty batch of the output schema
        yield pa.RecordBatch.from_arrays([pa.array([], f.type) for f in out_schema], schema=out_schema)


def _frame(part: list[pa.RecordBatch], read: set[str]) -> pl.DataFrame:
    """The batches ``part`` (one schema) as one Polars frame of the columns in ``read`` (every column
    when one of them is missing: the error that follows lists the input's columns), each column in one
    chunk: combined in Arrow, its String columns cast to Arrow's ``string_view``, the layout of Polars'
    own Strings, which Polars takes as it is; from ``string`` or ``large_string`` Polars built the views
    itself, a batch at a time, then copied them again into one chunk (52 batches of 10^4 rows, a String
    type column and two int64 columns: 5.1-7.2 ms -> 2.6-2.7 ms; docs/performance-log.md, session 51).
    Batches whose dictionaries Arrow cannot combine are converted as Polars reads them."""
    tbl = pa.Table.from_batches(part)
    if read <= set(tbl.column_names):
        tbl = tbl.select([c for c in tbl.column_names if c in read])
    try:
        tbl = tbl.combine_chunks()
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        df = pl.from_arrow(tbl, rechunk=True)
        return df if isinstance(df, pl.DataFrame) else df.to_frame()
    for i, field in enumerate(tbl.schema):
        if pa.types.is_string(field.type) or pa.types.is_large_string(field.type):
            tbl = tbl.set_column(i, field.name, tbl.column(i).cast(pa.string_view()))
    df = pl.from_arrow(tbl, rechunk=False)
    return df if isinstance(df, pl.DataFrame) else df.to_frame()


def _gathered(batches, rows: int):
    """Lists of consecutive non-empty batches of one schema with at least ``rows`` rows each (the last may
    have fewer): a kernel converts, checks and pushes each list at once (a 10^4-row batch at a time, those
    steps cost some 1 ms each batch)."""
    part: list[pa.RecordBatch] = []
    n = 0
    for b in batches:
        if not b.num_rows:
            continue
        if part and b.schema != part[0].schema:
            yield part
            part, n = [], 0
        part.append(b)
        n += b.num_rows
        if n >= rows:
            yield part
            part, n = [], 0
    if part:
        yield part


def _check_tags(batches, k: Kernel, q: Query):
    """``(batches, layout)``: refuse Spark input that skipped or undid ``cepvec.partition``.

    ``layout`` is ``(order, window block)`` of tagged input, None for untagged
    input. In a Spark task every row must carry the partition id of that task
    and the kernel's plan fingerprint; outside Spark (plain pyarrow iterators)
    untagged input is the caller's responsibility (each call holds whole
    groups), and tagged input is checked the same way. A schema-less kernel
    validates the first batch's column types here (the driver had no schema)
    and takes the layout from its time type.
    """
    import itertools

    task = _task_partition()
    if task is not None and k.cepvec_build and not same_build(k.cepvec_build, build_id()):
        import sys

        from cepvec import _version

        raise CepvecPlanError(
            f"the Spark workers run another copy of cepvec than the driver that built this kernel: the worker "
            f"imports cepvec {_version.__version__} from {Path(_version.__file__).parent} with {sys.executable}, "
            "the driver had "
            f"cepvec {k.cepvec_version or '?'} with other source files. Run the workers with the driver's Python: "
            "set PYSPARK_PYTHON to it (os.environ['PYSPARK_PYTHON'] = sys.executable before the SparkSession is "
            "created, or spark.pyspark.python), or install the driver's cepvec on the workers")
    batches = iter(batches)
    first = next((b for b in batches if b.num_rows), None)
    if first is None:
        return iter(()), None
    names = first.schema.names
    tag, layout = k.plan_tag, (k.tag_order, k.tag_block)
    if not k.typed:
        types = dict(pl.from_arrow(first.schema.empty_table()).schema)
        types = {c: dt for c, dt in types.items() if c not in TAG_COLS}
        validate_schema(q, types, k.time_unit, k.numeric)
        _, block, order, tag = spark_layout(q, types[q.time_col], k.time_unit, k.spark_window_block)
        layout = (order, block)
    if PART_COL not in names:
        if task is not None:
            raise CepvecPlanError(
                "this mapInArrow input was not laid out by cepvec.partition: a cepvec kernel needs every event of "
                "a group (or window block) in one Spark partition, sorted by time, and checks it. Use "
                "cepvec.partition(q, df).mapInArrow(k, k.schema), or cepvec.run(q, df), which does both "
                "(docs/spark.md)")
        return itertools.chain([first], batches), None
    want = task if task is not None else first.column(PART_COL)[0].as_py()

    def checked():
        for b in itertools.chain([first], batches):
            if not b.num_rows:
                continue
            lo, hi = (v.as_py() for v in pa.compute.min_max(b.column(PART_COL)).values())
            if lo != want or hi != want:
                got = lo if lo == hi else f"{lo}..{hi}"
                raise CepvecPlanError(
                    f"rows tagged for Spark partition {got} reached the task of partition {want}: the DataFrame "
                    "was repartitioned or coalesced after cepvec.partition, which breaks the grouping the kernel "
                    "needs. Call mapInArrow right after cepvec.partition (filters and selects are fine, shuffles "
                    "are not)")
            plo, phi = (v.as_py() for v in pa.compute.min_max(b.column(PLAN_COL)).values())
            if plo != tag or phi != tag:
                raise CepvecPlanError(
                    "the input was laid out by cepvec.partition for another query or other settings (query text, "
                    "type/time columns, time_unit, window_block) than this kernel; build both from the same "
                    "arguments: cepvec.partition(q, df, ...) and cepvec.kernel(q, df.schema, ...)")
            yield b.drop_columns([c for c in (PART_COL, PLAN_COL) if c in b.schema.names])

    return checked(), layout


@dataclass(frozen=True)
class PartitionPlan:
    """How ``cepvec.run`` spreads a query over Spark partitions (see ``docs/spark.md``).

    ``strategy`` is ``"key"`` (repartition by ``keys``, the GROUP-BY attributes),
    ``"window"`` (no GROUP-BY, SLIDE windows: cut the windows into blocks of
    ``block`` consecutive windows, copy each event to the blocks whose windows
    contain it, repartition by block) or ``"single"`` (everything in one
    partition). ``block`` is None when the durations mix bare numbers (time
    column units) with units; it is then fixed from the data's unit at run time.
    """

    strategy: str
    keys: tuple[str, ...]
    why: str
    block: int | None = None

    @property
    def single(self) -> bool:
        return self.strategy == "single"


def partition_plan(q: Query) -> PartitionPlan:
    """Choose the Spark partitioning for ``q`` from its shape.

    * GROUP-BY: every event of a GROUP-BY value must reach the same kernel
      call (equivalence partitions inside a group share output rows), so
      repartition by the GROUP-BY attributes.
    * no GROUP-BY, ``WITHIN w SLIDE s``: the windows are independent (a
      window's row depends only on the events inside it), so the windows are
      cut into blocks of :func:`window_block` consecutive windows, each event
      is copied to the (one or two) blocks with a window that contains it, and
      the copies are partitioned by block (module docstring).
    * otherwise (no window, WITHIN alone, EMIT CHANGES): the result is one
      group whose matches may span the whole input, computed in one partition.
    * strict contiguity with GROUP-BY: no event of the *whole input* may lie
      between two events of a match (docs/matching.md), those of other groups
      included, so one partition sees every event (as ``cepvec.matches`` does).
    """
    if q.group_by and q.strategy == "strict-contiguity":
        return PartitionPlan("single", (), "strict contiguity: an event of any group between two events of a match "
                                           "breaks it, so the whole input is computed in one partition sorted by "
                                           f"{q.time_col} (no parallelism)")
    if q.group_by:
        return PartitionPlan("key", tuple(q.group_by),
                             f"repartition by the GROUP-BY attributes ({', '.join(q.group_by)}), "
                             f"sort by them and {q.time_col}")
    if q.window.kind == "slide":
        w, s = q.window.within, q.window.slide
        block = None
        if (w.unit is None) == (s.unit is None):
            block = window_block(Fraction(str(w.value)) * UNIT_NS[w.unit or "ns"],
                                 Fraction(str(s.value)) * UNIT_NS[s.unit or "ns"])
        b = f"{block} consecutive windows" if block else f"~{BLOCK_SPAN_WINDOWS} window lengths"
        return PartitionPlan("window", (), f"no GROUP-BY, SLIDE windows: window replication. The windows "
                                           f"[k*s, k*s + w) are cut into blocks of {b}; each event is copied to "
                                           "the 1 or 2 blocks whose windows contain it, repartitioned by block, "
                                           f"sorted by block and {q.time_col}; one kernel run per block keeps the "
                                           "block's own windows", block=block)
    return PartitionPlan("single", (), "no GROUP-BY and no SLIDE: the result is one group, computed in one "
                                       f"partition sorted by {q.time_col} (no parallelism)")


def _to_arrow(res: pl.DataFrame, schema: pa.Schema) -> pa.RecordBatch:
    cols = []
    for f in schema:
        s = res[f.name]
        if isinstance(s.dtype, pl.Datetime):
            s = s.dt.convert_time_zone("UTC") if s.dtype.time_zone else s.dt.replace_time_zone("UTC")
            s = s.dt.cast_time_unit("us")
        cols.append(s.to_arrow().cast(f.type))
    return pa.RecordBatch.from_arrays(cols, schema=schema)


__all__ = ["Kernel", "make_kernel", "process_batches", "duration_to_units", "PartitionPlan", "partition_plan",
           "window_block", "spark_layout", "validate_schema", "BLOCK_COL", "PART_COL", "PLAN_COL"]

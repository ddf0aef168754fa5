"""``cepvec.stream(query, streaming_df)``: a continuous query on Spark Structured Streaming.

Stages the events (the query's columns, the time as a BIGINT in the kernel's
unit, an event-time column for the watermark, the state key), runs
:func:`cepvec.streaming.advance` per state key through
``applyInPandasWithState`` with an event-time timeout, and turns the times
back into the input's types. All semantics live in :mod:`cepvec.streaming`
and the batch engines; see ``docs/streaming.md`` (which also says why not
``transformWithStateInPandas``: measured on par, with RocksDB and protobuf
to require).
"""

from __future__ import annotations

import dataclasses
import json
import os

import polars as pl
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from cepvec.arrow_kernel import TAG_COLS, _spark_type, make_kernel
from cepvec.errors import CepvecPlanError, CepvecTypeError
from cepvec.plan.ir import Query
from cepvec.runtime.prepare import output_schema
from cepvec.streaming import LATE, Step, StreamPlan, advance, empty_events, from_bytes, initial_done, parse_delay, \
    refuse_unbounded, stream_block, to_bytes, wake_ms

from .run import _col, time_in_units

KEY_COL = "__cepvec_key"
TS_COL = "__cepvec_ts"  # the event time as a TIMESTAMP: the watermark column
KIND_COL = "__cepvec_kind"  # 0: a result row, 1: the number of late events of a call, 2: a late event (late="side")
NLATE_COL = "__cepvec_nlate"
HOME_COL = "__cepvec_home"  # window-block keys: the copy of an event in its home block (late events count there)
EV_PREFIX = "__cepvec_ev_"  # late="side": the late event's columns
STATE_DDL = "done BIGINT, buffer BINARY"
OBSERVATION = "cepvec"  # query.lastProgress["observedMetrics"]["cepvec"]["late_events"]
GUARD_FILE = "cepvec-stream.json"
# GROUP-BY queries: state keys per stream. One key per GROUP-BY value pays the stateful Python API's per-key
# call and one engine run per value and micro-batch: with 1,000 groups it was ~2x slower than 8 buckets at 2*10^4
# events per micro-batch, and at 10^5 on par in one run and 1.5x slower than 16 buckets in another
# (docs/streaming.md, "Measured"); buckets never lost.
DEFAULT_BUCKETS = 16


def _ts(t: Column, unit: str) -> Column:
    """The time (BIGINT in ``unit``) as a TIMESTAMP, as Spark compares it with the watermark."""
    if unit == "s":
        return F.timestamp_seconds(t)
    if unit == "ms":
        return F.timestamp_millis(t)
    if unit == "us":
        return F.timestamp_micros(t)
    return F.timestamp_micros(F.floor(t / 1000).cast("long"))  # ns: floored to microseconds, as to_us does


def _ddl(types: dict) -> str:
    return ", ".join(f"`{n.replace('`', '``')}` {_spark_type(dt)}" for n, dt in types.items())


def _back(name: str, dt) -> Column:
    """A function output column (times as BIGINT) in the type ``cepvec.run`` gives it."""
    c = _col(name)
    if isinstance(dt, pl.Datetime):
        return F.timestamp_micros(c).alias(name)
    return c.cast(_spark_type(dt)).alias(name)


def _guard(checkpoint: str, info: dict) -> None:
    """Refuse to resume a checkpoint written for another query or state layout (its state would be misread)."""
    path = checkpoint[len("file:"):] if checkpoint.startswith("file:") else checkpoint
    if "://" in path:  # a remote file system: nothing to check from the driver's Python
        return
    f = os.path.join(path, GUARD_FILE)
    if os.path.exists(f):
        with open(f) as fh:
            old = json.load(fh)
        old.setdefault("block", 0)  # written before keyless SLIDE queries had window blocks
        diff = sorted(k for k in info if old.get(k) != info[k])
        if diff:
            raise CepvecPlanError(
                f"checkpoint {checkpoint!r} holds the state of a cepvec stream with another {', '.join(diff)} "
                f"({'; '.join(f'{k}: {old.get(k)!r} there, {info[k]!r} now' for k in diff)}); its state cannot be "
                "read by this query. Use a new checkpoint directory, or the same arguments as before")
        return
    os.makedirs(path, exist_ok=True)
    with open(f, "w") as fh:
        json.dump(info, fh, indent=1)


def _pandas(df: pl.DataFrame):
    """pandas with nullable integer columns: an int64 with nulls stays exact (NumPy pandas makes it a float;
    Arrow-backed pandas columns are not accepted by PySpark's serializer)."""
    import pandas as pd
    import pyarrow as pa

    ints = {pa.int8(): pd.Int8Dtype(), pa.int16(): pd.Int16Dtype(), pa.int32(): pd.Int32Dtype(),
            pa.int64(): pd.Int64Dtype()}
    return df.to_arrow().to_pandas(types_mapper=ints.get)


def _frame(p, cols: list[str], plan: StreamPlan) -> pl.DataFrame:
    """A pandas chunk of a key's input as a Polars frame: the query's columns (the chunk's first ones) in the
    plan's types, and with window-block keys the home flag (the next column)."""
    names = [*cols, HOME_COL] if plan.block else cols
    df = pl.from_pandas(p.iloc[:, :len(names)].set_axis(names, axis=1))
    return df.cast({**plan.schema, HOME_COL: pl.Boolean} if plan.block else plan.schema)


def _new_events(chunks, cols: list[str], plan: StreamPlan) -> pl.DataFrame:
    parts = [_frame(p, cols, plan) for p in chunks if len(p)]
    return pl.concat(parts) if parts else empty_events(plan)


def _key_block(key, plan: StreamPlan) -> int | None:
    return int(key[0]) if plan.block else None


def step_output(res: Step, cols: list[str], out_cols: list[str], ev_cols: list[str]):
    """The pandas frame one key yields for one micro-batch (result rows, the late count, late events), or None.

    With window-block keys an event reaches several keys; it is counted (and
    sent to the side output) by its home key only.
    """
    frames = []
    late = res.late.filter(pl.col(HOME_COL)) if HOME_COL in res.late.columns else res.late
    if len(res.rows):
        frames.append(res.rows.select(out_cols).with_columns(pl.lit(0, pl.Int32).alias(KIND_COL)))
    if len(late):
        frames.append(pl.DataFrame({KIND_COL: [1], NLATE_COL: [len(late)]},
                                   schema={KIND_COL: pl.Int32, NLATE_COL: pl.Int64}))
        if ev_cols:
            ev = late.select(cols).rename(dict(zip(cols, ev_cols)))
            frames.append(ev.with_columns(pl.lit(2, pl.Int32).alias(KIND_COL)))
    if not frames:
        return None
    names = [*out_cols, KIND_COL, NLATE_COL, *ev_cols]
    out = pl.concat(frames, how="diagonal_relaxed")  # every column of the declared schema (missing ones null)
    return _pandas(out.select([pl.col(c) if c in out.columns else pl.lit(None).alias(c) for c in names]))


def state_keys(q, buckets: int | None, block: int | None) -> str:
    """How a stream of ``q`` keys its state: ``"group"`` (a key per GROUP-BY value), ``"bucket"`` (a
    hash bucket of them, ``buckets``), ``"block"`` (SLIDE without GROUP-BY: a key per block of windows)
    or ``"one"`` (one key: EMIT CHANGES or no window without GROUP-BY, whose rows combine every
    partition; and strict contiguity, under which an event of any group between two events of a match
    breaks it, as in ``arrow_kernel.partition_plan``)."""
    if q.group_by and q.strategy == "strict-contiguity":
        return "one"
    if q.group_by:
        return "bucket" if buckets is not None else "group"
    return "block" if block else "one"


def stream_step(plan: StreamPlan, cols: list[str], out_cols: list[str], ev_cols: list[str]):
    """The ``applyInPandasWithState`` function: one state key's micro-batch (:func:`cepvec.streaming.advance`)."""

    def step(key, pdfs, state):  # pragma: no cover - runs in the Spark Python workers
        wm = state.getCurrentWatermarkMs()
        block = _key_block(key, plan)
        done, data = state.get if state.exists else (initial_done(plan, block), None)
        res = advance(plan, from_bytes(data, plan), done, _new_events(pdfs, cols, plan), wm, block)
        if res.wake is None:
            state.remove()
        else:
            state.update((res.done, to_bytes(res.buffer)))
            state.setTimeoutTimestamp(max(wake_ms(res.wake, plan.unit), wm, 1))
        out = step_output(res, cols, out_cols, ev_cols)
        if out is not None:
            yield out

    return step


def _block_keys(staged: DataFrame, time_col: str, plan: StreamPlan) -> DataFrame:
    """A copy of each event per block of ``plan.block`` windows with a window that contains it (KEY_COL = the
    block), and HOME_COL true on the copy in :func:`cepvec.streaming.block_of` (where a late event is counted).

    The windows ``k >= 0`` with ``k*s <= t < k*s + w`` run from ``max(0, floor((t - w) / s) + 1)`` to
    ``floor(t / s)``, as in :func:`cepvec.spark_adapter.run.replicate_to_blocks`; an event in no window (a gap,
    ``s > w``, or before time 0) goes to its home block alone. Integer arithmetic throughout.
    """
    w, s, b = plan.w, plan.s, plan.block
    kmin = f"greatest(0L, ((__cepvec_t - {w}L) - pmod(__cepvec_t - {w}L, {s}L)) div {s}L + 1L)"
    kmax = f"((__cepvec_t - pmod(__cepvec_t, {s}L)) div {s}L)"
    home = f"greatest(0L, {kmax} div {b}L)"
    blocks = (f"CASE WHEN __cepvec_t >= 0 AND {kmin} <= {kmax} THEN sequence({kmin} div {b}L, {kmax} div {b}L) "
              f"ELSE array({home}) END")
    out = staged.withColumn("__cepvec_t", _col(time_col).cast("long"))
    out = out.withColumn(KEY_COL, F.explode(F.expr(blocks))).withColumn(HOME_COL, F.col(KEY_COL) == F.expr(home))
    return out.drop("__cepvec_t")


def stream_spark(q: Query, df: DataFrame, *, watermark="10 minutes", late: str = "drop", checkpoint=None,
                 time_unit: str | None = None, numeric: str = "int64", engine: str = "auto",
                 buckets: int | None = DEFAULT_BUCKETS) -> DataFrame:
    """See :func:`cepvec.stream`."""
    if not df.isStreaming:
        raise CepvecTypeError("cepvec.stream takes a streaming DataFrame (spark.readStream...); for a static "
                              "DataFrame use cepvec.run(query, df)")
    refuse_unbounded(q)
    if late not in LATE:
        raise CepvecPlanError(f"late must be one of {', '.join(map(repr, LATE))}; found {late!r}")
    if buckets is not None and (not isinstance(buckets, int) or isinstance(buckets, bool) or buckets < 1):
        raise CepvecPlanError(f"buckets must be a positive integer or None; found {buckets!r}")
    clash = [c for c in df.columns if c in TAG_COLS or c.startswith("__cepvec_")]
    if clash:
        raise CepvecPlanError(f"the input has a column named {clash[0]!r}, which cepvec uses itself; rename it")
    k = make_kernel(q, schema=df.schema, time_unit=time_unit, numeric=numeric, engine=engine)  # schema checks
    if q.time_col in df.columns and isinstance(df.schema[q.time_col].dataType, T.DateType):
        raise CepvecTypeError(f"time column '{q.time_col}' is a DATE; cepvec.stream needs an integer or timestamp "
                              f"time. Cast it, e.g. F.col('{q.time_col}').cast('timestamp')")
    t, unit = time_in_units(q, df, time_unit)
    delay_ms = parse_delay(watermark, unit)
    cols = [c for c in df.columns if c in k.input_schema]
    types = {c: (pl.Int64 if c == q.time_col else k.input_schema[c]) for c in cols}
    plan = StreamPlan(q.text, q.type_col, q.time_col, unit, numeric, engine, tuple(types.items()), late)
    if q.window.kind == "slide" and not q.group_by:
        plan = dataclasses.replace(plan, block=stream_block(plan.w, plan.s))
    if checkpoint is not None:
        _guard(str(checkpoint), {"query": q.text, "type_col": q.type_col, "time_col": q.time_col, "unit": unit,
                                 "numeric": numeric, "engine": engine, "buckets": buckets,
                                 "block": plan.block})
    fn_types = output_schema(q, types, pl.Int64, numeric)  # what the function yields: times as BIGINT
    final_types = k.output_polars_schema  # what cepvec.run gives
    out_cols = list(fn_types)
    ev_cols = [f"{EV_PREFIX}{c}" for c in cols]
    fn_ddl = _ddl({**fn_types, KIND_COL: pl.Int32, NLATE_COL: pl.Int64,
                   **({e: types[c] for e, c in zip(ev_cols, cols)} if late == "side" else {})})

    staged = df.select(*[(t.alias(c) if c == q.time_col else _col(c)) for c in cols])
    staged = staged.withColumn(TS_COL, _ts(_col(q.time_col), unit)).withWatermark(TS_COL, f"{delay_ms} milliseconds")
    staged = staged.withColumn(TS_COL, F.lit("2200-01-01 00:00:00").cast("timestamp").alias(
        TS_COL, metadata={"spark.watermarkDelayMs": delay_ms}))
    kind = state_keys(q, buckets, plan.block)
    if kind == "bucket":  # several GROUP-BY values per state key (one engine run for all)
        staged = staged.withColumn(KEY_COL, F.pmod(F.xxhash64(*[_col(g) for g in q.group_by]), F.lit(buckets)))
        keys = [KEY_COL]
    elif kind == "group":
        keys = list(q.group_by)
    elif kind == "block":  # SLIDE, no GROUP-BY: a state key per block of windows
        staged = _block_keys(staged, q.time_col, plan)
        keys = [KEY_COL]
    else:  # one state key: the rows combine every partition, or every event of the input counts
        staged = staged.withColumn(KEY_COL, F.lit(0))
        keys = [KEY_COL]
    front = [*cols, HOME_COL] if plan.block else cols  # what the step reads by position (_frame)
    staged = staged.select(*[_col(c) for c in front], *[_col(c) for c in staged.columns if c not in front])
    step = stream_step(plan, cols, out_cols, ev_cols if late == "side" else [])
    out = staged.groupBy(*[_col(c) for c in keys]).applyInPandasWithState(
        step, fn_ddl, STATE_DDL, "append", "EventTimeTimeout")
    out = out.observe(OBSERVATION, F.coalesce(F.sum(NLATE_COL), F.lit(0)).cast("long").alias("late_events"))
    result = [_back(c, final_types[c]) for c in out_cols]
    kind = F.col(KIND_COL)
    if late != "side":
        return out.where(kind == 0).select(*result)
    ev = [(_back(e, k.input_schema[c]) if c == q.time_col else _col(e)).alias(c) for e, c in zip(ev_cols, cols)]
    return out.where(kind != 1).select(*result, F.when(kind == 2, F.struct(*ev)).alias("late_event"))

"""Continuous queries: the per-key step of ``cepvec.stream`` (no PySpark here).

A streaming query keeps, per state key (a bucket of GROUP-BY values; a block
of windows for SLIDE queries without GROUP-BY, :func:`stream_block`; or one
key for EMIT CHANGES without GROUP-BY), the events that an output row not yet
emitted may still need, and a bound ``done`` that says which rows were
emitted. Each micro-batch, :func:`advance` takes the key's new events and the
event-time watermark and

1. splits off the late events: an event is late when its time is at or below
   the watermark (``to_us(t) <= watermark_ms * 1000``, the comparison Spark
   makes for its own operators); they are dropped, raised or returned;
2. computes the rows that the watermark made final, by running the query
   with the batch engine (the same :class:`cepvec.registry.Choice` run that
   ``cepvec.run`` uses, never a re-implementation) on the buffered events
   those rows depend on, and keeps exactly those rows:

   * ``WITHIN w SLIDE s``: window ``k`` (``[k*s, k*s + w)``) is final when
     its last time unit ``k*s + w - 1`` is at or below the watermark; its row
     depends only on the events inside it (docs/semantics.md, "Negation");
   * ``WITHIN w ... EMIT CHANGES``: the row at time ``t`` is final when ``t``
     is at or below the watermark (no tie at ``t`` can arrive any more); it
     depends only on the events in ``(t - w, t]``;

3. drops the events no later row can need (state bounded by the window plus
   the watermark delay) and says when the key must be woken up again (the
   time whose finality makes the next row final), for keys that receive no
   more events.

This recomputes the still-open windows from their events instead of keeping
the engines' internal state (prefix counters, Fenwick trees) across
micro-batches: a window's row is computed once, when it closes, from the
events of the windows closing in that batch, so an event is processed about
``1 + w / (event time covered by a micro-batch)`` times at most, and the runs
need no persisted NumPy state (docs/streaming.md, "How it works").
"""

from __future__ import annotations

import datetime
import io
import re
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import polars as pl

from cepvec.errors import CepvecDataError, CepvecQueryError
from cepvec.lang.parser import UNITS
from cepvec.plan.compile import compile_query
from cepvec.plan.ir import Query
from cepvec.registry import choose, run_engine
from cepvec.runtime.prepare import UNIT_NS, duration_to_units, prepare

LATE = ("drop", "error", "side")
#: ``done`` before anything was emitted (EMIT CHANGES: no row time emitted yet)
NOTHING = -(2**62)
_US_PER = {"s": 1_000_000, "ms": 1_000, "us": 1}


def to_us(t, unit: str):
    """Times in ``unit`` as whole microseconds (what Spark compares with the watermark); floors nanoseconds."""
    if unit == "ns":
        return np.floor_divide(t, 1000)
    return t * _US_PER[unit]


def final_bound(watermark_ms: int, unit: str) -> int:
    """The largest time ``t`` (in ``unit``) at or below the watermark; :data:`NOTHING` before there is one.

    Spark's watermark is 0 until the first micro-batch with data has ended;
    then no event is late and no row is final yet.
    """
    if watermark_ms <= 0:
        return NOTHING
    wm_us = watermark_ms * 1000
    if unit == "ns":
        return wm_us * 1000 + 999
    return wm_us // _US_PER[unit]


def wake_ms(t: int, unit: str) -> int:
    """The event-time timeout (ms) after which time ``t`` is at or below the watermark.

    Spark fires an event-time timeout when the watermark passes it (``> T``);
    ``t`` is final when ``to_us(t) <= watermark * 1000``, so ``T = ceil(to_us(t) / 1000) - 1``.
    """
    return -(-int(to_us(t, unit)) // 1000) - 1


def refuse_unbounded(q: Query) -> None:
    """``cepvec.stream`` runs SLIDE and EMIT CHANGES queries; the others have no row a watermark makes final."""
    kind = q.window.kind
    if kind in ("slide", "emit"):
        return
    what = "has no WITHIN" if kind == "none" else "has WITHIN without SLIDE or EMIT CHANGES"
    raise CepvecQueryError(
        f"cepvec.stream needs a query whose rows become final as event time passes, but this query {what}: "
        "its one row per group aggregates the whole (unbounded) stream and is never final. Add "
        "'SLIDE <duration>' (one row per window, emitted when the watermark passes the window's end) or "
        "'EMIT CHANGES' (one row per END event, emitted when the watermark passes its time); or run "
        "cepvec.run on a bounded DataFrame")


@dataclass(frozen=True)
class StreamPlan:
    """What every state key needs to advance (picklable; built on the driver)."""

    query_text: str
    type_col: str
    time_col: str
    unit: str  # the unit of the integer time column the runs see ("s", "ms", "us", "ns")
    numeric: str
    engine: str
    types: tuple  # ((column, polars dtype), ...): the query's columns, the time column as Int64 in ``unit``
    late: str = "drop"
    # SLIDE without GROUP-BY: windows per state key (key j holds the windows j*block .. j*block + block - 1;
    # docs/streaming.md, "State and its size"); 0: the key's windows are not restricted
    block: int = 0

    @property
    def query(self) -> Query:
        return _query(self.query_text, self.type_col, self.time_col)

    @property
    def schema(self) -> dict:
        return dict(self.types)

    @property
    def w(self) -> int:
        return duration_to_units(self.query.window.within, self.unit, "WITHIN")

    @property
    def s(self) -> int | None:
        q = self.query
        return duration_to_units(q.window.slide, self.unit, "SLIDE") if q.window.kind == "slide" else None


_QUERIES: dict = {}


def _query(text: str, type_col: str, time_col: str) -> Query:
    key = (text, type_col, time_col)
    if key not in _QUERIES:
        _QUERIES[key] = compile_query(text, type_col=type_col, time_col=time_col)
    return _QUERIES[key]


@dataclass
class Step:
    """What :func:`advance` returns for one key and one micro-batch."""

    rows: pl.DataFrame  # the rows that became final (time columns as integers in the plan's unit)
    buffer: pl.DataFrame  # the events to keep
    done: int  # SLIDE: the next window id to emit; EMIT CHANGES: the last emitted row time
    wake: int | None  # the time whose finality makes the next row final (None: the buffer is empty)
    late: pl.DataFrame  # the late events of this batch (empty unless there were any)


def initial_done(plan: StreamPlan, key_block: int | None = None) -> int:
    """``done`` of a key with no state: its first window is the first to emit (SLIDE: window 0, or the first
    window of block ``key_block``), no row time yet (EMIT CHANGES)."""
    if plan.query.window.kind != "slide":
        return NOTHING
    return key_block * plan.block if plan.block and key_block is not None else 0


def stream_block(w: int, s: int) -> int:
    """Windows per state key of a SLIDE query without GROUP-BY: the block spans at least two window lengths.

    An event is copied to every block with a window that contains it: at
    most 2, on average ``1 + (w/s - 1) / block`` (under 1.5). Shorter blocks
    would copy events to more keys; longer ones leave fewer keys, hence
    tasks, per micro-batch (a micro-batch spanning E of event time touches
    about ``E / (block * s) + 1.5`` keys).
    """
    return max(1, 2 * -(-w // s))


def block_of(t: int, s: int, block: int) -> int:
    """The block of window ``floor(t / s)``, the last that starts at or before time ``t``: an event's home key,
    where it is counted late (0 before time 0)."""
    return max(0, (t // s) // block)


def parse_delay(watermark, unit: str) -> int:
    """The watermark delay in milliseconds: ``"10 minutes"``, ``"30 s"``, ``"500 ms"`` or a ``timedelta``.

    The duration words of the query language are accepted (a bare number counts
    the time column's ``unit``); the delay must be a whole number of
    milliseconds, the resolution of Spark's watermark.
    """
    if isinstance(watermark, datetime.timedelta):
        ns = Fraction(watermark // datetime.timedelta(microseconds=1)) * 1000
    else:
        m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*", str(watermark)) if isinstance(watermark, (str, int)) \
            else None
        word = m.group(2).lower() if m else ""
        if m is None or (word and word not in UNITS):
            raise CepvecQueryError(
                f"watermark must be a delay such as '10 minutes', '30 s' or '500 ms' (or a datetime.timedelta); "
                f"found {watermark!r}")
        ns = Fraction(m.group(1)) * UNIT_NS[UNITS[word] if word else unit]
    ms = ns / 1_000_000
    if ms.denominator != 1:
        raise CepvecQueryError(f"watermark {watermark!r} is not a whole number of milliseconds, the resolution of "
                               "Spark's event-time watermark; round it to milliseconds")
    return int(ms)


def empty_events(plan: StreamPlan) -> pl.DataFrame:
    return pl.DataFrame(schema=plan.schema)


def to_bytes(df: pl.DataFrame) -> bytes:
    """The buffer as Arrow IPC bytes (the state store keeps one binary value per key)."""
    out = io.BytesIO()
    df.write_ipc(out, compression="uncompressed")
    return out.getvalue()


def from_bytes(data: bytes | None, plan: StreamPlan) -> pl.DataFrame:
    if not data:
        return empty_events(plan)
    return pl.read_ipc(io.BytesIO(data))


def evaluate(plan: StreamPlan, events: pl.DataFrame) -> pl.DataFrame:
    """``cepvec.run(query, events)`` with the engine, unit and numeric mode of ``plan`` (no type warnings)."""
    q = plan.query
    prep = prepare(q, events, time_unit=plan.unit, check_types=False)
    return run_engine(q, prep, choose(q, plan.engine, prep.df.schema), numeric=plan.numeric)


def advance(plan: StreamPlan, buffer: pl.DataFrame, done: int, new: pl.DataFrame, watermark_ms: int,
            key_block: int | None = None) -> Step:
    """One key, one micro-batch: see the module docstring. ``new`` holds the key's new events (any order;
    columns beyond the plan's are kept in ``Step.late`` only). ``key_block``: the key's block of windows
    (``plan.block``); the key emits only those windows and is done after the last."""
    q = plan.query
    t = q.time_col
    bound = final_bound(watermark_ms, plan.unit)
    late = new.filter(pl.col(t) <= bound) if len(new) else new
    if len(late) and plan.late == "error":
        first = late.sort(t).row(0, named=True)
        raise CepvecDataError(
            f"{len(late)} late event(s) in this micro-batch: the event at {t} = {first[t]} "
            f"({first[q.type_col]!r}) arrived after the watermark had passed {bound} (its rows were final "
            "already). Raise the watermark delay (cepvec.stream(..., watermark=...)), or pass late='drop' to "
            "drop and count late events, or late='side' to get them as rows of their own")
    if len(late):
        new = new.filter(pl.col(t) > bound)
    if len(new):
        buffer = pl.concat([buffer, new.select(buffer.columns).cast(plan.schema)], how="vertical")
    w = plan.w
    rows = None
    if q.window.kind == "slide":
        s = plan.s
        last = (bound + 1 - w) // s if bound != NOTHING else -1  # last final window id
        block_end = (key_block + 1) * plan.block - 1 if plan.block and key_block is not None else None
        if block_end is not None:
            last = min(last, block_end)
        if last >= done:
            lo, hi = done * s, last * s + w
            part = buffer.filter((pl.col(t) >= lo) & (pl.col(t) < hi))
            if len(part):
                rows = evaluate(plan, part)
                rows = rows.filter((pl.col("window_start") >= lo) & (pl.col("window_start") <= last * s))
            done = last + 1
            buffer = buffer.filter(pl.col(t) >= done * s)
        if block_end is not None and done > block_end:  # every window of the block is out
            buffer = buffer.head(0)
        wake = None
        if len(buffer):
            tmin = int(buffer[t].min())
            k = max(done, (tmin - w) // s + 1)
            wake = k * s + w - 1
    else:  # EMIT CHANGES: rows at times in (done, bound]
        if bound != NOTHING and bound > done:
            part = buffer.filter(pl.col(t) <= bound)
            if done != NOTHING:
                part = part.filter(pl.col(t) >= done + 2 - w)
            if len(part):
                rows = evaluate(plan, part)
                rows = rows.filter((pl.col(t) > done) & (pl.col(t) <= bound))
            done = bound
            buffer = buffer.filter(pl.col(t) >= done + 2 - w)
        later = buffer.filter(pl.col(t) > done)[t]
        # no END event after done yet: wake when the kept context can no longer be needed (then it is dropped)
        wake = int(later.min()) if len(later) else (int(buffer[t].max()) + w - 1 if len(buffer) else None)
    return Step(rows if rows is not None else pl.DataFrame(), buffer, done, wake,
                late if len(late) else new.head(0))


__all__ = ["StreamPlan", "Step", "advance", "final_bound", "to_us", "wake_ms", "refuse_unbounded", "evaluate",
           "to_bytes", "from_bytes", "empty_events", "initial_done", "parse_delay", "stream_block", "block_of", "LATE",
           "NOTHING"]
